"""The search of C="auto" in the checkpoint: kept after every grid point,
resumed to the same choice and the same model, refused when it is another
search's or forged; and its progress phase.

Runs are interrupted deterministically: the real journal's commit is
wrapped so that the run raises right after grid point k is committed (what
a kill at that moment leaves on disk).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ultrafs.api import select
from ultrafs.cli import main
from ultrafs.datasets.planted import make_planted_problem
from ultrafs.methods import c_choice
from ultrafs.methods.c_search_checkpoint import SEARCH_FILE, SearchJournal
from ultrafs.methods.checkpoint import CheckpointMismatchError
from ultrafs.store.writers.zarr_writer import write_store

OPTIONS = {"C": "auto", "B": 5, "max_iter": 3, "tol": 0.0}
CLI = ["--C", "auto", "--B", "5", "--max-iter", "3", "--tol", "0"]


#: the CLI's lock of the checkpoint folder (cli/select.py: folder_lock)
LOCK = ".ultrafs.lock"


class Interrupted(Exception):
    """Raised right after a chosen grid point is committed."""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    problem = make_planted_problem(n_samples=300, n_features=120, n_relevant=10,
                                   n_test=10, seed=3)
    path = tmp_path_factory.mktemp("csearch") / "train.zarr"
    write_store(path, problem.X_train, problem.y_train)
    return str(path)


@pytest.fixture(scope="module")
def small_C_store(tmp_path_factory):
    """Labels independent of the rows, 70% of one class: the best C lies
    below the default grid, which the search widens."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 200))
    y = np.where(rng.permutation(60) < 42, 1, -1)
    path = tmp_path_factory.mktemp("csearch-small") / "small.zarr"
    write_store(path, X, y)
    return str(path)


def interrupt_after(monkeypatch, point):
    """Make the run raise right after committing its ``point``-th grid point."""
    real = SearchJournal.commit
    done = {"points": 0}

    def commit(self, C, points):
        real(self, C, points)
        done["points"] += 1
        if done["points"] == point:
            raise Interrupted(point)

    monkeypatch.setattr(SearchJournal, "commit", commit)
    return lambda: monkeypatch.setattr(SearchJournal, "commit", real)


def fitted_Cs(monkeypatch):
    """The Cs the held-out scorer fits (every fit goes through ``prefit``)."""
    real = c_choice.HeldOutScorer.prefit
    fitted = []

    def prefit(self, folds, Cs):
        fitted.extend(float(C) for C in Cs)
        return real(self, folds, Cs)

    monkeypatch.setattr(c_choice.HeldOutScorer, "prefit", prefit)
    return fitted


def without_seconds(model):
    """A model's dict without what measures time (or names the command), and
    without the fingerprint of its content (which covers the timings)."""
    model = json.loads(json.dumps(model))
    model.pop("fingerprint", None)
    model["params"].pop("command", None)
    for point in model["params"]["validation"]["points"]:
        point.pop("seconds")
    for record in model["history"]:
        for name in [n for n in record if "seconds" in n or "rss" in n]:
            record.pop(name)
    return model


def interrupted_then_resumed(monkeypatch, data, directory, point, **options):
    restore = interrupt_after(monkeypatch, point)
    with pytest.raises(Interrupted):
        select(data, checkpoint=directory, **options)
    restore()
    state = json.loads((directory / SEARCH_FILE).read_text())
    assert len(state["visits"]) == point
    assert not (directory / "checkpoint.json").exists()     # the final fit never began
    fitted = fitted_Cs(monkeypatch)
    model = select(data, checkpoint=directory, resume=True, **options).to_dict()
    # the recorded points are replayed, never fitted again
    assert not {visit["C"] for visit in state["visits"]} & set(fitted)
    return model, state


