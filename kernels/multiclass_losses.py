"""Per-sample multi-class loss kernels (K >= 3 classes, one shared feature set).

Each loss ``l(y, F)`` is a function of a class index ``y`` in ``0..K-1``
(int64) and a row of decision values ``F_i`` of length ``K``.  Decision
values are passed flattened row-major: ``f[i * K + k]`` is ``F[i, k]``
(``K = len(f) // len(y)``), and derivatives are written in the same layout.

``<loss>_value(y, f)``
    ``sum_i l(y_i, F_i)``.
``<loss>_value_derivative(y, f, out)``
    writes ``out[i * K + k] = dl/dF_ik`` and returns the value.
``<loss>_derivative(y, f, out)``
    writes the derivative and returns ``out``.
``<loss>_bias_curvature(y, f, d)``
    an upper bound on the largest eigenvalue of the Hessian of
    ``sum_i l(y_i, F_i - b)`` with respect to the intercepts ``b`` (K of
    them), given ``d = dl/dF`` at ``f``: the step size of the bias update.

Proximal Newton (few coefficients; serial): ``<loss>_value_change_weighted(y,
f, s, delta)``, the change of the weighted value computed term by term, and
``<loss>_hessian_factors_weighted(y, f, s, a, u)``, the per-sample Hessians
``s_i (diag(a_i) - u_i u_i')`` as factors (``u`` unused by the diagonal
one-vs-rest Hessian).

Sample weights: ``<loss>_value_weighted(y, f, s)``,
``<loss>_value_derivative_weighted(y, f, s, out)`` and
``<loss>_bias_curvature_weighted(y, f, s, d)`` take float64 per-sample
weights ``s >= 0`` (shape ``(n,)``): the value is ``sum_i s_i l(y_i,
F_i)``, the derivative ``s_i dl/dF_ik`` and the curvature bound the same
bound of the weighted sum (``d`` being the weighted derivative).  They are
the one implementation: an empty ``s`` means no weights (weight 1.0, the
unweighted results to the bit; ``ultrafs.solvers.losses`` passes one when
there are no weights).

Threads: the sums are taken per chunk of ``row_chunks.CHUNK`` samples and
the chunks' partials added in chunk order (for the one-vs-rest bias
curvature, per class); each summed kernel has a ``*_parallel`` twin with
the same arguments and the same results to the bit.

Losses:

* multinomial logistic: ``l = log sum_k exp(F_ik) - F_{i y_i}``,
  ``dl/dF_ik = p_ik - [k = y_i]`` with ``p_i = softmax(F_i)``; the bias
  Hessian ``sum_i diag(p_i) - p_i p_i'`` has eigenvalues at most
  ``sum_i max_k 2 p_ik (1 - p_ik)`` (Gershgorin).
* one-vs-rest squared hinge: ``l = sum_k max(0, 1 - Y_ik F_ik)^2 / 2`` with
  ``Y_ik = +1`` if ``k = y_i`` else ``-1``; ``dl/dF_ik = -Y_ik max(0, 1 -
  Y_ik F_ik)``; the bias Hessian is diagonal, its largest entry is the
  largest number of samples with a positive margin loss in one class.
"""

import math

import numpy as np
from numba import njit, prange

from .row_chunks import CHUNK, n_chunks, ordered_sum

__all__ = [
    "multinomial_value_weighted",
    "multinomial_value_derivative_weighted",
    "multinomial_bias_curvature_weighted",
    "ovr_squared_hinge_value_weighted",
    "ovr_squared_hinge_value_derivative_weighted",
    "ovr_squared_hinge_bias_curvature_weighted",
    "multinomial_derivative",
    "ovr_squared_hinge_derivative",
    "multinomial_value_change_weighted",
    "multinomial_hessian_factors_weighted",
    "ovr_squared_hinge_value_change_weighted",
    "ovr_squared_hinge_hessian_factors_weighted",
    # parallel twins (same arguments, same bytes; see row_chunks.py)
    "multinomial_value_weighted_parallel",
    "multinomial_value_derivative_weighted_parallel",
    "multinomial_bias_curvature_weighted_parallel",
    "ovr_squared_hinge_value_weighted_parallel",
    "ovr_squared_hinge_value_derivative_weighted_parallel",
    "ovr_squared_hinge_bias_curvature_weighted_parallel",
]


@njit(cache=True, nogil=True)
def _logsumexp_row(f, start, K):
    """Return ``(max, log sum_k exp(f[start + k] - max))`` without overflow."""
    top = f[start]
    for k in range(1, K):
        if f[start + k] > top:
            top = f[start + k]
    total = 0.0
    for k in range(K):
        total += math.exp(f[start + k] - top)
    return top, math.log(total)




