"""Hostile and careless use of the command line (issue 9).

One table of cases, each run through the CLI: a non-zero exit status, one
``Error:`` line on stderr naming the problem and the user's path, no
traceback, and nothing written (the folder holds the same files before and
after).  Beside the table: disk-full and read-only folders on a small
tmpfs (skipped where it cannot be mounted), SIGTERM during an ingest, the
umask, the checkpoint-folder lock, and bounded waits on a scheduler that
never answers, a cluster without workers and a scheduler that dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import dump_svmlight_file

from ultrafs.cli import main
from ultrafs.cli.errors import cli_message
from ultrafs.datasets.planted import make_planted_problem

CLI = [sys.executable, "-m", "ultrafs.cli"]


def invoke(argv):
    return CliRunner().invoke(main, [str(a) for a in argv], prog_name="ultrafs",
                              terminal_width=80)


def error_line(exit_code, stderr, expected_code=None):
    """The single ``Error:`` line of a failed command (asserts its shape).

    Usage errors (status 2) keep click's ``Usage:``/``Try`` lines above the
    one ``Error:`` line; every other failure is that line alone.
    """
    assert exit_code != 0
    if expected_code is not None:
        assert exit_code == expected_code, stderr
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("Error")]
    assert len(errors) == 1, stderr
    if exit_code != 2:
        assert lines == errors, stderr
    return errors[0]


def files_under(*folders):
    """Every path below the folders (hidden ones included)."""
    found = set()
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in dirnames + filenames:
                found.add(os.path.join(dirpath, name))
    return found


def leftovers(folder):
    return sorted(p for p in files_under(folder)
                  if ".tmp-" in p or ".runs-" in p)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    r = tmp_path_factory.mktemp("hostile")
    problem = make_planted_problem(n_samples=200, n_features=40, n_relevant=5,
                                   n_test=100, seed=3)
    dump_svmlight_file(problem.X_train, problem.y_train, str(r / "train.svm"),
                       zero_based=False)
    dump_svmlight_file(problem.X_test, problem.y_test, str(r / "test.svm"),
                       zero_based=False)
    for name in ("train", "test"):
        result = invoke(["ingest", r / f"{name}.svm", r / f"{name}.zarr"])
        assert result.exit_code == 0, result.output
    result = invoke(["select", "--data", r / "train.zarr", "--B", 3, "--max-iter", 2,
                     "--out", r / "model.json"])
    assert result.exit_code == 0, result.output
    # compiles MSLR's kernels here, so that no case's stderr holds the
    # first-use compile notice
    result = invoke(["select", "--method", "mslr", "--data", r / "train.zarr", "--B", 2,
                     "--max-iter", 2, "--out", r / "mslr.json"])
    assert result.exit_code == 0, result.output
    # and sparse kernel LR's (its bases, every solver's kernels)
    for solver in ("cgd", "sgd"):
        result = invoke(["select", "--method", "sklr", "--data", r / "train.zarr",
                         "--n-components", 64, "--solver", solver, "--out",
                         r / f"sklr-{solver}.json"])
        assert result.exit_code == 0, result.output
    # and GSR-FS's (statistics, scoring, weighted Gram products)
    for extra in ([], ["--candidates", "10", "--p", "1"]):
        result = invoke(["select", "--method", "gsrfs", "--data", r / "train.zarr",
                         "--n-features-to-select", 5, "--out", r / "gsrfs.json"] + extra)
        assert result.exit_code == 0, result.output
    (r / "bad.svm").write_text("1 1:0.5 2:1\n1 3:x\n")
    (r / "empty.svm").write_text("")
    (r / "text.txt").write_text("not a store\n")
    (r / "plain").mkdir()
    (r / "plain" / "keep.txt").write_text("keep me\n")
    (r / "sub").mkdir()
    os.symlink(r / "train.svm", r / "link.svm")
    os.link(r / "train.svm", r / "hard.svm")
    os.symlink(r / "model.json", r / "model-link.json")
    os.symlink(r / "train.zarr", r / "train-link.zarr")
    os.mkfifo(r / "pipe")
    (r / "groups_bad.txt").write_text("1 0\n2 x\n")
    (r / "groups_three.txt").write_text("1 0 7\n")
    (r / "groups_negative.txt").write_text("1 -3\n")
    (r / "groups_binary.txt").write_bytes(b"\xff\xfe\x00\x01")
    (r / "groups_empty.txt").write_text("# nothing\n")
    (r / "tree_cycle.txt").write_text("\n".join(["40"] * 40 + ["41", "40"]) + "\n")
    (r / "tree_short.txt").write_text("-1\n-1\n")
    (r / "groups_ok.txt").write_text("1 0\n2 0\n3 1\n")
    (r / "tree_ok.txt").write_text("-1\n" * 40)
    (r / "tree_feature_parent.txt").write_text("\n".join(["0"] * 40) + "\n")
    import numpy as np
    np.save(r / "groups_float.npy", np.full(40, 0.5))
    (r / "groups_bad.npy").write_bytes(b"\x93NUMPY garbage")
    # data unrelated to the models: one column, id 0 (every model id is >= 1)
    from ultrafs.store.writers.zarr_writer import write_store
    write_store(r / "unrelated.zarr", np.ones((60, 1)), np.where(np.arange(60) % 2, 1, -1))
    return r


Case = namedtuple("Case", "name argv code fragments")

SELECT = ["select", "--B", "3", "--max-iter", "2"]

#: argv and fragments use "{r}" for the case folder
CASES = [
    # ---- inputs that are missing or malformed (handled before issue 9 too)
    Case("ingest-missing-input", ["ingest", "{r}/nope.svm", "{r}/o.zarr"], 1,
         ["No such file", "nope.svm"]),
    Case("ingest-bad-line", ["ingest", "{r}/bad.svm", "{r}/o.zarr"], 1,
         ["bad.svm", "line 2", "'x'"]),
    Case("ingest-empty-file", ["ingest", "{r}/empty.svm", "{r}/o.zarr"], 1,
         ["empty.svm", "no samples"]),
    Case("ingest-input-is-directory", ["ingest", "{r}/plain", "{r}/o.zarr"], 2,
         ["plain", "directory"]),
    Case("info-not-a-store", ["info", "{r}/text.txt"], 1,
         ["{r}/text.txt", "not an ultrafs store"]),
    Case("info-missing", ["info", "{r}/nope.zarr"], 1, ["nope.zarr"]),
    # a model on data holding none of its features: refused, not scored 0.5
    Case("evaluate-unrelated-data", ["evaluate", "--model", "{r}/model.json",
                                     "--data", "{r}/unrelated.zarr"], 1,
         ["{r}/model.json", "{r}/unrelated.zarr", "none of its", "ids 0..0",
          "wrong data"]),
    Case("predict-unrelated-data", ["predict", "--model", "{r}/model.json",
                                    "--data", "{r}/unrelated.zarr"], 1,
         ["{r}/model.json", "{r}/unrelated.zarr", "none of its", "wrong data"]),
    # a text file that is not LIBSVM either: refused before any ingest notice
    Case("select-data-text-not-libsvm", SELECT + ["--data", "{r}/text.txt"], 1,
         ["{r}/text.txt", "not an ultrafs store"]),
    Case("predict-data-text-not-libsvm", ["predict", "--model", "{r}/model.json",
                                          "--data", "{r}/text.txt"], 1,
         ["{r}/text.txt", "not an ultrafs store"]),
    Case("select-data-missing", SELECT + ["--data", "{r}/nope.zarr"], 1,
         ["nope.zarr", "not an ultrafs store"]),
    Case("select-data-not-a-store", SELECT + ["--data", "{r}/plain"], 1,
         ["{r}/plain", "not an ultrafs store"]),
    Case("predict-model-missing", ["predict", "--model", "{r}/nope.json",
                                   "--data", "{r}/test.zarr"], 1, ["nope.json"]),
    Case("evaluate-model-not-json", ["evaluate", "--model", "{r}/text.txt",
                                     "--data", "{r}/test.zarr"], 1, ["text.txt"]),
    # ---- outputs that are inputs (issue 9, item 4)
    Case("ingest-output-is-input", ["ingest", "{r}/train.svm", "{r}/train.svm"], 1,
         ["OUTPUT", "{r}/train.svm", "INPUT"]),
    Case("ingest-output-symlink-to-input", ["ingest", "{r}/train.svm", "{r}/link.svm"], 1,
         ["{r}/link.svm", "is the INPUT"]),
    Case("ingest-output-hard-link-of-input", ["ingest", "{r}/train.svm",
                                              "{r}/hard.svm", "--overwrite"], 1,
         ["{r}/hard.svm", "is the INPUT"]),
    Case("ingest-output-other-spelling", ["ingest", "{r}/train.svm",
                                          "{r}/sub/../train.svm"], 1,
         ["{r}/sub/../train.svm", "is the INPUT"]),
    Case("select-out-is-data", SELECT + ["--data", "{r}/train.zarr",
                                         "--out", "{r}/train.zarr"], 1,
         ["--out {r}/train.zarr", "is the --data store"]),
    Case("select-out-symlink-to-data", SELECT + ["--data", "{r}/train.zarr",
                                                 "--out", "{r}/train-link.zarr"], 1,
         ["--out {r}/train-link.zarr", "is the --data store"]),
    Case("select-checkpoint-is-data", SELECT + ["--data", "{r}/train.zarr",
                                                "--checkpoint", "{r}/train.zarr"], 1,
         ["--checkpoint {r}/train.zarr", "is the --data store"]),
    Case("predict-out-is-data", ["predict", "--model", "{r}/model.json", "--data",
                                 "{r}/test.zarr", "--out", "{r}/test.zarr"], 1,
         ["--out {r}/test.zarr", "is the --data store"]),
    Case("predict-out-is-model", ["predict", "--model", "{r}/model.json", "--data",
                                  "{r}/test.zarr", "--out", "{r}/model.json"], 1,
         ["--out {r}/model.json", "is the --model file"]),
    Case("predict-out-symlink-to-model", ["predict", "--model", "{r}/model.json",
                                          "--data", "{r}/test.zarr",
                                          "--out", "{r}/model-link.json"], 1,
         ["--out {r}/model-link.json", "is the --model file"]),
    Case("predict-out-model-other-spelling", ["predict", "--model", "{r}/model.json",
                                              "--data", "{r}/test.zarr",
                                              "--out", "{r}/sub/../model.json"], 1,
         ["{r}/sub/../model.json", "is the --model file"]),
    Case("report-out-is-model", ["report", "{r}/model.json", "--out", "{r}/model.json"],
         1, ["--out {r}/model.json", "is the model file"]),
    Case("report-out-is-test-store", ["report", "{r}/model.json", "--test",
                                      "{r}/test.zarr", "--out", "{r}/test.zarr"], 2,
         ["--out", "test.zarr", "directory"]),
    # ---- outputs in missing folders or on folders: refused before the fit (item 7)
    Case("select-out-missing-folder", SELECT + ["--data", "{r}/train.zarr",
                                                "--out", "{r}/nodir/m.json"], 1,
         ["--out {r}/nodir/m.json", "{r}/nodir does not exist"]),
    Case("select-out-is-directory", SELECT + ["--data", "{r}/train.zarr",
                                              "--out", "{r}/plain"], 1,
         ["--out {r}/plain", "is a directory"]),
    Case("select-out-parent-is-file", SELECT + ["--data", "{r}/train.zarr",
                                                "--out", "{r}/text.txt/m.json"], 1,
         ["{r}/text.txt/m.json", "not a folder"]),
    Case("predict-out-missing-folder", ["predict", "--model", "{r}/model.json",
                                        "--data", "{r}/test.zarr",
                                        "--out", "{r}/nodir/p.tsv"], 1,
         ["--out {r}/nodir/p.tsv", "does not exist"]),
    Case("predict-out-is-directory", ["predict", "--model", "{r}/model.json",
                                      "--data", "{r}/test.zarr", "--out", "{r}/plain"], 1,
         ["--out {r}/plain", "is a directory"]),
    Case("select-out-is-a-fifo", SELECT + ["--data", "{r}/train.zarr",
                                           "--out", "{r}/pipe"], 1,
         ["--out {r}/pipe", "not a regular file"]),
    Case("demo-huge-n-samples", ["demo", "--dir", "{r}/demo", "--n-samples", "9" * 30], 2,
         ["--n-samples"]),
    Case("demo-negative-seed", ["demo", "--dir", "{r}/demo", "--seed", "-1"], 2,
         ["--seed"]),
    Case("report-out-missing-folder", ["report", "{r}/model.json",
                                       "--out", "{r}/nodir/r.html"], 1,
         ["--out {r}/nodir/r.html", "does not exist"]),
    Case("ingest-output-missing-folder", ["ingest", "{r}/train.svm",
                                          "{r}/nodir/o.zarr"], 1,
         ["OUTPUT {r}/nodir/o.zarr", "does not exist"]),
    Case("ingest-output-exists", ["ingest", "{r}/train.svm", "{r}/test.zarr"], 1,
         ["{r}/test.zarr", "already exists", "--overwrite"]),
    Case("ingest-output-not-a-store", ["ingest", "{r}/train.svm", "{r}/plain",
                                       "--overwrite"], 1,
         ["{r}/plain", "not an ultrafs store"]),
    Case("select-checkpoint-is-file", SELECT + ["--data", "{r}/train.zarr",
                                                "--checkpoint", "{r}/text.txt"], 2,
         ["--checkpoint", "text.txt"]),
    # ---- huge or out-of-range numbers (item 5, item 8 wording)
    Case("select-huge-B", SELECT + ["--data", "{r}/train.zarr",
                                    "--B", "9223372036854775807"], 2,
         ["--B", "9223372036854775807"]),
    Case("select-huge-max-iter", SELECT + ["--data", "{r}/train.zarr",
                                           "--max-iter", "99999999999999999999"], 2,
         ["--max-iter"]),
    Case("select-huge-workers", SELECT + ["--data", "{r}/train.zarr",
                                          "--workers", "9223372036854775807"], 2,
         ["--workers"]),
    Case("select-huge-block-size", SELECT + ["--data", "{r}/train.zarr",
                                             "--block-size", "2" * 30], 2,
         ["--block-size"]),
    Case("select-huge-C", SELECT + ["--data", "{r}/train.zarr", "--C", "1e308"], 1,
         ["1e+308", "too large"]),
    Case("select-C-overflowing", SELECT + ["--data", "{r}/train.zarr", "--C", "1e300"],
         1, ["1e+300", "too large", "overflows"]),
    Case("select-B-beyond-the-candidates", SELECT + ["--data", "{r}/train.zarr",
                                                     "--B", "2147483647", "--out",
                                                     "{r}/sub"], 1,
         ["sub", "directory"]),
    Case("select-C-not-a-number", SELECT + ["--data", "{r}/train.zarr", "--C", "nan"], 2,
         ["--C", "nan"]),
    Case("select-negative-timeout", SELECT + ["--data", "{r}/train.zarr",
                                              "--worker-timeout", "-1"], 2,
         ["--worker-timeout"]),
    Case("select-memory-limit-malformed", SELECT + ["--data", "{r}/train.zarr",
                                                    "--memory-limit", "8XB"], 2,
         ["--memory-limit", "8XB"]),
    Case("select-memory-limit-huge", SELECT + ["--data", "{r}/train.zarr",
                                               "--memory-limit", "9" * 400 + "GB"], 2,
         ["--memory-limit"]),
    Case("select-memory-limit-too-small", SELECT + ["--data", "{r}/train.zarr",
                                                    "--memory-limit", "1MB", "--out",
                                                    "{r}/m_small.json"], 1,
         ["memory limit of 1 MB", "before its first pass"]),
    Case("ingest-huge-memory-budget", ["ingest", "{r}/train.svm", "{r}/o.zarr",
                                       "--memory-budget", "9" * 25], 2,
         ["--memory-budget"]),
    Case("report-huge-top", ["report", "{r}/model.json", "--out", "{r}/r.html",
                             "--top", "9" * 25], 2, ["--top"]),
    # ---- group, tree and kernel inputs (issue 12)
    Case("select-groups-missing", SELECT + ["--data", "{r}/train.zarr", "--groups",
                                            "{r}/nope.txt", "--out", "{r}/g.json"], 1,
         ["{r}/nope.txt", "no such groups file"]),
    Case("select-groups-bad-line", SELECT + ["--data", "{r}/train.zarr", "--groups",
                                             "{r}/groups_bad.txt", "--out", "{r}/g.json"],
         1, ["groups_bad.txt", "line 2", "not an integer"]),
    Case("select-groups-three-fields", SELECT + ["--data", "{r}/train.zarr", "--groups",
                                                 "{r}/groups_three.txt", "--out",
                                                 "{r}/g.json"], 1,
         ["groups_three.txt", "line 1", "expected 2 integers"]),
    Case("select-groups-negative-id", SELECT + ["--data", "{r}/train.zarr", "--groups",
                                                "{r}/groups_negative.txt", "--out",
                                                "{r}/g.json"], 1,
         ["groups_negative.txt", "group ids must be >= 0"]),
    Case("select-groups-not-text", SELECT + ["--data", "{r}/train.zarr", "--groups",
                                             "{r}/groups_binary.txt", "--out",
                                             "{r}/g.json"], 1,
         ["groups_binary.txt", "not utf-8"]),
    Case("select-groups-empty", SELECT + ["--data", "{r}/train.zarr", "--groups",
                                          "{r}/groups_empty.txt", "--out", "{r}/g.json"],
         1, ["groups_empty.txt", "holds no entry"]),
    Case("select-groups-npy-floats", SELECT + ["--data", "{r}/train.zarr", "--groups",
                                               "{r}/groups_float.npy", "--out",
                                               "{r}/g.json"], 1,
         ["groups_float.npy", "must hold integers"]),
    Case("select-groups-npy-corrupt", SELECT + ["--data", "{r}/train.zarr", "--groups",
                                                "{r}/groups_bad.npy", "--out",
                                                "{r}/g.json"], 1,
         ["groups_bad.npy", "not a readable .npy"]),
    Case("select-groups-is-directory", SELECT + ["--data", "{r}/train.zarr", "--groups",
                                                 "{r}/plain", "--out", "{r}/g.json"], 2,
         ["--groups", "directory"]),
    Case("select-tree-cycle", SELECT + ["--data", "{r}/train.zarr", "--tree",
                                        "{r}/tree_cycle.txt", "--out", "{r}/g.json"], 1,
         ["tree_cycle.txt", "cycle"]),
    Case("select-tree-too-short", SELECT + ["--data", "{r}/train.zarr", "--tree",
                                            "{r}/tree_short.txt", "--out", "{r}/g.json"],
         1, ["tree_short.txt", "has 2 nodes", "40 features"]),
    Case("select-tree-feature-as-parent", SELECT + ["--data", "{r}/train.zarr", "--tree",
                                                    "{r}/tree_feature_parent.txt",
                                                    "--out", "{r}/g.json"], 1,
         ["tree_feature_parent.txt", "is a feature"]),
    Case("select-groups-and-tree", SELECT + ["--data", "{r}/train.zarr", "--groups",
                                             "{r}/groups_ok.txt", "--tree",
                                             "{r}/tree_ok.txt", "--out", "{r}/g.json"],
         1, ["groups and tree do not combine"]),
    Case("select-kernel-unknown", SELECT + ["--data", "{r}/train.zarr", "--kernel",
                                            "rbf"], 2, ["--kernel", "rbf"]),
    Case("select-kernel-negative-data", SELECT + ["--data", "{r}/train.zarr", "--kernel",
                                                  "chi2", "--out", "{r}/g.json"], 1,
         ["chi2 kernel needs values >= 0"]),
    # ---- the ℓ1-LR path and select --method l1 (issue 13)
    Case("path-data-missing", ["path", "--data", "{r}/nope.zarr"], 1,
         ["nope.zarr", "not an ultrafs store"]),
    Case("path-out-is-data", ["path", "--data", "{r}/train.zarr", "--out",
                              "{r}/train.zarr"], 1,
         ["--out {r}/train.zarr", "is the --data store"]),
    Case("path-out-missing-folder", ["path", "--data", "{r}/train.zarr", "--out",
                                     "{r}/nodir/p.json"], 1,
         ["--out {r}/nodir/p.json", "does not exist"]),
    Case("path-huge-n-lambdas", ["path", "--data", "{r}/train.zarr", "--n-lambdas",
                                 "9" * 30], 2, ["--n-lambdas"]),
    Case("path-zero-min-ratio", ["path", "--data", "{r}/train.zarr",
                                 "--lambda-min-ratio", "0"], 2, ["--lambda-min-ratio"]),
    Case("path-min-ratio-above-max", ["path", "--data", "{r}/train.zarr",
                                      "--lambda-min-ratio", "0.9", "--lambda-max-ratio",
                                      "0.5", "--out", "{r}/p.json"], 1,
         ["smallest λ/λ_max (0.9)", "largest (0.5)"]),
    Case("path-unknown-screening", ["path", "--data", "{r}/train.zarr", "--screening",
                                    "safe"], 2, ["--screening", "safe"]),
    Case("select-l1-without-features", ["select", "--method", "l1", "--data",
                                        "{r}/train.zarr"], 2,
         ["--method l1 needs --n-features-to-select"]),
    Case("select-l1-with-fgm-option", ["select", "--method", "l1",
                                       "--n-features-to-select", "3", "--B", "4", "--data",
                                       "{r}/train.zarr"], 2,
         ["--B applies to --method fgm or mslr, not --method l1"]),
    Case("select-count-without-l1", SELECT + ["--data", "{r}/train.zarr",
                                              "--n-features-to-select", "3"], 2,
         ["--n-features-to-select applies to --method l1 or gsrfs"]),
    Case("select-old-features-option", ["select", "--method", "l1", "--features", "3",
                                        "--data", "{r}/train.zarr"], 2,
         ["--features was renamed: use --n-features-to-select"]),
    Case("select-gamma-without-poly-2", SELECT + ["--data", "{r}/train.zarr",
                                                 "--gamma", "2"], 2,
         ["--gamma is a parameter of the degree-2 kernel: it applies to --poly 2"]),
    Case("select-refit-C-without-refit", SELECT + ["--data", "{r}/train.zarr",
                                                   "--refit-C", "2"], 2,
         ["--refit-C is the C of the refit: it needs --refit"]),
    Case("select-cv-without-C-auto", SELECT + ["--data", "{r}/train.zarr", "--cv", "3"],
         2, ["--cv K chooses C on K folds: it needs --C auto"]),
    Case("select-l1-more-features-than-columns",
         ["select", "--method", "l1", "--n-features-to-select", "1000", "--data",
          "{r}/train.zarr",
          "--out", "{r}/l1.json"], 1, ["1000 nonzero weights asked for, but the data "
                                       "has 40 columns"]),
    # ---- select --method mslr (issue 14)
    Case("select-mslr-with-fgm-option", ["select", "--method", "mslr", "--cv", "3",
                                         "--data", "{r}/train.zarr"], 2,
         ["--cv applies to --method fgm, not --method mslr"]),
    Case("select-mslr-C-auto", ["select", "--method", "mslr", "--C", "auto", "--data",
                                "{r}/train.zarr"], 2,
         ["--C must be a number > 0 or 'scale', got 'auto'"]),
    Case("select-mslr-coef0-without-poly-2", ["select", "--method", "mslr", "--data",
                                              "{r}/train.zarr", "--coef0", "0"], 2,
         ["--coef0 is a parameter of the degree-2 kernel: it applies to --poly 2"]),
    Case("select-old-retrain-C", ["select", "--method", "mslr", "--data",
                                  "{r}/train.zarr", "--retrain-C", "3"], 2,
         ["--retrain-C was renamed: use --refit-C"]),
    Case("select-old-no-retrain", ["select", "--method", "mslr", "--data",
                                   "{r}/train.zarr", "--no-retrain"], 2,
         ["--no-retrain was renamed: use --no-refit"]),
    Case("select-mslr-negative-refit-C", ["select", "--method", "mslr", "--data",
                                          "{r}/train.zarr", "--refit-C", "-1"], 2,
         ["--refit-C", "-1"]),
    Case("select-mslr-refit-C-and-no-refit",
         ["select", "--method", "mslr", "--data", "{r}/train.zarr", "--refit-C", "2",
          "--no-refit"], 2, ["--refit-C is the C of the refit: it needs --refit"]),
    Case("select-mslr-out-is-data", ["select", "--method", "mslr", "--data",
                                     "{r}/train.zarr", "--out", "{r}/train.zarr"], 1,
         ["--out {r}/train.zarr", "is the --data store"]),
    Case("select-mslr-data-missing", ["select", "--method", "mslr", "--data",
                                      "{r}/nope.zarr", "--out", "{r}/m.json"], 1,
         ["nope.zarr", "not an ultrafs store"]),
    Case("select-mslr-overflowing-C", ["select", "--method", "mslr", "--data",
                                       "{r}/train.zarr", "--C", "1e308", "--out",
                                       "{r}/m.json"], 1,
         ["C = 1e+308 is too large for this data"]),
    # ---- select --method sklr (issue 15)
    Case("select-sklr-with-fgm-option", ["select", "--method", "sklr", "--B", "4",
                                         "--data", "{r}/train.zarr"], 2,
         ["--B applies to --method fgm or mslr, not --method sklr"]),
    Case("select-solver-without-sklr", SELECT + ["--data", "{r}/train.zarr",
                                                 "--solver", "cgd"], 2,
         ["--solver applies to --method sklr"]),
    Case("select-sklr-negative-sigma", ["select", "--method", "sklr", "--sigma", "-1",
                                        "--data", "{r}/train.zarr"], 2,
         ["--sigma", "-1"]),
    Case("select-sklr-rbf-with-n-components",
         ["select", "--method", "sklr", "--basis", "rbf", "--n-components", "9",
          "--data", "{r}/train.zarr"], 2,
         ["--n-components is the number of random features: it applies to --basis rff"]),
    Case("select-sklr-sgd-two-stage",
         ["select", "--method", "sklr", "--solver", "sgd", "--two-stage", "0.1",
          "--data", "{r}/train.zarr"], 2,
         ["--two-stage runs with --solver fista, mfista or cgd"]),
    Case("select-sklr-lambda-ratio-above-one",
         ["select", "--method", "sklr", "--lambda-ratio", "2", "--data",
          "{r}/train.zarr"], 2, ["--lambda-ratio", "2"]),
    Case("select-old-lam-ratio",
         ["select", "--method", "sklr", "--lam-ratio", "0.2", "--data",
          "{r}/train.zarr"], 2, ["--lam-ratio was renamed: use --lambda-ratio"]),
    Case("select-sklr-out-is-data", ["select", "--method", "sklr", "--data",
                                     "{r}/train.zarr", "--out", "{r}/train.zarr"], 1,
         ["--out {r}/train.zarr", "is the --data store"]),
    Case("select-sklr-data-missing", ["select", "--method", "sklr", "--data",
                                      "{r}/nope.zarr", "--out", "{r}/m.json"], 1,
         ["nope.zarr", "not an ultrafs store"]),
    # ---- select --method gsrfs (issue 16)
    Case("select-gsrfs-with-fgm-option", ["select", "--method", "gsrfs", "--B", "4",
                                          "--data", "{r}/train.zarr"], 2,
         ["--B applies to --method fgm or mslr, not --method gsrfs"]),
    Case("select-gsrfs-with-sklr-option", ["select", "--method", "gsrfs", "--solver",
                                           "cgd", "--data", "{r}/train.zarr"], 2,
         ["--solver applies to --method sklr, not --method gsrfs"]),
    Case("select-r-without-gsrfs", SELECT + ["--data", "{r}/train.zarr", "--r", "1"], 2,
         ["--r applies to --method gsrfs"]),
    Case("select-gsrfs-r-above-two", ["select", "--method", "gsrfs", "--r", "3",
                                      "--data", "{r}/train.zarr"], 2, ["--r", "3"]),
    Case("select-gsrfs-p-zero", ["select", "--method", "gsrfs", "--p", "0",
                                 "--data", "{r}/train.zarr"], 2, ["--p", "0"]),
    Case("select-gsrfs-lambda-negative", ["select", "--method", "gsrfs", "--lambda",
                                          "-1", "--data", "{r}/train.zarr"], 2,
         ["--lambda", "-1"]),
    Case("select-gsrfs-candidates-text", ["select", "--method", "gsrfs", "--candidates",
                                          "many", "--data", "{r}/train.zarr"], 2,
         ["--candidates", "'many' is not an integer >= 1 or 'auto'"]),
    Case("select-gsrfs-scaled-two-stage",
         ["select", "--method", "gsrfs", "--candidates", "10", "--scale", "std",
          "--data", "{r}/train.zarr", "--out", "{r}/g.json"], 1,
         ["two-stage mode", "screens the stored columns"]),
    Case("select-gsrfs-out-is-data", ["select", "--method", "gsrfs", "--data",
                                      "{r}/train.zarr", "--out", "{r}/train.zarr"], 1,
         ["--out {r}/train.zarr", "is the --data store"]),
    Case("select-gsrfs-data-missing", ["select", "--method", "gsrfs", "--data",
                                       "{r}/nope.zarr", "--out", "{r}/m.json"], 1,
         ["nope.zarr", "not an ultrafs store"]),
    Case("select-kernel-with-poly", SELECT + ["--data", "{r}/train.zarr", "--kernel",
                                              "hik", "--poly", "2", "--out",
                                              "{r}/g.json"], 1,
         ["do not combine with poly=2"]),
]


def _fill(items, r):
    return [str(item).replace("{r}", str(r)) for item in items]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_case(root, case):
    before = files_under(root)
    result = invoke(_fill(case.argv, root))
    line = error_line(result.exit_code, result.stderr, case.code)
    assert isinstance(result.exception, SystemExit), result.exception
    for fragment in _fill(case.fragments, root):
        assert fragment.lower() in line.lower(), line
    assert files_under(root) == before


def test_model_on_unrelated_data_in_python(root):
    """Model.evaluate_store / decision_function_store refuse data holding
    none of the model's features; some absent ones still only warn."""
    from ultrafs.errors import UltraFSWarning
    from ultrafs.model import Model, WrongDataError
    from ultrafs.store import open_store

    model = Model.load(root / "model.json")
    unrelated = open_store(root / "unrelated.zarr")
    with pytest.raises(WrongDataError, match=r"the model: none of its \d+ features is "
                       r"a column of .*unrelated.zarr \(ids 0\.\.0\): wrong data"):
        model.evaluate_store(unrelated)
    with pytest.raises(WrongDataError):
        model.decision_function_store(unrelated)
    with pytest.raises(WrongDataError):          # judged by the whole model
        model.truncated(1).evaluate_store(unrelated)
    # one feature beyond the store's ids: a warning, the rest predicts
    partial = Model(model.features + [10_000], np.append(model.coef, 1.0),
                    model.intercept, [0, len(model.features) + 1], model.loss,
                    model.classes)
    with pytest.warns(UltraFSWarning, match="1 model feature.* absent from the store"):
        metrics = partial.evaluate_store(open_store(root / "test.zarr"))
    assert metrics["accuracy"] == model.evaluate_store(open_store(root / "test.zarr"))[
        "accuracy"]


