"""On-disk column store as a long Parquet table ``(feature, row, value)``.

A directory written by ultrafs (:mod:`ultrafs.store.writers.parquet_long_writer`):
part files ``part-00000.parquet``, ... hold the entries of X sorted by
(feature, row), in row groups that never straddle a block of the default
partition; ``_labels.parquet`` holds the labels and ``_ultrafs.json`` the
metadata (the attributes of the Zarr store plus a table of every row
group); a store of the sparse id layout adds ``_column_ids.parquet``.
Version 3 records a CRC-32C of every footer, row group, labels file,
column-id file and of the metadata itself, all verified as they are read
(:mod:`ultrafs.store.parquet_integrity`).  The layout is documented in
``docs/FORMAT.md`` (section *Parquet layouts*); this module holds the
constants and the reader, :class:`ParquetLongStore`.
"""

from __future__ import annotations

import json
import mmap
import re
from pathlib import Path

import numpy as np

from ultrafs.errors import ParameterError, StoreFormatError
from ultrafs.kernels.long_table import feature_offsets
from ultrafs.store.base import ColumnBlock, check_column_ids
from ultrafs.store.feature_names import check_names_attrs
from ultrafs.store.metadata import (READ_VERSIONS, WRITE_VERSION, RecordedMeta,
                                    check_classes_and_bounds, check_complete, check_counts,
                                    check_format_marker, check_version3, required_attrs)
from ultrafs.store.metadata import is_count as _is_count
from ultrafs.store.parquet_integrity import (CHECKSUM_ALGORITHM, PartFile,
                                             check_checksum_list, check_file_bytes, crc32c,
                                             parse_part_footer, read_checked_file,
                                             read_part_footer, verify_metadata)
from ultrafs.store.path_store import (WrittenStore, check_regular_files, gather_columns, is_url,
                                     location_of)

__all__ = [
    "ParquetLongStore",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "READ_VERSIONS",
    "METADATA_FILE",
    "LABELS_FILE",
    "COLUMN_IDS_FILE",
    "NAMES_FILE",
    "ROW_GROUP_TABLE_KEYS",
    "is_parquet_long_store",
    "part_file_name",
    "gather_columns",
]

#: value of the ``format`` attribute
FORMAT_NAME = "ultrafs-colstore-parquet-long"
#: the format version this code writes (it reads every one of READ_VERSIONS)
FORMAT_VERSION = WRITE_VERSION
#: metadata file (JSON), written last
METADATA_FILE = "_ultrafs.json"
#: labels file: one float64 column ``label``, n_samples rows
LABELS_FILE = "_labels.parquet"
#: column ids of the sparse id layout (version 3): one int64 column ``column_id``
COLUMN_IDS_FILE = "_column_ids.parquet"
#: the optional feature names file (``id<TAB>name`` lines, see
#: :mod:`ultrafs.store.feature_names`); its name starts with ``_`` so that
#: Parquet readers of the directory skip it
NAMES_FILE = "_feature_names.tsv"
#: names of the part files
PART_FILE_PATTERN = re.compile(r"part-\d{5,}\.parquet")
#: columns of the row-group table, each a list of ints
ROW_GROUP_TABLE_KEYS = ("file", "index", "first_feature", "last_feature", "nnz")
FEATURE_DTYPES = ("int32", "int64")
REQUIRED_ATTRS = ("format", "format_version", "n_samples", "n_features", "nnz",
                  "dtype", "id_offset", "classes", "binary", "block_bounds",
                  "created_by", "created_with", "complete", "feature_dtype",
                  "files", "row_groups")
#: required from version 3, besides those of ``required_attrs``
VERSION3_ATTRS = ("checksums", "metadata_checksum")


def part_file_name(number: int) -> str:
    """Name of the ``number``-th part file (``part-00000.parquet``)."""
    return f"part-{number:05d}.parquet"


