"""Slores safe screening for l1-logistic regression: acceptance tests S1-S9.

Digest: ``shared/notes/mslr-slores.md`` Part B (B9).  Notation of the code:
n samples, p features, labels ``y`` in {+1, -1}, ``x̄_j = y ⊙ x_j``.

References ("KKT-verified" solutions of the l1 problem with an unpenalised
intercept):

* ``reference_l1_logistic`` (tests/l1_reference.py: L-BFGS-B + Newton
  polish, its KKT conditions asserted) on the small synthetic sets, at all
  86 grid points;
* on the real sets (leu, rcv1_small, dorothea) 86 L-BFGS-B solves are too
  slow (seconds each on leu), so the reference there is the path with
  ``screening="none"`` (every column given to the solver, no rule) run at
  ``tol=1e-10``, whose KKT conditions are verified here with plain NumPy on
  every column; that this path agrees with ``reference_l1_logistic`` is
  checked on both synthetic sets (all 86 points) and on leu (at
  λ/λ_max = 0.5).
"""

import dataclasses
import functools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import expit

from ultrafs.errors import ParameterError
from ultrafs.methods.l1_path import fit_l1_path, lambda_grid
from ultrafs.methods.slores import (basic_region, labels_pm1,
                                    radius_at_lambda_max, region_bounds,
                                    sequential_region, slores_keep,
                                    slores_statistics, theta_max)
from ultrafs.methods.strong_rule import strong_keep
from ultrafs.store.memory import InMemoryStore
from ultrafs.store.writers.zarr_writer import write_store

try:
    from l1_reference import (reference_l1_logistic, reference_lam_max,
                              reference_objective)
except ImportError:  # pragma: no cover - run from the repository root
    from tests.l1_reference import (reference_l1_logistic, reference_lam_max,
                                    reference_objective)

SUPPORT_TOL = 1e-8          # |β_j| > 1e-8: active in the reference (B8-10)
OBJ_RTOL = 1e-9             # S1 / S6: same objective


# ----------------------------------------------------------------- helpers
def entropy(t):
    """f(t) = t log t + (1 - t) log(1 - t), plain formula (digest B1)."""
    t = np.asarray(t, dtype=np.float64)
    return t * np.log(t) + (1.0 - t) * np.log(1.0 - t)


def closed_form_lambda_max(X, y):
    """Eq. (1)-(2) with dense NumPy: (1/n) max_j |(n-/n) Σ_P x_ij - (n+/n) Σ_N x_ij|."""
    D = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    n = len(y)
    n_pos, n_neg = np.sum(y > 0), np.sum(y < 0)
    per_feature = (n_neg / n) * D[y > 0].sum(axis=0) - (n_pos / n) * D[y < 0].sum(axis=0)
    return np.max(np.abs(per_feature)) / n, int(np.argmax(np.abs(per_feature)))


def dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def full_beta(p, columns, coefs):
    beta = np.zeros(p)
    beta[columns] = coefs
    return beta


def correlations(X, y, theta):
    """x̄_j'θ for every column."""
    return np.asarray(X.T @ (y * theta)).ravel()


def assert_kkt_verified(X, y, lam, beta, c, what=""):
    """The digest's acceptance of a reference (S4): dual feasible to 1e-6,
    <θ, y> = 0 to 1e-8 (per sample), stationary on the support."""
    n = len(y)
    theta = expit(-y * (np.asarray(X @ beta).ravel() + c))
    corr = correlations(X, y, theta) / n
    assert np.max(np.abs(corr)) <= lam * (1 + 1e-6), f"{what}: reference not dual feasible"
    assert abs(theta @ y) <= 1e-8 * n, f"{what}: intercept not optimal"
    nz = beta != 0
    np.testing.assert_allclose(corr[nz], lam * np.sign(beta[nz]), rtol=1e-6, atol=0,
                               err_msg=f"{what}: not stationary on the support")
    return theta


def basic_keep(stats, lam):
    return slores_keep(stats, basic_region(stats, lam), lam)


def exact_sequential_region(stats, X, y, lam, beta0, c0):
    """Sequential region from the primal point (β0, c0) (any, exact or not)."""
    decision = np.asarray(X @ beta0).ravel() + c0
    theta0 = expit(-y * decision)
    return sequential_region(stats, lam, decision=decision, y=y,
                             coef_l1=float(np.abs(beta0).sum()),
                             s0=correlations(X, y, theta0))


def region_centre(y, decision):
    """θc = θ0 - (<θ0, y>/n) y with θ0 = σ(-y f0)."""
    theta0 = 1.0 / (1.0 + np.exp(y * decision))
    return theta0 - (theta0 @ y / len(y)) * y


#: SLSQP's leeway on the ball, relative to radius²: on some machines it
#: stops ("positive directional derivative for linesearch") up to 5e-8
#: outside the ball.  A point that far out raises <θ, v> by at most
#: r‖v‖(√(1 + 1e-7) − 1) = 5e-8 r‖v‖, well inside the 1e-6 tolerance of
#: the comparisons below.
BALL_LEEWAY = 1e-7


def brute_force_T(centre, radius, y, xstar, n_lam, v):
    """max_{θ∈𝒜} <θ, v> by SLSQP; 𝒜 = ball(centre, radius) ∩ {<θ,y> = 0}
    ∩ {<θ, x̄*> <= nλ}."""
    scale = max(np.linalg.norm(v) * radius + abs(centre @ v), 1e-300)
    cons = [
        {"type": "ineq", "fun": lambda t: (radius ** 2 - (t - centre) @ (t - centre)) / radius ** 2,
         "jac": lambda t: -2.0 * (t - centre) / radius ** 2},
        {"type": "eq", "fun": lambda t: np.array([t @ y]) / np.sqrt(len(y)),
         "jac": lambda t: y[None, :] / np.sqrt(len(y))},
        {"type": "ineq", "fun": lambda t: np.array([(n_lam - t @ xstar) / n_lam]),
         "jac": lambda t: -xstar[None, :] / n_lam},
    ]
    best = -np.inf
    for start in (centre, centre + 0.5 * radius * v / max(np.linalg.norm(v), 1e-300)):
        res = minimize(lambda t: -(t @ v) / scale, start, jac=lambda t: -v / scale,
                       constraints=cons, method="SLSQP",
                       options={"ftol": 1e-15, "maxiter": 2000})
        t = res.x
        feasible = ((t - centre) @ (t - centre) <= radius ** 2 * (1 + BALL_LEEWAY)
                    and abs(t @ y) <= 1e-9 * len(y) and t @ xstar <= n_lam * (1 + 1e-9))
        if feasible:
            best = max(best, t @ v)
    assert np.isfinite(best), "SLSQP found no feasible point"
    return best


