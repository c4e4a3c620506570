"""Slores's upper bounds of ``|x̄_j'θ|`` over its dual region, fused loops.

Theorem 8 of Wang et al. (NIPS 2013) in the stable form of
``shared/notes/mslr-slores.md`` §B3: for ξ = ±1, ``B = −ξ B_j`` (plus its
rounding bound), ``cos = B / (N_j √A)``, ``D = N_j² A − B²``:

* case (a), ``cos >= d``: ``T_ξ = r N_j + ξ s_j``;
* case (b): ``T_ξ = (r/√A)(√((1 − d²) D) + d B) + ξ s_j``, never above
  case (a)'s value;

``T_j = max_ξ T_ξ + s_error_j``.  Degenerate regions have their own
``case``: :data:`BALL` (``|d| >= 1`` or A = 0: the ball-and-hyperplane
bound ``r N_j + |s_j|``) and :data:`POINT` (r = 0: ``|s_j|``).

The centre's correlations and the rounding bounds are formed column by
column from the statistics (``s_j = s0_j − shift·colsum_j``,
``s_error_j = s_gamma ||x_j|| + shift_gamma |colsum_j|``,
``cut_error_j = cut_gamma ||x_j||``), so screening a 10⁶-column store
makes no temporary array.

*Stale* columns (the ℓ1 path's KKT pass certified them by a bound instead
of reading them, :mod:`ultrafs.methods.l1_kkt`): column j's ``s0_j`` was
computed at the reference point ``ref_id[j]``; where that is not
``current`` it is within ``slack_j = ||x_j|| · reach[ref_id[j]]`` of the
true one, and its ``B_j`` may belong to another cut.  Such a column gets
the ball's bound with the slack added to ``s_error_j`` (``r N_j + |s_j| +
s_error_j + slack_j``: the cut only tightens a bound, so dropping it stays
safe).  An empty ``ref_id`` means every column is fresh.

The KKT pass's kernels at the end: weighted sums of chosen columns
(:func:`gathered_column_sums`, bit for bit the scoring kernels' sums), the
bound test of the discarded columns (:func:`uncertified_columns`) and the
bookkeeping of the reference points (:func:`assign_reference`,
:func:`stale_slack`).
"""

import numpy as np
from numba import njit

__all__ = ["GENERAL", "BALL", "POINT", "slores_bounds", "slores_keep_columns",
           "largest_shifted_correlation", "discarded_violators",
           "gathered_column_sums", "gathered_column_sums_binary",
           "uncertified_columns", "assign_reference", "stale_kept"]

GENERAL = 0
BALL = 1
POINT = 2


@njit(cache=True, nogil=True, inline="always")
def _bound(s, s_err, cut, cut_err, n2, radius, cut_norm2, d, case):
    """Slores's bound of one column (see the module)."""
    nj = np.sqrt(n2)
    if case == POINT:
        return abs(s) + s_err
    ball = radius * nj
    if case == BALL:
        return ball + abs(s) + s_err
    sqrt_a = np.sqrt(cut_norm2)
    limit = nj * sqrt_a
    best = -np.inf
    for side in range(2):
        xi = 1.0 if side == 0 else -1.0
        b = -xi * cut + cut_err
        if b > limit:
            b = limit
        cos = b / limit if limit > 0.0 else 1.0
        if cos >= d:
            t = ball
        else:
            dd = n2 * cut_norm2 - b * b
            if dd < 0.0:
                dd = 0.0
            t = (radius / sqrt_a) * (np.sqrt(1.0 - d * d) * np.sqrt(dd) + d * b)
            if t > ball:
                t = ball
        t += xi * s
        if t > best:
            best = t
    return best + s_err


@njit(cache=True, nogil=True, inline="always")
def _column_error(j, colsum, norms, s_gamma, shift_gamma, case, stale, ref_id, reach,
                  current):
    """Column ``j``'s error bound on ``s_j`` and its case: a stale column
    (its correlation from an older dual point) adds ``|x_j| reach`` and is
    bounded by the ball instead of the general region."""
    s_err = s_gamma * norms[j] + shift_gamma * abs(colsum[j])
    col_case = case
    if stale and ref_id[j] != current:
        s_err += norms[j] * reach[ref_id[j]]
        if col_case == GENERAL:
            col_case = BALL
    return s_err, col_case


