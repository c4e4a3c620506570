"""Parquet column stores: wide tables, the long layout, ingest, dispatch.

Both Parquet backends pass the shared store contract; the long layout is
also checked against its documented format, for truncation and corruption,
and against the Zarr store (same ingest, same arrays, same selections).
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from ultrafs.errors import (InputFormatError, ParameterError, StoreExistsError,
                            StoreFormatError, StoreVersionError)
from ultrafs.store import InMemoryStore, as_store, open_store
from ultrafs.store.parquet_long import (FORMAT_NAME, LABELS_FILE, METADATA_FILE,
                                        ParquetLongStore)
from ultrafs.store.writers.parquet_long_writer import ParquetLongWriter, write_parquet_long
from ultrafs.store.parquet_wide import ParquetWideStore
from ultrafs.store.writers.zarr_writer import balanced_block_bounds, write_store
from ultrafs.store.zarr_store import ZarrStore

try:
    from parquet_tools import reseal
    from store_contract import (MATRIX_SUBSET, TARGET_SUBSET, StoreContract,
                                 make_matrix)
except ImportError:                       # tests/ imported as a package
    from tests.parquet_tools import reseal
    from tests.store_contract import (MATRIX_SUBSET, TARGET_SUBSET, StoreContract,
                                       make_matrix)

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


# ----------------------------------------------------------------- helpers
def wide_table(X, y, *, label="label", label_position=None, names=None):
    """A pyarrow Table with one column per column of X (X's dtype)."""
    dense = np.asarray(X.toarray() if sp.issparse(X) else X)
    names = names or [f"f{j}" for j in range(dense.shape[1])]
    columns = [(name, pa.array(dense[:, j])) for j, name in enumerate(names)]
    position = len(columns) if label_position is None else label_position
    columns.insert(position, (label, pa.array(np.asarray(y, dtype=np.float64))))
    return pa.table(dict(columns))


def write_wide(path, X, y, *, n_files=1, row_group_size=None, **kwargs):
    """Write X, y as a wide Parquet file, or a directory of ``n_files``."""
    table = wide_table(X, y, **kwargs)
    path = Path(path)
    if n_files == 1:
        pq.write_table(table, path, row_group_size=row_group_size)
        return path
    path.mkdir()
    cuts = np.linspace(0, table.num_rows, n_files + 1).astype(int)
    for k, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:])):
        pq.write_table(table.slice(lo, hi - lo), path / f"part-{k}.parquet",
                       row_group_size=row_group_size)
    return path


def small_long(tmp_path, name="s.pql", kind="valued", dtype=np.float32, **kwargs):
    X, y = make_matrix(kind, dtype)
    kwargs.setdefault("chunk_size", 16)
    kwargs.setdefault("block_nnz", 40)
    kwargs.setdefault("file_nnz", 60)
    return write_parquet_long(tmp_path / name, X, y, dtype=dtype, **kwargs), X, y


def read_meta(path: Path) -> dict:
    return json.loads((path / METADATA_FILE).read_text())


def edit_meta(path: Path, **changes) -> None:
    """Forge attributes (checksums re-recorded: the checks after them are tested)."""
    meta = read_meta(path)
    meta.update(changes)
    reseal(path, meta)


def leftovers(directory: Path, keep=()) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name not in keep)


