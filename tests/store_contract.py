"""The contract every :class:`~ultrafs.store.base.ColumnStore` backend passes.

A backend's test module subclasses :class:`StoreContract` (in the spirit of
zarr-python's ``zarr/testing/store.py``) and implements :meth:`make_store`;
pytest then runs every ``test_*`` method below against that backend, on
each matrix of :data:`MATRIX_KINDS` in float32 and float64 (binary
targets), and the target tests on every target of :data:`TARGET_KINDS`
(binary, multiclass, continuous; detected or explicit)::

    class TestMyStore(StoreContract):
        def make_store(self, X, y, *, dtype, tmp_path, target=None):
            return MyStore(X, y, dtype=dtype, target=target)

Reference results come from scipy slicing of the same matrix, and from
the targets ``y`` themselves.

A backend that only wraps or re-reads another (a latency wrapper, a second
layout of the same format) sets :attr:`StoreContract.matrix_subset` and
:attr:`StoreContract.target_subset` to a representative part of the matrix
(every dtype, empty columns and rows, implicit ones, no entries). The rest
of its matrix is generated only with ``pytest --full-matrix`` and carries
the ``full_matrix`` marker, so ``pytest --full-matrix -m full_matrix`` runs
exactly what the default run leaves out (``.ci/run`` does, after the suite).
"""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.store.base import ColumnBlock, ColumnStore, even_block_bounds

#: matrices every backend is checked on
MATRIX_KINDS = ("valued", "binary", "dense", "one_column", "no_entries")
DTYPES = (np.float32, np.float64)

#: targets every backend is checked on: name -> (classes, or None for
#: real values; the ``target`` argument; the expected target type)
TARGET_KINDS = {
    "binary": ([3.0, 7.5], None, "binary"),
    "binary-explicit": ([-1.0, 1.0], "binary", "binary"),
    "multiclass-3": ([-1.0, 2.0, 7.0], None, "multiclass"),
    "multiclass-5": ([-3.0, 0.0, 1.0, 4.0, 10.0], None, "multiclass"),
    "multiclass-explicit": ([0.5, 1.5, 2.5], "multiclass", "multiclass"),
    "continuous": (None, None, "continuous"),
    "continuous-explicit": ([0.0, 1.0, 2.0, 3.0], "continuous", "continuous"),
}
#: matrices (kind, dtype) the target tests run on
TARGET_MATRICES = (("valued", np.float64), ("binary", np.float32))


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


def make_targets(kind: str, n_samples: int, seed: int = 0) -> np.ndarray:
    """Targets of :data:`TARGET_KINDS` ``kind`` for ``n_samples`` rows.

    Every class appears (in the first rows); real values are distinct
    non-integers.
    """
    rng = np.random.default_rng(seed)
    classes = TARGET_KINDS[kind][0]
    if classes is None:
        y = np.round(rng.normal(0.0, 3.0, n_samples), 3) + 0.0005
        y[:3] = [0.25, -1.5, 12.125]
        return y
    y = np.asarray(classes)[rng.integers(0, len(classes), n_samples)]
    y[:len(classes)] = classes
    return y.astype(np.float64)


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


#: a representative part of the matrix, for backends that wrap another:
#: both dtypes, empty columns and rows (valued), implicit ones (binary), a
#: single column and a matrix without entries
MATRIX_SUBSET = (("valued", np.float64), ("binary", np.float32),
                 ("one_column", np.float32), ("no_entries", np.float64))
#: a representative part of the targets: detected and explicit, two and
#: five classes, real values, on both matrices and dtypes
TARGET_SUBSET = (("binary", "valued", np.float64),
                 ("multiclass-5", "binary", np.float32),
                 ("multiclass-explicit", "valued", np.float64),
                 ("continuous-explicit", "binary", np.float32))


def _params(everything, subset, full, name):
    """``pytest.param`` of the cases to run: ``subset`` (None: all), and with
    ``full`` the others too, marked ``full_matrix``."""
    chosen = everything if subset is None else [c for c in everything if c in subset]
    assert subset is None or len(chosen) == len(subset), "unknown case in a subset"
    params = [pytest.param(c, id=name(c)) for c in chosen]
    if full:
        params += [pytest.param(c, id=name(c), marks=pytest.mark.full_matrix)
                   for c in everything if c not in chosen]
    return params


