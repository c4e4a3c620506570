"""A real dask.distributed LocalCluster: identical results, worker failure."""

import os
import signal
import threading
import time

import numpy as np
import pytest

from ultrafs.api import select
from ultrafs.store import open_store
from ultrafs.store.latency import LatencyColumnStore
from ultrafs.store.writers.zarr_writer import write_store
from ultrafs.datasets.planted import make_planted_problem


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    problem = make_planted_problem(n_samples=500, n_features=800, n_relevant=30,
                                   n_test=10, seed=7)
    path = tmp_path_factory.mktemp("dist") / "train.zarr"
    write_store(path, problem.X_train, problem.y_train)
    return path


def test_cluster_result_identical_to_local(store_path, local_cluster_client):
    local = select(str(store_path), B=10, max_iter=3, tol=0.0, scheduler="threads")
    remote = select(str(store_path), B=10, max_iter=3, tol=0.0,
                    scheduler=local_cluster_client, block_size=64)
    assert remote.features == local.features
    np.testing.assert_array_equal(remote.coef, local.coef)


@pytest.mark.parametrize("structure", ["groups", "tree", "hik"])
def test_cluster_group_spaces_identical_to_local(store_path, local_cluster_client,
                                                 structure):
    """Groups, tree nodes and HIK kernels on the cluster: the local model."""
    if structure == "hik":                  # histograms: values >= 0
        problem = make_planted_problem(n_samples=300, n_features=200, n_relevant=10,
                                       n_test=10, seed=8)
        store_path = store_path.parent / "nonnegative.zarr"
        if not store_path.exists():
            write_store(store_path, abs(problem.X_train), problem.y_train)
    m = open_store(store_path).n_features
    groups = np.arange(m) // 8
    kwargs = {"groups": {"groups": groups},
              "tree": {"tree": np.concatenate([groups + m, np.full(m // 8, -1)])},
              "hik": {"kernel": "hik"}}[structure]
    local = select(str(store_path), B=3, max_iter=2, tol=0.0, C=1.0,
                   scheduler="threads", **kwargs)
    remote = select(str(store_path), B=3, max_iter=2, tol=0.0, C=1.0,
                    scheduler=local_cluster_client, block_size=64, **kwargs)
    assert remote.features == local.features
    np.testing.assert_array_equal(remote.coef, local.coef)


def test_worker_killed_mid_pass(store_path):
    """SIGKILL one of two worker processes during a pass: same selection."""
    from distributed import Client, LocalCluster

    reference = select(str(store_path), B=10, max_iter=3, tol=0.0,
                       scheduler="synchronous")
    slow = LatencyColumnStore(open_store(store_path), latency_s=0.05)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=50) as cluster, \
            Client(cluster) as client:
        outcome = {}

        def run():
            try:
                outcome["model"] = select(slow, B=10, max_iter=3, tol=0.0,
                                          scheduler=client, block_size=20)
            except BaseException as exc:  # reported below
                outcome["error"] = exc

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 60
        while not any(client.processing().values()):
            assert time.monotonic() < deadline, "no task ever started"
            time.sleep(0.01)
        time.sleep(0.2)                       # well inside the first pass
        pids = client.run(os.getpid)
        victim = sorted(pids)[0]
        os.kill(pids[victim], signal.SIGKILL)
        thread.join(timeout=300)
        assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    model = outcome["model"]
    assert model.features == reference.features
    np.testing.assert_array_equal(model.coef, reference.coef)


def test_store_opened_by_fsspec_url_on_the_workers(store_path, local_cluster_client):
    """A file:// URL goes through zarr's fsspec store, in the workers too."""
    import pickle

    url = store_path.resolve().as_uri()
    store = open_store(url)
    assert str(store.path) == url
    assert len(pickle.dumps(store)) < 400
    local = open_store(store_path)
    np.testing.assert_array_equal(store.read_range(0, 50).indices,
                                  local.read_range(0, 50).indices)
    reference = select(str(store_path), B=5, max_iter=2, tol=0.0, scheduler="threads")
    remote = select(url, B=5, max_iter=2, tol=0.0, scheduler=local_cluster_client,
                    block_size=100)
    assert remote.features == reference.features
    np.testing.assert_array_equal(remote.coef, reference.coef)


def test_bad_url_is_one_clear_error():
    from ultrafs.errors import StoreFormatError

    with pytest.raises(StoreFormatError, match="not an ultrafs store"):
        open_store("file:///nonexistent/dir.zarr")
