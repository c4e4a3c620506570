"""Per-sample loss kernels of the FGM subproblem (paper eq. 30).

Each loss ``l(y, f)`` is a function of a label ``y`` (``+1`` or ``-1``) and a
decision value ``f = w'x - b``.  For each loss there are four kernels, over
arrays ``y`` and ``f`` of the same length ``n`` (float64):

``<loss>_value(y, f)``
    ``sum_i l(y_i, f_i)`` (not multiplied by C).
``<loss>_value_derivative(y, f, out)``
    writes ``out[i] = dl/df (y_i, f_i)`` and returns ``sum_i l(y_i, f_i)``:
    one pass for the two quantities a gradient step needs.
``<loss>_derivative(y, f, out)``
    writes ``out[i] = dl/df (y_i, f_i)`` and returns ``out``.
``<loss>_dual(y, f, out)``
    writes ``out[i] = alpha_i / C`` (Theorem 3) and returns ``out``.
``<loss>_curvature_sum(y, f, d)``
    ``sum_i d2l/df2 (y_i, f_i)`` given ``d = dl/df`` at the same point, without
    new exponentials (labels must be ``+1``/``-1``).
``<loss>_value_change(y, f, delta)``
    ``sum_i l(y_i, f_i + delta_i) - l(y_i, f_i)`` computed term by term
    without cancellation: accurate however small the change is next to the
    loss itself (a line search near the optimum needs this).
``<loss>_second_derivative(y, f, out)``
    writes ``out[i] = d2l/df2 (y_i, f_i)`` (the generalised second
    derivative for the squared hinge: its right derivative at the kink) and
    returns ``out``: the weights of the Hessian ``X' diag(out) X``.

Losses:

* logistic: ``l = log(1 + exp(-y f))``, ``dl/df = -y sigma(-y f)``,
  ``d2l/df2 = sigma(f) sigma(-f)``,
  ``alpha / C = sigma(-y f)``, with ``sigma(z) = 1 / (1 + exp(-z))``.
  Evaluated without overflow for any finite margin (``|y f|`` up to 1e308).
* squared hinge: ``l = max(0, 1 - y f)^2 / 2``, ``dl/df = -y max(0, 1 - y f)``,
  ``d2l/df2 = 1`` where ``1 - y f > 0``, else 0, ``alpha / C = max(0, 1 - y f)``.

Sample weights: the ``*_weighted`` kernels take a float64 array ``s`` of
per-sample weights (``s_i >= 0``) after ``y`` and ``f`` and compute the
weighted sums ``sum_i s_i l(y_i, f_i)``, ``out[i] = s_i dl/df`` and
``sum_i s_i d2l/df2`` (given the weighted derivative ``d = s dl/df``):
``<loss>_value_weighted(y, f, s)``,
``<loss>_value_derivative_weighted(y, f, s, out)``,
``<loss>_curvature_sum_weighted(y, f, s, d)`` and
``<loss>_value_change_weighted(y, f, s, delta)``.  They are the one
implementation of these sums: an empty ``s`` means no weights (weight 1.0,
so the results are the unweighted ones to the bit): ``ultrafs.solvers.losses``
calls them with an empty ``s`` when there are no weights.  The per-sample
quantities (derivative, dual, second derivative) are weighted by the caller
(``out *= s``).

Threads: the sums are taken per chunk of ``row_chunks.CHUNK`` rows and the
chunks' partials added in chunk order (a fixed order, whatever the number of
threads). Every summed kernel and the second derivatives have a
``*_parallel`` twin (``numba`` ``prange`` over the chunks or the samples)
with the same arguments and the same results to the bit;
``ultrafs.solvers.losses`` calls the twin where
:func:`~ultrafs.kernels.row_chunks.parallel` allows it.  The scoring pass's
Dask tasks call none of these.

Callers dispatch on the loss through the registry of ``ultrafs.solvers.losses``; no
kernel branches on a loss code.
"""

import math

import numpy as np
from numba import njit, prange

from .row_chunks import CHUNK, n_chunks, ordered_sum

__all__ = [
    "logistic_value_weighted",
    "logistic_value_derivative_weighted",
    "logistic_curvature_sum_weighted",
    "logistic_value_change_weighted",
    "squared_hinge_value_weighted",
    "squared_hinge_value_derivative_weighted",
    "squared_hinge_curvature_sum_weighted",
    "squared_hinge_value_change_weighted",
    "logistic_derivative",
    "logistic_dual",
    "logistic_second_derivative",
    "squared_hinge_derivative",
    "squared_hinge_dual",
    "squared_hinge_second_derivative",
    # parallel twins (same arguments, same bytes; see row_chunks.py)
    "logistic_value_weighted_parallel",
    "logistic_value_derivative_weighted_parallel",
    "logistic_curvature_sum_weighted_parallel",
    "logistic_value_change_weighted_parallel",
    "logistic_second_derivative_parallel",
    "squared_hinge_value_weighted_parallel",
    "squared_hinge_value_derivative_weighted_parallel",
    "squared_hinge_curvature_sum_weighted_parallel",
    "squared_hinge_value_change_weighted_parallel",
    "squared_hinge_second_derivative_parallel",
]


