"""Linear feature space: the candidates are the store's own columns."""

from __future__ import annotations

from functools import partial

import numpy as np

from ultrafs.features.base import FeatureSpace, register_feature_space
from ultrafs.kernels.scoring import (score_block_topk, score_block_topk_binary,
                                     score_block_topk_multi,
                                     score_block_topk_multi_binary,
                                     score_block_topk_queries,
                                     score_block_topk_queries_binary)
from ultrafs.scoring.topk import TopK, merge_topk_results
from ultrafs.store.base import ColumnBlock

__all__ = ["LinearFeatures"]

_EMPTY_KEYS = np.zeros(0, dtype=np.int64)
_EMPTY_SCORES = np.zeros(0, dtype=np.float64)


def _score_columns(block, store, weights, excluded, k):
    """Task: top-``k`` columns of one column range.

    Scores ``(Σ_i a_i x_ij)²`` for 1-D weights, ``Σ_c (Σ_i A_ic x_ij)²``
    for 2-D (n_samples, K) weights.
    """
    start, stop = block
    return _score_read(store.read_range_transient(start, stop), start, stop,
                       weights, excluded, k)


class _PerQuery:
    """The :class:`TopK` of every query of a shared pass (one per query).

    A class, not a tuple: a ``dask.bag`` reduction would take a tuple of
    results for the elements of the partition.
    """

    __slots__ = ("parts",)

    def __init__(self, parts):
        self.parts = parts

    def __getstate__(self):
        return self.parts

    def __setstate__(self, state):
        self.parts = state


def _score_columns_many(block, store, queries):
    """Task: one column range read once, the top-k of every query."""
    start, stop = block
    cols = store.read_range_transient(start, stop)
    return _PerQuery([_score_read(cols, start, stop, weights, excluded, k)
                      for weights, k, excluded in queries])


class _Stacked:
    """Queries of 1-D weights as the arrays of ``score_block_topk_queries``."""

    __slots__ = ("weights", "excluded", "excluded_ptr", "ks")

    def __init__(self, queries):
        self.weights = np.ascontiguousarray(
            np.stack([weights for weights, _, _ in queries], axis=1), dtype=np.float64)
        parts = [np.asarray(excluded, dtype=np.int64) for _, _, excluded in queries]
        self.excluded = np.concatenate(parts) if parts else _EMPTY_KEYS
        self.excluded_ptr = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(part) for part in parts], out=self.excluded_ptr[1:])
        self.ks = np.array([k for _, k, _ in queries], dtype=np.int64)

    def __getstate__(self):
        return (self.weights, self.excluded, self.excluded_ptr, self.ks)

    def __setstate__(self, state):
        self.weights, self.excluded, self.excluded_ptr, self.ks = state


def _score_columns_stacked(block, store, stacked):
    """Task: one column range read once and scored for every query in one
    loop (:func:`~ultrafs.kernels.scoring.score_block_topk_queries`)."""
    start, stop = block
    cols = store.read_range_transient(start, stop)
    n_queries = len(stacked.ks)
    if cols.nnz == 0:
        return _PerQuery([TopK(_EMPTY_KEYS, _EMPTY_SCORES, {"nnz": 0})
                          for _ in range(n_queries)])
    # a block never has more winners than columns
    ks = np.minimum(stacked.ks, stop - start)
    if cols.data is None:
        keys, scores, ptr = score_block_topk_queries_binary(
            cols.indptr, cols.indices, stacked.weights, start, stacked.excluded,
            stacked.excluded_ptr, ks, 1.0)
    else:
        keys, scores, ptr = score_block_topk_queries(
            cols.indptr, cols.indices, cols.data, stacked.weights, start,
            stacked.excluded, stacked.excluded_ptr, ks, 1.0)
    parts = []
    for q in range(n_queries):
        mine = keys[ptr[q]:ptr[q + 1]]
        parts.append(TopK(mine, scores[ptr[q]:ptr[q + 1]], {"nnz": cols.nnz},
                          _winner_columns(cols, mine)))
    return _PerQuery(parts)


def _merge_many(results, ks):
    """Merge :class:`_PerQuery` results query by query."""
    results = list(results)
    return _PerQuery([merge_topk_results([result.parts[i] for result in results], k)
                      for i, k in enumerate(ks)])


