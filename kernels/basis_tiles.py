"""Tiles of a generated basis (random Fourier features, exact RBF kernel) and
their products.

A *tile* is the dense block ``T = Φ[r0:r1, k0:k0 + G]`` of a basis matrix
``Φ`` (N x M) that is never stored whole: rows ``r0:r1`` of the input rows
``X`` (CSR arrays ``indptr, indices, data``; ``data`` float64) times a
dense ``(n_inputs, G)`` matrix ``A`` (a group of random directions, or of
points as columns), mapped entry by entry:

* random Fourier features: ``T[i, c] = scale * cos(P[i, c] + b[c])``;
* RBF kernel columns: ``T[i, c] = exp(-max(sq[i] + sq_points[c] - 2 P[i, c],
  0) / sigma2)``;

with ``P = X[r0:r1] @ A``.  Tiles are float64, C-ordered ``(r1 - r0, G)``.

Fixed summation orders (the same bytes for any row chunking, for a tile
kept in memory or made again, and for the serial kernel and its
``*_parallel`` twin, whatever the thread count):

* ``P[i, c]`` adds row ``i``'s entries in their CSR order, from 0;
* products with a tile *accumulate into the caller's arrays*:
  ``out[i] += Σ_k T[i, k] w[k]`` adds ``k`` in order starting from
  ``out[i]``; ``out[k] += Σ_i T[i, k] r[i]`` adds the rows in order
  starting from ``out[k]``.  A product over many tiles therefore sums in
  one global order (groups in order, row chunks in order): no partial of a
  chunk is ever summed separately and added.

The ``*_parallel`` twins (``prange``) split rows (tile making, ``T w``) or
runs of :data:`COLUMN_RUN` columns (``T' r``) between threads: every
output entry is computed by one thread in the serial order.  Callers pick
a twin with :func:`ultrafs.kernels.row_chunks.dispatch`.

Input rows with an index outside ``A`` must have been dropped by the
caller (nothing is checked here).
"""

import math

import numpy as np
from numba import njit, prange

__all__ = [
    "csr_dense_tile", "csr_dense_tile_parallel",
    "rff_map", "rbf_map",
    "rff_tile", "rff_tile_parallel",
    "rbf_tile", "rbf_tile_parallel",
    "csr_row_squares",
    "tile_matvec_acc", "tile_matvec_acc_parallel",
    "tile_rmatvec_acc", "tile_rmatvec_acc_parallel",
    "tile_rmatvec_hess_acc", "tile_rmatvec_hess_acc_parallel",
    "columns_matvec_acc", "columns_matvec_acc_parallel",
    "COLUMN_RUN", "ROW_RUN",
]

#: columns per thread's run in the column-parallel products (a cache line
#: of float64)
COLUMN_RUN = 8
#: rows per thread's run in :func:`columns_matvec_acc_parallel`
ROW_RUN = 4096


# --------------------------------------------------------------- rows x A
@njit(cache=True, nogil=True)
def _row_product(indptr, indices, data, i, dense, out_row):
    """``out_row[:] = X[i] @ dense`` (entries of row ``i`` in CSR order)."""
    out_row[:] = 0.0
    width = out_row.shape[0]
    for p in range(indptr[i], indptr[i + 1]):
        x = data[p]
        src = dense[indices[p]]
        for c in range(width):
            out_row[c] += x * src[c]


@njit(cache=True, nogil=True)
def csr_dense_tile(indptr, indices, data, r0, r1, dense, out):
    """``out = X[r0:r1] @ dense``.

    Parameters
    ----------
    indptr : int array, shape (N + 1,)
    indices : int array, shape (nnz,)
        Column of each entry, each in ``0 .. dense.shape[0] - 1``.
    data : float64 array, shape (nnz,)
    r0, r1 : int
        Rows of the tile, ``0 <= r0 <= r1 <= N``.
    dense : float64 array, shape (n_inputs, G), C-ordered
    out : float64 array, shape (r1 - r0, G)
        Overwritten.

    Returns
    -------
    out
    """
    for t in range(r1 - r0):
        _row_product(indptr, indices, data, r0 + t, dense, out[t])
    return out


@njit(cache=True, nogil=True, parallel=True)
def csr_dense_tile_parallel(indptr, indices, data, r0, r1, dense, out):
    """:func:`csr_dense_tile`, rows split between threads (same bytes)."""
    for t in prange(r1 - r0):
        _row_product(indptr, indices, data, r0 + t, dense, out[t])
    return out


# ------------------------------------------------------------------ maps
@njit(cache=True, nogil=True)
def _rff_row(row, b, scale):
    for c in range(row.shape[0]):
        row[c] = scale * math.cos(row[c] + b[c])


