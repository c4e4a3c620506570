"""Per-thread work buffers for block reads, kept from one read to the next.

The command line fixes glibc's mmap threshold at 2 MiB
(``ultrafs/allocator.py``), so every array of more than 2 MiB is a fresh
mapping, and its first touch page-faults one page at a time.  A block read
allocates several such arrays (a chunk file, a decode scratch, the block's
offsets and rows); on imdb50k the faults cost as much as the decode itself
and made a pass from Zarr half as fast (``bench/README.md`` §14).  A read
takes its transient arrays from the buffers of its thread instead: they
grow to the largest request and are then reused, so a pass page-faults once
per thread, not once per block.

A buffer is valid until its thread takes the same name again; callers take
only arrays that do not outlive the read (or the task) that took them.
Only buffers of at most :data:`RETAIN_BYTES` are kept: a larger request
gets a fresh array, so that what a thread holds stays a block's worth.  The
driver's reads of chosen columns (up to hundreds of MB, on several
threads) do not use these buffers: kept, they cost more memory than their
page faults cost time.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["WorkBuffers", "thread_work", "RETAIN_BYTES"]

#: the largest buffer a thread keeps between reads (the rows of a block of
#: 2^22 entries fit)
RETAIN_BYTES = 24 << 20


class WorkBuffers:
    """Named, growing byte buffers handed out as typed views.

    Not thread-safe: one instance per thread (:func:`thread_work`).
    """

    __slots__ = ("_buffers",)

    def __init__(self):
        self._buffers = {}

    def take(self, name: str, dtype, n: int) -> np.ndarray:
        """A 1-D array of ``n`` items of ``dtype`` (uninitialised), the buffer ``name``.

        The buffer grows to at least ``n`` items (by a quarter more than
        asked, so slowly growing requests reallocate seldom); the previous
        contents of ``name`` are lost.  A request of more than
        :data:`RETAIN_BYTES` gets a fresh array, not kept.
        """
        dtype = np.dtype(dtype)
        nbytes = int(n) * dtype.itemsize
        buffer = self._buffers.get(name)
        if buffer is None or buffer.nbytes < nbytes:
            if nbytes > RETAIN_BYTES:
                return np.empty(int(n), dtype=dtype)
            buffer = np.empty(min(nbytes + nbytes // 4, RETAIN_BYTES), dtype=np.uint8)
            self._buffers[name] = buffer
        return buffer[:nbytes].view(dtype)

    @property
    def nbytes(self) -> int:
        """Bytes held by this thread's buffers."""
        return sum(buffer.nbytes for buffer in self._buffers.values())


_LOCAL = threading.local()


def thread_work() -> WorkBuffers:
    """The calling thread's :class:`WorkBuffers` (made on first use)."""
    work = getattr(_LOCAL, "work", None)
    if work is None:
        work = _LOCAL.work = WorkBuffers()
    return work
