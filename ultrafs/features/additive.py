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

- ``hik``: histogram intersection, q = 100 levels between 0 and the
  feature's largest value s_j on the training data (the scale is recorded
  in the model for every materialised feature: prediction quantises new
  data the same way); exact for the quantised values.  The kernels of
  :mod:`ultrafs.kernels.additive_maps` generate the unit map (values
  ``1/sqrt(q)``, the kernel of ``x / s_j``); on the raw scale (the
  default, ``normalize=False``) this space multiplies group j by
  ``sqrt(s_j)`` (:func:`hik_gains`), so that ``k(x, z) ~ min(x, z)``.
- ``chi2``, ``intersection``, ``js``: Vedaldi & Zisserman's maps of the
  homogeneous χ², intersection and Jensen–Shannon kernels, n = 5
  (2n + 1 = 11 columns per feature).

Parameters: ``q`` (HIK levels, 100 as in the paper), ``n`` (order of the
other maps, 5: 2n + 1 = 11 columns) and ``period`` (their sampling step
L, defaults in ``kernels/additive_maps.py: VZ_STEPS``); recorded in the
model's ``feature_space``.  Values must be >= 0 (histograms); a negative
value is refused in one line.  Keys: ``j * G + (l - 1)`` for generated column l of
column j; model ids ``[feature id, l]``.  Memory: one block's expansion
per task at most (the scores need none); nothing in proportion to m or m·G.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.features.base import FeatureSpace, is_integral, register_feature_space
from ultrafs.features.groups import expand_groups, sorted_unique
from ultrafs.kernels.additive_maps import (HIK_LEVELS, MAPS, VZ_ORDER, VZ_STEPS,
                                           expand_columns_hik, expand_columns_vz,
                                           row_max_norms_hik, row_max_norms_vz,
                                           vz_coefficients)
from ultrafs.kernels.additive_topk import (score_block_topk_hik_scaled,
                                           score_block_topk_multi_hik_scaled,
                                           score_block_topk_multi_vz, score_block_topk_vz)
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


#: largest q (HIK) and n (the other maps) accepted
MAX_HIK_LEVELS = 10_000
MAX_VZ_ORDER = 50


def hik_gains(scale, normalize) -> np.ndarray:
    """The squared factor of each HIK group: ones (``normalize``: the kernel
    of ``x / s_j``), else ``s_j`` (raw scale: ``k(x, z) ~ min(x, z)``; a
    column without a positive training value, ``s_j <= 0``, keeps 1)."""
    scale = np.asarray(scale, dtype=np.float64)
    if normalize:
        return np.ones(len(scale))
    return np.where(scale > 0, scale, 1.0)


def _score(cols, data, scale, weights, first, excluded, k, kmap):
    """The fused scoring kernel of map ``kmap`` (``("hik", q, normalize)`` or
    ``("vz", coef, step)``) on one block."""
    if kmap[0] == "hik":
        score = (score_block_topk_multi_hik_scaled if weights.ndim == 2
                 else score_block_topk_hik_scaled)
        return score(cols.indptr, cols.indices, data, scale, hik_gains(scale, kmap[2]),
                     weights, first, excluded, k, kmap[1])
    score = score_block_topk_multi_vz if weights.ndim == 2 else score_block_topk_vz
    return score(cols.indptr, cols.indices, data, weights, first, excluded, k,
                 kmap[1], kmap[2])


def _score_kernel_block(block, store, weights, excluded, k, kind, kmap):
    """Task: the ``k`` best feature groups of one column range."""
    start, stop = block
    cols = store.read_range_transient(start, stop)
    if cols.nnz == 0:
        return TopK(_EMPTY_KEYS, _EMPTY_SCORES, {"nnz": 0})
    data = _values(cols)
    _check_nonnegative(cols, data, kind, store)
    scale = column_max(cols.indptr, data)
    keys, scores = _score(cols, data, scale, weights, start, excluded,
                          min(int(k), stop - start), kmap)
    return TopK(keys, scores, {"nnz": cols.nnz})


