"""The faces of sparse kernel logistic regression (seed 001): API, CLI, estimator, model files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import make_moons

from ultrafs import api
from ultrafs.cli import main
from ultrafs.errors import ParameterError
from ultrafs.features.rff import RandomFourierFeatures
from ultrafs.model import Model
from ultrafs.sklearn import SparseKernelLogisticRegression
from ultrafs.store import as_store


def select_sklr(data, y=None, **options):
    """Sparse kernel LR's model through the one functional entry."""
    return api.fit("sklr", data, y, **options)


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(600, noise=0.25, random_state=0)
    X = np.column_stack([X, np.zeros(len(X))])          # an empty column
    X[5] = 0.0                                         # a zero row
    return X[:400], y[:400], X[400:], y[400:]


def test_rff_model_predicts_through_the_regenerated_basis(moons, tmp_path):
    Xtr, ytr, Xte, yte = moons
    model = select_sklr(Xtr, ytr, n_components=300, solver="cgd", lambda_ratio=0.05)
    p = model.params
    assert p["method"] == "sklr" and p["converged"] and p["rel_gap"] <= 1e-6
    assert model.feature_space["kind"] == "rff"
    assert model.feature_space["seed"] == 0 and model.feature_space["sigma"] == p["sigma"]
    # the decision is the explicit random features times the weights
    space = RandomFourierFeatures(as_store(Xte, yte), n_components=300, sigma=p["sigma"],
                                  seed=0, n_inputs=model.feature_space["n_inputs"])
    Z = space.operator().columns(np.arange(300))
    coef = np.zeros(300)
    coef[model.features] = model.coef
    expected = Z @ coef + model.intercept
    np.testing.assert_allclose(model.decision_function_store(as_store(Xte, yte)), expected,
                               rtol=1e-12, atol=1e-12)
    path = tmp_path / "m.json"
    model.save(path)
    # the basis is recorded by its seed and σ, never by Ω or b
    assert set(json.loads(path.read_text())["feature_space"]) == {
        "kind", "n_components", "sigma", "seed", "n_inputs"}
    again = Model.load(path)
    np.testing.assert_array_equal(again.decision_function_store(as_store(Xte, yte)),
                                  model.decision_function_store(as_store(Xte, yte)))
    assert model.evaluate_store(as_store(Xte, yte))["accuracy"] > 0.85


@pytest.mark.parametrize("solver", ["fista", "mfista", "cgd", "sgd"])
def test_same_model_for_any_tiling_and_cache(moons, solver):
    Xtr, ytr, _, _ = moons
    a = select_sklr(Xtr, ytr, n_components=256, solver=solver, lambda_ratio=0.1)
    b = select_sklr(Xtr, ytr, n_components=256, solver=solver, lambda_ratio=0.1,
                    row_chunk=7, cache_bytes=0)
    assert a.features == b.features
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.intercept == b.intercept


def test_rbf_model_keeps_its_support_points(moons, tmp_path):
    Xtr, ytr, Xte, yte = moons
    model = select_sklr(Xtr, ytr, basis="rbf", solver="mfista", lambda_ratio=0.1,
                        two_stage=0.1)
    rows = model.params["support_rows"]
    assert len(rows) == len(model.features) and model.params["stage1"]["nnz"] >= len(rows)
    sigma = model.params["sigma"]
    K = np.exp(-((Xte[:, None, :] - Xtr[None, rows, :]) ** 2).sum(-1) / sigma ** 2)
    np.testing.assert_allclose(model.decision_function_store(as_store(Xte, yte)),
                               K @ model.coef + model.intercept, rtol=1e-10, atol=1e-10)
    path = tmp_path / "rbf.json"
    model.save(path)
    assert Model.load(path).features == model.features


