"""kddb-like generator at scale (issue 11): threads, LIBSVM text, kernels, hostile paths.

The generator's model and shape are tested in ``test_synthetic_sparse.py``;
here: the data do not depend on the thread count or the memory budget, the
``libsvm_output`` text ingests back to the same matrix and labels, the
kernels behind the speed-ups answer exactly what numpy would, and the
hostile ``--libsvm-out`` paths fail in one line without writing anything.
"""

from __future__ import annotations

import importlib.util
import os
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ultrafs.datasets import kddb_like
from ultrafs.datasets.kddb_like import make_kddb_like
from ultrafs.datasets.kddb_model import ZipfColumns, plant_model
from ultrafs.errors import OutputPathError, StoreExistsError
from ultrafs.kernels.libsvm_parse import format_binary_rows
from ultrafs.kernels.long_table import add_key_counts, sort_keys_by_column
from ultrafs.kernels.sampling import guide_table, search_right, sort_grouped
from ultrafs.store import open_store
from ultrafs.store.writers import external_transpose, libsvm, libsvm_text_writer
from ultrafs.store.writers.external_transpose import ExternalTranspose
from ultrafs.store.writers.libsvm import ingest_libsvm
from ultrafs.store.writers.zarr_writer import StoreWriter

TOOL = Path(__file__).resolve().parents[1] / "tools" / "make_kddb_like.py"
SMALL = dict(n_samples=1500, n_features=20_000, seed=7, chunk_rows=200)


def store_arrays(store):
    """(indptr, indices, labels) of a whole store."""
    block = store.read_range(0, store.n_features)
    return block.indptr, block.indices, store.read_targets()


def leftovers(folder):
    return sorted(p.name for p in Path(folder).iterdir()
                  if ".tmp-" in p.name or ".runs-" in p.name)


# --------------------------------------------------------- reproducibility
def test_threads_and_budget_do_not_change_the_data(tmp_path):
    one = make_kddb_like(tmp_path / "one.zarr", n_threads=1, test_output=tmp_path / "t1.zarr",
                         n_test=300, **SMALL)
    many = make_kddb_like(tmp_path / "many.zarr", n_threads=3, memory_budget=2 ** 14,
                          test_output=tmp_path / "t3.zarr", n_test=300, **SMALL)
    assert many["n_runs"] > 1 and one["n_runs"] == 0
    for a, b in [("one", "many"), ("t1", "t3")]:
        first, second = open_store(tmp_path / f"{a}.zarr"), open_store(tmp_path / f"{b}.zarr")
        assert first.fingerprint == second.fingerprint
        for x, y in zip(store_arrays(first), store_arrays(second)):
            np.testing.assert_array_equal(x, y)
    assert one["planted"] == many["planted"]
    assert one["test"]["threshold"] == many["test"]["threshold"] == one["threshold"]
    assert leftovers(tmp_path) == []


def test_chunks_are_pure_functions_of_their_index(tmp_path):
    """A chunk drawn alone equals the same chunk drawn in sequence."""
    rng = kddb_like._rng(0, kddb_like._STREAM_MODEL)
    zipf = ZipfColumns.build(5000, 1.1, rng)
    model = plant_model(rng, zipf.expected_frequency(29), n_linear=5, n_cross=5)
    task = dict(seed=0, stream=1, zipf=zipf, model=model, nnz_per_row=29.0, text=True)
    alone = kddb_like._chunk_task(3, 300, 100, **task)
    in_order = [kddb_like._chunk_task(i, 100 * i, 100, **task) for i in range(5)][3]
    for name in ("keys", "scores", "noisy"):
        np.testing.assert_array_equal(getattr(alone, name), getattr(in_order, name))
    rows = (alone.keys & 0xFFFFFFFF) - 300
    assert rows.min() >= 0 and rows.max() < 100 and np.all(np.diff(rows) >= 0)


