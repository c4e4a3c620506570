"""Slores: safe screening for ℓ1-regularised logistic regression (seed 004).

Wang, Zhou, Liu, Wonka & Ye, "A Safe Screening Rule for Sparse Logistic
Regression", NIPS 2013; the formulas as rebuilt and checked in
``shared/notes/mslr-slores.md`` Part B (the paper's text is a broken
extraction).  The problem, with n samples, labels ``y`` in {±1} and an
unpenalised intercept ``c``::

    min_{β, c}  (1/n) Σ_i log(1 + exp(−y_i (x_i'β + c)))  +  λ ||β||_1

and its dual over θ ∈ (0, 1)^n, ``<θ, y> = 0``, ``|x̄_j'θ| <= nλ`` with
``x̄_j = y ⊙ x_j`` (θ_i is the predicted probability of the wrong label).
Slores bounds ``|x̄_j'θ*_λ|`` over a region that provably holds θ*_λ
(a ball around a reference dual point, cut by ``<θ, y> = 0`` and by the
constraint of one active column j0) and discards feature j when the bound
is below nλ: then β*_j = 0.

What this module holds, all O(p) vector operations once the statistics
are known (no pass over the data):

* :class:`SloresStatistics` and :func:`slores_statistics`: the per-feature
  quantities of the rule, from two streamed passes over a store plus the
  fetch of column j0 (:func:`ultrafs.scoring.statistics.feature_statistics`,
  so identical for any block size and scheduler);
* :class:`DualRegion`: a region 𝒜 (centre correlations, radius, the cut of
  column j0) with the rounding bounds of its sums;
* :func:`basic_region` (Theorem 2 at λ0 = λ_max, the paper's rule) and
  :func:`sequential_region` (any primal point: the digest's inexact-safe
  radius, which is the duality-gap sphere ``r² = (n/2)·gap``, so it stays
  safe when the previous solution is only approximate);
* :func:`region_bounds` (Theorem 8 in the digest's stable form: no division
  by a2 → 0 as d → 1) and :func:`slores_keep` (Algorithm 1, with the tie
  tolerance, constant columns dropped by Theorem 4 and j0 always kept).

Sample weights (``slores_statistics(sample_weight=...)``) give the
weighted problem's statistics; the regions read them from the statistics
(the derivation: :mod:`ultrafs.methods.l1_weights`).

The rule is safe in exact arithmetic; rounding is covered by a tie
tolerance (``rtol``) and a priori bounds of the summation errors, and the
path solver (:mod:`ultrafs.methods.l1_path`) checks the KKT conditions of
every discarded feature after each solve anyway.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels.slores import (BALL, GENERAL, POINT,
                                    largest_shifted_correlation, slores_bounds,
                                    slores_keep_columns)
from ultrafs.methods.l1_weights import (class_totals, path_weights, weighted_cut,
                                        weighted_dual_objective,
                                        weighted_primal_objective,
                                        weighted_statistics, weighted_theta_max)

__all__ = ["SloresStatistics", "DualRegion", "slores_statistics",
           "basic_region", "sequential_region", "region_bounds",
           "slores_keep", "labels_pm1", "theta_max", "dual_objective",
           "radius_at_lambda_max", "primal_objective", "DEFAULT_RTOL"]

#: relative tie tolerance of the keep test (digest B8-1)
DEFAULT_RTOL = 1e-9
_EPS = np.finfo(np.float64).eps


def labels_pm1(y) -> np.ndarray:
    """Labels as float64 ±1, refusing anything else or a single class."""
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.size == 0:
        raise ParameterError("ℓ1 logistic regression needs at least one sample")
    if not np.all((y == 1.0) | (y == -1.0)):
        raise ParameterError("labels must be -1 or +1 for ℓ1 logistic regression")
    n_pos = int((y > 0).sum())
    if n_pos == 0 or n_pos == y.size:
        raise ParameterError(
            "ℓ1 logistic regression needs both classes; the labels hold only "
            + ("+1" if n_pos else "-1"))
    return y


def theta_max(y, sample_weight=None) -> np.ndarray:
    """θ*_{λ_max} (eq. 2): n⁻/n on positive samples, n⁺/n on negative ones
    (with sample weights: S⁻/S and S⁺/S, :mod:`ultrafs.methods.l1_weights`)."""
    if sample_weight is not None:
        return weighted_theta_max(y, sample_weight)
    n = y.size
    n_pos = float((y > 0).sum())
    return np.where(y > 0, (n - n_pos) / n, n_pos / n)


def _entropy_terms(theta) -> np.ndarray:
    """``f(θ) = θ log θ + (1 − θ) log(1 − θ)`` per element (0 log 0 = 0)."""
    theta = np.asarray(theta, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(theta > 0, theta * np.log(theta), 0.0)
        b = np.where(theta < 1, (1.0 - theta) * np.log1p(-theta), 0.0)
    return a + b


def dual_objective(theta, sample_weight=None) -> float:
    """The dual value ``−g(θ) = −(1/n) Σ_i f(θ_i)`` (to be maximised; with
    sample weights ``−(1/n) Σ_i w_i f(θ_i)``)."""
    if sample_weight is not None:
        return weighted_dual_objective(theta, sample_weight)
    return float(-_entropy_terms(theta).sum() / theta.size)


def primal_objective(decision, y, lam, l1_norm, sample_weight=None) -> float:
    """``(1/n) Σ log(1 + exp(−y_i f_i)) + λ ||β||_1``, overflow-free (with
    sample weights ``(1/n) Σ w_i log(...)``)."""
    if sample_weight is not None:
        return weighted_primal_objective(decision, y, lam, l1_norm, sample_weight)
    return float(np.logaddexp(0.0, -y * decision).mean() + lam * l1_norm)


def _kl_bernoulli(p, q) -> np.ndarray:
    """``KL(Bern(p) || Bern(q))`` for p = s·q with 0 < s <= 1 (log1p form)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(p > 0, p * np.log(p / q), 0.0)
        second = (1.0 - p) * np.log1p((q - p) / (1.0 - q))
    return first + second