def planted_problem(seed=0, n=300, m=200):
    """Sparse float32 data whose labels depend on a few columns."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, m, density=0.1, format="csc", random_state=rng,
                  data_rvs=lambda k: rng.uniform(0.1, 2.0, k), dtype=np.float32)
    informative = X[:, [3, 17, 150]].toarray() @ np.array([2.0, -3.0, 1.5])
    y = np.where(informative + 0.1 * rng.standard_normal(n) > 0, 1, 0)
    return X, y


# ---------------------------------------------------------------- contract
class TestParquetWideFileContract(StoreContract):
    # the wide layout reads the same Arrow tables as the other wide store;
    # the Parquet-long store (the format ultrafs writes) runs the whole matrix
    matrix_subset, target_subset = MATRIX_SUBSET, TARGET_SUBSET
    max_pickle_bytes = 400

    def make_store(self, X, y, *, dtype, tmp_path, target=None):
        # label column among the features, several row groups, small blocks
        path = write_wide(tmp_path / "wide.parquet", X, y,
                          label_position=min(2, X.shape[1]), row_group_size=7)
        return ParquetWideStore(path, label="label", block_columns=4, target=target)


class TestParquetWideDatasetContract(StoreContract):
    # the wide layout reads the same Arrow tables as the other wide store;
    # the Parquet-long store (the format ultrafs writes) runs the whole matrix
    matrix_subset, target_subset = MATRIX_SUBSET, TARGET_SUBSET
    max_pickle_bytes = 400

    def make_store(self, X, y, *, dtype, tmp_path, target=None):
        path = write_wide(tmp_path / "wide", X, y, n_files=3, label="y")
        (path / "_SUCCESS").write_text("")             # skipped, as by Arrow/Spark
        return ParquetWideStore(path, label="y", block_columns=3, target=target)


class TestParquetLongContract(StoreContract):
    omits_binary_data = True
    max_pickle_bytes = 300

    def make_store(self, X, y, *, dtype, tmp_path, target=None):
        # tiny row groups and files: blocks span row groups, reads span files
        return write_parquet_long(tmp_path / "long.pql", X, y, dtype=dtype, block_nnz=40,
                                  chunk_size=16, file_nnz=50, command="test", target=target)


# ------------------------------------------------------ long: the format
def test_long_metadata_follows_the_format(tmp_path):
    store, X, y = small_long(tmp_path, command="ultrafs demo", id_offset=1)
    meta = read_meta(store.path)
    assert meta["format"] == FORMAT_NAME == "ultrafs-colstore-parquet-long"
    assert meta["format_version"] == 3 and meta["target"] == "binary"
    assert (meta["n_samples"], meta["n_features"], meta["nnz"]) == (*X.shape, X.nnz)
    assert meta["dtype"] == "float32" and meta["feature_dtype"] == "int32"
    assert meta["id_offset"] == 1 and store.id_offset == 1
    assert meta["classes"] == [3.0, 7.5] and meta["binary"] is False
    assert meta["created_by"] == "ultrafs demo" and meta["complete"] is True
    assert meta["created_with"].startswith("ultrafs ")
    assert meta["block_bounds"] == balanced_block_bounds(X.indptr, 40).tolist()
    assert meta["files"] == [f"part-{k:05d}.parquet" for k in range(len(meta["files"]))]
    assert len(meta["files"]) > 1
    assert leftovers(store.path) == sorted(meta["files"] + [LABELS_FILE, METADATA_FILE])
    assert meta["sparse_ids"] is False and "id_space" not in meta
    assert meta["fingerprint"] == store.fingerprint and len(meta["fingerprint"]) == 64
    # the part files, read as one table, are the sorted (feature, row, value) triplets
    table = pq.read_table(store.path)
    assert table.column_names == ["feature", "row", "value"]
    assert [str(t) for t in table.schema.types] == ["int32", "int32", "float"]
    coo = X.tocoo()
    order = np.lexsort((coo.row, coo.col))
    np.testing.assert_array_equal(table.column("feature").to_numpy(), coo.col[order])
    np.testing.assert_array_equal(table.column("row").to_numpy(), coo.row[order])
    np.testing.assert_array_equal(table.column("value").to_numpy(), coo.data[order])
    labels = pq.read_table(store.path / LABELS_FILE)
    assert labels.column_names == ["label"]
    np.testing.assert_array_equal(labels.column("label").to_numpy(), y)


def test_long_row_groups_follow_the_table_and_blocks(tmp_path):
    store, X, _ = small_long(tmp_path)
    meta = read_meta(store.path)
    table = meta["row_groups"]
    bounds = np.array(meta["block_bounds"])
    assert sum(table["nnz"]) == X.nnz and max(table["nnz"]) <= 16
    for k, name in enumerate(meta["files"]):
        footer = pq.read_metadata(store.path / name)
        mine = [i for i, f in enumerate(table["file"]) if f == k]
        assert footer.num_row_groups == len(mine)
        for local, i in enumerate(mine):
            assert table["index"][i] == local
            group = footer.row_group(local)
            assert group.num_rows == table["nnz"][i]
            stats = group.column(0).statistics
            assert (stats.min, stats.max) == (table["first_feature"][i],
                                             table["last_feature"][i])
            # a row group never straddles a block boundary
            block = np.searchsorted(bounds, stats.min, side="right")
            assert np.searchsorted(bounds, stats.max, side="right") == block
            assert group.column(0).encodings[-1] == "DELTA_BINARY_PACKED"


def test_long_binary_store_has_no_value_column(tmp_path):
    store, X, _ = small_long(tmp_path, kind="binary")
    assert store.binary and read_meta(store.path)["binary"] is True
    assert pq.read_table(store.path).column_names == ["feature", "row"]
    assert store.read_range(0, store.n_features).data is None
    np.testing.assert_array_equal(store.read_columns([1, 2]).data,
                                  np.ones(X[:, 1:3].nnz, np.float32))


def test_long_store_without_entries(tmp_path):
    store, _, _ = small_long(tmp_path, kind="no_entries")
    assert read_meta(store.path)["files"] == [] and store.nnz == 0
    empty = write_parquet_long(tmp_path / "none.pql", np.zeros((4, 0)), [0, 1, 0, 1])
    assert empty.n_features == 0 and empty.default_block_bounds().tolist() == [0]
    assert empty.read_columns([0, 3]).indptr.tolist() == [0, 0, 0]


@pytest.mark.parametrize("block_nnz", [1, 7, 40, 10 ** 6])
def test_long_and_zarr_have_the_same_blocks(tmp_path, block_nnz):
    X, y = make_matrix("valued", np.float64)
    long = write_parquet_long(tmp_path / "l.pql", X, y, block_nnz=block_nnz, chunk_size=5)
    zarr = write_store(tmp_path / "z.zarr", X, y, block_nnz=block_nnz)
    np.testing.assert_array_equal(long.default_block_bounds(), zarr.default_block_bounds())


def test_long_read_range_reads_only_overlapping_row_groups(tmp_path, monkeypatch):
    store, X, _ = small_long(tmp_path)
    meta = read_meta(store.path)
    asked = []
    original = pq.ParquetFile.read_row_groups

    def spy(self, row_groups, *args, **kwargs):
        asked.append(list(row_groups))
        return original(self, row_groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    bounds = store.default_block_bounds()
    first, last = np.array(meta["row_groups"]["first_feature"]), np.array(
        meta["row_groups"]["last_feature"])
    for a, b in zip(bounds[:-1], bounds[1:]):
        asked.clear()
        store.read_range(a, b)
        expected = np.flatnonzero((first < b) & (last >= a))
        assert sum(len(r) for r in asked) == len(expected)
    asked.clear()
    store.read_range(int(bounds[1]), int(bounds[1]) + 1)
    assert sum(len(r) for r in asked) <= 2


def test_long_writer_exception_leaves_nothing(tmp_path):
    X, y = make_matrix("valued", np.float64)
    with pytest.raises(RuntimeError, match="boom"):
        with ParquetLongWriter(tmp_path / "out.pql", n_samples=X.shape[0],
                               n_features=X.shape[1], nnz=X.nnz, dtype="float64",
                               binary=False, labels=y, chunk_size=4, block_nnz=8) as writer:
            writer.append(X.indptr[:21] - X.indptr[0], X.indices[:X.indptr[20]],
                          X.data[:X.indptr[20]])
            assert writer.tmp_path.is_dir() and list(writer.tmp_path.glob("part-*"))
            raise RuntimeError("boom")
    assert leftovers(tmp_path) == []


def test_long_stale_temporary_directory_is_not_a_store(tmp_path):
    X, y = make_matrix("valued", np.float64)
    writer = ParquetLongWriter(tmp_path / "out.pql", n_samples=X.shape[0],
                               n_features=X.shape[1], nnz=X.nnz, dtype="float64",
                               binary=False, labels=y, chunk_size=8, block_nnz=8)
    writer.append(X.indptr, X.indices, X.data)
    stale = writer.tmp_path
    assert stale.name.startswith("out.pql.tmp-") and not (tmp_path / "out.pql").exists()
    with pytest.raises(StoreFormatError, match="incomplete"):
        ParquetLongStore(stale)
    with pytest.raises(StoreFormatError, match="out.pql.tmp-.*incomplete"):
        open_store(stale)
    writer.abort()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("X, y, fragment", [
    (np.array([[1.0, np.nan], [0.0, 1.0]]), [0, 1], "NaN"),
    (np.eye(3), [1, 1, 1], "single value"),
    (np.eye(3), [0, 1, 2], "target 'binary' needs exactly two label values, found 3"),
    (np.eye(3), [0, 1], "shape"),
])
def test_write_parquet_long_rejects_bad_input(tmp_path, X, y, fragment):
    target = "binary" if "target" in fragment else None
    with pytest.raises(InputFormatError, match=fragment):
        write_parquet_long(tmp_path / "bad.pql", X, y, target=target)
    assert leftovers(tmp_path) == []


def test_write_parquet_long_keeps_inputs_and_dtypes(tmp_path):
    X32 = np.eye(3, dtype=np.float32) * 2
    before = X32.copy()
    assert write_parquet_long(tmp_path / "a.pql", X32, [0, 1, 1]).dtype == np.float32
    np.testing.assert_array_equal(X32, before)
    assert write_parquet_long(tmp_path / "b.pql", X32.astype(int), [0, 1, 1]).dtype == np.float64
    assert write_parquet_long(tmp_path / "c.pql", X32, [0, 1, 1],
                              dtype=np.float64).dtype == np.float64


# ------------------------------------------------ long: overwrite refusal
def test_long_existing_output_needs_overwrite(tmp_path):
    store, X, y = small_long(tmp_path)
    with pytest.raises(StoreExistsError, match="already exists"):
        write_parquet_long(store.path, X, y)
    with pytest.raises(FileExistsError):
        write_parquet_long(store.path, X, y)
    replaced = write_parquet_long(store.path, X[:, :5], y, overwrite=True)
    assert replaced.n_features == 5
    # a Zarr store may be replaced by a Parquet one, never anything else
    zarr = write_store(tmp_path / "z.zarr", X, y)
    assert write_parquet_long(zarr.path, X, y, overwrite=True).n_features == X.shape[1]
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(StoreExistsError, match="not an ultrafs store"):
        write_parquet_long(precious, X, y, overwrite=True)
    assert (precious / "thesis.tex").read_text() == "years of work"
    assert leftovers(tmp_path) == ["precious", "s.pql", "z.zarr"]


# ------------------------------------------ long: validation, truncation
def test_long_other_format_version(tmp_path):
    store, _, _ = small_long(tmp_path)
    edit_meta(store.path, format_version=4)
    with pytest.raises(StoreVersionError) as info:
        ParquetLongStore(store.path)
    message = str(info.value)
    assert str(store.path) in message and "version 4" in message
    assert "versions 1, 2 and 3" in message and "\n" not in message
    with pytest.raises(StoreFormatError):
        open_store(store.path)


@pytest.mark.parametrize("changes, fragment", [
    ({"format": "something-else"}, "not an ultrafs store.*something-else"),
    ({"complete": False}, "incomplete"),
    ({"nnz": 3}, "add up to nnz"),
    ({"n_features": 4}, "block_bounds"),
    ({"dtype": "int8"}, "dtype"),
    ({"feature_dtype": "float32"}, "feature_dtype"),
    ({"classes": [1.0]}, "classes"),
    ({"binary": "yes"}, "binary"),
    ({"files": ["../evil.parquet"]}, "part-NNNNN"),
    ({"row_groups": {"file": [0]}}, "row_groups"),
])
def test_long_inconsistent_metadata(tmp_path, changes, fragment):
    store, _, _ = small_long(tmp_path)
    edit_meta(store.path, **changes)
    with pytest.raises(StoreFormatError, match=fragment) as info:
        ParquetLongStore(store.path)
    assert str(store.path) in str(info.value)


def test_long_inconsistent_row_group_table(tmp_path):
    store, _, _ = small_long(tmp_path)
    meta = read_meta(store.path)
    table = meta["row_groups"]
    swapped = dict(table, first_feature=table["first_feature"][::-1])
    edit_meta(store.path, row_groups=swapped)
    with pytest.raises(StoreFormatError, match="row_groups"):
        ParquetLongStore(store.path)
    edit_meta(store.path, row_groups=dict(table, index=[0] * len(table["index"])))
    with pytest.raises(StoreFormatError, match="row-group numbers"):
        ParquetLongStore(store.path)


def test_long_missing_metadata_attribute_or_labels(tmp_path):
    store, _, _ = small_long(tmp_path)
    meta = read_meta(store.path)
    del meta["created_by"]
    reseal(store.path, meta)
    with pytest.raises(StoreFormatError, match="missing attributes created_by"):
        ParquetLongStore(store.path)
    store, _, _ = small_long(tmp_path, name="t.pql")
    (store.path / LABELS_FILE).unlink()
    with pytest.raises(StoreFormatError, match="missing labels file"):
        ParquetLongStore(store.path)
    (store.path / METADATA_FILE).write_text("{not json")
    with pytest.raises(StoreFormatError, match="not an ultrafs store"):
        ParquetLongStore(store.path)


def test_long_missing_part_file_is_detected_on_read(tmp_path):
    store, X, _ = small_long(tmp_path)
    meta = read_meta(store.path)
    table = meta["row_groups"]
    (store.path / meta["files"][1]).unlink()
    lost = [i for i, f in enumerate(table["file"]) if f == 1]
    lost_columns = (table["first_feature"][lost[0]], table["last_feature"][lost[-1]] + 1)
    reopened = ParquetLongStore(store.path)              # opening reads metadata only
    for reader in (store, reopened):
        with pytest.raises(StoreFormatError) as info:
            reader.read_range(0, X.shape[1])
        message = str(info.value)
        assert str(store.path) in message and meta["files"][1] in message
        assert f"columns 0:{X.shape[1]}" in message
        a, b = lost_columns
        with pytest.raises(StoreFormatError, match=f"columns {a}:{b}"):
            reader.read_range(a, b)
        with pytest.raises(StoreFormatError):
            reader.read_columns(np.arange(X.shape[1]))
        with pytest.raises(StoreFormatError):
            reader.to_csc()
    # the columns of the other files still read
    first_file_end = table["last_feature"][table["file"].index(1) - 1]
    reopened.read_range(0, first_file_end)


def test_long_truncated_or_corrupt_part_file(tmp_path):
    store, X, _ = small_long(tmp_path)
    name = read_meta(store.path)["files"][0]
    part = store.path / name
    footer = pq.read_metadata(part)
    shorter = pq.ParquetFile(part).read_row_groups(list(range(footer.num_row_groups - 1)))
    pq.write_table(shorter, part, row_group_size=16)
    reseal(store.path)
    with pytest.raises(StoreFormatError, match=f"{name} has .* row groups"):
        ParquetLongStore(store.path).read_range(0, X.shape[1])
    table = pq.read_table(part)
    pq.write_table(table.set_column(1, "row", table.column("row").cast(pa.int64())), part)
    reseal(store.path)
    with pytest.raises(StoreFormatError, match=f"{name} lacks a int32 column 'row'"):
        ParquetLongStore(store.path).read_range(0, X.shape[1])
    part.write_bytes(b"PAR1 garbage")
    reseal(store.path)
    with pytest.raises(StoreFormatError, match=f"cannot read part file {name}"):
        ParquetLongStore(store.path).read_range(0, X.shape[1])


def _rewrite_part(path: Path, edit) -> None:
    """Rewrite a part file keeping its row-group sizes, after ``edit(dict)``."""
    footer = pq.read_metadata(path)
    table = pq.read_table(path)
    columns = {name: table.column(name).to_numpy().copy() for name in table.column_names}
    edit(columns)
    sizes = [footer.row_group(k).num_rows for k in range(footer.num_row_groups)]
    edited = pa.table(columns)
    with pq.ParquetWriter(path, edited.schema) as writer:
        start = 0
        for size in sizes:
            writer.write_table(edited.slice(start, size), row_group_size=size)
            start += size


@pytest.mark.parametrize("problem, fragment", [
    ("features_unsorted", "not sorted"),
    ("row_out_of_range", "row numbers out of range"),
    ("value_nan", "NaN"),
    ("first_feature", "recorded"),
])
def test_long_corrupt_content_is_detected(tmp_path, problem, fragment):
    store, X, _ = small_long(tmp_path, file_nnz=10 ** 6)
    part = store.path / read_meta(store.path)["files"][0]

    def edit(columns):
        features = columns["feature"]
        if problem == "features_unsorted":
            inner = np.flatnonzero(np.diff(features) > 0)[2]
            features[inner], features[inner + 1] = features[inner + 1], features[inner]
        elif problem == "row_out_of_range":
            columns["row"][5] = X.shape[0]
        elif problem == "value_nan":
            columns["value"][7] = np.nan
        else:
            features[0] += 1

    _rewrite_part(part, edit)
    reseal(store.path)
    with pytest.raises(StoreFormatError, match=fragment) as info:
        ParquetLongStore(store.path).read_range(0, X.shape[1])
    assert str(store.path) in str(info.value)


def test_long_corrupt_labels(tmp_path):
    store, _, _ = small_long(tmp_path)
    labels = pq.read_table(store.path / LABELS_FILE).column("label").to_numpy().copy()
    labels[4] = 99.0
    pq.write_table(pa.table({"label": labels}), store.path / LABELS_FILE)
    reseal(store.path)
    with pytest.raises(StoreFormatError, match="corrupt labels"):
        ParquetLongStore(store.path).read_labels()
    pq.write_table(pa.table({"label": labels[:-1]}), store.path / LABELS_FILE)
    reseal(store.path)
    with pytest.raises(StoreFormatError, match="corrupt labels"):
        ParquetLongStore(store.path).read_labels()


def test_long_pickle_is_the_path_and_reopens_lazily(tmp_path):
    store, X, _ = small_long(tmp_path)
    payload = pickle.dumps(store)
    assert len(payload) < 300 and b"s.pql" in payload
    clone = pickle.loads(payload)
    assert clone._meta_cache is None
    assert clone.n_features == X.shape[1]
    store.path.rename(tmp_path / "moved.pql")
    with pytest.raises(StoreFormatError):
        pickle.loads(payload).n_features


# ----------------------------------------------------------- wide tables
@pytest.mark.parametrize("arrow_type, expected", [
    (pa.bool_(), np.float32), (pa.int8(), np.float32), (pa.uint16(), np.float32),
    (pa.float16(), np.float32), (pa.float32(), np.float32),
    (pa.int32(), np.float64), (pa.int64(), np.float64), (pa.uint64(), np.float64),
    (pa.float64(), np.float64),
])
def test_wide_dtype_rule(tmp_path, arrow_type, expected):
    raw = np.array([0, 1, 1, 0, 1])
    column = pa.array(raw.astype(bool) if arrow_type == pa.bool_() else raw).cast(arrow_type)
    others = pa.array(np.array([0, 2, 0, 1, 0], dtype=np.int8))
    pq.write_table(pa.table({"a": column, "b": others, "label": [0, 1, 0, 1, 1]}),
                   tmp_path / "t.parquet")
    store = ParquetWideStore(tmp_path / "t.parquet")
    assert store.dtype == expected
    np.testing.assert_array_equal(store.to_csc().toarray(),
                                  np.c_[raw, [0, 2, 0, 1, 0]].astype(expected))


def test_wide_dtype_override_and_overflow(tmp_path):
    table = pa.table({"big": [1.0, 1e300, 0.0], "small": [1.5, 0.0, 2.0],
                      "label": [1, -1, 1]})
    pq.write_table(table, tmp_path / "t.parquet")
    store = ParquetWideStore(tmp_path / "t.parquet", dtype="float32")
    assert store.dtype == np.float32
    assert store.read_range(1, 2).data.tolist() == [1.5, 2.0]
    with pytest.raises(InputFormatError, match=r"'big' holds .* float32 range\) at row 1"):
        store.read_range(0, 2)
    assert ParquetWideStore(tmp_path / "t.parquet").read_range(0, 1).data[1] == 1e300


def test_wide_nulls_read_as_zero(tmp_path):
    table = pa.table({"a": pa.array([1.5, None, 0.0, 2.0], pa.float32()),
                      "b": pa.array([None, 3, None, 0], pa.int16()),
                      "c": pa.array([True, None, False, True]),
                      "label": [0, 1, 0, 1]})
    pq.write_table(table, tmp_path / "t.parquet")
    store = ParquetWideStore(tmp_path / "t.parquet")
    np.testing.assert_array_equal(store.to_csc().toarray(),
                                  [[1.5, 0, 1], [0, 3, 0], [0, 0, 0], [2, 0, 1]])
    assert store.nnz == 5


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_wide_nan_or_inf_names_the_column(tmp_path, bad):
    table = pa.table({"ok": [1.0, 2.0, 0.0], "label": [0, 1, 1],
                      "bad col": [0.0, 1.0, bad]})
    pq.write_table(table, tmp_path / "t.parquet")
    store = ParquetWideStore(tmp_path / "t.parquet")       # opening does not read values
    store.read_range(0, 1)
    with pytest.raises(InputFormatError, match=r"t.parquet: feature column 'bad col' "
                                               r"holds a NaN or infinite value at row 2"):
        store.read_range(0, 2)
    with pytest.raises(InputFormatError, match="'bad col'"):
        store.read_columns([1])


@pytest.mark.parametrize("column, type_name", [
    (pa.array(["a", "b", "c"]), "string"),
    (pa.array([[1], [2], []]), "list<element: int64>"),
    (pa.array([1, 2, 3], pa.timestamp("ms")), "timestamp[ms]"),
    (pa.array([1, 2, 3], pa.int64()).cast(pa.decimal128(25, 2)), "decimal128(25, 2)"),
])
def test_wide_non_numeric_feature_column(tmp_path, column, type_name):
    table = pa.table({"x": [1.0, 0.0, 2.0], "word": column, "label": [0, 1, 1]})
    pq.write_table(table, tmp_path / "t.parquet")
    with pytest.raises(InputFormatError) as info:
        ParquetWideStore(tmp_path / "t.parquet")
    message = str(info.value)
    assert "\n" not in message
    assert "t.parquet: feature column 'word' has type" in message and type_name in message


def test_wide_missing_or_bad_label_column(tmp_path):
    pq.write_table(pa.table({"x": [1.0, 0.0], "target": [0, 1]}), tmp_path / "t.parquet")
    with pytest.raises(InputFormatError,
                       match=r"t.parquet: no label column 'label' \(columns: 'x', 'target'\)"):
        ParquetWideStore(tmp_path / "t.parquet")
    assert ParquetWideStore(tmp_path / "t.parquet", label="target").n_features == 1
    pq.write_table(pa.table({"x": [1.0, 0.0], "label": ["no", "yes"]}), tmp_path / "s.parquet")
    with pytest.raises(InputFormatError, match="label column 'label' has type string"):
        ParquetWideStore(tmp_path / "s.parquet")
    pq.write_table(pa.table({"x": [1.0, 0.0, 1.0], "label": [0, None, 1]}),
                   tmp_path / "n.parquet")
    with pytest.raises(InputFormatError, match="1 null values"):
        ParquetWideStore(tmp_path / "n.parquet")
    pq.write_table(pa.table({"x": [1.0, 0.0, 1.0], "label": [0, 1, 2]}),
                   tmp_path / "three.parquet")
    assert ParquetWideStore(tmp_path / "three.parquet").target_type == "multiclass"
    with pytest.raises(InputFormatError,
                       match="label column 'label': target 'binary' needs exactly two "
                             "label values, found 3"):
        ParquetWideStore(tmp_path / "three.parquet", target="binary")
    pq.write_table(pa.table({"x": [1.0, 0.0, 1.0], "label": [4, 4, 4]}),
                   tmp_path / "one.parquet")
    with pytest.raises(InputFormatError, match="label column 'label': labels take a single"):
        ParquetWideStore(tmp_path / "one.parquet")


def test_wide_dataset_needs_one_schema(tmp_path):
    directory = tmp_path / "ds"
    directory.mkdir()
    pq.write_table(pa.table({"x": [1.0, 0.0], "label": [0, 1]}), directory / "a.parquet")
    pq.write_table(pa.table({"x": [1, 0], "label": [0, 1]}), directory / "b.parquet")
    with pytest.raises(InputFormatError, match="b.parquet: schema differs .*'x' has type int64"):
        ParquetWideStore(directory)


def test_wide_feature_names_ids_and_describe(tmp_path):
    X, y = make_matrix("dense", np.float32)
    names = [f"gene_{j}" for j in range(X.shape[1])]
    path = write_wide(tmp_path / "t.parquet", X, y, names=names, label="class",
                      label_position=0)
    store = ParquetWideStore(path, label="class")
    assert store.feature_names == tuple(names) and store.id_offset == 0
    assert store.feature_ids([4]).tolist() == [4] and store.feature_names[4] == "gene_4"
    summary = store.describe()
    assert summary["format"] == "parquet-wide" and summary["label"] == "class"
    assert summary["n_files"] == 1 and summary["nnz"] == X.nnz


def test_wide_skips_pandas_index_columns(tmp_path):
    table = pa.table({"x": [1.0, 0.0, 2.0], "label": [0, 1, 1],
                      "__index_level_0__": [10, 11, 12]})
    pandas_meta = {"index_columns": ["__index_level_0__"], "columns": []}
    table = table.replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()})
    pq.write_table(table, tmp_path / "t.parquet")
    assert ParquetWideStore(tmp_path / "t.parquet").feature_names == ("x",)


def test_wide_reads_only_the_requested_columns(tmp_path, monkeypatch):
    X, y = make_matrix("valued", np.float64)
    store = ParquetWideStore(write_wide(tmp_path / "t.parquet", X, y), block_columns=10)
    asked = []
    original = pq.ParquetFile.read

    def spy(self, columns=None, *args, **kwargs):
        asked.append(list(columns))
        return original(self, columns, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", spy)
    store.read_range(10, 13)
    store.read_columns([40, 2, 40])
    assert asked == [["f10", "f11", "f12"], ["f2", "f40"]]


def test_wide_default_blocks_follow_the_cell_budget(tmp_path, monkeypatch):
    from ultrafs.store import parquet_wide

    X, y = make_matrix("valued", np.float32)                 # 37 rows, 53 columns
    path = write_wide(tmp_path / "t.parquet", X, y)
    monkeypatch.setattr(parquet_wide, "DEFAULT_BLOCK_CELLS", 37 * 10)
    assert ParquetWideStore(path).default_block_bounds().tolist() == [0, 10, 20, 30, 40,
                                                                       50, 53]


def test_wide_open_errors(tmp_path):
    with pytest.raises(StoreFormatError, match="no such file"):
        ParquetWideStore(tmp_path / "missing.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreFormatError, match="no .parquet files"):
        ParquetWideStore(tmp_path / "empty")
    (tmp_path / "fake.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(StoreFormatError, match="fake.parquet: not a Parquet file"):
        ParquetWideStore(tmp_path / "fake.parquet")


def test_wide_pickle_keeps_path_and_parameters(tmp_path):
    X, y = make_matrix("valued", np.float64)
    path = write_wide(tmp_path / "t.parquet", X, y, label="target")
    store = ParquetWideStore(path, label="target", dtype="float32", block_columns=5)
    payload = pickle.dumps(store)
    assert len(payload) < 400
    clone = pickle.loads(payload)
    assert clone._meta_cache is None
    assert clone.dtype == np.float32 and clone.label == "target"
    np.testing.assert_array_equal(clone.default_block_bounds(), store.default_block_bounds())


# -------------------------------------------------------------- dispatch
def test_open_store_dispatches_on_what_is_there(tmp_path):
    X, y = make_matrix("valued", np.float32)
    zarr = write_store(tmp_path / "s.zarr", X, y)
    long = write_parquet_long(tmp_path / "s.pql", X, y)
    file = write_wide(tmp_path / "w.parquet", X, y)
    directory = write_wide(tmp_path / "wdir", X, y, n_files=2, label="t")
    magic_only = tmp_path / "w.data"
    shutil.copy(file, magic_only)
    assert type(open_store(zarr.path)) is ZarrStore
    assert type(open_store(long.path)) is ParquetLongStore
    assert type(open_store(file)) is ParquetWideStore
    assert type(open_store(magic_only)) is ParquetWideStore
    assert open_store(directory, label="t").label == "t"
    assert type(as_store(str(long.path))) is ParquetLongStore
    for store in (open_store(p) for p in (zarr.path, long.path, file)):
        assert (store.to_csc() != X).nnz == 0
    with pytest.raises(ParameterError, match="label='y' applies to wide Parquet"):
        open_store(zarr.path, label="y")
    with pytest.raises(ParameterError, match="parquet-long store"):
        open_store(long.path, label="y")
    with pytest.raises(InputFormatError, match="no label column 'label'"):
        open_store(directory)
    assert open_store(file, target="continuous").target_type == "continuous"
    with pytest.raises(ParameterError, match="target='binary' applies to wide Parquet"):
        open_store(zarr.path, target="binary")
    with pytest.raises(ParameterError, match="target='binary' applies to wide Parquet"):
        open_store(long.path, target="binary")


def test_open_store_refuses_what_is_not_a_store(tmp_path):
    with pytest.raises(StoreFormatError, match="nothing: not an ultrafs store"):
        open_store(tmp_path / "nothing")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "notes.txt").write_text("x")
    with pytest.raises(StoreFormatError, match="plain: not an ultrafs store"):
        open_store(tmp_path / "plain")
    (tmp_path / "file.svm").write_text("1 1:1\n")
    with pytest.raises(StoreFormatError, match="file.svm: not an ultrafs store"):
        open_store(tmp_path / "file.svm")


# ------------------------------------------------ ingest: parquet == zarr
@pytest.fixture(scope="module")
def data_files():
    if not DATA_DIR.is_dir():
        pytest.skip(f"shared datasets not found at {DATA_DIR}")
    return DATA_DIR


@pytest.mark.parametrize("name, budget", [("mushrooms.svm.bz2", 256 * 2 ** 10),
                                          ("a9a.svm.bz2", None)])
def test_ingest_parquet_equals_ingest_zarr(data_files, tmp_path, name, budget):
    from ultrafs.store.writers.libsvm import DEFAULT_MEMORY_BUDGET, ingest_libsvm

    kwargs = dict(memory_budget=budget or DEFAULT_MEMORY_BUDGET, block_nnz=50_000)
    source = data_files / name
    ingest_libsvm(source, tmp_path / "z.zarr", **kwargs)
    summary = ingest_libsvm(source, tmp_path / "p.pql", format="parquet", **kwargs)
    assert summary["output"] == str(tmp_path / "p.pql")
    zarr, long = ZarrStore(tmp_path / "z.zarr"), open_store(tmp_path / "p.pql")
    assert isinstance(long, ParquetLongStore)
    for attr in ("n_samples", "n_features", "nnz", "dtype", "id_offset", "binary"):
        assert getattr(long, attr) == getattr(zarr, attr), attr
    assert long.id_offset == 1 and long.binary
    np.testing.assert_array_equal(long.classes, zarr.classes)
    np.testing.assert_array_equal(long.read_labels(), zarr.read_labels())
    np.testing.assert_array_equal(long.read_targets(), zarr.read_targets())
    assert long.target_type == zarr.target_type == "binary"
    bounds = zarr.default_block_bounds()
    np.testing.assert_array_equal(long.default_block_bounds(), bounds)
    assert len(bounds) > 2
    for a, b in zip(bounds[:-1], bounds[1:]):
        mine, theirs = long.read_range(a, b), zarr.read_range(a, b)
        np.testing.assert_array_equal(mine.indptr, theirs.indptr)
        np.testing.assert_array_equal(mine.indices, theirs.indices)
        assert mine.data is None and theirs.data is None
    assert long.attrs["source"] == zarr.attrs["source"]
    if budget:                                        # small row groups under a small budget
        assert max(long.attrs["row_groups"]["nnz"]) <= 4096


def test_ingest_parquet_overwrite_and_bad_format(data_files, tmp_path):
    from ultrafs.store.writers.libsvm import ingest_libsvm

    source = data_files / "mushrooms.svm.bz2"
    out = tmp_path / "m.pql"
    ingest_libsvm(source, out, format="parquet")
    with pytest.raises(StoreExistsError):
        ingest_libsvm(source, out, format="parquet")
    assert ingest_libsvm(source, out, format="parquet", overwrite=True)["nnz"] == 170_604
    with pytest.raises(ParameterError, match="format must be 'zarr' or 'parquet'"):
        ingest_libsvm(source, tmp_path / "x", format="csv")
    assert leftovers(tmp_path) == ["m.pql"]


# ----------------------------------- same selections on all four backends
@pytest.fixture
def four_stores(tmp_path):
    """The planted problem in memory, Zarr, Parquet wide and Parquet long."""
    X, y = planted_problem()
    stores = {
        "memory": InMemoryStore(X, y, block_size=37),
        "zarr": write_store(tmp_path / "p.zarr", X, y, block_nnz=500, chunk_size=256),
        "wide": ParquetWideStore(write_wide(tmp_path / "p.parquet", X, y,
                                            row_group_size=100), block_columns=30),
        "long": write_parquet_long(tmp_path / "p.pql", X, y, block_nnz=500,
                                   chunk_size=256, file_nnz=2000),
    }
    for store in stores.values():
        assert store.dtype == np.float32 and store.nnz == X.nnz
    return stores


@pytest.mark.parametrize("block_size", [None, 64])
def test_same_scoring_pass_on_every_backend(four_stores, block_size):
    from ultrafs.scoring.worst_case import worst_case_analysis
    from ultrafs.features.linear import LinearFeatures

    rng = np.random.default_rng(7)
    weights = rng.standard_normal(four_stores["memory"].n_samples)
    results = {}
    for name, store in four_stores.items():
        candidates, stats = worst_case_analysis(
            LinearFeatures(store), weights, 15, excluded=[3, 150],
            block_size=block_size, scheduler="synchronous")
        results[name] = candidates
        assert stats.nnz == store.nnz
    reference = results["memory"]
    assert len(reference) == 15 and 3 not in reference.keys
    for name, candidates in results.items():
        np.testing.assert_array_equal(candidates.keys, reference.keys, err_msg=name)
        np.testing.assert_array_equal(candidates.scores, reference.scores, err_msg=name)


def test_same_selection_end_to_end_on_every_backend(four_stores):
    from ultrafs.api import select

    models = {name: select(store, B=2, max_iter=3, C=5.0)          # threads
              for name, store in four_stores.items()}
    reference = models["memory"]
    assert {3, 17, 150} & set(reference.features)
    for name, model in models.items():
        assert model.features == reference.features, name
        np.testing.assert_array_equal(model.coef, reference.coef, err_msg=name)
        assert model.intercept == reference.intercept


def test_scoring_pass_in_worker_processes(four_stores):
    """Workers reopen the Parquet stores from their pickled paths."""
    from ultrafs.scoring.worst_case import worst_case_analysis
    from ultrafs.features.linear import LinearFeatures

    weights = np.random.default_rng(3).standard_normal(four_stores["memory"].n_samples)
    reference, _ = worst_case_analysis(LinearFeatures(four_stores["memory"]), weights, 10,
                                       scheduler="synchronous")
    for name in ("wide", "long"):
        candidates, _ = worst_case_analysis(LinearFeatures(four_stores[name]), weights, 10,
                                            scheduler="processes", num_workers=2)
        np.testing.assert_array_equal(candidates.keys, reference.keys, err_msg=name)
        np.testing.assert_array_equal(candidates.scores, reference.scores, err_msg=name)
