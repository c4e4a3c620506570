"""Proximal Newton for the binary FGM subproblem (ultrafs.solvers.prox_newton)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from ultrafs.errors import ParameterError
from ultrafs.kernels.prox_newton import (eigen_workspace, l21sq_model_bcd,
                                         l21sq_model_polish, l21sq_model_residual)
from ultrafs.solvers import LOSSES, L21Squared, Logistic, SubproblemResult, fit_bias_only
from ultrafs.solvers import apg as apg_module
from ultrafs.solvers.apg import choose_solver, solve, solve_subproblem
from ultrafs.solvers.datafits import make_datafit
from ultrafs.solvers.penalties import GroupL1

LOSS_NAMES = sorted(LOSSES)
TIGHT = dict(tol=1e-15, max_iter=20000, kkt_tol=1e-9)


# -- helpers ----------------------------------------------------------------------
def _problem(rng, n=120, sizes=(3, 1, 4, 2), signal=(0, 2), dtype=np.float64,
             empty_columns=(), empty_rows=(), noise_scale=0.01):
    """Blocks in ``signal`` carry the labels, the others tiny noise (0 at the optimum)."""
    block_ptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    p = int(block_ptr[-1])
    X = rng.normal(size=(n, p)) * (rng.random((n, p)) < 0.5)
    scale = np.full(p, noise_scale)
    for h in signal:
        scale[block_ptr[h]:block_ptr[h + 1]] = 1.0
    X *= scale
    w = np.zeros(p)
    for h in signal:
        w[block_ptr[h]:block_ptr[h + 1]] = rng.uniform(1, 3, sizes[h]) * rng.choice(
            [-1, 1], sizes[h])
    y = np.where(X @ w - 0.4 + 0.3 * rng.normal(size=n) >= 0, 1.0, -1.0)
    X[:, list(empty_columns)] = 0.0
    X[list(empty_rows), :] = 0.0
    Xc = sp.csc_matrix(X.astype(dtype))
    Xc.eliminate_zeros()
    return Xc, y, block_ptr


def _args(X, block_ptr):
    return X.indptr, X.indices, X.data, block_ptr


def _dense_objective(X, y, C, block_ptr, loss, fit_intercept):
    """F(w, b) on a dense copy of X, for scipy."""
    Xd = X.toarray().astype(np.float64)
    p = Xd.shape[1]

    def value(w, b):
        f = Xd @ w - b
        if loss == "logistic":
            data = np.sum(np.logaddexp(0.0, -y * f))
        else:
            data = 0.5 * np.sum(np.maximum(0.0, 1.0 - y * f) ** 2)
        norms = [np.linalg.norm(w[lo:hi]) for lo, hi in zip(block_ptr[:-1], block_ptr[1:])]
        return 0.5 * np.sum(norms) ** 2 + C * data

    return value, p


def _scipy_optimum(X, y, C, block_ptr, loss, fit_intercept):
    """The optimum by SLSQP on the smooth epigraph form.

    ``min 1/2 (sum_h t_h)^2 + P(w, b)`` subject to ``t_h^2 >= ||w_h||^2`` and
    ``t_h >= 0``: smooth, so a general-purpose solver gets it accurately.
    """
    value, p = _dense_objective(X, y, C, block_ptr, loss, fit_intercept)
    t = len(block_ptr) - 1
    nb = 1 if fit_intercept else 0

    def unpack(x):
        return x[:p], (x[p] if fit_intercept else 0.0), x[p + nb:]

    def objective(x):
        w, b, s = unpack(x)
        norms = [np.linalg.norm(w[lo:hi]) for lo, hi in zip(block_ptr[:-1], block_ptr[1:])]
        return value(w, b) - 0.5 * np.sum(norms) ** 2 + 0.5 * np.sum(s) ** 2

    constraints = [{"type": "ineq",
                    "fun": (lambda x, h=h: x[p + nb + h] ** 2
                            - np.sum(x[block_ptr[h]:block_ptr[h + 1]] ** 2))}
                   for h in range(t)]
    bounds = [(None, None)] * (p + nb) + [(0, None)] * t
    x0 = np.zeros(p + nb + t)
    x0[p + nb:] = 1.0
    res = minimize(objective, x0, method="SLSQP", constraints=constraints, bounds=bounds,
                   options={"ftol": 1e-14, "maxiter": 2000})
    w, b, _ = unpack(res.x)
    return value(w, b), w, b


def _certificate(X, y, C, block_ptr, result, loss, fit_intercept=True):
    """Relative KKT residual recomputed independently from the returned point."""
    d = LOSSES[loss].derivative(y, X.toarray().astype(np.float64) @ result.coef
                                - result.bias)
    grad = C * (X.T @ d)
    distance = np.max(L21Squared().subdiff_distance(result.coef, grad, block_ptr))
    if fit_intercept:
        distance = max(distance, abs(C * d.sum()))
    scale = max(np.linalg.norm(grad[lo:hi])
                for lo, hi in zip(block_ptr[:-1], block_ptr[1:]))
    return distance / scale


# -- the loss pieces ----------------------------------------------------------------
@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_second_derivative_by_finite_differences(rng, loss):
    y = np.where(rng.random(400) < 0.5, -1.0, 1.0)
    f = rng.normal(scale=3.0, size=400)
    obj = LOSSES[loss]
    if loss == "squared-hinge":  # away from the kink, where it is differentiable
        keep = np.abs(1.0 - y * f) > 1e-3
        y, f = y[keep], f[keep]
    eps = 1e-6
    fd = (obj.derivative(y, f + eps) - obj.derivative(y, f - eps)) / (2 * eps)
    np.testing.assert_allclose(obj.second_derivative(y, f), fd, rtol=1e-6, atol=1e-8)


def test_logistic_second_derivative_has_no_overflow_or_cancellation():
    f = np.array([-1e308, -800.0, -40.0, 0.0, 40.0, 800.0, 1e308])
    y = np.ones_like(f)
    h = LOSSES["logistic"].second_derivative(y, f)
    assert np.all(np.isfinite(h)) and np.all(h >= 0)
    assert h[3] == 0.25
    assert h[2] == pytest.approx(np.exp(-40.0), rel=1e-12)  # 1 - sigma would give 0
    np.testing.assert_array_equal(h, h[::-1])  # does not depend on the label


def test_squared_hinge_second_derivative_is_the_active_set():
    y = np.array([1.0, 1.0, -1.0, -1.0])
    f = np.array([0.5, 1.0, 0.5, -2.0])
    np.testing.assert_array_equal(
        LOSSES["squared-hinge"].second_derivative(y, f), [1.0, 0.0, 1.0, 0.0])


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_value_change_is_accurate(rng, loss):
    obj = LOSSES[loss]
    y = np.where(rng.random(500) < 0.5, -1.0, 1.0)
    f = rng.normal(scale=2.0, size=500)
    big = rng.normal(scale=3.0, size=500)  # large changes: the plain difference is fine
    assert obj.value_change(y, f, big) == pytest.approx(
        obj.value(y, f + big) - obj.value(y, f), rel=1e-12)
    # a change far below the rounding of the value: second-order Taylor is exact
    tiny = rng.normal(scale=1e-9, size=500)
    if loss == "squared-hinge":
        tiny[np.abs(1.0 - y * f) < 1e-6] = 0.0
    taylor = (obj.derivative(y, f) @ tiny
              + 0.5 * obj.second_derivative(y, f) @ (tiny * tiny))
    assert obj.value_change(y, f, tiny) == pytest.approx(taylor, rel=1e-7)
    assert obj.value_change(y, f, np.zeros(500)) == 0.0


def test_multiclass_losses_have_no_newton_pieces():
    loss = LOSSES["logistic"]
    from ultrafs.solvers.losses import get_loss

    multinomial = get_loss("logistic", "multiclass")
    with pytest.raises(ParameterError, match="second derivative"):
        multinomial.second_derivative(np.zeros(3, np.int64), np.zeros(9))
    assert loss.second_derivative(np.ones(2), np.zeros(2)).shape == (2,)


# -- the Hessian ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_hessian_matches_the_dense_formula(rng, loss, dtype):
    X, y, block_ptr = _problem(rng, dtype=dtype, empty_columns=(1,), empty_rows=(0, 5))
    datafit = make_datafit(X.indptr, X.indices, X.data, y, 1.7, loss=loss)
    f = rng.normal(size=len(y))
    H = datafit.hessian(f)
    Xt = np.hstack([X.toarray().astype(np.float64), -np.ones((len(y), 1))])
    weights = 1.7 * LOSSES[loss].second_derivative(y, f)
    np.testing.assert_allclose(H, Xt.T @ (weights[:, None] * Xt), rtol=1e-12, atol=1e-12)
    assert np.all(H[1] == 0) and np.all(H[:, 1] == 0)  # the empty column


def test_hessian_sums_duplicate_entries():
    # column 0 holds row 1 twice (non-canonical CSC): X[1, 0] = 2 + 3
    indptr = np.array([0, 3, 4])
    indices = np.array([1, 1, 2, 0], dtype=np.int32)
    data = np.array([2.0, 3.0, 1.0, 4.0])
    y = np.array([1.0, -1.0, 1.0])
    datafit = make_datafit(indptr, indices, data, y, 1.0)
    f = np.array([0.3, -0.2, 1.0])
    X = np.array([[0.0, 4.0], [5.0, 0.0], [1.0, 0.0]])
    Xt = np.hstack([X, -np.ones((3, 1))])
    w = LOSSES["logistic"].second_derivative(y, f)
    np.testing.assert_allclose(datafit.hessian(f), Xt.T @ (w[:, None] * Xt), rtol=1e-13)


# -- the model solve ----------------------------------------------------------------
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_block_coordinate_descent_solves_the_model(rng, fit_intercept):
    """At the returned point the model's optimality conditions hold."""
    sizes = (3, 4, 1, 2)
    block_ptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    p = int(block_ptr[-1])
    A = rng.normal(size=(40, p + 1))
    A[:, 7] *= 100.0  # an unscaled column inside a block
    H = A.T @ A
    g = rng.normal(size=p + 1) * 30
    coef = rng.normal(size=p)
    coef[3:7] = 0.0
    bias = 0.3 if fit_intercept else 0.0
    z = coef.copy()
    c, sweeps, residual = l21sq_model_bcd(H, g, coef, bias, block_ptr, fit_intercept,
                                          1e-10, 10000, z, bias,
                                          *eigen_workspace(block_ptr))
    assert residual <= 1e-10 and sweeps < 10000
    # recomputed from scratch (coordinate descent updates its gradient)
    assert l21sq_model_residual(H, g, coef, bias, block_ptr, fit_intercept, z, c) <= 2e-10
    step = np.r_[z - coef, c - bias]
    r = g + H @ step
    distance = L21Squared().subdiff_distance(z, r[:p], block_ptr)
    scale = max(np.linalg.norm(r[lo:hi]) for lo, hi in zip(block_ptr[:-1], block_ptr[1:]))
    assert np.max(distance) <= 2e-10 * scale
    if fit_intercept:
        assert abs(r[p]) <= 2e-10 * scale
    else:
        assert c == 0.0


