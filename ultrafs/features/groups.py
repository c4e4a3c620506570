"""Group feature space: the candidates are user-given groups of columns.

FGM's worst-case analysis for groups (paper §2.2 and §4.2, eq. 27) scores
a group ``G`` by ``s_G = ||c_G||² = Σ_{j ∈ G} c_j²`` (per class summed for
K classes) and B groups enter per iteration; the subproblem penalises the
columns added at one iteration as one block, as for features (digest §4:
``ω_h`` holds all features of the B groups of iteration h).

Overlapping groups are made disjoint by augmentation (§2.3): a column in
two groups is two *virtual* columns, one per group, each with its own
weight; nothing is written, the column is read once per group only when
its group is materialised for the subproblem.  Keys are the positions of
the augmented matrix ``[X_G1, X_G2, ...]`` (groups in increasing label
order, members in increasing column order), so a group's keys are one
range and ties between groups break by label.  The feature id a model
lists for an augmented column is ``[group label, store feature id]``;
the candidate (unit) of the FGM budget is the group.

Memory: the group map (two int64 arrays of ``p + 1`` and ``Σ |G|``
entries) is the user's input and is held whole; a pass holds only the
columns of one block of groups per task.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.features.base import FeatureSpace, is_integral, register_feature_space
from ultrafs.kernels.group_scores import group_topk
from ultrafs.kernels.scoring import (column_sums, column_sums_binary,
                                     column_sums_multi, column_sums_multi_binary)
from ultrafs.scoring.topk import TopK
from ultrafs.store.base import ColumnBlock

__all__ = ["GroupMap", "GroupFeatures", "column_correlations", "sorted_unique",
           "arrays_digest", "group_map"]

_EMPTY_KEYS = np.zeros(0, dtype=np.int64)
_EMPTY_SCORES = np.zeros(0, dtype=np.float64)


def column_correlations(cols, weights) -> np.ndarray:
    """``C[j, c] = Σ_i A_ic X_ij`` of a block's columns, shape (n_columns, K).

    Binary weights (n,) give K = 1.  Each column's sum runs over its
    nonzeros in row order (:mod:`ultrafs.kernels.scoring`): the same bits
    whatever block the column was read in.
    """
    if weights.ndim == 2:
        if cols.data is None:
            return column_sums_multi_binary(cols.indptr, cols.indices, weights)
        return column_sums_multi(cols.indptr, cols.indices, cols.data, weights)
    if cols.data is None:
        sums = column_sums_binary(cols.indptr, cols.indices, weights)
    else:
        sums = column_sums(cols.indptr, cols.indices, cols.data, weights)
    return sums.reshape(-1, 1)


class GroupMap:
    """Groups of store columns: labels, and each group's members.

    Parameters
    ----------
    labels : int64 array, shape (p,)
        User-visible group ids, strictly increasing.
    group_ptr : int64 array, shape (p + 1,)
        Group ``g``'s members are ``members[group_ptr[g]:group_ptr[g + 1]]``.
    members : int64 array
        Store column numbers, increasing within each group.
    """

    def __init__(self, labels, group_ptr, members):
        self.labels = np.asarray(labels, dtype=np.int64)
        self.group_ptr = np.asarray(group_ptr, dtype=np.int64)
        self.members = np.asarray(members, dtype=np.int64)

    @property
    def n_groups(self) -> int:
        return len(self.labels)

    def digest(self) -> str:
        """SHA-256 (hex) of the map: recorded in model and checkpoint
        parameters, so a run is never resumed with other groups."""
        return arrays_digest(self.labels, self.group_ptr, self.members)

    @classmethod
    def from_pairs(cls, columns, labels, n_columns, what="groups"):
        """From (column, group label) pairs; a column may be in several groups.

        Parameters
        ----------
        columns, labels : int arrays of the same length
            Column ``columns[t]`` belongs to group ``labels[t]``; pairs
            whose column is negative or ``>= n_columns`` (a feature absent
            from the store: an all-zero column) are dropped; repeated pairs
            count once.
        n_columns : int
        what : str
            Names the input in messages.

        Raises
        ------
        ParameterError
            One line: lengths differ, a label is negative, no pair is left.
        """
        columns = np.asarray(columns, dtype=np.int64).ravel()
        labels = np.asarray(labels, dtype=np.int64).ravel()
        if columns.shape != labels.shape:
            raise ParameterError(f"{what}: {len(columns)} feature ids but "
                                 f"{len(labels)} group ids")
        if len(labels) and labels.min() < 0:
            raise ParameterError(f"{what}: group ids must be >= 0, got "
                                 f"{int(labels.min())}")
        keep = (columns >= 0) & (columns < int(n_columns))
        columns, labels = columns[keep], labels[keep]
        if not len(columns):
            raise ParameterError(f"{what}: no group has a feature of this data")
        order = np.lexsort((columns, labels))
        columns, labels = columns[order], labels[order]
        first = np.ones(len(columns), dtype=bool)
        first[1:] = (columns[1:] != columns[:-1]) | (labels[1:] != labels[:-1])
        columns, labels = columns[first], labels[first]
        unique, starts = np.unique(labels, return_index=True)
        group_ptr = np.append(starts, len(columns)).astype(np.int64)
        return cls(unique, group_ptr, columns)

    @classmethod
    def from_column_labels(cls, labels, n_columns, what="groups"):
        """From one group label per column (negative: the column is in no group).

        Raises
        ------
        ParameterError
            When ``labels`` is not one integer per column.
        """
        labels = np.asarray(labels)
        if labels.ndim != 1 or len(labels) != int(n_columns):
            raise ParameterError(f"{what} must give one group id per column "
                                 f"({n_columns}), got shape {labels.shape}")
        if labels.dtype.kind not in "iu":
            if labels.dtype.kind == "f" and np.all(np.isfinite(labels)) \
                    and np.all(labels == np.round(labels)):
                labels = labels.astype(np.int64)
            else:
                raise ParameterError(f"{what} must be integer group ids")
        labels = labels.astype(np.int64)
        columns = np.arange(len(labels), dtype=np.int64)
        grouped = labels >= 0
        return cls.from_pairs(columns[grouped], labels[grouped], n_columns, what)

    def group_of(self, positions) -> np.ndarray:
        """The group number of augmented positions."""
        return np.searchsorted(self.group_ptr, np.asarray(positions, dtype=np.int64),
                               side="right") - 1

    def group_bounds(self, target_members) -> list:
        """Ranges of groups of about ``target_members`` member columns each."""
        total = int(self.group_ptr[-1])
        step = max(1, int(target_members))
        cuts = np.searchsorted(self.group_ptr, np.arange(step, total, step),
                               side="right") - 1
        bounds = np.unique(np.concatenate([[0], cuts, [self.n_groups]]))
        return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])
                if hi > lo]


def arrays_digest(*arrays) -> str:
    """SHA-256 (hex) of int64 arrays, each preceded by its length.

    Parameters
    ----------
    *arrays : array_like of int, shape (m_i,)
        Read as little-endian int64.

    Returns
    -------
    str
        64 hexadecimal digits; the structure digest of group and tree spaces.
    """
    import hashlib

    h = hashlib.sha256()
    for array in arrays:
        a = np.ascontiguousarray(array, dtype="<i8")
        h.update(len(a).to_bytes(8, "little"))
        h.update(a.tobytes())
    return h.hexdigest()


def _read_members(store, members):
    """The columns ``members`` (any order, repeats allowed) of ``store``:
    a block and the row of each member in it."""
    unique = np.unique(members)
    if not len(unique):
        return None, None
    span = int(unique[-1] - unique[0] + 1)
    if span <= 2 * len(unique) + 64:
        cols = store.read_range_transient(int(unique[0]), int(unique[-1]) + 1)
        return cols, members - unique[0]
    return store.read_columns(unique), np.searchsorted(unique, members)


def _score_groups(block, store, weights, group_ptr, members, excluded, k):
    """Task: the ``k`` best groups of one range of groups."""
    g0, g1 = block
    lo, hi = int(group_ptr[g0]), int(group_ptr[g1])
    cols, rows = _read_members(store, members[lo:hi])
    if cols is None or cols.nnz == 0:
        return TopK(_EMPTY_KEYS, _EMPTY_SCORES, {"nnz": 0, "groups_scored": g1 - g0})
    sums = column_correlations(cols, weights)
    groups, scores = group_topk(sums, group_ptr, rows.astype(np.int64), g0, g1,
                                excluded, min(int(k), g1 - g0))
    return TopK(groups, scores, {"nnz": cols.nnz, "groups_scored": g1 - g0})


def sorted_unique(values) -> np.ndarray:
    """The distinct values of a sorted int64 array (no sort: ``excluded``
    keys come sorted and their units are non-decreasing in the key)."""
    values = np.asarray(values, dtype=np.int64)
    if len(values) < 2:
        return values
    keep = np.empty(len(values), dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def check_nonnegative_id(value, what) -> int:
    if not is_integral(value) or int(value) < 0:
        raise ValueError(f"{what} must be an integer >= 0")
    return int(value)


@register_feature_space
class GroupFeatures(FeatureSpace):
    """Candidates = groups of the store's columns (disjoint or overlapping).

    Parameters
    ----------
    store : ColumnStore
    groups : GroupMap, array-like, dict or None
        One group id per column (an int array of length m; a negative id
        leaves the column out), a mapping ``{group id: [feature ids]}``
        (a feature may be in several groups: overlapping groups), a pair of
        arrays ``(feature_ids, group_ids)``, or a :class:`GroupMap`.  None
        builds the space of a model file, which can materialise its
        features for prediction but not search.
    """

    kind = "groups"

    def __init__(self, store, groups=None):
        super().__init__(store)
        self.groups = None if groups is None else group_map(store, groups)

    # ------------------------------------------------------------- ids
    @classmethod
    def id_key(cls, feature_id):
        """``[group id, feature id]``: ordered, both integers >= 0."""
        if not isinstance(feature_id, (list, tuple)) or len(feature_id) != 2:
            raise ValueError("must be a pair [group id, feature id]")
        return tuple(check_nonnegative_id(v, "each part") for v in feature_id)

    @classmethod
    def source_ids(cls, feature_id) -> list:
        return [int(feature_id[1])]

    @classmethod
    def name_of_id(cls, feature_id, name_of):
        return name_of(int(feature_id[1]))

    @classmethod
    def unit_of_id(cls, feature_id):
        """The group id of ``[group id, feature id]``."""
        return int(feature_id[0])

    def structure_digest(self):
        """Digest of the group map (None for a space without one)."""
        return None if self.groups is None else self.groups.digest()

    def _require_groups(self):
        if self.groups is None:
            raise ParameterError("this group feature space was rebuilt from a "
                                 "model file: it has no groups to search")
        return self.groups

    @property
    def n_candidates(self) -> int:
        """Number of groups."""
        return self._require_groups().n_groups

    @property
    def n_keys(self) -> int:
        """Columns of the augmented matrix (Σ |G|)."""
        return int(self._require_groups().group_ptr[-1])

    def units_of(self, keys) -> np.ndarray:
        """The group number of each key."""
        return self._require_groups().group_of(keys)

    def unit_ids(self, units) -> list:
        """Group labels of group numbers."""
        return [int(v) for v in self._require_groups().labels[np.asarray(units,
                                                                         dtype=np.int64)]]

    def feature_ids(self, keys) -> list:
        """``[group id, store feature id]`` of each augmented key."""
        groups = self._require_groups()
        keys = np.asarray(keys, dtype=np.int64)
        labels = groups.labels[groups.group_of(keys)]
        ids = self.store.feature_ids(groups.members[keys])
        return [[int(g), int(j)] for g, j in zip(labels, ids)]

    def keys_of(self, feature_ids) -> np.ndarray:
        """Augmented keys of ``[group id, feature id]`` pairs (-1 when the
        pair is not in the groups)."""
        groups = self._require_groups()
        pairs = np.asarray(feature_ids, dtype=np.int64).reshape(-1, 2)
        columns = self.store.columns_of(pairs[:, 1])
        keys = np.full(len(pairs), -1, dtype=np.int64)
        g = np.searchsorted(groups.labels, pairs[:, 0])
        for t in range(len(pairs)):
            if g[t] >= groups.n_groups or groups.labels[g[t]] != pairs[t, 0]:
                continue
            lo, hi = groups.group_ptr[g[t]], groups.group_ptr[g[t] + 1]
            pos = lo + np.searchsorted(groups.members[lo:hi], columns[t])
            if pos < hi and groups.members[pos] == columns[t]:
                keys[t] = pos
        return keys

    # ---------------------------------------------------------- scoring
    def find_candidates(self, weights, k, excluded, run):
        """The ``k`` best groups by ``||c_G||²``; returns their columns' keys.

        Keys come group by group in rank order (a group's scores repeated
        for each of its columns); counters ``nnz`` and ``groups_scored``.
        """
        groups = self._require_groups()
        excluded_groups = sorted_unique(groups.group_of(excluded))
        target = run.block_size
        if target is None:
            bounds = self.store.block_bounds(None)
            target = max(1, int(np.median(np.diff(bounds)))) if len(bounds) > 1 else 1
        blocks = groups.group_bounds(target)
        best = run.topk(blocks, _score_groups, k,
                        shared={"store": self.store, "weights": weights,
                                "group_ptr": groups.group_ptr,
                                "members": groups.members,
                                "excluded": excluded_groups, "k": k})
        return expand_groups(best, groups.group_ptr)

    def row_max_squares(self, *, block_size=None, scheduler=None,
                        num_workers=None) -> np.ndarray:
        """``max_j x_ij²`` over the store's columns (the members' values):
        the linear space's."""
        from ultrafs.features.linear import LinearFeatures

        return LinearFeatures(self.store).row_max_squares(
            block_size=block_size, scheduler=scheduler, num_workers=num_workers)

    # ------------------------------------------------------ materialize
    def materialize(self, keys, dtype=np.float64, payload=None) -> ColumnBlock:
        """The (virtual, repeated where groups overlap) columns of ``keys``."""
        groups = self._require_groups()
        cols = self.store.read_columns(groups.members[np.asarray(keys, dtype=np.int64)])
        return ColumnBlock(-1, cols.indptr, cols.indices, cols.values(dtype))

    def materialize_ids(self, feature_ids, dtype=np.float64) -> ColumnBlock:
        """Columns of ``[group id, feature id]`` pairs (only the feature
        part is read: no group map needed)."""
        columns = self._source_columns(feature_ids)
        cols = self.store.read_columns(columns)
        return ColumnBlock(-1, cols.indptr, cols.indices, cols.values(dtype))

    def _source_columns(self, feature_ids):
        pairs = np.asarray(feature_ids, dtype=np.int64).reshape(-1, 2)
        columns = self.store.columns_of(pairs[:, 1])
        absent = (columns < 0) | (columns >= self.store.n_features)
        return np.where(absent, self.store.n_features, columns)

    def absent_ids(self, feature_ids) -> list:
        """The pairs whose feature is not in the store."""
        columns = self._source_columns(feature_ids)
        return [fid for fid, c in zip(feature_ids, columns)
                if c >= self.store.n_features]


