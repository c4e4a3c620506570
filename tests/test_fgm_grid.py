"""FGM fits of a grid of C in lockstep: shared passes, the same results."""

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.methods import c_choice
from ultrafs.errors import ParameterError
from ultrafs.features.linear import LinearFeatures
from ultrafs.features.poly import PolyFeatures
from ultrafs.methods import validation as val
from ultrafs.methods.fgm import GridWarmStart, fit_fgm
from ultrafs.methods.fgm_grid import fit_fgm_folds, fit_fgm_grid
from ultrafs.scoring.worst_case import worst_case_analyses, worst_case_analysis
from ultrafs.store import InMemoryStore, open_store
from ultrafs.store.writers.zarr_writer import write_store

from test_scoring import brute_force_topk, make_problem
from test_validation import _curve


# ---------------------------------------------------------- shared passes
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("block_size", [1, 13, 1000])
def test_shared_pass_equals_each_query_against_brute_force(rng, dtype, binary,
                                                           block_size):
    X, y = make_problem(rng, dtype=dtype, binary=binary)
    features = LinearFeatures(InMemoryStore(X, y, block_size=block_size))
    queries = [(rng.random(X.shape[0]) * y, 10, np.array([0, 5, 11])),
               (rng.standard_normal((X.shape[0], 3)), 4, np.array([], np.int64)),
               (np.zeros(X.shape[0]), 3, np.array([7])),           # no positive score
               (rng.random(X.shape[0]) * y, 25, np.arange(0, 300, 2))]
    shared = worst_case_analyses(features, queries, scheduler="synchronous")
    assert len(shared) == len(queries)
    for (weights, k, excluded), (candidates, stats) in zip(queries, shared):
        alone, alone_stats = worst_case_analysis(features, weights, k, excluded=excluded,
                                                 scheduler="synchronous")
        ids, scores = brute_force_topk(X.toarray(), weights, k, excluded)
        np.testing.assert_array_equal(candidates.keys, ids)
        np.testing.assert_array_equal(candidates.keys, alone.keys)
        np.testing.assert_array_equal(candidates.scores, alone.scores)  # bit for bit
        assert stats.nnz == alone_stats.nnz == X.nnz
        assert stats.details["pass_queries"] == len(queries)
        for key in candidates.keys:                   # the winners' columns travel
            rows, _ = candidates.payload[int(key)]
            np.testing.assert_array_equal(rows, X[:, int(key)].indices)


def test_shared_pass_is_the_same_on_every_scheduler(rng, local_cluster_client):
    X, y = make_problem(rng, n=200, m=400, density=0.03)
    features = LinearFeatures(InMemoryStore(X, y))
    queries = [(rng.random(200) * y, 6, np.array([1, 2])),
               (rng.random(200) * y, 9, np.array([], np.int64))]
    reference = worst_case_analyses(features, queries, scheduler="synchronous",
                                    block_size=400)
    for block_size, scheduler in [(7, "threads"), (50, "processes"),
                                  (33, local_cluster_client)]:
        got = worst_case_analyses(features, queries, scheduler=scheduler,
                                  block_size=block_size)
        for (a, _), (b, _) in zip(got, reference):
            np.testing.assert_array_equal(a.keys, b.keys)
            np.testing.assert_array_equal(a.scores, b.scores)


def test_shared_pass_checks_each_query(rng):
    X, y = make_problem(rng)
    features = LinearFeatures(InMemoryStore(X, y))
    assert worst_case_analyses(features, []) == []
    with pytest.raises(ParameterError, match="weights must have shape"):
        worst_case_analyses(features, [(y, 2, None), (y[:-1], 2, None)])
    with pytest.raises(ParameterError, match="k must be"):
        worst_case_analyses(features, [(y, 0, None)])


# ------------------------------------------------------- fits in lockstep
def _assert_same_fits(sequential, lockstep):
    for a, b in zip(sequential, lockstep, strict=True):
        np.testing.assert_array_equal(a.keys, b.keys)
        np.testing.assert_array_equal(a.batch_ptr, b.batch_ptr)
        np.testing.assert_array_equal(a.coef, b.coef)
        np.testing.assert_array_equal(a.bias, b.bias)
        assert a.stop_reason == b.stop_reason
        assert [r["inner_iterations"] for r in a.history] == \
            [r["inner_iterations"] for r in b.history]


def _sequential(features, y, Cs, windows, **options):
    warm = GridWarmStart()
    fits = [fit_fgm(features, y, C=C, warm_start=warm, **options) for C in Cs]
    return fits, warm