def _read_metadata(path: Path) -> dict:
    """The parsed ``_ultrafs.json`` of ``path``.

    Raises
    ------
    StoreFormatError
        If ``path`` is not a directory holding a readable JSON object.
    """
    if not path.exists():
        raise StoreFormatError(f"{path}: not an ultrafs store (no such file or directory)")
    if not path.is_dir():
        raise StoreFormatError(f"{path}: not an ultrafs store (not a directory)")
    meta_file = path / METADATA_FILE
    if not meta_file.is_file():
        raise StoreFormatError(f"{path}: not an ultrafs store (no {METADATA_FILE})")
    try:
        raw = meta_file.read_bytes()
    except OSError as exc:
        raise StoreFormatError(
            f"{path}: not an ultrafs store (cannot read {METADATA_FILE}: {exc})") from exc
    return _parsed_metadata(path, raw)


def _parsed_metadata(where, raw: bytes) -> dict:
    """``_ultrafs.json``'s bytes as a JSON object; one line naming ``where`` else."""
    try:
        attrs = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreFormatError(
            f"{where}: not an ultrafs store (cannot read {METADATA_FILE}: {exc})") from exc
    if not isinstance(attrs, dict):
        raise StoreFormatError(
            f"{where}: not an ultrafs store ({METADATA_FILE} is not a JSON object)")
    return attrs


def _read_remote_metadata(url: str, remote, storage_options) -> dict:
    """The parsed ``_ultrafs.json`` of the store at ``url`` (a published one).

    Raises
    ------
    StoreFormatError
        If ``url`` holds no published store
        (:func:`~ultrafs.store.object_store.check_published`), or its
        metadata is not a readable JSON object.
    """
    from ultrafs.store.object_store import check_published

    check_published(url, storage_options, METADATA_FILE)
    try:
        raw = remote.read(METADATA_FILE)
    except FileNotFoundError:
        raise StoreFormatError(f"{url}: not an ultrafs store (no {METADATA_FILE})") from None
    return _parsed_metadata(url, raw)


def is_parquet_long_store(path) -> bool:
    """Whether ``path`` carries the Parquet-long format marker (any version)."""
    try:
        return _read_metadata(Path(path)).get("format") == FORMAT_NAME
    except StoreFormatError:
        return False


def _check_attrs(path: Path, attrs: dict) -> None:
    """Validate the scalar attributes (as the Zarr store does)."""
    check_format_marker(path, attrs, FORMAT_NAME, READ_VERSIONS)
    if attrs.get("complete") is False:        # the placeholder of a running writer
        raise StoreFormatError(f"{path}: store is incomplete (interrupted write)")
    # before anything else is trusted; whatever format_version says, so that a
    # flipped version cannot turn the checks of version 3 off
    if attrs["format_version"] >= 3 or "metadata_checksum" in attrs:
        verify_metadata(path, attrs, METADATA_FILE)
    required = required_attrs(REQUIRED_ATTRS, attrs)
    if attrs["format_version"] >= 3:
        required += VERSION3_ATTRS
    check_complete(path, attrs, required)
    check_counts(path, attrs)
    if attrs["feature_dtype"] not in FEATURE_DTYPES:
        raise StoreFormatError(
            f"{path}: attribute feature_dtype={attrs['feature_dtype']!r} is not one "
            f"of {FEATURE_DTYPES}")
    if attrs["feature_dtype"] == "int32" and attrs["n_features"] > 2 ** 31:
        raise StoreFormatError(
            f"{path}: n_features={attrs['n_features']} needs feature_dtype int64")
    check_classes_and_bounds(path, attrs, allow_bool=False)
    check_version3(path, attrs)


def _check_files(path: Path, files) -> list:
    """The part-file names: a list of distinct ``part-NNNNN.parquet``."""
    if (not isinstance(files, list)
            or not all(isinstance(f, str) and PART_FILE_PATTERN.fullmatch(f) for f in files)
            or len(set(files)) != len(files)):
        raise StoreFormatError(
            f"{path}: attribute files is not a list of distinct part-NNNNN.parquet names")
    return list(files)


