"""The Zarr column store: contract, format, atomic writes, corruption."""

from __future__ import annotations

import json
import pickle
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.errors import InputFormatError, StoreFormatError, StoreVersionError
from ultrafs.store import InMemoryStore, open_store
from ultrafs.store.writers.zarr_writer import (StoreExistsError, StoreWriter,
                                  balanced_block_bounds, write_store)
from ultrafs.store.zarr_store import FORMAT_NAME, FORMAT_VERSION, ZarrStore

try:
    from store_contract import StoreContract, make_matrix
except ImportError:                       # tests/ imported as a package
    from tests.store_contract import StoreContract, make_matrix


# ---------------------------------------------------------------- contract
class TestZarrStoreContract(StoreContract):
    omits_binary_data = True
    max_pickle_bytes = 300

    def make_store(self, X, y, *, dtype, tmp_path, target=None):
        # tiny chunks and blocks so that reads cross chunk boundaries
        return write_store(tmp_path / "store.zarr", X, y, dtype=dtype, block_nnz=40,
                           chunk_size=16, command="test", target=target)


class TestInMemoryStoreContract(StoreContract):
    def make_store(self, X, y, *, dtype, tmp_path, target=None):
        return InMemoryStore(X, y, dtype=dtype, block_size=7, target=target)


# ----------------------------------------------------------------- helpers
def small_store(tmp_path, name="s.zarr", kind="valued", dtype=np.float32, **kwargs):
    X, y = make_matrix(kind, dtype)
    kwargs.setdefault("chunk_size", 16)
    return write_store(tmp_path / name, X, y, dtype=dtype, **kwargs), X, y


def read_attrs(path: Path) -> dict:
    return json.loads((path / "zarr.json").read_text())["attributes"]


def edit_attrs(path: Path, sign=True, **changes) -> None:
    """Change attributes; ``sign`` also updates the metadata checksum (as a
    faulty writer would), so that the specific check under test fires."""
    from ultrafs.store.metadata import metadata_checksum
    from ultrafs.store.zarr_store import array_metadata_parts

    meta_file = path / "zarr.json"
    meta = json.loads(meta_file.read_text())
    meta["attributes"].update(changes)
    if sign:
        meta["attributes"]["metadata_checksum"] = metadata_checksum(
            meta["attributes"], array_metadata_parts(path))
    meta_file.write_text(json.dumps(meta))


@pytest.mark.parametrize("changes", [{"id_offset": 3}, {"classes": [3.0, 8.5]},
                                     {"created_by": "someone else"}, {"block_nnz": 7}])
def test_metadata_changed_after_writing_is_refused(tmp_path, changes):
    """Values the other checks cannot tell from valid ones: the checksum can."""
    store, _, _ = small_store(tmp_path)
    edit_attrs(store.path, sign=False, **changes)
    with pytest.raises(StoreFormatError, match="does not match its checksum"):
        ZarrStore(store.path)


def test_array_metadata_changed_after_writing_is_refused(tmp_path):
    store, _, _ = small_store(tmp_path)
    document = store.path / "indices" / "zarr.json"
    meta = json.loads(document.read_text())
    meta["fill_value"] = 0
    document.write_text(json.dumps(meta))
    with pytest.raises(StoreFormatError, match="does not match its checksum"):
        ZarrStore(store.path)


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_store_with_a_special_file_is_refused(tmp_path, kind):
    """A FIFO as a chunk would hang the read: refused on open, at once."""
    import os

    store, _, _ = small_store(tmp_path)
    chunk = store.path / "indices" / "c" / "0"
    chunk.unlink()
    if kind == "fifo":
        os.mkfifo(chunk)
        fragment = "not a regular file"
    else:
        chunk.symlink_to("/dev/zero")
        fragment = "symbolic link"
    with pytest.raises(StoreFormatError, match=fragment):
        ZarrStore(store.path)


def leftovers(directory: Path, keep=()) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name not in keep)


