"""SGD-C: stochastic gradient descent with the cumulative l1 penalty (seed 001, Algorithm 4).

Tsuruoka, Tsujii & Ananiadou's cumulative penalty with the paper's gradient
averaging (eq. 11), minimising ``F / N`` (per-sample loss ``C s_i l_i``,
per-sample penalty ``lam / N``).  At step ``k`` (1-based, over a fresh
random permutation of the samples each epoch)::

    eta = eta0 * decay^(-(k-1)/N)          # halves every epoch at decay 2
    u  += eta lam / N                      # penalty each weight could have had
    h   = h / k + (k-1)/k ∇l_i(w)          # eq. 11 (the paper's k = 0 divides by 0)
    w  -= eta h
    w_j <- clip towards 0 by u ± q_j;  q_j += applied change

(:func:`ultrafs.kernels.l1_steps.sgdc_steps`).  The clipping makes exact
zeros; ``|q_j| <= u`` holds throughout.  Every coordinate is touched at
every step (no lazy updates, as the paper: kernel features are dense).

``eta0 = "auto"`` picks, from :data:`ETA0_GRID`, the step whose one epoch on
a seeded subsample of at most 2,000 rows reaches the lowest objective (the
digest's §A2.3: the paper's 0.5 stalls about 6% above the optimum on
features of unit-norm rows).

Stop: after each epoch an independent full pass gives ``F`` and the
duality gap (:meth:`L1Problem.certificate`); the run stops when the
relative gap is ``<= tol`` or after ``max_epochs`` epochs.  SGD-C has no
guarantee of reaching a small gap: the certificate says how far it is.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels.l1_steps import sgdc_steps
from ultrafs.solvers.loss_steps import sgdc_steps_generic, step_code
from ultrafs.solvers.l1_problem import L1Solution, make_solution

__all__ = ["sgd_cumulative", "ETA0_GRID"]

#: the steps ``eta0="auto"`` chooses from
ETA0_GRID = (0.5, 5.0, 50.0, 500.0)
#: rows of Φ made dense at a time
ROW_CHUNK = 512
#: rows of the subsample that chooses eta0
TUNE_ROWS = 2000


def _epoch(problem, w, h, q, state, eta0, decay, rng, rows_of, code, n_total):
    """One pass over the samples in a fresh permutation."""
    d = problem.datafit
    weights = np.empty(0) if d.sample_weight is None else d.sample_weight
    order = rng.permutation(d.n)
    for lo in range(0, d.n, ROW_CHUNK):
        idx = np.ascontiguousarray(order[lo:lo + ROW_CHUNK])
        if code is None:
            sgdc_steps_generic(d, rows_of(idx), idx, w, h, q, state, float(eta0),
                               float(decay), float(n_total), problem.lam,
                               problem.fit_intercept)
        else:
            sgdc_steps(rows_of(idx), idx, d.y, weights, w, h, q, state, float(eta0),
                       float(decay), float(n_total), problem.lam, d.C, code,
                       problem.fit_intercept)


def _choose_eta0(problem, w0, b0, decay, seed, code):
    """The step of :data:`ETA0_GRID` with the lowest objective after one epoch on a subsample."""
    from ultrafs.solvers.datafits import Datafit
    from ultrafs.solvers.l1_problem import DenseOperator, L1Problem

    d = problem.datafit
    rng = np.random.default_rng([seed, 1])
    n_sub = min(d.n, TUNE_ROWS)
    rows = np.sort(rng.choice(d.n, n_sub, replace=False))
    Phi = problem.operator.take_rows(rows)
    sub_weights = None if d.sample_weight is None else d.sample_weight[rows]
    y = d.y[rows]
    if np.all(y == y[0]):
        return ETA0_GRID[0], {}
    sub = L1Problem(Datafit(d.loss, DenseOperator(Phi), y, d.C, sub_weights),
                    problem.lam * n_sub / d.n, problem.fit_intercept)
    scores = {}
    for eta0 in ETA0_GRID:
        w = w0.copy()
        h = np.zeros_like(w)
        q = np.zeros_like(w)
        state = np.array([0.0, 0.0, b0, 0.0])
        _epoch(sub, w, h, q, state, eta0, decay, np.random.default_rng([seed, 2]),
               lambda idx: np.ascontiguousarray(Phi[idx]), code, n_sub)
        value = sub.value(w, sub.decision(w, state[2]))
        scores[eta0] = value if np.isfinite(value) else np.inf
    best = min(ETA0_GRID, key=lambda e: (scores[e], e))
    return best, scores


def sgd_cumulative(problem, w0=None, b0=None, *, eta0="auto", decay=2.0, max_epochs=10,
                   tol=1e-2, seed=0, callback=None) -> L1Solution:
    """Solve an :class:`~ultrafs.solvers.l1_problem.L1Problem` by SGD-C.

    Parameters
    ----------
    problem : L1Problem
    w0, b0 : optional
        Warm start.
    eta0 : float or "auto"
        First step (the paper's default is 0.5).
    decay : float > 1
        The paper's ``alpha``: the step is divided by ``decay`` every epoch.
    max_epochs : int
    tol : float
        Stop at a relative duality gap ``<= tol`` (checked after each epoch).
    seed : int
        Seeds the permutations and the subsample of ``eta0="auto"``.
    callback : callable, optional
        Called with each epoch's history record (``iter``, ``objective``,
        ``gap``, ``rel_gap``, ``nnz``).

    Returns
    -------
    L1Solution
        ``n_iter`` counts epochs; ``info`` holds ``eta0``, the tuning
        objectives, ``steps`` and the final cumulative penalty ``u``.
    """
    if not decay > 1:
        raise ParameterError(f"decay must be > 1, got {decay!r}")
    if int(max_epochs) < 1 or not tol >= 0:
        raise ParameterError("max_epochs must be >= 1 and tol >= 0")
    d = problem.datafit
    code = step_code(d.loss)
    w, b = problem.start(w0, b0)
    w = np.ascontiguousarray(w)
    if not w.any() and problem.lam >= problem.lam_max():
        # the zero model is optimal: certified as such, without stochastic
        # steps that would leave noise where 0 is exact
        cert = problem.certificate(w, b)
        return make_solution(problem, w, b, cert, cert.rel_gap <= tol, 0, "sgd",
                             [{"iter": 0, "objective": cert.primal, "gap": cert.gap,
                               "rel_gap": cert.rel_gap, "nnz": 0}],
                             {"eta0": None, "eta0_objectives": {}, "steps": 0,
                              "u": 0.0, "max_abs_q": 0.0}, tol=tol)
    tuning = {}
    if isinstance(eta0, str):
        if eta0 != "auto":
            raise ParameterError(f"eta0 must be a positive number or 'auto', got {eta0!r}")
        eta0, tuning = _choose_eta0(problem, w, b, decay, seed, code)
    eta0 = float(eta0)
    if not eta0 > 0:
        raise ParameterError(f"eta0 must be > 0, got {eta0!r}")
    h = np.zeros_like(w)
    q = np.zeros_like(w)
    state = np.array([0.0, 0.0, b, 0.0])
    rng = np.random.default_rng([seed, 0])
    history = []
    cert = None
    converged = False
    epoch = 0
    for epoch in range(1, int(max_epochs) + 1):
        _epoch(problem, w, h, q, state, eta0, decay, rng, problem.operator.take_rows,
               code, d.n)
        cert = problem.certificate(w, state[2])
        history.append({"iter": epoch, "objective": cert.primal, "gap": cert.gap,
                        "rel_gap": cert.rel_gap, "nnz": int(np.count_nonzero(w))})
        if callback is not None:
            callback(history[-1])
        if cert.rel_gap <= tol:
            converged = True
            break
    info = {"eta0": eta0, "eta0_objectives": {str(k): v for k, v in tuning.items()},
            "steps": int(state[0]), "u": float(state[1]),
            "max_abs_q": float(np.max(np.abs(q))) if len(q) else 0.0}
    return make_solution(problem, w.copy(), float(state[2]), cert, converged, epoch,
                         "sgd", history, info, tol=tol)
