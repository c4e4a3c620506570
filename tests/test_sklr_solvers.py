"""Acceptance tests of seed 001's l1 solver suite (the digest's §A6, T2-T11).

``F(w, b) = C Σ s_i l(y_i, (Φ w)_i - b) + lam ||w||_1`` solved by FISTA,
multi-scale FISTA (scalings (7) "min" and (8) "hessian"), CGD and SGD-C,
compared with things computed another way (``tests/sklr_problems.py``):
scikit-learn's liblinear on the same basis, numpy objectives, gradients and
``lam_max`` formulas, and numpy re-implementations of FISTA's Algorithm 1
and SGD-C's Algorithm 4 that replay the solvers' runs step by step.

T1 (random-feature accuracy) and T12 (streamed products = in-memory ones)
are tests of the bases, in ``tests/test_kernel_bases.py``.

Figures quoted in comments were measured on this suite's seeded problems
(numpy 2, scikit-learn 1.9.1); "T3 problem" is the 1000 x 300 RFF basis of
:func:`sklr_problems.rff_split`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
import scipy.sparse as sp

from sklr_problems import (RATIOS, imbalanced, liblinear, make_problem, np_gradient,
                           np_kkt, np_lam_max, np_objective, replay_fista, rff_split,
                           scaled_gaussian)
from ultrafs.errors import ParameterError
from ultrafs.solvers.cgd import cgd
from ultrafs.solvers.datafits import Datafit
from ultrafs.solvers.fista import fista
from ultrafs.solvers.l1_problem import DenseOperator, L1Problem, restrict_problem
from ultrafs.solvers.l1_solvers import L1_SOLVERS, l1_solver, solve_l1
from ultrafs.solvers.losses import get_loss
from ultrafs.solvers.operators import CSCOperator
from ultrafs.solvers.sgd_cumulative import sgd_cumulative
from ultrafs.solvers.two_stage import two_stage

#: the deterministic solvers of T3 by test id: (registry name, options)
EXACT = {
    "fista": ("fista", {}),
    "mfista-min": ("mfista", {}),
    "mfista-hessian": ("mfista", {"scaling": "hessian"}),
    "cgd": ("cgd", {}),
}
#: the paper's FISTA: mu only shrinks, no restart (Algorithm 1 as printed)
PAPER = {"grow": False, "restart": False}


def solve(problem, name, **options):
    """Run the solver of :data:`EXACT` (or ``"sgd"``) through :func:`solve_l1`."""
    if name == "sgd":
        return solve_l1(problem, "sgd", **options)
    registry, extra = EXACT[name]
    return solve_l1(problem, registry, **extra, **options)


# ------------------------------------------------------------------ T3 problem
@lru_cache(maxsize=None)
def t3(fit_intercept):
    """The T3 problem (dense Φ) with ``lam = 1`` and its ``lam_max``."""
    _, Z, y, _, _ = rff_split()
    problem = make_problem(Z, y, fit_intercept=fit_intercept)
    return problem, problem.lam_max()


@lru_cache(maxsize=None)
def t3_reference(fit_intercept, ratio):
    """liblinear on the T3 problem: ``(lam, w, b, F)``."""
    _, Z, y, _, _ = rff_split()
    lam = ratio * t3(fit_intercept)[1]
    w, b = liblinear(Z, y, lam, fit_intercept=fit_intercept)
    return lam, w, b, np_objective(Z, y, w, b, lam)


@lru_cache(maxsize=None)
def t3_solution(name, fit_intercept, ratio, tol=1e-6, **options):
    problem, lm = t3(fit_intercept)
    return solve(problem.with_lam(ratio * lm), name, tol=tol, max_iter=30000, **options)


@lru_cache(maxsize=None)
def t3_optimum(fit_intercept, ratio):
    """A tight CGD optimum (relative gap <= 1e-9)."""
    sol = t3_solution("cgd", fit_intercept, ratio, tol=1e-9)
    assert sol.converged
    return sol


# ===================================================================== T2
def _t2_cases():
    cases = []
    for data in ("rff", "imbalanced"):
        for fit_intercept in (False, True):
            for name in (*EXACT, "sgd"):
                # SGD-C returns the certified zero model at lam >= lam_max
                # (before: one nonzero, -0.0186 without / -0.144 with intercept)
                marks = ()
                cases.append(pytest.param(data, fit_intercept, name, marks=marks,
                                          id=f"{data}-{'b' if fit_intercept else 'nob'}-{name}"))
    return cases


def _t2_data(data):
    if data == "rff":
        _, Z, y, _, _ = rff_split()
        return Z, y
    return imbalanced()


@pytest.mark.parametrize("data", ["rff", "imbalanced"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_t2_lam_max_formulas(data, fit_intercept):
    Phi, y = _t2_data(data)
    problem = make_problem(Phi, y, fit_intercept=fit_intercept)
    lm = problem.lam_max()
    assert lm == pytest.approx(np_lam_max(Phi, y, fit_intercept), rel=1e-12)
    if not fit_intercept:
        assert lm == pytest.approx(0.5 * np.max(np.abs(Phi.T @ y)), rel=1e-12)
    # the zero model is optimal at lam_max: its certificate says so
    cert = problem.with_lam(lm).certificate(np.zeros(Phi.shape[1]),
                                            problem.start()[1])
    assert abs(cert.gap) <= 1e-12 * cert.primal and cert.kkt <= 1e-12 * lm
    if data == "imbalanced":
        assert np.mean(y > 0) == 0.2
        n, n_pos = len(y), np.sum(y > 0)
        # the paper's text swaps N+ and N-: a different (wrong) value here
        swapped = np.max(np.abs(Phi.T @ np.where(y > 0, n_pos / n, -(n - n_pos) / n)))
        other = np_lam_max(Phi, y, not fit_intercept)
        assert abs(swapped - lm) > 0.1 * lm and abs(other - lm) > 0.1 * lm


@pytest.mark.parametrize("data,fit_intercept,name", _t2_cases())
def test_t2_zero_at_lam_max(data, fit_intercept, name):
    Phi, y = _t2_data(data)
    problem = make_problem(Phi, y, fit_intercept=fit_intercept)
    lm = problem.lam_max()
    sol = solve(problem.with_lam(lm * (1 + 1e-6)), name)
    assert sol.nnz == 0 and np.all(sol.coef == 0.0)


@pytest.mark.parametrize("data", ["rff", "imbalanced"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("name", list(EXACT))
def test_t2_nonzero_below_lam_max(data, fit_intercept, name):
    # SGD-C is left out: with its stochastic steps it stays at 0 at
    # 0.99 lam_max on the imbalanced problem (measured, every eta0 tried)
    Phi, y = _t2_data(data)
    problem = make_problem(Phi, y, fit_intercept=fit_intercept)
    sol = solve(problem.with_lam(0.99 * problem.lam_max()), name)
    assert sol.converged and sol.nnz >= 1


# ================================================================ T3, T4
@pytest.mark.parametrize("fit_intercept", [False, True], ids=["nob", "b"])
@pytest.mark.parametrize("ratio", RATIOS)
@pytest.mark.parametrize("name", list(EXACT))
def test_t3_t4_agreement_with_liblinear(name, ratio, fit_intercept):
    _, Z, y, _, _ = rff_split()
    lam, w_sk, b_sk, F_sk = t3_reference(fit_intercept, ratio)
    sol = t3_solution(name, fit_intercept, ratio)
    assert sol.converged and sol.certificate.rel_gap <= 1e-6
    F = np_objective(Z, y, sol.coef, sol.bias, lam)
    assert sol.objective == pytest.approx(F, rel=1e-12)
    # T3: the digest's 1e-6 (no intercept); liblinear's intercept is
    # penalised (by lam / 1e4), a looser reference: 1e-8 asked.  Measured
    # <= 5.3e-11 (cgd, 0.5 lam_max) without and <= 1.4e-11 with intercept.
    assert abs(F - F_sk) / F_sk <= (1e-8 if fit_intercept else 1e-6)
    # the gap bounds the error: F - F* <= gap, and F_sk >= F*
    assert F - F_sk <= sol.certificate.gap * (1 + 1e-9) + 1e-12 * F
    # supports agree apart from coefficients below 1e-6
    differ = (sol.coef != 0) != (w_sk != 0)
    assert np.all(np.abs(sol.coef[differ]) < 1e-6) and np.all(np.abs(w_sk[differ]) < 1e-6)
    # T4: every checked gap is >= 0 up to rounding, and decreasing on a log
    # scale up to noise (measured: a checked gap is at most 2.7 x the
    # smallest one before it; here 10 x allowed)
    checked = [(h["gap"], h["objective"]) for h in sol.history if "gap" in h]
    assert checked
    gaps = np.array([g for g, _ in checked])
    assert all(g >= -1e-12 * abs(F_h) for g, F_h in checked)
    assert np.all(gaps[1:] <= 10 * np.minimum.accumulate(gaps)[:-1])
    assert gaps[-1] <= 1e-6 * abs(checked[-1][1])


@pytest.mark.parametrize("ratio", RATIOS)
def test_t4_gap_at_the_liblinear_solution(ratio):
    problem, _ = t3(False)
    lam, w_sk, b_sk, F_sk = t3_reference(False, ratio)
    cert = problem.with_lam(lam).certificate(w_sk, b_sk)
    assert cert.primal == pytest.approx(F_sk, rel=1e-12)
    # measured 2.1e-13 .. 4.1e-12 (digest: <= 1e-8)
    assert -1e-12 <= cert.rel_gap <= 1e-8
    # with an intercept liblinear penalises it: its point is 1e-4 lam off
    # stationarity in b, the gap certifies only ~1.2e-6 (measured)
    problem_b, _ = t3(True)
    lam_b, w_b, b_b, _ = t3_reference(True, ratio)
    cert_b = problem_b.with_lam(lam_b).certificate(w_b, b_b)
    assert 0 <= cert_b.rel_gap <= 1e-5


def test_t3_streamed_rff_operator_gives_the_same_solution():
    space, Z, y, _, _ = rff_split()
    lm = t3(False)[1]
    streamed = make_problem(space.operator(), y, 0.2 * lm)
    assert streamed.lam_max() == pytest.approx(lm, rel=1e-12)
    sol = cgd(streamed)
    dense = t3_solution("cgd", False, 0.2)
    assert sol.converged
    assert sol.objective == pytest.approx(dense.objective, rel=1e-10)
    np.testing.assert_allclose(sol.coef, dense.coef, atol=1e-6)


# ===================================================================== T5
@pytest.mark.parametrize("fit_intercept", [False, True], ids=["nob", "b"])
@pytest.mark.parametrize("ratio", RATIOS)
@pytest.mark.parametrize("name", list(EXACT))
def test_t5_kkt_at_convergence(name, ratio, fit_intercept):
    # at the T3 stop (gap 1e-6) CGD's on-support residual is up to 1.8e-5 lam
    # (measured); the KKT bounds are asserted at a relative gap of 1e-8, where
    # the measured worst cases are |g_j + lam sign w_j| = 1.75e-7 lam on the
    # support and |g_j| = 0.9952 lam off it
    _, Z, y, _, _ = rff_split()
    sol = t3_solution(name, fit_intercept, ratio, tol=1e-8)
    lam = ratio * t3(fit_intercept)[1]
    assert sol.converged
    off, on = np_kkt(Z, y, sol.coef, sol.bias, lam)
    assert off <= 1 + 1e-6
    assert on <= 1e-5
    g_b = abs(np_gradient(Z, y, sol.coef, sol.bias)[1]) if fit_intercept else 0.0
    assert g_b <= 1e-5 * lam
    # the solver's own residual is numpy's
    expected = max(on * lam, max(0.0, off - 1) * lam, g_b)
    assert abs(sol.certificate.kkt - expected) <= 1e-9 * lam


# ===================================================================== T6
@pytest.mark.parametrize("fit_intercept", [False, True], ids=["nob", "b"])
@pytest.mark.parametrize("data", ["rff", "scaled"])
def test_t6_cgd_objective_never_increases(data, fit_intercept):
    Phi, y = (rff_split()[1:3] if data == "rff" else scaled_gaussian())
    problem = make_problem(Phi, y, fit_intercept=fit_intercept)
    lam = 0.1 * problem.lam_max()
    sol = cgd(problem.with_lam(lam), tol=1e-9)
    F = np.array([h["objective"] for h in sol.history])
    # rises of the recorded F are the rounding of its sums: measured <= 3.0e-15
    assert np.all(np.diff(F) <= 1e-14 * np.abs(F[:-1]))
    assert F[-1] < F[0]
    if not fit_intercept:
        # independently: the iterate after k iterations, F in numpy (with an
        # intercept the returned point takes the best bias, not the iterate's)
        values = [np_objective(Phi, y, cgd(problem.with_lam(lam), max_iter=k, tol=0.0).coef,
                               0.0, lam) for k in range(1, 16)]
        assert np.all(np.diff(values) <= 1e-14 * np.abs(values[:-1]))


def _t6_cases():
    cases = []
    for data, steps in (("rff", 120), ("scaled", 200)):
        for fit_intercept in (False, True):
            for scaling in ("identity", "min", "hessian"):
                for mode in ("paper", "default"):
                    cases.append(pytest.param(
                        data, steps, fit_intercept, scaling, mode,
                        id=f"{data}-{'b' if fit_intercept else 'nob'}-{scaling}-{mode}"))
    return cases


@pytest.mark.parametrize("data,steps,fit_intercept,scaling,mode", _t6_cases())
def test_t6_fista_inequality_9_at_every_accepted_step(data, steps, fit_intercept, scaling,
                                                      mode):
    Phi, y = (rff_split()[1:3] if data == "rff" else scaled_gaussian())
    problem = make_problem(Phi, y, fit_intercept=fit_intercept)
    lam = 0.1 * problem.lam_max()
    options = PAPER if mode == "paper" else {"grow": True, "restart": True}
    # the replay takes the bias as a coordinate of the step (exact_bias=False);
    # the default exact bias is checked by test_fista_cgd_exact_bias_*
    sol = fista(problem.with_lam(lam), scaling=scaling, tol=1e-9, max_iter=steps,
                exact_bias=False, **options)
    out = replay_fista(Phi, y, lam, sol, scaling=scaling, fit_intercept=fit_intercept,
                       n_steps=steps, grow=options["grow"], restart=options["restart"])
    assert out["steps"] == min(steps, sol.n_iter)
    # the replay follows the solver: measured F errors <= 7.3e-14
    assert out["F0_error"] <= 1e-12 and max(out["F_error"]) <= 1e-10
    # (9): f(p) <= f(x) + g'(p - x) + ||p - x||²_H / (2 mu), up to the
    # solver's 1e-15 |f(x)| (measured: <= 1.0e-15)
    assert max(out["excess"]) <= 1.5e-15
    # mu is mu_{k-1} (paper) or mu_{k-1} / eta times a power of eta ...
    assert max(out["ladder"]) <= 1e-9
    # ... the largest one that passes: one rung up failed (9)
    assert all(r > 0.5e-15 for r in out["rejected"])
    if mode == "paper":
        mus = [h["mu"] for h in sol.history if "mu" in h]
        assert np.all(np.diff(mus) <= 0)


# ===================================================================== T7, T8
@lru_cache(maxsize=None)
def _iterations(data, fit_intercept, ratio, scaling, mode, check_every):
    Phi, y = (rff_split()[1:3] if data == "rff" else scaled_gaussian())
    problem = make_problem(Phi, y, fit_intercept=fit_intercept)
    p = problem.with_lam(ratio * problem.lam_max())
    if scaling == "cgd":
        sol = cgd(p, tol=1e-6, check_every=check_every)
    else:
        options = PAPER if mode == "paper" else {}
        sol = fista(p, scaling=scaling, tol=1e-6, max_iter=40000, check_every=check_every,
                    **options)
    assert sol.converged
    return sol.n_iter


@pytest.mark.parametrize("fit_intercept", [False, True], ids=["nob", "b"])
@pytest.mark.parametrize("mode", ["paper", "default"])
@pytest.mark.parametrize("ratio", RATIOS)
def test_t7_multiscale_benefit_on_rescaled_columns(ratio, mode, fit_intercept):
    # measured, to a 1e-6 gap (plain / min / hessian), no intercept:
    #   paper FISTA   0.5: 340/20/20 (1/17)  0.2: 1620/40/40 (1/40)  0.1: 6200/60/60 (1/103)
    #   our defaults  0.5:  60/10/10 (1/6)   0.2:  230/20/20 (1/11)  0.1:  400/20/20 (1/20)
    # (with intercept about the same); the digest's claim is <= 1/3
    args = ("scaled", fit_intercept, ratio)
    plain = _iterations(*args, "identity", mode, 10)
    for scaling in ("min", "hessian"):
        assert 3 * _iterations(*args, scaling, mode, 10) <= plain, scaling


@pytest.mark.parametrize("ratio", RATIOS)
def test_t7_multiscale_no_loss_on_rff(ratio):
    # measured on the T3 problem (plain / min / hessian, 1e-6 gap):
    #   paper FISTA   0.5: 1540/380/380  0.2: 5250/1300/1300  0.1: 6790/5220/5240
    #   our defaults  0.5:   50/40/40    0.2:   60/100/80     0.1:  130/130/120
    # The digest's "<= 1.1 x plain FISTA" holds against the paper's FISTA;
    # against our default FISTA (mu may grow, restarts) mfista takes up to
    # 1.67 x (min) / 1.33 x (hessian) at 0.2 lam_max: asserted <= 2 x there.
    for scaling in ("min", "hessian"):
        paper = _iterations("rff", False, ratio, scaling, "paper", 10)
        assert paper <= 1.1 * _iterations("rff", False, ratio, "identity", "paper", 10)
        default = _iterations("rff", False, ratio, scaling, "default", 10)
        assert default <= 2 * _iterations("rff", False, ratio, "identity", "default", 10)


@pytest.mark.parametrize("ratio", RATIOS)
def test_t8_cgd_needs_fewer_iterations_than_fista(ratio):
    # measured on the T3 problem, iterations to a 1e-6 gap:
    #   CGD 59 / 73 / 183 (0.5 / 0.2 / 0.1 lam_max)
    #   paper FISTA 1540 / 5250 / 6790 (ratio 26 / 72 / 37)
    #   our default FISTA 50 / 60 / 130: CGD takes 1.2-1.4 x *more* there
    #   (the lead measured 31/188/663 vs 900/4690/10720 and 30/170/360 on
    #   another RFF problem)
    cgd_iter = _iterations("rff", False, ratio, "cgd", None, 1)
    paper = _iterations("rff", False, ratio, "identity", "paper", 10)
    assert 5 * cgd_iter < paper


# ===================================================================== T9
# SGD-C's tests are in tests/test_sklr_sgd.py


# ==================================================================== T10
@pytest.mark.parametrize("fit_intercept", [False, True], ids=["nob", "b"])
@pytest.mark.parametrize("solver", ["cgd", "mfista"])
def test_t10_two_stage(solver, fit_intercept):
    # measured (cgd, no intercept): nnz 8->7, 15->14, 21->19; ||w2||/||w1|| =
    # 3.5 / 2.6 / 2.1; held-out accuracy 0.770->0.818, 0.834->0.848,
    # 0.852->0.850: mean +2.0 points (+2.6 with intercept)
    _, Z, y, Zt, yt = rff_split()
    problem, lm = t3(fit_intercept)
    before, after = [], []
    for ratio in RATIOS:
        p = problem.with_lam(ratio * lm)
        res = solve_l1(p, solver, two_stage_ratio=0.1)
        w1, w2 = res.stage1.coef, res.coef
        assert res.stage1.converged and res.stage2.converged
        assert res.lam2 == pytest.approx(0.1 * p.lam)
        assert set(np.flatnonzero(w2)) <= set(np.flatnonzero(w1)) == set(res.active)
        restricted = restrict_problem(p, res.active).with_lam(res.lam2)
        A = res.active
        F1 = np_objective(Z[:, A], y, w1[A], res.stage1.bias, res.lam2)
        F2 = np_objective(Z[:, A], y, w2[A], res.bias, res.lam2)
        assert F2 == pytest.approx(res.stage2.objective, rel=1e-12)
        assert restricted.value(w1[A], restricted.decision(w1[A], res.stage1.bias)) == \
            pytest.approx(F1, rel=1e-12)
        assert F2 <= F1
        assert np.linalg.norm(w2) >= np.linalg.norm(w1)
        before.append(np.mean(np.sign(Zt @ w1 - res.stage1.bias) == yt))
        after.append(np.mean(np.sign(Zt @ w2 - res.bias) == yt))
    assert np.mean(after) >= np.mean(before)


def test_t10_two_stage_with_an_empty_first_stage():
    problem, lm = t3(False)
    res = two_stage(problem.with_lam(2 * lm), cgd, ratio=0.1)
    assert res.stage2 is None and len(res.active) == 0 and not res.coef.any()


# ==================================================================== T11
@pytest.fixture(scope="module")
def kernel_problem():
    from sklearn.datasets import make_classification
    from sklearn.metrics.pairwise import rbf_kernel

    from ultrafs.features.rbf import RBFKernelFeatures
    from ultrafs.store.memory import InMemoryStore

    X, labels = make_classification(n_samples=300, n_features=5, n_informative=3,
                                    n_redundant=1, random_state=1)
    y = np.where(labels == 1, 1.0, -1.0)
    space = RBFKernelFeatures(InMemoryStore(X, y))
    K = rbf_kernel(X, gamma=1.0 / space.sigma ** 2)
    return space, K, y


def test_t11_rbf_operator_is_the_kernel_matrix(kernel_problem):
    space, K, _ = kernel_problem
    op = space.operator()
    np.testing.assert_allclose(op.columns(np.arange(K.shape[1])), K, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("ratio", RATIOS)
def test_t11_exact_kernel_agrees_with_liblinear(kernel_problem, ratio):
    space, K, y = kernel_problem
    dense = make_problem(K, y)
    lam = ratio * dense.lam_max()
    w_sk, _ = liblinear(K, y, lam)
    F_sk = np_objective(K, y, w_sk, 0.0, lam)
    solutions = [cgd(dense.with_lam(lam)), fista(dense.with_lam(lam), scaling="min"),
                 fista(dense.with_lam(lam))]
    for sol in solutions:
        assert sol.converged
        F = np_objective(K, y, sol.coef, 0.0, lam)
        assert abs(F - F_sk) / F_sk <= 1e-6, sol.solver
    # the problem over the RBF space's own operator certifies the same point
    # (solving through it is the same arithmetic; its products are slow on
    # a busy 2-core machine, 12 s for one CGD run)
    kernel = make_problem(space.operator(), y, lam)
    assert kernel.lam_max() == pytest.approx(dense.lam_max(), rel=1e-12)
    cert = kernel.certificate(solutions[0].coef, 0.0)
    assert cert.primal == pytest.approx(solutions[0].objective, rel=1e-12)
    assert 0 <= cert.rel_gap <= 1e-6


# ================================================================= extras
def _sparse_problem(seed=4, n=300, m=50):
    rng = np.random.default_rng(seed)
    X = sp.random(n, m, density=0.2, format="csc", random_state=seed)
    X.data = rng.uniform(0.2, 2.0, X.nnz)
    X = sp.csc_matrix(X.multiply(np.arange(m) != 7))        # an empty column
    X.sort_indices()
    beta = np.zeros(m)
    beta[:6] = rng.normal(0, 3, 6)
    y = np.where(X @ beta + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("fit_intercept", [False, True], ids=["nob", "b"])
@pytest.mark.parametrize("name", [*EXACT, "sgd"])
def test_csc_operator_gives_the_dense_solutions(name, fit_intercept):
    X, y = _sparse_problem()
    csc = CSCOperator(X.indptr.astype(np.int64), X.indices, X.data, X.shape[0])
    a = make_problem(csc, y, fit_intercept=fit_intercept)
    b = make_problem(X.toarray(), y, fit_intercept=fit_intercept)
    assert a.lam_max() == pytest.approx(b.lam_max(), rel=1e-12)
    lam = 0.2 * a.lam_max()
    options = {"eta0": 5.0} if name == "sgd" else {"tol": 1e-8}
    sa, sb = (solve(p.with_lam(lam), name, **options) for p in (a, b))
    assert sa.objective == pytest.approx(sb.objective, rel=1e-10)
    np.testing.assert_allclose(sa.coef, sb.coef, atol=1e-6 * max(1, np.abs(sb.coef).max()))
    if name != "sgd":
        assert sa.converged and sb.converged


@pytest.mark.parametrize("name", list(EXACT))
def test_float32_data(name):
    X, y = _sparse_problem(seed=9)
    data32 = X.data.astype(np.float32)
    op32 = CSCOperator(X.indptr.astype(np.int64), X.indices, data32, X.shape[0])
    op64 = CSCOperator(X.indptr.astype(np.int64), X.indices, data32.astype(np.float64),
                       X.shape[0])
    p32, p64 = make_problem(op32, y), make_problem(op64, y)
    assert p32.lam_max() == pytest.approx(p64.lam_max(), rel=1e-6)
    lam = 0.1 * p64.lam_max()
    s32, s64 = (solve(p.with_lam(lam), name, tol=1e-8) for p in (p32, p64))
    assert s32.converged and s64.converged
    # the same float32 values: the same problem, up to float32 products
    assert s32.objective == pytest.approx(s64.objective, rel=1e-6)
    F = np_objective(X.toarray().astype(np.float32).astype(np.float64), y, s32.coef, 0.0, lam)
    assert F == pytest.approx(s64.objective, rel=1e-6)
    # a float32 dense matrix is taken as float64
    dense = DenseOperator(X.toarray().astype(np.float32))
    assert dense.matrix.dtype == np.float64


@pytest.fixture(scope="module")
def weighted_problem():
    rng = np.random.default_rng(21)
    n, m = 300, 30
    X = rng.normal(size=(n, m))
    y = np.where(X[:, :4] @ np.array([2.0, -1.5, 1.0, 0.5]) + rng.logistic(size=n) > 0,
                 1.0, -1.0)
    s = rng.uniform(0.2, 3.0, n)
    return X, y, s


@pytest.mark.parametrize("fit_intercept", [False, True], ids=["nob", "b"])
@pytest.mark.parametrize("name", list(EXACT))
def test_sample_weights(weighted_problem, name, fit_intercept):
    X, y, s = weighted_problem
    problem = make_problem(X, y, fit_intercept=fit_intercept, sample_weight=s)
    lam = 0.1 * problem.lam_max()
    sol = solve(problem.with_lam(lam), name, tol=1e-8)
    assert sol.converged
    F = np_objective(X, y, sol.coef, sol.bias, lam, sample_weight=s)
    assert sol.objective == pytest.approx(F, rel=1e-12)
    gaps = [(h["gap"], h["objective"]) for h in sol.history if "gap" in h]
    assert all(g >= -1e-12 * abs(F_h) for g, F_h in gaps)
    w_sk, b_sk = liblinear(X, y, lam, fit_intercept=fit_intercept, sample_weight=s)
    F_sk = np_objective(X, y, w_sk, b_sk, lam, sample_weight=s)
    assert abs(F - F_sk) / F_sk <= (1e-8 if fit_intercept else 1e-6)
    # integer weights are repeated rows
    if not fit_intercept:
        k = np.arange(len(y)) % 3 + 1
        weighted = make_problem(X, y, lam, sample_weight=k.astype(float))
        repeated = make_problem(np.repeat(X, k, axis=0), np.repeat(y, k), lam)
        a, b = (solve(p, name, tol=1e-9) for p in (weighted, repeated))
        assert a.objective == pytest.approx(b.objective, rel=1e-8)


@pytest.mark.parametrize("fit_intercept", [False, True], ids=["nob", "b"])
def test_squared_hinge(fit_intercept):
    X, y = scaled_gaussian(n=300, m=40, seed=13)
    problem = make_problem(X, y, fit_intercept=fit_intercept, loss="squared-hinge")
    lm = problem.lam_max()
    if not fit_intercept:
        assert lm == pytest.approx(np.max(np.abs(X.T @ y)), rel=1e-12)
    for name in EXACT:
        assert solve(problem.with_lam(lm * (1 + 1e-6)), name).nnz == 0
    lam = 0.1 * lm
    sols = {name: solve(problem.with_lam(lam), name, tol=1e-6) for name in EXACT}
    ref = sols["cgd"]
    for name, sol in sols.items():
        assert sol.converged and 0 <= sol.certificate.rel_gap <= 1e-6, name
        gaps = [(h["gap"], h["objective"]) for h in sol.history if "gap" in h]
        assert all(g >= -1e-12 * abs(F_h) for g, F_h in gaps)
        F = np_objective(X, y, sol.coef, sol.bias, lam, loss="squared-hinge")
        assert sol.objective == pytest.approx(F, rel=1e-12)
        assert abs(sol.objective - ref.objective) <= 1e-6 * ref.objective, name
    # liblinear's l1 squared-hinge SVM: ||w||_1 + C Σ max(0, 1 - m)², C = 1/(2 lam)
    w_sk, b_sk = liblinear(X, y, lam, fit_intercept=fit_intercept, loss="squared-hinge")
    F_sk = np_objective(X, y, w_sk, b_sk, lam, loss="squared-hinge")
    assert abs(ref.objective - F_sk) / F_sk <= 1e-6


@pytest.mark.xfail(strict=True, reason="mfista (default: mu tries mu/eta first) stalls at a "
                   "2.8e-8 relative gap on the squared hinge; the paper's mfista converges")
def test_mfista_squared_hinge_tight_gap():
    # Measured (0.1 lam_max, scalings min / hessian, no intercept): the paper's
    # mfista (grow=False) reaches 1e-8 in 40 iterations; ours stays at
    # 2.8e-8 / 3.0e-8 for 3000 iterations (with intercept 3.3e-8 / 3.5e-8)
    # with F at the optimum to 1e-16 and |w - w*| ~ 2e-9: every iteration
    # rejects mu = 2 and accepts mu = 1, a step (9) cannot judge once the
    # change of F is below its 1e-15 |f| slack.  Plain FISTA converges (420).
    X, y = scaled_gaussian(n=300, m=40, seed=13)
    problem = make_problem(X, y, loss="squared-hinge")
    p = problem.with_lam(0.1 * problem.lam_max())
    assert fista(p, scaling="min", tol=1e-8, max_iter=1000, grow=False).converged
    assert fista(p, tol=1e-8, max_iter=1000).converged
    sol = fista(p, scaling="min", tol=1e-8, max_iter=1000)
    assert sol.converged, sol.certificate.rel_gap


def test_cgd_certifies_tight_gaps():
    # On the rescaled-column problem at 0.5 lam_max liblinear's solution
    # certifies a 7.1e-13 relative gap.  CGD once stopped improving at
    # 1.4497e-10 (every Armijo trial failing from iteration ~100): its Armijo
    # change was a difference of per-sample losses whose rounding exceeded
    # sigma alpha Delta; it is now log1p(sigma(-m) expm1(-dm)).
    X, y = scaled_gaussian()
    problem = make_problem(X, y)
    p = problem.with_lam(0.5 * problem.lam_max())
    w_sk, _ = liblinear(X, y, p.lam)
    assert p.certificate(w_sk, 0.0).rel_gap <= 1e-11
    sol = cgd(p, tol=1e-11, max_iter=300)
    assert sol.converged, (sol.certificate.rel_gap, sol.info["trials"])


# ====================================================== bad parameters
@pytest.fixture(scope="module")
def small():
    X, y = imbalanced(n=60, m=8)
    return make_problem(X, y, 1.0)


def test_registry(small):
    assert set(L1_SOLVERS) == {"fista", "mfista", "cgd", "sgd"}
    assert l1_solver("cgd") is cgd
    assert solve_l1(small, "mfista").solver == "mfista-min"
    assert solve_l1(small, "mfista", scaling="hessian").solver == "mfista-hessian"
    assert solve_l1(small, "fista").solver == "fista"
    # ratio 1 is allowed (the paper calls it pointless, not wrong)
    res = solve_l1(small.with_lam(0.3 * small.lam_max()), "cgd", two_stage_ratio=1.0)
    assert res.lam2 == pytest.approx(0.3 * small.lam_max())


@pytest.mark.parametrize("call,match", [
    (lambda p: solve_l1(p, "newton"), "unknown l1 solver"),
    (lambda p: solve_l1(p, None), "unknown l1 solver"),
    (lambda p: l1_solver(["cgd"]), "unknown l1 solver"),
    (lambda p: fista(p, eta=0.0), "eta"),
    (lambda p: fista(p, eta=1.0), "eta"),
    (lambda p: fista(p, eta=1.5), "eta"),
    (lambda p: fista(p, eta=-0.5), "eta"),
    (lambda p: fista(p, scaling="diagonal"), "scaling"),
    (lambda p: solve_l1(p, "mfista", scaling="bogus"), "scaling"),
    (lambda p: solve_l1(p, "cgd", scaling="min"), "scaling"),
    (lambda p: two_stage(p, cgd, ratio=0.0), "ratio"),
    (lambda p: two_stage(p, cgd, ratio=1.5), "ratio"),
    (lambda p: two_stage(p, cgd, ratio=-0.1), "ratio"),
    (lambda p: solve_l1(p, "cgd", two_stage_ratio=0.0), "ratio"),
    (lambda p: solve_l1(p, "fista", two_stage_ratio=2.0), "ratio"),
    (lambda p: solve_l1(p, "sgd", two_stage_ratio=0.1), "two-stage"),
    (lambda p: cgd(p, sigma=1.0), "sigma"),
    (lambda p: cgd(p, upsilon0=0.0), "upsilon0"),
    (lambda p: sgd_cumulative(p, decay=1.0), "decay"),
    (lambda p: sgd_cumulative(p, eta0=-1.0), "eta0"),
    (lambda p: sgd_cumulative(p, eta0="fast"), "eta0"),
    (lambda p: fista(p, max_iter=0), "max_iter"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_bad_parameters_raise(small, call, match):
    with pytest.raises(ParameterError, match=match):
        call(small)


def test_multiclass_datafit_is_refused():
    rng = np.random.default_rng(0)
    X = sp.csc_matrix(rng.uniform(size=(30, 4)))
    op = CSCOperator(X.indptr.astype(np.int64), X.indices, X.data, 30, n_outputs=3)
    datafit = Datafit(get_loss("logistic", "multiclass"), op,
                      np.arange(30, dtype=np.int64) % 3, 1.0)
    with pytest.raises(ParameterError, match="binary datafit"):
        L1Problem(datafit, 1.0)


def test_solvers_refuse_a_wrong_warm_start(small):
    for name in (*EXACT, "sgd"):
        with pytest.raises(ParameterError, match="w0"):
            solve(small, name, w0=np.zeros(3))


# ============================================================ exact bias
@pytest.mark.parametrize("name", ["fista", "mfista", "cgd"])
def test_fista_cgd_exact_bias_reaches_the_joint_optimum(name):
    """With an intercept the solvers eliminate the bias exactly (default): the
    same certified optimum as the bias taken as a coordinate, every checked
    iterate at its best bias, and a progress callback seeing every record."""
    Phi, y = rff_split()[1:3]
    problem = make_problem(Phi, y, fit_intercept=True)
    p = problem.with_lam(0.1 * problem.lam_max())
    solve = l1_solver(name)
    seen = []
    # FISTA's gap stalls near 2e-9 in either mode (rounding of F's sums)
    exact = solve(p, tol=1e-7, max_iter=20000, callback=seen.append)
    joint = solve(p, tol=1e-7, max_iter=20000, exact_bias=False)
    assert exact.converged and joint.converged
    assert exact.info.get("exact_bias", True)
    assert seen == exact.history[-len(seen):] and seen[-1]["rel_gap"] <= 1e-7
    # both within 1e-7 (relative) of the optimum
    assert abs(exact.certificate.primal - joint.certificate.primal) \
        <= 2e-7 * abs(joint.certificate.primal)
    # measured at 1e-7, exact / joint: fista 110 / 1,530, mfista 120 / 190,
    # cgd 160 / 178 iterations
    if name == "fista":
        assert 5 * exact.n_iter <= joint.n_iter
    # the bias is its exact best: dF/db = 0 up to the Newton stop
    assert abs(np_gradient(Phi, y, exact.coef, exact.bias)[1]) <= 1e-8 * len(y)
    assert abs(exact.certificate.best_bias - exact.bias) <= 1e-12 * (1 + abs(exact.bias))
