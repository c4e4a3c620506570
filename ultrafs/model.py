"""Versioned model files and prediction from a store.

A model file is one JSON object::

    {"format": "ultrafs-model", "format_version": 1,
     "features": [...], "coef": [...], "intercept": float,
     "batches": [0, B, 2B, ...], "loss": "logistic", "classes": [neg, pos],
     "feature_space": {"kind": "linear"}, "params": {...},
     "history": [...], "stop_reason": "...", "created_with": "ultrafs x.y"}

``features`` holds user-visible feature ids in selection order (store ids:
1-based for 1-based LIBSVM files); ``coef`` is aligned with it.  The
decision value of a sample is ``sum_j coef[j] * x[features[j]] + intercept``
and the predicted class is ``classes[1]`` when it is positive.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from ultrafs import __version__
from ultrafs.atomic import write_json_atomic
from ultrafs.errors import InputFormatError, UltraFSWarning

__all__ = ["Model", "MODEL_FORMAT", "MODEL_VERSION"]

MODEL_FORMAT = "ultrafs-model"
MODEL_VERSION = 1


@dataclass
class Model:
    """A fitted FGM model.

    Attributes
    ----------
    features : list
        User-visible feature ids in selection order.
    coef : float64 array, shape (p,)
    intercept : float
        Decision value = X[:, features] @ coef + intercept.
    batches : list of int
        Batch boundaries (features added by each outer iteration).
    loss : str
    classes : list of float
        ``[negative, positive]`` original label values.
    feature_space : dict
    params : dict
    history : list of dict
    stop_reason : str
    """

    features: list
    coef: np.ndarray
    intercept: float
    batches: list
    loss: str
    classes: list
    feature_space: dict = field(default_factory=lambda: {"kind": "linear"})
    params: dict = field(default_factory=dict)
    history: list = field(default_factory=list)
    stop_reason: str = ""

    # ------------------------------------------------------------ file format
    def to_dict(self) -> dict:
        """The JSON-serialisable model file content."""
        return {
            "format": MODEL_FORMAT,
            "format_version": MODEL_VERSION,
            "features": list(self.features),
            "coef": [float(c) for c in self.coef],
            "intercept": float(self.intercept),
            "batches": [int(g) for g in self.batches],
            "loss": self.loss,
            "classes": [float(c) for c in self.classes],
            "feature_space": dict(self.feature_space),
            "params": dict(self.params),
            "history": list(self.history),
            "stop_reason": self.stop_reason,
            "created_with": f"ultrafs {__version__}",
        }

    def save(self, path) -> None:
        """Write the model file atomically."""
        write_json_atomic(self.to_dict(), path)

    @classmethod
    def from_dict(cls, obj, where="model") -> "Model":
        """Build a model from a parsed model file, validating it."""
        if not isinstance(obj, dict) or obj.get("format") != MODEL_FORMAT:
            raise InputFormatError(f"{where}: not an ultrafs model file")
        version = obj.get("format_version")
        if version != MODEL_VERSION:
            raise InputFormatError(
                f"{where}: model format version {version!r} is not supported "
                f"(this ultrafs reads version {MODEL_VERSION})")
        try:
            features = list(obj["features"])
            coef = np.asarray(obj["coef"], dtype=np.float64)
            intercept = float(obj["intercept"])
            classes = [float(c) for c in obj["classes"]]
            loss = str(obj["loss"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputFormatError(f"{where}: invalid model file ({exc})") from None
        if coef.shape != (len(features),) or len(classes) != 2 \
                or not np.all(np.isfinite(coef)) or not math.isfinite(intercept):
            raise InputFormatError(f"{where}: inconsistent model file")
        return cls(features=features, coef=coef, intercept=intercept,
                   batches=list(obj.get("batches", [0, len(features)])),
                   loss=loss, classes=classes,
                   feature_space=dict(obj.get("feature_space", {"kind": "linear"})),
                   params=dict(obj.get("params", {})),
                   history=list(obj.get("history", [])),
                   stop_reason=str(obj.get("stop_reason", "")))

    @classmethod
    def load(cls, path) -> "Model":
        """Read and validate a model file."""
        path = os.fspath(path)
        try:
            with open(path) as fh:
                obj = json.load(fh)
        except FileNotFoundError:
            raise InputFormatError(f"{path}: no such model file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputFormatError(f"{path}: not a JSON model file ({exc})") from None
        return cls.from_dict(obj, where=path)

    # -------------------------------------------------------------- prediction
    def truncated(self, n_batches: int) -> "Model":
        """The model restricted to the features of the first ``n_batches``."""
        stop = int(self.batches[min(n_batches, len(self.batches) - 1)])
        return Model(self.features[:stop], self.coef[:stop].copy(),
                     self.intercept, list(self.batches[:n_batches + 1]),
                     self.loss, self.classes, self.feature_space, self.params,
                     self.history[:n_batches], self.stop_reason)

    def decision_function_store(self, store) -> np.ndarray:
        """Decision values for every row of a store.

        Only the source columns of the model's features are read (and, for
        degree-2 features, only the products the model needs are formed).
        Features absent from the store (ids beyond its columns, or below
        its first id) count as zero columns, with a warning.
        """
        from ultrafs.features import feature_space_from_spec
        from ultrafs.kernels.sparse_ops import csc_matvec

        features = feature_space_from_spec(store, self.feature_space)
        absent = features.absent_ids(self.features)
        if absent:
            warnings.warn(
                f"{len(absent)} model feature(s) absent from the store "
                f"(e.g. id {absent[0]}) count as zero columns", UltraFSWarning,
                stacklevel=2)
        block = features.materialize_ids(self.features)
        decision = csc_matvec(block.indptr, block.indices,
                              block.values(np.float64), self.coef,
                              store.n_samples)
        return decision + self.intercept

    def predict_from_decision(self, decision) -> np.ndarray:
        """Original class labels from decision values."""
        classes = np.asarray(self.classes)
        return np.where(np.asarray(decision) > 0, classes[1], classes[0])

    def proba_from_decision(self, decision) -> np.ndarray:
        """P(positive class) for the logistic loss."""
        if self.loss != "logistic":
            raise InputFormatError(
                f"probabilities need the logistic loss, this model uses {self.loss}")
        from scipy.special import expit

        return expit(np.asarray(decision))

    def evaluate_store(self, store) -> dict:
        """Accuracy, AUC and counts on a labelled store."""
        decision = self.decision_function_store(store)
        y_pm = store.read_labels()
        truth = np.where(y_pm > 0, store.classes[1], store.classes[0])
        predicted = self.predict_from_decision(decision)
        positive = truth == self.classes[1]
        result = {
            "n_samples": int(store.n_samples),
            "n_features_model": len(self.features),
            "n_nonzero_coef": int(np.count_nonzero(self.coef)),
            "accuracy": float(np.mean(predicted == truth)),
            "auc": _roc_auc(positive, decision),
        }
        if self.loss == "logistic":
            margin = np.where(positive, decision, -decision)
            result["log_loss"] = float(np.mean(np.logaddexp(0.0, -margin)))
        return result


def _roc_auc(positive, decision) -> float:
    """scikit-learn's ROC AUC; NaN when only one class is present."""
    from sklearn.metrics import roc_auc_score

    positive = np.asarray(positive, dtype=bool)
    if positive.all() or not positive.any():
        return float("nan")
    return float(roc_auc_score(positive, decision))
