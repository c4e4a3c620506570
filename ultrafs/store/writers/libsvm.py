"""Streaming LIBSVM / svmlight reader and ingest into a column store.

:func:`iter_libsvm` reads a (possibly compressed) LIBSVM file in chunks of
complete lines and parses each chunk with a numba kernel
(:mod:`ultrafs.kernels.libsvm_parse`); values are bit-identical to
``sklearn.datasets.load_svmlight_file``.

:func:`ingest_libsvm` turns a file into an on-disk column store with an
external transpose (:class:`ExternalTranspose`): entries arrive row by
row and are buffered as int64 keys ``column << 32 | row`` (plus values);
whenever the buffer exceeds its share of ``memory_budget`` it is sorted
(a radix sort on the column bits) and spilled as a *run* to a temporary
directory.  The store is then written group of columns by group of
columns, each group gathering its slice of every run with plain reads, so
memory stays bounded whatever the file size.  Two threads share the work:
a helper reads and parses the text while the caller's thread sorts and
spills (the kernels release the GIL), and while the store is written a
helper gathers the next group while the caller checks, hashes and writes
the current one.

:class:`LibsvmTextWriter` goes the other way for binary rows (the
kddb-like generator's ``--libsvm-out``).

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
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ultrafs.errors import InputFormatError, OutputPathError, ParameterError, StoreExistsError
from ultrafs.kernels import libsvm_parse as kp
from ultrafs.kernels.long_table import add_key_counts, sort_keys_by_column
from ultrafs.store.base import SPARSE_IDS_MIN_EMPTY, sparse_id_layout
from ultrafs.store.targets import check_target, encode_targets
from ultrafs.store.writers.zarr_writer import (StoreWriter, balanced_block_bounds,
                            check_output_path, remove_tree)
from ultrafs.store.zarr_store import CHUNK_ELEMENTS, DEFAULT_BLOCK_NNZ

__all__ = ["LibsvmChunk", "detect_compression", "iter_libsvm", "ingest_libsvm",
           "ExternalTranspose", "gather_blocks", "LibsvmTextWriter", "check_text_output",
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
        _stop_producer(stop, worker, blocks)


def _stop_producer(stop, worker, items):
    """Stop a producer thread: signal it, drain its queue until it ends, join."""
    stop.set()
    while worker.is_alive():
        try:
            items.get(timeout=0.05)
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
    n_columns : int or None
        The width when the caller knows it (every column below it): the
        column counts are then one dense int32 array of that length from
        the start (4 bytes per column); None sizes them from the data.

    Notes
    -----
    Each entry is buffered as one int64 key ``column << 32 | row`` plus its
    value (or nothing while every value seen is 1).  Keys are unique
    (duplicate indices within a row are rejected by the parser), so
    sorting the keys orders a run by column, then row.  Entries arrive in
    row order, so a stable radix sort on the column bits alone sorts a run
    (:func:`~ultrafs.kernels.long_table.sort_keys_by_column`, three passes
    for 30M columns, about 8 times faster than ``numpy.sort``).  Spilled runs are appended to two flat files, ``keys.bin`` and
    ``values.bin``, and read back with plain reads, a block's slice at a
    time, located through a sparse index of every
    :data:`RUN_INDEX_STRIDE`-th key (no memory maps: pages read are never
    counted in the process's resident memory); the last run stays in
    memory.  Runs hold increasing row ranges, so concatenating the runs'
    slices of a column in run order yields that column's rows in
    increasing order.  Sorting needs about twice the buffered bytes.
    Entries per column are counted in an int32 array (a column holds at
    most one entry per row, and rows are below 2**31).
    """

    def __init__(self, run_dir: Path, buffer_bytes: int, n_columns=None):
        self.run_dir = Path(run_dir)
        self.buffer_bytes = int(buffer_bytes)
        self._n_columns = None if n_columns is None else int(n_columns)
        # entries per column: a dense count array (one kernel pass per run)
        # while the largest column is within twice the entries seen plus
        # SPARSE_IDS_MIN_EMPTY, else the non-empty columns and their
        # counts (memory in proportion to the columns used, never to the
        # largest id); see _count_columns
        self._dense_counts = np.zeros(self._n_columns or 0, dtype=np.int32)
        self._sparse_counts = None
        self._n_counted = 0
        self.n_spilled = 0
        # the buffer: keys (and values) copied into arrays that grow up to
        # the budget and are reused run after run, with spare arrays of
        # the same size for the radix sort (no list of parts, no copies)
        self._keys_buffer = self._spare_keys = None
        self._values_buffer = self._spare_values = None
        self._n_buffered = 0
        self._run_has_values = False
        self._value_dtype = None
        # spilled runs: (first key, stop key, first value or -1, index) in the files
        self._spilled = []
        self._n_keys_spilled = 0
        self._n_values_spilled = 0
        self._runs = []               # _MemoryRun / _SpilledRun once finished
        self._files = []

    # ---------------------------------------------------------------- API
    def add(self, columns, rows, values) -> None:
        """Buffer entries given in row order; ``values`` None means all ones."""
        if len(columns) == 0:
            return
        self.add_keys(pack_keys(columns, rows), values)

    def add_keys(self, keys, values) -> None:
        """Buffer packed keys (``column << 32 | row``) and their values.

        Parameters
        ----------
        keys : ndarray of int64
            Keys of rows after every row added before, in row order (any
            column order within a row).  Copied into the buffer.
        values : ndarray or None
            Values aligned with ``keys``; None means all ones.
        """
        n = len(keys)
        if n == 0:
            return
        start, stop = self._n_buffered, self._n_buffered + n
        if values is not None:
            self._value_dtype = values.dtype
        self._keys_buffer = self._grown(self._keys_buffer, stop, np.int64)
        self._keys_buffer[start:stop] = keys
        if values is not None and not self._run_has_values:
            self._run_has_values = True
            self._values_buffer = self._grown(self._values_buffer, stop, values.dtype)
            self._values_buffer[:start] = 1
        if self._run_has_values:
            self._values_buffer = self._grown(self._values_buffer, stop, self._value_dtype)
            self._values_buffer[start:stop] = 1 if values is None else values
        self._n_buffered = stop
        entry_bytes = 8 + (self._values_buffer.itemsize if self._run_has_values else 0)
        if stop * entry_bytes >= self.buffer_bytes:
            self._spill()

    def _grown(self, buffer, length, dtype, keep=True):
        """``buffer`` with room for ``length`` entries (the buffered ones kept).

        Grows geometrically up to the budget's number of keys (one add may
        go past it).
        """
        if buffer is not None and len(buffer) >= length and buffer.dtype == dtype:
            return buffer
        limit = self.buffer_bytes // 8 + 1
        old = 0 if buffer is None else len(buffer)
        grown = np.empty(max(length, min(2 * old, limit), 1 << 12), dtype=dtype)
        if buffer is not None and keep:
            kept = min(self._n_buffered, old)
            grown[:kept] = buffer[:kept]
        return grown

    def finish(self) -> None:
        """Open the spilled runs and sort the rest into an in-memory run."""
        keys_file = values_file = None
        if self._n_keys_spilled:
            keys_file = open(self._keys_file, "rb", buffering=0)
            self._files.append(keys_file)
        if self._n_values_spilled:
            values_file = open(self._values_file, "rb", buffering=0)
            self._files.append(values_file)
        runs = [_SpilledRun(keys_file, lo, hi, values_file, value_lo, self._value_dtype,
                            index)
                for lo, hi, value_lo, index in self._spilled]
        if self._n_buffered:
            runs.append(_MemoryRun(*self._sorted_buffer()))
        # the last run is a view of one buffer; the others go
        self._keys_buffer = self._spare_keys = None
        self._values_buffer = self._spare_values = None
        self._runs = runs

    def n_used_columns(self) -> int:
        """Number of non-empty columns (no arrays built)."""
        if self._sparse_counts is not None:
            return len(self._sparse_counts[0])
        return int(np.count_nonzero(self._dense_counts))

    def used_columns(self) -> tuple:
        """The non-empty columns (sorted, int64) and their entry counts (int64)."""
        if self._sparse_counts is not None:
            return self._sparse_counts
        columns = np.flatnonzero(self._dense_counts).astype(np.int64)
        return columns, self._dense_counts[columns].astype(np.int64)

    def release_counts(self) -> None:
        """Drop the column counts (once the offsets hold the same information)."""
        self._dense_counts = np.zeros(0, dtype=np.int32)
        self._sparse_counts = None

    def release_counts_as_index(self):
        """Turn dense counts into the compact number of each column, in place.

        For the sparse id layout: entry ``c`` becomes the position of
        column ``c`` among the non-empty columns (for an empty column, that
        of the last non-empty one before it), so that :meth:`iter_blocks`
        maps a column with one lookup instead of a search in the column
        ids.  The counts are released either way.

        Returns
        -------
        index : ndarray of int32 or None
            None when the counts are sparse (then the column ids are
            searched).
        """
        index = self._dense_counts
        self.release_counts()
        if index is None or not len(index):
            return None
        np.minimum(index, 1, out=index)
        np.cumsum(index, out=index)
        index -= 1
        return index

    def indptr(self, n_columns: int) -> np.ndarray:
        """Column offsets of the transposed matrix, shape (n_columns + 1,).

        The dense layout: every column ``0 .. n_columns - 1``, empty or not.
        """
        indptr = np.zeros(n_columns + 1, dtype=np.int64)
        if self._sparse_counts is None:
            dense = self._dense_counts[:n_columns]
            indptr[1:len(dense) + 1] = dense
        else:
            columns, column_counts = self._sparse_counts
            indptr[columns + 1] = column_counts
        np.cumsum(indptr, out=indptr)
        return indptr

    @staticmethod
    def compact_indptr(column_counts) -> np.ndarray:
        """Column offsets over the non-empty columns only (sparse id layout)."""
        indptr = np.zeros(len(column_counts) + 1, dtype=np.int64)
        np.cumsum(column_counts, out=indptr[1:])
        return indptr

    def iter_blocks(self, bounds, indptr, value_dtype, column_ids=None, column_index=None):
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
        column_index : ndarray of int32 or None
            Sparse layout: :meth:`release_counts_as_index`, the position of
            each column among ``column_ids`` (else they are searched).

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
            for r, run in enumerate(self._runs):
                lo = cursors[r]
                hi = run.lower_bound(stop_key << 32, lo)
                cursors[r] = hi
                if lo == hi:
                    continue
                run_keys = run.keys(lo, hi)
                run_columns = run_keys >> 32
                if column_index is not None:
                    run_columns = column_index[run_columns]
                elif column_ids is not None:
                    run_columns = np.searchsorted(column_ids, run_columns)
                dest = _scatter_positions(run_columns, first, column_start, filled)
                del run_columns
                rows_out[dest] = run_keys.astype(np.int32)      # low 32 bits: the row
                if run.has_values:
                    if values_out is None:
                        values_out = np.ones(n_out, dtype=value_dtype)
                    values_out[dest] = run.values(lo, hi)
            if values_out is not None and np.all(values_out == 1):
                values_out = None
            yield first, stop, rows_out, values_out

    def close(self) -> None:
        """Drop the buffer and close the run files (so the files can go)."""
        self._runs = []
        self._keys_buffer = self._spare_keys = None
        self._values_buffer = self._spare_values = None
        self._n_buffered = 0
        for f in self._files:
            f.close()
        self._files = []

    # ----------------------------------------------------------- internals
    @property
    def _keys_file(self) -> Path:
        return self.run_dir / "keys.bin"

    @property
    def _values_file(self) -> Path:
        return self.run_dir / "values.bin"

    def _sorted_buffer(self):
        """Sort the buffered entries (radix sort into the spare arrays); empty the buffer."""
        n = self._n_buffered
        self._spare_keys = self._grown(self._spare_keys, len(self._keys_buffer), np.int64,
                                       keep=False)
        keys, spare_keys = self._keys_buffer[:n], self._spare_keys[:n]
        if self._run_has_values:
            self._spare_values = self._grown(self._spare_values, len(self._values_buffer),
                                             self._values_buffer.dtype, keep=False)
            values, spare_values = self._values_buffer[:n], self._spare_values[:n]
        else:
            values = spare_values = None
        keys, values = _sort_keys(keys, values, spare_keys, spare_values)
        self._n_buffered = 0
        self._run_has_values = False
        self._count_columns(keys)
        return keys, values

    def _count_columns(self, sorted_keys) -> None:
        """Add the entries of a sorted run to the column counts.

        With ``n_columns`` given: dense int32 counts of that width from the
        start (one kernel pass per run,
        :func:`~ultrafs.kernels.long_table.add_key_counts`).  Otherwise
        dense counts while the largest column is at most twice the entries
        seen plus :data:`~ultrafs.store.base.SPARSE_IDS_MIN_EMPTY` (so the
        array is bounded by the data, whatever the ids), and the non-empty
        columns with their counts (merged run by run with a stable sort:
        two sorted sequences, linear) while it is not; sparse counts turn
        dense again once enough entries are seen (kddb's first run holds
        13M entries for 30M columns, the whole file 560M).
        """
        self._n_counted += len(sorted_keys)
        needed = int(sorted_keys[-1] >> 32) + 1
        if self._n_columns is None:
            allowed = 2 * self._n_counted + SPARSE_IDS_MIN_EMPTY
            if self._sparse_counts is not None:
                columns, counts = self._sparse_counts
                top = max(needed, int(columns[-1]) + 1 if len(columns) else 0)
                if top <= allowed:
                    self._dense_counts = np.zeros(top, dtype=np.int32)
                    self._dense_counts[columns] = counts
                    self._sparse_counts = None
            elif needed > allowed:
                self._sparse_counts = self.used_columns()
                self._dense_counts = None
        if self._sparse_counts is None:
            if needed > len(self._dense_counts):
                size = needed if self._n_columns is not None else max(
                    needed, min(len(self._dense_counts) * 5 // 4,
                                2 * self._n_counted + SPARSE_IDS_MIN_EMPTY))
                grown = np.zeros(size, dtype=np.int32)
                grown[:len(self._dense_counts)] = self._dense_counts
                self._dense_counts = grown
            add_key_counts(sorted_keys, self._dense_counts)
            return
        step = 1 << 20
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
                              value_lo, keys[::RUN_INDEX_STRIDE].copy()))
        self._n_keys_spilled += len(keys)
        self.n_spilled += 1


