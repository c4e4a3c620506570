"""The synthetic generator of GSR-FS's paper (Peng & Fan, §5.1).

The digest (``../shared/notes/sklr-gsrfs.md`` §B4) fixes what the paper
leaves open: N(0, v) has variance v, outliers flip the signs of whole rows
of ``Y``, and ``X`` is z-scored.
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_gsrfs_synthetic"]


def make_gsrfs_synthetic(n=2000, d1=100, d2=700, c=5, a=0.0, seed=0):
    """Draw the paper's regression problem with redundant and irrelevant features.

    ``X = [X1, X2, X3, X4]``: ``X1, X2 ~ N(0, 1)`` (n x d1, informative),
    ``X3 = (X1 + X2)/2 + N(0, 0.1)`` (redundant), ``X4 ~ U(−1, 1)`` (n x d2,
    irrelevant); ``W = [W1; W2; 0]`` with ``W1, W2 ~ U(0, 1)``;
    ``Y = X W + N(0, 0.5)``; then the signs of a fraction ``a`` of the rows
    of ``Y`` are flipped (outliers).  ``X`` is z-scored after ``Y`` is made.

    Parameters
    ----------
    n, d1, d2, c : int
        Samples, features per informative block, irrelevant features, outputs.
    a : float in [0, 1]
        Fraction of rows of ``Y`` flipped.
    seed : int

    Returns
    -------
    X : float64 array (n, 3 d1 + d2)
        Columns ``0 .. 2 d1 − 1`` informative, ``2 d1 .. 3 d1 − 1`` redundant.
    Y : float64 array (n, c)
    """
    rng = np.random.default_rng(seed)
    X1 = rng.standard_normal((n, d1))
    X2 = rng.standard_normal((n, d1))
    X3 = 0.5 * (X1 + X2) + np.sqrt(0.1) * rng.standard_normal((n, d1))
    X4 = rng.uniform(-1.0, 1.0, (n, d2))
    X = np.hstack([X1, X2, X3, X4])
    W = np.vstack([rng.uniform(0.0, 1.0, (2 * d1, c)), np.zeros((d1 + d2, c))])
    Y = X @ W + np.sqrt(0.5) * rng.standard_normal((n, c))
    if a > 0:
        rows = rng.choice(n, int(round(a * n)), replace=False)
        Y[rows] *= -1.0
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, Y
