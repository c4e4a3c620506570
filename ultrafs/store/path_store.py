"""What the on-disk stores share: a path, lazy metadata, pickling by path.

:class:`PathStore` holds the path, reads the backend's metadata once,
on first use, under a lock, and pickles as its path (plus whatever
parameters :meth:`PathStore._pickle_args` names); :class:`WrittenStore`
adds everything served from the metadata an ultrafs writer recorded
(:class:`~ultrafs.store.metadata.RecordedMeta`): shape, dtype, targets,
blocks, and the checks of every read.  A backend supplies how to load its
metadata, its labels and its blocks.
"""

from __future__ import annotations

import abc
import copyreg
import os
import threading
from pathlib import Path

import numpy as np

from ultrafs.errors import StoreFormatError
from ultrafs.kernels.csc_check import CSC_OK, check_csc_block, count_nonfinite
from ultrafs.kernels.spans import gather_spans
from ultrafs.store.base import ColumnBlock, ColumnStore
from ultrafs.store.targets import class_indices, require_labels
from ultrafs.store.work_buffers import thread_work

__all__ = ["PathStore", "WrittenStore", "gather_columns", "check_regular_files"]


def is_url(location) -> bool:
    """True for an fsspec URL such as ``s3://bucket/x.zarr`` or ``file:///x``."""
    return isinstance(location, str) and "://" in location


def location_of(path):
    """An absolute local Path, or the URL string unchanged."""
    if is_url(path):
        return path
    return Path(os.path.abspath(os.fspath(path)))


def check_regular_files(path: Path) -> None:
    """Refuse a store holding anything but folders and regular files.

    A FIFO, socket or device inside a store would hang or misbehave when a
    chunk is read; symbolic links could point outside it.  One ``scandir``
    walk: a few milliseconds for thousands of chunk files.
    """
    stack = [path]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise StoreFormatError(f"{path}: cannot list {folder}: {exc.strerror}") from None
        for entry in entries:
            if entry.is_symlink():
                raise StoreFormatError(
                    f"{path}: {entry.path} is a symbolic link; a store holds only "
                    "folders and regular files")
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif not entry.is_file(follow_symlinks=False):
                raise StoreFormatError(
                    f"{path}: {entry.path} is not a regular file (a FIFO, socket or "
                    "device); a store holds only folders and regular files")



class PathStore(ColumnStore):
    """A column store at a path, whose metadata is read once, lazily.

    Parameters
    ----------
    path : str or os.PathLike
        The store; the metadata is read (and validated) on construction.

    Notes
    -----
    Subclasses implement :meth:`_load_meta` (whose result has at least
    ``n_samples`` and ``dtype``); those with more state or
    parameters than the path extend :meth:`_init_state` and
    :meth:`_pickle_args`.  A pickle holds the class and
    :meth:`_pickle_args` only, which unpickling hands to
    :meth:`_init_state`: the copy reads its metadata on first use.
    :meth:`_meta` is thread-safe: the metadata is loaded once however
    many threads ask first.
    """

    def __init__(self, path):
        self._init_state(location_of(path))
        self._meta()                         # validate on open

    def _init_state(self, path) -> None:
        """Set the state of a store that has read nothing yet."""
        self._path = path if is_url(path) else Path(path)
        self._lock = threading.Lock()
        self._meta_cache = None

    def _pickle_args(self) -> tuple:
        """Arguments of :meth:`_init_state` that rebuild this store."""
        return (str(self._path),)

    def __reduce__(self):
        return (copyreg.__newobj__, (type(self),), self._pickle_args())

    def __setstate__(self, args) -> None:
        self._init_state(*args)

    @abc.abstractmethod
    def _load_meta(self):
        """Read and validate the metadata (called once, under the lock)."""

    def _meta(self):
        """The metadata, loaded on first use."""
        meta = self._meta_cache
        if meta is None:
            with self._lock:
                if self._meta_cache is None:
                    self._meta_cache = self._load_meta()
                meta = self._meta_cache
        return meta

    def __repr__(self):
        return f"{type(self).__name__}({str(self._path)!r})"

    @property
    def path(self) -> Path:
        """Absolute path of the store."""
        return self._path

    @property
    def n_samples(self) -> int:
        return self._meta().n_samples

    @property
    def dtype(self) -> np.dtype:
        return self._meta().dtype

    def to_csc(self):
        """The whole matrix as a scipy CSC matrix (reads everything)."""
        import scipy.sparse as sp

        block = self.read_range(0, self.n_features)
        return sp.csc_matrix((block.values(self.dtype), block.indices, block.indptr),
                             shape=(self.n_samples, self.n_features))

    def _check_range(self, start, stop) -> tuple:
        """``(start, stop)`` as ints; IndexError outside ``0:n_features``."""
        n_features = self.n_features
        start, stop = int(start), int(stop)
        if not 0 <= start <= stop <= n_features:
            raise IndexError(f"column range {start}:{stop} outside 0:{n_features}")
        return start, stop

    def _unique_columns(self, columns) -> tuple:
        """Checked request of :meth:`read_columns`.

        Returns
        -------
        columns : ndarray of int64
            The request, flattened.
        inside : ndarray of bool
            ``columns < n_features``.
        unique : ndarray of int64
            ``np.unique(columns[inside])``.
        """
        columns = np.asarray(columns, dtype=np.int64).reshape(-1)
        if columns.size and columns.min() < 0:
            raise ValueError("negative column number")
        inside = columns < self.n_features
        return columns, inside, np.unique(columns[inside])


