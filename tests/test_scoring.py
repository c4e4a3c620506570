"""The worst-case analysis pass against a dense NumPy brute force."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ultrafs.errors import ParameterError
from ultrafs.features.linear import LinearFeatures
from ultrafs.kernels.scoring import (column_sums, column_sums_binary,
                                     column_sums_multi, column_sums_multi_binary,
                                     merge_topk, score_block_topk,
                                     score_block_topk_binary, score_block_topk_multi,
                                     score_block_topk_multi_binary,
                                     score_block_topk_queries,
                                     score_block_topk_queries_binary, topk_scores)
from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.store import InMemoryStore


def brute_force_topk(X_dense, weights, k, excluded=()):
    """Reference: scores ||X' A||^2, positive only, ranked (score desc, id asc)."""
    sums = X_dense.T.astype(np.float64) @ weights
    scores = sums ** 2 if sums.ndim == 1 else (sums ** 2).sum(axis=1)
    ids = np.arange(X_dense.shape[1])
    keep = (scores > 0) & ~np.isin(ids, list(excluded))
    ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return ids[order], scores[order]


def make_problem(rng, n=120, m=300, density=0.05, dtype=np.float64,
                 binary=False):
    X = sp.random(n, m, density=density, format="csc", dtype=np.float64,
                  random_state=np.random.RandomState(rng.integers(2**31)))
    if binary:
        X.data[:] = 1.0
    X = X.tolil()
    X[:, 7] = 0          # empty columns
    X[:, m - 1] = 0
    X[3, :] = 0          # zero rows
    X[n - 1, :] = 0
    X = sp.csc_matrix(X, dtype=dtype)
    X.eliminate_zeros()
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    return X, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_sums_match_dense(rng, dtype):
    X, _ = make_problem(rng, dtype=dtype)
    weights = rng.standard_normal(X.shape[0])
    sums = column_sums(X.indptr.astype(np.int64), X.indices, X.data, weights)
    expected = X.toarray().astype(np.float64).T @ weights
    np.testing.assert_allclose(sums, expected, rtol=1e-12, atol=1e-12)
    Xb = X.copy()
    Xb.data[:] = 1
    sums_b = column_sums_binary(Xb.indptr.astype(np.int64), Xb.indices, weights)
    np.testing.assert_allclose(sums_b, Xb.toarray().T @ weights, rtol=1e-12,
                               atol=1e-12)


