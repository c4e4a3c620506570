"""The statistics/filter pass and its kernels against dense NumPy references."""

import functools

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.features import LinearFeatures, PolyFeatures
from ultrafs.kernels.scoring import column_sums
from ultrafs.kernels.statistics import column_moments, column_moments_binary
from ultrafs.scoring.statistics import (DEFAULT_STATISTICS, STATISTICS,
                                        feature_statistics)
from ultrafs.store import InMemoryStore
from ultrafs.store.writers.zarr_writer import write_store


def make_matrix(rng, n=60, m=90, density=0.1, dtype=np.float64, binary=False,
                dense=False):
    """Signed values with empty columns (first, inside, last) and zero rows.

    ``dense``: no zero at all (min / max are those of the stored values),
    one column negative.
    """
    if dense:
        X = rng.uniform(0.5, 2.0, (n, m))
        X[:, 1] *= -1.0
        X = sp.csc_matrix(X, dtype=dtype)
    else:
        X = sp.random(n, m, density=density, format="lil", dtype=np.float64,
                      random_state=np.random.RandomState(rng.integers(2**31)),
                      data_rvs=lambda k: rng.standard_normal(k) * 3.0)
        X[:, [0, m // 3, m - 1]] = 0
        X[[4, n - 1], :] = 0
        X = sp.csc_matrix(X, dtype=dtype)
        X.eliminate_zeros()
    if binary:
        X.data[:] = 1
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [-1, 1]
    return X, y


def dense_reference(D, weights=None):
    D = D.astype(np.float64)
    ref = {"nnz": (D != 0).sum(axis=0), "sum": D.sum(axis=0),
           "sum_squares": (D ** 2).sum(axis=0), "min": D.min(axis=0),
           "max": D.max(axis=0),
           "centred_sum_squares": ((D - D.mean(axis=0)) ** 2).sum(axis=0)
           if D.shape[0] else np.zeros(D.shape[1])}
    if weights is not None:
        ref["weighted_sum"] = D.T @ weights
    return ref


# ------------------------------------------------------------- kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_moments_match_dense(rng, dtype):
    X, _ = make_matrix(rng, dtype=dtype)
    nnz, sums, sq, lo, hi = column_moments(X.indptr.astype(np.int64), X.data,
                                           X.shape[0])
    ref = dense_reference(X.toarray())
    np.testing.assert_array_equal(nnz, ref["nnz"])
    assert nnz.dtype == np.int64 and sums.dtype == np.float64
    np.testing.assert_allclose(sums, ref["sum"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sq, ref["sum_squares"], rtol=1e-12, atol=0)
    np.testing.assert_array_equal(lo, ref["min"])
    np.testing.assert_array_equal(hi, ref["max"])
    # a column with every row stored: min / max of the stored values only
    full = sp.csc_matrix(np.array([[2.0], [3.0], [5.0]], dtype=dtype))
    out = column_moments(full.indptr.astype(np.int64), full.data, 3)
    assert (out[3][0], out[4][0]) == (2.0, 5.0)


def test_column_moments_binary_match_dense(rng):
    X, _ = make_matrix(rng, binary=True)
    indptr = X.indptr.astype(np.int64)
    got = column_moments_binary(indptr, X.shape[0])
    same = column_moments(indptr, X.data, X.shape[0])
    ref = dense_reference(X.toarray())
    for name, value, other in zip(DEFAULT_STATISTICS, got, same):
        np.testing.assert_array_equal(value, ref[name])
        np.testing.assert_array_equal(value, other)
    full = column_moments_binary(np.array([0, 3], np.int64), 3)
    assert (full[3][0], full[4][0]) == (1.0, 1.0)


def test_column_moments_empty_blocks_and_no_rows():
    for n_columns in (0, 4):
        for moments in (column_moments(np.zeros(n_columns + 1, np.int64),
                                       np.zeros(0), 6),
                        column_moments_binary(np.zeros(n_columns + 1, np.int64), 6)):
            for value in moments:
                np.testing.assert_array_equal(value, np.zeros(n_columns))
    moments = column_moments(np.zeros(3, np.int64), np.zeros(0, np.float32), 0)
    np.testing.assert_array_equal(moments[3], [0.0, 0.0])


def test_centred_squares_keep_accuracy_with_large_offsets():
    """``Σx² − (Σx)²/n`` loses every digit here; the two-pass kernel does not."""
    from ultrafs.kernels.statistics import (column_centred_squares,
                                            column_centred_squares_binary)

    col = 1e8 + np.array([0.0, 1.0, 2.0, 3.0])
    const = np.full(4, 7.3)
    data = np.concatenate([col, const])
    indptr = np.array([0, 4, 8, 8], dtype=np.int64)
    out = column_centred_squares(indptr, data, 4)
    assert out[0] == 5.0 and out[1] == 0.0 and out[2] == 0.0
    naive = (col ** 2).sum() - col.sum() ** 2 / 4
    assert naive != 5.0
    # implicit zeros: column (3, 0, 0) of 3 rows, and the binary form
    np.testing.assert_allclose(
        column_centred_squares(np.array([0, 1], dtype=np.int64), np.array([3.0]), 3),
        [np.var([3.0, 0, 0]) * 3], rtol=1e-15)
    np.testing.assert_allclose(
        column_centred_squares_binary(np.array([0, 2, 5, 5], dtype=np.int64), 5),
        [2 * 3 / 5, 3 * 2 / 5, 0.0])
    assert column_centred_squares(indptr, data, 0).tolist() == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------- pass
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_classes", [None, 3])
@pytest.mark.parametrize("dense", [False, True])
def test_pass_matches_dense(rng, dtype, n_classes, dense):
    X, y = make_matrix(rng, dtype=dtype, dense=dense)
    shape = (X.shape[0],) if n_classes is None else (X.shape[0], n_classes)
    weights = rng.standard_normal(shape)
    stats = feature_statistics(InMemoryStore(X, y, block_size=7), STATISTICS,
                               weights=weights, scheduler="synchronous")
    ref = dense_reference(X.toarray(), weights)
    np.testing.assert_array_equal(stats.columns, np.arange(X.shape[1]))
    assert stats.keep is None and stats.nnz == X.nnz and stats.n_blocks == 13
    assert stats.n_features == X.shape[1] and len(stats) == X.shape[1]
    for name in STATISTICS:
        assert stats[name].shape == ref[name].shape
        np.testing.assert_allclose(stats[name], ref[name], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(stats["min"], ref["min"])
    np.testing.assert_array_equal(stats["max"], ref["max"])
    assert stats["nnz"].dtype == np.int64


def test_weighted_sums_are_the_scoring_sums(rng):
    """``weighted_sum`` is the worst-case analysis's c_j, bit for bit."""
    X, y = make_matrix(rng)
    a = rng.standard_normal(X.shape[0])
    stats = feature_statistics(InMemoryStore(X, y), ["weighted_sum"], weights=a)
    np.testing.assert_array_equal(
        stats["weighted_sum"], column_sums(X.indptr.astype(np.int64), X.indices,
                                           X.data, a))
    assert list(stats.values) == ["weighted_sum"]


@pytest.mark.parametrize("dense", [False, True])
def test_binary_store_without_values(rng, tmp_path, dense):
    X, y = make_matrix(rng, binary=True, dense=dense)
    store = write_store(tmp_path / "b.zarr", X, y, block_nnz=50, command="test")
    assert store.read_range(0, X.shape[1]).data is None
    weights = rng.standard_normal((X.shape[0], 2))
    stats = feature_statistics(LinearFeatures(store), STATISTICS, weights=weights,
                               scheduler="threads")
    memory = feature_statistics(InMemoryStore(X, y), STATISTICS, weights=weights)
    ref = dense_reference(X.toarray(), weights)
    for name in STATISTICS:
        np.testing.assert_array_equal(stats[name], memory[name])
        np.testing.assert_allclose(stats[name], ref[name], rtol=1e-12, atol=1e-12)


def min_abs_weighted_sum(stats, threshold):
    """A keep rule: ||Σ_i w_i x_ij|| >= threshold, and never an odd column."""
    c = stats["weighted_sum"]
    size = np.abs(c) if c.ndim == 1 else np.sqrt((c ** 2).sum(axis=1))
    return (size >= threshold) & (stats["columns"] % 2 == 0)


def test_keep_rule_all_and_kept(rng):
    X, y = make_matrix(rng)
    store = InMemoryStore(X, y, block_size=11)
    a = rng.standard_normal(X.shape[0])
    rule = functools.partial(min_abs_weighted_sum, threshold=1.0)
    names = ("nnz", "weighted_sum", "max")
    full = feature_statistics(store, names, weights=a, keep=rule)
    c = X.toarray().T @ a
    expected = (np.abs(c) >= 1.0) & (np.arange(X.shape[1]) % 2 == 0)
    assert full.keep.dtype == np.bool_
    np.testing.assert_array_equal(full.keep, expected)
    np.testing.assert_array_equal(full.kept, np.flatnonzero(expected))
    kept = feature_statistics(store, names, weights=a, keep=rule, output="kept")
    assert kept.keep is None
    np.testing.assert_array_equal(kept.columns, np.flatnonzero(expected))
    np.testing.assert_array_equal(kept.kept, kept.columns)
    for name in names:
        np.testing.assert_array_equal(kept[name], full[name][expected])
    nothing = feature_statistics(store, ["sum"], keep=lambda s: s["sum"] > 1e9,
                                 output="kept", scheduler="threads")
    assert len(nothing) == 0 and nothing["sum"].shape == (0,)
    assert nothing.nnz == X.nnz


def test_identical_for_any_blocking_scheduler_and_workers(rng, local_cluster_client):
    X, y = make_matrix(rng, n=120, m=150, density=0.08)
    weights = rng.standard_normal((X.shape[0], 2))
    store = InMemoryStore(X, y)
    rule = functools.partial(min_abs_weighted_sum, threshold=0.5)
    reference = feature_statistics(store, STATISTICS, weights=weights, keep=rule,
                                   scheduler="synchronous", block_size=150)
    kept_reference = feature_statistics(store, STATISTICS, weights=weights, keep=rule,
                                        output="kept", scheduler="synchronous")
    runs = [(bs, sch, nw) for bs in (1, 3, 37, None)
            for sch, nw in (("synchronous", None), ("threads", 1), ("threads", 4))]
    runs += [(37, "processes", 2), (29, local_cluster_client, None)]
    for block_size, scheduler, workers in runs:
        for output, expected in (("all", reference), ("kept", kept_reference)):
            stats = feature_statistics(store, STATISTICS, weights=weights, keep=rule,
                                       output=output, block_size=block_size,
                                       scheduler=scheduler, num_workers=workers,
                                       split_every=3)
            np.testing.assert_array_equal(stats.columns, expected.columns)
            if expected.keep is not None:
                np.testing.assert_array_equal(stats.keep, expected.keep)
            for name in STATISTICS:
                np.testing.assert_array_equal(stats[name], expected[name])


def test_empty_store_and_no_rows(rng):
    y = np.array([-1.0, 1.0, 1.0])
    stats = feature_statistics(InMemoryStore(np.zeros((3, 0)), y), STATISTICS,
                               weights=np.ones((3, 2)))
    assert len(stats) == 0 and stats["weighted_sum"].shape == (0, 2)
    stats = feature_statistics(InMemoryStore(np.zeros((3, 4)), y))
    for name in DEFAULT_STATISTICS:
        np.testing.assert_array_equal(stats[name], np.zeros(4))


def test_parameters_are_checked(rng):
    X, y = make_matrix(rng, n=20, m=10)
    store = InMemoryStore(X, y)
    cases = [
        (dict(statistics=["median"]), "statistics must be"),
        (dict(statistics=[]), "statistics must be"),
        (dict(statistics=["sum", "sum"]), "statistics must be"),
        (dict(statistics=["weighted_sum"]), "no weights given"),
        (dict(statistics=["sum"], weights=np.ones(20)), "without 'weighted_sum'"),
        (dict(statistics=["weighted_sum"], weights=np.ones(19)), "weights must have"),
        (dict(statistics=["weighted_sum"], weights=np.ones((20, 0))), "weights must have"),
        (dict(keep=3), "keep must be callable"),
        (dict(output="some"), "output must be one of"),
        (dict(output="kept"), "needs a keep rule"),
        (dict(keep=lambda s: np.ones(3, bool)), "keep rule must return"),
        (dict(keep=lambda s: s["sum"]), "keep rule must return"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ParameterError, match=message):
            feature_statistics(store, **kwargs)
    with pytest.raises(ParameterError, match="not 'poly2'"):
        feature_statistics(PolyFeatures(store))