# -------------------------------------------------------------- LIBSVM text
@pytest.fixture(scope="module")
def with_text(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kddb_text")
    summary = make_kddb_like(folder / "train.zarr", libsvm_output=folder / "train.svm",
                             memory_budget=2 ** 15, n_threads=2, **SMALL)
    return folder, summary


def test_text_ingests_to_the_same_data(with_text, tmp_path):
    folder, summary = with_text
    text = folder / "train.svm"
    assert summary["libsvm_output"] == str(text)
    assert summary["libsvm_bytes"] == text.stat().st_size
    ingest_libsvm(text, tmp_path / "back.zarr", n_features=SMALL["n_features"],
                  memory_budget=2 ** 15)
    generated, ingested = open_store(folder / "train.zarr"), open_store(tmp_path / "back.zarr")
    assert ingested.id_offset == 1 and generated.id_offset == 0   # ids: indices are 1-based
    assert ingested.n_samples == generated.n_samples
    assert (ingested.to_csc() != generated.to_csc()).nnz == 0
    np.testing.assert_array_equal(ingested.read_targets(), generated.read_targets())
    # the same matrix under the same layout and offset gives the same fingerprint
    zero_based = tmp_path / "zero.svm"
    zero_based.write_bytes(b"".join(
        _shift_indices(line) for line in text.read_bytes().splitlines(keepends=True)))
    ingest_libsvm(zero_based, tmp_path / "zero.zarr", zero_based=True,
                  n_features=SMALL["n_features"])
    assert open_store(tmp_path / "zero.zarr").fingerprint == generated.fingerprint


def _shift_indices(line: bytes) -> bytes:
    label, *entries = line.split()
    shifted = [b"%d:1" % (int(entry.split(b":")[0]) - 1) for entry in entries]
    return b" ".join([label] + shifted) + b"\n"


def test_text_rows_are_sorted_and_labelled(with_text):
    folder, _ = with_text
    lines = (folder / "train.svm").read_text().splitlines()
    assert len(lines) == SMALL["n_samples"]
    labels = open_store(folder / "train.zarr").read_targets()
    for line, label in zip(lines[:200], labels[:200]):
        tokens = line.split(" ")
        assert tokens[0] == ("1" if label > 0 else "-1")
        indices = [int(t[:-2]) for t in tokens[1:]]
        assert all(t.endswith(":1") for t in tokens[1:])
        assert indices == sorted(set(indices)) and indices[0] >= 1


def test_text_writing_interrupted_leaves_nothing(tmp_path, monkeypatch):
    calls = []
    original = libsvm_text_writer.LibsvmTextWriter.write_rows

    def failing(self, *args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return original(self, *args)

    monkeypatch.setattr(libsvm_text_writer.LibsvmTextWriter, "write_rows", failing)
    with pytest.raises(KeyboardInterrupt):
        make_kddb_like(tmp_path / "a.zarr", libsvm_output=tmp_path / "a.svm",
                       test_output=tmp_path / "t.zarr", n_test=100, **SMALL)
    assert sorted(os.listdir(tmp_path)) == []


def test_store_failure_leaves_no_text(tmp_path, monkeypatch):
    def failing(self, *args, **kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr(StoreWriter, "append", failing)
    with pytest.raises(OSError, match="disk on fire"):
        make_kddb_like(tmp_path / "a.zarr", libsvm_output=tmp_path / "a.svm", **SMALL)
    assert sorted(os.listdir(tmp_path)) == []


def test_overwrite_replaces_a_text_file(tmp_path):
    (tmp_path / "a.svm").write_text("old\n")
    make_kddb_like(tmp_path / "a.zarr", libsvm_output=tmp_path / "a.svm", overwrite=True,
                   n_samples=300, n_features=2000, seed=1)
    assert (tmp_path / "a.svm").read_text().count("\n") == 300


def test_text_output_checks(tmp_path):
    (tmp_path / "file.svm").write_text("keep\n")
    (tmp_path / "folder").mkdir()
    kwargs = dict(n_samples=300, n_features=2000)
    with pytest.raises(StoreExistsError, match="file.svm: already exists"):
        make_kddb_like(tmp_path / "a.zarr", libsvm_output=tmp_path / "file.svm", **kwargs)
    with pytest.raises(OutputPathError, match="is a directory"):
        make_kddb_like(tmp_path / "a.zarr", libsvm_output=tmp_path / "folder",
                       overwrite=True, **kwargs)
    with pytest.raises(OutputPathError, match="is the training store"):
        make_kddb_like(tmp_path / "a.zarr", libsvm_output=tmp_path / "a.zarr", **kwargs)
    with pytest.raises(OutputPathError, match="is the test store"):
        make_kddb_like(tmp_path / "a.zarr", libsvm_output=tmp_path / "t.zarr",
                       test_output=tmp_path / "t.zarr", n_test=10, **kwargs)
    with pytest.raises(OutputPathError, match="does not exist"):
        make_kddb_like(tmp_path / "a.zarr", libsvm_output=tmp_path / "no" / "a.svm", **kwargs)
    assert sorted(os.listdir(tmp_path)) == ["file.svm", "folder"]
    assert (tmp_path / "file.svm").read_text() == "keep\n"


# ------------------------------------------------------------ hostile CLI
@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("make_kddb_like", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def root(tmp_path_factory, tool):
    r = tmp_path_factory.mktemp("kddb_hostile")
    result = CliRunner().invoke(tool.main, [str(r / "store.zarr"), "--n-samples", "200",
                                            "--n-features", "500"])
    assert result.exit_code == 0, result.output
    (r / "exists.svm").write_text("1 1:1\n")
    (r / "folder").mkdir()
    (r / "folder" / "keep.txt").write_text("keep me\n")
    os.mkfifo(r / "pipe")
    os.symlink(r / "new.zarr", r / "link-to-output")
    return r


Case = namedtuple("Case", "name argv fragments")

GENERATE = ["--n-samples", "200", "--n-features", "500"]

#: argv and fragments use "{r}" for the case folder; every case exits with 1
CASES = [
    Case("libsvm-out-exists", ["{r}/new.zarr", "--libsvm-out", "{r}/exists.svm"],
         ["{r}/exists.svm", "already exists", "--overwrite"]),
    Case("libsvm-out-is-a-directory", ["{r}/new.zarr", "--libsvm-out", "{r}/folder",
                                       "--overwrite"],
         ["{r}/folder", "is a directory"]),
    Case("libsvm-out-is-a-store", ["{r}/new.zarr", "--libsvm-out", "{r}/store.zarr"],
         ["{r}/store.zarr", "is a directory"]),
    Case("libsvm-out-is-the-output", ["{r}/new.zarr", "--libsvm-out", "{r}/new.zarr"],
         ["{r}/new.zarr", "is the training store"]),
    Case("libsvm-out-links-to-the-output", ["{r}/new.zarr", "--libsvm-out",
                                            "{r}/link-to-output"],
         ["{r}/link-to-output", "is the training store"]),
    Case("libsvm-out-is-the-test-output", ["{r}/new.zarr", "--test-out", "{r}/t.zarr",
                                           "--n-test", "50", "--libsvm-out", "{r}/t.zarr"],
         ["{r}/t.zarr", "is the test store"]),
    Case("libsvm-out-inside-the-output", ["{r}/store.zarr", "--overwrite", "--libsvm-out",
                                          "{r}/store.zarr/zarr.json"],
         ["{r}/store.zarr/zarr.json", "training store"]),
    Case("libsvm-out-missing-folder", ["{r}/new.zarr", "--libsvm-out", "{r}/nope/a.svm"],
         ["{r}/nope/a.svm", "does not exist"]),
    Case("libsvm-out-is-a-fifo", ["{r}/new.zarr", "--libsvm-out", "{r}/pipe", "--overwrite"],
         ["{r}/pipe", "not a regular file"]),
]


def _fill(items, r):
    return [str(item).replace("{r}", str(r)) for item in items]


def _tree(folder):
    found = {}
    for dirpath, _, filenames in os.walk(folder):
        for name in filenames:
            path = os.path.join(dirpath, name)
            special = os.path.islink(path) or not os.path.isfile(path)
            found[path] = None if special else Path(path).read_bytes()
    return found


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_libsvm_out(root, tool, case):
    before = _tree(root)
    result = CliRunner().invoke(tool.main, _fill(case.argv, root) + GENERATE)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for fragment in _fill(case.fragments, root):
        assert fragment in lines[0], lines[0]
    assert _tree(root) == before
    assert not os.path.lexists(root / "new.zarr")


# ----------------------------------------------------------------- kernels
@pytest.mark.parametrize("n_buckets", [1, 3, 64, 1 << 12])
def test_search_right_equals_searchsorted(n_buckets):
    rng = np.random.default_rng(0)
    cdf = np.cumsum(np.arange(1, 5001, dtype=np.float64) ** -1.1)
    cdf[10:13] = cdf[9]                      # flat steps: equal cdf entries
    guide, step = guide_table(cdf, n_buckets)
    u = rng.random(20_000) * cdf[-1]
    u = np.concatenate([u, [0.0, cdf[-1], cdf[0], cdf[9], np.nextafter(cdf[9], 0),
                            np.nextafter(cdf[-1], np.inf), 2 * cdf[-1]],
                        np.arange(n_buckets + 1) * step])           # the bucket edges
    np.testing.assert_array_equal(search_right(cdf, guide, step, u),
                                  np.searchsorted(cdf, u, side="right"))


def test_draw_ranks_is_unchanged_by_the_guide():
    zipf = ZipfColumns.build(100_000, 1.1, np.random.default_rng(1))
    assert zipf.guide.dtype == np.int32 and len(zipf.guide) == 100_001
    ranks = zipf.draw_ranks(np.random.default_rng(5), 50_000)
    u = np.random.default_rng(5).random(50_000) * zipf.cdf[-1]
    expected = np.minimum(np.searchsorted(zipf.cdf, u, side="right"), 99_999)
    np.testing.assert_array_equal(ranks, expected)


def test_sort_grouped():
    rng = np.random.default_rng(2)
    m = 1000
    for sizes in ([0, 3, 1, 29, 0, 2], [200, 5], [1] * 50):
        rows = np.repeat(np.arange(len(sizes)), sizes)
        keys = rows * m + rng.integers(0, m, len(rows))
        expected = np.sort(keys)
        assert sort_grouped(keys, m)
        np.testing.assert_array_equal(keys, expected)
    keys = np.array([3 * m + 1, 1 * m + 5, 1 * m + 2])
    assert not sort_grouped(keys, m)


@pytest.mark.parametrize("n_columns", [1, 5, 3000, 2 ** 27 + 5])
def test_sort_keys_by_column(n_columns):
    rng = np.random.default_rng(3)
    sizes = np.minimum(rng.integers(0, 8, 400), n_columns)
    rows = np.repeat(np.arange(400), sizes)
    columns = np.concatenate([rng.choice(n_columns, size=k, replace=False) for k in sizes])
    keys = (columns.astype(np.int64) << 32) | rows          # row order, columns unsorted
    values = rng.random(len(keys)).astype(np.float32)
    order = np.argsort(keys)
    out_keys, out_values, ok = sort_keys_by_column(keys.copy(), values.copy(),
                                                   np.empty_like(keys), np.empty_like(values))
    assert ok
    np.testing.assert_array_equal(out_keys, keys[order])
    np.testing.assert_array_equal(out_values, values[order])
    empty = np.zeros(0, np.float32)
    out_keys, _, ok = sort_keys_by_column(keys.copy(), empty, np.empty_like(keys), empty)
    assert ok and np.array_equal(out_keys, keys[order])


def test_sort_keys_by_column_reports_rows_out_of_order():
    keys = (np.array([4, 4, 1], dtype=np.int64) << 32) | np.array([9, 2, 5])
    empty = np.zeros(0, np.float32)
    *_, ok = sort_keys_by_column(keys, empty, np.empty_like(keys), empty)
    assert not ok


def test_add_key_counts():
    keys = (np.array([0, 0, 3, 7, 7, 7], dtype=np.int64) << 32) | np.arange(6)
    counts = np.zeros(9, dtype=np.int32)
    add_key_counts(keys, counts)
    np.testing.assert_array_equal(counts, [2, 0, 0, 1, 0, 0, 0, 3, 0])


def test_format_binary_rows_parses_back():
    rng = np.random.default_rng(4)
    n = 300
    row_nnz = rng.integers(0, 12, n)
    indptr = np.concatenate([[0], np.cumsum(row_nnz)])
    columns = np.concatenate([np.sort(rng.choice(10 ** 9, k, replace=False))
                              for k in row_nnz]).astype(np.int64)
    labels = rng.choice([-1, 1, 0, 12, -30], n)
    text = bytes(format_binary_rows(labels, indptr, columns, 1))
    expected = "".join(
        " ".join([str(labels[i])] + [f"{c + 1}:1" for c in columns[indptr[i]:indptr[i + 1]]])
        + "\n" for i in range(n))
    assert text.decode() == expected
    zero = bytes(format_binary_rows(labels[:3], indptr[:4], columns.astype(np.int32)
                                    if columns.max() < 2 ** 31 else columns, 0))
    assert zero.split(b"\n")[0] == " ".join(
        [str(labels[0])] + [f"{c}:1" for c in columns[:indptr[1]]]).encode()


# -------------------------------------------------------------- transpose
def test_small_run_index_stride_reads_the_same_runs(tmp_path, monkeypatch):
    """Spilled runs located through a sparse index of every 3rd key."""
    rng = np.random.default_rng(6)
    lines = []
    for i in range(3000):
        cols = np.sort(rng.choice(5000, rng.integers(0, 12), replace=False)) + 1
        lines.append(f"{i % 2} " + " ".join(f"{c}:{rng.choice([1, 2.5])}" for c in cols))
    source = tmp_path / "in.svm"
    source.write_text("\n".join(lines) + "\n")
    reference = ingest_libsvm(source, tmp_path / "ref.zarr", memory_budget=2 ** 28)
    monkeypatch.setattr(external_transpose, "RUN_INDEX_STRIDE", 3)
    small = ingest_libsvm(source, tmp_path / "small.zarr", memory_budget=2 ** 14,
                          block_nnz=97)
    assert reference["n_runs"] == 0 and small["n_runs"] > 5
    assert (open_store(tmp_path / "small.zarr").fingerprint
            == open_store(tmp_path / "ref.zarr").fingerprint)


def test_counts_turn_dense_again(tmp_path):
    """A first run of a few far columns keeps sparse counts; many entries later, dense."""
    transpose = ExternalTranspose(tmp_path, buffer_bytes=8 * 1000)
    rng = np.random.default_rng(7)
    total = np.zeros(3_000_001, dtype=np.int64)
    first = 0
    for size, top in [(1000, 3_000_000)] + [(1000, 2000)] * 3000:
        rows = np.repeat(np.arange(first, first + size // 4), 4)
        columns = np.concatenate([rng.choice(top, 4, replace=False) for _ in range(size // 4)])
        np.add.at(total, columns, 1)
        transpose.add(columns, rows.astype(np.int32), None)
        first += size // 4
        if first == 250:
            assert transpose._sparse_counts is not None     # 1000 entries, ids to 3M
    transpose.finish()
    assert transpose._sparse_counts is None                 # 3M entries: dense again
    used, counts = transpose.used_columns()
    np.testing.assert_array_equal(used, np.flatnonzero(total))
    np.testing.assert_array_equal(counts, total[used])
    transpose.close()


def test_declared_indptr_is_checked(tmp_path):
    indptr = np.array([0, 1, 3], dtype=np.int64)
    with StoreWriter(tmp_path / "a.zarr", n_samples=3, n_features=2, nnz=3, dtype="float32",
                     binary=True, labels=[1, -1, 1], indptr=indptr) as writer:
        with pytest.raises(ValueError, match="declared indptr"):
            writer.append([0, 2], [0, 1])
        writer.append([0, 1, 3], [0, 0, 2])
        writer.close()
    np.testing.assert_array_equal(indptr, [0, 1, 3])
    np.testing.assert_array_equal(open_store(tmp_path / "a.zarr").read_range(0, 2).indptr,
                                  indptr)
    with pytest.raises(ValueError, match="indptr must be"):
        StoreWriter(tmp_path / "b.zarr", n_samples=3, n_features=2, nnz=3, dtype="float32",
                    binary=True, labels=[1, -1, 1], indptr=np.array([0, 3], dtype=np.int64))


def test_parse_errors_from_the_thread_keep_their_line(tmp_path):
    lines = [f"1 {i + 1}:1" for i in range(200_000)] + ["1 3:x"]
    source = tmp_path / "bad.svm"
    source.write_text("\n".join(lines) + "\n")
    with pytest.raises(Exception, match="line 200001"):
        ingest_libsvm(source, tmp_path / "o.zarr", memory_budget=2 ** 16)
    assert sorted(os.listdir(tmp_path)) == ["bad.svm"]


def test_group_bounds_limit_entries_and_columns():
    plan = libsvm.MemoryPlan(2 ** 20)                 # 10,485 entries, 8,192 columns
    rng = np.random.default_rng(8)
    counts = rng.integers(0, 3, 100_000)
    counts[500] = 50_000                                 # a heavy column: a group alone
    indptr = np.concatenate([[0], np.cumsum(counts)])
    bounds = plan.group_bounds(indptr)
    assert bounds[0] == 0 and bounds[-1] == 100_000 and np.all(np.diff(bounds) > 0)
    assert np.diff(bounds).max() <= plan.group_columns
    sizes = indptr[bounds[1:]] - indptr[bounds[:-1]]
    heaviest = np.maximum.reduceat(counts, bounds[:-1])
    assert np.all(sizes <= plan.group_nnz + heaviest)   # one heavy column may go past
    empty = plan.group_bounds(np.zeros(30_001, dtype=np.int64))
    assert np.diff(empty).max() <= plan.group_columns and empty[-1] == 30_000
