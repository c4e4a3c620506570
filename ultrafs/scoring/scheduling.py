"""Resolve the user's scheduler choice into something ``dask.compute`` takes."""

from __future__ import annotations

import threading

from ultrafs.errors import ClusterError, ParameterError

__all__ = ["LOCAL_SCHEDULERS", "resolve_scheduler", "check_scheduler", "is_address",
           "is_client", "active_client", "client_for_address", "probe_scheduler",
           "close_clients", "scheduler_address", "compute", "compute_graph", "local_get",
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
    """The scheduler a pass runs on, from the user's specification.

    Parameters
    ----------
    scheduler : None, str or distributed.Client
        ``"threads"`` (local threads; numba kernels release the GIL),
        ``"processes"``, ``"synchronous"``, the address of a dask scheduler
        (``"tcp://HOST:PORT"``: a client connected once per process and
        address, :func:`client_for_address`), or a
        ``dask.distributed.Client``.  None: the active Client
        (:func:`active_client`, dask's ``default_client()`` convention)
        when there is one, else ``"threads"``.

    Returns
    -------
    scheduler : str or Client
        A local scheduler's name or a client.

    Raises
    ------
    ParameterError
        An unknown name or object.
    ClusterError
        An address that cannot be reached.
    """
    check_scheduler(scheduler)
    if scheduler is None:
        client = active_client()
        return "threads" if client is None else client
    if isinstance(scheduler, str) and scheduler not in LOCAL_SCHEDULERS:
        return client_for_address(scheduler)
    return scheduler


def check_scheduler(scheduler):
    """Refuse what :func:`resolve_scheduler` cannot take, without
    connecting to anything.

    Raises
    ------
    ParameterError
        Neither None, a local scheduler's name, an address nor a Client.
    """
    if scheduler is None or is_client(scheduler):
        return
    if isinstance(scheduler, str):
        if scheduler in LOCAL_SCHEDULERS or is_address(scheduler):
            return
        raise _unknown_scheduler(scheduler)
    raise ParameterError(f"unsupported scheduler object {scheduler!r}")


def _unknown_scheduler(name) -> ParameterError:
    return ParameterError(
        f"unknown scheduler {name!r}; expected one of {', '.join(LOCAL_SCHEDULERS)}, "
        "a scheduler address (tcp://HOST:PORT) or a dask.distributed Client")


def is_client(scheduler) -> bool:
    """Whether ``scheduler`` is a ``dask.distributed`` Client (duck-typed:
    distributed is not imported)."""
    return (not isinstance(scheduler, str) and hasattr(scheduler, "get")
            and hasattr(scheduler, "submit"))


def is_address(spec: str) -> bool:
    """Whether ``spec`` names a dask scheduler: ``PROTOCOL://...`` or ``HOST:PORT``."""
    import re

    return "://" in spec or re.fullmatch(r"[\w.\-]+:\d+|\[[0-9a-fA-F:.]+\]:\d+",
                                         spec) is not None


def active_client():
    """The ``dask.distributed`` Client active here, or None.

    Dask's convention (``distributed.default_client()``): the client made
    last (or the one of a ``with client.as_current()`` block) that is not
    closed.  ``distributed`` is not imported when it is not imported
    already (then no client can exist).

    Returns
    -------
    client : distributed.Client or None
    """
    import sys

    distributed = sys.modules.get("distributed")
    if distributed is None:
        return None
    try:
        client = distributed.default_client()
    except ValueError:      # none
        return None
    return None if client.status in ("closing", "closed") else client


def scheduler_address(client) -> str | None:
    """The scheduler address of a Client (what pickles in its place), or
    None when it cannot be read (a closed client)."""
    try:
        return str(client.scheduler.address)
    except Exception:  # noqa: BLE001 - a closed client raises many kinds
        return None


#: clients this module connected, by (process id, address)
_clients: dict = {}
_clients_lock = threading.Lock()


def client_for_address(address: str):
    """A running ``dask.distributed`` Client of the scheduler at ``address``.

    A client of this process already connected to it (the active one, the
    worker's when this runs in a task of that cluster, or one this function
    made before) is reused; otherwise one is connected
    (within dask's ``distributed.comm.timeouts.connect``), kept for later
    passes of this process without becoming the default client, and closed
    at exit.  A forked child never reuses its parent's.

    Parameters
    ----------
    address : str
        ``tcp://HOST:PORT`` (any protocol dask knows) or ``HOST:PORT``.

    Returns
    -------
    client : distributed.Client

    Raises
    ------
    ClusterError
        The address cannot be reached.
    """
    import atexit
    import os

    from distributed import Client
    from distributed.comm import resolve_address

    try:
        wanted = resolve_address(address)
    except (ValueError, TypeError) as exc:
        raise ParameterError(f"scheduler address {address!r} is not valid "
                             f"({_first_line(exc)})") from None
    except OSError as exc:      # a host name that does not resolve
        raise ClusterError(f"cannot reach the dask scheduler at {address} "
                           f"({_first_line(exc)})") from None
    active = active_client()
    if active is not None and scheduler_address(active) == wanted:
        return active
    from distributed import get_client, get_worker

    try:
        worker = get_worker()
    except ValueError:      # not in a worker
        worker = None
    if worker is not None and worker.scheduler.address == wanted:
        return get_client(wanted)   # the worker's own client
    import dask

    key = (os.getpid(), wanted)
    with _clients_lock:     # threads fitting at once share one connection
        client = _clients.get(key)
        if client is not None and client.status == "running":
            return client
        timeout = dask.utils.parse_timedelta(
            dask.config.get("distributed.comm.timeouts.connect"), default="seconds")
        probe_scheduler(address, timeout, "distributed.comm.timeouts.connect")
        try:
            client = Client(wanted, set_as_default=False, timeout=f"{timeout}s")
        except (OSError, ValueError, TimeoutError) as exc:
            raise ClusterError(f"cannot reach the dask scheduler at {address} "
                               f"({_first_line(exc)})") from None
        if not _clients:
            atexit.register(close_clients)
        _clients[key] = client
        return client


def _first_line(exc) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def probe_scheduler(address: str, timeout: float, setting: str, wording=_first_line):
    """Connect to ``address`` and read dask's handshake within ``timeout`` seconds.

    ``distributed.Client(timeout=...)`` bounds the TCP connection but not
    the handshake read that follows it: an address that accepts TCP and
    never answers would hold the client forever.  This probe runs the same
    connection and handshake under one wall-clock bound
    (``asyncio.wait_for`` cancels it), in a thread of its own (the caller
    may be inside a running event loop, e.g. a notebook's), then closes it.

    Parameters
    ----------
    address : str
    timeout : float
        Seconds.
    setting : str
        What sets ``timeout``, named in the message.
    wording : callable, optional
        The one line of a connection error (the CLI's own wording).

    Raises
    ------
    ClusterError
        The scheduler did not answer in time, or cannot be reached.
    """
    import asyncio
    import concurrent.futures

    from distributed.comm import connect

    async def probe():
        # the outer bound lets connect's own, more precise, error come first
        comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout + 1.0)
        await comm.close()

    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        try:
            thread.submit(asyncio.run, probe()).result()
        except (asyncio.TimeoutError, TimeoutError):
            raise ClusterError(f"the dask scheduler at {address} did not answer within "
                               f"{timeout:g} s ({setting})") from None
        except (OSError, ValueError, TypeError) as exc:
            raise ClusterError(f"cannot reach the dask scheduler at {address} "
                               f"({wording(exc)})") from None


