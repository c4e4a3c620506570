"""The FGM subproblem shared by its solvers: the problem, the result, the certificate.

``min_{w, b} Omega(w) + P(w, b)`` for a datafit ``P``
(:mod:`ultrafs.solvers.datafits`) and a penalty ``Omega``
(:mod:`ultrafs.solvers.penalties`) over coefficient blocks ``block_ptr``.
Both solvers (:mod:`ultrafs.solvers.apg`, :mod:`ultrafs.solvers.prox_newton`)
take a :class:`Problem`, return a :class:`SubproblemResult` and stop on the
same certificate, :func:`kkt_residual`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ultrafs.kernels.prox import block_norms as _block_norms
from ultrafs.solvers.certificate import Certificate, SolverResult
from ultrafs.solvers.penalties import Penalty

__all__ = ["DEFAULT_KKT_TOL", "Problem", "SubproblemResult", "kkt_residual"]

#: relative KKT residual that certifies a subproblem solution
DEFAULT_KKT_TOL = 1e-4


@dataclass
class SubproblemResult(SolverResult):
    """Solution of one FGM subproblem (a :class:`~ultrafs.solvers.certificate.SolverResult`).

    Attributes
    ----------
    coef : ndarray of float64, shape (p,)
        ``w``.
    bias : float
        ``b``; the decision function is ``f = X @ coef - bias``.
    objective : float
        ``F(w, b)``, evaluated from ``decision``.
    n_iter : int
        Inner iterations run: APG iterations (rejected ones included), or
        proximal Newton iterations (each one a gradient, the certificate
        and, unless it holds, a Newton step).
    lipschitz : float
        An estimate of the Lipschitz constant of ``grad_w P`` to pass as
        ``lipschitz0`` to the next subproblem: APG's ``eta * tau_k`` of the
        last kept step (Algorithm 4, step 8); proximal Newton's largest
        eigenvalue of its last Hessian in ``w``.
    converged : bool
        True when stopped with a KKT residual at most ``kkt_tol`` (or, with
        ``kkt_tol=None``, by the relative decrease test); False otherwise
        (``max_iter`` reached, or no further decrease measurable without
        the certificate).
    decision : ndarray of float64, shape (n,)
        ``X @ coef - bias``.
    history : list of float
        Objective of the iterate kept after each inner iteration
        (non-increasing; ``len(history) == n_iter``).
    kkt : float
        The relative KKT residual (:func:`kkt_residual`) last computed, at
        the returned point when the stop was certified; NaN if never
        computed.
    kkt_tol : float or None
        The tolerance ``kkt`` was held to (None: the uncertified stop, the
        relative decrease test of APG's eq. 40).
    """

    coef: np.ndarray
    bias: float
    objective: float
    n_iter: int
    lipschitz: float
    converged: bool
    decision: np.ndarray
    history: list = field(default_factory=list)
    kkt: float = float("nan")
    kkt_tol: float | None = float("nan")

    @property
    def intercept(self):
        """``-bias``: the decision of a sample is ``x' coef + intercept``."""
        return -self.bias

    @property
    def certificate(self) -> Certificate:
        """The relative KKT residual ``kkt`` against ``kkt_tol`` (kind
        ``kkt_ratio``; ``stationarity`` for the uncertified stop)."""
        if self.kkt_tol is None:
            return Certificate(kind="stationarity", value=float(self.kkt),
                               passed=bool(self.converged))
        return Certificate(kind="kkt_ratio", value=float(self.kkt),
                           tol=float(self.kkt_tol), passed=bool(self.converged))


@dataclass(frozen=True)
class Problem:
    """One subproblem: a datafit, a penalty and the coefficient blocks.

    Attributes
    ----------
    datafit : Datafit
    penalty : Penalty
    block_ptr : ndarray of int64, shape (t + 1,)
        Coefficient blocks (in coefficient units).
    """

    datafit: object
    penalty: Penalty
    block_ptr: np.ndarray

    @property
    def n(self):
        """Number of rows."""
        return self.datafit.n

    @property
    def weight_total(self):
        """``sum_i s_i`` of a weighted datafit; ``n`` otherwise."""
        return getattr(self.datafit, "weight_total", self.n)

    @property
    def p(self):
        """Number of coefficients."""
        return self.datafit.n_coef

    @property
    def t(self):
        """Number of blocks."""
        return len(self.block_ptr) - 1

    @property
    def C(self):
        """Weight of the data term."""
        return self.datafit.C

    def decision(self, coef, bias):
        """Return ``A(coef) - bias``."""
        return self.datafit.decision(coef, bias)

    def block_products(self, coef, out):
        """Write ``A_h(coef_h)`` into row ``h`` of ``out``."""
        return self.datafit.block_products(coef, self.block_ptr, out)

    def gradient(self, derivative):
        """Return the gradient of ``P`` w.r.t. ``w``."""
        return self.datafit.gradient(derivative)

    def data_term(self, decision):
        """Return ``P`` for the given decision values."""
        return self.datafit.value(decision)

    def objective(self, coef, decision):
        """Return ``Omega(coef) + P`` for the given decision values."""
        return self.penalty.value(coef, self.block_ptr) + self.data_term(decision)


def kkt_residual(pb, coef, grad, bias_grad, fit_intercept):
    """Relative KKT residual of ``min Omega + P`` at ``coef``: the solvers' stop.

    The largest distance over the blocks from ``-grad_h`` to the
    subdifferential of ``Omega`` at ``coef``, and ``||dP/db||`` when the
    intercept is fitted, divided by the problem's own scale at that point,
    the largest block norm of ``grad`` (for the l2,1-squared penalty it
    equals ``sum_h ||w_h||`` at the optimum, so the test depends neither on
    the scale of the data nor on ``C``).

    Parameters
    ----------
    pb : Problem
    coef : ndarray of float64, shape (p,)
    grad : ndarray of float64, shape (p,)
        ``grad_w P`` at ``(coef, bias)``.
    bias_grad : float or ndarray of shape (K,)
        ``dP/db`` there.
    fit_intercept : bool

    Returns
    -------
    residual : float
        0 when the point is exactly optimal with a zero gradient, inf when
        the gradient in ``w`` is zero but the bias is not optimal.
    scale : float
        The largest block norm of ``grad``.
    """
    distance = float(np.max(pb.penalty.subdiff_distance(coef, grad, pb.block_ptr),
                            initial=0.0))
    if fit_intercept:
        distance = max(distance, math.sqrt(sqnorm(bias_grad)))
    scale = _largest_block_norm(grad, pb.block_ptr)
    if scale == 0.0:
        return (0.0 if distance == 0.0 else math.inf), scale
    return distance / scale, scale


def sqnorm(x):
    """``x * x`` for a float, ``x . x`` for an array."""
    if isinstance(x, np.ndarray):
        return float(x @ x)
    return x * x


def _largest_block_norm(x, block_ptr):
    """``max_h ||x_h||`` (0 without blocks)."""
    if len(block_ptr) < 2:
        return 0.0
    return float(np.max(_block_norms(x, block_ptr)))


def as_bias(bias):
    """A float for one output, a float64 array for K."""
    if isinstance(bias, np.ndarray):
        return bias.astype(np.float64, copy=True)
    return float(bias)