def radius_at_lambda_max(n_pos, n_neg, ratio) -> float:
    """Theorem 2's radius at λ0 = λ_max for ``ratio = λ/λ_max`` in (0, 1].

    ``r² = ½ [n⁺ KL(s a || a) + n⁻ KL(s (1−a) || 1−a)]`` with a = n⁻/n:
    the closed form of the digest with the first-order terms (which cancel
    exactly, ``<∇g(θ_max), θ_max> = 0``) removed, so it keeps its relative
    accuracy as ratio → 1 (pitfall B8-7).
    """
    n = n_pos + n_neg
    a = np.array([n_neg / n, n_pos / n])
    kl = _kl_bernoulli(ratio * a, a)
    r2 = 0.5 * (n_pos * kl[0] + n_neg * kl[1])
    return float(np.sqrt(max(r2, 0.0)))


@dataclass(frozen=True)
class SloresStatistics:
    """Per-feature quantities of the rule (digest B4), p = store columns.

    Attributes
    ----------
    n_samples, n_pos, n_neg : int
    lambda_max : float
        ``max_j |x̄_j'θ_max| / n`` (eq. 1).
    s_max : float64 array, shape (p,)
        ``x̄_j'θ_max``, the dual correlations at λ_max.
    colsum : float64 array, shape (p,)
        ``Σ_i x_ij`` (``<x̄_j, y>``, for moving a centre into y^⊥).
    sum_squares : float64 array, shape (p,)
        ``Σ_i x_ij²`` (the a priori bounds of the summation errors).
    norm2 : float64 array, shape (p,)
        ``||P x̄_j||² = Σ_i (x_ij − x̄_j)²``, centred in two passes.
    constant : bool array, shape (p,)
        Columns whose n values are all equal (min == max, decided exactly):
        β*_j = 0 for every λ (Theorem 4; all-zero columns included).
    j0 : int
        ``argmax_j |s_max_j|`` (the first feature to enter; ties by column
        number).  ``s_max`` and ``cut`` are exactly 0 on constant columns.
    j0_sign : float
        ``sign(s_max[j0])``.
    cut : float64 array, shape (p,)
        ``B_j = <P x̄_j, P x̄*>`` with ``x̄* = sign · x̄_{j0}`` (eq. 8).
    cut_norm2 : float
        ``A = ||P x̄*||²``.
    theta_max_norm : float
        ``||w ⊙ θ_max||`` (``||θ_max||`` without weights): the rounding
        bound of ``s_max``.
    seconds : float
        Time of the two passes and the fetch.
    n_passes : int
    sample_weight : float64 array, shape (n,), or None
        The weights of the problem (:mod:`ultrafs.methods.l1_weights`);
        then ``n_pos``/``n_neg`` still count rows, ``s_max`` is
        ``x̄_j'(w ⊙ θ_max)``, ``colsum`` ``Σ_i w_i x_ij``, ``norm2`` the
        weighted centred sum of squares, ``constant`` means constant on the
        rows of positive weight, and ``cut``/``cut_norm2`` are the
        weighted cut's ``B_j = Σ_i w_i x_ij c_i`` and ``A = Σ_i w_i c_i²``.
    class_weight_totals : (float, float) or None
        ``(S⁺, S⁻)`` with weights.
    cut_pass_norm : float or None
        ``||w ⊙ c||``, the norm of the cut pass's weights, with weights.
    """

    n_samples: int
    n_pos: int
    n_neg: int
    lambda_max: float
    s_max: np.ndarray
    colsum: np.ndarray
    sum_squares: np.ndarray
    norm2: np.ndarray
    constant: np.ndarray
    j0: int
    j0_sign: float
    cut: np.ndarray
    cut_norm2: float
    theta_max_norm: float
    seconds: float = 0.0
    n_passes: int = 2
    sample_weight: np.ndarray | None = None
    class_weight_totals: tuple | None = None
    cut_pass_norm: float | None = None

    @property
    def n_features(self) -> int:
        return int(self.s_max.shape[0])

    @property
    def total_pos(self):
        """``n⁺`` (``S⁺`` with weights)."""
        return self.n_pos if self.sample_weight is None else self.class_weight_totals[0]

    @property
    def total_neg(self):
        """``n⁻`` (``S⁻`` with weights)."""
        return self.n_neg if self.sample_weight is None else self.class_weight_totals[1]

    @property
    def cut_weights_norm(self) -> float:
        """``||y ⊙ P x̄*|| = √A`` (the weights of the cut's pass; with
        sample weights ``||w ⊙ c||``)."""
        if self.cut_pass_norm is not None:
            return self.cut_pass_norm
        return float(np.sqrt(self.cut_norm2))

    @functools.cached_property
    def column_norms(self) -> np.ndarray:
        """``||x_j||`` (computed once)."""
        return np.sqrt(self.sum_squares)

    @functools.cached_property
    def largest_colsum(self) -> float:
        """``max_j |Σ_i x_ij|`` (computed once)."""
        return float(np.abs(self.colsum).max()) if self.colsum.size else 0.0

    @functools.cached_property
    def largest_norm(self) -> float:
        """``max_j ||x_j||`` (computed once)."""
        return float(self.column_norms.max()) if self.colsum.size else 0.0


