"""The run report's PNG figures, drawn with matplotlib's object-oriented API
on the Agg canvas (the caller's pyplot backend is never touched).

Each ``plot_*`` function takes the path of the PNG to write and the data of
:func:`ultrafs.report_data.figure_data`; :func:`ultrafs.report.build_report`
calls those that apply to the model's method.
"""

from __future__ import annotations

import numpy as np

__all__ = ["plot_history", "plot_timing", "plot_features", "plot_ranking",
           "plot_basis", "plot_accuracy", "plot_lambda_path", "plot_validation", "CURVES"]

#: the accuracy curves: data key, legend, marker, line style, colour
CURVES = (("accuracy", "FGM, first k iterations (final weights)", "o", "-", "tab:blue"),
          ("accuracy_refit", "FGM, refit on those features (l2)", "s", "-", "tab:green"),
          ("accuracy_l1", "scikit-learn l1-LR, same count", "^", "--", "tab:red"))
#: above this many steps a bar panel is drawn as a line
_MAX_BARS = 40
_COLORS = ("tab:blue", "tab:green", "tab:purple", "tab:orange", "tab:red", "tab:brown")


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


def _step_xaxis(ax, steps):
    """One tick per step when there are few; integer ticks otherwise."""
    from matplotlib.ticker import MaxNLocator

    if len(steps) <= 20:
        ax.set_xticks(list(steps))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _integer_axis(axis):
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def _log_xaxis(ax):
    """A log x-axis running from the largest value down (a λ path), labelled
    at 1, 2 and 5 times each power of ten (plain numbers, none colliding)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.3g}"))


def _tick_label(row, limit=40) -> str:
    """A feature's axis label: its id, and its name (shortened) when it has one."""
    name = row.get("name")
    if name is None:
        return row["label"]
    if len(name) > limit:
        name = name[:limit - 1] + "…"
    # a "$" would start matplotlib's mathtext
    return f"{name.replace('$', chr(92) + '$')}  {row['label']}"


def _spans_decades(values, ratio=30.0) -> bool:
    finite = np.asarray([v for v in values if np.isfinite(v) and v > 0])
    return bool(finite.size) and finite.max() / finite.min() > ratio


def plot_history(path, data, spec):
    """The method's history: one panel per recorded field of ``spec.panels``
    against ``spec.x`` (outer iteration, solver iteration, λ)."""
    panels = [p for p in spec.panels if p.key in data["series"]]
    fig = _new_figure(7.0, 1.2 + 2.2 * max(len(panels), 1))
    axes = fig.subplots(max(len(panels), 1), 1, sharex=True, squeeze=False)[:, 0]
    x = np.asarray(data["x"], dtype=float)
    order = np.argsort(x, kind="stable") if spec.x_log else np.arange(len(x))
    x = x[order]
    if not len(x) or not panels:
        _no_data(axes[0], "no iterations recorded")
    for i, (ax, panel) in enumerate(zip(axes, panels)):
        y = np.asarray(data["series"][panel.key], dtype=float)[order]
        color = _COLORS[i % len(_COLORS)]
        if panel.kind == "bar" and len(x) <= _MAX_BARS and not spec.x_log:
            bars = ax.bar(x, np.nan_to_num(y), width=0.6, color=color)
            ax.bar_label(bars, fontsize=8)
            ax.margins(y=0.15)
            ax.set_ylim(bottom=0)
            _integer_axis(ax.yaxis)
        else:
            ax.plot(x, y, marker="o" if len(x) <= _MAX_BARS else None,
                    markersize=3 if len(x) > 20 else 5, color=color)
        if panel.log or (panel.log is None and panel.kind != "bar"
                         and _spans_decades(y)):
            if np.any(np.isfinite(y) & (y > 0)):
                ax.set_yscale("log")
        if data.get("marked") is not None:
            ax.axvline(data["marked"], color="#888", linestyle=":",
                       label=f"chosen {spec.x_label} = {data['marked']:.4g}")
        ax.set_ylabel(panel.label)
        ax.grid(True, alpha=0.3)
    axes[0].set_title(data["objective_title"] if panels and panels[0].key == "objective"
                      else spec.title, fontsize=9)
    if data.get("marked") is not None and panels:
        axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    last = axes[len(panels) - 1] if panels else axes[0]
    last.set_xlabel(spec.x_label)
    if spec.x_log and len(x):
        _log_xaxis(last)
    elif len(x):
        _step_xaxis(last, [int(v) for v in x if np.isfinite(v)])
    fig.savefig(path, format="png")


def plot_timing(path, data, spec):
    """Seconds per phase against the history's x (bars for a few steps,
    lines for many)."""
    fig = _new_figure(7.0, 4.0)
    ax = fig.subplots()
    x = np.asarray(data["x"], dtype=float)
    phases = data["phases"]
    from ultrafs.report_data import phase_label

    if len(x) and phases:
        order = np.argsort(x, kind="stable") if spec.x_log else np.arange(len(x))
        many = len(x) > 20 or spec.x_log
        width = 0.8 / len(phases)
        for i, (name, seconds) in enumerate(phases.items()):
            values = np.nan_to_num(np.asarray(seconds, dtype=float))[order]
            color = _COLORS[i % len(_COLORS)]
            if many:
                ax.plot(x[order], values, label=phase_label(name), color=color,
                        marker="." if len(x) <= 100 else None)
            else:
                offset = (i - (len(phases) - 1) / 2) * width
                ax.bar(x + offset, values, width=width, label=phase_label(name),
                       color=color)
        positive = np.concatenate([np.asarray(v, dtype=float) for v in phases.values()])
        positive = positive[np.isfinite(positive) & (positive > 0)]
        if positive.size and positive.max() / positive.min() > 50:
            ax.set_yscale("log")
        ax.legend(title="phase", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        if spec.x_log:
            _log_xaxis(ax)
        else:
            _step_xaxis(ax, [int(v) for v in x])
    else:
        _no_data(ax, "no timings recorded")
    ax.set_xlabel(spec.x_label)
    ax.set_ylabel("seconds")
    ax.set_title(f"Time per phase per {spec.x_label}")
    ax.grid(True, axis="y", alpha=0.3)
    fig.savefig(path, format="png")


def plot_features(path, top_rows, n_classes=1):
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
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    else:
        _no_data(ax, "no features selected")
    ax.set_xlabel("‖weights over classes‖" if per_class else "weight")
    ax.set_ylabel("feature (id and name)" if any(r.get("name") for r in top_rows)
                  else "feature id")
    ax.set_title(f"Top {n} features by ‖weights over classes‖" if per_class
                 else f"Top {n} features by |weight|")
    ax.grid(True, axis="x", alpha=0.3)
    fig.savefig(path, format="png")


def plot_ranking(path, rows, n_ranked=None, method="GSR-FS"):
    """The selected features' ranking scores, best first (rank 1 at the top)."""
    n = len(rows)
    fig = _new_figure(7.0, max(2.5, 1.2 + 0.28 * n))
    ax = fig.subplots()
    if n:
        positions = np.arange(n)[::-1]
        ax.barh(positions, [r["score"] for r in rows], color="tab:purple")
        ax.set_yticks(positions)
        ax.set_yticklabels([_tick_label(r) for r in rows], fontsize=8)
        ax.set_ylim(-0.7, n - 0.3)
    else:
        _no_data(ax, "no ranking scores recorded")
    of = f" of {n_ranked:,} ranked" if n_ranked else ""
    ax.set_title(f"{method} ranking: the {n} best features{of}, by score ‖w_j‖")
    ax.set_xlabel("score ‖w_j‖ (row norm of W)")
    ax.set_ylabel("feature (id and name)" if any(r.get("name") for r in rows)
                  else "feature id")
    ax.grid(True, axis="x", alpha=0.3)
    fig.savefig(path, format="png")


def plot_basis(path, basis):
    """|weight| of the nonzero basis functions, largest first, and how many
    of the basis they are."""
    weights = np.asarray(basis["weights"], dtype=float)
    fig = _new_figure(7.0, 3.8)
    ax = fig.subplots()
    n_basis = basis.get("n_basis")
    if weights.size:
        ranks = np.arange(1, weights.size + 1)
        if weights.size <= _MAX_BARS:
            ax.bar(ranks, weights, color="tab:blue", width=0.7)
        else:
            ax.plot(ranks, weights, color="tab:blue")
        if _spans_decades(weights, 100.0):
            ax.set_yscale("log")
        _integer_axis(ax.xaxis)
    else:
        _no_data(ax, "no basis function has a nonzero weight")
    share = (f" of {n_basis:,} ({100 * weights.size / n_basis:.3g}%)"
             if n_basis else "")
    ax.set_title(f"Basis size: {weights.size:,}{share} basis functions with a "
                 f"nonzero weight")
    ax.set_xlabel("basis function, by |weight| (largest first)")
    ax.set_ylabel("|weight|")
    ax.grid(True, alpha=0.3)
    fig.savefig(path, format="png")


def plot_accuracy(path, data):
    """Accuracy (top) and AUC (bottom) vs number of features, one line per
    curve; the legend beside the axes, so it covers no point."""
    fig = _new_figure(8.5, 6.5)
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
        ax_acc.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        _integer_axis(ax_auc.xaxis)
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


def plot_lambda_path(path, rows, marked=None):
    """Test accuracy (top) and nonzero weights (bottom) against λ, the
    chosen λ marked."""
    fig = _new_figure(8.5, 5.5)
    ax_acc, ax_nnz = fig.subplots(2, 1, sharex=True)
    lambdas = [r["lambda"] for r in rows]
    ax_acc.plot(lambdas, [r["accuracy"] for r in rows], marker=".", color="tab:blue",
                label="test accuracy")
    ax_acc.plot(lambdas, [r["auc"] for r in rows], marker=".", color="tab:orange",
                linestyle="--", label="test AUC")
    ax_nnz.plot(lambdas, [r["nnz"] for r in rows], drawstyle="steps-post",
                color="tab:green")
    if marked is not None:
        for ax in (ax_acc, ax_nnz):
            ax.axvline(marked, color="#888", linestyle=":",
                       label=f"chosen λ = {marked:.4g}" if ax is ax_acc else None)
    ax_acc.set_ylabel("test accuracy / AUC")
    ax_acc.set_title("Test accuracy and nonzero weights along the λ path")
    ax_acc.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax_nnz.set_ylabel("nonzero weights")
    ax_nnz.set_xlabel("λ")
    _integer_axis(ax_nnz.yaxis)
    for ax in (ax_acc, ax_nnz):
        ax.grid(True, alpha=0.3)
    _log_xaxis(ax_nnz)
    fig.savefig(path, format="png")


def plot_validation(path, curve):
    """Held-out accuracy vs C (C="auto"), one line per refit C; the legend
    beside the axes, so it covers no point."""
    from ultrafs.report_html import fmt

    fig = _new_figure(8.0, 4.0)
    ax = fig.subplots()
    lines = {}
    for point in curve["points"]:
        lines.setdefault(point["refit_C"], []).append(point)
    for refit_C, points in sorted(lines.items(), key=lambda kv: kv[0] or 0.0):
        label = "FGM" if refit_C is None else f"refit C = {fmt(refit_C)}"
        ax.plot([p["C"] for p in points], [p["accuracy"] for p in points],
                marker="o", label=label)
    ax.axvline(curve["C"], color="#888", linestyle=":", label=f"chosen C = {fmt(curve['C'])}")
    ax.set_xscale("log")
    ax.set_xlabel("C")
    ax.set_ylabel("held-out accuracy")
    ax.set_title("Choice of C on held-out rows")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    fig.savefig(path, format="png")
