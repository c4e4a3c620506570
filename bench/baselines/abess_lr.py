"""abess (best-subset selection by splicing, JMLR 2022): logistic regression
at support size exactly ``k``."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

NAME = "abess"
# abess' sparse-matrix path is far slower than its dense one on dense data
# (leu, 38 x 7,129, k = 10: 23.8 s against 0.08 s): a matrix is handed over
# dense whenever its dense copy takes at most this many bytes
DENSE_BYTES = 2 * 1024 ** 3


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
    default) and reports the weights on the original scale.  A sparse
    ``X`` goes to abess dense when that copy fits in ``DENSE_BYTES``,
    through abess' sparse-matrix path otherwise.  Columns constant on
    the given rows are left out (abess refuses to normalize them, and no
    model can use them).
    """
    from abess.linear import LogisticRegression

    classes = np.unique(y)
    target = (np.asarray(y) == classes[1]).astype(float)
    varying = np.flatnonzero(_varies(X))
    X = X[:, varying]
    k = int(min(k, X.shape[1]))
    model = LogisticRegression(support_size=[k])
    if sp.issparse(X) and X.shape[0] * X.shape[1] * 8 <= DENSE_BYTES:
        X = X.toarray()
    if sp.issparse(X):
        model.fit(sp.coo_matrix(X), target, sparse_matrix=True)
    else:
        model.fit(np.asarray(X, dtype=float), target)
    coef = np.ravel(model.coef_)
    support = np.flatnonzero(coef)
    return (varying[support].astype(np.int64), coef[support],
            float(np.ravel(model.intercept_)[0]))


def _varies(X):
    """Bool (n_features,): the columns of ``X`` not constant over its rows."""
    if sp.issparse(X):
        X = sp.csc_matrix(X)
        high = X.max(axis=0).toarray().ravel()
        low = X.min(axis=0).toarray().ravel()
    else:
        high, low = np.max(X, axis=0), np.min(X, axis=0)
    return high > low
