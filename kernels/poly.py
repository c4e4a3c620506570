"""Degree-2 polynomial feature kernels: column statistics and cross scores.

The explicit map of the kernel (γ x′z + r)² has linear terms √(2γr)·x_j,
squares γ·x_j² and crosses √2·γ·x_j·x_k (j < k).  With ``a_i = α_i y_i``
the scores are

* linear  ``2γr · (Σ_i a_i x_ij)²``
* square  ``γ² · (Σ_i a_i x_ij²)²``
* cross   ``2γ² · (Σ_i a_i x_ij x_ik)²``.

A cross sum is accumulated over the rows of column j in increasing row
order (:func:`cross_topk`), or per fixed row range in increasing row order
with the ranges added in a fixed order (:func:`pair_gram_rows`), whatever
the column blocking, so scores are bit-identical for any block layout.  Keys encode pairs as ``j * (m + 1) + (k + 1)`` (k = -1 for the
linear term, k = j for the square), an order-preserving encoding of the
pair (j, k) that fits int64 for m < 3·10⁹.

Safe pruning: |Σ_i a_i x_ij x_ik| ≤ min(A_j M_k, A_k M_j) with
A_j = Σ_i |a_i||x_ij| and M_j = max_i |x_ij|.  For non-negative data the
sum splits into a positive part S⁺ ≤ min(P_j M_k, P_k M_j) and a negative
part S⁻ ≤ min(N_j M_k, N_k M_j) (P_j, N_j: the positive and negative parts
of A_j), so |S| ≤ max(S⁺, S⁻) bounds it up to twice as tightly.  A pair
whose bound cannot reach the current B-th best score is never accumulated.

With K classes (``*_multi`` kernels) the weights are an (n, K) matrix A of
per-class dual weights and a score is a squared Euclidean norm over the
classes, e.g. ``2γ² · Σ_c (Σ_i A_ic x_ij x_ik)²`` for a cross.  The bound
generalises with |a_i| replaced by ||A_i||₂ (triangle inequality):
||Σ_i A_i x_ij x_ik||₂ ≤ min(Ā_j M_k, Ā_k M_j) with Ā_j = Σ_i ||A_i||₂ |x_ij|;
there is no sign split, so the kernels report Ā_j as the positive part and
0 as the negative part, which turns the two-part bound into this one.
"""

import numpy as np
from numba import njit

from .scoring import heap_push, is_excluded, offer, ranks_before, sorted_heap
from .spans import first_at_least

__all__ = [
    "column_stats",
    "column_stats_multi",
    "pair_key",
    "cross_topk",
    "cross_topk_multi",
    "rows_of_columns",
    "pair_gram_rows",
    "gram_topk",
    "column_pass_topk",
    "live_columns_of_block",
    "all_ones",
]

#: relative safety margin of the pruning bound against rounding
BOUND_SLACK = 1e-9


@njit(cache=True, nogil=True)
def column_stats(indptr, indices, data, weights, binary):
    """Per-column sums needed by the degree-2 worst-case analysis.

    Parameters
    ----------
    indptr, indices, data : CSC arrays of a column block
        ``data`` is ignored when ``binary`` is True (all values one).
    weights : float64 array, shape (n_rows,)
        ``a = alpha * y``.
    binary : bool

    Returns
    -------
    linear_sums : float64 array  Σ_i a_i x_ij
    square_sums : float64 array  Σ_i a_i x_ij²
    pos_sums : float64 array     P_j = Σ_i max(a_i x_ij, 0)
    neg_sums : float64 array     N_j = Σ_i max(-a_i x_ij, 0)   (P_j + N_j = A_j)
    max_abs : float64 array      M_j = max_i |x_ij| (0 for empty columns)
    min_value : float            smallest stored value of the block (0 if none)
    """
    n_columns = indptr.shape[0] - 1
    linear_sums = np.zeros(n_columns)
    square_sums = np.zeros(n_columns)
    pos_sums = np.zeros(n_columns)
    neg_sums = np.zeros(n_columns)
    max_abs = np.zeros(n_columns)
    min_value = 0.0
    for j in range(n_columns):
        lin, sq, pos, neg, mx, mn = _column_sums(indptr, indices, data, weights,
                                                 binary, j)
        if mn < min_value:
            min_value = mn
        linear_sums[j] = lin
        square_sums[j] = sq
        pos_sums[j] = pos
        neg_sums[j] = neg
        max_abs[j] = mx
    return linear_sums, square_sums, pos_sums, neg_sums, max_abs, min_value


