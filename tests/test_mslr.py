"""Minimax sparse logistic regression (seed 000): acceptance tests T1-T9.

Digest: ``shared/notes/mslr-slores.md`` Part A (A10).  Notation: n samples,
m features, r (= B) features per constraint, ``c(α) = X'(α ⊙ y)``,
``f̃_t(α) = ½‖c_{S_t}‖² + G̃(α)``; the references (dense NumPy, SciPy's
brentq, a damped Newton for ℓ2-LR, FGM's APG) are in
``tests/mslr_reference.py``.

* T1  the 1-D Newton-bisection against brentq; the paper's Fig. 2 instance.
* T2  p', p'', the softmax weights and ∇f(α, q) against finite differences;
      Proposition 2.
* T3  one constraint: ℓ2-LR without bias (scikit-learn).
* T4  T = 2, 3: the certificate; the T = 2 value against a search over μ.
* T5  the reduced problem against FGM's APG subproblem on the same sets.
* T6  the worst-case pass: top-r of |X'y|, ties, every store layout.
* T7  the cutting plane's invariants and stops.
* T8  scaled-down synthetic 1 against ℓ1-LR (soft, behavioural).
* T9  Leukemia smoke test.

Plus the kernels (``cd_sweep``, ``entropy``, ``primal_value``,
``constraint_halves``) against dense NumPy, input conversion, and the
retraining.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from ultrafs.errors import ParameterError
from ultrafs.features import make_feature_space
from ultrafs.kernels.mslr import (box_floor, cd_sweep, constraint_halves, entropy,
                                  newton_bisection, one_d_derivatives, one_d_value,
                                  primal_value, softmax_weights)
from ultrafs.methods.mslr import fit_mslr, retrain
from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.solvers.smoothing_cd import (constraint_membership, smoothed_value,
                                          solve_minimax_smoothing)
from ultrafs.store.memory import InMemoryStore
from ultrafs.store.writers.zarr_writer import write_store

try:
    from mslr_reference import (FIG2, best_mu_two, correlations, entropy_ref,
                                fgm_subproblem, halves, l2lr_newton, loss_ref,
                                one_d_root, p_star, plain_newton, smoothed_grad_ref,
                                softmax, top_r)
except ImportError:  # pragma: no cover - run from the repository root
    from tests.mslr_reference import (FIG2, best_mu_two, correlations, entropy_ref,
                                      fgm_subproblem, halves, l2lr_newton, loss_ref,
                                      one_d_root, p_star, plain_newton,
                                      smoothed_grad_ref, softmax, top_r)

MAX_NEWTON = 100   # the solver's cap on 1-D derivative evaluations


# ----------------------------------------------------------------- helpers
def problem(n, m, k, seed, noise=0.5, scale=2.0):
    """Gaussian X (n × m), k informative columns (the first k), ±1 labels."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m))
    w = np.zeros(m)
    w[:k] = scale * rng.standard_normal(k)
    y = np.where(X @ w + noise * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def csr_of(X):
    R = sp.csr_matrix(X, dtype=np.float64)
    R.sort_indices()
    return R


def solve_on(X, y, constraints, C, **kwargs):
    """solve_minimax_smoothing on the union of the constraints' columns;
    returns (solution, union columns, constraints as positions)."""
    union = np.unique(np.concatenate([np.asarray(s) for s in constraints]))
    pos = {int(j): k for k, j in enumerate(union)}
    local = [np.array([pos[int(j)] for j in s], dtype=np.int64) for s in constraints]
    R = csr_of(X[:, union])
    sol = solve_minimax_smoothing(R.indptr, R.indices, R.data, y, local, C, **kwargs)
    return sol, union, local


def row_terms(X, y, i, c, constraints):
    """a_t = ‖x_{i,S_t}‖², b_t = y_i x_{i,S_t}'c_{S_t} of sample i."""
    a = np.array([float(np.sum(X[i, s] ** 2)) for s in constraints])
    b = np.array([y[i] * float(X[i, s] @ c[s]) for s in constraints])
    return a, b


def fd5(f, x, h):
    """Five-point central difference."""
    return (-f(x + 2 * h) + 8 * f(x + h) - 8 * f(x - h) + f(x - 2 * h)) / (12 * h)


def fit(store, y, **kwargs):
    features = make_feature_space(store)
    result = fit_mslr(features, y, **kwargs)
    return result, np.asarray(features.feature_ids(result.keys), dtype=np.int64)


# ============================================================= T1: 1-D solver
def t1_instances(count, seed):
    """Random instances of the digest's T1 ranges: T ∈ {1,2,5}, a ∈ [0,10],
    b ∈ [−50,50], sq ∈ [0, 1e4], q ∈ {0.01,1,100,1e4}, α_i within 1e-12 of
    0 or of C."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        T = (1, 2, 5)[k % 3]
        q = (0.01, 1.0, 100.0, 1e4)[(k // 3) % 4]
        C = (1.0, 10.0)[(k // 12) % 2]
        a = rng.uniform(0.0, 10.0, T)
        b = rng.uniform(-50.0, 50.0, T)
        sq = rng.uniform(0.0, 1e4, T) * 10.0 ** rng.uniform(-4, 0)
        d = 10.0 ** rng.uniform(-16, -12)
        c1, c2 = (d, C - d) if rng.random() < 0.5 else (C - d, d)
        yield a, b, sq, c1, c2, q


def test_t1_newton_bisection_matches_brentq():
    lam = np.empty(5)
    worst = 0.0
    for a, b, sq, c1, c2, q in t1_instances(600, 0):
        s = c1 + c2
        alpha, alpha_c, z, n_iter = newton_bisection(a, b, sq, c1, c2, q, 1e-12, MAX_NEWTON,
                                                     lam[:len(a)])
        what = f"a={a}, b={b}, sq={sq}, c1={c1!r}, c2={c2!r}, q={q}"
        assert alpha > 0 and alpha_c > 0, what
        assert abs(alpha + alpha_c - s) <= 2 * np.spacing(s), what
        assert n_iter <= MAX_NEWTON
        ref, ref_c = one_d_root(a, b, sq, c1, c2, q)
        err = max(abs(alpha - ref), abs(alpha_c - ref_c)) / s
        worst = max(worst, err)
        assert err <= 1e-9, what
        # the step returned is the change of α_i
        assert z == pytest.approx(alpha - c1, abs=4 * np.spacing(s))
    print(f"T1: max |α − α_brentq| / C over 600 instances = {worst:.2e}")


@pytest.mark.parametrize("start", [1e-200, "floor"])
def test_t1_newton_bisection_from_the_box_floor(start):
    """From the box floor (where a margin above ~700 parks a sample) back to an
    interior root in a few steps: the step in log Z, geometric bisection."""
    C = 10.0
    c1 = box_floor(C) if start == "floor" else start
    lam = np.empty(1)
    for b in (0.0, 5.0):
        # one constraint, a = 0: p'(z) = log(α/(C−α)) + b, root α = C σ(−b)
        alpha, alpha_c, _, used = newton_bisection(np.zeros(1), np.array([b]), np.zeros(1),
                                                c1, C - c1, 1.0, 1e-12, MAX_NEWTON, lam)
        assert alpha == pytest.approx(C * expit(-b), rel=1e-9)
        assert used <= 30


def test_t1_fig2_instance_and_plain_newton():
    a, b, sq, c1, c2 = FIG2["a"], FIG2["b"], FIG2["sq"], FIG2["c1"], FIG2["c2"]
    lam = np.empty(2)
    expected = {10.0: 0.4786209737, 100.0: 0.4595059378}
    for q, value in expected.items():
        alpha, alpha_c, z, _ = newton_bisection(a, b, sq, c1, c2, q, 1e-12, MAX_NEWTON, lam)
        assert abs(alpha - value) <= 1e-9
        assert abs(alpha_c - (c1 + c2 - value)) <= 1e-9
        ref, _ = one_d_root(a, b, sq, c1, c2, q)
        assert abs(alpha - ref) <= 1e-12

    def plain(q):
        return plain_newton(lambda z: one_d_derivatives(a, b, sq, c1, c2, q, z), c1, c2)

    z, converged, steps = plain(10.0)
    assert converged and steps <= 6
    assert z == pytest.approx(expected[10.0] - c1, abs=1e-9)
    # at q = 100 plain Newton does not converge in 100 steps (the paper's
    # point: hence the bisection safeguard)
    z, converged, steps = plain(100.0)
    assert not converged


# ============================================================ T2: derivatives
def t2_instances(count, seed):
    rng = np.random.default_rng(seed)
    for k in range(count):
        T = (1, 2, 5)[k % 3]
        q = (0.01, 1.0, 10.0)[(k // 3) % 3]
        C = 5.0
        c1 = rng.uniform(0.5, 4.5)
        a = rng.uniform(0.0, 10.0, T)
        b = rng.uniform(-5.0, 5.0, T)
        sq = rng.uniform(0.0, 10.0, T)
        z = rng.uniform(-0.8 * c1, 0.8 * (C - c1))
        yield a, b, sq, c1, C - c1, q, z


def test_t2_one_d_derivatives_and_weights_by_finite_differences():
    for a, b, sq, c1, c2, q, z in t2_instances(90, 1):
        d1, d2 = one_d_derivatives(a, b, sq, c1, c2, q, z)
        fd1 = fd5(lambda x: one_d_value(a, b, sq, c1, c2, q, x), z, 1e-3)
        fd2 = fd5(lambda x: one_d_derivatives(a, b, sq, c1, c2, q, x)[0], z, 1e-3)
        np.testing.assert_allclose(d1, fd1, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(d2, fd2, rtol=1e-6, atol=1e-8)
        assert d2 > 0
        # the weights: λ_t = ∂p/∂sq_t and softmax(q (sq + h(z)))
        lam = np.empty(len(a))
        softmax_weights(q, sq, a, b, z, lam)
        np.testing.assert_allclose(lam, softmax(q * (sq + (0.5 * a * z + b) * z)),
                                   rtol=1e-13, atol=1e-15)
        assert lam.sum() == pytest.approx(1.0, abs=1e-14)
        for t in range(len(a)):
            def shifted(x, t=t):
                moved = sq.copy()
                moved[t] = x
                return one_d_value(a, b, moved, c1, c2, q, z)
            np.testing.assert_allclose(lam[t], fd5(shifted, sq[t], 1e-3), rtol=1e-6,
                                       atol=1e-9)


def kernel_smoothed(X, y, alpha, C, constraints, q):
    """f(α, q) from the kernels: constraint_halves, entropy, smoothed_value."""
    member_ptr, member_idx = constraint_membership(constraints, X.shape[1])
    sq = constraint_halves(X.T @ (alpha * y), member_ptr, member_idx, len(constraints))
    return smoothed_value(sq, entropy(alpha, C - alpha, C), q)


def test_t2_smoothed_gradient_by_finite_differences():
    X, y = problem(30, 9, 4, seed=2)
    X *= 0.3
    C = 4.0
    constraints = [np.array([0, 1, 2]), np.array([2, 3, 4, 5]), np.array([6, 7, 8])]
    member_ptr, member_idx = constraint_membership(constraints, X.shape[1])
    R = csr_of(X)
    rng = np.random.default_rng(3)
    for q in (0.01, 1.0, 20.0):
        alpha = rng.uniform(0.2, 0.8 * C, len(y))
        grad, lam = smoothed_grad_ref(X, y, alpha, C, constraints, q)
        c = X.T @ (alpha * y)
        for i in range(len(y)):
            def f_i(x, i=i):
                moved = alpha.copy()
                moved[i] = x
                return kernel_smoothed(X, y, moved, C, constraints, q)
            fd = fd5(f_i, alpha[i], 1e-4)
            np.testing.assert_allclose(grad[i], fd, rtol=1e-6, atol=1e-7)
            # p'(0) of sample i's 1-D problem is ∂_i f(α, q)
            a, b = row_terms(X, y, i, c, constraints)
            sq = halves(c, constraints)
            d1, _ = one_d_derivatives(a, b, sq, alpha[i], C - alpha[i], q, 0.0)
            np.testing.assert_allclose(d1, grad[i], rtol=1e-10, atol=1e-11)
            # cd_sweep measures |∂_i f| before updating i
            al, al_c, cc = alpha.copy(), C - alpha, c.copy()
            sq_k = constraint_halves(cc, member_ptr, member_idx, 3)
            violation, _ = cd_sweep(R.indptr.astype(np.int64), R.indices.astype(np.int64),
                                    R.data, y, member_ptr, member_idx, al, al_c, cc, sq_k,
                                    q, 1e-12, MAX_NEWTON, np.array([i], dtype=np.int64))
            np.testing.assert_allclose(violation, abs(grad[i]), rtol=1e-10, atol=1e-11)
        np.testing.assert_allclose(lam, softmax(q * halves(c, constraints)), rtol=1e-14)


def test_t2_proposition_2():
    X, y = problem(40, 12, 4, seed=4)
    C = 10.0
    constraints = [np.arange(0, 4), np.arange(4, 8), np.arange(8, 12), np.array([0, 5, 9])]
    rng = np.random.default_rng(5)
    qs = np.geomspace(1e-3, 1e6, 60)
    for _ in range(5):
        alpha = rng.uniform(0.01, C - 0.01, len(y))
        f_max = float(np.max(halves(correlations(X, y, alpha), constraints))) \
            + entropy_ref(alpha, C - alpha, C)
        values = np.array([kernel_smoothed(X, y, alpha, C, constraints, q) for q in qs])
        slack = 1e-12 * abs(f_max)
        assert np.all(values >= f_max - slack)
        assert np.all(values <= f_max + math.log(len(constraints)) / qs + slack)
        assert np.all(np.diff(values) <= slack)


# ================================================= T3: one constraint = ℓ2-LR
@pytest.mark.parametrize("C", [1.0, 10.0])
def test_t3_one_constraint_is_l2_logistic_regression(C):
    from sklearn.linear_model import LogisticRegression

    X, y = problem(120, 15, 6, seed=6)
    S1 = np.array([0, 2, 3, 5, 7, 11])
    # the gap bounds the dual error quadratically (σ = 4/C): α to 1e-6·C
    # needs a relative gap near 1e-13
    sol, union, local = solve_on(X, y, [S1], C, tol=1e-12)
    assert sol.certified and sol.rel_gap <= 1e-12
    np.testing.assert_array_equal(sol.mu, [1.0])
    np.testing.assert_array_equal(sol.d, np.ones(len(S1)))
    # v = c on S_1
    np.testing.assert_array_equal(sol.coef, sol.c)
    clf = LogisticRegression(C=C, fit_intercept=False, tol=1e-10, max_iter=10000)
    clf.fit(X[:, S1], y)
    w = clf.coef_.ravel()
    objective = 0.5 * float(w @ w) + loss_ref(X[:, S1], y, w, C)
    assert sol.primal == pytest.approx(objective, rel=1e-8)
    assert -sol.upper == pytest.approx(objective, rel=1e-8)
    np.testing.assert_allclose(sol.alpha, C * expit(-y * (X[:, S1] @ w)), rtol=0,
                               atol=1e-6 * C)
    np.testing.assert_allclose(sol.alpha + sol.alpha_c, C, rtol=1e-15)
    # and the exact optimum (Newton) to 1e-9
    w_ref, value = l2lr_newton(X[:, S1], y, C)
    assert sol.primal == pytest.approx(value, rel=1e-10)
    np.testing.assert_allclose(sol.coef, w_ref, rtol=0, atol=1e-6 * np.abs(w_ref).max())


# =================================================== T4: the certificate
def certificate_ref(X, y, C, sol, union, constraints):
    """upper and P(v) recomputed by NumPy from the returned α, μ."""
    XU = X[:, union]
    c = correlations(XU, y, sol.alpha)
    sq = halves(c, constraints)
    upper = float(np.max(sq)) + entropy_ref(sol.alpha, sol.alpha_c, C)
    d = np.zeros(len(union))
    for t, s in enumerate(constraints):
        d[s] += sol.mu[t]
    v = d * c
    primal = 0.5 * float(np.sum(d * c * c)) + loss_ref(XU, y, v, C)
    return upper, primal, sq, d, v


@pytest.mark.parametrize("case", ["T=2 disjoint", "T=2 overlapping", "T=3"])
def test_t4_certificate_and_the_mu_search(case):
    X, y = problem(150, 14, 8, seed=7)
    C = 10.0
    constraints = {"T=2 disjoint": [np.arange(0, 4), np.arange(4, 8)],
                   "T=2 overlapping": [np.array([0, 1, 2, 9]), np.array([2, 3, 4, 5])],
                   "T=3": [np.arange(0, 4), np.arange(4, 8), np.array([1, 8, 10, 12])]}[case]
    sol, union, local = solve_on(X, y, constraints, C)      # the default tol 1e-4
    assert sol.certified
    assert sol.gap <= 1e-3 * abs(sol.primal)
    assert sol.gap == pytest.approx(sol.upper + sol.primal, rel=1e-12, abs=1e-12)
    assert 0 < sol.alpha.min() and 0 < sol.alpha_c.min()
    upper, primal, sq, d, v = certificate_ref(X, y, C, sol, union, local)
    assert sol.upper == pytest.approx(upper, rel=1e-10)
    assert sol.primal == pytest.approx(primal, rel=1e-10)
    np.testing.assert_allclose(sol.sq, sq, rtol=1e-10)
    np.testing.assert_allclose(sol.mu, softmax(sol.q * sq), rtol=1e-8)
    np.testing.assert_allclose(sol.d, d, rtol=1e-12)
    np.testing.assert_allclose(sol.coef, v, rtol=1e-10, atol=1e-12)
    assert sol.d.max() <= 1.0 and sol.d.sum() == pytest.approx(4.0, rel=1e-12)
    # weak duality at the returned weights: −upper ≤ −P*(d_μ)... ≤ P(v)
    d_full = np.zeros(X.shape[1])
    d_full[union] = sol.d
    p_mu, _ = p_star(X, y, C, d_full)
    assert -sol.upper <= p_mu * (1 + 1e-12) and p_mu <= sol.primal * (1 + 1e-12)
    if len(constraints) == 2:
        value, mu = best_mu_two(X, y, C, *constraints)
        # V = max_μ −P*(d_μ): upper ≥ V ≥ −P(v); both within 1e-3
        assert sol.upper >= value - 1e-10 * abs(value)
        assert -sol.primal <= value + 1e-8 * abs(value)
        assert sol.upper == pytest.approx(value, rel=1e-3)
        assert -sol.primal == pytest.approx(value, rel=1e-3)
        print(f"T4 {case}: V = {value:.8g} (μ_1 = {mu:.4f}); upper {sol.upper:.8g}, "
              f"−P(v) {-sol.primal:.8g}, μ̂ = {sol.mu}")


# ================================================== T5: against FGM's APG
def test_t5_reduced_problem_equals_fgm_subproblem():
    X, y = problem(150, 60, 10, seed=3)
    C, r = 10.0, 4
    constraints = [np.array([0, 1, 2, 3]), np.array([4, 5, 6, 7]), np.array([2, 8, 9, 10])]
    # certified to 1e-5: both bounds within 1e-5 of the optimum
    sol, union, local = solve_on(X, y, constraints, C, tol=1e-5)
    assert sol.certified
    fgm, v_fgm, dual = fgm_subproblem(X, y, C, constraints)
    assert fgm.converged
    rel_primal = abs(sol.primal - fgm.objective) / fgm.objective
    rel_upper = abs(-sol.upper - fgm.objective) / fgm.objective
    print(f"T5: |P(v) − F_FGM| / F_FGM = {rel_primal:.2e}, "
          f"|−upper − F_FGM| / F_FGM = {rel_upper:.2e}")
    assert rel_primal <= 1e-4 and rel_upper <= 1e-4
    _assert_same_model_and_next_set(X, y, r, union, sol.coef, sol.alpha, v_fgm, dual)


def _assert_same_model_and_next_set(X, y, r, columns, coef, alpha, v_fgm, dual):
    """MSLR's v equals FGM's (to 1e-3 of its largest weight) and both pick
    the same next constraint."""
    v = np.zeros(X.shape[1])
    v[columns] = coef
    assert np.abs(v - v_fgm).max() <= 1e-3 * np.abs(v_fgm).max()
    next_mslr = top_r(correlations(X, y, alpha) ** 2, r)
    next_fgm = top_r((X.T @ dual) ** 2, r)
    assert set(next_mslr) == set(next_fgm)


def test_t5_cutting_plane_subproblems_equal_fgm():
    X, y = problem(150, 60, 10, seed=8)
    C, r = 10.0, 4
    store = InMemoryStore(X, y)
    result, ids = fit(store, y, B=r, C=C, max_iter=3, tol=0.0, subproblem_tol=1e-5)
    assert len(result.constraints) == 3
    assert all(rec["certified"] for rec in result.history)
    constraints = [ids[s] for s in result.constraints]
    fgm, v_fgm, dual = fgm_subproblem(X, y, C, constraints)
    objective = result.history[-1]["objective"]
    assert objective == pytest.approx(fgm.objective, rel=1e-4)
    assert -result.history[-1]["upper"] == pytest.approx(fgm.objective, rel=1e-4)
    _assert_same_model_and_next_set(X, y, r, ids, result.coef, result.alpha, v_fgm, dual)


# ============================================== T6: the worst-case analysis
def tied_problem():
    """n=60, m=25; column 20 is a copy of column 9 and ties it at the r-th
    place of |X'y| (r = 5); column 2 is a copy of column 17 (a tie inside)."""
    X, y = problem(60, 25, 6, seed=9)
    X[:, 17] = X[:, 2]
    score = np.abs(X.T @ y)
    order = top_r(score, 25)
    r = 5
    boundary = order[r - 1]
    spare = next(j for j in order[::-1] if j not in (2, 17, boundary))
    X[:, spare] = X[:, boundary]
    return X, y, r, boundary, spare


def test_t6_first_constraint_is_top_r_of_xty_with_ties_by_index():
    X, y, r, boundary, spare = tied_problem()
    score = np.abs(X.T @ y)
    assert score[boundary] == score[spare]
    expected = top_r(score, r)
    assert min(boundary, spare) in expected and max(boundary, spare) not in expected
    for C in (10.0, 1.0):           # α constant: any value gives the same S_1
        result, ids = fit(InMemoryStore(X, y), y, B=r, C=C, max_iter=1)
        np.testing.assert_array_equal(ids[result.constraints[0]], expected)


def store_variants(tmp_path, X, y):
    m = X.shape[1]
    variants = {}
    for bs in (1, 7, m):
        variants[f"dense bs={bs}"] = InMemoryStore(X, y, block_size=bs)
        variants[f"csr bs={bs}"] = InMemoryStore(sp.csr_matrix(X), y, block_size=bs)
        variants[f"csc bs={bs}"] = InMemoryStore(sp.csc_matrix(X), y, block_size=bs)
    variants["zarr"] = write_store(tmp_path / "mslr.zarr", X, y, block_nnz=97,
                                   command="test")
    return variants


def test_t6_pass_equals_numpy_for_every_layout(tmp_path):
    X, y, r, _, _ = tied_problem()
    rng = np.random.default_rng(10)
    weights = rng.uniform(0.01, 9.99, len(y)) * y
    expected = (X.T @ weights) ** 2
    for what, store in store_variants(tmp_path, X, y).items():
        features = make_feature_space(store)
        found, _ = worst_case_analysis(features, weights, X.shape[1], scheduler="synchronous")
        ids = np.asarray(features.feature_ids(found.keys))
        np.testing.assert_array_equal(np.sort(ids), np.arange(X.shape[1]), err_msg=what)
        np.testing.assert_allclose(found.scores, expected[ids], rtol=1e-12, err_msg=what)


def test_t6_fit_identical_for_every_layout(tmp_path):
    X, y, r, _, _ = tied_problem()
    reference = None
    runs = [(what, store, None) for what, store in store_variants(tmp_path, X, y).items()]
    # the pass's own block sizes and a threaded scheduler
    runs += [(f"pass bs={bs}", InMemoryStore(X, y), bs) for bs in (1, 7, X.shape[1])]
    for what, store, block_size in runs:
        result, ids = fit(store, y, B=r, C=10.0, max_iter=4, tol=0.0,
                          block_size=block_size,
                          scheduler="threads" if block_size == 7 else "synchronous")
        got = (ids, result.batch_ptr, [ids[s] for s in result.constraints], result.mu,
               result.d, result.coef, result.alpha,
               [rec["objective"] for rec in result.history], result.stop_reason)
        if reference is None:
            reference = got
            assert len(result.constraints) == 4
            continue
        np.testing.assert_array_equal(got[0], reference[0], err_msg=what)
        np.testing.assert_array_equal(got[1], reference[1], err_msg=what)
        for a, b in zip(got[2], reference[2]):
            np.testing.assert_array_equal(a, b, err_msg=what)
        for k in range(3, 8):
            np.testing.assert_array_equal(got[k], reference[k], err_msg=what)
        assert got[8] == reference[8]


# ================================================ T7: the loop's invariants
def test_t7_outer_loop_invariants():
    X, y = problem(120, 40, 8, seed=11)
    r, T_m = 3, 6
    result, ids = fit(InMemoryStore(X, y), y, B=r, C=10.0, max_iter=T_m, tol=0.0)
    history = result.history
    T = len(result.constraints)
    assert T == len(history) == T_m
    assert len(ids) <= r * T and len(np.unique(ids)) == len(ids)
    assert len(result.batch_ptr) == T + 1 and result.batch_ptr[-1] == len(ids)
    assert [rec["n_features"] for rec in history] == list(result.batch_ptr[1:])
    for s in result.constraints:
        assert len(s) == r and len(np.unique(s)) == r
    # the μ-weighted scaling: 0 ≤ d ≤ 1, Σ_j d_j = Σ_t μ_t |S_t| = r
    assert result.mu.sum() == pytest.approx(1.0, abs=1e-12) and result.mu.min() >= 0
    assert result.d.min() >= 0 and result.d.max() <= 1.0 + 1e-15
    assert result.d.sum() == pytest.approx(r, rel=1e-12)
    d = np.zeros(len(ids))
    for t, s in enumerate(result.constraints):
        d[s] += result.mu[t]
    np.testing.assert_allclose(result.d, d, rtol=1e-12)
    # V_T non-decreasing (P*(d_μ) non-increasing): each certified record
    # brackets V_T by [−P(v), upper], upper + P(v) = gap ≤ 1e-4 |P(v)|
    assert all(rec["certified"] for rec in history)
    for prev, cur in zip(history, history[1:]):
        gap_prev = prev["rel_gap"] * abs(prev["objective"])
        gap_cur = cur["rel_gap"] * abs(cur["objective"])
        slack = 1e-6 * abs(prev["objective"])
        assert cur["upper"] >= prev["upper"] - gap_prev - slack
        assert cur["objective"] <= prev["objective"] + gap_cur + slack
        # the new constraint was violated at the previous α
        assert cur["violation"] > 0
    print("T7: V_T brackets", [(round(-h["objective"], 4), round(h["upper"], 4))
                               for h in history])
    # the classifier is d ⊙ c(α) on the cached columns
    c = correlations(X[:, ids], y, result.alpha)
    np.testing.assert_allclose(result.coef, result.d * c, rtol=1e-9, atol=1e-12)
    assert result.active(0.0).all()
    assert result.active(1.0).sum() == 0


def test_t7_stops_on_a_duplicate_set_or_a_small_violation():
    # 5 features and r = 2: the 7th top-2 set repeats one of the first six
    X, y = problem(80, 5, 5, seed=14)
    result, ids = fit(InMemoryStore(X, y), y, B=2, C=10.0, max_iter=10, tol=0.0)
    assert "equals an earlier constraint" in result.stop_reason
    assert len(result.constraints) == 7 < 10
    signatures = [tuple(sorted(ids[s])) for s in result.constraints]
    assert len(set(signatures)) == len(signatures)
    # the top-2 at the final α is one of the constraints
    assert tuple(sorted(top_r(correlations(X, y, result.alpha) ** 2, 2))) in signatures
    # with tol = 1e-3 the violation test ends it earlier
    early, _ = fit(InMemoryStore(X, y), y, B=2, C=10.0, max_iter=10, tol=1e-3)
    assert len(early.constraints) <= len(result.constraints)
    # only r informative (nonzero) columns: the second pass finds S_1 again
    Z = np.zeros((80, 12))
    Z[:, [1, 4, 9]] = X[:, :3]
    result, ids = fit(InMemoryStore(Z, y), y, B=3, C=10.0, max_iter=10, tol=0.0)
    assert len(result.constraints) == 1
    assert sorted(ids) == [1, 4, 9]
    assert "max_iter" not in result.stop_reason


def test_t7_r_at_least_m_is_l2_logistic_regression():
    X, y = problem(100, 6, 6, seed=13)
    C = 10.0
    result, ids = fit(InMemoryStore(X, y), y, B=8, C=C, max_iter=5, subproblem_tol=1e-10)
    assert len(result.constraints) == 1 and len(result.history) == 1
    np.testing.assert_array_equal(np.sort(ids), np.arange(6))
    w_ref, value = l2lr_newton(X, y, C)
    coef = np.zeros(6)
    coef[ids] = result.coef
    np.testing.assert_allclose(coef, w_ref, rtol=0, atol=1e-5 * np.abs(w_ref).max())
    assert result.history[0]["objective"] == pytest.approx(value, rel=1e-9)


# ============================================ kernels against dense NumPy
def small_cached():
    """12 × 6 with an empty column (3) and a zero row (5); overlapping
    constraints."""
    X, y = problem(12, 6, 6, seed=14)
    X[:, 3] = 0.0
    X[5, :] = 0.0
    constraints = [np.array([0, 1, 3]), np.array([1, 2, 4, 5]), np.array([3])]
    return X, y, constraints


def test_cd_sweep_matches_sequential_numpy():
    X, y, constraints = small_cached()
    C, q = 3.0, 2.0
    R = csr_of(X)
    assert R.indptr[6] == R.indptr[5]                      # the zero row
    member_ptr, member_idx = constraint_membership(constraints, X.shape[1])
    rng = np.random.default_rng(15)
    alpha = rng.uniform(0.05, C - 0.05, len(y))
    order = rng.permutation(len(y)).astype(np.int64)
    al, al_c = alpha.copy(), C - alpha
    c = X.T @ (alpha * y)
    sq = constraint_halves(c, member_ptr, member_idx, len(constraints))
    violation, newton = cd_sweep(R.indptr.astype(np.int64), R.indices.astype(np.int64),
                                 R.data, y, member_ptr, member_idx, al, al_c, c, sq, q,
                                 1e-13, MAX_NEWTON, order)
    # the same sweep in NumPy, each coordinate by brentq
    ref, ref_c = alpha.copy(), C - alpha
    worst = 0.0
    for i in order:
        cc = X.T @ (ref * y)
        a, b = row_terms(X, y, i, cc, constraints)
        s_t = halves(cc, constraints)
        lam = softmax(q * s_t)
        worst = max(worst, abs(math.log(ref[i]) - math.log(ref_c[i]) + float(lam @ b)))
        ref[i], ref_c[i] = one_d_root(a, b, s_t, ref[i], ref_c[i], q)
    np.testing.assert_allclose(al, ref, rtol=0, atol=1e-9 * C)
    np.testing.assert_allclose(al_c, ref_c, rtol=0, atol=1e-9 * C)
    assert al[5] == pytest.approx(0.5 * C, abs=1e-12)      # zero row: α = C/2
    assert violation == pytest.approx(worst, rel=1e-9)
    assert newton >= len(y)
    np.testing.assert_allclose(c, X.T @ (al * y), rtol=1e-12, atol=1e-12)
    assert c[3] == 0.0
    np.testing.assert_allclose(sq, halves(X.T @ (al * y), constraints), rtol=1e-10,
                               atol=1e-12)


def test_entropy_constraint_halves_primal_value_against_numpy():
    rng = np.random.default_rng(16)
    C = 10.0
    alpha = rng.uniform(0, C, 50)
    alpha_c = C - alpha
    # extremes: α and C − α given apart, one of them at the box floor or 0
    alpha[:3] = [1e-300, 0.0, C]
    alpha_c[:3] = [C, C, 0.0]
    alpha[3], alpha_c[3] = C - 1e-13, 1e-13
    g = entropy(alpha, alpha_c, C)
    assert g == pytest.approx(entropy_ref(alpha, alpha_c, C), rel=1e-13)
    assert g <= 0
    assert entropy(np.full(4, C / 2), np.full(4, C / 2), C) == pytest.approx(
        4 * C * math.log(0.5), rel=1e-15)
    # constraint_halves with a column in two constraints and one in none
    c = rng.standard_normal(9)
    constraints = [np.array([0, 1, 2]), np.array([2, 3, 4, 8]), np.array([5])]
    member_ptr, member_idx = constraint_membership(constraints, 9)
    np.testing.assert_array_equal(np.diff(member_ptr), [1, 1, 2, 1, 1, 1, 0, 0, 1])
    np.testing.assert_array_equal(member_idx, [0, 0, 0, 1, 1, 1, 2, 1])
    np.testing.assert_allclose(constraint_halves(c, member_ptr, member_idx, 3),
                               halves(c, constraints), rtol=1e-14)
    with pytest.raises(ParameterError):
        constraint_membership([np.array([0, 9])], 9)
    # primal_value: a zero row, an empty column, margins of ±800
    X, y, _ = small_cached()
    v = rng.standard_normal(X.shape[1])
    R = csr_of(X)
    value = primal_value(R.indptr.astype(np.int64), R.indices.astype(np.int64), R.data, y,
                         v, 2.5)
    assert value == pytest.approx(loss_ref(X, y, v, 2.5), rel=1e-13)
    big = np.array([[800.0], [-800.0], [0.0]])
    Rb = csr_of(big)
    value = primal_value(Rb.indptr.astype(np.int64), Rb.indices.astype(np.int64), Rb.data,
                         np.ones(3), np.ones(1), 1.0)
    assert value == pytest.approx(800.0 + math.log(2.0), rel=1e-15)


def test_solver_on_empty_column_and_zero_row_and_float32():
    X, y, constraints = small_cached()
    C = 3.0
    R = csr_of(X)
    sol = solve_minimax_smoothing(R.indptr, R.indices, R.data, y, constraints, C, tol=1e-8)
    assert sol.certified
    # max_t f̃_t is (4/C)-strongly convex: ‖α − α*‖² ≤ gap C / 2, and the
    # zero row's α*_5 is C/2 (its only term is the entropy)
    assert abs(sol.alpha[5] - 0.5 * C) <= math.sqrt(sol.gap * C / 2)
    assert sol.c[3] == 0.0 and sol.coef[3] == 0.0
    # S_3 = {empty column}: ½‖c_{S_3}‖² = 0
    assert sol.sq[2] == 0.0
    # float32 data is converted: the same bits as the float64 copy
    X32 = X.astype(np.float32)
    R32 = sp.csr_matrix(X32)
    R32.sort_indices()
    R64 = sp.csr_matrix(X32.astype(np.float64))
    R64.sort_indices()
    a = solve_minimax_smoothing(R32.indptr.astype(np.int32), R32.indices.astype(np.int32),
                                R32.data, y, constraints, C, tol=1e-8)
    b = solve_minimax_smoothing(R64.indptr, R64.indices, R64.data, y, constraints, C,
                                tol=1e-8)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.primal == b.primal
    # and a float32 store against the float64 store of the same values
    Xs, ys = problem(60, 20, 5, seed=17)
    Xs32 = Xs.astype(np.float32)
    r32, ids32 = fit(InMemoryStore(Xs32, ys), ys, B=3, C=10.0, max_iter=3)
    r64, ids64 = fit(InMemoryStore(Xs32.astype(np.float64), ys), ys, B=3, C=10.0,
                     max_iter=3)
    np.testing.assert_array_equal(ids32, ids64)
    np.testing.assert_allclose(r32.coef, r64.coef, rtol=1e-12)


def test_solver_rejects_bad_input():
    X, y, constraints = small_cached()
    R = csr_of(X)
    args = (R.indptr, R.indices, R.data)
    with pytest.raises(ParameterError):
        solve_minimax_smoothing(*args, y, [], 1.0)
    for C in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ParameterError):
            solve_minimax_smoothing(*args, y, constraints, C)
    with pytest.raises(ParameterError):
        solve_minimax_smoothing(*args, y[:-1], constraints, 1.0)
    with pytest.raises(ParameterError):
        solve_minimax_smoothing(*args, y, constraints, 1.0, alpha0=np.ones(len(y)))
    with pytest.raises(ParameterError):
        fit(InMemoryStore(X, y), np.where(y > 0, 1.0, 0.0), B=2)
    for bad in (dict(B=0), dict(C=0.0), dict(max_iter=0), dict(tol=-1.0),
                dict(subproblem_tol=0.0)):
        with pytest.raises(ParameterError):
            fit(InMemoryStore(X, y), y, **bad)