# ------------------------------------------------------------------ format
def test_attributes_follow_the_format(tmp_path):
    store, X, y = small_store(tmp_path, block_nnz=50, command="ultrafs demo --x 1",
                              id_offset=1)
    attrs = read_attrs(store.path)
    assert attrs["format"] == FORMAT_NAME == "ultrafs-colstore"
    assert attrs["format_version"] == FORMAT_VERSION == 3
    assert attrs["target"] == "binary"
    assert attrs["sparse_ids"] is False and "id_space" not in attrs
    assert attrs["fingerprint"] == store.fingerprint and len(store.fingerprint) == 64
    assert (attrs["n_samples"], attrs["n_features"], attrs["nnz"]) == (*X.shape, X.nnz)
    assert attrs["dtype"] == "float32"
    assert attrs["id_offset"] == 1 and store.id_offset == 1
    assert attrs["classes"] == [3.0, 7.5]
    assert attrs["binary"] is False
    assert attrs["created_by"] == "ultrafs demo --x 1"
    assert attrs["created_with"].startswith("ultrafs ")
    assert attrs["complete"] is True
    assert attrs["block_bounds"] == store.default_block_bounds().tolist()
    arrays = {p.name for p in store.path.iterdir() if p.is_dir()}
    assert arrays == {"indptr", "indices", "data", "labels"}


def test_binary_store_omits_data(tmp_path):
    store, X, _ = small_store(tmp_path, kind="binary")
    assert store.binary and read_attrs(store.path)["binary"] is True
    assert not (store.path / "data").exists()
    block = store.read_range(0, store.n_features)
    assert block.data is None
    np.testing.assert_array_equal(block.values(np.float32), np.ones(X.nnz, np.float32))


def test_array_metadata(tmp_path):
    import zarr

    store, X, _ = small_store(tmp_path, dtype=np.float64)
    group = zarr.open_group(str(store.path), mode="r")
    expected = {"indptr": ((X.shape[1] + 1,), np.int64),
                "indices": ((X.nnz,), np.int32),
                "data": ((X.nnz,), np.float64),
                "labels": ((X.shape[0],), np.float64)}
    for name, (shape, dtype) in expected.items():
        array = group[name]
        assert array.shape == shape and array.dtype == dtype
        assert array.chunks == (16,)
    assert np.isnan(group["data"].fill_value) and group["indices"].fill_value == -1
    np.testing.assert_array_equal(group["labels"][:], store.read_targets())


