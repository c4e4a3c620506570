"""In-memory cache of the selected columns (FGM §5.5, "cache for features")."""

from __future__ import annotations

import numpy as np

__all__ = ["ColumnCache"]


class ColumnCache:
    """Selected columns held as one growing CSC matrix, grouped by iteration.

    Only these columns are held in memory: O(nnz of the t·B selected
    columns), never anything that scales with the number of candidates.

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
        self.data = np.zeros(0, dtype=self.dtype)
        self.batch_ptr = np.zeros(1, dtype=np.int64)

    @property
    def n_columns(self) -> int:
        """Number of cached columns."""
        return len(self.indptr) - 1

    @property
    def n_batches(self) -> int:
        """Number of batches (outer iterations) cached."""
        return len(self.batch_ptr) - 1

    def append_batch(self, block) -> None:
        """Append the columns of one outer iteration as a new batch.

        Parameters
        ----------
        block : ColumnBlock
            Materialised columns (``data`` not None).
        """
        offset = self.indptr[-1]
        self.indptr = np.concatenate([self.indptr, block.indptr[1:] + offset])
        self.indices = np.concatenate(
            [self.indices, np.asarray(block.indices, dtype=np.int32)])
        self.data = np.concatenate(
            [self.data, np.asarray(block.data, dtype=self.dtype)])
        self.batch_ptr = np.append(self.batch_ptr, np.int64(self.n_columns))

    def arrays(self):
        """``(indptr, indices, data, batch_ptr)`` for the solver."""
        return self.indptr, self.indices, self.data, self.batch_ptr

    @property
    def nbytes(self) -> int:
        """Memory held by the cache."""
        return int(self.indptr.nbytes + self.indices.nbytes + self.data.nbytes)
