"""Proximal Newton for the FGM subproblem (paper eq. 30).

Problem: ``min_{w, b} F(w, b) = Omega(w) + P(w, b)`` with ``Omega(w) = 1/2
(sum_h ||w_h||)^2`` and ``P = C sum_i l(y_i, f_i)``, ``f = X w - b``, for a
loss with a (generalised) second derivative (logistic, squared hinge;
binary, or K classes: then ``w`` holds K weights per column, ``b`` K
intercepts, and the Hessian and the model below are over all of them).
Few columns (FGM's selected ones), many rows.

Each iteration, at ``theta = (w, b)`` (Lee, Sun & Saunders 2014,
"Proximal Newton-type methods for minimizing composite functions"):

1. ``d = l'(f)``, ``grad = C X' d``, ``dP/db = -C sum_i d_i``; the relative
   KKT residual :func:`~ultrafs.solvers.subproblem.kkt_residual` (APG's
   certificate).  The solve stops when it is at most ``kkt_tol`` and the
   last step decreased ``F`` by at most ``tol`` relative (with
   ``kkt_tol=None``: on that decrease alone).
2. The Hessian of ``P`` over ``(w, b)`` jointly, ``H = C X~' diag(l''(f))
   X~`` with ``X~ = [X, -1]``, dense ``(p + 1) x (p + 1)``, built from the
   rows of ``X`` in ``O(sum_i nnz_i^2)`` (:meth:`Datafit.hessian`; K
   classes: ``C sum_i ([x_i, -1]' [x_i, -1]) kron W_i``, ``W_i`` the loss's
   K x K Hessian, in ``O(K^2 sum_i (nnz_i + 1)^2)``).  The Hessian is the
   step's dominant cost (on imdb, B = 30, T = 10: 72% of the solves, the
   model's sweeps 1%), so it is kept for the next step when the last step
   was a full one (``s = 1``) and either cut the relative residual at least
   fourfold or changed ``F`` by the model's predicted change within 10%
   (``reuse_hessian``): the model is then still a good one, and a
   step on it costs a gradient and a line search, O(nnz), against
   ``sum_i nnz_i^2`` for a new Hessian.  A kept Hessian whose direction
   finds no decrease is replaced at once by the current point's.  The
   stop (the certificate) is unchanged.
3. The model ``grad' d + 1/2 d' H d + Omega(w + d_w)`` (the penalty exact,
   on ``w`` only) is minimised by block coordinate descent with exact block
   solves (:func:`ultrafs.kernels.prox_newton.l21sq_model_bcd`: each block
   jointly with the intercept, through the eigenvalues of its Schur
   complement, so badly scaled columns within a block cost nothing; K
   intercepts are eliminated through the pseudo-inverse of their block,
   :func:`ultrafs.kernels.prox_newton_multi.l21sq_model_bcd_k`), from
   ``d = 0``, until the model's own relative KKT residual is at most
   ``min(0.1, r) min(1, r)`` with ``r`` the current residual (an inexact
   Newton method whose forcing term goes to 0, so the outer convergence
   stays superlinear), at least ``1e-13``, or until a sweep moves nothing
   or ``max_sweeps`` sweeps.  Any model decrease gives a descent direction.
4. Backtracking on the true objective (Armijo with the penalty term, Lee
   et al. eq. 2.20): ``s = 1, 1/2, ...`` until ``F(theta + s d) - F(theta)
   <= alpha s Delta``, ``Delta = grad' d + Omega(w + d_w) - Omega(w) < 0``,
   ``alpha = 1e-4``.  ``X d`` is formed once, so a trial costs ``O(n)``,
   and both sides are computed as sums of per-sample changes, never as a
   difference of two objectives: near the optimum the decrease still to
   be made at a residual ``r`` is about ``(r ||grad||)^2 / curvature``,
   far below the rounding of ``F`` (a sum of n losses) long before ``r``
   reaches ``kkt_tol`` (on a9a, 34,000 rows, it is 1e-13 against F = 1e5
   at ``r = 1e-4``: a test on the values alone stalls there).  A model that
   predicts no decrease, a step that moves nothing in floating point, or
   50 halvings end the solve, converged if the certificate holds.

The step size 1 is taken near the optimum, where the convergence is
quadratic for the logistic loss; the generalised Hessian of the squared
hinge gives a semismooth Newton method.  ``max_iter`` caps the iterations
(``converged=False`` then).  The returned ``lipschitz`` is the largest
eigenvalue of the last Hessian in ``w`` (a curvature APG can start from).
"""

