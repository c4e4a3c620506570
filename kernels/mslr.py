"""Kernels of minimax sparse logistic regression (seed 000, MSLR).

The reduced problem of MSLR's cutting plane is ``min_α max_t f_t(α)`` over
the open box ``(0, C)^n`` with ``f_t(α) = ½‖c_{S_t}(α)‖² + G(α)``,
``c(α) = Σ_i α_i y_i x_i`` and the entropy ``G``.  Algorithm 2 smooths the
max by ``(1/q) ln Σ_t exp(q f_t)`` and minimises it by coordinate descent
over the samples; each coordinate is the 1-D problem of Algorithm 3 (the
paper's Newton–bisection in the transformed variable of eq. 14), solved by
:func:`newton_bisection`.  :func:`cd_sweep` runs one sweep over the rows of
the cached columns (CSR); :func:`entropy` and :func:`primal_value` give the
certificate's terms (``ultrafs/solvers/smoothing_cd.py``).

Sample i's 1-D problem in ``z`` (the change of ``α_i``), with
``a_t = ‖x_{i,S_t}‖²``, ``b_t = y_i x_{i,S_t}'c``, ``sq_t = ½‖c_{S_t}‖²``,
``c1 = α_i``, ``c2 = C − α_i``::

    p(z)  = (c1+z) log(c1+z) + (c2−z) log(c2−z)
            + (1/q) ln Σ_t exp(q (sq_t + ½ a_t z² + b_t z))
    p'(z) = log((c1+z)/(c2−z)) + Σ_t λ_t (a_t z + b_t)
    p''(z)= (c1+c2)/((c1+z)(c2−z)) + Σ_t λ_t a_t
            + q [Σ_t λ_t (a_t z + b_t)² − (Σ_t λ_t (a_t z + b_t))²]

with ``λ = softmax_t(q (sq_t + ½ a_t z² + b_t z))``.  Both ``α_i`` and
``C − α_i`` are kept (``alpha``, ``alpha_c``) and updated from the
transformed variable, so neither is formed by a subtraction near a bound.

Kernels take raw arrays; nothing here knows of stores or Dask.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .losses import softplus

__all__ = ["box_floor", "softmax_weights", "one_d_value", "one_d_derivatives",
           "newton_bisection", "cd_sweep", "entropy", "entropy_weighted",
           "constraint_halves", "primal_value", "primal_value_weighted"]


@njit(cache=True, nogil=True)
def softmax_weights(q, sq, a, b, z, lam):
    """Fill ``lam`` with ``softmax_t(q (sq_t + ½ a_t z² + b_t z))`` (stable)."""
    T = sq.shape[0]
    top = -np.inf
    for t in range(T):
        e = q * (sq[t] + (0.5 * a[t] * z + b[t]) * z)
        lam[t] = e
        if e > top:
            top = e
    total = 0.0
    for t in range(T):
        lam[t] = math.exp(lam[t] - top)
        total += lam[t]
    for t in range(T):
        lam[t] /= total


@njit(cache=True, nogil=True)
def _xlogx(v):
    return v * math.log(v) if v > 0.0 else 0.0


@njit(cache=True, nogil=True)
def one_d_value(a, b, sq, c1, c2, q, z):
    """``p(z)`` of the module docstring (``z`` in ``[−c1, c2]``)."""
    T = sq.shape[0]
    top = -np.inf
    for t in range(T):
        e = q * (sq[t] + (0.5 * a[t] * z + b[t]) * z)
        if e > top:
            top = e
    total = 0.0
    for t in range(T):
        total += math.exp(q * (sq[t] + (0.5 * a[t] * z + b[t]) * z) - top)
    return _xlogx(c1 + z) + _xlogx(c2 - z) + (top + math.log(total)) / q


@njit(cache=True, nogil=True)
def one_d_derivatives(a, b, sq, c1, c2, q, z):
    """``(p'(z), p''(z))`` of the module docstring, for ``z`` in ``(−c1, c2)``."""
    T = sq.shape[0]
    lam = np.empty(T)
    softmax_weights(q, sq, a, b, z, lam)
    mean = 0.0
    second = 0.0
    curv = 0.0
    for t in range(T):
        u = a[t] * z + b[t]
        mean += lam[t] * u
        second += lam[t] * u * u
        curv += lam[t] * a[t]
    lo = c1 + z
    hi = c2 - z
    d1 = math.log(lo) - math.log(hi) + mean
    d2 = (c1 + c2) / (lo * hi) + curv + q * max(second - mean * mean, 0.0)
    return d1, d2


@njit(cache=True, nogil=True)
def box_floor(s):
    """Smallest value ``α_i`` and ``C − α_i`` take: ``1e-300 · max(s, 1)``.

    The 1-D root ``C σ(−margin)`` of a sample with a margin above about
    700 is not representable (its curvature ``s/(Z(s−Z))`` overflows);
    such a sample sits at the floor, where its weight in ``c(α)`` is
    below 1e-300, and counts as converged when its gradient points out
    of the box (a projected gradient).
    """
    return 1e-300 * max(s, 1.0)


@njit(cache=True, nogil=True)
def newton_bisection(a, b, sq, c1, c2, q, eps, max_iter, lam, g0=np.nan):
    """Minimise ``p`` over ``(−c1, c2)`` (Algorithm 3, safeguarded Newton).

    The root of ``p'`` is bracketed on the side of the midpoint ``z_m``
    where ``p'`` changes sign and sought in ``Z = c1 + z`` (left) or
    ``Z = c2 − z`` (right), ``Z`` in ``(0, s/2]``, ``s = c1 + c2``: the
    variable that is small near the bound it approaches, so it keeps its
    relative accuracy there (eq. 14).  A Newton step that leaves the
    bracket is replaced by bisection.  Where ``Z ≤ s/10`` the step is
    taken in ``log Z`` (``Z exp(δ/Z)``: Newton's step on ``p̂'`` as a
    function of ``log Z``, nearly exact where ``Z log Z`` dominates), and
    bisection of a bracket spanning orders of magnitude is geometric: the
    iterate reaches values like 1e-300 (margins of hundreds, as C = 10
    gives on the first constraints) and climbs back from them in a few
    steps, and never reaches 0.  Logarithms are taken of
    ``Z`` and ``s − Z`` apart: their ratio would underflow.

    Parameters
    ----------
    a, b, sq : float64 arrays, shape (T,)
    c1, c2 : float
        ``α_i`` and ``C − α_i``, both > 0.
    q : float
        Smoothing parameter (> 0).
    eps : float
        Stop when ``|p̂'(Z)| < eps``, or when the bracket is narrower than
        ``1e-15 Z`` (at large ``q`` ``p̂''`` is huge and ``|p̂'|`` cannot
        fall below about ``p̂'' ulp(Z)``; relative to ``Z``, so that a
        ``Z`` that must reach 1e-20 is not stopped at 1e-15).
    max_iter : int
        Newton / bisection steps at most.
    lam : float64 array, shape (T,)
        Scratch.
    g0 : float, optional
        ``p'(0)`` when the caller has it (:func:`cd_sweep` does): below
        ``eps`` nothing moves, and its sign with the side of 0 from ``z_m``
        often tells the side of the root without evaluating ``p'(z_m)``.

    Returns
    -------
    alpha : float
        The new ``α_i``.
    alpha_c : float
        The new ``C − α_i`` (``alpha + alpha_c == s`` up to rounding, both
        > 0).
    z : float
        ``alpha − c1``: the step taken.
    n_iter : int
        Derivative evaluations.
    """
    T = sq.shape[0]
    s = c1 + c2
    if abs(g0) < eps:                # p'(0) given and small: stay
        return c1, c2, 0.0, 0
    zm = 0.5 * (c2 - c1)
    if g0 >= 0.0 and zm >= 0.0:      # root in (−c1, 0] ⊂ (−c1, z_m]
        slope = 1.0
    elif g0 < 0.0 and zm <= 0.0:     # root in (0, c2) ⊂ [z_m, c2)
        slope = -1.0
    else:                            # p'(z_m): its log term is 0
        softmax_weights(q, sq, a, b, zm, lam)
        slope = 0.0
        for t in range(T):
            slope += lam[t] * (a[t] * zm + b[t])
    if slope >= 0.0:                 # root in (−c1, z_m]: Z = c1 + z
        sigma = 1.0
        co = c1
    else:                            # root in (z_m, c2): Z = c2 − z
        sigma = -1.0
        co = c2
    half = 0.5 * s
    floor = box_floor(s)
    lo = floor
    hi = half
    Z = co if (co > floor and co < half) else (floor if co <= floor else 0.25 * s)
    n_iter = 0
    for it in range(max_iter):
        n_iter += 1
        z = sigma * (Z - co)
        softmax_weights(q, sq, a, b, z, lam)
        mean = 0.0
        second = 0.0
        curv = 0.0
        for t in range(T):
            u = sigma * (a[t] * z + b[t])
            mean += lam[t] * u
            second += lam[t] * u * u
            curv += lam[t] * a[t]
        d1 = math.log(Z) - math.log(s - Z) + mean
        if abs(d1) < eps:
            break
        d2 = s / (Z * (s - Z)) + curv + q * max(second - mean * mean, 0.0)
        step = -d1 / d2
        if step > 0.0:
            if Z > lo:
                lo = Z
        else:
            if Z < hi:
                hi = Z
        if hi - lo <= 1e-15 * Z:
            break
        new = Z + step
        # Newton's step on p̂' in log Z: where Z is small p̂' is nearly
        # linear in log Z (Z log Z dominates), so this step is nearly exact
        # both ways, where the step in Z only moves by a factor |log Z|
        small = Z <= 0.1 * s
        if small:
            new = Z * math.exp(min(max(step / Z, -700.0), 700.0))
        if not (new > lo and new < hi):
            if step < 0.0 and lo == floor:
                new = floor                 # the root lies at or below the floor
            elif lo > 0.0 and hi > 4.0 * lo:
                new = math.sqrt(lo) * math.sqrt(hi)   # bisection in log Z
            else:
                new = 0.5 * (lo + hi)
        if new == Z:                       # no representable progress left
            break
        Z = new
    other = s - Z
    if sigma > 0.0:
        return Z, other, Z - c1, n_iter
    return other, Z, c2 - Z, n_iter


@njit(cache=True, nogil=True)
def cd_sweep(indptr, indices, data, y, member_ptr, member_idx, alpha, alpha_c, c,
             sq, q, eps, max_newton, order):
    """One coordinate-descent sweep of the smoothed reduced problem.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of the cached columns (n rows, p
        columns).
    y : float64 array, shape (n,)
        ±1 labels.
    member_ptr, member_idx : int64 arrays
        CSR of column → constraints: the constraints ``t`` holding column
        ``j`` are ``member_idx[member_ptr[j]:member_ptr[j+1]]``.
    alpha, alpha_c : float64 arrays, shape (n,)
        ``α`` and ``C − α``, updated in place.
    c : float64 array, shape (p,)
        ``c(α) = Σ_i α_i y_i x_i`` on the cached columns, updated in place.
    sq : float64 array, shape (T,)
        ``½‖c_{S_t}‖²``, updated in place.
    q : float
    eps : float
        Tolerance of each 1-D solve (on ``|p̂'|``).
    max_newton : int
    order : int64 array
        The rows in the order they are visited.

    Returns
    -------
    violation : float
        ``max_i |∂_i f(α, q)|`` over the sweep, each measured before its
        update (the CD stopping measure); a sample at the box floor whose
        gradient points out of the box does not count (:func:`box_floor`).
    newton : int
        1-D derivative evaluations of the sweep.
    """
    T = sq.shape[0]
    a = np.zeros(T)
    b = np.zeros(T)
    lam = np.empty(T)
    lam0 = np.empty(T)
    stale = True
    violation = 0.0
    newton = 0
    for k in range(order.shape[0]):
        i = order[k]
        for t in range(T):
            a[t] = 0.0
            b[t] = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            x = data[e]
            cj = c[j]
            for m in range(member_ptr[j], member_ptr[j + 1]):
                t = member_idx[m]
                a[t] += x * x
                b[t] += x * cj
        yi = y[i]
        for t in range(T):
            b[t] *= yi
        if stale:                    # λ at z = 0 depends on sq alone
            softmax_weights(q, sq, a, b, 0.0, lam0)
            stale = False
        g = math.log(alpha[i]) - math.log(alpha_c[i])
        for t in range(T):
            g += lam0[t] * b[t]
        floor = box_floor(alpha[i] + alpha_c[i])
        if not ((g > 0.0 and alpha[i] <= floor) or (g < 0.0 and alpha_c[i] <= floor)):
            if abs(g) > violation:
                violation = abs(g)
        new, new_c, z, n_it = newton_bisection(a, b, sq, alpha[i], alpha_c[i], q, eps,
                                               max_newton, lam, g)
        newton += n_it
        if z == 0.0:
            continue
        alpha[i] = new
        alpha_c[i] = new_c
        step = z * yi
        for e in range(indptr[i], indptr[i + 1]):
            c[indices[e]] += step * data[e]
        for t in range(T):
            sq[t] += (0.5 * a[t] * z + b[t]) * z
        stale = True
    return violation, newton


@njit(cache=True, nogil=True)
def entropy(alpha, alpha_c, C):
    """``G̃(α) = Σ_i α_i log(α_i/C) + (C−α_i) log((C−α_i)/C)`` (≤ 0).

    The paper's ``G`` less its constant ``n C log C``; computed from both
    ``α`` and ``C − α``, so no term cancels near a bound.
    """
    total = 0.0
    logC = math.log(C)
    for i in range(alpha.shape[0]):
        if alpha[i] > 0.0:
            total += alpha[i] * (math.log(alpha[i]) - logC)
        if alpha_c[i] > 0.0:
            total += alpha_c[i] * (math.log(alpha_c[i]) - logC)
    return total


@njit(cache=True, nogil=True)
def entropy_weighted(alpha, alpha_c, bounds):
    """``G̃(α)`` with a box per sample: ``Σ_i α_i log(α_i/C_i) + (C_i−α_i)
    log((C_i−α_i)/C_i)`` (≤ 0), ``C_i = bounds[i]`` (``C s_i`` for sample
    weights ``s``); a sample of weight 0 (``C_i = 0``, ``α_i = 0``) adds
    nothing.  With every ``C_i = C`` it equals :func:`entropy` bit for bit.
    """
    total = 0.0
    for i in range(alpha.shape[0]):
        if bounds[i] <= 0.0:
            continue
        logC = math.log(bounds[i])
        if alpha[i] > 0.0:
            total += alpha[i] * (math.log(alpha[i]) - logC)
        if alpha_c[i] > 0.0:
            total += alpha_c[i] * (math.log(alpha_c[i]) - logC)
    return total


@njit(cache=True, nogil=True)
def constraint_halves(c, member_ptr, member_idx, T):
    """``sq_t = ½‖c_{S_t}‖²`` for every constraint, from scratch."""
    sq = np.zeros(T)
    for j in range(c.shape[0]):
        w = 0.5 * c[j] * c[j]
        for m in range(member_ptr[j], member_ptr[j + 1]):
            sq[member_idx[m]] += w
    return sq


@njit(cache=True, nogil=True)
def primal_value(indptr, indices, data, y, v, C):
    """``C Σ_i log(1 + exp(−y_i x_i'v))`` on CSR rows (the loss part of P)."""
    total = 0.0
    for i in range(indptr.shape[0] - 1):
        f = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            f += data[e] * v[indices[e]]
        total += softplus(-y[i] * f)
    return C * total


@njit(cache=True, nogil=True)
def primal_value_weighted(indptr, indices, data, y, v, C, weights):
    """``C Σ_i s_i log(1 + exp(−y_i x_i'v))`` on CSR rows (``s = weights``);
    with every ``s_i = 1`` it equals :func:`primal_value` bit for bit."""
    total = 0.0
    for i in range(indptr.shape[0] - 1):
        if weights[i] == 0.0:
            continue
        f = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            f += data[e] * v[indices[e]]
        total += weights[i] * softplus(-y[i] * f)
    return C * total
