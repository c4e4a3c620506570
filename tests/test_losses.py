"""Loss kernels and loss objects (ultrafs.kernels.losses, ultrafs.solvers.losses)."""

import numpy as np
import pytest
from scipy.optimize import check_grad, minimize_scalar
from scipy.special import expit

from ultrafs.errors import ParameterError
from ultrafs.solvers import LOSSES, Logistic, SquaredHinge, fit_bias_only, get_loss
from ultrafs.solvers.apg import dual_variables

LOSS_NAMES = sorted(LOSSES)


def _labels(rng, n):
    return np.where(rng.random(n) < 0.5, -1.0, 1.0)


def _reference_value(name, y, f):
    """Dense numpy formulas of sum_i l(y_i, f_i)."""
    if name == "logistic":
        return float(np.sum(np.logaddexp(0.0, -y * f)))
    return float(np.sum(0.5 * np.maximum(0.0, 1.0 - y * f) ** 2))


def _reference_dual(name, y, f):
    """alpha / C from Theorem 3."""
    if name == "logistic":
        return expit(-y * f)
    return np.maximum(0.0, 1.0 - y * f)


def test_length_mismatch_is_rejected():
    loss = LOSSES["logistic"]
    with pytest.raises(ParameterError, match="same length"):
        loss.value(np.ones(3), np.zeros(2))


def test_registry_names_and_classes():
    assert isinstance(LOSSES["logistic"], Logistic)
    assert isinstance(LOSSES["squared-hinge"], SquaredHinge)
    assert get_loss("logistic") is LOSSES["logistic"]
    loss = SquaredHinge()
    assert get_loss(loss) is loss
    with pytest.raises(ParameterError, match="unknown loss"):
        get_loss("hinge")
    with pytest.raises(ParameterError):
        get_loss(3)


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_value_matches_numpy(name, rng):
    y = _labels(rng, 500)
    f = rng.normal(scale=3.0, size=500)
    loss = LOSSES[name]
    assert loss.value(y, f) == pytest.approx(_reference_value(name, y, f), rel=1e-13)


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_derivative_check_grad(name, rng):
    y = _labels(rng, 40)
    loss = LOSSES[name]
    for _ in range(5):
        f0 = rng.normal(scale=2.0, size=40)
        err = check_grad(lambda f: loss.value(y, f),
                         lambda f: loss.derivative(y, f), f0)
        assert err < 1e-5 * max(1.0, np.linalg.norm(loss.derivative(y, f0)))


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_value_derivative_is_fused_value_and_derivative(name, rng):
    y = _labels(rng, 300)
    f = rng.normal(scale=2.0, size=300)
    loss = LOSSES[name]
    out = np.empty(300)
    total = loss.value_derivative(y, f, out)
    assert total == pytest.approx(loss.value(y, f), rel=1e-14)
    np.testing.assert_allclose(out, loss.derivative(y, f), rtol=1e-15, atol=0)


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_dual_formula_and_relation_to_derivative(name, rng):
    y = _labels(rng, 300)
    f = rng.normal(scale=2.0, size=300)
    loss = LOSSES[name]
    dual = loss.dual(y, f)
    np.testing.assert_allclose(dual, _reference_dual(name, y, f), rtol=1e-14, atol=0)
    # dl/df = -y * alpha / C for both losses.
    np.testing.assert_allclose(loss.derivative(y, f), -y * dual, rtol=1e-15, atol=0)
    C = 3.5
    np.testing.assert_allclose(
        dual_variables(f, y, C, loss=name), C * _reference_dual(name, y, f), rtol=1e-14
    )


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_curvature_sum_matches_finite_differences(name, rng):
    y = _labels(rng, 200)
    f = rng.normal(scale=2.0, size=200)
    away_from_kink = np.abs(1.0 - y * f) > 1e-3
    y, f = y[away_from_kink], f[away_from_kink]
    loss = LOSSES[name]
    h = 1e-6
    numeric = np.sum(
        (loss.derivative(y, f + h) - loss.derivative(y, f - h)) / (2 * h)
    )
    assert loss.curvature_sum(y, f, loss.derivative(y, f)) == pytest.approx(
        numeric, rel=1e-6
    )
    assert loss.curvature_sum(y, f, loss.derivative(y, f)) <= (
        loss.curvature_bound * len(y) + 1e-12
    )


@pytest.mark.parametrize("margin", [30.0, 800.0, 1e10, 1e300, 1e308])
def test_logistic_extreme_margins_do_not_overflow(margin):
    loss = LOSSES["logistic"]
    y = np.array([1.0, -1.0, 1.0, -1.0])
    f = np.array([margin, -margin, -margin, margin])  # right, right, wrong, wrong
    values = [loss.value(y[i:i + 1], f[i:i + 1]) for i in range(4)]
    small = np.log1p(np.exp(-margin))
    np.testing.assert_allclose(values, [small, small, margin + small, margin + small],
                               rtol=1e-15, atol=0)
    out = np.empty(4)
    right = loss.value_derivative(y[:2], f[:2], out[:2])
    assert right == pytest.approx(2 * small, rel=1e-15)
    loss.value_derivative(y, f, out)
    dual = loss.dual(y, f)
    tiny = np.exp(-margin)
    np.testing.assert_allclose(dual, [tiny, tiny, 1.0, 1.0], rtol=1e-12, atol=0)
    np.testing.assert_allclose(out, -y * dual, rtol=1e-15, atol=0)


def test_logistic_small_margins_are_accurate():
    loss = LOSSES["logistic"]
    y = np.ones(3)
    f = np.array([0.0, 1e-12, -1e-12])
    assert loss.value(y[:1], f[:1]) == pytest.approx(np.log(2.0), rel=1e-16)
    np.testing.assert_allclose(loss.dual(y, f), expit(-f), rtol=1e-15)


@pytest.mark.parametrize("name", LOSS_NAMES)
@pytest.mark.parametrize("n_pos, n_neg", [(30, 70), (50, 50), (91, 9)])
def test_fit_bias_only_matches_numeric_minimiser(name, n_pos, n_neg):
    y = np.r_[np.ones(n_pos), -np.ones(n_neg)]
    C = 2.0
    loss = LOSSES[name]
    b = fit_bias_only(y, C, loss=name)
    numeric = minimize_scalar(
        lambda c: C * loss.value(y, np.full(len(y), -c)),
        bracket=(-1.0, 1.0), tol=1e-12,
    )
    assert b == pytest.approx(numeric.x, abs=1e-6)
    # Exact stationarity: dP/db = C sum_i l'(y_i, -b) = 0.
    grad = C * np.sum(loss.derivative(y, np.full(len(y), -b)))
    assert abs(grad) <= 1e-10 * len(y)


def test_fit_bias_only_without_intercept_and_single_class():
    y = np.ones(10)
    assert fit_bias_only(y, 1.0, loss="logistic", fit_intercept=False) == 0.0
    assert fit_bias_only(y, 1.0, loss="squared-hinge") == pytest.approx(-1.0)
    with pytest.raises(ParameterError, match="both classes"):
        fit_bias_only(y, 1.0, loss="logistic")
    with pytest.raises(ParameterError):
        fit_bias_only(np.array([1.0, 0.0]), 1.0, loss="logistic")
    with pytest.raises(ParameterError):
        fit_bias_only(np.array([1.0, -1.0]), 0.0, loss="logistic")
