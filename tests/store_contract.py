"""The contract every :class:`~ultrafs.store.base.ColumnStore` backend passes.

A backend's test module subclasses :class:`StoreContract` (in the spirit of
zarr-python's ``zarr/testing/store.py``) and implements :meth:`make_store`;
pytest then runs every ``test_*`` method below against that backend, on
each matrix of :data:`MATRIX_KINDS` in float32 and float64::

    class TestMyStore(StoreContract):
        def make_store(self, X, y, *, dtype, tmp_path):
            return MyStore(X, y, dtype=dtype)

Reference results come from scipy slicing of the same matrix.
"""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.store.base import ColumnBlock, ColumnStore, even_block_bounds

#: matrices every backend is checked on
MATRIX_KINDS = ("valued", "binary", "dense", "one_column", "no_entries")
DTYPES = (np.float32, np.float64)


def make_matrix(kind: str, dtype, seed: int = 0):
    """A test matrix (CSC, canonical) and two-class labels.

    ``valued`` has empty columns (including the first and the last) and
    empty rows; ``binary`` holds only ones; ``dense`` has no zero;
    ``one_column`` is n x 1; ``no_entries`` has no stored entry.
    """
    rng = np.random.default_rng(seed)
    if kind == "valued":
        X = sp.random(37, 53, density=0.15, format="csc", random_state=rng,
                      data_rvs=lambda n: rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n))
        X = X.tolil()
        X[:, [0, 11, 12, 52]] = 0
        X[[3, 20], :] = 0
    elif kind == "binary":
        X = sp.random(41, 29, density=0.2, format="csc", random_state=rng)
        X.data[:] = 1
        X = X.tolil()
        X[:, 28] = 0
    elif kind == "dense":
        X = sp.csc_matrix(rng.uniform(0.5, 2.0, size=(12, 9)))
    elif kind == "one_column":
        X = sp.csc_matrix(rng.integers(0, 3, size=(15, 1)).astype(float))
    elif kind == "no_entries":
        X = sp.csc_matrix((10, 6))
    else:
        raise ValueError(kind)
    X = sp.csc_matrix(X, dtype=dtype)
    X.eliminate_zeros()
    X.sort_indices()
    y = np.where(rng.random(X.shape[0]) < 0.5, 3.0, 7.5)
    y[:2] = [3.0, 7.5]                                   # both classes present
    return X, y


def assert_block_equals(block: ColumnBlock, reference, first_column, dtype):
    """``block`` holds exactly the CSC columns of ``reference``."""
    reference = sp.csc_matrix(reference)
    assert block.first_column == first_column
    assert block.indptr.dtype == np.int64
    assert block.indices.dtype == np.int32
    np.testing.assert_array_equal(block.indptr, reference.indptr)
    np.testing.assert_array_equal(block.indices, reference.indices)
    values = block.values(dtype)
    assert values.dtype == dtype
    np.testing.assert_array_equal(values, reference.data)
    if block.data is not None:
        assert block.data.dtype == dtype


