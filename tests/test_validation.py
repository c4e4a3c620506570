"""Choosing C: row subsets, row norms, the scaled default and C="auto"."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from ultrafs.methods import c_choice
from ultrafs.api import select
from ultrafs.cli import main
from ultrafs.errors import ParameterError
from ultrafs.sklearn import FGMClassifier
from ultrafs.features.linear import LinearFeatures
from ultrafs.features.poly import PolyFeatures
from ultrafs.kernels.sparse_ops import csc_take_rows, csc_take_rows_pattern
from ultrafs.kernels.statistics import row_top2_squares
from ultrafs.methods import validation as val
from ultrafs.methods.c_scale import scale_C
from ultrafs.store import InMemoryStore
from ultrafs.store.rows import RowSubsetStore
from ultrafs.store.writers.zarr_writer import write_store


def _sparse(rng, n, m, density=0.2, dtype=np.float64):
    X = sp.random(n, m, density=density, random_state=rng, format="csc",
                  dtype=np.float64)
    X.data = (X.data - 0.5).astype(dtype)
    X = X.tolil()
    X[:, 2] = 0            # an empty column
    X[3, :] = 0            # a zero row
    return sp.csc_matrix(X, dtype=dtype)


def _problem(rng, n=240, m=40):
    X = rng.standard_normal((n, m))
    y = np.where(X[:, :5].sum(axis=1) + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


# ---------------------------------------------------------------- kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_take_rows_matches_scipy(rng, dtype):
    X = _sparse(rng, 30, 12, dtype=dtype)
    keep = np.sort(rng.choice(30, 17, replace=False))
    row_map = np.full(30, -1, dtype=np.int64)
    row_map[keep] = np.arange(len(keep))
    indptr, indices, data = csc_take_rows(X.indptr.astype(np.int64), X.indices,
                                          X.data, row_map)
    got = sp.csc_matrix((data, indices, indptr), shape=(len(keep), 12))
    assert data.dtype == dtype
    np.testing.assert_array_equal(got.toarray(), X.toarray()[keep])
    ptr2, idx2 = csc_take_rows_pattern(X.indptr.astype(np.int64), X.indices, row_map)
    np.testing.assert_array_equal(ptr2, indptr)
    np.testing.assert_array_equal(idx2, indices)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_top2_squares_matches_dense(rng, dtype):
    X = _sparse(rng, 25, 9, dtype=dtype)
    dense = np.sort(X.toarray().astype(np.float64) ** 2, axis=1)[:, ::-1]
    out = np.zeros((25, 2))
    np.testing.assert_array_equal(row_top2_squares(X.indices, X.data, 25, out),
                                  dense[:, :2])
    binary = np.sort((X.toarray() != 0).astype(np.float64), axis=1)[:, ::-1]
    np.testing.assert_array_equal(
        row_top2_squares(X.indices, None, 25, np.zeros((25, 2))), binary[:, :2])


def test_merge_row_top2_matches_sorting(rng):
    from ultrafs.kernels.statistics import merge_row_top2
    from ultrafs.scoring.row_norms import row_top2

    values = np.round(rng.random((50, 4)), 1)      # ties likely
    values[:5] = 0.0
    a = -np.sort(-values[:, :2], axis=1)
    b = -np.sort(-values[:, 2:], axis=1)
    want = -np.sort(-values, axis=1)[:, :2]
    np.testing.assert_array_equal(merge_row_top2(a.copy(), b), want)
    np.testing.assert_array_equal(merge_row_top2(b.copy(), a), want)
    # the pass: the same for any block size and scheduler
    X = _sparse(rng, 60, 30)
    dense = np.sort(X.toarray().astype(np.float64) ** 2, axis=1)[:, ::-1][:, :2]
    for block_size, scheduler in [(1, "threads"), (4, "synchronous"), (30, "threads")]:
        got = row_top2(InMemoryStore(X, np.arange(60) % 2, block_size=block_size),
                       scheduler=scheduler)
        np.testing.assert_array_equal(got, dense)

# ------------------------------------------------------------ row subsets
@pytest.mark.parametrize("binary", [False, True])
def test_row_subset_store_reads_the_kept_rows(rng, tmp_path, binary):
    X = _sparse(rng, 40, 15)
    if binary:
        X.data[:] = 1.0
    y = rng.integers(0, 2, 40).astype(float)
    path = tmp_path / "s.zarr"
    write_store(path, X, y)
    from ultrafs.store import open_store

    store = open_store(path)
    rows = np.sort(rng.choice(40, 23, replace=False))
    sub = RowSubsetStore(store, rows[::-1])          # any order: sorted
    dense = X.toarray()[rows]
    assert sub.n_samples == 23 and sub.n_features == 15
    np.testing.assert_array_equal(sub.read_targets(), y[rows])
    block = sub.read_range(0, 15)
    got = sp.csc_matrix((block.values(), block.indices, block.indptr), shape=(23, 15))
    np.testing.assert_array_equal(got.toarray(), dense)
    cols = sub.read_columns([7, 2, 20])             # 20: absent, empty
    got = sp.csc_matrix((cols.values(), cols.indices, cols.indptr), shape=(23, 3))
    np.testing.assert_array_equal(got.toarray()[:, :2], dense[:, [7, 2]])
    assert cols.indptr[3] == cols.indptr[2]
    assert sub.nnz == np.count_nonzero(dense)
    import pickle

    again = pickle.loads(pickle.dumps(sub))
    np.testing.assert_array_equal(again.rows, sub.rows)


@pytest.mark.parametrize("target", ["binary", "multiclass"])
def test_rows_in_memory_fit_like_the_view(rng, tmp_path, target, monkeypatch):
    """The in-memory copy of a small fold gives the view's model, bit for bit."""
    from ultrafs.methods.fgm import fit_fgm
    from ultrafs.store import open_store, rows as rows_module
    from ultrafs.store.memory import InMemoryStore as Memory

    X = _sparse(rng, 120, 30)
    y = (rng.integers(0, 2, 120) if target == "binary"
         else rng.integers(0, 3, 120)).astype(float)
    write_store(tmp_path / "s.zarr", X, y, id_offset=1)
    store = open_store(tmp_path / "s.zarr")
    kept = np.sort(rng.choice(120, 80, replace=False))
    copy = rows_module.rows_in_memory(store, kept)
    view = RowSubsetStore(store, kept)
    assert isinstance(copy, Memory)
    assert copy.feature_ids([0, 29]).tolist() == view.feature_ids([0, 29]).tolist()
    np.testing.assert_array_equal(copy.read_targets(), view.read_targets())
    targets = (copy.read_labels() if target == "binary" else copy.read_class_indices())
    n_classes = None if target == "binary" else 3
    a = fit_fgm(LinearFeatures(copy), targets, n_classes=n_classes, B=3, max_iter=3, C=1.0)
    b = fit_fgm(LinearFeatures(view), targets, n_classes=n_classes, B=3, max_iter=3, C=1.0)
    np.testing.assert_array_equal(a.keys, b.keys)
    np.testing.assert_array_equal(a.coef, b.coef)
    # above the size limit the view is kept
    monkeypatch.setattr(rows_module, "MATERIALIZE_MAX_NNZ", 0)
    assert isinstance(rows_module.rows_in_memory(store, kept), RowSubsetStore)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("binary", [False, True])
