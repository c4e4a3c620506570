"""Kernels of the proximal Newton solver of the FGM subproblem.

(See :mod:`ultrafs.solvers.prox_newton` for the method.)

``csr_augmented_gram(indptr, indices, data, weights, out)``
    the Hessian ``X~' diag(weights) X~`` of the smooth part over ``(w, b)``
    jointly, ``X~ = [X, -1]``, from the CSR arrays of ``X`` in
    ``O(sum_i nnz_i^2)`` (``nnz_i`` the stored entries of row ``i``); rows
    of weight 0 (inactive squared-hinge samples) cost nothing.
    ``csr_augmented_gram_parallel(indptr, indices, data, weights, bounds, out)``
    is its twin over threads, each owning a range of the Gram's rows
    (``gram_row_bounds(gram_row_work(...), T)``): the same bytes for any
    ranges and threads.  ``csr_constant_gram(indptr, indices, weights,
    scale, out)`` (and its twin) is the same Hessian of a matrix with one
    value per column (``sparse_ops.column_values``), from the pattern alone.

``l21sq_model_bcd(H, g, coef, bias, block_ptr, fit_intercept, tol, max_sweeps, z, c, *ws)``
    block coordinate descent on the proximal Newton model of the
    l2,1-squared penalty::

        min_{z, c}  g' d + 1/2 d' H d + 1/2 (sum_h ||z_h||)^2,
        d = (z - coef, c - bias),

    where each block update minimises the model exactly over ``z_h`` and
    the unpenalised ``c`` together (``c`` is eliminated by its Schur
    complement).  With the other blocks fixed the penalty is
    ``1/2 ||z_h||^2 + lam ||z_h|| + const``, ``lam = sum_{g != h} ||z_g||``,
    so the block problem is ``min_u 1/2 u' (A + I) u + q' u + lam ||u||``
    with ``A`` the block's Schur complement (positive semi-definite): its
    solution is ``u = 0`` when ``||q|| <= lam`` and otherwise
    ``u = -(A + (1 + lam / ||u||) I)^{-1} q``, found from the eigenvalues
    of ``A`` by a monotone Newton iteration on a convex scalar equation (as
    in trust-region subproblems).  Block conditioning therefore costs
    nothing: a block whose columns differ in scale by 1e4 is solved exactly.

``l21sq_model_polish(H, g, coef, bias, block_ptr, fit_intercept, z, c)``
    a Newton step on the model restricted to its nonzero blocks, where it is
    smooth: what coordinate descent needs when columns of different blocks
    are collinear (one-hot groups split over FGM's batches).

``eigen_workspace(block_ptr)``, ``l21sq_model_residual(...)``
    the storage of the blocks' eigen-decompositions, and the model's
    relative KKT residual (the measure both model solvers stop on).

K outputs per sample (multi-class): ``csr_multi_gram(indptr, indices, data,
colval, a, u, K, out)`` builds ``sum_i ([x_i, -1]' [x_i, -1]) kron (diag(a_i)
- u_i u_i')`` (coefficient ``(j, k)`` at ``j K + k``, the K intercepts
last); ``l21sq_model_bcd_k``, ``l21sq_model_polish_k`` and
``l21sq_model_residual_k`` are the model's solvers above with ``nb``
intercepts, eliminated through ``bias_pseudo_inverse(H, p, fit_intercept)``
(the pseudo-inverse of their block: the multinomial one is singular along
``(1, ..., 1)``).

Labels, losses and C enter only through ``weights``, ``H`` and ``g``.
Matrix-vector products are plain loops: a threaded BLAS call per block
update costs more than the product (and far more when another process
holds a core); LAPACK is called once per block and Newton step
(``eigh``) or per model Newton step (``solve``).
"""

import math

import numpy as np
from numba import njit, prange

from .sparse_ops import count_range_rows, fill_range_rows
from .spans import first_at_least

__all__ = ["csr_augmented_gram", "csr_augmented_gram_parallel", "csr_constant_gram",
           "csr_constant_gram_parallel", "csc_augmented_gram",
           "csc_augmented_gram_parallel", "csc_gram_work", "gram_row_work",
           "gram_row_bounds", "eigen_workspace", "l21sq_model_bcd",
           "l21sq_model_polish", "l21sq_model_residual", "csr_multi_gram",
           "bias_pseudo_inverse", "l21sq_model_bcd_k", "l21sq_model_polish_k",
           "l21sq_model_residual_k"]

# Newton iterations on the scalar equation of one block (it converges
# monotonically and quadratically; 100 is never reached in practice).
_MAX_SECULAR_ITER = 100
# Sweeps over which the model's residual must fall at all (else: stalled).
_STALL_SWEEPS = 50


@njit(cache=True, nogil=True)
def _fold(out):
    """Add the Gram's two triangles into both (the kernels' last step)."""
    size = out.shape[0]
    for j in range(size):
        for k in range(j + 1, size):
            v = out[j, k] + out[k, j]
            out[j, k] = v
            out[k, j] = v


@njit(cache=True, nogil=True)
def csr_augmented_gram(indptr, indices, data, weights, out):
    """Write ``[X, -1]' diag(weights) [X, -1]`` into ``out``; return it.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSR arrays of ``X`` (n x p); ``data`` float32 or float64; duplicate
        entries of a row are summed.
    weights : ndarray of float64, shape (n,)
    out : ndarray of float64, shape (p + 1, p + 1)
        Overwritten; index ``p`` is the intercept (column ``-1``).

    Returns
    -------
    ndarray of float64, shape (p + 1, p + 1), symmetric
    """
    size = out.shape[0]
    p = size - 1
    out[:, :] = 0.0
    for i in range(len(indptr) - 1):
        wi = weights[i]
        if wi == 0.0:
            continue
        start, end = indptr[i], indptr[i + 1]
        for a in range(start, end):
            ja = indices[a]
            va = wi * data[a]
            out[ja, p] -= va
            out[ja, ja] += va * data[a]
            for b in range(a + 1, end):
                # each unordered pair once; the mirror is added below
                jb = indices[b]
                if jb == ja:  # a duplicate entry: its pair lands on the diagonal
                    out[ja, ja] += 2.0 * va * data[b]
                else:
                    out[ja, jb] += va * data[b]
        out[p, p] += wi
    _fold(out)
    return out


@njit(cache=True, nogil=True)
def _gram_rows(indptr, indices, data, weights, lo, hi, out):
    """Rows ``lo:hi`` of :func:`csr_augmented_gram` before its final fold.

    ``out[j, :]`` for ``lo <= j < hi`` (and ``out[p, p]`` if ``p`` is in the
    range) gets, row by row of ``X``, exactly the additions the serial
    kernel makes to it, in the same order.  Row indices must increase (not
    strictly) within each CSR row, so a row's entries of columns ``lo:hi``
    are contiguous: found by bisection.
    """
    for j in range(lo, hi):
        out[j, :] = 0.0
    _add_gram_rows(indptr, indices, data, weights, 0, lo, hi, out)


