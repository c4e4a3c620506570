"""The estimators on a real dask.distributed LocalCluster (2 process workers).

``scheduler=`` takes a Client, its address or nothing (the active Client);
``clone``, ``pickle`` and ``GridSearchCV(n_jobs=2)`` work with it for every
estimator of :func:`ultrafs.sklearn.estimator_classes`, and the results are
those of local threads, bit for bit (results never depend on the scheduler).
Every test here uses the session's cluster (``local_cluster_client``, so
they are marked ``slow``).
"""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from ultrafs.errors import ParameterError
from ultrafs.sklearn import estimator_classes

#: per estimator: small, quick parameters and a grid of two points
CASES = {
    "FGMClassifier": ({"B": 2, "max_iter": 2, "tol": 0.0}, {"B": [2, 3]}),
    "L1LogisticRegression": ({"n_lambdas": 4}, {"C": [0.5, 2.0]}),
    "MSLRClassifier": ({"B": 2, "max_iter": 2}, {"B": [2, 3]}),
    "SparseKernelLogisticRegression": ({"n_components": 8, "max_iter": 20},
                                       {"lam": [0.01, 0.1]}),
    "GSRFSSelector": ({"n_features_to_select": 3, "max_iter": 5},
                      {"n_features_to_select": [2, 3]}),
}


@pytest.fixture(scope="module", autouse=True)
def close_connections():
    """After this module: end joblib's worker processes and close the
    clients connected to addresses, while the session's cluster is up (a
    client whose scheduler went away first keeps trying to reconnect)."""
    yield
    from joblib.externals.loky import get_reusable_executor

    from ultrafs.scoring.scheduling import close_clients

    get_reusable_executor().shutdown(wait=True)
    close_clients()


def test_every_estimator_has_a_case():
    assert set(CASES) == set(estimator_classes())


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((60, 10))
    y = np.where(X[:, 1] - X[:, 4] + 0.3 * rng.standard_normal(60) > 0, "yes", "no")
    return X, y


def make(name, scheduler, **extra):
    """The estimator ``name`` with its quick parameters; GSRFSSelector (a
    selector: no score of its own) in a Pipeline before a LogisticRegression."""
    params, _ = CASES[name]
    estimator = estimator_classes()[name](**params, scheduler=scheduler, block_size=4,
                                          **extra)
    if name == "GSRFSSelector":
        return make_pipeline(estimator, LogisticRegression())
    return estimator


def grid_of(name):
    _, grid = CASES[name]
    if name == "GSRFSSelector":
        return {f"gsrfsselector__{key}": values for key, values in grid.items()}
    return grid


def fitted_arrays(estimator):
    """What a fit computed: the method's and the predicting weights."""
    if hasattr(estimator, "steps"):
        selector, final = estimator.steps[0][1], estimator.steps[-1][1]
        return {**fitted_arrays(selector), "final_coef": final.coef_}
    if hasattr(estimator, "scores_"):       # GSRFSSelector
        return {"scores": estimator.scores_, "ranking": estimator.ranking_}
    return {"selected_features": np.asarray(estimator.selected_features_),
            "selection_coef": estimator.selection_coef_,
            "selected_coef": estimator.selected_coef_,
            "intercept": np.asarray(estimator.intercept_)}


def assert_same_fit(left, right):
    a, b = fitted_arrays(left), fitted_arrays(right)
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def transitions(client):
    """Task transitions the cluster's scheduler has made so far."""
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


def test_scheduler_names_are_checked_without_connecting():
    from ultrafs import FGMClassifier

    with pytest.raises(ParameterError, match="unknown scheduler 'thread'"):
        FGMClassifier(scheduler="thread").fit(np.eye(4), [0, 1, 0, 1])