@njit(cache=True, nogil=True)
def _rbf_row(row, sq_row, sq_points, sigma2):
    for c in range(row.shape[0]):
        d2 = sq_row + sq_points[c] - 2.0 * row[c]
        if d2 < 0.0:
            d2 = 0.0
        row[c] = math.exp(-d2 / sigma2)


@njit(cache=True, nogil=True)
def rff_map(tile, b, scale):
    """In place: ``tile[i, c] = scale * cos(tile[i, c] + b[c])``.

    Parameters
    ----------
    tile : float64 array, shape (R, G)
        The products ``P``.
    b : float64 array, shape (G,)
        Phases.
    scale : float
        ``sqrt(2 / D)``.
    """
    for t in range(tile.shape[0]):
        _rff_row(tile[t], b, scale)
    return tile


@njit(cache=True, nogil=True)
def rbf_map(tile, sq_rows, sq_points, sigma2):
    """In place: ``tile[i, c] = exp(-max(sq_rows[i] + sq_points[c] - 2 tile[i, c],
    0) / sigma2)``.

    Parameters
    ----------
    tile : float64 array, shape (R, G)
        The inner products ``P``.
    sq_rows : float64 array, shape (R,)
        Squared norms of the tile's rows.
    sq_points : float64 array, shape (G,)
        Squared norms of the points.
    sigma2 : float
        ``sigma ** 2``.
    """
    for t in range(tile.shape[0]):
        _rbf_row(tile[t], sq_rows[t], sq_points, sigma2)
    return tile


@njit(cache=True, nogil=True)
def csr_row_squares(indptr, data):
    """``Σ_j X[i, j]²`` of every row, entries in CSR order (float64, (N,))."""
    n = len(indptr) - 1
    out = np.zeros(n, dtype=np.float64)
    for i in range(n):
        acc = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            acc += data[p] * data[p]
        out[i] = acc
    return out


# ---------------------------------------------------------- fused tiles
@njit(cache=True, nogil=True)
def rff_tile(indptr, indices, data, r0, r1, omega, b, scale, out):
    """Random Fourier feature tile: ``out = scale * cos(X[r0:r1] @ omega + b)``.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of ``X`` (N x n_inputs), float64 data
    r0, r1 : int
    omega : float64 array, shape (n_inputs, G), C-ordered
    b : float64 array, shape (G,)
    scale : float
    out : float64 array, shape (r1 - r0, G), overwritten

    Returns
    -------
    out
    """
    for t in range(r1 - r0):
        _row_product(indptr, indices, data, r0 + t, omega, out[t])
        _rff_row(out[t], b, scale)
    return out


@njit(cache=True, nogil=True, parallel=True)
def rff_tile_parallel(indptr, indices, data, r0, r1, omega, b, scale, out):
    """:func:`rff_tile`, rows split between threads (same bytes)."""
    for t in prange(r1 - r0):
        _row_product(indptr, indices, data, r0 + t, omega, out[t])
        _rff_row(out[t], b, scale)
    return out


@njit(cache=True, nogil=True)
def rbf_tile(indptr, indices, data, r0, r1, points_t, sq_rows, sq_points, sigma2,
             out):
    """RBF kernel tile: ``out[i, c] = exp(-||x_i - p_c||² / sigma2)`` for rows
    ``r0:r1`` and the points of ``points_t``.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of ``X``, float64 data
    r0, r1 : int
    points_t : float64 array, shape (n_inputs, G), C-ordered
        The points as columns.
    sq_rows : float64 array, shape (N,)
        ``||x_i||²`` of every row of ``X`` (all of its entries, also those
        the points never have).
    sq_points : float64 array, shape (G,)
    sigma2 : float
    out : float64 array, shape (r1 - r0, G), overwritten

    Returns
    -------
    out
    """
    for t in range(r1 - r0):
        _row_product(indptr, indices, data, r0 + t, points_t, out[t])
        _rbf_row(out[t], sq_rows[r0 + t], sq_points, sigma2)
    return out


@njit(cache=True, nogil=True, parallel=True)
def rbf_tile_parallel(indptr, indices, data, r0, r1, points_t, sq_rows, sq_points,
                      sigma2, out):
    """:func:`rbf_tile`, rows split between threads (same bytes)."""
    for t in prange(r1 - r0):
        _row_product(indptr, indices, data, r0 + t, points_t, out[t])
        _rbf_row(out[t], sq_rows[r0 + t], sq_points, sigma2)
    return out


# ------------------------------------------------------------- products
@njit(cache=True, nogil=True)
def _row_dot_acc(row, w, acc):
    for k in range(row.shape[0]):
        acc += row[k] * w[k]
    return acc


@njit(cache=True, nogil=True)
def tile_matvec_acc(tile, w, out):
    """``out[i] += Σ_k tile[i, k] w[k]``, ``k`` in order from ``out[i]``.

    Parameters
    ----------
    tile : float64 array, shape (R, G)
    w : float64 array, shape (G,)
    out : float64 array, shape (R,)
        Updated in place.
    """
    for i in range(tile.shape[0]):
        out[i] = _row_dot_acc(tile[i], w, out[i])
    return out


