"""SimpleMKL for the FGM subproblem: MKL-FGM, the paper's reference point.

Problem
-------
The binary squared-hinge FGM subproblem (paper eq. 30) on the selected
columns ``X`` (n x p) split into ``t`` blocks by ``block_ptr``::

    min_{w, b}  1/2 (sum_h ||w_h||_2)^2 + C sum_i s_i xi_i^2 / 2,
    xi_i = max(0, 1 - y_i (X_i w - b)),

with labels ``y`` in {-1, +1}, per-sample weights ``s >= 0`` (all ones
without weights) and the decision ``f = X w - b``.  By the variational
identity ``(sum_h ||w_h||)^2 = min_{mu in simplex} sum_h ||w_h||^2 / mu_h``
it is the l1-MKL problem of eq. 28 with the linear base kernels ``K_h =
X_h X_h'`` and an l2-soft-margin (squared hinge) SVM.  For fixed ``mu``
the SVM dual is::

    J(mu) = max_{alpha >= 0, (y'alpha = 0 with an intercept)}
            1'alpha - sum_i alpha_i^2 / (2 C s_i) - 1/2 sum_h mu_h ||c_h(alpha)||^2,

``c_h(alpha) = X_h' (y * alpha)`` (rows with ``s_i = 0`` have ``alpha_i =
0``), and the subproblem's optimum is ``min_{mu in simplex} J(mu)``.

Algorithm (SimpleMKL, Rakotomamonjy, Bach, Canu & Grandvalet, JMLR 2008)
-------------------------------------------------------------------------
``J`` is convex and differentiable (the SVM dual is strictly concave, so
``alpha*(mu)`` is unique), with ``dJ/dmu_h = -1/2 ||c_h(alpha*)||^2``.
From ``mu`` uniform over the blocks with a nonzero column (or, with a warm
start ``coef0``, ``mu_h`` proportional to ``||coef0_h||``, the minimiser of
the identity), every iteration:

1. solves the SVM at ``mu`` (below) and computes the certificate;
2. takes SimpleMKL's reduced gradient direction ``D`` with respect to the
   largest weight ``mu_m``: ``D_h = g_m - g_h`` for ``h != m`` (0 when
   ``mu_h = 0`` and ``g_h >= g_m``), ``D_m = -sum_{h != m} D_h``;
3. moves along ``D`` on ``[0, gamma_max]``, ``gamma_max`` the maximal
   step, at which a weight reaches 0.  ``phi(gamma) = J(mu + gamma D)`` is
   convex with a known derivative ``phi' = g(mu + gamma D)'D``, so the
   line search brackets the zero of ``phi'``: the first trial is the last
   iteration's step (``gamma_max`` at first), a trial where ``phi'`` is
   still negative is followed by a secant extrapolation of ``phi'`` (at
   most 4 times longer), and a bracket is shrunk by cubic interpolation
   of ``phi`` and ``phi'`` (Nocedal & Wright eq. 3.59, falling back on
   the secant, then bisection).  It stops when ``|phi'|`` has shrunk by
   :data:`LINE_SEARCH_FACTOR` and ``J`` has not risen (beyond rounding:
   near the optimum the decrease falls below the rounding of ``J``, the
   derivative still decides).  When ``phi'`` is still negative at
   ``gamma_max`` the step goes there and that weight is set to exactly 0
   (SimpleMKL's descent loop; the next iteration recomputes ``D`` at the
   new point).  This replaces SimpleMKL's golden-section search: one SVM
   per trial either way, about two trials per iteration here.

Inner SVM at fixed ``mu``: the kernel ``K_mu = sum_h mu_h K_h`` is formed
densely (n x n, as ``Z Z'`` with ``Z = X diag(sqrt(mu_col))``), and the
dual is solved by a semismooth Newton (primal-dual active set) method
(Chapelle 2007, "Training a support vector machine in the primal"): for
the active set ``F = {i : xi_i > 0}`` the exact maximiser over ``alpha_F``
solves ``(Y_F K_FF Y_F + diag(1 / (C s_F))) alpha_F - b y_F = 1`` with
``y_F'alpha_F = 0`` (a Cholesky factorisation of the |F| x |F| matrix),
and the iterate moves towards it with an Armijo line search on the SVM's
primal objective until the active set of the target equals ``F`` (then
the target is the exact solution up to rounding, a few steps from a warm
start).  Each SVM starts from the previous ``alpha``.

Stop: on a certificate.  Every SVM solve gives a primal point, ``w_h =
mu_h c_h(alpha)`` with the exact best ``b`` for that ``w`` (a sorted scan
of the piecewise-quadratic loss in ``b``), whose eq. 30 value is an upper
bound, and two dual-feasible points, ``alpha`` itself and ``alpha = C s
xi`` at the primal point (feasible because ``b`` is optimal), whose value
``1'alpha - sum_i alpha_i^2 / (2 C s_i) - 1/2 max_h ||c_h(alpha)||^2`` (the
dual of eq. 30) is a lower bound.  The solve stops when the relative gap
``(best primal - best dual) / best primal`` is at most ``tol`` and the
relative KKT residual of the best primal point
(:func:`~ultrafs.solvers.subproblem.kkt_residual`, the other solvers'
certificate) is at most ``kkt_tol`` (``kkt_tol=None``: the gap alone),
after ``max_iter`` iterations, or when no progress is measurable in
floating point: the reduced gradient below :data:`STALL_TOL` of the
gradient, a line search without decrease, or :data:`STALL_ITERATIONS`
iterations in a row that lower neither the smallest gap nor the smallest
KKT residual seen (on badly conditioned problems, e.g. large ``C``, the
residual's rounding floor can lie above ``kkt_tol``: ``converged`` is then
False with a gap at rounding level).  The returned point is the best
primal point seen (the warm start ``coef0`` included; between points
whose objectives agree to :data:`TIE_TOL`, the one with the smaller KKT
residual), so the history is non-increasing up to that rounding; ``mu`` is
the kernel weighting that produced it, and ``w_h = 0`` exactly where
``mu_h = 0``.

Cost: one SVM per trial point: ``O(n^2 p)`` to form ``K_mu`` and
``O(|F|^3)`` per Newton step (|F| <= n, usually 1 to 3 steps from the
previous ``alpha``), ``O(n^2)`` memory, plus ``O(nnz + n log n)`` for the
certificate.  Reduced gradient converges linearly (it zig-zags), so a
tight gap takes tens to hundreds of SVM solves, many more on badly scaled
columns; the paper reports MKL-FGM about 1000 times slower than APG.
``n`` is limited to :data:`MAX_SAMPLES`.  The kernel systems have a
condition number up to about ``C s_i ||K_mu||``: past about 1e10 (e.g.
``C = 1e9`` on unit-variance columns) they lose their accuracy, the SVMs
stop settling and the certificate reports it (``converged`` False with a
large gap); FGM's ``C`` (1 to 100 in the paper) is far from that.  BLAS and LAPACK run on one
thread during the solve, as in :mod:`~ultrafs.solvers.prox_newton`: the
matrices are small, and on two shared cores OpenBLAS's spinning threads
made a 500-row solve ten times slower.

Only the binary squared-hinge datafit with the l2,1-squared penalty is
solved (the identity above and the closed-form SVM dual are specific to
them); anything else is refused in one line, before any work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.solvers.base import Solver, set_stop_params
from ultrafs.solvers.losses import SquaredHinge
from ultrafs.solvers.penalties import L21Squared
from ultrafs.solvers.blas_threads import one_blas_thread
from ultrafs.solvers.subproblem import DEFAULT_KKT_TOL, SubproblemResult, kkt_residual

__all__ = ["SimpleMKL", "MKLResult", "best_bias", "MAX_SAMPLES", "DEFAULT_GAP_TOL"]

#: Largest number of samples SimpleMKL accepts: it holds dense n x n kernels
#: (200 MB each at 5,000) and factorises |F| x |F| matrices, O(n^3).
MAX_SAMPLES = 5000
#: Default relative duality gap at the stop.
DEFAULT_GAP_TOL = 1e-6
DEFAULT_MAX_ITER = 1000
#: The line search stops once ``|g'D|`` is this fraction of its value at 0.
LINE_SEARCH_FACTOR = 0.1
#: No measurable progress: the reduced gradient is below this fraction of
#: the largest gradient component.
STALL_TOL = 1e-13
#: ... or this many iterations in a row improve neither the smallest gap
#: nor the smallest KKT residual seen (both are then at rounding level).
STALL_ITERATIONS = 20
#: Objectives this close (relative) are equal up to rounding.
TIE_TOL = 1e-14
_MAX_LINE_SEARCH = 20
_MAX_NEWTON = 100
_MAX_BACKTRACKS = 60
_ARMIJO = 1e-4
# A slack (in units of the margin, which is 1) on the active-set test of
# the SVM's Newton target: rounding, not a tolerance of the solution.
_ACTIVE_SLACK = 1e-12


@dataclass
class MKLResult(SubproblemResult):
    """A :class:`~ultrafs.solvers.subproblem.SubproblemResult` with the MKL certificate.

    ``lipschitz`` is None (SimpleMKL has no step size), ``n_iter`` counts
    reduced-gradient iterations and ``history`` the objective of the best
    primal point after each.

    Attributes
    ----------
    mu : ndarray of float64, shape (t,)
        Kernel weights on the simplex that produced ``coef``: block ``h``
        of ``coef`` is ``mu_h c_h(alpha_mu)`` for the SVM solution
        ``alpha_mu`` at ``mu`` (or, when the warm start ``coef0`` is the
        best point, ``mu_h`` is proportional to ``||coef0_h||``); either
        way ``coef`` is 0 on the blocks where ``mu_h`` is 0.
    gap : float
        Relative duality gap ``(objective - dual_objective) / objective``,
        clipped at 0 (the two bounds can cross by rounding once the gap is
        at rounding level; 0 also when both are 0).
    dual_objective : float
        The best lower bound found: the dual of eq. 30 at a feasible
        ``alpha``.
    alpha : ndarray of float64, shape (n,)
        The dual variables of the last SVM solved (dual feasible; 0 on rows
        of weight 0).  Those of ``coef`` are ``C s max(0, 1 - y decision)``.
    n_svm : int
        SVMs solved (one per trial point of the line searches).
    n_newton : int
        Newton steps of those SVMs, all together.
    """

    mu: np.ndarray = None
    gap: float = math.nan
    dual_objective: float = math.nan
    alpha: np.ndarray = None
    n_svm: int = 0
    n_newton: int = 0


def _dense_columns(operator, n, p):
    """The operator's matrix as a dense float64 array (n x p)."""
    indptr = getattr(operator, "indptr", None)
    if indptr is not None:
        X = sp.csc_matrix((np.asarray(operator.data, dtype=np.float64),
                           operator.indices, indptr), shape=(n, p))
        return X.toarray()
    X = np.empty((n, p))
    unit = np.zeros(p)
    for j in range(p):
        unit[j] = 1.0
        X[:, j] = operator.matvec(unit)
        unit[j] = 0.0
    return X


