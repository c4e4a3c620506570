"""Column offsets of a long (feature, row, value) table sorted by feature."""

import numba
import numpy as np

__all__ = ["feature_offsets"]


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
