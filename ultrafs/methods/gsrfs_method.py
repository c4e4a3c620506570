"""GSR-FS (seed 002) as a registered method.

``min_{W,b} Σ_i ‖x_i W + b − y_i‖^r + λ Σ_j ‖w_j‖^p`` by IRLS, with ``Y`` the
±1 one-vs-rest codes of the classes or the real targets: the features are
ranked by ``‖w_j‖`` (:func:`ultrafs.methods.gsrfs_store.fit_gsrfs_store`,
on every feature or in the two-stage mode), and the model keeps the
``n_features_to_select`` best, with the weights of GSR-FS refit on them
alone.

The engine is imported when ``fit`` runs: this module stays light for
``ultrafs select --help``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ultrafs.methods.params import Params, param
from ultrafs.methods.registry import HistoryPanel, Method, ReportSpec, register
from ultrafs.methods.weight_params import class_weight_param

__all__ = ["GSRFSParams", "GSRFS", "GSRFSFit", "fit", "to_model"]

#: the engine's IRLS defaults (:mod:`ultrafs.methods.gsrfs`, checked by a test)
DEFAULT_MAX_ITER = 300
DEFAULT_MIN_ITER = 5


@dataclass
class GSRFSParams(Params):
    """GSR-FS's parameters (see :func:`ultrafs.methods.gsrfs.fit_gsrfs`)."""

    n_features_to_select: int = param(
        50, "How many of the best-ranked features the model keeps (fewer when fewer "
        "rows of W are nonzero).", kind="int", low=1, old=("features", "--features"))
    r: float = param(1.0, "Exponent r of the ℓ2,r loss (small: robust to outliers; 2: "
                     "least squares).", low=1e-6, high=2)   # gsrfs.R_MIN
    p: float = param(0.5, "Exponent p of the ℓ2,p penalty (small: sparser; below 1 "
                     "nonconvex, a local optimum from the ridge start).", low=0,
                     low_open=True, high=1)
    lam: float = param(1.0, "λ, absolute (not divided by the number of rows).", low=0,
                       low_open=True, option="--lambda", old=("--lam",))
    fit_intercept: bool = param(True, "An unpenalised bias per output (the paper has "
                                "none).", kind="bool",
                                option="--fit-intercept/--no-intercept")
    eps: Any = param(None, "The smoothing ε of the loss and the penalty [default: 1e-10 "
                     "x the mean squared target row (loss), (1e-12 x the largest ridge "
                     "row)² (penalty)].", low=0, low_open=True, none=True)
    tol: Any = param(None, "Tolerance of the --stop rule: the stationarity certificate "
                     "(relative gradient over the nonzero rows, default 1e-3) or the "
                     "paper's relative objective change (default 1e-4).", low=0, high=1,
                     none=True)
    stop: str = param("stationarity", "Stop on the stationarity certificate or on the "
                      "paper's relative objective change (both <= --tol).",
                      kind="choice", words=("stationarity", "objective"))
    max_iter: int = param(DEFAULT_MAX_ITER, "Cap on the IRLS iterations.", kind="int",
                          low=1)
    min_iter: int = param(DEFAULT_MIN_ITER, "IRLS iterations before the stop rule is "
                          "tested.", kind="int", low=1)
    solve: str = param("auto", "How each IRLS step solves its linear system: in the "
                       "features (primal), in the rows (woodbury) or the cheaper.",
                       kind="choice", words=("auto", "primal", "woodbury"))
    accelerate: Any = param(None, "Safeguarded extrapolation of the IRLS steps (False: "
                            "the paper's Algorithm 1; None: on with the stationarity "
                            "stop, off with the objective stop).", kind="bool", none=True,
                            cli=False)
    candidates: Any = param(None, "The two-stage mode for ultrahigh dimension: one "
                            "streamed scoring pass proposes this many candidates (an "
                            "integer, or 'auto': max(10 x --n-features-to-select, 1000)) "
                            "and IRLS ranks them, with KKT passes adding violators when "
                            "p = 1 [default: IRLS on every feature].", kind="int", low=1,
                            words=("auto",), none=True)
    scale: str = param("auto", "std ranks on columns divided by their standard deviation "
                       "(the paper z-scores; the intercept does the centring, so sparse "
                       "data stay sparse); none: as stored; auto: std, none with "
                       "--candidates.", kind="choice", words=("auto", "std", "none"))
    in_memory_bytes: Any = param(None, "Largest store IRLS on every feature holds in "
                                 "memory (else streamed; the same fit) [default: 2 GiB].",
                                 kind="int", low=0, none=True, cli=False)
    class_weight: Any = class_weight_param("Class targets only.")


