"""FGMClassifier follows scikit-learn's estimator contract."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.estimator_checks import parametrize_with_checks

from ultrafs.methods import c_choice
from ultrafs import FGMClassifier
from ultrafs.store import InMemoryStore


@parametrize_with_checks([FGMClassifier(B=3, loss="squared-hinge",
                                        scheduler="synchronous"),
                          FGMClassifier(B=2, max_iter=2, poly=2,
                                        scheduler="synchronous")])
def test_sklearn_compatible(estimator, check):
    """Every check passes for FGM's other losses and degree 2, the multi-class ones
    included; none is expected to fail (tests/test_sklearn_checks.py checks the
    plain FGMClassifier with every other estimator)."""
    check(estimator)


@pytest.fixture
def problem(rng):
    X = rng.standard_normal((200, 40))
    y = np.where(X[:, 3] - X[:, 7] + 0.5 * X[:, 11] > 0, "yes", "no")
    return X, y


def test_selected_features_and_prediction(problem):
    X, y = problem
    clf = FGMClassifier(B=2, max_iter=3, tol=0.0).fit(X, y)
    assert clf.selected_features_.dtype == np.int64
    assert set(clf.selected_features_[:3]) >= {3, 7} or \
        {3, 7} <= set(clf.selected_features_)
    assert clf.selected_coef_.shape == clf.selected_features_.shape
    assert clf.coef_.shape == (1, 40)       # scikit-learn's shape, zeros elsewhere
    np.testing.assert_array_equal(clf.coef_[0, clf.selected_features_], clf.selected_coef_)
    assert np.count_nonzero(clf.coef_) == len(clf.selected_features_)
    assert list(clf.classes_) == ["no", "yes"]
    assert clf.score(X, y) > 0.9
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    decision = X[:, clf.selected_features_] @ clf.selected_coef_ + clf.intercept_
    np.testing.assert_allclose(clf.decision_function(X), decision)
    np.testing.assert_allclose(clf.decision_function(X), X @ clf.coef_[0] + clf.intercept_)
    assert len(clf.history_) == 3


def test_dense_sparse_and_store_inputs_agree(problem):
    X, y = problem
    y01 = (y == "yes").astype(float)
    dense = FGMClassifier(B=3, max_iter=2).fit(X, y01)
    sparse = FGMClassifier(B=3, max_iter=2).fit(sp.csr_matrix(X), y01)
    store = FGMClassifier(B=3, max_iter=2).fit(InMemoryStore(X, y01))
    np.testing.assert_array_equal(dense.selected_features_, sparse.selected_features_)
    np.testing.assert_array_equal(dense.selected_features_, store.selected_features_)
    np.testing.assert_allclose(dense.coef_, store.coef_)
    np.testing.assert_allclose(store.decision_function(InMemoryStore(X, y01)),
                               dense.decision_function(X))


def test_no_predict_proba_for_squared_hinge(problem):
    X, y = problem
    clf = FGMClassifier(B=2, max_iter=2, loss="squared-hinge").fit(X, y)
    assert not hasattr(clf, "predict_proba")


@pytest.mark.parametrize("params", [{"B": 0}, {"C": 0}, {"loss": "hinge"},
                                    {"max_iter": 0}, {"block_size": 0},
                                    {"n_jobs": 0}, {"n_jobs": 1.5}, {"n_jobs": True}])
def test_invalid_parameters_raise_value_error(problem, params):
    X, y = problem
    with pytest.raises(ValueError):
        FGMClassifier(**params).fit(X, y)


def test_one_class_is_rejected(problem):
    X, _ = problem
    with pytest.raises(ValueError, match="only one class"):
        FGMClassifier().fit(X, np.ones(len(X)))


def test_n_jobs_does_not_change_the_model(problem, monkeypatch):
    """n_jobs sets the threads of the passes and of C="auto"'s folds (forced
    on here for small data); the model is the same for every value."""
    import ultrafs.api as api

    monkeypatch.setattr(c_choice, "THREADED_FOLDS_MIN_NNZ", 0)
    X, y = problem
    params = dict(B=2, max_iter=2, C="auto", cv=3, refit=True)
    one = FGMClassifier(n_jobs=1, **params).fit(X, y)
    three = FGMClassifier(n_jobs=3, **params).fit(X, y)
    np.testing.assert_array_equal(one.coef_, three.coef_)
    assert one.C_ == three.C_


# ------------------------------------------- scipy matrices -> the column store
def _reference_compact(X, dtype):
    """Canonical CSC of the used columns, by scipy's COO route (the slow one)."""
    coo = sp.coo_matrix(X).astype(dtype)
    coo.sum_duplicates()
    coo.eliminate_zeros()
    used = np.unique(coo.col).astype(np.int64)
    csc = sp.csc_matrix((coo.data, (coo.row, np.searchsorted(used, coo.col))),
                        shape=(X.shape[0], len(used)))
    csc.sort_indices()
    return csc, used


