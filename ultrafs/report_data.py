"""What a run report shows, as plain data: the method's description, its
parameters and fit record, the history series, the phase timings and the
top features of a model.

:mod:`ultrafs.report` draws this data (:mod:`ultrafs.report_figures`) and
writes it (:mod:`ultrafs.report_html`).  What applies to a method is read
from its registration (:class:`~ultrafs.methods.registry.Method`:
``objective``, ``figures``, ``report``, the ``Params`` spec), never from
its name.
"""

from __future__ import annotations

import math
import os

import numpy as np

__all__ = ["method_of", "method_name", "report_spec", "figures_of", "figure_data",
           "parameter_rows", "record_rows", "store_info", "top_features",
           "feature_label", "PHASES", "FIGURES"]

#: phases timed by the cutting-plane loop, in the order they run
PHASES = ("score_seconds", "materialize_seconds", "solve_seconds")
#: every figure the report knows, in page order
FIGURES = ("objective", "timing", "features", "ranking", "basis", "accuracy",
           "lambda_path", "validation")
#: ``params`` entries that locate the model, not describe the method's run
_LOCATORS = ("method", "validation")
#: ``params`` entries every model file carries for the Model format (the
#: refit's ``C``, the loss), by the parameter they belong to: shown only
#: when the method's Params has that parameter
_FORMAT_FIELDS = {"C": "C", "C_rule": "C", "loss": "loss"}


# ------------------------------------------------------------------ method
def method_of(model):
    """The registered method that made ``model`` (``params["method"]``, FGM
    when absent), or None when no loaded module registers it."""
    from ultrafs.errors import ParameterError
    from ultrafs.methods.registry import method_of_params

    try:
        return method_of_params(model.params)
    except ParameterError:
        return None


def method_name(model) -> str:
    """How the report names the method that made ``model`` (its display name)."""
    method = method_of(model)
    return method.display_name if method is not None else str(model.params["method"])


def report_spec(model):
    """The :class:`~ultrafs.methods.registry.ReportSpec` of the model's method
    (the default, FGM's layout, when the method is unknown)."""
    from ultrafs.methods.registry import ReportSpec

    method = method_of(model)
    return method.report if method is not None else ReportSpec()


def figures_of(model) -> tuple:
    """Which figures of the report apply to the method that made ``model``."""
    method = method_of(model)
    return method.figures if method is not None else (
        "objective", "timing", "features", "accuracy", "validation")


def objective_title(model) -> str:
    """The objective panel's title: the method's own (mathtext), else
    "<method> objective per <step>"."""
    spec = report_spec(model)
    if spec.objective_title:
        return spec.objective_title
    return f"{method_name(model)} objective per {spec.x_label}".replace("$", r"\$")


# -------------------------------------------------------------- parameters
def _spec_names(model):
    """The names of the method's parameters (its Params spec), or None when
    the method is unknown (every ``params`` entry is then shown)."""
    from ultrafs.methods.params import specs_of

    method = method_of(model)
    return None if method is None else list(specs_of(method.params))


def parameter_rows(model) -> list[tuple]:
    """``[(name, value)]``: the method's parameters as the model records them,
    in the order of its Params spec (none it does not have)."""
    names = _spec_names(model)
    params = model.params
    if names is None:
        return [(k, v) for k, v in sorted(params.items()) if k not in _LOCATORS]
    return [(k, params[k]) for k in names if k in params]


def record_rows(model) -> list[tuple]:
    """``[(name, value)]``: what the model records about its fit besides the
    parameters (λ_max, iterations, certificates, scores, the data's
    fingerprint), sorted by name."""
    names = _spec_names(model)
    if names is None:
        return []

    def belongs(key):
        owner = _FORMAT_FIELDS.get(key)
        return owner is None or owner in names

    return [(k, v) for k, v in sorted(model.params.items())
            if k not in names and k not in _LOCATORS and belongs(k)]


def model_rows(model) -> list[tuple]:
    """``[(name, value)]``: the model itself (loss, space, counts, intercept...)."""
    from ultrafs.report_curves import n_iterations

    spec = report_spec(model)
    rows = [("method", method_name(model)),
            ("loss", model.loss),
            ("feature space", model.feature_space),
            ("features selected", len(model.features))]
    if spec.steps:
        rows.append((spec.steps, n_iterations(model)))
    rows.append(("intercept", float(model.intercept) if model.n_outputs == 1
                 else [float(b) for b in model.intercept]))
    if model.target == "continuous":
        rows.append(("target", "continuous (regression)"))
    else:
        rows.append(("classes [negative, positive]" if model.n_outputs == 1
                     else "classes", model.classes))
    rows.append(("stop reason", model.stop_reason))
    return rows


def store_info(store, name=None) -> str:
    """``name (n samples, m columns)`` of a store; ``name`` defaults to its
    path (give the file the user named: a LIBSVM file's store lives in a
    cache folder)."""
    info = (f"{int(store.n_samples):,} samples, "
            f"{int(store.n_features):,} columns")
    if name is None:
        path = getattr(store, "path", None)
        name = None if path is None else os.fspath(path)
    return info if name is None else f"{os.fspath(name)} ({info})"


