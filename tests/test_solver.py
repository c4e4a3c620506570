"""The FGM subproblem solver (ultrafs.solvers.apg) and its sparse kernels."""

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.kernels import sparse_ops
from ultrafs.solvers import (
    APG,
    LOSSES,
    L1,
    GroupL1,
    L21Squared,
    SubproblemResult,
    dual_variables,
    fit_bias_only,
    objective,
    solve_subproblem,
)

LOSS_NAMES = sorted(LOSSES)
TIGHT = dict(tol=1e-15, max_iter=20000)  # stops at rounding level


# -- data helpers -------------------------------------------------------------
def _random_csc(rng, n, p, density=0.3, dtype=np.float64, index_dtype=np.int32,
                empty_columns=(), empty_rows=(), binary=False):
    """Random CSC matrix with chosen empty columns and rows."""
    X = sp.random(n, p, density=density, format="csc", random_state=rng,
                  data_rvs=lambda k: rng.normal(size=k))
    if binary:
        X.data[:] = 1.0
    X = X.tolil()
    for j in empty_columns:
        X[:, j] = 0
    for i in empty_rows:
        X[i, :] = 0
    X = sp.csc_matrix(X, dtype=dtype)
    X.eliminate_zeros()
    X.sort_indices()
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(np.int64)
    return X


def _block_ptr(sizes):
    return np.r_[0, np.cumsum(sizes)].astype(np.int64)


def _grouped_problem(rng, n=200, sizes=(3, 1, 4, 2, 3, 2), signal=(0, 2, 3),
                     shift=0.5, dtype=np.float64):
    """Data where the blocks in ``signal`` matter and the others are noise.

    Noise blocks have tiny values (scale 0.01) so that their gradient stays
    below ``sum_g ||w_g||`` at the optimum: they end exactly at zero.
    """
    block_ptr = _block_ptr(sizes)
    X = _random_csc(rng, n, block_ptr[-1], density=0.4, dtype=np.float64)
    scale = np.full(block_ptr[-1], 0.01)
    for h in signal:
        scale[block_ptr[h]:block_ptr[h + 1]] = 1.0
    X = sp.csc_matrix(X @ sp.diags(scale))
    X.sort_indices()
    w_true = np.zeros(block_ptr[-1])
    for h in signal:
        signs = np.where(rng.random(sizes[h]) < 0.5, -1.0, 1.0)
        w_true[block_ptr[h]:block_ptr[h + 1]] = signs * rng.uniform(1.0, 3.0, sizes[h])
    margin = X @ w_true - shift
    y = np.where(margin + 0.3 * rng.normal(size=n) >= 0, 1.0, -1.0)
    X = sp.csc_matrix(X, dtype=dtype)
    return X, y, block_ptr


def _args(X, block_ptr):
    return X.indptr, X.indices, X.data, block_ptr


def _kkt(X, y, C, block_ptr, result, loss, penalty=None, fit_intercept=True):
    """Relative KKT residuals of eq. 30 at ``result``.

    With ``d = l'(y, X w - b)``, ``grad = C X' d`` and ``S = sum_g ||w_g||``:

    * ``rel_w = ||r|| / (1 + ||grad|| + S)`` where ``r_h`` is the distance
      from ``-grad_h`` to the subdifferential of the penalty (for
      ``1/2 (sum ||w_g||)^2``: ``||grad_h + S w_h / ||w_h||||`` if
      ``w_h != 0``, ``max(0, ||grad_h|| - S)`` if ``w_h = 0``);
    * ``rel_b = |C sum_i d_i| / (1 + C sum_i |d_i|)`` (``dP/db`` relative to
      the size of its terms); 0 without intercept.
    """
    penalty = L21Squared() if penalty is None else penalty
    f = X @ result.coef - result.bias
    d = LOSSES[loss].derivative(y, f)
    grad = C * (X.T @ d)
    residual = penalty.subdiff_distance(result.coef, grad, block_ptr)
    total = _block_norms(result.coef, block_ptr).sum()
    rel_w = np.linalg.norm(residual) / (1.0 + np.linalg.norm(grad) + total)
    rel_b = abs(C * d.sum()) / (1.0 + C * np.abs(d).sum()) if fit_intercept else 0.0
    return rel_w, rel_b


