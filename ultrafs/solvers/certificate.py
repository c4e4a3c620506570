"""One certificate and one result type for every solver.

Every solver of :mod:`ultrafs.solvers.registry` returns a
:class:`SolverResult`: the coefficients, the intercept, the iterations,
the objective, the history of its iterations and a :class:`Certificate`,
the optimality measure it stopped on, at the returned point.  The solvers'
own result classes (``SubproblemResult``, ``L1Solution``,
``L1LogisticResult``, ``MinimaxSolution``, ``IRLSResult``...) subclass
:class:`SolverResult` and keep their extra fields, so their callers read
them as before.

The kinds of certificate (``Certificate.kind``):

==================  ==========================================================
kind                value
==================  ==========================================================
``kkt_ratio``       the KKT residual over the largest block norm of the
                    gradient (APG, proximal Newton, SimpleMKL: FGM's
                    subproblem, :func:`ultrafs.solvers.subproblem.kkt_residual`)
``kkt_residual``    the absolute KKT residual of an l1 problem (the l1 path);
                    ``tol`` is absolute too (``tol * lam``)
``duality_gap``     the relative duality gap (FISTA, CGD, SGD-C, two-stage,
                    MSLR's smoothing CD)
``stationarity``    the relative norm of the gradient over the live rows
                    (GSR-FS's IRLS), or, for a run without a certificate
                    (``kkt_tol=None`` in APG), its relative decrease rule
``objective_change``  the relative change of the objective (IRLS with the
                    paper's ``stop="objective"``)
==================  ==========================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Certificate", "SolverResult", "CERTIFICATE_KINDS"]

CERTIFICATE_KINDS = ("kkt_ratio", "kkt_residual", "duality_gap", "stationarity",
                     "objective_change")


@dataclass(frozen=True, kw_only=True)
class Certificate:
    """The optimality measure a solver stopped on, at its returned point.

    Attributes
    ----------
    kind : str
        One of :data:`CERTIFICATE_KINDS`.
    value : float
        The measure (NaN when it was never computed).
    tol : float
        The tolerance it was held to (NaN when none was set).
    passed : bool
        The solver stopped because ``value <= tol``.
    """

    kind: str
    value: float
    tol: float = math.nan
    passed: bool = False


class SolverResult:
    """What every solver returns (the interface; subclasses hold the fields).

    Attributes
    ----------
    coef : float64 array
        The coefficients (shape as the solver's problem numbers them).
    intercept : float or float64 array (K,)
        The decision of a sample is ``x' coef + intercept``.
    objective : float
        The objective at the returned point.
    n_iter : int
        Iterations (the solver's own unit).
    certificate : Certificate
    history : list
        One record per iteration, as the solver keeps them.
    """

    @property
    def passed(self) -> bool:
        """Whether the certificate held at the tolerance."""
        return bool(self.certificate.passed)
