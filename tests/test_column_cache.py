"""The column cache keeps one value per column while it can, and the
operator's products are the same bytes either way."""

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.methods.column_cache import ColumnCache
from ultrafs.solvers.operators import CSCOperator
from ultrafs.store.base import ColumnBlock


def _block(rng, n, p, density, values):
    X = sp.random(n, p, density=density, format="csc",
                  random_state=np.random.RandomState(rng.integers(2**31)))
    X.sort_indices()
    X.data[:] = np.repeat(values, np.diff(X.indptr)) if values is not None \
        else rng.standard_normal(X.nnz)
    return ColumnBlock(-1, X.indptr.astype(np.int64), X.indices.astype(np.int32),
                       X.data.astype(np.float64)), X


def _products(op, rng, n, p, batch_ptr):
    w = rng.standard_normal(p)
    r = rng.standard_normal(n)
    out = np.empty((len(batch_ptr) - 1, n))
    weights = rng.random(n)
    return [op.matvec(w), op.rmatvec(r), op.block_matvec_into(w, batch_ptr, out).copy(),
            op.augmented_gram(weights)]


@pytest.mark.parametrize("n", [50, 40_000])          # below and above the threads' work
def test_one_value_per_column_gives_the_same_products(rng, n):
    cache = ColumnCache(n)
    blocks = []
    for values in ([2.0 ** 0.5, 4.0, 5.65], [1.0, 1.0]):
        block, X = _block(rng, n, len(values), 0.3, np.array(values))
        cache.append_batch(block)
        blocks.append(X)
    assert cache.column_values is not None and cache.arrays()[2] is None
    assert cache.nbytes < cache.indices.nbytes + cache.indptr.nbytes + 100
    full = sp.hstack(blocks).tocsc()
    indptr, indices, data, batch_ptr = cache.arrays()
    pattern = CSCOperator(indptr, indices, None, n, column_values=cache.column_values)
    general = CSCOperator(full.indptr.astype(np.int64), full.indices.astype(np.int32),
                          full.data.astype(np.float64), n)
    seed = rng.integers(2**31)
    got = _products(pattern, np.random.default_rng(seed), n, 5, batch_ptr)
    want = _products(general, np.random.default_rng(seed), n, 5, batch_ptr)
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()
    if n >= 40_000:       # the threads' kernels never build a value per entry
        assert pattern._data is None
    np.testing.assert_array_equal(cache.data, full.data)


def test_a_column_with_two_values_turns_the_cache_general(rng):
    n = 60
    cache = ColumnCache(n)
    first, X1 = _block(rng, n, 3, 0.3, np.array([1.0, 2.0, 3.0]))
    second, X2 = _block(rng, n, 2, 0.3, None)
    cache.append_batch(first)
    cache.append_batch(second)
    assert cache.column_values is None
    full = sp.hstack([X1, X2]).tocsc()
    indptr, indices, data, batch_ptr = cache.arrays()
    np.testing.assert_array_equal(data, full.data)
    np.testing.assert_array_equal(indices, full.indices)
    np.testing.assert_array_equal(batch_ptr, [0, 3, 5])
    third, X3 = _block(rng, n, 1, 0.3, np.array([7.0]))
    cache.append_batch(third)
    np.testing.assert_array_equal(cache.arrays()[2], sp.hstack([X1, X2, X3]).tocsc().data)


def test_operator_needs_values():
    from ultrafs.errors import ParameterError

    with pytest.raises(ParameterError):
        CSCOperator(np.zeros(1, np.int64), np.zeros(0, np.int32), None, 3)


def test_compact_blocks_and_growth_in_place(rng):
    """Compact blocks (row numbers + one value per column) give the cache the
    same arrays as plain ones; a held reference to the cache's arrays is
    never changed by a later batch (the cache copies instead of growing)."""
    n = 300
    plain, compact = ColumnCache(n), ColumnCache(n)
    held = None
    for t, values in enumerate(([2.0, 0.5], [3.0], [1.0, 4.0, 5.0])):
        block, _ = _block(rng, n, len(values), 0.2, np.array(values))
        plain.append_batch(block)
        compact.append_batch(ColumnBlock(-1, block.indptr, block.indices, None,
                                         column_values=np.array(values)))
        if t == 1:
            held = compact.indices
            before = held.copy()
    for a, b in zip(plain.arrays(), compact.arrays()):
        if a is None:
            assert b is None
        else:
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(plain.column_values, compact.column_values)
    np.testing.assert_array_equal(held, before)
    # a general batch after compact ones turns the cache general
    block, X = _block(rng, n, 2, 0.2, None)
    compact.append_batch(block)
    assert compact.column_values is None
    np.testing.assert_array_equal(compact.data[-X.nnz:], X.data)
