"""Run report: an HTML page with PNG figures describing a fitted model.

``build_report(model, "out/report.html")`` writes ``out/report.html`` and,
next to it, ``out/report_objective.png`` (objective and number of features
per outer iteration), ``out/report_timing.png`` (seconds per phase per
iteration), ``out/report_features.png`` (top features by ``|weight|``) and,
when a labelled test store is given, ``out/report_accuracy.png`` (test
accuracy and AUC of the model truncated to its first k selection
iterations; with the training store too, next to the ℓ2 refit of each
prefix and scikit-learn's ℓ1-LR at the same number of features, a baseline
that loads the training store in memory).  The PNG names are built from
the HTML file's stem, so several reports can share a folder.

The page is self-contained apart from the PNGs, which it references by
relative name; it also holds the tables behind the figures.  matplotlib is
an optional dependency (``pip install 'ultrafs[report]'``), imported only
here and used through its object-oriented API with the Agg canvas, so the
caller's pyplot backend is never touched.
"""

from __future__ import annotations

import errno
import html
import math
import os
import shutil
import tempfile
import urllib.parse

import numpy as np


from ultrafs import __version__
from ultrafs.atomic import publish_path, rename_os_error
from ultrafs.errors import UltraFSError
from ultrafs.methods.validation import chosen_point, validation_note
# the curves are computed there; accuracy_curves and accuracy_vs_features
# stay importable from here, the report's public face
from ultrafs.report_curves import accuracy_curves, accuracy_vs_features, n_iterations

__all__ = ["build_report", "accuracy_vs_features", "accuracy_curves"]

#: phases timed by the cutting-plane loop, in the order they run
PHASES = ("score_seconds", "materialize_seconds", "solve_seconds")
#: history columns shown first in the iteration table, in this order
HISTORY_FIRST = ("iteration", "n_features", "n_new", "objective",
                 "inner_iterations") + PHASES

MISSING_MATPLOTLIB = "the report needs matplotlib: pip install 'ultrafs[report]'"


# ------------------------------------------------------------------ helpers
def _feature_label(feature) -> str:
    """Display form of a feature id: ``48`` or ``[5, 10]``."""
    if isinstance(feature, (list, tuple, np.ndarray)):
        return "[" + ", ".join(str(int(f)) for f in feature) + "]"
    return str(int(feature))


def _tick_label(row, limit=40) -> str:
    """A feature's axis label: its id, and its name (shortened) when it has one."""
    name = row.get("name")
    if name is None:
        return row["label"]
    if len(name) > limit:
        name = name[:limit - 1] + "…"
    # a "$" would start matplotlib's mathtext
    return f"{name.replace('$', chr(92) + '$')}  {row['label']}"


def _json_id(feature):
    """A feature id as plain JSON (int or list of ints)."""
    if isinstance(feature, (list, tuple, np.ndarray)):
        return [int(f) for f in feature]
    return int(feature)


def _fmt(value) -> str:
    """Compact display of a table cell."""
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}" if abs(int(value)) >= 10_000 else str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if not math.isfinite(value):
            return str(value)
        if value == 0.0:
            return "0"
        return f"{value:.6g}"
    if isinstance(value, (list, tuple, dict)):
        import json

        return json.dumps(value, default=str)
    return str(value)


def _batch_of_each_feature(model) -> np.ndarray:
    """Outer iteration (1-based) that selected each feature of ``model``."""
    batches = np.asarray(model.batches, dtype=np.int64)
    positions = np.arange(len(model.features))
    return np.searchsorted(batches, positions, side="right").astype(np.int64)


def _top_features(model, top: int) -> list[dict]:
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
             "label": _feature_label(model.features[pos]),
             "name": names[pos],
             "weight": float(coef[pos]),
             "iteration": int(selected_in[pos]),
             "position": int(pos)}
            for rank, pos in enumerate(order)]