from __future__ import annotations

import math

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels.prox import block_norms as _block_norms
from ultrafs.kernels.prox_newton import eigen_workspace, l21sq_model_bcd, l21sq_model_polish
from ultrafs.kernels.prox_newton_multi import (bias_pseudo_inverse, l21sq_model_bcd_k,
                                               l21sq_model_polish_k)
from ultrafs.solvers.base import Solver, set_stop_params
from ultrafs.solvers.blas_threads import one_blas_thread
from ultrafs.solvers.penalties import L21Squared
from ultrafs.solvers.subproblem import (DEFAULT_KKT_TOL, SubproblemResult, as_bias,
                                        kkt_residual)

__all__ = ["ProxNewton"]

DEFAULT_MAX_ITER = 100
#: sweeps of the inner block coordinate descent per Newton step
DEFAULT_MAX_SWEEPS = 1000
# Fewest sweeps of a round of block coordinate descent between two Newton
# steps of the model.
_MIN_ROUND = 20
_ARMIJO = 1e-4
_MAX_BACKTRACKS = 50
# Floor of the inner tolerance: BCD sweeps past it only chase rounding.
_MIN_INNER_TOL = 1e-13
# A Hessian is kept for the next step when the last step was a full one and
# cut the relative KKT residual at least by this factor.
_REUSE_CONTRACTION = 0.25
# ... or when its decrease was the model's predicted one within this share.
_REUSE_AGREEMENT = 0.1
# Power iterations for the returned curvature estimate.
_POWER_ITER = 30


