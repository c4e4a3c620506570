"""Accelerated proximal gradient for the FGM subproblem (paper eq. 30, Alg. 4).

Problem
-------
Given the selected columns ``X`` (n x p, CSC arrays) split into ``t``
contiguous blocks by ``block_ptr``, labels ``y`` in {-1, +1} and ``C > 0``::

    min_{w, b}  F(w, b) = Omega(w) + P(w, b),
    Omega(w)  = 1/2 (sum_h ||w_h||_2)^2,
    P(w, b)   = C * sum_i l(y_i, f_i),      f = X @ w - b,

with ``l`` the logistic or squared hinge loss (:mod:`ultrafs.solvers.losses`).
In general ``P`` is any :class:`~ultrafs.solvers.datafits.Datafit` (a
pointwise loss through a linear operator: K outputs per sample for K
classes, with ``w`` holding K weights per column and ``b`` K intercepts)
and ``Omega`` any penalty of :mod:`ultrafs.solvers.penalties`;
:meth:`APG.solve` checks their capabilities first
(:mod:`ultrafs.solvers.base`).

Algorithm (Algorithm 4 of the paper, with the deviations listed here)
---------------------------------------------------------------------
Each iteration ``k``, at the extrapolated point ``(v, v_b)``:

1. ``grad = C X' l'(f(v, v_b))`` (one pass over the nonzeros).  With the
   block cache (§5.5) also the per-block products ``X_h v_h`` and
   ``X_h grad_h`` (one sparse pass each, replacing the plain ``X v``).
2. Line search on ``w``: ``tau`` starts at ``eta * tau_{k-1}`` and is divided
   by ``eta`` until ``P(w, v_b) <= P(v, v_b) + <grad, w - v> +
   tau/2 ||w - v||^2`` for ``w = prox_{Omega/tau}(v - grad/tau)`` (the test
   ``F <= Q_tau`` of the paper with ``Omega`` cancelled on both sides).  For
   the l2,1-squared penalty ``w_h = s_h (v_h - grad_h/tau)``, so with the
   cache every trial rebuilds ``X @ w`` in O(n t); without it (chosen when
   ``nnz`` is small next to ``n t``) in O(nnz).  The paper's cap
   ``tau <= L_t`` is not applied: it could stop the line search from ever
   succeeding.
3. Bias (if ``fit_intercept``): Armijo step ``b = v_b - g_b / tau_b`` until
   ``P(w, b) <= P(w, v_b) - g_b^2 / (2 tau_b)`` (eq. 35), dividing ``tau_b``
   by ``eta`` on failure.  Deviations: ``g_b`` is ``dP/db`` at
   ``(w^k, v_b)``, not at ``(v, v_b)`` as printed (with the printed gradient
   the test can be unsatisfiable when the two gradients differ in sign); and
   ``tau_b`` starts at the curvature ``C sum_i l''`` at ``(w^k, v_b)`` (a
   Newton step), not at ``eta * tau_k``: the bias curvature (up to
   ``C n / 4``) is usually far from the curvature along ``w``, and starting
   from ``eta * tau_k`` cost about four extra O(n) trials per iteration.
4. Momentum ``rho_{k+1} = (1 + sqrt(1 + 4 rho_k^2)) / 2``,
   ``v = w^k + (rho_k - 1)/rho_{k+1} (w^k - w^{k-1})``, same for ``b``.
5. Safeguard not in the paper (monotone restart, as in MFISTA / O'Donoghue
   and Candes 2015): a candidate whose objective exceeds the current one is
   rejected, the momentum is reset (``rho = 1``) and the next iteration is a
   plain proximal-gradient step from the current iterate.  The kept
   iterates therefore decrease ``F`` monotonically, which makes the relative
   decrease test of eq. 40 meaningful.  A rejected *plain* step can only be
   rounding noise, so it ends the solve (``converged = True``).

   A rejected step also restores ``tau`` to its value at the last kept
   step, so rounding noise near the optimum cannot inflate the ``L_t``
   handed to the next subproblem.

Stopping: on a certificate.  When a kept step decreases ``F`` by at most
``tol`` relative (eq. 40, now only the trigger of the check), the KKT
residual of the kept iterate is computed: the largest distance from
``-grad_h P(w, b)`` to the subdifferential of ``Omega`` over the blocks,
and ``|dP/db|``, divided by the problem's own scale at that point, the
largest block norm of ``grad P(w, b)`` (for the ℓ2,1² penalty it equals
``sum_h ||w_h||`` at the optimum, and the test does not depend on the
scale of the data or of ``C``).  The solve stops when that
residual is at most ``kkt_tol``; otherwise it goes on (the relative
decrease alone can be tiny far from the optimum, e.g. when one unscaled
column makes the first steps short).  ``kkt_tol=None`` restores the
paper's rule (stop on the relative decrease alone), or
``max_iter`` iterations.  The returned ``lipschitz`` is ``eta * tau_k``
(Algorithm 4, step 8) for the last kept step ``k``, the ``L_t`` to pass to
the next outer iteration.

Choice of solver: :func:`solve` (``solver="auto"``) runs proximal Newton
(:mod:`ultrafs.solvers.prox_newton`) instead of this solver on binary
certified problems of at most :data:`NEWTON_MAX_COEF` coefficients (see
:func:`choose_solver`); ``solver="apg"`` forces this one.

``eta = 0.5`` by default.  On imdb (25,000 rows, 300 selected unigram
columns, t in {1, 5, 10, 20}, both losses, C in {0.1, 1, 10}) the time to a
1e-6 relative objective gap was the same within 10% for eta in
{0.5, 0.7, 0.9}; 0.5 is kept because it recovers fastest when the first
estimate ``L_0 = 0.01 n C`` is too small (a factor 2 per trial, against
1.1 for 0.9), and an accepted step is never shorter than half the longest
acceptable one.
"""

