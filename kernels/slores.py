"""Slores's upper bounds of ``|x̄_j'θ|`` over its dual region, one fused loop.

Theorem 8 of Wang et al. (NIPS 2013) in the stable form of
``shared/notes/mslr-slores.md`` §B3: for ξ = ±1, ``B = −ξ B_j`` (plus its
rounding bound), ``cos = B / (N_j √A)``, ``D = N_j² A − B²``:

* case (a), ``cos >= d``: ``T_ξ = r N_j + ξ s_j``;
* case (b): ``T_ξ = (r/√A)(√((1 − d²) D) + d B) + ξ s_j``, never above
  case (a)'s value;

``T_j = max_ξ T_ξ + s_error_j``.  The caller handles the degenerate
regions (r = 0, |d| >= 1, A = 0).  One pass over the p columns with no
temporary arrays (the screening of a 10⁶-column store costs milliseconds).
"""

import numpy as np
from numba import njit

__all__ = ["slores_bounds"]


@njit(cache=True, nogil=True)
def slores_bounds(s, s_error, cut, cut_error, norm2, radius, cut_norm2, d, out):
    """Fill ``out[j]`` with Slores's bound of column j (see the module).

    Parameters
    ----------
    s, s_error : float64 arrays, shape (p,)
        ``x̄_j'θc`` at the region's centre and its rounding bound.
    cut, cut_error : float64 arrays, shape (p,)
        ``B_j = <P x̄_j, P x̄*>`` and its rounding bound.
    norm2 : float64 array, shape (p,)
        ``N_j² = ||P x̄_j||²``.
    radius : float
        r > 0.
    cut_norm2 : float
        A > 0.
    d : float
        In (−1, 1).
    out : float64 array, shape (p,)

    Returns
    -------
    out
    """
    sqrt_a = np.sqrt(cut_norm2)
    scale = radius / sqrt_a
    root = np.sqrt(1.0 - d * d)
    for j in range(s.shape[0]):
        n2 = norm2[j]
        nj = np.sqrt(n2)
        ball = radius * nj
        limit = nj * sqrt_a
        best = -np.inf
        for side in range(2):
            xi = 1.0 if side == 0 else -1.0
            b = -xi * cut[j] + cut_error[j]
            if b > limit:
                b = limit
            if limit > 0.0:
                cos = b / limit
            else:
                cos = 1.0
            if cos >= d:
                t = ball
            else:
                dd = n2 * cut_norm2 - b * b
                if dd < 0.0:
                    dd = 0.0
                t = scale * (root * np.sqrt(dd) + d * b)
                if t > ball:
                    t = ball
            t += xi * s[j]
            if t > best:
                best = t
        out[j] = best + s_error[j]
    return out
