"""What a solver needs from a datafit and a penalty, checked before it runs.

Each solver class declares the methods it calls on the datafit
(``datafit_required``) and on the penalty (``penalty_required``), as skglm
does with ``_datafit_required_attr`` / ``_penalty_required_attr``; a
missing capability is a one-line :class:`ParameterError` naming it, raised
before any work.  Optional capabilities (``block_radial`` for the
per-block product cache, ``prox_1d`` for coordinate descent) are asked
for by the solvers that use them.
"""

from __future__ import annotations

from ultrafs.errors import ParameterError

__all__ = ["Solver", "missing_capabilities", "set_stop_params"]


def missing_capabilities(obj, required):
    """Names of ``required`` that ``obj`` does not provide (callable or attribute)."""
    return [name for name in required if getattr(obj, name, None) is None]


def set_stop_params(solver, tol, kkt_tol, max_iter, fit_intercept) -> None:
    """Check and set the stop parameters every solver shares: ``tol`` (>= 0),
    ``kkt_tol`` (> 0 or None), ``max_iter`` (>= 1), ``fit_intercept``.

    Raises
    ------
    ParameterError
        One line naming the parameter out of its domain.
    """
    import math

    if not tol >= 0.0:
        raise ParameterError(f"tol must be >= 0, got {tol!r}")
    if kkt_tol is not None and not (math.isfinite(kkt_tol) and kkt_tol > 0):
        raise ParameterError(f"kkt_tol must be > 0 or None, got {kkt_tol!r}")
    if int(max_iter) < 1:
        raise ParameterError(f"max_iter must be >= 1, got {max_iter!r}")
    solver.tol = float(tol)
    solver.kkt_tol = None if kkt_tol is None else float(kkt_tol)
    solver.max_iter = int(max_iter)
    solver.fit_intercept = bool(fit_intercept)


class Solver:
    """Base class of the solver classes of FGM's subproblem (APG, proximal
    Newton, SimpleMKL).

    Subclasses set :attr:`datafit_required` and :attr:`penalty_required`
    and implement ``solve``.  Every solver, these and the function-style
    ones (FISTA, CGD, SGD-C, two-stage, the l1 path, MSLR's smoothing CD,
    IRLS), is registered in :mod:`ultrafs.solvers.registry` with the
    problems it fits.
    """

    #: methods the solver calls on the datafit
    datafit_required: tuple = ()
    #: methods the solver calls on the penalty
    penalty_required: tuple = ()

    def check_capabilities(self, datafit, penalty) -> None:
        """Raise :class:`ParameterError` unless both provide what is required."""
        for what, obj, required in (("datafit", datafit, self.datafit_required),
                                    ("penalty", penalty, self.penalty_required)):
            missing = missing_capabilities(obj, required)
            if missing:
                raise ParameterError(
                    f"{type(self).__name__} needs a {what} with "
                    f"{', '.join(missing)}; {obj!r} has none")