def centred_column(values, rows, n_samples, sign=1.0):
    """``sign · (x_j − mean(x_j))`` as a dense (n,) vector from CSC pieces."""
    column = np.zeros(n_samples, dtype=np.float64)
    column[rows] = values
    return sign * (column - column.sum() / n_samples)


def slores_statistics(store, y=None, *, block_size=None, scheduler=None,
                      num_workers=None, progress_label=None,
                      sample_weight=None) -> SloresStatistics:
    """The statistics of the rule, in two streamed passes and one fetch.

    Pass 1: ``s_max = X̄'θ_max``, column sums, sums of squares, centred
    sums of squares and min/max; then j0 = argmax |s_max| and the fetch of
    its column; pass 2: ``B = X̄' P x̄*``.  Both passes are
    :func:`~ultrafs.scoring.statistics.feature_statistics`: the same bits
    for any block size, scheduler and worker count.

    Parameters
    ----------
    store : ColumnStore
    y : array of ±1, optional
        Labels (default: the store's).
    block_size, scheduler, num_workers, progress_label
        As for the scoring passes.
    sample_weight : array of shape (n,), optional
        The weighted problem's statistics (:mod:`ultrafs.methods.l1_weights`:
        pass 1 is :func:`~ultrafs.methods.l1_weights.weighted_statistics`);
        weights all 1 are no weights.

    Raises
    ------
    ParameterError
        One line for labels that are not ±1 or hold one class, or a store
        without columns.
    """
    import time

    from ultrafs.scoring.statistics import feature_statistics

    started = time.perf_counter()
    y = labels_pm1(store.read_labels() if y is None else y)
    n = y.size
    if n != store.n_samples:
        raise ParameterError(f"{n} labels for a store of {store.n_samples} rows")
    if store.n_features == 0:
        raise ParameterError("the store has no columns to screen")
    run = dict(block_size=block_size, scheduler=scheduler, num_workers=num_workers,
               progress_label=progress_label)
    w = path_weights(sample_weight, y)
    if w is not None:
        return _weighted_slores_statistics(store, y, w, run, started)
    t_max = theta_max(y)
    first = feature_statistics(
        store, ("sum", "sum_squares", "centred_sum_squares", "min", "max",
                "weighted_sum"), weights=t_max * y, **run)
    constant = first["min"] == first["max"]
    # a constant column's correlation with any θ in y^⊥ is exactly 0
    # (Theorem 4); its computed value is rounding noise of size n ε |x|,
    # which must neither become j0 nor set λ_max
    s_max = np.where(constant, 0.0, first["weighted_sum"])
    j0 = int(np.argmax(np.abs(s_max)))
    sign = 1.0 if s_max[j0] >= 0 else -1.0
    col = store.read_columns(np.array([j0], dtype=np.int64))
    # y ⊙ P x̄* = sign · (x_j0 − mean): the projection is the centring
    cut_weights = centred_column(col.values(np.float64), col.indices, n, sign)
    second = feature_statistics(store, ("weighted_sum",), weights=cut_weights, **run)
    cut = np.where(constant, 0.0, second["weighted_sum"])
    n_pos = int((y > 0).sum())
    return SloresStatistics(
        n_samples=n, n_pos=n_pos, n_neg=n - n_pos,
        lambda_max=float(np.abs(s_max[j0]) / n), s_max=s_max,
        colsum=first["sum"], sum_squares=first["sum_squares"],
        norm2=np.maximum(first["centred_sum_squares"], 0.0),
        constant=constant, j0=j0, j0_sign=sign, cut=cut,
        cut_norm2=_sum_of_squares(cut_weights),
        theta_max_norm=float(np.sqrt(_sum_of_squares(t_max))),
        seconds=time.perf_counter() - started, n_passes=2)


