"""The faces of the screened ℓ1-LR path (issue 13): ``ultrafs path``,
``select --method l1``, :class:`~ultrafs.sklearn.L1LogisticRegression`,
the API (``fit("l1", ...)``, the method of :mod:`ultrafs.methods.l1_method`)
and a real ``dask.distributed`` cluster.

The rule and the solver are tested in ``test_slores.py`` and
``test_l1_logistic.py``; here the faces must give the models of the
in-memory path, certified on every column, and refuse bad input in one line.
"""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from tests.cli_tools import assert_one_line_error, run
from tests.sparse_problems import sparse_binary_problem
from ultrafs.api import fit, l1_path
from ultrafs.errors import ParameterError
from ultrafs.sklearn import L1LogisticRegression
from ultrafs.model import Model
from ultrafs.store import open_store
from ultrafs.store.writers.zarr_writer import write_store
from ultrafs.store.memory import InMemoryStore


def _problem(seed=0, n=120, m=300, density=0.05):
    return sparse_binary_problem(seed, n, m, density)


@pytest.fixture(scope="module")
def zarr_store(tmp_path_factory):
    X, y = _problem()
    path = tmp_path_factory.mktemp("l1") / "train.zarr"
    write_store(path, X, y, block_nnz=200, command="test")
    return path, X, y


def _objective_sklearn(X, y, coef, intercept, C):
    f = X @ coef + intercept
    return np.abs(coef).sum() + C * np.logaddexp(0, -y * f).sum()


# ------------------------------------------------------------------ API
def test_path_certified_and_equal_to_the_unscreened_path(zarr_store):
    path, X, y = zarr_store
    store = open_store(path)
    screened = l1_path(store, n_lambdas=12, scheduler="threads")
    plain = l1_path(store, n_lambdas=12, screening="none", scheduler="synchronous")
    assert len(screened.records) == 12
    for a, b in zip(screened.records, plain.records):
        assert a["kkt_violations_left"] == 0 and a["kkt"] <= 1e-6
        assert a["nnz"] == b["nnz"]
        assert a["objective"] == pytest.approx(b["objective"], rel=1e-9)
        assert a["kept"] <= b["kept"]
        assert 0.0 <= a["rejection_ratio"] <= 1.0
    for cols_a, cols_b in zip(screened.columns, plain.columns):
        np.testing.assert_array_equal(cols_a, cols_b)


def test_models_match_scikit_learn_saga_with_an_unpenalised_intercept():
    X, y = _problem(1)
    for C in (0.2, 1.0):
        model = L1LogisticRegression(C=C).fit(X, y)
        ours = _objective_sklearn(X, y, model.coef_.ravel(), model.intercept_, C)
        saga = LogisticRegression(C=C, l1_ratio=1.0, solver="saga", tol=1e-10,
                                  max_iter=100_000).fit(X, y)
        theirs = _objective_sklearn(X, y, saga.coef_.ravel(), saga.intercept_[0], C)
        assert ours <= theirs * (1 + 1e-7)
        assert ours == pytest.approx(theirs, rel=1e-6)


def test_select_by_feature_count_returns_at_most_that_many():
    X, y = _problem(2)
    model = fit("l1", X, y, n_features_to_select=5, n_lambdas=40)
    assert len(model.features) == 5
    assert model.params["method"] == "l1"
    assert model.history[-1]["nnz"] == len(model.features)
    assert model.params["n_features_to_select"] == 5
    restored = Model.from_dict(json.loads(json.dumps(model.to_dict())))
    np.testing.assert_array_equal(restored.coef, model.coef)
    # more than the columns: refused in one line; as many: never a failure
    with pytest.raises(ParameterError, match="^10000 nonzero weights asked for, but "
                                             "the data has 300 columns$"):
        fit("l1", X, y, n_features_to_select=10_000, n_lambdas=5)
    everything = fit("l1", X, y, n_features_to_select=X.shape[1], n_lambdas=5)
    assert 0 < len(everything.features) <= X.shape[1]
    with pytest.raises(ParameterError, match="needs n_features_to_select K .* or C .*, not both"):
        fit("l1", X, y, n_features_to_select=5, C=1.0)
    with pytest.raises(ParameterError, match="needs n_features_to_select K .* or C .*, not both"):
        fit("l1", X, y)
    # the vocabulary's old name is refused with a hint naming the new one
    with pytest.raises(ParameterError, match="features was renamed: use "
                                             "n_features_to_select"):
        fit("l1", X, y, features=5)