@njit(cache=True, nogil=True)
def _add_gram_rows(indptr, indices, data, weights, w_off, lo, hi, out):
    """Add the CSR rows' terms to rows ``lo:hi`` of the Gram (see :func:`_gram_rows`).

    CSR row ``i`` has weight ``weights[w_off + i]`` (a window of rows)."""
    size = out.shape[0]
    p = size - 1
    for i in range(len(indptr) - 1):
        wi = weights[w_off + i]
        if wi == 0.0:
            continue
        start, end = indptr[i], indptr[i + 1]
        first = first_at_least(indices, start, end, lo)
        for a in range(first, end):
            ja = indices[a]
            if ja >= hi:
                break
            va = wi * data[a]
            out[ja, p] -= va
            out[ja, ja] += va * data[a]
            for b in range(a + 1, end):
                jb = indices[b]
                if jb == ja:  # a duplicate entry: its pair lands on the diagonal
                    out[ja, ja] += 2.0 * va * data[b]
                else:
                    out[ja, jb] += va * data[b]
        if lo <= p < hi:
            out[p, p] += wi


@njit(cache=True, nogil=True, parallel=True)
def csr_augmented_gram_parallel(indptr, indices, data, weights, bounds, out):
    """:func:`csr_augmented_gram` over threads: the same bytes, for sorted rows.

    Each thread owns a range of the Gram's rows, ``bounds[r]:bounds[r + 1]``
    (:func:`gram_row_bounds`), and makes, for every row of ``X`` in order,
    the additions the serial kernel makes to them: no partial matrices, no
    reduction, and results that depend neither on ``bounds`` nor on the
    threads.  Each thread reads all of ``X``'s rows (a bisection per row),
    so the ranges are best balanced by the pairs they own.

    Parameters
    ----------
    indptr, indices, data, weights, out
        As in :func:`csr_augmented_gram`; the column indices must not
        decrease within a CSR row (as scipy's ``tocsr`` and
        :func:`ultrafs.kernels.sparse_ops.csc_to_csr_parallel` give them).
    bounds : ndarray of int64, shape (T + 1,)
        ``0 = bounds[0] <= ... <= bounds[T] = p + 1``.

    Returns
    -------
    ndarray of float64, shape (p + 1, p + 1), symmetric
    """
    size = out.shape[0]
    for r in prange(len(bounds) - 1):
        _gram_rows(indptr, indices, data, weights, bounds[r], bounds[r + 1], out)
    for j in prange(size):
        for k in range(j + 1, size):
            v = out[j, k] + out[k, j]
            out[j, k] = v
            out[k, j] = v
    return out


@njit(cache=True, nogil=True)
def _pattern_gram_rows(indptr, indices, weights, lo, hi, out):
    """:func:`_gram_rows` of the pattern of ``X`` (every entry 1)."""
    for j in range(lo, hi):
        out[j, :] = 0.0
    _add_pattern_gram_rows(indptr, indices, weights, 0, lo, hi, out)


@njit(cache=True, nogil=True)
def _add_pattern_gram_rows(indptr, indices, weights, w_off, lo, hi, out):
    """:func:`_add_gram_rows` of the pattern of ``X`` (every entry 1)."""
    size = out.shape[0]
    p = size - 1
    for i in range(len(indptr) - 1):
        wi = weights[w_off + i]
        if wi == 0.0:
            continue
        start, end = indptr[i], indptr[i + 1]
        first = first_at_least(indices, start, end, lo)
        for a in range(first, end):
            ja = indices[a]
            if ja >= hi:
                break
            out[ja, p] -= wi
            out[ja, ja] += wi
            for b in range(a + 1, end):
                jb = indices[b]
                if jb == ja:  # a duplicate entry: its pair lands on the diagonal
                    out[ja, ja] += 2.0 * wi
                else:
                    out[ja, jb] += wi
        if lo <= p < hi:
            out[p, p] += wi


@njit(cache=True, nogil=True)
def _fold_scaled(out, scale, j):
    """Row ``j`` of the final fold of the pattern Gram, scaled by ``scale_j scale_k``."""
    size = out.shape[0]
    out[j, j] = out[j, j] * (scale[j] * scale[j])
    for k in range(j + 1, size):
        v = (out[j, k] + out[k, j]) * (scale[j] * scale[k])
        out[j, k] = v
        out[k, j] = v


@njit(cache=True, nogil=True)
def csr_constant_gram(indptr, indices, weights, scale, out):
    """:func:`csr_augmented_gram` of a matrix whose column ``j`` holds only ``scale[j]``.

    ``X = P diag(c)`` for its pattern ``P``: the Gram of ``[P, -1]`` is
    accumulated without reading values or multiplying (the degree-2
    features of binary data have one value per column), then scaled:
    entry ``(j, k)`` is ``(sum of weights) * (c_j c_k)``.  Its rounding
    therefore differs from :func:`csr_augmented_gram`'s.

    Parameters
    ----------
    indptr, indices : ndarray
        CSR pattern of ``X`` (column indices not decreasing within a row).
    weights : ndarray of float64, shape (n,)
    scale : ndarray of float64, shape (p + 1,)
        ``c`` and, last, 1.0 (the intercept's column of -1).
    out : ndarray of float64, shape (p + 1, p + 1)

    Returns
    -------
    ndarray of float64, shape (p + 1, p + 1), symmetric
    """
    size = out.shape[0]
    _pattern_gram_rows(indptr, indices, weights, 0, size, out)
    for j in range(size):
        _fold_scaled(out, scale, j)
    return out


@njit(cache=True, nogil=True, parallel=True)
def csr_constant_gram_parallel(indptr, indices, weights, scale, bounds, out):
    """:func:`csr_constant_gram` over ranges of the Gram's rows (the same bytes)."""
    size = out.shape[0]
    for r in prange(len(bounds) - 1):
        _pattern_gram_rows(indptr, indices, weights, bounds[r], bounds[r + 1], out)
    for j in prange(size):
        _fold_scaled(out, scale, np.int64(j))   # int64 like the serial call: one compile
    return out