def _weighted_slores_statistics(store, y, w, run, started) -> SloresStatistics:
    """:func:`slores_statistics` of the weighted problem (module
    :mod:`ultrafs.methods.l1_weights` for the formulas)."""
    import time

    from ultrafs.scoring.statistics import feature_statistics

    n = y.size
    t_max = weighted_theta_max(y, w)
    first = weighted_statistics(store, y, w, t_max, **run)
    constant = first["constant"]
    s_max = np.where(constant, 0.0, first["s_max"])
    j0 = int(np.argmax(np.abs(s_max)))
    sign = 1.0 if s_max[j0] >= 0 else -1.0
    col = store.read_columns(np.array([j0], dtype=np.int64))
    cut_weights, cut_norm2, cut_pass_norm = weighted_cut(
        col.values(np.float64), col.indices, n, sign, w)
    second = feature_statistics(store, ("weighted_sum",), weights=cut_weights, **run)
    cut = np.where(constant, 0.0, second["weighted_sum"])
    n_pos = int((y > 0).sum())
    return SloresStatistics(
        n_samples=n, n_pos=n_pos, n_neg=n - n_pos,
        lambda_max=float(np.abs(s_max[j0]) / n), s_max=s_max,
        colsum=first["colsum"], sum_squares=first["sum_squares"],
        norm2=np.where(constant, 0.0, first["norm2"]),
        constant=constant, j0=j0, j0_sign=sign, cut=cut, cut_norm2=cut_norm2,
        theta_max_norm=float(np.sqrt(_sum_of_squares(w * t_max))),
        seconds=time.perf_counter() - started, n_passes=2, sample_weight=w,
        class_weight_totals=class_totals(y, w), cut_pass_norm=cut_pass_norm)


