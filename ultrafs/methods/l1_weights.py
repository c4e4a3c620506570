"""Sample weights of the ℓ1-logistic path: the weighted problem's pieces.

With sample weights ``w_i >= 0`` (``sample_weight`` times the per-class
``class_weight``, :mod:`ultrafs.methods.targets`) the path solves::

    min_{β, c}  (1/n) Σ_i w_i log(1 + exp(−y_i (x_i'β + c)))  +  λ ||β||_1

FGM's convention (``C Σ_i s_i l_i``, the raw weights, no normalisation):
scikit-learn's ``C = 1/(nλ)`` is the same C as FGM's and as
``LogisticRegression(C=..., sample_weight=...)``; all weights 1 is the
unweighted problem, and an integer weight k is a row repeated k times at
the same C (so at the same λ/λ_max; λ itself scales with n).

Its dual, over θ ∈ [0, 1]^n (Fenchel: ``log(1 + e^{−m}) = max_t H(t) −
t m``, H the binary entropy)::

    max_θ  (1/n) Σ_i w_i H(θ_i)   s.t.  Σ_i w_i y_i θ_i = 0,
                                         |Σ_i w_i y_i x_ij θ_i| <= nλ,

so every quantity of the unweighted rule holds with the dual variable
θ_i scaled by w_i: the correlations are ``x̄_j'(w ⊙ θ)``, the KKT check
is ``|x̄_j'(w ⊙ θ̂)| <= nλ``, θ_max is ``S⁻/S`` on positive samples and
``S⁺/S`` on negative ones (``S^± = Σ_{y_i = ±1} w_i``, ``S = S⁺ + S⁻``),
and λ_max is ``max_j |x̄_j'(w ⊙ θ_max)| / n``.  For Slores's geometry the
variable is ``u = √w ⊙ θ``: the weighted dual objective is strongly
concave with modulus 4/n in ``||u||`` (``H'' <= −4``), so the gap sphere
``||u* − u0||² <= (n/2)·gap`` holds as before; the hyperplane is
``<u, √w ⊙ y> = 0`` (normal of norm² S, so the centre moves by
``<θ0, w ⊙ y>/S`` and the radius² falls by ``<θ0, w ⊙ y>²/S``), the column
``x̄_j`` becomes ``√w ⊙ y ⊙ x_j`` (its correlation with the normal is the
weighted column sum ``Σ_i w_i x_ij``, its projected norm² the weighted
centred sum of squares ``Σ_i w_i (x_ij − m_j)²``), and the cut of column
j0 has ``B_j = Σ_i w_i x_ij c_i`` with ``c = sign · (x_j0 − m_j0)``,
``A = Σ_i w_i c_i²``.  A row of weight 0 takes no part in any of it.

This module holds those pieces (:mod:`ultrafs.methods.slores` and
:mod:`ultrafs.methods.l1_path` call them only when weights are given, so
the unweighted path is computed exactly as before): the checked weights,
the class totals and θ_max, the weighted statistics pass
(:func:`weighted_statistics`, kernel
:func:`ultrafs.kernels.weighted_moments.weighted_column_moments`), the
cut's weights, the weighted dual and primal values, and the solve at one
λ in the path's scale (:func:`solve_path_point`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ultrafs.errors import ParameterError

__all__ = ["path_weights", "check_statistics_weights", "class_totals", "weighted_theta_max", "weighted_statistics",
           "weighted_cut", "weighted_dual_objective", "weighted_primal_objective",
           "solve_path_point"]


def path_weights(sample_weight, y):
    """The checked weights (float64, a copy) or None.

    None for none, and for weights that are all 1: that is the unweighted
    problem exactly, computed as such (the same bits as without weights).
    Refused in one line: the wrong shape, a negative, NaN or infinite
    weight, or a class whose weights sum to 0.
    """
    if sample_weight is None:
        return None
    from ultrafs.solvers.datafits import check_sample_weight

    w = check_sample_weight(sample_weight, len(y))
    pos, neg = class_totals(y, w)
    if not (pos > 0 and neg > 0):
        raise ParameterError(
            "ℓ1 logistic regression needs both classes with a positive total weight; "
            f"the weights of class {'+1' if pos <= 0 else '-1'} sum to 0")
    if np.all(w == 1.0):
        return None
    return w


def check_statistics_weights(stats, sample_weight, y):
    """Refuse, in one line, ``sample_weight`` given with statistics computed
    under other weights (None: the statistics' weights are used)."""
    if sample_weight is None:
        return
    w = path_weights(sample_weight, y)
    theirs = stats.sample_weight
    if (w is None) != (theirs is None) or (w is not None and not np.array_equal(w, theirs)):
        raise ParameterError("the statistics given were computed with other sample "
                             "weights than sample_weight")


def class_totals(y, w):
    """``(S⁺, S⁻)``: the weights summed per class."""
    return float(np.sum(w[y > 0])), float(np.sum(w[y < 0]))


def weighted_theta_max(y, w) -> np.ndarray:
    """θ at λ_max (the best constant model ``c = log(S⁺/S⁻)``): ``S⁻/S`` on
    positive samples, ``S⁺/S`` on negative ones."""
    pos, neg = class_totals(y, w)
    total = pos + neg
    return np.where(y > 0, neg / total, pos / total)


def weighted_dual_objective(theta, w) -> float:
    """``(1/n) Σ_i w_i H(θ_i)`` (the dual value; rows of weight 0 skipped,
    whatever their θ)."""
    theta = np.asarray(theta, dtype=np.float64)
    on = w > 0
    t = np.clip(theta[on], 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(t > 0, t * np.log(t), 0.0)
        b = np.where(t < 1, (1.0 - t) * np.log1p(-t), 0.0)
    return float(-np.sum(w[on] * (a + b)) / theta.size)


def weighted_primal_objective(decision, y, lam, l1_norm, w) -> float:
    """``(1/n) Σ_i w_i log(1 + exp(−y_i f_i)) + λ ||β||_1``, overflow-free."""
    return float(np.sum(w * np.logaddexp(0.0, -y * decision)) / y.size + lam * l1_norm)


def weighted_cut(values, rows, n_samples, sign, w):
    """The cut of a column: ``(pass weights w ⊙ c, A = Σ w c², ||w ⊙ c||)``
    with ``c = sign · (x − m)``, m the weighted mean of the column."""
    column = np.zeros(n_samples, dtype=np.float64)
    column[rows] = values
    mean = float(np.sum(w * column)) / float(np.sum(w))
    c = sign * (column - mean)
    pass_weights = w * c
    return (pass_weights, float(np.sum(w * c * c)),
            float(np.sqrt(np.sum(pass_weights * pass_weights))))


# ---------------------------------------------------------------- the pass
def _block_moments(block, store, w, v, total, positive_rows):
    """Task: :func:`weighted_column_moments` of one column range."""
    from ultrafs.kernels.weighted_moments import weighted_column_moments

    start, stop = block
    cols = store.read_range_transient(start, stop)
    data = cols.data if cols.data is not None else np.ones(cols.nnz)
    out = weighted_column_moments(cols.indptr, cols.indices, data, w, v, total,
                                  positive_rows)
    return {"pieces": [(start, out)]}


def _merge_moments(parts):
    pieces = [piece for part in parts for piece in part["pieces"]]
    pieces.sort(key=lambda piece: piece[0])
    return {"pieces": pieces}


def weighted_statistics(store, y, w, theta_max, *, block_size=None, scheduler=None,
                        num_workers=None, progress_label=None) -> dict:
    """One streamed pass: the weighted statistics of every column.

    Returns
    -------
    dict of arrays, shape (p,)
        ``colsum`` (``Σ_i w_i x_ij``), ``s_max`` (``x̄_j'(w ⊙ θ_max)``),
        ``sum_squares`` (``Σ_i x_ij²``), ``norm2`` (the weighted centred
        sum of squares, rounded up) and ``constant`` (bool: constant on the
        rows of positive weight).  The same bits for any block size and
        scheduler.
    """
    from ultrafs.scoring.runner import BlockRunner

    runner = BlockRunner(scheduler, num_workers, 8, block_size, progress_label)
    bounds = store.block_bounds(block_size)
    blocks = [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    shared = {"store": store, "w": w, "v": np.ascontiguousarray(w * theta_max * y),
              "total": float(np.sum(w)), "positive_rows": int(np.count_nonzero(w > 0))}
    merged = runner(blocks, _block_moments, _merge_moments, shared)
    names = ("colsum", "s_max", "sum_squares", "norm2", "constant")
    return {name: np.concatenate([out[k] for _, out in merged["pieces"]])
            for k, name in enumerate(names)}


# ---------------------------------------------------------------- the solve
def solve_path_point(indptr, indices, data, y, lam, *, sample_weight=None, **options):
    """:func:`ultrafs.solvers.l1_logistic.solve_l1_logistic` in the path's scale.

    The solver's problem is ``(1/S) Σ_i w_i l_i + λ' ||β||_1``; ``S/n``
    times it is the path's ``(1/n) Σ_i w_i l_i + λ ||β||_1`` with ``λ' = λ
    n/S``.  The solve runs at λ' (its stop ``kkt <= tol λ'`` is ``kkt <=
    tol λ`` in the path's scale) and the objective, the KKT residual and the
    gap come back in the path's scale.  Without weights it is the solver's
    call, unchanged.

    Parameters
    ----------
    indptr, indices, data, y, lam, options
        As for ``solve_l1_logistic`` (``n_rows``, ``columns``, ``coef0``,
        ``intercept0``, ``tol``, ``max_iter``).
    sample_weight : float64 array, shape (n,), optional

    Returns
    -------
    L1LogisticResult
    """
    from ultrafs.solvers.l1_logistic import solve_l1_logistic

    if sample_weight is None:
        return solve_l1_logistic(indptr, indices, data, y, lam, **options)
    scale = float(np.sum(sample_weight)) / float(len(y))     # S / n: 1.0 for ones
    result = solve_l1_logistic(indptr, indices, data, y, lam / scale,
                               sample_weight=sample_weight, **options)
    return replace(result, objective=result.objective * scale, kkt=result.kkt * scale,
                   gap=result.gap * scale, kkt_tol=result.kkt_tol * scale)