# ------------------------------------------------------------------ figures
def _new_figure(width, height):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _no_data(ax, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _iteration_xaxis(ax, iterations):
    """One tick per outer iteration (integer ticks when there are many)."""
    from matplotlib.ticker import MaxNLocator

    if len(iterations) <= 20:
        ax.set_xticks(list(iterations))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _integer_xaxis(ax):
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _integer_yaxis(ax):
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def _plot_objective(path, data):
    fig = _new_figure(7.0, 5.5)
    ax_obj, ax_feat = fig.subplots(2, 1, sharex=True)
    it = data["iteration"]
    objective = [np.nan if v is None else v for v in data["objective"]]
    if it:
        ax_obj.plot(it, objective, marker="o", color="tab:blue")
        finite = [v for v in objective if np.isfinite(v) and v > 0]
        if finite and max(finite) / min(finite) > 30:
            ax_obj.set_yscale("log")
        bars = ax_feat.bar(it, data["n_features"], width=0.6, color="tab:green")
        ax_feat.bar_label(bars, fontsize=8)
        ax_feat.margins(y=0.15)
        ax_feat.set_ylim(bottom=0)
        _iteration_xaxis(ax_feat, it)
        _integer_yaxis(ax_feat)
    else:
        _no_data(ax_obj, "no iterations recorded")
        _no_data(ax_feat, "no iterations recorded")
    ax_obj.set_ylabel("objective")
    ax_obj.set_title(data["objective_title"], fontsize=9)
    ax_obj.grid(True, alpha=0.3)
    ax_feat.set_ylabel("selected features")
    ax_feat.set_xlabel("outer iteration")
    ax_feat.set_title("Number of selected features per outer iteration")
    ax_feat.grid(True, alpha=0.3)
    fig.savefig(path, format="png")


def _plot_timing(path, data):
    fig = _new_figure(7.0, 4.0)
    ax = fig.subplots()
    it = np.asarray(data["iteration"], dtype=float)
    phases = data["phases"]
    if len(it) and phases:
        colors = ["tab:blue", "tab:orange", "tab:green", "tab:red",
                  "tab:purple", "tab:brown"]
        width = 0.8 / len(phases)
        for i, (name, seconds) in enumerate(phases.items()):
            values = np.nan_to_num(np.asarray(seconds, dtype=float))
            offset = (i - (len(phases) - 1) / 2) * width
            ax.bar(it + offset, values, width=width,
                   label=name.removesuffix("_seconds"),
                   color=colors[i % len(colors)])
        positive = np.concatenate([np.asarray(v, dtype=float)
                                   for v in phases.values()])
        positive = positive[np.isfinite(positive) & (positive > 0)]
        if positive.size and positive.max() / positive.min() > 50:
            ax.set_yscale("log")
        ax.legend(title="phase", loc="best", fontsize=8)
        _iteration_xaxis(ax, data["iteration"])
    else:
        _no_data(ax, "no timings recorded")
    ax.set_xlabel("outer iteration")
    ax.set_ylabel("seconds")
    ax.set_title("Time per phase per outer iteration")
    ax.grid(True, axis="y", alpha=0.3)
    fig.savefig(path, format="png")


def _plot_features(path, top_rows, n_classes=1):
    """Top features by |weight|; with K classes, by the norm of their K weights."""
    n = len(top_rows)
    per_class = n_classes > 1
    fig = _new_figure(7.0, max(2.5, 1.2 + 0.28 * n))
    ax = fig.subplots()
    if n:
        weights = np.array([r["weight"] for r in top_rows])
        positions = np.arange(n)[::-1]  # rank 1 at the top
        positive = weights >= 0
        kinds = (((positive, "tab:blue", f"norm of the {n_classes} class weights"),)
                 if per_class else
                 ((positive, "tab:blue", "positive weight"),
                  (~positive, "tab:red", "negative weight")))
        for mask, color, label in kinds:
            if mask.any():
                ax.barh(positions[mask], weights[mask], color=color, label=label)
        ax.set_yticks(positions)
        ax.set_yticklabels([_tick_label(r) for r in top_rows], fontsize=8)
        ax.axvline(0.0, color="black", linewidth=0.8)
        ax.set_ylim(-0.7, n - 0.3)
        ax.legend(loc="best", fontsize=8)
    else:
        _no_data(ax, "no features selected")
    ax.set_xlabel("‖weights over classes‖" if per_class else "weight")
    ax.set_ylabel("feature (id and name)" if any(r.get("name") for r in top_rows)
                  else "feature id")
    ax.set_title(f"Top {n} features by ‖weights over classes‖" if per_class
                 else f"Top {n} features by |weight|")
    ax.grid(True, axis="x", alpha=0.3)
    fig.savefig(path, format="png")


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

#: the accuracy curves: data key, legend, marker, line style, colour
CURVES = (("accuracy", "FGM, first k iterations (final weights)", "o", "-", "tab:blue"),
          ("accuracy_refit", "FGM, refit on those features (l2)", "s", "-", "tab:green"),
          ("accuracy_l1", "scikit-learn l1-LR, same count", "^", "--", "tab:red"))


def _plot_accuracy(path, data):
    """Accuracy (top) and AUC (bottom) vs number of features, one line per curve."""
    fig = _new_figure(7.0, 6.5)
    ax_acc, ax_auc = fig.subplots(2, 1, sharex=True)
    if data["accuracy"]:
        for key, label, marker, style, color in CURVES:
            rows = data.get(key) or []
            if not rows:
                continue
            x = [r.get("nnz", r["n_features"]) for r in rows]
            label = label.replace("FGM", data.get("method", "FGM"))
            ax_acc.plot(x, [r["accuracy"] for r in rows], marker=marker,
                        linestyle=style, color=color, label=label)
            ax_auc.plot(x, [r["auc"] for r in rows], marker=marker,
                        linestyle=style, color=color, label=label)
        ax_acc.legend(loc="lower right", fontsize=8)
        _integer_xaxis(ax_auc)
    else:
        _no_data(ax_acc, "no selection iterations")
        _no_data(ax_auc, "no selection iterations")
    ax_acc.set_ylabel("test accuracy")
    ax_acc.set_title("Test accuracy and AUC vs number of features")
    ax_acc.grid(True, alpha=0.3)
    ax_auc.set_ylabel("test AUC")
    ax_auc.set_xlabel("number of features (nonzero weights)")
    ax_auc.grid(True, alpha=0.3)
    fig.savefig(path, format="png")


def _plot_validation(path, curve):
    """Held-out accuracy vs C (C="auto"), one line per refit C."""
    fig = _new_figure(7.0, 4.0)
    ax = fig.subplots()
    lines = {}
    for point in curve["points"]:
        lines.setdefault(point["refit_C"], []).append(point)
    for refit_C, points in sorted(lines.items(), key=lambda kv: kv[0] or 0.0):
        label = "FGM" if refit_C is None else f"refit C = {_fmt(refit_C)}"
        ax.plot([p["C"] for p in points], [p["accuracy"] for p in points],
                marker="o", label=label)
    ax.axvline(curve["C"], color="#888", linestyle=":", label=f"chosen C = {_fmt(curve['C'])}")
    ax.set_xscale("log")
    ax.set_xlabel("C")
    ax.set_ylabel("held-out accuracy")
    ax.set_title("Choice of C on held-out rows")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)
    fig.savefig(path, format="png")


