"""Checksums of the files of a Parquet-long store (format version 3).

Parquet page checksums cover the page data only: neither the page headers
(value counts, encodings, sizes) nor the footer (schema, offsets, row
counts, statistics) nor the magic bytes.  Version 3 therefore records in
``_ultrafs.json`` a CRC-32C (Castagnoli, as Zarr's ``crc32c`` codec) of

* each part file's **footer**: the last ``footer_length + 8`` bytes
  (the Thrift footer, its length and the closing magic), verified when
  the file is first opened;
* each **row group**: the byte range from its first column chunk to the
  end of its last one (page headers included), verified whenever the row
  group is read, on the very bytes the decoder then reads;
* the **labels** and **column-id** files, whole (each is read whole);
* the **metadata** itself (``metadata_checksum``: SHA-256 of the other
  attributes serialised canonically, the Zarr store's rule).

The row-group ranges of a file must tile the bytes between the opening
magic (checked too) and the footer, so every byte of every file is
covered by exactly one checksum.  The layout is in ``docs/FORMAT.md``.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np

from ultrafs.errors import StoreFormatError
from ultrafs.store.metadata import is_count

__all__ = ["CHECKSUM_ALGORITHM", "PARQUET_MAGIC", "crc32c", "metadata_checksum",
           "seal_metadata", "verify_metadata", "file_checksum", "read_checked_file",
           "check_file_bytes", "PartFile", "read_part_footer", "parse_part_footer", "part_file_checksums", "check_checksum_list"]

#: the algorithm of every checksum of a version-3 Parquet-long store
CHECKSUM_ALGORITHM = "crc32c"
#: first and last four bytes of every Parquet file
PARQUET_MAGIC = b"PAR1"


def crc32c(data) -> int:
    """CRC-32C of a bytes-like object (bytes, ``pyarrow.Buffer``) as an int."""
    import google_crc32c          # a dependency of zarr (its crc32c codec)

    return int(google_crc32c.value(data))


def metadata_checksum(attrs: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of ``attrs``, as the Zarr store's.

    :func:`ultrafs.store.metadata.metadata_checksum`: every attribute but
    ``metadata_checksum`` and ``complete``.
    """
    from ultrafs.store.metadata import metadata_checksum as shared

    return shared(attrs)


def seal_metadata(attrs: dict) -> dict:
    """A copy of ``attrs`` with its ``metadata_checksum`` (what the writer records)."""
    return dict(attrs, metadata_checksum=metadata_checksum(attrs))


def verify_metadata(path: Path, attrs: dict, name: str) -> None:
    """Check ``metadata_checksum`` against the other attributes.

    Unlike the Zarr check, this runs whenever the attribute is present,
    whatever ``format_version`` says: a version 3 store whose version a
    flipped bit lowered must not be read without its checks.

    Raises
    ------
    StoreFormatError
        If it differs from the attributes' digest (``name`` is the metadata
        file, for the message).
    """
    try:
        found = metadata_checksum(attrs)
    except (TypeError, ValueError) as exc:        # unserialisable values
        raise StoreFormatError(f"{path}: corrupt store: {name} ({exc})") from exc
    if attrs.get("metadata_checksum") != found:
        raise StoreFormatError(
            f"{path}: corrupt store: checksum mismatch in {name} (the metadata was "
            "altered after writing)")


def check_checksum_list(path: Path, values, length: int, what: str) -> np.ndarray:
    """``values`` as an int64 array of ``length`` CRC-32C values, else StoreFormatError."""
    if not (isinstance(values, list) and len(values) == length
            and all(is_count(v) and 0 <= v < 2 ** 32 for v in values)):
        raise StoreFormatError(
            f"{path}: attribute checksums.{what} is not a list of {length} CRC-32C values")
    return np.asarray(values, dtype=np.int64).reshape(-1)


def file_checksum(file: Path) -> int:
    """CRC-32C of a whole file."""
    return crc32c(Path(file).read_bytes())


def read_checked_file(store: Path, name: str, expected: int) -> bytes:
    """The bytes of ``store / name`` after checking their CRC-32C.

    Raises
    ------
    StoreFormatError
        If the file is missing, unreadable or its checksum differs.
    """
    try:
        data = (store / name).read_bytes()
    except OSError as exc:
        raise StoreFormatError(f"{store}: corrupt or truncated store: cannot read "
                               f"{name}: {exc}") from exc
    return check_file_bytes(store, name, data, expected)


