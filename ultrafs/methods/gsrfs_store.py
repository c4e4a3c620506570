"""GSR-FS on a store: its target matrix, the column scaling and the IRLS run.

What :mod:`ultrafs.methods.gsrfs_method` (and ``GSRFSSelector``) run
between a store and the engine :mod:`ultrafs.methods.gsrfs`: the ±1 class
codes or real targets ``Y`` (:func:`response_matrix`), the columns' scale
factors (:func:`column_std_factors`) and IRLS on every feature or the
two-stage mode (:func:`fit_gsrfs_store`).
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.solvers.gram_operators import ScaledGramOperator

__all__ = ["response_matrix", "gsrfs_targets", "irls_options", "column_std_factors",
           "weighted_column_std_factors", "fit_gsrfs_store", "CONSTANT_COLUMN_RTOL"]

#: a column whose standard deviation is at most this times its root mean
#: square is constant (the two-pass sums leave rounding of that order)
CONSTANT_COLUMN_RTOL = 1e-10


def response_matrix(targets) -> np.ndarray:
    """GSR-FS's target matrix of a :class:`~ultrafs.methods.targets.Targets`.

    Returns
    -------
    Y : float64 array (n_samples, c)
        ±1 one-vs-rest class codes (two classes: two columns, the paper's
        coding) or the real targets (one column).
    """
    from ultrafs.methods.gsrfs import encode_targets

    if targets.kind == "continuous":
        return encode_targets(targets.y, "continuous")[0]
    if targets.kind == "binary":        # ±1 labels: +1 is classes[1]
        index, K = np.asarray(targets.y > 0, dtype=np.int64), 2
    else:
        index, K = np.asarray(targets.y, dtype=np.int64), targets.n_classes
    Y = -np.ones((len(index), K))
    Y[np.arange(len(index)), index] = 1.0
    return Y


def gsrfs_targets(store):
    """GSR-FS's target matrix of a store: ±1 class codes, or its real targets.

    Returns
    -------
    Y : float64 array (n_samples, c)
    target : {"binary", "multiclass", "continuous"}
    """
    from ultrafs.methods.gsrfs_method import GSRFS
    from ultrafs.methods.targets import read_targets

    targets = read_targets(store, GSRFS.targets, GSRFS)
    return response_matrix(targets), targets.kind


def irls_options(tol, stop, max_iter, min_iter) -> dict:
    """The stop options of :func:`~ultrafs.methods.gsrfs.fit_gsrfs` from the faces'
    (None: the engine's default)."""
    from ultrafs.methods import gsrfs as g

    irls = {"stop": stop,
            "max_iter": g.DEFAULT_MAX_ITER if max_iter is None else max_iter,
            "min_iter": g.DEFAULT_MIN_ITER if min_iter is None else min_iter}
    if tol is not None:
        irls["gtol" if stop == "stationarity" else "tol"] = tol
    return irls


def column_std_factors(store, *, block_size=None, scheduler=None, num_workers=None):
    """``1/std_j`` of every column of a store (0 for a constant column), one pass.

    Returns
    -------
    factors : float64 array (n_features,)
    """
    from ultrafs.scoring.statistics import feature_statistics

    from ultrafs.progress import is_showing

    stats = feature_statistics(store, ("sum_squares", "centred_sum_squares"),
                               block_size=block_size, scheduler=scheduler,
                               num_workers=num_workers,
                               progress_label="gsrfs: column scales" if is_showing() else None)
    n = max(int(store.n_samples), 1)
    std = np.sqrt(np.asarray(stats["centred_sum_squares"], dtype=np.float64) / n)
    rms = np.sqrt(np.asarray(stats["sum_squares"], dtype=np.float64) / n)
    return _factors(std, rms)


def _factors(std, rms):
    factors = np.zeros_like(std)
    # a constant column's centred sum is rounding, not spread: dividing by
    # it would blow the column up by ~1e8 and ruin the Gram's conditioning
    live = std > CONSTANT_COLUMN_RTOL * rms
    factors[live] = 1.0 / std[live]
    return factors


def weighted_column_std_factors(store, weights, *, block_size=None):
    """``1/std_j`` of every column under per-sample weights (0 for a constant column).

    ``std_j² = Σ_i w_i (x_ij − m_j)² / Σ_i w_i`` with the weighted mean
    ``m_j``: the z-scoring of the rows repeated ``w_i`` times (integer
    weights), the rows of weight 0 left out.  One read of the store, block
    by block (each block holds whole columns, so both moments come from
    it; centred sums, as :func:`column_std_factors`).

    Parameters
    ----------
    store : ColumnStore
    weights : float64 array (n_samples,)
        ``>= 0``, not all 0.
    block_size : int, optional
        Columns per read (default: the store's block size, else 4096).

    Returns
    -------
    factors : float64 array (n_features,)
    """
    weights = np.asarray(weights, dtype=np.float64)
    total = float(np.sum(weights))
    p = int(store.n_features)
    step = int(block_size or getattr(store, "block_size", None) or 4096)
    std = np.zeros(p)
    rms = np.zeros(p)
    for start in range(0, p, step):
        stop = min(p, start + step)
        block = store.read_range(start, stop)
        width = stop - start
        counts = np.diff(np.asarray(block.indptr, dtype=np.int64))
        column = np.repeat(np.arange(width), counts)
        values = block.values(np.float64)
        w = weights[np.asarray(block.indices, dtype=np.int64)]
        mean = np.bincount(column, w * values, minlength=width) / total
        deviation = values - mean[column]
        stored_weight = np.bincount(column, w, minlength=width)
        # the zeros of a sparse column sit at −m_j from the mean
        centred = (np.bincount(column, w * deviation * deviation, minlength=width)
                   + mean * mean * np.maximum(total - stored_weight, 0.0))
        std[start:stop] = np.sqrt(centred / total)
        rms[start:stop] = np.sqrt(np.bincount(column, w * values * values,
                                              minlength=width) / total)
    return _factors(std, rms)

def fit_gsrfs_store(store, Y, *, r=1.0, p=0.5, lam=1.0, fit_intercept=True, eps=None,
                    tol=None, stop="stationarity", max_iter=None, min_iter=None,
                    solve="auto", candidates=None, n_features_to_select=50,
                    accelerate=None, scale="auto", block_size=None, scheduler=None,
                    num_workers=None, in_memory_bytes=None, sample_weight=None,
                    progress=None):
    """GSR-FS on a store: IRLS on every feature, or the two-stage mode.

    Parameters
    ----------
    store : ColumnStore
    Y : float64 array (n_samples, c)
        :func:`response_matrix`.
    r, p, lam, fit_intercept, eps, solve, accelerate
        See :func:`ultrafs.methods.gsrfs.fit_gsrfs`.
    tol : float, optional
        Tolerance of the ``stop`` rule (None: its default).
    stop : {"stationarity", "objective"}
    max_iter, min_iter : int, optional
        IRLS iterations (None: the engine's defaults).
    candidates : None, "auto" or int
        None runs IRLS on every feature (in memory when the store fits in
        ``in_memory_bytes``, else streamed); ``"auto"`` or an integer runs
        the two-stage mode with that many candidates (``"auto"``:
        :func:`~ultrafs.methods.gsrfs.default_candidates` of
        ``n_features_to_select``).
    n_features_to_select : int
        The features wanted (sizes ``candidates="auto"``).
    scale : {"auto", "std", "none"}
        "std" divides every column by its standard deviation (the paper's
        z-scoring; the centring is the intercept's, so sparse data stay
        sparse; constant columns are never ranked), "none" takes the columns
        as they are, "auto" is "std" on every feature and "none" in the
        two-stage mode (whose screening pass scores the stored columns).
    block_size, scheduler, num_workers
        Of the streamed passes.
    in_memory_bytes : int, optional
        Largest store IRLS holds in memory (default
        :data:`~ultrafs.methods.gsrfs.IN_MEMORY_BYTES`).
    sample_weight : array-like of shape (n_samples,), optional
        Per-sample weights of the loss (and of the scaling's standard
        deviations, :func:`weighted_column_std_factors`); all 1: none.
    progress : bool, optional
        Phases on stderr (reads, passes, IRLS iterations); None: as the
        caller's :func:`ultrafs.progress.showing` says.

    Returns
    -------
    result : GSRFSResult
        Its ``coef`` in the stored columns' units, its ``row_norms`` (the
        ranking) in the scaled ones; ``result.column_factors`` holds the
        factors.
    """
    from ultrafs.methods import gsrfs as g

    g.check_gsrfs_params(r, p, lam, eps=eps, solve=solve, stop=stop)
    if scale not in ("auto", "std", "none"):
        raise ParameterError(f"scale must be auto, std or none, got {scale!r}")
    if scale == "std" and candidates is not None:
        raise ParameterError("the two-stage mode (candidates) screens the stored columns "
                             "as they are: scale them before ingestion, and leave the "
                             "scaling at none or auto")
    irls = {"solve": solve, "accelerate": None if accelerate is None else bool(accelerate),
            **irls_options(tol, stop, max_iter, min_iter)}
    memory = g.IN_MEMORY_BYTES if in_memory_bytes is None else int(in_memory_bytes)
    passes = {"block_size": block_size, "scheduler": scheduler, "num_workers": num_workers}
    from ultrafs.progress import is_showing, showing

    show = is_showing() if progress is None else bool(progress)
    weights = g.fit_weights(sample_weight, int(store.n_samples))
    if candidates is None:
        with showing(show):
            op = g.gram_operator(store, in_memory_bytes=memory, **passes)
            factors = None
            if scale != "none":
                factors = (column_std_factors(store, **passes) if weights is None
                           else weighted_column_std_factors(store, weights,
                                                            block_size=block_size))
                op = ScaledGramOperator(op, factors)
            result = g.fit_gsrfs(op, Y, r=r, p=p, lam=lam, eps=eps,
                                 fit_intercept=fit_intercept, sample_weight=weights, **irls)
        if factors is not None:
            result.coef = result.coef * factors[:, None]
        result.column_factors = factors
        return result
    if candidates == "auto":
        candidates = g.default_candidates(n_features_to_select, store.n_features)
    with showing(show):
        return g.fit_gsrfs_two_stage(store, Y, n_candidates=candidates, r=r, p=p, lam=lam,
                                     eps=eps, fit_intercept=fit_intercept,
                                     in_memory_bytes=memory, sample_weight=weights,
                                     **passes, **irls,
                                     progress_label="gsrfs: scoring" if show else None)