@njit(cache=True, nogil=True)
def column_stats_multi(indptr, indices, data, weights, row_norms, binary):
    """:func:`column_stats` with K classes (squared norms over the classes).

    Parameters
    ----------
    indptr, indices, data : CSC arrays of a column block
        ``data`` is ignored when ``binary`` is True (all values one).
    weights : float64 array, shape (n_rows, K), C-contiguous
        Per-class dual weights A.
    row_norms : float64 array, shape (n_rows,)
        ||A_i||₂.
    binary : bool

    Returns
    -------
    linear_norms : float64 array  Σ_c (Σ_i A_ic x_ij)²
    square_norms : float64 array  Σ_c (Σ_i A_ic x_ij²)²
    pos_sums : float64 array      Ā_j = Σ_i ||A_i||₂ |x_ij|
    neg_sums : float64 array      zeros (no sign split with K classes)
    max_abs : float64 array       M_j = max_i |x_ij| (0 for empty columns)
    min_value : float             smallest stored value of the block (0 if none)
    """
    n_columns = indptr.shape[0] - 1
    n_classes = weights.shape[1]
    linear_norms = np.zeros(n_columns)
    square_norms = np.zeros(n_columns)
    pos_sums = np.zeros(n_columns)
    neg_sums = np.zeros(n_columns)
    max_abs = np.zeros(n_columns)
    lin = np.zeros(n_classes)
    sq = np.zeros(n_classes)
    min_value = 0.0
    for j in range(n_columns):
        lin[:] = 0.0
        sq[:] = 0.0
        total = 0.0
        mx = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            x = 1.0 if binary else np.float64(data[p])
            for c in range(n_classes):
                wx = weights[i, c] * x
                lin[c] += wx
                sq[c] += wx * x
            total += row_norms[i] * abs(x)
            if abs(x) > mx:
                mx = abs(x)
            if x < min_value:
                min_value = x
        a = 0.0
        b = 0.0
        for c in range(n_classes):
            a += lin[c] * lin[c]
            b += sq[c] * sq[c]
        linear_norms[j] = a
        square_norms[j] = b
        pos_sums[j] = total
        max_abs[j] = mx
    return linear_norms, square_norms, pos_sums, neg_sums, max_abs, min_value


@njit(cache=True, nogil=True, inline="always")
def pair_key(j, k, n_features):
    """Key of the pair (j, k); k = -1 is the linear term, k = j the square."""
    return j * (n_features + 1) + (k + 1)


@njit(cache=True, nogil=True)
def rows_of_columns(indptr, indices, data, n_rows):
    """Transpose a CSC block to CSR (rows -> local column positions).

    Returns
    -------
    row_ptr : int64 array, shape (n_rows + 1,)
    row_cols : int32 array  local column positions, increasing within a row
    row_vals : float64 array
    """
    n_columns = indptr.shape[0] - 1
    nnz = indptr[n_columns]
    row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    for p in range(nnz):
        row_ptr[indices[p] + 1] += 1
    for i in range(n_rows):
        row_ptr[i + 1] += row_ptr[i]
    fill = row_ptr[:-1].copy()
    row_cols = np.empty(nnz, dtype=np.int32)
    row_vals = np.empty(nnz, dtype=np.float64)
    for j in range(n_columns):
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            row_cols[fill[i]] = j
            row_vals[fill[i]] = data[p]
            fill[i] += 1
    return row_ptr, row_cols, row_vals


