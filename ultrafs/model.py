"""Versioned model files and prediction from a store.

A model file (format version 2) is one JSON object::

    {"format": "ultrafs-model", "format_version": 2,
     "target": "binary" | "multiclass", "classes": [...],
     "features": [...], "coef": [...], "intercept": ...,
     "batches": [0, B, 2B, ...], "loss": "logistic",
     "feature_space": {"kind": "linear"}, "params": {...},
     "history": [...], "stop_reason": "...", "created_with": "ultrafs x.y"}

``features`` holds user-visible feature ids in selection order (store ids:
1-based for 1-based LIBSVM files); ``coef`` is aligned with it.

* binary: ``classes`` is ``[negative, positive]``, ``coef`` a list of
  floats and ``intercept`` a float; the decision value of a sample is
  ``sum_j coef[j] * x[features[j]] + intercept`` and the predicted class
  is ``classes[1]`` when it is positive.
* multiclass: ``classes`` holds the K class values, ``coef`` one list of K
  weights per feature and ``intercept`` K floats; the decision values are
  ``x[features] @ coef + intercept`` and the predicted class is the one
  with the largest decision value (probabilities: their softmax, for the
  logistic loss).

``batches`` are the boundaries of the features added by each outer
iteration.  Version 1 files (binary only, boundaries under ``groups``)
still load.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from ultrafs import __version__
from ultrafs.atomic import write_json_atomic
from ultrafs.errors import InputFormatError, UltraFSWarning

__all__ = ["Model", "MODEL_FORMAT", "MODEL_VERSION"]

MODEL_FORMAT = "ultrafs-model"
MODEL_VERSION = 2
#: model format versions this ultrafs reads
READABLE_VERSIONS = (1, 2)
TARGETS = ("binary", "multiclass")


@dataclass
class Model:
    """A fitted FGM model.

    Attributes
    ----------
    features : list
        User-visible feature ids in selection order.
    coef : float64 array, shape (p,) or (p, K)
    intercept : float, or float64 array of shape (K,)
        Decision value = X[:, features] @ coef + intercept.
    batches : list of int
        Batch boundaries (features added by each outer iteration).
    loss : str
    classes : list of float or str
        ``[negative, positive]`` original label values, or the K class
        values in the order of ``coef``'s columns (strings when the
        estimator was fitted on string labels).
    feature_space : dict
    params : dict
    history : list of dict
    stop_reason : str
    target : {"binary", "multiclass"}
    refit : dict or None
        The ℓ2-regularised refit of the same loss on the selected columns
        only (``coef``, ``intercept`` shaped as above, and its ``C``), when
        one was made.
    predictor : {"selection", "refit"}
        Which weights predict: FGM's (``coef``, ``intercept``) or the
        refit's.
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
    target: str = "binary"
    refit: dict | None = None
    predictor: str = "selection"

    @property
    def active_coef(self) -> np.ndarray:
        """The weights that predict (see :attr:`predictor`)."""
        return self.refit["coef"] if self.predictor == "refit" else self.coef

    @property
    def active_intercept(self):
        """The intercept that predicts (see :attr:`predictor`)."""
        return self.refit["intercept"] if self.predictor == "refit" else self.intercept

    @property
    def n_outputs(self) -> int:
        """Decision values per sample (1 for binary models, K otherwise)."""
        return 1 if self.target == "binary" else len(self.classes)

    @property
    def probabilistic(self) -> bool:
        """Whether the loss defines class probabilities (from the loss registry)."""
        from ultrafs.errors import ParameterError
        from ultrafs.solvers.losses import get_loss

        try:
            return bool(get_loss(self.loss, self.target).probabilistic)
        except ParameterError:  # a loss this ultrafs does not know
            return False

    # ------------------------------------------------------------ file format
    def to_dict(self) -> dict:
        """The JSON-serialisable model file content."""
        return {
            "format": MODEL_FORMAT,
            "format_version": MODEL_VERSION,
            "target": self.target,
            "features": list(self.features),
            "coef": np.asarray(self.coef, dtype=np.float64).tolist(),
            "intercept": _intercept_json(self.intercept),
            "batches": [int(g) for g in self.batches],
            "loss": self.loss,
            "classes": [c if isinstance(c, str) else float(c) for c in self.classes],
            "feature_space": dict(self.feature_space),
            "params": dict(self.params),
            "history": list(self.history),
            "stop_reason": self.stop_reason,
            "predictor": self.predictor,
            **({"refit": {"coef": np.asarray(self.refit["coef"]).tolist(),
                          "intercept": _intercept_json(self.refit["intercept"]),
                          "C": float(self.refit["C"])}}
               if self.refit is not None else {}),
            "created_with": f"ultrafs {__version__}",
        }

    def save(self, path) -> None:
        """Write the model file atomically."""
        write_json_atomic(self.to_dict(), path)

    @classmethod
    def from_dict(cls, obj, where="model") -> "Model":
        """Build a model from a parsed model file (version 1 or 2), validating it."""
        if not isinstance(obj, dict) or obj.get("format") != MODEL_FORMAT:
            raise InputFormatError(f"{where}: not an ultrafs model file")
        version = obj.get("format_version")
        if version not in READABLE_VERSIONS or isinstance(version, bool):
            raise InputFormatError(
                f"{where}: model format version {version!r} is not supported "
                f"(this ultrafs reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))})")
        target = obj.get("target", "binary") if version >= 2 else "binary"
        if target not in TARGETS:
            raise InputFormatError(f"{where}: unknown target {target!r} in model file")
        batch_key = "batches" if version >= 2 else "groups"
        try:
            features = list(obj["features"])
            coef = np.asarray(obj["coef"], dtype=np.float64)
            classes = [_class_value(c) for c in obj["classes"]]
            intercept = (float(obj["intercept"]) if target == "binary"
                         else np.asarray(obj["intercept"], dtype=np.float64))
            loss = str(obj["loss"])
            batches = [int(b) for b in obj.get(batch_key, [0, len(features)])]
        except (KeyError, TypeError, ValueError) as exc:
            raise InputFormatError(f"{where}: invalid model file ({exc})") from None
        n_classes = len(classes)
        shape = (len(features),) if target == "binary" else (len(features), n_classes)
        consistent = (
            coef.shape == shape and np.all(np.isfinite(coef))
            and np.all(np.isfinite(intercept))
            and (n_classes == 2 if target == "binary" else
                 n_classes >= 3 and np.shape(intercept) == (n_classes,))
            and len(set(classes)) == n_classes
            and batches[:1] == [0] and batches[-1:] == [len(features)]
            and all(a <= b for a, b in zip(batches, batches[1:])))
        if not consistent:
            raise InputFormatError(f"{where}: inconsistent model file")
        refit, predictor = _read_refit(obj, shape, intercept, where)
        return cls(features=features, coef=coef, intercept=intercept,
                   batches=batches, loss=loss, classes=classes,
                   feature_space=dict(obj.get("feature_space", {"kind": "linear"})),
                   params=dict(obj.get("params", {})),
                   history=list(obj.get("history", [])),
                   stop_reason=str(obj.get("stop_reason", "")),
                   target=target, refit=refit, predictor=predictor)

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
                     self.history[:n_batches], self.stop_reason, self.target)
        # the refit's weights belong to the whole selection: a truncated
        # model predicts with FGM's own weights

    def decision_function_store(self, store) -> np.ndarray:
        """Decision values for every row of a store.

        Only the source columns of the model's features are read (and, for
        degree-2 features, only the products the model needs are formed).
        Features absent from the store (ids beyond its columns, or below
        its first id) count as zero columns, with a warning.

        Returns
        -------
        ndarray of float64, shape (n_samples,) or (n_samples, K)
        """
        from ultrafs.features import feature_space_from_spec
        from ultrafs.kernels.sparse_ops import csc_matmat, csc_matvec

        features = feature_space_from_spec(store, self.feature_space)
        absent = features.absent_ids(self.features)
        if absent:
            warnings.warn(
                f"{len(absent)} model feature(s) absent from the store "
                f"(e.g. id {absent[0]}) count as zero columns", UltraFSWarning,
                stacklevel=2)
        block = features.materialize_ids(self.features)
        values = block.values(np.float64)
        coef = np.ascontiguousarray(self.active_coef, dtype=np.float64)
        if self.n_outputs == 1:
            decision = csc_matvec(block.indptr, block.indices, values, coef,
                                  store.n_samples)
            return decision + self.active_intercept
        decision = csc_matmat(block.indptr, block.indices, values, coef.ravel(),
                              self.n_outputs, store.n_samples)
        return (decision.reshape(store.n_samples, self.n_outputs)
                + self.active_intercept)

    def predict_from_decision(self, decision) -> np.ndarray:
        """Original class labels from decision values."""
        classes = np.asarray(self.classes)
        decision = np.asarray(decision)
        if self.n_outputs == 1:
            return np.where(decision > 0, classes[1], classes[0])
        return classes[np.argmax(decision, axis=1)]

    def proba_from_decision(self, decision) -> np.ndarray:
        """Probabilities (logistic loss): P(positive) (n,), or (n, K) per class."""
        if not self.probabilistic:
            raise InputFormatError(
                f"probabilities need a probabilistic loss (e.g. logistic), this "
                f"model uses {self.loss}")
        from scipy.special import expit, softmax

        if self.n_outputs == 1:
            return expit(np.asarray(decision))
        return softmax(np.asarray(decision), axis=1)

    def evaluate_store(self, store) -> dict:
        """Accuracy, AUC (one-vs-rest macro average for K classes) and counts."""
        decision = self.decision_function_store(store)
        truth = _store_targets(store)
        predicted = self.predict_from_decision(decision)
        result = {
            "n_samples": int(store.n_samples),
            "n_features_model": len(self.features),
            "n_nonzero_coef": int(np.count_nonzero(
                np.any(np.asarray(self.coef).reshape(len(self.features), -1), axis=1))),
            "accuracy": float(np.mean(predicted == truth)),
            "predictor": self.predictor,
        }
        if self.n_outputs == 1:
            positive = truth == self.classes[1]
            result["auc"] = _roc_auc(positive, decision)
            if self.probabilistic:
                margin = np.where(positive, decision, -decision)
                result["log_loss"] = float(np.mean(np.logaddexp(0.0, -margin)))
            return result
        index = np.searchsorted(np.asarray(self.classes), truth)
        index = np.minimum(index, self.n_outputs - 1)
        known = np.asarray(self.classes)[index] == truth
        scores = (self.proba_from_decision(decision) if self.probabilistic
                  else decision)
        result["auc"] = _multiclass_auc(index[known], scores[known], self.n_outputs)
        if self.probabilistic and known.all():
            shifted = decision - decision.max(axis=1, keepdims=True)
            log_norm = np.log(np.exp(shifted).sum(axis=1))
            picked = shifted[np.arange(len(index)), index]
            result["log_loss"] = float(np.mean(log_norm - picked))
        return result