def _row_group_table(path: Path, attrs: dict, n_files: int) -> dict:
    """Validate the row-group table; return its columns as int64 arrays.

    Row groups are listed in feature order; every row group of every part
    file is listed once, files in order and row groups ``0, 1, ...`` within
    a file; each holds ``nnz >= 1`` entries with features
    ``first_feature..last_feature`` (inclusive), inside one block.
    """
    table = attrs["row_groups"]
    ok = isinstance(table, dict) and set(ROW_GROUP_TABLE_KEYS) <= set(table)
    if ok:
        columns = [table[key] for key in ROW_GROUP_TABLE_KEYS]
        ok = (all(isinstance(c, list) for c in columns)
              and len({len(c) for c in columns}) == 1
              and all(_is_count(v) for c in columns for v in c))
    if not ok:
        raise StoreFormatError(
            f"{path}: attribute row_groups is not a table of integer columns "
            f"{', '.join(ROW_GROUP_TABLE_KEYS)}")

    def fail(problem):
        raise StoreFormatError(f"{path}: inconsistent row_groups table: {problem}")

    rg = {key: np.asarray(table[key], dtype=np.int64).reshape(-1)
          for key in ROW_GROUP_TABLE_KEYS}
    file, index = rg["file"], rg["index"]
    first, last, nnz = rg["first_feature"], rg["last_feature"], rg["nnz"]
    n_features, bounds = attrs["n_features"], np.asarray(attrs["block_bounds"], np.int64)
    if len(file) == 0:
        if attrs["nnz"] != 0 or n_files != 0:
            fail("no row groups, but nnz > 0 or part files are listed")
        return rg
    if np.any(nnz < 1) or int(nnz.sum()) != attrs["nnz"]:
        fail("row-group entry counts do not add up to nnz")
    if np.any(first < 0) or np.any(last >= n_features) or np.any(first > last):
        fail("feature ranges outside 0..n_features - 1")
    if np.any(first[1:] < last[:-1]):
        fail("row groups are not in feature order")
    if file[0] != 0 or np.any(np.diff(file) < 0) or np.any(np.diff(file) > 1) or (
            file[-1] != n_files - 1):
        fail("part files are not listed in order, each with at least one row group")
    new_file = np.r_[True, file[1:] != file[:-1]]
    expected_index = np.arange(len(file)) - np.maximum.accumulate(
        np.where(new_file, np.arange(len(file)), 0))
    if not np.array_equal(index, expected_index):
        fail("row-group numbers within a file are not 0, 1, 2, ...")
    block_of_first = np.searchsorted(bounds, first, side="right")
    block_of_last = np.searchsorted(bounds, last, side="right")
    if not np.array_equal(block_of_first, block_of_last):
        bad = int(np.flatnonzero(block_of_first != block_of_last)[0])
        fail(f"row group {bad} straddles a block boundary")
    return rg


def _checksum_table(path: Path, attrs: dict, n_files: int, n_row_groups: int,
                    sparse: bool) -> dict:
    """Validate the ``checksums`` attribute (version 3); return it with arrays.

    ``{"algorithm": "crc32c", "footers": [one per part file], "row_groups":
    [one per row group, in the order of the row_groups table], "labels": int,
    "column_ids": int}`` (``column_ids`` exactly in the sparse id layout).
    """
    table = attrs["checksums"]
    if not isinstance(table, dict) or table.get("algorithm") != CHECKSUM_ALGORITHM:
        raise StoreFormatError(
            f"{path}: attribute checksums is not an object with algorithm "
            f"{CHECKSUM_ALGORITHM!r}")
    checked = {"footers": check_checksum_list(path, table.get("footers"), n_files,
                                              "footers"),
               "row_groups": check_checksum_list(path, table.get("row_groups"),
                                                 n_row_groups, "row_groups")}
    for name, wanted in (("labels", True), ("column_ids", sparse)):
        value = table.get(name)
        if not wanted:
            if name in table:
                raise StoreFormatError(f"{path}: attribute checksums.{name} in a store "
                                       "of the dense id layout")
            continue
        if not (_is_count(value) and 0 <= value < 2 ** 32):
            raise StoreFormatError(
                f"{path}: attribute checksums.{name}={value!r} is not a CRC-32C")
        checked[name] = value
    return checked


