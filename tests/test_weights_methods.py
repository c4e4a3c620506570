"""Sample and class weights of MSLR, SKLR and GSR-FS (issue 37, item 3).

For each method: integer weights solve the problem of the repeated rows
(to the solver's certificate), ``class_weight={a: w}`` is the sample weight
``w`` on class a's rows, weights of one are no weights bit for bit, and
weights of zero are dropped rows.  FGM's are in ``tests/test_weights.py``.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs import api
from ultrafs.errors import ParameterError
from ultrafs.methods.gsrfs import fit_gsrfs
from ultrafs.methods.gsrfs_store import column_std_factors, weighted_column_std_factors
from ultrafs.sklearn import GSRFSSelector, MSLRClassifier, SparseKernelLogisticRegression
from ultrafs.solvers.gram_operators import DenseGramOperator
from ultrafs.solvers.smoothing_cd import solve_minimax_smoothing
from ultrafs.store import InMemoryStore


@pytest.fixture(scope="module")
def problem():
    """60 rows, 20 columns (two of them informative), labels 0/1, integer
    weights with zeros, and their repeated rows and kept rows."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 20))
    y = np.where(X[:, 0] + 0.6 * X[:, 1] + 0.4 * rng.normal(size=60) > 0, 1, 0)
    w = rng.integers(0, 4, size=60)
    w[:3] = 0
    repeated = np.repeat(np.arange(60), w)
    kept = w > 0
    return X, y, w, repeated, kept


# MSLR, SKLR and GSR-FS options: small, certified tightly
MSLR = dict(B=3, max_iter=3, inner_tol=1e-5)
SKLR = dict(basis="rff", n_components=40, sigma=3.0, solver="cgd", tol=1e-10,
            max_iter=20000)
GSRFS = dict(n_features_to_select=5, tol=1e-10, max_iter=3000)


def _objectives(model):
    return np.array([h["objective"] for h in model.history])


# -- MSLR ----------------------------------------------------------------------
def test_mslr_integer_weights_are_repeated_rows(problem):
    X, y, w, repeated, _ = problem
    weighted = api.fit("mslr", X, y, sample_weight=w, **MSLR)
    copies = api.fit("mslr", X[repeated], y[repeated], **MSLR)
    assert weighted.features == copies.features
    assert all(h["certified"] for h in weighted.history + copies.history)
    # both certified to a relative duality gap of 1e-5 of the same problem
    np.testing.assert_allclose(_objectives(weighted), _objectives(copies), rtol=2e-5)
    # the refit (the same selected columns) to its KKT tolerance
    np.testing.assert_allclose(weighted.refit["coef"], copies.refit["coef"], atol=1e-4)
    assert weighted.params["sample_weight"] is True


def test_mslr_weighted_certificate_is_the_weighted_duality_gap(problem):
    """The reduced problem's certificate, weighted: P(v) with the weighted loss,
    the dual in boxes (0, C s_i); ``s`` copies of a row give the same gap."""
    X, y, w, repeated, _ = problem
    R = sp.csr_matrix(X[:, :6])
    yy = np.where(y > 0, 1.0, -1.0)
    constraints = [np.array([0, 1, 2]), np.array([3, 4, 5])]
    C = 0.5
    weighted = solve_minimax_smoothing(R.indptr, R.indices, R.data, yy, constraints, C,
                                       tol=1e-9, sample_weight=w.astype(float))
    Rr = sp.csr_matrix(X[repeated][:, :6])
    copies = solve_minimax_smoothing(Rr.indptr, Rr.indices, Rr.data, yy[repeated],
                                     constraints, C, tol=1e-9)
    assert weighted.certified and copies.certified
    assert weighted.rel_gap <= 1e-9
    np.testing.assert_allclose(weighted.primal, copies.primal, rtol=2e-9)
    np.testing.assert_allclose(weighted.upper, copies.upper, rtol=2e-9)
    # the primal is the weighted loss of the classifier
    margins = yy * (X[:, :6] @ weighted.coef)
    primal = (0.5 * np.sum(weighted.d * weighted.c ** 2)
              + C * np.sum(w * np.logaddexp(0.0, -margins)))
    np.testing.assert_allclose(weighted.primal, primal, rtol=1e-12)
    # a zero weight's dual variable is 0; the others lie inside (0, C s_i)
    assert np.all(weighted.alpha[w == 0] == 0)
    inside = w > 0
    assert np.all((weighted.alpha[inside] > 0) & (weighted.alpha[inside] < C * w[inside]))