def _validation_section(figures, curve) -> list[str]:
    """Heading, explanation, figure and table of the choice of C."""
    how = (f"{curve['folds']} stratified folds" if curve["method"] == "cv"
           else f"a stratified hold-out of {_fmt(100 * curve['fraction'])}% of the rows")
    text = (f"C = {_fmt(curve['C'])} was chosen on {how} (seed {curve['seed']})"
            + (f", with the refit's C = {_fmt(curve['refit_C'])}"
               if curve.get("refit_C") is not None else "")
            + ": the largest mean held-out accuracy, ties broken by the smaller "
              "mean loss, then the smaller C. The grid is walked upward and stops "
              "after two values in a row below the best"
            + ("; for each C the refit's grid is walked the same way, so the "
               "table holds only the refit values the walk reached."
               if curve.get("refit_C") is not None else ".")
            + (" FGM's own weights (no refit C) are scored on the same rows and "
               "predict when they score best: "
               + ("they did, so the model predicts with them and keeps the refit."
                  if curve.get("predictor") == "selection"
                  else "the refit scored better.")
               if curve.get("predictor") is not None else ""))
    note = validation_note(curve)
    if note:
        text += f" Note: {note}."
    chosen = chosen_point(curve)
    rows = [{"C": p["C"], "refit C": "" if p["refit_C"] is None else p["refit_C"],
             "held-out accuracy": p["accuracy"], "mean loss": p["loss"],
             "features": p["n_features"], "seconds": p["seconds"],
             "chosen": "yes" if p is chosen else ""}
            for p in curve["points"]]
    return ['<h2 id="validation">Choice of C</h2>', "<p>" + html.escape(text) + "</p>",
            _img(figures["validation"], "held-out accuracy versus C"),
            _table(["C", "refit C", "held-out accuracy", "mean loss", "features",
                    "seconds", "chosen"], rows, text_columns=("chosen",),
                   table_id="validation-table")]


