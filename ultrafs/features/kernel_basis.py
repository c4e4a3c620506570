"""What the two kernel bases of seed 001 share (``rff``, ``rbf``).

A kernel basis' candidates are the ``M`` columns of a dense matrix ``Φ``
(N x M) whose entries are functions of whole rows ``x_i``: random Fourier
features (``features/rff.py``) or exact RBF kernel columns
(``features/rbf.py``).  The space reads the store's rows into memory once,
lazily (:func:`~ultrafs.features.input_rows.store_rows`: memory in
proportion to the data's nonzeros), and hands them to a
:class:`~ultrafs.solvers.basis_operator.BasisOperator`, which makes ``Φ``
tile by tile (kept in memory when ``N * M * 8`` is at most its
``cache_bytes``).

Keys and feature ids are the column numbers ``0 .. M - 1``; a feature
mixes every input, so it has no source column (:meth:`source_ids` is
empty) and no name.

Scoring runs **in this process, with numba threads**, not as Dask block
tasks: every candidate needs every row, so the column blocks of a pass do
not split the work.  The scheduler, worker count and block size given to
the pass are therefore not used; the result is the same for all of them.
"""

from __future__ import annotations

import math

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.features.base import FeatureSpace, is_integral
from ultrafs.scoring.topk import TopK
from ultrafs.solvers.basis_operator import BasisOperator
from ultrafs.store.base import ColumnBlock

__all__ = ["KernelBasisFeatures", "dense_to_block", "ranked_topk", "checked_int",
           "checked_sigma"]


def checked_int(name, value, lo, hi, error=ParameterError) -> int:
    """``value`` as an int in ``lo .. hi`` (an integral float is accepted).

    Raises
    ------
    error
        One line naming ``name`` otherwise.
    """
    integral = is_integral(value) or (isinstance(value, float) and value.is_integer())
    if not integral or not lo <= int(value) <= hi:
        raise error(f"{name} must be an integer in {lo}..{hi}, got {value!r}")
    return int(value)


def checked_sigma(value, error=ParameterError, name="sigma") -> float:
    """A kernel width: a finite number > 0, as a float.

    Raises
    ------
    error
        One line otherwise (starting with ``name``, when not empty).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                         np.floating)) \
            or not math.isfinite(value) or not value > 0:
        raise error(f"{name} must be a finite number > 0, got {value!r}".lstrip())
    return float(value)


def dense_to_block(dense, dtype) -> ColumnBlock:
    """A dense ``(N, p)`` array as a :class:`ColumnBlock` (exact zeros left out).

    Returns
    -------
    ColumnBlock
        ``first_column == -1``, int64 ``indptr``, int32 row numbers sorted
        within each column, values in ``dtype``.
    """
    columns_first = np.ascontiguousarray(np.asarray(dense).T)
    col, row = np.nonzero(columns_first)
    indptr = np.zeros(columns_first.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=columns_first.shape[0]), out=indptr[1:])
    return ColumnBlock(-1, indptr, row.astype(np.int32),
                       columns_first[col, row].astype(dtype))


def ranked_topk(scores, k, excluded) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best keys by (score decreasing, key increasing), positive
    scores only, ``excluded`` keys left out."""
    keys = np.arange(len(scores), dtype=np.int64)
    keep = scores > 0
    excluded = np.asarray(excluded, dtype=np.int64).reshape(-1)
    keep[excluded[(excluded >= 0) & (excluded < len(scores))]] = False
    keys, scores = keys[keep], scores[keep]
    order = np.lexsort((keys, -scores))[:int(k)]
    return keys[order], np.ascontiguousarray(scores[order], dtype=np.float64)


