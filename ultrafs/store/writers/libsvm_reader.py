"""Reading LIBSVM / svmlight text: opening, decompression, parsing.

:func:`iter_libsvm` reads a (possibly compressed) LIBSVM file in chunks of
complete lines and parses each chunk with a numba kernel
(:mod:`ultrafs.kernels.libsvm_parse`); values are bit-identical to
``sklearn.datasets.load_svmlight_file``. The accepted input is described
in :mod:`ultrafs.store.writers.libsvm` and ``docs/FORMAT.md``.
"""

from __future__ import annotations

import gzip
import lzma
import math
import queue
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ultrafs.errors import InputFormatError, ParameterError
from ultrafs.kernels import libsvm_parse as kp
from ultrafs.store.input_files import open_regular
from ultrafs.store.writers.decompression import open_decompressed

__all__ = ["LibsvmChunk", "detect_compression", "iter_libsvm", "parse_buffer",
           "check_value_dtype", "stop_producer", "MAX_COLUMN", "MAX_LINE_BYTES"]

#: largest column number accepted (keys ``column << 32 | row`` fit int64)
MAX_COLUMN = 2 ** 31 - 1
#: longest line read: 256 MiB, a dense row of about 13 million features
MAX_LINE_BYTES = 256 * 2**20

_COMPRESSED_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"),
                     (b"\xfd7zXZ\x00", "xz"))
_FOREIGN_MAGIC = ((b"\x28\xb5\x2f\xfd", "zstd-compressed data (decompress it first)"),
                  (b"PK\x03\x04", "a zip archive"),
                  (b"\x89PNG", "a PNG image"),
                  (b"%PDF", "a PDF document"),
                  (b"\x7fELF", "an executable"),
                  (b"\x93NUMPY", "a numpy .npy file"),
                  (b"PAR1", "a Parquet file"))
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
        If the file is missing, not a regular file (a directory, FIFO,
        socket or device: refused before reading, see
        :mod:`ultrafs.store.input_files`), or recognisably not text (zip,
        PNG, zstd...).
    """
    path = Path(path)
    with open_regular(path, "file") as f:
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
    decompressing block k+1 overlaps parsing block k.  The expansion is
    bounded (:mod:`ultrafs.store.writers.decompression`): a decompression
    bomb is one InputFormatError within its first 64 MiB of output.
    """
    blocks = queue.Queue(maxsize=2)
    stop = threading.Event()
    raw = open_regular(path, "file")
    try:
        reader = open_decompressed(raw, path, kind)
    except BaseException:
        raw.close()
        raise

    def produce():
        try:
            with reader as f:
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
        stop_producer(stop, worker, blocks)


def stop_producer(stop, worker, items):
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

    ``first_line`` is the 0-based number of the buffer's first line.  A
    line longer than :data:`MAX_LINE_BYTES` is an InputFormatError (text
    without line ends used to be gathered whole, copied again for every
    block: quadratic time and memory of its size); the blocks of a long
    line are joined once, when its end comes.
    """
    kind = detect_compression(path)
    pending = []                # blocks of the unfinished line (no b"\n" yet)
    pending_bytes = 0
    first_line = 0
    first = True
    for block in _iter_decompressed(path, kind, block_size):
        if first:
            first = False
            if _looks_binary(block):
                raise InputFormatError(f"{path}: not a LIBSVM text file (binary content)")
        cut = block.rfind(b"\n") + 1
        if cut == 0:
            pending.append(block)
            pending_bytes += len(block)
            if pending_bytes > MAX_LINE_BYTES:
                raise InputFormatError(
                    f"{path}: line {first_line + 1}: longer than "
                    f"{MAX_LINE_BYTES // 2**20} MiB without a line end: not LIBSVM text "
                    "(a row of 10 million dense features takes about 200 MiB)")
            continue
        if pending:
            cut += pending_bytes
            block = b"".join(pending + [block])
            pending, pending_bytes = [], 0
        if cut < len(block):
            pending, pending_bytes = [block[cut:]], len(block) - cut
        buffer = np.frombuffer(block, dtype=np.uint8, count=cut)
        yield buffer, first_line
        first_line += block.count(b"\n", 0, cut)
    if pending:
        carry = b"".join(pending)
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
    dtype = check_value_dtype(dtype)
    first_row = 0
    for buffer, first_line in _iter_line_buffers(path, int(block_size)):
        chunk = parse_buffer(buffer, first_line=first_line, first_row=first_row,
                             zero_based=zero_based, dtype=dtype, source=str(path))
        first_row += chunk.n_rows
        yield chunk


def check_value_dtype(dtype) -> np.dtype:
    """``dtype`` as a NumPy float32 or float64 dtype; ParameterError otherwise."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise ParameterError(f"dtype must be float32 or float64, got {dtype!r}") from None
    if dtype not in (np.float32, np.float64):
        raise ParameterError(f"dtype must be float32 or float64, got {dtype}")
    return dtype