class StoreContract:
    """Base class of the shared column-store tests (not collected itself)."""

    #: whether an all-ones matrix is returned with ``data is None``
    omits_binary_data = False
    #: upper bound on ``len(pickle.dumps(store))`` (None: no bound)
    max_pickle_bytes: int | None = None

    def make_store(self, X, y, *, dtype, tmp_path) -> ColumnStore:
        """Build the backend's store for ``X`` (CSC) and labels ``y``."""
        raise NotImplementedError

    # ------------------------------------------------------------ fixture
    @pytest.fixture(params=[(k, d) for k in MATRIX_KINDS for d in DTYPES],
                    ids=[f"{k}-{np.dtype(d).name}" for k in MATRIX_KINDS for d in DTYPES])
    def case(self, request, tmp_path):
        kind, dtype = request.param
        X, y = make_matrix(kind, dtype)
        X_before, y_before = X.copy(), y.copy()
        store = self.make_store(X, y, dtype=dtype, tmp_path=tmp_path)
        # the store never mutates the caller's arrays
        assert (X != X_before).nnz == 0 and np.array_equal(X.indices, X_before.indices)
        np.testing.assert_array_equal(y, y_before)
        return SimpleNamespace(store=store, X=X, y=y, dtype=np.dtype(dtype), kind=kind)

    # -------------------------------------------------------------- shape
    def test_is_a_column_store(self, case):
        assert isinstance(case.store, ColumnStore)

    def test_shape_nnz_dtype(self, case):
        store = case.store
        assert (store.n_samples, store.n_features) == case.X.shape
        assert store.nnz == case.X.nnz
        assert np.dtype(store.dtype) == case.dtype

    def test_labels_and_classes(self, case):
        np.testing.assert_array_equal(case.store.classes, [3.0, 7.5])
        labels = case.store.read_labels()
        assert labels.dtype == np.float64 and labels.shape == (case.X.shape[0],)
        np.testing.assert_array_equal(labels, np.where(case.y == 7.5, 1.0, -1.0))

    def test_describe(self, case):
        summary = case.store.describe()
        assert summary["n_samples"] == case.X.shape[0]
        assert summary["n_features"] == case.X.shape[1]
        assert summary["nnz"] == case.X.nnz
        assert summary["dtype"] == case.dtype.name
        assert summary["classes"] == [3.0, 7.5]

    # --------------------------------------------------------- read_range
    def test_read_range_matches_scipy(self, case):
        store, X = case.store, case.X
        n = X.shape[1]
        rng = np.random.default_rng(1)
        ranges = [(0, n), (0, 1), (n - 1, n), (0, 0), (n, n), (n // 2, n // 2)]
        for _ in range(25):
            a, b = sorted(rng.integers(0, n + 1, size=2))
            ranges.append((int(a), int(b)))
        for a, b in ranges:
            assert_block_equals(store.read_range(a, b), X[:, a:b], a, case.dtype)

    def test_read_range_binary_data(self, case):
        block = case.store.read_range(0, case.X.shape[1])
        if case.kind == "binary" and self.omits_binary_data:
            assert block.data is None
        if case.kind in ("valued", "dense"):
            assert block.data is not None

    def test_read_range_every_column(self, case):
        for col in range(case.X.shape[1]):
            assert_block_equals(case.store.read_range(col, col + 1), case.X[:, col],
                                col, case.dtype)

    @pytest.mark.parametrize("which", ["negative_start", "past_the_end", "reversed"])
    def test_read_range_out_of_bounds(self, case, which):
        n = case.X.shape[1]
        a, b = {"negative_start": (-1, 1), "past_the_end": (0, n + 1),
                "reversed": (n, n - 1)}[which]
        with pytest.raises(IndexError):
            case.store.read_range(a, b)

    def test_reads_are_fresh_or_read_only(self, case):
        store = case.store
        block = store.read_range(0, case.X.shape[1])
        for array in (block.indptr, block.indices, block.data):
            if array is not None and array.flags.writeable and array.size:
                array[...] = 0
        assert_block_equals(store.read_range(0, case.X.shape[1]), case.X, 0, case.dtype)
        labels = store.read_labels()
        if labels.flags.writeable:
            labels[...] = 0
        np.testing.assert_array_equal(store.read_labels(),
                                      np.where(case.y == 7.5, 1.0, -1.0))

    # ------------------------------------------------------- read_columns
    def test_read_columns_any_order_duplicates_and_absent(self, case):
        store, X = case.store, case.X
        n = X.shape[1]
        rng = np.random.default_rng(2)
        inside = rng.integers(0, n, size=12)
        columns = np.concatenate([inside, [n, n + 5, 10 ** 9], inside[:3], [n - 1, 0]])
        rng.shuffle(columns)
        block = store.read_columns(columns)
        assert block.first_column == -1
        assert block.data is not None and block.data.dtype == case.dtype
        padded = sp.hstack([X, sp.csc_matrix((X.shape[0], 1), dtype=X.dtype)]).tocsc()
        reference = padded[:, np.minimum(columns, n)]
        assert_block_equals(block, reference, -1, case.dtype)

    def test_read_columns_empty_request(self, case):
        block = case.store.read_columns([])
        assert block.n_columns == 0 and block.nnz == 0
        assert block.indices.dtype == np.int32 and block.data.dtype == case.dtype

    def test_read_columns_negative(self, case):
        with pytest.raises(ValueError):
            case.store.read_columns([0, -1])

    # ---------------------------------------------------------- blocks
    def test_default_block_bounds_partition(self, case):
        bounds = case.store.default_block_bounds()
        n = case.X.shape[1]
        assert bounds.dtype == np.int64
        assert bounds[0] == 0 and bounds[-1] == n
        assert np.all(np.diff(bounds) > 0)
        pieces = [case.store.read_range(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        assert sum(p.nnz for p in pieces) == case.X.nnz
        np.testing.assert_array_equal(case.store.block_bounds(None), bounds)

    def test_block_bounds_with_block_size(self, case):
        n = case.X.shape[1]
        for size in (1, 4, n + 3):
            np.testing.assert_array_equal(case.store.block_bounds(size),
                                          even_block_bounds(n, size))

    # ------------------------------------------------------- ids, pickle
    def test_feature_ids_round_trip(self, case):
        store = case.store
        columns = np.arange(case.X.shape[1])
        np.testing.assert_array_equal(store.columns_of(store.feature_ids(columns)), columns)

    def test_pickle_round_trip(self, case):
        payload = pickle.dumps(case.store)
        if self.max_pickle_bytes is not None:
            assert len(payload) <= self.max_pickle_bytes
        clone = pickle.loads(payload)
        assert (clone.n_samples, clone.n_features, clone.nnz) == (
            case.store.n_samples, case.store.n_features, case.store.nnz)
        assert clone.id_offset == case.store.id_offset
        np.testing.assert_array_equal(clone.read_labels(), case.store.read_labels())
        np.testing.assert_array_equal(clone.default_block_bounds(),
                                      case.store.default_block_bounds())
        assert_block_equals(clone.read_range(0, case.X.shape[1]), case.X, 0, case.dtype)

    def test_concurrent_reads(self, case):
        store, X = case.store, case.X
        n = X.shape[1]
        ranges = [(a, min(n, a + 3)) for a in range(0, n, 2)] * 3

        def read(bounds):
            return store.read_range(*bounds)

        with ThreadPoolExecutor(max_workers=4) as pool:
            blocks = list(pool.map(read, ranges))
        for (a, b), block in zip(ranges, blocks):
            assert_block_equals(block, X[:, a:b], a, case.dtype)