@njit(cache=True, nogil=True)
def slores_bounds(s0, colsum, norms, norm2, cut, shift, s_gamma, shift_gamma,
                  cut_gamma, radius, cut_norm2, d, case, out, ref_id, reach, current):
    """Fill ``out[j]`` with the bound of every column j.

    Parameters
    ----------
    s0, colsum, norms, norm2, cut : float64 arrays, shape (p,)
        ``x̄_j'θ0``, ``Σ_i x_ij``, ``||x_j||``, ``||P x̄_j||²``,
        ``<P x̄_j, P x̄*>``.
    shift : float
        ``<θ0, y>/n`` (the centre is ``θ0 − shift·y``).
    s_gamma, shift_gamma, cut_gamma : float
        Rounding-bound factors (see the module).
    radius, cut_norm2, d : float
    case : int
        :data:`GENERAL`, :data:`BALL` or :data:`POINT`.
    out : float64 array, shape (p,)
    ref_id : int32 array, shape (p,) or (0,)
    reach : float64 array
    current : int
        Stale columns (see the module); an empty ``ref_id``: every column fresh.
    """
    stale = ref_id.shape[0] > 0
    for j in range(s0.shape[0]):
        s_err, col_case = _column_error(j, colsum, norms, s_gamma, shift_gamma, case, stale,
                                        ref_id, reach, current)
        out[j] = _bound(s0[j] - shift * colsum[j], s_err, cut[j], cut_gamma * norms[j],
                        norm2[j], radius, cut_norm2, d, col_case)
    return out


@njit(cache=True, nogil=True)
def slores_keep_columns(columns, every, s0, colsum, norms, norm2, constant, cut,
                        shift, s_gamma, shift_gamma, cut_gamma, radius, cut_norm2, d,
                        case, n_lam, rtol, keep, ref_id, reach, current):
    """Algorithm 1's test on ``columns``: ``keep[j]`` for each of them.

    ``keep[j] = T_j >= nλ − rtol (nλ + r N_j + |s_j|)`` and the column is
    not constant (other entries of ``keep`` are left as they are).  The
    ball's bound ``r N_j + |s_j|`` is at least ``T_j``: a column it already
    discards skips Theorem 8.

    Parameters
    ----------
    columns : int64 array
        The columns to test (e.g. those another safe rule kept).
    every : bool
        Test every column instead (``columns`` empty).
    s0 … case
        As for :func:`slores_bounds`.
    n_lam : float
        ``n λ``.
    rtol : float
    keep : bool array, shape (p,)
    ref_id, reach, current
        Stale columns (see the module); an empty ``ref_id``: every column fresh.
    """
    count = s0.shape[0] if columns.shape[0] == 0 and every else columns.shape[0]
    stale = ref_id.shape[0] > 0
    for k in range(count):
        j = k if every else columns[k]
        if constant[j]:
            keep[j] = False
            continue
        s = s0[j] - shift * colsum[j]
        s_err, col_case = _column_error(j, colsum, norms, s_gamma, shift_gamma, case, stale,
                                        ref_id, reach, current)
        ball = radius * np.sqrt(norm2[j])
        threshold = n_lam - rtol * (n_lam + ball + abs(s))
        if ball + abs(s) + s_err < threshold:   # the ball alone discards it
            keep[j] = False
            continue
        t = _bound(s, s_err, cut[j], cut_gamma * norms[j], norm2[j], radius,
                   cut_norm2, d, col_case)
        keep[j] = t >= threshold
    return keep


@njit(cache=True, nogil=True)
def largest_shifted_correlation(s0, colsum, norms, shift, s_gamma, shift_gamma):
    """``max_j |s0_j − shift·colsum_j| + s_gamma ||x_j|| + shift_gamma |colsum_j|``:
    an upper bound of ``||X̄'θc||_∞`` (scales a dual point into feasibility)."""
    top = 0.0
    for j in range(s0.shape[0]):
        a = abs(colsum[j])
        v = abs(s0[j] - shift * colsum[j]) + s_gamma * norms[j] + shift_gamma * a
        if v > top:
            top = v
    return top


@njit(cache=True, nogil=True)
def discarded_violators(s, keep, threshold):
    """Discarded columns whose ``|s_j|`` exceeds ``threshold`` (KKT violators).

    Returns
    -------
    violators : int64 array
        Increasing column numbers with ``not keep[j]`` and
        ``|s_j| > threshold``.
    largest : float
        ``max |s_j|`` over the discarded columns (0 when none).
    """
    count = 0
    largest = 0.0
    for j in range(s.shape[0]):
        if not keep[j]:
            v = abs(s[j])
            if v > largest:
                largest = v
            if v > threshold:
                count += 1
    out = np.empty(count, dtype=np.int64)
    k = 0
    for j in range(s.shape[0]):
        if not keep[j] and abs(s[j]) > threshold:
            out[k] = j
            k += 1
    return out, largest


