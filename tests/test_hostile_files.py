"""Hostile and careless model files, checkpoints and label conventions (issue 9).

Table-driven: every case forges one file from a genuine one and runs the
CLI on it, asserting a non-zero exit, exactly one line on stderr naming
the problem and the user's path, no traceback and no partial output.  Then
API-level checks with real numbers: labels matched by class value, a
forged finished checkpoint solved again rather than trusted, and a
checkpoint refused for a re-ingested file with shuffled rows.
"""

import copy
import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from ultrafs.api import select
from ultrafs.cli import main
from ultrafs.errors import InputFormatError
from ultrafs.methods.checkpoint import (CheckpointMismatchError, content_digest,
                                        store_fingerprint)
from ultrafs.model import MAX_MODEL_BYTES, Model
from ultrafs.store import open_store
from ultrafs.store.memory import InMemoryStore
from ultrafs.store.writers.zarr_writer import write_store

N_SAMPLES, N_FEATURES = 240, 40
SELECT = ["--B", "5", "--tol", "0", "--C", "1.0"]


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N_SAMPLES, N_FEATURES))
    X[rng.random(X.shape) < 0.5] = 0.0
    score = X[:, 0] - X[:, 1] + 0.5 * X[:, 2] + 0.3 * rng.standard_normal(N_SAMPLES)
    return X, score


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Stores ({0, 1}, {-1, +1}, shuffled rows, 3 classes), a model, a checkpoint."""
    root = tmp_path_factory.mktemp("hostile")
    X, score = _problem()
    y01 = (score > 0).astype(int)
    paths = {"root": root}
    paths["train"] = root / "train.zarr"
    write_store(paths["train"], X, y01)
    paths["pm"] = root / "pm.zarr"
    write_store(paths["pm"], X, 2 * y01 - 1)
    perm = np.random.default_rng(1).permutation(N_SAMPLES)
    paths["shuffled"] = root / "shuffled.zarr"
    write_store(paths["shuffled"], X[perm], y01[perm])
    y3 = np.digitize(score, [-0.5, 0.5])
    paths["multi"] = root / "multi.zarr"
    write_store(paths["multi"], X, y3)
    paths["model"] = root / "model.json"
    select(str(paths["train"]), B=5, max_iter=2, tol=0.0, C=1.0).save(paths["model"])
    paths["multi_model"] = root / "multi_model.json"
    select(str(paths["multi"]), B=5, max_iter=2, tol=0.0, C=1.0).save(
        paths["multi_model"])
    paths["ckpt"] = root / "ckpt"
    select(str(paths["train"]), B=5, max_iter=2, tol=0.0, C=1.0,
           checkpoint=paths["ckpt"])
    return paths


def run_cli(args):
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="ultrafs")


def assert_one_line_failure(result, path, fragments):
    """Exit 1, one stderr line naming the problem and ``path``, no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, (AssertionError, TypeError, KeyError,
                                             AttributeError, IndexError,
                                             RecursionError))
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("Error: "), line
    assert str(path) in line, line
    for fragment in fragments:
        assert fragment in line, line
    assert "np.float64" not in line and "np.int64" not in line, line


def assert_no_output_left(directory, before):
    """Nothing new in ``directory`` (no output, no temporary file)."""
    assert set(os.listdir(directory)) == before


# ------------------------------------------------------------- model files
def _set(key, value):
    def forge(model):
        model[key] = value
    return forge


def _set_in(outer, key, value):
    def forge(model):
        model[outer][key] = value
    return forge


def _nested(depth):
    def forge(model):
        model["features"] = json.loads("[" * depth + "1" + "]" * depth)
    return forge


def _raw(text):
    def forge(model):
        return text if isinstance(text, bytes) else text.encode()
    return forge


def _deep_json(depth):
    return _raw('{"format": "ultrafs-model", "format_version": 2, "features": '
                + "[" * depth + "]" * depth + "}")


def _poly(features):
    def forge(model):
        model["feature_space"] = {"kind": "poly2", "gamma": 1.0, "coef0": 1.0}
        model["features"] = features + model["features"][len(features):]
    return forge


