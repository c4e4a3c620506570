"""Worst-case analysis (FGM Algorithms 2 and 5): one streamed scoring pass.

One Dask task per candidate block calls the feature space's numba kernel
and returns that block's top-k; a tree reduction merges the partial
results.  The weights vector (``alpha * y``, n floats) enters the graph
once and the workers read their blocks themselves, so the same code runs on
local threads, processes or a ``dask.distributed`` cluster.  Candidates are
ranked by (score decreasing, key increasing), a total order: the result is
the same for every block size, worker count, scheduler and arrival order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .kernels.scoring import merge_topk
from .scheduling import compute

__all__ = ["Candidates", "PassStats", "worst_case_analysis"]


@dataclass(frozen=True)
class Candidates:
    """Ranked candidates returned by a scoring pass.

    Attributes
    ----------
    keys : int64 array
        Feature-space keys, best first.
    scores : float64 array
        Their scores ``s_j``, decreasing.
    """

    keys: np.ndarray
    scores: np.ndarray

    def __len__(self):
        return len(self.keys)


@dataclass(frozen=True)
class PassStats:
    """What one scoring pass did."""

    n_blocks: int
    n_candidates: int
    nnz: int
    seconds: float

    @property
    def nnz_per_second(self) -> float:
        """Throughput of the pass."""
        return self.nnz / self.seconds if self.seconds > 0 else float("inf")


def _score_one(block, features, weights, excluded, k):
    keys, scores, nnz = features.score_block(block, weights, excluded, k)
    return keys, scores, nnz


def _merge_results(results, k):
    keys = np.zeros(0, dtype=np.int64)
    scores = np.zeros(0, dtype=np.float64)
    nnz = 0
    for part_keys, part_scores, part_nnz in results:
        keys, scores = merge_topk(keys, scores, part_keys, part_scores, k)
        nnz += part_nnz
    return keys, scores, nnz


def worst_case_analysis(features, weights, k, *, excluded=None,
                        block_size=None, scheduler=None, num_workers=None,
                        split_every=8):
    """Find the ``k`` candidates with the largest scores ``s_j = c_j**2``.

    Parameters
    ----------
    features : feature space
        E.g. :class:`~ultrafs.features.linear.LinearFeatures`.
    weights : array-like of float64, shape (n_samples,)
        ``a = alpha * y`` from the last subproblem.
    k : int
        Number of candidates wanted (FGM's B), k >= 1.
    excluded : array-like of int64, optional
        Keys already selected; never returned.
    block_size : int, optional
        Candidate block size (columns); None uses the store's partition.
    scheduler : None, str or distributed.Client
        See :func:`ultrafs.scheduling.resolve_scheduler`.
    num_workers : int, optional
        Threads or processes for local schedulers.
    split_every : int
        Fan-in of the tree reduction.

    Returns
    -------
    candidates : Candidates
        At most ``k``; fewer when fewer candidates have a positive score.
    stats : PassStats
    """
    import dask
    import dask.bag as db

    weights = np.ascontiguousarray(weights, dtype=np.float64)
    excluded = np.unique(np.asarray(
        [] if excluded is None else excluded, dtype=np.int64))
    k = int(k)
    blocks = features.candidate_blocks(block_size)
    started = time.perf_counter()
    if not blocks:
        empty = Candidates(np.zeros(0, np.int64), np.zeros(0, np.float64))
        return empty, PassStats(0, features.n_candidates, 0, 0.0)
    bag = db.from_sequence(blocks, npartitions=len(blocks))
    scored = bag.map(
        _score_one,
        features=dask.delayed(features, traverse=False),
        weights=dask.delayed(weights, traverse=False),
        excluded=dask.delayed(excluded, traverse=False),
        k=k,
    )
    merged = scored.reduction(
        lambda part: _merge_results(part, k),
        lambda parts: _merge_results(parts, k),
        split_every=split_every,
    )
    keys, scores, nnz = compute(merged, scheduler, num_workers=num_workers)
    seconds = time.perf_counter() - started
    stats = PassStats(len(blocks), features.n_candidates, int(nnz), seconds)
    return Candidates(keys, scores), stats
