"""``ultrafs sign``: re-sign a model or path file whose content the user vouches for.

Every model file carries the fingerprint of its own content
(:mod:`ultrafs.model_fingerprint`), and ``evaluate``, ``predict`` and
``report`` refuse one whose content does not match it (a hand edit) or
that has none (a file written before fingerprints, format version 1 or
2).  Signing is the deliberate way to accept such a file: every field is
checked first (:func:`ultrafs.model_checks.validated_fields`), exactly as a
load checks it, and only a valid model is written, with the fingerprint of
its content; a file of version 1 or 2 is written in the current version.
Path files (``ultrafs path --out``) are signed the same way: every point's
model is checked, and a version 1 path file is written as version 2.
"""

from __future__ import annotations

import click

from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.output import check_output


@click.command("sign")
@click.argument("model_path", metavar="MODEL", type=click.Path())
@click.option("--out", default=None, type=click.Path(dir_okay=False),
              help="Where to write the signed model file (- for stdout).")
@click.option("--in-place", "in_place", is_flag=True, default=False,
              help="Replace MODEL itself (atomically) with the signed file.")
@one_line_errors
@check_output("out", "--out", {"model file": "model_path"})
def sign_command(model_path, out, in_place):
    """Check every field of a model or path file you edited or trust, and
    write it with the fingerprint of its content (evaluate, predict and
    report refuse a file whose content does not match its fingerprint)."""
    import json

    from ultrafs.atomic import write_json_atomic
    from ultrafs.errors import InputFormatError
    from ultrafs.model import MODEL_VERSION, Model, is_path_file, parsed_model_file
    from ultrafs.model_fingerprint import signed

    if (out is None) == (not in_place):
        raise click.UsageError("give --out FILE (- for stdout) or --in-place")
    obj = parsed_model_file(model_path)
    if is_path_file(obj):
        content = _signed_path(obj, model_path)
    else:
        try:
            model = Model.from_dict(obj, where=model_path)
        except RecursionError:
            raise InputFormatError(
                f"{model_path}: not a model file (values nested too deeply)") from None
        if obj.get("format_version") == MODEL_VERSION:
            content = signed(obj)          # the file as it is, edits included
        else:
            content = model.to_dict()      # an older version, written in the current one
    if in_place:
        write_json_atomic(content, model_path)
    elif out == "-":
        click.echo(json.dumps(content, indent=1))
    else:
        write_json_atomic(content, out)
    shown = model_path if in_place else out
    click.echo(f"{shown}: signed ({content['fingerprint'][:19]}...)", err=True)


def _signed_path(obj, where):
    """A path file's content, every field and point checked, in the current
    path format version, with its fingerprint."""
    from ultrafs.methods.path_file import PathModels
    from ultrafs.model import PATH_VERSIONS
    from ultrafs.model_fingerprint import signed

    PathModels(obj, where).check_points()
    return signed({**obj, "format_version": PATH_VERSIONS[-1]})