# ---------------------------------------------------------------- features
def feature_label(feature) -> str:
    """Display form of a feature id: ``48`` or ``[5, 10]``."""
    if isinstance(feature, (list, tuple, np.ndarray)):
        return "[" + ", ".join(str(int(f)) for f in feature) + "]"
    return str(int(feature))


def _json_id(feature):
    """A feature id as plain JSON (int or list of ints)."""
    if isinstance(feature, (list, tuple, np.ndarray)):
        return [int(f) for f in feature]
    return int(feature)


def _batch_of_each_feature(model) -> np.ndarray:
    """Outer iteration (1-based) that selected each feature of ``model``."""
    batches = np.asarray(model.batches, dtype=np.int64)
    positions = np.arange(len(model.features))
    return np.searchsorted(batches, positions, side="right").astype(np.int64)


def top_features(model, top: int) -> list[dict]:
    """The ``top`` features by ``|weight|`` (ties: selection order).

    With K classes the weight shown is the Euclidean norm of the feature's
    K weights (the quantity its ℓ2,1² penalty acts on).
    """
    coef = np.asarray(model.coef, dtype=np.float64)
    if coef.ndim == 2:
        coef = np.linalg.norm(coef, axis=1)
    order = np.argsort(-np.abs(coef), kind="stable")[:max(int(top), 0)]
    selected_in = _batch_of_each_feature(model)
    names = model.feature_names or [None] * len(model.features)
    return [{"rank": rank + 1,
             "id": _json_id(model.features[pos]),
             "label": feature_label(model.features[pos]),
             "name": names[pos],
             "weight": float(coef[pos]),
             "iteration": int(selected_in[pos]),
             "position": int(pos)}
            for rank, pos in enumerate(order)]


def ranking(model, top: int) -> list[dict]:
    """The first ``top`` selected features with their ranking scores
    (``params["scores"]``, best first, as the model keeps them); empty when
    the model records no scores."""
    scores = model.params.get("scores") or []
    names = model.feature_names or [None] * len(model.features)
    return [{"rank": i + 1, "id": _json_id(model.features[i]),
             "label": feature_label(model.features[i]), "name": names[i],
             "score": float(score)}
            for i, score in enumerate(scores[:max(int(top), 0)])]


def basis(model) -> dict | None:
    """The basis functions' weights: ``n_basis`` (None when not recorded)
    and ``weights`` (|weight| of each nonzero one, largest first; with K
    classes the norm of its K weights)."""
    coef = np.asarray(model.coef, dtype=np.float64)
    if coef.ndim == 2:
        coef = np.linalg.norm(coef, axis=1)
    weights = np.sort(np.abs(coef[coef != 0]))[::-1]
    n_basis = model.params.get("n_basis")
    return {"n_basis": None if n_basis is None else int(n_basis),
            "weights": [float(w) for w in weights]}


# ----------------------------------------------------------------- history
def _is_phase(key) -> bool:
    """A record field holding a phase's wall seconds (``score_seconds``,
    ``seconds_kkt``; ``*_cpu_seconds`` are CPU time, not phases)."""
    return ((key.endswith("_seconds") and not key.endswith("_cpu_seconds"))
            or key.startswith("seconds_"))


def phase_label(key) -> str:
    """``score_seconds`` -> ``score``; ``seconds_kkt`` -> ``kkt``."""
    return key.removesuffix("_seconds").removeprefix("seconds_")


def _number(value):
    """A float, or NaN for a missing or non-numeric value."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return math.nan
    return value


def figure_data(model, top) -> dict:
    """The data behind the figures and tables (JSON-serialisable)."""
    spec = report_spec(model)
    history = [dict(r) for r in model.history]
    names = [k for k in PHASES if any(k in r for r in history)]
    names += sorted({k for r in history for k in r if _is_phase(k)} - set(names))
    phases = {name: [float(r.get(name, 0.0) or 0.0) for r in history] for name in names}
    x = [_number(r.get(spec.x, i + 1)) for i, r in enumerate(history)]
    series = {p.key: [_number(r.get(p.key)) for r in history]
              for p in spec.panels if any(p.key in r for r in history)}
    marked = model.params.get(spec.marked) if spec.marked else None
    return {
        "iteration": [int(r.get("iteration", i + 1)) for i, r in enumerate(history)],
        "n_features": [int(r.get("n_features", 0)) for r in history],
        "objective": [None if r.get("objective") is None else float(r["objective"])
                      for r in history],
        "x": x,
        "series": series,
        "marked": None if marked is None else float(marked),
        "phases": phases,
        "history": history,
        "top_features": top_features(model, top),
        "ranking": ranking(model, top),
        "basis": basis(model),
        "accuracy": None,
        "accuracy_refit": None,
        "accuracy_l1": None,
        "accuracy_notes": [],
        "lambda_path": None,
        "lambda_notes": [],
        "absent_warning": None,
        "train_info": None,
        "validation": model.params.get("validation"),
        "method": method_name(model),
        "objective_title": objective_title(model),
    }
