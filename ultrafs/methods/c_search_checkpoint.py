"""The search of ``C="auto"`` in a checkpoint: kept after every grid point, resumed.

With a checkpoint directory, FGM's choice of C
(:func:`~ultrafs.methods.validation.choose_C`) commits ``c-search.json``
next to the loop's ``checkpoint.json`` after every grid point it scores:
each visited C's held-out points (what the walk decides by) in the order
visited, and the subproblem solutions of that C's fit on every fold (the
warm starts of the next C's fits,
:class:`~ultrafs.methods.fgm.GridWarmStart`), so that a resumed search
fits the next C exactly as the uninterrupted one did.  The file is
replaced atomically (:func:`~ultrafs.atomic.write_json_atomic`): a kill at
any moment leaves the previous or the new state.  Floats go through JSON
as ``repr`` (exact round trip).

A resumed search replays the recorded points through the walk itself (the
same code decides where it goes, whether it widens and where it stops)
and fits only the grid points not recorded; it chooses the same C as an
uninterrupted run, and the same model follows.  The file is bound to its
data and parameters as the loop's checkpoint is
(:meth:`~ultrafs.methods.checkpoint.Checkpoint.check_binding`; here every
parameter counts, ``max_iter`` and ``tol`` too: they change each fit), and
every field is validated on load; a walk that asks for another C than the
one recorded next refuses the file.  A forged warm start could only change
how many iterations a certified solver takes, not what it certifies.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ultrafs.atomic import write_json_atomic
from ultrafs.json_fields import InvalidField
from ultrafs.json_fields import integer as _int
from ultrafs.json_fields import real as _real
from ultrafs.json_fields import show as _show
from ultrafs.methods.checkpoint import Checkpoint, CheckpointMismatchError, read_payload

__all__ = ["SearchCheckpoint", "SearchJournal", "SEARCH_FILE", "SEARCH_VERSION"]

SEARCH_FILE = "c-search.json"
SEARCH_FORMAT = "ultrafs-c-search"
SEARCH_VERSION = 1
#: says that a run resumes from a checkpoint (the CLI shows it on stderr)
resume_logger = logging.getLogger("ultrafs.resume")


class SearchCheckpoint(Checkpoint):
    """Reads and writes the state of a ``C="auto"`` search in a directory.

    Parameters
    ----------
    directory : path
        The run's checkpoint directory (created if missing).
    fingerprint : dict
        :func:`~ultrafs.methods.checkpoint.store_fingerprint` of the store.
    params : dict
        Everything the search's choice depends on (JSON-serialisable): the
        run's parameters, the grid, the refit grid and the folds.
    """

    @property
    def state_path(self) -> Path:
        """The JSON commit file, ``c-search.json``."""
        return self.directory / SEARCH_FILE

    def save(self, visits, solutions) -> None:
        """Commit the search after a grid point.

        Parameters
        ----------
        visits : list of dict
            ``{"C": float, "points": [dict, ...]}`` per visited C, in the
            order visited (the points as the curve keeps them).
        solutions : list (one per fold) of list of dict
            The last visited C's fits' subproblem solutions: ``keys``,
            ``n_outputs``, ``iteration``, ``coef`` and ``bias`` each.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        payload = {"format": SEARCH_FORMAT, "version": SEARCH_VERSION,
                   "fingerprint": self.fingerprint, "params": self.params,
                   "visits": [{"C": float(v["C"]), "points": [_plain(p) for p in
                                                              v["points"]]}
                              for v in visits],
                   "solutions": solutions}
        write_json_atomic(payload, self.state_path)

    def load(self, *, n_folds, n_keys, n_outputs, refit):
        """Read and validate the committed search.

        Parameters
        ----------
        n_folds : int
            Folds of the search (the solutions hold one list per fold).
        n_keys : int
            Size of the feature space: every key lies in ``0..n_keys - 1``.
        n_outputs : int
            Weights per feature (1, or K classes).
        refit : bool
            Whether every visit scores refits (then its first point is FGM's
            own weights, ``predictor`` ``"selection"``, the others refits).

        Returns
        -------
        visits : list of dict
        solutions : list of list of dict

        Raises
        ------
        CheckpointMismatchError
            Other data or parameters, or a damaged file (one line naming
            ``c-search.json`` and the problem).
        """
        where = str(self.state_path)
        payload = read_payload(self.state_path)
        self.check_binding(payload, where, kind=SEARCH_FORMAT, version=SEARCH_VERSION,
                           free=())
        try:
            visits = _visits(payload.get("visits"), refit)
            solutions = _solutions(payload.get("solutions"), n_folds, n_keys,
                                   n_outputs, bool(visits))
        except InvalidField as exc:
            raise CheckpointMismatchError(f"{where}: invalid checkpoint: {exc}") \
                from None
        return visits, solutions


