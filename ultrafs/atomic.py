"""Atomic writes: every output appears complete under its name, or not at all.

One policy for every file and folder ultrafs writes (model files, CLI
outputs, checkpoints, reports, stores):

1. the content is written under a temporary sibling name (same folder, so
   the final rename never crosses file systems), starting with ``.tmp-``;
2. files are flushed and ``fsync``-ed before the rename, so a crash after
   the rename cannot leave a complete name over incomplete bytes;
3. ``os.replace`` publishes it in one step, then the parent folder is
   ``fsync``-ed (where the platform allows) so the new name itself is
   durable;
4. on any failure (including KeyboardInterrupt or a full disk) the
   temporary is removed and the old content, if any, is untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile

__all__ = ["fsync_directory", "atomic_file", "write_text_atomic",
           "write_bytes_atomic", "write_json_atomic", "publish_path"]


def fsync_directory(directory) -> None:
    """Flush a folder's entries to disk (no-op where folders cannot be opened)."""
    try:
        fd = os.open(os.fspath(directory), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(path) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def publish_path(tmp, final) -> None:
    """Rename a finished file or folder ``tmp`` to ``final`` and sync the folder.

    A file replaces a file in one step; otherwise (a folder on either side)
    whatever is at ``final`` is moved aside first, put back if the rename
    fails, and removed only once ``tmp`` is in place.
    """
    tmp, final = os.fspath(tmp), os.fspath(final)
    old = None
    if os.path.lexists(final) and (os.path.isdir(tmp) or (
            os.path.isdir(final) and not os.path.islink(final))):
        old = tempfile.mkdtemp(prefix=".tmp-old-", dir=os.path.dirname(final) or ".")
        os.rmdir(old)
        os.replace(final, old)
    try:
        os.replace(tmp, final)
    except BaseException:
        if old is not None:
            os.replace(old, final)
        raise
    fsync_directory(os.path.dirname(os.path.abspath(final)))
    if old is not None:
        _remove(old)


@contextlib.contextmanager
def atomic_file(path, mode="w", **open_kwargs):
    """Open a temporary sibling of ``path``; publish it on a clean exit.

    Parameters
    ----------
    path : path-like
        Final name.
    mode : {"w", "wb"}
    **open_kwargs
        Passed to :func:`open` (e.g. ``encoding``).

    Yields
    ------
    file object
        Written, flushed and fsync-ed before the rename.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, mode, **open_kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        publish_path(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def write_bytes_atomic(data: bytes, path) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_file(path, "wb") as fh:
        fh.write(data)


def write_text_atomic(text: str, path) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_file(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def write_json_atomic(obj, path) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    write_text_atomic(json.dumps(obj, indent=1) + "\n", path)