def test_passes_over_a_large_subset_read_the_inner_store(rng, tmp_path, dtype, binary,
                                                         monkeypatch):
    """Zero weights on the rows left out give the subset's scores bit for bit,
    and the winners' columns in the subset's rows."""
    from ultrafs.scoring.worst_case import worst_case_analyses, worst_case_analysis
    from ultrafs.store import open_store, rows as rows_module

    X = _sparse(rng, 90, 40, dtype=dtype)
    if binary:
        X.data[:] = 1
    write_store(tmp_path / "s.zarr", X, rng.integers(0, 2, 90).astype(float))
    store = open_store(tmp_path / "s.zarr")
    kept = np.sort(rng.choice(90, 60, replace=False))
    view = LinearFeatures(RowSubsetStore(store, kept))
    copy = LinearFeatures(InMemoryStore(sp.csc_matrix(X[kept]), np.arange(60) % 2))
    assert view.store.scattered(np.ones(60)) is not None
    assert RowSubsetStore(store, kept[:40]).scattered(np.ones(40)) is None  # < half
    queries = [(rng.standard_normal(60), 5, np.array([3])),
               (rng.standard_normal((60, 3)), 4, np.array([], np.int64))]
    for block_size in (None, 7):
        got = worst_case_analyses(view, queries, block_size=block_size)
        for (weights, k, excluded), (candidates, _) in zip(queries, got):
            alone = worst_case_analysis(view, weights, k, excluded=excluded,
                                        block_size=block_size)[0]
            in_memory = worst_case_analysis(copy, weights, k, excluded=excluded)[0]
            for other in (alone, in_memory):
                np.testing.assert_array_equal(candidates.keys, other.keys)
                np.testing.assert_array_equal(candidates.scores, other.scores)
            for key in alone.keys:
                for a, b in zip(candidates.payload[int(key)], alone.payload[int(key)]):
                    np.testing.assert_array_equal(a, b)
            block = view.materialize(candidates.keys, payload=candidates.payload)
            reference = copy.materialize(candidates.keys)
            np.testing.assert_array_equal(block.indptr, reference.indptr)
            np.testing.assert_array_equal(block.indices, reference.indices)
            np.testing.assert_array_equal(block.values(), reference.values())
    monkeypatch.setattr(rows_module, "SCATTER_MIN_SHARE", 1.01)   # rows dropped
    weights, k, excluded = queries[0]
    dropped = worst_case_analysis(view, weights, k, excluded=excluded)[0]
    np.testing.assert_array_equal(dropped.scores, got[0][0].scores)


def test_row_subset_refuses_bad_rows(rng):
    store = InMemoryStore(np.eye(4), [0, 1, 0, 1])
    with pytest.raises(ParameterError):
        RowSubsetStore(store, [0, 4])
    with pytest.raises(ParameterError):
        RowSubsetStore(store, [])


# -------------------------------------------------------------- row scale
@pytest.mark.parametrize("block_size", [None, 1, 4])
def test_feature_space_row_max_squares_match_dense(rng, block_size):
    X = _sparse(rng, 20, 8)
    store = InMemoryStore(X, rng.integers(0, 2, 20))
    dense = X.toarray()
    np.testing.assert_array_equal(
        LinearFeatures(store).row_max_squares(block_size=block_size),
        (dense ** 2).max(axis=1))
    gamma, r = 0.7, 1.3
    phi = PolyFeatures(store, gamma=gamma, coef0=r)
    # explicit feature map: sqrt(2 g r) x_j, g x_j^2, sqrt(2) g x_j x_k (j < k)
    j, k = np.triu_indices(8, 1)
    expanded = np.hstack([np.sqrt(2 * gamma * r) * dense, gamma * dense ** 2,
                          np.sqrt(2) * gamma * dense[:, j] * dense[:, k]])
    np.testing.assert_allclose(phi.row_max_squares(block_size=block_size),
                               (expanded ** 2).max(axis=1), rtol=1e-12)