def check_file_bytes(store, name: str, data: bytes, expected: int) -> bytes:
    """``data`` (the whole file ``name`` of ``store``, a path or URL) after
    checking its CRC-32C; StoreFormatError naming both if it differs."""
    if crc32c(data) != expected:
        raise StoreFormatError(f"{store}: corrupt store: checksum mismatch in {name}")
    return data


class PartFile:
    """The verified footer of one part file and its row groups' byte ranges.

    Attributes
    ----------
    footer : pyarrow.parquet.FileMetaData
        Parsed from the very bytes whose checksum was checked.
    ranges : ndarray of int64, shape (num_row_groups, 2)
        ``[start, stop)`` of each row group's column chunks; they tile the
        file from byte 4 to the footer.
    size : int
        File size in bytes when the footer was read.
    footer_crc : int
        CRC-32C of the last ``footer_length + 8`` bytes.
    """

    def __init__(self, footer, ranges, size, footer_crc):
        self.footer, self.ranges, self.size, self.footer_crc = footer, ranges, size, footer_crc


def read_part_footer(part: Path, expected_crc=None) -> PartFile:
    """Read, check and parse the footer of a Parquet file.

    Parameters
    ----------
    part : Path
    expected_crc : int or None
        The recorded CRC-32C of the footer; None only computes it (the
        writer).

    Raises
    ------
    ValueError
        If the file is too short, a magic is wrong, the footer length is
        impossible, the checksum differs, the footer does not parse, or the
        row groups do not tile the file (the caller names the store).
    """
    with open(part, "rb") as f:
        size = os.fstat(f.fileno()).st_size

        def read_at(start, stop):
            f.seek(start)
            return f.read(stop - start)

        return parse_part_footer(size, read_at, expected_crc)


def parse_part_footer(size: int, read_at, expected_crc=None) -> PartFile:
    """:func:`read_part_footer` of a file of ``size`` bytes read by
    ``read_at(start, stop)`` (a local file, or ranged requests to an object
    store: the opening magic, the trailer and the footer only).

    Raises
    ------
    ValueError
        As :func:`read_part_footer`.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if size < 12:
        raise ValueError(f"file of {size} bytes is too short for Parquet")
    head = read_at(0, 4)
    trailer = read_at(size - 8, size)
    length = int.from_bytes(trailer[:4], "little")
    if trailer[4:] != PARQUET_MAGIC:
        raise ValueError("closing magic is not PAR1")
    if length + 12 > size:
        raise ValueError(f"footer length {length} exceeds the file size {size}")
    tail = read_at(size - 8 - length, size)
    if len(tail) != length + 8:
        raise ValueError(f"file shorter than its recorded size {size}")
    footer_crc = crc32c(tail)
    if expected_crc is not None and footer_crc != expected_crc:
        raise ValueError("checksum mismatch in the footer")
    if head != PARQUET_MAGIC:
        raise ValueError("opening magic is not PAR1")
    footer = pq.read_metadata(pa.BufferReader(PARQUET_MAGIC + tail))
    ranges = _row_group_ranges(footer, size - 8 - length)
    return PartFile(footer, ranges, size, footer_crc)


def _row_group_ranges(footer, footer_start: int) -> np.ndarray:
    """Byte ranges of the row groups, checked to tile ``[4, footer_start)``."""
    ranges = np.zeros((footer.num_row_groups, 2), dtype=np.int64)
    position = len(PARQUET_MAGIC)
    for k in range(footer.num_row_groups):
        group = footer.row_group(k)
        ranges[k, 0] = position
        for c in range(group.num_columns):
            chunk = group.column(c)
            first = (chunk.dictionary_page_offset if chunk.has_dictionary_page
                     else chunk.data_page_offset)
            if first != position or chunk.total_compressed_size <= 0:
                raise ValueError(f"column chunk {c} of row group {k} does not follow "
                                 "the previous one")
            position += chunk.total_compressed_size
        ranges[k, 1] = position
    if position != footer_start:
        raise ValueError("the row groups do not end where the footer starts")
    return ranges


def part_file_checksums(part: Path) -> tuple:
    """``(footer_crc, row_group_crcs)`` of a part file just written."""
    layout = read_part_footer(part)
    with open(part, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        if len(mapped) != layout.size:
            raise ValueError(f"{part} changed size while its checksums were computed")
        data = np.frombuffer(mapped, dtype=np.uint8)
        crcs = [crc32c(data[start:stop]) for start, stop in layout.ranges]
        del data                      # before the mapping closes
    return layout.footer_crc, crcs
