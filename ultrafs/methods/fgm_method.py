"""FGM, the Feature Generating Machine (seed 003), as a registered method.

Its parameters (:class:`FGMParams`), its fit (the feature space, the
choice of C, :func:`ultrafs.methods.fgm.fit_fgm`, the ℓ2 refit) and how the
result becomes a :class:`~ultrafs.model.Model`.  The engine is imported when
``fit`` runs: this module stays light for ``ultrafs select --help``.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from typing import Any

from ultrafs.errors import ParameterError
from ultrafs.methods.params import SpelledParameterError, Params, param
from ultrafs.methods.registry import Method, ReportSpec, register
from ultrafs.methods.space_params import (check_degree_two, coef0_param, gamma_param,
                                          poly_param, standardize_param)

__all__ = ["FGMParams", "FGM", "FGMFit", "fit", "to_model", "plain_stop_reason"]

#: the inner solver's default KKT tolerance
#: (:data:`ultrafs.solvers.subproblem.DEFAULT_KKT_TOL`, checked by a test)
INNER_KKT_TOL = 1e-4


@dataclass
class FGMParams(Params):
    """FGM's parameters (see :func:`ultrafs.methods.fgm.fit_fgm`)."""

    B: int = param(50, "Features added per outer iteration.", kind="int", low=1,
                   option="--B")
    C: Any = param("scale", "Weight of the empirical loss: a number > 0, 'scale' "
                   "(10 / the median over columns of the mean square of a column's "
                   "nonzero values: 10 on 0/1 data, the same model whatever the scale "
                   "of the rows, and one unscaled column cannot move it) or 'auto' "
                   "(chosen on held-out rows from a grid around 10 / mean over rows of "
                   "the largest squared value, see --validation-fraction and --cv).",
                   low=0, low_open=True,
                   words=("scale", "auto"), option="--C", cli_type="C")
    C_grid: Any = param(None, "With --C auto: the values of C to try (CLI: "
                        "comma-separated numbers > 0), used as given: not widened when "
                        "the best lies at an edge (that is reported). Default: 8 values "
                        "around 10 / mean over rows of the largest squared value, widened by up to 3 steps past an edge where "
                        "the best lies.", kind="any", none=True, option="--C-grid",
                        cli_type="C_grid")
    loss: str = param("logistic", "Loss (K >= 3 classes: multinomial logistic or "
                      "one-vs-rest squared hinge).", kind="text", cli_type="loss")
    max_iter: int = param(10, "T: select up to B x T features with a nonzero weight "
                          "(at most 3T outer iterations).", kind="int", low=1)
    tol: float = param(1e-3, "ε_c of eq. 37, the outer loop's relative objective "
                       "decrease; 0 disables it (the loop runs until the budget B x T "
                       "is held).", low=0)
    fit_intercept: bool = param(True, "Learn a bias.", kind="bool",
                                option="--fit-intercept/--no-intercept")
    inner_tol: float = param(1e-3, "ε_in of the subproblem solver: the relative "
                             "decrease that triggers its optimality check.", low=0,
                             low_open=True)
    inner_max_iter: int = param(1000, "Iteration cap of the subproblem solver.",
                                kind="int", low=1)
    inner_kkt_tol: Any = param(INNER_KKT_TOL, "Relative KKT residual that certifies "
                               "each subproblem's solution; 0 stops on --inner-tol "
                               "alone (the paper's rule).", low=0, none=True)
    inner_solver: str = param("auto", "Subproblem solver: auto (proximal Newton or "
                              "APG), or mkl: MKL-FGM, SimpleMKL in the dual (the paper's "
                              "reference; squared hinge, two classes, at most 5,000 "
                              "rows).", kind="choice", words=("auto", "apg", "newton",
                                                              "mkl"))
    poly: int = poly_param()
    gamma: float = gamma_param()
    coef0: float = coef0_param()
    groups: Any = param(None, "Select groups of features (B groups per iteration): "
                        "FEATURE_ID GROUP_ID per line (a feature may be in several "
                        "groups), or .npy / .parquet (docs/GROUPS.md).", kind="any",
                        none=True, cli_type="file")
    tree: Any = param(None, "Select nodes of a tree of groups: the parent of every node "
                      "per line (-1: root); nodes 0..m-1 are the columns "
                      "(docs/GROUPS.md).", kind="any", none=True, cli_type="file")
    kernel: Any = param(None, "Select features of an additive kernel: each feature's "
                        "explicit map is a group generated on the fly (hik: q = 100 "
                        "levels; the others: 11 columns). Try chi2 first: it is the "
                        "one measured at or above linear features "
                        "(docs/ADDITIVE_KERNELS.md).",
                        kind="choice", words=("hik", "chi2", "intersection", "js"),
                        none=True)
    kernel_params: Any = param(None, "{'q': 100} (HIK levels) or {'n': 5, 'period': L} "
                               "(order and sampling step of the chi2 / intersection / "
                               "JS maps).", kind="any", none=True, cli=False)
    kernel_q: Any = param(None, "Levels of the --kernel hik map [default: 100].",
                          kind="int", low=1, high=10_000, none=True, option="--q")
    kernel_n: Any = param(None, "Order n of the --kernel chi2 / intersection / js maps: "
                          "2n+1 columns per feature [default: 5].", kind="int", low=0,
                          high=50, none=True)
    kernel_period: Any = param(None, "Sampling period L of the chi2 / intersection / js "
                               "maps [default: 0.315 / 0.34 / 0.25, "
                               "docs/ADDITIVE_KERNELS.md].", low=0, low_open=True,
                               none=True)
    standardize: bool = standardize_param()
    refit: bool = param(False, "Refit an l2-regularised model of the same loss on the "
                        "selected columns only and predict with it (with --C auto, "
                        "unless FGM's own weights score better on the held-out rows).",
                        kind="bool")
    refit_C: Any = param(None, "C of the refit (default: --C; with --C auto chosen on "
                         "the same held-out rows).", low=0, low_open=True, none=True)
    validation_fraction: Any = param(None, "Share of the rows held out (stratified, "
                                     "seeded by --seed). With --C auto: the rows C is "
                                     "chosen on (default 0.2; 5 folds for at most 10,000 "
                                     "rows), then the model is fitted on all rows. "
                                     "Otherwise (command line only): the model is fitted "
                                     "on the other rows and its accuracy on the held-out "
                                     "ones is printed and recorded (params.held_out).",
                                     low=0,
                                     high=1, low_open=True, high_open=True, none=True)
    cv: Any = param(None, "--C auto: K stratified folds instead of one hold-out.",
                    kind="int", low=2, none=True)
    class_weight: Any = param(None, "Weight the loss of each class: 'balanced' (n / (K x "
                              "the class's count), for imbalanced data) or a mapping "
                              "class value -> weight (CLI: VALUE:WEIGHT,...; others keep "
                              "1). --C auto then scores held-out rows by their weighted "
                              "accuracy.", kind="any", none=True, cli_type="class_weight")
    seed: int = param(0, "Seed of the held-out split or folds of --C auto (and of "
                      "--validation-fraction's split).", kind="int", low=0,
                      old=("--split-seed",))

    def __post_init__(self):
        if isinstance(self.C, (list, tuple)) or type(self.C).__name__ == "ndarray":
            raise SpelledParameterError("{C} takes one value: to choose it from a grid, "
                                        "give {C} auto and {C_grid} the values")
        super().__post_init__()

    def check(self):
        if self.refit_C is not None and not self.refit:
            raise SpelledParameterError("{refit_C} is the C of the refit: it needs {refit}")
        if self.C_grid is not None:
            if self.C != "auto":
                raise SpelledParameterError("{C_grid} is the grid of {C} auto: it needs "
                                            "{C} auto")
            from ultrafs.methods.validation import given_grid

            try:
                grid = given_grid(self.C_grid)
            except ParameterError as exc:
                raise SpelledParameterError("{C_grid}: " + str(exc).replace(
                    "{", "{{").replace("}", "}}")) from None
            object.__setattr__(self, "C_grid", grid)
        if self.cv is not None and self.C != "auto":
            raise SpelledParameterError("{cv} K chooses C on K folds: it needs {C} auto")
        if self.validation_fraction is not None and self.C != "auto":
            raise SpelledParameterError("{validation_fraction} chooses C: it needs {C} auto")
        check_degree_two(self)
        if self.standardize and self.kernel is not None:
            raise SpelledParameterError("{standardize} scales columns for the linear, "
                                        "degree-2, group and tree spaces; an additive "
                                        "{kernel}'s map scales each column itself")
        self.kernel_options()

    @classmethod
    def estimator_options(cls, options):
        """``validation_fraction``, ``cv`` and ``C_grid`` are ignored unless C is "auto"
        (a search over C may hold them fixed)."""
        if options.get("C") != "auto":
            options = {**options, "validation_fraction": None, "cv": None, "C_grid": None}
        return options

    def kernel_options(self):
        """The additive kernel's parameters: ``kernel_params`` and the
        ``kernel_q`` / ``kernel_n`` / ``kernel_period`` spellings, merged."""
        options = dict(self.kernel_params or {})
        if self.kernel_q is not None:
            if self.kernel != "hik":
                raise SpelledParameterError("{kernel_q} is the number of levels of {kernel} "
                                        "hik")
            options["q"] = self.kernel_q
        for name in ("n", "period"):
            value = getattr(self, f"kernel_{name}")
            if value is not None:
                if self.kernel not in ("chi2", "intersection", "js"):
                    raise SpelledParameterError(f"{{kernel_{name}}} applies to {{kernel}} "
                                            "chi2, intersection or js")
                options[name] = value
        return options or None


