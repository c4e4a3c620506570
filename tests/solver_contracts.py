"""Contract test suites for datafits, penalties and solvers.

Every member of a registry subclasses the matching contract (see
``tests/test_contracts.py``): a new loss, penalty or solver gets the whole
suite by adding one small class that says how to build it.  The checks
use only the documented interface and dense NumPy references.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.solvers.datafits import Datafit
from ultrafs.solvers.losses import get_loss
from ultrafs.solvers.operators import CSCOperator


def random_csc(rng, n, p, density=0.4, dtype=np.float64, empty_cols=(1,), empty_rows=(2,)):
    """A CSC matrix with an empty column and an empty row."""
    X = rng.standard_normal((n, p)) * (rng.random((n, p)) < density)
    X[:, list(empty_cols)] = 0.0
    X[list(empty_rows), :] = 0.0
    return sp.csc_matrix(X.astype(dtype))


class DatafitContract:
    """Checks every datafit must pass.

    Subclasses set ``loss_name`` and ``n_classes`` (2 for binary).
    """

    loss_name = "logistic"
    n_classes = 2
    C = 1.7

    @property
    def n_outputs(self):
        return 1 if self.n_classes == 2 else self.n_classes

    def targets(self, rng, n):
        if self.n_classes == 2:
            return np.where(rng.random(n) < 0.5, -1.0, 1.0)
        y = np.arange(n) % self.n_classes
        rng.shuffle(y)
        return y.astype(np.int64)

    def make(self, rng, n=23, p=7, dtype=np.float64):
        X = random_csc(rng, n, p, dtype=dtype)
        target = "binary" if self.n_classes == 2 else "multiclass"
        operator = CSCOperator(X.indptr, X.indices, X.data, n, self.n_outputs)
        return Datafit(get_loss(self.loss_name, target), operator,
                       self.targets(rng, n), self.C), X

    def point(self, rng, datafit):
        coef = rng.standard_normal(datafit.n_coef)
        bias = (float(rng.standard_normal()) if self.n_outputs == 1
                else rng.standard_normal(self.n_outputs))
        return coef, bias

    def test_decision_matches_dense(self, rng):
        datafit, X = self.make(rng)
        coef, bias = self.point(rng, datafit)
        W = coef.reshape(X.shape[1], self.n_outputs)
        dense = X.toarray() @ W - bias
        np.testing.assert_allclose(datafit.decision(coef, bias),
                                   dense.ravel(), atol=1e-12)

    def test_gradient_by_finite_differences(self, rng):
        datafit, _ = self.make(rng)
        coef, bias = self.point(rng, datafit)
        d = np.empty(datafit.decision_size)
        datafit.value_derivative(datafit.decision(coef, bias), d)
        grad = datafit.gradient(d)
        eps = 1e-6
        for j in range(datafit.n_coef):
            e = np.zeros(datafit.n_coef)
            e[j] = eps
            fd = (datafit.value(datafit.decision(coef + e, bias))
                  - datafit.value(datafit.decision(coef - e, bias))) / (2 * eps)
            assert fd == pytest.approx(grad[j], rel=1e-4, abs=1e-6)

    def test_bias_gradient_by_finite_differences(self, rng):
        datafit, _ = self.make(rng)
        coef, bias = self.point(rng, datafit)
        d = np.empty(datafit.decision_size)
        datafit.value_derivative(datafit.decision(coef, bias), d)
        g = np.atleast_1d(datafit.bias_gradient(d))
        eps = 1e-6
        for k in range(self.n_outputs):
            e = np.zeros(self.n_outputs)
            e[k] = eps
            hi = bias + (e[0] if self.n_outputs == 1 else e)
            lo = bias - (e[0] if self.n_outputs == 1 else e)
            fd = (datafit.value(datafit.decision(coef, hi))
                  - datafit.value(datafit.decision(coef, lo))) / (2 * eps)
            assert fd == pytest.approx(g[k], rel=1e-4, abs=1e-6)

    def test_bias_curvature_bounds_the_curvature(self, rng):
        datafit, _ = self.make(rng)
        coef, bias = self.point(rng, datafit)
        f = datafit.decision(coef, bias)
        d = np.empty(datafit.decision_size)
        datafit.value_derivative(f, d)
        bound = datafit.bias_curvature(f, d)
        eps = 1e-4
        for _ in range(5):
            direction = rng.standard_normal(self.n_outputs)
            direction /= np.linalg.norm(direction)
            step = direction[0] * eps if self.n_outputs == 1 else direction * eps
            second = (datafit.value(datafit.decision(coef, bias + step))
                      - 2 * datafit.value(f)
                      + datafit.value(datafit.decision(coef, bias - step))) / eps ** 2
            assert second <= bound * (1 + 1e-4) + 1e-6

    def test_optimal_bias_zeroes_the_bias_gradient(self, rng):
        datafit, _ = self.make(rng)
        bias = datafit.optimal_bias()
        d = np.empty(datafit.decision_size)
        datafit.value_derivative(datafit.decision(np.zeros(datafit.n_coef), bias), d)
        assert np.max(np.abs(datafit.bias_gradient(d))) < 1e-9 * datafit.n * self.C
        assert np.all(np.asarray(datafit.optimal_bias(fit_intercept=False)) == 0)

    def test_dual_weights_are_minus_c_times_the_derivative(self, rng):
        datafit, _ = self.make(rng)
        coef, bias = self.point(rng, datafit)
        f = datafit.decision(coef, bias)
        d = np.empty(datafit.decision_size)
        datafit.value_derivative(f, d)
        weights = datafit.dual_weights(f)
        expected = (-self.C * d).reshape(weights.shape)
        np.testing.assert_allclose(weights, expected, rtol=1e-12, atol=1e-14)

    def test_block_products_and_combine(self, rng):
        datafit, X = self.make(rng)
        coef, bias = self.point(rng, datafit)
        p = X.shape[1]
        block_ptr = np.array([0, 3, 3, p]) * self.n_outputs
        out = np.empty((3, datafit.decision_size))
        datafit.block_products(coef, block_ptr, out)
        np.testing.assert_allclose(out.sum(axis=0) - np.tile(bias, datafit.n)
                                   if self.n_outputs > 1 else out.sum(axis=0) - bias,
                                   datafit.decision(coef, bias), atol=1e-12)
        scale = np.array([0.5, 2.0, 0.0])
        grad = rng.standard_normal(datafit.n_coef)
        xg = np.empty_like(out)
        datafit.block_products(grad, block_ptr, xg)
        combined = np.empty(datafit.decision_size)
        datafit.combine(out, xg, scale, 0.3, bias, combined)
        w = np.concatenate([scale[h] * (coef - 0.3 * grad)[block_ptr[h]:block_ptr[h + 1]]
                            for h in range(3)])
        np.testing.assert_allclose(combined, datafit.decision(w, bias), atol=1e-12)

    def test_float32_and_float64_data_agree(self, rng):
        seed = int(rng.integers(1 << 30))
        d64, _ = self.make(np.random.default_rng(seed), dtype=np.float64)
        d32, _ = self.make(np.random.default_rng(seed), dtype=np.float32)
        coef, bias = self.point(rng, d64)
        assert d32.value(d32.decision(coef, bias)) == pytest.approx(
            d64.value(d64.decision(coef, bias)), rel=1e-5)


class PenaltyContract:
    """Checks every penalty must pass.  Subclasses set ``make()``."""

    def make(self):
        raise NotImplementedError

    block_ptr = np.array([0, 2, 2, 5, 9])

    def test_value_is_zero_at_zero_and_nonnegative(self, rng):
        penalty = self.make()
        assert penalty.value(np.zeros(9), self.block_ptr) == 0.0
        assert penalty.value(rng.standard_normal(9), self.block_ptr) >= 0.0

    @pytest.mark.parametrize("step", [1e-3, 0.3, 10.0])
    def test_prox_satisfies_its_optimality_condition(self, rng, step):
        """w = prox(u) iff 0 in (w - u) / step + dOmega(w)."""
        penalty = self.make()
        u = rng.standard_normal(9) * 3
        w, scale = penalty.prox(u, step, self.block_ptr)
        residual = penalty.subdiff_distance(w, (w - u) / step, self.block_ptr)
        assert np.max(residual) < 1e-9 * max(1.0, np.abs(u).max() / step)
        if penalty.block_radial:
            for h in range(len(self.block_ptr) - 1):
                sl = slice(self.block_ptr[h], self.block_ptr[h + 1])
                np.testing.assert_allclose(w[sl], scale[h] * u[sl], atol=1e-14)

    def test_prox_is_nonexpansive(self, rng):
        penalty = self.make()
        u, v = rng.standard_normal(9), rng.standard_normal(9)
        wu, _ = penalty.prox(u, 0.7, self.block_ptr)
        wv, _ = penalty.prox(v, 0.7, self.block_ptr)
        assert np.linalg.norm(wu - wv) <= np.linalg.norm(u - v) * (1 + 1e-12)

    def test_prox_minimises_its_objective(self, rng):
        penalty = self.make()
        u = rng.standard_normal(9)
        w, _ = penalty.prox(u, 0.5, self.block_ptr)

        def model(x):
            return 0.5 * np.sum((x - u) ** 2) + 0.5 * penalty.value(x, self.block_ptr)

        for _ in range(20):
            assert model(w) <= model(w + 1e-3 * rng.standard_normal(9)) + 1e-12

    def test_prox_1d_agrees_with_prox_when_defined(self, rng):
        penalty = self.make()
        if getattr(penalty, "prox_1d", None) is None:
            pytest.skip("not separable: no 1-D prox")
        u = rng.standard_normal(9)
        w, _ = penalty.prox(u, 0.4, np.arange(10))
        for j in range(9):
            assert penalty.prox_1d(u[j], 0.4, j) == pytest.approx(w[j], abs=1e-15)


class SolverContract:
    """Checks every solver must pass on every (loss, K) it supports.

    Subclasses set ``solve(datafit, block_ptr, **kwargs)`` and ``cases``.
    """

    cases = [("logistic", 2), ("squared-hinge", 2), ("logistic", 4),
             ("squared-hinge", 4)]

    def solve(self, datafit, block_ptr, **kwargs):
        raise NotImplementedError

    def problem(self, rng, loss, n_classes):
        contract = DatafitContract()
        contract.loss_name, contract.n_classes = loss, n_classes
        datafit, X = contract.make(rng, n=60, p=8)
        return datafit, np.array([0, 3, 8]) * datafit.n_outputs

    def test_reaches_the_optimality_conditions(self, rng):
        from ultrafs.solvers.penalties import L21Squared

        for loss, n_classes in self.cases:
            datafit, block_ptr = self.problem(rng, loss, n_classes)
            result = self.solve(datafit, block_ptr, tol=1e-14, max_iter=20000)
            d = np.empty(datafit.decision_size)
            datafit.value_derivative(datafit.decision(result.coef, result.bias), d)
            grad = datafit.gradient(d)
            scale = max(1.0, np.linalg.norm(grad))
            kkt = np.max(L21Squared().subdiff_distance(result.coef, grad, block_ptr))
            assert kkt / scale < 1e-4, (loss, n_classes)
            assert np.max(np.abs(datafit.bias_gradient(d))) / scale < 1e-4

    def test_history_is_monotone(self, rng):
        for loss, n_classes in self.cases:
            datafit, block_ptr = self.problem(rng, loss, n_classes)
            result = self.solve(datafit, block_ptr, tol=1e-10, max_iter=500)
            assert np.all(np.diff(result.history) <= 1e-12 * abs(result.history[0]))

    def test_warm_start_from_the_solution_stops_at_once(self, rng):
        for loss, n_classes in self.cases:
            datafit, block_ptr = self.problem(rng, loss, n_classes)
            first = self.solve(datafit, block_ptr, tol=1e-13, max_iter=20000)
            again = self.solve(datafit, block_ptr, tol=1e-6, coef0=first.coef,
                               bias0=first.bias, lipschitz0=first.lipschitz)
            assert again.n_iter <= 3
            assert again.objective <= first.objective * (1 + 1e-9)

    def test_missing_capabilities_are_named(self, rng):
        from ultrafs.solvers.penalties import Penalty

        class NoProx(Penalty):
            prox = None
            block_radial = False

            def value(self, coef, block_ptr):
                return 0.0

        datafit, block_ptr = self.problem(rng, "logistic", 2)
        with pytest.raises(ParameterError, match="prox"):
            self.solve(datafit, block_ptr, penalty=NoProx())