@njit(cache=True, nogil=True)
def softplus(z):
    """Return ``log(1 + exp(z))`` without overflow."""
    if z > 0.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@njit(cache=True, nogil=True)
def sigmoid(z):
    """Return ``1 / (1 + exp(-z))`` without overflow."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)




@njit(cache=True, nogil=True)
def logistic_derivative(y, f, out):
    """Write ``dl/df = -y sigma(-y f)`` into ``out`` and return it.

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    out : ndarray of float64, shape (n,)

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    for i in range(len(y)):
        out[i] = -y[i] * sigmoid(-y[i] * f[i])
    return out


@njit(cache=True, nogil=True)
def logistic_dual(y, f, out):
    """Write ``alpha / C = sigma(-y f)`` into ``out`` and return it.

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    out : ndarray of float64, shape (n,)

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    for i in range(len(y)):
        out[i] = sigmoid(-y[i] * f[i])
    return out



@njit(cache=True, nogil=True)
def logistic_second_derivative(y, f, out):
    """Write ``d2l/df2 = sigma(f) sigma(-f)`` into ``out`` and return it.

    Computed as ``e / (1 + e)^2`` with ``e = exp(-|f|)``: no cancellation
    and no overflow for any finite ``f`` (the labels do not enter).

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    out : ndarray of float64, shape (n,)

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    for i in range(len(y)):
        e = math.exp(-abs(f[i]))
        out[i] = e / ((1.0 + e) * (1.0 + e))
    return out


@njit(cache=True, nogil=True, parallel=True)
def logistic_second_derivative_parallel(y, f, out):
    """:func:`logistic_second_derivative` over threads (the same bytes)."""
    for i in prange(len(y)):
        e = math.exp(-abs(f[i]))
        out[i] = e / ((1.0 + e) * (1.0 + e))
    return out





@njit(cache=True, nogil=True)
def squared_hinge_derivative(y, f, out):
    """Write ``dl/df = -y max(0, 1 - y f)`` into ``out`` and return it.

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    out : ndarray of float64, shape (n,)

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    for i in range(len(y)):
        m = 1.0 - y[i] * f[i]
        out[i] = -y[i] * m if m > 0.0 else 0.0
    return out


@njit(cache=True, nogil=True)
def squared_hinge_dual(y, f, out):
    """Write ``alpha / C = max(0, 1 - y f)`` into ``out`` and return it.

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    out : ndarray of float64, shape (n,)

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    for i in range(len(y)):
        m = 1.0 - y[i] * f[i]
        out[i] = m if m > 0.0 else 0.0
    return out



