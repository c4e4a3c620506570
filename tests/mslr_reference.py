"""Dense NumPy / SciPy references for ``tests/test_mslr.py`` (MSLR, seed 000).

Digest: ``shared/notes/mslr-slores.md`` Part A.  Notation: n samples, m
features, ``c(α) = X'(α ⊙ y)``, constraints ``S_t`` (column lists),
``f̃_t(α) = ½‖c_{S_t}‖² + G̃(α)`` with ``G̃(α) = Σ_i α_i log(α_i/C) +
(C−α_i) log((C−α_i)/C)``, the smoothed ``f(α, q) = G̃ + (1/q) ln Σ_t
exp(q sq_t)``, and ℓ2-LR without bias ``P(v) = ½‖v‖²_{1/d} + C Σ_i
log(1 + exp(−y_i x_i'v))``.

Nothing here calls the kernels under test: every quantity is computed from
its formula with NumPy (or root-found / minimised with SciPy), so a test
comparing the two checks the implementation against the digest.

Imported by tests as ``from mslr_reference import ...`` (with
``tests.mslr_reference`` as the fallback, as for ``l1_reference``).
"""

import math

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq, minimize_scalar
from scipy.special import expit, logsumexp

__all__ = ["one_d_slope", "one_d_root", "plain_newton", "softmax",
           "correlations", "halves", "entropy_ref", "smoothed_ref",
           "smoothed_grad_ref", "loss_ref", "l2lr_newton", "p_star",
           "best_mu_two", "fgm_subproblem", "top_r", "dense",
           "FIG2"]

#: the Fig. 2 instance of the paper (A4): c1, c2, a, b, sq = ½‖w_t‖²
FIG2 = dict(c1=0.09, c2=0.99, a=np.array([0.015, 0.040]), b=np.array([-2.433, 1.380]),
            sq=0.5 * np.array([2406.148, 2403.345]))


def dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def softmax(v):
    v = np.asarray(v, dtype=np.float64)
    e = np.exp(v - v.max())
    return e / e.sum()


# ------------------------------------------------------------ the 1-D problem
def one_d_slope(a, b, sq, c1, c2, q, value, side):
    """``p'`` at the point given by ``value``: ``α = value`` (side 1) or
    ``C − α = value`` (side 2); ``log α`` and ``log(C−α)`` taken apart so
    that a value near 0 keeps its accuracy."""
    s = c1 + c2
    if side == 1:
        alpha, other = value, s - value
        z = value - c1
    else:
        alpha, other = s - value, value
        z = c2 - value
    lam = softmax(q * (sq - sq.max()) + q * (0.5 * a * z + b) * z)
    return math.log(alpha) - math.log(other) + float(lam @ (a * z + b))


def one_d_root(a, b, sq, c1, c2, q):
    """``(α, C − α)`` at the root of ``p'`` by ``scipy.optimize.brentq``.

    The side of the midpoint holding the root is found first and the root
    sought in the variable that is small there (as the digest's transform),
    on ``[1e-300, s/2]``; a root below 1e-300 is returned as 1e-300."""
    s = c1 + c2
    tiny = 1e-300
    if one_d_slope(a, b, sq, c1, c2, q, 0.5 * s, 1) >= 0.0:
        f = lambda x: one_d_slope(a, b, sq, c1, c2, q, x, 1)  # noqa: E731
        if f(tiny) >= 0.0:
            return tiny, s
        x = brentq(f, tiny, 0.5 * s, xtol=1e-300, rtol=1e-15, maxiter=2000)
        return x, s - x
    f = lambda x: -one_d_slope(a, b, sq, c1, c2, q, x, 2)  # noqa: E731
    if f(tiny) >= 0.0:
        return s, tiny
    x = brentq(f, tiny, 0.5 * s, xtol=1e-300, rtol=1e-15, maxiter=2000)
    return s - x, x


def plain_newton(derivatives, c1, c2, z0=0.0, tol=1e-10, max_iter=100):
    """Unsafeguarded Newton on ``p'`` from ``z0``: ``(z, converged, steps)``.

    ``derivatives(z) -> (p', p'')``.  Converged when ``|p'| < tol``; a step
    that leaves ``(−c1, c2)`` ends it unconverged."""
    z = z0
    for k in range(max_iter):
        d1, d2 = derivatives(z)
        if abs(d1) < tol:
            return z, True, k
        z = z - d1 / d2
        if not (-c1 < z < c2):
            return z, False, k + 1
    return z, False, max_iter


# ---------------------------------------------------- the reduced problem
def correlations(X, y, alpha):
    return dense(X).T @ (alpha * y)


def halves(c, constraints):
    return np.array([0.5 * float(np.sum(c[np.asarray(s)] ** 2)) for s in constraints])


