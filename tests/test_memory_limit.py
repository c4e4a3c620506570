"""``memory_limit`` / ``--memory-limit``: the loop stops before an outer
iteration whose projected peak memory would exceed the limit, keeping the
last certified model, and says so; bad limits are one-line errors."""

import numpy as np
import pytest
from click.testing import CliRunner

import ultrafs.methods.fgm as fgm_module
from ultrafs.api import select
from ultrafs.cli import main
from ultrafs.datasets.planted import make_planted_problem
from ultrafs.errors import ParameterError

MB = 2 ** 20


@pytest.fixture(scope="module")
def planted():
    problem = make_planted_problem(n_samples=300, n_features=60, n_relevant=8, seed=3)
    return problem.X_train, problem.y_train


def _growing_peak(monkeypatch, start, step):
    """Peak RSS (MB) that grows by ``step`` at every reading after the first two."""
    calls = {"n": 0}

    def fake():
        calls["n"] += 1
        return start + step * max(calls["n"] - 2, 0)
    monkeypatch.setattr(fgm_module, "peak_rss_mb", fake)


def test_the_loop_stops_before_the_projected_peak_passes_the_limit(planted,
                                                                   monkeypatch):
    X, y = planted
    full = select(X, y, B=2, max_iter=8, tol=0.0)
    # readings: 1 per guard check + 3 per iteration (score, materialize, solve)
    _growing_peak(monkeypatch, 100.0, 10.0)
    model = select(X, y, B=2, max_iter=8, tol=0.0, memory_limit=int(175 * MB))
    assert "memory limit of 175 MB" in model.stop_reason
    assert "stopped before outer iteration" in model.stop_reason
    n = len(model.history)
    assert 1 <= n < len(full.history)
    # what it kept is the certified model of its last iteration
    for got, want in zip(model.history, full.history[:n]):
        assert got["objective"] == want["objective"]
        assert got["n_nonzero"] == want["n_nonzero"]
    assert len(model.features) == model.history[-1]["n_nonzero"]


def test_a_limit_above_every_projection_changes_nothing(planted):
    X, y = planted
    a = select(X, y, B=3, max_iter=4, tol=0.0)
    b = select(X, y, B=3, max_iter=4, tol=0.0, memory_limit=2 ** 50)
    assert a.features == b.features and a.stop_reason == b.stop_reason
    np.testing.assert_array_equal(a.coef, b.coef)


@pytest.mark.parametrize("limit", [0, -5, float("nan"), "8GB", True])
def test_bad_limits_are_refused(planted, limit):
    X, y = planted
    with pytest.raises(ParameterError, match="memory_limit"):
        select(X, y, B=2, max_iter=2, memory_limit=limit)


def test_a_limit_below_what_is_held_before_the_first_pass(planted):
    X, y = planted
    with pytest.raises(ParameterError, match="below the .* MB this run held"):
        select(X, y, B=2, max_iter=2, memory_limit=1000)


def _write(tmp_path, X, y):
    path = tmp_path / "d.svm"
    with open(path, "w") as f:
        for row, label in zip(X, y):
            cols = np.flatnonzero(row)
            f.write(f"{int(label)} " + " ".join(f"{j + 1}:{row[j]:.6g}" for j in cols)
                    + "\n")
    return path


@pytest.mark.parametrize("text, message", [
    ("abc", "is not a size such as 8GB"),
    ("-1GB", "is not a size such as 8GB"),
    ("8XB", "is not a size such as 8GB"),
    ("1KB", "below the"),
])
def test_cli_memory_limit_errors_are_one_line(planted, tmp_path, text, message):
    X, y = planted
    path = _write(tmp_path, X, y)
    result = CliRunner().invoke(main, ["select", "--data", str(path), "--B", "2",
                                       "--max-iter", "2", "--memory-limit", text,
                                       "--out", str(tmp_path / "m.json")])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "m.json").exists()


def test_cli_memory_limit_units(planted, tmp_path):
    X, y = planted
    path = _write(tmp_path, X, y)
    for text in ("64GB", "64GiB", "64000M", str(64 * 10**9)):
        result = CliRunner().invoke(main, ["select", "--data", str(path), "--B", "2",
                                           "--max-iter", "2", "--memory-limit", text,
                                           "--out", str(tmp_path / "m.json"),
                                           "--overwrite"])
        assert result.exit_code == 0, result.output
