"""Writing ultrafs column stores (Zarr v3, see ``docs/FORMAT.md``).

:class:`StoreWriter` streams column blocks, in column order, into a
temporary sibling directory and publishes it under the final name with
one ``os.replace`` when :meth:`StoreWriter.close` has written everything;
:func:`write_store` builds a store from numpy / scipy.sparse arrays.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

import numpy as np

from .. import __version__
from ..errors import InputFormatError, ParameterError, StoreExistsError, UltraFSError
from ..kernels.csc_check import CSC_OK, check_csc_block, count_nonfinite
from .base import balanced_block_bounds  # noqa: F401  (re-exported)
from .labels import encode_labels
from .zarr_store import (CHUNK_ELEMENTS, DEFAULT_BLOCK_NNZ, FILL_VALUES,
                         FORMAT_NAME, FORMAT_VERSION, VALUE_DTYPES,
                         ZarrStore, _compressor, is_ultrafs_store)

__all__ = ["StoreWriter", "StoreExistsError", "write_store",
           "balanced_block_bounds", "temporary_sibling", "remove_tree"]




def temporary_sibling(path: Path, tag: str) -> Path:
    """A fresh name next to ``path``: ``NAME.<tag>-<random hex>``."""
    return path.with_name(f"{path.name}.{tag}-{secrets.token_hex(6)}")


def remove_tree(path) -> None:
    """Remove a directory tree or file if it exists (errors ignored)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _is_any_ultrafs_store(path) -> bool:
    """True for an ultrafs store of any on-disk format (Zarr or Parquet-long)."""
    from .parquet_long import is_parquet_long_store

    return is_ultrafs_store(path) or is_parquet_long_store(path)


def check_output_path(path, overwrite: bool) -> Path:
    """Validate an output path before any work is done.

    Returns
    -------
    path : Path
        The absolute output path.

    Raises
    ------
    StoreExistsError
        If ``path`` exists and ``overwrite`` is False, or if it exists but
        is not an ultrafs store (never deleted, even with ``overwrite``).
    ParameterError
        If the parent directory of ``path`` does not exist.
    """
    path = Path(os.path.abspath(os.fspath(path)))
    if os.path.lexists(path):
        if not overwrite:
            raise StoreExistsError(f"{path}: already exists (use overwrite=True to replace it)")
        if not _is_any_ultrafs_store(path):
            raise StoreExistsError(
                f"{path}: exists and is not an ultrafs store; refusing to replace it")
    if not path.parent.is_dir():
        raise ParameterError(f"{path}: parent directory {path.parent} does not exist")
    return path


def _publish(tmp: Path, final: Path, overwrite: bool) -> None:
    """Move the finished store ``tmp`` to ``final`` (``os.replace``)."""
    check_output_path(final, overwrite)
    old = None
    if os.path.lexists(final):
        old = temporary_sibling(final, "old")
        os.replace(final, old)
    try:
        os.replace(tmp, final)
    except BaseException:
        if old is not None:
            os.replace(old, final)
        raise
    if old is not None:
        remove_tree(old)


def default_command() -> str:
    """The command line of the running process (for ``created_by``)."""
    return " ".join([os.path.basename(sys.executable)] + sys.argv)


