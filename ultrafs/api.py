"""The functional face: fit any registered method on data, return a Model.

:func:`fit` is the one entry point behind every face (the CLI, the
scikit-learn estimators of :mod:`ultrafs.sklearn`): it resolves the method
(:mod:`ultrafs.methods.registry`), checks its parameters once (the method's
:class:`~ultrafs.methods.params.Params`), reads the targets
(:func:`~ultrafs.methods.targets.read_targets`), runs the method's ``fit``
under one :class:`~ultrafs.methods.execution.Execution` and turns the result
into a :class:`~ultrafs.model.Model`.  :func:`select` is FGM's spelling.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.methods.execution import Execution
from ultrafs.methods.registry import get_method
from ultrafs.methods.targets import class_weight_values, read_targets
from ultrafs.store import as_store
from ultrafs.store.targets import require_labels
from ultrafs.model import Model
from ultrafs.solvers.gram_operators import ScaledGramOperator

__all__ = ["fit", "select", "execution_of", "class_weight_values", "l1_path",
           "select_l1", "l1_model", "path_to_dict", "select_mslr", "select_sklr",
           "select_gsrfs", "gsrfs_targets", "fit_gsrfs_store"]

#: the keywords of an :class:`Execution` that the faces accept loose
EXECUTION_KEYWORDS = ("scheduler", "num_workers", "block_size", "progress", "callback",
                      "memory_limit", "checkpoint", "resume", "command")

#: which method feature each execution keyword needs
_NEEDS = {"checkpoint": "checkpoint", "resume": "checkpoint",
          "memory_limit": "memory_limit", "scheduler": "passes",
          "num_workers": "passes", "block_size": "passes"}


def execution_of(method, execution=None, **loose) -> Execution:
    """The run's :class:`Execution`: ``execution`` with the ``loose``
    keywords set; a keyword the method does not use (given, not None or
    False) is refused in one line."""
    execution = Execution() if execution is None else execution
    for name, value in loose.items():
        if name not in EXECUTION_KEYWORDS:
            raise ParameterError(f"unknown execution keyword {name!r}")
        need = _NEEDS.get(name)
        if need is not None and need not in method.execution and value not in (
                None, False):
            raise ParameterError(f"{name} does not apply to {method.display_name} "
                                 f"(--method {method.name})")
    return execution.replace(**loose) if loose else execution


def fit(method, data, y=None, *, sample_weight=None, execution=None, **options) -> Model:
    """Fit a registered method on data and return its :class:`Model`.

    Parameters
    ----------
    method : str or Method
        A name of :func:`ultrafs.methods.registry.method_names` ("fgm",
        "l1", "mslr", "sklr", "gsrfs", ...).
    data : ColumnStore, path of a store, ndarray or scipy.sparse matrix
    y : array-like of shape (n_samples,), optional
        Targets when ``data`` is a matrix.
    sample_weight : array-like of shape (n_samples,), optional
        Per-row weights (methods with ``Method.weights``).
    execution : Execution, optional
        Scheduler, workers, block size, progress, memory limit, checkpoint.
    **options
        The method's parameters (its ``Params`` fields), and the fields of
        an :class:`Execution` given loose (``scheduler=``, ``num_workers=``,
        ...).

    Returns
    -------
    Model
    """
    method = get_method(method)
    loose = {name: options.pop(name) for name in EXECUTION_KEYWORDS if name in options}
    execution = execution_of(method, execution, **loose)
    params = method.make_params(**options)
    store = as_store(data, y)
    targets = read_targets(store, method.targets, method, sample_weight=sample_weight,
                           class_weight=getattr(params, "class_weight", None))
    result = method.fit(store, targets, params, execution)
    return method.to_model(result, store, targets, params, execution)


def select(data, y=None, *, sample_weight=None, execution=None, **options) -> Model:
    """Select features with FGM and return the fitted :class:`Model`.

    FGM's parameters are those of
    :class:`~ultrafs.methods.fgm_method.FGMParams` (``B``, ``C`` (a number,
    "scale" or "auto"), ``loss``, ``max_iter``, ``tol``, ``refit``, ``poly``,
    ``groups``, ``tree``, ``kernel``, ``class_weight``, ``seed``, ...); the
    run's are those of :class:`~ultrafs.methods.execution.Execution`.  See
    :func:`fit`.

    Returns
    -------
    model : Model
        Only the features with a nonzero weight (in some class): up to
        ``B * max_iter`` of them.  ``model.history`` keeps what each pass
        proposed (``n_features``) next to the nonzero count
        (``n_nonzero``).
    """
    return fit("fgm", data, y, sample_weight=sample_weight, execution=execution,
               **options)


def _classification_targets(store):
    from ultrafs.methods.targets import classification_targets

    return classification_targets(store)


# --------------------------------------------------------------- ℓ1 paths
def l1_path(data, y=None, *, screening="slores", sequential=True, lambdas=None,
            n_lambdas=None, lambda_min_ratio=None, lambda_max_ratio=None,
            tol=None, max_iter=500, stop_at_nnz=None, block_size=None,
            scheduler=None, num_workers=None, callback=None):
    """The ℓ1-logistic regression path of ``data`` (seed 004).

    ``min (1/n) Σ log(1 + exp(−y_i (x_i'β + c))) + λ ||β||_1`` with an
    unpenalised intercept, on a decreasing grid of λ, screened by Slores
    (or the strong rule, or nothing) and certified on every column by a
    KKT pass: see :func:`ultrafs.methods.l1_path.fit_l1_path`, whose
    defaults apply to the arguments left None.

    Parameters
    ----------
    data : ColumnStore, path of a store, ndarray or scipy.sparse matrix
    y : array-like, optional
        Two classes when ``data`` is an array.

    Returns
    -------
    path : L1Path
    """
    from ultrafs.methods import l1_path as lp

    store = as_store(data, y)
    labels = _binary_labels(store)
    options = {"n_lambdas": n_lambdas, "lambda_min_ratio": lambda_min_ratio,
               "lambda_max_ratio": lambda_max_ratio, "tol": tol}
    options = {name: value for name, value in options.items() if value is not None}
    return lp.fit_l1_path(store, labels, screening=screening, sequential=sequential,
                          lambdas=lambdas, max_iter=max_iter, stop_at_nnz=stop_at_nnz,
                          block_size=block_size, scheduler=scheduler,
                          num_workers=num_workers, callback=callback, **options)


def _binary_labels(store):
    """±1 labels of a binary store; one line for anything else."""
    y, n_classes = _classification_targets(store)
    if n_classes is not None:
        raise ParameterError(
            f"ℓ1 logistic regression needs two classes; the data has {n_classes}")
    return np.asarray(y, dtype=np.float64)


def select_l1(data, y=None, *, features=None, C=None, command=None, **path_options):
    """One ℓ1-LR model from the screened path: by feature count or by C.

    Exactly one of:

    * ``features=K``: the model at the first λ of the path (the grid of
      ``path_options``) with at least K nonzero weights; the path stops
      there, and is refused in one line when even its smallest λ holds
      fewer;
    * ``C``: scikit-learn's ``C`` (``λ = 1/(n C)``), reached by a short
      warm-started path: ``L1_C_PATH_POINTS`` values from 0.95 λ_max down
      to λ, geometrically spaced (λ >= λ_max: the all-zero model).

    Returns
    -------
    model : Model
        ``params["method"] == "l1"``, with λ, λ/λ_max, ``C = 1/(n λ)`` and
        the screening recorded; ``history`` holds the path's records up to
        that λ.
    """
    from ultrafs.methods.slores import slores_statistics

    if (features is None) == (C is None):
        raise ParameterError("give exactly one of features (a count) and C")
    store = as_store(data, y)
    if features is not None:
        if not (isinstance(features, (int, np.integer)) and features >= 1):
            raise ParameterError(
                f"features must be a positive integer, got {features!r}")
        path = l1_path(store, stop_at_nnz=int(features), **path_options)
        index = path.first_with(int(features))
        if index < 0:
            last = path.records[-1]
            raise ParameterError(
                f"the path reaches {last['nnz']} nonzero weights at its smallest λ "
                f"(λ/λ_max = {last['ratio']:.3g}), fewer than the {features} asked "
                "for; lower the smallest λ (lambda_min_ratio, --lambda-min-ratio)")
        return l1_model(path, index, store, command=command, requested=int(features))
    if isinstance(C, bool) or not isinstance(C, (int, float, np.integer, np.floating)) \
            or not np.isfinite(C) or C <= 0:
        raise ParameterError(f"C must be a finite number > 0, got {C!r}")
    labels = _binary_labels(store)
    run = {name: path_options[name] for name in ("block_size", "scheduler", "num_workers")
           if name in path_options}
    stats = slores_statistics(store, labels, **run)
    lam = 1.0 / (store.n_samples * float(C))
    top = stats.lambda_max * path_options.get("lambda_max_ratio", 0.95)
    grid = (np.geomspace(top, lam, L1_C_PATH_POINTS) if lam < top else np.array([lam]))
    options = {name: value for name, value in path_options.items()
               if name not in ("n_lambdas", "lambda_min_ratio", "lambda_max_ratio")}
    from ultrafs.methods.l1_path import fit_l1_path

    options.setdefault("screening", "slores")
    path = fit_l1_path(store, labels, lambdas=grid, statistics=stats, **options)
    return l1_model(path, len(path.records) - 1, store, command=command)


#: λ values of the warm-started path that reaches a given C
L1_C_PATH_POINTS = 10


def l1_model(path, index, store, *, command=None, requested=None):
    """:class:`Model` of the ``index``-th λ of an :class:`L1Path` on ``store``."""
    columns = path.columns[index]
    record = path.records[index]
    ids = store.feature_ids(columns)
    params = {"method": "l1", "lambda": record["lambda"],
              "lambda_ratio": record["ratio"], "lambda_max": path.lambda_max,
              "C": record["C"], "C_rule": "path", "loss": "logistic",
              "fit_intercept": True, "screening": path.screening,
              "sequential": path.sequential, "id_offset": int(store.id_offset),
              "data_fingerprint": getattr(store, "fingerprint", None)}
    if requested is not None:
        params["features_requested"] = requested
    if command:
        params["command"] = command
    return Model(
        features=[int(v) for v in ids],
        coef=np.asarray(path.coefs[index], dtype=np.float64),
        intercept=float(path.intercepts[index]),
        batches=[0, len(columns)],
        loss="logistic",
        classes=[float(c) for c in store.classes],
        target="binary",
        params=params,
        history=[dict(r) for r in path.records[:index + 1]],
        stop_reason=(f"first λ of the path with at least {requested} nonzero weights"
                     if requested is not None else f"λ/λ_max = {record['ratio']:.4g}"),
        feature_names=Model.names_from_store(list(ids), store, "linear"),
    )


def path_to_dict(path, store, *, command=None) -> dict:
    """The JSON form of an :class:`L1Path` (``ultrafs path --out``)."""
    steps = []
    for record, columns, coef, intercept in zip(path.records, path.columns,
                                                 path.coefs, path.intercepts):
        step = dict(record)
        step["intercept"] = intercept
        step["features"] = [int(v) for v in store.feature_ids(columns)]
        step["coef"] = [float(v) for v in coef]
        steps.append(step)
    out = {"method": "l1", "screening": path.screening,
           "sequential": path.sequential, "lambda_max": path.lambda_max,
           "n_samples": path.n_samples, "n_features": path.n_features,
           "statistics_seconds": path.statistics_seconds,
           "data_fingerprint": getattr(store, "fingerprint", None),
           "path": steps}
    if command:
        out["command"] = command
    return out


# ------------------------------------------------------------ MSLR, SKLR
def select_mslr(data, y=None, **options) -> Model:
    """``fit("mslr", ...)``, kept while faces still call it: minimax sparse
    LR (:mod:`ultrafs.methods.mslr_method`), its keywords renamed by issue
    36 (``retrain``, ``retrain_C``, ``retrain_intercept``,
    ``subproblem_tol``) translated."""
    from ultrafs.methods.mslr_method import OLD_KEYWORDS

    return fit("mslr", data, y, **{OLD_KEYWORDS.get(k, k): v for k, v in options.items()})


def select_sklr(data, y=None, **options) -> Model:
    """``fit("sklr", ...)``, kept while faces still call it: sparse kernel LR
    (:mod:`ultrafs.methods.sklr_method`), its keywords renamed by issue 36
    (``lam_ratio``, ``scaling``) translated."""
    from ultrafs.methods.sklr_method import OLD_KEYWORDS

    return fit("sklr", data, y, **{OLD_KEYWORDS.get(k, k): v for k, v in options.items()})


def gsrfs_targets(store):
    """GSR-FS's target matrix of a store: ±1 class codes, or its real targets.

    Returns
    -------
    Y : float64 array (n_samples, c)
    target : {"binary", "multiclass", "continuous"}
    """
    from ultrafs.methods.gsrfs import encode_targets

    target = getattr(store, "target_type", "binary")
    where = getattr(store, "path", None)
    require_labels(target, str(where or "data"))
    if target == "continuous":
        return encode_targets(store.read_targets(), "continuous")[0], target
    K = len(store.classes)
    Y = -np.ones((store.n_samples, K))
    Y[np.arange(store.n_samples), store.read_class_indices()] = 1.0
    return Y, target


def _irls_options(tol, stop, max_iter, min_iter) -> dict:
    """The stop options of :func:`~ultrafs.methods.gsrfs.fit_gsrfs` from the faces'."""
    from ultrafs.methods import gsrfs as g

    irls = {"stop": stop,
            "max_iter": g.DEFAULT_MAX_ITER if max_iter is None else max_iter,
            "min_iter": g.DEFAULT_MIN_ITER if min_iter is None else min_iter}
    if tol is not None:
        irls["gtol" if stop == "stationarity" else "tol"] = tol
    return irls


#: a column whose standard deviation is at most this times its root mean
#: square is constant (the two-pass sums leave rounding of that order)
CONSTANT_COLUMN_RTOL = 1e-10


def column_std_factors(store, *, block_size=None, scheduler=None, num_workers=None):
    """``1/std_j`` of every column of a store (0 for a constant column), one pass."""
    from ultrafs.scoring.statistics import feature_statistics

    stats = feature_statistics(store, ("sum_squares", "centred_sum_squares"),
                               block_size=block_size, scheduler=scheduler,
                               num_workers=num_workers)
    n = max(int(store.n_samples), 1)
    std = np.sqrt(np.asarray(stats["centred_sum_squares"], dtype=np.float64) / n)
    rms = np.sqrt(np.asarray(stats["sum_squares"], dtype=np.float64) / n)
    factors = np.zeros_like(std)
    # a constant column's centred sum is rounding, not spread: dividing by
    # it would blow the column up by ~1e8 and ruin the Gram's conditioning
    live = std > CONSTANT_COLUMN_RTOL * rms
    factors[live] = 1.0 / std[live]
    return factors


def fit_gsrfs_store(store, Y, *, r=1.0, p=0.5, lam=1.0, fit_intercept=True, eps=None,
                    tol=None, stop="stationarity", max_iter=None, min_iter=None,
                    solve="auto", candidates=None, features=50, accelerate=None,
                    scale="auto", block_size=None, scheduler=None, num_workers=None,
                    in_memory_bytes=None):
    """GSR-FS on a store: IRLS on every feature, or the two-stage mode.

    ``candidates``: None runs IRLS on every feature (in memory when the
    store fits in ``in_memory_bytes``, else streamed); ``"auto"`` or an
    integer runs the two-stage mode with that many candidates (``"auto"``:
    :func:`~ultrafs.methods.gsrfs.default_candidates` of ``features``).
    ``tol`` is the tolerance of the ``stop`` rule (None: its default).
    ``scale``: "std" divides every column by its standard deviation (the
    paper's z-scoring; the centring is the intercept's, so sparse data stay
    sparse; constant columns are never ranked), "none" takes the columns as
    they are, "auto" is "std" on every feature and "none" in the two-stage
    mode (whose screening pass scores the stored columns).  The result's
    ``coef`` is in the stored columns' units, its ``row_norms`` (the
    ranking) in the scaled ones; ``result.column_factors`` holds the factors.
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
            **_irls_options(tol, stop, max_iter, min_iter)}
    memory = g.IN_MEMORY_BYTES if in_memory_bytes is None else int(in_memory_bytes)
    passes = {"block_size": block_size, "scheduler": scheduler, "num_workers": num_workers}
    if candidates is None:
        op = g.gram_operator(store, in_memory_bytes=memory, **passes)
        factors = None
        if scale != "none":
            factors = column_std_factors(store, **passes)
            op = ScaledGramOperator(op, factors)
        result = g.fit_gsrfs(op, Y, r=r, p=p, lam=lam, eps=eps,
                             fit_intercept=fit_intercept, **irls)
        if factors is not None:
            result.coef = result.coef * factors[:, None]
        result.column_factors = factors
        return result
    if candidates == "auto":
        candidates = g.default_candidates(features, store.n_features)
    return g.fit_gsrfs_two_stage(store, Y, n_candidates=candidates, r=r, p=p, lam=lam,
                                 eps=eps, fit_intercept=fit_intercept,
                                 in_memory_bytes=memory, **passes, **irls)


def select_gsrfs(data, y=None, *, features=50, r=1.0, p=0.5, lam=1.0, fit_intercept=True,
                 eps=None, tol=None, stop="stationarity", max_iter=None, min_iter=None,
                 solve="auto", candidates=None, scale="auto", block_size=None,
                 scheduler=None, num_workers=None, in_memory_bytes=None, command=None):
    """Select features by GSR-FS (seed 002) and return its :class:`Model`.

    Parameters
    ----------
    data : ColumnStore, path of a store, ndarray or scipy.sparse matrix
    y : array-like, optional
        Class labels or real targets when ``data`` is an array.
    features : int
        How many of the best-ranked features the model keeps (fewer when
        fewer rows of ``W`` are nonzero).
    r, p, lam, fit_intercept, eps, tol, stop, max_iter, min_iter, solve,
    candidates, scale, block_size, scheduler, num_workers, in_memory_bytes
        See :func:`fit_gsrfs_store` and :func:`ultrafs.methods.gsrfs.fit_gsrfs`.
    command : str, optional
        Recorded in ``params``.

    Returns
    -------
    model : Model
        ``params["method"] == "gsrfs"``.  ``features`` are the best-ranked
        store ids, best first, with their rows of ``W``: for two classes
        the one decision column ``(w_+ − w_−)/2`` (the sign of the
        difference of the two ±1-code fits), for K classes the K columns
        (the predicted class has the largest fit), for a continuous target
        its one column (the prediction).  ``params["scores"]`` holds their
        ``‖w_j‖`` in the fit on every feature (or candidate); the weights
        are those of GSR-FS refit on the selected features alone (same r,
        p, λ; ``params["refit"]`` says how it converged), which predict.
    """
    if not (isinstance(features, (int, np.integer)) and not isinstance(features, bool)
            and features >= 1):
        raise ParameterError(f"features must be an integer >= 1, got {features!r}")
    if candidates is not None and candidates != "auto" and not (
            isinstance(candidates, (int, np.integer)) and candidates >= 1):
        raise ParameterError(f"candidates must be 'auto' or an integer >= 1, got {candidates!r}")
    store = as_store(data, y)
    Y, target = gsrfs_targets(store)
    result = fit_gsrfs_store(store, Y, r=r, p=p, lam=lam, fit_intercept=fit_intercept,
                             eps=eps, tol=tol, stop=stop, max_iter=max_iter,
                             min_iter=min_iter, solve=solve, candidates=candidates,
                             features=features, scale=scale, block_size=block_size,
                             scheduler=scheduler,
                             num_workers=num_workers, in_memory_bytes=in_memory_bytes)
    top = result.top(features)
    # the model predicts with GSR-FS refit on its selected columns (same r, p,
    # λ): the rows of the full fit leave out the other features' share of
    # every prediction (large on data that is not centred)
    from ultrafs.methods.gsrfs import fit_gsrfs, gram_operator

    order = np.argsort(top, kind="stable")
    op = gram_operator(store, top[order], block_size=block_size, scheduler=scheduler,
                       num_workers=num_workers)
    factors = result.column_factors
    if factors is not None:
        op = ScaledGramOperator(op, factors[top[order]])
    refit = fit_gsrfs(op, Y, r=r, p=p, lam=lam, eps=eps, fit_intercept=fit_intercept,
                      **_irls_options(tol, stop, max_iter, min_iter))
    W = np.empty_like(refit.coef)
    W[order] = refit.coef if factors is None else refit.coef * factors[top[order], None]
    b = refit.intercept
    if target == "binary":
        coef, intercept, classes = (W[:, 1] - W[:, 0]) / 2.0, float(b[1] - b[0]) / 2.0, \
            [float(c) for c in store.classes]
    elif target == "multiclass":
        coef, intercept, classes = W, np.asarray(b, dtype=np.float64), \
            [float(c) for c in store.classes]
    else:
        coef, intercept, classes = W[:, 0], float(b[0]), []
    ids = store.feature_ids(top)
    params = {"method": "gsrfs", "r": float(r), "p": float(p), "lam": float(lam),
              "fit_intercept": bool(fit_intercept),
              "scale": "std" if result.column_factors is not None else "none",
              "eps": result.eps,
              "eps_penalty": result.eps_penalty, "solve": result.solve, "stop": stop,
              "converged": bool(result.converged), "n_iter": int(result.n_iter),
              "objective": result.objective,
              "objective_unsmoothed": result.objective_unsmoothed,
              "stationarity": result.stationarity, "n_outputs": int(Y.shape[1]),
              "n_ranked": int(len(result.ranking)), "n_features_asked": int(features),
              "scores": [float(v) for v in result.row_norms[result.rows(top)]],
              "refit": {"n_iter": int(refit.n_iter), "converged": bool(refit.converged),
                        "stationarity": refit.stationarity,
                        "objective": refit.objective},
              "n_passes": int(result.n_passes), "seconds": float(result.seconds),
              "loss": f"l2,{float(r):g}", "C": 1.0,
              "id_offset": int(store.id_offset),
              "data_fingerprint": getattr(store, "fingerprint", None)}
    if result.kkt_dead is not None:
        params["kkt_dead"] = result.kkt_dead
    if tol is not None:
        params["tol"] = float(tol)
    if result.candidates is not None:
        params["candidates"] = int(len(result.candidates))
        params["rounds"] = [{k: v for k, v in rnd.items() if v is not None}
                            for rnd in result.rounds]
    if command:
        params["command"] = command
    history = [{k: v for k, v in h.items() if v is not None} for h in result.history]
    return Model(
        features=[int(i) for i in ids], coef=np.asarray(coef, dtype=np.float64),
        intercept=intercept, batches=[0, len(top)], loss="l2r", classes=classes,
        target=target, feature_space={"kind": "linear"}, params=params, history=history,
        stop_reason=result.stop_reason,
        feature_names=Model.names_from_store(ids, store, "linear"))
