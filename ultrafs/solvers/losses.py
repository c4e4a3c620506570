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

Sample weights: every method takes ``weights`` (float64 ``(n,)``, ``>= 0``,
or None for all ones).  With weights the loss is ``sum_i s_i l(y_i, f_i)``:
values, derivatives, duals, curvatures, value changes and the best constant
are those of the weighted sum, computed by the ``*_weighted`` kernels (or,
for per-sample quantities, by scaling the unweighted ones).  ``None`` runs
a loss's unweighted kernel where it binds one; the built-in losses bind
only the weighted kernels of the summed quantities, which
:meth:`Loss._summed` calls with an empty ``s`` (no weights, bit-identical
to the unweighted sums).  A loss without weighted kernels refuses
weights in one line (:attr:`Loss.weighted`).

Threads: the built-in losses bind each summed kernel and the second
derivative through :func:`ultrafs.kernels.row_chunks.parallel`, which runs
the kernel's ``*_parallel`` twin (the same bytes for any number of
threads) where numba may use several threads.  A loss may bind plain
(serial) kernels.
"""

from __future__ import annotations

import math

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels import l1_steps as _steps
from ultrafs.kernels import losses as _k
from ultrafs.kernels import multiclass_losses as _mk
from ultrafs.kernels.row_chunks import parallel as _parallel

__all__ = ["Loss", "Logistic", "SquaredHinge", "MultinomialLogistic",
           "OneVsRestSquaredHinge", "LOSSES", "MULTICLASS_LOSSES", "register_loss",
           "get_loss", "loss_names", "registered_losses", "unregister_loss"]


#: the empty weights array the weighted kernels read as "no weights"
_NO_WEIGHTS = np.empty(0)


def _pair(module, name):
    """Kernel ``name`` of ``module``, run as its ``*_parallel`` twin where allowed.

    The twins return the same bytes (:mod:`ultrafs.kernels.row_chunks`).
    """
    return _parallel(getattr(module, name), getattr(module, name + "_parallel"))


def _scale_rows(out, weights, n):
    """Multiply every sample's entries of ``out`` (n or n * K) by its weight."""
    if len(out) == n:
        out *= weights
    else:
        out.reshape(n, -1)[...] *= weights[:, None]
    return out


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
    #: the integer code of the l1 solvers' numba steps
    #: (:mod:`ultrafs.kernels.l1_steps`); None: CGD and SGD-C take the
    #: generic steps of :mod:`ultrafs.solvers.loss_steps` from this object's
    #: methods
    step_code = None
    _value_kernel = None
    _value_derivative_kernel = None
    _derivative_kernel = None
    _dual_kernel = None
    _curvature_kernel = None
    #: per-sample second derivative; None where the loss has none (multi-class)
    _second_derivative_kernel = None
    #: accurate sum of per-sample changes; None where not provided (multi-class)
    _value_change_kernel = None
    #: the kernels with per-sample weights ``s`` (after ``y, f``); None where
    #: the loss has none (it then refuses weights)
    _weighted_value_kernel = None
    _weighted_value_derivative_kernel = None
    _weighted_curvature_kernel = None
    _weighted_value_change_kernel = None

    def _check(self, y, f):
        """Reject arrays whose length does not fit ``y`` (the kernels trust them)."""
        _check_lengths(y, f)

    def _summed(self, plain, weighted, y, f, weights, *rest) -> float:
        """A summed quantity (value, value and derivative, curvature, change).

        With weights: ``weighted(y, f, s, *rest)``. Without: ``plain(y, f,
        *rest)`` for a loss that binds an unweighted kernel, else its
        weighted kernel given no weights (an empty ``s``; bit-identical to
        the unweighted sum).
        """
        if weights is not None:
            self._weights(y, weights, weighted)
            return float(weighted(y, f, weights, *rest))
        if plain is None:
            return float(weighted(y, f, _NO_WEIGHTS, *rest))
        return float(plain(y, f, *rest))

    def _per_sample(self, kernel, y, f, out, weights):
        """A per-sample quantity (derivative, dual, second derivative) into
        ``out`` (allocated if None), times ``s_i`` with weights."""
        self._check(y, f)
        if out is None:
            out = np.empty(len(f), dtype=np.float64)
        self._check(y, out)
        if weights is not None:
            self._weights(y, weights)
            return _scale_rows(kernel(y, f, out), weights, len(y))
        return kernel(y, f, out)

    @property
    def weighted(self) -> bool:
        """Whether the loss takes per-sample weights (its weighted kernels exist)."""
        return (self._weighted_value_kernel is not None
                and self._weighted_value_derivative_kernel is not None
                and self._weighted_curvature_kernel is not None)

    def _weights(self, y, weights, kernel=True):
        """Validate ``weights`` against ``y`` (length, float64, contiguous)."""
        if not self.weighted or kernel is None:
            raise ParameterError(
                f"the {self.target} loss {self.name!r} does not take sample weights")
        if len(weights) != len(y):
            raise ParameterError(
                f"weights must hold one value per sample, got {len(weights)} for "
                f"{len(y)}")
        return weights

    @property
    def second_order(self) -> bool:
        """Whether :meth:`second_derivative` and :meth:`value_change` exist.

        They are what proximal Newton needs of a loss beyond what APG does.
        """
        return (self._second_derivative_kernel is not None
                and (self._value_change_kernel is not None
                     or self._weighted_value_change_kernel is not None))

    def value(self, y, f, weights=None):
        """Return ``sum_i l(y_i, f_i)`` (``sum_i s_i l(y_i, f_i)`` with weights).

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        weights : ndarray of float64, shape (n,), optional

        Returns
        -------
        float
        """
        self._check(y, f)
        return self._summed(self._value_kernel, self._weighted_value_kernel, y, f,
                            weights)

    def derivative(self, y, f, out=None, weights=None):
        """Return ``dl/df`` at every sample (``s_i dl/df`` with weights).

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        out : ndarray of float64, shape (n,), optional
            Buffer to write into.
        weights : ndarray of float64, shape (n,), optional

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        return self._per_sample(self._derivative_kernel, y, f, out, weights)

    def value_derivative(self, y, f, out, weights=None):
        """Write ``dl/df`` into ``out`` and return ``sum_i l(y_i, f_i)``.

        With weights: ``s_i dl/df`` and ``sum_i s_i l(y_i, f_i)``.

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        out : ndarray of float64, shape (n,)
        weights : ndarray of float64, shape (n,), optional

        Returns
        -------
        float
        """
        self._check(y, f)
        self._check(y, out)
        return self._summed(self._value_derivative_kernel,
                            self._weighted_value_derivative_kernel, y, f, weights, out)

    def dual(self, y, f, out=None, weights=None):
        """Return ``alpha / C`` at every sample (Theorem 3; ``s_i alpha_i / C`` with weights).

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        out : ndarray of float64, shape (n,), optional
        weights : ndarray of float64, shape (n,), optional

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        return self._per_sample(self._dual_kernel, y, f, out, weights)

    def curvature_sum(self, y, f, derivative, weights=None):
        """Return ``sum_i d2l/df2 (y_i, f_i)`` (``sum_i s_i d2l/df2`` with weights).

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        derivative : ndarray of float64, shape (n,)
            ``dl/df`` at ``f`` (as written by :meth:`value_derivative`, with
            the same weights); lets the logistic loss avoid new exponentials.
        weights : ndarray of float64, shape (n,), optional

        Returns
        -------
        float
        """
        self._check(y, f)
        self._check(y, derivative)
        return self._summed(self._curvature_kernel, self._weighted_curvature_kernel, y,
                            f, weights, derivative)

    def second_derivative(self, y, f, out=None, weights=None):
        """Return ``d2l/df2`` at every sample (binary losses).

        For the squared hinge this is the generalised second derivative (1
        where ``1 - y f > 0``, else 0).  Proximal Newton builds its Hessian
        ``C X' diag(.) X`` from it.

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        out : ndarray of float64, shape (n,), optional
        weights : ndarray of float64, shape (n,), optional
            Multiply sample ``i``'s value by ``s_i``.

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
        return self._per_sample(self._second_derivative_kernel, y, f, out, weights)

    def value_change(self, y, f, delta, weights=None):
        """Return ``sum_i l(y_i, f_i + delta_i) - l(y_i, f_i)`` (binary losses).

        Computed term by term without cancellation, so it stays accurate
        when the change is far below the rounding of :meth:`value` (a line
        search near the optimum compares such changes).

        Parameters
        ----------
        y, f, delta : ndarray of float64, shape (n,)
        weights : ndarray of float64, shape (n,), optional
            The change of ``sum_i s_i l(y_i, f_i)``.

        Returns
        -------
        float

        Raises
        ------
        ParameterError
            If the loss does not provide it (multi-class).
        """
        if self._value_change_kernel is None and self._weighted_value_change_kernel is None:
            raise ParameterError(
                f"the {self.target} loss {self.name!r} has no accurate value change")
        self._check(y, f)
        self._check(y, delta)
        return self._summed(self._value_change_kernel, self._weighted_value_change_kernel,
                            y, f, weights, delta)

    def optimal_constant(self, y, n_outputs=1, weights=None):
        """Return ``argmin_c sum_i l(y_i, c)`` (the best constant decision).

        Parameters
        ----------
        y : ndarray, shape (n,)
        n_outputs : int
            Decision values per sample (1 for binary losses).
        weights : ndarray of float64, shape (n,), optional
            Minimise ``sum_i s_i l(y_i, c)`` instead.

        Returns
        -------
        float, or ndarray of float64 of shape (n_outputs,)
        """
        raise NotImplementedError

    def dual_weights(self, y, f, C, weights=None):
        """Return ``-C dl/df``: the weights of the worst-case analysis.

        For binary losses this is ``alpha * y`` (Theorem 3), shape ``(n,)``;
        with sample weights ``-C s dl/df``.

        Parameters
        ----------
        y, f : ndarray
        C : float
        weights : ndarray of float64, shape (n,), optional

        Returns
        -------
        ndarray of float64, shape (n,) or (n, K)
        """
        alpha = self.dual(y, f, weights=weights)
        alpha *= C
        return alpha * y

    def __repr__(self):
        return f"{type(self).__name__}()"


class Logistic(Loss):
    """Logistic loss ``l = log(1 + exp(-y f))``; ``alpha / C = sigma(-y f)``."""

    name = "logistic"
    probabilistic = True
    curvature_bound = 0.25
    step_code = _steps.LOGISTIC
    _derivative_kernel = staticmethod(_k.logistic_derivative)
    _dual_kernel = staticmethod(_k.logistic_dual)
    _second_derivative_kernel = staticmethod(_pair(_k, "logistic_second_derivative"))
    _weighted_value_kernel = staticmethod(_pair(_k, "logistic_value_weighted"))
    _weighted_value_derivative_kernel = staticmethod(
        _pair(_k, "logistic_value_derivative_weighted"))
    _weighted_curvature_kernel = staticmethod(
        _pair(_k, "logistic_curvature_sum_weighted"))
    _weighted_value_change_kernel = staticmethod(
        _pair(_k, "logistic_value_change_weighted"))

    def optimal_constant(self, y, n_outputs=1, weights=None):
        """Return ``log(n_+ / n_-)``, the exact minimiser.

        With weights, ``log(S_+ / S_-)`` for the sums of the weights of the
        positive and the negative samples.

        Raises
        ------
        ParameterError
            If only one class is present (the infimum is not attained).
        """
        if weights is not None:
            self._weights(y, weights)
            s_pos = float(np.sum(weights[y > 0]))
            s_neg = float(np.sum(weights[y <= 0]))
            if not (s_pos > 0 and s_neg > 0):
                raise ParameterError(
                    "the logistic loss with an intercept needs both classes with a "
                    f"positive weight; got weights {s_pos:g} (positive) and "
                    f"{s_neg:g} (negative)")
            return math.log(s_pos / s_neg)
        n_pos = int(np.count_nonzero(y > 0))
        n_neg = len(y) - n_pos
        if n_pos == 0 or n_neg == 0:
            raise ParameterError(
                "the logistic loss with an intercept needs both classes; "
                f"got {n_pos} positive and {n_neg} negative labels"
            )
        return math.log(n_pos / n_neg)

    def dual_value(self, y, f, theta, C, weights=None):
        """Return the Fenchel dual objective at the dual point ``theta * alpha(f)``.

        For ``P = C sum_i s_i l(y_i, f_i) + lam ||w||_1`` the dual point
        ``u_i = -theta C s_i dl/df_i`` has value ``-sum_i l_i^*(-u_i) = C
        sum_i s_i H(a_i)`` with ``a_i = theta sigma(-y_i f_i)`` and ``H(a) =
        -a log a - (1 - a) log(1 - a)`` (Koh, Kim & Boyd; the digest's
        §A1).  ``1 - a`` is ``sigma(y f)`` itself when ``theta = 1`` (never a
        subtraction that cancels).

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        theta : float
            Scaling in ``[0, 1]`` that makes the dual point feasible.
        C : float
        weights : ndarray of float64, shape (n,), optional

        Returns
        -------
        float
        """
        from scipy.special import expit, log_expit

        margin = y * f
        a = theta * expit(-margin)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_a = np.log(theta) + log_expit(-margin) if theta > 0 else np.full_like(a, -np.inf)
            log_rest = log_expit(margin) if theta == 1.0 else np.log1p(-a)
            terms = -np.where(a > 0, a * log_a, 0.0) - np.where(a < 1, (1.0 - a) * log_rest, 0.0)
        if weights is not None:
            terms = terms * weights
        return float(C * np.sum(terms))


class SquaredHinge(Loss):
    """Squared hinge ``l = max(0, 1 - y f)^2 / 2``; ``alpha / C = max(0, 1 - y f)``."""

    name = "squared-hinge"
    curvature_bound = 1.0
    step_code = _steps.SQUARED_HINGE
    _derivative_kernel = staticmethod(_k.squared_hinge_derivative)
    _dual_kernel = staticmethod(_k.squared_hinge_dual)
    _second_derivative_kernel = staticmethod(
        _pair(_k, "squared_hinge_second_derivative"))
    _weighted_value_kernel = staticmethod(_pair(_k, "squared_hinge_value_weighted"))
    _weighted_value_derivative_kernel = staticmethod(
        _pair(_k, "squared_hinge_value_derivative_weighted"))
    _weighted_curvature_kernel = staticmethod(
        _pair(_k, "squared_hinge_curvature_sum_weighted"))
    _weighted_value_change_kernel = staticmethod(
        _pair(_k, "squared_hinge_value_change_weighted"))

    def optimal_constant(self, y, n_outputs=1, weights=None):
        """Return ``(n_+ - n_-) / n``, the exact minimiser (0 when ``n = 0``).

        With weights, ``(S_+ - S_-) / S`` (sums of the weights).
        """
        if weights is not None:
            self._weights(y, weights)
            total = float(np.sum(weights))
            if not total > 0:
                return 0.0
            s_pos = float(np.sum(weights[y > 0]))
            return (2 * s_pos - total) / total
        n = len(y)
        if n == 0:
            return 0.0
        n_pos = int(np.count_nonzero(y > 0))
        return (2 * n_pos - n) / n

    def dual_value(self, y, f, theta, C, weights=None):
        """Return the Fenchel dual objective at the dual point ``theta * alpha(f)``.

        With ``v_i = theta C s_i max(0, 1 - y_i f_i)`` (``alpha`` scaled)
        the dual value is ``sum_i v_i - v_i^2 / (2 C s_i)``: minus the
        conjugate of ``C s_i max(0, 1 - y f)^2 / 2`` at ``-v_i y_i``.

        Parameters
        ----------
        y, f : ndarray of float64, shape (n,)
        theta : float
        C : float
        weights : ndarray of float64, shape (n,), optional

        Returns
        -------
        float
        """
        slack = np.maximum(0.0, 1.0 - y * f)
        # v / (C s) = theta * slack, so v - v^2 / (2 C s) = C s (theta slack - (theta slack)^2 / 2)
        a = theta * slack
        terms = a - 0.5 * a * a
        if weights is not None:
            terms = terms * weights
        return float(C * np.sum(terms))


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

    #: writes the factors ``a, u`` of the per-sample Hessians ``s_i (diag(a_i)
    #: - u_i u_i')`` (``(y, f, s, a, u)``, ``s`` empty for no weights); None
    #: where the loss has none
    _hessian_factors_kernel = None
    #: whether the per-sample Hessians have the rank-one part ``u_i u_i'``
    #: (False: diagonal, ``u`` is not written)
    rank_one_hessian = True

    @property
    def second_order(self) -> bool:
        """Whether :meth:`hessian_factors` and :meth:`value_change` exist
        (what proximal Newton needs of a multi-class loss)."""
        return (self._hessian_factors_kernel is not None
                and self._weighted_value_change_kernel is not None)

    def hessian_factors(self, y, f, weights=None):
        """Return ``(a, u)``: the Hessian of ``s_i l(y_i, .)`` at ``F_i`` is
        ``diag(a_i) - u_i u_i'``.

        Parameters
        ----------
        y : ndarray of int64, shape (n,)
        f : ndarray of float64, shape (n * K,)
        weights : ndarray of float64, shape (n,), optional

        Returns
        -------
        a : ndarray of float64, shape (n * K,)
        u : ndarray of float64, shape (n * K,), or (0,) for a diagonal Hessian

        Raises
        ------
        ParameterError
            If the loss provides no second derivatives.
        """
        if self._hessian_factors_kernel is None:
            raise ParameterError(
                f"the {self.target} loss {self.name!r} has no second derivatives")
        self._check(y, f)
        s = _NO_WEIGHTS if weights is None else self._weights(y, weights)
        a = np.empty(len(f), dtype=np.float64)
        u = np.empty(len(f) if self.rank_one_hessian else 0, dtype=np.float64)
        self._hessian_factors_kernel(y, f, s, a, u)
        return a, u

    def dual(self, y, f, out=None, weights=None):
        """Return ``-dl/df`` at every sample and class, shape ``(n * K,)``."""
        out = self.derivative(y, f, out, weights=weights)
        np.negative(out, out=out)
        return out

    def dual_weights(self, y, f, C, weights=None):
        """Return ``-C dl/dF`` (``-C s dl/dF`` with weights) as an ``(n, K)`` array."""
        dual = self.dual(y, f, weights=weights)
        dual *= C
        return dual.reshape(len(y), -1)

    def _class_counts(self, y, n_outputs, weights=None):
        """Samples (or their weights) of each class index (``0 <= y < K``)."""
        if weights is not None:
            self._weights(y, weights)
            return np.bincount(np.asarray(y, dtype=np.int64), weights=weights,
                               minlength=n_outputs)
        return np.bincount(np.asarray(y, dtype=np.int64), minlength=n_outputs)


class MultinomialLogistic(MulticlassLoss):
    """Multinomial logistic (softmax) loss ``log sum_k exp(F_ik) - F_{i y_i}``."""

    name = "logistic"
    probabilistic = True
    curvature_bound = 0.5
    _derivative_kernel = staticmethod(_mk.multinomial_derivative)
    _weighted_value_kernel = staticmethod(_pair(_mk, "multinomial_value_weighted"))
    _weighted_value_derivative_kernel = staticmethod(
        _pair(_mk, "multinomial_value_derivative_weighted"))
    _weighted_curvature_kernel = staticmethod(
        _pair(_mk, "multinomial_bias_curvature_weighted"))
    _weighted_value_change_kernel = staticmethod(_mk.multinomial_value_change_weighted)
    _hessian_factors_kernel = staticmethod(_mk.multinomial_hessian_factors_weighted)

    def optimal_constant(self, y, n_outputs=1, weights=None):
        """Return ``log(n_k / n)`` per class (defined up to a common shift).

        With weights, ``log(S_k / S)`` (sums of the weights).

        Raises
        ------
        ParameterError
            If a class has no sample (the infimum is not attained).
        """
        counts = self._class_counts(y, n_outputs, weights)
        if np.any(counts <= 0):
            missing = int(np.flatnonzero(counts <= 0)[0])
            raise ParameterError(
                "the multinomial logistic loss with intercepts needs every class; "
                f"class index {missing} has no sample"
                + ("" if weights is None else " with a positive weight"))
        return np.log(counts / counts.sum())


class OneVsRestSquaredHinge(MulticlassLoss):
    """One-vs-rest squared hinge ``sum_k max(0, 1 - Y_ik F_ik)^2 / 2``."""

    name = "squared-hinge"
    curvature_bound = 1.0
    _derivative_kernel = staticmethod(_mk.ovr_squared_hinge_derivative)
    _weighted_value_kernel = staticmethod(
        _pair(_mk, "ovr_squared_hinge_value_weighted"))
    _weighted_value_derivative_kernel = staticmethod(
        _pair(_mk, "ovr_squared_hinge_value_derivative_weighted"))
    _weighted_curvature_kernel = staticmethod(
        _pair(_mk, "ovr_squared_hinge_bias_curvature_weighted"))
    _weighted_value_change_kernel = staticmethod(
        _mk.ovr_squared_hinge_value_change_weighted)
    _hessian_factors_kernel = staticmethod(_mk.ovr_squared_hinge_hessian_factors_weighted)
    rank_one_hessian = False

    def optimal_constant(self, y, n_outputs=1, weights=None):
        """Return ``(n_k - (n - n_k)) / n`` per class, the exact minimiser.

        With weights, ``(2 S_k - S) / S`` (sums of the weights).
        """
        counts = self._class_counts(y, n_outputs, weights).astype(np.float64)
        n = float(len(y)) if weights is None else float(np.sum(weights))
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


def registered_losses():
    """``(target, name)`` of every registered loss, sorted."""
    return sorted(_REGISTRY)


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
