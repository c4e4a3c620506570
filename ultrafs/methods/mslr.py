"""Minimax sparse logistic regression (seed 000, Algorithm 1: the cutting plane).

Tan, Tsang & Wang (TNNLS 2013) relax ℓ0-constrained logistic regression
(no bias) to ``min_{d ∈ D} max_{α ∈ (0,C)^n} −f(α, d)`` with
``D = {d ∈ [0,1]^m : Σ d_j ≤ r}`` and solve it by a cutting plane:

1. the worst-case analysis (eq. 8): ``c = Σ_i α_i y_i x_i`` over every
   candidate in one streamed pass (:func:`~ultrafs.scoring.worst_case.
   worst_case_analysis`, the pass FGM uses), and the constraint
   ``S_t`` = the r candidates with the largest ``c_j²`` (ties by key);
   features already in earlier constraints may return (the paper's "at
   most r" new features per iteration);
2. the reduced minimax over the constraints found so far (eq. 10), warm
   started at the current α, by exponential smoothing and coordinate
   descent (:mod:`ultrafs.solvers.smoothing_cd`: Algorithms 2 and 3,
   stopped on a duality-gap certificate).

Only the columns of the constraints are held (:class:`~ultrafs.methods.
column_cache.ColumnCache`, as FGM).  The loop stops (the paper says only
"until convergence"; the digest's rules) when the new top-r set equals an
earlier constraint, when its violation ``½ Σ_{S_new} c_j² − max_t ½ Σ_{S_t} c_j²``
is at most ``tol · |max_t f̃_t(α)|``, when no candidate has a nonzero
score, or after ``max_iter`` (T_m) iterations.

The model: ``μ_t`` are the smoothing weights of the constraints at the
final q, ``d = Σ_t μ_t 1_{S_t}`` and the classifier ``v = d ⊙ c(α)`` (no
bias).  The selected features are the union of the constraints (at most
``r · T_m``, the paper's count); the paper then retrains ℓ2-regularised
LR on them (:func:`retrain`), which predicts.

MSLR's model is FGM's logistic model without a bias (digest A7): with
exact subproblems both select the same sets, and the reduced problem's
optimum is FGM's subproblem optimum on the same constraints
(``tests/test_mslr.py`` checks it against FGM's APG).

Sample weights ``s`` (``fit_mslr(sample_weight=...)``) weight each
sample's loss, ``C Σ_i s_i log(1 + exp(−y_i x_i'v))``: the dual box of
sample i is ``(0, C s_i)`` (:mod:`ultrafs.solvers.smoothing_cd`), its start
``s_i min(1, C/2)`` (what ``s_i`` copies of the sample start at together),
so the worst-case scores ``Σ_i α_i y_i x_i`` carry the weights; a weight of
0 is a dropped sample.  The retraining is weighted the same way.

K >= 3 classes (``fit_mslr(n_classes=K)``): one-vs-rest with one shared
support.  Class k's binary problem has the ±1 codes ``y^k`` (+1 on class
k's rows) and its own dual ``α^k``; the constraints, and so ``d``, are
shared: ``min_{d ∈ D} max_{α^1..α^K} Σ_k −f(α^k, d)``.  A feature's
worst-case score is ``Σ_k c_j(α^k)²`` (the multi-class pass FGM uses), and
the reduced problem is the binary one on the block-diagonal stack of the K
problems (rows ``(k, i)``, columns ``(k, j)``, constraint ``S_t`` holding
``(k, j)`` for every k): the same solver and certificate.  The classifier
``v`` has one column per class (decision ``argmax_k x'v_k``); the
retraining is multinomial ℓ2-LR on the selected columns.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.methods.column_cache import ColumnCache
from ultrafs.rss import peak_rss_mb
from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.solvers.datafits import check_sample_weight
from ultrafs.solvers.smoothing_cd import (BETA, Q0, ConstraintHull, LogisticRows,
                                          MinimaxProblem, solve_minimax)

__all__ = ["MSLRResult", "fit_mslr", "validate_mslr_params", "retrain", "check_retrain_C",
           "DEFAULT_RETRAIN_C", "RETRAIN_VALIDATION_FRACTION"]

#: C of the ℓ2-LR retraining (the paper's value for its synthetic study)
DEFAULT_RETRAIN_C = 5.0
#: rows held out (stratified, seeded) when the retraining's C is "auto"
RETRAIN_VALIDATION_FRACTION = 0.2

logger = logging.getLogger("ultrafs")


@dataclass
class MSLRResult:
    """What the MSLR cutting plane produced.

    Attributes
    ----------
    keys : int64 array, shape (p,)
        Feature-space keys of the union of the constraints, in order of
        first selection.
    batch_ptr : int64 array, shape (t + 1,)
        The keys first selected at iteration h are
        ``keys[batch_ptr[h]:batch_ptr[h+1]]``.
    constraints : list of int64 arrays
        ``S_t`` as positions into ``keys`` (ranked by score).
    mu : float64 array, shape (T,)
        Weights of the constraints (sum 1).
    d : float64 array, shape (p,)
        ``Σ_t μ_t 1_{S_t}``, aligned with ``keys``.
    coef : float64 array, shape (p,)
        MSLR's classifier ``v = d ⊙ c(α)`` (decision ``X[:, keys] @ coef``).
    alpha : float64 array, shape (n,)
        The final dual point.
    history : list of dict
    stop_reason : str
    block : ColumnBlock or None
        The columns of ``keys`` (CSC, from the cache), for the retraining.
    """

    keys: np.ndarray
    batch_ptr: np.ndarray
    constraints: list
    mu: np.ndarray
    d: np.ndarray
    coef: np.ndarray
    alpha: np.ndarray
    history: list = field(default_factory=list)
    stop_reason: str = ""
    block: object = None

    def active(self, threshold=1e-6):
        """Bool mask over ``keys``: in some constraint with ``μ_t > threshold``."""
        mask = np.zeros(len(self.keys), dtype=bool)
        for t, members in enumerate(self.constraints):
            if self.mu[t] > threshold:
                mask[members] = True
        return mask


def validate_mslr_params(B, C, max_iter, tol, subproblem_tol):
    """Check MSLR's parameters; one-line :class:`ParameterError` if invalid."""
    if isinstance(B, bool) or not isinstance(B, (int, np.integer)) or B < 1:
        raise ParameterError(f"B (r) must be an integer >= 1, got {B!r}")
    if isinstance(C, bool) or not isinstance(C, (int, float, np.integer, np.floating)) \
            or not np.isfinite(C) or C <= 0:
        raise ParameterError(f"C must be a finite number > 0, got {C!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) \
            or max_iter < 1:
        raise ParameterError(f"max_iter (T_m) must be an integer >= 1, got {max_iter!r}")
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
        raise ParameterError(f"tol must be >= 0, got {tol!r}")
    if not (isinstance(subproblem_tol, (int, float)) and np.isfinite(subproblem_tol)
            and subproblem_tol > 0):
        raise ParameterError(f"subproblem_tol must be > 0, got {subproblem_tol!r}")


def fit_mslr(features, y, *, B=10, C=10.0, max_iter=10, tol=1e-3, subproblem_tol=1e-4,
             q0=Q0, beta=BETA, max_sweeps=20000, block_size=None, scheduler=None,
             num_workers=None, callback=None, progress=False, seed=0, sample_weight=None,
             n_classes=None):
    """Run MSLR's cutting plane on a feature space.

    Parameters
    ----------
    features : feature space
        Candidates (linear or degree-2; one column per key).
    y : array, shape (n_samples,)
        Labels in {-1, +1}, or class indices ``0..K-1`` with ``n_classes``.
    B : int
        r: the features of each constraint (the top-r of ``c_j²``).
    C : float
        The loss weight (the paper's 10); > 0.
    max_iter : int
        T_m: outer iterations at most (the paper's 10).
    tol : float
        ε of the violation test; 0 disables it.
    subproblem_tol : float
        Relative duality gap that certifies each reduced problem.
    q0, beta : float
        The smoothing schedule (the paper's 0.01 and 5/3).
    max_sweeps : int
        Coordinate-descent sweeps at most per reduced problem.
    block_size, scheduler, num_workers, progress
        Of the worst-case analysis (as FGM's).
    callback : callable, optional
        Called with each history record.
    seed : int
        Seed of the sweeps' row orders.
    sample_weight : array-like of shape (n_samples,), optional
        Per-sample weights ``s_i >= 0`` of the loss (see the module
        docstring); None: all 1.
    n_classes : int, optional
        K >= 3: ``y`` holds class indices, fitted one-vs-rest with one
        shared support (the module docstring); ``coef`` then has shape
        (p, K) and ``alpha`` (n, K).

    Returns
    -------
    MSLRResult
        ``history`` records: ``iteration``, ``n_features`` (the union so
        far), ``n_new``, ``n_constraints``, ``violation`` (of the new
        constraint, before it was added), ``objective`` (``P(v)``, the
        primal value of the reduced problem's classifier), ``upper``
        (``max_t f̃_t(α)``), ``rel_gap``, ``certified``, ``q``,
        ``sweeps``, ``newton``, ``score_seconds``, ``materialize_seconds``,
        ``solve_seconds``, ``scan_nnz``, ``candidates``, ``top_score``,
        and peak RSS figures where the platform reports them.
    """
    validate_mslr_params(B, C, max_iter, tol, subproblem_tol)
    stack = None
    if n_classes is not None:
        stack = _ClassStack(y, n_classes)
        y = stack.codes             # (n, K) ±1 one-vs-rest codes
    else:
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 1 or not np.all(np.abs(y) == 1):
            raise ParameterError("MSLR needs labels in {-1, +1}")
    n = y.shape[0]
    C = float(C)
    start = min(1.0, 0.5 * C)
    weights = check_sample_weight(sample_weight, n)
    if weights is None:
        alpha = np.full(y.shape, start)
        alpha_c = np.full(y.shape, C - start)
    else:               # a box (0, C s_i) per sample; s_i copies' start
        alpha = start * (weights if stack is None else weights[:, None] * np.ones(y.shape))
        alpha_c = C * (weights if stack is None else weights[:, None]) - alpha
    cache = ColumnCache(n)
    keys = np.zeros(0, dtype=np.int64)
    batch_ptr = [0]             # first-selection boundaries (an iteration may add none)
    position = {}
    constraints = []
    seen = set()
    history = []
    solution = None
    stop_reason = ""
    for iteration in range(1, int(max_iter) + 1):
        candidates, stats = worst_case_analysis(
            features, alpha * y, int(B), excluded=None, block_size=block_size,
            scheduler=scheduler, num_workers=num_workers,
            progress_label=f"iteration {iteration} pass" if progress else None)
        score_peak = peak_rss_mb()
        if len(candidates) and not np.all(np.isfinite(candidates.scores)):
            raise ParameterError(f"C = {C:g} is too large for this data: the scores "
                                 "overflow float64")
        if len(candidates) == 0:
            stop_reason = "no candidate feature with a nonzero score"
            break
        chosen = np.asarray(candidates.keys, dtype=np.int64)
        signature = tuple(sorted(int(k) for k in chosen))
        violation = np.nan
        if solution is not None:
            top = 0.5 * float(np.sum(candidates.scores))
            current = float(np.max(solution.sq))
            violation = top - current
            if signature in seen:
                stop_reason = (f"iteration {iteration}'s top-{B} set equals an earlier "
                               "constraint (converged)")
                break
            if tol > 0 and violation <= tol * abs(solution.upper):
                stop_reason = (f"violation {violation:.3g} of the new constraint <= "
                               f"tol x |max_t f_t| = {tol * abs(solution.upper):.3g}")
                break
        seen.add(signature)
        started = time.perf_counter()
        new = np.array([k for k in chosen if int(k) not in position], dtype=np.int64)
        if len(new):
            cache.append_batch(features.materialize_compact(
                new, payload=candidates.payload))
            for k in new:
                position[int(k)] = len(position)
            keys = np.concatenate([keys, new])
        batch_ptr.append(len(keys))
        constraints.append(np.array([position[int(k)] for k in chosen], dtype=np.int64))
        materialize_seconds = time.perf_counter() - started
        materialize_peak = peak_rss_mb()

        started = time.perf_counter()
        rows = _rows(cache)
        if stack is None:
            problem = MinimaxProblem(LogisticRows(rows.indptr, rows.indices, rows.data, y,
                                                  C, weights),
                                     ConstraintHull(tuple(constraints)))
            solution = solve_minimax(problem, alpha0=alpha, alpha_c0=alpha_c,
                                     tol=subproblem_tol, q0=q0, beta=beta,
                                     max_sweeps=max_sweeps, seed=seed)
            alpha, alpha_c = solution.alpha, solution.alpha_c
        else:
            solution = stack.solve(rows, constraints, C, weights, alpha, alpha_c,
                                   tol=subproblem_tol, q0=q0, beta=beta,
                                   max_sweeps=max_sweeps, seed=seed)
            alpha, alpha_c = stack.per_class(solution.alpha), stack.per_class(
                solution.alpha_c)
        solve_seconds = time.perf_counter() - started
        if not np.isfinite(solution.primal):
            raise ParameterError(f"C = {C:g} is too large for this data: the "
                                 "objective overflows float64")
        record = {
            "iteration": iteration, "n_features": int(len(keys)), "n_new": int(len(new)),
            "n_constraints": len(constraints), "violation": float(violation),
            "objective": float(solution.primal), "upper": float(solution.upper),
            "rel_gap": float(solution.rel_gap), "certified": bool(solution.certified),
            "q": float(solution.q), "sweeps": int(solution.n_sweeps),
            "newton": int(solution.n_newton),
            "score_seconds": stats.seconds, "materialize_seconds": materialize_seconds,
            "solve_seconds": solve_seconds, "scan_nnz": int(stats.nnz),
            "candidates": int(stats.n_candidates),
            "top_score": float(candidates.scores[0]),
        }
        solve_peak = peak_rss_mb()
        if solve_peak is not None:
            record.update(score_peak_rss_mb=score_peak,
                          materialize_peak_rss_mb=materialize_peak,
                          solve_peak_rss_mb=solve_peak)
        history.append(record)
        logger.info("MSLR iteration %d: %d features, %d constraints, P(v) %.6g "
                    "(gap %.2g)", iteration, len(keys), len(constraints),
                    solution.primal, solution.rel_gap)
        if callback is not None:
            callback(record)
    if not stop_reason:
        stop_reason = f"reached max_iter = {int(max_iter)} (T_m) iterations"
    if solution is None:
        return MSLRResult(keys=keys, batch_ptr=np.zeros(1, dtype=np.int64),
                          constraints=[], mu=np.zeros(0), d=np.zeros(0),
                          coef=np.zeros(0), alpha=alpha, history=history,
                          stop_reason=stop_reason)
    d, coef = solution.d, solution.coef
    if stack is not None:           # the K copies of d are equal; v per class
        d, coef = stack.per_class(d, len(keys))[:, 0], stack.per_class(coef, len(keys))
    return MSLRResult(keys=keys, batch_ptr=np.asarray(batch_ptr, dtype=np.int64),
                      constraints=constraints, mu=solution.mu, d=d,
                      coef=coef, alpha=alpha, history=history,
                      stop_reason=stop_reason, block=_block(cache))


class _ClassStack:
    """K one-vs-rest problems as one binary reduced problem (the module
    docstring): the block-diagonal stack of the rows, the constraints over
    every class's copy of their columns, and the maps between the stacked
    vectors (class-major: entry ``k n + i``) and per-class matrices."""

    def __init__(self, y, n_classes):
        index = np.asarray(y)
        K = int(n_classes)
        if index.ndim != 1 or K < 3 or not np.all((index >= 0) & (index < K)) \
                or not np.all(index == np.round(index)):
            raise ParameterError(f"MSLR with K = {n_classes!r} classes needs class "
                                 f"indices 0..K-1 and K >= 3")
        self.K = K
        self.codes = -np.ones((len(index), K))
        self.codes[np.arange(len(index)), index.astype(np.int64)] = 1.0

    def stacked(self, matrix):
        """(m, K) per class -> (K m,) class-major."""
        return np.ascontiguousarray(np.asarray(matrix).T).ravel()

    def per_class(self, vector, m=None):
        """(K m,) class-major -> (m, K)."""
        vector = np.asarray(vector)
        return vector.reshape(self.K, m if m is not None else len(vector) // self.K).T.copy()

    def solve(self, rows, constraints, C, weights, alpha, alpha_c, **options):
        p = rows.shape[1]
        big = sp.block_diag([rows] * self.K, format="csr")
        big.sort_indices()
        shared = tuple(np.concatenate([k * p + s for k in range(self.K)])
                       for s in constraints)
        problem = MinimaxProblem(
            LogisticRows(big.indptr, big.indices, big.data, self.stacked(self.codes), C,
                         None if weights is None else np.tile(weights, self.K)),
            ConstraintHull(shared))
        return solve_minimax(problem, alpha0=self.stacked(alpha),
                             alpha_c0=self.stacked(alpha_c), **options)


def _rows(cache):
    """The cached columns as CSR rows (n × p, float64)."""
    indptr, indices, _, _ = cache.arrays()
    csc = sp.csc_matrix((cache.data.astype(np.float64), indices, indptr),
                        shape=(cache.n_samples, cache.n_columns))
    rows = csc.tocsr()
    rows.sort_indices()
    return rows


def _block(cache):
    """The cached columns as one :class:`~ultrafs.store.base.ColumnBlock`."""
    from ultrafs.store.base import ColumnBlock

    indptr, indices, data, _ = cache.arrays()
    if data is None:
        return ColumnBlock(0, indptr.copy(), indices.copy(), None,
                           column_values=cache.column_values.copy())
    return ColumnBlock(0, indptr.copy(), indices.copy(), data.copy())


def _row_subset(block, rows, n):
    """The block's columns (``n`` rows) restricted to ``rows`` (increasing),
    renumbered (:func:`ultrafs.kernels.sparse_ops.csc_take_rows`)."""
    from ultrafs.kernels.sparse_ops import csc_take_rows
    from ultrafs.store.base import ColumnBlock

    row_map = np.full(n, -1, dtype=np.int64)
    row_map[rows] = np.arange(len(rows), dtype=np.int64)
    indptr, indices, data = csc_take_rows(np.asarray(block.indptr, dtype=np.int64),
                                          block.indices, block.values(np.float64),
                                          row_map)
    return ColumnBlock(0, indptr, indices, data)


def check_retrain_C(C):
    """The retraining's C: ``"auto"``, or a float (finite, > 0); else one line."""
    if C == "auto":
        return C
    if isinstance(C, bool) or not isinstance(C, (int, float, np.integer, np.floating)) \
            or not (np.isfinite(C) and C > 0):
        raise ParameterError(f"retrain_C must be a number > 0 or 'auto', got {C!r}")
    return float(C)


def retrain(block, y, *, C=DEFAULT_RETRAIN_C, fit_intercept=True, seed=0,
            fraction=RETRAIN_VALIDATION_FRACTION, sample_weight=None, n_classes=None):
    """ℓ2-regularised LR on the selected columns: the paper's retraining.

    ``1/2 ||w||^2 + C Σ_i log(1 + exp(−y_i (x_i'w + c)))`` with an
    unpenalised intercept ``c`` (or none), solved by the refit solver FGM
    uses (:func:`ultrafs.methods.refit.refit_block`, KKT-certified).  The
    paper gives C = 5 for its synthetic study and leaves the intercept
    unsaid; both are parameters here.

    Parameters
    ----------
    block : ColumnBlock
        The selected columns (n rows).
    y : float64 array, shape (n,)
        ±1 labels.
    C : float or "auto"
        "auto": chosen on ``fraction`` of the rows held out (stratified,
        seeded by ``seed``) from the grid ``DEFAULT_RETRAIN_C × 10^{-1.5 ..
        2}`` of ``C="auto"`` (:func:`ultrafs.methods.validation.c_grid`):
        the best held-out accuracy, then the smaller mean log-loss, then
        the smaller C; the model is then fitted on all rows.
    fit_intercept : bool
    seed : int
    fraction : float
    sample_weight : array-like of shape (n,), optional
        Per-sample weights of the loss; with ``C="auto"`` the held-out
        rows are scored by their weighted accuracy and mean log-loss.
    n_classes : int, optional
        K >= 3: ``y`` holds class indices and the retraining is multinomial
        (softmax) ℓ2-LR, scored by accuracy and mean multinomial log-loss.

    Returns
    -------
    dict
        ``coef`` (p,), ``intercept``, ``C``, ``kkt``; with ``C="auto"``
        also ``validation``: ``{"method": "holdout", "fraction", "seed",
        "C", "points": [{"C", "accuracy", "loss"}, ...]}``.
    """
    from ultrafs.methods.validation import c_grid
    from ultrafs.progress import phase

    multi = n_classes is not None
    y = np.asarray(y, dtype=np.int64 if multi else np.float64)
    C = check_retrain_C(C)
    weights = check_sample_weight(sample_weight, len(y))
    n_fits = len(c_grid(DEFAULT_RETRAIN_C)) + 1 if C == "auto" else 1
    with phase(f"MSLR refit: ℓ2-LR on {block.n_columns:,} selected features", n_fits,
               "fit") as progress:
        return _retrain(block, y, C, fit_intercept, seed, fraction, weights, n_classes,
                        progress)


def _retrain(block, y, C, fit_intercept, seed, fraction, weights, n_classes, progress):
    """:func:`retrain`'s fits, counted by ``progress`` (a Phase)."""
    from ultrafs.methods.refit import refit_block
    from ultrafs.methods.validation import c_grid, stratified_split

    multi = n_classes is not None
    if C == "auto":
        train, held = stratified_split(y if multi else y > 0, fraction, seed)
        fit_part = _row_subset(block, train, len(y))
        score_part = _row_subset(block, held, len(y))
        points = []
        for value in c_grid(DEFAULT_RETRAIN_C):
            model = refit_block(fit_part, y[train], loss="logistic", C=value,
                                fit_intercept=fit_intercept, n_classes=n_classes,
                                sample_weight=None if weights is None else weights[train])
            decision = _decision(score_part, model["coef"], model["intercept"],
                                 len(held))
            if multi:       # correct class, and the multinomial log-loss
                from scipy.special import log_softmax

                truth = y[held]
                margin = np.where(np.argmax(decision, axis=1) == truth, 1.0, -1.0)
                losses = -log_softmax(decision, axis=1)[np.arange(len(held)), truth]
            else:
                margin = y[held] * decision
                losses = np.logaddexp(0.0, -margin)
            if weights is None:
                accuracy = float(np.mean(margin > 0))
                loss = float(np.mean(losses))
            else:
                held_weights = weights[held]
                total = max(float(np.sum(held_weights)), np.finfo(float).tiny)
                accuracy = float(np.sum(held_weights * (margin > 0)) / total)
                loss = float(np.sum(held_weights * losses) / total)
            points.append({"C": float(value), "accuracy": accuracy, "loss": loss})
            best = min(points, key=lambda pt: (-pt["accuracy"], pt["loss"], pt["C"]))
            progress.update(1, status=f"best C {best['C']:.4g} (held-out accuracy "
                                      f"{best['accuracy']:.4g})")
        result = refit_block(block, y, loss="logistic", C=best["C"],
                             fit_intercept=fit_intercept, sample_weight=weights,
                             n_classes=n_classes)
        progress.update(1)
        result["validation"] = {"method": "holdout", "fraction": float(fraction),
                                "seed": int(seed), "C": best["C"], "points": points}
        return result
    result = refit_block(block, y, loss="logistic", C=C, fit_intercept=fit_intercept,
                         sample_weight=weights, n_classes=n_classes)
    progress.update(1, status=f"C {C:g}")
    return result


def _decision(block, coef, intercept, n):
    """``X_block @ coef + intercept`` for the block's ``n`` rows ((n,) for a
    vector ``coef``, (n, K) for a (p, K) one)."""
    values = block.values(np.float64)
    csc = sp.csc_matrix((values, block.indices, block.indptr), shape=(n, block.n_columns))
    coef = np.asarray(coef, dtype=np.float64)
    if coef.ndim == 2:
        return np.asarray(csc @ coef) + np.asarray(intercept, dtype=np.float64)
    return np.asarray(csc @ coef).ravel() + float(intercept)
