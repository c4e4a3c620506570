"""The click CLI: the whole flow, JSON outputs and one-line errors."""

import json
import re
from pathlib import Path

import pytest
from sklearn.datasets import dump_svmlight_file

from ultrafs.datasets.planted import make_planted_problem

CLI_DOC = Path(__file__).resolve().parents[1] / "docs" / "CLI.md"


try:
    from cli_tools import assert_one_line_error, run
except ImportError:                       # tests/ imported as a package
    from tests.cli_tools import assert_one_line_error, run


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    problem = make_planted_problem(n_samples=300, n_features=120, n_relevant=10,
                                   n_test=200, seed=1)
    dump_svmlight_file(problem.X_train, problem.y_train, str(root / "train.svm"),
                       zero_based=False)
    # the test file lacks the last 20 features: they count as zero columns
    dump_svmlight_file(problem.X_test[:, :100], problem.y_test, str(root / "test.svm"),
                       zero_based=False)
    run("ingest", root / "train.svm", root / "train.zarr")
    run("ingest", root / "test.svm", root / "test.zarr")
    return root


def test_flow_ingest_info_select_predict_evaluate(stores):
    info = json.loads(run("info", stores / "train.zarr").output)
    assert info["n_samples"] == 300 and info["n_features"] == 120
    assert info["id_offset"] == 1
    # "binary" of the store (all values 1) is shown under a name that does
    # not read as the target type printed beside it
    assert info["target"] == "binary" and info["binary_values"] is False
    assert "binary" not in info
    model_path = stores / "model.json"
    run("select", "--data", stores / "train.zarr", "--B", 5, "--max-iter", 3,
        "--tol", 0, "--out", model_path)
    model = json.loads(model_path.read_text())
    assert model["format"] == "ultrafs-model"
    assert len(model["features"]) == 15 == len(model["coef"])
    assert all(1 <= f <= 120 for f in model["features"])   # 1-based ids
    assert len(model["history"]) == 3
    for key in ("objective", "n_features", "score_seconds", "solve_seconds",
                "materialize_seconds"):
        assert key in model["history"][0]
    stdout_model = json.loads(run("select", "--data", stores / "train.zarr",
                                  "--B", 5, "--max-iter", 3, "--tol", 0).output)
    assert stdout_model["features"] == model["features"]

    predicted = run("predict", "--model", model_path, "--data", stores / "test.zarr")
    assert "absent from the store" in predicted.stderr   # features 101..120
    predictions = predicted.stdout.splitlines()
    assert predictions[0].split("\t") == ["row", "predicted", "decision", "probability"]
    assert len(predictions) == 201
    assert [row.split("\t")[0] for row in predictions[1:4]] == ["0", "1", "2"]
    metrics = json.loads(run("evaluate", "--model", model_path, "--data",
                             stores / "test.zarr").stdout)
    assert {"accuracy", "auc", "n_samples"} <= set(metrics)
    assert metrics["n_samples"] == 200 and metrics["accuracy"] > 0.7

    out = stores / "pred.tsv"
    run("predict", "--model", model_path, "--data", stores / "test.zarr",
        "--out", out)
    assert out.read_text().splitlines() == predictions
    as_json = json.loads(run("predict", "--model", model_path, "--data",
                             stores / "test.zarr", "--format", "json").stdout)
    assert set(as_json) == {"row", "predicted", "decision", "probability"}
    assert len(as_json["decision"]) == 200 and as_json["row"][:3] == [0, 1, 2]
    assert [f"{v:.10g}" for v in as_json["decision"][:3]] == \
        [row.split("\t")[2] for row in predictions[1:4]]


@pytest.mark.parametrize("args, fragments", [
    (["--B", "0"], ["--B", "0"]),
    (["--C", "0"], ["--C"]),
    (["--C", "-2"], ["--C"]),
    (["--loss", "hinge"], ["--loss"]),
    (["--scheduler", "bogus"], ["bogus"]),
])
def test_select_bad_parameters(stores, args, fragments):
    result = run("select", "--data", stores / "train.zarr", *args, ok=False)
    assert_one_line_error(result, *fragments)


def test_select_on_something_that_is_not_a_store(tmp_path, stores):
    (tmp_path / "plain").mkdir()
    result = run("select", "--data", tmp_path / "plain", ok=False)
    assert_one_line_error(result, "not an ultrafs store")
    result = run("select", "--data", tmp_path / "missing.zarr", ok=False)
    assert_one_line_error(result, "missing.zarr")
    # a text file that is not LIBSVM either (a LIBSVM file is described: its
    # cached store, tests/test_cli_cache.py)
    (tmp_path / "notes.txt").write_text("not a store\n")
    result = run("info", tmp_path / "notes.txt", ok=False)
    assert_one_line_error(result, "notes.txt")