def _lockstep(features, y, Cs, windows, **options):
    warm = GridWarmStart()
    fits, start = [], 0
    for size in windows:
        fits += fit_fgm_grid(features, y, Cs[start:start + size], warm_start=warm,
                             **options)
        start += size
    return fits, warm


@pytest.mark.parametrize("windows", [(3, 2, 1), (6,), (1, 1, 1, 1, 1, 1)])
def test_lockstep_fits_are_the_fits_one_after_the_other(rng, tmp_path, windows):
    X, y = make_problem(rng, n=160, m=120, density=0.1)
    y = np.where(np.asarray(X[:, :6].sum(axis=1)).ravel() > 0.1, 1.0, -1.0)
    write_store(tmp_path / "s.zarr", X, y)
    features = LinearFeatures(open_store(tmp_path / "s.zarr"))
    Cs = list(val.c_grid(1.0)[:6])
    options = {"B": 3, "max_iter": 4, "block_size": 17}
    sequential, warm_a = _sequential(features, y, Cs, windows, **options)
    lockstep, warm_b = _lockstep(features, y, Cs, windows, **options)
    _assert_same_fits(sequential, lockstep)
    assert (warm_a.lookups, warm_a.hits) == (warm_b.lookups, warm_b.hits)
    assert warm_b.hits > 0
    if windows[0] > 1:
        assert lockstep[0].history[0]["pass_queries"] == windows[0]


def test_lockstep_multiclass_weighted_and_unshared_spaces(rng):
    X = rng.standard_normal((150, 12))
    classes = np.argmax(X[:, :3] + 0.3 * rng.standard_normal((150, 3)), axis=1)
    weights = rng.random(150) + 0.5
    features = LinearFeatures(InMemoryStore(X, classes))
    Cs = [0.1, 1.0, 10.0]
    options = {"B": 2, "max_iter": 3, "n_classes": 3, "sample_weight": weights}
    _assert_same_fits(_sequential(features, classes, Cs, (3,), **options)[0],
                      _lockstep(features, classes, Cs, (3,), **options)[0])
    y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    poly = PolyFeatures(InMemoryStore(X, y))
    assert not poly.shares_passes                      # one pass per query
    options = {"B": 2, "max_iter": 3}
    _assert_same_fits(_sequential(poly, y, Cs, (3,), **options)[0],
                      _lockstep(poly, y, Cs, (3,), **options)[0])


@pytest.mark.parametrize("weighted", [False, True])
def test_folds_in_one_lockstep_are_each_folds_own_fits(rng, tmp_path, monkeypatch,
                                                      weighted):
    """Folds' training parts of one store (row-subset views whose passes
    scatter) share each outer iteration's pass; every fold's fits are those
    of its own grid, bit for bit.  A part keeping under half the rows reads
    its own rows: no shared pass, the same fits."""
    import ultrafs.scoring.runner as runner_module
    from ultrafs.store.rows import RowSubsetStore

    X, y = make_problem(rng, n=150, m=90, density=0.12)
    y = np.where(np.asarray(X[:, :5].sum(axis=1)).ravel() > 0.1, 1.0, -1.0)
    write_store(tmp_path / "s.zarr", X, y)
    store = open_store(tmp_path / "s.zarr")
    parts = [np.setdiff1d(np.arange(150), np.arange(f, 150, 3)) for f in range(3)]
    weights = rng.random(150) + 0.5 if weighted else None
    Cs = list(val.c_grid(1.0)[:3])
    options = {"B": 2, "max_iter": 4, "block_size": 11}

    def folds(rows_list):
        return [(LinearFeatures(RowSubsetStore(store, rows)), y[rows], GridWarmStart(),
                 None if weights is None else weights[rows]) for rows in rows_list]

    passes = []
    original = runner_module.run_block_tasks
    monkeypatch.setattr(runner_module, "run_block_tasks",
                        lambda *a, **k: passes.append(1) or original(*a, **k))
    together = fit_fgm_folds(folds(parts), Cs, **options)
    shared_passes = len(passes)
    own, own_passes = [], []
    for features, y_part, warm, w in folds(parts):
        passes.clear()
        own.append(fit_fgm_grid(features, y_part, Cs, warm_start=warm,
                                sample_weight=w, **options))
        own_passes.append(len(passes))
    # one pass per outer iteration for all folds: as many as the longest fold's
    assert shared_passes == max(own_passes) < sum(own_passes)
    for mine, alone in zip(together, own):
        _assert_same_fits(alone, mine)
    assert together[0][0].history[0]["pass_queries"] == 3 * len(Cs)
    # a part of under half the rows does not scatter: its passes are its own
    small = [parts[0], np.arange(0, 150, 3)]
    mixed = fit_fgm_folds(folds(small), Cs, **options)
    for (features, y_part, warm, w), mine in zip(folds(small), mixed):
        _assert_same_fits(fit_fgm_grid(features, y_part, Cs, warm_start=warm,
                                       sample_weight=w, **options), mine)
    assert mixed[0][0].history[0]["pass_queries"] == len(Cs)


