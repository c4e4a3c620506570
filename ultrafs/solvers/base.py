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

__all__ = ["Solver", "missing_capabilities"]


def missing_capabilities(obj, required):
    """Names of ``required`` that ``obj`` does not provide (callable or attribute)."""
    return [name for name in required if getattr(obj, name, None) is None]


class Solver:
    """Base class of the solvers (APG now; FISTA, CD and IRLS to come).

    Subclasses set :attr:`datafit_required` and :attr:`penalty_required`
    and implement ``solve``.
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
