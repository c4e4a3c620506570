"""Direct reads of the chunk files of a local Zarr v3 store ultrafs wrote.

:class:`ChunkReader` reads one 1-D array chunk by chunk without
zarr-python (CRC-32C checked, Blosc-decoded into the result); large reads
on the main thread are split over a small pool of threads,
:func:`driver_pool`. Used by :mod:`ultrafs.store.zarr_store`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from ultrafs.store.work_buffers import thread_work as _thread_work

__all__ = ["ChunkReader", "PARALLEL_READ_MIN_CHUNKS", "driver_pool", "read_pool",
           "all_in_order"]

#: keys of an array's zarr.json that the direct reader understands
_DIRECT_ARRAY_KEYS = {"shape", "data_type", "chunk_grid", "chunk_key_encoding",
                      "fill_value", "codecs", "attributes", "zarr_format",
                      "node_type", "storage_transformers", "dimension_names"}
_DIRECT_DTYPES = {"int32": np.dtype("<i4"), "int64": np.dtype("<i8"),
                  "float32": np.dtype("<f4"), "float64": np.dtype("<f8")}


class ChunkReader:
    """Reads a 1-D array of a local format-3 store chunk by chunk.

    The layout ultrafs writes (``docs/FORMAT.md``): a regular chunk grid,
    chunk files ``c/<k>``, and the codecs bytes (little-endian), Blosc,
    CRC-32C.  A read opens the chunk files itself, verifies each chunk's
    CRC-32C (the check zarr-python's ``crc32c`` codec makes, with its
    message) and Blosc-decodes whole chunks straight into the result.
    Through zarr-python the same read takes 2-3x as long (its event loop,
    a thread hop per chunk, a decode buffer and a copy), which made a pass
    from Zarr half as fast as one in memory.  Missing chunk files read as
    the fill value, as in zarr-python (every read check rejects it).
    Thread-safe: nothing is shared between reads.
    """

    __slots__ = ("folder", "length", "dtype", "chunk", "fill", "separator")

    def __init__(self, folder, length, dtype, chunk, fill, separator):
        self.folder = folder
        self.length = length
        self.dtype = dtype
        self.chunk = chunk
        self.fill = fill
        self.separator = separator

    @classmethod
    def from_document(cls, folder: Path, doc):
        """The reader of an array's parsed ``zarr.json``; None if it is not the plain layout."""
        try:
            if not isinstance(doc, dict) or not set(doc) <= _DIRECT_ARRAY_KEYS:
                return None
            if doc["zarr_format"] != 3 or doc["node_type"] != "array" \
                    or doc.get("storage_transformers", []) != []:
                return None
            (length,) = doc["shape"]
            dtype = _DIRECT_DTYPES[doc["data_type"]]
            grid = doc["chunk_grid"]
            if grid["name"] != "regular" or set(grid) != {"name", "configuration"}:
                return None
            (chunk,) = grid["configuration"]["chunk_shape"]
            keys = doc["chunk_key_encoding"]
            separator = keys.get("configuration", {}).get("separator", "/")
            if keys["name"] != "default" or separator not in ("/", "."):
                return None
            names = [codec.get("name") for codec in doc["codecs"]]
            if names != ["bytes", "blosc", "crc32c"] \
                    or doc["codecs"][0].get("configuration", {}).get("endian") != "little":
                return None
            fill = doc["fill_value"]
            if dtype.kind == "i":
                if not (isinstance(fill, int) and not isinstance(fill, bool)):
                    return None
            elif fill in ("NaN", "Infinity", "-Infinity"):
                fill = float(fill)
            elif not isinstance(fill, (int, float)) or isinstance(fill, bool):
                return None
            if not (isinstance(length, int) and isinstance(chunk, int)
                    and length >= 0 and chunk > 0):
                return None
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return cls(folder, length, dtype, chunk, dtype.type(fill), separator)

    def chunk_path(self, k: int) -> str:
        return os.path.join(self.folder, f"c{self.separator}{k}")

    def _chunk_bytes(self, k, buffer):
        """The bytes of chunk ``k`` (in ``buffer`` when they fit), or None
        when zarr-python reads the chunk as missing."""
        try:
            with open(self.chunk_path(k), "rb", buffering=0) as handle:
                size = 0
                view = memoryview(buffer)
                while size < len(buffer):
                    got = handle.readinto(view[size:])
                    if not got:
                        return buffer[:size]
                    size += got
                # longer than any chunk ultrafs writes: read it all, as zarr does
                return np.frombuffer(bytes(buffer) + handle.read(), dtype=np.uint8)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    @staticmethod
    def _checked_body(data):
        """The chunk (uint8) without its CRC-32C, which must match (zarr-python's check)."""
        import google_crc32c

        body = data[:-4]
        computed = np.uint32(google_crc32c.value(body)).tobytes()
        stored = data[-4:].tobytes()
        if computed != stored:
            raise ValueError(
                f"Stored and computed checksum do not match. Stored: {stored!r}. "
                f"Computed: {computed!r}.")
        return body

    def _decode(self, body, into):
        """Blosc-decode a whole chunk into ``into`` (its size in bytes)."""
        from numcodecs import blosc

        # as zarr-python's Blosc codec: never blosc's global threads (a
        # decode may run on any thread, and the pass already uses them all)
        blosc.use_threads = False
        expected = self.chunk * self.dtype.itemsize
        if len(body) >= 16 and int.from_bytes(body[4:8].tobytes(), "little") == expected:
            blosc.decompress(body, into)
            return
        decoded = blosc.decompress(body)
        if len(decoded) != expected:
            raise ValueError(f"cannot reshape array of size "
                             f"{len(decoded) // self.dtype.itemsize} into shape "
                             f"({self.chunk},)")
        into[...] = np.frombuffer(decoded, dtype=self.dtype)

    def read(self, lo, hi, out=None) -> np.ndarray:
        """``array[lo:hi]`` (numpy slice semantics) as a new array, or in
        the first ``hi - lo`` items of ``out`` (returned) when it is given,
        long enough and of the array's dtype.

        Whole chunks are decoded straight into the result; the first and
        last, when only partly needed, through one scratch chunk.  One
        buffer per call holds each chunk file in turn.  A read of many
        chunks from the main thread (the driver's reads of selected
        columns, while the pass's workers are idle) is split into
        contiguous runs of chunks decoded by :func:`read_pool`'s threads
        into their own parts of the result; a failing chunk raises the
        error of the first failing run, in order (what a serial read
        raises).  Reads from other threads (the pass's tasks) stay serial.
        """
        lo, hi, _ = slice(lo, hi).indices(self.length)
        if out is None or out.dtype != self.dtype or len(out) < hi - lo:
            out = np.empty(max(hi - lo, 0), dtype=self.dtype)
        else:
            out = out[:max(hi - lo, 0)]
        if hi <= lo:
            return out
        c = self.chunk
        first_chunk, last_chunk = lo // c, (hi - 1) // c + 1
        pool, workers = driver_pool(last_chunk - first_chunk)
        if pool is None:
            self._read_chunks(lo, hi, first_chunk, last_chunk, out)
            return out
        parts = min(workers, (last_chunk - first_chunk) // PARALLEL_READ_MIN_CHUNKS)
        cuts = np.linspace(first_chunk, last_chunk, parts + 1).astype(np.int64)
        all_in_order([pool.submit(self._read_chunks, lo, hi, int(a), int(b), out)
                       for a, b in zip(cuts[:-1], cuts[1:])])
        return out

    def _read_chunks(self, lo, hi, first_chunk, last_chunk, out):
        """Decode chunks ``first_chunk:last_chunk`` of ``array[lo:hi]`` into ``out``."""
        c = self.chunk
        # Blosc never grows a chunk by more than its 16-byte header; the
        # CRC-32C adds 4; one byte more tells a longer (foreign) file.
        # This thread's buffers, kept between reads: a fresh array of a
        # few MB is a fresh mapping whose page faults cost as much as the
        # decode (``ultrafs/allocator.py``).
        work = _thread_work()
        buffer = work.take("chunk_file", np.uint8, c * self.dtype.itemsize + 21)
        scratch = None
        for k in range(first_chunk, last_chunk):
            first, last = max(k * c, lo), min((k + 1) * c, hi)
            into = out[first - lo:last - lo]
            data = self._chunk_bytes(k, buffer)
            if data is None:
                into[...] = self.fill
                continue
            body = self._checked_body(data)
            if last - first == c:
                self._decode(body, into)
            else:
                if scratch is None:
                    scratch = work.take("chunk_values", self.dtype, c)
                self._decode(body, scratch)
                into[...] = scratch[first - k * c:last - k * c]


#: chunks per thread below which a main-thread read stays serial (a chunk
#: of 2^20 entries takes 1.5-3 ms to decode, a hand-off to a thread ~0.1 ms)
PARALLEL_READ_MIN_CHUNKS = 1
_POOL = []
_POOL_LOCK = threading.Lock()


def driver_pool(n_chunks):
    """``(pool, threads)`` for a read of ``n_chunks`` chunks: the driver's
    read pool for a main-thread read of at least
    ``PARALLEL_READ_MIN_CHUNKS`` chunks per thread, else ``(None, 1)``
    (the pass's tasks, on other threads, read serially)."""
    if (n_chunks < 2 * PARALLEL_READ_MIN_CHUNKS
            or threading.current_thread() is not threading.main_thread()):
        return None, 1
    return read_pool()


def all_in_order(futures):
    """Wait for every future; raise the first one's error, in order."""
    errors = []
    for future in futures:
        try:
            future.result()
        except Exception as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


def read_pool():
    """``(pool, threads)`` of the driver's large reads (one thread per usable
    core, at most 4), or ``(None, 1)`` with a single core."""
    with _POOL_LOCK:
        if not _POOL:
            try:
                cores = len(os.sched_getaffinity(0))
            except (AttributeError, OSError):
                cores = os.cpu_count() or 1
            workers = min(4, cores)
            if workers < 2:
                _POOL.append((None, 1))
            else:
                from concurrent.futures import ThreadPoolExecutor

                _POOL.append((ThreadPoolExecutor(workers, thread_name_prefix="ultrafs-read"),
                              workers))
        return _POOL[0]
