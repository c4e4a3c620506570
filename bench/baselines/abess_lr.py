"""abess (best-subset selection by splicing, JMLR 2022): logistic regression
at support size exactly ``k``."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

NAME = "abess"


def fit(X, y, k):
    """abess' ``LogisticRegression(support_size=[k])``.

    Parameters
    ----------
    X : (n_rows, n_features) sparse matrix or ndarray
    y : (n_rows,) two class labels
    k : int, the support size (at most ``n_features``)

    Returns
    -------
    support : (s,) int64, s <= k
    coef : (s,) float64, weights on the original scale
    intercept : float

    abess standardizes the columns internally (``is_normal=True``, its
    default) and reports the weights on the original scale.
    """
    from abess.linear import LogisticRegression

    classes = np.unique(y)
    target = (np.asarray(y) == classes[1]).astype(float)
    k = int(min(k, X.shape[1]))
    model = LogisticRegression(support_size=[k])
    if sp.issparse(X):
        model.fit(sp.coo_matrix(X), target, sparse_matrix=True)
    else:
        model.fit(np.asarray(X, dtype=float), target)
    coef = np.ravel(model.coef_)
    support = np.flatnonzero(coef).astype(np.int64)
    return support, coef[support], float(np.ravel(model.intercept_)[0])
