"""l1-regularised logistic regression on CSC columns (ultrafs.solvers.l1_logistic).

Checked against dense NumPy formulas (objective, gradient, KKT residual,
duality gap) and against a KKT-verified reference (tests/l1_reference.py:
L-BFGS-B on split variables, polished by Newton on its support).
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from ultrafs.errors import ParameterError
from ultrafs.kernels.l1_logistic import (l1_logistic_dual_gap, l1_logistic_gradient,
                                         l1_logistic_kkt, l1_logistic_solve)
from ultrafs.solvers.l1_logistic import (L1LogisticResult, l1_logistic_lam_max,
                                         solve_l1_logistic)

try:
    from l1_reference import reference_l1_logistic, reference_lam_max, reference_objective
except ImportError:  # pragma: no cover - run from the repository root
    from tests.l1_reference import (reference_l1_logistic, reference_lam_max,
                                    reference_objective)

RATIOS = [0.9, 0.5, 0.1, 0.02]


def _problem(rng, n=80, p=30, *, sparse=False, positive=0.5):
    """A random problem: X (CSC), labels with about ``positive`` of +1."""
    if sparse:
        X = sp.random(n, p, density=0.25, format="csc", random_state=rng,
                      data_rvs=lambda k: rng.normal(size=k))
    else:
        X = sp.csc_matrix(rng.normal(size=(n, p)))
    w = np.zeros(p)
    w[: max(1, p // 6)] = rng.normal(scale=2.0, size=max(1, p // 6))
    f = X @ w + math.log(positive / (1.0 - positive))
    y = np.where(rng.random(n) < expit(f), 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0
    X.sort_indices()
    return X, y


def _solve(X, y, lam, **kw):
    return solve_l1_logistic(X.indptr, X.indices, X.data, y, lam, n_rows=X.shape[0], **kw)


def _dense_kkt(X, y, lam, coef, c):
    n = len(y)
    theta = expit(-y * (X @ coef + c))
    g = -(X.T @ (y * theta)) / n
    g_c = -np.sum(y * theta) / n
    viol = np.where(coef > 0, np.abs(g + lam),
                    np.where(coef < 0, np.abs(g - lam), np.maximum(0.0, np.abs(g) - lam)))
    return max(abs(g_c), float(np.max(viol, initial=0.0)))


# ---------------------------------------------------------------- kernels


def test_gradient_and_kkt_kernels_match_numpy(rng):
    X, y = _problem(rng, 50, 12, sparse=True)
    n, p = X.shape
    r = rng.normal(size=n)
    cols = np.array([3, 0, 7, 7, 11], dtype=np.int64)
    out = l1_logistic_gradient(X.indptr.astype(np.int64), X.indices, X.data, cols, r,
                               np.empty(len(cols)))
    np.testing.assert_allclose(out, (X.T @ r)[cols], rtol=1e-13, atol=1e-14)
    coef = np.array([0.0, 1.0, -2.0, 0.0, 0.0])
    g = np.array([0.3, -0.5, 0.4, -0.1, 0.05])
    # zero: max(0, |g| - lam); positive: |g + lam|; negative: |g - lam|; intercept
    assert l1_logistic_kkt(coef, g, 0.01, 0.2) == pytest.approx(max(0.1, 0.3, 0.2, 0.0, 0.0, 0.01))
    assert l1_logistic_kkt(coef, g, -0.7, 0.2) == 0.7


def test_dual_gap_kernel_matches_numpy(rng):
    X, y = _problem(rng, 60, 10)
    n = len(y)
    lam = 0.3 * reference_lam_max(X, y)
    coef = np.zeros(10)
    coef[[1, 4]] = [0.5, -0.3]
    c = 0.2
    f = X @ coef + c
    theta = expit(-y * f)
    cols = np.arange(10, dtype=np.int64)
    primal, dual, gap = l1_logistic_dual_gap(X.indptr.astype(np.int64), X.indices, X.data,
                                             cols, y, np.empty(0), lam, coef, f, theta)
    t = theta - (theta @ y / n) * y
    kappa = min(1.0, n * lam / np.max(np.abs(X.T @ (y * t))))
    t = kappa * t
    ref_dual = -np.mean(t * np.log(t) + (1 - t) * np.log1p(-t))
    assert primal == pytest.approx(reference_objective(X, y, lam, coef, c), rel=1e-14)
    assert dual == pytest.approx(ref_dual, rel=1e-13)
    assert gap == pytest.approx(primal - ref_dual, rel=1e-10, abs=1e-15)
    assert gap > 0


def test_dual_gap_is_nan_when_the_projection_leaves_the_box():
    X = sp.csc_matrix(np.eye(3))
    y = np.array([1.0, 1.0, -1.0])
    theta = np.array([0.0, 0.9, 0.1])     # shift 0.267 takes theta_0 below 0
    cols = np.arange(3, dtype=np.int64)
    primal, dual, gap = l1_logistic_dual_gap(X.indptr.astype(np.int64), X.indices, X.data,
                                             cols, y, np.empty(0), 0.1, np.zeros(3),
                                             np.zeros(3), theta)
    assert primal == pytest.approx(math.log(2.0))
    assert math.isnan(dual) and math.isnan(gap)


def test_solver_gap_equals_the_standalone_kernel(rng):
    X, y = _problem(rng, 70, 20, sparse=True, positive=0.3)
    lam = 0.1 * reference_lam_max(X, y)
    res = _solve(X, y, lam)
    cols = np.arange(20, dtype=np.int64)
    primal, _, gap = l1_logistic_dual_gap(X.indptr.astype(np.int64), X.indices, X.data, cols,
                                          y, np.empty(0), lam, res.coef, res.decision, res.theta)
    assert res.objective == primal
    assert res.gap == pytest.approx(gap, rel=1e-6, abs=1e-14)


# ---------------------------------------------------------- against the reference


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("positive", [0.5, 0.2], ids=["balanced", "unbalanced"])
def test_matches_reference(sparse, positive, rng):
    X, y = _problem(rng, sparse=sparse, positive=positive)
    lam_max = reference_lam_max(X, y)
    assert l1_logistic_lam_max(X.indptr, X.indices, X.data, y,
                               n_rows=X.shape[0]) == pytest.approx(lam_max, rel=1e-13)
    for ratio in RATIOS:
        lam = ratio * lam_max
        beta, c, theta = reference_l1_logistic(X, y, lam)
        res = _solve(X, y, lam)
        assert isinstance(res, L1LogisticResult)
        assert res.converged and res.kkt <= 1e-7 * lam
        ref = reference_objective(X, y, lam, beta, c)
        assert res.objective == pytest.approx(ref, rel=1e-9)
        # the reported figures are the dense formulas' at the returned point
        assert res.objective == pytest.approx(
            reference_objective(X, y, lam, res.coef, res.intercept), rel=1e-13)
        np.testing.assert_allclose(res.decision, X @ res.coef + res.intercept,
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(res.theta, expit(-y * res.decision), rtol=1e-12, atol=1e-15)
        assert res.kkt == pytest.approx(_dense_kkt(X, y, lam, res.coef, res.intercept),
                                        rel=1e-6, abs=1e-15)
        np.testing.assert_array_equal(res.coef != 0, beta != 0)
        np.testing.assert_allclose(res.coef, beta, atol=1e-5)
        # the gap of the unscaled dual point is g'beta + g_c c + lam ||beta||_1,
        # at most kkt (||beta||_1 + |c|); projecting and scaling add O(kkt)
        scale = 1.0 + np.abs(res.coef).sum() + abs(res.intercept)
        assert -1e-12 <= res.gap <= 2.0 * 1e-7 * lam * scale


def test_tighter_tolerance_is_reached(rng):
    X, y = _problem(rng, 60, 15, positive=0.3)
    lam = 0.05 * reference_lam_max(X, y)
    res = _solve(X, y, lam, tol=1e-11)
    assert res.converged and res.kkt <= 1e-11 * lam
    beta, c, _ = reference_l1_logistic(X, y, lam)
    np.testing.assert_allclose(res.coef, beta, atol=1e-8)
    assert res.intercept == pytest.approx(c, abs=1e-8)


@pytest.mark.parametrize("positive", [0.5, 0.25])
def test_at_lam_max_the_solution_is_the_constant_model(positive, rng):
    X, y = _problem(rng, positive=positive, sparse=True)
    n_plus = np.count_nonzero(y > 0)
    c_star = math.log(n_plus / (len(y) - n_plus))
    lam_max = l1_logistic_lam_max(X.indptr, X.indices, X.data, y, n_rows=X.shape[0])
    for lam in [lam_max, 1.01 * lam_max, 2.0 * lam_max]:
        res = _solve(X, y, lam)
        assert res.converged and res.n_iter == 0
        assert not np.any(res.coef)
        assert res.intercept == pytest.approx(c_star, abs=1e-8)
        # from a nonzero start too (exactly at lam_max the column reaching it
        # has |g_j| = lam at 0: a coefficient of rounding size is optimal too)
        res = _solve(X, y, lam, coef0=np.full(X.shape[1], 0.3), intercept0=-1.0)
        assert res.converged
        assert np.max(np.abs(res.coef)) <= (1e-10 if lam == lam_max else 0.0)
        assert res.intercept == pytest.approx(c_star, abs=1e-8)
    res = _solve(X, y, 0.999 * lam_max)
    assert np.count_nonzero(res.coef) >= 1


def test_warm_start_from_a_solution_needs_no_step(rng):
    X, y = _problem(rng, sparse=True)
    lam = 0.1 * reference_lam_max(X, y)
    first = _solve(X, y, lam)
    again = _solve(X, y, lam, coef0=first.coef, intercept0=first.intercept)
    assert again.converged and again.n_iter <= 1
    np.testing.assert_array_equal(again.coef, first.coef)
    # a path, warm-started, stays certified
    coef, c = None, None
    for ratio in [0.8, 0.4, 0.2, 0.1]:
        res = _solve(X, y, ratio * reference_lam_max(X, y), coef0=coef, intercept0=c)
        assert res.converged
        coef, c = res.coef, res.intercept
    assert res.objective == pytest.approx(first.objective, rel=1e-12)


def test_max_iter_reports_not_converged(rng):
    X, y = _problem(rng)
    lam = 0.02 * reference_lam_max(X, y)
    res = _solve(X, y, lam, max_iter=1)
    assert not res.converged and res.n_iter == 1 and res.kkt > 1e-7 * lam
    res = _solve(X, y, lam, max_iter=0)
    assert not res.converged and res.n_iter == 0 and not np.any(res.coef)


def test_deterministic(rng):
    X, y = _problem(rng, 100, 40, sparse=True)
    lam = 0.05 * reference_lam_max(X, y)
    a = _solve(X, y, lam)
    b = _solve(X, y, lam)
    assert a.coef.tobytes() == b.coef.tobytes()
    assert a.decision.tobytes() == b.decision.tobytes()
    assert (a.intercept, a.objective, a.kkt, a.gap, a.n_iter, a.n_cd_sweeps) == \
           (b.intercept, b.objective, b.kkt, b.gap, b.n_iter, b.n_cd_sweeps)


# ------------------------------------------------------------ input layouts


def test_columns_subset_equals_the_sliced_matrix(rng):
    X, y = _problem(rng, 70, 25, sparse=True)
    cols = np.array([20, 3, 5, 11, 0, 17, 8], dtype=np.int64)
    lam = 0.05 * reference_lam_max(X[:, cols], y)
    sub = _solve(X, y, lam, columns=cols)
    Xs = X[:, cols].tocsc()
    ref = _solve(Xs, y, lam)
    assert sub.coef.tobytes() == ref.coef.tobytes()
    assert sub.intercept == ref.intercept and sub.objective == ref.objective
    beta, _, _ = reference_l1_logistic(Xs, y, lam)
    np.testing.assert_array_equal(sub.coef != 0, beta != 0)
    # no column at all: the constant model
    none = _solve(X, y, lam, columns=np.empty(0, dtype=np.int64))
    assert none.converged and none.coef.shape == (0,)
    assert none.intercept == pytest.approx(math.log(np.mean(y > 0) / np.mean(y < 0)))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("value_dtype", [np.float32, np.float64])
def test_dtypes_give_the_same_bytes(index_dtype, value_dtype, rng):
    X, y = _problem(rng, 60, 20, sparse=True)
    X.data = X.data.astype(np.float32).astype(np.float64)   # representable in both
    lam = 0.05 * reference_lam_max(X, y)
    base = _solve(X, y, lam)
    res = solve_l1_logistic(X.indptr.astype(np.int64), X.indices.astype(index_dtype),
                            X.data.astype(value_dtype), y, lam, n_rows=X.shape[0])
    assert res.coef.tobytes() == base.coef.tobytes()
    assert res.intercept == base.intercept


def test_empty_columns_and_zero_rows(rng):
    X, y = _problem(rng, 60, 12)
    X = X.tolil()
    X[:, [2, 7]] = 0.0
    X[5:9, :] = 0.0
    X = X.tocsc()
    X.eliminate_zeros()
    assert X.indptr[3] == X.indptr[2]
    lam = 0.05 * reference_lam_max(X, y)
    beta, c, _ = reference_l1_logistic(X, y, lam)
    res = _solve(X, y, lam, coef0=np.where(np.arange(12) == 2, 1.5, 0.0))
    assert res.converged and res.coef[2] == 0.0 and res.coef[7] == 0.0
    assert res.objective == pytest.approx(reference_objective(X, y, lam, beta, c), rel=1e-9)


def test_duplicate_columns(rng):
    X, y = _problem(rng, 70, 10, sparse=True)
    Xd = sp.hstack([X, X[:, [0, 1, 2]]]).tocsc()
    lam = 0.05 * reference_lam_max(X, y)
    beta, c, _ = reference_l1_logistic(X, y, lam)
    res = _solve(Xd, y, lam)
    assert res.converged
    assert res.objective == pytest.approx(reference_objective(X, y, lam, beta, c), rel=1e-9)
    merged = res.coef[:10].copy()
    merged[[0, 1, 2]] += res.coef[10:]
    np.testing.assert_allclose(merged, beta, atol=1e-5)
    # the same column named twice in `columns`
    res2 = _solve(X, y, lam, columns=np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0]))
    assert res2.objective == pytest.approx(res.objective, rel=1e-9)


def test_constant_column_is_absorbed_by_the_intercept(rng):
    X, y = _problem(rng, 50, 6)
    Xc = sp.hstack([X, sp.csc_matrix(np.full((50, 1), 2.0))]).tocsc()
    lam = 0.05 * reference_lam_max(X, y)
    beta, c, _ = reference_l1_logistic(X, y, lam)
    res = _solve(Xc, y, lam, coef0=np.r_[np.zeros(6), 0.7])
    assert res.converged and res.coef[6] == 0.0
    assert res.objective == pytest.approx(reference_objective(X, y, lam, beta, c), rel=1e-9)


def test_sample_weights_equal_repeated_rows(rng):
    X, y = _problem(rng, 40, 8)
    counts = rng.integers(0, 3, size=40)
    counts[:2] = 1
    rows = np.repeat(np.arange(40), counts)
    lam = 0.05 * reference_lam_max(X, y)
    weighted = _solve(X, y, lam, sample_weight=counts.astype(float), tol=1e-10)
    repeated = _solve(X[rows].tocsc(), y[rows], lam, tol=1e-10)
    assert weighted.converged and repeated.converged
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-12)
    np.testing.assert_allclose(weighted.coef, repeated.coef, atol=1e-8)
    assert -1e-12 <= weighted.gap <= 1e-9
    # lam_max with weights: the weighted constant model's
    lm_w = l1_logistic_lam_max(X.indptr, X.indices, X.data, y, n_rows=40,
                               sample_weight=counts.astype(float))
    assert lm_w == pytest.approx(reference_lam_max(X[rows], y[rows]), rel=1e-12)


# ----------------------------------------------------------- scikit-learn


def test_agrees_with_scikit_learn_saga(rng):
    """saga leaves the intercept unpenalised: the same problem with
    ``C = 1 / (n lam)`` (liblinear penalises its intercept, so only its
    objective is compared: never below ours)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    X, y = _problem(rng, 200, 10, positive=0.4)
    n = len(y)
    lam = 0.1 * reference_lam_max(X, y)
    res = _solve(X, y, lam)
    Xd = X.toarray()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        saga = LogisticRegression(l1_ratio=1.0, solver="saga", C=1.0 / (n * lam),
                                  tol=1e-12, max_iter=5000).fit(Xd, y)
        lib = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=1.0 / (n * lam),
                                 tol=1e-8, intercept_scaling=10.0).fit(Xd, y)
    obj_saga = reference_objective(X, y, lam, saga.coef_.ravel(), saga.intercept_[0])
    obj_lib = reference_objective(X, y, lam, lib.coef_.ravel(), lib.intercept_[0])
    assert obj_saga >= res.objective - 1e-12 and obj_lib >= res.objective - 1e-12
    assert obj_saga == pytest.approx(res.objective, rel=1e-8)
    np.testing.assert_allclose(saga.coef_.ravel(), res.coef, atol=1e-4)
    assert saga.intercept_[0] == pytest.approx(res.intercept, abs=1e-4)
    assert obj_lib == pytest.approx(res.objective, rel=1e-3)