@pytest.mark.parametrize("refit", [False, True], ids=["plain", "refit"])
@pytest.mark.parametrize("point", [1, 2, 3])
def test_interrupted_search_resumes_to_the_same_model(store, tmp_path, monkeypatch,
                                                      caplog, refit, point):
    options = {**OPTIONS, "refit": refit}
    reference = select(store, **options).to_dict()
    directory = tmp_path / "ckpt"
    with caplog.at_level("INFO", logger="ultrafs.resume"):
        resumed, state = interrupted_then_resumed(monkeypatch, store, directory, point,
                                                  **options)
    assert without_seconds(resumed) == without_seconds(reference)       # bit for bit
    assert resumed["params"]["C"] == reference["params"]["C"]
    Cs = ", ".join(f"{visit['C']:g}" for visit in state["visits"])
    plural = "s" if point != 1 else ""
    assert [r.getMessage() for r in caplog.records if r.name == "ultrafs.resume"] == \
        [f"resuming the choice of C from {directory} after {point} grid point{plural} "
         f"(C {Cs})"]
    # the recorded points keep their measured seconds
    kept = {(p["C"], p["refit_C"]): p["seconds"]
            for visit in state["visits"] for p in visit["points"]}
    for p in resumed["params"]["validation"]["points"]:
        if (p["C"], p["refit_C"]) in kept:
            assert p["seconds"] == kept[p["C"], p["refit_C"]]


def test_three_classes_with_class_weights_resume_to_the_same_model(tmp_path,
                                                                    monkeypatch):
    """K classes (a bias per class in the kept warm starts) and weighted rows."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((240, 60))
    y = np.digitize(X[:, 0] - X[:, 1] + 0.3 * rng.standard_normal(240), [-0.5, 0.5])
    path = tmp_path / "three.zarr"
    write_store(path, X, y)
    options = {**OPTIONS, "refit": True, "cv": 3, "class_weight": "balanced"}
    reference = select(str(path), **options).to_dict()
    resumed, state = interrupted_then_resumed(monkeypatch, str(path),
                                              tmp_path / "ckpt", 2, **options)
    entry = next(e for fold in state["solutions"] for e in fold)
    assert entry["n_outputs"] == 3 and len(entry["bias"]) == 3
    assert without_seconds(resumed) == without_seconds(reference)
    with pytest.raises(CheckpointMismatchError, match="class_weight"):
        select(str(path), checkpoint=tmp_path / "ckpt", resume=True,
               **{**options, "class_weight": None})


def test_folds_in_threads_resume_to_the_same_model(store, tmp_path, monkeypatch):
    """Folds fitted in threads (one prefit per fold) keep and restore each
    fold's warm starts as the lockstep of all folds does."""
    monkeypatch.setattr(c_choice, "THREADED_FOLDS_MIN_NNZ", 0)
    options = {**OPTIONS, "refit": True, "num_workers": 3}
    from ultrafs.store import open_store

    assert c_choice.fold_threads(open_store(store), 5, {
        "scheduler": None, "num_workers": 3}) == 3
    reference = select(store, **options).to_dict()
    resumed, _ = interrupted_then_resumed(monkeypatch, store, tmp_path / "ckpt", 2,
                                          **options)
    assert without_seconds(resumed) == without_seconds(reference)
    serial = select(store, **{**options, "num_workers": 1}).to_dict()
    assert without_seconds(resumed) == without_seconds(serial)


#: a `select` that blocks right after committing its second grid point (the
#: parent kills it there: no timing involved)
BLOCK_AFTER_SECOND_POINT = """
import sys, time
from ultrafs.methods.c_search_checkpoint import SearchJournal
real = SearchJournal.commit
def commit(self, C, points):
    real(self, C, points)
    if len(self.visits) == 2:
        print("committed 2", file=sys.stderr, flush=True)
        while True:
            time.sleep(60)
SearchJournal.commit = commit
from ultrafs.cli import main
main(sys.argv[1:], prog_name="ultrafs")
"""


