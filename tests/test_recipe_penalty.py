"""The "add a penalty" recipe: a new penalty in this one file.

The group elastic net ``Omega(w) = alpha sum_h ||w_h||_2 + beta/2 ||w||_2^2``
(group lasso plus ridge) is defined here with the interface of
``ultrafs/solvers/penalties.py`` (``value``, ``prox``, ``subdiff_distance``,
``block_radial``), built on the existing prox kernels (``kernels/prox.py``:
``block_norms``, ``block_soft_threshold``).  Without an edit anywhere else
it

* passes the penalty contract (``tests/solver_contracts.py:
  PenaltyContract``);
* is solved, through ``ultrafs.solvers.registry.solve``, by every
  registered solver whose ``fits(problem)`` takes a
  :class:`~ultrafs.solvers.subproblem.Problem` carrying it (APG: any
  penalty with a prox), and refused in one line by the others;
* passes the registry contract (``RegistryContract``) on those problems,
  with the certificate (the relative KKT residual) recomputed here from
  the subdifferential's definition and the objective checked against a
  plain proximal gradient written in the test.

``PENALTIES`` (``ultrafs/solvers/penalties.py``) is a name index only (no
method or solver reads it); it is filled for one test and restored.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from ultrafs.errors import ParameterError
from ultrafs.kernels import prox as _k
from ultrafs.solvers.datafits import Datafit
from ultrafs.solvers.losses import get_loss
from ultrafs.solvers.operators import CSCOperator
from ultrafs.solvers.penalties import PENALTIES, Penalty
from ultrafs.solvers.registry import SOLVERS, solve, solvers_fitting
from ultrafs.solvers.subproblem import Problem

try:
    from solver_contracts import PenaltyContract, RegistryContract, random_csc
except ImportError:  # pragma: no cover - run from the repository root
    from tests.solver_contracts import PenaltyContract, RegistryContract, random_csc

NAME = "group-elastic-net"


# ------------------------------------------------------------ the penalty
class GroupElasticNet(Penalty):
    """``Omega(w) = alpha sum_h ||w_h||_2 + beta/2 ||w||_2^2``.

    Its proximal operator is group soft-thresholding followed by the ridge
    shrinkage ``1 / (1 + beta step)``: one factor per block, so it is
    block-radial.

    Parameters
    ----------
    alpha : float
        Weight of the group norms (>= 0).
    beta : float
        Weight of the ridge term (>= 0).
    """

    block_radial = True

    def __init__(self, alpha=1.0, beta=1.0):
        alpha, beta = float(alpha), float(beta)
        if not (np.isfinite(alpha) and alpha >= 0 and np.isfinite(beta) and beta >= 0):
            raise ParameterError(f"alpha and beta must be finite and >= 0, got "
                                 f"{alpha!r}, {beta!r}")
        self.alpha, self.beta = alpha, beta

    def value(self, coef, block_ptr):
        """Return ``Omega(coef)``.

        Parameters
        ----------
        coef : ndarray of float64, shape (p,)
        block_ptr : ndarray of int64, shape (t + 1,)

        Returns
        -------
        float
        """
        coef = np.asarray(coef, dtype=np.float64)
        return (self.alpha * float(np.sum(_k.block_norms(coef, block_ptr)))
                + 0.5 * self.beta * float(coef @ coef))

    def prox(self, u, step, block_ptr, out=None):
        """Return ``(w, scale)``, ``w_h = scale[h] u_h``.

        Parameters
        ----------
        u : ndarray of float64, shape (p,)
        step : float
            Positive.
        block_ptr : ndarray of int64, shape (t + 1,)
        out : ndarray of float64, shape (p,), optional
            May be ``u``.

        Returns
        -------
        w : ndarray of float64, shape (p,)
        scale : ndarray of float64, shape (t,)
        """
        step = float(step)
        out = np.empty_like(u, dtype=np.float64) if out is None else out
        scale = _k.block_soft_threshold(u, self.alpha * step, block_ptr, out)
        shrink = 1.0 / (1.0 + self.beta * step)
        out *= shrink
        return out, np.asarray(scale) * shrink

    def subdiff_distance(self, coef, grad, block_ptr):
        """Per-block distance from ``-grad`` to ``dOmega(coef)``.

        For ``coef_h != 0``: ``||grad_h + alpha coef_h/||coef_h|| + beta coef_h||``;
        for ``coef_h = 0``: ``max(0, ||grad_h|| - alpha)``.

        Returns
        -------
        ndarray of float64, shape (t,)
        """
        norms = _k.block_norms(coef, block_ptr)
        out = np.empty(len(norms), dtype=np.float64)
        for h in range(len(norms)):
            sl = slice(block_ptr[h], block_ptr[h + 1])
            if norms[h] > 0:
                out[h] = np.linalg.norm(grad[sl] + self.alpha * coef[sl] / norms[h]
                                        + self.beta * coef[sl])
            else:
                out[h] = max(0.0, float(np.linalg.norm(grad[sl])) - self.alpha)
        return out

    def __repr__(self):
        return f"GroupElasticNet(alpha={self.alpha!r}, beta={self.beta!r})"


# ------------------------------------------------------------- problems
BLOCKS = np.array([0, 3, 5, 8])


def penalty_problem(rng, loss="logistic", n_classes=2, alpha=1.5, beta=0.4):
    """A datafit on 60 x 8 sparse data, the new penalty over three blocks.

    Returns the problem and the dense matrix (for the test's own checks).
    """
    n, p = 60, 8
    X = random_csc(rng, n, p)
    K = 1 if n_classes == 2 else n_classes
    if K == 1:
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        y[:2] = [-1.0, 1.0]
    else:
        y = (np.arange(n) % n_classes).astype(np.int64)
        rng.shuffle(y)
    target = "binary" if K == 1 else "multiclass"
    datafit = Datafit(get_loss(loss, target), CSCOperator(X.indptr, X.indices, X.data, n, K),
                      y, 1.3)
    return Problem(datafit, GroupElasticNet(alpha, beta), BLOCKS * K), X.toarray()


def kkt_ratio_by_definition(problem, coef, intercept):
    """The relative KKT residual at ``(coef, intercept)``, from the definition.

    The distance of ``-grad_h - beta w_h`` to ``alpha`` times the
    subdifferential of the Euclidean norm (the unit ball at 0, the unit
    vector otherwise), the bias gradient's norm, over the largest block
    norm of the gradient: numpy only, no method of the penalty.
    """
    d, pen, bp = problem.datafit, problem.penalty, problem.block_ptr
    bias = -np.asarray(intercept) if np.ndim(intercept) else -intercept
    f = d.decision(coef, bias)
    der = np.empty(d.decision_size)
    d.value_derivative(f, der)
    grad = d.gradient(der)
    worst = float(np.linalg.norm(np.atleast_1d(d.bias_gradient(der))))
    scale = 0.0
    for h in range(len(bp) - 1):
        g, w = grad[bp[h]:bp[h + 1]], coef[bp[h]:bp[h + 1]]
        scale = max(scale, float(np.linalg.norm(g)))
        r = g + pen.beta * w
        norm = float(np.linalg.norm(w))
        if norm > 0:
            worst = max(worst, float(np.linalg.norm(r + pen.alpha * w / norm)))
        else:
            worst = max(worst, max(0.0, float(np.linalg.norm(r)) - pen.alpha))
    return worst / scale


def reference_objective(problem, tol=1e-10, max_iter=200000):
    """The optimum by a plain proximal gradient written here (ISTA with
    backtracking, the penalty's prox), run until :func:`kkt_ratio_by_definition`
    is at most ``tol``: an algorithm other than the solvers' own."""
    d, pen, bp = problem.datafit, problem.penalty, problem.block_ptr
    w, b = np.zeros(d.n_coef), d.optimal_bias()
    der = np.empty(d.decision_size)

    def gradients(w, b):
        value = d.value_derivative(d.decision(w, b), der)
        return value, d.gradient(der), np.asarray(d.bias_gradient(der), dtype=np.float64)

    value, g, gb = gradients(w, b)
    L = 1.0
    for _ in range(max_iter):
        if kkt_ratio_by_definition(problem, w, -b) <= tol:
            break
        while True:
            new_w, _ = pen.prox(w - g / L, 1.0 / L, bp)
            new_b = b - gb / L
            new_value, new_g, new_gb = gradients(new_w, new_b)
            dw, db = new_w - w, np.asarray(new_b - b)
            # convex P: this bounds P(new) - P - <g, d> (no cancellation)
            if (float((new_g - g) @ dw) + float(np.sum((new_gb - gb) * db))
                    <= 0.5 * L * (float(dw @ dw) + float(np.sum(db * db)))):
                break
            L *= 2.0
        w, b, value, g, gb = new_w, new_b, new_value, new_g, new_gb
        L /= 2.0
    else:
        raise AssertionError("the reference did not converge")
    return value + pen.value(w, bp)


# ------------------------------------------------------------ the contract
class TestGroupElasticNetContract(PenaltyContract):
    """The penalty contract (tests/solver_contracts.py)."""

    def make(self):
        return GroupElasticNet(alpha=0.8, beta=0.6)


def test_prox_is_the_closed_form(rng):
    """The prox against a brute-force minimisation of its model."""
    pen = GroupElasticNet(alpha=0.7, beta=2.0)
    u = rng.standard_normal(8) * 2
    u[3:5] = [0.1, -0.2]                     # norm below alpha step: thresholded to 0
    step = 0.5
    w, scale = pen.prox(u, step, BLOCKS)

    def model(x):
        return 0.5 * np.sum((x - u) ** 2) + step * pen.value(x, BLOCKS)

    best = minimize(model, u / 2, method="Powell",
                    options={"xtol": 1e-12, "ftol": 1e-15, "maxiter": 100000})
    assert model(w) <= best.fun + 1e-12
    assert scale[1] == 0.0 and np.all(w[3:5] == 0)
    np.testing.assert_allclose(w, np.repeat(scale, np.diff(BLOCKS)) * u, atol=1e-15)


# --------------------------------------------------------- every solver
@pytest.fixture
def registered_penalty():
    """``PENALTIES`` holds the new penalty for one test."""
    PENALTIES[NAME] = GroupElasticNet
    try:
        yield GroupElasticNet
    finally:
        PENALTIES.pop(NAME)


def test_the_solvers_that_fit_it(rng, registered_penalty):
    """APG takes any penalty with a prox; proximal Newton and SimpleMKL
    minimise the l2,1-squared penalty only; the others solve other problem
    kinds. Each refusal is one line."""
    problems = [penalty_problem(rng, loss)[0] for loss in ("logistic", "squared-hinge")]
    problems.append(penalty_problem(rng, "logistic", 3)[0])
    for pb in problems:
        assert solvers_fitting(pb) == ["apg"]
    assert "l2,1-squared" in SOLVERS["newton"].refusal(problems[0])
    for name in SOLVERS:
        if name != "apg":
            with pytest.raises(ParameterError, match="does not fit") as info:
                solve(problems[0], name)
            assert "\n" not in str(info.value)
    assert PENALTIES[NAME](alpha=2.0).alpha == 2.0


@pytest.mark.parametrize("loss, n_classes", [("logistic", 2), ("squared-hinge", 2),
                                             ("logistic", 3)])
def test_every_fitting_solver_certifies_it(rng, loss, n_classes):
    problem, X = penalty_problem(rng, loss, n_classes)
    reference = reference_objective(problem)
    fitting = solvers_fitting(problem)
    assert fitting
    for name in fitting:
        result = solve(problem, name, tol=1e-5, max_iter=50000)
        assert result.certificate.kind == "kkt_ratio" and result.certificate.passed
        # the certificate, recomputed from the definition at the returned point
        value = kkt_ratio_by_definition(problem, result.coef, result.intercept)
        assert value <= 1e-5 * (1 + 1e-3), (name, value)
        assert value == pytest.approx(result.certificate.value, rel=1e-6, abs=1e-14)
        # the objective, by the test: the penalty's value and a reference optimum
        w = result.coef
        f = X @ w.reshape(X.shape[1], -1) + np.atleast_1d(result.intercept)
        assert np.allclose(f.ravel(), problem.datafit.decision(w, -np.asarray(
            result.intercept) if np.ndim(result.intercept) else -result.intercept))
        norms = [np.linalg.norm(w[a:b]) for a, b in zip(problem.block_ptr[:-1],
                                                         problem.block_ptr[1:])]
        penalty = problem.penalty.alpha * sum(norms) + 0.5 * problem.penalty.beta * w @ w
        assert result.objective == pytest.approx(
            problem.datafit.value(f.ravel()) + penalty, rel=1e-12)
        assert result.objective == pytest.approx(reference, rel=1e-5), (name, reference)


class TestRegistryContractOnTheNewPenalty(RegistryContract):
    """The registry contract (result type, certificate recomputed by
    ``independent_certificate``, reference objective, warm start, refusals)
    on problems that carry the new penalty, for every registered solver
    that fits them."""

    def candidate_problems(self, rng):
        return [penalty_problem(rng, "logistic")[0],
                penalty_problem(rng, "squared-hinge")[0],
                penalty_problem(rng, "logistic", 3)[0]]

    def reference_objective(self, pb):
        return reference_objective(pb)



#: the registered solvers that fit a problem of the new penalty (the others
#: refuse it: test_the_solvers_that_fit_it)
FITTING = solvers_fitting(penalty_problem(np.random.default_rng(0))[0])


@pytest.fixture(params=FITTING)
def solver_name(request):
    return request.param
