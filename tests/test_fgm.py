"""The cutting-plane loop (Algorithm 1) end to end on in-memory and Zarr stores."""

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.api import select
from ultrafs.errors import ParameterError
from ultrafs.features.linear import LinearFeatures
from ultrafs.methods.fgm import fit_fgm
from ultrafs.model import Model
from ultrafs.store import InMemoryStore, open_store
from ultrafs.datasets.planted import make_planted_problem


@pytest.fixture(scope="module")
def planted():
    return make_planted_problem(n_samples=400, n_features=300, n_relevant=20,
                                n_test=400, seed=3)


@pytest.mark.parametrize("loss", ["logistic", "squared-hinge"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_objective_decreases_across_outer_iterations(planted, loss, fit_intercept):
    store = InMemoryStore(planted.X_train, planted.y_train)
    result = fit_fgm(LinearFeatures(store), store.read_labels(), B=5, C=10.0,
                     loss=loss, max_iter=6, tol=0.0, fit_intercept=fit_intercept,
                     scheduler="synchronous")
    objectives = [h["objective"] for h in result.history]
    assert len(objectives) == 6
    assert np.all(np.diff(objectives) < 0)
    assert len(np.unique(result.keys)) == len(result.keys) == 30
    np.testing.assert_array_equal(result.batch_ptr, np.arange(0, 31, 5))


def test_tol_zero_runs_exactly_max_iter_and_stops_without_candidates(rng):
    X = rng.standard_normal((60, 7))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(60) > 0, 1.0, -1.0)
    store = InMemoryStore(X, y)
    result = fit_fgm(LinearFeatures(store), store.read_labels(), B=3,
                     max_iter=10, tol=0.0, scheduler="synchronous")
    # 7 candidates, 3 per iteration: the third pass finds 1, the fourth none
    assert [h["n_new"] for h in result.history] == [3, 3, 1]
    assert "no candidate" in result.stop_reason


def test_tol_stops_early(planted):
    store = InMemoryStore(planted.X_train, planted.y_train)
    loose = fit_fgm(LinearFeatures(store), store.read_labels(), B=5,
                    max_iter=20, tol=0.05, scheduler="synchronous")
    assert len(loose.history) < 20
    assert "tol" in loose.stop_reason


def test_recovers_planted_features_and_generalises(planted):
    model = select(planted.X_train, planted.y_train, B=5, max_iter=6, tol=0.0)
    recovered = set(model.features) & set(planted.relevant.tolist())
    assert len(recovered) >= 15
    store = InMemoryStore(planted.X_test, planted.y_test)
    assert model.evaluate_store(store)["accuracy"] > 0.85


def test_same_model_for_any_block_size_scheduler_and_backend(planted, tmp_path):
    from ultrafs.store.writers.zarr_writer import write_store

    X = sp.csc_matrix(planted.X_train)
    reference = select(X, planted.y_train, B=4, max_iter=4, tol=0.0,
                       scheduler="synchronous")
    write_store(tmp_path / "train.zarr", X, planted.y_train)
    zarr_store = open_store(tmp_path / "train.zarr")
    for data, block_size, scheduler in [(X, 1, "threads"), (X, 37, "processes"),
                                        (zarr_store, None, "threads"),
                                        (zarr_store, 50, "processes")]:
        if data is X:
            data = InMemoryStore(X, planted.y_train)
        model = select(data, B=4, max_iter=4, tol=0.0, block_size=block_size,
                       scheduler=scheduler)
        assert model.features == reference.features
        np.testing.assert_array_equal(model.coef, reference.coef)
        assert model.intercept == reference.intercept


def test_model_round_trip_and_store_prediction(planted, tmp_path):
    model = select(planted.X_train, planted.y_train, B=5, max_iter=3)
    path = tmp_path / "model.json"
    model.save(path)
    loaded = Model.load(path)
    assert loaded.features == model.features
    np.testing.assert_array_equal(loaded.coef, model.coef)
    store = InMemoryStore(planted.X_test, planted.y_test)
    expected = planted.X_test[:, model.features].astype(np.float64) @ model.coef \
        + model.intercept
    np.testing.assert_allclose(loaded.decision_function_store(store), expected,
                               rtol=1e-5, atol=1e-6)


def test_truncated_model_keeps_first_groups(planted):
    model = select(planted.X_train, planted.y_train, B=5, max_iter=3, tol=0.0)
    first = model.truncated(1)
    assert first.features == model.features[:5]
    assert first.batches == [0, 5]


def test_a_model_of_no_features_evaluates_as_its_intercept(planted):
    """``truncated(0)`` (the prefix before the first iteration, a report's
    first point) scores by its intercept alone; it used to fail reshaping
    its empty weights."""
    model = select(planted.X_train, planted.y_train, B=5, max_iter=2, tol=0.0)
    empty = model.truncated(0)
    result = empty.evaluate_store(InMemoryStore(planted.X_test, planted.y_test))
    assert result["n_features_model"] == 0 and result["n_nonzero_coef"] == 0
    predicted = 1 if empty.intercept > 0 else 0
    positive = np.mean(planted.y_test > 0)
    assert result["accuracy"] == pytest.approx(positive if predicted else 1 - positive)


@pytest.mark.parametrize("kwargs, match", [
    ({"B": 0}, "B must be"), ({"C": 0.0}, "C must be"), ({"C": -1.0}, "C must be"),
    ({"loss": "hinge"}, "unknown loss"), ({"max_iter": 0}, "max_iter"),
    ({"tol": -1.0}, "tol must be"),
])
def test_bad_parameters(planted, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        select(planted.X_train, planted.y_train, **kwargs)


def test_models_hold_only_nonzero_features_and_the_budget(data_dir, tmp_path):
    """Unit-length text rows at C = 10: the penalty zeroes whole batches.

    The model file, ``selected_features_`` and ``coef_`` list only features
    with a nonzero weight, and the loop goes on until it holds B x T of
    them (or another stop says why).
    """
    import json

    from sklearn.datasets import load_svmlight_file
    from sklearn.preprocessing import normalize

    from ultrafs import FGMClassifier

    X, y = load_svmlight_file(str(data_dir / "rcv1_small.svm.bz2"))
    X = normalize(X)
    clf = FGMClassifier(B=10, max_iter=5).fit(X, y)
    proposed = clf.history_[-1]["n_features"]
    assert np.all(clf.selected_coef_ != 0)
    assert len(clf.selected_features_) == clf.history_[-1]["n_nonzero"] <= 50
    assert proposed >= len(clf.selected_features_)
    reason = clf.model_.stop_reason
    assert ("budget" in reason and len(clf.selected_features_) == 50) or \
        "tol" in reason or "candidate" in reason or "outer iterations" in reason
    clf.model_.save(tmp_path / "model.json")
    saved = json.loads((tmp_path / "model.json").read_text())
    assert all(c != 0 for c in saved["coef"])
    assert saved["batches"][-1] == len(saved["features"])
    # the decision function is unchanged by dropping the zero weights
    full = FGMClassifier(B=10, max_iter=5).fit(X, y)
    np.testing.assert_allclose(full.decision_function(X), clf.decision_function(X))


def test_B_beyond_the_candidates_costs_nothing_extra():
    """k is capped at the candidates left: B = 2**31 - 1 allocates no 2**31 heap."""
    rng = np.random.default_rng(0)
    X = rng.random((60, 12))
    y = np.where(X[:, 0] > 0.5, 1, -1)
    model = select(X, y, B=2 ** 31 - 1, max_iter=2)
    everything = select(X, y, B=12, max_iter=2)
    assert model.features == everything.features
    np.testing.assert_allclose(model.coef, everything.coef, rtol=1e-12)
    pairs = select(X, y, B=2 ** 31 - 1, max_iter=1, poly=2)
    assert 0 < len(pairs.features) <= 12 + 12 * 13 // 2


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("C", [1e200, 1e300])
def test_C_that_overflows_is_refused(C):
    rng = np.random.default_rng(0)
    X = rng.random((60, 12))
    y = np.where(X[:, 0] > 0.5, 1, -1)
    with pytest.raises(ParameterError, match="overflows"):
        select(X, y, B=3, max_iter=2, C=C)


@pytest.mark.parametrize("n_classes", [None, 3])
def test_paper_inner_stop_is_not_taken_for_an_overflow(n_classes):
    """``inner_kkt_tol=None`` (the paper's relative-decrease stop, CLI
    ``--inner-kkt-tol 0``) leaves the certificate uncomputed (NaN): the fit
    goes on, finite, instead of being refused as an overflow of C."""
    rng = np.random.default_rng(0)
    X = rng.random((90, 12))
    y = (np.where(X[:, 0] > 0.5, 1, -1) if n_classes is None
         else np.digitize(X[:, 0], [1 / 3, 2 / 3]))
    model = select(X, y, B=2, max_iter=3, inner_kkt_tol=None)
    assert len(model.features) > 0
    assert np.all(np.isfinite(model.coef))
    assert all(np.isnan(h["inner_kkt"]) for h in model.history)


def test_apg_reports_its_certificate_when_max_iter_ends_first():
    """APG asked for a certificate reports one even when its iterations run
    out before the relative decrease first asks for it."""
    from ultrafs.solvers.apg import solve
    from ultrafs.solvers.datafits import make_datafit

    rng = np.random.default_rng(1)
    X = sp.random(80, 6, density=0.5, format="csc", random_state=1)
    y = np.where(rng.random(80) > 0.5, 1.0, -1.0)
    datafit = make_datafit(X.indptr, X.indices, X.data, y, 10.0)
    result = solve(datafit, np.array([0, 3, 6]), max_iter=2, tol=0.0, kkt_tol=1e-12,
                   solver="apg")
    assert not result.converged
    assert np.isfinite(result.kkt) and result.kkt > 0

