"""Coordinate gradient descent (Tseng & Yun; seed 001, Algorithms 2 and 3).

Each iteration builds the diagonal quadratic model of the smooth part at
``w_k`` (``H = clip(diag ∇²f, 1e-10, 1e10)``, the paper's values), its
closed-form minimiser per coordinate ::

    d_j = -mid{ (g_j - lam) / H_jj,  w_j,  (g_j + lam) / H_jj }

picks the coordinates ``J = {j : |d_j| >= upsilon ||d||_inf}`` by the
Gauss–Southwell-r rule.  It then takes Tseng & Yun steps on the
one-coordinate blocks of ``J`` one after another (Gauss–Seidel order, the
paper's "CGD is Gauss–Seidel, FISTA is Jacobi"), each from a fresh
gradient and curvature of its coordinate and with the Armijo rule ::

    F(w + alpha d_j e_j) - F(w) <= sigma alpha Delta_j,
    Delta_j = g_j d_j + lam (|w_j + d_j| - |w_j|)

(Tseng & Yun's rule with ``gamma = 0``: the paper's printed ``delta_k``
lacks the l1 change and ``sigma``, the digest's erratum), ``alpha =
beta^i``.  Defaults: ``sigma = 0.1``, ``beta = 0.5`` (the digest's) and a
fixed ``upsilon = 0.1``.  Measured on a 1000 x 300 RFF problem at
0.5/0.2/0.1 ``lam_max``: 31/188/663 iterations to a 1e-6 gap with
``upsilon = 0.1``, 17/383/1675 with 0.9, and 28/571/2742 with one
Jacobi step over ``J`` and the adaptive ``upsilon`` the digest recalls
from Yun & Toh (which also left tiny nonzeros: 42 instead of 27).  The
unpenalised bias, when fitted, is set to its exact best value after every
iteration (``exact_bias=True``: the problem's 1-D Newton,
:meth:`L1Problem.best_bias`, O(N), no product with ``Φ``), so the
certificate's own bias search takes no step and costs no second ``Φ' r``;
``exact_bias=False`` takes one Newton step with Armijo first in each
iteration instead (a9a, 10,000 rows, 1,000 random features, 0.05 λ_max:
511 iterations).  The steps run in :func:`ultrafs.kernels.l1_steps.gauss_seidel_pass`
on the dense columns ``Φ[:, J]`` (the binary losses of the core:
logistic, squared hinge, by the loss's ``step_code``); any other binary
loss takes the same steps from its own methods
(:func:`ultrafs.solvers.loss_steps.gauss_seidel_pass_generic`).

``F`` never increases (every accepted step satisfies Armijo with
``Delta < 0``).  Stop: the relative duality gap at ``w_k``, checked every
``check_every`` iterations (free without intercept: the gap reuses the
gradient the step needs), ``<= tol``.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels.l1_steps import gauss_seidel_pass
from ultrafs.solvers.loss_steps import gauss_seidel_pass_generic, step_code
from ultrafs.solvers.l1_problem import L1Solution, make_solution

__all__ = ["cgd"]

H_MIN, H_MAX = 1e-10, 1e10
MAX_TRIALS = 60
#: iterations between fresh decision values (the updates accumulate rounding)
REFRESH = 50


def cgd(problem, w0=None, b0=None, *, tol=1e-6, max_iter=5000, check_every=1,
        sigma=0.1, beta=0.5, upsilon0=0.1, exact_bias=True,
        callback=None) -> L1Solution:
    """Solve an :class:`~ultrafs.solvers.l1_problem.L1Problem` by CGD.

    Parameters
    ----------
    problem : L1Problem
    w0, b0 : optional
        Warm start.
    tol : float
        Stop at a relative duality gap ``<= tol``.
    max_iter : int
    check_every : int
    sigma, beta : float in (0, 1)
        Armijo's sufficient-decrease and reduction factors.
    upsilon0 : float in (0, 1]
        Gauss–Southwell threshold.
    exact_bias : bool
        With an intercept, the exact best bias after every iteration
        (False: one Armijo-guarded Newton step on it per iteration).
    callback : callable, optional
        Called with each iteration's history record (``iter``,
        ``objective``, and ``gap`` / ``rel_gap`` at the checks).

    Returns
    -------
    L1Solution
        ``info``: ``trials`` (objective evaluations), ``mean_block``
        (average ``|J|``), ``upsilon``.
    """
    if not (0 < sigma < 1 and 0 < beta < 1 and 0 < upsilon0 <= 1):
        raise ParameterError("sigma and beta must lie in (0, 1), upsilon0 in (0, 1]")
    if not tol >= 0 or int(max_iter) < 1 or int(check_every) < 1:
        raise ParameterError("tol must be >= 0, max_iter and check_every >= 1")
    d = problem.datafit
    op = problem.operator
    lam = problem.lam
    fit_b = problem.fit_intercept
    exact = fit_b and bool(exact_bias)
    w, b = problem.start(w0, b0)
    w = np.ascontiguousarray(w)
    f = np.ascontiguousarray(problem.decision(w, b))
    if exact:
        b, f = problem.best_bias(w, b, f)
    code = step_code(d.loss)
    weights = np.empty(0) if d.sample_weight is None else d.sample_weight
    upsilon = float(upsilon0)
    trials = 0
    block_total = 0
    history = []
    cert = None
    converged = False
    k = 0
    l1 = float(np.sum(np.abs(w)))
    for k in range(int(max_iter) + 1):
        if k and k % REFRESH == 0:
            f = np.ascontiguousarray(problem.decision(w, b))
            if exact:
                b, f = problem.best_bias(w, b, f)
        val, deriv, second = problem.derivatives(f, hessian=True)
        g, h = problem.gradient(deriv, second)
        F = val + lam * l1
        record = {"iter": k, "objective": F}
        history.append(record)
        if k % int(check_every) == 0 or k == max_iter:
            cert = problem.certificate(w, b, f, grad=g, derivative=deriv)
            record.update(gap=cert.gap, rel_gap=cert.rel_gap)
            if cert.rel_gap <= tol:
                converged = True
        if callback is not None:
            callback(record)
        if converged or k == max_iter:
            break
        H = np.clip(h, H_MIN, H_MAX)
        lo = (g - lam) / H
        hi = (g + lam) / H
        dN = -np.maximum(lo, np.minimum(w, hi))
        if fit_b and not exact:
            g_b = problem.bias_gradient(deriv)
            H_b = float(np.clip(np.sum(second), H_MIN, H_MAX))
            d_b = -g_b / H_b
        else:
            g_b = d_b = 0.0
        top = max(float(np.max(np.abs(dN))) if len(dN) else 0.0, abs(d_b))
        if top == 0.0:
            cert = problem.certificate(w, b, f, grad=g, derivative=deriv)
            record.update(gap=cert.gap, rel_gap=cert.rel_gap)
            converged = cert.rel_gap <= tol
            break
        coords = np.flatnonzero(np.abs(dN) >= upsilon * top)
        block_total += len(coords)
        if fit_b and abs(d_b) >= upsilon * top:
            alpha = 1.0
            for _ in range(MAX_TRIALS):
                trials += 1
                change = d.value_change(f, np.full(d.n, -alpha * d_b))
                if change <= sigma * alpha * g_b * d_b:
                    b += alpha * d_b
                    f -= alpha * d_b
                    break
                alpha *= beta
        if len(coords):
            cols = op.columns(coords)
            if code is None:
                n_trials, _ = gauss_seidel_pass_generic(
                    d, cols, coords, w, f, lam, sigma, beta, MAX_TRIALS, H_MIN, H_MAX)
            else:
                n_trials, _ = gauss_seidel_pass(
                    cols, coords, w, f, d.y, weights, d.C, lam, code, sigma, beta,
                    MAX_TRIALS, H_MIN, H_MAX)
            trials += int(n_trials)
        if exact:
            b, f = problem.best_bias(w, b, f)
        l1 = float(np.sum(np.abs(w)))
    if cert is None or not converged:
        cert = problem.certificate(w, b)
        converged = cert.rel_gap <= tol
    n_iter = max(k, 0)
    return make_solution(problem, w, b, cert, converged, n_iter, "cgd", history,
                         {"trials": trials, "upsilon": upsilon,
                          "mean_block": block_total / max(n_iter, 1)}, tol=tol)
