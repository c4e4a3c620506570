"""Sparse baselines of the quality benchmark (issue 38), one module per peer.

Every peer has the same interface::

    fit(X, y, k) -> (support, coef, intercept)

``X`` (n_rows, n_features) a scipy sparse matrix or an ndarray, ``y``
(n_rows,) two class labels, ``k`` the largest number of nonzero weights.
``support`` (s,) int64 column ids with s <= k, ``coef`` (s,) the weights of
those columns on the original scale of ``X``, ``intercept`` a float; the
decision value of a row x is ``x[support] @ coef + intercept`` and a
positive one predicts the larger label (``np.unique(y)[1]``).

L0Learn (the third peer the issue names) is not here: its PyPI
distribution (``l0learn``) is not installable on these machines
(``pip index versions l0learn``: no distribution), and no stand-in is
written in its place.
"""

from __future__ import annotations

import numpy as np

L0LEARN_UNAVAILABLE = "L0Learn: not installable from PyPI here"


def decision(X, support, coef, intercept):
    """Decision values (n_rows,) of a sparse model of a peer on ``X``."""
    if len(support) == 0:
        return np.full(X.shape[0], float(intercept))
    return np.asarray(X[:, support] @ np.asarray(coef, dtype=float)).ravel() + intercept


def predict(X, y_train, support, coef, intercept):
    """Predicted labels (n_rows,): the larger of ``y_train``'s labels where
    the decision value is positive."""
    classes = np.unique(y_train)
    return np.where(decision(X, support, coef, intercept) > 0, classes[1], classes[0])
