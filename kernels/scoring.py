"""Worst-case analysis kernels: column scores and bounded top-k selection.

The score of column j is ``s_j = c_j**2`` with ``c_j = sum_i a_i X_ij`` and
``a_i = alpha_i * y_i`` (FGM, eq. 26).  With K classes the weights are a
C-contiguous (n_rows, K) matrix A of per-class dual weights and the score
is the squared Euclidean norm ``s_j = sum_c (sum_i A_ic X_ij)**2`` (the
``*_multi`` kernels).  Each column's sum (per class) runs over its
nonzeros in row order with float64 accumulation, so a column's score does
not depend on how columns are grouped into blocks; class c of a ``*_multi``
sum is bit-identical to the 1-D sum with ``A[:, c]``.

Candidates are ranked by the total order "higher score first, then lower
key": two lists ranked this way merge to the same result in any order.
"""

import numpy as np
from numba import njit

__all__ = [
    "column_sums",
    "column_sums_binary",
    "column_sums_multi",
    "column_sums_multi_binary",
    "topk_scores",
    "score_block_topk",
    "score_block_topk_binary",
    "score_block_topk_multi",
    "score_block_topk_multi_binary",
    "score_block_topk_queries",
    "score_block_topk_queries_binary",
    "merge_topk",
    "topk_keyed",
    # heap helpers inlined by the other top-k kernels (poly, groups, additive maps)
    "ranks_before",
    "heap_push",
    "offer",
    "is_excluded",
    "sorted_heap",
    "skip_to",
]


#: ``data`` of the kernels of implicit ones (never read)
_NO_DATA = np.zeros(0, dtype=np.float32)


@njit(cache=True, nogil=True)
def column_sums(indptr, indices, data, weights):
    """Weighted column sums ``c_j = sum_i weights[i] * X[i, j]`` of a CSC block.

    Parameters
    ----------
    indptr : int64 array, shape (n_columns + 1,)
    indices : int32 array, shape (nnz,)
    data : float32 or float64 array, shape (nnz,)
    weights : float64 array, shape (n_rows,)

    Returns
    -------
    sums : float64 array, shape (n_columns,)
    """
    n_columns = indptr.shape[0] - 1
    sums = np.zeros(n_columns, dtype=np.float64)
    for j in range(n_columns):
        acc = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            acc += weights[indices[p]] * np.float64(data[p])
        sums[j] = acc
    return sums


@njit(cache=True, nogil=True)
def column_sums_binary(indptr, indices, weights):
    """Column sums of a block whose stored values are all one.

    Same as :func:`column_sums` with ``data`` equal to ones.
    """
    n_columns = indptr.shape[0] - 1
    sums = np.zeros(n_columns, dtype=np.float64)
    for j in range(n_columns):
        acc = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            acc += weights[indices[p]]
        sums[j] = acc
    return sums


@njit(cache=True, nogil=True)
def column_sums_multi(indptr, indices, data, weights):
    """Per-class weighted column sums ``C[j, c] = sum_i A[i, c] * X[i, j]``.

    Parameters
    ----------
    indptr : int64 array, shape (n_columns + 1,)
    indices : int32 array, shape (nnz,)
    data : float32 or float64 array, shape (nnz,)
    weights : float64 array, shape (n_rows, K), C-contiguous

    Returns
    -------
    sums : float64 array, shape (n_columns, K)
        Column ``c`` equals ``column_sums(indptr, indices, data,
        weights[:, c])`` bit for bit (same row order, float64).
    """
    n_columns = indptr.shape[0] - 1
    n_classes = weights.shape[1]
    sums = np.zeros((n_columns, n_classes), dtype=np.float64)
    for j in range(n_columns):      # accumulated in place: no per-column copies
        for p in range(indptr[j], indptr[j + 1]):
            x = np.float64(data[p])
            i = indices[p]
            for c in range(n_classes):
                sums[j, c] += weights[i, c] * x
    return sums


@njit(cache=True, nogil=True)
def column_sums_multi_binary(indptr, indices, weights):
    """:func:`column_sums_multi` of a block whose stored values are all one."""
    n_columns = indptr.shape[0] - 1
    n_classes = weights.shape[1]
    sums = np.zeros((n_columns, n_classes), dtype=np.float64)
    for j in range(n_columns):
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            for c in range(n_classes):
                sums[j, c] += weights[i, c]
    return sums


