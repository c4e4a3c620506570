"""Gram operator over a store's columns, streamed block by block.

:class:`StoreGramOperator` implements the interface of
:mod:`ultrafs.solvers.gram_operators` for data that does not fit in memory:
every product is one pass of Dask tasks over the store's column blocks
(:func:`ultrafs.scoring.runner.run_block_tasks`, any scheduler), each task
reading its block(s) itself and calling the serial kernels of
:mod:`ultrafs.kernels.weighted_gram` and :mod:`ultrafs.kernels.sparse_ops`:

``sample_gram(d)``
    a task per block adds ``X_b diag(d_b) X_bᵀ`` (upper triangle) into a
    fresh ``n_samples x n_samples`` array (blocks whose weights are all 0
    are not read); the merge sums them in place, two at a time (a fan-in
    of 2 keeps few such arrays alive); the driver mirrors the sum.
``feature_gram(s)``
    a task per pair of blocks ``a <= b`` reads both and returns the tile
    ``X_aᵀ diag(s) X_b`` (a diagonal task its upper triangle and
    ``X_aᵀ s``); the merge collects the tiles, the driver places them in
    the upper triangle and mirrors it.  Every block is read once per tile
    of its row and column of tiles: the pass reads the data ``t`` times
    over for ``t`` blocks (few large blocks read least).
``rmatmat(V)``
    a task per block returns ``X_bᵀ V``, placed at its rows.
``matmat(W)``
    a task per block returns ``X_b W_b`` (None where ``W_b`` is 0), summed
    in place.

Tiles and row slices are exact; the sums of ``sample_gram`` and ``matmat``
follow the reduction tree, which depends on the blocks and ``split_every``
only: results are the same bytes on every scheduler, and agree with the
in-memory operators to rounding for any block size.  Nothing is held in
proportion to the number of features but the outputs (and the ``t`` block
descriptors).

The operator may cover a subset of the store's columns, in any order
(``columns``); :meth:`StoreGramOperator.read_columns_csc` reads columns into
memory as raw CSC arrays (what the in-memory
:class:`~ultrafs.solvers.sparse_gram.SparseGramOperator` is built from, by
the methods layer: this layer does not import the solvers).
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels import sparse_ops
from ultrafs.kernels import weighted_gram as _wg
from ultrafs.scoring.runner import run_block_tasks

__all__ = ["StoreGramOperator"]


# --------------------------------------------------------------------- reads
def _read(block, store, transient):
    """``(indptr, indices, data)`` of a block descriptor ``(lo, hi, cols)``.

    ``cols`` None: the store's columns ``lo:hi`` (``transient``: in the
    thread's work buffers, valid until its next transient read); else the
    store columns ``cols``.  Implicit ones are materialised (float64).
    """
    lo, hi, cols = block
    if cols is None:
        blk = (store.read_range_transient(lo, hi) if transient
               else store.read_range(lo, hi))
    else:
        blk = store.read_columns(cols)
    data = blk.data if blk.data is not None else blk.values(np.float64)
    return blk.indptr, blk.indices, data


# --------------------------------------------------------------------- tasks
def _sample_gram_task(block, store, d):
    lo, hi, _ = block
    d_b = d[lo:hi]
    if not d_b.any():
        return None
    out = np.zeros((store.n_samples, store.n_samples), dtype=np.float64)
    return _wg.csc_sample_gram_add(*_read(block, store, True), d_b, out)


def _pair_gram_task(pair, store, s):
    a, b = pair
    if b is None:       # a diagonal tile
        tile = np.empty((a[1] - a[0],) * 2, dtype=np.float64)
        return [(a[0], a[0], *_wg.csc_feature_gram(*_read(a, store, True), s, tile))]
    arrays_b = _read(b, store, False)       # a fresh block: A's read is transient
    arrays_a = _read(a, store, True)
    tile = np.empty((a[1] - a[0], b[1] - b[0]), dtype=np.float64)
    _wg.csc_pair_gram(*arrays_a, *arrays_b, s, False, tile)
    return [(a[0], b[0], tile, None)]


def _rmatmat_task(block, store, V):
    indptr, indices, data = _read(block, store, True)
    c = V.shape[1]
    out = sparse_ops.csc_rmatmat(indptr, indices, data, V.ravel(), c)
    return [(block[0], out.reshape(len(indptr) - 1, c))]


def _matmat_task(block, store, W):
    lo, hi, _ = block
    W_b = W[lo:hi]
    if not W_b.any():
        return None
    c = W.shape[1]
    out = sparse_ops.csc_matmat(*_read(block, store, True), W_b.ravel(), c,
                                store.n_samples)
    return out.reshape(store.n_samples, c)


# -------------------------------------------------------------------- merges
def _sum_in_place(parts):
    """Sum of the parts that are not None, in order, into the first (each part
    is a fresh task result consumed by this merge only); None if none."""
    total = None
    for part in parts:
        if part is None:
            continue
        if total is None:
            total = part
        else:
            total += part
    return total


def _concatenate(parts):
    """The parts' pieces in one list (pieces are placed by their offsets)."""
    return [piece for part in parts for piece in part]