def _space(spec, features):
    def forge(model):
        model["feature_space"] = spec
        model["features"] = features + model["features"][len(features):]
    return forge


def _forge_refit(model):
    model["predictor"] = "refit"
    model["refit"] = {"coef": model["coef"][:-1], "intercept": 0.0, "C": 1.0}


def _multiclass_classes(model):
    model["target"] = "multiclass"
    model["classes"] = [0.0, 1.0, 2.0]
    model["intercept"] = [0.0, 0.0, 0.0]


def _coef_too_short(model):
    model["coef"] = model["coef"][:-1]


def _coef_huge_int(model):
    model["coef"][0] = 10**400


def _history_text(model):
    model["history"][0]["objective"] = "low"


def _duplicate_feature(model):
    model["features"][1] = model["features"][0]


def _batches_short(model):
    model["batches"] = model["batches"][:-1]


def _classes_nan(model):
    model["classes"] = [float("nan"), 1.0]
    return json.dumps(model).encode()     # NaN literal, as Python writes it


def _coef_inf(model):
    model["coef"][0] = float("inf")
    return json.dumps(model).encode()


def _continuous_matrix(model):
    model["target"], model["classes"] = "continuous", []
    model["coef"] = [[c, c] for c in model["coef"]]


MODEL_CASES = [
    # name, forge (mutates the dict, or returns the file's bytes), fragments
    ("features null", _set("features", [None] * 10), ["features[0] must be an integer"]),
    ("features string", _set("features", ["abc"] * 10), ["features[0]", '"abc"']),
    ("features 2**70", _set("features", [2**70] * 10), ["features[0]", "in 0.."]),
    ("features bool", _set("features", [True] * 10), ["features[0]", "true"]),
    ("features negative", _set("features", list(range(-1, 9))), ["features[0]", "-1"]),
    ("features repeated", _duplicate_feature, ["appears twice"]),
    ("features nested", _nested(50), ["features[0] must be an integer", "[[[["]),
    ("features not a list", _set("features", 7), ["features must be a list"]),
    ("degree-2 id not a pair", _poly([[1, 2, 3]]), ["features[0]", "pair [j, k]"]),
    ("degree-2 id of strings", _poly([["a", "b"]]), ["features[0]", '"a"']),
    ("feature space unknown", _set("feature_space", {"kind": "sigmoid"}),
     ["unknown feature space kind", "sigmoid"]),
    ("feature space gamma text", _set("feature_space", {"kind": "poly2", "gamma": "x",
                                                        "coef0": 1.0}),
     ["feature_space gamma must be a finite number"]),
    ("rff sigma negative", _space({"kind": "rff", "n_components": 100, "sigma": -1.0,
                                   "seed": 0, "n_inputs": 50}, list(range(10))),
     ["feature_space sigma must be a finite number > 0", "-1.0"]),
    ("rff id beyond its features", _space({"kind": "rff", "n_components": 5, "sigma": 1.0,
                                           "seed": 0, "n_inputs": 50}, list(range(10))),
     ["features[5] must be a column in 0..4 (5 random features)"]),
    ("rff n_inputs huge", _space({"kind": "rff", "n_components": 100, "sigma": 1.0,
                                  "seed": 0, "n_inputs": 10**9}, list(range(10))),
     ["feature_space n_inputs must be an integer in 1..131072"]),
    ("rbf points lengths", _space({"kind": "rbf", "sigma": 1.0, "points": {
        "n_inputs": 3, "rows": [0], "indptr": [0, 5], "indices": [0], "data": [1.0]}},
        [0]), ["feature_space points indptr, indices and data disagree in length"]),
    ("group id not a pair", _space({"kind": "groups"}, [3]),
     ["features[0] must be a pair [group id, feature id]"]),
    ("group id negative", _space({"kind": "groups"}, [[-4, 1]]),
     ["features[0]", "each part must be an integer >= 0"]),
    ("group pair repeated", _space({"kind": "groups"}, [[1, 2]] * 10), ["appears twice"]),
    ("tree ids of strings", _space({"kind": "tree"}, [["a", 1]]), ["features[0]", '"a"']),
    ("hik level 0", _space({"kind": "hik", "q": 100, "scales": [[1, 1.0]]}, [[1, 0]]),
     ["features[0]", "l >= 1"]),
    ("hik level 101", _space({"kind": "hik", "q": 100, "scales": [[1, 1.0]]},
                             [[1, 101]] + [[j, 1] for j in range(2, 11)]),
     ["features[0]", "l in 1..100"]),
    ("hik q 0", _space({"kind": "hik", "q": 0, "scales": []}, [[1, 1]]),
     ["feature_space q must be an integer in 1..10000"]),
    ("chi2 level 12", _space({"kind": "chi2", "n": 5, "period": 0.315},
                             [[1, 12]] + [[j, 1] for j in range(2, 11)]),
     ["features[0]", "l in 1..11"]),
    ("hik scales text", _space({"kind": "hik", "q": 100, "scales": "x"}, [[1, 1]]),
     ["feature_space scales must be a list of [feature id, scale] pairs"]),
    ("hik scale NaN", _raw('{"format": "ultrafs-model", "format_version": 2, '
                           '"features": [[1, 1]], "coef": [1.0], "classes": [0, 1], '
                           '"intercept": 0.0, "loss": "logistic", "feature_space": '
                           '{"kind": "hik", "q": 100, "scales": [[1, NaN]]}}'),
     ["feature_space scales must be a list of [feature id, scale >= 0] pairs"]),
    ("hik without scales", _space({"kind": "hik", "q": 100}, [[1, 1]]),
     ["feature space 'hik' lacks its parameter 'scales'"]),
    ("history non-numeric", _history_text, ["history[0] objective must be a number"]),
    ("history not a list", _set("history", "none"), ["history must be a list"]),
    ("classes NaN", _classes_nan, ["classes[0] must be a finite number", "NaN"]),
    ("classes repeated", _set("classes", [1.0, 1.0]), ["distinct and increasing"]),
    ("classes reversed", _set("classes", [1.0, 0.0]), ["distinct and increasing"]),
    ("classes three for binary", _set("classes", [0.0, 1.0, 2.0]),
     ["a binary model has 2 classes"]),
    ("classes bool", _set("classes", [False, True]), ["classes[0]", "false"]),
    ("classes vs coef shape", _multiclass_classes, ["coef must hold 10 x 3 numbers"]),
    ("coef shorter than features", _coef_too_short, ["coef must hold 10 numbers",
                                                     "got 9"]),
    ("coef string", _set("coef", ["x"] * 10), ["coef must hold numbers only"]),
    ("coef infinite", _coef_inf, ["coef holds a value that is not finite"]),
    ("coef huge int", _coef_huge_int, ["not finite"]),
    ("intercept string", _set("intercept", "0.5"), ["intercept must be a finite number"]),
    ("intercept list for binary", _set("intercept", [0.5]), ["intercept"]),
    ("loss not a name", _set("loss", "../logistic"), ["loss must be a loss name",
                                                      "logistic"]),
    ("loss not a string", _set("loss", 3), ["loss must be a loss name"]),
    ("batches negative", _set("batches", [0, -1, 10]), ["batches[1]", "-1"]),
    ("batches huge", _set("batches", [0, 2**64, 10]), ["batches[1]"]),
    ("batches not to the end", _batches_short, ["batches must rise from 0"]),
    ("refit short", _forge_refit, ["refit coef must hold 10 numbers"]),
    ("predictor unknown", _set("predictor", "best"), ["unknown predictor"]),
    ("params id_offset", _set_in("params", "id_offset", 7), ["params id_offset"]),
    ("params validation", _set_in("params", "validation", {"method": "guess"}),
     ["params validation method"]),
    ("params data_fingerprint", _set_in("params", "data_fingerprint", ["x"]),
     ["data_fingerprint must be a hex string"]),
    ("stop_reason number", _set("stop_reason", 5), ["stop_reason must be a string"]),
    ("format version 4", _set("format_version", 4), ["model format version 4"]),
    ("format version bool", _set("format_version", True), ["model format version true"]),
    ("not a model", _raw("[1, 2, 3]"), ["not an ultrafs model file"]),
    ("not JSON", _raw("{not json"), ["not a JSON model file"]),
    ("not UTF-8", _raw(b'{"format": "\xff\xfe"}'), ["not UTF-8"]),
    ("deep nesting", _deep_json(100_000), ["nested too deeply"]),
    ("integer of 5000 digits", _raw('{"format": "ultrafs-model", "coef": ['
                                    + "9" * 5000 + "]}"), ["not a JSON model file"]),
    ("missing coef", _set("coef", None), ["coef must be a list"]),
    # ---- regression models of GSR-FS (issue 16)
    ("target unknown", _set("target", "regression"), ["unknown target", "regression"]),
    ("continuous with classes", _set("target", "continuous"),
     ["a continuous model has no classes, got 2"]),
    ("continuous with K columns", _continuous_matrix, ["coef must hold"]),
]