def test_default_chunks_and_blocks_of_a_larger_store(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(300, 4000, density=0.05, format="csc", random_state=rng,
                  dtype=np.float32)
    y = rng.integers(0, 2, 300)
    store = write_store(tmp_path / "big.zarr", X, y, block_nnz=5000)
    import zarr

    assert zarr.open_group(str(store.path), mode="r")["indices"].chunks == (1 << 20,)
    bounds = store.default_block_bounds()
    nnz_per_block = np.diff(X.indptr[bounds])
    assert np.all(nnz_per_block >= 5000 - 300) and np.all(nnz_per_block[:-1] <= 5000 + 300)
    assert ((sp.csc_matrix(store.to_csc()) != X).nnz) == 0


# -------------------------------------------------------------- write_store
def test_write_store_does_not_mutate_inputs(tmp_path):
    rng = np.random.default_rng(3)
    coo = sp.coo_matrix((np.array([2.0, 0.0, 1.5, 4.0]), (np.array([2, 0, 1, 2]),
                                                          np.array([1, 0, 1, 1]))),
                        shape=(4, 3))
    csr = coo.tocsr()
    csr.has_sorted_indices = False
    dense = rng.standard_normal((5, 4))
    for i, X in enumerate((coo, csr, dense)):
        y = np.array([0, 1, 0, 1, 1][:X.shape[0]])
        before = X.copy()
        y_before = y.copy()
        store = write_store(tmp_path / f"s{i}.zarr", X, y)
        if sp.issparse(X):
            assert type(X) is type(before)
            np.testing.assert_array_equal(X.toarray(), before.toarray())
        else:
            np.testing.assert_array_equal(X, before)
        np.testing.assert_array_equal(y, y_before)
        expected = sp.csc_matrix(X.toarray() if sp.issparse(X) else X)
        expected.eliminate_zeros()
        assert (store.to_csc() != expected).nnz == 0
        assert store.dtype == np.float64 and store.nnz == expected.nnz


def test_write_store_keeps_float32_and_converts_others(tmp_path):
    X32 = np.eye(3, dtype=np.float32)
    assert write_store(tmp_path / "a.zarr", X32, [0, 1, 1]).dtype == np.float32
    assert write_store(tmp_path / "b.zarr", X32.astype(int), [0, 1, 1]).dtype == np.float64
    assert write_store(tmp_path / "c.zarr", X32, [0, 1, 1],
                       dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize("X, y, fragment", [
    (np.array([[1.0, np.nan], [0.0, 1.0]]), [0, 1], "NaN"),
    (np.array([[1.0, np.inf], [0.0, 1.0]]), [0, 1], "NaN or infinite"),
    (np.eye(3), [1, 1, 1], "labels take a single value"),
    (np.eye(3), [0.5, 1, 2], None),                     # fine: continuous
    (np.eye(3), [0, 1, np.nan], "NaN or infinite"),
    (np.eye(3), [0, 1], "shape"),
    (np.eye(3), ["a", "b", "a"], "numeric"),
])
def test_write_store_rejects_bad_input(tmp_path, X, y, fragment):
    if fragment is None:
        assert write_store(tmp_path / "ok.zarr", X, y).target_type == "continuous"
        return
    with pytest.raises(InputFormatError, match=fragment):
        write_store(tmp_path / "bad.zarr", X, y)
    assert leftovers(tmp_path) == []


def test_write_store_with_no_columns(tmp_path):
    store = write_store(tmp_path / "empty.zarr", np.zeros((4, 0)), [0, 1, 0, 1])
    assert store.n_features == 0 and store.nnz == 0
    assert store.default_block_bounds().tolist() == [0]
    assert store.read_range(0, 0).nnz == 0
    assert store.read_columns([0, 3]).indptr.tolist() == [0, 0, 0]


# ------------------------------------------------------ atomicity, overwrite
def test_existing_output_needs_overwrite(tmp_path):
    store, X, y = small_store(tmp_path)
    with pytest.raises(StoreExistsError, match="already exists"):
        write_store(store.path, X, y)
    with pytest.raises(FileExistsError):               # also a builtin
        write_store(store.path, X, y)
    replaced = write_store(store.path, X[:, :5], y, overwrite=True)
    assert replaced.n_features == 5
    assert leftovers(tmp_path) == ["s.zarr"]


def test_output_in_a_missing_directory(tmp_path):
    from ultrafs.errors import ParameterError

    X, y = make_matrix("valued", np.float32)
    with pytest.raises(ParameterError, match="parent directory"):
        write_store(tmp_path / "nowhere" / "s.zarr", X, y)
    assert leftovers(tmp_path) == []


def test_overwrite_never_deletes_something_that_is_not_a_store(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    X, y = make_matrix("valued", np.float32)
    with pytest.raises(StoreExistsError, match="not an ultrafs store"):
        write_store(precious, X, y, overwrite=True)
    assert (precious / "thesis.tex").read_text() == "years of work"


def test_writer_exception_leaves_nothing(tmp_path):
    X, y = make_matrix("valued", np.float64)
    out = tmp_path / "out.zarr"
    with pytest.raises(RuntimeError, match="boom"):
        with StoreWriter(out, n_samples=X.shape[0], n_features=X.shape[1], nnz=X.nnz,
                         dtype="float64", binary=False, labels=y, chunk_size=8) as writer:
            writer.append(X.indptr[:11] - X.indptr[0], X.indices[:X.indptr[10]],
                          X.data[:X.indptr[10]])
            assert writer.tmp_path.is_dir()
            raise RuntimeError("boom")
    assert leftovers(tmp_path) == []


def test_stale_temporary_directory_is_not_a_store(tmp_path):
    X, y = make_matrix("valued", np.float64)
    writer = StoreWriter(tmp_path / "out.zarr", n_samples=X.shape[0],
                         n_features=X.shape[1], nnz=X.nnz, dtype="float64",
                         binary=False, labels=y, chunk_size=8)
    writer.append(X.indptr, X.indices, X.data)
    # simulate a crash: the temporary directory stays, close() never runs
    stale = writer.tmp_path
    assert stale.name.startswith("out.zarr.tmp-")
    assert not (tmp_path / "out.zarr").exists()
    with pytest.raises(StoreFormatError, match="not an ultrafs store"):
        ZarrStore(stale)
    writer.abort()
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------- block bounds
@pytest.mark.parametrize("indptr, block_nnz, expected", [
    ([0, 5, 10, 15, 20], 10, [0, 2, 4]),
    ([0, 5, 10, 15, 20], 100, [0, 4]),
    ([0, 0, 0, 0], 3, [0, 3]),                       # no entries: one block
    ([0, 100, 101, 102], 10, [0, 1, 3]),               # a heavy column alone
    ([0, 1, 2, 3], 1, [0, 1, 2, 3]),
    ([0], 5, [0]),                                     # no columns
])
def test_balanced_block_bounds(indptr, block_nnz, expected):
    assert balanced_block_bounds(np.array(indptr), block_nnz).tolist() == expected


def test_balanced_block_bounds_are_balanced():
    rng = np.random.default_rng(0)
    counts = rng.zipf(1.5, 10000).clip(max=500)
    indptr = np.r_[0, np.cumsum(counts)]
    bounds = balanced_block_bounds(indptr, 2000)
    per_block = np.diff(indptr[bounds])
    assert np.all(np.diff(bounds) >= 1)
    assert np.all(per_block[:-1] >= 2000 - 500) and np.all(per_block <= 2000 + 500)


# ---------------------------------------------------------- opening errors
def test_open_nonexistent_path(tmp_path):
    with pytest.raises(StoreFormatError, match="missing.zarr: not an ultrafs store"):
        open_store(tmp_path / "missing.zarr")


def test_open_plain_directory_and_file(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(StoreFormatError, match="plain: not an ultrafs store"):
        ZarrStore(tmp_path / "plain")
    (tmp_path / "file.svm").write_text("1 1:1\n")
    with pytest.raises(StoreFormatError, match="file.svm: not an ultrafs store"):
        ZarrStore(tmp_path / "file.svm")
    with pytest.raises(OSError):                       # StoreFormatError is an OSError
        ZarrStore(tmp_path / "plain")


def test_open_foreign_zarr_group(tmp_path):
    import zarr

    group = zarr.open_group(str(tmp_path / "other.zarr"), mode="w")
    group.attrs["format"] = "something-else"
    with pytest.raises(StoreFormatError, match="not an ultrafs store.*something-else"):
        ZarrStore(tmp_path / "other.zarr")
    (tmp_path / "broken.zarr").mkdir()
    (tmp_path / "broken.zarr" / "zarr.json").write_text("{not json")
    with pytest.raises(StoreFormatError, match="broken.zarr: not an ultrafs store"):
        ZarrStore(tmp_path / "broken.zarr")


def test_open_other_format_version(tmp_path):
    store, _, _ = small_store(tmp_path)
    edit_attrs(store.path, format_version=4)
    with pytest.raises(StoreVersionError) as info:
        ZarrStore(store.path)
    message = str(info.value)
    assert str(store.path) in message and "version 4" in message
    assert "versions 1, 2 and 3" in message and "\n" not in message
    assert isinstance(info.value, StoreFormatError)


@pytest.mark.parametrize("changes, fragment", [
    ({"complete": False}, "incomplete"),
    ({"n_samples": 999}, "array 'labels' has shape"),
    ({"nnz": 3}, "array 'indices' has shape"),
    ({"n_features": 4}, "block_bounds"),
    ({"dtype": "int8"}, "dtype"),
    ({"classes": [1.0]}, "classes"),
    ({"block_bounds": [0, 60]}, "block_bounds"),
    ({"binary": True}, "binary store has a 'data' array"),
    ({"binary": "yes"}, "binary"),
])
def test_open_inconsistent_metadata(tmp_path, changes, fragment):
    store, _, _ = small_store(tmp_path)
    edit_attrs(store.path, **changes)
    with pytest.raises(StoreFormatError, match=fragment) as info:
        ZarrStore(store.path)
    assert str(store.path) in str(info.value)


def test_open_missing_attribute_or_array(tmp_path):
    store, _, _ = small_store(tmp_path)
    meta = json.loads((store.path / "zarr.json").read_text())
    del meta["attributes"]["created_by"]
    (store.path / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(StoreFormatError, match="missing attributes created_by"):
        ZarrStore(store.path)
    store, _, _ = small_store(tmp_path, name="t.zarr")
    shutil.rmtree(store.path / "labels")
    with pytest.raises(StoreFormatError, match="missing array 'labels'"):
        ZarrStore(store.path)


# -------------------------------------------------- truncation, corruption
@pytest.mark.parametrize("array, chunk", [("indices", "1"), ("data", "2"),
                                          ("indptr", "1"), ("indices", "0")])
def test_missing_chunk_is_detected_on_read(tmp_path, array, chunk):
    store, X, _ = small_store(tmp_path)
    (store.path / array / "c" / chunk).unlink()
    reopened = ZarrStore(store.path)
    with pytest.raises(StoreFormatError) as info:
        reopened.read_range(0, X.shape[1])
    message = str(info.value)
    assert str(store.path) in message and f"columns 0:{X.shape[1]}" in message
    with pytest.raises(StoreFormatError):
        reopened.read_columns(np.arange(X.shape[1]))
    with pytest.raises(StoreFormatError):
        reopened.to_csc()


def test_missing_chunk_names_the_block(tmp_path):
    store, X, _ = small_store(tmp_path)
    (store.path / "indices" / "c" / "3").unlink()      # entries 48..63
    lost_columns = np.flatnonzero((X.indptr[1:] > 48) & (X.indptr[:-1] < 64))
    ok_column = int(np.flatnonzero(X.indptr[1:] <= 16)[-1])
    store.read_range(0, ok_column + 1)                  # untouched columns still read
    bad = int(lost_columns[0])
    with pytest.raises(StoreFormatError, match=f"columns {bad}:{bad + 1}"):
        store.read_range(bad, bad + 1)


def test_missing_label_chunk(tmp_path):
    store, _, _ = small_store(tmp_path)
    (store.path / "labels" / "c" / "1").unlink()
    with pytest.raises(StoreFormatError, match="corrupt labels"):
        ZarrStore(store.path).read_labels()


def test_corrupt_chunk_bytes(tmp_path):
    store, X, _ = small_store(tmp_path)
    chunk = store.path / "indices" / "c" / "1"
    chunk.write_bytes(b"\x00" * 5)
    with pytest.raises(StoreFormatError, match="s.zarr"):
        ZarrStore(store.path).read_range(0, X.shape[1])


# ------------------------------------------------------ pickling, threads
def test_pickle_is_the_path_and_reopens_lazily(tmp_path):
    store, X, _ = small_store(tmp_path)
    payload = pickle.dumps(store)
    assert len(payload) < 300 and b"s.zarr" in payload
    clone = pickle.loads(payload)
    assert clone._meta_cache is None                    # nothing opened yet
    assert clone.n_features == X.shape[1]
    moved = tmp_path / "moved.zarr"
    store.path.rename(moved)
    with pytest.raises(StoreFormatError):               # the path is all it keeps
        pickle.loads(payload).n_features


def test_first_use_from_many_threads(tmp_path):
    store, X, _ = small_store(tmp_path)
    clone = pickle.loads(pickle.dumps(store))
    barrier = threading.Barrier(6)
    results = []

    def work():
        barrier.wait()
        results.append(clone.read_range(0, X.shape[1]).nnz)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [X.nnz] * 6


def test_read_columns_reads_far_apart_columns(tmp_path):
    rng = np.random.default_rng(5)
    X = sp.random(50, 3000, density=0.05, format="csc", random_state=rng)
    y = rng.integers(0, 2, 50)
    store = write_store(tmp_path / "far.zarr", X, y, chunk_size=32)
    columns = np.array([2999, 0, 1500, 1500, 7, 3000, 2998])
    block = store.read_columns(columns)
    reference = sp.hstack([X, sp.csc_matrix((50, 1))]).tocsc()[:, np.minimum(columns, 3000)]
    np.testing.assert_array_equal(block.indptr, reference.indptr)
    np.testing.assert_array_equal(block.indices, reference.indices)
    np.testing.assert_array_equal(block.data, reference.data)


# ------------------------------------------------------ integrity kernel
def _reference_problems(indptr, indices, n_rows):
    """Plain-Python reference: the set of problem codes of a block."""
    if indptr[0] != 0 or indptr[-1] != len(indices) or np.any(np.diff(indptr) < 0):
        return {1}
    problems = set()
    for col in range(len(indptr) - 1):
        rows = indices[indptr[col]:indptr[col + 1]]
        if len(rows) and (rows.min() < 0 or rows.max() >= n_rows):
            problems.add(2)
        if np.any(np.diff(rows) <= 0):
            problems.add(3)
    return problems


@pytest.mark.parametrize("indptr, indices, code", [
    ([0, 2, 4], [0, 3, 1, 2], 0),             # descent at a column start: fine
    ([0, 2, 4], [0, 3, 2, 2], 3),             # repeated row inside a column
    ([0, 2, 4], [3, 0, 1, 2], 3),             # descent inside a column
    ([0, 2, 4], [-1, 0, 1, 2], 2),
    ([0, 2, 4], [0, 1, 1, 5], 2),             # last row of a column too large
    ([0, 3, 2, 4], [0, 1, 2, 3], 1),          # decreasing offsets
    ([0, 2, 5], [0, 1, 2, 3], 1),             # does not end at nnz
    ([-1, 2, 3], [0, 1, 2], 1),
    ([0, 0, 0], [], 0),
    ([0], [], 0),
])
def test_check_csc_block_cases(indptr, indices, code):
    from ultrafs.kernels.csc_check import check_csc_block

    indptr = np.array(indptr, dtype=np.int64)
    indices = np.array(indices, dtype=np.int32)
    assert check_csc_block(indptr, indices, 5)[0] == code


def test_check_csc_block_against_reference():
    from ultrafs.kernels.csc_check import check_csc_block

    rng = np.random.default_rng(11)
    for _ in range(300):
        counts = rng.integers(0, 5, rng.integers(1, 8))
        indptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
        indices = np.concatenate(
            [np.sort(rng.choice(6, c, replace=False)) for c in counts]
            or [np.zeros(0)]).astype(np.int32)
        if len(indices) and rng.random() < 0.7:
            indices[rng.integers(len(indices))] = rng.integers(-1, 7)
        code, _ = check_csc_block(indptr, indices, 6)
        problems = _reference_problems(indptr, indices, 6)
        assert code == 0 if not problems else code in problems


def test_check_csc_block_fast_path_against_reference():
    """The branch-free pass (byte map of column starts) decides validity as
    the reference does: empty columns first, last and between, descents at
    and inside columns, rows out of range, offsets that decrease (also
    below 0 or above nnz in between) and a single entry."""
    from ultrafs.kernels.csc_check import _block_is_valid, check_csc_block

    rng = np.random.default_rng(12)
    for trial in range(2000):
        counts = rng.integers(0, 4, rng.integers(1, 9)) * (rng.random(1) < 0.9)
        indptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
        indices = np.concatenate(
            [np.sort(rng.choice(6, c, replace=False)) for c in counts]
            or [np.zeros(0)]).astype(np.int32)
        if len(indices) and rng.random() < 0.5:
            indices[rng.integers(len(indices))] = rng.integers(-2, 8)
        if len(indptr) > 2 and rng.random() < 0.3:
            indptr[rng.integers(1, len(indptr) - 1)] = rng.integers(-2, len(indices) + 3)
        problems = _reference_problems(indptr, indices, 6)
        # a reused scratch holds anything: the byte map must not trust it
        dirty = np.full(len(indices) + 1 + trial % 3, 1, dtype=np.uint8)
        if indptr[0] == 0 and indptr[-1] == len(indices):
            assert _block_is_valid(indptr, indices, 6, dirty) == (not problems), \
                (indptr, indices)
        for work in (None, dirty, dirty[:len(indices)]):     # the last one too short
            code, _ = check_csc_block(indptr, indices, 6, work)
            assert code == 0 if not problems else code in problems


def test_read_columns_paths_agree(tmp_path):
    """Contiguous and coordinate reads of indptr, merged and separate spans."""
    rng = np.random.default_rng(9)
    X = sp.random(40, 5000, density=0.1, format="csc", random_state=rng, dtype=np.float32)
    y = rng.integers(0, 2, 40)
    store = write_store(tmp_path / "paths.zarr", X, y, chunk_size=64)
    padded = sp.hstack([X, sp.csc_matrix((40, 1), dtype=np.float32)]).tocsc()
    for columns in (np.arange(100, 140),                    # one contiguous read
                    np.array([4999, 3, 2500, 3, 10_000]),   # coordinate selection
                    rng.integers(0, 5000, 300)):            # many spans, merged reads
        block = store.read_columns(columns)
        reference = padded[:, np.minimum(columns, 5000)]
        np.testing.assert_array_equal(block.indptr, reference.indptr)
        np.testing.assert_array_equal(block.indices, reference.indices)
        np.testing.assert_array_equal(block.data, reference.data)


def test_lean_reads_of_a_binary_store_hold_row_numbers_only(tmp_path):
    """``read_columns_lean``: a binary store's columns without values (the
    same rows as ``read_columns``); a store with values keeps them."""
    rng = np.random.default_rng(11)
    X = sp.random(60, 3000, density=0.05, format="csc", random_state=rng)
    X.data[:] = 1.0
    y = rng.integers(0, 2, 60)
    binary = write_store(tmp_path / "bin.zarr", X, y, chunk_size=64)
    valued = write_store(tmp_path / "val.zarr", X * 2.5, y, chunk_size=64)
    for columns in (np.arange(10, 50), np.array([2999, 3, 1500, 3, 9_000]),
                    rng.integers(0, 3000, 200)):
        full, lean = binary.read_columns(columns), binary.read_columns_lean(columns)
        assert lean.data is None
        np.testing.assert_array_equal(lean.indptr, full.indptr)
        np.testing.assert_array_equal(lean.indices, full.indices)
        np.testing.assert_array_equal(lean.values(), full.values())
        kept = valued.read_columns_lean(columns)
        np.testing.assert_array_equal(kept.data, valued.read_columns(columns).data)


def _in_a_thread(call):
    """``call()`` on a thread that is not the main one (a serial read)."""
    box = {}

    def target():
        try:
            box["value"] = call()
        except Exception as exc:  # noqa: BLE001 - compared by the test
            box["error"] = exc
    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    return box


def test_parallel_reads_of_many_chunks_equal_serial_ones(tmp_path):
    """The main thread's reads of many chunks (split over threads) give the
    serial read's arrays, and the serial read's error for corrupt chunks."""
    rng = np.random.default_rng(5)
    X = sp.random(500, 400, density=0.05, format="csc", random_state=rng,
                  dtype=np.float32)
    y = rng.integers(0, 2, 500)
    path = tmp_path / "many.zarr"
    store = write_store(path, X, y, chunk_size=16)
    columns = np.arange(400)                  # one contiguous read of ~60 chunks
    main = store.read_columns(columns)
    from ultrafs.store import zarr_chunks
    assert zarr_chunks._POOL                     # the split read was taken
    other = _in_a_thread(lambda: store.read_columns(columns))["value"]
    for a, b in ((main.indptr, other.indptr), (main.indices, other.indices),
                 (main.data, other.data)):
        np.testing.assert_array_equal(a, b)
    reference = X[:, columns]
    np.testing.assert_array_equal(main.indices, reference.indices)
    chunks = sorted((path / "indices" / "c").iterdir(), key=lambda p: int(p.name))
    assert len(chunks) > 50
    for victim in (chunks[len(chunks) // 2], chunks[-3]):
        raw = bytearray(victim.read_bytes())
        raw[-1] ^= 0xFF
        victim.write_bytes(bytes(raw))
    fresh = type(store)(path)
    with pytest.raises(StoreFormatError) as caught:
        fresh.read_columns(columns)
    serial = _in_a_thread(lambda: type(store)(path).read_columns(columns))["error"]
    assert isinstance(serial, StoreFormatError)
    assert str(caught.value) == str(serial)


def test_parallel_reads_of_scattered_columns_equal_serial_ones(tmp_path):
    """The main thread's reads of many separate span groups (one part per
    read thread, each decoded, gathered and checked apart) give the serial
    read's arrays, in any requested order, and the serial read's error for
    a corrupt chunk."""
    rng = np.random.default_rng(6)
    X = sp.random(500, 900, density=0.05, format="csc", random_state=rng,
                  dtype=np.float32)
    y = rng.integers(0, 2, 500)
    path = tmp_path / "scattered.zarr"
    store = write_store(path, X, y, chunk_size=16)
    for columns in (np.arange(0, 900, 2), np.arange(899, 0, -3), np.r_[5, 700, 5, 3]):
        main = store.read_columns(columns)
        other = _in_a_thread(lambda: store.read_columns(columns))["value"]
        reference = X[:, columns]
        for block in (main, other):
            np.testing.assert_array_equal(block.indptr, reference.indptr)
            np.testing.assert_array_equal(block.indices, reference.indices)
            np.testing.assert_array_equal(block.data, reference.data)
    columns = np.arange(0, 900, 2)
    chunks = sorted((path / "indices" / "c").iterdir(), key=lambda p: int(p.name))
    for victim in (chunks[len(chunks) // 3], chunks[-5]):
        raw = bytearray(victim.read_bytes())
        raw[-1] ^= 0xFF
        victim.write_bytes(bytes(raw))
    with pytest.raises(StoreFormatError) as caught:
        type(store)(path).read_columns(columns)
    serial = _in_a_thread(lambda: type(store)(path).read_columns(columns))["error"]
    assert isinstance(serial, StoreFormatError)
    assert str(caught.value) == str(serial)


@pytest.mark.parametrize("workers", [2, 3, 5])
def test_reads_cut_inside_columns_equal_serial_ones(tmp_path, monkeypatch, workers):
    """A main-thread read cut into equal ranges of entries, the cuts inside
    long columns, gives the serial arrays (also for sparse, scattered
    requests and values)."""
    from concurrent.futures import ThreadPoolExecutor

    from ultrafs.store import zarr_chunks

    rng = np.random.default_rng(7)
    X = sp.random(400, 60, density=0.05, format="lil", random_state=rng,
                  dtype=np.float32)
    X[:, 3] = rng.random((400, 1)) + 1.0           # two long columns
    X[:, 40] = rng.random((400, 1)) + 1.0
    X = X.tocsc()
    store = write_store(tmp_path / "cut.zarr", X, np.arange(400) % 2, chunk_size=16)
    pool = ThreadPoolExecutor(workers)
    monkeypatch.setattr(zarr_chunks, "read_pool", lambda: (pool, workers))
    try:
        for columns in (np.arange(60), np.r_[3, 40], np.r_[40, 0, 3, 59, 3], np.r_[7]):
            block = store.read_columns(columns)
            reference = X[:, columns]
            np.testing.assert_array_equal(block.indptr, reference.indptr)
            np.testing.assert_array_equal(block.indices, reference.indices)
            np.testing.assert_array_equal(block.data, reference.data)
    finally:
        pool.shutdown()
