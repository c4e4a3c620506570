"""Per-coordinate and per-sample steps of the l1 solvers of seed 001.

* :func:`gauss_seidel_pass`: CGD's steps over the coordinates ``J`` chosen
  by the Gauss–Southwell rule, one after another (Tseng & Yun steps on
  one-coordinate blocks, each with its Armijo rule), on dense columns.
* :func:`sgdc_steps`: SGD-C (Tsuruoka et al.'s cumulative l1 penalty with
  the paper's gradient averaging, eq. 11) over dense rows in the order
  given.

Both take the binary loss by code (:data:`LOGISTIC`, :data:`SQUARED_HINGE`,
the ``l(y, f)`` of ``ultrafs.solvers.losses``: ``log(1 + exp(-y f))`` and
``max(0, 1 - y f)^2 / 2``; the loss object carries its code as
``step_code``) and per-sample weights ``s`` (an empty array: all ones).
Kernels take raw arrays only.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .losses import sigmoid

__all__ = ["LOGISTIC", "SQUARED_HINGE", "gauss_seidel_pass",
           "sgdc_steps"]

LOGISTIC = 0
SQUARED_HINGE = 1


@njit(cache=True, nogil=True)
def _loss_change(code, margin, delta):
    """``l(margin + delta) - l(margin)``, accurate however small.

    Logistic: ``log1p(sigma(-m) expm1(-delta))`` (no difference of two
    nearly equal logarithms); squared hinge: ``(s1 - s0)(s1 + s0) / 2``.
    """
    if code == LOGISTIC:
        return math.log1p(sigmoid(-margin) * math.expm1(-delta))
    s0 = 1.0 - margin
    s1 = s0 - delta
    if s0 < 0.0:
        s0 = 0.0
    if s1 < 0.0:
        s1 = 0.0
    return 0.5 * (s1 - s0) * (s1 + s0)


@njit(cache=True, nogil=True)
def _derivatives(code, margin):
    """``(-dl/dm, d2l/dm2)`` at the margin ``m = y f``."""
    if code == LOGISTIC:
        p = sigmoid(-margin)
        return p, p * sigmoid(margin)
    slack = 1.0 - margin
    if slack > 0:
        return slack, 1.0
    return 0.0, 0.0


@njit(cache=True, nogil=True)
def gauss_seidel_pass(cols, coords, w, f, y, s, C, lam, code, sigma, beta,
                      max_trials, h_min, h_max):
    """One pass of one-coordinate Tseng–Yun steps over ``coords``.

    For coordinate ``j`` (column ``cols[:, t]`` of ``Φ``): ``g = C Σ s_i
    dl/df_i Φ_ij``, ``H = clip(C Σ s_i l''_i Φ_ij², h_min, h_max)``,
    ``d = -mid((g - lam)/H, w_j, (g + lam)/H)``, then the largest ``alpha
    = beta^i`` with ``F(w + alpha d e_j) - F(w) <= sigma alpha Delta``,
    ``Delta = g d + lam (|w_j + d| - |w_j|)``; ``w`` and the decision
    values ``f`` are updated in place.

    Parameters
    ----------
    cols : float64 array (n, t), Fortran order
    coords : int64 array (t,)
        Coefficient index of each column.
    w : float64 array (M,)
    f : float64 array (n,)
        ``Φ w - b``, updated.
    y : float64 array (n,)
    s : float64 array (n,) or (0,)
    C, lam, sigma, beta, h_min, h_max : float
    code : int
    max_trials : int

    Returns
    -------
    trials : int
        Objective evaluations of the Armijo rule.
    change : float
        Total change of ``F`` (``<= 0``).
    """
    n = f.shape[0]
    weighted = s.shape[0] > 0
    trials = 0
    total = 0.0
    for t in range(coords.shape[0]):
        j = coords[t]
        g = 0.0
        h = 0.0
        for i in range(n):
            x = cols[i, t]
            if x == 0.0:
                continue
            nd, sec = _derivatives(code, y[i] * f[i])
            wt = s[i] if weighted else 1.0
            g -= wt * nd * y[i] * x
            h += wt * sec * x * x
        g *= C
        h *= C
        if h < h_min:
            h = h_min
        elif h > h_max:
            h = h_max
        lo = (g - lam) / h
        hi = (g + lam) / h
        wj = w[j]
        mid = wj
        if mid < lo:
            mid = lo
        elif mid > hi:
            mid = hi
        d = -mid
        if d == 0.0:
            continue
        delta = g * d + lam * (abs(wj + d) - abs(wj))
        alpha = 1.0
        accepted = False
        for _ in range(max_trials):
            trials += 1
            change = 0.0
            for i in range(n):
                x = cols[i, t]
                if x == 0.0:
                    continue
                wt = s[i] if weighted else 1.0
                change += wt * _loss_change(code, y[i] * f[i], y[i] * alpha * d * x)
            change = C * change + lam * (abs(wj + alpha * d) - abs(wj))
            if change <= sigma * alpha * delta:
                accepted = True
                break
            alpha *= beta
        if not accepted:
            continue
        step = alpha * d
        w[j] = wj + step
        if alpha == 1.0 and abs(w[j]) < 1e-300:
            w[j] = 0.0
        for i in range(n):
            x = cols[i, t]
            if x != 0.0:
                f[i] += step * x
        total += change
    return trials, total


@njit(cache=True, nogil=True)
def sgdc_steps(rows, order, y, s, w, h, q, state, eta0, decay, n_total, lam, C,
               code, fit_intercept):
    """SGD-C steps over the rows of ``rows`` (dense), in place.

    Per sample (``k`` the 1-based step count, ``N`` = ``n_total``): ``eta =
    eta0 decay^(-(k-1)/N)``; ``u += eta lam / N``; ``h = h / k + (k-1)/k
    ∇l_i`` (eq. 11); ``w -= eta h``; then every coordinate is clipped
    towards 0 by its unapplied cumulative penalty ``u ± q_j`` and ``q_j``
    records what was applied (Tsuruoka et al.).  The bias (unpenalised)
    takes the same averaged step.  ``state = [k, u, b, h_b]`` is updated.

    Parameters
    ----------
    rows : float64 array (r, M), C order
        ``Φ`` rows of the samples ``order``.
    order : int64 array (r,)
        Their sample numbers (for ``y`` and ``s``).
    y, s : float64 arrays
    w, h, q : float64 arrays (M,)
    state : float64 array (4,)
    eta0, decay, lam, C : float
    n_total : int
    code : int
    fit_intercept : bool
    """
    M = w.shape[0]
    weighted = s.shape[0] > 0
    k = state[0]
    u = state[1]
    b = state[2]
    hb = state[3]
    for r in range(rows.shape[0]):
        i = order[r]
        k += 1.0
        eta = eta0 * decay ** (-(k - 1.0) / n_total)
        u += eta * lam / n_total
        f = -b
        for j in range(M):
            f += rows[r, j] * w[j]
        nd, _ = _derivatives(code, y[i] * f)
        # dl/df = -y nd
        coef = -C * y[i] * nd * (s[i] if weighted else 1.0)
        keep = 1.0 / k
        new = (k - 1.0) / k
        for j in range(M):
            h[j] = keep * h[j] + new * coef * rows[r, j]
            w[j] -= eta * h[j]
        if fit_intercept:
            hb = keep * hb + new * (-coef)
            b -= eta * hb
        for j in range(M):
            z = w[j]
            if z > 0.0:
                v = z - (u + q[j])
                w[j] = v if v > 0.0 else 0.0
            elif z < 0.0:
                v = z + (u - q[j])
                w[j] = v if v < 0.0 else 0.0
            q[j] += w[j] - z
    state[0] = k
    state[1] = u
    state[2] = b
    state[3] = hb
