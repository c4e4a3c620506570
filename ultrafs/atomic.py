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
4. on any failure (including KeyboardInterrupt, SIGTERM through
   :mod:`ultrafs.signals`, or a full disk) the temporary is removed and the
   old content, if any, is untouched; an ``OSError`` names the final path,
   never the temporary one;
5. files get the permissions of an ordinary ``open``: ``0o666`` less the
   umask (``tempfile.mkstemp`` alone would leave them ``0o600``);
6. a file never replaces a directory (``IsADirectoryError``): a mistyped
   ``--out DIR`` must not delete a folder.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile

__all__ = ["fsync_directory", "atomic_file", "write_text_atomic",
           "write_bytes_atomic", "write_json_atomic", "publish_path",
           "current_umask", "file_mode", "rename_os_error"]


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """Permissions of a new file under the current umask (``0o666 & ~umask``)."""
    return 0o666 & ~current_umask()


def rename_os_error(exc: OSError, path, temporaries=()) -> OSError:
    """The same error naming ``path`` when it named nothing or a temporary.

    Parameters
    ----------
    exc : OSError
    path : path-like
        The name the user asked for.
    temporaries : sequence of path-like
        Names that stand for ``path`` (the temporary file or folder); an
        error naming one of them or anything below one of them is renamed.

    Returns
    -------
    OSError
        ``exc`` itself when it names another file, else a new error of the
        same class (errno and message kept) whose ``filename`` is ``path``.
    """
    name = exc.filename
    if name is not None:
        name = os.path.abspath(os.fsdecode(name))
        for tmp in temporaries:
            tmp = os.path.abspath(os.fspath(tmp))
            if name == tmp or name.startswith(tmp + os.sep):
                name = None
                break
        else:
            return exc
    if exc.errno is None:
        return exc
    renamed = OSError(exc.errno, exc.strerror or os.strerror(exc.errno), os.fspath(path))
    return renamed


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

    A file replaces a file in one step and never a directory
    (``IsADirectoryError``); a folder replaces whatever is at ``final``,
    which is moved aside first, put back if the rename fails, and removed
    only once ``tmp`` is in place.
    """
    tmp, final = os.fspath(tmp), os.fspath(final)
    if not os.path.isdir(tmp) and os.path.isdir(final) and not os.path.islink(final):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), final)
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

    Raises
    ------
    IsADirectoryError
        If ``path`` is a directory (checked first and again at the rename).
    OSError
        Any failure to create, write or publish; it names ``path``, not the
        temporary, and nothing is left behind.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    except OSError as exc:
        raise rename_os_error(exc, path, [exc.filename or path]) from None
    try:
        try:
            with os.fdopen(fd, mode, **open_kwargs) as fh:
                os.fchmod(fh.fileno(), file_mode())
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            publish_path(tmp, path)
        except OSError as exc:
            renamed = rename_os_error(exc, path, [tmp])
            if renamed is exc:
                raise
            raise renamed from None
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
