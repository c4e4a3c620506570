"""Progress of the long phases of every method and command, on stderr.

One vocabulary for all of them: a *phase* has a name ("choosing C",
"sklr fista", "path", "reading a9a.bz2"), optionally a count of steps
(``total``) and a status that changes as it runs (the held-out score so
far, a certificate's value against its tolerance).

On a terminal a phase is a tqdm bar, drawn when the phase opens (so a
person sees something at once), redrawn at most every ``mininterval``
seconds, with a rate and an ETA where the steps are counted.  tqdm was
chosen over rich (and over more hand-written terminal code) because it is
small, has no dependencies of its own, is what Dask, scikit-learn users
and most of scientific Python already know, writes to any stream and
copes with nested bars and narrow terminals.

When stderr is not a terminal (a log file, a pipe, CI) a phase writes one
plain line when it ends: ``choosing C: 5/5 points in 12.3 s; best C 0.316
(held-out accuracy 0.871)``.  Nothing else, so logs stay readable.

Whether phases show at all is decided once per run by the face (the CLI's
``--progress/--no-progress``, an estimator's ``verbose``, ``progress=`` of
the Python API) through :func:`showing`; code deep in a method opens a
:func:`phase` without knowing who asked, and the phase is silent unless
a caller turned progress on.  Phases open and close in the thread that
runs the method (Dask workers never draw).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

__all__ = ["Phase", "phase", "showing", "is_showing", "format_seconds", "is_terminal", "say"]

_state = threading.local()


def _shown() -> bool:
    return getattr(_state, "show", False)


def is_showing() -> bool:
    """Whether the current run asked for progress (see :func:`showing`)."""
    return _shown()


@contextlib.contextmanager
def showing(show=True):
    """Turn the phases opened inside on (``show=True``) or off.

    Parameters
    ----------
    show : bool
        True: phases draw on stderr; False: they are silent.
    """
    saved = _shown()
    _state.show = bool(show)
    try:
        yield
    finally:
        _state.show = saved


def format_seconds(seconds) -> str:
    """``7.0 s``, ``45 s``, ``2 min 05 s``, ``1 h 03 min``: a duration for people."""
    seconds = max(float(seconds), 0.0)
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def is_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal (a closed or odd stream is not)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Phase:
    """One phase of a run: a bar on a terminal, one line at its end otherwise.

    Parameters
    ----------
    name : str
        What runs, in plain words (``"choosing C"``).
    total : int, optional
        Number of steps, when countable (gives the bar and the ETA).
    unit : str
        Name of a step, singular (``"point"``, ``"iteration"``, ``"λ"``).
    show : bool, optional
        Draw; default: whether the run asked for progress (:func:`showing`).
    stream : file, optional
        Where to draw; default ``sys.stderr`` (read when the phase opens).
    mininterval : float
        Seconds between two redraws on a terminal.
    transient : bool
        A step inside a phase (the tiles of one product, the blocks of one
        pass among many): on a terminal its bar is drawn only once it has
        run ``delay`` seconds and is erased when it ends; when piped it
        writes nothing (its phase's line says what it did).
    delay : float, optional
        Seconds before a bar is first drawn (default 0; 1 for a transient
        phase, so that quick steps never flicker).
    unit_scale : bool
        Counts on a bar with k/M/G prefixes (rows, bytes).

    Notes
    -----
    Use as a context manager, or call :meth:`close`.  A phase that is not
    shown costs one attribute check per call.  Phases nest: on a terminal
    an inner bar is drawn below the outer one (tqdm picks the line) and
    erased when it ends; piped, an inner phase's line comes before its
    outer phase's.
    """

    def __init__(self, name, total=None, unit="step", *, show=None, stream=None,
                 mininterval=0.5, transient=False, delay=None, unit_scale=False):
        self.name = str(name)
        self.total = None if total is None else int(total)
        self.unit = unit
        self.show = _shown() if show is None else bool(show)
        self.stream = sys.stderr if stream is None else stream
        self.count = 0
        self.status = ""
        self.started = time.perf_counter()
        self.closed = False
        self.transient = bool(transient)
        self._bar = None
        if self.show and is_terminal(self.stream):
            from tqdm import tqdm

            delay = (1.0 if self.transient else 0.0) if delay is None else float(delay)
            # nothing counted: the name, the time and the status only
            shape = ({"bar_format": "{desc}: {elapsed}{postfix}"}
                     if self.total is None and unit == "step" else {})
            # leave=None: an outer bar (line 0) stays, a nested one is erased;
            # tqdm draws the bar at once when there is no delay
            self._bar = tqdm(total=self.total, desc=self.name, unit=f" {unit}",
                             file=self.stream, mininterval=mininterval, dynamic_ncols=True,
                             leave=False if self.transient else None, smoothing=0.1,
                             delay=delay, unit_scale=bool(unit_scale), **shape)

    def update(self, n=1, status=None) -> None:
        """``n`` more steps done; ``status`` (str) replaces the status text."""
        self.count += int(n)
        if status is not None:
            self.status = str(status)
        if self._bar is not None:
            if status is not None:
                self._bar.set_postfix_str(self.status, refresh=False)
            self._bar.update(int(n))

    def set_status(self, status) -> None:
        """Replace the status text (the held-out score so far, a gap...)."""
        self.status = str(status)
        if self._bar is not None:
            self._bar.set_postfix_str(self.status)

    def set_total(self, total) -> None:
        """The number of steps, once known (a path extended, a grid widened)."""
        self.total = None if total is None else int(total)
        if self._bar is not None:
            self._bar.total = self.total
            self._bar.refresh()

    def write(self, text) -> None:
        """A line of its own above the bar (or in the log), when shown."""
        if not self.show:
            return
        if self._bar is not None:
            self._bar.write(str(text), file=self.stream)
        else:
            print(str(text), file=self.stream, flush=True)

    def line(self) -> str:
        """The one line a piped phase writes when it ends."""
        seconds = format_seconds(time.perf_counter() - self.started)
        if self.total is None and self.count == 0:      # nothing counted
            text = f"{self.name}: {seconds}"
        else:
            count = f"{self.count:,}" + (f"/{self.total:,}" if self.total is not None else "")
            plural = "" if self.count == 1 and self.total in (None, 1) else "s"
            text = f"{self.name}: {count} {self.unit}{plural} in {seconds}"
        return text + (f"; {self.status}" if self.status else "")

    def close(self) -> None:
        """End the phase: close the bar, or write the phase's line."""
        if self.closed:
            return
        self.closed = True
        if self._bar is not None:
            self._bar.close()
        elif self.show and not self.transient:
            print(self.line(), file=self.stream, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def say(text, stream=None) -> None:
    """One line on stderr (``stream``) of its own: on a terminal above the bars
    being drawn (which are redrawn below it), elsewhere a plain line.

    For lines a face prints while phases may be open (an iteration's
    summary, a notice), so that they never break a bar.
    """
    stream = sys.stderr if stream is None else stream
    if is_terminal(stream):
        from tqdm import tqdm

        tqdm.write(str(text), file=stream)
        stream.flush()
    else:
        print(str(text), file=stream, flush=True)


def phase(name, total=None, unit="step", **options) -> Phase:
    """A :class:`Phase` (a context manager); silent unless progress is shown."""
    return Phase(name, total, unit, **options)
