"""A store whose columns are divided by per-column factors (``standardize``).

:class:`ScaledColumnStore` wraps any :class:`~ultrafs.store.base.ColumnStore`
and shows column ``j`` as ``x_j / s_j``: every read goes to the inner store
and divides the block's values by the factors of its columns, so scaling
costs no copy of the data (O(m) for the factors plus the block being read),
keeps every zero a zero (no centring: a sparse store stays sparse) and is
seen by every feature space built on the store (degree 2 multiplies scaled
columns, groups gather them).  Binary columns (``data`` None) come back with
their values ``1 / s_j`` materialised.

The factors are computed elsewhere (:func:`ultrafs.features.scaling.column_scales`:
one streamed statistics pass); this module only applies them.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ultrafs.store.base import ColumnBlock, ColumnStore, SameRowsWrapper

__all__ = ["ScaledColumnStore"]


class ScaledColumnStore(SameRowsWrapper):
    """The columns of ``inner`` divided by ``scales``.

    Parameters
    ----------
    inner : ColumnStore
    scales : float64 array, shape (inner.n_features,)
        Finite factors > 0; column ``j`` reads as ``x_j / scales[j]``
        (computed in float64, returned in the inner store's dtype: the
        values a store written from the scaled matrix would hold).

    Notes
    -----
    Targets, labels, classes, ids, names and block partitions are the inner
    store's.  The fingerprint (when the inner store has one) digests the
    inner fingerprint and the factors: scaled data is other data.
    """

    def __init__(self, inner: ColumnStore, scales):
        super().__init__(inner)
        scales = np.array(scales, dtype=np.float64).reshape(-1)
        if scales.shape != (inner.n_features,):
            raise ValueError(f"scales must have shape ({inner.n_features},), "
                             f"got {scales.shape}")
        if not np.all(np.isfinite(scales) & (scales > 0)):
            raise ValueError("scales must be finite and > 0")
        scales.flags.writeable = False
        self._scales = scales

    def __reduce__(self):
        return (type(self), (self._inner, self._scales))

    def __repr__(self):
        return f"ScaledColumnStore({self._inner!r})"

    # --------------------------------------------------------- attributes
    @property
    def scales(self) -> np.ndarray:
        """The factors, float64, shape (n_features,), read-only."""
        return self._scales

    @property
    def fingerprint(self):
        inner = getattr(self._inner, "fingerprint", None)
        if inner is None:
            return None
        digest = hashlib.sha256(str(inner).encode())
        digest.update(self._scales.tobytes())
        return digest.hexdigest()

    # -------------------------------------------------------------- reads
    def _scaled(self, block: ColumnBlock, factors) -> ColumnBlock:
        """``block`` with column ``t``'s values divided by ``factors[t]``."""
        indptr = np.asarray(block.indptr, dtype=np.int64)
        per_entry = np.repeat(factors, np.diff(indptr))
        if block.data is None:
            if block.column_values is not None:
                values = np.repeat(np.asarray(block.column_values, dtype=np.float64),
                                   np.diff(indptr))
            else:
                values = np.ones(len(per_entry), dtype=np.float64)
        else:
            values = np.asarray(block.data, dtype=np.float64)
        data = (values / per_entry).astype(self.dtype, copy=False)
        return ColumnBlock(block.first_column, indptr, block.indices, data)

    def read_range(self, start: int, stop: int) -> ColumnBlock:
        return self._scaled(self._inner.read_range(start, stop),
                            self._scales[start:stop])

    def read_range_transient(self, start: int, stop: int) -> ColumnBlock:
        return self._scaled(self._inner.read_range_transient(start, stop),
                            self._scales[start:stop])

    def _of_columns(self, columns) -> np.ndarray:
        # columns >= n_features are absent (empty): any factor will do
        columns = np.asarray(columns, dtype=np.int64)
        return self._scales[np.minimum(columns, max(self.n_features - 1, 0))] \
            if self.n_features else np.ones(len(columns))

    def read_columns(self, columns) -> ColumnBlock:
        return self._scaled(self._inner.read_columns(columns), self._of_columns(columns))

    def read_columns_lean(self, columns) -> ColumnBlock:
        return self._scaled(self._inner.read_columns_lean(columns),
                            self._of_columns(columns))
