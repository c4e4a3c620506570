"""``ultrafs path``: the ℓ1-LR path with safe screening, as JSON."""

from __future__ import annotations

import sys

import click

from ultrafs.cli.data import resolve_data_path
from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.method_options import given_params, method_options
from ultrafs.cli.options import LABEL_OPTION, STORAGE_OPTION, run_options, with_options
from ultrafs.cli.output import emit_json
from ultrafs.cli.scheduler import scheduler_for_run
from ultrafs.cli.terminal import format_seconds, progress_enabled, stderr_is_terminal
from ultrafs.cli.types import MAX_COUNT


#: the ℓ1 method's parameters that describe a whole path (not one model on it)
PATH_PARAMETERS = ("screening", "sequential", "n_lambdas", "lambda_min_ratio",
                   "lambda_max_ratio", "tol", "max_iter")


def _path_options():
    from ultrafs.methods.registry import get_method

    l1 = get_method("l1")
    return [o for o in method_options(l1) if o.name in PATH_PARAMETERS]


@click.command("path", params=_path_options())
@click.option("--data", "data_path", required=True, type=click.Path(),
              help="Training data: a store or a LIBSVM file (ingested once into "
                   "the cache, as for select).")
@LABEL_OPTION
@STORAGE_OPTION
@click.option("--method", type=click.Choice(["l1"]), default="l1", show_default=True,
              help="l1: ℓ1-logistic regression with an unpenalised intercept.")
@with_options(run_options())
@click.option("--out", default="-", show_default=True,
              help="Path file (JSON) to write, or - for stdout.")
@click.option("--cv", "n_folds", type=click.IntRange(min=2, max=1000), default=None,
              help="K-fold cross-validation along the path (as glmnet's cv.glmnet): "
                   "folds stratified by class, every fold at the path's λ; per λ the "
                   "held-out deviance and accuracy (mean, std, standard error) and "
                   "the mean nonzeros; the chosen λ (lambda_min: smallest mean "
                   "deviance; lambda_1se: the largest λ within one standard error "
                   "of it) are recorded under \"cv\" and printed on stderr.")
@click.option("--seed", type=click.IntRange(min=0, max=MAX_COUNT), default=0, show_default=True,
              help="Seed of the --cv folds.")
@click.option("--progress/--no-progress", default=None,
              help="Progress on stderr: a bar on a terminal, one line per λ when "
                   "piped (default: when a terminal).")
@one_line_errors
def path_command(data_path, label, storage_options, method, block_size, scheduler, workers,
                 connect_timeout, worker_timeout, out, n_folds, seed, progress,
                 **values):
    """Solve the ℓ1-LR path with safe screening and write it as JSON.

    Per λ: λ, λ/λ_max, nonzeros, objective, features kept by screening,
    rejection ratio, KKT violators found and left (always 0), seconds of
    screening / solving / the KKT pass, and the model's features and weights.
    With --cv K, the K-fold cross-validation of the path and its chosen λ.
    The file is read by evaluate, predict (--lambda, --point,
    --n-features-to-select) and report.
    """
    from ultrafs.api import l1_path
    from ultrafs.methods.l1_method import path_to_dict
    from ultrafs.methods.registry import get_method
    from ultrafs.outputs import check_output_file
    from ultrafs.progress import showing
    from ultrafs.store import open_store

    check_output_file(out, "--out", [("--data store", data_path)])
    store = open_store(resolve_data_path(data_path), label=label,
                       storage_options=storage_options)
    show = progress_enabled(progress)
    on_terminal = stderr_is_terminal()
    given = given_params(get_method("l1"), values)

    def report(record):
        if show and not on_terminal:        # a bar on a terminal (the path's phase)
            click.echo(f"λ/λ_max {record['ratio']:.3f}: {record['nnz']:,} nonzero, "
                       f"{record['kept']:,} kept of {store.n_features:,}, "
                       f"objective {record['objective']:.6g}, "
                       f"{record['kkt_violations_found']} violators re-added, "
                       f"{format_seconds(record['seconds_solving'] + record['seconds_kkt'])}",
                       err=True)

    cv = None
    with scheduler_for_run(scheduler, connect_timeout, worker_timeout) as dask_scheduler, \
            showing(show):
        path = l1_path(store, **given, block_size=block_size, scheduler=dask_scheduler,
                       num_workers=workers, callback=report)
        if n_folds is not None:
            cv = _cross_validate(path, store, n_folds, seed, given,
                                 dict(block_size=block_size, scheduler=dask_scheduler,
                                      num_workers=workers))
    doc = path_to_dict(path, store, command=" ".join(["ultrafs"] + sys.argv[1:]), cv=cv)
    emit_json(doc, out)
    for line in chosen_lines(doc["cv"]) if cv is not None else ():
        click.echo(line, err=True)


def _cross_validate(path, store, n_folds, seed, given, run):
    """The path's K-fold cross-validation (:mod:`ultrafs.methods.path_cv`)."""
    from ultrafs.methods.l1_method import binary_labels
    from ultrafs.methods.path_cv import cross_validate_path

    solver = {name: given[name] for name in ("screening", "sequential", "tol",
                                             "max_iter") if name in given}
    return cross_validate_path(store, binary_labels(store), path.lambdas,
                               n_folds=n_folds, seed=seed, lambda_max=path.lambda_max,
                               **solver, **run)


def chosen_lines(cv) -> list:
    """The chosen λ of a path file's ``"cv"``, as lines for people."""
    lines = []
    for word, what in (("min", "smallest mean held-out deviance"),
                       ("1se", "largest λ within one standard error of it")):
        point = cv["points"][cv[f"index_{word}"]]
        lines.append(
            f"lambda_{word} = {point['lambda']:.6g}"
            + (f" (λ/λ_max {point['ratio']:.4g})" if "ratio" in point else "")
            + f", point {cv[f'index_{word}']}: {what}; held-out deviance "
            f"{point['deviance_mean']:.4f} ± {point['deviance_se']:.4f}, accuracy "
            f"{point['accuracy_mean']:.4f}, {point['nnz_mean']:.1f} nonzero "
            f"(mean of {cv['n_folds']} folds)")
    if cv["index_min"] == len(cv["points"]) - 1:
        lines.append("lambda_min is the path's smallest λ: the held-out deviance may "
                     "still fall below it (a smaller --lambda-min-ratio extends the "
                     "path)")
    return lines


# --data, --label and --method first, then the path's parameters
path_command.params.sort(key=lambda p: {"data_path": 0, "label": 1, "method": 2}.get(
    p.name, 3))
