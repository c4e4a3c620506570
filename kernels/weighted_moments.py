"""Per-column statistics of a CSC block under sample weights (the weighted ℓ1 path).

``weighted_column_moments(indptr, indices, data, w, v, total, positive_rows)``
    for every column ``j`` of the block, with ``w`` the sample weights
    (``w_i >= 0``, ``S = total = Σ_i w_i``) and ``v`` another vector of the
    samples (Slores: ``w ⊙ θ_max ⊙ y``):

    * ``Σ_i w_i x_ij`` (the weighted column sum),
    * ``Σ_i v_i x_ij``,
    * ``Σ_i x_ij²`` (unweighted: the norms of the rounding bounds),
    * ``Σ_i w_i (x_ij − m_j)²`` with ``m_j = Σ_i w_i x_ij / S``: two passes
      over the column's stored values (the weighted mean first; the rows
      of positive weight without an entry add ``m_j²`` times their weight,
      ``S − Σ_{stored} w_i``), plus ``γ`` times the sum and, when such rows
      exist, ``γ S m_j²`` (the cancellation of their weight), ``γ = (n + 2)
      ε``: an upper bound of the rounding error (Slores's bound grows with
      this norm: overstating it keeps the rule safe, understating it would
      not); exactly 0 for a constant column;
    * whether the column is constant on the rows of positive weight (its
      values there all equal, implicit zeros included): such a column's
      weight is 0 at every λ.

Sums run over a column's stored values in row order with float64
accumulation: the same bits for any block partition.  ``data`` may be
float32 or float64 (a binary block passes its ones).  Kernels take raw
arrays only.
"""

import numpy as np
from numba import njit

__all__ = ["weighted_column_moments"]

_EPS = np.finfo(np.float64).eps


@njit(cache=True, nogil=True)
def weighted_column_moments(indptr, indices, data, w, v, total, positive_rows):
    """Weighted statistics of every column of a CSC block (module docstring).

    Parameters
    ----------
    indptr : int64 array, shape (b + 1,)
    indices : int32 or int64 array, shape (nnz,)
        Rows, increasing within a column.
    data : float32 or float64 array, shape (nnz,)
    w : float64 array, shape (n,)
        Sample weights, ``>= 0``.
    v : float64 array, shape (n,)
    total : float
        ``Σ_i w_i`` (``> 0``).
    positive_rows : int
        Rows with ``w_i > 0``.

    Returns
    -------
    wsum, vsum, sum_squares, centred : float64 arrays, shape (b,)
    constant : bool array, shape (b,)
    """
    n_columns = indptr.shape[0] - 1
    n = w.shape[0]
    gamma = (n + 2) * _EPS
    wsum = np.zeros(n_columns)
    vsum = np.zeros(n_columns)
    sq = np.zeros(n_columns)
    centred = np.zeros(n_columns)
    constant = np.zeros(n_columns, dtype=np.bool_)
    for j in range(n_columns):
        a = 0.0
        b = 0.0
        c = 0.0
        stored_weight = 0.0
        stored_positive = 0
        lo = np.inf
        hi = -np.inf
        for p in range(indptr[j], indptr[j + 1]):
            x = np.float64(data[p])
            i = indices[p]
            wi = w[i]
            a += wi * x
            b += v[i] * x
            c += x * x
            stored_weight += wi
            if wi > 0.0:
                stored_positive += 1
                if x < lo:
                    lo = x
                if x > hi:
                    hi = x
        if positive_rows > stored_positive:     # rows of positive weight at 0
            if lo > 0.0:
                lo = 0.0
            if hi < 0.0:
                hi = 0.0
        wsum[j] = a
        vsum[j] = b
        sq[j] = c
        if not lo < hi:             # constant where the weights are positive
            constant[j] = True
            continue
        mean = a / total
        acc2 = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            d = np.float64(data[p]) - mean
            acc2 += w[indices[p]] * d * d
        value = acc2
        margin = 0.0
        if positive_rows > stored_positive:
            # rows of positive weight without an entry: their weight is
            # S − Σ_stored w_i, within γ S of the truth (a cancellation)
            implicit = total - stored_weight
            if implicit < 0.0:
                implicit = 0.0
            value += implicit * mean * mean
            margin = gamma * total * mean * mean
        # the sum's rounding (every term >= 0); an inexact mean only raises
        # the sum (the weighted mean minimises it)
        centred[j] = value + gamma * value + margin
    return wsum, vsum, sq, centred, constant
