"""Generate a kddb-like synthetic store with a planted linear + cross model.

A thin command over :func:`ultrafs.datasets.kddb_like.make_kddb_like` (the
generative model is documented there); prints the summary as JSON.

Usage::

    python tools/make_kddb_like.py OUTPUT.zarr --n-samples N --n-features M \\
        [--nnz-per-row 29] [--zipf 1.1] [--seed 0] [--memory-budget MiB] \\
        [--test-out TEST.zarr --n-test K] [--libsvm-out TRAIN.svm] [--threads T]

Example (kddb's column count, one million rows)::

    python tools/make_kddb_like.py kddb_like.zarr --n-samples 1000000 \\
        --n-features 4590807 --test-out kddb_like_test.zarr --n-test 100000

``--libsvm-out`` also writes the training rows as LIBSVM text (1-based
indices: ``ultrafs ingest`` reads it back into the same matrix and labels,
feature ids shifted by one).  The data depend on the seed and
``--chunk-rows``, never on ``--threads`` or ``--memory-budget``.
"""

from __future__ import annotations

import json
import os
import sys

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("output", type=click.Path(file_okay=False, dir_okay=True))
@click.option("--n-samples", type=click.IntRange(min=1), required=True,
              help="Rows of the training store.")
@click.option("--n-features", type=click.IntRange(min=1), required=True,
              help="Columns of both stores.")
@click.option("--nnz-per-row", type=click.FloatRange(min=0, min_open=True), default=29.0,
              show_default=True, help="Mean features per row (Poisson).")
@click.option("--zipf", "zipf_exponent", type=click.FloatRange(min=0), default=1.1,
              show_default=True, help="Zipf exponent of the column frequencies.")
@click.option("--n-linear", type=click.IntRange(min=0), default=20, show_default=True,
              help="Planted single features.")
@click.option("--n-cross", type=click.IntRange(min=0), default=20, show_default=True,
              help="Planted feature pairs.")
@click.option("--min-cooccurrence", type=click.FloatRange(0, 1), default=0.01,
              show_default=True, help="Target share of rows holding both members of a pair.")
@click.option("--noise", type=click.FloatRange(min=0), default=0.1, show_default=True,
              help="Standard deviation of the score noise (weights are 1 to 2).")
@click.option("--shuffle-columns/--no-shuffle-columns", default=True, show_default=True,
              help="Spread frequent columns over the id range (else column r = rank r).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--memory-budget", type=click.FloatRange(min=0.016), default=256.0,
              show_default=True, help="MiB for the external transpose.")
@click.option("--chunk-rows", type=click.IntRange(min=1), default=8192, show_default=True,
              help="Rows per chunk and random stream (changing it changes the data).")
@click.option("--test-out", "test_output", type=click.Path(file_okay=False, dir_okay=True),
              default=None, help="Also write a test store of --n-test rows.")
@click.option("--n-test", type=click.IntRange(min=0), default=0, show_default=True,
              help="Rows of the test store.")
@click.option("--libsvm-out", "libsvm_output", type=click.Path(dir_okay=True),
              default=None,
              help="Also write the training rows as LIBSVM text (1-based indices).")
@click.option("--threads", "n_threads", type=click.IntRange(min=1), default=None,
              help="Threads generating rows [default: the CPU count, at most 8].")
@click.option("--overwrite", is_flag=True,
              help="Replace existing ultrafs stores (and an existing --libsvm-out file).")
def main(output, n_samples, n_features, nnz_per_row, zipf_exponent, n_linear, n_cross,
         min_cooccurrence, noise, shuffle_columns, seed, memory_budget, chunk_rows,
         test_output, n_test, libsvm_output, n_threads, overwrite):
    """Write OUTPUT, a kddb-like synthetic ultrafs store."""
    from ultrafs.errors import UltraFSError
    from ultrafs.datasets.kddb_like import make_kddb_like

    if (test_output is None) != (n_test == 0):
        raise click.UsageError("--test-out and --n-test go together")
    command = " ".join([os.path.basename(sys.executable), "tools/make_kddb_like.py"]
                       + sys.argv[1:])
    try:
        summary = make_kddb_like(
            output, n_samples=n_samples, n_features=n_features, nnz_per_row=nnz_per_row,
            zipf_exponent=zipf_exponent, n_linear=n_linear, n_cross=n_cross,
            min_cooccurrence=min_cooccurrence, noise=noise,
            shuffle_columns=shuffle_columns, seed=seed,
            memory_budget=int(memory_budget * 2 ** 20), chunk_rows=chunk_rows,
            test_output=test_output, n_test=n_test, libsvm_output=libsvm_output,
            n_threads=n_threads, command=command, overwrite=overwrite)
    except UltraFSError as exc:
        message = str(exc).splitlines()[0].replace("overwrite=True", "--overwrite")
        raise click.ClickException(message) from None
    click.echo(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