def _block_norms(coef, block_ptr):
    bounds = zip(block_ptr[:-1], block_ptr[1:])
    return np.array([np.linalg.norm(coef[a:b]) for a, b in bounds])


# -- sparse kernels ------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sparse_kernels_match_dense(rng, dtype, index_dtype):
    n, p = 37, 11
    X = _random_csc(rng, n, p, density=0.3, dtype=dtype, index_dtype=index_dtype,
                    empty_columns=(0, 5), empty_rows=(3, 36))
    dense = X.toarray().astype(np.float64)
    w = rng.normal(size=p)
    r = rng.normal(size=n)
    args = (X.indptr, X.indices, X.data)
    close = dict(rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(sparse_ops.csc_matvec(*args, w, n), dense @ w, **close)
    np.testing.assert_allclose(sparse_ops.csc_rmatvec(*args, r), dense.T @ r, **close)
    block_ptr = _block_ptr([3, 0, 4, 4])
    per_group = sparse_ops.csc_block_matvec(*args, w, block_ptr, n)
    assert per_group.shape == (4, n) and per_group.dtype == np.float64
    for h in range(4):
        a, b = block_ptr[h], block_ptr[h + 1]
        np.testing.assert_allclose(per_group[h], dense[:, a:b] @ w[a:b], **close)
    assert np.all(per_group[:, [3, 36]] == 0)
    # The _into variant overwrites whatever the buffer held.
    out = np.full((4, n), np.nan)
    sparse_ops.csc_block_matvec_into(*args, w, block_ptr, out)
    np.testing.assert_array_equal(out, per_group)


def test_sparse_kernels_accumulate_in_float64():
    # 1 + 1e-8 is not representable in float32: the sum must still be exact.
    X = sp.csc_matrix(np.array([[1.0, 1.0]], dtype=np.float32))
    w = np.array([1.0, 1e-8])
    assert sparse_ops.csc_matvec(X.indptr, X.indices, X.data, w, 1)[0] == 1.0 + 1e-8
    r = np.array([1e-8])
    assert sparse_ops.csc_rmatvec(X.indptr, X.indices, X.data, r)[0] == 1e-8


def test_sparse_kernels_without_columns_or_nonzeros():
    indptr = np.zeros(1, dtype=np.int64)
    indices = np.zeros(0, dtype=np.int32)
    data = np.zeros(0, dtype=np.float32)
    assert np.all(sparse_ops.csc_matvec(indptr, indices, data, np.zeros(0), 5) == 0)
    assert sparse_ops.csc_rmatvec(indptr, indices, data, np.ones(5)).shape == (0,)
    assert sparse_ops.csc_block_matvec(indptr, indices, data, np.zeros(0),
                                       np.zeros(1, dtype=np.int64), 5).shape == (0, 5)


def test_combine_block_products_matches_formula(rng):
    t, n = 4, 30
    xv, xg = rng.normal(size=(t, n)), rng.normal(size=(t, n))
    scale = np.array([0.5, 0.0, 1.0, 0.25])
    out = np.empty(n)
    sparse_ops.combine_block_products(xv, xg, scale, 0.3, 1.5, out)
    expected = (scale[:, None] * (xv - 0.3 * xg)).sum(axis=0) - 1.5
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-14)