@njit(cache=True, nogil=True, inline="always")
def ranks_before(score_a, key_a, score_b, key_b):
    """True when candidate a ranks strictly before candidate b."""
    return score_a > score_b or (score_a == score_b and key_a < key_b)


@njit(cache=True, nogil=True)
def _sift_down(heap_scores, heap_keys, size, pos):
    # Min-heap on rank: the root is the worst kept candidate.
    while True:
        left = 2 * pos + 1
        if left >= size:
            return
        worst = left
        right = left + 1
        if right < size and ranks_before(heap_scores[worst], heap_keys[worst],
                                          heap_scores[right], heap_keys[right]):
            worst = right
        if ranks_before(heap_scores[pos], heap_keys[pos],
                         heap_scores[worst], heap_keys[worst]):
            heap_scores[pos], heap_scores[worst] = heap_scores[worst], heap_scores[pos]
            heap_keys[pos], heap_keys[worst] = heap_keys[worst], heap_keys[pos]
            pos = worst
        else:
            return


@njit(cache=True, nogil=True)
def _sift_up(heap_scores, heap_keys, pos):
    while pos > 0:
        parent = (pos - 1) // 2
        if ranks_before(heap_scores[parent], heap_keys[parent],
                         heap_scores[pos], heap_keys[pos]):
            heap_scores[pos], heap_scores[parent] = heap_scores[parent], heap_scores[pos]
            heap_keys[pos], heap_keys[parent] = heap_keys[parent], heap_keys[pos]
            pos = parent
        else:
            return


@njit(cache=True, nogil=True, inline="always")
def heap_push(heap_scores, heap_keys, size, score, key):
    """Offer a candidate to a bounded min-heap of capacity ``len(heap_scores)``.

    Returns the new size.  A full heap keeps the candidate only when it
    ranks before the worst kept one (the root), which it then replaces.
    """
    if size < heap_scores.shape[0]:
        heap_scores[size] = score
        heap_keys[size] = key
        _sift_up(heap_scores, heap_keys, np.int64(size))
        return size + 1
    if ranks_before(score, key, heap_scores[0], heap_keys[0]):
        heap_scores[0] = score
        heap_keys[0] = key
        _sift_down(heap_scores, heap_keys, np.int64(size), np.int64(0))
    return size


@njit(cache=True, nogil=True, inline="always")
def offer(heap_scores, heap_keys, size, score, key, excluded):
    """Offer a scored candidate to a bounded top-k heap; return the new size.

    A candidate enters when its score is positive, it ranks before the
    worst kept one (or the heap is not full) and its key is not excluded
    (the exclusion search runs only for candidates that would enter).
    """
    if not score > 0.0:
        return size
    if size == heap_scores.shape[0] and not ranks_before(score, key, heap_scores[0],
                                                          heap_keys[0]):
        return size
    if is_excluded(excluded, key):
        return size
    return heap_push(heap_scores, heap_keys, size, score, key)


@njit(cache=True, nogil=True, inline="always")
def is_excluded(excluded, key):
    """True when ``key`` is in the sorted array ``excluded``."""
    pos = np.searchsorted(excluded, key)
    return pos < excluded.shape[0] and excluded[pos] == key


@njit(cache=True, nogil=True)
def sorted_heap(heap_scores, heap_keys, size):
    """The ``size`` kept candidates of a heap, best first: (keys, scores).

    A heap sort of a copy (the heap is left as it is): the root, the worst
    kept candidate, goes to the end, and the heap shrinks by one. Ranks are
    a total order (score, then key; keys are distinct), so this is the one
    ranking a stable sort by key and then by score would give, without the
    two ``argsort`` calls that cost seconds of compilation per process.
    """
    keys = np.empty(size, dtype=heap_keys.dtype)
    scores = np.empty(size, dtype=heap_scores.dtype)
    for i in range(size):
        keys[i] = heap_keys[i]
        scores[i] = heap_scores[i]
    for last in range(size - 1, 0, -1):
        keys[0], keys[last] = keys[last], keys[0]
        scores[0], scores[last] = scores[last], scores[0]
        _sift_down(scores, keys, np.int64(last), np.int64(0))
    return keys, scores