@dataclass
class FGMFit:
    """What FGM's fit returns: the loop's result and what surrounds it."""

    result: Any                 # methods.fgm.FGMResult
    features: Any               # the feature space
    C: float
    C_rule: str
    refitted: dict | None
    validation: Any             # methods.validation.ValidationCurve or None
    scales: Any = None          # standardize: the columns' factors, shape (m,)


def _structure(store, params):
    """The feature space's structure: groups / tree (objects or files)."""
    groups, tree = params.groups, params.tree
    if isinstance(groups, (str, os.PathLike)):
        from ultrafs.features.group_files import read_groups_file
        from ultrafs.features.groups import group_map

        _, value = read_groups_file(groups)
        try:
            groups = group_map(store, value)
        except ParameterError as exc:
            raise ParameterError(f"{os.fspath(params.groups)}: {exc}") from None
    if isinstance(tree, (str, os.PathLike)):
        from ultrafs.features.group_files import read_tree_file
        from ultrafs.features.tree import Tree

        try:
            tree = Tree(read_tree_file(tree), store.n_features)
        except ParameterError as exc:
            raise ParameterError(f"{os.fspath(params.tree)}: {exc}") from None
    return groups, tree


def fit(store, targets, params: FGMParams, execution) -> FGMFit:
    """Select features with FGM (see :func:`ultrafs.api.select`)."""
    from ultrafs.features import make_feature_space
    from ultrafs.methods.c_choice import resolve_C
    from ultrafs.methods.checkpoint import Checkpoint, store_fingerprint
    from ultrafs.methods.fgm import fit_fgm

    groups, tree = _structure(store, params)
    kernel_params = params.kernel_options()
    raw_store, scales = store, None
    if params.standardize:              # every pass below reads the scaled columns
        from ultrafs.features.scaling import standardized

        store = standardized(raw_store, **execution.passes())
        scales = store.scales
    features = make_feature_space(store, poly=params.poly, gamma=params.gamma,
                                  coef0=params.coef0, groups=groups, tree=tree,
                                  kernel=params.kernel, kernel_params=kernel_params)
    # the structure, converted once, for the spaces of row subsets (C="auto")
    space = {"poly": params.poly, "gamma": params.gamma, "coef0": params.coef0,
             "groups": getattr(features, "groups", None) if groups is not None else None,
             "tree": getattr(features, "tree", None),
             "kernel": params.kernel, "kernel_params": kernel_params}
    y, n_classes, weights = targets.y, targets.n_classes, targets.sample_weight
    fit_options = {"B": params.B, "loss": params.loss, "max_iter": params.max_iter,
                   "tol": params.tol, "fit_intercept": params.fit_intercept,
                   "inner_tol": params.inner_tol, "inner_max_iter": params.inner_max_iter,
                   "inner_kkt_tol": params.inner_kkt_tol or None,
                   **execution.passes(), "sample_weight": weights,
                   "inner_solver": params.inner_solver}
    C_rule = params.C if isinstance(params.C, str) else "given"
    if execution.resume and execution.checkpoint is None:
        raise ParameterError("resume needs a checkpoint directory")
    fingerprint = search = None
    if execution.checkpoint is not None:
        fingerprint = store_fingerprint(raw_store)
        if C_rule == "auto":            # the search of C is kept in the checkpoint too
            search = Checkpoint(execution.checkpoint, fingerprint, {
                **_recorded(params, store, features, targets, 0.0, C_rule), "C": "auto"})
    C, refit_C, validation = resolve_C(
        params.C, params.refit_C, params.refit, store, features, y, n_classes, space,
        fit_options, params.validation_fraction, params.cv, params.seed,
        C_grid=params.C_grid, checkpoint=search, resume=execution.resume)
    saver = None
    if execution.checkpoint is not None:
        saver = Checkpoint(execution.checkpoint, fingerprint,
                           _recorded(params, store, features, targets, C, C_rule))
    options = {k: v for k, v in fit_options.items() if k != "B"}
    with _too_large_C(params.C):
        result = fit_fgm(features, y, n_classes=n_classes, B=params.B, C=C,
                         callback=execution.callback, checkpoint=saver,
                         resume=execution.resume, progress=execution.progress,
                         memory_limit=execution.memory_limit, **options)
    refitted = None
    if params.refit:
        from ultrafs.progress import phase

        with phase("refit", total=1, unit="fit") as shown:
            refitted = _refit(features, result, y, n_classes, params,
                              float(C if refit_C is None else refit_C), weights)
            shown.update(1, status=f"C {refitted['C']:g} on "
                         f"{int(result.nonzero().sum()):,} selected features")
    return FGMFit(result, features, C, C_rule, refitted, validation, scales)


