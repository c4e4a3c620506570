"""The skeleton of the store writers: validated appends, atomic publish.

:class:`BlockWriter` takes CSC column blocks in column order, checks them
and keeps the column offsets, writes everything below a temporary sibling
directory and publishes it under the final name with one ``os.replace``
when :meth:`BlockWriter.close` has written everything.  A format
(:class:`~ultrafs.store.writers.zarr_writer.StoreWriter` for Zarr,
:class:`~ultrafs.store.writers.parquet_long_writer.ParquetLongWriter`) supplies
how a checked block and the final metadata are written.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

import numpy as np

from ultrafs import __version__
from ultrafs.atomic import publish_path
from ultrafs.errors import InputFormatError, ParameterError, StoreExistsError
from ultrafs.kernels.csc_check import CSC_OK, check_csc_block, count_nonfinite
from ultrafs.store.base import check_column_ids
from ultrafs.store.fingerprint import ContentDigest
from ultrafs.store.targets import encode_targets
from ultrafs.store.metadata import VALUE_DTYPES
from ultrafs.store.zarr_store import is_ultrafs_store

__all__ = ["BlockWriter", "write_arrays", "check_output_path", "publish",
           "temporary_sibling", "remove_tree", "default_command"]


def temporary_sibling(path: Path, tag: str) -> Path:
    """A fresh name next to ``path``: ``NAME.<tag>-<random hex>``."""
    return path.with_name(f"{path.name}.{tag}-{secrets.token_hex(6)}")


def remove_tree(path) -> None:
    """Remove a directory tree or file if it exists (errors ignored)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def default_command() -> str:
    """The command line of the running process (for ``created_by``)."""
    return " ".join([os.path.basename(sys.executable)] + sys.argv)


def _is_any_ultrafs_store(path) -> bool:
    """True for an ultrafs store of any on-disk format (Zarr or Parquet-long)."""
    from ultrafs.store.parquet_long import is_parquet_long_store

    return is_ultrafs_store(path) or is_parquet_long_store(path)


def check_output_path(path, overwrite: bool) -> Path:
    """Validate an output path before any work is done.

    Returns
    -------
    path : Path
        The absolute output path.

    Raises
    ------
    StoreExistsError
        If ``path`` exists and ``overwrite`` is False, or if it exists but
        is not an ultrafs store (never deleted, even with ``overwrite``).
    ParameterError
        If the parent directory of ``path`` does not exist.
    """
    path = Path(os.path.abspath(os.fspath(path)))
    if os.path.lexists(path):
        if not overwrite:
            raise StoreExistsError(f"{path}: already exists (use overwrite=True to replace it)")
        if not _is_any_ultrafs_store(path):
            raise StoreExistsError(
                f"{path}: exists and is not an ultrafs store; refusing to replace it")
    if not path.parent.is_dir():
        raise ParameterError(f"{path}: parent directory {path.parent} does not exist")
    return path


def publish(tmp: Path, final: Path, overwrite: bool) -> None:
    """Move the finished store ``tmp`` to ``final`` (see :func:`ultrafs.atomic.publish_path`)."""
    check_output_path(final, overwrite)
    publish_path(tmp, final)


