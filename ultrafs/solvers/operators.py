"""Linear operators a datafit is applied through.

An operator maps coefficients ``w`` (``p * K`` floats: ``K`` outputs per
column, row-major) to decision values (``n * K`` floats, row-major) and
back.  :class:`CSCOperator` holds the selected columns in memory as CSC
arrays (what FGM's column cache gives); dense, random-feature or kernel
operators will implement the same methods.

Coefficient blocks (``block_ptr``, in coefficient units) group whole
columns: with ``K`` outputs every boundary is a multiple of ``K``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.kernels import prox_newton as _newton
from ultrafs.kernels import sparse_ops

__all__ = ["CSCOperator"]


class CSCOperator:
    """``X @ W`` for CSC arrays ``X`` (n x p) and ``W`` (p x K).

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X`` (``data`` float32 or float64), already validated.
    n_rows : int
    n_outputs : int, default 1
        ``K``; with 1 the products are the plain matrix-vector ones.
    """

    def __init__(self, indptr, indices, data, n_rows, n_outputs=1):
        self.indptr = indptr
        self.indices = indices
        self.data = data
        self.n_rows = int(n_rows)
        self.n_outputs = int(n_outputs)
        if self.n_outputs < 1:
            raise ParameterError(f"n_outputs must be >= 1, got {n_outputs!r}")
        self._rows = None  # CSR arrays of X, made on first use

    @property
    def n_columns(self) -> int:
        """Columns of ``X``."""
        return len(self.indptr) - 1

    @property
    def n_coef(self) -> int:
        """Coefficients: ``p * K``."""
        return self.n_columns * self.n_outputs

    @property
    def nnz(self) -> int:
        """Stored entries of ``X``."""
        return int(self.indptr[-1])

    def matvec(self, coef):
        """Return ``X @ W`` flattened, shape ``(n * K,)``."""
        if self.n_outputs == 1:
            return sparse_ops.csc_matvec(self.indptr, self.indices, self.data, coef,
                                         self.n_rows)
        return sparse_ops.csc_matmat(self.indptr, self.indices, self.data, coef,
                                     self.n_outputs, self.n_rows)

    def rmatvec(self, r):
        """Return ``X.T @ R`` flattened, shape ``(p * K,)``."""
        if self.n_outputs == 1:
            return sparse_ops.csc_rmatvec(self.indptr, self.indices, self.data, r)
        return sparse_ops.csc_rmatmat(self.indptr, self.indices, self.data, r,
                                      self.n_outputs)

    def column_blocks(self, block_ptr):
        """Return coefficient blocks ``block_ptr`` as column blocks."""
        if self.n_outputs == 1:
            return block_ptr
        if np.any(block_ptr % self.n_outputs):
            raise ParameterError(
                f"coefficient blocks must hold whole columns of {self.n_outputs} "
                "outputs")
        return block_ptr // self.n_outputs

    def block_matvec_into(self, coef, block_ptr, out):
        """Write ``X_h @ W_h`` for every block ``h`` into ``out`` (t, n * K)."""
        if self.n_outputs == 1:
            return sparse_ops.csc_block_matvec_into(self.indptr, self.indices,
                                                    self.data, coef, block_ptr, out)
        return sparse_ops.csc_block_matmat_into(
            self.indptr, self.indices, self.data, coef, self.n_outputs,
            self.column_blocks(block_ptr), out)

    def augmented_gram(self, weights):
        """Return ``[X, -1]' diag(weights) [X, -1]``, dense ``(p + 1, p + 1)``.

        The Hessian of a one-output datafit over ``(w, b)`` jointly (times
        the loss's second derivatives); built row by row from a CSR copy of
        ``X`` (made once per operator) in ``O(sum_i nnz_i^2)``, never from a
        dense ``n x p`` matrix.

        Parameters
        ----------
        weights : ndarray of float64, shape (n,)

        Returns
        -------
        ndarray of float64, shape (p + 1, p + 1)
        """
        if self.n_outputs != 1:
            raise ParameterError("augmented_gram needs one output per sample")
        if self._rows is None:
            X = sp.csc_matrix((self.data, self.indices, self.indptr),
                              shape=(self.n_rows, self.n_columns)).tocsr()
            self._rows = (X.indptr, X.indices, X.data)
        out = np.empty((self.n_columns + 1, self.n_columns + 1), dtype=np.float64)
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        return _newton.csr_augmented_gram(*self._rows, weights, out)
