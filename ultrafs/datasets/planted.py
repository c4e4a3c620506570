"""Synthetic problems with a planted sparse model (FGM paper §8.2, and K classes)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SyntheticProblem", "make_planted_problem", "make_planted_multiclass"]


@dataclass
class SyntheticProblem:
    """A planted linear problem with a train and a test split.

    Attributes
    ----------
    X_train, X_test : float32 arrays, shape (n, m)
    y_train, y_test : float64 arrays of ±1 (class indices 0..K-1 for K classes)
    w_true : float64 array, shape (m,) or (m, K)
        The planted weights; ``relevant`` holds its nonzero rows.
    relevant : int64 array
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    w_true: np.ndarray
    relevant: np.ndarray


def make_planted_problem(n_samples=4096, n_features=4096, n_relevant=300,
                         n_test=4096, shift=0.0, seed=0) -> SyntheticProblem:
    """The paper's §8.2 recipe: X ~ N(0,1), y = sign(X w - shift).

    ``w`` has ``n_relevant`` nonzeros drawn from U(0, 1) at random
    positions.  With ``shift = 4`` this is §8.3's shifted variant, where
    the bias matters.

    Parameters
    ----------
    n_samples, n_features, n_relevant, n_test : int
    shift : float
    seed : int

    Returns
    -------
    problem : SyntheticProblem
    """
    rng = np.random.default_rng(seed)
    relevant = np.sort(rng.choice(n_features, size=n_relevant, replace=False))
    w_true = np.zeros(n_features)
    w_true[relevant] = rng.uniform(0.0, 1.0, size=n_relevant)
    X = rng.standard_normal((n_samples + n_test, n_features), dtype=np.float32)
    margin = X.astype(np.float64) @ w_true - shift
    y = np.where(margin >= 0, 1.0, -1.0)
    return SyntheticProblem(X[:n_samples], y[:n_samples], X[n_samples:],
                            y[n_samples:], w_true, relevant.astype(np.int64))


def make_planted_multiclass(n_samples=2000, n_features=1000, n_relevant=50,
                            n_classes=5, n_test=2000, noise=0.0,
                            seed=0) -> SyntheticProblem:
    """K classes sharing ``n_relevant`` planted features.

    ``X`` ~ N(0, 1); ``W`` (m x K) is zero except on ``n_relevant`` random
    rows, whose entries are N(0, 1); the class of a sample is
    ``argmax_k (X W)_k + noise * N(0, 1)``.  One feature set explains every
    class, which is what multi-class FGM selects.

    Parameters
    ----------
    n_samples, n_features, n_relevant, n_classes, n_test : int
    noise : float
        Standard deviation of Gaussian noise added to the class scores.
    seed : int

    Returns
    -------
    problem : SyntheticProblem
        ``y_*`` hold class indices (float64 values 0..K-1).
    """
    rng = np.random.default_rng(seed)
    relevant = np.sort(rng.choice(n_features, size=n_relevant, replace=False))
    w_true = np.zeros((n_features, n_classes))
    w_true[relevant] = rng.standard_normal((n_relevant, n_classes))
    X = rng.standard_normal((n_samples + n_test, n_features), dtype=np.float32)
    scores = X.astype(np.float64) @ w_true
    if noise > 0:
        scores += noise * rng.standard_normal(scores.shape)
    y = np.argmax(scores, axis=1).astype(np.float64)
    return SyntheticProblem(X[:n_samples], y[:n_samples], X[n_samples:],
                            y[n_samples:], w_true, relevant.astype(np.int64))