def test_out_directory_is_never_replaced(root, tmp_path):
    """``--out DIR`` once replaced the whole folder with the model file."""
    from ultrafs.atomic import write_text_atomic

    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "precious.txt").write_text("data\n")
    with pytest.raises(IsADirectoryError):
        write_text_atomic("{}", folder)
    assert (folder / "precious.txt").read_text() == "data\n"
    assert leftovers(tmp_path) == []


def test_cli_wording():
    assert cli_message("x: got np.float64(0.5) and np.int64(3)") == "x: got 0.5 and 3"
    assert cli_message("p: already exists (use overwrite=True to replace it)") == \
        "p: already exists (use --overwrite to replace it)"
    assert cli_message("first line\nsecond line") == "first line"


# ------------------------------------------------------------ umask (item 8)
def test_outputs_follow_the_umask(root, tmp_path):
    previous = os.umask(0o027)
    try:
        out = tmp_path / "model.json"
        checkpoint = tmp_path / "ck"
        result = invoke(SELECT + ["--data", root / "train.zarr", "--out", out,
                                  "--checkpoint", checkpoint])
        assert result.exit_code == 0, result.output
        predictions = tmp_path / "p.tsv"
        result = invoke(["predict", "--model", out, "--data", root / "test.zarr",
                         "--out", predictions])
        assert result.exit_code == 0, result.output
    finally:
        os.umask(previous)
    for path in [out, predictions] + sorted(checkpoint.iterdir()):
        assert (path.stat().st_mode & 0o777) == 0o640, path
    assert (checkpoint.stat().st_mode & 0o777) == 0o750


