"""MSLR's reduced minimax by exponential smoothing and coordinate descent.

Seed 000 (Tan, Tsang & Wang, TNNLS 2013), Algorithms 2 and 3.  Given the
cached columns ``X_U`` (n × p) and T constraints ``S_t ⊂ U`` (the top-r
sets of the cutting plane), it solves eq. 10::

    V = min_{α ∈ (0,C)^n} max_t f̃_t(α),    f̃_t(α) = ½‖c_{S_t}(α)‖² + G̃(α),
    c(α) = X_U'(α ⊙ y),   G̃(α) = Σ_i α_i log(α_i/C) + (C−α_i) log((C−α_i)/C)

(the paper's ``f_t`` less the constant ``n C log C``, so ``min_α f̃(α, d) =
−P*(d)``, the optimum of ℓ2-LR without bias on the columns scaled by √d).
The max is smoothed by ``f(α, q) = (1/q) ln Σ_t exp(q f̃_t(α))``
(Proposition 2: ``max_t f̃_t ≤ f(·, q) ≤ max_t f̃_t + ln T / q``), which is
minimised by coordinate descent over the samples (:func:`~ultrafs.kernels.
mslr.cd_sweep`, each coordinate by the Newton–bisection of Algorithm 3),
with q rising from ``q0`` by the factor ``beta`` (the paper's 0.01 and 5/3).

The paper stops "until convergence".  Here every level ends with a
certificate (the digest's A9-5, not in the paper): with
``μ = softmax(q sq)`` the weights of the constraints, ``d = Σ_t μ_t 1_{S_t}``
and the primal point ``v = d ⊙ c(α)``::

    P(v) = ½ Σ_j d_j c_j² + C Σ_i log(1 + exp(−y_i x_i'v))  ≥ P*(d) ≥ −V
    gap  = max_t f̃_t(α) + P(v)  ≥ 0

and the solve stops when ``gap ≤ tol |P(v)|``.  The gap splits into the
smoothing part ``max_t f̃_t − Σ_t μ_t f̃_t`` (≤ ln T / q; it falls as q
rises) and the coordinate-descent part ``Σ_t μ_t f̃_t + P(v)`` (the ℓ2-LR
duality gap of the weighting d; it falls as the sweeps converge): a level
that misses the certificate raises q when the first is above half the
tolerance and tightens the sweeps' tolerance when the second is, so each
step of the schedule is taken only where the certificate needs it.  With
T = 1 there is nothing to smooth and this is ℓ2-LR's dual coordinate
descent (as LIBLINEAR's) with its duality gap.

Sample weights ``s`` make the loss ``C Σ_i s_i log(1 + exp(−y_i x_i'v))``:
the dual box of sample i is ``(0, C s_i)`` (``G̃``'s ``C`` becomes
``C s_i`` per sample, :func:`~ultrafs.kernels.mslr.entropy_weighted`) and
the primal's loss is weighted (:func:`~ultrafs.kernels.mslr.
primal_value_weighted`); the coordinate step is unchanged (it reads each
box from ``α_i + (C s_i − α_i)``).  A sample of weight 0 has the empty box
``α_i = 0``: it is never visited and adds nothing, as if dropped.  Weights
of one give the unweighted solve bit for bit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels.mslr import (cd_sweep, constraint_halves, entropy, entropy_weighted,
                                  primal_value, primal_value_weighted)
from ultrafs.progress import phase
from ultrafs.solvers.certificate import Certificate, SolverResult

__all__ = ["MinimaxSolution", "solve_minimax_smoothing", "constraint_membership",
           "smoothed_value", "Q0", "BETA", "LogisticRows", "ConstraintHull",
           "MinimaxProblem", "solve_minimax"]

#: the paper's initial smoothing parameter and its growth factor
Q0 = 0.01
BETA = 5.0 / 3.0
#: largest q the schedule reaches (the smoothing bias is then ≤ ln T / 1e8)
Q_MAX = 1e8
#: first and smallest tolerance of the sweeps on max_i |∂_i f(α, q)|
CD_TOL0 = 0.1
CD_TOL_MIN = 1e-10
#: 1-D solver: derivative evaluations at most per coordinate
MAX_NEWTON = 100


@dataclass
class MinimaxSolution(SolverResult):
    """What :func:`solve_minimax_smoothing` returns (a
    :class:`~ultrafs.solvers.certificate.SolverResult`: ``objective`` is
    ``primal``, ``n_iter`` the sweeps, no intercept).

    Attributes
    ----------
    alpha, alpha_c : float64 arrays, shape (n,)
        The dual point α and ``C − α`` (both in (0, C)).
    c : float64 array, shape (p,)
        ``c(α) = X_U'(α ⊙ y)``.
    sq : float64 array, shape (T,)
        ``½‖c_{S_t}(α)‖²`` of every constraint.
    mu : float64 array, shape (T,)
        Constraint weights ``softmax(q sq)`` at the final q (sum 1).
    d : float64 array, shape (p,)
        ``Σ_t μ_t 1_{S_t}``, in [0, 1].
    coef : float64 array, shape (p,)
        The classifier ``v = d ⊙ c(α)`` (no bias; decision ``X_U v``).
    upper : float
        ``max_t f̃_t(α)`` ≥ V.
    primal : float
        ``P(v)`` ≥ −V.
    gap, rel_gap : float
        ``upper + primal`` and ``gap / |primal|``.
    certified : bool
        ``rel_gap <= tol`` was reached.
    q : float
        The final smoothing parameter.
    n_levels, n_sweeps, n_newton : int
        q levels, coordinate-descent sweeps and 1-D derivative evaluations.
    violation : float
        ``max_i |∂_i f(α, q)|`` of the last sweep.
    seconds : float
    tol : float
        The relative gap asked for.
    """

    alpha: np.ndarray
    alpha_c: np.ndarray
    c: np.ndarray
    sq: np.ndarray
    mu: np.ndarray
    d: np.ndarray
    coef: np.ndarray
    upper: float
    primal: float
    gap: float
    rel_gap: float
    certified: bool
    q: float
    n_levels: int
    n_sweeps: int
    n_newton: int
    violation: float
    seconds: float
    tol: float = math.nan

    @property
    def intercept(self) -> float:
        """0: the reduced problem has no bias."""
        return 0.0

    @property
    def objective(self) -> float:
        """``P(v)``, the primal value of the classifier."""
        return self.primal

    @property
    def n_iter(self) -> int:
        """Coordinate-descent sweeps."""
        return self.n_sweeps

    @property
    def history(self) -> list:
        """No record per sweep is kept."""
        return []

    @property
    def certificate(self) -> Certificate:
        """``rel_gap`` against ``tol`` (kind ``duality_gap``)."""
        return Certificate(kind="duality_gap", value=float(self.rel_gap),
                           tol=float(self.tol), passed=bool(self.certified))


def constraint_membership(constraints, n_columns):
    """CSR of column → constraints from the constraints' column lists.

    Parameters
    ----------
    constraints : list of int arrays
        The columns (0..n_columns−1) of each constraint.
    n_columns : int

    Returns
    -------
    member_ptr, member_idx : int64 arrays
    """
    cols = [np.asarray(s, dtype=np.int64) for s in constraints]
    if not cols:
        return np.zeros(n_columns + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    col = np.concatenate(cols)
    if len(col) and (col.min() < 0 or col.max() >= n_columns):
        raise ParameterError("a constraint names a column outside the cache")
    con = np.concatenate([np.full(len(s), t, dtype=np.int64) for t, s in enumerate(cols)])
    order = np.lexsort((con, col))
    counts = np.bincount(col, minlength=n_columns)
    member_ptr = np.zeros(n_columns + 1, dtype=np.int64)
    np.cumsum(counts, out=member_ptr[1:])
    return member_ptr, con[order]


def _softmax(values):
    top = float(np.max(values))
    e = np.exp(values - top)
    return e / float(np.sum(e))


def solve_minimax_smoothing(indptr, indices, data, y, constraints, C, *, alpha0=None,
                            alpha_c0=None, tol=1e-4, q0=Q0, beta=BETA, q_max=Q_MAX,
                            max_sweeps=20000, seed=0, sample_weight=None):
    """Solve MSLR's reduced minimax (eq. 10) on cached columns.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of ``X_U`` (n rows, p columns).
    y : float64 array, shape (n,)
        ±1 labels.
    constraints : list of int arrays
        The columns of each constraint ``S_t`` (T ≥ 1 lists; columns may be
        in several).
    C : float
        The loss weight (> 0).
    alpha0, alpha_c0 : float64 arrays, optional
        Warm start α and ``C − α`` (in (0, C)); default ``min(1, C/2)``
        for every sample (the paper's α = 1, kept inside the box).  With
        sample weights: in ``(0, C s_i)`` (0 where ``s_i = 0``), default
        ``s_i min(1, C/2)``.
    tol : float
        Relative duality gap that certifies the solution.
    q0, beta, q_max : float
        The smoothing schedule.
    max_sweeps : int
        Coordinate-descent sweeps at most (all levels).
    seed : int
        Seed of the sweeps' row orders (a permutation per sweep; with
        sample weights, of the rows of positive weight).
    sample_weight : float64 array, shape (n,), optional
        ``s_i >= 0`` (not all 0): the loss of sample i is weighted by
        ``s_i`` (see the module docstring).

    Returns
    -------
    MinimaxSolution
    """
    started = time.perf_counter()
    y = np.ascontiguousarray(y, dtype=np.float64)
    n = y.shape[0]
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    data = np.ascontiguousarray(data, dtype=np.float64)
    if len(indptr) != n + 1:
        raise ParameterError(f"the cached rows ({len(indptr) - 1}) and the labels ({n}) "
                             "differ in number")
    p = int(indices.max()) + 1 if len(indices) else 0
    p = max(p, max((int(np.max(s)) + 1 for s in constraints if len(s)), default=0))
    T = len(constraints)
    if T < 1:
        raise ParameterError("the reduced problem needs at least one constraint")
    C = float(C)
    if not (np.isfinite(C) and C > 0):
        raise ParameterError(f"C must be > 0, got {C!r}")
    member_ptr, member_idx = constraint_membership(constraints, p)
    weights = None
    if sample_weight is not None:
        from ultrafs.solvers.datafits import check_sample_weight

        weights = check_sample_weight(sample_weight, n)
    if alpha0 is None and weights is None:
        start = min(1.0, 0.5 * C)
        alpha = np.full(n, start)
        alpha_c = np.full(n, C - start)
    elif alpha0 is None:
        alpha = min(1.0, 0.5 * C) * weights
        alpha_c = C * weights - alpha
    else:
        alpha = np.array(alpha0, dtype=np.float64)
        bounds = C if weights is None else C * weights
        alpha_c = (bounds - alpha) if alpha_c0 is None else np.array(alpha_c0,
                                                                    dtype=np.float64)
        inside = (alpha > 0) & (alpha_c > 0)
        if weights is not None:       # a zero weight's box is {0}
            inside |= (weights == 0) & (alpha == 0) & (alpha_c == 0)
        if not np.all(inside):
            raise ParameterError("the warm start must lie inside the box (0, C)")
    active = None if weights is None else np.flatnonzero(weights > 0).astype(np.int64)
    c = _correlations(indptr, indices, data, y, alpha, p)
    rng = np.random.default_rng(seed)
    q = float(q0)
    cd_tol = CD_TOL0
    sweeps = newton = levels = 0
    violation = np.inf
    with phase(f"MSLR subproblem: smoothing CD on {n:,} rows x {p:,} features", None,
               "sweep") as progress:
        while True:
            levels += 1
            while sweeps < max_sweeps:
                # sq from c afresh each sweep: the in-place updates drift
                sq = constraint_halves(c, member_ptr, member_idx, T)
                order = (rng.permutation(n).astype(np.int64) if active is None
                         else active[rng.permutation(len(active))])
                violation, used = cd_sweep(indptr, indices, data, y, member_ptr, member_idx,
                                           alpha, alpha_c, c, sq, q, cd_tol, MAX_NEWTON,
                                           order)
                sweeps += 1
                newton += int(used)
                progress.update(1)
                if violation <= cd_tol:
                    break
            # c afresh from α: the certificate must not carry the sweeps' drift
            c = _correlations(indptr, indices, data, y, alpha, p)
            cert = _certificate(indptr, indices, data, y, alpha, alpha_c, c, member_ptr,
                                member_idx, T, q, C, weights)
            half = 0.5 * tol * abs(cert["primal"])
            done = cert["gap"] <= 2.0 * half
            progress.set_status(f"relative gap {cert['gap'] / max(abs(cert['primal']), 1e-300):.2g}"
                                f" (tol {tol:g}), smoothing q {q:.3g}, {T} constraint"
                                f"{'s' if T != 1 else ''}")
            if done or sweeps >= max_sweeps or (q >= q_max and cd_tol <= CD_TOL_MIN):
                break
            if cert["smoothing"] > half and q < q_max:
                q = min(q * beta, q_max)
            if cert["descent"] > half or q >= q_max:
                cd_tol = max(cd_tol * 0.1, CD_TOL_MIN)
    return MinimaxSolution(
        alpha=alpha, alpha_c=alpha_c, c=c, sq=cert["sq"], mu=cert["mu"], d=cert["d"], coef=cert["v"],
        upper=cert["upper"], primal=cert["primal"], gap=cert["gap"],
        rel_gap=cert["gap"] / max(abs(cert["primal"]), np.finfo(float).tiny),
        certified=bool(done), q=q, n_levels=levels, n_sweeps=sweeps, n_newton=newton,
        violation=float(violation), seconds=time.perf_counter() - started, tol=float(tol))


@dataclass(frozen=True)
class LogisticRows:
    """MSLR's datafit: ``C Σ_i log(1 + exp(−y_i x_i'v))`` over CSR rows, no bias.

    Attributes
    ----------
    indptr, indices, data : CSR arrays of ``X_U`` (n rows)
    y : float64 array (n,)
        ±1 labels.
    C : float
    sample_weight : float64 array (n,) or None
        Per-sample weights of the loss (None: all 1).
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    y: np.ndarray
    C: float
    sample_weight: np.ndarray | None = None

    name = "logistic-rows"


