"""A KKT-verified reference solution of l1-regularised logistic regression.

``min_{beta, c} (1/n) sum_i log(1 + exp(-y_i (x_i' beta + c))) + lam ||beta||_1``
(the intercept ``c`` unpenalised), for tests:

1. scipy's L-BFGS-B on the split variables ``beta = beta_plus - beta_minus``
   (both ``>= 0``, ``c`` free), a smooth bound-constrained problem;
2. a Newton polish on the support it found, with the signs fixed (the
   problem is smooth there: ``loss + lam sign' beta_S``), which takes the
   solution to machine precision when the support is right;
3. the KKT conditions asserted: ``max_j |X_j' (y theta)| / (n lam) <= 1 +
   1e-6``, ``|<theta, y>| <= 1e-8 n`` and, for ``beta_j != 0``,
   ``X_j' (y theta) / n = lam sign(beta_j)`` to 1e-6 relative.

Imported by tests as ``from l1_reference import reference_l1_logistic``
(with ``tests.l1_reference`` as the fallback, as for ``solver_contracts``).
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import expit

__all__ = ["reference_l1_logistic", "reference_objective", "reference_lam_max"]


def _dense_or_csc(X):
    return X.tocsc().astype(np.float64) if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def reference_objective(X, y, lam, beta, c):
    """The primal objective by dense NumPy formulas."""
    X = _dense_or_csc(X)
    f = X @ beta + c
    return float(np.mean(np.logaddexp(0.0, -y * f)) + lam * np.sum(np.abs(beta)))


def reference_lam_max(X, y):
    """``max_j |X_j' (y theta_max)| / n`` at the best constant model."""
    X = _dense_or_csc(X)
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    n_plus = np.count_nonzero(y > 0)
    theta = np.where(y > 0, (n - n_plus) / n, n_plus / n)
    return float(np.max(np.abs(X.T @ (y * theta))) / n)


def _polish(X, y, lam, beta, c, support, max_steps=50):
    """Newton on ``(beta_S, c)`` with the signs of ``beta_S`` fixed.

    Returns the polished ``(beta, c)``, or the input when a step would flip
    a sign (the support was not the right one).
    """
    n = len(y)
    sign = np.sign(beta[support])
    XS = X[:, support]
    XS = XS.toarray() if sp.issparse(XS) else XS
    A = np.hstack([XS, np.ones((n, 1))])
    z = np.concatenate([beta[support], [c]])
    lin = np.concatenate([lam * sign, [0.0]])

    def value(z):
        return np.mean(np.logaddexp(0.0, -y * (A @ z))) + lin @ z

    for _ in range(max_steps):
        f = A @ z
        theta = expit(-y * f)
        grad = -(A.T @ (y * theta)) / n + lin
        w = theta * (1.0 - theta) / n
        H = A.T @ (A * w[:, None])
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            return beta, c
        t = 1.0
        v0 = value(z)
        while t > 1e-10:
            cand = z - t * step
            if np.all(np.sign(cand[:-1]) == sign) and value(cand) <= v0 + 1e-4 * t * -(grad @ step):
                break
            t *= 0.5
        else:
            break
        z = cand
        if np.max(np.abs(grad)) < 1e-15:
            break
    out = beta.copy()
    out[support] = z[:-1]
    return out, float(z[-1])


def reference_l1_logistic(X, y, lam, *, check=True):
    """High-accuracy solution, with its KKT conditions asserted.

    Parameters
    ----------
    X : array or scipy.sparse matrix, shape (n, p)
    y : array, shape (n,)
        Labels ``+1`` / ``-1``, both present.
    lam : float
    check : bool
        Assert the KKT conditions (module docstring).

    Returns
    -------
    beta : float64 array, shape (p,)
    c : float
    theta : float64 array, shape (n,)
        ``1 / (1 + exp(y_i (x_i' beta + c)))``.
    """
    X = _dense_or_csc(X)
    y = np.asarray(y, dtype=np.float64)
    n, p = X.shape
    n_plus = np.count_nonzero(y > 0)
    c0 = np.log(n_plus / (n - n_plus))

    def fun(z):
        beta = z[:p] - z[p:2 * p]
        f = X @ beta + z[-1]
        theta = expit(-y * f)
        loss = np.mean(np.logaddexp(0.0, -y * f))
        g = -(X.T @ (y * theta)) / n
        grad = np.concatenate([g + lam, -g + lam, [-np.sum(y * theta) / n]])
        return loss + lam * np.sum(z[:2 * p]), grad

    z0 = np.zeros(2 * p + 1)
    z0[-1] = c0
    bounds = [(0.0, None)] * (2 * p) + [(None, None)]
    res = minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"gtol": 1e-11, "ftol": 1e-16, "maxiter": 100_000,
                            "maxfun": 200_000, "maxcor": 30})
    beta = res.x[:p] - res.x[p:2 * p]
    c = float(res.x[-1])
    support = np.flatnonzero(np.abs(beta) > 1e-9 * max(1.0, np.max(np.abs(beta), initial=0.0)))
    beta[np.setdiff1d(np.arange(p), support)] = 0.0
    if len(support):
        beta, c = _polish(X, y, lam, beta, c, support)
    else:
        # only the intercept: its exact value
        c = float(c0)
    theta = expit(-y * (X @ beta + c))
    if check:
        corr = (X.T @ (y * theta)) / n
        assert np.max(np.abs(corr)) <= lam * (1 + 1e-6), "reference: dual infeasible"
        assert abs(np.sum(theta * y)) <= 1e-8 * n, "reference: intercept not optimal"
        nz = beta != 0
        assert np.all(np.abs(corr[nz] - lam * np.sign(beta[nz])) <= 1e-6 * lam), \
            "reference: stationarity on the support"
    return beta, c, theta