def paper_T_xi(region, norm2, xi):
    """Theorem 8 in the paper's u2*-quadratic form (13)-(14), for one ξ,
    from the region's exact quantities (no rounding pads).

    With x̄ = -ξ x̄_j: ||Px̄|| = N_j, <Px̄, Px̄*> = -ξ B_j, <θc, x̄> = -ξ s_j and
    m(λ0 - λ) = d r √A (for the sequential region: <θc, x̄*> - nλ).
    """
    r, A, d = region.radius, region.cut_norm2, region.d
    N2 = np.asarray(norm2, dtype=np.float64)
    N = np.sqrt(N2)
    B = -xi * region.cut
    m_gap = d * r * np.sqrt(A)
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = np.where(N > 0, B / (N * np.sqrt(A)), 1.0)
    a2 = A ** 2 * (1 - d ** 2)
    a1 = 2 * B * A * (1 - d ** 2)
    a0 = B ** 2 - d ** 2 * N2 * A
    delta = np.maximum(a1 ** 2 - 4 * a2 * a0, 0.0)
    u2 = (-a1 + np.sqrt(delta)) / (2 * a2)
    norm = np.sqrt(np.maximum(N2 + 2 * u2 * B + u2 ** 2 * A, 0.0))
    case_b = r * norm - u2 * m_gap + xi * region.s
    case_a = r * N + xi * region.s
    return np.where(cos >= d, case_a, case_b), cos >= d


def exact(region):
    """The region with its rounding pads removed."""
    return dataclasses.replace(region, s_gamma=0.0, shift_gamma=0.0, cut_gamma=0.0)


# ----------------------------------------------------------------- data
def dense_gaussian(seed=0, n=80, p=300):
    """(i): dense Gaussian, unbalanced labels, a planted model, plus a
    constant column, an all-zero column, a duplicate of the first feature
    to enter (j0), the negative of an informative column and a scaled copy
    of another."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    w = np.zeros(p)
    w[:5] = [2.0, -1.5, 1.0, 0.8, -0.6]
    y = np.where(rng.random(n) < expit(X @ w - 3.0), 1.0, -1.0)
    _, j0 = closed_form_lambda_max(X, y)
    X = np.hstack([X, np.full((n, 1), 3.7), np.zeros((n, 1)), X[:, [j0]], -X[:, [1]],
                   2.0 * X[:, [2]]])
    return X, y


def sparse_text(seed=1, n=200, p=2000, nnz_row=25):
    """(ii): sparse power-law text-like data (Zipf column frequencies,
    log(1 + count) values), a planted model on frequent words."""
    rng = np.random.default_rng(seed)
    freq = 1.0 / np.arange(1, p + 1) ** 1.1
    freq /= freq.sum()
    rows, cols, vals = [], [], []
    for i in range(n):
        c = np.unique(rng.choice(p, size=rng.poisson(nnz_row) + 1, p=freq))
        rows += [i] * len(c)
        cols += c.tolist()
        vals += (1 + rng.poisson(1.0, len(c))).tolist()
    X = sp.csr_matrix((np.log1p(np.asarray(vals, dtype=np.float64)), (rows, cols)),
                      shape=(n, p))
    w = np.zeros(p)
    w[rng.choice(200, 10, replace=False)] = 2.0 * rng.standard_normal(10)
    y = np.where(rng.random(n) < expit(X @ w), 1.0, -1.0)
    return X, y


def small_mixed(seed=5, n=50, p=40):
    """Small signed sparse-ish data with an all-zero column (3), an all-zero
    row (5) and a constant column (7)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.3, random_state=np.random.RandomState(seed),
                  data_rvs=lambda k: rng.standard_normal(k) * 3.0).toarray()
    X[:, 0] += 1.5 * (np.arange(n) % 3 == 0)
    X[:, 3] = 0.0
    X[5, :] = 0.0
    X[:, 7] = 2.5
    y = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)
    return X, y


@functools.lru_cache(maxsize=None)
def synthetic_case(name):
    """(X, y, stats, grid, references) with reference_l1_logistic at all 86 points."""
    X, y = dense_gaussian() if name == "dense" else sparse_text()
    stats = slores_statistics(InMemoryStore(X, y), y, scheduler="synchronous")
    grid = lambda_grid(stats.lambda_max)
    refs = [reference_l1_logistic(X, y, lam) for lam in grid]
    return X, y, stats, grid, refs