def test_default_C_follows_the_scale_of_the_rows(rng):
    X, y = _problem(rng)
    C = val.default_C(LinearFeatures(InMemoryStore(X, y)))
    assert C == val.round_significant(val.DEFAULT_C_SCALE / np.mean((X ** 2).max(1)))
    C10 = val.default_C(LinearFeatures(InMemoryStore(10 * X, y)))
    assert C10 == pytest.approx(C / 100, rel=1e-2)
    # the same model, up to the 3-digit rounding of C, whatever the row scale
    a = select(X, y, B=2, max_iter=3)
    b = select(10 * X, y, B=2, max_iter=3)
    assert a.features == b.features
    # FGM's C="scale" is the column rule of ultrafs.methods.c_scale (issue 38)
    assert a.params["C"] == scale_C(LinearFeatures(InMemoryStore(X, y)))
    assert a.params["C_rule"] == "scale"
    # 0/1 data: the paper's C = 10
    binary = (rng.random((50, 6)) < 0.3).astype(float)
    binary[:, 0] = 1
    assert val.default_C(LinearFeatures(InMemoryStore(binary, np.arange(50) % 2))) == 10.0
    # all-zero data: any C gives the constant model
    assert val.default_C(LinearFeatures(InMemoryStore(np.zeros((4, 3)), [0, 1, 0, 1]))) \
        == val.DEFAULT_C_SCALE


# ------------------------------------------------------------------ splits
def test_stratified_split_and_folds(rng):
    y = np.array([1] * 30 + [-1] * 70)
    train, held = val.stratified_split(y, 0.2, seed=3)
    assert len(np.intersect1d(train, held)) == 0 and len(train) + len(held) == 100
    assert np.sum(y[held] == 1) == 6 and np.sum(y[held] == -1) == 14
    again = val.stratified_split(y, 0.2, seed=3)
    np.testing.assert_array_equal(again[1], held)
    assert not np.array_equal(val.stratified_split(y, 0.2, seed=4)[1], held)
    folds = val.stratified_folds(y, 5, seed=0)
    covered = np.sort(np.concatenate([v for _, v in folds]))
    np.testing.assert_array_equal(covered, np.arange(100))
    assert all(np.sum(y[v] == 1) == 6 for _, v in folds)
    with pytest.raises(ParameterError):
        val.stratified_split(y, 1.5)
    with pytest.raises(ParameterError):
        val.stratified_folds(y, 1)


def test_choose_C_walk_stops_after_patience():
    calls = []

    def scorer(fold, train, held, C, refit_grid):
        calls.append(C)
        accuracy = {1: 0.5, 2: 0.8, 3: 0.7, 4: 0.6, 5: 0.9}[C]
        return [{"refit_C": None, "accuracy": accuracy, "loss": 1.0, "n_features": 3}]

    curve = val.choose_C([(None, None)], [1, 2, 3, 4, 5], scorer)
    assert curve.C == 2 and calls == [1, 2, 3, 4]
    assert [p["C"] for p in curve.points] == [1, 2, 3, 4]



def test_choose_C_walks_the_refit_grid_with_patience():
    """Refit Cs are asked for lazily, over all folds, and the refit walk of
    each C stops after PATIENCE values below that C's best refit."""
    asked = []
    refit_accuracy = {1: 0.6, 2: 0.9, 3: 0.8, 4: 0.7, 5: 0.95}

    def scorer(fold, train, held, C, refit_grid):
        yield {"refit_C": None, "accuracy": 0.5, "loss": 1.0, "n_features": 3}
        for refit_C in refit_grid:
            asked.append((fold, C, refit_C))
            yield {"refit_C": refit_C, "accuracy": refit_accuracy[refit_C] - 0.01 * C,
                   "loss": 1.0, "n_features": 3}

    folds = [(None, None), (None, None)]
    # (the best C, 1, lies at the grid's edge: widen=False keeps the walk to it)
    curve = val.choose_C(folds, [1, 2, 3], scorer, refit_grid=[1, 2, 3, 4, 5],
                         widen=False)
    # every C: refits 1, 2 (best), 3, 4 (two below), never 5; both folds each
    assert [(c, r) for f, c, r in asked if f == 0] == \
        [(C, r) for C in (1, 2, 3) for r in (1, 2, 3, 4)]
    assert [(c, r) for f, c, r in asked if f == 1] == \
        [(C, r) for C in (1, 2, 3) for r in (1, 2, 3, 4)]
    assert (curve.C, curve.refit_C, curve.predictor) == (1, 2, "refit")
    # per C: FGM's own weights, then the four refits
    assert len(curve.points) == 15
    assert [p["predictor"] for p in curve.points[:5]] == ["selection"] + ["refit"] * 4