def _forge_model(env, tmp_path, forge):
    genuine = json.loads(env["model"].read_text())
    content = forge(genuine)
    path = tmp_path / "forged.json"
    path.write_bytes(content if content is not None else json.dumps(genuine).encode())
    return path


@pytest.mark.parametrize("command", ["evaluate", "predict"])
@pytest.mark.parametrize("name, forge, fragments", MODEL_CASES,
                         ids=[case[0] for case in MODEL_CASES])
def test_forged_model_file_is_one_line(env, tmp_path, command, name, forge, fragments):
    path = _forge_model(env, tmp_path, forge)
    out = tmp_path / "predictions.tsv"
    args = [command, "--model", path, "--data", env["train"]]
    if command == "predict":
        args += ["--out", out]
    before = set(os.listdir(tmp_path))
    assert_one_line_failure(run_cli(args), path, fragments)
    assert_no_output_left(tmp_path, before)


def _special_model_path(kind, tmp_path):
    path = tmp_path / f"model-{kind}"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "too large":
        with open(path, "wb") as fh:           # sparse: costs no disk
            fh.truncate(MAX_MODEL_BYTES + 1)
    return path


SPECIAL_MODEL_CASES = [
    ("missing", ["no such model file"]),
    ("directory", ["is a directory"]),
    ("fifo", ["not a regular file"]),
    ("too large", ["larger than the 64 MiB limit"]),
]