@dataclass(frozen=True)
class DualRegion:
    """A region 𝒜 holding θ*_λ (digest B2, B5), for :func:`region_bounds`.

    ``𝒜 = {θ : ||θ − θc|| <= radius, <θ, y> = 0, <θ, x̄*> <= nλ}`` with the
    centre ``θc = θ0 − shift·y`` in y^⊥.  The per-column quantities are
    formed from the statistics column by column (:mod:`ultrafs.kernels.slores`),
    never as p-sized temporaries; :attr:`s`, :attr:`s_error` and
    :attr:`cut_error` build them as arrays for inspection.

    Attributes
    ----------
    lam : float
    radius : float
    s0 : float64 array, shape (p,)
        ``x̄_j'θ0``.
    colsum, norms : float64 arrays, shape (p,)
        ``Σ_i x_ij`` and ``||x_j||`` (the statistics').
    shift : float
        ``<θ0, y>/n``: ``x̄_j'θc = s0_j − shift·colsum_j``.
    s_gamma, shift_gamma : float
        ``s_error_j = s_gamma ||x_j|| + shift_gamma |colsum_j|`` bounds the
        rounding error of ``x̄_j'θc``.
    cut : float64 array, shape (p,)
        ``B_j = <P x̄_j, P x̄*>``.
    cut_gamma : float
        ``cut_error_j = cut_gamma ||x_j||``.
    cut_norm2 : float
        ``A = ||P x̄*||²``.
    d : float
        ``(<θc, x̄*> − nλ) / (radius · √A)``; d >= 1 means a (numerically)
        single point, d <= −1 a cut that misses the ball.
    j0 : int
        The cut's column, always kept.
    stale : (ref_id, reach, current) or None
        Stale columns, ``ref_id[j] != current``: ``s0_j`` is within
        ``slack_j = ||x_j|| reach[ref_id[j]]`` of ``x̄_j'θ0`` and ``B_j`` may
        be another cut's; they get the ball's bound plus the slack
        (:mod:`ultrafs.kernels.slores`).  None: every column's ``s0_j`` and
        ``B_j`` are exact.
    """

    lam: float
    radius: float
    s0: np.ndarray
    colsum: np.ndarray
    norms: np.ndarray
    shift: float
    s_gamma: float
    shift_gamma: float
    cut: np.ndarray
    cut_gamma: float
    cut_norm2: float
    d: float
    j0: int
    stale: tuple | None = None

    @property
    def slack(self) -> np.ndarray:
        """``slack_j`` of every column (−1 where fresh)."""
        if self.stale is None:
            return np.full(self.s0.shape, -1.0)
        ref_id, reach, current = self.stale
        return np.where(ref_id == current, -1.0, self.norms * reach[ref_id])

    @property
    def s(self) -> np.ndarray:
        """``x̄_j'θc`` for every column."""
        return self.s0 - self.shift * self.colsum

    @property
    def s_error(self) -> np.ndarray:
        return self.s_gamma * self.norms + self.shift_gamma * np.abs(self.colsum)

    @property
    def cut_error(self) -> np.ndarray:
        return self.cut_gamma * self.norms

    @property
    def case(self) -> int:
        """Which bound applies (:mod:`ultrafs.kernels.slores`)."""
        if self.radius == 0.0:
            return POINT
        if not (-1.0 < self.d < 1.0 - 1e-12) or self.cut_norm2 <= 0.0:
            return BALL
        return GENERAL


