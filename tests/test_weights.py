"""Sample and class weights in every loss and solver (issue 10, item 5)."""

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.api import class_weight_values, select
from ultrafs.methods.c_choice import held_out_scores
from ultrafs.datasets.planted import make_planted_multiclass, make_planted_problem
from ultrafs.errors import ParameterError
from ultrafs.features import make_feature_space
from ultrafs.kernels import losses as kl
from ultrafs.kernels import multiclass_losses as mkl
from ultrafs.methods.checkpoint import CheckpointMismatchError
from ultrafs.methods.fgm import fit_fgm, sample_weight_digest
from ultrafs.methods.refit import refit_block, refit_prefix
from ultrafs.solvers.apg import solve_subproblem
from ultrafs.solvers.datafits import make_datafit
from ultrafs.solvers.losses import LOSSES, MULTICLASS_LOSSES
from ultrafs.store import InMemoryStore
from ultrafs.store.base import ColumnBlock


def _block(X):
    X = sp.csc_matrix(X)
    return ColumnBlock(0, X.indptr.astype(np.int64), X.indices.astype(np.int32),
                       X.data.astype(np.float64))


@pytest.fixture(scope="module")
def binary():
    return make_planted_problem(400, 120, 12, n_test=10, seed=3)


@pytest.fixture(scope="module")
def multiclass():
    return make_planted_multiclass(300, 60, 6, 3, n_test=10, seed=4)


def _same(a, b):
    """Bit-identical selections (features, batches, weights, intercepts)."""
    assert list(a.features) == list(b.features)
    assert a.batches == b.batches
    assert np.array_equal(np.asarray(a.coef), np.asarray(b.coef))
    assert np.array_equal(np.asarray(a.intercept), np.asarray(b.intercept))
    assert [h["objective"] for h in a.history] == [h["objective"] for h in b.history]


# -- the losses --------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_binary_losses_weight_every_quantity(name):
    rng = np.random.default_rng(0)
    n = 50
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    f = rng.normal(scale=2.0, size=n)
    delta = rng.normal(scale=0.3, size=n)
    s = rng.uniform(0.0, 3.0, size=n)
    s[:5] = 0.0
    loss = LOSSES[name]
    one = lambda i, g: loss.value(y[i:i + 1], g[i:i + 1])   # noqa: E731
    per_sample = np.array([one(i, f) for i in range(n)])
    assert loss.value(y, f, s) == pytest.approx(float(s @ per_sample), rel=1e-12)
    d = np.empty(n)
    assert loss.value_derivative(y, f, d, s) == pytest.approx(float(s @ per_sample),
                                                              rel=1e-12)
    np.testing.assert_allclose(d, s * loss.derivative(y, f), rtol=1e-14)
    np.testing.assert_allclose(loss.dual(y, f, weights=s), s * loss.dual(y, f))
    curvature = s @ loss.second_derivative(y, f)
    assert loss.curvature_sum(y, f, d, s) == pytest.approx(curvature, rel=1e-10)
    change = [one(i, f + delta) - one(i, f) for i in range(n)]
    assert loss.value_change(y, f, delta, s) == pytest.approx(float(s @ change),
                                                              rel=1e-9, abs=1e-12)
    # the best constant of the weighted sum: its derivative vanishes there
    c = loss.optimal_constant(y, 1, s)
    loss.value_derivative(y, np.full(n, c), d, s)
    assert abs(d.sum()) < 1e-9 * s.sum()


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_binary_weights_of_one_are_bit_identical(name):
    rng = np.random.default_rng(1)
    n = 64
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    f = rng.normal(scale=3.0, size=n)
    delta = rng.normal(size=n)
    ones = np.ones(n)
    loss = LOSSES[name]
    d0, d1 = np.empty(n), np.empty(n)
    assert loss.value(y, f) == loss.value(y, f, ones)
    assert loss.value_derivative(y, f, d0) == loss.value_derivative(y, f, d1, ones)
    assert np.array_equal(d0, d1)
    assert loss.curvature_sum(y, f, d0) == loss.curvature_sum(y, f, d1, ones)
    assert loss.value_change(y, f, delta) == loss.value_change(y, f, delta, ones)
    assert loss.optimal_constant(y) == loss.optimal_constant(y, 1, ones)
    assert np.array_equal(loss.dual_weights(y, f, 3.0),
                          loss.dual_weights(y, f, 3.0, ones))


