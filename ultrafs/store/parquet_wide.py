"""Column store over a wide Parquet table: one Parquet column per feature.

Any Parquet file (or directory of files sharing one schema) whose columns
are numeric features plus one label column is read directly, without a
conversion step: a block of features is read with Parquet column
projection and turned into CSC, dropping zeros.  Rules (nulls, dtypes,
blocks, multi-file datasets) are documented in ``docs/FORMAT.md``,
section *Parquet layouts*.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ultrafs.errors import InputFormatError, StoreFormatError
from ultrafs.kernels.csc_check import count_nonfinite
from ultrafs.store.base import ColumnBlock, even_block_bounds
from ultrafs.store.targets import check_target, encode_targets, require_labels
from ultrafs.store.path_store import PathStore, gather_columns

__all__ = ["ParquetWideStore", "DEFAULT_LABEL", "DEFAULT_BLOCK_CELLS",
           "wide_value_dtype", "list_parquet_files"]

#: name of the label column unless told otherwise
DEFAULT_LABEL = "label"
#: cells (rows x columns) per block of the default partition (decoding a
#: wide table costs more per cell than a column store: smaller blocks)
DEFAULT_BLOCK_CELLS = 2 ** 20
#: open ParquetFile objects each thread keeps
_READERS_PER_THREAD = 4
#: feature column types that float32 holds exactly
_FLOAT32_EXACT = ("bool", "int8", "uint8", "int16", "uint16", "halffloat", "float")


def list_parquet_files(path: Path) -> list:
    """The data files of a Parquet file or dataset directory.

    A directory contributes its ``*.parquet`` files (not recursing),
    sorted by name; names starting with ``_`` or ``.`` are skipped, as
    Arrow and Spark do.

    Raises
    ------
    StoreFormatError
        If ``path`` does not exist or holds no Parquet file.
    """
    if not path.exists():
        raise StoreFormatError(f"{path}: not a Parquet file or dataset "
                               "(no such file or directory)")
    if path.is_file():
        return [path]
    files = sorted(p for p in path.iterdir()
                   if p.suffix == ".parquet" and p.is_file()
                   and not p.name.startswith(("_", ".")))
    if not files:
        raise StoreFormatError(f"{path}: not a Parquet dataset (no .parquet files)")
    return files


def wide_value_dtype(arrow_types) -> np.dtype:
    """Value dtype of a wide table: float32 when it holds every column exactly.

    Parameters
    ----------
    arrow_types : iterable of pyarrow.DataType
        Types of the feature columns.

    Returns
    -------
    dtype : numpy.dtype
        float32 if every column is bool, (u)int8, (u)int16, float16 or
        float32 (and for a table without feature columns), else float64.
    """
    exact = all(str(t) in _FLOAT32_EXACT for t in arrow_types)
    return np.dtype(np.float32 if exact else np.float64)


def _is_number(arrow_type) -> bool:
    import pyarrow as pa

    return (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)
            or pa.types.is_boolean(arrow_type))


def _pandas_index_columns(schema) -> set:
    """Columns that pandas wrote for a DataFrame index (not features)."""
    metadata = schema.metadata or {}
    try:
        index = json.loads(metadata[b"pandas"]).get("index_columns", [])
    except (KeyError, ValueError, AttributeError):
        return set()
    return {name for name in index if isinstance(name, str)}


class _Labels(NamedTuple):
    """The label column of a wide table, read and typed."""

    targets: np.ndarray
    target_type: str
    classes: np.ndarray
    labels_pm: np.ndarray | None


class _TableMeta:
    """Validated schema, row counts and footers of a wide table."""

    def __init__(self, path: Path, label: str, dtype, target=None):
        import pyarrow.parquet as pq

        self.files = list_parquet_files(path)
        self.footers = []
        schema = None
        for file in self.files:
            try:
                footer = pq.read_metadata(file)
                file_schema = footer.schema.to_arrow_schema()
            except Exception as exc:
                raise StoreFormatError(f"{file}: not a Parquet file ({exc})") from exc
            if schema is None:
                schema = file_schema
            elif not file_schema.remove_metadata().equals(schema.remove_metadata()):
                difference = _schema_difference(schema, file_schema)
                raise InputFormatError(
                    f"{file}: schema differs from {self.files[0]} ({difference})")
            self.footers.append(footer)
        names = schema.names
        if len(set(names)) != len(names):
            duplicate = next(n for n in names if names.count(n) > 1)
            raise InputFormatError(f"{self.files[0]}: column name {duplicate!r} appears twice")
        if label not in names and target != "none":
            shown = ", ".join(repr(n) for n in names[:8]) + (", ..." if len(names) > 8 else "")
            raise InputFormatError(
                f"{self.files[0]}: no label column {label!r} (columns: {shown}); "
                "name the label column with label=...")
        if label in names and target != "none" and not _is_number(schema.field(label).type):
            raise InputFormatError(
                f"{self.files[0]}: label column {label!r} has type "
                f"{schema.field(label).type}, not a number")
        skipped = _pandas_index_columns(schema) | {label}
        features = [field for field in schema if field.name not in skipped]
        for field in features:
            if not _is_number(field.type):
                raise InputFormatError(
                    f"{self.files[0]}: feature column {field.name!r} has type "
                    f"{field.type}, not a number (int, float or bool)")
        self.label = label
        self.feature_names = tuple(field.name for field in features)
        self.feature_types = tuple(field.type for field in features)
        self.file_rows = np.array([f.num_rows for f in self.footers], dtype=np.int64)
        self.row_offsets = np.r_[0, np.cumsum(self.file_rows)].astype(np.int64)
        self.n_samples = int(self.row_offsets[-1])
        if self.n_samples >= 2 ** 31:
            raise InputFormatError(
                f"{path}: {self.n_samples} rows; at most 2**31 - 1 are supported")
        natural = wide_value_dtype(self.feature_types)
        self.dtype = natural if dtype is None else np.dtype(dtype)
        if self.dtype.name not in ("float32", "float64"):
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype}")
        #: whether casting to dtype can round or overflow some column
        self.narrowing = self.dtype.itemsize < natural.itemsize


def _schema_difference(expected, found) -> str:
    for field in expected:
        if field.name not in found.names:
            return f"column {field.name!r} is missing"
        other = found.field(field.name).type
        if other != field.type:
            return f"column {field.name!r} has type {other}, expected {field.type}"
    extra = [n for n in found.names if n not in expected.names]
    if extra:
        return f"extra column {extra[0]!r}"
    return "columns in another order"


class ParquetWideStore(PathStore):
    """A column store over a wide Parquet table (one column per feature).

    Parameters
    ----------
    path : str or os.PathLike
        A Parquet file, or a directory of ``*.parquet`` files with one
        schema (rows in file-name order).
    label : str
        Name of the label column (numeric, no nulls, at least two distinct
        values).  Every other column is a feature, except pandas index
        columns.
    target : None, "auto", "binary", "multiclass" or "continuous"
        Target type of the label column; None detects it
        (:func:`~ultrafs.store.targets.encode_targets`: two values are
        binary, three or more integers multiclass, else continuous).
    dtype : float32, float64 or None
        Value dtype; None picks float32 when every feature column is bool,
        (u)int8, (u)int16, float16 or float32, else float64.
    block_columns : int or None
        Columns per block of the default partition; None gives blocks of
        about :data:`DEFAULT_BLOCK_CELLS` cells (rows x columns).

    Raises
    ------
    StoreFormatError
        If ``path`` does not exist or is not Parquet.
    InputFormatError
        If the label column is missing, not numeric, has nulls, a single
        value or values that do not fit ``target``; if a feature column is
        not numeric; if the files of a directory have different schemas.

    Notes
    -----
    Feature column ``j`` (in schema order, label excluded) is column ``j``
    of X, feature id ``j`` (``id_offset == 0``); :attr:`feature_names`
    maps ids to column names.  Nulls read as 0 (absent entries), zeros are
    dropped, NaN or infinite values raise :class:`InputFormatError` when
    the block holding them is read.  ``nnz`` is not recorded in Parquet:
    the first access to :attr:`nnz` reads every column once.  Pickling
    keeps the path and the parameters only.
    """

    def __init__(self, path, *, label=DEFAULT_LABEL, target=None, dtype=None,
                 block_columns=None):
        path = Path(os.path.abspath(os.fspath(path)))
        dtype_request = None if dtype is None else np.dtype(dtype).name
        if block_columns is not None and int(block_columns) < 1:
            raise ValueError(f"block_columns must be >= 1, got {block_columns}")
        block_columns = None if block_columns is None else int(block_columns)
        self._init_state(path, str(label), dtype_request, block_columns,
                         check_target(target))
        self._meta()                         # validate the schema on open
        self._labels()                       # and the labels

    def _init_state(self, path, label, dtype_request, block_columns,
                    target_request=None) -> None:
        super()._init_state(path)
        self._label = label
        self._dtype_request = dtype_request
        self._block_columns = block_columns
        self._target_request = target_request
        self._local = threading.local()
        self._labels_cache = None
        self._nnz_cache = None

    def _pickle_args(self) -> tuple:
        return (str(self._path), self._label, self._dtype_request, self._block_columns,
                self._target_request)

    def _load_meta(self) -> _TableMeta:
        return _TableMeta(self._path, self._label, self._dtype_request,
                          self._target_request)

    def __repr__(self):
        target = "" if self._target_request is None else f", target={self._target_request!r}"
        return f"ParquetWideStore({str(self._path)!r}, label={self._label!r}{target})"

    # --------------------------------------------------------- attributes
    @property
    def path(self) -> Path:
        """Absolute path of the file or dataset directory."""
        return self._path

    @property
    def label(self) -> str:
        """Name of the label column."""
        return self._label

    @property
    def feature_names(self) -> tuple:
        """Column names of the features: ``feature_names[j]`` is feature id ``j``."""
        return self._meta().feature_names

    def feature_names_of(self, ids) -> list:
        """Column names of feature ids (None outside the table, or for a
        column name that cannot be a feature name: empty, or holding a tab
        or a line break; see :func:`ultrafs.store.feature_names.name_problem`)."""
        from ultrafs.store.feature_names import name_problem

        names = self._meta().feature_names
        out = []
        for fid in np.asarray(ids, dtype=np.int64).reshape(-1).tolist():
            name = names[fid] if 0 <= fid < len(names) else None
            out.append(name if name is not None and name_problem(name) is None else None)
        return out

    @property
    def n_features(self) -> int:
        return len(self._meta().feature_names)

    @property
    def id_offset(self) -> int:
        return 0

    @property
    def nnz(self) -> int:
        """Nonzero feature values (computed on first access: a full pass)."""
        if self._nnz_cache is None:
            bounds = self.default_block_bounds()
            self._nnz_cache = sum(self.read_range(a, b).nnz
                                  for a, b in zip(bounds[:-1], bounds[1:]))
        return self._nnz_cache

    @property
    def target_type(self) -> str:
        return self._labels().target_type

    @property
    def classes(self) -> np.ndarray:
        return self._labels().classes.copy()

    # ------------------------------------------------------------- labels
    def read_targets(self) -> np.ndarray:
        """The label column's values (float64, read-only), shape (n_samples,)."""
        require_labels(self.target_type, str(self._path))
        return self._labels().targets

    def read_labels(self) -> np.ndarray:
        """Labels of a binary table as float64 ±1 (read-only), shape (n_samples,).

        Raises
        ------
        ParameterError
            If the label column is not binary.
        """
        self._require_binary()
        return self._labels().labels_pm

    def _labels(self) -> "_Labels":
        if self._labels_cache is None and self._target_request == "none":
            # data to predict on: the label column (if any) is never read
            self._labels_cache = _Labels(None, "none", np.zeros(0, dtype=np.float64), None)
        if self._labels_cache is None:
            meta = self._meta()
            raw = np.empty(meta.n_samples, dtype=np.float64)
            for k, file in enumerate(meta.files):
                table = self._read_file(k, [meta.label], "the label column")
                column = table.column(0)
                if column.null_count:
                    raise InputFormatError(
                        f"{file}: label column {meta.label!r} has {column.null_count} "
                        "null values")
                raw[meta.row_offsets[k]:meta.row_offsets[k + 1]] = column.to_numpy()
            target_type, classes = encode_targets(
                raw, where=f"{self._path}: label column {meta.label!r}",
                target=self._target_request)
            labels_pm = None
            if target_type == "binary":
                labels_pm = np.where(raw == classes[1], 1.0, -1.0)
                labels_pm.flags.writeable = False
            raw.flags.writeable = False
            self._labels_cache = _Labels(raw, target_type, classes, labels_pm)
        return self._labels_cache

    # ------------------------------------------------------------- blocks
    def default_block_bounds(self) -> np.ndarray:
        size = self._block_columns
        if size is None:
            size = max(1, DEFAULT_BLOCK_CELLS // max(1, self.n_samples))
        return even_block_bounds(self.n_features, size)

    def read_range(self, start, stop) -> ColumnBlock:
        """Read columns ``start:stop`` (Parquet column projection) as CSC.

        Raises
        ------
        IndexError
            If the range is outside ``0:n_features``.
        InputFormatError
            If a value is NaN or infinite (names the column and row).
        StoreFormatError
            If a file cannot be read.
        """
        start, stop = self._check_range(start, stop)
        indptr, indices, data = self._read_csc(np.arange(start, stop))
        return ColumnBlock(start, indptr, indices, data)

    def read_columns(self, columns) -> ColumnBlock:
        """Read arbitrary columns, in the order given (duplicates allowed).

        Columns ``>= n_features`` come back empty; each needed column is
        read once.
        """
        columns, inside, unique = self._unique_columns(columns)
        unique_block = ColumnBlock(-1, *self._read_csc(unique))
        return gather_columns(columns, inside, unique, unique_block)

    def describe(self) -> dict:
        summary = super().describe()
        meta = self._meta()
        summary.update(path=str(self._path), format="parquet-wide", label=meta.label,
                       n_files=len(meta.files))
        return summary

    # ----------------------------------------------------------- internals
    def _reader(self, k: int):
        """This thread's ``ParquetFile`` of data file ``k``.

        Opening one costs a walk over the whole schema (milliseconds for
        thousands of columns), so each thread keeps the last few it used;
        they are never shared between threads.
        """
        import pyarrow.parquet as pq

        readers = getattr(self._local, "readers", None)
        if readers is None:
            readers = self._local.readers = {}
        reader = readers.pop(k, None)
        if reader is None:
            meta = self._meta()
            # pages written with a checksum (write_page_checksum) are verified
            reader = pq.ParquetFile(meta.files[k], metadata=meta.footers[k],
                                    memory_map=True, page_checksum_verification=True)
            if len(readers) >= _READERS_PER_THREAD:
                readers.pop(next(iter(readers))).close()
        readers[k] = reader                      # most recently used last
        return reader

    def _read_file(self, k: int, names, purpose):
        """Columns ``names`` of data file ``k`` as a pyarrow Table."""
        try:
            return self._reader(k).read(columns=list(names), use_threads=False)
        except Exception as exc:
            self._local.readers = None           # reopen on the next read
            raise StoreFormatError(
                f"{self._meta().files[k]}: cannot read {purpose}: {exc}") from exc

    def _read_dense(self, columns) -> np.ndarray:
        """Feature columns as a dense array, shape (len(columns), n_samples)."""
        import pyarrow.compute as pc

        meta = self._meta()
        names = [meta.feature_names[c] for c in columns]
        dense = np.empty((len(names), meta.n_samples), dtype=meta.dtype)
        if not names:
            return dense
        purpose = (f"columns {int(columns[0])}:{int(columns[-1]) + 1}" if len(columns) > 1
                   else f"column {names[0]!r}")
        for k in range(len(meta.files)):
            table = self._read_file(k, names, purpose)
            lo, hi = meta.row_offsets[k], meta.row_offsets[k + 1]
            with np.errstate(over="ignore", invalid="ignore"):
                for j in range(len(names)):
                    column = table.column(j)
                    if column.null_count:
                        column = pc.fill_null(column, False if str(column.type) == "bool" else 0)
                    dense[j, lo:hi] = column.to_numpy()
        return dense

    def _read_csc(self, columns):
        """CSC arrays (indptr, indices, data) of sorted distinct columns."""
        dense = self._read_dense(columns)
        if count_nonfinite(dense.reshape(-1)):
            self._raise_nonfinite(dense, columns)
        mask = dense != 0
        indptr = np.zeros(len(columns) + 1, dtype=np.int64)
        np.cumsum(np.count_nonzero(mask, axis=1), out=indptr[1:])
        indices = np.nonzero(mask)[1].astype(np.int32)
        return indptr, indices, dense[mask]

    def _raise_nonfinite(self, dense, columns):
        meta = self._meta()
        j, row = (int(v[0]) for v in np.nonzero(~np.isfinite(dense)))
        k = int(np.searchsorted(meta.row_offsets, row, side="right")) - 1
        name = meta.feature_names[int(columns[j])]
        why = (f" (or a value outside the {meta.dtype.name} range)"
               if meta.narrowing else "")
        raise InputFormatError(
            f"{meta.files[k]}: feature column {name!r} holds a NaN or infinite "
            f"value{why} at row {row - int(meta.row_offsets[k])}")
