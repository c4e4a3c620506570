"""Report of a path file (``ultrafs path``): an HTML page and PNG figures.

``build_path_report("path.json", "out/report.html", test_store=...)``
writes, next to the page, ``<stem>_nonzeros.png`` (nonzero weights
against λ), with a labelled test store ``<stem>_accuracy.png`` (test
accuracy and AUC of each point's model against λ), and for a path written
with ``--cv`` ``<stem>_cv.png`` (the mean held-out deviance with its
standard-error bars and the mean held-out accuracy, against λ, with
``lambda_min`` and ``lambda_1se`` marked, as glmnet's ``plot.cv.glmnet``).
λ is on a log axis, decreasing to the right (the order the path is solved
in).  The page holds the table behind the figures.

``ultrafs report PATHFILE`` comes here (:func:`report_path_file`); a model
file goes to :func:`ultrafs.report.build_report`.  Files are rendered in a
temporary folder next to the page and moved in once all are complete.
"""

from __future__ import annotations

import html
import os
import urllib.parse

import numpy as np

__all__ = ["build_path_report", "report_path_file", "LAMBDA_AXIS"]

#: the label of every figure's λ axis (and the words the page uses for it)
LAMBDA_AXIS = "λ (log scale; the path runs left to right)"

_CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f0f0f0; } tr.chosen td { background: #fff6dd; }
img { max-width: 100%; border: 1px solid #eee; }
div.wide { overflow-x: auto; }
"""


def report_path_file(model_path, test_path, train_path, label, out,
                     storage_options=None) -> bool:
    """``ultrafs report`` on a path file: write the report, print its summary
    (JSON) and return True; False when ``model_path`` is not a path file (the
    model report then reads it)."""
    import json

    import click

    from ultrafs.cli.data import resolve_data_path
    from ultrafs.model import is_path_file, parsed_model_file
    from ultrafs.store import open_store

    if not is_path_file(parsed_model_file(os.fspath(model_path))):
        return False
    if train_path is not None:
        raise click.UsageError("--train applies to a model file (the refits of its "
                               "iterations); a path file takes --test")
    test_store = (None if test_path is None
                  else open_store(resolve_data_path(test_path), label=label,
                                  storage_options=storage_options))
    result = build_path_report(model_path, out, test_store=test_store)
    summary = {"html": result["html"], "figures": result["figures"]}
    cv = result["data"]["cv"]
    if cv is not None:
        summary["cv"] = {"lambda_min": cv["lambda_min"], "lambda_1se": cv["lambda_1se"]}
    click.echo(json.dumps(summary, indent=1))
    return True


def _new_figure(width, height):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _lambda_axis(ax, lambdas, cv=None):
    """Log λ, decreasing to the right; the chosen λ as dashed lines."""
    ax.set_xscale("log")
    lo, hi = float(np.min(lambdas)), float(np.max(lambdas))
    if hi > lo:
        ax.set_xlim(hi * 1.05, lo / 1.05)
    ax.set_xlabel(LAMBDA_AXIS)
    if cv is not None:
        for word, style in (("min", "--"), ("1se", ":")):
            ax.axvline(cv[f"lambda_{word}"], color="#555", linestyle=style,
                       linewidth=1, label=f"lambda_{word}")
    ax.grid(True, alpha=0.3)


def _plot_nonzeros(path, data):
    fig = _new_figure(8, 3.6)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(data["lambda"], data["nnz"], "-o", markersize=2.5, color="C0",
            label="whole data")
    if data["cv"] is not None:
        ax.plot(data["lambda"], data["cv_nnz_mean"], "x", markersize=4, color="C1",
                label="mean of the folds")
    _lambda_axis(ax, data["lambda"], data["cv"])
    ax.set_ylabel("nonzero weights")
    ax.set_title("Nonzero weights against λ")
    ax.legend(loc="upper left", fontsize="small")
    fig.savefig(path, format="png")


def _plot_accuracy(path, data):
    fig = _new_figure(8, 3.6)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(data["lambda"], data["test_accuracy"], "-o", markersize=3,
            label="test accuracy")
    if any(v is not None and np.isfinite(v) for v in data["test_auc"]):
        ax.plot(data["lambda"], [np.nan if v is None else v for v in data["test_auc"]],
                "-s", markersize=3, label="test AUC")
    _lambda_axis(ax, data["lambda"], data["cv"])
    ax.set_ylabel("on the test data")
    ax.set_title("Test accuracy of each point's model against λ")
    ax.legend(loc="lower right", fontsize="small")
    fig.savefig(path, format="png")


def _plot_cv(path, data):
    cv = data["cv"]
    fig = _new_figure(8, 6)
    top, bottom = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2, sharex=None)
    lambdas = data["lambda"]
    top.errorbar(lambdas, cv["deviance_mean"], yerr=cv["deviance_se"], fmt="o",
                 color="C3", ecolor="#bbb", markersize=3, capsize=2,
                 label="mean ± standard error")
    _lambda_axis(top, lambdas, cv)
    top.set_ylabel("held-out binomial deviance")
    top.set_title(f"{cv['n_folds']}-fold cross-validation against λ")
    top.legend(loc="upper right", fontsize="small")
    bottom.errorbar(lambdas, cv["accuracy_mean"], yerr=cv["accuracy_se"], fmt="o",
                    color="C2", ecolor="#bbb", markersize=3, capsize=2,
                    label="mean ± standard error")
    _lambda_axis(bottom, lambdas, cv)
    bottom.set_ylabel("held-out accuracy")
    bottom.legend(loc="lower right", fontsize="small")
    fig.savefig(path, format="png")


def _figure_data(models, test_store):
    """Per point: λ, λ/λ_max, nonzeros (and the test scores, the CV curve)."""
    from ultrafs.progress import phase

    obj = models.obj
    lambda_max = float(obj["lambda_max"])
    data = {"lambda": [float(v) for v in models.lambdas],
            "ratio": [float(v) / lambda_max for v in models.lambdas],
            "nnz": [int(v) for v in models.nnz], "cv": None,
            "test_accuracy": None, "test_auc": None}
    if models.cv is not None:
        cv = models.cv
        points = cv["points"]
        data["cv"] = {name: [float(p[name]) for p in points]
                      for name in ("deviance_mean", "deviance_se", "accuracy_mean",
                                   "accuracy_se", "nnz_mean")}
        data["cv"].update({key: cv[key] for key in ("n_folds", "index_min",
                                                     "index_1se")})
        data["cv"]["seed"] = cv.get("seed")
        data["cv"]["lambda_min"] = data["lambda"][cv["index_min"]]
        data["cv"]["lambda_1se"] = data["lambda"][cv["index_1se"]]
        data["cv_nnz_mean"] = data["cv"]["nnz_mean"]
    if test_store is not None:
        accuracy, auc = [], []
        with phase("scoring the path on the test data", total=len(models),
                   unit="point") as shown:
            for k in range(len(models)):
                metrics = models.model(k).evaluate_store(test_store)
                accuracy.append(float(metrics["accuracy"]))
                value = metrics.get("auc")
                auc.append(None if value is None or not np.isfinite(value)
                           else float(value))
                shown.update(1, status=f"point {k}: accuracy {accuracy[-1]:.4f}")
        data["test_accuracy"], data["test_auc"] = accuracy, auc
    return data


def _fmt(value, digits=4):
    if value is None:
        return ""
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return f"{float(value):.{digits}g}"


def _page(models, names, data, title, test_info):
    from ultrafs import __version__
    from ultrafs.methods.registry import get_method

    method = get_method("l1")
    obj, cv = models.obj, data["cv"]
    esc = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{esc(title)}</h1>",
           f"<p>Method: <b>{esc(method.display_name)}</b> ({esc(method.description)}), "
           f"the whole path of {len(models)} λ. Objective: "
           f"<code>{esc(method.objective)}</code>.</p>",
           f"<p>Data: {obj['n_samples']:,} rows, {obj.get('n_features', 0):,} columns; "
           f"λ_max = {float(obj['lambda_max']):.6g}; screening "
           f"{esc(str(obj.get('screening')))}. Path file: {esc(models.where)}; "
           f"written by {esc(str(obj.get('command', 'ultrafs path')))}.</p>"]
    if cv is not None:
        k_min, k_1se = cv["index_min"], cv["index_1se"]
        out.append(
            f"<h2>Cross-validation</h2><p>{cv['n_folds']} folds stratified by class "
            f"(seed {esc(str(cv['seed']))}), every fold solved at the path's λ. "
            f"<b>lambda_min</b> = {cv['lambda_min']:.6g} (point {k_min}, "
            f"λ/λ_max {data['ratio'][k_min]:.4g}): the smallest mean held-out "
            f"deviance, {cv['deviance_mean'][k_min]:.4f} ± "
            f"{cv['deviance_se'][k_min]:.4f}. <b>lambda_1se</b> = "
            f"{cv['lambda_1se']:.6g} (point {k_1se}, λ/λ_max "
            f"{data['ratio'][k_1se]:.4g}, {data['nnz'][k_1se]:,} nonzero): the largest "
            f"λ within one standard error of it (glmnet's default choice).</p>")
        if k_min == len(models) - 1:
            out.append("<p>lambda_min is the path's smallest λ: the held-out deviance "
                       "may still fall below it (a smaller --lambda-min-ratio "
                       "extends the path).</p>")
        out.append(_img(names["cv"], "held-out deviance and accuracy against λ"))
    out.append("<h2>Nonzero weights against λ</h2>")
    out.append(_img(names["nonzeros"], "nonzero weights against λ"))
    if "accuracy" in names:
        out.append(f"<h2>Test accuracy against λ</h2><p>Test data: "
                   f"{esc(test_info)}.</p>")
        out.append(_img(names["accuracy"], "test accuracy against λ"))
    columns = ["point", "λ", "λ/λ_max", "nonzero"]
    if data["test_accuracy"] is not None:
        columns += ["test accuracy", "test AUC"]
    if cv is not None:
        columns += ["CV deviance", "± se", "CV accuracy", "CV nonzero"]
    out.append("<h2>Points of the path</h2><div class=\"wide\"><table><tr>"
               + "".join(f"<th>{esc(c)}</th>" for c in columns) + "</tr>")
    for k in range(len(models)):
        cells = [k, data["lambda"][k], data["ratio"][k], data["nnz"][k]]
        if data["test_accuracy"] is not None:
            cells += [data["test_accuracy"][k], data["test_auc"][k]]
        if cv is not None:
            cells += [cv["deviance_mean"][k], cv["deviance_se"][k],
                      cv["accuracy_mean"][k], cv["nnz_mean"][k]]
        chosen = cv is not None and k in (cv["index_min"], cv["index_1se"])
        out.append(("<tr class=\"chosen\">" if chosen else "<tr>")
                   + "".join(f"<td>{esc(_fmt(c))}</td>" for c in cells) + "</tr>")
    out.append("</table></div>")
    out.append(f"<p><small>ultrafs {esc(__version__)}</small></p></body></html>")
    return "\n".join(out)


def _img(name, alt):
    """A figure and its caption, which names the λ axis."""
    return (f'<p><img src="{html.escape(urllib.parse.quote(name))}" '
            f'alt="{html.escape(alt)}"><br><small>{html.escape(alt)}; horizontal '
            f'axis: {html.escape(LAMBDA_AXIS)}.</small></p>')


def build_path_report(path_file, out_html, *, test_store=None) -> dict:
    """Write the HTML report of a path file and its PNG figures.

    Parameters
    ----------
    path_file : str or os.PathLike
        A path file (``ultrafs path --out``), validated on load.
    out_html : str or os.PathLike
        The page to write; its folder must exist.
    test_store : ColumnStore, optional
        A labelled store: adds the test accuracy and AUC of every point.

    Returns
    -------
    dict
        ``html`` (path of the page), ``figures`` (name -> PNG path:
        ``nonzeros``, maybe ``accuracy`` and ``cv``) and ``data`` (the
        figures' data: lists over the points ``lambda``, ``ratio``, ``nnz``,
        ``test_accuracy``, ``test_auc`` (None without a test store) and
        ``cv`` (None without one: per point ``deviance_mean``,
        ``deviance_se``, ``accuracy_mean``, ``accuracy_se``, ``nnz_mean``;
        ``lambda_min``, ``lambda_1se`` and their indices)).
    """

    from ultrafs.errors import UltraFSError
    from ultrafs.methods.path_file import PathModels
    from ultrafs.report_files import report_target, write_report_files

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UltraFSError("the report needs matplotlib: pip install "
                           "'ultrafs[report]'") from None
    models = PathModels.load(path_file)
    models.check_points()       # a report shows them all: every one must be valid
    out_html, directory, stem = report_target(out_html)
    data = _figure_data(models, test_store)
    names = {"nonzeros": f"{stem}_nonzeros.png"}
    if data["test_accuracy"] is not None:
        names["accuracy"] = f"{stem}_accuracy.png"
    if data["cv"] is not None:
        names["cv"] = f"{stem}_cv.png"
    test_info = None
    if test_store is not None:
        test_info = (f"{test_store.n_samples:,} rows, {test_store.n_features:,} "
                     "columns")
    plots = {"nonzeros": _plot_nonzeros, "accuracy": _plot_accuracy, "cv": _plot_cv}
    figures = write_report_files(
        out_html, names, lambda key, path: plots[key](path, data),
        lambda: _page(models, names, data, f"ultrafs path report: {stem}", test_info))
    return {"html": out_html, "figures": figures, "data": data}
