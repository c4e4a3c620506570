"""The l1-regularised problem every l1 solver of seed 001 works on.

Problem (binary datafit through any operator ``Φ``, unpenalised bias
``b`` optional)::

    min_{w, b}  F(w, b) = C sum_i s_i l(y_i, (Φ w)_i - b) + lam ||w||_1

with a :class:`~ultrafs.solvers.datafits.Datafit` (loss ``l``, operator
``Φ``, weight ``C``, sample weights ``s``) and an
:class:`~ultrafs.solvers.penalties.L1` penalty (``lam = penalty.alpha``).
Seed 001's model (2) is the logistic loss with ``C = 1``, no bias.

This module holds what the solvers share: the objective, the gradient and
the Hessian diagonal in one pass, ``lam_max``, and the two certificates a
solver stops on:

* **duality gap** (Koh, Kim & Boyd; the digest's §A1): the dual point
  ``u = theta * xi`` with ``xi = -C s dl/df`` (FGM's ``alpha * y``) and
  ``theta = min(1, lam / ||Φ' xi||_inf)`` is feasible; its value comes from
  the loss (:meth:`~ultrafs.solvers.losses.Logistic.dual_value`).  With a
  bias the dual also needs ``sum_i xi_i = 0``: ``xi`` is taken at the exact
  best bias ``b*`` of the current ``w`` (1-D Newton), where it holds.
  ``gap = F(w, b) - D(u) >= 0`` bounds the suboptimality of ``(w, b)``.
* **KKT residual**: ``max_j`` of ``|g_j + lam sign w_j|`` (``w_j != 0``)
  and ``max(0, |g_j| - lam)`` (``w_j = 0``), and ``|dF/db|``.

Nothing here knows about stores: the operator gives ``matvec``,
``rmatvec`` and ``rmatvec_hess``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.solvers.certificate import Certificate, SolverResult
from ultrafs.solvers.penalties import L1

__all__ = ["L1Problem", "L1Solution", "DualityGap", "lam_max", "restrict_problem",
           "DenseOperator", "make_solution"]

#: Newton steps at most for the exact bias of the certificate
_BIAS_STEPS = 50


@dataclass(frozen=True, kw_only=True)
class DualityGap(Certificate):
    """Optimality certificate of a point ``(w, b)``: a
    :class:`~ultrafs.solvers.certificate.Certificate` of kind
    ``duality_gap`` whose ``value`` is ``rel_gap``, with its parts.

    Attributes
    ----------
    primal : float
        ``F(w, b)``.
    dual : float
        Value of the feasible dual point (``-inf`` when none was found).
    gap : float
        ``primal - dual`` (``>= 0`` up to rounding).
    rel_gap : float
        ``gap / max(|primal|, tiny)``.
    kkt : float
        KKT residual (absolute), see the module docstring.
    best_bias : float
        The exact best bias of ``w`` (``b`` itself without intercept).
    """

    primal: float
    dual: float
    gap: float
    rel_gap: float
    kkt: float
    best_bias: float
    kind: str = "duality_gap"


@dataclass
class L1Solution(SolverResult):
    """What an l1 solver returns.

    Attributes
    ----------
    coef : float64 array, shape (M,)
    bias : float
        ``b`` of the datafit (decision ``Φ w - b``); the intercept is ``-b``.
    objective : float
        ``F(coef, bias)``.
    certificate : DualityGap
        At the returned point (``tol``: the solver's, ``passed``: ``converged``).
    converged : bool
        The stop was the certificate (``rel_gap <= tol``).
    n_iter : int
        Iterations (solver-specific unit: FISTA/CGD steps, SGD epochs).
    solver : str
    history : list of dict
        One record per iteration (``iter``, ``objective``) and, at the
        certificate checks, ``gap`` / ``rel_gap``.
    info : dict
        Solver-specific counters (line-search trials, restarts, ``eta0``).
    """

    coef: np.ndarray
    bias: float
    objective: float
    certificate: Certificate
    converged: bool
    n_iter: int
    solver: str
    history: list = field(default_factory=list)
    info: dict = field(default_factory=dict)

    @property
    def intercept(self) -> float:
        """``-bias``: the decision of a sample is ``φ(x)' coef + intercept``."""
        return -self.bias

    @property
    def nnz(self) -> int:
        """Nonzero coefficients."""
        return int(np.count_nonzero(self.coef))


class DenseOperator:
    """``Φ`` held as a dense ``(N, M)`` float64 array (restricted problems, tests).

    Parameters
    ----------
    matrix : array-like, shape (N, M)
    """

    n_outputs = 1

    def __init__(self, matrix):
        self.matrix = np.asfortranarray(matrix, dtype=np.float64)
        self.n_rows, self.n_coef = self.matrix.shape

    @property
    def nnz(self) -> int:
        """Entries (dense)."""
        return self.matrix.size

    def matvec(self, w):
        """``Φ w``."""
        return self.matrix @ np.asarray(w, dtype=np.float64)

    def rmatvec(self, r):
        """``Φ' r``."""
        return self.matrix.T @ np.asarray(r, dtype=np.float64)

    def rmatvec_hess(self, r, s):
        """``(Φ' r, (Φ∘Φ)' s)``."""
        return self.rmatvec(r), (self.matrix * self.matrix).T @ s

    def columns(self, cols):
        """Dense ``Φ[:, cols]`` (Fortran order)."""
        return np.asfortranarray(self.matrix[:, np.asarray(cols, dtype=np.int64)])

    def take_rows(self, rows):
        """Dense ``Φ[rows]`` (C order)."""
        return np.ascontiguousarray(self.matrix[np.asarray(rows, dtype=np.int64)])


class L1Problem:
    """``F(w, b) = datafit(w, b) + lam ||w||_1`` (see the module docstring).

    Parameters
    ----------
    datafit : Datafit
        A binary datafit (one output); its operator must provide
        ``matvec``, ``rmatvec`` and ``rmatvec_hess``.
    penalty : L1 or float
        The l1 penalty (a float is ``L1(alpha=value)``).
    fit_intercept : bool, default False
        Optimise the unpenalised bias ``b`` too (seed 001's model has none).
    """

    def __init__(self, datafit, penalty, fit_intercept=False):
        if not isinstance(penalty, L1):
            penalty = L1(penalty)
        if datafit.n_outputs != 1:
            raise ParameterError("the l1 solvers take a binary datafit (one output)")
        for name in ("matvec", "rmatvec", "rmatvec_hess"):
            if getattr(datafit.operator, name, None) is None:
                raise ParameterError(f"the l1 solvers need an operator with {name}; "
                                     f"{type(datafit.operator).__name__} has none")
        if not hasattr(datafit.loss, "dual_value"):
            raise ParameterError(f"the loss {datafit.loss.name!r} has no dual value: "
                                 "no duality gap can certify it")
        self.datafit = datafit
        self.penalty = penalty
        self.fit_intercept = bool(fit_intercept)

    # ----------------------------------------------------------- sizes
    @property
    def lam(self) -> float:
        """``lam``."""
        return self.penalty.alpha

    @property
    def n_coef(self) -> int:
        """``M``."""
        return self.datafit.n_coef

    @property
    def operator(self):
        """``Φ``."""
        return self.datafit.operator

    def with_lam(self, lam) -> "L1Problem":
        """The same problem with another ``lam``."""
        return L1Problem(self.datafit, L1(lam), self.fit_intercept)

    # --------------------------------------------------------- values
    def decision(self, w, b):
        """``Φ w - b``."""
        return self.datafit.decision(w, b)

    def value(self, w, f):
        """``F`` at coefficients ``w`` with decision ``f``."""
        return self.datafit.value(f) + self.lam * float(np.sum(np.abs(w)))

    def derivatives(self, f, hessian=False):
        """Data term, ``dl/df`` and (optionally) ``C s l''`` at ``f``.

        Returns
        -------
        value : float
        derivative : float64 array (n,)
            ``s dl/df`` (not scaled by ``C``).
        second : float64 array (n,) or None
            ``C s l''(f)``.
        """
        derivative = np.empty(self.datafit.n)
        value = self.datafit.value_derivative(f, derivative)
        second = None
        if hessian:
            d = self.datafit
            second = d.loss.second_derivative(d.y, f, weights=d.sample_weight)
            second *= d.C
        return value, derivative, second

    def gradient(self, derivative, second=None):
        """``∇_w`` of the data term (and the Hessian diagonal when ``second`` is given)."""
        C = self.datafit.C
        if second is None:
            g = self.operator.rmatvec(derivative)
            g *= C
            return g, None
        g, h = self.operator.rmatvec_hess(derivative, second)
        g = g * C
        return g, np.asarray(h, dtype=np.float64)

    def bias_gradient(self, derivative) -> float:
        """``dF/db``."""
        return float(self.datafit.bias_gradient(derivative))

    # -------------------------------------------------- exact bias
    def best_bias(self, w, b, f=None):
        """The exact minimiser of ``F(w, ·)`` by safeguarded 1-D Newton.

        Returns ``(b*, f*)``: the bias and the decision at it (``b`` and
        ``f`` unchanged without intercept).
        """
        if f is None:
            f = self.decision(w, b)
        if not self.fit_intercept:
            return b, f
        d = self.datafit
        f = f.copy()
        derivative = np.empty(d.n)
        for _ in range(_BIAS_STEPS):
            d.value_derivative(f, derivative)
            grad = float(d.bias_gradient(derivative))
            curv = float(d.bias_curvature(f, derivative))
            if not (curv > 0) or abs(grad) <= 1e-13 * max(1.0, d.C * d.weight_total):
                break
            step = grad / curv
            # decrease guard: halve until the data term does not rise
            for _ in range(60):
                change = d.value_change(f, np.full(d.n, step))
                if change <= 0:
                    break
                step *= 0.5
            else:
                break
            b -= step
            f += step
            if abs(step) <= 1e-15 * max(1.0, abs(b)):
                break
        return b, f

    # ------------------------------------------------- certificates
    def certificate(self, w, b, f=None, grad=None, derivative=None) -> DualityGap:
        """Duality gap and KKT residual at ``(w, b)``.

        Parameters
        ----------
        w : float64 array (M,)
        b : float
        f : float64 array (n,), optional
            ``Φ w - b`` if already known.
        grad, derivative : float64 arrays, optional
            ``∇_w`` of the data term and ``s dl/df`` at ``f`` if already
            known (without intercept they give the gap for free).

        Returns
        -------
        DualityGap
            With ``tol`` NaN and ``passed`` False: the solver that stops on it
            sets them (:func:`make_solution`).
        """
        d = self.datafit
        lam = self.lam
        if f is None:
            f = self.decision(w, b)
        if derivative is None:
            derivative = np.empty(d.n)
            d.value_derivative(f, derivative)
        primal = d.value(f) + lam * float(np.sum(np.abs(w)))
        if grad is None:
            grad = self.gradient(derivative)[0]
        kkt = _kkt(w, grad, lam)
        if self.fit_intercept:
            kkt = max(kkt, abs(self.bias_gradient(derivative)))
            b_star, f_star = self.best_bias(w, b, f)
            if b_star == b:               # b is already the best bias: f* = f
                grad_star = grad
            else:
                d_star = np.empty(d.n)
                d.value_derivative(f_star, d_star)
                grad_star = self.gradient(d_star)[0]
        else:
            b_star, f_star, grad_star = b, f, grad
        # xi = -C s dl/df, Φ' xi = -grad
        norm = float(np.max(np.abs(grad_star))) if len(grad_star) else 0.0
        theta = 1.0 if norm <= lam else lam / norm
        dual = d.loss.dual_value(d.y, f_star, theta, d.C, d.sample_weight)
        gap = primal - dual
        rel_gap = float(gap / max(abs(primal), 1e-300))
        return DualityGap(value=rel_gap, primal=float(primal), dual=float(dual),
                          gap=float(gap), rel_gap=rel_gap, kkt=float(kkt),
                          best_bias=float(b_star))

    def lam_max(self) -> float:
        """Smallest ``lam`` with solution ``w = 0`` (:func:`lam_max`)."""
        return lam_max(self.datafit, self.fit_intercept)

    def start(self, w0=None, b0=None):
        """Checked starting point: ``w0`` (default 0) and ``b0`` (default the
        best bias of the zero model, or 0 without intercept)."""
        M = self.n_coef
        if w0 is None:
            w = np.zeros(M)
        else:
            w = np.array(w0, dtype=np.float64)
            if w.shape != (M,) or not np.all(np.isfinite(w)):
                raise ParameterError(f"w0 must be {M} finite numbers")
        if b0 is None:
            b = self.datafit.optimal_bias(self.fit_intercept)
            if self.fit_intercept and w.any():
                b = self.best_bias(w, b)[0]
        else:
            b = float(b0) if self.fit_intercept else 0.0
            if not math.isfinite(b):
                raise ParameterError("b0 must be finite")
        return w, float(b)


def _kkt(w, grad, lam) -> float:
    """KKT residual of the l1 part (absolute)."""
    if not len(w):
        return 0.0
    res = np.where(w != 0, np.abs(grad + lam * np.sign(w)),
                   np.maximum(0.0, np.abs(grad) - lam))
    return float(np.max(res))


def lam_max(datafit, fit_intercept=False) -> float:
    """Smallest ``lam`` at which ``w = 0`` is optimal: ``||∇_w f(0, b0)||_inf``.

    ``b0`` is the exact best bias of the zero model with an intercept (0
    without).  For the logistic loss without intercept this is ``C/2
    ||Φ' y||_inf`` (the digest's correction of the paper's eq. 16, which is
    the formula *with* an intercept).

    Parameters
    ----------
    datafit : Datafit
    fit_intercept : bool

    Returns
    -------
    float
    """
    b0 = datafit.optimal_bias(fit_intercept)
    f = datafit.constant_decision(b0)
    derivative = np.empty(datafit.n)
    datafit.value_derivative(f, derivative)
    grad = datafit.gradient(derivative)
    return float(np.max(np.abs(grad))) if len(grad) else 0.0


def restrict_problem(problem, cols):
    """The problem over the columns ``cols`` only (others held at 0).

    The operator gives ``restrict(cols)`` where it can (CSC columns);
    otherwise the columns are materialised densely
    (:class:`DenseOperator`).

    Returns
    -------
    L1Problem
    """
    from ultrafs.solvers.datafits import Datafit

    d = problem.datafit
    cols = np.asarray(cols, dtype=np.int64)
    restrict = getattr(d.operator, "restrict", None)
    operator = restrict(cols) if restrict is not None else DenseOperator(
        d.operator.columns(cols))
    datafit = Datafit(d.loss, operator, d.y, d.C, d.sample_weight)
    return L1Problem(datafit, problem.penalty, problem.fit_intercept)


def make_solution(problem, w, b, cert, converged, n_iter, name, history, info, tol=math.nan):
    """An :class:`L1Solution` at ``(w, b)``, with the exact best bias
    where it lowers the objective (``cert`` is the certificate at ``(w, b)``;
    ``tol`` the relative gap the solver stopped at, ``converged`` whether it did)."""
    if problem.fit_intercept and cert.best_bias != b:
        f_star = problem.decision(w, cert.best_bias)
        if problem.value(w, f_star) < cert.primal:
            b = cert.best_bias
            cert = problem.certificate(w, b, f_star)
    cert = replace(cert, tol=float(tol), passed=bool(converged))
    return L1Solution(coef=np.asarray(w, dtype=np.float64), bias=float(b),
                      objective=cert.primal, certificate=cert, converged=bool(converged),
                      n_iter=int(n_iter), solver=name, history=history, info=info)