def _row_max_block(block, store, kind, kmap):
    """Task: ``max_j ||φ(x_ij)||²`` over the block's columns j, per row: the
    squared norm of a value's group (the kernel's diagonal ``k(x, x)``),
    value by value, without expanding the block."""
    start, stop = block
    cols = store.read_range_transient(start, stop)
    out = np.zeros(store.n_samples, dtype=np.float64)
    if cols.nnz:
        data = _values(cols)
        _check_nonnegative(cols, data, kind, store)
        if kmap[0] == "hik":
            scale = column_max(cols.indptr, data)
            row_max_norms_hik(cols.indptr, cols.indices, data, scale,
                              hik_gains(scale, kmap[2]), out, kmap[1])
        else:
            row_max_norms_vz(cols.indices, data, out, kmap[1])
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
        self._scales = {}
        if scales is not None:
            self._scales = {int(fid): float(s) for fid, s in _scale_pairs(scales)}

    # ------------------------------------------------------------- ids
    @classmethod
    def id_key(cls, feature_id):
        """``[feature id, l]`` with ``l >= 1`` (:meth:`check_feature_ids`
        bounds l by the map's G)."""
        if not isinstance(feature_id, (list, tuple)) or len(feature_id) != 2 \
                or not all(is_integral(v) for v in feature_id):
            raise ValueError("must be a pair [feature id, generated column]")
        fid, level = (int(v) for v in feature_id)
        if fid < 0 or level < 1:
            raise ValueError("must be [feature id >= 0, l >= 1]")
        return (fid, level)

    @classmethod
    def check_feature_ids(cls, spec, feature_ids) -> None:
        """Every ``[feature id, l]`` has ``l <= G`` of the map ``spec`` names."""
        G = cls.generated_of_spec(spec)
        for k, fid in enumerate(feature_ids):
            if int(fid[1]) > G:
                raise ValueError(f"features[{k}] must be [feature id, l in 1..{G}] "
                                 f"(the {cls.kind} map has {G} columns)")

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
    def _kmap(self):
        if self.kind == "hik":
            return ("hik", int(self.q), bool(self.normalize))
        return ("vz", vz_coefficients(self.kind, int(self.n), float(self.period)),
                float(self.period))

    def find_candidates(self, weights, k, excluded, run):
        """The ``k`` best features by ``||Σ_i a_i φ(x_ij)||²``; returns the
        keys of their generated columns (counter ``nnz``)."""
        excluded_units = sorted_unique(self.units_of(excluded))
        blocks = self.candidate_blocks(run.block_size)
        best = run.topk(blocks, _score_kernel_block, k,
                        shared={"store": self.store, "weights": weights,
                                "excluded": excluded_units, "k": k, "kind": self.kind,
                                "kmap": self._kmap()})
        G = self.n_generated
        ptr = np.arange(0, (self.store.n_features + 1) * G, G, dtype=np.int64)
        return expand_groups(best, ptr)

    def row_max_squares(self, *, block_size=None, scheduler=None,
                        num_workers=None) -> np.ndarray:
        """``max_j ||φ(x_ij)||²`` of every row (one streamed pass): the
        largest squared norm of a group, not of one generated value.

        A group stands for one original value: its squared norm ``k(x, x)``
        (HIK: ``level / q`` in ``(0, 1]``; the VZ maps: about ``x``) is what
        ``x²`` is to a linear column, so ``C="scale"`` gives the kernel's
        groups the C a linear column of that size gets.  The largest
        generated value (HIK: ``1/q`` for any ``x > 0``) gave HIK
        ``C = DEFAULT_C_SCALE · q`` = 1000 on any data, which overfits
        (mnist 3-vs-8, k = 20: training accuracy 1.000, test 0.910 against
        0.945 at C = 10; ``bench/notes/24-hik.md``).
        """
        from ultrafs.scoring.runner import run_block_tasks

        blocks = self.candidate_blocks(block_size)
        if not blocks:
            return np.zeros(self.n_samples)
        return run_block_tasks(blocks, _row_max_block, _maximum,
                               shared={"store": self.store, "kind": self.kind,
                                       "kmap": self._kmap()},
                               scheduler=scheduler, num_workers=num_workers)

    # ------------------------------------------------------ materialize
    def _expand(self, columns, levels, dtype, record):
        """Generated columns (column, level) of store columns ``columns``."""
        columns = np.asarray(columns, dtype=np.int64)
        unique, source = np.unique(columns, return_inverse=True)
        cols = self.store.read_columns(unique)
        data = _values(cols)
        _check_nonnegative(cols, data, self.kind, self.store)
        # a column's scale: recorded (the fitted space's), else its own
        # largest value; absent columns (beyond the store) are empty
        scale = column_max(cols.indptr, data)
        present = np.flatnonzero(unique < self.store.n_features)
        for t, fid in zip(present, self.store.feature_ids(unique[present])):
            fid = int(fid)
            if fid in self._scales:
                scale[t] = self._scales[fid]
            elif record:
                self._scales[fid] = float(scale[t])
        levels = np.asarray(levels, dtype=np.int64)
        if len(levels) and (levels.min() < 1 or levels.max() > self.n_generated):
            raise ParameterError(f"generated column {int(levels.max())} of the "
                                 f"{self.kind} map, which has {self.n_generated}")
        kmap = self._kmap()
        values64 = np.asarray(data, dtype=np.float64)
        if kmap[0] == "hik":
            indptr, indices, values = expand_columns_hik(
                cols.indptr, cols.indices, values64, scale, source.astype(np.int64),
                levels, kmap[1])
            if not kmap[2]:
                # raw scale: output column o (of input column source[o])
                # times sqrt(s_j), so that φ(x)'φ(z) = min(v_x, v_z) s_j / q
                factor = np.sqrt(hik_gains(scale, False))[source]
                values = values * np.repeat(factor, np.diff(indptr))
        else:
            indptr, indices, values = expand_columns_vz(
                cols.indptr, cols.indices, values64, source.astype(np.int64), levels,
                kmap[1], kmap[2])
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
    """Histogram intersection kernel: q = 100 unary levels per feature.

    ``normalize=False`` (the default): ``φ(x)'φ(z) = min(v_x, v_z) s_j / q``,
    about ``min(x, z)``, the HIK of the raw values (each generated value
    ``sqrt(s_j / q)``): columns keep their relative scale, as linear
    features and the χ² / intersection maps do.  ``normalize=True``: the
    kernel of ``x / s_j`` (value ``1/sqrt(q)``), every column stretched to
    [0, 1] by its training maximum, which gives a rare column the weight
    of a frequent one; the map of model files written before issue 38
    (their spec has no ``normalize``).  ``bench/notes/24-hik.md``.
    """

    kind = "hik"
    spec_params = ("q", "scales", "normalize")
    #: the value of a spec parameter a model file may lack (files written
    #: before the parameter existed)
    spec_defaults = {"normalize": True}

    def __init__(self, store, q=HIK_LEVELS, scales=None, normalize=False):
        if isinstance(q, bool) or not isinstance(q, (int, np.integer, float)) \
                or q != int(q) or not 1 <= int(q) <= MAX_HIK_LEVELS:
            raise ParameterError(f"q (HIK levels) must be an integer in "
                                 f"1..{MAX_HIK_LEVELS}, got {q!r}")
        if not isinstance(normalize, (bool, np.bool_)):
            raise ParameterError(f"normalize (HIK) must be true or false, got "
                                 f"{normalize!r}")
        self.q = int(q)
        self.normalize = bool(normalize)
        self.n_generated = self.q
        super().__init__(store, scales)

    @classmethod
    def generated_of_spec(cls, spec) -> int:
        return int(spec.get("q", HIK_LEVELS))

    @classmethod
    def from_spec(cls, store, spec):
        """:meth:`FeatureSpace.from_spec`; a spec without ``normalize`` (a
        file written before issue 38) is the normalised map it was fitted in."""
        return super().from_spec(store, {**cls.spec_defaults, **spec})

    def spec(self) -> dict:
        """``{"kind": "hik", "q": q, "scales": [[feature id, scale], ...],
        "normalize": bool}``: the scale of every feature materialised so far
        (the model's features)."""
        return {"kind": self.kind, "q": self.q,
                "scales": [[fid, s] for fid, s in sorted(self._scales.items())],
                "normalize": self.normalize}

    @classmethod
    def check_spec_value(cls, name, value):
        if name == "normalize":
            if not isinstance(value, bool):
                raise ValueError("must be true or false")
            return value
        if name == "q":
            if not is_integral(value) or not 1 <= value <= MAX_HIK_LEVELS:
                raise ValueError(f"must be an integer in 1..{MAX_HIK_LEVELS}")
            return value
        if not isinstance(value, list):
            raise ValueError("must be a list of [feature id, scale] pairs")
        for pair in value:
            if not (isinstance(pair, list) and len(pair) == 2 and is_integral(pair[0])
                    and pair[0] >= 0 and isinstance(pair[1], (int, float))
                    and not isinstance(pair[1], bool) and np.isfinite(pair[1])
                    and pair[1] >= 0):
                raise ValueError("must be a list of [feature id, scale >= 0] pairs")
        return value


