"""Weighted Gram kernels and the three Gram operators against dense NumPy (T10).

Dense, in-memory CSC and store-streamed operators must agree with
``Xᵀ diag(s) X``, ``Xᵀ s``, ``X diag(d) Xᵀ``, ``Xᵀ V`` and ``X W`` computed
densely to 1e-12 relative (the largest error over the largest reference
entry), for float32 and float64 data, empty columns, zero rows, weights
with zeros, one and three right-hand sides, any block size and any
scheduler, on an in-memory store, a Zarr store on disk and a real
``dask.distributed`` cluster.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.kernels.weighted_gram import csc_pair_gram, csc_sample_gram_add, mirror_upper
from ultrafs.scoring.gram_passes import StoreGramOperator
from ultrafs.solvers.gram_operators import DenseGramOperator
from ultrafs.solvers.sparse_gram import SparseGramOperator
from ultrafs.store import InMemoryStore
from ultrafs.store.writers.zarr_writer import write_store

N, P = 40, 30
EMPTY_COLUMNS = [0, 11, P - 1]
ZERO_ROWS = [3, N - 1]
RTOL = 1e-12


def make_matrix(seed, dtype=np.float64, binary=False):
    """Signed values, empty columns, zero rows, one column with one entry."""
    rng = np.random.default_rng(seed)
    X = sp.random(N, P, density=0.25, format="lil", dtype=np.float64,
                  random_state=np.random.RandomState(seed),
                  data_rvs=lambda k: rng.standard_normal(k) * 2.0)
    X[:, EMPTY_COLUMNS] = 0
    X[ZERO_ROWS, :] = 0
    X[:, 5] = 0
    X[7, 5] = 1.5
    X = sp.csc_matrix(X, dtype=dtype)
    X.eliminate_zeros()
    if binary:
        X.data[:] = 1
    y = np.where(np.arange(N) % 2, 1.0, -1.0)
    return X, y


def make_weights(seed, n):
    rng = np.random.default_rng(seed + 1)
    w = rng.uniform(0.1, 2.0, n)
    w[::4] = 0.0
    return w


def assert_close(actual, expected):
    actual = np.asarray(actual)
    assert actual.dtype == np.float64
    assert actual.shape == expected.shape
    scale = max(float(np.abs(expected).max(initial=0.0)), 1e-300)
    err = float(np.abs(actual - expected).max(initial=0.0))
    assert err <= RTOL * scale, f"max error {err:.3e} > {RTOL} * {scale:.3e}"


def references(X, s, d, V, W):
    D = X.toarray().astype(np.float64)
    return {"feature": (D.T @ (s[:, None] * D), D.T @ s),
            "sample": (D * d) @ D.T, "rmatmat": D.T @ V, "matmat": D @ W}


def check_operator(op, X, seed, c):
    """Every product of ``op`` against the dense reference; returns the results."""
    n, p = X.shape
    rng = np.random.default_rng(seed + 2)
    s, d = make_weights(seed, n), make_weights(seed + 5, p)
    V, W = rng.standard_normal((n, c)), rng.standard_normal((p, c))
    if c == 1:
        V, W = V[:, 0], W[:, 0]
    ref = references(X, s, d, V.reshape(n, c), W.reshape(p, c))
    passes = op.n_passes
    exact = not isinstance(op, DenseGramOperator)     # BLAS: symmetric to rounding
    gram, xs = op.feature_gram(s)
    assert_close(gram, ref["feature"][0])
    if exact:
        np.testing.assert_array_equal(gram, gram.T)
    assert_close(xs, ref["feature"][1])
    sample = op.sample_gram(d)
    assert_close(sample, ref["sample"])
    if exact:
        np.testing.assert_array_equal(sample, sample.T)
    rm, mm = op.rmatmat(V), op.matmat(W)
    assert_close(rm, ref["rmatmat"])
    assert_close(mm, ref["matmat"])
    assert op.n_passes == passes + 4
    assert (op.n_samples, op.n_features) == (n, p)
    return gram, xs, sample, rm, mm


# ------------------------------------------------------------------ kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sample_gram_kernel_adds_the_upper_triangle(dtype, index_dtype):
    X, _ = make_matrix(3, dtype)
    d = make_weights(3, P)
    D = X.toarray().astype(np.float64)
    start = np.arange(N * N, dtype=np.float64).reshape(N, N)
    out = csc_sample_gram_add(X.indptr.astype(np.int64), X.indices.astype(index_dtype),
                              X.data, d, start.copy())
    expected = start + np.triu((D * d) @ D.T)
    assert_close(np.triu(out), np.triu(expected))
    np.testing.assert_array_equal(np.tril(out, -1), np.tril(start, -1))
    full = mirror_upper(np.triu(out - start))
    assert_close(full, (D * d) @ D.T)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pair_gram_kernel(dtype):
    X, _ = make_matrix(4, dtype)
    s = make_weights(4, N)
    D = X.toarray().astype(np.float64)
    A, B = X[:, :10], X[:, 10:]
    arrays = [(Z.indptr.astype(np.int64), Z.indices, Z.data) for Z in (A, B, X)]
    out = np.full((10, P - 10), np.nan)
    csc_pair_gram(*arrays[0], *arrays[1], s, False, out)
    assert_close(out, D[:, :10].T @ (s[:, None] * D[:, 10:]))
    full = np.full((P, P), np.nan)
    csc_pair_gram(*arrays[2], *arrays[2], s, True, full)
    reference = D.T @ (s[:, None] * D)
    assert_close(np.triu(full), np.triu(reference))
    np.testing.assert_array_equal(np.tril(full, -1), 0.0)
    assert_close(mirror_upper(full), reference)
    no_columns = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, dtype))
    assert csc_pair_gram(*no_columns, *arrays[1], s, False,
                         np.empty((0, P - 10))).shape == (0, P - 10)
    zero = csc_pair_gram(*arrays[0], *arrays[1], np.zeros(N), False, out)
    np.testing.assert_array_equal(zero, 0.0)


def test_mirror_upper_tiles():
    rng = np.random.default_rng(0)
    for size in (0, 1, 63, 64, 65, 150):
        M = rng.standard_normal((size, size))
        expected = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_array_equal(mirror_upper(M.copy()), expected)


# --------------------------------------------------------- in-memory operators
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("c", [1, 3])
def test_dense_and_sparse_operators(dtype, c):
    X, _ = make_matrix(5, dtype)
    dense = check_operator(DenseGramOperator(X.toarray()), X, 5, c)
    sparse = check_operator(SparseGramOperator.from_scipy(X), X, 5, c)
    for a, b in zip(dense, sparse):
        assert_close(b, a)
    op = SparseGramOperator(X.indptr, X.indices, X.data, N)
    check_operator(op, X, 6, c)


def test_sparse_operator_constructors_and_columns():
    X, _ = make_matrix(6)
    binary, _ = make_matrix(6, binary=True)
    check_operator(SparseGramOperator(binary.indptr, binary.indices, None, N), binary, 6, 2)
    unsorted = X.copy()
    for j in range(P):      # reverse each column: from_scipy sorts them back
        lo, hi = unsorted.indptr[j], unsorted.indptr[j + 1]
        unsorted.indices[lo:hi] = unsorted.indices[lo:hi][::-1]
        unsorted.data[lo:hi] = unsorted.data[lo:hi][::-1]
    unsorted.has_sorted_indices = False
    check_operator(SparseGramOperator.from_scipy(unsorted), X, 6, 1)
    with pytest.raises(ParameterError):
        SparseGramOperator(unsorted.indptr, unsorted.indices, unsorted.data, N)
    store = InMemoryStore(X, np.where(np.arange(N) % 2, 1.0, -1.0))
    check_operator(SparseGramOperator.from_block(store.read_range(0, P), N), X, 6, 1)
    cols = [25, 3, 7, 7, 12, 0]
    sub = SparseGramOperator.from_scipy(X).columns(cols)
    check_operator(sub, X[:, cols], 7, 3)
    empty = SparseGramOperator.from_scipy(X).columns([])
    check_operator(empty, X[:, []], 7, 2)


@pytest.mark.parametrize("make", ["dense", "sparse"])
def test_in_memory_operators_check_their_inputs(make):
    X, _ = make_matrix(8)
    op = (DenseGramOperator(X.toarray()) if make == "dense"
          else SparseGramOperator.from_scipy(X))
    bad = [lambda: op.feature_gram(np.ones(N + 1)), lambda: op.feature_gram(-np.ones(N)),
           lambda: op.sample_gram(np.full(P, np.nan)), lambda: op.rmatmat(np.ones((N + 1, 2))),
           lambda: op.matmat(np.ones((P, 2, 1)))]
    for call in bad:
        with pytest.raises(ParameterError):
            call()
    assert op.n_passes == 0


# -------------------------------------------------------------- store operator
@pytest.fixture(scope="module")
def zarr_stores(tmp_path_factory):
    """Zarr stores on disk: float32, float64 and binary (values omitted)."""
    root = tmp_path_factory.mktemp("gram-stores")
    stores = {}
    for name, dtype, binary in (("float32", np.float32, False),
                                ("float64", np.float64, False),
                                ("binary", np.float32, True)):
        X, y = make_matrix(9, dtype, binary)
        stores[name] = (write_store(root / f"{name}.zarr", X, y, dtype=dtype,
                                    block_nnz=40), X)
    return stores


def _memory_store(name, block_size=None):
    dtype = np.float64 if name == "float64" else np.float32
    X, y = make_matrix(9, dtype, name == "binary")
    return InMemoryStore(X, y, block_size=block_size), X


@pytest.mark.parametrize("kind", ["memory", "zarr"])
@pytest.mark.parametrize("name", ["float32", "float64", "binary"])
def test_store_operator_any_block_size_and_scheduler(kind, name, zarr_stores):
    store, X = zarr_stores[name] if kind == "zarr" else _memory_store(name, 7)
    assert store.n_features == P and (store.dtype == np.float64) == (name == "float64")
    sparse = check_operator(SparseGramOperator.from_scipy(X), X, 9, 3)
    for block_size in (1, 13, P, None):
        first = None
        # one-column blocks on disk: 465 tile tasks of two reads each (~1.7 s
        # a Gram), so threads only (where the work buffers are shared)
        schedulers = (("threads",) if kind == "zarr" and block_size == 1
                      else ("synchronous", "threads"))
        for scheduler in schedulers:
            op = StoreGramOperator(store, block_size=block_size, scheduler=scheduler,
                                   num_workers=3, split_every=3)
            results = check_operator(op, X, 9, 3)
            for a, b in zip(results, sparse):
                assert_close(a, b)
            if first is None:
                first = results
            for a, b in zip(results, first):    # the same bytes on any scheduler
                np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(first[3], sparse[3])    # Xᵀ V: same sums
        if block_size == P:     # one block: the in-memory operator's bytes
            for a, b in zip(first, sparse):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["memory", "zarr"])
def test_store_operator_column_subsets(kind, zarr_stores):
    store, X = zarr_stores["float32"] if kind == "zarr" else _memory_store("float32")
    for cols in ([1, 4, 5, 9, 11, 20, 29], [25, 3, 7, 7, 12, 0]):
        cols = np.array(cols)
        for block_size in (None, 1, 3):
            op = StoreGramOperator(store, cols, block_size=block_size, scheduler="threads")
            check_operator(op, X[:, cols], 10, 3)
        check_operator(StoreGramOperator(store, scheduler="synchronous").columns(cols),
                       X[:, cols], 10, 1)
        indptr, indices, data, n_rows = op.read_columns_csc()
        assert indptr.dtype == np.int64 and indices.dtype == np.int32
        assert data.dtype == np.float64 and n_rows == N
        check_operator(SparseGramOperator(indptr, indices, data, n_rows), X[:, cols], 10, 2)
        inner = [2, 0]
        nested = op.columns(inner)
        check_operator(nested, X[:, cols[inner]], 11, 3)
        indptr, indices, data, _ = op.read_columns_csc(inner)
        np.testing.assert_array_equal(
            sp.csc_matrix((data, indices, indptr), shape=(N, 2)).toarray(),
            X[:, cols[inner]].toarray())
    nothing = StoreGramOperator(store, [])
    check_operator(nothing, X[:, []], 12, 2)
    assert nothing.read_columns_csc()[0].tolist() == [0]


def test_store_operator_checks_its_inputs():
    store, _ = _memory_store("float64")
    op = StoreGramOperator(store, scheduler="synchronous")
    bad = [lambda: op.feature_gram(np.ones(N + 1)), lambda: op.feature_gram(-np.ones(N)),
           lambda: op.sample_gram(np.full(P, np.inf)), lambda: op.rmatmat(np.ones((N + 1, 2))),
           lambda: op.matmat(np.ones((P, 2, 1))), lambda: op.columns([P]),
           lambda: op.columns([-1]), lambda: op.read_columns_csc([0.5]),
           lambda: StoreGramOperator(store, block_size=0),
           lambda: StoreGramOperator(store, [[1, 2]])]
    for call in bad:
        with pytest.raises(ParameterError):
            call()
    assert op.n_passes == 0


@pytest.mark.slow
def test_store_operator_on_a_distributed_cluster(zarr_stores, local_cluster_client):
    store, X = zarr_stores["float32"]
    local = StoreGramOperator(store, block_size=7, scheduler="synchronous", split_every=3)
    remote = StoreGramOperator(store, block_size=7, scheduler=local_cluster_client,
                               split_every=3)
    expected = check_operator(local, X, 13, 3)
    for a, b in zip(check_operator(remote, X, 13, 3), expected):
        np.testing.assert_array_equal(a, b)
    memory, X = _memory_store("float64")
    check_operator(StoreGramOperator(memory, [4, 2, 8], scheduler=local_cluster_client),
                   X[:, [4, 2, 8]], 14, 1)
