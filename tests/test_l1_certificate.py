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
