"""``ultrafs report``: an HTML run report (and PNG figures) for a model file."""

from __future__ import annotations

import json

import click

from ultrafs.cli.data import resolve_data_path
from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.options import LABEL_OPTION
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
@click.option("--l1-max-nnz", type=click.IntRange(min=0), default=None,
              help="Refuse a --train store holding more values than this "
                   "(default: 200,000,000).")
@click.option("--top", type=click.IntRange(min=0, max=MAX_COUNT), default=30, show_default=True,
              help="Features in the top-features figure and table.")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write; the PNGs go next to it (STEM_*.png).")
@one_line_errors
@check_output("out", "--out", {"model file": "model_path", "--test store": "test_path",
                                "--train store": "train_path"})
def report_command(model_path, test_path, train_path, label, l1_max_nnz, top, out):
    """Write an HTML run report (and PNG figures) for a model file."""
    from ultrafs.store import open_store

    from ultrafs.model import Model
    from ultrafs.report import build_report
    from ultrafs.report_path import report_path_file

    if report_path_file(model_path, test_path, train_path, label, out):
        return      # a path file (ultrafs path): its own report
    if train_path is not None and test_path is None:
        raise click.UsageError("--train needs --test (the curves are measured on "
                               "the test store)")
    model = Model.load(model_path)
    test_store = (None if test_path is None
                  else open_store(resolve_data_path(test_path), label=label))
    train_store = (None if train_path is None
                   else open_store(resolve_data_path(train_path), label=label))
    result = build_report(model, out, test_store=test_store, train_store=train_store,
                          top=top, l1_max_nnz=l1_max_nnz)
    data = result["data"]
    summary = {"html": result["html"], "figures": result["figures"]}
    for key, curve in (("test", "accuracy"), ("test_refit", "accuracy_refit"),
                       ("test_l1", "accuracy_l1")):
        if data[curve]:
            summary[key] = data[curve][-1]
    if data["accuracy_notes"]:
        summary["notes"] = data["accuracy_notes"]
    click.echo(json.dumps(summary, indent=1))
