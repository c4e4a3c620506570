"""Fused scoring of additive-kernel groups with the bounded top-k heap.

One pass over a stored CSC block scores every original column's group of
generated columns (``s_j = sum_l (sum_i a_i phi_l(x_ij))**2``, FGM eq. 27;
with K classes summed over the classes) without writing the generated
columns, and keeps the best ``k`` groups (:mod:`ultrafs.kernels.scoring`'s
heap). The maps themselves (``hik_level``, ``vz_fill``, their constants)
are in :mod:`ultrafs.kernels.additive_maps`, which describes them.
"""

import numpy as np
from numba import njit

from .additive_maps import (CHI2_COEF, CHI2_STEP, HIK_LEVELS, INTERSECTION_COEF,
                            INTERSECTION_STEP, JS_COEF, JS_STEP, hik_level, vz_fill)
from .scoring import heap_push, ranks_before, skip_to, sorted_heap

__all__ = [
    "score_block_topk_hik",
    "score_block_topk_multi_hik",
    "score_block_topk_hik_scaled",
    "score_block_topk_multi_hik_scaled",
    "score_block_topk_chi2",
    "score_block_topk_intersection",
    "score_block_topk_js",
    "score_block_topk_multi_chi2",
    "score_block_topk_multi_intersection",
    "score_block_topk_multi_js",
    "score_block_topk_vz",
    "score_block_topk_multi_vz",
    "SCORE_BLOCK_TOPK",
    "SCORE_BLOCK_TOPK_MULTI",
]


@njit(cache=True, nogil=True, inline="always")
def _offer_group(heap_scores, heap_keys, size, k, score, key, excluded, ex):
    """Offer a group's score; return ``(size, ex)`` (the checks of ``_block_topk``)."""
    if score > 0.0 and (size < k or ranks_before(score, key, heap_scores[0],
                                                  heap_keys[0])):
        ex = skip_to(excluded, ex, key)
        if not (ex < excluded.shape[0] and excluded[ex] == key):
            size = heap_push(heap_scores, heap_keys, size, score, key)
    return size, ex


@njit(cache=True, nogil=True)
def _hik_topk(indptr, indices, data, scale, gain, weights, first_key, excluded, k, q):
    n = k if k > 0 else 0
    heap_scores = np.empty(n, dtype=np.float64)
    heap_keys = np.empty(n, dtype=np.int64)
    size = np.int64(0)
    if k <= 0:
        return sorted_heap(heap_scores, heap_keys, size)
    ex = np.searchsorted(excluded, first_key)
    bucket = np.zeros(q + 1, dtype=np.float64)
    for j in range(indptr.shape[0] - 1):
        if indptr[j + 1] == indptr[j]:
            continue                                 # empty column: score 0
        bucket[:] = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            bucket[hik_level(np.float64(data[p]), scale[j], q)] += weights[indices[p]]
        # sum_i a_i phi_l(x_ij) = (sum over levels >= l of the buckets) / sqrt(q)
        suffix = 0.0
        total = 0.0
        for l in range(q, 0, -1):
            suffix += bucket[l]
            total += suffix * suffix
        size, ex = _offer_group(heap_scores, heap_keys, size, k, total / q * gain[j],
                                first_key + j, excluded, ex)
    return sorted_heap(heap_scores, heap_keys, size)


@njit(cache=True, nogil=True)
def _hik_topk_multi(indptr, indices, data, scale, gain, weights, first_key, excluded,
                    k, q):
    n_classes = weights.shape[1]
    n = k if k > 0 else 0
    heap_scores = np.empty(n, dtype=np.float64)
    heap_keys = np.empty(n, dtype=np.int64)
    size = np.int64(0)
    if k <= 0:
        return sorted_heap(heap_scores, heap_keys, size)
    ex = np.searchsorted(excluded, first_key)
    bucket = np.zeros((q + 1, n_classes), dtype=np.float64)
    suffix = np.zeros(n_classes, dtype=np.float64)
    for j in range(indptr.shape[0] - 1):
        if indptr[j + 1] == indptr[j]:
            continue
        bucket[:] = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            v = hik_level(np.float64(data[p]), scale[j], q)
            row = weights[indices[p]]
            for c in range(n_classes):
                bucket[v, c] += row[c]
        suffix[:] = 0.0
        total = 0.0
        for l in range(q, 0, -1):
            for c in range(n_classes):
                suffix[c] += bucket[l, c]
                total += suffix[c] * suffix[c]
        size, ex = _offer_group(heap_scores, heap_keys, size, k, total / q * gain[j],
                                first_key + j, excluded, ex)
    return sorted_heap(heap_scores, heap_keys, size)


