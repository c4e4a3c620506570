"""Proximal kernels: the l2,1-squared Moreau projection, soft-thresholding.

Plain (l1) and block (l2,1) soft-thresholding serve the companion solvers.

Blocks are contiguous coordinate ranges given by ``block_ptr`` (length
``t + 1``): block ``h`` is ``w[block_ptr[h]:block_ptr[h + 1]]``.  Empty blocks
are allowed (their norm is 0).

The Moreau projection (paper Algorithm 3, Proposition 1; Martins et al.,
2010) solves, for a step ``s = 1 / tau``,

    min_w  1/2 ||w - u||^2 + s/2 (sum_h ||w_h||)^2,

whose solution is ``w_h = (o_h / ||u_h||) u_h`` with ``o = soft(||u_.||, c)``
and a threshold ``c`` found by sorting the ``t`` block norms.
"""

import math

import numpy as np
from numba import njit

__all__ = [
    "block_norms",
    "l21sq_threshold",
    "l21sq_moreau_norms",
    "l21sq_prox",
    "soft_threshold",
    "block_soft_threshold",
]


@njit(cache=True, nogil=True)
def block_norms(w, block_ptr):
    """Return the Euclidean norm of every block of ``w``.

    Parameters
    ----------
    w : ndarray of float64, shape (p,)
    block_ptr : ndarray of int64, shape (t + 1,)

    Returns
    -------
    ndarray of float64, shape (t,)
    """
    t = len(block_ptr) - 1
    out = np.empty(t, dtype=np.float64)
    for h in range(t):
        acc = 0.0
        for j in range(block_ptr[h], block_ptr[h + 1]):
            acc += w[j] * w[j]
        out[h] = math.sqrt(acc)
    return out


@njit(cache=True, nogil=True)
def l21sq_threshold(norms, s):
    """Return the threshold ``c`` of Algorithm 3 (steps 2-4).

    Parameters
    ----------
    norms : ndarray of float64, shape (t,)
        Block norms ``||u_h||`` (non-negative).
    s : float
        Step ``1 / tau`` (positive).

    Returns
    -------
    float
        ``c = s / (1 + rho s) * sum_{i <= rho} o_(i)`` where ``o_(1) >= ...``
        are the sorted norms and ``rho`` the largest ``h`` (1-based) with
        ``o_(h) - s / (1 + h s) * sum_{i <= h} o_(i) > 0``; 0 when no such
        ``h`` exists (all norms zero).
    """
    ordered = np.sort(norms)[::-1]
    cumsum = 0.0
    best_sum = 0.0
    rho = 0
    for h in range(len(ordered)):
        cumsum += ordered[h]
        # o_(h) - s / (1 + h s) * cumsum > 0, multiplied by 1 + h s: exact
        # for h = 1 even when s / (1 + s) rounds to 1.
        if ordered[h] + s * ((h + 1) * ordered[h] - cumsum) > 0.0:
            rho = h + 1
            best_sum = cumsum
    if rho == 0:
        return 0.0
    return s / (1.0 + rho * s) * best_sum


@njit(cache=True, nogil=True)
def l21sq_moreau_norms(norms, s):
    """Return the block norms ``o_h`` of the Moreau projection.

    Parameters
    ----------
    norms : ndarray of float64, shape (t,)
        Block norms ``||u_h||``.
    s : float
        Step ``1 / tau``.

    Returns
    -------
    ndarray of float64, shape (t,)
        ``o_h = max(||u_h|| - c, 0)`` (Algorithm 3, step 5); the solution is
        ``w_h = (o_h / ||u_h||) u_h``.
    """
    c = l21sq_threshold(norms, s)
    out = np.empty(len(norms), dtype=np.float64)
    for h in range(len(norms)):
        out[h] = max(norms[h] - c, 0.0)
    return out


@njit(cache=True, nogil=True)
def l21sq_prox(u, s, block_ptr, out):
    """Moreau projection of ``u``: write the solution into ``out``.

    Parameters
    ----------
    u : ndarray of float64, shape (p,)
    s : float
        Step ``1 / tau``.
    block_ptr : ndarray of int64, shape (t + 1,)
    out : ndarray of float64, shape (p,)
        Overwritten with ``w_h = scale[h] * u_h``; may be ``u`` itself.

    Returns
    -------
    ndarray of float64, shape (t,)
        ``scale[h] = o_h / ||u_h||`` (0 for blocks with ``u_h = 0`` or
        ``o_h = 0``), the factors the §5.5 cache needs.
    """
    norms = block_norms(u, block_ptr)
    o = l21sq_moreau_norms(norms, s)
    t = len(norms)
    scale = np.zeros(t, dtype=np.float64)
    for h in range(t):
        if o[h] > 0.0:
            scale[h] = o[h] / norms[h]
        for j in range(block_ptr[h], block_ptr[h + 1]):
            out[j] = scale[h] * u[j]
    return scale


@njit(cache=True, nogil=True)
def soft_threshold(u, threshold, out):
    """Write ``sign(u) * max(|u| - threshold, 0)`` into ``out`` and return it.

    Parameters
    ----------
    u : ndarray of float64, shape (p,)
    threshold : float
        Non-negative.
    out : ndarray of float64, shape (p,)
        May be ``u`` itself.

    Returns
    -------
    ndarray of float64, shape (p,)
    """
    for j in range(len(u)):
        a = abs(u[j]) - threshold
        if a > 0.0:
            out[j] = a if u[j] > 0.0 else -a
        else:
            out[j] = 0.0
    return out


@njit(cache=True, nogil=True)
def block_soft_threshold(u, threshold, block_ptr, out):
    """Group soft-thresholding: write ``max(0, 1 - threshold / ||u_h||) u_h``.

    The proximal operator of ``threshold * sum_h ||w_h||`` (group lasso).

    Parameters
    ----------
    u : ndarray of float64, shape (p,)
    threshold : float
        Non-negative.
    block_ptr : ndarray of int64, shape (t + 1,)
    out : ndarray of float64, shape (p,)
        May be ``u`` itself.

    Returns
    -------
    ndarray of float64, shape (t,)
        The factor applied to each block.
    """
    norms = block_norms(u, block_ptr)
    t = len(norms)
    scale = np.zeros(t, dtype=np.float64)
    for h in range(t):
        if norms[h] > threshold:
            scale[h] = 1.0 - threshold / norms[h]
        for j in range(block_ptr[h], block_ptr[h + 1]):
            out[j] = scale[h] * u[j]
    return scale
