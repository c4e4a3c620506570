"""``ultrafs predict`` and ``ultrafs evaluate``: a model file, or one point
of a path file (``ultrafs path``), on a store."""

from __future__ import annotations

import contextlib
import json

import click

from ultrafs.cli.data import resolve_data_path
from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.options import LABEL_OPTION, STORAGE_OPTION
from ultrafs.cli.output import check_output
from ultrafs.cli.types import MAX_COUNT


@contextlib.contextmanager
def _naming(model_path, data_path):
    """A model applied to data it cannot score (none of its features, other
    ids, decisions that overflow): one line naming the model file and
    ``--data`` as the user gave them."""
    from ultrafs.errors import InputFormatError
    from ultrafs.model import ModelDataError

    try:
        yield
    except ModelDataError as exc:
        raise InputFormatError(exc.message(model_path, data_path)) from None


def _write_predictions(model, decision, out, output_format):
    """Write row numbers, predicted labels, decision values (and probabilities).

    Columns: ``row`` (0-based row number in the data), ``predicted`` (the
    predicted class value), then ``decision`` (and ``probability`` of the
    positive class, for losses that give one).  K-class models write one
    ``decision_<class>`` (and ``probability_<class>``) column per class,
    named by the class value.  TSV rows, or one JSON object of arrays.
    """
    import numpy as np

    columns = {"row": np.arange(len(decision), dtype=np.int64),
               "predicted": model.predict_from_decision(decision)}
    if model.n_outputs == 1:
        columns["decision"] = decision
        if model.probabilistic:
            columns["probability"] = model.proba_from_decision(decision)
    else:
        names = [c if isinstance(c, str) else f"{c:g}" for c in model.classes]
        for k, name in enumerate(names):
            columns[f"decision_{name}"] = decision[:, k]
        if model.probabilistic:
            proba = model.proba_from_decision(decision)
            for k, name in enumerate(names):
                columns[f"probability_{name}"] = proba[:, k]
    if output_format == "json":
        text = json.dumps({name: values.tolist() for name, values in columns.items()})
        text += "\n"
    else:
        lines = ["\t".join(columns)]
        lines += ["\t".join([str(values[0])] + [_cell(v) for v in values[1:]])
                  for values in zip(*columns.values())]
        text = "\n".join(lines) + "\n"
    if out in (None, "-"):
        click.echo(text, nl=False)
    else:
        from ultrafs.atomic import write_text_atomic

        write_text_atomic(text, out)


def _cell(value) -> str:
    """A TSV cell or column name: a number to 10 significant digits, a
    string class (checked on load: no tab or line break) as it is."""
    if isinstance(value, str):
        return value
    return f"{value:.10g}"


def point_options(function):
    """``--lambda``, ``--point``, ``--n-features-to-select``: which model of a
    path file (:class:`~ultrafs.methods.path_file.PathModels`)."""
    options = [
        click.option("--lambda", "lambda_", default=None, metavar="X",
                     help="Path file: the model at this λ of the path, or min / 1se "
                          "(lambda_min / lambda_1se of its --cv; 1se by default "
                          "when it has one)."),
        click.option("--point", type=click.IntRange(-MAX_COUNT, MAX_COUNT), default=None,
                     help="Path file: the model at this point (0-based; -1: the "
                          "last)."),
        click.option("--n-features-to-select", "n_features_to_select",
                     type=click.IntRange(min=0, max=MAX_COUNT), default=None,
                     help="Path file: its model with the most nonzero weights, at "
                          "most this many."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _model_of(model_path, lambda_, point, n_features_to_select):
    """The model file's model, or the chosen point of a path file."""
    from ultrafs.methods.path_file import load_model_or_point

    return load_model_or_point(model_path, lambda_=lambda_, point=point,
                               n_features_to_select=n_features_to_select)


@click.command()
@click.option("--model", "model_path", required=True, type=click.Path(),
              help="Model file, or path file (ultrafs path) with a point option.")
@click.option("--data", "data_path", required=True, type=click.Path(),
              help="Store, or LIBSVM file (ingested once into the cache and "
                   "reused); labels not needed.")
@point_options
@LABEL_OPTION
@STORAGE_OPTION
@click.option("--out", default="-", show_default=True,
              help="Output file, or - for stdout.")
@click.option("--format", "output_format", type=click.Choice(["tsv", "json"]),
              default="tsv", show_default=True,
              help="TSV rows (row, predicted, decision[, probability]; one "
                   "decision_CLASS and probability_CLASS per class for K classes) "
                   "or one JSON object of arrays.")
@one_line_errors
@check_output("out", "--out", {"--model file": "model_path", "--data store": "data_path"})
def predict(model_path, data_path, lambda_, point, n_features_to_select, label,
            storage_options, out, output_format):
    """Predict every row of a store with a model file (or a path file's point)."""
    from ultrafs.store import open_store

    model, chosen = _model_of(model_path, lambda_, point, n_features_to_select)
    if chosen is not None:
        click.echo(f"{model_path}: point {chosen['point']} of the path, "
                   f"λ = {chosen['lambda']:.6g}, {chosen['nnz']} nonzero "
                   f"({chosen['chosen_by']})", err=True)
    # labels are not needed: the labelled entry of select / evaluate serves too
    store = open_store(resolve_data_path(data_path, target="none", also_targets=(None,)),
                       label=label, labels=False, storage_options=storage_options)
    with _naming(model_path, data_path):
        decision = model.decision_function_store(store)
    _write_predictions(model, decision, out, output_format)


@click.command()
@click.option("--model", "model_path", required=True, type=click.Path(),
              help="Model file, or path file (ultrafs path) with a point option.")
@click.option("--data", "data_path", required=True, type=click.Path(),
              help="Labelled store, or LIBSVM file (ingested once into the "
                   "cache and reused).")
@point_options
@LABEL_OPTION
@STORAGE_OPTION
@one_line_errors
def evaluate(model_path, data_path, lambda_, point, n_features_to_select, label,
             storage_options):
    """Print accuracy, AUC and counts of a model on a labelled store (JSON);
    for a path file, also the point evaluated (``path_point``)."""
    from ultrafs.store import open_store

    model, chosen = _model_of(model_path, lambda_, point, n_features_to_select)
    store = open_store(resolve_data_path(data_path), label=label,
                       storage_options=storage_options)
    with _naming(model_path, data_path):
        metrics = model.evaluate_store(store)
    if chosen is not None:
        metrics = dict(metrics, path_point=chosen)
    click.echo(json.dumps(metrics))