# ------------------------------------------------------------- validation


@pytest.mark.parametrize("change, match", [
    (dict(lam=0.0), "lam must be a positive"),
    (dict(lam=-1.0), "lam must be a positive"),
    (dict(lam=float("nan")), "lam must be a positive"),
    (dict(y=np.r_[np.ones(9), 0.0]), r"\+1 and -1"),
    (dict(y=np.ones(10)), "both classes"),
    (dict(y=np.ones(9)), r"shape \(10,\)"),
    (dict(n_rows=9), "invalid CSC|shape"),
    (dict(columns=np.array([0, 4])), r"columns must lie in \[0, 4\)"),
    (dict(columns=np.array([-1])), r"columns must lie"),
    (dict(coef0=np.zeros(3)), r"coef0 must have shape \(4,\)"),
    (dict(coef0=np.full(4, np.nan)), "coef0 holds NaN"),
    (dict(intercept0=float("inf")), "intercept0 must be finite"),
    (dict(tol=0.0), "tol must be a positive"),
    (dict(max_iter=-1), "max_iter"),
    (dict(sample_weight=-np.ones(10)), "non-negative"),
    (dict(sample_weight=np.r_[np.zeros(5), np.ones(5)]), "both classes"),
])
def test_invalid_inputs_are_refused_in_one_line(change, match):
    X = sp.csc_matrix(np.arange(40, dtype=float).reshape(10, 4) % 3)
    y = np.r_[np.ones(5), -np.ones(5)]
    kw = dict(y=y, lam=0.1, n_rows=10)
    kw.update(change)
    args = (X.indptr, X.indices, X.data, kw.pop("y"), kw.pop("lam"))
    with pytest.raises(ParameterError, match=match) as info:
        solve_l1_logistic(*args, **kw)
    assert "\n" not in str(info.value)


def test_unsorted_rows_are_refused():
    X = sp.csc_matrix(np.eye(4) + np.eye(4)[::-1])
    indices = X.indices.copy()
    indices[[0, 1]] = indices[[1, 0]]
    with pytest.raises(ParameterError, match="invalid CSC"):
        solve_l1_logistic(X.indptr, indices, X.data, np.array([1.0, -1, 1, -1]), 0.1,
                          n_rows=4)


def test_kernel_leaves_inputs_unchanged(rng):
    X, y = _problem(rng, 40, 8)
    coef0 = np.zeros(8)
    coef0[0] = 0.4
    saved = coef0.copy()
    out = l1_logistic_solve(X.indptr.astype(np.int64), X.indices, X.data,
                            np.arange(8, dtype=np.int64), y, np.empty(0), 0.01, coef0, 0.0,
                            1e-7, 100, 10)
    np.testing.assert_array_equal(coef0, saved)
    assert out[-1] == 0
