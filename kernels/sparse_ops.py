"""Products with a CSC matrix given as raw arrays, and the per-block cache.

Every kernel takes scipy's CSC triplet ``(indptr, indices, data)`` of a
matrix ``X`` of shape ``(n_rows, p)``.  ``data`` may be float32 or float64 and
the index arrays int32 or int64; every product is accumulated in float64.
Columns may be empty and rows may hold no entry at all.

Columns are split into ``t`` contiguous blocks by ``block_ptr`` (length
``t + 1``, ``block_ptr[0] == 0``, ``block_ptr[t] == p``): block ``h`` is the
columns ``block_ptr[h]:block_ptr[h + 1]``.  Per-block products are laid out as
``(t, n_rows)`` C-ordered arrays: row ``h`` is ``X_h @ w_h``, so the scatter of
one block stays in one contiguous vector (as fast as :func:`csc_matvec`) and
:func:`combine_block_products` streams whole rows (paper §5.5: a line-search
trial costs O(n t) instead of O(nnz)).

Multi-output products (K outputs, e.g. one per class) take coefficients
``W`` of shape ``(p, K)`` flattened row-major (``w[j * K + k]``, so the K
weights of one column are adjacent and a block of columns is a contiguous
slice) and return decision values ``F = X @ W`` of shape ``(n_rows, K)``
flattened row-major (``f[i * K + k]``).  With ``K = 1`` they compute the
same sums in the same order as the single-output kernels.
"""

import numpy as np
from numba import njit

__all__ = [
    "csc_matvec",
    "csc_block_matvec",
    "csc_block_matvec_into",
    "csc_rmatvec",
    "combine_block_products",
    "csc_matmat",
    "csc_block_matmat_into",
    "csc_rmatmat",
    "csc_take_rows",
    "csc_take_rows_pattern",
]


@njit(cache=True, nogil=True)
def csc_matvec(indptr, indices, data, w, n_rows):
    """Return ``X @ w``.

    Parameters
    ----------
    indptr : ndarray of int, shape (p + 1,)
    indices : ndarray of int, shape (nnz,)
    data : ndarray of float32 or float64, shape (nnz,)
    w : ndarray of float64, shape (p,)
    n_rows : int
        Number of rows of ``X``.

    Returns
    -------
    ndarray of float64, shape (n_rows,)
    """
    one_group = np.array([0, len(indptr) - 1], dtype=np.int64)
    out = np.empty((1, n_rows), dtype=np.float64)
    return csc_block_matvec_into(indptr, indices, data, w, one_group, out)[0]


@njit(cache=True, nogil=True)
def csc_block_matvec_into(indptr, indices, data, w, block_ptr, out):
    """Write the per-block products ``X_h @ w_h`` into ``out``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X`` (see the module docstring).
    w : ndarray of float64, shape (p,)
    block_ptr : ndarray of int64, shape (t + 1,)
    out : ndarray of float64, shape (t, n_rows)
        Overwritten: ``out[h, i] = sum_{j in block h} X[i, j] * w[j]``.

    Returns
    -------
    ndarray of float64, shape (t, n_rows)
        ``out`` itself.
    """
    for h in range(len(block_ptr) - 1):
        row = out[h]
        row[:] = 0.0
        for j in range(block_ptr[h], block_ptr[h + 1]):
            wj = np.float64(w[j])
            if wj == 0.0:
                continue
            for k in range(indptr[j], indptr[j + 1]):
                row[indices[k]] += np.float64(data[k]) * wj
    return out


@njit(cache=True, nogil=True)
def csc_block_matvec(indptr, indices, data, w, block_ptr, n_rows):
    """Return the per-block products ``X_h @ w_h`` as columns.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X`` (see the module docstring).
    w : ndarray of float64, shape (p,)
    block_ptr : ndarray of int64, shape (t + 1,)
    n_rows : int

    Returns
    -------
    ndarray of float64, shape (t, n_rows)
        Row ``h`` is ``X[:, block h] @ w[block h]``; the column sums are
        ``X @ w``.
    """
    out = np.empty((len(block_ptr) - 1, n_rows), dtype=np.float64)
    return csc_block_matvec_into(indptr, indices, data, w, block_ptr, out)

@njit(cache=True, nogil=True)
def csc_rmatvec(indptr, indices, data, r):
    """Return ``X.T @ r``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X`` (see the module docstring).
    r : ndarray of float64, shape (n_rows,)

    Returns
    -------
    ndarray of float64, shape (p,)
    """
    p = len(indptr) - 1
    out = np.empty(p, dtype=np.float64)
    for j in range(p):
        acc = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            acc += np.float64(data[k]) * r[indices[k]]
        out[j] = acc
    return out


@njit(cache=True, nogil=True)
def combine_block_products(xv, xg, scale, step, offset, out):
    """Decision values from cached per-block products (paper §5.5).

    Computes ``out[i] = sum_h scale[h] * (xv[h, i] - step * xg[h, i]) - offset``,
    i.e. ``X @ w - offset`` for ``w_h = scale[h] * (v_h - step * g_h)`` when
    ``xv`` and ``xg`` hold the per-block products of ``v`` and ``g``.
    Blocks whose ``scale`` is zero are skipped.

    Parameters
    ----------
    xv, xg : ndarray of float64, shape (t, n_rows)
    scale : ndarray of float64, shape (t,)
    step : float
    offset : float
    out : ndarray of float64, shape (n_rows,)
        Overwritten.

    Returns
    -------
    ndarray of float64, shape (n_rows,)
        ``out`` itself.
    """
    t, n_rows = xv.shape
    out[:] = -offset
    for h in range(t):
        sh = scale[h]
        if sh == 0.0:
            continue
        gh = sh * step
        xv_h = xv[h]
        xg_h = xg[h]
        for i in range(n_rows):
            out[i] += sh * xv_h[i] - gh * xg_h[i]
    return out