@pytest.mark.parametrize("name", sorted(MULTICLASS_LOSSES))
def test_multiclass_losses_weight_every_quantity(name):
    rng = np.random.default_rng(2)
    n, K = 40, 4
    y = rng.integers(0, K, size=n)
    f = rng.normal(scale=2.0, size=n * K)
    s = rng.uniform(0.0, 2.0, size=n)
    s[0] = 0.0
    loss = MULTICLASS_LOSSES[name]
    per_sample = np.array([loss.value(y[i:i + 1], f[i * K:(i + 1) * K])
                           for i in range(n)])
    assert loss.value(y, f, s) == pytest.approx(float(s @ per_sample), rel=1e-12)
    d = np.empty(n * K)
    loss.value_derivative(y, f, d, s)
    np.testing.assert_allclose(d.reshape(n, K),
                               s[:, None] * loss.derivative(y, f).reshape(n, K),
                               rtol=1e-14)
    ones = np.ones(n)
    d0, d1 = np.empty(n * K), np.empty(n * K)
    assert loss.value_derivative(y, f, d0) == loss.value_derivative(y, f, d1, ones)
    assert np.array_equal(d0, d1)
    assert loss.curvature_sum(y, f, d0) == loss.curvature_sum(y, f, d1, ones)
    assert np.array_equal(loss.optimal_constant(y, K),
                          loss.optimal_constant(y, K, ones))
    # integer weights: the curvature bound and best constants of repeated rows
    counts = rng.integers(1, 4, size=n)
    rows = np.repeat(np.arange(n), counts)
    f_rep = f.reshape(n, K)[rows].ravel()
    d_rep = np.empty(len(rows) * K)
    weights = counts.astype(np.float64)
    loss.value_derivative(y, f, d, weights)
    assert loss.value_derivative(y[rows], f_rep, d_rep) == pytest.approx(
        loss.value(y, f, weights), rel=1e-12)
    assert loss.curvature_sum(y, f, d, weights) == pytest.approx(
        loss.curvature_sum(y[rows], f_rep, d_rep), rel=1e-12)
    np.testing.assert_allclose(loss.optimal_constant(y, K, weights),
                               loss.optimal_constant(y[rows], K), rtol=1e-12)


def test_weighted_kernels_are_listed():
    for name in ("logistic_value_weighted", "squared_hinge_value_change_weighted"):
        assert name in kl.__all__
    for name in ("multinomial_value_derivative_weighted",
                 "ovr_squared_hinge_bias_curvature_weighted"):
        assert name in mkl.__all__


# -- the datafit and the solvers -----------------------------------------------
@pytest.mark.parametrize("loss", ["logistic", "squared-hinge"])
@pytest.mark.parametrize("solver", ["apg", "newton"])
def test_integer_weights_solve_the_problem_of_repeated_rows(binary, loss, solver):
    X = sp.csc_matrix(binary.X_train[:, :10].astype(np.float64))
    y = binary.y_train
    counts = np.random.default_rng(5).integers(0, 4, size=len(y))
    counts[:2] = 1
    rows = np.repeat(np.arange(len(y)), counts)
    Xr = sp.csc_matrix(X[rows])
    block_ptr = np.array([0, 4, 10])
    options = dict(loss=loss, kkt_tol=1e-10, tol=1e-12, max_iter=5000, solver=solver)
    weighted = solve_subproblem(X.indptr, X.indices, X.data, block_ptr, y, 0.3,
                                sample_weight=counts, **options)
    repeated = solve_subproblem(Xr.indptr, Xr.indices, Xr.data, block_ptr, y[rows],
                                0.3, **options)
    np.testing.assert_allclose(weighted.coef, repeated.coef, atol=1e-7)
    assert weighted.bias == pytest.approx(repeated.bias, abs=1e-7)
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-10)


def test_hessian_and_dual_weights_are_weighted(binary):
    X = sp.csc_matrix(binary.X_train[:, :5].astype(np.float64))
    y = binary.y_train
    s = np.random.default_rng(6).uniform(0, 2, size=len(y))
    plain = make_datafit(X.indptr, X.indices, X.data, y, 2.0)
    weighted = make_datafit(X.indptr, X.indices, X.data, y, 2.0, sample_weight=s)
    f = np.random.default_rng(7).normal(size=len(y))
    np.testing.assert_allclose(weighted.dual_weights(f), s * plain.dual_weights(f))
    h = plain.loss.second_derivative(y, f) * 2.0 * s
    A = np.hstack([X.toarray(), -np.ones((len(y), 1))])
    np.testing.assert_allclose(weighted.hessian(f), A.T @ (h[:, None] * A),
                               rtol=1e-10, atol=1e-10)
    assert weighted.weight_total == pytest.approx(s.sum())
    assert plain.weight_total == len(y)


