"""CGD's and SGD-C's steps for any binary loss, through the Loss object.

The numba kernels of :mod:`ultrafs.kernels.l1_steps` know the losses of
the core by an integer code, which the loss object carries
(:attr:`~ultrafs.solvers.losses.Loss.step_code`: ``Logistic`` and
``SquaredHinge`` set theirs).  A loss without one (a loss added by the
recipe of docs/ARCHITECTURE.md) takes the same steps here, computed from
its own methods (``value_derivative``, ``second_derivative``,
``value_change``): the same algorithm, in NumPy, slower, and equal to the
kernel's to rounding where both apply.

:func:`step_code` says which path a loss takes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["step_code", "gauss_seidel_pass_generic", "sgdc_steps_generic"]


def step_code(loss):
    """The kernels' integer code of ``loss``, or None for the generic path."""
    return getattr(loss, "step_code", None)


def gauss_seidel_pass_generic(datafit, cols, coords, w, f, lam, sigma, beta, max_trials,
                              h_min, h_max):
    """:func:`ultrafs.kernels.l1_steps.gauss_seidel_pass` from the loss's methods.

    Parameters
    ----------
    datafit : Datafit
        A binary datafit (its loss, ``y``, ``C``, ``sample_weight``).
    cols : float64 array (n, t)
        The columns ``Φ[:, coords]``.
    coords : int64 array (t,)
    w : float64 array (M,)
        Updated in place.
    f : float64 array (n,)
        ``Φ w - b``, updated in place.
    lam, sigma, beta, h_min, h_max : float
    max_trials : int

    Returns
    -------
    trials : int
    change : float
        Total change of ``F`` (``<= 0``).
    """
    loss, y, C, s = datafit.loss, datafit.y, datafit.C, datafit.sample_weight
    derivative = np.empty(len(f))
    trials = 0
    total = 0.0
    for t in range(len(coords)):
        j = coords[t]
        x = cols[:, t]
        loss.value_derivative(y, f, derivative, weights=s)
        second = loss.second_derivative(y, f, weights=s)
        g = C * float(derivative @ x)
        h = min(max(C * float(second @ (x * x)), h_min), h_max)
        wj = w[j]
        d = -min(max(wj, (g - lam) / h), (g + lam) / h)
        if d == 0.0:
            continue
        delta = g * d + lam * (abs(wj + d) - abs(wj))
        alpha = 1.0
        accepted = False
        for _ in range(max_trials):
            trials += 1
            change = (C * loss.value_change(y, f, alpha * d * x, weights=s)
                      + lam * (abs(wj + alpha * d) - abs(wj)))
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
        f += step * x
        total += change
    return trials, total


def sgdc_steps_generic(datafit, rows, order, w, h, q, state, eta0, decay, n_total, lam,
                       fit_intercept):
    """:func:`ultrafs.kernels.l1_steps.sgdc_steps` from the loss's methods.

    Parameters
    ----------
    datafit : Datafit
    rows : float64 array (r, M)
        ``Φ`` rows of the samples ``order``.
    order : int64 array (r,)
    w, h, q : float64 arrays (M,)
        Updated in place.
    state : float64 array (4,)
        ``[k, u, b, h_b]``, updated in place.
    eta0, decay, n_total, lam : float
    fit_intercept : bool
    """
    loss, y, C, s = datafit.loss, datafit.y, datafit.C, datafit.sample_weight
    k, u, b, hb = (float(v) for v in state)
    for r in range(rows.shape[0]):
        i = order[r]
        k += 1.0
        eta = eta0 * decay ** (-(k - 1.0) / n_total)
        u += eta * lam / n_total
        f = np.array([float(rows[r] @ w) - b])
        slope = float(loss.derivative(y[i:i + 1], f)[0])       # dl/df
        coef = C * slope * (1.0 if s is None else float(s[i]))
        keep = 1.0 / k
        new = (k - 1.0) / k
        h *= keep
        h += new * coef * rows[r]
        w -= eta * h
        if fit_intercept:
            hb = keep * hb + new * (-coef)
            b -= eta * hb
        z = w.copy()
        w[:] = np.where(z > 0.0, np.maximum(z - (u + q), 0.0),
                        np.where(z < 0.0, np.minimum(z + (u - q), 0.0), 0.0))
        q += w - z
    state[:] = (k, u, b, hb)