@njit(cache=True, nogil=True)
def squared_hinge_second_derivative(y, f, out):
    """Write ``d2l/df2``: 1 where ``1 - y_i f_i > 0``, else 0; return ``out``.

    The loss is not twice differentiable at the kink; this is its right
    second derivative there, an element of the generalised Hessian (the
    same convention as :func:`squared_hinge_curvature_sum`).

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    out : ndarray of float64, shape (n,)

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    for i in range(len(y)):
        out[i] = 1.0 if 1.0 - y[i] * f[i] > 0.0 else 0.0
    return out


@njit(cache=True, nogil=True, parallel=True)
def squared_hinge_second_derivative_parallel(y, f, out):
    """:func:`squared_hinge_second_derivative` over threads (the same bytes)."""
    for i in prange(len(y)):
        out[i] = 1.0 if 1.0 - y[i] * f[i] > 0.0 else 0.0
    return out


# -- sample weights: the one implementation of each summed quantity ----------
# ``s`` holds one weight per sample, or is empty for no weights: the kernels
# then use the weight 1.0, and since ``1.0 * x`` and ``x / 1.0`` are exact and
# the tests on the weight never skip a sample, the sums are those of the
# unweighted loss to the bit.
#
# Every sum is taken per chunk of ``CHUNK`` rows (``_<quantity>(..., lo, hi)``)
# and the chunks' partials are added in chunk order: the serial kernel and
# its ``*_parallel`` twin (chunks spread over threads) return the same bytes.
@njit(cache=True, nogil=True)
def _logistic_value(y, f, s, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        if w != 0.0:
            total += w * softplus(-y[i] * f[i])
    return total


@njit(cache=True, nogil=True)
def logistic_value_weighted(y, f, s):
    """Return ``sum_i s_i log(1 + exp(-y_i f_i))``.

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    s : ndarray of float64, shape (n,) or (0,) (no weights)

    Returns
    -------
    float
    """
    n = len(y)
    total = 0.0
    for c in range(n_chunks(n)):
        total += _logistic_value(y, f, s, c * CHUNK, min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def logistic_value_weighted_parallel(y, f, s):
    """:func:`logistic_value_weighted` over threads (the same bytes)."""
    n = len(y)
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _logistic_value(y, f, s, c * CHUNK, min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)


@njit(cache=True, nogil=True)
def _logistic_value_derivative(y, f, s, out, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        z = -y[i] * f[i]
        e = math.exp(-abs(z))
        if z > 0.0:
            value = z + math.log1p(e)
            d = -y[i] / (1.0 + e)
        else:
            value = math.log1p(e)
            d = -y[i] * e / (1.0 + e)
        if w != 0.0:
            total += w * value
        out[i] = w * d
    return total


@njit(cache=True, nogil=True)
def logistic_value_derivative_weighted(y, f, s, out):
    """Write ``s dl/df`` into ``out`` and return ``sum_i s_i l(y_i, f_i)``.

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    s : ndarray of float64, shape (n,) or (0,) (no weights)
    out : ndarray of float64, shape (n,)
        Overwritten with ``-s_i y_i sigma(-y_i f_i)``.

    Returns
    -------
    float
    """
    n = len(y)
    total = 0.0
    for c in range(n_chunks(n)):
        total += _logistic_value_derivative(y, f, s, out, c * CHUNK,
                                            min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def logistic_value_derivative_weighted_parallel(y, f, s, out):
    """:func:`logistic_value_derivative_weighted` over threads (the same bytes)."""
    n = len(y)
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _logistic_value_derivative(y, f, s, out, c * CHUNK,
                                              min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)


@njit(cache=True, nogil=True)
def _logistic_curvature(y, s, d, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        if w > 0.0:
            sig = -y[i] * d[i] / w
            total += w * (sig * (1.0 - sig))
    return total


@njit(cache=True, nogil=True)
def logistic_curvature_sum_weighted(y, f, s, d):
    """Return ``sum_i s_i sigma_i (1 - sigma_i)`` given ``d = s dl/df``.

    ``sigma_i = -y_i d_i / s_i`` (samples of weight 0 add nothing).

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
        ``f`` is unused (the curvature follows from ``d``).
    s : ndarray of float64, shape (n,) or (0,) (no weights)
    d : ndarray of float64, shape (n,)

    Returns
    -------
    float
    """
    n = len(y)
    total = 0.0
    for c in range(n_chunks(n)):
        total += _logistic_curvature(y, s, d, c * CHUNK, min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def logistic_curvature_sum_weighted_parallel(y, f, s, d):
    """:func:`logistic_curvature_sum_weighted` over threads (the same bytes)."""
    n = len(y)
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _logistic_curvature(y, s, d, c * CHUNK, min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)


@njit(cache=True, nogil=True)
def _logistic_value_change(y, f, s, delta, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        if w == 0.0:
            continue
        z = -y[i] * f[i]
        e = -y[i] * delta[i]
        if abs(e) <= 1.0:
            total += w * math.log1p(sigmoid(z) * math.expm1(e))
        else:
            total += w * (softplus(z + e) - softplus(z))
    return total


@njit(cache=True, nogil=True)
def logistic_value_change_weighted(y, f, s, delta):
    """Return ``sum_i s_i (l(y_i, f_i + delta_i) - l(y_i, f_i))`` without cancellation.

    With ``z = -y f`` and ``e = -y delta`` each term is ``softplus(z + e) -
    softplus(z) = log1p(sigma(z) expm1(e))``, used for ``|e| <= 1`` (the
    argument of ``log1p`` then lies in (-0.64, 1.72)); larger changes are
    differences of two values, which cancel little.

    Parameters
    ----------
    y, f, delta : ndarray of float64, shape (n,)
    s : ndarray of float64, shape (n,) or (0,) (no weights)

    Returns
    -------
    float
    """
    n = len(y)
    total = 0.0
    for c in range(n_chunks(n)):
        total += _logistic_value_change(y, f, s, delta, c * CHUNK,
                                        min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def logistic_value_change_weighted_parallel(y, f, s, delta):
    """:func:`logistic_value_change_weighted` over threads (the same bytes)."""
    n = len(y)
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _logistic_value_change(y, f, s, delta, c * CHUNK,
                                          min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)


@njit(cache=True, nogil=True)
def _squared_hinge_value(y, f, s, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        m = 1.0 - y[i] * f[i]
        if m > 0.0 and w != 0.0:
            total += w * (0.5 * m * m)
    return total


@njit(cache=True, nogil=True)
def squared_hinge_value_weighted(y, f, s):
    """Return ``sum_i s_i max(0, 1 - y_i f_i)^2 / 2``.

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    s : ndarray of float64, shape (n,) or (0,) (no weights)

    Returns
    -------
    float
    """
    n = len(y)
    total = 0.0
    for c in range(n_chunks(n)):
        total += _squared_hinge_value(y, f, s, c * CHUNK, min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def squared_hinge_value_weighted_parallel(y, f, s):
    """:func:`squared_hinge_value_weighted` over threads (the same bytes)."""
    n = len(y)
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _squared_hinge_value(y, f, s, c * CHUNK, min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)


@njit(cache=True, nogil=True)
def _squared_hinge_value_derivative(y, f, s, out, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        m = 1.0 - y[i] * f[i]
        if m > 0.0:
            if w != 0.0:
                total += w * (0.5 * m * m)
            out[i] = w * (-y[i] * m)
        else:
            out[i] = 0.0
    return total


@njit(cache=True, nogil=True)
def squared_hinge_value_derivative_weighted(y, f, s, out):
    """Write ``s dl/df`` into ``out`` and return ``sum_i s_i l(y_i, f_i)``.

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    s : ndarray of float64, shape (n,) or (0,) (no weights)
    out : ndarray of float64, shape (n,)
        Overwritten with ``-s_i y_i max(0, 1 - y_i f_i)``.

    Returns
    -------
    float
    """
    n = len(y)
    total = 0.0
    for c in range(n_chunks(n)):
        total += _squared_hinge_value_derivative(y, f, s, out, c * CHUNK,
                                                 min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def squared_hinge_value_derivative_weighted_parallel(y, f, s, out):
    """:func:`squared_hinge_value_derivative_weighted` over threads (the same bytes)."""
    n = len(y)
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _squared_hinge_value_derivative(y, f, s, out, c * CHUNK,
                                                   min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)


@njit(cache=True, nogil=True)
def _squared_hinge_curvature(y, f, s, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        if 1.0 - y[i] * f[i] > 0.0:
            total += s[i] if weighted else 1.0
    return total


@njit(cache=True, nogil=True)
def squared_hinge_curvature_sum_weighted(y, f, s, d):
    """Return ``sum_i s_i`` over the samples with ``1 - y_i f_i > 0``.

    Parameters
    ----------
    y, f : ndarray of float64, shape (n,)
    s : ndarray of float64, shape (n,) or (0,) (no weights: the count)
    d : ndarray of float64, shape (n,)
        Unused (present for a common signature).

    Returns
    -------
    float
        ``sum_i s_i d2l/df2 (y_i, f_i)`` (the right derivative at the kink).
    """
    n = len(y)
    total = 0.0
    for c in range(n_chunks(n)):
        total += _squared_hinge_curvature(y, f, s, c * CHUNK, min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def squared_hinge_curvature_sum_weighted_parallel(y, f, s, d):
    """:func:`squared_hinge_curvature_sum_weighted` over threads (the same bytes)."""
    n = len(y)
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _squared_hinge_curvature(y, f, s, c * CHUNK, min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)


@njit(cache=True, nogil=True)
def _squared_hinge_value_change(y, f, s, delta, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        if w == 0.0:
            continue
        m = 1.0 - y[i] * f[i]
        change = -y[i] * delta[i]
        m2 = m + change
        if m > 0.0 and m2 > 0.0:
            total += w * (0.5 * change * (m + m2))
        elif m2 > 0.0:
            total += w * (0.5 * m2 * m2)
        elif m > 0.0:
            total -= w * (0.5 * m * m)
    return total


@njit(cache=True, nogil=True)
def squared_hinge_value_change_weighted(y, f, s, delta):
    """Return ``sum_i s_i (l(y_i, f_i + delta_i) - l(y_i, f_i))`` without cancellation.

    With margins ``m = 1 - y f`` and ``m' = m - y delta`` both positive, the
    term is ``(m' - m)(m' + m) / 2 = -y delta (m + m') / 2``; otherwise at
    most one square is left and nothing cancels.

    Parameters
    ----------
    y, f, delta : ndarray of float64, shape (n,)
    s : ndarray of float64, shape (n,) or (0,) (no weights)

    Returns
    -------
    float
    """
    n = len(y)
    total = 0.0
    for c in range(n_chunks(n)):
        total += _squared_hinge_value_change(y, f, s, delta, c * CHUNK,
                                             min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def squared_hinge_value_change_weighted_parallel(y, f, s, delta):
    """:func:`squared_hinge_value_change_weighted` over threads (the same bytes)."""
    n = len(y)
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _squared_hinge_value_change(y, f, s, delta, c * CHUNK,
                                               min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)
