"""Two-stage active-set training (seed 001, §3.2).

Stage 1 solves the l1 problem at ``lam_1`` to its duality-gap stop; its
support ``A`` is the active set.  Stage 2 solves the problem restricted
to the columns ``A`` (the others held at 0) at ``lam_2 = ratio * lam_1``
(the paper's example: 0.1), warm-started from stage 1's coefficients:
a partial de-biasing, comparable to FGM's retraining.  Stage 2 can only
shrink the support, and lowers the stage-2 objective below that of
stage 1's solution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.solvers.certificate import SolverResult
from ultrafs.solvers.l1_problem import L1Solution, restrict_problem

__all__ = ["TwoStageResult", "two_stage"]


@dataclass
class TwoStageResult(SolverResult):
    """Both stages of :func:`two_stage`.

    Attributes
    ----------
    stage1 : L1Solution
        Over all coefficients at ``lam_1``.
    stage2 : L1Solution or None
        Over the active set at ``lam_2`` (None when stage 1 is all zero).
    active : int64 array
        Stage 1's support.
    coef : float64 array (M,)
        Stage 2's coefficients in the full numbering (stage 1's when
        there is no stage 2).
    bias : float
    lam2 : float
    """

    stage1: L1Solution
    stage2: L1Solution | None
    active: np.ndarray
    coef: np.ndarray
    bias: float
    lam2: float

    @property
    def intercept(self) -> float:
        """``-bias``."""
        return -self.bias

    @property
    def last(self) -> L1Solution:
        """The stage that produced ``coef``: stage 2, or stage 1 without one."""
        return self.stage1 if self.stage2 is None else self.stage2

    @property
    def objective(self) -> float:
        """The last stage's objective (stage 2's: at ``lam2`` over the active set)."""
        return self.last.objective

    @property
    def n_iter(self) -> int:
        """Iterations of both stages."""
        return self.stage1.n_iter + (0 if self.stage2 is None else self.stage2.n_iter)

    @property
    def certificate(self):
        """The last stage's duality gap (stage 2's certifies the restricted
        problem at ``lam2``: the active columns only)."""
        return self.last.certificate

    @property
    def converged(self) -> bool:
        """Both stages reached their certificate."""
        return self.stage1.converged and self.last.converged

    @property
    def history(self) -> list:
        """Stage 1's records, then stage 2's."""
        return self.stage1.history + ([] if self.stage2 is None else self.stage2.history)


def two_stage(problem, solve, *, ratio=0.1, w0=None, b0=None, **options) -> TwoStageResult:
    """Stage 1 at ``problem.lam``, stage 2 on its support at ``ratio * lam``.

    Parameters
    ----------
    problem : L1Problem
    solve : callable
        ``solve(problem, w0, b0, **options) -> L1Solution`` (FISTA, CGD...).
    ratio : float in (0, 1]
        ``lam_2 / lam_1``.
    w0, b0 : optional
        Warm start of stage 1.
    **options
        Passed to ``solve`` in both stages.

    Returns
    -------
    TwoStageResult
    """
    if not (0 < ratio <= 1):
        raise ParameterError(f"the two-stage ratio must lie in (0, 1], got {ratio!r}")
    first = solve(problem, w0, b0, **options)
    active = np.flatnonzero(first.coef)
    coef = first.coef.copy()
    lam2 = ratio * problem.lam
    if not len(active):
        return TwoStageResult(first, None, active, coef, first.bias, lam2)
    restricted = restrict_problem(problem, active).with_lam(lam2)
    second = solve(restricted, first.coef[active], first.bias, **options)
    coef = np.zeros_like(first.coef)
    coef[active] = second.coef
    return TwoStageResult(first, second, active, coef, second.bias, lam2)