def test_newton_polish_solves_collinear_blocks(rng):
    """One-hot columns split over blocks (and the intercept): descent crawls, Newton not."""
    n = 300
    groups = rng.integers(0, 6, size=n)
    X = np.eye(6)[groups]  # one-hot: the columns sum to the intercept's column
    X = np.hstack([X, rng.normal(size=(n, 2))])
    Xt = np.hstack([X, -np.ones((n, 1))])
    weights = rng.uniform(0.05, 0.25, n) * 50.0
    H = Xt.T @ (weights[:, None] * Xt)
    g = Xt.T @ (weights * rng.normal(size=n))
    block_ptr = np.array([0, 3, 6, 8])
    coef, bias = rng.normal(size=8) * 0.1, 0.2
    z = coef.copy()
    c, sweeps, crawled = l21sq_model_bcd(H, g, coef, bias, block_ptr, True, 1e-12, 20,
                                         z, bias, *eigen_workspace(block_ptr))
    assert crawled > 1e-8  # twenty sweeps are far from enough
    for _ in range(5):
        c, residual = l21sq_model_polish(H, g, coef, bias, block_ptr, True, z, c)
    assert residual <= 1e-10
    assert residual == pytest.approx(
        l21sq_model_residual(H, g, coef, bias, block_ptr, True, z, c), rel=1e-6, abs=1e-14)


