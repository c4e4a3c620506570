"""An exclusive lock on a folder, for checkpoint folders.

Two runs writing the same checkpoint folder would interleave their states.
The lock is ``fcntl.flock`` on the file ``.ultrafs.lock`` inside the folder,
taken without waiting: a second run fails at once with one line.  The
kernel releases a ``flock`` when its process ends, however it ends, so a
lock left by a killed run (SIGKILL, OOM killer, power loss of a client)
never blocks the next run; the empty lock file itself may stay.

The command line takes this lock for ``select --checkpoint``; the Python
API (``ultrafs.api.select(checkpoint=...)``) does not, callers that share
folders between processes take it themselves with :func:`folder_lock`.
"""

from __future__ import annotations

import contextlib
import errno
import os

from ultrafs.errors import UltraFSError

__all__ = ["LOCK_NAME", "FolderLockedError", "folder_lock"]

#: name of the lock file inside a locked folder
LOCK_NAME = ".ultrafs.lock"


class FolderLockedError(UltraFSError):
    """Another process holds the folder's lock."""


@contextlib.contextmanager
def folder_lock(directory, what="folder"):
    """Hold an exclusive, non-blocking lock on ``directory`` (created if missing).

    Parameters
    ----------
    directory : path-like
    what : str
        How the message names the folder (e.g. ``"checkpoint folder"``).

    Yields
    ------
    str
        The lock file's path.  A folder created here is removed again on
        exit when the run left nothing but the lock file in it.

    Raises
    ------
    FolderLockedError
        If another process (or another open of the same file in this
        process) holds the lock.
    OSError
        If the folder or the lock file cannot be created.
    """
    import fcntl

    directory = os.fspath(directory)
    created = not os.path.isdir(directory)
    os.makedirs(directory, exist_ok=True)
    lock_path = os.path.join(directory, LOCK_NAME)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise FolderLockedError(
                    f"{what} {directory} is in use by another ultrafs run "
                    "(lock held); wait for it or use another folder") from None
            raise
        try:
            yield lock_path
        finally:
            if created:
                _remove_if_only_lock(directory, lock_path)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _remove_if_only_lock(directory, lock_path):
    """Remove a folder this lock created when the run left nothing else in it.

    Called while the lock is held, so no other run can be using the file.
    """
    try:
        if os.listdir(directory) == [LOCK_NAME]:
            os.unlink(lock_path)
            os.rmdir(directory)
    except OSError:
        pass