@dataclass
class GSRFSFit:
    """What GSR-FS's fit returns: the ranking fit and the refit on the top features."""

    result: Any                 # methods.gsrfs.GSRFSResult, on every feature (candidate)
    refit: Any                  # methods.gsrfs.GSRFSResult, on the top features
    top: Any                    # int64 array: the best-ranked columns, best first
    W: Any                      # float64 (len(top), c): the refit's rows, in top's order
    n_outputs: int


def fit(store, targets, params: GSRFSParams, execution) -> GSRFSFit:
    """Rank the features by GSR-FS, then refit on the best ones."""
    import numpy as np

    from ultrafs.methods.gsrfs import fit_gsrfs, gram_operator
    from ultrafs.methods.gsrfs_store import fit_gsrfs_store, irls_options, response_matrix
    from ultrafs.solvers.gram_operators import ScaledGramOperator

    Y = response_matrix(targets)
    passes = execution.passes()
    result = fit_gsrfs_store(
        store, Y, r=params.r, p=params.p, lam=params.lam,
        fit_intercept=params.fit_intercept, eps=params.eps, tol=params.tol,
        stop=params.stop, max_iter=params.max_iter, min_iter=params.min_iter,
        solve=params.solve, candidates=params.candidates,
        n_features_to_select=params.n_features_to_select, accelerate=params.accelerate,
        scale=params.scale, in_memory_bytes=params.in_memory_bytes,
        sample_weight=targets.sample_weight, **passes)
    top = result.top(params.n_features_to_select)
    # the model predicts with GSR-FS refit on its selected columns (same r, p,
    # λ): the rows of the full fit leave out the other features' share of
    # every prediction (large on data that is not centred)
    order = np.argsort(top, kind="stable")
    op = gram_operator(store, top[order], **passes)
    factors = result.column_factors
    if factors is not None:
        op = ScaledGramOperator(op, factors[top[order]])
    refit = fit_gsrfs(op, Y, r=params.r, p=params.p, lam=params.lam, eps=params.eps,
                      fit_intercept=params.fit_intercept,
                      sample_weight=targets.sample_weight,
                      **irls_options(params.tol, params.stop, params.max_iter,
                                     params.min_iter))
    W = np.empty_like(refit.coef)
    W[order] = refit.coef if factors is None else refit.coef * factors[top[order], None]
    return GSRFSFit(result, refit, top, W, int(Y.shape[1]))


def to_model(fitted: GSRFSFit, store, targets, params: GSRFSParams, execution):
    """The :class:`~ultrafs.model.Model` of a GSR-FS fit.

    ``features`` are the best-ranked store ids, best first, with their rows
    of ``W``: for two classes the one decision column ``(w_+ − w_−)/2`` (the
    sign of the difference of the two ±1-code fits), for K classes the K
    columns (the predicted class has the largest fit), for a continuous
    target its one column (the prediction).  ``params["scores"]`` holds
    their ``‖w_j‖`` in the fit on every feature (or candidate); the weights
    are those of the refit on the selected features alone
    (``params["refit"]`` says how it converged), which predict.
    """
    import numpy as np

    from ultrafs.model import Model

    result, refit, top, W = fitted.result, fitted.refit, fitted.top, fitted.W
    b = refit.intercept
    target = targets.kind
    classes = [float(c) for c in store.classes] if target != "continuous" else []
    if target == "binary":
        coef, intercept = (W[:, 1] - W[:, 0]) / 2.0, float(b[1] - b[0]) / 2.0
    elif target == "multiclass":
        coef, intercept = W, np.asarray(b, dtype=np.float64)
    else:
        coef, intercept = W[:, 0], float(b[0])
    ids = store.feature_ids(top)
    recorded = {"method": "gsrfs", "r": float(params.r), "p": float(params.p),
                "lam": float(params.lam), "fit_intercept": bool(params.fit_intercept),
                "scale": "std" if result.column_factors is not None else "none",
                "eps": result.eps,
                "eps_penalty": result.eps_penalty, "solve": result.solve,
                "stop": params.stop,
                "converged": bool(result.converged), "n_iter": int(result.n_iter),
                "objective": result.objective,
                "objective_unsmoothed": result.objective_unsmoothed,
                "stationarity": result.stationarity, "n_outputs": fitted.n_outputs,
                "n_ranked": int(len(result.ranking)),
                "n_features_to_select": int(params.n_features_to_select),
                "scores": [float(v) for v in result.row_norms[result.rows(top)]],
                "refit": {"n_iter": int(refit.n_iter), "converged": bool(refit.converged),
                          "stationarity": refit.stationarity,
                          "objective": refit.objective},
                "n_passes": int(result.n_passes), "seconds": float(result.seconds),
                "loss": f"l2,{float(params.r):g}", "C": 1.0,
                "id_offset": int(store.id_offset),
                "data_fingerprint": getattr(store, "fingerprint", None),
                **targets.weight_params}
    if result.kkt_dead is not None:
        recorded["kkt_dead"] = result.kkt_dead
    if params.tol is not None:
        recorded["tol"] = float(params.tol)
    if result.candidates is not None:
        recorded["candidates"] = int(len(result.candidates))
        recorded["rounds"] = [{k: v for k, v in rnd.items() if v is not None}
                              for rnd in result.rounds]
    if execution.command:
        recorded["command"] = execution.command
    history = [{k: v for k, v in h.items() if v is not None} for h in result.history]
    return Model(
        features=[int(i) for i in ids], coef=np.asarray(coef, dtype=np.float64),
        intercept=intercept, batches=[0, len(top)], loss="l2r", classes=classes,
        target=target, feature_space={"kind": "linear"}, params=recorded,
        history=history, stop_reason=result.stop_reason,
        feature_names=Model.names_from_store(ids, store, "linear"))