@njit(cache=True, nogil=True)
def topk_scores(scores, first_key, excluded, k):
    """The ``k`` best positive scores of a block of consecutive keys.

    Parameters
    ----------
    scores : float64 array, shape (n,)
        Scores of keys ``first_key .. first_key + n - 1``.
    first_key : int
        Key of ``scores[0]``.
    excluded : int64 array, sorted increasingly
        Keys that may not be returned (already selected features).
    k : int
        Maximum number of candidates returned (k >= 1).

    Returns
    -------
    keys : int64 array, shape (<= k,)
    best : float64 array, shape (<= k,)
        Sorted by score decreasing, ties by key increasing.  Only scores
        strictly greater than zero are kept (FGM ignores zero scores).
    """
    heap_scores = np.empty(k, dtype=np.float64)
    heap_keys = np.empty(k, dtype=np.int64)
    size = np.int64(0)
    n = scores.shape[0]
    ex = np.searchsorted(excluded, first_key)
    n_excluded = excluded.shape[0]
    for j in range(n):
        key = first_key + j
        while ex < n_excluded and excluded[ex] < key:
            ex += 1
        if ex < n_excluded and excluded[ex] == key:
            continue
        s = scores[j]
        if not s > 0.0:
            continue
        if size == k and not ranks_before(s, key, heap_scores[0], heap_keys[0]):
            continue
        size = heap_push(heap_scores, heap_keys, size, s, key)
    return sorted_heap(heap_scores, heap_keys, size)


@njit(cache=True, nogil=True, inline="always")
def skip_to(excluded, ex, key):
    """The first position at or after ``ex`` of sorted ``excluded`` not below ``key``."""
    while ex < excluded.shape[0] and excluded[ex] < key:
        ex += 1
    return ex


@njit(cache=True, nogil=True)
def _block_topk(indptr, indices, data, weights, first_key, excluded, k, scale, binary):
    """:func:`score_block_topk` (``binary``: every value one, ``data`` unread).

    One loop over the columns: each column's sum, its score and its offer
    to the heap, with no array of sums or scores; the result equals, bit
    for bit, :func:`topk_scores` of ``(scale * column_sums(...))**2``, in
    a third of the time on blocks of short columns (imdb50k).
    """
    heap_scores = np.empty(k, dtype=np.float64)
    heap_keys = np.empty(k, dtype=np.int64)
    size = np.int64(0)
    ex = np.searchsorted(excluded, first_key)
    for j in range(indptr.shape[0] - 1):
        acc = 0.0
        if binary:
            for p in range(indptr[j], indptr[j + 1]):
                acc += weights[indices[p]]
        else:
            for p in range(indptr[j], indptr[j + 1]):
                acc += weights[indices[p]] * np.float64(data[p])
        v = scale * acc
        score, key = v * v, first_key + j
        # the checks of topk_scores, cheapest first; the exclusion cursor
        # moves only for a candidate that would enter (written out: as a
        # helper returning (size, ex) the loop ran at half the speed)
        if score > 0.0 and (size < k or ranks_before(score, key, heap_scores[0],
                                                      heap_keys[0])):
            ex = skip_to(excluded, ex, key)
            if not (ex < excluded.shape[0] and excluded[ex] == key):
                size = heap_push(heap_scores, heap_keys, size, score, key)
    return sorted_heap(heap_scores, heap_keys, size)


@njit(cache=True, nogil=True, inline="always")
def _column_row_sums(indptr, indices, data, weights, j, acc, binary):
    """``acc[c] = sum_i weights[i, c] * X[i, j]`` over column j's nonzeros in
    row order (``binary``: every value one, ``data`` unread)."""
    acc[:] = 0.0
    for p in range(indptr[j], indptr[j + 1]):
        row = weights[indices[p]]
        if binary:
            for c in range(acc.shape[0]):
                acc[c] += row[c]
        else:
            x = np.float64(data[p])
            for c in range(acc.shape[0]):
                acc[c] += row[c] * x


@njit(cache=True, nogil=True)
def _block_topk_multi(indptr, indices, data, weights, first_key, excluded, k, scale,
                      binary):
    """:func:`score_block_topk_multi` (``binary``: every value one)."""
    n_classes = weights.shape[1]
    heap_scores = np.empty(k, dtype=np.float64)
    heap_keys = np.empty(k, dtype=np.int64)
    size = np.int64(0)
    ex = np.searchsorted(excluded, first_key)
    acc = np.zeros(n_classes, dtype=np.float64)
    for j in range(indptr.shape[0] - 1):
        _column_row_sums(indptr, indices, data, weights, j, acc, binary)
        score, key = _squared_norm(acc, scale), first_key + j
        if score > 0.0 and (size < k or ranks_before(score, key, heap_scores[0],
                                                      heap_keys[0])):      # as in _block_topk
            ex = skip_to(excluded, ex, key)
            if not (ex < excluded.shape[0] and excluded[ex] == key):
                size = heap_push(heap_scores, heap_keys, size, score, key)
    return sorted_heap(heap_scores, heap_keys, size)