@functools.lru_cache(maxsize=None)
def real_case(path, n_features):
    """(X csr, y ±1, store, stats, reference path): the reference is the
    unscreened path at tol=1e-10, KKT-verified on every column here."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(path), n_features=n_features)
    X = sp.csr_matrix(X, dtype=np.float64)
    y = np.where(y > 0, 1.0, -1.0)
    store = InMemoryStore(X, y)
    stats = slores_statistics(store, y, scheduler="synchronous")
    ref = fit_l1_path(store, y, screening="none", tol=1e-10, statistics=stats,
                      scheduler="synchronous")
    p = X.shape[1]
    refs = []
    for k, lam in enumerate(ref.lambdas):
        beta = full_beta(p, ref.columns[k], ref.coefs[k])
        theta = assert_kkt_verified(X, y, lam, beta, ref.intercepts[k], f"{path} λ#{k}")
        refs.append((beta, ref.intercepts[k], theta))
    return X, y, store, stats, ref.lambdas, refs


REAL = {"leu": 7129, "rcv1_small": 47236, "dorothea_train": None}


def load_real(data_dir, name):
    path = data_dir / f"{name}.svm.bz2"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return real_case(path, REAL[name])


def check_safety(X, y, stats, grid, refs, what):
    """S4 + S5 on one dataset: the reference support is in the keep set of
    basic Slores and of sequential Slores (region from the previous grid
    point's reference solution) at every λ; T within the ball bound;
    0 <= rejection <= 1.  Returns the basic rejection ratios."""
    n, p = X.shape
    prev_beta, prev_c = np.zeros(p), float(np.log(stats.n_pos / stats.n_neg))
    rejection = []
    for k, (lam, (beta, c, theta)) in enumerate(zip(grid, refs)):
        support = np.abs(beta) > SUPPORT_TOL
        assert support.any()
        for mode, region in (
                ("basic", basic_region(stats, lam)),
                ("sequential", exact_sequential_region(stats, X, y, lam, prev_beta, prev_c))):
            keep = slores_keep(stats, region, lam)
            missed = np.flatnonzero(support & ~keep)
            assert missed.size == 0, (
                f"{what}: {mode} Slores discards active features {missed.tolist()} at "
                f"λ/λ_max = {lam / stats.lambda_max:.2f}")
            # S5: the region lies in the ball, T <= r N_j + |s_j| (+ rounding)
            T = region_bounds(region, stats.norm2)
            ball = region.radius * np.sqrt(stats.norm2) + np.abs(region.s)
            assert np.all(T <= ball + region.s_error + 1e-12 * (ball + n * lam)), (what, mode, k)
            ratio = (p - keep.sum()) / (p - support.sum())
            assert 0.0 <= ratio <= 1.0
            if mode == "basic":
                rejection.append(ratio)
        prev_beta, prev_c = beta, c
    return np.array(rejection)


def check_path_against_reference(X, y, path, grid, refs, what, *, supports=True,
                                 screened=True):
    """The path's records: no violation found (safe rule) or left, kept >=
    the reference support, 0 <= rejection <= 1, objective of the model equal
    to the reference's (1e-9 relative), same support if asked."""
    p = X.shape[1]
    np.testing.assert_allclose(path.lambdas, grid, rtol=1e-15)
    for k, (lam, (beta, c, _)) in enumerate(zip(grid, refs)):
        rec = path.records[k]
        support = np.flatnonzero(np.abs(beta) > SUPPORT_TOL)
        assert rec["kkt_violations_left"] == 0
        if screened:
            assert rec["kkt_violations_found"] == 0, (what, k, rec)
            assert rec["kept"] >= support.size, (what, k)
            assert 0.0 <= rec["rejection_ratio"] <= 1.0, (what, k)
        model = full_beta(p, path.columns[k], path.coefs[k])
        ours = reference_objective(X, y, lam, model, path.intercepts[k])
        theirs = reference_objective(X, y, lam, beta, c)
        assert abs(ours - theirs) <= OBJ_RTOL * abs(theirs), (what, k, ours, theirs)
        assert abs(rec["objective"] - ours) <= 1e-12 * abs(ours)
        if supports:
            np.testing.assert_array_equal(path.columns[k], support, err_msg=f"{what} λ#{k}")


# ----------------------------------------------------------------- labels
def test_labels_must_be_pm1_with_both_classes():
    X, y = small_mixed()
    store = InMemoryStore(X, y)
    bad = [(y + 1) / 2,                        # {0, 1}
           np.where(y > 0, 2.0, 1.0),          # {1, 2}
           np.ones_like(y), -np.ones_like(y),  # one class
           y[:-1]]                             # wrong length
    for labels in bad:
        with pytest.raises(ParameterError):
            slores_statistics(store, labels)
        with pytest.raises(ParameterError):
            fit_l1_path(store, labels, n_lambdas=3)
    for labels in bad[:4]:
        with pytest.raises(ParameterError):
            labels_pm1(labels)
    with pytest.raises(ParameterError):
        slores_statistics(InMemoryStore(np.zeros((4, 0)), np.array([1.0, -1, 1, -1])))
    # the store's own labels (two classes, any two values) are mapped to ±1
    s01 = slores_statistics(InMemoryStore(X, (y + 1) / 2))
    spm = slores_statistics(store, y)
    np.testing.assert_array_equal(s01.s_max, spm.s_max)
    stats = spm
    for lam in (0.0, -1.0, stats.lambda_max, 2 * stats.lambda_max):
        with pytest.raises(ParameterError):
            basic_region(stats, lam)


# ----------------------------------------------------------------- S1
@pytest.mark.parametrize("balanced", [True, False], ids=["balanced", "unbalanced"])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_s1_lambda_max(balanced, fmt):
    rng = np.random.default_rng(11)
    n, p = 40, 25
    X = rng.standard_normal((n, p)) * (rng.random((n, p)) < 0.6)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0) if balanced else \
        np.where(np.arange(n) % 4 == 0, 1.0, -1.0)
    X[:, 4] += 1.2 * y
    Xin = sp.csr_matrix(X) if fmt == "csr" else X
    stats = slores_statistics(InMemoryStore(Xin, y), y)
    n_pos, n_neg = int(np.sum(y > 0)), int(np.sum(y < 0))
    assert (stats.n_pos, stats.n_neg, stats.n_samples) == (n_pos, n_neg, n)
    lam_max, j0 = closed_form_lambda_max(X, y)
    assert stats.j0 == j0
    assert stats.lambda_max == pytest.approx(lam_max, rel=1e-12)
    assert stats.lambda_max == pytest.approx(reference_lam_max(X, y), rel=1e-12)
    np.testing.assert_array_equal(theta_max(y), np.where(y > 0, n_neg / n, n_pos / n))
    assert stats.j0_sign == np.sign(stats.s_max[j0])
    # Theorem 2's radius at λ0 = λ_max, closed form of the digest (B2)
    for s in (0.1, 0.5, 0.9):
        r2 = 0.5 * (n_pos * (entropy(s * n_neg / n) - entropy(n_neg / n))
                    + n_neg * (entropy(s * n_pos / n) - entropy(n_pos / n)))
        assert radius_at_lambda_max(n_pos, n_neg, s) == pytest.approx(np.sqrt(r2), rel=1e-9)
    # above λ_max: β = 0, c = log(n+/n-)
    beta, c, theta = reference_l1_logistic(Xin, y, 1.01 * stats.lambda_max)
    assert np.all(beta == 0)
    assert abs(c - np.log(n_pos / n_neg)) <= 1e-8
    np.testing.assert_allclose(theta, theta_max(y), rtol=1e-12)
    assert not basic_keep(stats, 0.999999 * stats.lambda_max)[np.arange(p) != j0].any()
    assert not slores_keep(stats, None, 1.01 * stats.lambda_max).any()
    # just below: j0 enters
    beta, c, theta = reference_l1_logistic(Xin, y, 0.99 * stats.lambda_max)
    support = np.flatnonzero(np.abs(beta) > SUPPORT_TOL)
    assert support.size >= 1 and j0 in support
    # the path's models are optimal (objective of the reference to 1e-9)
    ratios = np.array([1.01, 0.9, 0.5, 0.2])
    for sequential in (False, True):
        path = fit_l1_path(InMemoryStore(Xin, y), y, lambdas=ratios * stats.lambda_max,
                           sequential=sequential)
        assert path.records[0]["nnz"] == 0 and path.intercepts[0] == pytest.approx(
            np.log(n_pos / n_neg), abs=1e-12)
        assert path.records[0]["objective"] == pytest.approx(reference_objective(
            X, y, path.lambdas[0], np.zeros(p), np.log(n_pos / n_neg)), rel=1e-12)
        refs = [reference_l1_logistic(Xin, y, lam) for lam in path.lambdas[1:]]
        for k, (lam, (b, c0, _)) in enumerate(zip(path.lambdas[1:], refs), start=1):
            model = full_beta(p, path.columns[k], path.coefs[k])
            ours = reference_objective(X, y, lam, model, path.intercepts[k])
            theirs = reference_objective(X, y, lam, b, c0)
            assert abs(ours - theirs) <= OBJ_RTOL * theirs
            np.testing.assert_array_equal(path.columns[k], np.flatnonzero(b))


