"""Ranked candidates of a scoring pass and their order-independent merge.

Candidates are ranked by (score decreasing, key increasing), a total order,
so merged results are the same for every block size, worker count,
scheduler and arrival order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ultrafs.kernels.scoring import merge_topk

__all__ = ["Candidates", "TopK", "merge_topk_results"]


@dataclass(frozen=True)
class Candidates:
    """Ranked candidates returned by a scoring pass.

    Attributes
    ----------
    keys : int64 array
        Feature-space keys, best first.
    scores : float64 array
        Their scores ``s_j``, decreasing.
    payload : dict or None
        Optional data the feature space attached to the winners (e.g. their
        columns, read during the pass), keyed by key.
    """

    keys: np.ndarray
    scores: np.ndarray
    payload: dict | None = None

    def __len__(self):
        return len(self.keys)


@dataclass(frozen=True)
class TopK:
    """Partial result of block tasks: ranked candidates plus counters.

    ``counters`` is a dict of ints summed by the merge (e.g. ``nnz``);
    ``payload`` optionally maps kept keys to data that travels with them
    (only the survivors' entries are kept by the merge).
    """

    keys: np.ndarray
    scores: np.ndarray
    counters: dict = field(default_factory=dict)
    payload: dict | None = None


def merge_topk_results(results, k):
    """Merge :class:`TopK` partial results into the ``k`` best.

    Associative and independent of the order of ``results``.
    """
    keys = np.zeros(0, dtype=np.int64)
    scores = np.zeros(0, dtype=np.float64)
    counters = {}
    payload = None
    for part in results:
        keys, scores = merge_topk(keys, scores, part.keys, part.scores, k)
        for name, value in part.counters.items():
            counters[name] = counters.get(name, 0) + int(value)
        if part.payload is not None:
            payload = {**(payload or {}), **part.payload}
    if payload is not None:
        payload = {int(key): payload[int(key)] for key in keys if int(key) in payload}
    return TopK(keys, scores, counters, payload)