@njit(cache=True, nogil=True)
def multinomial_derivative(y, f, out):
    """Write ``softmax(F_i) - onehot(y_i)`` into ``out`` and return it."""
    multinomial_value_derivative_weighted(y, f, np.empty(0), out)
    return out





@njit(cache=True, nogil=True)
def ovr_squared_hinge_derivative(y, f, out):
    """Write ``-Y_ik max(0, 1 - Y_ik F_ik)`` into ``out`` and return it."""
    ovr_squared_hinge_value_derivative_weighted(y, f, np.empty(0), out)
    return out



# -- sample weights: the one implementation of each quantity -----------------
# ``s`` holds one weight per sample, or is empty for no weights: the kernels
# then use the weight 1.0, and since ``1.0 * x`` and ``x / 1.0`` are exact and
# the tests on the weight never skip a sample, the results are those of the
# unweighted loss to the bit.
#
# Every sum is taken per chunk of ``CHUNK`` samples and the chunks' partials
# are added in chunk order: the serial kernel and its ``*_parallel`` twin
# return the same bytes.
@njit(cache=True, nogil=True)
def multinomial_value_weighted(y, f, s):
    """Return ``sum_i s_i (log sum_k exp(F_ik) - F_{i y_i})``."""
    return multinomial_value_derivative_weighted(y, f, s, np.empty(len(f)))


@njit(cache=True, nogil=True)
def multinomial_value_weighted_parallel(y, f, s):
    """:func:`multinomial_value_weighted` over threads (the same bytes)."""
    return multinomial_value_derivative_weighted_parallel(y, f, s, np.empty(len(f)))


