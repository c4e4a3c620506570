"""LIBSVM ingest: exactness against scikit-learn, spilling, memory, errors."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from ultrafs.errors import InputFormatError, ParameterError
from ultrafs.store.writers import libsvm, libsvm_reader
from ultrafs.store.writers.libsvm import ingest_libsvm
from ultrafs.store.writers.libsvm_reader import detect_compression, iter_libsvm
from ultrafs.store.writers.zarr_writer import StoreExistsError
from ultrafs.store.zarr_store import ZarrStore

LIBSVM_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ALL_FILES = sorted(p.name for p in LIBSVM_DIR.glob("*.svm.bz2")) if LIBSVM_DIR.is_dir() else []
BIG_FILE = "imdb50k_uni_bigram.svm.bz2"


@pytest.fixture(scope="module")
def libsvm_dir():
    """The shared real LIBSVM files; skips when absent."""
    if not LIBSVM_DIR.is_dir():
        pytest.skip(f"shared datasets not found at {LIBSVM_DIR}")
    return LIBSVM_DIR


# ----------------------------------------------------------------- helpers
def sklearn_csc(path, dtype=np.float32, zero_based=False, n_features=None):
    """scikit-learn's reading of a file, as canonical CSC without zeros."""
    X, y = load_svmlight_file(str(path), zero_based=zero_based, dtype=dtype,
                              n_features=n_features)
    X = sp.csc_matrix(X)
    X.eliminate_zeros()
    X.sort_indices()
    return X, y


def assert_store_equals(store: ZarrStore, X, y):
    """Bit-identical values, same structure, same labels."""
    assert (store.n_samples, store.n_features) == X.shape
    assert store.nnz == X.nnz and store.dtype == X.dtype
    Z = store.to_csc()
    np.testing.assert_array_equal(Z.indptr, X.indptr)
    np.testing.assert_array_equal(Z.indices, X.indices)
    assert Z.data.tobytes() == X.data.tobytes()
    np.testing.assert_array_equal(store.read_targets(), y)
    assert store.target_type == "binary"
    classes = np.unique(y)
    np.testing.assert_array_equal(store.read_labels(), np.where(y == classes[1], 1.0, -1.0))


