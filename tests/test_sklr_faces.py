"""The faces of sparse kernel logistic regression (seed 001): API, CLI, estimator, model files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import make_moons

from ultrafs.api import select_sklr
from ultrafs.cli import main
from ultrafs.errors import ParameterError
from ultrafs.features.rff import RandomFourierFeatures
from ultrafs.model import Model
from ultrafs.sklr_estimator import SparseKernelLogisticRegression
from ultrafs.store import as_store


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(600, noise=0.25, random_state=0)
    X = np.column_stack([X, np.zeros(len(X))])          # an empty column
    X[5] = 0.0                                         # a zero row
    return X[:400], y[:400], X[400:], y[400:]


def test_rff_model_predicts_through_the_regenerated_basis(moons, tmp_path):
    Xtr, ytr, Xte, yte = moons
    model = select_sklr(Xtr, ytr, n_components=300, solver="cgd", lam_ratio=0.05)
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
    a = select_sklr(Xtr, ytr, n_components=256, solver=solver, lam_ratio=0.1)
    b = select_sklr(Xtr, ytr, n_components=256, solver=solver, lam_ratio=0.1,
                    row_chunk=7, cache_bytes=0)
    assert a.features == b.features
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.intercept == b.intercept


def test_rbf_model_keeps_its_support_points(moons, tmp_path):
    Xtr, ytr, Xte, yte = moons
    model = select_sklr(Xtr, ytr, basis="rbf", solver="mfista", lam_ratio=0.1,
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
    est = SparseKernelLogisticRegression(n_components=200, lam_ratio=0.05).fit(Xtr, ytr)
    decision = est.model_.decision_function_store(as_store(Xte, yte))
    np.testing.assert_array_equal(est.decision_function(Xte), decision)
    assert est.coef_.shape == (1, 200)
    assert set(np.flatnonzero(est.coef_[0])) == set(est.support_.tolist())
    assert est.score(Xte, yte) > 0.85
    assert 0 < est.duality_gap_ <= 1e-6


def test_bad_parameters_are_one_line(moons):
    Xtr, ytr, _, _ = moons
    for kwargs, text in (({"solver": "newton"}, "unknown solver"),
                         ({"lam_ratio": 1.5}, "lam_ratio"),
                         ({"basis": "poly"}, "basis"),
                         ({"solver": "sgd", "two_stage": 0.1}, "two-stage"),
                         ({"solver": "cgd", "scaling": "min"}, "mfista")):
        with pytest.raises(ParameterError) as info:
            select_sklr(Xtr, ytr, n_components=50, **kwargs)
        assert text in str(info.value) and "\n" not in str(info.value)


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
                                  "--solver", "mfista", "--lam-ratio", "0.05",
                                  "--out", str(out)])
    assert result.exit_code == 0, result.output
    model = json.loads(out.read_text())
    assert model["params"]["method"] == "sklr" and model["params"]["solver"] == "mfista"
    assert model["feature_space"]["n_components"] == 200
    for args, text in ((["--B", "5"], "--B does not apply to --method sklr"),
                       (["--basis", "rbf", "--n-components", "9"], "--basis rff"),
                       (["--solver", "sgd", "--two-stage", "0.1"], "--two-stage"),
                       (["--solver", "cgd", "--mfista-scaling", "min"], "mfista")):
        bad = runner.invoke(main, ["select", "--method", "sklr", "--data",
                                   str(moons_files / "tr.svm"), "--out",
                                   str(tmp_path / "x.json"), *args])
        assert bad.exit_code == 2 and text in bad.output
    bad = runner.invoke(main, ["select", "--data", str(moons_files / "tr.svm"),
                               "--solver", "cgd"])
    assert bad.exit_code == 2 and "--solver applies to --method sklr" in bad.output
    assert not (tmp_path / "x.json").exists()