def test_choose_C_lets_FGM_s_own_weights_predict_where_they_score_better():
    """With a refit, FGM's own weights compete for the best point, outside
    the refit walk (which goes on as without them); when they win, the
    curve keeps the best refit of the chosen C for the model to hold."""
    own = {1: 0.7, 2: 0.95, 3: 0.6}

    def scorer(fold, train, held, C, refit_grid):
        yield {"refit_C": None, "accuracy": own[C], "loss": 1.0, "n_features": 3}
        for refit_C in refit_grid:
            yield {"refit_C": refit_C, "accuracy": 0.8 + 0.01 * (refit_C == C + 1),
                   "loss": 1.0, "n_features": 3}

    curve = val.choose_C([(None, None)], [1, 2, 3], scorer, refit_grid=[1, 2, 3, 4])
    assert (curve.C, curve.predictor) == (2, "selection")
    assert curve.refit_C == 3           # the best refit of C = 2
    point = curve.to_dict()
    assert point["predictor"] == "selection" and point["refit_C"] == 3
    # the refit walk of every C is the one it would be without FGM's weights
    assert [(p["C"], p["refit_C"]) for p in curve.points if p["predictor"] == "refit"] \
        == [(1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 2), (2, 3), (2, 4),
            (3, 1), (3, 2), (3, 3)]
    # without a refit the curve names no predictor
    plain = val.choose_C([(None, None)], [1, 2, 3],
                         lambda *a: [{"refit_C": None, "accuracy": 0.5, "loss": 1.0,
                                      "n_features": 3}])
    assert plain.predictor is None and "predictor" not in plain.to_dict()
    assert all("predictor" not in p for p in plain.points)



def test_choose_C_folds_in_threads_give_the_same_curve():
    """n_jobs advances the folds in threads; the curve is the same."""
    import threading

    seen = set()

    def scorer(fold, train, held, C, refit_grid):
        seen.add(threading.current_thread().name)
        yield {"refit_C": None, "accuracy": 0.4 + 0.1 * fold, "loss": float(C),
               "n_features": fold}
        for refit_C in refit_grid:
            seen.add(threading.current_thread().name)
            yield {"refit_C": refit_C, "accuracy": 0.5 + 0.1 * fold - 0.01 * abs(C - 2)
                   - 0.02 * abs(refit_C - 3), "loss": float(C), "n_features": fold}

    folds = [(None, None)] * 4
    one = val.choose_C(folds, [1, 2, 3, 4, 5], scorer, refit_grid=[1, 2, 3, 4, 5])
    assert seen == {threading.current_thread().name}
    seen.clear()
    many = val.choose_C(folds, [1, 2, 3, 4, 5], scorer, refit_grid=[1, 2, 3, 4, 5],
                        n_jobs=3)
    assert all(name.startswith("ultrafs-fold") for name in seen) and len(seen) > 1
    strip = lambda c: [{k: v for k, v in p.items() if k != "seconds"}  # noqa: E731
                       for p in c.points]
    assert strip(many) == strip(one) and (many.C, many.refit_C) == (one.C, one.refit_C)


def test_choose_C_fold_error_propagates_from_a_thread():
    def scorer(fold, train, held, C, refit_grid):
        if fold == 2:
            raise ParameterError("fold 2 failed")
        yield {"refit_C": None, "accuracy": 0.5, "loss": 1.0, "n_features": 1}

    with pytest.raises(ParameterError, match="fold 2 failed"):
        val.choose_C([(None, None)] * 3, [1, 2], scorer, n_jobs=3)


def test_C_auto_fold_threads_follow_scheduler_and_size(rng, monkeypatch):
    """Folds run in threads only with the threads scheduler, several folds and
    rows copied into memory; the model is the same as with one thread."""
    import ultrafs.api as api
    import ultrafs.store.rows as rows

    X, y = _problem(rng, n=200, m=30)
    store = InMemoryStore(X, y)
    options = {"scheduler": None, "num_workers": None}
    assert c_choice.fold_threads(store, 5, {**options, "num_workers": 3}) == 1  # small
    monkeypatch.setattr(c_choice, "THREADED_FOLDS_MIN_NNZ", store.nnz)
    assert c_choice.fold_threads(store, 5, options) >= 1
    assert c_choice.fold_threads(store, 5, {**options, "num_workers": 3}) == 3
    assert c_choice.fold_threads(store, 1, {**options, "num_workers": 3}) == 1
    assert c_choice.fold_threads(store, 5, {**options, "num_workers": 3,
                                        "scheduler": "synchronous"}) == 1
    monkeypatch.setattr(rows, "MATERIALIZE_MAX_NNZ", store.nnz - 1)
    assert c_choice.fold_threads(store, 5, {**options, "num_workers": 3}) == 1
    monkeypatch.setattr(rows, "MATERIALIZE_MAX_NNZ", store.nnz)
    threaded = select(X, y, B=2, max_iter=2, C="auto", refit=True, cv=4, num_workers=4)
    serial = select(X, y, B=2, max_iter=2, C="auto", refit=True, cv=4, num_workers=1)
    assert _curve(threaded) == _curve(serial)
    np.testing.assert_array_equal(threaded.coef, serial.coef)


