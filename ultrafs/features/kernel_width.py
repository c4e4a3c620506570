"""The median heuristic for the width of a Gaussian kernel.

``σ`` of ``exp(-||x - y||² / σ²)`` defaults to the median of the pairwise
Euclidean distances between rows (the digest's §A2.5), taken over a seeded
subsample of at most ``max_points`` rows, so its cost does not grow with
the data (one ``max_points²`` Gram matrix of sparse rows).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ultrafs.errors import ParameterError

__all__ = ["median_sigma", "MAX_POINTS"]

#: rows of the subsample by default
MAX_POINTS = 1000


def _as_csr(store_or_csr):
    """A scipy CSR matrix of the rows (a store's rows in input numbering)."""
    if sp.issparse(store_or_csr):
        return sp.csr_matrix(store_or_csr, dtype=np.float64)
    if hasattr(store_or_csr, "scipy"):           # InputRows
        return store_or_csr.scipy()
    if hasattr(store_or_csr, "block_bounds"):    # a ColumnStore
        from ultrafs.features.input_rows import store_rows

        return store_rows(store_or_csr).scipy()
    return sp.csr_matrix(np.asarray(store_or_csr, dtype=np.float64))


def held_columns(X) -> sp.csr_matrix:
    """``X`` (CSR) without its empty columns: the same rows over the columns
    that hold a value, in their order.

    Distances and Gram products do not change, and scipy's ``X @ X.T``
    allocates an index array per column (8 GiB for a hashed width of 2**31
    columns), so this keeps its cost to the nonzeros.  The products add
    the same terms in the same order: the result is bit-identical.
    """
    held, position = np.unique(X.indices, return_inverse=True)
    return sp.csr_matrix((X.data, position.reshape(-1), X.indptr),
                         shape=(X.shape[0], len(held)))


def pairwise_distances_of(X) -> np.ndarray:
    """Euclidean distances of the pairs ``i < j`` of the rows of ``X`` (CSR)."""
    X = held_columns(X)
    squares = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    gram = (X @ X.T).toarray()
    d2 = squares[:, None] + squares[None, :] - 2.0 * gram
    upper = np.triu_indices(X.shape[0], k=1)
    return np.sqrt(np.maximum(d2[upper], 0.0))


def median_sigma(store_or_csr, *, seed=0, max_points=MAX_POINTS) -> float:
    """Median pairwise Euclidean distance of (a subsample of) the rows.

    Parameters
    ----------
    store_or_csr : ColumnStore, InputRows, scipy sparse matrix or array
        The rows (a store's are read in input numbering).
    seed : int, default 0
        Seed of the subsample (``np.random.default_rng(seed)``, rows drawn
        without replacement, then sorted).
    max_points : int, default 1000
        At most this many rows are used.

    Returns
    -------
    sigma : float
        The median distance; when it is 0 (most rows identical), the mean
        of the positive distances.

    Raises
    ------
    ParameterError
        One line when fewer than two rows are given or every pair of rows
        is identical (no width can be inferred).
    """
    X = _as_csr(store_or_csr)
    n = X.shape[0]
    if n < 2:
        raise ParameterError("the kernel width needs at least two rows "
                             "(give sigma)")
    if n > max_points:
        rows = np.sort(np.random.default_rng(seed).choice(n, int(max_points),
                                                          replace=False))
        X = X[rows]
    distances = pairwise_distances_of(X)
    sigma = float(np.median(distances))
    if sigma == 0.0:
        positive = distances[distances > 0]
        if len(positive) == 0:
            raise ParameterError("every row is the same: the kernel width cannot "
                                 "be inferred (give sigma)")
        sigma = float(np.mean(positive))
    if not math.isfinite(sigma):
        raise ParameterError("the kernel width is not finite (give sigma)")
    return sigma
