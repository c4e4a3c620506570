"""Checkpoints of the cutting-plane loop, for batch jobs that get killed.

After every outer iteration the loop's whole state is written to a
directory: ``checkpoint.json`` (selected keys, batches, ω, b, Lipschitz
estimate, objectives, history, parameters, a checksum of the input store's
metadata) and ``decision-<t>.npy`` (the n decision values, so that the dual
variables of a resumed run are bit-identical).  The JSON file is the commit
point: it is replaced atomically after the array it names is in place, so a
kill at any moment leaves the previous or the new checkpoint, never a mix.
Floats go through JSON as ``repr`` (exact round trip).

A resumed run refuses a checkpoint written for other data (checksum) or
other result-affecting parameters, naming what differs; ``max_iter`` and
``tol`` may change between runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ultrafs.errors import UltraFSError
from ultrafs.atomic import atomic_file, write_json_atomic

__all__ = ["Checkpoint", "CheckpointMismatchError", "store_fingerprint",
           "CHECKPOINT_VERSION"]

CHECKPOINT_VERSION = 1
_STATE_FILE = "checkpoint.json"
#: parameters that may differ between the interrupted and the resumed run
_FREE_PARAMS = ("max_iter", "tol")


class CheckpointMismatchError(UltraFSError):
    """A checkpoint was written for other data or other parameters."""


def store_fingerprint(store) -> str:
    """SHA-256 of a store's metadata (shape, nnz, dtype, classes, blocks...).

    The path, the format version and the target kind are left out: the
    same data keeps its fingerprint when it moves or when a v1 store is
    rewritten as v2 (the target kind follows from the classes).
    """
    described = dict(store.describe())
    for key in ("path", "format_version", "target"):
        described.pop(key, None)
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class Checkpoint:
    """Reads and writes the loop state in a directory.

    Parameters
    ----------
    directory : path
        Created if missing.
    fingerprint : str
        :func:`store_fingerprint` of the input store.
    params : dict
        The run's parameters (JSON-serialisable).
    """

    def __init__(self, directory, fingerprint: str, params: dict):
        self.directory = Path(directory)
        self.fingerprint = fingerprint
        self.params = dict(params)

    @property
    def state_path(self) -> Path:
        """The JSON commit file."""
        return self.directory / _STATE_FILE

    def exists(self) -> bool:
        """True when a committed checkpoint is present."""
        return self.state_path.is_file()

    def save(self, state: dict, decision: np.ndarray) -> None:
        """Commit the state after an outer iteration.

        Parameters
        ----------
        state : dict
            JSON-serialisable loop state; must hold ``iteration``.
        decision : float64 array, shape (n_samples,)
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        iteration = int(state["iteration"])
        array_name = f"decision-{iteration}.npy"
        with atomic_file(self.directory / array_name, "wb") as fh:
            np.save(fh, np.asarray(decision, dtype=np.float64))
        payload = {"format": "ultrafs-checkpoint", "version": CHECKPOINT_VERSION,
                   "fingerprint": self.fingerprint, "params": self.params,
                   "decision_file": array_name, **state}
        write_json_atomic(payload, self.state_path)
        for old in self.directory.glob("decision-*.npy"):
            if old.name != array_name:
                old.unlink(missing_ok=True)

    def load(self):
        """Read and validate the committed state.

        Returns
        -------
        state : dict
        decision : float64 array

        Raises
        ------
        CheckpointMismatchError
            Other data, other parameters, or an unreadable checkpoint.
        """
        where = str(self.state_path)
        try:
            payload = json.loads(self.state_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CheckpointMismatchError(f"{where}: unreadable checkpoint ({exc})") from None
        if payload.get("format") != "ultrafs-checkpoint" or \
                payload.get("version") != CHECKPOINT_VERSION:
            raise CheckpointMismatchError(f"{where}: not an ultrafs checkpoint of "
                                          f"version {CHECKPOINT_VERSION}")
        if payload.get("fingerprint") != self.fingerprint:
            raise CheckpointMismatchError(
                f"{where}: checkpoint was written for different data "
                "(store metadata checksum differs)")
        saved = payload.get("params", {})
        differing = sorted(name for name in set(saved) | set(self.params)
                           if name not in _FREE_PARAMS
                           and saved.get(name) != self.params.get(name))
        if differing:
            name = differing[0]
            raise CheckpointMismatchError(
                f"{where}: checkpoint was written with different parameters "
                f"({name}={saved.get(name)!r}, now {self.params.get(name)!r})")
        try:
            decision = np.load(self.directory / payload["decision_file"])
        except (OSError, KeyError, ValueError) as exc:
            raise CheckpointMismatchError(f"{where}: missing decision values ({exc})") \
                from None
        return payload, decision
