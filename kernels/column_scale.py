"""Weighted per-column moments of a CSC block, for the data-scaled C.

Each column's sums run over its stored entries in row order (float64), so
a column's values do not depend on how columns are grouped into blocks.
"""

import numpy as np
from numba import njit

__all__ = ["column_weighted_moments", "column_weighted_moments_binary"]


@njit(cache=True, nogil=True)
def column_weighted_moments(indptr, indices, data, weights):
    """Weight of the nonzero rows, weighted sum and sum of squares of every column.

    Parameters
    ----------
    indptr : int64 array, shape (n_columns + 1,)
    indices : int32 or int64 array, shape (nnz,)
        Row of every stored entry.
    data : float32 or float64 array, shape (nnz,)
    weights : float64 array, shape (n_rows,)
        A weight per row (ones for the unweighted moments).

    Returns
    -------
    count : float64 array, shape (n_columns,)
        ``Σ_{i: x_ij ≠ 0} w_i``.
    sums : float64 array, shape (n_columns,)
        ``Σ_i w_i x_ij``.
    squares : float64 array, shape (n_columns,)
        ``Σ_i w_i x_ij²``.
    """
    n_columns = indptr.shape[0] - 1
    count = np.zeros(n_columns, dtype=np.float64)
    sums = np.zeros(n_columns, dtype=np.float64)
    squares = np.zeros(n_columns, dtype=np.float64)
    for j in range(n_columns):
        c = 0.0
        s = 0.0
        q = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            x = np.float64(data[p])
            if x != 0.0:
                w = weights[indices[p]]
                c += w
                s += w * x
                q += w * x * x
        count[j] = c
        sums[j] = s
        squares[j] = q
    return count, sums, squares


@njit(cache=True, nogil=True)
def column_weighted_moments_binary(indptr, indices, weights):
    """:func:`column_weighted_moments` of a 0/1 block (every stored value 1)."""
    n_columns = indptr.shape[0] - 1
    count = np.zeros(n_columns, dtype=np.float64)
    for j in range(n_columns):
        c = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            c += weights[indices[p]]
        count[j] = c
    return count, count.copy(), count.copy()