# -- the solver ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_agrees_with_apg_and_with_scipy(rng, loss, fit_intercept, dtype):
    X, y, block_ptr = _problem(rng, dtype=dtype, empty_columns=(4,), empty_rows=(3, 9))
    C = 1.3
    args = (*_args(X, block_ptr), y, C)
    newton = solve_subproblem(*args, loss=loss, fit_intercept=fit_intercept,
                              solver="newton", **TIGHT)
    apg = solve_subproblem(*args, loss=loss, fit_intercept=fit_intercept, solver="apg",
                           tol=1e-15, max_iter=50000, kkt_tol=1e-7)
    assert newton.converged and newton.kkt <= 1e-9
    assert newton.n_iter <= 30
    assert newton.objective <= apg.objective * (1 + 1e-12)
    assert newton.objective == pytest.approx(apg.objective, rel=1e-10)
    np.testing.assert_allclose(newton.coef, apg.coef, atol=1e-5)
    assert newton.bias == pytest.approx(apg.bias, abs=1e-5)
    best, w, b = _scipy_optimum(X, y, C, block_ptr, loss, fit_intercept)
    assert newton.objective <= best * (1 + 1e-9)
    assert newton.objective == pytest.approx(best, rel=1e-6)
    np.testing.assert_allclose(newton.coef, w, atol=2e-3)
    # the empty column, the noise blocks (1 and 3) and the empty rows
    assert newton.coef[4] == 0.0
    assert np.all(newton.coef[3:4] == 0) and np.all(newton.coef[8:10] == 0)
    np.testing.assert_allclose(newton.decision[[3, 9]], -newton.bias)
    if not fit_intercept:
        assert newton.bias == 0.0


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_float32_data_is_computed_in_float64(rng, loss):
    seed = int(rng.integers(1 << 30))
    X32, y, block_ptr = _problem(np.random.default_rng(seed), dtype=np.float32)
    X32_as_64 = sp.csc_matrix(X32, dtype=np.float64)
    a, b = (solve_subproblem(*_args(X, block_ptr), y, 2.0, loss=loss, solver="newton")
            for X in (X32, X32_as_64))
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-12, atol=1e-14)
    assert a.n_iter == b.n_iter


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_the_stop_is_certified(rng, loss, fit_intercept):
    X, y, block_ptr = _problem(rng, n=300, sizes=(5, 5, 5, 5), signal=(0, 1, 3))
    for kkt_tol in (1e-3, 1e-4, 1e-6):
        result = solve_subproblem(*_args(X, block_ptr), y, 5.0, loss=loss,
                                  fit_intercept=fit_intercept, kkt_tol=kkt_tol,
                                  solver="newton")
        assert result.converged and result.kkt <= kkt_tol
        assert _certificate(X, y, 5.0, block_ptr, result, loss,
                            fit_intercept) <= kkt_tol * (1 + 1e-6)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_result_fields(rng, loss):
    X, y, block_ptr = _problem(rng)
    r = solve_subproblem(*_args(X, block_ptr), y, 2.0, loss=loss, solver="newton")
    assert isinstance(r, SubproblemResult)
    assert r.coef.dtype == np.float64 and isinstance(r.bias, float)
    assert isinstance(r.n_iter, int) and len(r.history) == r.n_iter
    assert np.all(np.diff(r.history) <= 0)
    assert r.history[-1] == pytest.approx(r.objective, rel=1e-12)
    np.testing.assert_allclose(r.decision, X @ r.coef - r.bias, rtol=1e-12, atol=1e-12)
    # the curvature of the last Hessian in w: below the global bound
    bound = 2.0 * LOSSES[loss].curvature_bound * np.linalg.norm(X.toarray(), 2) ** 2
    assert 0 < r.lipschitz <= bound * (1 + 1e-9)


