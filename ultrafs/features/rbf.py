"""Exact Gaussian (RBF) kernel columns (seed 001, the exact-kernel variant).

Candidate ``k`` is the kernel column of a point ``p_k``::

    φ_k(x) = exp(-||x - p_k||² / σ²)

On a training store (``points=None``) the points are the store's own rows:
``N`` candidates, feature id = row number, ``Φ = K`` (N x N).  ``K`` is
dense, so a training store of more than :data:`MAX_TRAINING_ROWS` rows is
refused (random Fourier features approximate the same kernel at any
size).

A model needs its points: :meth:`RBFKernelFeatures.restricted` gives the
spec of a space holding only some training rows as points (the model's
support), a JSON record of their CSR arrays in input numbering
(``features/input_rows.py``)::

    {"n_inputs": 784, "rows": [training row numbers],
     "indptr": [...], "indices": [...], "data": [...]}

whose feature ids are ``0 .. len(rows) - 1``.  Built on a test store from
that spec, the space gives the kernel columns of the test rows against the
stored points.  A test row's inputs that no point has (also ids beyond the
training's ``n_inputs``) count in its distances, as they should: the
points are 0 there.  :meth:`~RBFKernelFeatures.spec` of a training space is
the record of all its rows, so it is self-contained too.
"""

from __future__ import annotations

import math

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.features.base import is_integral, register_feature_space
from ultrafs.features.input_rows import InputRows, store_rows
from ultrafs.features.kernel_basis import KernelBasisFeatures, checked_sigma
from ultrafs.features.kernel_width import median_sigma
from ultrafs.solvers.basis_operator import RBFBasis

__all__ = ["RBFKernelFeatures", "MAX_TRAINING_ROWS", "check_points_record",
           "points_record", "MAX_INPUT_ID"]

#: most rows of a training store (K is N x N dense)
MAX_TRAINING_ROWS = 20_000
#: inputs of a points record are below this
MAX_INPUT_ID = 2 ** 62
_RECORD_FIELDS = ("n_inputs", "rows", "indptr", "indices", "data")


def _int_list(value, what, lo, hi) -> np.ndarray:
    if not isinstance(value, list) or not all(is_integral(v) and lo <= v <= hi
                                              for v in value):
        raise ValueError(f"{what} must be a list of integers in {lo}..{hi}")
    return np.asarray(value, dtype=np.int64)


def check_points_record(value) -> dict:
    """A points record (module docstring), checked strictly.

    Returns
    -------
    dict
        ``value`` itself.

    Raises
    ------
    ValueError
        One short line naming the first fault: missing or extra fields,
        lengths that disagree, ``indptr`` not starting at 0 or decreasing,
        indices out of ``0 .. n_inputs - 1`` or not increasing within a
        row, values not finite, no point, more than
        :data:`MAX_TRAINING_ROWS` points, a row twice.
    """
    if not isinstance(value, dict) or sorted(value) != sorted(_RECORD_FIELDS):
        raise ValueError(f"must be a points record with the fields "
                         f"{', '.join(_RECORD_FIELDS)}")
    n_inputs = value["n_inputs"]
    if not is_integral(n_inputs) or not 1 <= n_inputs < MAX_INPUT_ID:
        raise ValueError("points n_inputs must be an integer >= 1")
    rows = _int_list(value["rows"], "points rows", 0, MAX_INPUT_ID)
    if not 1 <= len(rows) <= MAX_TRAINING_ROWS or len(np.unique(rows)) != len(rows):
        raise ValueError(f"points rows must be 1..{MAX_TRAINING_ROWS} distinct rows")
    indptr = _int_list(value["indptr"], "points indptr", 0, MAX_INPUT_ID)
    if len(indptr) != len(rows) + 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise ValueError("points indptr must start at 0, never decrease and have "
                         "one entry more than rows")
    indices = _int_list(value["indices"], "points indices", 0, int(n_inputs) - 1)
    data = value["data"]
    if not isinstance(data, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in data):
        raise ValueError("points data must be a list of finite numbers")
    if indptr[-1] != len(indices) or len(indices) != len(data):
        raise ValueError("points indptr, indices and data disagree in length")
    within = np.diff(indices) > 0
    starts = indptr[1:-1]
    within[starts[(starts > 0) & (starts < len(indices))] - 1] = True
    if not within.all():
        raise ValueError("points indices must increase within each point")
    return value


