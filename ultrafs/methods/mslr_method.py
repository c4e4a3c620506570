"""Minimax sparse logistic regression (MSLR, seed 000) as a registered method.

Its parameters (:class:`MSLRParams`), its fit (the candidates, the
cutting plane of :func:`ultrafs.methods.mslr.fit_mslr`, then the paper's
ℓ2-LR refit on the selected columns, :func:`ultrafs.methods.mslr.retrain`),
how the result becomes a :class:`~ultrafs.model.Model`, the CLI's summary
and progress lines and the fitted attributes of its estimator.  The engine
is imported when ``fit`` runs: this module stays light for
``ultrafs select --help``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ultrafs.methods.params import SpelledParameterError, Params, param, specs_of
from ultrafs.methods.registry import HistoryPanel, Method, ReportSpec, register
from ultrafs.methods.space_params import (check_degree_two, coef0_param, gamma_param,
                                          poly_param, standardize_param)
from ultrafs.methods.weight_params import class_weight_param

__all__ = ["MSLRParams", "MSLRFit", "MSLR", "fit", "to_model", "summary_lines",
           "progress_line", "estimator_attributes"]

@dataclass
class MSLRParams(Params):
    """MSLR's parameters (see :func:`ultrafs.methods.mslr.fit_mslr` and
    :func:`ultrafs.methods.mslr.retrain`)."""

    B: int = param(10, "r: features per constraint (the top r of the worst-case "
                   "scores); at most B x max_iter features are selected.", kind="int",
                   low=1, option="--B")
    C: Any = param(10.0, "Weight of the loss of the minimax problem (the paper's 10), "
                   "or 'scale': 10 / mean over rows of the largest squared value (10 on "
                   "0/1 data; FGM's former rule, which one unscaled column can "
                   "collapse: see docs/USAGE.md, C).", low=0, low_open=True,
                   words=("scale",), option="--C", cli_type="C")
    max_iter: int = param(10, "T_m: cutting-plane iterations (constraints) at most.",
                          kind="int", low=1)
    tol: float = param(1e-3, "ε of the cutting plane's violation test: stop when the "
                       "new constraint's violation is at most tol x |max_t f_t(α)|; 0 "
                       "disables it (T_m iterations unless a constraint repeats).",
                       low=0)
    inner_tol: float = param(1e-4, "Relative duality gap that certifies each reduced "
                             "minimax problem (smoothing and coordinate descent).",
                             low=0, low_open=True, old=("subproblem_tol",))
    refit: bool = param(True, "Refit l2-regularised logistic regression on the selected "
                        "columns and predict with it (the paper's protocol); "
                        "--no-refit predicts with MSLR's own classifier (no bias).",
                        kind="bool", old=("retrain", "--no-retrain"))
    refit_C: Any = param(5.0, "C of the refit (the paper's 5), or 'auto': chosen on 20% "
                         "of the rows held out (stratified, seeded by --seed), then "
                         "fitted on all rows.", low=0, low_open=True, words=("auto",),
                         old=("retrain_C", "--retrain-C"))
    fit_intercept: bool = param(True, "The refit has an unpenalised intercept (MSLR "
                                "itself has none).", kind="bool",
                                option="--fit-intercept/--no-intercept",
                                old=("retrain_intercept",))
    poly: int = poly_param()
    gamma: float = gamma_param()
    coef0: float = coef0_param()
    standardize: bool = standardize_param()
    seed: int = param(0, "Seed of the coordinate sweeps' row orders and of the held-out "
                      "split of --refit-C auto.", kind="int", low=0,
                      old=("--split-seed",))
    class_weight: Any = class_weight_param("The refit is weighted too (--refit-C auto "
                                           "scores held-out rows by their weighted "
                                           "accuracy).")

    def check(self):
        if not self.refit and self.refit_C != _default("refit_C"):
            raise SpelledParameterError("{refit_C} is the C of the refit: it needs {refit}")
        check_degree_two(self)

    @classmethod
    def estimator_options(cls, options):
        """``refit_C`` is ignored without the refit, ``gamma`` and ``coef0``
        unless ``poly=2`` (a search over ``refit`` or ``poly`` may hold them
        fixed)."""
        options = dict(options)
        if options.get("refit") is False:
            options["refit_C"] = _default("refit_C")
        if options.get("poly") != 2:
            options.update(gamma=_default("gamma"), coef0=_default("coef0"))
        return options


def _default(name):
    return specs_of(MSLRParams)[name][0]


@dataclass
class MSLRFit:
    """What MSLR's fit returns: the cutting plane's result and what surrounds it."""

    result: Any                 # methods.mslr.MSLRResult
    features: Any               # the feature space
    C: float
    C_rule: str
    refitted: dict | None       # methods.mslr.retrain's dict, or None
    scales: Any = None          # standardize: the columns' factors, shape (m,)


def fit(store, targets, params: MSLRParams, execution) -> MSLRFit:
    """Select features with MSLR and refit ℓ2-LR on them (``params.refit``).

    Parameters
    ----------
    store : ColumnStore
    targets : Targets
        ±1 labels (``kind == "binary"``).
    params : MSLRParams
    execution : Execution
        Its passes, ``callback`` (each iteration's record) and ``progress``.

    Returns
    -------
    MSLRFit
    """
    import numpy as np

    from ultrafs.features import make_feature_space
    from ultrafs.methods.mslr import fit_mslr, retrain
    from ultrafs.methods.validation import default_C

    K = targets.n_classes          # None: two classes (±1 labels)
    labels = np.asarray(targets.y, dtype=np.float64 if K is None else np.int64)
    weights = targets.sample_weight
    scales = None
    if params.standardize:              # every pass below reads the scaled columns
        from ultrafs.features.scaling import standardized

        store = standardized(store, **execution.passes())
        scales = store.scales
    features = make_feature_space(store, poly=params.poly, gamma=params.gamma,
                                  coef0=params.coef0)
    C, C_rule = params.C, "default" if params.is_default("C") else "given"
    if C == "scale":
        C_rule = "scale"
        C = default_C(features, **execution.passes())
    result = fit_mslr(features, labels, B=params.B, C=C, max_iter=params.max_iter,
                      tol=params.tol, subproblem_tol=params.inner_tol,
                      callback=execution.callback, progress=execution.progress,
                      seed=params.seed, sample_weight=weights, n_classes=K,
                      **execution.passes())
    refitted = None
    if params.refit and len(result.keys):
        refitted = retrain(result.block, labels, C=params.refit_C,
                           fit_intercept=params.fit_intercept, seed=params.seed,
                           sample_weight=weights, n_classes=K)
    return MSLRFit(result, features, float(C), C_rule, refitted, scales)


def to_model(fitted: MSLRFit, store, targets, params: MSLRParams, execution):
    """The :class:`~ultrafs.model.Model` of an MSLR fit.

    ``features`` is the union of the constraints in order of first
    selection (at most ``B * max_iter``), ``coef`` MSLR's classifier
    ``v = d ⊙ c(α)`` (intercept 0), ``refit`` the ℓ2-LR refit (which
    predicts), ``params["constraints"]`` the feature ids of every ``S_t``
    and ``params["mu"]`` their weights.  ``params["refit_C"]`` is the refit's
    C (chosen, with ``refit_C="auto"``: ``params["refit_C_rule"]``, and the
    held-out curve in ``params["retrain_validation"]``).
    """
    import numpy as np

    from ultrafs.model import Model

    result, features, refitted = fitted.result, fitted.features, fitted.refitted
    ids = features.feature_ids(result.keys)
    recorded = {"method": "mslr", "poly": int(params.poly), "B": int(params.B),
                "C": float(fitted.C), "C_rule": fitted.C_rule,
                "max_iter": int(params.max_iter), "tol": float(params.tol),
                "inner_tol": float(params.inner_tol), "seed": int(params.seed),
                "loss": "logistic", "id_offset": int(store.id_offset),
                "constraints": [[ids[k] for k in members]
                                for members in result.constraints],
                "mu": [float(v) for v in result.mu],
                "n_active": int(np.count_nonzero(result.active())),
                "data_fingerprint": getattr(store, "fingerprint", None),
                **targets.weight_params}
    recorded.update({name: value for name, value in features.spec().items()
                     if name not in ("kind", "scales")})
    if refitted is not None:
        # what refit_prefix (the report's curves) reads: the refit's C and
        # intercept setting; MSLR itself has no intercept
        recorded.update(refit_C=float(refitted["C"]),
                        refit_C_rule="auto" if params.refit_C == "auto" else "given",
                        fit_intercept=bool(params.fit_intercept))
        if "validation" in refitted:
            recorded["retrain_validation"] = refitted["validation"]
    else:
        recorded["fit_intercept"] = False
    if execution.command:
        recorded["command"] = execution.command
    coef = np.asarray(result.coef, dtype=np.float64)
    model = Model(
        features=ids,
        coef=coef,
        intercept=0.0 if coef.ndim == 1 else np.zeros(coef.shape[1]),
        batches=[int(b) for b in result.batch_ptr],
        loss="logistic",
        classes=[float(c) for c in store.classes],
        target=targets.kind,
        feature_space=features.spec(),
        params=recorded,
        history=result.history,
        stop_reason=result.stop_reason,
        refit=None if refitted is None else {
            "coef": np.asarray(refitted["coef"], dtype=np.float64),
            "intercept": (float(refitted["intercept"]) if coef.ndim == 1 else
                          np.asarray(refitted["intercept"], dtype=np.float64)),
            "C": float(refitted["C"])},
        predictor="refit" if refitted is not None else "selection",
        feature_names=Model.names_from_store(ids, store, features.kind),
    )
    if fitted.scales is not None:       # weights on the original scale
        from ultrafs.features.scaling import feature_scales, on_original_scale

        on_original_scale(model, feature_scales(features, ids, fitted.scales))
    return model


def summary_lines(model, store):
    """What a person reads after ``select --method mslr``: ``(name, text)`` pairs."""
    p = model.params
    last = model.history[-1] if model.history else {}
    lines = [("features selected",
              f"{len(model.features):,} of {p['B'] * p['max_iter']:,} (--B {p['B']} x "
              f"--max-iter {p['max_iter']}) in {len(p['constraints'])} constraints, "
              f"{p['n_active']:,} in constraints of weight > 1e-6; among "
              f"{store.n_features:,} columns of {store.n_samples:,} rows"),
             ("C", f"{p['C']:g} ({p.get('C_rule', 'given')})")]
    if last:
        lines.append(("subproblem", f"P(v) {last['objective']:.6g}, relative duality "
                      f"gap {last['rel_gap']:.2g} "
                      f"({'certified' if last['certified'] else 'NOT certified'})"))
    lines.append(("stopped because", model.stop_reason))
    if model.refit is not None:
        chosen = p.get("retrain_validation")
        lines.append(("refit", f"ℓ2-LR, C = {p['refit_C']:g}"
                      + (" (chosen on held-out rows)" if chosen else "")
                      + (", with an intercept" if p.get("fit_intercept") else
                         ", no intercept") + "; it predicts"))
    return lines


def progress_line(record) -> str:
    """One stderr line per cutting-plane iteration (after the CLI's
    ``iteration N: ``)."""
    from ultrafs.scoring.progress import format_seconds

    return (f"{record['n_features']:,} features in "
            f"{record['n_constraints']} constraints, P(v) {record['objective']:.6g} "
            f"(relative gap {record['rel_gap']:.2g}, q {record['q']:.3g}, "
            f"{record['sweeps']:,} sweeps), scoring "
            f"{format_seconds(record['score_seconds'])}, solving "
            f"{format_seconds(record['solve_seconds'])}")


def estimator_attributes(model, id_offset, n_features_in=None) -> dict:
    """``MSLRClassifier``'s fitted attributes besides the common ones.

    MSLR's own classifier ``v`` (no bias) is the common
    ``selection_coef_`` (the refit, which predicts, is ``selected_coef_``).

    Returns
    -------
    dict
        ``constraints_``: list of int64 arrays, the columns of every
        constraint ``S_t`` in selection order (store ids less
        ``id_offset``); ``mu_``: ndarray of shape (n_constraints,), their
        weights (sum 1); with linear features and ``n_features_in``,
        ``mslr_coef_``: ndarray of shape (n_outputs, n_features_in) (1 for
        two classes, K one-vs-rest rows for K >= 3), MSLR's own weights over
        every input column (the common ``coef_`` is the refit's when it
        predicts), a :class:`~ultrafs.methods.per_column.PerColumn`: the
        estimator writes it when read, and refuses it in one line above
        ``DENSE_MAX_ENTRIES`` entries (a hashed width).
    """
    import numpy as np

    from ultrafs.methods.per_column import PerColumn

    attributes = {"constraints_": [np.asarray(s, dtype=np.int64) - id_offset
                                   for s in model.params["constraints"]],
                  "mu_": np.asarray(model.params["mu"], dtype=np.float64)}
    if n_features_in is not None and model.feature_space.get("kind", "linear") == "linear":
        own = np.asarray(model.coef, dtype=np.float64).reshape(len(model.features), -1)
        attributes["mslr_coef_"] = PerColumn(
            "mslr_coef_", np.asarray(model.features, dtype=np.int64) - id_offset, own,
            int(n_features_in), transpose=True,
            compact="the compact selection_coef_ with selected_features_")
    return attributes


MSLR = register(Method(
    name="mslr", display_name="MSLR", description="minimax sparse logistic regression",
    summary="mslr: minimax sparse logistic regression (seed 000): r = B features per "
            "constraint, T_m = max_iter constraints at most, no bias (K >= 3 classes: "
            "one-vs-rest with one shared support); refitted by l2-LR (multinomial for "
            "K classes) on its selection.",
    params=MSLRParams, fit=fit, to_model=to_model, targets=("binary", "multiclass"),
    weights=True,
    execution=("passes", "progress"),
    objective="min_{d in D} max_{alpha in (0,C)^n} -f(alpha, d), D = {d in [0,1]^m : "
              "sum_j d_j <= r} (the relaxed l0-constrained logistic regression without "
              "bias; then the l2-LR refit 1/2 ||w||^2 + refit_C sum_i log(1 + "
              "exp(-y_i (x_i'w + c))) on the selected columns)",
    estimator="MSLRClassifier", estimator_kind="classifier",
    summary_lines=summary_lines, progress_line=progress_line,
    estimator_attributes=estimator_attributes, probabilistic=True,
    figures=("objective", "timing", "features", "accuracy"),
    report=ReportSpec(x_label="constraint",
                      panels=(HistoryPanel("objective", "objective"),
                              HistoryPanel("n_features", "selected features", kind="bar"),
                              HistoryPanel("rel_gap", "relative duality gap", log=True)),
                      title="Objective, features and duality gap per constraint",
                      steps="constraints"),
    order=20))
