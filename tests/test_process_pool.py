"""The "processes" scheduler keeps its worker processes across passes."""

import os
import signal
import time

import numpy as np
import pytest

from ultrafs.scoring.scheduling import compute_graph, process_pool


def _pid(_):
    return os.getpid()


def _graph(n):
    graph = {("pid", i): (_pid, i) for i in range(n)}
    graph["all"] = (sorted, [("pid", i) for i in range(n)])
    return graph


def test_passes_share_one_pool_of_worker_processes():
    pool = process_pool(2)
    assert process_pool(2) is pool
    first = set(compute_graph(_graph(8), "all", "processes", num_workers=2))
    second = set(compute_graph(_graph(8), "all", "processes", num_workers=2))
    assert os.getpid() not in first
    assert first | second <= {p.pid for p in pool._processes.values()}
    assert process_pool(2) is pool
    assert process_pool(1) is not pool          # one pool per worker count


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_broken_pool_is_replaced():
    pool = process_pool(2)
    compute_graph(_graph(2), "all", "processes", num_workers=2)   # workers started
    victim = next(iter(pool._processes.values()))
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(30)
    deadline = time.monotonic() + 30          # the executor notices the death
    while not pool._broken and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool._broken
    pids = compute_graph(_graph(4), "all", "processes", num_workers=2)  # a new pool
    assert len(pids) == 4 and victim.pid not in pids
    assert process_pool(2) is not pool


def test_results_equal_those_of_threads(rng):
    from ultrafs.features.linear import LinearFeatures
    from ultrafs.scoring.worst_case import worst_case_analysis
    from ultrafs.store import InMemoryStore
    import scipy.sparse as sp

    X = sp.random(60, 300, density=0.05, format="csc", random_state=1)
    y = np.where(np.arange(60) % 2, 1.0, -1.0)
    space = LinearFeatures(InMemoryStore(X, y, block_size=40))
    weights = rng.standard_normal(60)
    reference, _ = worst_case_analysis(space, weights, 7, scheduler="threads")
    for _ in range(2):                           # the second pass reuses the pool
        got, _ = worst_case_analysis(space, weights, 7, scheduler="processes",
                                     num_workers=2)
        np.testing.assert_array_equal(got.keys, reference.keys)
        np.testing.assert_array_equal(got.scores, reference.scores)
