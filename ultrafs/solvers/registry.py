"""Every solver by name, what problems it fits, and one entry point.

A problem is a datafit plus a penalty (skglm's ``solve(X, y, datafit,
penalty)``, here held by one object):

==========================  ====================================================
problem                     datafit + penalty
==========================  ====================================================
:class:`~ultrafs.solvers.subproblem.Problem`
                            a :class:`~ultrafs.solvers.datafits.Datafit` (any
                            loss, K outputs) + any penalty over ``block_ptr``
                            (FGM's subproblem: :class:`L21Squared`)
:class:`~ultrafs.solvers.l1_problem.L1Problem`
                            a binary ``Datafit`` + :class:`L1` (the l1 path,
                            the l1 solvers of seed 001), an optional bias
:class:`~ultrafs.solvers.smoothing_cd.MinimaxProblem`
                            ``LogisticRows`` + ``ConstraintHull`` (MSLR, eq. 10)
:class:`~ultrafs.solvers.irls.IRLSProblem`
                            ``L2rDatafit`` + ``L2pRows`` (GSR-FS)
==========================  ====================================================

:func:`solve` runs a registered solver on a problem it fits; every one
returns a :class:`~ultrafs.solvers.certificate.SolverResult` whose
``certificate`` says what it stopped on.  ``fits(problem)`` of each
:class:`RegisteredSolver` says whether it takes a problem; :func:`solve`
refuses the others in one line, naming why.  ``tol`` is each solver's
certificate tolerance (the kind in :data:`SOLVERS`' ``certificate``),
``max_iter`` its iteration count (its own unit), ``start`` a result of
the same solver on the same problem to warm-start from.

The methods call the solvers' own functions (``apg.solve``,
``solve_l1_logistic``, ``solve_minimax_smoothing``, ``irls``, ...), which
this registry wraps without changing what they compute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.solvers.apg import solve as solve_subproblem_problem
from ultrafs.solvers.apg import APG
from ultrafs.solvers.cgd import cgd
from ultrafs.solvers.fista import fista
from ultrafs.solvers.irls import IRLSProblem, irls
from ultrafs.solvers.l1_logistic import l1_path_refusal, solve_l1_problem
from ultrafs.solvers.l1_problem import L1Problem
from ultrafs.solvers.prox_newton import ProxNewton
from ultrafs.solvers.sgd_cumulative import sgd_cumulative
from ultrafs.solvers.simple_mkl import SimpleMKL
from ultrafs.solvers.smoothing_cd import MinimaxProblem, solve_minimax
from ultrafs.solvers.subproblem import Problem
from ultrafs.solvers.two_stage import two_stage

__all__ = ["RegisteredSolver", "SOLVERS", "register_solver", "solve", "solver_names",
           "solvers_fitting", "as_subproblem"]


@dataclass(frozen=True)
class RegisteredSolver:
    """A solver of the registry.

    Attributes
    ----------
    name : str
    problems : str
        The problems it fits, in words (the docs' table).
    certificate : str
        The kind of its certificate.
    refusal : callable
        ``refusal(problem) -> str``: why it does not fit ``problem`` ("" when
        it does).
    run : callable
        ``run(problem, tol=, max_iter=, start=, **options) -> SolverResult``
        (``tol`` or ``max_iter`` None: the solver's default).
    """

    name: str
    problems: str
    certificate: str
    refusal: Callable = field(repr=False)
    run: Callable = field(repr=False)

    def fits(self, problem) -> bool:
        """Whether the solver takes ``problem``."""
        return not self.refusal(problem)


SOLVERS: dict = {}
"""The registered solvers by name."""


def register_solver(entry: RegisteredSolver) -> RegisteredSolver:
    """Add ``entry`` to :data:`SOLVERS` (replacing one of the same name)."""
    SOLVERS[entry.name] = entry
    return entry


def solver_names():
    """The registered names, in registration order."""
    return list(SOLVERS)


def solvers_fitting(problem):
    """Names of the registered solvers that fit ``problem``."""
    return [name for name, entry in SOLVERS.items() if entry.fits(problem)]


def solve(problem, solver, *, tol=None, max_iter=None, start=None, **options):
    """Run the registered ``solver`` on ``problem``.

    Parameters
    ----------
    problem : Problem, L1Problem, MinimaxProblem or IRLSProblem
    solver : str
        A key of :data:`SOLVERS`.
    tol : float, optional
        The certificate's tolerance (None: the solver's default).
    max_iter : int, optional
        Iterations at most, in the solver's unit (None: its default).
    start : SolverResult, optional
        A result of the same solver on the same problem (warm start).
    **options
        Passed to the solver.

    Returns
    -------
    SolverResult

    Raises
    ------
    ParameterError
        Unknown solver, or one that does not fit ``problem`` (one line).
    """
    try:
        entry = SOLVERS[solver]
    except (KeyError, TypeError):
        raise ParameterError(f"unknown solver {solver!r}; known: "
                             f"{', '.join(SOLVERS)}") from None
    reason = entry.refusal(problem)
    if reason:
        raise ParameterError(f"solver {solver!r} does not fit this problem: {reason}")
    return entry.run(problem, tol=tol, max_iter=max_iter, start=start, **options)


def _given(**values):
    """The keyword arguments that are not None."""
    return {k: v for k, v in values.items() if v is not None}


def _refused_by(check):
    """The one-line message of the ParameterError ``check()`` raises, or ""."""
    try:
        check()
    except ParameterError as exc:
        return str(exc)
    return ""


# -- FGM's subproblem: APG, proximal Newton, SimpleMKL ------------------------
def as_subproblem(problem):
    """``(Problem, fit_intercept)`` of a :class:`Problem` (intercept by default)
    or an :class:`L1Problem` (one block per coefficient, its own intercept)."""
    if isinstance(problem, L1Problem):
        M = problem.n_coef
        return (Problem(problem.datafit, problem.penalty, np.arange(M + 1, dtype=np.int64)),
                problem.fit_intercept)
    return problem, None


def _subproblem_refusal(kind, accepts_l1):
    def refusal(problem):
        if not (isinstance(problem, Problem) or (accepts_l1 and isinstance(problem, L1Problem))):
            what = "a Problem or an L1Problem" if accepts_l1 else "a Problem"
            return f"{kind} solves {what}, not a {type(problem).__name__}"
        pb, _ = as_subproblem(problem)
        if kind == "apg":
            return _refused_by(lambda: APG().check_capabilities(pb.datafit, pb.penalty))
        if kind == "newton":
            return _refused_by(lambda: ProxNewton().check_capabilities(pb.datafit,
                                                                       pb.penalty))
        return _refused_by(lambda: SimpleMKL().check_problem(pb))
    return refusal


def _run_subproblem(kind):
    def run(problem, *, tol=None, max_iter=None, start=None, **options):
        pb, fit_intercept = as_subproblem(problem)
        if fit_intercept is not None:
            options.setdefault("fit_intercept", fit_intercept)
        if start is not None:
            options.update(coef0=start.coef, bias0=start.bias)
            if getattr(start, "lipschitz", None) is not None:
                options["lipschitz0"] = start.lipschitz
        return solve_subproblem_problem(pb.datafit, pb.block_ptr, penalty=pb.penalty,
                                        solver=kind, **_given(kkt_tol=tol,
                                                              max_iter=max_iter),
                                        **options)
    return run


# -- l1 problems: FISTA and its scalings, CGD, SGD-C, two-stage, the l1 path --
def _l1_refusal(needs_second_order):
    def refusal(problem):
        if not isinstance(problem, L1Problem):
            return f"it solves an L1Problem, not a {type(problem).__name__}"
        loss = problem.datafit.loss
        if needs_second_order and not getattr(loss, "second_order", False):
            return (f"it needs the loss's second derivative and value change; "
                    f"{loss.name!r} has none")
        return ""
    return refusal


def _start_l1(start):
    if start is None:
        return None, None
    first = getattr(start, "stage1", None)
    if first is not None:          # a two-stage result: restart its first stage
        return first.coef, first.bias
    return start.coef, start.bias


def _run_fista(scaling):
    def run(problem, *, tol=None, max_iter=None, start=None, **options):
        w0, b0 = _start_l1(start)
        return fista(problem, w0, b0, scaling=scaling,
                     **_given(tol=tol, max_iter=max_iter), **options)
    return run


def _run_cgd(problem, *, tol=None, max_iter=None, start=None, **options):
    w0, b0 = _start_l1(start)
    return cgd(problem, w0, b0, **_given(tol=tol, max_iter=max_iter), **options)


def _run_sgd(problem, *, tol=None, max_iter=None, start=None, **options):
    w0, b0 = _start_l1(start)
    return sgd_cumulative(problem, w0, b0, **_given(tol=tol, max_epochs=max_iter),
                          **options)


#: the inner solvers of the two-stage scheme (not SGD-C, as the paper)
TWO_STAGE_INNER = {"fista": _run_fista("identity"), "mfista": _run_fista("min"),
                   "cgd": _run_cgd}


def _run_two_stage(problem, *, tol=None, max_iter=None, start=None, ratio=0.1,
                   inner="cgd", **options):
    if inner not in TWO_STAGE_INNER:
        raise ParameterError(f"the two-stage scheme runs with {', '.join(TWO_STAGE_INNER)}, "
                             f"not {inner!r}")
    run_inner = TWO_STAGE_INNER[inner]
    w0, b0 = _start_l1(start)

    def stage(pb, w, b, **opts):
        return run_inner(pb, start=_Start(w, b), tol=tol, max_iter=max_iter, **opts)

    return two_stage(problem, stage, ratio=ratio, w0=w0, b0=b0, **options)


@dataclass(frozen=True)
class _Start:
    """A warm start ``(coef, bias)`` in the shape the runs read (None: cold)."""

    coef: object
    bias: object


def _run_l1_path(problem, *, tol=None, max_iter=None, start=None, **options):
    return solve_l1_problem(problem, start=start, **_given(tol=tol, max_iter=max_iter),
                            **options)


# -- MSLR's smoothing CD, GSR-FS's IRLS ---------------------------------------
def _type_refusal(kind, what):
    def refusal(problem):
        return "" if isinstance(problem, kind) else (
            f"it solves {what}, not a {type(problem).__name__}")
    return refusal


def _run_minimax(problem, *, tol=None, max_iter=None, start=None, **options):
    return solve_minimax(problem, start=start, **_given(tol=tol, max_sweeps=max_iter),
                         **options)


def _run_irls(problem, *, tol=None, max_iter=None, start=None, solve="auto", **options):
    if solve == "auto":
        op = problem.datafit.op
        solve = "primal" if op.n_features <= op.n_samples else "woodbury"
    return irls(problem, solve=solve, start=start, **_given(gtol=tol, max_iter=max_iter),
                **options)


for _entry in (
    RegisteredSolver("apg", "Problem (any datafit and penalty with a prox; K outputs), "
                     "L1Problem", "kkt_ratio", _subproblem_refusal("apg", True),
                     _run_subproblem("apg")),
    RegisteredSolver("newton", "Problem with a second-order loss and the l2,1-squared "
                     "penalty", "kkt_ratio", _subproblem_refusal("newton", False),
                     _run_subproblem("newton")),
    RegisteredSolver("mkl", "Problem: binary squared hinge, l2,1-squared penalty",
                     "kkt_ratio", _subproblem_refusal("mkl", False), _run_subproblem("mkl")),
    RegisteredSolver("fista", "L1Problem (any binary loss with a dual value)",
                     "duality_gap", _l1_refusal(False), _run_fista("identity")),
    RegisteredSolver("mfista", "L1Problem (any binary loss with a dual value)",
                     "duality_gap", _l1_refusal(False), _run_fista("min")),
    RegisteredSolver("mfista-hessian", "L1Problem, second-order loss", "duality_gap",
                     _l1_refusal(True), _run_fista("hessian")),
    RegisteredSolver("cgd", "L1Problem, second-order loss", "duality_gap",
                     _l1_refusal(True), _run_cgd),
    RegisteredSolver("sgd", "L1Problem (any binary loss with a dual value)",
                     "duality_gap", _l1_refusal(False), _run_sgd),
    RegisteredSolver("two-stage", "L1Problem, second-order loss (inner: cgd, fista, "
                     "mfista)", "duality_gap", _l1_refusal(True), _run_two_stage),
    RegisteredSolver("l1-path", "L1Problem: logistic loss, intercept, CSC columns",
                     "kkt_residual", l1_path_refusal, _run_l1_path),
    RegisteredSolver("smoothing-cd", "MinimaxProblem (MSLR)", "duality_gap",
                     _type_refusal(MinimaxProblem, "a MinimaxProblem"), _run_minimax),
    RegisteredSolver("irls", "IRLSProblem (GSR-FS)", "stationarity",
                     _type_refusal(IRLSProblem, "an IRLSProblem"), _run_irls),
):
    register_solver(_entry)
del _entry