@njit(cache=True, nogil=True)
def cross_topk(left_indptr, left_indices, left_data, left_columns, left_pos,
               left_neg, left_max, row_ptr, row_cols, row_vals, right_columns,
               right_pos, right_neg, right_max, weights, scale, threshold,
               excluded, n_features, k, prune):
    """Top-``k`` cross features between a left and a right set of columns.

    Every pair (j, k) with j in the left set, k in the right set and
    j < k (global column numbers) is a candidate.  The right set is given
    row-wise (CSR over its local positions) so that, for a left column j,
    the sums Σ_i a_i x_ij x_ik over all k are accumulated by visiting the
    rows of j once, in increasing row order.

    Parameters
    ----------
    left_indptr, left_indices, left_data : CSC arrays of the left columns
    left_columns : int64 array, increasing
        Global column numbers of the left columns.
    left_pos, left_neg, left_max : float64 arrays
        Bound ingredients of the left columns: for non-negative data the
        positive and negative parts P_j, N_j of A_j (then
        |Σ a x_j x_k| ≤ max(min(P_j M_k, P_k M_j), min(N_j M_k, N_k M_j)));
        for data with negative values pass A_j for both (the bound is then
        min(A_j M_k, A_k M_j)).  M_j = max |x_ij|.
    row_ptr, row_cols, row_vals : CSR arrays of the right columns
        (``row_cols`` are positions into ``right_columns``).
    right_columns : int64 array, increasing
    right_pos, right_neg, right_max : float64 arrays
    weights : float64 array  a = alpha * y
    scale : float
        2γ², the factor of a cross score.
    threshold : float
        Scores that cannot exceed it are pruned (a proven lower bound of
        the final k-th best score, 0 to disable pruning).
    excluded : int64 array, sorted
        Keys never returned (already selected).
    n_features : int
        m, for the key encoding.
    k : int
    prune : bool
        Skip pairs whose bound cannot beat the running k-th best (or
        ``threshold``); False accumulates every co-occurring pair.

    Returns
    -------
    keys, scores : ranked top-k (score decreasing, key increasing)
    n_evaluated : int   pairs whose sum was accumulated
    n_pruned : int      co-occurring pairs skipped by the bound
    """
    n_right = right_columns.shape[0]
    acc = np.zeros(n_right)
    seen = np.zeros(n_right, dtype=np.bool_)
    touched = np.empty(n_right, dtype=np.int64)
    heap_scores = np.empty(k, dtype=np.float64)
    heap_keys = np.empty(k, dtype=np.int64)
    size = np.int64(0)
    n_evaluated = 0
    n_pruned = 0
    slack = 1.0 + BOUND_SLACK
    for jl in range(left_columns.shape[0]):
        j = left_columns[jl]
        p_j = left_pos[jl]
        n_j = left_neg[jl]
        m_j = left_max[jl]
        level = threshold
        if prune and size == k and heap_scores[0] > level:
            level = heap_scores[0]
        # a pair (j, .) scores at most scale * (a_j * max M)^2; the column
        # is skipped when even that cannot beat the level.
        first = np.searchsorted(right_columns, j + 1)
        if first >= n_right:
            continue
        n_touched = 0
        for p in range(left_indptr[jl], left_indptr[jl + 1]):
            i = left_indices[p]
            wx = weights[i] * np.float64(left_data[p])
            if wx == 0.0:
                continue
            start = row_ptr[i]
            stop = row_ptr[i + 1]
            # positions in a row are increasing: skip those with k <= j
            lo = first_at_least(row_cols, start, stop, first)
            for q in range(lo, stop):
                kl = row_cols[q]
                if not seen[kl]:
                    seen[kl] = True
                    touched[n_touched] = kl
                    n_touched += 1
                    m_k = right_max[kl]
                    bound = max(min(p_j * m_k, right_pos[kl] * m_j),
                                min(n_j * m_k, right_neg[kl] * m_j)) * slack
                    if prune and scale * bound * bound < level:
                        acc[kl] = np.nan   # marks a pruned pair
                        continue
                    acc[kl] = 0.0
                if acc[kl] == acc[kl]:     # not pruned
                    acc[kl] += wx * row_vals[q]
        for t in range(n_touched):
            kl = touched[t]
            seen[kl] = False
            s_sum = acc[kl]
            acc[kl] = 0.0
            if s_sum != s_sum:
                n_pruned += 1
                continue
            n_evaluated += 1
            v = s_sum
            s = scale * v * v
            key = pair_key(j, right_columns[kl], n_features)
            size = offer(heap_scores, heap_keys, size, s, key, excluded)
    keys, scores = sorted_heap(heap_scores, heap_keys, size)
    return keys, scores, n_evaluated, n_pruned