def expand_groups(best, group_ptr):
    """A :class:`TopK` of group numbers → the keys of their members.

    Keys come group by group in rank order; each key carries its group's
    score; the counters are kept.
    """
    keys = [np.arange(group_ptr[g], group_ptr[g + 1], dtype=np.int64)
            for g in best.keys]
    scores = [np.full(int(group_ptr[g + 1] - group_ptr[g]), s)
              for g, s in zip(best.keys, best.scores)]
    return TopK(np.concatenate(keys) if keys else _EMPTY_KEYS,
                np.concatenate(scores) if scores else _EMPTY_SCORES,
                dict(best.counters))


def group_map(store, groups) -> GroupMap:
    """A :class:`GroupMap` from the forms :class:`GroupFeatures` accepts."""
    m = store.n_features
    if isinstance(groups, GroupMap):
        return groups
    if isinstance(groups, dict):
        ids, labels = [], []
        for label, members in groups.items():
            if not is_integral(label):
                raise ParameterError(f"group ids must be integers >= 0, got {label!r}")
            members = np.atleast_1d(np.asarray(members))
            if members.dtype.kind not in "iu":
                raise ParameterError(f"group {label}: feature ids must be integers")
            ids.append(members.astype(np.int64))
            labels.append(np.full(len(members), int(label), dtype=np.int64))
        ids = np.concatenate(ids) if ids else _EMPTY_KEYS
        labels = np.concatenate(labels) if labels else _EMPTY_KEYS
        return GroupMap.from_pairs(_columns(store, ids), labels, m)
    if isinstance(groups, tuple) and len(groups) == 2:
        ids = np.asarray(groups[0])
        if ids.dtype.kind not in "iu" or np.asarray(groups[1]).dtype.kind not in "iu":
            raise ParameterError("groups: feature ids and group ids must be integers")
        return GroupMap.from_pairs(_columns(store, ids.astype(np.int64)),
                                   np.asarray(groups[1], dtype=np.int64), m)
    return GroupMap.from_column_labels(groups, m)


def _columns(store, feature_ids):
    """Store columns of user-visible feature ids (-1 where absent)."""
    feature_ids = np.asarray(feature_ids, dtype=np.int64)
    if not len(feature_ids):
        return feature_ids
    if feature_ids.min() < 0:
        raise ParameterError(f"groups: feature ids must be >= 0, got "
                             f"{int(feature_ids.min())}")
    columns = store.columns_of(feature_ids)
    return np.where((columns < 0) | (columns >= store.n_features), -1, columns)