def test_retrain_auto_is_deterministic():
    X, y = problem(100, 30, 5, seed=18)
    result, ids = fit(InMemoryStore(X, y), y, B=3, C=10.0, max_iter=3)
    first = retrain(result.block, y, C="auto", seed=3)
    again = retrain(result.block, y, C="auto", seed=3)
    np.testing.assert_array_equal(first["coef"], again["coef"])
    assert first["intercept"] == again["intercept"] and first["C"] == again["C"]
    assert first["validation"] == again["validation"]
    assert first["validation"]["seed"] == 3
    assert first["C"] in [pt["C"] for pt in first["validation"]["points"]]
    fixed = retrain(result.block, y, C=5.0, fit_intercept=False)
    assert fixed["intercept"] == 0.0
    # C = 5 without intercept is ℓ2-LR on the selected columns
    w_ref, _ = l2lr_newton(X[:, ids], y, 5.0)
    np.testing.assert_allclose(fixed["coef"], w_ref, rtol=0,
                               atol=1e-4 * np.abs(w_ref).max())
    with pytest.raises(ParameterError):
        retrain(result.block, y, C="best")


def test_mslr_model_of_the_api():
    from ultrafs.api import fit as fit_method

    X, y = problem(100, 30, 5, seed=19)
    labels = np.where(y > 0, 7.0, 3.0)              # any two (numeric) classes
    model = fit_method("mslr", X, labels, B=3, max_iter=3, C=10.0)
    result, ids = fit(InMemoryStore(X, y), y, B=3, C=10.0, max_iter=3)
    assert model.params["method"] == "mslr"
    assert model.params["B"] == 3 and model.params["max_iter"] == 3
    np.testing.assert_array_equal(model.features, ids)
    assert len(model.features) <= 3 * 3
    np.testing.assert_array_equal(model.coef, result.coef)
    assert model.intercept == 0.0
    assert model.params["constraints"] == [list(ids[s]) for s in result.constraints]
    np.testing.assert_allclose(model.params["mu"], result.mu)
    assert model.predictor == "refit" and model.refit["C"] == 5.0
    plain = fit_method("mslr", X, labels, B=3, max_iter=3, C=10.0, refit=False)
    assert plain.predictor == "selection" and plain.refit is None
    report = plain.evaluate_store(InMemoryStore(X, labels))
    assert report["accuracy"] == pytest.approx(np.mean(np.sign(X[:, ids] @ result.coef) == y))
    with pytest.raises(ParameterError):
        fit_method("mslr", X, labels, B=3, refit_C=-1.0)