from __future__ import annotations

import math

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.solvers.base import Solver, set_stop_params
from ultrafs.solvers.losses import get_loss
from ultrafs.solvers.penalties import L21Squared
from ultrafs.solvers.prox_newton import ProxNewton
from ultrafs.solvers.simple_mkl import SimpleMKL
from ultrafs.solvers.subproblem import (DEFAULT_KKT_TOL, Problem, SubproblemResult,
                                        as_bias, kkt_residual, sqnorm)
from ultrafs.solvers.subproblem_inputs import (as_C, as_block_ptr, as_labels, as_penalty,
                                               bias_only_result, initial_bias, initial_coef,
                                               initial_lipschitz, make_problem)

__all__ = [
    "SubproblemResult",
    "APG",
    "solve_subproblem",
    "objective",
    "dual_variables",
    "fit_bias_only",
    "choose_solver",
]

DEFAULT_ETA = 0.5
DEFAULT_MAX_ITER = 1000
_MAX_BACKTRACKS = 64
#: the solver choices of :func:`solve`
SOLVER_CHOICES = ("auto", "apg", "newton", "mkl")
#: Largest number of coefficients for which ``solver="auto"`` picks proximal
#: Newton.  A Newton step costs a dense (p+1)^2 Hessian built in
#: O(sum_i nnz_i^2), O(p^2) per sweep of its model and O(m^3) per block of m
#: columns; an APG iteration costs O(nnz).  Measured on imdb unigrams
#: (25,000 rows, the p most frequent columns, C = 10, warm start with one
#: new block out of 10, certified to 1e-4): p = 500: Newton 0.7 s, APG
#: 5.8 s; p = 2000: 4.5 s against 16.5 s (one block: 5.5 s against 19.9 s,
#: APG uncertified after 1000 iterations); p = 4000: 10.1 s against 16.9 s.
#: The gain shrinks past 2000 while the Hessian's memory grows
#: quadratically (32 MB at 2000, 128 MB at 4000): 2000 keeps a wide margin.
NEWTON_MAX_COEF = 2000
#: With K outputs, proximal Newton's Hessian (:meth:`Datafit.hessian`) costs
#: ``K^2 sum_i (nnz_i + 1)^2`` additions and an APG iteration about four
#: passes of ``K (nnz + n)``.  On digits (1,797 x 64, K = 10, 5 to 10
#: selected columns) Newton certified every subproblem in 11 to 15
#: iterations, APG took 330 to 3,200: ``solver="auto"`` picks Newton when one
#: Hessian costs at most this many such passes (about the ratio of the two
#: iteration counts times four), and the Hessian has at most
#: :data:`NEWTON_MAX_COEF` rows.
MULTI_NEWTON_PASSES = 400
#: Newton iterations ``solver="auto"`` allows before handing over to APG
#: (a safety net: Newton certified every subproblem measured in 5 to 10).
AUTO_NEWTON_MAX_ITER = 50
# Relative slack on the sufficient-decrease tests: rounding in sums of n
# losses is far below this, so it only absorbs noise near the optimum.
_SLACK = 1e-14
# Floor of the bias curvature estimate, relative to its bound C n.
_MIN_CURVATURE = 1e-12