def points_record(rows: InputRows, row_numbers) -> dict:
    """The JSON record of ``rows`` (module docstring)."""
    return {"n_inputs": int(rows.n_inputs),
            "rows": [int(r) for r in row_numbers],
            "indptr": rows.indptr.tolist(),
            "indices": rows.indices.tolist(),
            "data": np.asarray(rows.data, dtype=np.float64).tolist()}


def _record_rows(record) -> InputRows:
    return InputRows(np.asarray(record["indptr"], dtype=np.int64),
                     np.asarray(record["indices"], dtype=np.int64),
                     np.asarray(record["data"], dtype=np.float64),
                     int(record["n_inputs"]))


@register_feature_space
class RBFKernelFeatures(KernelBasisFeatures):
    """Candidates = the kernel columns of points (see the module docstring).

    Parameters
    ----------
    store : ColumnStore
    sigma : float or None
        Kernel width (``> 0``); None: the median heuristic on the points.
    points : dict or None
        A points record (:meth:`restricted`); None: the store's own rows
        (at most :data:`MAX_TRAINING_ROWS`).

    Raises
    ------
    ParameterError
        One line for a value out of its domain, a forged points record or
        a training store of too many rows.
    """

    kind = "rbf"
    spec_params = ("sigma", "points")

    def __init__(self, store, sigma=None, points=None):
        super().__init__(store)
        self._sigma = None if sigma is None else checked_sigma(sigma)
        if points is None:
            if store.n_samples > MAX_TRAINING_ROWS:
                raise ParameterError(
                    f"the exact RBF kernel is N x N dense: {store.n_samples} rows "
                    f"exceed {MAX_TRAINING_ROWS} (use --basis rff)")
            self._record = None
            self._points = None
            self.n_inputs = int(store.id_space)
        else:
            try:
                self._record = check_points_record(points)
            except ValueError as exc:
                raise ParameterError(f"rbf points: {exc}") from None
            self._points = _record_rows(self._record)
            self.n_inputs = int(self._record["n_inputs"])

    # ---------------------------------------------------------- points
    @property
    def point_rows(self) -> InputRows:
        """The points' CSR arrays (the store's rows for a training space)."""
        return self.rows if self._points is None else self._points

    @property
    def points(self) -> dict:
        """The points record (of every row, for a training space)."""
        if self._record is None:
            return points_record(self.rows, range(self.rows.n_rows))
        return self._record

    @property
    def sigma(self) -> float:
        """The kernel width (the median heuristic's, computed on first use)."""
        if self._sigma is None:
            self._sigma = median_sigma(self.point_rows)
        return self._sigma

    @property
    def n_candidates(self) -> int:
        """Number of points."""
        if self._points is None:
            return int(self.store.n_samples)
        return self._points.n_rows

    def restricted(self, keys) -> dict:
        """The spec of a space whose points are the points ``keys`` only.

        Parameters
        ----------
        keys : int array
            Points of this space (for a training space: row numbers), in
            the order the new space numbers them ``0 .. len(keys) - 1``.

        Returns
        -------
        spec : dict
            ``{"kind": "rbf", "sigma": σ, "points": record}``; the record's
            ``rows`` are training row numbers.
        """
        keys = self.keys_of(keys)
        if len(keys) == 0 or len(np.unique(keys)) != len(keys):
            raise ParameterError("restricted() needs distinct points, at least one")
        training = np.arange(self.n_candidates) if self._record is None \
            else np.asarray(self._record["rows"], dtype=np.int64)
        return {"kind": self.kind, "sigma": self.sigma,
                "points": points_record(self.point_rows.take(keys), training[keys])}

    # -------------------------------------------------------- the basis
    def _load_rows(self):
        return store_rows(self.store)

    def _basis(self):
        pts = self.point_rows
        return RBFBasis(pts.indptr, pts.indices, pts.data, self.sigma)

    # ----------------------------------------------------- model files
    @classmethod
    def check_spec_value(cls, name, value):
        """``sigma`` > 0; ``points`` a strictly checked points record."""
        if name == "sigma":
            checked_sigma(value, ValueError, name="")
            return value
        if name == "points":
            try:
                return check_points_record(value)
            except ValueError as exc:   # the caller names the field already
                raise ValueError(str(exc).removeprefix("points ")) from None
        raise ValueError("is not a parameter of the RBF kernel space")

    @classmethod
    def check_feature_ids(cls, spec, feature_ids) -> None:
        """Every id is a point ``0 .. len(points.rows) - 1``."""
        n = len(spec["points"]["rows"])
        cls._check_ids_below(feature_ids, n, f"{n} points")