@njit(cache=True, nogil=True)
def score_block_topk(indptr, indices, data, weights, first_key, excluded, k,
                     scale):
    """Score every column of a CSC block and keep the ``k`` best.

    One loop over the columns, without per-column arrays (:func:`_block_topk`).

    Parameters
    ----------
    indptr, indices, data : CSC arrays of the block
        (for blocks of implicit ones use :func:`score_block_topk_binary`).
    weights : float64 array, shape (n_rows,)
        ``a_i = alpha_i * y_i``.
    first_key : int
        Key of the block's first column.
    excluded : int64 array, sorted
        Keys never returned.
    k : int
    scale : float
        Multiplies every column sum before squaring (1 for linear features).

    Returns
    -------
    keys, scores : see :func:`topk_scores`
    """
    return _block_topk(indptr, indices, data, weights, first_key, excluded, k, scale,
                       False)


@njit(cache=True, nogil=True)
def score_block_topk_binary(indptr, indices, weights, first_key, excluded, k,
                            scale):
    """:func:`score_block_topk` for a block whose values are all one."""
    return _block_topk(indptr, indices, _NO_DATA, weights, first_key, excluded, k,
                       scale, True)


@njit(cache=True, nogil=True)
def _squared_norm(acc, scale):
    """``sum_c (scale * acc[c])**2``, classes in order."""
    total = 0.0
    for c in range(acc.shape[0]):
        v = scale * acc[c]
        total += v * v
    return total


@njit(cache=True, nogil=True)
def score_block_topk_multi(indptr, indices, data, weights, first_key, excluded,
                           k, scale):
    """:func:`score_block_topk` with K classes: scores ``||scale * C[j]||²``.

    Parameters
    ----------
    indptr, indices, data : CSC arrays of the block
    weights : float64 array, shape (n_rows, K), C-contiguous
        Per-class dual weights.
    first_key, excluded, k, scale : see :func:`score_block_topk`

    Returns
    -------
    keys, scores : see :func:`topk_scores`
        With K = 1 the scores equal those of :func:`score_block_topk`
        bit for bit; in general those of :func:`topk_scores` of the
        squared norms of the rows of ``scale * column_sums_multi(...)``
        (classes summed in order).
    """
    return _block_topk_multi(indptr, indices, data, weights, first_key, excluded, k,
                             scale, False)


@njit(cache=True, nogil=True)
def score_block_topk_multi_binary(indptr, indices, weights, first_key, excluded, k,
                                  scale):
    """:func:`score_block_topk_multi` for a block whose values are all one."""
    return _block_topk_multi(indptr, indices, _NO_DATA, weights, first_key, excluded, k,
                             scale, True)


@njit(cache=True, nogil=True)
def _block_topk_queries(indptr, indices, data, weights, first_key, excluded,
                        excluded_ptr, ks, scale, binary):
    """:func:`score_block_topk_queries` (``binary``: every value one)."""
    n_queries = weights.shape[1]
    capacity = 1
    for q in range(n_queries):
        capacity = max(capacity, ks[q])
    heap_scores = np.empty((n_queries, capacity), dtype=np.float64)
    heap_keys = np.empty((n_queries, capacity), dtype=np.int64)
    sizes = np.zeros(n_queries, dtype=np.int64)
    cursors = np.empty(n_queries, dtype=np.int64)
    for q in range(n_queries):         # positions within each query's own keys
        cursors[q] = np.searchsorted(excluded[excluded_ptr[q]:excluded_ptr[q + 1]],
                                     first_key)
    acc = np.zeros(n_queries, dtype=np.float64)
    for j in range(indptr.shape[0] - 1):
        _column_row_sums(indptr, indices, data, weights, j, acc, binary)
        key = first_key + j
        for q in range(n_queries):
            v = scale * acc[q]
            score = v * v
            size = sizes[q]
            if score > 0.0 and (size < ks[q] or ranks_before(
                    score, key, heap_scores[q, 0], heap_keys[q, 0])):  # as in _block_topk
                own = excluded[excluded_ptr[q]:excluded_ptr[q + 1]]
                ex = cursors[q] = skip_to(own, cursors[q], key)
                if not (ex < own.shape[0] and own[ex] == key):
                    sizes[q] = heap_push(heap_scores[q, :ks[q]], heap_keys[q, :ks[q]],
                                          size, score, key)
    keys_ptr = np.zeros(n_queries + 1, dtype=np.int64)
    for q in range(n_queries):
        keys_ptr[q + 1] = keys_ptr[q] + sizes[q]
    out_keys = np.empty(keys_ptr[n_queries], dtype=np.int64)
    out_scores = np.empty(keys_ptr[n_queries], dtype=np.float64)
    for q in range(n_queries):
        keys, scores = sorted_heap(heap_scores[q], heap_keys[q], sizes[q])
        out_keys[keys_ptr[q]:keys_ptr[q + 1]] = keys
        out_scores[keys_ptr[q]:keys_ptr[q + 1]] = scores
    return out_keys, out_scores, keys_ptr


