"""What a person sees while each command runs (issue 37's progress acceptance).

(a) On a terminal (stderr a pseudo-terminal, ``tests/pty_tools.py``) the
first bytes to arrive are a progress bar drawn before the engine loads
(``loading ultrafs``), and each method's long phase is drawn when it opens,
at zero, before its work.  Order, not wall time, is asserted: a bar drawn
when its phase opens comes before the phase's work on any machine.  (The
seconds to the first byte are measured by hand and reported, not tested.)

(b) Piped with ``--progress`` (stderr a file): exactly one line per phase,
no ``\\r`` and no fragment of a bar.
"""

import os
import re
import sys
from pathlib import Path

import pytest
from sklearn.datasets import dump_svmlight_file

from ultrafs.datasets.planted import make_planted_problem

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pty_tools import run_on_pty, run_piped, ultrafs_argv  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: per method: its options (small and quick) and a phase it draws on its own
METHODS = {
    "fgm": (["--B", 3, "--max-iter", 2], "iteration 1 of 2: scoring candidates"),
    "l1": (["--n-features-to-select", 3], "ℓ1 path"),
    "mslr": (["--B", 3, "--max-iter", 2], "MSLR subproblem"),
    "sklr": (["--n-components", 256, "--solver", "fista"], "sklr fista"),
    "gsrfs": (["--n-features-to-select", 5, "--max-iter", 20], "IRLS on 120 features"),
}

#: a tqdm bar's marks: percentages and bar blocks, rates, the [elapsed<ETA] box
BAR_FRAGMENT = re.compile(r"\d+%\||/s\]|\[\d\d:\d\d|\x1b\[")
#: a phase's line when piped: its name, then its count and time, or its time
PHASE_LINE = re.compile(r"^(?P<name>.+?): (?:[\d,]+(?:/[\d,]+)? \S+ in |\d+(?:\.\d)? s\b"
                        r"|\d+ min \d\d s\b|\d+ h \d\d min\b)")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A small problem as LIBSVM files and as ingested stores (no cache writes)."""
    root = tmp_path_factory.mktemp("faces")
    problem = make_planted_problem(n_samples=300, n_features=120, n_relevant=10,
                                   n_test=200, seed=1)
    dump_svmlight_file(problem.X_train, problem.y_train, str(root / "train.svm"),
                       zero_based=False)
    dump_svmlight_file(problem.X_test, problem.y_test, str(root / "test.svm"),
                       zero_based=False)
    for name in ("train", "test"):
        done = run_piped(ultrafs_argv("ingest", root / f"{name}.svm", root / f"{name}.zarr"),
                         env=_env(root))
        assert done.returncode == 0, done.stderr
    return root


def _env(root):
    """The child's environment: this checkout first, its own LIBSVM cache."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    env["ULTRAFS_CACHE_DIR"] = str(root / "cache")      # LIBSVM ingests, if any
    env.pop("COLUMNS", None)
    return env


def _unasked(stderr):
    """The lines of ``stderr`` besides the kernels' compile notice (a first use)."""
    return [line for line in stderr.splitlines()
            if not line.startswith("ultrafs: compiling numba kernels")]


def _drawn_at_zero(text, name):
    """Position where the bar of phase ``name`` was first drawn with no step
    done (``0%|`` or ``0 unit``, or an uncounted phase's ``00:00``), or -1."""
    match = re.search(re.escape(name) + r"[^\r\n]*?(?:\b0%\||: 0 \w|: 00:00)", text)
    return -1 if match is None else match.start()


def _select(data, method, *extra):
    options, _ = METHODS[method]
    return ultrafs_argv("select", "--method", method, "--data", data / "train.zarr",
                        "--out", data / f"{method}-{len(extra)}.json", "--overwrite",
                        *options, *extra)


def _assert_first_bytes_are_a_bar(run):
    assert run.returncode == 0, run.stderr
    assert not run.timed_out
    # the very first output: the first phase's bar, drawn before the engine's
    # imports (so within about a second on an idle machine)
    assert run.chunks and run.chunks[0][1].startswith(b"\rloading ultrafs"), run.stderr[:300]


def _assert_one_line_per_phase(stderr):
    assert "\r" not in stderr
    assert not BAR_FRAGMENT.search(stderr), stderr
    names = [m.group("name") for m in map(PHASE_LINE.match, stderr.splitlines()) if m]
    assert len(names) == len(set(names)), stderr
    return names


