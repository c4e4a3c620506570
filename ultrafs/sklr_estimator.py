"""scikit-learn face of sparse kernel logistic regression (seed 001)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from ultrafs.api import select_sklr
from ultrafs.binary_linear import BinaryLinearMixin

__all__ = ["SparseKernelLogisticRegression"]


class SparseKernelLogisticRegression(BinaryLinearMixin, ClassifierMixin, BaseEstimator):
    """ℓ1-regularised logistic regression on a kernel basis (Qin et al.).

    ``min_w sum_i log(1 + exp(-y_i (φ(x_i)'w + c))) + λ ||w||_1`` with ``φ``
    the ``n_components`` random Fourier features of the RBF kernel
    ``exp(-||x - z||²/σ²)`` (``basis="rff"``: generated on the fly from
    ``random_state``, never stored) or the exact kernel columns on the
    training points (``basis="rbf"``, small data), ``λ = lam_ratio λ_max``,
    solved to a duality-gap certificate by one of seed 001's solvers
    (:mod:`ultrafs.solvers.l1_solvers`).  A sparse classifier: the
    coefficients index basis functions, not input features.

    Parameters
    ----------
    basis : {"rff", "rbf"}, default="rff"
    n_components : int, default=1000
    sigma : float, optional
        Kernel width; None: the median heuristic.
    solver : {"fista", "mfista", "cgd", "sgd"}, default="cgd"
    lam_ratio : float, default=0.1
    two_stage : float, optional
        Re-solve on the support at ``two_stage * λ`` (the paper's 0.1).
    fit_intercept : bool, default=True
    tol, max_iter : optional
        The solver's certificate and cap (defaults per solver).
    random_state : int, default=0
        Seed of Ω, b, the median heuristic and SGD-C.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_basis)
        Weights of the basis functions (random features, or training points).
    intercept_ : ndarray of shape (1,)
    support_ : int64 ndarray
        Basis functions with a nonzero weight (random-feature numbers, or
        training rows for ``rbf``).
    sigma_ : float
    lam_, lam_max_ : float
    duality_gap_ : float
        Relative duality gap at the solution.
    n_iter_ : int
    model_ : ultrafs.model.Model
    n_features_in_ : int
    """

    def __init__(self, basis="rff", n_components=1000, *, sigma=None, solver="cgd",
                 lam_ratio=0.1, two_stage=None, fit_intercept=True, tol=None,
                 max_iter=None, random_state=0):
        self.basis = basis
        self.n_components = n_components
        self.sigma = sigma
        self.solver = solver
        self.lam_ratio = lam_ratio
        self.two_stage = two_stage
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    #: the mixin's in-memory store takes no block size here
    block_size = None

    def fit(self, X, y=None):
        """Fit on a matrix (two classes) or an opened binary ColumnStore.

        Returns
        -------
        self : SparseKernelLogisticRegression
        """
        store = self._training_store(X, y)
        model = select_sklr(store, basis=self.basis, n_components=self.n_components,
                            sigma=self.sigma, seed=self.random_state, solver=self.solver,
                            lam_ratio=self.lam_ratio, two_stage=self.two_stage,
                            fit_intercept=bool(self.fit_intercept), tol=self.tol,
                            max_iter=self.max_iter)
        p = model.params
        self.model_ = model
        if self.basis == "rbf":
            self.support_ = np.asarray(p["support_rows"], dtype=np.int64)
        else:
            self.support_ = np.asarray(model.features, dtype=np.int64)
        coef = np.zeros((1, p["n_basis"]))
        coef[0, self.support_] = model.coef
        self.coef_ = coef
        self.intercept_ = np.array([float(model.intercept)])
        self.sigma_ = float(p["sigma"])
        self.lam_ = float(p["lam"])
        self.lam_max_ = float(p["lam_max"])
        self.duality_gap_ = float(p["rel_gap"])
        self.n_iter_ = int(p["n_iter"])
        return self

    def decision_function(self, X):
        """``φ(x)'coef_ + intercept_``; positive values predict ``classes_[1]``."""
        decision, X = self._store_decision_or_matrix(X)
        if X is None:
            return decision
        from ultrafs.store.memory import InMemoryStore

        return self.model_.decision_function_store(
            InMemoryStore(X, np.zeros(X.shape[0]), target="none"))
