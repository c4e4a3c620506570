"""The one scikit-learn estimator base class, serving every registered method.

:class:`MethodEstimator` fits through :func:`ultrafs.api.fit` and reads
everything else from the fitted :class:`~ultrafs.model.Model`: prediction
(``model_.decision_function_store`` for generated or grouped features, the
selected columns for linear ones), the selector mask, ``transform``,
feature names.  Its parameters are the method's
:class:`~ultrafs.methods.params.Params` fields (``seed`` is called
``random_state``, scikit-learn's word) and the run's: ``block_size``,
``scheduler``, ``n_jobs``, ``verbose``.  :func:`ultrafs.sklearn.estimator_class`
makes the class of each method.
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ultrafs.errors import ParameterError
from ultrafs.sklearn.matrices import (block_matrix, has_probabilistic_loss, sparse_decision,
                                      unlabelled_store)
from ultrafs.store.base import ColumnStore

__all__ = ["MethodEstimator", "RUN_PARAMETERS", "estimator_parameter"]

#: the estimator parameters of the run (not of the method), with defaults
RUN_PARAMETERS = {"block_size": None, "scheduler": None, "n_jobs": None, "verbose": 0}


def estimator_parameter(name: str) -> str:
    """The estimator's name of a method parameter (``seed`` -> ``random_state``)."""
    return "random_state" if name == "seed" else name


