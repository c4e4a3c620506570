"""GSR-FS (seed 002, Peng & Fan): ℓ2,r-loss with ℓ2,p row sparsity, solved by IRLS.

The problem (eq. 2 of the paper, with the digest's ε-smoothing and an
optional unpenalised bias ``b``)::

    min_{W, b}  J_ε(W, b) = Σ_i (‖x_i W + b − y_i‖² + ε)^{r/2}
                           + λ Σ_j (‖w_j‖² + ε)^{p/2}

with ``0 < r ≤ 2``, ``0 < p ≤ 1``, ``X`` n_samples x n_features, ``Y``
n_samples x c: ±1 one-vs-rest class codes (``c = 2`` for two classes, as
in the paper) or real targets (regression).  Features are ranked by the
norms ``‖w_j‖`` of the rows of ``W``, which the ℓ2,p penalty shares across
the c outputs.

Iteratively reweighted least squares (Algorithm 1): from ``s1 = 1`` and
``s2 = 1`` (the first iterate is ridge regression), each iteration solves
the reweighted ridge problem

    min_{W, b}  Σ_i s1_i ‖x_i W + b − y_i‖² + λ Σ_j s2_j ‖w_j‖²

and sets ``s1_i = (r/2)(‖e_i‖² + ε)^{(r−2)/2}``,
``s2_j = (p/2)(‖w_j‖² + ε)^{(p−2)/2}``.  By concavity of ``t ↦ t^{q/2}``
this is a majorise-minimise step of ``J_ε``, so ``J_ε`` never increases
(the digest's restatement of Theorem 1; checked at every iteration).

Each ridge solve is taken in the better of two forms, both well
conditioned (eigenvalues ≥ λ) with ``d = 1/s2``:

* primal (features ≤ samples): ``(√D Xᵀ S1 X √D + λ I) V = √D Xᵀ S1 Y``,
  ``W = √D V``, from the weighted feature Gram ``Xᵀ S1 X``;
* Woodbury (features > samples): ``(√S1 X D Xᵀ √S1 + λ I) Z' = √S1 Y``,
  ``W = D Xᵀ √S1 Z'``, from the weighted sample Gram ``X D Xᵀ``; the
  fitted values are ``X D Xᵀ √S1 Z'``, so no extra pass is needed.

With a bias both Grams are taken of ``X`` centred by the weights ``s1``
(a rank-one correction of the uncentred Gram; ``X`` is never densified).
The Gram products come from a Gram operator
(:mod:`ultrafs.solvers.gram_operators`): dense, sparse in memory, or
streamed from a store block by block.

The loop stops on a certificate: the relative stationarity residual
``‖∇J_ε‖ / ‖∇J_ε(W_1)‖`` over the live rows (norm above ``1e-6·max``) and
the bias is at most ``gtol``.  The paper's rule (relative objective change
below ``tol``) is kept as ``stop="objective"`` for reproduction; with
``stop="stationarity"`` (the default) a small relative change alone stops
nothing before ``max_iter``.

For ultrahigh dimension :func:`fit_gsrfs_two_stage` lets the engine's
streamed worst-case analysis propose candidates: the multi-class scores
``‖X_jᵀ S1 E‖`` (the gradient of the loss with respect to row ``j`` at
``w_j = 0``) of every feature in one pass, IRLS on the best
``n_candidates`` of them, and (convex case) further passes adding any
feature whose score violates the KKT condition ``2‖X_jᵀ S1 E‖ ≤ λ``.

Sample weights ``w`` (``sample_weight=``) weight each sample's loss,
``Σ_i w_i (‖x_i W + b − y_i‖² + ε)^{r/2}``: they multiply IRLS's ``s1``
(:mod:`ultrafs.solvers.irls`), the default ε is the weighted mean, and the
scoring weights of the two-stage mode are ``w ⊙ s1 ⊙ E``.  An integer
weight is that many copies of the sample, 0 a dropped one; weights all
equal to 1 are no weights (the unweighted run, bit for bit).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.progress import phase
from ultrafs.solvers.irls import (EPS_REL, LIVE_ROW_RTOL, IRLSProblem, L2pRows, L2rDatafit,
                                  irls, sample_weights, smoothed_objective)

__all__ = ["GSRFSResult", "fit_gsrfs", "fit_gsrfs_two_stage", "encode_targets",
           "fit_weights", "check_gsrfs_params", "rank_rows", "smoothed_objective", "default_eps",
           "DEFAULT_TOL", "DEFAULT_GTOL", "DEFAULT_MAX_ITER", "DEFAULT_MIN_ITER",
           "EPS_REL", "R_MIN", "LIVE_ROW_RTOL", "RANK_RTOL", "MAX_GRAM_BYTES", "SOLVES"]

#: the paper's stop: relative objective change between two iterations
DEFAULT_TOL = 1e-4
#: smallest exponent r of the loss: below, the IRLS weights (r/2)(‖e‖² +
#: ε)^((r−2)/2) leave float64's normal range on ordinary data (r = 1e-300
#: ranked no feature on mushrooms; 1e-100 still fitted)
R_MIN = 1e-6
#: the certificate: relative stationarity residual over the live rows
DEFAULT_GTOL = 1e-3
DEFAULT_MAX_ITER = 300
#: an engine choice (digest B5.4): r = 2 with a small λ otherwise stops
#: after two or three iterations on the objective rule
DEFAULT_MIN_ITER = 5
#: EPS_REL, EPS_PENALTY_REL (the smoothing ε's) and LIVE_ROW_RTOL (the
#: rows of the certificate) are IRLS's, :mod:`ultrafs.solvers.irls`
#: rows with ‖w_j‖ at most this times the largest are not ranked
RANK_RTOL = 1e-12
#: the largest dense Gram (n x n or m x m, float64) IRLS builds by default
MAX_GRAM_BYTES = 4 * 2**30
SOLVES = ("auto", "primal", "woodbury")
STOPS = ("stationarity", "objective")


@dataclass
class GSRFSResult:
    """What :func:`fit_gsrfs` returns.

    Attributes
    ----------
    coef : float64 array (n_features, c)
        ``W`` (two-stage mode: the candidates' rows only, see :meth:`rows`).
    intercept : float64 array (c,)
        ``b`` (zeros without a bias).
    row_norms : float64 array (n_features,)
        ``‖w_j‖``, the scores features are ranked by (two-stage mode: the
        candidates' only).
    ranking : int64 array
        Feature numbers by decreasing ``‖w_j‖`` (ties by number), the rows
        with ``‖w_j‖ ≤ RANK_RTOL·max`` left out.
    objective : float
        ``J_ε`` at the final iterate.
    objective_unsmoothed : float
        ``J`` (ε = 0) at the final iterate.
    stationarity : float
        Relative stationarity residual at the final iterate.
    kkt_dead : float or None
        ``max ‖2 X_jᵀ S1 E‖ / λ`` over the rows that are not live: at most
        1 (to the smoothing) at an optimum of the convex case (``p = 1,
        r ≥ 1``); None when every row is live.
    n_iter : int
    converged : bool
        The stop rule was met (the certificate for ``stop="stationarity"``).
    stop_reason : str
    solve : {"primal", "woodbury"}
    eps : float
        The loss's ε.
    eps_penalty : float
        The penalty's ε.
    history : list of dict
        Per iteration: ``objective``, ``rel_change``, ``stationarity``.
    n_passes : int
        Products taken from the operator (passes over a streamed store).
    seconds : float
    candidates : int64 array or None
        Two-stage mode: the features IRLS ran on (sorted).
    rounds : list of dict
        Two-stage mode: per round the candidates and KKT violators.
    column_factors : float64 array (n_features,) or None
        Set by the faces when they scaled the columns (``coef`` is then in
        the stored units, ``row_norms`` in the scaled ones).
    """

    coef: np.ndarray
    intercept: np.ndarray
    row_norms: np.ndarray
    ranking: np.ndarray
    objective: float
    objective_unsmoothed: float
    stationarity: float
    kkt_dead: float | None
    n_iter: int
    converged: bool
    stop_reason: str
    solve: str
    eps: float
    eps_penalty: float
    history: list = field(default_factory=list)
    n_passes: int = 0
    seconds: float = 0.0
    candidates: np.ndarray | None = None
    column_factors: np.ndarray | None = None
    rounds: list = field(default_factory=list)

    def top(self, k) -> np.ndarray:
        """The ``k`` best-ranked features (fewer when fewer rows are nonzero)."""
        return self.ranking[:int(k)]

    def rows(self, features) -> np.ndarray:
        """Rows of ``coef`` and ``row_norms`` holding ``features``.

        The features themselves, except in the two-stage mode, whose arrays
        cover the candidates only (sorted): nothing there is as long as the
        number of features.
        """
        features = np.asarray(features, dtype=np.int64)
        if self.candidates is None:
            return features
        rows = np.searchsorted(self.candidates, features)
        if np.any(rows >= len(self.candidates)) or np.any(
                self.candidates[np.minimum(rows, len(self.candidates) - 1)] != features):
            raise ParameterError("a feature asked for was not a candidate")
        return rows


def check_gsrfs_params(r, p, lam, *, eps=None, tol=DEFAULT_TOL, gtol=DEFAULT_GTOL,
                       max_iter=DEFAULT_MAX_ITER, min_iter=DEFAULT_MIN_ITER,
                       solve="auto", stop="stationarity") -> None:
    """One-line errors for out-of-range parameters, before any pass."""
    def real(value, name, low, high, low_open=True):
        ok = isinstance(value, (int, float, np.floating, np.integer)) \
            and not isinstance(value, bool) and np.isfinite(value) \
            and (value > low if low_open else value >= low) and value <= high
        if not ok:
            bracket = "(" if low_open else "["
            raise ParameterError(f"{name} must lie in {bracket}{low}, {high}], got {value!r}")

    real(r, "r", R_MIN, 2, low_open=False)
    real(p, "p", 0, 1)
    real(lam, "lam", 0, np.finfo(np.float64).max)
    if eps is not None:
        real(eps, "eps", 0, np.finfo(np.float64).max)
    real(tol, "tol", 0, 1, low_open=False)
    real(gtol, "gtol", 0, 1, low_open=False)
    for value, name in ((max_iter, "max_iter"), (min_iter, "min_iter")):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ParameterError(f"{name} must be an integer >= 1, got {value!r}")
    if solve not in SOLVES:
        raise ParameterError(f"solve must be one of {', '.join(SOLVES)}, got {solve!r}")
    if stop not in STOPS:
        raise ParameterError(f"stop must be one of {', '.join(STOPS)}, got {stop!r}")


def encode_targets(y, target="multiclass"):
    """The target matrix ``Y`` of GSR-FS and the classes it codes.

    Parameters
    ----------
    y : array-like, shape (n,) or (n, q)
        Class labels, or real targets (``q`` outputs).
    target : {"binary", "multiclass", "continuous"}
        Classes are coded one-vs-rest with ±1 (row i: +1 in the column of
        its class, −1 elsewhere; two classes give two columns, the
        paper's convention); continuous targets are used as they are.

    Returns
    -------
    Y : float64 array (n, c)
    classes : ndarray or None
        The class values in the order of ``Y``'s columns; None for
        continuous targets.
    """
    y = np.asarray(y)
    if target == "continuous":
        Y = np.asarray(y, dtype=np.float64)
        if Y.ndim == 1:
            Y = Y[:, None]
        if Y.ndim != 2 or not np.all(np.isfinite(Y)):
            raise ParameterError("continuous targets must be finite numbers, one row per sample")
        return np.ascontiguousarray(Y), None
    if target not in ("binary", "multiclass"):
        raise ParameterError(f"GSR-FS fits class labels or continuous targets, not {target!r}")
    if y.ndim != 1:
        raise ParameterError(f"class labels must be one per sample, got shape {y.shape}")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ParameterError("class labels must be finite numbers (a label is NaN or infinite)")
    classes, index = np.unique(y, return_inverse=True)
    if target == "binary" and len(classes) != 2:
        raise ParameterError(f"a binary target has two classes, got {len(classes)}")
    if len(classes) < 2:
        raise ParameterError(f"GSR-FS needs at least two classes, got {len(classes)} "
                             f"class{'' if len(classes) == 1 else 'es'}")
    Y = -np.ones((len(y), len(classes)), dtype=np.float64)
    Y[np.arange(len(y)), index] = 1.0
    return Y, classes


def default_eps(Y, fit_intercept=False, sample_weight=None) -> float:
    """The loss's ε: ``EPS_REL`` times the mean squared norm of the (centred) target
    rows (means weighted by ``sample_weight`` when given)."""
    if sample_weight is not None:
        pi = sample_weight / float(np.sum(sample_weight))
        Yc = Y - pi @ Y if fit_intercept else Y
        scale = float(pi @ np.einsum("ij,ij->i", Yc, Yc))
        return EPS_REL * scale if scale > 0 else EPS_REL
    Yc = Y - Y.mean(axis=0) if fit_intercept else Y
    scale = float(np.mean(np.einsum("ij,ij->i", Yc, Yc))) if len(Yc) else 0.0
    return EPS_REL * scale if scale > 0 else EPS_REL


def fit_weights(sample_weight, n_samples):
    """The per-sample weights GSR-FS runs with: checked, None when absent or all 1.

    Returns
    -------
    float64 array (n_samples,) or None
    """
    from ultrafs.solvers.datafits import check_sample_weight

    weights = check_sample_weight(sample_weight, n_samples)
    if weights is not None and np.all(weights == 1.0):
        return None
    return weights


#: norms (and KKT scores) equal to this many digits relative to the largest
#: are ties, broken by row number (duplicate columns, rounding of the sums)
TIE_DIGITS = 10


def _ordered(rows, keys) -> np.ndarray:
    """``rows`` by decreasing ``keys`` rounded to :data:`TIE_DIGITS` digits of
    their largest, ties by row number."""
    if not len(rows):
        return rows
    top = float(keys.max())
    rounded = np.round(keys / top, TIE_DIGITS) if top > 0 else keys
    return rows[np.lexsort((rows, -rounded))]


def rank_rows(row_norms, kkt_scores=None) -> np.ndarray:
    """Row numbers, best first; near-zero rows left out.

    Rows with a norm above ``LIVE_ROW_RTOL`` times the largest come first,
    by decreasing norm.  The other rows IRLS is driving to zero: their
    norms say how many iterations ran more than anything about the data,
    so when ``kkt_scores`` (``‖∂loss/∂w_j‖``, the rate plain IRLS decays
    them at for p = 1) is given they follow by decreasing score.  Rows at
    or below ``RANK_RTOL`` times the largest norm are not ranked.  Values
    equal to :data:`TIE_DIGITS` digits are ties, broken by row number.
    """
    norms = np.asarray(row_norms, dtype=np.float64)
    if not norms.size:
        return np.zeros(0, dtype=np.int64)
    top = float(norms.max())
    if top <= 0:
        return np.zeros(0, dtype=np.int64)
    keep = np.flatnonzero(norms > RANK_RTOL * top).astype(np.int64)
    live = norms[keep] > LIVE_ROW_RTOL * top
    first = _ordered(keep[live], norms[keep[live]])
    rest = keep[~live]
    if kkt_scores is None:
        second = _ordered(rest, norms[rest])
    else:
        second = _ordered(rest, np.asarray(kkt_scores, dtype=np.float64)[rest])
    return np.concatenate([first, second]).astype(np.int64)


def fit_gsrfs(op, Y, *, r=1.0, p=0.5, lam=1.0, eps=None, eps_penalty=None,
              fit_intercept=False, tol=DEFAULT_TOL, gtol=DEFAULT_GTOL,
              max_iter=DEFAULT_MAX_ITER, min_iter=DEFAULT_MIN_ITER, solve="auto",
              stop="stationarity", accelerate=None, max_gram_bytes=MAX_GRAM_BYTES,
              callback=None, sample_weight=None) -> GSRFSResult:
    """Fit GSR-FS by IRLS.

    Parameters
    ----------
    op : Gram operator
        Over ``X`` (n_samples x n_features), see
        :mod:`ultrafs.solvers.gram_operators`.
    Y : float64 array (n_samples, c)
        From :func:`encode_targets`.
    r : float in (0, 2]
        Exponent of the ℓ2,r loss (small: robust to outliers).
    p : float in (0, 1]
        Exponent of the ℓ2,p penalty (small: sparser; p < 1 is nonconvex
        and IRLS returns a local optimum, from the ridge start).
    lam : float > 0
        λ, absolute (not scaled by the number of samples; scikit-learn's
        ``MultiTaskLasso`` alpha is ``λ / (2 n_samples)`` for r = 2, p = 1).
    eps : float, optional
        The smoothing ε of the loss; None: :func:`default_eps`.  When given
        and ``eps_penalty`` is None, the penalty's too (the paper's single ε).
    eps_penalty : float, optional
        The smoothing ε of the penalty; None (and ``eps`` None): ``(1e-12 ·
        max_j ‖w_j‖)²`` at the ridge start, so that rows driven to zero
        stall below the ranking's threshold and ``J_ε`` is within
        ``λ n (1e-12 max‖w‖)^p`` of ``J``.
    fit_intercept : bool
        An unpenalised bias per output (the paper has none).
    tol : float
        The paper's stop: ``|J_k − J_{k−1}| ≤ tol·J_{k−1}``
        (``stop="objective"``).
    gtol : float
        The certificate: relative stationarity residual at most ``gtol``
        (``stop="stationarity"``).
    max_iter, min_iter : int
        Iteration bounds (no stop before ``min_iter``).
    solve : {"auto", "primal", "woodbury"}
        "auto": primal when n_features ≤ n_samples.
    stop : {"stationarity", "objective"}
    accelerate : bool or None
        None: True with ``stop="stationarity"``, False with the paper's
        ``stop="objective"`` (its Algorithm 1 and its stop: an early stop
        of the extrapolated path leaves many rows on their way to zero
        ranked by how the extrapolation moved them; at λ = 1e4 on the
        paper's generator 0.42 of the top 200 in X₁..X₃ against 0.995).
        True: after each IRLS step ``W_k → W`` try the extrapolated point
        ``W + β (W − W_k)`` (and the same for ``b``; the residuals are affine
        in them, so no pass is needed) and keep it when its ``J_ε`` is lower;
        β doubles after a success (at most :data:`MAX_BETA`) and halves after
        a failure.  The next step majorises at the point kept, so ``J_ε``
        still never increases.  False: the paper's Algorithm 1.
    max_gram_bytes : int
        Refuse when the dense Gram (``min(n, m)²`` float64) would pass it.
    callback : callable, optional
        ``callback(k, W, b)`` after every iteration.
    sample_weight : array-like of shape (n_samples,), optional
        Per-sample weights of the loss (see the module docstring).

    Returns
    -------
    GSRFSResult
    """
    check_gsrfs_params(r, p, lam, eps=eps, tol=tol, gtol=gtol, max_iter=max_iter,
                       min_iter=min_iter, solve=solve, stop=stop)
    if eps_penalty is not None:
        check_gsrfs_params(r, p, lam, eps=eps_penalty)
    if accelerate is None:
        accelerate = stop == "stationarity"
    started = time.perf_counter()
    m, n = int(op.n_samples), int(op.n_features)
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[0] != m or Y.shape[1] < 1:
        raise ParameterError(f"Y must have shape ({m}, c), got {Y.shape}")
    if not np.isfinite(Y).all():      # refused before any product with them
        raise ParameterError("the GSR-FS targets are not finite: Y holds NaN or "
                             "infinite values")
    if m < 1 or n < 1:
        raise ParameterError(f"GSR-FS needs samples and features, got {m} x {n}")
    if solve == "auto":
        solve = "primal" if n <= m else "woodbury"
    size = n if solve == "primal" else m
    if size * size * 8 > max_gram_bytes:
        raise ParameterError(
            f"the {solve} solve needs a dense {size:,} x {size:,} Gram "
            f"({size * size * 8 / 2**30:.1f} GiB, over the {max_gram_bytes / 2**30:.1f} GiB "
            f"allowed); use the two-stage mode or fewer samples")
    weights = fit_weights(sample_weight, m)
    if eps is not None and eps_penalty is None:
        eps_penalty = float(eps)
    eps = default_eps(Y, fit_intercept, weights) if eps is None else float(eps)
    passes0 = int(getattr(op, "n_passes", 0))
    problem = IRLSProblem(L2rDatafit(op, Y, r, eps, fit_intercept, weights),
                          L2pRows(lam, p, eps_penalty))
    try:
        run = irls(problem, solve=solve, tol=tol, gtol=gtol, max_iter=max_iter,
                   min_iter=min_iter, stop=stop, accelerate=accelerate, callback=callback,
                   warn_stacklevel=3)
    except (np.linalg.LinAlgError, FloatingPointError, OverflowError):
        # the reweighted system left float64: its weights (‖e‖² + ε)^((r−2)/2)
        # and (‖w‖² + ε)^((p−2)/2) overflow for a tiny ε, underflow for a huge one
        scale = default_eps(Y, fit_intercept, weights) / EPS_REL
        raise ParameterError(
            f"GSR-FS: the reweighted system is not positive definite at eps {eps:.3g}, "
            f"lam {lam:.3g}: "
            f"choose an eps within 1e-20 .. 1e20 x {scale:.3g} (the targets' mean "
            f"squared row; default 1e-10 x) or a larger lam") from None
    W, E, norms, loss_grad = run.coef, run.residuals, run.row_norms, run.loss_gradient
    dead = ~run.live
    kkt_dead = None
    if dead.any():
        kkt_dead = float(np.sqrt(np.einsum("ij,ij->i", loss_grad[dead],
                                           loss_grad[dead])).max() / lam)
    return GSRFSResult(
        coef=W, intercept=run.intercept, row_norms=norms,
        ranking=rank_rows(norms, np.sqrt(np.einsum("ij,ij->i", loss_grad, loss_grad))),
        objective=run.objective,
        objective_unsmoothed=smoothed_objective(E, W, r, p, lam, 0.0, 0.0, weights),
        stationarity=run.stationarity, kkt_dead=kkt_dead, n_iter=run.n_iter,
        converged=run.converged, stop_reason=run.stop_reason, solve=solve, eps=eps,
        eps_penalty=run.eps_penalty, history=run.history,
        n_passes=int(getattr(op, "n_passes", 0)) - passes0,
        seconds=time.perf_counter() - started)


#: candidates of the two-stage mode per feature asked for, and at least
DEFAULT_CANDIDATES_PER_FEATURE = 10
MIN_CANDIDATES = 1000
#: at most this many rounds of KKT additions (convex case)
MAX_ROUNDS = 5
#: the store is read into memory (a dense or sparse operator) below this
IN_MEMORY_BYTES = 2 * 2**30
#: stored density above which an in-memory operator is dense (BLAS)
DENSE_DENSITY = 0.25


def default_candidates(n_features_to_select, n_features) -> int:
    """The two-stage mode's candidate count: ``max(10 k, 1000)``, at most every feature.

    IRLS then costs ``O(n M² + M³)`` per iteration in the primal form
    (``M`` candidates), and ten candidates per feature kept leave room for
    the ranking to differ from the screening order (the benchmark measures
    the recall this buys against IRLS on every feature).
    """
    k = max(int(n_features_to_select), 1)
    return int(min(n_features, max(DEFAULT_CANDIDATES_PER_FEATURE * k, MIN_CANDIDATES)))


def gram_operator(store, columns=None, *, in_memory_bytes=IN_MEMORY_BYTES,
                  block_size=None, scheduler=None, num_workers=None):
    """The Gram operator GSR-FS uses over a store's columns.

    In memory when the columns fit in ``in_memory_bytes``: dense (BLAS) at
    a stored density above :data:`DENSE_DENSITY`, sparse otherwise;
    streamed from the store block by block (one pass per product) when
    they do not.

    Parameters
    ----------
    store : ColumnStore
    columns : int array, optional
        Store columns, in the order of the operator's features; None: all.
    in_memory_bytes : int
    block_size, scheduler, num_workers
        Of the streamed passes (and of the read).
    """
    from ultrafs.scoring.gram_passes import StoreGramOperator
    from ultrafs.solvers.gram_operators import DenseGramOperator
    from ultrafs.solvers.sparse_gram import SparseGramOperator

    streamed = StoreGramOperator(store, columns, block_size=block_size,
                                 scheduler=scheduler, num_workers=num_workers)
    m, n = streamed.n_samples, streamed.n_features
    # the stores' columns are balanced by nonzeros: a subset's share of them
    # is estimated by its share of the columns
    nnz = int(store.nnz) if columns is None else int(
        np.ceil(store.nnz * n / max(store.n_features, 1)))
    density = nnz / max(m * n, 1)
    if density > DENSE_DENSITY and m * n * 8 <= in_memory_bytes:
        with phase(f"gsrfs: reading {n:,} columns into memory (dense)"):
            indptr, indices, data, rows = streamed.read_columns_csc()
            X = sp.csc_matrix((data, indices, indptr), shape=(rows, n)).toarray()
        return DenseGramOperator(X)
    if nnz * 12 + 8 * n <= in_memory_bytes:
        with phase(f"gsrfs: reading {n:,} columns into memory (sparse)"):
            return SparseGramOperator(*streamed.read_columns_csc())
    return streamed


def _score_weights(E, r, eps, fit_intercept, weights=None):
    """``S1 E``, the multi-class weights of the scoring pass (centred with a bias:
    ``A − w (Σ_i A_i) / Σ_i w_i`` with sample weights ``w``, what the
    centring of ``w_i`` copies of each sample gives)."""
    if weights is None:
        A = sample_weights(E, r, eps)[:, None] * E
        if fit_intercept:
            A -= A.mean(axis=0)
        return A
    A = (weights * sample_weights(E, r, eps))[:, None] * E
    if fit_intercept:
        A -= np.outer(weights / float(np.sum(weights)), A.sum(axis=0))
    return A


def fit_gsrfs_two_stage(store, Y, *, n_candidates, r=1.0, p=0.5, lam=1.0, eps=None,
                        eps_penalty=None, fit_intercept=False, max_rounds=MAX_ROUNDS, block_size=None,
                        scheduler=None, num_workers=None, in_memory_bytes=IN_MEMORY_BYTES,
                        progress_label=None, sample_weight=None, **irls) -> GSRFSResult:
    """GSR-FS on candidates proposed by the engine's streamed worst-case analysis.

    1. One scoring pass over every feature of ``store`` with the
       multi-class weights ``A = S1 E`` at ``W = 0`` (``E = b − Y``): the
       score ``‖X_jᵀ A‖²`` is the squared norm of the loss gradient with
       respect to row ``j``; the ``n_candidates`` best (ties by feature
       number) are kept.
    2. IRLS (:func:`fit_gsrfs`) on those columns, read into memory.
    3. When ``p = 1`` the penalty's subgradient at a zero row is the ball
       of radius λ, so a feature left out is optimal at zero iff
       ``2‖X_jᵀ S1 E‖ ≤ λ`` at the fitted residuals: a scoring pass over
       the features left out finds the violators, which join the
       candidates (at most ``n_candidates`` per round), and IRLS runs again,
       until none is left (the certificate) or ``max_rounds``.  When
       ``p < 1`` every zero row is a stationary point of the unsmoothed
       problem and no pass can certify more: one round.

    Parameters
    ----------
    store : ColumnStore
    Y : float64 array (n_samples, c)
    n_candidates : int
        See :func:`default_candidates`.
    r, p, lam, eps, eps_penalty, fit_intercept, **irls
        See :func:`fit_gsrfs`.
    max_rounds : int
    block_size, scheduler, num_workers, progress_label
        Of the scoring passes.
    in_memory_bytes : int
        See :func:`gram_operator`.
    sample_weight : array-like of shape (n_samples,), optional
        Per-sample weights of the loss (see the module docstring).

    Returns
    -------
    GSRFSResult
        ``coef`` and ``row_norms`` over the candidates (``candidates``,
        sorted; :meth:`GSRFSResult.rows` maps features to rows), the
        features left out are unranked; ``ranking`` holds feature numbers;
        ``rounds`` says what ran (each round restarts IRLS from the ridge
        start, as the paper's algorithm does; ``n_iter`` counts them all).
    """
    from ultrafs.features import build_feature_space
    from ultrafs.scoring.worst_case import worst_case_analysis

    check_gsrfs_params(r, p, lam, eps=eps)
    started = time.perf_counter()
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    m, n = int(store.n_samples), int(store.n_features)
    if Y.shape[0] != m:
        raise ParameterError(f"Y must have {m} rows, got {Y.shape[0]}")
    if not (isinstance(n_candidates, (int, np.integer)) and n_candidates >= 1):
        raise ParameterError(f"n_candidates must be an integer >= 1, got {n_candidates!r}")
    n_candidates = int(min(n_candidates, n))
    weights = fit_weights(sample_weight, m)
    eps_loss = default_eps(Y, fit_intercept, weights) if eps is None else float(eps)
    space = build_feature_space(store, "linear")
    passes = dict(block_size=block_size, scheduler=scheduler, num_workers=num_workers)

    if weights is None:
        E0 = (Y.mean(axis=0) - Y) if fit_intercept else -Y
    else:
        E0 = ((weights / float(np.sum(weights))) @ Y - Y) if fit_intercept else -Y
    A = _score_weights(E0, r, eps_loss, fit_intercept, weights)
    found, _ = worst_case_analysis(space, A, n_candidates, progress_label=progress_label,
                                   **passes)
    candidates = np.sort(found.keys)
    rounds = [{"round": 1, "candidates": int(len(candidates)), "screened": int(n),
               "violators": None}]
    certificate = ""
    total_iter = 0
    while True:
        op = gram_operator(store, candidates, in_memory_bytes=in_memory_bytes, **passes)
        res = fit_gsrfs(op, Y, r=r, p=p, lam=lam, eps=eps, eps_penalty=eps_penalty,
                        fit_intercept=fit_intercept, sample_weight=weights, **irls)
        total_iter += res.n_iter
        rounds[-1]["iterations"] = int(res.n_iter)
        if p != 1 or len(candidates) >= n:
            break
        # the residuals of the fit on the candidates, over every sample
        E = op.matmat(res.coef) + res.intercept - Y
        A = _score_weights(E, r, res.eps, fit_intercept, weights)
        out, _ = worst_case_analysis(
            space, A, n_candidates, excluded=candidates, **passes,
            progress_label=None if progress_label is None
            else f"{progress_label}, KKT check of the features left out")
        bound = (lam / 2.0) ** 2 * (1.0 + 1e-6) ** 2
        violators = out.keys[out.scores > bound]
        worst = float(2.0 * np.sqrt(out.scores[0]) / lam) if len(out) else 0.0
        rounds[-1]["violators"] = int(len(violators))
        rounds[-1]["max_kkt_outside"] = worst
        if not len(violators):
            certificate = (f"; every feature left out meets 2‖X_jᵀS1E‖ <= λ (largest "
                           f"ratio {worst:.3g})")
            break
        if len(rounds) >= max_rounds:
            certificate = (f"; NOT certified: {len(violators)}+ features left out "
                           f"violate the KKT condition after {max_rounds} rounds")
            break
        candidates = np.union1d(candidates, violators)
        rounds.append({"round": len(rounds) + 1, "candidates": int(len(candidates)),
                       "screened": int(n - len(candidates) + len(violators)),
                       "violators": None})
    ranking = candidates[res.ranking]
    return GSRFSResult(
        coef=res.coef, intercept=res.intercept, row_norms=res.row_norms, ranking=ranking,
        objective=res.objective, objective_unsmoothed=res.objective_unsmoothed,
        stationarity=res.stationarity, kkt_dead=res.kkt_dead,
        n_iter=total_iter, converged=res.converged and not certificate.startswith("; NOT"),
        stop_reason=res.stop_reason + certificate,
        solve=res.solve, eps=res.eps, eps_penalty=res.eps_penalty, history=res.history, n_passes=res.n_passes,
        seconds=time.perf_counter() - started, candidates=candidates, rounds=rounds)