@njit(cache=True, nogil=True)
def cross_topk_multi(left_indptr, left_indices, left_data, left_columns, left_pos,
                     left_neg, left_max, row_ptr, row_cols, row_vals,
                     right_columns, right_pos, right_neg, right_max, weights,
                     scale, threshold, excluded, n_features, k, prune):
    """:func:`cross_topk` with K classes: scores ``scale · Σ_c S_c²``.

    Same arguments as :func:`cross_topk` except ``weights``, an (n_rows,
    K) C-contiguous float64 matrix, and the bound ingredients, which are
    those of :func:`column_stats_multi` (``*_pos`` = Ā, ``*_neg`` = 0).
    Every class sum ``S_c = Σ_i A_ic x_ij x_ik`` is accumulated over the
    rows of column j in increasing row order, whatever the blocking.

    Returns
    -------
    keys, scores : ranked top-k (score decreasing, key increasing)
    n_evaluated : int   pairs whose sums were accumulated
    n_pruned : int      co-occurring pairs skipped by the bound
    """
    n_right = right_columns.shape[0]
    n_classes = weights.shape[1]
    acc = np.zeros((n_right, n_classes))
    state = np.zeros(n_right, dtype=np.int8)    # 0 unseen, 1 summed, 2 pruned
    touched = np.empty(n_right, dtype=np.int64)
    wx = np.empty(n_classes)
    heap_scores = np.empty(k, dtype=np.float64)
    heap_keys = np.empty(k, dtype=np.int64)
    size = np.int64(0)
    n_evaluated = 0
    n_pruned = 0
    slack = 1.0 + BOUND_SLACK
    for jl in range(left_columns.shape[0]):
        j = left_columns[jl]
        p_j = left_pos[jl]
        n_j = left_neg[jl]
        m_j = left_max[jl]
        level = threshold
        if prune and size == k and heap_scores[0] > level:
            level = heap_scores[0]
        first = np.searchsorted(right_columns, j + 1)
        if first >= n_right:
            continue
        n_touched = 0
        for p in range(left_indptr[jl], left_indptr[jl + 1]):
            i = left_indices[p]
            x = np.float64(left_data[p])
            nonzero = False
            for c in range(n_classes):
                wx[c] = weights[i, c] * x
                if wx[c] != 0.0:
                    nonzero = True
            if not nonzero:
                continue
            start = row_ptr[i]
            stop = row_ptr[i + 1]
            lo = first_at_least(row_cols, start, stop, first)
            for q in range(lo, stop):
                kl = row_cols[q]
                if state[kl] == 0:
                    touched[n_touched] = kl
                    n_touched += 1
                    m_k = right_max[kl]
                    bound = max(min(p_j * m_k, right_pos[kl] * m_j),
                                min(n_j * m_k, right_neg[kl] * m_j)) * slack
                    if prune and scale * bound * bound < level:
                        state[kl] = 2
                        continue
                    state[kl] = 1
                if state[kl] == 1:
                    v = row_vals[q]
                    for c in range(n_classes):
                        acc[kl, c] += wx[c] * v
        for t in range(n_touched):
            kl = touched[t]
            pruned = state[kl] == 2
            state[kl] = 0
            norm2 = 0.0
            for c in range(n_classes):
                norm2 += acc[kl, c] * acc[kl, c]
                acc[kl, c] = 0.0
            if pruned:
                n_pruned += 1
                continue
            n_evaluated += 1
            s = scale * norm2
            key = pair_key(j, right_columns[kl], n_features)
            size = offer(heap_scores, heap_keys, size, s, key, excluded)
    keys, scores = sorted_heap(heap_scores, heap_keys, size)
    return keys, scores, n_evaluated, n_pruned