# ============================================ T8: synthetic 1 against ℓ1-LR
def l1_features_at_count(X, y, k):
    """ℓ1-LR (liblinear, no bias, tol 1e-4) at k features: log C moved by
    regula falsi on log(count) until the support has between k and 1.25k
    features; the k largest |w_j| of that support, and its size."""
    from sklearn.linear_model import LogisticRegression

    target = 1.12 * k
    log_c = math.log10(0.042)            # about 100 features at n = 1000, m = 10000
    below, above = None, None            # (log C, log count) on either side
    for _ in range(12):
        clf = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=10.0 ** log_c,
                                 fit_intercept=False, tol=1e-4)
        w = clf.fit(X, y).coef_.ravel()
        count = np.count_nonzero(w)
        if k <= count <= 1.25 * k:
            return np.argsort(-np.abs(w), kind="stable")[:k], count
        point = (log_c, math.log(max(count, 1)))
        if count < k:
            below = point
        else:
            above = point
        if below is not None and above is not None:
            (x0, f0), (x1, f1) = below, above
            log_c = x0 + (math.log(target) - f0) * (x1 - x0) / (f1 - f0)
        else:                            # count grows about like C^1.5 here
            log_c += (math.log(target) - point[1]) / (1.5 * math.log(10.0))
    raise AssertionError(f"no ℓ1-LR support of {k} to {1.25 * k:.0f} features found")


