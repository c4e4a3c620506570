"""Writing Parquet-long column stores (layout in ``docs/FORMAT.md``).

:class:`ParquetLongWriter` has the shape of
:class:`~ultrafs.store.writers.zarr_writer.StoreWriter`: it takes CSC column blocks in
column order, cuts them into the blocks of the default partition as they
arrive (the same rule as the Zarr store, so both formats have identical
``block_bounds``), writes each block as one or more row groups of the
current part file, and publishes the directory with one ``os.replace``
when :meth:`ParquetLongWriter.close` has written everything (the skeleton
is :class:`~ultrafs.store.block_writer.BlockWriter`).  Every Parquet file
carries page checksums; once a file is closed its footer and row groups
are read back (from the page cache) and their CRC-32C recorded in
``_ultrafs.json``, which is itself sealed with ``metadata_checksum``
(:mod:`ultrafs.store.parquet_integrity`).
:func:`write_parquet_long` builds a store from numpy / scipy.sparse arrays.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ultrafs.store.base import balanced_block_bounds
from ultrafs.store.writers.block_writer import BlockWriter, check_output_path, write_arrays
from ultrafs.store.parquet_integrity import (CHECKSUM_ALGORITHM, file_checksum,
                                             part_file_checksums, seal_metadata)
from ultrafs.store.parquet_long import (COLUMN_IDS_FILE, FORMAT_NAME, FORMAT_VERSION,
                                        LABELS_FILE, METADATA_FILE, NAMES_FILE,
                                        ROW_GROUP_TABLE_KEYS,
                                        ParquetLongStore, part_file_name)
from ultrafs.store.zarr_store import CHUNK_ELEMENTS, DEFAULT_BLOCK_NNZ

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


class ParquetLongWriter(BlockWriter):
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
        Original label (target) values, numeric and finite; stored as given.
    target : None, "auto", "binary", "multiclass" or "continuous"
        Target type recorded; None detects it from ``labels``
        (:func:`~ultrafs.store.targets.encode_targets`).
    id_offset : int
        Feature id of column 0.
    command : str or None
        Recorded as ``created_by``; None records this process's argv.
    block_nnz : int
        Target nonzeros per block of the default partition (same rule as
        the Zarr store: :func:`~ultrafs.store.writers.zarr_writer.balanced_block_bounds`).
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
    column_ids : array-like of int or None
        Sparse id layout: the id (minus ``id_offset``) of each of the
        ``n_features`` columns, strictly increasing (written to
        ``_column_ids.parquet``); None for the dense one.
    id_space : int or None
        Declared width (ids ``0 .. id_space - 1``); None: ``n_features``.
    feature_names : None, sequence or StagedNames
        As for :class:`~ultrafs.store.writers.zarr_writer.StoreWriter`;
        written to ``_feature_names.tsv``.
    indptr : ndarray of int64 or None
        As for :class:`~ultrafs.store.writers.zarr_writer.StoreWriter`.

    Notes
    -----
    Everything is written below a temporary sibling ``PATH.tmp-<random>``,
    which holds from the start a placeholder ``_ultrafs.json`` with
    ``complete: false`` (so that it never opens as a store or a wide table);
    :meth:`close` writes the full ``_ultrafs.json`` last and renames the
    directory to ``path``.  :meth:`abort`, or leaving a ``with`` block on an
    exception, removes the temporary directory.
    """

    format_name = FORMAT_NAME
    format_version = FORMAT_VERSION
    names_file = NAMES_FILE
    root_document = METADATA_FILE

    def __init__(self, path, *, n_samples, n_features, nnz, dtype, binary, labels,
                 id_offset=0, command=None, block_nnz=DEFAULT_BLOCK_NNZ,
                 overwrite=False, attrs=None, chunk_size=CHUNK_ELEMENTS,
                 labels_source="labels", target=None, file_nnz=DEFAULT_FILE_NNZ,
                 column_ids=None, id_space=None, feature_names=None, indptr=None):
        super().__init__(path, n_samples=n_samples, n_features=n_features, nnz=nnz,
                         dtype=dtype, binary=binary, labels=labels, id_offset=id_offset,
                         command=command, block_nnz=block_nnz, overwrite=overwrite,
                         attrs=attrs, chunk_size=chunk_size, labels_source=labels_source,
                         target=target, column_ids=column_ids, id_space=id_space,
                         feature_names=feature_names, indptr=indptr, file_nnz=file_nnz)

    # -------------------------------------------------------------- hooks
    def _check_settings(self, block_nnz, chunk_size, file_nnz) -> None:
        self.feature_dtype = np.dtype(np.int32 if self.n_features <= 2 ** 31 else np.int64)
        self.file_nnz = int(file_nnz)
        if self.block_nnz < 1 or self.file_nnz < 1:
            raise ValueError("block_nnz and file_nnz must be >= 1")
        if not 1 <= self.chunk_size <= MAX_ROW_GROUP_ENTRIES:
            raise ValueError(f"chunk_size must be in 1..{MAX_ROW_GROUP_ENTRIES}, "
                             f"got {chunk_size}")

    def _format_attrs(self) -> dict:
        return {"feature_dtype": self.feature_dtype.name}

    def _start(self) -> None:
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
        self._checksums = {"algorithm": CHECKSUM_ALGORITHM, "footers": [], "row_groups": []}
        self.tmp_path.mkdir()
        # marks the directory as an unfinished store
        self._write_metadata({"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                              "complete": False})

    def _write_block(self, start, indptr, indices, data) -> None:
        n_columns = len(indptr) - 1
        if data is not None:
            self._pending["value"].append(data.copy())
        self._pending["feature"].append(np.repeat(
            np.arange(start, start + n_columns, dtype=self.feature_dtype), np.diff(indptr)))
        self._pending["row"].append(indices.copy())
        try:
            self._write_finished_blocks()
            self._write_full_row_groups()
        except BaseException:
            self.abort()
            raise

    def _finish(self) -> None:
        if self.n_features:
            self._end_block(self.n_features)
        self._close_file()
        ends = [self.n_features] if self.n_features else []
        bounds = np.asarray([0] + self._cuts + ends, dtype=np.int64)
        if not np.array_equal(bounds, balanced_block_bounds(self._indptr, self.block_nnz)):
            raise RuntimeError("internal error: streamed block bounds differ from "
                               "balanced_block_bounds")
        self._checksums["labels"] = self._write_labels()
        if self.column_ids is not None:
            self._checksums["column_ids"] = self._write_column_ids()
        attrs = dict(self._attrs, block_bounds=[int(b) for b in bounds],
                     files=list(self._files),
                     row_groups={k: [int(v) for v in values]
                                 for k, values in self._row_groups.items()},
                     checksums=self._checksums, **self._names_attrs(), complete=True)
        self._write_metadata(seal_metadata(attrs))

    def _discard(self) -> None:
        self._pending = {"feature": [], "row": [], "value": []}
        if self._file_writer is not None:
            try:
                self._file_writer.close()
            except Exception:
                pass
            self._file_writer = None

    # ----------------------------------------------------------- internals
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
                write_statistics=["feature"], write_page_checksum=True,
                sorting_columns=[pq.SortingColumn(0), pq.SortingColumn(1)])
            self._files.append(name)
            self._file_row_groups = 0
            self._file_nnz_written = 0
        return self._file_writer

    def _close_file(self) -> None:
        """Close the open part file and record the checksums of what it holds."""
        if self._file_writer is not None:
            self._file_writer.close()
            self._file_writer = None
            self._file_nnz_written = 0
            footer_crc, row_group_crcs = part_file_checksums(self.tmp_path / self._files[-1])
            if len(row_group_crcs) != self._file_row_groups:
                raise RuntimeError(f"internal error: {self._files[-1]} holds "
                                   f"{len(row_group_crcs)} row groups, "
                                   f"{self._file_row_groups} were written")
            self._checksums["footers"].append(footer_crc)
            self._checksums["row_groups"].extend(row_group_crcs)

    def _write_metadata(self, attrs: dict) -> None:
        """Write ``_ultrafs.json`` (replacing the placeholder in one step)."""
        staged = self.tmp_path / (METADATA_FILE + ".partial")
        with open(staged, "w", encoding="utf-8") as f:
            json.dump(attrs, f, indent=1)
        os.replace(staged, self.tmp_path / METADATA_FILE)

    def _write_labels(self) -> int:
        """Write ``_labels.parquet``; return its CRC-32C."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({"label": pa.array(self._labels, type=pa.float64())})
        pq.write_table(table, self.tmp_path / LABELS_FILE, compression=LABELS_COMPRESSION,
                       write_page_checksum=True)
        return file_checksum(self.tmp_path / LABELS_FILE)

    def _write_column_ids(self) -> int:
        """Write ``_column_ids.parquet`` (sparse id layout); return its CRC-32C."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({"column_id": pa.array(self.column_ids, type=pa.int64())})
        pq.write_table(table, self.tmp_path / COLUMN_IDS_FILE, compression="none",
                       use_dictionary=False,
                       column_encoding={"column_id": "DELTA_BINARY_PACKED"},
                       write_page_checksum=True)
        return file_checksum(self.tmp_path / COLUMN_IDS_FILE)


def write_parquet_long(path, X, y, *, dtype=None, block_nnz=DEFAULT_BLOCK_NNZ, id_offset=0,
                       command=None, overwrite=False, chunk_size=CHUNK_ELEMENTS,
                       file_nnz=DEFAULT_FILE_NNZ, target=None,
                       feature_names=None, storage_options=None) -> ParquetLongStore:
    """Write a Parquet-long store from numpy / scipy.sparse arrays and open it.

    Parameters
    ----------
    path : str or os.PathLike
        Output directory (created; must not exist unless ``overwrite``), or
        the fsspec URL of one (``s3://bucket/x.parquet``): written in a
        local staging folder, then published with its ``_ultrafs.json``
        last (:func:`ultrafs.store.object_store.staged_upload`).
    X : array-like or scipy.sparse matrix, shape (n_samples, n_features)
        Copied, never modified.  Explicit zeros are dropped.
    y : array-like, shape (n_samples,)
        Numeric, finite targets (stored as given).
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
    target : None, "auto", "binary", "multiclass" or "continuous"
        Target type; None detects it (two values: binary; three or more
        integers: multiclass; else continuous).
    feature_names : sequence of str or None, optional
        One name (or None: unnamed) per column of ``X``.
    storage_options : dict, optional
        fsspec options of a URL ``path``.

    Returns
    -------
    store : ParquetLongStore
        The new store, opened.

    Raises
    ------
    InputFormatError
        If X holds NaN/inf, y has the wrong length, is not finite, takes a
        single value or does not fit ``target``.
    StoreExistsError
        If ``path`` exists and ``overwrite`` is False.
    """
    return ParquetLongStore(write_arrays(
        ParquetLongWriter, path, X, y, dtype=dtype, overwrite=overwrite,
        block_nnz=block_nnz, id_offset=id_offset, command=command,
        chunk_size=chunk_size, file_nnz=file_nnz, target=target,
        feature_names=feature_names, storage_options=storage_options),
        storage_options=storage_options)
