"""The faces of GSR-FS (issue 16): CLI, API, estimator, model files, scaling.

One functional core (:func:`ultrafs.methods.gsrfs_store.fit_gsrfs_store`) is
behind every face: the CLI on a Zarr store, ``fit("gsrfs", ...)`` (the method
of :mod:`ultrafs.methods.gsrfs_method`) and ``GSRFSSelector`` on the same data
rank the same features.  Results do not depend on the block
size or the scheduler (a real LocalCluster included).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner
from sklearn.datasets import dump_svmlight_file, load_digits, make_regression

from ultrafs.api import fit
from ultrafs.cli import main
from ultrafs.errors import ParameterError
from ultrafs.sklearn import GSRFSSelector
from ultrafs.methods.gsrfs import fit_gsrfs
from ultrafs.methods.gsrfs_store import gsrfs_targets
from ultrafs.model import Model
from ultrafs.solvers.gram_operators import DenseGramOperator, ScaledGramOperator
from ultrafs.store import as_store, open_store


def invoke(args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Digits (10 classes), its two-class version and a regression set, as Zarr stores."""
    root = tmp_path_factory.mktemp("gsrfs")
    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    Xr, yr = make_regression(240, 60, n_informative=5, noise=1.0, random_state=0)
    sets = {"digits": (X, y), "binary": (X, (y >= 5).astype(int)),
            "reg": (Xr, yr)}
    paths = {}
    for name, (A, b) in sets.items():
        dump_svmlight_file(A, b, str(root / f"{name}.svm"), zero_based=False)
        result = invoke(["ingest", root / f"{name}.svm", root / f"{name}.zarr"])
        assert result.exit_code == 0, result.output
        paths[name] = root / f"{name}.zarr"
    return {"root": root, "paths": paths, "arrays": sets}


def _select(store_path, out, *extra):
    result = invoke(["select", "--method", "gsrfs", "--data", store_path, "--out", out,
                     *extra])
    assert result.exit_code == 0, result.output
    return Model.load(out)


# ------------------------------------------------------------- one core
def test_cli_api_estimator_rank_the_same_features(data, tmp_path):
    model = _select(data["paths"]["digits"], tmp_path / "m.json", "--n-features-to-select", "12")
    assert model.target == "multiclass" and model.params["method"] == "gsrfs"
    assert np.asarray(model.coef).shape == (12, 10)
    api = fit("gsrfs", open_store(data["paths"]["digits"]), n_features_to_select=12)
    assert api.features == model.features
    np.testing.assert_allclose(api.coef, model.coef, rtol=1e-12, atol=1e-14)
    X, y = data["arrays"]["digits"]
    est = GSRFSSelector(12).fit(X, y)
    # LIBSVM ids are 1-based; the estimator's columns 0-based
    ranked = np.argsort(est.ranking_, kind="stable")[:12]
    assert [int(j) + 1 for j in ranked] == model.features
    assert sorted(int(j) + 1 for j in est.get_support(indices=True)) == sorted(model.features)
    # the scores recorded are the ranking's, decreasing
    scores = model.params["scores"]
    assert all(a >= b for a, b in zip(scores, scores[1:]))
    np.testing.assert_allclose(scores, est.scores_[ranked], rtol=1e-12)


def test_block_size_and_scheduler_do_not_matter(data, tmp_path):
    base = _select(data["paths"]["digits"], tmp_path / "a.json", "--n-features-to-select", "10")
    other = _select(data["paths"]["digits"], tmp_path / "b.json", "--n-features-to-select", "10",
                    "--block-size", "7", "--scheduler", "synchronous")
    assert base.features == other.features
    np.testing.assert_allclose(base.coef, other.coef, rtol=1e-9, atol=1e-12)


def test_local_cluster_gives_the_same_two_stage_result(data, local_cluster_client):
    store = open_store(data["paths"]["digits"])
    kwargs = dict(n_features_to_select=8, p=1.0, lam=20.0, candidates=12, block_size=9)
    local = fit("gsrfs", store, **kwargs)
    remote = fit("gsrfs", store, scheduler=local_cluster_client, **kwargs)
    assert local.features == remote.features
    assert local.params["rounds"] == remote.params["rounds"]
    np.testing.assert_allclose(local.coef, remote.coef, rtol=1e-10, atol=1e-13)