@pytest.mark.slow
def test_t8_synthetic_recovery_against_l1():
    n, m, k = 1000, 10000, 50
    wins = []
    for seed in (0, 1, 2):
        rng = np.random.default_rng(seed)
        # float32 values (a 4x faster store; liblinear gets the same values)
        X = rng.standard_normal((n, m), dtype=np.float32)
        w = np.zeros(m)
        true = rng.choice(m, k, replace=False)
        w[true] = rng.normal(0.0, math.sqrt(2.0), k)
        y = np.where(X.astype(np.float64) @ w > 0, 1.0, -1.0)
        # subproblems certified to 1e-3 (the digest's A9-4b selection tolerance)
        result, ids = fit(InMemoryStore(X, y), y, B=10, C=10.0, max_iter=10,
                          subproblem_tol=1e-3)
        assert len(ids) <= 100
        mslr = len(set(ids.tolist()) & set(true.tolist()))
        top, support = l1_features_at_count(X, y, len(ids))
        l1 = len(set(top.tolist()) & set(true.tolist()))
        print(f"T8 seed {seed}: {len(ids)} features, true recovered: MSLR {mslr}, "
              f"ℓ1-LR {l1} (top {len(ids)} of its {support}-feature support)")
        wins.append(mslr >= l1)
    assert sum(wins) >= 2