@njit(cache=True, nogil=True)
def _vz_topk(indptr, indices, data, weights, first_key, excluded, k, coef, step):
    g = 2 * len(coef) - 1
    n = k if k > 0 else 0
    heap_scores = np.empty(n, dtype=np.float64)
    heap_keys = np.empty(n, dtype=np.int64)
    size = np.int64(0)
    if k <= 0:
        return sorted_heap(heap_scores, heap_keys, size)
    ex = np.searchsorted(excluded, first_key)
    values = np.empty(g, dtype=np.float64)
    acc = np.zeros(g, dtype=np.float64)
    for j in range(indptr.shape[0] - 1):
        if indptr[j + 1] == indptr[j]:
            continue
        acc[:] = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            vz_fill(np.float64(data[p]), coef, step, values)
            a = weights[indices[p]]
            for l in range(g):
                acc[l] += a * values[l]
        total = 0.0
        for l in range(g):
            total += acc[l] * acc[l]
        size, ex = _offer_group(heap_scores, heap_keys, size, k, total,
                                first_key + j, excluded, ex)
    return sorted_heap(heap_scores, heap_keys, size)


@njit(cache=True, nogil=True)
def _vz_topk_multi(indptr, indices, data, weights, first_key, excluded, k, coef, step):
    g = 2 * len(coef) - 1
    n_classes = weights.shape[1]
    n = k if k > 0 else 0
    heap_scores = np.empty(n, dtype=np.float64)
    heap_keys = np.empty(n, dtype=np.int64)
    size = np.int64(0)
    if k <= 0:
        return sorted_heap(heap_scores, heap_keys, size)
    ex = np.searchsorted(excluded, first_key)
    values = np.empty(g, dtype=np.float64)
    acc = np.zeros((g, n_classes), dtype=np.float64)
    for j in range(indptr.shape[0] - 1):
        if indptr[j + 1] == indptr[j]:
            continue
        acc[:] = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            vz_fill(np.float64(data[p]), coef, step, values)
            row = weights[indices[p]]
            for l in range(g):
                f = values[l]
                for c in range(n_classes):
                    acc[l, c] += row[c] * f
        total = 0.0
        for l in range(g):
            for c in range(n_classes):
                total += acc[l, c] * acc[l, c]
        size, ex = _offer_group(heap_scores, heap_keys, size, k, total,
                                first_key + j, excluded, ex)
    return sorted_heap(heap_scores, heap_keys, size)


@njit(cache=True, nogil=True)
def score_block_topk_hik(indptr, indices, data, scale, weights, first_key, excluded,
                         k, q=HIK_LEVELS):
    """Score every column of a block as a HIK group and keep the ``k`` best.

    ``s_j = sum_l (sum_i a_i phi_l(x_ij))**2`` without expanding: the
    weights are summed into the bucket of each entry's level, and the
    suffix sums of the buckets (over levels >= l) are the q group sums,
    ``O(nnz_j + q)`` per non-empty column.

    Parameters
    ----------
    indptr : int64 array, shape (n_columns + 1,)
    indices : int32 array, shape (nnz,)
    data : float32 or float64 array, shape (nnz,)
    scale : float64 array, shape (n_columns,)
        Per-column scale ``s_j``.
    weights : float64 array, shape (n_rows,)
        ``a_i = alpha_i * y_i``.
    first_key : int
        Key of the block's first column (the group of column j has key
        ``first_key + j``).
    excluded : int64 array, sorted
        Keys never returned.
    k : int
        Maximum number of groups returned (``k <= 0``: none).

    Returns
    -------
    keys : int64 array, shape (<= k,)
    scores : float64 array, shape (<= k,)
        Ranked by score decreasing, ties by key increasing; only scores
        strictly greater than zero (as :func:`scoring.topk_scores`).
    """
    return _hik_topk(indptr, indices, data, scale, np.ones(indptr.shape[0] - 1), weights,
                     first_key, excluded, k, q)


@njit(cache=True, nogil=True)
def score_block_topk_hik_scaled(indptr, indices, data, scale, gain, weights, first_key,
                                excluded, k, q=HIK_LEVELS):
    """:func:`score_block_topk_hik` of the map whose group j is multiplied by
    ``sqrt(gain[j])``: scores ``gain[j] * s_j`` (float64, (n_columns,)).
    ``gain = scale`` is the raw-scale HIK, ``k(x, z) ~ min(x, z)``
    (:class:`~ultrafs.features.additive.HIKFeatures`, ``normalize=False``);
    ones give :func:`score_block_topk_hik`'s bits."""
    return _hik_topk(indptr, indices, data, scale, gain, weights, first_key, excluded, k,
                     q)


@njit(cache=True, nogil=True)
def score_block_topk_multi_hik(indptr, indices, data, scale, weights, first_key,
                               excluded, k, q=HIK_LEVELS):
    """:func:`score_block_topk_hik` with K classes.

    Parameters
    ----------
    weights : float64 array, shape (n_rows, K), C-contiguous
        Per-class dual weights; the score is
        ``sum_l sum_c (sum_i A_ic phi_l(x_ij))**2``.
    indptr, indices, data, scale, first_key, excluded, k
        See :func:`score_block_topk_hik`.

    Returns
    -------
    keys, scores : see :func:`score_block_topk_hik`
    """
    return _hik_topk_multi(indptr, indices, data, scale, np.ones(indptr.shape[0] - 1),
                           weights, first_key, excluded, k, q)


