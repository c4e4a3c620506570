"""Worst-case analysis (FGM Algorithms 2 and 5): streamed scoring passes.

A pass is a list of picklable block descriptors, a task function scoring one
block (it reads the block itself, inside the worker) and an associative,
order-independent merge.  :func:`run_block_tasks` turns that into one Dask
task per block and a tree reduction (``dask.bag`` ``reduction`` with
``split_every``); the weights vector ``alpha * y`` (n floats) and the
feature space enter the graph once.  The same code runs on local threads,
processes or a ``dask.distributed`` cluster.

Candidates are ranked by (score decreasing, key increasing), a total order,
so the result is the same for every block size, worker count, scheduler
and arrival order.  Feature spaces drive the passes they need through
their ``find_candidates`` method: one pass for linear features, several
phases for degree-2 features.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from .kernels.scoring import merge_topk
from .scheduling import compute

__all__ = ["Candidates", "PassStats", "TopK", "merge_topk_results",
           "run_block_tasks", "worst_case_analysis"]


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


def run_block_tasks(blocks, task, merge, *, shared=None, scheduler=None,
                    num_workers=None, split_every=8, progress_label=None):
    """Run ``task`` on every block with Dask and tree-merge the results.

    Parameters
    ----------
    blocks : list
        Picklable block descriptors (at least one).
    task : callable
        ``task(block, **shared)``, executed in the workers.
    merge : callable
        ``merge(list_of_results)`` -> result; associative and commutative.
    shared : dict
        Arguments common to every task (weights, the feature space...);
        each enters the graph once.
    scheduler, num_workers
        See :func:`ultrafs.scheduling.compute`.
    split_every : int
        Fan-in of the tree reduction.
    progress_label : str, optional
        Show progress on stderr under this label.

    Returns
    -------
    result
        The merged result.
    """
    import dask
    import dask.bag as db

    shared = {name: dask.delayed(value, traverse=False)
              for name, value in (shared or {}).items()}
    bag = db.from_sequence(blocks, npartitions=len(blocks))
    mapped = bag.map(task, **shared)
    merged = mapped.reduction(merge, merge, split_every=split_every)
    progress = None
    if progress_label is not None:
        progress = (progress_label, len(blocks), getattr(task, "__name__", "task"))
    return compute(merged, scheduler, num_workers=num_workers, progress=progress)


class _Runner:
    """Runs block tasks with the pass's scheduler settings; counts tasks."""

    def __init__(self, scheduler, num_workers, split_every, block_size,
                 progress_label=None):
        self.scheduler = scheduler
        self.num_workers = num_workers
        self.split_every = split_every
        self.block_size = block_size
        self.progress_label = progress_label
        self.n_tasks = 0
        self.n_runs = 0

    def __call__(self, blocks, task, merge, shared=None):
        self.n_tasks += len(blocks)
        self.n_runs += 1
        label = None
        if self.progress_label is not None:
            label = f"{self.progress_label} phase {self.n_runs}"
        return run_block_tasks(blocks, task, merge, shared=shared,
                               scheduler=self.scheduler,
                               num_workers=self.num_workers,
                               split_every=self.split_every,
                               progress_label=label)

    def topk(self, blocks, task, k, shared=None):
        """Run tasks returning :class:`TopK` and merge them to the k best."""
        if not blocks:
            return TopK(np.zeros(0, np.int64), np.zeros(0, np.float64), {})
        return self(blocks, task, partial(merge_topk_results, k=k), shared)


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
        See :func:`ultrafs.scheduling.resolve_scheduler`.
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
    runner = _Runner(scheduler, num_workers, split_every, block_size,
                     progress_label)
    started = time.perf_counter()
    result = features.find_candidates(weights, int(k), excluded, runner)
    seconds = time.perf_counter() - started
    counters = dict(result.counters)
    nnz = int(counters.pop("nnz", 0))
    stats = PassStats(runner.n_tasks, features.n_candidates, nnz, seconds,
                      counters)
    return Candidates(result.keys, result.scores, result.payload), stats