# -- optimality ----------------------------------------------------------------
@pytest.mark.parametrize("solver", ["apg", "newton"])
@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sizes, signal", [
    ((5,), (0,)),
    ((3, 2, 4), (0, 2)),
    ((3, 1, 4, 2, 3, 2), (0, 2, 3)),
])
def test_kkt_conditions_of_eq30(rng, solver, loss, fit_intercept, sizes, signal):
    """Tight solve satisfies the KKT conditions to 1e-4 (see ``_kkt``)."""
    X, y, block_ptr = _grouped_problem(rng, sizes=sizes, signal=signal)
    C = 1.0
    result = solve_subproblem(*_args(X, block_ptr), y, C, loss=loss,
                              fit_intercept=fit_intercept, solver=solver, **TIGHT)
    assert result.converged
    rel_w, rel_b = _kkt(X, y, C, block_ptr, result, loss, fit_intercept=fit_intercept)
    assert rel_w <= 1e-4 and rel_b <= 1e-4
    norms = _block_norms(result.coef, block_ptr)
    noise = [h for h in range(len(sizes)) if h not in signal]
    # The data are built so that both branches of the conditions are tested.
    assert np.all(norms[list(signal)] > 0)
    assert np.all(norms[noise] == 0)
    if not fit_intercept:
        assert result.bias == 0.0


