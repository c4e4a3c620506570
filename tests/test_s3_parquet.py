"""Parquet-long stores on object storage, against a real S3-protocol server
(issue 40: "Parquet on object storage the same way").

The server is that of ``tests/test_s3_store.py`` (moto's server mode on
127.0.0.1, reached through the real s3fs and botocore), started for this
module by the same fixture pattern, with a bucket of its own.  The round trip
``ingest --format parquet`` to ``s3://`` → ``select`` → ``evaluate`` →
``predict`` gives the model and outputs of the same file ingested into a
local Parquet-long store, bit for bit; ``write_parquet_long`` to a URL
publishes what it writes locally; a ``LocalCluster`` of process workers
opens the store itself; an unpublished prefix and a flipped byte in a row
group of a part-file object are refused in one line naming the URL.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.test_hostile import error_line, invoke
from tests.test_s3_store import (SELECT, check_ingest_twice, check_process_workers,
                                 check_select_evaluate_predict, ingested, serve_s3)

PARQUET = ["--format", "parquet"]
#: this module's bucket: moto's server keeps its buckets per process, and
#: tests/test_s3_store.py makes ``bucket`` whichever module runs first
BUCKET = "parquet-tests"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A running S3-protocol server (``tests/test_s3_store.py``'s) with this
    module's bucket, its endpoint and the LIBSVM files."""
    yield from serve_s3(tmp_path_factory.mktemp("s3p"), BUCKET)


@pytest.fixture(scope="module")
def local_parquet(s3):
    """The LIBSVM files of ``s3`` ingested into local Parquet-long stores."""
    stores = {}
    for name in ("train", "test"):
        stores[name] = s3["root"] / f"{name}.parquet"
        result = invoke(["ingest", s3["root"] / f"{name}.svm", stores[name], *PARQUET])
        assert result.exit_code == 0, result.output
    return stores


def parquet_ingested(s3, name, source="train"):
    return ingested(s3, name, source, bucket=BUCKET, suffix=".parquet", options=PARQUET)


def test_parquet_round_trip_through_s3(s3, local_parquet, tmp_path):
    """ingest --format parquet -> select -> evaluate -> predict -> info
    through s3://, each giving what the local Parquet store gives, bit for bit."""
    train, test = parquet_ingested(s3, "train"), parquet_ingested(s3, "test", "test")
    keys = s3["fs"].ls(f"{BUCKET}/train.parquet", detail=False)
    assert {k.rsplit("/", 1)[-1] for k in keys} >= {"_ultrafs.json", "_labels.parquet",
                                                     "part-00000.parquet"}
    option = s3["option"]
    check_select_evaluate_predict(s3, (train, test),
                                  (local_parquet["train"], local_parquet["test"]), tmp_path)
    info = invoke(["info", train, *option])
    assert info.exit_code == 0 and "300" in info.output and "parquet" in info.output


def test_write_parquet_long_to_a_url_and_a_pickled_store(s3, tmp_path):
    """``write_parquet_long(url, X, y)`` publishes what it writes locally
    (same fingerprint, same blocks); the store pickles with its options,
    and ``api.fit`` on the copy gives the local model."""
    import pickle

    import scipy.sparse as sp

    from ultrafs.api import fit
    from ultrafs.store import open_store
    from ultrafs.store.parquet_long import ParquetLongStore
    from ultrafs.store.writers.parquet_long_writer import write_parquet_long

    rng = np.random.default_rng(0)
    X = sp.random(120, 30, density=0.2, random_state=1, format="csc")
    y = np.where(rng.random(120) > 0.5, 1, -1)
    options = {"endpoint_url": s3["endpoint"]}
    url = f"s3://{BUCKET}/arrays.parquet"
    # small row groups and part files: reads span several runs and files
    remote = write_parquet_long(url, X, y, storage_options=options, command="test",
                                block_nnz=100, chunk_size=40, file_nnz=300)
    here = write_parquet_long(tmp_path / "arrays.parquet", X, y, command="test",
                              block_nnz=100, chunk_size=40, file_nnz=300)
    assert isinstance(remote, ParquetLongStore) and remote.attrs == here.attrs
    assert remote.fingerprint == here.fingerprint
    assert len(remote.attrs["files"]) > 1
    opened = open_store(url, storage_options=options)
    assert isinstance(opened, ParquetLongStore)
    copy = pickle.loads(pickle.dumps(opened))
    assert copy.storage_options == options
    for store in (remote, copy):
        np.testing.assert_array_equal(store.read_targets(), here.read_targets())
        for start, stop in ((0, 30), (3, 17), (29, 30)):
            a, b = store.read_range(start, stop), here.read_range(start, stop)
            np.testing.assert_array_equal(a.indptr, b.indptr)
            np.testing.assert_array_equal(a.indices, b.indices)
            np.testing.assert_array_equal(a.data, b.data)
        a, b = store.read_columns([5, 1, 29, 5]), here.read_columns([5, 1, 29, 5])
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.data, b.data)
    remote_model = fit("fgm", copy, B=2, max_iter=2)
    local_model = fit("fgm", here, B=2, max_iter=2)
    assert remote_model.features == local_model.features
    np.testing.assert_array_equal(remote_model.coef, local_model.coef)


