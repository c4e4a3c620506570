"""Shared fixtures: seeds, real data location, a dask LocalCluster."""

import importlib
import os
import sys
from pathlib import Path


def _import_without_assertion_rewriting(*names):
    """Import third-party packages past pytest's assertion-rewriting hook.

    pytest rewrites the asserts of every module of a distribution that
    registers a pytest plugin (zarr registers ``zarr.testing``; hypothesis
    its plugin), not only the plugin: about 150 modules, parsed and compiled
    again in every xdist worker and every run where bytecode is not written
    (``PYTHONDONTWRITEBYTECODE``), about 1 s of each worker's collection.
    Their asserts are not this suite's, so they are imported once here,
    before any test module, with the hook out of ``sys.meta_path``.
    """
    hooks = [h for h in sys.meta_path if type(h).__name__ == "AssertionRewritingHook"]
    for hook in hooks:
        sys.meta_path.remove(hook)
    try:
        for name in names:
            importlib.import_module(name)
    finally:
        sys.meta_path[:0] = hooks


_import_without_assertion_rewriting("zarr", "hypothesis", "hypothesis.strategies")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def pytest_addoption(parser):
    parser.addoption(
        "--full-matrix", action="store_true", default=False,
        help="also generate the cases the contract suites leave out by default "
             "(marked full_matrix; tests/store_contract.py)")


@pytest.fixture
def global_random_seed():
    """Seed of the random tests (override with ULTRAFS_TEST_SEED)."""
    return int(os.environ.get("ULTRAFS_TEST_SEED", "42"))


@pytest.fixture
def rng(global_random_seed):
    return np.random.default_rng(global_random_seed)


@pytest.fixture(scope="session")
def data_dir():
    """The shared real datasets; skips when they are not present."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"shared datasets not found at {DATA_DIR}")
    return DATA_DIR


@pytest.fixture(scope="session")
def local_cluster_client():
    """A real 2-worker dask.distributed LocalCluster (processes)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=40) as cluster:
        with Client(cluster) as client:
            yield client
