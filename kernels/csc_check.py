"""Integrity checks of CSC column blocks read back from storage."""

import numba
import numpy as np

__all__ = [
    "check_csc_block",
    "count_nonfinite",
    "CSC_OK",
    "CSC_BAD_INDPTR",
    "CSC_ROW_OUT_OF_RANGE",
    "CSC_ROWS_NOT_INCREASING",
]

CSC_OK = 0
CSC_BAD_INDPTR = 1
CSC_ROW_OUT_OF_RANGE = 2
CSC_ROWS_NOT_INCREASING = 3


@numba.njit(cache=True, nogil=True)
def check_csc_block(indptr, indices, n_rows):
    """Check a CSC block in one pass.

    Parameters
    ----------
    indptr : ndarray of int64, shape (n_columns + 1,)
        Offsets into ``indices``; must start at 0, never decrease and end
        at ``len(indices)``.
    indices : ndarray of int32 or int64, shape (nnz,)
        Row numbers; must lie in ``[0, n_rows)`` and increase strictly
        within each column.
    n_rows : int
        Number of rows of the matrix.

    Returns
    -------
    code : int
        ``CSC_OK`` or the first problem found (``CSC_BAD_INDPTR``,
        ``CSC_ROW_OUT_OF_RANGE``, ``CSC_ROWS_NOT_INCREASING``).
    column : int
        Column (relative to the block) where the problem was found, -1
        when there is none or it concerns the whole block.
    """
    n_columns = indptr.shape[0] - 1
    if n_columns < 0 or indptr[0] != 0 or indptr[n_columns] != indices.shape[0]:
        return CSC_BAD_INDPTR, -1
    if _block_is_valid(indptr, indices, n_rows):
        return CSC_OK, -1
    # slow path: locate the first problem
    for col in range(n_columns):
        lo = indptr[col]
        hi = indptr[col + 1]
        if hi < lo:
            return CSC_BAD_INDPTR, col
        previous = -1
        for pos in range(lo, hi):
            row = indices[pos]
            if row < 0 or row >= n_rows:
                return CSC_ROW_OUT_OF_RANGE, col
            if row <= previous:
                return CSC_ROWS_NOT_INCREASING, col
            previous = row
    return CSC_OK, -1


@numba.njit(cache=True, nogil=True)
def _block_is_valid(indptr, indices, n_rows):
    """Fast check of a block whose ``indptr`` starts at 0 and ends at nnz.

    Rows increase strictly within every column iff every descent
    (``indices[i] <= indices[i - 1]``) sits at the start of a column; the
    descents are counted in one vectorisable pass over ``indices`` and
    compared with those at column starts.  With rows increasing, only the
    first and last row of a column need the range test.
    """
    n_descents = 0
    for pos in range(1, indices.shape[0]):
        n_descents += indices[pos] <= indices[pos - 1]
    at_starts = 0
    for col in range(indptr.shape[0] - 1):
        lo = indptr[col]
        hi = indptr[col + 1]
        if hi < lo:
            return False
        if hi > lo:
            if indices[lo] < 0 or indices[hi - 1] >= n_rows:
                return False
            if lo > 0:
                at_starts += indices[lo] <= indices[lo - 1]
    return n_descents == at_starts


@numba.njit(cache=True, nogil=True)
def count_nonfinite(values):
    """Number of NaN or infinite entries of a 1-D float array."""
    count = 0
    for k in range(values.shape[0]):
        v = values[k]
        if not np.isfinite(v):
            count += 1
    return count
