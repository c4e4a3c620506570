"""The run report's HTML page: its style, tables, and the text of each
section (every cell and sentence escaped).

:func:`html_page` lays out what :mod:`ultrafs.report_data` gathered and
links the PNGs :mod:`ultrafs.report_figures` drew; tables sit in a box that
scrolls sideways, so a wide one never widens the page.
"""

from __future__ import annotations

import html
import json
import math
import urllib.parse

import numpy as np

from ultrafs import __version__
from ultrafs.methods.validation import chosen_point, validation_note

__all__ = ["html_page", "validation_section", "fmt", "table"]

#: a list or dict cell longer than this is shortened on the page (the
#: model file holds it whole)
MAX_CELL = 300

CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; padding: 0 1em;
       color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.8em; }
.table-box { max-width: 100%; max-height: 36em; overflow: auto; margin: 0.5em 0; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right;
         white-space: nowrap; }
th { background: #f0f0f0; position: sticky; top: 0; }
td.text, th.text { text-align: left; }
td.text { white-space: normal; overflow-wrap: anywhere; min-width: 12em; max-width: 50em; }
img { max-width: 100%; border: 1px solid #eee; }
p.note { color: #8a5a00; }
p.objective code { white-space: normal; overflow-wrap: anywhere; }
"""


def fmt(value) -> str:
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
        text = json.dumps(value, default=str)
        if len(text) > MAX_CELL:
            what = (f"{len(value):,} values" if isinstance(value, (list, tuple))
                    else f"{len(value):,} entries")
            text = text[:MAX_CELL - 40] + f" … ({what}; all in the model file)"
        return text
    return str(value)


def table(columns, rows, text_columns=(), table_id=None):
    """An HTML table in a box that scrolls sideways; every cell is escaped."""
    def cls(col):
        return ' class="text"' if col in text_columns else ""

    attr = f' id="{html.escape(table_id)}"' if table_id else ""
    out = ['<div class="table-box">', f"<table{attr}>", "<thead><tr>"]
    out += [f"<th{cls(c)}>{html.escape(str(c))}</th>" for c in columns]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(
            f"<td{cls(c)}>{html.escape(fmt(row.get(c)))}</td>" for c in columns)
            + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def img(name, alt):
    src = html.escape(urllib.parse.quote(name))
    return f'<p><img src="{src}" alt="{html.escape(alt)}"></p>'


def validation_section(figures, curve) -> list[str]:
    """Heading, explanation, figure and table of the choice of C."""
    how = (f"{curve['folds']} stratified folds" if curve["method"] == "cv"
           else f"a stratified hold-out of {fmt(100 * curve['fraction'])}% of the rows")
    text = (f"C = {fmt(curve['C'])} was chosen on {how} (seed {curve['seed']})"
            + (f", with the refit's C = {fmt(curve['refit_C'])}"
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
            img(figures["validation"], "held-out accuracy versus C"),
            table(["C", "refit C", "held-out accuracy", "mean loss", "features",
                   "seconds", "chosen"], rows, text_columns=("chosen",),
                  table_id="validation-table")]


def _name_value_table(rows, table_id):
    return table(["name", "value"], [{"name": k, "value": v} for k, v in rows],
                 text_columns=("name", "value"), table_id=table_id)


def html_page(model, figures, data, title, test_info) -> str:
    """The report page: method and objective, parameters, fit record,
    figures and tables that apply to the model's method."""
    from ultrafs.report_data import (method_of, model_rows, parameter_rows,
                                     record_rows, report_spec)

    method = method_of(model)
    spec = report_spec(model)
    history_rows = data["history"]
    first = [spec.x] + [p.key for p in spec.panels]
    history_cols = [c for c in dict.fromkeys(first) if any(c in r for r in history_rows)]
    history_cols += sorted({k for r in history_rows for k in r} - set(history_cols))

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Generated by ultrafs {html.escape(__version__)}.</p>",
        '<h2 id="method">Method</h2>',
        '<p id="method-name">' + _method_text(method, data["method"]) + ".</p>",
    ]
    if method is not None and method.objective:
        parts.append('<p class="objective" id="objective-text">Objective: <code>'
                     + html.escape(method.objective) + "</code></p>")
    parts += ['<h2 id="model">Model</h2>',
              _name_value_table(model_rows(model), "model-table"),
              '<h2 id="parameters">Parameters</h2>',
              _name_value_table([(f"params.{k}", v) for k, v in parameter_rows(model)],
                                "parameters-table")]
    record = record_rows(model)
    if record:
        parts += ['<h2 id="record">Fit record</h2>',
                  "<p>What the model file records about the fit besides its "
                  "parameters.</p>",
                  _name_value_table([(f"params.{k}", v) for k, v in record],
                                    "record-table")]
    if "objective" in figures:
        parts += [f'<h2 id="objective">{html.escape(spec.title)}</h2>',
                  img(figures["objective"], spec.title.lower())]
    if "timing" in figures:
        parts += ['<h2 id="timing">Time per phase</h2>',
                  img(figures["timing"], f"seconds per phase per {spec.x_label}")]
    parts += [
        '<h2 id="history">Iteration history</h2>',
        table(history_cols, history_rows, table_id="history-table")
        if history_rows else "<p>No iteration history recorded.</p>"]
    if "ranking" in figures:
        parts += _ranking_section(figures, data, model)
    if "basis" in figures:
        parts += ['<h2 id="basis">Basis size</h2>',
                  img(figures["basis"], "weights of the nonzero basis functions")]
    parts.append(f'<h2 id="features">Top {len(data["top_features"])} features '
                 f'by |weight|</h2>')
    if "features" in figures:
        parts.append(img(figures["features"], "top features by absolute weight"))
    parts.append(_features_table(data["top_features"], by_step=bool(spec.steps)))
    if "validation" in figures:
        parts += validation_section(figures, data["validation"])
    if data["accuracy"] is not None:
        parts += _accuracy_section(figures, data, test_info, spec)
    if data["accuracy"] is not None and method is not None \
            and "lambda_path" in method.figures:
        parts += _lambda_section(figures, data)
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _lambda_section(figures, data) -> list[str]:
    """Test accuracy along the λ path (with the training store), or how to
    get it."""
    parts = ['<h2 id="lambda-path">Test accuracy along the λ path</h2>']
    if data["train_info"] is None:
        return parts + ["<p>The model keeps the weights of its own λ only: give the "
                        "training store (<code>--train</code>) to solve the path's "
                        "other λ again and score each on the test store.</p>"]
    parts += ['<p class="note">' + html.escape(note) + "</p>"
              for note in data["lambda_notes"]]
    if "lambda_path" in figures:
        parts.append(img(figures["lambda_path"], "test accuracy and nonzero weights "
                                                 "along the λ path"))
    marked = data.get("marked")
    rows = [{"λ": r["lambda"], "nonzero weights": r["nnz"],
             "accuracy": f"{r['accuracy']:.4f}", "AUC": f"{r['auc']:.4f}",
             "log loss": r.get("log_loss"),
             "chosen": "yes" if marked is not None and math.isclose(
                 r["lambda"], marked, rel_tol=1e-12) else ""}
            for r in data["lambda_path"] or []]
    if rows:
        parts.append(table(["λ", "nonzero weights", "accuracy", "AUC", "log loss",
                            "chosen"], rows, text_columns=("chosen",),
                           table_id="lambda-table"))
    return parts


def _method_text(method, name) -> str:
    """``<strong>name</strong>: description`` (the description alone when it
    starts with the name: "GSR-FS (ℓ2,r loss, ...)")."""
    strong = f"<strong>{html.escape(name)}</strong>"
    description = method.description if method is not None else ""
    if not description or description == name:
        return strong
    if description.startswith(name):
        return strong + html.escape(description[len(name):])
    return f"{strong}: {html.escape(description)}"


def _ranking_section(figures, data, model) -> list[str]:
    n_ranked = model.params.get("n_ranked")
    text = ("The features are ranked by their score ‖w_j‖, the norm of their row of "
            "W in the fit of every feature"
            + (f" ({int(n_ranked):,} features with a nonzero row)" if n_ranked else "")
            + "; the model keeps the best, refitted on them alone.")
    return ['<h2 id="ranking">Score ranking</h2>', "<p>" + html.escape(text) + "</p>",
            img(figures["ranking"], "ranking scores of the selected features"),
            table(["rank", "feature id"]
                  + (["name"] if any(r["name"] for r in data["ranking"]) else [])
                  + ["score"],
                  [{"rank": r["rank"], "feature id": r["label"], "name": r["name"] or "",
                    "score": r["score"]} for r in data["ranking"]],
                  text_columns=("feature id", "name"), table_id="ranking-table")]


def _features_table(rows, by_step=True) -> str:
    """The top-features table: rank, id, name (when any feature is named),
    weight and, for a model selected in steps, the step that selected it."""
    named = any(r.get("name") is not None for r in rows)
    columns = ["rank", "feature id"] + (["name"] if named else []) + ["weight"] + (
        ["selected in iteration"] if by_step else [])
    return table(columns,
                 [{"rank": r["rank"], "feature id": r["label"],
                   "name": r.get("name") or "",
                   "weight": r["weight"], "selected in iteration": r["iteration"]}
                  for r in rows],
                 text_columns=("feature id", "name"), table_id="features-table")


#: table label of each curve
MODEL_LABELS = {"accuracy": "FGM (final weights)", "accuracy_refit": "FGM refit (l2)",
                "accuracy_l1": "l1-LR (scikit-learn)"}


def _accuracy_section(figures, data, test_info, spec) -> list[str]:
    """Heading, explanations, figure and table of the test curves (a model
    selected in one block: its test metrics, one row per curve)."""
    from ultrafs.report_figures import CURVES

    steps = spec.steps
    refit = data.get("accuracy_refit") is not None
    if steps:
        text = ("Test store: " + html.escape(test_info) + ". For each k, "
                "<strong>FGM (final weights)</strong> is the model truncated to its "
                f"first k {html.escape(steps)}, with the final weights and intercept "
                "(not refitted)")
        on = "on those features only"
    else:
        text = ("Test store: " + html.escape(test_info) + ". <strong>FGM</strong> "
                "is the model as fitted")
        on = "on its features only"
    if refit:
        text += ("; <strong>FGM refit (l2)</strong> is an l2-regularised model of the same "
                 "loss fitted on the training store " + html.escape(
                     data.get("train_info") or "") + f" {on} (as "
                 "<code>--refit</code>, C = " + html.escape(
                     fmt(data["accuracy_refit"][0]["C"]) if data["accuracy_refit"]
                     else "") + ")")
    if data.get("accuracy_l1") is not None:
        text += ("; <strong>l1-LR (scikit-learn)</strong> is l1-regularised logistic "
                 "regression with C chosen so that its number of nonzero weights "
                 "(column <i>features</i>) equals the model's count, or is the "
                 "largest count found below it")
    if data.get("train_info") is None:
        text += (". Give the training store (<code>--train</code>) to add the "
                 + ("refitted prefixes" if steps else "l2 refit")
                 + " and scikit-learn's l1-LR at the same counts")
    method = data.get("method", "FGM")
    text = text.replace("FGM", html.escape(method))
    heading = "Test accuracy vs number of features" if steps else "Test accuracy"
    parts = [f'<h2 id="accuracy">{heading}</h2>', "<p>" + text + ".</p>"]
    for note in data.get("accuracy_notes") or []:
        parts.append('<p class="note">' + html.escape(note) + "</p>")
    if data.get("absent_warning"):
        parts.append('<p class="note">Warning: '
                     + html.escape(data["absent_warning"]) + "</p>")
    curves = [key for key, *_ in CURVES if data.get(key)]
    label = {key: (MODEL_LABELS[key] if steps else
                   MODEL_LABELS[key].replace(" (final weights)", ""))
             .replace("FGM", method) for key in curves}
    rows = []
    for i, plain in enumerate(data["accuracy"]):
        for key in curves:
            r = data[key][i]
            rows.append({f"k ({steps})": r["n_batches"], "model": label[key],
                         "features": r.get("nnz", r["n_features"]),
                         "accuracy": f"{r['accuracy']:.4f}",
                         "AUC": f"{r['auc']:.4f}", "log loss": r.get("log_loss"),
                         "C": r.get("C")})
    all_rows = [r for key in curves for r in data[key]]
    cols = ([f"k ({steps})"] if steps else []) + (
        ["model"] if len(curves) > 1 else []) + ["features", "accuracy", "AUC"]
    if any("log_loss" in r for r in all_rows):
        cols.append("log loss")
    if any("C" in r for r in all_rows):
        cols.append("C")
    if "accuracy" in figures:
        parts.append(img(figures["accuracy"], "test accuracy vs number of features"))
    parts.append(table(cols, rows, text_columns=("model",), table_id="accuracy-table"))
    return parts