def _block_sums(x, block_ptr):
    """``sum`` of ``x`` over every block (0 for an empty block)."""
    padded = np.append(x, 0.0)
    sums = np.add.reduceat(padded, block_ptr[:-1]) if len(block_ptr) > 1 else padded[:0]
    sums[np.diff(block_ptr) == 0] = 0.0  # reduceat's value for an empty range
    return sums


def best_bias(g, y, weights=None, fit_intercept=True):
    """Exact minimiser of ``sum_i s_i max(0, 1 - y_i (g_i - b))^2`` over ``b``.

    The derivative ``sum_{active} s_i (b - beta_i)`` (``beta_i = g_i -
    y_i``; a positive sample is active when ``b > beta_i``, a negative one
    when ``b < beta_i``) is piecewise linear and non-decreasing: its zero
    is found by one sort and cumulative sums, O(n log n).

    Parameters
    ----------
    g : ndarray of float64, shape (n,)
        ``X @ w``.
    y : ndarray of float64, shape (n,)
        Labels in {-1, +1}.
    weights : ndarray of float64, shape (n,), optional
        ``s >= 0`` (None: all ones).
    fit_intercept : bool, default True
        When False the answer is 0.0.

    Returns
    -------
    float
        The minimiser; when the minimisers form an interval (one class
        only) its end next to the other class's side.
    """
    if not fit_intercept:
        return 0.0
    s = np.ones(len(y)) if weights is None else weights
    beta = g - y
    order = np.argsort(beta, kind="stable")
    bs, ys, ss = beta[order], y[order], s[order]
    pos = np.where(ys > 0, ss, 0.0)
    neg = ss - pos
    s_pos = np.cumsum(pos)  # positives at or before k
    t_pos = np.cumsum(pos * bs)
    s_neg = np.cumsum(neg[::-1])[::-1]  # negatives at or after k
    t_neg = np.cumsum((neg * bs)[::-1])[::-1]
    nonneg = (s_pos + s_neg) * bs - (t_pos + t_neg) >= 0.0
    if not nonneg.any():  # the zero lies past the last breakpoint
        return float(t_pos[-1] / s_pos[-1]) if s_pos[-1] > 0 else float(bs[-1])
    k = int(np.argmax(nonneg))
    if k == 0:  # the zero lies before the first breakpoint
        return float(t_neg[0] / s_neg[0]) if s_neg[0] > 0 else float(bs[0])
    total = s_pos[k - 1] + s_neg[k]
    if total <= 0:
        return float(bs[k - 1])
    b = (t_pos[k - 1] + t_neg[k]) / total
    return float(min(max(b, bs[k - 1]), bs[k]))


