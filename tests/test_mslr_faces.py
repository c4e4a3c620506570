"""The faces of minimax sparse LR (issue 14): ``select --method mslr``,
:class:`~ultrafs.sklearn.MSLRClassifier`, ``ultrafs.api.fit("mslr", ...)``,
model files, the report, and a real ``dask.distributed`` cluster.

The solver and the cutting plane are tested in ``test_mslr.py`` (T1–T9);
here the faces must give the API's model bit for bit, on every scheduler
and block size, and refuse bad input in one line.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from tests.cli_tools import assert_one_line_error, run
from tests.sparse_problems import sparse_binary_problem
from ultrafs import api
from ultrafs.errors import ParameterError
from ultrafs.model import Model
from ultrafs.sklearn import MSLRClassifier
from ultrafs.store import open_store
from ultrafs.store.memory import InMemoryStore
from ultrafs.store.writers.zarr_writer import write_store


def select_mslr(data, y=None, **options):
    """MSLR's model through the one functional entry."""
    return api.fit("mslr", data, y, **options)


def _problem(seed=0, n=150, m=400, density=0.05):
    return sparse_binary_problem(seed, n, m, density, n_relevant=12)


@pytest.fixture(scope="module")
def zarr_store(tmp_path_factory):
    X, y = _problem()
    path = tmp_path_factory.mktemp("mslr") / "train.zarr"
    write_store(path, X, y, block_nnz=300, command="test")
    return path, X, y


def _same(a, b):
    assert a.features == b.features
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.refit["coef"], b.refit["coef"])
    assert a.refit["intercept"] == b.refit["intercept"]
    assert a.params["constraints"] == b.params["constraints"]


# ------------------------------------------------------------------ API
def test_select_mslr_model(zarr_store):
    path, X, y = zarr_store
    model = select_mslr(open_store(path), B=3, max_iter=4)
    p = model.params
    assert p["method"] == "mslr" and p["C"] == 10.0 and p["refit_C"] == 5.0
    assert len(model.features) <= 12 and len(p["constraints"]) == len(model.history)
    assert all(len(s) == 3 for s in p["constraints"])
    assert set(model.features) == {f for s in p["constraints"] for f in s}
    assert abs(sum(p["mu"]) - 1) < 1e-12
    assert all(r["certified"] for r in model.history)
    assert model.predictor == "refit" and model.intercept == 0.0
    # the retraining is scikit-learn's ℓ2-LR with C = 5 on the selected columns
    columns = np.asarray(model.features) - p["id_offset"]
    reference = LogisticRegression(C=5.0, tol=1e-12, max_iter=10000).fit(
        X[:, columns], y)
    np.testing.assert_allclose(model.refit["coef"], reference.coef_.ravel(),
                               rtol=1e-4, atol=1e-5)


def test_block_size_and_schedulers_give_the_same_model(zarr_store):
    path, X, y = zarr_store
    store = open_store(path)
    base = select_mslr(store, B=3, max_iter=3, scheduler="synchronous")
    for block_size, scheduler in ((1, "threads"), (7, "processes"), (400, "threads")):
        _same(base, select_mslr(store, B=3, max_iter=3, block_size=block_size,
                                scheduler=scheduler))
    _same(base, select_mslr(X, y, B=3, max_iter=3))
    _same(base, select_mslr(X.toarray(), y, B=3, max_iter=3))
    _same(base, select_mslr(InMemoryStore(X.tocsc(), y, block_size=5), B=3, max_iter=3))


def test_mslr_on_a_local_cluster_equals_synchronous(zarr_store, local_cluster_client):
    path, _, _ = zarr_store
    store = open_store(path)
    _same(select_mslr(store, B=3, max_iter=3, scheduler="synchronous"),
          select_mslr(store, B=3, max_iter=3, scheduler=local_cluster_client,
                      block_size=37))


def test_refit_options(zarr_store):
    path, X, y = zarr_store
    store = open_store(path)
    plain = select_mslr(store, B=3, max_iter=2, refit=False)
    assert plain.refit is None and plain.predictor == "selection"
    assert plain.params["fit_intercept"] is False
    auto = select_mslr(store, B=3, max_iter=2, refit_C="auto")
    curve = auto.params["retrain_validation"]
    assert curve["C"] == auto.refit["C"] and len(curve["points"]) == 8
    assert auto.params["refit_C"] == auto.refit["C"]
    assert auto.params["refit_C_rule"] == "auto"
    assert auto.refit["C"] == select_mslr(store, B=3, max_iter=2,
                                          refit_C="auto").refit["C"]
    no_bias = select_mslr(store, B=3, max_iter=2, fit_intercept=False)
    assert no_bias.refit["intercept"] == 0.0
    assert no_bias.params["refit_C_rule"] == "given"
    scaled = select_mslr(store, B=3, max_iter=2, C="scale")
    assert scaled.params["C_rule"] == "scale"
    assert plain.params["C_rule"] == "default"          # the paper's C = 10, not given


