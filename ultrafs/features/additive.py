"""Additive kernels as groups, generated on the fly (paper §6.1, §8.6).

An additive kernel ``k(x, z) = Σ_j k_j(x_j, z_j)`` is approximated by an
explicit map per feature, ``φ(x_j) ∈ R^G``; selecting kernels is then
group selection with one group of G generated columns per original
feature (Proposition 2).  The generated columns are computed inside the
scoring pass from the stored column and never written
(:mod:`ultrafs.kernels.additive_maps`); the selected groups' columns are
generated again for the subproblem only, and prediction applies the same
map.  Maps, their parameters and their approximation error:
``docs/ADDITIVE_KERNELS.md``.

- ``hik``: histogram intersection, q = 100 levels of the feature scaled
  by its largest value on the training data (the scale is recorded in the
  model for every materialised feature: prediction quantises new data the
  same way); exact for the quantised values.
- ``chi2``, ``intersection``, ``js``: Vedaldi & Zisserman's maps of the
  homogeneous χ², intersection and Jensen–Shannon kernels, n = 5
  (2n + 1 = 11 columns per feature).

The parameters (q, n, the sampling period) are the paper's values, fixed
in the kernels.  Values must be >= 0 (histograms); a negative value is
refused in one line.  Keys: ``j * G + (l - 1)`` for generated column l of
column j; model ids ``[feature id, l]``.  Memory: one block's expansion
per task at most (the scores need none); nothing in proportion to m or m·G.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.features.base import FeatureSpace, _is_int, register_feature_space
from ultrafs.features.groups import expand_groups, sorted_unique
from ultrafs.kernels.additive_maps import (EXPAND_COLUMNS, MAPS, N_GENERATED,
                                           ROW_MAX_SQUARES, SCORE_BLOCK_TOPK,
                                           SCORE_BLOCK_TOPK_MULTI)
from ultrafs.scoring.topk import TopK
from ultrafs.store.base import ColumnBlock

__all__ = ["AdditiveKernelFeatures", "HIKFeatures", "Chi2Features",
           "IntersectionFeatures", "JSFeatures", "make_additive_space",
           "ADDITIVE_KERNELS"]

_EMPTY_KEYS = np.zeros(0, dtype=np.int64)
_EMPTY_SCORES = np.zeros(0, dtype=np.float64)


def _values(cols):
    """A block's values as stored (ones for a block of implicit ones)."""
    if cols.data is None:
        return np.ones(cols.nnz, dtype=np.float32)
    return cols.data


def _check_nonnegative(cols, data, kind, store):
    if len(data) and float(np.min(data)) < 0:
        pos = int(np.argmin(data))
        column = int(np.searchsorted(cols.indptr, pos, side="right") - 1)
        first = getattr(cols, "first_column", -1)
        shown = "" if first < 0 else \
            f" (feature {int(store.feature_ids(np.array([first + column]))[0])})"
        raise ParameterError(
            f"the {kind} kernel needs values >= 0 (histograms); the data has "
            f"{float(data[pos]):g}{shown}")


def column_max(indptr, data) -> np.ndarray:
    """Largest stored value of every column (0 for an empty column)."""
    n = len(indptr) - 1
    out = np.zeros(n, dtype=np.float64)
    full = np.flatnonzero(np.diff(indptr) > 0)
    if len(full):
        out[full] = np.maximum.reduceat(np.asarray(data, dtype=np.float64),
                                        indptr[full])
    return out


def _score_kernel_block(block, store, weights, excluded, k, kind):
    """Task: the ``k`` best feature groups of one column range."""
    start, stop = block
    cols = store.read_range_transient(start, stop)
    if cols.nnz == 0:
        return TopK(_EMPTY_KEYS, _EMPTY_SCORES, {"nnz": 0})
    data = _values(cols)
    _check_nonnegative(cols, data, kind, store)
    scale = column_max(cols.indptr, data)
    score = SCORE_BLOCK_TOPK_MULTI[kind] if weights.ndim == 2 else SCORE_BLOCK_TOPK[kind]
    keys, scores = score(cols.indptr, cols.indices, data, scale, weights, start,
                         excluded, min(int(k), stop - start))
    return TopK(keys, scores, {"nnz": cols.nnz})


def _row_max_block(block, store, kind):
    """Task: ``max_l φ_l(x_ij)²`` over the block's generated columns, per row
    (value by value, without expanding the block)."""
    start, stop = block
    cols = store.read_range_transient(start, stop)
    out = np.zeros(store.n_samples, dtype=np.float64)
    if cols.nnz:
        data = _values(cols)
        _check_nonnegative(cols, data, kind, store)
        ROW_MAX_SQUARES[kind](cols.indices, data, out)
    return out


