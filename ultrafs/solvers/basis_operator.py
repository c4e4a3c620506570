"""The linear operator of a generated basis: random Fourier features or the
exact RBF kernel, made tile by tile (seed 001, §3.1).

``Φ`` (N x M) is never read from storage: its entries are functions of the
input rows ``X`` (CSR, N x n_inputs, in memory) and of the basis.  A *tile*
is a chunk of ``row_chunk`` rows times a *group* of ``G = 256`` basis
functions (``kernels/basis_tiles.py``).  Two bases:

* :class:`RFFBasis`: ``Φ[i, k] = sqrt(2/D) cos(ω_k' x_i + b_k)``, the
  directions and phases of group ``g`` drawn again from
  ``SeedSequence([seed, g])`` whenever they are needed (:func:`rff_group`);
  never stored, one group in memory at a time.
* :class:`RBFBasis`: ``Φ[i, k] = exp(-||x_i - p_k||² / σ²)`` for points
  ``p_k`` (CSR).

:class:`BasisOperator` gives the products the l1 solvers need.  Its memory
budget is ``cache_bytes`` (default :data:`DEFAULT_CACHE_BYTES`, 1 GiB):

* ``N * M * 8 <= cache_bytes``: ``Φ`` is made once, on the first product,
  and held as one Fortran-ordered float64 ``(N, M)`` array (column ``k``
  contiguous: CGD's columns are copies of memory, ``Φ w`` reads only the
  columns of nonzero weights);
* otherwise every product makes its tiles again, one at a time (memory
  ``row_chunk * G`` floats plus one block of :data:`PRODUCT_ROWS` rows).

Summation orders are fixed and the same in both modes, so the results are
the same bytes for any ``row_chunk``, with or without the basis in memory,
and for any number of threads:

* ``Φ w``: each entry adds the terms of the nonzero ``w_k`` in order of
  ``k`` (``kernels/basis_tiles.py``: :func:`columns_matvec_acc` on the
  array, :func:`tile_matvec_acc` on tiles made of those columns);
* ``Φ' r`` and ``(Φ∘Φ)' s``: per group of :data:`GROUP` functions and per
  fixed block of :data:`PRODUCT_ROWS` rows, a BLAS product (``block.T @
  r``, one thread: :func:`one_blas_thread`) of the Fortran-ordered block;
  the blocks' partials are added in row order.  Each entry of a ``dgemv``
  with a transposed matrix is one dot product, computed by one thread.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels import basis_tiles as _tiles
from ultrafs.kernels.row_chunks import dispatch
from ultrafs.progress import phase
from ultrafs.solvers.blas_threads import one_blas_thread

__all__ = ["BasisOperator", "RFFBasis", "RBFBasis", "rff_group", "GROUP",
           "MAX_GROUP_BYTES", "max_group_inputs", "DEFAULT_ROW_CHUNK",
           "DEFAULT_CACHE_BYTES", "PRODUCT_ROWS"]

#: basis functions per group (a tile's width; the unit of the RFF draws)
GROUP = 256
#: largest dense group of the basis (``n_inputs x GROUP`` floats)
MAX_GROUP_BYTES = 256 * 2 ** 20
#: rows per tile by default
DEFAULT_ROW_CHUNK = 4096
#: the memory budget of a basis by default: ``Φ`` (``N * M * 8`` bytes) is
#: held in memory up to 1 GiB (a9a's 32,561 rows x 1,000 features: 260 MB)
DEFAULT_CACHE_BYTES = 2 ** 30
#: rows per block of the products ``Φ' r`` (part of the summation order:
#: the blocks' partials are added in row order, whatever ``row_chunk``)
PRODUCT_ROWS = 4096


def max_group_inputs() -> int:
    """The most inputs one dense group of :data:`GROUP` functions may have."""
    return MAX_GROUP_BYTES // (GROUP * 8)


def rff_group(seed, g, n_inputs, sigma, width=GROUP):
    """Directions and phases of random Fourier feature group ``g``.

    Drawn from ``np.random.default_rng(np.random.SeedSequence([seed, g]))``:
    ``standard_normal((n_inputs, 256)) * sqrt(2) / sigma``, then
    ``uniform(0, 2π, 256)``; the first ``width`` of each are kept, so
    feature ``256 g + c`` is the same for every ``D > 256 g + c``.

    Parameters
    ----------
    seed : int >= 0
    g : int >= 0
    n_inputs : int
    sigma : float > 0
        Kernel width of ``exp(-||x - y||² / sigma²)``: ``ω ~ N(0, 2/σ² I)``.
    width : int, 1..256

    Returns
    -------
    omega : float64 array, shape (n_inputs, width), C-ordered
    b : float64 array, shape (width,)
    """
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(g)]))
    omega = rng.standard_normal((int(n_inputs), GROUP))
    omega *= math.sqrt(2.0)
    omega /= float(sigma)
    b = rng.uniform(0.0, 2.0 * math.pi, GROUP)
    if width < GROUP:
        omega = np.ascontiguousarray(omega[:, :width])
        b = b[:width].copy()
    return omega, b


#: entries of a tile below which its kernels run serially: a thread launch
#: costs more than the work (a 1000 x 300 RFF matvec took 14 ms on two
#: threads of a busy 2-core machine, 0.23 ms on one)
MIN_TILE_PARALLEL = 2 ** 20


def _run(serial, parallel, work, *args):
    """A kernel pair through :func:`~ultrafs.kernels.row_chunks.dispatch`
    (serial below :data:`MIN_TILE_PARALLEL` entries; the same bytes either way)."""
    if work < MIN_TILE_PARALLEL:
        return serial(*args)
    return dispatch(lambda: serial(*args), lambda: parallel(*args), work)


class _Rows:
    """Input rows as the tile kernels read them (CSR, float64 values)."""

    def __init__(self, indptr, indices, data, sq=None):
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(indices, dtype=np.int64)
        self.data = np.ascontiguousarray(data, dtype=np.float64)
        self.sq = sq

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    def take(self, rows) -> "_Rows":
        """The rows ``rows`` (in that order), with their squared norms."""
        counts = (self.indptr[rows + 1] - self.indptr[rows]).astype(np.int64)
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        starts = np.repeat(self.indptr[rows] - indptr[:-1], counts)
        positions = starts + np.arange(indptr[-1], dtype=np.int64)
        sq = None if self.sq is None else self.sq[rows]
        return _Rows(indptr, self.indices[positions], self.data[positions], sq)


def _kept_indptr(indptr, keep):
    """Row pointers after dropping the entries where ``keep`` is False."""
    kept = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep, out=kept[1:])
    return kept[np.asarray(indptr, dtype=np.int64)]


def _check_csr(indptr, indices, data, what):
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    data = np.asarray(data)
    if indptr.ndim != 1 or len(indptr) < 1 or indptr[0] != 0 \
            or np.any(np.diff(indptr) < 0) or indptr[-1] != len(indices) \
            or len(indices) != len(data):
        raise ParameterError(f"{what}: not CSR arrays (indptr from 0, non-decreasing, "
                             "ending at len(indices) == len(data))")
    if len(indices) and indices.min() < 0:
        raise ParameterError(f"{what}: negative column index")
    if not np.all(np.isfinite(data)):
        raise ParameterError(f"{what}: values must be finite")


def _check_sigma(sigma):
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.integer,
                                                         np.floating)) \
            or not math.isfinite(sigma) or not sigma > 0:
        raise ParameterError(f"sigma (kernel width) must be a finite number > 0, "
                             f"got {sigma!r}")
    return float(sigma)


class RFFBasis:
    """Random Fourier features of the Gaussian kernel ``exp(-||x-y||²/σ²)``.

    ``Φ[i, k] = sqrt(2/D) cos(ω_k' x_i + b_k)`` with the directions and
    phases of :func:`rff_group`; inputs with an index ``>= n_inputs``
    contribute nothing.

    Parameters
    ----------
    n_inputs : int >= 1
        Rows of Ω (at most :func:`max_group_inputs`).
    n_components : int >= 1
        ``D``.
    sigma : float > 0
    seed : int >= 0
    """

    def __init__(self, n_inputs, n_components, sigma, seed):
        self.n_inputs = int(n_inputs)
        self.n_coef = int(n_components)
        self.sigma = _check_sigma(sigma)
        self.seed = int(seed)
        if not 1 <= self.n_inputs <= max_group_inputs():
            raise ParameterError(
                f"n_inputs must be in 1..{max_group_inputs()} (one group of "
                f"{GROUP} directions holds n_inputs x {GROUP} floats, at most "
                f"{MAX_GROUP_BYTES // 2 ** 20} MiB), got {n_inputs!r}")
        if self.n_coef < 1 or self.seed < 0:
            raise ParameterError("n_components must be >= 1 and seed >= 0")
        self.scale = math.sqrt(2.0 / self.n_coef)

    def prepare_rows(self, indptr, indices, data) -> _Rows:
        """The rows with the entries of inputs ``>= n_inputs`` dropped."""
        indices = np.asarray(indices, dtype=np.int64)
        keep = indices < self.n_inputs
        if keep.all():
            return _Rows(indptr, indices, data)
        return _Rows(_kept_indptr(indptr, keep), indices[keep], np.asarray(data)[keep])

    def group(self, g, sel=None):
        """Group ``g``'s arrays for :meth:`fill` (only the local columns
        ``sel`` when given)."""
        width = min(GROUP, self.n_coef - GROUP * g)
        omega, b = rff_group(self.seed, g, self.n_inputs, self.sigma, width)
        if sel is not None:
            omega, b = np.ascontiguousarray(omega[:, sel]), b[sel].copy()
        return omega, b

    def fill(self, rows, r0, r1, group, out):
        """Tile of rows ``r0:r1`` into ``out`` (shape (r1 - r0, width))."""
        omega, b = group
        work = (int(rows.indptr[r1] - rows.indptr[r0]) + (r1 - r0)) * len(b)
        _run(_tiles.rff_tile, _tiles.rff_tile_parallel, work, rows.indptr,
             rows.indices, rows.data, r0, r1, omega, b, self.scale, out)


class RBFBasis:
    """Exact Gaussian kernel columns ``Φ[i, k] = exp(-||x_i - p_k||² / σ²)``.

    The inner products run over the inputs some point has (their sorted
    union ``U``): rows are mapped to it once (:meth:`prepare_rows`), their
    squared norms taken over all their entries, so a row's inputs that no
    point has still count in its distances.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of the points (M x n_inputs)
    sigma : float > 0
    """

    def __init__(self, indptr, indices, data, sigma):
        _check_csr(indptr, indices, data, "RBF points")
        self.sigma = _check_sigma(sigma)
        self.sigma2 = self.sigma * self.sigma
        indices = np.asarray(indices, dtype=np.int64)
        self.inputs = np.unique(indices)
        if len(self.inputs) > max_group_inputs():
            raise ParameterError(
                f"the RBF points use {len(self.inputs)} distinct inputs; at most "
                f"{max_group_inputs()} fit a group of {GROUP} dense points")
        self.points = _Rows(indptr, np.searchsorted(self.inputs, indices), data)
        self.points.sq = _tiles.csr_row_squares(self.points.indptr, self.points.data)
        self.n_coef = self.points.n_rows

    def prepare_rows(self, indptr, indices, data) -> _Rows:
        """The rows on the points' inputs ``U``, with their full squared norms."""
        data = np.ascontiguousarray(data, dtype=np.float64)
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        sq = _tiles.csr_row_squares(indptr, data)
        indices = np.asarray(indices, dtype=np.int64)
        inputs = self.inputs
        pos = np.searchsorted(inputs, indices)
        keep = np.zeros(len(indices), dtype=bool)
        if len(inputs):
            keep = (pos < len(inputs)) & (inputs[np.minimum(pos, len(inputs) - 1)]
                                          == indices)
        return _Rows(_kept_indptr(indptr, keep), pos[keep], data[keep], sq)

    def group(self, g, sel=None):
        """Points ``256 g + sel`` as dense columns and their squared norms."""
        lo = GROUP * g
        width = min(GROUP, self.n_coef - lo)
        local = np.arange(width) if sel is None else np.asarray(sel, dtype=np.int64)
        dense = np.zeros((len(self.inputs), len(local)), dtype=np.float64)
        pts = self.points
        for c, k in enumerate(lo + local):
            span = slice(pts.indptr[k], pts.indptr[k + 1])
            dense[pts.indices[span], c] = pts.data[span]
        return dense, np.ascontiguousarray(pts.sq[lo + local])

    def fill(self, rows, r0, r1, group, out):
        """Tile of rows ``r0:r1`` into ``out`` (shape (r1 - r0, width))."""
        dense, sq_points = group
        work = (int(rows.indptr[r1] - rows.indptr[r0]) + (r1 - r0)) * len(sq_points)
        _run(_tiles.rbf_tile, _tiles.rbf_tile_parallel, work, rows.indptr,
             rows.indices, rows.data, r0, r1, dense, rows.sq, sq_points,
             self.sigma2, out)