@contextlib.contextmanager
def _too_large_C(C):
    """Name ``C`` when the solver's step bound overflows (C near 1e308)."""
    try:
        yield
    except ParameterError as exc:
        if "lipschitz0" not in str(exc) and "Lipschitz" not in str(exc):
            raise
        shown = C if isinstance(C, str) else f"{C:g}"
        raise ParameterError(
            f"--C {shown} is too large for this data: the solver's curvature bound "
            "(C times the loss curvature and the squared column norms) overflows; "
            "use a smaller --C or --C scale") from None


def _recorded(params, store, features, targets, C, C_rule) -> dict:
    """What the model (and the checkpoint, which compares it) records."""
    kkt = params.inner_kkt_tol or None
    recorded = {"poly": int(params.poly), "B": int(params.B), "C": float(C),
                "C_rule": C_rule, "loss": params.loss, "max_iter": int(params.max_iter),
                "tol": float(params.tol), "fit_intercept": bool(params.fit_intercept),
                "inner_tol": float(params.inner_tol),
                "inner_max_iter": int(params.inner_max_iter),
                "inner_kkt_tol": None if kkt is None else float(kkt),
                "id_offset": int(store.id_offset), **targets.weight_params}
    if params.inner_solver != "auto":   # recorded (and compared by checkpoints) when chosen
        recorded["inner_solver"] = params.inner_solver
    if params.standardize:              # recorded (and compared by checkpoints) when on
        recorded["standardize"] = True  # (to_model adds the features' factors)
    recorded.update({name: value for name, value in features.spec().items()
                     if name not in ("kind", "scales")})
    if features.kind != "linear" and features.poly_degree is None:
        recorded["space"] = features.kind
        recorded["n_candidates"] = int(features.n_candidates)
        digest = getattr(features, "structure_digest", None)
        if digest is not None:
            recorded["structure_digest"] = digest()
    return recorded


