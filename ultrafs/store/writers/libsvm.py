"""Streaming LIBSVM / svmlight reader and ingest into a column store.

:func:`iter_libsvm` reads a (possibly compressed) LIBSVM file in chunks of
complete lines and parses each chunk with a numba kernel
(:mod:`ultrafs.kernels.libsvm_parse`); values are bit-identical to
``sklearn.datasets.load_svmlight_file``.

:func:`ingest_libsvm` turns a file into an on-disk column store with an
external transpose (:class:`ExternalTranspose`): entries arrive row by
row and are buffered as int64 keys ``column << 32 | row`` (plus values);
whenever the buffer exceeds its share of ``memory_budget`` it is sorted
and spilled as a *run* to a temporary directory.  The store is then
written block of columns by block of columns, each block gathering its
slice of every run through a memory map, so memory stays bounded whatever
the file size.

Accepted input (``sklearn.datasets.load_svmlight_file`` is the reference):
``label index:value ... [# comment]`` lines; blank and comment-only lines
are skipped; tokens are separated by ASCII whitespace.  Differences from
scikit-learn, all documented in ``docs/FORMAT.md``: indices within a row
need not be sorted (scikit-learn rejects unsorted rows; duplicates are
rejected by both); ``qid:`` fields are rejected; explicit zeros
(``5:0``) are dropped from the store.  Labels are stored as written; their
target type (binary, multiclass or continuous) is detected or checked by
:func:`~ultrafs.store.targets.encode_targets`.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import math
import queue
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ultrafs.errors import InputFormatError, ParameterError
from ultrafs.kernels import libsvm_parse as kp
from ultrafs.store.base import SPARSE_IDS_MIN_EMPTY, sparse_id_layout
from ultrafs.store.targets import check_target, encode_targets
from ultrafs.store.writers.zarr_writer import (StoreWriter, balanced_block_bounds,
                            check_output_path, remove_tree)
from ultrafs.store.zarr_store import CHUNK_ELEMENTS, DEFAULT_BLOCK_NNZ

__all__ = ["LibsvmChunk", "detect_compression", "iter_libsvm", "ingest_libsvm",
           "DEFAULT_MEMORY_BUDGET"]

#: default bound on the memory used by :func:`ingest_libsvm` (bytes)
DEFAULT_MEMORY_BUDGET = 256 * 2 ** 20
#: smallest accepted memory budget (bytes)
MIN_MEMORY_BUDGET = 16 * 2 ** 10
#: largest column number accepted (keys ``column << 32 | row`` fit int64)
MAX_COLUMN = 2 ** 31 - 1

_COMPRESSED_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"),
                     (b"\xfd7zXZ\x00", "xz"))
_FOREIGN_MAGIC = ((b"\x28\xb5\x2f\xfd", "zstd-compressed data (decompress it first)"),
                  (b"PK\x03\x04", "a zip archive"),
                  (b"\x89PNG", "a PNG image"),
                  (b"%PDF", "a PDF document"),
                  (b"\x7fELF", "an executable"),
                  (b"\x93NUMPY", "a numpy .npy file"),
                  (b"PAR1", "a Parquet file"))
_OPENERS = {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open,
            "none": lambda path, mode: open(path, mode)}
_DECOMPRESSION_ERRORS = (OSError, EOFError, lzma.LZMAError, gzip.BadGzipFile)


# --------------------------------------------------------------------------
# opening and reading blocks of text
# --------------------------------------------------------------------------
def detect_compression(path) -> str:
    """Compression of a file from its magic bytes.

    Returns
    -------
    kind : {"gzip", "bz2", "xz", "none"}

    Raises
    ------
    InputFormatError
        If the file is missing, a directory, or recognisably not text
        (zip, PNG, zstd...).
    """
    path = Path(path)
    if not path.exists():
        raise InputFormatError(f"{path}: no such file")
    if path.is_dir():
        raise InputFormatError(f"{path}: is a directory, not a LIBSVM text file")
    with open(path, "rb") as f:
        head = f.read(8)
    for magic, kind in _COMPRESSED_MAGIC:
        if head.startswith(magic):
            return kind
    for magic, what in _FOREIGN_MAGIC:
        if head.startswith(magic):
            raise InputFormatError(f"{path}: not a LIBSVM text file (looks like {what})")
    return "none"


def _looks_binary(block: bytes) -> bool:
    """Whether text holds control bytes that never occur in LIBSVM text."""
    head = np.frombuffer(block[:65536], dtype=np.uint8)
    return bool(np.any((head < 9) | ((head > 13) & (head < 32))))


def _iter_decompressed(path: Path, kind: str, block_size: int):
    """Yield decompressed blocks; decompression runs in a helper thread.

    The bz2/gzip/lzma modules and the parse kernel release the GIL, so
    decompressing block k+1 overlaps parsing block k.
    """
    blocks = queue.Queue(maxsize=2)
    stop = threading.Event()

    def produce():
        try:
            with _OPENERS[kind](path, "rb") as f:
                while not stop.is_set():
                    block = f.read(block_size)
                    blocks.put(block)
                    if not block:
                        return
        except BaseException as exc:         # handed to the consumer
            blocks.put(exc)

    worker = threading.Thread(target=produce, name="ultrafs-decompress", daemon=True)
    worker.start()
    try:
        while True:
            item = blocks.get()
            if isinstance(item, _DECOMPRESSION_ERRORS):
                what = "data" if kind == "none" else f"{kind} data"
                raise InputFormatError(
                    f"{path}: cannot read {what} ({type(item).__name__}: {item})") from item
            if isinstance(item, BaseException):
                raise item
            if not item:
                return
            yield item
    finally:
        stop.set()
        while worker.is_alive():
            try:
                blocks.get(timeout=0.05)
            except queue.Empty:
                pass
        worker.join()


def _iter_line_buffers(path: Path, block_size: int):
    """Yield ``(buffer, first_line)``: uint8 arrays of complete lines.

    ``first_line`` is the 0-based number of the buffer's first line.
    """
    kind = detect_compression(path)
    carry = b""
    first_line = 0
    first = True
    for block in _iter_decompressed(path, kind, block_size):
        if first:
            first = False
            if _looks_binary(block):
                raise InputFormatError(f"{path}: not a LIBSVM text file (binary content)")
        if carry:
            block = carry + block
        cut = block.rfind(b"\n") + 1
        if cut == 0:
            carry = block
            continue
        carry = block[cut:]
        buffer = np.frombuffer(block, dtype=np.uint8, count=cut)
        yield buffer, first_line
        first_line += block.count(b"\n", 0, cut)
    if carry:
        if first and _looks_binary(carry):
            raise InputFormatError(f"{path}: not a LIBSVM text file (binary content)")
        yield np.frombuffer(carry, dtype=np.uint8), first_line


# --------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------
@dataclass
class LibsvmChunk:
    """Rows parsed from one buffer of complete lines.

    Attributes
    ----------
    first_row : int
        Row number (0-based, in the file) of the chunk's first row.
    labels : ndarray of float64, shape (n_rows,)
        Original label values.
    row_nnz : ndarray of int64, shape (n_rows,)
        Entries per row (explicit zeros included).
    columns : ndarray of int64, shape (nnz,)
        Column numbers (file index minus 1 for 1-based files), row after
        row, in file order within each row.
    values : ndarray of float32 or float64, shape (nnz,)
        Values, converted as ``float()`` then cast to the dtype.
    row_lines : ndarray of int64, shape (n_rows,)
        Line number (1-based, in the file) of each row.
    """

    first_row: int
    labels: np.ndarray
    row_nnz: np.ndarray
    columns: np.ndarray
    values: np.ndarray
    row_lines: np.ndarray

    @property
    def n_rows(self) -> int:
        """Number of rows of the chunk."""
        return len(self.labels)


def _show(token: bytes, limit: int = 40) -> str:
    text = token.decode("utf-8", errors="backslashreplace")
    if len(text) > limit:
        text = text[:limit] + "..."
    return repr(text)


def _kernel_error(status, buffer, first_line, source) -> InputFormatError:
    """The InputFormatError for a non-OK status of the parse kernel."""
    code, line, start, stop, detail = (int(v) for v in status)
    token = bytes(buffer[start:stop]) if start >= 0 else b""
    where = f"{source}: line {first_line + line + 1}"
    if code == kp.ERR_INDEX_ZERO:
        problem = "feature index 0 in a 1-based file (use zero_based=True)"
    elif code == kp.ERR_NEGATIVE_INDEX:
        problem = f"negative feature index {detail}"
    elif code == kp.ERR_DUPLICATE_INDEX:
        problem = f"duplicate feature index {detail}"
    elif code == kp.ERR_QID:
        problem = f"qid fields (ranking data) are not supported: {_show(token)}"
    elif code == kp.ERR_INDEX_TOO_LARGE:
        problem = f"feature index too large in {_show(token)}"
    else:
        problem = f"malformed feature {_show(token)} (expected index:value)"
    return InputFormatError(f"{where}: {problem}")


def _resolve_fallback(buffer, fallback, labels, columns, values, first_line,
                      source, offset):
    """Convert the tokens the kernel left to Python's ``float()``."""
    for start, stop, target, line in fallback.tolist():
        token = bytes(buffer[start:stop])
        is_label = target < 0
        what = "label" if is_label else f"value of feature {columns[target] + offset}"
        try:
            number = float(token)
        except ValueError:
            raise InputFormatError(
                f"{source}: line {first_line + line + 1}: invalid {what} "
                f"{_show(token)}") from None
        if not math.isfinite(number):
            raise InputFormatError(
                f"{source}: line {first_line + line + 1}: NaN or infinite {what} "
                f"{_show(token)}")
        if is_label:
            labels[kp.FALLBACK_LABEL - target] = number
        else:
            values[target] = number


