"""Versioned model files and prediction from a store.

A model file (format version 3) is one JSON object::

    {"format": "ultrafs-model", "format_version": 3,
     "target": "binary" | "multiclass" | "continuous", "classes": [...],
     "features": [...], "coef": [...], "intercept": ...,
     "batches": [0, B, 2B, ...], "loss": "logistic",
     "feature_space": {"kind": "linear"}, "params": {...},
     "history": [...], "stop_reason": "...", "created_with": "ultrafs x.y",
     "fingerprint": "sha256:..."}

``fingerprint`` is the SHA-256 of the canonical JSON of every other key
(:mod:`ultrafs.model_fingerprint`): every save writes it and every file
read checks it, after the fields, so a file edited by hand is refused
unless re-signed deliberately (``ultrafs sign MODEL``, which checks every
field first).  Version 1 and 2 files (written before fingerprints) are
read as dicts (:meth:`Model.from_dict`) but refused as files until
re-signed.  ``params.id_range`` holds the first and last feature ids of the
data the model was fitted on (every id a feature reads must lie in it).

``features`` holds user-visible feature ids in selection order (store ids:
1-based for 1-based LIBSVM files); ``coef`` is aligned with it.  The
optional ``feature_names`` is parallel to ``features``: the name of a
linear feature, ``a*b`` for a cross term ``[j, k]`` and ``a^2`` for a
square ``[j, j]`` (from the names the training store carries, recorded at
selection), null where a feature (or one of its sources) is unnamed; the
key is absent when the store had no names.

* binary: ``classes`` is ``[negative, positive]``, ``coef`` a list of
  floats and ``intercept`` a float; the decision value of a sample is
  ``sum_j coef[j] * x[features[j]] + intercept`` and the predicted class
  is ``classes[1]`` when it is positive.
* multiclass: ``classes`` holds the K class values, ``coef`` one list of K
  weights per feature and ``intercept`` K floats; the decision values are
  ``x[features] @ coef + intercept`` and the predicted class is the one
  with the largest decision value (probabilities: their softmax, for the
  logistic loss).

* continuous (regression, GSR-FS on real targets): ``classes`` is empty,
  ``coef`` a list of floats and ``intercept`` a float; the prediction is
  the decision value itself.

``batches`` are the boundaries of the features added by each outer
iteration (required from version 3).  Version 1 files (binary only,
boundaries under ``groups``) still load as dicts.

Every file is validated on load (:mod:`ultrafs.model_checks`), and any problem is one
:class:`~ultrafs.errors.InputFormatError` naming the file: a regular file
of at most :data:`MAX_MODEL_BYTES` (64 MiB, checked before reading),
UTF-8 JSON; feature ids integers in ``0..MAX_FEATURE_ID`` (degree 2: or
``[j, k]`` pairs), none twice; ``classes`` all numbers (finite) or all
strings, distinct and increasing, 2 (binary) or 3 to ``MAX_CLASSES``;
``coef`` (and the refit's) finite numbers of at most ``MAX_WEIGHT`` in
absolute value, shaped by the features and the classes; a loss name and a
registered feature space, the one the method fits in, its ids within its
key range and ``params.id_range``; ``batches`` rising from 0
to the number of features; ``feature_names`` (optional) one per feature,
each null or a non-empty string without tabs or line breaks; a numeric ``history``; the ``params`` ultrafs
reads back (``id_offset``, ``C``, ``data_fingerprint``, ``validation``).

Applied to a store, a model refuses data holding none of its features,
data of another id offset and decision values that are not finite.

Evaluation matches a store's labels to ``classes`` by value: a store
whose classes are some of the model's is scored, one with a class the
model does not know (``{-1, +1}`` for a ``{0, 1}`` model) is refused.
Prediction reads no labels.
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
# the format's constants live with its checks; MODEL_FORMAT, MODEL_VERSION
# MAX_MODEL_BYTES and check_fingerprint (path files use it) are re-exported
# here, where the model files are made
from ultrafs.model_checks import (MAX_MODEL_BYTES, MODEL_FORMAT, MODEL_VERSION,
                                  check_fingerprint, read_model_text, validated_fields)
from ultrafs.model_fingerprint import signed
from ultrafs.store.targets import require_labels

__all__ = ["Model", "MODEL_FORMAT", "MODEL_VERSION", "MAX_MODEL_BYTES",
           "feature_names_from_store", "ModelDataError", "WrongDataError",
           "WrongIdsError", "NonFiniteDecisionError",
           "record_id_range", "store_id_range", "is_path_file",
           "parsed_model_file", "check_fingerprint", "PATH_FORMAT", "PATH_VERSIONS",
           "PATH_SIGNED_VERSION"]

#: what a path file (``ultrafs path --out``) says it is, and the versions read
PATH_FORMAT = "ultrafs-path"
PATH_VERSIONS = (1, 2)
#: the first path file version carrying a content fingerprint (and
#: ``id_range``); version 1 files are refused until re-signed (ultrafs sign)
PATH_SIGNED_VERSION = 2


class ModelDataError(InputFormatError):
    """A model applied to data it cannot score.

    ``message(model, data)`` words it with the names the user gave (the
    CLI: the model file and ``--data``, not a LIBSVM file's cache entry).
    """

    def __init__(self, data):
        super().__init__(self.message("the model", data))

    def message(self, model, data) -> str:      # pragma: no cover - abstract
        raise NotImplementedError


class WrongDataError(ModelDataError):
    """None of a model's features is in the store it is applied to."""

    def __init__(self, n_features, columns, data):
        self.n_features, self.columns = int(n_features), columns
        super().__init__(data)

    def message(self, model, data) -> str:
        """One line naming ``model``, ``data`` and the data's ids."""
        return (f"{model}: none of its {self.n_features} features is a column of "
                f"{data} ({self.columns}): wrong data for this model?")


class WrongIdsError(ModelDataError):
    """A store whose feature ids do not mean what the model's do: another
    id offset (1-based LIBSVM ids against 0-based ones)."""

    def __init__(self, model_offset, store_offset, data):
        self.model_offset, self.store_offset = int(model_offset), int(store_offset)
        super().__init__(data)

    def message(self, model, data) -> str:
        """One line naming ``model``, ``data`` and both offsets."""
        return (f"{model}: its feature ids start at {self.model_offset} (params "
                f"id_offset), those of {data} at {self.store_offset}: every column "
                "would be shifted by one; ingest the data as the training data was "
                "(--zero-based)")


class NonFiniteDecisionError(ModelDataError):
    """Decision values that overflow float64 on the data applied to."""

    def message(self, model, data) -> str:
        """One line naming ``model`` and ``data``."""
        return (f"{model}: its decision values are not finite on {data} (values of "
                "the data times the model's weights overflow float64)")


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
    target : {"binary", "multiclass", "continuous"}
    refit : dict or None
        The ℓ2-regularised refit of the same loss on the selected columns
        only (``coef``, ``intercept`` shaped as above, and its ``C``), when
        one was made.
    predictor : {"selection", "refit"}
        Which weights predict: FGM's (``coef``, ``intercept``) or the
        refit's.
    feature_names : list of (str or None), or None
        Parallel to ``features``: the name of each feature (``a*b``,
        ``a^2`` for degree-2 terms), None where unnamed; None when the
        training data had no names.
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
    feature_names: list | None = None

    @staticmethod
    def names_from_store(features, store, kind="linear"):
        """Names of ``features`` (model ids) from ``store``: see
        :func:`feature_names_from_store`."""
        return feature_names_from_store(features, store, kind)

    def feature_labels(self) -> list:
        """Display form of each feature: ``"74 (word)"`` when named, ``"74"``,
        ``"[5, 10]"`` or ``"[5, 10] (a*b)"``."""
        names = self.feature_names or [None] * len(self.features)
        labels = []
        for fid, name in zip(self.features, names):
            text = (f"[{', '.join(str(int(v)) for v in fid)}]"
                    if isinstance(fid, (list, tuple)) else str(int(fid)))
            labels.append(text if name is None else f"{text} ({name})")
        return labels

    @property
    def selected_groups(self) -> list:
        """The candidates the model holds, in selection order: group ids
        (groups), node ids (trees), original feature ids (additive
        kernels); the feature ids themselves for linear and degree-2 models."""
        from ultrafs.features import FEATURE_SPACES

        cls = FEATURE_SPACES[self.feature_space.get("kind", "linear")]
        seen, units = set(), []
        for fid in self.features:
            unit = cls.unit_of_id(fid)
            key = tuple(unit) if isinstance(unit, list) else unit
            if key not in seen:
                seen.add(key)
                units.append(unit)
        return units

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
        """Decision values per sample (1 for binary and continuous models, K otherwise)."""
        return len(self.classes) if self.target == "multiclass" else 1

    @property
    def probabilistic(self) -> bool:
        """Whether the loss defines class probabilities (from the loss registry)."""
        from ultrafs.errors import ParameterError
        from ultrafs.solvers.losses import get_loss

        if self.target == "continuous":
            return False
        try:
            return bool(get_loss(self.loss, self.target).probabilistic)
        except ParameterError:  # a loss this ultrafs does not know
            return False

    # ------------------------------------------------------------ file format
    def to_dict(self) -> dict:
        """The JSON-serialisable model file content, with its fingerprint
        (:func:`~ultrafs.model_fingerprint.signed`)."""
        return signed({
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
            **({"feature_names": list(self.feature_names)}
               if self.feature_names is not None else {}),
            **({"refit": {"coef": np.asarray(self.refit["coef"]).tolist(),
                          "intercept": _intercept_json(self.refit["intercept"]),
                          "C": float(self.refit["C"])}}
               if self.refit is not None else {}),
            "created_with": f"ultrafs {__version__}",
        })

    def save(self, path) -> None:
        """Write the model file atomically."""
        write_json_atomic(self.to_dict(), path)

    @classmethod
    def from_dict(cls, obj, where="model", *, verify=False) -> "Model":
        """Build a model from a parsed model file (version 1, 2 or 3), validating it.

        Every field is checked for its type, range, length, finiteness and
        agreement with the others (see
        :func:`~ultrafs.model_checks.validated_fields`); ``where`` names the
        file in the one-line :class:`~ultrafs.errors.InputFormatError` of a
        failure.  ``verify``: also check its fingerprint (what a file read
        from disk gets; :func:`~ultrafs.model_checks.check_fingerprint`).
        """
        return cls(**validated_fields(obj, where, verify=verify))

    @classmethod
    def load(cls, path, *, max_bytes=None) -> "Model":
        """Read and validate a model file.

        Parameters
        ----------
        path : str or os.PathLike
        max_bytes : int, optional
            Largest file read (default :data:`MAX_MODEL_BYTES`); a larger
            file is refused before any of it is read.

        Raises
        ------
        InputFormatError
            One line naming ``path`` and the problem: missing, not a
            regular file, too large, not UTF-8, not JSON (or nested too
            deeply), or not a valid model.
        """
        path = os.fspath(path)
        obj = parsed_model_file(path, max_bytes)
        if is_path_file(obj):
            raise InputFormatError(
                f"{path}: a path file (ultrafs path), not one model: evaluate, predict "
                "and report take it, with --lambda, --point or --n-features-to-select")
        try:
            return cls.from_dict(obj, where=path, verify=True)
        except RecursionError:
            raise InputFormatError(
                f"{path}: not a model file (values nested too deeply)") from None

    # -------------------------------------------------------------- prediction
    def truncated(self, n_batches: int) -> "Model":
        """The model restricted to the features of the first ``n_batches``."""
        stop = int(self.batches[min(n_batches, len(self.batches) - 1)])
        prefix = Model(self.features[:stop], self.coef[:stop].copy(),
                       self.intercept, list(self.batches[:n_batches + 1]),
                       self.loss, self.classes, self.feature_space, self.params,
                       self.history[:n_batches], self.stop_reason, self.target,
                       feature_names=(None if self.feature_names is None
                                      else list(self.feature_names[:stop])))
        # data is judged by the whole model's features (the report's curve
        # applies prefixes whose first features a narrow test store may lack)
        prefix._whole_features = self._features_of_whole()
        return prefix
        # the refit's weights belong to the whole selection: a truncated
        # model predicts with FGM's own weights

    def _features_of_whole(self) -> list:
        """The features of the model this one was truncated from (itself)."""
        return getattr(self, "_whole_features", None) or self.features

    def decision_function_store(self, store) -> np.ndarray:
        """Decision values for every row of a store.

        Only the source columns of the model's features are read (and, for
        degree-2 features, only the products the model needs are formed).
        Features absent from the store (ids beyond its columns, or below
        its first id) count as zero columns, with a warning; when every one
        is absent the data is not this model's and it is refused (for a
        :meth:`truncated` model: every feature of the whole model).

        Returns
        -------
        ndarray of float64, shape (n_samples,) or (n_samples, K)

        Raises
        ------
        WrongDataError
            One line naming the data and its ids when none of the model's
            features is in the store (the decision would be the intercept
            alone).
        """
        from ultrafs.features import feature_space_from_spec
        from ultrafs.kernels.sparse_ops import csc_matmat, csc_matvec

        features = feature_space_from_spec(store, self.feature_space)
        absent = features.absent_ids(self.features)
        if absent and len(absent) == len(self.features):
            whole = self._features_of_whole()
            if whole is self.features or len(features.absent_ids(whole)) == len(whole):
                raise _wrong_data(len(whole), store)
        self._check_ids_of(store)
        if absent:
            name = None
            if self.feature_names is not None:
                name = self.feature_names[self.features.index(absent[0])]
            shown = f"id {absent[0]}" + ("" if name is None else f" '{name}'")
            warnings.warn(
                f"{len(absent)} model feature(s) absent from the store "
                f"(e.g. {shown}) count as zero columns", UltraFSWarning,
                stacklevel=2)
        coef = np.ascontiguousarray(self.active_coef, dtype=np.float64)
        if not self.features:          # an intercept-only model (an l1 path's start)
            shape = ((store.n_samples,) if self.n_outputs == 1
                     else (store.n_samples, self.n_outputs))
            return _finite(np.zeros(shape) + self.active_intercept, store)
        block = features.materialize_ids(self.features)
        values = block.values(np.float64)
        if self.n_outputs == 1:
            decision = csc_matvec(block.indptr, block.indices, values, coef,
                                  store.n_samples)
            return _finite(decision + self.active_intercept, store)
        decision = csc_matmat(block.indptr, block.indices, values, coef.ravel(),
                              self.n_outputs, store.n_samples)
        return _finite(decision.reshape(store.n_samples, self.n_outputs)
                       + self.active_intercept, store)

    def _check_ids_of(self, store) -> None:
        """Refuse a store whose ids do not mean the model's: another id
        offset (1-based LIBSVM ids against 0-based ones shift every column)."""
        model_offset = self.params.get("id_offset")
        store_offset = getattr(store, "id_offset", None)
        if model_offset is not None and store_offset is not None and \
                int(model_offset) != int(store_offset):
            raise WrongIdsError(model_offset, store_offset,
                                getattr(store, "path", None) or "the data")

    def predict_from_decision(self, decision) -> np.ndarray:
        """Original class labels from decision values (continuous: the values)."""
        classes = np.asarray(self.classes)
        decision = np.asarray(decision)
        if self.target == "continuous":
            return decision
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
        """Accuracy, AUC (one-vs-rest macro average for K classes) and counts.

        The store's labels are matched to the model's classes by value: a
        store whose classes are a subset of the model's (a test file with
        some classes only) is evaluated; one with a class the model does
        not know (``{-1, +1}`` for a model of ``{0, 1}``) is refused rather
        than scored wrongly.

        Raises
        ------
        InputFormatError
            One line naming the store and both class sets when the store's
            classes are not among the model's, or its targets are
            continuous.
        """
        if self.target == "continuous":
            return self._evaluate_continuous(store)
        index = self.class_index_of_store(store)
        decision = self.decision_function_store(store)
        result = {
            "n_samples": int(store.n_samples),
            "n_features_model": len(self.features),
            "n_nonzero_coef": int(np.count_nonzero(
                np.any(np.asarray(self.coef).reshape(len(self.features), self.n_outputs),
                       axis=1))),
            "predictor": self.predictor,
        }
        if self.n_outputs == 1:
            predicted = (np.asarray(decision) > 0).astype(np.int64)
            result["accuracy"] = float(np.mean(predicted == index))
            positive = index == 1
            result["auc"] = _roc_auc(positive, decision)
            if self.probabilistic:
                margin = np.where(positive, decision, -decision)
                result["log_loss"] = float(np.mean(np.logaddexp(0.0, -margin)))
            return _ordered(result)
        predicted = np.argmax(decision, axis=1)
        result["accuracy"] = float(np.mean(predicted == index))
        scores = (self.proba_from_decision(decision) if self.probabilistic
                  else decision)
        result["auc"] = _multiclass_auc(index, scores, self.n_outputs)
        if self.probabilistic:
            shifted = decision - decision.max(axis=1, keepdims=True)
            log_norm = np.log(np.exp(shifted).sum(axis=1))
            picked = shifted[np.arange(len(index)), index]
            result["log_loss"] = float(np.mean(log_norm - picked))
        return _ordered(result)

    def _evaluate_continuous(self, store) -> dict:
        """RMSE, MAE and R² of a regression model on a store with real targets."""
        where = getattr(store, "path", None) or "data"
        target_type = getattr(store, "target_type", None)
        require_labels(target_type, str(where))
        if target_type != "continuous":
            raise InputFormatError(
                f"{where}: the store's targets are {target_type}; the model predicts "
                "continuous values")
        targets = np.asarray(store.read_targets(), dtype=np.float64)
        error = self.decision_function_store(store) - targets
        spread = float(np.sum((targets - targets.mean()) ** 2)) if len(targets) else 0.0
        result = {"n_samples": int(store.n_samples),
                  "n_features_model": len(self.features),
                  "n_nonzero_coef": int(np.count_nonzero(np.asarray(self.coef))),
                  "predictor": self.predictor,
                  "rmse": float(np.sqrt(np.mean(error ** 2))) if len(error) else 0.0,
                  "mae": float(np.mean(np.abs(error))) if len(error) else 0.0,
                  "r2": 1.0 - float(np.sum(error ** 2)) / spread if spread > 0 else 0.0}
        return _ordered(result)

    def class_index_of_store(self, store) -> np.ndarray:
        """Index in :attr:`classes` of each row's label, matched by value.

        Returns
        -------
        ndarray of int64, shape (n_samples,)

        Raises
        ------
        InputFormatError
            When the store's targets are continuous, or some of its classes
            are not among the model's (one line with both class sets).
        """
        where = getattr(store, "path", None) or "data"
        model_classes = _class_set_text(self.classes)
        target_type = getattr(store, "target_type", None)
        store_classes = [float(c) for c in np.asarray(store.classes).tolist()]
        require_labels(target_type, str(where))
        if target_type == "continuous" or not store_classes:
            raise InputFormatError(
                f"{where}: the store's targets are continuous; the model predicts "
                f"the classes {model_classes}")
        known = {c: k for k, c in enumerate(self.classes) if not isinstance(c, str)}
        unknown = [c for c in store_classes if c not in known]
        if unknown:
            raise InputFormatError(
                f"{where}: the store's classes {_class_set_text(store_classes)} are "
                f"not among the model's classes {model_classes} (labels are matched "
                f"by value; {_class_text(unknown[0])} is unknown to the model): "
                "relabel the store or evaluate a model trained on these classes")
        targets = np.asarray(store.read_targets(), dtype=np.float64)
        order = np.asarray([self.classes[k] for k in sorted(known.values())],
                           dtype=np.float64)
        index = np.searchsorted(order, targets)
        index = np.minimum(index, len(order) - 1)
        if not np.array_equal(order[index], targets):
            raise InputFormatError(
                f"{where}: a label is not one of the store's classes "
                f"{_class_set_text(store_classes)}")
        return index.astype(np.int64)


def _finite(decision, store) -> np.ndarray:
    """``decision`` when every value is finite; else one line naming the store."""
    if not np.all(np.isfinite(decision)):
        raise NonFiniteDecisionError(getattr(store, "path", None) or "the data")
    return decision


def store_id_range(store):
    """``[first, last]``: the first and last feature ids of ``store``, or
    None for a store without columns."""
    n_columns = int(store.n_features)
    if not n_columns:
        return None
    return [int(i) for i in store.feature_ids([0, n_columns - 1])]


def record_id_range(model, store) -> None:
    """Record in ``model.params["id_range"]`` the first and last feature ids
    of ``store`` (the data it was fitted on): a model file read later is
    refused when a feature reads an id outside them
    (:func:`~ultrafs.model_checks.check_consistency`)."""
    id_range = store_id_range(store)
    if id_range is not None and "id_range" not in model.params:
        model.params["id_range"] = id_range


def _intercept_json(intercept):
    if isinstance(intercept, np.ndarray):
        return [float(b) for b in intercept]
    return float(intercept)


def feature_names_from_store(features, store, kind="linear"):
    """Names of model features from a store's names, or None when it has none.

    ``features`` are user-visible ids of the feature space ``kind``
    (``j``, ``[j, k]`` for degree-2 terms...); each is named by the space's
    ``name_of_id`` from the names of its source ids (a cross term ``a*b``,
    a square ``a^2``; None unless its sources are named).  Only the source
    ids are looked up (:meth:`~ultrafs.store.base.ColumnStore.feature_names_of`).
    """
    from ultrafs.features import FEATURE_SPACES

    cls = FEATURE_SPACES[kind]
    sources = sorted({int(v) for fid in features for v in cls.source_ids(fid)})
    if not sources:
        return None
    lookup = getattr(store, "feature_names_of", None)
    if lookup is None:
        return None
    known = dict(zip(sources, lookup(sources)))
    if all(name is None for name in known.values()):
        return None
    return [cls.name_of_id(fid, known.get) for fid in features]


_RESULT_ORDER = ("n_samples", "n_features_model", "n_nonzero_coef", "accuracy",
                 "predictor", "auc", "log_loss", "rmse", "mae", "r2")


def _ordered(result) -> dict:
    """The evaluation's keys in their documented order."""
    return {key: result[key] for key in _RESULT_ORDER if key in result}


def _class_text(value) -> str:
    """A class value for a message: ``1``, ``-0.5``, ``'cat'``."""
    if isinstance(value, str):
        return repr(value)
    return f"{float(value):g}"


def _class_set_text(classes, limit=8) -> str:
    """``{0, 1}`` (at most ``limit`` values shown)."""
    shown = [_class_text(c) for c in list(classes)[:limit]]
    more = ", ..." if len(classes) > limit else ""
    return "{" + ", ".join(shown) + more + "}"


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


def _wrong_data(n_features, store) -> WrongDataError:
    """The refusal of data that holds none of a model's ``n_features``."""
    where = getattr(store, "path", None) or "the data"
    n_columns = int(store.n_features)
    if n_columns:
        first, last = (int(i) for i in store.feature_ids([0, n_columns - 1]))
        columns = f"ids {first}..{last}"
    else:
        columns = "no columns"
    return WrongDataError(n_features, columns, where)


def parsed_model_file(path, max_bytes=None):
    """The parsed JSON of a model or path file (at most ``max_bytes``, default
    :data:`MAX_MODEL_BYTES`); one :class:`InputFormatError` line naming
    ``path`` for anything else."""
    limit = MAX_MODEL_BYTES if max_bytes is None else int(max_bytes)
    text = read_model_text(path, limit)
    try:
        return json.loads(text)
    except RecursionError:
        raise InputFormatError(
            f"{path}: not a model file (JSON nested too deeply)") from None
    except json.JSONDecodeError as exc:
        raise InputFormatError(
            f"{path}: not a JSON model file ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno})") from None
    except ValueError as exc:            # e.g. an integer of > 4300 digits
        raise InputFormatError(f"{path}: not a JSON model file ({exc})") from None


def is_path_file(obj) -> bool:
    """Whether parsed JSON is a path file (of any version, or one written
    before path files said what they are: ``"method": "l1"`` and a
    ``"path"`` list, without ``"format"``)."""
    return isinstance(obj, dict) and (obj.get("format") == PATH_FORMAT or (
        "format" not in obj and obj.get("method") == "l1"
        and isinstance(obj.get("path"), list)))

