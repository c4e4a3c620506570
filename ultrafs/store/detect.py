"""Open whatever store lies at a path: Zarr, Parquet-long or wide Parquet.

Dispatch, in this order:

1. a directory with ``zarr.json`` → :class:`~ultrafs.store.zarr_store.ZarrStore`
   (which refuses Zarr groups without the ultrafs format attribute);
2. a directory with ``_ultrafs.json`` →
   :class:`~ultrafs.store.parquet_long.ParquetLongStore`;
3. a Parquet file (``.parquet`` suffix or ``PAR1`` magic bytes), or a
   directory of ``*.parquet`` files → :class:`~ultrafs.store.parquet_wide.ParquetWideStore`
   with the label column ``label`` (default ``"label"``);
4. anything else → ``StoreFormatError("<path>: not an ultrafs store (...)")``.

An fsspec URL (``s3://...``) holds a published Zarr store (root ``zarr.json``)
or Parquet-long store (root ``_ultrafs.json``):
:func:`ultrafs.store.object_store.check_published` tells which.
"""

from __future__ import annotations

import os
from pathlib import Path

from ultrafs.errors import ParameterError, StoreFormatError
from ultrafs.store.base import ColumnStore

__all__ = ["open_store", "store_kind"]

_PARQUET_MAGIC = b"PAR1"


def _is_parquet_file(path: Path) -> bool:
    if path.suffix == ".parquet":
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == _PARQUET_MAGIC
    except OSError:
        return False


def store_kind(path) -> str:
    """What :func:`open_store` would open at ``path``.

    Returns
    -------
    kind : {"zarr", "parquet-long", "parquet-wide"}

    Raises
    ------
    StoreFormatError
        If ``path`` is none of these.
    """
    path = Path(os.path.abspath(os.fspath(path)))
    if not path.exists():
        raise StoreFormatError(f"{path}: not an ultrafs store (no such file or directory)")
    if path.is_dir():
        if (path / "zarr.json").is_file():
            return "zarr"
        from ultrafs.store.parquet_long import METADATA_FILE

        if (path / METADATA_FILE).is_file():
            return "parquet-long"
        if any(p.suffix == ".parquet" and not p.name.startswith(("_", "."))
               for p in path.iterdir()):
            return "parquet-wide"
        raise StoreFormatError(
            f"{path}: not an ultrafs store (no zarr.json, no {METADATA_FILE} and no "
            ".parquet files)")
    if path.is_file() and _is_parquet_file(path):
        return "parquet-wide"
    if not path.is_file():              # a FIFO, socket or device: never opened
        from ultrafs.store.input_files import kind_of_file

        raise StoreFormatError(
            f"{path}: not an ultrafs store (is {kind_of_file(path.stat().st_mode)}, not "
            "a store directory or a regular file)")
    raise StoreFormatError(
        f"{path}: not an ultrafs store (neither a store directory nor a Parquet file)")


def open_store(path, *, label=None, target=None, labels=True,
               storage_options=None) -> ColumnStore:
    """Open the column store at ``path``, whatever its format.

    Parameters
    ----------
    path : str or os.PathLike
        A Zarr store or Parquet-long store directory written by ultrafs,
        or a wide Parquet file / dataset directory; or the fsspec URL of a
        Zarr store (``s3://bucket/train.zarr``, ``file:///data/train.zarr``),
        read through zarr's fsspec store, or of a Parquet-long store
        (``s3://bucket/train.parquet``), read in byte ranges through fsspec;
        either is told by its root document (``zarr.json``, ``_ultrafs.json``)
        and refused in one line when it is missing (an unpublished prefix).
    label : str or None
        Label column of a wide Parquet table (None: ``"label"``).  Stores
        written by ultrafs carry their labels: giving ``label`` for one is
        an error.
    target : None, "auto", "binary", "multiclass", "continuous" or "none"
        Target type of a wide table's label column (None: detected).
        Stores written by ultrafs record theirs: giving ``target`` for one
        is an error.
    labels : bool
        False for data only predicted on (``ultrafs predict``): a wide
        table then needs no label column, and its labels are never read
        (``target="none"``).  Stores written by ultrafs are opened as they are.
    storage_options : dict, optional
        fsspec options of a URL (``{"endpoint_url": ...}`` for ``s3://``),
        over ultrafs' bounded waits (:mod:`ultrafs.store.object_store`);
        carried to the workers with the store.  Credentials and endpoints
        also come from the environment (``AWS_*``) and fsspec's config.

    Returns
    -------
    store : ColumnStore

    Raises
    ------
    StoreFormatError
        If ``path`` is not a store, or the store is corrupt.
    ParameterError
        If ``label`` or ``target`` is given for a store written by ultrafs.
    InputFormatError
        If a wide table has no such label column or a non-numeric feature
        column.
    """
    from ultrafs.store.path_store import is_url

    if is_url(path):
        # fsspec URLs (s3://, gs://, file://, ...): a published Zarr or
        # Parquet-long store, told apart by its root document; every worker
        # reopens the URL on its own
        if label is not None or target is not None:
            raise ParameterError(
                f"{path}: {'label' if label is not None else 'target'}= applies to wide "
                "Parquet tables only")
        from ultrafs.store.object_store import ROOT_DOCUMENT, ROOT_DOCUMENTS, check_published

        if check_published(path, storage_options, ROOT_DOCUMENTS) == ROOT_DOCUMENT:
            from ultrafs.store.zarr_store import ZarrStore

            return ZarrStore(path, storage_options=storage_options)
        from ultrafs.store.parquet_long import ParquetLongStore

        return ParquetLongStore(path, storage_options=storage_options)
    if storage_options:
        raise ParameterError(f"{path}: storage options apply to URLs (s3://...) only")
    kind = store_kind(path)
    if kind != "parquet-wide" and label is not None:
        raise ParameterError(
            f"{path}: label={label!r} applies to wide Parquet tables only; this "
            f"{kind} store carries its own labels")
    if kind != "parquet-wide" and target is not None:
        raise ParameterError(
            f"{path}: target={target!r} applies to wide Parquet tables only; this "
            f"{kind} store records its own target type")
    if kind == "zarr":
        from ultrafs.store.zarr_store import ZarrStore

        return ZarrStore(path)
    if kind == "parquet-long":
        from ultrafs.store.parquet_long import ParquetLongStore

        return ParquetLongStore(path)
    from ultrafs.store.parquet_wide import DEFAULT_LABEL, ParquetWideStore

    if not labels:
        target = "none"
    return ParquetWideStore(path, label=DEFAULT_LABEL if label is None else label,
                            target=target)
