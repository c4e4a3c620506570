"""Checks of values parsed from JSON files a user may have forged.

Model files (:mod:`ultrafs.model`) and checkpoints
(:mod:`ultrafs.methods.checkpoint`) are JSON that anyone can edit.  Their
readers check every field with these helpers, which raise
:class:`InvalidField` with a short message naming the field; each reader
turns it into its own one-line error naming the file.
"""

from __future__ import annotations

import json
import math

__all__ = ["InvalidField", "show", "is_int", "is_real", "integer", "real"]


class InvalidField(Exception):
    """A field of a parsed JSON document is not what its reader accepts."""


def show(value, limit=40) -> str:
    """A short JSON rendering of a value, for a message."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_int(value) -> bool:
    """A JSON integer (``bool`` excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value) -> bool:
    """A JSON number (``bool`` excluded)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def integer(value, what, lo=0, hi=None) -> int:
    """An integer in ``[lo, hi]`` (``hi`` None: unbounded)."""
    if not is_int(value) or value < lo or (hi is not None and value > hi):
        bounds = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise InvalidField(f"{what} must be an integer {bounds}, got {show(value)}")
    return int(value)


def real(value, what) -> float:
    """A finite real number (an integer too large for a float is not)."""
    if is_real(value):
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
    raise InvalidField(f"{what} must be a finite number, got {show(value)}")