def summary_lines(model, store):
    """What a person reads after ``select --method gsrfs``: ``(name, text)`` pairs."""
    p = model.params
    targets = {"binary": "two classes (±1 codes, 2 columns)",
               "multiclass": f"{p['n_outputs']} classes (±1 codes)",
               "continuous": "real targets"}[model.target]
    lines = [("data", f"{store.n_samples:,} rows x {store.n_features:,} features, "
              f"{targets}"),
             ("problem", f"ℓ2,{p['r']:g} loss + λ ℓ2,{p['p']:g}^{p['p']:g} rows, "
              f"λ = {p['lam']:g}, " + ("with" if p["fit_intercept"] else "no")
              + " intercept, " + ("columns scaled to unit standard deviation"
                                  if p["scale"] == "std" else "columns as stored"))]
    if p.get("candidates") is not None:
        rounds = p["rounds"]
        lines.append(("two-stage", f"{p['candidates']:,} candidates of "
                      f"{store.n_features:,} after {len(rounds)} round(s)"
                      + (f"; largest KKT ratio outside "
                         f"{rounds[-1]['max_kkt_outside']:.3g}"
                         if "max_kkt_outside" in rounds[-1] else "")))
    lines += [("IRLS", f"{p['solve']} solve, {p['n_iter']:,} iterations, relative "
               f"stationarity {p['stationarity']:.2g} "
               f"({'converged' if p['converged'] else 'NOT converged'})"),
              ("stopped because", model.stop_reason),
              ("selected", f"{len(model.features):,} features (of {p['n_ranked']:,} "
               f"with a nonzero row): " + ", ".join(
                   str(f) for f in model.feature_labels()[:10])
               + (", ..." if len(model.features) > 10 else ""))]
    return lines


def estimator_attributes(model, id_offset, n_features_in=None) -> dict:
    """Fitted attributes of ``GSRFSSelector`` that its model holds, besides the
    common ones: whether the ranking fit met its stop rule and its relative
    stationarity."""
    p = model.params
    return {"converged_": bool(p["converged"]), "stationarity_": float(p["stationarity"])}


GSRFS = register(Method(
    name="gsrfs", display_name="GSR-FS",
    description="GSR-FS (ℓ2,r loss, ℓ2,p row sparsity)",
    summary="gsrfs: GSR-FS (seed 002), the ℓ2,r loss on ±1 class codes or real targets "
            "with ℓ2,p row sparsity, by IRLS; the model keeps the "
            "--n-features-to-select best-ranked features.",
    params=GSRFSParams, fit=fit, to_model=to_model,
    targets=("binary", "multiclass", "continuous"), weights=True,
    execution=("passes", "progress"),
    objective="min_{W,b} sum_i ||x_i W + b - y_i||_2^r + lambda sum_j ||w_j||_2^p "
              "(IRLS, smoothed by a tiny eps)",
    estimator="GSRFSSelector", estimator_kind="selector",
    estimator_path="ultrafs.sklearn.gsrfs:GSRFSSelector", summary_lines=summary_lines,
    estimator_attributes=estimator_attributes,
    figures=("objective", "ranking"),
    report=ReportSpec(x_label="IRLS iteration",
                      panels=(HistoryPanel("objective", "objective"),
                              HistoryPanel("stationarity", "relative stationarity",
                                           log=True)),
                      title="Objective and stationarity per IRLS iteration", steps=""),
    order=40))
