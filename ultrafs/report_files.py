"""Writing a report's files: the PNG figures and the HTML page, all or none.

Every report (a model file's, :mod:`ultrafs.report`; a path file's,
:mod:`ultrafs.report_path`) draws into a temporary folder next to the page
and then publishes each file under its final name; an error removes what
was published and leaves nothing half-written.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile

from ultrafs.atomic import publish_path, rename_os_error

__all__ = ["report_target", "write_report_files"]


def report_target(out_html):
    """``(out_html, directory, stem)`` of a page path: absolute, its folder
    (which must exist: ``FileNotFoundError`` otherwise) and its name's stem."""
    out_html = os.path.abspath(os.fspath(out_html))
    directory, html_name = os.path.split(out_html)
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), directory)
    return out_html, directory, os.path.splitext(html_name)[0]


def write_report_files(out_html, names, draw, page) -> dict:
    """Draw the figures and write the page, then publish them together.

    Parameters
    ----------
    out_html : str
        The page's absolute path (:func:`report_target`).
    names : dict
        ``{figure key: file name}`` of the PNGs, written next to the page.
    draw : callable
        ``draw(key, path)`` draws figure ``key`` into ``path``.
    page : callable
        ``page() -> str``: the HTML, made once the figures are drawn.

    Returns
    -------
    dict
        ``{figure key: final path}``.
    """
    directory, html_name = os.path.split(out_html)
    stem = os.path.splitext(html_name)[0]
    try:
        tmpdir = tempfile.mkdtemp(prefix=f".tmp-{stem}-", dir=directory)
    except OSError as exc:
        raise rename_os_error(exc, out_html, [exc.filename or out_html]) from None
    moved = []
    try:
        tmp = {key: os.path.join(tmpdir, name) for key, name in names.items()}
        for key in names:
            draw(key, tmp[key])
        tmp_html = os.path.join(tmpdir, html_name)
        with open(tmp_html, "w", encoding="utf-8") as fh:
            fh.write(page())
        for key, name in names.items():
            final = os.path.join(directory, name)
            publish_path(tmp[key], final)
            moved.append(final)
        publish_path(tmp_html, out_html)
    except BaseException as exc:
        for final in moved:
            try:
                os.unlink(final)
            except OSError:
                pass
        if isinstance(exc, OSError):
            renamed = rename_os_error(exc, out_html, [tmpdir])
            if renamed is not exc:
                raise renamed from None
        raise
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return {key: os.path.join(directory, name) for key, name in names.items()}
