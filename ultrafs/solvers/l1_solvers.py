"""The l1 solvers of seed 001 by name, and one entry point.

===========  ==========================================================
name         solver
===========  ==========================================================
``fista``    FISTA, ``H = I`` (:func:`ultrafs.solvers.fista.fista`)
``mfista``   multi-scale FISTA, the paper's scaling (7) by default,
             (8) with ``scaling="hessian"``
``cgd``      coordinate gradient descent (:func:`ultrafs.solvers.cgd.cgd`)
``sgd``      SGD-C (:func:`ultrafs.solvers.sgd_cumulative.sgd_cumulative`)
===========  ==========================================================

Every solver takes an :class:`~ultrafs.solvers.l1_problem.L1Problem` (any
binary datafit of the core through an operator with ``matvec``,
``rmatvec``, ``rmatvec_hess``, plus ``columns`` for CGD and ``take_rows``
for SGD-C, and the :class:`~ultrafs.solvers.penalties.L1` penalty) and
returns an :class:`~ultrafs.solvers.l1_problem.L1Solution` with its
certificate.  The same solvers, with the l1 path's and the others, are in
the one registry of :mod:`ultrafs.solvers.registry` (``"fista"``,
``"mfista"``, ``"mfista-hessian"``, ``"cgd"``, ``"sgd"``, ``"two-stage"``);
this table is the SKLR method's, by its own names.
"""

from __future__ import annotations

from functools import partial

from ultrafs.errors import ParameterError
from ultrafs.solvers.cgd import cgd
from ultrafs.solvers.fista import fista
from ultrafs.solvers.sgd_cumulative import sgd_cumulative
from ultrafs.solvers.two_stage import two_stage

__all__ = ["L1_SOLVERS", "solve_l1", "l1_solver"]

L1_SOLVERS = {
    "fista": partial(fista, scaling="identity"),
    "mfista": partial(fista, scaling="min"),
    "cgd": cgd,
    "sgd": sgd_cumulative,
}


def l1_solver(name):
    """The solver function of ``name`` (one-line error naming the known ones)."""
    try:
        return L1_SOLVERS[name]
    except (KeyError, TypeError):
        raise ParameterError(f"unknown l1 solver {name!r}; known: "
                             f"{', '.join(L1_SOLVERS)}") from None


def solve_l1(problem, solver="cgd", *, w0=None, b0=None, two_stage_ratio=None, **options):
    """Solve ``problem`` with the named solver, optionally in two stages.

    Parameters
    ----------
    problem : L1Problem
    solver : str
        A key of :data:`L1_SOLVERS`.
    w0, b0 : optional
        Warm start.
    two_stage_ratio : float or None
        Run :func:`ultrafs.solvers.two_stage.two_stage` with this ``lam_2 /
        lam_1`` (not with ``sgd``, as the paper).
    **options
        Passed to the solver.

    Returns
    -------
    L1Solution, or TwoStageResult with ``two_stage_ratio``
    """
    solve = l1_solver(solver)
    if "scaling" in options and solver != "mfista":
        raise ParameterError("scaling applies to the mfista solver only")
    if two_stage_ratio is None:
        return solve(problem, w0, b0, **options)
    if solver == "sgd":
        raise ParameterError("the two-stage scheme runs with fista, mfista or cgd")
    return two_stage(problem, solve, ratio=two_stage_ratio, w0=w0, b0=b0, **options)
