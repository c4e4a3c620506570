"""Per-column statistics of a CSC block, for the statistics/filter pass.

Every statistic of a column is accumulated over its stored entries in row
order (float64), so it does not depend on how columns are grouped into
blocks.  Statistics describe the whole column of ``n_rows`` values,
implicit zeros included: ``min`` is at most 0 and ``max`` at least 0 when
the column has fewer than ``n_rows`` nonzeros.

Weighted sums ``Σ_i w_i x_ij`` are the scoring kernels'
:func:`~ultrafs.kernels.scoring.column_sums` (and ``*_multi`` for an
(n_rows, K) weight matrix), bit for bit.
"""

import numpy as np
from numba import njit

__all__ = ["column_moments", "column_moments_binary", "column_centred_squares",
           "column_centred_squares_binary", "row_top2_squares", "merge_row_top2"]


@njit(cache=True, nogil=True)
def column_moments(indptr, data, n_rows):
    """Nonzero count, sum, sum of squares, min and max of every column.

    Parameters
    ----------
    indptr : int64 array, shape (n_columns + 1,)
    data : float32 or float64 array, shape (nnz,)
    n_rows : int
        Rows of the column (implicit zeros count for min and max).  Row
        numbers are not needed: every statistic is order-free but the
        sums, which run in stored (row) order.

    Returns
    -------
    nnz : int64 array, shape (n_columns,)
        Stored values different from zero.
    sums : float64 array, shape (n_columns,)
        ``Σ_i x_ij``.
    sum_squares : float64 array, shape (n_columns,)
        ``Σ_i x_ij²`` (the squared Euclidean norm).
    mins, maxs : float64 arrays, shape (n_columns,)
        Smallest and largest of the ``n_rows`` values (0 for an empty
        column, and for ``n_rows == 0``).
    """
    n_columns = indptr.shape[0] - 1
    nnz = np.zeros(n_columns, dtype=np.int64)
    sums = np.zeros(n_columns, dtype=np.float64)
    sum_squares = np.zeros(n_columns, dtype=np.float64)
    mins = np.zeros(n_columns, dtype=np.float64)
    maxs = np.zeros(n_columns, dtype=np.float64)
    for j in range(n_columns):
        count = 0
        acc = 0.0
        acc2 = 0.0
        lo = np.inf
        hi = -np.inf
        for p in range(indptr[j], indptr[j + 1]):
            x = np.float64(data[p])
            if x != 0.0:
                count += 1
            acc += x
            acc2 += x * x
            if x < lo:
                lo = x
            if x > hi:
                hi = x
        stored = indptr[j + 1] - indptr[j]
        if stored < n_rows:          # implicit zeros
            if lo > 0.0:
                lo = 0.0
            if hi < 0.0:
                hi = 0.0
        if stored == 0:
            lo = 0.0
            hi = 0.0
        nnz[j] = count
        sums[j] = acc
        sum_squares[j] = acc2
        mins[j] = lo
        maxs[j] = hi
    return nnz, sums, sum_squares, mins, maxs


@njit(cache=True, nogil=True)
def column_moments_binary(indptr, n_rows):
    """:func:`column_moments` of a block whose stored values are all one."""
    n_columns = indptr.shape[0] - 1
    nnz = np.zeros(n_columns, dtype=np.int64)
    sums = np.zeros(n_columns, dtype=np.float64)
    sum_squares = np.zeros(n_columns, dtype=np.float64)
    mins = np.zeros(n_columns, dtype=np.float64)
    maxs = np.zeros(n_columns, dtype=np.float64)
    for j in range(n_columns):
        count = indptr[j + 1] - indptr[j]
        nnz[j] = count
        sums[j] = count
        sum_squares[j] = count
        if count > 0:
            maxs[j] = 1.0
            if count >= n_rows:
                mins[j] = 1.0
    return nnz, sums, sum_squares, mins, maxs



@njit(cache=True, nogil=True)
def column_centred_squares(indptr, data, n_rows):
    """Centred sum of squares ``Σ_i (x_ij − x̄_j)²`` of every column.

    Two passes over each column's stored values (the mean first), so a
    column with a large offset keeps its accuracy, where ``Σ x² − (Σ x)²/n``
    cancels catastrophically.  Implicit zeros contribute ``x̄_j²`` each.

    Parameters
    ----------
    indptr : int64 array, shape (n_columns + 1,)
    data : float32 or float64 array, shape (nnz,)
    n_rows : int

    Returns
    -------
    float64 array, shape (n_columns,)
        0 for every column when ``n_rows == 0``; exactly 0 for a constant
        column whose values are all stored or all implicit.
    """
    n_columns = indptr.shape[0] - 1
    out = np.zeros(n_columns, dtype=np.float64)
    if n_rows == 0:
        return out
    for j in range(n_columns):
        acc = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            acc += np.float64(data[p])
        mean = acc / n_rows
        acc2 = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            d = np.float64(data[p]) - mean
            acc2 += d * d
        implicit = n_rows - (indptr[j + 1] - indptr[j])
        out[j] = acc2 + implicit * mean * mean
    return out


@njit(cache=True, nogil=True)
def column_centred_squares_binary(indptr, n_rows):
    """:func:`column_centred_squares` of a block whose stored values are one.

    A column of ``k`` ones among ``n`` rows: ``k (1 − k/n)² + (n − k)(k/n)²``,
    accumulated term by term as :func:`column_centred_squares` does, so a
    store that writes the ones and one that does not give the same bits.
    """
    n_columns = indptr.shape[0] - 1
    out = np.zeros(n_columns, dtype=np.float64)
    if n_rows == 0:
        return out
    for j in range(n_columns):
        k = indptr[j + 1] - indptr[j]
        acc = 0.0
        for _ in range(k):
            acc += 1.0
        mean = acc / n_rows
        d = 1.0 - mean
        acc2 = 0.0
        for _ in range(k):
            acc2 += d * d
        out[j] = acc2 + (n_rows - k) * mean * mean
    return out


@njit(cache=True, nogil=True)
def row_top2_squares(indices, data, n_rows, out):
    """Merge the two largest ``x_ij²`` of every row of a CSC block into ``out``.

    Parameters
    ----------
    indices : int32 or int64 array, shape (nnz,)
        Row numbers of the stored values.
    data : float32 or float64 array, shape (nnz,), or None
        Values; None means every stored value is one (binary data).
    n_rows : int
    out : float64 array, shape (n_rows, 2)
        Running ``(largest, second largest)`` square of every row (zeros to
        start); updated in place and returned.  Maxima do not depend on the
        order of the values, so the result is the same for any grouping of
        the columns into blocks.
    """
    for k in range(indices.shape[0]):
        x = 1.0 if data is None else np.float64(data[k])
        x2 = x * x
        i = indices[k]
        if x2 > out[i, 0]:
            out[i, 1] = out[i, 0]
            out[i, 0] = x2
        elif x2 > out[i, 1]:
            out[i, 1] = x2
    return out


@njit(cache=True, nogil=True)
def merge_row_top2(out, other):
    """Merge running ``(largest, second largest)`` pairs of ``other`` into ``out``.

    Both arrays have shape (n_rows, 2) with column 0 >= column 1; ``out`` is
    updated in place and returned: the two largest of the four values of
    each row (exact, so any grouping of the merges gives the same result).
    """
    for i in range(out.shape[0]):
        a0 = out[i, 0]
        a1 = out[i, 1]
        b0 = other[i, 0]
        b1 = other[i, 1]
        if b0 > a0:
            out[i, 0] = b0
            out[i, 1] = max(a0, b1)
        else:
            out[i, 1] = max(a1, b0)
    return out
