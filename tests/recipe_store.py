"""The "add a store" recipe: a whole column-store backend in one file.

:class:`NpyBlockStore` reads a directory of ``.npy`` column blocks: each
block of contiguous columns is three arrays in CSC form
(``block_<k>.indptr.npy``, ``.indices.npy``, ``.data.npy``), the targets
``targets.npy``, and ``meta.json`` the shape, dtype, target type, classes
and block boundaries.  Blocks are memory-mapped read-only (``np.load(...,
mmap_mode="r")``): a read touches only the blocks holding its columns, and
a pickle is the path (workers reopen it).  :func:`write_npy_blocks`
writes one from a matrix.

Nothing under ``ultrafs/`` names this module: a ``NpyBlockStore`` object
is a :class:`~ultrafs.store.base.ColumnStore`, which is all
``ultrafs.api.fit``, the estimators, the model's prediction and evaluation
take (``tests/test_recipe_store.py`` checks each).  Opening one from a
*path* (``ultrafs select --data DIR``) would need
``ultrafs/store/detect.py`` to recognise ``meta.json`` (there is no store
registry); see docs/ARCHITECTURE.md ("Files a new member touches").
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ultrafs.errors import StoreFormatError
from ultrafs.store.base import ColumnBlock, ColumnStore, even_block_bounds, span_take
from ultrafs.store.targets import encode_targets

__all__ = ["NpyBlockStore", "write_npy_blocks", "FORMAT"]

#: the ``format`` recorded in ``meta.json``
FORMAT = "npy-blocks-1"


def write_npy_blocks(path, X, y, *, dtype=np.float64, block_columns=16, target=None):
    """Write ``X`` and ``y`` as a directory of ``.npy`` column blocks.

    Parameters
    ----------
    path : str or os.PathLike
        A directory to create (it must not exist).
    X : array-like or scipy.sparse matrix, shape (n_samples, n_features)
    y : array-like, shape (n_samples,)
        Targets (their type detected, or ``target``).
    dtype : {float32, float64}
    block_columns : int
        Columns per block (the last may hold fewer).
    target : None or str
        The target type (None: detected; see
        :func:`ultrafs.store.targets.encode_targets`).

    Returns
    -------
    NpyBlockStore
    """
    path = Path(path)
    X = sp.csc_matrix(X, dtype=dtype)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if len(y) != X.shape[0]:
        raise ValueError(f"y has {len(y)} rows, X has {X.shape[0]}")
    target_type, classes = encode_targets(y, where=str(path), target=target)
    bounds = even_block_bounds(X.shape[1], int(block_columns))
    path.mkdir(parents=True)
    for k in range(len(bounds) - 1):
        part = X[:, int(bounds[k]):int(bounds[k + 1])]
        np.save(path / f"block_{k}.indptr.npy", part.indptr.astype(np.int64))
        np.save(path / f"block_{k}.indices.npy", part.indices.astype(np.int32))
        np.save(path / f"block_{k}.data.npy", part.data.astype(dtype))
    np.save(path / "targets.npy", y)
    meta = {"format": FORMAT, "n_samples": int(X.shape[0]), "n_features": int(X.shape[1]),
            "nnz": int(X.nnz), "dtype": np.dtype(dtype).name, "target": target_type,
            "classes": [float(c) for c in classes], "bounds": bounds.tolist()}
    (path / "meta.json").write_text(json.dumps(meta))
    return NpyBlockStore(path)


class NpyBlockStore(ColumnStore):
    """A store over a directory written by :func:`write_npy_blocks`.

    Parameters
    ----------
    path : str or os.PathLike
    """

    id_offset = 0

    def __init__(self, path):
        self.path = Path(os.path.abspath(os.fspath(path)))
        try:
            meta = json.loads((self.path / "meta.json").read_text())
        except (OSError, ValueError) as exc:
            raise StoreFormatError(f"{self.path}: not an npy-blocks store ({exc})") from None
        if meta.get("format") != FORMAT:
            raise StoreFormatError(f"{self.path}: format {meta.get('format')!r}, "
                                   f"expected {FORMAT!r}")
        self.n_samples = int(meta["n_samples"])
        self.n_features = int(meta["n_features"])
        self.nnz = int(meta["nnz"])
        self.dtype = np.dtype(meta["dtype"])
        self._target_type = str(meta["target"])
        self._classes = np.asarray(meta["classes"], dtype=np.float64)
        self._classes.flags.writeable = False
        self._bounds = np.asarray(meta["bounds"], dtype=np.int64)
        self._blocks = {}

    # pickles as its path: a worker reopens the directory
    def __getstate__(self):
        return {"path": str(self.path)}

    def __setstate__(self, state):
        self.__init__(state["path"])

    def __repr__(self):
        return f"NpyBlockStore({str(self.path)!r})"

    # ----------------------------------------------------------- targets
    @property
    def target_type(self) -> str:
        return self._target_type

    @property
    def classes(self) -> np.ndarray:
        return self._classes

    def read_targets(self) -> np.ndarray:
        """The targets, float64, read-only (memory-mapped), shape (n_samples,)."""
        return np.load(self.path / "targets.npy", mmap_mode="r")

    # ------------------------------------------------------------ blocks
    def default_block_bounds(self) -> np.ndarray:
        return self._bounds.copy()

    def _block(self, k):
        """``(indptr, indices, data)`` of block ``k``, memory-mapped read-only."""
        arrays = self._blocks.get(k)
        if arrays is None:
            arrays = tuple(np.load(self.path / f"block_{k}.{part}.npy", mmap_mode="r")
                           for part in ("indptr", "indices", "data"))
            self._blocks[k] = arrays
        return arrays

    def read_range(self, start: int, stop: int) -> ColumnBlock:
        """Columns ``start:stop`` as one CSC block (fresh arrays).

        Parameters
        ----------
        start, stop : int
            ``0 <= start <= stop <= n_features``.

        Returns
        -------
        ColumnBlock
            ``indptr`` int64 (n_columns + 1,), ``indices`` int32 (nnz,),
            ``data`` in the store's dtype (nnz,).
        """
        start, stop = int(start), int(stop)
        if not 0 <= start <= stop <= self.n_features:
            raise IndexError(f"column range {start}:{stop} outside 0:{self.n_features}")
        firsts, counts, parts_idx, parts_val = [], [], [], []
        k = max(int(np.searchsorted(self._bounds, start, side="right")) - 1, 0)
        offset = 0
        while k < len(self._bounds) - 1 and self._bounds[k] < stop:
            lo = max(start, int(self._bounds[k])) - int(self._bounds[k])
            hi = min(stop, int(self._bounds[k + 1])) - int(self._bounds[k])
            indptr, indices, data = self._block(k)
            a, b = int(indptr[lo]), int(indptr[hi])
            firsts.append(np.asarray(indptr[lo:hi], dtype=np.int64) - a + offset)
            counts.append(np.diff(np.asarray(indptr[lo:hi + 1], dtype=np.int64)))
            parts_idx.append(np.array(indices[a:b]))
            parts_val.append(np.array(data[a:b]))
            offset += b - a
            k += 1
        out_indptr = np.zeros(stop - start + 1, dtype=np.int64)
        if counts:
            np.cumsum(np.concatenate(counts), out=out_indptr[1:])
        indices = (np.concatenate(parts_idx) if parts_idx
                   else np.zeros(0, dtype=np.int32)).astype(np.int32, copy=False)
        data = (np.concatenate(parts_val) if parts_val
                else np.zeros(0, dtype=self.dtype)).astype(self.dtype, copy=False)
        return ColumnBlock(start, out_indptr, indices, data)

    def read_columns(self, columns) -> ColumnBlock:
        """Arbitrary columns in the order given (absent ones empty).

        Each block holding a requested column is read once, and only the
        requested columns' entries are gathered from it (``span_take``).
        """
        columns = np.asarray(columns, dtype=np.int64).reshape(-1)
        if columns.size and columns.min() < 0:
            raise ValueError("negative column number")
        present = columns < self.n_features
        block_of = np.where(present,
                            np.searchsorted(self._bounds, columns, side="right") - 1, -1)
        plans = []
        counts = np.zeros(len(columns), dtype=np.int64)
        for k in np.unique(block_of[present]):
            at = np.flatnonzero(block_of == k)
            indptr, indices, data = self._block(int(k))
            local = columns[at] - self._bounds[k]
            first = np.asarray(indptr[local], dtype=np.int64)
            counts[at] = np.asarray(indptr[local + 1], dtype=np.int64) - first
            plans.append((at, first, indices, data))
        out_indptr = np.zeros(len(columns) + 1, dtype=np.int64)
        np.cumsum(counts, out=out_indptr[1:])
        out_indices = np.empty(int(out_indptr[-1]), dtype=np.int32)
        out_data = np.empty(int(out_indptr[-1]), dtype=self.dtype)
        for at, first, indices, data in plans:
            _, source = span_take(first, counts[at])
            _, target = span_take(out_indptr[at], counts[at])
            out_indices[target] = indices[source]
            out_data[target] = data[source]
        return ColumnBlock(-1, out_indptr, out_indices, out_data)
