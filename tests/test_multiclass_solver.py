"""Multi-class kernels, losses and the K-output subproblem (dense references)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import check_grad
from scipy.special import logsumexp, softmax

from ultrafs.errors import ParameterError
from ultrafs.kernels import multiclass_losses as mk
from ultrafs.kernels import sparse_ops
from ultrafs.solvers import (L21Squared, MultinomialLogistic, OneVsRestSquaredHinge,
                             get_loss, objective, solve_subproblem)
from ultrafs.solvers.datafits import make_datafit


def _sparse(rng, n, p, density=0.3, dtype=np.float64, empty_cols=(), empty_rows=()):
    X = rng.standard_normal((n, p)) * (rng.random((n, p)) < density)
    X[:, list(empty_cols)] = 0.0
    X[list(empty_rows), :] = 0.0
    return sp.csc_matrix(X.astype(dtype))


def _dense_multinomial(y, F):
    value = float(np.sum(logsumexp(F, axis=1) - F[np.arange(len(y)), y]))
    grad = softmax(F, axis=1)
    grad[np.arange(len(y)), y] -= 1.0
    return value, grad


def _dense_ovr(y, F):
    Y = -np.ones_like(F)
    Y[np.arange(len(y)), y] = 1.0
    m = np.maximum(0.0, 1.0 - Y * F)
    return float(0.5 * np.sum(m * m)), -Y * m


NO_WEIGHTS = np.empty(0)
DENSE = {"logistic": (_dense_multinomial, mk.multinomial_value_derivative_weighted),
         "squared-hinge": (_dense_ovr, mk.ovr_squared_hinge_value_derivative_weighted)}


@pytest.mark.parametrize("loss", sorted(DENSE))
@pytest.mark.parametrize("K", [3, 5])
def test_loss_kernels_match_dense(rng, loss, K):
    n = 40
    y = rng.integers(0, K, n).astype(np.int64)
    F = rng.standard_normal((n, K)) * 3
    dense, kernel = DENSE[loss]
    value, grad = dense(y, F)
    out = np.empty(n * K)
    got = kernel(y, F.ravel(), NO_WEIGHTS, out)
    np.testing.assert_allclose(got, value, rtol=1e-12)
    np.testing.assert_allclose(out.reshape(n, K), grad, atol=1e-12)
    obj = get_loss(loss, "multiclass")
    assert obj.value(y, F.ravel()) == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("loss", sorted(DENSE))
def test_loss_gradient_by_finite_differences(rng, loss):
    n, K = 25, 4
    y = rng.integers(0, K, n).astype(np.int64)
    obj = get_loss(loss, "multiclass")

    def value(f):
        return obj.value(y, f)

    def grad(f):
        return obj.derivative(y, f)

    f0 = rng.standard_normal(n * K)
    assert check_grad(value, grad, f0) < 1e-5 * max(1.0, np.linalg.norm(grad(f0)))


def test_multinomial_is_stable_for_huge_margins():
    y = np.array([0, 1, 2], dtype=np.int64)
    F = np.array([[1e308, 0, -1e308], [0, 800.0, -800.0], [-1e5, 1e5, 0.0]])
    out = np.empty(9)
    value = mk.multinomial_value_derivative_weighted(y, F.ravel(), NO_WEIGHTS, out)
    assert np.isfinite(value) and np.all(np.isfinite(out))


@pytest.mark.parametrize("loss", sorted(DENSE))
def test_bias_curvature_bounds_the_bias_hessian(rng, loss):
    n, K = 30, 4
    y = rng.integers(0, K, n).astype(np.int64)
    F = rng.standard_normal((n, K))
    obj = get_loss(loss, "multiclass")
    d = np.empty(n * K)
    obj.value_derivative(y, F.ravel(), d)
    bound = obj.curvature_sum(y, F.ravel(), d)
    if loss == "logistic":
        P = softmax(F, axis=1)
        H = sum(np.diag(p) - np.outer(p, p) for p in P)
    else:
        Y = -np.ones_like(F)
        Y[np.arange(n), y] = 1
        H = np.diag(np.sum(1.0 - Y * F > 0, axis=0).astype(float))
    assert np.linalg.eigvalsh(H).max() <= bound + 1e-12


def test_optimal_constants(rng):
    y = np.array([0, 0, 1, 2, 2, 2], dtype=np.int64)
    c = MultinomialLogistic().optimal_constant(y, 3)
    np.testing.assert_allclose(softmax(c), [2 / 6, 1 / 6, 3 / 6])
    np.testing.assert_allclose(OneVsRestSquaredHinge().optimal_constant(y, 3),
                               [(2 - 4) / 6, (1 - 5) / 6, 0.0])
    with pytest.raises(ParameterError, match="class index 1"):
        MultinomialLogistic().optimal_constant(np.array([0, 2, 2]), 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("K", [1, 3])
def test_multi_output_products_match_dense(rng, dtype, K):
    n, p = 17, 9
    X = _sparse(rng, n, p, dtype=dtype, empty_cols=(0, 4), empty_rows=(3, 11))
    W = rng.standard_normal((p, K))
    W[2] = 0.0
    R = rng.standard_normal((n, K))
    Xd = X.toarray().astype(np.float64)
    f = sparse_ops.csc_matmat(X.indptr, X.indices, X.data, W.ravel(), K, n)
    np.testing.assert_allclose(f.reshape(n, K), Xd @ W, atol=1e-12)
    g = sparse_ops.csc_rmatmat(X.indptr, X.indices, X.data, R.ravel(), K)
    np.testing.assert_allclose(g.reshape(p, K), Xd.T @ R, atol=1e-12)
    blocks = np.array([0, 3, 3, 9], dtype=np.int64)
    out = np.empty((3, n * K))
    sparse_ops.csc_block_matmat_into(X.indptr, X.indices, X.data, W.ravel(), K, blocks, out)
    for h in range(3):
        lo, hi = blocks[h], blocks[h + 1]
        np.testing.assert_allclose(out[h].reshape(n, K), Xd[:, lo:hi] @ W[lo:hi],
                                   atol=1e-12)
    if K == 1:  # same sums as the single-output kernels
        np.testing.assert_array_equal(
            f, sparse_ops.csc_matvec(X.indptr, X.indices, X.data, W.ravel(), n))
        np.testing.assert_array_equal(
            g, sparse_ops.csc_rmatvec(X.indptr, X.indices, X.data, R.ravel()))


def test_products_without_rows_or_columns():
    indptr = np.zeros(1, dtype=np.int64)
    indices = np.zeros(0, dtype=np.int32)
    data = np.zeros(0)
    assert sparse_ops.csc_matmat(indptr, indices, data, np.zeros(0), 3, 4).shape == (12,)
    assert sparse_ops.csc_rmatmat(indptr, indices, data, np.zeros(12), 3).shape == (0,)


def _kkt(X, y, K, C, loss, result, block_ptr, fit_intercept):
    """Relative KKT residual of eq. 30 for K outputs."""
    datafit = make_datafit(X.indptr, X.indices, X.data, y, C, loss=loss, n_classes=K)
    d = np.empty(len(y) * K)
    datafit.value_derivative(datafit.decision(result.coef, result.bias), d)
    grad = datafit.gradient(d)
    residual = L21Squared().subdiff_distance(result.coef, grad, block_ptr * K)
    scale = max(1.0, np.linalg.norm(grad))
    out = float(np.max(residual)) / scale
    if fit_intercept:
        out = max(out, float(np.max(np.abs(datafit.bias_gradient(d)))) / scale)
    return out


@pytest.mark.parametrize("loss", ["logistic", "squared-hinge"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("K", [3, 6])
def test_kkt_conditions_of_the_multiclass_subproblem(rng, loss, fit_intercept, K):
    n, p = 120, 12
    X = _sparse(rng, n, p, density=0.5, empty_cols=(5,))
    W = rng.standard_normal((p, K)) * (rng.random((p, 1)) < 0.5)
    y = np.argmax(X.toarray() @ W + 0.3 * rng.standard_normal((n, K)), axis=1)
    block_ptr = np.array([0, 4, 9, 12])
    result = solve_subproblem(X.indptr, X.indices, X.data, block_ptr, y, 1.0,
                              loss=loss, n_classes=K, fit_intercept=fit_intercept,
                              tol=1e-14, max_iter=20000)
    assert result.coef.shape == (p * K,)
    assert np.shape(result.bias) == (K,)
    assert _kkt(X, y, K, 1.0, loss, result, block_ptr, fit_intercept) < 1e-4
    # the returned objective is the objective of the returned point
    assert result.objective == pytest.approx(objective(
        X.indptr, X.indices, X.data, block_ptr, y, 1.0, result.coef, result.bias,
        loss=loss, n_classes=K), rel=1e-12)
    assert np.all(np.diff(result.history) <= 1e-9 * abs(result.history[0]))


@pytest.mark.parametrize("block_cache", [True, False])
def test_block_cache_and_direct_products_agree_for_k_outputs(rng, block_cache):
    n, p, K = 80, 10, 4
    X = _sparse(rng, n, p, density=0.6)
    y = rng.integers(0, K, n)
    block_ptr = np.array([0, 3, 10])
    ref = solve_subproblem(X.indptr, X.indices, X.data, block_ptr, y, 2.0,
                           n_classes=K, tol=1e-12, max_iter=5000)
    got = solve_subproblem(X.indptr, X.indices, X.data, block_ptr, y, 2.0,
                           n_classes=K, tol=1e-12, max_iter=5000,
                           block_cache=block_cache)
    np.testing.assert_allclose(got.coef, ref.coef, atol=1e-6)


def test_single_block_multinomial_matches_sklearn(rng):
    """One block: 1/2 ||W||_F^2 + C sum multinomial loss = scikit-learn's L2 model."""
    from sklearn.linear_model import LogisticRegression

    n, p, K, C = 150, 8, 3, 0.5
    X = rng.standard_normal((n, p))
    y = np.argmax(X @ rng.standard_normal((p, K)) + rng.standard_normal((n, K)), axis=1)
    Xc = sp.csc_matrix(X)
    result = solve_subproblem(Xc.indptr, Xc.indices, Xc.data, [0, p], y, C,
                              n_classes=K, tol=1e-15, max_iter=50000)
    ref = LogisticRegression(C=C, tol=1e-12, max_iter=10000).fit(X, y)
    ours = softmax(X @ result.coef.reshape(p, K) - result.bias, axis=1)
    np.testing.assert_allclose(ours, ref.predict_proba(X), atol=1e-5)