def _sum_of_squares(v) -> float:
    """``Σ v_i²`` without BLAS (its threads stall the driver on a busy
    machine; these vectors are O(n), summed once per λ)."""
    return float(np.sum(v * v))


def _gamma(n):
    """``γ_n = (n + 2) ε``: relative bound of a streamed sum of n products."""
    return (n + 2) * _EPS


def basic_region(stats: SloresStatistics, lam) -> DualRegion:
    """The paper's region at λ0 = λ_max (Theorem 2, closed-form radius).

    Valid for ``0 < lam < stats.lambda_max``.
    """
    lam = float(lam)
    if not 0.0 < lam < stats.lambda_max:
        raise ParameterError(f"the basic rule needs 0 < λ < λ_max = "
                             f"{stats.lambda_max:.6g}, got {lam!r}")
    r = radius_at_lambda_max(stats.total_pos, stats.total_neg, lam / stats.lambda_max)
    n = stats.n_samples
    A = stats.cut_norm2
    d = (n * (stats.lambda_max - lam) / (r * np.sqrt(A))
         if r > 0 and A > 0 else np.inf)
    return DualRegion(lam=lam, radius=r, s0=stats.s_max, colsum=stats.colsum,
                      norms=stats.column_norms, shift=0.0,
                      s_gamma=_gamma(n) * stats.theta_max_norm, shift_gamma=0.0,
                      cut=stats.cut, cut_gamma=_gamma(n) * stats.cut_weights_norm,
                      cut_norm2=A, d=float(d), j0=stats.j0)


