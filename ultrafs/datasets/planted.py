"""Synthetic problems with a planted sparse model (FGM paper §8.2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SyntheticProblem", "make_planted_problem"]


@dataclass
class SyntheticProblem:
    """A planted linear problem with a train and a test split.

    Attributes
    ----------
    X_train, X_test : float32 arrays, shape (n, m)
    y_train, y_test : float64 arrays of ±1
    w_true : float64 array, shape (m,)
        The planted weights; ``relevant`` holds its nonzero positions.
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
