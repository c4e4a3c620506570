"""Column offsets and counts of long (feature, row, value) tables sorted by feature."""

import numba
import numpy as np

__all__ = ["feature_offsets", "add_key_counts", "sort_keys_by_column"]


@numba.njit(cache=True, nogil=True)
def feature_offsets(features, start, stop, offsets):
    """Positions where each feature of ``start..stop`` begins, in one pass.

    Parameters
    ----------
    features : ndarray of int32 or int64, shape (n,)
        Feature numbers, expected non-decreasing; values outside
        ``start:stop`` are allowed before and after the range.
    start, stop : int
        Feature range, ``start <= stop``.
    offsets : ndarray of int64, shape (stop - start + 1,)
        Output: ``offsets[k]`` is the first position ``i`` with
        ``features[i] >= start + k`` (``n`` if none), so that feature
        ``start + k`` occupies ``offsets[k]:offsets[k + 1]``.

    Returns
    -------
    ok : bool
        False if ``features`` decreases somewhere (``offsets`` is then
        meaningless).
    """
    n = features.shape[0]
    lo = np.searchsorted(features, start)
    hi = np.searchsorted(features, stop)
    # offsets[k + 1] = end of feature start + k, or -1 while unseen: a
    # forward scatter (features are sorted, so the last write is the end)
    offsets[0] = lo
    for k in range(1, stop - start + 1):
        offsets[k] = -1
    for i in range(lo, hi):
        offsets[features[i] - start + 1] = i + 1
    descents = 0
    for i in range(1, n):
        descents += features[i] < features[i - 1]
    if descents:
        return False
    # an absent feature ends where the previous one ends
    for k in range(1, stop - start + 1):
        offsets[k] = max(offsets[k], offsets[k - 1])
    return True


@numba.njit(cache=True, nogil=True)
def add_key_counts(keys, counts):
    """Count entries per column of packed keys ``column << 32 | row``.

    Parameters
    ----------
    keys : ndarray of int64, shape (n,)
        Packed keys (any order; sorted keys make the updates sequential).
    counts : ndarray of int32 or int64, shape (>= largest column + 1,)
        Updated in place: ``counts[key >> 32] += 1`` for every key.
    """
    for i in range(keys.shape[0]):
        counts[keys[i] >> 32] += 1


@numba.njit(cache=True, nogil=True)
def sort_keys_by_column(keys, values, spare_keys, spare_values, max_digit=9):
    """Sort packed keys ``column << 32 | row`` whose rows come in order.

    A stable least-significant-digit radix sort on the column bits only
    (passes of at most ``max_digit`` bits), so it sorts completely when,
    for every column, the rows of its keys are increasing in input order:
    entries added row by row, or row-ordered pieces each already sorted.

    Parameters
    ----------
    keys : ndarray of int64, shape (n,)
        Non-negative packed keys; overwritten (the passes alternate
        between ``keys`` and ``spare_keys``).
    values : ndarray, shape (n,) or (0,)
        Values permuted with the keys (overwritten too); an empty array
        for none.
    spare_keys : ndarray of int64, shape (n,)
        Scratch space.
    spare_values : ndarray, shape like ``values``
        Scratch space for the values.
    max_digit : int
        Most bits sorted per pass (9: three passes for 27 bits, each with
        a 4 KB count table).

    Returns
    -------
    keys : ndarray of int64, shape (n,)
        The sorted keys: ``keys`` or ``spare_keys``.
    values : ndarray, shape like ``values``
        ``values`` or ``spare_values``, with the keys.
    ok : bool
        Whether the result is sorted (False: the rows were not in order,
        and the caller must sort another way).
    """
    n = keys.shape[0]
    with_values = values.shape[0] == n and n > 0
    top = np.int64(0)
    for i in range(n):
        c = keys[i] >> 32
        if c > top:
            top = c
    bits = 0
    while (np.int64(1) << bits) <= top:
        bits += 1
    src = keys
    src_values = values
    if bits > 0:
        passes = (bits + max_digit - 1) // max_digit
        digit = (bits + passes - 1) // passes
        mask = (np.int64(1) << digit) - 1
        size = 1 << digit
        count = np.empty(size, dtype=np.int64)
        for p in range(passes):
            shift = 32 + p * digit
            dst = spare_keys if p % 2 == 0 else keys
            dst_values = spare_values if p % 2 == 0 else values
            count[:] = 0
            for i in range(n):
                count[(src[i] >> shift) & mask] += 1
            total = np.int64(0)
            for d in range(size):
                c = count[d]
                count[d] = total
                total += c
            for i in range(n):
                d = (src[i] >> shift) & mask
                j = count[d]
                dst[j] = src[i]
                if with_values:
                    dst_values[j] = src_values[i]
                count[d] = j + 1
            src = dst
            src_values = dst_values
    ok = True
    for i in range(1, n):
        if src[i] < src[i - 1]:
            ok = False
            break
    return src, src_values, ok