# ----------------------------------------------------------------- S2 / S3
def s2_instance():
    """n = 30: random features, one correlated with y (j0), a copy of j0,
    its negative, a noisy negative (case (a) for ξ = +1), a constant and an
    all-zero column."""
    rng = np.random.default_rng(3)
    n, p = 30, 10
    X = rng.standard_normal((n, p))
    y = np.where(rng.random(n) < 0.35, 1.0, -1.0)
    X[:, 0] += 1.5 * y
    X[:, 1] = 0.7 * X[:, 0] + 0.5 * X[:, 1]        # strongly correlated with j0
    _, j0 = closed_form_lambda_max(X, y)
    extra = np.column_stack([X[:, j0], -X[:, j0], -0.8 * X[:, j0] + 0.3 * rng.standard_normal(n),
                             np.full(n, -1.25), np.zeros(n)])
    X = np.hstack([X, extra])
    names = {"dup": p, "neg": p + 1, "noisy_neg": p + 2, "const": p + 3, "zero": p + 4}
    return X, y, j0, names


@pytest.mark.parametrize("ratio", [0.95, 0.5, 0.1])
def test_s2_closed_form_vs_brute_force(ratio):
    X, y, j0, names = s2_instance()
    n, p = X.shape
    stats = slores_statistics(InMemoryStore(X, y), y)
    assert stats.j0 == j0                               # ties go to the first column
    lam = ratio * stats.lambda_max
    region = basic_region(stats, lam)
    T = region_bounds(region, stats.norm2)
    centre = theta_max(y)
    xstar = stats.j0_sign * y * X[:, j0]
    # the region holds θ*_λ (Theorem 2)
    _, _, theta_star = reference_l1_logistic(X, y, lam)
    assert np.linalg.norm(theta_star - centre) <= region.radius
    cases = set()
    for j in range(p):
        brute = []
        for xi in (1.0, -1.0):
            b = brute_force_T(centre, region.radius, y, xstar, n * lam, xi * y * X[:, j])
            mine, case_a = paper_T_xi(exact(region), stats.norm2, xi)
            scale = region.radius * np.sqrt(stats.norm2[j]) + abs(region.s[j])
            assert abs(mine[j] - b) <= 1e-6 * scale + 1e-12 * n * lam, (j, xi, mine[j], b)
            if stats.norm2[j] > 0:
                cases.add("a" if case_a[j] else "b")
            brute.append(b)
        scale = region.radius * np.sqrt(stats.norm2[j]) + abs(region.s[j])
        assert abs(T[j] - max(brute)) <= 1e-6 * max(abs(max(brute)), scale) + 1e-12 * n * lam, \
            (j, T[j], brute)
    assert cases == {"a", "b"}
    keep = slores_keep(stats, region, lam)
    # j0 and its duplicate (ξ = +1), its negative (ξ = -1): the side whose
    # maximiser sits on the cut has T_ξ = nλ exactly (B3); the other side,
    # r√A - nλ_max, may be larger for small λ.  Always kept; the rounding
    # pads of the bound only raise it (through √D with D ≈ 0).
    T_plus = paper_T_xi(exact(region), stats.norm2, 1.0)[0]
    T_minus = paper_T_xi(exact(region), stats.norm2, -1.0)[0]
    T_exact = region_bounds(exact(region), stats.norm2)
    other = region.radius * np.sqrt(stats.cut_norm2) - n * stats.lambda_max
    for j, on_cut, off_cut in ((j0, T_plus, T_minus), (names["dup"], T_plus, T_minus),
                               (names["neg"], T_minus, T_plus)):
        assert on_cut[j] == pytest.approx(n * lam, rel=1e-9)
        assert off_cut[j] == pytest.approx(other, rel=1e-9, abs=1e-9 * n * lam)
        assert T_exact[j] == pytest.approx(max(n * lam, other), rel=1e-9)
        assert T[j] >= n * lam * (1 - 1e-9)
        assert keep[j]
    # constant / all-zero columns: T = 0 (Theorem 4), dropped
    for j in (names["const"], names["zero"]):
        assert stats.constant[j] and stats.norm2[j] == 0.0
        assert T[j] <= 1e-12 * n * lam
        assert not keep[j]