# ---------------------------------------------------------------- KKT pass
@njit(cache=True, nogil=True)
def gathered_column_sums(indptr, indices, data, read_at, write_at, weights, out):
    """``out[write_at[k]] = Σ_i weights[i] x_i,c`` for the column ``c = read_at[k]``.

    The sum runs over the column's stored entries in row order with the
    products of :func:`ultrafs.kernels.scoring.column_sums`
    (``weights[i] * float64(x)``), so a column gets the same bits as in a
    streamed pass.

    Parameters
    ----------
    indptr : int64 array, shape (m + 1,)
    indices : int32 or int64 array, shape (nnz,)
    data : float32 or float64 array, shape (nnz,)
    read_at : int64 array, shape (k,)
        Columns of the CSC arrays to sum.
    write_at : int64 array, shape (k,)
        Where each sum goes in ``out``.
    weights : float64 array, shape (n_rows,)
    out : float64 array
        Written in place and returned.
    """
    for k in range(read_at.shape[0]):
        c = read_at[k]
        acc = 0.0
        for q in range(indptr[c], indptr[c + 1]):
            acc += weights[indices[q]] * np.float64(data[q])
        out[write_at[k]] = acc
    return out


@njit(cache=True, nogil=True)
def gathered_column_sums_binary(indptr, indices, read_at, write_at, weights, out):
    """:func:`gathered_column_sums` of columns whose stored values are all one
    (the sums of :func:`ultrafs.kernels.scoring.column_sums_binary`)."""
    for k in range(read_at.shape[0]):
        c = read_at[k]
        acc = 0.0
        for q in range(indptr[c], indptr[c + 1]):
            acc += weights[indices[q]]
        out[write_at[k]] = acc
    return out


@njit(cache=True, nogil=True)
def uncertified_columns(keep, s_ref, ref_id, norms, reach, threshold, out):
    """The discarded columns a bound cannot certify, and the largest bound.

    Column j's correlation was last computed at the reference dual point
    ``ref_id[j]``: ``s_ref[j]``.  For the new point θ,
    ``|x̄_j'θ| <= |s_ref[j]| + ||x_j|| · reach[ref_id[j]]`` where ``reach[r]``
    bounds ``||θ − θ_r||`` plus the rounding of ``s_ref`` (relative to
    ``||x_j||``, see :mod:`ultrafs.methods.l1_kkt`).  One pass.

    Parameters
    ----------
    keep : bool array, shape (p,)
        Columns in the solver (skipped: their correlations are computed).
    s_ref : float64 array, shape (p,)
    ref_id : int32 array, shape (p,)
    norms : float64 array, shape (p,)
        ``||x_j||``.
    reach : float64 array, shape (R,)
    threshold : float
        ``nλ(1 + tol)``: a column whose bound is at most this satisfies
        its KKT condition.
    out : int64 array, shape (p,)
        Receives the uncertified columns, increasing, in ``out[:count]``.

    Returns
    -------
    count : int
    largest : float
        The largest bound among the certified discarded columns (0 if none).
    """
    count = 0
    largest = 0.0
    for j in range(s_ref.shape[0]):
        if keep[j]:
            continue
        b = abs(s_ref[j]) + norms[j] * reach[ref_id[j]]
        if b > threshold:
            out[count] = j
            count += 1
        elif b > largest:
            largest = b
    return count, largest


@njit(cache=True, nogil=True)
def assign_reference(columns, ref_id, counts, new):
    """Move ``columns`` to the reference point ``new`` (``counts[r]``: columns
    whose correlation was last computed at point r)."""
    for k in range(columns.shape[0]):
        j = columns[k]
        counts[ref_id[j]] -= 1
        ref_id[j] = new
    counts[new] += columns.shape[0]
    return counts


@njit(cache=True, nogil=True)
def stale_kept(keep, ref_id, current):
    """Increasing columns with ``keep[j]`` and ``ref_id[j] != current``: those a
    rule kept on a stale correlation (worth reading, then testing again)."""
    count = 0
    for j in range(keep.shape[0]):
        if keep[j] and ref_id[j] != current:
            count += 1
    out = np.empty(count, dtype=np.int64)
    k = 0
    for j in range(keep.shape[0]):
        if keep[j] and ref_id[j] != current:
            out[k] = j
            k += 1
    return out
