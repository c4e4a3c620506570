"""The screened ℓ1-logistic regression path (seed 004) as a registered method.

``min (1/n) Σ log(1 + exp(−y_i (x_i'β + c))) + λ ||β||_1`` with an
unpenalised intercept, on a decreasing grid of λ screened by Slores (or the
strong rule, or nothing) and certified on every column by a KKT pass: the
engine is :func:`ultrafs.methods.l1_path.fit_l1_path`.  The method returns
one model of the path, by feature count (``n_features_to_select``: the
model with the most nonzero weights, at most that many, of a log-spaced
path extended and bisected until it has them:
:func:`ultrafs.methods.l1_path.fit_l1_count`) or by scikit-learn's ``C``;
:func:`l1_path` returns the whole path (``ultrafs path``, on its linear
grid, unchanged).

The engine is imported when a fit runs: this module stays light for
``ultrafs select --help``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ultrafs.methods.params import SpelledParameterError, Params, param
from ultrafs.methods.registry import HistoryPanel, Method, ReportSpec, register
from ultrafs.methods.space_params import standardize_param

__all__ = ["L1Params", "L1", "fit", "to_model", "l1_path", "l1_model", "path_to_dict",
           "binary_labels", "L1_C_PATH_POINTS"]

#: λ values of the warm-started path that reaches a given C
L1_C_PATH_POINTS = 10

#: the engine's defaults (:mod:`ultrafs.methods.l1_path`, checked by a test)
DEFAULT_N_LAMBDAS = 86
DEFAULT_LAMBDA_MIN_RATIO = 0.1
DEFAULT_LAMBDA_MAX_RATIO = 0.95
DEFAULT_TOL = 1e-6
DEFAULT_MAX_ITER = 500


@dataclass
class L1Params(Params):
    """The ℓ1-LR path's parameters (see :func:`ultrafs.methods.l1_path.fit_l1_path`).

    Exactly one of ``n_features_to_select`` and ``C`` is given.
    """

    n_features_to_select: Any = param(
        None, "Number of nonzero weights wanted: the model with the most nonzero "
        "weights, at most that many, on a log-spaced path (as glmnet's) extended below "
        "its smallest λ and bisected until it has them (or the count stops growing).",
        kind="int", low=1, none=True,
        old=("features", "--features"))
    C: Any = param(None, "Instead of a count: scikit-learn's C (λ = 1/(n C)), reached by "
                   "a short warm-started path from 0.95 λ_max.", low=0, low_open=True,
                   none=True, option="--C")
    screening: str = param("slores", "Rule that discards features before each solve: "
                           "Slores (safe), the strong rule (unsafe; KKT violators are "
                           "re-added) or none. Every model is checked on all features by "
                           "a KKT pass.", kind="choice", words=("slores", "strong", "none"))
    sequential: bool = param(True, "Screen with the previous λ's solution as the "
                             "reference (--basic: λ_max, the paper's basic rule).",
                             kind="bool", option="--sequential/--basic")
    n_lambdas: int = param(DEFAULT_N_LAMBDAS, "Values of λ on the path (with a count: "
                           "of its log-spaced grid, before any extension or "
                           "bisection).", kind="int",
                           low=1, high=100_000)
    lambda_min_ratio: float = param(DEFAULT_LAMBDA_MIN_RATIO, "Smallest λ / λ_max of "
                                    "the grid (with a count, the path goes below it "
                                    "when it must).",
                                    low=0, low_open=True, high=1)
    lambda_max_ratio: float = param(DEFAULT_LAMBDA_MAX_RATIO, "Largest λ / λ_max (the "
                                    "path's grid is linear between the two; with a "
                                    "count, log-spaced).", low=0,
                                    low_open=True, high=1)
    tol: float = param(DEFAULT_TOL, "Relative KKT tolerance of every model, certified "
                       "on every column: |∇_j| <= λ (1 + tol) on the zero weights.",
                       low=0, low_open=True, high=1, high_open=True)
    max_iter: int = param(DEFAULT_MAX_ITER, "Outer iterations of the solver per λ.",
                          kind="int", low=1)
    standardize: bool = standardize_param()
    class_weight: Any = param(None, "Weight the loss of each class: 'balanced' (n / (K x "
                              "the class's count), for imbalanced data) or a mapping "
                              "class value -> weight (CLI: VALUE:WEIGHT,...; others keep "
                              "1), as FGM's: (1/n) sum_i w_i loss_i + λ ||β||_1, "
                              "C = 1/(n λ).", kind="any", none=True,
                              cli_type="class_weight")

    #: the estimator's C defaults to scikit-learn's 1.0 (the method's to None)
    estimator_defaults = {"C": 1.0}

    def check(self):
        if (self.n_features_to_select is None) == (self.C is None):
            raise SpelledParameterError("--method l1 needs {n_features_to_select} K (the "
                                    "number of nonzero weights) or {C} (the model at "
                                    "that C), not both")


    @classmethod
    def estimator_options(cls, options):
        """``C`` is ignored when ``n_features_to_select`` is given (the
        estimator's C has a default)."""
        options = dict(options)
        if options.get("n_features_to_select") is not None:
            options["C"] = None
        return options


def binary_labels(store):
    """±1 labels (float64) of a binary store; one line for anything else."""
    import numpy as np

    from ultrafs.methods.targets import read_targets

    return np.asarray(read_targets(store, L1.targets, L1).y, dtype=np.float64)


def l1_path(data, y=None, *, screening="slores", sequential=True, lambdas=None,
            n_lambdas=None, lambda_min_ratio=None, lambda_max_ratio=None,
            tol=None, max_iter=500, stop_at_nnz=None, block_size=None,
            scheduler=None, num_workers=None, callback=None, sample_weight=None,
            class_weight=None):
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
    sample_weight : array-like of shape (n_samples,), optional
        ``(1/n) Σ_i w_i log(...)`` instead (FGM's convention,
        :mod:`ultrafs.methods.l1_weights`).
    class_weight : "balanced" or dict, optional
        Per-class weights, multiplied into ``sample_weight``
        (:func:`ultrafs.methods.targets.sample_weights`).

    Returns
    -------
    path : L1Path
    """
    from ultrafs.methods.l1_path import fit_l1_path
    from ultrafs.store import as_store

    store = as_store(data, y)
    labels = binary_labels(store)
    if class_weight is not None:
        from ultrafs.methods.targets import sample_weights

        sample_weight = sample_weights(store, labels, None, sample_weight, class_weight)[0]
    options = {"n_lambdas": n_lambdas, "lambda_min_ratio": lambda_min_ratio,
               "lambda_max_ratio": lambda_max_ratio, "tol": tol}
    options = {name: value for name, value in options.items() if value is not None}
    return fit_l1_path(store, labels, screening=screening, sequential=sequential,
                       lambdas=lambdas, max_iter=max_iter, stop_at_nnz=stop_at_nnz,
                       block_size=block_size, scheduler=scheduler,
                       num_workers=num_workers, callback=callback,
                       sample_weight=sample_weight, **options)


@dataclass
class L1Fit:
    """What the method's fit returns: the path and the model's place on it."""

    path: Any                   # methods.l1_path.L1Path
    index: int
    requested: int | None
    scales: Any = None          # standardize: the columns' factors, shape (m,)


def fit(store, targets, params: L1Params, execution) -> L1Fit:
    """The path up to the model asked for: by count, or by C."""
    import numpy as np

    from ultrafs.methods.l1_path import fit_l1_count, fit_l1_path
    from ultrafs.methods.slores import slores_statistics

    labels = np.asarray(targets.y, dtype=np.float64)
    weights = targets.sample_weight
    scales = None
    if params.standardize:              # the path runs on the scaled columns
        from ultrafs.features.scaling import standardized

        store = standardized(store, **execution.passes())
        scales = store.scales
    solver = {"screening": params.screening, "sequential": params.sequential,
              "tol": params.tol, "max_iter": params.max_iter, **execution.passes(),
              "callback": execution.callback}
    k = params.n_features_to_select
    if k is not None:
        path = fit_l1_count(store, labels, n_nonzero=k, n_lambdas=params.n_lambdas,
                            lambda_min_ratio=params.lambda_min_ratio,
                            lambda_max_ratio=params.lambda_max_ratio,
                            sample_weight=weights, **solver)
        return L1Fit(path, path.index, k, scales)
    stats = slores_statistics(store, labels, sample_weight=weights, **execution.passes())
    lam = 1.0 / (store.n_samples * float(params.C))
    top = stats.lambda_max * params.lambda_max_ratio
    grid = np.geomspace(top, lam, L1_C_PATH_POINTS) if lam < top else np.array([lam])
    path = fit_l1_path(store, labels, lambdas=grid, statistics=stats, **solver)
    return L1Fit(path, len(path.records) - 1, None, scales)


def to_model(fitted: L1Fit, store, targets, params: L1Params, execution):
    """The :class:`~ultrafs.model.Model` at the fit's λ (with the weights'
    record, ``targets.weight_params``, as FGM's)."""
    model = l1_model(fitted.path, fitted.index, store, command=execution.command,
                     requested=fitted.requested)
    model.params.update(targets.weight_params)
    if fitted.scales is not None:
        from ultrafs.features.scaling import column_factors, on_original_scale

        on_original_scale(model, column_factors(store, model.features, fitted.scales))
    return model


def l1_model(path, index, store, *, command=None, requested=None):
    """:class:`~ultrafs.model.Model` of the ``index``-th λ of an
    :class:`~ultrafs.methods.l1_path.L1Path` on ``store``.

    Returns
    -------
    model : Model
        ``params["method"] == "l1"``, with λ, λ/λ_max, ``C = 1/(n λ)`` and
        the screening recorded (and ``n_features_to_select`` when the model
        was asked for by count); ``history`` holds the path's records up to
        that λ.
    """
    import numpy as np

    from ultrafs.model import Model

    columns = path.columns[index]
    record = path.records[index]
    ids = store.feature_ids(columns)
    recorded = {"method": "l1", "lambda": record["lambda"],
                "lambda_ratio": record["ratio"], "lambda_max": path.lambda_max,
                "C": record["C"], "C_rule": "path", "loss": "logistic",
                "fit_intercept": True, "screening": path.screening,
                "sequential": path.sequential, "id_offset": int(store.id_offset),
                "data_fingerprint": getattr(store, "fingerprint", None)}
    if requested is not None:
        recorded["n_features_to_select"] = requested
    if command:
        recorded["command"] = command
    return Model(
        features=[int(v) for v in ids],
        coef=np.asarray(path.coefs[index], dtype=np.float64),
        intercept=float(path.intercepts[index]),
        batches=[0, len(columns)],
        loss="logistic",
        classes=[float(c) for c in store.classes],
        target="binary",
        params=recorded,
        history=[dict(r) for r in path.records[:index + 1]],
        stop_reason=(getattr(path, "stop_reason", "") or (
            f"the most nonzero weights, at most {requested}" if requested is not None
            else f"λ/λ_max = {record['ratio']:.4g}")),
        feature_names=Model.names_from_store(list(ids), store, "linear"),
    )


def path_to_dict(path, store, *, command=None, cv=None) -> dict:
    """The JSON form of an :class:`~ultrafs.methods.l1_path.L1Path`
    (``ultrafs path --out``): a path file (:data:`ultrafs.model.PATH_FORMAT`),
    read back by :class:`ultrafs.methods.path_file.PathModels`.

    ``cv`` (a :class:`~ultrafs.methods.path_cv.PathCV` at the path's λ)
    is recorded under ``"cv"``, with the chosen λ (``lambda_min``,
    ``lambda_1se``) and their indices on the path.
    """
    from ultrafs.model import PATH_FORMAT, PATH_VERSIONS, store_id_range
    from ultrafs.model_fingerprint import signed

    steps = []
    for record, columns, coef, intercept in zip(path.records, path.columns,
                                                 path.coefs, path.intercepts):
        step = dict(record)
        step["intercept"] = intercept
        step["features"] = [int(v) for v in store.feature_ids(columns)]
        step["coef"] = [float(v) for v in coef]
        steps.append(step)
    out = {"format": PATH_FORMAT, "format_version": PATH_VERSIONS[-1],
           "method": "l1", "target": "binary", "loss": "logistic",
           "classes": [float(c) for c in store.classes],
           "id_offset": int(store.id_offset), "screening": path.screening,
           "sequential": path.sequential, "lambda_max": path.lambda_max,
           "n_samples": path.n_samples, "n_features": path.n_features,
           "statistics_seconds": path.statistics_seconds,
           "data_fingerprint": getattr(store, "fingerprint", None),
           "path": steps}
    id_range = store_id_range(store)
    if id_range is not None:
        out["id_range"] = id_range
    if cv is not None:
        out["cv"] = cv.to_dict(lambda_max=path.lambda_max)
    if command:
        out["command"] = command
    return signed(out)


def summary_lines(model, store):
    """What a person reads after ``select --method l1``: ``(name, text)`` pairs."""
    p = model.params
    asked = (f"--n-features-to-select {p['n_features_to_select']}"
             if p.get("n_features_to_select") is not None else f"--C {p['C']:g}")
    return [("features selected", f"{len(model.features):,} with a nonzero weight "
             f"({asked}), among {store.n_features:,} columns of "
             f"{store.n_samples:,} rows"),
            ("λ", f"{p['lambda']:.6g} = {p['lambda_ratio']:.4g} λ_max "
             f"(scikit-learn C = {p['C']:.6g})"),
            ("screening", f"{p['screening']} "
             f"({'sequential' if p['sequential'] else 'basic'}); "
             f"{sum(r['kkt_violations_found'] for r in model.history)} KKT "
             "violators re-added along the path")]


def progress_line(record) -> str:
    """One stderr line per λ of the path."""
    from ultrafs.scoring.progress import format_seconds

    how = (" (bisection)" if record.get("bisection") else
           " (below the grid)" if record.get("extension") else "")
    ratio = record["ratio"]     # below 0.01 (a count's extension): 3 digits
    return (f"λ/λ_max {ratio:{'.3f' if ratio >= 0.01 else '.3g'}}{how}: "
            f"{record['nnz']:,} nonzero, "
            f"{record['kept']:,} kept, objective {record['objective']:.6g}, "
            f"{record['kkt_violations_found']} violators re-added, "
            f"{format_seconds(record['seconds_solving'] + record['seconds_kkt'])}")


def estimator_attributes(model, id_offset, n_features_in=None) -> dict:
    """``L1LogisticRegression``'s fitted attributes besides the common ones:
    the model's λ and λ_max (paper scaling), ``C_ = 1/(n λ)``, ``path_``,
    the path's per-λ records up to the model, and ``n_iter_``, the solver's
    iterations summed over those λ."""
    p = model.params
    return {"lambda_": float(p["lambda"]), "lambda_max_": float(p["lambda_max"]),
            "C_": float(p["C"]), "path_": list(model.history),
            "n_iter_": sum(int(r.get("solver_iterations", 0)) for r in model.history)}


L1 = register(Method(
    name="l1", display_name="l1-LR", description="ℓ1 logistic regression",
    summary="l1: ℓ1-logistic regression (seed 004), the model of the screened path "
            "with the most nonzero weights, at most --n-features-to-select (or at --C).",
    params=L1Params, fit=fit, to_model=to_model, targets=("binary",), weights=True,
    execution=("passes", "progress"),
    objective="min (1/n) sum_i w_i log(1 + exp(-y_i (x_i'beta + c))) + lambda ||beta||_1 "
              "(unpenalised intercept c; sample weights w_i, 1 without)",
    estimator="L1LogisticRegression", estimator_kind="classifier",
    summary_lines=summary_lines, progress_line=progress_line,
    estimator_attributes=estimator_attributes, probabilistic=True,
    figures=("objective", "timing", "features", "lambda_path"),
    report=ReportSpec(x="lambda", x_label="λ", x_log=True,
                      panels=(HistoryPanel("nnz", "nonzero weights"),
                              HistoryPanel("deviance_explained",
                                           "deviance explained (training)", log=False)),
                      title="Nonzero weights and deviance explained along the λ path",
                      steps="", marked="lambda"),
    order=10))