@dataclass(frozen=True)
class ConstraintHull:
    """MSLR's penalty: ``min_{d ∈ conv{1_{S_t}}} ½ Σ_j v_j² / d_j``.

    The constraint sets ``S_t`` (column lists); its dual is the max over
    the constraints of eq. 10.
    """

    constraints: tuple

    name = "constraint-hull"


@dataclass(frozen=True)
class MinimaxProblem:
    """MSLR's reduced problem (eq. 10): a :class:`LogisticRows` datafit and a
    :class:`ConstraintHull` penalty."""

    datafit: LogisticRows
    penalty: ConstraintHull


def solve_minimax(problem, *, start=None, **options):
    """:func:`solve_minimax_smoothing` on a :class:`MinimaxProblem`.

    Parameters
    ----------
    problem : MinimaxProblem
    start : MinimaxSolution, optional
        Warm start: its ``alpha``, ``alpha_c`` and (unless ``q0`` is given)
        its final ``q``.
    **options
        ``tol``, ``q0``, ``beta``, ``q_max``, ``max_sweeps``, ``seed``.

    Returns
    -------
    MinimaxSolution
    """
    d = problem.datafit
    if start is not None:
        options.update(alpha0=start.alpha, alpha_c0=start.alpha_c)
        options.setdefault("q0", start.q)
    return solve_minimax_smoothing(d.indptr, d.indices, d.data, d.y,
                                   list(problem.penalty.constraints), d.C,
                                   sample_weight=d.sample_weight, **options)