@njit(cache=True, nogil=True)
def pair_gram_rows(indptr, indices, data, weights, row_lo, row_hi, sub_rows, out,
                   split=0):
    """Add the rows ``row_lo <= i < row_hi`` of ``X' diag(a) X`` to ``out``.

    Only the strict upper triangle is written: ``out[a, b] += Σ_i a_i x_ia x_ib``
    for local columns ``a < b``.  The rows are visited in increasing order,
    ``sub_rows`` at a time (a row-major copy of that many rows of the
    columns is all the extra memory), so a sum does not depend on
    ``sub_rows``; it depends only on ``row_lo``.  With ``split > 0`` only
    the pairs of a column ``a < split`` with a column ``b >= split`` are
    accumulated, into ``out[a, b - split]`` (shape ``(split, p - split)``):
    the same additions in the same order as the square form makes for
    those pairs, so the same sums (a tile of a larger Gram).

    Parameters
    ----------
    indptr, indices : CSC arrays of p columns, row numbers increasing within
        a column
    data : float32 or float64 array
        Values; an empty array means every stored value is 1 (binary data).
    weights : float64 array, shape (n_rows,)
        ``a = alpha * y``.
    row_lo, row_hi : int
    sub_rows : int >= 1
    out : float64 array, shape (p, p)
        Accumulated into (the caller zeroes it).

    Returns
    -------
    int
        The entries of the columns in the rows visited.
    """
    p = indptr.shape[0] - 1
    has_data = data.shape[0] > 0
    cursor = np.empty(p, dtype=np.int64)
    for c in range(p):
        cursor[c] = first_at_least(indices, indptr[c], indptr[c + 1], row_lo)
    n_seen = 0
    lo = row_lo
    while lo < row_hi:
        hi = min(lo + sub_rows, row_hi)
        n_local = hi - lo
        row_ptr = np.zeros(n_local + 1, dtype=np.int64)
        ends = np.empty(p, dtype=np.int64)
        for c in range(p):
            q = cursor[c]
            end = indptr[c + 1]
            while q < end and indices[q] < hi:
                row_ptr[indices[q] - lo + 1] += 1
                q += 1
            ends[c] = q
        for r in range(n_local):
            row_ptr[r + 1] += row_ptr[r]
        total = row_ptr[n_local]
        n_seen += total
        if total > 1:
            cols = np.empty(total, dtype=np.int32)
            vals = np.empty(total if has_data else 0, dtype=np.float64)
            fill = row_ptr[:n_local].copy()
            # columns in increasing order: local positions increase within a row
            for c in range(p):
                for q in range(cursor[c], ends[c]):
                    r = indices[q] - lo
                    cols[fill[r]] = c
                    if has_data:
                        vals[fill[r]] = np.float64(data[q])
                    fill[r] += 1
            for r in range(n_local):
                start, stop = row_ptr[r], row_ptr[r + 1]
                if stop - start < 2:
                    continue
                w = weights[lo + r]
                if w == 0.0:
                    continue
                if split > 0:
                    m = start
                    while m < stop and cols[m] < split:
                        m += 1
                    for a in range(start, m):
                        ca = cols[a]
                        wa = w * vals[a] if has_data else w
                        for b in range(m, stop):
                            if has_data:
                                out[ca, cols[b] - split] += wa * vals[b]
                            else:
                                out[ca, cols[b] - split] += wa
                    continue
                for a in range(start, stop):
                    ca = cols[a]
                    wa = w * vals[a] if has_data else w
                    for b in range(a + 1, stop):
                        if has_data:
                            out[ca, cols[b]] += wa * vals[b]
                        else:
                            out[ca, cols[b]] += wa
        for c in range(p):
            cursor[c] = ends[c]
        lo = hi
    return n_seen