@pytest.mark.parametrize("bad, message", [
    (np.array([1.0, -1.0, 1.0]), ">= 0"),
    (np.array([1.0, np.nan, 1.0]), "finite"),
    (np.array([1.0, np.inf, 1.0]), "finite"),
    (np.zeros(3), "all zero"),
    (np.ones(4), "one weight per sample"),
    (np.ones((3, 1)), "one weight per sample"),
    (["a", "b", "c"], "array of numbers"),
])
def test_invalid_sample_weights_are_refused_in_one_line(bad, message):
    X = sp.csc_matrix(np.eye(3))
    with pytest.raises(ParameterError, match=message) as info:
        make_datafit(X.indptr, X.indices, X.data, np.array([1.0, -1.0, 1.0]), 1.0,
                     sample_weight=bad)
    assert "\n" not in str(info.value)
    with pytest.raises(ParameterError, match=message):
        select(np.eye(3), np.array([0, 1, 1]), B=1, max_iter=1, sample_weight=bad)


def test_weights_without_a_class_are_refused():
    X = sp.csc_matrix(np.eye(4))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    datafit = make_datafit(X.indptr, X.indices, X.data, y, 1.0,
                           sample_weight=np.array([1.0, 0.0, 1.0, 0.0]))
    with pytest.raises(ParameterError, match="positive weight"):
        datafit.optimal_bias()


# -- the refit against scikit-learn -------------------------------------------
def test_weighted_refit_is_scikit_learns_weighted_logistic_regression(binary):
    from sklearn.linear_model import LogisticRegression

    X = binary.X_train[:, :15].astype(np.float64)
    y = binary.y_train
    s = np.random.default_rng(8).uniform(0.0, 4.0, size=len(y))
    ours = refit_block(_block(X), y, loss="logistic", C=0.8, sample_weight=s,
                       tol=1e-12, kkt_tol=1e-11)
    ref = LogisticRegression(C=0.8, tol=1e-12, max_iter=10000).fit(X, y,
                                                                    sample_weight=s)
    np.testing.assert_allclose(ours["coef"], ref.coef_.ravel(), atol=1e-6)
    assert ours["intercept"] == pytest.approx(ref.intercept_[0], abs=1e-6)
    # and the weights matter
    plain = refit_block(_block(X), y, loss="logistic", C=0.8, tol=1e-12,
                        kkt_tol=1e-11)
    assert np.max(np.abs(plain["coef"] - ours["coef"])) > 1e-3


def test_weighted_multinomial_refit_is_scikit_learns(multiclass):
    from sklearn.linear_model import LogisticRegression

    X = multiclass.X_train[:, :8].astype(np.float64)
    y = multiclass.y_train
    s = np.random.default_rng(9).uniform(0.0, 3.0, size=len(y))
    ours = refit_block(_block(X), y, loss="logistic", C=0.5, n_classes=3,
                       sample_weight=s, tol=1e-12, kkt_tol=1e-11)
    ref = LogisticRegression(C=0.5, tol=1e-12, max_iter=10000).fit(X, y,
                                                                    sample_weight=s)
    # the optimum of the l2 penalty has coefficients summing to zero over classes
    np.testing.assert_allclose(ours["coef"], ref.coef_.T, atol=1e-6)
    np.testing.assert_allclose(ours["intercept"] - np.mean(ours["intercept"]),
                               ref.intercept_ - np.mean(ref.intercept_), atol=1e-6)


def test_selected_columns_refit_with_class_weights_is_scikit_learns(binary):
    from sklearn.linear_model import LogisticRegression

    y = binary.y_train
    model = select(binary.X_train, y, B=4, max_iter=2, C=1.0, refit=True,
                   refit_C=0.6, inner_kkt_tol=1e-10, class_weight={1: 3.0})
    columns = np.asarray(model.features)
    X = binary.X_train[:, columns].astype(np.float64)
    ref = LogisticRegression(C=0.6, tol=1e-12, max_iter=10000,
                             class_weight={1: 3.0}).fit(X, y)
    np.testing.assert_allclose(model.refit["coef"], ref.coef_.ravel(), atol=1e-6)
    assert model.refit["intercept"] == pytest.approx(ref.intercept_[0], abs=1e-6)
    assert model.params["class_weight"] == "given"
    assert model.params["class_weights"] == [1.0, 3.0]
    # the report's refit of every batch reproduces it from the recorded weights
    again = refit_prefix(model, InMemoryStore(binary.X_train, y))
    np.testing.assert_allclose(again["coef"], model.refit["coef"], atol=1e-7)


