"""Numba kernels of ultrafs: raw arrays in, arrays out; no I/O, no Dask."""
