"""In-memory column store built from numpy or scipy.sparse arrays."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ultrafs.errors import InputFormatError, ParameterError
from ultrafs.store.base import (ColumnBlock, ColumnStore, balanced_block_bounds,
                   SPARSE_IDS_MIN_EMPTY, check_column_ids, even_block_bounds, span_take,
                   sparse_id_layout)
from ultrafs.store.targets import TARGET_TYPES, encode_targets, require_labels

__all__ = ["InMemoryStore", "to_csc", "to_compact_csc", "compact_csc_arrays"]

#: default target of nonzeros per block of the default partition
DEFAULT_BLOCK_NNZ = 1 << 20


def to_csc(X, dtype=None) -> sp.csc_matrix:
    """Convert a dense or sparse matrix to a canonical CSC copy.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix, shape (n_samples, n_features)
    dtype : float32, float64 or None
        None keeps float32 inputs as float32 and turns everything else
        into float64.

    Returns
    -------
    csc : scipy.sparse.csc_matrix
        Sorted indices, no explicit duplicates, int32 indices when possible.
        Never shares memory with ``X``.
    """
    if sp.issparse(X):
        if dtype is None:
            dtype = np.float32 if X.dtype == np.float32 else np.float64
        csc = sp.csc_matrix(X, dtype=dtype, copy=True)
    else:
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise InputFormatError(f"X must be 2-dimensional, got shape {arr.shape}")
        if dtype is None:
            dtype = np.float32 if arr.dtype == np.float32 else np.float64
        csc = sp.csc_matrix(arr.astype(dtype, copy=False))
    csc.sum_duplicates()
    csc.sort_indices()
    csc.eliminate_zeros()
    if not np.all(np.isfinite(csc.data)):
        raise InputFormatError("X contains NaN or infinite values")
    return csc


#: the used columns of a scipy matrix are found with a count per column when
#: it has at most this many columns per stored entry (or at most
#: ``_COUNT_MIN_WIDTH`` columns), else by sorting its column indices: the
#: work and memory stay in proportion to the entries, never to a hashed
#: id range (2**31 columns and more)
_COUNT_WIDTH_PER_ENTRY = 4
_COUNT_MIN_WIDTH = 1 << 22


def _value_dtype(X, dtype):
    """The store's value dtype for ``X`` (None: float32 stays, else float64)."""
    if dtype is None:
        return np.dtype(np.float32) if X.dtype == np.float32 else np.dtype(np.float64)
    return np.dtype(dtype)


def _canonical_csr(X, dtype):
    """``X`` (scipy, not CSC) as CSR without duplicates, values in ``dtype``.

    Returns the matrix itself when it already is (the caller's arrays are
    then only read), else a converted copy.
    """
    if X.dtype != dtype:                 # first: duplicates add up in ``dtype``
        X = X.astype(dtype)
    csr = X.tocsr() if X.format != "csr" else X
    if not csr.has_canonical_format:
        csr = csr.copy() if csr is X else csr
        csr.sum_duplicates()
    return csr


def _csr_to_compact_arrays(X, dtype):
    """The canonical CSC arrays of a scipy matrix given in any format but CSC.

    One pass counts the nonzero entries of every column (or, for an id
    range much wider than the entries, the used columns are found by
    sorting the column indices), a second writes the CSC arrays row by row
    (``kernels/csr_to_csc.py``): no ``(row, column)`` sort, no scipy
    intermediate, no per-column array for a hashed id range.

    Returns
    -------
    indptr : ndarray of int64, shape (n_kept + 1,)
    indices : ndarray of int32
    data : ndarray of ``dtype``
        Fresh arrays (never the caller's); sorted rows, no duplicates, no
        zeros.
    column_ids : ndarray of int64 or None
        Original column of each kept column (the sparse id layout), or None.
    id_space : int
    """
    from ultrafs.kernels.csr_to_csc import csr_column_counts, csr_to_csc_fill

    n_rows, width = X.shape
    csr = _canonical_csr(X, dtype)
    indices, data = csr.indices, csr.data
    if width <= max(_COUNT_WIDTH_PER_ENTRY * len(indices), _COUNT_MIN_WIDTH):
        # 32-bit counters and cursors when the entries allow: half the
        # memory the scattered increments and writes touch
        cursor_dtype = np.int32 if len(indices) < 2 ** 31 else np.int64
        counts = np.zeros(width, dtype=cursor_dtype)
        if csr_column_counts(indices, data, counts):
            raise InputFormatError("X contains NaN or infinite values")
        column_ids = None
        if sparse_id_layout(width, np.count_nonzero(counts)):
            used = np.flatnonzero(counts)
            counts = counts[used]
            column_ids = used.astype(np.int64)
        indptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        # the output position of each column's next entry, by original column
        # (no per-entry lookup of the new column number)
        if column_ids is None:
            nxt = indptr[:-1].astype(cursor_dtype)
        else:
            nxt = np.zeros(width, dtype=cursor_dtype)
            nxt[used] = indptr[:-1]
        cols = indices
    else:
        if not np.all(np.isfinite(data)):
            raise InputFormatError("X contains NaN or infinite values")
        nonzero = data != 0
        kept = indices if nonzero.all() else indices[nonzero]
        used = np.unique(kept).astype(np.int64)
        if not sparse_id_layout(width, len(used)):       # as wide as its entries
            csc = to_csc(X, dtype=dtype)
            return (csc.indptr.astype(np.int64), csc.indices.astype(np.int32),
                    csc.data, None, width)
        cols = np.searchsorted(used, indices)
        counts = np.bincount(cols[nonzero], minlength=len(used))
        column_ids = used
        indptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        nxt = indptr[:-1].copy()
    out_indices = np.empty(indptr[-1], dtype=np.int32)
    out_values = np.empty(indptr[-1], dtype=dtype)
    csr_to_csc_fill(csr.indptr, cols, data, nxt, out_indices, out_values)
    return indptr, out_indices, out_values, column_ids, width