# -------------------------------------------------- checkpoint lock (item 8)
def test_checkpoint_folder_lock(root, tmp_path):
    from ultrafs.locks import folder_lock

    checkpoint = tmp_path / "ck"
    argv = SELECT + ["--data", root / "train.zarr", "--checkpoint", checkpoint,
                     "--out", tmp_path / "m.json"]
    with folder_lock(checkpoint):
        before = files_under(tmp_path)
        result = invoke(argv)
        line = error_line(result.exit_code, result.stderr, 1)
        assert str(checkpoint) in line and "in use" in line
        assert files_under(tmp_path) == before
    result = invoke(argv)
    assert result.exit_code == 0, result.output


def test_lock_of_a_killed_run_does_not_block(root, tmp_path):
    checkpoint = tmp_path / "ck"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom ultrafs.locks import folder_lock\n"
         f"with folder_lock({str(checkpoint)!r}):\n"
         "    print('held', flush=True)\n    time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with open(checkpoint / ".ultrafs.lock") as fh, pytest.raises(BlockingIOError):
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        holder.kill()
        holder.wait()
    result = invoke(SELECT + ["--data", root / "train.zarr", "--checkpoint", checkpoint,
                              "--out", tmp_path / "m.json"])
    assert result.exit_code == 0, result.output