def test_sigkill_in_the_search_then_resume(store, tmp_path):
    """Kill -9 a `select --C auto` after its 2nd grid point; --resume ends with
    the same model as an uninterrupted run, and says so."""
    args = ["select", "--data", store, *CLI, "--refit", "--progress"]
    reference = tmp_path / "reference.json"
    CliRunner().invoke(main, [*args, "--out", str(reference)], catch_exceptions=False)
    directory = tmp_path / "ckpt"
    killed_out = tmp_path / "killed.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", BLOCK_AFTER_SECOND_POINT, *args,
                              "--checkpoint", str(directory), "--out", str(killed_out)],
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        for line in child.stderr:
            if line.strip() == "committed 2":
                os.kill(child.pid, signal.SIGKILL)
                break
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert not killed_out.exists()
    assert sorted(os.listdir(directory)) == [LOCK, SEARCH_FILE]     # no temporary
    assert len(json.loads((directory / SEARCH_FILE).read_text())["visits"]) == 2
    resumed_out = tmp_path / "resumed.json"
    result = CliRunner().invoke(main, [*args, "--checkpoint", str(directory),
                                       "--resume", "--out", str(resumed_out)])
    assert result.exit_code == 0, result.output
    notices = [line for line in result.stderr.splitlines() if "resuming" in line]
    assert len(notices) == 1 and notices[0].startswith(
        f"resuming the choice of C from {directory} after 2 grid points (C "), notices
    assert without_seconds(json.loads(resumed_out.read_text())) == \
        without_seconds(json.loads(reference.read_text()))


def test_a_checkpoint_does_not_change_the_search(store, tmp_path):
    """With a checkpoint and without, the same curve and the same model."""
    options = {**OPTIONS, "refit": True}
    plain = select(store, **options).to_dict()
    kept = select(store, checkpoint=tmp_path / "ckpt", **options).to_dict()
    assert without_seconds(kept) == without_seconds(plain)
    state = json.loads((tmp_path / "ckpt" / SEARCH_FILE).read_text())
    assert [v["C"] for v in state["visits"]] == sorted(
        {p["C"] for p in plain["params"]["validation"]["points"]})


def test_the_widened_grid_resumes(small_C_store, tmp_path, monkeypatch):
    options = {**OPTIONS, "max_iter": 2, "cv": 3}
    reference = select(small_C_store, **options).to_dict()
    curve = reference["params"]["validation"]
    assert curve["widened"], "the search must widen its grid for this test"
    visited = len({p["C"] for p in curve["points"]})
    # stop right after the first widened point (the walk goes below the grid)
    first_widened = visited - len(curve["widened"]) + 1
    directory = tmp_path / "ckpt"
    resumed, state = interrupted_then_resumed(monkeypatch, small_C_store, directory,
                                              first_widened, **options)
    assert state["visits"][-1]["C"] == curve["widened"][0]
    assert without_seconds(resumed) == without_seconds(reference)
    assert resumed["params"]["validation"]["widened"] == curve["widened"]


def test_a_finished_search_is_read_not_fitted(store, tmp_path, monkeypatch, caplog):
    """Interrupted in the final fit: the search is replayed (no fit), the loop
    resumes from its own checkpoint."""
    options = {**OPTIONS, "max_iter": 4}
    reference = select(store, **options).to_dict()
    directory = tmp_path / "ckpt"
    stopped = {}

    def stop_after_two(record):
        if record["iteration"] == 2:
            stopped["yes"] = True
            raise Interrupted(2)

    from ultrafs.methods.execution import Execution
    with pytest.raises(Interrupted):
        from ultrafs.api import fit
        fit("fgm", store, execution=Execution(checkpoint=directory,
                                              callback=stop_after_two), **options)
    assert stopped and json.loads((directory / "checkpoint.json").read_text())[
        "iteration"] == 2
    fitted = fitted_Cs(monkeypatch)
    with caplog.at_level("INFO", logger="ultrafs.resume"):
        resumed = select(store, checkpoint=directory, resume=True, **options).to_dict()
    assert fitted == []
    assert without_seconds(resumed) == without_seconds(reference)
    lines = [r.getMessage() for r in caplog.records if r.name == "ultrafs.resume"]
    assert len(lines) == 2 and lines[0].startswith("resuming the choice of C from")
    assert lines[1] == f"resuming from {directory} after iteration 2 (10 features)"