@njit(cache=True, nogil=True)
def _multinomial_value_derivative(y, f, s, out, K, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        start = i * K
        top, lse = _logsumexp_row(f, start, K)
        if w != 0.0:
            total += w * (top + lse - f[start + y[i]])
        shift = top + lse
        for k in range(K):
            out[start + k] = math.exp(f[start + k] - shift)
        out[start + y[i]] -= 1.0
        if weighted:
            for k in range(K):
                out[start + k] *= w
    return total


@njit(cache=True, nogil=True)
def multinomial_value_derivative_weighted(y, f, s, out):
    """Write ``s_i (softmax(F_i) - onehot(y_i))`` into ``out``; return the value.

    Parameters
    ----------
    y : ndarray of int64, shape (n,)
    f, out : ndarray of float64, shape (n * K,)
    s : ndarray of float64, shape (n,) or (0,) (no weights)

    Returns
    -------
    float
        ``sum_i s_i l(y_i, F_i)``.
    """
    n = len(y)
    K = len(f) // n if n else 0
    total = 0.0
    for c in range(n_chunks(n)):
        total += _multinomial_value_derivative(y, f, s, out, K, c * CHUNK,
                                               min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def multinomial_value_derivative_weighted_parallel(y, f, s, out):
    """:func:`multinomial_value_derivative_weighted` over threads (the same bytes)."""
    n = len(y)
    K = len(f) // n if n else 0
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _multinomial_value_derivative(y, f, s, out, K, c * CHUNK,
                                                 min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)


@njit(cache=True, nogil=True)
def _multinomial_curvature(y, s, d, K, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        if not w > 0.0:
            continue
        start = i * K
        best = 0.0
        for k in range(K):
            p = d[start + k] / w + (1.0 if k == y[i] else 0.0)
            v = 2.0 * p * (1.0 - p)
            if v > best:
                best = v
        total += w * best
    return total


@njit(cache=True, nogil=True)
def multinomial_bias_curvature_weighted(y, f, s, d):
    """Return ``sum_i s_i max_k 2 p_ik (1 - p_ik)`` with ``p = d / s + onehot(y)``.

    Samples of weight 0 add nothing.

    Parameters
    ----------
    y : ndarray of int64, shape (n,)
    f : ndarray of float64, shape (n * K,)
        Unused (the probabilities follow from ``d``).
    s : ndarray of float64, shape (n,) or (0,) (no weights)
    d : ndarray of float64, shape (n * K,)

    Returns
    -------
    float
    """
    n = len(y)
    K = len(d) // n if n else 0
    total = 0.0
    for c in range(n_chunks(n)):
        total += _multinomial_curvature(y, s, d, K, c * CHUNK, min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def multinomial_bias_curvature_weighted_parallel(y, f, s, d):
    """:func:`multinomial_bias_curvature_weighted` over threads (the same bytes)."""
    n = len(y)
    K = len(d) // n if n else 0
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _multinomial_curvature(y, s, d, K, c * CHUNK, min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)


@njit(cache=True, nogil=True)
def ovr_squared_hinge_value_weighted(y, f, s):
    """Return ``sum_i s_i sum_k max(0, 1 - Y_ik F_ik)^2 / 2``."""
    return ovr_squared_hinge_value_derivative_weighted(y, f, s, np.empty(len(f)))


@njit(cache=True, nogil=True)
def ovr_squared_hinge_value_weighted_parallel(y, f, s):
    """:func:`ovr_squared_hinge_value_weighted` over threads (the same bytes)."""
    return ovr_squared_hinge_value_derivative_weighted_parallel(y, f, s,
                                                                np.empty(len(f)))


@njit(cache=True, nogil=True)
def _ovr_value_derivative(y, f, s, out, K, lo, hi):
    weighted = len(s) > 0
    total = 0.0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        start = i * K
        for k in range(K):
            sign = 1.0 if k == y[i] else -1.0
            m = 1.0 - sign * f[start + k]
            if m > 0.0:
                if w != 0.0:
                    total += w * (0.5 * m * m)
                out[start + k] = w * (-sign * m)
            else:
                out[start + k] = 0.0
    return total


@njit(cache=True, nogil=True)
def ovr_squared_hinge_value_derivative_weighted(y, f, s, out):
    """Write ``-s_i Y_ik max(0, 1 - Y_ik F_ik)`` into ``out``; return the value.

    ``s``: shape (n,), or (0,) for no weights.
    """
    n = len(y)
    K = len(f) // n if n else 0
    total = 0.0
    for c in range(n_chunks(n)):
        total += _ovr_value_derivative(y, f, s, out, K, c * CHUNK,
                                       min(n, (c + 1) * CHUNK))
    return total


@njit(cache=True, nogil=True, parallel=True)
def ovr_squared_hinge_value_derivative_weighted_parallel(y, f, s, out):
    """:func:`ovr_squared_hinge_value_derivative_weighted` over threads (the same bytes)."""
    n = len(y)
    K = len(f) // n if n else 0
    parts = np.empty(n_chunks(n))
    for c in prange(len(parts)):
        parts[c] = _ovr_value_derivative(y, f, s, out, K, c * CHUNK,
                                         min(n, (c + 1) * CHUNK))
    return ordered_sum(parts)


@njit(cache=True, nogil=True)
def _ovr_counts(y, f, s, K, lo, hi, counts):
    """Add ``s_i [1 - Y_ik F_ik > 0]`` of rows ``lo:hi`` to ``counts`` (K,)."""
    weighted = len(s) > 0
    for i in range(lo, hi):
        w = s[i] if weighted else 1.0
        start = i * K
        for k in range(K):
            sign = 1.0 if k == y[i] else -1.0
            if 1.0 - sign * f[start + k] > 0.0:
                counts[k] += w


@njit(cache=True, nogil=True)
def _largest_column_sum(parts, K):
    """``max(0, max_k sum_c parts[c, k])``, the sums taken in chunk order."""
    best = 0.0
    for k in range(K):
        acc = 0.0
        for c in range(parts.shape[0]):
            acc += parts[c, k]
        if acc > best:
            best = acc
    return best


@njit(cache=True, nogil=True)
def ovr_squared_hinge_bias_curvature_weighted(y, f, s, d):
    """Return ``max_k sum_i s_i [1 - Y_ik F_ik > 0]`` (the bias Hessian's largest entry).

    ``s``: shape (n,), or (0,) for no weights (the largest count).
    ``d`` is unused (present for a common signature).
    """
    n = len(y)
    K = len(f) // n if n else 0
    parts = np.zeros((n_chunks(n), K))
    for c in range(parts.shape[0]):
        _ovr_counts(y, f, s, K, c * CHUNK, min(n, (c + 1) * CHUNK), parts[c])
    return _largest_column_sum(parts, K)


@njit(cache=True, nogil=True, parallel=True)
def ovr_squared_hinge_bias_curvature_weighted_parallel(y, f, s, d):
    """:func:`ovr_squared_hinge_bias_curvature_weighted` over threads (the same bytes)."""
    n = len(y)
    K = len(f) // n if n else 0
    parts = np.zeros((n_chunks(n), K))
    for c in prange(parts.shape[0]):
        _ovr_counts(y, f, s, K, c * CHUNK, min(n, (c + 1) * CHUNK), parts[c])
    return _largest_column_sum(parts, K)


# -- what proximal Newton needs (few coefficients: serial kernels) ------------
@njit(cache=True, nogil=True)
def multinomial_value_change_weighted(y, f, s, delta):
    """Return ``sum_i s_i (l(y_i, F_i + D_i) - l(y_i, F_i))``, term by term.

    Per sample ``log sum_k p_ik exp(D_ik) - D_{i y_i}`` with ``p_i =
    softmax(F_i)``: ``log1p(sum_k p_ik expm1(D_ik))`` while every ``D_ik``
    is at most 1 (no difference of two log-sum-exps, so a change far below
    the rounding of the value stays accurate), the difference of the two
    log-sum-exps otherwise (a large change: no cancellation to fear).

    Parameters
    ----------
    y : ndarray of int64, shape (n,)
    f, delta : ndarray of float64, shape (n * K,)
    s : ndarray of float64, shape (n,) or (0,) (no weights)

    Returns
    -------
    float
    """
    n = len(y)
    K = len(f) // n if n else 0
    weighted = len(s) > 0
    total = 0.0
    g = np.empty(K)
    for i in range(n):
        w = s[i] if weighted else 1.0
        if w == 0.0:
            continue
        start = i * K
        top, lse = _logsumexp_row(f, start, K)
        big = 0.0
        for k in range(K):
            if delta[start + k] > big:
                big = delta[start + k]
        if big <= 1.0:
            acc = 0.0
            for k in range(K):
                acc += math.exp(f[start + k] - top - lse) * math.expm1(delta[start + k])
            change = math.log1p(acc)
        else:
            for k in range(K):
                g[k] = f[start + k] + delta[start + k]
            top2, lse2 = _logsumexp_row(g, 0, K)
            change = (top2 - top) + (lse2 - lse)
        total += w * (change - delta[start + y[i]])
    return total


@njit(cache=True, nogil=True)
def multinomial_hessian_factors_weighted(y, f, s, a, u):
    """Write the factors of the per-sample Hessians ``s_i (diag(p_i) - p_i p_i')``.

    ``a[i * K + k] = s_i p_ik`` and ``u[i * K + k] = sqrt(s_i) p_ik``, so the
    Hessian of ``s_i l(y_i, .)`` at ``F_i`` is ``diag(a_i) - u_i u_i'``.

    Parameters
    ----------
    y : ndarray of int64, shape (n,)
    f : ndarray of float64, shape (n * K,)
    s : ndarray of float64, shape (n,) or (0,) (no weights)
    a, u : ndarray of float64, shape (n * K,)
        Overwritten.
    """
    n = len(y)
    K = len(f) // n if n else 0
    weighted = len(s) > 0
    for i in range(n):
        w = s[i] if weighted else 1.0
        root = math.sqrt(w) if w > 0.0 else 0.0
        start = i * K
        top, lse = _logsumexp_row(f, start, K)
        shift = top + lse
        for k in range(K):
            p = math.exp(f[start + k] - shift)
            a[start + k] = w * p
            u[start + k] = root * p


@njit(cache=True, nogil=True)
def ovr_squared_hinge_value_change_weighted(y, f, s, delta):
    """Return ``sum_i s_i sum_k (h(1 - Y_ik (F_ik + D_ik)) - h(1 - Y_ik F_ik))``.

    ``h(m) = max(0, m)^2 / 2``; per entry ``D (D/2 - Y m)`` where the margin
    loss stays active (no difference of two values), else the difference.

    Parameters
    ----------
    y : ndarray of int64, shape (n,)
    f, delta : ndarray of float64, shape (n * K,)
    s : ndarray of float64, shape (n,) or (0,) (no weights)

    Returns
    -------
    float
    """
    n = len(y)
    K = len(f) // n if n else 0
    weighted = len(s) > 0
    total = 0.0
    for i in range(n):
        w = s[i] if weighted else 1.0
        if w == 0.0:
            continue
        start = i * K
        acc = 0.0
        for k in range(K):
            sign = 1.0 if k == y[i] else -1.0
            m0 = 1.0 - sign * f[start + k]
            d = delta[start + k]
            m1 = m0 - sign * d
            if m0 > 0.0 and m1 > 0.0:
                acc += d * (0.5 * d - sign * m0)
            else:
                acc += 0.5 * (max(m1, 0.0) ** 2 - max(m0, 0.0) ** 2)
        total += w * acc
    return total


@njit(cache=True, nogil=True)
def ovr_squared_hinge_hessian_factors_weighted(y, f, s, a, u):
    """Write ``a[i * K + k] = s_i [1 - Y_ik F_ik > 0]`` (the generalised Hessian,
    diagonal: ``u`` is not written and may be empty)."""
    n = len(y)
    K = len(f) // n if n else 0
    weighted = len(s) > 0
    for i in range(n):
        w = s[i] if weighted else 1.0
        start = i * K
        for k in range(K):
            sign = 1.0 if k == y[i] else -1.0
            a[start + k] = w if 1.0 - sign * f[start + k] > 0.0 else 0.0
