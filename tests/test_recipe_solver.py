"""The "add a solver" recipe: a new solver in this one file.

Plain proximal gradient with backtracking (ISTA, Beck & Teboulle 2009,
without momentum) for ``min_{w,b} Omega(w) + P(w, b)``: any datafit and any
penalty with a ``prox``, on a :class:`~ultrafs.solvers.subproblem.Problem`
(FGM's subproblem, K outputs) or an
:class:`~ultrafs.solvers.l1_problem.L1Problem` (through the registry's
``as_subproblem``).  It stops on the relative KKT residual
(``solvers/subproblem.py: kkt_residual``, certificate kind ``kkt_ratio``)
and returns a :class:`~ultrafs.solvers.certificate.SolverResult`.

Registered in ``ultrafs.solvers.registry.SOLVERS`` for each test (and
removed after, so other modules see the built-in solvers only), it

* passes the registry contract (``tests/solver_contracts.py:
  RegistryContract``): the result type, its certificate recomputed by the
  test (``independent_certificate``), the objective against another
  solver's tight solve, the warm start, one-line refusals;
* is listed by ``solvers_fitting`` and run by ``registry.solve`` by name;
* solves the new penalty of the penalty recipe as well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from ultrafs.errors import ParameterError
from ultrafs.solvers.certificate import Certificate, SolverResult
from ultrafs.solvers.l1_problem import L1Problem
from ultrafs.solvers.registry import (SOLVERS, RegisteredSolver, as_subproblem,
                                      register_solver, solve, solvers_fitting)
from ultrafs.solvers.subproblem import Problem, kkt_residual

try:
    from solver_contracts import (RegistryContract, fgm_problem, irls_problem,
                                  l1_problem, minimax_problem)
except ImportError:  # pragma: no cover - run from the repository root
    from tests.solver_contracts import (RegistryContract, fgm_problem, irls_problem,
                                        l1_problem, minimax_problem)

NAME = "prox-gradient"


# ------------------------------------------------------------- the solver
@dataclass
class ProxGradientResult(SolverResult):
    """The result of :func:`prox_gradient` (a ``SolverResult``).

    Attributes
    ----------
    coef : ndarray of float64, shape (p,)
    bias : float or ndarray of float64, shape (K,)
        The decision is ``X @ coef - bias``.
    objective : float
    n_iter : int
        Accepted steps.
    lipschitz : float
        The last accepted ``1 / step`` (a warm start's first trial).
    kkt, kkt_tol : float
        The relative KKT residual at the returned point and its tolerance.
    history : list of float
        The objective after each accepted step (non-increasing).
    """

    coef: np.ndarray
    bias: object
    objective: float
    n_iter: int
    lipschitz: float
    kkt: float
    kkt_tol: float
    history: list = field(default_factory=list)

    @property
    def intercept(self):
        """``-bias``."""
        return -self.bias

    @property
    def certificate(self) -> Certificate:
        return Certificate(kind="kkt_ratio", value=float(self.kkt), tol=float(self.kkt_tol),
                           passed=bool(self.kkt <= self.kkt_tol))


def prox_gradient(problem, *, fit_intercept=True, tol=1e-6, max_iter=10000, coef0=None,
                  bias0=None, lipschitz0=None, eta=2.0):
    """Proximal gradient with backtracking on ``min Omega(w) + P(w, b)``.

    A step ``1 / L`` is accepted when ``<grad P(new) - grad P, d> <= L/2 ||d||^2``
    (``d`` the step in ``(w, b)``), which for a convex ``P`` implies the
    descent lemma: every accepted step decreases the objective.

    Parameters
    ----------
    problem : Problem
    fit_intercept : bool
        Learn ``b`` (a plain gradient step, unpenalised); else ``b = 0``.
    tol : float
        Stop when the relative KKT residual is at most ``tol``.
    max_iter : int
        Accepted steps at most.
    coef0 : ndarray of float64, shape (p,), optional
        Start (None: zeros).
    bias0 : float or ndarray of shape (K,), optional
        Start (None: the best constant when fitted, else 0).
    lipschitz0 : float, optional
        First trial of ``1 / step`` (None: 1).
    eta : float
        Factor by which ``1 / step`` grows after a rejected trial.

    Returns
    -------
    ProxGradientResult
    """
    d, pen, bp = problem.datafit, problem.penalty, problem.block_ptr
    coef = np.zeros(d.n_coef) if coef0 is None else np.array(coef0, dtype=np.float64)
    bias = d.optimal_bias(fit_intercept) if bias0 is None else bias0
    if not fit_intercept:
        bias = 0.0 * bias
    L = 1.0 if lipschitz0 is None else float(lipschitz0)
    der = np.empty(d.decision_size)

    def state(w, b):
        f = d.decision(w, b)
        value = d.value_derivative(f, der)
        return value, d.gradient(der), d.bias_gradient(der)

    smooth, grad, bias_grad = state(coef, bias)
    objective = smooth + pen.value(coef, bp)
    history, n_iter = [], 0
    while True:
        kkt, _ = kkt_residual(problem, coef, grad, bias_grad, fit_intercept)
        if kkt <= tol or n_iter >= max_iter:
            break
        while True:                                  # backtracking on 1 / step
            step = 1.0 / L
            new_coef, _ = pen.prox(coef - step * grad, step, bp)
            new_bias = bias - step * bias_grad if fit_intercept else bias
            dw, db = new_coef - coef, np.asarray(new_bias - bias)
            new_smooth, new_grad, new_bias_grad = state(new_coef, new_bias)
            # P convex: P(new) - P - <g, d> <= <g_new - g, d>, so this test
            # (free of the cancellation of a difference of values) implies
            # the descent lemma's P(new) <= P + <g, d> + L/2 ||d||^2
            curvature = (float((new_grad - grad) @ dw)
                         + float(np.sum((np.asarray(new_bias_grad) - bias_grad) * db)))
            if curvature <= 0.5 * L * (float(dw @ dw) + float(np.sum(db * db))):
                break
            L *= eta
            if not math.isfinite(L):
                raise ParameterError("prox-gradient: no step decreases the objective")
        coef, bias = new_coef, new_bias
        smooth, grad, bias_grad = new_smooth, new_grad, new_bias_grad
        objective = smooth + pen.value(coef, bp)
        history.append(objective)
        n_iter += 1
        L /= eta                                      # let the next step grow
    return ProxGradientResult(coef=coef, bias=bias, objective=float(objective),
                              n_iter=n_iter, lipschitz=L, kkt=float(kkt),
                              kkt_tol=float(tol), history=history)


def _refusal(problem):
    """Why the solver does not fit ``problem`` ("" when it does)."""
    if not isinstance(problem, (Problem, L1Problem)):
        return f"it solves a Problem or an L1Problem, not a {type(problem).__name__}"
    pb, _ = as_subproblem(problem)
    for name in ("value", "prox", "subdiff_distance"):
        if getattr(pb.penalty, name, None) is None:
            return f"it needs a penalty with {name}; {pb.penalty!r} has none"
    return ""


def _run(problem, *, tol=None, max_iter=None, start=None, **options):
    pb, fit_intercept = as_subproblem(problem)
    if fit_intercept is not None:
        options.setdefault("fit_intercept", fit_intercept)
    if start is not None:
        options.update(coef0=start.coef, bias0=start.bias, lipschitz0=start.lipschitz)
    given = {k: v for k, v in (("tol", tol), ("max_iter", max_iter)) if v is not None}
    return prox_gradient(pb, **given, **options)


#: in ultrafs/solvers/ this would be ``register_solver(...)`` at import: the
#: tests register it for their own duration
ENTRY = RegisteredSolver(NAME, "Problem (any datafit, any penalty with a prox), "
                         "L1Problem", "kkt_ratio", _refusal, _run)


# --------------------------------------------------------------- fixtures
@pytest.fixture
def registered():
    """The registry with the new solver, restored after the test."""
    saved = dict(SOLVERS)
    register_solver(ENTRY)
    try:
        yield ENTRY
    finally:
        SOLVERS.clear()
        SOLVERS.update(saved)


@pytest.fixture
def solver_name(registered):
    return registered.name


# ------------------------------------------------------------------ tests
class TestProxGradientRegistryContract(RegistryContract):
    """The registry contract (tests/solver_contracts.py) on the new solver,
    on FGM's subproblem (logistic, squared hinge, three classes) and the l1
    problems with and without intercept; MSLR's and GSR-FS's problems are
    refused."""

    binary_losses = ("logistic", "squared-hinge")


def test_registered_by_name_and_found_by_problem(rng, registered):
    problems = {"fgm": fgm_problem(rng), "fgm-3": fgm_problem(rng, "logistic", 3),
                "l1": l1_problem(rng), "l1-intercept": l1_problem(rng, fit_intercept=True)}
    for pb in problems.values():
        assert NAME in solvers_fitting(pb)
    for pb in (minimax_problem(rng), irls_problem(rng)):
        assert NAME not in solvers_fitting(pb)
        assert f"{type(pb).__name__}" in SOLVERS[NAME].refusal(pb)
    # the same point as APG's, by name through the one entry point
    pb = problems["fgm"]
    ours = solve(pb, NAME, tol=1e-9, max_iter=100000)
    apg = solve(pb, "apg", tol=1e-9, max_iter=100000)
    assert ours.certificate.passed and ours.certificate.kind == "kkt_ratio"
    assert len(ours.history) == ours.n_iter > 0
    assert np.all(np.diff(ours.history) <= 1e-12 * abs(ours.history[0]))   # descent
    assert ours.objective == pytest.approx(apg.objective, rel=1e-9)
    np.testing.assert_allclose(ours.coef, apg.coef, atol=1e-5 * np.abs(apg.coef).max())
    # the l1 problem without intercept keeps b = 0, as the problem says
    l1 = solve(problems["l1"], NAME)
    assert l1.intercept == 0.0 and l1.certificate.passed


def test_unregistered_after_the_test():
    assert NAME not in SOLVERS
    with pytest.raises(ParameterError, match="unknown solver"):
        solve(object(), NAME)


def test_solves_the_new_penalty_of_the_penalty_recipe(rng, registered):
    """Two recipes together: the new solver on the new penalty."""
    try:
        from test_recipe_penalty import kkt_ratio_by_definition, penalty_problem
    except ImportError:  # pragma: no cover
        from tests.test_recipe_penalty import kkt_ratio_by_definition, penalty_problem

    problem, _ = penalty_problem(rng)
    assert solvers_fitting(problem) == ["apg", NAME]
    ours = solve(problem, NAME, tol=1e-7, max_iter=100000)
    assert kkt_ratio_by_definition(problem, ours.coef, ours.intercept) <= 1e-7 * (1 + 1e-3)
    assert ours.objective == pytest.approx(solve(problem, "apg", tol=1e-7).objective,
                                           rel=1e-7)