def test_column_sums_empty_block():
    out = column_sums(np.zeros(1, np.int64), np.zeros(0, np.int32),
                      np.zeros(0), np.zeros(5))
    assert out.shape == (0,)
    out = column_sums(np.zeros(4, np.int64), np.zeros(0, np.int32),
                      np.zeros(0), np.zeros(5))
    np.testing.assert_array_equal(out, np.zeros(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block_size", [1, 7, 64, 1000])
@pytest.mark.parametrize("binary", [False, True])
def test_pass_equals_brute_force(rng, dtype, block_size, binary):
    X, y = make_problem(rng, dtype=dtype, binary=binary)
    store = InMemoryStore(X, y, block_size=block_size)
    weights = rng.random(X.shape[0]) * y
    excluded = [0, 5, 11]
    cand, stats = worst_case_analysis(LinearFeatures(store), weights, 10,
                                      excluded=excluded, scheduler="synchronous")
    ids, scores = brute_force_topk(X.toarray(), weights, 10, excluded)
    np.testing.assert_array_equal(cand.keys, ids)
    np.testing.assert_allclose(cand.scores, scores, rtol=1e-12)
    assert stats.nnz == X.nnz


def test_identical_across_block_sizes_and_schedulers(rng, local_cluster_client):
    """Same ids and bit-identical scores for any block size and scheduler."""
    X, y = make_problem(rng, n=200, m=900, density=0.03)
    weights = rng.random(X.shape[0]) * y
    features = LinearFeatures(InMemoryStore(X, y))
    reference, _ = worst_case_analysis(features, weights, 25, excluded=[1, 2],
                                       scheduler="synchronous", block_size=900)
    runs = [(bs, sch) for bs in (1, 13, 128, None)
            for sch in ("synchronous", "threads", "processes")]
    runs.append((50, local_cluster_client))
    for block_size, scheduler in runs:
        cand, _ = worst_case_analysis(features, weights, 25, excluded=[1, 2],
                                      scheduler=scheduler, block_size=block_size,
                                      num_workers=2 if scheduler == "threads" else None)
        np.testing.assert_array_equal(cand.keys, reference.keys)
        np.testing.assert_array_equal(cand.scores, reference.scores)


def test_ties_broken_by_feature_id(rng):
    """Duplicate columns have equal scores: the lower id wins, whatever the blocks."""
    base = sp.random(50, 1, density=0.5, format="csc",
                     random_state=np.random.RandomState(0))
    X = sp.hstack([base] * 40, format="csc")
    y = np.where(rng.random(50) < 0.5, -1.0, 1.0)
    y[:2] = [-1, 1]
    weights = rng.random(50) * y
    for block_size in (1, 3, 7, 40):
        cand, _ = worst_case_analysis(
            LinearFeatures(InMemoryStore(X, y, block_size=block_size)),
            weights, 5, excluded=[2], scheduler="threads")
        np.testing.assert_array_equal(cand.keys, [0, 1, 3, 4, 5])


def test_fewer_positive_candidates_than_k(rng):
    X = sp.csc_matrix(np.array([[1.0, 0, 0], [0, 0, 0], [0, 2.0, 0]]))
    y = np.array([1.0, -1.0, 1.0])
    cand, _ = worst_case_analysis(LinearFeatures(InMemoryStore(X, y)),
                                  np.array([1.0, -1.0, 0.5]), 10)
    np.testing.assert_array_equal(cand.keys, [0, 1])   # column 2 scores 0
    cand, _ = worst_case_analysis(LinearFeatures(InMemoryStore(X, y)),
                                  np.array([1.0, -1.0, 0.5]), 10, excluded=[0, 1])
    assert len(cand) == 0


ranked_lists = st.lists(
    st.tuples(st.integers(0, 60), st.sampled_from([0.5, 1.0, 2.0, 3.0])),
    max_size=40, unique_by=lambda t: t[0])


def _rank(pairs):
    pairs = sorted(pairs, key=lambda t: (-t[1], t[0]))
    keys = np.array([p[0] for p in pairs], dtype=np.int64)
    scores = np.array([p[1] for p in pairs], dtype=np.float64)
    return keys, scores


@settings(max_examples=200, deadline=None)
@given(items=ranked_lists, split=st.integers(0, 40), k=st.integers(1, 12))
def test_merge_is_order_invariant(items, split, k):
    """Merging any split of a candidate set, in either order, gives its top-k."""
    left, right = _rank(items[:split]), _rank(items[split:])
    ab = merge_topk(*left, *right, k)
    ba = merge_topk(*right, *left, k)
    expected = _rank(items)
    np.testing.assert_array_equal(ab[0], expected[0][:k])
    np.testing.assert_array_equal(ba[0], expected[0][:k])
    np.testing.assert_array_equal(ab[1], expected[1][:k])


@settings(max_examples=200, deadline=None)
@given(scores=st.lists(st.sampled_from([0.0, 1.0, 2.0, 4.0]), max_size=50),
       first=st.integers(0, 1000), k=st.integers(1, 10),
       excluded=st.lists(st.integers(0, 1060), max_size=10))
def test_topk_scores_matches_sort(scores, first, k, excluded):
    scores = np.array(scores, dtype=np.float64)
    excluded = np.unique(np.array(excluded, dtype=np.int64))
    keys, best = topk_scores(scores, first, excluded, k)
    ids = np.arange(first, first + len(scores))
    keep = (scores > 0) & ~np.isin(ids, excluded)
    order = np.lexsort((ids[keep], -scores[keep]))[:k]
    np.testing.assert_array_equal(keys, ids[keep][order])
    np.testing.assert_array_equal(best, scores[keep][order])


# ----------------------------------------------------------- K classes
def _csc_arrays(X):
    return X.indptr.astype(np.int64), X.indices, X.data


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_classes", [1, 3])
def test_column_sums_multi_match_dense_and_1d(rng, dtype, n_classes):
    """Per-class sums equal the dense product and, class by class, the 1-D kernel."""
    X, _ = make_problem(rng, dtype=dtype)
    indptr, indices, data = _csc_arrays(X)
    weights = rng.standard_normal((X.shape[0], n_classes))
    sums = column_sums_multi(indptr, indices, data, weights)
    assert sums.shape == (X.shape[1], n_classes) and sums.dtype == np.float64
    np.testing.assert_allclose(sums, X.toarray().astype(np.float64).T @ weights,
                               rtol=1e-12, atol=1e-12)
    ones = np.ones_like(data)
    sums_b = column_sums_multi_binary(indptr, indices, weights)
    for c in range(n_classes):
        column = np.ascontiguousarray(weights[:, c])
        np.testing.assert_array_equal(sums[:, c], column_sums(indptr, indices, data, column))
        np.testing.assert_array_equal(sums_b[:, c],
                                      column_sums_binary(indptr, indices, column))
    np.testing.assert_array_equal(sums_b, column_sums_multi(indptr, indices, ones, weights))
    assert np.all(sums[[7, X.shape[1] - 1]] == 0)          # empty columns


def test_multi_kernels_on_empty_blocks():
    weights = np.ones((5, 2))
    for indptr in (np.zeros(1, np.int64), np.zeros(4, np.int64)):
        n = len(indptr) - 1
        sums = column_sums_multi(indptr, np.zeros(0, np.int32), np.zeros(0), weights)
        np.testing.assert_array_equal(sums, np.zeros((n, 2)))
        keys, scores = score_block_topk_multi_binary(
            indptr, np.zeros(0, np.int32), weights, 10, np.zeros(0, np.int64), 3, 1.0)
        assert len(keys) == 0 and len(scores) == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("binary", [False, True])
def test_score_block_topk_multi_matches_dense(rng, dtype, binary):
    X, _ = make_problem(rng, dtype=dtype, binary=binary)
    indptr, indices, data = _csc_arrays(X)
    weights = rng.standard_normal((X.shape[0], 4))
    excluded = np.array([2, 9, 40], dtype=np.int64)
    first = 1000
    if binary:
        keys, scores = score_block_topk_multi_binary(indptr, indices, weights, first,
                                                     excluded + first, 12, 1.0)
        same = score_block_topk_multi(indptr, indices, data, weights, first,
                                      excluded + first, 12, 1.0)
        np.testing.assert_array_equal(keys, same[0])
        np.testing.assert_array_equal(scores, same[1])
    else:
        keys, scores = score_block_topk_multi(indptr, indices, data, weights, first,
                                              excluded + first, 12, 1.0)
    ids, expected = brute_force_topk(X.toarray(), weights, 12, excluded)
    np.testing.assert_array_equal(keys, ids + first)
    np.testing.assert_allclose(scores, expected, rtol=1e-12)
    # the scale multiplies every class sum
    _, scaled = score_block_topk_multi(indptr, indices, data, weights, first,
                                       excluded + first, 12, 3.0)
    np.testing.assert_allclose(scaled, 9.0 * scores, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_class_multi_scores_are_the_binary_scores(rng, dtype):
    """K = 1 gives the 1-D kernel's keys and scores bit for bit."""
    X, _ = make_problem(rng, dtype=dtype)
    indptr, indices, data = _csc_arrays(X)
    a = rng.standard_normal(X.shape[0])
    excluded = np.array([3], dtype=np.int64)
    for scale in (1.0, 0.7):
        one = score_block_topk(indptr, indices, data, a, 5, excluded, 20, scale)
        multi = score_block_topk_multi(indptr, indices, data, a[:, None].copy(), 5,
                                       excluded, 20, scale)
        np.testing.assert_array_equal(multi[0], one[0])
        np.testing.assert_array_equal(multi[1], one[1])
        one = score_block_topk_binary(indptr, indices, a, 5, excluded, 20, scale)
        multi = score_block_topk_multi_binary(indptr, indices, a[:, None].copy(), 5,
                                              excluded, 20, scale)
        np.testing.assert_array_equal(multi[0], one[0])
        np.testing.assert_array_equal(multi[1], one[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block_size", [1, 7, 1000])
@pytest.mark.parametrize("binary", [False, True])
def test_multiclass_pass_equals_brute_force(rng, dtype, block_size, binary):
    X, y = make_problem(rng, dtype=dtype, binary=binary)
    store = InMemoryStore(X, y, block_size=block_size)
    weights = rng.standard_normal((X.shape[0], 3))
    cand, stats = worst_case_analysis(LinearFeatures(store), weights, 10,
                                      excluded=[0, 5, 11], scheduler="synchronous")
    ids, scores = brute_force_topk(X.toarray(), weights, 10, [0, 5, 11])
    np.testing.assert_array_equal(cand.keys, ids)
    np.testing.assert_allclose(cand.scores, scores, rtol=1e-12)
    assert stats.nnz == X.nnz


def test_multiclass_identical_across_blocks_and_schedulers(rng):
    X, y = make_problem(rng, n=150, m=500, density=0.04)
    weights = np.asfortranarray(rng.standard_normal((X.shape[0], 5)))   # converted
    features = LinearFeatures(InMemoryStore(X, y))
    reference, _ = worst_case_analysis(features, weights, 20, scheduler="synchronous")
    runs = [(bs, sch) for bs in (1, 13, None) for sch in ("synchronous", "threads")]
    for block_size, scheduler in runs + [(37, "processes")]:
        cand, _ = worst_case_analysis(features, weights, 20, block_size=block_size,
                                      scheduler=scheduler)
        np.testing.assert_array_equal(cand.keys, reference.keys)
        np.testing.assert_array_equal(cand.scores, reference.scores)


def test_weights_and_k_are_checked(rng):
    X, y = make_problem(rng, n=30, m=20)
    features = LinearFeatures(InMemoryStore(X, y))
    for weights in (np.ones(29), np.ones((30, 0)), np.ones((30, 2, 1)), np.ones(()),
                    np.ones((29, 2))):
        with pytest.raises(ParameterError, match=r"weights must have shape \(30,\)"):
            worst_case_analysis(features, weights, 3)
    with pytest.raises(ParameterError, match="k must be >= 1"):
        worst_case_analysis(features, np.ones(30), 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_kernels_equal_sums_then_topk_scores(rng, dtype):
    """The fused block kernels give, bit for bit, ``topk_scores`` of the
    squared column sums (their documented reference), with exclusions,
    ties, a scale and K classes."""
    X, _ = make_problem(rng, dtype=dtype)
    indptr, indices, data = _csc_arrays(X)
    a = rng.standard_normal(X.shape[0])
    A = rng.standard_normal((X.shape[0], 3))
    excluded = np.array([5, 6, 30, 31], dtype=np.int64)
    for scale, k in ((1.0, 7), (0.3, 40)):
        sums = column_sums(indptr, indices, data, a)
        want = topk_scores((scale * sums) ** 2, 5, excluded, k)
        got = score_block_topk(indptr, indices, data, a, 5, excluded, k, scale)
        for x, y in zip(got, want):
            np.testing.assert_array_equal(x, y)
        sums = column_sums_multi(indptr, indices, data, A)
        norms = np.array([sum((scale * v) ** 2 for v in row) for row in sums])
        want = topk_scores(norms, 5, excluded, k)
        got = score_block_topk_multi(indptr, indices, data, A, 5, excluded, k, scale)
        for x, y in zip(got, want):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("binary", [False, True])
def test_score_block_topk_queries_is_each_query_alone(rng, dtype, binary):
    """The fused kernel of Q queries gives each query score_block_topk's
    result bit for bit (empty columns, zero rows, excluded keys, any k)."""
    X, y = make_problem(rng, n=80, m=60, density=0.1, dtype=dtype, binary=binary)
    indptr, indices, data = X.indptr.astype(np.int64), X.indices, X.data
    W = np.ascontiguousarray(np.stack([rng.random(80) * y, rng.standard_normal(80),
                                       np.zeros(80), -rng.random(80)], axis=1))
    excluded = [np.array([3, 7, 40], np.int64), np.array([], np.int64),
                np.array([0], np.int64), np.arange(100, 160, 3, dtype=np.int64)]
    ks = np.array([5, 1, 3, 60], dtype=np.int64)
    ptr = np.zeros(5, dtype=np.int64)
    np.cumsum([len(e) for e in excluded], out=ptr[1:])
    for first_key, scale in ((0, 1.0), (100, 0.5)):
        if binary:
            keys, scores, kptr = score_block_topk_queries_binary(
                indptr, indices, W, first_key, np.concatenate(excluded), ptr, ks, scale)
        else:
            keys, scores, kptr = score_block_topk_queries(
                indptr, indices, data, W, first_key, np.concatenate(excluded), ptr, ks,
                scale)
        for q in range(4):
            weights = np.ascontiguousarray(W[:, q])
            if binary:
                ref = score_block_topk_binary(indptr, indices, weights, first_key,
                                              excluded[q], int(ks[q]), scale)
            else:
                ref = score_block_topk(indptr, indices, data, weights, first_key,
                                       excluded[q], int(ks[q]), scale)
            np.testing.assert_array_equal(keys[kptr[q]:kptr[q + 1]], ref[0])
            np.testing.assert_array_equal(scores[kptr[q]:kptr[q + 1]], ref[1])
            dense_ids, dense_scores = brute_force_topk(
                X.toarray(), weights * scale, int(ks[q]), excluded[q] - first_key)
            np.testing.assert_array_equal(ref[0] - first_key, dense_ids)
            np.testing.assert_allclose(ref[1], dense_scores, rtol=1e-12)
        assert kptr[3] == kptr[2]                   # zero weights: no candidate
    empty = sp.csc_matrix((80, 5), dtype=dtype)
    keys, scores, kptr = score_block_topk_queries(
        empty.indptr.astype(np.int64), empty.indices, empty.data, W, 0,
        np.concatenate(excluded), ptr, ks, 1.0)
    assert len(keys) == len(scores) == 0 and kptr.tolist() == [0] * 5