@njit(cache=True, nogil=True)
def score_block_topk_multi_hik_scaled(indptr, indices, data, scale, gain, weights,
                                      first_key, excluded, k, q=HIK_LEVELS):
    """:func:`score_block_topk_multi_hik` with the group gains of
    :func:`score_block_topk_hik_scaled`."""
    return _hik_topk_multi(indptr, indices, data, scale, gain, weights, first_key,
                           excluded, k, q)


@njit(cache=True, nogil=True)
def score_block_topk_chi2(indptr, indices, data, scale, weights, first_key, excluded,
                          k):
    """Score every column of a block as a chi2-map group and keep the ``k`` best.

    ``s_j = sum_l (sum_i a_i Psi_l(x_ij))**2`` over the 11 map values,
    accumulated per column in row order in float64 (one scratch of 11).

    Parameters
    ----------
    indptr, indices, data : CSC arrays of the block
    scale : float64 array, shape (n_columns,)
        Unused (homogeneous map).
    weights : float64 array, shape (n_rows,)
    first_key, excluded, k : see :func:`score_block_topk_hik`

    Returns
    -------
    keys, scores : see :func:`score_block_topk_hik`
    """
    return _vz_topk(indptr, indices, data, weights, first_key, excluded, k, CHI2_COEF,
                    CHI2_STEP)


@njit(cache=True, nogil=True)
def score_block_topk_intersection(indptr, indices, data, scale, weights, first_key,
                                  excluded, k):
    """Intersection-map groups; see :func:`score_block_topk_chi2`."""
    return _vz_topk(indptr, indices, data, weights, first_key, excluded, k,
                    INTERSECTION_COEF, INTERSECTION_STEP)


@njit(cache=True, nogil=True)
def score_block_topk_js(indptr, indices, data, scale, weights, first_key, excluded,
                        k):
    """Jensen-Shannon-map groups; see :func:`score_block_topk_chi2`."""
    return _vz_topk(indptr, indices, data, weights, first_key, excluded, k, JS_COEF,
                    JS_STEP)


@njit(cache=True, nogil=True)
def score_block_topk_multi_chi2(indptr, indices, data, scale, weights, first_key,
                                excluded, k):
    """:func:`score_block_topk_chi2` with K classes.

    Parameters
    ----------
    weights : float64 array, shape (n_rows, K), C-contiguous
        The score is ``sum_l sum_c (sum_i A_ic Psi_l(x_ij))**2``.
    indptr, indices, data, scale, first_key, excluded, k
        See :func:`score_block_topk_chi2`.

    Returns
    -------
    keys, scores : see :func:`score_block_topk_hik`
    """
    return _vz_topk_multi(indptr, indices, data, weights, first_key, excluded, k,
                          CHI2_COEF, CHI2_STEP)


@njit(cache=True, nogil=True)
def score_block_topk_multi_intersection(indptr, indices, data, scale, weights,
                                        first_key, excluded, k):
    """Intersection-map groups with K classes; see :func:`score_block_topk_multi_chi2`."""
    return _vz_topk_multi(indptr, indices, data, weights, first_key, excluded, k,
                          INTERSECTION_COEF, INTERSECTION_STEP)


@njit(cache=True, nogil=True)
def score_block_topk_multi_js(indptr, indices, data, scale, weights, first_key,
                              excluded, k):
    """Jensen-Shannon-map groups with K classes; see :func:`score_block_topk_multi_chi2`."""
    return _vz_topk_multi(indptr, indices, data, weights, first_key, excluded, k, JS_COEF,
                          JS_STEP)


@njit(cache=True, nogil=True)
def score_block_topk_vz(indptr, indices, data, weights, first_key, excluded, k, coef,
                        step):
    """:func:`score_block_topk_chi2` for the map of amplitudes ``coef`` and step."""
    return _vz_topk(indptr, indices, data, weights, first_key, excluded, k, coef, step)


@njit(cache=True, nogil=True)
def score_block_topk_multi_vz(indptr, indices, data, weights, first_key, excluded, k,
                              coef, step):
    """:func:`score_block_topk_multi_chi2` for the map of amplitudes ``coef``."""
    return _vz_topk_multi(indptr, indices, data, weights, first_key, excluded, k, coef,
                          step)


#: ``score_block_topk_<map>(indptr, indices, data, scale, weights, first_key,
#: excluded, k)`` by map name (1-D weights)
SCORE_BLOCK_TOPK = {"hik": score_block_topk_hik, "chi2": score_block_topk_chi2,
                    "intersection": score_block_topk_intersection,
                    "js": score_block_topk_js}
#: the same with 2-D weights (n_rows, K)
SCORE_BLOCK_TOPK_MULTI = {"hik": score_block_topk_multi_hik,
                          "chi2": score_block_topk_multi_chi2,
                          "intersection": score_block_topk_multi_intersection,
                          "js": score_block_topk_multi_js}