def test_unscaled_column_reaches_the_optimum():
    """Issue 8's example: a column 100 times larger than the others."""
    rng = np.random.default_rng(0)
    X = rng.random((100, 8))
    y = np.where(X[:, 0] > 0.5, 1.0, -1.0)
    X[:, 7] *= 100
    Xc = sp.csc_matrix(X)
    for loss in LOSS_NAMES:
        value, _ = _dense_objective(Xc, y, 10.0, np.array([0, 8]), loss, True)
        best = minimize(lambda z: value(z[:8], z[8]), np.zeros(9), method="BFGS",
                        options={"gtol": 1e-9, "maxiter": 100000}).fun
        r = solve_subproblem(Xc.indptr, Xc.indices, Xc.data, [0, 8], y, 10.0, loss=loss,
                             solver="newton")
        assert r.converged and r.kkt <= 1e-4 and r.n_iter <= 20
        assert r.objective <= best * (1 + 1e-9)
        assert r.objective == pytest.approx(best, rel=1e-6)
        # several blocks, the unscaled one alone
        r = solve_subproblem(Xc.indptr, Xc.indices, Xc.data, [0, 3, 7, 8], y, 10.0,
                             loss=loss, solver="newton", kkt_tol=1e-8)
        assert r.converged and r.kkt <= 1e-8 and r.n_iter <= 30


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_warm_start_from_the_optimum_stops_in_one_step(rng, loss):
    X, y, block_ptr = _problem(rng)
    first = solve_subproblem(*_args(X, block_ptr), y, 1.0, loss=loss, solver="newton",
                             **TIGHT)
    again = solve_subproblem(*_args(X, block_ptr), y, 1.0, loss=loss, solver="newton",
                             coef0=first.coef, bias0=first.bias,
                             lipschitz0=first.lipschitz)
    assert again.n_iter == 1 and again.converged
    np.testing.assert_array_equal(again.coef, first.coef)
    assert again.bias == first.bias
    assert again.history[0] == pytest.approx(first.objective, rel=1e-12)