def _refit(features, result, y, n_classes, params, C, sample_weight):
    """ℓ2-regularised refit of the same loss on the selected columns only:
    the FGM subproblem on one block (``1/2 ||W||^2``), from FGM's weights
    (:func:`ultrafs.methods.refit.refit_block`)."""
    from ultrafs.methods.refit import check_refit_C, refit_block

    nonzero = result.nonzero()
    block = features.materialize(result.keys[nonzero])
    return refit_block(block, y, loss=params.loss, C=check_refit_C(C),
                       n_classes=n_classes, fit_intercept=params.fit_intercept,
                       coef0=result.coef_matrix()[nonzero], bias0=result.bias,
                       tol=params.inner_tol, kkt_tol=params.inner_kkt_tol or None,
                       sample_weight=sample_weight)


def _nonzero_batches(batch_ptr, nonzero):
    """Batch boundaries counting only the features with a nonzero weight."""
    import numpy as np

    counts = [int(np.count_nonzero(nonzero[lo:hi]))
              for lo, hi in zip(batch_ptr[:-1], batch_ptr[1:])]
    return [0] + np.cumsum(counts, dtype=np.int64).tolist()


def predictor(refitted, validation) -> str:
    """Which weights predict: the refit's, unless there is none or the
    held-out rows of ``C="auto"`` scored FGM's own weights better."""
    if refitted is None or (validation is not None
                            and validation.predictor == "selection"):
        return "selection"
    return "refit"