# ----------------------------------------------------------------- checks
def _vector(w, n, what):
    """``w`` as a C-contiguous float64 ``(n,)`` of finite values >= 0."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (n,) or not np.isfinite(w).all() or (n > 0 and w.min() < 0.0):
        raise ParameterError(f"{what} must be finite and non-negative, of shape "
                             f"({n},); got shape {w.shape}")
    return w


def _right_side(V, n, what):
    """``V`` as a C-contiguous float64 matrix of ``n`` rows (a vector: one column)."""
    V = np.asarray(V, dtype=np.float64)
    V = V.reshape(-1, 1) if V.ndim == 1 else V
    if V.ndim != 2 or V.shape[0] != n:
        raise ParameterError(f"{what} must have {n} rows, got shape {V.shape}")
    return np.ascontiguousarray(V)


def _positions(cols, n, what):
    """Column numbers ``cols`` as int64, each in ``0..n - 1``."""
    cols = np.asarray(cols)
    if cols.size == 0:
        return np.zeros(0, dtype=np.int64)
    if cols.ndim != 1 or not np.issubdtype(cols.dtype, np.integer):
        raise ParameterError(f"{what} must be a 1-D array of integers")
    cols = cols.astype(np.int64)
    if cols.min() < 0 or cols.max() >= n:
        raise ParameterError(f"{what} must lie in 0..{n - 1}")
    return cols


class StoreGramOperator:
    """Gram operator over a store's columns, one streamed pass per product.

    Parameters
    ----------
    store : ColumnStore
    columns : array-like of int, optional
        Store column numbers the operator covers, in this order (repeats
        allowed); None (the default): every column of the store.
    block_size : int, optional
        Columns per block task.  None: the store's own blocks
        (``store.block_bounds()``); for a subset, consecutive columns that
        fall in the same store block form a task.
    scheduler, num_workers, split_every
        See :func:`ultrafs.scoring.runner.run_block_tasks` (``sample_gram``
        merges with a fan-in of at most 2).

    Attributes
    ----------
    n_samples, n_features : int
    n_passes : int
        Products taken (one streamed pass each).
    blocks : list of (lo, hi, cols)
        The block descriptors: operator columns ``lo:hi``, which are the
        store columns ``lo:hi`` (``cols`` None) or ``cols``.
    """

    def __init__(self, store, columns=None, *, block_size=None, scheduler=None,
                 num_workers=None, split_every=8):
        if block_size is not None and (isinstance(block_size, bool)
                                       or int(block_size) != block_size
                                       or block_size < 1):
            raise ParameterError(f"block_size must be an integer >= 1, got {block_size!r}")
        self.store = store
        self.block_size = None if block_size is None else int(block_size)
        self.scheduler = scheduler
        self.num_workers = num_workers
        self.split_every = split_every
        self.n_samples = int(store.n_samples)
        self.n_passes = 0
        if columns is None:
            self._columns = None
            self.n_features = int(store.n_features)
            bounds = store.block_bounds(self.block_size)
            self.blocks = [(int(lo), int(hi), None)
                           for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
        else:
            self._columns = _positions(columns, int(store.n_features), "columns")
            self._columns.flags.writeable = False
            self.n_features = len(self._columns)
            self.blocks = self._subset_blocks()

    def _subset_blocks(self):
        """Descriptors of the column subset: runs of ``block_size`` columns,
        or of consecutive columns inside one store block."""
        cols, n = self._columns, len(self._columns)
        if self.block_size is not None:
            cuts = np.arange(0, n, self.block_size)
        else:
            home = np.searchsorted(self.store.block_bounds(), cols, side="right")
            cuts = np.flatnonzero(np.diff(home, prepend=-1))
        cuts = np.append(cuts, n).astype(np.int64)
        return [(int(lo), int(hi), cols[lo:hi].copy()) for lo, hi in zip(cuts[:-1], cuts[1:])
                if hi > lo]

    def _run(self, blocks, task, merge, shared, split_every=None):
        self.n_passes += 1
        return run_block_tasks(blocks, task, merge, shared=shared,
                               scheduler=self.scheduler, num_workers=self.num_workers,
                               split_every=(self.split_every if split_every is None
                                            else split_every))

    def feature_gram(self, s):
        """``(Xᵀ diag(s) X, Xᵀ s)``: float64, ``(n_features, n_features)`` and
        ``(n_features,)``."""
        s = _vector(s, self.n_samples, "sample weights")
        p = self.n_features
        gram, xs = np.zeros((p, p), dtype=np.float64), np.zeros(p, dtype=np.float64)
        pairs = [(a, None if b is a else b) for i, a in enumerate(self.blocks)
                 for b in self.blocks[i:]]
        if not pairs:
            self.n_passes += 1
            return gram, xs
        tiles = self._run(pairs, _pair_gram_task, _concatenate, {"store": self.store, "s": s})
        while tiles:
            row, col, tile, sums = tiles.pop()
            gram[row:row + tile.shape[0], col:col + tile.shape[1]] = tile
            if sums is not None:
                xs[row:row + len(sums)] = sums
        return _wg.mirror_upper(gram), xs

    def sample_gram(self, d):
        """``X diag(d) Xᵀ``: float64 ``(n_samples, n_samples)``."""
        d = _vector(d, self.n_features, "feature weights")
        total = None
        if self.blocks:
            total = self._run(self.blocks, _sample_gram_task, _sum_in_place,
                              {"store": self.store, "d": d},
                              split_every=min(int(self.split_every or 2), 2))
        else:
            self.n_passes += 1
        if total is None:
            return np.zeros((self.n_samples, self.n_samples), dtype=np.float64)
        return _wg.mirror_upper(total)

    def rmatmat(self, V):
        """``Xᵀ V``: float64 ``(n_features, c)`` (a vector ``V`` is one column)."""
        V = _right_side(V, self.n_samples, "V")
        out = np.zeros((self.n_features, V.shape[1]), dtype=np.float64)
        if not self.blocks:
            self.n_passes += 1
            return out
        pieces = self._run(self.blocks, _rmatmat_task, _concatenate,
                           {"store": self.store, "V": V})
        for row, piece in pieces:
            out[row:row + len(piece)] = piece
        return out

    def matmat(self, W):
        """``X W``: float64 ``(n_samples, c)`` (a vector ``W`` is one column)."""
        W = _right_side(W, self.n_features, "W")
        total = None
        if self.blocks:
            total = self._run(self.blocks, _matmat_task, _sum_in_place,
                              {"store": self.store, "W": W})
        else:
            self.n_passes += 1
        if total is None:
            return np.zeros((self.n_samples, W.shape[1]), dtype=np.float64)
        return total

    def _store_columns(self, cols):
        positions = _positions(cols, self.n_features, "column numbers")
        return positions if self._columns is None else self._columns[positions]

    def columns(self, cols) -> "StoreGramOperator":
        """The operator over the columns ``cols`` (in that order), still streamed.

        Same store and pass settings; ``cols`` are this operator's column
        numbers.
        """
        return StoreGramOperator(self.store, self._store_columns(cols),
                                 block_size=self.block_size, scheduler=self.scheduler,
                                 num_workers=self.num_workers,
                                 split_every=self.split_every)

    def read_columns_csc(self, cols=None):
        """Read columns into memory as raw CSC arrays (not a pass).

        Parameters
        ----------
        cols : array-like of int, optional
            This operator's column numbers, in the order wanted; None: all.

        Returns
        -------
        indptr : ndarray of int64, shape (len(cols) + 1,)
        indices : ndarray of int32, shape (nnz,)
            Rows, increasing within each column.
        data : ndarray of float64, shape (nnz,)
        n_rows : int
            ``n_samples``.
        """
        if cols is None:
            cols = np.arange(self.n_features, dtype=np.int64)
        block = self.store.read_columns(self._store_columns(cols))
        return (np.asarray(block.indptr, dtype=np.int64),
                np.asarray(block.indices, dtype=np.int32),
                block.values(np.float64), self.n_samples)