@pytest.mark.parametrize("block_cache", [True, False])
def test_block_cache_and_direct_products_agree(rng, block_cache):
    X, y, block_ptr = _grouped_problem(rng)
    args = _args(X, block_ptr)
    reference = solve_subproblem(*args, y, 2.0, tol=1e-6, block_cache=True, solver="apg")
    result = solve_subproblem(*args, y, 2.0, tol=1e-6, block_cache=block_cache,
                              solver="apg")
    assert result.n_iter == reference.n_iter
    np.testing.assert_allclose(result.history, reference.history, rtol=1e-12)
    np.testing.assert_allclose(result.coef, reference.coef, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_single_group_logistic_matches_sklearn(rng, fit_intercept):
    """t = 1: 1/2 ||w||^2 + C sum log(1 + exp(-y f)) is sklearn's L2 logistic."""
    from sklearn.linear_model import LogisticRegression

    n, p, C = 300, 8, 0.5
    X = _random_csc(rng, n, p, density=0.5)
    y = np.where(X @ rng.normal(size=p) + 0.3 + rng.normal(size=n) >= 0, 1.0, -1.0)
    result = solve_subproblem(*_args(X, _block_ptr([p])), y, C,
                              fit_intercept=fit_intercept, **TIGHT)
    clf = LogisticRegression(C=C, tol=1e-12, max_iter=100000,
                             fit_intercept=fit_intercept).fit(X.toarray(), y)
    expected_bias = -clf.intercept_[0] if fit_intercept else 0.0
    reference = objective(*_args(X, _block_ptr([p])), y, C, clf.coef_.ravel(),
                          expected_bias)
    assert result.objective <= reference * (1 + 1e-12)
    np.testing.assert_allclose(result.coef, clf.coef_.ravel(), rtol=1e-5, atol=1e-6)
    assert result.bias == pytest.approx(expected_bias, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_single_group_squared_hinge_matches_lbfgs(rng, fit_intercept):
    """t = 1: 1/2 ||w||^2 + C/2 sum max(0, 1 - y (Xw - b))^2 is smooth (C^1);
    L-BFGS on the dense problem is the reference.  (liblinear's LinearSVC
    with C_sklearn = C / 2 solves the same problem without intercept, but
    does not always converge to 1e-3, so it is not used here.)"""
    from scipy.optimize import minimize

    n, p, C = 300, 6, 0.8
    X = _random_csc(rng, n, p, density=0.5)
    y = np.where(X @ rng.normal(size=p) + 0.4 + rng.normal(size=n) >= 0, 1.0, -1.0)
    A = X.toarray()
    k = p + 1 if fit_intercept else p

    def fun(x):
        w, b = x[:p], (x[p] if fit_intercept else 0.0)
        slack = np.maximum(0.0, 1.0 - y * (A @ w - b))
        grad_f = -C * y * slack
        grad = w + A.T @ grad_f
        if fit_intercept:
            grad = np.r_[grad, -grad_f.sum()]
        return 0.5 * w @ w + 0.5 * C * slack @ slack, grad

    ref = minimize(fun, np.zeros(k), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 100000})
    result = solve_subproblem(*_args(X, _block_ptr([p])), y, C, loss="squared-hinge",
                              fit_intercept=fit_intercept, **TIGHT)
    assert result.objective <= ref.fun * (1 + 1e-12)
    np.testing.assert_allclose(result.coef, ref.x[:p], rtol=1e-5, atol=1e-6)
    if fit_intercept:
        assert result.bias == pytest.approx(ref.x[p], rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("penalty", [L1(alpha=2.0), GroupL1(alpha=3.0)])
def test_other_penalties_reach_their_optimality_conditions(rng, penalty):
    X, y, block_ptr = _grouped_problem(rng)
    result = solve_subproblem(*_args(X, block_ptr), y, 1.0, penalty=penalty, **TIGHT)
    rel_w, rel_b = _kkt(X, y, 1.0, block_ptr, result, "logistic", penalty=penalty)
    assert rel_w <= 1e-4 and rel_b <= 1e-4
    assert np.any(result.coef == 0) and np.any(result.coef != 0)


# -- data edge cases -------------------------------------------------------------
@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_float32_and_float64_data_give_the_same_solution(rng, loss):
    X64, y, block_ptr = _grouped_problem(rng)
    X32 = sp.csc_matrix(X64, dtype=np.float32)
    X32_as_64 = sp.csc_matrix(X32, dtype=np.float64)
    r32, r32_as_64, r64 = (
        solve_subproblem(*_args(X, block_ptr), y, 1.0, loss=loss, **TIGHT)
        for X in (X32, X32_as_64, X64)
    )
    # Same values: same arithmetic (float64 accumulation).
    np.testing.assert_allclose(r32.coef, r32_as_64.coef, rtol=1e-12, atol=1e-14)
    # Values rounded to float32: the solution moves by ~1e-7 relative.
    np.testing.assert_allclose(r32.coef, r64.coef, rtol=1e-5, atol=1e-6)
    assert r32.bias == pytest.approx(r64.bias, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_empty_columns_and_rows(rng, loss):
    n, sizes = 150, (3, 1, 4)
    block_ptr = _block_ptr(sizes)
    X = _random_csc(rng, n, block_ptr[-1], density=0.4,
                    empty_columns=(1, 3), empty_rows=(0, 7, 149))
    margin = X @ rng.normal(size=block_ptr[-1]) + rng.normal(size=n)
    y = np.where(margin >= 0, 1.0, -1.0)
    result = solve_subproblem(*_args(X, block_ptr), y, 1.0, loss=loss, **TIGHT)
    assert result.coef[1] == 0 and result.coef[3] == 0  # block 1 is all empty
    rel_w, rel_b = _kkt(X, y, 1.0, block_ptr, result, loss)
    assert rel_w <= 1e-4 and rel_b <= 1e-4
    np.testing.assert_allclose(result.decision[[0, 7, 149]], -result.bias)


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_no_columns_gives_the_bias_only_solution(rng, loss, fit_intercept):
    y = np.where(rng.random(60) < 0.3, 1.0, -1.0)
    empty = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    C = 3.0
    result = solve_subproblem(*empty, np.zeros(1, np.int64), y, C, loss=loss,
                              fit_intercept=fit_intercept)
    bias = fit_bias_only(y, C, loss=loss, fit_intercept=fit_intercept)
    assert isinstance(result, SubproblemResult)
    assert result.coef.shape == (0,) and result.bias == bias and result.converged
    np.testing.assert_array_equal(result.decision, np.full(60, -bias))
    assert result.objective == pytest.approx(C * LOSSES[loss].value(y, result.decision))
    assert result.objective == pytest.approx(
        objective(*empty, np.zeros(1, np.int64), y, C, np.zeros(0), bias, loss=loss))


def test_all_empty_columns_reduce_to_the_bias_only_solution(rng):
    y = np.where(rng.random(80) < 0.7, 1.0, -1.0)
    X = sp.csc_matrix((80, 4))
    result = solve_subproblem(*_args(X, _block_ptr([2, 2])), y, 1.0, **TIGHT)
    assert np.all(result.coef == 0)
    assert result.bias == pytest.approx(fit_bias_only(y, 1.0), abs=1e-6)


# -- warm starts, stopping, results ---------------------------------------------
@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_warm_start_from_the_solution_returns_immediately(rng, loss):
    X, y, block_ptr = _grouped_problem(rng)
    first = solve_subproblem(*_args(X, block_ptr), y, 1.0, loss=loss, tol=1e-10)
    again = solve_subproblem(*_args(X, block_ptr), y, 1.0, loss=loss, coef0=first.coef,
                             bias0=first.bias, lipschitz0=first.lipschitz, tol=1e-3)
    assert again.n_iter <= 2 and again.converged
    assert again.objective <= first.objective * (1 + 1e-12)
    assert again.objective == pytest.approx(first.objective, rel=1e-9)


def test_warm_start_with_new_groups_appended(rng):
    X, y, block_ptr = _grouped_problem(rng)
    p_old = block_ptr[3]
    X_old = X[:, :p_old]
    old = solve_subproblem(*_args(X_old, block_ptr[:4]), y, 1.0, tol=1e-4)
    warm = solve_subproblem(*_args(X, block_ptr), y, 1.0, coef0=old.coef,
                            bias0=old.bias, lipschitz0=old.lipschitz, **TIGHT)
    cold = solve_subproblem(*_args(X, block_ptr), y, 1.0, **TIGHT)
    np.testing.assert_allclose(warm.coef, cold.coef, rtol=1e-4, atol=1e-6)
    # The first kept iterate cannot be worse than the warm start [w_old, 0].
    start = objective(*_args(X, block_ptr), y, 1.0,
                      np.r_[old.coef, np.zeros(X.shape[1] - p_old)], old.bias)
    assert warm.history[0] <= start


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_result_fields_are_consistent(rng, loss):
    X, y, block_ptr = _grouped_problem(rng)
    C = 2.0
    r = solve_subproblem(*_args(X, block_ptr), y, C, loss=loss, tol=1e-3)
    assert r.coef.dtype == np.float64 and r.coef.shape == (X.shape[1],)
    assert isinstance(r.bias, float) and isinstance(r.n_iter, int)
    np.testing.assert_allclose(r.decision, X @ r.coef - r.bias, rtol=1e-12, atol=1e-12)
    assert r.objective == pytest.approx(
        objective(*_args(X, block_ptr), y, C, r.coef, r.bias, loss=loss), rel=1e-13)
    assert len(r.history) == r.n_iter
    assert np.all(np.diff(r.history) <= 0)  # kept iterates never increase F
    assert r.history[-1] == pytest.approx(r.objective, rel=1e-12)
    assert np.isfinite(r.lipschitz) and r.lipschitz > 0
    # Stopped by eq. 40 on the last (kept) step.
    if r.converged and r.n_iter >= 2:
        assert (r.history[-2] - r.history[-1]) <= 1e-3 * r.history[-2]
    np.testing.assert_allclose(dual_variables(r.decision, y, C, loss=loss),
                               C * LOSSES[loss].dual(y, r.decision))


def test_max_iter_and_lipschitz_defaults(rng):
    X, y, block_ptr = _grouped_problem(rng)
    r = solve_subproblem(*_args(X, block_ptr), y, 1.0, tol=0.0, max_iter=3, solver="apg")
    assert r.n_iter == 3 and not r.converged and len(r.history) == 3
    # Default L_0 = 0.01 n C; L_t = eta * tau_k is a multiple of eta * L_0
    # by a power of eta.
    ratio = np.log(r.lipschitz / (0.01 * len(y) * 1.0)) / np.log(0.5)
    assert ratio == pytest.approx(round(ratio), abs=1e-9)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_lipschitz_estimate_stays_below_the_global_constant(rng, loss):
    """Any tau >= L passes the line search, so eta * tau_k <= L when the
    search starts below L; running to rounding level (tol = 0) must not
    inflate it."""
    X, y, block_ptr = _grouped_problem(rng)
    C = 1.5
    bound = C * LOSSES[loss].curvature_bound * np.linalg.norm(X.toarray(), 2) ** 2
    r = solve_subproblem(*_args(X, block_ptr), y, C, loss=loss, tol=0.0,
                         max_iter=5000, lipschitz0=1e-3, solver="apg")
    assert r.converged  # stopped at rounding level, not by max_iter
    assert 0 < r.lipschitz <= bound * (1 + 1e-9)


def test_inexact_solution_is_close_to_the_optimum(rng):
    X, y, block_ptr = _grouped_problem(rng, n=400)
    exact = solve_subproblem(*_args(X, block_ptr), y, 1.0, **TIGHT)
    inexact = solve_subproblem(*_args(X, block_ptr), y, 1.0, tol=1e-3)
    assert exact.objective <= inexact.objective <= exact.objective * (1 + 1e-2)


def test_solver_is_deterministic(rng):
    X, y, block_ptr = _grouped_problem(rng)
    a = solve_subproblem(*_args(X, block_ptr), y, 1.0)
    b = solve_subproblem(*_args(X, block_ptr), y, 1.0)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.history == b.history and a.bias == b.bias


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_objective_matches_dense_formula(rng, loss):
    X, y, block_ptr = _grouped_problem(rng, dtype=np.float32)
    coef, bias, C = rng.normal(size=X.shape[1]), 0.7, 1.7
    f = X.toarray().astype(np.float64) @ coef - bias
    if loss == "logistic":
        data_term = C * np.sum(np.log1p(np.exp(-y * f)))
    else:
        data_term = C / 2 * np.sum(np.maximum(0, 1 - y * f) ** 2)
    omega = 0.5 * _block_norms(coef, block_ptr).sum() ** 2
    value = objective(*_args(X, block_ptr), y, C, coef, bias, loss=loss)
    assert value == pytest.approx(omega + data_term, rel=1e-12)


def test_apg_solver_object_can_be_reused(rng):
    from ultrafs.solvers.subproblem_inputs import make_problem as _problem

    X, y, block_ptr = _grouped_problem(rng)
    solver = APG(tol=1e-8)
    pb = _problem(*_args(X, block_ptr), y, 1.0, "squared-hinge", None)
    first = solver.solve(pb, np.zeros(X.shape[1]), 0.0, 1.0)
    second = solver.solve(pb, np.zeros(X.shape[1]), 0.0, 1.0)
    np.testing.assert_array_equal(first.coef, second.coef)


# -- validation --------------------------------------------------------------------
def test_invalid_inputs_are_rejected(rng):
    X, y, block_ptr = _grouped_problem(rng)
    args = _args(X, block_ptr)
    with pytest.raises(ParameterError, match="C must be"):
        solve_subproblem(*args, y, 0.0)
    with pytest.raises(ParameterError, match="labels"):
        solve_subproblem(*args, np.where(y > 0, 1.0, 0.0), 1.0)
    with pytest.raises(ParameterError, match="block_ptr"):
        solve_subproblem(*_args(X, block_ptr[:-1]), y, 1.0)
    with pytest.raises(ParameterError, match="coef0"):
        solve_subproblem(*args, y, 1.0, coef0=np.zeros(X.shape[1] + 1))
    with pytest.raises(ParameterError, match="bias0"):
        solve_subproblem(*args, y, 1.0, fit_intercept=False, bias0=1.0)
    with pytest.raises(ParameterError, match="eta"):
        solve_subproblem(*args, y, 1.0, eta=1.0)
    with pytest.raises(ParameterError, match="unknown loss"):
        solve_subproblem(*args, y, 1.0, loss="hinge")
    with pytest.raises(ParameterError, match="row indices"):
        solve_subproblem(*args, y[:10], 1.0)
    with pytest.raises(ParameterError, match="both classes"):
        solve_subproblem(*args, np.ones_like(y), 1.0)
    with pytest.raises(ParameterError, match="data must be finite"):
        bad = X.copy()
        bad.data[0] = np.nan
        solve_subproblem(*_args(bad, block_ptr), y, 1.0)
    with pytest.raises(ParameterError, match="lipschitz0"):
        solve_subproblem(*args, y, 1.0, lipschitz0=0.0)
    with pytest.raises(ParameterError, match="coef0 must be finite"):
        solve_subproblem(*args, y, 1.0, coef0=np.full(2, np.inf))
    with pytest.raises(ParameterError, match="block-radial"):
        solve_subproblem(*args, y, 1.0, penalty=L1(), block_cache=True)
    # One class is fine for the squared hinge, or without an intercept.
    solve_subproblem(*args, np.ones_like(y), 1.0, loss="squared-hinge")
    solve_subproblem(*args, np.ones_like(y), 1.0, fit_intercept=False)


def test_unscaled_column_reaches_the_optimum_with_the_certificate():
    """Issue 8's example: the relative decrease alone stops at a far-off point."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(0)
    X = rng.random((100, 8))
    y = np.where(X[:, 0] > 0.5, 1.0, -1.0)
    X[:, 7] *= 100
    Xc = sp.csc_matrix(X)
    C = 10.0

    def objective(z):
        margin = y * (X @ z[:8] - z[8])
        return 0.5 * np.sum(z[:8] ** 2) + C * np.sum(np.logaddexp(0, -margin))

    def gradient(z):
        s = -y / (1 + np.exp(y * (X @ z[:8] - z[8])))
        return np.concatenate([z[:8] + C * X.T @ s, [-C * np.sum(s)]])

    best = minimize(objective, np.zeros(9), jac=gradient, method="L-BFGS-B",
                    options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 100000}).fun
    paper = solve_subproblem(Xc.indptr, Xc.indices, Xc.data, [0, 8], y, C, kkt_tol=None)
    assert paper.objective > 2 * best            # stopped far from the optimum
    certified = solve_subproblem(Xc.indptr, Xc.indices, Xc.data, [0, 8], y, C,
                                 kkt_tol=1e-3, max_iter=5000)
    assert certified.converged and certified.kkt <= 1e-3
    assert certified.objective == pytest.approx(best, rel=1e-3)
    assert np.mean(np.sign(X @ certified.coef - certified.bias) == y) >= 0.95


@pytest.mark.parametrize("solver", ["apg", "newton"])
@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_the_stop_is_certified_by_the_kkt_residual(rng, loss, solver):
    X, y, block_ptr = _grouped_problem(rng)
    result = solve_subproblem(X.indptr, X.indices, X.data, block_ptr, y, 5.0,
                              loss=loss, kkt_tol=1e-5, max_iter=20000, solver=solver)
    assert result.converged and result.kkt <= 1e-5
    # recomputed independently from the returned point, relative to the
    # largest block norm of the gradient there
    d = LOSSES[loss].derivative(y, result.decision)
    grad = 5.0 * (X.T @ d)
    residual = L21Squared().subdiff_distance(result.coef, grad, block_ptr)
    norms = [np.linalg.norm(grad[lo:hi]) for lo, hi in zip(block_ptr[:-1], block_ptr[1:])]
    assert np.max(residual) <= 1e-5 * max(norms) * (1 + 1e-9)
    assert abs(5.0 * np.sum(d)) <= 1e-5 * max(norms) * (1 + 1e-9)


def test_kkt_tol_is_validated(rng):
    X, y, block_ptr = _grouped_problem(rng)
    with pytest.raises(ParameterError, match="kkt_tol"):
        solve_subproblem(X.indptr, X.indices, X.data, block_ptr, y, 1.0, kkt_tol=-1.0)
