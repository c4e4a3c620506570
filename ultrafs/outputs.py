"""Output paths checked before any work starts.

A command that writes a file or a folder checks its path first, so that a
mistyped ``--out`` fails at once, with one line naming the user's path,
instead of after a long fit (and never by overwriting one of the
command's own inputs):

- the parent folder exists, is a folder and is writable;
- a file output is not a directory (a folder output may be one only where
  the command replaces or fills folders), nor an existing special file
  (a FIFO, ``/dev/stdout``: the atomic rename would replace it; ``-``
  writes to stdout);
- the path is none of the inputs: the same name after resolving symbolic
  links, ``..`` and relative spellings (``os.path.realpath``), or the same
  file on disk (``os.path.samefile``: hard links, bind mounts), or a
  folder that holds an input (a store folder replaced by a model file).

Every failure is an :class:`ultrafs.errors.OutputPathError`.
"""

from __future__ import annotations

import os

from ultrafs.errors import OutputPathError

__all__ = ["check_output_file", "check_output_dir", "same_path", "inside"]


def same_path(a, b) -> bool:
    """True when ``a`` and ``b`` name the same file or folder.

    Parameters
    ----------
    a, b : path-like

    Returns
    -------
    bool
        Equal real paths, or the same inode where both exist.
    """
    a, b = os.fspath(a), os.fspath(b)
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def inside(path, folder) -> bool:
    """True when ``path`` lies below the folder ``folder`` (symlinks resolved)."""
    path = os.path.realpath(os.fspath(path))
    folder = os.path.realpath(os.fspath(folder))
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def _check_parent(path, option):
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(parent):
        raise OutputPathError(f"{option} {path}: the folder {parent} does not exist")
    if not os.path.isdir(parent):
        raise OutputPathError(f"{option} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {path}: the folder {parent} is not writable")


def _check_not_input(path, option, inputs):
    for label, source in inputs:
        if source is None or source == "-":
            continue
        if same_path(path, source):
            raise OutputPathError(
                f"{option} {path}: is the {label} {source}; refusing to overwrite an input")
        if os.path.isdir(path) and inside(source, path):
            raise OutputPathError(
                f"{option} {path}: holds the {label} {source}; refusing to replace it")


def check_output_file(path, option="--out", inputs=()):
    """Validate the path of an output file before the work starts.

    Parameters
    ----------
    path : path-like or "-"
        The output; ``"-"`` (stdout) and None are accepted as they are.
    option : str
        How the user named it (``--out``, ``OUTPUT``): the message starts
        with it.
    inputs : sequence of (label, path or None)
        The command's inputs, e.g. ``[("--data store", data_path)]``.

    Raises
    ------
    OutputPathError
        Missing, non-folder or read-only parent; ``path`` is a directory or
        one of ``inputs`` (or a folder holding one).
    """
    if path is None or path == "-":
        return
    path = os.fspath(path)
    if os.path.isdir(path):
        _check_not_input(path, option, inputs)
        raise OutputPathError(f"{option} {path}: is a directory; expected a file name")
    _check_parent(path, option)
    _check_not_input(path, option, inputs)
    if os.path.lexists(path) and not os.path.isfile(path):
        raise OutputPathError(f"{option} {path}: exists and is not a regular file "
                              "(write to - for stdout)")


def check_output_dir(path, option, inputs=()):
    """Validate an output folder (a store, a checkpoint folder) before work.

    Parameters
    ----------
    path : path-like
        The folder; it may exist (whether it may be replaced is the
        writer's decision).
    option : str
        How the user named it (``OUTPUT``, ``--checkpoint``).
    inputs : sequence of (label, path or None)

    Raises
    ------
    OutputPathError
        ``path`` exists and is not a folder, its parent is missing, not a
        folder or read-only (an existing folder must itself be writable),
        or it is one of ``inputs`` or holds one.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        _check_not_input(path, option, inputs)
        if not os.access(path, os.W_OK | os.X_OK):
            raise OutputPathError(f"{option} {path}: the folder is not writable")
        return
    _check_parent(path, option)
    _check_not_input(path, option, inputs)