def test_mslr_class_weight_is_its_sample_weight(problem):
    X, y, _, _, _ = problem
    by_class = api.fit("mslr", X, y, class_weight={1: 2.5}, B=3, max_iter=3)
    by_sample = api.fit("mslr", X, y, sample_weight=np.where(y == 1, 2.5, 1.0), B=3,
                        max_iter=3)
    assert by_class.features == by_sample.features
    assert np.array_equal(by_class.coef, by_sample.coef)
    assert np.array_equal(by_class.refit["coef"], by_sample.refit["coef"])
    assert by_class.params["class_weights"] == [1.0, 2.5]


def test_mslr_unit_weights_are_bit_identical(problem):
    X, y, _, _, _ = problem
    plain = api.fit("mslr", X, y, B=3, max_iter=3)
    ones = api.fit("mslr", X, y, sample_weight=np.ones(len(y)), B=3, max_iter=3)
    assert plain.features == ones.features
    assert np.array_equal(plain.coef, ones.coef)
    assert np.array_equal(plain.refit["coef"], ones.refit["coef"])
    assert plain.refit["intercept"] == ones.refit["intercept"]
    assert list(_objectives(plain)) == list(_objectives(ones))


def test_mslr_zero_weights_are_dropped_rows(problem):
    X, y, w, _, kept = problem
    weighted = api.fit("mslr", X, y, sample_weight=w, **MSLR)
    dropped = api.fit("mslr", X[kept], y[kept], sample_weight=w[kept], **MSLR)
    assert weighted.features == dropped.features
    np.testing.assert_allclose(weighted.coef, dropped.coef, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(weighted.refit["coef"], dropped.refit["coef"], atol=1e-9)


def test_mslr_retrain_auto_scores_weighted_held_out_rows(problem):
    X, y, w, _, _ = problem
    model = api.fit("mslr", X, y, sample_weight=w + 1, B=3, max_iter=2, refit_C="auto")
    points = model.params["retrain_validation"]["points"]
    assert all(0.0 <= pt["accuracy"] <= 1.0 for pt in points)


# -- SKLR ----------------------------------------------------------------------
def test_sklr_integer_weights_are_repeated_rows(problem):
    X, y, w, repeated, _ = problem
    weighted = api.fit("sklr", X, y, sample_weight=w, **SKLR)
    copies = api.fit("sklr", X[repeated], y[repeated], **SKLR)
    for model in (weighted, copies):
        assert model.params["converged"] and model.params["rel_gap"] <= 1e-10
    assert weighted.features == copies.features
    np.testing.assert_allclose(weighted.params["objective"], copies.params["objective"],
                               rtol=3e-10)
    np.testing.assert_allclose(weighted.params["lam_max"], copies.params["lam_max"],
                               rtol=1e-12)
    np.testing.assert_allclose(weighted.coef, copies.coef, atol=1e-6)


def test_sklr_class_weight_unit_and_zero_weights(problem):
    X, y, w, _, kept = problem
    by_class = api.fit("sklr", X, y, class_weight={0: 3.0}, **SKLR)
    by_sample = api.fit("sklr", X, y, sample_weight=np.where(y == 0, 3.0, 1.0), **SKLR)
    assert by_class.features == by_sample.features
    assert np.array_equal(by_class.coef, by_sample.coef)
    plain = api.fit("sklr", X, y, **SKLR)
    ones = api.fit("sklr", X, y, sample_weight=np.ones(len(y)), **SKLR)
    assert plain.features == ones.features and np.array_equal(plain.coef, ones.coef)
    assert plain.intercept == ones.intercept
    weighted = api.fit("sklr", X, y, sample_weight=w, **SKLR)
    dropped = api.fit("sklr", X[kept], y[kept], sample_weight=w[kept], **SKLR)
    assert weighted.features == dropped.features
    np.testing.assert_allclose(weighted.coef, dropped.coef, atol=1e-9)
    np.testing.assert_allclose(weighted.params["objective"], dropped.params["objective"],
                               rtol=1e-12)


# -- GSR-FS --------------------------------------------------------------------
@pytest.mark.parametrize("options", [{}, {"r": 2.0, "p": 1.0, "lam": 5.0},
                                     {"candidates": 8, "p": 1.0, "lam": 3.0}],
                         ids=["default", "ridge-lasso", "two-stage"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_gsrfs_integer_and_zero_weights(problem, options, sparse):
    X, y, w, repeated, kept = problem
    if sparse:
        X = sp.csc_matrix(np.where(np.abs(X) > 0.7, X, 0.0))
    settings = {**GSRFS, **options}
    weighted = api.fit("gsrfs", X, y, sample_weight=w, **settings)
    copies = api.fit("gsrfs", X[repeated], y[repeated], **settings)
    dropped = api.fit("gsrfs", X[kept], y[kept], sample_weight=w[kept], **settings)
    for other in (copies, dropped):
        assert weighted.features == other.features
        np.testing.assert_allclose(weighted.coef, other.coef, atol=1e-10)
        np.testing.assert_allclose(weighted.intercept, other.intercept, atol=1e-10)


def test_gsrfs_woodbury_weights_are_repeated_rows(problem):
    """More features than samples: the Woodbury form, weighted, certified."""
    X, y, _, _, _ = problem
    X = X[:12]
    Y = np.where(y[:12, None] == np.array([[0, 1]]), 1.0, -1.0)
    weights = np.array([0, 1, 2, 3, 1, 1, 2, 0, 1, 3, 2, 1], dtype=float)
    rows = np.repeat(np.arange(12), weights.astype(int))
    options = dict(r=1.0, p=1.0, lam=0.5, fit_intercept=True, gtol=1e-9, max_iter=5000,
                   eps=1e-8)
    weighted = fit_gsrfs(DenseGramOperator(X), Y, sample_weight=weights, **options)
    copies = fit_gsrfs(DenseGramOperator(X[rows]), Y[rows], **options)
    assert weighted.solve == copies.solve == "woodbury"
    assert weighted.converged and copies.converged
    np.testing.assert_allclose(weighted.objective, copies.objective, rtol=1e-9)
    np.testing.assert_allclose(weighted.coef, copies.coef, atol=1e-6)


def test_gsrfs_class_weight_and_unit_weights(problem):
    X, y, _, _, _ = problem
    by_class = api.fit("gsrfs", X, y, class_weight={1: 2.5}, **GSRFS)
    by_sample = api.fit("gsrfs", X, y, sample_weight=np.where(y == 1, 2.5, 1.0), **GSRFS)
    assert by_class.features == by_sample.features
    assert np.array_equal(by_class.coef, by_sample.coef)
    plain = api.fit("gsrfs", X, y, **GSRFS)
    ones = api.fit("gsrfs", X, y, sample_weight=np.ones(len(y)), **GSRFS)
    assert plain.features == ones.features and np.array_equal(plain.coef, ones.coef)


def test_gsrfs_class_weight_of_real_targets_is_refused(problem):
    X, _, _, _, _ = problem
    with pytest.raises(ParameterError, match="class_weight weights classes"):
        api.fit("gsrfs", X, X[:, 0] * 2.0, class_weight={1: 2.0})
    with pytest.raises(ParameterError, match="class_weight weights classes"):
        GSRFSSelector(3, class_weight={1: 2.0}).fit(X, X[:, 0] * 2.0)


def test_weighted_std_factors_are_those_of_the_repeated_rows(problem):
    X, _, w, repeated, _ = problem
    X = np.where(np.abs(X) > 0.5, X, 0.0)
    X[:, 4] = 3.0                         # constant: factor 0
    weighted = weighted_column_std_factors(InMemoryStore(X, np.zeros(60), target="none"), w,
                                           block_size=7)
    copies = column_std_factors(InMemoryStore(X[repeated], np.zeros(len(repeated)), target="none"))
    np.testing.assert_allclose(weighted, copies, rtol=1e-12)
    assert weighted[4] == 0.0


# -- the estimators ------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: MSLRClassifier(B=3, max_iter=2, random_state=1),
    lambda: SparseKernelLogisticRegression(n_components=30, sigma=3.0, random_state=1),
    lambda: GSRFSSelector(4, max_iter=200),
], ids=["mslr", "sklr", "gsrfs"])
def test_estimators_take_sample_and_class_weights(problem, make):
    X, y, w, _, _ = problem

    def weights(est):       # SKLR's basis weights have no coef_ over the columns
        return est.coef_ if isinstance(est, GSRFSSelector) else est.selected_coef_

    by_class = make().set_params(class_weight={1: 2.0}).fit(X, y)
    by_sample = make().fit(X, y, sample_weight=np.where(y == 1, 2.0, 1.0))
    np.testing.assert_array_equal(weights(by_class), weights(by_sample))
    plain = make().fit(X, y)
    ones = make().fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(weights(plain), weights(ones))
    balanced = make().set_params(class_weight="balanced").fit(X, y, sample_weight=w)
    assert np.all(np.isfinite(weights(balanced)))