def test_a_read_fetches_its_row_groups_not_the_part_file(s3, monkeypatch, tmp_path):
    """A column range read fetches the byte ranges of its row groups (in
    one request per run of consecutive ones), not the whole part file."""
    import scipy.sparse as sp

    from ultrafs.store import open_store
    from ultrafs.store.parquet_remote import RemoteFiles
    from ultrafs.store.writers.parquet_long_writer import write_parquet_long

    X = sp.random(200, 40, density=0.3, random_state=2, format="csc")
    y = np.arange(200) % 2
    options = {"endpoint_url": s3["endpoint"]}
    url = f"s3://{BUCKET}/ranges.parquet"
    write_parquet_long(url, X, y, storage_options=options, command="test", block_nnz=200,
                       chunk_size=100)
    fetched = []
    original = RemoteFiles.read_ranges

    def recorded(self, name, ranges):
        ranges = list(ranges)
        fetched.append((name, ranges))
        return original(self, name, ranges)

    monkeypatch.setattr(RemoteFiles, "read_ranges", recorded)
    store = open_store(url, storage_options=options)
    here = write_parquet_long(tmp_path / "ranges.parquet", X, y, command="test",
                              block_nnz=200, chunk_size=100)
    block = store.read_range(10, 14)
    np.testing.assert_array_equal(block.indices, here.read_range(10, 14).indices)
    size = s3["fs"].size(f"{BUCKET}/ranges.parquet/part-00000.parquet")
    assert [name for name, _ in fetched] == ["part-00000.parquet"]
    ranges = fetched[0][1]
    assert len(ranges) == 1 and 0 < ranges[0][1] - ranges[0][0] < size / 4


def test_parquet_process_workers_open_the_store_themselves(s3, local_cluster_client):
    """A LocalCluster of two worker processes: each opens the Parquet store
    from its URL and options and reads its row groups from the server."""
    check_process_workers(s3, parquet_ingested(s3, "cluster"), local_cluster_client,
                          "ParquetLongStore")


def test_parquet_ingest_refuses_an_existing_store_and_overwrite_replaces_it(s3):
    check_ingest_twice(s3, parquet_ingested(s3, "twice"), PARQUET)


def test_unpublished_parquet_store_is_refused(s3):
    """A prefix without its _ultrafs.json (an upload interrupted before the
    final metadata write) is refused in one line naming the URL."""
    url = parquet_ingested(s3, "unpublished")
    s3["fs"].rm_file(f"{BUCKET}/unpublished.parquet/_ultrafs.json")
    result = invoke(["select", "--data", url, *s3["option"], *SELECT])
    line = error_line(result.exit_code, result.stderr, 1)
    assert "not a published store" in line and "_ultrafs.json" in line and url in line


@pytest.mark.parametrize("target, offset, words", [
    ("part-00000.parquet", 10, "checksum mismatch in row group 0 of part file part-00000"),
    ("part-00000.parquet", -20, "checksum mismatch in the footer"),
    ("_labels.parquet", 10, "checksum mismatch in _labels.parquet"),
    ("_ultrafs.json", None, "checksum mismatch in _ultrafs.json"),
])
def test_corrupted_parquet_object_is_refused(s3, target, offset, words):
    """A flipped byte in a row group, a footer or the labels of an object
    fails its CRC-32C; an edited metadata object fails its checksum: one
    line each, naming the URL."""
    name = f"corrupt-{target.split('.')[0].strip('_')}-{offset}"
    url = parquet_ingested(s3, name)
    key = f"{BUCKET}/{name}.parquet/{target}"
    raw = bytearray(s3["fs"].cat_file(key))
    if offset is None:
        document = json.loads(bytes(raw))
        document["edited"] = True
        raw = bytearray(json.dumps(document).encode())
    else:
        raw[offset] ^= 0xFF
    s3["fs"].pipe_file(key, bytes(raw))
    result = invoke(["select", "--data", url, *s3["option"], *SELECT])
    line = error_line(result.exit_code, result.stderr, 1)
    assert words in line and url in line


