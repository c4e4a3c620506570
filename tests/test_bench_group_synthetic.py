"""Smoke test of bench/group_synthetic.py (paper §8.6.1) at a tiny size."""

import sys
from pathlib import Path

import numpy as np

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
if not (BENCH / "group_synthetic.py").is_file():     # an install test's copy of tests/
    pytest.skip("bench/ is not next to tests/", allow_module_level=True)
sys.path.insert(0, str(BENCH))

import group_synthetic as gs  # noqa: E402


def test_generator_is_column_by_column_and_labels_match(tmp_path):
    from ultrafs.store import open_store

    problem = gs.GroupProblem(60, 12, size=3, n_informative=4, n_test=25, seed=3)
    # a group's columns do not depend on which other groups are generated with it
    whole = problem.columns(np.arange(12))
    assert whole.shape == (36, 60) and whole.dtype == np.float32
    np.testing.assert_array_equal(problem.columns([7, 2]), whole[[21, 22, 23, 6, 7, 8]])
    assert np.all(whole != 0)
    # y = sign(X w) over the informative groups, for training and test rows
    w = np.zeros(36)
    for t, g in enumerate(problem.informative):
        w[g * 3:(g + 1) * 3] = problem.weights[t]
    margin = w @ whole.astype(np.float64)
    np.testing.assert_array_equal(problem.labels(), np.where(margin >= 0, 1.0, -1.0))
    test = problem.columns(np.arange(12), "test")
    assert test.shape == (36, 25)
    np.testing.assert_array_equal(problem.labels("test"),
                                  np.where(w @ test.astype(np.float64) >= 0, 1.0, -1.0))
    # the written store holds exactly the generated training columns
    info = gs.write_train_store(problem, tmp_path / "s.zarr", groups_per_block=5)
    store = open_store(tmp_path / "s.zarr")
    assert info["nnz"] == 60 * 36 and store.n_samples == 60 and store.n_features == 36
    np.testing.assert_array_equal(store.to_csc().toarray(), whole.T)
    np.testing.assert_array_equal(store.read_labels(), problem.labels())
    # evaluation with the planted model itself is perfect on the test rows
    ids = np.flatnonzero(w)
    assert gs.evaluate(problem, ids, w[ids], 0.0) == 1.0


def test_main_fgm_only(tmp_path, monkeypatch):
    written = {}
    monkeypatch.setattr(gs, "write_result", lambda name, payload: written.update(
        {name: payload}))
    results = gs.main(["--n", "300", "--groups", "40", "--size", "5", "--informative", "6",
                       "--n-test", "200", "--counts", "2,4,6", "--B", "2",
                       "--no-baseline", "--inner-kkt-tol", "0",
                       "--store-dir", str(tmp_path), "--name", "smoke"])
    assert "smoke" in written
    (label, fgm), = results["fgm"].items()
    rows = fgm["rows"]
    assert [r["target"] for r in rows] == [2, 4, 6]
    assert [r["groups"] for r in rows] == [2, 4, 6]
    assert all(0 <= r["recovered"] <= r["groups"] for r in rows)
    assert all(0.5 < r["accuracy"] <= 1.0 and "refit_accuracy" in r for r in rows)
    assert rows[0]["seconds"] <= rows[1]["seconds"] <= rows[2]["seconds"]
    assert "| 6 | FGM (eq. 40 stop, APG) | 6 |" in results["table"]
    # the training store is removed unless --keep-store
    assert not list(tmp_path.glob("*.zarr"))