@pytest.mark.parametrize("kwargs, message", [
    ({"B": 0}, "B must be an integer >= 1, got 0"),
    ({"C": -1.0}, "C must be a number > 0 or 'scale', got -1.0"),
    ({"C": "auto"}, "C must be a number > 0 or 'scale', got 'auto'"),
    ({"C": float("inf")}, "C must be a number > 0 or 'scale', got inf"),
    ({"max_iter": 0}, "max_iter must be an integer >= 1"),
    ({"tol": -1.0}, "tol must be a number >= 0"),
    ({"refit_C": 0.0}, "refit_C must be a number > 0 or 'auto'"),
    ({"refit_C": "best"}, "refit_C must be a number > 0 or 'auto'"),
    ({"refit": False, "refit_C": 2.0},
     "refit_C is the C of the refit: it needs refit"),
    ({"inner_tol": 0.0}, "inner_tol must be a number > 0"),
    ({"gamma": 2.0}, "gamma is a parameter of the degree-2 kernel: it applies to poly 2"),
    ({"features": 3}, "MSLRParams has no parameter 'features'"),
    ({"retrain": False}, "retrain was renamed: use refit (--refit)"),
    ({"retrain_C": 2.0}, "retrain_C was renamed: use refit_C (--refit-C)"),
    ({"retrain_intercept": False}, "retrain_intercept was renamed: use fit_intercept"),
    ({"subproblem_tol": 1e-3}, "subproblem_tol was renamed: use inner_tol (--inner-tol)"),
    ({"split_seed": 1}, "split_seed was renamed: use seed (--seed)"),
    ({"checkpoint": "x"}, "checkpoint does not apply to MSLR (--method mslr)"),
])
def test_bad_parameters_are_refused(zarr_store, kwargs, message):
    path, _, _ = zarr_store
    with pytest.raises(ParameterError) as info:
        select_mslr(open_store(path), **{"B": 2, "max_iter": 2, **kwargs})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_mslr_defaults_are_the_engine_defaults():
    """MSLR's Params and fit_mslr / retrain agree on every shared default."""
    import inspect

    from ultrafs.methods.mslr import DEFAULT_RETRAIN_C, fit_mslr, retrain
    from ultrafs.methods.mslr_method import MSLRParams
    from ultrafs.methods.params import specs_of

    # the engine keeps the names the vocabulary replaced (Spec.old)
    renamed = {old: new for new, (_, spec) in specs_of(MSLRParams).items()
               for old in spec.old if not old.startswith("--")}
    engine = {renamed.get(n, n): p.default
              for n, p in inspect.signature(fit_mslr).parameters.items()}
    defaults = {name: default for name, (default, _) in specs_of(MSLRParams).items()}
    shared = [name for name in defaults if name in engine]
    assert set(shared) >= {"B", "C", "max_iter", "tol", "inner_tol", "seed"}
    for name in shared:
        assert engine[name] == defaults[name], name
    refit = inspect.signature(retrain).parameters
    assert defaults["refit_C"] == DEFAULT_RETRAIN_C == refit["C"].default
    assert defaults["fit_intercept"] == refit["fit_intercept"].default


def test_the_old_keywords_are_refused_with_the_new_name(zarr_store):
    """The keywords issue 36 renamed are refused in one line naming the new one."""
    path, _, _ = zarr_store
    store = open_store(path)
    for old, new in (("retrain_C", "refit_C"), ("subproblem_tol", "inner_tol"),
                     ("retrain_intercept", "fit_intercept"), ("retrain", "refit")):
        with pytest.raises(ParameterError, match=f"{old} was renamed: use {new}"):
            select_mslr(store, B=3, max_iter=2, **{old: 1})


