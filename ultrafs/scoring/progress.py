"""Progress of long scoring passes: blocks done / total, nnz/s, ETA.

Local schedulers report through a ``dask.callbacks.Callback`` that counts
the finished block tasks (a block task is the fused map + per-block merge of
:func:`ultrafs.scoring.runner.run_block_tasks`); a ``dask.distributed`` client
uses Dask's own ``progress`` bar.  Both write to stderr, never stdout (where
results go).
"""

from __future__ import annotations

import sys
import time

from dask.callbacks import Callback

__all__ = ["PassProgress", "block_task_nnz"]


def block_task_nnz(result) -> int:
    """Nonzeros a block task reports in its result (0 when unknown)."""
    counters = getattr(result, "counters", None)
    if isinstance(counters, dict):
        return int(counters.get("nnz", 0))
    if isinstance(result, dict):
        if "nnz" in result:
            return int(result["nnz"])
        if "topk" in result:
            return block_task_nnz(result["topk"])
    return 0


class PassProgress(Callback):
    """One-line progress of a pass on a local Dask scheduler.

    Parameters
    ----------
    label : str
        Shown before the counts (e.g. ``"pass"``).
    n_blocks : int
        Number of block tasks in the pass.
    task_name : str
        Name of the block task function (Dask key prefix).
    stream : file, default sys.stderr
    min_interval : float
        Seconds between two redraws.
    """

    def __init__(self, label, n_blocks, task_name, stream=None, min_interval=0.2):
        super().__init__()
        self.label = label
        self.task_name = task_name
        self.n_blocks = int(n_blocks)
        self.stream = stream if stream is not None else sys.stderr
        self.min_interval = min_interval
        self.done = 0
        self.nnz = 0
        self._started = time.perf_counter()
        self._drawn = 0.0
        self._drawn_done = -1

    def _is_block_task(self, key) -> bool:
        # block tasks are named after the task function (fused or not with
        # the per-block merge); tree-reduction steps are "...aggregate..."
        name = str(key[0] if isinstance(key, tuple) else key)
        return name.startswith(self.task_name.lstrip("_")) and "aggregate" not in name

    def _posttask(self, key, result, dsk, state, worker_id):
        if not self._is_block_task(key):
            return
        self.done += 1
        self.nnz += block_task_nnz(result)
        now = time.perf_counter()
        if now - self._drawn >= self.min_interval or self.done == self.n_blocks:
            self._drawn = now
            self._drawn_done = self.done
            self.stream.write("\r" + self.line(now))
            self.stream.flush()

    def _finish(self, dsk, state, errored):
        if not errored:
            # a block task fused into the reduction is not seen by _posttask
            self.done = self.n_blocks
        if self.done:
            if self._drawn_done != self.done:     # the last count is not shown yet
                self.stream.write("\r" + self.line(time.perf_counter()))
            self.stream.write("\n")
            self.stream.flush()

    def line(self, now) -> str:
        """The progress line: blocks, rate, ETA."""
        elapsed = max(now - self._started, 1e-9)
        rate = self.nnz / elapsed
        remaining = (self.n_blocks - self.done) * elapsed / max(self.done, 1)
        return (f"{self.label}: {self.done}/{self.n_blocks} blocks  "
                f"{rate / 1e6:,.1f}M nnz/s  ETA {remaining:,.1f}s   ")
