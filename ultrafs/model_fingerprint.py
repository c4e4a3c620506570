"""The content fingerprint of a model file: written by every save, checked
by every load.

A model file is JSON anyone can edit.  Its field checks
(:mod:`ultrafs.model_checks`) refuse what cannot be a model, but an edit
that leaves a valid model (a weight, an id swapped for another column, a
feature space changed) would predict something else without a word.  So
every file carries ``"fingerprint": "sha256:<64 hex digits>"``, the SHA-256
of its own content with that key left out, in the canonical form
:func:`canonical_text` (keys sorted, no spaces, numbers as Python's
``json`` writes them): reindenting the file keeps it, any change of a
value breaks it.

It is not a signature against an attacker (anyone can recompute it): it
detects hand edits, truncation, copy errors and files assembled from
parts, and it makes re-signing a deliberate act (``ultrafs sign MODEL``,
which checks every field first).  Python's :mod:`hashlib` provides the
digest; the stores' own content fingerprint is
:mod:`ultrafs.store.fingerprint`.
"""

from __future__ import annotations

import hashlib
import json

__all__ = ["FINGERPRINT_KEY", "fingerprint_of", "canonical_text", "is_fingerprint",
           "signed"]

#: the key of a model file that holds its fingerprint
FINGERPRINT_KEY = "fingerprint"
_PREFIX = "sha256:"


def canonical_text(obj) -> str:
    """The canonical JSON text of a parsed model file, without its fingerprint.

    Parameters
    ----------
    obj : dict
        A parsed JSON object (``json.loads`` of the file).

    Returns
    -------
    str
        Sorted keys, no spaces, ASCII only; non-finite numbers as
        ``NaN``/``Infinity`` (a history may hold them).
    """
    content = {key: value for key, value in obj.items() if key != FINGERPRINT_KEY}
    return json.dumps(content, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True, allow_nan=True)


def fingerprint_of(obj) -> str:
    """``sha256:<hex>`` of :func:`canonical_text` of ``obj``."""
    digest = hashlib.sha256(canonical_text(obj).encode("ascii")).hexdigest()
    return _PREFIX + digest


def is_fingerprint(value) -> bool:
    """Whether ``value`` has the form of a fingerprint (``sha256:`` + 64 hex)."""
    return (isinstance(value, str) and value.startswith(_PREFIX)
            and len(value) == len(_PREFIX) + 64
            and all(ch in "0123456789abcdef" for ch in value[len(_PREFIX):]))


def signed(obj) -> dict:
    """``obj`` with its fingerprint: what a save writes.

    ``obj`` goes through a JSON round trip first, so the fingerprint is
    computed on exactly what a later load parses (tuples become lists,
    numpy scalars are refused here rather than written).

    Parameters
    ----------
    obj : dict
        The model file's content (:meth:`ultrafs.model.Model.to_dict`).

    Returns
    -------
    dict
        The parsed content plus ``"fingerprint"``.
    """
    parsed = json.loads(json.dumps(obj, allow_nan=True))
    parsed.pop(FINGERPRINT_KEY, None)
    parsed[FINGERPRINT_KEY] = fingerprint_of(parsed)
    return parsed
