"""Degree-2 columns generated from CSC columns: ``scale * x_a * x_b`` per pair.

:func:`pair_columns` writes the CSC arrays of the generated columns of
given pairs ``(first[t], second[t])`` in one allocation (row numbers, and a
value per entry unless the data are 0/1); :func:`pair_columns_parallel` is
its threaded twin (the same arrays). Used by the degree-2 feature space to
materialize the winners of a pass (``ultrafs/features/poly.py``).
"""

import numpy as np
from numba import njit, prange

__all__ = ["pair_columns", "pair_columns_parallel"]


@njit(cache=True, nogil=True)
def _pair_entries(indices, data, has_data, lo_a, hi_a, lo_b, hi_b, out_idx, out_val,
                  at, scale):
    """Intersect two sorted columns; write (or only count, ``out_idx`` empty).

    Returns the entries written (products that are not zero)."""
    write = out_idx.shape[0] > 0
    p = lo_a
    q = lo_b
    count = 0
    while p < hi_a and q < hi_b:
        ra = indices[p]
        rb = indices[q]
        if ra < rb:
            p += 1
        elif ra > rb:
            q += 1
        else:
            if has_data:
                v = np.float64(data[p]) * np.float64(data[q])
                if v != 0.0:
                    if write:
                        out_idx[at + count] = ra
                        out_val[at + count] = scale * v
                    count += 1
            else:
                if write:
                    out_idx[at + count] = ra
                count += 1
            p += 1
            q += 1
    return count


@njit(cache=True, nogil=True)
def _pair_column(indptr, indices, data, has_data, a, b, scale, out_idx, out_val, at):
    """One generated column (see :func:`pair_columns`); returns its entries.

    The values are those of the plain formulas: ``scale * x`` (linear),
    ``(scale * x) * x`` (square), ``scale * (x_a * x_b)`` (cross)."""
    if a < 0:
        return 0
    lo_a, hi_a = indptr[a], indptr[a + 1]
    if b >= 0 and b != a:
        return _pair_entries(indices, data, has_data, lo_a, hi_a, indptr[b],
                             indptr[b + 1], out_idx, out_val, at, scale)
    # a linear term or a square: the source's rows
    if out_idx.shape[0] > 0:
        for q in range(lo_a, hi_a):
            out_idx[at + q - lo_a] = indices[q]
            if has_data:
                v = np.float64(data[q])
                out_val[at + q - lo_a] = scale * v if b == -1 else scale * v * v
    return hi_a - lo_a


@njit(cache=True, nogil=True)
def pair_columns(indptr, indices, data, first, second, scale):
    """The columns of degree-2 terms of source columns, in one allocation.

    Output column ``t`` is ``scale[t] * x_a * x_b`` for ``a = first[t]`` and
    ``b = second[t]`` (positions of source columns in ``indptr``): a
    linear term when ``b == -1``, a square when ``b == a``, a zero column
    when ``a == -1`` or ``b == -2`` (a source outside the store).  Products
    that are zero are not stored.

    Parameters
    ----------
    indptr, indices : CSC arrays of the source columns, rows increasing
    data : float32 or float64 array
        Values; an empty array means every stored value is 1.  Then the
        output holds row numbers only: every entry of column ``t`` is
        ``scale[t]`` (a square of a 0/1 column is the column itself).
    first, second : int64 arrays, shape (p,)
    scale : float64 array, shape (p,)

    Returns
    -------
    out_indptr : int64 array, shape (p + 1,)
    out_indices : int32 array
    out_values : float64 array (empty for 0/1 sources)
    """
    p = first.shape[0]
    out_indptr = np.zeros(p + 1, dtype=np.int64)
    for t in range(p):
        out_indptr[t + 1] = _pair_entries_of(indptr, indices, data, first, second, t)
    out_idx, out_val = _pair_outputs(out_indptr, data.shape[0] > 0)
    for t in range(p):
        _pair_fill(indptr, indices, data, first, second, scale, t, out_idx, out_val,
                   out_indptr[t])
    return out_indptr, out_idx, out_val


@njit(cache=True, nogil=True, parallel=True)
def pair_columns_parallel(indptr, indices, data, first, second, scale):
    """:func:`pair_columns` over threads (the same arrays).

    The output columns are counted, then filled, in parallel: each column
    is made by one thread into its own place (no reduction).
    """
    p = first.shape[0]
    out_indptr = np.zeros(p + 1, dtype=np.int64)
    for t in prange(p):
        out_indptr[t + 1] = _pair_entries_of(indptr, indices, data, first, second, t)
    out_idx, out_val = _pair_outputs(out_indptr, data.shape[0] > 0)
    for t in prange(p):
        _pair_fill(indptr, indices, data, first, second, scale, t, out_idx, out_val,
                   out_indptr[t])
    return out_indptr, out_idx, out_val


@njit(cache=True, nogil=True)
def _pair_sources(first, second, t):
    """Source positions ``(a, b)`` of output column ``t`` (``a = -1``: a zero
    column, as for ``b == -2``, a source outside the store)."""
    b = second[t]
    return (first[t] if b != -2 else -1), b


@njit(cache=True, nogil=True)
def _pair_entries_of(indptr, indices, data, first, second, t):
    """Entries of output column ``t`` of :func:`pair_columns` (nothing written)."""
    a, b = _pair_sources(first, second, t)
    # np.int64(0), not 0: a literal would compile _pair_column (and
    # _pair_entries) a second time, for Literal[int](0) (issue 35)
    return _pair_column(indptr, indices, data, data.shape[0] > 0, a, b, 1.0,
                        np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float64),
                        np.int64(0))


@njit(cache=True, nogil=True)
def _pair_fill(indptr, indices, data, first, second, scale, t, out_idx, out_val, at):
    """Write output column ``t`` of :func:`pair_columns` from position ``at``."""
    a, b = _pair_sources(first, second, t)
    _pair_column(indptr, indices, data, data.shape[0] > 0, a, b, scale[t], out_idx,
                 out_val, at)


@njit(cache=True, nogil=True)
def _pair_outputs(out_indptr, has_data):
    """Counts (at ``out_indptr[1:]``) into pointers, in place; the output
    arrays (values only for valued sources)."""
    for t in range(len(out_indptr) - 1):
        out_indptr[t + 1] += out_indptr[t]
    total = out_indptr[-1]
    return (np.empty(total, dtype=np.int32),
            np.empty(total if has_data else 0, dtype=np.float64))