@njit(cache=True, nogil=True)
def window_buffers(data, starts, bounds, window):
    """Buffers of :func:`csc_augmented_gram` for windows of ``window`` ranges.

    Sized for the largest window (its rows and entries), so that the
    windows of a Gram, and the Grams of the same columns, reuse them: a
    fresh array per window is a fresh mapping whose page faults cost more
    than filling it (kddb-like, 10^6 rows: two thirds of a run's faults).

    Returns
    -------
    buffers : tuple
        Pass it to :func:`csc_augmented_gram` (or its parallel twin) with
        the same ``starts``, ``bounds`` and ``window``.
    """
    R = len(bounds) - 1
    max_rows = 0
    max_entries = 0
    for w0 in range(0, R, window):
        w1 = min(R, w0 + window)
        max_rows = max(max_rows, bounds[w1] - bounds[w0])
        entries = 0
        for j in range(starts.shape[0]):
            entries += starts[j, w1] - starts[j, w0]
        max_entries = max(max_entries, entries)
    counts = np.empty(max_rows + 1, dtype=np.int64)
    cursors = np.empty(max_rows, dtype=np.int64)
    out_idx = np.empty(max_entries, dtype=np.int32)
    out_val = np.empty(max_entries if data.shape[0] > 0 else 0, dtype=data.dtype)
    return counts, cursors, out_idx, out_val


@njit(cache=True, nogil=True)
def _pointers_and_cursors(counts, cursors, n_rows):
    """Per-row counts (at ``counts[1:n_rows + 1]``) into CSR pointers, in
    place, and the fill cursors into ``cursors``; returns the entries."""
    for i in range(n_rows):
        counts[i + 1] += counts[i]
    for i in range(n_rows):     # a loop: a slice copy costs ~2 s of compilation
        cursors[i] = counts[i]
    return counts[n_rows]


@njit(cache=True, nogil=True)
def _window_csr(indices, data, starts, bounds, w0, w1, buffers):
    """CSR arrays of the rows of ranges ``w0:w1`` (serial), in ``buffers``
    (:func:`window_buffers`): views valid until the next window."""
    counts, cursors, out_idx, out_val = buffers
    row0 = bounds[w0]
    n_rows = bounds[w1] - row0
    counts[:n_rows + 1] = 0
    for r in range(w0, w1):
        count_range_rows(indices, starts, r, counts[1:n_rows + 1], row0)
    nnz = _pointers_and_cursors(counts, cursors, n_rows)
    for r in range(w0, w1):
        fill_range_rows(indices, data, starts, r, cursors, out_idx, out_val, row0)
    return counts[:n_rows + 1], out_idx[:nnz], out_val[:nnz if data.shape[0] > 0 else 0]


@njit(cache=True, nogil=True, parallel=True)
def _window_csr_parallel(indices, data, starts, bounds, w0, w1, buffers):
    """:func:`_window_csr` over the ranges (disjoint rows: the same arrays)."""
    counts, cursors, out_idx, out_val = buffers
    row0 = bounds[w0]
    n_rows = bounds[w1] - row0
    counts[:n_rows + 1] = 0
    for r in prange(w0, w1):
        count_range_rows(indices, starts, r, counts[1:n_rows + 1], row0)
    nnz = _pointers_and_cursors(counts, cursors, n_rows)
    for r in prange(w0, w1):
        fill_range_rows(indices, data, starts, r, cursors, out_idx, out_val, row0)
    return counts[:n_rows + 1], out_idx[:nnz], out_val[:nnz if data.shape[0] > 0 else 0]


