"""Progress of a run on stderr: iteration k of T, blocks done, rate, ETA.

Local schedulers report through a ``dask.callbacks.Callback`` that counts
the finished block tasks (a block task is the fused map + per-block merge of
:func:`ultrafs.scoring.runner.run_block_tasks`); a ``dask.distributed`` client
uses Dask's own ``progress`` bar.  Both write to stderr, never stdout (where
results go).

Each pass is a :class:`ultrafs.progress.Phase`: on a terminal a bar
(``iteration 3 of 10: scoring candidates  12/40 blocks [00:03<00:07]
3.1M nnz/s, run ETA 1 min 05 s``), piped one line when the pass ends.  The
number of iterations T and the overall ETA come from a :class:`RunClock`
that the caller opens around the run (:func:`run_clock`); without one a
line shows the pass alone.  The overall ETA is the mean time of the
iterations done so far times the ones left, plus what is left of the
current pass: an upper bound in practice, since FGM stops early once it
converges or holds its budget.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time

from dask.callbacks import Callback

from ultrafs.progress import format_seconds

__all__ = ["PassProgress", "block_task_nnz", "RunClock", "run_clock", "current_clock",
           "format_seconds", "describe_label"]




def _count(value) -> str:
    """``12.3M``, ``4.5k``, ``870``: a rate with a unit that shows its digits."""
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:,.1f}{unit}"
    return f"{value:,.0f}"


class RunClock:
    """Iterations of one run: how many are planned, how long each took.

    Parameters
    ----------
    total_iterations : int
        T, the planned number of outer iterations (``max_iter``).  FGM may
        stop before (converged, budget held) or, when the penalty zeroes
        whole batches, run a few more to fill its budget.
    """

    def __init__(self, total_iterations):
        self.total = max(int(total_iterations), 1)
        self.started = time.perf_counter()
        self.begun = False
        self.done = 0           # iterations seen to end by this clock
        self.last = 0           # number of the last one (a resumed run starts later)
        self.last_done_at = self.started

    def begin(self) -> None:
        """Start timing at the first scoring pass (not at the choice of C)."""
        if not self.begun:
            self.begun = True
            self.started = self.last_done_at = time.perf_counter()

    def iteration_done(self, iteration) -> None:
        """Record the end of outer iteration ``iteration`` (1-based)."""
        self.begin()
        self.done += 1
        self.last = int(iteration)
        self.last_done_at = time.perf_counter()

    def name(self, iteration) -> str:
        """``iteration k of T`` (or ``iteration k, beyond the planned T``)."""
        iteration = int(iteration)
        if iteration <= self.total:
            return f"iteration {iteration} of {self.total}"
        return f"iteration {iteration} (beyond the planned {self.total}, filling the budget)"

    def remaining(self, now=None, pass_left=0.0):
        """Seconds left for the whole run, or None before the first iteration ends."""
        if self.done == 0:
            return None
        now = time.perf_counter() if now is None else now
        mean = (self.last_done_at - self.started) / self.done
        left = self.total - self.last
        if left <= 0:
            return max(pass_left, 0.0)
        in_current = now - self.last_done_at
        return max(mean * left - in_current, pass_left, 0.0)


_clock = None


@contextlib.contextmanager
def run_clock(total_iterations):
    """Make a :class:`RunClock` current for the progress lines of a run."""
    global _clock
    saved = _clock
    _clock = RunClock(total_iterations)
    try:
        yield _clock
    finally:
        _clock = saved


def current_clock():
    """The :class:`RunClock` opened by :func:`run_clock`, or None."""
    return _clock


_LABEL = re.compile(r"^iteration (\d+) pass(?: phase (\d+))?$")
_PHASE = re.compile(r"^(.+) phase (\d+)$")


def describe_label(label, clock=None) -> str:
    """A pass label in plain words.

    ``"iteration 3 pass phase 1"`` (the scoring runner's name for the first
    pass of iteration 3) becomes ``"iteration 3 of 10: scoring candidates"``;
    later passes of the same iteration (degree-2 features need several, with
    bounds in between) add ``", pass 2"``; so does any other ``"<name> phase
    k"`` (``"gsrfs: scoring phase 2"`` → ``"gsrfs: scoring, pass 2"``).
    Other labels are kept.
    """
    match = _LABEL.match(str(label))
    if match is None:
        other = _PHASE.match(str(label))       # "gsrfs: scoring phase 2"
        if other is None:
            return str(label)
        step = int(other.group(2))
        return other.group(1) + (f", pass {step}" if step > 1 else "")
    iteration = int(match.group(1))
    name = clock.name(iteration) if clock is not None else f"iteration {iteration}"
    step = int(match.group(2) or 1)
    return f"{name}: scoring candidates" + (f", pass {step}" if step > 1 else "")


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
    """Progress of a pass on a local Dask scheduler, as a
    :class:`~ultrafs.progress.Phase` over its block tasks.

    On a terminal a bar (blocks done, rate, ETA of the pass; its status the
    nonzeros per second and the run's ETA); piped, one line when the pass
    ends (``iteration 3 of 10: scoring candidates: 40/40 blocks in 2.1 s;
    3.1M nnz/s``).  Shown whatever :func:`ultrafs.progress.showing` says:
    a pass gets a PassProgress only when its caller asked for progress.

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
        self.merged_nnz = 0       # nnz summed by the merge tasks (a fused block)
        self.clock = current_clock()
        if self.clock is not None:
            self.clock.begin()
        self.title = describe_label(label, self.clock)
        self._started = time.perf_counter()
        self._drawn = 0.0
        self.phase = None

    def _start(self, dsk):
        # the bar opens when the pass starts (not when the callback is made)
        from ultrafs.progress import Phase

        if self.phase is None:
            self._started = time.perf_counter()
            self.phase = Phase(self.title, self.n_blocks, "block", show=True,
                               stream=self.stream, mininterval=self.min_interval)

    def _is_block_task(self, key) -> bool:
        # block tasks are named after the task function (fused or not with
        # the per-block merge); tree-reduction steps are "...aggregate..."
        name = str(key[0] if isinstance(key, tuple) else key)
        return name.startswith(self.task_name.lstrip("_")) and "aggregate" not in name

    def _posttask(self, key, result, dsk, state, worker_id):
        if not self._is_block_task(key):
            # a merge task: its counters sum the blocks below it, those of
            # a block task fused into it included (one-block stores)
            self.merged_nnz = max(self.merged_nnz, block_task_nnz(result))
            return
        self.done += 1
        self.nnz += block_task_nnz(result)
        if self.phase is None:
            self._start(dsk)
        now = time.perf_counter()
        status = None
        if now - self._drawn >= self.min_interval or self.done == self.n_blocks:
            self._drawn = now
            status = self.status(now)
        self.phase.update(1, status=status)

    def _finish(self, dsk, state, errored):
        if self.phase is None:
            return
        if not errored and self.done < self.n_blocks:
            # a block task fused into the reduction is not seen by _posttask
            self.phase.update(self.n_blocks - self.done)
            self.done = self.n_blocks
        if self.done:
            self.phase.set_status(self.status(time.perf_counter()))
        self.phase.close()

    def status(self, now) -> str:
        """The rate in nonzeros per second and (while it runs) the run's ETA."""
        elapsed = max(now - self._started, 1e-9)
        nnz = max(self.nnz, self.merged_nnz)
        parts = []
        if nnz > 0:
            parts.append(f"{_count(nnz / elapsed)} nnz/s")
        if self.clock is not None:
            remaining = (self.n_blocks - self.done) * elapsed / max(self.done, 1)
            overall = self.clock.remaining(now, remaining)
            if overall is not None:
                parts.append(f"run ETA {format_seconds(overall)}")
        return ", ".join(parts)

    def line(self, now) -> str:
        """The progress in one line: what runs, blocks, rate, ETA of the pass and the run."""
        elapsed = max(now - self._started, 1e-9)
        remaining = (self.n_blocks - self.done) * elapsed / max(self.done, 1)
        status = self.status(now)
        return (f"{self.title} {self.done}/{self.n_blocks} blocks, ETA "
                f"{format_seconds(remaining)}" + (f"; {status}" if status else ""))