def test_grid_warm_start_keeps_the_selections_and_certificates(rng):
    """Fits along an increasing grid of C warm-started from each other select
    what cold fits select, every solve certified, and some start warm."""
    from ultrafs.methods.fgm import GridWarmStart, fit_fgm

    X, y = _problem(rng, n=300, m=60)
    space = LinearFeatures(InMemoryStore(X, y))
    warm = GridWarmStart()
    for C in val.c_grid(val.default_C(space))[:5]:
        cold = fit_fgm(space, y, B=3, max_iter=4, C=C)
        hot = fit_fgm(space, y, B=3, max_iter=4, C=C, warm_start=warm)
        np.testing.assert_array_equal(hot.keys, cold.keys)
        np.testing.assert_allclose(hot.coef, cold.coef, rtol=1e-3, atol=1e-3 *
                                   np.abs(cold.coef).max())
        assert all(r["inner_converged"] and r["inner_kkt"] <= 1e-4
                   for r in hot.history)
    assert 0 < warm.hits <= warm.lookups
    assert len(warm._previous) <= 3 * 4 and len(warm._current) <= 3 * 4


def test_grid_warm_start_looks_up_exact_working_sets():
    from ultrafs.methods.fgm import GridWarmStart

    warm = GridWarmStart()
    warm.next_fit()
    warm.record(np.array([3, 1]), 1, np.array([0.5, -0.2]), 0.1, 2)
    assert warm.lookup(np.array([3, 1]), 1, 2) is None      # same fit: not yet
    warm.next_fit()
    coef, bias = warm.lookup(np.array([3, 1]), 1, 2)
    assert (warm.lookups, warm.hits) == (2, 1)
    np.testing.assert_array_equal(coef, [0.5, -0.2])
    assert bias == 0.1
    coef[0] = 9.0                                          # a copy
    assert warm.lookup(np.array([3, 1]), 1, 3)[0][0] == 0.5
    assert warm.lookup(np.array([3, 1]), 1, 1) is None     # a later iteration's
    assert warm.lookup(np.array([1, 3]), 1, 2) is None     # order matters
    assert warm.lookup(np.array([3, 1]), 3, 2) is None     # classes too
    warm.next_fit()                                        # a fit that solved nothing
    assert warm.lookup(np.array([3, 1]), 1, 2) is None


def test_grid_warm_start_chain_links_each_fit_to_the_one_before():
    from ultrafs.methods.fgm import GridWarmStart

    warm = GridWarmStart()
    warm.next_fit()
    warm.record(np.array([4]), 1, np.array([1.0]), 0.0, 1)   # the fit before
    first, second = warm.chain(2)
    first.next_fit()                                         # links stay linked
    second.next_fit()
    assert first.lookup(np.array([4]), 1, 1) is not None
    assert second.lookup(np.array([4]), 1, 1) is None        # not first's yet
    first.record(np.array([4, 7]), 1, np.array([1.0, 2.0]), 0.0, 2)
    assert second.lookup(np.array([4, 7]), 1, 2)[0][1] == 2.0
    second.record(np.array([4, 7]), 1, np.array([3.0, 2.0]), 0.0, 2)
    assert (warm.lookups, warm.hits) == (3, 2)               # counted by the parent
    warm.next_fit()                                          # continues from second
    assert warm.lookup(np.array([4, 7]), 1, 2)[0][0] == 3.0


def test_grid_warm_start_refuses_resume(rng, tmp_path):
    from ultrafs.methods.fgm import GridWarmStart, fit_fgm

    X, y = _problem(rng, n=60, m=10)
    space = LinearFeatures(InMemoryStore(X, y))
    with pytest.raises(ParameterError, match="warm_start and resume"):
        fit_fgm(space, y, B=2, max_iter=2, warm_start=GridWarmStart(), resume=True,
                checkpoint=None)


# ----------------------------------------------------------------- C auto
def _curve(model):
    """The validation curve without its timings."""
    curve = dict(model.params["validation"])
    curve["points"] = [{k: v for k, v in p.items() if k != "seconds"}
                       for p in curve["points"]]
    return curve


def test_C_auto_picks_a_grid_value_and_records_the_curve(rng):
    X, y = _problem(rng)
    model = select(X, y, B=2, max_iter=3, C="auto", refit=True, validation_fraction=0.25)
    curve = model.params["validation"]
    grid = val.c_grid(val.default_C(LinearFeatures(InMemoryStore(X, y))))
    assert model.params["C"] in grid and model.params["refit_C"] in grid
    assert curve["method"] == "holdout" and curve["fraction"] == 0.25
    best = max(curve["points"], key=lambda p: p["accuracy"])
    assert best["accuracy"] == max(p["accuracy"] for p in curve["points"])
    assert val.chosen_point(curve)["accuracy"] == best["accuracy"]
    # small data: 5 folds by default
    assert select(X, y, B=2, max_iter=2, C="auto").params["validation"]["folds"] == 5


def test_C_auto_parameters_are_checked(rng):
    X, y = _problem(rng, n=60)
    with pytest.raises(ParameterError):
        select(X, y, C="best")
    with pytest.raises(ParameterError):
        select(X, y, C=1.0, cv=3)
    with pytest.raises(ParameterError):
        select(X, y, C="auto", cv=3, validation_fraction=0.2)


def test_the_estimator_ignores_the_C_auto_split_for_any_other_C(rng):
    """validation_fraction and cv choose C="auto"'s held-out rows: for any
    other C the estimator ignores both (so that a search over C may keep
    them fixed), while the functional core refuses them (above)."""
    from sklearn.model_selection import GridSearchCV

    X, y = _problem(rng, n=60)
    plain = FGMClassifier(B=2, max_iter=2, C=2.0).fit(X, y)
    for split in ({"validation_fraction": 0.25}, {"cv": 3}):
        ignored = FGMClassifier(B=2, max_iter=2, C=2.0, **split).fit(X, y)
        np.testing.assert_array_equal(ignored.coef_, plain.coef_)
        assert ignored.C_ == 2.0
    search = GridSearchCV(FGMClassifier(B=2, max_iter=2, validation_fraction=0.25),
                          {"C": [2.0, "auto"]}, cv=2).fit(X, y)
    assert search.best_params_["C"] in (2.0, "auto")