def _correlations(indptr, indices, data, y, alpha, p):
    """``c = X'(α ⊙ y)`` from CSR rows."""
    weights = np.repeat(alpha * y, np.diff(indptr))
    return np.bincount(indices, weights=data * weights, minlength=p).astype(np.float64)


def _certificate(indptr, indices, data, y, alpha, alpha_c, c, member_ptr, member_idx,
                 T, q, C, weights=None):
    """The gap of the module docstring and its two parts."""
    sq = constraint_halves(c, member_ptr, member_idx, T)
    g = entropy(alpha, alpha_c, C) if weights is None else entropy_weighted(
        alpha, alpha_c, C * weights)
    mu = _softmax(q * sq)
    counts = np.diff(member_ptr)
    owner = np.repeat(np.arange(len(counts)), counts)
    d = np.bincount(owner, weights=mu[member_idx], minlength=len(c))
    d = np.minimum(d, 1.0)
    v = d * c
    loss = (primal_value(indptr, indices, data, y, v, C) if weights is None
            else primal_value_weighted(indptr, indices, data, y, v, C, weights))
    primal = 0.5 * float(np.sum(d * c * c)) + loss
    upper = float(np.max(sq)) + g
    mixed = float(np.sum(mu * sq)) + g
    gap = max(upper + primal, 0.0)
    return {"sq": sq, "mu": mu, "d": d, "v": v, "primal": primal, "upper": upper, "gap": gap,
            "smoothing": upper - mixed, "descent": mixed + primal}


def smoothed_value(sq, entropy_value, q) -> float:
    """``f(α, q) = G̃ + (1/q) ln Σ_t exp(q sq_t)`` (Proposition 2's function)."""
    sq = np.asarray(sq, dtype=np.float64)
    top = float(np.max(sq))
    return entropy_value + top + math.log(float(np.sum(np.exp(q * (sq - top))))) / q