def test_another_search_s_checkpoint_is_refused(store, tmp_path, monkeypatch):
    directory = tmp_path / "ckpt"
    restore = interrupt_after(monkeypatch, 2)
    with pytest.raises(Interrupted):
        select(store, checkpoint=directory, **OPTIONS)
    restore()
    where = str(directory / SEARCH_FILE)
    for changed, message in [({"C_grid": [0.1, 1.0, 10.0]}, "search_given=False, now True"),
                             ({"refit": True}, "search_refit_grid=None"),
                             ({"max_iter": 4}, "max_iter=3, now 4"),
                             ({"cv": 3}, "search_folds=5, now 3"),
                             ({"seed": 1}, "seed=0, now 1"),
                             ({"B": 6}, "B=5, now 6")]:
        with pytest.raises(CheckpointMismatchError, match=message) as refused:
            select(store, checkpoint=directory, resume=True, **{**OPTIONS, **changed})
        assert str(refused.value).startswith(where + ": checkpoint was written with "
                                             "different parameters")
    rng = np.random.default_rng(0)
    other = tmp_path / "other.zarr"
    write_store(other, rng.standard_normal((300, 120)), np.arange(300) % 2)
    result = CliRunner().invoke(main, ["select", "--data", str(other), *CLI,
                                       "--checkpoint", str(directory), "--resume",
                                       "--out", str(tmp_path / "m.json")])
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"Error: {where}: checkpoint was written for different data ("), lines
    assert not (tmp_path / "m.json").exists()
    # the refusals wrote nothing: the same search still resumes
    assert len(json.loads((directory / SEARCH_FILE).read_text())["visits"]) == 2


def test_piped_progress_is_one_choosing_C_line(store, tmp_path):
    out = tmp_path / "m.json"
    result = CliRunner().invoke(main, ["select", "--data", store, *CLI, "--refit",
                                       "--progress", "--out", str(out)])
    assert result.exit_code == 0, result.output
    model = json.loads(out.read_text())
    lines = [line for line in result.stderr.splitlines() if "choosing C" in line]
    assert len(lines) == 1, result.stderr
    visited = len({p["C"] for p in model["params"]["validation"]["points"]})
    grid = len(model["params"]["validation"]["grid"])
    assert lines[0].startswith(f"choosing C: {visited}/{grid} points in ")
    assert f"; chosen C {model['params']['C']:g}, refit C {model['refit']['C']:g} " \
           "(held-out accuracy " in lines[0]
    refits = [line for line in result.stderr.splitlines() if line.startswith("refit:")]
    assert len(refits) == 1 and refits[0].startswith("refit: 1/1 fit in ")
    quiet = CliRunner().invoke(main, ["select", "--data", store, *CLI, "--no-progress",
                                      "--out", str(tmp_path / "q.json")])
    assert quiet.exit_code == 0 and "choosing C" not in quiet.stderr


# ------------------------------------------------------- forged search states
def _set_visit(k, name, value):
    def forge(state):
        state["visits"][k][name] = value
    return forge


def _set_point(name, value):
    def forge(state):
        state["visits"][0]["points"][0][name] = value
    return forge


def _set_solution(name, value):
    def forge(state):
        entry = next(e for fold in state["solutions"] for e in fold)
        entry[name] = value(entry) if callable(value) else value
    return forge


def _visit_at(C, k=None):
    """Visit ``k`` (None: a new last one) made a visit of ``C``, its points too."""
    def forge(state):
        visit = json.loads(json.dumps(state["visits"][0 if k is None else k]))
        visit["C"] = C
        for point in visit["points"]:
            point["C"] = C
        if k is None:
            state["visits"].append(visit)
        else:
            state["visits"][k] = visit
    return forge


def _drop_fold(state):
    state["solutions"] = state["solutions"][:-1]