def entropy_ref(alpha, alpha_c, C):
    """G̃ from α and C − α given apart (0 log 0 = 0)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    alpha_c = np.asarray(alpha_c, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        left = np.where(alpha > 0, alpha * (np.log(alpha) - math.log(C)), 0.0)
        right = np.where(alpha_c > 0, alpha_c * (np.log(alpha_c) - math.log(C)), 0.0)
    return float(np.sum(left) + np.sum(right))


def smoothed_ref(X, y, alpha, C, constraints, q):
    """``f(α, q)`` (α in the open box; C − α formed by subtraction)."""
    sq = halves(correlations(X, y, alpha), constraints)
    return entropy_ref(alpha, C - alpha, C) + float(logsumexp(q * sq)) / q


def smoothed_grad_ref(X, y, alpha, C, constraints, q):
    """``∇f(α, q) = log(α/(C−α)) + Σ_t λ_t y ⊙ X_{S_t} c_{S_t}`` (Prop. 2)."""
    D = dense(X)
    c = D.T @ (alpha * y)
    lam = softmax(q * halves(c, constraints))
    grad = np.log(alpha) - np.log(C - alpha)
    for t, s in enumerate(constraints):
        s = np.asarray(s)
        grad = grad + lam[t] * y * (D[:, s] @ c[s])
    return grad, lam


def loss_ref(X, y, v, C):
    """``C Σ_i log(1 + exp(−y_i x_i'v))``."""
    return float(C * np.sum(np.logaddexp(0.0, -y * (dense(X) @ v))))


# -------------------------------------------------- ℓ2-LR without bias
def l2lr_newton(X, y, C, tol=1e-13, max_iter=100):
    """``min_w ½‖w‖² + C Σ log(1 + exp(−y x'w))`` by damped Newton.

    Returns ``(w, objective)``; the gradient is driven below ``tol ·
    (1 + ‖w‖)`` (asserted)."""
    D = dense(X)
    n, p = D.shape
    w = np.zeros(p)
    if p == 0:
        return w, float(C * n * math.log(2.0))

    def obj(w):
        return 0.5 * float(w @ w) + C * float(np.sum(np.logaddexp(0.0, -y * (D @ w))))

    for _ in range(max_iter):
        m = y * (D @ w)
        s = expit(-m)
        grad = w - C * D.T @ (y * s)
        if np.linalg.norm(grad) <= tol * (1.0 + np.linalg.norm(w)):
            break
        h = s * (1.0 - s)
        H = np.eye(p) + C * (D.T * h) @ D
        step = np.linalg.solve(H, -grad)
        f0, t = obj(w), 1.0
        while obj(w + t * step) > f0 + 1e-4 * t * float(grad @ step) and t > 1e-12:
            t *= 0.5
        w = w + t * step
    m = y * (D @ w)
    grad = w - C * D.T @ (y * expit(-m))
    assert np.linalg.norm(grad) <= 1e-8 * (1.0 + np.linalg.norm(w)), "Newton did not converge"
    return w, obj(w)


def p_star(X, y, C, d):
    """``P*(d)``: ℓ2-LR (no bias) on the columns scaled by ``√d`` (d = 0
    columns dropped); also returns ``v = √d ⊙ w`` (the classifier in the
    original columns)."""
    D = dense(X)
    d = np.asarray(d, dtype=np.float64)
    keep = np.flatnonzero(d > 0)
    w, value = l2lr_newton(D[:, keep] * np.sqrt(d[keep]), y, C)
    v = np.zeros(D.shape[1])
    v[keep] = np.sqrt(d[keep]) * w
    return value, v


def best_mu_two(X, y, C, S1, S2):
    """``max_{μ ∈ [0,1]} −P*(μ 1_{S1} + (1−μ) 1_{S2})`` by a bounded scalar
    search (−P* is concave in μ: P* is a max of functions linear in d);
    ``(value, μ)``, the ends compared too."""
    m = dense(X).shape[1]

    def d_of(mu):
        d = np.zeros(m)
        d[np.asarray(S1)] += mu
        d[np.asarray(S2)] += 1.0 - mu
        return d

    res = minimize_scalar(lambda mu: p_star(X, y, C, d_of(mu))[0], bounds=(0.0, 1.0),
                          method="bounded", options={"xatol": 1e-7})
    candidates = [(res.fun, res.x), (p_star(X, y, C, d_of(0.0))[0], 0.0),
                  (p_star(X, y, C, d_of(1.0))[0], 1.0)]
    value, mu = min(candidates)
    return -value, mu


# --------------------------------------------------------------- FGM side
def fgm_subproblem(X, y, C, constraints, max_iter=20000):
    """FGM's subproblem ``min_ω ½(Σ_t ‖ω_t‖)² + C Σ loss`` (no bias) on the
    blocks ``X[:, S_1] | X[:, S_2] | ...`` (a column in two constraints is
    duplicated), by ``ultrafs.solvers.apg.solve``.

    Returns ``(result, v, dual_weights)``: ``v = Σ_t ω_t`` in the original
    columns and ``-C dl/df`` (= α ⊙ y) at the solution."""
    from ultrafs.solvers.apg import solve
    from ultrafs.solvers.datafits import make_datafit

    D = dense(X)
    blocks = [np.asarray(s, dtype=np.int64) for s in constraints]
    A = sp.csc_matrix(np.concatenate([D[:, s] for s in blocks], axis=1))
    A.sort_indices()
    batch_ptr = np.concatenate([[0], np.cumsum([len(s) for s in blocks])]).astype(np.int64)
    datafit = make_datafit(A.indptr.astype(np.int64), A.indices.astype(np.int32),
                           A.data.astype(np.float64), y, C, loss="logistic")
    result = solve(datafit, batch_ptr, fit_intercept=False, kkt_tol=1e-8, tol=1e-10,
                   max_iter=max_iter)
    v = np.zeros(D.shape[1])
    for t, s in enumerate(blocks):
        np.add.at(v, s, result.coef[batch_ptr[t]:batch_ptr[t + 1]])
    return result, v, np.asarray(datafit.dual_weights(result.decision), dtype=np.float64)


def top_r(scores, r):
    """The ``r`` largest scores, ties by the lower index (a stable sort)."""
    return np.argsort(-np.asarray(scores), kind="stable")[:r]
