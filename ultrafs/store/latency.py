"""Stores that imitate slow remote storage, for tests and benchmarks.

Two wrappers, in the spirit of zarr-python's ``LatencyStore``
(``zarr/testing/store.py``, which cannot be used here: importing
``zarr.testing`` imports pytest):

:class:`LatencyColumnStore`
    Wraps any :class:`~ultrafs.store.base.ColumnStore` and sleeps
    ``latency_s`` before every data read (``read_range`` and
    ``read_columns``): one remote round trip per block.  Works for every
    backend.
:class:`ZarrLatencyStore`
    A :class:`~ultrafs.store.zarr_store.ZarrStore` whose arrays are read
    through :class:`ZarrGetLatency`, a zarr-python store wrapper that
    awaits ``get_latency`` seconds before every request (every chunk get),
    as zarr's own ``LatencyStore`` does.  zarr issues the chunk requests
    of one array slice concurrently, so a block read costs about two
    latencies (``indptr``, then ``indices``/``data``), like an object store.

Both sleep without holding the GIL (``time.sleep`` / ``asyncio.sleep``),
so with the threaded scheduler a pass with more threads than cores keeps
several reads in flight while the kernels compute.  Both pickle (the
wrapped store by its own cheap pickling, the latency as a number), so
they also work with the processes scheduler and ``dask.distributed``.
Targets, labels and metadata are not delayed by :class:`LatencyColumnStore`:
the driver reads them once per fit.
"""

from __future__ import annotations

import asyncio
import threading
import time

from zarr.storage import LocalStore, WrapperStore

from ultrafs.store.base import ColumnBlock, SameRowsWrapper
from ultrafs.store.zarr_store import ZarrStore, reopen_lazily

__all__ = ["LatencyColumnStore", "ZarrGetLatency", "ZarrLatencyStore"]


def _check_latency(latency) -> float:
    latency = float(latency)
    if not latency >= 0.0:          # also rejects NaN
        raise ValueError(f"latency must be >= 0 seconds, got {latency}")
    return latency


class LatencyColumnStore(SameRowsWrapper):
    """A column store that waits ``latency_s`` before every data read.

    Parameters
    ----------
    inner : ColumnStore
        The store read from; returned data is ``inner``'s, unchanged.
    latency_s : float
        Seconds slept before each ``read_range`` and each ``read_columns``
        (one round trip per request, whatever its size).

    Attributes
    ----------
    n_reads : int
        Delayed reads made through this object (not shared with pickled
        copies; a counter for tests).
    max_in_flight : int
        The most reads that were waiting out their latency at the same time
        (likewise): above 1, the reads of a pass overlapped.

    Notes
    -----
    Everything but the two data reads is delegated to ``inner`` without
    delay: shape, dtype, target type, targets, labels, classes and block
    partitions.
    """

    def __init__(self, inner, latency_s: float = 0.0):
        super().__init__(inner)
        self._latency = _check_latency(latency_s)
        self._count_lock = threading.Lock()
        self.n_reads = 0
        self.max_in_flight = 0
        self._in_flight = 0

    def __reduce__(self):
        return (type(self), (self._inner, self._latency))

    def __repr__(self):
        return f"LatencyColumnStore({self._inner!r}, latency_s={self._latency})"

    # --------------------------------------------------------- attributes
    @property
    def latency_s(self) -> float:
        """Seconds slept before each data read."""
        return self._latency

    # -------------------------------------------------------------- reads
    def _wait(self) -> None:
        with self._count_lock:
            self.n_reads += 1
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self._latency > 0.0:
                time.sleep(self._latency)
        finally:
            with self._count_lock:
                self._in_flight -= 1

    def read_range(self, start, stop) -> ColumnBlock:
        """``inner.read_range(start, stop)`` after one latency."""
        self._wait()
        return self._inner.read_range(start, stop)

    def read_columns(self, columns) -> ColumnBlock:
        """``inner.read_columns(columns)`` after one latency."""
        self._wait()
        return self._inner.read_columns(columns)

    def describe(self) -> dict:
        summary = self._inner.describe()
        summary["latency_s"] = self._latency
        return summary


class ZarrGetLatency(WrapperStore):
    """zarr-python store wrapper adding ``get_latency`` seconds per request.

    Imitates zarr's ``zarr.testing.store.LatencyStore`` for reads: every
    ``get`` and every ``get_partial_values`` call awaits
    ``asyncio.sleep(get_latency)`` first; concurrent requests overlap.

    Parameters
    ----------
    store : zarr.abc.store.Store
    get_latency : float
        Seconds per request.
    """

    def __init__(self, store, *, get_latency: float = 0.0):
        super().__init__(store)
        self.get_latency = _check_latency(get_latency)

    def _with_store(self, store):
        return type(self)(store, get_latency=self.get_latency)

    async def get(self, key, prototype, byte_range=None):
        await asyncio.sleep(self.get_latency)
        return await self._store.get(key, prototype=prototype, byte_range=byte_range)

    async def get_partial_values(self, prototype, key_ranges):
        await asyncio.sleep(self.get_latency)
        return await self._store.get_partial_values(prototype, key_ranges)


class ZarrLatencyStore(ZarrStore):
    """A :class:`ZarrStore` read through :class:`ZarrGetLatency`.

    Parameters
    ----------
    path : str or os.PathLike
        Directory of the store (validated as :class:`ZarrStore` does).
    get_latency : float
        Seconds added to every chunk request.

    Notes
    -----
    Returns exactly the data of ``ZarrStore(path)``.  Pickling keeps the
    path and the latency; an unpickled copy opens the store on first use.
    """

    def __init__(self, path, *, get_latency: float = 0.0):
        self._get_latency = _check_latency(get_latency)
        super().__init__(path)

    def _zarr_store(self):
        return ZarrGetLatency(LocalStore(self._path, read_only=True),
                              get_latency=self._get_latency)

    def __reduce__(self):
        return (_reopen_zarr_latency, (str(self._path), self._get_latency))

    def __repr__(self):
        return f"ZarrLatencyStore({str(self._path)!r}, get_latency={self._get_latency})"

    @property
    def get_latency(self) -> float:
        """Seconds added to every chunk request."""
        return self._get_latency

    def describe(self) -> dict:
        summary = super().describe()
        summary["get_latency"] = self._get_latency
        return summary


def _reopen_zarr_latency(path, get_latency):
    """Unpickle a ZarrLatencyStore: like a ZarrStore, open on first use."""
    store = ZarrLatencyStore.__new__(ZarrLatencyStore)
    store.__dict__.update(reopen_lazily(path).__dict__)
    store._get_latency = float(get_latency)
    return store
