"""Solvers of the FGM subproblem and their pluggable pieces.

* :mod:`ultrafs.solvers.losses`: losses (value, derivative, dual variables).
* :mod:`ultrafs.solvers.penalties`: penalties and their proximal operators.
* :mod:`ultrafs.solvers.apg`: accelerated proximal gradient (Algorithm 4).
"""

from ultrafs.solvers.apg import (
    APG,
    SubproblemResult,
    dual_variables,
    fit_bias_only,
    objective,
    solve_subproblem,
)
from ultrafs.solvers.losses import LOSSES, Logistic, Loss, SquaredHinge, get_loss
from ultrafs.solvers.penalties import L1, GroupL1, L21Squared, Penalty

__all__ = [
    "APG",
    "SubproblemResult",
    "solve_subproblem",
    "objective",
    "dual_variables",
    "fit_bias_only",
    "LOSSES",
    "Loss",
    "Logistic",
    "SquaredHinge",
    "get_loss",
    "Penalty",
    "L21Squared",
    "L1",
    "GroupL1",
]
