"""Pointwise losses: the first half of a datafit (the operator is the other).

A loss object turns encoded targets ``y`` and decision values ``f = X @ w -
b`` into the quantities the solvers need.  Every method is unweighted by
``C``: the data term of eq. 30 is ``P = C * loss.value(y, f)``.

Targets:

* ``"binary"`` losses take ``y`` float64 in {-1, +1} and one decision value
  per sample (``f`` shape ``(n,)``); their dual variables are ``alpha = C *
  loss.dual(y, f)`` (Theorem 3).
* ``"multiclass"`` losses take ``y`` int64 class indices in ``0..K-1`` and
  ``K`` decision values per sample, flattened row-major (``f`` shape
  ``(n * K,)``, see :mod:`ultrafs.kernels.multiclass_losses`).

Every loss is registered under its ``(target, name)``: the faces read the
names from :func:`loss_names`, and :func:`get_loss` picks the member for a
target (``"logistic"`` is the binary logistic loss on two classes and the
multinomial logistic loss on K >= 3).  Adding a loss means writing its
kernels and one class here that binds them, decorated with
:func:`register_loss`.  A binary loss that also binds a per-sample second
derivative and an accurate value change (:attr:`Loss.second_order`) is
solved by proximal Newton as well (:mod:`ultrafs.solvers.prox_newton`);
the others by APG.
"""

from __future__ import annotations

import math

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels import losses as _k
from ultrafs.kernels import multiclass_losses as _mk

__all__ = ["Loss", "Logistic", "SquaredHinge", "MultinomialLogistic",
           "OneVsRestSquaredHinge", "LOSSES", "MULTICLASS_LOSSES", "register_loss",
           "get_loss", "loss_names", "unregister_loss"]


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
    #: kind of target the loss fits: "binary" or "multiclass"
    target = "binary"
    #: whether predicted probabilities exist (``predict_proba``)
    probabilistic = False
    curvature_bound = math.inf
    _value_kernel = None
    _value_derivative_kernel = None
    _derivative_kernel = None
    _dual_kernel = None
    _curvature_kernel = None
    #: per-sample second derivative; None where the loss has none (multi-class)
    _second_derivative_kernel = None
    #: accurate sum of per-sample changes; None where not provided (multi-class)
    _value_change_kernel = None

    def _check(self, y, f):
        """Reject arrays whose length does not fit ``y`` (the kernels trust them)."""
        _check_lengths(y, f)

    @property
    def second_order(self) -> bool:
        """Whether :meth:`second_derivative` and :meth:`value_change` exist.

        They are what proximal Newton needs of a loss beyond what APG does.
        """
        return (self._second_derivative_kernel is not None
                and self._value_change_kernel is not None)

    def value(self, y, f):
        """Return ``sum_i l(y_i, f_i)``.

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)

        Returns
        -------
        float
        """
        self._check(y, f)
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
        self._check(y, f)
        if out is None:
            out = np.empty(len(f), dtype=np.float64)
        self._check(y, out)
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
        self._check(y, f)
        self._check(y, out)
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
        self._check(y, f)
        if out is None:
            out = np.empty(len(f), dtype=np.float64)
        self._check(y, out)
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
        self._check(y, f)
        self._check(y, derivative)
        return float(self._curvature_kernel(y, f, derivative))

    def second_derivative(self, y, f, out=None):
        """Return ``d2l/df2`` at every sample (binary losses).

        For the squared hinge this is the generalised second derivative (1
        where ``1 - y f > 0``, else 0).  Proximal Newton builds its Hessian
        ``C X' diag(.) X`` from it.

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        out : ndarray of float64, shape (n,), optional

        Returns
        -------
        ndarray of float64, shape (n,)

        Raises
        ------
        ParameterError
            If the loss has no per-sample second derivative (multi-class).
        """
        if self._second_derivative_kernel is None:
            raise ParameterError(
                f"the {self.target} loss {self.name!r} has no per-sample second "
                "derivative")
        self._check(y, f)
        if out is None:
            out = np.empty(len(f), dtype=np.float64)
        self._check(y, out)
        return self._second_derivative_kernel(y, f, out)

    def value_change(self, y, f, delta):
        """Return ``sum_i l(y_i, f_i + delta_i) - l(y_i, f_i)`` (binary losses).

        Computed term by term without cancellation, so it stays accurate
        when the change is far below the rounding of :meth:`value` (a line
        search near the optimum compares such changes).

        Parameters
        ----------
        y, f, delta : ndarray of float64, shape (n,)

        Returns
        -------
        float

        Raises
        ------
        ParameterError
            If the loss does not provide it (multi-class).
        """
        if self._value_change_kernel is None:
            raise ParameterError(
                f"the {self.target} loss {self.name!r} has no accurate value change")
        self._check(y, f)
        self._check(y, delta)
        return float(self._value_change_kernel(y, f, delta))

    def optimal_constant(self, y, n_outputs=1):
        """Return ``argmin_c sum_i l(y_i, c)`` (the best constant decision).

        Parameters
        ----------
        y : ndarray, shape (n,)
        n_outputs : int
            Decision values per sample (1 for binary losses).

        Returns
        -------
        float, or ndarray of float64 of shape (n_outputs,)
        """
        raise NotImplementedError

    def dual_weights(self, y, f, C):
        """Return ``-C dl/df``: the weights of the worst-case analysis.

        For binary losses this is ``alpha * y`` (Theorem 3), shape ``(n,)``.

        Parameters
        ----------
        y, f : ndarray
        C : float

        Returns
        -------
        ndarray of float64, shape (n,) or (n, K)
        """
        alpha = self.dual(y, f)
        alpha *= C
        return alpha * y

    def __repr__(self):
        return f"{type(self).__name__}()"