_NO_VALUES = np.zeros(0, dtype=np.float32)


def _sort_keys(keys, values, spare_keys, spare_values):
    """Sort keys added in row order (and their values), using the spare arrays.

    The radix sort on the column bits (:func:`~ultrafs.kernels.long_table.sort_keys_by_column`)
    sorts completely because rows arrive in order; should they not, a
    comparison sort takes over.  The inputs are overwritten; the result
    lies in them or in the spare arrays.
    """
    if values is None:
        values = spare_values = _NO_VALUES
    sorted_keys, sorted_values, ok = sort_keys_by_column(keys, values, spare_keys,
                                                         spare_values)
    if values is _NO_VALUES:
        values = None
    if ok:
        return sorted_keys, (None if values is None else sorted_values)
    if values is None:                        # not reached by ingest or kddb_like
        sorted_keys.sort()
        return sorted_keys, None
    order = np.argsort(sorted_keys)
    return sorted_keys[order], sorted_values[order]


#: every RUN_INDEX_STRIDE-th key of a spilled run is kept in memory
RUN_INDEX_STRIDE = 4096


def _read_array(f, dtype, start: int, count: int) -> np.ndarray:
    """``count`` items of ``dtype`` from item ``start`` of an unbuffered file."""
    out = np.empty(count, dtype=dtype)
    view = memoryview(out).cast("B")
    f.seek(start * out.itemsize)
    done = 0
    while done < len(view):
        got = f.readinto(view[done:])
        if not got:
            raise OSError(f"{f.name}: spilled run truncated")
        done += got
    return out


