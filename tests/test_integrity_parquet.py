"""Integrity of Parquet stores: every flipped bit of a Parquet-long store is detected.

Format version 3 records a CRC-32C of the metadata, of each part file's
footer and of each row group's byte range (page headers included), and of
the labels and column-id files, and writes Parquet page checksums
(``ultrafs.store.parquet_integrity``).  The fuzz below flips one bit at
every byte position of every file of small stores (valued, binary, sparse
id layout), reopens, reads every block and the targets, and requires a
``StoreFormatError`` or exactly the original content: nothing may read as
other data.  Older versions stay readable; wide tables (a user's own
Parquet) verify page checksums when the writer recorded them.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from ultrafs.errors import StoreFormatError
from ultrafs.store.parquet_long import (COLUMN_IDS_FILE, LABELS_FILE, METADATA_FILE,
                                        ParquetLongStore)
from ultrafs.store.parquet_wide import ParquetWideStore
from ultrafs.store.writers.parquet_long_writer import write_parquet_long
from ultrafs.store.writers.zarr_writer import write_store

try:
    from bitflip import flip_files, positions, snapshot
except ImportError:                       # tests/ imported as a package
    from tests.bitflip import flip_files, positions, snapshot

#: positions tried per file at most: files of 0.5-3 KB, so about a third of
#: the bytes of the largest (an even spread plus the first and last 64 bytes);
#: ULTRAFS_FUZZ_POSITIONS=100000 tries every byte (about a minute per store)
POSITIONS_PER_FILE = int(os.environ.get("ULTRAFS_FUZZ_POSITIONS", "400"))
#: ULTRAFS_FUZZ_ALL_BITS=1 flips each of the 8 bits at every position
BITS = range(8) if os.environ.get("ULTRAFS_FUZZ_ALL_BITS") else None


def small_problem(binary: bool, seed: int = 3):
    """About 300 entries over 60 rows and 40 columns (some empty)."""
    rng = np.random.default_rng(seed)
    X = sp.random(60, 40, density=0.13, random_state=seed, format="csc",
                  dtype=np.float32)
    X.data = (X.data * 10 + 0.5).astype(np.float32)
    if binary:
        X.data[:] = 1
    y = rng.choice([-1.0, 1.0], 60)
    return X, y


def write_small(path, binary=False, sparse=False):
    """A Parquet-long store of two part files, several row groups each."""
    X, y = small_problem(binary)
    if sparse:                            # ids spread over 2**32: the sparse layout
        coo = X.tocoo()
        spread = np.sort(np.random.default_rng(1).choice(2 ** 32, X.shape[1],
                                                         replace=False))
        X = sp.csr_matrix((coo.data, (coo.row, spread[coo.col])), shape=(X.shape[0], 2 ** 32))
    return write_parquet_long(path, X, y, block_nnz=120, chunk_size=64, file_nnz=150,
                              command="test")


def store_files(path) -> list:
    return sorted(p.name for p in path.iterdir())


@pytest.mark.parametrize("kind", ["valued", "binary", "sparse"])
def test_every_bit_flip_is_detected(tmp_path, kind):
    store = write_small(tmp_path / "s.pql", binary=kind == "binary", sparse=kind == "sparse")
    assert (store.column_ids is not None) == (kind == "sparse")
    original = snapshot(store)
    names = store_files(store.path)
    assert LABELS_FILE in names and METADATA_FILE in names
    assert (COLUMN_IDS_FILE in names) == (kind == "sparse")
    assert sum(name.startswith("part-") for name in names) >= 2
    report = flip_files(store.path, names, lambda: ParquetLongStore(store.path), original,
                        limit=POSITIONS_PER_FILE, bits=BITS)
    sizes = {name: (store.path / name).stat().st_size for name in names}
    per_position = 1 if BITS is None else len(BITS)
    assert report.tried == per_position * sum(len(positions(size, POSITIONS_PER_FILE))
                                              for size in sizes.values())
    print(f"\n{kind}: {report.summary()}; per file {report.per_file}")
    assert report.different == 0 and report.other_error == 0, (report.summary(), report.bad)
    # every byte is covered by a checksum: not even a harmless flip
    assert report.detected == report.tried, (report.summary(), report.per_file)
    assert snapshot(ParquetLongStore(store.path)) == original      # restored


def test_flips_in_a_data_page_name_the_checksum(tmp_path):
    store = write_small(tmp_path / "s.pql")
    name = store.attrs["files"][0]
    part = store.path / name
    raw = bytearray(part.read_bytes())
    raw[len(raw) // 3] ^= 0x10
    part.write_bytes(bytes(raw))
    with pytest.raises(StoreFormatError, match=f"checksum mismatch in row group .* of "
                                               f"part file {name}") as info:
        ParquetLongStore(store.path).read_range(0, store.n_features)
    assert str(store.path) in str(info.value) and "\n" not in str(info.value)
    footer = bytearray(part.read_bytes())
    footer[len(raw) // 3] ^= 0x10                 # undo; now damage the footer
    footer[-20] ^= 0x01
    part.write_bytes(bytes(footer))
    with pytest.raises(StoreFormatError, match="checksum mismatch in the footer"):
        ParquetLongStore(store.path).read_range(0, store.n_features)


def test_metadata_and_labels_are_checked(tmp_path):
    store = write_small(tmp_path / "s.pql")
    meta_file = store.path / METADATA_FILE
    attrs = json.loads(meta_file.read_text())
    # an edit that keeps the metadata consistent is still refused
    meta_file.write_text(json.dumps(dict(attrs, id_offset=1)))
    with pytest.raises(StoreFormatError, match="checksum mismatch in _ultrafs.json"):
        ParquetLongStore(store.path)
    # a version 3 store whose version was lowered cannot skip the checks
    meta_file.write_text(json.dumps(dict(attrs, format_version=2)))
    with pytest.raises(StoreFormatError, match="checksum mismatch in _ultrafs.json"):
        ParquetLongStore(store.path)
    meta_file.write_text(json.dumps(attrs))
    labels = store.path / LABELS_FILE
    pq.write_table(pa.table({"label": -store.read_targets()}), labels)
    with pytest.raises(StoreFormatError, match="checksum mismatch in _labels.parquet"):
        ParquetLongStore(store.path).read_targets()


def test_parquet_files_carry_page_checksums(tmp_path):
    """Other readers (Spark, pyarrow) can verify the pages without ultrafs."""
    store = write_small(tmp_path / "s.pql", sparse=True)
    for name in store_files(store.path):
        if name.endswith(".parquet"):
            table = pq.read_table(store.path / name, page_checksum_verification=True)
            assert table.num_rows > 0
            raw = bytearray((store.path / name).read_bytes())
            footer = pq.read_metadata(store.path / name)
            chunk = footer.row_group(0).column(0)
            first = (chunk.dictionary_page_offset if chunk.has_dictionary_page
                     else chunk.data_page_offset)
            # the last byte of the column chunk: page data, not a page header
            raw[first + chunk.total_compressed_size - 1] ^= 0x04
            damaged = tmp_path / name
            damaged.write_bytes(bytes(raw))
            with pytest.raises(OSError, match="CRC"):
                pq.read_table(damaged, page_checksum_verification=True)


def test_fingerprint_is_the_zarr_one(tmp_path):
    """The content fingerprint does not depend on the format."""
    X, y = small_problem(False)
    long = write_parquet_long(tmp_path / "s.pql", X, y, block_nnz=50, chunk_size=16)
    zarr = write_store(tmp_path / "s.zarr", X, y)
    assert long.fingerprint == zarr.fingerprint and len(long.fingerprint) == 64
    other = write_parquet_long(tmp_path / "t.pql", X, y[::-1].copy())
    assert other.fingerprint != long.fingerprint


def _downgrade(path, version):
    """What versions 1 and 2 wrote: no checksums, fingerprint or id layout."""
    attrs = json.loads((path / METADATA_FILE).read_text())
    for name in ("fingerprint", "sparse_ids", "id_space", "checksums", "metadata_checksum"):
        attrs.pop(name, None)
    attrs["format_version"] = version
    if version == 1:
        attrs.pop("target")
    (path / METADATA_FILE).write_text(json.dumps(attrs))


@pytest.mark.parametrize("version", [1, 2])
def test_older_versions_read_identically(tmp_path, version):
    store = write_small(tmp_path / "s.pql")
    original = snapshot(store)
    _downgrade(store.path, version)
    old = ParquetLongStore(store.path)
    assert old.format_version == version and old.fingerprint is None
    assert snapshot(old) == dict(original, fingerprint=None)


def test_sparse_layout_round_trip(tmp_path):
    store = write_small(tmp_path / "s.pql", sparse=True)
    attrs = store.attrs
    assert attrs["sparse_ids"] is True and attrs["id_space"] == 2 ** 32
    assert store.n_features == 40 and store.id_space == 2 ** 32
    ids = store.column_ids
    assert ids.dtype == np.int64 and np.all(np.diff(ids) > 0) and ids[-1] < 2 ** 32
    assert not ids.flags.writeable
    # the long table holds column numbers, the ids live in _column_ids.parquet
    table = pq.read_table(store.path)
    assert table.column("feature").to_numpy().max() < 40
    stored = pq.read_table(store.path / COLUMN_IDS_FILE).column("column_id").to_numpy()
    np.testing.assert_array_equal(stored, ids)
    np.testing.assert_array_equal(store.feature_ids([0, 39]), ids[[0, 39]])
    np.testing.assert_array_equal(store.columns_of(ids[[5, 2]]), [5, 2])
    assert pickle_round_trip(store).column_ids.tolist() == ids.tolist()


def pickle_round_trip(store):
    import pickle

    return pickle.loads(pickle.dumps(store))


def test_missing_or_unsorted_column_ids_are_refused(tmp_path):
    store = write_small(tmp_path / "s.pql", sparse=True)
    (store.path / COLUMN_IDS_FILE).unlink()
    with pytest.raises(StoreFormatError, match=f"cannot read {COLUMN_IDS_FILE}"):
        ParquetLongStore(store.path)
    try:
        from parquet_tools import reseal
    except ImportError:
        from tests.parquet_tools import reseal
    pq.write_table(pa.table({"column_id": np.arange(40, dtype=np.int64)[::-1].copy()}),
                   store.path / COLUMN_IDS_FILE)
    reseal(store.path)
    with pytest.raises(StoreFormatError, match="strictly increasing"):
        ParquetLongStore(store.path)


# ------------------------------------------------------------- wide tables
def _wide(path, checksums: bool):
    values = np.arange(1, 201, dtype=np.float64).reshape(50, 4)
    table = pa.table({"a": values[:, 0], "b": values[:, 1], "c": values[:, 2],
                      "label": np.tile([0.0, 1.0], 25)})
    pq.write_table(table, path, compression="none", use_dictionary=False,
                   write_page_checksum=checksums)
    # damage one value of column "b" inside its data page (PLAIN, uncompressed)
    raw = bytearray(path.read_bytes())
    at = bytes(raw).index(np.float64(77.0).tobytes())
    raw[at + 6] ^= 0x01
    path.write_bytes(bytes(raw))


def test_wide_table_page_checksums_are_verified(tmp_path):
    _wide(tmp_path / "t.parquet", checksums=True)
    store = ParquetWideStore(tmp_path / "t.parquet")
    with pytest.raises(StoreFormatError, match="CRC") as info:
        store.read_range(0, store.n_features)
    assert "t.parquet" in str(info.value)


def test_wide_table_without_page_checksums_cannot_tell(tmp_path):
    """The documented limit: a table written without checksums reads what it holds."""
    _wide(tmp_path / "t.parquet", checksums=False)
    store = ParquetWideStore(tmp_path / "t.parquet")
    column = store.read_range(1, 2).data
    assert 77.0 not in column.tolist() and len(column) == 50


def test_fuzz_leaves_no_copies(tmp_path):
    """The fuzz restores every file (sanity of the helper)."""
    store = write_small(tmp_path / "s.pql", binary=True)
    before = {name: (store.path / name).read_bytes() for name in store_files(store.path)}
    flip_files(store.path, [LABELS_FILE], lambda: ParquetLongStore(store.path),
               snapshot(store), limit=8)
    assert {name: (store.path / name).read_bytes() for name in store_files(store.path)} == before
