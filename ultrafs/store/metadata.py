"""Checks of the metadata shared by the ultrafs formats (Zarr, Parquet-long).

Both formats record the same attributes (``docs/FORMAT.md``): each
module's ``_check_attrs`` calls the checks below in order, adding its own
between them, and :class:`RecordedMeta` turns the checked attributes into
the values every :class:`~ultrafs.store.path_store.WrittenStore` serves.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ultrafs.errors import StoreFormatError, StoreVersionError

__all__ = ["VALUE_DTYPES", "RecordedMeta", "is_count", "check_format_marker",
           "check_complete", "check_counts", "check_classes_and_bounds"]

#: value dtypes of every store
VALUE_DTYPES = ("float32", "float64")


def is_count(value) -> bool:
    """Whether ``value`` is a JSON integer (``bool`` excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_format_marker(path: Path, attrs: dict, name: str, version: int) -> None:
    """Check the ``format`` and ``format_version`` attributes.

    Raises
    ------
    StoreFormatError
        If ``format`` is not ``name``.
    StoreVersionError
        If ``format_version`` is not ``version``.
    """
    if attrs.get("format") != name:
        raise StoreFormatError(
            f"{path}: not an ultrafs store (format attribute is "
            f"{attrs.get('format')!r}, expected {name!r})")
    found = attrs.get("format_version")
    if found != version:
        raise StoreVersionError(
            f"{path}: store format version {found!r}, but this ultrafs "
            f"reads version {version}")


def check_complete(path: Path, attrs: dict, required) -> None:
    """Check that every name of ``required`` is present and ``complete`` is true."""
    missing = [name for name in required if name not in attrs]
    if missing:
        raise StoreFormatError(f"{path}: missing attributes {', '.join(missing)}")
    if attrs["complete"] is not True:
        raise StoreFormatError(f"{path}: store is incomplete (interrupted write)")


def check_counts(path: Path, attrs: dict) -> None:
    """Check ``n_samples``, ``n_features``, ``nnz``, ``id_offset`` and ``dtype``."""
    for name in ("n_samples", "n_features", "nnz", "id_offset"):
        value = attrs[name]
        if not is_count(value) or (name != "id_offset" and value < 0):
            raise StoreFormatError(f"{path}: attribute {name}={value!r} is not a valid count")
    if attrs["n_samples"] >= 2 ** 31:
        raise StoreFormatError(f"{path}: n_samples={attrs['n_samples']} needs int64 rows")
    if attrs["dtype"] not in VALUE_DTYPES:
        raise StoreFormatError(
            f"{path}: attribute dtype={attrs['dtype']!r} is not one of {VALUE_DTYPES}")


def check_classes_and_bounds(path: Path, attrs: dict, *, allow_bool: bool) -> None:
    """Check ``binary``, ``classes`` and ``block_bounds``.

    Parameters
    ----------
    path : Path
        Names the store in error messages.
    attrs : dict
        The attributes, already through :func:`check_counts`.
    allow_bool : bool
        Whether JSON booleans pass as numbers in ``classes`` and
        ``block_bounds`` (the Zarr reader has always accepted them, the
        Parquet-long reader never has).
    """
    if not isinstance(attrs["binary"], bool):
        raise StoreFormatError(f"{path}: attribute binary={attrs['binary']!r} is not a boolean")
    classes = attrs["classes"]
    if (not isinstance(classes, list) or len(classes) != 2
            or not all(isinstance(c, (int, float)) and (allow_bool or not isinstance(c, bool))
                       for c in classes)
            or not np.all(np.isfinite(classes)) or not classes[0] < classes[1]):
        raise StoreFormatError(f"{path}: attribute classes={classes!r} is not two sorted labels")
    bounds = attrs["block_bounds"]
    n_features = attrs["n_features"]
    ok = isinstance(bounds, list) and len(bounds) >= 1 and all(
        isinstance(b, int) and (allow_bool or not isinstance(b, bool)) for b in bounds)
    if ok:
        arr = np.asarray(bounds, dtype=np.int64)
        ok = (arr[0] == 0 and arr[-1] == n_features and np.all(np.diff(arr) > 0)
              and (n_features == 0) == (len(arr) == 1))
    if not ok:
        raise StoreFormatError(
            f"{path}: attribute block_bounds is not an increasing partition of "
            f"0..{n_features}")


class RecordedMeta:
    """The checked attributes of a store, as the values its readers use.

    Parameters
    ----------
    attrs : dict
        Attributes that passed the checks of this module.

    Attributes
    ----------
    attrs : dict
        ``attrs`` itself (not copied).
    n_samples, n_features, nnz, id_offset : int
    dtype : numpy.dtype
    binary : bool
    classes : ndarray of float64, shape (2,)
    block_bounds : ndarray of int64, read-only
    """

    def __init__(self, attrs: dict):
        self.attrs = attrs
        self.n_samples = attrs["n_samples"]
        self.n_features = attrs["n_features"]
        self.nnz = attrs["nnz"]
        self.dtype = np.dtype(attrs["dtype"])
        self.id_offset = attrs["id_offset"]
        self.binary = attrs["binary"]
        self.classes = np.asarray(attrs["classes"], dtype=np.float64)
        self.block_bounds = np.asarray(attrs["block_bounds"], dtype=np.int64)
        self.block_bounds.flags.writeable = False
