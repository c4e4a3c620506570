"""Run a task on every block with Dask and tree-merge the results.

A pass is a list of picklable block descriptors, a task function that
reads and processes one block inside a worker, and an associative,
order-independent merge.  :func:`run_block_tasks` turns that into one Dask
task per block and a tree reduction with fan-in ``split_every``; arguments
shared by every task (weights, the feature space...) enter the graph once.
The same code runs on local threads, processes or a ``dask.distributed``
cluster: local schedulers run a plain graph (:func:`_local_graph`), a
client the same tree as a ``dask.bag`` ``reduction``.
"""

from __future__ import annotations

import itertools
import os
from functools import partial

import numpy as np

from ultrafs.scoring.scheduling import compute, compute_graph, resolve_scheduler
from ultrafs.scoring.topk import TopK, merge_topk_results

__all__ = ["run_block_tasks", "BlockRunner"]

#: a file name in this environment variable receives, once per process, the
#: wall-clock time (``time.time()``) at which the first pass starts and the
#: process's CPU seconds until then (``time.process_time()``): how the
#: start-up cost of a command is measured (``bench/io_startup.py``)
FIRST_PASS_MARK = "ULTRAFS_FIRST_PASS_MARK"
_marked = False


def _mark_first_pass():
    global _marked
    if _marked:
        return
    _marked = True
    path = os.environ.get(FIRST_PASS_MARK)
    if path:
        import time

        with open(path, "w") as out:
            out.write(f"{time.time()!r} {time.process_time()!r}")


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
    if not _marked:
        _mark_first_pass()
    resolved = resolve_scheduler(scheduler)
    if len(blocks) == 1 and progress_label is None \
            and isinstance(resolved, str) and resolved in ("threads", "synchronous"):
        # One block on a local scheduler: the graph would run the task and
        # the two merge levels of the reduction in this process anyway;
        # calling them directly gives the same result (bit for bit) without
        # the graph's ~10 ms, which dominated the many small fits of C="auto".
        return merge([merge([task(blocks[0], **(shared or {}))])])
    progress = None
    if progress_label is not None:
        progress = (progress_label, len(blocks), getattr(task, "__name__", "task"))
    if isinstance(resolved, str):
        graph, key = _local_graph(blocks, task, merge, shared or {}, split_every)
        return compute_graph(graph, key, resolved, num_workers=num_workers,
                             progress=progress)
    import dask
    import dask.bag as db

    shared = {name: dask.delayed(value, traverse=False)
              for name, value in (shared or {}).items()}
    bag = db.from_sequence(blocks, npartitions=len(blocks))
    mapped = bag.map(task, **shared)
    merged = mapped.reduction(merge, merge, split_every=split_every)
    return compute(merged, resolved, num_workers=num_workers, progress=progress)


class _Pass:
    """What every task of a local pass shares: one graph value, never copied.

    A plain object is a literal to Dask: it enters the graph once, under
    one key, and is neither traversed for keys nor tokenized.
    """

    __slots__ = ("task", "merge", "blocks", "shared")

    def __init__(self, task, merge, blocks, shared):
        self.task = task
        self.merge = merge
        self.blocks = blocks
        self.shared = shared

    def __getstate__(self):
        return (self.task, self.merge, self.blocks, self.shared)

    def __setstate__(self, state):
        self.task, self.merge, self.blocks, self.shared = state


def _block_part(run, i):
    """Block task ``i``: the task and the reduction's per-block merge."""
    return run.merge([run.task(run.blocks[i], **run.shared)])


def _aggregate(run, parts):
    return run.merge(parts)


_graph_ids = itertools.count()


def _local_graph(blocks, task, merge, shared, split_every):
    """The pass as a plain Dask graph: one task per block, a tree merge.

    The tree is the one ``dask.bag``'s ``reduction`` builds (a merge per
    block, then groups of ``split_every`` consecutive results, level by
    level), so that the merges see the same operands in the same order
    (bit-identical results) without the collection machinery: building,
    tokenizing and optimizing a bag cost ~3 ms per pass and ``dask.bag``
    ~40 ms to import.  Block keys start with the task's name, merge keys
    hold ``aggregate`` (what :class:`~ultrafs.scoring.progress.PassProgress`
    counts by).

    Returns
    -------
    graph : dict
    key : the key of the merged result
    """
    token = f"{os.getpid()}-{next(_graph_ids)}"
    run_key = f"~pass-{token}"           # no task function's name starts with "~"
    part = f"{getattr(task, '__name__', 'task').lstrip('_')}-part-{token}"
    fmt = f"merge-aggregate-{token}"
    graph = {run_key: _Pass(task, merge, list(blocks), dict(shared))}
    for i in range(len(blocks)):
        graph[(part, i)] = (_block_part, run_key, i)
    k, below, depth = len(blocks), part, 0
    if split_every is None:
        split_every = 8
    elif split_every is False:
        split_every = len(blocks)
    split_every = max(int(split_every), 2)
    while k > split_every:
        level = f"{fmt}{depth}"
        groups = [range(lo, min(lo + split_every, k)) for lo in range(0, k, split_every)]
        for i, group in enumerate(groups):
            graph[(level, i)] = (_aggregate, run_key, [(below, j) for j in group])
        k, below, depth = len(groups), level, depth + 1
    graph[(fmt, 0)] = (_aggregate, run_key, [(below, j) for j in range(k)])
    return graph, (fmt, 0)


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

    def __call__(self, blocks, task, merge, shared=None, split_every=None):
        """Run ``task`` on every block and merge; ``split_every`` overrides
        the pass's fan-in (2 keeps the fewest large results alive)."""
        self.n_tasks += len(blocks)
        self.n_runs += 1
        label = None
        if self.progress_label is not None:
            label = f"{self.progress_label} phase {self.n_runs}"
        return run_block_tasks(blocks, task, merge, shared=shared,
                               scheduler=self.scheduler,
                               num_workers=self.num_workers,
                               split_every=(self.split_every if split_every is None
                                            else split_every),
                               progress_label=label)

    def topk(self, blocks, task, k, shared=None):
        """Run tasks returning :class:`TopK` and merge them to the k best."""
        if not blocks:
            return TopK(np.zeros(0, np.int64), np.zeros(0, np.float64), {})
        return self(blocks, task, partial(merge_topk_results, k=k), shared)
