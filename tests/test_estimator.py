"""FGMClassifier follows scikit-learn's estimator contract."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.estimator_checks import parametrize_with_checks

from ultrafs import FGMClassifier
from ultrafs.store import InMemoryStore


@parametrize_with_checks([FGMClassifier(B=2, max_iter=3, scheduler="synchronous"),
                          FGMClassifier(B=3, loss="squared-hinge",
                                        scheduler="synchronous"),
                          FGMClassifier(B=2, max_iter=2, poly=2,
                                        scheduler="synchronous")])
def test_sklearn_compatible(estimator, check):
    """Every check passes, the multi-class ones included; none is expected to fail."""
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

    monkeypatch.setattr(api, "THREADED_FOLDS_MIN_NNZ", 0)
    X, y = problem
    params = dict(B=2, max_iter=2, C="auto", cv=3, refit=True)
    one = FGMClassifier(n_jobs=1, **params).fit(X, y)
    three = FGMClassifier(n_jobs=3, **params).fit(X, y)
    np.testing.assert_array_equal(one.coef_, three.coef_)
    assert one.C_ == three.C_
