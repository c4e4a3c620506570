"""A scipy CSR matrix to canonical CSC arrays, in one count and one fill pass.

The compaction of in-memory inputs (``ultrafs/store/memory.py:
compact_csc_arrays``): :func:`csr_column_counts` counts each column's
nonzero entries (and the non-finite values), then :func:`csr_to_csc_fill`
writes the CSC arrays row by row, so each column's row indices come out
increasing. Explicit zeros are dropped.
"""

import math

from numba import njit

__all__ = ["csr_column_counts", "csr_to_csc_fill"]


@njit(cache=True, nogil=True)
def csr_column_counts(indices, data, counts):
    """Count the nonzero entries of each column of a CSR matrix.

    Parameters
    ----------
    indices, data : ndarray, shape (nnz,)
        CSR column indices (int32 or int64) and values (float32 or
        float64) of a matrix without duplicate entries.
    counts : ndarray of int32 or int64, shape (n_columns,)
        Zeros on entry; ``counts[j]`` gains one per nonzero entry of
        column ``j`` (explicit zeros are not counted).

    Returns
    -------
    n_bad : int
        Number of values that are NaN or infinite.
    """
    bad = 0
    for k in range(indices.shape[0]):
        v = data[k]
        if v != 0:
            counts[indices[k]] += 1
        if not math.isfinite(v):
            bad += 1
    return bad


@njit(cache=True, nogil=True)
def csr_to_csc_fill(indptr, cols, data, nxt, out_indices, out_values):
    """Write the canonical CSC arrays of a CSR matrix, its columns renumbered.

    Rows are visited in order, so within each column the row indices come
    out increasing: with no duplicate entries in the CSR input the result
    is canonical (sorted, no duplicates); explicit zeros are dropped.

    Parameters
    ----------
    indptr, data : ndarray
        CSR row pointers and values of ``X`` (n_rows x width), no duplicate
        entries (the entries of a row may come in any order).
    cols : ndarray of int32 or int64, shape (nnz,)
        The column of every entry: the CSR column indices themselves, or
        their numbers among the kept columns.
    nxt : ndarray of int32 or int64
        Per column of ``cols``: where its first entry goes in the output
        (the CSC pointer of its new column; never read for a column with
        no nonzero entry). Advanced in place.
    out_indices : ndarray of int32, shape (nnz_out,)
    out_values : ndarray of data.dtype, shape (nnz_out,)
        Filled in place (``nnz_out``: the nonzero entries).
    """
    n_rows = indptr.shape[0] - 1
    for i in range(n_rows):
        for k in range(indptr[i], indptr[i + 1]):
            v = data[k]
            if v == 0:
                continue
            c = cols[k]
            pos = nxt[c]
            out_indices[pos] = i
            out_values[pos] = v
            nxt[c] = pos + 1
