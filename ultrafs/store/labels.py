"""Label validation and encoding to ±1."""

from __future__ import annotations

import numpy as np

from ultrafs.errors import InputFormatError

__all__ = ["encode_labels"]


def encode_labels(y, where="labels"):
    """Encode a two-class label vector as float64 ±1.

    Parameters
    ----------
    y : array-like, shape (n_samples,)
        Numeric labels with exactly two distinct finite values.
    where : str
        Names the source in error messages (a file name, ``"y"``...).

    Returns
    -------
    y_pm : ndarray of float64, shape (n_samples,)
        ``+1`` for the larger label value, ``-1`` for the smaller.
    classes : ndarray of float64, shape (2,)
        The two original values, sorted increasingly.

    Raises
    ------
    InputFormatError
        If ``y`` is empty, not numeric, not finite, or has other than two
        distinct values.
    """
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputFormatError(f"{where}: labels must be numeric") from None
    if y.size == 0:
        raise InputFormatError(f"{where}: no samples")
    if not np.all(np.isfinite(y)):
        raise InputFormatError(f"{where}: labels contain NaN or infinite values")
    classes = np.unique(y)
    if len(classes) != 2:
        shown = ", ".join(f"{c:g}" for c in classes[:5])
        raise InputFormatError(
            f"{where}: labels must take exactly two values, found "
            f"{len(classes)} ({shown}{', ...' if len(classes) > 5 else ''})")
    y_pm = np.where(y == classes[1], 1.0, -1.0)
    return y_pm, classes
