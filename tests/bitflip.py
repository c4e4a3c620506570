"""Test helper: flip one bit of a store's file, reopen, read everything, classify.

Used by ``tests/test_integrity_parquet.py`` and ``tests/test_integrity_zarr.py``.
Each trial flips bit ``position % 8`` of byte ``position`` of one file,
opens the store afresh, reads every block of the default partition and
the targets, and compares everything a reader serves with the undamaged
store.  The outcome is one of

* ``detected``: a :class:`~ultrafs.errors.StoreFormatError` (or subclass);
* ``identical``: no error and exactly the original content;
* ``different``: no error but other content (a silent corruption);
* ``other_error``: any other exception (a traceback for the user).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ultrafs.errors import StoreFormatError


def snapshot(store) -> dict:
    """Everything a reader serves: shape, ids, targets, blocks, fingerprint."""
    bounds = np.asarray(store.default_block_bounds())
    blocks = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        block = store.read_range(int(a), int(b))
        blocks.append((block.indptr.tobytes(), block.indices.tobytes(),
                       None if block.data is None else block.data.tobytes()))
    ids = store.column_ids
    return {
        "shape": (store.n_samples, store.n_features, store.nnz),
        "dtype": np.dtype(store.dtype).name,
        "binary": bool(store.binary),
        "ids": (store.id_offset, store.id_space,
                None if ids is None else np.asarray(ids).tobytes()),
        "targets": (store.target_type, np.asarray(store.classes).tobytes(),
                    np.asarray(store.read_targets()).tobytes()),
        "bounds": bounds.tobytes(),
        "blocks": blocks,
        "fingerprint": store.fingerprint,
    }


def positions(size: int, limit: int) -> list:
    """Every byte position of a file of ``size`` bytes, or a deterministic sample.

    Above ``limit`` bytes: the first and last 64 bytes (headers, footers,
    trailers) plus an even spread over the rest, ``limit`` in all.
    """
    if size <= limit:
        return list(range(size))
    edge = min(64, limit // 4)
    chosen = set(range(edge)) | set(range(size - edge, size))
    chosen |= {int(p) for p in np.linspace(edge, size - edge - 1, limit - 2 * edge).round()}
    return sorted(chosen)


@dataclass
class FlipReport:
    """Counts of the outcomes, and the first few of each bad kind."""

    tried: int = 0
    detected: int = 0
    identical: int = 0
    different: int = 0
    other_error: int = 0
    #: (file, position, bit, what differed or the exception) of the bad trials
    bad: list = field(default_factory=list)
    #: per file: [tried, detected, identical, different, other_error]
    per_file: dict = field(default_factory=dict)

    def add(self, name, position, bit, outcome, detail=None) -> None:
        self.tried += 1
        setattr(self, outcome, getattr(self, outcome) + 1)
        row = self.per_file.setdefault(name, [0, 0, 0, 0, 0])
        row[0] += 1
        row[("detected", "identical", "different", "other_error").index(outcome) + 1] += 1
        if outcome in ("different", "other_error") and len(self.bad) < 50:
            self.bad.append((name, position, bit, detail))

    def merge(self, other: "FlipReport") -> None:
        self.tried += other.tried
        self.detected += other.detected
        self.identical += other.identical
        self.different += other.different
        self.other_error += other.other_error
        self.bad.extend(other.bad)
        self.per_file.update(other.per_file)

    def summary(self) -> str:
        return (f"{self.tried} flips: {self.detected} detected, {self.identical} identical, "
                f"{self.different} silently different, {self.other_error} other errors")


def _trial(open_store, original: dict):
    """Outcome of opening and reading the (damaged) store once."""
    try:
        found = snapshot(open_store())
    except StoreFormatError:
        return "detected", None
    except Exception as exc:               # a traceback-type failure
        return "other_error", f"{type(exc).__name__}: {exc}"[:300]
    if found == original:
        return "identical", None
    differing = sorted(key for key in original if found[key] != original[key])
    return "different", ",".join(differing)


def flip_files(root: Path, names, open_store, original: dict, *, limit: int,
               bits=None) -> FlipReport:
    """Flip bits of each file ``root / name`` in turn; restore it after.

    Parameters
    ----------
    root : Path
        The store.
    names : iterable of str
        Files relative to ``root``.
    open_store : callable
        Opens the store at ``root`` afresh (no cached metadata).
    original : dict
        :func:`snapshot` of the undamaged store.
    limit : int
        Most positions tried per file (see :func:`positions`).
    bits : sequence of int or None
        Bits flipped at every position; None: the one bit ``position % 8``.
    """
    report = FlipReport()
    for name in names:
        path = root / name
        pristine = path.read_bytes()
        try:
            for position in positions(len(pristine), limit):
                for bit in ([position % 8] if bits is None else bits):
                    damaged = bytearray(pristine)
                    damaged[position] ^= 1 << bit
                    path.write_bytes(bytes(damaged))
                    outcome, detail = _trial(open_store, original)
                    report.add(name, position, bit, outcome, detail)
        finally:
            path.write_bytes(pristine)
    return report