def _intercept_json(intercept):
    if isinstance(intercept, np.ndarray):
        return [float(b) for b in intercept]
    return float(intercept)


def _read_refit(obj, shape, intercept, where):
    """The optional ``refit`` and ``predictor`` of a model file, validated."""
    predictor = obj.get("predictor", "selection")
    if predictor not in ("selection", "refit"):
        raise InputFormatError(f"{where}: unknown predictor {predictor!r} in model file")
    raw = obj.get("refit")
    if raw is None:
        if predictor == "refit":
            raise InputFormatError(f"{where}: predictor 'refit' but no refit in model file")
        return None, predictor
    try:
        coef = np.asarray(raw["coef"], dtype=np.float64)
        refit_intercept = (float(raw["intercept"]) if np.ndim(intercept) == 0
                           else np.asarray(raw["intercept"], dtype=np.float64))
        C = float(raw["C"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputFormatError(f"{where}: invalid refit in model file ({exc})") from None
    if (coef.shape != shape or np.shape(refit_intercept) != np.shape(intercept)
            or not np.all(np.isfinite(coef)) or not np.all(np.isfinite(refit_intercept))
            or not (np.isfinite(C) and C > 0)):
        raise InputFormatError(f"{where}: inconsistent refit in model file")
    return {"coef": coef, "intercept": refit_intercept, "C": C}, predictor


def _class_value(value):
    """A class label of a model file: a number (float) or a string."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"class label {value!r} is neither a number nor a string")
    return float(value)


def _store_targets(store):
    """A store's original label values."""
    read = getattr(store, "read_targets", None)
    if read is not None:
        return np.asarray(read(), dtype=np.float64)
    y_pm = store.read_labels()
    return np.where(y_pm > 0, store.classes[1], store.classes[0])


def _multiclass_auc(index, scores, n_classes) -> float:
    """Macro one-vs-rest ROC AUC over the classes present in ``index``."""
    aucs = []
    for k in range(n_classes):
        positive = index == k
        if positive.any() and not positive.all():
            aucs.append(_roc_auc(positive, scores[:, k]))
    return float(np.mean(aucs)) if aucs else float("nan")


def _roc_auc(positive, decision) -> float:
    """scikit-learn's ROC AUC; NaN when only one class is present."""
    from sklearn.metrics import roc_auc_score

    positive = np.asarray(positive, dtype=bool)
    if positive.all() or not positive.any():
        return float("nan")
    return float(roc_auc_score(positive, decision))
