"""On-disk column store: a Zarr v3 group holding X in CSC order.

The layout is documented in ``docs/FORMAT.md``; this module holds the
constants shared with :mod:`ultrafs.store.writers.zarr_writer` and the reader,
:class:`ZarrStore`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from ultrafs.errors import StoreFormatError
from ultrafs.kernels.csc_check import CSC_OK, check_csc_block, count_nonfinite
from ultrafs.kernels.spans import gather_spans
from ultrafs.store.base import ColumnBlock
from ultrafs.store.feature_names import check_names_attrs
from ultrafs.store.metadata import VALUE_DTYPES  # noqa: F401  (re-exported)
from ultrafs.store.metadata import (READ_VERSIONS, WRITE_VERSION, RecordedMeta,
                                    check_classes_and_bounds, check_complete, check_counts,
                                    check_format_marker, check_metadata_checksum,
                                    check_version3, required_attrs)
from ultrafs.store.path_store import (WrittenStore, check_regular_files, gather_columns, is_url,
                                     location_of)
from ultrafs.store.work_buffers import thread_work as _thread_work
from ultrafs.store.zarr_chunks import ChunkReader, all_in_order, driver_pool

__all__ = [
    "ZarrStore",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "READ_VERSIONS",
    "CHUNK_ELEMENTS",
    "DEFAULT_BLOCK_NNZ",
    "NAMES_FILE",
    "is_ultrafs_store",
]

#: value of the ``format`` group attribute
FORMAT_NAME = "ultrafs-colstore"
#: the format version this code writes (it reads every one of READ_VERSIONS)
FORMAT_VERSION = WRITE_VERSION
#: elements per Zarr chunk of every 1-D array (4 MiB of int32)
CHUNK_ELEMENTS = 1 << 20
#: target nonzeros per block of the default partition
DEFAULT_BLOCK_NNZ = 4 << 20
#: the optional feature names file (``id<TAB>name`` lines, see
#: :mod:`ultrafs.store.feature_names`), next to the group's ``zarr.json``
NAMES_FILE = "feature_names.tsv"

#: fill values: a missing chunk reads as values every check rejects
FILL_VALUES = {"indptr": -1, "indices": -1, "data": float("nan"),
               "labels": float("nan"), "column_ids": -1}
ARRAY_DTYPES = {"indptr": np.dtype(np.int64), "indices": np.dtype(np.int32),
                "labels": np.dtype(np.float64), "column_ids": np.dtype(np.int64)}
REQUIRED_ATTRS = ("format", "format_version", "n_samples", "n_features", "nnz",
                  "dtype", "id_offset", "classes", "binary", "block_bounds",
                  "created_by", "created_with", "complete")


def chunk_compressor():
    """The codec of every array: Blosc-LZ4 with byte shuffle (fast reads)."""
    from zarr.codecs import BloscCodec

    return BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")


def chunk_codecs():
    """Bytes-to-bytes codecs of every array (format 3): Blosc-LZ4, then CRC-32C.

    The checksum covers the compressed chunk, so any flipped bit of a chunk
    file fails its read (zarr checks it while decoding).
    """
    from zarr.codecs import Crc32cCodec

    return [chunk_compressor(), Crc32cCodec()]


def _read_group_attrs(path: Path, zarr_store=None, storage_options=None) -> dict:
    """Open the Zarr group at ``path`` and return its attributes.

    Raises
    ------
    StoreFormatError
        If ``path`` does not exist or is not a Zarr v3 group (a URL: or holds
        no published store, :func:`ultrafs.store.object_store.check_published`).
    """
    import zarr

    if is_url(path):
        from ultrafs.store.object_store import check_published, zarr_store_of

        check_published(path, storage_options)
        try:
            group = zarr.open_group(store=zarr_store or zarr_store_of(path, storage_options),
                                    mode="r", zarr_format=3)
            return dict(group.attrs)
        except Exception as exc:  # fsspec and zarr raise many kinds
            raise StoreFormatError(
                f"{path}: not an ultrafs store (cannot open as a Zarr v3 group: "
                f"{type(exc).__name__}: {exc})") from exc
    if not path.exists():
        raise StoreFormatError(f"{path}: not an ultrafs store (no such file or directory)")
    if not path.is_dir():
        raise StoreFormatError(f"{path}: not an ultrafs store (not a directory)")
    if not (path / "zarr.json").is_file():
        raise StoreFormatError(f"{path}: not an ultrafs store (no zarr.json: not a Zarr v3 group)")
    try:
        group = zarr.open_group(store=str(path), mode="r", zarr_format=3)
        return dict(group.attrs)
    except Exception as exc:  # zarr raises many kinds for foreign content
        raise StoreFormatError(
            f"{path}: not an ultrafs store (cannot open as a Zarr v3 group: {exc})"
        ) from exc


def _plain_group_attrs(path: Path):
    """The attributes of a local group's ``zarr.json``, read without zarr-python.

    Only the plain document ultrafs writes (exactly ``zarr_format`` 3,
    ``node_type`` "group" and an ``attributes`` object, in a regular file)
    is read here; anything else returns None, and :func:`_read_group_attrs`
    (zarr-python) opens it, or names what is wrong, as before.
    """
    import json
    import stat

    document = path / "zarr.json"
    try:
        if not stat.S_ISREG(os.lstat(document).st_mode):
            return None
        parsed = json.loads(document.read_bytes())
    except (OSError, ValueError):
        return None
    if (not isinstance(parsed, dict)
            or set(parsed) != {"zarr_format", "node_type", "attributes"}
            or parsed["zarr_format"] != 3 or parsed["node_type"] != "group"
            or not isinstance(parsed["attributes"], dict)):
        return None
    return parsed["attributes"]


def is_ultrafs_store(path) -> bool:
    """Whether ``path`` carries the ultrafs format marker (any version)."""
    try:
        return _read_group_attrs(Path(path)).get("format") == FORMAT_NAME
    except StoreFormatError:
        return False


#: the arrays whose ``zarr.json`` the metadata checksum covers (when present)
CHECKSUMMED_ARRAYS = ("indptr", "indices", "data", "labels", "column_ids")


def array_metadata_parts(path: Path):
    """``(name, parsed zarr.json)`` of each array of a local store, in order.

    Raises
    ------
    StoreFormatError
        If an array's ``zarr.json`` is not a regular file or not JSON.
    """
    import json

    parts = []
    for name in CHECKSUMMED_ARRAYS:
        document = path / name / "zarr.json"
        if not os.path.lexists(document):
            continue
        if not document.is_file() or document.is_symlink():
            raise StoreFormatError(f"{path}: {name}/zarr.json is not a regular file")
        try:
            parts.append((name, json.loads(document.read_bytes())))
        except (OSError, ValueError) as exc:
            raise StoreFormatError(
                f"{path}: corrupt store: cannot read {name}/zarr.json ({exc})") from None
    return parts


def _check_attrs(path: Path, attrs: dict) -> None:
    """Validate the group attributes of a store (see docs/FORMAT.md)."""
    check_format_marker(path, attrs, FORMAT_NAME, READ_VERSIONS)
    required = required_attrs(REQUIRED_ATTRS, attrs)
    if attrs.get("format_version", 1) >= 3:
        required = required + ("metadata_checksum",)
    check_complete(path, attrs, required)
    check_counts(path, attrs)
    check_classes_and_bounds(path, attrs, allow_bool=True)
    check_version3(path, attrs)


class _StoreMeta(RecordedMeta):
    """Validated metadata and the array readers of one store.

    A local store of format 3 whose metadata documents are the plain ones
    ultrafs writes (and match their ``metadata_checksum``) is opened and
    read without zarr-python (:func:`_plain_group_attrs`,
    :class:`ChunkReader`): the checksum covers every array's
    ``zarr.json``, so those documents are the ones zarr-python wrote and
    would accept.  Every other store, and every store a check refuses, is
    opened through zarr-python, which gives the messages it always gave.
    """

    def __init__(self, path: Path, zarr_store=None, storage_options=None):
        self._path = path
        self._zarr_store = zarr_store
        self._storage_options = storage_options
        self._lock = threading.Lock()
        self._arrays = None
        local = not is_url(path)
        attrs = _plain_group_attrs(path) if local and zarr_store is None else None
        if attrs is None:
            attrs = _read_group_attrs(path, zarr_store, storage_options)
        if local:
            check_regular_files(path)
        _check_attrs(path, attrs)
        check_names_attrs(path, attrs, None if is_url(path) else path / NAMES_FILE)
        super().__init__(attrs)
        expected = {"indptr": (self.n_features + 1, ARRAY_DTYPES["indptr"]),
                    "indices": (self.nnz, ARRAY_DTYPES["indices"]),
                    "labels": (self.n_samples, ARRAY_DTYPES["labels"])}
        if not self.binary:
            expected["data"] = (self.nnz, self.dtype)
        if self.sparse_ids:
            expected["column_ids"] = (self.n_features, ARRAY_DTYPES["column_ids"])
        #: the direct readers by array name, or None (read through zarr-python)
        self.readers = None
        if local and zarr_store is None and self.format_version >= 3:
            self.readers = self._direct_readers(path, attrs, expected)
        if self.readers is None:
            self._open_arrays(path, attrs, expected)
            chunks = {name: int(self._arrays[name].chunks[0])
                      for name in ("indptr", "indices")}
        else:
            chunks = {name: self.readers[name].chunk for name in ("indptr", "indices")}
        #: elements per chunk of indptr and of indices/data
        self.indptr_chunk = chunks["indptr"]
        self.entry_chunk = chunks["indices"]
        if self.sparse_ids:
            self.column_ids = self._read_column_ids(path)

    def _direct_readers(self, path, attrs, expected):
        """Chunk readers of the expected arrays, or None to open with zarr-python."""
        if self.binary and os.path.lexists(path / "data"):
            return None
        try:
            parts = array_metadata_parts(path)
            check_metadata_checksum(path, attrs, parts)
        except StoreFormatError:
            return None
        documents = dict(parts)
        readers = {}
        for name, (length, dtype) in expected.items():
            reader = ChunkReader.from_document(path / name, documents.get(name))
            if reader is None or reader.length != length or reader.dtype != dtype:
                return None
            readers[name] = reader
        return readers

    def _open_arrays(self, path, attrs=None, expected=None):
        """Open (and check) the arrays with zarr-python."""
        import zarr

        group = zarr.open_group(store=str(path) if self._zarr_store is None
                                else self._zarr_store, mode="r", zarr_format=3)
        if attrs is not None and self.binary and "data" in group:
            raise StoreFormatError(f"{path}: binary store has a 'data' array")
        arrays = {}
        for name, (length, dtype) in expected.items():
            try:
                array = group[name]
            except KeyError:
                raise StoreFormatError(f"{path}: missing array {name!r}") from None
            except Exception as exc:
                raise StoreFormatError(f"{path}: cannot open array {name!r}: {exc}") from exc
            if not isinstance(array, zarr.Array):
                raise StoreFormatError(f"{path}: {name!r} is not an array")
            if array.shape != (length,) or np.dtype(array.dtype) != dtype:
                raise StoreFormatError(
                    f"{path}: array {name!r} has shape {array.shape} and dtype "
                    f"{array.dtype}, expected ({length},) and {dtype}")
            arrays[name] = array
        # last of the metadata checks: whatever the specific checks above
        # let through (an id_offset, a class value changed...) is caught here
        if attrs is not None:
            if is_url(path):
                from ultrafs.store.object_store import remote_metadata_parts

                parts = remote_metadata_parts(path, CHECKSUMMED_ARRAYS,
                                              self._storage_options)
            else:
                parts = array_metadata_parts(path)
            check_metadata_checksum(path, attrs, parts)
        self._arrays = arrays

    @property
    def arrays(self) -> dict:
        """The zarr-python arrays (opened on first use when read directly)."""
        if self._arrays is None:
            with self._lock:
                if self._arrays is None:
                    expected = {name: (reader.length, reader.dtype)
                                for name, reader in self.readers.items()}
                    self._open_arrays(self._path, None, expected)
        return self._arrays

    def read(self, name, lo, hi, out=None) -> np.ndarray:
        """``array[lo:hi]`` of one array as numpy (errors as zarr-python raises them).

        ``out``: a buffer of at least ``hi - lo`` items of the array's
        dtype, which the direct reader fills (and returns a view of);
        zarr-python's reads ignore it.
        """
        if self.readers is not None:
            return self.readers[name].read(lo, hi, out)
        return np.asarray(self._arrays[name][lo:hi])

    def _read_column_ids(self, path):
        """The column ids (sparse layout), read whole and checked."""
        from ultrafs.store.base import check_column_ids

        try:
            raw = self.read("column_ids", 0, self.n_features)
        except Exception as exc:
            raise StoreFormatError(f"{path}: cannot read column_ids: {exc}") from exc
        try:
            return check_column_ids(raw, self.id_space, f"{path}: corrupt store")
        except ValueError as exc:
            raise StoreFormatError(str(exc)) from None


class ZarrStore(WrittenStore):
    """A column store on local disk (Zarr v3, layout in ``docs/FORMAT.md``).

    Parameters
    ----------
    path : str or os.PathLike
        Directory of the store.

    Raises
    ------
    StoreFormatError
        If ``path`` is not an ultrafs store, is incomplete, or its
        metadata is inconsistent.
    StoreVersionError
        If the store has another format version.

    Notes
    -----
    Pickling keeps only the path: an unpickled store reopens (and
    revalidates) the metadata on first use.  Reads are thread-safe; every
    read returns fresh arrays and checks them (row numbers in range and
    increasing within each column, offsets consistent, values finite), so
    missing or corrupt chunks raise :class:`StoreFormatError` instead of
    reading as zeros.
    """

    _CSC_PROBLEMS = {1: "inconsistent column offsets (indptr)",
                     2: "row numbers out of range (indices)",
                     3: "row numbers not increasing within a column (indices)"}
    _NONFINITE_PROBLEM = "NaN or infinite values (data)"
    _NAMES_FILE = NAMES_FILE

    def __init__(self, path, *, storage_options=None):
        self._init_state(location_of(path), storage_options)
        self._meta()                         # validate on open

    def _init_state(self, path, storage_options=None) -> None:
        super()._init_state(path)
        #: fsspec options of a URL store (``s3://``), carried by pickles to
        #: the workers (:mod:`ultrafs.store.object_store`)
        self.storage_options = dict(storage_options or {})

    def _pickle_args(self) -> tuple:
        return (str(self._path), self.storage_options)

    def _load_meta(self) -> _StoreMeta:
        return _StoreMeta(self._path, self._zarr_store(), self.storage_options)

    def _zarr_store(self):
        """The zarr-python store the arrays are read through; None: the path.

        A URL's is fsspec's, opened with the store's ``storage_options``
        and ultrafs' bounded waits (:mod:`ultrafs.store.object_store`).  A
        hook for subclasses that read through a wrapping zarr store, e.g.
        :class:`ultrafs.store.latency.ZarrLatencyStore` (injected latency
        per chunk request).  The metadata is always validated from the path.
        """
        if is_url(self._path):
            from ultrafs.store.object_store import zarr_store_of

            return zarr_store_of(str(self._path), self.storage_options)
        return None

    def _read_raw_label_column(self, meta) -> np.ndarray:
        try:
            return np.asarray(meta.read("labels", 0, meta.n_samples), dtype=np.float64)
        except Exception as exc:
            raise StoreFormatError(f"{self._path}: cannot read the labels: {exc}") from exc

    # ------------------------------------------------------------- blocks
    def read_range(self, start, stop) -> ColumnBlock:
        """Read columns ``start:stop`` with I/O proportional to their nnz.

        Returns
        -------
        block : ColumnBlock
            ``data`` is None when the store is binary.

        Raises
        ------
        IndexError
            If the range is outside ``0:n_features``.
        StoreFormatError
            If the stored arrays are missing chunks or corrupt.
        """
        return self._read_range(start, stop, None)

    def read_range_transient(self, start, stop) -> ColumnBlock:
        """:meth:`read_range` into this thread's work buffers
        (:mod:`ultrafs.store.work_buffers`): valid until the thread's next
        transient read."""
        return self._read_range(start, stop, _thread_work())

    def _read_range(self, start, stop, work) -> ColumnBlock:
        """:meth:`read_range`, the arrays in ``work`` when it is not None."""
        start, stop = self._check_range(start, stop)
        meta = self._meta()
        if start == stop:
            return ColumnBlock(start, np.zeros(1, dtype=np.int64),
                               np.zeros(0, dtype=np.int32),
                               None if meta.binary else np.zeros(0, dtype=meta.dtype))
        where = f"columns {start}:{stop}"

        def buffer(name, dtype, n):
            return None if work is None else work.take("block_" + name, dtype, n)

        offsets = self._read_array("indptr", start, stop + 1, where,
                                   buffer("indptr", np.int64, stop + 1 - start))
        lo, hi = int(offsets[0]), int(offsets[-1])
        if (lo < 0 or hi > meta.nnz or hi < lo or (start == 0 and lo != 0)
                or (stop == meta.n_features and hi != meta.nnz)):
            self._corrupt(where, "inconsistent column offsets (indptr)")
        # the offsets were read into a fresh array or this thread's buffer:
        # shift them in place
        indptr = offsets if offsets.flags.writeable else offsets.copy()
        indptr -= lo
        indices = self._read_array("indices", lo, hi, where,
                                   buffer("indices", np.int32, hi - lo))
        data = None if meta.binary else self._read_array(
            "data", lo, hi, where, buffer("data", meta.dtype, hi - lo))
        self._check_block(indptr, indices, data, where, first_column=start)
        return ColumnBlock(start, indptr, indices, data)

    def read_columns(self, columns) -> ColumnBlock:
        """Read arbitrary columns, in the order given (duplicates allowed).

        Columns ``>= n_features`` come back empty; the data is always
        materialised in the store dtype.  Each needed chunk is read once.
        """
        return self._read_columns(columns, values=True)

    def read_columns_lean(self, columns) -> ColumnBlock:
        """:meth:`read_columns`; a binary store's columns as row numbers only."""
        return self._read_columns(columns, values=not self._meta().binary)

    def _read_columns(self, columns, values):
        columns, inside, unique = self._unique_columns(columns)
        starts, stops = self._column_spans(unique)
        u_indices, u_data = self._read_spans(starts, stops, values)
        u_indptr = np.zeros(len(unique) + 1, dtype=np.int64)
        np.cumsum(stops - starts, out=u_indptr[1:])
        return gather_columns(columns, inside, unique,
                              ColumnBlock(-1, u_indptr, u_indices, u_data))

    def describe(self) -> dict:
        summary = super().describe()
        attrs = self._meta().attrs
        summary.update(path=str(self._path), format_version=attrs["format_version"],
                       binary=attrs["binary"], created_by=attrs["created_by"],
                       created_with=attrs["created_with"])
        return summary

    # ----------------------------------------------------------- internals
    def _read_array(self, name, lo, hi, purpose, out=None, shown=None) -> np.ndarray:
        """``array[lo:hi]`` as numpy (in ``out`` if given, see
        ``_StoreMeta.read``); I/O errors become StoreFormatError, naming
        the range ``shown`` (default ``(lo, hi)``)."""
        meta = self._meta()
        try:
            return meta.read(name, lo, hi, out)
        except Exception as exc:
            first, last = (lo, hi) if shown is None else shown
            raise StoreFormatError(
                f"{self._path}: cannot read {name}[{first}:{last}] for {purpose}: "
                f"{exc}") from exc

    def _column_spans(self, unique_columns):
        """Offsets ``indptr[c]`` and ``indptr[c + 1]`` of sorted columns."""
        meta = self._meta()
        if unique_columns.size == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        lo_col, hi_col = int(unique_columns[0]), int(unique_columns[-1]) + 1
        if hi_col - lo_col <= 4 * len(unique_columns) + meta.indptr_chunk:
            # dense enough: one contiguous read of the offsets
            offsets = self._read_array("indptr", lo_col, hi_col + 1,
                                       f"columns {lo_col}:{hi_col}")
            starts = offsets[unique_columns - lo_col]
            stops = offsets[unique_columns - lo_col + 1]
        else:
            coords = np.concatenate([unique_columns, unique_columns + 1])
            try:
                both = np.asarray(meta.arrays["indptr"].get_coordinate_selection(coords))
            except Exception as exc:
                raise StoreFormatError(
                    f"{self._path}: cannot read indptr for {len(unique_columns)} "
                    f"columns: {exc}") from exc
            starts, stops = both[:len(unique_columns)], both[len(unique_columns):]
        if np.any(starts < 0) or np.any(stops < starts) or np.any(stops > meta.nnz):
            raise StoreFormatError(
                f"{self._path}: corrupt or truncated store: inconsistent column "
                f"offsets (indptr) among columns {lo_col}:{hi_col}")
        return starts.astype(np.int64), stops.astype(np.int64)

    def _read_spans(self, starts, stops, values=True):
        """Concatenated ``indices``/``data`` of sorted, disjoint spans.

        Spans closer than a quarter chunk are read as one contiguous range
        (a group), so that each chunk is decoded once.  ``data`` is None
        when ``values`` is False (a binary store's row numbers only).  From
        the main thread (the driver's reads of chosen columns, while the
        pass's workers wait), the result is cut into one equal range of
        entries per thread of :func:`read_pool` (a cut may fall inside a
        span: its two pieces are copied by two threads), each thread reads
        and gathers its range, then each checks a range of whole columns;
        the first failing range raises its error, in order.  Neither the
        result nor the checks depend on the cut.
        """
        meta = self._meta()
        lengths = stops - starts
        out_start = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out_start[1:])
        total = int(out_start[-1])
        indices = np.empty(total, dtype=np.int32)
        data = np.ones(total, dtype=meta.dtype) if values else None
        nonempty = np.flatnonzero(lengths)
        if not nonempty.size:
            return indices, data
        s, e, dst = starts[nonempty], stops[nonempty], out_start[nonempty]
        spans = (s, e, dst, indices, data, len(lengths))
        pool, workers = driver_pool(total // meta.entry_chunk)
        if pool is None:
            self._gather_spans(spans, 0, total)
            self._check_span_columns(spans, 0, len(s))
            return indices, data
        cuts = [total * t // workers for t in range(workers + 1)]
        all_in_order([pool.submit(self._gather_spans, spans, cuts[t], cuts[t + 1])
                       for t in range(workers)])
        columns = np.searchsorted(dst, cuts[1:-1]).tolist()
        columns = [0, *columns, len(s)]
        all_in_order([pool.submit(self._check_span_columns, spans, a, b)
                       for a, b in zip(columns[:-1], columns[1:]) if a < b])
        return indices, data

    def _gather_spans(self, spans, out_lo, out_hi):
        """Read and place the entries ``out_lo:out_hi`` of the result."""
        meta = self._meta()
        s, e, dst, indices, data, _ = spans
        # the spans overlapping the range, clipped to it
        first = max(int(np.searchsorted(dst, out_lo, side="right")) - 1, 0)
        last = int(np.searchsorted(dst, out_hi, side="left"))
        d_lo = np.maximum(dst[first:last], out_lo)
        d_hi = np.minimum(dst[first:last] + (e[first:last] - s[first:last]), out_hi)
        keep = d_hi > d_lo
        src = (s[first:last] + (d_lo - dst[first:last]))[keep]
        d_lo, span_len = d_lo[keep], (d_hi - d_lo)[keep]
        if not len(src):
            return
        breaks = np.flatnonzero(src[1:] - (src[:-1] + span_len[:-1])
                                > meta.entry_chunk // 4) + 1
        shown = (int(s[0]), int(e[-1]))     # an error names the whole read, not the cut
        for group in np.split(np.arange(len(src)), breaks):
            lo, hi = int(src[group[0]]), int(src[group[-1]] + span_len[group[-1]])
            gather_spans(self._read_array("indices", lo, hi, "the requested columns",
                                          shown=shown),
                         src[group] - lo, span_len[group], indices, d_lo[group])
            if not meta.binary:
                gather_spans(self._read_array("data", lo, hi, "the requested columns",
                                              shown=shown),
                             src[group] - lo, span_len[group], data, d_lo[group])

    def _check_span_columns(self, spans, a, b):
        """Raise StoreFormatError unless the nonempty spans ``a:b`` of the
        result are valid columns."""
        s, e, dst, indices, data, n_columns = spans
        out_lo, out_hi = int(dst[a]), int(dst[b - 1] + e[b - 1] - s[b - 1])
        indptr = np.zeros(b - a + 1, dtype=np.int64)
        np.cumsum(e[a:b] - s[a:b], out=indptr[1:])
        code, _ = check_csc_block(indptr, indices[out_lo:out_hi], self._meta().n_samples)
        if code != CSC_OK or (not self._meta().binary and data is not None
                              and count_nonfinite(data[out_lo:out_hi])):
            raise StoreFormatError(
                f"{self._path}: corrupt or truncated store: invalid row numbers or "
                f"values among {n_columns} requested columns")


def reopen_lazily(path):
    """Unpickle a ZarrStore: keep the path, open the metadata on first use."""
    store = ZarrStore.__new__(ZarrStore)
    store._init_state(path)
    return store