def _cast_values(values, dtype, row_nnz, row_lines, columns, source, offset):
    """Cast to the value dtype; values overflowing it are an error."""
    with np.errstate(over="ignore"):
        cast = values.astype(dtype, copy=False)
    if cast.dtype != values.dtype and cast.size:
        finite = np.isfinite(cast)
        if not finite.all():
            entry = int(np.flatnonzero(~finite)[0])
            row = int(np.searchsorted(np.cumsum(row_nnz), entry, side="right"))
            raise InputFormatError(
                f"{source}: line {row_lines[row]}: value {float(values[entry])!r} of feature "
                f"{columns[entry] + offset} overflows {np.dtype(dtype).name}")
    return cast


def parse_buffer(buffer, *, first_line=0, first_row=0, zero_based=False,
                 dtype=np.float64, source="<buffer>") -> LibsvmChunk:
    """Parse a uint8 buffer of complete LIBSVM lines.

    Parameters
    ----------
    buffer : ndarray of uint8
        Complete lines (the last one may lack its newline).
    first_line, first_row : int
        0-based line and row numbers of the buffer's start in the file.
    zero_based : bool
        Whether file indices are column numbers (else index - 1).
    dtype : float32 or float64
        Value dtype.
    source : str
        Names the file in error messages.

    Returns
    -------
    chunk : LibsvmChunk

    Raises
    ------
    InputFormatError
        On the first malformed line, naming ``source`` and the line.
    """
    (labels, row_nnz, row_lines, columns, values, fallback, status,
     _n_lines) = kp.parse_libsvm_lines(buffer, bool(zero_based))
    if status[0] != kp.OK:
        raise _kernel_error(status, buffer, first_line, source)
    offset = 0 if zero_based else 1
    if len(fallback):
        _resolve_fallback(buffer, fallback, labels, columns, values, first_line,
                          source, offset)
    row_lines = row_lines + (first_line + 1)
    values = _cast_values(values, dtype, row_nnz, row_lines, columns, source, offset)
    return LibsvmChunk(first_row, labels, row_nnz, columns, values, row_lines)


