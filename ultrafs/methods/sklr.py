"""Sparse kernel logistic regression (seed 001, Qin et al.).

Model (2) of the paper, with the digest's optional unpenalised bias::

    min_{w, b}  sum_i log(1 + exp(-y_i (φ(x_i)' w + c))) + lam ||w||_1

over a kernel basis ``φ``: random Fourier features
(:class:`~ultrafs.features.rff.RandomFourierFeatures`, ``w`` in R^D,
generated on the fly from a seed) or the exact RBF kernel columns on the
training points (:class:`~ultrafs.features.rbf.RBFKernelFeatures`, ``w`` in
R^N, small N).  It does not select input features: its coefficients index
basis functions, and a sparse ``w`` makes prediction cheap.

``lam = lam_ratio * lam_max`` with ``lam_max = ||∇_w f(0, b_0)||_inf`` of
the model actually solved (the digest's correction of the paper's eq. 16).
The problem is solved by one of the l1 solvers of
:mod:`ultrafs.solvers.l1_solvers` to its duality-gap certificate,
optionally in two stages (stage 2 on stage 1's support at ``ratio * lam``).

Sample weights ``s`` (``fit_sklr(sample_weight=...)``) weight each
sample's loss, ``sum_i s_i log(1 + exp(...))``: the datafit carries them
(:class:`~ultrafs.solvers.datafits.Datafit`), so ``lam_max``, every solver
and the duality-gap certificate are the weighted problem's.  The basis is
built from the rows as they are (the median heuristic of σ and the RBF
support points take every row, weights aside).

This module takes a feature space and labels; the faces (API, CLI,
estimator) build both and write the model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.progress import is_showing, phase, showing
from ultrafs.solvers.datafits import Datafit
from ultrafs.solvers.l1_problem import L1Problem
from ultrafs.solvers.l1_solvers import L1_SOLVERS, solve_l1
from ultrafs.solvers.losses import get_loss

__all__ = ["SKLRResult", "fit_sklr", "DEFAULT_TOL", "DEFAULT_MAX_ITER", "BASES",
           "SolverProgress"]

#: the kernel bases by the faces' name (feature-space kinds)
BASES = ("rff", "rbf")
#: the certificate each solver stops on by default (relative duality gap)
DEFAULT_TOL = {"fista": 1e-6, "mfista": 1e-6, "cgd": 1e-6, "sgd": 1e-2}
#: the paper's caps (FISTA 3000, CGD 5000 iterations); SGD-C: epochs
DEFAULT_MAX_ITER = {"fista": 3000, "mfista": 3000, "cgd": 5000, "sgd": 10}


@dataclass
class SKLRResult:
    """What :func:`fit_sklr` returns.

    Attributes
    ----------
    coef : float64 array (M,)
        Over every basis function (zeros included).
    intercept : float
    keys : int64 array
        The basis functions with a nonzero weight, increasing.
    lam, lam_max : float
    solution : L1Solution
        The (last stage's) solution with its certificate.
    stage1 : L1Solution or None
        Stage 1 of the two-stage scheme.
    seconds : float
    history : list of dict
    """

    coef: np.ndarray
    intercept: float
    keys: np.ndarray
    lam: float
    lam_max: float
    solution: object
    stage1: object = None
    seconds: float = 0.0
    history: list = field(default_factory=list)

    @property
    def stop_reason(self) -> str:
        """Why the solver stopped, in words."""
        sol = self.solution
        cert = sol.certificate
        if not len(self.keys) and self.lam >= self.lam_max:
            return f"lam >= lam_max: w = 0 is optimal (relative gap {cert.rel_gap:.2g})"
        if sol.converged:
            return f"relative duality gap {cert.rel_gap:.2g} <= tol"
        return (f"iteration limit reached ({sol.n_iter}); relative duality gap "
                f"{cert.rel_gap:.2g} above tol")


class SolverProgress:
    """The solver's phase on stderr (the ``callback`` of the l1 solvers).

    One :class:`~ultrafs.progress.Phase` over the iterations (SGD-C: the
    epochs), its status the last certified objective and relative duality
    gap against the tolerance, e.g. ``F 1.23456e+04, relative gap 3.2e-05
    (tol 1e-06)``; the second stage of the two-stage scheme goes on the
    same count.

    Parameters
    ----------
    phase : Phase
    tol : float
    """

    def __init__(self, phase, tol):
        self.phase = phase
        self.tol = float(tol)
        self.last = 0
        self.stage = ""

    def __call__(self, record) -> None:
        k = int(record.get("iter", 0))
        if k < self.last:           # the solver started again: stage 2
            self.stage, self.last = "stage 2: ", 0
        step, self.last = k - self.last, k
        status = None
        if "rel_gap" in record:
            status = (f"{self.stage}F {record['objective']:.6g}, relative gap "
                      f"{record['rel_gap']:.2g} (tol {self.tol:g})")
        self.phase.update(step, status=status)


def _describe_operator(operator) -> str:
    """How the basis is held: in memory within its budget, or made per product."""
    size = getattr(operator, "basis_bytes", None)
    if size is None:
        return f"basis {operator.n_rows:,} x {operator.n_coef:,}"
    mib = size / 2 ** 20
    budget = operator.cache_bytes / 2 ** 20
    shape = f"{operator.n_rows:,} x {operator.n_coef:,} float64 ({mib:,.0f} MiB)"
    if operator.cached:
        return f"basis {shape} held in memory (budget {budget:,.0f} MiB)"
    return (f"basis {shape} over its memory budget ({budget:,.0f} MiB): made again "
            "tile by tile at every product")


def check_solver_options(solver, lam_ratio, lam, two_stage, scaling):
    """One-line errors for the options the faces pass, before any pass."""
    if solver not in L1_SOLVERS:
        raise ParameterError(f"unknown solver {solver!r}; known: {', '.join(L1_SOLVERS)}")
    if lam is None:
        if not (isinstance(lam_ratio, (int, float)) and 0 < lam_ratio <= 1):
            raise ParameterError(f"lam_ratio must lie in (0, 1], got {lam_ratio!r}")
    elif not (isinstance(lam, (int, float)) and lam > 0 and np.isfinite(lam)):
        raise ParameterError(f"lam must be a positive number, got {lam!r}")
    if two_stage is not None:
        if not (isinstance(two_stage, (int, float)) and 0 < two_stage <= 1):
            raise ParameterError(f"the two-stage ratio must lie in (0, 1], got {two_stage!r}")
        if solver == "sgd":
            raise ParameterError("the two-stage scheme runs with fista, mfista or cgd")
    if scaling is not None and solver != "mfista":
        raise ParameterError("scaling applies to the mfista solver only")


def fit_sklr(space, y, *, solver="cgd", lam_ratio=0.1, lam=None, two_stage=None,
             fit_intercept=True, tol=None, max_iter=None, scaling=None, seed=0,
             row_chunk=None, cache_bytes=None, progress=False,
             sample_weight=None) -> SKLRResult:
    """Fit sparse kernel logistic regression on a kernel basis.

    Parameters
    ----------
    space : RandomFourierFeatures or RBFKernelFeatures
        The basis over the training store (its ``operator()`` is ``Φ``).
    y : float64 array (N,)
        ±1 labels.
    solver : {"fista", "mfista", "cgd", "sgd"}
    lam_ratio : float in (0, 1]
        ``lam = lam_ratio * lam_max`` (the paper's grid: 0.5, 0.2, 0.1, 0.05).
    lam : float, optional
        The penalty itself (overrides ``lam_ratio``).
    two_stage : float, optional
        ``lam_2 / lam_1`` of the two-stage scheme (the paper's 0.1).
    fit_intercept : bool
        Unpenalised bias (False: the paper's model 2).
    tol, max_iter : optional
        The certificate and cap (:data:`DEFAULT_TOL`, :data:`DEFAULT_MAX_ITER`).
    scaling : {"min", "hessian"}, optional
        mfista's metric: the paper's (7) (default) or (8).
    seed : int
        SGD-C's permutations.
    row_chunk, cache_bytes : optional
        Tiles of the basis operator and its memory budget
        (:class:`~ultrafs.solvers.basis_operator.BasisOperator`: ``Φ`` is
        held in memory when ``N * M * 8 <= cache_bytes``, by default
        :data:`~ultrafs.solvers.basis_operator.DEFAULT_CACHE_BYTES`, 1 GiB).
    progress : bool
        Phases on stderr (:mod:`ultrafs.progress`; also when the caller
        turned them on): the basis and λ_max (how the basis is held), then
        the solver's iterations with their objective and relative duality
        gap against the tolerance (:class:`SolverProgress`).
    sample_weight : array-like of shape (N,), optional
        Per-sample weights of the loss (None: all 1).

    Returns
    -------
    SKLRResult
    """
    check_solver_options(solver, lam_ratio, lam, two_stage, scaling)
    started = time.perf_counter()
    y = np.ascontiguousarray(y, dtype=np.float64)
    with showing(progress or is_showing()), phase("sklr basis and λ_max") as progress_phase:
        operator = space.operator(row_chunk=row_chunk, cache_bytes=cache_bytes)
        datafit = Datafit(get_loss("logistic", "binary"), operator, y, 1.0, sample_weight)
        problem = L1Problem(datafit, 1.0, fit_intercept)
        lam_max = problem.lam_max()
        if lam is None:
            lam = lam_ratio * lam_max
        problem = problem.with_lam(lam)
        progress_phase.set_status(
            f"{_describe_operator(operator)}; λ = {lam:.6g} "
            f"({lam / lam_max if lam_max > 0 else float('nan'):.4g} λ_max)")
    options = {"tol": DEFAULT_TOL[solver] if tol is None else float(tol),
               "max_iter": DEFAULT_MAX_ITER[solver] if max_iter is None else int(max_iter)}
    if solver == "sgd":
        options = {"tol": options["tol"], "max_epochs": options["max_iter"], "seed": seed}
    if scaling is not None:
        options["scaling"] = scaling
    unit = "epoch" if solver == "sgd" else "iteration"
    with showing(progress or is_showing()):
        with phase(f"sklr {solver}", options.get("max_iter", options.get("max_epochs"))
                   * (1 if two_stage is None else 2), unit) as progress_phase:
            if progress_phase.show:
                options["callback"] = SolverProgress(progress_phase, options["tol"])
            out = solve_l1(problem, solver, two_stage_ratio=two_stage, **options)
            coef, bias = out.coef, out.bias
            stage1, solution = None, out
            if two_stage is not None:
                stage1 = out.stage1
                solution = out.stage2 if out.stage2 is not None else out.stage1
            cert = solution.certificate
            progress_phase.set_status(
                f"stopped: F {cert.primal:.6g}, relative gap {cert.rel_gap:.2g} "
                f"({'certified' if solution.converged else 'NOT certified'} at tol "
                f"{options['tol']:g}), {int(np.count_nonzero(coef)):,} nonzero weights")
    history = [{name: value for name, value in record.items()
                if isinstance(value, (int, float)) and not isinstance(value, bool)}
               for record in solution.history]
    keys = np.flatnonzero(coef).astype(np.int64)
    return SKLRResult(coef=np.asarray(coef, dtype=np.float64), intercept=-float(bias),
                      keys=keys, lam=float(lam), lam_max=float(lam_max),
                      solution=solution, stage1=stage1,
                      seconds=time.perf_counter() - started, history=history)
