"""Worst-case analysis (FGM Algorithms 2 and 5): streamed scoring passes.

Feature spaces drive the block passes they need (:mod:`ultrafs.scoring.runner`)
through their ``find_candidates`` method; the weights vector (n floats, or
n x K for K classes) and the feature space enter the graph once.

Candidates are ranked by (score decreasing, key increasing), a total order,
so the result is the same for every block size, worker count, scheduler
and arrival order.  Feature spaces drive the passes they need through
their ``find_candidates`` method: one pass for linear features, several
phases for degree-2 features.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ultrafs.scoring.runner import BlockRunner
from ultrafs.scoring.topk import Candidates

__all__ = ["PassStats", "worst_case_analysis"]


@dataclass(frozen=True)
class PassStats:
    """What one worst-case analysis did.

    Attributes
    ----------
    n_blocks : int
        Tasks run (all phases).
    n_candidates : int
        Candidates the pass had to consider (m, or m(m+3)/2 for degree 2).
    nnz : int
        Nonzeros streamed.
    seconds : float
    details : dict
        Feature-space specific figures (pairs evaluated, pruned...).
    """

    n_blocks: int
    n_candidates: int
    nnz: int
    seconds: float
    details: dict = field(default_factory=dict)

    @property
    def nnz_per_second(self) -> float:
        """Streaming throughput of the pass."""
        return self.nnz / self.seconds if self.seconds > 0 else float("inf")


def worst_case_analysis(features, weights, k, *, excluded=None,
                        block_size=None, scheduler=None, num_workers=None,
                        split_every=8, progress_label=None):
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
        See :func:`ultrafs.scoring.scheduling.resolve_scheduler`.
    num_workers : int, optional
        Threads or processes for local schedulers.
    split_every : int
        Fan-in of the tree reductions.
    progress_label : str, optional
        Show per-phase progress (blocks, nnz/s, ETA) on stderr.

    Returns
    -------
    candidates : Candidates
        At most ``k``; fewer when fewer candidates have a positive score.
    stats : PassStats
    """
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    excluded = np.unique(np.asarray(
        [] if excluded is None else excluded, dtype=np.int64))
    runner = BlockRunner(scheduler, num_workers, split_every, block_size,
                     progress_label)
    started = time.perf_counter()
    result = features.find_candidates(weights, int(k), excluded, runner)
    seconds = time.perf_counter() - started
    counters = dict(result.counters)
    nnz = int(counters.pop("nnz", 0))
    stats = PassStats(runner.n_tasks, features.n_candidates, nnz, seconds,
                      counters)
    return Candidates(result.keys, result.scores, result.payload), stats