def compact_csc_arrays(X, dtype=None):
    """:func:`to_compact_csc` as raw arrays: what a store keeps.

    Returns
    -------
    indptr : ndarray of int64, shape (n_kept + 1,)
    indices : ndarray of int32, shape (nnz,)
    data : ndarray of float32 or float64, shape (nnz,)
        Canonical CSC arrays of the kept columns (sorted rows, no
        duplicates, no explicit zeros); never sharing memory with ``X``.
    n_rows : int
    column_ids : ndarray of int64 or None
        Original column of each kept column; None when every column is kept.
    id_space : int
        Number of columns of ``X``.
    """
    if sp.issparse(X) and X.format != "csc":
        if X.shape[0] >= 2 ** 31:
            raise InputFormatError(f"X has {X.shape[0]} rows; at most 2**31 - 1 are "
                                   "supported")
        indptr, indices, data, column_ids, id_space = _csr_to_compact_arrays(
            X, _value_dtype(X, dtype))
        return indptr, indices, data, X.shape[0], column_ids, id_space
    csc = to_csc(X, dtype=dtype)
    width = csc.shape[1]
    indptr = csc.indptr.astype(np.int64, copy=False)
    indices = csc.indices.astype(np.int32, copy=False)
    column_ids = None
    if width > SPARSE_IDS_MIN_EMPTY:
        used = np.flatnonzero(np.diff(indptr))
        if sparse_id_layout(width, len(used)):
            # dropping empty columns keeps every entry where it is
            indptr = np.concatenate((np.zeros(1, dtype=np.int64), indptr[used + 1]))
            return indptr, indices, csc.data, csc.shape[0], used.astype(np.int64), width
    return indptr, indices, csc.data, csc.shape[0], column_ids, width


def to_compact_csc(X, dtype=None):
    """:func:`to_csc`, dropping the empty columns of a mostly empty id range.

    A matrix as wide as a hashed feature space (``2**31`` columns, few of
    them used) is never given a per-column array: a scipy matrix in any
    format but CSC is transposed by its rows (:func:`compact_csc_arrays`),
    and the non-empty columns are kept when
    :func:`~ultrafs.store.base.sparse_id_layout` says so.

    Returns
    -------
    csc : scipy.sparse.csc_matrix
        Canonical (as :func:`to_csc`), of the kept columns.
    column_ids : ndarray of int64 or None
        Original column of each kept column; None when every column is kept.
    id_space : int
        Number of columns of ``X``.
    """
    indptr, indices, data, n_rows, column_ids, id_space = compact_csc_arrays(X, dtype)
    csc = sp.csc_matrix((data, indices, indptr), shape=(n_rows, len(indptr) - 1),
                        copy=False)
    csc.has_sorted_indices = True
    csc.has_canonical_format = True
    return csc, column_ids, id_space


def _dataframe_names(X):
    """A pandas DataFrame's column names when all are strings, else None.

    A column name that cannot be a feature name (empty, or holding a tab or
    a line break) leaves that column unnamed.
    """
    from ultrafs.store.feature_names import name_problem

    columns = getattr(X, "columns", None)
    if columns is None or sp.issparse(X) or type(X).__module__.split(".")[0] != "pandas":
        return None
    names = list(columns)
    if not names or not all(isinstance(name, str) for name in names):
        return None
    return [name if name_problem(name) is None else None for name in names]