class AdditiveKernelFeatures(FeatureSpace):
    """Candidates = the store's columns, each as its group of generated columns.

    Parameters
    ----------
    store : ColumnStore
    scales : list of [feature id, scale] or None
        The scales of a model file (HIK: the training columns' largest
        values); columns not listed take their own largest value.
    """

    kind = ""

    def __init__(self, store, scales=None):
        super().__init__(store)
        self.n_generated = N_GENERATED[self.kind]
        self._scales = {}
        if scales is not None:
            self._scales = {int(fid): float(s) for fid, s in _scale_pairs(scales)}

    # ------------------------------------------------------------- ids
    @classmethod
    def id_key(cls, feature_id):
        """``[feature id, l]`` with ``1 <= l <= G``."""
        if not isinstance(feature_id, (list, tuple)) or len(feature_id) != 2 \
                or not all(_is_int(v) for v in feature_id):
            raise ValueError("must be a pair [feature id, generated column]")
        fid, level = (int(v) for v in feature_id)
        G = N_GENERATED[cls.kind]
        if fid < 0 or not 1 <= level <= G:
            raise ValueError(f"must be [feature id >= 0, l in 1..{G}]")
        return (fid, level)

    @classmethod
    def source_ids(cls, feature_id) -> list:
        return [int(feature_id[0])]

    @classmethod
    def name_of_id(cls, feature_id, name_of):
        name = name_of(int(feature_id[0]))
        return None if name is None else f"{name}~{cls.kind}{int(feature_id[1])}"

    @classmethod
    def unit_of_id(cls, feature_id):
        return int(feature_id[0])

    @property
    def n_candidates(self) -> int:
        """One group per column."""
        return self.store.n_features

    @property
    def n_keys(self) -> int:
        return self.store.n_features * self.n_generated

    def units_of(self, keys) -> np.ndarray:
        return np.asarray(keys, dtype=np.int64) // self.n_generated

    def unit_ids(self, units) -> list:
        return [int(v) for v in self.store.feature_ids(np.asarray(units, dtype=np.int64))]

    def feature_ids(self, keys) -> list:
        keys = np.asarray(keys, dtype=np.int64)
        ids = self.store.feature_ids(keys // self.n_generated)
        return [[int(j), int(level)] for j, level in zip(ids, keys % self.n_generated + 1)]

    def keys_of(self, feature_ids) -> np.ndarray:
        pairs = np.asarray(feature_ids, dtype=np.int64).reshape(-1, 2)
        return self.store.columns_of(pairs[:, 0]) * self.n_generated + pairs[:, 1] - 1

    # ---------------------------------------------------------- scoring
    def find_candidates(self, weights, k, excluded, run):
        """The ``k`` best features by ``||Σ_i a_i φ(x_ij)||²``; returns the
        keys of their generated columns (counter ``nnz``)."""
        excluded_units = sorted_unique(self.units_of(excluded))
        blocks = self.candidate_blocks(run.block_size)
        best = run.topk(blocks, _score_kernel_block, k,
                        shared={"store": self.store, "weights": weights,
                                "excluded": excluded_units, "k": k, "kind": self.kind})
        G = self.n_generated
        ptr = np.arange(0, (self.store.n_features + 1) * G, G, dtype=np.int64)
        return expand_groups(best, ptr)

    def row_max_squares(self, *, block_size=None, scheduler=None,
                        num_workers=None) -> np.ndarray:
        """``max_{j,l} φ_l(x_ij)²`` of every row: one streamed pass."""
        from ultrafs.scoring.runner import run_block_tasks

        blocks = self.candidate_blocks(block_size)
        if not blocks:
            return np.zeros(self.n_samples)
        return run_block_tasks(blocks, _row_max_block, _maximum,
                               shared={"store": self.store, "kind": self.kind},
                               scheduler=scheduler, num_workers=num_workers)

    # ------------------------------------------------------ materialize
    def _expand(self, columns, levels, dtype, record):
        """Generated columns (column, level) of store columns ``columns``."""
        columns = np.asarray(columns, dtype=np.int64)
        unique, source = np.unique(columns, return_inverse=True)
        cols = self.store.read_columns(unique)
        data = _values(cols)
        _check_nonnegative(cols, data, self.kind, self.store)
        own = column_max(cols.indptr, data)
        ids = self.store.feature_ids(np.minimum(unique, max(self.store.n_features - 1, 0))) \
            if len(unique) else unique
        scale = np.array([self._scales.get(int(fid), own[t]) if unique[t] <
                          self.store.n_features else 0.0
                          for t, fid in enumerate(ids)], dtype=np.float64)
        if record:
            for t, fid in enumerate(ids):
                if unique[t] < self.store.n_features and int(fid) not in self._scales:
                    self._scales[int(fid)] = float(scale[t])
        indptr, indices, values = EXPAND_COLUMNS[self.kind](
            cols.indptr, cols.indices, np.asarray(data, dtype=np.float64), scale,
            source.astype(np.int64), np.asarray(levels, dtype=np.int64))
        return ColumnBlock(-1, indptr.astype(np.int64), indices.astype(np.int32),
                           values.astype(dtype))

    def materialize(self, keys, dtype=np.float64, payload=None) -> ColumnBlock:
        """The generated columns of ``keys``; records the scale of each
        column materialised (recorded in :meth:`spec` for prediction)."""
        keys = np.asarray(keys, dtype=np.int64)
        return self._expand(keys // self.n_generated, keys % self.n_generated + 1,
                            dtype, record=True)

    def materialize_ids(self, feature_ids, dtype=np.float64) -> ColumnBlock:
        pairs = np.asarray(feature_ids, dtype=np.int64).reshape(-1, 2)
        columns = self.store.columns_of(pairs[:, 0])
        columns = np.where((columns < 0) | (columns >= self.store.n_features),
                           self.store.n_features, columns)
        return self._expand(columns, pairs[:, 1], dtype, record=False)

    def absent_ids(self, feature_ids) -> list:
        pairs = np.asarray(feature_ids, dtype=np.int64).reshape(-1, 2)
        columns = self.store.columns_of(pairs[:, 0])
        absent = (columns < 0) | (columns >= self.store.n_features)
        return [fid for fid, out in zip(feature_ids, absent) if out]

    def adopt(self, fitted) -> None:
        """Quantise like ``fitted`` (the space a model was fitted in): take
        its recorded scales (held-out scoring of ``C="auto"``)."""
        self._scales = dict(fitted._scales)


def _maximum(parts):
    return np.maximum.reduce(parts) if len(parts) > 1 else parts[0]


def _scale_pairs(scales):
    try:
        pairs = [(int(fid), float(s)) for fid, s in scales]
    except (TypeError, ValueError):
        raise ParameterError("scales must be [feature id, scale] pairs") from None
    return pairs


@register_feature_space
class HIKFeatures(AdditiveKernelFeatures):
    """Histogram intersection kernel: q = 100 unary levels per feature."""

    kind = "hik"
    spec_params = ("scales",)

    def spec(self) -> dict:
        """``{"kind": "hik", "scales": [[feature id, scale], ...]}``: the scale
        of every feature materialised so far (the model's features)."""
        return {"kind": self.kind,
                "scales": [[fid, s] for fid, s in sorted(self._scales.items())]}

    @classmethod
    def check_spec_value(cls, name, value):
        if name != "scales" or not isinstance(value, list):
            raise ValueError("must be a list of [feature id, scale] pairs")
        for pair in value:
            if not (isinstance(pair, list) and len(pair) == 2 and _is_int(pair[0])
                    and pair[0] >= 0 and isinstance(pair[1], (int, float))
                    and not isinstance(pair[1], bool) and np.isfinite(pair[1])
                    and pair[1] >= 0):
                raise ValueError("must be a list of [feature id, scale >= 0] pairs")
        return value


class _HomogeneousMap(AdditiveKernelFeatures):
    """A Vedaldi–Zisserman map: no per-feature parameter."""

    def __init__(self, store):
        super().__init__(store)


@register_feature_space
class Chi2Features(_HomogeneousMap):
    """χ² kernel ``2xz/(x+z)``: 11 columns per feature."""

    kind = "chi2"


@register_feature_space
class IntersectionFeatures(_HomogeneousMap):
    """Intersection kernel ``min(x, z)`` by its homogeneous map: 11 columns."""

    kind = "intersection"


@register_feature_space
class JSFeatures(_HomogeneousMap):
    """Jensen–Shannon kernel: 11 columns per feature."""

    kind = "js"


#: kernel name -> feature space class
ADDITIVE_KERNELS = {cls.kind: cls for cls in (HIKFeatures, Chi2Features,
                                              IntersectionFeatures, JSFeatures)}
assert set(ADDITIVE_KERNELS) == set(MAPS)


def make_additive_space(store, kernel):
    """The feature space of an additive ``kernel`` over ``store``."""
    cls = ADDITIVE_KERNELS.get(kernel) if isinstance(kernel, str) else None
    if cls is None:
        raise ParameterError(f"kernel must be one of {', '.join(ADDITIVE_KERNELS)}, "
                             f"got {kernel!r}")
    return cls(store)
