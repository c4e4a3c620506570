"""Resolve the user's scheduler choice into something ``dask.compute`` takes."""

from __future__ import annotations

from ultrafs.errors import ParameterError

__all__ = ["LOCAL_SCHEDULERS", "resolve_scheduler", "compute"]

#: scheduler names understood without a cluster
LOCAL_SCHEDULERS = ("threads", "processes", "synchronous")


def resolve_scheduler(scheduler):
    """Validate a scheduler specification.

    Parameters
    ----------
    scheduler : None, str or distributed.Client
        None or ``"threads"`` (the default: local threads; numba kernels
        release the GIL), ``"processes"``, ``"synchronous"``, or a
        ``dask.distributed.Client``.

    Returns
    -------
    scheduler : str or Client
    """
    if scheduler is None:
        return "threads"
    if isinstance(scheduler, str):
        if scheduler in LOCAL_SCHEDULERS:
            return scheduler
        raise ParameterError(
            f"unknown scheduler {scheduler!r}; expected one of "
            f"{', '.join(LOCAL_SCHEDULERS)} or a dask.distributed Client")
    if hasattr(scheduler, "get") and hasattr(scheduler, "submit"):
        return scheduler  # a distributed Client
    raise ParameterError(f"unsupported scheduler object {scheduler!r}")


def compute(collection, scheduler, num_workers=None, progress=None):
    """``dask.compute`` one collection on the resolved scheduler.

    Parameters
    ----------
    collection : dask collection
    scheduler : see :func:`resolve_scheduler`
    num_workers : int, optional
        Threads or processes of a local scheduler.
    progress : (label, n_blocks) or None
        Show a progress line on stderr: local schedulers count block tasks
        (:class:`ultrafs.scoring.progress.PassProgress`); a distributed client uses
        Dask's own progress bar.
    """
    import contextlib
    import sys

    import dask

    scheduler = resolve_scheduler(scheduler)
    if not isinstance(scheduler, str):
        future = scheduler.compute(collection)
        if progress is not None:
            from distributed import progress as dask_progress

            with contextlib.redirect_stdout(sys.stderr):
                dask_progress(future)
            sys.stderr.write("\n")
        return future.result()
    kwargs = {"scheduler": scheduler}
    if num_workers is not None and scheduler != "synchronous":
        kwargs["num_workers"] = int(num_workers)
    reporter = contextlib.nullcontext()
    if progress is not None:
        from ultrafs.scoring.progress import PassProgress

        reporter = PassProgress(*progress)
    with reporter:
        (result,) = dask.compute(collection, **kwargs)
    return result
