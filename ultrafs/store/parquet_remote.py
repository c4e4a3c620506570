"""The files of a Parquet-long store at an fsspec URL, read in byte ranges.

A Parquet-long store on an object store (``s3://bucket/train.parquet``)
is read through fsspec (:func:`ultrafs.store.object_store.filesystem`,
with the store's options and bounded waits).  :class:`RemoteFiles` lists
the store's objects once (names and sizes), reads the small files whole
(``_ultrafs.json``, labels, column ids) and the part files in byte ranges
only: a footer's trailer, the footer and the opening magic
(:func:`~ultrafs.store.parquet_integrity.parse_part_footer`), and the
byte ranges of the row groups a read needs (recorded in the footer,
format 3), consecutive row groups in one request, several requests at
once (``cat_ranges``).  :class:`FetchedRanges` hands those very bytes,
once their CRC-32C is checked, to pyarrow's decoder as a file that holds
nothing else: a read outside them is an error, never a silent request.
"""

from __future__ import annotations

import io

__all__ = ["FetchedRanges", "RemoteFiles", "contiguous_runs"]


class RemoteFiles:
    """The objects of one store prefix.

    Parameters
    ----------
    url : str
        The store's URL (named in every message).
    storage_options : dict or None
        fsspec options, over ultrafs' bounded waits.
    """

    def __init__(self, url: str, storage_options=None):
        from ultrafs.store.object_store import filesystem

        self.url = url
        self.fs, root = filesystem(url, storage_options)
        self.root = root.rstrip("/")
        self._sizes = None

    def request_or_fail(self, what, call):
        from ultrafs.store.object_store import request_or_fail

        return request_or_fail(what, self.url, call)

    def key(self, name: str) -> str:
        """The object key of the store's file ``name``."""
        return f"{self.root}/{name}"

    @property
    def sizes(self) -> dict:
        """``{name: size}`` of the objects directly under the prefix (one listing)."""
        if self._sizes is None:
            def listing():
                self.fs.invalidate_cache(self.root)
                return self.fs.ls(self.root, detail=True)

            try:
                entries = self.request_or_fail("list the object store", listing)
            except FileNotFoundError:
                entries = []
            self._sizes = {str(e["name"]).rstrip("/").rsplit("/", 1)[-1]: int(e.get("size") or 0)
                           for e in entries if e.get("type") == "file"}
        return self._sizes

    def has(self, name: str) -> bool:
        """Whether the listing holds the file ``name``."""
        return name in self.sizes

    def read(self, name: str, start=None, stop=None) -> bytes:
        """The bytes ``[start, stop)`` of ``name`` (the whole object by default).

        Raises
        ------
        FileNotFoundError
            If there is no such object.
        StoreFormatError
            If the server did not answer or refused (one line naming the URL).
        """
        return self.request_or_fail("read the object store",
                             lambda: self.fs.cat_file(self.key(name), start=start, end=stop))

    def read_ranges(self, name: str, ranges) -> list:
        """The bytes of each ``(start, stop)`` of ``name``, fetched at once."""
        ranges = list(ranges)
        if not ranges:
            return []
        key = self.key(name)
        return self.request_or_fail("read the object store", lambda: self.fs.cat_ranges(
            [key] * len(ranges), [int(a) for a, _ in ranges], [int(b) for _, b in ranges],
            on_error="raise"))


def contiguous_runs(ranges) -> list:
    """``[(first, stop, [k, ...]), ...]``: the row groups ``k`` whose byte
    ranges ``ranges[k] = (start, stop)`` (in the order given) follow one
    another, merged into runs read with one request each."""
    runs = []
    for k, (start, stop) in ranges:
        if runs and runs[-1][1] == start:
            runs[-1][1] = stop
            runs[-1][2].append(k)
        else:
            runs.append([start, stop, [k]])
    return [tuple(run) for run in runs]


class FetchedRanges(io.RawIOBase):
    """A read-only file of ``size`` bytes of which only some ranges are held.

    Parameters
    ----------
    size : int
        The part file's size (what pyarrow's ``seek(0, 2)`` sees).
    pieces : list of (int, bytes)
        Each held range's start and its bytes.

    Notes
    -----
    Wrapped in ``pyarrow.PythonFile`` and given to ``pyarrow.parquet.ParquetFile``
    with the verified footer, the decoder reads the column chunks of the
    row groups asked for, which lie inside the pieces; a read anywhere else
    raises ``OSError`` (which the reader reports as a corrupt store).
    """

    def __init__(self, size: int, pieces):
        super().__init__()
        self._size = int(size)
        self._pieces = sorted((int(start), memoryview(data)) for start, data in pieces)
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset, whence=io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        position = base + int(offset)
        if position < 0:
            raise OSError("negative seek position")
        self._position = position
        return position

    def read(self, n=-1) -> bytes:
        start = self._position
        stop = self._size if n is None or n < 0 else min(self._size, start + int(n))
        if stop <= start:
            return b""
        for first, data in self._pieces:
            if first <= start and stop <= first + len(data):
                self._position = stop
                return bytes(data[start - first:stop - first])
        raise OSError(f"bytes {start}:{stop} lie outside the row groups fetched")

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

