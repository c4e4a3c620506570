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


# ------------------------------------------------------------------------
# The registry contract: every registered solver, through the one interface
# ------------------------------------------------------------------------
def _binary_datafit(rng, loss, n=60, p=8, C=1.3):
    X = random_csc(rng, n, p)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    operator = CSCOperator(X.indptr, X.indices, X.data, n, 1)
    return Datafit(get_loss(loss, "binary"), operator, y, C)


def fgm_problem(rng, loss="logistic", n_classes=2):
    """FGM's subproblem: a datafit and the l2,1-squared penalty over two blocks."""
    from ultrafs.solvers.penalties import L21Squared
    from ultrafs.solvers.subproblem import Problem

    contract = DatafitContract()
    contract.loss_name, contract.n_classes = loss, n_classes
    datafit, _ = contract.make(rng, n=60, p=8)
    return Problem(datafit, L21Squared(), np.array([0, 3, 8]) * datafit.n_outputs)


def l1_problem(rng, loss="logistic", fit_intercept=False, ratio=0.3):
    """An l1 problem (datafit + L1) at ``ratio`` times its ``lam_max``."""
    from ultrafs.solvers.l1_problem import L1Problem

    datafit = _binary_datafit(rng, loss)
    lam = ratio * L1Problem(datafit, 1.0, fit_intercept).lam_max()
    return L1Problem(datafit, lam, fit_intercept)


def minimax_problem(rng):
    """MSLR's reduced problem on 40 rows, 9 columns, three constraints."""
    from ultrafs.solvers.smoothing_cd import ConstraintHull, LogisticRows, MinimaxProblem

    n, p = 40, 9
    X = sp.csr_matrix(rng.standard_normal((n, p)) * (rng.random((n, p)) < 0.6))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    constraints = (np.array([0, 1, 2]), np.array([3, 4, 5]), np.array([1, 6, 7, 8]))
    return MinimaxProblem(LogisticRows(X.indptr, X.indices, X.data, y, 1.0),
                          ConstraintHull(constraints))


def irls_problem(rng, r=2.0, p=1.0, lam=3.0):
    """GSR-FS's problem on 30 x 8 dense data, two outputs (convex: r >= 1, p = 1)."""
    from ultrafs.solvers.gram_operators import DenseGramOperator
    from ultrafs.solvers.irls import IRLSProblem, L2pRows, L2rDatafit

    X = rng.standard_normal((30, 8))
    Y = np.where(rng.random((30, 2)) < 0.5, -1.0, 1.0)
    return IRLSProblem(L2rDatafit(DenseGramOperator(X), Y, r, 1e-8, True),
                       L2pRows(lam, p, 1e-10))


