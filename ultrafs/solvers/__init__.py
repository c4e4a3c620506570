"""Solvers and their pluggable pieces: datafits, penalties, solvers.

* :mod:`ultrafs.solvers.losses`: pointwise losses (binary and multi-class),
  registered by target and name.
* :mod:`ultrafs.solvers.operators`: the linear operators a loss is applied
  through (CSC columns now).
* :mod:`ultrafs.solvers.datafits`: a loss through an operator, with the
  intercept, the dual weights and the best constant model.
* :mod:`ultrafs.solvers.penalties`: penalties (value, prox, 1-D prox,
  subdifferential distance).
* :mod:`ultrafs.solvers.base`: the capabilities a solver declares.
* :mod:`ultrafs.solvers.certificate`: the one :class:`Certificate` and the
  :class:`SolverResult` every solver returns.
* :mod:`ultrafs.solvers.registry`: every solver by name, what problems
  (datafit + penalty) it fits, and ``solve(problem, solver, tol=,
  max_iter=, start=)``.
* :mod:`ultrafs.solvers.subproblem`: FGM's subproblem (:class:`Problem`),
  its result and the KKT certificate its solvers stop on
  (:mod:`ultrafs.solvers.subproblem_inputs`: the checked inputs).
* :mod:`ultrafs.solvers.apg`: accelerated proximal gradient (Algorithm 4),
  and :func:`solve`, which picks the solver.
* :mod:`ultrafs.solvers.prox_newton`: proximal Newton for binary datafits.
* :mod:`ultrafs.solvers.simple_mkl`: SimpleMKL (binary squared hinge).
* :mod:`ultrafs.solvers.l1_problem` (an :class:`L1Problem`: a binary
  datafit + :class:`L1`), :mod:`ultrafs.solvers.fista`,
  :mod:`ultrafs.solvers.cgd`, :mod:`ultrafs.solvers.sgd_cumulative`
  (:mod:`ultrafs.solvers.loss_steps`: their steps for any loss),
  :mod:`ultrafs.solvers.two_stage`, :mod:`ultrafs.solvers.l1_logistic`
  (the l1 path's solver, logistic only).
* :mod:`ultrafs.solvers.smoothing_cd`: MSLR's minimax (a
  :class:`MinimaxProblem`).
* :mod:`ultrafs.solvers.irls`: GSR-FS's IRLS (an :class:`IRLSProblem`);
  :mod:`ultrafs.solvers.gram_operators`, :mod:`ultrafs.solvers.sparse_gram`:
  the weighted Gram products it solves with, dense and sparse.
"""

from ultrafs.solvers.apg import (
    APG,
    SOLVERS,
    SubproblemResult,
    choose_solver,
    dual_variables,
    fit_bias_only,
    objective,
    solve,
    solve_subproblem,
)
from ultrafs.solvers.base import Solver
from ultrafs.solvers.certificate import Certificate, SolverResult
from ultrafs.solvers.datafits import Datafit, make_datafit
from ultrafs.solvers.losses import (LOSSES, MULTICLASS_LOSSES, Logistic, Loss,
                                    MultinomialLogistic, OneVsRestSquaredHinge,
                                    SquaredHinge, get_loss, loss_names, register_loss)
from ultrafs.solvers.operators import CSCOperator
from ultrafs.solvers.penalties import PENALTIES, L1, GroupL1, L21Squared, Penalty
from ultrafs.solvers.prox_newton import ProxNewton
from ultrafs.solvers.registry import solve as solve_problem
from ultrafs.solvers.registry import solver_names, solvers_fitting
from ultrafs.solvers.subproblem import Problem

__all__ = [
    "APG", "ProxNewton", "SOLVERS", "Solver", "SubproblemResult", "solve",
    "solve_subproblem", "choose_solver",
    "objective", "dual_variables", "fit_bias_only",
    "Datafit", "make_datafit", "CSCOperator",
    "LOSSES", "MULTICLASS_LOSSES", "Loss", "Logistic", "SquaredHinge",
    "MultinomialLogistic", "OneVsRestSquaredHinge", "get_loss", "loss_names",
    "register_loss",
    "PENALTIES", "Penalty", "L21Squared", "L1", "GroupL1",
    "Certificate", "SolverResult", "Problem", "solve_problem", "solver_names",
    "solvers_fitting",
]