def test_the_method_is_registered_with_the_engine_defaults(data):
    from ultrafs.methods import gsrfs as engine
    from ultrafs.methods.gsrfs_method import GSRFSParams
    from ultrafs.methods.registry import get_method

    method = get_method("gsrfs")
    assert method.params is GSRFSParams and method.estimator_kind == "selector"
    assert set(method.targets) == {"binary", "multiclass", "continuous"}
    defaults = GSRFSParams()
    assert (defaults.max_iter, defaults.min_iter) == (engine.DEFAULT_MAX_ITER,
                                                      engine.DEFAULT_MIN_ITER)
    spec = GSRFSParams.__dataclass_fields__
    assert spec["solve"].metadata["spec"].words == engine.SOLVES
    assert spec["stop"].metadata["spec"].words == engine.STOPS
    # the vocabulary: the count's old name is refused with a hint; bad values in one line
    X, y = data["arrays"]["digits"]
    with pytest.raises(ParameterError, match="features was renamed: use "
                                             "n_features_to_select"):
        fit("gsrfs", X, y, features=5)
    with pytest.raises(ParameterError, match="candidates must be an integer >= 1 or "
                                             "'auto'"):
        fit("gsrfs", X, y, candidates="many")
    with pytest.raises(ParameterError, match="r must be a number >= 1e-06 and <= 2"):
        fit("gsrfs", X, y, r=3.0)
    store = open_store(data["paths"]["digits"])
    model = fit("gsrfs", store, n_features_to_select=7, candidates="auto",
                command="ultrafs test")
    assert model.params["n_features_to_select"] == 7 and len(model.features) == 7
    assert model.params["command"] == "ultrafs test"
    n_candidates = model.params["candidates"]      # max(10 x 7, 1000), at most 64
    assert 7 <= n_candidates <= 64
    lines = dict(method.summary_lines(model, store))
    assert lines["data"].startswith("600 rows x 64 features, 10 classes")
    assert lines["two-stage"].startswith(f"{n_candidates} candidates of 64")
    assert lines["selected"].startswith("7 features")
    assert method.estimator_attributes(model, store.id_offset) == {
        "converged_": model.params["converged"],
        "stationarity_": model.params["stationarity"]}


# --------------------------------------------------------------- targets
def test_binary_model_is_the_difference_of_the_two_code_fits(data, tmp_path):
    model = _select(data["paths"]["binary"], tmp_path / "b.json", "--n-features-to-select", "6")
    assert model.target == "binary" and np.asarray(model.coef).shape == (6,)
    store = open_store(data["paths"]["binary"])
    Y, target = gsrfs_targets(store)
    assert target == "binary" and Y.shape[1] == 2
    cols = store.columns_of(np.sort(model.features))
    X = data["arrays"]["binary"][0]
    factors = 1.0 / X[:, cols].std(axis=0)
    refit = fit_gsrfs(ScaledGramOperator(DenseGramOperator(X[:, cols]), factors), Y,
                      r=1.0, p=0.5, lam=1.0, fit_intercept=True)
    refit.coef = refit.coef * factors[:, None]
    order = np.argsort(np.argsort(model.features))
    W = refit.coef[order]
    np.testing.assert_allclose(model.coef, (W[:, 1] - W[:, 0]) / 2, rtol=1e-8, atol=1e-10)
    decision = model.decision_function_store(store)
    two = X[:, cols] @ refit.coef + refit.intercept
    assert np.array_equal(decision > 0, two[:, 1] > two[:, 0])
    assert model.evaluate_store(store)["accuracy"] > 0.7     # 0.753 measured


