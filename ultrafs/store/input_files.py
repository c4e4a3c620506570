"""Files a user names to read: regular files only, refused before reading.

Opening a FIFO for reading blocks until a writer appears (for ever, when
none does), a character device such as ``/dev/zero`` or ``/dev/urandom``
never ends, a socket cannot be opened at all.  Every file a user names to
be read (``ingest`` INPUT and ``--feature-names``, ``--groups`` and
``--tree`` files, a LIBSVM file given as ``--data``) goes through
:func:`open_regular` (or :func:`check_regular` where a library opens the
path itself): anything other than a regular file (symbolic links to one
are followed) is one :class:`~ultrafs.errors.InputFormatError` naming the
path and what it is, before a byte is read.

:func:`open_regular` opens with ``O_NONBLOCK`` and checks the open
descriptor (``fstat``), so a FIFO put in the file's place between a check
and the open cannot block either.
"""

from __future__ import annotations

import os
import stat

from ultrafs.errors import InputFormatError

__all__ = ["check_regular", "open_regular", "kind_of_file"]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def kind_of_file(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words ("a FIFO (named pipe)")."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a regular file"


def _refuse(path, mode):
    return InputFormatError(f"{os.fspath(path)}: is {kind_of_file(mode)}, not a regular "
                            "file (refused before reading: it could block or never end)")


def check_regular(path, what="file") -> os.stat_result:
    """``os.stat(path)`` of a regular file; InputFormatError otherwise.

    Parameters
    ----------
    path : str or os.PathLike
    what : str
        The file's role in messages: ``no such {what}`` ("groups file").

    Returns
    -------
    info : os.stat_result

    Raises
    ------
    InputFormatError
        ``path`` is missing, unreadable, a directory, FIFO, socket or device.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputFormatError(f"{os.fspath(path)}: no such {what}") from None
    except OSError as exc:
        raise InputFormatError(f"{os.fspath(path)}: cannot read the {what} "
                               f"({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(path, info.st_mode)
    return info


def open_regular(path, what="file", mode="rb", **kwargs):
    """Open a regular file for reading, never blocking on anything else.

    Parameters
    ----------
    path : str or os.PathLike
    what : str
        The file's role in messages.
    mode : {"rb", "r"}
        Binary or text (``kwargs``: ``encoding``, ``errors`` of :func:`open`).

    Returns
    -------
    file : file object
        Open for reading; the caller closes it.

    Raises
    ------
    InputFormatError
        As :func:`check_regular`.
    """
    if mode not in ("rb", "r"):
        raise ValueError(f"open_regular reads only: mode {mode!r}")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise InputFormatError(f"{os.fspath(path)}: no such {what}") from None
    except OSError as exc:
        check_regular(path, what)       # a socket: named as such
        raise InputFormatError(f"{os.fspath(path)}: cannot read the {what} "
                               f"({exc.strerror or type(exc).__name__})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(path, info.st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise
