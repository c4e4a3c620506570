"""glibc allocator settings for long out-of-core runs.

glibc's ``malloc`` serves requests below a *dynamic* threshold (raised up
to 32 MB each time a larger block is freed) from per-thread heaps, which
it seldom returns to the system.  A run that allocates and frees arrays of
a few to tens of MB in several threads for hours (block reads, pair Gram
partials, window copies) then holds freed memory as resident pages: on
the kddb-like degree-2 run at 3·10⁶ rows, 250 MB of a 1.65 GB peak
(``bench/README.md`` §14).  :func:`map_large_allocations` fixes the
threshold at 2 MiB: larger arrays get their own mapping, given back to the
system when freed.  A fresh mapping page-faults on first touch, so what is
allocated per block again and again must stay below the threshold or be
reused: Blosc's scratch for each chunk it decodes (three of its 512 KB
blocks) does the one, the block reads' work buffers
(``ultrafs/store/work_buffers.py``) the other.  At 1 MiB the scratch was
mapped and unmapped per chunk, which made a scoring pass from Zarr 20%
slower (imdb50k).  It is called by the command line only (a library must
not change its host's allocator); ``MALLOC_MMAP_THRESHOLD_`` in the
environment (glibc's own setting) takes precedence.
"""

from __future__ import annotations

import os
import sys

__all__ = ["map_large_allocations", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

#: bytes from which an allocation gets its own mapping
MMAP_THRESHOLD = 2 << 20
#: free bytes at the top of a heap that glibc keeps rather than returns
TRIM_THRESHOLD = 8 << 20
_M_TRIM_THRESHOLD = -1      # glibc's mallopt parameter numbers
_M_MMAP_THRESHOLD = -3


def map_large_allocations(threshold: int = MMAP_THRESHOLD,
                          trim_threshold: int = TRIM_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; True if it was set.

    Also fixes the trim threshold at ``trim_threshold`` bytes: fixing the
    mmap threshold leaves glibc's trim threshold at its 128 KB default, so
    a thread's heap gave back the scratch each Blosc decode frees (1.5 MB)
    and page-faulted it again at the next chunk (a third of a kddb-like
    run's page faults); 8 MB keeps such scratch and bounds what each heap
    holds unused.

    Does nothing (False) off Linux, with another C library, or when the
    environment already sets ``MALLOC_MMAP_THRESHOLD_`` (then
    ``MALLOC_TRIM_THRESHOLD_`` is glibc's too).
    """
    if not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if mallopt(_M_MMAP_THRESHOLD, int(threshold)) != 1:
        return False
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        mallopt(_M_TRIM_THRESHOLD, int(trim_threshold))
    return True