@pytest.mark.parametrize("refit", [False, True])
@pytest.mark.parametrize("scheduler", ["threads", "synchronous", "processes"])
def test_C_auto_is_deterministic_on_every_scheduler(rng, tmp_path, scheduler, refit):
    X, y = _problem(rng, n=200, m=30)
    path = tmp_path / "s.zarr"
    write_store(path, sp.csc_matrix(X), y)
    from ultrafs.store import open_store

    reference = select(open_store(path), B=2, max_iter=2, C="auto", cv=3, seed=7,
                       scheduler="synchronous", block_size=30, refit=refit)
    got = select(open_store(path), B=2, max_iter=2, C="auto", cv=3, seed=7,
                 scheduler=scheduler, block_size=7, refit=refit)
    assert _curve(got) == _curve(reference)
    assert got.features == reference.features
    np.testing.assert_array_equal(got.coef, reference.coef)
    assert got.predictor == reference.predictor
    if refit:
        np.testing.assert_array_equal(got.refit["coef"], reference.refit["coef"])


def test_C_auto_is_deterministic_on_a_local_cluster(rng, tmp_path, local_cluster_client):
    X, y = _problem(rng, n=200, m=30)
    path = tmp_path / "s.zarr"
    write_store(path, sp.csc_matrix(X), y)
    from ultrafs.store import open_store

    for refit in (False, True):
        reference = select(open_store(path), B=2, max_iter=2, C="auto", cv=3, seed=7,
                           scheduler="synchronous", refit=refit)
        got = select(open_store(path), B=2, max_iter=2, C="auto", cv=3, seed=7,
                     scheduler=local_cluster_client, block_size=5, refit=refit)
        assert _curve(got) == _curve(reference)
        np.testing.assert_array_equal(got.coef, reference.coef)
        assert got.predictor == reference.predictor


def test_cli_C_auto(rng, tmp_path):
    X, y = _problem(rng, n=150, m=20)
    path = tmp_path / "s.zarr"
    write_store(path, sp.csc_matrix(X), y)
    out = tmp_path / "m.json"
    result = CliRunner().invoke(main, ["select", "--data", str(path), "--B", "2",
                                       "--max-iter", "2", "--C", "auto", "--cv", "3",
                                       "--seed", "1", "--refit", "--out", str(out)])
    assert result.exit_code == 0, result.output
    model = json.loads(out.read_text())
    assert model["params"]["validation"]["folds"] == 3
    assert model["params"]["validation"]["seed"] == 1
    bad = CliRunner().invoke(main, ["select", "--data", str(path), "--C", "-1"])
    assert bad.exit_code != 0 and "Traceback" not in bad.output


