"""``ultrafs demo``: the paper's §8.2 problem, generated and selected."""

from __future__ import annotations

import json
import os

import click

from ultrafs.cli import terminal
from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.method_options import given_params, method_options
from ultrafs.cli.options import run_options, with_options
from ultrafs.cli.run import run_method
from ultrafs.methods.fgm_method import FGM, plain_stop_reason
from ultrafs.cli.terminal import format_seconds
from ultrafs.cli.types import MAX_COUNT


@click.command(params=method_options(FGM, exclude=("seed",)))
@click.option("--dir", "directory", type=click.Path(file_okay=False),
              default="ultrafs-demo", show_default=True,
              help="Where the generated stores and the model go.")
@click.option("--n-samples", type=click.IntRange(min=10, max=MAX_COUNT), default=4096, show_default=True)
@click.option("--n-features", type=click.IntRange(min=10, max=MAX_COUNT), default=4096, show_default=True)
@click.option("--n-relevant", type=click.IntRange(min=1, max=MAX_COUNT), default=300, show_default=True)
@click.option("--seed", type=click.IntRange(min=0, max=2**63 - 1), default=0,
              show_default=True)
@with_options(run_options())
@click.option("--progress/--no-progress", default=None,
              help="Per-iteration progress on stderr (default: on).")
@one_line_errors
def demo(directory, n_samples, n_features, n_relevant, seed, progress, **values):
    """Generate the paper's §8.2 problem into Zarr stores and run select.

    Writes DIR/train.zarr and DIR/test.zarr (4096 x 4096, 300 relevant
    features, y = sign(Xw), 4096 test rows), runs FGM on the train store
    with the local threaded scheduler, prints the selected features, the
    objective per iteration and the held-out accuracy, and writes
    DIR/model.json.
    """
    from ultrafs.atomic import write_json_atomic
    from ultrafs.store import open_store
    from ultrafs.store.writers.zarr_writer import write_store
    from ultrafs.datasets.planted import make_planted_problem

    if progress is None:
        progress = True
    params = given_params(FGM, values)
    FGM.make_params(**params)       # refuse bad parameters before writing data
    if n_relevant > n_features:
        raise click.BadParameter("--n-relevant exceeds --n-features")
    train_path = os.path.join(directory, "train.zarr")
    test_path = os.path.join(directory, "test.zarr")
    problem = make_planted_problem(n_samples, n_features, n_relevant,
                                   n_test=n_samples, seed=seed)
    os.makedirs(directory, exist_ok=True)
    click.echo(f"writing {train_path} and {test_path} "
               f"({n_samples} x {n_features}, {n_relevant} relevant features)",
               err=True)
    write_store(train_path, problem.X_train, problem.y_train, overwrite=True,
                command="ultrafs demo")
    write_store(test_path, problem.X_test, problem.y_test, overwrite=True,
                command="ultrafs demo")
    run = {name: values[name] for name in ("block_size", "scheduler", "workers",
                                           "connect_timeout", "worker_timeout")
           if values.get(name) is not None}
    model = run_method(FGM, open_store(train_path), params, command="ultrafs demo",
                       progress=progress, **run)
    model_path = os.path.join(directory, "model.json")
    write_json_atomic(model.to_dict(), model_path)
    metrics = model.evaluate_store(open_store(test_path))
    found = len(set(model.features) & set(int(j) for j in problem.relevant))
    seconds = {phase: round(sum(h[f"{phase}_seconds"] for h in model.history), 3)
               for phase in ("score", "materialize", "solve")}
    # the headline figures first; the long list of ids last
    summary = {
        "true_features_recovered": found,
        "n_relevant": n_relevant,
        "n_selected": len(model.features),
        "test_accuracy": metrics["accuracy"],
        "test_auc": metrics["auc"],
        "seconds": seconds,
        "model": model_path,
        "objective_per_iteration": [h["objective"] for h in model.history],
        "selected_features": model.features,
    }
    if terminal.stdout_is_terminal():
        click.echo("\n".join([
            f"recovered {found} of the {n_relevant} relevant features "
            f"({len(model.features)} selected, from {n_features:,} columns)",
            f"test accuracy {metrics['accuracy']:.4f}, AUC {metrics['auc']:.4f} "
            f"on {metrics['n_samples']:,} held-out rows",
            f"objective {model.history[-1]['objective']:.6g} after "
            f"{len(model.history)} iterations; stopped because "
            f"{plain_stop_reason(model.stop_reason or '')}",
            f"time: scoring {format_seconds(seconds['score'])}, solving "
            f"{format_seconds(seconds['solve'])}",
            f"model: {model_path} (the selected feature ids are in it)"]))
    else:
        click.echo(json.dumps(summary))
