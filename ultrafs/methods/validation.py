"""Choosing C: the data-scaled default and ``C="auto"`` by held-out rows.

The scale of C
--------------
FGM's problem ``½(Σ_h ‖ω_h‖)² + C Σ_i l(y_i, ω'φ(x_i) − b)`` is not
invariant to the scale of the rows: multiplying every row by ``s`` gives
the same decisions with ``ω/s``, whose penalty is ``1/s²`` smaller, so the
same model needs ``C/s²``.  A constant C (the paper's C = 10) therefore
means very different models on raw 0/1 text and on the same rows scaled to
unit length (FGM then zeroes most late batches, issue 8).  FGM's
``C="scale"`` is now the column rule of :mod:`ultrafs.methods.c_scale`
(issue 38: the rule below collapses when one column is unscaled); the
rule below, :func:`default_C`, remains the centre of the ``C="auto"``
grid, MSLR's ``C="scale"`` and FGM's for additive-kernel and tree spaces.
It was FGM's ``C="scale"`` of issue 8:
``DEFAULT_C_SCALE / mean_i max_f φ_f(x_i)²``, the mean over samples of
the largest squared candidate value of the sample (one
streamed pass, exact for any block size and scheduler), rounded to three
significant digits.  It scales as ``1/s²``, and, unlike the mean squared
row norm, it does not grow with the number of nonzeros per row: a model
uses a few features, not the whole row.  The squared row norm was tried
first (``C = 100 / mean ‖x‖²``): on colon-cancer (2,000 dense features a
row) it gave C = 0.049, under which FGM kept 3 of 10 budgeted features and
68% test accuracy against l1-LR's 89%.  On 0/1 data the rule gives
``C = DEFAULT_C_SCALE = 10``, the paper's value.  ``bench/quality_vs_l1.py``
measures it (``bench/README.md`` §11), and measured the constant too: of
0.3, 1, 3, 10, 30 and 100 over the 118 cells of its 12 sets, 10 trails
l1-LR at the same number of features by more than 1 point in the fewest
cells (22, against 24 to 40) and wins the most (75, against 49 to 71).
A smaller C stops with fewer features (0.48 k on average at 0.3, 0.81 k
at 10) and suits gisette and arcene; a larger one suits dexter and
rcv1_small: no one constant is best on every set, which is what
``C="auto"`` is for.

``C="auto"``
------------
Rows are split into a training and a validation part (stratified and
seeded: :func:`stratified_split`, 20% held out), or into K stratified folds
(:func:`stratified_folds`; 5 by default for data of at most 10,000 rows,
where one hold-out is too noisy).  FGM runs on the training part for C on a grid
``default_C × 10^{-1.5, -1, ..., 2}`` in increasing order and is scored on
the validation part (accuracy, then the mean loss, then the smaller C
break ties); the walk stops once two grid values in a row score below the
best (larger C means more features kept and slower fits, so the costly end
of the grid is only reached when it helps).  When the best point's C
lies at an edge of the grid (its smallest value, or its largest with the
walk not stopped), the grid is widened past that edge by up to
``WIDEN_STEPS`` values half a decade apart (:func:`grid_step`): above, the
walk simply goes on; below, it steps down while each new value beats the
best.  The curve records the final ``grid``, the ``widened`` values and an
``edge`` where the choice still lies at one (a smaller, or larger, C may
score better); the summary line says so (:func:`validation_note`).  A grid
given by the user (``C_grid``, ``--C-grid``: :func:`given_grid`) is walked
as given, never widened: its edge is only reported.
With a refit the refit's C is
chosen on the same rows from the same grid for every FGM C, walked the
same way: upward, warm-started, and stopped once two refit values in a row
score below the best refit of that FGM C; FGM's own weights are scored on
the same rows too, so that the held-out rows also choose which model
predicts (the refit, or FGM's weights where they score better: against
l1-LR 81 wins and 23 losses over 118 cells instead of 80 and 24,
colon-cancer +1.05 points on average, bench/README.md §11).  Along the
grid each fold's FGM fits are warm-started
(:class:`~ultrafs.methods.fgm.GridWarmStart`): a
subproblem whose working set the previous C's fit also solved starts from
that solution.  The values the walk will surely fit
(:func:`lockstep_window`: the first three, then those before it could
stop) are fitted in lockstep, their scoring passes shared
(:mod:`ultrafs.methods.fgm_grid`): the data are read once per outer
iteration for all of them.  With K folds copied into memory, not tiny,
and the local threads scheduler, the folds are fitted in up to ``num_workers`` threads at
once (``api._fold_threads``).  What this costs against one fit is measured
in bench/README.md §11.  The chosen values are then used on all rows.
Every fit is deterministic and the curve is assembled in fold order, so
the choice is the same for a fixed seed on every scheduler, block size and
thread count.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ultrafs.errors import ParameterError

__all__ = ["DEFAULT_C_SCALE", "C_GRID_EXPONENTS", "default_C", "c_grid",
           "stratified_split", "stratified_folds", "default_folds", "ValidationCurve",
           "choose_C", "lockstep_window", "chosen_point", "given_grid", "grid_step",
           "WIDEN_STEPS", "validation_note"]

#: C · mean_i max_f φ_f(x_i)² of the default ``C="scale"``
DEFAULT_C_SCALE = 10.0
#: the grid of ``C="auto"``: default C times 10 to these powers
C_GRID_EXPONENTS = (-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)
#: the grid's step, as a power of ten (a widened grid keeps it)
C_GRID_STEP = 0.5
#: values a grid is widened by, at most, past the edge where the best lies
WIDEN_STEPS = 3
#: grid values in a row scoring below the best that end the walk
PATIENCE = 2
#: held-out share of the rows by default
DEFAULT_VALIDATION_FRACTION = 0.2
#: up to this many rows, C="auto" uses SMALL_DATA_FOLDS stratified folds
#: by default: one held-out fifth of a few hundred rows scores C by a
#: handful of rows (on rcv1_small's 700 training rows a 20% hold-out chose
#: C = 3.16 and 10 features, 75.7% test accuracy; 5 folds chose C = 100,
#: 86.3%)
SMALL_DATA_ROWS = 10_000
SMALL_DATA_FOLDS = 5


def round_significant(value: float, digits: int = 3) -> float:
    """``value`` rounded to ``digits`` significant digits."""
    if value == 0 or not math.isfinite(value):
        return float(value)
    return float(f"{value:.{digits - 1}e}")


def default_C(features, *, block_size=None, scheduler=None, num_workers=None,
              sample_weight=None) -> float:
    """``DEFAULT_C_SCALE / mean_i max_f φ_f(x_i)²``, three significant digits.

    Data whose rows are all zero get ``DEFAULT_C_SCALE`` (any C gives the
    same constant model).  With sample weights the mean is weighted by them,
    so that integer weights give the C of the data with repeated rows.
    """
    largest = features.row_max_squares(block_size=block_size, scheduler=scheduler,
                                       num_workers=num_workers)
    if sample_weight is not None and len(largest):
        weights = np.asarray(sample_weight, dtype=np.float64)
        mean = float(np.dot(weights, largest) / np.sum(weights))
    else:
        mean = float(np.mean(largest)) if len(largest) else 0.0
    if not (mean > 0 and math.isfinite(mean)):
        return DEFAULT_C_SCALE
    return round_significant(DEFAULT_C_SCALE / mean)


def c_grid(center: float) -> list[float]:
    """The ``C="auto"`` grid around ``center``, increasing."""
    return [round_significant(center * 10.0 ** e) for e in C_GRID_EXPONENTS]


def grid_step(grid, direction: int) -> float:
    """The next value of an increasing ``grid`` past its edge (``direction``
    -1 below, +1 above), one ``C_GRID_STEP`` on: a tenth (ten times) the
    value two places in, as :func:`c_grid` rounds it, so that the widened
    grid keeps its decades (1, 0.316, 0.1, ...); ``edge × 10^{±C_GRID_STEP}``
    for a grid of one value.  Three significant digits.
    """
    if len(grid) >= 2:
        inner = grid[1] if direction < 0 else grid[-2]
        return round_significant(inner * 10.0 ** (direction * 2 * C_GRID_STEP))
    edge = grid[0] if direction < 0 else grid[-1]
    return round_significant(edge * 10.0 ** (direction * C_GRID_STEP))


def given_grid(values) -> list[float]:
    """A grid of C given by the user: numbers > 0, sorted, deduplicated.

    Raises a one-line ParameterError for anything else (an empty grid, a
    string, a number <= 0, infinity or NaN).
    """
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        values = [values]
    grid = []
    for value in values:
        if isinstance(value, bool) or not isinstance(
                value, (int, float, np.integer, np.floating)) \
                or not (0 < float(value) < math.inf):
            raise ParameterError(f"the grid of C takes numbers > 0, got {value!r}")
        grid.append(float(value))
    if not grid:
        raise ParameterError("the grid of C is empty")
    return sorted(set(grid))


def _check_seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ParameterError(f"the seed must be an integer >= 0, got {seed!r}")
    return int(seed)


def stratified_split(classes, fraction, seed=0):
    """Stratified, seeded train/validation split of the rows.

    Parameters
    ----------
    classes : int array, shape (n,)
        A class index (or any label) per row.
    fraction : float
        Share of every class held out, in (0, 1); each class keeps at least
        one row on each side when it has two or more.
    seed : int

    Returns
    -------
    train, validation : sorted int64 arrays of row numbers
    """
    if not (0.0 < float(fraction) < 1.0):
        raise ParameterError(f"validation fraction must be in (0, 1), got {fraction!r}")
    rng = np.random.default_rng(_check_seed(seed))
    classes = np.asarray(classes)
    held = []
    for label in np.unique(classes):
        rows = np.flatnonzero(classes == label)
        rows = rows[rng.permutation(len(rows))]
        count = int(round(float(fraction) * len(rows)))
        if len(rows) >= 2:
            count = min(max(count, 1), len(rows) - 1)
        else:
            count = 0
        held.append(rows[:count])
    validation = np.sort(np.concatenate(held)).astype(np.int64)
    train = np.setdiff1d(np.arange(len(classes), dtype=np.int64), validation)
    if len(validation) == 0:
        raise ParameterError("too few rows to hold any out for validation")
    return train, validation


def default_folds(classes, *, validation_fraction=None, cv=None, seed=0):
    """The rows ``C="auto"`` validates on: ``(folds, method, fraction)``.

    ``cv`` folds (:func:`stratified_folds`), else a ``validation_fraction``
    hold-out (:func:`stratified_split`); with neither, ``SMALL_DATA_FOLDS``
    folds for at most ``SMALL_DATA_ROWS`` rows, else a
    ``DEFAULT_VALIDATION_FRACTION`` hold-out.  ``folds`` is a list of
    (train, validation) row arrays, ``method`` ``"cv"`` or ``"holdout"``,
    ``fraction`` the hold-out's share (None for folds).
    """
    if validation_fraction is not None and cv is not None:
        raise ParameterError("give validation_fraction or cv, not both")
    if cv is None and validation_fraction is None and len(classes) <= SMALL_DATA_ROWS:
        cv = SMALL_DATA_FOLDS
    if cv is not None:
        return stratified_folds(classes, cv, seed), "cv", None
    fraction = (DEFAULT_VALIDATION_FRACTION if validation_fraction is None
                else float(validation_fraction))
    return [stratified_split(classes, fraction, seed)], "holdout", fraction


def stratified_folds(classes, n_folds, seed=0):
    """K stratified, seeded folds: a list of (train, validation) row arrays."""
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) \
            or n_folds < 2:
        raise ParameterError(f"cv must be an integer >= 2, got {n_folds!r}")
    rng = np.random.default_rng(_check_seed(seed))
    classes = np.asarray(classes)
    fold_of = np.empty(len(classes), dtype=np.int64)
    offset = 0
    for label in np.unique(classes):
        rows = np.flatnonzero(classes == label)
        rows = rows[rng.permutation(len(rows))]
        # deal the class's rows round the folds, continuing where the last
        # class stopped so that fold sizes differ by at most one
        fold_of[rows] = (offset + np.arange(len(rows))) % n_folds
        offset = (offset + len(rows)) % n_folds
    folds = []
    everything = np.arange(len(classes), dtype=np.int64)
    for k in range(int(n_folds)):
        validation = np.flatnonzero(fold_of == k).astype(np.int64)
        if len(validation) == 0:
            raise ParameterError(f"cv={n_folds} is more folds than rows")
        folds.append((np.setdiff1d(everything, validation), validation))
    return folds


@dataclass
class ValidationCurve:
    """What ``C="auto"`` tried and chose.

    Attributes
    ----------
    method : str
        ``"holdout"`` or ``"cv"``.
    folds : int
    fraction : float or None
        Held-out share (hold-out only).
    seed : int
    points : list of dict
        One per (C, refit C) tried, in increasing C: ``C``, ``refit_C``
        (None for FGM's own weights), ``accuracy`` and ``loss`` (means over
        folds),
        ``n_features`` (mean nonzero features), ``seconds``; with a refit,
        ``predictor`` (``"selection"`` for FGM's own weights, ``"refit"``).
    C, refit_C : float
        The chosen values (with a refit, ``refit_C`` is the best refit of
        the chosen C even when FGM's own weights scored better).
    predictor : {"selection", "refit"} or None
        With a refit, which model scored best on the held-out rows (the
        best point's); None without one.
    grid : list of float
        The grid walked, increasing, after any widening (values past the
        point where the walk stopped included).
    given : bool
        Whether the grid was given by the user (then never widened).
    widened : list of float
        Values added past the edges of the grid because the best point lay
        at one, in the order they were tried (empty: none).
    edge : {"below", "above"} or None
        Where the chosen C lies at an edge of the final grid: its smallest
        value, or its largest reached without the walk's patience stopping
        it; None inside.  A smaller (larger) C may then score better.
    """

    method: str
    folds: int
    fraction: float | None
    seed: int
    points: list = field(default_factory=list)
    C: float = math.nan
    refit_C: float | None = None
    predictor: str | None = None
    grid: list = field(default_factory=list)
    given: bool = False
    widened: list = field(default_factory=list)
    edge: str | None = None

    def to_dict(self) -> dict:
        out = {"method": self.method, "folds": self.folds, "fraction": self.fraction,
               "seed": self.seed, "C": self.C, "refit_C": self.refit_C,
               "points": [dict(p) for p in self.points],
               "grid": [float(c) for c in self.grid]}
        if self.predictor is not None:
            out["predictor"] = self.predictor
        if self.given:
            out["given"] = True
        if self.widened:
            out["widened"] = [float(c) for c in self.widened]
        if self.edge is not None:
            out["edge"] = self.edge
        return out


def validation_note(curve: dict) -> str:
    """What a curve (:meth:`ValidationCurve.to_dict`) says of its grid, in
    words: widened, at an edge, or nothing (``""``)."""
    widened = curve.get("widened") or []
    notes = []
    grid = curve.get("grid") or []
    original = [c for c in grid if c not in widened]
    down = [c for c in widened if original and c < original[0]]
    up = [c for c in widened if original and c > original[-1]]
    if down:
        notes.append(f"grid widened below to C = {min(down):g}")
    if up:
        notes.append(f"grid widened above to C = {max(up):g}")
    edge = curve.get("edge")
    if edge is not None:
        kind = "given grid" if curve.get("given") else "grid"
        side = "smallest" if edge == "below" else "largest"
        better = "smaller" if edge == "below" else "larger"
        notes.append(f"C is the {side} of the {kind}: a {better} C may score better")
    return "; ".join(notes)


def chosen_point(curve: dict) -> dict | None:
    """The point of a curve (:meth:`ValidationCurve.to_dict`, as a model
    file keeps it) whose model predicts: FGM's own weights at the chosen C
    when the curve's ``predictor`` is ``"selection"``, else the chosen
    (C, refit C); None when the curve holds no such point."""
    for point in curve.get("points", []):
        if point.get("C") != curve.get("C"):
            continue
        if curve.get("predictor") == "selection":
            if point.get("predictor") == "selection":
                return point
        elif point.get("refit_C") == curve.get("refit_C"):
            return point
    return None


def _better(a, b):
    """Whether point ``a`` beats ``b``: accuracy, then loss, then smaller Cs."""
    if a["accuracy"] != b["accuracy"]:
        return a["accuracy"] > b["accuracy"]
    if a["loss"] != b["loss"]:
        return a["loss"] < b["loss"]
    return (a["C"], a["refit_C"] or 0.0) < (b["C"], b["refit_C"] or 0.0)


def _mean_point(records, C, **labels):
    """The curve's point of one (C, refit C): the folds' records averaged."""
    return {"C": float(C), **labels,
            "accuracy": float(np.mean([r["accuracy"] for r in records])),
            "loss": float(np.mean([r["loss"] for r in records])),
            "n_features": float(np.mean([r["n_features"] for r in records]))}


def _each_fold(calls, pool):
    """``call()`` of every fold's zero-argument callable, results in fold order.

    With a thread pool the folds run at the same time (one task per fold);
    the results are taken in fold order either way, so they do not depend
    on it.
    """
    if pool is None:
        return [call() for call in calls]
    futures = [pool.submit(call) for call in calls]
    try:
        return [future.result() for future in futures]
    except BaseException:
        # an error or an interrupt: folds not started yet never start (the
        # pool then waits only for the fits running now)
        for future in futures:
            future.cancel()
        raise


def _advance(iterators, pool):
    """The next record of every fold's iterator, in fold order (each
    generator advanced by one thread at a time)."""
    return _each_fold([partial(next, it) for it in iterators], pool)


def lockstep_window(best, below, remaining):
    """How many grid values, from the next one on, the walk will surely fit.

    The first value always improves on nothing; after it the walk fits
    values until ``PATIENCE`` in a row have not improved.  So ``1 +
    PATIENCE`` values at the start, ``PATIENCE - below`` later (``below``:
    values in a row without improvement so far), never more than
    ``remaining``.  Fitting exactly these in lockstep wastes no fit and
    leaves the walk, and so the choice, unchanged.
    """
    needed = 1 + PATIENCE if best is None else PATIENCE - below
    return max(1, min(needed, remaining))


def choose_C(folds, grid, fit_and_score, *, refit_grid=None, method="holdout",
             fraction=None, seed=0, n_jobs=1, widen=True, journal=None) -> ValidationCurve:
    """Walk the grid of C (and of the refit C); return the curve and the choice.

    The walk is a progress phase, ``"choosing C"`` (:func:`ultrafs.progress.phase`):
    one step per grid point, its total the grid's size (raised when the grid
    widens), its status the last point's C and held-out accuracy and the
    best so far, then the chosen C.

    Parameters
    ----------
    folds : list of (train_rows, validation_rows)
    grid : list of float, increasing
    fit_and_score : callable
        ``fit_and_score(fold_index, train_rows, validation_rows, C,
        refit_grid)`` returns an iterable of dicts, each with ``refit_C``,
        ``accuracy``, ``loss`` and ``n_features``: without a refit a single
        one (FGM's weights, ``refit_C`` None); with one, first FGM's own
        weights (``refit_C`` None), then one per refit C in the order of
        ``refit_grid``.  It is consumed lazily, one refit C at a time over
        all folds (a generator computes only the refits the walk reaches).
        When it has a method ``prefit(folds, Cs)``, ``folds`` a list of
        ``(fold_index, train_rows, validation_rows)``, the walk first calls
        it with the next grid values it will surely fit
        (:func:`lockstep_window`), so that their FGM fits can share passes;
        calls for those Cs follow.  With the folds run one after the other
        (``n_jobs`` 1) one call takes every fold, so that the folds' fits
        can share passes too; with threads, one call per fold.
    refit_grid : list of float or None
        Walked upward for every C, stopped once ``PATIENCE`` values in a
        row score below the best refit of that C.  FGM's own weights
        compete with the refits for the best point (the curve's
        ``predictor``) but not in this walk.  A refit grid equal to
        ``grid`` follows its widening: the Cs fitted after a widening walk
        the widened grid.
    method, fraction, seed
        Recorded in the curve.
    n_jobs : int
        Threads that advance the folds at the same time (1: one after the
        other).  The folds' fits must be independent and thread-safe; the
        curve and the choice are the same for every ``n_jobs``.
    widen : bool
        When the best point's C lies at an edge of the grid (its smallest
        value, or its largest with the walk not stopped by its patience),
        try up to ``WIDEN_STEPS`` values past that edge, one
        :func:`grid_step` apart: above, the walk goes on as on the grid;
        below, it steps down while each new value beats the best.  False
        (a grid the user gave): the grid is used as is and an edge is only
        recorded (the curve's ``edge``).
    journal : object, optional
        Where the visited grid points are kept and resumed from
        (:class:`~ultrafs.methods.c_search_checkpoint.SearchJournal`):
        ``replay(C)`` gives the recorded points of the next visit (which
        must be of ``C``) or None, ``pending()`` the recorded Cs not
        replayed yet (never fitted again), ``commit(C, points)`` records a
        new visit, ``finish()`` is called when the walk ends.  A replayed
        visit goes through the walk as a fitted one does, so the walk, and
        the choice, are those of an uninterrupted run.
    """
    if n_jobs > 1 and len(folds) > 1:
        with ThreadPoolExecutor(max_workers=min(int(n_jobs), len(folds)),
                                thread_name_prefix="ultrafs-fold") as pool:
            return _walk(folds, grid, fit_and_score, refit_grid, method, fraction,
                         seed, pool, widen, journal)
    return _walk(folds, grid, fit_and_score, refit_grid, method, fraction, seed, None,
                 widen, journal)


def _walk(folds, grid, fit_and_score, refit_grid, method, fraction, seed, pool, widen,
          journal):
    from ultrafs.progress import phase

    with phase("choosing C", total=len(grid), unit="point") as shown:
        curve = _walk_grid(folds, grid, fit_and_score, refit_grid, method, fraction,
                           seed, pool, widen, journal, shown)
        shown.set_status(_chosen_status(curve))
    return curve


def _chosen_status(curve) -> str:
    """The phase's last status: the choice, its held-out accuracy, the grid's note."""
    point = chosen_point(curve.to_dict())
    text = f"chosen C {curve.C:g}"
    if curve.refit_C is not None:
        text += f", refit C {curve.refit_C:g}"
    if point is not None:
        text += f" (held-out accuracy {point['accuracy']:.4f})"
    note = validation_note(curve.to_dict())
    return text + (f"; {note}" if note else "")


def _walk_grid(folds, grid, fit_and_score, refit_grid, method, fraction, seed, pool,
               widen, journal, shown):
    curve = ValidationCurve(method=method, folds=len(folds), fraction=fraction,
                            seed=int(seed), given=not widen)
    grid = [float(C) for C in grid]
    follows = refit_grid is not None and [float(c) for c in refit_grid] == grid
    best = None
    below = 0
    prefit = getattr(fit_and_score, "prefit", None)
    best_refit = {}             # C -> its best point of the refit walk
    indexed = [(k, train, validation) for k, (train, validation) in enumerate(folds)]

    def do_prefit(window):
        if journal is not None:          # recorded values are replayed, not fitted
            pending = journal.pending()
            window = [C for C in window if C not in pending]
        if not window:
            return
        if pool is None:
            prefit(indexed, window)              # every fold in one lockstep
        else:
            _each_fold([partial(prefit, [fold], window) for fold in indexed], pool)

    def visit(C):
        """Fit and score C on every fold (prefitted, or replayed from the
        journal); whether it improved on the best point."""
        nonlocal best
        started = time.perf_counter()
        refits = None if refit_grid is None else (list(grid) if follows
                                                  else list(refit_grid))
        stored = None if journal is None else journal.replay(C)
        improved = False
        points = []
        here = {"best": None, "walk": None, "below": 0}

        def score(point, in_walk):
            """Take a point; whether the refit walk of this C stops after it."""
            nonlocal best, improved
            points.append(point)
            if best is None or _better(point, best):
                best, improved = point, True
            if here["best"] is None or _better(point, here["best"]):
                here["best"] = point
            if not in_walk:
                return False
            if here["walk"] is None or _better(point, here["walk"]):
                here["walk"], here["below"] = point, 0
                return False
            here["below"] += 1
            return here["below"] >= PATIENCE

        if stored is not None:
            for point in stored:
                score(point, point.get("predictor") != "selection")
        else:
            per_fold = [iter(fit_and_score(k, train, validation, C, refits))
                        for k, train, validation in indexed]
            if refits is not None:       # FGM's own weights, outside the refit walk
                score(_mean_point(_advance(per_fold, pool), C, refit_C=None,
                                  predictor="selection"), False)
            labels = {} if refits is None else {"predictor": "refit"}
            for _ in range(1 if refits is None else len(refits)):
                records = _advance(per_fold, pool)
                if score(_mean_point(records, C, refit_C=records[0]["refit_C"],
                                     **labels), True):
                    break
            for fold in per_fold:        # let generators release their fits
                close = getattr(fold, "close", None)
                if close is not None:
                    close()
            seconds = time.perf_counter() - started
            for point in points:
                point["seconds"] = seconds / len(points)
        best_refit[float(C)] = here["walk"]
        curve.points.extend(points)
        if stored is None and journal is not None:
            journal.commit(C, points)
        shown.update(1, status=f"C {C:g}: held-out accuracy "
                     f"{here['best']['accuracy']:.4f}; best C {best['C']:g} "
                     f"({best['accuracy']:.4f})")
        return improved

    # upward, from the smallest value; past the largest while the best lies
    # there (at most WIDEN_STEPS more)
    fitted = 0                  # grid values prefitted in lockstep so far
    i = 0
    stopped = False
    while True:
        if i == len(grid):
            if not (widen and len(curve.widened) < WIDEN_STEPS
                    and best["C"] == grid[-1]):
                break
            grid.append(grid_step(grid, +1))
            curve.widened.append(grid[-1])
            shown.set_total(len(grid))
        C = grid[i]
        if prefit is not None and i >= fitted:
            window = grid[i:i + lockstep_window(best, below, len(grid) - i)]
            do_prefit(window)
            fitted = i + len(window)
        below = 0 if visit(C) else below + 1
        i += 1
        if below >= PATIENCE:
            stopped = True
            break
    # downward, past the smallest while the best lies there: each new value
    # must beat the best, or the best now lies inside
    down = 0
    while (widen and best["C"] == grid[0] and down < WIDEN_STEPS
           and len(curve.widened) < 2 * WIDEN_STEPS):
        C = grid_step(grid, -1)
        if not (C > 0) or C in grid:
            break
        grid.insert(0, C)
        curve.widened.append(C)
        shown.set_total(len(grid))
        down += 1
        if prefit is not None:
            do_prefit([C])
        if not visit(C):
            break
    if journal is not None:
        journal.finish()
    curve.grid = grid
    # in increasing C (stable: each C's points in the order scored), as
    # without a widening below; ``widened`` keeps the order tried
    curve.points.sort(key=lambda point: point["C"])
    if best["C"] == grid[0] and len(grid) > 1:
        curve.edge = "below"
    elif best["C"] == grid[-1] and not stopped and len(grid) > 1:
        curve.edge = "above"
    curve.C = best["C"]               # without a refit, refit_C stays None
    if refit_grid is not None:
        curve.predictor = best["predictor"]
        # the refit the model keeps (and, when FGM's weights predict, keeps
        # next to them): the best of the chosen C
        curve.refit_C = best_refit[best["C"]]["refit_C"]
    return curve
