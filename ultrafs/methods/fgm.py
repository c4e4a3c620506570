"""The Feature Generating Machine's cutting-plane loop (Algorithm 1).

Each outer iteration: a streamed worst-case analysis picks the B candidates
with the largest scores under the current dual variables, their columns are
materialised into the in-memory cache, and the ℓ2,1²-regularised subproblem
(eq. 30) is solved on the cached columns only, warm-started from the last
solution.  The loop stops after ``max_iter`` iterations, when no candidate
has a positive score, or when the relative decrease of the objective falls
under ``tol`` (eq. 37).

With K >= 3 classes one feature set is shared by all classes: the
worst-case analysis scores a feature by the squared norm over classes of
its correlations with the per-class dual weights ``-C dl/dF`` (n x K), and
the subproblem is the multinomial logistic (or one-vs-rest squared hinge)
problem with the ℓ2,1² penalty over (batch × class) blocks: the K weights
of the columns added at one iteration form one block.  Coefficients are
kept flat, row-major (p, K).

Sample weights ``s_i`` (``fit_fgm(sample_weight=...)``) make the data term
``C sum_i s_i l(y_i, f_i)``: the datafit of every subproblem is weighted,
and so are the dual weights ``-C s dl/df`` the passes score features with
(a sample of weight 0 never moves a score).  A checkpoint records the
weights' digest (:func:`sample_weight_digest`) in its parameters, so a
resumed run cannot mix weightings.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.methods.checkpoint import verify_resumed_state
from ultrafs.methods.column_cache import ColumnCache
from ultrafs.progress import phase
from ultrafs.rss import peak_rss_mb
from ultrafs.scoring.progress import current_clock
from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.solvers.apg import DEFAULT_KKT_TOL, solve
from ultrafs.solvers.datafits import (Datafit, check_sample_weight,
                                      encode_classification_targets)
from ultrafs.solvers.losses import get_loss, loss_names
from ultrafs.solvers.operators import CSCOperator

__all__ = ["FGMResult", "FGMRun", "GridWarmStart", "PassQuery", "fit_fgm",
           "validate_fgm_params",
           "OUTER_ITERATION_FACTOR", "sample_weight_digest"]

#: outer iterations allowed per unit of max_iter while the budget of
#: B x max_iter nonzero features is not reached (batches the ℓ2,1² penalty
#: sets to zero do not count)
OUTER_ITERATION_FACTOR = 3

logger = logging.getLogger("ultrafs")
#: says that a run resumes from a checkpoint (the CLI shows it on stderr)
resume_logger = logging.getLogger("ultrafs.resume")


class GridWarmStart:
    """Subproblem solutions of one fit, the starting points of the next C's.

    ``C="auto"`` fits FGM for an increasing grid of C on the same rows.  A
    fit's outer iteration t solves the subproblem on its working set (the
    keys selected so far, in order); when the previous C's fit solved on the
    same working set at an iteration up to t, that solution is the start
    instead of the zero-padded last iterate.  (Up to t: so that fits run one
    after the other and fits run in lockstep, :meth:`chain`, find the same
    starts.)  The first batch is the same for every C (at ``w = 0`` the
    scores are C² times C-free values), later ones often are: on imdb
    (unigrams, k = 50, five grid values) 31 of the 40 later subproblems
    started warm and took 23% fewer Newton iterations.  The start changes
    only how many iterations the certified solver takes, not what it
    certifies.  Pass one object to the fits of a grid in order:
    :meth:`next_fit` (called by :func:`fit_fgm`) makes the last fit's
    solutions the ones looked up.  It holds at most two fits' solutions
    (``max_iter`` or a few more each, of at most ``B x max_iter`` weights).
    """

    def __init__(self):
        self._previous = {}
        self._current = {}
        self._chained = False
        #: subproblems looked up, and of them those that started warm
        self._counts = {"lookups": 0, "hits": 0}

    @property
    def lookups(self) -> int:
        """Subproblems looked up (by this object and the links it chained)."""
        return self._counts["lookups"]

    @property
    def hits(self) -> int:
        """Of them, those that started warm."""
        return self._counts["hits"]

    @staticmethod
    def _key(keys, n_outputs):
        return (int(n_outputs), np.asarray(keys, dtype=np.int64).tobytes())

    def next_fit(self):
        """Start a new fit: the finished fit's solutions become the lookups.

        A link made by :meth:`chain` is already set up: nothing changes.
        """
        if not self._chained:
            self._previous, self._current = self._current, {}

    def chain(self, n_fits):
        """Links for ``n_fits`` fits of the next grid values run in lockstep.

        Link i looks up link i - 1's solutions (link 0 those of this
        object's last fit), so each fit finds what it would find run after
        the one before, provided the fits advance their iterations in grid
        order.  Afterwards this object continues from the last link's fit.
        """
        links = []
        previous = self._current
        for _ in range(int(n_fits)):
            link = GridWarmStart()
            link._chained = True
            link._counts = self._counts
            link._previous, link._current = previous, {}
            previous = link._current
            links.append(link)
        if links:                 # the next fit (next_fit) looks up the last link's
            self._current = links[-1]._current
        return links

    def lookup(self, keys, n_outputs, iteration):
        """``(coef, bias)`` the previous fit solved on exactly ``keys`` at an
        iteration up to ``iteration``, or None."""
        found = self._previous.get(self._key(keys, n_outputs))
        self._counts["lookups"] += 1
        if found is None or found[0] > iteration:
            return None
        self._counts["hits"] += 1
        _, coef, bias = found
        return coef.copy(), (bias.copy() if isinstance(bias, np.ndarray) else bias)

    def record(self, keys, n_outputs, coef, bias, iteration):
        """Keep this fit's solution on ``keys`` at ``iteration``."""
        self._current[self._key(keys, n_outputs)] = (
            int(iteration), np.array(coef, dtype=np.float64),
            np.array(bias, dtype=np.float64) if np.ndim(bias) else float(bias))