def iter_libsvm(path, *, zero_based=False, dtype="float64", block_size=8 * 2 ** 20):
    """Stream a LIBSVM / svmlight file as chunks of parsed rows.

    Parameters
    ----------
    path : str or os.PathLike
        Plain text, or gzip / bz2 / xz compressed (detected from the magic
        bytes, whatever the extension).
    zero_based : bool
        False (default): index ``k`` is column ``k - 1`` and index 0 is an
        error; True: index ``k`` is column ``k``.
    dtype : {"float32", "float64"}
        Value dtype (values are converted to double first, as
        scikit-learn does, then cast).
    block_size : int
        Bytes of decompressed text per chunk (lines are never split).

    Yields
    ------
    chunk : LibsvmChunk
        Explicit zeros are kept; chunks come in file order.

    Raises
    ------
    InputFormatError
        For missing, binary, corrupt or malformed input (one line naming
        the file and, where it applies, the line).
    """
    path = Path(path)
    dtype = _value_dtype(dtype)
    first_row = 0
    for buffer, first_line in _iter_line_buffers(path, int(block_size)):
        chunk = parse_buffer(buffer, first_line=first_line, first_row=first_row,
                             zero_based=zero_based, dtype=dtype, source=str(path))
        first_row += chunk.n_rows
        yield chunk


def _value_dtype(dtype) -> np.dtype:
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise ParameterError(f"dtype must be float32 or float64, got {dtype!r}") from None
    if dtype not in (np.float32, np.float64):
        raise ParameterError(f"dtype must be float32 or float64, got {dtype}")
    return dtype


# --------------------------------------------------------------------------
# external transpose
# --------------------------------------------------------------------------
def pack_keys(columns, rows) -> np.ndarray:
    """Sort keys ``column << 32 | row`` (both below 2**31) as int64."""
    keys = columns.astype(np.int64)
    keys <<= 32
    keys |= rows
    return keys