# ------------------------------------------------------- SIGTERM (item 8)
def _write_large_libsvm(path, n_rows=100_000, k=20):
    rng = np.random.default_rng(0)
    cols = rng.integers(1, 5000, (n_rows, k)) + np.arange(k) * 5000
    labels = rng.choice(["-1", "1"], n_rows)
    with open(path, "w") as fh:
        for start in range(0, n_rows, 10_000):
            fh.write("".join(
                labels[start + i] + " " + " ".join(f"{c}:1" for c in row) + "\n"
                for i, row in enumerate(cols[start:start + 10_000])))


def test_sigterm_during_ingest_leaves_nothing(tmp_path):
    source = tmp_path / "big.svm"
    _write_large_libsvm(source)
    output = tmp_path / "big.zarr"
    process = subprocess.Popen(CLI + ["ingest", str(source), str(output),
                                      "--memory-budget", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not any(p.name.startswith("big.zarr.runs-") for p in tmp_path.iterdir()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.3)      # inside the spill loop
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    line = error_line(process.returncode, stderr, 143)
    assert "SIGTERM" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.svm"]


# ------------------------------------- small file systems (items 5 and 7)
@pytest.fixture
def small_fs(tmp_path):
    """A 256 KiB tmpfs; skipped where mounting is not allowed."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs",
                           str(mount_point)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill_up(folder, room=0):
    """Write a file until the file system is full, then free ``room`` bytes."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
        if room:
            os.ftruncate(fd, max(os.fstat(fd).st_size - room, 0))
    finally:
        os.close(fd)


def _full_disk_cases(r, fs):
    return {
        "ingest": ["ingest", r / "train.svm", fs / "o.zarr"],
        "select --out": SELECT + ["--data", r / "train.zarr", "--out", fs / "m.json"],
        "select --checkpoint": SELECT + ["--data", r / "train.zarr",
                                         "--checkpoint", fs / "ck",
                                         "--out", r / "sub" / "never.json"],
        "predict --out": ["predict", "--model", r / "model.json", "--data",
                          r / "test.zarr", "--out", fs / "p.tsv"],
        "report --out": ["report", r / "model.json", "--out", fs / "r.html"],
    }


@pytest.mark.parametrize("command", ["ingest", "select --out", "select --checkpoint",
                                     "predict --out", "report --out"])
def test_disk_full(root, small_fs, command):
    argv = _full_disk_cases(root, small_fs)[command]
    _fill_up(small_fs)
    before = files_under(root, small_fs)
    result = invoke(argv)
    line = error_line(result.exit_code, result.stderr, 1)
    assert "No space left on device" in line
    user_path = {"ingest": "o.zarr", "select --out": "m.json",
                 "select --checkpoint": "ck", "predict --out": "p.tsv",
                 "report --out": "r.html"}[command]
    assert str(small_fs / user_path) in line
    assert ".tmp-" not in line and ".runs-" not in line
    assert files_under(root, small_fs) == before


@pytest.mark.parametrize("room", [8 * 1024, 32 * 1024])
def test_disk_full_while_writing_a_store(root, small_fs, room):
    """The store folder is half written when the disk fills up."""
    _fill_up(small_fs, room)
    before = files_under(root, small_fs)
    result = invoke(["ingest", root / "train.svm", small_fs / "o.zarr",
                     "--block-nnz", 500])
    line = error_line(result.exit_code, result.stderr, 1)
    assert "No space left on device" in line and str(small_fs / "o.zarr") in line
    assert files_under(root, small_fs) == before


def test_read_only_folder(root, small_fs):
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    for argv, option in [
            (SELECT + ["--data", root / "train.zarr", "--out", small_fs / "m.json"],
             "--out"),
            (["ingest", root / "train.svm", small_fs / "o.zarr"], "OUTPUT"),
            (SELECT + ["--data", root / "train.zarr", "--checkpoint", small_fs / "ck"],
             "--checkpoint")]:
        result = invoke(argv)
        line = error_line(result.exit_code, result.stderr, 1)
        assert option in line and str(small_fs) in line and "not writable" in line
    assert os.listdir(small_fs) == []


def test_fifo_inside_a_parquet_long_store(root, tmp_path):
    store = tmp_path / "fifo.store"
    assert invoke(["ingest", root / "train.svm", store, "--format", "parquet"]).exit_code == 0
    part = next(p for p in sorted(store.iterdir()) if p.name.startswith("part-"))
    part.unlink()
    os.mkfifo(part)
    done = subprocess.run([sys.executable, "-m", "ultrafs.cli", "select", "--data",
                           str(store), "--B", "3", "--out", str(tmp_path / "m.json")],
                          capture_output=True, text=True, timeout=120)
    line = error_line(done.returncode, done.stderr, 1)
    assert str(store) in line and "not a regular file" in line
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("command", ["select", "info", "predict"])
def test_fifo_inside_a_store(root, tmp_path, command):
    """A chunk replaced by a FIFO is refused on open: one line, no hang.

    Run in a subprocess with a deadline, so that a regression fails the
    test instead of hanging the suite.
    """
    import shutil

    store = tmp_path / "fifo.zarr"
    shutil.copytree(root / "train.zarr", store)
    chunk = next(p for p in sorted((store / "indices" / "c").iterdir()))
    chunk.unlink()
    os.mkfifo(chunk)
    argv = {"select": ["select", "--data", str(store), "--B", "3", "--out",
                       str(tmp_path / "m.json")],
            "info": ["info", str(store)],
            "predict": ["predict", "--model", str(root / "model.json"), "--data",
                        str(store), "--out", str(tmp_path / "p.tsv")]}[command]
    done = subprocess.run([sys.executable, "-m", "ultrafs.cli", *argv],
                          capture_output=True, text=True, timeout=120)
    line = error_line(done.returncode, done.stderr, 1)
    assert str(store) in line and "not a regular file" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.zarr"]


# ---------------------------------------------- bounded waits (item 6)
@pytest.fixture
def silent_server():
    """A TCP address that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_scheduler_that_never_answers(root, silent_server, tmp_path):
    started = time.monotonic()
    result = invoke(SELECT + ["--data", root / "train.zarr", "--scheduler", silent_server,
                              "--connect-timeout", "1", "--out", tmp_path / "m.json"])
    elapsed = time.monotonic() - started
    line = error_line(result.exit_code, result.stderr, 1)
    assert silent_server in line and "did not answer within 1 s" in line
    assert elapsed < 10
    assert list(tmp_path.iterdir()) == []


def test_scheduler_address_refused(root, tmp_path):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    probe.close()
    result = invoke(SELECT + ["--data", root / "train.zarr", "--scheduler", address,
                              "--connect-timeout", "1", "--out", tmp_path / "m.json"])
    line = error_line(result.exit_code, result.stderr, 1)
    assert address in line and "cannot reach" in line
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def empty_cluster():
    """A real dask.distributed scheduler (TCP) without any worker."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=0, processes=False, protocol="tcp",
                           dashboard_address=":0", silence_logs=50)
    yield cluster
    cluster.close()


def test_no_worker_left(root, empty_cluster, tmp_path):
    started = time.monotonic()
    result = invoke(SELECT + ["--data", root / "train.zarr",
                              "--scheduler", empty_cluster.scheduler_address,
                              "--worker-timeout", "1", "--out", tmp_path / "m.json"])
    line = error_line(result.exit_code, result.stderr, 1)
    assert "no dask worker at" in line and empty_cluster.scheduler_address in line
    assert time.monotonic() - started < 20
    assert list(tmp_path.iterdir()) == []


def test_every_worker_lost_mid_pass():
    """The pass waits on a task, its only worker closes: one ClusterError."""
    import dask
    from distributed import Client, LocalCluster

    from ultrafs.errors import ClusterError
    from ultrafs.scoring.scheduling import WORKER_TIMEOUT_KEY, compute

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0", silence_logs=50) as cluster, \
            Client(cluster) as client:
        work = dask.delayed(time.sleep, pure=False)(2)
        workers = list(cluster.workers.values())

        def lose_workers():
            time.sleep(0.5)
            for worker in workers:
                client.sync(worker.close)

        killer = threading.Thread(target=lose_workers)
        killer.start()
        started = time.monotonic()
        with dask.config.set({WORKER_TIMEOUT_KEY: 1}), \
                pytest.raises(ClusterError, match="no dask worker at"):
            compute(work, client)
        killer.join()
        assert time.monotonic() - started < 15


def test_scheduler_dies_mid_run(root, empty_cluster, tmp_path):
    """The scheduler goes away while a pass waits: one line, no traceback."""
    process = subprocess.Popen(
        CLI + SELECT + ["--data", str(root / "train.zarr"),
                        "--scheduler", empty_cluster.scheduler_address,
                        "--connect-timeout", "2", "--worker-timeout", "30",
                        "--out", str(tmp_path / "m.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not empty_cluster.scheduler.tasks:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    empty_cluster.close()
    _, stderr = process.communicate(timeout=60)
    line = error_line(process.returncode, stderr, 1)
    assert "dask scheduler" in line and empty_cluster.scheduler_address in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("link", ["__cause__", "__context__"])
def test_sigterm_inside_a_compiled_kernel_is_one_line(link, depth, capsys):
    """SIGTERM during a numba call surfaces as a SystemError chained to the
    Terminated, through more SystemErrors when numba was loading the kernel
    from its cache (``_numba_unpickle`` inside the dispatcher, seen in a
    parallel CI run of test_sigterm_during_ingest_leaves_nothing): still the
    one SIGTERM line and status 143; other SystemErrors propagate."""
    from ultrafs.cli.errors import one_line_errors
    from ultrafs.signals import SIGTERM_EXIT_STATUS, Terminated

    def inside_kernels(error):
        """``error`` wrapped in ``depth`` SystemErrors, each chained by ``link``."""
        for _ in range(depth):
            outer = SystemError("CPUDispatcher(...) returned a result with an "
                                "exception set")
            setattr(outer, link, error)
            error = outer
        return error

    def kernel_interrupted():
        raise inside_kernels(Terminated("received signal 15"))

    with pytest.raises(SystemExit) as stop:
        one_line_errors(kernel_interrupted)()
    assert stop.value.code == SIGTERM_EXIT_STATUS
    assert capsys.readouterr().err.count("Error: terminated by SIGTERM") == 1

    def plain_system_error():
        raise SystemError("something else")

    with pytest.raises(SystemError):
        one_line_errors(plain_system_error)()

    def kernel_ctrl_c():
        raise inside_kernels(KeyboardInterrupt())

    # Ctrl-C inside a kernel is a plain KeyboardInterrupt again (click then
    # prints its "Aborted!"), not a SystemError traceback
    with pytest.raises(KeyboardInterrupt) as interrupted:
        one_line_errors(kernel_ctrl_c)()
    assert type(interrupted.value) is KeyboardInterrupt
