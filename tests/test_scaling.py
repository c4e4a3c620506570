"""The ``standardize`` option: columns divided by their root mean square.

The option must give the model that scaling the data by hand gives (same
features, weights divided back by the columns' factors), on every kind of
data (NumPy array, scipy.sparse, a Zarr store), degree-2 and group spaces;
the model predicts on raw data what the hand-scaled model predicts on
hand-scaled data; nothing depends on the block size.
"""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.api import select
from ultrafs.errors import ParameterError
from ultrafs.features.scaling import column_scales, feature_scales, standardized
from ultrafs.features import make_feature_space
from ultrafs.model import Model
from ultrafs.store import InMemoryStore
from ultrafs.store.scaled import ScaledColumnStore

try:
    from store_contract import MATRIX_SUBSET, TARGET_SUBSET, StoreContract
except ImportError:                       # tests/ imported as a package
    from tests.store_contract import MATRIX_SUBSET, TARGET_SUBSET, StoreContract

FIT = {"B": 2, "max_iter": 3, "C": 1.0, "scheduler": "synchronous"}


class TestScaledStoreContract(StoreContract):
    """The store contract on a scaled store that reads back X exactly: the
    inner store holds X times powers of two, the factors divide them out."""

    # a wrapper: the inner store's own suite runs the whole matrix
    matrix_subset, target_subset = MATRIX_SUBSET, TARGET_SUBSET

    def make_store(self, X, y, *, dtype, tmp_path, target=None):
        m = X.shape[1]
        factors = 2.0 ** (np.arange(m) % 7 - 3)
        inner = InMemoryStore(sp.csc_matrix(X @ sp.diags(factors)), y, dtype=dtype,
                              block_size=7, target=target)
        return ScaledColumnStore(inner, factors)