@pytest.fixture
def silent_address():
    """A TCP address that accepts connections and never answers."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    server.close()


def test_unreachable_addresses_are_one_bounded_error(silent_address):
    import socket
    import time

    import dask
    import distributed  # noqa: F401 - its config defaults exist before the set below

    from ultrafs import FGMClassifier
    from ultrafs.errors import ClusterError

    X, y = np.eye(4), [0, 1, 0, 1]
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    refused = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    probe.close()
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(ClusterError, match=f"cannot reach the dask scheduler at {refused}"):
            FGMClassifier(scheduler=refused).fit(X, y)
        started = time.monotonic()
        with pytest.raises(ClusterError, match=f"{silent_address} did not answer within 1 s"):
            FGMClassifier(scheduler=silent_address).fit(X, y)
        assert time.monotonic() - started < 10


@pytest.mark.parametrize("name", sorted(CASES))
def test_grid_search_with_a_client(name, problem, local_cluster_client):
    """clone keeps the Client, pickle keeps its address, GridSearchCV with
    two joblib processes fits on the cluster: the same as local threads."""
    X, y = problem
    client = local_cluster_client
    estimator = make(name, client)
    inner = estimator.steps[0][1] if hasattr(estimator, "steps") else estimator
    assert clone(inner).scheduler is client
    assert clone(inner).get_params() == inner.get_params()
    copy = pickle.loads(pickle.dumps(inner))
    assert copy.scheduler == client.scheduler.address
    assert inner.scheduler is client        # pickling left the estimator alone

    search = GridSearchCV(estimator, grid_of(name), cv=2, n_jobs=2).fit(X, y)
    local = GridSearchCV(make(name, "threads"), grid_of(name), cv=2).fit(X, y)
    np.testing.assert_array_equal(search.cv_results_["mean_test_score"],
                                  local.cv_results_["mean_test_score"])
    assert search.best_params_ == local.best_params_
    assert_same_fit(search.best_estimator_, local.best_estimator_)
    np.testing.assert_array_equal(search.predict(X), local.predict(X))
    fitted = search.best_estimator_
    fitted = fitted.steps[0][1] if hasattr(fitted, "steps") else fitted
    assert fitted.scheduler is client
    assert_same_fit(pickle.loads(pickle.dumps(fitted)), fitted)   # fitted: pickles too

    # the pickled copy (an address) fits on the cluster too
    assert_same_fit(copy.fit(X, y), clone(inner).set_params(scheduler="threads").fit(X, y))


def test_estimator_uses_the_active_client(problem, local_cluster_client):
    """No scheduler given and a Client active (dask's default client): the
    passes run on its cluster."""
    from distributed import Client

    from ultrafs import FGMClassifier

    X, y = problem
    local = make("FGMClassifier", "threads").fit(X, y)
    address = local_cluster_client.scheduler.address
    with Client(address) as active:         # the default client while open
        before = transitions(active)
        remote = make("FGMClassifier", None).fit(X, y)
        assert transitions(active) > before
    assert_same_fit(remote, local)
    # closed: local threads again (no transition on the cluster)
    before = transitions(local_cluster_client)
    assert_same_fit(FGMClassifier(**CASES["FGMClassifier"][0], block_size=4).fit(X, y),
                    local)
    assert transitions(local_cluster_client) == before


def test_estimator_given_an_address(problem, local_cluster_client):
    """``scheduler="tcp://HOST:PORT"`` connects to that scheduler."""
    X, y = problem
    address = local_cluster_client.scheduler.address
    assert address.startswith("tcp://")
    before = transitions(local_cluster_client)
    remote = make("FGMClassifier", address).fit(X, y)
    assert transitions(local_cluster_client) > before
    assert_same_fit(remote, make("FGMClassifier", "threads").fit(X, y))


def test_api_fit_takes_an_address_and_the_active_client(problem, local_cluster_client):
    from distributed import Client

    from ultrafs.api import fit

    X, y = problem
    y01 = (y == "yes").astype(float)
    options = dict(B=2, max_iter=2, tol=0.0, block_size=4)
    local = fit("fgm", X, y01, scheduler="threads", **options)
    address = local_cluster_client.scheduler.address
    before = transitions(local_cluster_client)
    by_address = fit("fgm", X, y01, scheduler=address, **options)
    assert transitions(local_cluster_client) > before
    with Client(address) as active:
        before = transitions(active)
        by_default = fit("fgm", X, y01, **options)
        assert transitions(active) > before
    for model in (by_address, by_default):
        assert model.features == local.features
        np.testing.assert_array_equal(model.coef, local.coef)


def test_joblib_dask_backend(problem, local_cluster_client):
    """GridSearchCV's fits sent to the cluster by joblib's dask backend, each
    running its passes on the same cluster (the task leaves the worker's
    pool while it waits)."""
    import joblib
    from distributed import Client

    X, y = problem
    local = GridSearchCV(make("FGMClassifier", "threads"), grid_of("FGMClassifier"),
                         cv=2).fit(X, y)
    with Client(local_cluster_client.scheduler.address) as active:
        with joblib.parallel_backend("dask"):
            search = GridSearchCV(make("FGMClassifier", active),
                                  grid_of("FGMClassifier"), cv=2, n_jobs=-1).fit(X, y)
    np.testing.assert_array_equal(search.cv_results_["mean_test_score"],
                                  local.cv_results_["mean_test_score"])
    assert_same_fit(search.best_estimator_, local.best_estimator_)
