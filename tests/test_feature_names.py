"""Feature names end to end: names files, stores, model files, CLI and report."""

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.api import select
from ultrafs.errors import InputFormatError, StoreFormatError
from ultrafs.model import Model
from ultrafs.store import InMemoryStore, as_store, open_store
from ultrafs.store.feature_names import NAMES_COUNT_ATTR, NAMES_SHA_ATTR
from ultrafs.store.writers.libsvm import ingest_libsvm
from ultrafs.store.writers.parquet_long_writer import write_parquet_long
from ultrafs.store.writers.zarr_writer import write_store

N_FEATURES = 12
NAMES = [f"w{j}" for j in range(1, N_FEATURES + 1)]     # w1 names id 1 (1-based)


try:
    from cli_tools import assert_one_line_error, run
except ImportError:                       # tests/ imported as a package
    from tests.cli_tools import assert_one_line_error, run


def _problem(seed=0, n=300):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    w = np.zeros(N_FEATURES)
    w[[2, 5]] = [2.0, -3.0]
    y = np.where(X @ w + 0.1 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


@pytest.fixture(scope="module")
def svm_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    X, y = _problem()
    path = root / "d.svm"
    with open(path, "w") as f:
        for i in range(len(y)):
            f.write(f"{int(y[i])} " + " ".join(
                f"{j + 1}:{X[i, j]:.4f}" for j in range(N_FEATURES)) + "\n")
    return path


def _write(path, text, mode="w"):
    if isinstance(text, bytes):
        Path(path).write_bytes(text)
    else:
        Path(path).write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------ ingest
@pytest.mark.parametrize("store_format", ["zarr", "parquet"])
def test_ingest_one_name_per_line(tmp_path, svm_file, store_format):
    names = _write(tmp_path / "names.txt", "\n".join(NAMES) + "\n")
    out = tmp_path / "s"
    result = run("ingest", svm_file, out, "--format", store_format,
                 "--feature-names", names)
    assert json.loads(result.output.strip().splitlines()[-1])["feature_names"] == N_FEATURES
    store = open_store(out)
    assert store.id_offset == 1
    assert store.feature_names_of([1, 5, 12]) == ["w1", "w5", "w12"]
    assert store.feature_names_of([0, 13]) == [None, None]      # outside the ids


def test_ingest_id_tab_name_subset_any_order(tmp_path, svm_file):
    names = _write(tmp_path / "names.tsv", "6\tsix\r\n3\tthree\n\n12\ttwelve é\n")
    out = tmp_path / "s.zarr"
    ingest_libsvm(svm_file, out, feature_names=names)
    store = open_store(out)
    assert store.feature_names_of([3, 6, 12, 1]) == ["three", "six", "twelve é", None]
    text = (out / "feature_names.tsv").read_text(encoding="utf-8")
    assert text == "3\tthree\n6\tsix\n12\ttwelve é\n"          # sorted by id
    assert store.attrs[NAMES_COUNT_ATTR] == 3


def test_ingest_plain_names_empty_line_leaves_unnamed(tmp_path, svm_file):
    names = _write(tmp_path / "names.txt", "\ufeffa\n\nc\n")       # BOM, then a gap
    out = tmp_path / "s.zarr"
    ingest_libsvm(svm_file, out, feature_names=names, zero_based=False)
    assert open_store(out).feature_names_of([1, 2, 3, 4]) == ["a", None, "c", None]


@pytest.mark.parametrize("content, fragments", [
    ("3\tth\tree\n", ["line 1", "tab"]),
    ("a\nb\tc\n", ["line 2", "tab"]),
    ("3\tx\n4\ty\n3\tz\n", ["line 3", "id 3", "twice", "line 1"]),
    ("3\tx\n3\ty\n", ["line 2", "id 3", "twice"]),
    ("3\tx\n99\ty\n", ["line 2", "id 99", "out of range", "1..12", "--n-features"]),
    ("0\tzero\n", ["line 1", "id 0", "out of range"]),
    ("x\tname\n", ["line 1", "not a feature id"]),
    ("5\t\n", ["line 1", "empty"]),
    ("\n".join(f"n{k}" for k in range(13)) + "\n", ["line 13", "out of range"]),
    (b"ok\n\xff\xfebad\n", ["line 2", "not UTF-8"]),
])
def test_bad_names_file_one_line_error(tmp_path, svm_file, content, fragments):
    names = _write(tmp_path / "bad.txt", content)
    out = tmp_path / "s.zarr"
    result = run("ingest", svm_file, out, "--feature-names", names, ok=False)
    assert_one_line_error(result, str(names), *fragments)
    assert not out.exists()
    assert not list(tmp_path.glob("s.zarr*"))                 # nothing left behind


def test_names_file_checked_before_the_data_with_n_features(tmp_path, svm_file):
    names = _write(tmp_path / "bad.txt", "1\ta\n40\tb\n")
    with pytest.raises(InputFormatError, match=r"line 2: feature id 40 is out of range"):
        ingest_libsvm(svm_file, tmp_path / "s.zarr", feature_names=names, n_features=20)
    ingest_libsvm(svm_file, tmp_path / "s.zarr", feature_names=names, n_features=40)
    assert open_store(tmp_path / "s.zarr").feature_names_of([40]) == ["b"]


def test_missing_names_file_one_line_error(tmp_path, svm_file):
    result = run("ingest", svm_file, tmp_path / "s.zarr", "--feature-names",
                 tmp_path / "absent.txt", ok=False)
    assert_one_line_error(result, "absent.txt")


# ---------------------------------------------------- stores and integrity
@pytest.mark.parametrize("writer, names_file", [(write_store, "feature_names.tsv"),
                                                (write_parquet_long, "_feature_names.tsv")])
def test_names_round_trip_and_tampering(tmp_path, writer, names_file):
    X, y = _problem()
    names = list(NAMES)
    names[3] = None
    store = writer(tmp_path / "s", X, y, feature_names=names)
    assert store.feature_names_of(range(N_FEATURES)) == names
    assert len(store.attrs[NAMES_SHA_ATTR]) == 64
    reopened = open_store(tmp_path / "s")
    assert reopened.feature_names_of([0, 3, 11]) == ["w1", None, "w12"]
    # a changed name: the file no longer matches its SHA-256
    path = tmp_path / "s" / names_file
    path.write_bytes(path.read_bytes().replace(b"w12", b"w13"))
    with pytest.raises(StoreFormatError, match="does not match its checksum"):
        open_store(tmp_path / "s").feature_names_of([0])
    # a removed file is refused on open
    path.unlink()
    with pytest.raises(StoreFormatError, match="missing feature names file"):
        open_store(tmp_path / "s")


@pytest.mark.parametrize("writer, meta_file", [(write_store, "zarr.json"),
                                               (write_parquet_long, "_ultrafs.json")])
def test_forged_names_digest_is_refused_by_the_metadata_checksum(tmp_path, writer,
                                                                 meta_file):
    X, y = _problem()
    writer(tmp_path / "s", X, y, feature_names=NAMES)
    meta = tmp_path / "s" / meta_file
    doc = json.loads(meta.read_text())
    attrs = doc["attributes"] if "attributes" in doc else doc
    attrs[NAMES_SHA_ATTR] = "0" * 64
    meta.write_text(json.dumps(doc))
    with pytest.raises(StoreFormatError, match="checksum"):
        open_store(tmp_path / "s").feature_names_of([0])


def test_store_without_names(tmp_path):
    X, y = _problem()
    store = write_store(tmp_path / "s.zarr", X, y)
    assert NAMES_SHA_ATTR not in store.attrs
    assert store.feature_names_of([0, 1]) == [None, None]
    assert not (tmp_path / "s.zarr" / "feature_names.tsv").exists()


def test_writer_refuses_bad_names(tmp_path):
    X, y = _problem()
    with pytest.raises(InputFormatError, match=r"feature_names\[2\].*tab"):
        write_store(tmp_path / "a.zarr", X, y, feature_names=["a", "b", "c\td"] + NAMES[3:])
    with pytest.raises(InputFormatError, match="3 names for 12 features"):
        write_store(tmp_path / "b.zarr", X, y, feature_names=["a", "b", "c"])
    assert not list(tmp_path.iterdir())


def test_sparse_id_layout_names_by_id(tmp_path):
    width = 2 ** 23
    X = sp.csr_matrix(([1.0, 2.0, 3.0, 1.0], ([0, 1, 2, 3], [5, 70, 5, width - 1])),
                      shape=(4, width))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    names = _write(tmp_path / "n.tsv", f"{width - 1}\tlast\n5\tfive\n6\tsix\n")
    svm = tmp_path / "x.svm"
    from sklearn.datasets import dump_svmlight_file
    dump_svmlight_file(X, y, str(svm), zero_based=True)
    ingest_libsvm(svm, tmp_path / "s.zarr", zero_based=True, n_features=width,
                  feature_names=names)
    store = open_store(tmp_path / "s.zarr")
    assert store.column_ids is not None
    assert store.feature_names_of(store.feature_ids([0, 2])) == ["five", "last"]
    assert store.feature_names_of([6]) == ["six"]      # named, no entries


def test_large_names_file_streamed(tmp_path):
    """Many names: only the requested ones are kept, across read blocks."""
    n = 200_000
    X = sp.random(10, n, density=1e-4, random_state=0, format="csr")
    y = np.arange(10) % 2
    names = [f"feature_number_{j}" for j in range(n)]
    store = write_parquet_long(tmp_path / "s", X, y, feature_names=names)
    assert (tmp_path / "s" / "_feature_names.tsv").stat().st_size > 2 * 2 ** 20
    wanted = [0, 1, 65_432, 123_457, n - 1]
    assert store.feature_names_of(wanted) == [names[j] for j in wanted]


# ----------------------------------------------------------- other sources
def test_parquet_wide_column_names(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    X, y = _problem()
    table = pa.table({**{name: X[:, j] for j, name in enumerate(NAMES)}, "label": y})
    pq.write_table(table, tmp_path / "t.parquet")
    store = open_store(tmp_path / "t.parquet")
    assert store.feature_names_of([0, 2, 99]) == ["w1", "w3", None]
    model = select(store, B=2, max_iter=2)
    assert model.feature_names == [NAMES[f] for f in model.features]


def test_in_memory_names_and_as_store():
    X, y = _problem()
    store = InMemoryStore(X, y, feature_names=NAMES, id_offset=1)
    assert store.feature_names_of([1, 12, 13]) == ["w1", "w12", None]
    assert as_store(X, y, feature_names=NAMES).feature_names_of([0]) == ["w1"]
    with pytest.raises(InputFormatError, match="line break"):
        InMemoryStore(X, y, feature_names=["a\nb"] + NAMES[1:])
    assert InMemoryStore(X, y).feature_names_of([0]) == [None]


def test_dataframe_names():
    try:
        import pandas as pd
    except ImportError:
        pytest.skip("pandas is not installed (it comes with the test extra)")
    X, y = _problem()
    frame = pd.DataFrame(X, columns=[f"col {j}" for j in range(N_FEATURES)])
    store = InMemoryStore(frame, y)
    assert store.feature_names_of([0, 11]) == ["col 0", "col 11"]
    model = select(frame, y, B=2, max_iter=2)
    assert model.feature_names == [f"col {f}" for f in model.features]
    # integer column labels are not names (as in scikit-learn)
    assert InMemoryStore(pd.DataFrame(X), y).feature_names_of([0]) == [None]


# ----------------------------------------------------------------- models
def test_model_names_linear_square_cross(tmp_path):
    X, y = _problem()
    store = write_store(tmp_path / "s.zarr", X, y, feature_names=NAMES)
    linear = select(store, B=2, max_iter=2)
    assert linear.feature_names == [NAMES[f] for f in linear.features]
    poly = select(store, B=3, max_iter=3, poly=2)
    expected = []
    for fid in poly.features:
        if isinstance(fid, list):
            j, k = fid
            expected.append(f"{NAMES[j]}^2" if j == k else f"{NAMES[j]}*{NAMES[k]}")
        else:
            expected.append(NAMES[fid])
    assert poly.feature_names == expected
    assert any(isinstance(f, list) for f in poly.features)
    path = tmp_path / "m.json"
    poly.save(path)
    loaded = Model.load(path)
    assert loaded.feature_names == expected
    assert loaded.truncated(1).feature_names == expected[:loaded.batches[1]]


def test_model_names_partial_and_absent(tmp_path):
    X, y = _problem()
    names = [None] * N_FEATURES
    names[2] = "two"
    store = InMemoryStore(X, y, feature_names=names)
    model = select(store, B=3, max_iter=3, poly=2)
    for fid, name in zip(model.features, model.feature_names):
        sources = fid if isinstance(fid, list) else [fid]
        assert (name is not None) == all(s == 2 for s in sources)
    plain = select(InMemoryStore(X, y), B=2, max_iter=1)
    assert plain.feature_names is None
    assert "feature_names" not in plain.to_dict()


@pytest.mark.parametrize("names, fragment", [
    (["a"], "must hold 2 names"),
    (["a", 3], "is a int"),
    (["a", "b\tc"], "tab"),
    (["a", ""], "empty"),
    ("ab", "must be a list"),
])
def test_model_file_names_validated(tmp_path, names, fragment):
    model = Model(features=[1, 2], coef=np.array([0.5, -1.0]), intercept=0.0,
                  batches=[0, 2], loss="logistic", classes=[-1.0, 1.0])
    doc = model.to_dict()
    doc["feature_names"] = names
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputFormatError) as info:
        Model.load(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and fragment in message


# ------------------------------------------------------------- CLI, report
def test_cli_select_and_report_show_names(tmp_path, svm_file):
    pytest.importorskip("matplotlib")
    names = _write(tmp_path / "names.txt", "\n".join(NAMES) + "\n")
    store = tmp_path / "s.zarr"
    run("ingest", svm_file, store, "--feature-names", names)
    model_path = tmp_path / "m.json"
    run("select", "--data", store, "--B", 3, "--max-iter", 2, "--poly", 2,
        "--out", model_path)
    doc = json.loads(model_path.read_text())
    assert doc["feature_names"] and all(isinstance(n, str) for n in doc["feature_names"])
    report = tmp_path / "r.html"
    run("report", model_path, "--out", report, "--test", store)
    page = report.read_text(encoding="utf-8")
    assert "<th class=\"text\">name</th>" in page
    for name in doc["feature_names"]:
        assert f">{name}<" in page