@njit(cache=True, nogil=True)
def gram_topk(gram, columns, scale, excluded, n_features, k, split=0):
    """Top-``k`` crosses from the strict upper triangle of a pair Gram.

    Parameters
    ----------
    gram : float64 array, shape (p, p), or (split, p - split)
        ``gram[a, b] = Σ_i a_i x_ia x_ib`` for ``a < b``; with ``split > 0``
        the tile ``gram[a, b - split]`` of the pairs ``a < split <= b``
        (:func:`pair_gram_rows` with ``split``).
    columns : int64 array, increasing
        Global column numbers of the p columns.
    scale : float
        2γ², the factor of a cross score.
    excluded : int64 array, sorted
    n_features : int
    k : int

    Returns
    -------
    keys, scores : ranked top-k (score decreasing, key increasing)
    n_nonzero : int   pairs with a nonzero sum
    """
    p = columns.shape[0]
    heap_scores = np.empty(k, dtype=np.float64)
    heap_keys = np.empty(k, dtype=np.int64)
    size = np.int64(0)
    n_nonzero = 0
    for a in range(p if split <= 0 else split):
        j = columns[a]
        for b in range(a + 1 if split <= 0 else split, p):
            v = gram[a, b] if split <= 0 else gram[a, b - split]
            if v == 0.0:
                continue
            n_nonzero += 1
            s = scale * v * v
            key = pair_key(j, columns[b], n_features)
            size = offer(heap_scores, heap_keys, size, s, key, excluded)
    keys, scores = sorted_heap(heap_scores, heap_keys, size)
    return keys, scores, n_nonzero


@njit(cache=True, nogil=True)
def _column_sums(indptr, indices, data, weights, binary, j):
    """:func:`column_stats` of one column: lin, sq, pos, neg, max |x|, min x."""
    lin = 0.0
    sq = 0.0
    pos = 0.0
    neg = 0.0
    mx = 0.0
    mn = 0.0
    for p in range(indptr[j], indptr[j + 1]):
        w = weights[indices[p]]
        x = 1.0 if binary else np.float64(data[p])
        wx = w * x
        lin += wx
        sq += wx * x
        if wx > 0.0:
            pos += wx
        else:
            neg -= wx
        if abs(x) > mx:
            mx = abs(x)
        if x < mn:
            mn = x
    return lin, sq, pos, neg, mx, mn


