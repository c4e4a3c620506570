"""Numba kernels of ultrafs: raw arrays in, arrays out; no I/O, no Dask.

Importing the package (which happens before any kernel module) points
numba's cache for these kernels at the per-user cache folder, never inside
the installed package, and arms a one-line notice on stderr for the first
real compile of a process; see ``_cache.py``.
"""

from . import _cache

_cache.install()
