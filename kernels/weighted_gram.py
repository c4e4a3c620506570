"""Weighted Gram products of CSC columns: the IRLS products of GSR-FS.

Every kernel takes scipy's CSC arrays ``(indptr, indices, data)`` of a
matrix of ``n_rows`` rows (``indptr`` int64, ``indices`` int32 or int64,
``data`` float32 or float64; a store's block of 0/1 data passes its
materialised ones).  Row numbers must increase strictly within every column
(the store's :class:`~ultrafs.store.base.ColumnBlock` convention).  Every
product is accumulated in float64, each output entry in a fixed order:

``csc_sample_gram_add(indptr, indices, data, d, out)``
    adds ``X diag(d) Xᵀ`` to the **upper triangle** of ``out``
    (``n_rows x n_rows``): each column's outer product of its nonzeros, in
    ``O(Σ_j nnz_j²)``; entry ``(r, t)`` sums over the columns in column
    order.  Columns of weight 0 cost nothing.
``csc_pair_gram(indptr_a, indices_a, data_a, indptr_b, indices_b, data_b, s, upper, out)``
    writes ``X_aᵀ diag(s) X_b`` into ``out`` (``p_a x p_b``) in
    ``O(n_rows + nnz_b + Σ_r nnz_a,r · nnz_b,r)``: the rows of ``X_b``
    weighted by ``s`` are gathered into CSR (rows of weight 0 are left
    out), then every entry of ``X_a`` meets the entries of its row.  Entry
    ``(i, k)`` sums over the rows in row order.  With ``upper`` (``X_a``
    and ``X_b`` the same columns) only the upper triangle is computed and
    the lower one is 0.
``csc_feature_gram(indptr, indices, data, s, out)``
    :func:`csc_pair_gram` of ``X`` with itself (upper triangle) and
    ``Xᵀ s`` (:func:`~ultrafs.kernels.scoring.column_sums`).
``mirror_upper(out)``
    copies the upper triangle of a square matrix into its lower one.

``Xᵀ V`` and ``X W`` with several right-hand sides are
:func:`~ultrafs.kernels.sparse_ops.csc_rmatmat` and
:func:`~ultrafs.kernels.sparse_ops.csc_matmat` (row order, float64).
The kernels are serial: a streamed pass runs one per Dask task.
"""

import numpy as np
from numba import njit

from .scoring import column_sums
from .spans import first_at_least

__all__ = ["csc_sample_gram_add", "csc_pair_gram", "csc_feature_gram", "mirror_upper"]

#: side of the square tiles :func:`mirror_upper` copies
_TILE = 64


@njit(cache=True, nogil=True)
def csc_sample_gram_add(indptr, indices, data, d, out):
    """Add ``X diag(d) Xᵀ`` to the upper triangle of ``out``; return ``out``.

    Parameters
    ----------
    indptr : ndarray of int64, shape (p + 1,)
    indices : ndarray of int32 or int64, shape (nnz,)
        Rows, strictly increasing within each column.
    data : ndarray of float32 or float64, shape (nnz,)
    d : ndarray of float64, shape (p,)
        Column weights.
    out : ndarray of float64, shape (n_rows, n_rows)
        Entries ``(r, t)`` with ``r <= t`` are added to; the strict lower
        triangle is not touched (:func:`mirror_upper` fills it).

    Returns
    -------
    ndarray of float64, shape (n_rows, n_rows)
        ``out`` itself.
    """
    for j in range(len(indptr) - 1):
        dj = d[j]
        if dj == 0.0:
            continue
        end = indptr[j + 1]
        for a in range(indptr[j], end):
            row = out[indices[a]]
            v = dj * np.float64(data[a])
            for b in range(a, end):
                row[indices[b]] += v * np.float64(data[b])
    return out