# ================================================== T9: Leukemia smoke test
@pytest.mark.slow
def test_t9_leukemia(data_dir):
    from sklearn.datasets import load_svmlight_file

    from ultrafs.api import fit as fit_method

    train, test = data_dir / "leu.svm.bz2", data_dir / "leu.t.svm.bz2"
    if not (train.exists() and test.exists()):
        pytest.skip("leu / leu.t not present")
    X, y = load_svmlight_file(str(train), n_features=7129)
    Xt, yt = load_svmlight_file(str(test), n_features=7129)
    X = sp.csr_matrix(X, dtype=np.float64)
    Xt = sp.csr_matrix(Xt, dtype=np.float64)
    assert X.shape == (38, 7129) and Xt.shape == (34, 7129)
    r, T_m = 2, 4
    model = fit_method("mslr", X, y, B=r, max_iter=T_m, C=10.0)
    assert model.params["method"] == "mslr"
    assert 1 <= len(model.features) <= r * T_m
    assert len(model.params["constraints"]) == len(model.params["mu"]) <= T_m
    assert model.refit is not None and model.predictor == "refit"
    report = model.evaluate_store(InMemoryStore(Xt, yt))
    assert report["n_samples"] == 34
    assert 0.5 <= report["accuracy"] <= 1.0
    print(f"T9 leu: {len(model.features)} features {list(model.features)}, "
          f"test accuracy {report['accuracy'] * 34:.0f}/34, stop: {model.stop_reason}")


