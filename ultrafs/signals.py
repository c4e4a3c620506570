"""SIGTERM handled like Ctrl-C, so that interrupted runs clean up.

Batch systems (SLURM, ``timeout``, ``docker stop``, systemd) stop a job with
SIGTERM, whose default action ends the process at once: temporaries such
as an ingest's ``*.runs-*`` spill folder or a store's ``*.tmp-*`` folder
would stay behind.  :func:`terminate_as_interrupt` makes SIGTERM raise
:class:`Terminated`, a ``KeyboardInterrupt``, in the main thread, so every
``try/finally`` and ``except BaseException`` cleanup of the atomic layer
and the writers runs exactly as for Ctrl-C.  The command line exits with
status 143 (128 + SIGTERM) after one line.
"""

from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["Terminated", "terminate_as_interrupt", "SIGTERM_EXIT_STATUS"]

#: exit status after SIGTERM, the shell's convention 128 + 15
SIGTERM_EXIT_STATUS = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM."""


def _raise_terminated(signum, frame):
    # a second SIGTERM must not interrupt the cleanup the first one started
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated(f"received signal {signum}")


@contextlib.contextmanager
def terminate_as_interrupt():
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread.

    Outside the main thread (where Python cannot install handlers) the
    block runs unchanged.  The previous handler is restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