# -- FGM -------------------------------------------------------------------------
def test_unit_weights_give_the_unweighted_model_bit_for_bit(binary, multiclass):
    for p in (binary, multiclass):
        options = dict(B=3, max_iter=3, C=2.0, tol=0.0)
        plain = select(p.X_train, p.y_train, **options)
        ones = select(p.X_train, p.y_train, sample_weight=np.ones(len(p.y_train)),
                      **options)
        _same(plain, ones)
        assert "sample_weight_digest" not in plain.params
        assert ones.params["sample_weight_digest"] == sample_weight_digest(
            np.ones(len(p.y_train)))


@pytest.mark.parametrize("which", ["binary", "multiclass"])
def test_integer_weights_select_as_repeated_rows(which, binary, multiclass):
    p = binary if which == "binary" else multiclass
    counts = np.random.default_rng(10).integers(0, 3, size=len(p.y_train))
    rows = np.repeat(np.arange(len(counts)), counts)
    options = dict(B=3, max_iter=3, C=0.5, tol=0.0, inner_kkt_tol=1e-9,
                   inner_tol=1e-10)
    weighted = select(p.X_train, p.y_train, sample_weight=counts, **options)
    repeated = select(p.X_train[rows], p.y_train[rows], **options)
    assert list(weighted.features) == list(repeated.features)
    assert weighted.batches == repeated.batches
    np.testing.assert_allclose(weighted.coef, repeated.coef, atol=1e-6)
    np.testing.assert_allclose(weighted.intercept, repeated.intercept, atol=1e-6)


@pytest.mark.parametrize("which", ["binary", "multiclass"])
def test_balanced_class_weight_is_its_sample_weight(which, binary, multiclass):
    from sklearn.utils.class_weight import compute_class_weight

    p = binary if which == "binary" else multiclass
    y = p.y_train
    classes = np.unique(y)
    per_class = compute_class_weight("balanced", classes=classes, y=y)
    s = per_class[np.searchsorted(classes, y)]
    options = dict(B=3, max_iter=2, C=1.0)
    balanced = select(p.X_train, y, class_weight="balanced", **options)
    given = select(p.X_train, y, sample_weight=s, **options)
    _same(balanced, given)
    np.testing.assert_allclose(balanced.params["class_weights"], per_class, rtol=1e-15)
    # combined multiplicatively with sample weights
    extra = np.random.default_rng(11).uniform(0.5, 2.0, size=len(y))
    both = select(p.X_train, y, class_weight="balanced", sample_weight=extra,
                  **options)
    product = select(p.X_train, y, sample_weight=extra * s, **options)
    _same(both, product)
    assert both.params["sample_weight"] is True


def test_class_weight_dict_and_errors(binary):
    y = binary.y_train   # classes -1 and 1
    index = (y > 0).astype(np.int64)
    assert list(class_weight_values({1: 5.0}, [-1.0, 1.0], index)) == [1.0, 5.0]
    assert list(class_weight_values({"-1": 2}, [-1.0, 1.0], index)) == [2.0, 1.0]
    for bad, message in [({7: 1.0}, "names class 7"), ({1: -1.0}, ">= 0"),
                         ("heavy", "balanced"), ([1, 2], "balanced")]:
        with pytest.raises(ParameterError, match=message):
            select(binary.X_train, y, B=1, max_iter=1, class_weight=bad)


def test_weights_change_the_selection_towards_the_minority():
    p = make_planted_problem(600, 80, 8, n_test=10, shift=2.5, seed=12)
    y = p.y_train
    assert np.mean(y > 0) < 0.15
    plain = select(p.X_train, y, B=4, max_iter=2, C=1.0)
    balanced = select(p.X_train, y, B=4, max_iter=2, C=1.0, class_weight="balanced")
    train = InMemoryStore(p.X_train, y)

    def positive_recall(model):
        decision = model.decision_function_store(train)
        return np.mean(decision[y > 0] > 0)

    assert positive_recall(balanced) > positive_recall(plain)


