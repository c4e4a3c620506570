"""Target types: detection, format v2 metadata, v1 stores, corrupt targets.

The per-backend behaviour (targets, classes, class indices, ``read_labels``
of every target type) is in the shared contract (``store_contract.py``);
LIBSVM ingest and ``ultrafs ingest --target`` are in ``test_ingest.py``.
This module checks what the Zarr and Parquet-long formats share: the
``target`` / ``classes`` attributes, version 1 stores, and stored targets
that contradict the metadata.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ultrafs.errors import (InputFormatError, ParameterError, StoreFormatError,
                            StoreVersionError)
from ultrafs.store import InMemoryStore, open_store
from ultrafs.store.parquet_long import LABELS_FILE, METADATA_FILE, ParquetLongStore

try:
    from parquet_tools import reseal
except ImportError:                       # tests/ imported as a package
    from tests.parquet_tools import reseal
from ultrafs.store.targets import MAX_CLASSES, TARGET_TYPES, class_indices, encode_targets
from ultrafs.store.writers.parquet_long_writer import write_parquet_long
from ultrafs.store.writers.zarr_writer import write_store
from ultrafs.store.zarr_store import ZarrStore

try:
    from store_contract import TARGET_KINDS, make_matrix, make_targets
except ImportError:                       # tests/ imported as a package
    from tests.store_contract import TARGET_KINDS, make_matrix, make_targets


# ------------------------------------------------------------ detection
@pytest.mark.parametrize("y, target, expected, classes", [
    ([3.0, 7.5, 3.0], None, "binary", [3.0, 7.5]),
    ([0, 1, 1], "auto", "binary", [0.0, 1.0]),
    ([True, False, True], None, "binary", [0.0, 1.0]),
    ([0.25, 0.5, 0.5], "binary", "binary", [0.25, 0.5]),
    ([1, 2, 3, 2], None, "multiclass", [1.0, 2.0, 3.0]),
    ([7, -1, 2, 2], None, "multiclass", [-1.0, 2.0, 7.0]),
    (np.arange(MAX_CLASSES) * 3, None, "multiclass", np.arange(MAX_CLASSES) * 3.0),
    ([0.5, 1.5, 2.5], "multiclass", "multiclass", [0.5, 1.5, 2.5]),
    ([1.0, 2.0, 3.5], None, "continuous", []),
    ([0.5, 1.25, 3.0], None, "continuous", []),
    ([1, 2, 3], "continuous", "continuous", []),
    ([0, 1], "continuous", "continuous", []),
    (np.arange(MAX_CLASSES + 1), "continuous", "continuous", []),
])
def test_encode_targets(y, target, expected, classes):
    y_before = np.array(y, copy=True)
    target_type, found = encode_targets(y, where="y", target=target)
    assert target_type == expected
    assert found.dtype == np.float64 and found.shape == (len(classes),)
    np.testing.assert_array_equal(found, classes)
    np.testing.assert_array_equal(y, y_before)


@pytest.mark.parametrize("y, target, message", [
    ([], None, "y: no samples"),
    (["a", "b"], None, "y: labels must be numeric"),
    ([0.0, np.nan], None, "y: labels contain NaN or infinite values"),
    ([0.0, np.inf, 1.0], "continuous", "NaN or infinite"),
    ([4, 4, 4], None, "y: labels take a single value (4); at least two distinct"),
    ([4.5], "continuous", "single value (4.5)"),
    ([1, 2, 3], "binary", "y: target 'binary' needs exactly two label values, found 3 (1, 2, 3)"),
    (np.arange(9), "binary", "found 9 (0, 1, 2, 3, 4, ...)"),
    ([1, 2], "multiclass", "y: target 'multiclass' needs at least three label values, "
                           "found 2 (1, 2); use target 'binary'"),
    (np.arange(MAX_CLASSES + 1), None,
     f"y: labels take {MAX_CLASSES + 1} distinct integer values, more than the "
     f"{MAX_CLASSES} classes a multiclass target may have; pass target='continuous'"),
    (np.arange(MAX_CLASSES + 1) / 2, "multiclass", "pass target='continuous'"),
])
def test_encode_targets_errors(y, target, message):
    with pytest.raises(InputFormatError) as info:
        encode_targets(y, where="y", target=target)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("target", ["ordinal", "Binary", 2, ""])
def test_unknown_target_type(target):
    with pytest.raises(ParameterError, match="target must be one of auto, binary, "
                                             "multiclass, continuous"):
        encode_targets([0, 1], target=target)


def test_class_indices():
    classes = np.array([-1.0, 2.0, 7.0])
    np.testing.assert_array_equal(class_indices([7, -1, 2, 3, np.nan, 8, -5], classes),
                                  [2, 0, 1, -1, -1, -1, -1])
    np.testing.assert_array_equal(class_indices([1.0, 2.0], np.zeros(0)), [-1, -1])
    assert TARGET_TYPES == ("binary", "multiclass", "continuous", "none")


# ------------------------------------------------- the two written formats
def zarr_attrs(path: Path) -> dict:
    return json.loads((path / "zarr.json").read_text())["attributes"]


def set_zarr_attrs(path: Path, attrs: dict) -> None:
    """Write the attributes as a (faulty) writer would: with their checksum."""
    from ultrafs.store.metadata import metadata_checksum
    from ultrafs.store.zarr_store import array_metadata_parts

    meta = json.loads((path / "zarr.json").read_text())
    attrs = dict(attrs)
    attrs["metadata_checksum"] = metadata_checksum(attrs, array_metadata_parts(path))
    meta["attributes"] = attrs
    (path / "zarr.json").write_text(json.dumps(meta))


def set_zarr_targets(path: Path, values) -> None:
    import zarr

    zarr.open_group(str(path), mode="r+")["labels"][:] = values


def long_attrs(path: Path) -> dict:
    return json.loads((path / METADATA_FILE).read_text())


def set_long_attrs(path: Path, attrs: dict) -> None:
    """Write the attributes with fresh checksums (as a faulty writer would)."""
    reseal(path, attrs)


def set_long_targets(path: Path, values) -> None:
    pq.write_table(pa.table({"label": np.asarray(values, dtype=np.float64)}),
                   path / LABELS_FILE)
    reseal(path)


#: name -> (writer, reader, attribute reader, attribute writer, target writer)
FORMATS = {
    "zarr": (lambda path, X, y, **kw: write_store(path, X, y, chunk_size=16, **kw),
             ZarrStore, zarr_attrs, set_zarr_attrs, set_zarr_targets),
    "parquet-long": (lambda path, X, y, **kw: write_parquet_long(
        path, X, y, chunk_size=16, block_nnz=40, file_nnz=60, **kw),
        ParquetLongStore, long_attrs, set_long_attrs, set_long_targets),
}


def subdir(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def written(tmp_path, fmt, target_kind="binary", kind="valued", dtype=np.float32):
    """A store of ``fmt`` holding targets of ``target_kind``; (store, X, y)."""
    writer = FORMATS[fmt][0]
    X, _ = make_matrix(kind, dtype)
    y = make_targets(target_kind, X.shape[0])
    store = writer(tmp_path / f"s.{fmt}", X, y, dtype=dtype, command="test",
                   target=TARGET_KINDS[target_kind][1])
    return store, X, y


def edit(fmt, path, changes=None, drop=()):
    """Update (and drop) attributes of the store at ``path``."""
    _, _, read, write, _ = FORMATS[fmt]
    attrs = read(path)
    attrs.update(changes or {})
    for name in drop:
        attrs.pop(name, None)
    write(path, attrs)


def snapshot(store) -> dict:
    """Everything a reader serves, for comparing two opens of a store."""
    bounds = store.default_block_bounds()
    blocks = [store.read_range(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    columns = store.read_columns([store.n_features - 1, 0, 3, 3, store.n_features + 2])
    return {"shape": (store.n_samples, store.n_features, store.nnz, store.dtype,
                      store.id_offset, store.binary),
            "bounds": bounds.tolist(),
            "blocks": [(b.indptr.tolist(), b.indices.tolist(),
                        None if b.data is None else b.data.tobytes()) for b in blocks],
            "columns": (columns.indptr.tolist(), columns.indices.tolist(),
                        columns.data.tobytes()),
            "target_type": store.target_type,
            "classes": store.classes.tolist(),
            "targets": store.read_targets().tobytes(),
            "labels": store.read_labels().tobytes(),
            "indices": store.read_class_indices().tolist()}


@pytest.mark.parametrize("fmt", FORMATS)
def test_written_metadata_is_v3(tmp_path, fmt):
    for target_kind in TARGET_KINDS:
        store, _, y = written(subdir(tmp_path, target_kind), fmt, target_kind)
        attrs = FORMATS[fmt][2](store.path)
        _, _, expected = TARGET_KINDS[target_kind]
        assert attrs["format_version"] == 3 and attrs["target"] == expected
        if expected == "continuous":
            assert attrs["classes"] is None
        else:
            assert attrs["classes"] == sorted(set(y.tolist()))
        # the labels stay stored as the raw values
        np.testing.assert_array_equal(type(store)(store.path).read_targets(), y)


# -------------------------------------------------------------- version 1
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind, dtype", [("valued", np.float32), ("binary", np.float64),
                                         ("no_entries", np.float32)])
def test_v1_stores_still_open_with_identical_data(tmp_path, fmt, kind, dtype):
    store, X, y = written(tmp_path, fmt, "binary", kind, dtype)
    reader = FORMATS[fmt][1]
    before = snapshot(reader(store.path))
    described = reader(store.path).describe()
    # what format version 1 wrote: the same attributes without "target"
    edit(fmt, store.path, {"format_version": 1}, drop=["target"])
    old = reader(store.path)
    assert old.format_version == 1 and old.target_type == "binary"
    assert snapshot(old) == before
    assert type(open_store(store.path)) is reader
    summary = old.describe()
    assert summary.pop("format_version") == 1 and described.pop("format_version") == 3
    assert summary == described and summary["target"] == "binary"
    np.testing.assert_array_equal(old.read_labels(), np.where(y == 7.5, 1.0, -1.0))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("changes, fragment", [
    ({"classes": [-1.0, 2.0, 7.0]}, "classes=[-1.0, 2.0, 7.0] is not two sorted labels"),
    ({"classes": None}, "classes=None is not two sorted labels"),
    ({"classes": [7.5, 3.0]}, "not two sorted labels"),
])
def test_v1_stores_are_binary(tmp_path, fmt, changes, fragment):
    store, _, _ = written(tmp_path, fmt)
    edit(fmt, store.path, dict(changes, format_version=1), drop=["target"])
    with pytest.raises(StoreFormatError, match=fragment.replace("[", r"\[")) as info:
        FORMATS[fmt][1](store.path)
    assert str(store.path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("fmt", FORMATS)
def test_v1_store_with_a_label_outside_its_classes(tmp_path, fmt):
    store, _, y = written(tmp_path, fmt)
    edit(fmt, store.path, {"format_version": 1}, drop=["target"])
    bad = y.copy()
    bad[5] = 4.0
    FORMATS[fmt][4](store.path, bad)
    with pytest.raises(StoreFormatError, match=r"corrupt labels \(row 5 holds 4.0, not one "
                                               r"of the classes \[3.0, 7.5\]\)"):
        FORMATS[fmt][1](store.path).read_labels()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("version", [4, 0, "2", None, 2.0])
def test_other_versions_are_refused(tmp_path, fmt, version):
    store, _, _ = written(tmp_path, fmt, "multiclass-3")
    edit(fmt, store.path, {"format_version": version})
    with pytest.raises(StoreVersionError) as info:
        FORMATS[fmt][1](store.path)
    message = str(info.value)
    assert message.startswith(f"{store.path}: store format version {version!r}")
    assert message.endswith("reads versions 1, 2 and 3") and "\n" not in message
    with pytest.raises(StoreVersionError):
        open_store(store.path)


# ------------------------------------------------- inconsistent v2 metadata
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("target_kind, changes, drop, fragment", [
    ("binary", {}, ["target"], "missing attributes target"),
    ("binary", {"target": "ordinal"},
     [], "target='ordinal' is not one of binary, multiclass, continuous"),
    ("binary", {"target": None}, [], "target=None is not one of"),
    ("binary", {"target": "multiclass"}, [],
     "classes=[3.0, 7.5] is not three or more sorted distinct labels (target 'multiclass')"),
    ("binary", {"target": "continuous"}, [], "classes=[3.0, 7.5] of a continuous target is "
                                             "not null"),
    ("binary", {"classes": None}, [], "classes=None is not two sorted labels"),
    ("binary", {"classes": [7.5, 3.0]}, [], "is not two sorted labels"),
    ("binary", {"classes": [3.0, 3.0]}, [], "is not two sorted labels"),
    ("binary", {"classes": [3.0, 5.0, 7.5]}, [], "is not two sorted labels"),
    ("binary", {"classes": [3.0, "7.5"]}, [], "is not two sorted labels"),
    ("multiclass-3", {"target": "binary"}, [], "classes=[-1.0, 2.0, 7.0] is not two sorted"),
    ("multiclass-3", {"classes": [-1.0, 7.0, 2.0]}, [], "not three or more sorted distinct"),
    ("multiclass-3", {"classes": [-1.0, 2.0, 2.0, 7.0]}, [], "sorted distinct"),
    ("multiclass-3", {"classes": [-1.0, 2.0]}, [], "sorted distinct"),
    ("multiclass-3", {"classes": ["a", 2.0, 7.0]}, [], "sorted distinct"),
    ("multiclass-3", {"classes": 3}, [], "sorted distinct"),
    ("multiclass-3", {"classes": None}, [], "sorted distinct"),
    ("multiclass-3", {"target": "continuous"}, [], "of a continuous target is not null"),
    ("continuous", {"classes": []}, [], "classes=[] of a continuous target is not null"),
    ("continuous", {"classes": [0.0, 1.0]}, [], "of a continuous target is not null"),
    ("continuous", {"target": "binary"}, [], "classes=None is not two sorted labels"),
    ("continuous", {"target": "multiclass"}, [], "classes=None is not three or more"),
    ("continuous", {}, ["classes"], "missing attributes classes"),
])
def test_inconsistent_target_and_classes_are_refused(tmp_path, fmt, target_kind, changes,
                                                     drop, fragment):
    store, _, _ = written(tmp_path, fmt, target_kind)
    edit(fmt, store.path, changes, drop)
    with pytest.raises(StoreFormatError) as info:
        FORMATS[fmt][1](store.path)
    message = str(info.value)
    assert message.startswith(f"{store.path}: ") and fragment in message, message
    assert "\n" not in message


def test_boolean_classes_follow_each_format(tmp_path):
    """As before v2: JSON booleans pass as numbers in Zarr, never in Parquet-long."""
    for fmt, accepted in (("zarr", True), ("parquet-long", False)):
        store, _, _ = written(subdir(tmp_path, fmt), fmt, "binary-explicit")
        edit(fmt, store.path, {"classes": [-1, True]})
        if accepted:
            np.testing.assert_array_equal(FORMATS[fmt][1](store.path).classes, [-1.0, 1.0])
        else:
            with pytest.raises(StoreFormatError, match="classes"):
                FORMATS[fmt][1](store.path)


# ------------------------------------------------ targets against metadata
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("target_kind, row, value, fragment", [
    ("multiclass-3", 4, 3.0, "row 4 holds 3.0, not one of the classes [-1.0, 2.0, 7.0]"),
    ("multiclass-5", 0, 2.0, "row 0 holds 2.0, not one of the classes [-3.0, 0.0, 1.0, 4.0, "
                             "10.0]"),
    ("multiclass-3", 7, np.nan, "row 7 holds nan, not one of the classes [-1.0, 2.0, 7.0]"),
    ("binary", 2, 5.0, "row 2 holds 5.0, not one of the classes [3.0, 7.5]"),
    ("continuous", 9, np.nan, "row 9 holds nan, not a finite target value"),
    ("continuous", 1, np.inf, "row 1 holds inf, not a finite target value"),
])
def test_stored_target_outside_the_metadata_is_corrupt(tmp_path, fmt, target_kind, row,
                                                       value, fragment):
    store, X, y = written(tmp_path, fmt, target_kind)
    bad = y.copy()
    bad[row] = value
    FORMATS[fmt][4](store.path, bad)
    reopened = FORMATS[fmt][1](store.path)               # opening reads no targets
    readers = [reopened.read_targets]
    readers.append(reopened.read_labels if target_kind == "binary"
                   else reopened.read_class_indices)
    for read in readers if target_kind != "continuous" else readers[:1]:
        with pytest.raises(StoreFormatError) as info:
            read()
        message = str(info.value)
        assert message == f"{store.path}: corrupt labels ({fragment})", message
    assert reopened.read_range(0, X.shape[1]).nnz == X.nnz  # the matrix still reads


@pytest.mark.parametrize("fmt", FORMATS)
def test_classes_recorded_without_a_stored_class(tmp_path, fmt):
    """A multiclass store whose classes omit a stored value is corrupt."""
    store, _, _ = written(tmp_path, fmt, "multiclass-3")
    edit(fmt, store.path, {"classes": [-1.0, 2.0, 5.0]})
    with pytest.raises(StoreFormatError, match=r"holds 7.0, not one of the classes "
                                               r"\[-1.0, 2.0, 5.0\]"):
        FORMATS[fmt][1](store.path).read_targets()


def test_missing_target_chunk_of_a_continuous_zarr_store(tmp_path):
    store, _, _ = written(tmp_path, "zarr", "continuous")
    (store.path / "labels" / "c" / "1").unlink()
    with pytest.raises(StoreFormatError, match="row 16 holds nan, not a finite target value"):
        ZarrStore(store.path).read_targets()


@pytest.mark.parametrize("fmt", FORMATS)
def test_writers_refuse_targets_that_do_not_fit(tmp_path, fmt):
    writer = FORMATS[fmt][0]
    X, _ = make_matrix("valued", np.float32)
    y = make_targets("multiclass-3", X.shape[0])
    with pytest.raises(InputFormatError, match="y: target 'binary' needs exactly two"):
        writer(tmp_path / "out", X, y, target="binary")
    with pytest.raises(ParameterError, match="target must be one of"):
        writer(tmp_path / "out", X, y, target="ordinal")
    with pytest.raises(InputFormatError, match="labels take a single value"):
        writer(tmp_path / "out", X, np.full(X.shape[0], 2.0), target="continuous")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------- in memory
def test_in_memory_store_targets():
    X, _ = make_matrix("valued", np.float64)
    y = make_targets("multiclass-5", X.shape[0])
    store = InMemoryStore(X, y)
    assert store.target_type == "multiclass"
    np.testing.assert_array_equal(store.read_targets(), y)
    assert not store.read_targets().flags.writeable
    y[0] = 99.0                                          # the store holds a copy
    assert store.read_targets()[0] == -3.0
    with pytest.raises(ParameterError, match="InMemoryStore: read_labels.*target is "
                                             "multiclass"):
        store.read_labels()
    with pytest.raises(InputFormatError, match="y: target 'binary'"):
        InMemoryStore(X, make_targets("multiclass-3", X.shape[0]), target="binary")


def test_from_csc_arrays_keeps_the_binary_call_and_takes_targets():
    X, _ = make_matrix("valued", np.float64)
    n = X.shape[0]
    # the call of ultrafs.sklearn.matrices.unlabelled_store
    store = InMemoryStore.from_csc_arrays(X.indptr, X.indices, X.data, n, np.ones(n),
                                          np.array([0.0, 1.0]), id_offset=1)
    assert store.target_type == "binary" and store.id_offset == 1
    np.testing.assert_array_equal(store.read_labels(), np.ones(n))
    np.testing.assert_array_equal(store.read_targets(), np.ones(n))
    assert store.describe()["classes"] == [0.0, 1.0]
    y_pm = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)
    store = InMemoryStore.from_csc_arrays(X.indptr, X.indices, X.data, n, y_pm, [3.0, 7.5])
    np.testing.assert_array_equal(store.read_targets(), np.where(y_pm > 0, 7.5, 3.0))
    assert store.read_labels() is not None
    np.testing.assert_array_equal(store.read_labels(), y_pm)
    y = make_targets("multiclass-3", n)
    store = InMemoryStore.from_csc_arrays(X.indptr, X.indices, X.data, n, None,
                                          [-1.0, 2.0, 7.0], targets=y,
                                          target_type="multiclass")
    assert store.target_type == "multiclass"
    np.testing.assert_array_equal(np.array([-1.0, 2.0, 7.0])[store.read_class_indices()], y)
    y = make_targets("continuous", n)
    store = InMemoryStore.from_csc_arrays(X.indptr, X.indices, X.data, n, None, [],
                                          targets=y, target_type="continuous")
    assert store.classes.shape == (0,) and store.describe()["classes"] == []
    with pytest.raises(ParameterError, match="targets="):
        InMemoryStore.from_csc_arrays(X.indptr, X.indices, X.data, n, None, [-1, 2, 7],
                                      target_type="multiclass")
    with pytest.raises(ParameterError, match="target_type must be one of"):
        InMemoryStore.from_csc_arrays(X.indptr, X.indices, X.data, n, None, [],
                                      targets=y, target_type="ordinal")


# ------------------------------------------------- data without labels
def _unlabelled_cli(*args):
    from click.testing import CliRunner

    from ultrafs.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], prog_name="ultrafs")


@pytest.mark.parametrize("store_format", ["zarr", "parquet"])
def test_data_without_labels_is_predicted_on_and_nothing_else(tmp_path, store_format):
    """``--target none``: one label value (or any) is kept, never read."""
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    X = sp.random(60, 12, density=0.3, random_state=1, format="csr")
    y = np.where(X[:, 0].toarray().ravel() > 0, 1, -1)
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"), zero_based=False)
    dump_svmlight_file(X[:20], np.zeros(20), str(tmp_path / "new.svm"), zero_based=False)
    assert _unlabelled_cli("ingest", tmp_path / "train.svm", tmp_path / "train.store",
                           "--format", store_format).exit_code == 0
    refused = _unlabelled_cli("ingest", tmp_path / "new.svm", tmp_path / "x.store")
    assert refused.exit_code == 1 and "--target none" in refused.output
    done = _unlabelled_cli("ingest", tmp_path / "new.svm", tmp_path / "new.store",
                           "--target", "none", "--format", store_format)
    assert done.exit_code == 0, done.output
    store = open_store(tmp_path / "new.store")
    assert store.target_type == "none" and len(store.classes) == 0
    with pytest.raises(ParameterError, match="has no labels"):
        store.read_targets()
    fitted = _unlabelled_cli("select", "--data", tmp_path / "train.store", "--B", 2,
                             "--max-iter", 2, "--out", tmp_path / "m.json")
    assert fitted.exit_code == 0, fitted.output
    predicted = _unlabelled_cli("predict", "--model", tmp_path / "m.json", "--data",
                                tmp_path / "new.store", "--out", tmp_path / "p.tsv")
    assert predicted.exit_code == 0, predicted.output
    rows = (tmp_path / "p.tsv").read_text().strip().splitlines()
    reference = _unlabelled_cli("predict", "--model", tmp_path / "m.json", "--data",
                                tmp_path / "train.store", "--out", tmp_path / "q.tsv")
    assert reference.exit_code == 0
    assert rows[1:] == (tmp_path / "q.tsv").read_text().strip().splitlines()[1:21]
    for argv in (["select", "--data", tmp_path / "new.store", "--out", tmp_path / "z.json"],
                 ["evaluate", "--model", tmp_path / "m.json", "--data",
                  tmp_path / "new.store"]):
        result = _unlabelled_cli(*argv)
        assert result.exit_code == 1 and "no labels" in result.output, result.output
        assert "Traceback" not in result.output
    assert not (tmp_path / "z.json").exists()


def test_wide_table_without_a_label_column_is_predicted_on(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    X = rng.random((80, 5))
    y = np.where(X[:, 0] > 0.5, 1, 0)
    columns = {f"f{j}": X[:, j] for j in range(5)}
    pq.write_table(pa.table({**columns, "label": y}), tmp_path / "train.parquet")
    pq.write_table(pa.table({name: c[:10] for name, c in columns.items()}),
                   tmp_path / "new.parquet")
    assert _unlabelled_cli("select", "--data", tmp_path / "train.parquet", "--B", 2,
                           "--max-iter", 2, "--out", tmp_path / "m.json").exit_code == 0
    for data, out in (("new.parquet", "p.tsv"), ("train.parquet", "q.tsv")):
        done = _unlabelled_cli("predict", "--model", tmp_path / "m.json", "--data",
                               tmp_path / data, "--out", tmp_path / out)
        assert done.exit_code == 0, done.output
    new = (tmp_path / "p.tsv").read_text().splitlines()
    assert new == (tmp_path / "q.tsv").read_text().splitlines()[:11]
    refused = _unlabelled_cli("evaluate", "--model", tmp_path / "m.json", "--data",
                              tmp_path / "new.parquet")
    assert refused.exit_code == 1 and "no label column" in refused.output
    store = open_store(tmp_path / "new.parquet", labels=False)
    assert store.target_type == "none"
    with pytest.raises(ParameterError, match="no labels"):
        store.read_targets()