def sequential_region(stats: SloresStatistics, lam, *, decision, y, coef_l1,
                      s0, cut=None, cut_norm2=None, j0=None, j0_sign=1.0,
                      s0_largest=None, stale=None, cut_weights_norm=None) -> DualRegion:
    """A region around any primal point (β0, c0): the inexact-safe radius.

    With θ0 = σ(−y ⊙ f0) for the decision values ``f0 = Xβ0 + c0`` and any
    dual-feasible θ̂ for λ, ``||θ*_λ − θ0||² <= (n/2)·gap`` where
    ``gap = P_λ(β0, c0) + g(θ̂)`` (digest B5: the inexact-safe radius equals
    the duality-gap sphere); the centre moves to ``P θ0`` with radius²
    reduced by ``<θ0, y>²/n``.  θ̂ is the better of ``(λ/λ_max) θ_max`` and
    ``P θ0`` scaled into the feasible set.  Safe for any (β0, c0), exact
    or not; the tighter the point, the smaller the region.

    Parameters
    ----------
    stats : SloresStatistics
    lam : float
        The new λ (``0 < lam < λ_max``).
    decision : float64 array, shape (n,)
        ``f0 = Xβ0 + c0``.
    y : float64 array of ±1
    coef_l1 : float
        ``||β0||_1``.
    s0 : float64 array, shape (p,)
        ``x̄_j'θ0`` for every column (a KKT pass).
    cut, cut_norm2, j0, j0_sign : optional
        The column that cuts the ball, ``B_j = <P x̄_j, P x̄*>`` computed in
        the same pass as ``s0`` (default: the statistics' j0 and ``B``).
    s0_largest : float, optional
        ``max_j |s0_j|`` when the caller knows it: the feasible dual point
        is then scaled by an upper bound of ``||X̄'θc||_∞`` formed from
        scalars (``|shift|`` is tiny near an optimum) instead of a pass over
        the p columns.  With ``stale``, it must bound ``max_j |s0_j| +
        slack_j``.
    stale : (ref_id, reach, current), optional
        Stale columns (:class:`DualRegion`): the path's KKT pass leaves the
        correlations of the columns it certified by a bound at older dual
        points.  A stale cut column drops the cut (the ball alone).
    cut_weights_norm : float, optional
        With sample weights, the norm of the given cut's pass weights
        (:func:`~ultrafs.methods.l1_weights.weighted_cut`); default ``√A``.

    With sample weights (``stats.sample_weight``) θ0 is scaled by them
    (:mod:`ultrafs.methods.l1_weights`): ``s0`` holds ``x̄_j'(w ⊙ θ0)``, the
    centre moves by ``<θ0, w ⊙ y>/S`` and the radius² falls by
    ``<θ0, w ⊙ y>²/S``; the dual and primal values are the weighted ones.
    """
    lam = float(lam)
    if not 0.0 < lam < stats.lambda_max:
        raise ParameterError(f"the sequential rule needs 0 < λ < λ_max = "
                             f"{stats.lambda_max:.6g}, got {lam!r}")
    n = stats.n_samples
    decision = np.asarray(decision, dtype=np.float64)
    s0 = np.ascontiguousarray(s0, dtype=np.float64)
    theta0 = 0.5 * (1.0 - np.tanh(0.5 * y * decision))   # σ(−y f), overflow-free
    w = stats.sample_weight
    if w is None:
        off = float(np.sum(theta0 * y))
        shift, total = off / n, n
        s_gamma = _gamma(n) * float(np.sqrt(_sum_of_squares(theta0)))
        inside = (theta0 - shift * y, slice(None))
    else:
        off = float(np.sum(w * theta0 * y))
        total = float(np.sum(w))
        shift = off / total
        s_gamma = _gamma(n) * float(np.sqrt(_sum_of_squares(w * theta0)))
        inside = (theta0 - shift * y, w > 0)     # rows of weight 0 take no part
    centre = inside[0]
    shift_gamma = abs(shift) * _gamma(n)
    # a feasible dual point for λ: the better of two candidates (the second
    # scaled by the correlations' upper bounds, so rounding keeps it feasible)
    candidates = [(lam / stats.lambda_max) * theta_max(y, w)]
    if np.all((centre[inside[1]] > 0) & (centre[inside[1]] < 1)):
        if s0_largest is None:
            top = largest_shifted_correlation(s0, stats.colsum, stats.column_norms,
                                              shift, s_gamma, shift_gamma)
            if stale is not None:
                top += float(np.max(stale[1])) * stats.largest_norm
        else:   # an upper bound of the same maximum
            top = (float(s0_largest) + (abs(shift) + shift_gamma) * stats.largest_colsum
                   + s_gamma * stats.largest_norm)
        scale = 1.0 if top <= n * lam else n * lam / top
        candidates.append(scale * centre)
    best = max(dual_objective(t, w) for t in candidates)
    primal = primal_objective(decision, y, lam, coef_l1, w)
    r2 = 0.5 * n * max(primal - best, 0.0) - off * off / total
    # rounding of the gap's two sums (each O(1) per sample, relative ε n)
    r2 += 0.5 * n * _gamma(n) * (abs(primal) + abs(best) + 1.0)
    r = float(np.sqrt(max(r2, 0.0)))
    if cut is None:
        cut, cut_norm2 = stats.cut, stats.cut_norm2
        j0, j0_sign = stats.j0, stats.j0_sign
        cut_weights_norm = stats.cut_pass_norm
    A = float(cut_norm2)
    if stale is not None:
        stale = (np.ascontiguousarray(stale[0], dtype=np.int32),
                 np.ascontiguousarray(stale[1], dtype=np.float64), int(stale[2]))
        if stale[0][j0] != stale[2]:    # a stale cut column: the ball alone
            A = 0.0
    cut_gamma = _gamma(n) * (float(np.sqrt(A)) if cut_weights_norm is None or A == 0.0
                             else float(cut_weights_norm))
    inner = j0_sign * (s0[j0] - shift * stats.colsum[j0])      # <θc, x̄*>
    d = (inner - n * lam) / (r * np.sqrt(A)) if r > 0 and A > 0 else np.inf
    return DualRegion(lam=lam, radius=r, s0=s0, colsum=stats.colsum,
                      norms=stats.column_norms, shift=shift, s_gamma=s_gamma,
                      shift_gamma=shift_gamma,
                      cut=np.ascontiguousarray(cut, dtype=np.float64),
                      cut_gamma=cut_gamma, cut_norm2=A,
                      d=float(d), j0=int(j0), stale=stale)


