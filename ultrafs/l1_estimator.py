"""scikit-learn face of the screened ℓ1-logistic regression path (seed 004)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_selection import SelectorMixin

from ultrafs.api import select_l1
from ultrafs.binary_linear import BinaryLinearMixin
from ultrafs.errors import ParameterError
from ultrafs.methods.l1_path import SCREENINGS

__all__ = ["L1LogisticRegression"]


class L1LogisticRegression(BinaryLinearMixin, SelectorMixin, ClassifierMixin,
                           BaseEstimator):
    """ℓ1-regularised logistic regression, screened by Slores, out of core.

    Minimises ``||β||_1 + C Σ_i log(1 + exp(−y_i (x_i'β + c)))`` with an
    **unpenalised** intercept c (scikit-learn's ``C``; ``λ = 1/(n C)`` in
    the paper's scaling), or, with ``n_features``, returns the model at the
    first λ of the path that holds that many nonzero weights.  Every model
    is solved on the columns the screening rule keeps and certified on all
    columns by a KKT pass (:mod:`ultrafs.methods.l1_path`).

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation strength (ignored when ``n_features`` is set).
    n_features : int, optional
        Number of nonzero weights wanted: the first λ of the grid
        (``n_lambdas`` values from ``lambda_max_ratio`` down to
        ``lambda_min_ratio`` times λ_max) with at least that many.
    screening : {"slores", "strong", "none"}, default="slores"
    sequential : bool, default=True
        Screen with the previous λ's solution as reference (safe: gap-based
        radius); False: λ_max (the paper's basic rule).
    n_lambdas, lambda_min_ratio, lambda_max_ratio : see ``n_features``
    tol : float, default=1e-6
        Relative KKT tolerance of the model on every column.
    max_iter : int, default=500
        Outer iterations of the solver per λ.
    block_size : int, optional
        Columns per task of the statistics and KKT passes.
    scheduler : optional
        Dask scheduler of those passes.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features_in_)
    intercept_ : ndarray of shape (1,)
    selected_features_ : int64 ndarray
        Columns with a nonzero weight, increasing.
    lambda_, lambda_max_ : float
        The model's λ and λ_max (paper scaling); ``C_ = 1 / (n λ)``.
    path_ : list of dict
        The path's per-λ records up to the model (nonzeros, kept columns,
        rejection ratio, KKT violators found / left, seconds).
    model_ : ultrafs.model.Model
    n_features_in_ : int
    """

    def __init__(self, C=1.0, *, n_features=None, screening="slores", sequential=True,
                 n_lambdas=86, lambda_min_ratio=0.1, lambda_max_ratio=0.95, tol=1e-6,
                 max_iter=500, block_size=None, scheduler=None):
        self.C = C
        self.n_features = n_features
        self.screening = screening
        self.sequential = sequential
        self.n_lambdas = n_lambdas
        self.lambda_min_ratio = lambda_min_ratio
        self.lambda_max_ratio = lambda_max_ratio
        self.tol = tol
        self.max_iter = max_iter
        self.block_size = block_size
        self.scheduler = scheduler

    def fit(self, X, y=None):
        """Fit on a matrix (two classes) or an opened binary ColumnStore.

        Returns
        -------
        self : L1LogisticRegression
        """
        if self.screening not in SCREENINGS:
            raise ParameterError(f"screening must be one of {', '.join(SCREENINGS)}, "
                                 f"got {self.screening!r}")
        store = self._training_store(X, y)
        options = {"screening": self.screening, "sequential": bool(self.sequential),
                   "tol": float(self.tol), "max_iter": int(self.max_iter),
                   "block_size": self.block_size, "scheduler": self.scheduler,
                   "lambda_max_ratio": float(self.lambda_max_ratio)}
        if self.n_features is not None:
            model = select_l1(store, features=self.n_features,
                              n_lambdas=self.n_lambdas,
                              lambda_min_ratio=float(self.lambda_min_ratio), **options)
        else:
            model = select_l1(store, C=self.C, **options)
        self.model_ = model
        columns = np.asarray(model.features, dtype=np.int64) - self._offset
        order = np.argsort(columns, kind="stable")
        self.selected_features_ = columns[order]
        self._predict_coef = np.asarray(model.coef, dtype=np.float64)[order]
        self.intercept_ = np.array([float(model.intercept)])
        self.lambda_ = float(model.params["lambda"])
        self.lambda_max_ = float(model.params["lambda_max"])
        self.C_ = float(model.params["C"])
        self.path_ = list(model.history)
        self.n_iter_ = sum(int(r.get("solver_iterations", 0)) for r in self.path_)
        return self

    @property
    def coef_(self):
        """Weights over every input column, shape (1, n_features_in_)."""
        return self._dense_coef(self._predict_coef)
