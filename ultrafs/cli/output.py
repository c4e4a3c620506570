"""Where a command writes: JSON to a file or stdout, checked output paths,
and ``select``'s default model file."""

from __future__ import annotations

import functools
import json
import os

import click

from ultrafs.cli import terminal


def emit_json(obj, out):
    """Write JSON to a file (atomically) or to stdout for ``-``."""
    if out in (None, "-"):
        click.echo(json.dumps(obj, indent=1))
    else:
        from ultrafs.atomic import write_json_atomic

        write_json_atomic(obj, out)


def check_output(out_param, option, inputs):
    """Decorator: validate an output file path before the command runs.

    Parameters
    ----------
    out_param : str
        Name of the command's parameter holding the path (``-`` is stdout).
    option : str
        How the user wrote it (``--out``).
    inputs : dict
        ``{label: parameter name}`` of the command's inputs; the output may
        be none of them (see :func:`ultrafs.outputs.check_output_file`).

    Place it below ``one_line_errors`` so that a refusal is one line.
    """

    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            from ultrafs.outputs import check_output_file

            check_output_file(kwargs.get(out_param), option,
                              [(label, kwargs.get(name)) for label, name in inputs.items()])
            return func(*args, **kwargs)

        return wrapper

    return decorate


def model_output(out, data_path, overwrite):
    """Where ``select`` writes its model and whether it prints a summary:
    ``--out``; else on a terminal NAME.model.json (and the summary), else
    stdout (``-``)."""
    summary = out is None and terminal.stdout_is_terminal()
    if out is None:
        out = _default_model_path(data_path, overwrite) if summary else "-"
    return out, summary or (terminal.stdout_is_terminal() and out != "-")


#: suffixes dropped from a data file's name to name its model file
_DATA_SUFFIXES = (".gz", ".bz2", ".xz", ".svm", ".libsvm", ".svmlight", ".txt",
                  ".zarr", ".parquet", ".t")


def _default_model_path(data_path, overwrite):
    """``NAME.model.json`` in the current folder, refused when it exists."""
    from ultrafs.errors import OutputPathError

    name = os.path.basename(os.path.normpath(os.fspath(data_path))) or "model"
    changed = True
    while changed:
        changed = False
        for suffix in _DATA_SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                changed = True
    path = f"{name}.model.json"
    if os.path.lexists(path) and not overwrite:
        raise OutputPathError(
            f"{path} exists (the model file named after --data); use --overwrite to "
            "replace it, or --out FILE (- for stdout)")
    return path
