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

import math

import numpy as np
from numba import njit, prange

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
    # parallel twins (same arguments plus the row ranges, same bytes)
    "row_ranges",
    "csc_row_range_starts",
    "coarser_ranges",
    "csc_block_matvec_into_ranges",
    "csc_block_matvec_into_parallel",
    "csc_rmatvec_ranges",
    "csc_rmatvec_ranges_parallel",
    "column_values",
    "combine_block_products_parallel",
    "csc_block_matmat_into_ranges",
    "csc_block_matmat_into_parallel",
    "csc_to_csr",
    "csc_to_csr_parallel",
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
def _combine_range(xv, xg, scale, step, offset, lo, hi, out):
    """Rows ``lo:hi`` of :func:`combine_block_products`."""
    out[lo:hi] = -offset
    for h in range(xv.shape[0]):
        sh = scale[h]
        if sh == 0.0:
            continue
        gh = sh * step
        xv_h = xv[h]
        xg_h = xg[h]
        for i in range(lo, hi):
            out[i] += sh * xv_h[i] - gh * xg_h[i]


@njit(cache=True, nogil=True)
def combine_block_products(xv, xg, scale, step, offset, out):
    """Decision values from cached per-block products (paper §5.5).

    Computes ``out[i] = sum_h scale[h] * (xv[h, i] - step * xg[h, i]) - offset``,
    i.e. ``X @ w - offset`` for ``w_h = scale[h] * (v_h - step * g_h)`` when
    ``xv`` and ``xg`` hold the per-block products of ``v`` and ``g``.
    Blocks whose ``scale`` is zero are skipped.  Each ``out[i]`` adds the
    blocks in order (``-offset`` first); rows are taken a range at a time
    (:func:`row_ranges`) so that a range of ``out`` stays in cache.

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
    bounds = row_ranges(xv.shape[1])
    for r in range(len(bounds) - 1):
        _combine_range(xv, xg, scale, step, offset, bounds[r], bounds[r + 1], out)
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


# -- parallel twins ------------------------------------------------------------
# Products over rows (``X @ w`` and its block and multi-output forms, the CSR
# copy) are split into ranges of rows: one thread owns a range and, for every
# column in order, adds the column's entries that fall in it (found once per
# matrix by :func:`csc_row_range_starts`, which needs sorted row indices), so
# every output row is summed in column order exactly as the serial loop
# sums it: the results are those of the serial kernels to the bit, whatever
# the ranges and the threads.  Products over columns (``X.T @ r``) run over
# the same ranges too, so that a range's slice of ``r`` stays in cache: each
# range's part of every column's dot product, then the parts added in range
# order (the bytes then depend on the ranges, which depend on the rows only).

#: rows per range of the CSR copy (one range's output stays in a core's cache)
_RANGE_ROWS = 2 ** 12
#: most ranges of rows (the starts matrix holds p x ranges integers)
_MAX_RANGES = 1024
#: ranges of :func:`row_ranges` per range of the products (:func:`coarser_ranges`)
PRODUCT_RANGE_FACTOR = 16


@njit(cache=True, nogil=True)
def row_ranges(n_rows):
    """Boundaries of the ranges of rows of the row-parallel kernels.

    Parameters
    ----------
    n_rows : int

    Returns
    -------
    ndarray of int64, shape (R + 1,)
        ``0 = b[0] < b[1] < ... < b[R] = n_rows`` (``[0, 0]`` for no rows):
        ranges of 4096 rows, or more when there would be over 1024 of
        them.  No result depends on them.
    """
    size = max(_RANGE_ROWS, -(-n_rows // _MAX_RANGES))
    count = max(1, -(-n_rows // size))
    bounds = np.empty(count + 1, dtype=np.int64)
    for r in range(count):
        bounds[r] = min(n_rows, r * size)
    bounds[count] = n_rows
    return bounds


@njit(cache=True, nogil=True)
def coarser_ranges(starts, bounds, factor):
    """Merge every ``factor`` consecutive ranges of :func:`csc_row_range_starts`.

    The products with ``X`` run fastest on ranges of about 2**16 rows (one
    range's output in a core's cache, few passes over the columns), the CSR
    copy on ranges of 2**12.

    Returns
    -------
    starts, bounds : ndarray of int64, shapes (p, R' + 1) and (R' + 1,)
    """
    R = len(bounds) - 1
    count = -(-R // factor) if R > 0 else 0
    keep = np.empty(count + 1, dtype=np.int64)
    for r in range(count):
        keep[r] = r * factor
    keep[count] = R
    out_starts = np.empty((starts.shape[0], count + 1), dtype=np.int64)
    out_bounds = np.empty(count + 1, dtype=np.int64)
    for r in range(count + 1):
        out_bounds[r] = bounds[keep[r]]
        for j in range(starts.shape[0]):
            out_starts[j, r] = starts[j, keep[r]]
    return out_starts, out_bounds


@njit(cache=True, nogil=True)
def csc_row_range_starts(indptr, indices, bounds):
    """Where each column's entries enter each range of rows.

    Parameters
    ----------
    indptr, indices : ndarray
        CSC pattern of ``X`` (p columns).
    bounds : ndarray of int64, shape (R + 1,)
        Row ranges (:func:`row_ranges`).

    Returns
    -------
    starts : ndarray of int64, shape (p, R + 1)
        Column ``j``'s entries in rows ``bounds[r]:bounds[r + 1]`` are
        ``starts[j, r]:starts[j, r + 1]`` (``starts[j, 0] = indptr[j]``,
        ``starts[j, R] = indptr[j + 1]``).
    ok : bool
        Whether the row indices increase (not strictly) within every column;
        ``starts`` is meaningless otherwise (use the serial kernels).
    """
    p = len(indptr) - 1
    R = len(bounds) - 1
    starts = np.empty((p, R + 1), dtype=np.int64)
    for j in range(p):
        lo, hi = indptr[j], indptr[j + 1]
        for k in range(lo + 1, hi):
            if indices[k] < indices[k - 1]:
                return starts, False
        k = lo
        starts[j, 0] = lo
        for r in range(1, R):
            while k < hi and indices[k] < bounds[r]:
                k += 1
            starts[j, r] = k
        starts[j, R] = hi
    return starts, True


@njit(cache=True, nogil=True)
def _scatter_range(indptr, indices, data, colval, w, block_ptr, starts, lo, hi, r, out):
    """Rows ``lo:hi`` of :func:`csc_block_matvec_into` (range ``r``).

    ``colval``: each column's one value (``data`` unread: the same products,
    a third of the memory traffic), or empty.
    """
    constant = len(colval) > 0
    for h in range(len(block_ptr) - 1):
        row = out[h]
        row[lo:hi] = 0.0
        for j in range(block_ptr[h], block_ptr[h + 1]):
            wj = np.float64(w[j])
            if wj == 0.0:
                continue
            if constant:
                x = colval[j] * wj
                for k in range(starts[j, r], starts[j, r + 1]):
                    row[indices[k]] += x
            else:
                for k in range(starts[j, r], starts[j, r + 1]):
                    row[indices[k]] += np.float64(data[k]) * wj


@njit(cache=True, nogil=True)
def csc_block_matvec_into_ranges(indptr, indices, data, colval, w, block_ptr, starts,
                                 bounds, out):
    """:func:`csc_block_matvec_into` range of rows by range (the same bytes).

    ``starts, bounds``: :func:`csc_row_range_starts` of ``X`` and
    :func:`row_ranges` of its rows (sorted row indices only).  The output
    of a range stays in cache while every column adds to it.  ``colval``:
    :func:`column_values` of ``X`` when every column holds one value (then
    ``data`` is not read), else empty.
    """
    for r in range(len(bounds) - 1):
        _scatter_range(indptr, indices, data, colval, w, block_ptr, starts, bounds[r],
                       bounds[r + 1], r, out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def csc_block_matvec_into_parallel(indptr, indices, data, colval, w, block_ptr, starts,
                                   bounds, out):
    """:func:`csc_block_matvec_into_ranges` over threads (the same bytes)."""
    for r in prange(len(bounds) - 1):   # np.int64: the serial twin's signature
        _scatter_range(indptr, indices, data, colval, w, block_ptr, starts, bounds[r],
                       bounds[r + 1], np.int64(r), out)
    return out


@njit(cache=True, nogil=True)
def _scatter_range_multi(indptr, indices, data, w, K, block_ptr, starts, lo, hi, r,
                         out):
    """Rows ``lo:hi`` of :func:`csc_block_matmat_into` (range ``r``)."""
    for h in range(len(block_ptr) - 1):
        row = out[h]
        row[lo * K:hi * K] = 0.0
        for j in range(block_ptr[h], block_ptr[h + 1]):
            base = j * K
            nonzero = False
            for c in range(K):
                if w[base + c] != 0.0:
                    nonzero = True
            if not nonzero:
                continue
            for q in range(starts[j, r], starts[j, r + 1]):
                x = np.float64(data[q])
                i = indices[q] * K
                for c in range(K):
                    row[i + c] += x * w[base + c]


@njit(cache=True, nogil=True)
def csc_block_matmat_into_ranges(indptr, indices, data, w, n_outputs, block_ptr,
                                 starts, bounds, out):
    """:func:`csc_block_matmat_into` range of rows by range (the same bytes)."""
    for r in range(len(bounds) - 1):
        _scatter_range_multi(indptr, indices, data, w, n_outputs, block_ptr, starts,
                             bounds[r], bounds[r + 1], r, out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def csc_block_matmat_into_parallel(indptr, indices, data, w, n_outputs, block_ptr,
                                   starts, bounds, out):
    """:func:`csc_block_matmat_into_ranges` over threads (the same bytes)."""
    for r in prange(len(bounds) - 1):
        _scatter_range_multi(indptr, indices, data, w, n_outputs, block_ptr, starts,
                             bounds[r], bounds[r + 1], r, out)
    return out


#: ranges of rows of :func:`csc_rmatvec_ranges` summed at a time (a wave's
#: partial sums, ``wave x p x K`` floats, are then added in order); no result
#: depends on it
_RMATVEC_WAVE = 16


@njit(cache=True, nogil=True)
def _range_dots(indices, data, colval, r, K, starts, rng, out):
    """``out[j * K + c] = X[rows of range rng, j] . R[:, c]``, entries in order.

    ``colval`` (one output only): each column's one value (``data``
    unread), or empty.
    """
    for j in range(starts.shape[0]):
        lo, hi = starts[j, rng], starts[j, rng + 1]
        if K == 1:
            acc = 0.0
            if len(colval) > 0:
                c = colval[j]
                for k in range(lo, hi):
                    acc += c * r[indices[k]]
            else:
                for k in range(lo, hi):
                    acc += np.float64(data[k]) * r[indices[k]]
            out[j] = acc
            continue
        base = j * K
        for c in range(K):
            out[base + c] = 0.0
        for q in range(lo, hi):
            x = np.float64(data[q])
            r0 = indices[q] * K
            for c in range(K):
                out[base + c] += x * r[r0 + c]


@njit(cache=True, nogil=True)
def _add_partials(partial, count, out):
    """Add the first ``count`` rows of ``partial`` to ``out``, in order.

    ``out`` starts at zeros; a part is a sum started at 0.0, never -0.0, so
    ``0.0 + part`` is ``part`` to the bit (one range: the plain kernel's sums).
    """
    for j in range(partial.shape[1]):
        acc = out[j]
        for q in range(count):
            acc += partial[q, j]
        out[j] = acc


@njit(cache=True, nogil=True)
def _wave_arrays(indptr, n_outputs, bounds):
    """The result (zeros) and one wave's partial sums of :func:`csc_rmatvec_ranges`."""
    size = (len(indptr) - 1) * n_outputs
    waves = min(len(bounds) - 1, _RMATVEC_WAVE)
    return np.zeros(size, dtype=np.float64), np.empty((waves, size), dtype=np.float64)


@njit(cache=True, nogil=True)
def csc_rmatvec_ranges(indptr, indices, data, colval, r, n_outputs, starts, bounds):
    """``X.T @ R`` (K outputs, flattened row-major) range of rows by range.

    Each range's part of every column's dot products is summed in entry
    order, then the parts are added in range order: the bytes depend on
    ``bounds`` (the rows only), not on threads.  A range's slice of ``R``
    stays in a core's cache while every column reads it; the column-by-column
    products (:func:`csc_rmatvec`, :func:`csc_rmatmat`) fetch a cache line
    from memory per entry once ``R`` outgrows the caches (4-7x slower at
    10**7 rows).

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X`` (sorted row indices; ``data`` unread and may be
        empty when ``colval`` is given).
    colval : ndarray of float64
        With one output, :func:`column_values` of ``X`` when every column
        holds one value; else empty.
    r : ndarray of float64, shape (n_rows * K,)
        ``R`` flattened row-major (``r`` itself for K = 1).
    n_outputs : int
        ``K``.
    starts, bounds : ndarray of int64
        :func:`csc_row_range_starts` of ``X`` and its ranges of rows.

    Returns
    -------
    ndarray of float64, shape (p * K,)
    """
    out, partial = _wave_arrays(indptr, n_outputs, bounds)
    R = len(bounds) - 1
    for lo in range(0, R, _RMATVEC_WAVE):
        count = min(R - lo, _RMATVEC_WAVE)
        for q in range(count):
            _range_dots(indices, data, colval, r, n_outputs, starts, lo + q, partial[q])
        _add_partials(partial, count, out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def csc_rmatvec_ranges_parallel(indptr, indices, data, colval, r, n_outputs, starts,
                                bounds):
    """:func:`csc_rmatvec_ranges` over threads (the same bytes)."""
    out, partial = _wave_arrays(indptr, n_outputs, bounds)
    R = len(bounds) - 1
    for lo in range(0, R, _RMATVEC_WAVE):
        count = min(R - lo, _RMATVEC_WAVE)
        for q in prange(count):
            _range_dots(indices, data, colval, r, n_outputs, starts, lo + q, partial[q])
        _add_partials(partial, count, out)
    return out


@njit(cache=True, nogil=True)
def column_values(indptr, data):
    """Each column's one value, if every column holds a single value.

    Values are compared bit for bit up to NaN (a column holding ``0.0`` and
    ``-0.0``, or a NaN, holds two values), so products computed from these
    values equal those computed from ``data``.

    Returns
    -------
    values : ndarray of float64, shape (p,)
        ``data`` of the column's first entry (1.0 for an empty column).
    constant : bool
    """
    p = len(indptr) - 1
    values = np.ones(p)
    for j in range(p):
        lo, hi = indptr[j], indptr[j + 1]
        if hi > lo:
            v = data[lo]
            if v != v:
                return values, False
            negative = math.copysign(1.0, v) < 0.0
            for k in range(lo + 1, hi):
                if data[k] != v or (math.copysign(1.0, data[k]) < 0.0) != negative:
                    return values, False
            values[j] = np.float64(v)
    return values, True


@njit(cache=True, nogil=True, parallel=True)
def combine_block_products_parallel(xv, xg, scale, step, offset, out):
    """:func:`combine_block_products` over ranges of rows (the same bytes)."""
    bounds = row_ranges(xv.shape[1])
    for r in prange(len(bounds) - 1):
        _combine_range(xv, xg, scale, step, offset, bounds[r], bounds[r + 1], out)
    return out


@njit(cache=True, nogil=True)
def count_range_rows(indices, starts, r, counts, row0=0):
    """Entries per row of range ``r`` into ``counts`` (rows from ``row0``)."""
    for j in range(starts.shape[0]):
        for k in range(starts[j, r], starts[j, r + 1]):
            counts[indices[k] - row0] += 1


@njit(cache=True, nogil=True)
def fill_range_rows(indices, data, starts, r, nxt, out_idx, out_val, row0=0):
    """CSR entries of the rows of range ``r`` (rows counted from ``row0``)."""
    values = len(data) > 0
    for j in range(starts.shape[0]):
        for k in range(starts[j, r], starts[j, r + 1]):
            i = indices[k] - row0
            pos = nxt[i]
            out_idx[pos] = j
            if values:
                out_val[pos] = data[k]
            nxt[i] = pos + 1


@njit(cache=True, nogil=True)
def _csr_pointers(counts):
    """Turn per-row counts (at ``1:``) into CSR pointers in place; return the fill cursors."""
    n_rows = len(counts) - 1
    for i in range(n_rows):
        counts[i + 1] += counts[i]
    return counts[:n_rows].copy()


@njit(cache=True, nogil=True)
def csc_to_csr(indptr, indices, data, n_rows, starts, bounds):
    """The CSR arrays of a CSC matrix with sorted row indices.

    Within a row, entries come in column order (and duplicates in their
    order), as scipy's ``tocsr`` gives them.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X`` (n_rows x p), row indices increasing (not
        strictly) within a column; an empty ``data`` copies the pattern
        only (the returned ``data`` is empty).
    n_rows : int
    starts, bounds : ndarray of int64
        :func:`csc_row_range_starts` and :func:`row_ranges`.

    Returns
    -------
    indptr, indices, data : int64, int32 and ``data.dtype`` arrays
    """
    R = len(bounds) - 1
    counts = np.zeros(n_rows + 1, dtype=np.int64)
    for r in range(R):
        count_range_rows(indices, starts, r, counts[1:])
    nxt = _csr_pointers(counts)
    out_idx = np.empty(counts[n_rows], dtype=np.int32)
    out_val = np.empty(counts[n_rows] if len(data) else 0, dtype=data.dtype)
    for r in range(R):
        fill_range_rows(indices, data, starts, r, nxt, out_idx, out_val)
    return counts, out_idx, out_val


@njit(cache=True, nogil=True, parallel=True)
def csc_to_csr_parallel(indptr, indices, data, n_rows, starts, bounds):
    """:func:`csc_to_csr` over ranges of rows (the same arrays)."""
    R = len(bounds) - 1
    counts = np.zeros(n_rows + 1, dtype=np.int64)
    for r in prange(R):
        count_range_rows(indices, starts, r, counts[1:])
    nxt = _csr_pointers(counts)
    out_idx = np.empty(counts[n_rows], dtype=np.int32)
    out_val = np.empty(counts[n_rows] if len(data) else 0, dtype=data.dtype)
    for r in prange(R):
        fill_range_rows(indices, data, starts, r, nxt, out_idx, out_val)
    return counts, out_idx, out_val
