"""Checkpoint / resume of the outer loop, including a SIGKILLed process."""

import json
import re
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from ultrafs.api import select
from ultrafs.methods.checkpoint import CheckpointMismatchError
from ultrafs.cli import main
from ultrafs.store.writers.zarr_writer import write_store
from ultrafs.datasets.planted import make_planted_problem

RESULT_KEYS = ("features", "coef", "intercept", "batches", "stop_reason")


@pytest.fixture(scope="module")
def train_store(tmp_path_factory):
    problem = make_planted_problem(n_samples=3000, n_features=3000, n_relevant=60,
                                   n_test=10, seed=4)
    path = tmp_path_factory.mktemp("ckpt") / "train.zarr"
    write_store(path, problem.X_train, problem.y_train)
    return path


def same_model(a, b):
    return all(a[k] == b[k] for k in RESULT_KEYS) and \
        [h["objective"] for h in a["history"]] == [h["objective"] for h in b["history"]]


def test_resume_in_process_equals_uninterrupted(train_store, tmp_path):
    full = select(str(train_store), B=10, max_iter=5, tol=0.0).to_dict()
    ckpt = tmp_path / "ckpt"
    select(str(train_store), B=10, max_iter=2, tol=0.0, checkpoint=ckpt)
    state = json.loads((ckpt / "checkpoint.json").read_text())
    assert state["iteration"] == 2
    resumed = select(str(train_store), B=10, max_iter=5, tol=0.0, checkpoint=ckpt,
                     resume=True).to_dict()
    assert same_model(full, resumed)
    assert len(list(ckpt.glob("decision-*.npy"))) == 1


def test_resume_of_a_run_that_held_its_budget_returns_it(train_store, tmp_path):
    """A run stopped on its budget (B x max_iter nonzero features), resumed
    with the same max_iter, ends at once with the same model (it used to ask
    the next pass for 0 candidates: "k must be >= 1, got 0")."""
    ckpt = tmp_path / "ckpt"
    first = select(str(train_store), B=5, max_iter=3, tol=0.0, checkpoint=ckpt).to_dict()
    assert first["stop_reason"].startswith("holds the budget")
    resumed = select(str(train_store), B=5, max_iter=3, tol=0.0, checkpoint=ckpt,
                     resume=True).to_dict()
    assert same_model(first, resumed)


def test_resume_says_so_in_one_line(train_store, tmp_path, caplog):
    """--resume: one stderr line names the checkpoint, its iteration and size;
    in Python the same line goes to the ``ultrafs.resume`` logger."""
    ckpt = tmp_path / "ckpt"
    args = ["select", "--data", str(train_store), "--B", "10", "--tol", "0",
            "--checkpoint", str(ckpt)]
    first = CliRunner().invoke(main, [*args, "--max-iter", "2"])
    assert first.exit_code == 0, first.output
    assert "resuming" not in first.stderr
    resumed = CliRunner().invoke(main, [*args, "--max-iter", "3", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    lines = [line for line in resumed.stderr.splitlines() if "resuming" in line]
    assert lines == [f"resuming from {ckpt} after iteration 2 (20 features)"]
    caplog.clear()
    with caplog.at_level("INFO", logger="ultrafs.resume"):
        select(str(train_store), B=10, max_iter=4, tol=0.0, checkpoint=ckpt, resume=True)
    assert [r.getMessage() for r in caplog.records if r.name == "ultrafs.resume"] == \
        [f"resuming from {ckpt} after iteration 3 (30 features)"]


def test_checkpoint_refuses_other_data_or_parameters(train_store, tmp_path):
    ckpt = tmp_path / "ckpt"
    select(str(train_store), B=10, C=10.0, max_iter=1, checkpoint=ckpt)
    with pytest.raises(CheckpointMismatchError, match="C=10.0, now 5.0"):
        select(str(train_store), B=10, C=5.0, max_iter=2, checkpoint=ckpt, resume=True)
    other = tmp_path / "other.zarr"
    rng = np.random.default_rng(0)
    write_store(other, rng.standard_normal((50, 20)), np.arange(50) % 2)
    with pytest.raises(CheckpointMismatchError, match="different data"):
        select(str(other), B=10, max_iter=2, checkpoint=ckpt, resume=True)
    result = CliRunner().invoke(main, ["select", "--data", str(other), "--B", "10",
                                       "--checkpoint", str(ckpt), "--resume"])
    assert result.exit_code == 1 and "different data" in result.output
    assert "Traceback" not in result.output


def test_sigkill_after_second_iteration_then_resume(train_store, tmp_path):
    """Kill -9 a `select` after its 2nd iteration; --resume ends with the same model."""
    args = ["--data", str(train_store), "--B", "10", "--max-iter", "6", "--tol", "0",
            "--progress"]
    reference = tmp_path / "reference.json"
    subprocess.run([sys.executable, "-m", "ultrafs.cli", "select", *args,
                    "--out", str(reference)], check=True, capture_output=True)
    ckpt = tmp_path / "ckpt"
    killed_out = tmp_path / "killed.json"
    proc = subprocess.Popen([sys.executable, "-m", "ultrafs.cli", "select", *args,
                             "--checkpoint", str(ckpt), "--out", str(killed_out)],
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        # the summary of a finished iteration (its checkpoint is written)
        if re.match(r"iteration 2 of \d+: \d+ features", line.lstrip("\r")):
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not killed_out.exists()                    # nothing half-written
    state = json.loads((ckpt / "checkpoint.json").read_text())
    assert 2 <= state["iteration"] < 6
    resumed_out = tmp_path / "resumed.json"
    subprocess.run([sys.executable, "-m", "ultrafs.cli", "select", *args,
                    "--checkpoint", str(ckpt), "--resume", "--out", str(resumed_out)],
                   check=True, capture_output=True)
    assert same_model(json.loads(reference.read_text()),
                      json.loads(resumed_out.read_text()))


def test_unreachable_scheduler_fails_fast(train_store, monkeypatch):
    from ultrafs.cli import scheduler

    monkeypatch.setattr(scheduler, "CONNECT_TIMEOUT_S", 1.0)
    result = CliRunner().invoke(main, ["select", "--data", str(train_store),
                                       "--scheduler", "tcp://127.0.0.1:9"])
    assert result.exit_code == 1
    assert "cannot reach the dask scheduler at tcp://127.0.0.1:9" in result.output
    result = CliRunner().invoke(main, ["select", "--data", str(train_store)],
                                env={"ULTRAFS_SCHEDULER": "tcp://127.0.0.1:9"})
    assert "cannot reach the dask scheduler" in result.output
