"""How a run executes: one object passed once to every method.

The scheduler, worker count and block size of the streamed passes, the
progress display, the memory limit and the checkpoint are not parameters
of a model (they never change it: results do not depend on the block size,
worker count or scheduler); they travel together as an :class:`Execution`
instead of as loose keywords forwarded by hand.

This module imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

__all__ = ["Execution"]


@dataclass(frozen=True)
class Execution:
    """Where and how a method's passes run.

    Attributes
    ----------
    scheduler : str, dask Client or None
        "threads", "processes", "synchronous", a dask scheduler's address
        ("tcp://HOST:PORT") or a ``dask.distributed`` Client; None: the
        active Client when there is one, else "threads"
        (:func:`ultrafs.scoring.scheduling.resolve_scheduler`, called once
        per run by :func:`ultrafs.api.fit`).
    num_workers : int, optional
        Threads or processes of a local scheduler (default: the CPU count).
    block_size : int, optional
        Columns per task of a pass (default: the store's blocks).
    progress : bool
        Show the progress of long phases on stderr.
    callback : callable, optional
        Called with each iteration's record (a dict).
    memory_limit : int, optional
        Bytes the run may hold (methods that support it stop before a step
        whose projected peak would exceed it).
    checkpoint : path, optional
        Folder where the loop state is committed after every iteration.
    resume : bool
        Continue from ``checkpoint``.
    command : str, optional
        The command line, recorded in the model's ``params``.
    """

    scheduler: Any = None
    num_workers: int | None = None
    block_size: int | None = None
    progress: bool = False
    callback: Callable | None = None
    memory_limit: int | None = None
    checkpoint: Any = None
    resume: bool = False
    command: str | None = None

    def passes(self) -> dict:
        """The keywords of a streamed pass: ``block_size``, ``scheduler``,
        ``num_workers``."""
        return {"block_size": self.block_size, "scheduler": self.scheduler,
                "num_workers": self.num_workers}

    def replace(self, **changes) -> "Execution":
        """A copy with ``changes``."""
        return replace(self, **changes)