def test_s2_sequential_region_vs_brute_force():
    """A region from a perturbed primal point: holds θ*_λ, and T matches a
    brute-force maximisation over it."""
    X, y, j0, names = s2_instance()
    n, p = X.shape
    rng = np.random.default_rng(7)
    stats = slores_statistics(InMemoryStore(X, y), y)
    lam0, lam = 0.6 * stats.lambda_max, 0.5 * stats.lambda_max
    beta0, c0, _ = reference_l1_logistic(X, y, lam0)
    _, _, theta_star = reference_l1_logistic(X, y, lam)
    beta1 = beta0 + 1e-2 * rng.standard_normal(p)
    c1 = c0 + 1e-2
    region = exact_sequential_region(stats, X, y, lam, beta1, c1)
    centre = region_centre(y, X @ beta1 + c1)
    assert np.linalg.norm(theta_star - centre) <= region.radius
    np.testing.assert_allclose(region.s, X.T @ (y * centre), rtol=1e-10,
                               atol=1e-12 * np.abs(region.s).max())
    assert -1.0 < region.d < 1.0        # the cut matters
    T = region_bounds(region, stats.norm2)
    xstar = stats.j0_sign * y * X[:, j0]
    for j in range(p):
        brute = max(brute_force_T(centre, region.radius, y, xstar, n * lam, xi * y * X[:, j])
                    for xi in (1.0, -1.0))
        scale = region.radius * np.sqrt(stats.norm2[j]) + abs(region.s[j])
        assert abs(T[j] - brute) <= 1e-6 * max(abs(brute), scale) + 1e-12 * n * lam, \
            (j, T[j], brute)
    active = np.abs(reference_l1_logistic(X, y, lam)[0]) > SUPPORT_TOL
    assert not (active & ~slores_keep(stats, region, lam)).any()


@pytest.mark.parametrize("ratio", [0.95, 0.8, 0.5, 0.2, 0.1])
def test_s3_paper_quadratic_form_equals_stable_form(ratio):
    X, y = sparse_text(seed=4, n=120, p=400)
    stats = slores_statistics(InMemoryStore(X, y), y)
    region = basic_region(stats, ratio * stats.lambda_max)
    assert 1 - region.d ** 2 > 1e-6          # a2 not tiny
    live = ~stats.constant
    paper = np.maximum(paper_T_xi(exact(region), stats.norm2, 1.0)[0],
                       paper_T_xi(exact(region), stats.norm2, -1.0)[0])
    stable = region_bounds(exact(region), stats.norm2)
    scale = region.radius * np.sqrt(stats.norm2) + np.abs(region.s)
    np.testing.assert_array_less(np.abs(paper - stable)[live], 1e-10 * scale[live])
    # the rounding pads only make the bound larger
    padded = region_bounds(region, stats.norm2)
    assert np.all(padded >= stable - 1e-14 * scale)
    assert np.all(padded - stable <= 1e-6 * scale + region.s_error)


# ----------------------------------------------------------------- S4 / S5 / S6 / S9
@pytest.mark.parametrize("name", ["dense", "sparse"])
def test_s4_safety_synthetic(name):
    """Reference: reference_l1_logistic at all 86 points."""
    X, y, stats, grid, refs = synthetic_case(name)
    p = X.shape[1]
    if name == "dense":
        assert stats.n_pos < 0.35 * len(y)           # unbalanced
        assert stats.constant[p - 5] and stats.constant[p - 4]
    assert grid.size == 86
    np.testing.assert_allclose(grid / stats.lambda_max, np.linspace(0.95, 0.10, 86))
    rejection = check_safety(X, y, stats, grid, refs, name)
    if name == "sparse":
        assert rejection[0] >= 0.99                  # S5 at 0.95
    store = InMemoryStore(X, y)
    kept = {}
    for sequential in (False, True):
        path = fit_l1_path(store, y, screening="slores", sequential=sequential,
                           statistics=stats, scheduler="synchronous")
        # dense: duplicated columns make the support non-unique: objective only
        check_path_against_reference(X, y, path, grid, refs, f"{name} seq={sequential}",
                                     supports=(name == "sparse"))
        kept[sequential] = np.array([r["kept"] for r in path.records])
        if not sequential:      # the path's basic keep set is slores_keep's
            for k in (0, 40, 85):
                assert kept[False][k] == basic_keep(stats, grid[k]).sum()
    # the sequential rule (intersected with the basic one) is tighter
    assert np.all(kept[True] <= kept[False]) and kept[True].sum() < kept[False].sum()
    # the unscreened path (the reference of the real sets) agrees with the
    # L-BFGS-B reference
    none = fit_l1_path(store, y, screening="none", tol=1e-10, statistics=stats,
                       scheduler="synchronous")
    check_path_against_reference(X, y, none, grid, refs, f"{name} none",
                                 supports=(name == "sparse"), screened=False)


def test_s4_s5_s6_leu(data_dir):
    """Reference: the unscreened path at tol 1e-10, KKT-verified; checked
    against reference_l1_logistic at λ/λ_max = 0.5."""
    X, y, store, stats, grid, refs = load_real(data_dir, "leu")
    assert X.shape == (38, 7129) and grid.size == 86
    k_half = int(np.argmin(np.abs(grid / stats.lambda_max - 0.5)))
    beta, c, _ = reference_l1_logistic(X, y, grid[k_half])
    assert reference_objective(X, y, grid[k_half], refs[k_half][0], refs[k_half][1]) == \
        pytest.approx(reference_objective(X, y, grid[k_half], beta, c), rel=OBJ_RTOL)
    np.testing.assert_array_equal(np.flatnonzero(beta), np.flatnonzero(refs[k_half][0]))

    rejection = check_safety(X, y, stats, grid, refs, "leu")
    ratios = grid / stats.lambda_max
    at = {r: int(np.argmin(np.abs(ratios - r))) for r in (0.95, 0.80, 0.50)}
    assert rejection[at[0.95]] >= 0.99
    assert rejection[at[0.80]] == pytest.approx(0.988, abs=0.02)
    assert rejection[at[0.50]] == pytest.approx(0.483, abs=0.02)
    # S6: every screened path gives the unscreened path's models
    none = fit_l1_path(store, y, screening="none", statistics=stats, scheduler="synchronous")
    check_path_against_reference(X, y, none, grid, refs, "leu none", screened=False)
    for screening, sequential in (("slores", False), ("slores", True), ("strong", False),
                                  ("strong", True)):
        path = fit_l1_path(store, y, screening=screening, sequential=sequential,
                           statistics=stats, scheduler="synchronous")
        check_path_against_reference(X, y, path, grid, refs,
                                     f"leu {screening} seq={sequential}",
                                     screened=(screening == "slores"))
        if screening == "slores" and not sequential:
            # the records' rejection ratios are the ones measured above
            np.testing.assert_allclose([r["rejection_ratio"] for r in path.records],
                                       rejection, rtol=1e-12)
        for k in range(grid.size):
            np.testing.assert_array_equal(path.columns[k], none.columns[k])
            assert path.records[k]["objective"] == pytest.approx(
                none.records[k]["objective"], rel=OBJ_RTOL)


