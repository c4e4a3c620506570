"""The content fingerprint of a store: one SHA-256 digest of what X and y hold.

Writers feed it block by block as they append (:class:`ContentDigest`), so
it costs no extra pass; :func:`fingerprint_csc` computes the same digest
for data in memory.  It depends only on the content, never on how the
columns were split into blocks or chunks, nor on the format (a Zarr and a
Parquet-long store of the same matrix share it): each stream (column
counts, row numbers, values, column ids, labels) is hashed on its own,
and the digest of the stream digests plus a header (shape, id layout,
dtype, targets) is the fingerprint.  Checkpoints and model files record
it, so that ``--resume`` refuses other data (rows shuffled, a label
changed) and a model names the data it was fitted on.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

__all__ = ["ContentDigest", "fingerprint_csc"]

_STREAMS = ("counts", "indices", "data", "column_ids", "labels")


class ContentDigest:
    """Streaming SHA-256 of a store's content.

    Parameters
    ----------
    n_samples, id_space, id_offset : int
    dtype : numpy dtype
        The value dtype (values are hashed in it, little endian).
    binary : bool
        No values are hashed for a binary store.
    target_type : str
    classes : sequence of float
    """

    def __init__(self, *, n_samples, id_space, id_offset, dtype, binary, target_type,
                 classes):
        self.header = {"n_samples": int(n_samples), "id_space": int(id_space),
                       "id_offset": int(id_offset), "dtype": np.dtype(dtype).name,
                       "binary": bool(binary), "target": str(target_type),
                       "classes": [float(c) for c in classes]}
        self.value_dtype = np.dtype(dtype).newbyteorder("<")
        self._hash = {name: hashlib.sha256() for name in _STREAMS}

    def _feed(self, name, array, dtype) -> None:
        array = np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<"))
        self._hash[name].update(memoryview(array).cast("B"))

    def add_columns(self, indptr, indices, data) -> None:
        """Feed the next columns (CSC offsets starting at 0, rows, values or None)."""
        self._feed("counts", np.diff(np.asarray(indptr, dtype=np.int64)), np.int64)
        self._feed("indices", indices, np.int32)
        if data is not None and not self.header["binary"]:
            self._feed("data", data, self.value_dtype)

    def add_column_ids(self, column_ids) -> None:
        """Feed the column ids of a sparse layout (nothing for a dense one)."""
        if column_ids is not None:
            self._feed("column_ids", column_ids, np.int64)

    def add_labels(self, labels) -> None:
        """Feed the stored target values (float64)."""
        self._feed("labels", labels, np.float64)

    def hexdigest(self) -> str:
        """The fingerprint: 64 hex digits."""
        total = hashlib.sha256()
        total.update(json.dumps(self.header, sort_keys=True).encode())
        for name in _STREAMS:
            total.update(name.encode())
            total.update(self._hash[name].digest())
        return total.hexdigest()


def fingerprint_csc(indptr, indices, data, labels, *, n_samples, id_space, id_offset,
                    dtype, binary, target_type, classes, column_ids=None) -> str:
    """The fingerprint of a CSC matrix and its labels (as a writer computes it)."""
    digest = ContentDigest(n_samples=n_samples, id_space=id_space, id_offset=id_offset,
                           dtype=dtype, binary=binary, target_type=target_type,
                           classes=classes)
    digest.add_columns(indptr, indices, None if binary else data)
    digest.add_column_ids(column_ids)
    digest.add_labels(labels)
    return digest.hexdigest()