@njit(cache=True, nogil=True)
def csc_augmented_gram(indices, data, weights, scale, starts, bounds, window, buffers,
                       out):
    """:func:`csr_augmented_gram` (or, with ``scale``, :func:`csr_constant_gram`)
    from CSC arrays, without a CSR copy of ``X``: the same bytes.

    The rows are taken ``window`` ranges at a time (``bounds``, with the
    columns' entry positions ``starts`` of
    :func:`ultrafs.kernels.sparse_ops.csc_row_range_starts`); each window is
    turned into CSR (its rows' entries in column order) and its rows' terms
    added, windows in increasing row order: every entry of the Gram gets the
    serial kernel's additions in its order.  Extra memory: one window.

    Parameters
    ----------
    indices : int32 array
        CSC row numbers of ``X`` (n x p), increasing within each column.
    data : float32 or float64 array
        Values; empty with ``scale`` (the pattern's Gram, then scaled).
    weights : float64 array, shape (n,)
    scale : float64 array, shape (p + 1,) or (0,)
        Each column's one value and, last, 1.0; empty for a value per entry.
    starts, bounds : int64 arrays, shapes (p, R + 1) and (R + 1,)
    window : int >= 1
        Ranges per window.
    buffers : tuple
        :func:`window_buffers` of these ``data``, ``starts``, ``bounds`` and
        ``window`` (overwritten).
    out : float64 array, shape (p + 1, p + 1)
        Overwritten.
    """
    size = out.shape[0]
    out[:, :] = 0.0
    R = len(bounds) - 1
    pattern = scale.shape[0] > 0
    for w0 in range(0, R, window):
        w1 = min(R, w0 + window)
        row_ptr, cols, vals = _window_csr(indices, data, starts, bounds, w0, w1, buffers)
        if pattern:
            _add_pattern_gram_rows(row_ptr, cols, weights, bounds[w0], 0, size, out)
        else:
            _add_gram_rows(row_ptr, cols, vals, weights, bounds[w0], 0, size, out)
    if pattern:
        for j in range(size):
            _fold_scaled(out, scale, j)
    else:
        _fold(out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def csc_augmented_gram_parallel(indices, data, weights, scale, starts, bounds, window,
                                buffers, gram_bounds, out):
    """:func:`csc_augmented_gram` over threads (the same bytes).

    Each window's CSR copy is built over its ranges of rows, then each
    thread adds the window's terms to its own range of the Gram's rows,
    ``gram_bounds[t]:gram_bounds[t + 1]`` (:func:`gram_row_bounds`): no
    partial matrices, no reduction, results independent of the threads.
    """
    size = out.shape[0]
    out[:, :] = 0.0
    R = len(bounds) - 1
    pattern = scale.shape[0] > 0
    T = len(gram_bounds) - 1
    for w0 in range(0, R, window):
        w1 = min(R, w0 + window)
        row_ptr, cols, vals = _window_csr_parallel(indices, data, starts, bounds, w0, w1,
                                                   buffers)
        row0 = bounds[w0]
        for t in prange(T):
            if pattern:
                _add_pattern_gram_rows(row_ptr, cols, weights, row0, gram_bounds[t],
                                       gram_bounds[t + 1], out)
            else:
                _add_gram_rows(row_ptr, cols, vals, weights, row0, gram_bounds[t],
                               gram_bounds[t + 1], out)
    for j in prange(size):
        if pattern:
            _fold_scaled(out, scale, np.int64(j))
        else:
            for k in range(j + 1, size):
                v = out[j, k] + out[k, j]
                out[j, k] = v
                out[k, j] = v
    return out


def csc_gram_work(indptr, n_rows):
    """An estimate of :func:`gram_row_work` from the columns' entry counts.

    Column ``j``'s entries meet, per row, about ``sum_{k > j} nnz_k / n``
    later entries; the intercept's row one addition per row.  Only the
    balance of the threads depends on it, never a result.
    """
    nnz = np.diff(np.asarray(indptr, dtype=np.int64)).astype(np.float64)
    later = np.cumsum(nnz[::-1])[::-1] - nnz
    work = nnz * (1.0 + later / max(int(n_rows), 1)) + 1.0
    return np.append(work, float(n_rows) + 1.0).astype(np.int64)


@njit(cache=True, nogil=True)
def gram_row_work(indptr, indices, size):
    """The additions of :func:`csr_augmented_gram` per row of the Gram (+1 each).

    Parameters
    ----------
    indptr, indices : ndarray
        CSR pattern of ``X`` (n x p).
    size : int
        ``p + 1``.

    Returns
    -------
    ndarray of int64, shape (p + 1,)
        Row ``p`` (the intercept) counts one per row of ``X``.
    """
    work = np.zeros(size, dtype=np.int64)
    for i in range(len(indptr) - 1):
        end = indptr[i + 1]
        for a in range(indptr[i], end):
            work[indices[a]] += end - a + 1
        work[size - 1] += 1
    return work


def gram_row_bounds(work, parts):
    """Split the Gram's rows into ``parts`` ranges of about equal ``work``.

    Parameters
    ----------
    work : ndarray of int64, shape (p + 1,)
        :func:`gram_row_work`.
    parts : int

    Returns
    -------
    ndarray of int64, shape (parts + 1,)
    """
    size = len(work)
    total = np.cumsum(work, dtype=np.float64)
    if size == 0 or parts <= 1 or total[-1] <= 0:
        return np.array([0, size], dtype=np.int64)
    cuts = np.searchsorted(total, total[-1] * np.arange(1, parts) / parts)
    return np.concatenate([[0], np.minimum(cuts, size), [size]]).astype(np.int64)


@njit(cache=True, nogil=True)
def _block_schur(H, lo, hi, p, beta):
    """The block ``H[lo:hi, lo:hi]`` minus ``e e' / beta`` (``e = H[lo:hi, p]``)."""
    m = hi - lo
    A = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            A[i, j] = H[lo + i, lo + j]
    if beta > 0.0:
        for i in range(m):
            ei = H[lo + i, p] / beta
            for j in range(m):
                A[i, j] -= ei * H[lo + j, p]
    return A


@njit(cache=True, nogil=True)
def _secular_solve(qhat, evals, lam):
    """Return ``uhat = -qhat x / (a x + 1)``, ``a = evals + 1``, with ``x`` the root.

    ``x = ||u|| / lam`` solves ``G(x) = lam`` for the convex, decreasing
    ``G(x) = ||qhat / (a x + 1)||`` (``G(0) = ||qhat|| > lam``); Newton's
    method started left of the root stays left of it and converges
    monotonically.
    """
    m = len(qhat)
    a = np.empty(m)
    amax = 1.0
    nq2 = 0.0
    for i in range(m):
        ev = evals[i] if evals[i] > 0.0 else 0.0
        a[i] = ev + 1.0
        if a[i] > amax:
            amax = a[i]
        nq2 += qhat[i] * qhat[i]
    nq = math.sqrt(nq2)
    # G(x) >= nq / (amax x + 1): a point left of the root
    x = (nq - lam) / (lam * amax)
    for _ in range(_MAX_SECULAR_ITER):
        G2 = 0.0
        dG = 0.0
        for i in range(m):
            r = 1.0 / (a[i] * x + 1.0)
            t = qhat[i] * qhat[i] * r * r
            G2 += t
            dG -= t * a[i] * r
        G = math.sqrt(G2)
        if G <= lam * (1.0 + 1e-15):
            break
        dG /= G
        step = (lam - G) / dG
        x += step
        if step <= 1e-15 * x:
            break
    out = np.empty(m)
    for i in range(m):
        out[i] = -qhat[i] * x / (a[i] * x + 1.0)
    return out



@njit(cache=True, nogil=True)
def _keep_eigen(A, vals, vecs, offsets, h, lo):
    """Keep block ``h``'s eigen-decomposition of ``A`` (m x m, symmetric):
    its eigenvalues at ``vals[lo:lo + m]``, its eigenvectors (row-major) at
    ``vecs[offsets[h]:offsets[h + 1]]``."""
    ev, Q = np.linalg.eigh(A)
    for i in range(ev.shape[0]):   # loops, not slice copies (compile time)
        vals[lo + i] = ev[i]
    flat = Q.ravel()
    for i in range(flat.shape[0]):
        vecs[offsets[h] + i] = flat[i]


@njit(cache=True, nogil=True)
def _eigen_block_step(vals, vecs, offsets, h, lo, hi, q, lam):
    """The minimiser ``u`` of ``q'u + u'Au/2 + |u|^2/2 + lam |u|`` for block
    ``h`` through the kept eigen-decomposition of ``A`` (:func:`_keep_eigen`):
    a scaled solve for ``lam = 0``, the secular equation otherwise."""
    m = hi - lo
    Q = vecs[offsets[h]:offsets[h + 1]].reshape((m, m))
    qhat = np.zeros(m)
    for k in range(m):
        for i in range(m):
            qhat[i] += Q[k, i] * q[k]
    if lam == 0.0:
        uhat = np.empty(m)
        for i in range(m):
            ev = vals[lo + i] if vals[lo + i] > 0.0 else 0.0
            uhat[i] = -qhat[i] / (ev + 1.0)
    else:
        uhat = _secular_solve(qhat, vals[lo:hi], lam)
    u = np.zeros(m)
    for k in range(m):
        for i in range(m):
            u[k] += Q[k, i] * uhat[i]
    return u

@njit(cache=True, nogil=True)
def _model_kkt(r, z, norms, block_ptr, p, use_bias):
    """Relative KKT residual of the model at ``z`` (gradient ``r`` of its smooth part).

    The same measure as the solvers' certificate: the largest distance
    from ``-r_h`` to the subdifferential of the penalty (and ``|r_b|``),
    over the largest block norm of ``r``.
    """
    total = 0.0
    for h in range(len(norms)):
        total += norms[h]
    dist = 0.0
    scale = 0.0
    for h in range(len(norms)):
        lo, hi = block_ptr[h], block_ptr[h + 1]
        rn = 0.0
        dn = 0.0
        for j in range(lo, hi):
            rn += r[j] * r[j]
            if norms[h] > 0.0:
                v = r[j] + total * z[j] / norms[h]
                dn += v * v
        rn = math.sqrt(rn)
        if rn > scale:
            scale = rn
        d = math.sqrt(dn) if norms[h] > 0.0 else max(0.0, rn - total)
        if d > dist:
            dist = d
    if use_bias and abs(r[p]) > dist:
        dist = abs(r[p])
    if scale == 0.0:
        return 0.0 if dist == 0.0 else math.inf
    return dist / scale


@njit(cache=True, nogil=True)
def _use_bias(H, p, fit_intercept):
    """Whether the intercept moves: fitted and with curvature."""
    beta = H[p, p]
    return fit_intercept and beta > 1e-300 and math.isfinite(beta)


@njit(cache=True, nogil=True)
def _model_gradient(H, g, coef, bias, z, c, use_bias):
    """``r = g + H d`` with ``d = (z - coef, c - bias)`` (``d_b = 0`` if fixed)."""
    p = len(coef)
    d = np.empty(p + 1)
    for j in range(p):
        d[j] = z[j] - coef[j]
    d[p] = c - bias if use_bias else 0.0
    r = g.copy()
    for k in range(p + 1):  # rows of the symmetric H: contiguous, no BLAS call
        if d[k] != 0.0:
            for i in range(p + 1):
                r[i] += H[k, i] * d[k]
    return r


@njit(cache=True, nogil=True)
def _block_norms(z, block_ptr):
    t = len(block_ptr) - 1
    norms = np.empty(t)
    for h in range(t):
        acc = 0.0
        for j in range(block_ptr[h], block_ptr[h + 1]):
            acc += z[j] * z[j]
        norms[h] = math.sqrt(acc)
    return norms


@njit(cache=True, nogil=True)
def l21sq_model_residual(H, g, coef, bias, block_ptr, fit_intercept, z, c):
    """Relative KKT residual of the model at ``(z, c)`` (see :func:`l21sq_model_bcd`)."""
    p = len(coef)
    use_bias = _use_bias(H, p, fit_intercept)
    r = _model_gradient(H, g, coef, bias, z, c, use_bias)
    return _model_kkt(r, z, _block_norms(z, block_ptr), block_ptr, p, use_bias)


@njit(cache=True, nogil=True)
def eigen_workspace(block_ptr):
    """Storage for the blocks' eigen-decompositions, filled on demand.

    Returns ``(vectors, values, done)``: pass them to every
    :func:`l21sq_model_bcd` call on the same ``H`` (an ``H`` changes: new
    workspace).
    """
    t = len(block_ptr) - 1
    return (np.empty(_eigen_offsets(block_ptr)[t]), np.empty(block_ptr[t]),
            np.zeros(t, dtype=np.bool_))


@njit(cache=True, nogil=True)
def _eigen_offsets(block_ptr):
    """Where block ``h``'s eigenvectors start in the workspace's ``vectors``
    (``offsets[h]``; ``offsets[t]``: its size): blocks of ``m * m`` floats."""
    t = len(block_ptr) - 1
    offsets = np.zeros(t + 1, dtype=np.int64)
    for h in range(t):
        m = block_ptr[h + 1] - block_ptr[h]
        offsets[h + 1] = offsets[h] + m * m
    return offsets


@njit(cache=True, nogil=True)
def l21sq_model_bcd(H, g, coef, bias, block_ptr, fit_intercept, tol, max_sweeps, z, c,
                    vecs, vals, have):
    """Minimise the proximal Newton model by block coordinate descent.

    Parameters
    ----------
    H : ndarray of float64, shape (p + 1, p + 1)
        Hessian of the smooth part over ``(w, b)`` (index ``p``: ``b``).
    g : ndarray of float64, shape (p + 1,)
        Its gradient at ``(coef, bias)``.
    coef : ndarray of float64, shape (p,)
    bias : float
    block_ptr : ndarray of int64, shape (t + 1,)
    fit_intercept : bool
        Whether ``c`` moves (it stays at ``bias`` otherwise).
    tol : float
        Stop when the model's relative KKT residual is at most ``tol``, when
        a sweep leaves every coordinate unchanged, or when 50 sweeps reduce
        the residual by less than 0.1% (stalled in rounding).
    max_sweeps : int
    z : ndarray of float64, shape (p,)
        The starting point, overwritten with the point reached.
    c : float
        The intercept's starting point.
    vecs, vals, have
        :func:`eigen_workspace` of ``block_ptr`` for this ``H``.

    Returns
    -------
    c : float
    sweeps : int
    residual : float
        The model's relative KKT residual at the returned point.
    """
    p = len(coef)
    t = len(block_ptr) - 1
    use_bias = _use_bias(H, p, fit_intercept)
    beta = H[p, p] if use_bias else 0.0
    if not use_bias:
        c = bias
    r = _model_gradient(H, g, coef, bias, z, c, use_bias)
    norms = _block_norms(z, block_ptr)
    offsets = _eigen_offsets(block_ptr)
    residual = _model_kkt(r, z, norms, block_ptr, p, use_bias)
    checkpoint = residual
    sweeps = 0
    while residual > tol and sweeps < max_sweeps:
        sweeps += 1
        moved = False
        total = 0.0
        for h in range(t):
            total += norms[h]
        for h in range(t):
            lo, hi = block_ptr[h], block_ptr[h + 1]
            m = hi - lo
            if m == 0:
                continue
            lam = total - norms[h]
            if lam < 0.0:
                lam = 0.0
            # q = linear term of the block problem in u = z_h (c eliminated)
            rb = r[p] / beta if use_bias else 0.0
            ez = 0.0
            if use_bias:
                for k in range(m):
                    ez += H[lo + k, p] * z[lo + k]
                ez /= beta
            q = np.empty(m)
            nq2 = 0.0
            for i in range(m):
                acc = r[lo + i]
                row = lo + i
                for k in range(m):
                    acc -= H[row, lo + k] * z[lo + k]
                if use_bias:
                    acc += H[row, p] * (ez - rb)
                q[i] = acc
                nq2 += acc * acc
            nq = math.sqrt(nq2)
            if nq <= lam:
                u = np.zeros(m)
            elif lam == 0.0 and not have[h]:
                A = _block_schur(H, lo, hi, p, beta)
                for i in range(m):
                    A[i, i] += 1.0
                u = -np.linalg.solve(A, q)
            else:
                if not have[h]:
                    A = _block_schur(H, lo, hi, p, beta)
                    _keep_eigen(A, vals, vecs, offsets, h, lo)
                    have[h] = True
                u = _eigen_block_step(vals, vecs, offsets, h, lo, hi, q, lam)
            for k in range(m):
                # a coordinate without curvature (an empty column) has a zero
                # row in H and in g: the block problem decouples it and its
                # minimiser is exactly 0, which the eigenvectors only round to
                if H[lo + k, lo + k] == 0.0:
                    u[k] = 0.0
            # the intercept's exact minimiser given the new block
            dc = 0.0
            if use_bias:
                acc = r[p]
                for k in range(m):
                    acc += H[lo + k, p] * (u[k] - z[lo + k])
                dc = -acc / beta
            nu = 0.0
            for k in range(m):
                du = u[k] - z[lo + k]
                if du != 0.0:
                    moved = True
                    row = lo + k
                    for i in range(p + 1):
                        r[i] += H[row, i] * du
                z[lo + k] = u[k]
                nu += u[k] * u[k]
            if dc != 0.0:
                for i in range(p + 1):
                    r[i] += H[p, i] * dc
                moved = moved or c + dc != c
                c += dc
            nu = math.sqrt(nu)
            total += nu - norms[h]
            norms[h] = nu
        if use_bias:
            # the intercept alone (it moves with every block; this also covers
            # p = 0 and blocks of no column)
            dc = -r[p] / beta
            if c + dc != c:
                moved = True
                for i in range(p + 1):
                    r[i] += H[p, i] * dc
                c += dc
        residual = _model_kkt(r, z, norms, block_ptr, p, use_bias)
        if not moved:  # a fixed point in floating point: nothing left to gain
            break
        if sweeps % _STALL_SWEEPS == 0:
            # stalled at the resolution of float64 (e.g. a column 1e4 times
            # larger than the others with a large C puts 1e16 next to 1 in
            # H): the point reached is still a descent direction.  Slow but
            # steady progress (collinear columns in different blocks, as
            # one-hot groups split by FGM) goes on.
            if residual > 0.999 * checkpoint:
                break
            checkpoint = residual
    return c, sweeps, residual


@njit(cache=True, nogil=True)
def l21sq_model_polish(H, g, coef, bias, block_ptr, fit_intercept, z, c):
    """One Newton step on the model restricted to its nonzero blocks.

    Where every block of ``z`` is nonzero or fixed at zero the model is
    smooth: with ``S = sum_h ||z_h||`` and ``n_h = z_h / ||z_h||`` its
    gradient is ``r_h + S n_h`` (and ``r_b``) and its Hessian ``H + n n' +
    S blockdiag((I - n_h n_h') / ||z_h||)``.  A Newton step there converges
    where coordinate descent crawls (collinear columns in different blocks,
    such as one-hot groups FGM split over its batches, with the intercept).
    The step is halved until the model's relative KKT residual falls; ``z``
    is overwritten only then.

    Returns
    -------
    c : float
    residual : float
        The residual at the returned point.
    """
    p = len(coef)
    t = len(block_ptr) - 1
    use_bias = _use_bias(H, p, fit_intercept)
    r = _model_gradient(H, g, coef, bias, z, c, use_bias)
    norms = _block_norms(z, block_ptr)
    start = _model_kkt(r, z, norms, block_ptr, p, use_bias)
    total = 0.0
    m = 0
    for h in range(t):
        total += norms[h]
        if norms[h] > 0.0:
            m += block_ptr[h + 1] - block_ptr[h]
    if m == 0:
        return c, start
    idx = np.empty(m, dtype=np.int64)
    blk = np.empty(m, dtype=np.int64)
    a = 0
    for h in range(t):
        if norms[h] > 0.0:
            for j in range(block_ptr[h], block_ptr[h + 1]):
                idx[a] = j
                blk[a] = h
                a += 1
    size = m + 1 if use_bias else m
    K = np.empty((size, size))
    rhs = np.empty(size)
    unit = np.empty(m)
    for a in range(m):
        unit[a] = z[idx[a]] / norms[blk[a]]
    biggest = 0.0
    for a in range(m):
        for b in range(m):
            v = H[idx[a], idx[b]] + unit[a] * unit[b]
            if blk[a] == blk[b]:
                v += total / norms[blk[a]] * ((1.0 if a == b else 0.0) - unit[a] * unit[b])
            K[a, b] = v
        if use_bias:
            K[a, m] = H[idx[a], p]
            K[m, a] = H[idx[a], p]
        rhs[a] = -(r[idx[a]] + total * unit[a])
        if K[a, a] > biggest:
            biggest = K[a, a]
    if use_bias:
        K[m, m] = H[p, p]
        rhs[m] = -r[p]
        if K[m, m] > biggest:
            biggest = K[m, m]
    # positive semi-definite: a relative ridge keeps it solvable
    for a in range(size):
        K[a, a] += 1e-13 * biggest
    step = np.linalg.solve(K, rhs)
    trial = z.copy()
    scale = 1.0
    for _ in range(20):
        for a in range(m):
            trial[idx[a]] = z[idx[a]] + scale * step[a]
        ct = c + scale * step[m] if use_bias else c
        residual = l21sq_model_residual(H, g, coef, bias, block_ptr, fit_intercept,
                                        trial, ct)
        if residual < start:
            for a in range(m):
                z[idx[a]] = trial[idx[a]]
            return ct, residual
        scale *= 0.5
    return c, start


# -- K outputs per sample (multi-class): K coefficients per column, K intercepts
@njit(cache=True, nogil=True)
def csr_multi_gram(indptr, indices, data, colval, a, u, K, out):
    """Write the Hessian ``sum_i (x~_i x~_i') kron W_i`` into ``out``; return it.

    ``x~_i = [x_i, -1]`` (row ``i`` of ``X`` and the intercepts' column) and
    ``W_i = diag(a_i) - u_i u_i'`` (K x K, the loss's Hessian at ``F_i``,
    :meth:`~ultrafs.solvers.losses.MulticlassLoss.hessian_factors`).  The
    coefficient ``(j, k)`` (column ``j``, class ``k``) has index ``j K + k``,
    the intercept of class ``k`` index ``p K + k``: the layout of the
    solvers' ``coef`` followed by ``bias``.  ``O(K^2 sum_i (nnz_i + 1)^2)``;
    rows whose ``W_i`` is zero cost ``O(K^2)``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSR arrays of ``X`` (n x p); ``data`` may be empty when ``colval``
        gives every column's one value.
    colval : ndarray of float64, shape (p,) or (0,)
    a : ndarray of float64, shape (n * K,)
    u : ndarray of float64, shape (n * K,), or (0,) (diagonal ``W_i``)
    K : int
    out : ndarray of float64, shape ((p + 1) K, (p + 1) K)
        Overwritten.

    Returns
    -------
    ndarray of float64, symmetric
    """
    size = out.shape[0]
    p = size // K - 1
    out[:, :] = 0.0
    rank_one = len(u) > 0
    by_column = len(colval) > 0
    W = np.empty((K, K))
    for i in range(len(indptr) - 1):
        base = i * K
        nonzero = False
        for s in range(K):
            for t in range(K):
                v = -u[base + s] * u[base + t] if rank_one else 0.0
                if s == t:
                    v += a[base + s]
                W[s, t] = v
                if v != 0.0:
                    nonzero = True
        if not nonzero:
            continue
        start, end = indptr[i], indptr[i + 1]
        for e in range(start, end):
            ja = indices[e]
            va = colval[ja] if by_column else data[e]
            ra = ja * K
            ib = p * K
            for s in range(K):
                for t in range(K):
                    out[ra + s, ib + t] -= va * W[s, t]
            for f2 in range(e, end):
                jb = indices[f2]
                vb = va * (colval[jb] if by_column else data[f2])
                if jb == ja and f2 != e:
                    vb *= 2.0  # a duplicate entry: its pair lands on the diagonal
                lo, hi = (ja, jb) if ja <= jb else (jb, ja)
                rl, rh = lo * K, hi * K
                for s in range(K):
                    for t in range(K):
                        out[rl + s, rh + t] += vb * W[s, t]
        ib = p * K
        for s in range(K):
            for t in range(K):
                out[ib + s, ib + t] += W[s, t]
    # the blocks below the diagonal mirror those above (W_i is symmetric)
    for J in range(p + 1):
        for L in range(J + 1, p + 1):
            for s in range(K):
                for t in range(K):
                    out[L * K + t, J * K + s] = out[J * K + s, L * K + t]
    return out


@njit(cache=True, nogil=True)
def bias_pseudo_inverse(H, p, fit_intercept):
    """The pseudo-inverse of the intercepts' block ``H[p:, p:]`` (``p``: coefficients).

    Eigenvalues at most ``1e-12`` times the largest count as zero (the
    multinomial intercepts' Hessian is singular along ``(1, ..., 1)``, along
    which no gradient exists).  Zero (the intercepts do not move) without an
    intercept or without curvature.
    """
    nb = H.shape[0] - p
    Binv = np.zeros((nb, nb))
    if not fit_intercept or nb == 0:
        return Binv
    B = np.ascontiguousarray(H[p:, p:])
    ev, Q = np.linalg.eigh(B)
    top = 0.0
    for k in range(nb):
        if ev[k] > top:
            top = ev[k]
    if not (top > 1e-300 and math.isfinite(top)):
        return Binv
    for k in range(nb):
        if ev[k] > 1e-12 * top:
            inv = 1.0 / ev[k]
            for s in range(nb):
                for t in range(nb):
                    Binv[s, t] += Q[s, k] * inv * Q[t, k]
    return Binv


@njit(cache=True, nogil=True)
def _moves_bias(Binv):
    for s in range(Binv.shape[0]):
        if Binv[s, s] != 0.0:
            return True
    return False


@njit(cache=True, nogil=True)
def _model_gradient_k(H, g, coef, bias, z, c, use_bias):
    """``r = g + H d`` with ``d = (z - coef, c - bias)`` (``d_b = 0`` if fixed)."""
    p = len(coef)
    size = len(g)
    d = np.zeros(size)
    for j in range(p):
        d[j] = z[j] - coef[j]
    if use_bias:
        for k in range(size - p):
            d[p + k] = c[k] - bias[k]
    r = g.copy()
    for k in range(size):
        if d[k] != 0.0:
            for i in range(size):
                r[i] += H[k, i] * d[k]
    return r


@njit(cache=True, nogil=True)
def _model_kkt_k(r, z, norms, block_ptr, p, use_bias):
    """:func:`_model_kkt` with the intercepts' gradient ``r[p:]`` (its norm)."""
    res = _model_kkt(r, z, norms, block_ptr, p, False)
    if not use_bias:
        return res
    rb = 0.0
    for k in range(p, len(r)):
        rb += r[k] * r[k]
    rb = math.sqrt(rb)
    if rb == 0.0:
        return res
    scale = 0.0
    for h in range(len(norms)):
        acc = 0.0
        for j in range(block_ptr[h], block_ptr[h + 1]):
            acc += r[j] * r[j]
        acc = math.sqrt(acc)
        if acc > scale:
            scale = acc
    if scale == 0.0:
        return math.inf
    return max(res, rb / scale)


@njit(cache=True, nogil=True)
def l21sq_model_residual_k(H, g, coef, bias, block_ptr, Binv, z, c):
    """Relative KKT residual of the model at ``(z, c)`` (:func:`l21sq_model_bcd_k`)."""
    p = len(coef)
    use_bias = _moves_bias(Binv)
    r = _model_gradient_k(H, g, coef, bias, z, c, use_bias)
    return _model_kkt_k(r, z, _block_norms(z, block_ptr), block_ptr, p, use_bias)


@njit(cache=True, nogil=True)
def _bias_move(Binv, r, p, E, nb):
    """``-Binv (r[p:] + E)``."""
    dc = np.zeros(nb)
    for s in range(nb):
        acc = 0.0
        for t in range(nb):
            acc += Binv[s, t] * (r[p + t] + E[t])
        dc[s] = -acc
    return dc


@njit(cache=True, nogil=True)
def l21sq_model_bcd_k(H, g, coef, bias, block_ptr, Binv, tol, max_sweeps, z, c,
                      vecs, vals, have):
    """:func:`l21sq_model_bcd` with ``nb`` intercepts (K outputs per sample).

    The same method: each block update minimises the model exactly over
    ``z_h`` and the intercepts ``c`` together, ``c`` eliminated by the
    Schur complement ``H_hh - E Binv E'`` (``E = H[h, p:]``, ``Binv`` the
    pseudo-inverse of the intercepts' block, :func:`bias_pseudo_inverse`).

    Parameters
    ----------
    H : ndarray of float64, shape (p + nb, p + nb)
        Hessian of the smooth part over ``(w, b)`` (indices ``p:``: ``b``).
    g : ndarray of float64, shape (p + nb,)
    coef : ndarray of float64, shape (p,)
    bias : ndarray of float64, shape (nb,)
    block_ptr : ndarray of int64, shape (t + 1,)
    Binv : ndarray of float64, shape (nb, nb)
        Zero: the intercepts stay at ``bias``.
    tol, max_sweeps
        As in :func:`l21sq_model_bcd`.
    z : ndarray of float64, shape (p,)
        Start, overwritten with the point reached.
    c : ndarray of float64, shape (nb,)
        Start of the intercepts, overwritten.
    vecs, vals, have
        :func:`eigen_workspace` of ``block_ptr`` for this ``H``.

    Returns
    -------
    sweeps : int
    residual : float
    """
    p = len(coef)
    nb = len(bias)
    t = len(block_ptr) - 1
    use_bias = _moves_bias(Binv)
    if not use_bias:
        c[:] = bias
    r = _model_gradient_k(H, g, coef, bias, z, c, use_bias)
    norms = _block_norms(z, block_ptr)
    offsets = _eigen_offsets(block_ptr)
    residual = _model_kkt_k(r, z, norms, block_ptr, p, use_bias)
    checkpoint = residual
    sweeps = 0
    zero_nb = np.zeros(nb)
    while residual > tol and sweeps < max_sweeps:
        sweeps += 1
        moved = False
        total = 0.0
        for h in range(t):
            total += norms[h]
        for h in range(t):
            lo, hi = block_ptr[h], block_ptr[h + 1]
            m = hi - lo
            if m == 0:
                continue
            lam = total - norms[h]
            if lam < 0.0:
                lam = 0.0
            # w = Binv (E' z_h - r_b): q = r_h - H_hh z_h + E w
            wv = np.zeros(nb)
            if use_bias:
                ez = np.zeros(nb)
                for s in range(nb):
                    acc = -r[p + s]
                    for k in range(m):
                        acc += H[lo + k, p + s] * z[lo + k]
                    ez[s] = acc
                for s in range(nb):
                    acc = 0.0
                    for k in range(nb):
                        acc += Binv[s, k] * ez[k]
                    wv[s] = acc
            q = np.empty(m)
            nq2 = 0.0
            for i in range(m):
                row = lo + i
                acc = r[row]
                for k in range(m):
                    acc -= H[row, lo + k] * z[lo + k]
                if use_bias:
                    for s in range(nb):
                        acc += H[row, p + s] * wv[s]
                q[i] = acc
                nq2 += acc * acc
            nq = math.sqrt(nq2)
            if nq <= lam:
                u = np.zeros(m)
            else:
                if not have[h]:
                    A = np.empty((m, m))
                    for i in range(m):
                        for j in range(m):
                            A[i, j] = H[lo + i, lo + j]
                    if use_bias:
                        EB = np.zeros((m, nb))
                        for i in range(m):
                            for s in range(nb):
                                acc = 0.0
                                for k in range(nb):
                                    acc += H[lo + i, p + k] * Binv[k, s]
                                EB[i, s] = acc
                        for i in range(m):
                            for j in range(m):
                                acc = 0.0
                                for s in range(nb):
                                    acc += EB[i, s] * H[lo + j, p + s]
                                A[i, j] -= acc
                        for i in range(m):  # symmetric to the rounding
                            for j in range(i + 1, m):
                                v = 0.5 * (A[i, j] + A[j, i])
                                A[i, j] = v
                                A[j, i] = v
                    _keep_eigen(A, vals, vecs, offsets, h, lo)
                    have[h] = True
                u = _eigen_block_step(vals, vecs, offsets, h, lo, hi, q, lam)
            for k in range(m):
                if H[lo + k, lo + k] == 0.0:
                    u[k] = 0.0  # no curvature: decoupled, its minimiser is 0
            dc = zero_nb
            if use_bias:
                E = np.zeros(nb)
                for s in range(nb):
                    acc = 0.0
                    for k in range(m):
                        acc += H[lo + k, p + s] * (u[k] - z[lo + k])
                    E[s] = acc
                dc = _bias_move(Binv, r, p, E, nb)
            nu = 0.0
            for k in range(m):
                du = u[k] - z[lo + k]
                if du != 0.0:
                    moved = True
                    row = lo + k
                    for i in range(p + nb):
                        r[i] += H[row, i] * du
                z[lo + k] = u[k]
                nu += u[k] * u[k]
            if use_bias:
                for s in range(nb):
                    if dc[s] != 0.0:
                        for i in range(p + nb):
                            r[i] += H[p + s, i] * dc[s]
                        moved = moved or c[s] + dc[s] != c[s]
                        c[s] += dc[s]
            nu = math.sqrt(nu)
            total += nu - norms[h]
            norms[h] = nu
        if use_bias:
            dc = _bias_move(Binv, r, p, zero_nb, nb)
            for s in range(nb):
                if c[s] + dc[s] != c[s]:
                    moved = True
                    for i in range(p + nb):
                        r[i] += H[p + s, i] * dc[s]
                    c[s] += dc[s]
        residual = _model_kkt_k(r, z, norms, block_ptr, p, use_bias)
        if not moved:
            break
        if sweeps % _STALL_SWEEPS == 0:
            if residual > 0.999 * checkpoint:
                break
            checkpoint = residual
    return sweeps, residual


@njit(cache=True, nogil=True)
def l21sq_model_polish_k(H, g, coef, bias, block_ptr, Binv, z, c):
    """:func:`l21sq_model_polish` with ``nb`` intercepts; ``z`` and ``c``
    are overwritten only when the step lowers the model's residual.

    Returns
    -------
    residual : float
    """
    p = len(coef)
    nb = len(bias)
    t = len(block_ptr) - 1
    use_bias = _moves_bias(Binv)
    r = _model_gradient_k(H, g, coef, bias, z, c, use_bias)
    norms = _block_norms(z, block_ptr)
    start = _model_kkt_k(r, z, norms, block_ptr, p, use_bias)
    total = 0.0
    m = 0
    for h in range(t):
        total += norms[h]
        if norms[h] > 0.0:
            m += block_ptr[h + 1] - block_ptr[h]
    if m == 0:
        return start
    idx = np.empty(m, dtype=np.int64)
    blk = np.empty(m, dtype=np.int64)
    a = 0
    for h in range(t):
        if norms[h] > 0.0:
            for j in range(block_ptr[h], block_ptr[h + 1]):
                idx[a] = j
                blk[a] = h
                a += 1
    extra = nb if use_bias else 0
    size = m + extra
    K = np.empty((size, size))
    rhs = np.empty(size)
    unit = np.empty(m)
    for a in range(m):
        unit[a] = z[idx[a]] / norms[blk[a]]
    biggest = 0.0
    for a in range(m):
        for b in range(m):
            v = H[idx[a], idx[b]] + unit[a] * unit[b]
            if blk[a] == blk[b]:
                v += total / norms[blk[a]] * ((1.0 if a == b else 0.0) - unit[a] * unit[b])
            K[a, b] = v
        for s in range(extra):
            K[a, m + s] = H[idx[a], p + s]
            K[m + s, a] = H[idx[a], p + s]
        rhs[a] = -(r[idx[a]] + total * unit[a])
        if K[a, a] > biggest:
            biggest = K[a, a]
    for s in range(extra):
        for s2 in range(extra):
            K[m + s, m + s2] = H[p + s, p + s2]
        rhs[m + s] = -r[p + s]
        if K[m + s, m + s] > biggest:
            biggest = K[m + s, m + s]
    for a in range(size):
        K[a, a] += 1e-13 * biggest
    step = np.linalg.solve(K, rhs)
    trial = z.copy()
    ct = c.copy()
    scale = 1.0
    for _ in range(20):
        for a in range(m):
            trial[idx[a]] = z[idx[a]] + scale * step[a]
        for s in range(extra):
            ct[s] = c[s] + scale * step[m + s]
        residual = l21sq_model_residual_k(H, g, coef, bias, block_ptr, Binv, trial, ct)
        if residual < start:
            for a in range(m):
                z[idx[a]] = trial[idx[a]]
            c[:] = ct
            return residual
        scale *= 0.5
    return start
