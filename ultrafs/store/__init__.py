"""Column stores: the storage layer of ultrafs.

``open_store(path)`` opens an on-disk store (Zarr, Parquet-long or a
wide Parquet table, see :mod:`ultrafs.store.detect`); :class:`InMemoryStore` wraps
numpy / scipy.sparse arrays.  Every backend implements
:class:`~ultrafs.store.base.ColumnStore`.
"""

from ultrafs.store.base import ColumnBlock, ColumnStore, even_block_bounds

__all__ = ["ColumnBlock", "ColumnStore", "InMemoryStore", "even_block_bounds",
           "open_store", "as_store"]


def __getattr__(name):
    # InMemoryStore imports scipy.sparse (0.1-0.2 s): only when asked for,
    # so that a run on a store on disk does without it
    if name == "InMemoryStore":
        from ultrafs.store.memory import InMemoryStore

        globals()["InMemoryStore"] = InMemoryStore
        return InMemoryStore
    raise AttributeError(f"module 'ultrafs.store' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"InMemoryStore"})


def open_store(path, **kwargs):
    """Open an on-disk store: Zarr, Parquet-long, or a wide Parquet table.

    Keyword arguments go to :func:`ultrafs.store.detect.open_store`
    (``label``: the label column of a wide Parquet table; ``target``: its
    target type; ``storage_options``: fsspec options of a URL such as
    ``s3://bucket/train.zarr``).

    Raises
    ------
    StoreFormatError
        If ``path`` is not an ultrafs store, is corrupt, or has another
        format version.
    """
    from ultrafs.store.detect import open_store as open_detected

    return open_detected(path, **kwargs)


def as_store(X, y=None, *, block_size=None, target=None, feature_names=None):
    """Return a ColumnStore for a store object, a store path, or arrays.

    ``target`` (the target type, None: detected) and ``feature_names``
    (one name or None per column; None: a DataFrame's column names) apply
    to arrays only.
    """
    import os

    if isinstance(X, ColumnStore):
        return X
    if isinstance(X, (str, os.PathLike)):
        return open_store(X)
    if y is None:
        raise TypeError("y is required when X is an array")
    from ultrafs.store.memory import InMemoryStore

    kwargs = {} if block_size is None else {"block_size": block_size}
    return InMemoryStore(X, y, target=target, feature_names=feature_names, **kwargs)