def test_multiclass_data_is_fitted_one_vs_rest_with_one_support():
    """K = 3 classes: one shared selection, K columns of weights, the refit
    multinomial; the planted features are found."""
    from ultrafs.datasets.planted import make_planted_multiclass

    p = make_planted_multiclass(300, 60, 6, 3, n_test=200, seed=4)
    model = select_mslr(p.X_train, p.y_train, B=3, max_iter=3)
    assert model.target == "multiclass" and model.n_outputs == 3
    assert np.asarray(model.coef).shape == (len(model.features), 3)
    assert {int(j) for j in p.relevant} <= set(model.features)
    assert all(h["certified"] for h in model.history)
    est = MSLRClassifier(B=3, max_iter=2).fit(p.X_train, p.y_train)
    assert est.mslr_coef_.shape == (3, 60) and est.coef_.shape == (3, 60)
    assert np.mean(est.predict(p.X_test) == p.y_test) > 0.8
    np.testing.assert_allclose(est.predict_proba(p.X_test).sum(axis=1), 1.0)


def test_poly_2_candidates():
    rng = np.random.default_rng(3)
    X = (rng.random((200, 12)) < 0.3).astype(float)
    y = np.where(X[:, 2] * X[:, 5] + 0.1 * rng.standard_normal(200) > 0.5, 1.0, -1.0)
    model = select_mslr(X, y, B=2, max_iter=2, poly=2)
    assert model.feature_space["kind"] == "poly2"
    assert [2, 5] in model.features
    decision = model.decision_function_store(InMemoryStore(X, y))
    assert np.mean((decision > 0) == (y > 0)) > 0.9


# ------------------------------------------------------------ estimator
# scikit-learn's checks of MSLRClassifier: tests/test_sklearn_checks.py


def test_estimator_selector_and_store(zarr_store):
    path, X, y = zarr_store
    est = MSLRClassifier(B=3, max_iter=3).fit(X, y)
    model = select_mslr(open_store(path), B=3, max_iter=3)
    offset = model.params["id_offset"]
    columns = np.sort(np.asarray(model.features) - offset)
    # selected_features_ in the model's order (selection order), as every estimator
    np.testing.assert_array_equal(est.selected_features_,
                                  np.asarray(model.features) - offset)
    assert est.transform(X).shape == (X.shape[0], len(columns))
    np.testing.assert_array_equal(np.flatnonzero(est.get_support()), columns)
    assert est.coef_.shape == (1, X.shape[1]) and est.mslr_coef_.shape == (1, X.shape[1])
    np.testing.assert_allclose(est.decision_function(X),
                               model.decision_function_store(open_store(path)),
                               rtol=1e-12, atol=1e-12)
    on_store = MSLRClassifier(B=3, max_iter=3).fit(open_store(path))
    # fitted on a store: its ids; the mask and coef_ are over input columns
    assert on_store.selected_features_.tolist() == model.features
    np.testing.assert_array_equal(np.flatnonzero(on_store.get_support()), columns)
    np.testing.assert_array_equal(on_store.coef_, est.coef_)
    np.testing.assert_array_equal(on_store.mslr_coef_, est.mslr_coef_)
    assert abs(est.mu_.sum() - 1) < 1e-12 and len(est.constraints_) == len(est.mu_)


def test_estimator_attributes_of_the_method(zarr_store):
    """What ``MSLR.estimator_attributes`` gives is what MSLRClassifier (the
    estimator generated from the registry) sets."""
    from ultrafs.methods.mslr_method import estimator_attributes
    from ultrafs.sklearn import estimator_class

    assert estimator_class("mslr") is MSLRClassifier
    path, X, y = zarr_store
    for data in (X, open_store(path)):
        target = y if data is X else None
        est = MSLRClassifier(B=3, max_iter=3).fit(data, target)
        offset = est.model_.params["id_offset"] if data is not X else 0
        attributes = estimator_attributes(est.model_, offset,
                                          n_features_in=est.n_features_in_)
        assert set(attributes) == {"constraints_", "mu_", "mslr_coef_"}
        assert set(estimator_attributes(est.model_, offset)) == {"constraints_", "mu_"}
        assert len(attributes["constraints_"]) == len(est.constraints_)
        for mine, theirs in zip(attributes["constraints_"], est.constraints_):
            np.testing.assert_array_equal(mine, theirs)
        np.testing.assert_array_equal(attributes["mu_"], est.mu_)
        np.testing.assert_array_equal(attributes["mslr_coef_"], est.mslr_coef_)
        # MSLR's own weights, the refit's (which predict)
        columns = np.asarray(est.model_.features) - offset
        np.testing.assert_array_equal(est.selection_coef_, est.mslr_coef_[0, columns])
        np.testing.assert_array_equal(est.selected_coef_, est.coef_[0, columns])
        assert np.count_nonzero(est.coef_) <= len(columns)
    with pytest.raises(ParameterError, match="refit_C is the C of the refit"):
        select_mslr(X, y, refit=False, refit_C=2.0)
    # the estimator drops what its other parameters turn off (a search over refit)
    estimator_class("mslr")(B=2, max_iter=2, refit=False, refit_C=2.0).fit(X, y)