@njit(cache=True, nogil=True)
def csc_block_matmat_into(indptr, indices, data, w, n_outputs, block_ptr, out):
    """Write the per-block products ``X_h @ W_h`` (K outputs) into ``out``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X`` (see the module docstring).
    w : ndarray of float64, shape (p * K,)
        ``W`` flattened row-major.
    n_outputs : int
        ``K``.
    block_ptr : ndarray of int64, shape (t + 1,)
        Column blocks (in columns, not coefficients).
    out : ndarray of float64, shape (t, n_rows * K)
        Overwritten: ``out[h, i * K + k] = sum_{j in block h} X[i, j] W[j, k]``.

    Returns
    -------
    ndarray of float64, shape (t, n_rows * K)
        ``out`` itself.
    """
    K = n_outputs
    for h in range(len(block_ptr) - 1):
        row = out[h]
        row[:] = 0.0
        for j in range(block_ptr[h], block_ptr[h + 1]):
            base = j * K
            nonzero = False
            for c in range(K):
                if w[base + c] != 0.0:
                    nonzero = True
            if not nonzero:
                continue
            for q in range(indptr[j], indptr[j + 1]):
                x = np.float64(data[q])
                r = indices[q] * K
                for c in range(K):
                    row[r + c] += x * w[base + c]
    return out


@njit(cache=True, nogil=True)
def csc_matmat(indptr, indices, data, w, n_outputs, n_rows):
    """Return ``X @ W`` flattened row-major, shape ``(n_rows * K,)``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X``.
    w : ndarray of float64, shape (p * K,)
    n_outputs : int
    n_rows : int

    Returns
    -------
    ndarray of float64, shape (n_rows * K,)
    """
    one_block = np.array([0, len(indptr) - 1], dtype=np.int64)
    out = np.empty((1, n_rows * n_outputs), dtype=np.float64)
    return csc_block_matmat_into(indptr, indices, data, w, n_outputs, one_block,
                                 out)[0]


@njit(cache=True, nogil=True)
def csc_rmatmat(indptr, indices, data, r, n_outputs):
    """Return ``X.T @ R`` flattened row-major, shape ``(p * K,)``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X``.
    r : ndarray of float64, shape (n_rows * K,)
        ``R`` flattened row-major.
    n_outputs : int

    Returns
    -------
    ndarray of float64, shape (p * K,)
    """
    K = n_outputs
    p = len(indptr) - 1
    out = np.zeros(p * K, dtype=np.float64)
    for j in range(p):
        base = j * K
        for q in range(indptr[j], indptr[j + 1]):
            x = np.float64(data[q])
            r0 = indices[q] * K
            for c in range(K):
                out[base + c] += x * r[r0 + c]
    return out



@njit(cache=True, nogil=True)
def csc_take_rows(indptr, indices, data, row_map):
    """Keep some rows of a CSC matrix and renumber them.

    Parameters
    ----------
    indptr : int64 array, shape (p + 1,)
    indices : int array, shape (nnz,)
        Row numbers, increasing within each column.
    data : float32 or float64 array, shape (nnz,)
    row_map : int64 array, shape (n_rows,)
        New row number of every old row, or -1 for a row that is dropped;
        kept rows must be numbered increasingly (so the output's row
        numbers stay sorted within each column).

    Returns
    -------
    indptr, indices, data : int64, int32 and ``data.dtype`` arrays
        The CSC arrays of the kept rows (``p`` columns).
    """
    out_ptr, out_idx = csc_take_rows_pattern(indptr, indices, row_map)
    out_val = np.empty(out_idx.shape[0], dtype=data.dtype)
    pos = 0
    for j in range(indptr.shape[0] - 1):
        for k in range(indptr[j], indptr[j + 1]):
            if row_map[indices[k]] >= 0:
                out_val[pos] = data[k]
                pos += 1
    return out_ptr, out_idx, out_val


@njit(cache=True, nogil=True)
def csc_take_rows_pattern(indptr, indices, row_map):
    """:func:`csc_take_rows` of a pattern-only (binary) matrix.

    Returns
    -------
    indptr, indices : int64 and int32 arrays
    """
    p = indptr.shape[0] - 1
    out_ptr = np.zeros(p + 1, dtype=np.int64)
    count = 0
    for j in range(p):
        for k in range(indptr[j], indptr[j + 1]):
            if row_map[indices[k]] >= 0:
                count += 1
        out_ptr[j + 1] = count
    out_idx = np.empty(count, dtype=np.int32)
    pos = 0
    for j in range(p):
        for k in range(indptr[j], indptr[j + 1]):
            new = row_map[indices[k]]
            if new >= 0:
                out_idx[pos] = new
                pos += 1
    return out_ptr, out_idx