@pytest.mark.parametrize("method", sorted(METHODS))
def test_select_on_a_terminal_draws_progress_first(data, method):
    run = run_on_pty(_select(data, method), env=_env(data))
    _assert_first_bytes_are_a_bar(run)
    own = METHODS[method][1]
    if own is not None:
        text = run.stderr
        at_zero = _drawn_at_zero(text, own)
        assert at_zero >= 0, text
        # drawn when it opened, before any of its work was counted
        assert at_zero <= text.find(own), text


@pytest.mark.parametrize("method", sorted(METHODS))
def test_select_piped_writes_one_line_per_phase(data, method):
    run = run_piped(_select(data, method, "--progress"), env=_env(data))
    assert run.returncode == 0, run.stderr
    names = _assert_one_line_per_phase(run.stderr)
    assert names[0] == "loading ultrafs (numba, dask, scipy)", run.stderr
    own = METHODS[method][1]
    if own is not None:
        assert any(name.startswith(own) for name in names), run.stderr
    quiet = run_piped(_select(data, method), env=_env(data))      # piped, no --progress
    assert quiet.returncode == 0 and _unasked(quiet.stderr) == [], quiet.stderr


def test_ingest_on_a_terminal_and_piped(data, tmp_path):
    run = run_on_pty(ultrafs_argv("ingest", data / "train.svm", tmp_path / "a.zarr"),
                     env=_env(data))
    _assert_first_bytes_are_a_bar(run)
    assert "read train.svm: " in run.stderr
    piped = run_piped(ultrafs_argv("ingest", data / "train.svm", tmp_path / "b.zarr",
                                   "--progress"), env=_env(data))
    assert piped.returncode == 0, piped.stderr
    names = _assert_one_line_per_phase(piped.stderr)
    assert names == ["loading ultrafs (numba, dask, scipy)", "read train.svm"], piped.stderr
    quiet = run_piped(ultrafs_argv("ingest", data / "train.svm", tmp_path / "c.zarr"),
                      env=_env(data))
    assert quiet.returncode == 0 and _unasked(quiet.stderr) == [], quiet.stderr


def _report(data, tmp_path):
    model = data / "fgm-report.json"
    if not model.exists():
        made = run_piped(ultrafs_argv("select", "--data", data / "train.zarr", "--B", 3,
                                      "--max-iter", 2, "--out", model), env=_env(data))
        assert made.returncode == 0, made.stderr
    return ultrafs_argv("report", model, "--test", data / "test.zarr", "--train",
                        data / "train.zarr", "--out", tmp_path / "r.html")


def test_report_train_piped_has_no_bar_fragments(data, tmp_path):
    run = run_piped(_report(data, tmp_path), env=_env(data))
    assert run.returncode == 0, run.stderr
    _assert_one_line_per_phase(run.stderr)


def test_report_train_on_a_terminal_draws_progress_first(data, tmp_path):
    run = run_on_pty(_report(data, tmp_path), env=_env(data))
    assert run.returncode == 0, run.stderr
    # the report's first stage is drawn at zero before its first model is scored
    first = run.chunks[0][1].decode("utf-8", "replace")
    assert first.startswith("\rtest scores") and _drawn_at_zero(first, "test scores") >= 0
    for stage in ("ℓ2 refits", "ℓ1 baselines"):
        if stage in run.stderr:
            assert _drawn_at_zero(run.stderr, stage) == run.stderr.find(stage)


#: estimator, its small options, the start of a phase line it shows with verbose=1
ESTIMATORS = {
    "FGMClassifier": ({"B": 3, "max_iter": 2}, "iteration 1: scoring candidates: "),
    "L1LogisticRegression": ({}, "ℓ1 path"),
    "MSLRClassifier": ({"B": 3, "max_iter": 2}, "MSLR subproblem: "),
    "SparseKernelLogisticRegression": ({"n_components": 64}, "sklr cgd: "),
    "GSRFSSelector": ({"n_features_to_select": 5, "max_iter": 10}, "IRLS on 60 features"),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_estimator_verbose_shows_the_phases(name, capsys):
    import ultrafs.sklearn as estimators

    problem = make_planted_problem(n_samples=200, n_features=60, n_relevant=5, n_test=10,
                                   seed=1)
    options, line = ESTIMATORS[name]
    cls = getattr(estimators, name)
    cls(verbose=0, **options).fit(problem.X_train, problem.y_train)
    assert [m for m in map(PHASE_LINE.match, _unasked(capsys.readouterr().err)) if m] == []
    cls(verbose=1, **options).fit(problem.X_train, problem.y_train)
    err = capsys.readouterr().err
    _assert_one_line_per_phase(err)
    assert any(text.startswith(line) for text in err.splitlines()), err
