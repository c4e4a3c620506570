"""FGMClassifier as a scikit-learn feature selector (issue 10, item 1).

``get_support``, ``transform``, ``inverse_transform``,
``get_feature_names_out``, ``coef_`` in scikit-learn's shape, and the
estimator inside ``SelectFromModel``, ``Pipeline``, ``GridSearchCV``,
``cross_val_score`` and ``pickle``.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.ensemble import RandomForestClassifier
from sklearn.feature_selection import SelectFromModel
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline

from ultrafs import FGMClassifier
from ultrafs.store import InMemoryStore

RELEVANT = (3, 7, 11)


@pytest.fixture
def planted(rng):
    """300 rows, 30 columns; the labels depend on columns 3, 7 and 11."""
    X = rng.standard_normal((300, 30))
    y = np.where(X[:, 3] - X[:, 7] + 0.5 * X[:, 11] > 0, "yes", "no")
    return X, y


@pytest.fixture
def crossed(rng):
    """200 rows, 8 columns; the label is the sign of x2 * x5 (a cross term)."""
    X = rng.standard_normal((200, 8))
    y = np.where(X[:, 2] * X[:, 5] > 0, "a", "b")
    return X, y


def _fgm(**params):
    return FGMClassifier(**{"B": 2, "max_iter": 3, "scheduler": "synchronous",
                            **params})


# ---------------------------------------------------------------- linear
def test_support_transform_and_inverse(planted):
    X, y = planted
    clf = _fgm().fit(X, y)
    support = clf.get_support()
    assert support.shape == (30,) and support.dtype == bool
    np.testing.assert_array_equal(clf.get_support(indices=True),
                                  np.sort(clf.selected_features_))
    assert set(RELEVANT) <= set(clf.get_support(indices=True).tolist())
    np.testing.assert_array_equal(clf.transform(X), X[:, support])
    np.testing.assert_array_equal(clf.fit_transform(X, y), X[:, support])
    back = clf.inverse_transform(clf.transform(X))
    np.testing.assert_array_equal(back[:, support], X[:, support])
    assert not back[:, ~support].any()
    names = clf.get_feature_names_out()
    assert list(names) == [f"x{j}" for j in np.flatnonzero(support)]
    assert names.dtype == object


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_in_sparse_out(planted, fmt):
    X, y = planted
    clf = _fgm().fit(X, y)
    Xs = sp.csr_matrix(X).asformat(fmt)
    out = clf.transform(Xs)
    assert sp.issparse(out) and out.format == fmt and out.dtype == np.float64
    np.testing.assert_array_equal(out.toarray(), X[:, clf.get_support()])
    out32 = clf.transform(Xs.astype(np.float32))
    assert out32.dtype == np.float32
    back = clf.inverse_transform(out)
    assert sp.issparse(back) and back.shape == X.shape


def test_store_input_and_one_based_ids(planted):
    """A store fitted with 1-based ids: columns are ids - 1, and transform
    reads a store through the model's feature space."""
    X, y = planted
    y01 = (y == "yes").astype(float)
    store = InMemoryStore(X, y01, id_offset=1)
    clf = _fgm().fit(store)
    assert clf.n_features_in_ == 30
    assert set(clf.selected_features_.tolist()) >= {j + 1 for j in RELEVANT}
    np.testing.assert_array_equal(clf.get_support(indices=True),
                                  np.sort(clf.selected_features_) - 1)
    from_store = clf.transform(store)
    assert sp.isspmatrix_csr(from_store)
    np.testing.assert_allclose(from_store.toarray(), X[:, clf.get_support()])
    np.testing.assert_allclose(clf.transform(X), X[:, clf.get_support()])
    np.testing.assert_allclose(clf.decision_function(X),
                               X @ clf.coef_[0] + clf.intercept_)


def test_coef_follows_scikit_learns_shape(planted, rng):
    X, y = planted
    clf = _fgm().fit(X, y)
    assert clf.coef_.shape == (1, 30)
    np.testing.assert_array_equal(np.flatnonzero(clf.coef_[0]), clf.get_support(indices=True))
    np.testing.assert_array_equal(clf.coef_[0, clf.selected_features_], clf.selected_coef_)

    labels = rng.integers(0, 3, size=len(X))
    X3 = X + 2.0 * np.eye(30)[labels * 5]              # class k moves column 5 k
    multi = _fgm(B=3).fit(X3, labels)
    assert multi.coef_.shape == (3, 30)
    np.testing.assert_array_equal(multi.coef_[:, multi.selected_features_],
                                  multi.selected_coef_.T)
    np.testing.assert_allclose(multi.decision_function(X3),
                               X3 @ multi.coef_.T + multi.intercept_)