class Logistic(Loss):
    """Logistic loss ``l = log(1 + exp(-y f))``; ``alpha / C = sigma(-y f)``."""

    name = "logistic"
    probabilistic = True
    curvature_bound = 0.25
    _value_kernel = staticmethod(_k.logistic_value)
    _value_derivative_kernel = staticmethod(_k.logistic_value_derivative)
    _derivative_kernel = staticmethod(_k.logistic_derivative)
    _dual_kernel = staticmethod(_k.logistic_dual)
    _curvature_kernel = staticmethod(_k.logistic_curvature_sum)
    _second_derivative_kernel = staticmethod(_k.logistic_second_derivative)
    _value_change_kernel = staticmethod(_k.logistic_value_change)

    def optimal_constant(self, y, n_outputs=1):
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
    _second_derivative_kernel = staticmethod(_k.squared_hinge_second_derivative)
    _value_change_kernel = staticmethod(_k.squared_hinge_value_change)

    def optimal_constant(self, y, n_outputs=1):
        """Return ``(n_+ - n_-) / n``, the exact minimiser (0 when ``n = 0``)."""
        n = len(y)
        if n == 0:
            return 0.0
        n_pos = int(np.count_nonzero(y > 0))
        return (2 * n_pos - n) / n


class MulticlassLoss(Loss):
    """A loss on K >= 3 classes with one decision value per class.

    ``y`` holds int64 class indices; ``f`` and derivatives are ``(n * K,)``
    row-major.  ``dual`` returns ``-dl/df`` (the per-class weights of the
    worst-case analysis, divided by ``C``).
    """

    target = "multiclass"

    def _check(self, y, f):
        """Reject ``f`` unless it holds the same number of values for every sample."""
        if len(y) == 0 or len(f) % len(y):
            raise ParameterError(
                f"f must hold K values per sample of y, got {len(f)} for {len(y)}")

    def dual(self, y, f, out=None):
        """Return ``-dl/df`` at every sample and class, shape ``(n * K,)``."""
        out = self.derivative(y, f, out)
        np.negative(out, out=out)
        return out

    def dual_weights(self, y, f, C):
        """Return ``-C dl/dF`` as an ``(n, K)`` array."""
        weights = self.dual(y, f)
        weights *= C
        return weights.reshape(len(y), -1)

    def _class_counts(self, y, n_outputs):
        """Samples of each class index (``y`` is validated: ``0 <= y < K``)."""
        return np.bincount(np.asarray(y, dtype=np.int64), minlength=n_outputs)


