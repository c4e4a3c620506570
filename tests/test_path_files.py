"""Path files (``ultrafs path --out``) evaluated, predicted with and reported
(issue 37 item 5): a point's model is the path's own weights, the model
``select --method l1`` gives at the same λ, and a forged or corrupt path
file is one line naming the problem and the file.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from tests.cli_tools import assert_one_line_error, run
from tests.sparse_problems import sparse_binary_problem
from ultrafs.errors import InputFormatError
from ultrafs.methods.path_file import PathModels, load_model_or_point
from ultrafs.model import Model
from ultrafs.store.writers.zarr_writer import write_store


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("path_files")
    X, y = sparse_binary_problem(5, 160, 150, 0.06)
    y01 = (y > 0).astype(int)           # {0, 1} labels: classes read back by value
    train, test = root / "train.zarr", root / "test.zarr"
    write_store(train, X[:120], y01[:120], command="test")
    write_store(test, X[120:], y01[120:], command="test")
    plain, cv = root / "path.json", root / "cv.json"
    run("path", "--data", train, "--n-lambdas", 8, "--out", plain)
    run("path", "--data", train, "--n-lambdas", 8, "--cv", 3, "--out", cv)
    return {"root": root, "X": X.toarray(), "y": y01, "train": train, "test": test,
            "plain": plain, "cv": cv}


def _decision(files, doc, k, rows):
    step = doc["path"][k]
    return files["X"][rows][:, step["features"]] @ np.array(step["coef"]) \
        + step["intercept"]


def test_predict_at_a_point_is_the_paths_own_model(files):
    doc = json.loads(files["plain"].read_text())
    for k in (0, 4, 7):
        result = run("predict", "--model", files["plain"], "--data", files["test"],
                     "--point", k, "--format", "json")
        out = json.loads(result.stdout)
        expected = _decision(files, doc, k, slice(120, 160))
        assert np.allclose(out["decision"], expected, rtol=1e-12, atol=1e-12)
        assert out["predicted"] == list(np.where(expected > 0, 1.0, 0.0))
    metrics = json.loads(run("evaluate", "--model", files["plain"], "--data",
                             files["test"], "--point", 5).stdout)
    expected = _decision(files, doc, 5, slice(120, 160))
    assert metrics["accuracy"] == np.mean((expected > 0) == (files["y"][120:] == 1))
    assert metrics["path_point"]["point"] == 5
    assert metrics["path_point"]["nnz"] == doc["path"][5]["nnz"]


def test_point_equals_select_l1_at_the_same_lambda(files, tmp_path):
    doc = json.loads(files["plain"].read_text())
    k = 6
    step = doc["path"][k]
    model_file = tmp_path / "l1.json"
    run("select", "--method", "l1", "--C", repr(step["C"]), "--data", files["train"],
        "--out", model_file)
    selected = Model.load(model_file)
    point, chosen = load_model_or_point(files["plain"], point=k)
    assert selected.params["lambda"] == pytest.approx(step["lambda"], rel=1e-12)
    assert selected.features == point.features == step["features"]
    # two warm-started paths to the same λ: equal to the solver's tolerance
    assert np.allclose(selected.coef, point.coef, rtol=1e-4, atol=1e-6)
    assert selected.intercept == pytest.approx(point.intercept, rel=1e-4, abs=1e-6)
    a = json.loads(run("evaluate", "--model", model_file, "--data", files["test"]).stdout)
    b = json.loads(run("evaluate", "--model", files["plain"], "--data", files["test"],
                       "--lambda", repr(step["lambda"])).stdout)
    assert a["accuracy"] == b["accuracy"]
    assert a["auc"] == pytest.approx(b["auc"], abs=1e-9)
    assert b["path_point"]["point"] == k


def test_choosing_a_point(files):
    doc = json.loads(files["cv"].read_text())
    models = PathModels.load(files["cv"])
    cv = doc["cv"]
    assert models.index() == (cv["index_1se"], "lambda_1se of the --cv")
    assert models.index(lambda_="min")[0] == cv["index_min"]
    nnz = [s["nnz"] for s in doc["path"]]
    for count in range(min(nnz), max(nnz) + 2):
        index = models.index(n_features_to_select=count)[0]
        assert nnz[index] == max(v for v in nnz if v <= count)
        assert index == nnz.index(nnz[index])          # the largest λ of that count
    assert models.index(point=-1)[0] == len(nnz) - 1
    if min(nnz) > 0:
        with pytest.raises(InputFormatError, match="every point has more than"):
            models.index(n_features_to_select=min(nnz) - 1)
    # the default point of evaluate: the CV's lambda_1se
    metrics = json.loads(run("evaluate", "--model", files["cv"], "--data",
                             files["test"]).stdout)
    assert metrics["path_point"]["point"] == cv["index_1se"]


@pytest.mark.parametrize("args, fragments", [
    ([], ["no --cv choice", "--lambda", "--point", "--n-features-to-select"]),
    (["--lambda", "min"], ["needs a path written with --cv"]),
    (["--lambda", "12345"], ["is not a point of the path", "nearest"]),
    (["--lambda", "abc"], ["--lambda must be a number, min or 1se"]),
    (["--point", "99"], ["--point 99 is not a point of the path"]),
    (["--point", "1", "--lambda", "1"], ["not several"]),
])
def test_a_path_file_without_a_point_is_refused_in_one_line(files, args, fragments):
    for command in ("evaluate", "predict"):
        result = run(command, "--model", files["plain"], "--data", files["test"],
                     *args, ok=False)
        assert_one_line_error(result, str(files["plain"]), *fragments)


def test_model_file_refuses_point_options_and_model_load_names_a_path_file(files,
                                                                             tmp_path):
    model_file = tmp_path / "m.json"
    run("select", "--method", "l1", "--n-features-to-select", 3, "--data",
        files["train"], "--out", model_file)
    result = run("evaluate", "--model", model_file, "--data", files["test"], "--point",
                 1, ok=False)
    assert_one_line_error(result, str(model_file), "apply to a path file")
    with pytest.raises(InputFormatError, match="a path file"):
        Model.load(files["plain"])


def test_report_of_a_path_file(files, tmp_path):
    out = tmp_path / "r.html"
    result = run("report", files["cv"], "--test", files["test"], "--out", out)
    summary = json.loads(result.stdout)
    page = out.read_text()
    assert "λ (log scale" in page                     # the λ axis, named
    assert "against λ" in page and "l1-LR" in page
    assert "lambda_min" in page and "lambda_1se" in page
    assert "log(1 + exp(-y_i (x_i&#x27;beta + c)))" in page    # the method's objective
    assert set(summary["figures"]) == {"nonzeros", "accuracy", "cv"}
    for name in summary["figures"].values():
        assert open(name, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(files["cv"].read_text())
    assert summary["cv"]["lambda_1se"] == doc["cv"]["lambda_1se"]
    # without a CV nor a test store: nonzeros only; --train is refused
    plain = run("report", files["plain"], "--out", tmp_path / "p.html")
    assert set(json.loads(plain.stdout)["figures"]) == {"nonzeros"}
    refused = run("report", files["plain"], "--test", files["test"], "--train",
                  files["train"], "--out", tmp_path / "q.html", ok=False)
    assert refused.exit_code != 0 and "Traceback" not in refused.output


# ------------------------------------------------------------------ hostile files
def _set(path):
    """A forge that sets ``doc[path...] = value``."""
    *keys, last = path

    def forge(value):
        def apply(doc):
            target = doc
            for key in keys:
                target = target[key]
            target[last] = value
        return apply
    return forge


def _drop(key):
    return lambda doc: doc.pop(key)


PATH_CASES = [
    ("format version", _set(["format_version"])(99), ["format version 99"]),
    ("legacy file", _drop("format"), ["write it again with ultrafs path"]),
    ("path not a list", _set(["path"])({"a": 1}), ["path must be a non-empty list"]),
    ("empty path", _set(["path"])([]), ["path must be a non-empty list"]),
    ("negative λ", _set(["path", 2, "lambda"])(-1.0), ["path[2] lambda"]),
    ("λ a string", _set(["path", 2, "lambda"])("big"), ["path[2] lambda"]),
    ("λ rising", _set(["path", 7, "lambda"])(10.0), ["must decrease"]),
    ("nnz a boolean", _set(["path", 1, "nnz"])(True), ["path[1] nnz"]),
    ("a point not an object", _set(["path", 3])([1, 2]), ["path[3]"]),
    ("no classes", _drop("classes"), ["point 7", "classes"]),
    ("feature id a string", _set(["path", 7, "features", 0])("x"), ["point 7",
                                                                    "feature"]),
    ("coef too short", _set(["path", 7, "coef"])([1.0]), ["point 7", "coef"]),
    ("coef not finite", _set(["path", 7, "coef", 0])(1e999), ["point 7", "coef"]),
    ("nnz not the features", _set(["path", 7, "nnz"])(0), ["path[7]", "nnz"]),
    ("lambda_max missing", _drop("lambda_max"), ["lambda_max"]),
    ("λ a list", _set(["path", 0, "lambda"])([1.0] * 1000), ["path[0] lambda",
                                                             "a JSON list"]),
    ("features nested deeply", _set(["path", 7, "features"])(
        json.loads("[" * 900 + "]" * 900)), ["point 7", "features[0]"]),
]

CV_CASES = [
    ("cv points short", lambda d: d["cv"]["points"].pop(), ["cv has"]),
    ("cv index out of range", _set(["cv", "index_1se"])(500), ["cv index_1se"]),
    ("cv λ not the path's", _set(["cv", "points", 0, "lambda"])(0.5), ["cv points[0]"]),
    ("cv mean a string", _set(["cv", "points", 1, "deviance_mean"])("low"),
     ["cv points[1] deviance_mean"]),
    ("cv not an object", _set(["cv"])([1]), ["cv must be"]),
]


def _forged(files, tmp_path, source, forge):
    """The forged file, re-signed (as ``ultrafs sign`` would after a user's
    edit), so that the field checks behind the fingerprint answer;
    ``tests/test_hostile_models.py`` holds the unsigned edits."""
    from ultrafs.model_fingerprint import signed

    doc = copy.deepcopy(json.loads(files[source].read_text()))
    forge(doc)
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(signed(doc)))
    return path


@pytest.mark.parametrize("name, forge, fragments", PATH_CASES,
                         ids=[c[0] for c in PATH_CASES])
def test_forged_path_file_is_one_line(files, tmp_path, name, forge, fragments):
    path = _forged(files, tmp_path, "plain", forge)
    for command in ("evaluate", "predict"):
        result = run(command, "--model", path, "--data", files["test"], "--point", -1,
                     ok=False)
        assert_one_line_error(result, str(path), *fragments)


@pytest.mark.parametrize("name, forge, fragments", CV_CASES,
                         ids=[c[0] for c in CV_CASES])
def test_forged_cv_is_one_line(files, tmp_path, name, forge, fragments):
    path = _forged(files, tmp_path, "cv", forge)
    for args in (["evaluate", "--model", path, "--data", files["test"]],
                 ["report", path, "--out", tmp_path / "r.html"]):
        assert_one_line_error(run(*args, ok=False), str(path), *fragments)
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("text, fragments", [
    ("{\"format\": \"ultrafs-path\", ", ["not a JSON model file"]),
    ("[1, 2]", ["not an ultrafs model file"]),
    ("\xff", ["not a JSON model file"]),
])
def test_corrupt_path_file_is_one_line(files, tmp_path, text, fragments):
    path = tmp_path / "corrupt.json"
    path.write_bytes(text.encode("latin-1"))
    result = run("evaluate", "--model", path, "--data", files["test"], "--point", 0,
                 ok=False)
    assert_one_line_error(result, str(path), *fragments)
    with pytest.raises(InputFormatError, match="corrupt.json"):
        PathModels.load(path)
