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
from ultrafs.store.targets import TARGET_TYPES

__all__ = ["VALUE_DTYPES", "READ_VERSIONS", "WRITE_VERSION", "RecordedMeta", "is_count",
           "check_format_marker", "check_complete", "check_counts",
           "check_classes_and_bounds", "check_version3", "required_attrs",
           "FINGERPRINT_LENGTH", "metadata_checksum", "check_metadata_checksum"]

#: value dtypes of every store
VALUE_DTYPES = ("float32", "float64")
#: format versions read (Zarr and Parquet-long alike): 1 is binary-only,
#: 2 adds the ``target`` attribute (binary, multiclass or continuous), 3
#: adds checksums on every chunk or page, the content ``fingerprint`` and
#: the sparse id layout (``sparse_ids``, ``id_space`` and a column-id array)
READ_VERSIONS = (1, 2, 3)
#: the format version written
WRITE_VERSION = 3
#: length of a content fingerprint (hex digits of a SHA-256 digest)
FINGERPRINT_LENGTH = 64


def is_count(value) -> bool:
    """Whether ``value`` is a JSON integer (``bool`` excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_format_marker(path: Path, attrs: dict, name: str,
                        versions=READ_VERSIONS) -> None:
    """Check the ``format`` and ``format_version`` attributes.

    Parameters
    ----------
    versions : tuple of int
        The versions read.

    Raises
    ------
    StoreFormatError
        If ``format`` is not ``name``.
    StoreVersionError
        If ``format_version`` is not one of ``versions``.
    """
    if attrs.get("format") != name:
        raise StoreFormatError(
            f"{path}: not an ultrafs store (format attribute is "
            f"{attrs.get('format')!r}, expected {name!r})")
    found = attrs.get("format_version")
    if not is_count(found) or found not in versions:
        readable = (f"version {versions[0]}" if len(versions) == 1 else
                    "versions " + ", ".join(str(v) for v in versions[:-1])
                    + f" and {versions[-1]}")
        raise StoreVersionError(
            f"{path}: store format version {found!r}, but this ultrafs "
            f"reads {readable}")


def required_attrs(common, attrs: dict) -> tuple:
    """The attributes required of a store: ``common``, plus ``target`` from version 2."""
    version = attrs.get("format_version", 1)
    if version >= 3:
        return tuple(common) + ("target", "fingerprint", "sparse_ids")
    if version >= 2:
        return tuple(common) + ("target",)
    return tuple(common)


#: attributes left out of the metadata checksum: itself, and ``complete``
#: (written after it, last)
_UNCHECKED = ("metadata_checksum", "complete")


def metadata_checksum(attrs: dict, parts=()) -> str:
    """SHA-256 of the attributes (but ``complete``) and other metadata documents.

    Parameters
    ----------
    attrs : dict
        The store's attributes; ``metadata_checksum`` and ``complete`` are
        left out.
    parts : iterable of (name, JSON value)
        Further metadata covered, e.g. each Zarr array's ``zarr.json``.

    Notes
    -----
    The JSON is canonical (sorted keys, no spaces), so the checksum names
    the values, not their layout: a flipped bit in a metadata file either
    breaks its JSON, or changes a value and so the checksum.
    """
    import hashlib
    import json

    body = {name: value for name, value in attrs.items() if name not in _UNCHECKED}
    document = {"attrs": body, "parts": {name: value for name, value in parts}}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def check_metadata_checksum(path: Path, attrs: dict, parts=()) -> None:
    """Raise StoreFormatError unless ``metadata_checksum`` matches.

    Checked whenever the attribute is present (version 3 requires it), so
    that a flipped ``format_version`` cannot switch the check off.
    """
    if "metadata_checksum" not in attrs:
        return
    if attrs.get("metadata_checksum") != metadata_checksum(attrs, parts):
        raise StoreFormatError(
            f"{path}: corrupt store: the metadata does not match its checksum "
            "(a metadata file was changed after writing)")


#: most ids a store may declare (``id_space``): ids and their offset stay in int64
MAX_ID_SPACE = 2**62


def check_version3(path: Path, attrs: dict) -> None:
    """Check ``fingerprint``, ``sparse_ids`` and ``id_space`` (version 3).

    ``id_space`` (the declared width: ids are ``0 .. id_space - 1`` plus
    ``id_offset``) is required with ``sparse_ids: true`` and must be at
    least ``n_features``; without it the layout is dense.
    """
    if attrs.get("format_version", 1) < 3:
        return
    fingerprint = attrs["fingerprint"]
    if not (isinstance(fingerprint, str) and len(fingerprint) == FINGERPRINT_LENGTH
            and all(c in "0123456789abcdef" for c in fingerprint)):
        raise StoreFormatError(f"{path}: attribute fingerprint is not a SHA-256 hex digest")
    sparse = attrs["sparse_ids"]
    if not isinstance(sparse, bool):
        raise StoreFormatError(f"{path}: attribute sparse_ids={sparse!r} is not a boolean")
    if sparse:
        space = attrs.get("id_space")
        if not is_count(space) or space < attrs["n_features"] or space > MAX_ID_SPACE:
            raise StoreFormatError(
                f"{path}: attribute id_space={space!r} is not a count of at least "
                f"n_features={attrs['n_features']}")


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


def _is_number(value, allow_bool) -> bool:
    return isinstance(value, (int, float)) and (allow_bool or not isinstance(value, bool))


def _check_target_and_classes(path: Path, attrs: dict, allow_bool: bool) -> None:
    """Check ``target`` (version 2) and ``classes`` against it.

    Version 1 stores are binary (any ``target`` attribute is ignored);
    binary stores record two sorted finite classes, multiclass stores at
    least three sorted distinct finite ones, continuous stores ``null``.
    """
    version = attrs["format_version"]
    target = "binary" if version == 1 else attrs["target"]
    if target not in TARGET_TYPES:
        raise StoreFormatError(
            f"{path}: attribute target={target!r} is not one of "
            f"{', '.join(TARGET_TYPES)}")
    classes = attrs["classes"]
    if target == "none" and version < 3:
        raise StoreFormatError(f"{path}: attribute target='none' needs format version 3")
    if target in ("continuous", "none"):
        if classes is not None:
            raise StoreFormatError(
                f"{path}: attribute classes={classes!r} of a {target} target is not null")
        return
    ok = (isinstance(classes, list)
          and all(_is_number(c, allow_bool) for c in classes)
          and (len(classes) == 2 if target == "binary" else len(classes) >= 3))
    if ok:
        values = np.asarray(classes, dtype=np.float64)
        ok = bool(np.all(np.isfinite(values)) and np.all(values[1:] > values[:-1]))
    if not ok:
        shown = repr(classes)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        expected = ("two sorted labels" if target == "binary"
                    else "three or more sorted distinct labels")
        raise StoreFormatError(
            f"{path}: attribute classes={shown} is not {expected} "
            f"(target {target!r})")


def check_classes_and_bounds(path: Path, attrs: dict, *, allow_bool: bool) -> None:
    """Check ``binary``, ``target``, ``classes`` and ``block_bounds``.

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
    _check_target_and_classes(path, attrs, allow_bool)
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
    format_version : int
    n_samples, n_features, nnz, id_offset : int
    dtype : numpy.dtype
    binary : bool
    target_type : str
        ``"binary"`` (always for version 1), ``"multiclass"`` or ``"continuous"``.
    classes : ndarray of float64, shape (K,)
        Sorted; shape (0,) for a continuous target.
    block_bounds : ndarray of int64, read-only
    fingerprint : str or None
        The content digest (version 3), else None.
    sparse_ids : bool
        Whether the store keeps only non-empty columns (version 3).
    id_space : int
        Declared width (``n_features`` for the dense layout).
    column_ids : ndarray of int64 or None
        The ids of the columns (sparse layout), loaded by the backend.
    """

    def __init__(self, attrs: dict):
        self.attrs = attrs
        self.format_version = attrs["format_version"]
        self.target_type = "binary" if self.format_version == 1 else attrs["target"]
        self.n_samples = attrs["n_samples"]
        self.n_features = attrs["n_features"]
        self.nnz = attrs["nnz"]
        self.dtype = np.dtype(attrs["dtype"])
        self.id_offset = attrs["id_offset"]
        self.binary = attrs["binary"]
        self.classes = (np.zeros(0, dtype=np.float64) if attrs["classes"] is None
                        else np.asarray(attrs["classes"], dtype=np.float64))
        self.block_bounds = np.asarray(attrs["block_bounds"], dtype=np.int64)
        self.block_bounds.flags.writeable = False
        self.fingerprint = attrs.get("fingerprint") if self.format_version >= 3 else None
        self.sparse_ids = bool(self.format_version >= 3 and attrs["sparse_ids"])
        self.id_space = attrs["id_space"] if self.sparse_ids else self.n_features
        #: the column ids (sparse layout), set by the backend that reads them
        self.column_ids = None