def test_lockstep_takes_no_checkpoint(rng, tmp_path):
    from ultrafs.methods.checkpoint import Checkpoint

    X, y = make_problem(rng)
    features = LinearFeatures(InMemoryStore(X, y))
    with pytest.raises(ParameterError, match="lockstep"):
        fit_fgm_grid(features, y, [1.0], resume=True)
    with pytest.raises(ParameterError, match="lockstep"):
        fit_fgm_grid(features, y, [1.0], checkpoint=Checkpoint(tmp_path / "c", "f", {}))


# ------------------------------------------------------- the walk's windows
def test_lockstep_window():
    assert val.lockstep_window(None, 0, 8) == 1 + val.PATIENCE
    assert val.lockstep_window(None, 0, 2) == 2
    assert val.lockstep_window({"C": 1}, 0, 8) == val.PATIENCE
    assert val.lockstep_window({"C": 1}, val.PATIENCE - 1, 8) == 1
    assert val.lockstep_window({"C": 1}, 0, 1) == 1


def test_C_auto_is_the_same_with_and_without_lockstep(rng, tmp_path, monkeypatch):
    import ultrafs.api as api
    from ultrafs.api import select

    X = rng.standard_normal((300, 40))
    y = np.where(X[:, :5].sum(axis=1) + 0.8 * rng.standard_normal(300) > 0, 1, -1)
    write_store(tmp_path / "s.zarr", sp.csc_matrix(X), y)
    store = open_store(tmp_path / "s.zarr")
    calls = []          # per fold, the number of Cs each prefit fitted
    prefit = c_choice.HeldOutScorer.prefit

    def counted(self, folds, Cs):
        calls.extend(len(Cs) for _ in folds)
        return prefit(self, folds, Cs)

    monkeypatch.setattr(c_choice.HeldOutScorer, "prefit", counted)
    for kwargs in ({"cv": 3}, {"validation_fraction": 0.25}):
        lock = select(store, B=3, max_iter=3, C="auto", refit=True, seed=3, **kwargs)
        assert calls and calls[0] == 1 + val.PATIENCE
        fitted = len({p["C"] for p in lock.params["validation"]["points"]})
        assert sum(calls) // lock.params["validation"]["folds"] == fitted  # no waste
        calls.clear()
        with monkeypatch.context() as m:      # every fit alone, one after the other
            m.setattr(val, "lockstep_window", lambda best, below, remaining: 1)
            alone = select(store, B=3, max_iter=3, C="auto", refit=True, seed=3,
                           **kwargs)
        assert set(calls) == {1}
        calls.clear()
        assert _curve(lock) == _curve(alone)
        assert lock.features == alone.features
        np.testing.assert_array_equal(lock.coef, alone.coef)


def test_C_auto_on_views_out_of_core_equals_in_memory_copies(rng, tmp_path, monkeypatch):
    """Folds too large to copy (row-subset views, their passes scattered over
    the inner store and shared in lockstep) choose what in-memory copies do."""
    import ultrafs.store.rows as rows_module
    from ultrafs.api import select

    X = rng.standard_normal((260, 30))
    X[np.abs(X) < 0.8] = 0.0
    y = np.where(X[:, :4].sum(axis=1) + 0.5 * rng.standard_normal(260) > 0, 1, -1)
    write_store(tmp_path / "s.zarr", sp.csc_matrix(X), y)
    store = open_store(tmp_path / "s.zarr")
    for kwargs in ({"cv": 3}, {"validation_fraction": 0.3}):
        copies = select(store, B=2, max_iter=3, C="auto", refit=True, seed=1,
                        block_size=7, **kwargs)
        scattered = []
        original = rows_module.RowSubsetStore.scattered

        def counted(self, weights):
            scattered.append(len(self.rows))
            return original(self, weights)

        with monkeypatch.context() as m:
            m.setattr(rows_module, "MATERIALIZE_MAX_NNZ", 0)      # views
            m.setattr(rows_module.RowSubsetStore, "scattered", counted)
            views = select(store, B=2, max_iter=3, C="auto", refit=True, seed=1,
                           block_size=7, **kwargs)
        assert scattered                          # the passes read the inner store
        assert _curve(views) == _curve(copies)
        assert views.features == copies.features
        np.testing.assert_array_equal(views.coef, copies.coef)
