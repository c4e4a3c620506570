"""A store's rows in memory, as CSR arrays numbered by input id.

The kernel bases (``features/rff.py``, ``features/rbf.py``) compute every
candidate from whole rows ``x_i``; a column store holds columns.  This
module reads a store's column blocks once and turns them into CSR arrays
whose column index is the *input index* of each store column: its feature
id minus ``store.id_offset`` (``store.column_ids[column]`` in the sparse
id layout, the column number otherwise).  Two stores with the same ids then
give the same inputs, whatever columns either one lacks.  Memory: the
nonzeros of the data (int64 index + float64 value each), never N x
n_inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ultrafs.errors import ParameterError

__all__ = ["InputRows", "store_rows", "input_index_of_columns"]


@dataclass(frozen=True)
class InputRows:
    """CSR arrays of a store's rows in input numbering.

    Attributes
    ----------
    indptr : int64 array, shape (N + 1,)
    indices : int64 array, shape (nnz,)
        Input indices, increasing within each row.
    data : float64 array, shape (nnz,)
    n_inputs : int
        Inputs kept (``indices < n_inputs``).
    n_dropped : int
        Stored entries of columns whose input index is ``>= n_inputs``
        (left out).
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_inputs: int
    n_dropped: int = 0

    @property
    def n_rows(self) -> int:
        """``N``."""
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        """Stored entries."""
        return int(self.indptr[-1])

    def scipy(self) -> sp.csr_matrix:
        """The rows as a scipy CSR matrix (N x n_inputs), sharing the arrays."""
        return sp.csr_matrix((self.data, self.indices, self.indptr),
                             shape=(self.n_rows, self.n_inputs))

    def take(self, rows) -> "InputRows":
        """The rows ``rows``, in that order."""
        sub = self.scipy()[np.asarray(rows, dtype=np.int64)]
        return InputRows(sub.indptr.astype(np.int64), sub.indices.astype(np.int64),
                         sub.data.astype(np.float64), self.n_inputs)


def input_index_of_columns(store) -> np.ndarray:
    """Input index of every column of ``store`` (int64, increasing)."""
    ids = store.column_ids
    if ids is None:
        return np.arange(store.n_features, dtype=np.int64)
    return np.asarray(ids, dtype=np.int64)


def store_rows(store, n_inputs=None) -> InputRows:
    """Read ``store``'s rows into CSR arrays numbered by input index.

    Parameters
    ----------
    store : ColumnStore
    n_inputs : int, optional
        Keep the columns of input index ``< n_inputs`` only (default: the
        store's ``id_space``, every column).

    Returns
    -------
    InputRows
        Values in float64 (float32 stores convert exactly).

    Raises
    ------
    ParameterError
        One line when a stored value is not finite.
    """
    inputs = input_index_of_columns(store)
    n_inputs = int(store.id_space) if n_inputs is None else int(n_inputs)
    n_kept = int(np.searchsorted(inputs, n_inputs))
    bounds = store.block_bounds()
    indptr_parts, index_parts, value_parts = [np.zeros(1, dtype=np.int64)], [], []
    offset, n_dropped = 0, 0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo, hi = int(lo), int(hi)
        if hi <= lo:
            continue
        block = store.read_range(lo, hi)
        keep = max(0, min(hi, n_kept) - lo)
        n_dropped += int(block.indptr[-1] - block.indptr[keep])
        if keep == 0:
            continue
        stop = int(block.indptr[keep])
        indptr_parts.append(np.asarray(block.indptr[1:keep + 1], dtype=np.int64) + offset)
        index_parts.append(np.asarray(block.indices[:stop]))
        value_parts.append(block.values(np.float64)[:stop])
        offset += stop
    indptr = np.concatenate(indptr_parts)
    indices = np.concatenate(index_parts) if index_parts else np.zeros(0, np.int32)
    data = np.concatenate(value_parts) if value_parts else np.zeros(0)
    if not np.all(np.isfinite(data)):
        raise ParameterError("the data holds values that are not finite (NaN or inf)")
    columns = sp.csc_matrix((data, indices, indptr), shape=(store.n_samples, n_kept))
    rows = columns.tocsr()
    rows.sort_indices()
    return InputRows(rows.indptr.astype(np.int64),
                     inputs[rows.indices.astype(np.int64)],
                     np.ascontiguousarray(rows.data, dtype=np.float64),
                     n_inputs, n_dropped)
