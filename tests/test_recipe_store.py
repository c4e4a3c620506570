"""The "add a store" recipe, run: a backend defined in one file
(``tests/recipe_store.py``: a directory of memory-mapped ``.npy`` column
blocks) passes the store contract and is taken, as a ``ColumnStore``
object, by every face that takes a store object:

* the store contract (``tests/store_contract.py: StoreContract``, the
  representative subset of the matrix and targets);
* ``ultrafs.api.fit`` for FGM and the l1 path: the same model, bit for bit,
  as the same data in memory (``InMemoryStore``);
* the estimators (``ultrafs.sklearn.FGMClassifier().fit(store)``, its
  ``predict`` / ``decision_function`` / ``score`` on the store);
* the model's prediction and evaluation on it (``Model.decision_function_store``,
  ``evaluate_store``), the model file saved and loaded.

Opening it from a path (the CLI's ``--data DIR``, ``open_store``) is
refused: ``ultrafs/store/detect.py`` knows the built-in layouts only
(docs/ARCHITECTURE.md counts that file).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ultrafs.api as api
from ultrafs import InMemoryStore
from ultrafs.errors import StoreFormatError
from ultrafs.model import Model
from ultrafs.sklearn import FGMClassifier
from ultrafs.store import open_store
from ultrafs.store.base import ColumnStore

try:
    from recipe_store import NpyBlockStore, write_npy_blocks
    from store_contract import MATRIX_SUBSET, TARGET_SUBSET, StoreContract
except ImportError:  # pragma: no cover - run from the repository root
    from tests.recipe_store import NpyBlockStore, write_npy_blocks
    from tests.store_contract import MATRIX_SUBSET, TARGET_SUBSET, StoreContract

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------- the contract
class TestNpyBlockStoreContract(StoreContract):
    """The store contract on the new backend (blocks of 7 columns, so that
    reads cross block boundaries)."""

    matrix_subset, target_subset = MATRIX_SUBSET, TARGET_SUBSET
    max_pickle_bytes = 400                          # the path only

    def make_store(self, X, y, *, dtype, tmp_path, target=None):
        return write_npy_blocks(tmp_path / "store.npyb", X, y, dtype=dtype,
                                block_columns=7, target=target)


# ------------------------------------------------------------------- data
@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """400 + 400 rows, 60 sparse-ish columns, 6 relevant; train and test
    written as npy-block stores, and the same rows in memory."""
    rng = np.random.default_rng(3)
    n, m = 800, 60
    relevant = np.array([2, 11, 23, 35, 47, 58])
    w = np.zeros(m)
    w[relevant] = [1.5, -1.2, 1.0, -0.9, 1.3, 0.8]
    X = rng.standard_normal((n, m)) * (rng.random((n, m)) < 0.7)
    y = np.where(X @ w + 0.1 * rng.standard_normal(n) > 0, 1.0, -1.0)
    root = tmp_path_factory.mktemp("npyb")
    train = write_npy_blocks(root / "train", X[:400], y[:400], block_columns=9)
    test = write_npy_blocks(root / "test", X[400:], y[400:], block_columns=9)
    return train, test, X[:400], y[:400], X[400:], y[400:], relevant


# ------------------------------------------------------------------ faces
def test_api_fit_fgm_on_the_store(planted):
    train, test, X_train, y_train, X_test, y_test, relevant = planted
    assert isinstance(train, ColumnStore) and type(train) is NpyBlockStore
    options = dict(B=3, max_iter=3, C=10.0, scheduler="synchronous")
    model = api.fit("fgm", train, **options)
    assert set(relevant) <= set(model.features)
    # the same model as the same rows in memory
    memory = api.fit("fgm", InMemoryStore(X_train, y_train), **options)
    assert model.features == memory.features
    np.testing.assert_array_equal(model.coef, memory.coef)        # bit for bit
    assert model.intercept == memory.intercept
    # the model predicts and evaluates on the store
    decision = model.decision_function_store(test)
    np.testing.assert_array_equal(decision, memory.decision_function_store(
        InMemoryStore(X_test, y_test)))
    metrics = model.evaluate_store(test)
    assert metrics["accuracy"] == np.mean(np.where(decision > 0, 1.0, -1.0) == y_test)
    assert metrics["accuracy"] > 0.9


def test_api_fit_another_method_on_the_store(planted):
    train, test, X_train, y_train, X_test, y_test, relevant = planted
    model = api.fit("l1", train, n_features_to_select=len(relevant))
    assert model.params["method"] == "l1"
    memory = api.fit("l1", InMemoryStore(X_train, y_train),
                     n_features_to_select=len(relevant))
    assert sorted(model.features) == sorted(memory.features)
    np.testing.assert_array_equal(model.coef, memory.coef)        # bit for bit
    np.testing.assert_array_equal(model.decision_function_store(test),
                                  memory.decision_function_store(InMemoryStore(X_test,
                                                                               y_test)))
    accuracy = model.evaluate_store(test)["accuracy"]
    assert accuracy == memory.evaluate_store(InMemoryStore(X_test, y_test))["accuracy"]
    assert accuracy > 0.75                 # six columns at a strong l1 penalty


def test_estimator_fits_and_predicts_on_the_store(planted, tmp_path):
    train, test, X_train, y_train, X_test, y_test, relevant = planted
    clf = FGMClassifier(B=3, max_iter=3, scheduler="synchronous").fit(train)
    assert set(relevant) <= set(clf.selected_features_.tolist())
    np.testing.assert_array_equal(clf.classes_, [-1.0, 1.0])
    decision = clf.decision_function(test)
    np.testing.assert_allclose(decision, clf.decision_function(X_test), rtol=1e-12,
                               atol=1e-12)
    assert clf.score(test, y_test) == clf.score(X_test, y_test) > 0.9
    np.testing.assert_array_equal(clf.predict(test), clf.predict(X_test))

    path = tmp_path / "model.json"
    clf.model_.save(path)
    loaded = Model.load(path)
    np.testing.assert_array_equal(loaded.decision_function_store(test), decision)


def test_a_path_is_not_opened_without_a_detect_edit(planted):
    """``open_store`` (``store/detect.py``) dispatches on the built-in
    layouts: the new one is opened as an object, not from its path."""
    train = planted[0]
    with pytest.raises(StoreFormatError, match="not an ultrafs store"):
        open_store(train.path)


def test_no_package_file_names_the_backend():
    for path in sorted((ROOT / "ultrafs").rglob("*.py")):
        text = path.read_text()
        assert "recipe_store" not in text and "NpyBlockStore" not in text, path