def make_data(rng, n=120, m=12, density=None):
    """Columns of very different scales; the label depends on two of them."""
    X = rng.standard_normal((n, m)) * np.logspace(-2, 3, m)
    if density is not None:
        X[rng.random((n, m)) > density] = 0.0
    X[:, 4] = 0.0                                   # a column of zeros
    y = np.where(X[:, 0] / np.std(X[:, 0]) - X[:, m - 3] / np.std(X[:, m - 3])
                 + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def rms(X):
    X = dense(X)
    s = np.sqrt((X ** 2).sum(axis=0) / X.shape[0])
    return np.where(s > 0, s, 1.0)


def hand_scaled(X, s):
    """X with every column divided by ``s`` (sparse stays sparse)."""
    if sp.issparse(X):
        return sp.csr_matrix(X @ sp.diags(1.0 / s))
    return X / s


def assert_same_model(scaled, hand, factors):
    """``scaled`` (the option) equals ``hand`` (fitted on hand-scaled data)
    with its weights divided by the features' factors."""
    assert scaled.features == hand.features
    np.testing.assert_allclose(np.asarray(scaled.coef), np.asarray(hand.coef) / factors,
                               rtol=1e-9, atol=0)
    np.testing.assert_allclose(scaled.intercept, hand.intercept, rtol=1e-9, atol=1e-12)
    assert scaled.params["C"] == pytest.approx(hand.params["C"], rel=1e-12)


def assert_predicts_raw_rows(option, hand, s, rng):
    """The option's model on raw rows decides as the hand-scaled model on
    the rows divided by the column factors ``s`` (8 columns)."""
    X_test = rng.standard_normal((30, 8)) * np.logspace(-2, 3, 8)
    labels = np.sign(X_test[:, 0])
    np.testing.assert_allclose(
        option.decision_function_store(InMemoryStore(X_test, labels)),
        hand.decision_function_store(InMemoryStore(X_test / s, labels)),
        rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------- the factors
@pytest.mark.parametrize("kind", ["dense", "sparse", "binary"])
def test_column_scales_are_the_rms_and_block_size_free(rng, kind):
    X, y = make_data(rng, density=None if kind == "dense" else 0.3)
    if kind == "binary":
        X = (X != 0).astype(np.float64)
    data = sp.csc_matrix(X) if kind != "dense" else X
    store = InMemoryStore(data, y)
    s = column_scales(store, scheduler="synchronous")
    np.testing.assert_allclose(s, rms(X), rtol=1e-12)
    assert s[4] == 1.0                              # zero column: left as it is
    for block_size in (1, 5, 100):
        np.testing.assert_array_equal(
            column_scales(store, block_size=block_size, scheduler="synchronous"), s)
    scaled = standardized(store, scheduler="synchronous")
    np.testing.assert_array_equal(scaled.scales, s)
    # every read shows x_j / s_j, zeros kept
    full = scaled.read_range(0, X.shape[1])
    got = sp.csc_matrix((full.values(), full.indices, full.indptr), shape=X.shape)
    np.testing.assert_array_equal(got.toarray(), X / s)
    assert full.nnz == np.count_nonzero(X)
    picked = scaled.read_columns([7, 2, X.shape[1] + 3])
    np.testing.assert_array_equal(np.diff(picked.indptr)[2], 0)
    np.testing.assert_array_equal(
        sp.csc_matrix((picked.values(), picked.indices, picked.indptr),
                      shape=(X.shape[0], 3)).toarray()[:, :2], (X / s)[:, [7, 2]])


def test_scaled_store_refuses_bad_factors(rng):
    X, y = make_data(rng)
    store = InMemoryStore(X, y)
    for bad in (np.ones(3), np.zeros(X.shape[1]), np.full(X.shape[1], np.nan)):
        with pytest.raises(ValueError):
            ScaledColumnStore(store, bad)


# ------------------------------------------------- the option = by hand
@pytest.mark.parametrize("kind", ["array", "sparse", "zarr"])
def test_option_equals_scaling_by_hand(rng, tmp_path, kind):
    X, y = make_data(rng, density=None if kind == "array" else 0.4)
    if kind == "sparse":
        X = sp.csr_matrix(X)
    s = column_scales(InMemoryStore(X, y), scheduler="synchronous")
    if kind == "zarr":
        from ultrafs.store.writers.zarr_writer import write_store

        data = write_store(tmp_path / "raw.zarr", X, y, dtype=np.float64)
        hand_data = write_store(tmp_path / "hand.zarr", X / s, y, dtype=np.float64)
        np.testing.assert_array_equal(column_scales(data, scheduler="synchronous"), s)
        labels = None
    else:
        data, hand_data, labels = X, hand_scaled(X, s), y
    option = select(data, labels, standardize=True, **FIT)
    hand = select(hand_data, labels, **FIT)
    factors = s[np.asarray(option.features)]
    assert_same_model(option, hand, factors)
    assert option.params["standardize"] is True
    np.testing.assert_allclose(option.params["feature_scales"], factors, rtol=1e-15)
    assert "standardize" not in hand.params
    # the option's model predicts on raw data what the hand model predicts
    # on hand-scaled data
    X_test = rng.standard_normal((40, X.shape[1])) * np.logspace(-2, 3, X.shape[1])
    np.testing.assert_allclose(
        option.decision_function_store(InMemoryStore(X_test, np.sign(X_test[:, 0]))),
        hand.decision_function_store(InMemoryStore(X_test / s, np.sign(X_test[:, 0]))),
        rtol=1e-9, atol=1e-12)


def test_the_scaled_fit_is_block_size_free(rng):
    X, y = make_data(rng)
    whole = select(X, y, standardize=True, **FIT)
    for block_size in (1, 5):
        blocked = select(X, y, standardize=True, block_size=block_size, **FIT)
        assert blocked.features == whole.features
        np.testing.assert_array_equal(blocked.coef, whole.coef)
        np.testing.assert_array_equal(blocked.intercept, whole.intercept)


@pytest.mark.parametrize("binary", [False, True])
def test_degree_two_uses_the_product_of_the_base_scales(rng, binary):
    X, y = make_data(rng, n=150, m=8)
    if binary:                    # 0/1 columns of different frequencies
        X = (rng.random(X.shape) < np.linspace(0.05, 0.9, 8)).astype(np.float64)
    y = np.where((X[:, 0] / rms(X)[0]) * (X[:, 6] / rms(X)[6]) > 0, 1.0, -1.0)
    if binary:
        y = np.where(X[:, 0] * X[:, 6] > 0, 1.0, -1.0)
    s = column_scales(InMemoryStore(X, y), scheduler="synchronous")
    fit = {**FIT, "poly": 2, "max_iter": 4}
    option = select(X, y, standardize=True, **fit)
    hand = select(X / s, y, **fit)
    assert [0, 6] in option.features or binary
    space = make_feature_space(InMemoryStore(X, y), poly=2)
    factors = feature_scales(space, option.features, s)
    expected = [s[f[0]] * s[f[1]] if isinstance(f, list) else s[f]
                for f in option.features]
    np.testing.assert_array_equal(factors, expected)
    np.testing.assert_array_equal(option.params["feature_scales"], factors)
    assert_same_model(option, hand, factors)
    assert_predicts_raw_rows(option, hand, s, rng)


def test_groups_gather_scaled_columns(rng):
    X, y = make_data(rng, m=12)
    labels = np.repeat(np.arange(4), 3)
    s = column_scales(InMemoryStore(X, y), scheduler="synchronous")
    fit = {**FIT, "groups": labels}
    option = select(X, y, standardize=True, **fit)
    hand = select(X / s, y, **fit)
    factors = np.array([s[f[1]] for f in option.features])
    assert_same_model(option, hand, factors)


def test_a_tree_of_groups_gathers_scaled_columns(rng):
    X, y = make_data(rng, m=12)
    parent = np.concatenate([np.repeat(np.arange(4), 3) + 12, np.full(4, -1)])
    s = column_scales(InMemoryStore(X, y), scheduler="synchronous")
    fit = {**FIT, "tree": parent}
    option = select(X, y, standardize=True, **fit)
    hand = select(X / s, y, **fit)
    space = make_feature_space(InMemoryStore(X, y), tree=parent)
    assert_same_model(option, hand, feature_scales(space, option.features, s))


def test_multiclass_weights_are_divided_per_feature(rng):
    X, _ = make_data(rng, m=8)
    y = np.digitize(X[:, 0] / rms(X)[0] + X[:, 6] / rms(X)[6], [-0.7, 0.7]).astype(float)
    s = column_scales(InMemoryStore(X, y), scheduler="synchronous")
    option = select(X, y, standardize=True, **FIT)
    hand = select(X / s, y, **FIT)
    assert np.asarray(option.coef).ndim == 2
    assert_same_model(option, hand, s[np.asarray(option.features)][:, None])
    np.testing.assert_allclose(option.decision_function_store(InMemoryStore(X, y)),
                               hand.decision_function_store(InMemoryStore(X / s, y)),
                               rtol=1e-9, atol=1e-12)


def test_refit_and_C_rules_follow_the_scaled_columns(rng):
    X, y = make_data(rng)
    s = column_scales(InMemoryStore(X, y), scheduler="synchronous")
    for extra in ({"C": "scale", "refit": True},
                  {"C": "auto", "C_grid": [0.1, 1.0, 10.0], "cv": 2}):
        fit = {**FIT, **extra}
        option = select(X, y, standardize=True, **fit)
        hand = select(X / s, y, **fit)
        factors = s[np.asarray(option.features)]
        assert_same_model(option, hand, factors)
        if option.refit is not None:
            np.testing.assert_allclose(np.asarray(option.refit["coef"]),
                                       np.asarray(hand.refit["coef"]) / factors,
                                       rtol=1e-9)
        store = InMemoryStore(X, y)
        np.testing.assert_allclose(option.decision_function_store(store),
                                   hand.decision_function_store(InMemoryStore(X / s, y)),
                                   rtol=1e-9, atol=1e-12)


def test_the_model_file_predicts_without_the_factors(rng, tmp_path):
    X, y = make_data(rng)
    model = select(X, y, standardize=True, **FIT)
    path = tmp_path / "model.json"
    model.save(path)
    saved = json.loads(path.read_text())
    assert saved["params"]["standardize"] is True
    assert len(saved["params"]["feature_scales"]) == len(saved["features"])
    loaded = Model.load(path)
    store = InMemoryStore(X, y)
    np.testing.assert_array_equal(loaded.decision_function_store(store),
                                  model.decision_function_store(store))


def test_without_the_option_nothing_changes(rng):
    X, y = make_data(rng)
    plain = select(X, y, **FIT)
    off = select(X, y, standardize=False, **FIT)
    assert off.features == plain.features
    np.testing.assert_array_equal(off.coef, plain.coef)
    assert "standardize" not in off.params and "feature_scales" not in off.params


def test_additive_kernels_refuse_it(rng):
    X, y = make_data(rng)
    with pytest.raises(ParameterError, match="standardize"):
        select(np.abs(X), y, standardize=True, kernel="hik", **FIT)


# --------------------------------------------------- the example
def test_one_unscaled_column_no_longer_ruins_the_default_model():
    """Issue 38: ``X[:, 7] *= 100`` collapsed C="scale" (accuracy 0.55-0.62);
    scaled columns give the model of the unscaled data."""
    from ultrafs.sklearn import FGMClassifier

    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = rng.random((100, 8))
        y = X[:, 0] > .5
        X[:, 7] *= 100
        est = FGMClassifier(B=2, max_iter=3, standardize=True).fit(X, y)
        assert est.score(X, y) >= 0.95
        assert 0 in est.selected_features_


# ----------------------------------------------------- the other methods
@pytest.mark.parametrize("method, options", [
    ("l1", {"C": 0.5}),
    ("l1", {"n_features_to_select": 3}),
    ("mslr", {"B": 2, "max_iter": 3}),
    ("mslr", {"B": 2, "max_iter": 2, "poly": 2, "C": "scale"}),
])
def test_other_methods_equal_scaling_by_hand(rng, method, options):
    from ultrafs.api import fit

    X, y = make_data(rng, m=8)
    s = column_scales(InMemoryStore(X, y), scheduler="synchronous")
    option = fit(method, X, y, standardize=True, scheduler="synchronous", **options)
    hand = fit(method, X / s, y, scheduler="synchronous", **options)
    space = make_feature_space(InMemoryStore(X, y), poly=options.get("poly", 1))
    factors = feature_scales(space, option.features, s)
    assert option.features == hand.features and len(factors)
    np.testing.assert_allclose(np.asarray(option.coef), np.asarray(hand.coef) / factors,
                               rtol=1e-9, atol=0)
    np.testing.assert_array_equal(option.params["feature_scales"], factors)
    if hand.refit is not None:
        np.testing.assert_allclose(np.asarray(option.refit["coef"]),
                                   np.asarray(hand.refit["coef"]) / factors, rtol=1e-9)
    assert_predicts_raw_rows(option, hand, s, rng)


def test_the_command_line_option(rng, tmp_path):
    from click.testing import CliRunner
    from sklearn.datasets import dump_svmlight_file

    from ultrafs.cli import main

    X, y = make_data(rng, m=8)
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"), zero_based=False)
    runner = CliRunner()
    for flag, name in (("--standardize", "scaled.json"), ("--no-standardize", "plain.json")):
        result = runner.invoke(main, ["select", "--data", str(tmp_path / "train.svm"),
                                      "--B", "2", "--max-iter", "2", flag,
                                      "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    scaled = Model.load(tmp_path / "scaled.json")
    plain = Model.load(tmp_path / "plain.json")
    assert scaled.params["standardize"] is True and "standardize" not in plain.params
    from sklearn.datasets import load_svmlight_file

    X = load_svmlight_file(str(tmp_path / "train.svm"), n_features=8)[0].toarray()
    s = column_scales(InMemoryStore(X, y), scheduler="synchronous")
    hand = select(X / s, y, B=2, max_iter=2)         # the values the file holds
    assert [f - 1 for f in scaled.features] == hand.features       # 1-based ids
    # the command line holds a LIBSVM file's values in float32
    np.testing.assert_allclose(scaled.coef, np.asarray(hand.coef)
                               / s[np.asarray(hand.features)], rtol=1e-5)
    result = runner.invoke(main, ["evaluate", "--model", str(tmp_path / "scaled.json"),
                                  "--data", str(tmp_path / "train.svm")])
    assert result.exit_code == 0, result.output


def test_refit_prefix_reproduces_the_scaled_refit(rng):
    """The report's refits of a model's prefixes read the raw store and the
    recorded factors: with every batch, the model's own refit."""
    from ultrafs.methods.refit import refit_prefix

    X, y = make_data(rng)
    model = select(X, y, standardize=True, refit=True, **FIT)
    again = refit_prefix(model, InMemoryStore(X, y))
    np.testing.assert_allclose(again["coef"], model.refit["coef"], rtol=1e-6)
    np.testing.assert_allclose(again["intercept"], model.refit["intercept"], rtol=1e-6,
                               atol=1e-9)