# --------------------------------------------------------------------- HTML
_CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f0f0f0; }
td.text, th.text { text-align: left; }
img { max-width: 100%; border: 1px solid #eee; }
p.note { color: #8a5a00; }
"""


def _table(columns, rows, text_columns=(), table_id=None):
    """An HTML table; every cell is escaped."""
    def cls(col):
        return ' class="text"' if col in text_columns else ""

    attr = f' id="{html.escape(table_id)}"' if table_id else ""
    out = [f"<table{attr}>", "<thead><tr>"]
    out += [f"<th{cls(c)}>{html.escape(str(c))}</th>" for c in columns]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(
            f"<td{cls(c)}>{html.escape(_fmt(row.get(c)))}</td>" for c in columns)
            + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _img(name, alt):
    src = html.escape(urllib.parse.quote(name))
    return f'<p><img src="{src}" alt="{html.escape(alt)}"></p>'


def _html_page(model, figures, data, title, test_info):
    history_rows = data["history"]
    history_cols = [c for c in HISTORY_FIRST
                    if any(c in r for r in history_rows)]
    history_cols += sorted({k for r in history_rows for k in r} - set(history_cols))

    params = [("loss", model.loss),
              ("feature space", model.feature_space),
              ("features selected", len(model.features)),
              ("outer iterations", n_iterations(model)),
              ("intercept", float(model.intercept) if model.n_outputs == 1
               else [float(b) for b in model.intercept]),
              ("classes [negative, positive]" if model.n_outputs == 1 else "classes",
               model.classes),
              ("stop reason", model.stop_reason)]
    params += [(f"params.{k}", v) for k, v in sorted(model.params.items())
               if k != "validation"]

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Generated by ultrafs {html.escape(__version__)}.</p>",
        '<h2 id="parameters">Parameters</h2>',
        _table(["name", "value"],
               [{"name": k, "value": v} for k, v in params],
               text_columns=("name", "value"), table_id="parameters-table"),
    ]
    if "objective" in figures:
        parts += ['<h2 id="objective">Objective and features per outer iteration</h2>',
                  _img(figures["objective"],
                       "objective and number of features per outer iteration")]
    if "timing" in figures:
        parts += ['<h2 id="timing">Time per phase</h2>',
                  _img(figures["timing"], "seconds per phase per outer iteration")]
    parts += [
        '<h2 id="history">Iteration history</h2>',
        _table(history_cols, history_rows, table_id="history-table")
        if history_rows else "<p>No iteration history recorded.</p>",
        f'<h2 id="features">Top {len(data["top_features"])} features by |weight|</h2>']
    if "features" in figures:
        parts.append(_img(figures["features"], "top features by absolute weight"))
    parts += [
        _features_table(data["top_features"]),
    ]
    if "validation" in figures:
        parts += _validation_section(figures, data["validation"])
    if "accuracy" in figures:
        parts += _accuracy_section(figures, data, test_info)
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _features_table(rows) -> str:
    """The top-features table: rank, id, name (when any feature is named), weight."""
    named = any(r.get("name") is not None for r in rows)
    columns = ["rank", "feature id"] + (["name"] if named else []) + [
        "weight", "selected in iteration"]
    return _table(columns,
                  [{"rank": r["rank"], "feature id": r["label"],
                    "name": r.get("name") or "",
                    "weight": r["weight"], "selected in iteration": r["iteration"]}
                   for r in rows],
                  text_columns=("feature id", "name"), table_id="features-table")


#: table label of each curve
MODEL_LABELS = {"accuracy": "FGM (final weights)", "accuracy_refit": "FGM refit (l2)",
                "accuracy_l1": "l1-LR (scikit-learn)"}


def _accuracy_section(figures, data, test_info) -> list[str]:
    """Heading, explanations, figure and table of the accuracy curves."""
    refit = data.get("accuracy_refit") is not None
    text = ("Test store: " + html.escape(test_info) + ". For each k, "
            "<strong>FGM (final weights)</strong> is the model truncated to its first k "
            "selection iterations, with the final weights and intercept (not "
            "refitted)")
    if refit:
        text += ("; <strong>FGM refit (l2)</strong> is an l2-regularised model of the same "
                 "loss fitted on the training store " + html.escape(
                     data.get("train_info") or "") + " on those features only (as "
                 "<code>--refit</code>, C = " + html.escape(
                     _fmt(data["accuracy_refit"][0]["C"]) if data["accuracy_refit"]
                     else "") + ")")
    if data.get("accuracy_l1") is not None:
        text += ("; <strong>l1-LR (scikit-learn)</strong> is l1-regularised logistic "
                 "regression with C chosen so that its number of nonzero weights "
                 "(column <i>features</i>) equals the prefix's count, or is the "
                 "largest count found below it")
    if not refit:
        text += (". Give the training store (<code>--train</code>) to add the "
                 "refitted prefixes and scikit-learn's l1-LR at the same counts")
    method = data.get("method", "FGM")
    text = text.replace("FGM", html.escape(method))
    parts = ['<h2 id="accuracy">Test accuracy vs number of features</h2>',
             "<p>" + text + ".</p>"]
    for note in data.get("accuracy_notes") or []:
        parts.append('<p class="note">' + html.escape(note) + "</p>")
    if data.get("absent_warning"):
        parts.append('<p class="note">Warning: '
                     + html.escape(data["absent_warning"]) + "</p>")
    curves = [key for key, *_ in CURVES if data.get(key)]
    rows = []
    for i, plain in enumerate(data["accuracy"]):
        for key in curves:
            r = data[key][i]
            rows.append({"k (iterations)": r["n_batches"],
                         "model": MODEL_LABELS[key].replace("FGM", method),
                         "features": r.get("nnz", r["n_features"]),
                         "accuracy": f"{r['accuracy']:.4f}",
                         "AUC": f"{r['auc']:.4f}", "log loss": r.get("log_loss"),
                         "C": r.get("C")})
    all_rows = [r for key in curves for r in data[key]]
    cols = ["k (iterations)"] + (["model"] if len(curves) > 1 else []) + [
        "features", "accuracy", "AUC"]
    if any("log_loss" in r for r in all_rows):
        cols.append("log loss")
    if any("C" in r for r in all_rows):
        cols.append("C")
    parts += [_img(figures["accuracy"], "test accuracy vs number of features"),
              _table(cols, rows, text_columns=("model",), table_id="accuracy-table")]
    return parts


# ------------------------------------------------------------------ driver
def _store_info(store) -> str:
    """``path (n samples, m columns)`` of a store."""
    info = (f"{int(store.n_samples):,} samples, "
            f"{int(store.n_features):,} columns")
    path = getattr(store, "path", None)
    return info if path is None else f"{os.fspath(path)} ({info})"


def _figure_data(model, top):
    history = [dict(r) for r in model.history]
    phases = {}
    # wall seconds only (``*_cpu_seconds`` are CPU time, not phases)
    names = list(PHASES) + sorted({k for r in history for k in r
                                   if k.endswith("_seconds")
                                   and not k.endswith("_cpu_seconds")} - set(PHASES))
    for name in names:
        if any(name in r for r in history):
            phases[name] = [float(r.get(name, 0.0) or 0.0) for r in history]
    return {
        "iteration": [int(r.get("iteration", i + 1)) for i, r in enumerate(history)],
        "n_features": [int(r.get("n_features", 0)) for r in history],
        "objective": [None if r.get("objective") is None else float(r["objective"])
                      for r in history],
        "phases": phases,
        "history": history,
        "top_features": _top_features(model, top),
        "accuracy": None,
        "accuracy_refit": None,
        "accuracy_l1": None,
        "accuracy_notes": [],
        "absent_warning": None,
        "train_info": None,
        "validation": model.params.get("validation"),
        "method": method_name(model),
        "objective_title": _objective_title(model),
    }


def _objective_title(model) -> str:
    """The objective figure's title: the method's objective (FGM: eq. 30 on
    the selected batches)."""
    method = method_of(model)
    if method is None or method.name == "fgm":
        return (r"Objective $\frac{1}{2}(\Sigma_h\,\|\omega_h\|)^2"
                r" + C\,\Sigma_i\,\ell_i$ per outer iteration")
    return f"{method.display_name}: {method.objective}".replace("$", r"\$")


def _figures_of(model) -> tuple:
    """Which figures of the report apply to the method that made ``model``."""
    method = method_of(model)
    return method.figures if method is not None else (
        "objective", "timing", "features", "accuracy", "validation")


def build_report(model, out_html, *, test_store=None, train_store=None, top=30,
                 l1_max_nnz=None) -> dict:
    """Write an HTML run report and its PNG figures.

    Parameters
    ----------
    model : Model or path of a model file
    out_html : str or os.PathLike
        The HTML file to write; its folder must exist.  The figures go next
        to it as ``<stem>_objective.png``, ``<stem>_timing.png``,
        ``<stem>_features.png`` and, with a test store,
        ``<stem>_accuracy.png``; existing files of those names are replaced.
    test_store : ColumnStore or path of a store, optional
        A labelled store; adds test accuracy and AUC of the model truncated
        to its first k = 1..t selection iterations.
    train_store : ColumnStore or path of a store, optional
        The labelled training store, with a test store: adds, per prefix,
        the ℓ2 refit of its features and scikit-learn's ℓ1-LR at the same
        number of features (see :func:`accuracy_curves`; **the ℓ1
        baseline loads the training store in memory**).
    l1_max_nnz : int, optional
        Refuse training stores holding more values than this for the ℓ1
        baseline (default
        :data:`ultrafs.methods.l1_baseline.L1_MAX_NNZ`, 2e8).
    top : int
        Number of features (largest ``|weight|``) in the feature figure and
        table.

    Returns
    -------
    report : dict
        ``html``: path of the page; ``figures``: figure name -> PNG path
        (``objective``, ``timing``, ``features`` and maybe ``accuracy``);
        ``data``: the figures' data, JSON-serialisable — ``iteration``,
        ``n_features``, ``objective`` (lists over outer iterations),
        ``phases`` (phase -> seconds per iteration), ``history`` (the
        model's records), ``top_features`` (dicts with ``rank``, ``id``,
        ``label``, ``name`` (None when unnamed), ``weight``, ``iteration``,
        ``position``), ``accuracy``
        (rows of :func:`accuracy_vs_features`, or None),
        ``accuracy_refit`` and ``accuracy_l1`` (the ``refit`` and ``l1``
        rows of :func:`accuracy_curves`, or None), ``accuracy_notes``,
        ``absent_warning`` and ``train_info``.

    Raises
    ------
    UltraFSError
        If matplotlib is not installed, a training store comes without a
        test store, or the training store is refused (other classes, or
        too large for the ℓ1 baseline).

    Warns
    -----
    UltraFSWarning
        Once, when model features are absent from the test store (and
        once per other kind, see :func:`accuracy_curves`).

    Notes
    -----
    All files are rendered in a temporary folder next to ``out_html`` and
    moved in with :func:`os.replace` only once every one of them is
    complete, figures first and the page last.  A failure while rendering
    leaves the target folder untouched; a failure while moving (rare: the
    same file system) removes the files already moved.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UltraFSError(MISSING_MATPLOTLIB) from None
    from ultrafs.model import Model

    if not isinstance(model, Model):
        model = Model.load(model)
    if int(top) < 0:
        raise UltraFSError(f"top must be >= 0, got {top}")
    if train_store is not None and test_store is None:
        raise UltraFSError("a training store needs a test store: the curves it "
                           "adds are measured on the test store")
    if test_store is not None and isinstance(test_store, (str, os.PathLike)):
        from ultrafs.store import open_store

        test_store = open_store(test_store)
    if train_store is not None and isinstance(train_store, (str, os.PathLike)):
        from ultrafs.store import open_store

        train_store = open_store(train_store)

    out_html = os.path.abspath(os.fspath(out_html))
    directory, html_name = os.path.split(out_html)
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), directory)
    stem = os.path.splitext(html_name)[0]
    applies = _figures_of(model)
    names = {key: f"{stem}_{key}.png" for key in ("objective", "timing", "features")
             if key in applies}
    if test_store is not None and "accuracy" in applies:
        names["accuracy"] = f"{stem}_accuracy.png"
    if model.params.get("validation") and "validation" in applies:
        names["validation"] = f"{stem}_validation.png"

    data = _figure_data(model, top)
    test_info = None
    if test_store is not None:
        curves = accuracy_curves(model, test_store, train_store,
                                 l1_max_nnz=l1_max_nnz, _stacklevel=3)
        data.update(accuracy=curves["plain"], accuracy_refit=curves["refit"],
                    accuracy_l1=curves["l1"], accuracy_notes=curves["notes"],
                    absent_warning=curves["absent_warning"])
        test_info = _store_info(test_store)
        if train_store is not None:
            data["train_info"] = _store_info(train_store)

    try:
        tmpdir = tempfile.mkdtemp(prefix=f".tmp-{stem}-", dir=directory)
    except OSError as exc:
        raise rename_os_error(exc, out_html, [exc.filename or out_html]) from None
    moved = []
    try:
        tmp = {key: os.path.join(tmpdir, name) for key, name in names.items()}
        if "objective" in tmp:
            _plot_objective(tmp["objective"], data)
        if "timing" in tmp:
            _plot_timing(tmp["timing"], data)
        if "features" in tmp:
            _plot_features(tmp["features"], data["top_features"], model.n_outputs)
        if "accuracy" in tmp:
            _plot_accuracy(tmp["accuracy"], data)
        if "validation" in tmp:
            _plot_validation(tmp["validation"], data["validation"])
        page = _html_page(model, names, data, f"ultrafs run report: {stem}",
                          test_info)
        tmp_html = os.path.join(tmpdir, html_name)
        with open(tmp_html, "w", encoding="utf-8") as fh:
            fh.write(page)
        for key, name in names.items():
            final = os.path.join(directory, name)
            publish_path(tmp[key], final)
            moved.append(final)
        publish_path(tmp_html, out_html)
    except BaseException as exc:
        for final in moved:
            try:
                os.unlink(final)
            except OSError:
                pass
        if isinstance(exc, OSError):
            renamed = rename_os_error(exc, out_html, [tmpdir])
            if renamed is not exc:
                raise renamed from None
        raise
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return {"html": out_html,
            "figures": {key: os.path.join(directory, name)
                        for key, name in names.items()},
            "data": data}