def test_select_does_not_leave_partial_model(tmp_path, stores):
    out = tmp_path / "model.json"
    result = run("select", "--data", tmp_path / "missing.zarr", "--out", out, ok=False)
    assert result.exit_code != 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content, fragments", [
    (b"1 1:0.5 2:abc\n", ["line 1"]),
    (b"1 1:0.5\n-1 2:nan\n", ["line 2"]),
    (b"1 1:0.5\n-1 2:1\n1 0:1\n", ["line 3", "0"]),
    (b"1 1:0.5 1:2\n-1 2:1\n", ["line 1", "duplicate"]),
    (b"1 1:0.5\n1 2:1\n", ["two"]),
    (b"", ["no samples"]),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", ["LIBSVM"]),
])
def test_ingest_bad_input(tmp_path, content, fragments):
    source = tmp_path / "bad.svm"
    source.write_bytes(content)
    result = run("ingest", source, tmp_path / "out.zarr", ok=False)
    assert_one_line_error(result, *fragments)
    assert not (tmp_path / "out.zarr").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.svm"]


def test_model_file_errors(tmp_path, stores):
    bad = tmp_path / "model.json"
    bad.write_text("{not json")
    result = run("evaluate", "--model", bad, "--data", stores / "test.zarr", ok=False)
    assert_one_line_error(result, "model.json")
    bad.write_text(json.dumps({"format": "ultrafs-model", "format_version": 99}))
    result = run("predict", "--model", bad, "--data", stores / "test.zarr", ok=False)
    assert_one_line_error(result, "version")


def _help_text(command):
    return run(*command.split(), "--help").output.rstrip()


def test_cli_reference_matches_help():
    """docs/CLI.md's reference is generated from --help (tools/readme_cli.py)."""
    from ultrafs.methods.registry import methods

    text = CLI_DOC.read_text()
    built_in = [m.name for m in methods() if m.fit.__module__.startswith("ultrafs.")]
    for command in ("select", "ingest", "predict", "evaluate", *(
            f"select --method {name}" for name in built_in if name != "fgm")):
        block = re.search(rf"<!-- help:{command} -->\n```text\n(.*?)\n```", text,
                          re.S)
        assert block, f"docs/CLI.md lacks the help block of {command}"
        assert block.group(1).rstrip() == _help_text(command), (
            f"docs/CLI.md help of {command} is stale: run python tools/readme_cli.py")


def test_parquet_formats_give_the_same_model(stores, tmp_path):
    """ingest --format parquet and a wide Parquet table select like Zarr."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ultrafs.store import open_store

    run("ingest", "--format", "parquet", stores / "train.svm", tmp_path / "train.pq")
    args = ["--B", 4, "--max-iter", 2, "--tol", 0]
    zarr_model = json.loads(run("select", "--data", stores / "train.zarr", *args).stdout)
    long_model = json.loads(run("select", "--data", tmp_path / "train.pq", *args).stdout)
    assert long_model["features"] == zarr_model["features"]
    assert long_model["coef"] == zarr_model["coef"]

    X = open_store(stores / "train.zarr").to_csc().toarray()
    y = open_store(stores / "train.zarr").read_labels()
    table = pa.table({**{f"f{j}": X[:, j] for j in range(X.shape[1])}, "target": y})
    pq.write_table(table, tmp_path / "wide.parquet")
    wide_model = json.loads(run("select", "--data", tmp_path / "wide.parquet",
                                "--label", "target", *args).stdout)
    # wide tables number features from 0 (column positions)
    assert [f + 1 for f in wide_model["features"]] == zarr_model["features"]
    result = run("select", "--data", tmp_path / "wide.parquet", *args, ok=False)
    assert_one_line_error(result, "label")


def test_progress_on_stderr_only_when_asked(stores):
    quiet = run("select", "--data", stores / "train.zarr", "--B", 3, "--max-iter", 1)
    assert quiet.stderr == ""
    loud = run("select", "--data", stores / "train.zarr", "--B", 3, "--max-iter", 1,
               "--progress", "--block-size", 10)
    # piped: one line per pass (its ETA is tqdm's, on a terminal), no '\r'
    assert "blocks" in loud.stderr and "nnz/s" in loud.stderr and "\r" not in loud.stderr
    assert "iteration 1 of 1: scoring candidates" in loud.stderr
    assert "iteration 1 of 1: 3 features" in loud.stderr
    assert "phase" not in loud.stderr
    assert not re.search(r"(?<![0-9.])0\.0M nnz/s", loud.stderr)  # not "10.0M nnz/s"
    json.loads(loud.stdout)                       # stdout holds only the model


def test_report_command(stores, tmp_path):
    pytest.importorskip("matplotlib")
    model_path = tmp_path / "model.json"
    run("select", "--data", stores / "train.zarr", "--B", 4, "--max-iter", 3,
        "--tol", 0, "--out", model_path)
    out = tmp_path / "report.html"
    summary = json.loads(run("report", model_path, "--test", stores / "test.zarr",
                             "--out", out).stdout)
    assert Path(summary["html"]).exists()
    for png in summary["figures"].values():
        assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 0.5 < summary["test"]["accuracy"] <= 1.0
    result = run("report", tmp_path / "nope.json", "--out", out, ok=False)
    assert_one_line_error(result, "nope.json")