class WrittenStore(PathStore):
    """A :class:`PathStore` in an ultrafs format (Zarr or Parquet-long).

    Every attribute comes from the metadata recorded by the writer,
    a :class:`~ultrafs.store.metadata.RecordedMeta` returned by
    :meth:`_load_meta`.  Subclasses supply :meth:`_read_raw_label_column`
    and the reads; :meth:`_check_block` reports a corrupt block with the
    subclass's :attr:`_CSC_PROBLEMS` and :attr:`_NONFINITE_PROBLEM`.
    """

    #: problem named for each failure code of ``check_csc_block``
    _CSC_PROBLEMS = {1: "inconsistent column offsets",
                     2: "row numbers out of range",
                     3: "row numbers not increasing within a column"}
    #: problem named for NaN or infinite values
    _NONFINITE_PROBLEM = "NaN or infinite values"
    #: the feature names file inside the store (set by each format)
    _NAMES_FILE: str = ""

    def _init_state(self, path) -> None:
        super()._init_state(path)
        self._targets = None
        self._labels_pm = None

    # --------------------------------------------------------- attributes
    @property
    def n_features(self) -> int:
        return self._meta().n_features

    @property
    def nnz(self) -> int:
        return self._meta().nnz

    @property
    def id_offset(self) -> int:
        return self._meta().id_offset

    @property
    def column_ids(self):
        return self._meta().column_ids

    @property
    def id_space(self) -> int:
        return int(self._meta().id_space)

    @property
    def fingerprint(self):
        """SHA-256 of the content recorded at writing (format 3), else None."""
        return self._meta().fingerprint

    @property
    def binary(self) -> bool:
        """True when no values are stored (every value is 1)."""
        return self._meta().binary

    @property
    def attrs(self) -> dict:
        """A copy of the recorded metadata."""
        return dict(self._meta().attrs)

    @property
    def format_version(self) -> int:
        """The store's format version (1, 2 or 3)."""
        return self._meta().format_version

    @property
    def target_type(self) -> str:
        return self._meta().target_type

    @property
    def classes(self) -> np.ndarray:
        return self._meta().classes.copy()

    # -------------------------------------------------------------- names
    @property
    def has_feature_names(self) -> bool:
        """Whether the store records feature names (read only when asked for)."""
        from ultrafs.store.feature_names import NAMES_SHA_ATTR

        return NAMES_SHA_ATTR in self._meta().attrs

    def feature_names_of(self, ids) -> list:
        """Names of feature ids (None where unnamed), read from the names file.

        The file is streamed and checked against its recorded SHA-256 at
        every call; only the requested names are kept in memory.

        Raises
        ------
        StoreFormatError
            If the names file is missing or does not match its checksum.
        """
        from ultrafs.store.feature_names import (NAMES_COUNT_ATTR, NAMES_SHA_ATTR,
                                                 lookup_names)

        ids = [int(i) for i in np.asarray(ids, dtype=np.int64).reshape(-1)]
        attrs = self._meta().attrs
        if NAMES_SHA_ATTR not in attrs or not ids:
            return [None] * len(ids)
        found = lookup_names(self._open_names_file, ids, sha256=attrs[NAMES_SHA_ATTR],
                             count=attrs[NAMES_COUNT_ATTR], where=str(self._path),
                             file_name=self._NAMES_FILE)
        return [found.get(i) for i in ids]

    def _open_names_file(self):
        """The names file, opened for binary reading (local path or URL)."""
        if is_url(self._path):
            from ultrafs.store.object_store import filesystem

            fs, root = filesystem(str(self._path), getattr(self, "storage_options", None))
            return fs.open(f"{root.rstrip('/')}/{self._NAMES_FILE}", "rb")
        return open(self._path / self._NAMES_FILE, "rb")

    # ------------------------------------------------------------ targets
    def read_targets(self) -> np.ndarray:
        """The stored target values (float64, read-only), shape (n_samples,).

        Raises
        ------
        StoreFormatError
            If a value is not one of :attr:`classes` (classification), or
            not finite (continuous): a missing chunk reads as NaN.
        ParameterError
            If the store has no labels (target ``"none"``).
        """
        require_labels(self.target_type, str(self._path))
        if self._targets is None:
            meta = self._meta()
            raw = np.array(self._read_raw_label_column(meta), dtype=np.float64)
            if meta.target_type == "continuous":
                bad = ~np.isfinite(raw)
                expected = "not a finite target value"
            else:
                bad = class_indices(raw, meta.classes) < 0
                expected = f"not one of the classes {_shown_classes(meta.classes)}"
            if np.any(bad):
                row = int(np.flatnonzero(bad)[0])
                raise StoreFormatError(
                    f"{self._path}: corrupt labels (row {row} holds {float(raw[row])!r}, "
                    f"{expected})")
            raw.flags.writeable = False
            self._targets = raw
        return self._targets

    def read_labels(self) -> np.ndarray:
        """Labels of a binary store as float64 ±1 (read-only), shape (n_samples,).

        Raises
        ------
        ParameterError
            If the store's target is not binary.
        StoreFormatError
            If a stored label is not one of the classes.
        """
        self._require_binary()
        if self._labels_pm is None:
            labels = np.where(self.read_targets() == self._meta().classes[1], 1.0, -1.0)
            labels.flags.writeable = False
            self._labels_pm = labels
        return self._labels_pm

    @abc.abstractmethod
    def _read_raw_label_column(self, meta) -> np.ndarray:
        """The stored labels (targets) as float64, shape (n_samples,)."""

    # ------------------------------------------------------------- blocks
    def default_block_bounds(self) -> np.ndarray:
        return self._meta().block_bounds.copy()

    def _corrupt(self, where, problem):
        raise StoreFormatError(
            f"{self._path}: corrupt or truncated store: {problem} in {where}")

    def _check_block(self, indptr, indices, data, where, first_column=None):
        """Raise StoreFormatError unless the block read is valid CSC.

        ``first_column``, when given, has the failing column named.  The
        check's scratch is this thread's work buffer (no fresh mapping).
        """
        work = thread_work().take("csc_check", np.uint8, len(indices) + 1)
        code, column = check_csc_block(indptr, indices, self._meta().n_samples, work)
        if code != CSC_OK:
            problem = self._CSC_PROBLEMS[code]
            if first_column is not None and column >= 0:
                problem += f" (column {first_column + column})"
            self._corrupt(where, problem)
        if data is not None and count_nonfinite(data):
            self._corrupt(where, self._NONFINITE_PROBLEM)