def test_warm_start_with_a_new_block_and_apg_from_newtons_point(rng):
    X, y, block_ptr = _problem(rng, sizes=(3, 4, 2), signal=(0, 1, 2))
    old = solve_subproblem(*_args(X[:, :7], block_ptr[:3]), y, 1.0, solver="newton")
    warm = solve_subproblem(*_args(X, block_ptr), y, 1.0, coef0=old.coef,
                            bias0=old.bias, lipschitz0=old.lipschitz, solver="newton")
    cold = solve_subproblem(*_args(X, block_ptr), y, 1.0, solver="newton", **TIGHT)
    assert warm.converged
    np.testing.assert_allclose(warm.coef, cold.coef, rtol=1e-3, atol=1e-4)
    # APG warm-started from Newton's point and curvature is certified at once
    apg = solve_subproblem(*_args(X, block_ptr), y, 1.0, coef0=cold.coef, bias0=cold.bias,
                           lipschitz0=cold.lipschitz, solver="apg")
    assert apg.converged and apg.n_iter <= 3


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_all_zero_start_and_zero_blocks(rng, fit_intercept):
    X, y, block_ptr = _problem(rng, sizes=(2, 3, 2, 3), signal=(2,), noise_scale=1e-3)
    r = solve_subproblem(*_args(X, block_ptr), y, 1.0, fit_intercept=fit_intercept,
                         coef0=np.zeros(X.shape[1]), solver="newton", **TIGHT)
    assert r.converged
    norms = [np.linalg.norm(r.coef[lo:hi]) for lo, hi in zip(block_ptr[:-1], block_ptr[1:])]
    assert norms[2] > 0 and norms[0] == norms[1] == norms[3] == 0.0


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_no_columns_and_empty_columns(rng, loss, fit_intercept):
    y = np.where(rng.random(60) < 0.3, 1.0, -1.0)
    empty = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    r = solve_subproblem(*empty, np.zeros(1, np.int64), y, 3.0, loss=loss,
                         fit_intercept=fit_intercept, solver="newton")
    assert r.coef.shape == (0,) and r.converged
    assert r.bias == fit_bias_only(y, 3.0, loss=loss, fit_intercept=fit_intercept)
    X = sp.csc_matrix((60, 4))
    r = solve_subproblem(*_args(X, np.array([0, 2, 4])), y, 3.0, loss=loss,
                         fit_intercept=fit_intercept, solver="newton")
    assert np.all(r.coef == 0)
    assert r.bias == pytest.approx(fit_bias_only(y, 3.0, loss=loss,
                                                 fit_intercept=fit_intercept), abs=1e-9)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_the_solver_object_alone_on_no_column(rng, loss):
    """Without the dispatcher's shortcut, p = 0 still gives the best intercept."""
    from ultrafs.solvers.subproblem_inputs import make_problem as _problem
    from ultrafs.solvers.prox_newton import ProxNewton

    y = np.where(rng.random(50) < 0.3, 1.0, -1.0)
    empty = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0))
    pb = _problem(*empty, np.zeros(1, np.int64), y, 2.0, loss, None)
    r = ProxNewton().solve(pb, np.zeros(0), 0.0, 1.0)
    assert r.coef.shape == (0,)  # (no gradient in w to scale the certificate by)
    assert r.bias == pytest.approx(fit_bias_only(y, 2.0, loss=loss), abs=1e-9)