class _Workspace:
    """Buffers reused across iterations (no O(n t) allocation per step).

    Parameters
    ----------
    n, t : int
        Rows and blocks.
    cached : bool
        Whether the per-block products ``X_h v_h`` and ``X_h grad_h`` are
        kept (paper §5.5).
    """

    def __init__(self, n, t, cached):
        # n: length of a decision vector (samples times outputs)
        self.cached = cached
        shape = (t, n) if cached else (0, 0)
        self.xv = np.zeros(shape)  # X_h v_h
        self.xg = np.zeros(shape)  # X_h grad_h
        self.ones = np.ones(t)
        self.f_v = np.empty(n)  # decision at (v, v_b)
        self.d_v = np.empty(n)  # l' at (v, v_b)
        self.f_w = np.empty(n)  # decision at (w trial, v_b)
        self.d_w = np.empty(n)  # l' at (w trial, v_b)
        self.f_b = np.empty(n)  # decision at (w, b trial)
        self.d_k = np.empty(n)  # l' at a point whose KKT residual is checked


class APG(Solver):
    """Accelerated proximal gradient solver (Algorithm 4, see module notes).

    Parameters
    ----------
    eta : float, default 0.5
        Step-size factor in (0, 1): each line search starts at
        ``eta * tau_{k-1}`` and multiplies ``tau`` by ``1 / eta``.
    tol : float, default 1e-3
        ``epsilon_in`` of eq. 40 (relative decrease of ``F``): the trigger
        of the certificate check.
    kkt_tol : float or None, default 1e-4
        Largest relative KKT residual accepted at the stop (see the module
        notes); None stops on the relative decrease alone.
    max_iter : int, default 1000
        Maximum number of inner iterations.
    fit_intercept : bool, default True
        Whether ``b`` is optimised; otherwise it keeps its starting value
        (0 through :func:`solve_subproblem`).
    block_cache : bool or None, default None
        Rebuild ``X @ w`` in line-search trials from cached per-block
        products (O(n t) per trial, paper §5.5) instead of a sparse product
        (O(nnz) per trial).  None picks the cache when ``2 nnz >= n t`` and
        the penalty is block-radial, i.e. when the extra sparse pass per
        iteration costs less than the trials it speeds up; it needs ``2 n t``
        floats.
    """

    datafit_required = ("value", "value_derivative", "gradient", "decision",
                        "bias_gradient", "bias_curvature", "shift")
    penalty_required = ("value", "prox")

    def __init__(self, *, eta=DEFAULT_ETA, tol=1e-3, max_iter=DEFAULT_MAX_ITER,
                 fit_intercept=True, block_cache=None, kkt_tol=DEFAULT_KKT_TOL):
        if not 0.0 < eta < 1.0:
            raise ParameterError(f"eta must lie in (0, 1), got {eta!r}")
        set_stop_params(self, tol, kkt_tol, max_iter, fit_intercept)
        self.eta = float(eta)
        self.block_cache = block_cache

    def _uses_cache(self, pb):
        """Whether line-search trials use the per-block product cache."""
        if not pb.penalty.block_radial:
            if self.block_cache:
                raise ParameterError(
                    f"block_cache needs a block-radial penalty, not {pb.penalty!r}"
                )
            return False
        if self.block_cache is None:
            return 2 * pb.datafit.nnz >= pb.n * pb.t
        return bool(self.block_cache)

    # -- one iteration's pieces ------------------------------------------
    def _smooth_at(self, pb, ws, v, vb):
        """Value and gradient of ``P`` at ``(v, v_b)``; fills the caches.

        Returns
        -------
        p_v : float
            ``P(v, v_b)``.
        grad : ndarray of float64, shape (p,)
        """
        if ws.cached:
            pb.block_products(v, ws.xv)
            pb.datafit.combine(ws.xv, ws.xv, ws.ones, 0.0, vb, ws.f_v)
        else:
            ws.f_v[:] = pb.decision(v, vb)
        p_v = pb.datafit.value_derivative(ws.f_v, ws.d_v)
        grad = pb.gradient(ws.d_v)
        if ws.cached:
            pb.block_products(grad, ws.xg)
        return p_v, grad

    def _coef_step(self, pb, ws, v, vb, p_v, grad, tau):
        """Backtracking proximal step on ``w`` (Algorithm 4, steps 1-2).

        Leaves the decision and ``l'`` at ``(w, v_b)`` in ``ws.f_w``/``ws.d_w``.

        Returns
        -------
        coef : ndarray of float64, shape (p,)
        p_w : float
            ``P(coef, v_b)``.
        tau : float
            The accepted ``tau_k``.
        """
        tau = self.eta * tau
        for trial in range(_MAX_BACKTRACKS):
            if trial:
                tau /= self.eta
            step = 1.0 / tau
            coef, scale = pb.penalty.prox(v - step * grad, step, pb.block_ptr)
            if ws.cached:
                pb.datafit.combine(ws.xv, ws.xg, scale, step, vb, ws.f_w)
            else:
                ws.f_w[:] = pb.decision(coef, vb)
            p_w = pb.datafit.value_derivative(ws.f_w, ws.d_w)
            diff = coef - v
            model = p_v + float(grad @ diff) + 0.5 * tau * float(diff @ diff)
            if p_w <= model + _SLACK * abs(p_v):
                break
        return coef, p_w, tau

    def _bias_step(self, pb, ws, vb, p_w):
        """Armijo step on ``b`` at fixed ``w`` (eq. 35, Algorithm 4 step 3).

        ``tau_b`` starts at the curvature ``C sum_i l''`` at ``(w, v_b)`` (a
        Newton step) and is divided by ``eta`` until eq. 35 holds.

        Returns
        -------
        bias : float
        p_b : float
            ``P(w, bias)``.
        decision : ndarray
            The decision values at ``(w, bias)`` (``ws.f_b`` or ``ws.f_w``).
        """
        grad_b = pb.datafit.bias_gradient(ws.d_w)  # df/db = -1
        if not np.any(grad_b):
            return vb, p_w, ws.f_w
        curvature = pb.datafit.bias_curvature(ws.f_w, ws.d_w)
        tau_b = max(curvature, _MIN_CURVATURE * pb.C * pb.weight_total)
        for _ in range(_MAX_BACKTRACKS):
            bias = vb - grad_b / tau_b
            pb.datafit.shift(ws.f_w, bias - vb, ws.f_b)
            p_b = pb.data_term(ws.f_b)
            if p_b <= p_w - sqnorm(grad_b) / (2.0 * tau_b) + _SLACK * abs(p_w):
                return bias, p_b, ws.f_b
            tau_b /= self.eta
        return vb, p_w, ws.f_w

    def _kkt_residual(self, pb, ws, coef, bias, decision=None):
        """Relative KKT residual of ``(coef, bias)`` (:func:`kkt_residual`).

        ``decision`` (the decision values at that point, when the step that
        produced it left them in the workspace) saves a sparse product.

        Returns
        -------
        residual : float
        scale : float
            The largest block norm of ``grad P(coef, bias)``.
        """
        f = pb.decision(coef, bias) if decision is None else decision
        d = ws.d_k
        pb.datafit.value_derivative(f, d)
        return kkt_residual(pb, coef, pb.gradient(d), pb.datafit.bias_gradient(d),
                            self.fit_intercept)

    # -- the loop ---------------------------------------------------------
    def solve(self, pb, coef0, bias0, lipschitz0):
        """Run Algorithm 4 from ``(coef0, bias0)``.

        Parameters
        ----------
        pb : Problem
        coef0 : ndarray of float64, shape (p,)
        bias0 : float
        lipschitz0 : float
            ``L_t``: ``tau_0`` of the line search.

        Returns
        -------
        SubproblemResult
        """
        self.check_capabilities(pb.datafit, pb.penalty)
        ws = _Workspace(pb.datafit.decision_size, pb.t, self._uses_cache(pb))
        coef, bias = coef0, bias0
        coef_prev, bias_prev = coef0, bias0
        v, vb, beta = coef0.copy(), bias0, 0.0
        # tau_kept: tau_k of the last kept step (the first trial is at
        # eta * tau_0 = eta * lipschitz0).
        tau = lipschitz0
        tau_kept = lipschitz0 / self.eta
        rho = 1.0
        f_cur = None
        history = []
        converged = False
        kkt = math.nan
        n_iter = 0
        for n_iter in range(1, self.max_iter + 1):
            p_v, grad = self._smooth_at(pb, ws, v, vb)
            if f_cur is None:
                f_cur = pb.penalty.value(v, pb.block_ptr) + p_v
            coef_new, p_new, tau = self._coef_step(pb, ws, v, vb, p_v, grad, tau)
            bias_new, decision_new = vb, ws.f_w
            if self.fit_intercept:
                bias_new, p_new, decision_new = self._bias_step(pb, ws, vb, p_new)
            f_new = pb.penalty.value(coef_new, pb.block_ptr) + p_new
            if f_new <= f_cur:
                tau_kept = tau
                decrease = f_cur - f_new
                coef_prev, bias_prev, coef, bias = coef, bias, coef_new, bias_new
                f_prev, f_cur = f_cur, f_new
                history.append(f_cur)
                if decrease <= self.tol * f_prev:
                    if self.kkt_tol is None:
                        converged = True
                        break
                    kkt, _ = self._kkt_residual(pb, ws, coef, bias, decision_new)
                    if kkt <= self.kkt_tol:
                        converged = True
                        break
                rho_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * rho * rho))
                beta = (rho - 1.0) / rho_next
                rho = rho_next
                v = coef + beta * (coef - coef_prev)
                vb = bias + beta * (bias - bias_prev)
            else:
                history.append(f_cur)
                if beta == 0.0:
                    # a plain step cannot decrease F further: rounding noise
                    if self.kkt_tol is None:
                        converged = True
                    else:
                        kkt, _ = self._kkt_residual(pb, ws, coef, bias)
                        converged = kkt <= self.kkt_tol
                    break
                rho, beta = 1.0, 0.0
                v, vb = coef.copy(), bias
                tau = tau_kept
        if self.kkt_tol is not None and math.isnan(kkt):
            # max_iter ran out before the relative decrease first asked for
            # the certificate: report where the iterate stands
            kkt, _ = self._kkt_residual(pb, ws, coef, bias)
        decision = pb.decision(coef, bias)
        return SubproblemResult(
            coef=coef,
            bias=as_bias(bias),
            objective=pb.objective(coef, decision),
            n_iter=n_iter,
            lipschitz=self.eta * tau_kept,
            converged=converged,
            decision=decision,
            history=history,
            kkt=kkt,
            kkt_tol=self.kkt_tol,
        )


