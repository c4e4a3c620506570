"""Multi-class FGM end to end: loop, estimator, stores, model files, CLI."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from ultrafs import FGMClassifier
from ultrafs.api import select
from ultrafs.cli import main
from ultrafs.datasets.planted import make_planted_multiclass
from ultrafs.errors import InputFormatError, ParameterError
from ultrafs.features.linear import LinearFeatures
from ultrafs.methods.fgm import fit_fgm
from ultrafs.model import Model
from ultrafs.solvers.datafits import make_datafit
from ultrafs.solvers.penalties import L21Squared
from ultrafs.store import InMemoryStore, open_store
from ultrafs.store.writers.zarr_writer import write_store


@pytest.fixture(scope="module")
def problem():
    return make_planted_multiclass(600, 120, 12, 4, n_test=600, noise=0.3, seed=3)


def _fit(problem, **kwargs):
    store = InMemoryStore(problem.X_train, problem.y_train,
                          block_size=kwargs.pop("block_size", None))
    params = dict(B=4, C=10.0, max_iter=5, tol=0.0)
    params.update(kwargs)
    return fit_fgm(LinearFeatures(store), store.read_class_indices(), n_classes=4,
                   **params), store


@pytest.mark.parametrize("loss", ["logistic", "squared-hinge"])
def test_loop_recovers_planted_features_and_decreases_the_objective(problem, loss):
    result, _ = _fit(problem, loss=loss)
    assert result.coef.shape == (len(result.keys) * 4,)
    assert np.shape(result.bias) == (4,)
    objectives = [h["objective"] for h in result.history]
    assert all(b < a for a, b in zip(objectives, objectives[1:]))
    found = set(result.keys.tolist()) & set(problem.relevant.tolist())
    assert len(found) >= 10


def test_last_subproblem_meets_its_kkt_conditions(problem):
    result, store = _fit(problem, inner_tol=1e-12, inner_max_iter=20000)
    X = store.read_columns(result.keys)
    y = store.read_class_indices()
    datafit = make_datafit(X.indptr, X.indices, X.values(np.float64), y, 10.0,
                           n_classes=4)
    d = np.empty(datafit.decision_size)
    datafit.value_derivative(datafit.decision(result.coef, result.bias), d)
    grad = datafit.gradient(d)
    scale = max(1.0, np.linalg.norm(grad))
    assert np.max(L21Squared().subdiff_distance(result.coef, grad,
                                                result.batch_ptr * 4)) / scale < 1e-4
    assert np.max(np.abs(datafit.bias_gradient(d))) / scale < 1e-4


@pytest.mark.parametrize("block_size, scheduler", [(1, "synchronous"), (7, "threads"),
                                                   (None, "processes")])
def test_selection_does_not_depend_on_blocks_or_scheduler(problem, block_size, scheduler):
    ref, _ = _fit(problem)
    got, _ = _fit(problem, block_size=block_size, scheduler=scheduler)
    np.testing.assert_array_equal(got.keys, ref.keys)
    np.testing.assert_array_equal(got.coef, ref.coef)
    np.testing.assert_array_equal(got.bias, ref.bias)


def test_estimator_with_string_classes(problem):
    names = np.array(["ant", "bee", "cat", "dog"])
    y = names[problem.y_train.astype(int)]
    clf = FGMClassifier(B=4, max_iter=4).fit(problem.X_train, y)
    assert list(clf.classes_) == list(names)
    assert clf.selected_coef_.shape == (16, 4) and clf.intercept_.shape == (4,)
    assert clf.coef_.shape == (4, problem.X_train.shape[1])    # scikit-learn's shape
    np.testing.assert_array_equal(clf.coef_[:, clf.selected_features_],
                                  clf.selected_coef_.T)
    proba = clf.predict_proba(problem.X_test)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.decision_function(problem.X_test).shape == (600, 4)
    assert set(clf.predict(problem.X_test)) <= set(names)
    assert clf.score(problem.X_test, names[problem.y_test.astype(int)]) > 0.8
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(problem.X_test[:5])),
                               proba[:5])
    hinge = FGMClassifier(B=4, max_iter=2, loss="squared-hinge").fit(problem.X_train, y)
    assert not hasattr(hinge, "predict_proba")


def test_model_file_round_trip_and_store_prediction(problem, tmp_path):
    classes = np.array([-1.0, 2.0, 7.0, 9.0])
    y = classes[problem.y_train.astype(int)]
    write_store(tmp_path / "train.zarr", problem.X_train, y)
    write_store(tmp_path / "test.zarr", problem.X_test,
                classes[problem.y_test.astype(int)])
    train = open_store(tmp_path / "train.zarr")
    assert train.target_type == "multiclass"
    model = select(train, B=4, max_iter=3)
    assert model.target == "multiclass" and model.classes == list(classes)
    model.save(tmp_path / "model.json")
    saved = json.loads((tmp_path / "model.json").read_text())
    assert saved["format_version"] == 3 and len(saved["coef"][0]) == 4
    loaded = Model.load(tmp_path / "model.json")
    np.testing.assert_array_equal(loaded.coef, model.coef)
    np.testing.assert_array_equal(loaded.intercept, model.intercept)
    test = open_store(tmp_path / "test.zarr")
    decision = loaded.decision_function_store(test)
    assert decision.shape == (600, 4)
    metrics = loaded.evaluate_store(test)
    assert metrics["accuracy"] > 0.8 and 0.5 < metrics["auc"] <= 1.0
    assert metrics["log_loss"] > 0


def test_version_1_model_files_still_load():
    v1 = {"format": "ultrafs-model", "format_version": 1, "features": [3, 5],
          "coef": [0.5, -1.0], "intercept": 0.25, "groups": [0, 2],
          "loss": "logistic", "classes": [-1.0, 1.0],
          "feature_space": {"kind": "linear"}}
    model = Model.from_dict(v1)
    assert model.target == "binary" and model.batches == [0, 2]
    assert model.to_dict()["format_version"] == 3


@pytest.mark.parametrize("change", [
    {"coef": [[1.0, 2.0], [3.0, 4.0]]},            # K = 3 classes, 2 columns
    {"intercept": 0.5},                            # one intercept for 3 classes
    {"classes": [1.0, 2.0]},                       # multiclass with 2 classes
    {"target": "continuous"},
    {"batches": [0, 1]},
    {"format_version": 4},
])
def test_forged_multiclass_model_files_are_refused(change):
    good = {"format": "ultrafs-model", "format_version": 2, "target": "multiclass",
            "features": [3, 5], "coef": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
            "intercept": [0.1, 0.2, 0.3], "batches": [0, 2], "loss": "logistic",
            "classes": [1.0, 2.0, 3.0]}
    Model.from_dict(good)
    with pytest.raises(InputFormatError):
        Model.from_dict({**good, **change})


def test_continuous_targets_are_a_one_line_error(problem, tmp_path):
    write_store(tmp_path / "reg.zarr", problem.X_train[:, :5],
                problem.X_train[:, 0].astype(np.float64))
    with pytest.raises(ParameterError, match="continuous"):
        select(open_store(tmp_path / "reg.zarr"), B=2, max_iter=1)


def test_checkpoint_resume_is_identical(problem, tmp_path):
    store = InMemoryStore(problem.X_train, problem.y_train)
    full = select(store, B=3, max_iter=4, tol=0.0)
    select(store, B=3, max_iter=2, tol=0.0, checkpoint=tmp_path / "ck")
    resumed = select(store, B=3, max_iter=4, tol=0.0, checkpoint=tmp_path / "ck",
                     resume=True)
    assert resumed.features == full.features
    np.testing.assert_array_equal(resumed.coef, full.coef)
    np.testing.assert_array_equal(resumed.intercept, full.intercept)


def test_cli_multiclass_end_to_end(tmp_path):
    rng = np.random.default_rng(0)
    lines = []
    for i in range(90):
        label = i % 3 + 1
        feats = {label: 1.0, 4 + (i % 5): float(rng.random())}
        lines.append(f"{label} " + " ".join(f"{j}:{v:.3f}" for j, v in sorted(feats.items())))
    (tmp_path / "mc.svm").write_text("\n".join(lines) + "\n")
    runner = CliRunner()

    def run(*args):
        result = runner.invoke(main, [str(a) for a in args])
        assert result.exit_code == 0, result.output
        return result.output

    run("ingest", tmp_path / "mc.svm", tmp_path / "mc.zarr")
    run("select", "--data", tmp_path / "mc.zarr", "--B", 2, "--max-iter", 2,
        "--out", tmp_path / "model.json", "--no-progress")
    model = json.loads((tmp_path / "model.json").read_text())
    assert model["target"] == "multiclass" and model["classes"] == [1.0, 2.0, 3.0]
    assert set(model["features"][:3]) <= {1, 2, 3}
    metrics = json.loads(run("evaluate", "--model", tmp_path / "model.json",
                             "--data", tmp_path / "mc.zarr"))
    assert metrics["accuracy"] == 1.0
    tsv = run("predict", "--model", tmp_path / "model.json", "--data",
              tmp_path / "mc.zarr").splitlines()
    assert tsv[0].split("\t") == ["row", "predicted", "decision_1", "decision_2",
                                  "decision_3", "probability_1", "probability_2",
                                  "probability_3"]
    assert [float(r.split("\t")[1]) for r in tsv[1:4]] == [1.0, 2.0, 3.0]
    assert [int(r.split("\t")[0]) for r in tsv[1:4]] == [0, 1, 2]
    bad = runner.invoke(main, ["ingest", str(tmp_path / "mc.svm"),
                               str(tmp_path / "bin.zarr"), "--target", "binary"])
    assert bad.exit_code == 1 and "two" in bad.output
    assert not (tmp_path / "bin.zarr").exists()
