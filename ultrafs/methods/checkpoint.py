"""Checkpoints of the cutting-plane loop, for batch jobs that get killed.

After every outer iteration the loop's whole state is written to a
directory: ``checkpoint.json`` (selected keys, batches, ω, b, Lipschitz
estimate, objectives, history, parameters, what binds it to its data) and
``decision-<t>.npy`` (the n decision values, so that the dual variables of
a resumed run are bit-identical).  The JSON file is the commit point: it is
replaced atomically after the array it names is in place, so a kill at any
moment leaves the previous or the new checkpoint, never a mix.  Floats go
through JSON as ``repr`` (exact round trip).

A checkpoint is bound to its data by :func:`store_fingerprint`: a checksum
of the store's metadata, a digest of its contents that ultrafs computes
itself (:func:`content_digest`: the labels in row order, the counts and the
first columns' entries, so that the same file re-ingested with its rows
shuffled is other data), and the store's own data ``fingerprint`` when it
records one.  A resumed run refuses a checkpoint written for other data or
other result-affecting parameters, naming what differs; ``max_iter`` and
``tol`` may change between runs.

Every field of a checkpoint is validated on load (types, ranges, lengths,
finite values, keys within the feature space, decision values of the right
length), and a checkpoint is never trusted to stand for a solve:
:func:`verify_resumed_state` checks that the stored decision values are
those of the stored weights, and whether the stored weights of a finished
run carry the KKT certificate of their subproblem (when they do not, the
loop solves the subproblem again from them).  What a checkpoint cannot
prove is that its features were the ones the passes would pick: resuming
trusts the selection of a checkpoint bound to the same data and
parameters.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path

import numpy as np

from ultrafs.json_fields import InvalidField as _Invalid
from ultrafs.json_fields import integer as _int
from ultrafs.json_fields import real as _real
from ultrafs.json_fields import show as _show
from ultrafs.errors import UltraFSError
from ultrafs.atomic import atomic_file, write_json_atomic

__all__ = ["Checkpoint", "CheckpointMismatchError", "store_fingerprint",
           "content_digest", "verify_resumed_state", "read_payload",
           "CHECKPOINT_VERSION", "MAX_CHECKPOINT_BYTES"]

#: version 2: the fingerprint is an object (metadata, content, data) and
#: every field is validated on load
CHECKPOINT_VERSION = 2
_STATE_FILE = "checkpoint.json"
#: parameters that may differ between the interrupted and the resumed run
_FREE_PARAMS = ("max_iter", "tol")
#: largest ``checkpoint.json`` read (bytes), checked before reading
MAX_CHECKPOINT_BYTES = 2**30
#: columns whose entries :func:`content_digest` hashes (the first ones)
DIGEST_COLUMNS = 256
#: tolerance of the stored decision values against the stored weights,
#: relative to the largest decision value (rounding of the solvers' updates)
DECISION_RTOL = 1e-8
_DECISION_FILE = re.compile(r"decision-[0-9]{1,20}\.npy")


class CheckpointMismatchError(UltraFSError):
    """A checkpoint was written for other data or other parameters, or is damaged."""


def store_fingerprint(store) -> dict:
    """What binds a checkpoint to a store's data.

    Returns
    -------
    dict
        ``metadata``: SHA-256 of the store's :meth:`describe` (shape, nnz,
        dtype, classes, blocks...; the path, the format version, the target
        kind and any recorded fingerprint are left out, so the same data
        keeps it when it moves or when an older store is rewritten);
        ``content``: :func:`content_digest`; ``data``: the store's own
        ``fingerprint`` (a hex string) or None for stores without one.
    """
    described = dict(store.describe())
    for key in ("path", "format_version", "target", "fingerprint"):
        described.pop(key, None)
    text = json.dumps(described, sort_keys=True, default=str)
    data = getattr(store, "fingerprint", None)
    return {"metadata": hashlib.sha256(text.encode()).hexdigest(),
            "content": content_digest(store),
            "data": None if data is None else str(data)}


def content_digest(store) -> str:
    """SHA-256 of what is cheap to read of a store's contents.

    The shape, nnz, id offset and dtype, the targets in row order, and
    the entries (row indices and values) of the first
    :data:`DIGEST_COLUMNS` columns.  Reordering the rows changes the
    targets' order (and the first columns' row indices): a checkpoint
    written for a re-ingested file with shuffled rows is refused even for
    stores that record no fingerprint of their own.
    """
    digest = hashlib.sha256()
    head = {"n_samples": int(store.n_samples), "n_features": int(store.n_features),
            "nnz": int(store.nnz), "id_offset": int(store.id_offset),
            "dtype": np.dtype(store.dtype).name}
    digest.update(json.dumps(head, sort_keys=True).encode())
    targets = np.ascontiguousarray(store.read_targets(), dtype="<f8")
    digest.update(targets.tobytes())
    stop = min(int(store.n_features), DIGEST_COLUMNS)
    if stop > 0:
        block = store.read_range(0, stop)
        for array in (np.asarray(block.indptr, dtype="<i8"),
                      np.asarray(block.indices, dtype="<i8"),
                      np.asarray(block.values(np.float64), dtype="<f8")):
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _as_fingerprint(fingerprint) -> dict:
    """A fingerprint object (a bare string is a metadata checksum)."""
    if isinstance(fingerprint, dict):
        return {key: fingerprint.get(key) for key in ("metadata", "content", "data")}
    return {"metadata": fingerprint, "content": None, "data": None}


class Checkpoint:
    """Reads and writes the loop state in a directory.

    Parameters
    ----------
    directory : path
        Created if missing.
    fingerprint : dict or str
        :func:`store_fingerprint` of the input store (a string: a metadata
        checksum only).
    params : dict
        The run's parameters (JSON-serialisable).
    """

    def __init__(self, directory, fingerprint, params: dict):
        self.directory = Path(directory)
        self.fingerprint = _as_fingerprint(fingerprint)
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
        decision : float64 array, shape (n_samples,) or (n_samples * K,)
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

    def load(self, *, n_samples=None, n_outputs=1, n_candidates=None):
        """Read and validate the committed state.

        Parameters
        ----------
        n_samples : int, optional
            Rows of the data (checks the decision values' length).
        n_outputs : int
            Decision values per row (1, or K classes).
        n_candidates : int, optional
            Size of the feature space: every key must lie in
            ``0..n_candidates - 1``.

        Returns
        -------
        state : dict
        decision : float64 array

        Raises
        ------
        CheckpointMismatchError
            Other data, other parameters, or an unreadable or invalid
            checkpoint (one line naming ``checkpoint.json`` and the
            problem).
        """
        where = str(self.state_path)
        payload = read_payload(self.state_path)
        self.check_binding(payload, where)
        try:
            state = _validated_state(payload, n_outputs, n_candidates)
            decision = self._load_decision(payload["decision_file"], n_samples,
                                           n_outputs)
        except _Invalid as exc:
            raise CheckpointMismatchError(f"{where}: invalid checkpoint: {exc}") \
                from None
        return state, decision

    def check_binding(self, payload, where, *, kind="ultrafs-checkpoint",
                      version=CHECKPOINT_VERSION, free=_FREE_PARAMS) -> None:
        """Refuse a payload of another kind or version, or written for other
        data or other parameters.

        Parameters
        ----------
        payload : object
            The parsed JSON file (:func:`read_payload`).
        where : str
            Names the file in the error.
        kind : str
            The payload's ``format``.
        version : int
            The payload's ``version``.
        free : sequence of str
            Parameters that may differ between the writing and the reading run.

        Raises
        ------
        CheckpointMismatchError
            One line naming ``where`` and what differs.
        """
        if not isinstance(payload, dict) or payload.get("format") != kind:
            raise CheckpointMismatchError(f"{where}: not an ultrafs checkpoint")
        saved_version = payload.get("version")
        if saved_version != version or isinstance(saved_version, bool):
            raise CheckpointMismatchError(
                f"{where}: checkpoint version {_show(saved_version)} is not "
                f"{version} (written by another ultrafs): start the run "
                "again without --resume, or in another checkpoint directory")
        self._check_data(payload.get("fingerprint"), where)
        saved = payload.get("params", {})
        if not isinstance(saved, dict):
            raise CheckpointMismatchError(f"{where}: invalid checkpoint: params must "
                                          "be a JSON object")
        differing = sorted(name for name in set(saved) | set(self.params)
                           if name not in free
                           and saved.get(name) != self.params.get(name))
        if differing:
            name = differing[0]
            raise CheckpointMismatchError(
                f"{where}: checkpoint was written with different parameters "
                f"({name}={saved.get(name)!r}, now {self.params.get(name)!r})")

    def _check_data(self, saved, where) -> None:
        """Refuse a checkpoint whose data fingerprint differs from the store's."""
        if not isinstance(saved, dict):
            raise CheckpointMismatchError(f"{where}: invalid checkpoint: no data "
                                          "fingerprint")
        saved, now = _as_fingerprint(saved), self.fingerprint
        if saved["data"] is not None and now["data"] is not None \
                and saved["data"] != now["data"]:
            raise CheckpointMismatchError(
                f"{where}: checkpoint was written for different data (the store's "
                f"data fingerprint is {str(now['data'])[:16]}, the checkpoint's "
                f"{str(saved['data'])[:16]})")
        if saved["content"] != now["content"]:
            raise CheckpointMismatchError(
                f"{where}: checkpoint was written for different data (the labels or "
                "the first columns differ: other rows, or the same rows reordered)")
        if saved["metadata"] != now["metadata"]:
            raise CheckpointMismatchError(
                f"{where}: checkpoint was written for different data "
                "(store metadata checksum differs)")

    def _load_decision(self, name, n_samples, n_outputs):
        """The decision values the state names, checked."""
        if not isinstance(name, str) or not _DECISION_FILE.fullmatch(name):
            raise _Invalid(f"decision_file must be a decision-<t>.npy name in the "
                           f"checkpoint directory, got {_show(name)}")
        path = self.directory / name
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise _Invalid(f"{name} is not a regular file")
            decision = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise _Invalid(f"missing decision values {name}") from None
        except (OSError, ValueError, EOFError) as exc:
            raise _Invalid(f"unreadable decision values {name} ({exc})") from None
        if decision.dtype != np.float64 or decision.ndim != 1 or (
                n_samples is not None and decision.size != n_samples * n_outputs):
            wanted = "" if n_samples is None else f" of {n_samples * n_outputs} values"
            raise _Invalid(f"{name} must hold a float64 vector{wanted}, got "
                           f"{decision.dtype} of shape {decision.shape}")
        if not np.all(np.isfinite(decision)):
            raise _Invalid(f"{name} holds values that are not finite")
        return decision


def verify_resumed_state(datafit, block_ptr, coef, bias, decision, *, fit_intercept,
                         kkt_tol, where):
    """Check a resumed state against the data; say whether it is certified.

    Parameters
    ----------
    datafit : ultrafs.solvers.datafits.Datafit
        The subproblem on the checkpoint's columns (re-read from the store).
    block_ptr : int64 array
        Coefficient blocks (in coefficient units).
    coef, bias, decision
        The stored weights and decision values.
    fit_intercept : bool
    kkt_tol : float or None
        The run's certificate (None: :data:`~ultrafs.solvers.apg.DEFAULT_KKT_TOL`).
    where : str
        Names the checkpoint in the error.

    Returns
    -------
    certified : bool
        Whether ``(coef, bias)`` solve their subproblem to ``kkt_tol``.

    Raises
    ------
    CheckpointMismatchError
        When the stored decision values are not those of the stored
        weights on the data (a damaged or edited checkpoint).
    """
    from ultrafs.solvers.apg import DEFAULT_KKT_TOL
    from ultrafs.solvers.penalties import L21Squared
    from ultrafs.solvers.subproblem import Problem, kkt_residual

    recomputed = np.asarray(datafit.decision(coef, bias), dtype=np.float64).ravel()
    scale = max(1.0, float(np.max(np.abs(recomputed), initial=0.0)))
    if recomputed.shape != decision.shape or \
            float(np.max(np.abs(recomputed - decision), initial=0.0)) > DECISION_RTOL * scale:
        raise CheckpointMismatchError(
            f"{where}: invalid checkpoint: the stored decision values are not those "
            "of the stored weights on this data (a damaged or edited checkpoint)")
    if len(coef) == 0:
        return not fit_intercept or _bias_is_optimal(datafit, bias)
    pb = Problem(datafit, L21Squared(), np.asarray(block_ptr, dtype=np.int64))
    derivative = np.empty_like(recomputed)
    datafit.value_derivative(recomputed, derivative)
    residual, _ = kkt_residual(pb, coef, pb.gradient(derivative),
                               datafit.bias_gradient(derivative), fit_intercept)
    tol = DEFAULT_KKT_TOL if kkt_tol is None else float(kkt_tol)
    return residual <= tol


def _bias_is_optimal(datafit, bias) -> bool:
    """Whether the intercept of a model without features is the best constant."""
    best = np.asarray(datafit.optimal_bias(True), dtype=np.float64)
    return bool(np.allclose(np.asarray(bias, dtype=np.float64), best,
                            rtol=1e-9, atol=1e-9))


# --------------------------------------------------------------- validation
# a problem of a checkpoint's content becomes CheckpointMismatchError
def read_payload(path):
    """The parsed ``checkpoint.json``: a regular file, bounded, UTF-8 JSON."""
    where = str(path)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise CheckpointMismatchError(f"{where}: not a regular file")
        if info.st_size > MAX_CHECKPOINT_BYTES:
            raise CheckpointMismatchError(
                f"{where}: checkpoint larger than {MAX_CHECKPOINT_BYTES // 2**30} GiB; "
                "not read")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CHECKPOINT_BYTES + 1)
    except OSError as exc:
        raise CheckpointMismatchError(
            f"{where}: unreadable checkpoint ({exc.strerror or exc})") from None
    if len(raw) > MAX_CHECKPOINT_BYTES:
        raise CheckpointMismatchError(f"{where}: checkpoint grew while read; not read")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CheckpointMismatchError(
            f"{where}: unreadable checkpoint (byte {exc.start} is not UTF-8)") from None
    except RecursionError:
        raise CheckpointMismatchError(
            f"{where}: unreadable checkpoint (JSON nested too deeply)") from None
    except json.JSONDecodeError as exc:
        raise CheckpointMismatchError(
            f"{where}: unreadable checkpoint ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno})") from None
    except ValueError as exc:
        raise CheckpointMismatchError(f"{where}: unreadable checkpoint ({exc})") \
            from None


