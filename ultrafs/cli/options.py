"""Options shared by several commands: ``--label``, the block passes'
scheduler options."""

from __future__ import annotations

import click

from ultrafs.cli.types import (MAX_COUNT, MAX_SECONDS, MAX_WORKERS, FiniteFloatRange,
                               SchedulerType)


LABEL_OPTION = click.option(
    "--label", default=None,
    help="Label column of a wide Parquet table (default: 'label').")


def _storage_options(ctx, param, pairs):
    if not pairs:           # parsing --help or a local run imports nothing more
        return None
    from ultrafs.errors import ParameterError
    from ultrafs.store.object_store import parse_storage_options

    try:
        return parse_storage_options(pairs) or None
    except ParameterError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


STORAGE_OPTION = click.option(
    "--storage-option", "storage_options", multiple=True, metavar="KEY=VALUE",
    callback=_storage_options,
    help="fsspec option of the s3:// (or other URL) stores this command reads or "
         "writes, e.g. endpoint_url=http://127.0.0.1:9000 (repeatable; VALUE as JSON "
         "when it parses). Credentials also come from the environment (AWS_*).")


def run_options():
    """Options of the block passes: block size, scheduler and its timeouts."""
    return [
        click.option("--block-size", type=click.IntRange(min=1, max=MAX_COUNT), default=None,
                     help="Columns per scoring task (default: the store's blocks)."),
        click.option("--scheduler", type=SchedulerType(), default="threads",
                     show_default=True, envvar="ULTRAFS_SCHEDULER",
                     help="threads, processes, synchronous or a dask.distributed "
                          "scheduler address tcp://HOST:PORT (env ULTRAFS_SCHEDULER)."),
        click.option("--workers", type=click.IntRange(min=1, max=MAX_WORKERS), default=None,
                     help="Threads/processes of a local scheduler."),
        click.option("--connect-timeout", type=FiniteFloatRange(min=0, min_open=True,
                                                               max=MAX_SECONDS),
                     default=None, envvar="ULTRAFS_CONNECT_TIMEOUT",
                     help="Seconds a tcp:// scheduler may take to answer "
                          "(default 10; env ULTRAFS_CONNECT_TIMEOUT)."),
        click.option("--worker-timeout", type=FiniteFloatRange(min=0, min_open=True,
                                                              max=MAX_SECONDS),
                     default=None, envvar="ULTRAFS_WORKER_TIMEOUT",
                     help="Seconds a tcp:// run waits while its cluster has no "
                          "worker, or its scheduler is unreachable, before it "
                          "fails (default 60; env ULTRAFS_WORKER_TIMEOUT)."),
    ]


def with_options(options):
    """Decorator: the click ``options`` on a command, in their order in ``--help``."""
    def decorate(func):
        for option in reversed(options):
            func = option(func)
        return func
    return decorate