# -- functional API ------------------------------------------------------------


def solve_subproblem(indptr, indices, data, block_ptr, y, C, *, loss="logistic",
                     fit_intercept=True, coef0=None, bias0=0.0, lipschitz0=None,
                     eta=DEFAULT_ETA, tol=1e-3, max_iter=DEFAULT_MAX_ITER,
                     penalty=None, block_cache=None, n_classes=None,
                     kkt_tol=DEFAULT_KKT_TOL, solver="auto", sample_weight=None):
    """Solve ``min_{w,b} 1/2 (sum_h ||w_h||)^2 + C sum_i s_i l(y_i, X_i w - b)``.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of the selected columns ``X`` (n x p); ``data`` float32
        or float64.  Empty columns and empty rows are allowed.
    block_ptr : ndarray of int, shape (t + 1,)
        Block ``h`` is the columns ``block_ptr[h]:block_ptr[h + 1]``.
    y : ndarray, shape (n,)
        Labels in {-1, +1}; int class indices in ``0..K-1`` when
        ``n_classes = K >= 3``.
    C : float
        Weight of the data term (> 0).
    loss : str or Loss, default "logistic"
        A registered loss name (its binary or multi-class member is used)
        or a loss object.
    fit_intercept : bool, default True
        Optimise ``b``; otherwise ``b = 0``.
    coef0 : ndarray of shape (p0,) or (p0, K), p0 <= p, optional
        Warm start ``w^0 = [coef0, 0]`` (new blocks appended at the end).
    bias0 : float or ndarray of shape (K,), default 0.0
        Warm start for ``b``; must be 0 when ``fit_intercept`` is False.
    lipschitz0 : float, optional
        ``L_t`` from the previous subproblem; ``0.01 n C`` when omitted.
    eta : float, default 0.5
        Line-search factor in (0, 1).
    tol : float, default 1e-3
        Relative decrease of ``F`` (eq. 40) that triggers the certificate
        check.
    max_iter : int, default 1000
        Maximum number of inner iterations.
    kkt_tol : float or None, default 1e-4
        Relative KKT residual that certifies the solution (see
        :class:`APG`); None stops on the relative decrease alone.
    penalty : Penalty, optional
        Replaces ``1/2 (sum_h ||w_h||)^2`` (default :class:`L21Squared`);
        with K classes a block holds the K weights of each of its columns.
    block_cache : bool or None, default None
        See :class:`APG` (None: automatic).
    n_classes : int or None, default None
        None or 2 for binary labels; K >= 3 for the multi-class losses
        (multinomial logistic, one-vs-rest squared hinge).
    solver : {"auto", "apg", "newton", "mkl"}, default "auto"
        See :func:`solve`.
    sample_weight : array-like of shape (n,), optional
        Per-sample weights ``s_i`` (finite, ``>= 0``, not all zero); None
        for all ones.

    Returns
    -------
    SubproblemResult
        With K classes ``coef`` has shape (p * K,) (row-major (p, K)) and
        ``bias`` shape (K,).

    Raises
    ------
    ParameterError
        On malformed inputs, or a missing class with the logistic loss and
        an intercept (no minimiser exists).
    """
    pb = make_problem(indptr, indices, data, block_ptr, y, C, loss, penalty, n_classes,
                  sample_weight)
    return solve(pb.datafit, pb.block_ptr, penalty=pb.penalty,
                 fit_intercept=fit_intercept, coef0=coef0, bias0=bias0,
                 lipschitz0=lipschitz0, eta=eta, tol=tol, max_iter=max_iter,
                 block_cache=block_cache, kkt_tol=kkt_tol, solver=solver)