@pytest.mark.parametrize("kind, fragments", SPECIAL_MODEL_CASES,
                         ids=[case[0] for case in SPECIAL_MODEL_CASES])
def test_model_path_that_is_not_a_file(env, tmp_path, kind, fragments):
    if kind == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    path = _special_model_path(kind, tmp_path)
    before = set(os.listdir(tmp_path))
    result = run_cli(["evaluate", "--model", path, "--data", env["train"]])
    assert_one_line_failure(result, path, fragments)
    assert_no_output_left(tmp_path, before)


def test_genuine_model_files_still_load(env):
    for name in ("model", "multi_model"):
        model = Model.load(env[name])
        assert Model.from_dict(json.loads(json.dumps(model.to_dict()))).features \
            == model.features


# ------------------------------------------------------------- checkpoints
def _ck_set(key, value):
    def forge(state, directory):
        state[key] = value
    return forge


def _ck_del(key):
    def forge(state, directory):
        del state[key]
    return forge


def _ck_key(position, value):
    def forge(state, directory):
        state["keys"][position] = value
    return forge


def _ck_coef_short(state, directory):
    state["coef"] = state["coef"][:-1]


def _ck_coef_nan(state, directory):
    state["coef"][0] = float("nan")


def _ck_history_text(state, directory):
    state["history"][0]["objective"] = "low"


def _ck_decision(transform):
    def forge(state, directory):
        path = directory / state["decision_file"]
        np.save(path, transform(np.load(path)))
    return forge


def _ck_decision_missing(state, directory):
    (directory / state["decision_file"]).unlink()


def _ck_decision_pickle(state, directory):
    path = directory / state["decision_file"]
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)


def _ck_fingerprint(part):
    def forge(state, directory):
        state["fingerprint"][part] = "0" * 64
    return forge


def _ck_raw(text):
    def forge(state, directory):
        return text
    return forge


def _ck_repeated(state, directory):
    state["keys"][1] = state["keys"][0]


