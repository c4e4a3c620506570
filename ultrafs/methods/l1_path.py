"""Out-of-core ℓ1-logistic regression paths with safe screening (seed 004).

For a decreasing grid of λ, solve::

    min_{β, c}  (1/n) Σ_i log(1 + exp(−y_i (x_i'β + c)))  +  λ ||β||_1

(unpenalised intercept c; scikit-learn's ``C = 1/(n λ)``) on the columns
a screening rule keeps, with only those columns in memory, then certify
the result on **every** column with one streamed KKT pass:

1. screening (O(p) vector operations on the statistics of
   :func:`ultrafs.methods.slores.slores_statistics`): Slores, basic
   (reference λ_max, the paper's rule) or sequential (reference: the
   previous λ's solution, with the gap-based radius that is safe for an
   inexact solution; intersected with the basic rule's keep set, both
   being safe), the strong rule (unsafe heuristic), or none;
2. the kept columns not yet in memory are read from the store
   (:class:`~ultrafs.methods.column_cache.ColumnCache`: the union of the
   columns kept so far, nothing else);
3. :func:`ultrafs.solvers.l1_logistic.solve_l1_logistic` on the kept
   columns, warm-started from the previous λ, stopping on its KKT residual;
4. the KKT check (:class:`ultrafs.methods.l1_kkt.KKTCheck`): ``x̄_j'θ̂``
   for the columns a bound from their last computed correlation cannot
   certify (the others are certified unread); a discarded column with
   ``|x̄_j'θ̂| > nλ(1 + tol)`` violates the optimality conditions: it is
   added and the problem solved again, until none is left.  The columns
   read also get the products with the column that cuts the sequential
   rule's next region.

When the store's decoded arrays fit ``memory_budget``
(:mod:`ultrafs.methods.l1_resident`), the store is decoded once and every
pass, fetch and check runs on that copy.

Every model on the path therefore satisfies the KKT conditions on all p
features to the solver's tolerance, whatever the rule; the per-λ record
says how many violators the check found (``kkt_violations_found``: always
0 for a safe rule in exact arithmetic) and how many remain
(``kkt_violations_left``: 0 by construction).  Everything the path keeps
in memory beyond the kept columns is O(p) statistics vectors (and, within
its budget, the decoded copy).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.methods.column_cache import ColumnCache
from ultrafs.methods.l1_kkt import KKTCheck
from ultrafs.methods.l1_resident import DEFAULT_MEMORY_BUDGET, resident_store
from ultrafs.methods.l1_screen import next_cut, screen_keep
from ultrafs.methods.l1_weights import check_statistics_weights, solve_path_point
from ultrafs.methods.slores import dual_objective, labels_pm1, slores_statistics, theta_max
from ultrafs.progress import phase as progress_phase
from ultrafs.solvers.l1_logistic import solve_l1_logistic

__all__ = ["SCREENINGS", "L1Path", "lambda_grid", "log_lambda_grid", "fit_l1_path",
           "fit_l1_count", "l1_path_points",
           "DEFAULT_N_LAMBDAS", "DEFAULT_LAMBDA_MIN_RATIO",
           "DEFAULT_LAMBDA_MAX_RATIO", "DEFAULT_TOL", "DEFAULT_MEMORY_BUDGET"]

SCREENINGS = ("slores", "strong", "none")
#: the paper's grid: λ/λ_max = 0.95, 0.94, …, 0.10 (86 values)
DEFAULT_N_LAMBDAS = 86
DEFAULT_LAMBDA_MIN_RATIO = 0.1
DEFAULT_LAMBDA_MAX_RATIO = 0.95
#: relative KKT tolerance: |∇_j| <= λ (1 + tol) on zero weights, etc.
DEFAULT_TOL = 1e-6
#: rounds of "add the violators and solve again" before giving up
MAX_KKT_ROUNDS = 50
#: the count search (:func:`fit_l1_count`): midpoints solved at most, the
#: relative width of λ where the bisection stops, the factor by which λ may
#: fall in the extension without a new largest count before it stops, and
#: the smallest λ/λ_max it goes to
MAX_BISECTIONS = 30
BISECTION_RTOL = 1e-4
EXTENSION_PATIENCE = 10.0
#: glmnet's saturation: the extension stops once the model explains this
#: share of the null deviance (nearly separable data: a smaller λ inflates
#: the weights, it adds few columns)
DEVIANCE_SATURATION = 0.999
SMALLEST_RATIO = 1e-6


def log_lambda_grid(lambda_max, n_lambdas=DEFAULT_N_LAMBDAS,
                    min_ratio=DEFAULT_LAMBDA_MIN_RATIO,
                    max_ratio=DEFAULT_LAMBDA_MAX_RATIO) -> np.ndarray:
    """glmnet's log-spaced grid ``λ_max · geomspace(max_ratio, min_ratio, n)``.

    (glmnet: ``exp(seq(log(λ_max), log(lambda.min.ratio · λ_max),
    length = nlambda))``; here from ``max_ratio`` λ_max.)  Same checks as
    :func:`lambda_grid`.
    """
    lambda_grid(lambda_max, n_lambdas, min_ratio, max_ratio)     # the checks
    if n_lambdas == 1:
        return np.array([lambda_max * max_ratio])
    return lambda_max * np.geomspace(max_ratio, min_ratio, int(n_lambdas))


def lambda_grid(lambda_max, n_lambdas=DEFAULT_N_LAMBDAS,
                min_ratio=DEFAULT_LAMBDA_MIN_RATIO,
                max_ratio=DEFAULT_LAMBDA_MAX_RATIO) -> np.ndarray:
    """The paper's linear grid ``λ_max · linspace(max_ratio, min_ratio, n)``.

    With the defaults: λ/λ_max = 0.95, 0.94, …, 0.10.
    """
    if not (isinstance(n_lambdas, (int, np.integer)) and n_lambdas >= 1):
        raise ParameterError(f"n_lambdas must be a positive integer, got {n_lambdas!r}")
    if not 0.0 < min_ratio <= 1.0 or not 0.0 < max_ratio <= 1.0:
        raise ParameterError(
            f"λ/λ_max ratios must be in (0, 1], got {min_ratio!r} and {max_ratio!r}")
    if min_ratio > max_ratio:
        raise ParameterError(
            f"the smallest λ/λ_max ({min_ratio:g}) exceeds the largest ({max_ratio:g}) "
            "(lambda_min_ratio, lambda_max_ratio)")
    if n_lambdas == 1:
        return np.array([lambda_max * max_ratio])
    return lambda_max * np.linspace(max_ratio, min_ratio, int(n_lambdas))


@dataclass
class L1Path:
    """Result of :func:`fit_l1_path`.

    Attributes
    ----------
    lambdas : float64 array
        The λ solved, decreasing.
    lambda_max : float
    records : list of dict
        One per λ: ``lambda``, ``ratio`` (λ/λ_max), ``C`` (scikit-learn's
        1/(nλ)), ``nnz``, ``objective``, ``kkt`` (largest relative KKT
        residual over all columns after the check), ``kept`` (columns the
        rule kept), ``rejection_ratio`` (see below), ``kkt_violations_found``,
        ``kkt_violations_left``, ``solves``, ``seconds_screening``,
        ``seconds_fetch``, ``seconds_solving``, ``seconds_kkt``,
        ``cached_columns``.  ``kept`` is the rule's keep set before the KKT
        check; ``rejection_ratio`` is the share of the certified model's
        zero weights that the rule discarded (<= 1 for any rule; an unsafe
        rule's wrong discards are counted in ``kkt_violations_found``).
    columns : list of int64 arrays
        Per λ, the store columns with a nonzero weight (increasing).
    coefs : list of float64 arrays
        Per λ, their weights.
    intercepts : list of float
    screening : str
    sequential : bool
    statistics_seconds : float
    n_features, n_samples : int
    """

    lambdas: np.ndarray
    lambda_max: float
    records: list = field(default_factory=list)
    columns: list = field(default_factory=list)
    coefs: list = field(default_factory=list)
    intercepts: list = field(default_factory=list)
    screening: str = "slores"
    sequential: bool = True
    statistics_seconds: float = 0.0
    n_features: int = 0
    n_samples: int = 0

    #: the count search (:func:`fit_l1_count`): the model's index and why it stopped
    index: int = -1
    stop_reason: str = ""

    def add(self, record, columns, coef, intercept):
        """Append one λ's model."""
        self.records.append(record)
        self.columns.append(columns)
        self.coefs.append(coef)
        self.intercepts.append(intercept)

    def first_with(self, k) -> int:
        """Index of the first λ with at least ``k`` nonzero weights (-1: none)."""
        for index, record in enumerate(self.records):
            if record["nnz"] >= k:
                return index
        return -1


class _Cache:
    """The kept columns in memory: a ColumnCache plus store column -> position."""

    def __init__(self, store):
        self.store = store
        self.cache = ColumnCache(store.n_samples, store.dtype)
        self.position = np.full(store.n_features, -1, dtype=np.int64)
        self.coef = np.zeros(0)
        self._arrays = None

    def ensure(self, columns):
        missing = columns[self.position[columns] < 0]
        if missing.size:
            block = self.store.read_columns(missing)
            first = self.cache.n_columns
            self.cache.append_batch(block)
            self.position[missing] = np.arange(first, first + missing.size)
            self.coef = np.concatenate([self.coef, np.zeros(missing.size)])
            self._arrays = None
        return self.position[columns]

    def arrays(self):
        if self._arrays is None:
            self._arrays = (self.cache.indptr, self.cache.indices, self.cache.data)
        return self._arrays

    def dense_column(self, position):
        indptr, indices, data = self.arrays()
        lo, hi = indptr[position], indptr[position + 1]
        return indices[lo:hi], np.asarray(data[lo:hi], dtype=np.float64)


def _check_options(screening, tol, max_iter):
    if screening not in SCREENINGS:
        raise ParameterError(f"screening must be one of {', '.join(SCREENINGS)}, "
                             f"got {screening!r}")
    if not (isinstance(tol, (float, int)) and 0.0 < tol < 1.0):
        raise ParameterError(f"tol must be in (0, 1), got {tol!r}")
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
        raise ParameterError(f"max_iter must be a positive integer, got {max_iter!r}")


def fit_l1_path(store, y=None, *, lambdas=None, n_lambdas=DEFAULT_N_LAMBDAS,
                lambda_min_ratio=DEFAULT_LAMBDA_MIN_RATIO,
                lambda_max_ratio=DEFAULT_LAMBDA_MAX_RATIO, screening="slores",
                sequential=True, tol=DEFAULT_TOL, max_iter=500, stop_at_nnz=None,
                block_size=None, scheduler=None, num_workers=None,
                statistics=None, callback=None,
                memory_budget=DEFAULT_MEMORY_BUDGET, sample_weight=None) -> L1Path:
    """The ℓ1-logistic regression path of a store, screened and certified.

    Parameters
    ----------
    store : ColumnStore
    y : array of ±1, optional
        Labels (default: the store's).
    lambdas : array-like, optional
        The λ to solve (solved in decreasing order); default
        :func:`lambda_grid` with ``n_lambdas``, ``lambda_min_ratio``,
        ``lambda_max_ratio``.
    screening : {"slores", "strong", "none"}
    sequential : bool
        Reference point of the rule: the previous λ's solution (True) or
        λ_max (False: the paper's basic rule).
    tol : float
        Relative KKT tolerance of every model (solver and check).
    max_iter : int
        Outer iterations of the solver per solve.
    stop_at_nnz : int, optional
        Stop after the first λ whose model has at least this many nonzero
        weights.
    block_size, scheduler, num_workers
        As for the scoring passes (the statistics and KKT passes).
    statistics : SloresStatistics, optional
        Reuse statistics computed before (same store and labels).
    callback : callable, optional
        ``callback(record)`` after every λ.
    memory_budget : int or None
        Bytes the store's decoded copy may take in memory
        (:mod:`ultrafs.methods.l1_resident`, default 1 GiB): within it, the
        store is decoded once and every pass, fetch and KKT check runs on
        the copy; None or 0 keeps the path out of core.  Same results
        either way.
    sample_weight : array of shape (n,), optional
        The weighted problem ``(1/n) Σ_i w_i log(1 + exp(−y_i f_i)) + λ
        ||β||_1`` (:mod:`ultrafs.methods.l1_weights`; ``C = 1/(nλ)`` as
        FGM's); with ``statistics``, theirs are used.

    Returns
    -------
    L1Path
    """
    # the phase opens before the statistics pass: progress from the start
    shown = progress_phase("ℓ1 path", total=_steps(
        n_lambdas if lambdas is None else np.size(lambdas)), unit="λ")
    shown.set_status("statistics of every column")
    with _closed_on_error(shown):
        y, run, resident, source, stats = _setup(
            store, y, screening, tol, max_iter, statistics, memory_budget,
            dict(block_size=block_size, scheduler=scheduler, num_workers=num_workers),
            need_lambda_max=lambdas is None, sample_weight=sample_weight)
        lam_max = stats.lambda_max
        if lambdas is None:
            grid = lambda_grid(lam_max, n_lambdas, lambda_min_ratio, lambda_max_ratio)
        else:
            grid = np.sort(np.asarray(lambdas, dtype=np.float64).ravel())[::-1]
            if grid.size == 0 or not np.all(np.isfinite(grid)) or grid[-1] <= 0:
                raise ParameterError("lambdas must be finite and positive")
    n, p = store.n_samples, store.n_features
    path = L1Path(lambdas=grid, lambda_max=lam_max, screening=screening,
                  sequential=bool(sequential), statistics_seconds=stats.seconds,
                  n_features=p, n_samples=n)
    solver = _PathSolver(store, resident, source, y, stats, screening, sequential,
                         tol, max_iter, run)
    with shown:
        for lam in grid:
            point = solver.step(float(lam))
            path.add(*point)
            if callback is not None:
                callback(point[0])
            shown.update(1, status=f"λ/λ_max {point[0]['ratio']:.4g}: "
                                   f"{point[0]['nnz']:,} nonzero")
            if stop_at_nnz is not None and point[0]["nnz"] >= stop_at_nnz:
                path.lambdas = grid[:len(path.records)]
                break
    return path


def l1_path_points(store, y, lambdas, *, screening="slores", sequential=True,
                   tol=DEFAULT_TOL, max_iter=500, block_size=None, scheduler=None,
                   num_workers=None, memory_budget=DEFAULT_MEMORY_BUDGET):
    """The points of :func:`fit_l1_path` at ``lambdas`` (in order), one
    ``(record, columns, coef, intercept)`` per ``next()``, the same solves, so
    that paths advance side by side (:mod:`ultrafs.methods.path_cv`); ``y``:
    ±1, shape (n_samples,); λ >= the store's λ_max: the intercept alone."""
    grid = np.asarray(lambdas, dtype=np.float64).ravel()
    if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
        raise ParameterError("lambdas must be finite and positive")
    y, run, resident, source, stats = _setup(
        store, y, screening, tol, max_iter, None, memory_budget,
        dict(block_size=block_size, scheduler=scheduler, num_workers=num_workers),
        need_lambda_max=False)
    solver = _PathSolver(store, resident, source, y, stats, screening, sequential,
                         tol, max_iter, run)
    for lam in grid:
        yield solver.step(float(lam))


def _steps(count):
    """A phase's total: ``count`` when a positive integer (checked later), else None."""
    return int(count) if isinstance(count, (int, np.integer)) and count > 0 else None


@contextlib.contextmanager
def _closed_on_error(shown):
    """Close a progress phase when the block raises (the error ends the run)."""
    try:
        yield
    except BaseException:
        shown.close()
        raise


def _setup(store, y, screening, tol, max_iter, statistics, memory_budget, run,
           need_lambda_max=True, sample_weight=None):
    """Checked options, ±1 labels, the decoded copy (or None), the source of
    the columns and the statistics, shared by the path and the count search."""
    _check_options(screening, tol, max_iter)
    y = labels_pm1(store.read_labels() if y is None else y)
    resident = resident_store(store, y, memory_budget)
    source = store if resident is None else resident
    if statistics is not None:
        check_statistics_weights(statistics, sample_weight, y)
    stats = statistics if statistics is not None else slores_statistics(
        source, y, sample_weight=sample_weight, **run)
    if stats.lambda_max == 0.0 and need_lambda_max:
        raise ParameterError(
            "every column is constant: λ_max = 0 and the model is the intercept "
            "alone at every λ")
    return y, run, resident, source, stats


def fit_l1_count(store, y=None, *, n_nonzero, n_lambdas=DEFAULT_N_LAMBDAS,
                 lambda_min_ratio=DEFAULT_LAMBDA_MIN_RATIO,
                 lambda_max_ratio=DEFAULT_LAMBDA_MAX_RATIO, screening="slores",
                 sequential=True, tol=DEFAULT_TOL, max_iter=500,
                 block_size=None, scheduler=None, num_workers=None,
                 statistics=None, callback=None,
                 memory_budget=DEFAULT_MEMORY_BUDGET,
                 max_bisections=MAX_BISECTIONS, bisection_rtol=BISECTION_RTOL,
                 patience=EXTENSION_PATIENCE,
                 smallest_ratio=SMALLEST_RATIO, sample_weight=None) -> L1Path:
    """The model of the ℓ1-logistic path with the most nonzero weights, at most
    ``n_nonzero``: a log-spaced path, extended and bisected as needed.

    The search, every point solved, screened and certified as on
    :func:`fit_l1_path`:

    1. **grid**: ``log_lambda_grid(λ_max, n_lambdas, lambda_min_ratio,
       lambda_max_ratio)`` (log-spaced, as glmnet's), in decreasing order,
       until a model has at least ``n_nonzero`` nonzero weights;
    2. **extension**: when the grid's smallest λ has fewer, the path goes
       on below it by the grid's own ratio ``q`` (λ ← q λ; ``q`` =
       ``(lambda_min_ratio/lambda_max_ratio)^(1/(n_lambdas−1))``) until a
       model has at least ``n_nonzero``, or the count cannot grow: every
       non-constant column is nonzero (the full support), the model
       explains ``DEVIANCE_SATURATION`` (0.999) of the null deviance
       (glmnet's rule: nearly separable data, where a smaller λ inflates
       the weights more than it adds columns), the largest count has not
       grown while λ fell by the factor ``patience``, or λ/λ_max falls
       below ``smallest_ratio``;
    3. **bisection**: when a step overshoots (more than ``n_nonzero``
       nonzeros at λ_hi, fewer at the λ_lo before it), λ is bisected in
       log scale, ``sqrt(λ_lo λ_hi)``, each midpoint solved from λ_lo's
       state (warm start and the rule's reference: a path that went from
       λ_lo straight to it), the bracket kept around ``n_nonzero``, until a
       model has exactly ``n_nonzero``, or ``λ_lo/λ_hi ≤ 1 + bisection_rtol``
       (several columns enter within that relative step of λ: no λ the
       search can tell apart gives exactly ``n_nonzero``), or after
       ``max_bisections`` midpoints.

    **The model returned** (``path.index``) is, among every point solved,
    the one with the largest nonzero count ``≤ n_nonzero``; among several
    with that count, the one with the largest λ.  It has exactly
    ``n_nonzero`` nonzero weights when a λ solved gives that count, fewer
    otherwise (the stop says why); never more.

    Parameters
    ----------
    store : ColumnStore
    y : array of ±1, optional
        Labels (default: the store's).
    n_nonzero : int
        The count wanted, ``1 <= n_nonzero <= store.n_features`` (larger is
        refused in one line).
    n_lambdas, lambda_min_ratio, lambda_max_ratio
        The log-spaced grid of step 1 (and its ratio, the extension's step).
    max_bisections : int
        Midpoints solved at most (step 3).
    bisection_rtol : float
        The relative width of λ at which the bisection stops.
    patience : float
        The factor by which λ may fall in the extension without a new
        largest count before the search stops.
    smallest_ratio : float
        λ/λ_max below which the extension stops.
    screening, sequential, tol, max_iter, block_size, scheduler, num_workers, \
statistics, callback, memory_budget, sample_weight
        As for :func:`fit_l1_path` (``callback(record)`` after every point
        solved, in the order solved).

    Returns
    -------
    L1Path
        Every point solved, in decreasing λ; each record also has
        ``extension`` and ``bisection`` (True: solved in step 2, or 3; both
        False: a point of the grid) and ``deviance_explained`` (1 − loss /
        the intercept-only loss).  ``index`` is the
        model's position, ``stop_reason`` one line on why the search stopped.
    """
    p = store.n_features
    if not (isinstance(n_nonzero, (int, np.integer)) and 1 <= n_nonzero):
        raise ParameterError(f"the count must be a positive integer, got {n_nonzero!r}")
    if n_nonzero > p:
        raise ParameterError(f"{n_nonzero} nonzero weights asked for, but the data has "
                             f"{p} columns")
    k = int(n_nonzero)
    shown = progress_phase(f"ℓ1 path to {k} nonzero", total=_steps(n_lambdas), unit="λ")
    shown.set_status("statistics of every column")
    with _closed_on_error(shown):
        y, run, resident, source, stats = _setup(
            store, y, screening, tol, max_iter, statistics, memory_budget,
            dict(block_size=block_size, scheduler=scheduler, num_workers=num_workers),
            sample_weight=sample_weight)
    lam_max = stats.lambda_max
    grid = log_lambda_grid(lam_max, n_lambdas, lambda_min_ratio, lambda_max_ratio)
    step_ratio = (lambda_min_ratio / lambda_max_ratio) ** (1.0 / (n_lambdas - 1)) \
        if n_lambdas > 1 and lambda_min_ratio < lambda_max_ratio \
        else (DEFAULT_LAMBDA_MIN_RATIO / DEFAULT_LAMBDA_MAX_RATIO) ** (
            1.0 / (DEFAULT_N_LAMBDAS - 1))
    reachable = p - int(np.count_nonzero(stats.constant))
    n, n_pos, n_neg = store.n_samples, stats.total_pos, stats.total_neg
    total = n_pos + n_neg       # n (S with weights)
    null_loss = -(n_pos * np.log(n_pos / total) + n_neg * np.log(n_neg / total)) / n
    solver = _PathSolver(store, resident, source, y, stats, screening, sequential,
                         tol, max_iter, run)
    points = []

    def solve(lam, phase):
        record, columns, coef, intercept = solver.step(float(lam))
        loss = record["objective"] - record["lambda"] * float(np.abs(coef).sum())
        record = dict(record, extension=phase == "extension",
                      bisection=phase == "bisection",
                      deviance_explained=1.0 - loss / null_loss)
        points.append((record, columns, coef, intercept))
        if callback is not None:
            callback(record)
        if phase != "grid" and shown.total is not None:
            shown.set_total(None)       # beyond the grid: steps no longer counted
        best = max((r["nnz"] for r, *_ in points if r["nnz"] <= k), default=0)
        shown.update(1, status=f"{phase} λ/λ_max {record['ratio']:.4g}: "
                               f"{record['nnz']:,} nonzero (best so far {best:,})")
        return record["nnz"]

    lo_lam, lo_state, hi_lam = lam_max, solver.snapshot(), None
    stop = None
    # 1. the grid, then 2. the extension below it
    best_count, growth_lam = -1, lam_max
    lam, phase, index = float(grid[0]), "grid", 0
    while True:
        count = solve(lam, phase)
        if count > k:
            hi_lam = lam
            break
        lo_lam, lo_state = lam, solver.snapshot()
        if count == k:
            stop = f"{k} nonzero weights at λ/λ_max = {lam / lam_max:.6g}"
            break
        if count >= reachable:
            stop = (f"the full support: all {reachable} non-constant columns are "
                    f"nonzero at λ/λ_max = {lam / lam_max:.6g}, fewer than the {k} "
                    "asked for")
            break
        if count > best_count:
            best_count, growth_lam = count, lam
        index += 1
        if index < grid.size:
            lam = float(grid[index])
            continue
        if phase == "extension" and growth_lam >= patience * lam:
            stop = (f"the nonzero count stopped growing: at most {best_count} while λ "
                    f"fell by {growth_lam / lam:.3g}×, down to λ/λ_max = "
                    f"{lam / lam_max:.6g}")
            break
        deviance = points[-1][0]["deviance_explained"]
        if phase == "extension" and deviance >= DEVIANCE_SATURATION:
            stop = (f"the model explains {deviance:.4f} of the null deviance at λ/λ_max "
                    f"= {lam / lam_max:.6g} (saturated, as glmnet stops) with at most "
                    f"{best_count} nonzero weights")
            break
        if lam * step_ratio < smallest_ratio * lam_max:
            stop = (f"λ/λ_max reached {lam / lam_max:.3g} (the search's floor "
                    f"{smallest_ratio:g}) with {count} nonzero weights")
            break
        lam, phase = lam * step_ratio, "extension"
    # 3. bisection in log λ between lo_lam (count < k) and hi_lam (count > k)
    if hi_lam is not None:
        for _ in range(max_bisections):
            if lo_lam <= hi_lam * (1.0 + bisection_rtol):
                break
            mid = float(np.sqrt(lo_lam * hi_lam))
            solver.restore(lo_state)
            count = solve(mid, "bisection")
            if count > k:
                hi_lam = mid
                continue
            lo_lam, lo_state = mid, solver.snapshot()
            if count == k:
                break
    shown.close()
    order = sorted(range(len(points)), key=lambda i: -points[i][0]["lambda"])
    path = L1Path(lambdas=np.array([points[i][0]["lambda"] for i in order]),
                  lambda_max=lam_max, screening=screening,
                  sequential=bool(sequential), statistics_seconds=stats.seconds,
                  n_features=p, n_samples=store.n_samples)
    for i in order:
        path.add(*points[i])
    best = max(r["nnz"] for r in path.records if r["nnz"] <= k)
    path.index = next(i for i, r in enumerate(path.records) if r["nnz"] == best)
    if stop is None:        # the bisection's end
        ratio = path.records[path.index]["ratio"]
        stop = (f"{k} nonzero weights at λ/λ_max = {ratio:.6g}" if best == k else
                f"no λ solved gives exactly {k} nonzero weights: {best} at λ/λ_max "
                f"= {ratio:.6g}, more than {k} at {hi_lam / lam_max:.6g} (bracket "
                f"{lo_lam / lam_max:.6g} .. {hi_lam / lam_max:.6g})")
    path.stop_reason = stop
    return path


class _PathSolver:
    """The warm-started, screened and certified solve at one λ after another.

    Holds what passes from one λ to the next: the kept columns in memory
    (:class:`_Cache`, with the warm-start weights), the KKT check's
    correlations and references, and the previous λ's solution that the
    sequential rule takes as its reference.  :meth:`snapshot` and
    :meth:`restore` let a caller go back to an earlier λ and solve at a
    smaller one from there (the count search's bisection): the rule's
    reference is then that earlier λ, as on a path that went from it
    straight to the new λ.
    """

    def __init__(self, store, resident, source, y, stats, screening, sequential,
                 tol, max_iter, run):
        n = store.n_samples
        self.y, self.stats, self.n, self.p = y, stats, n, store.n_features
        self.screening, self.sequential = screening, sequential
        self.tol, self.max_iter = tol, max_iter
        self.cache = _Cache(source)
        self.checker = None
        self.w = stats.sample_weight
        # the solve at one λ: with weights, in the path's scale
        self.solve = (solve_l1_logistic if self.w is None
                      else partial(solve_path_point, sample_weight=self.w))
        if screening != "none":
            self.checker = KKTCheck(stats, y, theta_max(y, self.w), store, resident, run,
                                    sample_weight=self.w)
        self.intercept = float(np.log(stats.total_pos / stats.total_neg))
        self.intercept0 = self.intercept
        self.prev = {"lam": stats.lambda_max, "s": stats.s_max, "stale": None,
                     "upper": None, "decision": np.full(n, self.intercept),
                     "coef_l1": 0.0, "cut": None}
        self.with_cut = sequential and screening == "slores"

    def step(self, lam):
        """Solve at ``lam`` (below the last λ solved, or below the λ of the
        snapshot restored): ``(record, columns, coef, intercept)``."""
        stats, y, n, p = self.stats, self.y, self.n, self.p
        lam_max = stats.lambda_max
        cache, checker, tol = self.cache, self.checker, self.tol
        if lam >= lam_max:
            record = _null_record(lam, lam_max, n,
                                  dual_objective(theta_max(y, self.w), self.w),
                                  self.intercept0)
            return record, np.zeros(0, dtype=np.int64), np.zeros(0), self.intercept0
        # columns the screening reads again (stale ones it kept) count here
        read_before = checker.columns_read if checker is not None else 0
        full_before = checker.full_passes if checker is not None else 0
        started = time.perf_counter()
        keep = screen_keep(self.screening, self.sequential, stats, lam, y, self.prev)
        first_keep = keep.copy()
        kept = int(keep.sum())
        seconds_screening = time.perf_counter() - started
        found = solves = 0
        seconds = {"fetch": 0.0, "solve": 0.0, "kkt": 0.0}
        warm_intercept = self.intercept
        cut = None
        for _ in range(MAX_KKT_ROUNDS):
            columns = np.flatnonzero(keep)
            t0 = time.perf_counter()
            positions = cache.ensure(columns)
            t1 = time.perf_counter()
            indptr, indices, data = cache.arrays()
            result = self.solve(indptr, indices, data, y, lam, n_rows=n,
                                columns=positions, coef0=cache.coef[positions],
                                intercept0=warm_intercept, tol=tol,
                                max_iter=self.max_iter)
            t2 = time.perf_counter()
            solves += 1
            seconds["fetch"] += t1 - t0
            seconds["solve"] += t2 - t1
            cache.coef[:] = 0.0
            cache.coef[positions] = result.coef
            warm_intercept = result.intercept
            if checker is None:
                violators = np.zeros(0, dtype=np.int64)
                break
            cut_weights, cut = (next_cut(cache, columns, positions, result.coef, n, self.w)
                                if self.with_cut else (None, None))
            violators, outside = checker.check(
                result.theta, keep, columns, positions, cache.arrays(),
                n * lam * (1.0 + tol), cut_weights)
            seconds["kkt"] += time.perf_counter() - t2
            if violators.size == 0:
                break
            found += int(violators.size)
            keep[violators] = True
        else:
            raise ParameterError(
                f"the KKT check still finds {violators.size} violators at λ = "
                f"{lam:.6g} after {MAX_KKT_ROUNDS} solves")
        nonzero = np.flatnonzero(result.coef)
        nz_columns = columns[nonzero]
        order = np.argsort(nz_columns, kind="stable")
        zero_total = p - nonzero.size
        # the rule's discards that the certified model confirms (zero weight);
        # an unsafe rule's wrong discards are the violators found instead
        discarded = p - kept - int(np.count_nonzero(~first_keep[nz_columns]))
        residual = result.kkt / lam
        if checker is not None:     # the discarded columns: (|x̄_j'θ̂|/n − λ)_+ / λ
            residual = max(residual, (outside / n - lam) / lam, 0.0)
        record = {
            "lambda": lam, "ratio": lam / lam_max, "C": 1.0 / (n * lam),
            "nnz": int(nonzero.size), "objective": float(result.objective),
            "intercept": float(result.intercept), "kkt": float(residual),
            "converged": bool(result.converged), "kept": kept,
            "rejection_ratio": (discarded / zero_total) if zero_total else None,
            "kkt_violations_found": found, "kkt_violations_left": 0,
            "solves": solves, "seconds_screening": seconds_screening,
            "seconds_fetch": seconds["fetch"], "seconds_solving": seconds["solve"],
            "seconds_kkt": seconds["kkt"], "cached_columns": cache.cache.n_columns,
            "solver_iterations": int(result.n_iter),
            "kkt_columns_read": (checker.columns_read - read_before
                                 if checker is not None else 0),
            "kkt_full_passes": (checker.full_passes - full_before
                                if checker is not None else 0),
        }
        self.intercept = float(result.intercept)
        s_now, stale, largest = (checker.screening_inputs() if checker is not None
                                 else (None, None, None))
        self.prev = {"lam": lam, "s": s_now, "stale": stale,
                     "upper": checker.upper_correlations if stale is not None else None,
                     "refresh": checker.refresh if stale is not None else None,
                     "decision": result.decision,
                     "coef_l1": float(np.abs(result.coef).sum()),
                     "cut": None if cut is None else dict(cut, cut=checker.cut),
                     "s_largest": largest}
        return (record, nz_columns[order].astype(np.int64),
                np.asarray(result.coef[nonzero][order], dtype=np.float64),
                float(result.intercept))

    def snapshot(self) -> dict:
        """The state after the last λ solved: O(p) vectors and the check's
        reference points (at most ``MAX_REFERENCES`` vectors of length n)."""
        state = {"prev": dict(self.prev), "intercept": self.intercept,
                 "coef": self.cache.coef.copy()}
        checker = self.checker
        if checker is not None:
            state["checker"] = {
                "arrays": {name: getattr(checker, name).copy()
                           for name in _CHECKER_ARRAYS},
                "points": list(checker.points), "reach": checker.reach,
                "reach_values": checker.reach.copy(), "current": checker.current,
                "largest": checker.largest, "last_read": checker.last_read,
                "weights": (checker._weights, checker._cut_weights)}
        return state

    def restore(self, state):
        """Go back to a :meth:`snapshot`: the next :meth:`step` screens with
        that λ's solution as the reference and starts from its weights (the
        columns read since stay in memory; the check's totals keep counting)."""
        self.prev = dict(state["prev"])
        self.intercept = state["intercept"]
        coef = state["coef"]
        self.cache.coef[:] = 0.0
        self.cache.coef[:coef.size] = coef
        saved = state.get("checker")
        if saved is not None:
            checker = self.checker
            # in place: the saved rule inputs are these very arrays
            for name, values in saved["arrays"].items():
                getattr(checker, name)[:] = values
            checker.points = list(saved["points"])
            checker.reach = saved["reach"]
            checker.reach[:] = saved["reach_values"]
            checker.current = saved["current"]
            checker.largest = saved["largest"]
            checker.last_read = saved["last_read"]
            checker._weights, checker._cut_weights = saved["weights"]


#: the KKT check's arrays a snapshot copies (and a restore writes back in place)
_CHECKER_ARRAYS = ("s", "cut", "ref_id", "counts")


def _null_record(lam, lam_max, n, objective, intercept):
    """λ >= λ_max: β* = 0 and c* = log(n⁺/n⁻) (Theorem 9.1), no solve."""
    return {"lambda": lam, "ratio": lam / lam_max, "C": 1.0 / (n * lam), "nnz": 0,
            "objective": float(objective), "intercept": float(intercept), "kkt": 0.0,
            "converged": True, "kept": 0, "rejection_ratio": 1.0,
            "kkt_violations_found": 0, "kkt_violations_left": 0, "solves": 0,
            "seconds_screening": 0.0, "seconds_fetch": 0.0, "seconds_solving": 0.0,
            "seconds_kkt": 0.0, "cached_columns": 0, "solver_iterations": 0}