@pytest.mark.parametrize("name", ["rcv1_small", "dorothea_train"])
def test_s4_safety_real_sparse(data_dir, name):
    """Reference: the unscreened path at tol 1e-10, KKT-verified."""
    X, y, store, stats, grid, refs = load_real(data_dir, name)
    if name == "rcv1_small":
        assert X.shape == (1000, 47236)
    check_safety(X, y, stats, grid, refs, name)
    for sequential in (False, True):
        path = fit_l1_path(store, y, screening="slores", sequential=sequential,
                           statistics=stats, scheduler="synchronous")
        check_path_against_reference(X, y, path, grid, refs, f"{name} seq={sequential}")


def test_s6_path_equivalence_synthetic_sparse():
    X, y = sparse_text(seed=2, n=150, p=1500)
    store = InMemoryStore(X, y)
    stats = slores_statistics(store, y)
    none = fit_l1_path(store, y, screening="none", statistics=stats)
    assert none.lambdas.size == 86
    for screening, sequential in (("slores", False), ("slores", True), ("strong", False),
                                  ("strong", True)):
        path = fit_l1_path(store, y, screening=screening, sequential=sequential,
                           statistics=stats)
        for k in range(none.lambdas.size):
            rec, ref = path.records[k], none.records[k]
            assert rec["kkt_violations_left"] == 0
            if screening == "slores":
                assert rec["kkt_violations_found"] == 0
                assert 0.0 <= rec["rejection_ratio"] <= 1.0
            np.testing.assert_array_equal(path.columns[k], none.columns[k])
            assert abs(rec["objective"] - ref["objective"]) <= OBJ_RTOL * ref["objective"]
        # the screening works (the rule discards at large λ)
        if screening == "slores":
            assert path.records[0]["rejection_ratio"] >= 0.99


# ----------------------------------------------------------------- S7
def suppressor_data():
    """x1 = y + u, x2 = 5u with u orthogonal to 1 and to θ_max ⊙ y: x2 has
    zero correlation at λ_max but its correlation grows 2.5 times faster than
    λ falls once x1 is in: the strong rule's assumption fails."""
    n = 60
    rng = np.random.default_rng(0)
    y = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)
    u = rng.standard_normal(n)
    Q = np.column_stack([np.ones(n), theta_max(y) * y])
    u -= Q @ np.linalg.lstsq(Q, u, rcond=None)[0]
    u /= np.std(u)
    X = np.column_stack([y + u, 5.0 * u, rng.standard_normal((n, 3))])
    return X, y


def test_s7_basic_strong_rule_discards_nothing_below_half():
    X, y = sparse_text(seed=4, n=120, p=400)
    stats = slores_statistics(InMemoryStore(X, y), y)
    for ratio in (0.5, 0.45, 0.3, 0.1):
        keep = strong_keep(stats.s_max, ratio * stats.lambda_max, stats.lambda_max,
                           stats.n_samples, stats.constant)
        np.testing.assert_array_equal(keep, ~stats.constant)
    # above λ_max / 2 it does discard
    keep = strong_keep(stats.s_max, 0.9 * stats.lambda_max, stats.lambda_max,
                       stats.n_samples, stats.constant)
    assert keep.sum() < (~stats.constant).sum()


def test_s7_strong_rule_violation_is_caught():
    X, y = suppressor_data()
    store = InMemoryStore(X, y)
    stats = slores_statistics(store, y)
    assert stats.j0 == 0 and abs(stats.s_max[1]) < 1e-12 * abs(stats.s_max[0])
    lambdas = np.array([0.9, 0.8, 0.7, 0.6]) * stats.lambda_max
    none = fit_l1_path(store, y, screening="none", lambdas=lambdas)
    # feature 1 is active at 0.7 λ_max but the basic strong rule discards it
    assert 1 in none.columns[2]
    assert not strong_keep(stats.s_max, lambdas[2], stats.lambda_max, stats.n_samples)[1]
    found = 0
    for sequential in (False, True):
        path = fit_l1_path(store, y, screening="strong", sequential=sequential,
                           lambdas=lambdas)
        for k in range(lambdas.size):
            rec = path.records[k]
            found += rec["kkt_violations_found"]
            assert rec["kkt_violations_left"] == 0 and rec["kkt"] <= 1e-6
            np.testing.assert_array_equal(path.columns[k], none.columns[k])
            assert rec["objective"] == pytest.approx(none.records[k]["objective"],
                                                     rel=OBJ_RTOL)
        if not sequential:
            assert path.records[2]["kkt_violations_found"] >= 1
            assert path.records[2]["solves"] >= 2
    assert found >= 1
    # Slores, safe, never needs the check on the same data
    for sequential in (False, True):
        path = fit_l1_path(store, y, screening="slores", sequential=sequential,
                           lambdas=lambdas)
        assert all(r["kkt_violations_found"] == 0 for r in path.records)
        for k in range(lambdas.size):
            np.testing.assert_array_equal(path.columns[k], none.columns[k])


# ----------------------------------------------------------------- S8
STAT_FIELDS = ("n_samples", "n_pos", "n_neg", "lambda_max", "s_max", "colsum",
               "sum_squares", "norm2", "constant", "j0", "j0_sign", "cut",
               "cut_norm2", "cut_weights_norm", "theta_max_norm", "n_passes")


def assert_same_statistics(a, b, what):
    for name in STAT_FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name),
                                      err_msg=f"{what}: {name}")


