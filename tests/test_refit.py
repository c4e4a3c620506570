"""The ℓ2 refit on the selected columns (issue 8, item 4)."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.special import softmax

from ultrafs import FGMClassifier
from ultrafs.api import select
from ultrafs.cli import main
from ultrafs.datasets.planted import make_planted_multiclass, make_planted_problem
from ultrafs.errors import InputFormatError, ParameterError
from ultrafs.model import Model
from ultrafs.store import InMemoryStore
from ultrafs.store.writers.zarr_writer import write_store


@pytest.fixture(scope="module")
def binary():
    return make_planted_problem(500, 200, 20, n_test=500, seed=1)


def test_binary_refit_is_scikit_learns_l2_logistic_regression(binary):
    from sklearn.linear_model import LogisticRegression

    model = select(InMemoryStore(binary.X_train, binary.y_train), B=5, max_iter=3,
                   refit=True, refit_C=1.0, inner_kkt_tol=1e-7)
    assert model.predictor == "refit" and model.refit["C"] == 1.0
    columns = np.asarray(model.features)
    X = binary.X_train[:, columns].astype(np.float64)   # float32 would fit in float32
    ref = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(X, binary.y_train)
    np.testing.assert_allclose(model.refit["coef"], ref.coef_.ravel(), atol=1e-5)
    assert model.refit["intercept"] == pytest.approx(ref.intercept_[0], abs=1e-5)
    test = InMemoryStore(binary.X_test, binary.y_test)
    np.testing.assert_allclose(model.decision_function_store(test),
                               ref.decision_function(
                                   binary.X_test[:, columns].astype(np.float64)),
                               atol=1e-4)
    # FGM's own weights are kept, and a truncated model predicts with them
    assert not np.allclose(model.coef, model.refit["coef"])
    assert model.truncated(1).predictor == "selection"


def test_multiclass_refit_is_scikit_learns_multinomial_model():
    from sklearn.linear_model import LogisticRegression

    p = make_planted_multiclass(400, 60, 6, 3, n_test=200, seed=2)
    model = select(InMemoryStore(p.X_train, p.y_train), B=3, max_iter=2, refit=True,
                   refit_C=0.5, inner_kkt_tol=1e-7)
    columns = np.asarray(model.features)
    X_train = p.X_train[:, columns].astype(np.float64)
    X_test = p.X_test[:, columns].astype(np.float64)
    ref = LogisticRegression(C=0.5, tol=1e-12, max_iter=10000).fit(X_train, p.y_train)
    ours = softmax(X_test @ model.refit["coef"] + model.refit["intercept"], axis=1)
    np.testing.assert_allclose(ours, ref.predict_proba(X_test), atol=1e-5)


def test_model_files_keep_both_and_refuse_forged_refits(binary, tmp_path):
    model = select(InMemoryStore(binary.X_train, binary.y_train), B=5, max_iter=2,
                   refit=True)
    model.save(tmp_path / "m.json")
    obj = json.loads((tmp_path / "m.json").read_text())
    assert obj["predictor"] == "refit" and len(obj["refit"]["coef"]) == len(obj["coef"])
    loaded = Model.load(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.refit["coef"], model.refit["coef"])
    for change in ({"predictor": "other"},
                   {"refit": {**obj["refit"], "coef": obj["refit"]["coef"][:-1]}},
                   {"refit": {**obj["refit"], "C": -1.0}},
                   {"refit": None}):
        forged = {**obj, **change}
        with pytest.raises(InputFormatError):
            Model.from_dict(forged)
    plain = {**obj, "predictor": "selection"}
    plain.pop("refit")
    assert Model.from_dict(plain).refit is None


def test_estimator_and_cli(binary, tmp_path):
    clf = FGMClassifier(B=5, max_iter=2, refit=True).fit(binary.X_train, binary.y_train)
    assert clf.selected_coef_.shape == clf.selection_coef_.shape
    assert not np.allclose(clf.selected_coef_, clf.selection_coef_)
    np.testing.assert_allclose(
        clf.decision_function(binary.X_test),
        clf.model_.decision_function_store(InMemoryStore(binary.X_test, binary.y_test)),
        atol=1e-10)
    with pytest.raises(ParameterError, match="refit_C"):
        select(InMemoryStore(binary.X_train, binary.y_train), B=2, max_iter=1,
               refit=True, refit_C=0.0)
    write_store(tmp_path / "train.zarr", binary.X_train, binary.y_train)
    result = CliRunner().invoke(main, ["select", "--data", str(tmp_path / "train.zarr"),
                                       "--B", "5", "--max-iter", "2", "--refit",
                                       "--refit-C", "2", "--no-progress"])
    assert result.exit_code == 0, result.output
    model = json.loads(result.output)
    assert model["predictor"] == "refit" and model["refit"]["C"] == 2.0