class ExternalTranspose:
    """Turn row-ordered entries into CSC order with bounded memory.

    Parameters
    ----------
    run_dir : Path
        Directory for spilled runs (created by the caller, removed by it).
    buffer_bytes : int
        Spill when the buffered entries take this many bytes.

    Notes
    -----
    Each entry is buffered as one int64 key ``column << 32 | row`` plus its
    value (or nothing while every value seen is 1).  Keys are unique
    (duplicate indices within a row are rejected by the parser), so
    sorting the keys orders a run by column, then row.  Spilled runs are
    appended to two flat files, ``keys.bin`` and ``values.bin``, and read
    back through one memory map each; the last run stays in memory.  Runs
    hold increasing row ranges, so concatenating the runs' slices of a
    column in run order yields that column's rows in increasing order.
    Sorting needs about twice the buffered bytes.
    """

    def __init__(self, run_dir: Path, buffer_bytes: int):
        self.run_dir = Path(run_dir)
        self.buffer_bytes = int(buffer_bytes)
        # entries per column: a dense count array (one bincount per slice, as
        # fast as it gets) while the largest column is within
        # _dense_count_limit of the entries seen, else the non-empty columns
        # and their counts (memory in proportion to the columns used, never
        # to the largest id); see _count_columns
        self._dense_counts = np.zeros(0, dtype=np.int64)
        self._sparse_counts = None
        self._n_counted = 0
        self.n_spilled = 0
        self._buffer = []
        self._buffered_bytes = 0
        self._value_dtype = None
        # spilled runs: (first key, stop key, first value or -1) in the files
        self._spilled = []
        self._n_keys_spilled = 0
        self._n_values_spilled = 0
        self._runs = []               # (keys, values or None) once finished

    # ---------------------------------------------------------------- API
    def add(self, columns, rows, values) -> None:
        """Buffer entries given in row order; ``values`` None means all ones."""
        if len(columns) == 0:
            return
        keys = pack_keys(columns, rows)
        if values is not None:
            self._value_dtype = values.dtype
        self._buffer.append((keys, values))
        self._buffered_bytes += keys.nbytes + (0 if values is None else values.nbytes)
        if self._buffered_bytes >= self.buffer_bytes:
            self._spill()

    def finish(self) -> None:
        """Map the spilled runs and sort the rest into an in-memory run."""
        keys_map = values_map = None
        # plain ndarray views of the maps: slicing them is cheaper
        if self._n_keys_spilled:
            keys_map = np.asarray(np.memmap(self._keys_file, dtype=np.int64, mode="r"))
        if self._n_values_spilled:
            values_map = np.asarray(np.memmap(self._values_file, dtype=self._value_dtype,
                                              mode="r"))
        runs = []
        for lo, hi, value_lo in self._spilled:
            values = None if value_lo < 0 else values_map[value_lo:value_lo + hi - lo]
            runs.append((keys_map[lo:hi], values))
        if self._buffer:
            runs.append(self._sorted_buffer())
        self._runs = runs

    def used_columns(self) -> tuple:
        """The non-empty columns (sorted, int64) and their entry counts."""
        if self._sparse_counts is not None:
            return self._sparse_counts
        columns = np.flatnonzero(self._dense_counts).astype(np.int64)
        return columns, self._dense_counts[columns]

    def release_counts(self) -> None:
        """Drop the column counts (once the offsets hold the same information)."""
        self._dense_counts = np.zeros(0, dtype=np.int64)
        self._sparse_counts = None

    def indptr(self, n_columns: int) -> np.ndarray:
        """Column offsets of the transposed matrix, shape (n_columns + 1,).

        The dense layout: every column ``0 .. n_columns - 1``, empty or not.
        """
        counts = np.zeros(n_columns, dtype=np.int64)
        if self._sparse_counts is None:
            dense = self._dense_counts[:n_columns]
            counts[:len(dense)] = dense
        else:
            columns, column_counts = self._sparse_counts
            counts[columns] = column_counts
        indptr = np.zeros(n_columns + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return indptr

    @staticmethod
    def compact_indptr(column_counts) -> np.ndarray:
        """Column offsets over the non-empty columns only (sparse id layout)."""
        indptr = np.zeros(len(column_counts) + 1, dtype=np.int64)
        np.cumsum(column_counts, out=indptr[1:])
        return indptr

    def iter_blocks(self, bounds, indptr, value_dtype, column_ids=None):
        """Yield the column blocks ``bounds[k]:bounds[k+1]`` in CSC order.

        Parameters
        ----------
        bounds : ndarray of int64
            Increasing column boundaries covering every column.
        indptr : ndarray of int64
            Offsets from :meth:`indptr`.
        value_dtype : numpy dtype
            dtype of the returned values.
        column_ids : ndarray of int64 or None
            Sparse layout: ``bounds`` and ``indptr`` number the non-empty
            columns, whose ids (the columns of the entries) these are.

        Yields
        ------
        first, stop : int
            Column range of the block.
        rows : ndarray of int32, shape (nnz_block,)
        values : ndarray of value_dtype, shape (nnz_block,), or None
            None when every value of the block is 1.
        """
        cursors = [0] * len(self._runs)           # runs are read front to back
        n_columns = len(indptr) - 1
        for first, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            if column_ids is None:
                stop_key = stop
            else:
                stop_key = (int(column_ids[stop]) if stop < n_columns
                            else int(column_ids[-1]) + 1)
            base = indptr[first]
            column_start = indptr[first:stop] - base
            n_out = int(indptr[stop] - base)
            rows_out = np.empty(n_out, dtype=np.int32)
            values_out = None
            filled = np.zeros(stop - first, dtype=np.int64)
            for r, (keys, values) in enumerate(self._runs):
                lo = cursors[r]
                hi = lo + int(np.searchsorted(keys[lo:], stop_key << 32))
                cursors[r] = hi
                if lo == hi:
                    continue
                run_keys = np.asarray(keys[lo:hi])
                run_columns = run_keys >> 32
                if column_ids is not None:
                    run_columns = np.searchsorted(column_ids, run_columns)
                dest = _scatter_positions(run_columns, first, column_start, filled)
                rows_out[dest] = run_keys.astype(np.int32)      # low 32 bits: the row
                if values is not None:
                    if values_out is None:
                        values_out = np.ones(n_out, dtype=value_dtype)
                    values_out[dest] = values[lo:hi]
            if values_out is not None and np.all(values_out == 1):
                values_out = None
            yield first, stop, rows_out, values_out

    def close(self) -> None:
        """Drop the buffer and the memory maps (so the files can go)."""
        self._runs = []
        self._buffer = []

    # ----------------------------------------------------------- internals
    @property
    def _keys_file(self) -> Path:
        return self.run_dir / "keys.bin"

    @property
    def _values_file(self) -> Path:
        return self.run_dir / "values.bin"

    def _sorted_buffer(self):
        """Concatenate and sort the buffer (parts freed as they are used)."""
        parts, self._buffer, self._buffered_bytes = self._buffer, [], 0
        value_dtype = next((v.dtype for _, v in parts if v is not None), None)
        key_parts = [k for k, _ in parts]
        value_parts = [v if v is not None or value_dtype is None
                       else np.ones(len(k), dtype=value_dtype) for k, v in parts]
        del parts
        keys = _concatenate_and_clear(key_parts)
        if value_dtype is None:
            keys.sort()
            values = None
        else:
            values = _concatenate_and_clear(value_parts)
            order = np.argsort(keys)
            keys = keys[order]
            values = values[order]
            del order
        self._count_columns(keys)
        return keys, values

    def _count_columns(self, sorted_keys) -> None:
        """Add the entries of a sorted run to the column counts (in slices).

        Dense counts (a ``bincount`` per slice of 2**20 keys) while the
        largest column is at most twice the entries seen plus
        :data:`~ultrafs.store.base.SPARSE_IDS_MIN_EMPTY` (so the array is
        bounded by the data, whatever the ids); past that, once and for
        all, the non-empty columns and their counts, merged run by run with
        a stable sort (two sorted sequences: linear).
        """
        step = 1 << 20
        self._n_counted += len(sorted_keys)
        needed = int(sorted_keys[-1] >> 32) + 1
        if self._sparse_counts is None \
                and needed > 2 * self._n_counted + SPARSE_IDS_MIN_EMPTY:
            self._sparse_counts = self.used_columns()
            self._dense_counts = None
        if self._sparse_counts is None:
            if needed > len(self._dense_counts):
                grown = np.zeros(max(needed, len(self._dense_counts) * 5 // 4),
                                 dtype=np.int64)
                grown[:len(self._dense_counts)] = self._dense_counts
                self._dense_counts = grown
            for start in range(0, len(sorted_keys), step):
                columns = sorted_keys[start:start + step] >> 32
                first = int(columns[0])
                columns -= first
                counts = np.bincount(columns)
                self._dense_counts[first:first + len(counts)] += counts
            return
        parts_columns, parts_counts = [self._sparse_counts[0]], [self._sparse_counts[1]]
        for start in range(0, len(sorted_keys), step):
            columns = sorted_keys[start:start + step] >> 32
            heads = np.flatnonzero(np.concatenate(([True], columns[1:] != columns[:-1])))
            parts_columns.append(columns[heads])
            parts_counts.append(np.diff(np.append(heads, len(columns))))
        columns = np.concatenate(parts_columns)
        counts = np.concatenate(parts_counts)
        order = np.argsort(columns, kind="stable")      # merges the sorted parts
        columns, counts = columns[order], counts[order]
        heads = np.flatnonzero(np.concatenate(([True], columns[1:] != columns[:-1])))
        self._sparse_counts = (columns[heads].astype(np.int64),
                               np.add.reduceat(counts, heads).astype(np.int64))

    def _spill(self) -> None:
        keys, values = self._sorted_buffer()
        with open(self._keys_file, "ab") as f:
            keys.tofile(f)
        value_lo = -1
        if values is not None:
            with open(self._values_file, "ab") as f:
                values.tofile(f)
            value_lo = self._n_values_spilled
            self._n_values_spilled += len(values)
        self._spilled.append((self._n_keys_spilled, self._n_keys_spilled + len(keys),
                              value_lo))
        self._n_keys_spilled += len(keys)
        self.n_spilled += 1


def _scatter_positions(columns, first, column_start, filled) -> np.ndarray:
    """Output positions of one run's sorted entries within a column block.

    Parameters
    ----------
    columns : ndarray of int64, shape (m,)
        Sorted column numbers of the run's entries in the block.
    first : int
        First column of the block.
    column_start : ndarray of int64
        Offset of each block column in the output.
    filled : ndarray of int64
        Entries already placed per block column (updated in place).
    """
    local = columns - first
    is_head = np.empty(len(local), dtype=bool)
    is_head[0] = True
    np.not_equal(local[1:], local[:-1], out=is_head[1:])
    heads = np.flatnonzero(is_head)
    counts = np.empty(len(heads), dtype=np.int64)
    np.subtract(heads[1:], heads[:-1], out=counts[:-1])
    counts[-1] = len(local) - heads[-1]
    head_columns = local[heads]
    dest = np.repeat(column_start[head_columns] + filled[head_columns] - heads, counts)
    dest += np.arange(len(local), dtype=np.int64)
    filled[head_columns] += counts
    return dest


def _concatenate_and_clear(parts: list) -> np.ndarray:
    """Concatenate arrays and empty the list (so the parts can be freed)."""
    joined = np.concatenate(parts) if len(parts) > 1 else parts[0]
    parts.clear()
    return joined


# --------------------------------------------------------------------------
# ingest
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class _MemoryPlan:
    """How an ingest splits its memory budget."""

    budget: int

    @property
    def buffer_bytes(self) -> int:
        """Buffered entries before a spill (sorting needs about twice that)."""
        return max(int(self.budget * 0.4), 1)

    @property
    def text_block(self) -> int:
        """Bytes of decompressed text parsed at once."""
        return int(min(8 * 2 ** 20, max(16 * 2 ** 10, self.budget // 32)))

    @property
    def group_nnz(self) -> int:
        """Entries per column group while writing the store (~40 bytes each)."""
        return int(max(1024, self.budget // 100))

    @property
    def chunk_size(self) -> int:
        """Zarr chunk length (elements): 1M unless the budget is tiny."""
        size = 4096
        while size * 2 <= min(CHUNK_ELEMENTS, self.budget // 64):
            size *= 2
        return size


def _check_ingest_parameters(dtype, n_features, memory_budget, block_nnz):
    dtype = _value_dtype(dtype)
    if n_features is not None:
        if int(n_features) != n_features or n_features < 0:
            raise ParameterError(f"n_features must be a non-negative integer, got {n_features!r}")
        n_features = int(n_features)
    if int(memory_budget) < MIN_MEMORY_BUDGET:
        raise ParameterError(
            f"memory_budget must be at least {MIN_MEMORY_BUDGET} bytes, got {memory_budget}")
    block_nnz = DEFAULT_BLOCK_NNZ if block_nnz is None else int(block_nnz)
    if block_nnz < 1:
        raise ParameterError(f"block_nnz must be >= 1, got {block_nnz}")
    return dtype, n_features, int(memory_budget), block_nnz


def _describe_call(input_path, output_path, dtype, zero_based, n_features, target):
    extra = "" if n_features is None else f", n_features={n_features}"
    extra += "" if target is None else f", target={target!r}"
    return (f"python: ultrafs.store.writers.libsvm.ingest_libsvm({str(input_path)!r}, "
            f"{str(output_path)!r}, dtype={dtype.name!r}, zero_based={zero_based}{extra})")


def _store_writer(format):
    """The writer class and output-path check of a store ``format``.

    ``"zarr"``: :class:`~ultrafs.store.writers.zarr_writer.StoreWriter`; ``"parquet"``:
    :class:`~ultrafs.store.writers.parquet_long_writer.ParquetLongWriter` (the
    Parquet-long layout).  Both take the same constructor arguments.
    """
    if format == "zarr":
        return StoreWriter, check_output_path
    if format == "parquet":
        from ultrafs.store.writers import parquet_long_writer

        return parquet_long_writer.ParquetLongWriter, parquet_long_writer.check_output_path
    raise ParameterError(f"format must be 'zarr' or 'parquet', got {format!r}")


def ingest_libsvm(input_path, output_path, *, dtype="float32", zero_based=False,
                  n_features=None, memory_budget=DEFAULT_MEMORY_BUDGET, block_nnz=None,
                  command=None, overwrite=False, format="zarr", target=None,
                  progress=None, feature_names=None) -> dict:
    """Convert a LIBSVM / svmlight file into an on-disk column store.

    Parameters
    ----------
    input_path : str or os.PathLike
        Plain, gzip, bz2 or xz text (detected from the content).
    output_path : str or os.PathLike
        Store directory to create (see ``docs/FORMAT.md``).
    dtype : {"float32", "float64"}
        Value dtype of the store.
    zero_based : bool
        False: file index ``k`` is column ``k - 1`` (feature ids keep the
        file's numbering, ``id_offset == 1``); True: column ``k``
        (``id_offset == 0``).
    n_features : int or None
        Number of columns; None uses the largest index in the file.  An
        explicit value smaller than needed is an error.
    memory_budget : int
        Approximate bound, in bytes, on the memory used for triplets,
        sorting and writing (labels, O(n_samples), and per-column counts,
        O(n_features), come on top).
    block_nnz : int or None
        Target nonzeros per block of the store's default partition.
    command : str or None
        Recorded as ``created_by``; None records the Python call.
    overwrite : bool
        Replace an existing ultrafs store at ``output_path``.
    format : {"zarr", "parquet"}
        Store layout written: Zarr v3, or the Parquet-long table (both in
        ``docs/FORMAT.md``).
    target : None, "auto", "binary", "multiclass" or "continuous"
        Target type of the labels; None (or ``"auto"``) detects it: two
        distinct values are binary, three or more integers multiclass (at
        most :data:`~ultrafs.store.targets.MAX_CLASSES`), anything else
        continuous.  An explicit type must fit the labels.
    progress : callable, optional
        Called with the number of rows parsed so far after every block of
        text (the command line's progress line).
    feature_names : str or os.PathLike, optional
        A UTF-8 names file stored with the data: one name per line, line
        ``k`` (from 0) naming the ``k``-th id (id ``k + 1`` for a 1-based
        file; an empty line leaves it unnamed), or ``id<TAB>name`` lines
        for any subset of ids (the form of the first line decides).
        Checked before the data is read, its ids against ``n_features``
        once that is known (:mod:`ultrafs.store.feature_names`).

    Returns
    -------
    summary : dict
        ``input``, ``output``, ``n_samples``, ``n_features``, ``nnz``,
        ``binary``, ``dtype``, ``target``, ``classes`` (``[]`` for a
        continuous target), ``explicit_zeros`` (dropped), ``n_runs`` (runs
        spilled to disk), ``seconds``; ``feature_names`` (the number of
        named features) when a names file was given.

    Raises
    ------
    InputFormatError
        Malformed, binary, empty input, a single label value, labels
        that do not fit ``target``, or a bad names file (one line naming
        the file and, where it applies, the line).  Nothing is left at
        ``output_path``.
    StoreExistsError
        If ``output_path`` exists and ``overwrite`` is False.
    ParameterError
        For an invalid dtype, n_features, memory_budget, block_nnz, format
        or target.
    """
    started = time.perf_counter()
    dtype, n_features, memory_budget, block_nnz = _check_ingest_parameters(
        dtype, n_features, memory_budget, block_nnz)
    target = check_target(target)
    writer_class, check_output = _store_writer(format)
    source = Path(input_path)
    output = check_output(output_path, overwrite)
    detect_compression(source)
    if command is None:
        command = _describe_call(source, output, dtype, zero_based, n_features, target)
    plan = _MemoryPlan(memory_budget)
    run_dir = Path(tempfile.mkdtemp(prefix=f"{output.name}.runs-", dir=output.parent))
    transpose = ExternalTranspose(run_dir, plan.buffer_bytes)
    try:
        names = None
        if feature_names is not None:
            from ultrafs.store.feature_names import stage_names_file

            names = stage_names_file(feature_names, run_dir / "feature_names.tsv",
                                     id_offset=0 if zero_based else 1)
            if n_features is not None:
                names.check_range(0 if zero_based else 1, n_features)
        stats = _transpose_file(source, transpose, plan, dtype, zero_based, progress)
        labels = stats.pop("labels")
        if len(labels) == 0:
            raise InputFormatError(f"{source}: no samples (empty file)")
        target_type, classes = encode_targets(labels, where=str(source), target=target)
        needed = stats["max_column"] + 1
        if n_features is None:
            n_features = needed
        elif n_features < needed:
            raise InputFormatError(
                f"{source}: n_features={n_features}, but the file has feature index "
                f"{needed - 1 + (0 if zero_based else 1)} (needs {needed} features)")
        if names is not None:
            names.check_range(0 if zero_based else 1, n_features,
                              hint="; give n_features (--n-features) to declare more "
                                   "features than the data uses")
        transpose.finish()
        used, used_counts = transpose.used_columns()
        if sparse_id_layout(n_features, len(used)):
            column_ids = used
            indptr = transpose.compact_indptr(used_counts)
        else:
            column_ids = None
            indptr = transpose.indptr(n_features)
        del used, used_counts
        transpose.release_counts()              # indptr holds the same information
        _write_csc(output, transpose, indptr, labels, plan, writer_class, dtype=dtype,
                   column_ids=column_ids, id_space=n_features,
                   binary=stats["binary"], target=target_type,
                   id_offset=0 if zero_based else 1,
                   command=command, block_nnz=block_nnz, overwrite=overwrite,
                   feature_names=names,
                   source_attrs={"path": str(source.resolve()),
                                 "bytes": source.stat().st_size,
                                 "format": "libsvm", "zero_based": bool(zero_based),
                                 "explicit_zeros_dropped": stats["explicit_zeros"]})
        n_spilled = transpose.n_spilled
    finally:
        transpose.close()
        remove_tree(run_dir)
    return {"input": str(source), "output": str(output), "n_samples": len(labels),
            "n_features": int(len(indptr) - 1), "nnz": int(indptr[-1]),
            **({} if column_ids is None else {"id_space": int(n_features)}),
            "binary": stats["binary"], "dtype": dtype.name, "target": target_type,
            "classes": [float(c) for c in classes],
            "explicit_zeros": stats["explicit_zeros"], "n_runs": n_spilled,
            **({} if names is None else {"feature_names": names.count}),
            "seconds": time.perf_counter() - started}


def _transpose_file(source, transpose, plan, dtype, zero_based, progress=None) -> dict:
    """Parse the whole file into ``transpose``; return labels and counts."""
    label_parts = []
    max_column = -1
    n_rows = 0
    explicit_zeros = 0
    binary = True
    for chunk in iter_libsvm(source, zero_based=zero_based, dtype=dtype,
                             block_size=plan.text_block):
        label_parts.append(chunk.labels)
        if chunk.columns.size:
            max_column = max(max_column, int(chunk.columns.max()))
            if max_column > MAX_COLUMN:
                offset = 0 if zero_based else 1
                raise InputFormatError(
                    f"{source}: feature index {max_column + offset} is larger than "
                    f"the supported maximum {MAX_COLUMN + offset}")
        if n_rows + chunk.n_rows >= 2 ** 31:
            raise InputFormatError(f"{source}: more than 2**31 - 1 samples")
        nonzero = chunk.values != 0
        rows = np.repeat(np.arange(n_rows, n_rows + chunk.n_rows, dtype=np.int32),
                         chunk.row_nnz)
        n_rows += chunk.n_rows
        if progress is not None:
            progress(n_rows)
        kept_values = chunk.values
        if not nonzero.all():
            explicit_zeros += int(len(nonzero) - np.count_nonzero(nonzero))
            columns, rows, kept_values = (chunk.columns[nonzero], rows[nonzero],
                                          chunk.values[nonzero])
        else:
            columns = chunk.columns
        all_ones = bool(np.all(kept_values == 1))
        binary = binary and all_ones
        transpose.add(columns, rows, None if all_ones else kept_values)
        del chunk
    labels = (np.concatenate(label_parts) if label_parts
              else np.zeros(0, dtype=np.float64))
    return {"labels": labels, "max_column": max_column,
            "explicit_zeros": explicit_zeros, "binary": binary}


def _write_csc(output, transpose, indptr, labels, plan, writer_class, *, dtype, binary,
               target, id_offset, command, block_nnz, overwrite, source_attrs,
               column_ids=None, id_space=None, feature_names=None) -> None:
    """Write the transposed triplets as a store, one column group at a time."""
    n_features = len(indptr) - 1
    layout = {} if column_ids is None else {"column_ids": column_ids, "id_space": id_space}
    writer = writer_class(output, n_samples=len(labels), n_features=n_features, **layout,
                          nnz=int(indptr[-1]), dtype=dtype, binary=binary, labels=labels,
                          id_offset=id_offset, command=command, block_nnz=block_nnz,
                          overwrite=overwrite, chunk_size=plan.chunk_size,
                          attrs={"source": source_attrs}, labels_source=str(output),
                          target=target, feature_names=feature_names)
    with writer:
        bounds = balanced_block_bounds(indptr, plan.group_nnz)
        for first, stop, rows, values in transpose.iter_blocks(bounds, indptr, dtype,
                                                               column_ids):
            if not binary and values is None:
                values = np.ones(len(rows), dtype=dtype)
            writer.append(indptr[first:stop + 1] - indptr[first], rows,
                          None if binary else values)
        writer.close()