def independent_certificate(problem, result):
    """The certificate's value recomputed by the test from the datafit and the
    penalty at the returned point (no value of the solver's is read but the
    point, and the quantities its definition names: MSLR's weights ``d``,
    IRLS's gradient scale ``grad0``)."""
    from ultrafs.solvers.irls import IRLSProblem, LIVE_ROW_RTOL
    from ultrafs.solvers.l1_problem import L1Problem
    from ultrafs.solvers.smoothing_cd import MinimaxProblem
    from ultrafs.solvers.subproblem import Problem

    kind = result.certificate.kind
    fit_intercept = True
    if isinstance(problem, L1Problem) and kind == "kkt_ratio":   # APG on an l1 problem
        from ultrafs.solvers.registry import as_subproblem

        problem, fit_intercept = as_subproblem(problem)
    if isinstance(problem, Problem):                         # kkt_ratio
        d = problem.datafit
        bias = -np.asarray(result.intercept) if np.ndim(result.intercept) else -result.intercept
        f = d.decision(result.coef, bias)
        der = np.empty(d.decision_size)
        d.value_derivative(f, der)
        grad = d.gradient(der)
        dist = np.max(problem.penalty.subdiff_distance(result.coef, grad, problem.block_ptr),
                      initial=0.0)
        if fit_intercept:
            dist = max(dist, float(np.linalg.norm(np.atleast_1d(d.bias_gradient(der)))))
        bp = problem.block_ptr
        scale = max(np.linalg.norm(grad[bp[h]:bp[h + 1]]) for h in range(len(bp) - 1))
        return dist / scale
    if isinstance(problem, L1Problem):
        d, lam, w = problem.datafit, problem.lam, result.coef
        f = d.decision(w, -result.intercept)
        der = np.empty(d.n)
        d.value_derivative(f, der)
        grad = d.gradient(der)
        if kind == "kkt_residual":
            res = np.where(w != 0, np.abs(grad + lam * np.sign(w)),
                           np.maximum(0.0, np.abs(grad) - lam))
            return max(float(np.max(res)), abs(float(d.bias_gradient(der))))
        assert kind == "duality_gap" and not problem.fit_intercept
        primal = d.value(f) + lam * np.sum(np.abs(w))
        norm = np.max(np.abs(grad))
        theta = 1.0 if norm <= lam else lam / norm
        dual = d.loss.dual_value(d.y, f, theta, d.C, d.sample_weight)
        return (primal - dual) / abs(primal)
    if isinstance(problem, MinimaxProblem):                  # duality_gap
        d = problem.datafit
        X = sp.csr_matrix((d.data, d.indices, d.indptr))
        a = result.alpha
        c = X.T @ (a * d.y)
        C = d.C
        G = float(np.sum(a * np.log(a / C) + (C - a) * np.log((C - a) / C)))
        upper = max(0.5 * float(np.sum(c[S] ** 2)) for S in problem.penalty.constraints) + G
        v = result.d * c
        np.testing.assert_allclose(v, result.coef, rtol=1e-10, atol=1e-12)
        primal = (0.5 * float(np.sum(result.d * c * c))
                  + C * float(np.sum(np.logaddexp(0.0, -d.y * (X @ v)))))
        return max(upper + primal, 0.0) / abs(primal)
    if isinstance(problem, IRLSProblem):                     # stationarity
        d, pen = problem.datafit, problem.penalty
        X = d.op.X
        W, b = result.coef, result.intercept
        E = X @ W + b - d.Y
        s1 = (d.r / 2) * (np.sum(E * E, axis=1) + d.eps) ** ((d.r - 2) / 2)
        w2 = np.sum(W * W, axis=1)
        s2 = (pen.p / 2) * (w2 + result.eps_penalty) ** ((pen.p - 2) / 2)
        grad = 2 * X.T @ (s1[:, None] * E) + 2 * pen.lam * s2[:, None] * W
        grad_b = 2 * (s1[:, None] * E).sum(axis=0) if d.fit_intercept else np.zeros(0)
        norms = np.sqrt(w2)
        live = norms > LIVE_ROW_RTOL * norms.max()
        return float(np.sqrt(np.sum(grad[live] ** 2) + np.sum(grad_b ** 2))) / result.grad0
    raise AssertionError(f"no independent certificate for {type(problem).__name__}")


def problem_objective(problem, result):
    """The objective at the returned point, computed by the test."""
    from ultrafs.solvers.irls import IRLSProblem
    from ultrafs.solvers.l1_problem import L1Problem
    from ultrafs.solvers.smoothing_cd import MinimaxProblem
    from ultrafs.solvers.subproblem import Problem

    if isinstance(problem, Problem):
        bias = -np.asarray(result.intercept) if np.ndim(result.intercept) else -result.intercept
        f = problem.datafit.decision(result.coef, bias)
        return problem.datafit.value(f) + problem.penalty.value(result.coef,
                                                                 problem.block_ptr)
    if isinstance(problem, L1Problem):
        f = problem.datafit.decision(result.coef, -result.intercept)
        return problem.datafit.value(f) + problem.lam * float(np.sum(np.abs(result.coef)))
    if isinstance(problem, MinimaxProblem):
        return result.primal
    if isinstance(problem, IRLSProblem):
        d, pen = problem.datafit, problem.penalty
        E = d.op.X @ result.coef + result.intercept - d.Y
        return (float(np.sum((np.sum(E * E, axis=1) + d.eps) ** (d.r / 2)))
                + pen.lam * float(np.sum((np.sum(result.coef ** 2, axis=1)
                                          + result.eps_penalty) ** (pen.p / 2))))
    raise AssertionError(type(problem).__name__)