class _MemoryRun:
    """The last run of a transpose, kept in memory."""

    def __init__(self, keys, values):
        self._keys, self._values = keys, values
        self.has_values = values is not None

    def lower_bound(self, target: int, lo: int) -> int:
        """First position ``>= lo`` whose key is ``>= target``."""
        return lo + int(np.searchsorted(self._keys[lo:], target))

    def keys(self, lo, hi):
        return self._keys[lo:hi]

    def values(self, lo, hi):
        return self._values[lo:hi]


class _SpilledRun:
    """A run in the spill files, read a slice at a time."""

    def __init__(self, keys_file, key_lo, key_hi, values_file, value_lo, value_dtype, index):
        self._keys_file, self._key_lo, self._n = keys_file, key_lo, key_hi - key_lo
        self._values_file, self._value_lo = values_file, value_lo
        self._value_dtype = value_dtype
        self._index = index                    # keys[0::RUN_INDEX_STRIDE] of the run
        self.has_values = value_lo >= 0

    def lower_bound(self, target: int, lo: int) -> int:
        """First position ``>= lo`` whose key is ``>= target``.

        The index brackets the answer within one stride; only that stride
        is read.
        """
        j = int(np.searchsorted(self._index, target))
        # keys[(j - 1) * S] < target <= keys[j * S] (where those exist)
        low = 0 if j == 0 else (j - 1) * RUN_INDEX_STRIDE + 1
        high = min(j * RUN_INDEX_STRIDE, self._n)
        if lo >= high:
            return lo
        start = max(lo, low)
        piece = self.keys(start, high)
        return start + int(np.searchsorted(piece, target))

    def keys(self, lo, hi):
        return _read_array(self._keys_file, np.int64, self._key_lo + lo, hi - lo)

    def values(self, lo, hi):
        return _read_array(self._values_file, self._value_dtype, self._value_lo + lo, hi - lo)


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