class BasisOperator:
    """``Φ`` (N x M) of a basis made tile by tile (see the module docstring).

    Parameters
    ----------
    indptr, indices, data : array-like
        CSR arrays of the input rows ``X`` (N x n_inputs, column indices in
        the basis' input numbering); values converted to float64.
    basis : RFFBasis or RBFBasis
        Makes the tiles.
    row_chunk : int, default :data:`DEFAULT_ROW_CHUNK`
        Rows per tile when tiles are made.
    cache_bytes : int, default :data:`DEFAULT_CACHE_BYTES`
        The memory budget of the basis: ``Φ`` is held in memory (one
        Fortran-ordered float64 array) when ``N * M * 8 <= cache_bytes``.

    Attributes
    ----------
    n_rows : int
        ``N``.
    n_coef : int
        ``M``.
    n_outputs : int
        1.
    nnz : int
        ``N * M`` (dense).
    cached : bool
        Whether ``Φ`` is held in memory.
    basis_bytes : int
        ``N * M * 8``, the bytes ``Φ`` takes in memory.
    cache_bytes : int
        The budget it was compared with.
    """

    n_outputs = 1

    def __init__(self, indptr, indices, data, basis, *, row_chunk=DEFAULT_ROW_CHUNK,
                 cache_bytes=DEFAULT_CACHE_BYTES):
        _check_csr(indptr, indices, data, "input rows")
        if isinstance(row_chunk, bool) or int(row_chunk) != row_chunk or row_chunk < 1:
            raise ParameterError(f"row_chunk must be an integer >= 1, got {row_chunk!r}")
        if isinstance(cache_bytes, bool) or cache_bytes < 0:
            raise ParameterError(f"cache_bytes must be >= 0, got {cache_bytes!r}")
        self.basis = basis
        self.rows = basis.prepare_rows(indptr, indices, data)
        self.n_rows = self.rows.n_rows
        self.n_coef = int(basis.n_coef)
        self.row_chunk = int(row_chunk)
        self.cache_bytes = int(cache_bytes)
        self.basis_bytes = self.n_rows * self.n_coef * 8
        self.cached = self.basis_bytes <= self.cache_bytes
        self._matrix = None
        self._local = threading.local()     # per-thread scratch of rmatvec_hess

    # ------------------------------------------------------------ sizes
    @property
    def nnz(self) -> int:
        """Entries of ``Φ`` (dense): ``N * M``."""
        return self.n_rows * self.n_coef

    @property
    def n_groups(self) -> int:
        """Groups of :data:`GROUP` basis functions."""
        return -(-self.n_coef // GROUP)

    def _span(self, g):
        lo = GROUP * g
        return lo, min(lo + GROUP, self.n_coef)

    def _blocks(self):
        """Row blocks of the products: ``(r0, r1)``, :data:`PRODUCT_ROWS` rows."""
        for r0 in range(0, self.n_rows, PRODUCT_ROWS):
            yield r0, min(r0 + PRODUCT_ROWS, self.n_rows)

    # ------------------------------------------------------------ tiles
    def matrix(self):
        """``Φ`` in memory: float64, shape (N, M), Fortran-ordered (made on
        first use; only when :attr:`cached`)."""
        if not self.cached:
            raise ParameterError(
                f"the basis ({self.basis_bytes / 2 ** 20:,.0f} MiB) exceeds its memory "
                f"budget ({self.cache_bytes / 2 ** 20:,.0f} MiB): it is made tile by tile")
        if self._matrix is None:
            full = np.empty((self.n_rows, self.n_coef), dtype=np.float64, order="F")
            with phase(f"making the basis ({self.n_rows:,} x {self.n_coef:,}, "
                       f"{self.basis_bytes / 2 ** 20:,.0f} MiB)", self.n_groups,
                       "group") as progress:
                for g in range(self.n_groups):
                    lo, hi = self._span(g)
                    for r0, r1, tile in self._tiles(self.rows, self.basis.group(g), hi - lo):
                        full[r0:r1, lo:hi] = tile
                    progress.update(1)
            self._matrix = full
        return self._matrix

    def _tiles(self, rows, group, width, r_lo=0, r_hi=None):
        """Tiles of ``rows[r_lo:r_hi]`` for one group's arrays: ``(r0, r1,
        tile)`` in row order (C-ordered, at most ``row_chunk`` rows); the
        tile buffer is reused (use it before the next one)."""
        n = rows.n_rows if r_hi is None else r_hi
        buffer = np.empty((min(self.row_chunk, max(n - r_lo, 1)), width),
                          dtype=np.float64)
        for r0 in range(r_lo, n, self.row_chunk):
            r1 = min(r0 + self.row_chunk, n)
            tile = buffer[:r1 - r0]
            self.basis.fill(rows, r0, r1, group, tile)
            yield r0, r1, tile

    def _product_blocks(self, g):
        """``Φ[r0:r1, group g]`` as Fortran-ordered blocks of
        :data:`PRODUCT_ROWS` rows: ``(r0, r1, block)`` in row order (views of
        the basis in memory, or made again into a reused buffer)."""
        lo, hi = self._span(g)
        if self.cached:
            full = self.matrix()
            for r0, r1 in self._blocks():
                yield r0, r1, full[r0:r1, lo:hi]
            return
        group = self.basis.group(g)
        buffer = np.empty((min(PRODUCT_ROWS, max(self.n_rows, 1)), hi - lo),
                          dtype=np.float64, order="F")
        for r0, r1 in self._blocks():
            block = buffer[:r1 - r0]
            for t0, t1, tile in self._tiles(self.rows, group, hi - lo, r0, r1):
                block[t0 - r0:t1 - r0] = tile
            yield r0, r1, block

    # --------------------------------------------------------- products
    def _product_progress(self, name, n_groups):
        """A transient bar over the tiles of one product made tile by tile
        (a product over a large basis takes minutes); on a terminal only."""
        return phase(f"{name}, basis made tile by tile", n_groups * self.n_rows, "row",
                     transient=True, unit_scale=True, show=False if self.cached else None)

    @staticmethod
    def _vector(v, n, name):
        v = np.ascontiguousarray(v, dtype=np.float64)
        if v.shape != (n,):
            raise ParameterError(f"{name} must have shape ({n},), got {v.shape}")
        return v

    def matvec(self, w):
        """``Φ w``: each entry sums the terms of the nonzero ``w_k`` in order of ``k``.

        Parameters
        ----------
        w : float64 array, shape (M,)

        Returns
        -------
        float64 array, shape (N,)
        """
        w = self._vector(w, self.n_coef, "w")
        out = np.zeros(self.n_rows, dtype=np.float64)
        if self.cached:
            cols = np.flatnonzero(w).astype(np.int64)
            if len(cols):
                # serial: a9a's Φ w over 67 columns took 0.7 ms on one thread,
                # 25 ms (median) on two shared cores (its parallel twin,
                # columns_matvec_acc_parallel, gives the same bytes)
                _tiles.columns_matvec_acc(self.matrix(), cols,
                                          np.ascontiguousarray(w[cols]), out)
            return out
        live = [g for g in range(self.n_groups) if w[GROUP * g:GROUP * (g + 1)].any()]
        with self._product_progress("product Φw", len(live)) as progress:
            for g in live:
                lo, hi = self._span(g)
                local = np.flatnonzero(w[lo:hi])
                if len(local) == hi - lo:
                    tiles = self._tiles(self.rows, self.basis.group(g), hi - lo)
                    coef = w[lo:hi]
                else:                    # only the columns of nonzero weights
                    tiles = self._tiles(self.rows, self.basis.group(g, local), len(local))
                    coef = np.ascontiguousarray(w[lo + local])
                for r0, r1, tile in tiles:
                    _run(_tiles.tile_matvec_acc, _tiles.tile_matvec_acc_parallel,
                         tile.size, tile, coef, out[r0:r1])
                    progress.update(r1 - r0)
        return out

    def rmatvec(self, r):
        """``Φ' r``: BLAS on each group's blocks of :data:`PRODUCT_ROWS`
        rows, the blocks' partials added in row order.

        Parameters
        ----------
        r : float64 array, shape (N,)

        Returns
        -------
        float64 array, shape (M,)
        """
        r = self._vector(r, self.n_rows, "r")
        out = np.zeros(self.n_coef, dtype=np.float64)
        with one_blas_thread(), self._product_progress(
                "product Φ'r", self.n_groups) as progress:
            for g in range(self.n_groups):
                lo, hi = self._span(g)
                acc = out[lo:hi]
                for r0, r1, block in self._product_blocks(g):
                    acc += block.T @ r[r0:r1]
                    progress.update(r1 - r0)
        return out

    def rmatvec_hess(self, r, s):
        """``(Φ' r, (Φ∘Φ)' s)``, in the order of :meth:`rmatvec` (one
        pass over the blocks).

        Parameters
        ----------
        r, s : float64 arrays, shape (N,)

        Returns
        -------
        grad, hess : float64 arrays, shape (M,)
        """
        r = self._vector(r, self.n_rows, "r")
        s = self._vector(s, self.n_rows, "s")
        out_r = np.zeros(self.n_coef, dtype=np.float64)
        out_s = np.zeros(self.n_coef, dtype=np.float64)
        # kept per thread: a fresh 8 MB buffer per call is page-faulted again
        # every time where large arrays get their own mapping (the CLI's
        # glibc settings, ultrafs/allocator.py)
        square = getattr(self._local, "square", None)
        if square is None:
            square = np.empty((min(PRODUCT_ROWS, max(self.n_rows, 1)), GROUP),
                              dtype=np.float64, order="F")
            self._local.square = square
        with one_blas_thread(), self._product_progress(
                "products Φ'r, (Φ∘Φ)'s", self.n_groups) as progress:
            for g in range(self.n_groups):
                lo, hi = self._span(g)
                acc_r, acc_s = out_r[lo:hi], out_s[lo:hi]
                for r0, r1, block in self._product_blocks(g):
                    sq = square[:r1 - r0, :hi - lo]
                    np.multiply(block, block, out=sq)
                    acc_r += block.T @ r[r0:r1]
                    acc_s += sq.T @ s[r0:r1]
                    progress.update(r1 - r0)
        return out_r, out_s

    # ------------------------------------------------------ dense parts
    def _checked_index(self, idx, n, name):
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        if len(idx) and (idx.min() < 0 or idx.max() >= n):
            raise ParameterError(f"{name} must lie in 0..{n - 1}")
        return idx

    def columns(self, cols):
        """Dense ``Φ[:, cols]``.

        Parameters
        ----------
        cols : int array, shape (p,)
            Repeats allowed.

        Returns
        -------
        float64 array, shape (N, p), Fortran-ordered
        """
        cols = self._checked_index(cols, self.n_coef, "cols")
        unique, where = np.unique(cols, return_inverse=True)
        full = np.empty((self.n_rows, len(unique)), dtype=np.float64, order="F")
        groups = unique // GROUP
        for g in np.unique(groups):
            g = int(g)
            pick = np.flatnonzero(groups == g)
            local = unique[pick] - GROUP * g
            if self.cached:
                full[:, pick] = self.matrix()[:, GROUP * g + local]
                continue
            for r0, r1, tile in self._tiles(self.rows, self.basis.group(g, local),
                                            len(local)):
                full[r0:r1, pick] = tile
        if np.array_equal(where, np.arange(len(cols))):
            return full
        return np.asfortranarray(full[:, where])

    def take_rows(self, rows):
        """Dense ``Φ[rows]``.

        Parameters
        ----------
        rows : int array, shape (q,)
            Repeats allowed.

        Returns
        -------
        float64 array, shape (q, M), C-ordered
        """
        rows = self._checked_index(rows, self.n_rows, "rows")
        out = np.empty((len(rows), self.n_coef), dtype=np.float64)
        if self.cached:
            out[:] = self.matrix()[rows]
            return out
        picked = self.rows.take(rows)
        for g in range(self.n_groups):
            lo, hi = self._span(g)
            for r0, r1, tile in self._tiles(picked, self.basis.group(g), hi - lo):
                out[r0:r1, lo:hi] = tile
        return out
