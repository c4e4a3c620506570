"""Gram operator over CSC columns held in memory.

:class:`SparseGramOperator` implements the interface of
:mod:`ultrafs.solvers.gram_operators` without ever forming a dense
``n_samples x n_features`` matrix:

* ``feature_gram(s)`` is :func:`~ultrafs.kernels.weighted_gram.csc_feature_gram`
  (``O(Σ_i nnz_i²)``, rows of weight 0 free) and one mirror: the same
  bytes as a :class:`~ultrafs.scoring.gram_passes.StoreGramOperator` of one
  block;
* ``sample_gram(d)`` is :func:`~ultrafs.kernels.weighted_gram.csc_sample_gram_add`
  (``O(Σ_j nnz_j²)``, columns of weight 0 free) and one mirror;
* ``rmatmat`` / ``matmat`` are :func:`~ultrafs.kernels.sparse_ops.csc_rmatmat`
  and :func:`~ultrafs.kernels.sparse_ops.csc_matmat`.

The kernels are serial (``feature_gram`` was faster on sparse columns
than the threaded :meth:`CSCOperator.augmented_gram
<ultrafs.solvers.operators.CSCOperator.augmented_gram>`, which also builds
the intercept's row).  Memory beyond the outputs: a CSR copy of the rows
of nonzero weight during ``feature_gram`` (``O(n_samples + nnz)``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.kernels import sparse_ops
from ultrafs.kernels import weighted_gram as _wg
from ultrafs.solvers.gram_operators import check_matrix, check_weights
from ultrafs.solvers.l1_logistic import check_csc_arrays as _check_csc
from ultrafs.solvers.operators import CSCOperator

__all__ = ["SparseGramOperator"]


class SparseGramOperator:
    """Gram operator over in-memory CSC columns (numba kernels).

    Parameters
    ----------
    indptr : array-like of int, shape (n_features + 1,)
    indices : array-like of int, shape (nnz,)
        Row numbers, strictly increasing within each column.
    data : array-like of float32 or float64, shape (nnz,), or None
        Values (other real dtypes are converted to float64); None: every
        stored value is 1.
    n_rows : int
        ``n_samples``.

    Raises
    ------
    ParameterError
        If the arrays are not valid CSC arrays of ``n_rows`` rows, or hold
        NaN or infinite values.
    """

    def __init__(self, indptr, indices, data, n_rows):
        if data is None:
            data = np.ones(len(indices), dtype=np.float32)    # exact ones
        indptr, indices, data = _check_csc(indptr, indices, data, n_rows)
        self.indptr, self.indices, self.data = indptr, indices, data
        self.n_samples = int(n_rows)
        self.n_features = len(indptr) - 1
        self.n_passes = 0

    @classmethod
    def from_scipy(cls, X) -> "SparseGramOperator":
        """The operator of a scipy sparse matrix (or dense array), canonicalised."""
        csc = sp.csc_matrix(X, copy=True)
        csc.sum_duplicates()        # sorts the rows of every column too
        return cls(csc.indptr, csc.indices, csc.data, csc.shape[0])

    @classmethod
    def from_block(cls, block, n_rows) -> "SparseGramOperator":
        """The operator of a store's column block (``ColumnBlock``) of ``n_rows`` rows."""
        data = block.data if block.data is not None else block.values(np.float64)
        return cls(block.indptr, block.indices, data, n_rows)

    def feature_gram(self, s):
        """``(Xᵀ diag(s) X, Xᵀ s)``: float64, ``(n_features, n_features)`` and
        ``(n_features,)``."""
        s = check_weights(s, self.n_samples, "sample weights")
        self.n_passes += 1
        gram = np.empty((self.n_features, self.n_features), dtype=np.float64)
        gram, xs = _wg.csc_feature_gram(self.indptr, self.indices, self.data, s, gram)
        return _wg.mirror_upper(gram), xs

    def sample_gram(self, d):
        """``X diag(d) Xᵀ``: float64 ``(n_samples, n_samples)``."""
        d = check_weights(d, self.n_features, "feature weights")
        self.n_passes += 1
        out = np.zeros((self.n_samples, self.n_samples), dtype=np.float64)
        _wg.csc_sample_gram_add(self.indptr, self.indices, self.data, d, out)
        return _wg.mirror_upper(out)

    def rmatmat(self, V):
        """``Xᵀ V``: float64 ``(n_features, c)`` (a vector ``V`` is one column)."""
        V = check_matrix(V, self.n_samples, "V")
        self.n_passes += 1
        c = V.shape[1]
        out = sparse_ops.csc_rmatmat(self.indptr, self.indices, self.data, V.ravel(), c)
        return out.reshape(self.n_features, c)

    def matmat(self, W):
        """``X W``: float64 ``(n_samples, c)`` (a vector ``W`` is one column)."""
        W = check_matrix(W, self.n_features, "W")
        self.n_passes += 1
        c = W.shape[1]
        out = sparse_ops.csc_matmat(self.indptr, self.indices, self.data, W.ravel(), c,
                                    self.n_samples)
        return out.reshape(self.n_samples, c)

    def columns(self, cols) -> "SparseGramOperator":
        """The operator over the columns ``cols`` (in that order; repeats allowed).

        Raises
        ------
        ParameterError
            If a column number is outside ``0..n_features - 1``.
        """
        cols = np.asarray(cols, dtype=np.int64).reshape(-1)
        if cols.size and (cols.min() < 0 or cols.max() >= self.n_features):
            raise ParameterError(f"column numbers must lie in 0..{self.n_features - 1}")
        sub = CSCOperator(self.indptr, self.indices, self.data, self.n_samples).restrict(cols)
        return SparseGramOperator(sub.indptr, sub.indices, sub.data, self.n_samples)
