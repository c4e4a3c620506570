"""Pluggable losses of the FGM subproblem (paper eq. 30 and Theorem 3).

A loss object turns labels ``y`` (float64, values ``+1``/``-1``) and decision
values ``f = X @ w - b`` into the quantities the solvers need.  Every method
is unweighted by ``C``: the data term of eq. 30 is ``P = C * loss.value(y, f)``
and the dual variables are ``alpha = C * loss.dual(y, f)``.

Dispatch goes through :data:`LOSSES` (name -> instance) or :func:`get_loss`;
each class binds its own njit kernels from :mod:`ultrafs.kernels.losses`.
"""

from __future__ import annotations

import math

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels import losses as _k

__all__ = ["Loss", "Logistic", "SquaredHinge", "LOSSES", "get_loss"]


def _check_lengths(y, f):
    """Reject ``y`` and ``f`` of different lengths (the kernels trust them)."""
    if len(y) != len(f):
        raise ParameterError(
            f"y and f must have the same length, got {len(y)} and {len(f)}"
        )


class Loss:
    """Interface of a per-sample loss ``l(y, f)`` (subclasses bind kernels).

    Attributes
    ----------
    name : str
        Registry key.
    curvature_bound : float
        Upper bound on ``d2l/df2``; ``C * curvature_bound * ||X||_2^2`` is a
        Lipschitz constant of the gradient of ``P``.
    """

    name = ""
    curvature_bound = math.inf
    _value_kernel = None
    _value_derivative_kernel = None
    _derivative_kernel = None
    _dual_kernel = None
    _curvature_kernel = None

    def value(self, y, f):
        """Return ``sum_i l(y_i, f_i)``.

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)

        Returns
        -------
        float
        """
        _check_lengths(y, f)
        return float(self._value_kernel(y, f))

    def derivative(self, y, f, out=None):
        """Return ``dl/df`` at every sample.

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        out : ndarray of float64, shape (n,), optional
            Buffer to write into.

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        _check_lengths(y, f)
        if out is None:
            out = np.empty(len(y), dtype=np.float64)
        _check_lengths(y, out)
        return self._derivative_kernel(y, f, out)

    def value_derivative(self, y, f, out):
        """Write ``dl/df`` into ``out`` and return ``sum_i l(y_i, f_i)``.

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        out : ndarray of float64, shape (n,)

        Returns
        -------
        float
        """
        _check_lengths(y, f)
        _check_lengths(y, out)
        return float(self._value_derivative_kernel(y, f, out))

    def dual(self, y, f, out=None):
        """Return ``alpha / C`` at every sample (Theorem 3).

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        out : ndarray of float64, shape (n,), optional

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        _check_lengths(y, f)
        if out is None:
            out = np.empty(len(y), dtype=np.float64)
        _check_lengths(y, out)
        return self._dual_kernel(y, f, out)

    def curvature_sum(self, y, f, derivative):
        """Return ``sum_i d2l/df2 (y_i, f_i)``.

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        derivative : ndarray of float64, shape (n,)
            ``dl/df`` at ``f`` (as written by :meth:`value_derivative`); lets
            the logistic loss avoid new exponentials.

        Returns
        -------
        float
        """
        _check_lengths(y, f)
        _check_lengths(y, derivative)
        return float(self._curvature_kernel(y, f, derivative))

    def optimal_constant(self, y):
        """Return ``argmin_c sum_i l(y_i, c)`` (the best constant decision).

        Parameters
        ----------
        y : ndarray of float64, shape (n,)

        Returns
        -------
        float
        """
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class Logistic(Loss):
    """Logistic loss ``l = log(1 + exp(-y f))``; ``alpha / C = sigma(-y f)``."""

    name = "logistic"
    curvature_bound = 0.25
    _value_kernel = staticmethod(_k.logistic_value)
    _value_derivative_kernel = staticmethod(_k.logistic_value_derivative)
    _derivative_kernel = staticmethod(_k.logistic_derivative)
    _dual_kernel = staticmethod(_k.logistic_dual)
    _curvature_kernel = staticmethod(_k.logistic_curvature_sum)

    def optimal_constant(self, y):
        """Return ``log(n_+ / n_-)``, the exact minimiser.

        Raises
        ------
        ParameterError
            If only one class is present (the infimum is not attained).
        """
        n_pos = int(np.count_nonzero(y > 0))
        n_neg = len(y) - n_pos
        if n_pos == 0 or n_neg == 0:
            raise ParameterError(
                "the logistic loss with an intercept needs both classes; "
                f"got {n_pos} positive and {n_neg} negative labels"
            )
        return math.log(n_pos / n_neg)


class SquaredHinge(Loss):
    """Squared hinge ``l = max(0, 1 - y f)^2 / 2``; ``alpha / C = max(0, 1 - y f)``."""

    name = "squared-hinge"
    curvature_bound = 1.0
    _value_kernel = staticmethod(_k.squared_hinge_value)
    _value_derivative_kernel = staticmethod(_k.squared_hinge_value_derivative)
    _derivative_kernel = staticmethod(_k.squared_hinge_derivative)
    _dual_kernel = staticmethod(_k.squared_hinge_dual)
    _curvature_kernel = staticmethod(_k.squared_hinge_curvature_sum)

    def optimal_constant(self, y):
        """Return ``(n_+ - n_-) / n``, the exact minimiser (0 when ``n = 0``)."""
        n = len(y)
        if n == 0:
            return 0.0
        n_pos = int(np.count_nonzero(y > 0))
        return (2 * n_pos - n) / n


LOSSES = {"logistic": Logistic(), "squared-hinge": SquaredHinge()}
"""Registry of losses by name."""


def get_loss(loss):
    """Return the loss object for a name of :data:`LOSSES` or a :class:`Loss`.

    Parameters
    ----------
    loss : str or Loss

    Returns
    -------
    Loss

    Raises
    ------
    ParameterError
        If the name is unknown.
    """
    if isinstance(loss, Loss):
        return loss
    try:
        return LOSSES[loss]
    except (KeyError, TypeError):
        raise ParameterError(
            f"unknown loss {loss!r}; expected one of {sorted(LOSSES)}"
        ) from None
