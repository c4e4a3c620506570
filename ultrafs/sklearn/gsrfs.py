"""GSR-FS's scikit-learn estimator: a ranking feature selector on the one base.

GSR-FS ranks every column by ``‖w_j‖`` of one fit on all of them, for
one or several outputs at once; its estimator is a selector (no
prediction) whose ``transform`` keeps the ``n_features_to_select`` best.
That count may be a fraction or None (half, scikit-learn's RFE
convention), and the targets a matrix, which the method's model (the best
features refit alone, for a store's one target) does not hold: so
:class:`GSRFSSelector` overrides the base's ``fit`` and selector mask,
and takes its other parameters, their defaults and checks from
:class:`~ultrafs.methods.gsrfs_method.GSRFSParams`.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from ultrafs.errors import ParameterError
from ultrafs.methods.gsrfs_method import GSRFS, GSRFSParams
from ultrafs.methods.params import specs_of
from ultrafs.methods.per_column import DENSE_MAX_ENTRIES, PerColumn, check_dense_size
from ultrafs.sklearn.base import MethodEstimator
from ultrafs.sklearn.matrices import take_columns

__all__ = ["GSRFSSelector"]

_DEFAULTS = {name: default for name, (default, _) in specs_of(GSRFSParams).items()}


class GSRFSSelector(MethodEstimator):
    """Feature selection by GSR-FS (Peng & Fan): ℓ2,r loss, ℓ2,p row sparsity, IRLS.

    Fits ``min_{W,b} Σ_i ‖x_i W + b − y_i‖^r + λ Σ_j ‖w_j‖^p`` (smoothed by a
    tiny ε) by iteratively reweighted least squares, with ``Y`` the ±1
    one-vs-rest codes of the classes (two classes: two columns, the
    paper's coding) or the real targets (regression, one or more
    columns), and ranks the features by ``‖w_j‖``: the ℓ2,p penalty shares
    each row across the outputs, so the features are chosen jointly for
    every class.  ``transform`` keeps the ``n_features_to_select`` best.

    Parameters
    ----------
    n_features_to_select : int, float or None, default=None
        How many features :meth:`transform` keeps: an int, a fraction in
        (0, 1), or None for half (scikit-learn's RFE convention); fewer
        when fewer rows of ``W`` are nonzero.
    r, p, lam, fit_intercept, eps, tol, stop, max_iter, min_iter, solve, \
accelerate, candidates, scale, in_memory_bytes
        As :class:`~ultrafs.methods.gsrfs_method.GSRFSParams` (the same
        defaults and domains; ``ultrafs select --method gsrfs --help``
        describes them).  ``coef_`` is in the input's units, ``scores_``
        in the scaled ones (``scale="std"``).
    block_size : int, default=None
        Columns per task of the streamed passes.
    scheduler : str or distributed.Client, default=None
        Dask scheduler of those passes: "threads", "processes",
        "synchronous", an address ("tcp://HOST:PORT") or a Client; None: the
        active Client, else threads.  A Client pickles as its address.
    n_jobs : int, default=None
        Threads or processes of a local scheduler; results do not depend on it.
    verbose : int, default=0
        > 0: progress on stderr (the passes, the IRLS iterations).

    Attributes
    ----------
    ranking_ : ndarray of int64, shape (n_features,)
        ``ranking_[j]`` is the rank of feature ``j`` (1 = best, by ``‖w_j‖``,
        ties by column); the features with a zero row share the last rank.
    scores_ : ndarray of shape (n_features,)
        ``‖w_j‖``.
    coef_ : ndarray of shape (n_outputs, n_features)
        ``Wᵀ``.
    intercept_ : ndarray of shape (n_outputs,)
    classes_ : ndarray or None
        The classes coded in ``coef_``'s rows; None for regression.
    n_iter_ : int
    converged_ : bool
        Whether the stop rule was met.
    stationarity_ : float
    stop_reason_ : str
    history_ : list of dict
        One record per IRLS iteration.
    result_ : ultrafs.methods.gsrfs.GSRFSResult
    n_features_in_ : int
    """

    method = GSRFS

    def __init__(self, n_features_to_select=None, *, r=_DEFAULTS["r"],
                 p=_DEFAULTS["p"], lam=_DEFAULTS["lam"],
                 fit_intercept=_DEFAULTS["fit_intercept"], eps=_DEFAULTS["eps"],
                 tol=_DEFAULTS["tol"], stop=_DEFAULTS["stop"],
                 max_iter=_DEFAULTS["max_iter"], min_iter=_DEFAULTS["min_iter"],
                 solve=_DEFAULTS["solve"], accelerate=_DEFAULTS["accelerate"],
                 candidates=_DEFAULTS["candidates"], scale=_DEFAULTS["scale"],
                 in_memory_bytes=_DEFAULTS["in_memory_bytes"],
                 class_weight=_DEFAULTS["class_weight"], block_size=None,
                 scheduler=None, n_jobs=None, verbose=0):
        self.n_features_to_select = n_features_to_select
        self.r = r
        self.p = p
        self.lam = lam
        self.fit_intercept = fit_intercept
        self.eps = eps
        self.tol = tol
        self.stop = stop
        self.max_iter = max_iter
        self.min_iter = min_iter
        self.solve = solve
        self.accelerate = accelerate
        self.candidates = candidates
        self.scale = scale
        self.in_memory_bytes = in_memory_bytes
        self.class_weight = class_weight
        self.block_size = block_size
        self.scheduler = scheduler
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None):
        """Rank the features of ``X`` for the targets ``y``.

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_samples, n_features)
        y : array-like, shape (n_samples,) or (n_samples, n_outputs)
            Class labels, or real targets.
        sample_weight : array-like of shape (n_samples,), optional
            Per-sample weights of the loss (times ``class_weight``'s).

        Returns
        -------
        self : GSRFSSelector
        """
        from ultrafs.methods.gsrfs import encode_targets
        from ultrafs.methods.gsrfs_store import fit_gsrfs_store
        from ultrafs.store import as_store

        X, y = validate_data(self, X, y, accept_sparse=("csr", "csc"),
                             dtype=[np.float64, np.float32], multi_output=True,
                             y_numeric=False)
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind in ("binary", "multiclass"):
            Y, self.classes_ = encode_targets(np.asarray(y), "multiclass")
        elif kind in ("continuous", "continuous-multioutput", "multiclass-multioutput",
                      "multilabel-indicator"):
            Y, self.classes_ = encode_targets(np.asarray(y, dtype=np.float64),
                                              "continuous")
        else:
            raise ValueError(f"GSRFSSelector needs class labels or real targets; "
                             f"the target is {kind}")
        self._check_count()
        n = X.shape[1]
        options = {name: getattr(self, name) for name in _DEFAULTS}
        options["n_features_to_select"] = self._n_selected(n)
        params = GSRFSParams.from_options(options)      # the method's checks
        weights = self._sample_weight(sample_weight, y, X.shape[0])
        # the store keeps the columns X holds (a hashed width: its used ids),
        # never one array per column of X's width
        store = as_store(X, np.zeros(X.shape[0]), target="none")
        result = fit_gsrfs_store(
            store, Y, r=params.r, p=params.p, lam=params.lam,
            fit_intercept=params.fit_intercept, eps=params.eps, tol=params.tol,
            stop=params.stop, max_iter=params.max_iter, min_iter=params.min_iter,
            solve=params.solve, candidates=params.candidates,
            n_features_to_select=params.n_features_to_select,
            accelerate=params.accelerate, scale=params.scale,
            in_memory_bytes=params.in_memory_bytes, sample_weight=weights,
            progress=self.verbose > 0,
            **self._execution().passes())
        # input column of each store column (the store drops a hashed
        # width's empty columns)
        ids = (np.arange(store.n_features, dtype=np.int64) if store.column_ids is None
               else np.asarray(store.column_ids, dtype=np.int64))
        self._ranked = ids[result.ranking]
        rows = (np.arange(store.n_features) if result.candidates is None
                else result.candidates)
        # per-column attributes: written when read (PerColumn), refused in
        # one line over a hashed width
        n_ranked = len(result.ranking)
        self._per_column = {
            "ranking_": PerColumn(
                "ranking_", self._ranked, np.arange(1, n_ranked + 1, dtype=np.int64), n,
                fill=n_ranked + 1, compact="get_support(indices=True) (the selected "
                "columns) or result_.ranking (store columns, best first)", unit="ranks"),
            "scores_": PerColumn(
                "scores_", ids[rows], np.asarray(result.row_norms, dtype=np.float64), n,
                fill=0.0, compact="result_.row_norms", unit="scores"),
            "coef_": PerColumn(
                "coef_", ids[rows], np.asarray(result.coef, dtype=np.float64), n,
                fill=0.0, transpose=True, compact="result_.coef")}
        self.intercept_ = np.asarray(result.intercept, dtype=np.float64)
        self.n_iter_ = int(result.n_iter)
        self.converged_ = bool(result.converged)
        self.stationarity_ = float(result.stationarity)
        self.stop_reason_ = result.stop_reason
        self.history_ = [{k: v for k, v in h.items() if v is not None}
                         for h in result.history]
        self.result_ = result
        return self

    def _sample_weight(self, sample_weight, y, n_samples):
        """The per-sample weights: ``sample_weight`` times ``class_weight``'s
        (:func:`~ultrafs.methods.targets.class_weight_values`), or None."""
        from ultrafs.methods.targets import class_weight_values
        from ultrafs.solvers.datafits import check_sample_weight

        weights = None
        if sample_weight is not None:
            weights = check_sample_weight(np.asarray(sample_weight, dtype=np.float64),
                                          n_samples)
        if self.class_weight is not None:
            if self.classes_ is None:
                raise ParameterError("class_weight weights classes, but the targets are "
                                     "real values: use sample_weight")
            index = np.searchsorted(self.classes_, np.asarray(y))
            per_class = class_weight_values(self.class_weight, self.classes_, index)
            weights = per_class[index] if weights is None else weights * per_class[index]
            weights = check_sample_weight(weights, n_samples)
        return weights

    @property
    def coef_(self):
        """``Wᵀ`` of the fit on every feature (zeros outside the
        candidates), shape (n_outputs, n_features_in_)."""
        check_is_fitted(self, "result_")
        return self._per_column["coef_"].dense()

    def _check_count(self):
        k = self.n_features_to_select
        ok = k is None or (isinstance(k, numbers.Integral) and not isinstance(k, bool)
                           and k >= 1) \
            or (isinstance(k, numbers.Real) and not isinstance(k, (bool, numbers.Integral))
                and 0 < k < 1)
        if not ok:
            raise ParameterError(f"n_features_to_select must be an int >= 1, a fraction "
                                 f"in (0, 1) or None, got {k!r}")

    def _n_selected(self, n_features) -> int:
        k = self.n_features_to_select
        if k is None:
            return max(1, n_features // 2)
        if isinstance(k, numbers.Integral):
            return min(int(k), n_features)
        return max(1, int(k * n_features))

    # the selector face: the best-ranked columns (there is no model_)
    def _linear_space(self):
        return True

    def _get_support_mask(self):
        check_is_fitted(self, "result_")
        check_dense_size("get_support()", 1, self.n_features_in_,
                         "get_support(indices=True)", unit="booleans")
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self._selected_columns()] = True
        return mask

    def _support_indices(self):
        return self._selected_columns()

    def _selected_columns(self):
        """The input columns :meth:`transform` keeps, increasing."""
        check_is_fitted(self, "result_")
        return np.sort(self._ranked[:self._n_selected(self.n_features_in_)])

    def transform(self, X):
        """The ``n_features_to_select`` best-ranked columns of X.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features_in_)

        Returns
        -------
        X_selected : ndarray or sparse matrix of shape (n_samples, n_selected)
            ``X[:, get_support()]`` (sparse stays sparse).
        """
        check_is_fitted(self, "result_")
        if (sp.issparse(X) and X.ndim == 2
                and X.shape[1] > DENSE_MAX_ENTRIES):   # no per-column mask
            X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=None,
                              reset=False)
            return take_columns(X, self._selected_columns())
        return super(MethodEstimator, self).transform(X)

    def get_feature_names_out(self, input_features=None):
        """Names of the columns :meth:`transform` keeps (``x0``, ``x1``...
        or the input's)."""
        if input_features is None and not hasattr(self, "feature_names_in_"):
            # scikit-learn's own names, without its list of every column's
            return np.asarray([f"x{j}" for j in self._selected_columns()], dtype=object)
        return super(MethodEstimator, self).get_feature_names_out(input_features)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
