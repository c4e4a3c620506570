"""The targets a method fits: labels, classes and per-sample weights.

One reading of a store's targets for every method
(:func:`read_targets`), by the kinds the method accepts
(``Method.targets``): ±1 labels for two classes, class indices for
K >= 3, real values for a continuous target.  A kind the method does not
take, or data without labels, is refused in one line naming the method.
Sample and class weights (:func:`sample_weights`) are folded into one
weight per row here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.store.targets import require_labels

__all__ = ["Targets", "read_targets", "classification_targets", "class_weight_values",
           "sample_weights", "multiclass_alternatives"]


@dataclass
class Targets:
    """What a method fits to.

    Attributes
    ----------
    kind : {"binary", "multiclass", "continuous"}
    y : ndarray of shape (n_samples,)
        ±1 labels (binary), class indices ``0..K-1`` (multiclass) or real
        values (continuous).
    n_classes : int or None
        K for ``"multiclass"``, else None.
    classes : list of float
        The store's class values (empty for a continuous target).
    sample_weight : ndarray of shape (n_samples,) or None
        One weight per row (sample and class weights multiplied).
    weight_params : dict
        What the model records about the weights (``class_weight``,
        ``class_weights``, ``sample_weight``, ``sample_weight_digest``).
    """

    kind: str
    y: np.ndarray
    n_classes: int | None = None
    classes: list = field(default_factory=list)
    sample_weight: np.ndarray | None = None
    weight_params: dict = field(default_factory=dict)


def classification_targets(store, method="FGM"):
    """The store's labels as a classifier takes them: ``(±1 labels, None)``
    or ``(class indices, K)``; a continuous target, or none, in one line."""
    target = getattr(store, "target_type", "binary")
    if target == "binary":
        return store.read_labels(), None
    if target == "multiclass":
        return store.read_class_indices(), len(store.classes)
    where = getattr(store, "path", None)
    require_labels(target, str(where or "data"))
    raise ParameterError(
        f"{where or 'data'}: {method} selects features for classification, but the "
        f"targets are {target} (regression methods are not available yet)")


def read_targets(store, kinds, method, *, sample_weight=None, class_weight=None):
    """The store's targets for a method that takes ``kinds``.

    Parameters
    ----------
    store : ColumnStore
    kinds : tuple of {"binary", "multiclass", "continuous"}
    method : Method
        Named in the refusals (``display_name``, ``description``).
    sample_weight, class_weight : optional
        See :func:`sample_weights`; refused unless the method takes them.

    Returns
    -------
    Targets
    """
    target = getattr(store, "target_type", "binary")
    where = getattr(store, "path", None)
    require_labels(target, str(where or "data"))
    if target not in kinds:
        if target == "multiclass" and "binary" in kinds:
            raise ParameterError(
                f"{method.description} needs two classes; the data has "
                f"{len(store.classes)}{multiclass_alternatives()}")
        raise ParameterError(
            f"{where or 'data'}: {method.display_name} takes "
            f"{' or '.join(_KIND_WORDS[k] for k in kinds)} targets, but the targets "
            f"are {target}")
    if target == "continuous":
        y = np.asarray(store.read_targets(), dtype=np.float64)
        targets = Targets("continuous", y)
    else:
        y, n_classes = classification_targets(store, method.display_name)
        targets = Targets(target, y, n_classes, [float(c) for c in store.classes])
    if (sample_weight is not None or class_weight is not None) and not method.weights:
        raise ParameterError(f"{method.display_name} does not take sample or class "
                             "weights")
    if class_weight is not None and target == "continuous":
        raise ParameterError(f"class_weight weights classes, but the targets are "
                             f"real values ({method.display_name}): use sample_weight")
    if method.weights:
        targets.sample_weight, targets.weight_params = sample_weights(
            store, targets.y, targets.n_classes, sample_weight, class_weight)
    return targets


def multiclass_alternatives(spell=None) -> str:
    """`` (K classes: --method fgm or --method gsrfs)``: the registered
    methods that take K >= 3 classes, each written by ``spell(method)``
    (default: its ``--method``), for a refusal's last words."""
    from ultrafs.methods.registry import methods

    spell = spell or (lambda m: f"--method {m.name}")
    names = [spell(m) for m in methods() if "multiclass" in m.targets]
    return f" (K classes: {' or '.join(names)})" if names else ""


_KIND_WORDS = {"binary": "two-class", "multiclass": "multi-class",
               "continuous": "real-valued"}


def class_weight_values(class_weight, classes, class_index):
    """Per-class weights, aligned with ``classes``.

    Parameters
    ----------
    class_weight : "balanced" or dict
        "balanced": ``n / (K * count_k)`` (scikit-learn's rule); a dict maps
        class values to weights > 0 (finite); classes not named get 1.
    classes : sequence
        The class values (a store's ``classes``).
    class_index : int array, shape (n,)
        Index in ``classes`` of every sample.

    Returns
    -------
    ndarray of float64, shape (K,)
    """
    classes = list(classes)
    K = len(classes)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ParameterError(
                f"class_weight must be 'balanced', a dict or None, got {class_weight!r}")
        counts = np.bincount(class_index, minlength=K).astype(np.float64)
        if np.any(counts == 0):
            raise ParameterError("class_weight='balanced' needs a sample of every class")
        return len(class_index) / (K * counts)
    if not isinstance(class_weight, dict):
        raise ParameterError(
            f"class_weight must be 'balanced', a dict or None, got {class_weight!r}")
    values = np.ones(K)
    for key, weight in class_weight.items():
        k = _class_position(key, classes)
        try:
            weight = float(weight)
        except (TypeError, ValueError):
            weight = float("nan")
        if not (np.isfinite(weight) and weight >= 0):
            raise ParameterError(
                f"class_weight of class {key!r} must be a finite number >= 0, got "
                f"{class_weight[key]!r}")
        values[k] = weight
    return values


def _class_position(key, classes):
    """Index of the class value ``key`` in ``classes`` (numbers compare as floats)."""
    for k, value in enumerate(classes):
        if key == value:
            return k
        try:
            if float(key) == float(value):
                return k
        except (TypeError, ValueError):
            pass
    shown = ", ".join(f"{c:g}" if isinstance(c, float) else str(c) for c in classes)
    raise ParameterError(f"class_weight names class {key!r}, not one of the classes "
                         f"({shown})")


def sample_weights(store, y, n_classes, sample_weight, class_weight):
    """The per-sample weights of the fit (or None) and what the model records."""
    from ultrafs.methods.fgm import sample_weight_digest
    from ultrafs.solvers.datafits import check_sample_weight

    weights = check_sample_weight(sample_weight, len(y))
    params = {}
    if class_weight is not None:
        class_index = (np.asarray(y > 0, dtype=np.int64) if n_classes is None
                       else np.asarray(y, dtype=np.int64))
        per_class = class_weight_values(class_weight, store.classes, class_index)
        by_sample = per_class[class_index]
        weights = by_sample if weights is None else weights * by_sample
        weights = check_sample_weight(weights, len(y))
        params["class_weight"] = ("balanced" if isinstance(class_weight, str)
                                  else "given")
        params["class_weights"] = [float(w) for w in per_class]
    if weights is not None:
        params["sample_weight"] = sample_weight is not None
        params["sample_weight_digest"] = sample_weight_digest(weights)
    return weights, params
