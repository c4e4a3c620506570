"""``ultrafs path``: the ℓ1-LR path with safe screening, as JSON."""

from __future__ import annotations

import sys

import click

from ultrafs.cli.data import resolve_data_path
from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.method_options import given_params, method_options
from ultrafs.cli.options import LABEL_OPTION, run_options, with_options
from ultrafs.cli.output import emit_json
from ultrafs.cli.scheduler import scheduler_for_run
from ultrafs.cli.terminal import format_seconds, progress_enabled


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
@click.option("--method", type=click.Choice(["l1"]), default="l1", show_default=True,
              help="l1: ℓ1-logistic regression with an unpenalised intercept.")
@with_options(run_options())
@click.option("--out", default="-", show_default=True,
              help="Path file (JSON) to write, or - for stdout.")
@click.option("--progress/--no-progress", default=None,
              help="One line per λ on stderr (default: when a terminal).")
@one_line_errors
def path_command(data_path, label, method, block_size, scheduler, workers,
                 connect_timeout, worker_timeout, out, progress, **values):
    """Solve the ℓ1-LR path with safe screening and write it as JSON.

    Per λ: λ, λ/λ_max, nonzeros, objective, features kept by screening,
    rejection ratio, KKT violators found and left (always 0), seconds of
    screening / solving / the KKT pass, and the model's features and weights.
    """
    from ultrafs.api import l1_path, path_to_dict
    from ultrafs.methods.registry import get_method
    from ultrafs.outputs import check_output_file
    from ultrafs.store import open_store

    check_output_file(out, "--out", [("--data store", data_path)])
    store = open_store(resolve_data_path(data_path), label=label)
    show = progress_enabled(progress)

    def report(record):
        if show:
            click.echo(f"λ/λ_max {record['ratio']:.3f}: {record['nnz']:,} nonzero, "
                       f"{record['kept']:,} kept of {store.n_features:,}, "
                       f"objective {record['objective']:.6g}, "
                       f"{record['kkt_violations_found']} violators re-added, "
                       f"{format_seconds(record['seconds_solving'] + record['seconds_kkt'])}",
                       err=True)

    with scheduler_for_run(scheduler, connect_timeout, worker_timeout) as dask_scheduler:
        path = l1_path(store, **given_params(get_method("l1"), values),
                       block_size=block_size, scheduler=dask_scheduler,
                       num_workers=workers, callback=report)
    emit_json(path_to_dict(path, store, command=" ".join(["ultrafs"] + sys.argv[1:])),
               out)


# --data, --label and --method first, then the path's parameters
path_command.params.sort(key=lambda p: {"data_path": 0, "label": 1, "method": 2}.get(
    p.name, 3))