def test_refused_in_one_line():
    X, y = _problem(3)
    with pytest.raises(ParameterError, match="two classes; the data has 3"):
        l1_path(X, np.arange(X.shape[0]) % 3)
    with pytest.raises(ParameterError, match="screening must be one of"):
        l1_path(X, y, screening="safe")
    with pytest.raises(ParameterError, match="λ/λ_max ratios"):
        l1_path(X, y, lambda_min_ratio=1.5)
    with pytest.raises(ParameterError, match="lambdas must be finite and positive"):
        l1_path(X, y, lambdas=[0.1, -1.0])
    with pytest.raises(ParameterError, match="C must be a number > 0"):
        fit("l1", X, y, C=float("nan"))
    with pytest.raises(ParameterError, match="ℓ1 logistic regression needs two classes"):
        fit("l1", X, np.arange(X.shape[0]) % 3, C=1.0)


def test_lambdas_above_lambda_max_give_the_null_model():
    X, y = _problem(4)
    path = l1_path(X, y, n_lambdas=3)
    lam_max = path.lambda_max
    above = l1_path(X, y, lambdas=[2 * lam_max, 1.01 * lam_max])
    n_pos = (y > 0).sum()
    for record, intercept in zip(above.records, above.intercepts):
        assert record["nnz"] == 0
        assert intercept == pytest.approx(np.log(n_pos / (len(y) - n_pos)), abs=1e-12)
    model = fit("l1", X, y, C=1.0 / (len(y) * 1.5 * lam_max))
    assert model.features == [] and model.coef.shape == (0,)


def test_the_method_is_the_engine_path_bit_for_bit():
    """fit("l1") returns the engine's model of the count search, or at
    the end of the short path to C, exactly (the code moved from api.py)."""
    from ultrafs.methods import l1_path as engine
    from ultrafs.methods.l1_method import L1_C_PATH_POINTS
    from ultrafs.methods.slores import slores_statistics

    X, y = _problem(7)
    store = InMemoryStore(X.tocsc(), y)
    labels = store.read_labels()
    model = fit("l1", store, n_features_to_select=6, n_lambdas=30, sequential=False)
    path = engine.fit_l1_count(store, labels, n_nonzero=6, n_lambdas=30,
                               sequential=False)
    k = path.index
    assert model.features == [int(v) for v in store.feature_ids(path.columns[k])]
    np.testing.assert_array_equal(model.coef, path.coefs[k])
    assert model.intercept == path.intercepts[k]
    assert [(r["lambda"], r["nnz"], r["objective"]) for r in model.history] == [
        (r["lambda"], r["nnz"], r["objective"]) for r in path.records[:k + 1]]
    assert model.stop_reason == path.stop_reason
    stats = slores_statistics(store, labels)
    C = 1.0 / (len(y) * 0.3 * stats.lambda_max)
    by_C = fit("l1", store, C=C, screening="strong")
    grid = np.geomspace(0.95 * stats.lambda_max, 1.0 / (len(y) * C), L1_C_PATH_POINTS)
    ref = engine.fit_l1_path(store, labels, lambdas=grid, statistics=stats,
                             screening="strong")
    assert len(by_C.features) > 0
    np.testing.assert_array_equal(by_C.coef, ref.coefs[-1])
    assert by_C.intercept == ref.intercepts[-1]
    assert by_C.params["lambda"] == ref.records[-1]["lambda"]
    assert "n_features_to_select" not in by_C.params


def test_the_method_is_registered_with_the_engine_defaults():
    from ultrafs.methods import l1_path as engine
    from ultrafs.methods.l1_method import L1Params
    from ultrafs.methods.registry import get_method

    method = get_method("l1")
    assert method.params is L1Params and method.targets == ("binary",)
    defaults = L1Params(C=1.0)
    assert (defaults.n_lambdas, defaults.lambda_min_ratio, defaults.lambda_max_ratio,
            defaults.tol) == (engine.DEFAULT_N_LAMBDAS, engine.DEFAULT_LAMBDA_MIN_RATIO,
                              engine.DEFAULT_LAMBDA_MAX_RATIO, engine.DEFAULT_TOL)
    assert defaults.max_iter == inspect.signature(
        engine.fit_l1_path).parameters["max_iter"].default
    assert set(method.params.__dataclass_fields__["screening"].metadata["spec"].words) \
        == set(engine.SCREENINGS)
    X, y = _problem(2)
    store = InMemoryStore(X.tocsc(), y)
    model = fit("l1", store, n_features_to_select=5, n_lambdas=40)
    lines = dict(method.summary_lines(model, store))
    assert "(--n-features-to-select 5)" in lines["features selected"]
    assert "λ_max" in lines["λ"] and lines["screening"].startswith("slores (sequential)")
    assert method.progress_line(model.history[-1]).startswith("λ/λ_max ")
    fitted = method.estimator_attributes(model, store.id_offset)
    assert fitted["path_"] == model.history
    assert fitted["C_"] == model.params["C"] and fitted["lambda_"] == model.params["lambda"]


