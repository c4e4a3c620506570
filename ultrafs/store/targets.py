"""Target types of a store and their detection: binary, multiclass, continuous.

A store's labels (its *targets*) are kept as their raw float64 values; the
target type says how they are read:

``"binary"``
    exactly two distinct values, ``classes[1]`` the positive class (+1);
``"multiclass"``
    ``K >= 3`` distinct values (the classes), at most :data:`MAX_CLASSES`;
``"continuous"``
    any finite real values (regression); no classes.
``"none"``
    no labels: data to predict on (never detected, only asked for, e.g.
    ``ultrafs ingest --target none``); the stored values are whatever the
    file held (LIBSVM lines need a label token) and nothing reads them.

:func:`encode_targets` detects the type of a label vector (or checks an
explicit one) and returns the sorted classes.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import InputFormatError, ParameterError

__all__ = ["TARGET_TYPES", "LABELLED_TYPES", "MAX_CLASSES", "check_target",
           "encode_targets", "class_indices", "require_labels"]

#: the target types of a store
TARGET_TYPES = ("binary", "multiclass", "continuous", "none")
#: the target types that carry labels (every one but "none")
LABELLED_TYPES = ("binary", "multiclass", "continuous")
#: most classes a multiclass target may have (detected or explicit)
MAX_CLASSES = 1000
#: accepted spelling of automatic detection (besides None)
AUTO = "auto"


def check_target(target):
    """Validate a requested target type.

    Parameters
    ----------
    target : None, "auto", "binary", "multiclass" or "continuous"

    Returns
    -------
    target : str or None
        None for automatic detection, else one of :data:`TARGET_TYPES`.

    Raises
    ------
    ParameterError
        For any other value.
    """
    if target is None or target == AUTO:
        return None
    if target not in TARGET_TYPES:
        raise ParameterError(
            f"target must be one of auto, {', '.join(TARGET_TYPES)}; got {target!r}")
    return str(target)


def _shown(classes, limit=5) -> str:
    """The first values of ``classes``, for a message: ``1, 2, 3, ...``."""
    text = ", ".join(f"{c:g}" for c in classes[:limit])
    return text + (", ..." if len(classes) > limit else "")


def encode_targets(y, where="labels", target=None):
    """Detect (or check) the target type of a label vector.

    Parameters
    ----------
    y : array-like, shape (n_samples,)
        Numeric, finite label values.
    where : str
        Names the source in error messages (a file name, ``"y"``...).
    target : None, "auto", "binary", "multiclass", "continuous" or "none"
        None or ``"auto"`` detects the type: two distinct values are
        binary; three or more distinct values that are all integers are
        multiclass (at most :data:`MAX_CLASSES`: more is an error asking
        for ``target="continuous"``); anything else (three or more
        distinct values, some not integers) is continuous.  An explicit
        type must hold: binary needs exactly two distinct values,
        multiclass three to :data:`MAX_CLASSES`, continuous any finite
        values (at least two distinct ones), none any finite values.

    Returns
    -------
    target_type : str
        One of :data:`TARGET_TYPES`.
    classes : ndarray of float64
        The distinct values, sorted increasingly, shape (K,); shape (0,)
        for a continuous target.

    Raises
    ------
    InputFormatError
        If ``y`` is empty, not numeric, not finite, takes a single value,
        or does not fit the requested type (one line starting with
        ``where``).
    ParameterError
        If ``target`` is not a target type.
    """
    target = check_target(target)
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputFormatError(f"{where}: labels must be numeric") from None
    if y.size == 0:
        raise InputFormatError(f"{where}: no samples")
    if not np.all(np.isfinite(y)):
        raise InputFormatError(f"{where}: labels contain NaN or infinite values")
    if target == "none":
        return target, np.zeros(0, dtype=np.float64)
    distinct = np.unique(y)
    k = len(distinct)
    if k < 2:
        raise InputFormatError(
            f"{where}: labels take a single value ({_shown(distinct)}); at least two "
            "distinct values are needed (for data without labels, to predict on, "
            "use target 'none': ultrafs ingest --target none)")
    if target is None:
        if k == 2:
            target = "binary"
        elif np.all(distinct == np.floor(distinct)):
            if k > MAX_CLASSES:
                raise InputFormatError(
                    f"{where}: labels take {k} distinct integer values, more than the "
                    f"{MAX_CLASSES} classes a multiclass target may have; pass "
                    "target='continuous' for a real-valued target")
            target = "multiclass"
        else:
            target = "continuous"
    elif target == "binary" and k != 2:
        raise InputFormatError(
            f"{where}: target 'binary' needs exactly two label values, found {k} "
            f"({_shown(distinct)})")
    elif target == "multiclass" and not 3 <= k <= MAX_CLASSES:
        if k < 3:
            raise InputFormatError(
                f"{where}: target 'multiclass' needs at least three label values, "
                f"found {k} ({_shown(distinct)}); use target 'binary'")
        raise InputFormatError(
            f"{where}: labels take {k} distinct values, more than the {MAX_CLASSES} "
            "classes a multiclass target may have; pass target='continuous' for a "
            "real-valued target")
    if target == "continuous":
        return target, np.zeros(0, dtype=np.float64)
    return target, distinct


def require_labels(target_type: str, where: str) -> None:
    """Raise ParameterError for a store without labels (target ``"none"``)."""
    if target_type == "none":
        raise ParameterError(
            f"{where}: the store has no labels (ingested with --target none): it can "
            "be predicted on, not fitted or evaluated")


def class_indices(values, classes) -> np.ndarray:
    """Index of each value in the sorted ``classes``; -1 where it is none.

    Parameters
    ----------
    values : ndarray of float64, shape (n,)
    classes : ndarray of float64, shape (K,)
        Sorted, distinct (K may be 0).

    Returns
    -------
    indices : ndarray of int64, shape (n,)
    """
    values = np.asarray(values, dtype=np.float64)
    classes = np.asarray(classes, dtype=np.float64)
    if len(classes) == 0:
        return np.full(values.shape, -1, dtype=np.int64)
    position = np.searchsorted(classes, values).astype(np.int64)
    clipped = np.minimum(position, len(classes) - 1)
    return np.where(classes[clipped] == values, clipped, -1)
