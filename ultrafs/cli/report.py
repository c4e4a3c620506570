"""``ultrafs report``: an HTML run report (and PNG figures) for a model file.

On a terminal it prints a short summary (the page, the test scores); with
``--json``, or when stdout is not a terminal, the summary is one JSON
object.  Its long phases (test scores, the ℓ2 refits, the ℓ1 baselines)
show progress on stderr (``--progress/--no-progress``; default: when
stderr is a terminal).
"""

from __future__ import annotations

import json
import os
import time

import click

from ultrafs.cli import terminal
from ultrafs.cli.data import resolve_data_path
from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.options import LABEL_OPTION, STORAGE_OPTION
from ultrafs.cli.output import check_output
from ultrafs.cli.types import MAX_COUNT


@click.command("report")
@click.argument("model_path", metavar="MODEL", type=click.Path())
@click.option("--test", "test_path", default=None, type=click.Path(),
              help="Labelled store or LIBSVM file: adds test accuracy vs number "
                   "of features.")
@click.option("--train", "train_path", default=None, type=click.Path(),
              help="Training store or LIBSVM file (with --test): adds, per prefix of k "
                   "iterations, the l2 refit of its features and scikit-learn's "
                   "l1-LR at the same number of features (the l1-LR baseline "
                   "loads this store in memory).")
@LABEL_OPTION
@STORAGE_OPTION
@click.option("--l1-max-nnz", type=click.IntRange(min=0, max=MAX_COUNT), default=None,
              help="Refuse a --train store holding more values than this "
                   "(default: 200,000,000).")
@click.option("--top", type=click.IntRange(min=0, max=MAX_COUNT), default=30, show_default=True,
              help="Features in the top-features figure and table.")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write; the PNGs go next to it (STEM_*.png).")
@click.option("--json", "as_json", is_flag=True, default=False,
              help="Print the summary as JSON (the default when stdout is not a "
                   "terminal).")
@click.option("--progress/--no-progress", default=None,
              help="Progress of the test scores, refits and l1 baselines on stderr "
                   "(default: when a terminal).")
@one_line_errors
@check_output("out", "--out", {"model file": "model_path", "--test store": "test_path",
                                "--train store": "train_path"})
def report_command(model_path, test_path, train_path, label, storage_options, l1_max_nnz,
                   top, out,
                   as_json, progress):
    """Write an HTML run report (and PNG figures) for a model file."""
    from ultrafs.model import Model
    from ultrafs.progress import showing
    from ultrafs.report import build_report
    from ultrafs.report_path import report_path_file
    from ultrafs.store import open_store

    if report_path_file(model_path, test_path, train_path, label, out, storage_options):
        return      # a path file (ultrafs path): its own report
    if train_path is not None and test_path is None:
        raise click.UsageError("--train needs --test (the curves are measured on "
                               "the test store)")
    started = time.perf_counter()
    model = Model.load(model_path)
    test_store = (None if test_path is None
                  else open_store(resolve_data_path(test_path), label=label,
                                 storage_options=storage_options))
    train_store = (None if train_path is None
                   else open_store(resolve_data_path(train_path), label=label,
                                  storage_options=storage_options))
    with showing(terminal.progress_enabled(progress)):
        result = build_report(model, out, test_store=test_store, train_store=train_store,
                              top=top, l1_max_nnz=l1_max_nnz,
                              test_name=None if test_path is None else os.fspath(test_path),
                              train_name=(None if train_path is None
                                          else os.fspath(train_path)))
    data = result["data"]
    summary = {"html": result["html"], "figures": result["figures"]}
    for key, curve in (("test", "accuracy"), ("test_refit", "accuracy_refit"),
                       ("test_l1", "accuracy_l1")):
        if data[curve]:
            summary[key] = data[curve][-1]
    if data["accuracy_notes"]:
        summary["notes"] = data["accuracy_notes"]
    if as_json or not terminal.stdout_is_terminal():
        click.echo(json.dumps(summary, indent=1))
    else:
        click.echo(human_summary(summary, data, time.perf_counter() - started))


#: the summary's label of each test curve
_CURVE_LABELS = (("test", "test"), ("test_refit", "l2 refit"), ("test_l1", "l1-LR"))


def human_summary(summary, data, seconds) -> str:
    """A few aligned lines for a person: the page, its figures, the test
    scores of the whole model (and of its refit and the ℓ1-LR baseline at
    the same count), the notes' count and the time."""
    from ultrafs.cli.terminal import format_seconds

    figures = ", ".join(summary["figures"]) or "none"
    lines = [("report", f"{summary['html']}"),
             ("figures", f"{len(summary['figures'])} ({figures}), next to it"),
             ("method", data["method"])]
    for key, label in _CURVE_LABELS:
        row = summary.get(key)
        if row is None:
            continue
        count = row.get("nnz", row["n_features"])
        text = (f"accuracy {row['accuracy']:.4f}, AUC {row['auc']:.4f} with "
                f"{count:,} features")
        if row.get("C") is not None:
            text += f" (C = {row['C']:.4g})"
        lines.append((label, text))
    if summary.get("notes"):
        n = len(summary["notes"])
        lines.append(("notes", f"{n} note{'s' if n != 1 else ''} in the report"))
    lines.append(("time", format_seconds(seconds)))
    width = max(len(name) for name, _ in lines) + 2
    return "\n".join(f"{name:<{width}}{text}" for name, text in lines)