# =============================== K >= 3 classes: one-vs-rest, one shared support
def _three_classes(seed=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(150, 12))
    scores = np.column_stack([X[:, 0], X[:, 1], -X[:, 0] - X[:, 1]]) \
        + 0.3 * rng.normal(size=(150, 3))
    return X, np.argmax(scores, axis=1)


@pytest.mark.parametrize("C", [1.0, 10.0])
def test_multiclass_one_constraint_is_one_l2_logistic_regression_per_class(C):
    """T = 1: d = 1 on the constraint and the K one-vs-rest problems decouple,
    each scikit-learn's ℓ2-LR without intercept on the selected columns."""
    from sklearn.linear_model import LogisticRegression

    X, y = _three_classes()
    space = make_feature_space(InMemoryStore(X, y), poly=1)
    result = fit_mslr(space, y, B=4, C=C, max_iter=1, subproblem_tol=1e-12,
                      scheduler="synchronous", n_classes=3)
    assert result.coef.shape == (4, 3) and result.alpha.shape == (150, 3)
    assert result.history[0]["certified"]
    np.testing.assert_array_equal(result.d, np.ones(4))
    columns = X[:, result.keys]
    total = 0.0
    for k in range(3):
        codes = np.where(y == k, 1.0, -1.0)
        clf = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10000)
        clf.fit(columns, codes)
        w = clf.coef_.ravel()
        total += 0.5 * float(w @ w) + loss_ref(columns, codes, w, C)
        np.testing.assert_allclose(result.coef[:, k], w, atol=1e-5 * max(1.0, C))
    assert result.history[0]["objective"] == pytest.approx(total, rel=1e-8)