def _dual_feasible(alpha, y, fit_intercept):
    """``alpha`` clipped at 0 and, with an intercept, scaled to ``y'alpha = 0``.

    Only the larger of the two class sums is scaled down, so the result
    stays ``>= 0``; the change is at rounding level for a solved SVM.
    """
    alpha = np.maximum(alpha, 0.0)
    if fit_intercept:
        pos, neg = y > 0, y < 0
        s_pos, s_neg = float(alpha[pos].sum()), float(alpha[neg].sum())
        if s_pos > s_neg:
            alpha[pos] *= s_neg / s_pos
        elif s_neg > s_pos:
            alpha[neg] *= s_pos / s_neg
    return alpha


class _SVM:
    """The l2-soft-margin SVM dual at fixed kernel weights (see module notes).

    Parameters
    ----------
    X : ndarray of float64, shape (n_live, p)
        The rows with a positive weight.
    y : ndarray of float64, shape (n_live,)
    cs : ndarray of float64, shape (n_live,)
        ``C s_i``.
    fit_intercept : bool
    """

    def __init__(self, X, y, cs, fit_intercept):
        self.X = X
        self.y = y
        self.cs = cs
        self.inv_cs = 1.0 / cs
        self.fit_intercept = fit_intercept
        self.n_newton = 0

    def _target(self, Q, F):
        """Exact maximiser of the dual over ``alpha_F`` (zero off ``F``).

        Returns ``(alpha, bias)`` with the decision ``f = K Y alpha - bias``;
        ``bias`` is None when ``F`` is empty (any bias then).
        """
        alpha = np.zeros(len(self.y))
        idx = np.flatnonzero(F)
        if len(idx) == 0:
            return alpha, None
        y_f = self.y[idx]
        H = Q[np.ix_(idx, idx)]
        H[np.diag_indices_from(H)] += self.inv_cs[idx]
        rhs = np.column_stack((np.ones(len(idx)), y_f))
        try:
            factor = scipy.linalg.cho_factor(H, lower=True, check_finite=False)
            sol = scipy.linalg.cho_solve(factor, rhs, check_finite=False)
        except np.linalg.LinAlgError:
            # positive definite in exact arithmetic, but 1 / (C s) can fall
            # below the rounding of K when C is huge: a symmetric LDL' solve
            sol = scipy.linalg.solve(H, rhs, assume_a="sym", check_finite=False)
        if self.fit_intercept:
            # H alpha - b y = 1 and y'alpha = 0
            bias = -float(y_f @ sol[:, 0]) / float(y_f @ sol[:, 1])
            alpha[idx] = sol[:, 0] + bias * sol[:, 1]
        else:
            bias = 0.0
            alpha[idx] = sol[:, 0]
        return alpha, bias

    def _primal(self, u, margin):
        """SVM primal ``1/2 ||u||^2 + 1/2 sum_i C s_i xi_i^2`` and ``xi``."""
        xi = np.maximum(1.0 - margin, 0.0)
        return 0.5 * float(u @ u) + 0.5 * float(self.cs @ (xi * xi)), xi

    def solve(self, col_weight, alpha, bias):
        """Solve the SVM with kernel ``X diag(col_weight) X'`` from ``(alpha, bias)``.

        The iterate is the primal point ``u = Z' Y alpha`` (``Z = X
        diag(sqrt(col_weight))``), margins ``y * (Z u - bias)``.

        Returns
        -------
        alpha : ndarray, shape (n_live,)
            Dual-feasible (``>= 0``, ``y'alpha = 0`` with an intercept).
        bias : float
        """
        A = self.X * np.sqrt(col_weight)
        A *= self.y[:, None]  # Y Z
        Q = A @ A.T  # Y K_mu Y, dense n x n
        u = A.T @ alpha
        margin = A @ u - bias * self.y
        for _ in range(_MAX_NEWTON):
            self.n_newton += 1
            value, xi = self._primal(u, margin)
            F = xi > 0.0
            target, t_bias = self._target(Q, F)
            if t_bias is None:
                t_bias = bias
            t_u = A.T @ target
            t_margin = A @ t_u - t_bias * self.y
            t_xi = 1.0 - t_margin
            if (np.all(t_xi[F] >= -_ACTIVE_SLACK)
                    and np.all(t_xi[~F] <= _ACTIVE_SLACK)):
                # the target's active set is F: it is the solution
                return _dual_feasible(target, self.y, self.fit_intercept), t_bias
            du, dm = t_u - u, t_margin - margin
            slope = float(u @ du) - float((self.cs * xi) @ dm)
            if not slope < 0.0:
                break  # the current point is optimal up to rounding
            step = 1.0
            for _ in range(_MAX_BACKTRACKS):
                trial, _ = self._primal(u + step * du, margin + step * dm)
                if trial <= value + _ARMIJO * step * slope:
                    break
                step *= 0.5
            else:
                break
            alpha = alpha + step * (target - alpha)
            bias = bias + step * (t_bias - bias)
            u = u + step * du
            margin = margin + step * dm
        # rounding kept the active set from settling: recover alpha = C s xi
        _, xi = self._primal(u, margin)
        return _dual_feasible(self.cs * xi, self.y, self.fit_intercept), bias


