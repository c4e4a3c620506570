"""One method run on the command line: the scheduler, the progress lines,
the :class:`~ultrafs.methods.execution.Execution` and :func:`ultrafs.api.fit`
(``select``, ``demo``)."""

from __future__ import annotations

import contextlib
import logging

from ultrafs.cli.scheduler import scheduler_for_run
from ultrafs.cli.terminal import progress_enabled

__all__ = ["run_method"]


def run_method(method, store, params, *, command, progress=None, scheduler="threads",
               workers=None, block_size=None, connect_timeout=None,
               worker_timeout=None, checkpoint=None, resume=False, memory_limit=None):
    """Fit ``method`` with ``params`` (its given parameters) on ``store``.

    Every iteration's record is shown on stderr (``Method.progress_line``,
    with the run's ETA) when ``progress`` is on (default: stderr is a
    terminal); a run that resumes from its checkpoint says so in one line
    (the ``ultrafs.resume`` logger), progress or not.

    Returns
    -------
    Model
    """
    from ultrafs.api import fit
    from ultrafs.methods.execution import Execution
    from ultrafs.progress import say
    from ultrafs.scoring.progress import format_seconds, run_clock

    show = progress_enabled(progress)
    clock = None

    def report(record):
        if clock is not None and "iteration" in record:
            clock.iteration_done(record["iteration"])
        if show and method.progress_line is not None:
            left = clock.remaining() if clock is not None else None
            # a record without an iteration (a point of the l1 path) has no prefix
            name = "" if "iteration" not in record else (
                f"{clock.name(record['iteration'])}: " if clock is not None
                else f"iteration {record['iteration']}: ")
            say(f"{name}{method.progress_line(record)}"
                + ("" if left is None or left <= 0 else f"; run ETA {format_seconds(left)}"))

    iterations = params.get("max_iter")
    if iterations is None:
        iterations = method.params.__dataclass_fields__.get("max_iter")
        iterations = getattr(iterations, "default", None)
    clock_context = (run_clock(iterations) if isinstance(iterations, int)
                     else _no_clock())
    with clock_context as clock, _resume_notices(), \
            scheduler_for_run(scheduler, connect_timeout, worker_timeout) as dask_scheduler:
        execution = Execution(scheduler=dask_scheduler, num_workers=workers,
                              block_size=block_size, progress=show, callback=report,
                              memory_limit=memory_limit, checkpoint=checkpoint,
                              resume=bool(resume), command=command)
        return fit(method, store, execution=execution, **params)


class _EchoHandler(logging.Handler):
    """Writes each record's message as one line on stderr."""

    def emit(self, record):
        from ultrafs.progress import say

        say(record.getMessage())


@contextlib.contextmanager
def _resume_notices():
    """Show the ``ultrafs.resume`` logger's lines on stderr for the run."""
    resume_logger = logging.getLogger("ultrafs.resume")
    handler, level = _EchoHandler(logging.INFO), resume_logger.level
    resume_logger.addHandler(handler)
    resume_logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        resume_logger.removeHandler(handler)
        resume_logger.setLevel(level)


class _no_clock:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
