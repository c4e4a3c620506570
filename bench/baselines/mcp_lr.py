"""skglm's MCP-penalised logistic regression, the penalty's strength
bisected to ``k`` nonzero weights (or the largest count below ``k``)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

NAME = "mcp"
GAMMA = 3.0          # MCP's concavity (skglm's examples and Zhang 2010 use 3)
MAX_FITS = 25


def _column_scale(X):
    """Root mean square (n_features,) of each column (1 for an empty one)."""
    if sp.issparse(X):
        sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
    else:
        sq = np.mean(np.asarray(X, dtype=float) ** 2, axis=0)
    scale = np.sqrt(sq)
    scale[scale == 0] = 1.0
    return scale


def _fit_at(Xs, ys, alpha):
    from skglm import GeneralizedLinearEstimator
    from skglm.datafits import Logistic
    from skglm.penalties import MCPenalty
    from skglm.solvers import AndersonCD

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GeneralizedLinearEstimator(
            datafit=Logistic(), penalty=MCPenalty(alpha=alpha, gamma=GAMMA),
            solver=AndersonCD(fit_intercept=True, tol=1e-6, max_iter=100))
        model.fit(Xs, ys)
    return np.ravel(model.coef_), float(np.ravel(model.intercept_)[0])


def fit(X, y, k):
    """MCP-LR with ``alpha`` bisected on a log scale to ``k`` nonzeros.

    Parameters
    ----------
    X : (n_rows, n_features) sparse matrix or ndarray
    y : (n_rows,) two class labels
    k : int, the largest number of nonzero weights

    Returns
    -------
    support : (s,) int64, s <= k (k itself when a bisected ``alpha`` hits it)
    coef : (s,) float64, weights on the original scale
    intercept : float

    The columns are scaled to unit root mean square (without centring, so
    sparse data stays sparse) before the fit, as glmnet does for its
    penalties, and the weights are mapped back; ``alpha`` starts at
    ``alpha_max = max_j |x_j' y| / (2 n)`` (no nonzero weight; skglm's
    logistic datafit is ``mean log(1 + exp(-y x'w))`` with y = ±1) and is
    bisected between ``1e-4 alpha_max`` and ``alpha_max``.  MCP is not
    convex, so the count is not monotone in ``alpha``: the fit kept is the
    one with the largest count <= k met on the way.
    """
    classes = np.unique(y)
    ys = np.where(np.asarray(y) == classes[1], 1.0, -1.0)
    scale = _column_scale(X)
    if sp.issparse(X):
        Xs = sp.csc_matrix(X @ sp.diags(1.0 / scale), dtype=np.float64)
    else:
        Xs = np.asfortranarray(np.asarray(X, dtype=float) / scale)
    n = Xs.shape[0]
    alpha_max = float(np.max(np.abs(Xs.T @ ys))) / (2 * n)
    best = None

    def attempt(log_alpha):
        nonlocal best
        coef, intercept = _fit_at(Xs, ys, alpha_max * 10.0 ** log_alpha)
        nnz = int(np.count_nonzero(coef))
        if nnz <= k and (best is None or nnz > best[0]):
            best = (nnz, coef, intercept)
        return nnz

    lo, hi = 0.0, -4.0       # log10 alpha / alpha_max: lo gives <= k, hi > k
    if attempt(hi) > k:
        for _ in range(MAX_FITS - 1):
            mid = 0.5 * (lo + hi)
            nnz = attempt(mid)
            if nnz == k or lo - hi < 1e-3:
                break
            if nnz > k:
                hi = mid
            else:
                lo = mid
    if best is None:            # alpha_max itself: no weight
        attempt(0.0)
    nnz, coef, intercept = best
    support = np.flatnonzero(coef).astype(np.int64)
    return support, coef[support] / scale[support], intercept
