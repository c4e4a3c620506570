"""Copy spans of a flat array into a packed result, without index arrays.

``gather_spans(src, src_starts, lengths, out, out_starts)`` copies
``src[src_starts[g] : src_starts[g] + lengths[g]]`` to
``out[out_starts[g] : ...]`` for every span ``g``: what fancy indexing with
an int64 position per element does, in no extra memory (a store's reads of
many columns held 16 bytes of gather plan per entry read).

``first_at_least(values, lo, hi, target)`` is the bisection every kernel
uses to enter a sorted span (a column's rows, a row's columns).
"""

import numpy as np
from numba import njit

__all__ = ["gather_spans", "first_at_least"]


@njit(cache=True, nogil=True)
def gather_spans(src, src_starts, lengths, out, out_starts):
    """Copy every span of ``src`` to its place in ``out``; return ``out``."""
    for g in range(lengths.shape[0]):
        s = src_starts[g]
        d = out_starts[g]
        for t in range(lengths[g]):
            out[d + t] = src[s + t]
    return out


@njit(cache=True, nogil=True, inline="always")
def first_at_least(values, lo, hi, target):
    """First position in ``values[lo:hi]`` (non-decreasing) holding >= ``target``
    (``hi`` when none does)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    return lo
