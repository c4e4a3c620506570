"""Datafits: a pointwise loss applied through a linear operator.

``P(w, b) = C * sum_i l(y_i, f_i)`` with ``f = A(w) - b``: ``A`` is an
operator of :mod:`ultrafs.solvers.operators` (K outputs per sample), ``l``
a loss of :mod:`ultrafs.solvers.losses`, ``y`` the encoded targets and
``b`` the intercept (a float for one output, ``K`` floats otherwise).

The datafit is what solvers see: values, gradients with respect to ``w``
and ``b``, a curvature estimate for the intercept step, the best intercept
with ``w = 0``, and the dual weights ``-C dl/df`` that FGM's worst-case
analysis scores features with.  With one output every quantity is
computed by the same operations, in the same order, as the binary FGM
solver always did (results are bit-identical).

Sample weights: ``Datafit(..., sample_weight=s)`` is ``P(w, b) = C sum_i
s_i l(y_i, f_i)``.  Every quantity above is that of the weighted sum (the
derivative written by :meth:`Datafit.value_derivative` is ``s dl/df``, so
gradients, the bias step, the Hessian ``C X' diag(s l'') X`` and the dual
weights ``-C s dl/df`` follow), the best intercept is the weighted one, and
the initial Lipschitz estimates scale with ``sum_i s_i``
(:attr:`Datafit.weight_total`) instead of ``n``.  ``sample_weight=None`` is
the unweighted datafit, computed exactly as before.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels import sparse_ops
from ultrafs.kernels.row_chunks import parallel
from ultrafs.solvers.losses import get_loss
from ultrafs.solvers.operators import CSCOperator

__all__ = ["Datafit", "make_datafit", "encode_classification_targets",
           "check_sample_weight"]

#: the decision values from per-block products, over threads where allowed
_combine = parallel(sparse_ops.combine_block_products,
                    sparse_ops.combine_block_products_parallel,
                    work=lambda xv, *rest: xv.size)


def check_sample_weight(sample_weight, n):
    """Validate per-sample weights: finite, ``>= 0``, ``n`` of them, not all zero.

    Parameters
    ----------
    sample_weight : array-like of shape (n,) or None
    n : int

    Returns
    -------
    ndarray of float64, shape (n,), contiguous (a copy), or None

    Raises
    ------
    ParameterError
        In one line, naming what is wrong.
    """
    if sample_weight is None:
        return None
    try:
        weights = np.array(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("sample_weight must be an array of numbers") from None
    if weights.ndim != 1 or len(weights) != n:
        raise ParameterError(
            f"sample_weight must hold one weight per sample ({n}), got shape "
            f"{weights.shape}")
    if not np.all(np.isfinite(weights)):
        raise ParameterError("sample_weight must be finite")
    if np.any(weights < 0):
        raise ParameterError("sample_weight must be >= 0")
    if not np.any(weights > 0):
        raise ParameterError("sample_weight must not be all zero")
    return np.ascontiguousarray(weights)


class Datafit:
    """``P(w, b) = C sum_i l(y_i, A(w)_i - b)``.

    Parameters
    ----------
    loss : Loss
    operator : CSCOperator (or any operator with the same methods)
    y : ndarray
        Encoded targets: float64 ±1 for binary losses, int64 class indices
        for multi-class ones.
    C : float
        Weight of the data term (> 0).
    sample_weight : ndarray of float64, shape (n,), optional
        Per-sample weights ``s_i`` (None: all ones, the unweighted datafit).
    """

    def __init__(self, loss, operator, y, C, sample_weight=None):
        self.loss = loss
        self.operator = operator
        self.y = y
        self.C = float(C)
        self.sample_weight = check_sample_weight(sample_weight, len(y))
        if self.sample_weight is not None and not getattr(loss, "weighted", False):
            raise ParameterError(
                f"the {loss.target} loss {loss.name!r} does not take sample weights")
        if loss.target == "binary" and operator.n_outputs != 1:
            raise ParameterError(f"the binary loss {loss.name!r} needs one output")
        if loss.target == "multiclass" and operator.n_outputs < 3:
            raise ParameterError(
                f"the multi-class loss {loss.name!r} needs K >= 3 outputs")
        if len(y) != operator.n_rows:
            raise ParameterError(
                f"y has {len(y)} entries, the operator {operator.n_rows} rows")

    # -- sizes -----------------------------------------------------------
    @property
    def n(self) -> int:
        """Samples."""
        return self.operator.n_rows

    @property
    def n_outputs(self) -> int:
        """Decision values per sample (K)."""
        return self.operator.n_outputs

    @property
    def n_coef(self) -> int:
        """Coefficients (``p * K``)."""
        return self.operator.n_coef

    @property
    def nnz(self) -> int:
        """Stored entries of the operator."""
        return self.operator.nnz

    @property
    def weight_total(self):
        """``sum_i s_i``: ``n`` (an int) without weights."""
        if self.sample_weight is None:
            return self.n
        return float(np.sum(self.sample_weight))

    @property
    def decision_size(self) -> int:
        """Length of a decision vector (``n * K``)."""
        return self.n * self.n_outputs

    # -- values and derivatives -----------------------------------------
    def decision(self, coef, bias):
        """Return ``A(coef) - bias``, shape ``(n * K,)``."""
        f = self.operator.matvec(coef)
        return self.shift(f, bias, f)

    def constant_decision(self, bias):
        """Decision values ``-bias`` of the model with no feature, shape ``(n * K,)``."""
        if self.n_outputs == 1:
            return np.full(self.n, -bias)
        return np.tile(-np.asarray(bias, dtype=np.float64), self.n)

    def shift(self, f, delta, out):
        """Write ``f - delta`` (``delta`` per output) into ``out``; return it."""
        if self.n_outputs == 1:
            return np.subtract(f, delta, out=out)
        np.subtract(f.reshape(self.n, self.n_outputs), delta,
                    out=out.reshape(self.n, self.n_outputs))
        return out

    def value(self, f):
        """Return ``P = C sum_i l(y_i, f_i)``."""
        return self.C * self.loss.value(self.y, f, self.sample_weight)

    def value_derivative(self, f, out):
        """Write ``dl/df`` (``s dl/df``; not scaled by C) into ``out``; return ``P``."""
        return self.C * self.loss.value_derivative(self.y, f, out, self.sample_weight)

    def gradient(self, derivative):
        """Return ``C A'(dl/df)``, the gradient of ``P`` in ``w``."""
        grad = self.operator.rmatvec(derivative)
        grad *= self.C
        return grad

    def bias_gradient(self, derivative):
        """Return ``dP/db = -C sum_i dl/df_i`` (float, or ``(K,)`` array)."""
        if self.n_outputs == 1:
            return -self.C * float(np.sum(derivative))
        return -self.C * derivative.reshape(self.n, self.n_outputs).sum(axis=0)

    def bias_curvature(self, f, derivative):
        """Return ``C`` times a curvature bound of ``P`` along ``b`` at ``f``."""
        return self.C * self.loss.curvature_sum(self.y, f, derivative,
                                                self.sample_weight)

    def value_change(self, f, delta):
        """Return ``P(f + delta) - P(f)``, accurate however small (one output)."""
        return self.C * self.loss.value_change(self.y, f, delta, self.sample_weight)

    def hessian(self, f):
        """Return the Hessian of ``P`` over ``(w, b)`` at ``f``.

        One output: ``C [X, -1]' diag(s l''(y, f)) [X, -1]``, dense ``(p + 1,
        p + 1)``, the last index being ``b``; for the squared hinge ``l''``
        is its generalised second derivative.  K outputs: ``C sum_i
        ([x_i, -1]' [x_i, -1]) kron W_i`` with ``W_i`` the loss's K x K
        Hessian at ``F_i`` (times ``s_i``), dense ``((p + 1) K, (p + 1) K)``,
        the K intercepts last (:meth:`CSCOperator.multi_gram`).
        """
        if self.n_outputs != 1:
            a, u = self.loss.hessian_factors(self.y, f, self.sample_weight)
            a *= self.C
            u *= np.sqrt(self.C)
            return self.operator.multi_gram(a, u)
        weights = self.loss.second_derivative(self.y, f, weights=self.sample_weight)
        weights *= self.C
        return self.operator.augmented_gram(weights)

    def optimal_bias(self, fit_intercept=True):
        """Return the exact best ``b`` with ``w = 0`` (0 without intercept)."""
        if self.n_outputs == 1:
            if not fit_intercept:
                return 0.0
            if self.sample_weight is None:
                return -float(self.loss.optimal_constant(self.y))
            return -float(self.loss.optimal_constant(self.y, 1, self.sample_weight))
        if not fit_intercept:
            return np.zeros(self.n_outputs)
        if self.sample_weight is None:
            return -np.asarray(self.loss.optimal_constant(self.y, self.n_outputs),
                               dtype=np.float64)
        return -np.asarray(self.loss.optimal_constant(self.y, self.n_outputs,
                                                      self.sample_weight),
                           dtype=np.float64)

    def dual_weights(self, f):
        """Return ``-C dl/df``: ``alpha * y`` (n,) or per class (n, K); ``-C s dl/df`` with weights."""
        if self.sample_weight is None:
            return self.loss.dual_weights(self.y, f, self.C)
        return self.loss.dual_weights(self.y, f, self.C, self.sample_weight)

    # -- per-block products (paper §5.5) ----------------------------------
    def block_products(self, coef, block_ptr, out):
        """Write ``A_h(coef_h)`` for every coefficient block into ``out``."""
        return self.operator.block_matvec_into(coef, block_ptr, out)

    def combine(self, xv, xg, scale, step, bias, out):
        """``sum_h scale_h (xv_h - step xg_h) - bias`` into ``out``."""
        if self.n_outputs == 1:
            return _combine(xv, xg, scale, step, bias, out)
        _combine(xv, xg, scale, step, 0.0, out)
        return self.shift(out, bias, out)