def test_estimator_matches_the_model(moons):
    Xtr, ytr, Xte, yte = moons
    est = SparseKernelLogisticRegression(n_components=200, lambda_ratio=0.05).fit(Xtr, ytr)
    decision = est.model_.decision_function_store(as_store(Xte, yte))
    np.testing.assert_array_equal(est.decision_function(Xte), decision)
    assert est.coef_.shape == (1, 200)
    assert set(np.flatnonzero(est.coef_[0])) == set(est.support_.tolist())
    assert est.score(Xte, yte) > 0.85
    assert 0 < est.duality_gap_ <= 1e-6
    # basis functions mix every input: no selector of input columns
    for name in ("get_support", "transform", "fit_transform", "inverse_transform",
                 "get_feature_names_out"):
        assert not hasattr(est, name)
        assert not hasattr(SparseKernelLogisticRegression(), name)
    assert SparseKernelLogisticRegression().__sklearn_tags__().transformer_tags is None
    assert SparseKernelLogisticRegression().get_params()["random_state"] == 0


def test_bad_parameters_are_one_line(moons):
    Xtr, ytr, _, _ = moons
    for kwargs, text in (
            ({"solver": "newton"}, "solver must be one of 'fista', 'mfista', 'cgd', 'sgd'"),
            ({"lambda_ratio": 1.5}, "lambda_ratio must be a number > 0 and <= 1, got 1.5"),
            ({"lambda_ratio": 0}, "lambda_ratio must be a number > 0 and <= 1, got 0"),
            ({"lam": -1.0}, "lam must be a number > 0, got -1.0"),
            ({"basis": "poly"}, "basis must be one of 'rff', 'rbf'"),
            ({"solver": "sgd", "two_stage": 0.1}, "two_stage runs with solver fista"),
            ({"two_stage": 2.0}, "two_stage must be a number > 0 and <= 1"),
            ({"solver": "cgd", "mfista_scaling": "min"},
             "mfista_scaling applies to solver mfista"),
            ({"basis": "rbf", "n_components": 9}, "it applies to basis rff"),
            ({"seed": -1}, "seed must be an integer >= 0"),
            ({"lam_ratio": 0.2},
             "lam_ratio was renamed: use lambda_ratio (--lambda-ratio)"),
            ({"scaling": "min"}, "scaling was renamed: use mfista_scaling"),
            ({"scheduler": "threads"}, "scheduler does not apply to sparse kernel LR")):
        with pytest.raises(ParameterError) as info:
            select_sklr(Xtr, ytr, **{"n_components": 50, **kwargs})
        assert text in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ParameterError, match="sparse kernel logistic regression needs two "
                                             "classes; the data has 3"):
        select_sklr(Xtr, np.arange(len(Xtr)) % 3)


def test_the_old_keywords_are_refused_with_the_new_name(moons):
    """The keywords issue 36 renamed are refused in one line naming the new one."""
    Xtr, ytr, _, _ = moons
    for old, new in (("lam_ratio", "lambda_ratio"), ("scaling", "mfista_scaling")):
        with pytest.raises(ParameterError, match=f"{old} was renamed: use {new}"):
            select_sklr(Xtr, ytr, n_components=64, **{old: 0.2})


def test_lam_overrides_the_ratio(moons):
    Xtr, ytr, _, _ = moons
    model = select_sklr(Xtr, ytr, n_components=64, lam=0.5, lambda_ratio=0.9)
    p = model.params
    assert p["lam"] == 0.5 and p["lambda_ratio"] == pytest.approx(0.5 / p["lam_max"])


def test_sklr_defaults_are_the_engine_defaults():
    """SKLR's Params and fit_sklr agree on every shared default."""
    import inspect

    from ultrafs.methods.params import specs_of
    from ultrafs.methods.sklr import fit_sklr
    from ultrafs.methods.sklr_method import SKLRParams

    # the engine keeps the names the vocabulary replaced (Spec.old)
    renamed = {old: new for new, (_, spec) in specs_of(SKLRParams).items()
               for old in spec.old if not old.startswith("--")}
    engine = {renamed.get(n, n): p.default
              for n, p in inspect.signature(fit_sklr).parameters.items()}
    defaults = {name: default for name, (default, _) in specs_of(SKLRParams).items()}
    shared = [name for name in defaults if name in engine]
    assert set(shared) >= {"solver", "lambda_ratio", "lam", "two_stage", "fit_intercept",
                           "tol", "max_iter", "mfista_scaling", "seed"}
    for name in shared:
        assert engine[name] == defaults[name], name