def test_warm_start_with_new_blocks_appended(rng):
    n, p, K = 60, 9, 3
    X = _sparse(rng, n, p, density=0.5)
    y = rng.integers(0, K, n)
    first = solve_subproblem(X[:, :5].indptr, X[:, :5].indices, X[:, :5].data,
                             [0, 5], y, 1.0, n_classes=K, tol=1e-10)
    second = solve_subproblem(X.indptr, X.indices, X.data, [0, 5, 9], y, 1.0,
                              n_classes=K, coef0=first.coef, bias0=first.bias,
                              tol=1e-10)
    assert second.objective <= first.objective + 1e-9


def test_multiclass_inputs_are_validated(rng):
    X = _sparse(rng, 10, 3)
    with pytest.raises(ParameterError, match=r"\[0, 3\)"):
        solve_subproblem(X.indptr, X.indices, X.data, [0, 3], np.arange(10) % 4, 1.0,
                         n_classes=3)
    with pytest.raises(ParameterError, match="integers"):
        solve_subproblem(X.indptr, X.indices, X.data, [0, 3],
                         np.linspace(0, 2, 10), 1.0, n_classes=3)
    with pytest.raises(ParameterError, match="bias0"):
        solve_subproblem(X.indptr, X.indices, X.data, [0, 3], np.arange(10) % 3, 1.0,
                         n_classes=3, bias0=[1.0, 2.0])