def test_squared_hinge_from_a_start_without_active_samples(rng):
    X, y, block_ptr = _problem(rng, sizes=(3,), signal=(0,))
    # margins far above 1 for every sample: no curvature, no gradient of P
    coef0 = 1e3 * np.linalg.lstsq(X.toarray(), y, rcond=None)[0]
    reference = solve_subproblem(*_args(X, block_ptr), y, 1.0, loss="squared-hinge",
                                 solver="newton", **TIGHT)
    r = solve_subproblem(*_args(X, block_ptr), y, 1.0, loss="squared-hinge",
                         coef0=coef0, solver="newton", **TIGHT)
    assert r.converged
    assert r.objective == pytest.approx(reference.objective, rel=1e-10)


def test_max_iter_caps_the_iterations(rng):
    X, y, block_ptr = _problem(rng)
    r = solve_subproblem(*_args(X, block_ptr), y, 1.0, solver="newton", max_iter=1)
    assert r.n_iter == 1 and not r.converged and len(r.history) == 1
    assert np.isfinite(r.kkt) and r.kkt > 1e-4  # the returned point's residual


def test_uncertified_stop_on_the_relative_decrease(rng):
    X, y, block_ptr = _problem(rng)
    r = solve_subproblem(*_args(X, block_ptr), y, 1.0, solver="newton", kkt_tol=None,
                         tol=1e-6)
    assert r.converged
    assert r.history[-2] - r.history[-1] <= 1e-6 * r.history[-2]


# -- the choice of solver ------------------------------------------------------------
class FirstOrderLogistic(Logistic):
    """The logistic loss as a plugin that binds no second-order kernels."""

    _second_derivative_kernel = None


