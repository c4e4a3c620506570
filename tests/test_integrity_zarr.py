"""Integrity of Zarr stores: a flipped bit in any chunk is detected.

Format version 3 writes every array with Blosc then a CRC-32C codec
(``ultrafs.store.zarr_store.chunk_codecs``), so any damaged chunk file fails its
read.  The fuzz below flips one bit at a dense deterministic sample of
byte positions of every chunk file of every array (valued, binary and
sparse-id stores), reopens, reads every block and the targets, and
requires a ``StoreFormatError`` or exactly the original content.  The
``zarr.json`` metadata files are fuzzed too (covered by the group's
``metadata_checksum``, verified whenever present): detected or harmless,
including a flip lowering ``format_version`` to 2 or 1.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.errors import StoreFormatError
from ultrafs.store.writers.zarr_writer import write_store
from ultrafs.store.zarr_store import ZarrStore

try:
    from bitflip import flip_files, positions, snapshot
    from test_integrity_parquet import small_problem
except ImportError:                       # tests/ imported as a package
    from tests.bitflip import flip_files, positions, snapshot
    from tests.test_integrity_parquet import small_problem

#: positions per chunk file at most (chunks of 95-276 bytes: every third
#: byte or more, plus the first and last 16); ULTRAFS_FUZZ_POSITIONS raises it
CHUNK_POSITIONS = int(os.environ.get("ULTRAFS_FUZZ_POSITIONS", "80"))
#: positions per metadata file (zarr.json, about 730 bytes)
METADATA_POSITIONS = int(os.environ.get("ULTRAFS_FUZZ_POSITIONS", "120"))
BITS = range(8) if os.environ.get("ULTRAFS_FUZZ_ALL_BITS") else None


def write_small(path, kind):
    X, y = small_problem(kind == "binary")
    if kind == "sparse":                  # ids spread over 2**32: the sparse layout
        coo = X.tocoo()
        spread = np.sort(np.random.default_rng(1).choice(2 ** 32, X.shape[1],
                                                         replace=False))
        X = sp.csr_matrix((coo.data, (coo.row, spread[coo.col])),
                          shape=(X.shape[0], 2 ** 32))
    return write_store(path, X, y, chunk_size=64, block_nnz=120, command="test")


def files_of(store, metadata: bool) -> list:
    names = sorted(str(p.relative_to(store.path)) for p in store.path.rglob("*")
                   if p.is_file())
    return [n for n in names if n.endswith("zarr.json") == metadata]


def fuzz(store, names, limit):
    report = flip_files(store.path, names, lambda: ZarrStore(store.path), snapshot(store),
                        limit=limit, bits=BITS)
    per_position = 1 if BITS is None else len(BITS)
    assert report.tried == per_position * sum(
        len(positions((store.path / n).stat().st_size, limit)) for n in names)
    return report


@pytest.mark.parametrize("kind", ["valued", "binary", "sparse"])
def test_every_chunk_flip_is_detected(tmp_path, kind):
    store = write_small(tmp_path / "s.zarr", kind)
    assert (store.column_ids is not None) == (kind == "sparse")
    chunks = files_of(store, metadata=False)
    arrays = {name.split("/")[0] for name in chunks}
    expected = {"indptr", "indices", "labels"} | ({"data"} if kind != "binary" else set())
    assert arrays == expected | ({"column_ids"} if kind == "sparse" else set())
    if kind != "valued":                  # the arrays the valued store lacks
        chunks = [n for n in chunks if n.split("/")[0] in {"column_ids", "indices"}]
    report = fuzz(store, chunks, CHUNK_POSITIONS)
    print(f"\n{kind} chunks: {report.summary()}")
    assert report.detected == report.tried, (report.summary(), report.bad)


def test_array_metadata_flips_are_detected_or_harmless(tmp_path):
    store = write_small(tmp_path / "s.zarr", "sparse")
    names = [n for n in files_of(store, metadata=True) if "/" in n]
    assert len(names) == 5
    report = fuzz(store, names, METADATA_POSITIONS)
    print(f"\narray zarr.json: {report.summary()}")
    assert report.different == 0 and report.other_error == 0, (report.summary(), report.bad)


def test_group_metadata_flips_are_detected_or_harmless(tmp_path):
    """The group's zarr.json: its attributes are covered by metadata_checksum."""
    store = write_small(tmp_path / "s.zarr", "sparse")
    report = fuzz(store, ["zarr.json"], 10 ** 6)
    print(f"\ngroup zarr.json: {report.summary()}")
    assert report.different == 0 and report.other_error == 0, (report.summary(), report.bad)


@pytest.mark.parametrize("bit", range(8))
def test_a_lowered_format_version_is_detected(tmp_path, bit):
    store = write_small(tmp_path / "s.zarr", "sparse")
    original = snapshot(store)
    meta = store.path / "zarr.json"
    raw = bytearray(meta.read_bytes())
    at = bytes(raw).index(b'"format_version": 3') + len(b'"format_version": ')
    raw[at] ^= 1 << bit
    meta.write_bytes(bytes(raw))
    try:
        found = snapshot(ZarrStore(store.path))
    except StoreFormatError:
        return
    assert found == original