def test_verbose_shows_progress(planted, capfd):
    X, y = planted
    _fgm(max_iter=1).fit(X, y)
    assert "iteration" not in capfd.readouterr().err
    _fgm(max_iter=1, verbose=1).fit(X, y)
    assert "iteration" in capfd.readouterr().err
    with pytest.raises(ValueError, match="verbose"):
        _fgm(verbose=-1).fit(X, y)


# ------------------------------------------------------------- degree 2
def test_degree_two_support_transform_and_names(crossed):
    X, y = crossed
    clf = _fgm(poly=2).fit(X, y)
    assert [2, 5] in clf.selected_features_
    used = set()
    for f in clf.selected_features_:
        used.update(f if isinstance(f, list) else [f])
    np.testing.assert_array_equal(clf.get_support(indices=True), sorted(used))

    features = clf.transform(X)
    assert features.shape == (len(X), len(clf.selected_features_))
    # the generated columns as the model computes them: they predict
    np.testing.assert_allclose(features @ clf.selected_coef_ + clf.intercept_,
                               clf.decision_function(X))
    cross = clf.selected_features_.index([2, 5])
    ratio = features[:, cross] / (X[:, 2] * X[:, 5])
    np.testing.assert_allclose(ratio, ratio[0])     # x2 * x5 times the kernel's factor
    sparse = clf.transform(sp.csr_matrix(X))
    assert sp.isspmatrix_csr(sparse)
    np.testing.assert_allclose(sparse.toarray(), features)

    names = clf.get_feature_names_out()
    assert names[cross] == "x2*x5"
    for name, f in zip(names, clf.selected_features_):
        expected = (f"x{f}" if not isinstance(f, list) else
                    f"x{f[0]}^2" if f[0] == f[1] else f"x{f[0]}*x{f[1]}")
        assert name == expected

    with pytest.raises(AttributeError, match="poly=1"):
        clf.coef_
    assert not hasattr(clf, "coef_") and not hasattr(clf, "inverse_transform")
    with pytest.raises(ValueError, match="coef_"):
        SelectFromModel(clf, prefit=True).transform(X)   # says why, masks nothing


def test_feature_names_from_a_dataframe_with_degree_two(crossed):
    pd = pytest.importorskip("pandas")
    X, y = crossed
    columns = ["age", "income", "height", "weight", "score", "rate", "count", "level"]
    frame = pd.DataFrame(X, columns=columns)
    clf = _fgm(poly=2).fit(frame, y)
    np.testing.assert_array_equal(clf.feature_names_in_, columns)
    names = list(clf.get_feature_names_out())
    assert "height*rate" in names                   # x2 * x5
    assert all("x" + str(j) not in names for j in range(8))
    assert len(names) == len(clf.selected_features_)
    for name, f in zip(names, clf.selected_features_):
        if isinstance(f, list) and f[0] == f[1]:
            assert name == f"{columns[f[0]]}^2"
    # set_output names the generated columns
    out = clf.set_output(transform="pandas").transform(frame)
    assert list(out.columns) == names
    np.testing.assert_allclose(out.to_numpy(), clf.set_output(transform="default")
                               .transform(frame))
    with pytest.raises(ValueError):
        clf.get_feature_names_out(["a"] * 8)        # not the fitted names

    linear = _fgm().fit(frame, y)
    kept = linear.get_feature_names_out()
    assert list(kept) == [columns[j] for j in linear.get_support(indices=True)]
    assert set(kept) >= {"height", "rate"}


def test_names_carried_by_a_store(crossed):
    """Fitted on a named store (1-based ids): the model's names; a feature with
    an unnamed source is named by columns, as in a model file (null there)."""
    X, y = crossed
    names = ["age", "income", None, "weight", "score", "rate", "count", "level"]
    store = InMemoryStore(X, (y == "a").astype(float), id_offset=1, feature_names=names)
    clf = _fgm(poly=2).fit(store)
    assert [3, 6] in clf.selected_features_             # columns 2 and 5, 1-based ids

    def expected(feature):
        sources = feature if isinstance(feature, list) else [feature]
        named = all(names[i - 1] is not None for i in sources)

        def name(i):
            return names[i - 1] if named else f"x{i - 1}"
        if not isinstance(feature, list):
            return name(feature)
        j, k = feature
        return f"{name(j)}^2" if j == k else f"{name(j)}*{name(k)}"

    out = list(clf.get_feature_names_out())
    assert out == [expected(f) for f in clf.selected_features_]
    assert "x2*x5" in out                             # column 2 has no name
    assert [n is None for n in clf.model_.feature_names] == \
        [n.startswith("x") for n in out]