@njit(cache=True, nogil=True)
def _weighted_rows(indptr, indices, data, s):
    """CSR arrays of ``diag(s) X`` without the rows of weight 0.

    Returns ``(row_ptr, cols, vals)``: the entries of row ``r`` are
    ``row_ptr[r]:row_ptr[r + 1]``, their columns increasing, their values
    ``s_r x_rk`` (float64).
    """
    n_rows = len(s)
    row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    for q in range(indptr[-1]):
        r = indices[q]
        if s[r] != 0.0:
            row_ptr[r + 1] += 1
    for r in range(n_rows):
        row_ptr[r + 1] += row_ptr[r]
    cols = np.empty(row_ptr[n_rows], dtype=np.int64)
    vals = np.empty(row_ptr[n_rows], dtype=np.float64)
    nxt = row_ptr[:n_rows].copy()
    for k in range(len(indptr) - 1):
        for q in range(indptr[k], indptr[k + 1]):
            r = indices[q]
            if s[r] != 0.0:
                t = nxt[r]
                cols[t] = k
                vals[t] = s[r] * np.float64(data[q])
                nxt[r] = t + 1
    return row_ptr, cols, vals


@njit(cache=True, nogil=True)
def csc_pair_gram(indptr_a, indices_a, data_a, indptr_b, indices_b, data_b, s, upper,
                  out):
    """Write ``X_aᵀ diag(s) X_b`` into ``out``; return ``out``.

    Parameters
    ----------
    indptr_a, indices_a, data_a : ndarray
        CSC arrays of ``X_a`` (``n_rows x p_a``), rows increasing within
        each column.
    indptr_b, indices_b, data_b : ndarray
        CSC arrays of ``X_b`` (``n_rows x p_b``).
    s : ndarray of float64, shape (n_rows,)
        Row weights.
    upper : bool
        ``X_a`` and ``X_b`` are the same columns: compute the entries
        ``(i, k)`` with ``i <= k`` only, leave the others 0.
    out : ndarray of float64, shape (p_a, p_b)
        Overwritten.

    Returns
    -------
    ndarray of float64, shape (p_a, p_b)
        ``out[i, k] = Σ_r x_a[r, i] s_r x_b[r, k]``, summed in row order.
    """
    out[:, :] = 0.0
    row_ptr, cols, vals = _weighted_rows(indptr_b, indices_b, data_b, s)
    for i in range(len(indptr_a) - 1):
        row = out[i]
        for q in range(indptr_a[i], indptr_a[i + 1]):
            r = indices_a[q]
            lo, hi = row_ptr[r], row_ptr[r + 1]
            if upper:
                lo = first_at_least(cols, lo, hi, i)
            x = np.float64(data_a[q])
            for t in range(lo, hi):
                row[cols[t]] += x * vals[t]
    return out


@njit(cache=True, nogil=True)
def csc_feature_gram(indptr, indices, data, s, out):
    """Write the upper triangle of ``Xᵀ diag(s) X`` into ``out``; return it and ``Xᵀ s``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X`` (``n_rows x p``), rows increasing within each
        column.
    s : ndarray of float64, shape (n_rows,)
    out : ndarray of float64, shape (p, p)
        Overwritten: the upper triangle (as :func:`csc_pair_gram` with
        ``upper``), zeros below it.

    Returns
    -------
    out : ndarray of float64, shape (p, p)
    xs : ndarray of float64, shape (p,)
        ``Xᵀ s``, summed in row order.
    """
    csc_pair_gram(indptr, indices, data, indptr, indices, data, s, True, out)
    return out, column_sums(indptr, indices, data, s)


@njit(cache=True, nogil=True)
def mirror_upper(out):
    """Copy the strict upper triangle of square ``out`` into its lower one; return it."""
    size = out.shape[0]
    for i0 in range(0, size, _TILE):        # by tiles: both sides stay in cache
        i1 = min(i0 + _TILE, size)
        for k0 in range(i0, size, _TILE):
            k1 = min(k0 + _TILE, size)
            for i in range(i0, i1):
                for k in range(max(k0, i + 1), k1):
                    out[k, i] = out[i, k]
    return out
