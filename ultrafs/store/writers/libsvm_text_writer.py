"""Writing LIBSVM text: binary rows out as ``label index:1 ...`` lines.

:class:`LibsvmTextWriter` writes the kddb-like generator's
``--libsvm-out``; :func:`check_text_output` validates its path first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ultrafs.errors import OutputPathError, StoreExistsError
from ultrafs.kernels import libsvm_parse as kp

__all__ = ["LibsvmTextWriter", "check_text_output"]

def check_text_output(path, overwrite: bool, others=()) -> Path:
    """Validate the path of a LIBSVM text output before any work is done.

    Parameters
    ----------
    path : str or os.PathLike
    overwrite : bool
        Whether an existing regular file may be replaced.
    others : sequence of (label, path or None)
        The run's other inputs and outputs (stores...): ``path`` must name
        none of them, nor lie inside one.

    Returns
    -------
    path : Path
        The absolute path.

    Raises
    ------
    OutputPathError
        ``path`` is a directory, exists and is not a regular file, is one
        of ``others`` or lies inside one, or its folder is missing.
    StoreExistsError
        ``path`` exists and ``overwrite`` is False.
    """
    import os

    path = Path(os.path.abspath(os.fspath(path)))
    real = os.path.realpath(path)
    for label, other in others:
        if other is None:
            continue
        other_real = os.path.realpath(os.fspath(other))
        if real == other_real or real.startswith(other_real.rstrip(os.sep) + os.sep):
            raise OutputPathError(f"{path}: is the {label} {other}; "
                                  "the LIBSVM text needs a path of its own")
    if path.is_dir():
        raise OutputPathError(f"{path}: is a directory; expected a file name")
    if not path.parent.is_dir():
        raise OutputPathError(f"{path}: the folder {path.parent} does not exist")
    if os.path.lexists(path):
        if not path.is_file():
            raise OutputPathError(f"{path}: exists and is not a regular file")
        if not overwrite:
            raise StoreExistsError(f"{path}: already exists (use overwrite=True to replace it)")
    return path


class LibsvmTextWriter:
    """Stream binary rows into a LIBSVM text file that appears only when complete.

    Rows are written ``label index:1 index:1 ...`` with integer labels and
    1-based indices (``index = column + 1``, what :func:`ingest_libsvm`
    reads by default), through :func:`ultrafs.atomic.atomic_file`: a
    temporary sibling, renamed by :meth:`close`; :meth:`abort` (or an
    exception inside a ``with`` block) removes it.

    Parameters
    ----------
    path : str or os.PathLike
        Final name (checked by :func:`check_text_output` first).
    """

    def __init__(self, path):
        from ultrafs.atomic import atomic_file

        self.path = Path(path)
        self.bytes_written = 0
        self._context = atomic_file(self.path, "wb")
        self._file = self._context.__enter__()
        self._open = True

    def write_rows(self, labels, indptr, columns) -> None:
        """Append rows: ``labels`` (integers), CSR ``indptr`` (from 0) and column numbers."""
        text = kp.format_binary_rows(np.asarray(labels, dtype=np.int64),
                                     np.asarray(indptr, dtype=np.int64), columns, 1)
        self._file.write(memoryview(text))
        self.bytes_written += len(text)

    def close(self) -> Path:
        """Flush, sync and publish the file under its name."""
        if self._open:
            self._open = False
            self._context.__exit__(None, None, None)
        return self.path

    def abort(self) -> None:
        """Remove the temporary file (idempotent)."""
        if self._open:
            self._open = False
            error = RuntimeError("LIBSVM text aborted")
            try:
                self._context.__exit__(RuntimeError, error, None)
            except RuntimeError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        else:
            self.close()
        return False
