"""Run a command with its stderr on a pseudo-terminal and record when each
piece of stderr arrived (what a person at a terminal sees, and when).

Standard library only (``os.openpty``, ``subprocess``, ``select``): stdout
stays a pipe (the model or JSON a command prints), stderr is the slave side
of a pty, so ``sys.stderr.isatty()`` is true in the child and progress
draws as on a terminal (tqdm bars, ``\\r`` redraws).  The window is given a
size (``columns`` x 24) so that bars have a width.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time

__all__ = ["PtyRun", "run_on_pty", "run_piped", "ultrafs_argv"]


@dataclasses.dataclass
class PtyRun:
    """What :func:`run_on_pty` saw.

    Attributes
    ----------
    returncode : int
    stdout : str
    chunks : list of (float, bytes)
        Each read of the pty's master side: seconds since the start, bytes.
    timed_out : bool
        The command was killed after ``timeout`` seconds.
    """

    returncode: int
    stdout: str
    chunks: list
    timed_out: bool = False

    @property
    def stderr(self) -> str:
        """All of stderr as text (the pty turns ``\\n`` into ``\\r\\n``)."""
        return b"".join(data for _, data in self.chunks).decode("utf-8", "replace")

    @property
    def first_stderr_seconds(self):
        """Seconds from the start to the first byte on stderr (None: none came)."""
        return self.chunks[0][0] if self.chunks else None

    def seconds_until(self, text):
        """Seconds from the start until ``text`` had appeared on stderr (None: never)."""
        seen = b""
        needle = text.encode()
        for at, data in self.chunks:
            seen += data
            if needle in seen:
                return at
        return None

    def offset_of(self, text) -> int:
        """Position of ``text``'s first occurrence in :attr:`stderr` (-1: absent)."""
        return self.stderr.find(text)


def _set_window(fd, columns, rows=24):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


def ultrafs_argv(*args):
    """``python -m ultrafs.cli ARGS`` with this interpreter."""
    return [sys.executable, "-m", "ultrafs.cli", *[str(a) for a in args]]


def run_on_pty(argv, *, env=None, cwd=None, timeout=600.0, columns=100) -> PtyRun:
    """Run ``argv`` with stderr on a pseudo-terminal; record each stderr chunk.

    Parameters
    ----------
    argv : list of str
    env : dict, optional
        The child's environment (default: this one).
    cwd : path, optional
    timeout : float
        Seconds before the child is killed (a guard, never an assertion).
    columns : int
        Width of the terminal.

    Returns
    -------
    PtyRun
    """
    master, slave = os.openpty()
    _set_window(slave, columns)
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave, env=env, cwd=cwd, start_new_session=True)
    os.close(slave)
    chunks, out = [], []
    open_fds = {master, proc.stdout.fileno()}
    timed_out = False
    try:
        while open_fds:
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                break
            ready, _, _ = select.select(list(open_fds), [], [], min(left, 1.0))
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:          # EIO: the slave side is closed
                    data = b""
                if not data:
                    open_fds.discard(fd)
                elif fd == master:
                    chunks.append((time.monotonic() - started, data))
                else:
                    out.append(data)
    finally:
        os.close(master)
        proc.stdout.close()
    returncode = proc.wait()
    return PtyRun(returncode, b"".join(out).decode("utf-8", "replace"), chunks, timed_out)


def run_piped(argv, *, env=None, cwd=None, timeout=600.0):
    """Run ``argv`` with stderr a pipe (a log file); ``CompletedProcess`` with text."""
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)