def choose_solver(datafit, penalty=None, kkt_tol=DEFAULT_KKT_TOL, solver="auto"):
    """Return the name of the solver :func:`solve` runs.

    ``"auto"`` picks proximal Newton (:mod:`ultrafs.solvers.prox_newton`)
    for a datafit whose loss is
    :attr:`~ultrafs.solvers.losses.Loss.second_order`, the l2,1-squared penalty, a
    certified stop (``kkt_tol`` not None: the uncertified stop is eq. 40 of
    APG, kept as it was) and at most :data:`NEWTON_MAX_COEF` coefficients
    (with K outputs: coefficients and intercepts), K outputs only when the
    Hessian costs at most :data:`MULTI_NEWTON_PASSES` passes over the data
    (:func:`_multi_newton_pays`); APG otherwise.  ``"apg"``, ``"newton"``
    and ``"mkl"`` force one.
    """
    if solver not in SOLVER_CHOICES:
        raise ParameterError(f"solver must be one of {SOLVER_CHOICES}, got {solver!r}")
    if solver != "auto":
        return solver
    penalty = as_penalty(penalty)
    loss = getattr(datafit, "loss", None)
    if not (getattr(loss, "second_order", False) and isinstance(penalty, L21Squared)
            and kkt_tol is not None):
        return "apg"
    if datafit.n_outputs == 1:
        return "newton" if datafit.n_coef <= NEWTON_MAX_COEF else "apg"
    return "newton" if _multi_newton_pays(datafit) else "apg"


