"""Errors of the command line: one line on stderr, the exit status.

Errors raised on purpose by ultrafs become one line on stderr and exit
status 1 (usage errors exit with status 2, click's own); SIGTERM exits
with status 143 after the cleanup.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import warnings

import click

from ultrafs.errors import UltraFSError, UltraFSWarning


#: library wording -> command-line wording, applied to every error line
_CLI_WORDING = (
    (re.compile(r"\boverwrite=True\b"), "--overwrite"),
    (re.compile(r"\bnp\.(?:float|int|uint|bool)\w*\(([^()]*)\)"), r"\1"),
)


def cli_message(text):
    """The first line of an error message, in the command line's words."""
    line = str(text).splitlines()[0] if str(text) else type(text).__name__
    for pattern, replacement in _CLI_WORDING:
        line = pattern.sub(replacement, line)
    return line


def os_error_line(exc):
    """One line for an OSError: the reason and the path it names."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is None:
        return reason
    where = os.fsdecode(exc.filename)
    if exc.filename2 is not None:
        where += f" -> {os.fsdecode(exc.filename2)}"
    return f"{reason}: {where}"


def raised_by(exc, kind) -> bool:
    """Whether ``exc`` or any exception it was raised from or while handling
    (its ``__cause__`` / ``__context__`` chain, followed to the end) is a
    ``kind``."""
    seen = set()
    pending = [exc]
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        if isinstance(error, kind):
            return True
        seen.add(id(error))
        pending += [error.__cause__, error.__context__]
    return False


def one_line_errors(func):
    """Turn ultrafs errors, OS errors and SIGTERM into one line on stderr.

    SIGTERM raises :class:`ultrafs.signals.Terminated` (see
    :mod:`ultrafs.signals`), so the cleanup that follows Ctrl-C runs too;
    the command then exits with status 143.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from ultrafs.signals import (SIGTERM_EXIT_STATUS, Terminated,
                                     terminate_as_interrupt)

        try:
            with terminate_as_interrupt(), \
                    warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UltraFSWarning)
                result = func(*args, **kwargs)
            for warning in caught:
                if issubclass(warning.category, UltraFSWarning):
                    click.echo(f"Warning: {warning.message}", err=True)
                else:
                    warnings.warn_explicit(warning.message, warning.category,
                                           warning.filename, warning.lineno)
            return result
        except (Terminated, SystemError) as exc:
            # SIGTERM raised while a compiled kernel ran in the main thread
            # surfaces as a SystemError ("returned a result with an exception
            # set") whose cause or context is the Terminated, or another
            # such SystemError (numba loading a kernel from its cache)
            if not raised_by(exc, Terminated):
                if raised_by(exc, KeyboardInterrupt):
                    # Ctrl-C inside a kernel: click's own "Aborted!", as
                    # for Ctrl-C anywhere else
                    raise KeyboardInterrupt from None
                raise
            click.echo("Error: terminated by SIGTERM; temporary files removed, "
                       "no output written", err=True)
            sys.exit(SIGTERM_EXIT_STATUS)
        except UltraFSError as exc:
            raise click.ClickException(cli_message(exc)) from None
        except OSError as exc:
            raise click.ClickException(os_error_line(exc)) from None
        except MemoryError as exc:
            raise click.ClickException(
                "out of memory" + (f" ({cli_message(exc)})" if str(exc) else "")) from None
        except (OverflowError, FloatingPointError) as exc:
            # a number typed within its option's range can still overflow on
            # some data (--poly 2 --gamma 1e300): one line, not a traceback
            reason = exc.args[-1] if exc.args and isinstance(exc.args[-1], str) else exc
            raise click.ClickException(
                f"numerical overflow ({cli_message(reason)}): a number given (a scale such "
                "as --gamma, --C) is too large for this data; use a smaller one") from None
        except ValueError as exc:
            if type(exc).__name__ != "LinAlgError":
                raise
            # numpy.linalg's singular systems (GSR-FS with --eps 1e-300)
            raise click.ClickException(
                f"numerical failure: {cli_message(exc)} (a tolerance or regularization "
                "such as --eps or --lambda too small for this data?)") from None

    return wrapper
