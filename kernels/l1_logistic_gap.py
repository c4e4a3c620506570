"""The duality gap of l1-regularised logistic regression (the l1 path's kernel).

``l1_logistic_dual_gap(indptr, indices, data, columns, y, s, lam, coef, f, theta)``
    the primal value, a dual value and the duality gap, from a dual point
    made feasible (see its docstring).

The dual, for ``theta`` in ``[0, 1]^n``::

    D(theta) = (1/S) sum_i s_i H(theta_i),  H(t) = -t log t - (1 - t) log(1 - t),
    subject to  sum_i s_i y_i theta_i = 0,  |X_j' (s y theta)| <= S lam,

(Fenchel: ``log(1 + exp(-m)) = max_t H(t) - t m``), so ``F >= D`` for every
feasible ``theta``, with equality at ``theta_i = 1 / (1 + exp(y_i f_i))``
at the optimum.

``l1_logistic_gradient`` is the product ``X' r`` both use.
``dual_projection`` makes ``theta`` feasible for the equality, ``gap_values``
gives the primal, the dual and the gap of the point made feasible;
:func:`ultrafs.kernels.l1_logistic.l1_logistic_solve` calls both, the
tests and the certificate call ``l1_logistic_dual_gap``.  Kernels take raw
arrays only.
"""

import math

import numpy as np
from numba import njit

from .losses import softplus

__all__ = ["l1_logistic_dual_gap", "l1_logistic_gradient", "total_weight", "binary_entropy", "dual_projection",
           "gap_values"]


@njit(cache=True, nogil=True)
def l1_logistic_gradient(indptr, indices, data, columns, r, out):
    """Products of the optimised columns with a vector of the samples.

    Parameters
    ----------
    indptr : int64 array, shape (p + 1,)
    indices : int32 or int64 array, shape (nnz,)
    data : float32 or float64 array, shape (nnz,)
        The CSC arrays of ``X`` (n x p).
    columns : int64 array, shape (m,)
        Columns of ``X`` (positions into ``indptr``).
    r : float64 array, shape (n,)
    out : float64 array, shape (m,)
        Overwritten with ``X[:, columns]' r`` (each column's entries in
        stored order).

    Returns
    -------
    out : float64 array, shape (m,)
    """
    for k in range(columns.shape[0]):
        j = columns[k]
        acc = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            acc += np.float64(data[p]) * r[indices[p]]
        out[k] = acc
    return out


@njit(cache=True, nogil=True)
def total_weight(y, s):
    """``S = sum_i s_i`` (``n`` without weights)."""
    if s.shape[0] == 0:
        return float(y.shape[0])
    total = 0.0
    for i in range(s.shape[0]):
        total += s[i]
    return total


@njit(cache=True, nogil=True)
def binary_entropy(t):
    """``-t log t - (1 - t) log(1 - t)`` on ``[0, 1]`` (0 at the ends)."""
    h = 0.0
    if t > 0.0:
        h -= t * math.log(t)
    if t < 1.0:
        h -= (1.0 - t) * math.log1p(-t)
    return h


@njit(cache=True, nogil=True)
def dual_projection(y, s, theta, inv_total):
    """``theta - t y`` with ``t = sum_i s_i y_i theta_i / S``, clipped to
    ``[0, 1]``; whether no sample of positive weight needed the clip."""
    n = y.shape[0]
    weighted = s.shape[0] > 0
    shift = 0.0
    for i in range(n):
        si = s[i] if weighted else 1.0
        shift += si * y[i] * theta[i]
    shift *= inv_total
    feasible = True
    proj = np.empty(n)
    for i in range(n):
        t = theta[i] - shift * y[i]
        if (s[i] > 0.0 if weighted else True) and not (0.0 <= t <= 1.0):
            feasible = False
        proj[i] = min(max(t, 0.0), 1.0)
    return proj, shift, feasible


@njit(cache=True, nogil=True)
def gap_values(y, s, lam, coef, f, proj, top, total, feasible):
    """Primal, dual and gap once ``top = max_k |X_k' (s y proj)|`` is known."""
    weighted = s.shape[0] > 0
    inv_total = 1.0 / total
    l1 = 0.0
    for k in range(coef.shape[0]):
        l1 += abs(coef[k])
    kappa = 1.0
    if top > total * lam:
        kappa = total * lam / top
    primal = 0.0
    dual = 0.0
    gap = 0.0
    for i in range(y.shape[0]):
        si = s[i] if weighted else 1.0
        loss = softplus(-y[i] * f[i])
        h = binary_entropy(kappa * proj[i])
        primal += si * loss
        dual += si * h
        gap += si * (loss - h)
    primal = primal * inv_total + lam * l1
    if not feasible:
        return primal, np.nan, np.nan
    return primal, dual * inv_total, gap * inv_total + lam * l1


@njit(cache=True, nogil=True)
def l1_logistic_dual_gap(indptr, indices, data, columns, y, s, lam, coef, f,
                         theta):
    """Primal value, dual value and duality gap at a solver's point.

    The dual point is ``theta`` made feasible: ``theta' = theta - t y`` with
    ``t = sum_i s_i y_i theta_i / S`` (so that ``sum_i s_i y_i theta'_i =
    0``), then ``theta'' = kappa theta'`` with ``kappa = min(1, S lam /
    max_k |X_k' (s y theta')|)`` over the optimised columns.  When
    ``theta'`` leaves ``[0, 1]`` on a sample of positive weight there is no
    such point: the dual and the gap are NaN.  (:func:`l1_logistic_solve`
    returns the same three figures, from its last gradient.)

    Parameters
    ----------
    indptr, indices, data : CSC arrays of ``X``
    columns : int64 array, shape (m,)
    y : float64 array, shape (n,)
    s : float64 array, shape (n,) or (0,)
        Sample weights; empty: 1.
    lam : float
    coef : float64 array, shape (m,)
    f : float64 array, shape (n,)
        ``X[:, columns] coef + intercept``.
    theta : float64 array, shape (n,)
        Any point of ``[0, 1]^n`` (the solver's: ``1 / (1 + exp(y f))``).

    Returns
    -------
    primal : float
        ``F(coef, intercept)``.
    dual : float
        ``D(theta'')``, NaN when infeasible.
    gap : float
        ``primal - dual``, summed per sample; NaN when infeasible.
    """
    total = total_weight(y, s)
    proj, _, feasible = dual_projection(y, s, theta, 1.0 / total)
    weighted = s.shape[0] > 0
    v = np.empty(y.shape[0])
    for i in range(y.shape[0]):
        si = s[i] if weighted else 1.0
        v[i] = si * y[i] * proj[i]
    corr = np.empty(columns.shape[0])
    l1_logistic_gradient(indptr, indices, data, columns, v, corr)
    top = 0.0
    for k in range(corr.shape[0]):
        if abs(corr[k]) > top:
            top = abs(corr[k])
    return gap_values(y, s, lam, coef, f, proj, top, total, feasible)
