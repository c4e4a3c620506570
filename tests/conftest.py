"""Shared fixtures: seeds, real data location, a dask LocalCluster."""

import os
from pathlib import Path

import numpy as np
import pytest

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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