class BlockWriter:
    """Stream a CSC matrix into a new store, column block after column block.

    The parameters are those of the concrete writers
    (:class:`~ultrafs.store.writers.zarr_writer.StoreWriter`,
    :class:`~ultrafs.store.writers.parquet_long_writer.ParquetLongWriter`), whose
    docstrings describe them; ``settings`` are a format's own keyword
    arguments, handed to :meth:`_check_settings`.

    Notes
    -----
    A subclass sets :attr:`format_name` and :attr:`format_version` and
    implements :meth:`_start` (create the temporary store below
    :attr:`tmp_path`), :meth:`_write_block` (take a checked block),
    :meth:`_finish` (write what is pending and the metadata, last) and
    :meth:`_discard` (drop buffers and open files).  An exception in
    :meth:`_start` or :meth:`close` aborts the writer, as does leaving a
    ``with`` block on an exception: nothing is ever left at :attr:`path`.
    """

    #: the ``format`` attribute written
    format_name: str
    #: the ``format_version`` attribute written
    format_version: int
    #: the feature names file inside the store (see ultrafs.store.feature_names)
    names_file: str
    #: the document written last, whose presence publishes the store on an
    #: object store (:func:`ultrafs.store.object_store.staged_upload`)
    root_document: str

    def __init__(self, path, *, n_samples, n_features, nnz, dtype, binary, labels,
                 id_offset, command, block_nnz, overwrite, attrs, chunk_size,
                 labels_source, target=None, column_ids=None, id_space=None,
                 feature_names=None, indptr=None, **settings):
        self.path = check_output_path(path, overwrite)
        self.n_samples, self.n_features, self.nnz = int(n_samples), int(n_features), int(nnz)
        if min(self.n_samples, self.n_features, self.nnz) < 0:
            raise ValueError("n_samples, n_features and nnz must be >= 0")
        if self.n_samples >= 2 ** 31:
            raise InputFormatError(
                f"{labels_source}: {self.n_samples} samples; at most 2**31 - 1 are supported")
        self.dtype = np.dtype(dtype)
        if self.dtype.name not in VALUE_DTYPES:
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype}")
        self.binary = bool(binary)
        self.block_nnz = int(block_nnz)
        self.chunk_size = int(chunk_size)
        self._check_settings(block_nnz, chunk_size, **settings)
        self.overwrite = bool(overwrite)
        try:
            # held, not copied when already float64 (n_samples floats: the
            # caller must not change them before close)
            labels = np.asarray(labels, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputFormatError(f"{labels_source}: labels must be numeric") from None
        if labels.shape != (self.n_samples,):
            raise InputFormatError(
                f"{labels_source}: expected {self.n_samples} labels, got shape {labels.shape}")
        self.target_type, self.classes = encode_targets(labels, where=labels_source,
                                                        target=target)
        self._labels = labels
        self.id_space = self.n_features if id_space is None else int(id_space)
        if column_ids is None:
            if self.id_space != self.n_features:
                raise ValueError("id_space differs from n_features: column_ids are required")
            self.column_ids = None
        else:
            self.column_ids = check_column_ids(column_ids, self.id_space, "column_ids")
            if len(self.column_ids) != self.n_features:
                raise ValueError(f"{len(self.column_ids)} column ids for "
                                 f"{self.n_features} columns")
        self._feature_names = self._checked_feature_names(feature_names, int(id_offset))
        self._digest = ContentDigest(
            n_samples=self.n_samples, id_space=self.id_space, id_offset=id_offset,
            dtype=self.dtype, binary=self.binary, target_type=self.target_type,
            classes=self.classes)
        self._attrs = {
            "format": self.format_name,
            "format_version": self.format_version,
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "nnz": self.nnz,
            "dtype": self.dtype.name,
            "id_offset": int(id_offset),
            "target": self.target_type,
            "classes": (None if self.target_type in ("continuous", "none")
                        else [float(c) for c in self.classes]),
            "binary": self.binary,
            "sparse_ids": self.column_ids is not None,
            **({} if self.column_ids is None else {"id_space": self.id_space}),
            "block_nnz": self.block_nnz,
            **self._format_attrs(),
            "created_by": default_command() if command is None else str(command),
            "created_with": f"ultrafs {__version__}",
        }
        self._attrs.update(attrs or {})
        self._declared_indptr = indptr is not None
        if indptr is None:
            self._indptr = np.zeros(self.n_features + 1, dtype=np.int64)
        else:
            self._indptr = np.asarray(indptr)
            if (self._indptr.dtype != np.int64 or self._indptr.shape != (self.n_features + 1,)
                    or self._indptr[0] != 0 or self._indptr[-1] != self.nnz):
                raise ValueError(f"indptr must be int64 offsets of shape "
                                 f"({self.n_features + 1},) from 0 to nnz={self.nnz}")
        self._columns_done = 0
        self._nnz_appended = 0
        self._closed = False
        self.tmp_path = temporary_sibling(self.path, "tmp")
        try:
            self._start()
        except BaseException:
            self.abort()
            raise

    # ---------------------------------------------------------------- API
    def append(self, indptr, indices, data=None) -> None:
        """Append the next columns.

        Parameters
        ----------
        indptr : array-like of int, shape (n_columns + 1,)
            Offsets of the block, starting at 0.
        indices : array-like of int, shape (nnz_block,)
            Row numbers, increasing within each column.
        data : array-like of float, shape (nnz_block,), or None
            Values (finite); must be None for a binary store.

        Raises
        ------
        ValueError
            If the block is inconsistent, or goes past ``n_features`` or
            ``nnz``.
        """
        self._check_open()
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices, dtype=np.int32)
        n_columns = len(indptr) - 1
        if n_columns < 0 or self._columns_done + n_columns > self.n_features:
            raise ValueError(f"appending {n_columns} columns after {self._columns_done} "
                             f"exceeds n_features={self.n_features}")
        code, column = check_csc_block(indptr, indices, self.n_samples)
        if code != CSC_OK:
            raise ValueError(f"invalid CSC block at column {self._columns_done + max(column, 0)} "
                             f"(check code {code})")
        block_nnz = len(indices)
        if self._nnz_appended + block_nnz > self.nnz:
            raise ValueError(f"appending {block_nnz} entries exceeds nnz={self.nnz}")
        if self.binary:
            if data is not None:
                raise ValueError("binary store: data must be None")
        else:
            if data is None:
                raise ValueError("valued store: data is required")
            data = np.asarray(data, dtype=self.dtype)
            if data.shape != indices.shape:
                raise ValueError(f"data has shape {data.shape}, indices {indices.shape}")
            if count_nonfinite(data):
                raise ValueError("data contains NaN or infinite values")
        start = self._columns_done
        offsets = self._nnz_appended + indptr[1:]
        if self._declared_indptr:
            if not np.array_equal(self._indptr[start + 1:start + n_columns + 1], offsets):
                raise ValueError(f"columns {start}..{start + n_columns - 1}: offsets differ "
                                 "from the declared indptr")
        else:
            self._indptr[start + 1:start + n_columns + 1] = offsets
        self._columns_done += n_columns
        self._nnz_appended += block_nnz
        self._digest.add_columns(indptr, indices, data)
        self._write_block(start, indptr, indices, data)

    def close(self) -> Path:
        """Finish the store and publish it at :attr:`path`.

        Returns
        -------
        path : Path
            The final path.
        """
        self._check_open()
        try:
            if self._columns_done != self.n_features or self._nnz_appended != self.nnz:
                raise ValueError(
                    f"store incomplete: {self._columns_done}/{self.n_features} columns, "
                    f"{self._nnz_appended}/{self.nnz} entries appended")
            self._digest.add_column_ids(self.column_ids)
            self._digest.add_labels(self._labels)
            self._attrs["fingerprint"] = self._digest.hexdigest()
            self._finish()
            publish(self.tmp_path, self.path, self.overwrite)
        except BaseException:
            self.abort()
            raise
        self._closed = True
        return self.path

    def abort(self) -> None:
        """Discard everything written so far (idempotent)."""
        self._closed = True
        self._discard()
        remove_tree(self.tmp_path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        elif not self._closed:
            self.close()
        return False

    # ------------------------------------------------------------- names
    def _checked_feature_names(self, feature_names, id_offset):
        """The ``feature_names`` argument, checked before anything is written.

        None; a :class:`~ultrafs.store.feature_names.StagedNames` (a user
        file already checked, see ``stage_names_file``), whose ids must lie
        in the store's range; or a sequence of ``id_space`` names (str or
        None), ``names[j]`` naming id ``id_offset + j``.
        """
        from ultrafs.store.feature_names import StagedNames, names_of_sequence

        if feature_names is None:
            return None
        if isinstance(feature_names, StagedNames):
            feature_names.check_range(id_offset, self.id_space)
            return feature_names
        return names_of_sequence(feature_names, id_offset=id_offset, n_ids=self.id_space)

    def _names_attrs(self) -> dict:
        """Write the names file into the temporary store; its attributes.

        Empty without names (the attributes are optional: older stores and
        stores without names have none).
        """
        from ultrafs.store.feature_names import (NAMES_COUNT_ATTR, NAMES_SHA_ATTR,
                                                 place_names)

        if self._feature_names is None:
            return {}
        sha, count = place_names(self._feature_names, self.tmp_path / self.names_file,
                                 id_offset=self._attrs["id_offset"],
                                 id_space=self.id_space)
        return {NAMES_SHA_ATTR: sha, NAMES_COUNT_ATTR: count}

    # -------------------------------------------------------------- hooks
    def _check_settings(self, block_nnz, chunk_size, **settings) -> None:
        """Check the sizes (given as passed) and set the format's settings."""

    def _format_attrs(self) -> dict:
        """Attributes of the format, recorded after ``block_nnz``."""
        return {}

    def _start(self) -> None:
        """Set up buffers and create the temporary store at :attr:`tmp_path`."""
        raise NotImplementedError

    def _write_block(self, start, indptr, indices, data) -> None:
        """Take checked columns ``start:start + len(indptr) - 1``.

        :attr:`_indptr` already holds their offsets; ``data`` is None for
        a binary store, else an array that may be the caller's.
        """
        raise NotImplementedError

    def _finish(self) -> None:
        """Write what is pending, then the metadata (``complete``) last."""
        raise NotImplementedError

    def _discard(self) -> None:
        """Drop buffers and close open files (before the directory goes)."""

    # ----------------------------------------------------------- internals
    def _check_open(self):
        if self._closed:
            raise ValueError(f"{type(self).__name__} is closed")


def write_arrays(writer_class, path, X, y, *, dtype, overwrite, target=None,
                 feature_names=None, storage_options=None, **options):
    """Write numpy / scipy.sparse arrays with ``writer_class``.

    The body of :func:`~ultrafs.store.writers.zarr_writer.write_store` and
    :func:`~ultrafs.store.writers.parquet_long_writer.write_parquet_long`, whose
    docstrings describe ``path``, ``X``, ``y``, ``dtype``, ``overwrite``
    and ``target``; ``feature_names`` (None, or one name or None per
    column of ``X``) and ``options`` are further keyword arguments of
    ``writer_class`` (a :class:`BlockWriter` subclass).  A URL ``path``
    (``s3://...``, with fsspec's ``storage_options``) is written in a local
    staging folder and published with ``writer_class.root_document`` last
    (:func:`ultrafs.store.object_store.staged_upload`).

    Returns
    -------
    path : Path or str
        The final path of the store (the URL of one published).
    """
    from ultrafs.store.path_store import is_url

    if is_url(path):
        from ultrafs.store.object_store import staged_upload

        with staged_upload(path, storage_options, overwrite=overwrite,
                           root_document=writer_class.root_document) as local:
            write_arrays(writer_class, local, X, y, dtype=dtype, overwrite=False,
                         target=target, feature_names=feature_names, **options)
        return path
    if storage_options:
        raise ParameterError(f"{path}: storage options apply to URLs (s3://...) only")
    from ultrafs.store.memory import to_compact_csc

    check_output_path(path, overwrite)
    csc, column_ids, id_space = to_compact_csc(X, dtype=dtype)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != csc.shape[0]:
        raise InputFormatError(f"y must have shape ({csc.shape[0]},), got {y.shape}")
    binary = bool(np.all(csc.data == 1))
    if column_ids is not None:
        options = dict(options, column_ids=column_ids, id_space=id_space)
    with writer_class(path, n_samples=csc.shape[0], n_features=csc.shape[1],
                      nnz=csc.nnz, dtype=csc.dtype, binary=binary, labels=y,
                      overwrite=overwrite, labels_source="y", target=target,
                      feature_names=feature_names, **options) as writer:
        writer.append(csc.indptr, csc.indices, None if binary else csc.data)
        return writer.close()
