"""LIBSVM files on the command line: the ingest cache, stdin, held-out scores,
the terminal summary, predict's columns and the progress lines."""

import bz2
import json
import re
import os
import threading

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import dump_svmlight_file

import ultrafs.store.writers.libsvm as libsvm_writer
from ultrafs.cli import main, terminal
from ultrafs.methods.fgm_method import plain_stop_reason
from ultrafs.datasets.planted import make_planted_problem
from ultrafs.store import libsvm_cache
from ultrafs.store.libsvm_cache import cache_root, resolve_data


def run(*args, ok=True, input=None):
    result = CliRunner().invoke(main, [str(a) for a in args], prog_name="ultrafs",
                                input=input)
    if ok:
        assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("ULTRAFS_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def ingests(monkeypatch):
    """Counts the calls of ingest_libsvm (the real one runs)."""
    calls = []
    real = libsvm_writer.ingest_libsvm

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(libsvm_writer, "ingest_libsvm", counting)
    return calls


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A training and a test LIBSVM file, bz2-compressed and plain."""
    root = tmp_path_factory.mktemp("libsvm")
    problem = make_planted_problem(300, 60, 5, n_test=100, seed=3)
    train_plain = root / "train.svm"
    dump_svmlight_file(problem.X_train, problem.y_train, str(train_plain), zero_based=False)
    train = root / "train.svm.bz2"
    train.write_bytes(bz2.compress(train_plain.read_bytes()))
    test = root / "test.svm"
    dump_svmlight_file(problem.X_test, problem.y_test, str(test), zero_based=False)
    return {"train": train, "train_plain": train_plain, "test": test}


def entries(cache):
    folder = cache / "libsvm"
    return sorted(p.name for p in folder.glob("*.zarr")) if folder.exists() else []


# ------------------------------------------------------------------- cache
def test_select_on_a_libsvm_file_ingests_once_then_reuses(cache, ingests, files):
    args = ["select", "--data", files["train"], "--B", 3, "--max-iter", 2,
            "--validation-fraction", 0.2]
    first = run(*args)
    assert "ingesting" in first.stderr and "into the cache" in first.stderr
    assert len(ingests) == 1
    (entry,) = entries(cache)
    stat = (cache / "libsvm" / entry).stat()
    model = json.loads(first.stdout)
    held = model["params"]["held_out"]
    assert held["method"] == "holdout" and held["fraction"] == 0.2
    assert held["n_held_out"] == 60 and held["n_train"] == 240
    assert 0.5 < held["accuracy"] <= 1.0
    assert "held-out accuracy:" in first.stderr

    second = run(*args)
    assert len(ingests) == 1                       # no second ingest
    assert "reusing the cached store" in second.stderr
    assert "ingesting" not in second.stderr
    again = (cache / "libsvm" / entry).stat()
    assert (again.st_ino, again.st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    assert json.loads(second.stdout)["features"] == model["features"]


def test_the_key_is_the_content_and_the_settings(cache, ingests, files, tmp_path):
    first = resolve_data(str(files["train"]), echo=lambda m: None)
    # the same bytes under another name: the same entry
    copy = tmp_path / "renamed.bz2"
    copy.write_bytes(files["train"].read_bytes())
    assert resolve_data(str(copy), echo=lambda m: None) == first
    assert len(ingests) == 1
    # other settings, another entry
    assert resolve_data(str(copy), target="none", echo=lambda m: None) != first
    # one byte more, another entry
    changed = tmp_path / "changed.svm"
    changed.write_bytes(files["train_plain"].read_bytes() + b"1 3:1\n")
    assert resolve_data(str(changed), echo=lambda m: None) != first
    assert len(ingests) == 3 and len(entries(cache)) == 3


def test_stores_pass_through(cache, ingests, tmp_path, files):
    store = tmp_path / "s.zarr"
    run("ingest", files["train"], store)
    assert resolve_data(str(store)) == str(store)
    assert resolve_data(str(tmp_path / "missing")) == str(tmp_path / "missing")
    assert len(ingests) == 1 and entries(cache) == []


def test_concurrent_runs_ingest_once(cache, ingests, files):
    results, errors = [], []
    messages = []

    def one():
        try:
            results.append(resolve_data(str(files["train"]), echo=messages.append))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(set(results)) == 1 and len(ingests) == 1
    assert len(entries(cache)) == 1
    assert not list((cache / "libsvm").glob("*.tmp-*"))
    assert sum(m.startswith("ingesting") for m in messages) == 1


def test_a_damaged_entry_is_ingested_again(cache, ingests, files):
    path = resolve_data(str(files["train"]), echo=lambda m: None)
    for name in os.listdir(path):                 # emptied by hand
        target = os.path.join(path, name)
        if os.path.isdir(target):
            import shutil

            shutil.rmtree(target)
        else:
            os.unlink(target)
    assert resolve_data(str(files["train"]), echo=lambda m: None) == path
    assert len(ingests) == 2
    assert run("info", path).exit_code == 0


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.setenv("ULTRAFS_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_root() == tmp_path / "a"
    monkeypatch.delenv("ULTRAFS_CACHE_DIR")
    assert cache_root() == tmp_path / "x" / "ultrafs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "ultrafs"


def test_not_libsvm_is_refused_as_before(cache, tmp_path):
    png = tmp_path / "image.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 20)
    assert not libsvm_cache.is_libsvm_file(png)
    result = run("select", "--data", png, ok=False)
    assert result.exit_code == 1 and "not an ultrafs store" in result.output
    assert entries(cache) == []


def test_the_sniff_reads_the_first_line_of_data(tmp_path):
    cases = {"comments.svm": b"# a header\n\n-1 3:0.5 7:1 # note\n",
             "qid.svm": b"1 qid:3 1:0.5\n",          # refused by the ingest, naming qid
             "label-only.svm": b"+1\n-1 2:1\n",
             "empty.svm": b"", "only-comments.svm": b"# nothing\n",
             "text.txt": b"not a store\n", "csv.csv": b"1,2,3\n4,5,6\n",
             "words.svm": b"1 a:0.5\n", "bad-value.svm": b"1 2:x\n"}
    found = {}
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        found[name] = libsvm_cache.is_libsvm_file(tmp_path / name)
    gz = tmp_path / "text.txt.gz"
    gz.write_bytes(__import__("gzip").compress(b"not a store\n"))
    found["text.txt.gz"] = libsvm_cache.is_libsvm_file(gz)
    assert found == {"comments.svm": True, "qid.svm": True, "label-only.svm": True,
                     "empty.svm": True, "only-comments.svm": True, "text.txt": False,
                     "csv.csv": False, "words.svm": False, "bad-value.svm": False,
                     "text.txt.gz": False}


def test_info_on_a_libsvm_file_describes_its_cached_store(cache, ingests, files):
    first = run("info", files["train"])
    assert "ingesting" in first.stderr and len(ingests) == 1
    described = json.loads(first.stdout)
    assert described["n_samples"] == 300 and described["n_features"] == 60
    # the entry select makes and reads
    second = run("select", "--data", files["train"], "--B", 3, "--max-iter", 1)
    assert "reusing the cached store" in second.stderr and len(ingests) == 1
    assert json.loads(run("info", files["train"]).stdout) == described
    assert len(entries(cache)) == 1


# --------------------------------------------- evaluate, predict, report, --test
def test_evaluate_predict_and_test_on_libsvm_files(cache, files, tmp_path):
    model_path = tmp_path / "m.json"
    result = run("select", "--data", files["train"], "--B", 3, "--max-iter", 2,
                 "--test", files["test"], "--out", model_path)
    model = json.loads(model_path.read_text())
    assert model["params"]["test"]["n_samples"] == 100
    assert "test accuracy:" in result.stderr
    metrics = json.loads(run("evaluate", "--model", model_path, "--data",
                             files["test"]).stdout)
    assert metrics["accuracy"] == model["params"]["test"]["accuracy"]
    predicted = run("predict", "--model", model_path, "--data", files["test"]).stdout
    lines = predicted.splitlines()
    assert lines[0].split("\t") == ["row", "predicted", "decision", "probability"]
    assert len(lines) == 101 and lines[1].split("\t")[0] == "0"
    predicted_labels = np.array([float(line.split("\t")[1]) for line in lines[1:]])
    assert set(predicted_labels) <= {-1.0, 1.0}
    report = run("report", model_path, "--test", files["test"], "--out",
                 tmp_path / "r.html")
    assert "test" in json.loads(report.stdout)


def test_predict_reuses_the_entry_of_select(cache, ingests, files, tmp_path):
    """select, then evaluate and predict on the same file: one entry, one ingest."""
    model_path = tmp_path / "m.json"
    run("select", "--data", files["train"], "--B", 3, "--max-iter", 2, "--out", model_path)
    assert len(ingests) == 1 and len(entries(cache)) == 1
    run("evaluate", "--model", model_path, "--data", files["train"])
    predicted = run("predict", "--model", model_path, "--data", files["train"])
    assert "reusing the cached store" in predicted.stderr
    assert "ingesting" not in predicted.stderr
    assert len(ingests) == 1 and len(entries(cache)) == 1
    assert len(predicted.stdout.splitlines()) == 301
    # a file predict meets first gets its unlabelled entry (labels not read);
    # select still ingests its labelled one: the two stores differ
    run("predict", "--model", model_path, "--data", files["test"])
    assert len(ingests) == 2
    run("predict", "--model", model_path, "--data", files["test"])
    assert len(ingests) == 2 and len(entries(cache)) == 2


def test_multiclass_predict_columns(cache, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((90, 8))
    y = np.repeat([0, 1, 2], 30)
    X[np.arange(90), y] += 3.0
    data = tmp_path / "three.svm"
    dump_svmlight_file(X, y, str(data), zero_based=False)
    model_path = tmp_path / "m.json"
    run("select", "--data", data, "--B", 2, "--max-iter", 2, "--out", model_path)
    header = run("predict", "--model", model_path, "--data", data).stdout.splitlines()[0]
    assert header.split("\t") == ["row", "predicted", "decision_0", "decision_1",
                                  "decision_2", "probability_0", "probability_1",
                                  "probability_2"]
    as_json = json.loads(run("predict", "--model", model_path, "--data", data,
                             "--format", "json").stdout)
    assert as_json["row"][:2] == [0, 1] and len(as_json["probability_2"]) == 90


def test_validation_fraction_is_stratified_and_seeded(cache, files):
    args = ["select", "--data", files["train"], "--B", 3, "--max-iter", 2,
            "--validation-fraction", 0.3]
    a = json.loads(run(*args, "--seed", 1).stdout)["params"]["held_out"]
    b = json.loads(run(*args, "--seed", 1).stdout)["params"]["held_out"]
    assert a == b and a["seed"] == 1 and a["n_held_out"] == 90
    # with --C auto the fraction chooses C; no held_out record
    auto = json.loads(run("select", "--data", files["train"], "--B", 3, "--max-iter",
                          2, "--C", "auto", "--validation-fraction", 0.3).stdout)
    assert "held_out" not in auto["params"]
    assert auto["params"]["validation"]["method"] == "holdout"


# ------------------------------------------------------------ stdin ingest
def test_ingest_reads_stdin(tmp_path, files):
    for data in (files["train"].read_bytes(), files["train_plain"].read_bytes()):
        out = tmp_path / "s.zarr"
        result = run("ingest", "-", out, "--overwrite", input=data)
        summary = json.loads(result.stdout)
        assert summary["input"] == "-" and summary["n_samples"] == 300
    assert not list(tmp_path.glob("*.stdin-*"))
    bad = run("ingest", "-", tmp_path / "bad.zarr", input=b"1 1:1\nfoo\n", ok=False)
    assert bad.exit_code == 1
    assert bad.output.strip().splitlines() == [
        bad.output.strip().splitlines()[-1]]
    assert "stdin" in bad.output and ".stdin-" not in bad.output
    assert not list(tmp_path.glob("bad.zarr*"))


# ---------------------------------------------------------- terminal summary
def test_terminal_select_writes_a_named_model_and_a_summary(cache, files, tmp_path,
                                                            monkeypatch):
    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: True)
    monkeypatch.chdir(tmp_path)
    args = ["select", "--data", files["train"], "--B", 3, "--max-iter", 2,
            "--validation-fraction", 0.2]
    result = run(*args)
    model = json.loads((tmp_path / "train.model.json").read_text())
    assert model["format"] == "ultrafs-model"
    out = result.stdout
    assert "{" not in out                               # no JSON on the terminal
    n = len(model["features"])
    assert f"features selected  {n} of 6 (--B 3 x --max-iter 2)" in out
    assert f"nonzero weights    {n} of {n}" in out
    assert "stopped because" in out and "held-out accuracy" in out
    assert "model              train.model.json" in out
    # never overwritten without --overwrite, refused before any work
    monkeypatch.setenv("ULTRAFS_CACHE_DIR", str(tmp_path / "other-cache"))
    refused = run(*args, ok=False)
    assert refused.exit_code == 1
    assert "train.model.json exists" in refused.output and "--overwrite" in refused.output
    assert not (tmp_path / "other-cache").exists()
    run(*args, "--overwrite")
    # --out - keeps the JSON on stdout
    assert json.loads(run(*args, "--out", "-").stdout)["format"] == "ultrafs-model"


def test_plain_stop_reasons():
    assert "budget of 30 features" in plain_stop_reason(
        "holds the budget of B x max_iter = 30 features with a nonzero weight")
    assert plain_stop_reason(
        "relative objective decrease 0.0004 <= tol=0.001").startswith("converged")
    assert "no other feature" in plain_stop_reason(
        "no candidate feature with a positive score")


# ----------------------------------------------------------------- progress
def test_progress_lines_say_iteration_k_of_T(cache, files):
    result = run("select", "--data", files["train"], "--B", 3, "--max-iter", 3,
                 "--tol", 0, "--progress")
    err = result.stderr
    assert "iteration 1 of 3: scoring candidates" in err
    assert "iteration 2 of 3:" in err and "run ETA" in err
    assert "phase" not in err
    # one block: the rate comes from the merge (a zero rate, not "10.0M")
    assert not re.search(r"(?<![0-9.])0\.0M nnz/s", err)


def test_progress_helpers():
    from ultrafs.scoring.progress import RunClock, describe_label, format_seconds

    clock = RunClock(10)
    assert describe_label("iteration 3 pass phase 1", clock) == \
        "iteration 3 of 10: scoring candidates"
    assert describe_label("iteration 3 pass phase 2", clock).endswith(", pass 2")
    assert describe_label("something else", clock) == "something else"
    assert clock.remaining() is None
    clock.iteration_done(1)
    assert clock.remaining() >= 0
    assert format_seconds(125) == "2 min 05 s" and format_seconds(3.25) == "3.2 s"


def test_ingest_progress_line(files):
    import io

    stream = io.StringIO()
    reporter = terminal.IngestProgress(files["train"], min_interval=0.0, stream=stream,
                                       terminal=True)
    with open(files["train"], "rb") as f:
        f.read(100)
        reporter(120)
        line = stream.getvalue()
    assert "reading train.svm.bz2:" in line and "120 rows" in line
    assert "MB" in line and "ETA" in line
    reporter.finish()
    assert "read train.svm.bz2:" in stream.getvalue().splitlines()[-1]