@njit(cache=True, nogil=True)
def column_pass_topk(indptr, indices, data, weights, binary, first_column,
                     n_features, linear_scale, square_scale, excluded, k, n_seed):
    """The degree-2 column pass of a block, without per-column arrays.

    The same figures as :func:`column_stats` followed by a top-``k`` of the
    linear and square scores and a top-``n_seed`` of the live weights
    ``max(P_j, N_j)`` (bit for bit: the same sums in the same order), in
    memory independent of the block's number of columns.

    Parameters
    ----------
    indptr, indices, data, weights, binary
        As :func:`column_stats` (1-D weights).
    first_column : int
        Global number of the block's first column.
    n_features : int
        m, for the key encoding.
    linear_scale, square_scale : float
        2γr and γ²: a linear term scores ``linear_scale * lin * lin``.
    excluded : int64 array, sorted
    k, n_seed : int

    Returns
    -------
    top_keys, top_scores : ranked top-k of the linear and square terms
    seed_columns, seed_weights : ranked top-n_seed global columns by live
        weight (positive weights only)
    max_abs : float   largest |x| of the block (0 if empty)
    min_value : float smallest stored value of the block (0 if none)
    """
    n_columns = indptr.shape[0] - 1
    heap_scores = np.empty(max(k, 1), dtype=np.float64)
    heap_keys = np.empty(max(k, 1), dtype=np.int64)
    size = np.int64(0)
    seed_scores = np.empty(max(n_seed, 1), dtype=np.float64)
    seed_keys = np.empty(max(n_seed, 1), dtype=np.int64)
    n_seeds = 0
    max_abs = 0.0
    min_value = 0.0
    # Empty columns skipped (they score 0 and have no live weight) and the
    # heaps' cheap tests first: 3x as fast on kddb-like blocks of ~1 entry
    # per column, where the inlined offer cost more than the sums.
    for j in range(n_columns):
        if indptr[j] == indptr[j + 1]:
            continue
        lin, sq, pos, neg, mx, mn = _column_sums(indptr, indices, data, weights,
                                                 binary, j)
        if mx > max_abs:
            max_abs = mx
        if mn < min_value:
            min_value = mn
        column = first_column + j
        if k > 0:
            for term in range(2):
                if term == 0:
                    s = linear_scale * lin * lin
                    key = pair_key(column, -1, n_features)
                else:
                    s = square_scale * sq * sq
                    key = pair_key(column, column, n_features)
                if s > 0.0 and (size < k or ranks_before(s, key, heap_scores[0],
                                                          heap_keys[0])):
                    if not is_excluded(excluded, key):
                        size = heap_push(heap_scores, heap_keys, size, s, key)
        live = max(pos, neg)
        if n_seed == 0 or not live > 0.0:
            continue
        if n_seeds == n_seed and not ranks_before(live, column, seed_scores[0],
                                                   seed_keys[0]):
            continue
        n_seeds = heap_push(seed_scores, seed_keys, n_seeds, live, column)
    top_keys, top_scores = sorted_heap(heap_scores, heap_keys, size)
    seed_columns, seed_weights = sorted_heap(seed_scores, seed_keys, n_seeds)
    return top_keys, top_scores, seed_columns, seed_weights, max_abs, min_value


@njit(cache=True, nogil=True)
def live_columns_of_block(indptr, indices, data, weights, binary, nonnegative,
                          min_weight):
    """Local positions of the columns whose live weight is >= ``min_weight``.

    The live weight is ``max(P_j, N_j)`` for non-negative data and
    ``P_j + N_j`` otherwise (the sums of :func:`column_stats`).
    """
    n_columns = indptr.shape[0] - 1
    # few columns are live: a small array, doubled when full (not one
    # entry per column of the block, millions on kddb-like data)
    out = np.empty(min(n_columns, 1024), dtype=np.int64)
    n_live = 0
    for j in range(n_columns):
        _, _, pos, neg, _, _ = _column_sums(indptr, indices, data, weights, binary, j)
        live = max(pos, neg) if nonnegative else pos + neg
        if live >= min_weight:
            if n_live == out.shape[0]:
                grown = np.empty(min(n_columns, 2 * n_live), dtype=np.int64)
                for t in range(n_live):   # a loop, not grown[:n_live] = out:
                    grown[t] = out[t]      # numba compiles slice copies slowly
                out = grown
            out[n_live] = j
            n_live += 1
    return out[:n_live].copy()


@njit(cache=True, nogil=True)
def all_ones(data):
    """Whether every value is 1 (binary data; no temporary array)."""
    for k in range(data.shape[0]):
        if data[k] != 1:
            return False
    return True