class MethodEstimator(SelectorMixin, BaseEstimator):
    """Base of the estimators of :mod:`ultrafs.sklearn` (one per method).

    A subclass sets ``method`` (a :class:`~ultrafs.methods.registry.Method`);
    :func:`ultrafs.sklearn.estimator_class` writes its ``__init__`` from the
    method's parameters.

    Attributes
    ----------
    model_ : ultrafs.model.Model
        The fitted model (what ``ultrafs select`` writes).
    classes_ : ndarray of shape (n_classes,)
        Classifiers: the class labels.
    n_features_in_ : int
        Input columns (a store's id space).
    selected_features_ : ndarray of int64 of shape (n_selected,), or list
        The selected features in the model's order: input columns (from 0
        for matrices, store ids for stores), or ``[j, k]`` ids of generated
        or grouped features.
    selected_groups_ : list
        The selected units (groups, nodes, kernels) of a structured space.
    selection_coef_ : ndarray of shape (n_selected,) or (n_selected, n_outputs)
        The method's own weights.
    selected_coef_ : ndarray, same shape
        The weights that predict (a refit's when it predicts).
    coef_ : ndarray of shape (n_outputs, n_features_in_)
        Linear features: ``selected_coef_`` over every input column.
    intercept_ : float or ndarray of shape (n_outputs,)
    history_ : list of dict
        One record per iteration.
    n_iter_ : int
    stop_reason_ : str
    """

    method = None

    #: whether the model's features are computed from input columns (linear,
    #: generated, grouped), so that the estimator is a selector of input
    #: columns (``get_support``, ``transform``...); False for a kernel basis
    #: (SKLR's random features or kernel columns mix every input), from the
    #: method's ``Params.estimator_selects_columns``
    selects_columns = True

    # ------------------------------------------------------------- fit
    def _method_options(self) -> dict:
        """The method's parameters from this estimator's attributes."""
        from ultrafs.methods.params import specs_of

        return self.method.params.estimator_options(
            {name: getattr(self, estimator_parameter(name))
             for name in specs_of(self.method.params)})

    def _execution(self):
        from ultrafs.methods.execution import Execution

        for name in ("block_size", "n_jobs"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(
                    value, (int, np.integer)) or value < 1):
                raise ParameterError(f"{name} must be None or an integer >= 1, got "
                                     f"{value!r}")
        if not isinstance(self.verbose, (int, np.integer)) or self.verbose < 0:
            raise ParameterError(f"verbose must be an integer >= 0, got {self.verbose!r}")
        from ultrafs.scoring.scheduling import check_scheduler, resolve_scheduler

        # resolved at fit time (scikit-learn's __init__ stores it unchanged):
        # an address connects, None finds the active Client; a method without
        # Dask passes (SKLR) only checks it
        check_scheduler(self.scheduler)
        scheduler = (resolve_scheduler(self.scheduler) if "passes" in self.method.execution
                     else self.scheduler)
        return Execution(scheduler=scheduler,
                         num_workers=None if self.n_jobs is None else int(self.n_jobs),
                         block_size=self.block_size, progress=self.verbose > 0)

    # ------------------------------------------------ clone and pickle
    def __sklearn_clone__(self):
        """A clone sharing this estimator's ``scheduler`` Client.

        A ``dask.distributed`` Client is a handle on a cluster, not a value:
        it is neither copied (its sockets cannot be) nor needed twice, so
        a clone made in this process gets the same Client; every other
        parameter is cloned as scikit-learn does.
        """
        from ultrafs.scoring.scheduling import is_client

        if not is_client(self.scheduler):
            return super().__sklearn_clone__()
        stand_in = copy.copy(self)
        stand_in.scheduler = None
        twin = super(MethodEstimator, stand_in).__sklearn_clone__()
        twin.scheduler = self.scheduler
        return twin

    def __getstate__(self):
        """The pickled state: a ``scheduler`` Client is kept as its address.

        An unpickled estimator (another process: joblib's workers of
        ``GridSearchCV(n_jobs=...)``, a dask worker) connects to that
        address when it fits (:func:`~ultrafs.scoring.scheduling.client_for_address`).
        A closed Client has no address left: it pickles as None (the
        active Client or local threads; results do not depend on it).
        """
        from ultrafs.scoring.scheduling import is_client, scheduler_address

        state = super().__getstate__()
        if is_client(state.get("scheduler")):
            state = {**state, "scheduler": scheduler_address(state["scheduler"])}
        return state

    def _is_classifier(self) -> bool:
        return self.method.estimator_kind == "classifier"

    def _training_store(self, X, y):
        """The store fitted on: ``X`` itself when a ColumnStore, else an
        in-memory store of the matrix (class indices of ``y`` for a
        classifier, its values otherwise); sets ``classes_`` and
        ``n_features_in_``."""
        if isinstance(X, ColumnStore):
            self.n_features_in_ = int(X.id_space)
            self._fitted_on_store = True
            if getattr(X, "target_type", "binary") != "continuous":
                self.classes_ = np.asarray(X.classes)
            if hasattr(self, "feature_names_in_"):  # from an earlier DataFrame fit
                del self.feature_names_in_
            return X
        X, y = validate_data(self, X, y, accept_sparse=("csr", "csc"),
                             dtype=(np.float64, np.float32), y_numeric=False)
        from ultrafs.store.memory import InMemoryStore

        kwargs = {} if self.block_size is None else {"block_size": self.block_size}
        if hasattr(self, "feature_names_in_"):      # a DataFrame's: into the model
            from ultrafs.store.feature_names import name_problem

            kwargs["feature_names"] = [name if name_problem(name) is None else None
                                       for name in self.feature_names_in_.tolist()]
        self._fitted_on_store = False
        if self._classifies(y):
            check_classification_targets(y)
            self.classes_, class_index = np.unique(y, return_inverse=True)
            if len(self.classes_) == 1:
                raise ValueError(
                    f"{type(self).__name__} needs samples of at least 2 classes, y "
                    f"has only one class ({self.classes_[0]!r})")
            kinds = self.method.targets
            if len(self.classes_) > 2 and "multiclass" not in kinds:
                from ultrafs.methods.targets import multiclass_alternatives

                raise ValueError("Only binary classification is supported. The type "
                                 "of the target is multiclass."
                                 + multiclass_alternatives(lambda m: m.estimator))
            return InMemoryStore(X, class_index.astype(np.float64), **kwargs)
        if hasattr(self, "classes_"):
            del self.classes_
        return InMemoryStore(X, np.asarray(y, dtype=np.float64), target="continuous",
                             **kwargs)

    def _classifies(self, y) -> bool:
        """Whether ``y`` holds classes (a classifier's always do)."""
        if self._is_classifier() or "continuous" not in self.method.targets:
            return True
        from sklearn.utils.multiclass import type_of_target

        return type_of_target(y) in ("binary", "multiclass")

    def _store_class_weight(self, class_weight):
        """``class_weight`` with the store's class values as keys: a store
        built from ``y`` holds class indices, so a dict's labels are mapped
        to their index in ``classes_``."""
        if self._fitted_on_store or not isinstance(class_weight, dict):
            return class_weight
        labels = self.classes_.tolist()
        mapped = {}
        for key, weight in class_weight.items():
            if key not in labels:
                raise ParameterError(f"class_weight names class {key!r}, not one of "
                                     f"the classes {labels}")
            mapped[float(labels.index(key))] = weight
        return mapped

    def fit(self, X, y=None, sample_weight=None):
        """Select features and fit the model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or
            an opened :class:`~ultrafs.store.base.ColumnStore`
        y : array-like of shape (n_samples,)
            Targets; ignored (may be None) when ``X`` is a store.
        sample_weight : array-like of shape (n_samples,), optional
            Per-sample weights (methods that take them).

        Returns
        -------
        self
        """
        from ultrafs.api import fit

        options = self._method_options()
        execution = self._execution()
        store = self._training_store(X, y)
        if "class_weight" in options:
            options["class_weight"] = self._store_class_weight(options["class_weight"])
        model = fit(self.method, store, sample_weight=sample_weight,
                    execution=execution, **options)
        if not self._fitted_on_store and hasattr(self, "classes_"):
            # the store held class indices: record the caller's labels
            model.classes = [float(c) if isinstance(c, (int, float, np.number))
                             and not isinstance(c, (bool, np.bool_)) else str(c)
                             for c in self.classes_.tolist()]
        self._set_fitted(model)
        return self

    def _set_fitted(self, model):
        self.model_ = model
        self.selected_features_ = (np.asarray(model.features, dtype=np.int64)
                                   if self._linear_space() else list(model.features))
        self.selected_groups_ = list(model.selected_groups)
        self.selection_coef_ = np.asarray(model.coef, dtype=np.float64)
        self.selected_coef_ = np.asarray(model.active_coef, dtype=np.float64)
        self.intercept_ = (float(model.active_intercept) if model.n_outputs == 1
                           else np.asarray(model.active_intercept, dtype=np.float64))
        self.history_ = list(model.history)
        self.n_iter_ = len(model.history)
        self.stop_reason_ = model.stop_reason
        self._per_column = {}
        if self.method.estimator_attributes is not None:
            from ultrafs.methods.per_column import PerColumn

            offset = self._store_id_offset() if self._fitted_on_store else 0
            attributes = self.method.estimator_attributes(
                model, offset, n_features_in=self.n_features_in_)
            for name, value in attributes.items():
                if isinstance(value, PerColumn):    # written when read
                    self._per_column[name] = value
                else:
                    setattr(self, name, value)

    def __getattr__(self, name):
        """A per-column attribute (a method's :class:`~ultrafs.methods.per_column.PerColumn`),
        written when read: nothing of ``n_features_in_`` size is kept."""
        per_column = self.__dict__.get("_per_column") or {}
        if name in per_column:
            return per_column[name].dense()
        prop = getattr(type(self), name, None)
        if isinstance(prop, property):      # its own AttributeError, with the reason
            return prop.fget(self)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ------------------------------------------------------ prediction
    def _predicts(self) -> bool:
        """Whether the estimator predicts: not a selector-only method's
        (``Method.estimator_kind == "selector"``)."""
        return self.method.estimator_kind != "selector"

    @available_if(_predicts)
    def decision_function(self, X):
        """Decision values ``X[:, selected_features_] @ selected_coef_ + intercept_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features_in_),
            or a ColumnStore

        Returns
        -------
        decision : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        """
        check_is_fitted(self)
        if isinstance(X, ColumnStore):
            return self.model_.decision_function_store(X)
        X = validate_data(self, X, accept_sparse=("csr", "csc"),
                          dtype=(np.float64, np.float32), reset=False)
        if not self._linear_space():
            return self.model_.decision_function_store(unlabelled_store(
                X, self._store_id_offset() if self._fitted_on_store else 0))
        columns = self.selected_features_
        if self._fitted_on_store:
            columns = columns - self._store_id_offset()
        if sp.issparse(X):
            decision = sparse_decision(X, columns, self.selected_coef_)
        else:
            decision = np.asarray(X[:, columns], dtype=np.float64) @ self.selected_coef_
        if self.selected_coef_.ndim == 1:
            decision = decision.ravel()
        return decision + self.intercept_

    @available_if(_predicts)
    def predict(self, X):
        """Predicted class labels (classifiers) or values."""
        decision = self.decision_function(X)
        if not hasattr(self, "classes_"):
            return decision
        if decision.ndim == 2:
            return self.classes_[np.argmax(decision, axis=1)]
        return self.classes_[(decision > 0).astype(int)]

    @available_if(lambda self: self._predicts() and has_probabilistic_loss(self))
    def predict_proba(self, X):
        """Class probabilities.

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

    @available_if(lambda self: self._predicts() and has_probabilistic_loss(self))
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        from scipy.special import log_softmax

        decision = self.decision_function(X)
        if decision.ndim == 2:
            return log_softmax(decision, axis=1)
        return np.column_stack([-np.logaddexp(0, decision),
                                -np.logaddexp(0, -decision)])

    # -------------------------------------------------------- selector
    def _store_id_offset(self):
        return int(self.model_.params.get("id_offset", 0))

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

    def _offers_selection(self) -> bool:
        """Whether the selector face applies: the method's features are
        computed from input columns (not a kernel basis)."""
        return self.selects_columns

    @available_if(_offers_selection)
    def get_support(self, indices=False):
        """Mask (or indices) of the input columns that take part in a
        selected feature.

        Only for methods whose features are computed from input columns:
        a kernel basis (SKLR) mixes every input, so it selects none.

        Parameters
        ----------
        indices : bool, default=False

        Returns
        -------
        support : ndarray of bool of shape (n_features_in_,), or of int
            The indices (increasing) are found without the mask, so they
            cost nothing per input column; the mask is refused in one line
            above ``DENSE_MAX_ENTRIES`` columns (a hashed width).
        """
        if indices:
            return self._support_indices()
        return super().get_support(indices=indices)

    def _support_indices(self):
        """Input columns that take part in a selected feature, increasing."""
        check_is_fitted(self)
        first, second = self._source_columns()
        return np.unique(np.concatenate((first, second[second >= 0])))

    def _get_support_mask(self):
        """Input columns that take part in a selected feature."""
        from ultrafs.methods.per_column import check_dense_size

        check_is_fitted(self)
        check_dense_size("get_support()", 1, self.n_features_in_,
                         "get_support(indices=True)", unit="booleans")
        first, second = self._source_columns()
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[first] = True
        mask[second[second >= 0]] = True
        return mask

    @property
    def coef_(self):
        """Weights over every input column, scikit-learn's shape (linear
        features); the compact view is ``selected_coef_``."""
        check_is_fitted(self)
        if "_coef" in self.__dict__:        # a method's own (estimator_attributes)
            return self.__dict__["_coef"]
        if not self._linear_space():
            raise AttributeError(
                "coef_ is only available for linear features (poly=1, no groups, "
                "tree or kernel): the weights of generated or grouped features are "
                "selected_coef_, named by get_feature_names_out()")
        from ultrafs.methods.per_column import check_dense_size

        n_outputs = self.model_.n_outputs
        check_dense_size("coef_", n_outputs, self.n_features_in_,
                         "the compact selected_coef_ with selected_features_")
        coef = np.zeros((n_outputs, self.n_features_in_), dtype=np.float64)
        columns, _ = self._source_columns()
        coef[:, columns] = self.selected_coef_.reshape(len(columns), n_outputs).T
        return coef

    def fit_transform(self, X, y=None, **fit_params):
        """``fit(X, y, **fit_params).transform(X)``."""
        return self.fit(X, y, **fit_params).transform(X)

    def transform(self, X):
        """The selected columns of X, or the selected generated features.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features_in_),
            or a ColumnStore

        Returns
        -------
        X_selected : ndarray or sparse matrix of shape (n_samples, n_selected)
            Linear features: ``X[:, get_support()]``; generated ones: in the
            model's order.  Sparse for a sparse X (same format) or a store
            (CSR), dense otherwise.
        """
        check_is_fitted(self)
        if isinstance(X, ColumnStore):
            return self._store_features(X, np.float64, None)
        if self._linear_space() and not sp.issparse(X):
            return super().transform(X)
        X = validate_data(self, X, accept_sparse=("csr", "csc"),
                          dtype=(np.float64, np.float32), reset=False)
        store = unlabelled_store(
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
        return block_matrix(block, store.n_samples, len(ids), dtype, like)

    @available_if(lambda self: self._offers_selection() and (
        not hasattr(self, "model_") or self._linear_space()))
    def inverse_transform(self, X):
        """Put the selected columns back in place, zeros elsewhere (linear
        features).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_selected)

        Returns
        -------
        X_original : ndarray or sparse matrix of shape (n_samples, n_features_in_)
        """
        return super().inverse_transform(X)

    @available_if(_offers_selection)
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
            Linear features: the names of the selected columns, in
            increasing order; degree 2: ``x3`` (linear term), ``x3^2``
            (square), ``x3*x7`` (cross), in the model's order.
        """
        check_is_fitted(self)
        stored = None
        if input_features is None and not hasattr(self, "feature_names_in_"):
            stored = getattr(self.model_, "feature_names", None)  # from the store

            def name(column):       # no list of n_features_in_ names (hashed widths)
                return f"x{column}"
        else:
            names = self._input_names(input_features)

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

    def _input_names(self, input_features):
        """The input columns' names: ``input_features`` (checked against
        ``feature_names_in_`` and ``n_features_in_``) or the fitted ones."""
        fitted = getattr(self, "feature_names_in_", None)
        if input_features is None:
            return fitted
        names = np.asarray(input_features, dtype=object)
        if fitted is not None and not np.array_equal(fitted, names):
            raise ValueError("input_features is not equal to feature_names_in_")
        if len(names) != self.n_features_in_:
            raise ValueError(f"input_features should have length equal to number of "
                             f"features ({self.n_features_in_}), got {len(names)}")
        return names

    def __sklearn_tags__(self):
        return self._method_tags(super().__sklearn_tags__())

    def _method_tags(self, tags):
        """scikit-learn's tags as the method says (sparse input, a selector
        or not, binary only or not); a generated class applies them after
        its ClassifierMixin's, which would reset the classifier's."""
        tags.input_tags.sparse = True
        if not self.selects_columns:
            tags.transformer_tags = None
        if tags.classifier_tags is not None:
            tags.classifier_tags.multi_class = "multiclass" in self.method.targets
        return tags


# scikit-learn wraps the transform and fit_transform a class defines (for
# set_output) when the class is made, which drops a descriptor: the
# selector face's condition goes on the wrapped methods
MethodEstimator.transform = available_if(MethodEstimator._offers_selection)(
    MethodEstimator.transform)
MethodEstimator.fit_transform = available_if(MethodEstimator._offers_selection)(
    MethodEstimator.fit_transform)
