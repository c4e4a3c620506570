"""IRLS for the ℓ2,r loss with the ℓ2,p row penalty (GSR-FS, seed 002).

The problem (eq. 2 of Peng & Fan, with the ε-smoothing of the digest and
an optional unpenalised bias ``b``)::

    min_{W, b}  J_ε(W, b) = Σ_i (‖x_i W + b − y_i‖² + ε)^{r/2}
                           + λ Σ_j (‖w_j‖² + ε')^{p/2}

is a datafit, :class:`L2rDatafit` (the ℓ2,r loss of the residuals
through a Gram operator, :mod:`ultrafs.solvers.gram_operators`), plus a
penalty, :class:`L2pRows` (the ℓ2,p norm of the rows of ``W``), held by an
:class:`IRLSProblem`.  :func:`irls` solves it by iteratively reweighted
least squares (the paper's Algorithm 1): from ``s1 = 1``, ``s2 = 1`` (the
first iterate is ridge regression) each iteration solves the reweighted
ridge problem ``min Σ_i s1_i ‖x_i W + b − y_i‖² + λ Σ_j s2_j ‖w_j‖²``
(:class:`ReweightedRidge`, in the primal or the Woodbury form) and sets
``s1_i = (r/2)(‖e_i‖² + ε)^{(r−2)/2}``, ``s2_j = (p/2)(‖w_j‖² +
ε')^{(p−2)/2}``: a majorise-minimise step, so ``J_ε`` never increases.

Certificate: the relative stationarity residual ``‖∇J_ε‖ / ‖∇J_ε(W_1)‖``
over the live rows (norm above ``LIVE_ROW_RTOL·max``) and the bias
(kind ``stationarity``), or, with the paper's ``stop="objective"``, the
relative change of ``J_ε`` (kind ``objective_change``).
:mod:`ultrafs.methods.gsrfs` builds the problem and ranks the rows.

Sample weights ``w`` (``L2rDatafit.sample_weight``) weight each sample's
loss, ``Σ_i w_i (‖e_i‖² + ε)^{r/2}``: IRLS starts from ``s1 = w`` (the
weighted ridge) and reweights by ``s1_i = w_i (r/2)(‖e_i‖² + ε)^{(r−2)/2}``,
so every solve, the bias's centring and the certificate are the weighted
problem's; a weight of 0 is a dropped sample.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla

from ultrafs.errors import ParameterError, UltraFSWarning
from ultrafs.progress import phase
from ultrafs.solvers.certificate import Certificate, SolverResult

__all__ = ["L2rDatafit", "L2pRows", "IRLSProblem", "IRLSResult", "ReweightedRidge",
           "irls", "smoothed_objective", "sample_weights", "cholesky_solve",
           "EPS_REL", "EPS_PENALTY_REL", "LIVE_ROW_RTOL", "INITIAL_BETA", "MAX_BETA",
           "MIN_BETA", "S1_SPREAD_WARN", "IRLS_SOLVES", "IRLS_STOPS"]

#: the loss's ε = EPS_REL x the mean squared norm of the (centred) target rows
EPS_REL = 1e-10
#: the penalty's ε = (EPS_PENALTY_REL x the largest row norm of the ridge
#: start)²: rows IRLS drives to zero stall near √ε, below the ranking's
#: threshold, and the smoothing moves J by at most λ n √ε^p
EPS_PENALTY_REL = 1e-12
#: rows with ‖w_j‖ above this times the largest are "live" (stationarity)
LIVE_ROW_RTOL = 1e-6
#: the step of the safeguarded extrapolation (``accelerate``): start, bounds
INITIAL_BETA = 1.0
MAX_BETA = 8.0
MIN_BETA = 1.0 / 64
#: s1 spread above which r < 1 warns that near-interpolated samples dominate
S1_SPREAD_WARN = 1e12
IRLS_SOLVES = ("primal", "woodbury")
IRLS_STOPS = ("stationarity", "objective")


@dataclass(frozen=True)
class L2rDatafit:
    """``Σ_i (‖x_i W + b − y_i‖² + ε)^{r/2}`` through a Gram operator.

    Attributes
    ----------
    op : Gram operator
        Over ``X`` (n_samples x n_features): ``feature_gram``,
        ``sample_gram``, ``matmat``, ``rmatmat``.
    Y : float64 array (n_samples, c)
    r : float in (0, 2]
    eps : float
        The loss's smoothing ε.
    fit_intercept : bool
        An unpenalised bias per output.
    sample_weight : float64 array (n_samples,) or None
        Per-sample weights ``w_i >= 0`` of the loss (None: all 1).
    """

    op: object
    Y: np.ndarray
    r: float
    eps: float
    fit_intercept: bool = False
    sample_weight: np.ndarray | None = None

    name = "l2r"

    def value(self, E) -> float:
        """The loss at the residuals ``E = X W + b − Y``."""
        e2 = np.einsum("ij,ij->i", E, E)
        terms = (e2 + self.eps) ** (self.r / 2)
        if self.sample_weight is not None:
            terms = self.sample_weight * terms
        return float(np.sum(terms))


@dataclass(frozen=True)
class L2pRows:
    """``λ Σ_j (‖w_j‖² + ε')^{p/2}``, the ℓ2,p norm of the rows of ``W``.

    Attributes
    ----------
    lam : float > 0
    p : float in (0, 1]
    eps : float or None
        ε'; None: ``(EPS_PENALTY_REL · max_j ‖w_j‖)²`` at the ridge start.
    """

    lam: float
    p: float
    eps: float | None = None

    name = "l2p-rows"


@dataclass(frozen=True)
class IRLSProblem:
    """``J_ε = datafit + penalty`` (see the module docstring)."""

    datafit: L2rDatafit
    penalty: L2pRows


def smoothed_objective(E, W, r, p, lam, eps, eps_penalty=None,
                       sample_weight=None) -> float:
    """``J_ε = Σ_i w_i (‖e_i‖² + ε)^{r/2} + λ Σ_j (‖w_j‖² + ε')^{p/2}``.

    ``ε' = eps_penalty`` (None: ``eps``); both 0 give the paper's ``J``;
    ``w = sample_weight`` (None: all 1).
    """
    eps_penalty = eps if eps_penalty is None else eps_penalty
    e2 = np.einsum("ij,ij->i", E, E)
    w2 = np.einsum("ij,ij->i", W, W)
    loss = (e2 + eps) ** (r / 2)
    if sample_weight is not None:
        loss = sample_weight * loss
    return float(np.sum(loss) + lam * np.sum((w2 + eps_penalty) ** (p / 2)))


def cholesky_solve(A, B):
    """Solve the SPD system ``A X = B``, with jitter ``1e-12·trace/n`` if needed."""
    try:
        return sla.cho_solve(sla.cho_factor(A, lower=True, check_finite=False), B,
                             check_finite=False)
    except (np.linalg.LinAlgError, sla.LinAlgError):
        jitter = 1e-12 * max(float(np.trace(A)) / max(len(A), 1), 1e-300)
        A = A + jitter * np.eye(len(A))
        return sla.cho_solve(sla.cho_factor(A, lower=True, check_finite=False), B,
                             check_finite=False)


def sample_weights(E, r, eps):
    """``s1_i = (r/2)(‖e_i‖² + ε)^{(r−2)/2}``, shape (n_samples,)."""
    return (r / 2.0) * (np.einsum("ij,ij->i", E, E) + eps) ** ((r - 2.0) / 2.0)


class ReweightedRidge:
    """One reweighted ridge solve in the primal or the Woodbury form.

    Parameters
    ----------
    op : Gram operator
    Y : float64 array (n_samples, c)
    lam : float
    fit_intercept : bool
    solve : {"primal", "woodbury"}
    """

    def __init__(self, op, Y, lam, fit_intercept, solve):
        self.op, self.Y, self.lam = op, Y, float(lam)
        self.fit_intercept = bool(fit_intercept)
        self.solve = solve

    def __call__(self, s1, d):
        """``(W, b, E)`` minimising the reweighted problem at ``(s1, d)``."""
        if self.solve == "primal":
            return self._primal(s1, d)
        return self._woodbury(s1, d)

    def _centring(self, s1):
        total = float(s1.sum())
        pi = s1 / total
        nu = pi @ self.Y
        return total, pi, nu

    def _primal(self, s1, d):
        op, Y, lam = self.op, self.Y, self.lam
        G, u = op.feature_gram(s1)
        rhs = op.rmatmat(s1[:, None] * Y)
        if self.fit_intercept:
            total, _, nu = self._centring(s1)
            mu = u / total
            G = G - total * np.outer(mu, mu)
            rhs = rhs - total * np.outer(mu, nu)
        root = np.sqrt(d)
        A = root[:, None] * G * root[None, :]
        A[np.diag_indices_from(A)] += lam
        W = root[:, None] * cholesky_solve(A, root[:, None] * rhs)
        fitted = op.matmat(W)
        if self.fit_intercept:
            b = nu - mu @ W
        else:
            b = np.zeros(Y.shape[1])
        return W, b, fitted + b - Y

    def _woodbury(self, s1, d):
        op, Y, lam = self.op, self.Y, self.lam
        K = op.sample_gram(d)
        if self.fit_intercept:
            _, pi, nu = self._centring(s1)
            Kpi = K @ pi
            # P K Pᵀ with P = I − 1 πᵀ
            Kc = K - Kpi[:, None] - Kpi[None, :] + float(pi @ Kpi)
            Yc = Y - nu
        else:
            Kc, Yc = K, Y
        root = np.sqrt(s1)
        A = root[:, None] * Kc * root[None, :]
        A[np.diag_indices_from(A)] += lam
        Z = root[:, None] * cholesky_solve(A, root[:, None] * Yc)
        if self.fit_intercept:
            Zc = Z - np.outer(pi, Z.sum(axis=0))      # Pᵀ Z
        else:
            Zc = Z
        W = d[:, None] * op.rmatmat(Zc)
        if self.fit_intercept:
            # b = ν − πᵀ X W with X W = K Pᵀ Z
            b = nu - pi @ (K @ Zc)
            E = Kc @ Z - Yc
        else:
            b = np.zeros(Y.shape[1])
            E = K @ Z - Y
        return W, b, E


@dataclass
class IRLSResult(SolverResult):
    """What :func:`irls` returns (a :class:`~ultrafs.solvers.certificate.SolverResult`).

    Attributes
    ----------
    coef : float64 array (n_features, c)
        ``W``.
    intercept : float64 array (c,)
        ``b`` (zeros without a bias).
    objective : float
        ``J_ε`` at the returned iterate.
    n_iter : int
    certificate : Certificate
        ``stationarity`` (relative, over the live rows and the bias) or,
        with ``stop="objective"``, ``objective_change``.
    residuals : float64 array (n_samples, c)
        ``E = X W + b − Y``.
    row_norms : float64 array (n_features,)
    loss_gradient : float64 array (n_features, c)
        ``2 Xᵀ S1 E``, the gradient of the loss at the returned iterate.
    live : bool array (n_features,)
        Rows above ``LIVE_ROW_RTOL`` times the largest norm.
    stationarity : float
        The relative stationarity residual (whatever the stop).
    stop_reason : str
    eps_penalty : float
        The penalty's ε the run used.
    grad0 : float
        The gradient norm at the first iterate (the stationarity's scale).
    history : list of dict
        Per iteration: ``iteration``, ``objective``, ``rel_change``,
        ``stationarity``, ``extrapolated``.
    """

    coef: np.ndarray
    intercept: np.ndarray
    objective: float
    n_iter: int
    certificate: Certificate
    residuals: np.ndarray
    row_norms: np.ndarray
    loss_gradient: np.ndarray
    live: np.ndarray
    stationarity: float
    stop_reason: str
    eps_penalty: float
    grad0: float
    history: list = field(default_factory=list)

    @property
    def converged(self) -> bool:
        """The stop rule was met."""
        return self.certificate.passed


def irls(problem, *, solve="primal", tol=1e-4, gtol=1e-3, max_iter=300, min_iter=5,
         stop="stationarity", accelerate=None, callback=None, warn_stacklevel=2,
         start=None):
    """Solve an :class:`IRLSProblem` by IRLS (the module docstring).

    Parameters
    ----------
    problem : IRLSProblem
    solve : {"primal", "woodbury"}
        The form of the ridge solves.
    tol : float
        The paper's stop: ``|J_k − J_{k−1}| ≤ tol·J_{k−1}`` (``stop="objective"``).
    gtol : float
        The certificate: relative stationarity residual at most ``gtol``
        (``stop="stationarity"``).
    max_iter, min_iter : int
        Iteration bounds (no stop before ``min_iter``).
    stop : {"stationarity", "objective"}
    accelerate : bool or None
        None: True with ``stop="stationarity"``.  True: after each step try
        the extrapolated point ``W + β (W − W_k)`` and keep it when ``J_ε``
        is lower (β doubles after a success, at most :data:`MAX_BETA`, and
        halves after a failure); ``J_ε`` still never increases.
    callback : callable, optional
        ``callback(k, W, b)`` after every iteration.
    warn_stacklevel : int
        Stack level of the warning on spread sample weights (r < 1), above
        this function.
    start : IRLSResult, optional
        Warm start: the weights ``s1``, ``d`` of its iterate (and its
        penalty ε and the gradient norm its stationarity is relative to)
        instead of the ridge start.

    Returns
    -------
    IRLSResult
    """
    datafit, penalty = problem.datafit, problem.penalty
    if solve not in IRLS_SOLVES:
        raise ParameterError(f"solve must be one of {IRLS_SOLVES}, got {solve!r}")
    if stop not in IRLS_STOPS:
        raise ParameterError(f"stop must be one of {IRLS_STOPS}, got {stop!r}")
    if accelerate is None:
        accelerate = stop == "stationarity"
    op, Y = datafit.op, datafit.Y
    r, eps, fit_intercept = datafit.r, datafit.eps, datafit.fit_intercept
    lam, p, eps_penalty = penalty.lam, penalty.p, penalty.eps
    m, n = int(op.n_samples), int(op.n_features)
    solver = ReweightedRidge(op, Y, lam, fit_intercept, solve)
    weights = datafit.sample_weight

    def reweighted(E):
        s1 = sample_weights(E, r, eps)
        return s1 if weights is None else weights * s1

    s1 = np.ones(m) if weights is None else np.array(weights, dtype=np.float64)
    d = np.ones(n)
    grad0 = None
    if start is not None:
        if eps_penalty is None:
            eps_penalty = start.eps_penalty
        s1 = reweighted(start.residuals)
        d = (2.0 / p) * (np.einsum("ij,ij->i", start.coef, start.coef)
                         + eps_penalty) ** ((2.0 - p) / 2.0)
        grad0 = start.grad0
    history = []
    previous = np.inf
    beta = INITIAL_BETA
    current = None
    converged, reason = False, ""
    warned = False
    with phase(f"IRLS on {n:,} features, {m:,} samples ({solve} solve)", int(max_iter),
               "iteration") as progress:
        for k in range(1, int(max_iter) + 1):
            W, b, E = solver(s1, d)
            if eps_penalty is None:
                eps_penalty = (EPS_PENALTY_REL * float(np.sqrt(
                    np.einsum("ij,ij->i", W, W).max()))) ** 2 or EPS_REL
            J = smoothed_objective(E, W, r, p, lam, eps, eps_penalty, weights)
            if not np.isfinite(J):
                raise ParameterError("the GSR-FS objective is not finite: the data or the "
                                     "targets hold NaN or infinite values")
            extrapolated = False
            if accelerate and current is not None:
                We, be, Ee = (new + beta * (new - old) for new, old in zip((W, b, E), current))
                Je = smoothed_objective(Ee, We, r, p, lam, eps, eps_penalty, weights)
                if Je < J:
                    # the residuals afresh (one product): the extrapolated ones
                    # carry the last step's rounding, times 1 + β per step
                    Ee = op.matmat(We) + be - Y
                    Je = smoothed_objective(Ee, We, r, p, lam, eps, eps_penalty, weights)
                if Je < J:
                    W, b, E, J = We, be, Ee, Je
                    extrapolated = True
                    beta = min(2.0 * beta, MAX_BETA)
                else:
                    beta = max(beta / 2.0, MIN_BETA)
            current = (W, b, E)
            w2 = np.einsum("ij,ij->i", W, W)
            norms = np.sqrt(w2)
            s1 = reweighted(E)
            s2 = (p / 2.0) * (w2 + eps_penalty) ** ((p - 2.0) / 2.0)
            d = (2.0 / p) * (w2 + eps_penalty) ** ((2.0 - p) / 2.0)
            # ∇_W J_ε = 2 (Xᵀ S1 E + λ S2 W), ∇_b J_ε = 2 s1ᵀ E
            SE = s1[:, None] * E
            loss_grad = 2.0 * op.rmatmat(SE)
            grad = loss_grad + 2.0 * lam * s2[:, None] * W
            grad_b = 2.0 * SE.sum(axis=0) if fit_intercept else np.zeros(0)
            live = norms > LIVE_ROW_RTOL * norms.max() if norms.max() > 0 \
                else np.zeros(n, dtype=bool)
            g_live = float(np.sqrt(np.sum(grad[live] ** 2) + np.sum(grad_b ** 2)))
            if grad0 is None:
                grad0 = float(np.sqrt(np.sum(grad ** 2) + np.sum(grad_b ** 2)))
            stationarity = g_live / grad0 if grad0 > 0 else 0.0
            rel_change = abs(previous - J) / previous if np.isfinite(previous) and previous > 0 \
                else np.inf
            history.append({"iteration": k, "objective": J,
                            "rel_change": None if not np.isfinite(rel_change) else rel_change,
                            "stationarity": stationarity, "extrapolated": extrapolated})
            progress.update(1, status=(
                f"relative stationarity {stationarity:.2g} (gtol {gtol:g})"
                if stop == "stationarity" else
                f"relative objective change {rel_change:.2g} (tol {tol:g})"))
            if callback is not None:
                callback(k, W, b)
            if r < 1 and not warned:
                positive = s1 if weights is None else s1[weights > 0]
                spread = float(positive.max() / max(np.median(positive), 1e-300))
                if spread > S1_SPREAD_WARN:
                    warned = True
                    warnings.warn(f"r = {r}: sample weights spread over {spread:.1e}; nearly "
                                  f"interpolated samples dominate the fit", UltraFSWarning,
                                  stacklevel=warn_stacklevel + 1)
            previous = J
            if k >= min_iter:
                if stop == "stationarity" and stationarity <= gtol:
                    converged = True
                    reason = f"relative stationarity {stationarity:.2g} <= gtol {gtol:g}"
                    break
                if stop == "objective" and rel_change <= tol:
                    converged = True
                    reason = f"relative objective change {rel_change:.2g} <= tol {tol:g}"
                    break
    if not converged:
        reason = (f"iteration limit reached ({k}); relative stationarity "
                  f"{stationarity:.2g}")
    if stop == "stationarity":
        certificate = Certificate(kind="stationarity", value=float(stationarity),
                                  tol=float(gtol), passed=converged)
    else:
        value = rel_change if math.isfinite(rel_change) else math.nan
        certificate = Certificate(kind="objective_change", value=float(value),
                                  tol=float(tol), passed=converged)
    return IRLSResult(
        coef=W, intercept=np.asarray(b, dtype=np.float64), objective=J, n_iter=k,
        certificate=certificate, residuals=E, row_norms=norms, loss_gradient=loss_grad,
        live=live, stationarity=stationarity, stop_reason=reason,
        eps_penalty=float(eps_penalty), grad0=float(grad0), history=history)
