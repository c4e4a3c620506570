"""Resident memory of this process, for the per-phase figures of a run.

``peak_rss_mb()`` is the peak resident set size so far (``getrusage``),
``current_rss_mb()`` the resident set size now (``/proc/self/statm``).
Both return None where the platform does not tell.  Worker processes of
the ``processes`` scheduler or of a ``dask.distributed`` cluster are not
counted: the figures are the driver's.
"""

from __future__ import annotations

import os
import sys

__all__ = ["peak_rss_mb", "current_rss_mb"]


def peak_rss_mb():
    """Peak resident set size of this process so far, in MiB (or None)."""
    try:
        import resource
    except ImportError:          # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # kilobytes on Linux, bytes on macOS
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def current_rss_mb():
    """Resident set size of this process now, in MiB (or None)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