@dataclass
class FGMResult:
    """What the cutting-plane loop produced.

    Attributes
    ----------
    keys : int64 array, shape (p,)
        Feature-space keys of the selected features, in selection order.
    batch_ptr : int64 array, shape (t + 1,)
        Features of iteration h are ``keys[batch_ptr[h]:batch_ptr[h+1]]``.
    coef : float64 array, shape (p,) or (p * K,)
        ω, aligned with ``keys``; with K classes row-major (p, K).
    bias : float or float64 array of shape (K,)
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
    n_classes: int = 2

    @property
    def n_outputs(self) -> int:
        """Decision values per sample: 1 (binary) or K."""
        return 1 if self.n_classes == 2 else self.n_classes

    def nonzero(self):
        """Bool mask over ``keys``: features with a nonzero weight (any class)."""
        return _nonzero_columns(self.coef, self.n_outputs)

    def coef_matrix(self):
        """``coef`` as (p,) for binary problems, (p, K) otherwise."""
        if self.n_outputs == 1:
            return self.coef
        return self.coef.reshape(-1, self.n_outputs)


def validate_fgm_params(B, C, loss, max_iter, tol, inner_tol, inner_kkt_tol=None):
    """Check the FGM parameters; raise :class:`ParameterError` if invalid.

    ``C`` may also be "scale" or "auto" (resolved by :func:`ultrafs.api.select`).
    """
    if isinstance(B, bool) or not isinstance(B, (int, np.integer)) or B < 1:
        raise ParameterError(f"B must be an integer >= 1, got {B!r}")
    if isinstance(C, str):
        if C not in ("scale", "auto"):
            raise ParameterError(f"C must be a number > 0, 'scale' or 'auto', got {C!r}")
    elif isinstance(C, bool) or not isinstance(C, (int, float, np.integer, np.floating)) \
            or not np.isfinite(C) or C <= 0:
        raise ParameterError(f"C must be > 0, got {C!r}")
    if loss not in loss_names():
        raise ParameterError(
            f"unknown loss {loss!r}; expected one of {', '.join(loss_names())}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) \
            or max_iter < 1:
        raise ParameterError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if not np.isfinite(tol) or tol < 0:
        raise ParameterError(f"tol must be >= 0, got {tol!r}")
    if not np.isfinite(inner_tol) or inner_tol <= 0:
        raise ParameterError(f"inner_tol must be > 0, got {inner_tol!r}")
    if inner_kkt_tol is not None and not (np.isfinite(inner_kkt_tol)
                                          and inner_kkt_tol > 0):
        raise ParameterError(f"inner_kkt_tol must be > 0 or None, got {inner_kkt_tol!r}")


def sample_weight_digest(sample_weight):
    """SHA-256 (hex) of per-sample weights as little-endian float64; None for None.

    Recorded in checkpoint and model parameters: weights change the
    problem, so a checkpoint written with other weights is refused.
    """
    if sample_weight is None:
        return None
    weights = np.ascontiguousarray(sample_weight, dtype="<f8")
    return hashlib.sha256(weights.tobytes()).hexdigest()


def _check_checkpoint_weights(checkpoint, sample_weight):
    """Refuse a checkpoint whose parameters do not name these weights."""
    if checkpoint is None:
        return
    recorded = getattr(checkpoint, "params", {}).get("sample_weight_digest")
    digest = sample_weight_digest(sample_weight)
    if recorded != digest:
        raise ParameterError(
            "the checkpoint's parameters must record the sample weights' digest "
            "(params['sample_weight_digest'] = sample_weight_digest(weights), None "
            "without weights)")


def _datafit(cache, y, C, loss, n_outputs, sample_weight=None):
    """The subproblem's datafit on the cached columns."""
    indptr, indices, data, _ = cache.arrays()
    operator = CSCOperator(indptr, indices, data, len(y), n_outputs,
                           column_values=cache.column_values)
    return Datafit(loss, operator, y, C, sample_weight)