def test_summary_and_progress_lines(zarr_store):
    from ultrafs.methods.mslr_method import progress_line, summary_lines

    path, _, _ = zarr_store
    store = open_store(path)
    records = []
    model = select_mslr(store, B=3, max_iter=2, refit_C="auto", callback=records.append)
    lines = dict(summary_lines(model, store))
    assert lines["features selected"].startswith(f"{len(model.features)} of 6 (--B 3 x "
                                                 "--max-iter 2)")
    assert lines["C"] == "10 (default)" and lines["stopped because"] == model.stop_reason
    assert "chosen on held-out rows" in lines["refit"]
    assert "refit" not in dict(summary_lines(select_mslr(store, B=3, max_iter=2,
                                                         refit=False), store))
    assert len(records) == len(model.history)
    assert progress_line(records[0]).startswith("3 features in 1 constraints, P(v) ")


# ------------------------------------------------------------------ CLI
def test_cli_select_mslr_writes_a_model_that_predicts(zarr_store, tmp_path):
    path, X, y = zarr_store
    out = tmp_path / "mslr.json"
    result = run("select", "--method", "mslr", "--B", 3, "--max-iter", 3, "--data", path,
                 "--test", path, "--out", out)
    assert "test accuracy" in result.output
    model = Model.load(out)
    _same(model, select_mslr(open_store(path), B=3, max_iter=3))
    assert model.params["method"] == "mslr" and model.params["test"]["accuracy"] > 0.7
    assert model.params["command"].startswith("ultrafs")
    preds = run("predict", "--model", out, "--data", path).stdout.splitlines()
    assert len(preds) == X.shape[0] + 1
    evaluated = json.loads(run("evaluate", "--model", out, "--data", path).stdout)
    assert evaluated["predictor"] == "refit"
    report = tmp_path / "r.html"
    run("report", out, "--train", path, "--test", path, "--out", report)
    text = report.read_text()
    assert "MSLR refit (l2)" in text and "FGM" not in text.split("Parameters")[1]


def test_cli_options(zarr_store, tmp_path):
    path, _, _ = zarr_store
    out = tmp_path / "a.json"
    run("select", "--method", "mslr", "--B", 2, "--max-iter", 2, "--data", path,
        "--refit-C", "auto", "--no-intercept", "--out", out)
    model = Model.load(out)
    assert model.params["refit_C_rule"] == "auto" and model.refit["intercept"] == 0.0
    _same(model, select_mslr(open_store(path), B=2, max_iter=2, refit_C="auto",
                             fit_intercept=False))
    run("select", "--method", "mslr", "--B", 2, "--max-iter", 2, "--data", path,
        "--no-refit", "--C", 3, "--out", out, "--overwrite")
    model = Model.load(out)
    assert model.refit is None and model.params["C"] == 3.0


@pytest.mark.parametrize("argv, message", [
    (["--cv", "3"], "--cv applies to --method fgm, not --method mslr"),
    (["--checkpoint", "ck"], "--checkpoint applies to --method fgm, not --method mslr "
                             "(mslr commits no loop state to resume from)"),
    (["--C", "auto"], "C must be a number > 0 or 'scale', got 'auto'"),
    (["--refit-C", "2", "--no-refit"],
     "--refit-C is the C of the refit: it needs --refit"),
    (["--refit-C", "-1"], "'-1' is not a number > 0 or 'auto'"),
    (["--gamma", "2"], "--gamma is a parameter of the degree-2 kernel: it applies to "
                       "--poly 2"),
    (["--retrain-C", "2"], "--retrain-C was renamed: use --refit-C"),
    (["--no-retrain"], "--no-retrain was renamed: use --no-refit"),
    (["--split-seed", "2"], "--split-seed was renamed: use --seed"),
    (["--features", "3"], "--features was renamed: use --n-features-to-select"),
    (["--n-features-to-select", "3"],
     "--n-features-to-select applies to --method l1 or gsrfs, not --method mslr"),
])
def test_cli_refusals(zarr_store, argv, message):
    path, _, _ = zarr_store
    result = run("select", "--method", "mslr", "--data", path, *argv, ok=False)
    assert_one_line_error(result, message)
