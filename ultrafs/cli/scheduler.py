"""The Dask scheduler of a run: local names, or a ``tcp://`` address
connected within a bound, with dask.distributed's log lines silenced."""

from __future__ import annotations

import contextlib

import click

from ultrafs.cli.errors import cli_message


#: how long a scheduler address may take to answer (--connect-timeout)
CONNECT_TIMEOUT_S = 10.0


def check_scheduler_answers(spec, timeout):
    """Connect to ``spec`` and read dask's handshake, within ``timeout`` seconds.

    ``distributed.Client(timeout=...)`` bounds the TCP connection but not
    the handshake read that follows it: an address that accepts TCP and
    never answers would hold the client forever.  This probe runs the same
    connection and handshake under one wall-clock bound
    (``asyncio.wait_for`` cancels it), then closes it.
    """
    import asyncio

    from distributed.comm import connect

    async def probe():
        # the outer bound lets connect's own, more precise, error come first
        comm = await asyncio.wait_for(connect(spec, timeout=timeout), timeout + 1.0)
        await comm.close()

    try:
        asyncio.run(probe())
    except (asyncio.TimeoutError, TimeoutError):
        raise click.ClickException(
            f"the dask scheduler at {spec} did not answer within {timeout:g} s "
            "(--connect-timeout)") from None
    except (OSError, ValueError, TypeError) as exc:
        raise click.ClickException(
            f"cannot reach the dask scheduler at {spec} "
            f"({cli_message(exc)})") from None


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
