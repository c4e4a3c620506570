"""Statistics/filter pass: per-feature statistics of a store's columns.

One streamed pass over the store's column blocks, with the machinery of
the scoring passes (:mod:`ultrafs.scoring.runner`: one Dask task per
block, a tree merge, any scheduler).  Each task reads its block and
computes, per column, the statistics asked for by name:

* ``nnz``: number of nonzero values (int64), shape (p,);
* ``sum``: ``Σ_i x_ij``, shape (p,);
* ``sum_squares``: ``Σ_i x_ij²`` (the squared Euclidean norm), shape (p,);
* ``centred_sum_squares``: ``Σ_i (x_ij − x̄_j)²``, two passes over each
  column inside its task (no cancellation for columns with large offsets;
  Slores's projected norms), shape (p,);
* ``min`` / ``max``: smallest / largest of the column's n values, implicit
  zeros included (0 for an empty column), shape (p,);
* ``weighted_sum``: ``Σ_i w_i x_ij`` for the ``weights`` given, shape (p,)
  or (p, K) for an (n, K) weight matrix

(float64 unless said otherwise; p described columns).  Sums run over a
column's nonzeros in row order with float64 accumulation, so every value
is identical for any block size, scheduler, worker count and block order; ``weighted_sum`` equals the column sums of
the worst-case analysis bit for bit.

Optionally a *keep rule* (a picklable callable, e.g. a module-level
function or a :func:`functools.partial` of one) is applied inside each
task to that block's statistics and returns a boolean keep-mask: Slores
safe screening, KKT checks and GSR-FS's streamed Gram products are such
rules.

These statistics are O(m) outputs by nature: they describe the columns of
the store, i.e. the **linear** feature space (virtual spaces such as degree
2 have no column-wise statistics of this kind).  With a keep rule and
``output="kept"`` only the kept columns and their statistics come back,
O(kept) memory in the driver.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels.scoring import (column_sums, column_sums_binary,
                                     column_sums_multi, column_sums_multi_binary)
from ultrafs.kernels.statistics import (column_centred_squares,
                                        column_centred_squares_binary,
                                        column_moments, column_moments_binary)
from ultrafs.scoring.runner import BlockRunner

__all__ = ["STATISTICS", "DEFAULT_STATISTICS", "FeatureStatistics",
           "feature_statistics"]

#: statistics the pass can compute, by name
STATISTICS = ("nnz", "sum", "sum_squares", "min", "max", "weighted_sum",
              "centred_sum_squares")
#: those computed when none are named (all but the weighted sums)
DEFAULT_STATISTICS = ("nnz", "sum", "sum_squares", "min", "max")
_MOMENTS = ("nnz", "sum", "sum_squares", "min", "max")
_OUTPUTS = ("all", "kept")


@dataclass(frozen=True)
class FeatureStatistics:
    """Result of :func:`feature_statistics`.

    Attributes
    ----------
    columns : int64 array, shape (p,)
        Column numbers (keys of the linear feature space) described,
        increasing: all m columns, or the kept ones for ``output="kept"``.
    values : dict
        Statistic name -> array of shape (p,) (``weighted_sum`` with K
        classes: (p, K)); see the module docstring.
    keep : bool array, shape (p,), or None
        The keep-mask of the rule for ``output="all"``; None without a
        rule or for ``output="kept"`` (every column returned is kept).
    n_features : int
        m, the store's column count.
    nnz : int
        Stored entries streamed.
    n_blocks : int
        Block tasks run.
    seconds : float
    """

    columns: np.ndarray
    values: dict
    keep: np.ndarray | None
    n_features: int
    nnz: int
    n_blocks: int
    seconds: float = 0.0

    def __getitem__(self, name) -> np.ndarray:
        return self.values[name]

    def __len__(self):
        return len(self.columns)

    @property
    def kept(self) -> np.ndarray:
        """Column numbers kept by the rule (all described columns if none)."""
        return self.columns if self.keep is None else self.columns[self.keep]


# --------------------------------------------------------------------- tasks
def _block_statistics(block, store, names, weights, keep, output):
    """Task: the statistics (and keep-mask) of one column range."""
    start, stop = block
    # the block lives in this thread's reused buffers until its next read:
    # every statistic below is a fresh array, nothing keeps ``cols``
    cols = store.read_range_transient(start, stop)
    stats = {}
    if keep is not None:        # the rule sees its block's column numbers
        stats["columns"] = np.arange(start, stop, dtype=np.int64)
    if any(name in _MOMENTS for name in names):
        if cols.data is None:
            moments = column_moments_binary(cols.indptr, store.n_samples)
        else:
            moments = column_moments(cols.indptr, cols.data, store.n_samples)
        for name, value in zip(_MOMENTS, moments):
            if name in names:
                stats[name] = value
    if "centred_sum_squares" in names:
        stats["centred_sum_squares"] = (
            column_centred_squares_binary(cols.indptr, store.n_samples)
            if cols.data is None else
            column_centred_squares(cols.indptr, cols.data, store.n_samples))
    if "weighted_sum" in names:
        if weights.ndim == 2:
            stats["weighted_sum"] = (
                column_sums_multi_binary(cols.indptr, cols.indices, weights)
                if cols.data is None else
                column_sums_multi(cols.indptr, cols.indices, cols.data, weights))
        else:
            stats["weighted_sum"] = (
                column_sums_binary(cols.indptr, cols.indices, weights)
                if cols.data is None else
                column_sums(cols.indptr, cols.indices, cols.data, weights))
    mask = None
    if keep is not None:
        mask = np.asarray(keep(dict(stats)))
        if mask.dtype != np.bool_ or mask.shape != (stop - start,):
            raise ParameterError(
                f"keep rule must return a bool array of shape ({stop - start},), "
                f"got {mask.dtype} {mask.shape}")
        if output == "kept":
            stats = {name: value[mask] for name, value in stats.items()}
            mask = None
    return {"pieces": [(start, stats, mask)], "nnz": cols.nnz}


def _merge_statistics(parts):
    """Merge partial results: pieces ordered by first column, nnz summed."""
    pieces, nnz = [], 0
    for part in parts:
        pieces.extend(part["pieces"])
        nnz += part["nnz"]
    pieces.sort(key=lambda piece: piece[0])
    return {"pieces": pieces, "nnz": nnz}


# ------------------------------------------------------------------ driver
def _store_of(source):
    from ultrafs.store.base import ColumnStore

    if isinstance(source, ColumnStore):
        return source
    kind = getattr(source, "kind", None)
    if kind == "linear" and isinstance(getattr(source, "store", None), ColumnStore):
        return source.store
    raise ParameterError(
        "the statistics pass describes a store's columns: pass a ColumnStore "
        f"or a linear feature space, not {kind or type(source).__name__!r}")


def _check_weights(weights, n_samples):
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if weights.ndim not in (1, 2) or weights.shape[0] != n_samples \
            or (weights.ndim == 2 and weights.shape[1] < 1):
        raise ParameterError(f"weights must have shape ({n_samples},) or "
                             f"({n_samples}, K), got {weights.shape}")
    return weights


def feature_statistics(source, statistics=DEFAULT_STATISTICS, *, weights=None,
                       keep=None, output="all", block_size=None, scheduler=None,
                       num_workers=None, split_every=8,
                       progress_label=None) -> FeatureStatistics:
    """Per-column statistics of a store, in one streamed pass.

    Parameters
    ----------
    source : ColumnStore or LinearFeatures
        The columns described (a linear feature space stands for its store).
    statistics : sequence of str
        Names from :data:`STATISTICS` (see the module docstring).
        ``"weighted_sum"`` needs ``weights``.
    weights : float64 array, shape (n_samples,) or (n_samples, K), optional
        The ``w`` of ``weighted_sum`` (e.g. ``alpha * y``, or per-class
        dual weights).
    keep : callable, optional
        ``keep(stats) -> bool array of shape (b,)``, run inside each task
        on one block of b columns; ``stats`` maps ``"columns"`` (int64
        column numbers) and every requested statistic to that block's
        arrays.  Must be picklable for the processes scheduler and
        clusters (a module-level function or a ``functools.partial`` of
        one).
    output : {"all", "kept"}
        ``"all"``: statistics of all m columns (O(m)), plus the keep-mask
        when there is a rule.  ``"kept"`` (needs ``keep``): only the kept
        columns and their statistics (O(kept)).
    block_size : int, optional
        Columns per task; None uses the store's partition.
    scheduler, num_workers, split_every, progress_label
        As for :func:`ultrafs.scoring.worst_case.worst_case_analysis`.

    Returns
    -------
    stats : FeatureStatistics
        Identical (bit for bit) for any block size, scheduler and worker
        count.

    Raises
    ------
    ParameterError
        One line for an unknown statistic, weights of the wrong shape (or
        given without ``"weighted_sum"``), a keep rule that is not callable
        or returns something other than a bool mask of its block, or an
        unknown ``output``.
    """
    store = _store_of(source)
    names = tuple(statistics) if not isinstance(statistics, str) else (statistics,)
    unknown = [name for name in names if name not in STATISTICS]
    if unknown or not names or len(set(names)) != len(names):
        raise ParameterError(
            f"statistics must be distinct names among {', '.join(STATISTICS)}; "
            f"got {list(names)!r}")
    if ("weighted_sum" in names) != (weights is not None):
        raise ParameterError("'weighted_sum' and weights go together: "
                             + ("no weights given" if weights is None
                                else "weights given without 'weighted_sum'"))
    if weights is not None:
        weights = _check_weights(weights, store.n_samples)
    if keep is not None and not callable(keep):
        raise ParameterError(f"keep must be callable, got {keep!r}")
    if output not in _OUTPUTS:
        raise ParameterError(f"output must be one of {', '.join(_OUTPUTS)}, "
                             f"got {output!r}")
    if output == "kept" and keep is None:
        raise ParameterError('output="kept" needs a keep rule')

    runner = BlockRunner(scheduler, num_workers, split_every, block_size,
                         progress_label)
    bounds = store.block_bounds(block_size)
    blocks = [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    started = time.perf_counter()
    if blocks:
        merged = runner(blocks, _block_statistics, _merge_statistics,
                        {"store": store, "names": names, "weights": weights,
                         "keep": keep, "output": output})
    else:
        merged = {"pieces": [], "nnz": 0}
    seconds = time.perf_counter() - started
    return _assemble(merged, names, weights, keep, output, store.n_features,
                     runner.n_tasks, seconds)


def _assemble(merged, names, weights, keep, output, n_features, n_blocks, seconds):
    pieces = merged["pieces"]
    n_classes = weights.shape[1] if weights is not None and weights.ndim == 2 else None

    def joined(name, dtype):
        parts = [stats[name] for _, stats, _ in pieces]
        if parts:
            return np.concatenate(parts)
        shape = (0,) if name != "weighted_sum" or n_classes is None else (0, n_classes)
        return np.zeros(shape, dtype=dtype)

    if keep is None:            # every column, in order
        columns = np.arange(n_features, dtype=np.int64)
    else:
        columns = joined("columns", np.int64)
    values = {name: joined(name, np.int64 if name == "nnz" else np.float64)
              for name in names}
    mask = None
    if keep is not None and output == "all":
        mask = np.concatenate([m for _, _, m in pieces]) if pieces \
            else np.zeros(0, dtype=bool)
    return FeatureStatistics(columns, values, mask, int(n_features),
                             int(merged["nnz"]), int(n_blocks), seconds)
