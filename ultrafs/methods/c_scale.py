"""FGM's data-scaled C (``C="scale"``): ``DEFAULT_C_SCALE / s``, ``s`` the
squared value of a typical feature, robust to a few unscaled columns.

What C multiplies
-----------------
FGM solves ``½(Σ_h ‖ω_h‖)² + C Σ_i l(y_i, ω'φ(x_i) − b)``.  Multiplying a
feature by ``s`` gives the same decisions with its weight divided by ``s``,
whose share of the penalty is ``1/s²`` smaller: the same model needs
``C/s²``.  So C must follow ``1/s²`` where ``s`` is the scale of the
features the model uses, and a constant (the paper's 10) holds for
features whose nonzero values are about 1.

The rule
--------
``s`` is the median, over the candidate columns with a nonzero value, of
``Σ_i w_i x_ij² / Σ_{i: x_ij ≠ 0} w_i``: the mean square of a column's
nonzero values (``w`` the sample weights, 1 without them), so that
``C = DEFAULT_C_SCALE / s`` rounded to three significant digits:

* 0/1 data: every column's value is 1, ``C = 10``, the paper's C (and the
  rule of issue 8's on 0/1 data);
* it scales as ``1/s²`` when every column is multiplied by ``s``;
* a sparse column is measured on its own nonzeros, not diluted by the rows
  it misses (the mean over all rows would make rare text columns look
  tiny and C huge);
* a median over columns: fewer than half the columns, however scaled,
  cannot move it.  The rule of issue 8, ``10 / mean_i max_j x_ij²``, is
  owned by the largest column: one column ×100 made it 0.003 on
  ``rng.random((100, 8))`` (training accuracy 0.55-0.62 over 5 seeds; this
  rule gives C = 27-31 and 0.97-1.00), and raw madelon with degree-2
  features got C = 2.98e-11 (``bench/notes/23-c-rule.md`` measures both
  rules, and a centred variant, on every set of ``../shared/data``).

Degree 2 (``φ = [√(2γr)·x_j, γ·x_j², √2·γ·x_j·x_k]``): from the base
columns' ``s`` alone (no m² statistics), the largest degree-2 value of a
row whose two largest squares are ``s``: ``max(2γr·s, γ²s², 2γ²s²)``, the
form of :meth:`~ultrafs.features.poly.PolyFeatures.row_max_squares`
with both values typical.  Groups and their members are the store's
columns: the linear rule.  Additive-kernel maps and trees keep the
row-maximum rule of :func:`ultrafs.methods.validation.default_C` (their
generated values are bounded per column already, or have no column-wise
statistics here).

One streamed pass (:func:`column_moments`): three float64 numbers per
column, O(m) memory, each column's sums in row order, so the value is the
same for every block size, scheduler and worker count.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["scale_C", "column_moments", "typical_square", "degree_two_square",
           "COLUMN_RULE_KINDS"]

#: feature spaces whose candidates are the store's columns (or, for
#: ``poly2``, generated from them): the rule reads their column moments
COLUMN_RULE_KINDS = ("linear", "groups", "poly2")


def _block_moments(block, store, weights):
    from ultrafs.kernels.column_scale import (
        column_weighted_moments,
        column_weighted_moments_binary,
    )

    start, stop = block
    cols = store.read_range_transient(start, stop)
    if cols.data is None:
        moments = column_weighted_moments_binary(cols.indptr, cols.indices, weights)
    else:
        moments = column_weighted_moments(cols.indptr, cols.indices, cols.data, weights)
    return [(start, moments)]


def _merge(parts):
    return sorted((piece for part in parts for piece in part), key=lambda p: p[0])


def column_moments(store, *, sample_weight=None, block_size=None, scheduler=None,
                   num_workers=None):
    """Weighted count of nonzeros, sum and sum of squares of every column.

    Parameters
    ----------
    store : ColumnStore
    sample_weight : float64 array, shape (n_samples,), optional
    block_size, scheduler, num_workers
        As for :func:`ultrafs.scoring.statistics.feature_statistics`.

    Returns
    -------
    count, sums, squares : float64 arrays, shape (n_features,)
        ``Σ_{i: x_ij ≠ 0} w_i``, ``Σ_i w_i x_ij`` and ``Σ_i w_i x_ij²``.
    """
    from ultrafs.scoring.runner import BlockRunner

    n, m = store.n_samples, store.n_features
    weights = (np.ones(n) if sample_weight is None
               else np.ascontiguousarray(sample_weight, dtype=np.float64))
    bounds = store.block_bounds(block_size)
    blocks = [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    if not blocks:
        return np.zeros(m), np.zeros(m), np.zeros(m)
    runner = BlockRunner(scheduler, num_workers, 8, block_size)
    pieces = runner(blocks, _block_moments, _merge, {"store": store, "weights": weights})
    return tuple(np.concatenate([moments[k] for _, moments in pieces]) for k in range(3))


def typical_square(count, squares) -> float:
    """``median_j squares_j / count_j`` over the columns with ``count_j > 0``
    (0 when there is none): a typical column's mean square of its nonzero
    values.

    Parameters
    ----------
    count, squares : float64 arrays, shape (m,)
        :func:`column_moments`'s.
    """
    live = count > 0
    per = squares[live] / count[live]
    per = per[per > 0]
    return float(np.median(per)) if len(per) else 0.0


def degree_two_square(s, gamma, coef0) -> float:
    """The largest squared degree-2 feature of a row whose two largest
    ``x_j²`` are both ``s``: ``max(2γr·s, γ²s², 2γ²s²)``."""
    return max(2.0 * gamma * coef0 * s, gamma * gamma * s * s, 2.0 * gamma * gamma * s * s)


def scale_C(features, *, block_size=None, scheduler=None, num_workers=None,
            sample_weight=None) -> float:
    """``DEFAULT_C_SCALE / s`` (see the module docstring), three significant
    digits; ``DEFAULT_C_SCALE`` when every column is zero.

    Parameters
    ----------
    features : FeatureSpace
        Of a kind in :data:`COLUMN_RULE_KINDS`; any other kind gets
        :func:`~ultrafs.methods.validation.default_C`.
    block_size, scheduler, num_workers
        Of the statistics pass.
    sample_weight : float64 array, shape (n_samples,), optional
        Integer weights give the C of the data with repeated rows.
    """
    from ultrafs.methods import validation as val

    passes = {"block_size": block_size, "scheduler": scheduler, "num_workers": num_workers}
    if features.kind not in COLUMN_RULE_KINDS:
        return val.default_C(features, sample_weight=sample_weight, **passes)
    count, _, squares = column_moments(features.store, sample_weight=sample_weight,
                                       **passes)
    s = typical_square(count, squares)
    if features.kind == "poly2":
        s = degree_two_square(s, float(features.gamma), float(features.coef0))
    if not (s > 0 and math.isfinite(s)):
        return val.DEFAULT_C_SCALE
    return val.round_significant(val.DEFAULT_C_SCALE / s)
