"""Proximal Newton's model solvers with K outputs per sample (multi-class).

``l21sq_model_bcd_k``, ``l21sq_model_polish_k`` and
``l21sq_model_residual_k`` are the model solvers of
:mod:`ultrafs.kernels.prox_newton` with ``nb`` intercepts, eliminated
through ``bias_pseudo_inverse(H, p, fit_intercept)`` (the pseudo-inverse of
their block: the multinomial one is singular along ``(1, ..., 1)``).  The
Hessian ``H`` is :func:`ultrafs.kernels.hessian_gram.csr_multi_gram`'s
(coefficient ``(j, k)`` at ``j K + k``, the K intercepts last).
"""

import math

import numpy as np
from numba import njit

from .prox_newton import (STALL_SWEEPS, eigen_block_step, eigen_offsets, keep_eigen,
                          model_block_norms, model_kkt)

__all__ = ["bias_pseudo_inverse", "l21sq_model_bcd_k", "l21sq_model_polish_k",
           "l21sq_model_residual_k"]


@njit(cache=True, nogil=True)
def bias_pseudo_inverse(H, p, fit_intercept):
    """The pseudo-inverse of the intercepts' block ``H[p:, p:]`` (``p``: coefficients).

    Eigenvalues at most ``1e-12`` times the largest count as zero (the
    multinomial intercepts' Hessian is singular along ``(1, ..., 1)``, along
    which no gradient exists).  Zero (the intercepts do not move) without an
    intercept or without curvature.
    """
    nb = H.shape[0] - p
    Binv = np.zeros((nb, nb))
    if not fit_intercept or nb == 0:
        return Binv
    B = np.ascontiguousarray(H[p:, p:])
    ev, Q = np.linalg.eigh(B)
    top = 0.0
    for k in range(nb):
        if ev[k] > top:
            top = ev[k]
    if not (top > 1e-300 and math.isfinite(top)):
        return Binv
    for k in range(nb):
        if ev[k] > 1e-12 * top:
            inv = 1.0 / ev[k]
            for s in range(nb):
                for t in range(nb):
                    Binv[s, t] += Q[s, k] * inv * Q[t, k]
    return Binv


@njit(cache=True, nogil=True)
def _moves_bias(Binv):
    for s in range(Binv.shape[0]):
        if Binv[s, s] != 0.0:
            return True
    return False


@njit(cache=True, nogil=True)
def _model_gradient_k(H, g, coef, bias, z, c, use_bias):
    """``r = g + H d`` with ``d = (z - coef, c - bias)`` (``d_b = 0`` if fixed)."""
    p = len(coef)
    size = len(g)
    d = np.zeros(size)
    for j in range(p):
        d[j] = z[j] - coef[j]
    if use_bias:
        for k in range(size - p):
            d[p + k] = c[k] - bias[k]
    r = g.copy()
    for k in range(size):
        if d[k] != 0.0:
            for i in range(size):
                r[i] += H[k, i] * d[k]
    return r


@njit(cache=True, nogil=True)
def _model_kkt_k(r, z, norms, block_ptr, p, use_bias):
    """:func:`model_kkt` with the intercepts' gradient ``r[p:]`` (its norm)."""
    res = model_kkt(r, z, norms, block_ptr, p, False)
    if not use_bias:
        return res
    rb = 0.0
    for k in range(p, len(r)):
        rb += r[k] * r[k]
    rb = math.sqrt(rb)
    if rb == 0.0:
        return res
    scale = 0.0
    for h in range(len(norms)):
        acc = 0.0
        for j in range(block_ptr[h], block_ptr[h + 1]):
            acc += r[j] * r[j]
        acc = math.sqrt(acc)
        if acc > scale:
            scale = acc
    if scale == 0.0:
        return math.inf
    return max(res, rb / scale)


@njit(cache=True, nogil=True)
def l21sq_model_residual_k(H, g, coef, bias, block_ptr, Binv, z, c):
    """Relative KKT residual of the model at ``(z, c)`` (:func:`l21sq_model_bcd_k`)."""
    p = len(coef)
    use_bias = _moves_bias(Binv)
    r = _model_gradient_k(H, g, coef, bias, z, c, use_bias)
    return _model_kkt_k(r, z, model_block_norms(z, block_ptr), block_ptr, p, use_bias)


@njit(cache=True, nogil=True)
def _bias_move(Binv, r, p, E, nb):
    """``-Binv (r[p:] + E)``."""
    dc = np.zeros(nb)
    for s in range(nb):
        acc = 0.0
        for t in range(nb):
            acc += Binv[s, t] * (r[p + t] + E[t])
        dc[s] = -acc
    return dc