# ------------------------------------------------------------ estimator
def test_estimator_selector_contract():
    X, y = _problem(5)
    labels = np.where(y > 0, "spam", "ham")
    est = L1LogisticRegression(n_features_to_select=8, n_lambdas=30)
    assert clone(est).get_params() == est.get_params()
    est.fit(X, labels)
    assert list(est.classes_) == ["ham", "spam"]
    support = est.get_support()
    assert support.sum() == len(est.selected_features_) >= 8
    np.testing.assert_array_equal(np.flatnonzero(support), est.selected_features_)
    assert est.transform(X).shape == (X.shape[0], support.sum())
    dense = est.decision_function(X.toarray())
    np.testing.assert_allclose(est.decision_function(X), dense, rtol=1e-12)
    assert set(est.predict(X)) <= {"ham", "spam"}
    np.testing.assert_allclose(est.predict_proba(X).sum(axis=1), 1.0)
    assert est.coef_.shape == (1, X.shape[1])
    assert est.path_[-1]["nnz"] == support.sum()
    with pytest.raises(ValueError, match="Only binary classification is supported.*"
                                         "K classes: FGMClassifier"):
        L1LogisticRegression().fit(X, np.arange(X.shape[0]) % 3)


def test_estimator_on_a_store_equals_the_matrix_fit(zarr_store):
    path, X, y = zarr_store
    on_store = L1LogisticRegression(C=0.5).fit(open_store(path))
    on_matrix = L1LogisticRegression(C=0.5).fit(X, y)
    # fitted on a store, selected_features_ are its ids; coef_ spans input columns
    np.testing.assert_array_equal(
        on_store.selected_features_ - on_store.model_.params["id_offset"],
        on_matrix.selected_features_)
    np.testing.assert_array_equal(on_store.get_support(), on_matrix.get_support())
    np.testing.assert_allclose(on_store.coef_, on_matrix.coef_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("screening", ["slores", "strong", "none"])
@pytest.mark.parametrize("sequential", [True, False])
def test_block_size_and_rules_give_the_same_models(screening, sequential):
    X, y = _problem(6)
    ref = l1_path(InMemoryStore(X.tocsc(), y), n_lambdas=8, screening="none")
    for block_size in (1, 7, X.shape[1]):
        path = l1_path(InMemoryStore(X.tocsc(), y, block_size=block_size), n_lambdas=8,
                       screening=screening, sequential=sequential)
        for a, b, ca, cb in zip(path.records, ref.records, path.columns, ref.columns):
            np.testing.assert_array_equal(ca, cb)
            assert a["objective"] == pytest.approx(b["objective"], rel=1e-9)


# ------------------------------------------------------------------ CLI
def test_cli_path_writes_the_records(zarr_store, tmp_path):
    path, X, y = zarr_store
    out = tmp_path / "path.json"
    run("path", "--data", path, "--n-lambdas", 6, "--out", out)
    doc = json.loads(out.read_text())
    assert doc["method"] == "l1" and doc["screening"] == "slores" and doc["sequential"]
    assert len(doc["path"]) == 6
    for step in doc["path"]:
        for key in ("lambda", "ratio", "nnz", "objective", "kept", "rejection_ratio",
                    "kkt_violations_found", "kkt_violations_left",
                    "seconds_screening", "seconds_solving", "seconds_kkt",
                    "features", "coef", "intercept"):
            assert key in step
        assert step["kkt_violations_left"] == 0
        assert len(step["features"]) == len(step["coef"]) == step["nnz"]
    basic = json.loads(run("path", "--data", path, "--n-lambdas", 6, "--basic",
                           "--screening", "strong").stdout)
    assert not basic["sequential"] and basic["screening"] == "strong"
    assert [s["nnz"] for s in basic["path"]] == [s["nnz"] for s in doc["path"]]


def test_cli_select_l1_model_predicts(zarr_store, tmp_path):
    path, X, y = zarr_store
    out = tmp_path / "l1.json"
    result = run("select", "--method", "l1", "--n-features-to-select", 4, "--data", path,
                 "--test", path, "--out", out)
    assert "test accuracy" in result.output
    model = Model.load(out)
    assert model.params["method"] == "l1" and len(model.features) >= 4
    assert model.params["test"]["accuracy"] > 0.5
    preds = run("predict", "--model", out, "--data", path).stdout.splitlines()
    assert len(preds) == X.shape[0] + 1


def test_cli_select_l1_refuses_fgm_options(zarr_store):
    path, _, _ = zarr_store
    result = run("select", "--method", "l1", "--n-features-to-select", 3, "--poly", 2,
                 "--data", path, ok=False)
    assert_one_line_error(result, "--poly applies to --method fgm or mslr, not --method l1")


# ------------------------------------------------------- distributed
def test_path_on_a_local_cluster_equals_synchronous(zarr_store, local_cluster_client):
    path, _, _ = zarr_store
    store = open_store(path)
    local = l1_path(store, n_lambdas=6, scheduler="synchronous")
    remote = l1_path(store, n_lambdas=6, scheduler=local_cluster_client, block_size=37)
    for a, b, ca, cb, wa, wb in zip(local.records, remote.records, local.columns,
                                    remote.columns, local.coefs, remote.coefs):
        assert a["objective"] == b["objective"]
        np.testing.assert_array_equal(ca, cb)
        np.testing.assert_array_equal(wa, wb)


# ------------------------------------------------ the count search (issue 37)
@pytest.fixture(scope="module")
def colon(data_dir):
    """colon-cancer (62 × 2,000, dense): a real p ≫ n problem."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(data_dir / "colon-cancer.svm.bz2"))
    return X.tocsc(), np.where(y > 0, 1.0, -1.0)


def _kkt_holds(X, y, lam, coef, intercept, columns, tol=1e-5):
    """The optimality conditions of the ℓ1-logistic problem at ``lam``,
    computed densely on every column (independent of the engine's check)."""
    beta = np.zeros(X.shape[1])
    beta[columns] = coef
    f = X @ beta + intercept
    residual = -y / (1.0 + np.exp(y * f))         # d loss / d f_i
    grad = np.asarray(X.T @ residual).ravel() / len(y)
    zero = beta == 0
    assert abs(residual.sum() / len(y)) <= tol * lam
    assert np.all(np.abs(grad[zero]) <= lam * (1 + tol))
    np.testing.assert_allclose(grad[~zero], -lam * np.sign(beta[~zero]),
                               rtol=0, atol=tol * lam)


def test_the_path_command_keeps_its_linear_grid(colon):
    """``ultrafs path`` is unchanged: the paper's linear grid, 0.95 … 0.10."""
    X, y = colon
    path = l1_path(X, y)
    np.testing.assert_allclose(path.lambdas / path.lambda_max,
                               np.linspace(0.95, 0.10, 86), rtol=1e-12)


def test_count_search_on_colon_cancer_matches_a_fine_path(colon):
    """For k the old linear grid overshot (13 and 20: its first λ with at
    least 13 has 14, with at least 20 has 21),
    k inside the default grid, and k that needs λ below λ_max/10 (30, 35):
    at most k nonzeros, as many as a fine unscreened reference path reaches
    without passing k, the reference's support at that count, the model of
    an unscreened solve at the model's λ, and the optimality conditions
    verified densely on all 2,000 columns."""
    from ultrafs.methods.l1_path import fit_l1_count, fit_l1_path, log_lambda_grid

    X, y = colon
    store = InMemoryStore(X, y)
    linear = fit_l1_path(store, y)
    assert linear.records[linear.first_with(13)]["nnz"] > 13      # the old overshoot
    assert linear.records[linear.first_with(20)]["nnz"] > 20
    assert linear.records[-1]["nnz"] < 30                          # below λ_max/10
    fine = fit_l1_path(store, y, screening="none", tol=1e-9,
                       lambdas=log_lambda_grid(linear.lambda_max, 1200, 1e-3, 0.999))
    counts = np.array([r["nnz"] for r in fine.records])
    for k in (1, 5, 13, 20, 30, 35):
        path = fit_l1_count(store, y, n_nonzero=k)
        model = path.records[path.index]
        assert model["nnz"] <= k
        reachable = counts[counts <= k].max()
        assert model["nnz"] >= reachable, (k, model["nnz"], reachable)
        assert model["nnz"] == max(r["nnz"] for r in path.records if r["nnz"] <= k)
        same = np.flatnonzero(counts == model["nnz"])
        if same.size:   # the reference's first point with that count: same support
            np.testing.assert_array_equal(path.columns[path.index],
                                          fine.columns[same[0]])
        # an unscreened solve at the model's λ (the fine path may miss the
        # count: a bisection finds counts between its points)
        alone = fit_l1_path(store, y, screening="none", tol=1e-9,
                            lambdas=[model["lambda"]])
        np.testing.assert_array_equal(path.columns[path.index], alone.columns[0])
        np.testing.assert_allclose(path.coefs[path.index], alone.coefs[0], rtol=0,
                                   atol=1e-4 * np.abs(alone.coefs[0]).max())
        for record in path.records:
            assert record["kkt"] <= 1e-6 and record["kkt_violations_left"] == 0
        _kkt_holds(X, y, model["lambda"], path.coefs[path.index],
                   path.intercepts[path.index], path.columns[path.index])
        if k >= 30:
            assert any(r["ratio"] < 0.1 for r in path.records)
            assert any(r["extension"] for r in path.records)
        if model["nnz"] == k:
            assert path.stop_reason.startswith(f"{k} nonzero weights")
    path = fit_l1_count(store, y, n_nonzero=13)
    assert any(r["bisection"] for r in path.records)


def test_count_search_stops_when_the_count_cannot_grow(colon):
    """k = every column of colon-cancer (62 rows: nearly separable): the
    search returns the largest count it met, with the reason, never fails."""
    from ultrafs.methods.l1_path import fit_l1_count

    X, y = colon
    path = fit_l1_count(InMemoryStore(X, y), y, n_nonzero=X.shape[1])
    model = path.records[path.index]
    assert 30 <= model["nnz"] == max(r["nnz"] for r in path.records) < X.shape[1]
    assert "null deviance" in path.stop_reason or "stopped growing" in path.stop_reason
    with pytest.raises(ParameterError, match="2001 nonzero weights asked for, but the "
                                             "data has 2000 columns"):
        fit_l1_count(InMemoryStore(X, y), y, n_nonzero=X.shape[1] + 1)


def test_count_search_independent_of_blocks_and_scheduler(colon):
    from ultrafs.methods.l1_path import fit_l1_count

    X, y = colon
    runs = [fit_l1_count(InMemoryStore(X, y, block_size=bs), y, n_nonzero=13,
                         scheduler=scheduler, memory_budget=None)
            for bs, scheduler in ((64, "synchronous"), (700, "threads"))]
    a, b = runs
    assert [r["lambda"] for r in a.records] == [r["lambda"] for r in b.records]
    assert a.index == b.index
    np.testing.assert_array_equal(a.columns[a.index], b.columns[b.index])
    np.testing.assert_allclose(a.coefs[a.index], b.coefs[b.index], rtol=1e-10, atol=0)


@pytest.mark.parametrize("screening", ["slores", "strong"])
@pytest.mark.parametrize("sequential", [True, False])
def test_count_search_same_model_under_every_rule(screening, sequential):
    """The bisection restores the rule's reference (sequential) or keeps λ_max
    (basic): each rule gives the unscreened search's model, certified."""
    from ultrafs.methods import l1_method
    from ultrafs.methods.l1_path import fit_l1_count

    X, y = _problem(5)
    store = InMemoryStore(X.tocsc(), y)
    plain = fit_l1_count(store, y, n_nonzero=9, screening="none", n_lambdas=20)
    path = fit_l1_count(store, y, n_nonzero=9, screening=screening,
                        sequential=sequential, n_lambdas=20)
    assert [r["nnz"] for r in path.records] == [r["nnz"] for r in plain.records]
    assert path.records[path.index]["nnz"] <= 9
    np.testing.assert_array_equal(path.columns[path.index], plain.columns[plain.index])
    np.testing.assert_allclose(path.coefs[path.index], plain.coefs[plain.index],
                               rtol=1e-4, atol=1e-8)
    assert all(r["kkt"] <= 1e-6 for r in path.records)
    lines = [l1_method.progress_line(r) for r in path.records]
    assert any("(bisection)" in line for line in lines) == any(
        r["bisection"] for r in path.records)