def test_checkpoints_bind_the_weights(binary, tmp_path):
    X, y = binary.X_train, binary.y_train
    s = np.random.default_rng(13).uniform(0.5, 2.0, size=len(y))
    ckpt = tmp_path / "ckpt"
    options = dict(B=3, C=1.0, tol=0.0)
    full = select(X, y, max_iter=3, sample_weight=s, **options)
    select(X, y, max_iter=2, sample_weight=s, checkpoint=ckpt, **options)
    with pytest.raises(CheckpointMismatchError, match="sample_weight_digest"):
        select(X, y, max_iter=3, sample_weight=s * 2, checkpoint=ckpt, resume=True,
               **options)
    with pytest.raises(CheckpointMismatchError, match="parameters .sample_weight"):
        select(X, y, max_iter=3, checkpoint=ckpt, resume=True, **options)
    with pytest.raises(CheckpointMismatchError, match="class_weight"):
        select(X, y, max_iter=3, sample_weight=s, class_weight="balanced",
               checkpoint=ckpt, resume=True, **options)
    resumed = select(X, y, max_iter=3, sample_weight=s, checkpoint=ckpt, resume=True,
                     **options)
    _same(full, resumed)


def test_fit_fgm_refuses_a_checkpoint_without_the_weights_digest(binary, tmp_path):
    from ultrafs.methods.checkpoint import Checkpoint

    store = InMemoryStore(binary.X_train, binary.y_train)
    features = make_feature_space(store)
    s = np.ones(len(binary.y_train))
    saver = Checkpoint(tmp_path / "c", {"metadata": "x", "content": "y", "data": None},
                       {"B": 2})
    with pytest.raises(ParameterError, match="sample_weight_digest"):
        fit_fgm(features, binary.y_train, B=2, max_iter=1, checkpoint=saver,
                sample_weight=s)


def test_held_out_scores_are_weighted_means():
    X = sp.csc_matrix(np.array([[1.0], [1.0], [-1.0], [-1.0]]))
    block = _block(X)
    y = np.array([1.0, -1.0, -1.0, -1.0])
    coef = np.array([1.0])
    plain = held_out_scores(block, coef, 0.0, y, None, "logistic")
    assert plain["accuracy"] == 0.75
    weighted = held_out_scores(block, coef, 0.0, y, None, "logistic",
                                np.array([3.0, 1.0, 1.0, 1.0]))
    assert weighted["accuracy"] == pytest.approx(5.0 / 6.0)
    losses = np.log1p(np.exp(-y * np.array([1.0, 1.0, -1.0, -1.0])))
    assert weighted["loss"] == pytest.approx(np.dot([3, 1, 1, 1], losses) / 6.0)


def test_auto_C_with_weights_chooses_on_weighted_accuracy(binary):
    model = select(binary.X_train, binary.y_train, B=2, max_iter=2, C="auto",
                   class_weight="balanced", validation_fraction=0.25)
    curve = model.params["validation"]
    assert curve["C"] == model.params["C"]
    assert all(0.0 <= point["accuracy"] <= 1.0 for point in curve["points"])


# -- the faces -----------------------------------------------------------------
def test_estimator_class_weight_and_sample_weight(binary):
    from ultrafs import FGMClassifier

    labels = np.where(binary.y_train > 0, "yes", "no")
    s = np.random.default_rng(14).uniform(0.5, 2.0, size=len(labels))
    est = FGMClassifier(B=3, max_iter=2, C=1.0, class_weight={"yes": 4.0})
    est.fit(binary.X_train, labels, sample_weight=s)
    assert est.get_params()["class_weight"] == {"yes": 4.0}
    ref = select(binary.X_train, binary.y_train, B=3, max_iter=2, C=1.0,
                 sample_weight=s * np.where(labels == "yes", 4.0, 1.0))
    assert list(est.model_.features) == list(ref.features)
    np.testing.assert_array_equal(est.model_.coef, ref.coef)
    with pytest.raises(ParameterError, match="names class"):
        FGMClassifier(B=1, max_iter=1, class_weight={"maybe": 2.0}).fit(
            binary.X_train, labels)


def test_cli_class_weight(binary, tmp_path):
    import json

    from click.testing import CliRunner

    from ultrafs.cli import main
    from ultrafs.store.writers.zarr_writer import write_store

    path = tmp_path / "train.zarr"
    write_store(path, binary.X_train, binary.y_train)
    out = tmp_path / "m.json"
    result = CliRunner().invoke(main, ["select", "--data", str(path), "--B", "2",
                                       "--max-iter", "1", "--C", "1",
                                       "--class-weight", "1:3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    params = json.loads(out.read_text())["params"]
    assert params["class_weight"] == "given" and params["class_weights"] == [1.0, 3.0]
    ref = select(binary.X_train, binary.y_train, B=2, max_iter=1, C=1.0,
                 class_weight={1.0: 3.0})
    assert json.loads(out.read_text())["coef"] == [float(c) for c in ref.coef]
    bad = CliRunner().invoke(main, ["select", "--data", str(path),
                                    "--class-weight", "1=3"])
    assert bad.exit_code != 0 and "VALUE:WEIGHT" in bad.output