def _reals(value, what, length) -> np.ndarray:
    if not isinstance(value, list):
        raise _Invalid(f"{what} must be a list of numbers, got {_show(value)}")
    if len(value) != length:
        raise _Invalid(f"{what} must hold {length} numbers, got {len(value)}")
    return np.array([_real(v, f"{what}[{k}]") for k, v in enumerate(value)],
                    dtype=np.float64)


def _bias(value, what, n_outputs):
    if n_outputs == 1:
        return _real(value, what)
    return _reals(value, what, n_outputs)


def _validated_state(payload, n_outputs, n_candidates) -> dict:
    """The loop state of a checkpoint, every field checked (raises _Invalid)."""
    missing = [key for key in ("iteration", "keys", "coef", "bias", "lipschitz",
                               "objective_0", "objective_prev", "history", "path",
                               "decision_file") if key not in payload]
    if "batch_ptr" not in payload and "group_ptr" not in payload:
        missing.append("batch_ptr")
    if missing:
        raise _Invalid(f"missing {', '.join(missing)}")
    state = dict(payload)
    iteration = _int(payload["iteration"], "iteration")
    keys = payload["keys"]
    if not isinstance(keys, list):
        raise _Invalid(f"keys must be a list, got {_show(keys)}")
    top = None if n_candidates is None else int(n_candidates) - 1
    keys = [_int(k, f"keys[{i}]", 0, top) for i, k in enumerate(keys)]
    if len(set(keys)) != len(keys):
        raise _Invalid("keys holds a feature twice")
    raw_ptr = payload.get("batch_ptr", payload.get("group_ptr"))
    if not isinstance(raw_ptr, list):
        raise _Invalid(f"batch_ptr must be a list, got {_show(raw_ptr)}")
    batch_ptr = [_int(b, f"batch_ptr[{i}]", 0, len(keys)) for i, b in enumerate(raw_ptr)]
    if batch_ptr[:1] != [0] or batch_ptr[-1:] != [len(keys)] or any(
            a > b for a, b in zip(batch_ptr, batch_ptr[1:])) \
            or len(batch_ptr) != iteration + 1:
        raise _Invalid(f"batch_ptr must rise from 0 to the {len(keys)} keys in "
                       f"{iteration} batches, got {_show(raw_ptr)}")
    state["iteration"], state["keys"], state["batch_ptr"] = iteration, keys, batch_ptr
    state["coef"] = _reals(payload["coef"], "coef", len(keys) * n_outputs)
    state["bias"] = _bias(payload["bias"], "bias", n_outputs)
    lipschitz = payload["lipschitz"]
    if lipschitz is not None and not _real(lipschitz, "lipschitz") > 0:
        raise _Invalid(f"lipschitz must be > 0, got {_show(lipschitz)}")
    state["objective_0"] = _real(payload["objective_0"], "objective_0")
    if state["objective_0"] <= 0:
        raise _Invalid(f"objective_0 must be > 0, got {_show(payload['objective_0'])}")
    state["objective_prev"] = _real(payload["objective_prev"], "objective_prev")
    state["history"] = _history(payload["history"], iteration)
    state["path"] = _path(payload["path"], batch_ptr, n_outputs)
    reason = payload.get("stop_reason", "")
    if not isinstance(reason, str):
        raise _Invalid(f"stop_reason must be a string, got {_show(reason)}")
    state["stop_reason"] = reason
    return state