_FRESH = (np.zeros(0, dtype=np.int32), np.zeros(1), -1)


def _stale(region):
    return _FRESH if region.stale is None else region.stale


def region_bounds(region: DualRegion, norm2) -> np.ndarray:
    """``T_j >= max_{θ∈𝒜} |x̄_j'θ|`` for every column (Theorem 8, stable form).

    For ξ = ±1 with ``B = −ξ B_j``, ``cos = B / (N_j √A)`` and
    ``D = N_j² A − B²``: case (a) ``cos >= d``: ``T_ξ = r N_j + ξ s_j``;
    case (b): ``T_ξ = (r/√A)(√((1 − d²) D) + d B) + ξ s_j``.  Case (b) grows
    with B, so the rounding error of B is added to B before the bound
    (an upper bound stays an upper bound); ``d >= 1`` (the region is a
    point through rounding) and ``d <= −1`` (the cut misses the ball) fall
    back to the ball-and-hyperplane bound, always valid.  The bound never
    exceeds the ball's ``r N_j + |s_j|`` (plus the rounding of s).  One
    fused loop: :func:`ultrafs.kernels.slores.slores_bounds`.
    """
    norm2 = np.ascontiguousarray(norm2, dtype=np.float64)
    out = np.empty(norm2.shape)
    return slores_bounds(region.s0, region.colsum, region.norms, norm2, region.cut,
                         region.shift, region.s_gamma, region.shift_gamma,
                         region.cut_gamma, float(region.radius),
                         float(region.cut_norm2), float(region.d), region.case, out,
                         *_stale(region))


def slores_keep(stats: SloresStatistics, region: DualRegion | None, lam,
                rtol=DEFAULT_RTOL, candidates=None, columns=None) -> np.ndarray:
    """Algorithm 1: the columns that must enter the solver at ``lam``.

    Parameters
    ----------
    stats : SloresStatistics
    region : DualRegion or None
        From :func:`basic_region` or :func:`sequential_region`; None for
        λ >= λ_max (nothing is kept: β* = 0, Theorem 9.1).
    lam : float
    rtol : float
        Tie tolerance: keep j when
        ``T_j >= nλ − rtol (nλ + r N_j + |s_j|)`` (pitfall B8-1).
    columns : int64 array, optional
        The same as ``candidates``, given as column numbers.
    candidates : bool array, shape (p,), optional
        Test only these columns (e.g. another safe rule's keep set); the
        others are discarded.

    Returns
    -------
    keep : bool array, shape (p,)
        False for constant columns (Theorem 4) and wherever the bound is
        below nλ; True for the region's j0 whenever λ < λ_max (unless
        constant).
    """
    p = stats.n_features
    keep = np.zeros(p, dtype=bool)
    if lam >= stats.lambda_max or region is None:
        return keep
    every = candidates is None and columns is None
    if columns is not None:
        columns = np.ascontiguousarray(columns, dtype=np.int64)
    else:
        columns = (np.zeros(0, dtype=np.int64) if every
                   else np.flatnonzero(candidates).astype(np.int64))
    slores_keep_columns(columns, every, region.s0, region.colsum, region.norms, stats.norm2,
                        stats.constant, region.cut, region.shift, region.s_gamma,
                        region.shift_gamma, region.cut_gamma, float(region.radius),
                        float(region.cut_norm2), float(region.d), region.case,
                        stats.n_samples * float(lam), float(rtol), keep, *_stale(region))
    keep[region.j0] = not stats.constant[region.j0]
    return keep