def encode_classification_targets(y, n_classes=None):
    """Validate encoded targets: ±1 floats (binary) or class indices.

    Parameters
    ----------
    y : array-like, shape (n,)
    n_classes : int or None
        None or 2: binary labels in {-1, +1}; K >= 3: int class indices in
        ``0..K-1``.

    Returns
    -------
    y : ndarray (float64 or int64), contiguous
    n_outputs : int
    """
    if n_classes is None or n_classes == 2:
        y = np.ascontiguousarray(y, dtype=np.float64)
        if y.ndim != 1 or len(y) == 0:
            raise ParameterError("y must be a non-empty 1-d array")
        if not np.all((y == 1.0) | (y == -1.0)):
            raise ParameterError("labels must be -1 or +1")
        return y, 1
    K = int(n_classes)
    if K < 3:
        raise ParameterError(f"n_classes must be 2 or >= 3, got {n_classes!r}")
    y = np.asarray(y)
    if y.ndim != 1 or len(y) == 0:
        raise ParameterError("y must be a non-empty 1-d array")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise ParameterError("class indices must be integers")
    y = np.ascontiguousarray(y, dtype=np.int64)
    if y.min() < 0 or y.max() >= K:
        raise ParameterError(f"class indices must lie in [0, {K})")
    return y, K


def make_datafit(indptr, indices, data, y, C, *, loss="logistic", n_classes=None,
                 sample_weight=None):
    """A datafit over CSC columns for binary (±1) or K-class targets.

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of the selected columns (validated by the caller).
    y : ndarray, shape (n,)
        ±1 labels, or int class indices when ``n_classes >= 3``.
    C : float
    loss : str or Loss
        A registered name: the binary or multi-class member is chosen by
        ``n_classes``.
    n_classes : int or None
    sample_weight : array-like of shape (n,), optional
        Per-sample weights (:func:`check_sample_weight`).

    Returns
    -------
    Datafit
    """
    y, K = encode_classification_targets(y, n_classes)
    target = "binary" if K == 1 else "multiclass"
    operator = CSCOperator(indptr, indices, data, len(y), K)
    return Datafit(get_loss(loss, target), operator, y, C, sample_weight)
