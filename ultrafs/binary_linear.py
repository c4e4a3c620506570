"""What the binary linear estimators share (ℓ1-LR, MSLR): prediction from
the selected columns, the selector mask and scikit-learn's tags."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from ultrafs.store.base import ColumnStore

__all__ = ["BinaryLinearMixin"]


class BinaryLinearMixin:
    """Prediction and selection for a fitted binary linear model.

    A subclass sets, in ``fit``: ``classes_`` (2), ``n_features_in_``,
    ``selected_features_`` (increasing columns), ``_predict_coef`` (their
    weights), ``intercept_`` (shape (1,)) and ``model_`` (the
    :class:`~ultrafs.model.Model`, which predicts on stores).
    """

    def _training_store(self, X, y):
        """The store ``fit`` selects from: ``X`` itself when it is an opened
        binary ColumnStore, else an in-memory store of the matrix with the
        class indices of ``y``; sets ``classes_``, ``n_features_in_`` and
        the store's id offset (``_offset``)."""
        if isinstance(X, ColumnStore):
            self.classes_ = np.asarray(X.classes)
            self.n_features_in_ = int(X.id_space)
            self._offset = int(X.id_offset)
            return X
        X, y = validate_data(self, X, y, accept_sparse=("csr", "csc"),
                             dtype=(np.float64, np.float32))
        check_classification_targets(y)
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind != "binary":
            raise ValueError("Only binary classification is supported. The type of "
                             f"the target is {kind}.")
        self.classes_, index = np.unique(y, return_inverse=True)
        if len(self.classes_) != 2:
            raise ValueError(f"{type(self).__name__} needs 2 classes; y has 1 class")
        from ultrafs.store.memory import InMemoryStore

        kwargs = {} if self.block_size is None else {"block_size": self.block_size}
        self._offset = 0
        return InMemoryStore(X, index.astype(np.float64), **kwargs)

    def _dense_coef(self, selected):
        """``selected`` weights spread over every input column, shape (1, n)."""
        check_is_fitted(self)
        coef = np.zeros((1, self.n_features_in_))
        coef[0, self.selected_features_] = selected
        return coef

    def _get_support_mask(self):
        check_is_fitted(self)
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.selected_features_] = True
        return mask

    def _store_decision_or_matrix(self, X):
        """``(decision, None)`` for an opened store (the model predicts it),
        else ``(None, X)`` with ``X`` validated against the fitted shape."""
        check_is_fitted(self)
        if isinstance(X, ColumnStore):
            return self.model_.decision_function_store(X), None
        return None, validate_data(self, X, accept_sparse=("csr", "csc"),
                                   dtype=(np.float64, np.float32), reset=False)

    def decision_function(self, X):
        """``X @ coef_ + intercept_``; positive values predict ``classes_[1]``."""
        decision, X = self._store_decision_or_matrix(X)
        if X is None:
            return decision
        columns = self.selected_features_
        if sp.issparse(X):
            decision = (np.zeros(X.shape[0]) if not len(columns)
                        else np.asarray(X.tocsc()[:, columns] @ self._predict_coef).ravel())
        else:
            decision = np.asarray(X[:, columns], dtype=np.float64) @ self._predict_coef
        return decision + self.intercept_[0]

    def predict(self, X):
        """Predicted class labels."""
        decision = self.decision_function(X)
        return self.classes_[(decision > 0).astype(int)]

    def predict_proba(self, X):
        """Probabilities of ``classes_`` (columns), shape (n_samples, 2)."""
        from scipy.special import expit

        positive = expit(self.decision_function(X))
        return np.column_stack([1.0 - positive, positive])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags
