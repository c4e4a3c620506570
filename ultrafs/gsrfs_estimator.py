"""scikit-learn face of GSR-FS (seed 002): a feature selector."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from ultrafs.api import fit_gsrfs_store
from ultrafs.errors import ParameterError
from ultrafs.methods.gsrfs import DEFAULT_MAX_ITER, DEFAULT_MIN_ITER, encode_targets
from ultrafs.store import as_store

__all__ = ["GSRFSSelector"]


class GSRFSSelector(SelectorMixin, BaseEstimator):
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
    r : float in (0, 2], default=1.0
        Loss exponent (small: robust to outliers; 2: least squares).
    p : float in (0, 1], default=0.5
        Penalty exponent (small: sparser; below 1 nonconvex, a local
        optimum from the ridge start).
    lam : float > 0, default=1.0
        λ, absolute (not divided by the number of samples).
    fit_intercept : bool, default=True
        An unpenalised bias per output (the paper has none).
    eps : float, optional
        The smoothing ε (None: ``1e-10`` times the mean squared target
        row for the loss, ``(1e-12 max‖w_j‖)²`` for the penalty).
    tol : float, optional
        Tolerance of the ``stop`` rule (None: 1e-3 for the stationarity
        certificate, 1e-4 for the paper's relative objective change).
    stop : {"stationarity", "objective"}, default="stationarity"
    max_iter, min_iter : int
    solve : {"auto", "primal", "woodbury"}, default="auto"
    accelerate : bool or None, default=None
        Safeguarded extrapolation of the IRLS steps (False: the paper's
        Algorithm 1; None: on with the stationarity stop, off with the
        paper's objective stop).
    candidates : None, "auto" or int, default=None
        The two-stage mode: the engine's streamed multi-class scores
        propose this many candidates and IRLS ranks them (see
        :func:`ultrafs.methods.gsrfs.fit_gsrfs_two_stage`); None: IRLS on
        every feature.
    scale : {"auto", "std", "none"}, default="auto"
        "std": rank on columns divided by their standard deviation (the
        paper z-scores; the centring is the intercept's, sparse input
        stays sparse); "none": as given; "auto": "std" except in the
        two-stage mode.  ``coef_`` is in the input's units, ``scores_`` in
        the scaled ones.
    block_size, scheduler : optional
        Of the streamed passes.

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
    result_ : ultrafs.methods.gsrfs.GSRFSResult
    n_features_in_ : int
    """

    def __init__(self, n_features_to_select=None, *, r=1.0, p=0.5, lam=1.0,
                 fit_intercept=True, eps=None, tol=None, stop="stationarity",
                 max_iter=DEFAULT_MAX_ITER, min_iter=DEFAULT_MIN_ITER, solve="auto",
                 accelerate=None, candidates=None, scale="auto", block_size=None,
                 scheduler=None):
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
        self.block_size = block_size
        self.scheduler = scheduler

    def fit(self, X, y):
        """Rank the features of ``X`` for the targets ``y``.

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_samples, n_features)
        y : array-like, shape (n_samples,) or (n_samples, n_outputs)
            Class labels, or real targets.

        Returns
        -------
        self : GSRFSSelector
        """
        X, y = validate_data(self, X, y, accept_sparse="csc", dtype=[np.float64, np.float32],
                             multi_output=True, y_numeric=False)
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind in ("binary", "multiclass"):
            Y, self.classes_ = encode_targets(np.asarray(y), "multiclass")
        elif kind in ("continuous", "continuous-multioutput", "multiclass-multioutput",
                      "multilabel-indicator"):
            Y, self.classes_ = encode_targets(np.asarray(y, dtype=np.float64), "continuous")
        else:
            raise ValueError(f"GSRFSSelector needs class labels or real targets; "
                             f"the target is {kind}")
        self._check_count(X.shape[1])
        store = as_store(sp.csc_matrix(X) if sp.issparse(X) else X,
                         np.zeros(X.shape[0]), target="none")
        result = fit_gsrfs_store(
            store, Y, r=self.r, p=self.p, lam=self.lam,
            fit_intercept=bool(self.fit_intercept), eps=self.eps, tol=self.tol,
            stop=self.stop, max_iter=self.max_iter, min_iter=self.min_iter,
            solve=self.solve, accelerate=self.accelerate, candidates=self.candidates,
            scale=self.scale,
            features=self._n_selected(X.shape[1]), block_size=self.block_size,
            scheduler=self.scheduler)
        n = X.shape[1]
        ranking = np.full(n, len(result.ranking) + 1, dtype=np.int64)
        ranking[result.ranking] = np.arange(1, len(result.ranking) + 1)
        self.ranking_ = ranking
        scores = np.zeros(n)
        coef = np.zeros((n, result.coef.shape[1]))
        rows = np.arange(n) if result.candidates is None else result.candidates
        scores[rows] = result.row_norms
        coef[rows] = result.coef
        self.scores_ = scores
        self.coef_ = np.ascontiguousarray(coef.T)
        self.intercept_ = np.asarray(result.intercept, dtype=np.float64)
        self.n_iter_ = int(result.n_iter)
        self.converged_ = bool(result.converged)
        self.stationarity_ = float(result.stationarity)
        self.stop_reason_ = result.stop_reason
        self.result_ = result
        return self

    def _check_count(self, n_features):
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

    def _get_support_mask(self):
        check_is_fitted(self, "ranking_")
        k = self._n_selected(self.n_features_in_)
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.result_.ranking[:k]] = True
        return mask

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags
