"""The Feature Generating Machine's cutting-plane loop (Algorithm 1).

Each outer iteration: a streamed worst-case analysis picks the B candidates
with the largest scores under the current dual variables, their columns are
materialised into the in-memory cache, and the ℓ2,1²-regularised subproblem
(eq. 30) is solved on the cached columns only, warm-started from the last
solution.  The loop stops after ``max_iter`` iterations, when no candidate
has a positive score, or when the relative decrease of the objective falls
under ``tol`` (eq. 37).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.methods.column_cache import ColumnCache
from ultrafs.errors import ParameterError
from ultrafs.solvers.apg import dual_variables, fit_bias_only, objective, solve_subproblem
from ultrafs.solvers.losses import LOSSES

__all__ = ["FGMResult", "fit_fgm", "validate_fgm_params"]

logger = logging.getLogger("ultrafs")


@dataclass
class FGMResult:
    """What the cutting-plane loop produced.

    Attributes
    ----------
    keys : int64 array, shape (p,)
        Feature-space keys of the selected features, in selection order.
    batch_ptr : int64 array, shape (t + 1,)
        Features of iteration h are ``keys[batch_ptr[h]:batch_ptr[h+1]]``.
    coef : float64 array, shape (p,)
        ω, aligned with ``keys``.
    bias : float
        b; the decision value is ``X[:, keys] @ coef - bias``.
    history : list of dict
        One record per outer iteration (see :func:`fit_fgm`).
    stop_reason : str
    path : list of (coef, bias)
        The subproblem solution after each outer iteration (``coef`` of
        iteration h is aligned with ``keys[:batch_ptr[h + 1]]``); O(T²B)
        floats, kept for accuracy-versus-features curves.
    """

    keys: np.ndarray
    batch_ptr: np.ndarray
    coef: np.ndarray
    bias: float
    history: list = field(default_factory=list)
    stop_reason: str = ""
    path: list = field(default_factory=list)


def validate_fgm_params(B, C, loss, max_iter, tol, inner_tol):
    """Check the FGM parameters; raise :class:`ParameterError` if invalid."""
    if isinstance(B, bool) or not isinstance(B, (int, np.integer)) or B < 1:
        raise ParameterError(f"B must be an integer >= 1, got {B!r}")
    if not np.isfinite(C) or C <= 0:
        raise ParameterError(f"C must be > 0, got {C!r}")
    if loss not in LOSSES:
        raise ParameterError(
            f"unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) \
            or max_iter < 1:
        raise ParameterError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if not np.isfinite(tol) or tol < 0:
        raise ParameterError(f"tol must be >= 0, got {tol!r}")
    if not np.isfinite(inner_tol) or inner_tol <= 0:
        raise ParameterError(f"inner_tol must be > 0, got {inner_tol!r}")


def fit_fgm(features, y, *, B=50, C=10.0, loss="logistic", max_iter=10,
            tol=1e-3, fit_intercept=True, inner_tol=1e-3, inner_max_iter=1000,
            block_size=None, scheduler=None, num_workers=None, callback=None,
            checkpoint=None, resume=False, progress=False):
    """Run FGM on a feature space.

    Parameters
    ----------
    features : feature space
        Candidates (e.g. :class:`~ultrafs.features.linear.LinearFeatures`).
    y : float64 array, shape (n_samples,)
        Labels in {-1, +1}.
    B : int
        Features added per outer iteration.
    C : float
        Weight of the empirical loss in eq. 30.
    loss : {"logistic", "squared-hinge"}
    max_iter : int
        T, the maximum number of outer iterations.
    tol : float
        ε_c of eq. 37; 0 disables the test (exactly ``max_iter`` iterations
        run while candidates with a positive score remain).
    fit_intercept : bool
        Learn the bias b.
    inner_tol, inner_max_iter : float, int
        ε_in of eq. 40 and the iteration cap of the APG solver.
    block_size, scheduler, num_workers
        Passed to :func:`~ultrafs.scoring.worst_case.worst_case_analysis`.
    callback : callable, optional
        Called with each history record as soon as it is complete.
    checkpoint : ultrafs.methods.checkpoint.Checkpoint, optional
        Where the state is committed after every outer iteration.
    resume : bool
        Continue from ``checkpoint``'s committed state when there is one;
        the result is the same as an uninterrupted run's.
    progress : bool
        Show the progress of every scoring pass on stderr.

    Returns
    -------
    result : FGMResult
        ``history`` records hold: ``iteration``, ``n_features``,
        ``n_new``, ``objective``, ``inner_iterations``, ``score_seconds``,
        ``materialize_seconds``, ``solve_seconds``, ``scan_nnz``,
        ``candidates`` (candidates possible), ``top_score``, plus the
        feature space's pass figures (for degree 2: ``pairs_evaluated``,
        ``pairs_pruned``, ``live_columns``, ``seed_columns``).
    """
    validate_fgm_params(B, C, loss, max_iter, tol, inner_tol)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n_samples = y.shape[0]
    cache = ColumnCache(n_samples)

    bias = fit_bias_only(y, C, loss=loss, fit_intercept=fit_intercept)
    decision = np.full(n_samples, -bias)
    objective_0 = objective(*cache.arrays(), y, C, np.zeros(0), bias, loss=loss)
    objective_prev = objective_0
    coef = np.zeros(0)
    lipschitz = None
    keys = np.zeros(0, dtype=np.int64)
    history = []
    path = []
    stop_reason = f"reached max_iter={max_iter}"
    first_iteration = 1

    if resume and checkpoint is not None and checkpoint.exists():
        state, decision = checkpoint.load()
        keys = np.asarray(state["keys"], dtype=np.int64)
        batch_ptr = np.asarray(state["batch_ptr"], dtype=np.int64)
        for lo, hi in zip(batch_ptr[:-1], batch_ptr[1:]):
            cache.append_batch(features.materialize(keys[lo:hi]))
        coef = np.asarray(state["coef"], dtype=np.float64)
        bias = float(state["bias"])
        lipschitz = state["lipschitz"]
        objective_0 = float(state["objective_0"])
        objective_prev = float(state["objective_prev"])
        history = list(state["history"])
        path = [(np.asarray(c, dtype=np.float64), float(b)) for c, b in state["path"]]
        first_iteration = int(state["iteration"]) + 1
        if state.get("stop_reason"):
            return FGMResult(keys=keys, batch_ptr=batch_ptr, coef=coef, bias=bias,
                             history=history, stop_reason=state["stop_reason"],
                             path=path)
        logger.info("resuming after iteration %d", first_iteration - 1)

    def commit(iteration, finished_reason=""):
        if checkpoint is None:
            return
        checkpoint.save({
            "iteration": iteration, "keys": keys.tolist(),
            "batch_ptr": cache.batch_ptr.tolist(), "coef": coef.tolist(),
            "bias": float(bias), "lipschitz": lipschitz,
            "objective_0": float(objective_0), "objective_prev": float(objective_prev),
            "history": history, "path": [(c.tolist(), b) for c, b in path],
            "stop_reason": finished_reason}, decision)

    for iteration in range(first_iteration, max_iter + 1):
        weights = dual_variables(decision, y, C, loss=loss) * y
        candidates, pass_stats = worst_case_analysis(
            features, weights, B, excluded=keys, block_size=block_size,
            scheduler=scheduler, num_workers=num_workers,
            progress_label=f"iteration {iteration} pass" if progress else None)
        if len(candidates) == 0:
            stop_reason = "no candidate feature with a positive score"
            commit(iteration - 1, stop_reason)
            break

        started = time.perf_counter()
        cache.append_batch(features.materialize(candidates.keys,
                                                payload=candidates.payload))
        keys = np.concatenate([keys, candidates.keys])
        materialize_seconds = time.perf_counter() - started

        started = time.perf_counter()
        solution = solve_subproblem(
            *cache.arrays(), y, C, loss=loss, fit_intercept=fit_intercept,
            coef0=coef, bias0=bias, lipschitz0=lipschitz, tol=inner_tol,
            max_iter=inner_max_iter)
        solve_seconds = time.perf_counter() - started
        coef, bias = solution.coef, solution.bias
        decision = solution.decision
        lipschitz = None if solution.lipschitz is None else float(solution.lipschitz)

        record = {
            "iteration": iteration,
            "n_features": int(len(keys)),
            "n_new": int(len(candidates)),
            "objective": float(solution.objective),
            "inner_iterations": int(solution.n_iter),
            "score_seconds": pass_stats.seconds,
            "materialize_seconds": materialize_seconds,
            "solve_seconds": solve_seconds,
            "scan_nnz": pass_stats.nnz,
            "candidates": int(pass_stats.n_candidates),
            "top_score": float(candidates.scores[0]),
            **{name: int(value) for name, value in pass_stats.details.items()},
        }
        history.append(record)
        path.append((coef.copy(), float(bias)))
        logger.info("iteration %d: %d features, objective %.6g", iteration,
                    len(keys), solution.objective)
        decrease = (objective_prev - solution.objective) / objective_0
        objective_prev = float(solution.objective)
        finished = ""
        if tol > 0 and decrease <= tol:
            finished = f"relative objective decrease {decrease:.3g} <= tol={tol:g}"
        commit(iteration, finished)
        if callback is not None:
            callback(record)
        if finished:
            stop_reason = finished
            break

    return FGMResult(keys=keys, batch_ptr=cache.batch_ptr.copy(), coef=coef,
                     bias=float(bias), history=history, stop_reason=stop_reason,
                     path=path)