def _noisy_problem(seed, n=80, m=30):
    """Few noisy rows: on seed 2 the held-out rows score FGM's own weights
    above every refit (found by a search over seeds, checked below)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m))
    y = np.where(X[:, :3].sum(axis=1) + 1.5 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def test_C_auto_lets_FGM_s_own_weights_predict_when_they_score_better(tmp_path,
                                                                      monkeypatch):
    """With refit=True, C="auto" also scores FGM's own weights; where they
    beat every refit, they predict, the model keeps the best refit of the
    chosen C, and the file, the CLI summary and the report say so."""
    from ultrafs.model import Model
    from ultrafs.report import _validation_section

    X, y = _noisy_problem(2)
    model = select(X, y, B=2, max_iter=2, C="auto", refit=True)
    curve = model.params["validation"]
    assert curve["predictor"] == "selection" and model.predictor == "selection"
    chosen = val.chosen_point(curve)
    assert chosen["predictor"] == "selection" and chosen["refit_C"] is None
    assert all(chosen["accuracy"] >= p["accuracy"] for p in curve["points"])
    # the refit kept is the best refit of the chosen C
    refits = [p for p in curve["points"]
              if p["C"] == curve["C"] and p["predictor"] == "refit"]
    assert model.refit["C"] == curve["refit_C"] == model.params["refit_C"]
    assert max(refits, key=lambda p: (p["accuracy"], -p["loss"]))["refit_C"] \
        == curve["refit_C"]
    # FGM's own weights predict
    store = InMemoryStore(X, y)
    np.testing.assert_allclose(model.decision_function_store(store),
                               X[:, model.features] @ model.coef + model.intercept)
    model.save(tmp_path / "m.json")
    assert Model.load(tmp_path / "m.json").predictor == "selection"
    clf = FGMClassifier(B=2, max_iter=2, C="auto", refit=True).fit(X, y)
    assert clf.validation_["predictor"] == "selection"
    np.testing.assert_array_equal(clf.selected_coef_, clf.selection_coef_)
    np.testing.assert_array_equal(
        clf.predict(X), model.predict_from_decision(model.decision_function_store(store)))
    html = "".join(_validation_section({"validation": "v.png"}, curve))
    assert html.count("<td class=\"text\">yes</td>") == 1
    assert "they did, so the model predicts with them" in html
    forged = json.loads((tmp_path / "m.json").read_text())
    forged["params"]["validation"]["predictor"] = "both"
    from ultrafs.errors import InputFormatError
    with pytest.raises(InputFormatError, match="predictor"):
        Model.from_dict(forged)
    # where the refit scores better, it predicts (as before)
    X, y = _noisy_problem(0)
    model = select(X, y, B=2, max_iter=2, C="auto", refit=True)
    assert model.params["validation"]["predictor"] == model.predictor == "refit"
    # the CLI's summary (on a terminal) says which weights predict
    from ultrafs.cli import terminal

    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: True)
    path = tmp_path / "s.zarr"
    X, y = _noisy_problem(2)
    write_store(path, sp.csc_matrix(X), y)
    result = CliRunner().invoke(main, ["select", "--data", str(path), "--B", "2",
                                       "--max-iter", "2", "--C", "auto", "--refit",
                                       "--out", str(tmp_path / "c.json")])
    assert result.exit_code == 0, result.output
    assert "FGM's own weights (they scored better" in result.output


# ------------------------------------------------- the grid: widened or given
def _peaked(peak):
    """A scorer whose held-out accuracy peaks at C = ``peak`` (log scale)."""
    asked = []

    def scorer(fold, train, held, C, refit_grid):
        asked.append(C)
        return [{"refit_C": None, "accuracy": 0.9 - 0.01 * abs(np.log10(C / peak)),
                 "loss": 1.0, "n_features": 3}]

    return scorer, asked


def test_choose_C_widens_the_grid_below_until_the_best_lies_inside():
    scorer, asked = _peaked(0.1)
    curve = val.choose_C([(None, None)], [1.0, 3.16, 10.0], scorer)
    # 1 at the edge: 0.316, 0.1 (best), then 0.0316 scores below: stop
    assert asked == [1.0, 3.16, 10.0, 0.316, 0.1, 0.0316]
    assert curve.C == 0.1 and curve.edge is None
    assert curve.widened == [0.316, 0.1, 0.0316]
    assert curve.grid == [0.0316, 0.1, 0.316, 1.0, 3.16, 10.0]
    record = curve.to_dict()
    assert record["widened"] == [0.316, 0.1, 0.0316] and "edge" not in record
    assert "grid widened below to C = 0.0316" in val.validation_note(record)


def test_choose_C_widens_the_grid_above_and_at_most_WIDEN_STEPS_values():
    scorer, asked = _peaked(1e6)
    curve = val.choose_C([(None, None)], [1.0, 3.16, 10.0], scorer)
    assert asked == [1.0, 3.16, 10.0, 31.6, 100.0, 316.0]
    assert len(curve.widened) == val.WIDEN_STEPS
    assert curve.C == 316.0 and curve.edge == "above"
    note = val.validation_note(curve.to_dict())
    assert "grid widened above to C = 316" in note and "larger C may score" in note
    # the best inside: nothing widened, the curve as before
    scorer, asked = _peaked(3.16)
    curve = val.choose_C([(None, None)], [1.0, 3.16, 10.0], scorer)
    assert asked == [1.0, 3.16, 10.0] and curve.widened == [] and curve.edge is None
    assert "widened" not in curve.to_dict() and val.validation_note(curve.to_dict()) == ""


def test_choose_C_widening_is_the_same_in_threads():
    def scorer(fold, train, held, C, refit_grid):
        yield {"refit_C": None, "accuracy": 0.5 + 0.1 * fold - 0.01 * C, "loss": 1.0,
               "n_features": fold}
        for refit_C in refit_grid:
            yield {"refit_C": refit_C, "accuracy": 0.6 + 0.1 * fold - 0.01 * C
                   - 0.001 * refit_C, "loss": 1.0, "n_features": fold}

    folds = [(None, None)] * 3
    one = val.choose_C(folds, [1.0, 3.16, 10.0], scorer, refit_grid=[1.0, 3.16, 10.0])
    many = val.choose_C(folds, [1.0, 3.16, 10.0], scorer, refit_grid=[1.0, 3.16, 10.0],
                        n_jobs=3)
    strip = lambda c: [{k: v for k, v in p.items() if k != "seconds"}  # noqa: E731
                       for p in c.points]
    assert strip(many) == strip(one) and many.to_dict()["grid"] == one.to_dict()["grid"]
    assert one.widened == [0.316, 0.1, 0.0316] and one.C == 0.0316
    # the refit grid follows the widening: the last C's refits start at 0.0316
    assert [p["refit_C"] for p in one.points if p["C"] == 0.0316][1] == 0.0316


def _small_C_problem(n=60, m=200, seed=0):
    """Labels independent of the rows, 70% of one class: the best model
    predicts the majority (the smaller C, the closer)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m))
    y = np.where(rng.permutation(n) < int(0.7 * n), 1, -1)
    return X, y