def _raw(text):
    return lambda state: text


def _set(name, value):
    def forge(state):
        state[name] = value
    return forge


FORGED = [
    # name, forge(state) (returns the text to write, or None), fragments
    ("other C recorded first", _visit_at(777.0, 0),
     ["grid point 1 is C=777.0, the walk asks for C="]),
    ("C not a number", _set_visit(1, "C", None), ["visits[1] C must be a finite"]),
    ("a C visited twice", lambda s: s["visits"][1].update(C=s["visits"][0]["C"]),
     ["visits[1] C=", "is visited twice"]),
    ("accuracy above one", _set_point("accuracy", 2.0),
     ["visits[0] points[0] accuracy must be in [0, 1], got 2.0"]),
    ("loss not a number", _set_point("loss", "low"),
     ['visits[0] points[0] loss must be a finite number, got "low"']),
    ("point of another C", _set_point("C", 5.0), ["points[0] C must be the visit's C"]),
    ("a point too many", lambda s: s["visits"][0]["points"].append(
        dict(s["visits"][0]["points"][0])), ["visits[0] points must be a list of one"]),
    ("more points than the walk visits", _visit_at(12345.0),
     ["the walk asks for C=", "12345.0"]),
    ("a fold's solutions missing", _drop_fold, ["solutions must be a list of 5 folds"]),
    ("key out of range", _set_solution("keys", lambda e: [10**6] + e["keys"][1:]),
     ["keys[0] must be an integer in 0..119"]),
    ("short coef", _set_solution("coef", lambda e: e["coef"][:-1]),
     ["coef must hold"]),
    ("NaN coef", _set_solution("coef", lambda e: [float("nan")] + e["coef"][1:]),
     ["coef[0] must be a finite number"]),
    ("visits not a list", _set("visits", {}), ["visits must be a list"]),
    ("params not an object", _set("params", 3), ["params must be a JSON object"]),
    ("older version", _set("version", 0), ["checkpoint version 0 is not 1"]),
    ("fingerprint forged", lambda s: s["fingerprint"].update(content="0" * 64),
     ["different data"]),
    ("not JSON", _raw("{oops"), ["unreadable checkpoint"]),
    ("deep nesting", _raw("[" * 100_000 + "]" * 100_000), ["nested too deeply"]),
]


@pytest.fixture(scope="module")
def interrupted(store, tmp_path_factory):
    """A checkpoint directory whose search was interrupted after 2 points."""
    directory = tmp_path_factory.mktemp("interrupted") / "ckpt"
    real = SearchJournal.commit
    done = {"points": 0}

    def commit(self, C, points):
        real(self, C, points)
        done["points"] += 1
        if done["points"] == 2:
            raise Interrupted(2)

    SearchJournal.commit = commit
    try:
        with pytest.raises(Interrupted):
            select(store, checkpoint=directory, **OPTIONS)
    finally:
        SearchJournal.commit = real
    return directory


@pytest.mark.parametrize("name, forge, fragments", FORGED, ids=[f[0] for f in FORGED])
def test_forged_search_state_is_one_line(store, interrupted, tmp_path, name, forge,
                                         fragments):
    directory = tmp_path / "ckpt"
    shutil.copytree(interrupted, directory)
    path = directory / SEARCH_FILE
    state = json.loads(path.read_text())
    text = forge(state)
    path.write_text(text if text is not None else json.dumps(state))
    written = path.read_bytes()
    out = tmp_path / "model.json"
    before = set(os.listdir(tmp_path)), set(os.listdir(directory)) | {LOCK}
    result = CliRunner().invoke(main, ["select", "--data", store, *CLI, "--checkpoint",
                                       str(directory), "--resume", "--out", str(out)])
    assert result.exit_code == 1, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: {path}: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    # nothing half-written: no output, no new file, the state untouched
    assert (set(os.listdir(tmp_path)), set(os.listdir(directory))) == before
    assert path.read_bytes() == written
