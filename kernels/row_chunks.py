"""Fixed row chunks, and the choice between a serial and a parallel kernel.

The solver's kernels come in pairs: a serial kernel and a ``*_parallel``
twin (``numba`` ``parallel=True``, ``prange``) that returns the same bytes
for any number of threads:

* sums over samples are taken per fixed chunk of :data:`CHUNK` rows (a
  count that depends on ``n`` only, never on the threads), each chunk into
  its own partial, and the partials are added in chunk order; the serial
  twin adds the same partials in the same order;
* every other output entry is computed by one thread, in the order the
  serial kernel uses (per-sample values; a product's entry owned by its
  column or by its range of rows).

:func:`parallel` (or :func:`dispatch`) picks the kernel of a pair at each
call: the parallel twin when numba may run more than one thread here and
launching a parallel region is safe, the serial one otherwise. The results are the same either
way, so the choice is about safety and speed only:

* ``numba.get_num_threads() == 1`` (``NUMBA_NUM_THREADS=1``, or
  ``numba.set_num_threads(1)`` in the calling thread): serial, no launch.
* Calls smaller than :data:`MIN_PARALLEL_WORK` (samples or entries):
  serial.
* In a process forked after numba's threading layer was started (by any
  caller): serial, unless the layer is ``tbb``. GNU OpenMP (numba's ``omp``
  layer on Linux) aborts a forked child that launches a parallel region.
* The ``workqueue`` layer (no TBB, no OpenMP) aborts when two threads
  launch parallel regions at the same time: a parallel twin runs only when
  the calling thread gets a process-wide lock without waiting; a thread
  that finds it held runs the serial kernel.
* ``omp`` and ``tbb`` are thread-safe: any thread may launch at any time
  (a model fitted inside a thread, or two at once).

The threading layer is started, and recorded, by the first parallel call,
under a lock, through numba's own launcher (no kernel compiled for it: a
``parallel=True`` compile costs seconds on a first run). Kernels that Dask tasks call (the scoring
kernels) stay serial and never come here.

This module imports nothing of ultrafs.
"""

from __future__ import annotations

import os
import threading

import numba
import numpy as np
from numba import njit, prange

__all__ = ["CHUNK", "MIN_PARALLEL_WORK", "n_chunks", "ordered_sum", "dispatch",
           "parallel", "parallel_allowed", "threading_layer"]

#: Rows per chunk of every sum over samples. Part of the results (the order
#: of the additions): changing it changes the last bits of every loss sum
#: (and needs the numba cache cleared: cached kernels of other modules keep
#: the value they were compiled with).
CHUNK = 2 ** 14
#: smallest call (samples, entries) given to a parallel twin: two chunks
MIN_PARALLEL_WORK = 2 * CHUNK

_lock = threading.Lock()          # guards the one-time start
_launch_lock = threading.Lock()   # serialises launches under "workqueue"
_layer = None                     # the threading layer, once started here
_layer_pid = None                 # the process that started it
_unsafe_fork = False              # a child forked after a non-TBB layer started


@njit(cache=True, nogil=True)
def n_chunks(n):
    """The number of :data:`CHUNK`-row chunks of ``n`` rows (0 for ``n = 0``)."""
    return (n + CHUNK - 1) // CHUNK


@njit(cache=True, nogil=True)
def ordered_sum(parts):
    """``((0 + parts[0]) + parts[1]) + ...``: the chunks' partials in chunk order."""
    total = 0.0
    for c in range(len(parts)):
        total += parts[c]
    return total


@njit(cache=True, nogil=True, parallel=True)
def _start(x):
    """A trivial parallel kernel: running it starts numba's threading layer.

    Only a fallback (:func:`_start_layer`): a ``parallel=True`` compile costs
    seconds on a first run.
    """
    for i in prange(len(x)):
        x[i] = i
    return x


def _start_layer() -> None:
    """Start numba's threading layer, without compiling a kernel if possible.

    ``numba.np.ufunc.parallel._launch_threads`` is what numba's first
    parallel launch calls (numba 0.49 through 0.68); where it is missing the
    trivial kernel :func:`_start` is compiled and run instead.
    """
    try:
        from numba.np.ufunc.parallel import _launch_threads
    except ImportError:  # pragma: no cover - a numba without it
        _launch_threads = None
    if _launch_threads is not None:
        _launch_threads()
        if _started_layer() is not None:
            return
    _start(np.empty(2))  # pragma: no cover - only without _launch_threads


def _started_layer():
    """numba's threading layer if started in this process (or its parent), else None."""
    try:
        return numba.threading_layer()
    except ValueError:
        return None


def _after_fork_in_child() -> None:
    global _unsafe_fork
    layer = _layer or _started_layer()
    if layer is not None and layer != "tbb":
        _unsafe_fork = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def threading_layer() -> str | None:
    """The threading layer the parallel kernels run on (None: not started yet)."""
    return _layer


def _ensure_started() -> str:
    global _layer, _layer_pid
    if _layer is None:
        with _lock:
            if _layer is None:
                _start_layer()
                _layer_pid = os.getpid()
                _layer = numba.threading_layer()
    return _layer


def parallel_allowed() -> bool:
    """Whether a parallel twin may run in this thread (see the module docstring).

    Under ``workqueue`` :func:`parallel` also needs the launch lock.
    """
    if _unsafe_fork or numba.get_num_threads() < 2:
        return False
    layer = _ensure_started()
    # a fork the hook did not see (no os.register_at_fork)
    return _layer_pid == os.getpid() or layer == "tbb"


def dispatch(serial_call, parallel_call, work=None):
    """Return ``parallel_call()`` where a parallel kernel may run, else ``serial_call()``.

    Both are callables without arguments computing the same result (a
    kernel pair called with its arguments); under ``workqueue`` the
    parallel call holds the launch lock, or the serial one runs.  ``work``
    (samples, entries): below :data:`MIN_PARALLEL_WORK` the serial kernel
    runs (there is at most one chunk to share).
    """
    if (work is not None and work < MIN_PARALLEL_WORK) or not parallel_allowed():
        return serial_call()
    if _layer == "workqueue":
        if not _launch_lock.acquire(blocking=False):
            return serial_call()
        try:
            return parallel_call()
        finally:
            _launch_lock.release()
    return parallel_call()


def _first_length(first, *rest):
    return len(first)


def parallel(serial, parallel_twin, work=_first_length):
    """A callable running ``parallel_twin`` where allowed, else ``serial``.

    Parameters
    ----------
    serial, parallel_twin : numba dispatchers
        The two kernels of a pair: same arguments, same results.
    work : callable, default ``len`` of the first argument
        The size of a call from its arguments (see :func:`dispatch`).

    Returns
    -------
    callable
        Calls the chosen kernel with its arguments (:func:`dispatch`); the
        kernels stay available as its ``serial`` and ``parallel``
        attributes.
    """

    def call(*args):
        return dispatch(lambda: serial(*args), lambda: parallel_twin(*args),
                        work(*args))

    call.serial = serial
    call.parallel = parallel_twin
    call.__name__ = getattr(serial, "__name__", "kernel")
    call.__qualname__ = call.__name__
    call.__doc__ = getattr(serial, "__doc__", None)
    return call