@dataclass
class _Point:
    """A primal candidate: its weights, bias, decision, objective and ``mu``."""

    coef: np.ndarray
    bias: float
    decision: np.ndarray
    objective: float
    mu: np.ndarray
    kkt: float = math.nan


@dataclass
class _Trial:
    """An SVM solved at ``mu``: its dual value ``J(mu)`` and ``dJ/dmu``."""

    mu: np.ndarray
    J: float
    grad: np.ndarray


class SimpleMKL(Solver):
    """SimpleMKL on the squared-hinge FGM subproblem (MKL-FGM, see module notes).

    Parameters
    ----------
    tol : float, default 1e-6
        Largest relative duality gap accepted at the stop.
    kkt_tol : float or None, default 1e-4
        Largest relative KKT residual (:func:`kkt_residual`) of the
        returned point accepted at the stop; None stops on the gap alone.
    max_iter : int, default 1000
        Maximum number of reduced-gradient iterations.
    fit_intercept : bool, default True
        Whether ``b`` is optimised (the SVM dual then has ``y'alpha = 0``);
        otherwise ``b = 0``.
    max_samples : int, default :data:`MAX_SAMPLES`
        Largest ``n`` accepted.
    """

    datafit_required = ("value", "value_derivative", "gradient", "decision",
                        "bias_gradient", "optimal_bias")
    penalty_required = ("value", "subdiff_distance")

    def __init__(self, *, tol=DEFAULT_GAP_TOL, kkt_tol=DEFAULT_KKT_TOL,
                 max_iter=DEFAULT_MAX_ITER, fit_intercept=True,
                 max_samples=MAX_SAMPLES):
        set_stop_params(self, tol, kkt_tol, max_iter, fit_intercept)
        self.max_samples = int(max_samples)

    def check_problem(self, pb):
        """Raise a one-line :class:`ParameterError` for a problem SimpleMKL does not solve.

        Parameters
        ----------
        pb : Problem
        """
        self.check_capabilities(pb.datafit, pb.penalty)
        datafit = pb.datafit
        if datafit.n_outputs != 1:
            raise ParameterError(
                f"SimpleMKL solves binary problems only, got {datafit.n_outputs} "
                "outputs per sample")
        loss = getattr(datafit, "loss", None)
        if not isinstance(loss, SquaredHinge):
            name = getattr(loss, "name", type(loss).__name__)
            raise ParameterError(
                f"SimpleMKL solves the squared-hinge loss only, got {name!r}")
        if not isinstance(pb.penalty, L21Squared):
            raise ParameterError(
                "SimpleMKL solves the l2,1-squared penalty only (the MKL identity "
                f"of eq. 28), got {pb.penalty!r}")
        if datafit.n > self.max_samples:
            raise ParameterError(
                f"SimpleMKL holds dense n x n kernels: n = {datafit.n} exceeds its "
                f"limit of {self.max_samples} samples")

    def solve(self, pb, coef0, bias0=0.0, lipschitz0=None):
        """Run SimpleMKL from ``coef0`` (a warm start; zeros or None for none).

        Parameters
        ----------
        pb : Problem
            The subproblem (binary squared-hinge datafit, :class:`L21Squared`).
        coef0 : ndarray of float64, shape (p,) or None
            Warm start: the first ``mu`` is proportional to its block norms
            (uniform over the blocks with a nonzero column when it is zero),
            and it is itself a primal candidate.
        bias0 : float, default 0.0
            Not used: the bias of every candidate is the exact best one.
        lipschitz0 : float, optional
            Not used (no step size).

        Returns
        -------
        MKLResult
        """
        self.check_problem(pb)
        with one_blas_thread():
            return _Run(self, pb).run(coef0)