@njit(cache=True, nogil=True)
def score_block_topk_queries(indptr, indices, data, weights, first_key, excluded,
                             excluded_ptr, ks, scale):
    """:func:`score_block_topk` for Q queries at once, one loop over the block.

    Query q has the weights ``weights[:, q]``, the sorted excluded keys
    ``excluded[excluded_ptr[q]:excluded_ptr[q + 1]]`` and wants ``ks[q]``
    candidates.  Each column's nonzeros are read once for all queries; each
    query's sum runs over them in the same order as in
    :func:`score_block_topk`, so its result equals that kernel's, bit for
    bit.

    Parameters
    ----------
    indptr, indices, data : CSC arrays of the block
        (for blocks of implicit ones use :func:`score_block_topk_queries_binary`).
    weights : float64 array, shape (n_rows, Q), C-contiguous
    first_key : int
    excluded : int64 array
        The queries' excluded keys, each query's sorted, concatenated.
    excluded_ptr : int64 array, shape (Q + 1,)
    ks : int64 array, shape (Q,)
        Candidates wanted per query, each >= 1.
    scale : float

    Returns
    -------
    keys, scores : int64 and float64 arrays
        Query q's ranked candidates are ``[keys_ptr[q]:keys_ptr[q + 1]]``.
    keys_ptr : int64 array, shape (Q + 1,)
    """
    return _block_topk_queries(indptr, indices, data, weights, first_key, excluded,
                               excluded_ptr, ks, scale, False)


@njit(cache=True, nogil=True)
def score_block_topk_queries_binary(indptr, indices, weights, first_key, excluded,
                                    excluded_ptr, ks, scale):
    """:func:`score_block_topk_queries` for a block whose values are all one."""
    return _block_topk_queries(indptr, indices, _NO_DATA, weights, first_key, excluded,
                               excluded_ptr, ks, scale, True)


@njit(cache=True, nogil=True)
def merge_topk(keys_a, scores_a, keys_b, scores_b, k):
    """Merge two ranked candidate lists into the ``k`` best.

    Both inputs must be sorted by (score decreasing, key increasing) and
    hold distinct keys.  The result does not depend on which list is ``a``.
    """
    na = keys_a.shape[0]
    nb = keys_b.shape[0]
    n = min(k, na + nb)
    keys = np.empty(n, dtype=np.int64)
    scores = np.empty(n, dtype=np.float64)
    i = 0
    j = 0
    for pos in range(n):
        if j >= nb or (i < na and ranks_before(scores_a[i], keys_a[i],
                                                 scores_b[j], keys_b[j])):
            keys[pos] = keys_a[i]
            scores[pos] = scores_a[i]
            i += 1
        else:
            keys[pos] = keys_b[j]
            scores[pos] = scores_b[j]
            j += 1
    return keys, scores


@njit(cache=True, nogil=True)
def topk_keyed(scores, keys, excluded, k):
    """The ``k`` best positive scores of candidates with arbitrary keys.

    Parameters
    ----------
    scores : float64 array, shape (n,)
    keys : int64 array, shape (n,)
        Distinct keys (any order).
    excluded : int64 array, sorted
        Keys never returned.
    k : int

    Returns
    -------
    keys, scores : ranked by score decreasing, key increasing.
    """
    heap_scores = np.empty(k, dtype=np.float64)
    heap_keys = np.empty(k, dtype=np.int64)
    size = np.int64(0)
    for j in range(scores.shape[0]):
        s = scores[j]
        key = keys[j]
        size = offer(heap_scores, heap_keys, size, s, key, excluded)
    return sorted_heap(heap_scores, heap_keys, size)
