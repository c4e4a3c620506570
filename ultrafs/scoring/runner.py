"""Run a task on every block with Dask and tree-merge the results.

A pass is a list of picklable block descriptors, a task function that
reads and processes one block inside a worker, and an associative,
order-independent merge.  :func:`run_block_tasks` turns that into one Dask
task per block and a tree reduction (``dask.bag`` ``reduction`` with
``split_every``); arguments shared by every task (weights, the feature
space...) enter the graph once.  The same code runs on local threads,
processes or a ``dask.distributed`` cluster.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ultrafs.scoring.scheduling import compute
from ultrafs.scoring.topk import TopK, merge_topk_results

__all__ = ["run_block_tasks", "BlockRunner"]


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
        See :func:`ultrafs.scoring.scheduling.compute`.
    split_every : int
        Fan-in of the tree reduction.
    progress_label : str, optional
        Show progress on stderr under this label.

    Returns
    -------
    result
        The merged result.
    """
    if len(blocks) == 1 and progress_label is None \
            and scheduler in (None, "threads", "synchronous"):
        # One block on a local scheduler: the graph would run the task and
        # the two merge levels of the reduction in this process anyway;
        # calling them directly gives the same result (bit for bit) without
        # the graph's ~10 ms, which dominated the many small fits of C="auto".
        return merge([merge([task(blocks[0], **(shared or {}))])])
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


class BlockRunner:
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