class _StoreMeta(RecordedMeta):
    """Validated metadata of one Parquet-long store (a local path, or a URL
    whose files :attr:`remote` reads)."""

    def __init__(self, path, storage_options=None):
        #: the store's files at a URL (:class:`~ultrafs.store.parquet_remote.RemoteFiles`),
        #: None for a local store
        self.remote = None
        if is_url(path):
            from ultrafs.store.parquet_remote import RemoteFiles

            self.remote = RemoteFiles(path, storage_options)
            attrs = _read_remote_metadata(path, self.remote, storage_options)
        else:
            attrs = _read_metadata(path)
            check_regular_files(path)
        _check_attrs(path, attrs)
        check_names_attrs(path, attrs, None if self.remote else path / NAMES_FILE)
        if self.remote is not None:
            from ultrafs.store.feature_names import NAMES_SHA_ATTR

            if NAMES_SHA_ATTR in attrs and not self.remote.has(NAMES_FILE):
                raise StoreFormatError(f"{path}: missing feature names file {NAMES_FILE}")
        super().__init__(attrs)
        self.feature_dtype = np.dtype(attrs["feature_dtype"])
        self.files = _check_files(path, attrs["files"])
        rg = _row_group_table(path, attrs, len(self.files))
        self.rg_file, self.rg_index = rg["file"], rg["index"]
        self.rg_first, self.rg_last, self.rg_nnz = (
            rg["first_feature"], rg["last_feature"], rg["nnz"])
        if not (self.remote.has(LABELS_FILE) if self.remote else (path / LABELS_FILE).is_file()):
            raise StoreFormatError(f"{path}: missing labels file {LABELS_FILE}")
        #: the columns read from every part file
        self.columns = ["feature", "row"] if self.binary else ["feature", "row", "value"]
        #: the recorded CRC-32C values (version 3), else None
        self.checksums = (_checksum_table(path, attrs, len(self.files), len(self.rg_file),
                                          self.sparse_ids)
                          if self.format_version >= 3 else None)
        if self.sparse_ids:
            self.column_ids = self._read_column_ids(path)

    def _read_column_ids(self, path: Path) -> np.ndarray:
        """The column ids of the sparse layout (checksum, schema, order checked)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        data = self.checked_bytes(path, COLUMN_IDS_FILE, self.checksums["column_ids"])
        try:
            table = pq.read_table(pa.BufferReader(data), use_threads=False,
                                  page_checksum_verification=True)
            if (table.schema.names != ["column_id"]
                    or table.schema.field(0).type != pa.int64()
                    or table.num_rows != self.n_features or table.column(0).null_count):
                raise ValueError(f"expected {self.n_features} int64 values in one column "
                                 "'column_id'")
            raw = table.column(0).to_numpy()
        except Exception as exc:
            raise StoreFormatError(f"{path}: corrupt store: cannot read {COLUMN_IDS_FILE}: "
                                   f"{exc}") from exc
        try:
            return check_column_ids(raw, self.id_space, f"{path}: corrupt store")
        except ValueError as exc:
            raise StoreFormatError(str(exc)) from None

    def checked_bytes(self, path, name: str, expected) -> bytes:
        """The whole file ``name``, its CRC-32C checked against ``expected``
        (None: not checked, before version 3).

        Raises
        ------
        StoreFormatError
            If the file is missing, unreadable or its checksum differs.
        """
        if self.remote is None:
            if expected is None:
                return (path / name).read_bytes()
            return read_checked_file(path, name, expected)
        try:
            data = self.remote.read(name)
        except FileNotFoundError:
            raise StoreFormatError(f"{path}: corrupt or truncated store: cannot read "
                                   f"{name}: no such object") from None
        return data if expected is None else check_file_bytes(path, name, data, expected)

    def row_groups_of(self, start: int, stop: int) -> np.ndarray:
        """Global numbers of the row groups holding features ``start:stop``."""
        lo = np.searchsorted(self.rg_last, start, side="left")
        hi = np.searchsorted(self.rg_first, stop, side="left")
        return np.arange(lo, max(lo, hi), dtype=np.int64)


class ParquetLongStore(WrittenStore):
    """A column store in a long Parquet table written by ultrafs.

    Parameters
    ----------
    path : str or os.PathLike
        Directory of the store (layout in ``docs/FORMAT.md``), or the fsspec
        URL of one published by ultrafs (``s3://bucket/train.parquet``:
        :mod:`ultrafs.store.object_store`).
    storage_options : dict, optional
        fsspec options of a URL (``{"endpoint_url": ...}``), over ultrafs'
        bounded waits; carried to the workers with the store.

    Raises
    ------
    StoreFormatError
        If ``path`` is not a Parquet-long ultrafs store, is incomplete, or
        its metadata is inconsistent; a URL: or holds no published store.
    StoreVersionError
        If the store has another format version.

    Notes
    -----
    Opening reads ``_ultrafs.json`` (and ``_column_ids.parquet`` in the
    sparse id layout) only.  :meth:`read_range` reads just
    the row groups whose feature range (recorded in the metadata) overlaps
    the requested columns, with the ``feature``, ``row`` and (unless
    binary) ``value`` columns, and checks what it returns: the part file
    and row groups exist with the recorded row counts and schema, features
    are sorted and match the recorded ranges, rows are in range and
    strictly increasing within each column, values are finite.  Any
    failure raises :class:`StoreFormatError` naming the store and the
    column range, never zeros.  In version 3 every byte read is first
    checked against its recorded CRC-32C (the metadata when opening, a
    part file's footer when the file is first needed, each row group's
    byte range when it is read, the labels file when the targets are read)
    and Parquet's page checksums are verified too.  Pickling keeps only
    the path (and a URL's ``storage_options``).

    At a URL the same checks run on the bytes fetched through fsspec
    (:mod:`ultrafs.store.parquet_remote`): the metadata whole, each part
    file's trailer and footer in ranged requests, and in version 3 only
    the byte ranges of the row groups read, each checked against its
    CRC-32C before pyarrow decodes those very bytes.
    """

    _NAMES_FILE = NAMES_FILE

    def __init__(self, path, *, storage_options=None):
        if storage_options and not is_url(path):
            raise ParameterError(f"{path}: storage options apply to URLs (s3://...) only")
        self._init_state(location_of(path), storage_options)
        self._meta()                         # validate on open

    def _init_state(self, path, storage_options=None) -> None:
        super()._init_state(path)
        self._footers = {}
        #: fsspec options of a URL (carried by pickles)
        self.storage_options = dict(storage_options or {})

    def _pickle_args(self) -> tuple:
        return (str(self._path), self.storage_options)

    def _load_meta(self) -> _StoreMeta:
        return _StoreMeta(self._path, self.storage_options)

    @property
    def attrs(self) -> dict:
        """A copy of the metadata (``_ultrafs.json``)."""
        return json.loads(json.dumps(self._meta().attrs))

    def _read_raw_label_column(self, meta) -> np.ndarray:
        import pyarrow.parquet as pq

        if meta.checksums is None and meta.remote is None:
            source = self._path / LABELS_FILE
        else:
            import pyarrow as pa

            source = pa.BufferReader(meta.checked_bytes(
                self._path, LABELS_FILE,
                None if meta.checksums is None else meta.checksums["labels"]))
        try:
            table = pq.read_table(source, columns=["label"], use_threads=False,
                                  page_checksum_verification=True)
            raw = table.column("label")
            if raw.null_count:
                raise StoreFormatError(f"{self._path}: corrupt labels (null values)")
            raw = np.asarray(raw.to_numpy(), dtype=np.float64)
        except StoreFormatError:
            raise
        except Exception as exc:
            raise StoreFormatError(
                f"{self._path}: cannot read labels from {LABELS_FILE}: {exc}") from exc
        if raw.shape != (meta.n_samples,):
            raise StoreFormatError(
                f"{self._path}: corrupt labels ({len(raw)} values, expected "
                f"{meta.n_samples})")
        return raw

    # ------------------------------------------------------------- blocks
    def read_range(self, start, stop) -> ColumnBlock:
        """Read columns ``start:stop`` from the row groups that hold them.

        Returns
        -------
        block : ColumnBlock
            ``data`` is None when the store is binary.

        Raises
        ------
        IndexError
            If the range is outside ``0:n_features``.
        StoreFormatError
            If a part file or row group is missing or the data is corrupt.
        """
        start, stop = self._check_range(start, stop)
        meta = self._meta()
        where = f"columns {start}:{stop}"
        features, rows, values = self._read_row_groups(
            meta.row_groups_of(start, stop), where)
        offsets = np.empty(stop - start + 1, dtype=np.int64)
        if not feature_offsets(features, start, stop, offsets):
            self._corrupt(where, "features not sorted")
        lo, hi = int(offsets[0]), int(offsets[-1])
        indptr = offsets - lo
        indices = rows[lo:hi]
        data = None if meta.binary else values[lo:hi]
        self._check_block(indptr, indices, data, where)
        return ColumnBlock(start, indptr, indices, data)

    def read_columns(self, columns) -> ColumnBlock:
        """Read arbitrary columns, in the order given (duplicates allowed).

        Columns ``>= n_features`` come back empty; the data is always
        materialised in the store dtype.  Each needed row group is read
        once.
        """
        columns, inside, unique = self._unique_columns(columns)
        meta = self._meta()
        first_rg = np.searchsorted(meta.rg_last, unique, side="left")
        stop_rg = np.searchsorted(meta.rg_first, unique, side="right")
        spans = np.maximum(stop_rg - first_rg, 0)
        needed = np.unique(np.repeat(first_rg - np.r_[0, np.cumsum(spans)[:-1]], spans)
                           + np.arange(int(spans.sum()), dtype=np.int64))
        where = f"{len(unique)} requested columns"
        features, rows, values = self._read_row_groups(needed, where)
        if not np.all(features[1:] >= features[:-1]):
            self._corrupt(where, "features not sorted")
        needles = unique.astype(features.dtype)      # no cast of the haystack
        starts = np.searchsorted(features, needles, side="left")
        stops = np.searchsorted(features, needles, side="right")
        u_indptr = np.zeros(len(unique) + 1, dtype=np.int64)
        np.cumsum(stops - starts, out=u_indptr[1:])
        take = (np.repeat(starts - u_indptr[:-1], stops - starts)
                + np.arange(u_indptr[-1], dtype=np.int64))
        u_indices = rows[take]
        u_data = (np.ones(len(take), dtype=meta.dtype) if meta.binary
                  else values[take])
        self._check_block(u_indptr, u_indices, u_data, where)
        return gather_columns(columns, inside, unique,
                              ColumnBlock(-1, u_indptr, u_indices, u_data))

    def describe(self) -> dict:
        summary = super().describe()
        meta = self._meta()
        attrs = meta.attrs
        summary.update(path=str(self._path), format=FORMAT_NAME,
                       format_version=attrs["format_version"], binary=attrs["binary"],
                       n_files=len(meta.files), n_row_groups=int(len(meta.rg_file)),
                       created_by=attrs["created_by"], created_with=attrs["created_with"])
        return summary

    # ----------------------------------------------------------- internals
    def _footer(self, file_number: int, where: str):
        """The validated :class:`PartFile` of a part file (cached).

        Version 3: the footer's recorded checksum is verified before it is
        parsed, and its row groups must tile the file (``ranges`` then
        gives the byte range of each); before, ``ranges`` is None.
        """
        part_file = self._footers.get(file_number)
        if part_file is not None:
            return part_file
        import pyarrow as pa
        import pyarrow.parquet as pq

        meta = self._meta()
        name = meta.files[file_number]
        remote = meta.remote
        part = self._path / name if remote is None else None
        if not (remote.has(name) if remote else part.is_file()):
            raise StoreFormatError(
                f"{self._path}: corrupt or truncated store: missing part file {name} "
                f"(needed for {where})")
        try:
            if remote is not None:
                part_file = self._remote_footer(file_number)
            elif meta.checksums is None:
                part_file = PartFile(pq.read_metadata(part), None, None, None)
            else:
                part_file = read_part_footer(part, int(meta.checksums["footers"][file_number]))
            footer = part_file.footer
            schema = footer.schema.to_arrow_schema()
        except StoreFormatError:            # the object store did not answer
            raise
        except Exception as exc:
            raise StoreFormatError(
                f"{self._path}: corrupt or truncated store: cannot read part file "
                f"{name} (needed for {where}): {exc}") from exc
        expected = {"feature": meta.feature_dtype, "row": np.dtype(np.int32)}
        if not meta.binary:
            expected["value"] = meta.dtype
        found = {field.name: field.type for field in schema}
        for column, dtype in expected.items():
            if found.get(column) != pa.from_numpy_dtype(dtype):
                self._corrupt(where, f"part file {name} lacks a {dtype} column {column!r}")
        if meta.binary and "value" in found:
            self._corrupt(where, f"binary store, but part file {name} has a value column")
        mine = meta.rg_file == file_number
        listed = meta.rg_nnz[mine]
        if footer.num_row_groups != len(listed):
            self._corrupt(where, f"part file {name} has {footer.num_row_groups} row "
                                 f"groups, the metadata lists {len(listed)}")
        held = np.array([footer.row_group(k).num_rows for k in range(len(listed))],
                        dtype=np.int64)
        if not np.array_equal(held, listed):
            bad = int(np.flatnonzero(held != listed)[0])
            self._corrupt(where, f"row group {bad} of part file {name} has "
                                 f"{held[bad]} entries, the metadata lists {listed[bad]}")
        with self._lock:
            self._footers[file_number] = part_file
        return part_file

    def _remote_footer(self, file_number: int) -> PartFile:
        """:meth:`_footer`'s read at a URL: the trailer, footer and opening
        magic in ranged requests (version 3: checked, and the row groups'
        byte ranges taken from it); before, pyarrow reads the footer through
        fsspec's file."""
        import pyarrow.parquet as pq

        meta = self._meta()
        remote, name = meta.remote, meta.files[file_number]
        if meta.checksums is None:
            with remote.fs.open(remote.key(name), "rb") as f:
                return PartFile(pq.read_metadata(f), None, remote.sizes[name], None)
        return parse_part_footer(remote.sizes[name],
                                 lambda start, stop: remote.read(name, start, stop),
                                 int(meta.checksums["footers"][file_number]))

    def _read_remote_row_groups(self, file_number: int, row_groups, where: str):
        """:meth:`_read_file_row_groups` at a URL.

        Version 3: the byte ranges of the row groups asked for are fetched
        (consecutive ones in one request, the requests at once), each
        checked against its CRC-32C, and pyarrow decodes those very bytes
        (:class:`~ultrafs.store.parquet_remote.FetchedRanges`: nothing else
        of the file is read); before, pyarrow reads through fsspec's file.
        """
        import pyarrow as pa

        from ultrafs.store.parquet_remote import FetchedRanges, contiguous_runs

        meta = self._meta()
        part_file = self._footer(file_number, where)
        local = meta.rg_index[row_groups].tolist()
        name, remote = meta.files[file_number], meta.remote
        try:
            if part_file.ranges is None:
                source = remote.fs.open(remote.key(name), "rb")
            else:
                recorded = dict(zip(local, meta.checksums["row_groups"][row_groups].tolist()))
                runs = contiguous_runs([(k, tuple(int(v) for v in part_file.ranges[k]))
                                        for k in local])
                pieces = remote.read_ranges(name, [(first, stop) for first, stop, _ in runs])
                for (first, stop, members), data in zip(runs, pieces):
                    if len(data) != stop - first:
                        self._corrupt(where, f"part file {name} is shorter than its footer "
                                             "says")
                    view = np.frombuffer(data, dtype=np.uint8)
                    for k in members:
                        start, end = (int(v) for v in part_file.ranges[k])
                        if crc32c(view[start - first:end - first]) != recorded[k]:
                            self._corrupt(where, f"checksum mismatch in row group {k} of "
                                                 f"part file {name}")
                source = pa.PythonFile(FetchedRanges(
                    part_file.size, [(first, data) for (first, _, _), data in zip(runs, pieces)]),
                    mode="r")
        except FileNotFoundError:
            raise StoreFormatError(
                f"{self._path}: corrupt or truncated store: missing part file {name} "
                f"(needed for {where})") from None
        # pre_buffer=False: one read per column chunk, inside the ranges
        # fetched (pre-buffering coalesces reads across the gaps between them)
        return self._decoded(source, part_file, local, name, where, pre_buffer=False)

    def _decoded(self, source, part_file, local, name, where, **options):
        """pyarrow's decoding of row groups ``local`` of a part file from
        ``source`` (page checksums verified); one line naming the store else."""
        import pyarrow.parquet as pq

        try:
            reader = pq.ParquetFile(source, metadata=part_file.footer,
                                    page_checksum_verification=True, **options)
            return reader.read_row_groups(local, columns=self._meta().columns,
                                          use_threads=False)
        except Exception as exc:
            raise StoreFormatError(
                f"{self._path}: corrupt or truncated store: cannot read row groups "
                f"{local} of part file {name} (needed for {where}): {exc}") from exc

    def _read_file_row_groups(self, file_number: int, row_groups, where: str):
        """Table of the global ``row_groups`` (all in one part file), checked.

        The file is memory-mapped once; in version 3 the byte range of each
        row group is checked against its CRC-32C, then pyarrow decodes
        those same mapped bytes (verifying the page checksums as well).
        The mapping is not closed explicitly: the decoded arrays may view
        it, and it goes with the last of them.
        """
        import pyarrow as pa

        meta = self._meta()
        if meta.remote is not None:
            return self._read_remote_row_groups(file_number, row_groups, where)
        part_file = self._footer(file_number, where)
        local = meta.rg_index[row_groups].tolist()
        name = meta.files[file_number]
        try:
            with open(self._path / name, "rb") as f:
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise StoreFormatError(
                f"{self._path}: corrupt or truncated store: cannot open part file {name} "
                f"(needed for {where}): {exc}") from exc
        if part_file.ranges is not None:
            if len(mapped) != part_file.size:
                self._corrupt(where, f"part file {name} changed size since it was opened")
            view = np.frombuffer(mapped, dtype=np.uint8)
            recorded = meta.checksums["row_groups"][row_groups]
            for k, expected in zip(local, recorded.tolist()):
                start, stop = (int(v) for v in part_file.ranges[k])
                if crc32c(view[start:stop]) != expected:
                    self._corrupt(where, f"checksum mismatch in row group {k} of part "
                                         f"file {name}")
            del view
        return self._decoded(pa.BufferReader(pa.py_buffer(mapped)), part_file, local,
                             name, where)

    def _read_row_groups(self, row_groups, where):
        """Concatenated ``feature``, ``row``, ``value`` of global row groups.

        ``row_groups`` is sorted; those of one file are read with one
        ``read_row_groups`` call.  The first and last feature of every row
        group are checked against the recorded ranges; the callers check
        that the features are sorted.
        """
        meta = self._meta()
        if len(row_groups) == 0:
            empty_values = None if meta.binary else np.zeros(0, dtype=meta.dtype)
            return (np.zeros(0, dtype=meta.feature_dtype), np.zeros(0, dtype=np.int32),
                    empty_values)
        files = meta.rg_file[row_groups]
        parts = {name: [] for name in meta.columns}
        for file_number in np.unique(files):
            file_number = int(file_number)
            table = self._read_file_row_groups(file_number, row_groups[files == file_number],
                                               where)
            for column in meta.columns:
                array = table.column(column)
                if array.null_count:
                    self._corrupt(where, f"null values in column {column!r} of part file "
                                         f"{meta.files[file_number]}")
                parts[column].append(array.to_numpy())
        arrays = [np.concatenate(parts[c]) if len(parts[c]) > 1 else parts[c][0]
                  for c in meta.columns]
        features, rows = arrays[0], arrays[1]
        values = None if meta.binary else arrays[2]
        ends = np.cumsum(meta.rg_nnz[row_groups])
        if len(features) != ends[-1] or len(rows) != ends[-1]:
            self._corrupt(where, "row groups hold fewer entries than recorded")
        if (not np.array_equal(features[ends - meta.rg_nnz[row_groups]],
                               meta.rg_first[row_groups])
                or not np.array_equal(features[ends - 1], meta.rg_last[row_groups])):
            self._corrupt(where, "features outside the ranges recorded for their row groups")
        return features, rows, values