def _overflow_message(C) -> str:
    return (f"C = {float(C):g} is too large for this data: the objective overflows "
            "float64 (use a smaller C, or C='scale' for one fitted to the data)")


def _require_finite(solution, C, certified=True) -> None:
    """Raise ParameterError when the subproblem overflowed (C far too large).

    ``certified``: whether the solve computed its KKT certificate (a NaN
    one then means an overflow); under the paper's stop (``kkt_tol=None``)
    the certificate stays NaN, not computed.
    """
    kkt = getattr(solution, "kkt", None)
    finite = (np.isfinite(solution.objective) and np.all(np.isfinite(solution.coef))
              and np.all(np.isfinite(solution.bias))
              and (not certified or kkt is None or not np.isnan(kkt)))
    if not finite:
        raise ParameterError(_overflow_message(C))


def fit_fgm(features, y, *, n_classes=None, B=50, C=10.0, loss="logistic", max_iter=10,
            tol=1e-3, fit_intercept=True, inner_tol=1e-3, inner_max_iter=1000,
            inner_kkt_tol=DEFAULT_KKT_TOL,
            block_size=None, scheduler=None, num_workers=None, callback=None,
            checkpoint=None, resume=False, progress=False, sample_weight=None,
            memory_limit=None, inner_solver="auto", warm_start=None):
    """Run FGM on a feature space.

    Parameters
    ----------
    features : feature space
        Candidates (e.g. :class:`~ultrafs.features.linear.LinearFeatures`).
    y : array, shape (n_samples,)
        Labels in {-1, +1}, or int class indices in ``0..K-1`` when
        ``n_classes = K >= 3``.
    n_classes : int or None
        None or 2 for binary labels; K >= 3 for multi-class selection.
    B : int
        Features added per outer iteration.
    C : float
        Weight of the empirical loss in eq. 30.
    loss : str
        A registered loss name (:func:`ultrafs.solvers.losses.loss_names`):
        "logistic" or "squared-hinge" built in.
    max_iter : int
        T: the budget is ``B * T`` features with a nonzero weight.  The loop
        adds batches until it holds them (the last pass asks for only the
        missing ones), ε_c is met, or no candidate has a positive score;
        batches the ℓ2,1² penalty sets to zero do not count, and at most
        ``OUTER_ITERATION_FACTOR * T`` outer iterations run.
    tol : float
        ε_c of eq. 37; 0 disables the test (the loop then runs until the
        budget is reached while candidates with a positive score remain).
    fit_intercept : bool
        Learn the bias b.
    inner_tol, inner_max_iter : float, int
        ε_in of eq. 40 (the relative decrease that triggers the
        certificate check) and the iteration cap of the APG solver.
    inner_kkt_tol : float or None
        Relative KKT residual that certifies each subproblem's solution
        (:class:`ultrafs.solvers.apg.APG`); None stops the inner solver on
        the relative decrease alone (the paper's rule).
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
    sample_weight : array-like of shape (n_samples,), optional
        Per-sample weights ``s_i`` of the data term ``C sum_i s_i l_i``
        (finite, ``>= 0``, not all zero); None for all ones.  With a
        ``checkpoint``, its ``params`` must hold ``sample_weight_digest``
        (:func:`sample_weight_digest`; None without weights).
    inner_solver : {"auto", "apg", "newton", "mkl"}
        The subproblem's solver (:func:`ultrafs.solvers.apg.solve`):
        "auto" picks proximal Newton or APG; "mkl" is MKL-FGM, the
        subproblem solved in its dual by SimpleMKL
        (:mod:`ultrafs.solvers.simple_mkl`: the paper's reference solver,
        squared hinge, binary, small n only).
    memory_limit : int, optional
        Bytes this process may hold.  Before each outer iteration the loop
        projects the iteration's peak resident memory (the peak so far plus
        the largest growth of one iteration so far, and at least the
        columns the last batch added to the cache) and stops, with the
        model of the last certified solve and a stop reason that names the
        limit, when the projection exceeds it.  A limit below the memory
        already held before the first pass is a ``ParameterError``.  The
        limit bounds what the loop holds over iterations; it does not cap
        an allocation inside a pass.  Where the platform does not report
        resident memory only the cache's growth is projected.
    warm_start : GridWarmStart, optional
        Shared by the fits of an increasing grid of C on the same rows
        (``C="auto"``): a subproblem whose working set the previous fit
        solved starts from that solution.  Not combined with ``resume``.

    Returns
    -------
    result : FGMResult
        ``history`` records hold: ``iteration``, ``n_features`` (proposed
        so far), ``n_nonzero`` (of them with a nonzero weight), ``n_new``,
        ``objective``, ``inner_iterations``, ``inner_kkt`` (the relative
        KKT residual at the inner stop; NaN without the certificate),
        ``inner_converged``, ``score_seconds``,
        ``materialize_seconds``, ``solve_seconds``, ``score_cpu_seconds``,
        ``solve_cpu_seconds`` (CPU time of all of this process's threads;
        over the wall seconds: the phase's CPU use), ``scan_nnz``,
        ``candidates`` (candidates possible), ``top_score``,
        ``score_peak_rss_mb``, ``materialize_peak_rss_mb``,
        ``solve_peak_rss_mb`` (this process's peak resident memory at the
        end of each phase, :mod:`ultrafs.rss`; absent where the platform
        does not tell), plus the
        feature space's pass figures (for degree 2: ``pairs_evaluated``,
        ``pairs_pruned``, ``live_columns``, ``seed_columns``).
    """
    run = FGMRun(features, y, n_classes=n_classes, B=B, C=C, loss=loss,
                 max_iter=max_iter, tol=tol, fit_intercept=fit_intercept,
                 inner_tol=inner_tol, inner_max_iter=inner_max_iter,
                 inner_kkt_tol=inner_kkt_tol, callback=callback, checkpoint=checkpoint,
                 resume=resume, sample_weight=sample_weight, memory_limit=memory_limit,
                 inner_solver=inner_solver, warm_start=warm_start)
    run.progress = bool(progress)          # each solve as a phase, as the passes
    while True:
        query = run.query()
        if query is None:
            return run.result
        cpu_started = time.process_time()
        candidates, pass_stats = worst_case_analysis(
            features, query.weights, query.k, excluded=query.excluded,
            block_size=block_size, scheduler=scheduler, num_workers=num_workers,
            progress_label=f"iteration {run.iteration} pass" if progress else None)
        run.advance(candidates, pass_stats, time.process_time() - cpu_started,
                    peak_rss_mb())


