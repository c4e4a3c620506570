"""The weighted Grams proximal Newton builds its Hessians from.

(See :mod:`ultrafs.solvers.prox_newton` for the method and
:mod:`ultrafs.kernels.prox_newton` for the model solvers.)

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

``csc_augmented_gram(...)`` (and its twin)
    the same Hessian from the CSC arrays a window of rows at a time
    (``window_buffers``, ``csc_gram_work``): no CSR copy of the columns.

``csr_multi_gram(indptr, indices, data, colval, a, u, K, out)``
    K outputs per sample (multi-class): ``sum_i ([x_i, -1]' [x_i, -1])
    kron (diag(a_i) - u_i u_i')`` (coefficient ``(j, k)`` at ``j K + k``,
    the K intercepts last).

Labels, losses and C enter only through the weights.
"""


import numpy as np
from numba import njit, prange

from .sparse_ops import count_range_rows, fill_range_rows
from .spans import first_at_least

__all__ = ["csr_augmented_gram", "csr_augmented_gram_parallel", "csr_constant_gram",
           "csr_constant_gram_parallel", "window_buffers", "csc_augmented_gram",
           "csc_augmented_gram_parallel", "csc_gram_work", "gram_row_work",
           "gram_row_bounds", "csr_multi_gram"]


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