def _score_read(cols, start, stop, weights, excluded, k):
    """The top-``k`` of columns ``start:stop`` already read (``cols``)."""
    if cols.nnz == 0:
        return TopK(_EMPTY_KEYS, _EMPTY_SCORES, {"nnz": 0})
    k = min(int(k), stop - start)         # a block never has more winners than columns
    if weights.ndim == 2:
        if cols.data is None:
            keys, scores = score_block_topk_multi_binary(
                cols.indptr, cols.indices, weights, start, excluded, k, 1.0)
        else:
            keys, scores = score_block_topk_multi(
                cols.indptr, cols.indices, cols.data, weights, start, excluded,
                k, 1.0)
    elif cols.data is None:
        keys, scores = score_block_topk_binary(
            cols.indptr, cols.indices, weights, start, excluded, k, 1.0)
    else:
        keys, scores = score_block_topk(
            cols.indptr, cols.indices, cols.data, weights, start, excluded, k, 1.0)
    return TopK(keys, scores, {"nnz": cols.nnz}, _winner_columns(cols, keys))


def _columns_from_payload(keys, payload, dtype):
    parts = [payload[int(key)] for key in keys]
    indptr = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum([len(rows) for rows, _ in parts], out=indptr[1:])
    indices = np.concatenate([rows for rows, _ in parts] or [np.zeros(0, np.int32)])
    data = np.concatenate(
        [np.ones(len(rows), dtype) if values is None else values.astype(dtype)
         for rows, values in parts] or [np.zeros(0, dtype)])
    return ColumnBlock(-1, indptr, indices.astype(np.int32, copy=False), data)


def _winner_columns(cols, keys):
    """Copies of the winning columns, so the driver need not read them again."""
    payload = {}
    for key in keys.tolist():
        lo, hi = cols.indptr[key - cols.first_column], \
            cols.indptr[key - cols.first_column + 1]
        values = None if cols.data is None else cols.data[lo:hi].copy()
        payload[key] = (cols.indices[lo:hi].copy(), values)
    return payload


