"""Writing ultrafs column stores (Zarr v3, see ``docs/FORMAT.md``).

:class:`StoreWriter` streams column blocks, in column order, into a
temporary sibling directory and publishes it under the final name with
one ``os.replace`` when :meth:`StoreWriter.close` has written everything
(the skeleton is :class:`~ultrafs.store.block_writer.BlockWriter`);
:func:`write_store` builds a store from numpy / scipy.sparse arrays.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import StoreExistsError  # noqa: F401  (re-exported)
from ultrafs.store.base import balanced_block_bounds
from ultrafs.store.writers.block_writer import (BlockWriter, check_output_path, default_command,  # noqa: F401
                           remove_tree, temporary_sibling, write_arrays)
from ultrafs.store.metadata import metadata_checksum
from ultrafs.store.zarr_store import (CHUNK_ELEMENTS, DEFAULT_BLOCK_NNZ, FILL_VALUES,
                         FORMAT_NAME, FORMAT_VERSION, NAMES_FILE, ZarrStore, chunk_codecs,
                         array_metadata_parts)

__all__ = ["StoreWriter", "StoreExistsError", "write_store",
           "balanced_block_bounds", "temporary_sibling", "remove_tree"]


#: elements per ``indptr`` chunk: small, because every block read starts
#: with a short ``indptr`` slice and zarr decodes whole chunks (a 1M-entry
#: int64 chunk costs ~1.5 ms to decode for a slice of a few entries)
INDPTR_CHUNK = 1 << 16


class StoreWriter(BlockWriter):
    """Stream a CSC matrix into a new store, column block after column block.

    Parameters
    ----------
    path : str or os.PathLike
        Final path of the store (must not exist unless ``overwrite``).
    n_samples, n_features, nnz : int
        Shape and number of stored entries of the whole matrix.
    dtype : {"float32", "float64"}
        Value dtype.
    binary : bool
        True when every value is 1: no ``data`` array is written and
        :meth:`append` takes ``data=None``.
    labels : array-like of float, shape (n_samples,)
        Original label (target) values, numeric and finite; stored as given
        (a float64 array is held, not copied: leave it unchanged until
        :meth:`close`).
    target : None, "auto", "binary", "multiclass" or "continuous"
        Target type recorded; None detects it from ``labels``
        (:func:`~ultrafs.store.targets.encode_targets`).
    id_offset : int
        Feature id of column 0.
    command : str or None
        Recorded as ``created_by``; None records this process's argv.
    block_nnz : int
        Target nonzeros per block of the default partition.
    overwrite : bool
        Replace an existing ultrafs store at ``path``.
    attrs : dict or None
        Extra JSON-serialisable group attributes (e.g. ``source``).
    chunk_size : int
        Elements per Zarr chunk of every array.
    labels_source : str
        Names the labels in error messages (a file name, ``"y"``...).
    column_ids : array-like of int or None
        Sparse id layout: the id (minus ``id_offset``) of each of the
        ``n_features`` columns, strictly increasing; None for the dense one.
    id_space : int or None
        Declared width (ids ``0 .. id_space - 1``); None: ``n_features``.
    feature_names : None, sequence or StagedNames
        Names of the features: one name (str) or None per id
        (``id_space`` of them, ``names[j]`` naming id ``id_offset + j``),
        or a checked user file (:func:`ultrafs.store.feature_names.stage_names_file`);
        written to ``feature_names.tsv`` with its SHA-256 in the attributes.
    indptr : ndarray of int64, shape (n_features + 1,), or None
        The column offsets of the whole matrix when the caller knows them
        (a transpose): held instead of a copy of its own (8 bytes per
        column saved) and checked against every appended block.  Not
        modified; the caller must not change it before :meth:`close`.

    Notes
    -----
    Everything is written below a temporary sibling
    ``PATH.tmp-<random>``; :meth:`close` writes the group attributes last
    (with ``complete: true``) and renames the directory to ``path``.
    :meth:`abort`, or leaving a ``with`` block on an exception, removes
    the temporary directory, so that nothing is ever left at ``path``.
    """

    format_name = FORMAT_NAME
    format_version = FORMAT_VERSION
    names_file = NAMES_FILE
    root_document = "zarr.json"

    def __init__(self, path, *, n_samples, n_features, nnz, dtype, binary, labels,
                 id_offset=0, command=None, block_nnz=DEFAULT_BLOCK_NNZ,
                 overwrite=False, attrs=None, chunk_size=CHUNK_ELEMENTS,
                 labels_source="labels", target=None, column_ids=None, id_space=None,
                 feature_names=None, indptr=None):
        super().__init__(path, n_samples=n_samples, n_features=n_features, nnz=nnz,
                         dtype=dtype, binary=binary, labels=labels, id_offset=id_offset,
                         command=command, block_nnz=block_nnz, overwrite=overwrite,
                         attrs=attrs, chunk_size=chunk_size, labels_source=labels_source,
                         target=target, column_ids=column_ids, id_space=id_space,
                         feature_names=feature_names, indptr=indptr)

    # -------------------------------------------------------------- hooks
    def _check_settings(self, block_nnz, chunk_size) -> None:
        if self.block_nnz < 1:
            raise ValueError(f"block_nnz must be >= 1, got {block_nnz}")

    def _start(self) -> None:
        import zarr

        self._nnz_flushed = 0
        self._pending_indices = []
        self._pending_data = []
        self._pending_count = 0
        self._group = zarr.open_group(store=str(self.tmp_path), mode="w-", zarr_format=3)
        self._arrays = {"indices": self._create_array("indices", self.nnz, np.int32)}
        if not self.binary:
            self._arrays["data"] = self._create_array("data", self.nnz, self.dtype)

    def _write_block(self, start, indptr, indices, data) -> None:
        if data is not None:
            self._pending_data.append(data.copy())
        self._pending_indices.append(indices.copy())
        self._pending_count += len(indices)
        if self._pending_count >= self.chunk_size:
            self._flush(final=False)

    def _finish(self) -> None:
        self._flush(final=True)
        self._create_array("indptr", self.n_features + 1, np.int64,
                           chunk=min(self.chunk_size, INDPTR_CHUNK))[:] = self._indptr
        self._create_array("labels", self.n_samples, np.float64)[:] = self._labels
        if self.column_ids is not None:
            self._create_array("column_ids", self.n_features, np.int64,
                               chunk=min(self.chunk_size, INDPTR_CHUNK))[:] = self.column_ids
        bounds = balanced_block_bounds(self._indptr, self.block_nnz)
        attrs = dict(self._attrs, block_bounds=[int(b) for b in bounds],
                     **self._names_attrs(), complete=False)
        attrs["metadata_checksum"] = metadata_checksum(
            attrs, array_metadata_parts(self.tmp_path))
        self._group.attrs.update(attrs)
        self._group.attrs["complete"] = True          # written last

    def _discard(self) -> None:
        self._pending_indices, self._pending_data = [], []

    # ----------------------------------------------------------- internals
    def _create_array(self, name, length, dtype, chunk=None):
        return self._group.create_array(
            name, shape=(int(length),), chunks=(chunk or self.chunk_size,),
            dtype=dtype, fill_value=FILL_VALUES[name], compressors=chunk_codecs())

    def _flush(self, final: bool) -> None:
        """Write whole chunks of the pending entries (all of them if final)."""
        if not self._pending_count:
            return
        n_write = self._pending_count if final else (
            self._pending_count // self.chunk_size) * self.chunk_size
        if n_write == 0:
            return
        lo = self._nnz_flushed
        for name, pending in (("indices", self._pending_indices),
                              ("data", self._pending_data)):
            if name not in self._arrays:
                continue
            joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
            self._arrays[name][lo:lo + n_write] = joined[:n_write]
            pending[:] = [joined[n_write:].copy()] if n_write < len(joined) else []
        self._nnz_flushed += n_write
        self._pending_count -= n_write


def write_store(path, X, y, *, dtype=None, block_nnz=DEFAULT_BLOCK_NNZ, id_offset=0,
                command=None, overwrite=False, chunk_size=CHUNK_ELEMENTS,
                target=None, feature_names=None, storage_options=None) -> ZarrStore:
    """Write a store from numpy / scipy.sparse arrays and open it.

    Parameters
    ----------
    path : str or os.PathLike
        Output directory (created; must not exist unless ``overwrite``), or
        the fsspec URL of one (``s3://bucket/x.zarr``): written in a local
        staging folder, then published with its root ``zarr.json`` last
        (:func:`ultrafs.store.object_store.staged_upload`).
    X : array-like or scipy.sparse matrix, shape (n_samples, n_features)
        Copied, never modified.  Explicit zeros are dropped.
    y : array-like, shape (n_samples,)
        Numeric, finite targets (stored as given).
    dtype : float32, float64 or None
        Value dtype (None: float32 inputs stay float32, others float64).
    block_nnz : int
        Target nonzeros per block of the default partition.
    id_offset : int
        Feature id of column 0.
    command : str or None
        Recorded as ``created_by`` (None: this process's argv).
    overwrite : bool
        Replace an existing ultrafs store at ``path``.
    chunk_size : int
        Elements per Zarr chunk.
    target : None, "auto", "binary", "multiclass" or "continuous"
        Target type; None detects it (two values: binary; three or more
        integers: multiclass; else continuous).
    feature_names : sequence of str or None, optional
        One name (or None: unnamed) per column of ``X``; stored with the
        data (``store.feature_names_of(ids)`` reads them back).
    storage_options : dict, optional
        fsspec options of a URL ``path``.

    Returns
    -------
    store : ZarrStore
        The new store, opened.

    Raises
    ------
    InputFormatError
        If X holds NaN/inf, y has the wrong length, is not finite, takes a
        single value or does not fit ``target``; or a feature name is not
        a string without tabs and line breaks, or their count is not the
        number of columns.
    StoreExistsError
        If ``path`` exists and ``overwrite`` is False.
    """
    return ZarrStore(write_arrays(StoreWriter, path, X, y, dtype=dtype, overwrite=overwrite,
                                  block_nnz=block_nnz, id_offset=id_offset,
                                  command=command, chunk_size=chunk_size, target=target,
                                  feature_names=feature_names,
                                  storage_options=storage_options),
                     storage_options=storage_options)