CHECKPOINT_CASES = [
    # name, forge(state, directory) (returns the JSON text to write, or None), fragments
    ("negative key", _ck_key(0, -1), ["keys[0] must be an integer in 0..39", "-1"]),
    ("string key", _ck_key(0, "3"), ["keys[0]", '"3"']),
    ("key out of range", _ck_key(0, 10**6), ["keys[0] must be an integer in 0..39"]),
    ("repeated key", _ck_repeated, ["keys holds a feature twice"]),
    ("string bias", _ck_set("bias", "0.1"), ["bias must be a finite number"]),
    ("missing coef", _ck_del("coef"), ["missing coef"]),
    ("missing keys and bias", _ck_del("keys"), ["missing keys"]),
    ("short coef", _ck_coef_short, ["coef must hold 10 numbers, got 9"]),
    ("NaN coef", _ck_coef_nan, ["coef[0] must be a finite number"]),
    ("batch_ptr inconsistent", _ck_set("batch_ptr", [0, 7, 8, 10]),
     ["batch_ptr must rise from 0 to the 10 keys in 2 batches"]),
    ("iteration text", _ck_set("iteration", "2"), ["iteration must be an integer"]),
    ("history non-numeric", _ck_history_text, ["history[0] objective must be a number"]),
    ("negative lipschitz", _ck_set("lipschitz", -1.0), ["lipschitz must be > 0"]),
    ("zero objective_0", _ck_set("objective_0", 0.0), ["objective_0 must be > 0"]),
    ("stop_reason number", _ck_set("stop_reason", 1), ["stop_reason must be a string"]),
    ("path traversal", _ck_set("decision_file", "../../model.json"),
     ["decision_file must be a decision-<t>.npy name"]),
    ("decision file missing", _ck_decision_missing, ["missing decision values"]),
    ("decision file short", _ck_decision(lambda d: d[:-1]),
     [f"must hold a float64 vector of {N_SAMPLES} values"]),
    ("decision file pickled", _ck_decision_pickle, ["unreadable decision values"]),
    ("decision values edited", _ck_decision(lambda d: d * 2.0),
     ["not those of the stored weights"]),
    ("older version", _ck_set("version", 1), ["checkpoint version 1"]),
    ("params not an object", _ck_set("params", [1]), ["params must be a JSON object"]),
    ("content digest differs", _ck_fingerprint("content"), ["different data"]),
    ("metadata checksum differs", _ck_fingerprint("metadata"), ["different data"]),
    ("not JSON", _ck_raw("{oops"), ["unreadable checkpoint"]),
    ("deep nesting", _ck_raw("[" * 100_000 + "]" * 100_000), ["nested too deeply"]),
]


@pytest.mark.parametrize("name, forge, fragments", CHECKPOINT_CASES,
                         ids=[case[0] for case in CHECKPOINT_CASES])
def test_forged_checkpoint_is_one_line(env, tmp_path, name, forge, fragments):
    directory = tmp_path / "ckpt"
    shutil.copytree(env["ckpt"], directory)
    state_path = directory / "checkpoint.json"
    state = json.loads(state_path.read_text())
    text = forge(state, directory)
    state_path.write_text(text if text is not None else json.dumps(state))
    out = tmp_path / "model.json"
    before = set(os.listdir(tmp_path))
    result = run_cli(["select", "--data", env["train"], *SELECT, "--max-iter", "4",
                      "--checkpoint", directory, "--resume", "--out", out])
    assert_one_line_failure(result, state_path, fragments)
    assert_no_output_left(tmp_path, before)


def test_resume_on_shuffled_rows_is_refused(env, tmp_path):
    """The same rows in another order are other data (CLI and API)."""
    directory = tmp_path / "ckpt"
    shutil.copytree(env["ckpt"], directory)
    out = tmp_path / "model.json"
    result = run_cli(["select", "--data", env["shuffled"], *SELECT, "--max-iter", "4",
                      "--checkpoint", directory, "--resume", "--out", out])
    assert_one_line_failure(result, directory / "checkpoint.json", ["different data"])
    assert not out.exists()
    with pytest.raises(CheckpointMismatchError, match="different data"):
        select(str(env["shuffled"]), B=5, max_iter=4, tol=0.0, C=1.0,
               checkpoint=directory, resume=True)