class _HomogeneousMap(AdditiveKernelFeatures):
    """A Vedaldi–Zisserman map of order n (2n + 1 columns) and period L: no
    per-feature parameter."""

    spec_params = ("n", "period")

    def __init__(self, store, n=VZ_ORDER, period=None):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer, float)) \
                or n != int(n) or not 0 <= int(n) <= MAX_VZ_ORDER:
            raise ParameterError(f"n (the {self.kind} map's order) must be an integer "
                                 f"in 0..{MAX_VZ_ORDER}, got {n!r}")
        period = VZ_STEPS[self.kind] if period is None else period
        if isinstance(period, bool) or not isinstance(period, (int, float, np.floating)) \
                or not np.isfinite(period) or not period > 0:
            raise ParameterError(f"period (the {self.kind} map's sampling step L) must "
                                 f"be > 0, got {period!r}")
        self.n = int(n)
        self.period = float(period)
        self.n_generated = 2 * self.n + 1
        super().__init__(store)

    @classmethod
    def check_spec_value(cls, name, value):
        """A model file's ``n`` (an integer in 0..MAX_VZ_ORDER) or ``period``
        (a finite number > 0): the ranges the map itself takes."""
        if name == "n":
            if not is_integral(value) or not 0 <= value <= MAX_VZ_ORDER:
                raise ValueError(f"must be an integer in 0..{MAX_VZ_ORDER}, got {value!r}")
            return value
        value = super().check_spec_value(name, value)
        if not value > 0:
            raise ValueError(f"must be > 0, got {value!r}")
        return value

    @classmethod
    def generated_of_spec(cls, spec) -> int:
        return 2 * int(spec.get("n", VZ_ORDER)) + 1


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


def make_additive_space(store, kernel, **params):
    """The feature space of an additive ``kernel`` over ``store``, with its
    parameters (``q`` for HIK; ``n``, ``period`` for the others)."""
    cls = ADDITIVE_KERNELS.get(kernel) if isinstance(kernel, str) else None
    if cls is None:
        raise ParameterError(f"kernel must be one of {', '.join(ADDITIVE_KERNELS)}, "
                             f"got {kernel!r}")
    return cls.from_params(store, **params)