def to_model(fitted: FGMFit, store, targets, params: FGMParams, execution):
    """The :class:`~ultrafs.model.Model` of an FGM fit: only the features with
    a nonzero weight (in some class); ``history`` keeps what each pass
    proposed."""
    import numpy as np

    from ultrafs.model import Model

    result, features = fitted.result, fitted.features
    recorded = _recorded(params, store, features, targets, fitted.C, fitted.C_rule)
    if execution.command:
        recorded["command"] = execution.command
    # names the data the model was fitted on (see ultrafs/store/fingerprint.py)
    recorded["data_fingerprint"] = getattr(store, "fingerprint", None)
    nonzero = result.nonzero()
    if fitted.refitted is not None:
        recorded["refit_C"] = fitted.refitted["C"]
    if fitted.validation is not None:
        recorded["validation"] = fitted.validation.to_dict()
    ids = features.feature_ids(result.keys[nonzero])
    model = Model(
        features=ids,
        coef=np.asarray(result.coef_matrix()[nonzero], dtype=np.float64),
        intercept=-result.bias,
        batches=_nonzero_batches(result.batch_ptr, nonzero),
        loss=params.loss,
        classes=[float(c) for c in store.classes],
        target="binary" if targets.n_classes is None else "multiclass",
        feature_space=features.spec(),
        params=recorded,
        history=result.history,
        stop_reason=result.stop_reason,
        refit=fitted.refitted,
        predictor=predictor(fitted.refitted, fitted.validation),
        feature_names=Model.names_from_store(ids, store, features.kind),
    )
    if fitted.scales is not None:       # weights on the original scale
        from ultrafs.features.scaling import feature_scales, on_original_scale

        on_original_scale(model, feature_scales(features, ids, fitted.scales))
    return model


def plain_stop_reason(reason):
    """FGM's stop reason in plain words."""
    match = re.match(r"holds the budget of B x max_iter = (\d+)", reason)
    if match:
        return f"reached its budget of {int(match.group(1)):,} features (--B x --max-iter)"
    match = re.match(r"relative objective decrease (\S+) <= tol=(\S+)", reason)
    if match:
        return (f"converged: the last iteration improved the objective by "
                f"{float(match.group(1)):.2%}, under --tol {match.group(2)}")
    if reason.startswith("no candidate feature"):
        return "no other feature would improve the model"
    match = re.match(r"reached (\d+) outer iterations.*holding (\d+) of the (\d+)", reason)
    if match:
        return (f"stopped after {match.group(1)} iterations (3 x --max-iter) with "
                f"{match.group(2)} of its {match.group(3)} budgeted features")
    return reason