def _multi_newton_pays(datafit):
    """Whether a K-output Newton Hessian is small and costs at most
    :data:`MULTI_NEWTON_PASSES` passes of ``K (nnz + n)``."""
    K = datafit.n_outputs
    work = getattr(datafit.operator, "multi_gram_work", None)
    if work is None or datafit.n_coef + K > NEWTON_MAX_COEF:
        return False
    return K * work() <= MULTI_NEWTON_PASSES * (datafit.nnz + datafit.n)


def solve(datafit, block_ptr, *, penalty=None, fit_intercept=True, coef0=None,
          bias0=0.0, lipschitz0=None, eta=DEFAULT_ETA, tol=1e-3,
          max_iter=DEFAULT_MAX_ITER, block_cache=None, kkt_tol=DEFAULT_KKT_TOL,
          solver="auto"):
    """Solve ``min_{w,b} Omega(w) + P(w, b)`` for a datafit and a penalty.

    Parameters
    ----------
    datafit : Datafit
        ``P`` (see :mod:`ultrafs.solvers.datafits`).
    block_ptr : ndarray of int64, shape (t + 1,)
        Coefficient blocks of the penalty, in coefficient units (multiples
        of K with K outputs).
    penalty, fit_intercept, coef0, bias0, lipschitz0, eta, tol, max_iter, block_cache, kkt_tol
        As in :func:`solve_subproblem` (``eta`` and ``block_cache`` are
        APG's; proximal Newton counts its own iterations in ``max_iter``).
    solver : {"auto", "apg", "newton", "mkl"}, default "auto"
        ``"auto"``: :func:`choose_solver`; when it picks proximal Newton,
        at most :data:`AUTO_NEWTON_MAX_ITER` Newton iterations are run and,
        should they all run uncertified, APG goes on from their point for
        the rest of ``max_iter`` (the iterations and histories of both are
        returned together).  ``"mkl"``: :class:`~ultrafs.solvers.simple_mkl.SimpleMKL`
        (binary squared hinge, l2,1-squared penalty only), stopping when the
        relative duality gap is at most ``tol`` and the KKT residual at most
        ``kkt_tol``; ``max_iter`` counts its reduced-gradient iterations.

    Returns
    -------
    SubproblemResult
    """
    penalty = as_penalty(penalty)
    block_ptr = as_block_ptr(block_ptr, datafit.n_coef)
    pb = Problem(datafit, penalty, block_ptr)
    apg = APG(eta=eta, tol=tol, max_iter=max_iter, fit_intercept=fit_intercept,
              block_cache=block_cache, kkt_tol=kkt_tol)
    chosen = choose_solver(datafit, penalty, kkt_tol, solver)
    if fit_intercept:
        datafit.optimal_bias()  # rejects problems without a minimiser
    bias = initial_bias(bias0, fit_intercept, datafit.n_outputs)
    lipschitz = initial_lipschitz(lipschitz0, pb)
    if chosen == "mkl":  # refuses what it does not solve; handles p == 0 itself
        return SimpleMKL(tol=tol, kkt_tol=kkt_tol, max_iter=max_iter,
                         fit_intercept=fit_intercept).solve(
            pb, initial_coef(coef0, pb.p), bias)
    if pb.p == 0:
        return bias_only_result(pb, fit_intercept, lipschitz)
    coef = initial_coef(coef0, pb.p)
    if chosen == "apg":
        return apg.solve(pb, coef, bias, lipschitz)
    newton_max_iter = max_iter if solver == "newton" else min(max_iter,
                                                              AUTO_NEWTON_MAX_ITER)
    result = ProxNewton(tol=tol, kkt_tol=kkt_tol, max_iter=newton_max_iter,
                        fit_intercept=fit_intercept).solve(pb, coef, bias, lipschitz)
    capped = not result.converged and result.n_iter == newton_max_iter < max_iter
    if solver == "newton" or not capped:
        # certified, or stopped with no decrease left to measure (APG would
        # find none either): only a capped Newton run is handed over
        return result
    apg.max_iter = max_iter - result.n_iter
    rest = apg.solve(pb, result.coef, result.bias, result.lipschitz)
    rest.n_iter += result.n_iter
    rest.history = result.history + rest.history
    return rest


