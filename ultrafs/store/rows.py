"""A store seen through a subset of its rows (validation splits, CV folds).

:class:`RowSubsetStore` wraps any :class:`~ultrafs.store.base.ColumnStore`
and exposes only the rows given, renumbered ``0 .. len(rows) - 1`` in
increasing order of their row numbers in the inner store.  Every read goes
to the inner store and drops the other rows block by block
(:func:`~ultrafs.kernels.sparse_ops.csc_take_rows`), so a subset costs no
copy of the data: memory is O(n) for the row map plus the block being
read.  It pickles as the inner store plus the row numbers, so it works with
every scheduler.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels.sparse_ops import csc_take_rows, csc_take_rows_pattern
from ultrafs.store.base import ColumnBlock, ColumnStore, StoreWrapper

__all__ = ["RowSubsetStore", "rows_in_memory", "MATERIALIZE_MAX_NNZ",
           "SCATTER_MIN_SHARE"]

#: a row subset of a store with at most this many entries is copied into
#: memory once (:func:`rows_in_memory`), about 100 MB of float64 data and
#: int32 rows: the repeated fits of a C search then skip the row filter
#: on every pass
MATERIALIZE_MAX_NNZ = 1 << 23

#: a scoring pass over a subset that keeps at least this share of the rows
#: reads the inner store, with zero weights on the other rows
#: (:meth:`RowSubsetStore.scattered`), instead of dropping them block by
#: block: on imdb50k's hold-out training rows (a Zarr store of 8.7M
#: entries, 80% of the rows kept) one pass takes 0.056 s instead of 0.153 s
#: (bench/c_auto_cost.py --passes)
SCATTER_MIN_SHARE = 0.5


class RowSubsetStore(StoreWrapper):
    """The rows ``rows`` of ``inner``.

    Parameters
    ----------
    inner : ColumnStore
    rows : array of int
        Distinct row numbers of ``inner`` (any order: they are sorted).

    Notes
    -----
    ``classes`` and ``target_type`` are the inner store's, so a model fitted
    on a subset speaks the same labels as one fitted on the whole store
    (a subset may lack a class: stratified splits avoid it).
    """

    def __init__(self, inner: ColumnStore, rows):
        if not isinstance(inner, ColumnStore):
            raise TypeError(f"inner must be a ColumnStore, got {type(inner).__name__}")
        super().__init__(inner)
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        if rows.size == 0:
            raise ParameterError("a row subset needs at least one row")
        if rows[0] < 0 or rows[-1] >= inner.n_samples:
            raise ParameterError(
                f"row numbers must lie in [0, {inner.n_samples}), got "
                f"[{rows[0]}, {rows[-1]}]")
        self._rows = rows
        self._rows.flags.writeable = False
        self._row_map = None
        self._nnz = None

    def __reduce__(self):
        return (type(self), (self._inner, self._rows))

    def __repr__(self):
        return f"RowSubsetStore({self._inner!r}, {len(self._rows)} rows)"

    @property
    def rows(self) -> np.ndarray:
        """Row numbers kept (sorted, read-only)."""
        return self._rows

    def _map(self) -> np.ndarray:
        if self._row_map is None:
            row_map = np.full(self._inner.n_samples, -1, dtype=np.int64)
            row_map[self._rows] = np.arange(len(self._rows), dtype=np.int64)
            self._row_map = row_map
        return self._row_map

    # --------------------------------------------------------- attributes
    @property
    def n_samples(self) -> int:
        return int(len(self._rows))

    @property
    def nnz(self) -> int:
        """Stored entries of the kept rows (one pass on first use)."""
        if self._nnz is None:
            bounds = self.default_block_bounds()
            self._nnz = sum(self.read_range(int(lo), int(hi)).nnz
                            for lo, hi in zip(bounds[:-1], bounds[1:]))
        return self._nnz

    def read_targets(self) -> np.ndarray:
        targets = np.asarray(self._inner.read_targets())[self._rows]
        targets.flags.writeable = False
        return targets

    # --------------------------------------------------------------- reads
    def _take(self, block: ColumnBlock) -> ColumnBlock:
        indptr = np.asarray(block.indptr, dtype=np.int64)
        if block.data is None:
            indptr, indices = csc_take_rows_pattern(indptr, block.indices, self._map())
            return ColumnBlock(block.first_column, indptr, indices, None)
        indptr, indices, data = csc_take_rows(indptr, block.indices, block.data,
                                              self._map())
        return ColumnBlock(block.first_column, indptr, indices, data)

    def read_range(self, start: int, stop: int) -> ColumnBlock:
        return self._take(self._inner.read_range(start, stop))

    # ----------------------------------------------- passes over the inner store
    @property
    def scatters(self) -> bool:
        """Whether passes read the inner store (:meth:`scattered`): the subset
        keeps at least ``SCATTER_MIN_SHARE`` of its rows."""
        return len(self._rows) >= SCATTER_MIN_SHARE * self._inner.n_samples

    def scattered(self, weights):
        """``weights`` (one row per kept row) over the inner store's rows, zero
        on the others; None when the subset keeps fewer than
        ``SCATTER_MIN_SHARE`` of them.

        A column's weighted sum over the inner rows then adds only exact
        zeros for the rows not kept, in the same row order: the sum, bit for
        bit, of the subset's column.  A scoring pass so reads the inner
        store without dropping rows block by block.
        """
        if not self.scatters:
            return None
        weights = np.asarray(weights, dtype=np.float64)
        out = np.zeros((self._inner.n_samples,) + weights.shape[1:], dtype=np.float64)
        out[self._rows] = weights
        return out

    def kept_entries(self, rows, values):
        """The entries of an inner column (``rows``, ``values`` or None) on
        kept rows, renumbered as this subset's rows."""
        mapped = self._map()[np.asarray(rows, dtype=np.int64)]
        keep = mapped >= 0
        return (mapped[keep].astype(np.int32),
                None if values is None else np.asarray(values)[keep])

    def read_columns(self, columns) -> ColumnBlock:
        return self._take(self._inner.read_columns(columns))


def rows_in_memory(store: ColumnStore, rows):
    """The rows ``rows`` of ``store``: in memory if small, else a :class:`RowSubsetStore`.

    The copy, an :class:`~ultrafs.store.memory.InMemoryStore`, has the same
    columns, ids, dtype, targets and classes as the subset view, so every
    fit on it is the same as on the view (results do not depend on how the
    columns are blocked); it is made when the store holds at most
    :data:`MATERIALIZE_MAX_NNZ` entries.
    """
    from ultrafs.store.memory import InMemoryStore

    view = RowSubsetStore(store, rows)
    if store.nnz > MATERIALIZE_MAX_NNZ:
        return view
    block = view.read_range(0, view.n_features)
    data = block.values(view.dtype)
    targets = np.array(view.read_targets(), dtype=np.float64)
    return InMemoryStore.from_csc_arrays(
        block.indptr, block.indices, data, view.n_samples, None, view.classes,
        id_offset=view.id_offset, targets=targets, target_type=view.target_type,
        column_ids=view.column_ids, id_space=view.id_space)