def summary_lines(model, store):
    """What a person reads after ``select``: ``(name, text)`` pairs."""
    import numpy as np

    params = model.params
    n_features = len(model.features)
    budget = params.get("B", 0) * params.get("max_iter", 0)
    coef = np.asarray(model.coef)
    lines = []
    space = params.get("space")
    if space in ("groups", "tree") or model.feature_space.get("kind") in (
            "hik", "chi2", "intersection", "js"):
        unit = {"groups": "groups", "tree": "nodes"}.get(space, "kernels (features)")
        shown = ", ".join(str(u) for u in model.selected_groups[:10])
        more = len(model.selected_groups) - 10
        lines.append((f"{unit} selected", f"{len(model.selected_groups):,} of "
                      f"{budget:,} (--B {params.get('B')} x --max-iter "
                      f"{params.get('max_iter')}) among {params.get('n_candidates', 0):,}: "
                      f"{shown}" + (f" and {more:,} more" if more > 0 else "")))
        lines.append(("columns", f"{n_features:,} with a nonzero weight, of "
                      f"{store.n_features:,} columns of {store.n_samples:,} rows"))
    else:
        lines.append(("features selected", f"{n_features:,} of {budget:,} "
                      f"(--B {params.get('B')} x --max-iter {params.get('max_iter')}), "
                      f"among {store.n_features:,} columns of {store.n_samples:,} rows"))
    if coef.ndim == 2 and coef.shape[1] > 1:
        lines.append(("nonzero weights", f"{int(np.count_nonzero(coef)):,} of "
                      f"{coef.size:,} ({n_features:,} features x {coef.shape[1]} "
                      "classes)"))
    else:
        lines.append(("nonzero weights", f"{int(np.count_nonzero(coef)):,} of "
                      f"{coef.size:,}"))
    if model.history:
        lines.append(("objective", f"{model.history[-1]['objective']:.6g} after "
                      f"{len(model.history)} iteration"
                      f"{'s' * (len(model.history) != 1)}"))
    lines.append(("stopped because", plain_stop_reason(model.stop_reason or "")))
    lines.append(("C", f"{params.get('C', 0):g} ({params.get('C_rule', 'given')})"))
    validation = params.get("validation")
    if validation:
        from ultrafs.methods.validation import chosen_point, validation_note

        best = chosen_point(validation)
        note = validation_note(validation)
        if best is not None and "accuracy" in best:
            lines.append(("validation accuracy", f"{best['accuracy']:.4f} at the chosen "
                          f"C ({validation.get('method')}; "
                          + (note + "; " if note else "")
                          + "the model is then fitted on all rows)"))
    if model.refit is not None:
        lines.append(("predicts with", "the refit" if model.predictor == "refit" else
                      "FGM's own weights" + (" (they scored better than the refit on "
                                             "the held-out rows)" if validation else "")))
    return lines


def progress_line(record) -> str:
    """One stderr line per outer iteration."""
    from ultrafs.scoring.progress import format_seconds

    seconds = sum(record.get(f"{phase}_seconds", 0.0)
                  for phase in ("score", "materialize", "solve"))
    return (f"{record['n_features']:,} features ({record['n_nonzero']:,} with a "
            f"nonzero weight), objective {record['objective']:.6g}, "
            + (f"{record['pairs_evaluated']:,} of {record['candidates']:,} "
               "pairs evaluated, " if "pairs_evaluated" in record else "")
            + f"{format_seconds(seconds)} (scoring "
            f"{format_seconds(record['score_seconds'])}, solving "
            f"{format_seconds(record['solve_seconds'])})")


def estimator_attributes(model, id_offset, n_features_in=None) -> dict:
    """FGMClassifier's own fitted attributes: ``C_`` (the C fitted with) and
    ``validation_`` (the held-out curve of ``C="auto"``, else None)."""
    return {"C_": float(model.params["C"]), "validation_": model.params.get("validation")}


FGM = register(Method(
    name="fgm", display_name="FGM", description="the Feature Generating Machine",
    summary="fgm: the Feature Generating Machine (seed 003): B features per outer "
            "iteration, up to B x max_iter with a nonzero weight.",
    params=FGMParams, fit=fit, to_model=to_model,
    targets=("binary", "multiclass"), weights=True,
    execution=("passes", "progress", "checkpoint", "memory_limit"),
    objective="min_{d in D} max_{alpha} -1/2 ||sum_t d_t w_t||^2 + C sum_i loss_i "
              "(eq. 30; on the selected batches: 1/2 ||W||_{2,1}^2 + C sum_i loss_i)",
    estimator="FGMClassifier", summary_lines=summary_lines, progress_line=progress_line,
    estimator_attributes=estimator_attributes,
    figures=("objective", "timing", "features", "accuracy", "validation"),
    report=ReportSpec(objective_title=r"Objective $\frac{1}{2}(\Sigma_h\,\|\omega_h\|)^2"
                                      r" + C\,\Sigma_i\,\ell_i$ per outer iteration"),
    order=0))