class ProxNewton(Solver):
    """Proximal Newton solver of the binary l2,1-squared subproblem.

    Parameters
    ----------
    tol : float, default 1e-3
        Relative decrease of ``F`` by the last step required, with the
        certificate, to stop (alone when ``kkt_tol`` is None).
    kkt_tol : float or None, default 1e-4
        Largest relative KKT residual accepted at the stop.
    max_iter : int, default 100
        Maximum number of Newton iterations.
    fit_intercept : bool, default True
    max_sweeps : int, default 1000
        Maximum sweeps of the inner block coordinate descent.
    reuse_hessian : bool, default True
        Keep the last Hessian for the next step when the last step was a
        full one and cut the residual at least fourfold or matched the
        model's predicted decrease within 10% (see the module notes);
        False builds one at every step.
    """

    datafit_required = ("value", "value_derivative", "gradient", "decision",
                        "bias_gradient", "hessian", "value_change")
    penalty_required = ("value", "subdiff_distance")

    def __init__(self, *, tol=1e-3, kkt_tol=DEFAULT_KKT_TOL, max_iter=DEFAULT_MAX_ITER,
                 fit_intercept=True, max_sweeps=DEFAULT_MAX_SWEEPS, reuse_hessian=True):
        set_stop_params(self, tol, kkt_tol, max_iter, fit_intercept)
        self.reuse_hessian = bool(reuse_hessian)
        if int(max_sweeps) < 1:
            raise ParameterError(f"max_sweeps must be >= 1, got {max_sweeps!r}")
        self.max_sweeps = int(max_sweeps)

    def check_capabilities(self, datafit, penalty) -> None:
        """Also require a second-order loss and the l2,1-squared penalty."""
        super().check_capabilities(datafit, penalty)
        if not getattr(datafit.loss, "second_order", False):
            raise ParameterError(
                f"{type(self).__name__} needs a loss with a second derivative and "
                f"an accurate value change; {datafit.loss!r} has none")
        if not isinstance(penalty, L21Squared):
            raise ParameterError(
                f"{type(self).__name__} minimises its model with the block prox "
                f"of the l2,1-squared penalty only; got {penalty!r}")

    # -- pieces -------------------------------------------------------------
    def _state(self, pb, coef, bias, f, d):
        """Value, gradients and certificate at ``(coef, bias)`` (decision ``f``).

        ``d``: a buffer of ``n`` floats for the loss derivatives (overwritten;
        one per solve spares an n-vector's page faults per step).
        """
        value = pb.penalty.value(coef, pb.block_ptr) + pb.datafit.value_derivative(f, d)
        grad = pb.gradient(d)
        if self.fit_intercept:
            grad_b = pb.datafit.bias_gradient(d)
        else:
            grad_b = 0.0 if pb.datafit.n_outputs == 1 else np.zeros(pb.datafit.n_outputs)
        kkt, _ = kkt_residual(pb, coef, grad, grad_b, self.fit_intercept)
        return value, grad, grad_b, kkt

    def _direction(self, pb, H, grad, grad_b, coef, bias, kkt):
        """Minimise the model from ``(coef, bias)``; return its point ``(z, c)``.

        Block coordinate descent in rounds of ``max(20, (p + 1) / 6)``
        sweeps (about the cost of one dense factorisation of size ``p``),
        each round followed, while the residual is above the inner
        tolerance, by a Newton step on the nonzero blocks
        (:func:`~ultrafs.kernels.prox_newton.l21sq_model_polish`).
        """
        tol = max(min(0.1, kkt) * min(1.0, kkt), _MIN_INNER_TOL)
        if pb.datafit.n_outputs > 1:
            return self._direction_k(pb, H, grad, grad_b, coef, bias, tol)
        g = np.empty(pb.p + 1)
        g[:-1] = grad
        g[-1] = grad_b
        z = np.array(coef, dtype=np.float64)
        c = float(bias)
        workspace = eigen_workspace(pb.block_ptr)
        chunk = max(_MIN_ROUND, (pb.p + 1) // 6)
        args = (H, g, coef, float(bias), pb.block_ptr, self.fit_intercept)
        c, used, residual = l21sq_model_bcd(*args, tol, min(chunk, self.max_sweeps), z, c,
                                            *workspace)
        while residual > tol and used < self.max_sweeps:
            c, polished = l21sq_model_polish(*args, z, c)
            if polished <= tol:
                break
            c, sweeps, swept = l21sq_model_bcd(*args, tol,
                                               min(chunk, self.max_sweeps - used), z, c,
                                               *workspace)
            used += sweeps
            if swept >= residual and polished >= residual:
                break  # neither makes progress: the rounding floor
            residual = swept
        return z, c

    def _direction_k(self, pb, H, grad, grad_b, coef, bias, tol):
        """:meth:`_direction` with K intercepts (``bias`` of shape (K,)):
        the same rounds, by :func:`~ultrafs.kernels.prox_newton_multi.l21sq_model_bcd_k`
        and :func:`~ultrafs.kernels.prox_newton_multi.l21sq_model_polish_k`."""
        bias = np.asarray(bias, dtype=np.float64)
        g = np.concatenate([grad, np.zeros(len(bias)) if np.ndim(grad_b) == 0
                            else grad_b])
        Binv = bias_pseudo_inverse(H, pb.p, self.fit_intercept)
        z = np.array(coef, dtype=np.float64)
        c = bias.copy()
        workspace = eigen_workspace(pb.block_ptr)
        chunk = max(_MIN_ROUND, len(g) // 6)
        args = (H, g, coef, bias, pb.block_ptr, Binv)
        used, residual = l21sq_model_bcd_k(*args, tol, min(chunk, self.max_sweeps), z, c,
                                           *workspace)
        while residual > tol and used < self.max_sweeps:
            polished = l21sq_model_polish_k(*args, z, c)
            if polished <= tol:
                break
            sweeps, swept = l21sq_model_bcd_k(*args, tol,
                                              min(chunk, self.max_sweeps - used), z, c,
                                              *workspace)
            used += sweeps
            if swept >= residual and polished >= residual:
                break
            residual = swept
        return z, c

    def _line_search(self, pb, f, coef, bias, grad, grad_b, z, c):
        """Armijo backtracking along ``d = (z - coef, c - bias)``.

        A step ``s`` is taken when ``F(theta + s d) - F(theta) <= alpha s
        Delta``.  Both sides are computed as changes, term by term
        (:meth:`Datafit.value_change`, :func:`_penalty_change`), never as
        differences of two objectives: near the optimum the decrease
        ``~ (r ||grad||)^2 / curvature`` at a residual ``r`` falls below the
        rounding of ``F`` (a sum of n losses) long before ``r`` reaches
        ``kkt_tol``.

        Returns
        -------
        (coef, bias, decision, change, step) of the accepted point,
        ``change`` being ``F(new) - F(theta)`` (< 0); or None when no trial is accepted
        or the model predicts no decrease.
        """
        dw = z - coef
        db = c - bias
        if np.array_equal(bias + db, bias) and np.array_equal(coef + dw, coef):
            return None  # no representable move
        delta = (float(grad @ dw) + float(np.dot(grad_b, db))
                 + _penalty_change(coef, dw, pb.block_ptr))
        if not delta < 0.0:
            return None
        xd = pb.decision(dw, db)
        step = 1.0
        for _ in range(_MAX_BACKTRACKS):
            # the full step (the usual one) as xd itself: 1.0 * xd is xd
            step_f = xd if step == 1.0 else step * xd
            change = (pb.datafit.value_change(f, step_f)
                      + _penalty_change(coef, step * dw, pb.block_ptr))
            if change <= _ARMIJO * step * delta:
                # f + step_f into step_f's memory: no third n-vector
                return (coef + step * dw, bias + step * db,
                        np.add(f, step_f, out=step_f), change, step)
            step *= 0.5
        return None

    def _converged(self, kkt, decrease, previous):
        """The stop: certificate (if any) and the last relative decrease."""
        small_decrease = decrease is not None and decrease <= self.tol * previous
        if self.kkt_tol is None:
            return small_decrease
        return kkt <= self.kkt_tol and (decrease is None or small_decrease)

    # -- the loop -------------------------------------------------------------
    def solve(self, pb, coef0, bias0, lipschitz0):
        """Run proximal Newton from ``(coef0, bias0)``.

        Parameters
        ----------
        pb : Problem
        coef0 : ndarray of float64, shape (p,)
        bias0 : float
        lipschitz0 : float
            Returned as ``lipschitz`` when no Hessian is formed.

        Returns
        -------
        SubproblemResult
        """
        self.check_capabilities(pb.datafit, pb.penalty)
        with one_blas_thread():
            return self._solve(pb, coef0, bias0, lipschitz0)

    def _solve(self, pb, coef0, bias0, lipschitz0):
        coef = np.array(coef0, dtype=np.float64)
        bias = (float(bias0) if pb.datafit.n_outputs == 1
                else np.array(bias0, dtype=np.float64))
        history = []
        converged = False
        decrease = previous = value = None
        H = None
        full_step, kkt_step, agreement = False, math.inf, math.inf
        # the decision is carried from step to step (X d is formed for the
        # line search anyway), and the objective by its accurate changes: the
        # history decreases strictly, even below the rounding of F itself
        f = pb.decision(coef, bias)
        derivative = np.empty(pb.datafit.decision_size)
        for n_iter in range(1, self.max_iter + 1):
            fresh_value, grad, grad_b, kkt = self._state(pb, coef, bias, f, derivative)
            if value is None:
                value = fresh_value
            if self._converged(kkt, decrease, previous):
                converged = True
                history.append(value)
                break
            reuse = (self.reuse_hessian and H is not None and full_step
                     and (kkt <= _REUSE_CONTRACTION * kkt_step
                          or abs(agreement - 1.0) <= _REUSE_AGREEMENT))
            if not reuse:
                H = pb.datafit.hessian(f)
            z, c = self._direction(pb, H, grad, grad_b, coef, bias, kkt)
            accepted = self._line_search(pb, f, coef, bias, grad, grad_b, z, c)
            if accepted is None and reuse:
                # the kept Hessian found no decrease: take this point's
                H = pb.datafit.hessian(f)
                z, c = self._direction(pb, H, grad, grad_b, coef, bias, kkt)
                accepted = self._line_search(pb, f, coef, bias, grad, grad_b, z, c)
            if accepted is None:
                # no measurable decrease left: rounding level
                converged = self.kkt_tol is None or kkt <= self.kkt_tol
                history.append(value)
                break
            if accepted[4] == 1.0:  # the model's own point: how well did it predict?
                predicted = _model_change(pb, H, grad, grad_b, coef, bias, z, c)
                agreement = accepted[3] / predicted if predicted < 0.0 else math.inf
            coef, bias, f, change, step = accepted
            full_step, kkt_step = step == 1.0, kkt
            decrease, previous = -change, value
            value += change
            history.append(value)
        else:
            # the cap: report the certificate of the returned point
            kkt = self._state(pb, coef, bias, f, derivative)[3]
        decision = pb.decision(coef, bias)
        return SubproblemResult(
            coef=coef, bias=as_bias(bias), objective=pb.objective(coef, decision),
            n_iter=n_iter, lipschitz=_curvature(H, pb.p, lipschitz0),
            converged=converged,
            decision=decision, history=history, kkt=kkt, kkt_tol=self.kkt_tol)


def _penalty_change(coef, dw, block_ptr):
    """``Omega(coef + dw) - Omega(coef)`` for ``Omega = 1/2 (sum_h ||w_h||)^2``.

    ``(S' - S)(S' + S) / 2`` with ``S' - S = sum_h (||a_h||^2 - ||b_h||^2) /
    (||a_h|| + ||b_h||)`` and ``||a_h||^2 - ||b_h||^2 = <dw_h, 2 b_h + dw_h>``:
    no difference of two large numbers.
    """
    old = _block_norms(coef, block_ptr)
    new = _block_norms(coef + dw, block_ptr)
    gain = 0.0
    for h in range(len(old)):
        denominator = old[h] + new[h]
        if denominator > 0.0:
            lo, hi = block_ptr[h], block_ptr[h + 1]
            d = dw[lo:hi]
            gain += float(d @ (2.0 * coef[lo:hi] + d)) / denominator
    return 0.5 * gain * float(np.sum(old) + np.sum(new))


def _model_change(pb, H, grad, grad_b, coef, bias, z, c):
    """The model's change ``g' d + 1/2 d' H d + Omega(z) - Omega(coef)`` at ``(z, c)``."""
    d = np.concatenate([z - coef, np.atleast_1d(np.subtract(c, bias))])
    g = np.concatenate([grad, np.atleast_1d(grad_b)])
    if len(g) < len(d):  # no intercept: its gradient is the float 0
        g = np.concatenate([grad, np.zeros(len(d) - len(grad))])
    return (float(g @ d) + 0.5 * float(d @ (H @ d))
            + _penalty_change(coef, z - coef, pb.block_ptr))


def _curvature(H, p, default):
    """Largest eigenvalue of ``H[:p, :p]`` by power iteration (``default`` if none)."""
    if H is None or p < 1:
        return default
    A = H[:p, :p]
    v = np.ones(A.shape[0]) / math.sqrt(A.shape[0])
    estimate = 0.0
    for _ in range(_POWER_ITER):
        u = A @ v
        norm = float(np.linalg.norm(u))
        if norm == 0.0:
            return default
        estimate = norm
        v = u / norm
    return estimate if np.isfinite(estimate) and estimate > 0 else default