def _checked_names(feature_names, n_ids):
    """``feature_names`` as a tuple of ``n_ids`` names (str or None), or None."""
    if feature_names is None:
        return None
    from ultrafs.store.feature_names import names_of_sequence

    pairs = names_of_sequence(feature_names, id_offset=0, n_ids=n_ids)
    names = [None] * n_ids
    for j, name in pairs:
        names[j] = name
    return tuple(names) if pairs else None


class InMemoryStore(ColumnStore):
    """A column store over an in-memory CSC matrix.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix, shape (n_samples, n_features)
        Copied; the caller's array is never modified.
    y : array-like, shape (n_samples,)
        Numeric, finite targets (copied).
    target : None, "auto", "binary", "multiclass" or "continuous"
        Target type; None detects it
        (:func:`~ultrafs.store.targets.encode_targets`: two values are
        binary, three or more integers multiclass, else continuous).
    block_size : int or None
        Columns per block of the default partition; None (the default)
        balances blocks to about ``DEFAULT_BLOCK_NNZ`` nonzeros each.
    dtype : float32, float64 or None
        Value dtype (None: float32 stays float32, anything else float64).
    id_offset : int
        Feature id of column 0.
    feature_names : sequence of str or None, optional
        One name (or None: unnamed) per column of ``X``; names may not be
        empty nor hold tabs or line breaks.  None (the default) takes a
        pandas DataFrame's column names when they are all strings (as
        scikit-learn does), else the store has no names.
    """

    def __init__(self, X, y, *, target=None, block_size=None, dtype=None,
                 id_offset=0, feature_names=None):
        if feature_names is None:
            feature_names = _dataframe_names(X)
        indptr, indices, data, n_rows, column_ids, id_space = compact_csc_arrays(
            X, dtype=dtype)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != n_rows:
            raise InputFormatError(
                f"y must have shape ({n_rows},), got {y.shape}")
        self._target_type, self._classes = encode_targets(y, where="y", target=target)
        self._targets = np.array(y, dtype=np.float64)
        self._y_pm = None
        if self._target_type == "binary":
            self._y_pm = np.where(self._targets == self._classes[1], 1.0, -1.0)
        # fresh arrays (compact_csc_arrays never returns the caller's)
        self._indptr = indptr
        self._indices = indices
        self._data = data
        self.n_samples, self.n_features = int(n_rows), len(indptr) - 1
        self.nnz = int(indptr[-1])
        self.dtype = data.dtype
        self.id_offset = int(id_offset)
        self.column_ids = column_ids
        self._id_space = int(id_space)
        self._fingerprint = None
        self._names = _checked_names(feature_names, self._id_space)
        self._block_size = None if block_size is None else int(block_size)
        for arr in (self._indptr, self._indices, self._data, self._targets,
                    self._y_pm, self._classes, self.column_ids):
            if arr is not None:
                arr.flags.writeable = False

    @classmethod
    def from_csc_arrays(cls, indptr, indices, data, n_samples, y_pm, classes,
                        *, block_size=None, id_offset=0, targets=None, target_type=None,
                        column_ids=None, id_space=None, feature_names=None):
        """Wrap already canonical CSC arrays and targets without checks.

        Parameters
        ----------
        indptr, indices, data : ndarray
            Canonical CSC arrays (sorted rows, no duplicates, no zeros).
        n_samples : int
        y_pm : array-like of float, shape (n_samples,), or None
            ±1 labels of a binary store (``+1`` for ``classes[1]``); None
            when ``targets`` is given.
        classes : array-like of float
            Sorted distinct classes: two for a binary store, K >= 3 for a
            multiclass one, empty for a continuous one.
        block_size, id_offset : see :class:`InMemoryStore`.
        targets : array-like of float, shape (n_samples,), or None
            Raw target values (each one of ``classes`` unless continuous);
            None derives them from ``y_pm`` (binary).
        target_type : None, "binary", "multiclass" or "continuous"
            None: ``"binary"`` (the only type ``y_pm`` can describe).
        column_ids, id_space : array of int64 or None, int or None
            The sparse id layout (see :func:`to_compact_csc`); None: dense.
        feature_names : sequence of str or None, optional
            One name (or None) per id (``id_space`` of them); checked.
        """
        self = cls.__new__(cls)
        self._indptr = np.asarray(indptr, dtype=np.int64)
        self._indices = np.asarray(indices, dtype=np.int32)
        self._data = np.asarray(data)
        self._classes = np.asarray(classes, dtype=np.float64).reshape(-1)
        self._target_type = "binary" if target_type is None else str(target_type)
        if self._target_type not in TARGET_TYPES:
            raise ParameterError(
                f"target_type must be one of {', '.join(TARGET_TYPES)}; got {target_type!r}")
        self._y_pm = None if y_pm is None else np.asarray(y_pm, dtype=np.float64)
        if targets is not None:
            self._targets = np.asarray(targets, dtype=np.float64).view()
            self._targets.flags.writeable = False        # the caller's array stays writable
        elif self._y_pm is not None and self._target_type == "binary":
            self._targets = np.where(self._y_pm > 0, self._classes[1], self._classes[0])
        else:
            raise ParameterError("from_csc_arrays needs targets= unless the store is "
                                 "binary with ±1 labels y_pm")
        if self._y_pm is None and self._target_type == "binary":
            self._y_pm = np.where(self._targets == self._classes[1], 1.0, -1.0)
        self.n_samples = int(n_samples)
        self.n_features = len(self._indptr) - 1
        self.nnz = int(self._indptr[-1])
        self.dtype = self._data.dtype
        self.id_offset = int(id_offset)
        self.column_ids = None
        self._id_space = self.n_features
        if column_ids is not None:
            self.column_ids = check_column_ids(column_ids, int(id_space), "column_ids")
            if len(self.column_ids) != self.n_features:
                raise ParameterError(f"{len(self.column_ids)} column ids for "
                                     f"{self.n_features} columns")
            self._id_space = int(id_space)
        self._fingerprint = None
        self._names = _checked_names(feature_names, self._id_space)
        self._block_size = None if block_size is None else int(block_size)
        return self

    @property
    def id_space(self) -> int:
        return self._id_space

    @property
    def feature_names(self):
        """The names given (a tuple, one per id: str or None), or None."""
        return self._names

    def feature_names_of(self, ids) -> list:
        """Names of feature ids (None where unnamed or outside the store)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1) - self.id_offset
        names = self._names
        if names is None:
            return [None] * len(ids)
        return [names[j] if 0 <= j < len(names) else None for j in ids.tolist()]

    @property
    def fingerprint(self) -> str:
        """The content digest a writer would record for this data (computed once)."""
        if self._fingerprint is None:
            from ultrafs.store.fingerprint import fingerprint_csc

            binary = bool(np.all(self._data == 1))
            self._fingerprint = fingerprint_csc(
                self._indptr, self._indices, self._data, self._targets,
                n_samples=self.n_samples, id_space=self._id_space,
                id_offset=self.id_offset, dtype=self.dtype, binary=binary,
                target_type=self._target_type, classes=self._classes,
                column_ids=self.column_ids)
        return self._fingerprint

    @property
    def target_type(self):
        return self._target_type

    @property
    def classes(self):
        return self._classes.copy()

    def read_targets(self):
        require_labels(self._target_type, type(self).__name__)
        return self._targets

    def read_labels(self):
        self._require_binary()
        return self._y_pm

    def default_block_bounds(self):
        if self._block_size is None:
            return balanced_block_bounds(self._indptr, DEFAULT_BLOCK_NNZ)
        return even_block_bounds(self.n_features, self._block_size)

    def read_range(self, start, stop):
        start, stop = int(start), int(stop)
        if not 0 <= start <= stop <= self.n_features:
            raise IndexError(f"column range {start}:{stop} outside 0:{self.n_features}")
        lo, hi = self._indptr[start], self._indptr[stop]
        return ColumnBlock(start, self._indptr[start:stop + 1] - lo,
                           self._indices[lo:hi], self._data[lo:hi])

    def read_columns(self, columns):
        columns = np.asarray(columns, dtype=np.int64)
        inside = columns < self.n_features
        if columns.size and columns.min() < 0:
            raise ValueError("negative column number")
        safe = np.where(inside, columns, 0)
        counts = np.where(inside, self._indptr[safe + 1] - self._indptr[safe], 0)
        indptr, take = span_take(self._indptr[safe], counts)
        return ColumnBlock(-1, indptr, self._indices[take].copy(),
                           self._data[take].copy())

    def to_csc(self) -> sp.csc_matrix:
        """The whole matrix as scipy CSC (a copy)."""
        return sp.csc_matrix((self._data.copy(), self._indices.copy(),
                              self._indptr.copy()),
                             shape=(self.n_samples, self.n_features))