class StoreWriter:
    """Stream a CSC matrix into a new store, column block after column block.

    Parameters
    ----------
    path : str or os.PathLike
        Final path of the store (must not exist unless ``overwrite``).
    n_samples, n_features, nnz : int
        Shape and number of stored entries of the whole matrix.
    dtype : {"float32", "float64"}
        Value dtype.
    binary : bool
        True when every value is 1: no ``data`` array is written and
        :meth:`append` takes ``data=None``.
    labels : array-like of float, shape (n_samples,)
        Original label values (exactly two distinct values).
    id_offset : int
        Feature id of column 0.
    command : str or None
        Recorded as ``created_by``; None records this process's argv.
    block_nnz : int
        Target nonzeros per block of the default partition.
    overwrite : bool
        Replace an existing ultrafs store at ``path``.
    attrs : dict or None
        Extra JSON-serialisable group attributes (e.g. ``source``).
    chunk_size : int
        Elements per Zarr chunk of every array.
    labels_source : str
        Names the labels in error messages (a file name, ``"y"``...).

    Notes
    -----
    Everything is written below a temporary sibling
    ``PATH.tmp-<random>``; :meth:`close` writes the group attributes last
    (with ``complete: true``) and renames the directory to ``path``.
    :meth:`abort`, or leaving a ``with`` block on an exception, removes
    the temporary directory, so that nothing is ever left at ``path``.
    """

    def __init__(self, path, *, n_samples, n_features, nnz, dtype, binary, labels,
                 id_offset=0, command=None, block_nnz=DEFAULT_BLOCK_NNZ,
                 overwrite=False, attrs=None, chunk_size=CHUNK_ELEMENTS,
                 labels_source="labels"):
        import zarr

        self.path = check_output_path(path, overwrite)
        self.n_samples, self.n_features, self.nnz = int(n_samples), int(n_features), int(nnz)
        if min(self.n_samples, self.n_features, self.nnz) < 0:
            raise ValueError("n_samples, n_features and nnz must be >= 0")
        if self.n_samples >= 2 ** 31:
            raise InputFormatError(
                f"{labels_source}: {self.n_samples} samples; at most 2**31 - 1 are supported")
        self.dtype = np.dtype(dtype)
        if self.dtype.name not in VALUE_DTYPES:
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype}")
        self.binary = bool(binary)
        self.block_nnz = int(block_nnz)
        if self.block_nnz < 1:
            raise ValueError(f"block_nnz must be >= 1, got {block_nnz}")
        self.chunk_size = int(chunk_size)
        self.overwrite = bool(overwrite)
        try:
            labels = np.array(labels, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputFormatError(f"{labels_source}: labels must be numeric") from None
        if labels.shape != (self.n_samples,):
            raise InputFormatError(
                f"{labels_source}: expected {self.n_samples} labels, got shape {labels.shape}")
        _, self.classes = encode_labels(labels, where=labels_source)
        self._labels = labels
        self._attrs = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "nnz": self.nnz,
            "dtype": self.dtype.name,
            "id_offset": int(id_offset),
            "classes": [float(c) for c in self.classes],
            "binary": self.binary,
            "block_nnz": self.block_nnz,
            "created_by": default_command() if command is None else str(command),
            "created_with": f"ultrafs {__version__}",
        }
        self._attrs.update(attrs or {})
        self._indptr = np.zeros(self.n_features + 1, dtype=np.int64)
        self._columns_done = 0
        self._nnz_appended = 0
        self._nnz_flushed = 0
        self._pending_indices = []
        self._pending_data = []
        self._pending_count = 0
        self._closed = False
        self.tmp_path = temporary_sibling(self.path, "tmp")
        try:
            self._group = zarr.open_group(store=str(self.tmp_path), mode="w-", zarr_format=3)
            self._arrays = {"indices": self._create_array("indices", self.nnz, np.int32)}
            if not self.binary:
                self._arrays["data"] = self._create_array("data", self.nnz, self.dtype)
        except BaseException:
            self.abort()
            raise

    # ---------------------------------------------------------------- API
    def append(self, indptr, indices, data=None) -> None:
        """Append the next columns.

        Parameters
        ----------
        indptr : array-like of int, shape (n_columns + 1,)
            Offsets of the block, starting at 0.
        indices : array-like of int, shape (nnz_block,)
            Row numbers, increasing within each column.
        data : array-like of float, shape (nnz_block,), or None
            Values (finite); must be None for a binary store.

        Raises
        ------
        ValueError
            If the block is inconsistent, or goes past ``n_features`` or
            ``nnz``.
        """
        self._check_open()
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices, dtype=np.int32)
        n_columns = len(indptr) - 1
        if n_columns < 0 or self._columns_done + n_columns > self.n_features:
            raise ValueError(f"appending {n_columns} columns after {self._columns_done} "
                             f"exceeds n_features={self.n_features}")
        code, column = check_csc_block(indptr, indices, self.n_samples)
        if code != CSC_OK:
            raise ValueError(f"invalid CSC block at column {self._columns_done + max(column, 0)} "
                             f"(check code {code})")
        block_nnz = len(indices)
        if self._nnz_appended + block_nnz > self.nnz:
            raise ValueError(f"appending {block_nnz} entries exceeds nnz={self.nnz}")
        if self.binary:
            if data is not None:
                raise ValueError("binary store: data must be None")
        else:
            if data is None:
                raise ValueError("valued store: data is required")
            data = np.asarray(data, dtype=self.dtype)
            if data.shape != indices.shape:
                raise ValueError(f"data has shape {data.shape}, indices {indices.shape}")
            if count_nonfinite(data):
                raise ValueError("data contains NaN or infinite values")
            self._pending_data.append(data.copy())
        start = self._columns_done
        self._indptr[start + 1:start + n_columns + 1] = self._nnz_appended + indptr[1:]
        self._columns_done += n_columns
        self._nnz_appended += block_nnz
        self._pending_indices.append(indices.copy())
        self._pending_count += block_nnz
        if self._pending_count >= self.chunk_size:
            self._flush(final=False)

    def close(self) -> Path:
        """Finish the store and publish it at :attr:`path`.

        Returns
        -------
        path : Path
            The final path.
        """
        self._check_open()
        try:
            if self._columns_done != self.n_features or self._nnz_appended != self.nnz:
                raise ValueError(
                    f"store incomplete: {self._columns_done}/{self.n_features} columns, "
                    f"{self._nnz_appended}/{self.nnz} entries appended")
            self._flush(final=True)
            self._create_array("indptr", self.n_features + 1, np.int64)[:] = self._indptr
            self._create_array("labels", self.n_samples, np.float64)[:] = self._labels
            bounds = balanced_block_bounds(self._indptr, self.block_nnz)
            attrs = dict(self._attrs, block_bounds=[int(b) for b in bounds],
                         complete=False)
            self._group.attrs.update(attrs)
            self._group.attrs["complete"] = True          # written last
            _publish(self.tmp_path, self.path, self.overwrite)
        except BaseException:
            self.abort()
            raise
        self._closed = True
        return self.path

    def abort(self) -> None:
        """Discard everything written so far (idempotent)."""
        self._closed = True
        self._pending_indices, self._pending_data = [], []
        remove_tree(self.tmp_path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        elif not self._closed:
            self.close()
        return False

    # ----------------------------------------------------------- internals
    def _check_open(self):
        if self._closed:
            raise ValueError("StoreWriter is closed")

    def _create_array(self, name, length, dtype):
        return self._group.create_array(
            name, shape=(int(length),), chunks=(self.chunk_size,), dtype=dtype,
            fill_value=FILL_VALUES[name], compressors=[_compressor()])

    def _flush(self, final: bool) -> None:
        """Write whole chunks of the pending entries (all of them if final)."""
        if not self._pending_count:
            return
        n_write = self._pending_count if final else (
            self._pending_count // self.chunk_size) * self.chunk_size
        if n_write == 0:
            return
        lo = self._nnz_flushed
        for name, pending in (("indices", self._pending_indices),
                              ("data", self._pending_data)):
            if name not in self._arrays:
                continue
            joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
            self._arrays[name][lo:lo + n_write] = joined[:n_write]
            pending[:] = [joined[n_write:].copy()] if n_write < len(joined) else []
        self._nnz_flushed += n_write
        self._pending_count -= n_write


def write_store(path, X, y, *, dtype=None, block_nnz=DEFAULT_BLOCK_NNZ, id_offset=0,
                command=None, overwrite=False, chunk_size=CHUNK_ELEMENTS) -> ZarrStore:
    """Write a store from numpy / scipy.sparse arrays and open it.

    Parameters
    ----------
    path : str or os.PathLike
        Output directory (created; must not exist unless ``overwrite``).
    X : array-like or scipy.sparse matrix, shape (n_samples, n_features)
        Copied, never modified.  Explicit zeros are dropped.
    y : array-like, shape (n_samples,)
        Exactly two distinct finite label values.
    dtype : float32, float64 or None
        Value dtype (None: float32 inputs stay float32, others float64).
    block_nnz : int
        Target nonzeros per block of the default partition.
    id_offset : int
        Feature id of column 0.
    command : str or None
        Recorded as ``created_by`` (None: this process's argv).
    overwrite : bool
        Replace an existing ultrafs store at ``path``.
    chunk_size : int
        Elements per Zarr chunk.

    Returns
    -------
    store : ZarrStore
        The new store, opened.

    Raises
    ------
    InputFormatError
        If X holds NaN/inf, y is not two-class or has the wrong length.
    StoreExistsError
        If ``path`` exists and ``overwrite`` is False.
    """
    from .memory import to_csc

    check_output_path(path, overwrite)
    csc = to_csc(X, dtype=dtype)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != csc.shape[0]:
        raise InputFormatError(f"y must have shape ({csc.shape[0]},), got {y.shape}")
    binary = bool(np.all(csc.data == 1))
    with StoreWriter(path, n_samples=csc.shape[0], n_features=csc.shape[1],
                     nnz=csc.nnz, dtype=csc.dtype, binary=binary, labels=y,
                     id_offset=id_offset, command=command, block_nnz=block_nnz,
                     overwrite=overwrite, chunk_size=chunk_size,
                     labels_source="y") as writer:
        writer.append(csc.indptr, csc.indices, None if binary else csc.data)
        final = writer.close()
    return ZarrStore(final)