class _Run:
    """The state of one SimpleMKL solve (see :meth:`SimpleMKL.solve`)."""

    def __init__(self, solver, pb):
        self.solver = solver
        self.pb = pb
        self.fit_intercept = solver.fit_intercept
        datafit = pb.datafit
        n, p = datafit.n, pb.p
        self.block_ptr = pb.block_ptr
        weights = datafit.sample_weight
        self.live = np.ones(n, dtype=bool) if weights is None else weights > 0
        X = _dense_columns(datafit.operator, n, p)
        self.X = X[self.live]
        self.y = datafit.y[self.live]
        self.cs = datafit.C * (np.ones(len(self.y)) if weights is None
                               else weights[self.live])
        self.inv_cs = 1.0 / self.cs
        widths = np.diff(self.block_ptr)
        self.col_block = np.repeat(np.arange(pb.t), widths)
        # blocks with a nonzero column (the others keep mu_h = 0)
        self.alive = _block_sums(np.einsum("ij,ij->j", X, X), self.block_ptr) > 0
        self.svm = _SVM(self.X, self.y, self.cs, self.fit_intercept)
        self.alpha = np.zeros(len(self.y))
        self.bias = datafit.optimal_bias(self.fit_intercept)
        self.best = None
        self.best_dual = -math.inf
        self.n_svm = 0
        self.last_step = None  # the step of the last line search: the next guess

    # -- the certificate ------------------------------------------------------
    def _dual_value(self, alpha):
        """Dual of eq. 30 at a feasible ``alpha`` (live rows): a lower bound."""
        c = self.X.T @ (self.y * alpha)
        largest = float(np.max(_block_sums(c * c, self.block_ptr), initial=0.0))
        return (float(alpha.sum()) - 0.5 * float((alpha * alpha) @ self.inv_cs)
                - 0.5 * largest)

    def _offer(self, coef, mu):
        """Make ``coef`` (with its exact best bias) a primal candidate.

        Its recovered ``alpha = C s xi`` (feasible: the bias is optimal) is
        a dual candidate.  Returns the candidate.
        """
        datafit = self.pb.datafit
        g = datafit.decision(coef, 0.0)
        bias = best_bias(g, datafit.y, datafit.sample_weight, self.fit_intercept)
        decision = g - bias
        point = _Point(coef=coef, bias=bias, decision=decision,
                       objective=self.pb.objective(coef, decision), mu=mu)
        xi = np.maximum(1.0 - self.y * decision[self.live], 0.0)
        alpha = _dual_feasible(self.cs * xi, self.y, self.fit_intercept)
        self.best_dual = max(self.best_dual, self._dual_value(alpha))
        self._keep(point)
        return point

    def _keep(self, point):
        """Keep ``point`` if it beats the best one.

        Lower by more than rounding (:data:`TIE_TOL` relative) wins; within
        rounding the smaller KKT residual does (near the optimum the
        objectives of successive points differ in their last bits only,
        their residuals do not).
        """
        best = self.best
        if best is None or point.objective < best.objective - TIE_TOL * abs(best.objective):
            self.best = point
        elif (point.objective <= best.objective + TIE_TOL * abs(best.objective)
              and self.solver.kkt_tol is not None
              and self._kkt(point) < self._kkt(best)):
            self.best = point

    def _kkt(self, point):
        """The relative KKT residual of a primal candidate (the other solvers' test)."""
        if math.isnan(point.kkt):
            datafit = self.pb.datafit
            d = np.empty(datafit.decision_size)
            datafit.value_derivative(point.decision, d)
            point.kkt, _ = kkt_residual(self.pb, point.coef, datafit.gradient(d),
                                        datafit.bias_gradient(d), self.fit_intercept)
        return point.kkt

    def _measures(self):
        """The relative gap and (if asked for) the KKT residual of the best points."""
        gap = _relative_gap(self.best.objective, self.best_dual)
        if self.solver.kkt_tol is None:
            return gap, math.inf
        return gap, self._kkt(self.best)

    def _certified(self):
        """Whether the best points so far pass the stop (gap, then KKT)."""
        solver = self.solver
        if not _relative_gap(self.best.objective, self.best_dual) <= solver.tol:
            return False
        return solver.kkt_tol is None or self._kkt(self.best) <= solver.kkt_tol

    # -- SVMs and the reduced gradient ------------------------------------------
    def _evaluate(self, mu):
        """Solve the SVM at ``mu``; offer its primal and dual points."""
        self.n_svm += 1
        self.alpha, self.bias = self.svm.solve(mu[self.col_block], self.alpha, self.bias)
        alpha = self.alpha
        c = self.X.T @ (self.y * alpha)
        block_sq = _block_sums(c * c, self.block_ptr)
        J = (float(alpha.sum()) - 0.5 * float((alpha * alpha) @ self.inv_cs)
             - 0.5 * float(mu @ block_sq))
        self.best_dual = max(self.best_dual, self._dual_value(alpha))
        self._offer(c * mu[self.col_block], mu)
        return _Trial(mu=mu, J=J, grad=-0.5 * block_sq)

    def _step(self, current, direction, slope):
        """Move along ``direction``: maximal step, else a line search (module notes).

        Returns the new point, or None when no decrease was found.
        """
        mu = current.mu
        negative = np.flatnonzero(direction < 0)
        ratios = mu[negative] / -direction[negative]
        gamma_max = float(np.min(ratios))
        blocking = negative[ratios <= gamma_max]

        def at(gamma):
            new = np.maximum(mu + gamma * direction, 0.0)
            if gamma >= gamma_max:
                new[blocking] = 0.0
            return new / new.sum()

        # phi(gamma) = J(mu + gamma D) is convex with phi'(0) = slope < 0
        lo = (0.0, current.J, slope)  # (gamma, phi, phi') with phi' < 0
        hi = None  # (gamma, phi, phi') with phi' >= 0, once found
        best = None
        gamma = min(gamma_max, self.last_step or gamma_max)
        for _ in range(_MAX_LINE_SEARCH):
            trial = self._evaluate(at(gamma))
            d = float(trial.grad @ direction)
            # near the optimum the decrease gamma * slope falls below the
            # rounding of J: the derivative decides, J only has to not rise
            # beyond rounding
            lower = trial.J <= current.J + _noise(current.J)
            if lower and (best is None or trial.J < best.J):
                best = trial
            if d < 0.0:
                if gamma >= gamma_max:  # J decreases all the way: SimpleMKL's step
                    self.last_step = gamma
                    return trial if lower else best
                lo = (gamma, trial.J, d)
            else:
                hi = (gamma, trial.J, d)
            if abs(d) <= LINE_SEARCH_FACTOR * abs(slope) and lower:
                self.last_step = gamma
                return trial
            if hi is None:  # extrapolate the secant of phi' from 0, at most 4 times
                g0, d0 = lo[0], lo[2]
                grow = slope / (slope - d0) if d0 > slope else 4.0
                gamma = min(gamma_max, g0 * min(max(grow, 1.5), 4.0))
            else:
                gamma = _interpolate(lo, hi)
                if not lo[0] < gamma < hi[0]:
                    break  # the bracket has shrunk to rounding
        if best is not None:
            self.last_step = float((best.mu - mu) @ direction / (direction @ direction))
        return best

    def run(self, coef0):
        """The reduced-gradient loop; returns an :class:`MKLResult`."""
        pb, solver = self.pb, self.solver
        p, t = pb.p, pb.t
        history = []
        n_iter = 0
        if not np.any(self.alive):
            # no column carries anything: w = 0 with the exact best bias
            self._offer(np.zeros(p), np.full(t, 1.0 / t) if t else np.zeros(0))
            return self._result(0, True, history)
        coef0 = (np.zeros(p) if coef0 is None
                 else np.array(coef0, dtype=np.float64))  # a copy
        coef0[~self.alive[self.col_block]] = 0.0  # weights on zero columns only cost
        norms0 = np.sqrt(_block_sums(coef0 * coef0, self.block_ptr)) * self.alive
        if np.any(norms0 > 0):
            mu = norms0 / norms0.sum()
            self._offer(coef0, mu.copy())
        else:
            mu = self.alive / self.alive.sum()
        current = self._evaluate(mu)
        certified = False
        records = [math.inf, math.inf]  # the smallest gap and KKT residual so far
        stalled = 0
        for n_iter in range(1, solver.max_iter + 1):
            certified = self._certified()
            history.append(self.best.objective)
            if certified:
                break
            progress = False
            for i, value in enumerate(self._measures()):
                if value < records[i]:
                    records[i], progress = value, True
            stalled = 0 if progress else stalled + 1
            if stalled >= STALL_ITERATIONS:
                break  # neither the gap nor the residual improves: rounding
            direction = _reduced_direction(current.mu, current.grad, self.alive)
            slope = float(current.grad @ direction)
            scale = float(np.max(np.abs(current.grad)))
            if not (slope < 0.0 and np.max(np.abs(direction)) > STALL_TOL * scale):
                break  # no measurable descent left
            moved = self._step(current, direction, slope)
            if moved is None:
                break  # the line search found no decrease: rounding noise
            current = moved
        else:
            certified = self._certified()
        return self._result(n_iter, certified, history)

    def _result(self, n_iter, converged, history):
        best = self.best
        alpha = np.zeros(self.pb.n)
        alpha[self.live] = self.alpha
        return MKLResult(
            coef=best.coef,
            bias=float(best.bias),
            objective=best.objective,
            n_iter=n_iter,
            lipschitz=None,
            converged=bool(converged),
            decision=best.decision,
            history=history,
            kkt=self._kkt(best),
            kkt_tol=self.solver.kkt_tol,
            mu=best.mu,
            gap=_relative_gap(best.objective, self.best_dual),
            dual_objective=self.best_dual,
            alpha=alpha,
            n_svm=self.n_svm,
            n_newton=self.svm.n_newton,
        )


