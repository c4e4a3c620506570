"""scikit-learn face of minimax sparse logistic regression (seed 000)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_selection import SelectorMixin

from ultrafs.api import select_mslr
from ultrafs.binary_linear import BinaryLinearMixin

__all__ = ["MSLRClassifier"]


class MSLRClassifier(BinaryLinearMixin, SelectorMixin, ClassifierMixin, BaseEstimator):
    """Minimax sparse logistic regression (Tan, Tsang & Wang, TNNLS 2013).

    The cutting plane of :mod:`ultrafs.methods.mslr`: each iteration adds
    the constraint of the ``B`` (r) features with the largest
    ``(Σ_i α_i y_i x_ij)²`` (one streamed pass over the columns) and solves
    the reduced minimax by smoothing and coordinate descent, certified by
    its duality gap; at most ``max_iter`` (T_m) iterations, so at most
    ``B · max_iter`` features.  The selected features are then retrained
    by ℓ2-regularised logistic regression (``retrain_C``, the paper's 5),
    which predicts; with ``retrain=False`` MSLR's own weights (no bias) do.

    Parameters
    ----------
    B : int, default=10
        r: features per constraint.
    C : float or "scale", default=10.0
        The loss weight of MSLR (the paper's 10).
    max_iter : int, default=10
        T_m.
    tol : float, default=1e-3
        ε of the cutting plane's violation test (0: run T_m iterations
        unless a constraint repeats).
    subproblem_tol : float, default=1e-4
        Relative duality gap certifying each reduced problem.
    retrain : bool, default=True
    retrain_C : float or "auto", default=5.0
    retrain_intercept : bool, default=True
    block_size : int, optional
        Columns per task of the scoring passes.
    scheduler : optional
        Dask scheduler of the scoring passes.
    seed : int, default=0
        Seed of the sweeps' row orders and of ``retrain_C="auto"``'s split.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features_in_)
        Weights of the predicting model (the retraining's, else MSLR's).
    intercept_ : ndarray of shape (1,)
    mslr_coef_ : ndarray of shape (1, n_features_in_)
        MSLR's own classifier ``v = d ⊙ c(α)`` (no bias).
    selected_features_ : int64 ndarray
        Columns of the union of the constraints, increasing.
    constraints_ : list of int64 arrays
        The columns of every constraint ``S_t``, in selection order.
    mu_ : ndarray of shape (n_constraints,)
        The constraints' weights (sum 1).
    history_ : list of dict
        Per-iteration records (objective, duality gap, q, sweeps, seconds).
    stop_reason_ : str
    model_ : ultrafs.model.Model
    n_features_in_ : int
    """

    def __init__(self, B=10, C=10.0, *, max_iter=10, tol=1e-3, subproblem_tol=1e-4,
                 retrain=True, retrain_C=5.0, retrain_intercept=True, block_size=None,
                 scheduler=None, seed=0):
        self.B = B
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.subproblem_tol = subproblem_tol
        self.retrain = retrain
        self.retrain_C = retrain_C
        self.retrain_intercept = retrain_intercept
        self.block_size = block_size
        self.scheduler = scheduler
        self.seed = seed

    def fit(self, X, y=None):
        """Fit on a matrix (two classes) or an opened binary ColumnStore.

        Returns
        -------
        self : MSLRClassifier
        """
        store = self._training_store(X, y)
        model = select_mslr(store, B=self.B, C=self.C, max_iter=self.max_iter,
                            tol=self.tol, subproblem_tol=self.subproblem_tol,
                            retrain=bool(self.retrain), retrain_C=self.retrain_C,
                            retrain_intercept=bool(self.retrain_intercept),
                            block_size=self.block_size, scheduler=self.scheduler,
                            seed=self.seed)
        self.model_ = model
        columns = np.asarray(model.features, dtype=np.int64) - self._offset
        order = np.argsort(columns, kind="stable")
        self.selected_features_ = columns[order]
        self._mslr_coef = np.asarray(model.coef, dtype=np.float64)[order]
        if model.refit is not None:
            self._predict_coef = np.asarray(model.refit["coef"], dtype=np.float64)[order]
            self.intercept_ = np.array([float(model.refit["intercept"])])
        else:
            self._predict_coef = self._mslr_coef
            self.intercept_ = np.array([0.0])
        self.constraints_ = [np.asarray(s, dtype=np.int64) - self._offset
                             for s in model.params["constraints"]]
        self.mu_ = np.asarray(model.params["mu"], dtype=np.float64)
        self.history_ = list(model.history)
        self.stop_reason_ = model.stop_reason
        self.n_iter_ = len(self.history_)
        return self

    @property
    def coef_(self):
        """Weights of the predicting model over every input column."""
        return self._dense_coef(self._predict_coef)

    @property
    def mslr_coef_(self):
        """MSLR's own weights over every input column (no bias)."""
        return self._dense_coef(self._mslr_coef)