class _Unfingerprinted(InMemoryStore):
    """An in-memory store that records no data fingerprint (as older stores)."""

    fingerprint = None


def test_shuffled_rows_refused_without_a_store_fingerprint(env, tmp_path):
    """Stores that record no fingerprint are bound by the content digest."""
    train, shuffled = open_store(env["train"]), open_store(env["shuffled"])
    assert store_fingerprint(train)["metadata"] == store_fingerprint(shuffled)["metadata"]
    assert content_digest(train) != content_digest(shuffled)
    X, score = _problem()
    y = (score > 0).astype(int)
    perm = np.random.default_rng(1).permutation(N_SAMPLES)
    plain, reordered = _Unfingerprinted(X, y), _Unfingerprinted(X[perm], y[perm])
    directory = tmp_path / "ckpt"
    select(plain, B=5, max_iter=2, tol=0.0, C=1.0, checkpoint=directory)
    assert json.loads((directory / "checkpoint.json").read_text())[
        "fingerprint"]["data"] is None
    with pytest.raises(CheckpointMismatchError, match="reordered"):
        select(reordered, B=5, max_iter=4, tol=0.0, C=1.0, checkpoint=directory,
               resume=True)
    resumed = select(plain, B=5, max_iter=4, tol=0.0, C=1.0, checkpoint=directory,
                     resume=True)
    fresh = select(plain, B=5, max_iter=4, tol=0.0, C=1.0)
    assert resumed.features == fresh.features
    np.testing.assert_array_equal(resumed.coef, fresh.coef)


def test_forged_stop_reason_cannot_return_arbitrary_weights(env, tmp_path):
    """A finished checkpoint's weights are re-certified, else solved again."""
    directory = tmp_path / "ckpt"
    shutil.copytree(env["ckpt"], directory)
    state_path = directory / "checkpoint.json"
    state = json.loads(state_path.read_text())
    genuine = select(str(env["train"]), B=5, max_iter=2, tol=0.0, C=1.0)
    # forge: a finished run with other weights, decision values made to agree
    store = open_store(env["train"])
    forged = np.full(len(state["coef"]), 3.0)
    block = store.read_columns(np.asarray(state["keys"]))
    X_sel = np.zeros((N_SAMPLES, len(state["keys"])))
    for j in range(len(state["keys"])):
        lo, hi = block.indptr[j], block.indptr[j + 1]
        X_sel[block.indices[lo:hi], j] = block.values(np.float64)[lo:hi]
    np.save(directory / state["decision_file"], X_sel @ forged - state["bias"])
    state.update(coef=forged.tolist(), stop_reason="forged: finished")
    state_path.write_text(json.dumps(state))
    resumed = select(str(env["train"]), B=5, max_iter=2, tol=0.0, C=1.0,
                     checkpoint=directory, resume=True)
    assert resumed.stop_reason == "forged: finished"
    assert not np.allclose(resumed.coef, 3.0)
    # the weights are a certified solution on those features: FGM's own
    assert resumed.features == genuine.features
    np.testing.assert_allclose(resumed.coef, genuine.coef, rtol=1e-2, atol=1e-3)


def test_finished_checkpoint_resumes_to_the_same_model(env, tmp_path):
    directory = tmp_path / "ckpt"
    first = select(str(env["train"]), B=5, max_iter=10, tol=0.05, C=1.0,
                   checkpoint=directory)
    assert json.loads((directory / "checkpoint.json").read_text())["stop_reason"]
    again = select(str(env["train"]), B=5, max_iter=10, tol=0.05, C=1.0,
                   checkpoint=directory, resume=True)
    assert again.features == first.features
    np.testing.assert_array_equal(again.coef, first.coef)
    assert again.intercept == first.intercept


# ------------------------------------------------------- label conventions
def _by_hand(model, store):
    """Decision values of a model on a store, from dense numpy."""
    X = np.zeros((store.n_samples, store.n_features))
    block = store.read_range(0, store.n_features)
    for j in range(store.n_features):
        lo, hi = block.indptr[j], block.indptr[j + 1]
        X[block.indices[lo:hi], j] = block.values(np.float64)[lo:hi]
    columns = np.asarray(model.features) - store.id_offset
    return X[:, columns] @ model.coef + model.intercept