@njit(cache=True, nogil=True)
def l21sq_model_bcd_k(H, g, coef, bias, block_ptr, Binv, tol, max_sweeps, z, c,
                      vecs, vals, have):
    """:func:`l21sq_model_bcd` with ``nb`` intercepts (K outputs per sample).

    The same method: each block update minimises the model exactly over
    ``z_h`` and the intercepts ``c`` together, ``c`` eliminated by the
    Schur complement ``H_hh - E Binv E'`` (``E = H[h, p:]``, ``Binv`` the
    pseudo-inverse of the intercepts' block, :func:`bias_pseudo_inverse`).

    Parameters
    ----------
    H : ndarray of float64, shape (p + nb, p + nb)
        Hessian of the smooth part over ``(w, b)`` (indices ``p:``: ``b``).
    g : ndarray of float64, shape (p + nb,)
    coef : ndarray of float64, shape (p,)
    bias : ndarray of float64, shape (nb,)
    block_ptr : ndarray of int64, shape (t + 1,)
    Binv : ndarray of float64, shape (nb, nb)
        Zero: the intercepts stay at ``bias``.
    tol, max_sweeps
        As in :func:`l21sq_model_bcd`.
    z : ndarray of float64, shape (p,)
        Start, overwritten with the point reached.
    c : ndarray of float64, shape (nb,)
        Start of the intercepts, overwritten.
    vecs, vals, have
        :func:`eigen_workspace` of ``block_ptr`` for this ``H``.

    Returns
    -------
    sweeps : int
    residual : float
    """
    p = len(coef)
    nb = len(bias)
    t = len(block_ptr) - 1
    use_bias = _moves_bias(Binv)
    if not use_bias:
        c[:] = bias
    r = _model_gradient_k(H, g, coef, bias, z, c, use_bias)
    norms = model_block_norms(z, block_ptr)
    offsets = eigen_offsets(block_ptr)
    residual = _model_kkt_k(r, z, norms, block_ptr, p, use_bias)
    checkpoint = residual
    sweeps = 0
    zero_nb = np.zeros(nb)
    while residual > tol and sweeps < max_sweeps:
        sweeps += 1
        moved = False
        total = 0.0
        for h in range(t):
            total += norms[h]
        for h in range(t):
            lo, hi = block_ptr[h], block_ptr[h + 1]
            m = hi - lo
            if m == 0:
                continue
            lam = total - norms[h]
            if lam < 0.0:
                lam = 0.0
            # w = Binv (E' z_h - r_b): q = r_h - H_hh z_h + E w
            wv = np.zeros(nb)
            if use_bias:
                ez = np.zeros(nb)
                for s in range(nb):
                    acc = -r[p + s]
                    for k in range(m):
                        acc += H[lo + k, p + s] * z[lo + k]
                    ez[s] = acc
                for s in range(nb):
                    acc = 0.0
                    for k in range(nb):
                        acc += Binv[s, k] * ez[k]
                    wv[s] = acc
            q = np.empty(m)
            nq2 = 0.0
            for i in range(m):
                row = lo + i
                acc = r[row]
                for k in range(m):
                    acc -= H[row, lo + k] * z[lo + k]
                if use_bias:
                    for s in range(nb):
                        acc += H[row, p + s] * wv[s]
                q[i] = acc
                nq2 += acc * acc
            nq = math.sqrt(nq2)
            if nq <= lam:
                u = np.zeros(m)
            else:
                if not have[h]:
                    A = np.empty((m, m))
                    for i in range(m):
                        for j in range(m):
                            A[i, j] = H[lo + i, lo + j]
                    if use_bias:
                        EB = np.zeros((m, nb))
                        for i in range(m):
                            for s in range(nb):
                                acc = 0.0
                                for k in range(nb):
                                    acc += H[lo + i, p + k] * Binv[k, s]
                                EB[i, s] = acc
                        for i in range(m):
                            for j in range(m):
                                acc = 0.0
                                for s in range(nb):
                                    acc += EB[i, s] * H[lo + j, p + s]
                                A[i, j] -= acc
                        for i in range(m):  # symmetric to the rounding
                            for j in range(i + 1, m):
                                v = 0.5 * (A[i, j] + A[j, i])
                                A[i, j] = v
                                A[j, i] = v
                    keep_eigen(A, vals, vecs, offsets, h, lo)
                    have[h] = True
                u = eigen_block_step(vals, vecs, offsets, h, lo, hi, q, lam)
            for k in range(m):
                if H[lo + k, lo + k] == 0.0:
                    u[k] = 0.0  # no curvature: decoupled, its minimiser is 0
            dc = zero_nb
            if use_bias:
                E = np.zeros(nb)
                for s in range(nb):
                    acc = 0.0
                    for k in range(m):
                        acc += H[lo + k, p + s] * (u[k] - z[lo + k])
                    E[s] = acc
                dc = _bias_move(Binv, r, p, E, nb)
            nu = 0.0
            for k in range(m):
                du = u[k] - z[lo + k]
                if du != 0.0:
                    moved = True
                    row = lo + k
                    for i in range(p + nb):
                        r[i] += H[row, i] * du
                z[lo + k] = u[k]
                nu += u[k] * u[k]
            if use_bias:
                for s in range(nb):
                    if dc[s] != 0.0:
                        for i in range(p + nb):
                            r[i] += H[p + s, i] * dc[s]
                        moved = moved or c[s] + dc[s] != c[s]
                        c[s] += dc[s]
            nu = math.sqrt(nu)
            total += nu - norms[h]
            norms[h] = nu
        if use_bias:
            dc = _bias_move(Binv, r, p, zero_nb, nb)
            for s in range(nb):
                if c[s] + dc[s] != c[s]:
                    moved = True
                    for i in range(p + nb):
                        r[i] += H[p + s, i] * dc[s]
                    c[s] += dc[s]
        residual = _model_kkt_k(r, z, norms, block_ptr, p, use_bias)
        if not moved:
            break
        if sweeps % STALL_SWEEPS == 0:
            if residual > 0.999 * checkpoint:
                break
            checkpoint = residual
    return sweeps, residual