def test_s8_statistics_identical_for_any_layout(tmp_path):
    X, y = small_mixed()
    n, p = X.shape
    reference = slores_statistics(InMemoryStore(X, y), y, scheduler="synchronous")
    assert reference.n_passes == 2
    assert reference.constant[3] and reference.constant[7] and not reference.constant[0]
    # against dense NumPy (1e-12)
    D = X
    np.testing.assert_allclose(reference.s_max, D.T @ (theta_max(y) * y), rtol=1e-12,
                               atol=1e-13)
    np.testing.assert_allclose(reference.colsum, D.sum(axis=0), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(reference.norm2, ((D - D.mean(axis=0)) ** 2).sum(axis=0),
                               rtol=1e-12, atol=1e-13)
    xc = reference.j0_sign * (D[:, reference.j0] - D[:, reference.j0].mean())
    np.testing.assert_allclose(reference.cut, D.T @ xc, rtol=1e-12, atol=1e-12)
    assert reference.cut_norm2 == pytest.approx(xc @ xc, rel=1e-12)
    variants = {f"block_size={bs}": (InMemoryStore(X, y, block_size=bs), "synchronous")
                for bs in (1, 7, p)}
    variants["csr"] = (InMemoryStore(sp.csr_matrix(X), y), "synchronous")
    variants["csc, threads"] = (InMemoryStore(sp.csc_matrix(X), y, block_size=7), "threads")
    zarr = write_store(tmp_path / "s.zarr", X, y, block_nnz=50, command="test")
    for scheduler in ("synchronous", "threads", "processes"):
        variants[f"zarr {scheduler}"] = (zarr, scheduler)
    ratios = (0.95, 0.7, 0.5, 0.2)
    keeps = [basic_keep(reference, r * reference.lambda_max) for r in ratios]
    for what, (store, scheduler) in variants.items():
        stats = slores_statistics(store, y, scheduler=scheduler)
        assert_same_statistics(stats, reference, what)
        for r, keep in zip(ratios, keeps):
            np.testing.assert_array_equal(basic_keep(stats, r * stats.lambda_max), keep)
    # explicit block sizes of the pass (not the store's) give the same bits too
    for bs in (1, 3, p):
        assert_same_statistics(slores_statistics(InMemoryStore(X, y), y, block_size=bs,
                                                 scheduler="threads"), reference, f"bs={bs}")


def test_s8_path_identical_for_block_sizes():
    X, y = small_mixed()
    p = X.shape[1]
    for screening, sequential in (("slores", True), ("slores", False), ("strong", True)):
        paths = [fit_l1_path(InMemoryStore(X, y, block_size=bs), y, screening=screening,
                             sequential=sequential, scheduler="synchronous")
                 for bs in (1, 7, p)]
        first = paths[0]
        assert len(first.records) == 86
        for other in paths[1:]:
            np.testing.assert_array_equal(other.lambdas, first.lambdas)
            np.testing.assert_array_equal(other.intercepts, first.intercepts)
            for k in range(86):
                np.testing.assert_array_equal(other.columns[k], first.columns[k])
                np.testing.assert_array_equal(other.coefs[k], first.coefs[k])
                for key in ("nnz", "kept", "objective", "kkt_violations_found"):
                    assert other.records[k][key] == first.records[k][key]
        for k in range(86):
            # the constant and all-zero columns never enter a model
            assert 3 not in first.columns[k] and 7 not in first.columns[k]
            assert first.records[k]["kkt_violations_left"] == 0


def test_s8_float32_and_zero_rows_columns():
    X, y = small_mixed()
    X32 = (1.1 * X).astype(np.float32)
    a = slores_statistics(InMemoryStore(X32, y), y)
    b = slores_statistics(InMemoryStore(X32.astype(np.float64), y), y)
    assert_same_statistics(a, b, "float32")
    for r in (0.9, 0.5, 0.1):
        lam = r * a.lambda_max
        keep = basic_keep(a, lam)
        np.testing.assert_array_equal(keep, basic_keep(b, lam))
        assert not keep[3] and not keep[7]     # all-zero and constant columns dropped
    assert a.norm2[3] == 0.0 and a.norm2[7] == 0.0 and a.s_max[3] == 0.0
    # an all-zero row is a sample like any other (θ_max counts it)
    np.testing.assert_allclose(a.s_max, X32.astype(np.float64).T @ (theta_max(y) * y),
                               rtol=1e-12, atol=1e-12)
    # a store whose every column is constant: λ_max = 0, nothing to keep
    C = np.column_stack([np.zeros(6), np.full(6, 2.0)])
    yc = np.array([1.0, -1, 1, -1, -1, -1])
    stats = slores_statistics(InMemoryStore(C, yc), yc)
    assert stats.constant.all()
    assert stats.lambda_max <= 1e-15


# ----------------------------------------------------------------- S9
@pytest.mark.parametrize("name", ["dense", "sparse"])
def test_s9_inexact_sequential_region_holds_theta_star(name):
    X, y, stats, grid, refs = synthetic_case(name)
    n, p = X.shape
    rng = np.random.default_rng(13)
    ratios = grid / stats.lambda_max
    pairs = [(int(np.argmin(np.abs(ratios - a))), int(np.argmin(np.abs(ratios - b))))
             for a, b in ((0.95, 0.9), (0.8, 0.7), (0.5, 0.45), (0.3, 0.2), (0.11, 0.10))]
    for k0, k in pairs:
        beta0, c0, _ = refs[k0]
        beta, _, theta_star = refs[k]
        lam = grid[k]
        active = np.abs(beta) > SUPPORT_TOL
        for delta in (0.0, 1e-3, 1e-2, 1e-1):
            for trial in range(3 if delta else 1):
                # perturb the support and a few other weights, and the intercept
                bump = np.zeros(p)
                where = np.union1d(np.flatnonzero(beta0), rng.choice(p, 10, replace=False))
                bump[where] = delta * rng.standard_normal(where.size)
                b1, c1 = beta0 + bump, c0 + delta * rng.standard_normal()
                decision = np.asarray(X @ b1).ravel() + c1
                centre = region_centre(y, decision)
                theta0 = expit(-y * decision)
                s0 = correlations(X, y, theta0)
                # the statistics' cut (j0), and the path's: the largest weight
                best = int(np.argmax(np.abs(b1)))
                col = dense(X[:, [best]]).ravel()
                w = np.sign(b1[best]) * (col - col.mean())
                cuts = [{}, {"cut": correlations(X, np.ones(n), w), "cut_norm2": float(w @ w),
                             "j0": best, "j0_sign": float(np.sign(b1[best]))}]
                for cut in cuts:
                    region = sequential_region(stats, lam, decision=decision, y=y,
                                               coef_l1=float(np.abs(b1).sum()), s0=s0, **cut)
                    dist = np.linalg.norm(theta_star - centre)
                    assert dist <= region.radius, (name, k0, k, delta, dist, region.radius)
                    keep = slores_keep(stats, region, lam)
                    missed = np.flatnonzero(active & ~keep)
                    assert missed.size == 0, (name, k0, k, delta, missed)
                    T = region_bounds(region, stats.norm2)
                    ball = region.radius * np.sqrt(stats.norm2) + np.abs(region.s)
                    assert np.all(T <= ball + region.s_error + 1e-12 * (ball + n * lam))
        # the exact warm start gives a region much tighter than the basic one
        exact_region = exact_sequential_region(stats, X, y, lam, beta0, c0)
        assert exact_region.radius < basic_region(stats, lam).radius


def test_constant_columns_neither_set_lambda_max_nor_j0():
    """A huge constant column's correlation is rounding noise (n ε |x|): it is
    exactly 0 by Theorem 4, so it must not become j0 or inflate λ_max."""
    rng = np.random.default_rng(0)
    n = 101
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
    X = np.column_stack([np.full(n, 1e15 / 3),
                         1e-3 * (rng.standard_normal((n, 4)) + y[:, None])])
    stats = slores_statistics(InMemoryStore(X, y), y)
    assert not stats.constant[stats.j0] and stats.s_max[0] == 0.0
    assert stats.cut[0] == 0.0
    truth = np.abs(X[:, 1:].T @ (theta_max(y) * y)).max() / n
    assert stats.lambda_max == pytest.approx(truth, rel=1e-12)
    path = fit_l1_path(InMemoryStore(X, y), y, n_lambdas=5)
    assert path.records[0]["nnz"] >= 1
    with pytest.raises(ParameterError, match="every column is constant"):
        fit_l1_path(InMemoryStore(np.full((n, 2), 3.0), y), y)


def _numpy_bounds(s, s_error, cut, cut_error, norm2, r, A, d):
    """Dense NumPy reference of kernels/slores.py: the stable form, per side."""
    N = np.sqrt(norm2)
    ball = r * N
    limit = N * np.sqrt(A)
    out = np.full(N.shape, -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        for xi in (1.0, -1.0):
            B = np.minimum(-xi * cut + cut_error, limit)
            cos = np.where(limit > 0, B / limit, 1.0)
            D = np.maximum(norm2 * A - B * B, 0.0)
            tb = (r / np.sqrt(A)) * (np.sqrt((1.0 - d * d) * D) + d * B)
            t = np.where(cos >= d, ball, np.minimum(tb, ball))
            out = np.maximum(out, t + xi * s)
    return out + s_error


@pytest.mark.parametrize("d", [-0.9, -0.2, 0.0, 0.3, 0.95])
def test_bounds_kernel_matches_numpy(d):
    """kernels/slores.py against the NumPy stable form, column by column,
    with the centre's shift and the rounding pads formed as the kernel does."""
    from ultrafs.kernels.slores import (BALL, GENERAL, POINT, slores_bounds,
                                        slores_keep_columns)

    rng = np.random.default_rng(7)
    p = 500
    norm2 = rng.random(p) * 4
    norm2[:5] = 0.0                                   # constant / empty columns
    A = 2.5
    cut = rng.uniform(-1, 1, p) * np.sqrt(norm2 * A)  # |B| <= N √A
    cut[5], cut[6] = np.sqrt(norm2[5] * A), -np.sqrt(norm2[6] * A)   # cos = ±1
    s0 = rng.standard_normal(p)
    colsum = rng.standard_normal(p) * 3
    norms = np.sqrt(norm2) + rng.random(p)
    shift, s_gamma, shift_gamma, cut_gamma = 0.01, 1e-12, 1e-13, 2e-12
    s = s0 - shift * colsum
    s_error = s_gamma * norms + shift_gamma * np.abs(colsum)
    cut_error = cut_gamma * norms
    args = (s0, colsum, norms, norm2, cut, shift, s_gamma, shift_gamma, cut_gamma)
    fresh = (np.zeros(0, dtype=np.int32), np.zeros(1), -1)
    got = slores_bounds(*args, 0.7, A, d, GENERAL, np.empty(p), *fresh)
    ref = _numpy_bounds(s, s_error, cut, cut_error, norm2, 0.7, A, d)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-15)
    ball = slores_bounds(*args, 0.7, A, d, BALL, np.empty(p), *fresh)
    np.testing.assert_allclose(ball, 0.7 * np.sqrt(norm2) + np.abs(s) + s_error,
                               rtol=1e-15)
    # stale columns (reference point != current): the ball plus their slack
    ref_id = (np.arange(p) % 3).astype(np.int32)
    reach = np.array([0.0, 0.3, 0.05])
    stale = ref_id != 0
    mixed = slores_bounds(*args, 0.7, A, d, GENERAL, np.empty(p), ref_id, reach, 0)
    np.testing.assert_allclose(mixed[~stale], ref[~stale], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(mixed[stale], (ball + norms * reach[ref_id])[stale],
                               rtol=1e-15)
    point = slores_bounds(*args, 0.0, A, d, POINT, np.empty(p), *fresh)
    np.testing.assert_allclose(point, np.abs(s) + s_error, rtol=1e-15)
    # the keep test on a subset of the columns leaves the others alone
    constant = norm2 == 0
    keep = np.zeros(p, dtype=bool)
    columns = np.arange(0, p, 3, dtype=np.int64)
    n_lam = float(np.median(ref))
    slores_keep_columns(columns, False, s0, colsum, norms, norm2, constant, cut, shift,
                        s_gamma, shift_gamma, cut_gamma, 0.7, A, d, GENERAL, n_lam,
                        1e-9, keep, *fresh)
    slack = 1e-9 * (n_lam + 0.7 * np.sqrt(norm2) + np.abs(s))
    expect = np.zeros(p, dtype=bool)
    expect[columns] = (ref[columns] >= n_lam - slack[columns]) & ~constant[columns]
    np.testing.assert_array_equal(keep, expect)
    keep = np.zeros(p, dtype=bool)
    slores_keep_columns(columns, False, s0, colsum, norms, norm2, constant, cut, shift,
                        s_gamma, shift_gamma, cut_gamma, 0.7, A, d, GENERAL, n_lam,
                        1e-9, keep, ref_id, reach, 0)
    expect[columns] = (mixed[columns] >= n_lam - slack[columns]) & ~constant[columns]
    np.testing.assert_array_equal(keep, expect)


def test_discarded_violators_kernel():
    from ultrafs.kernels.slores import discarded_violators

    s = np.array([0.5, -3.0, 2.0, 0.1, -2.5])
    keep = np.array([False, False, True, False, False])
    found, largest = discarded_violators(s, keep, 1.0)
    np.testing.assert_array_equal(found, [1, 4])
    assert largest == 3.0
    found, largest = discarded_violators(s, np.ones(5, dtype=bool), 1.0)
    assert found.size == 0 and largest == 0.0
