"""scikit-learn estimator face of FGM."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (_check_feature_names_in, check_is_fitted,
                                      validate_data)

from ultrafs.api import select
from ultrafs.errors import ParameterError
from ultrafs.methods.fgm import validate_fgm_params
from ultrafs.store.base import ColumnStore

__all__ = ["FGMClassifier"]


def _unlabelled_store(X, id_offset):
    """Wrap a matrix as a store for prediction (labels are not used)."""
    from ultrafs.store.memory import InMemoryStore, compact_csc_arrays

    indptr, indices, data, n_rows, column_ids, id_space = compact_csc_arrays(X)
    return InMemoryStore.from_csc_arrays(
        indptr, indices, data, n_rows,
        np.ones(n_rows), np.array([0.0, 1.0]), id_offset=id_offset,
        column_ids=column_ids, id_space=id_space)


def _sparse_decision(X, columns, coef):
    """``X[:, columns] @ coef`` for a scipy matrix, in time and memory O(nnz).

    scipy's column indexing of a CSR matrix allocates an array per column
    of X, which a hashed feature space (2**31 columns and more) cannot
    afford; this goes through the ``(row, column, value)`` triplets.
    """
    coo = X.tocoo()
    columns = np.asarray(columns, dtype=np.int64)
    order = np.argsort(columns, kind="stable")
    sorted_columns = columns[order]
    weights = np.asarray(coef, dtype=np.float64)[order]
    decision = np.zeros((X.shape[0],) + weights.shape[1:], dtype=np.float64)
    if len(sorted_columns) == 0 or coo.nnz == 0:
        return decision
    entry_columns = coo.col.astype(np.int64)
    pos = np.minimum(np.searchsorted(sorted_columns, entry_columns), len(sorted_columns) - 1)
    hit = sorted_columns[pos] == entry_columns
    values = coo.data[hit].astype(np.float64)
    contribution = (values[:, None] * weights[pos[hit]] if weights.ndim == 2
                    else values * weights[pos[hit]])
    np.add.at(decision, coo.row[hit], contribution)
    return decision


def _has_probabilistic_loss(estimator):
    """Whether the loss defines probabilities (read from the loss registry)."""
    from ultrafs.solvers.losses import LOSSES, MULTICLASS_LOSSES

    return any(getattr(registry.get(estimator.loss), "probabilistic", False)
               for registry in (LOSSES, MULTICLASS_LOSSES))


#: largest dense ``coef_`` built, in entries (n_classes x n_features_in_;
#: 1 GiB of float64): hashed widths (2**31 columns) keep the compact view
DENSE_COEF_MAX_ENTRIES = 2**27


def _block_matrix(block, n_samples, n_columns, dtype, like):
    """A materialized :class:`~ultrafs.store.base.ColumnBlock` as a scipy matrix.

    CSC from the block's arrays, then in the format of ``like`` (a scipy
    matrix or array) or CSR when ``like`` is None.
    """
    array_api = like is not None and isinstance(like, sp.sparray)
    make = sp.csc_array if array_api else sp.csc_matrix
    matrix = make((block.values(dtype), block.indices, block.indptr),
                  shape=(n_samples, n_columns))
    return matrix.asformat("csr" if like is None else like.format)


class FGMClassifier(SelectorMixin, ClassifierMixin, BaseEstimator):
    """Feature Generating Machine (Tan, Tsang & Wang, JMLR 2014).

    Selects up to ``B * max_iter`` features by a cutting-plane loop: each
    outer iteration adds the ``B`` features that violate the optimality
    conditions most, then solves the ℓ2,1²-regularised problem
    ``½(Σ_h ‖ω_h‖)² + C Σ_i loss_i`` on the selected features only.

    With K >= 3 classes one feature set is shared by all classes: the loss
    is the multinomial logistic loss (``loss="logistic"``) or the
    one-vs-rest squared hinge, and the ℓ2,1² penalty groups the K weights
    of the features added at each iteration.

    Parameters
    ----------
    B : int, default=50
        Features added per outer iteration.
    C : float, "scale" or "auto", default="scale"
        Weight of the empirical loss (the paper's C, not scikit-learn's
        inverse regularisation of l1 models).  "scale": ``10 / mean_i
        max_j x_ij²`` (10 on 0/1 data; the same model whatever the scale of
        the rows); "auto": chosen on held-out rows of the training data
        from a grid around it (:mod:`ultrafs.methods.validation`), with the
        refit's C when ``refit=True``.
    loss : str, default="logistic"
        A registered loss name (:func:`ultrafs.solvers.losses.loss_names`);
        built in: "logistic" and "squared-hinge".
        Binary: logistic or squared hinge; K >= 3 classes: multinomial
        logistic or one-vs-rest squared hinge.
    max_iter : int, default=10
        T: the budget is ``B * T`` features with a nonzero weight; outer
        iterations go on until it is held (batches the penalty sets to zero
        do not count; at most ``3 T`` outer iterations), ``tol`` is met, or
        no candidate has a positive score.
    tol : float, default=1e-3
        ε_c: stop when the objective decreases by less than ``tol`` times
        the initial objective; 0 disables the test.
    fit_intercept : bool, default=True
    inner_tol : float, default=1e-3
        ε_in, the relative decrease that triggers the inner APG solver's
        optimality check.
    inner_kkt_tol : float or None, default=1e-4
        Relative KKT residual that certifies every subproblem's solution;
        None stops the inner solver on ``inner_tol`` alone (the paper's
        rule, which can stop far from the optimum).
    block_size : int or None, default=None
        Columns per scoring task (None: the store's own blocks).
    scheduler : None, str or distributed.Client, default=None
        Dask scheduler of the scoring passes ("threads" when None).
    n_jobs : int or None, default=None
        Threads (or processes) of a local scheduler's passes, and the most
        folds ``C="auto"`` fits at once (for data of at least 2**20 entries
        or 10,000 rows); None: the CPU count.  Results do not depend on it.
    refit : bool, default=False
        Refit an ℓ2-regularised model of the same loss on the selected
        columns only (the paper's de-biased model) and predict with it;
        ``selection_coef_`` keeps FGM's own weights.  With ``C="auto"`` the
        held-out rows also score FGM's own weights, and those predict where
        they score better (``model_.predictor``).
    refit_C : float or None, default=None
        ``C`` of the refit (None: ``C``, or chosen with it when
        ``C="auto"``).
    validation_fraction : float or None, default=None
        ``C="auto"``: share of the rows held out, stratified (None: 0.2, or
        5 folds for at most 10,000 rows; ignored for any other C, so that a
        search over C may hold it fixed).
    cv : int or None, default=None
        ``C="auto"``: this many stratified folds instead of one hold-out
        (ignored for any other C).
    random_state : int, default=0
        Seed of the ``C="auto"`` split or folds.
    class_weight : "balanced", dict or None, default=None
        Weights per class, multiplied into ``fit``'s ``sample_weight``:
        "balanced" is ``n_samples / (n_classes * count(class))``; a dict
        maps class labels to weights (others keep 1).  With weights,
        ``C="auto"`` chooses by the weighted held-out accuracy.
    poly : {1, 2}, default=1
        2 selects among all degree-2 polynomial features of the kernel
        ``(gamma x'z + coef0)^2`` (linear, squares, crosses), generated on
        the fly; selected crosses are reported as ``[j, k]`` pairs.
    gamma : float, default=1.0
    coef0 : float, default=1.0
    verbose : int, default=0
        > 0: show the progress of every scoring pass on stderr (the
        ``progress`` option of :func:`ultrafs.api.select`).
    groups : array-like of int, dict or None, default=None
        Select groups of columns (paper §2.2–2.3): one group id per column
        (negative: in no group), or a mapping ``{group id: [columns]}``
        for overlapping groups; ``B`` and the budget count groups, and the
        selected features are ``[group id, column]`` pairs (a column in two
        selected groups has two weights).
    tree : array-like of int or None, default=None
        Tree-structured groups: the parent of every node (-1 for roots),
        nodes ``0..n_features-1`` being the columns; features are
        ``[node id, column]`` pairs.
    kernel : {"hik", "chi2", "intersection", "js"} or None, default=None
        Select the features of an additive kernel: each column's explicit
        map (HIK: 100 levels; the others: 11 columns) is a group generated
        on the fly; features are ``[column, l]`` pairs (values must be >= 0).
    kernel_params : dict or None, default=None
        ``{"q": levels}`` for HIK (100), ``{"n": order, "period": L}`` for
        the others (5 and the documented L).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    selected_features_ : ndarray of int64, shape (n_selected,), or list
        Selected feature ids (those with a nonzero weight) in selection
        order: column numbers from 0 for numpy / scipy inputs, store ids
        (e.g. LIBSVM's 1-based) for stores.
        With ``poly=2`` a list whose entries are ``j`` (linear term) or
        ``[j, k]`` (square when j == k, cross otherwise).
    coef_ : ndarray of float64, shape (1, n_features_in_) or (n_classes, n_features_in_)
        scikit-learn's convention (``poly=1`` only): the weights that
        predict over every input column, zero for the columns not selected
        (one row for two classes, one per class for K >= 3); the refit's
        with ``refit=True`` (unless ``C="auto"`` chose FGM's), else FGM's.
        Built on access from
        ``selected_coef_`` (refused above ``DENSE_COEF_MAX_ENTRIES``
        entries, e.g. hashed widths).  With ``poly=2`` reading it raises
        AttributeError, as scikit-learn's ``SVC.coef_`` does for a
        non-linear kernel: the weights belong to generated features, not
        to input columns, so no input-column vector stands for them (and
        ``SelectFromModel`` says so instead of masking the wrong columns);
        they are ``selected_coef_``, named by :meth:`get_feature_names_out`.
    selected_coef_ : ndarray of float64, shape (n_selected,) or (n_selected, n_classes)
        The compact view: the weights that predict, aligned with
        ``selected_features_`` (one column per class with K >= 3 classes).
    selection_coef_ : ndarray of float64, same shape as ``selected_coef_``
        FGM's own weights (compact).
    intercept_ : float, or ndarray of shape (n_classes,)
    history_ : list of dict
        One record per outer iteration (objective, timings...).
    n_iter_ : int
        Outer iterations run.
    C_ : float
        The C used (resolved from "scale" or "auto").
    validation_ : dict or None
        With ``C="auto"``: the grid points tried (mean held-out accuracy and
        loss) and the chosen C (and refit C, and with ``refit=True`` the
        ``predictor``: ``"refit"``, or ``"selection"`` where FGM's own weights
        scored better).
    model_ : ultrafs.model.Model
    n_features_in_ : int
        Columns of X (for a store: its id space, the width of the matrices
        it predicts on).
    feature_names_in_ : ndarray of str, shape (n_features_in_,)
        Column names of a pandas DataFrame X (only then).

    Notes
    -----
    The estimator is also a scikit-learn feature selector
    (:class:`~sklearn.feature_selection.SelectorMixin`), so it goes into a
    ``Pipeline`` before any estimator, and ``SelectFromModel`` reads its
    ``coef_``.

    * ``poly=1``: :meth:`get_support` marks the selected input columns and
      :meth:`transform` returns ``X[:, get_support()]`` (columns in
      increasing order; dense in, dense out; sparse in, sparse out, taken
      in O(nnz) through the model's feature space); ``inverse_transform``
      puts them back.
    * ``poly=2``: :meth:`transform` returns the selected generated
      features, in the model's order, as the model computes them (the
      kernel's factors included: ``X_t @ selected_coef_ + intercept_`` is
      the decision value); :meth:`get_feature_names_out` names them
      ``x3`` (linear term), ``x3^2`` (square) and ``x3*x7`` (cross) from
      the input names; :meth:`get_support` marks the input columns that take
      part in at least one selected feature (the columns the model reads);
      there is no ``inverse_transform``.
    """

    def __init__(self, B=50, C="scale", loss="logistic", max_iter=10, tol=1e-3,
                 fit_intercept=True, inner_tol=1e-3, inner_kkt_tol=1e-4, block_size=None,
                 scheduler=None, poly=1, gamma=1.0, coef0=1.0, refit=False,
                 refit_C=None, validation_fraction=None, cv=None, random_state=0,
                 verbose=0, class_weight=None, groups=None, tree=None, kernel=None,
                 kernel_params=None, n_jobs=None):
        self.B = B
        self.C = C
        self.loss = loss
        self.max_iter = max_iter
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.inner_tol = inner_tol
        self.inner_kkt_tol = inner_kkt_tol
        self.block_size = block_size
        self.scheduler = scheduler
        self.poly = poly
        self.gamma = gamma
        self.coef0 = coef0
        self.groups = groups
        self.tree = tree
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.refit = refit
        self.refit_C = refit_C
        self.validation_fraction = validation_fraction
        self.cv = cv
        self.random_state = random_state
        self.verbose = verbose
        self.class_weight = class_weight
        self.n_jobs = n_jobs

    def fit(self, X, y=None, sample_weight=None):
        """Select features and fit the model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or
            an opened :class:`~ultrafs.store.base.ColumnStore`
        y : array-like of shape (n_samples,)
            Two or more classes; ignored (may be None) when ``X`` is a store.
        sample_weight : array-like of shape (n_samples,), optional
            Per-sample weights of the loss (finite, >= 0, not all zero).

        Returns
        -------
        self : FGMClassifier
        """
        validate_fgm_params(self.B, self.C, self.loss, self.max_iter, self.tol,
                            self.inner_tol, self.inner_kkt_tol)
        if self.block_size is not None and (
                not isinstance(self.block_size, (int, np.integer))
                or self.block_size < 1):
            raise ParameterError(
                f"block_size must be None or an integer >= 1, got {self.block_size!r}")
        if not isinstance(self.verbose, (int, np.integer)) or self.verbose < 0:
            raise ParameterError(f"verbose must be an integer >= 0, got {self.verbose!r}")
        if self.n_jobs is not None and (
                isinstance(self.n_jobs, bool)
                or not isinstance(self.n_jobs, (int, np.integer)) or self.n_jobs < 1):
            raise ParameterError(f"n_jobs must be None or an integer >= 1, got {self.n_jobs!r}")
        if isinstance(X, ColumnStore):
            store = X
            self.classes_ = np.asarray(store.classes)
            self.n_features_in_ = int(store.id_space)
            self._fitted_on_store = True
            if hasattr(self, "feature_names_in_"):  # from an earlier DataFrame fit
                del self.feature_names_in_
        else:
            X, y = validate_data(self, X, y, accept_sparse=("csr", "csc"),
                                 dtype=(np.float64, np.float32))
            check_classification_targets(y)
            self.classes_, class_index = np.unique(y, return_inverse=True)
            if len(self.classes_) == 1:
                raise ValueError(
                    "FGMClassifier needs samples of at least 2 classes, y has "
                    f"only one class ({self.classes_[0]!r})")
            from ultrafs.store.memory import InMemoryStore

            kwargs = {} if self.block_size is None else {"block_size": self.block_size}
            if hasattr(self, "feature_names_in_"):  # a DataFrame's: into the model
                from ultrafs.store.feature_names import name_problem

                kwargs["feature_names"] = [name if name_problem(name) is None else None
                                           for name in self.feature_names_in_.tolist()]
            store = InMemoryStore(X, class_index.astype(np.float64), **kwargs)
            self._fitted_on_store = False
        auto = isinstance(self.C, str) and self.C == "auto"
        model = select(store, B=int(self.B),
                       C=self.C if isinstance(self.C, str) else float(self.C),
                       loss=self.loss,
                       max_iter=int(self.max_iter), tol=float(self.tol),
                       fit_intercept=bool(self.fit_intercept),
                       inner_tol=float(self.inner_tol),
                       inner_kkt_tol=(None if self.inner_kkt_tol is None
                                      else float(self.inner_kkt_tol)),
                       block_size=self.block_size, scheduler=self.scheduler,
                       num_workers=None if self.n_jobs is None else int(self.n_jobs),
                       poly=self.poly, gamma=self.gamma, coef0=self.coef0,
                       groups=self.groups, tree=self.tree, kernel=self.kernel,
                       kernel_params=self.kernel_params,
                       refit=bool(self.refit),
                       refit_C=None if self.refit_C is None else float(self.refit_C),
                       validation_fraction=self.validation_fraction if auto else None,
                       cv=self.cv if auto else None,
                       seed=self.random_state, progress=self.verbose > 0,
                       sample_weight=sample_weight,
                       class_weight=self._store_class_weight())
        if not self._fitted_on_store:
            # the store held class indices: record the caller's labels
            model.classes = [float(c) if isinstance(c, (int, float, np.number))
                             and not isinstance(c, (bool, np.bool_)) else str(c)
                             for c in self.classes_.tolist()]
        self.model_ = model
        self.C_ = float(model.params["C"])
        self.validation_ = model.params.get("validation")
        self.selected_features_ = (np.asarray(model.features, dtype=np.int64)
                                   if self._linear_space() else list(model.features))
        self.selected_groups_ = list(model.selected_groups)
        self.selection_coef_ = np.asarray(model.coef, dtype=np.float64)
        self.selected_coef_ = np.asarray(model.active_coef, dtype=np.float64)
        self.intercept_ = (float(model.active_intercept) if model.n_outputs == 1
                           else np.asarray(model.active_intercept, dtype=np.float64))
        self.history_ = list(model.history)
        self.n_iter_ = len(model.history)
        return self

    def _store_class_weight(self):
        """``class_weight`` with the store's class values as keys.

        A store built from ``y`` holds class indices: a dict's labels are
        mapped to their index in ``classes_``.
        """
        weights = self.class_weight
        if self._fitted_on_store or not isinstance(weights, dict):
            return weights
        labels = self.classes_.tolist()
        mapped = {}
        for key, weight in weights.items():
            if key not in labels:
                raise ParameterError(f"class_weight names class {key!r}, not one of "
                                     f"the classes {labels}")
            mapped[float(labels.index(key))] = weight
        return mapped

    def decision_function(self, X):
        """Decision values ``X[:, selected_features_] @ selected_coef_ + intercept_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features_in_),
            or a ColumnStore

        Returns
        -------
        decision : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Binary: positive values predict ``classes_[1]``; K classes: the
            largest column is the predicted class.
        """
        check_is_fitted(self)
        if isinstance(X, ColumnStore):
            return self.model_.decision_function_store(X)
        X = validate_data(self, X, accept_sparse=("csr", "csc"),
                          dtype=(np.float64, np.float32), reset=False)
        if not self._linear_space():
            return self.model_.decision_function_store(_unlabelled_store(
                X, self._store_id_offset() if self._fitted_on_store else 0))
        columns = self.selected_features_
        if self._fitted_on_store:
            columns = columns - self._store_id_offset()
        if sp.issparse(X):
            decision = _sparse_decision(X, columns, self.selected_coef_)
        else:
            decision = np.asarray(X[:, columns], dtype=np.float64) @ self.selected_coef_
        if self.selected_coef_.ndim == 1:
            decision = decision.ravel()
        return decision + self.intercept_

    def _store_id_offset(self):
        return int(self.model_.params.get("id_offset", 0))

    # ------------------------------------------------------- selector face
    def _linear_space(self):
        """Whether the fitted features are the input columns themselves."""
        return self.model_.feature_space.get("kind", "linear") == "linear"

    def _source_columns(self):
        """Input columns of the selected features, in the model's order.

        Returns
        -------
        first, second : int64 arrays of shape (n_selected,)
            ``second`` is -1 for a linear term and equals ``first`` for a
            square.
        """
        from ultrafs.features import FEATURE_SPACES

        space = FEATURE_SPACES[self.model_.feature_space.get("kind", "linear")]
        offset = self._store_id_offset() if self._fitted_on_store else 0
        first, second = [], []
        for feature in self.model_.features:
            sources = space.source_ids(feature)
            first.append(int(sources[0]) - offset)
            second.append(int(sources[1]) - offset if len(sources) > 1 else -1)
        return np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)

    def _get_support_mask(self):
        """Input columns that take part in a selected feature (see the Notes)."""
        check_is_fitted(self)
        first, second = self._source_columns()
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[first] = True
        mask[second[second >= 0]] = True
        return mask

    @property
    def coef_(self):
        """Weights over every input column, scikit-learn's shape (``poly=1``).

        See the class's Attributes; the compact view is ``selected_coef_``.
        """
        check_is_fitted(self)
        if not self._linear_space():
            raise AttributeError(
                "coef_ is only available for linear features (poly=1, no groups, "
                "tree or kernel): the weights of generated or grouped features are "
                "selected_coef_, named by get_feature_names_out()")
        n_outputs = self.model_.n_outputs
        if n_outputs * self.n_features_in_ > DENSE_COEF_MAX_ENTRIES:
            raise ValueError(
                f"coef_ would hold {n_outputs} x {self.n_features_in_} weights; "
                f"use the compact selected_coef_ with selected_features_")
        coef = np.zeros((n_outputs, self.n_features_in_), dtype=np.float64)
        columns, _ = self._source_columns()
        coef[:, columns] = self.selected_coef_.reshape(len(columns), n_outputs).T
        return coef

    def transform(self, X):
        """The selected columns of X, or the selected generated features.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features_in_),
            or a ColumnStore

        Returns
        -------
        X_selected : ndarray or sparse matrix of shape (n_samples, n_selected)
            ``poly=1``: ``X[:, get_support()]``; ``poly=2``: the generated
            features in the model's order (see the Notes).  Sparse for a
            sparse X (same format) or a store (CSR), dense otherwise.
        """
        check_is_fitted(self)
        if isinstance(X, ColumnStore):
            return self._store_features(X, np.float64, None)
        if self._linear_space() and not sp.issparse(X):
            return super().transform(X)
        X = validate_data(self, X, accept_sparse=("csr", "csc"),
                          dtype=(np.float64, np.float32), reset=False)
        store = _unlabelled_store(
            X, self._store_id_offset() if self._fitted_on_store else 0)
        features = self._store_features(store, X.dtype, X if sp.issparse(X) else None)
        return features if sp.issparse(X) else features.toarray()

    def _store_features(self, store, dtype, like):
        """The selected features of a store's rows, through the model's feature space."""
        import warnings

        from ultrafs.errors import UltraFSWarning
        from ultrafs.features import feature_space_from_spec

        ids = list(self.model_.features)
        if self._linear_space():   # X[:, support]: increasing columns
            ids = sorted(ids)
        space = feature_space_from_spec(store, self.model_.feature_space)
        absent = space.absent_ids(ids)
        if absent:
            warnings.warn(
                f"{len(absent)} model feature(s) absent from the store "
                f"(e.g. id {absent[0]}) count as zero columns", UltraFSWarning,
                stacklevel=3)
        block = space.materialize_ids(ids, dtype=dtype)
        return _block_matrix(block, store.n_samples, len(ids), dtype, like)

    @available_if(lambda self: self.poly == 1 and self.groups is None
                  and self.tree is None and self.kernel is None)
    def inverse_transform(self, X):
        """Put the selected columns back in place, zeros elsewhere (``poly=1``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_selected)

        Returns
        -------
        X_original : ndarray or sparse matrix of shape (n_samples, n_features_in_)
        """
        return super().inverse_transform(X)

    def get_feature_names_out(self, input_features=None):
        """Names of the columns :meth:`transform` returns.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Names of the input columns; None: ``feature_names_in_`` (a
            DataFrame's columns) when fitted on a DataFrame, else the names
            the training store carries (``model_.feature_names``), and
            ``x0``, ``x1``... (column numbers) for the columns without one.

        Returns
        -------
        feature_names_out : ndarray of str objects
            ``poly=1``: the names of the selected columns, in increasing
            order; ``poly=2``: ``x3`` (linear term), ``x3^2`` (square),
            ``x3*x7`` (cross), in the model's order.
        """
        check_is_fitted(self)
        stored = None
        if input_features is None and not hasattr(self, "feature_names_in_"):
            stored = getattr(self.model_, "feature_names", None)  # from the store

            def name(column):       # no list of n_features_in_ names (hashed widths)
                return f"x{column}"
        else:
            names = _check_feature_names_in(self, input_features)

            def name(column):
                return str(names[column])
        from ultrafs.features import FEATURE_SPACES

        space = FEATURE_SPACES[self.model_.feature_space.get("kind", "linear")]
        offset = self._store_id_offset() if self._fitted_on_store else 0
        out = [space.name_of_id(fid, lambda j: name(j - offset))
               for fid in self.model_.features]
        if stored is not None:
            out = [default if given is None else given for default, given in zip(out, stored)]
        if self._linear_space():    # the order of transform's columns
            out = [out[i] for i in np.argsort(self._source_columns()[0], kind="stable")]
        return np.asarray(out, dtype=object)

    def predict(self, X):
        """Predicted class labels."""
        decision = self.decision_function(X)
        if decision.ndim == 2:
            return self.classes_[np.argmax(decision, axis=1)]
        return self.classes_[(decision > 0).astype(int)]

    @available_if(_has_probabilistic_loss)
    def predict_proba(self, X):
        """Class probabilities (logistic loss only).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_`` (softmax of the decision values for
            K >= 3 classes).
        """
        from scipy.special import expit, softmax

        decision = self.decision_function(X)
        if decision.ndim == 2:
            return softmax(decision, axis=1)
        positive = expit(decision)
        return np.column_stack([1.0 - positive, positive])

    @available_if(_has_probabilistic_loss)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        from scipy.special import log_softmax

        decision = self.decision_function(X)
        if decision.ndim == 2:
            return log_softmax(decision, axis=1)
        return np.column_stack([-np.logaddexp(0, decision),
                                -np.logaddexp(0, -decision)])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = True
        return tags
