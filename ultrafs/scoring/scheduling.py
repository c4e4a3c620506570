"""Resolve the user's scheduler choice into something ``dask.compute`` takes."""

from __future__ import annotations

from ultrafs.errors import ClusterError, ParameterError

__all__ = ["LOCAL_SCHEDULERS", "resolve_scheduler", "compute", "compute_graph", "local_get",
           "process_pool", "WORKER_TIMEOUT_KEY", "DEFAULT_WORKER_TIMEOUT_S",
           "worker_timeout"]

#: scheduler names understood without a cluster
LOCAL_SCHEDULERS = ("threads", "processes", "synchronous")

#: dask config key (env ``DASK_ULTRAFS__WORKER_TIMEOUT``; the CLI's
#: ``--worker-timeout`` / ``ULTRAFS_WORKER_TIMEOUT`` set it): seconds a
#: distributed pass waits while its cluster has no worker at all
WORKER_TIMEOUT_KEY = "ultrafs.worker-timeout"
DEFAULT_WORKER_TIMEOUT_S = 60.0
#: how often a distributed pass checks its cluster while it waits
_POLL_S = 0.5


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

    Raises
    ------
    ClusterError
        On a distributed client: no worker for :func:`worker_timeout`
        seconds, the scheduler lost or unreachable as long, or a task that
        killed its workers (one line each; the pass is cancelled).
    """
    import dask

    scheduler = resolve_scheduler(scheduler)
    if not isinstance(scheduler, str):
        return _compute_distributed(collection, scheduler, progress is not None)
    kwargs, reporter = _local_options(scheduler, num_workers, progress)
    with reporter:
        (result,) = dask.compute(collection, scheduler=local_get(scheduler), **kwargs)
    return result


def _local_options(scheduler, num_workers, progress):
    """The keywords of a local run (``num_workers``; the kept ``pool`` of
    the process scheduler) and its progress context."""
    import contextlib

    kwargs = {}
    if num_workers is not None and scheduler != "synchronous":
        kwargs["num_workers"] = int(num_workers)
    if scheduler == "processes":
        kwargs["pool"] = process_pool(kwargs.get("num_workers"))
    reporter = contextlib.nullcontext()
    if progress is not None:
        from ultrafs.scoring.progress import PassProgress

        reporter = PassProgress(*progress)
    return kwargs, reporter


def compute_graph(graph, key, scheduler, num_workers=None, progress=None):
    """Run a plain Dask graph on a local scheduler; the value of ``key``.

    Parameters
    ----------
    graph : dict
        A Dask graph (keys to tasks or values).
    key : hashable
        The key whose value is returned.
    scheduler : {"threads", "processes", "synchronous"}
    num_workers, progress
        As for :func:`compute`.
    """
    kwargs, reporter = _local_options(scheduler, num_workers, progress)
    with reporter:
        return local_get(scheduler)(graph, key, **kwargs)


def local_get(name):
    """Dask's get function of a local scheduler name.

    ``dask.compute(..., scheduler="threads")`` imports ``dask.distributed``
    to look for an active client (0.2-0.3 s of every run); the get function
    itself is what the name selects, so passing it skips that search.

    Parameters
    ----------
    name : {"threads", "processes", "synchronous"}

    Returns
    -------
    get : callable
        ``get(dsk, keys, **kwargs)``.
    """
    if name == "threads":
        from dask.threaded import get
    elif name == "processes":
        from dask.multiprocessing import get
    elif name == "synchronous":
        from dask.local import get_sync as get
    else:
        raise ParameterError(
            f"unknown scheduler {name!r}; expected one of "
            f"{', '.join(LOCAL_SCHEDULERS)} or a dask.distributed Client")
    return get


def worker_timeout() -> float:
    """Seconds a distributed pass waits with no worker before it fails.

    Read from the dask config key ``ultrafs.worker-timeout`` (default
    :data:`DEFAULT_WORKER_TIMEOUT_S`).
    """
    import dask

    value = dask.config.get(WORKER_TIMEOUT_KEY, DEFAULT_WORKER_TIMEOUT_S)
    try:
        seconds = float(dask.utils.parse_timedelta(value, default="seconds"))
    except (TypeError, ValueError):
        seconds = float("nan")
    if not seconds > 0:
        raise ParameterError(f"{WORKER_TIMEOUT_KEY} must be a duration > 0, got {value!r}")
    return seconds


def _scheduler_address(client) -> str:
    try:
        return str(client.scheduler.address)
    except Exception:  # noqa: BLE001 - only used in a message
        return "the dask scheduler"


def _count_workers(client):
    """Workers the scheduler knows, or None when it cannot be asked."""
    if client.status not in ("running", "newly-created"):
        return None
    try:
        return len(client.scheduler_info(n_workers=-1).get("workers", {}))
    except Exception:  # noqa: BLE001 - a lost scheduler raises many kinds
        return None


def _compute_distributed(collection, client, show_progress):
    """Run one collection on a distributed client; bounded waits.

    The future is polled every :data:`_POLL_S` seconds.  A cluster with no
    worker for :func:`worker_timeout` seconds, a scheduler that cannot be
    reached for as long, a lost connection and a task that killed its
    workers each end in a :class:`ClusterError` (one line).
    """
    import concurrent.futures
    import time

    limit = worker_timeout()
    where = _scheduler_address(client)
    future = client.compute(collection)
    bar = _start_progress(client, future) if show_progress else None
    trouble_since = None
    try:
        while True:
            try:
                result = future.result(timeout=_POLL_S)
                if bar is not None:
                    # let the bar draw 100% while the future still holds its keys
                    concurrent.futures.wait([bar], timeout=2.0)
                return result
            except TimeoutError:
                # the poll timed out; a future that finished meanwhile is
                # collected by the next poll, one whose task raised
                # TimeoutError itself re-raises it
                if future.done() and future.status == "error":
                    raise
            except concurrent.futures.CancelledError:
                raise ClusterError(
                    f"lost the connection to the dask scheduler at {where} "
                    "(the pass was cancelled)") from None
            except Exception as exc:
                if type(exc).__name__ == "KilledWorker":
                    raise ClusterError(
                        f"dask workers of {where} died while running a task "
                        f"({str(exc).splitlines()[0]})") from None
                raise
            n_workers = _count_workers(client)
            if n_workers:
                trouble_since = None
                continue
            now = time.monotonic()
            if trouble_since is None:
                trouble_since = now
            elif now - trouble_since > limit:
                if n_workers is None:
                    raise ClusterError(
                        f"lost the connection to the dask scheduler at {where} "
                        f"for {limit:g} s ({WORKER_TIMEOUT_KEY})")
                raise ClusterError(
                    f"no dask worker left at {where} for {limit:g} s "
                    f"(--worker-timeout / {WORKER_TIMEOUT_KEY})")
    finally:
        if not future.done():
            try:
                future.cancel()
            except Exception:  # noqa: BLE001 - the client may be gone
                pass
        if bar is not None:
            bar.cancel()
            import sys

            sys.stderr.write("\n")


def _start_progress(client, future):
    """Draw dask's text progress bar on stderr without blocking.

    Returns
    -------
    concurrent.futures.Future
        The bar's listener running on the client's event loop (cancel it
        to stop the bar).
    """
    import asyncio
    import sys

    from distributed.diagnostics.progressbar import TextProgressBar

    class _StderrBar(TextProgressBar):
        def _draw_bar(self, remaining, all, **kwargs):
            done = (1 - remaining / all) if all else 1.0
            sys.stderr.write(f"\r[{'#' * int(self.width * done):<{self.width}}] | "
                             f"{int(100 * done)}% Completed")
            sys.stderr.flush()

        def _draw_stop(self, **kwargs):
            pass

    bar = _StderrBar([future], scheduler=client.scheduler.address, start=False)
    return asyncio.run_coroutine_threadsafe(bar.listen(), client.loop.asyncio_loop)


# ------------------------------------------------------ the kept process pool
_pools: dict = {}          # (pid, workers, context) -> ProcessPoolExecutor
_pools_lock = None         # a threading.Lock, made on first use


def process_pool(num_workers=None):
    """The worker processes of the ``"processes"`` scheduler, kept across passes.

    ``dask.multiprocessing.get`` starts a new pool of processes for every
    call unless it is given one; each new process imports numpy, Dask and
    ultrafs and loads the numba kernels again (1-2 s), and a run makes one
    call per pass (FGM: one per outer iteration; ``C="auto"``: dozens). The
    pool is therefore made once per process, worker count and
    multiprocessing context (Dask's ``multiprocessing.context``, "spawn" by
    default), with Dask's own worker initializer, reused by every later
    pass, replaced when broken (a worker that died), and shut down at exit.
    A forked child never reuses its parent's pool. Tasks carry everything
    they read, so results are the same as with a fresh pool.

    Parameters
    ----------
    num_workers : int, optional
        Worker processes (default: Dask's ``num_workers`` or the CPU count).

    Returns
    -------
    pool : concurrent.futures.ProcessPoolExecutor
    """
    import atexit
    import os
    import threading
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    import dask
    from dask.multiprocessing import CPU_COUNT, get_context, initialize_worker_process

    global _pools_lock
    if _pools_lock is None:
        _pools_lock = threading.Lock()
    workers = int(num_workers or dask.config.get("num_workers", None) or CPU_COUNT)
    context = get_context()
    key = (os.getpid(), workers, context.get_start_method())
    with _pools_lock:
        pool = _pools.get(key)
        if pool is not None and not getattr(pool, "_broken", False):
            return pool
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if not _pools:
            atexit.register(_shutdown_pools)
        # as dask.multiprocessing.get does for the pools it makes: one hash
        # seed for the workers (inherited through the environment)
        if os.environ.get("PYTHONHASHSEED") in (None, "0"):
            os.environ["PYTHONHASHSEED"] = "6640"
        initializer = partial(initialize_worker_process, user_initializer=dask.config.get(
            "multiprocessing.initializer", None))
        pool = ProcessPoolExecutor(workers, mp_context=context, initializer=initializer)
        _pools[key] = pool
        return pool


def _shutdown_pools():
    import os

    for key, pool in list(_pools.items()):
        if key[0] == os.getpid():
            pool.shutdown(wait=True, cancel_futures=True)
        _pools.pop(key, None)
