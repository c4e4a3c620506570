"""What a person reads after ``select``: ``(name, text)`` lines, printed
as a table on a terminal, else the scores alone on stderr."""

from __future__ import annotations

import os
import re
import time

import click

from ultrafs.cli.terminal import format_seconds


def print_summary(lines, scores, out, summary, started):
    """The scores, time and model path after ``lines``: as a table on a
    terminal, else the accuracies alone on stderr."""
    for name, record in scores.items():
        where = record.get("data", "held-out rows")
        if "accuracy" in record:
            lines.append((f"{name.replace('_', '-')} accuracy",
                          f"{record['accuracy']:.4f} on {where}"))
        else:
            lines.append((f"{name.replace('_', '-')} RMSE",
                          f"{record['rmse']:.6g} (R² {record['r2']:.4f}) on {where}"))
    lines.append(("time", format_seconds(time.perf_counter() - started)))
    if out != "-":
        lines.append(("model", os.fspath(out)))
    if summary:
        width = max(len(name) for name, _ in lines) + 2
        click.echo("\n".join(f"{name:<{width}}{text}" for name, text in lines))
    else:
        for name, text in lines:
            if name.endswith(("accuracy", "RMSE")):
                click.echo(f"{name}: {text}", err=True)


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


def select_summary(model, store, scores, out, seconds):
    """What a person reads after ``select``: ``(name, text)`` pairs."""
    import numpy as np

    params = model.params
    n_features = len(model.features)
    budget = params.get("B", 0) * params.get("max_iter", 0)
    coef = np.asarray(model.coef)
    lines = []

    def add(name, text):
        lines.append((name, text))

    space = params.get("space")
    if space in ("groups", "tree") or model.feature_space.get("kind") in (
            "hik", "chi2", "intersection", "js"):
        unit = {"groups": "groups", "tree": "nodes"}.get(space, "kernels (features)")
        shown = ", ".join(str(u) for u in model.selected_groups[:10])
        more = len(model.selected_groups) - 10
        add(f"{unit} selected", f"{len(model.selected_groups):,} of {budget:,} "
            f"(--B {params.get('B')} x --max-iter {params.get('max_iter')}) among "
            f"{params.get('n_candidates', 0):,}: {shown}"
            + (f" and {more:,} more" if more > 0 else ""))
        add("columns", f"{n_features:,} with a nonzero weight, of "
            f"{store.n_features:,} columns of {store.n_samples:,} rows")
    else:
        add("features selected", f"{n_features:,} of {budget:,} "
            f"(--B {params.get('B')} x --max-iter {params.get('max_iter')}), among "
            f"{store.n_features:,} columns of {store.n_samples:,} rows")
    if coef.ndim == 2 and coef.shape[1] > 1:
        add("nonzero weights", f"{int(np.count_nonzero(coef)):,} of {coef.size:,} "
            f"({n_features:,} features x {coef.shape[1]} classes)")
    else:
        add("nonzero weights", f"{int(np.count_nonzero(coef)):,} of {coef.size:,}")
    if model.history:
        add("objective", f"{model.history[-1]['objective']:.6g} after "
            f"{len(model.history)} iteration{'s' * (len(model.history) != 1)}")
    add("stopped because", plain_stop_reason(model.stop_reason or ""))
    add("C", f"{params.get('C', 0):g} ({params.get('C_rule', 'given')})")
    validation = params.get("validation")
    if validation:
        from ultrafs.methods.validation import chosen_point

        best = chosen_point(validation)
        if best is not None and "accuracy" in best:
            add("validation accuracy", f"{best['accuracy']:.4f} at the chosen C "
                f"({validation.get('method')}; the model is then fitted on all rows)")
    if model.refit is not None:
        add("predicts with", "the refit" if model.predictor == "refit" else
            "FGM's own weights" + (" (they scored better than the refit on the "
                                   "held-out rows)" if validation else ""))
    held = scores.get("held_out")
    if held:
        add("held-out accuracy", f"{held['accuracy']:.4f} on {held['n_held_out']:,} "
            f"rows ({held['fraction']:g} of the data, stratified); fitted on the "
            f"other {held['n_train']:,}")
    test = scores.get("test")
    if test:
        add("test accuracy", f"{test['accuracy']:.4f} on {test['n_samples']:,} rows "
            f"of {test['data']}")
    add("time", format_seconds(seconds))
    if out != "-":
        add("model", os.fspath(out))
    return lines
