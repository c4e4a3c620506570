"""Degree-2 polynomial feature space, generated on the fly (FGM §6.2, Alg. 5).

Candidates are the terms of the explicit map of the kernel (γ x′z + r)²:
linear √(2γr)·x_j, squares γ·x_j² and crosses √2·γ·x_j·x_k (j < k); the
constant r² is absorbed by the bias.  With m columns there are
m(m+3)/2 candidates, never written down.

The worst-case analysis is exact and runs in phases:

1. **column pass** (one task per column block, streamed): the linear and
   square scores, a top-B over them, and the per-column bound ingredients
   P_j, N_j (positive and negative parts of A_j = Σ_i |a_i||x_ij|) and
   M_j = max_i |x_ij|; each block also returns its ``n_seed`` columns with
   the largest live weight max(P_j, N_j).
2. **seeding** (driver, in memory): the exact cross scores among the
   seed columns give, with phase 1's top-B, a proven lower bound θ of the
   final B-th best score.
3. **live set**: a cross (j, k) scores at most 2γ²·bound², with bound
   max(min(P_j M_k, P_k M_j), min(N_j M_k, N_k M_j)) for non-negative data
   and min(A_j M_k, A_k M_j) otherwise, so only columns whose live weight
   (max(P_j, N_j), resp. A_j) times max M reaches √(θ / 2γ²) can take part
   in a winning pair.  When the seed list does not already hold all of
   them, a second streamed pass collects them.
4. **cross pass**: every pair of live columns is scored.  With binary
   weights (two classes), by the **pair Gram** ``X_L' diag(a) X_L`` of the
   live columns L, in tiles of at most ``GRAM_MAX_COLUMNS`` columns (each
   tile and each pair of tiles one Gram; a pair's sum is the same in any
   tile), one task per
   row range (:func:`gram_row_ranges`, fixed by the number of rows) running
   :func:`ultrafs.kernels.poly.pair_gram_rows`, which builds a row-major
   copy of ``GRAM_SUB_ROWS`` rows at a time; the p x p partials are summed
   in the reduction tree's fixed order and ranked by
   :func:`ultrafs.kernels.poly.gram_topk`.  The seeding of phase 2 uses the
   same path, and when every live column is a seed its Gram already holds
   the answer (no second read).  Memory: the live columns as CSC (row
   numbers only for 0/1 data) and p² floats per running task, never a
   row-major copy of the columns.  Otherwise (K classes, more columns) one
   task per chunk of live columns runs :func:`ultrafs.kernels.poly.cross_topk`
   on a row-major copy, pruning single pairs by the same bound against the
   running B-th best.

With K classes the weights are an (n, K) matrix A and every score is a
squared norm over the classes, ``factor² · Σ_c (Σ_i A_ic z_i)²`` for the
candidate column z; the phases are the same with |a_i| replaced by
||A_i||₂ in A_j (there is then no sign split: P_j = A_j, N_j = 0, and the
bound is min(A_j M_k, A_k M_j) for any data), see
:func:`ultrafs.kernels.poly.column_stats_multi` and
:func:`ultrafs.kernels.poly.cross_topk_multi`.

Pruning never changes the result: a column or pair is skipped only when its bound,
inflated by a relative slack of 1e-9 against rounding, is strictly below a
score that is already guaranteed.  Memory holds the live columns only,
never anything of size m².
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.features.base import FeatureSpace, register_feature_space
from ultrafs.features.keys import PairKeys
from ultrafs.kernels.pair_columns import pair_columns, pair_columns_parallel
from ultrafs.kernels.poly import (BOUND_SLACK, all_ones, column_pass_topk, column_stats,
                                  column_stats_multi, cross_topk, cross_topk_multi,
                                  gram_topk, live_columns_of_block, pair_gram_rows,
                                  rows_of_columns)
from ultrafs.kernels.row_chunks import dispatch
from ultrafs.kernels.scoring import merge_topk, topk_keyed
from ultrafs.scoring.topk import TopK
from ultrafs.store.base import ColumnBlock, ColumnStore, balanced_block_bounds

__all__ = ["PolyFeatures", "DEFAULT_N_SEED"]

#: columns with the largest A_j that every column block proposes for seeding
DEFAULT_N_SEED = 256
#: target nonzeros of left columns per cross task
CROSS_TASK_NNZ = 1 << 18
#: one output (binary weights): the cross sums of the seed and live columns
#: are accumulated as dense pair Grams by row ranges (no row-major copy of
#: the columns), in tiles of at most this many columns (a p x p partial of
#: 32 MB per running task); K classes take the pairwise kernel
GRAM_MAX_COLUMNS = 2048
#: rows per task of the pair Gram (at most GRAM_MAX_TASKS tasks: a task
#: holds one p x p partial); fixed by the number of rows only, so the sums
#: are the same for any block size, worker count and scheduler
GRAM_TASK_ROWS = 1 << 17
GRAM_MAX_TASKS = 16
#: rows of the row-major copy a Gram task builds at a time
GRAM_SUB_ROWS = 1 << 15

_EMPTY_KEYS = np.zeros(0, dtype=np.int64)
_EMPTY_SCORES = np.zeros(0, dtype=np.float64)


# --------------------------------------------------------------------- tasks
def _stats(indptr, indices, data, weights, row_norms, binary):
    """Per-column sums of a block: :func:`column_stats` for 1-D weights,
    :func:`column_stats_multi` (squared norms over classes, P = Ā, N = 0)
    for 2-D weights."""
    if weights.ndim == 1:
        return column_stats(indptr, indices, data, weights, binary)
    return column_stats_multi(indptr, indices, data, weights, row_norms, binary)


def _cross_kernel(weights):
    """The cross kernel for 1-D or 2-D weights (same arguments)."""
    return cross_topk if weights.ndim == 1 else cross_topk_multi


def _column_pass(block, store, codec, weights, row_norms, excluded, k, n_seed,
                 linear_scale, square_scale):
    """Phase 1 task: linear/square top-k, seed columns and max |x| of a block."""
    start, stop = block
    cols = store.read_range_transient(start, stop)
    empty = np.zeros(0)
    data = cols.data if cols.data is not None else empty
    if weights.ndim == 1:
        # fused: no per-column arrays (a block may hold millions of columns)
        top_keys, top_scores, seed_cols, seed_weight, max_abs, min_value = \
            column_pass_topk(cols.indptr, cols.indices, data, weights,
                             cols.data is None, start, codec.n_features,
                             linear_scale, square_scale, excluded, k, n_seed)
        return {
            "topk": TopK(top_keys, top_scores, {"nnz": cols.nnz}),
            "seed": TopK(seed_cols, seed_weight, {}),
            "max_abs": float(max_abs),
            "min_value": float(min_value),
        }
    lin, sq, pos, neg, max_abs, min_value = _stats(
        cols.indptr, cols.indices, data, weights, row_norms, cols.data is None)
    columns = np.arange(start, stop, dtype=np.int64)
    keys = np.concatenate([codec.linear(columns), codec.square(columns)])
    if weights.ndim == 1:
        scores = np.concatenate([linear_scale * lin * lin, square_scale * sq * sq])
    else:                    # lin, sq: squared norms over the classes
        scores = np.concatenate([linear_scale * lin, square_scale * sq])
    top_keys, top_scores = topk_keyed(scores, keys, excluded, k)
    # seeds are ranked by the live weight of non-negative data; when the
    # store turns out to hold negative values the live set is recomputed
    seed_cols, seed_weight = topk_keyed(np.maximum(pos, neg), columns,
                                        _EMPTY_KEYS, n_seed)
    return {
        "topk": TopK(top_keys, top_scores, {"nnz": cols.nnz}),
        "seed": TopK(seed_cols, seed_weight, {}),
        "max_abs": float(max_abs.max()) if len(max_abs) else 0.0,
        "min_value": float(min_value),
    }


def _merge_column_pass(parts, k, n_seed):
    topk_keys, topk_scores = _EMPTY_KEYS, _EMPTY_SCORES
    seed_keys, seed_scores = _EMPTY_KEYS, _EMPTY_SCORES
    nnz, max_abs, min_value = 0, 0.0, 0.0
    for part in parts:
        topk_keys, topk_scores = merge_topk(topk_keys, topk_scores,
                                            part["topk"].keys, part["topk"].scores, k)
        seed_keys, seed_scores = merge_topk(seed_keys, seed_scores,
                                            part["seed"].keys, part["seed"].scores,
                                            n_seed)
        nnz += part["topk"].counters.get("nnz", 0)
        max_abs = max(max_abs, part["max_abs"])
        min_value = min(min_value, part["min_value"])
    return {"topk": TopK(topk_keys, topk_scores, {"nnz": nnz}),
            "seed": TopK(seed_keys, seed_scores, {}), "max_abs": max_abs,
            "min_value": min_value}


def _bound_weights(pos, neg, nonnegative):
    """Per-column (P, N) of the pair bound, and the live weight."""
    if nonnegative:
        return pos, neg, np.maximum(pos, neg)
    total = pos + neg
    return total, total, total


def _live_pass(block, store, weights, row_norms, min_weight, nonnegative):
    """Phase 3 task: columns of a block whose live weight >= min_weight."""
    start, stop = block
    cols = store.read_range_transient(start, stop)
    data = cols.data if cols.data is not None else np.zeros(0)
    if weights.ndim == 1:
        live = start + live_columns_of_block(cols.indptr, cols.indices, data,
                                             weights, cols.data is None,
                                             nonnegative, min_weight)
        return {"live": live.astype(np.int64), "nnz": cols.nnz}
    _, _, pos, neg, _, _ = _stats(cols.indptr, cols.indices, data, weights,
                                  row_norms, cols.data is None)
    live_weight = _bound_weights(pos, neg, nonnegative)[2]
    live = start + np.flatnonzero(live_weight >= min_weight)
    return {"live": live.astype(np.int64), "nnz": cols.nnz}


def _merge_live(parts):
    parts = list(parts)
    live = np.concatenate([p["live"] for p in parts] or [_EMPTY_KEYS])
    return {"live": np.sort(live), "nnz": sum(p["nnz"] for p in parts)}


def _cross_task(chunk, live, weights, scale, threshold, excluded, n_features, k,
                prune):
    """Phase 4 task: top-k crosses of a chunk of live columns with all live."""
    lo, hi = chunk
    indptr = live["indptr"][lo:hi + 1]
    offset = indptr[0]
    keys, scores, n_eval, n_pruned = _cross_kernel(weights)(
        indptr - offset, live["indices"][offset:indptr[-1]],
        live["data"][offset:indptr[-1]], live["columns"][lo:hi],
        live["pos"][lo:hi], live["neg"][lo:hi], live["max"][lo:hi],
        live["row_ptr"], live["row_cols"], live["row_vals"], live["columns"],
        live["pos"], live["neg"], live["max"], weights, scale, threshold,
        excluded, n_features, k, prune)
    return TopK(keys, scores, {"pairs_evaluated": n_eval, "pairs_pruned": n_pruned})


def gram_row_ranges(n_rows):
    """The row ranges of the pair Gram's tasks: a function of ``n_rows`` only."""
    n_tasks = max(1, min(GRAM_MAX_TASKS, -(-int(n_rows) // GRAM_TASK_ROWS)))
    cuts = np.linspace(0, int(n_rows), n_tasks + 1).astype(np.int64)
    return [(int(lo), int(hi)) for lo, hi in zip(cuts[:-1], cuts[1:]) if hi > lo]


def _gram_task(rows, columns, weights, split=0):
    """Pair Gram task: the rows ``rows`` of ``X' diag(a) X`` (strict upper,
    or the tile of the pairs across ``split``)."""
    lo, hi = rows
    indptr, indices, data = columns
    p = len(indptr) - 1
    shape = (p, p) if split <= 0 else (split, p - split)
    out = np.zeros(shape, dtype=np.float64)
    pair_gram_rows(indptr, indices, data, weights, lo, hi, GRAM_SUB_ROWS, out, split)
    return out


def _sum_grams(parts):
    """Sum partial Grams in the order given (the tree's fixed order), into
    the first (each partial is a task's own result, used once)."""
    parts = list(parts)
    total = parts[0]
    for part in parts[1:]:
        total += part
    return total


def _real(name, value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None


# ------------------------------------------------------------- feature space
@register_feature_space
class PolyFeatures(FeatureSpace):
    """All degree-2 polynomial features of a store's columns.

    Keys encode pairs with :class:`~ultrafs.features.keys.PairKeys`; feature
    ids are ``j`` (linear term), ``[j, j]`` (square) and ``[j, k]``
    (cross, j < k) in the store's numbering.

    Parameters
    ----------
    store : ColumnStore
    gamma : float
        γ > 0 of the kernel (γ x′z + r)².
    coef0 : float
        r >= 0; the linear terms are scaled by √(2γr) (0 drops them).
    n_seed : int
        Seed columns proposed by each block (see module docstring).
    prune : bool
        Use the safe bound to skip columns and pairs (default).  False
        scores every co-occurring pair: the same result, for testing and
        for counting pairs.

    Raises
    ------
    ParameterError
        For gamma <= 0, coef0 < 0, n_seed < 1, or a store with too many
        columns for int64 keys.
    """

    kind = "poly2"
    poly_degree = 2
    spec_params = ("gamma", "coef0")

    def __init__(self, store: ColumnStore, gamma=1.0, coef0=1.0,
                 n_seed=DEFAULT_N_SEED, prune=True):
        gamma, coef0 = _real("gamma", gamma), _real("coef0", coef0)
        if not (np.isfinite(gamma) and gamma > 0):
            raise ParameterError(f"gamma must be > 0, got {gamma!r}")
        if not (np.isfinite(coef0) and coef0 >= 0):
            raise ParameterError(f"coef0 must be >= 0, got {coef0!r}")
        if int(n_seed) < 1:
            raise ParameterError(f"n_seed must be >= 1, got {n_seed!r}")
        super().__init__(store)
        self.codec = PairKeys(store.n_features)
        self.gamma = gamma
        self.coef0 = coef0
        self.n_seed = int(n_seed)
        self.prune = bool(prune)

    # scales of the three kinds of terms
    @property
    def linear_factor(self) -> float:
        """√(2γr), the factor of a linear term."""
        return math.sqrt(2.0 * self.gamma * self.coef0)

    @property
    def square_factor(self) -> float:
        """γ, the factor of a square term."""
        return self.gamma

    @property
    def cross_factor(self) -> float:
        """√2·γ, the factor of a cross term."""
        return math.sqrt(2.0) * self.gamma

    @property
    def n_candidates(self) -> int:
        """m linear + m squares + m(m-1)/2 crosses."""
        m = self.store.n_features
        return m + m + m * (m - 1) // 2

    # ---------------------------------------------------------------- keys
    def decode(self, keys):
        """Pairs (j, k) of keys; k = -1 for a linear term, k = j for a square.

        See :meth:`ultrafs.features.keys.PairKeys.decode`.
        """
        return self.codec.decode(keys)

    def encode(self, first, second):
        """Keys of pairs (see :meth:`ultrafs.features.keys.PairKeys.encode`)."""
        return self.codec.encode(first, second)

    def feature_ids(self, keys) -> list:
        """User-visible ids: ``j`` (linear), ``[j, j]`` (square), ``[j, k]``."""
        first, second = self.decode(keys)
        first_ids = self.store.feature_ids(first).tolist()
        second_ids = self.store.feature_ids(np.maximum(second, 0)).tolist()
        ids = []
        for j, k, jid, kid in zip(first.tolist(), second.tolist(), first_ids, second_ids):
            ids.append(jid if k < 0 else [jid, kid])
        return ids

    def keys_of(self, feature_ids) -> np.ndarray:
        """Keys of user-visible ids (inverse of :meth:`feature_ids`).

        Raises
        ------
        ParameterError
            For an id whose source columns are not in the store (it has
            no key; see :meth:`absent_ids`).
        """
        first, second = self._columns_of_ids(feature_ids)
        return self.encode(first, second)

    def _columns_of_ids(self, feature_ids):
        """Source columns of ids; an id the store lacks maps to ``n_features``."""
        first_ids, second_ids, is_pair = [], [], []
        for fid in feature_ids:
            if isinstance(fid, (list, tuple)):
                if len(fid) != 2:
                    raise ParameterError(f"degree-2 feature id must be [j, k], got {fid!r}")
                j, k = int(fid[0]), int(fid[1])
                first_ids.append(min(j, k))
                second_ids.append(max(j, k))
                is_pair.append(True)
            else:
                first_ids.append(int(fid))
                second_ids.append(int(fid))
                is_pair.append(False)
        m = self.store.n_features
        first = self.store.columns_of(np.array(first_ids, dtype=np.int64))
        second = self.store.columns_of(np.array(second_ids, dtype=np.int64))
        first = np.where(first < 0, m, first)
        second = np.where(second < 0, m, second)
        second = np.where(np.array(is_pair, dtype=bool), second, -1)
        return first.astype(np.int64), second.astype(np.int64)

    def row_max_squares(self, *, block_size=None, scheduler=None,
                        num_workers=None) -> np.ndarray:
        """Largest squared degree-2 feature of every row.

        With ``a ≥ b`` the two largest ``x_j²`` of the row: the largest
        linear term is ``2γr·a``, square ``γ²a²`` and cross ``2γ²·a·b``.
        """
        from ultrafs.scoring.row_norms import row_top2

        top = row_top2(self.store, block_size=block_size, scheduler=scheduler,
                       num_workers=num_workers)
        a, b = top[:, 0], top[:, 1]
        g = self.gamma
        return np.maximum(np.maximum(2.0 * g * self.coef0 * a, g * g * a * a),
                          2.0 * g * g * a * b)

    # ------------------------------------------------------ worst-case pass
    def find_candidates(self, weights, k, excluded, run):
        """Exact top-``k`` degree-2 candidates (see the module docstring).

        Parameters
        ----------
        weights : float64 array, shape (n_samples,) or (n_samples, K)
            ``alpha * y``, or the per-class dual weights A (C-contiguous);
            a candidate then scores ``factor² · Σ_c (Σ_i A_ic x_i)²`` and
            the pair bound uses ``||A_i||₂`` for ``|a_i|``.
        k, excluded, run
            See :meth:`ultrafs.features.base.FeatureSpace.find_candidates`.

        Returns
        -------
        result : TopK
            Counters: ``nnz`` streamed, ``pairs_evaluated``,
            ``pairs_pruned`` (co-occurring pairs skipped by the bound inside
            the cross tasks), ``live_columns``, ``seed_columns``.
        """
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        row_norms = None
        if weights.ndim == 2 and weights.shape[1] == 1:
            # one class: the same scores as 1-D weights, bit for bit
            weights = np.ascontiguousarray(weights[:, 0])
        elif weights.ndim == 2:
            row_norms = np.sqrt(np.einsum("ic,ic->i", weights, weights))
        elif weights.ndim != 1:
            raise ParameterError(f"weights must be 1-D or 2-D, got shape "
                                 f"{weights.shape}")
        cross = _cross_kernel(weights)
        store = self.store
        m = store.n_features
        blocks = self.candidate_blocks(run.block_size)
        if not blocks:
            return TopK(_EMPTY_KEYS, _EMPTY_SCORES, {"nnz": 0})
        shared = {"store": store, "codec": self.codec, "weights": weights,
                  "row_norms": row_norms, "excluded": excluded, "k": k, "n_seed": self.n_seed,
                  "linear_scale": self.linear_factor ** 2,
                  "square_scale": self.square_factor ** 2}
        phase1 = run(blocks, _column_pass,
                     partial(_merge_column_pass, k=k, n_seed=self.n_seed), shared)
        nnz = phase1["topk"].counters["nnz"]
        max_abs = phase1["max_abs"]
        nonnegative = phase1["min_value"] >= 0.0
        cross_scale = self.cross_factor ** 2

        # seeding: exact crosses among the seed columns
        seed_columns = np.sort(phase1["seed"].keys)
        best = phase1["topk"]
        seed_pairs = None
        if len(seed_columns) > 1 and self._use_gram(weights, seed_columns):
            seed_pairs = self._gram_crosses(seed_columns, weights, excluded, k, run)
            keys, scores = seed_pairs[0], seed_pairs[1]
        elif len(seed_columns) > 1:
            seed = self._live_arrays(seed_columns, weights, row_norms, nonnegative)
            keys, scores, _, _ = cross(
                seed["indptr"], seed["indices"], seed["data"], seed["columns"],
                seed["pos"], seed["neg"], seed["max"], seed["row_ptr"],
                seed["row_cols"], seed["row_vals"], seed["columns"], seed["pos"],
                seed["neg"], seed["max"], weights, cross_scale, 0.0, excluded, m, k,
                self.prune)
            del seed
        if len(seed_columns) > 1:
            merged = merge_topk(best.keys, best.scores, keys, scores, k)
            threshold = merged[1][-1] if len(merged[0]) == k else 0.0
        else:
            threshold = best.scores[-1] if len(best.keys) == k else 0.0

        # live columns: those that can take part in a pair reaching threshold
        # (a pair's bound is at most live_weight_j * max M, for j and k)
        if not self.prune:
            threshold = 0.0
        if threshold > 0.0 and max_abs > 0.0:
            min_weight = math.sqrt(threshold / cross_scale) / (max_abs * (1.0 + BOUND_SLACK))
        else:
            min_weight = 0.0
        # For non-negative data the seed list is ranked by the live weight:
        # it holds every live column when it is not full (it then holds
        # every column with a positive weight) or when its smallest weight
        # is already below min_weight.  Otherwise a second pass is needed.
        seed_weight = phase1["seed"].scores
        if nonnegative and (len(seed_weight) < self.n_seed
                            or seed_weight[-1] < min_weight):
            live_columns = np.sort(phase1["seed"].keys[seed_weight >= min_weight])
        else:
            live = run(blocks, _live_pass, _merge_live,
                       {"store": store, "weights": weights, "row_norms": row_norms,
                        "min_weight": max(min_weight, np.nextafter(0.0, 1.0)),
                        "nonnegative": nonnegative})
            live_columns = live["live"]
            nnz += live["nnz"]

        counters = {"nnz": nnz, "live_columns": int(len(live_columns)),
                    "seed_columns": int(len(seed_columns)),
                    "pairs_evaluated": 0, "pairs_pruned": 0}
        if len(live_columns) > 1 and seed_pairs is not None and \
                np.all(np.isin(live_columns, seed_columns)):
            # every pair that can reach the threshold is a pair of live
            # columns, all of them seeds: the seed Gram already scored it
            counters["pairs_evaluated"] = seed_pairs[2]
            keys, scores = merged
        elif len(live_columns) > 1 and self._use_gram(weights, live_columns):
            crosses = self._gram_crosses(live_columns, weights, excluded, k, run)
            counters["pairs_evaluated"] = crosses[2]
            keys, scores = merge_topk(best.keys, best.scores, crosses[0], crosses[1], k)
        elif len(live_columns) > 1:
            live = self._live_arrays(live_columns, weights, row_norms, nonnegative)
            bounds = balanced_block_bounds(live["indptr"], CROSS_TASK_NNZ)
            chunks = [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]
            crosses = run.topk(chunks, _cross_task, k, shared={
                "live": live, "weights": weights, "scale": cross_scale,
                "threshold": threshold, "excluded": excluded, "n_features": m,
                "k": k, "prune": self.prune})
            counters["pairs_evaluated"] = crosses.counters.get("pairs_evaluated", 0)
            counters["pairs_pruned"] = crosses.counters.get("pairs_pruned", 0)
            keys, scores = merge_topk(best.keys, best.scores, crosses.keys,
                                      crosses.scores, k)
        else:
            keys, scores = best.keys, best.scores
        return TopK(keys, scores, counters)

    @staticmethod
    def _use_gram(weights, columns):
        """Whether the crosses of ``columns`` take the pair Gram path (one
        output: any number of columns, in tiles of ``GRAM_MAX_COLUMNS``)."""
        return weights.ndim == 1

    def _gram_crosses(self, columns, weights, excluded, k, run):
        """Top-``k`` crosses among ``columns`` (increasing) by the pair Gram.

        The columns are cut into tiles of at most :data:`GRAM_MAX_COLUMNS`
        (consecutive in column order); each tile and each pair of tiles is
        one Gram over the row ranges (:meth:`_gram_tile`), holding only its
        columns and one p x p partial per running task, and the top-``k``
        lists are merged (exact: ranked by score, then key).  A pair's sum
        is the same whichever tile computes it.

        Returns
        -------
        keys, scores, n_nonzero
        """
        columns = np.asarray(columns, dtype=np.int64)
        tiles = [columns[lo:lo + GRAM_MAX_COLUMNS]
                 for lo in range(0, len(columns), GRAM_MAX_COLUMNS)]
        keys, scores, n_nonzero = _EMPTY_KEYS, _EMPTY_SCORES, 0
        for a in range(len(tiles)):
            for b in range(a, len(tiles)):
                both = tiles[a] if a == b else np.concatenate([tiles[a], tiles[b]])
                found = self._gram_tile(both, 0 if a == b else len(tiles[a]), weights,
                                        excluded, k, run)
                keys, scores = merge_topk(keys, scores, found[0], found[1], k)
                n_nonzero += found[2]
        return keys, scores, n_nonzero

    def _gram_tile(self, columns, split, weights, excluded, k, run):
        """Top-``k`` crosses of one Gram tile (``split``: see :func:`pair_gram_rows`).

        The columns are held as CSC (row numbers only when every value is
        1); one task per row range of :func:`gram_row_ranges` accumulates
        its rows of ``X' diag(a) X``, and the partial Grams are summed in
        pairs, a fixed binary tree.  Every pair of the tile is scored
        exactly (the bound only chose the columns).
        """
        block = self.store.read_columns_lean(columns)
        data = block.data
        if data is None or all_ones(data):
            data = np.zeros(0, dtype=np.float64)
        arrays = (block.indptr, block.indices, data)
        del block
        # partial Grams summed in pairs (a fixed binary tree over the row
        # ranges): few p x p partials are alive at once
        gram = run(gram_row_ranges(self.store.n_samples), _gram_task, _sum_grams,
                   {"columns": arrays, "weights": weights, "split": split},
                   split_every=2)
        keys, scores, n_nonzero = gram_topk(
            gram, columns, self.cross_factor ** 2, excluded, self.store.n_features, k,
            split)
        return keys, scores, int(n_nonzero)

    def _live_arrays(self, columns, weights, row_norms, nonnegative):
        """Columns held in memory for the cross computation (CSC and CSR)."""
        block = self.store.read_columns_lean(columns)
        data = block.values(np.float64)
        _, _, pos, neg, max_abs, _ = _stats(block.indptr, block.indices, data,
                                            weights, row_norms, False)
        pos, neg, _ = _bound_weights(pos, neg, nonnegative)
        row_ptr, row_cols, row_vals = rows_of_columns(
            block.indptr, block.indices, data, self.store.n_samples)
        return {"columns": np.asarray(columns, dtype=np.int64),
                "indptr": block.indptr, "indices": block.indices, "data": data,
                "pos": pos, "neg": neg, "max": max_abs, "row_ptr": row_ptr,
                "row_cols": row_cols, "row_vals": row_vals}

    # --------------------------------------------------------- materialize
    def materialize(self, keys, dtype=np.float64, payload=None) -> ColumnBlock:
        """Columns of the given candidates, in order, with their map factors.

        Source columns absent from the store (ids beyond its columns) count
        as zero columns.  ``payload`` is accepted for interface parity and
        ignored (degree-2 columns are products formed here).
        """
        first, second = self.decode(keys)
        return self._materialize_pairs(first, second, dtype, False)

    def materialize_compact(self, keys, payload=None) -> ColumnBlock:
        """:meth:`materialize`; from 0/1 source columns, row numbers and one
        value per column (the map factor), no value per entry."""
        first, second = self.decode(keys)
        return self._materialize_pairs(first, second, np.float64, True)

    def materialize_ids(self, feature_ids, dtype=np.float64) -> ColumnBlock:
        """Like :meth:`materialize` from user-visible ids (for prediction)."""
        first, second = self._columns_of_ids(feature_ids)
        return self._materialize_pairs(first, second, dtype, False)

    def absent_ids(self, feature_ids) -> list:
        """The ids with a source column that is not in the store."""
        first, second = self._columns_of_ids(feature_ids)
        m = self.store.n_features
        bad = (first < 0) | (first >= m) | (second >= m) | ((second < 0) & (second != -1))
        return [fid for fid, out in zip(feature_ids, bad) if out]

    def _materialize_pairs(self, first, second, dtype, compact):
        """The generated columns in one allocation (:func:`pair_columns`).

        The source columns are read once, as stored (0/1 columns as row
        numbers only); no value per entry is made for 0/1 data unless the
        caller needs one (``compact`` False).
        """
        first = np.asarray(first, dtype=np.int64)
        second = np.asarray(second, dtype=np.int64)
        m = self.store.n_features
        sources = np.unique(np.concatenate([first, second[second >= 0]]))
        inside = sources[(sources >= 0) & (sources < m)]
        block = self.store.read_columns_lean(inside)
        binary = block.data is None or all_ones(block.data)
        data = np.zeros(0, dtype=np.float64) if binary else block.data

        def positions(c):
            """Where each source column is in ``block`` (-1: not in the store)."""
            if len(inside) == 0:
                return np.full(len(c), -1, dtype=np.int64)
            pos = np.minimum(np.searchsorted(inside, c), len(inside) - 1)
            return np.where(inside[pos] == c, pos, -1)

        pos_first = positions(first)
        pos_second = np.where(second == -1, -1, positions(second))
        pos_second = np.where((second != -1) & (pos_second < 0), -2, pos_second)
        scale = np.where(second == -1, self.linear_factor,
                         np.where(second == first, self.square_factor,
                                  self.cross_factor)).astype(np.float64)
        args = (block.indptr, block.indices, data, pos_first, pos_second, scale)
        indptr, indices, values = dispatch(lambda: pair_columns(*args),
                                           lambda: pair_columns_parallel(*args),
                                           block.nnz)
        del block
        if not binary:
            return ColumnBlock(-1, indptr, indices, values.astype(dtype, copy=False))
        if compact:
            return ColumnBlock(-1, indptr, indices, None, column_values=scale)
        return ColumnBlock(-1, indptr, indices,
                           np.repeat(scale.astype(dtype), np.diff(indptr)))