def test_multiclass_shared_support_certificate_and_selection():
    """T > 1: the certified primal is ½ Σ_j d_j Σ_k c_kj² plus the K weighted
    one-vs-rest losses of v; the informative columns are found first."""
    X, y = _three_classes(seed=8)
    w = np.random.default_rng(1).integers(0, 3, size=150).astype(float)
    space = make_feature_space(InMemoryStore(X, y), poly=1)
    result = fit_mslr(space, y, B=2, C=2.0, max_iter=3, subproblem_tol=1e-6,
                      scheduler="synchronous", n_classes=3, sample_weight=w)
    assert set(result.keys[:2]) == {0, 1}
    last = result.history[-1]
    assert last["certified"]
    c = X[:, result.keys].T @ (result.alpha * np.where(y[:, None] == np.arange(3), 1.0, -1.0))
    np.testing.assert_allclose(result.coef, result.d[:, None] * c, rtol=1e-9, atol=1e-12)
    margins = np.where(y[:, None] == np.arange(3), 1.0, -1.0) * (X[:, result.keys]
                                                                 @ result.coef)
    primal = 0.5 * float(np.sum(result.d[:, None] * c * c)) \
        + 2.0 * float(np.sum(w[:, None] * np.logaddexp(0.0, -margins)))
    assert last["objective"] == pytest.approx(primal, rel=1e-9)
    assert np.all(result.alpha[w == 0] == 0)


def test_multiclass_needs_class_indices():
    X, y = _three_classes()
    space = make_feature_space(InMemoryStore(X, y), poly=1)
    with pytest.raises(ParameterError, match="class indices 0..K-1"):
        fit_mslr(space, y + 5, B=2, max_iter=1, n_classes=3)