class KernelBasisFeatures(FeatureSpace):
    """Candidates = the columns of a basis ``Φ`` over the store's rows.

    Subclasses give :meth:`_basis` (an ``RFFBasis`` or ``RBFBasis``),
    :meth:`_load_rows` and :attr:`n_candidates`.

    Parameters
    ----------
    store : ColumnStore
    """

    def __init__(self, store):
        super().__init__(store)
        self._rows = None          # InputRows, read once
        self._operator = None      # the shared default BasisOperator

    # ------------------------------------------------------------ rows
    def _load_rows(self):
        """The store's rows as :class:`~ultrafs.features.input_rows.InputRows`."""
        raise NotImplementedError

    def _basis(self):
        """The tile generator of this space."""
        raise NotImplementedError

    @property
    def rows(self):
        """The store's rows in input numbering (read on first use)."""
        if self._rows is None:
            self._rows = self._load_rows()
        return self._rows

    def operator(self, row_chunk=None, cache_bytes=None) -> BasisOperator:
        """``Φ`` of this space over the store's rows.

        Parameters
        ----------
        row_chunk : int, optional
            Rows per tile (default
            :data:`~ultrafs.solvers.basis_operator.DEFAULT_ROW_CHUNK`).
        cache_bytes : int, optional
            Keep every tile when ``N * M * 8`` is at most this (default 1 GiB).

        Returns
        -------
        BasisOperator
            With both parameters None, the one operator the space itself
            scores and materialises with (its tiles, once kept, serve both).
        """
        if row_chunk is None and cache_bytes is None:
            if self._operator is None:
                self._operator = self._new_operator({})
            return self._operator
        params = {name: value for name, value in (("row_chunk", row_chunk),
                                                  ("cache_bytes", cache_bytes))
                  if value is not None}
        return self._new_operator(params)

    def _new_operator(self, params) -> BasisOperator:
        rows = self.rows
        return BasisOperator(rows.indptr, rows.indices, rows.data, self._basis(),
                             **params)

    # ------------------------------------------------------------- ids
    @classmethod
    def id_key(cls, feature_id):
        """A feature id is a column number of ``Φ``: an integer >= 0."""
        if not is_integral(feature_id) or feature_id < 0:
            raise ValueError("must be an integer >= 0 (a column of the basis)")
        return int(feature_id)

    @classmethod
    def source_ids(cls, feature_id) -> list:
        """None: every basis function mixes all inputs."""
        return []

    @classmethod
    def name_of_id(cls, feature_id, name_of):
        """Basis functions have no names."""
        return None

    @classmethod
    def _check_ids_below(cls, feature_ids, n, what) -> None:
        for k, fid in enumerate(feature_ids):
            if not is_integral(fid) or not 0 <= fid < n:
                raise ValueError(f"features[{k}] must be a column in 0..{n - 1} "
                                 f"({what})")

    def feature_ids(self, keys) -> list:
        return [int(k) for k in np.asarray(keys, dtype=np.int64)]

    def keys_of(self, feature_ids) -> np.ndarray:
        keys = np.asarray(feature_ids, dtype=np.int64).reshape(-1)
        if len(keys) and (keys.min() < 0 or keys.max() >= self.n_candidates):
            raise ParameterError(f"feature ids must lie in 0..{self.n_candidates - 1}")
        return keys

    # ---------------------------------------------------------- scoring
    def find_candidates(self, weights, k, excluded, run):
        """The ``k`` best columns by ``c_k²``, ``c = Φ' weights`` (2-D weights:
        ``Σ_c c_kc²``).

        Computed in this process with numba threads from the rows in memory
        (the module docstring says why); ``run`` is not used.  Counter
        ``nnz``: the entries of ``Φ`` visited per weight column.
        """
        op = self.operator()
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        columns = weights[:, None] if weights.ndim == 1 else weights
        scores = None
        for c in range(columns.shape[1]):
            sums = op.rmatvec(np.ascontiguousarray(columns[:, c]))
            squares = sums * sums
            scores = squares if scores is None else scores + squares
        keys, best = ranked_topk(scores, k, excluded)
        return TopK(keys, best, {"nnz": op.nnz * columns.shape[1]})

    # ------------------------------------------------------ materialize
    def materialize(self, keys, dtype=np.float64, payload=None) -> ColumnBlock:
        """Columns ``keys`` of ``Φ`` (exact zeros left out); ``payload`` unused."""
        keys = self.keys_of(keys)
        return dense_to_block(self.operator().columns(keys), dtype)

    def materialize_ids(self, feature_ids, dtype=np.float64) -> ColumnBlock:
        """Columns of ids; ids outside ``0 .. M - 1`` give empty columns."""
        ids = np.asarray(feature_ids, dtype=np.int64).reshape(-1)
        present = (ids >= 0) & (ids < self.n_candidates)
        dense = np.zeros((self.n_samples, len(ids)), dtype=np.float64, order="F")
        if present.any():
            dense[:, present] = self.operator().columns(ids[present])
        return dense_to_block(dense, dtype)

    def absent_ids(self, feature_ids) -> list:
        """Ids outside ``0 .. M - 1`` (no store column is ever missing: absent
        inputs count as zeros)."""
        return [fid for fid in feature_ids
                if not (is_integral(fid) and 0 <= fid < self.n_candidates)]

    # --------------------------------------------------------- pickling
    def __getstate__(self):
        """Drop the rows and the operator (rebuilt lazily on the other side)."""
        state = dict(self.__dict__)
        state["_rows"] = None
        state["_operator"] = None
        return state
