"""The Dask scheduler of a run: local names, or a ``tcp://`` address
connected within a bound, with dask.distributed's log lines silenced."""

from __future__ import annotations

import contextlib

import click

from ultrafs.cli.errors import cli_message


#: how long a scheduler address may take to answer (--connect-timeout)
CONNECT_TIMEOUT_S = 10.0


def check_scheduler_answers(spec, timeout):
    """Connect to ``spec`` and read dask's handshake, within ``timeout``
    seconds (:func:`ultrafs.scoring.scheduling.probe_scheduler`); one line
    when it does not."""
    from ultrafs.errors import ClusterError
    from ultrafs.scoring.scheduling import probe_scheduler

    try:
        probe_scheduler(spec, timeout, "--connect-timeout", wording=cli_message)
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None


@contextlib.contextmanager
def open_scheduler(spec, connect_timeout=CONNECT_TIMEOUT_S):
    """Yield a scheduler for ``dask.compute``; connects to addresses.

    Local names are passed through; an address gets a
    ``dask.distributed.Client`` that is closed on exit.  An address that
    does not complete dask's handshake within ``connect_timeout`` seconds
    is a one-line error.
    """
    if spec is None or spec in ("threads", "processes", "synchronous"):
        yield spec
        return
    from distributed import Client

    check_scheduler_answers(spec, connect_timeout)
    with quiet_distributed_logs():
        try:
            client = Client(spec, timeout=f"{connect_timeout}s")
        except (OSError, ValueError, TimeoutError) as exc:
            raise click.ClickException(
                f"cannot reach the dask scheduler at {spec} ({cli_message(exc)})") from None
        with client:
            yield client


@contextlib.contextmanager
def quiet_distributed_logs():
    """Silence dask.distributed's log lines (a lost scheduler is our one line)."""
    import logging

    names = ["distributed"] + [name for name in logging.root.manager.loggerDict
                               if name.startswith("distributed.")]
    saved = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def scheduler_for_run(scheduler, connect_timeout=None, worker_timeout=None):
    """The Dask scheduler of ``--scheduler``, with the run's timeouts set."""
    from ultrafs.scoring.scheduling import WORKER_TIMEOUT_KEY

    if connect_timeout is None:
        connect_timeout = CONNECT_TIMEOUT_S
    timeouts = contextlib.nullcontext()
    if worker_timeout is not None:
        import dask

        timeouts = dask.config.set({WORKER_TIMEOUT_KEY: worker_timeout})
    with timeouts, open_scheduler(scheduler, connect_timeout) as dask_scheduler:
        yield dask_scheduler