def test_the_solvers_are_the_registry_s():
    from ultrafs.methods.sklr_method import SOLVERS
    from ultrafs.solvers.l1_solvers import L1_SOLVERS

    assert tuple(SOLVERS) == tuple(L1_SOLVERS)


def test_summary_lines_and_estimator_attributes(moons):
    from ultrafs.methods.sklr_method import estimator_attributes, summary_lines

    Xtr, ytr, _, _ = moons
    store = as_store(Xtr, ytr)
    for basis, options in (("rff", {"n_components": 120}), ("rbf", {"two_stage": 0.1})):
        est = SparseKernelLogisticRegression(basis=basis, lambda_ratio=0.05, **options)
        est.fit(Xtr, ytr)
        attributes = estimator_attributes(est.model_, 0)
        np.testing.assert_array_equal(attributes["_coef"], est.coef_)
        for name in ("support_", "sigma_", "lam_", "lam_max_", "duality_gap_",
                     "n_iter_"):
            np.testing.assert_array_equal(attributes[name], getattr(est, name))
        lines = dict(summary_lines(est.model_, store))
        p = est.model_.params
        assert lines["nonzero weights"].startswith(f"{p['nnz']} (")
        assert (("random Fourier features" in lines["basis"]) == (basis == "rff"))
        assert lines["λ"].startswith(f"{p['lam']:.6g} = 0.05 λ_max")
        assert ("stage 2 on the support" in lines["λ"]) == (basis == "rbf")
        assert lines["solver"].startswith("cgd: ")
        assert "certified at 1e-06" in lines["solver"]


@pytest.fixture(scope="module")
def moons_files(tmp_path_factory, moons):
    from sklearn.datasets import dump_svmlight_file

    Xtr, ytr, Xte, yte = moons
    folder = tmp_path_factory.mktemp("moons")
    dump_svmlight_file(Xtr, 2 * ytr - 1, str(folder / "tr.svm"), zero_based=False)
    dump_svmlight_file(Xte, 2 * yte - 1, str(folder / "te.svm"), zero_based=False)
    return folder


def test_cli_select_sklr(moons_files, monkeypatch, tmp_path):
    monkeypatch.setenv("ULTRAFS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "m.json"
    runner = CliRunner()
    result = runner.invoke(main, ["select", "--method", "sklr", "--data",
                                  str(moons_files / "tr.svm"), "--test",
                                  str(moons_files / "te.svm"), "--n-components", "200",
                                  "--solver", "mfista", "--lambda-ratio", "0.05",
                                  "--out", str(out)])
    assert result.exit_code == 0, result.output
    model = json.loads(out.read_text())
    assert model["params"]["method"] == "sklr" and model["params"]["solver"] == "mfista"
    assert model["feature_space"]["n_components"] == 200
    assert model["params"]["lambda_ratio"] == pytest.approx(0.05)
    for args, text in ((["--B", "5"], "--B applies to --method fgm or mslr, not --method "
                        "sklr"),
                       (["--basis", "rbf", "--n-components", "9"], "--basis rff"),
                       (["--solver", "sgd", "--two-stage", "0.1"], "--two-stage runs"),
                       (["--solver", "cgd", "--mfista-scaling", "min"],
                        "--mfista-scaling applies to --solver mfista"),
                       (["--lam-ratio", "0.2"], "--lam-ratio was renamed: use "
                        "--lambda-ratio"),
                       (["--lambda", "0"], "'--lambda'"),
                       (["--scheduler", "synchronous"], "--scheduler applies to")):
        bad = runner.invoke(main, ["select", "--method", "sklr", "--data",
                                   str(moons_files / "tr.svm"), "--out",
                                   str(tmp_path / "x.json"), *args])
        assert bad.exit_code in (1, 2) and text in bad.output, bad.output
    bad = runner.invoke(main, ["select", "--data", str(moons_files / "tr.svm"),
                               "--solver", "cgd"])
    assert bad.exit_code == 2 and "--solver applies to --method sklr" in bad.output
    assert not (tmp_path / "x.json").exists()