def test_labels_are_matched_by_class_value(env):
    model = Model.load(env["model"])
    train = open_store(env["train"])
    decision = _by_hand(model, train)
    truth = train.read_targets()
    expected = float(np.mean(np.where(decision > 0, 1.0, 0.0) == truth))
    metrics = model.evaluate_store(train)
    assert metrics["accuracy"] == pytest.approx(expected)
    assert metrics["accuracy"] > 0.75
    # the same rows labelled {-1, +1}: refused, never scored as 1 - accuracy
    with pytest.raises(InputFormatError) as caught:
        model.evaluate_store(open_store(env["pm"]))
    message = str(caught.value)
    assert str(env["pm"]) in message and "{-1, 1}" in message and "{0, 1}" in message


def test_evaluate_cli_refuses_other_label_convention(env):
    result = run_cli(["evaluate", "--model", env["model"], "--data", env["pm"]])
    assert_one_line_failure(result, env["pm"], ["{-1, 1}", "{0, 1}", "by value"])
    fine = run_cli(["evaluate", "--model", env["model"], "--data", env["train"]])
    assert fine.exit_code == 0, fine.output
    assert json.loads(fine.stdout)["accuracy"] > 0.75


def test_store_with_some_of_the_classes_is_evaluated_by_value(env, tmp_path):
    """A test store holding classes 1 and 2 of a 3-class model (a binary store)."""
    model = Model.load(env["multi_model"])
    assert model.classes == [0.0, 1.0, 2.0]
    multi = open_store(env["multi"])
    keep = multi.read_targets() > 0
    X, _ = _problem()
    subset = tmp_path / "subset.zarr"
    write_store(subset, X[keep], multi.read_targets()[keep])
    store = open_store(subset)
    assert store.target_type == "binary" and list(store.classes) == [1.0, 2.0]
    decision = _by_hand(model, store)
    predicted = np.asarray(model.classes)[np.argmax(decision, axis=1)]
    expected = float(np.mean(predicted == store.read_targets()))
    metrics = model.evaluate_store(store)
    assert metrics["accuracy"] == pytest.approx(expected)
    assert 0.5 < metrics["accuracy"] < 1.0
    # a binary model on a 3-class store: a class it does not know
    with pytest.raises(InputFormatError, match="not among the model's classes"):
        Model.load(env["model"]).evaluate_store(multi)


def test_predict_reads_no_labels(env, tmp_path):
    """predict works whatever the store's labels: other convention, other target."""
    reference = run_cli(["predict", "--model", env["model"], "--data", env["train"]])
    assert reference.exit_code == 0, reference.output
    for data in ("pm", "multi"):
        result = run_cli(["predict", "--model", env["model"], "--data", env[data]])
        assert result.exit_code == 0, result.output
        assert result.stdout == reference.stdout
    # a store whose labels cannot be read at all still predicts
    broken = tmp_path / "broken.zarr"
    shutil.copytree(env["train"], broken)
    shutil.rmtree(broken / "labels" / "c")
    result = run_cli(["predict", "--model", env["model"], "--data", broken])
    assert result.exit_code == 0, result.output
    assert result.stdout == reference.stdout
    refused = run_cli(["evaluate", "--model", env["model"], "--data", broken])
    assert refused.exit_code == 1 and "Traceback" not in refused.output


def test_continuous_store_is_refused_by_evaluate(env, tmp_path):
    X, score = _problem()
    path = tmp_path / "reg.zarr"
    write_store(path, X, score, target="continuous")
    result = run_cli(["evaluate", "--model", env["model"], "--data", path])
    assert_one_line_failure(result, path, ["continuous", "{0, 1}"])
    assert run_cli(["predict", "--model", env["model"], "--data", path]).exit_code == 0


def test_model_copies_are_independent(env):
    """Guard for the table: forging works on a copy of the genuine model."""
    genuine = json.loads(env["model"].read_text())
    forged = copy.deepcopy(genuine)
    _duplicate_feature(forged)
    assert forged != genuine
