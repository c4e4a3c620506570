"""One BLAS/LAPACK thread for the solvers' dense linear algebra.

The solvers call BLAS and LAPACK on small matrices (the proximal Newton
model: one eigen-decomposition per block and Newton step) and for
matrix-vector products bound by memory bandwidth (the SKLR basis products
``Φ' r``). Threads gain little there, and OpenBLAS's spinning threads lose
a lot when another process holds a core: on two shared cores the model
solve of a 2,000-column subproblem took 13 s instead of 0.8 s, and a9a's
32,561 x 1,000 ``Φ' r`` 95-220 ms instead of 25 ms. Every entry of these
products is one thread's dot product, so the thread count changes the
time only, never the bytes.
"""

from __future__ import annotations

import contextlib
import importlib

__all__ = ["one_blas_thread"]

_CONTROLLER = []   # [threadpoolctl.ThreadpoolController or None], made once


def one_blas_thread():
    """A context in which BLAS and LAPACK run on one thread.

    Returns
    -------
    context : context manager
        threadpoolctl's limit of the BLAS libraries to one thread (a null
        context where threadpoolctl is missing).
    """
    if not _CONTROLLER:
        # the controller lists the libraries loaded when it is made: load the
        # LAPACK numba's np.linalg calls first
        importlib.import_module("scipy.linalg.cython_lapack")
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a dependency of scikit-learn
            _CONTROLLER.append(None)
        else:
            _CONTROLLER.append(ThreadpoolController())
    if _CONTROLLER[0] is None:  # pragma: no cover
        return contextlib.nullcontext()
    return _CONTROLLER[0].limit(limits=1, user_api="blas")