def write_text(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def ingest_text(tmp_path, text, **kwargs):
    """Ingest ``text`` written to a file; returns (summary, store)."""
    source = write_text(tmp_path / "in.svm", text)
    summary = ingest_libsvm(source, tmp_path / "out.zarr", **kwargs)
    return summary, ZarrStore(tmp_path / "out.zarr")


def only_input_left(tmp_path, names=("in.svm",)):
    """No store, temporary store or spill directory is left behind."""
    return sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


# ------------------------------------------------ exactness on real files
@pytest.mark.parametrize("name", [n for n in ALL_FILES if n != BIG_FILE])
def test_real_file_matches_sklearn(libsvm_dir, tmp_path, name):
    source = libsvm_dir / name
    summary = ingest_libsvm(source, tmp_path / "out.zarr")
    store = ZarrStore(tmp_path / "out.zarr")
    X, y = sklearn_csc(source)
    assert_store_equals(store, X, y)
    assert store.id_offset == 1
    assert summary["n_features"] == X.shape[1] and summary["nnz"] == X.nnz
    assert summary["binary"] == store.binary == bool(np.all(X.data == 1))
    assert summary["n_runs"] == 0 and summary["output"] == str(tmp_path / "out.zarr")


@pytest.mark.parametrize("name", ["rcv1_small.svm.bz2", "dexter_train.svm.bz2",
                                  "madelon_test.svm.bz2"])
def test_real_file_float64(libsvm_dir, tmp_path, name):
    source = libsvm_dir / name
    ingest_libsvm(source, tmp_path / "out.zarr", dtype="float64")
    assert_store_equals(ZarrStore(tmp_path / "out.zarr"), *sklearn_csc(source, np.float64))


@pytest.mark.slow
def test_big_file_matches_sklearn(libsvm_dir, tmp_path):
    """imdb50k: 50,000 rows, 2.5M features, 17M nonzeros (about 15 s)."""
    source = libsvm_dir / BIG_FILE
    summary = ingest_libsvm(source, tmp_path / "out.zarr")
    store = ZarrStore(tmp_path / "out.zarr")
    assert store.binary
    assert_store_equals(store, *sklearn_csc(source))
    assert summary["n_samples"] == 50_000 and summary["nnz"] == 17_192_274


# ----------------------------------------------------------- compression
@pytest.fixture(scope="module")
def small_text(libsvm_dir):
    return bz2.decompress((libsvm_dir / "rcv1_smaller.svm.bz2").read_bytes())


@pytest.mark.parametrize("name, compress, kind", [
    ("plain.svm", lambda b: b, "none"),
    ("data.svm.gz", lambda b: gzip.compress(b, mtime=0), "gzip"),
    ("data.svm.xz", lzma.compress, "xz"),
    ("data.svm.bz2", bz2.compress, "bz2"),
    ("misnamed.txt", lambda b: gzip.compress(b, mtime=0), "gzip"),          # detected by content
    ("misnamed.gz", lambda b: b, "none"),
])
def test_compression_variants(libsvm_dir, small_text, tmp_path, name, compress, kind):
    source = write_text(tmp_path / name, compress(small_text))
    assert detect_compression(source) == kind
    ingest_libsvm(source, tmp_path / "out.zarr")
    X, y = sklearn_csc(libsvm_dir / "rcv1_smaller.svm.bz2")
    assert_store_equals(ZarrStore(tmp_path / "out.zarr"), X, y)


# ------------------------------------------------------- spilling, memory
def test_spilling_gives_the_same_store(libsvm_dir, tmp_path):
    source = libsvm_dir / "rcv1_small.svm.bz2"
    spilled = ingest_libsvm(source, tmp_path / "spilled.zarr", memory_budget=64 * 2 ** 10)
    whole = ingest_libsvm(source, tmp_path / "whole.zarr")
    assert spilled["n_runs"] > 10 and whole["n_runs"] == 0
    a, b = ZarrStore(tmp_path / "spilled.zarr"), ZarrStore(tmp_path / "whole.zarr")
    X, y = sklearn_csc(source)
    assert_store_equals(a, X, y)
    assert_store_equals(b, X, y)
    assert a.attrs["block_bounds"] == b.attrs["block_bounds"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spilled.zarr", "whole.zarr"]


def test_spilling_binary_and_valued_rows_mixed(tmp_path):
    """Runs without values (all ones so far) mix with runs holding values."""
    rng = np.random.default_rng(0)
    lines = []
    for i in range(3000):
        cols = np.sort(rng.choice(300, 8, replace=False)) + 1
        vals = ["1"] * 8 if i < 2000 else [f"{v:.3f}" for v in rng.uniform(0.1, 2, 8)]
        lines.append(f"{i % 2} " + " ".join(f"{c}:{v}" for c, v in zip(cols, vals)))
    source = write_text(tmp_path / "in.svm", "\n".join(lines) + "\n")
    summary = ingest_libsvm(source, tmp_path / "out.zarr", memory_budget=16 * 2 ** 10)
    assert summary["n_runs"] > 3 and not summary["binary"]
    assert_store_equals(ZarrStore(tmp_path / "out.zarr"), *sklearn_csc(source))


def _generate(path: Path, n_rows: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for i in range(n_rows):
            cols = np.sort(rng.choice(2000, 400, replace=False)) + 1
            vals = rng.integers(1, 1000, 400)
            f.write(f"{i % 2} " + " ".join(f"{c}:{v}" for c, v in zip(cols, vals)) + "\n")
    return path


_PEAK_SCRIPT = """
import json, sys, tracemalloc
from ultrafs.store.writers.libsvm import ingest_libsvm
source, warm, output, budget = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ingest_libsvm(source, warm, memory_budget=budget)          # JIT and imports
tracemalloc.start()
summary = ingest_libsvm(source, output, memory_budget=budget)
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"peak": peak, "n_runs": summary["n_runs"]}))
"""


def _traced_peak(source: Path, output: Path, budget: int) -> tuple[int, dict]:
    """Peak traced memory of one ingest, in a fresh process.

    tracemalloc counts every thread's allocations: in the test process the
    threads of a session-wide dask cluster would add their own noise.
    """
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _PEAK_SCRIPT, str(source),
         str(output.with_name(output.name + ".warm.zarr")), str(output), str(budget)],
        capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["peak"], {"n_runs": result["n_runs"]}


def test_peak_memory_does_not_grow_with_file_size(tmp_path):
    budget = 256 * 2 ** 10
    small = _generate(tmp_path / "small.svm", 500)             # 200k entries
    large = _generate(tmp_path / "large.svm", 1000, seed=1)    # 400k entries
    peak_small, summary_small = _traced_peak(small, tmp_path / "a.zarr", budget)
    peak_large, summary_large = _traced_peak(large, tmp_path / "b.zarr", budget)
    assert summary_large["n_runs"] >= 2 * summary_small["n_runs"] - 1 > 10
    # the data doubled (3.2 MB -> 6.4 MB of entries); the peak stays put
    assert peak_large < 1.3 * peak_small
    assert peak_large < 4 * budget
    assert_store_equals(ZarrStore(tmp_path / "b.zarr"), *sklearn_csc(large))


# ------------------------------------------------------- accepted syntax
def test_syntax_variants_match_sklearn(tmp_path):
    text = ("# a header comment\n"
            "+1 1:0.5 3:2e-3\t7:1E+2 # trailing comment\n"
            "\n"
            "   \t \n"
            "-1 2:.25 4:5. 7:-0.0001\r\n"
            "# only a comment\n"
            "+1   5:1e22 6:123456789012345678901234567890\n"
            "-1\n"
            "1 1:0.1#comment right after\n"
            "-1 2:+3 6:4.9e-324 7:1_000")                 # no final newline
    summary, store = ingest_text(tmp_path, text, dtype="float64")
    X, y = sklearn_csc(tmp_path / "in.svm", np.float64)
    assert_store_equals(store, X, y)
    assert summary["n_samples"] == 6


def test_exact_values_like_sklearn(tmp_path):
    """Fast path and float() fallback give bit-identical values."""
    rng = np.random.default_rng(7)
    tokens = []
    for _ in range(4000):
        digits = "".join(rng.choice(list("0123456789"), rng.integers(1, 25)))
        point = rng.integers(0, len(digits) + 1)
        token = digits[:point] + "." + digits[point:]
        if rng.random() < 0.5:
            token += f"e{rng.integers(-45, 10)}"
        tokens.append(("-" if rng.random() < 0.3 else "") + token)
    rows = [f"{i % 2} " + " ".join(f"{k + 1}:{t}" for k, t in enumerate(tokens[i::40]))
            for i in range(40)]
    source = write_text(tmp_path / "in.svm", "\n".join(rows) + "\n")
    for dtype in ("float32", "float64"):
        out = tmp_path / f"{dtype}.zarr"
        ingest_libsvm(source, out, dtype=dtype)
        assert_store_equals(ZarrStore(out), *sklearn_csc(source, np.dtype(dtype)))


def test_labels_written_differently_are_the_same_class(tmp_path):
    summary, store = ingest_text(tmp_path, "+1 1:1\n1 2:1\n1.0 1:1\n-1 2:1\n-1.00 1:1\n")
    assert summary["classes"] == [-1.0, 1.0]
    np.testing.assert_array_equal(store.read_labels(), [1, 1, 1, -1, -1])


def test_zero_and_two_labels(tmp_path):
    _, store = ingest_text(tmp_path, "0 1:1\n2.0 2:1\n2 3:1\n")
    np.testing.assert_array_equal(store.classes, [0.0, 2.0])
    np.testing.assert_array_equal(store.read_labels(), [-1, 1, 1])


def test_unsorted_indices_are_sorted(tmp_path):
    _, store = ingest_text(tmp_path, "1 9:1 2:3 5:4\n-1 3:1 1:2\n")
    dense = store.to_csc().toarray()
    np.testing.assert_array_equal(dense[0, [1, 4, 8]], [3, 4, 1])
    np.testing.assert_array_equal(dense[1, [0, 2]], [2, 1])


def test_explicit_zeros_are_dropped_but_count_for_n_features(tmp_path):
    summary, store = ingest_text(tmp_path, "1 1:2 5:0\n-1 2:0 3:1.5\n")
    assert summary["explicit_zeros"] == 2 and store.nnz == 2
    assert store.n_features == 5                         # as scikit-learn
    X, y = sklearn_csc(tmp_path / "in.svm")
    assert_store_equals(store, X, y)
    assert store.attrs["source"]["explicit_zeros_dropped"] == 2


def test_zero_based_files(tmp_path):
    text = "1 0:1 3:2\n-1 1:1\n"
    summary, store = ingest_text(tmp_path, text, zero_based=True)
    assert store.id_offset == 0 and store.n_features == 4
    assert_store_equals(store, *sklearn_csc(tmp_path / "in.svm", zero_based=True))


def test_one_based_ids(tmp_path):
    _, store = ingest_text(tmp_path, "1 1:1 4:2\n-1 2:1\n")
    assert store.id_offset == 1 and store.n_features == 4
    np.testing.assert_array_equal(store.feature_ids([0, 3]), [1, 4])


def test_n_features_option(tmp_path):
    summary, store = ingest_text(tmp_path, "1 1:1 4:2\n-1 2:1\n", n_features=10)
    assert store.n_features == 10 and store.read_range(4, 10).nnz == 0
    assert_store_equals(store, *sklearn_csc(tmp_path / "in.svm", n_features=10))
    with pytest.raises(InputFormatError, match="n_features=3.*feature index 4"):
        ingest_libsvm(tmp_path / "in.svm", tmp_path / "small.zarr", n_features=3)
    assert not (tmp_path / "small.zarr").exists()


def test_rows_without_features_and_empty_columns(tmp_path):
    _, store = ingest_text(tmp_path, "1\n-1 3:1\n1\n")
    assert store.n_features == 3 and store.nnz == 1
    assert_store_equals(store, *sklearn_csc(tmp_path / "in.svm"))


def test_block_nnz_and_command_are_recorded(tmp_path):
    rows = "\n".join(f"{i % 2} " + " ".join(f"{c}:1" for c in range(1, 51))
                     for i in range(40))
    _, store = ingest_text(tmp_path, rows, block_nnz=100, command="ultrafs ingest x y")
    bounds = store.default_block_bounds()
    assert len(bounds) - 1 == 20 and store.attrs["created_by"] == "ultrafs ingest x y"
    assert store.attrs["source"]["path"] == str((tmp_path / "in.svm").resolve())
    assert store.binary
    summary = ingest_libsvm(tmp_path / "in.svm", tmp_path / "again.zarr")
    assert "ingest_libsvm(" in ZarrStore(summary["output"]).attrs["created_by"]


def test_iter_libsvm_chunks_in_order(tmp_path):
    lines = [f"{i % 2} {i + 1}:{i}.5" for i in range(300)]
    source = write_text(tmp_path / "in.svm", "\n".join(lines))
    chunks = list(iter_libsvm(source, block_size=256))
    assert len(chunks) > 5
    assert [c.first_row for c in chunks] == list(np.cumsum([0] + [c.n_rows for c in chunks[:-1]]))
    values = np.concatenate([c.values for c in chunks])
    np.testing.assert_array_equal(values, np.arange(300) + 0.5)
    lines_of_rows = np.concatenate([c.row_lines for c in chunks])
    np.testing.assert_array_equal(lines_of_rows, np.arange(1, 301))


# ------------------------------------------------------------ bad input
@pytest.mark.parametrize("text, message", [
    ("1 1:0.5\n-1 3:abc\n", "line 2: invalid value of feature 3 'abc'"),
    ("1 1:0.5\n-1 3 4:1\n", "line 2: malformed feature '3' (expected index:value)"),
    ("1 1:0.5\n-1 :4\n", "line 2: malformed feature ':4'"),
    ("1 1:0.5\n-1 x:4\n", "line 2: malformed feature 'x:4'"),
    ("1 1:0.5\n-1 3:\n", "line 2: invalid value of feature 3 ''"),
    ("abc 1:1\n-1 2:1\n", "line 1: invalid label 'abc'"),
    ("1:1 2:1\n", "line 1: invalid label '1:1'"),
    ("1 1:1\n-1 2:nan\n", "line 2: NaN or infinite value of feature 2 'nan'"),
    ("1 1:1\n-1 2:1e400\n", "line 2: NaN or infinite value of feature 2 '1e400'"),
    ("1 1:1\ninf 2:1\n", "line 2: NaN or infinite label 'inf'"),
    ("1 1:1\n-1 2:1e39\n", "line 2: value 1e+39 of feature 2 overflows float32"),
    ("1 1:1\n-1 -3:1\n", "line 2: negative feature index -3"),
    ("1 1:1\n\n# c\n-1 2:1\n1 3:1\n-1 4:1\n1 0:1\n",
     "line 7: feature index 0 in a 1-based file (use zero_based=True)"),
    ("1 1:1\n-1 5:1 5:2\n", "line 2: duplicate feature index 5"),
    ("1 1:1\n-1 5:1 2:1 5:3\n", "line 2: duplicate feature index 5"),
    ("1 qid:3 1:1\n-1 qid:3 2:1\n", "line 1: qid fields (ranking data) are not supported"),
    ("1 99999999999999999999999:1\n", "line 1: feature index too large"),
    ("1 4294967296:1\n-1 1:1\n", "feature index 4294967296 is larger than the supported"),
    ("1 1:1\n1 2:1\n", "labels take a single value (1); at least two distinct"),
    ("", "no samples (empty file)"),
    ("# nothing but comments\n\n   \n", "no samples"),
])
def test_bad_input(tmp_path, text, message):
    source = write_text(tmp_path / "in.svm", text)
    with pytest.raises(InputFormatError) as info:
        ingest_libsvm(source, tmp_path / "out.zarr")
    error = str(info.value)
    assert error.startswith(f"{source}:"), error
    assert message in error, error
    assert "\n" not in error
    assert only_input_left(tmp_path)


def test_error_line_numbers_across_chunks(tmp_path):
    lines = [f"{i % 2} 1:1 2:1" for i in range(5000)]
    lines[4321] = "1 1:1 2:oops"
    source = write_text(tmp_path / "in.svm", "\n".join(lines) + "\n")
    with pytest.raises(InputFormatError, match="line 4322: invalid value of feature 2"):
        ingest_libsvm(source, tmp_path / "out.zarr", memory_budget=16 * 2 ** 10)
    assert only_input_left(tmp_path)


# explicit ids: the default id of a bytes value is the bytes themselves, and
# a gzip header holds a time stamp (mtime=0 keeps the content fixed too), so
# two collections in different seconds would disagree (tests/test_collection.py)
@pytest.mark.parametrize("content, fragment", [
    pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
                 "not a LIBSVM text file (looks like a PNG image)", id="png"),
    pytest.param(b"PK\x03\x04rest", "not a LIBSVM text file (looks like a zip archive)",
                 id="zip"),
    pytest.param(b"\x28\xb5\x2f\xfd....", "zstd", id="zstd"),
    pytest.param(bytes(range(256)) * 4, "not a LIBSVM text file (binary content)",
                 id="binary"),
    pytest.param(gzip.compress(b"\x00\x01\x02 binary inside gzip", mtime=0),
                 "not a LIBSVM text file", id="gzip-of-binary"),
    pytest.param(bz2.compress(b"1 1:1\n-1 2:1\n" * 1000)[:-40], "cannot read bz2 data",
                 id="bz2-truncated"),
    pytest.param(gzip.compress(b"1 1:1\n-1 2:1\n" * 1000, mtime=0)[:-30],
                 "cannot read gzip data", id="gzip-truncated"),
])
def test_not_a_text_file(tmp_path, content, fragment):
    source = write_text(tmp_path / "in.svm", content)
    with pytest.raises(InputFormatError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        ingest_libsvm(source, tmp_path / "out.zarr")
    assert only_input_left(tmp_path)


def test_missing_input_and_directories(tmp_path):
    with pytest.raises(InputFormatError, match="missing.svm: no such file"):
        ingest_libsvm(tmp_path / "missing.svm", tmp_path / "out.zarr")
    (tmp_path / "folder").mkdir()
    with pytest.raises(InputFormatError, match="is a directory"):
        ingest_libsvm(tmp_path / "folder", tmp_path / "out.zarr")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]


@pytest.mark.parametrize("kwargs, fragment", [
    ({"dtype": "int32"}, "dtype"),
    ({"dtype": "nonsense"}, "dtype"),
    ({"memory_budget": 100}, "memory_budget"),
    ({"n_features": -1}, "n_features"),
    ({"block_nnz": 0}, "block_nnz"),
])
def test_bad_parameters(tmp_path, kwargs, fragment):
    source = write_text(tmp_path / "in.svm", "1 1:1\n-1 2:1\n")
    with pytest.raises(ParameterError, match=fragment):
        ingest_libsvm(source, tmp_path / "out.zarr", **kwargs)
    assert only_input_left(tmp_path)


# --------------------------------------------------- outputs, interruption
def test_existing_output(tmp_path):
    source = write_text(tmp_path / "in.svm", "1 1:1\n-1 2:1\n")
    ingest_libsvm(source, tmp_path / "out.zarr")
    with pytest.raises(StoreExistsError, match="already exists"):
        ingest_libsvm(source, tmp_path / "out.zarr")
    write_text(source, "1 1:1 3:1\n-1 2:1\n")
    ingest_libsvm(source, tmp_path / "out.zarr", overwrite=True)
    assert ZarrStore(tmp_path / "out.zarr").n_features == 3
    (tmp_path / "notes").mkdir()
    with pytest.raises(StoreExistsError, match="not an ultrafs store"):
        ingest_libsvm(source, tmp_path / "notes", overwrite=True)
    assert only_input_left(tmp_path, ["in.svm", "out.zarr", "notes"])


def test_interrupted_while_writing_leaves_nothing(tmp_path, monkeypatch):
    lines = [f"{i % 2} " + " ".join(f"{c}:1" for c in range(1 + i % 7, 400, 7))
             for i in range(400)]
    source = write_text(tmp_path / "in.svm", "\n".join(lines) + "\n")
    calls = []
    original = libsvm.StoreWriter.append

    def failing_append(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt            # like Ctrl-C in the middle
        return original(self, *args, **kwargs)

    monkeypatch.setattr(libsvm.StoreWriter, "append", failing_append)
    with pytest.raises(KeyboardInterrupt):
        ingest_libsvm(source, tmp_path / "out.zarr", memory_budget=16 * 2 ** 10)
    assert len(calls) == 3
    assert only_input_left(tmp_path)


def test_interrupted_while_parsing_leaves_nothing(tmp_path, monkeypatch):
    lines = [f"{i % 2} " + " ".join(f"{c}:2" for c in range(1, 60)) for i in range(2000)]
    source = write_text(tmp_path / "in.svm", "\n".join(lines) + "\n")
    original = libsvm_reader.parse_buffer
    seen = []

    def failing_parse(*args, **kwargs):
        seen.append(1)
        if len(seen) == 20:
            raise RuntimeError("disk on fire")
        return original(*args, **kwargs)

    monkeypatch.setattr(libsvm_reader, "parse_buffer", failing_parse)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ingest_libsvm(source, tmp_path / "out.zarr", memory_budget=16 * 2 ** 10)
    assert only_input_left(tmp_path)


def test_ingested_store_pickles_as_path(tmp_path):
    import pickle

    _, store = ingest_text(tmp_path, "1 1:1\n-1 2:1\n")
    assert len(pickle.dumps(store)) < 300


def test_fast_number_path_is_exact_or_declines():
    """parse_decimal agrees bit for bit with float() whenever it answers."""
    from ultrafs.kernels.libsvm_parse import parse_decimal

    rng = np.random.default_rng(3)
    fixed = ["1", "-1", "+1", "0", "-0", "2.0", ".5", "5.", "1.e5", "1E-5", "0.001",
             "1e22", "1e-22", "9007199254740992", "1.50000000000000000000000",
             "00000000000000000000001", "0e999"]
    declined = ["e5", ".", "1e", "1e+", "abc", "nan", "inf", "1e23", "1_0", "--1",
                "1..2", "9007199254740993", "123456789012345678901"]
    tokens = fixed + declined
    for _ in range(20000):
        digits = "".join(rng.choice(list("0123456789"), rng.integers(1, 20)))
        point = rng.integers(0, len(digits) + 1)
        token = digits[:point] + ("." if rng.random() < 0.7 else "") + digits[point:]
        if rng.random() < 0.5:
            token += rng.choice(["e", "E"]) + rng.choice(["", "+", "-"]) + str(rng.integers(0, 30))
        tokens.append(token)
    answered = 0
    for token in tokens:
        buf = np.frombuffer(token.encode(), dtype=np.uint8)
        ok, value = parse_decimal(buf, 0, len(buf))
        if token in fixed:
            assert ok, token
        if token in declined:
            assert not ok, token
        if ok:
            answered += 1
            reference = float(token)
            assert value == reference and np.signbit(value) == np.signbit(reference), token
    assert answered > 10000


# ------------------------------------------------------ target types
def labelled_text(labels, seed=0, n_features=12) -> str:
    """LIBSVM lines with the given label tokens and random features."""
    rng = np.random.default_rng(seed)
    lines = []
    for label in labels:
        cols = np.sort(rng.choice(n_features, rng.integers(1, 5), replace=False)) + 1
        lines.append(f"{label} " + " ".join(f"{c}:{rng.integers(1, 9) / 4}" for c in cols))
    return "\n".join(lines) + "\n"


MULTICLASS = ["1", "2", "3", "2", "1", "3", "3", "1"]
REGRESSION = ["0.5", "1.25", "3.0", "0.5", "-2.75", "1.25", "10"]
TWO = ["-1", "+1", "1", "-1"]


@pytest.mark.parametrize("store_format", ["zarr", "parquet"])
@pytest.mark.parametrize("labels, target, expected, classes", [
    (MULTICLASS, None, "multiclass", [1.0, 2.0, 3.0]),
    (MULTICLASS, "auto", "multiclass", [1.0, 2.0, 3.0]),
    (MULTICLASS, "multiclass", "multiclass", [1.0, 2.0, 3.0]),
    (MULTICLASS, "continuous", "continuous", []),
    (["-1", "2", "7", "2", "-1", "7"], None, "multiclass", [-1.0, 2.0, 7.0]),
    (REGRESSION, None, "continuous", []),
    (REGRESSION, "continuous", "continuous", []),
    (REGRESSION, "multiclass", "multiclass", [-2.75, 0.5, 1.25, 3.0, 10.0]),
    (TWO, None, "binary", [-1.0, 1.0]),
    (TWO, "binary", "binary", [-1.0, 1.0]),
    (TWO, "continuous", "continuous", []),
])
def test_ingest_target_types(tmp_path, store_format, labels, target, expected, classes):
    from ultrafs.store import open_store

    source = write_text(tmp_path / "in.svm", labelled_text(labels))
    out = tmp_path / "out.store"
    summary = ingest_libsvm(source, out, format=store_format, target=target,
                            dtype="float64")
    assert summary["target"] == expected and summary["classes"] == classes
    store = open_store(out)
    X, y = sklearn_csc(source, np.float64)
    assert (store.to_csc() != X).nnz == 0
    assert store.target_type == expected and store.format_version == 3
    np.testing.assert_array_equal(store.classes, classes)
    np.testing.assert_array_equal(store.read_targets(), y)
    assert store.attrs["target"] == expected
    assert store.attrs["classes"] == (None if expected == "continuous" else classes)
    if expected == "binary":
        np.testing.assert_array_equal(store.read_labels(), np.where(y > 0, 1.0, -1.0))
    else:
        with pytest.raises(ParameterError, match=f"target is {expected}"):
            store.read_labels()
    if expected != "continuous":
        np.testing.assert_array_equal(np.asarray(classes)[store.read_class_indices()], y)
    assert (f"target={target!r}" in store.attrs["created_by"]) == (target not in (None, "auto"))


@pytest.mark.parametrize("store_format", ["zarr", "parquet"])
@pytest.mark.parametrize("labels, target, message", [
    (MULTICLASS, "binary", "target 'binary' needs exactly two label values, found 3 (1, 2, 3)"),
    (REGRESSION, "binary", "target 'binary' needs exactly two label values, found 5"),
    (TWO, "multiclass", "target 'multiclass' needs at least three label values, found 2"),
    (["2", "2", "2"], "continuous", "labels take a single value (2)"),
    ([str(k) for k in range(1001)], None,
     "1001 distinct integer values, more than the 1000 classes a multiclass target may "
     "have; pass target='continuous'"),
    ([str(k) for k in range(1001)], "multiclass", "more than the 1000 classes"),
])
def test_ingest_labels_that_do_not_fit_the_target(tmp_path, store_format, labels, target,
                                                  message):
    source = write_text(tmp_path / "in.svm", labelled_text(labels))
    with pytest.raises(InputFormatError) as info:
        ingest_libsvm(source, tmp_path / "out.store", format=store_format, target=target)
    error = str(info.value)
    assert error.startswith(f"{source}:") and message in error and "\n" not in error, error
    assert only_input_left(tmp_path)


def test_ingest_many_integer_values_as_continuous(tmp_path):
    labels = [str(k) for k in range(1001)]
    source = write_text(tmp_path / "in.svm", labelled_text(labels))
    summary = ingest_libsvm(source, tmp_path / "out.zarr", target="continuous")
    assert summary["target"] == "continuous" and summary["classes"] == []
    np.testing.assert_array_equal(ZarrStore(tmp_path / "out.zarr").read_targets(),
                                  np.arange(1001.0))


def test_ingest_unknown_target(tmp_path):
    source = write_text(tmp_path / "in.svm", labelled_text(TWO))
    with pytest.raises(ParameterError, match="target must be one of auto, binary, "
                                             "multiclass, continuous, none; got 'ordinal'"):
        ingest_libsvm(source, tmp_path / "out.zarr", target="ordinal")
    assert only_input_left(tmp_path)


# ------------------------------------------------ CLI: ultrafs ingest --target
def cli(*args):
    from click.testing import CliRunner

    from ultrafs.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], prog_name="ultrafs")