def objective(indptr, indices, data, block_ptr, y, C, coef, bias, *,
              loss="logistic", penalty=None, n_classes=None, sample_weight=None):
    """Return ``F(w, b) = 1/2 (sum_h ||w_h||)^2 + C sum_i s_i l(y_i, X_i w - b)``.

    Parameters
    ----------
    indptr, indices, data, block_ptr, y, C
        As in :func:`solve_subproblem`.
    coef : ndarray of float64, shape (p,) or (p, K)
    bias : float or ndarray of shape (K,)
    loss : str or Loss, default "logistic"
    penalty : Penalty, optional
        Default :class:`L21Squared`.
    n_classes, sample_weight
        As in :func:`solve_subproblem`.

    Returns
    -------
    float
    """
    pb = make_problem(indptr, indices, data, block_ptr, y, C, loss, penalty, n_classes,
                  sample_weight)
    coef = np.ascontiguousarray(coef, dtype=np.float64).ravel()
    if len(coef) != pb.p:
        raise ParameterError(f"coef has {len(coef)} entries, expected p = {pb.p}")
    bias = initial_bias(bias, True, pb.datafit.n_outputs)
    return pb.objective(coef, pb.decision(coef, bias))


def dual_variables(decision, y, C, *, loss="logistic"):
    """Return the dual variables ``alpha`` recovered from the decision values.

    Logistic: ``alpha_i = C sigma(-y_i f_i)``; squared hinge:
    ``alpha_i = C max(0, 1 - y_i f_i)`` (Theorem 3).

    Parameters
    ----------
    decision : ndarray, shape (n,)
        ``f = X @ w - b``.
    y : ndarray, shape (n,)
        Labels in {-1, +1}.
    C : float
    loss : str or Loss, default "logistic"

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    y = as_labels(y)
    decision = np.ascontiguousarray(decision, dtype=np.float64)
    if decision.shape != y.shape:
        raise ParameterError("decision and y must have the same length")
    alpha = get_loss(loss).dual(y, decision)
    alpha *= as_C(C)
    return alpha


def fit_bias_only(y, C, *, loss="logistic", fit_intercept=True):
    """Return the optimal ``b`` with ``w = 0`` (exact, closed form).

    Minimises ``C sum_i l(y_i, -b)``: logistic ``b = log(n_- / n_+)``,
    squared hinge ``b = (n_- - n_+) / n``.  ``C`` does not move the minimiser
    and is only validated.

    Parameters
    ----------
    y : ndarray, shape (n,)
        Labels in {-1, +1}.
    C : float
    loss : str or Loss, default "logistic"
    fit_intercept : bool, default True
        When False the answer is 0.0.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        Logistic loss with a single class (the infimum is not attained).
    """
    y = as_labels(y)
    as_C(C)
    if not fit_intercept:
        return 0.0
    return -float(get_loss(loss).optimal_constant(y))


SOLVERS = {"apg": APG, "newton": ProxNewton, "mkl": SimpleMKL}
"""Registry of solver classes by name."""
