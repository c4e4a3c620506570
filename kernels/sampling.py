"""Sampling kernels: ``searchsorted`` through a guide table, sorting grouped draws.

:func:`guide_table` cuts ``[0, cdf[-1]]`` into equal buckets and records
where each bucket edge falls in ``cdf``; :func:`search_right` then answers
``numpy.searchsorted(cdf, u, side="right")`` for every ``u`` with a short
binary search inside one bucket, exactly (the same integer for every
double, whatever the bucket count), and without sorting ``u`` first.
"""

import numba
import numpy as np

__all__ = ["guide_table", "search_right", "sort_grouped"]


@numba.njit(cache=True, nogil=True, inline="always")
def _edge(b, step):
    # the lower edge of bucket b: one expression for building and searching
    return np.float64(b) * step


@numba.njit(cache=True, nogil=True, inline="always")
def _first_above(cdf, x, lo, hi):
    # the first index in [lo, hi] whose cdf exceeds x (hi when none below hi does)
    while lo < hi:
        mid = (lo + hi) >> 1
        if cdf[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def guide_table(cdf, n_buckets):
    """Positions of the bucket edges ``b * step`` in ``cdf``.

    Parameters
    ----------
    cdf : ndarray of float64, shape (n,)
        Non-decreasing, ``1 <= n < 2**31``, ``cdf[-1] > 0``.
    n_buckets : int
        Number of buckets (>= 1).

    Returns
    -------
    guide : ndarray of int32, shape (n_buckets + 1,)
        ``guide[b] = searchsorted(cdf, b * step, side="right")``.
    step : float
        Bucket width, ``cdf[-1] / n_buckets``.
    """
    n = cdf.shape[0]
    step = cdf[n - 1] / n_buckets
    guide = np.empty(n_buckets + 1, dtype=np.int32)
    lo = 0
    for b in range(n_buckets + 1):
        lo = _first_above(cdf, _edge(b, step), lo, n)   # edges increase: search onwards
        guide[b] = lo
    return guide, step


@numba.njit(cache=True, nogil=True)
def search_right(cdf, guide, step, u):
    """``numpy.searchsorted(cdf, u, side="right")`` through a guide table.

    Parameters
    ----------
    cdf : ndarray of float64, shape (n,)
    guide, step
        :func:`guide_table` of ``cdf``.
    u : ndarray of float64, shape (m,)
        Values in ``[0, inf)`` (NaN is not supported).

    Returns
    -------
    positions : ndarray of int64, shape (m,)
        For each ``u[i]``, the number of ``cdf`` entries ``<= u[i]``.
    """
    n = cdf.shape[0]
    top = guide.shape[0] - 1
    out = np.empty(u.shape[0], dtype=np.int64)
    for i in range(u.shape[0]):
        x = u[i]
        q = x / step
        b = top if q >= top else int(q)
        # rounding may put x one bucket off: settle on edge(b) <= x < edge(b + 1)
        while b > 0 and x < _edge(b, step):
            b -= 1
        while b < top and x >= _edge(b + 1, step):
            b += 1
        hi = guide[b + 1] if b < top else n
        out[i] = _first_above(cdf, x, guide[b], hi)
    return out


#: longest group sorted by insertion (longer ones: numpy's sort)
_INSERTION_MAX = 64


@numba.njit(cache=True, nogil=True)
def sort_grouped(keys, group_size):
    """Sort ``keys`` in place when their groups ``key // group_size`` already ascend.

    Each run of keys of one group (a row's draws ``row * m + rank``) is
    insertion-sorted (sorted by ``numpy.sort`` past 64 keys), which sorts the whole array when the groups come in
    non-decreasing order (then the result equals ``numpy.sort``); short
    groups make this several times faster than a general sort.

    Parameters
    ----------
    keys : ndarray of int64, shape (n,)
        Non-negative keys; sorted in place.
    group_size : int
        ``m`` (> 0).

    Returns
    -------
    ok : bool
        False if the groups were not in order (``keys`` is then only
        sorted within each run, and the caller must sort it).
    """
    n = keys.shape[0]
    start = 0
    ok = True
    while start < n:
        group = keys[start] // group_size
        stop = start + 1
        while stop < n and keys[stop] // group_size == group:
            stop += 1
        if stop < n and keys[stop] // group_size < group:
            ok = False
        if stop - start > _INSERTION_MAX:
            ordered = np.sort(keys[start:stop])
            for t in range(stop - start):   # not keys[start:stop] = ...: numba
                keys[start + t] = ordered[t]  # compiles slice copies slowly
            start = stop
            continue
        for i in range(start + 1, stop):
            value = keys[i]
            j = i - 1
            while j >= start and keys[j] > value:
                keys[j + 1] = keys[j]
                j -= 1
            keys[j + 1] = value
        start = stop
    return ok
