"""What a person sees on the terminal while a command runs: whether
stdout / stderr are terminals, the first phase (loading the engine) and the
ingest's progress line.  Durations are :func:`ultrafs.progress.format_seconds`
(re-exported here for the faces)."""

from __future__ import annotations

import contextlib
import os
import sys
import time

from ultrafs.progress import format_seconds, is_terminal, phase


def progress_enabled(flag):
    """``--progress/--no-progress``, or by default whether stderr is a terminal."""
    return flag if flag is not None else sys.stderr.isatty()


#: the modules a run loads before its first pass (numba, dask, scipy: one to
#: several seconds), loaded inside a first phase so that a terminal shows
#: something at once
ENGINE_MODULES = ("ultrafs.kernels", "ultrafs.store", "ultrafs.scoring.runner",
                  "ultrafs.solvers", "ultrafs.features", "ultrafs.api")


def load_engine(show, modules=ENGINE_MODULES):
    """Import the engine (``modules``) inside a phase ("loading ultrafs"), drawn at once.

    Imports take 1 to 4 s (numba, dask, scipy) before a command's first
    pass; a command calls this first, after checking its options, so that a
    person at a terminal sees it start.  ``show``: draw (a bar on a
    terminal, one line when piped); False: import silently.
    """
    import importlib

    with phase("loading ultrafs (numba, dask, scipy)", show=bool(show)):
        for name in modules:
            importlib.import_module(name)


def stdout_is_terminal():
    """Whether stdout is a terminal (a person reads it, no program)."""
    return is_terminal(sys.stdout)


def stderr_is_terminal():
    """Whether stderr is a terminal (progress draws bars there)."""
    return is_terminal(sys.stderr)


def _megabytes(n):
    return f"{n / 1e6:,.1f} MB"


class IngestProgress:
    """One line on stderr while a LIBSVM file is read: bytes, rows, rate, ETA.

    Called by :func:`ultrafs.store.writers.libsvm.ingest_libsvm` with the
    rows parsed so far after every block of text.  The bytes read are the
    reader's offset in the (possibly compressed) file, read from
    ``/proc/self/fdinfo`` (Linux); elsewhere the line shows rows and their
    rate only.  On a terminal the line is redrawn (``\r``) at most every
    ``min_interval`` seconds; elsewhere (``terminal=False``, a log) only
    the last line is written, once, when the ingest ends.
    """

    def __init__(self, path, min_interval=0.25, stream=None, terminal=None):
        self.path = os.fspath(path)
        self.name = os.path.basename(self.path)
        self.real = os.path.realpath(self.path)
        try:
            self.size = os.path.getsize(self.path)
        except OSError:
            self.size = 0
        self.stream = stream if stream is not None else sys.stderr
        self.min_interval = min_interval
        self.started = time.perf_counter()
        self.drawn = 0.0
        self.rows = 0
        self.fd = None
        self.shown = False
        self.terminal = is_terminal(self.stream) if terminal is None else bool(terminal)

    def _position(self):
        """The reader's offset in the file, or None where it cannot be seen."""
        try:
            if self.fd is None or os.readlink(f"/proc/self/fd/{self.fd}") != self.real:
                self.fd = None
                for name in os.listdir("/proc/self/fd"):
                    try:
                        if os.readlink(f"/proc/self/fd/{name}") == self.real:
                            self.fd = name
                            break
                    except OSError:
                        continue
            if self.fd is None:
                # rows were parsed, so the reader opened the file: it has
                # read it all and closed it
                return self.size if os.path.isdir("/proc/self/fd") else None
            with open(f"/proc/self/fdinfo/{self.fd}") as info:
                for line in info:
                    if line.startswith("pos:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            return None
        return None

    def line(self, now, position, final=False):
        elapsed = max(now - self.started, 1e-9)
        if final:                     # the shape of a phase's line (ultrafs.progress)
            size = f"; {_megabytes(self.size)}" if self.size else ""
            return f"read {self.name}: {self.rows:,} rows in {format_seconds(elapsed)}{size}"
        text = f"reading {self.name}:"
        if position is not None and self.size:
            position = min(position, self.size)
            fraction = position / self.size
            text += (f" {_megabytes(position)} of {_megabytes(self.size)} "
                     f"({100 * fraction:.0f}%),")
        text += f" {self.rows:,} rows, {self.rows / elapsed:,.0f} rows/s"
        if position is not None and self.size:
            text += f", {position / elapsed / 1e6:,.1f} MB/s"
            if position >= self.size:
                text += "; writing the store"
            elif position > 0:
                text += f", ETA {format_seconds((self.size - position) * elapsed / position)}"
        return text

    def __call__(self, rows):
        self.rows = int(rows)
        if not self.terminal:                 # a log: the last line only
            self.shown = self.rows > 0
            return
        now = time.perf_counter()
        if now - self.drawn < self.min_interval:
            return
        self.drawn = now
        self.shown = True
        self.stream.write("\r" + self.line(now, self._position()) + "   ")
        self.stream.flush()

    def finish(self):
        """Show the last count and end the line (after the ingest, or before a message)."""
        if self.shown:
            line = self.line(time.perf_counter(), None, final=True)
            self.stream.write(("\r" + line + " " * 40 if self.terminal else line) + "\n")
            self.stream.flush()
            self.shown = False


@contextlib.contextmanager
def ingest_progress(path, show):
    """An :class:`IngestProgress` for ``path`` when ``show``, else None."""
    reporter = IngestProgress(path) if show else None
    try:
        yield reporter
    finally:
        if reporter is not None:
            reporter.finish()
