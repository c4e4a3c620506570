"""A distributed pass waits for its result without distributed's race.

``Future.result(timeout=...)`` raises ``UnboundLocalError`` when its
timeout expires while the result is being gathered from a worker
(dask/distributed#8514, open): a pass polled that way crashed now and
then, the likelier the larger its result (seen on a 4-worker
``LocalCluster`` by ``bench/worker_memory.py``).  Polls that expire while
the result moves must simply poll again.
"""

import numpy as np

from ultrafs.scoring import scheduling
from ultrafs.scoring.runner import run_block_tasks

#: block sizes (floats): each block's result takes a while to gather
BLOCKS = [200_000, 200_001, 200_002, 200_003]


def _concatenate(parts):
    """The merge: one array of the parts (an iterable)."""
    return np.concatenate(list(parts))


def test_polls_expiring_during_the_gather_poll_again(local_cluster_client, monkeypatch):
    """Polls of 2 ms, a result of 6.4 MB: the pass's result, every time."""
    monkeypatch.setattr(scheduling, "_POLL_S", 0.002)
    for _ in range(15):
        merged = run_block_tasks(BLOCKS, np.ones, _concatenate,
                                 scheduler=local_cluster_client)
        assert merged.shape == (sum(BLOCKS),)
        assert np.all(merged == 1.0)