# --------------------------------------------------------------------------
# ingest
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class MemoryPlan:
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
    def group_columns(self) -> int:
        """Most columns per group (offsets and counters: ~50 bytes each).

        Bounds a group of wide, nearly empty columns: a test split of
        100,000 kddb rows spreads 2.9M entries over 30M columns.
        """
        return int(max(1024, self.budget // 128))

    def group_bounds(self, indptr) -> np.ndarray:
        """Column groups of about :attr:`group_nnz` entries (a group ends after
        the column that reaches it) and at most :attr:`group_columns` columns."""
        bounds = balanced_block_bounds(indptr, self.group_nnz)
        n_columns = len(indptr) - 1
        width = self.group_columns
        if n_columns > width:
            bounds = np.union1d(bounds, np.arange(width, n_columns, width, dtype=np.int64))
        return bounds

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
    plan = MemoryPlan(memory_budget)
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
        column_index = None
        if sparse_id_layout(n_features, transpose.n_used_columns()):
            column_ids, used_counts = transpose.used_columns()
            indptr = transpose.compact_indptr(used_counts)
            del used_counts
            column_index = transpose.release_counts_as_index()
        else:
            column_ids = None
            indptr = transpose.indptr(n_features)
        transpose.release_counts()              # indptr holds the same information
        _write_csc(output, transpose, indptr, labels, plan, writer_class, dtype=dtype,
                   column_ids=column_ids, column_index=column_index, id_space=n_features,
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


@dataclass
class _KeyedChunk:
    """A parsed chunk, its entries packed as keys ``column << 32 | row``."""

    labels: np.ndarray
    keys: np.ndarray
    values: np.ndarray | None      # None: every kept value is 1
    max_column: int
    explicit_zeros: int


def _key_chunk(chunk: LibsvmChunk, n_rows: int) -> _KeyedChunk:
    """Drop explicit zeros and pack the keys ``column << 32 | row``."""
    if n_rows + chunk.n_rows >= 2 ** 31:
        raise InputFormatError("more than 2**31 - 1 samples")
    max_column = int(chunk.columns.max()) if chunk.columns.size else -1
    if max_column > MAX_COLUMN:                  # reported by the consumer
        return _KeyedChunk(chunk.labels, np.zeros(0, np.int64), None, max_column, 0)
    rows = np.repeat(np.arange(n_rows, n_rows + chunk.n_rows, dtype=np.int32),
                     chunk.row_nnz)
    nonzero = chunk.values != 0
    explicit_zeros = 0
    columns, values = chunk.columns, chunk.values
    if not nonzero.all():
        explicit_zeros = int(len(nonzero) - np.count_nonzero(nonzero))
        columns, rows, values = columns[nonzero], rows[nonzero], values[nonzero]
    keys = pack_keys(columns, rows)
    if np.all(values == 1):
        values = None
    return _KeyedChunk(chunk.labels, keys, values, max_column, explicit_zeros)


def _keyed_chunks(source, plan, dtype, zero_based):
    """:func:`iter_libsvm` chunks, keyed (:func:`_key_chunk`), in order."""
    n_rows = 0
    for chunk in iter_libsvm(source, zero_based=zero_based, dtype=dtype,
                             block_size=plan.text_block):
        try:
            sorted_chunk = _key_chunk(chunk, n_rows)
        except InputFormatError as exc:
            raise InputFormatError(f"{source}: {exc}") from None
        n_rows += chunk.n_rows
        yield sorted_chunk


def _in_thread(make_iterator, name: str, depth: int = 2):
    """Yield the items of ``make_iterator()``, produced in a helper thread.

    The helper runs ahead by at most ``depth`` items; its exceptions are
    raised here, in order, after the items produced before them.  Leaving
    the loop early (an exception, ``close()``) stops and joins the helper.
    """
    items = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def produce():
        try:
            iterator = make_iterator()
            try:
                for item in iterator:
                    if not put((item, None)):
                        return
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
            put((end, None))
        except BaseException as exc:         # handed to the consumer
            put((None, exc))

    worker = threading.Thread(target=produce, name=name, daemon=True)
    worker.start()
    try:
        while True:
            item, exc = items.get()
            if exc is not None:
                raise exc
            if item is end:
                return
            yield item
    finally:
        _stop_producer(stop, worker, items)


def _transpose_file(source, transpose, plan, dtype, zero_based, progress=None) -> dict:
    """Parse the whole file into ``transpose``; return labels and counts.

    Reading, parsing and keying each chunk run in a helper thread
    (:func:`_in_thread`; the kernels release the GIL) while this thread
    sorts, counts and spills the buffered keys: both cores busy.
    """
    label_parts = []
    max_column = -1
    n_rows = 0
    explicit_zeros = 0
    binary = True
    with closing(_in_thread(lambda: _keyed_chunks(source, plan, dtype, zero_based),
                            "ultrafs-parse")) as chunks:
        for chunk in chunks:
            label_parts.append(chunk.labels)
            max_column = max(max_column, chunk.max_column)
            if max_column > MAX_COLUMN:
                offset = 0 if zero_based else 1
                raise InputFormatError(
                    f"{source}: feature index {max_column + offset} is larger than "
                    f"the supported maximum {MAX_COLUMN + offset}")
            n_rows += len(chunk.labels)
            if progress is not None:
                progress(n_rows)
            explicit_zeros += chunk.explicit_zeros
            binary = binary and chunk.values is None
            transpose.add_keys(chunk.keys, chunk.values)
            del chunk
    labels = (np.concatenate(label_parts) if label_parts
              else np.zeros(0, dtype=np.float64))
    return {"labels": labels, "max_column": max_column,
            "explicit_zeros": explicit_zeros, "binary": binary}


def _write_csc(output, transpose, indptr, labels, plan, writer_class, *, dtype, binary,
               target, id_offset, command, block_nnz, overwrite, source_attrs,
               column_ids=None, column_index=None, id_space=None,
               feature_names=None) -> None:
    """Write the transposed triplets as a store, one column group at a time."""
    n_features = len(indptr) - 1
    layout = {} if column_ids is None else {"column_ids": column_ids, "id_space": id_space}
    writer = writer_class(output, n_samples=len(labels), n_features=n_features, **layout,
                          nnz=int(indptr[-1]), dtype=dtype, binary=binary, labels=labels,
                          id_offset=id_offset, command=command, block_nnz=block_nnz,
                          overwrite=overwrite, chunk_size=plan.chunk_size,
                          attrs={"source": source_attrs}, labels_source=str(output),
                          target=target, feature_names=feature_names, indptr=indptr)
    with writer:
        bounds = plan.group_bounds(indptr)
        with closing(gather_blocks(transpose, bounds, indptr, dtype, column_ids,
                                   column_index)) as blocks:
            for first, stop, rows, values in blocks:
                if not binary and values is None:
                    values = np.ones(len(rows), dtype=dtype)
                writer.append(indptr[first:stop + 1] - indptr[first], rows,
                              None if binary else values)
        writer.close()


def gather_blocks(transpose, bounds, indptr, value_dtype, column_ids=None,
                  column_index=None):
    """:meth:`ExternalTranspose.iter_blocks`, gathered one block ahead in a helper thread.

    The next block's slices are read and scattered while the caller
    checks, hashes, compresses and writes the current one.  Close the
    generator (``contextlib.closing``) when leaving early.
    """
    return _in_thread(lambda: transpose.iter_blocks(bounds, indptr, value_dtype, column_ids,
                                                    column_index),
                      "ultrafs-gather", depth=1)


# --------------------------------------------------------------------------
# writing LIBSVM text
# --------------------------------------------------------------------------
def check_text_output(path, overwrite: bool, others=()) -> Path:
    """Validate the path of a LIBSVM text output before any work is done.

    Parameters
    ----------
    path : str or os.PathLike
    overwrite : bool
        Whether an existing regular file may be replaced.
    others : sequence of (label, path or None)
        The run's other inputs and outputs (stores...): ``path`` must name
        none of them, nor lie inside one.

    Returns
    -------
    path : Path
        The absolute path.

    Raises
    ------
    OutputPathError
        ``path`` is a directory, exists and is not a regular file, is one
        of ``others`` or lies inside one, or its folder is missing.
    StoreExistsError
        ``path`` exists and ``overwrite`` is False.
    """
    import os

    path = Path(os.path.abspath(os.fspath(path)))
    real = os.path.realpath(path)
    for label, other in others:
        if other is None:
            continue
        other_real = os.path.realpath(os.fspath(other))
        if real == other_real or real.startswith(other_real.rstrip(os.sep) + os.sep):
            raise OutputPathError(f"{path}: is the {label} {other}; "
                                  "the LIBSVM text needs a path of its own")
    if path.is_dir():
        raise OutputPathError(f"{path}: is a directory; expected a file name")
    if not path.parent.is_dir():
        raise OutputPathError(f"{path}: the folder {path.parent} does not exist")
    if os.path.lexists(path):
        if not path.is_file():
            raise OutputPathError(f"{path}: exists and is not a regular file")
        if not overwrite:
            raise StoreExistsError(f"{path}: already exists (use overwrite=True to replace it)")
    return path


class LibsvmTextWriter:
    """Stream binary rows into a LIBSVM text file that appears only when complete.

    Rows are written ``label index:1 index:1 ...`` with integer labels and
    1-based indices (``index = column + 1``, what :func:`ingest_libsvm`
    reads by default), through :func:`ultrafs.atomic.atomic_file`: a
    temporary sibling, renamed by :meth:`close`; :meth:`abort` (or an
    exception inside a ``with`` block) removes it.

    Parameters
    ----------
    path : str or os.PathLike
        Final name (checked by :func:`check_text_output` first).
    """

    def __init__(self, path):
        from ultrafs.atomic import atomic_file

        self.path = Path(path)
        self.bytes_written = 0
        self._context = atomic_file(self.path, "wb")
        self._file = self._context.__enter__()
        self._open = True

    def write_rows(self, labels, indptr, columns) -> None:
        """Append rows: ``labels`` (integers), CSR ``indptr`` (from 0) and column numbers."""
        text = kp.format_binary_rows(np.asarray(labels, dtype=np.int64),
                                     np.asarray(indptr, dtype=np.int64), columns, 1)
        self._file.write(memoryview(text))
        self.bytes_written += len(text)

    def close(self) -> Path:
        """Flush, sync and publish the file under its name."""
        if self._open:
            self._open = False
            self._context.__exit__(None, None, None)
        return self.path

    def abort(self) -> None:
        """Remove the temporary file (idempotent)."""
        if self._open:
            self._open = False
            error = RuntimeError("LIBSVM text aborted")
            try:
                self._context.__exit__(RuntimeError, error, None)
            except RuntimeError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        else:
            self.close()
        return False