def _reduced_direction(mu, grad, alive):
    """SimpleMKL's descent direction: reduced gradient w.r.t. the largest weight."""
    m = int(np.argmax(mu))
    direction = grad[m] - grad
    direction[(mu <= 0.0) & (grad >= grad[m])] = 0.0
    direction[~alive] = 0.0
    direction[m] = 0.0
    direction[m] = -direction.sum()
    return direction


def _interpolate(lo, hi):
    """Minimiser of the cubic through two ``(gamma, phi, phi')`` (Nocedal-Wright 3.59).

    Falls back on the secant of ``phi'``, then on bisection, whenever the
    cubic is undefined or lands within 1% of an end of the bracket.
    """
    (a, fa, da), (b, fb, db) = lo, hi
    width = b - a
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    disc = d1 * d1 - da * db
    gamma = math.nan
    if disc >= 0.0:
        d2 = math.sqrt(disc)
        denom = db - da + 2.0 * d2
        if denom != 0.0:
            gamma = b - width * (db + d2 - d1) / denom
    if not a + 0.01 * width < gamma < b - 0.01 * width:
        gamma = a - da * width / (db - da)
    if not a + 0.01 * width < gamma < b - 0.01 * width:
        gamma = a + 0.5 * width
    return gamma


def _noise(value):
    """Rounding slack of a comparison of two dual values near ``value``."""
    return 1e-13 * abs(value)


def _relative_gap(primal, dual):
    """``(primal - dual) / primal`` clipped at 0; 0 when both are 0."""
    gap = max(primal - dual, 0.0)
    if primal > 0:
        return gap / primal
    return 0.0 if gap == 0.0 else math.inf
