"""Slores's upper bounds of ``|x̄_j'θ|`` over its dual region, fused loops.

Theorem 8 of Wang et al. (NIPS 2013) in the stable form of
``shared/notes/mslr-slores.md`` §B3: for ξ = ±1, ``B = −ξ B_j`` (plus its
rounding bound), ``cos = B / (N_j √A)``, ``D = N_j² A − B²``:

* case (a), ``cos >= d``: ``T_ξ = r N_j + ξ s_j``;
* case (b): ``T_ξ = (r/√A)(√((1 − d²) D) + d B) + ξ s_j``, never above
  case (a)'s value;

``T_j = max_ξ T_ξ + s_error_j``.  Degenerate regions have their own
``case``: :data:`BALL` (``|d| >= 1`` or A = 0: the ball-and-hyperplane
bound ``r N_j + |s_j|``) and :data:`POINT` (r = 0: ``|s_j|``).

The centre's correlations and the rounding bounds are formed column by
column from the statistics (``s_j = s0_j − shift·colsum_j``,
``s_error_j = s_gamma ||x_j|| + shift_gamma |colsum_j|``,
``cut_error_j = cut_gamma ||x_j||``), so screening a 10⁶-column store
makes no temporary array.
"""

import numpy as np
from numba import njit

__all__ = ["GENERAL", "BALL", "POINT", "slores_bounds", "slores_keep_columns",
           "largest_shifted_correlation", "discarded_violators"]

GENERAL = 0
BALL = 1
POINT = 2


@njit(cache=True, nogil=True, inline="always")
def _bound(s, s_err, cut, cut_err, n2, radius, cut_norm2, d, case):
    """Slores's bound of one column (see the module)."""
    nj = np.sqrt(n2)
    if case == POINT:
        return abs(s) + s_err
    ball = radius * nj
    if case == BALL:
        return ball + abs(s) + s_err
    sqrt_a = np.sqrt(cut_norm2)
    limit = nj * sqrt_a
    best = -np.inf
    for side in range(2):
        xi = 1.0 if side == 0 else -1.0
        b = -xi * cut + cut_err
        if b > limit:
            b = limit
        cos = b / limit if limit > 0.0 else 1.0
        if cos >= d:
            t = ball
        else:
            dd = n2 * cut_norm2 - b * b
            if dd < 0.0:
                dd = 0.0
            t = (radius / sqrt_a) * (np.sqrt(1.0 - d * d) * np.sqrt(dd) + d * b)
            if t > ball:
                t = ball
        t += xi * s
        if t > best:
            best = t
    return best + s_err


@njit(cache=True, nogil=True)
def slores_bounds(s0, colsum, norms, norm2, cut, shift, s_gamma, shift_gamma,
                  cut_gamma, radius, cut_norm2, d, case, out):
    """Fill ``out[j]`` with the bound of every column j.

    Parameters
    ----------
    s0, colsum, norms, norm2, cut : float64 arrays, shape (p,)
        ``x̄_j'θ0``, ``Σ_i x_ij``, ``||x_j||``, ``||P x̄_j||²``,
        ``<P x̄_j, P x̄*>``.
    shift : float
        ``<θ0, y>/n`` (the centre is ``θ0 − shift·y``).
    s_gamma, shift_gamma, cut_gamma : float
        Rounding-bound factors (see the module).
    radius, cut_norm2, d : float
    case : int
        :data:`GENERAL`, :data:`BALL` or :data:`POINT`.
    out : float64 array, shape (p,)
    """
    for j in range(s0.shape[0]):
        a = abs(colsum[j])
        out[j] = _bound(s0[j] - shift * colsum[j], s_gamma * norms[j] + shift_gamma * a,
                        cut[j], cut_gamma * norms[j], norm2[j], radius, cut_norm2, d,
                        case)
    return out


@njit(cache=True, nogil=True)
def slores_keep_columns(columns, every, s0, colsum, norms, norm2, constant, cut,
                        shift, s_gamma, shift_gamma, cut_gamma, radius, cut_norm2, d,
                        case, n_lam, rtol, keep):
    """Algorithm 1's test on ``columns``: ``keep[j]`` for each of them.

    ``keep[j] = T_j >= nλ − rtol (nλ + r N_j + |s_j|)`` and the column is
    not constant (other entries of ``keep`` are left as they are).  The
    ball's bound ``r N_j + |s_j|`` is at least ``T_j``: a column it already
    discards skips Theorem 8.

    Parameters
    ----------
    columns : int64 array
        The columns to test (e.g. those another safe rule kept).
    every : bool
        Test every column instead (``columns`` empty).
    s0 … case
        As for :func:`slores_bounds`.
    n_lam : float
        ``n λ``.
    rtol : float
    keep : bool array, shape (p,)
    """
    count = s0.shape[0] if columns.shape[0] == 0 and every else columns.shape[0]
    for k in range(count):
        j = k if every else columns[k]
        if constant[j]:
            keep[j] = False
            continue
        a = abs(colsum[j])
        s = s0[j] - shift * colsum[j]
        s_err = s_gamma * norms[j] + shift_gamma * a
        ball = radius * np.sqrt(norm2[j])
        threshold = n_lam - rtol * (n_lam + ball + abs(s))
        if ball + abs(s) + s_err < threshold:   # the ball alone discards it
            keep[j] = False
            continue
        t = _bound(s, s_err, cut[j], cut_gamma * norms[j], norm2[j], radius,
                   cut_norm2, d, case)
        keep[j] = t >= threshold
    return keep


@njit(cache=True, nogil=True)
def largest_shifted_correlation(s0, colsum, norms, shift, s_gamma, shift_gamma):
    """``max_j |s0_j − shift·colsum_j| + s_gamma ||x_j|| + shift_gamma |colsum_j|``:
    an upper bound of ``||X̄'θc||_∞`` (scales a dual point into feasibility)."""
    top = 0.0
    for j in range(s0.shape[0]):
        a = abs(colsum[j])
        v = abs(s0[j] - shift * colsum[j]) + s_gamma * norms[j] + shift_gamma * a
        if v > top:
            top = v
    return top


@njit(cache=True, nogil=True)
def discarded_violators(s, keep, threshold):
    """Discarded columns whose ``|s_j|`` exceeds ``threshold`` (KKT violators).

    Returns
    -------
    violators : int64 array
        Increasing column numbers with ``not keep[j]`` and
        ``|s_j| > threshold``.
    largest : float
        ``max |s_j|`` over the discarded columns (0 when none).
    """
    count = 0
    largest = 0.0
    for j in range(s.shape[0]):
        if not keep[j]:
            v = abs(s[j])
            if v > largest:
                largest = v
            if v > threshold:
                count += 1
    out = np.empty(count, dtype=np.int64)
    k = 0
    for j in range(s.shape[0]):
        if not keep[j] and abs(s[j]) > threshold:
            out[k] = j
            k += 1
    return out, largest
