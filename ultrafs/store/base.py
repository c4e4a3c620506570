"""The column-store contract shared by every storage backend.

A store holds a labelled sparse design matrix ``X`` (n_samples x n_features)
column-wise, i.e. in CSC order, so that any contiguous range of columns can
be read on its own with I/O proportional to its number of nonzeros.

Column numbers and feature ids
------------------------------
Inside ultrafs columns are numbered ``0 .. n_features - 1``.  The ids users
see are ``column + id_offset``: a 1-based LIBSVM file keeps its 1-based ids
(``id_offset == 1``), numpy / scipy inputs use ``id_offset == 0``.  A store
whose id range is mostly empty (hashed features, ids up to 2**31 and
beyond with few of them used) keeps only its non-empty columns and maps
them to ids with :attr:`ColumnStore.column_ids` (``id = column_ids[column]
+ id_offset``), so nothing costs memory in proportion to the largest id
(:func:`sparse_id_layout` says when).  Only the
faces (model files, CLI, estimator attributes) convert between the two; the
engine works with column numbers throughout.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from ultrafs.errors import ParameterError

__all__ = ["ColumnBlock", "ColumnStore", "StoreWrapper", "SameRowsWrapper", "balanced_block_bounds",
           "even_block_bounds", "span_take", "sparse_id_layout", "check_column_ids",
           "SPARSE_IDS_MIN_EMPTY"]

#: a store keeps only its non-empty columns (with ``column_ids``) when its id
#: range has more than this many empty columns and more empty than used
#: ones: below it, a dense ``indptr`` costs at most 16 MiB
SPARSE_IDS_MIN_EMPTY = 1 << 21


def sparse_id_layout(id_space: int, n_used: int) -> bool:
    """Whether a store of ``id_space`` ids, ``n_used`` of them non-empty, drops the rest.

    The rule every writer and :class:`~ultrafs.store.memory.InMemoryStore`
    applies, so that the same data gets the same column numbers in every
    backend.
    """
    n_empty = int(id_space) - int(n_used)
    return n_empty > SPARSE_IDS_MIN_EMPTY and n_empty > int(n_used)


def check_column_ids(column_ids, id_space: int, where: str) -> np.ndarray:
    """``column_ids`` as a read-only int64 array, checked.

    Raises
    ------
    ValueError
        Unless the ids are strictly increasing and inside ``0 .. id_space - 1``
        (``where`` names the source in the message).
    """
    ids = np.array(column_ids, dtype=np.int64).reshape(-1)
    if ids.size and (ids[0] < 0 or ids[-1] >= id_space or np.any(ids[1:] <= ids[:-1])):
        raise ValueError(f"{where}: column ids must be strictly increasing and "
                         f"inside 0..{id_space - 1}")
    ids.flags.writeable = False
    return ids


@dataclass(frozen=True)
class ColumnBlock:
    """A contiguous range of columns of ``X`` in CSC form.

    Attributes
    ----------
    first_column : int
        Column number of the block's first column.
    indptr : ndarray of int64, shape (n_columns + 1,)
        Offsets into ``indices``/``data``; ``indptr[0] == 0``.
    indices : ndarray of int32, shape (nnz,)
        Row numbers, sorted increasingly within each column, no duplicates.
    data : ndarray of float32 or float64, shape (nnz,), or None
        Values; ``None`` means every stored value equals 1 (binary data),
        unless ``column_values`` is given.
    column_values : ndarray of float64, shape (n_columns,), or None
        With ``data`` None: every stored value of column ``j`` equals
        ``column_values[j]`` (generated columns of 0/1 data, which carry a
        map factor; only ``FeatureSpace.materialize_compact`` returns
        such blocks, for the column cache).
    """

    first_column: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None
    column_values: np.ndarray | None = None

    @property
    def n_columns(self) -> int:
        """Number of columns in the block."""
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return int(self.indptr[-1])

    def values(self, dtype=np.float64) -> np.ndarray:
        """Return the values in ``dtype``, materialising the implicit ones.

        Stored values already in ``dtype`` are returned as they are (no copy).
        """
        if self.data is None:
            if self.column_values is not None:
                return np.repeat(self.column_values.astype(dtype),
                                 np.diff(self.indptr))
            return np.ones(self.nnz, dtype=dtype)
        return self.data.astype(dtype, copy=False)


def even_block_bounds(n_columns: int, block_size: int) -> np.ndarray:
    """Column boundaries of blocks of ``block_size`` columns.

    Parameters
    ----------
    n_columns : int
        Total number of columns.
    block_size : int
        Columns per block (the last block may be shorter).

    Returns
    -------
    bounds : ndarray of int64, shape (n_blocks + 1,)
        ``bounds[k]:bounds[k+1]`` is the column range of block ``k``.
    """
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    bounds = np.arange(0, n_columns, block_size, dtype=np.int64)
    return np.append(bounds, np.int64(n_columns))


def balanced_block_bounds(indptr, block_nnz) -> np.ndarray:
    """Column boundaries of blocks holding about ``block_nnz`` nonzeros.

    Parameters
    ----------
    indptr : ndarray of int64, shape (n_columns + 1,)
        Column offsets of the whole matrix.
    block_nnz : int
        Target nonzeros per block; a block ends at the first column
        boundary where the running count reaches a multiple of it.

    Returns
    -------
    bounds : ndarray of int64, shape (n_blocks + 1,)
        Strictly increasing from 0 to ``n_columns``: every block holds at
        least one column (a column heavier than ``block_nnz`` is a block of
        its own).  ``[0]`` when there are no columns.
    """
    block_nnz = int(block_nnz)
    if block_nnz < 1:
        raise ValueError(f"block_nnz must be >= 1, got {block_nnz}")
    indptr = np.asarray(indptr, dtype=np.int64)
    n_columns = len(indptr) - 1
    if n_columns <= 0:
        return np.zeros(1, dtype=np.int64)
    nnz = int(indptr[-1])
    n_cuts = max(0, -(-nnz // block_nnz) - 1)
    targets = block_nnz * np.arange(1, n_cuts + 1, dtype=np.int64)
    cuts = np.searchsorted(indptr, targets, side="left")
    cuts = np.unique(cuts[(cuts > 0) & (cuts < n_columns)])
    return np.concatenate([[0], cuts, [n_columns]]).astype(np.int64)


def span_take(first, counts):
    """Gather plan for a sequence of spans of a flat array.

    Parameters
    ----------
    first : ndarray of int64
        Start of each span.
    counts : ndarray of int64
        Length of each span (0 for an empty one).

    Returns
    -------
    indptr : ndarray of int64, shape (len(first) + 1,)
        Offsets of the spans in the gathered array.
    take : ndarray of int64, shape (counts.sum(),)
        Positions to take, span after span.
    """
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    take = (np.repeat(np.asarray(first, dtype=np.int64) - indptr[:-1], counts)
            + np.arange(indptr[-1], dtype=np.int64))
    return indptr, take


class ColumnStore(abc.ABC):
    """Abstract labelled column store.

    Implementations must be cheap to pickle (workers reopen them by path),
    must never mutate arrays handed to them, and must return fresh or
    read-only arrays from every read.
    """

    #: number of rows of X
    n_samples: int
    #: number of columns of X
    n_features: int
    #: feature id of column 0 (1 for 1-based LIBSVM files, else 0)
    id_offset: int
    #: total number of stored entries
    nnz: int
    #: ids of the columns (minus ``id_offset``), int64, strictly increasing;
    #: None when column ``j`` is id ``j + id_offset`` (the dense layout)
    column_ids = None
    #: dtype of the values (float32 or float64)
    dtype: np.dtype

    # ----------------------------------------------------------------- targets
    @property
    @abc.abstractmethod
    def target_type(self) -> str:
        """``"binary"``, ``"multiclass"``, ``"continuous"`` or ``"none"`` (no
        labels) (:data:`ultrafs.store.targets.TARGET_TYPES`)."""

    @property
    @abc.abstractmethod
    def classes(self) -> np.ndarray:
        """The distinct target values, float64, sorted, shape (K,).

        K == 2 for a binary store (``classes[1]`` maps to +1), K >= 3 for
        a multiclass one; shape (0,) for a continuous target.
        """

    @abc.abstractmethod
    def read_targets(self) -> np.ndarray:
        """The raw target values, float64 (read-only or fresh), shape (n_samples,).

        Each is one of :attr:`classes` (classification) or finite
        (continuous); a stored value that is not raises
        :class:`~ultrafs.errors.StoreFormatError` (a corrupt store).
        """

    def read_class_indices(self) -> np.ndarray:
        """Index of each row's target in :attr:`classes`, int64, shape (n_samples,).

        Raises
        ------
        ParameterError
            If the store's target is continuous (it has no classes).
        """
        from ultrafs.store.targets import class_indices, require_labels

        require_labels(self.target_type, self._target_name())
        if self.target_type == "continuous":
            raise ParameterError(
                f"{self._target_name()}: read_class_indices() needs a classification "
                "store; this store's target is continuous")
        return class_indices(self.read_targets(), self.classes)

    def read_labels(self) -> np.ndarray:
        """Labels of a binary store as float64 ±1, shape (n_samples,).

        ``+1`` for ``classes[1]``, ``-1`` for ``classes[0]``.

        Raises
        ------
        ParameterError
            If the store's target is not binary (one line naming the store
            and its target type).
        """
        self._require_binary()
        targets = self.read_targets()
        labels = np.where(targets == self.classes[1], 1.0, -1.0)
        labels.flags.writeable = False
        return labels

    def _target_name(self) -> str:
        """Names the store in target errors: its path, else its repr."""
        path = getattr(self, "path", None)
        return str(path) if path is not None else type(self).__name__

    def _require_binary(self) -> None:
        """Raise ParameterError unless the store's target is binary."""
        target_type = self.target_type
        if target_type != "binary":
            raise ParameterError(
                f"{self._target_name()}: read_labels() gives ±1 labels of a binary "
                f"store; this store's target is {target_type} (use read_targets()"
                f"{' or read_class_indices()' if target_type == 'multiclass' else ''})")

    # ------------------------------------------------------------------ blocks
    @abc.abstractmethod
    def default_block_bounds(self) -> np.ndarray:
        """The store's own block partition (int64 column boundaries).

        Roughly balanced in nonzeros; used when no block size is requested.
        """

    def block_bounds(self, block_size: int | None = None) -> np.ndarray:
        """Column boundaries for a scoring pass.

        Parameters
        ----------
        block_size : int or None
            Columns per block; ``None`` uses :meth:`default_block_bounds`.
        """
        if block_size is None:
            return self.default_block_bounds()
        return even_block_bounds(self.n_features, int(block_size))

    @abc.abstractmethod
    def read_range(self, start: int, stop: int) -> ColumnBlock:
        """Read columns ``start:stop`` (0 <= start <= stop <= n_features)."""

    def read_range_transient(self, start: int, stop: int) -> ColumnBlock:
        """:meth:`read_range` for a task that drops the block before its
        thread reads again (a scoring pass's block task).

        A store may return arrays that live in the calling thread's work
        buffers (:mod:`ultrafs.store.work_buffers`), overwritten by the
        thread's next transient read; the Zarr store does, which spares a
        pass the page faults of fresh block arrays.  This default returns
        :meth:`read_range`'s block.
        """
        return self.read_range(start, stop)

    def read_columns_lean(self, columns) -> ColumnBlock:
        """:meth:`read_columns`, but a binary store may return ``data`` None.

        For callers that handle 0/1 columns as row numbers (the degree-2
        space): no value per entry is made where every value is 1.  This
        default returns :meth:`read_columns`'s block.
        """
        return self.read_columns(columns)

    def read_columns(self, columns) -> ColumnBlock:
        """Read arbitrary columns, in the order given.

        Columns ``>= n_features`` (features absent from this store) are
        returned as empty columns.  The default implementation reads one
        range per column; backends override it when they can do better.

        Returns
        -------
        block : ColumnBlock
            ``first_column`` is -1 (the columns are not contiguous); the
            data is always materialised (never None) in the store's dtype.
        """
        columns = np.asarray(columns, dtype=np.int64)
        if columns.size and columns.min() < 0:
            raise ValueError("negative column number")
        indptr = np.zeros(len(columns) + 1, dtype=np.int64)
        parts_idx, parts_val = [], []
        for pos, col in enumerate(columns):
            if col >= self.n_features:
                indptr[pos + 1] = indptr[pos]
                continue
            blk = self.read_range(int(col), int(col) + 1)
            parts_idx.append(blk.indices)
            parts_val.append(blk.values(self.dtype))
            indptr[pos + 1] = indptr[pos] + blk.nnz
        indices = (np.concatenate(parts_idx) if parts_idx
                   else np.zeros(0, dtype=np.int32)).astype(np.int32, copy=False)
        data = (np.concatenate(parts_val) if parts_val
                else np.zeros(0, dtype=self.dtype)).astype(self.dtype, copy=False)
        return ColumnBlock(-1, indptr, indices, data)

    # ----------------------------------------------------------------- helpers
    @property
    def id_space(self) -> int:
        """Number of possible ids: the declared width of X (>= ``n_features``)."""
        return int(self.n_features)

    @property
    def fingerprint(self):
        """Digest of the content (hex string), or None when not recorded."""
        return None

    def feature_names_of(self, ids) -> list:
        """Names of user-visible feature ids: a list of str, None where unnamed.

        The default: no names.  Backends that carry names (written stores,
        wide Parquet tables, :class:`~ultrafs.store.memory.InMemoryStore`
        given ``feature_names``) override it.
        """
        return [None] * len(np.asarray(ids, dtype=np.int64).reshape(-1))

    def feature_ids(self, columns) -> np.ndarray:
        """User-visible ids of column numbers."""
        columns = np.asarray(columns, dtype=np.int64)
        ids = self.column_ids
        if ids is None:
            return columns + self.id_offset
        return ids[columns] + self.id_offset

    def columns_of(self, feature_ids) -> np.ndarray:
        """Column numbers of user-visible ids.

        An id the store does not hold maps to a column ``>= n_features``
        (read as an empty column; see :meth:`read_columns`).
        """
        raw = np.asarray(feature_ids, dtype=np.int64) - self.id_offset
        ids = self.column_ids
        if ids is None:
            return raw
        n = len(ids)
        if n == 0:
            return np.full(raw.shape, 0, dtype=np.int64)
        pos = np.searchsorted(ids, raw)
        found = (pos < n) & (ids[np.minimum(pos, n - 1)] == raw)
        return np.where(found, pos, n).astype(np.int64)

    def describe(self) -> dict:
        """Summary used by ``ultrafs info``."""
        return {
            "n_samples": int(self.n_samples),
            "n_features": int(self.n_features),
            "nnz": int(self.nnz),
            "dtype": np.dtype(self.dtype).name,
            "id_offset": int(self.id_offset),
            **({} if self.column_ids is None else {"id_space": int(self.id_space)}),
            "target": self.target_type,
            "classes": [float(c) for c in self.classes],
            "n_blocks": int(len(self.default_block_bounds()) - 1),
        }