@pytest.mark.parametrize("store_format", ["zarr", "parquet"])
@pytest.mark.parametrize("labels, option, expected, classes", [
    (MULTICLASS, [], "multiclass", [1.0, 2.0, 3.0]),
    (MULTICLASS, ["--target", "auto"], "multiclass", [1.0, 2.0, 3.0]),
    (MULTICLASS, ["--target", "multiclass"], "multiclass", [1.0, 2.0, 3.0]),
    (REGRESSION, [], "continuous", []),
    (REGRESSION, ["--target", "continuous"], "continuous", []),
    (TWO, ["--target", "binary"], "binary", [-1.0, 1.0]),
])
def test_cli_ingest_target(tmp_path, store_format, labels, option, expected, classes):
    import json

    source = write_text(tmp_path / "in.svm", labelled_text(labels))
    result = cli("ingest", source, tmp_path / "out.store", "--format", store_format, *option)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["target"] == expected and summary["classes"] == classes
    info = cli("info", tmp_path / "out.store")
    assert info.exit_code == 0, info.output
    described = json.loads(info.output)
    assert described["target"] == expected and described["classes"] == classes
    assert described["format_version"] == 3


@pytest.mark.parametrize("store_format", ["zarr", "parquet"])
@pytest.mark.parametrize("labels, target, fragment", [
    (MULTICLASS, "binary", "target 'binary' needs exactly two label values, found 3"),
    (TWO, "multiclass", "target 'multiclass' needs at least three label values"),
    (REGRESSION, "binary", "target 'binary' needs exactly two label values"),
])
def test_cli_ingest_wrong_target(tmp_path, store_format, labels, target, fragment):
    source = write_text(tmp_path / "in.svm", labelled_text(labels))
    result = cli("ingest", source, tmp_path / "out.store", "--format", store_format,
                 "--target", target)
    assert result.exit_code != 0 and "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and fragment in lines[0], \
        result.output
    assert str(source) in lines[0]
    assert only_input_left(tmp_path)                      # no output directory remains


def test_cli_ingest_unknown_target(tmp_path):
    source = write_text(tmp_path / "in.svm", labelled_text(TWO))
    result = cli("ingest", source, tmp_path / "out.zarr", "--target", "ordinal")
    assert result.exit_code == 2 and "ordinal" in result.output
    assert only_input_left(tmp_path)
