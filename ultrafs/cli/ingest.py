"""``ultrafs ingest``: a LIBSVM file (or stdin) to a store."""

from __future__ import annotations

import contextlib
import json
import os
import sys

import click

from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.options import STORAGE_OPTION
from ultrafs.cli.terminal import ingest_progress, load_engine, progress_enabled
from ultrafs.cli.types import MAX_COUNT, MAX_ID_SPACE


@click.command()
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@click.argument("output_path", metavar="OUTPUT.zarr", type=click.Path())
@click.option("--dtype", type=click.Choice(["float32", "float64"]),
              default="float32", show_default=True, help="Value dtype of the store.")
@click.option("--zero-based", is_flag=True,
              help="Feature indices in INPUT start at 0 (default: 1-based).")
@click.option("--n-features", type=click.IntRange(min=1, max=MAX_ID_SPACE), default=None,
              help="Number of features (default: the largest index seen).")
@click.option("--memory-budget", type=click.IntRange(min=1, max=MAX_COUNT), default=256,
              show_default=True, help="MiB of triplets buffered before spilling a run.")
@click.option("--block-nnz", type=click.IntRange(min=1, max=MAX_COUNT), default=None,
              help="Target nonzeros per default column block.")
@click.option("--format", "store_format", type=click.Choice(["zarr", "parquet"]),
              default="zarr", show_default=True,
              help="Store layout: Zarr column blocks or a Parquet long table.")
@click.option("--target", type=click.Choice(["auto", "binary", "multiclass", "continuous",
                                             "none"]),
              default="auto", show_default=True,
              help="Target type of the labels. auto: two values are binary, three or "
                   "more integers multiclass, anything else continuous; none: data "
                   "without labels, to predict on (the label tokens are ignored).")
@click.option("--feature-names", "feature_names", default=None,
              type=click.Path(dir_okay=False),
              help="UTF-8 file of feature names stored with the data: one name per "
                   "line (line k names the k-th id; an empty line: unnamed), or "
                   "id<TAB>name lines for any subset of ids.")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it exists.")
@STORAGE_OPTION
@click.option("--progress/--no-progress", default=None,
              help="Progress on stderr (default: when a terminal; piped: one line at the end).")
@one_line_errors
def ingest(input_path, output_path, dtype, zero_based, n_features,
           memory_budget, block_nnz, store_format, target, overwrite, storage_options,
           feature_names, progress):
    """Convert a LIBSVM/svmlight file (plain, .gz, .bz2, .xz) to a store.

    INPUT - reads standard input (plain or compressed). On a terminal,
    progress goes to stderr: bytes read, rows, rate and ETA.
    """
    from ultrafs.outputs import check_output_dir

    from ultrafs.store.path_store import is_url

    if not is_url(output_path):
        check_output_dir(output_path, "OUTPUT", [("INPUT", input_path)])
    show = progress_enabled(progress)
    load_engine(show, ("ultrafs.kernels", "ultrafs.store.writers.libsvm"))
    from ultrafs.store.writers.libsvm import ingest_libsvm

    kwargs = {} if block_nnz is None else {"block_nnz": block_nnz}
    with _stdin_as_file(input_path, output_path) as source, \
            ingest_progress(source, show) as reporter:
        if reporter is not None:
            kwargs["progress"] = reporter
            if input_path == "-":
                reporter.name = "stdin"
        try:
            summary = ingest_libsvm(
                source, output_path, dtype=dtype, zero_based=zero_based,
                n_features=n_features, memory_budget=memory_budget * 2**20,
                command=" ".join(["ultrafs"] + sys.argv[1:]), overwrite=overwrite,
                format=store_format, target=None if target == "auto" else target,
                feature_names=feature_names, storage_options=storage_options, **kwargs)
        except OSError as exc:
            raise _store_write_error(exc, output_path, source) from None
    if input_path == "-":
        summary["input"] = "-"
    click.echo(json.dumps(summary, default=str))


@contextlib.contextmanager
def _stdin_as_file(input_path, output_path):
    """Yield a path holding INPUT: itself, or standard input copied to a file.

    The reader needs a file it can open twice (the compression is detected
    from the first bytes), so ``-`` is copied, as it comes (compressed or
    not), into a temporary folder ``OUTPUT.stdin-*`` beside OUTPUT, removed
    on every exit.  Messages name ``stdin``, not the temporary.
    """
    if input_path != "-":
        yield input_path
        return
    import shutil
    import tempfile

    from ultrafs.errors import UltraFSError

    from ultrafs.store.path_store import is_url

    output = output_path.rstrip("/") if is_url(output_path) else os.path.abspath(output_path)
    folder = tempfile.mkdtemp(prefix=os.path.basename(output) + ".stdin-",
                              dir=None if is_url(output_path) else os.path.dirname(output))
    copy = os.path.join(folder, "stdin")
    try:
        stream = getattr(sys.stdin, "buffer", sys.stdin)   # bytes (CliRunner: already bytes)
        with open(copy, "wb") as f:
            shutil.copyfileobj(stream, f, 4 * 2**20)
        try:
            yield copy
        except UltraFSError as exc:
            message = str(exc).replace(copy, "stdin")
            if message == str(exc):
                raise
            try:
                replaced = type(exc)(message)
            except Exception:  # noqa: BLE001 - an unusual constructor: keep the original
                raise exc from None
            raise replaced from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _store_write_error(exc, output_path, input_path):
    """``exc`` naming the user's OUTPUT when it names a temporary of it.

    The writers work below ``OUTPUT.tmp-*`` (the store) and
    ``OUTPUT.runs-*`` (the ingest's spill folder), both removed on
    failure; an error there, or one naming no file, is about OUTPUT.
    """
    from ultrafs.atomic import rename_os_error
    from ultrafs.errors import UltraFSError

    if isinstance(exc, UltraFSError):
        return exc
    if exc.filename is not None:
        from ultrafs.outputs import same_path

        if same_path(os.fsdecode(exc.filename), input_path):
            return exc
        output = os.path.abspath(output_path)
        name = os.path.abspath(os.fsdecode(exc.filename))
        first = os.path.relpath(name, os.path.dirname(output)).split(os.sep)[0]
        base = os.path.basename(output)
        if not first.startswith((base + ".tmp-", base + ".runs-")):
            return exc
    return rename_os_error(exc, output_path, [exc.filename or output_path])