def test_regression_model_round_trip_evaluate_predict(data, tmp_path):
    out = tmp_path / "r.json"
    result = invoke(["select", "--method", "gsrfs", "--data", data["paths"]["reg"],
                     "--out", out, "--n-features-to-select", "5", "--validation-fraction", "0.25"])
    assert result.exit_code == 0, result.output
    model = Model.load(out)
    assert model.target == "continuous" and model.classes == []
    assert model.params["held_out"]["r2"] > 0.99
    again = Model.from_dict(json.loads(json.dumps(model.to_dict())))
    np.testing.assert_array_equal(again.coef, model.coef)
    result = invoke(["evaluate", "--model", out, "--data", data["paths"]["reg"]])
    metrics = json.loads(result.stdout)
    assert metrics["r2"] > 0.99 and "accuracy" not in metrics
    result = invoke(["predict", "--model", out, "--data", data["paths"]["reg"]])
    lines = result.stdout.splitlines()
    assert lines[0].split("\t")[:2] == ["row", "predicted"] and len(lines) == 241
    # a regression model has no accuracy curve
    result = CliRunner().invoke(main, ["report", str(out), "--test",
                                       str(data["paths"]["reg"]), "--out",
                                       str(tmp_path / "rep")])
    assert result.exit_code == 1 and "regression model" in result.output
    assert not (tmp_path / "rep").exists()
    # and a classification model refuses real targets in one line
    digits = _select(data["paths"]["digits"], tmp_path / "d.json", "--n-features-to-select", "4")
    with pytest.raises(Exception, match="continuous"):
        digits.evaluate_store(open_store(data["paths"]["reg"]))


def test_two_stage_on_the_cli_records_its_rounds(data, tmp_path):
    model = _select(data["paths"]["digits"], tmp_path / "t.json", "--n-features-to-select", "8",
                    "--candidates", "10", "--p", "1", "--lambda", "500")
    rounds = model.params["rounds"]
    assert [r["candidates"] for r in rounds] == [10, 20, 23]     # measured
    assert rounds[-1]["violators"] == 0
    assert "every feature left out meets" in model.stop_reason
    full = _select(data["paths"]["digits"], tmp_path / "f.json", "--n-features-to-select", "8",
                   "--scale", "none", "--p", "1", "--lambda", "500", "--tol", "1e-7")
    assert model.features == full.features


# -------------------------------------------------------------- estimator
def test_estimator_contract_and_inputs():
    X, y = load_digits(return_X_y=True)
    est = GSRFSSelector(10).fit(X, y)
    assert est.transform(X).shape == (len(X), 10)
    assert est.get_support().sum() == 10
    best = np.argsort(est.ranking_, kind="stable")
    assert est.ranking_[best[0]] == 1
    assert est.coef_.shape == (10, 64) and list(est.classes_) == list(range(10))
    # constant columns are never ranked (scaled to zero): they share the last rank
    constant = np.flatnonzero(X.std(axis=0) == 0)
    assert len(constant) and np.all(est.scores_[constant] == 0)
    assert np.all(est.ranking_[constant] == est.ranking_.max())
    # sparse input, string labels: the same ranking
    labels = np.array([f"c{v}" for v in y])
    other = GSRFSSelector(10).fit(sp.csr_matrix(X), labels)
    np.testing.assert_array_equal(other.ranking_, est.ranking_)
    # regression, one and two outputs
    Xr, yr = make_regression(200, 30, n_informative=4, noise=0.5, random_state=1)
    one = GSRFSSelector(4).fit(Xr, yr)
    assert one.classes_ is None and one.coef_.shape == (1, 30)
    two = GSRFSSelector(4).fit(Xr, np.column_stack([yr, 2 * yr]))
    assert two.coef_.shape == (2, 30)
    assert set(two.get_support(indices=True)) == set(one.get_support(indices=True))
    # the two-stage mode: only the candidates are scored
    staged = GSRFSSelector(5, candidates=20, p=1.0, lam=500.0, scale="none").fit(X, y)
    candidates = staged.result_.candidates
    assert len(staged.result_.row_norms) == len(candidates) < 64
    assert np.count_nonzero(staged.scores_) <= len(candidates)
    assert set(staged.get_support(indices=True)) <= set(candidates)
    with pytest.raises(ParameterError, match="n_features_to_select"):
        GSRFSSelector(0).fit(X, y)
    # on the one estimator base: the method's parameters, checks and old names
    from ultrafs.methods.gsrfs_method import GSRFSParams
    from ultrafs.methods.params import specs_of
    from ultrafs.sklearn import estimator_class
    from ultrafs.sklearn.base import MethodEstimator

    assert estimator_class("gsrfs") is GSRFSSelector
    assert issubclass(GSRFSSelector, MethodEstimator)
    assert set(specs_of(GSRFSParams)) <= set(GSRFSSelector().get_params())
    assert not hasattr(est, "predict") and not hasattr(est, "decision_function")
    with pytest.raises(ParameterError, match="r must be a number"):
        GSRFSSelector(4, r=3.0).fit(Xr, yr)
    with pytest.raises(TypeError):
        GSRFSSelector(4, features=4)
    np.testing.assert_array_equal(est.get_feature_names_out(),
                                  [f"x{j}" for j in np.flatnonzero(est.get_support())])