def test_auto_picks_newton_for_small_binary_certified_problems(rng):
    X, y, _ = _problem(rng)
    binary = make_datafit(X.indptr, X.indices, X.data, y, 1.0)
    assert choose_solver(binary) == "newton"
    assert choose_solver(binary, kkt_tol=None) == "apg"
    assert choose_solver(binary, penalty=GroupL1()) == "apg"
    assert choose_solver(binary, solver="apg") == "apg"
    classes = np.arange(len(y)) % 3
    multi = make_datafit(X.indptr, X.indices, X.data, classes, 1.0, n_classes=3)
    # K outputs: Newton while its Hessian costs few passes over the data
    assert choose_solver(multi) == "newton"
    dense = sp.csc_matrix(np.ones((40, 200)))
    costly = make_datafit(dense.indptr, dense.indices, dense.data, np.arange(40) % 3,
                          1.0, n_classes=3)
    assert choose_solver(costly) == "apg"
    wide = sp.csc_matrix((len(y), apg_module.NEWTON_MAX_COEF + 1))
    wide = make_datafit(wide.indptr, wide.indices, wide.data, y, 1.0)
    assert choose_solver(wide) == "apg"
    # a (plugin) loss without a second derivative stays with APG
    first_order = make_datafit(X.indptr, X.indices, X.data, y, 1.0,
                               loss=FirstOrderLogistic())
    assert choose_solver(first_order) == "apg"
    with pytest.raises(ParameterError, match="second derivative"):
        solve(first_order, np.array([0, X.shape[1]]), solver="newton")
    with pytest.raises(ParameterError, match="solver must be"):
        choose_solver(binary, solver="lbfgs")
    with pytest.raises(ParameterError, match="l2,1-squared"):
        solve(binary, np.array([0, X.shape[1]]), penalty=GroupL1(), solver="newton")


def test_auto_hands_over_to_apg_when_newton_is_capped(rng, monkeypatch):
    X, y, block_ptr = _problem(rng)
    monkeypatch.setattr(apg_module, "AUTO_NEWTON_MAX_ITER", 1)
    r = solve_subproblem(*_args(X, block_ptr), y, 1.0, max_iter=5000)
    assert r.converged and r.kkt <= 1e-4 and r.n_iter > 1
    assert len(r.history) == r.n_iter and np.all(np.diff(r.history) <= 0)


def test_auto_is_the_default_and_gives_the_certified_solution(rng):
    X, y, block_ptr = _problem(rng)
    auto = solve_subproblem(*_args(X, block_ptr), y, 1.0)
    newton = solve_subproblem(*_args(X, block_ptr), y, 1.0, solver="newton")
    np.testing.assert_array_equal(auto.coef, newton.coef)
    assert auto.n_iter == newton.n_iter


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_kept_hessians_reach_the_same_certified_optimum(rng, loss):
    """Reusing a Hessian across steps changes the path, not the certified point."""
    from ultrafs.solvers.subproblem import Problem as _Problem
    from ultrafs.solvers.prox_newton import ProxNewton

    X, y, block_ptr = _problem(rng, n=300)
    datafit = make_datafit(X.indptr, X.indices, X.data, y, 5.0, loss=loss)
    built = []
    hessian = datafit.hessian
    datafit.hessian = lambda f: built.append(1) or hessian(f)
    pb = _Problem(datafit, L21Squared(), block_ptr)
    bias0 = datafit.optimal_bias()
    results = {}
    for reuse in (False, True):
        built.clear()
        solver = ProxNewton(reuse_hessian=reuse, **TIGHT)
        results[reuse] = (solver.solve(pb, np.zeros(X.shape[1]), bias0, 1.0), len(built))
    (fresh, n_fresh), (kept, n_kept) = results[False], results[True]
    assert fresh.converged and kept.converged
    assert kept.kkt <= 1e-9 and fresh.kkt <= 1e-9
    assert kept.objective == pytest.approx(fresh.objective, rel=1e-12)
    np.testing.assert_allclose(kept.coef, fresh.coef, atol=1e-6)
    # every step of the fresh run builds one; the kept run no more
    assert n_fresh == fresh.n_iter - 1
    assert n_kept <= n_fresh