@dataclass(frozen=True)
class PassQuery:
    """What one fit asks of its next worst-case analysis.

    Attributes
    ----------
    weights : float64 array, shape (n_samples,) or (n_samples, K)
        The dual weights of the last subproblem's solution.
    k : int
        Candidates wanted (B, or the budget's missing features).
    excluded : int64 array
        Keys the fit already holds.
    """

    weights: np.ndarray
    k: int
    excluded: np.ndarray


class FGMRun:
    """One FGM fit, advanced one worst-case analysis at a time.

    :func:`fit_fgm` is the loop ``query() -> pass -> advance()``; the
    parameters are :func:`fit_fgm`'s (without the pass's ``block_size``,
    ``scheduler``, ``num_workers`` and ``progress``: the caller runs the
    passes).  A driver may run several fits' passes as one
    (:func:`ultrafs.methods.fgm_grid.fit_fgm_grid`): a fit's result depends
    only on the candidates each pass returns it, not on how they were found.

    Attributes
    ----------
    iteration : int
        The outer iteration the next pass belongs to.
    result : FGMResult or None
        Set when the fit has finished.
    """

    def __init__(self, features, y, *, n_classes=None, B=50, C=10.0, loss="logistic",
                 max_iter=10, tol=1e-3, fit_intercept=True, inner_tol=1e-3,
                 inner_max_iter=1000, inner_kkt_tol=DEFAULT_KKT_TOL, callback=None,
                 checkpoint=None, resume=False, sample_weight=None, memory_limit=None,
                 inner_solver="auto", warm_start=None):
        validate_fgm_params(B, C, loss, max_iter, tol, inner_tol, inner_kkt_tol)
        y, n_outputs = encode_classification_targets(y, n_classes)
        self.features = features
        self.y = y
        self.n_outputs = n_outputs
        self.K = 2 if n_outputs == 1 else n_outputs
        self.loss = get_loss(loss, "binary" if n_outputs == 1 else "multiclass")
        self.C = C
        self.B = int(B)
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.inner = {"tol": inner_tol, "max_iter": inner_max_iter,
                      "kkt_tol": inner_kkt_tol, "solver": inner_solver}
        self.callback = callback
        self.progress = False       # show each solve as a phase (fit_fgm's progress)
        self.checkpoint = checkpoint
        n_samples = y.shape[0]
        self.sample_weight = check_sample_weight(sample_weight, n_samples)
        _check_checkpoint_weights(checkpoint, self.sample_weight)
        self.cache = ColumnCache(n_samples)
        self.result = None

        no_feature = self._datafit()
        self.bias = no_feature.optimal_bias(fit_intercept)
        self.decision = no_feature.constant_decision(self.bias)
        self.objective_0 = no_feature.value(self.decision)
        if not np.isfinite(self.objective_0):
            raise ParameterError(_overflow_message(C))
        self.objective_prev = self.objective_0
        self.coef = np.zeros(0)
        self.lipschitz = None
        self.keys = np.zeros(0, dtype=np.int64)
        self.history = []
        self.path = []
        self.budget = int(B) * int(max_iter)
        self.max_outer = OUTER_ITERATION_FACTOR * int(max_iter)
        self.iteration = 1
        self.warm_start = warm_start

        if resume and checkpoint is not None and checkpoint.exists():
            if self._resume(checkpoint):
                return
        if warm_start is not None:
            if resume:
                raise ParameterError("warm_start and resume cannot be combined")
            warm_start.next_fit()
        self.n_nonzero = _count_nonzero(self.coef, n_outputs, features.units_of(self.keys))
        self.memory = _MemoryGuard(memory_limit)

    def _datafit(self):
        """The subproblem's datafit on the cached columns."""
        return _datafit(self.cache, self.y, self.C, self.loss, self.n_outputs,
                        self.sample_weight)

    def _solve(self, datafit, coef0, bias0):
        return solve(datafit, self.cache.batch_ptr * self.n_outputs,
                     fit_intercept=self.fit_intercept, coef0=coef0, bias0=bias0,
                     lipschitz0=self.lipschitz, tol=self.inner["tol"],
                     max_iter=self.inner["max_iter"], kkt_tol=self.inner["kkt_tol"],
                     solver=self.inner["solver"])

    def _resume(self, checkpoint):
        """Load the committed state; True when it is a finished run (result set)."""
        n_outputs = self.n_outputs
        state, self.decision = checkpoint.load(
            n_samples=len(self.y), n_outputs=n_outputs,
            n_candidates=self.features.n_keys)
        self.keys = keys = np.asarray(state["keys"], dtype=np.int64)
        batch_ptr = np.asarray(state.get("batch_ptr", state.get("group_ptr")),
                               dtype=np.int64)
        for lo, hi in zip(batch_ptr[:-1], batch_ptr[1:]):
            self.cache.append_batch(self.features.materialize_compact(keys[lo:hi]))
        self.coef = np.asarray(state["coef"], dtype=np.float64)
        self.bias = (float(state["bias"]) if n_outputs == 1
                     else np.asarray(state["bias"], dtype=np.float64))
        self.lipschitz = state["lipschitz"]
        self.objective_0 = float(state["objective_0"])
        self.objective_prev = float(state["objective_prev"])
        self.history = list(state["history"])
        self.path = [(np.asarray(c, dtype=np.float64), _bias_value(b))
                     for c, b in state["path"]]
        self.iteration = int(state["iteration"]) + 1
        # a checkpoint never stands for a solve: its decision values must be
        # those of its weights on this data, and a finished run's weights
        # must carry their certificate, else the subproblem is solved again
        resumed = self._datafit()
        certified = verify_resumed_state(
            resumed, batch_ptr * n_outputs, self.coef, self.bias, self.decision,
            fit_intercept=self.fit_intercept, kkt_tol=self.inner["kkt_tol"],
            where=str(checkpoint.state_path))
        if state.get("stop_reason"):
            if not certified:
                solution = self._solve(resumed, self.coef, self.bias)
                self.coef, self.bias = solution.coef, solution.bias
            self.result = FGMResult(keys=keys, batch_ptr=batch_ptr, coef=self.coef,
                                    bias=_bias_value(self.bias), history=self.history,
                                    stop_reason=state["stop_reason"], path=self.path,
                                    n_classes=self.K)
            return True
        resume_logger.info("resuming from %s after iteration %d (%d features)",
                           checkpoint.directory, self.iteration - 1, len(keys))
        return False

    def _commit(self, iteration, finished_reason=""):
        if self.checkpoint is None:
            return
        self.checkpoint.save({
            "iteration": iteration, "keys": self.keys.tolist(),
            "batch_ptr": self.cache.batch_ptr.tolist(), "coef": self.coef.tolist(),
            "bias": _bias_json(self.bias), "lipschitz": self.lipschitz,
            "objective_0": float(self.objective_0),
            "objective_prev": float(self.objective_prev),
            "history": self.history,
            "path": [(c.tolist(), _bias_json(b)) for c, b in self.path],
            "stop_reason": finished_reason}, self.decision)

    def _finish(self, stop_reason):
        self.result = FGMResult(keys=self.keys, batch_ptr=self.cache.batch_ptr.copy(),
                                coef=self.coef, bias=_bias_value(self.bias),
                                history=self.history, stop_reason=stop_reason,
                                path=self.path, n_classes=self.K)

    def query(self):
        """The next pass's :class:`PassQuery`, or None when the fit has finished."""
        if self.result is not None:
            return None
        if self.iteration > self.max_outer:
            self._finish(f"reached {self.max_outer} outer iterations "
                         f"({OUTER_ITERATION_FACTOR} x max_iter) holding "
                         f"{self.n_nonzero} of the {self.budget} budgeted features "
                         "with a nonzero weight")
            return None
        over = self.memory.exceeded(self.iteration, self.cache.nbytes)
        if over:
            if not len(self.keys):
                raise ParameterError(
                    f"the memory limit of {self.memory.limit_mb:,.0f} MB is below the "
                    f"{self.memory.last_peak:,.0f} MB this run held before its first "
                    "pass")
            self._finish(over)
            return None
        if self.n_nonzero >= self.budget:
            # a resumed run whose checkpoint already holds the budget (the
            # checkpoint does not record the budget as the end: max_iter may rise)
            self._finish(budget_reason(self.budget))
            return None
        weights = self._datafit().dual_weights(self.decision)
        return PassQuery(weights, min(self.B, self.budget - self.n_nonzero), self.keys)

    def advance(self, candidates, pass_stats, score_cpu, score_peak):
        """Materialise and solve on the pass's candidates (:meth:`query`'s answer).

        ``score_cpu`` and ``score_peak`` are the pass's CPU seconds and the
        peak resident memory after it (MB or None), for the history.
        """
        iteration = self.iteration
        n_outputs = self.n_outputs
        if len(candidates) and not np.all(np.isfinite(candidates.scores)):
            raise ParameterError(_overflow_message(self.C))
        if len(candidates) == 0:
            stop_reason = "no candidate feature with a positive score"
            self._commit(iteration - 1, stop_reason)
            self._finish(stop_reason)
            return

        started = time.perf_counter()
        self.cache.append_batch(self.features.materialize_compact(
            candidates.keys, payload=candidates.payload))
        self.keys = keys = np.concatenate([self.keys, candidates.keys])
        materialize_seconds = time.perf_counter() - started
        materialize_peak = peak_rss_mb()

        started = time.perf_counter()
        cpu_started = time.process_time()
        warm = self.warm_start
        start = None if warm is None else warm.lookup(keys, n_outputs, iteration)
        coef0, bias0 = (self.coef, self.bias) if start is None else start
        clock = current_clock()
        name = clock.name(iteration) if clock is not None else f"iteration {iteration}"
        with phase(f"{name}: solving on {len(keys):,} features",
                   show=self.progress) as progress:
            solution = self._solve(self._datafit(), coef0, bias0)
            kkt_tol = self.inner["kkt_tol"]
            progress.set_status(
                f"objective {solution.objective:.6g}, {int(solution.n_iter):,} inner "
                "iterations" + ("" if kkt_tol is None else
                                f", KKT residual {solution.kkt:.2g} (tol {kkt_tol:g})"))
        solve_seconds = time.perf_counter() - started
        solve_cpu = time.process_time() - cpu_started
        solve_peak = peak_rss_mb()
        _require_finite(solution, self.C, certified=self.inner["kkt_tol"] is not None)
        self.coef, self.bias = coef, bias = solution.coef, solution.bias
        self.decision = solution.decision
        self.lipschitz = (None if solution.lipschitz is None
                          else float(solution.lipschitz))
        if warm is not None:
            warm.record(keys, n_outputs, coef, bias, iteration)

        self.n_nonzero = n_nonzero = _count_nonzero(
            coef, n_outputs, self.features.units_of(keys))
        record = {
            "iteration": iteration,
            "n_features": int(len(keys)),
            "n_nonzero": n_nonzero,
            "n_new": int(len(candidates)),
            "objective": float(solution.objective),
            "inner_iterations": int(solution.n_iter),
            "inner_kkt": float(solution.kkt),
            "inner_converged": bool(solution.converged),
            "score_seconds": pass_stats.seconds,
            "materialize_seconds": materialize_seconds,
            "solve_seconds": solve_seconds,
            # CPU seconds of every thread of this process (not of worker
            # processes): cpu / seconds is the phase's CPU use
            "score_cpu_seconds": score_cpu,
            "solve_cpu_seconds": solve_cpu,
            "scan_nnz": pass_stats.nnz,
            "candidates": int(pass_stats.n_candidates),
            "top_score": float(candidates.scores[0]),
            **{name: int(value) for name, value in pass_stats.details.items()},
        }
        if solve_peak is not None:
            # this process's peak RSS so far at the end of each phase: a
            # phase that raises it holds the run's largest memory
            record.update(score_peak_rss_mb=score_peak,
                          materialize_peak_rss_mb=materialize_peak,
                          solve_peak_rss_mb=solve_peak)
        self.history.append(record)
        self.path.append((coef.copy(), _bias_value(bias)))
        logger.info("iteration %d: %d features, objective %.6g", iteration,
                    len(keys), solution.objective)
        decrease = (self.objective_prev - solution.objective) / self.objective_0
        self.objective_prev = float(solution.objective)
        finished = ""
        budget_reached = n_nonzero >= self.budget
        if budget_reached:
            finished = budget_reason(self.budget)
        elif self.tol > 0 and decrease <= self.tol:
            finished = f"relative objective decrease {decrease:.3g} <= tol={self.tol:g}"
        # the budget depends on max_iter, which a resumed run may raise: the
        # checkpoint does not record it as the end of the run
        self._commit(iteration, "" if budget_reached else finished)
        if self.callback is not None:
            self.callback(record)
        self.iteration += 1
        if finished:
            self._finish(finished)