class SearchJournal:
    """The grid points of one search: replayed from its checkpoint, then
    each new one committed (the ``journal`` of
    :func:`~ultrafs.methods.validation.choose_C`).

    Once the walk has replayed every recorded point (each where the walk
    asked for it), one line on the ``ultrafs.resume`` logger says that the
    search resumes; a refused file says nothing else.

    Parameters
    ----------
    checkpoint : SearchCheckpoint
    visits : list of dict
        The recorded visits (:meth:`SearchCheckpoint.load`), replayed in order.
    solutions_of : callable
        ``solutions_of(C)``: every fold's subproblem solutions of the fit
        at ``C`` (what :meth:`SearchCheckpoint.save` keeps).
    """

    def __init__(self, checkpoint, visits, solutions_of):
        self.checkpoint = checkpoint
        self.visits = [dict(v) for v in visits]
        self.recorded = len(self.visits)
        self.solutions_of = solutions_of
        self._next = 0

    def pending(self) -> set:
        """The Cs recorded and not replayed yet (the walk fits none of them)."""
        return {v["C"] for v in self.visits[self._next:self.recorded]}

    def replay(self, C):
        """The recorded points of the next visit, which must be ``C``; None
        once every recorded visit is replayed."""
        if self._next >= self.recorded:
            return None
        visit = self.visits[self._next]
        if visit["C"] != float(C):
            raise self._mismatch(f"grid point {self._next + 1} is C={visit['C']!r}, "
                                 f"the walk asks for C={float(C)!r}")
        self._next += 1
        if self._next == self.recorded:
            # every recorded point replayed, and found where the walk goes
            resume_logger.info(
                "resuming the choice of C from %s after %d grid point%s (C %s)",
                self.checkpoint.directory, self.recorded, "s" * (self.recorded != 1),
                ", ".join(f"{v['C']:g}" for v in self.visits[:self.recorded]))
        return [dict(point) for point in visit["points"]]

    def commit(self, C, points) -> None:
        """Record the visit of ``C`` (its scored points) and commit the search."""
        self.visits.append({"C": float(C), "points": [dict(p) for p in points]})
        self._next = len(self.visits)
        self.checkpoint.save(self.visits, self.solutions_of(float(C)))

    def finish(self) -> None:
        """The walk has ended: every recorded visit must have been replayed."""
        if self._next < self.recorded:
            raise self._mismatch(f"it records {self.recorded} grid points, the walk "
                                 f"visits {self._next}")

    def _mismatch(self, text):
        return CheckpointMismatchError(f"{self.checkpoint.state_path}: invalid "
                                       f"checkpoint: {text}")


def _plain(point) -> dict:
    """A curve point with plain Python numbers (JSON)."""
    out = {}
    for name, value in point.items():
        if isinstance(value, (np.floating, np.integer)):
            value = value.item()
        out[name] = value
    return out


# --------------------------------------------------------------- validation
_POINT_NUMBERS = ("accuracy", "loss", "n_features", "seconds")


def _visits(value, refit) -> list:
    if not isinstance(value, list):
        raise InvalidField(f"visits must be a list, got {_show(value)}")
    visits, seen = [], set()
    for k, visit in enumerate(value):
        what = f"visits[{k}]"
        if not isinstance(visit, dict) or set(visit) != {"C", "points"}:
            raise InvalidField(f"{what} must be an object of C and points, got "
                               f"{_show(visit)}")
        C = _positive(visit["C"], f"{what} C")
        if C in seen:
            raise InvalidField(f"{what} C={C!r} is visited twice")
        seen.add(C)
        visits.append({"C": C, "points": _points(visit["points"], C, refit, what)})
    return visits