def test_a_dataframe_s_names_reach_the_model(crossed, tmp_path):
    pd = pytest.importorskip("pandas")
    from ultrafs.model import Model

    X, y = crossed
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(8)])
    clf = _fgm(poly=2).fit(frame, y)
    assert clf.model_.feature_names == list(clf.get_feature_names_out())
    clf.model_.save(tmp_path / "model.json")
    assert Model.load(tmp_path / "model.json").feature_names == clf.model_.feature_names


def test_a_hashed_width_stays_compact():
    """2**31 columns: transform and names go in O(nnz); coef_ is refused."""
    rng = np.random.default_rng(3)
    width = 2 ** 31 + 5
    ids = np.sort(rng.choice(width, size=20, replace=False))
    narrow = sp.random(150, 20, density=0.3, random_state=3, format="coo")
    narrow.data[:] = rng.random(narrow.nnz) + 0.5
    y = np.where(narrow.tocsc()[:, 3].toarray().ravel()
                 + narrow.tocsc()[:, 7].toarray().ravel() > 0.4, 1, -1)
    wide = sp.csr_matrix((narrow.data, (narrow.row, ids[narrow.col])), shape=(150, width))
    clf = _fgm().fit(wide, y)
    out = clf.transform(wide)
    order = np.sort(clf.selected_features_)
    reference = narrow.tocsc()[:, np.searchsorted(ids, order)]
    np.testing.assert_array_equal(out.toarray(), reference.toarray())
    assert list(clf.get_feature_names_out()) == [f"x{j}" for j in order]
    with pytest.raises(ValueError, match="selected_coef_"):
        clf.coef_


# ------------------------------------------------- scikit-learn integration
def test_select_from_model_in_a_pipeline(planted):
    X, y = planted
    pipe = Pipeline([("select", SelectFromModel(_fgm())),
                     ("lr", LogisticRegression())])
    pipe.fit(X[:200], y[:200])
    selector = pipe.named_steps["select"]
    support = selector.get_support()
    fgm = selector.estimator_
    importance = np.abs(fgm.coef_[0])
    np.testing.assert_array_equal(support, importance >= importance.mean())
    assert support.sum() <= len(fgm.selected_features_)
    assert pipe.named_steps["lr"].n_features_in_ == support.sum()
    assert pipe.score(X[200:], y[200:]) > 0.85

    # prefit: a fitted FGMClassifier, every selected feature kept
    fitted = _fgm().fit(X, y)
    prefit = SelectFromModel(fitted, prefit=True, threshold=1e-12)
    np.testing.assert_array_equal(prefit.get_support(), fitted.get_support())
    np.testing.assert_array_equal(prefit.transform(X), fitted.transform(X))
    capped = SelectFromModel(fitted, prefit=True, max_features=2, threshold=-np.inf)
    assert capped.transform(X).shape == (len(X), 2)


def test_pipeline_then_random_forest(planted):
    X, y = planted
    pipe = Pipeline([("fgm", _fgm()),
                     ("rf", RandomForestClassifier(n_estimators=30, random_state=0))])
    pipe.fit(X[:200], y[:200])
    fgm = pipe.named_steps["fgm"]
    assert pipe.named_steps["rf"].n_features_in_ == fgm.get_support().sum()
    assert set(pipe.predict(X[200:])) <= {"no", "yes"}
    assert pipe.score(X[200:], y[200:]) > 0.8
    np.testing.assert_array_equal(pipe[:-1].get_feature_names_out(),
                                  fgm.get_feature_names_out())


def test_grid_search_over_B_and_C(planted):
    X, y = planted
    search = GridSearchCV(_fgm(), {"B": [1, 3], "C": [0.1, 10.0]}, cv=3)
    search.fit(X, y)
    assert len(search.cv_results_["params"]) == 4
    assert search.best_params_["B"] in (1, 3) and search.best_params_["C"] in (0.1, 10.0)
    assert search.best_estimator_.C_ == search.best_params_["C"]
    assert search.best_score_ > 0.8
    assert search.score(X, y) > 0.85


def test_cross_val_score(planted):
    X, y = planted
    scores = cross_val_score(_fgm(), X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.8)


@pytest.mark.parametrize("poly", [1, 2])
def test_pickle_round_trip(planted, poly):
    X, y = planted
    clf = _fgm(poly=poly).fit(X, y)
    loaded = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(loaded.get_support(), clf.get_support())
    np.testing.assert_array_equal(loaded.transform(X), clf.transform(X))
    np.testing.assert_array_equal(loaded.get_feature_names_out(),
                                  clf.get_feature_names_out())
    assert loaded.model_.features == clf.model_.features