def test_fetched_ranges_hold_only_what_was_fetched():
    """The decoder's view of a remote part file: reads inside a fetched
    range succeed, anything else is an error (never a silent request)."""
    from ultrafs.store.parquet_remote import FetchedRanges, contiguous_runs

    assert contiguous_runs([(0, (4, 10)), (1, (10, 30)), (3, (50, 60))]) == [
        (4, 30, [0, 1]), (50, 60, [3])]
    f = FetchedRanges(100, [(4, b"abcdef"), (50, b"0123456789")])
    assert f.seek(0, 2) == 100 and f.seek(5) == 5 and f.read(3) == b"bcd"
    f.seek(52)
    assert f.read(8) == b"23456789" and f.tell() == 60
    for start, length in ((0, 4), (8, 4), (40, 20)):
        f.seek(start)
        with pytest.raises(OSError):
            f.read(length)


@pytest.mark.parametrize("kind", ["valued", "binary", "sparse", "version1", "version2"])
def test_every_layout_reads_at_a_url_as_it_reads_locally(s3, tmp_path, kind):
    """A store of each layout (binary, the sparse id layout, and versions
    1 and 2, which record no byte ranges and are read through fsspec's
    file), published with ``publish_store``, serves what the local one
    serves: shape, ids, targets, every block, fingerprint."""
    from tests.bitflip import snapshot
    from tests.test_integrity_parquet import _downgrade, write_small
    from ultrafs.store.object_store import publish_store
    from ultrafs.store.parquet_long import METADATA_FILE, ParquetLongStore

    local = write_small(tmp_path / "s.pql", binary=kind == "binary", sparse=kind == "sparse")
    if kind.startswith("version"):
        _downgrade(local.path, int(kind[-1]))
    options = {"endpoint_url": s3["endpoint"]}
    url = f"s3://{BUCKET}/layout-{kind}.parquet"
    publish_store(local.path, url, options, root_document=METADATA_FILE)
    remote = ParquetLongStore(url, storage_options=options)
    here = ParquetLongStore(local.path)
    assert len(here.attrs["files"]) > 1
    assert snapshot(remote) == snapshot(here)
    columns = [7, 0, 39, 7, 100]
    a, b = remote.read_columns(columns), here.read_columns(columns)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)


def test_feature_names_at_a_url(s3, tmp_path):
    from ultrafs.store import open_store
    from ultrafs.store.writers.parquet_long_writer import write_parquet_long

    rng = np.random.default_rng(3)
    X, y = rng.random((30, 6)), np.arange(30) % 2
    names = [f"f{i}" for i in range(5)] + [None]
    options = {"endpoint_url": s3["endpoint"]}
    write_parquet_long(f"s3://{BUCKET}/named.parquet", X, y, feature_names=names,
                       storage_options=options, command="test")
    store = open_store(f"s3://{BUCKET}/named.parquet", storage_options=options)
    assert store.has_feature_names and store.feature_names_of([4, 0, 5]) == ["f4", "f0", None]
    s3["fs"].rm_file(f"{BUCKET}/named.parquet/_feature_names.tsv")
    with pytest.raises(Exception, match="missing feature names file"):
        open_store(f"s3://{BUCKET}/named.parquet", storage_options=options)


def test_a_flipped_byte_anywhere_in_a_part_file_is_refused(s3, tmp_path):
    """Every byte of a part file lies under a CRC-32C (opening magic, row
    groups, footer, trailer): a flip at positions spread over the object
    is refused in one error naming the URL, never served."""
    from tests.bitflip import snapshot
    from tests.test_integrity_parquet import write_small
    from ultrafs.errors import StoreFormatError
    from ultrafs.store.object_store import publish_store
    from ultrafs.store.parquet_long import METADATA_FILE, ParquetLongStore

    local = write_small(tmp_path / "s.pql")
    options = {"endpoint_url": s3["endpoint"]}
    url = f"s3://{BUCKET}/flips.parquet"
    publish_store(local.path, url, options, root_document=METADATA_FILE)
    key = f"{BUCKET}/flips.parquet/part-00000.parquet"
    original = s3["fs"].cat_file(key)
    for position in sorted({0, 3, 4, len(original) - 1, len(original) - 5,
                            *range(5, len(original) - 5, max(1, len(original) // 16))}):
        raw = bytearray(original)
        raw[position] ^= 0x01
        s3["fs"].pipe_file(key, bytes(raw))
        with pytest.raises(StoreFormatError, match=url) as caught:
            snapshot(ParquetLongStore(url, storage_options=options))
        assert "\n" not in str(caught.value)
    s3["fs"].pipe_file(key, original)
    assert snapshot(ParquetLongStore(url, storage_options=options)) == snapshot(local)