# -- proximal Newton with K outputs ------------------------------------------------
def _dense_factors(loss, y, F):
    """The per-sample K x K Hessians of the dense losses."""
    n, K = F.shape
    if loss == "logistic":
        P = softmax(F, axis=1)
        return np.stack([np.diag(P[i]) - np.outer(P[i], P[i]) for i in range(n)])
    Y = -np.ones_like(F)
    Y[np.arange(n), y] = 1.0
    return np.stack([np.diag((1.0 - Y[i] * F[i] > 0).astype(float)) for i in range(n)])


@pytest.mark.parametrize("loss", sorted(DENSE))
@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_hessian_matches_the_dense_formula(rng, loss, weighted):
    n, p, K, C = 30, 5, 4, 1.7
    X = _sparse(rng, n, p, density=0.5, empty_cols=(2,))
    y = rng.integers(0, K, n).astype(np.int64)
    s = rng.uniform(0.0, 2.0, n) if weighted else None
    datafit = make_datafit(X.indptr, X.indices, X.data, y, C, loss=loss, n_classes=K,
                           sample_weight=s)
    F = rng.standard_normal((n, K))
    H = datafit.hessian(F.ravel())
    W = _dense_factors(loss, y, F) * (1.0 if s is None else s[:, None, None])
    Xt = np.hstack([X.toarray(), -np.ones((n, 1))])
    expected = C * sum(np.kron(np.outer(Xt[i], Xt[i]), W[i]) for i in range(n))
    np.testing.assert_allclose(H, expected, atol=1e-12)