def budget_reason(budget) -> str:
    """The stop reason of a run that holds its budget of ``budget`` features."""
    return f"holds the budget of B x max_iter = {budget} features with a nonzero weight"


class _MemoryGuard:
    """The projection of ``memory_limit`` (see :func:`fit_fgm`)."""

    def __init__(self, limit):
        if limit is not None and not (isinstance(limit, (int, float, np.integer))
                                      and not isinstance(limit, bool)
                                      and np.isfinite(limit) and limit > 0):
            raise ParameterError(f"memory_limit must be a number of bytes > 0, "
                                 f"got {limit!r}")
        self.limit_mb = None if limit is None else float(limit) / 2**20
        self.last_peak = None
        self.last_cache = 0
        self.growth = 0.0

    def exceeded(self, iteration, cache_bytes):
        """A stop reason when iteration ``iteration`` would pass the limit, else ""."""
        if self.limit_mb is None:
            return ""
        peak = peak_rss_mb()
        held = cache_bytes / 2**20
        cache_growth = max(held - self.last_cache, 0.0)
        if self.last_peak is not None and peak is not None:
            self.growth = max(self.growth, peak - self.last_peak)
        self.growth = max(self.growth, cache_growth)
        self.last_cache = held
        base = peak if peak is not None else held
        self.last_peak = peak
        projected = base + self.growth
        if projected <= self.limit_mb:
            return ""
        return (f"stopped before outer iteration {iteration}: its projected peak "
                f"memory, {projected:,.0f} MB (the peak so far {base:,.0f} MB plus "
                f"{self.growth:,.0f} MB, the largest growth of one iteration), "
                f"would exceed the memory limit of {self.limit_mb:,.0f} MB")


def _nonzero_columns(coef, n_outputs):
    """Bool mask of the columns with a nonzero weight (in any class)."""
    if n_outputs == 1:
        return coef != 0
    return np.any(coef.reshape(-1, n_outputs) != 0, axis=1)


def _count_nonzero(coef, n_outputs, units=None):
    """Number of candidates with a nonzero weight: columns, or with
    ``units`` (the candidate of each column, ``FeatureSpace.units_of``)
    the distinct candidates holding a nonzero column."""
    nonzero = _nonzero_columns(coef, n_outputs)
    if units is None:
        return int(np.count_nonzero(nonzero))
    return int(len(np.unique(np.asarray(units, dtype=np.int64)[nonzero])))


def _bias_value(bias):
    """A float for one output, a float64 array for K."""
    if isinstance(bias, (list, tuple, np.ndarray)):
        return np.array(bias, dtype=np.float64)
    return float(bias)


def _bias_json(bias):
    """``bias`` as JSON: a float or a list of K floats."""
    if isinstance(bias, np.ndarray):
        return [float(b) for b in bias]
    return float(bias)
