"""Arrays over every input column, built only when read.

A fitted estimator's per-column attributes (``coef_``, MSLR's
``mslr_coef_``, GSR-FS's ``ranking_``, ``scores_``) have scikit-learn's
shape ``(n_features_in_,)`` or ``(n_outputs, n_features_in_)``.  The fit
never needs them: it keeps the values of the columns the data holds.  A
:class:`PerColumn` holds those values and their columns, and writes the
dense array when the attribute is read; over a hashed width (``2**31``
ids, a handful used) that array would not fit, so above
:data:`DENSE_MAX_ENTRIES` entries reading it is refused in one line that
names the compact attributes to use instead.  Ids never cost memory: only
the columns the data holds do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PerColumn", "DENSE_MAX_ENTRIES", "check_dense_size"]

#: largest per-column array written, in entries (n_outputs x n_features_in_;
#: 1 GiB of float64): hashed widths (2**31 columns) keep the compact view
DENSE_MAX_ENTRIES = 2**27


def check_dense_size(name: str, n_rows: int, n_columns: int, compact: str,
                     unit: str = "weights") -> None:
    """Refuse, in one line, a dense ``n_rows x n_columns`` array over
    :data:`DENSE_MAX_ENTRIES` entries.

    Raises
    ------
    ValueError
        ``"{name} would hold {n_rows} x {n_columns} {unit}; use {compact}"``.
    """
    if int(n_rows) * int(n_columns) > DENSE_MAX_ENTRIES:
        raise ValueError(f"{name} would hold {int(n_rows)} x {int(n_columns)} {unit}; "
                         f"use {compact}")


@dataclass(frozen=True)
class PerColumn:
    """An array over every input column, of which the data set few.

    Parameters
    ----------
    name : str
        The attribute's name (for the refusal).
    columns : int64 array of shape (k,)
        Input columns with a value (distinct).
    values : array of shape (k,) or (k, n_outputs)
        Their values.
    n_columns : int
        Every input column (``n_features_in_``).
    fill : scalar
        The value of the other columns.
    transpose : bool
        ``values`` of shape (k, n_outputs) give an array of shape
        (n_outputs, n_columns) (``coef_``); else (n_columns,) or
        (n_columns, n_outputs).
    compact : str
        What to read instead, for the refusal.
    unit : str
        What the entries are, for the refusal ("weights", "ranks"...).
    """

    name: str
    columns: np.ndarray
    values: np.ndarray
    n_columns: int
    fill: float = 0
    transpose: bool = False
    compact: str = "the compact attributes"
    unit: str = "weights"

    def dense(self) -> np.ndarray:
        """The whole array (a fresh one at each call).

        Raises
        ------
        ValueError
            One line when it would exceed :data:`DENSE_MAX_ENTRIES` entries.
        """
        values = np.asarray(self.values)
        outputs = 1 if values.ndim == 1 else values.shape[1]
        if self.transpose or values.ndim == 1:
            check_dense_size(self.name, outputs, self.n_columns, self.compact, self.unit)
        else:
            check_dense_size(self.name, self.n_columns, outputs, self.compact, self.unit)
        columns = np.asarray(self.columns, dtype=np.int64)
        if self.transpose:
            out = np.full((outputs, int(self.n_columns)), self.fill, dtype=values.dtype)
            out[:, columns] = values.reshape(len(columns), outputs).T
            return out
        out = np.full((int(self.n_columns),) + values.shape[1:], self.fill,
                      dtype=values.dtype)
        out[columns] = values
        return out

    def __array__(self, dtype=None, copy=None):
        out = self.dense()
        return out if dtype is None else out.astype(dtype, copy=False)