class StoreContract:
    """Base class of the shared column-store tests (not collected itself)."""

    #: whether an all-ones matrix is returned with ``data is None``
    omits_binary_data = False
    #: upper bound on ``len(pickle.dumps(store))`` (None: no bound)
    max_pickle_bytes: int | None = None

    def make_store(self, X, y, *, dtype, tmp_path, target=None) -> ColumnStore:
        """Build the backend's store for ``X`` (CSC) and targets ``y``.

        ``target`` is the requested target type (None: detected).
        """
        raise NotImplementedError

    #: the ``(kind, dtype)`` cases run without ``--full-matrix`` (None: all)
    matrix_subset: tuple | None = None
    #: the ``(target kind, kind, dtype)`` target cases run without
    #: ``--full-matrix`` (None: all)
    target_subset: tuple | None = None

    # ------------------------------------------------------------ fixture
    def pytest_generate_tests(self, metafunc):
        """Parametrize ``case`` and ``target_case`` (indirectly) by the matrix."""
        full = metafunc.config.getoption("full_matrix", default=False)
        if "case" in metafunc.fixturenames:
            everything = [(k, d) for k in MATRIX_KINDS for d in DTYPES]
            metafunc.parametrize("case", _params(
                everything, self.matrix_subset, full,
                lambda c: f"{c[0]}-{np.dtype(c[1]).name}"), indirect=True)
        if "target_case" in metafunc.fixturenames:
            everything = [(t, k, d) for t in TARGET_KINDS for k, d in TARGET_MATRICES]
            metafunc.parametrize("target_case", _params(
                everything, self.target_subset, full,
                lambda c: f"{c[0]}-{c[1]}-{np.dtype(c[2]).name}"), indirect=True)

    @pytest.fixture
    def case(self, request, tmp_path):
        kind, dtype = request.param
        X, y = make_matrix(kind, dtype)
        X_before, y_before = X.copy(), y.copy()
        store = self.make_store(X, y, dtype=dtype, tmp_path=tmp_path)
        # the store never mutates the caller's arrays
        assert (X != X_before).nnz == 0 and np.array_equal(X.indices, X_before.indices)
        np.testing.assert_array_equal(y, y_before)
        return SimpleNamespace(store=store, X=X, y=y, dtype=np.dtype(dtype), kind=kind)

    @pytest.fixture
    def target_case(self, request, tmp_path):
        target_kind, kind, dtype = request.param
        X, _ = make_matrix(kind, dtype)
        y = make_targets(target_kind, X.shape[0])
        y_before = y.copy()
        classes, target, expected = TARGET_KINDS[target_kind]
        store = self.make_store(X, y, dtype=dtype, tmp_path=tmp_path, target=target)
        np.testing.assert_array_equal(y, y_before)
        classes = (np.zeros(0) if expected == "continuous"
                   else np.asarray(classes, dtype=np.float64))
        return SimpleNamespace(store=store, X=X, y=y, dtype=np.dtype(dtype),
                               target_type=expected, classes=classes)

    # ------------------------------------------------------------ targets
    def test_target_type_and_classes(self, target_case):
        store = target_case.store
        assert store.target_type == target_case.target_type
        classes = store.classes
        assert classes.dtype == np.float64
        assert classes.shape == target_case.classes.shape
        np.testing.assert_array_equal(classes, target_case.classes)

    def test_read_targets(self, target_case):
        store, y = target_case.store, target_case.y
        targets = store.read_targets()
        assert targets.dtype == np.float64 and targets.shape == y.shape
        np.testing.assert_array_equal(targets, y)
        if targets.flags.writeable:                     # fresh: changing it changes nothing
            targets[...] = 0
        np.testing.assert_array_equal(store.read_targets(), y)

    def test_read_class_indices(self, target_case):
        store = target_case.store
        if target_case.target_type == "continuous":
            with pytest.raises(ParameterError, match="continuous") as info:
                store.read_class_indices()
            assert "\n" not in str(info.value)
            return
        indices = store.read_class_indices()
        assert indices.dtype == np.int64 and indices.shape == target_case.y.shape
        np.testing.assert_array_equal(target_case.classes[indices], target_case.y)
        assert set(indices.tolist()) == set(range(len(target_case.classes)))

    def test_read_labels_of_each_target_type(self, target_case):
        store, y = target_case.store, target_case.y
        if target_case.target_type == "binary":
            labels = store.read_labels()
            assert labels.dtype == np.float64
            np.testing.assert_array_equal(
                labels, np.where(y == target_case.classes[1], 1.0, -1.0))
            return
        with pytest.raises(ParameterError) as info:
            store.read_labels()
        message = str(info.value)
        assert "\n" not in message and target_case.target_type in message
        assert "read_labels" in message

    def test_describe_reports_the_target(self, target_case):
        summary = target_case.store.describe()
        assert summary["target"] == target_case.target_type
        assert summary["classes"] == target_case.classes.tolist()

    def test_pickle_keeps_the_target(self, target_case):
        clone = pickle.loads(pickle.dumps(target_case.store))
        assert clone.target_type == target_case.target_type
        np.testing.assert_array_equal(clone.classes, target_case.classes)
        np.testing.assert_array_equal(clone.read_targets(), target_case.y)
        assert_block_equals(clone.read_range(0, target_case.X.shape[1]), target_case.X, 0,
                            target_case.dtype)

    # -------------------------------------------------------------- shape
    def test_is_a_column_store(self, case):
        assert isinstance(case.store, ColumnStore)

    def test_shape_nnz_dtype(self, case):
        store = case.store
        assert (store.n_samples, store.n_features) == case.X.shape
        assert store.nnz == case.X.nnz
        assert np.dtype(store.dtype) == case.dtype

    def test_labels_and_classes(self, case):
        assert case.store.target_type == "binary"
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
        assert summary["target"] == "binary"

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

    def test_read_range_transient_matches_scipy(self, case):
        """Each transient read (checked before the thread's next one) equals
        the block; ranges of all sizes, so the thread's buffers both grow
        and are reused, also from other threads."""
        store, X = case.store, case.X
        n = X.shape[1]
        rng = np.random.default_rng(2)
        ranges = [(0, n), (0, 1), (n - 1, n), (0, 0), (n // 2, n // 2), (0, n)]
        ranges += [tuple(int(v) for v in sorted(rng.integers(0, n + 1, size=2)))
                   for _ in range(20)]

        def check(bounds):
            a, b = bounds
            assert_block_equals(store.read_range_transient(a, b), X[:, a:b], a,
                                case.dtype)

        for bounds in ranges:
            check(bounds)
        with ThreadPoolExecutor(max_workers=3) as pool:
            list(pool.map(check, ranges))

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