# ----------------------------------------------------------------- scaling
def test_scaled_operator_equals_the_scaled_matrix():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 12))
    X[:, 3] = 0.0
    c = rng.uniform(0.1, 3.0, size=12)
    c[5] = 0.0
    op = ScaledGramOperator(DenseGramOperator(X), c)
    ref = DenseGramOperator(X * c)
    s, d = rng.uniform(0, 2, size=30), rng.uniform(0, 2, size=12)
    V, W = rng.normal(size=(30, 3)), rng.normal(size=(12, 3))
    for got, want in ((op.feature_gram(s)[0], ref.feature_gram(s)[0]),
                      (op.feature_gram(s)[1], ref.feature_gram(s)[1]),
                      (op.sample_gram(d), ref.sample_gram(d)),
                      (op.rmatmat(V), ref.rmatmat(V)), (op.matmat(W), ref.matmat(W)),
                      (op.columns([4, 1]).rmatmat(V), ref.columns([4, 1]).rmatmat(V))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert op.n_passes == op.inner.n_passes


def test_scaling_makes_the_ranking_unit_free():
    """Multiplying a column by 1000 changes nothing once columns are scaled."""
    X, y = load_digits(return_X_y=True)
    X = X[:500].astype(float)
    y = y[:500]
    base = GSRFSSelector(8).fit(X, y)
    X2 = X.copy()
    X2[:, 20] *= 1000.0
    moved = GSRFSSelector(8).fit(X2, y)
    np.testing.assert_array_equal(moved.ranking_, base.ranking_)
    raw = GSRFSSelector(8, scale="none").fit(X2, y)
    assert not np.array_equal(raw.ranking_, base.ranking_)


def test_constant_columns_get_no_scale_factor():
    """A column of one repeated nonzero value has a rounding-level spread, not a scale."""
    from ultrafs.methods.gsrfs_store import column_std_factors

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 5))
    X[:, 1] = 0.1          # its two-pass centred sum is rounding, not 0
    X[:, 2] = 0.0
    store = as_store(X, np.arange(50) % 3)
    factors = column_std_factors(store)
    np.testing.assert_allclose(factors[[0, 3, 4]], 1.0 / X[:, [0, 3, 4]].std(axis=0),
                               rtol=1e-12)
    assert factors[1] == 0.0 and factors[2] == 0.0
    est = GSRFSSelector(3).fit(X, np.arange(50) % 3)
    assert est.scores_[1] == 0.0 and est.scores_[2] == 0.0
    assert set(est.get_support(indices=True)) == {0, 3, 4}


def test_non_finite_data_is_refused_in_one_line():
    from ultrafs.methods.gsrfs import encode_targets

    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 6))
    X[:, 2] = np.nan
    Y, _ = encode_targets(rng.integers(0, 3, 50))
    with pytest.raises(ParameterError, match="NaN or infinite"):
        DenseGramOperator(X)
    X[:, 2] = 0.0
    Y[3, 0] = np.inf
    # refused up front: no product with the infinite targets warns first
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ParameterError, match="not finite"):
            fit_gsrfs(DenseGramOperator(X), Y, r=2, p=1, lam=1.0)
