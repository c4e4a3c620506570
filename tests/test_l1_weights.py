"""Sample and class weights of the ℓ1-logistic path (issue 37, item 3).

The weighted problem is ``(1/n) Σ_i w_i log(1 + exp(−y_i f_i)) + λ ||β||_1``
(FGM's raw-weight convention, ``C = 1/(nλ)``;
:mod:`ultrafs.methods.l1_weights`).  Checked here:

* integer weights equal repeated rows, zero weights equal dropped rows
  (at the same C, i.e. the same λ/λ_max), weights all 1 equal no weights
  bit for bit, class_weight equals the per-class sample weights;
* every model satisfies the weighted optimality conditions, recomputed
  here with NumPy and by :class:`~ultrafs.solvers.l1_problem.L1Problem`'s
  certificate of the weighted datafit;
* the weighted Slores regions (basic and sequential, exact and perturbed
  reference points) hold the weighted dual optimum and never discard a
  feature that is nonzero at the unscreened weighted optimum;
* the kernels: the solver with weights against a dense NumPy reference
  (float32 and float64, an empty column), and the weighted column
  statistics against NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from ultrafs.errors import ParameterError
from ultrafs.kernels.l1_logistic import l1_logistic_dual_gap
from ultrafs.kernels.weighted_moments import weighted_column_moments
from ultrafs.methods.l1_path import fit_l1_count, fit_l1_path, lambda_grid
from ultrafs.methods.slores import (basic_region, sequential_region, slores_keep,
                                    slores_statistics)
from ultrafs.solvers.l1_logistic import solve_l1_logistic
from ultrafs.store.memory import InMemoryStore

SUPPORT_TOL = 1e-8


# ----------------------------------------------------------------- data
def dense_case(seed, n=70, p=40):
    """Dense Gaussian, unbalanced labels, plus a constant, an all-zero and a
    duplicate column."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    beta = np.zeros(p)
    beta[:4] = [2.0, -1.5, 1.0, 0.7]
    y = np.where(rng.random(n) < expit(X @ beta - 1.0), 1.0, -1.0)
    X = np.hstack([X, np.full((n, 1), 2.5), np.zeros((n, 1)), X[:, [0]]])
    return X, y


def sparse_case(seed, n=90, p=120):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.08, format="csc", random_state=seed)
    X.data = rng.uniform(0.5, 3.0, X.nnz)
    X = sp.csc_matrix(X.multiply(np.arange(p) != 3))    # an empty column
    X.eliminate_zeros()
    X.sort_indices()
    beta = np.zeros(p)
    beta[[0, 5, 9, 17]] = [2.0, -2.0, 1.5, 1.0]
    y = np.where(rng.random(n) < expit(X @ beta), 1.0, -1.0)
    return X, y


def dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def random_weights(rng, n, zeros=True):
    w = rng.uniform(0.2, 3.0, n)
    if zeros:
        w[rng.choice(n, n // 10, replace=False)] = 0.0
    return w


def full_beta(p, columns, coefs):
    beta = np.zeros(p)
    beta[columns] = coefs
    return beta


def assert_weighted_kkt(X, y, w, lam, beta, c, rtol=1e-5):
    """The weighted optimality conditions, by NumPy: |x̄_j'(w θ)| <= nλ,
    = nλ sign(β_j) on the support, and Σ w y θ = 0."""
    X = dense(X)
    n = len(y)
    theta = expit(-y * (X @ beta + c))
    corr = X.T @ (w * y * theta)
    assert np.max(np.abs(corr)) <= n * lam * (1 + rtol)
    on = np.abs(beta) > 0
    np.testing.assert_allclose(corr[on], n * lam * np.sign(beta[on]), rtol=rtol)
    assert abs(np.sum(w * y * theta)) <= 1e-7 * n * lam + 1e-9 * np.sum(w)


def weighted_reference(X, y, w, lam, tol=1e-11):
    """The unscreened weighted optimum (the solver on every column at its own
    scale λ n/S), KKT-verified here by NumPy."""
    Xc = sp.csc_matrix(dense(X))
    Xc.sort_indices()
    n = len(y)
    res = solve_l1_logistic(Xc.indptr.astype(np.int64), Xc.indices, Xc.data, y,
                            lam * n / np.sum(w), n_rows=n, tol=tol, max_iter=5000,
                            sample_weight=w)
    assert res.converged
    assert_weighted_kkt(X, y, w, lam, res.coef, res.intercept)
    return res.coef, res.intercept, res.theta


# ------------------------------------------------------ path equivalences
def path_pair(X, y, w, rows, **options):
    """The weighted path and the path of the rows ``rows``, on the same
    λ/λ_max grid (the same C)."""
    a = fit_l1_path(InMemoryStore(X, y), y, sample_weight=w, **options)
    Xr = X[rows] if not sp.issparse(X) else sp.csr_matrix(X)[rows]
    b = fit_l1_path(InMemoryStore(Xr, y[rows]), y[rows], **options)
    return a, b


@pytest.mark.parametrize("case", ["dense", "sparse"])
@pytest.mark.parametrize("screening", ["slores", "strong", "none"])
def test_integer_weights_equal_repeated_rows(case, screening):
    X, y = dense_case(1) if case == "dense" else sparse_case(2)
    rng = np.random.default_rng(3)
    w = rng.integers(1, 4, len(y)).astype(float)
    rows = np.repeat(np.arange(len(y)), w.astype(int))
    a, b = path_pair(X, y, w, rows, screening=screening, n_lambdas=12, tol=1e-10)
    # the same λ_max up to the scale n/n' of the two problems, the same C
    n, n_rep = len(y), len(rows)
    assert a.lambda_max * n == pytest.approx(b.lambda_max * n_rep, rel=1e-12)
    for ra, rb, ca, cb, fa, fb, ia, ib in zip(a.records, b.records, a.columns,
                                               b.columns, a.coefs, b.coefs,
                                               a.intercepts, b.intercepts):
        assert ra["C"] == pytest.approx(rb["C"], rel=1e-12)
        np.testing.assert_array_equal(ca, cb)        # the same support
        scale = max(1.0, np.max(np.abs(fb))) if fb.size else 1.0
        np.testing.assert_allclose(fa, fb, atol=1e-7 * scale)
        assert ia == pytest.approx(ib, abs=1e-7 * scale)
        # the objectives: (1/n) Σ w l against (1/n') Σ l over the rows
        assert ra["objective"] * n == pytest.approx(rb["objective"] * n_rep, rel=1e-9)
        assert ra["kkt_violations_left"] == 0


def test_zero_weights_equal_dropped_rows():
    X, y = dense_case(4)
    rng = np.random.default_rng(5)
    w = np.ones(len(y))
    w[rng.choice(len(y), 12, replace=False)] = 0.0
    # a column constant on the rows kept, not on the dropped ones
    X = X.copy()
    X[:, 40] = np.where(w > 0, 2.5, -7.0)
    rows = np.flatnonzero(w > 0)
    a, b = path_pair(X, y, w, rows, n_lambdas=12, tol=1e-10)
    stats = slores_statistics(InMemoryStore(X, y), y, sample_weight=w)
    assert stats.constant[40] and stats.constant[41]     # on the rows of weight > 0
    for ra, rb, ca, cb, fa, fb in zip(a.records, b.records, a.columns, b.columns,
                                      a.coefs, b.coefs):
        assert ra["C"] == pytest.approx(rb["C"], rel=1e-12)
        np.testing.assert_array_equal(ca, cb)
        np.testing.assert_allclose(fa, fb, atol=1e-7 * max(1.0, np.abs(fb).max(initial=0)))


def test_count_search_with_weights_equals_repeated_rows():
    X, y = sparse_case(6)
    rng = np.random.default_rng(7)
    w = rng.integers(1, 3, len(y)).astype(float)
    rows = np.repeat(np.arange(len(y)), w.astype(int))
    a = fit_l1_count(InMemoryStore(X, y), y, n_nonzero=6, sample_weight=w, tol=1e-10)
    Xr = sp.csr_matrix(X)[rows]
    b = fit_l1_count(InMemoryStore(Xr, y[rows]), y[rows], n_nonzero=6, tol=1e-10)
    assert a.records[a.index]["nnz"] == b.records[b.index]["nnz"] <= 6
    np.testing.assert_array_equal(a.columns[a.index], b.columns[b.index])
    assert a.records[a.index]["C"] == pytest.approx(b.records[b.index]["C"], rel=1e-8)
    # the null deviance is the weighted one: the same share explained
    assert a.records[a.index]["deviance_explained"] == pytest.approx(
        b.records[b.index]["deviance_explained"], rel=1e-7)


@pytest.mark.parametrize("screening", ["slores", "strong", "none"])
def test_all_ones_equal_unweighted_bit_for_bit(screening):
    X, y = sparse_case(8)
    store = InMemoryStore(X, y)
    a = fit_l1_path(store, y, sample_weight=np.ones(len(y)), screening=screening,
                    n_lambdas=8)
    b = fit_l1_path(store, y, screening=screening, n_lambdas=8)
    assert a.lambda_max == b.lambda_max
    for ra, rb, ca, cb, fa, fb, ia, ib in zip(a.records, b.records, a.columns, b.columns,
                                               a.coefs, b.coefs, a.intercepts,
                                               b.intercepts):
        np.testing.assert_array_equal(ca, cb)
        assert fa.tobytes() == fb.tobytes() and ia == ib
        assert ra["objective"] == rb["objective"] and ra["kkt"] == rb["kkt"]


def test_kernel_all_ones_equal_no_weights_bit_for_bit():
    """The solver itself, given weights of 1 (not shortcut to none): the
    same bytes."""
    X, y = sparse_case(9)
    n = len(y)
    indptr = X.indptr.astype(np.int64)
    for lam in (0.05, 0.01):
        a = solve_l1_logistic(indptr, X.indices, X.data, y, lam, n_rows=n, tol=1e-9)
        b = solve_l1_logistic(indptr, X.indices, X.data, y, lam, n_rows=n, tol=1e-9,
                              sample_weight=np.ones(n))
        assert a.coef.tobytes() == b.coef.tobytes() and a.intercept == b.intercept
        assert a.objective == b.objective and a.gap == b.gap and a.kkt == b.kkt
        assert a.theta.tobytes() == b.theta.tobytes()


# ------------------------------------------------------------ the method
def test_estimator_sample_weight_and_class_weight():
    from ultrafs.sklearn import L1LogisticRegression

    X, y01 = dense_case(10)
    y01 = (y01 > 0).astype(int)
    rng = np.random.default_rng(11)
    w = rng.integers(1, 4, len(y01)).astype(float)
    rows = np.repeat(np.arange(len(y01)), w.astype(int))
    C = 0.2
    weighted = L1LogisticRegression(C=C, tol=1e-10).fit(X, y01, sample_weight=w)
    repeated = L1LogisticRegression(C=C, tol=1e-10).fit(X[rows], y01[rows])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-7)
    np.testing.assert_array_equal(np.flatnonzero(weighted.coef_),
                                  np.flatnonzero(repeated.coef_))
    assert weighted.C_ == pytest.approx(C) and repeated.C_ == pytest.approx(C)
    # all ones: the unweighted fit, bit for bit
    ones = L1LogisticRegression(C=C).fit(X, y01, sample_weight=np.ones(len(y01)))
    plain = L1LogisticRegression(C=C).fit(X, y01)
    assert ones.coef_.tobytes() == plain.coef_.tobytes()
    assert np.asarray(ones.intercept_).tobytes() == np.asarray(plain.intercept_).tobytes()
    # class_weight is the per-class sample weights, bit for bit
    for class_weight in ({1: 3.0, 0: 0.5}, "balanced"):
        by_class = L1LogisticRegression(C=C, class_weight=class_weight).fit(X, y01)
        if class_weight == "balanced":
            counts = np.bincount(y01)
            per = len(y01) / (2 * counts)
        else:
            per = np.array([0.5, 3.0])
        by_sample = L1LogisticRegression(C=C).fit(X, y01, sample_weight=per[y01])
        assert by_class.coef_.tobytes() == by_sample.coef_.tobytes()
        assert np.asarray(by_class.intercept_).tobytes() == np.asarray(by_sample.intercept_).tobytes()
    # class weights with sample weights multiply
    both = L1LogisticRegression(C=C, class_weight={1: 2.0}).fit(X, y01, sample_weight=w)
    product = L1LogisticRegression(C=C).fit(X, y01, sample_weight=w * np.where(y01, 2.0, 1.0))
    assert both.coef_.tobytes() == product.coef_.tobytes()


def test_model_records_the_weights_and_is_certified():
    from ultrafs.api import fit
    from ultrafs.solvers.datafits import Datafit
    from ultrafs.solvers.l1_problem import DenseOperator, L1Problem
    from ultrafs.solvers.losses import get_loss

    X, y = dense_case(12)
    rng = np.random.default_rng(13)
    w = random_weights(rng, len(y))
    n = len(y)
    model = fit("l1", X, y, sample_weight=w, C=0.3, tol=1e-9)
    assert model.params["sample_weight"] is True
    assert model.params["sample_weight_digest"]
    lam = model.params["lambda"]
    assert model.params["C"] == pytest.approx(1.0 / (n * lam))
    beta = full_beta(X.shape[1], np.asarray(model.features), model.coef.ravel())
    c = float(np.ravel(model.intercept)[0])
    assert_weighted_kkt(X, y, w, lam, beta, c)
    # L1Problem's certificate of the weighted datafit: C Σ w l + λ'||β||_1 with
    # C = 1/n is the path's problem
    datafit = Datafit(get_loss("logistic", "binary"), DenseOperator(X), y, 1.0 / n,
                      sample_weight=w)
    cert = L1Problem(datafit, lam, fit_intercept=True).certificate(beta, -c)
    assert cert.kkt <= 1e-8 * lam + 1e-12
    assert 0 <= cert.gap <= 1e-8 * max(1.0, cert.primal)
    assert cert.primal == pytest.approx(model.history[-1]["objective"], rel=1e-12)


def test_api_path_takes_sample_and_class_weights():
    from ultrafs.api import l1_path

    X, y = dense_case(17)
    w = np.where(y > 0, 2.0, 0.5)
    by_class = l1_path(X, y, class_weight={1.0: 2.0, -1.0: 0.5}, n_lambdas=5)
    by_sample = l1_path(X, y, sample_weight=w, n_lambdas=5)
    both = l1_path(X, y, sample_weight=np.full(len(y), 3.0), class_weight={1.0: 2.0,
                                                                           -1.0: 0.5},
                   n_lambdas=5)
    tripled = l1_path(X, y, sample_weight=3.0 * w, n_lambdas=5)
    for a, b in ((by_class, by_sample), (both, tripled)):
        assert a.lambda_max == b.lambda_max
        for ca, cb in zip(a.coefs, b.coefs):
            assert ca.tobytes() == cb.tobytes()


def test_weights_refused_in_one_line():
    from ultrafs.api import fit

    X, y = dense_case(14)
    for bad, words in ((-np.ones(len(y)), ">= 0"),
                       (np.where(y > 0, 0.0, 1.0), "both classes"),
                       (np.ones(3), "one weight per sample")):
        with pytest.raises(ParameterError, match=words) as info:
            fit("l1", X, y, sample_weight=bad, C=0.3)
        assert "\n" not in str(info.value)


def test_statistics_of_other_weights_are_refused():
    X, y = dense_case(15)
    store = InMemoryStore(X, y)
    w = np.random.default_rng(16).uniform(0.5, 2.0, len(y))
    stats = slores_statistics(store, y, sample_weight=w)
    path = fit_l1_path(store, y, statistics=stats, n_lambdas=3)     # theirs are used
    again = fit_l1_path(store, y, statistics=stats, sample_weight=w, n_lambdas=3)
    assert path.coefs[-1].tobytes() == again.coefs[-1].tobytes()
    with pytest.raises(ParameterError, match="other sample weights"):
        fit_l1_path(store, y, statistics=stats, sample_weight=2 * w, n_lambdas=3)
    with pytest.raises(ParameterError, match="other sample weights"):
        fit_l1_path(store, y, statistics=slores_statistics(store, y), sample_weight=w,
                    n_lambdas=3)


# ------------------------------------------------------- screening safety
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_weighted_slores_is_safe(seed):
    """On random weighted problems (zeros among the weights): the basic and
    the sequential regions hold the weighted dual optimum (in ``√w ⊙ θ``)
    and keep every feature that is nonzero at the unscreened weighted
    optimum, from exact and perturbed reference points."""
    X, y = dense_case(20 + seed) if seed % 2 == 0 else sparse_case(20 + seed)
    Xd = dense(X)
    n, p = Xd.shape
    rng = np.random.default_rng(100 + seed)
    w = random_weights(rng, n)
    stats = slores_statistics(InMemoryStore(X, y), y, sample_weight=w)
    # λ_max: the weighted gradient at the intercept-only fit, by NumPy
    pos, neg = w[y > 0].sum(), w[y < 0].sum()
    theta_max = np.where(y > 0, neg / (pos + neg), pos / (pos + neg))
    assert stats.lambda_max == pytest.approx(
        np.max(np.abs(Xd.T @ (w * y * theta_max))) / n, rel=1e-12)
    ref0 = weighted_reference(X, y, w, 0.999 * stats.lambda_max)
    assert np.count_nonzero(ref0[0]) >= 1
    grid = lambda_grid(stats.lambda_max, 12, 0.1, 0.95)
    refs = [weighted_reference(X, y, w, lam) for lam in grid]
    rejected = 0
    for k, lam in enumerate(grid):
        beta, c, theta = refs[k]
        active = np.abs(beta) > SUPPORT_TOL
        u_star = np.sqrt(w) * theta
        basic = basic_region(stats, lam)
        centre = np.sqrt(w) * theta_max
        assert np.linalg.norm(u_star - centre) <= basic.radius * (1 + 1e-9)
        keep = slores_keep(stats, basic, lam)
        assert not np.any(active & ~keep), (seed, k, "basic")
        rejected += int(np.count_nonzero(~keep & ~active))
        if k == 0:
            continue
        beta0, c0, _ = refs[k - 1]
        for delta in (0.0, 1e-3, 1e-1):
            b1 = beta0 + delta * rng.standard_normal(p) * (rng.random(p) < 0.2)
            c1 = c0 + delta * rng.standard_normal()
            decision = Xd @ b1 + c1
            theta0 = expit(-y * decision)
            s0 = Xd.T @ (w * y * theta0)
            region = sequential_region(stats, lam, decision=decision, y=y,
                                       coef_l1=float(np.abs(b1).sum()), s0=s0)
            shift = np.sum(w * y * theta0) / w.sum()
            centre = np.sqrt(w) * (theta0 - shift * y)
            assert np.linalg.norm(u_star - centre) <= region.radius * (1 + 1e-9) + 1e-12
            keep = slores_keep(stats, region, lam)
            assert not np.any(active & ~keep), (seed, k, delta, "sequential")
            # the path's cut: the centred column of the largest weight
            if np.any(b1):
                from ultrafs.methods.l1_weights import weighted_cut

                best = int(np.argmax(np.abs(b1)))
                sign = float(np.sign(b1[best]))
                weights, A, norm = weighted_cut(Xd[:, best], np.arange(n), n, sign, w)
                region = sequential_region(
                    stats, lam, decision=decision, y=y, coef_l1=float(np.abs(b1).sum()),
                    s0=s0, cut=Xd.T @ weights, cut_norm2=A, j0=best, j0_sign=sign,
                    cut_weights_norm=norm)
                keep = slores_keep(stats, region, lam)
                assert not np.any(active & ~keep), (seed, k, delta, "sequential cut")
    assert rejected > 0         # the rule is not vacuous


def test_weighted_path_screens_and_certifies():
    """The screened weighted path finds no KKT violator under Slores (safe)
    and equals the unscreened weighted path."""
    X, y = sparse_case(30, n=150, p=300)
    rng = np.random.default_rng(31)
    w = random_weights(rng, len(y))
    store = InMemoryStore(X, y)
    screened = fit_l1_path(store, y, sample_weight=w, n_lambdas=15, tol=1e-9)
    basic = fit_l1_path(store, y, sample_weight=w, n_lambdas=15, tol=1e-9,
                        sequential=False)
    full = fit_l1_path(store, y, sample_weight=w, n_lambdas=15, tol=1e-9,
                       screening="none")
    for path in (screened, basic):
        assert all(r["kkt_violations_found"] == 0 for r in path.records)
        assert any(r["kept"] < X.shape[1] for r in path.records)
        for r, rf, ca, cf, fa, ff in zip(path.records, full.records, path.columns,
                                         full.columns, path.coefs, full.coefs):
            np.testing.assert_array_equal(ca, cf)
            assert r["objective"] == pytest.approx(rf["objective"], rel=1e-9)
            lam = r["lambda"]
            assert_weighted_kkt(X, y, w, lam, full_beta(X.shape[1], ca, fa),
                                r["intercept"], rtol=1e-6)


def test_weighted_statistics_identical_for_any_layout(tmp_path):
    """The weighted statistics and the weighted path: the same bits for any
    block size, layout (CSC, CSR, a zarr store) and scheduler; the
    statistics against dense NumPy."""
    from ultrafs.store.writers.zarr_writer import write_store

    X, y = dense_case(60, n=50, p=30)
    X[np.abs(X) < 0.7] = 0.0
    n, p = X.shape
    rng = np.random.default_rng(61)
    w = random_weights(rng, n)
    reference = slores_statistics(InMemoryStore(X, y), y, sample_weight=w,
                                  scheduler="synchronous")
    pos, neg = w[y > 0].sum(), w[y < 0].sum()
    t_max = np.where(y > 0, neg / (pos + neg), pos / (pos + neg))
    np.testing.assert_allclose(reference.s_max[~reference.constant],
                               (X.T @ (w * y * t_max))[~reference.constant], rtol=1e-12,
                               atol=1e-13)
    np.testing.assert_allclose(reference.colsum, X.T @ w, rtol=1e-12, atol=1e-13)
    mean = X.T @ w / w.sum()
    np.testing.assert_allclose(reference.norm2, np.where(
        reference.constant, 0.0, (w[:, None] * (X - mean) ** 2).sum(0)), rtol=1e-12,
        atol=1e-13)
    c = reference.j0_sign * (X[:, reference.j0] - mean[reference.j0])
    np.testing.assert_allclose(reference.cut[~reference.constant],
                               (X.T @ (w * c))[~reference.constant], rtol=1e-12, atol=1e-12)
    assert reference.cut_norm2 == pytest.approx(np.sum(w * c * c), rel=1e-12)
    variants = {f"block_size={bs}": (InMemoryStore(X, y, block_size=bs), "synchronous")
                for bs in (1, 7, p)}
    variants["csr"] = (InMemoryStore(sp.csr_matrix(X), y), "synchronous")
    zarr = write_store(tmp_path / "s.zarr", X, y, block_nnz=50, command="test")
    for scheduler in ("synchronous", "threads", "processes"):
        variants[f"zarr {scheduler}"] = (zarr, scheduler)
    fields = ("s_max", "colsum", "sum_squares", "norm2", "constant", "cut", "lambda_max",
              "j0", "cut_norm2", "theta_max_norm", "cut_pass_norm")
    first = None
    for what, (store, scheduler) in variants.items():
        stats = slores_statistics(store, y, sample_weight=w, scheduler=scheduler)
        for name in fields:
            np.testing.assert_array_equal(getattr(stats, name), getattr(reference, name),
                                          err_msg=f"{what}: {name}")
        path = fit_l1_path(store, y, sample_weight=w, n_lambdas=8, scheduler=scheduler,
                           memory_budget=0)
        if first is None:
            first = path
            continue
        for a, b in zip(path.coefs, first.coefs):
            assert a.tobytes() == b.tobytes(), what
        assert path.intercepts == first.intercepts, what


# ---------------------------------------------------------------- kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solver_kernel_with_weights_against_dense_numpy(dtype):
    X, y = sparse_case(40)
    X = sp.csc_matrix(X.astype(dtype))
    X.sort_indices()
    n, p = X.shape
    assert X.indptr[4] == X.indptr[3]           # column 3 is empty
    rng = np.random.default_rng(41)
    w = random_weights(rng, n)
    S = w.sum()
    Xd = X.toarray().astype(np.float64)
    indptr = X.indptr.astype(np.int64)
    lam = 0.05
    res = solve_l1_logistic(indptr, X.indices, X.data, y, lam, n_rows=n, tol=1e-10,
                            sample_weight=w)
    assert res.converged and res.coef[3] == 0.0
    # dense NumPy: objective, θ, the KKT conditions of (1/S) Σ w l + λ||β||_1
    f = Xd @ res.coef + res.intercept
    objective = np.sum(w * np.logaddexp(0.0, -y * f)) / S + lam * np.abs(res.coef).sum()
    assert res.objective == pytest.approx(objective, rel=1e-12)
    theta = expit(-y * f)
    np.testing.assert_allclose(res.theta, theta, rtol=1e-12, atol=1e-300)
    g = -(Xd.T @ (w * y * theta)) / S
    assert np.max(np.abs(g)) <= lam * (1 + 1e-9)
    on = res.coef != 0
    np.testing.assert_allclose(g[on], -lam * np.sign(res.coef[on]), rtol=1e-8)
    # the gap kernel: the dual point made feasible, by NumPy
    primal, dual, gap = l1_logistic_dual_gap(indptr, X.indices, X.data,
                                             np.arange(p, dtype=np.int64), y, w, lam,
                                             res.coef, f, theta)
    t = theta - (np.sum(w * y * theta) / S) * y
    top = np.max(np.abs(Xd.T @ (w * y * t)))
    kappa = min(1.0, S * lam / top)
    tt = np.clip(kappa * t, 0, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        H = -np.where(tt > 0, tt * np.log(tt), 0) - np.where(tt < 1, (1 - tt) * np.log1p(-tt), 0)
    assert primal == pytest.approx(objective, rel=1e-12)
    assert dual == pytest.approx(np.sum(w * H) / S, rel=1e-10)
    assert -1e-12 <= gap <= 1e-8


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weighted_column_moments_against_numpy(dtype):
    rng = np.random.default_rng(50)
    n, p = 40, 9
    X = rng.standard_normal((n, p)) * (rng.random((n, p)) < 0.4)
    X[:, 2] = 0.0                                   # empty
    X[:, 3] = 5.0                                   # constant, all stored
    w = random_weights(rng, n)
    X[:, 4] = np.where(w > 0, 1.5, -2.0)            # constant where w > 0
    X[:, 5] = np.where(w > 0, 0.0, 3.0)             # zero where w > 0
    X[:, 6] = 1e6 + rng.standard_normal(n)          # a large offset
    X = X.astype(dtype)
    C = sp.csc_matrix(X)
    C.sort_indices()
    v = rng.standard_normal(n)
    S = w.sum()
    out = weighted_column_moments(C.indptr.astype(np.int64), C.indices, C.data, w, v, S,
                                  int(np.count_nonzero(w > 0)))
    wsum, vsum, sq, centred, constant = out
    Xd = X.astype(np.float64)
    np.testing.assert_allclose(wsum, Xd.T @ w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vsum, Xd.T @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sq, (Xd * Xd).sum(0), rtol=1e-12)
    mean = (Xd.T @ w) / S
    exact = ((Xd - mean) ** 2 * w[:, None]).sum(0)
    np.testing.assert_array_equal(constant, [False, False, True, True, True, True,
                                             False, False, False])
    assert np.all(centred[constant] == 0.0)
    live = ~constant
    # never below the exact value (Slores stays safe), and close to it
    assert np.all(centred[live] >= exact[live] * (1 - 1e-15))
    np.testing.assert_allclose(centred[live], exact[live], rtol=1e-9)