@register_feature_space
class LinearFeatures(FeatureSpace):
    """Candidates = columns of a :class:`~ultrafs.store.base.ColumnStore`.

    Keys are the column numbers ``0 .. m - 1``; feature ids are the
    store's ids (``column + store.id_offset``).  The scoring pass is one
    streamed pass over the store's column blocks.

    Parameters
    ----------
    store : ColumnStore
    """

    kind = "linear"
    poly_degree = 1

    @classmethod
    def id_key(cls, feature_id):
        """A linear feature id is an integer (the store's id)."""
        if isinstance(feature_id, bool) or not isinstance(feature_id, (int, np.integer)):
            raise ValueError("must be an integer")
        return int(feature_id)

    @property
    def n_candidates(self) -> int:
        """Number of candidate features: the store's m columns."""
        return self.store.n_features

    def find_candidates(self, weights, k, excluded, run):
        """Top-``k`` columns by score: one streamed pass.

        The score of column j is ``c_j**2`` with ``c_j = Σ_i a_i x_ij``
        for 1-D weights, ``Σ_c (Σ_i A_ic x_ij)²`` for 2-D weights.

        Parameters
        ----------
        weights : float64 array, shape (n_samples,) or (n_samples, K)
            ``alpha * y``, or the per-class dual weights (C-contiguous).
        k : int
        excluded : int64 array, sorted
            Keys already selected.
        run : BlockRunner
            Executes block tasks on the pass's scheduler (see
            :mod:`ultrafs.scoring.worst_case`).

        Returns
        -------
        result : TopK
            With counter ``nnz`` (nonzeros streamed) and the winners'
            columns as payload (``{key: (rows, values or None)}``).
        """
        blocks = self.candidate_blocks(run.block_size)
        store, (weights,) = self._pass_source([weights])
        result = run.topk(blocks, _score_columns, k,
                          shared={"store": store, "weights": weights,
                                  "excluded": excluded, "k": k})
        return self._own_rows(result, store)

    def _pass_store(self):
        """The store this space's passes read: the inner store of a large row
        subset (:attr:`~ultrafs.store.rows.RowSubsetStore.scatters`), else
        its own."""
        return self.store.inner if getattr(self.store, "scatters", False) else self.store

    def _pass_source(self, weight_sets):
        """The store a pass reads and the weights over its rows: the inner
        store of a large row subset, the weights scattered
        (:meth:`~ultrafs.store.rows.RowSubsetStore.scattered`: the same
        scores, bit for bit, without dropping rows block by block)."""
        store = self._pass_store()
        if store is self.store:
            return store, weight_sets
        return store, [self.store.scattered(weights) for weights in weight_sets]

    def _own_rows(self, result, store):
        """``result`` with its winners' columns in this space's rows."""
        if store is self.store or result.payload is None:
            return result
        payload = {key: self.store.kept_entries(rows, values)
                   for key, (rows, values) in result.payload.items()}
        return TopK(result.keys, result.scores, result.counters, payload)

    @property
    def shares_passes(self) -> bool:
        """True, unless a subclass scores otherwise (overrides
        :meth:`find_candidates`): its queries then run one pass each."""
        return type(self).find_candidates is LinearFeatures.find_candidates

    def find_candidates_many(self, queries, run):
        """:meth:`find_candidates` for several ``(weights, k, excluded)``
        queries in one streamed pass: each block is read once and scored
        for every query, 1-D queries in one loop
        (:func:`~ultrafs.kernels.scoring.score_block_topk_queries`), K-class
        ones by the kernels of their own passes; each result is the one its
        own pass would give, bit for bit."""
        if not self.shares_passes:
            return super().find_candidates_many(queries, run)
        return self.find_candidates_across([(self, queries)], run)[0]

    @classmethod
    def find_candidates_across(cls, groups, run):
        """One pass for the queries of several linear spaces that read the
        same store: row subsets of one large store whose passes scatter
        (the training parts of ``C="auto"``'s folds).  Each query's result
        is the one its own space's pass gives it, bit for bit: the same
        blocks of the same store, its weights zero on the rows its space
        does not keep.  None when the spaces do not read the same store."""
        spaces = [space for space, _ in groups]
        if not all(isinstance(space, LinearFeatures) and space.shares_passes
                   for space in spaces):
            return None
        store = spaces[0]._pass_store()
        if any(space._pass_store() is not store for space in spaces[1:]):
            return None          # e.g. folds copied into memory: their own passes
        blocks = spaces[0].candidate_blocks(run.block_size)
        if any(space.candidate_blocks(run.block_size) != blocks for space in spaces[1:]):
            return None
        if not blocks:
            return [[TopK(_EMPTY_KEYS, _EMPTY_SCORES, {}) for _ in queries]
                    for _, queries in groups]
        flat = []
        for space, queries in groups:
            _, weight_sets = space._pass_source([weights for weights, _, _ in queries])
            flat += [(weights, int(k), excluded)
                     for weights, (_, k, excluded) in zip(weight_sets, queries)]
        merge = partial(_merge_many, ks=[k for _, k, _ in flat])
        if all(weights.ndim == 1 for weights, _, _ in flat):
            results = run(blocks, _score_columns_stacked, merge,
                          shared={"store": store, "stacked": _Stacked(flat)}).parts
        else:
            results = run(blocks, _score_columns_many, merge,
                          shared={"store": store, "queries": flat}).parts
        out, start = [], 0
        for space, queries in groups:
            mine = results[start:start + len(queries)]
            start += len(queries)
            out.append([space._own_rows(result, store) for result in mine])
        return out

    def row_max_squares(self, *, block_size=None, scheduler=None,
                        num_workers=None) -> np.ndarray:
        """``max_j x_ij²`` of every row (:func:`ultrafs.scoring.row_norms.row_top2`)."""
        from ultrafs.scoring.row_norms import row_top2

        return row_top2(self.store, block_size=block_size, scheduler=scheduler,
                        num_workers=num_workers)[:, 0]

    def materialize(self, keys, dtype=np.float64, payload=None) -> ColumnBlock:
        """The columns of ``keys`` in the order given, values materialised.

        Keys beyond the store's columns (features absent from this store)
        come back as empty columns.  ``payload`` (the columns a scoring pass
        attached to its winners) avoids reading them again.
        """
        keys = np.asarray(keys, dtype=np.int64)
        if payload is not None and all(int(key) in payload for key in keys):
            return _columns_from_payload(keys, payload, dtype)
        cols = self.store.read_columns(keys)
        return ColumnBlock(-1, cols.indptr, cols.indices,
                           cols.values(dtype))

    def materialize_ids(self, feature_ids, dtype=np.float64) -> ColumnBlock:
        """Like :meth:`materialize` from user-visible ids (for prediction).

        Ids outside the store (beyond its columns or below its first id)
        count as zero columns.
        """
        columns = self.keys_of(feature_ids)
        absent = (columns < 0) | (columns >= self.store.n_features)
        return self.materialize(np.where(absent, self.store.n_features, columns),
                                dtype)

    def absent_ids(self, feature_ids) -> list:
        """The ids whose source columns are not in the store."""
        columns = self.keys_of(feature_ids)
        absent = (columns < 0) | (columns >= self.store.n_features)
        return [fid for fid, out in zip(feature_ids, absent) if out]

    def feature_ids(self, keys) -> list:
        """User-visible ids of keys (store ids, e.g. 1-based for LIBSVM)."""
        return [int(i) for i in self.store.feature_ids(keys)]

    def keys_of(self, feature_ids) -> np.ndarray:
        """Keys of user-visible ids (inverse of :meth:`feature_ids`)."""
        return self.store.columns_of(np.asarray(feature_ids, dtype=np.int64))

