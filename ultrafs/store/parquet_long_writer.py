"""Writing Parquet-long column stores (layout in ``docs/FORMAT.md``).

:class:`ParquetLongWriter` has the shape of
:class:`~ultrafs.store.writer.StoreWriter`: it takes CSC column blocks in
column order, cuts them into the blocks of the default partition as they
arrive (the same rule as the Zarr store, so both formats have identical
``block_bounds``), writes each block as one or more row groups of the
current part file, and publishes the directory with one ``os.replace``
when :meth:`ParquetLongWriter.close` has written everything.
:func:`write_parquet_long` builds a store from numpy / scipy.sparse arrays.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .. import __version__
from ..errors import InputFormatError, ParameterError, StoreExistsError
from ..kernels.csc_check import CSC_OK, check_csc_block, count_nonfinite
from .labels import encode_labels
from .parquet_long import (FORMAT_NAME, FORMAT_VERSION, LABELS_FILE, METADATA_FILE,
                           ROW_GROUP_TABLE_KEYS, ParquetLongStore,
                           is_parquet_long_store, part_file_name)
from .writer import balanced_block_bounds, default_command, remove_tree, temporary_sibling
from .zarr_store import CHUNK_ELEMENTS, DEFAULT_BLOCK_NNZ, VALUE_DTYPES, is_ultrafs_store

__all__ = ["ParquetLongWriter", "write_parquet_long", "check_output_path",
           "DEFAULT_FILE_NNZ", "MAX_ROW_GROUP_ENTRIES"]

#: a new part file is started at the first block boundary past this many entries
DEFAULT_FILE_NNZ = 64 * 2 ** 20
#: largest row group pyarrow writes as one
MAX_ROW_GROUP_ENTRIES = 64 * 2 ** 20
#: sorted integer columns are stored as deltas (DELTA_BINARY_PACKED), which
#: a general-purpose codec hardly shrinks further; values are PLAIN + Snappy.
#: Every reader of Parquet 2 pages handles these (see docs/FORMAT.md).
COLUMN_ENCODING = {"feature": "DELTA_BINARY_PACKED", "row": "DELTA_BINARY_PACKED"}
COMPRESSION = {"feature": "none", "row": "none", "value": "snappy"}
LABELS_COMPRESSION = "snappy"


def check_output_path(path, overwrite) -> Path:
    """Refuse to clobber anything but an ultrafs store (Zarr or Parquet-long).

    Returns
    -------
    path : Path
        Absolute output path.

    Raises
    ------
    StoreExistsError
        If ``path`` exists and ``overwrite`` is False, or it exists and is
        not an ultrafs store.
    ParameterError
        If the parent directory of ``path`` does not exist.
    """
    path = Path(os.path.abspath(os.fspath(path)))
    if os.path.lexists(path):
        if not overwrite:
            raise StoreExistsError(f"{path}: already exists (use overwrite=True to replace it)")
        if not (is_parquet_long_store(path) or is_ultrafs_store(path)):
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


class ParquetLongWriter:
    """Stream a CSC matrix into a new Parquet-long store, block by block.

    Parameters
    ----------
    path : str or os.PathLike
        Final directory of the store (must not exist unless ``overwrite``).
    n_samples, n_features, nnz : int
        Shape and number of stored entries of the whole matrix.
    dtype : {"float32", "float64"}
        Value dtype.
    binary : bool
        True when every value is 1: the part files have no ``value``
        column and :meth:`append` takes ``data=None``.
    labels : array-like of float, shape (n_samples,)
        Original label values (exactly two distinct values).
    id_offset : int
        Feature id of column 0.
    command : str or None
        Recorded as ``created_by``; None records this process's argv.
    block_nnz : int
        Target nonzeros per block of the default partition (same rule as
        the Zarr store: :func:`~ultrafs.store.writer.balanced_block_bounds`).
    overwrite : bool
        Replace an existing ultrafs store (Zarr or Parquet-long) at ``path``.
    attrs : dict or None
        Extra JSON-serialisable metadata (e.g. ``source``).
    chunk_size : int
        Most entries per row group (a block larger than this spans several
        row groups); bounds the writer's buffer.
    labels_source : str
        Names the labels in error messages.
    file_nnz : int
        A new part file starts at the first block boundary after this
        many entries.

    Notes
    -----
    Everything is written below a temporary sibling ``PATH.tmp-<random>``,
    which holds from the start a placeholder ``_ultrafs.json`` with
    ``complete: false`` (so that it never opens as a store or a wide table);
    :meth:`close` writes the full ``_ultrafs.json`` last and renames the
    directory to ``path``.  :meth:`abort`, or leaving a ``with`` block on an
    exception, removes the temporary directory.
    """

    def __init__(self, path, *, n_samples, n_features, nnz, dtype, binary, labels,
                 id_offset=0, command=None, block_nnz=DEFAULT_BLOCK_NNZ,
                 overwrite=False, attrs=None, chunk_size=CHUNK_ELEMENTS,
                 labels_source="labels", file_nnz=DEFAULT_FILE_NNZ):
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
        self.feature_dtype = np.dtype(np.int32 if self.n_features <= 2 ** 31 else np.int64)
        self.binary = bool(binary)
        self.block_nnz = int(block_nnz)
        self.chunk_size = int(chunk_size)
        self.file_nnz = int(file_nnz)
        if self.block_nnz < 1 or self.file_nnz < 1:
            raise ValueError("block_nnz and file_nnz must be >= 1")
        if not 1 <= self.chunk_size <= MAX_ROW_GROUP_ENTRIES:
            raise ValueError(f"chunk_size must be in 1..{MAX_ROW_GROUP_ENTRIES}, "
                             f"got {chunk_size}")
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
            "feature_dtype": self.feature_dtype.name,
            "created_by": default_command() if command is None else str(command),
            "created_with": f"ultrafs {__version__}",
        }
        self._attrs.update(attrs or {})
        self._indptr = np.zeros(self.n_features + 1, dtype=np.int64)
        self._columns_done = 0
        self._nnz_appended = 0
        # entries appended but not yet written, starting at entry _nnz_written
        self._pending = {"feature": [], "row": [], "value": []}
        self._nnz_written = 0
        self._block_start = 0                 # first column of the open block
        self._cuts = []                       # block boundaries found so far
        self._next_cut_target = self.block_nnz
        self._files = []
        self._file_writer = None
        self._file_row_groups = 0             # row groups in the open part file
        self._file_nnz_written = 0
        self._row_groups = {key: [] for key in ROW_GROUP_TABLE_KEYS}
        self._closed = False
        self.tmp_path = temporary_sibling(self.path, "tmp")
        self.tmp_path.mkdir()
        try:                                  # marks the directory as an unfinished store
            self._write_metadata({"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                                  "complete": False})
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
            self._pending["value"].append(data.copy())
        start = self._columns_done
        self._pending["feature"].append(np.repeat(
            np.arange(start, start + n_columns, dtype=self.feature_dtype), np.diff(indptr)))
        self._pending["row"].append(indices.copy())
        self._indptr[start + 1:start + n_columns + 1] = self._nnz_appended + indptr[1:]
        self._columns_done += n_columns
        self._nnz_appended += block_nnz
        try:
            self._write_finished_blocks()
            self._write_full_row_groups()
        except BaseException:
            self.abort()
            raise

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
            if self.n_features:
                self._end_block(self.n_features)
            self._close_file()
            ends = [self.n_features] if self.n_features else []
            bounds = np.asarray([0] + self._cuts + ends, dtype=np.int64)
            if not np.array_equal(bounds, balanced_block_bounds(self._indptr, self.block_nnz)):
                raise RuntimeError("internal error: streamed block bounds differ from "
                                   "balanced_block_bounds")
            self._write_labels()
            attrs = dict(self._attrs, block_bounds=[int(b) for b in bounds],
                         files=list(self._files),
                         row_groups={k: [int(v) for v in values]
                                     for k, values in self._row_groups.items()},
                         complete=True)
            self._write_metadata(attrs)
            _publish(self.tmp_path, self.path, self.overwrite)
        except BaseException:
            self.abort()
            raise
        self._closed = True
        return self.path

    def abort(self) -> None:
        """Discard everything written so far (idempotent)."""
        self._closed = True
        self._pending = {"feature": [], "row": [], "value": []}
        if self._file_writer is not None:
            try:
                self._file_writer.close()
            except Exception:
                pass
            self._file_writer = None
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
            raise ValueError("ParquetLongWriter is closed")

    def _write_finished_blocks(self) -> None:
        """End every block whose last column is now known.

        Block boundaries follow ``balanced_block_bounds``: the next one is
        the first column boundary ``c`` where ``indptr[c]`` reaches the
        next multiple of ``block_nnz`` (below ``nnz``); it is known as soon
        as the appended columns reach that many entries.
        """
        done = self._columns_done
        while (self._next_cut_target < self.nnz
               and self._indptr[done] >= self._next_cut_target):
            cut = self._block_start + int(np.searchsorted(
                self._indptr[self._block_start:done + 1], self._next_cut_target,
                side="left"))
            if cut >= self.n_features:
                self._next_cut_target = self.nnz          # the last boundary: no cut
                break
            self._end_block(cut)
            self._cuts.append(cut)
            self._next_cut_target = (int(self._indptr[cut]) // self.block_nnz + 1) * self.block_nnz

    def _end_block(self, stop_column: int) -> None:
        """Write the entries of columns ``_block_start:stop_column``."""
        self._write_row_groups(int(self._indptr[stop_column]))
        self._block_start = stop_column
        if self._file_nnz_written >= self.file_nnz:
            self._close_file()

    def _write_full_row_groups(self) -> None:
        """Write whole row groups of the open block while enough entries wait."""
        full = self._nnz_written + (
            (self._nnz_appended - self._nnz_written) // self.chunk_size) * self.chunk_size
        if full > self._nnz_written:
            self._write_row_groups(full)

    def _write_row_groups(self, stop_entry: int) -> None:
        """Write pending entries up to global entry ``stop_entry``."""
        count = stop_entry - self._nnz_written
        if count <= 0:
            return
        columns = ["feature", "row"] if self.binary else ["feature", "row", "value"]
        joined = {}
        for name in columns:
            pending = self._pending[name]
            array = np.concatenate(pending) if len(pending) > 1 else pending[0]
            joined[name] = array[:count]
            pending[:] = [array[count:].copy()] if count < len(array) else []
        for lo in range(0, count, self.chunk_size):
            hi = min(count, lo + self.chunk_size)
            self._write_row_group({name: joined[name][lo:hi] for name in columns})
        self._nnz_written = stop_entry

    def _write_row_group(self, arrays: dict) -> None:
        import pyarrow as pa

        table = pa.Table.from_arrays([pa.array(arrays[name]) for name in arrays],
                                     names=list(arrays))
        writer = self._open_file(table.schema)
        writer.write_table(table, row_group_size=table.num_rows)
        features = arrays["feature"]
        row_groups = self._row_groups
        row_groups["file"].append(len(self._files) - 1)
        row_groups["index"].append(self._file_row_groups)
        row_groups["first_feature"].append(int(features[0]))
        row_groups["last_feature"].append(int(features[-1]))
        row_groups["nnz"].append(len(features))
        self._file_row_groups += 1
        self._file_nnz_written += len(features)

    def _open_file(self, schema):
        """The writer of the current part file (a new file if none is open)."""
        if self._file_writer is None:
            import pyarrow.parquet as pq

            name = part_file_name(len(self._files))
            self._file_writer = pq.ParquetWriter(
                self.tmp_path / name, schema, compression=COMPRESSION,
                use_dictionary=False, column_encoding=COLUMN_ENCODING,
                write_statistics=["feature"],
                sorting_columns=[pq.SortingColumn(0), pq.SortingColumn(1)])
            self._files.append(name)
            self._file_row_groups = 0
            self._file_nnz_written = 0
        return self._file_writer

    def _close_file(self) -> None:
        if self._file_writer is not None:
            self._file_writer.close()
            self._file_writer = None
            self._file_nnz_written = 0

    def _write_metadata(self, attrs: dict) -> None:
        """Write ``_ultrafs.json`` (replacing the placeholder in one step)."""
        staged = self.tmp_path / (METADATA_FILE + ".partial")
        with open(staged, "w", encoding="utf-8") as f:
            json.dump(attrs, f, indent=1)
        os.replace(staged, self.tmp_path / METADATA_FILE)

    def _write_labels(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({"label": pa.array(self._labels, type=pa.float64())})
        pq.write_table(table, self.tmp_path / LABELS_FILE, compression=LABELS_COMPRESSION)


def write_parquet_long(path, X, y, *, dtype=None, block_nnz=DEFAULT_BLOCK_NNZ, id_offset=0,
                       command=None, overwrite=False, chunk_size=CHUNK_ELEMENTS,
                       file_nnz=DEFAULT_FILE_NNZ) -> ParquetLongStore:
    """Write a Parquet-long store from numpy / scipy.sparse arrays and open it.

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
        Most entries per row group.
    file_nnz : int
        Entries after which a new part file starts (at a block boundary).

    Returns
    -------
    store : ParquetLongStore
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
    with ParquetLongWriter(path, n_samples=csc.shape[0], n_features=csc.shape[1],
                           nnz=csc.nnz, dtype=csc.dtype, binary=binary, labels=y,
                           id_offset=id_offset, command=command, block_nnz=block_nnz,
                           overwrite=overwrite, chunk_size=chunk_size,
                           labels_source="y", file_nnz=file_nnz) as writer:
        writer.append(csc.indptr, csc.indices, None if binary else csc.data)
        final = writer.close()
    return ParquetLongStore(final)
