"""The pair Gram path of the degree-2 worst-case analysis.

Binary FGM scores the crosses among its seed and live columns as a dense
Gram ``X' diag(a) X`` accumulated by row ranges (``kernels/poly.py:
pair_gram_rows``, ``gram_topk``); these tests hold it to a dense NumPy
reference, to the pairwise kernel it replaces, and to the promise that
its sums depend on the number of rows only (not on the sub-range size,
the block size or the scheduler).
"""

import numpy as np
import pytest
import scipy.sparse as sp

import ultrafs.features.poly as poly
from ultrafs.features.poly import PolyFeatures, gram_row_ranges
from ultrafs.kernels.poly import gram_topk, pair_gram_rows
from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.store import InMemoryStore


def _csc(rng, n, p, density, dtype, binary):
    X = sp.random(n, p, density=density, format="csc", dtype=np.float64,
                  random_state=np.random.RandomState(rng.integers(2**31)))
    X = X.toarray()
    if binary:
        X = (X > 0).astype(np.float64)
    if p > 2:
        X[:, 2] = 0                     # empty column
    X[: min(3, n), :] = 0               # zero rows
    X = X.astype(dtype)
    C = sp.csc_matrix(X)
    C.sort_indices()
    data = np.zeros(0, dtype=dtype) if binary else C.data
    return X, C.indptr.astype(np.int64), C.indices.astype(np.int32), data


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("n, p", [(1, 1), (5, 4), (97, 13), (300, 40)])
def test_pair_gram_rows_matches_dense(rng, dtype, binary, n, p):
    X, indptr, indices, data = _csc(rng, n, p, 0.3, dtype, binary)
    a = rng.standard_normal(n)
    a[rng.random(n) < 0.2] = 0.0        # zero weights are skipped
    expected = np.triu(X.astype(np.float64).T @ (a[:, None] * X.astype(np.float64)), 1)
    out = np.zeros((p, p))
    seen = pair_gram_rows(indptr, indices, data, a, 0, n, 7, out)
    assert seen == indptr[-1]
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    assert not np.tril(out).any()