def test_C_auto_chooses_below_the_default_grid_and_says_so(tmp_path):
    X, y = _small_C_problem()
    model = select(X, y, B=5, max_iter=2, C="auto", cv=3)
    curve = model.params["validation"]
    default = val.c_grid(val.default_C(LinearFeatures(InMemoryStore(X, y))))
    assert model.params["C"] < default[0]
    assert curve["widened"] and min(curve["widened"]) == curve["grid"][0]
    assert model.params["C"] in curve["widened"]
    assert curve["grid"][len(curve["widened"]):] == default
    path = tmp_path / "s.zarr"
    write_store(path, sp.csc_matrix(X), y)
    result = CliRunner().invoke(main, ["select", "--data", str(path), "--B", "5",
                                       "--max-iter", "2", "--C", "auto", "--cv", "3",
                                       "--out", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    assert "grid widened below to C = " in result.output


def test_C_auto_with_a_given_grid_uses_it_as_is(rng, tmp_path):
    X, y = _small_C_problem()
    grid = [3.0, 0.5, 1.0, 0.5]
    model = select(X, y, B=2, max_iter=2, C="auto", cv=3, C_grid=grid, refit=True)
    curve = model.params["validation"]
    assert curve["grid"] == [0.5, 1.0, 3.0] and curve["given"] is True
    assert "widened" not in curve
    assert {p["C"] for p in curve["points"]} <= {0.5, 1.0, 3.0}
    assert {p["refit_C"] for p in curve["points"]} - {None} <= {0.5, 1.0, 3.0}
    assert model.params["C"] == 0.5 and curve["edge"] == "below"
    path = tmp_path / "s.zarr"
    write_store(path, sp.csc_matrix(X), y)
    out = tmp_path / "m.json"
    result = CliRunner().invoke(main, ["select", "--data", str(path), "--B", "2",
                                       "--max-iter", "2", "--C", "auto", "--cv", "3",
                                       "--C-grid", "3,0.5,1", "--refit",
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "C is the smallest of the given grid" in result.output
    saved = json.loads(out.read_text())["params"]["validation"]
    assert saved["grid"] == [0.5, 1.0, 3.0]
    assert [p["C"] for p in saved["points"]] == [p["C"] for p in curve["points"]]


def test_C_grid_needs_C_auto(tmp_path):
    X, y = _small_C_problem(n=40)
    with pytest.raises(ParameterError, match="C_grid is the grid of C auto"):
        select(X, y, C_grid=[1.0, 2.0])
    with pytest.raises(ParameterError, match="C_grid"):
        select(X, y, C="auto", C_grid=[1.0, -2.0])
    with pytest.raises(ParameterError, match="give C auto and C_grid the values"):
        select(X, y, C=[0.1, 1.0])
    path = tmp_path / "s.zarr"
    write_store(path, sp.csc_matrix(X), y)
    refused = CliRunner().invoke(main, ["select", "--data", str(path), "--C", "2",
                                        "--C-grid", "1,2"])
    assert refused.exit_code == 2, refused.output
    assert "--C-grid" in refused.output and "--C auto" in refused.output
    assert "Traceback" not in refused.output
    bad = CliRunner().invoke(main, ["select", "--data", str(path), "--C", "auto",
                                    "--C-grid", "1,x"])
    assert bad.exit_code == 2 and "--C-grid" in bad.output


class _ListJournal:
    """A journal in memory (what c_search_checkpoint.SearchJournal keeps on disk)."""

    def __init__(self, visits=()):
        self.visits = [dict(v) for v in visits]
        self.recorded = len(self.visits)
        self.next = 0

    def pending(self):
        return {v["C"] for v in self.visits[self.next:self.recorded]}

    def replay(self, C):
        if self.next >= self.recorded:
            return None
        assert self.visits[self.next]["C"] == C
        self.next += 1
        return [dict(p) for p in self.visits[self.next - 1]["points"]]

    def commit(self, C, points):
        self.visits.append({"C": C, "points": [dict(p) for p in points]})
        self.next = len(self.visits)

    def finish(self):
        assert self.next >= self.recorded       # every recorded visit replayed


@pytest.mark.parametrize("peak", [0.1, 3.16, 1e6], ids=["below", "inside", "above"])
def test_choose_C_replays_a_journal_to_the_same_curve(peak):
    """Cut after any grid point, the walk replays the recorded points, fits
    (and prefits) only the others and ends with the same curve."""
    def make_scorer():
        scorer, asked = _peaked(peak)
        prefitted = []

        class Prefitting:
            def __call__(self, *args):
                return scorer(*args)

            def prefit(self, folds, Cs):
                prefitted.extend(Cs)

        return Prefitting(), asked, prefitted

    grid = [1.0, 3.16, 10.0, 31.6]
    scorer, _, _ = make_scorer()
    full_journal = _ListJournal()
    full = val.choose_C([(None, None)], grid, scorer, refit_grid=None,
                        journal=full_journal)
    plain = val.choose_C([(None, None)], grid, make_scorer()[0])
    strip = lambda c: [{k: v for k, v in p.items() if k != "seconds"}  # noqa: E731
                       for p in c.points]
    assert strip(full) == strip(plain) and full.to_dict()["grid"] == plain.to_dict()["grid"]
    assert bool(full.widened) == (peak != 3.16)
    visits = full_journal.visits
    for cut in range(len(visits) + 1):
        scorer, asked, prefitted = make_scorer()
        journal = _ListJournal(visits[:cut])
        resumed = val.choose_C([(None, None)], grid, scorer, journal=journal)
        recorded = {v["C"] for v in visits[:cut]}
        assert not recorded & set(asked) and not recorded & set(prefitted)
        assert strip(resumed) == strip(full)
        assert {k: v for k, v in resumed.to_dict().items() if k != "points"} == \
            {k: v for k, v in full.to_dict().items() if k != "points"}
        # the recorded points keep their seconds
        assert [p for p in resumed.points if p["C"] in recorded] == \
            [p for p in full.points if p["C"] in recorded]
        assert [v["C"] for v in journal.visits] == [v["C"] for v in visits]