class StoreWrapper(ColumnStore):
    """A store that shows another one through some change (latency, a row subset).

    Delegates the columns' description (count, id offset, dtype), the
    targets' type and classes, and the block partition to ``inner``;
    subclasses define the rows, the targets and the reads.

    Parameters
    ----------
    inner : ColumnStore
    """

    def __init__(self, inner: ColumnStore):
        if not isinstance(inner, ColumnStore):
            raise TypeError(f"inner must be a ColumnStore, got {type(inner).__name__}")
        self._inner = inner

    @property
    def inner(self) -> ColumnStore:
        """The wrapped store."""
        return self._inner

    @property
    def n_features(self) -> int:
        return self._inner.n_features

    @property
    def id_offset(self) -> int:
        return self._inner.id_offset

    @property
    def column_ids(self):
        return self._inner.column_ids

    @property
    def id_space(self) -> int:
        return self._inner.id_space

    @property
    def dtype(self) -> np.dtype:
        return self._inner.dtype

    def feature_names_of(self, ids) -> list:
        return self._inner.feature_names_of(ids)

    @property
    def target_type(self) -> str:
        return self._inner.target_type

    @property
    def classes(self) -> np.ndarray:
        return self._inner.classes

    def default_block_bounds(self) -> np.ndarray:
        return self._inner.default_block_bounds()


class SameRowsWrapper(StoreWrapper):
    """A :class:`StoreWrapper` that keeps every row of ``inner`` (latency,
    column scaling): it delegates the rows, the targets and the block
    partition too; subclasses define the column reads.
    """

    @property
    def n_samples(self) -> int:
        return self._inner.n_samples

    @property
    def nnz(self) -> int:
        return self._inner.nnz

    def read_targets(self) -> np.ndarray:
        return self._inner.read_targets()

    def read_class_indices(self) -> np.ndarray:
        return self._inner.read_class_indices()

    def read_labels(self) -> np.ndarray:
        return self._inner.read_labels()

    def block_bounds(self, block_size=None) -> np.ndarray:
        return self._inner.block_bounds(block_size)