def close_clients():
    """Close the clients :func:`client_for_address` connected in this
    process (done at exit; a later pass connects again)."""
    import os

    for key, client in list(_clients.items()):
        if key[0] == os.getpid():
            try:
                client.close()
            except Exception:  # noqa: BLE001 - the scheduler may be gone
                pass
        _clients.pop(key, None)


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
        raise _unknown_scheduler(name)
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
    """The address of ``client``'s scheduler, for a message."""
    return scheduler_address(client) or "the dask scheduler"


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

    The future's end is waited for by :data:`_POLL_S` seconds (nothing
    gathered; :func:`_gathered` collects the result once it is there).  A
    cluster with no worker for :func:`worker_timeout` seconds, a scheduler
    that cannot be reached for as long, a lost connection and a task that
    killed its workers each end in a :class:`ClusterError` (one line).
    """
    import concurrent.futures
    import time

    limit = worker_timeout()
    where = _scheduler_address(client)
    future = client.compute(collection)
    finished = threading.Event()    # set when the future finishes, fails or is cancelled
    future.add_done_callback(lambda _: finished.set())
    bar = _start_progress(client, future) if show_progress else None
    trouble_since = None
    seceded = _secede_if_in_task()
    try:
        while True:
            try:
                if finished.wait(_POLL_S):
                    result = _gathered(future, where, limit)
                    if bar is not None:
                        # let the bar draw 100% while the future still holds its keys
                        concurrent.futures.wait([bar], timeout=2.0)
                    return result
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
                    f"no dask worker at {where} for {limit:g} s (none joined, or every "
                    f"one was lost; --worker-timeout / {WORKER_TIMEOUT_KEY}; a batch "
                    "job: client.wait_for_workers(n) before the run)")
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
        if seceded:
            from distributed import rejoin

            rejoin()


def _gathered(future, where: str, limit: float):
    """The result of a finished distributed ``future``, gathered within
    ``limit`` seconds.

    A pass is not polled by ``future.result(timeout=...)``: when that
    timeout expires while the result is being gathered, distributed raises
    ``UnboundLocalError`` (dask/distributed#8514; a 4-worker pass of
    ``bench/worker_memory.py`` crashed so), and a result that takes longer
    than a poll to gather would never arrive.

    Raises
    ------
    ClusterError
        The result did not arrive within ``limit`` seconds.
    Exception
        The task's own (a task that raised TimeoutError re-raises it).
    """
    try:
        return future.result(timeout=limit)
    except (TimeoutError, UnboundLocalError):
        if future.status == "error":
            raise
        raise ClusterError(f"could not gather a result from the dask workers of {where} "
                           f"within {limit:g} s ({WORKER_TIMEOUT_KEY})") from None


def _secede_if_in_task() -> bool:
    """Leave the worker's thread pool while this pass waits, when it runs
    inside a task of a dask worker (a fit sent to a cluster, e.g. by
    joblib's dask backend): the pass's own tasks then get the slot instead
    of waiting for it.  Returns whether it did (then ``rejoin`` after)."""
    import sys

    if "distributed" not in sys.modules:
        return False
    from distributed.worker import get_worker, thread_state

    if getattr(thread_state, "key", None) is None:
        return False
    try:
        get_worker()
    except ValueError:
        return False
    from distributed import secede

    secede()
    return True


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