@pytest.mark.parametrize("binary", [False, True])
def test_row_ranges_add_up_and_sub_rows_do_not_matter(rng, binary):
    n, p = 257, 17
    X, indptr, indices, data = _csc(rng, n, p, 0.25, np.float64, binary)
    a = rng.standard_normal(n)
    whole = np.zeros((p, p))
    pair_gram_rows(indptr, indices, data, a, 0, n, n, whole)
    for sub_rows in (1, 3, 64, 1000):
        out = np.zeros((p, p))
        pair_gram_rows(indptr, indices, data, a, 0, n, sub_rows, out)
        assert out.tobytes() == whole.tobytes()
    parts = np.zeros((p, p))
    total = 0
    for lo, hi in [(0, 10), (10, 11), (11, 11), (11, 200), (200, 257)]:
        part = np.zeros((p, p))
        total += pair_gram_rows(indptr, indices, data, a, lo, hi, 5, part)
        parts += part
    assert total == indptr[-1]
    np.testing.assert_allclose(parts, whole, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("split", [1, 6, 16])
def test_a_split_gram_is_the_square_one_s_tile(rng, dtype, binary, split):
    """``split``: the pairs across the split, the same bytes as the square
    form's entries (empty columns, zero rows, zero weights)."""
    n, p = 211, 17
    X, indptr, indices, data = _csc(rng, n, p, 0.3, dtype, binary)
    a = rng.standard_normal(n)
    a[rng.random(n) < 0.2] = 0.0
    square = np.zeros((p, p))
    pair_gram_rows(indptr, indices, data, a, 0, n, 7, square)
    tile = np.zeros((split, p - split))
    pair_gram_rows(indptr, indices, data, a, 0, n, 5, tile, split)
    assert tile.tobytes() == np.ascontiguousarray(square[:split, split:]).tobytes()
    columns = np.sort(rng.choice(100, p, replace=False)).astype(np.int64)
    whole = gram_topk(square, columns, 8.0, np.zeros(0, np.int64), 100, 500)
    part = gram_topk(tile, columns, 8.0, np.zeros(0, np.int64), 100, 500, split)
    across = np.isin(whole[0] // 101, columns[:split]) & \
        np.isin(whole[0] % 101 - 1, columns[split:])
    np.testing.assert_array_equal(part[0], whole[0][across])
    assert part[1].tobytes() == whole[1][across].tobytes()


def test_gram_topk_ranks_like_brute_force(rng):
    p, m = 12, 40
    columns = np.sort(rng.choice(m, p, replace=False)).astype(np.int64)
    gram = np.triu(np.round(rng.standard_normal((p, p)), 1), 1)  # ties likely
    gram[0, 5] = 0.0
    keys, scores = [], []
    for a in range(p):
        for b in range(a + 1, p):
            if gram[a, b] != 0:
                keys.append(columns[a] * (m + 1) + columns[b] + 1)
                scores.append(8.0 * gram[a, b] ** 2)
    keys, scores = np.array(keys), np.array(scores)
    excluded = np.sort(keys[:3])
    keep = ~np.isin(keys, excluded)
    order = np.lexsort((keys[keep], -scores[keep]))[:9]
    got_keys, got_scores, n_nonzero = gram_topk(gram, columns, 8.0, excluded, m, 9)
    np.testing.assert_array_equal(got_keys, keys[keep][order])
    np.testing.assert_allclose(got_scores, scores[keep][order], rtol=1e-15)
    assert n_nonzero == len(keys)


def test_gram_row_ranges_depend_on_rows_only():
    for n in (1, 5, poly.GRAM_TASK_ROWS, poly.GRAM_TASK_ROWS + 1, 10**8):
        ranges = gram_row_ranges(n)
        assert ranges[0][0] == 0 and ranges[-1][1] == n
        assert all(hi > lo for lo, hi in ranges)
        assert all(a[1] == b[0] for a, b in zip(ranges[:-1], ranges[1:]))
        assert len(ranges) <= poly.GRAM_MAX_TASKS


def _data(rng, binary, n=400, m=25):
    X = sp.random(n, m, density=0.15, format="csc",
                  random_state=np.random.RandomState(rng.integers(2**31))).toarray()
    if binary:
        X = (X > 0).astype(np.float64)
    X[:, 3] = 0
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return X, y


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("n_seed", [2, 256])
def test_gram_path_equals_pairwise_kernel(rng, monkeypatch, binary, n_seed):
    """Same candidates as the pairwise kernel, scores equal to rounding."""
    X, y = _data(rng, binary)
    weights = rng.random(len(y)) * y

    def candidates(max_columns, task_rows, gram=True):
        monkeypatch.setattr(poly, "GRAM_MAX_COLUMNS", max_columns)
        monkeypatch.setattr(poly, "GRAM_TASK_ROWS", task_rows)
        monkeypatch.setattr(PolyFeatures, "_use_gram",
                            staticmethod(lambda weights, columns: gram))
        space = PolyFeatures(InMemoryStore(X, y, block_size=7), gamma=2.0, coef0=1.0,
                             n_seed=n_seed)
        cand, _ = worst_case_analysis(space, weights, 15, scheduler="synchronous")
        return cand

    pairwise = candidates(2048, 1 << 17, gram=False)
    for task_rows in (1 << 17, 64):     # one task, several tasks
        whole = candidates(2048, task_rows)
        np.testing.assert_array_equal(whole.keys, pairwise.keys)
        np.testing.assert_allclose(whole.scores, pairwise.scores, rtol=1e-12)
        # tiles of 1, 3 and 7 columns: the same pairs with the same sums
        for tile in (1, 3, 7):
            tiled = candidates(tile, task_rows)
            np.testing.assert_array_equal(tiled.keys, whole.keys)
            assert tiled.scores.tobytes() == whole.scores.tobytes()


@pytest.mark.parametrize("binary", [False, True])
def test_gram_path_same_bytes_for_any_block_size_and_scheduler(rng, monkeypatch,
                                                               binary):
    monkeypatch.setattr(poly, "GRAM_TASK_ROWS", 50)   # 8 row tasks
    X, y = _data(rng, binary)
    weights = rng.random(len(y)) * y
    results = []
    for block_size, scheduler in [(1, "synchronous"), (7, "threads"), (25, "threads"),
                                  (4, "processes")]:
        space = PolyFeatures(InMemoryStore(X, y, block_size=block_size), gamma=2.0)
        cand, _ = worst_case_analysis(space, weights, 15, scheduler=scheduler,
                                      num_workers=2)
        results.append((cand.keys.tobytes(), cand.scores.tobytes()))
    assert all(r == results[0] for r in results)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["valued", "binary", "signed"])
@pytest.mark.parametrize("k, n_seed", [(0, 0), (1, 1), (7, 3), (500, 500)])
def test_fused_column_pass_equals_column_stats(rng, dtype, kind, k, n_seed):
    """column_pass_topk / live_columns_of_block give, bit for bit, what
    column_stats followed by the top-k selections gives."""
    from ultrafs.kernels.poly import (column_pass_topk, column_stats,
                                      live_columns_of_block)
    from ultrafs.kernels.scoring import topk_keyed

    n, p, first, m = 60, 40, 11, 90
    X, indptr, indices, data = _csc(rng, n, p, 0.2, dtype, kind == "binary")
    if kind == "signed":
        data = data * np.where(rng.random(len(data)) < 0.5, -1, 1).astype(dtype)
    binary = kind == "binary"
    a = rng.standard_normal(n)
    lin, sq, pos, neg, mx, mn = column_stats(indptr, indices, data, a, binary)
    columns = np.arange(first, first + p, dtype=np.int64)
    keys = np.concatenate([columns * (m + 1), columns * (m + 1) + columns + 1])
    scores = np.concatenate([2.0 * lin * lin, 9.0 * sq * sq])
    excluded = np.sort(keys[[0, 5, 47]])
    want = topk_keyed(scores, keys, excluded, k) if k else (keys[:0], scores[:0])
    want_seed = (topk_keyed(np.maximum(pos, neg), columns, keys[:0], n_seed)
                 if n_seed else (columns[:0], scores[:0]))
    got = column_pass_topk(indptr, indices, data, a, binary, first, m, 2.0, 9.0,
                           excluded, k, n_seed)
    for w, g in zip([*want, *want_seed], got[:4]):
        assert w.tobytes() == g.tobytes()
    assert got[4] == (mx.max() if p else 0.0) and got[5] == mn
    for nonnegative in (True, False):
        weight = np.maximum(pos, neg) if nonnegative else pos + neg
        for level in (0.0, float(np.median(weight)), np.inf):
            live = live_columns_of_block(indptr, indices, data, a, binary,
                                         nonnegative, level)
            np.testing.assert_array_equal(live, np.flatnonzero(weight >= level))
