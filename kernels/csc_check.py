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


def check_csc_block(indptr, indices, n_rows, work=None):
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
    work : ndarray of uint8, optional
        Scratch of at least ``len(indices) + 1`` bytes (overwritten), e.g.
        a thread's reused buffer; None (or too short): a fresh one.

    Returns
    -------
    code : int
        ``CSC_OK`` or the first problem found (``CSC_BAD_INDPTR``,
        ``CSC_ROW_OUT_OF_RANGE``, ``CSC_ROWS_NOT_INCREASING``); offsets
        are checked before any row, so a block with both kinds of problem
        reports ``CSC_BAD_INDPTR``.
    column : int
        Column (relative to the block) where the problem was found, -1
        when there is none or it concerns the whole block.
    """
    if work is None or work.dtype != np.uint8 or len(work) < len(indices) + 1:
        work = np.empty(len(indices) + 1, dtype=np.uint8)
    return _check_csc_block(indptr, indices, n_rows, work)


@numba.njit(cache=True, nogil=True)
def _check_csc_block(indptr, indices, n_rows, work):
    """:func:`check_csc_block` with its scratch."""
    n_columns = indptr.shape[0] - 1
    if n_columns < 0 or indptr[0] != 0 or indptr[n_columns] != indices.shape[0]:
        return CSC_BAD_INDPTR, -1
    if _block_is_valid(indptr, indices, n_rows, work):
        return CSC_OK, -1
    # slow path: locate the first problem; offsets first, so that every
    # row read below lies inside ``indices``
    for col in range(n_columns):
        if indptr[col + 1] < indptr[col]:
            return CSC_BAD_INDPTR, col
    for col in range(n_columns):
        lo = indptr[col]
        hi = indptr[col + 1]
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
def _block_is_valid(indptr, indices, n_rows, work):
    """Fast check of a block whose ``indptr`` starts at 0 and ends at nnz.

    Three linear passes, each without a data-dependent branch: the offsets
    never decrease (then every offset lies in ``[0, nnz]``); the position
    where each column starts is marked in a byte map; one pass over
    ``indices`` counts the descents (``indices[i] <= indices[i - 1]``) at
    unmarked positions, which rows increasing strictly within every column
    forbid, and takes the smallest and largest row.  3-4x as fast as
    testing each column's first and last row and the descent at its start
    (imdb50k: 1.4 against 5 ms per block of 4.2M nonzeros), which cost a
    Zarr pass a tenth of its time.  The byte map is the first ``nnz + 1``
    bytes of ``work``.
    """
    n_columns = indptr.shape[0] - 1
    nnz = indices.shape[0]
    n_decreases = 0
    for col in range(n_columns):
        n_decreases += indptr[col + 1] < indptr[col]
    if n_decreases:
        return False
    if nnz == 0:
        return True
    starts = _column_starts(indptr, nnz, work)
    inner_descents = 0
    lowest = indices[0]
    highest = indices[0]
    for pos in range(1, nnz):
        row = indices[pos]
        inner_descents += (row <= indices[pos - 1]) & (starts[pos] == 0)
        lowest = min(lowest, row)
        highest = max(highest, row)
    return inner_descents == 0 and lowest >= 0 and highest < n_rows


@numba.njit(cache=True, nogil=True)
def _column_starts(indptr, nnz, work):
    """Byte map of length ``nnz + 1`` (in ``work``): 1 where a column starts.

    ``indptr`` must lie in ``[0, nnz]`` (non-decreasing from 0 to nnz).
    An empty column marks the start of the next non-empty one (or ``nnz``),
    which is a start anyway.
    """
    starts = work[:nnz + 1]
    starts[:] = 0
    for col in range(indptr.shape[0] - 1):
        starts[indptr[col]] = 1
    return starts


@numba.njit(cache=True, nogil=True)
def count_nonfinite(values):
    """Number of NaN or infinite entries of a 1-D float array."""
    count = 0
    for k in range(values.shape[0]):
        v = values[k]
        if not np.isfinite(v):
            count += 1
    return count
