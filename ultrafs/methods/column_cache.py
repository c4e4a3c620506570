"""In-memory cache of the selected columns (FGM §5.5, "cache for features")."""

from __future__ import annotations

import numpy as np

__all__ = ["ColumnCache"]


class ColumnCache:
    """Selected columns held as one growing CSC matrix, grouped by iteration.

    Only these columns are held in memory: O(nnz of the t·B selected
    columns), never anything that scales with the number of candidates.
    While every cached column holds a single value (degree-2 features of
    binary data: √(2γr), γ or √2·γ; linear features of 0/1 data: 1) the
    cache keeps the row numbers and one value per column, not a value per
    entry (a third of the memory); the first column with two values turns
    it into the general form.  Products computed either way are the same
    (:class:`~ultrafs.solvers.operators.CSCOperator` with
    ``column_values``).

    Parameters
    ----------
    n_samples : int
    dtype : numpy dtype
        Value dtype of the cached columns (float64 by default).
    """

    def __init__(self, n_samples: int, dtype=np.float64):
        self.n_samples = int(n_samples)
        self.dtype = np.dtype(dtype)
        self.indptr = np.zeros(1, dtype=np.int64)
        self.indices = np.zeros(0, dtype=np.int32)
        #: one value per column while every column holds one (else None)
        self.column_values = np.zeros(0, dtype=np.float64)
        self._data = None
        self.batch_ptr = np.zeros(1, dtype=np.int64)

    @property
    def n_columns(self) -> int:
        """Number of cached columns."""
        return len(self.indptr) - 1

    @property
    def n_batches(self) -> int:
        """Number of batches (outer iterations) cached."""
        return len(self.batch_ptr) - 1

    @property
    def data(self) -> np.ndarray:
        """A value per entry (built from the column values when they are kept)."""
        if self._data is not None:
            return self._data
        return np.repeat(self.column_values.astype(self.dtype),
                         np.diff(self.indptr))

    def append_batch(self, block) -> None:
        """Append the columns of one outer iteration as a new batch.

        The cache's arrays grow in place where they can (``ndarray.resize``:
        for large arrays the allocator remaps the pages, so the columns
        already held are neither copied nor doubled in memory while the
        batch is added); where another reference to them is alive they are
        copied instead.

        Parameters
        ----------
        block : ColumnBlock
            Materialised columns: a value per entry, or (``data`` None) the
            ``column_values`` of a compact block, or 0/1 data.
        """
        from ultrafs.kernels.sparse_ops import column_values

        offset = self.indptr[-1]
        indptr = np.asarray(block.indptr, dtype=np.int64)
        data = None
        if block.data is None:
            values = (np.ones(block.n_columns) if block.column_values is None
                      else np.asarray(block.column_values, dtype=np.float64))
            single = True
        else:
            data = np.asarray(block.data, dtype=self.dtype)
            values, single = column_values(indptr, data)
        if self.column_values is not None:
            if single:
                self.column_values = np.concatenate([self.column_values, values])
            else:
                self._data = self.data          # the general form from now on
                self.column_values = None
        if self._data is not None and data is None:
            data = np.repeat(values.astype(self.dtype), np.diff(indptr))
        self.indptr = np.concatenate([self.indptr, indptr[1:] + offset])
        _grow(self, "indices", block.indices, np.int32)
        if self._data is not None:
            _grow(self, "_data", data, self.dtype)
        self.batch_ptr = np.append(self.batch_ptr, np.int64(self.n_columns))

    def arrays(self):
        """``(indptr, indices, data, batch_ptr)``; ``data`` is None while one
        value per column is kept (:attr:`column_values`)."""
        return self.indptr, self.indices, self._data, self.batch_ptr

    @property
    def nbytes(self) -> int:
        """Memory held by the cache."""
        held = self._data if self._data is not None else self.column_values
        return int(self.indptr.nbytes + self.indices.nbytes + held.nbytes)


def _grow(owner, name, extra, dtype):
    """Append ``extra`` (as ``dtype``) to the array ``owner.name``, in place if
    nothing else refers to it (then no copy is made), else by a copy."""
    held = getattr(owner, name)
    setattr(owner, name, None)           # the only reference is now ``held``
    n = len(held)
    try:
        held.resize(n + len(extra), refcheck=True)
    except (ValueError, SystemError):     # referenced elsewhere, or not its own
        held = np.concatenate([held, np.asarray(extra, dtype=dtype)])
    else:
        held[n:] = extra
    setattr(owner, name, held)
