"""Linear operators a datafit is applied through.

An operator maps coefficients ``w`` (``p * K`` floats: ``K`` outputs per
column, row-major) to decision values (``n * K`` floats, row-major) and
back.  :class:`CSCOperator` holds the selected columns in memory as CSC
arrays (what FGM's column cache gives); dense, random-feature or kernel
operators will implement the same methods.

Coefficient blocks (``block_ptr``, in coefficient units) group whole
columns: with ``K`` outputs every boundary is a multiple of ``K``.

Threads: every product runs the ``*_parallel`` twin of its kernel where
:func:`ultrafs.kernels.row_chunks.dispatch` allows it (several numba
threads, a safe threading layer), the serial kernel otherwise; the two give
the same bytes.  The row-parallel products need the row indices sorted
within every column (what the stores and the column cache hold): the
operator checks that once (:func:`~ultrafs.kernels.sparse_ops.csc_row_range_starts`)
and keeps to the serial kernels when they are not.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.kernels import hessian_gram as _gram
from ultrafs.kernels import sparse_ops
from ultrafs.kernels.row_chunks import MIN_PARALLEL_WORK, dispatch

__all__ = ["CSCOperator"]

_NO_VALUES = np.empty(0)
#: rows of X turned into CSR at a time by the Hessian (about 2**18 rows:
#: ~36 MB at 34 entries a row)
GRAM_WINDOW_ROWS = 2 ** 18


class CSCOperator:
    """``X @ W`` for CSC arrays ``X`` (n x p) and ``W`` (p x K).

    Parameters
    ----------
    indptr, indices, data : ndarray
        CSC arrays of ``X`` (``data`` float32 or float64), already validated.
        ``data`` may be None when ``column_values`` gives each column's one
        value: the products of one output then never read (nor build) a
        value per entry; the others build ``data`` once, when first needed.
    n_rows : int
    n_outputs : int, default 1
        ``K``; with 1 the products are the plain matrix-vector ones.
    column_values : ndarray of float64, shape (p,), optional
        The single value of every column (what
        :func:`~ultrafs.kernels.sparse_ops.column_values` finds).
    """

    def __init__(self, indptr, indices, data, n_rows, n_outputs=1,
                 column_values=None):
        self.indptr = indptr
        self.indices = indices
        self._data = data
        self.n_rows = int(n_rows)
        self.n_outputs = int(n_outputs)
        if self.n_outputs < 1:
            raise ParameterError(f"n_outputs must be >= 1, got {n_outputs!r}")
        if data is None and column_values is None:
            raise ParameterError("a CSC operator needs data or column_values")
        self._rows = None  # CSR arrays of X, made on first use
        self._gram_work = None  # the Gram's additions per row (balance)
        self._gram_buffers = None  # the windows' CSR arrays (windowed Gram)
        # (one value per column, or None)
        self._constants = (None if column_values is None
                           else (np.ascontiguousarray(column_values, dtype=np.float64),))
        self._ranges = None  # {fine: (starts per column, row ranges)}, or False

    @property
    def data(self):
        """A value per entry (built from the column values, once, if not given)."""
        if self._data is None:
            self._data = np.repeat(self._constants[0], np.diff(self.indptr))
        return self._data

    def _values_or_nothing(self):
        """``data``, or an empty array when the kernel reads column values."""
        if self._data is None:
            return _NO_VALUES
        return self._data

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

    def _row_ranges(self, fine=False):
        """:meth:`_ranges_of_rows`; the first call also readies the small paths."""
        if self._ranges is None:
            _compile_small_paths(self._data.dtype if self._data is not None
                                 else np.dtype(np.float64), self.n_outputs)
        return self._ranges_of_rows(fine)

    def _ranges_of_rows(self, fine):
        """``(starts, bounds)`` of the row-range kernels, or None (unsorted rows).

        ``fine``: the ranges of the CSR copy (4096 rows), else those of the
        products (16 times coarser).
        """
        if self._ranges is None:
            bounds = sparse_ops.row_ranges(self.n_rows)
            starts, ok = sparse_ops.csc_row_range_starts(self.indptr, self.indices,
                                                         bounds)
            if ok:
                coarse = sparse_ops.coarser_ranges(starts, bounds,
                                                   sparse_ops.PRODUCT_RANGE_FACTOR)
                self._ranges = {True: (starts, bounds), False: coarse}
            else:
                self._ranges = False
        return self._ranges[fine] if self._ranges else None

    def _colval(self):
        """:meth:`_column_values`, or an empty array (the kernels then read ``data``)."""
        values = self._column_values()
        return _NO_VALUES if values is None else values

    def matvec(self, coef):
        """Return ``X @ W`` flattened, shape ``(n * K,)``."""
        one_block = np.array([0, self.n_columns * self.n_outputs], dtype=np.int64)
        out = np.empty((1, self.n_rows * self.n_outputs), dtype=np.float64)
        return self.block_matvec_into(coef, one_block, out)[0]

    def rmatvec(self, r):
        """Return ``X.T @ R`` flattened, shape ``(p * K,)``."""
        ranges = self._row_ranges() if self.nnz >= MIN_PARALLEL_WORK else None
        if ranges is None:
            if self.n_outputs == 1:
                return sparse_ops.csc_rmatvec(self.indptr, self.indices, self.data, r)
            return sparse_ops.csc_rmatmat(self.indptr, self.indices, self.data, r,
                                          self.n_outputs)
        if self.n_outputs == 1:
            head = (self.indptr, self.indices, self._values_or_nothing(), self._colval())
        else:
            head = (self.indptr, self.indices, self.data, _NO_VALUES)
        args = (*head, r, self.n_outputs, *ranges)
        return dispatch(lambda: sparse_ops.csc_rmatvec_ranges(*args),
                        lambda: sparse_ops.csc_rmatvec_ranges_parallel(*args),
                        self.nnz * self.n_outputs)

    def rmatvec_hess(self, r, s):
        """Return ``(X' r, (X∘X)' s)``: the gradient and the Hessian diagonal
        products of the l1 solvers (one output)."""
        if self.n_outputs != 1:
            raise ParameterError("rmatvec_hess takes one output per sample")
        if getattr(self, "_squares", None) is None:
            self._squares = np.ascontiguousarray(np.square(self.data, dtype=np.float64))
        squares = CSCOperator(self.indptr, self.indices, self._squares, self.n_rows)
        return self.rmatvec(r), squares.rmatvec(np.ascontiguousarray(s, dtype=np.float64))

    def _scipy(self):
        return sp.csc_matrix((self.data, self.indices, self.indptr),
                             shape=(self.n_rows, self.n_columns))

    def columns(self, cols):
        """Dense ``X[:, cols]``, float64, Fortran order (one output)."""
        cols = np.asarray(cols, dtype=np.int64)
        return np.asfortranarray(self._scipy()[:, cols].toarray(), dtype=np.float64)

    def take_rows(self, rows):
        """Dense ``X[rows]``, float64, C order (one output)."""
        indptr, indices, data = self._csr()
        if len(data) != len(indices):   # pattern-only rows: rebuild with the values
            X = self._scipy().tocsr()
        else:
            X = sp.csr_matrix((data, indices, indptr), shape=(self.n_rows, self.n_columns))
        rows = np.asarray(rows, dtype=np.int64)
        return np.ascontiguousarray(X[rows].toarray(), dtype=np.float64)

    def restrict(self, cols):
        """A :class:`CSCOperator` of the columns ``cols`` only (one output)."""
        cols = np.asarray(cols, dtype=np.int64)
        X = self._scipy()[:, cols]
        X.sort_indices()
        return CSCOperator(X.indptr.astype(np.int64), X.indices, X.data, self.n_rows)

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
        """Write ``X_h @ W_h`` for every block ``h`` into ``out`` (t, n * K).

        By ranges of rows (sorted columns, at least ``MIN_PARALLEL_WORK``
        entries), in parallel where allowed; the plain kernels otherwise.
        """
        ranges = self._row_ranges() if self.nnz >= MIN_PARALLEL_WORK else None
        if self.n_outputs == 1 and ranges is not None:
            args = (self.indptr, self.indices, self._values_or_nothing(),
                    self._colval(), coef, block_ptr, *ranges, out)
            return dispatch(lambda: sparse_ops.csc_block_matvec_into_ranges(*args),
                            lambda: sparse_ops.csc_block_matvec_into_parallel(*args))
        head = (self.indptr, self.indices, self.data)
        if self.n_outputs == 1:
            return sparse_ops.csc_block_matvec_into(*head, coef, block_ptr, out)
        blocks = self.column_blocks(block_ptr)
        if ranges is None:
            return sparse_ops.csc_block_matmat_into(*head, coef, self.n_outputs, blocks,
                                                    out)
        args = (*head, coef, self.n_outputs, blocks, *ranges, out)
        return dispatch(lambda: sparse_ops.csc_block_matmat_into_ranges(*args),
                        lambda: sparse_ops.csc_block_matmat_into_parallel(*args))

    def _column_values(self):
        """Each column's single value (float64, p), or None where a column has two."""
        if self._constants is None:
            values, constant = sparse_ops.column_values(self.indptr, self.data)
            self._constants = (values if constant else None,)
        return self._constants[0]

    def _csr(self):
        """The CSR arrays of ``X`` (made once), entries of a row in column order.

        With one value per column (:meth:`_column_values`) only the pattern
        is copied (``data`` empty).
        """
        if self._rows is None:
            ranges = (self._row_ranges(fine=True) if self.nnz >= MIN_PARALLEL_WORK
                      else None)
            if ranges is None:
                X = sp.csc_matrix((self.data, self.indices, self.indptr),
                                  shape=(self.n_rows, self.n_columns)).tocsr()
                self._rows = (X.indptr, X.indices, X.data)
            else:
                if self._column_values() is not None:
                    data = _NO_VALUES
                else:
                    data = self.data
                args = (self.indptr, self.indices, data, self.n_rows, *ranges)
                self._rows = dispatch(
                    lambda: sparse_ops.csc_to_csr(*args),
                    lambda: sparse_ops.csc_to_csr_parallel(*args))
        return self._rows

    def augmented_gram(self, weights):
        """Return ``[X, -1]' diag(weights) [X, -1]``, dense ``(p + 1, p + 1)``.

        The Hessian of a one-output datafit over ``(w, b)`` jointly (times
        the loss's second derivatives), in ``O(sum_i nnz_i^2)``, never from
        a dense ``n x p`` matrix.  Large problems with sorted columns take
        their rows a window at a time, each window turned into CSR and
        added (:func:`~ultrafs.kernels.prox_gram.csc_augmented_gram`): no
        CSR copy of ``X`` is held, and in parallel each thread owns a range
        of the Gram's rows balanced by an estimate of the additions they
        take.  Small or unsorted ones take a CSR copy (made once per
        operator).  Either way the same bytes as the serial CSR kernel.
        When every column holds one value (degree-2 features of binary
        data) the Gram of the pattern is built and scaled
        (:func:`~ultrafs.kernels.prox_gram.csr_constant_gram`, about 20%
        faster, and no value per entry is read).

        Parameters
        ----------
        weights : ndarray of float64, shape (n,)

        Returns
        -------
        ndarray of float64, shape (p + 1, p + 1)
        """
        if self.n_outputs != 1:
            raise ParameterError("augmented_gram needs one output per sample")
        size = self.n_columns + 1
        out = np.empty((size, size), dtype=np.float64)
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        ranges = (self._row_ranges(fine=True) if self.nnz >= MIN_PARALLEL_WORK
                  else None)
        if ranges is not None:
            return self._windowed_gram(weights, ranges, out)
        indptr, indices, data = self._csr()
        values = self._column_values() if len(data) < self.nnz else None

        def bounds():
            if self._gram_work is None:
                self._gram_work = _gram.gram_row_work(indptr, indices, size)
            return _gram.gram_row_bounds(self._gram_work, numba.get_num_threads())

        if values is not None:
            scale = np.append(values, 1.0)
            return dispatch(
                lambda: _gram.csr_constant_gram(indptr, indices, weights, scale, out),
                lambda: _gram.csr_constant_gram_parallel(indptr, indices, weights,
                                                           scale, bounds(), out),
                self.nnz)
        return dispatch(
            lambda: _gram.csr_augmented_gram(indptr, indices, data, weights, out),
            lambda: _gram.csr_augmented_gram_parallel(indptr, indices, data, weights,
                                                        bounds(), out),
            self.nnz)

    def multi_gram(self, a, u):
        """Return ``sum_i ([x_i, -1]' [x_i, -1]) kron (diag(a_i) - u_i u_i')``.

        The Hessian of a K-output datafit over ``(W, b)`` jointly, dense
        ``((p + 1) K, (p + 1) K)`` (coefficient ``(j, k)`` at ``j K + k``, the
        intercepts last), from the CSR arrays of ``X`` (a copy made once per
        operator) in ``O(K^2 sum_i (nnz_i + 1)^2)``
        (:func:`~ultrafs.kernels.prox_gram.csr_multi_gram`).  Serial: the
        solvers build it only for few coefficients.

        Parameters
        ----------
        a : ndarray of float64, shape (n * K,)
        u : ndarray of float64, shape (n * K,), or (0,) for diagonal ``W_i``

        Returns
        -------
        ndarray of float64, shape ((p + 1) K, (p + 1) K)
        """
        K = self.n_outputs
        size = (self.n_columns + 1) * K
        out = np.empty((size, size), dtype=np.float64)
        indptr, indices, data = self._csr()
        if len(data) < self.nnz:   # pattern only: one value per column
            colval, data = self._column_values(), _NO_VALUES
        else:
            colval = _NO_VALUES
        return _gram.csr_multi_gram(indptr, indices, data, colval,
                                      np.ascontiguousarray(a, dtype=np.float64),
                                      np.ascontiguousarray(u, dtype=np.float64), K, out)

    def multi_gram_work(self):
        """``sum_i (nnz_i + 1)^2``: :meth:`multi_gram`'s additions per ``K^2``."""
        counts = np.bincount(self.indices, minlength=self.n_rows).astype(np.float64)
        return float(np.sum((counts + 1.0) ** 2))

    def _windowed_gram(self, weights, ranges, out):
        """:meth:`augmented_gram` from the CSC arrays, a window of rows at a time."""
        starts, bounds = ranges
        values = self._column_values()
        if values is not None:
            scale, data = np.append(values, 1.0), _NO_VALUES
        else:
            scale, data = _NO_VALUES, self.data
        range_rows = max(int(bounds[1] - bounds[0]), 1) if len(bounds) > 1 else 1
        window = max(1, GRAM_WINDOW_ROWS // range_rows)
        if self._gram_work is None:
            self._gram_work = _gram.csc_gram_work(self.indptr, self.n_rows)
        if self._gram_buffers is None:
            # the windows' CSR arrays, kept for the operator's next Grams
            self._gram_buffers = _gram.window_buffers(data, starts, bounds, window)
        args = (self.indices, data, weights, scale, starts, bounds, window,
                self._gram_buffers)
        return dispatch(
            lambda: _gram.csc_augmented_gram(*args, out),
            lambda: _gram.csc_augmented_gram_parallel(
                *args, _gram.gram_row_bounds(self._gram_work, numba.get_num_threads()),
                out),
            self.nnz)


_SMALL_PATHS_DONE = set()


def _compile_small_paths(dtype, n_outputs):
    """Run the small-problem kernels once on a 3 x 2 toy with these dtypes.

    A large problem takes the row-range and threaded kernels, a small one
    the plain kernels: without this, the first small fit after a first large
    one (the README's demo, then any small data) compiles the plain kernels
    then, with the compile notice again.  Here the first large problem of a
    process compiles (or, from the cache, loads in microseconds) them too.
    """
    key = (np.dtype(dtype).str, int(n_outputs))
    if key in _SMALL_PATHS_DONE:
        return
    _SMALL_PATHS_DONE.add(key)
    for values in ([1.0, 2.0, 3.0], [1.0, 1.0, 3.0]):    # general, one per column
        toy = CSCOperator(np.array([0, 2, 3], dtype=np.int64),
                          np.array([0, 2, 1], dtype=np.int32),
                          np.array(values, dtype=dtype), 3, n_outputs)
        coef = np.ones(toy.n_coef)
        toy.matvec(coef)
        toy.rmatvec(np.ones(3 * n_outputs))
        toy.block_matvec_into(coef, np.array([0, n_outputs, 2 * n_outputs],
                                             dtype=np.int64),
                              np.empty((2, 3 * n_outputs)))
        if n_outputs == 1:
            toy.augmented_gram(np.ones(3))