@pytest.mark.parametrize("loss", sorted(DENSE))
def test_multiclass_value_change_is_accurate(rng, loss):
    n, K = 50, 5
    obj = get_loss(loss, "multiclass")
    y = rng.integers(0, K, n).astype(np.int64)
    f = rng.standard_normal(n * K) * 2
    s = rng.uniform(0.5, 1.5, n)
    for scale in (3.0, 1e-3):
        delta = rng.standard_normal(n * K) * scale
        expected = obj.value(y, f + delta, s) - obj.value(y, f, s)
        assert obj.value_change(y, f, delta, s) == pytest.approx(expected, rel=1e-8,
                                                                 abs=1e-12)
    # far below the rounding of the value: still the first-order change
    tiny = rng.standard_normal(n * K) * 1e-12
    d = obj.derivative(y, f)
    assert obj.value_change(y, f, tiny) == pytest.approx(float(d @ tiny), rel=1e-3)
    assert obj.value_change(y, f, np.zeros(n * K)) == 0.0


@pytest.mark.parametrize("loss", sorted(DENSE))
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_newton_agrees_with_apg(rng, loss, fit_intercept, weighted):
    n, p, K = 150, 9, 4
    X = _sparse(rng, n, p, density=0.5, empty_cols=(4,))
    W = rng.standard_normal((p, K)) * (rng.random((p, 1)) < 0.6)
    y = np.argmax(X.toarray() @ W + 0.3 * rng.standard_normal((n, K)), axis=1)
    s = rng.uniform(0.2, 2.0, n) if weighted else None
    block_ptr = np.array([0, 3, 7, 9])
    args = (X.indptr, X.indices, X.data, block_ptr, y, 2.0)
    kw = dict(loss=loss, n_classes=K, fit_intercept=fit_intercept, sample_weight=s)
    newton = solve_subproblem(*args, **kw, solver="newton", kkt_tol=1e-9, tol=1e-15)
    apg = solve_subproblem(*args, **kw, solver="apg", kkt_tol=1e-7, tol=1e-15,
                           max_iter=50000)
    assert newton.converged and newton.kkt <= 1e-9
    assert newton.n_iter < 40
    assert np.shape(newton.bias) == (K,)
    assert newton.objective <= apg.objective + 1e-9 * abs(apg.objective)
    assert newton.objective == pytest.approx(apg.objective, rel=1e-8)
    assert newton.objective == pytest.approx(objective(
        X.indptr, X.indices, X.data, block_ptr, y, 2.0, newton.coef, newton.bias,
        loss=loss, n_classes=K, sample_weight=s), rel=1e-12)
    assert np.all(np.diff(newton.history) <= 0.0)
    if not fit_intercept:
        assert np.all(newton.bias == 0.0)


def test_multiclass_auto_runs_newton_and_certifies(rng):
    n, p, K = 200, 6, 5
    X = _sparse(rng, n, p, density=0.4)
    y = rng.integers(0, K, n).astype(np.int64)
    block_ptr = np.array([0, 2, 6])
    auto = solve_subproblem(X.indptr, X.indices, X.data, block_ptr, y, 1.0, n_classes=K)
    newton = solve_subproblem(X.indptr, X.indices, X.data, block_ptr, y, 1.0,
                              n_classes=K, solver="newton")
    np.testing.assert_array_equal(auto.coef, newton.coef)
    assert auto.converged and auto.kkt <= 1e-4
