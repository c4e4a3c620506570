"""The l1 certificate of seed 001's solvers certifies the Slores path's solver too.

:class:`~ultrafs.solvers.l1_problem.L1Problem` with ``C = 1/n`` and an
intercept is the problem of :func:`ultrafs.solvers.l1_logistic.solve_l1_logistic`
(mean logistic loss + ``lam ||beta||_1``): the two must agree on the
objective, on ``lam_max`` and on optimality, and the seed-001 solvers must
reach the same optimum.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.solvers.datafits import Datafit
from ultrafs.solvers.l1_logistic import l1_logistic_lam_max, solve_l1_logistic
from ultrafs.solvers.l1_problem import L1Problem
from ultrafs.solvers.l1_solvers import solve_l1
from ultrafs.solvers.losses import get_loss
from ultrafs.solvers.operators import CSCOperator


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(4)
    n, m = 400, 60
    X = sp.random(n, m, density=0.15, format="csc", random_state=5)
    X.data = rng.uniform(0.2, 2.0, X.nnz)
    X = sp.csc_matrix(X.multiply(np.arange(m) != 7))   # an empty column
    X.sort_indices()
    beta = np.zeros(m)
    beta[:6] = rng.normal(0, 3, 6)
    y = np.where(X @ beta + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("ratio", [0.5, 0.1, 0.02])
def test_same_problem_same_optimum(problem, ratio):
    X, y = problem
    n = X.shape[0]
    indptr = X.indptr.astype(np.int64)
    lam_max = l1_logistic_lam_max(indptr, X.indices, X.data, y, n_rows=n)
    datafit = Datafit(get_loss("logistic", "binary"),
                      CSCOperator(indptr, X.indices, X.data, n), y, 1.0 / n)
    full = L1Problem(datafit, 1.0, fit_intercept=True)
    assert full.lam_max() == pytest.approx(lam_max, rel=1e-12)
    lam = ratio * lam_max
    reference = solve_l1_logistic(indptr, X.indices, X.data, y, lam, n_rows=n, tol=1e-9)
    assert reference.converged
    prob = full.with_lam(lam)
    cert = prob.certificate(reference.coef, -reference.intercept)
    assert cert.primal == pytest.approx(reference.objective, rel=1e-12)
    assert 0 <= cert.rel_gap <= 1e-7 and cert.kkt <= 1e-8 * max(lam, 1.0)
    for solver in ("fista", "mfista", "cgd"):
        sol = solve_l1(prob, solver, tol=1e-7, max_iter=20000)
        assert sol.converged and sol.certificate.rel_gap <= 1e-7, solver
        # the gap bounds the objective's error
        assert sol.objective - reference.objective <= 1e-7 * reference.objective
        assert reference.objective - sol.objective <= 1e-9 * reference.objective
        big_ref = np.abs(reference.coef) > 1e-3
        big_sol = np.abs(sol.coef) > 1e-3
        assert np.all(sol.coef[big_ref] != 0) and np.all(reference.coef[big_sol] != 0)


# ------------------------------------------- the path's KKT check (issue 35)
def _zipf_problem(seed=3, n=300, m=4000, words=25):
    """Sparse counts with Zipf column frequencies (most columns rare, some
    empty), labels of a planted model: the shape of the text sets."""
    rng = np.random.default_rng(seed)
    freq = 1.0 / np.arange(1, m + 1) ** 1.1
    freq /= freq.sum()
    rows = np.repeat(np.arange(n), words)
    cols = rng.choice(m, n * words, p=freq)
    X = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, m))
    X.sum_duplicates()
    X.data = np.log1p(X.data)
    w = np.zeros(m)
    w[rng.choice(200, 12, replace=False)] = rng.normal(0, 2, 12)
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > np.median(X @ w), 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("screening,sequential",
                         [("slores", True), ("slores", False), ("strong", True)])
def test_bound_skipped_columns_satisfy_kkt_by_a_dense_check(monkeypatch, screening,
                                                             sequential):
    """Every discarded column the KKT check certified by its bound (without
    reading it) satisfies |x̄_j'θ̂| <= nλ(1 + tol), by NumPy on the dense matrix;
    the bound does skip columns; and the path's models are those of the
    unscreened path."""
    from ultrafs.methods import l1_kkt
    from ultrafs.methods.l1_path import fit_l1_path
    from ultrafs.store.memory import InMemoryStore

    X, y = _zipf_problem()
    dense = X.toarray()
    seen = []
    original = l1_kkt.KKTCheck.check

    def spy(self, theta, keep, columns, positions, cache_arrays, threshold,
            cut_weights=None):
        violators, largest = original(self, theta, keep, columns, positions,
                                      cache_arrays, threshold, cut_weights)
        read = None if self.last_read is None else self.last_read.copy()
        seen.append((theta.copy(), keep.copy(), threshold, read, violators.copy(),
                     largest))
        return violators, largest

    monkeypatch.setattr(l1_kkt.KKTCheck, "check", spy)
    path = fit_l1_path(InMemoryStore(X, y), y, screening=screening,
                       sequential=sequential, n_lambdas=40, lambda_min_ratio=0.05)
    assert seen
    skipped_total = 0
    for theta, keep, threshold, read, violators, largest in seen:
        corr = np.abs(dense.T @ (theta * y))              # |x̄_j'θ̂|, all columns
        discarded = ~keep
        # the violators are exactly the discarded columns above the threshold
        np.testing.assert_array_equal(violators,
                                      np.flatnonzero(discarded & (corr > threshold)))
        assert largest >= corr[discarded].max() * (1 - 1e-12)
        if read is None:                                  # a full pass
            continue
        skipped = discarded.copy()
        skipped[read] = False
        skipped_total += int(skipped.sum())
        assert np.all(corr[skipped] <= threshold), "a bound certified a violator"
    assert skipped_total > 0
    plain = fit_l1_path(InMemoryStore(X, y), y, screening="none", n_lambdas=40,
                        lambda_min_ratio=0.05)
    for a, b in zip(path.records, plain.records):
        assert a["kkt_violations_left"] == 0 and a["kkt"] <= 1e-6
        assert a["objective"] == pytest.approx(b["objective"], rel=1e-9)
    if screening == "slores":       # safe: nothing the model uses was discarded
        assert sum(r["kkt_violations_found"] for r in path.records) == 0


def test_out_of_core_check_equals_the_resident_one(tmp_path, monkeypatch):
    """memory_budget=0 (partial checks by read_columns, full ones by a
    streamed pass) gives the models of the decoded copy, bit for bit."""
    from ultrafs.methods import l1_kkt
    from ultrafs.methods.l1_path import fit_l1_path
    from ultrafs.store import open_store
    from ultrafs.store.writers.zarr_writer import write_store

    X, y = _zipf_problem(seed=5)
    write_store(tmp_path / "s.zarr", X, y, block_nnz=500, command="test")
    store = open_store(tmp_path / "s.zarr")
    runs = {}
    for budget in (0, 1 << 30):
        runs[budget] = fit_l1_path(store, n_lambdas=30, lambda_min_ratio=0.05,
                                   memory_budget=budget, scheduler="threads")
    a, b = runs[0], runs[1 << 30]
    for ra, rb in zip(a.records, b.records):
        assert ra["kept"] == rb["kept"] and ra["nnz"] == rb["nnz"]
        assert ra["objective"] == rb["objective"]
        assert ra["kkt_columns_read"] == rb["kkt_columns_read"]
    for ca, cb, wa, wb in zip(a.columns, b.columns, a.coefs, b.coefs):
        np.testing.assert_array_equal(ca, cb)
        np.testing.assert_array_equal(wa, wb)
    assert sum(r["kkt_columns_read"] for r in a.records) < 0.5 * 30 * X.shape[1]
    # two reference slots: full passes whenever they run out, same models
    monkeypatch.setattr(l1_kkt, "MAX_REFERENCES", 2)
    for budget in (0, 1 << 30):
        few = fit_l1_path(store, n_lambdas=30, lambda_min_ratio=0.05,
                          memory_budget=budget, scheduler="threads")
        assert sum(r["kkt_full_passes"] for r in few.records) > 0
        for ra, rb in zip(few.records, b.records):
            assert ra["kkt_violations_left"] == 0 and ra["kkt"] <= 1e-6
            assert ra["nnz"] == rb["nnz"]
            assert ra["objective"] == pytest.approx(rb["objective"], rel=1e-9)