class MultinomialLogistic(MulticlassLoss):
    """Multinomial logistic (softmax) loss ``log sum_k exp(F_ik) - F_{i y_i}``."""

    name = "logistic"
    probabilistic = True
    curvature_bound = 0.5
    _value_kernel = staticmethod(_mk.multinomial_value)
    _value_derivative_kernel = staticmethod(_mk.multinomial_value_derivative)
    _derivative_kernel = staticmethod(_mk.multinomial_derivative)
    _curvature_kernel = staticmethod(_mk.multinomial_bias_curvature)

    def optimal_constant(self, y, n_outputs=1):
        """Return ``log(n_k / n)`` per class (defined up to a common shift).

        Raises
        ------
        ParameterError
            If a class has no sample (the infimum is not attained).
        """
        counts = self._class_counts(y, n_outputs)
        if np.any(counts == 0):
            missing = int(np.flatnonzero(counts == 0)[0])
            raise ParameterError(
                "the multinomial logistic loss with intercepts needs every class; "
                f"class index {missing} has no sample")
        return np.log(counts / counts.sum())


class OneVsRestSquaredHinge(MulticlassLoss):
    """One-vs-rest squared hinge ``sum_k max(0, 1 - Y_ik F_ik)^2 / 2``."""

    name = "squared-hinge"
    curvature_bound = 1.0
    _value_kernel = staticmethod(_mk.ovr_squared_hinge_value)
    _value_derivative_kernel = staticmethod(_mk.ovr_squared_hinge_value_derivative)
    _derivative_kernel = staticmethod(_mk.ovr_squared_hinge_derivative)
    _curvature_kernel = staticmethod(_mk.ovr_squared_hinge_bias_curvature)

    def optimal_constant(self, y, n_outputs=1):
        """Return ``(n_k - (n - n_k)) / n`` per class, the exact minimiser."""
        counts = self._class_counts(y, n_outputs).astype(np.float64)
        n = float(len(y))
        if n == 0:
            return np.zeros(n_outputs)
        return (2.0 * counts - n) / n


_REGISTRY = {}

LOSSES = {}
"""Binary losses by name (kept in step with the registry)."""

MULTICLASS_LOSSES = {}
"""Multi-class losses by name (kept in step with the registry)."""

_BY_TARGET = {"binary": LOSSES, "multiclass": MULTICLASS_LOSSES}


def register_loss(loss):
    """Register a loss instance (or class) under ``(loss.target, loss.name)``.

    Returns its argument, so it can decorate a class.
    """
    instance = loss() if isinstance(loss, type) else loss
    if instance.target not in _BY_TARGET:
        raise ParameterError(
            f"loss target must be one of {sorted(_BY_TARGET)}, got {instance.target!r}")
    _REGISTRY[(instance.target, instance.name)] = instance
    _BY_TARGET[instance.target][instance.name] = instance
    return loss


def unregister_loss(name, target="binary"):
    """Remove a registered loss (tests and plugins that clean up after themselves)."""
    _REGISTRY.pop((target, name), None)
    _BY_TARGET[target].pop(name, None)


for _loss in (Logistic(), SquaredHinge(), MultinomialLogistic(),
              OneVsRestSquaredHinge()):
    register_loss(_loss)


def loss_names():
    """Sorted names of every registered loss (the faces' choices)."""
    return sorted({name for _, name in _REGISTRY})


def get_loss(loss, target="binary"):
    """Return the loss object for a name or a :class:`Loss`.

    Parameters
    ----------
    loss : str or Loss
    target : {"binary", "multiclass"}
        Which member of the family ``loss`` names.

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
        return _REGISTRY[(target, loss)]
    except (KeyError, TypeError):
        names = sorted(name for t, name in _REGISTRY if t == target)
        if loss in loss_names():
            raise ParameterError(
                f"loss {loss!r} has no {target} version; expected one of {names}"
            ) from None
        raise ParameterError(
            f"unknown loss {loss!r}; expected one of {names}"
        ) from None