@njit(cache=True, nogil=True)
def l21sq_model_polish_k(H, g, coef, bias, block_ptr, Binv, z, c):
    """:func:`l21sq_model_polish` with ``nb`` intercepts; ``z`` and ``c``
    are overwritten only when the step lowers the model's residual.

    Returns
    -------
    residual : float
    """
    p = len(coef)
    nb = len(bias)
    t = len(block_ptr) - 1
    use_bias = _moves_bias(Binv)
    r = _model_gradient_k(H, g, coef, bias, z, c, use_bias)
    norms = model_block_norms(z, block_ptr)
    start = _model_kkt_k(r, z, norms, block_ptr, p, use_bias)
    total = 0.0
    m = 0
    for h in range(t):
        total += norms[h]
        if norms[h] > 0.0:
            m += block_ptr[h + 1] - block_ptr[h]
    if m == 0:
        return start
    idx = np.empty(m, dtype=np.int64)
    blk = np.empty(m, dtype=np.int64)
    a = 0
    for h in range(t):
        if norms[h] > 0.0:
            for j in range(block_ptr[h], block_ptr[h + 1]):
                idx[a] = j
                blk[a] = h
                a += 1
    extra = nb if use_bias else 0
    size = m + extra
    K = np.empty((size, size))
    rhs = np.empty(size)
    unit = np.empty(m)
    for a in range(m):
        unit[a] = z[idx[a]] / norms[blk[a]]
    biggest = 0.0
    for a in range(m):
        for b in range(m):
            v = H[idx[a], idx[b]] + unit[a] * unit[b]
            if blk[a] == blk[b]:
                v += total / norms[blk[a]] * ((1.0 if a == b else 0.0) - unit[a] * unit[b])
            K[a, b] = v
        for s in range(extra):
            K[a, m + s] = H[idx[a], p + s]
            K[m + s, a] = H[idx[a], p + s]
        rhs[a] = -(r[idx[a]] + total * unit[a])
        if K[a, a] > biggest:
            biggest = K[a, a]
    for s in range(extra):
        for s2 in range(extra):
            K[m + s, m + s2] = H[p + s, p + s2]
        rhs[m + s] = -r[p + s]
        if K[m + s, m + s] > biggest:
            biggest = K[m + s, m + s]
    for a in range(size):
        K[a, a] += 1e-13 * biggest
    step = np.linalg.solve(K, rhs)
    trial = z.copy()
    ct = c.copy()
    scale = 1.0
    for _ in range(20):
        for a in range(m):
            trial[idx[a]] = z[idx[a]] + scale * step[a]
        for s in range(extra):
            ct[s] = c[s] + scale * step[m + s]
        residual = l21sq_model_residual_k(H, g, coef, bias, block_ptr, Binv, trial, ct)
        if residual < start:
            for a in range(m):
                z[idx[a]] = trial[idx[a]]
            c[:] = ct
            return residual
        scale *= 0.5
    return start