def _history(value, iteration) -> list:
    if not isinstance(value, list) or len(value) != iteration:
        raise _Invalid(f"history must be a list of {iteration} records, got "
                       f"{_show(value)}")
    for k, record in enumerate(value):
        if not isinstance(record, dict):
            raise _Invalid(f"history[{k}] must be a JSON object, got {_show(record)}")
        for name, item in record.items():
            if not isinstance(item, (int, float)):
                raise _Invalid(f"history[{k}] {name} must be a number, got "
                               f"{_show(item)}")
    return [dict(record) for record in value]


def _path(value, batch_ptr, n_outputs) -> list:
    """The weights after each iteration: ``[coef, bias]`` pairs."""
    if not isinstance(value, list) or len(value) != len(batch_ptr) - 1:
        raise _Invalid(f"path must be a list of {len(batch_ptr) - 1} [coef, bias] "
                       "pairs")
    path = []
    for h, item in enumerate(value):
        if not isinstance(item, list) or len(item) != 2:
            raise _Invalid(f"path[{h}] must be a [coef, bias] pair, got {_show(item)}")
        path.append((_reals(item[0], f"path[{h}] coef", batch_ptr[h + 1] * n_outputs),
                     _bias(item[1], f"path[{h}] bias", n_outputs)))
    return path