@pytest.mark.parametrize("width", [60, 5_000, 2 ** 22 + 3, 2 ** 33])
@pytest.mark.parametrize("fmt", ["csr", "coo", "csc"])
@pytest.mark.parametrize("value_dtype", [np.float32, np.float64, np.int64])
def test_scipy_inputs_become_the_canonical_compact_store(rng, width, fmt, value_dtype):
    """Any scipy format, duplicates and explicit zeros included, becomes the
    canonical CSC of the store (sorted rows, no zeros, the sparse id layout
    exactly when its rule says so), never sharing the caller's arrays."""
    from ultrafs.store.base import sparse_id_layout
    from ultrafs.store.memory import compact_csc_arrays

    if fmt == "csc" and width > 2 ** 23:
        pytest.skip("a CSC matrix that wide has a per-column array already")
    n_rows, nnz = 37, 400
    rows = rng.integers(0, n_rows, nnz)
    cols = rng.integers(0, min(width, 10 ** 9), nnz)
    cols[: nnz // 4] = cols[nnz // 4: nnz // 2]             # duplicates
    rows[: nnz // 4] = rows[nnz // 4: nnz // 2]
    values = rng.integers(-2, 3, nnz).astype(value_dtype)   # zeros, and sums to zero
    X = sp.coo_matrix((values, (rows, cols)), shape=(n_rows, width)).asformat(fmt)
    if fmt == "csr":                                       # not canonical: unsorted rows
        X = sp.csr_matrix((X.data[::-1].copy(), X.indices[::-1].copy(), X.indptr),
                          shape=X.shape)
    before = X.copy()
    for dtype in (None, np.float32):
        expected_dtype = np.float32 if (dtype is np.float32
                                        or value_dtype is np.float32) else np.float64
        indptr, indices, data, n, column_ids, id_space = compact_csc_arrays(X, dtype)
        reference, used = _reference_compact(before, expected_dtype)
        assert n == n_rows and id_space == width
        assert indptr.dtype == np.int64 and indices.dtype == np.int32
        assert data.dtype == expected_dtype
        if sparse_id_layout(width, len(used)):
            np.testing.assert_array_equal(column_ids, used)
            expected = reference
        else:
            assert column_ids is None
            expected = sp.csc_matrix((reference.data, reference.indices,
                                      np.r_[0, np.cumsum(np.bincount(
                                          used, np.diff(reference.indptr), width))]),
                                     shape=(n_rows, width))
        np.testing.assert_array_equal(indptr, expected.indptr)
        np.testing.assert_array_equal(indices, expected.indices)
        assert data.tobytes() == expected.data.astype(expected_dtype).tobytes()
        for array in (indptr, indices, data):
            assert not any(np.shares_memory(array, mine) for mine in
                           (getattr(X, "data", None), getattr(X, "indices", None),
                            getattr(X, "indptr", None)) if mine is not None)
    parts = ("row", "col", "data") if fmt == "coo" else ("indptr", "indices", "data")
    for part in parts:                                     # the caller's matrix as it was
        np.testing.assert_array_equal(getattr(X, part), getattr(before, part))


@pytest.mark.parametrize("width", [50, 2 ** 40])
def test_non_finite_values_are_refused(width):
    from ultrafs.errors import InputFormatError

    X = sp.csr_matrix((np.array([1.0, np.inf]), np.array([3, 4]), np.array([0, 1, 2])),
                      shape=(2, width))
    with pytest.raises(InputFormatError, match="NaN or infinite"):
        InMemoryStore(X, [0, 1])


def test_csr_and_csc_fits_agree(problem):
    X, y = problem
    X = np.where(np.abs(X) > 1.0, X, 0.0)
    csr = FGMClassifier(B=2, max_iter=3, scheduler="synchronous").fit(sp.csr_matrix(X), y)
    csc = FGMClassifier(B=2, max_iter=3, scheduler="synchronous").fit(sp.csc_matrix(X), y)
    np.testing.assert_array_equal(csr.selected_features_, csc.selected_features_)
    assert csr.selected_coef_.tobytes() == csc.selected_coef_.tobytes()


def test_every_estimator_takes_the_weights_its_method_takes():
    """Generic over the registry: a method registered with ``weights=True``
    gets ``fit(X, y, sample_weight=None)`` and a ``class_weight`` parameter
    (its Params declare ``class_weight_param()``); one without takes neither.
    A method with a ``seed`` gets scikit-learn's ``random_state``."""
    import inspect

    from ultrafs.methods.params import specs_of
    from ultrafs.methods.registry import methods
    from ultrafs.sklearn import estimator_class

    for method in methods():
        if not method.estimator or not method.fit.__module__.startswith("ultrafs."):
            continue
        cls = estimator_class(method)
        takes = "sample_weight" in inspect.signature(cls.fit).parameters
        assert takes == method.weights, method.name
        params = cls().get_params()
        assert ("class_weight" in params) == method.weights, method.name
        assert ("random_state" in params) == ("seed" in specs_of(method.params)), \
            method.name
        assert "seed" not in params


def test_weighted_estimators_fit_with_sample_weight_and_class_weight():
    from ultrafs.sklearn import GSRFSSelector, MSLRClassifier, SparseKernelLogisticRegression

    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 6))
    y = np.where(X[:, 0] > 0, "a", "b")
    for est in (MSLRClassifier(B=2, max_iter=2), GSRFSSelector(2, max_iter=50),
                SparseKernelLogisticRegression(n_components=10, sigma=2.0)):
        est.set_params(class_weight={"a": 3.0}).fit(X, y, sample_weight=rng.random(40))
        if hasattr(est, "model_"):
            assert est.model_.params["class_weights"] == [3.0, 1.0]
            assert est.model_.params["sample_weight"] is True
