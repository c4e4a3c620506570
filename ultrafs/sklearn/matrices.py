"""Matrices for the estimators: a matrix as an unlabelled store, decision
values of selected columns in O(nnz), a materialized block as scipy."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ultrafs.methods.per_column import DENSE_MAX_ENTRIES

__all__ = ["unlabelled_store", "sparse_decision", "has_probabilistic_loss",
           "DENSE_COEF_MAX_ENTRIES", "block_matrix", "take_columns"]


def unlabelled_store(X, id_offset):
    """Wrap a matrix as a store for prediction (labels are not used)."""
    from ultrafs.store.memory import InMemoryStore, compact_csc_arrays

    indptr, indices, data, n_rows, column_ids, id_space = compact_csc_arrays(X)
    return InMemoryStore.from_csc_arrays(
        indptr, indices, data, n_rows,
        np.ones(n_rows), np.array([0.0, 1.0]), id_offset=id_offset,
        column_ids=column_ids, id_space=id_space)


def sparse_decision(X, columns, coef):
    """``X[:, columns] @ coef`` for a scipy matrix, in time and memory O(nnz).

    scipy's column indexing of a CSR matrix allocates an array per column
    of X, which a hashed feature space (2**31 columns and more) cannot
    afford; this goes through the ``(row, column, value)`` triplets.
    """
    coo = X.tocoo()
    columns = np.asarray(columns, dtype=np.int64)
    order = np.argsort(columns, kind="stable")
    sorted_columns = columns[order]
    weights = np.asarray(coef, dtype=np.float64)[order]
    decision = np.zeros((X.shape[0],) + weights.shape[1:], dtype=np.float64)
    if len(sorted_columns) == 0 or coo.nnz == 0:
        return decision
    entry_columns = coo.col.astype(np.int64)
    pos = np.minimum(np.searchsorted(sorted_columns, entry_columns), len(sorted_columns) - 1)
    hit = sorted_columns[pos] == entry_columns
    values = coo.data[hit].astype(np.float64)
    contribution = (values[:, None] * weights[pos[hit]] if weights.ndim == 2
                    else values * weights[pos[hit]])
    np.add.at(decision, coo.row[hit], contribution)
    return decision


def has_probabilistic_loss(estimator):
    """Whether the estimator's model gives probabilities: the method says so
    (``Method.probabilistic``), or its loss does (read from the loss registry)."""
    from ultrafs.solvers.losses import LOSSES, MULTICLASS_LOSSES

    fixed = estimator.method.probabilistic
    if fixed is not None:
        return fixed
    return any(getattr(registry.get(estimator.loss), "probabilistic", False)
               for registry in (LOSSES, MULTICLASS_LOSSES))


#: largest dense ``coef_`` built, in entries (n_classes x n_features_in_;
#: 1 GiB of float64): hashed widths (2**31 columns) keep the compact view
DENSE_COEF_MAX_ENTRIES = DENSE_MAX_ENTRIES


def block_matrix(block, n_samples, n_columns, dtype, like):
    """A materialized :class:`~ultrafs.store.base.ColumnBlock` as a scipy matrix.

    CSC from the block's arrays, then in the format of ``like`` (a scipy
    matrix or array) or CSR when ``like`` is None.
    """
    array_api = like is not None and isinstance(like, sp.sparray)
    make = sp.csc_array if array_api else sp.csc_matrix
    matrix = make((block.values(dtype), block.indices, block.indptr),
                  shape=(n_samples, n_columns))
    return matrix.asformat("csr" if like is None else like.format)


def take_columns(X, columns):
    """``X[:, columns]`` for a scipy matrix, in time and memory O(nnz).

    scipy's column indexing (and scikit-learn's ``safe_mask``) allocates
    an array per column of X, which a hashed width cannot afford; this
    goes through the ``(row, column, value)`` triplets.

    Parameters
    ----------
    X : scipy sparse matrix or array of shape (n_samples, n_features)
    columns : int array of shape (k,)
        Distinct columns, increasing.

    Returns
    -------
    X_columns : scipy sparse, shape (n_samples, k), in X's format (CSR for COO)
    """
    coo = X.tocoo()
    columns = np.asarray(columns, dtype=np.int64)
    entry_columns = coo.col.astype(np.int64)
    pos = np.minimum(np.searchsorted(columns, entry_columns), max(len(columns) - 1, 0))
    hit = (columns[pos] == entry_columns) if len(columns) else np.zeros(coo.nnz, bool)
    make = sp.coo_array if isinstance(X, sp.sparray) else sp.coo_matrix
    out = make((coo.data[hit], (coo.row[hit], pos[hit])), shape=(X.shape[0], len(columns)))
    return out.asformat("csr" if X.format == "coo" else X.format)
