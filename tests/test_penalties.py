"""Proximal kernels and penalty objects (Algorithm 3 and companions)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from ultrafs.errors import ParameterError
from ultrafs.kernels import prox as kprox
from ultrafs.solvers import L1, GroupL1, L21Squared


def _block_ptr(sizes):
    return np.r_[0, np.cumsum(sizes)].astype(np.int64)


def _moreau_objective(w, u, tau, block_ptr):
    """tau/2 ||w - u||^2 + 1/2 (sum_h ||w_h||)^2 (problem 33)."""
    norms = [np.linalg.norm(w[a:b]) for a, b in zip(block_ptr[:-1], block_ptr[1:])]
    return 0.5 * tau * np.sum((w - u) ** 2) + 0.5 * np.sum(norms) ** 2


def _brute_force_moreau(u, tau, block_ptr, rng):
    """Minimise problem 33 directly with scipy from several starting points."""
    fun = lambda w: _moreau_objective(w, u, tau, block_ptr)  # noqa: E731
    best = None
    starts = [np.zeros_like(u), u, u / (1.0 + 1.0 / tau), rng.normal(size=len(u))]
    for x0 in starts:
        for method in ("Powell", "Nelder-Mead"):
            res = minimize(fun, x0, method=method,
                           options={"xtol": 1e-12, "ftol": 1e-14, "maxiter": 200000,
                                    "maxfev": 200000} if method == "Powell" else
                           {"xatol": 1e-12, "fatol": 1e-14, "maxiter": 200000,
                            "maxfev": 200000})
            if best is None or res.fun < best.fun:
                best = res
    return best


def _reduced_norms(norms, tau):
    """Solve min_{c >= 0} tau/2 sum (c_h - ||u_h||)^2 + 1/2 (sum c)^2 (smooth)."""
    fun = lambda c: 0.5 * tau * np.sum((c - norms) ** 2) + 0.5 * np.sum(c) ** 2  # noqa
    jac = lambda c: tau * (c - norms) + np.sum(c)  # noqa: E731
    res = minimize(fun, norms / 2, jac=jac, method="L-BFGS-B",
                   bounds=[(0, None)] * len(norms),
                   options={"ftol": 1e-15, "gtol": 1e-13, "maxiter": 10000})
    return res.x


@pytest.mark.parametrize("sizes", [[1], [3], [2, 1, 3], [1, 1, 1, 1, 1], [2, 2, 2]])
@pytest.mark.parametrize("tau", [0.3, 1.0, 5.0])
def test_moreau_projection_matches_brute_force(sizes, tau, rng):
    block_ptr = _block_ptr(sizes)
    for _ in range(3):
        p = block_ptr[-1]
        u = rng.normal(size=p) * rng.choice([0.1, 1.0, 3.0], size=p)
        w, scale = L21Squared().prox(u, 1.0 / tau, block_ptr)
        ref = _brute_force_moreau(u, tau, block_ptr, rng)
        f_w = _moreau_objective(w, u, tau, block_ptr)
        slack = 1e-12 * (1.0 + abs(ref.fun))
        assert f_w <= ref.fun + slack
        # Strong convexity (modulus tau) at the minimiser w:
        # F(x) - F(w) >= tau/2 ||x - w||^2 for every x, here the brute force.
        assert 0.5 * tau * np.sum((ref.x - w) ** 2) <= ref.fun - f_w + slack
        np.testing.assert_allclose(w, ref.x, atol=1e-3 * (1.0 + np.abs(u).max()))


@pytest.mark.parametrize("t", [1, 2, 4, 7])
def test_moreau_norms_match_reduced_smooth_problem(t, rng):
    for tau in (0.05, 0.7, 20.0):
        norms = np.abs(rng.normal(size=t)) * rng.choice([0.01, 1.0, 10.0], size=t)
        o = kprox.l21sq_moreau_norms(norms, 1.0 / tau)
        np.testing.assert_allclose(o, _reduced_norms(norms, tau),
                                   atol=1e-7 * (1 + norms.max()))


@pytest.mark.parametrize("sizes", [[4], [1, 2, 3], [2, 0, 2, 5], [1] * 10])
def test_moreau_projection_satisfies_optimality_conditions(sizes, rng):
    """0 in tau (w - u) + dOmega(w), checked by L21Squared.subdiff_distance."""
    block_ptr = _block_ptr(sizes)
    penalty = L21Squared()
    for tau in (0.01, 1.0, 100.0):
        u = rng.normal(size=block_ptr[-1]) * 2.0
        w, scale = penalty.prox(u, 1.0 / tau, block_ptr)
        residual = penalty.subdiff_distance(w, tau * (w - u), block_ptr)
        assert np.all(residual <= 1e-12 * (1.0 + tau * np.abs(u).max()))
        # Each block is scaled towards 0 by one factor in [0, 1].
        assert np.all((scale >= 0) & (scale <= 1))
        for h in range(len(sizes)):
            sl = slice(block_ptr[h], block_ptr[h + 1])
            np.testing.assert_allclose(w[sl], scale[h] * u[sl], rtol=0, atol=0)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    log_tau=st.floats(-4, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_moreau_projection_property(sizes, log_tau, seed):
    rng = np.random.default_rng(seed)
    block_ptr = _block_ptr(sizes)
    tau = 10.0 ** log_tau
    u = rng.normal(size=block_ptr[-1]) * 10.0 ** rng.uniform(-3, 3)
    w, scale = L21Squared().prox(u, 1.0 / tau, block_ptr)
    grad = tau * (w - u)
    residual = L21Squared().subdiff_distance(w, grad, block_ptr)
    scale_ = 1.0 + np.max(np.abs(grad), initial=0.0) + np.max(np.abs(u), initial=0.0)
    assert np.all(residual <= 1e-10 * scale_)
    # The order of the block norms is preserved (soft-thresholding of norms).
    norms_u = kprox.block_norms(u, block_ptr)
    norms_w = kprox.block_norms(w, block_ptr)
    order = np.argsort(norms_u, kind="stable")
    assert np.all(np.diff(norms_w[order]) >= -1e-12 * scale_)


def test_moreau_projection_edge_cases():
    penalty = L21Squared()
    # All-zero u.
    gp = _block_ptr([2, 3])
    w, scale = penalty.prox(np.zeros(5), 0.5, gp)
    assert np.all(w == 0) and np.all(scale == 0)
    # t = 1: prox of s/2 ||w||^2 is u / (1 + s).
    u = np.array([1.0, -2.0, 0.5])
    for s in (0.1, 1.0, 10.0):
        w, scale = penalty.prox(u, s, _block_ptr([3]))
        np.testing.assert_allclose(w, u / (1.0 + s), rtol=1e-15)
    # Ties: equal norms get equal shrinkage, whatever their position.
    u = np.array([3.0, 0.0, 0.0, -3.0, 1.0])
    w, scale = penalty.prox(u, 0.5, _block_ptr([1, 1, 1, 1, 1]))
    assert scale[0] == scale[3]
    np.testing.assert_allclose(np.abs(w[0]), np.abs(w[3]))
    # s -> 0 leaves u unchanged; a huge s keeps only the largest blocks.
    u = np.array([1.0, 2.0, 4.0])
    w, _ = penalty.prox(u, 1e-300, _block_ptr([1, 1, 1]))
    np.testing.assert_allclose(w, u)
    w, _ = penalty.prox(u, 1e300, _block_ptr([1, 1, 1]))
    assert np.all(w >= 0) and w[0] == 0.0
    # Empty blocks and p = 0.
    w, scale = penalty.prox(np.array([1.0]), 1.0, _block_ptr([0, 1, 0]))
    np.testing.assert_allclose(w, [0.5])
    np.testing.assert_allclose(scale, [0, 0.5, 0])
    w, scale = penalty.prox(np.zeros(0), 1.0, _block_ptr([]))
    assert w.shape == (0,) and scale.shape == (0,)


def test_threshold_kernel_formula():
    # Three blocks with norms 3, 2, 0.1 and s = 1: rho = 2, c = 1/3 * 5.
    norms = np.array([2.0, 0.1, 3.0])
    c = kprox.l21sq_threshold(norms, 1.0)
    assert c == pytest.approx(5.0 / 3.0)
    np.testing.assert_allclose(kprox.l21sq_moreau_norms(norms, 1.0),
                               [2 - 5 / 3, 0.0, 3 - 5 / 3])
    assert kprox.l21sq_threshold(np.zeros(3), 1.0) == 0.0


def test_l21_squared_value(rng):
    gp = _block_ptr([2, 0, 3])
    w = rng.normal(size=5)
    expected = 0.5 * (np.linalg.norm(w[:2]) + np.linalg.norm(w[2:])) ** 2
    assert L21Squared().value(w, gp) == pytest.approx(expected, rel=1e-15)


def test_l1_soft_thresholding(rng):
    penalty = L1(alpha=0.7)
    u = rng.normal(size=50)
    gp = _block_ptr([50])
    w, scale = penalty.prox(u, 2.0, gp)
    assert scale is None and not penalty.block_radial
    np.testing.assert_allclose(w, np.sign(u) * np.maximum(np.abs(u) - 1.4, 0.0))
    residual = penalty.subdiff_distance(w, (w - u) / 2.0, gp)
    assert residual.max() <= 1e-14
    assert penalty.value(u, gp) == pytest.approx(0.7 * np.abs(u).sum())
    with pytest.raises(ParameterError):
        L1(alpha=-1.0)


def test_l1_prox_matches_brute_force(rng):
    penalty = L1(alpha=0.3)
    u = rng.normal(size=4)
    step = 0.8
    gp = _block_ptr([4])
    w, _ = penalty.prox(u, step, gp)
    fun = lambda x: 0.5 * np.sum((x - u) ** 2) + step * penalty.value(x, gp)  # noqa
    ref = minimize(fun, np.zeros(4), method="Powell",
                   options={"xtol": 1e-12, "ftol": 1e-15})
    assert fun(w) <= ref.fun + 1e-14
    np.testing.assert_allclose(w, ref.x, atol=1e-6)


def test_group_l1_soft_thresholding(rng):
    penalty = GroupL1(alpha=0.5)
    gp = _block_ptr([3, 2, 4])
    u = rng.normal(size=9) * np.r_[np.ones(3), 0.05 * np.ones(2), 2 * np.ones(4)]
    step = 1.5
    w, scale = penalty.prox(u, step, gp)
    assert penalty.block_radial
    for h in range(3):
        sl = slice(gp[h], gp[h + 1])
        factor = max(0.0, 1.0 - 0.75 / np.linalg.norm(u[sl]))
        np.testing.assert_allclose(w[sl], factor * u[sl], rtol=1e-15)
        assert scale[h] == pytest.approx(factor)
    assert scale[1] == 0.0
    residual = penalty.subdiff_distance(w, (w - u) / step, gp)
    assert residual.max() <= 1e-14