def _shown_classes(classes, limit=10) -> str:
    """``[1.0, 2.0, ...]``: the classes, shortened for a message."""
    shown = ", ".join(repr(float(c)) for c in classes[:limit])
    return f"[{shown}{', ...' if len(classes) > limit else ''}]"


def gather_columns(columns, inside, unique, unique_block) -> ColumnBlock:
    """Arrange the columns of ``unique_block`` as requested by ``columns``.

    Parameters
    ----------
    columns : ndarray of int64
        Requested column numbers (any order, duplicates allowed).
    inside : ndarray of bool
        ``columns < n_features``; the other columns come back empty.
    unique : ndarray of int64
        ``np.unique(columns[inside])``, the columns of ``unique_block``.
    unique_block : ColumnBlock
        Those columns (``data`` None for row numbers only).

    Returns
    -------
    block : ColumnBlock
        ``first_column == -1``.
    """
    u_indptr = unique_block.indptr
    if len(columns) == len(unique) and np.array_equal(columns, unique):
        # sorted distinct columns of the store: already in place, no copy
        return ColumnBlock(-1, u_indptr, unique_block.indices, unique_block.data)
    position = np.searchsorted(unique, columns[inside])
    first = np.zeros(len(columns), dtype=np.int64)
    counts = np.zeros(len(columns), dtype=np.int64)
    first[inside] = u_indptr[position]
    counts[inside] = u_indptr[position + 1] - u_indptr[position]
    indptr = np.zeros(len(columns) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    # span copies, not an int64 position per entry (span_take)
    indices = gather_spans(unique_block.indices, first, counts,
                           np.empty(indptr[-1], dtype=unique_block.indices.dtype),
                           indptr[:-1])
    data = None
    if unique_block.data is not None:
        data = gather_spans(unique_block.data, first, counts,
                            np.empty(indptr[-1], dtype=unique_block.data.dtype),
                            indptr[:-1])
    return ColumnBlock(-1, indptr, indices, data)