class RegistryContract:
    """Checks every registered solver must pass on the problems it fits.

    Subclasses (``tests/test_solver_registry.py``; the "add a loss" recipe)
    set ``binary_losses``, the losses whose problems are built; the test
    module parametrises ``solver_name`` over the registry.
    """

    binary_losses = ("logistic", "squared-hinge")
    #: certificate tolerance per certificate kind
    tols = {"kkt_ratio": 1e-5, "kkt_residual": 1e-7, "duality_gap": 1e-7,
            "stationarity": 1e-6}
    #: SGD-C reaches a loose gap only (no guarantee: the paper's)
    loose = {"sgd": 0.1, "smoothing-cd": 1e-6}

    def candidate_problems(self, rng):
        """Every problem kind, for every loss of ``binary_losses``."""
        problems = []
        for loss in self.binary_losses:
            problems += [fgm_problem(rng, loss), l1_problem(rng, loss),
                         l1_problem(rng, loss, fit_intercept=True)]
        if "logistic" in self.binary_losses:
            problems += [fgm_problem(rng, "logistic", 3), minimax_problem(rng),
                         irls_problem(rng)]
        return problems

    def fitting(self, rng, entry):
        problems = [pb for pb in self.candidate_problems(rng) if entry.fits(pb)]
        return [pb for pb in problems
                if not (entry.certificate == "duality_gap"
                        and getattr(pb, "fit_intercept", False)
                        and entry.name not in ("smoothing-cd",))] or problems

    def tol(self, entry):
        return self.loose.get(entry.name, self.tols[entry.certificate])

    def run(self, pb, entry, **kwargs):
        from ultrafs.solvers.registry import solve

        kwargs.setdefault("tol", self.tol(entry))
        if entry.name == "sgd":
            # a slower decay of the step than the paper's 2 per epoch, which
            # can freeze SGD-C above a 10% gap on the squared hinge
            kwargs.setdefault("max_iter", 2000)
            kwargs.setdefault("decay", 1.05)
        elif entry.name == "irls":
            kwargs.setdefault("max_iter", 3000)
        elif entry.name not in ("smoothing-cd",):
            kwargs.setdefault("max_iter", 20000)
        return solve(pb, entry.name, **kwargs)

    @staticmethod
    def certified(pb, result):
        """The problem and the result the certificate speaks of: the two-stage
        scheme's is its last stage's, on the active columns at ``lam2``."""
        if getattr(result, "stage2", None) is not None:
            from ultrafs.solvers.l1_problem import restrict_problem

            return restrict_problem(pb, result.active).with_lam(result.lam2), result.stage2
        return pb, result

    def entry(self, solver_name):
        from ultrafs.solvers.registry import SOLVERS

        return SOLVERS[solver_name]

    def test_result_type_and_certificate(self, rng, solver_name):
        from ultrafs.solvers.certificate import Certificate, SolverResult

        entry = self.entry(solver_name)
        problems = self.fitting(rng, entry)
        if not problems:
            pytest.skip(f"{solver_name} fits none of {self.binary_losses}")
        for pb in problems:
            result = self.run(pb, entry)
            assert isinstance(result, SolverResult), type(result)
            pb, result = self.certified(pb, result)
            cert = result.certificate
            assert isinstance(cert, Certificate) and cert.kind == entry.certificate
            assert cert.passed and cert.value <= cert.tol, (solver_name, cert)
            assert np.all(np.isfinite(result.coef)) and isinstance(result.history, list)
            assert int(result.n_iter) >= 0
            assert result.objective == pytest.approx(problem_objective(pb, result),
                                                     rel=1e-9, abs=1e-12)
            value = independent_certificate(pb, result)
            # the test's value of the same measure, at the same point
            assert value <= cert.tol * (1 + 1e-3) + 1e-12, (solver_name, value, cert)

    def reference_objective(self, pb):
        """A tight solve by another solver (or, for IRLS, scipy's L-BFGS)."""
        from ultrafs.solvers.irls import IRLSProblem
        from ultrafs.solvers.l1_problem import L1Problem
        from ultrafs.solvers.registry import solve
        from ultrafs.solvers.smoothing_cd import MinimaxProblem

        if isinstance(pb, L1Problem):
            if pb.fit_intercept and pb.datafit.loss.name == "logistic":
                return solve(pb, "l1-path", tol=1e-10).objective
            return solve(pb, "apg", tol=1e-10, max_iter=100000).objective
        if isinstance(pb, MinimaxProblem):
            return solve(pb, "smoothing-cd", tol=1e-10).primal
        if isinstance(pb, IRLSProblem):
            from scipy.optimize import minimize

            d, pen = pb.datafit, pb.penalty
            X, (n, p), c = d.op.X, d.op.X.shape, d.Y.shape[1]
            start = solve(pb, "irls", tol=1e-3)
            eps_p = start.eps_penalty

            def J(z):
                W, b = z[:p * c].reshape(p, c), z[p * c:]
                E = X @ W + b - d.Y
                return (np.sum((np.sum(E * E, 1) + d.eps) ** (d.r / 2))
                        + pen.lam * np.sum((np.sum(W * W, 1) + eps_p) ** (pen.p / 2)))
            z0 = np.concatenate([start.coef.ravel(), start.intercept])
            return minimize(J, z0, method="L-BFGS-B",
                            options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10000}).fun
        other = "newton" if pb.datafit.loss.second_order else "apg"
        return solve(pb, other, tol=1e-10, max_iter=100000).objective

    def test_objective_agrees_with_a_reference(self, rng, solver_name):
        entry = self.entry(solver_name)
        for pb in self.fitting(rng, entry):
            pb, result = self.certified(pb, self.run(pb, entry))
            ref = self.reference_objective(pb)
            gap_bound = 2 * self.tol(entry) if entry.certificate == "duality_gap" else 1e-5
            assert result.objective <= ref * (1 + gap_bound) + 1e-9, (solver_name,
                                                                       result.objective, ref)
            assert result.objective >= ref * (1 - gap_bound) - 1e-9, (
                solver_name, result.objective, ref)

    def test_warm_start_from_the_solution_stops_at_once(self, rng, solver_name):
        entry = self.entry(solver_name)
        for pb in self.fitting(rng, entry):
            first = self.run(pb, entry)
            options = {"min_iter": 1} if solver_name == "irls" else {}
            again = self.run(pb, entry, start=first, **options)
            assert again.certificate.passed
            # the first certificate check: FISTA checks every 10 iterations,
            # two-stage restarts stage 1 only (stage 2 starts from stage 1's
            # point again), SGD-C's steps restart (no more epochs than the
            # cold start), IRLS one reweighting
            limit = {"irls": 2, "fista": 10, "mfista": 10, "mfista-hessian": 10,
                     "sgd": first.n_iter}.get(solver_name, 3)
            if solver_name == "two-stage":
                limit += 0 if first.stage2 is None else first.stage2.n_iter
            assert again.n_iter <= limit, (solver_name, again.n_iter)
            slack = self.tol(entry) if solver_name in ("sgd", "smoothing-cd") else 1e-9
            assert again.objective <= first.objective * (1 + slack) + 1e-12

    def test_refuses_a_problem_it_does_not_fit(self, rng, solver_name):
        from ultrafs.solvers.registry import solve

        entry = self.entry(solver_name)
        others = [pb for pb in self.candidate_problems(rng) + [object()]
                  if not entry.fits(pb)]
        assert others
        for pb in others[:3]:
            with pytest.raises(ParameterError, match="does not fit") as info:
                solve(pb, solver_name)
            assert "\n" not in str(info.value)
