"""Weighted Gram products of a design matrix: the operator interface IRLS solves with.

GSR-FS (seed 002, :mod:`ultrafs.methods.gsrfs`) solves one reweighted
ridge problem per iteration, either in the primal (features ≤ samples)
from ``Xᵀ S X`` or by the Woodbury identity (features > samples) from
``X D Xᵀ``.  Both, and the two plain products, are what a *Gram operator*
provides over ``X`` (``n_samples x n_features``):

``feature_gram(s)``
    ``(Xᵀ diag(s) X, Xᵀ s)``: float64 ``(n_features, n_features)`` and
    ``(n_features,)``, for sample weights ``s >= 0`` of shape
    ``(n_samples,)``.
``sample_gram(d)``
    ``X diag(d) Xᵀ``: float64 ``(n_samples, n_samples)``, for feature
    weights ``d >= 0`` of shape ``(n_features,)``.
``rmatmat(V)``
    ``Xᵀ V``: float64 ``(n_features, c)`` for ``V`` of shape
    ``(n_samples, c)``.
``matmat(W)``
    ``X W``: float64 ``(n_samples, c)`` for ``W`` of shape
    ``(n_features, c)``.

plus the attributes ``n_samples``, ``n_features`` and ``n_passes`` (how
many products were taken: for an operator that streams its columns from a
store, each is one pass over the data).  Every product is accumulated in
float64 whatever the dtype of ``X``.

Three operators implement it: :class:`DenseGramOperator` (a dense array,
BLAS), :class:`~ultrafs.solvers.sparse_gram.SparseGramOperator` (CSC
columns in memory, numba kernels of :mod:`ultrafs.kernels.weighted_gram`)
and :class:`~ultrafs.scoring.gram_passes.StoreGramOperator` (the columns
of a store streamed block by block through the scoring layer's runner,
for data that does not fit).  They agree to rounding (the order of the
sums differs), which ``tests/test_weighted_gram.py`` checks against a
dense NumPy reference.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError

__all__ = ["DenseGramOperator", "ScaledGramOperator", "check_weights", "check_matrix"]


def check_weights(w, n, what) -> np.ndarray:
    """``w`` as a C-contiguous float64 vector of length ``n``, finite and >= 0."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (n,):
        raise ParameterError(f"{what} must have shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or (w.size and w.min() < 0):
        raise ParameterError(f"{what} must be finite and non-negative")
    return w


def check_matrix(V, n, what) -> np.ndarray:
    """``V`` as a C-contiguous float64 matrix with ``n`` rows (a vector: one column)."""
    V = np.asarray(V, dtype=np.float64)
    if V.ndim == 1:
        V = V[:, None]
    if V.ndim != 2 or V.shape[0] != n:
        raise ParameterError(f"{what} must have {n} rows, got shape {V.shape}")
    return np.ascontiguousarray(V)


class DenseGramOperator:
    """Gram operator over a dense in-memory matrix (BLAS products).

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        Converted to a C-contiguous float64 copy.
    """

    def __init__(self, X):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ParameterError(f"X must be a matrix, got shape {X.shape}")
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        if not np.all(np.isfinite(self.X)):
            raise ParameterError("X holds NaN or infinite values")
        self.n_samples, self.n_features = self.X.shape
        self.n_passes = 0

    def feature_gram(self, s):
        """``(Xᵀ diag(s) X, Xᵀ s)``."""
        s = check_weights(s, self.n_samples, "sample weights")
        self.n_passes += 1
        Xs = self.X * s[:, None]
        return Xs.T @ self.X, self.X.T @ s

    def sample_gram(self, d):
        """``X diag(d) Xᵀ``."""
        d = check_weights(d, self.n_features, "feature weights")
        self.n_passes += 1
        return (self.X * d) @ self.X.T

    def rmatmat(self, V):
        """``Xᵀ V``."""
        V = check_matrix(V, self.n_samples, "V")
        self.n_passes += 1
        return self.X.T @ V

    def matmat(self, W):
        """``X W``."""
        W = check_matrix(W, self.n_features, "W")
        self.n_passes += 1
        return self.X @ W

    def columns(self, cols) -> "DenseGramOperator":
        """The operator over the columns ``cols`` (in that order)."""
        return DenseGramOperator(self.X[:, np.asarray(cols, dtype=np.int64)])


class ScaledGramOperator:
    """The Gram operator of ``X diag(c)``: every column of an operator times a factor.

    Standardising columns (``c_j = 1/std_j``) without touching the data:
    ``feature_gram`` scales the rows and columns of the inner Gram,
    ``sample_gram`` weights the features by ``d c²``, ``rmatmat`` scales
    the rows of ``Xᵀ V`` and ``matmat`` the rows of ``W`` first.  A factor
    of 0 makes its column a zero column (constant columns: never ranked).

    Parameters
    ----------
    inner : Gram operator
    factors : array-like of float, shape (n_features,)
        Finite, non-negative.
    """

    def __init__(self, inner, factors):
        self.inner = inner
        self.factors = check_weights(factors, inner.n_features, "column factors")
        self.n_samples, self.n_features = inner.n_samples, inner.n_features

    @property
    def n_passes(self) -> int:
        """Products taken from the inner operator."""
        return self.inner.n_passes

    def feature_gram(self, s):
        """``(diag(c) Xᵀ diag(s) X diag(c), diag(c) Xᵀ s)``."""
        G, u = self.inner.feature_gram(s)
        c = self.factors
        return c[:, None] * G * c[None, :], c * u

    def sample_gram(self, d):
        """``X diag(d c²) Xᵀ``."""
        d = check_weights(d, self.n_features, "feature weights")
        return self.inner.sample_gram(d * self.factors ** 2)

    def rmatmat(self, V):
        """``diag(c) Xᵀ V``."""
        return self.factors[:, None] * self.inner.rmatmat(V)

    def matmat(self, W):
        """``X diag(c) W``."""
        W = check_matrix(W, self.n_features, "W")
        return self.inner.matmat(self.factors[:, None] * W)

    def columns(self, cols) -> "ScaledGramOperator":
        """The operator over the columns ``cols`` (in that order)."""
        cols = np.asarray(cols, dtype=np.int64)
        return ScaledGramOperator(self.inner.columns(cols), self.factors[cols])