@njit(cache=True, nogil=True, parallel=True)
def tile_matvec_acc_parallel(tile, w, out):
    """:func:`tile_matvec_acc`, rows split between threads (same bytes)."""
    for i in prange(tile.shape[0]):
        out[i] = _row_dot_acc(tile[i], w, out[i])
    return out


@njit(cache=True, nogil=True)
def _rmatvec_run(tile, r, out, lo, hi):
    for i in range(tile.shape[0]):
        ri = r[i]
        row = tile[i]
        for k in range(lo, hi):
            out[k] += row[k] * ri


@njit(cache=True, nogil=True)
def _rmatvec_hess_run(tile, r, s, out_r, out_s, lo, hi):
    for i in range(tile.shape[0]):
        ri = r[i]
        si = s[i]
        row = tile[i]
        for k in range(lo, hi):
            v = row[k]
            out_r[k] += v * ri
            out_s[k] += (v * v) * si


@njit(cache=True, nogil=True)
def tile_rmatvec_acc(tile, r, out):
    """``out[k] += Σ_i tile[i, k] r[i]``, rows in order from ``out[k]``.

    Parameters
    ----------
    tile : float64 array, shape (R, G)
    r : float64 array, shape (R,)
    out : float64 array, shape (G,)
        Updated in place.
    """
    _rmatvec_run(tile, r, out, 0, tile.shape[1])
    return out


@njit(cache=True, nogil=True, parallel=True)
def tile_rmatvec_acc_parallel(tile, r, out):
    """:func:`tile_rmatvec_acc`, runs of :data:`COLUMN_RUN` columns split
    between threads (same bytes)."""
    G = tile.shape[1]
    for q in prange((G + COLUMN_RUN - 1) // COLUMN_RUN):
        lo = q * COLUMN_RUN
        _rmatvec_run(tile, r, out, lo, min(lo + COLUMN_RUN, G))
    return out


@njit(cache=True, nogil=True)
def tile_rmatvec_hess_acc(tile, r, s, out_r, out_s):
    """``out_r[k] += Σ_i tile[i, k] r[i]`` and ``out_s[k] += Σ_i tile[i, k]² s[i]``
    in one pass (rows in order from the entries' values).

    Parameters
    ----------
    tile : float64 array, shape (R, G)
    r, s : float64 arrays, shape (R,)
    out_r, out_s : float64 arrays, shape (G,)
        Updated in place.
    """
    _rmatvec_hess_run(tile, r, s, out_r, out_s, 0, tile.shape[1])
    return out_r, out_s


@njit(cache=True, nogil=True, parallel=True)
def tile_rmatvec_hess_acc_parallel(tile, r, s, out_r, out_s):
    """:func:`tile_rmatvec_hess_acc`, runs of columns split between threads."""
    G = tile.shape[1]
    for q in prange((G + COLUMN_RUN - 1) // COLUMN_RUN):
        lo = q * COLUMN_RUN
        _rmatvec_hess_run(tile, r, s, out_r, out_s, lo, min(lo + COLUMN_RUN, G))
    return out_r, out_s


# ------------------------------------------- a basis held in memory (F order)
@njit(cache=True, nogil=True)
def _columns_matvec_run(A, cols, coef, out, lo, hi):
    for q in range(len(cols)):
        c = cols[q]
        v = coef[q]
        for i in range(lo, hi):
            out[i] += A[i, c] * v


@njit(cache=True, nogil=True)
def columns_matvec_acc(A, cols, coef, out):
    """``out[i] += Σ_q A[i, cols[q]] coef[q]``, ``q`` in order from ``out[i]``.

    The columns of a Fortran-ordered matrix are contiguous, so the loop
    over rows vectorises and a sparse ``w`` costs only its nonzero
    columns.  Each ``out[i]`` adds the same terms in the same order as
    :func:`tile_matvec_acc` over tiles made of the columns ``cols``.

    Parameters
    ----------
    A : float64 array, shape (N, M), Fortran-ordered
    cols : int64 array, shape (p,)
        Increasing column numbers.
    coef : float64 array, shape (p,)
    out : float64 array, shape (N,)
        Updated in place.
    """
    _columns_matvec_run(A, cols, coef, out, 0, A.shape[0])
    return out


@njit(cache=True, nogil=True, parallel=True)
def columns_matvec_acc_parallel(A, cols, coef, out):
    """:func:`columns_matvec_acc`, runs of :data:`ROW_RUN` rows split
    between threads (same bytes)."""
    N = A.shape[0]
    for q in prange((N + ROW_RUN - 1) // ROW_RUN):
        lo = q * ROW_RUN
        _columns_matvec_run(A, cols, coef, out, lo, min(lo + ROW_RUN, N))
    return out