def _points(value, C, refit, what) -> list:
    if not isinstance(value, list) or not value or (not refit and len(value) != 1):
        wanted = "a list of points" if refit else "a list of one point"
        raise InvalidField(f"{what} points must be {wanted}, got {_show(value)}")
    points, last_refit = [], 0.0
    for j, point in enumerate(value):
        where = f"{what} points[{j}]"
        if not isinstance(point, dict):
            raise InvalidField(f"{where} must be an object, got {_show(point)}")
        expected = {"C", "refit_C", *_POINT_NUMBERS} | ({"predictor"} if refit else set())
        if set(point) != expected:
            raise InvalidField(f"{where} must hold {', '.join(sorted(expected))}")
        if _real(point["C"], f"{where} C") != C:
            raise InvalidField(f"{where} C must be the visit's C={C!r}, got "
                               f"{_show(point['C'])}")
        clean = {"C": C}
        selection = not refit or j == 0
        if selection:
            if point["refit_C"] is not None:
                raise InvalidField(f"{where} refit_C must be null (FGM's own weights), "
                                   f"got {_show(point['refit_C'])}")
            clean["refit_C"] = None
        else:
            refit_C = _positive(point["refit_C"], f"{where} refit_C")
            if refit_C <= last_refit:
                raise InvalidField(f"{where} refit_C must increase along the visit, got "
                                   f"{refit_C!r} after {last_refit!r}")
            clean["refit_C"] = last_refit = refit_C
        if refit:
            wanted = "selection" if selection else "refit"
            if point["predictor"] != wanted:
                raise InvalidField(f"{where} predictor must be {wanted!r}, got "
                                   f"{_show(point['predictor'])}")
            clean["predictor"] = wanted
        for name in _POINT_NUMBERS:
            number = _real(point[name], f"{where} {name}")
            if number < 0 or (name == "accuracy" and number > 1):
                bounds = "in [0, 1]" if name == "accuracy" else ">= 0"
                raise InvalidField(f"{where} {name} must be {bounds}, got "
                                   f"{_show(point[name])}")
            clean[name] = number
        points.append(clean)
    return points


def _positive(value, what) -> float:
    number = _real(value, what)
    if not number > 0:
        raise InvalidField(f"{what} must be > 0, got {_show(value)}")
    return number


def _solutions(value, n_folds, n_keys, n_outputs, visited) -> list:
    """Every fold's solutions (an empty list before the first visit)."""
    if not visited and value == []:
        return []
    if not isinstance(value, list) or len(value) != n_folds:
        raise InvalidField(f"solutions must be a list of {n_folds} folds' lists, got "
                           f"{_show(value)}")
    folds = []
    for f, entries in enumerate(value):
        if not isinstance(entries, list):
            raise InvalidField(f"solutions[{f}] must be a list, got {_show(entries)}")
        folds.append([_solution(entry, f"solutions[{f}][{k}]", n_keys, n_outputs)
                      for k, entry in enumerate(entries)])
    return folds


def _solution(entry, what, n_keys, n_outputs) -> dict:
    fields = {"keys", "n_outputs", "iteration", "coef", "bias"}
    if not isinstance(entry, dict) or set(entry) != fields:
        raise InvalidField(f"{what} must hold {', '.join(sorted(fields))}")
    keys = entry["keys"]
    if not isinstance(keys, list):
        raise InvalidField(f"{what} keys must be a list, got {_show(keys)}")
    keys = [_int(key, f"{what} keys[{i}]", 0, int(n_keys) - 1)
            for i, key in enumerate(keys)]
    if len(set(keys)) != len(keys):
        raise InvalidField(f"{what} keys holds a feature twice")
    if _int(entry["n_outputs"], f"{what} n_outputs", 1) != n_outputs:
        raise InvalidField(f"{what} n_outputs must be {n_outputs}, got "
                           f"{_show(entry['n_outputs'])}")
    iteration = _int(entry["iteration"], f"{what} iteration", 1)
    coef = entry["coef"]
    if not isinstance(coef, list) or len(coef) != len(keys) * n_outputs:
        raise InvalidField(f"{what} coef must hold {len(keys) * n_outputs} numbers, "
                           f"got {_show(coef)}")
    coef = [_real(v, f"{what} coef[{i}]") for i, v in enumerate(coef)]
    bias = entry["bias"]
    if n_outputs == 1:
        bias = _real(bias, f"{what} bias")
    elif not isinstance(bias, list) or len(bias) != n_outputs:
        raise InvalidField(f"{what} bias must hold {n_outputs} numbers, got "
                           f"{_show(bias)}")
    else:
        bias = [_real(v, f"{what} bias[{i}]") for i, v in enumerate(bias)]
    return {"keys": keys, "n_outputs": n_outputs, "iteration": iteration,
            "coef": coef, "bias": bias}

