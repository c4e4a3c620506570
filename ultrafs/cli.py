"""Command-line interface (click): thin commands over the library.

Heavy imports happen inside the commands so that ``--help`` is instant.
Errors raised on purpose by ultrafs become one line on stderr and exit
status 1; usage errors exit with status 2.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import re
import sys
import time
import warnings

import click

from ultrafs.errors import UltraFSError, UltraFSWarning



class RegistryChoice(click.Choice):
    """A choice of the built-in names, plus a registry's when it is loaded.

    Neither ``ultrafs --help`` nor the parsing of a command's options
    imports a registry (the loss registry imports numba and the solver
    stack, the feature-space registry every space): the choices are the
    static names of :mod:`ultrafs.names`, joined by the registry's own
    names when its module has already been imported (a member registered
    at run time, as ``tests/test_recipes.py`` does, is offered too).

    Parameters
    ----------
    static : tuple of str
        The built-in names (:mod:`ultrafs.names`).
    module : str
        The registry's module; read only when ``sys.modules`` holds it.
    load : callable
        ``load(module) -> iterable of str``: the registry's names.
    """

    def __init__(self, static, module, load):
        self._static = tuple(static)
        self._module = module
        self._load = load
        super().__init__(self._static, case_sensitive=True)

    @property
    def choices(self):
        loaded = sys.modules.get(self._module)
        if loaded is None:
            return self._static
        names = list(self._static)
        names += sorted(set(self._load(loaded)) - set(names))
        return tuple(names)

    @choices.setter
    def choices(self, value):
        pass


def _poly_degrees(base):
    """The degrees of the registered feature spaces (``features/base.py``)."""
    return [str(cls.poly_degree) for cls in base.FEATURE_SPACES.values()
            if cls.poly_degree is not None]


def _loss_names(losses):
    """The registered loss names (``solvers/losses.py``)."""
    return losses.loss_names()


def _loss_choice():
    from ultrafs.names import LOSS_NAMES

    return RegistryChoice(LOSS_NAMES, "ultrafs.solvers.losses", _loss_names)


def _poly_choice():
    from ultrafs.names import POLY_DEGREES

    return RegistryChoice(POLY_DEGREES, "ultrafs.features.base", _poly_degrees)


#: library wording -> command-line wording, applied to every error line
_CLI_WORDING = (
    (re.compile(r"\boverwrite=True\b"), "--overwrite"),
    (re.compile(r"\bnp\.(?:float|int|uint|bool)\w*\(([^()]*)\)"), r"\1"),
)


def _cli_message(text):
    """The first line of an error message, in the command line's words."""
    line = str(text).splitlines()[0] if str(text) else type(text).__name__
    for pattern, replacement in _CLI_WORDING:
        line = pattern.sub(replacement, line)
    return line


def _os_error_line(exc):
    """One line for an OSError: the reason and the path it names."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is None:
        return reason
    where = os.fsdecode(exc.filename)
    if exc.filename2 is not None:
        where += f" -> {os.fsdecode(exc.filename2)}"
    return f"{reason}: {where}"


def _raised_by(exc, kind) -> bool:
    """Whether ``exc`` or any exception it was raised from or while handling
    (its ``__cause__`` / ``__context__`` chain, followed to the end) is a
    ``kind``."""
    seen = set()
    pending = [exc]
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        if isinstance(error, kind):
            return True
        seen.add(id(error))
        pending += [error.__cause__, error.__context__]
    return False


def _one_line_errors(func):
    """Turn ultrafs errors, OS errors and SIGTERM into one line on stderr.

    SIGTERM raises :class:`ultrafs.signals.Terminated` (see
    :mod:`ultrafs.signals`), so the cleanup that follows Ctrl-C runs too;
    the command then exits with status 143.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from ultrafs.signals import (SIGTERM_EXIT_STATUS, Terminated,
                                     terminate_as_interrupt)

        try:
            with terminate_as_interrupt(), \
                    warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UltraFSWarning)
                result = func(*args, **kwargs)
            for warning in caught:
                if issubclass(warning.category, UltraFSWarning):
                    click.echo(f"Warning: {warning.message}", err=True)
                else:
                    warnings.warn_explicit(warning.message, warning.category,
                                           warning.filename, warning.lineno)
            return result
        except (Terminated, SystemError) as exc:
            # SIGTERM raised while a compiled kernel ran in the main thread
            # surfaces as a SystemError ("returned a result with an exception
            # set") whose cause or context is the Terminated, or another
            # such SystemError (numba loading a kernel from its cache)
            if not _raised_by(exc, Terminated):
                if _raised_by(exc, KeyboardInterrupt):
                    # Ctrl-C inside a kernel: click's own "Aborted!", as
                    # for Ctrl-C anywhere else
                    raise KeyboardInterrupt from None
                raise
            click.echo("Error: terminated by SIGTERM; temporary files removed, "
                       "no output written", err=True)
            sys.exit(SIGTERM_EXIT_STATUS)
        except UltraFSError as exc:
            raise click.ClickException(_cli_message(exc)) from None
        except OSError as exc:
            raise click.ClickException(_os_error_line(exc)) from None
        except MemoryError as exc:
            raise click.ClickException(
                "out of memory" + (f" ({_cli_message(exc)})" if str(exc) else "")) from None

    return wrapper


def _check_output(out_param, option, inputs):
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

    Place it below ``_one_line_errors`` so that a refusal is one line.
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


class SchedulerType(click.ParamType):
    """``threads``, ``processes``, ``synchronous`` or a ``tcp://`` address."""

    name = "scheduler"

    def convert(self, value, param, ctx):
        if value is None or not isinstance(value, str):
            return value
        if value in ("threads", "processes", "synchronous"):
            return value
        if "://" in value:
            return value
        self.fail(f"{value!r} is not one of threads, processes, synchronous "
                  "or a scheduler address such as tcp://host:8786", param, ctx)


class CType(click.ParamType):
    """``--C``: a number > 0, ``scale`` or ``auto``."""

    name = "C"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        if value in ("scale", "auto"):
            return value
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not (number > 0 and number != float("inf")):
            self.fail(f"{value!r} is not a number > 0, 'scale' or 'auto'", param, ctx)
        return number


class SizeType(click.ParamType):
    """``--memory-limit``: bytes, or a number with a unit (``8GB``, ``7.5G``,
    ``800MB``, ``8GiB``; decimal units are powers of 1000, ``*iB`` of 1024)."""

    name = "size"
    _UNITS = {"": 1, "B": 1, "K": 10**3, "KB": 10**3, "M": 10**6, "MB": 10**6,
              "G": 10**9, "GB": 10**9, "T": 10**12, "TB": 10**12, "KIB": 2**10,
              "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        text = value.strip().upper()
        number = text.rstrip("KMGTIB")
        unit = text[len(number):]
        try:
            size = float(number) * self._UNITS[unit]
        except (ValueError, KeyError):
            size = float("nan")
        if not (size >= 1 and size != float("inf")):
            self.fail(f"{value!r} is not a size such as 8GB, 800MB or 8GiB", param, ctx)
        return int(size)


class ClassWeightType(click.ParamType):
    """``--class-weight``: ``balanced`` or ``VALUE:WEIGHT,...`` (class values)."""

    name = "class_weight"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        if value == "balanced":
            return value
        weights = {}
        for item in value.split(","):
            label, sep, weight = item.partition(":")
            try:
                key, number = float(label), float(weight)
            except ValueError:
                key = number = float("nan")
            if not sep or key != key or not (0 <= number < float("inf")):
                self.fail(f"{value!r} is not 'balanced' or VALUE:WEIGHT,... with "
                          "numbers VALUE and WEIGHT >= 0", param, ctx)
            weights[key] = number
        return weights


#: largest count an integer option accepts (B, iterations, folds, block sizes...):
#: beyond it a value can only be a mistake, and numpy would fail on it
MAX_COUNT = 2**31 - 1
#: most threads or processes of a local scheduler (--workers)
MAX_WORKERS = 4096
#: longest timeout an option accepts (one day)
MAX_SECONDS = 86400.0

#: how long a scheduler address may take to answer (--connect-timeout)
CONNECT_TIMEOUT_S = 10.0


def _check_scheduler_answers(spec, timeout):
    """Connect to ``spec`` and read dask's handshake, within ``timeout`` seconds.

    ``distributed.Client(timeout=...)`` bounds the TCP connection but not
    the handshake read that follows it: an address that accepts TCP and
    never answers would hold the client forever.  This probe runs the same
    connection and handshake under one wall-clock bound
    (``asyncio.wait_for`` cancels it), then closes it.
    """
    import asyncio

    from distributed.comm import connect

    async def probe():
        # the outer bound lets connect's own, more precise, error come first
        comm = await asyncio.wait_for(connect(spec, timeout=timeout), timeout + 1.0)
        await comm.close()

    try:
        asyncio.run(probe())
    except (asyncio.TimeoutError, TimeoutError):
        raise click.ClickException(
            f"the dask scheduler at {spec} did not answer within {timeout:g} s "
            "(--connect-timeout)") from None
    except (OSError, ValueError, TypeError) as exc:
        raise click.ClickException(
            f"cannot reach the dask scheduler at {spec} "
            f"({_cli_message(exc)})") from None


@contextlib.contextmanager
def _open_scheduler(spec, connect_timeout=CONNECT_TIMEOUT_S):
    """Yield a scheduler for ``dask.compute``; connects to addresses.

    Local names are passed through; an address gets a
    ``dask.distributed.Client`` that is closed on exit.  An address that
    does not complete dask's handshake within ``connect_timeout`` seconds
    is a one-line error.
    """
    if spec is None or spec in ("threads", "processes", "synchronous"):
        yield spec
        return
    from distributed import Client

    _check_scheduler_answers(spec, connect_timeout)
    with _quiet_distributed_logs():
        try:
            client = Client(spec, timeout=f"{connect_timeout}s")
        except (OSError, ValueError, TimeoutError) as exc:
            raise click.ClickException(
                f"cannot reach the dask scheduler at {spec} ({_cli_message(exc)})") from None
        with client:
            yield client


@contextlib.contextmanager
def _quiet_distributed_logs():
    """Silence dask.distributed's log lines (a lost scheduler is our one line)."""
    import logging

    names = ["distributed"] + [name for name in logging.root.manager.loggerDict
                               if name.startswith("distributed.")]
    saved = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def _emit_json(obj, out):
    """Write JSON to a file (atomically) or to stdout for ``-``."""
    if out in (None, "-"):
        click.echo(json.dumps(obj, indent=1))
    else:
        from ultrafs.atomic import write_json_atomic

        write_json_atomic(obj, out)


def _progress_enabled(flag):
    return flag if flag is not None else sys.stderr.isatty()


def _stdout_is_terminal():
    """Whether stdout is a terminal (a person reads it, no program)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _stderr_is_terminal():
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _megabytes(n):
    return f"{n / 1e6:,.1f} MB"


class _IngestProgress:
    """One line on stderr while a LIBSVM file is read: bytes, rows, rate, ETA.

    Called by :func:`ultrafs.store.writers.libsvm.ingest_libsvm` with the
    rows parsed so far after every block of text.  The bytes read are the
    reader's offset in the (possibly compressed) file, read from
    ``/proc/self/fdinfo`` (Linux); elsewhere the line shows rows and their
    rate only.
    """

    def __init__(self, path, min_interval=0.25, stream=None):
        self.path = os.fspath(path)
        self.name = os.path.basename(self.path)
        self.real = os.path.realpath(self.path)
        try:
            self.size = os.path.getsize(self.path)
        except OSError:
            self.size = 0
        self.stream = stream if stream is not None else sys.stderr
        self.min_interval = min_interval
        self.started = time.perf_counter()
        self.drawn = 0.0
        self.rows = 0
        self.fd = None
        self.shown = False

    def _position(self):
        """The reader's offset in the file, or None where it cannot be seen."""
        try:
            if self.fd is None or os.readlink(f"/proc/self/fd/{self.fd}") != self.real:
                self.fd = None
                for name in os.listdir("/proc/self/fd"):
                    try:
                        if os.readlink(f"/proc/self/fd/{name}") == self.real:
                            self.fd = name
                            break
                    except OSError:
                        continue
            if self.fd is None:
                # rows were parsed, so the reader opened the file: it has
                # read it all and closed it
                return self.size if os.path.isdir("/proc/self/fd") else None
            with open(f"/proc/self/fdinfo/{self.fd}") as info:
                for line in info:
                    if line.startswith("pos:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            return None
        return None

    def line(self, now, position, final=False):
        elapsed = max(now - self.started, 1e-9)
        if final:
            size = f"{_megabytes(self.size)}, " if self.size else ""
            return f"read {self.name}: {size}{self.rows:,} rows in {format_seconds(elapsed)}"
        text = f"reading {self.name}:"
        if position is not None and self.size:
            position = min(position, self.size)
            fraction = position / self.size
            text += (f" {_megabytes(position)} of {_megabytes(self.size)} "
                     f"({100 * fraction:.0f}%),")
        text += f" {self.rows:,} rows, {self.rows / elapsed:,.0f} rows/s"
        if position is not None and self.size:
            text += f", {position / elapsed / 1e6:,.1f} MB/s"
            if position >= self.size:
                text += "; writing the store"
            elif position > 0:
                text += f", ETA {format_seconds((self.size - position) * elapsed / position)}"
        return text

    def __call__(self, rows):
        self.rows = int(rows)
        now = time.perf_counter()
        if now - self.drawn < self.min_interval:
            return
        self.drawn = now
        self.shown = True
        self.stream.write("\r" + self.line(now, self._position()) + "   ")
        self.stream.flush()

    def finish(self):
        """Show the last count and end the line (after the ingest, or before a message)."""
        if self.shown:
            self.stream.write("\r" + self.line(time.perf_counter(), None, final=True)
                              + " " * 40 + "\n")
            self.stream.flush()
            self.shown = False


def format_seconds(seconds):
    from ultrafs.scoring.progress import format_seconds as fmt

    return fmt(seconds)


@contextlib.contextmanager
def _ingest_progress(path, show):
    """An :class:`_IngestProgress` for ``path`` when ``show``, else None."""
    reporter = _IngestProgress(path) if show else None
    try:
        yield reporter
    finally:
        if reporter is not None:
            reporter.finish()


def _data_path(path, *, target=None):
    """The store for ``path``: itself, or a LIBSVM file's cached ingest.

    See :mod:`ultrafs.store.libsvm_cache`; the ingest (with progress on a
    terminal) and the reuse are each said in one line on stderr.
    """
    if path is None:
        return None
    if not os.path.isfile(os.fspath(path)):
        # a store folder, a URL or a missing path: no LIBSVM file (what
        # is_libsvm_file says first), without importing the ingest (~70 ms)
        return path
    from ultrafs.store.libsvm_cache import is_libsvm_file, resolve_data

    if not is_libsvm_file(path):
        return path
    with _ingest_progress(path, _stderr_is_terminal()) as reporter:
        options = {} if reporter is None else {"progress": reporter}

        def say(message):
            if reporter is not None:
                reporter.finish()
            click.echo(message, err=True)

        return resolve_data(path, target=target, echo=say, ingest_options=options)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ultrafs")
def main():
    """ultrafs: select the few features that matter among millions."""
    from ultrafs.allocator import map_large_allocations

    _skip_exit_collection()
    map_large_allocations()


_exit_collection_skipped = False


def _skip_exit_collection():
    """Spare the process its garbage collection at exit (0.3-0.5 s).

    Python's finalization collects every object in a reference cycle; after
    numba, llvmlite and scipy are loaded that takes 0.3-0.5 s, longer than
    opening a store and reading its labels.  ``gc.freeze`` from an atexit
    handler (run once the command is over: its files are written and closed,
    its threads joined; stdout and stderr are still flushed) leaves those
    objects to the operating system.  Nothing changes inside a process that
    goes on after a command (tests, ``CliRunner``): atexit runs at its exit.
    """
    global _exit_collection_skipped
    if not _exit_collection_skipped:
        import atexit
        import gc

        atexit.register(gc.freeze)
        _exit_collection_skipped = True


@main.command()
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@click.argument("output_path", metavar="OUTPUT.zarr", type=click.Path())
@click.option("--dtype", type=click.Choice(["float32", "float64"]),
              default="float32", show_default=True, help="Value dtype of the store.")
@click.option("--zero-based", is_flag=True,
              help="Feature indices in INPUT start at 0 (default: 1-based).")
@click.option("--n-features", type=click.IntRange(min=1), default=None,
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
@_one_line_errors
def ingest(input_path, output_path, dtype, zero_based, n_features,
           memory_budget, block_nnz, store_format, target, overwrite, feature_names):
    """Convert a LIBSVM/svmlight file (plain, .gz, .bz2, .xz) to a store.

    INPUT - reads standard input (plain or compressed). On a terminal,
    progress goes to stderr: bytes read, rows, rate and ETA.
    """
    from ultrafs.outputs import check_output_dir
    from ultrafs.store.writers.libsvm import ingest_libsvm

    check_output_dir(output_path, "OUTPUT", [("INPUT", input_path)])
    kwargs = {} if block_nnz is None else {"block_nnz": block_nnz}
    with _stdin_as_file(input_path, output_path) as source, \
            _ingest_progress(source, _stderr_is_terminal()) as reporter:
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
                feature_names=feature_names, **kwargs)
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

    output = os.path.abspath(output_path)
    folder = tempfile.mkdtemp(prefix=os.path.basename(output) + ".stdin-",
                              dir=os.path.dirname(output))
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


LABEL_OPTION = click.option(
    "--label", default=None,
    help="Label column of a wide Parquet table (default: 'label').")


@main.command()
@click.argument("store_path", metavar="STORE", type=click.Path())
@LABEL_OPTION
@_one_line_errors
def info(store_path, label):
    """Print a store's metadata as JSON (Zarr, Parquet long or wide)."""
    from ultrafs.store import open_store

    click.echo(json.dumps(open_store(store_path, label=label).describe(), indent=1,
                          default=str))


def _run_options():
    """Options of the block passes: block size, scheduler and its timeouts."""
    return [
        click.option("--block-size", type=click.IntRange(min=1, max=MAX_COUNT), default=None,
                     help="Columns per scoring task (default: the store's blocks)."),
        click.option("--scheduler", type=SchedulerType(), default="threads",
                     show_default=True, envvar="ULTRAFS_SCHEDULER",
                     help="threads, processes, synchronous or a dask.distributed "
                          "scheduler address tcp://HOST:PORT (env ULTRAFS_SCHEDULER)."),
        click.option("--workers", type=click.IntRange(min=1, max=MAX_WORKERS), default=None,
                     help="Threads/processes of a local scheduler."),
        click.option("--connect-timeout", type=click.FloatRange(min=0, min_open=True,
                                                                max=MAX_SECONDS),
                     default=None, envvar="ULTRAFS_CONNECT_TIMEOUT",
                     help="Seconds a tcp:// scheduler may take to answer "
                          "(default 10; env ULTRAFS_CONNECT_TIMEOUT)."),
        click.option("--worker-timeout", type=click.FloatRange(min=0, min_open=True,
                                                               max=MAX_SECONDS),
                     default=None, envvar="ULTRAFS_WORKER_TIMEOUT",
                     help="Seconds a tcp:// run waits while its cluster has no "
                          "worker, or its scheduler is unreachable, before it "
                          "fails (default 60; env ULTRAFS_WORKER_TIMEOUT)."),
    ]


def _fgm_options(func):
    options = [
        click.option("--B", "B", type=click.IntRange(min=1, max=MAX_COUNT), default=50,
                     show_default=True, help="Features added per outer iteration."),
        click.option("--C", "C", type=CType(), default="scale", show_default=True,
                     help="Weight of the empirical loss: a number > 0, 'scale' "
                          "(10 / mean over rows of the largest squared value: the "
                          "same model whatever the scale of the rows) or 'auto' "
                          "(chosen on held-out "
                          "rows, see --validation-fraction and --cv)."),
        click.option("--validation-fraction", type=click.FloatRange(0, 1, min_open=True,
                                                                    max_open=True),
                     default=None,
                     help="Share of the rows held out (stratified, seeded by "
                          "--split-seed). With --C auto: the rows C is chosen on "
                          "(default 0.2; 5 folds for at most 10,000 rows), then the "
                          "model is fitted on all rows. Otherwise: the model is "
                          "fitted on the other rows and its accuracy on the held-out "
                          "ones is printed and recorded (params.held_out)."),
        click.option("--cv", type=click.IntRange(min=2, max=MAX_COUNT), default=None,
                     help="--C auto: K stratified folds instead of one hold-out."),
        click.option("--split-seed", type=click.IntRange(min=0), default=0,
                     show_default=True,
                     help="Seed of the held-out split (--validation-fraction) or "
                          "of the --C auto folds."),
        click.option("--loss", type=_loss_choice(),
                     default="logistic", show_default=True,
                     help="Loss (K >= 3 classes: multinomial logistic or "
                          "one-vs-rest squared hinge)."),
        click.option("--class-weight", type=ClassWeightType(), default=None,
                     help="Weight the loss of each class: 'balanced' (n / (K x "
                          "the class's count), for imbalanced data) or "
                          "VALUE:WEIGHT,... (class values, e.g. 1:10,-1:1; others "
                          "keep 1). --C auto then scores held-out rows by their "
                          "weighted accuracy."),
        click.option("--max-iter", type=click.IntRange(min=1, max=MAX_COUNT), default=10,
                     show_default=True,
                     help="T: select up to B x T features with a nonzero weight "
                          "(at most 3T outer iterations)."),
        click.option("--tol", type=click.FloatRange(min=0), default=1e-3,
                     show_default=True,
                     help="ε_c of eq. 37; 0 disables it (the loop runs until "
                          "the budget B x T is held)."),
        click.option("--no-intercept", is_flag=True, help="Do not learn a bias."),
        click.option("--inner-tol", type=click.FloatRange(min=0, min_open=True),
                     default=1e-3, show_default=True,
                     help="ε_in of the subproblem solver: the relative decrease "
                          "that triggers its optimality check."),
        click.option("--inner-kkt-tol", type=click.FloatRange(min=0), default=1e-4,
                     show_default=True,
                     help="Relative KKT residual that certifies each subproblem's "
                          "solution; 0 stops on --inner-tol alone (the paper's rule)."),
        click.option("--inner-solver", type=click.Choice(["auto", "apg", "newton", "mkl"]),
                     default="auto", show_default=True,
                     help="Subproblem solver: auto (proximal Newton or APG), or mkl: "
                          "MKL-FGM, SimpleMKL in the dual (the paper's reference; "
                          "squared hinge, two classes, at most 5,000 rows)."),
        click.option("--poly", type=_poly_choice(), default="1",
                     show_default=True,
                     help="2: select among all degree-2 polynomial features "
                          "(linear, squares, crosses) generated on the fly."),
        click.option("--gamma", type=click.FloatRange(min=0, min_open=True),
                     default=1.0, show_default=True,
                     help="γ of the degree-2 kernel (γ x'z + r)^2."),
        click.option("--coef0", type=click.FloatRange(min=0), default=1.0,
                     show_default=True, help="r of the degree-2 kernel."),
        click.option("--groups", "groups_path", type=click.Path(dir_okay=False),
                     default=None,
                     help="Select groups of features (B groups per iteration): "
                          "FEATURE_ID GROUP_ID per line (a feature may be in "
                          "several groups), or .npy / .parquet (docs/GROUPS.md)."),
        click.option("--tree", "tree_path", type=click.Path(dir_okay=False),
                     default=None,
                     help="Select nodes of a tree of groups: the parent of every "
                          "node per line (-1: root); nodes 0..m-1 are the columns "
                          "(docs/GROUPS.md)."),
        click.option("--kernel", type=click.Choice(["hik", "chi2", "intersection", "js"]),
                     default=None,
                     help="Select features of an additive kernel: each feature's "
                          "explicit map is a group generated on the fly (hik: q = "
                          "100 levels; the others: 11 columns; docs/ADDITIVE_KERNELS.md)."),
        click.option("--q", "kernel_q", type=click.IntRange(min=1, max=10_000),
                     default=None, help="Levels of the --kernel hik map [default: 100]."),
        click.option("--kernel-n", type=click.IntRange(min=0, max=50), default=None,
                     help="Order n of the --kernel chi2 / intersection / js maps: "
                          "2n+1 columns per feature [default: 5]."),
        click.option("--kernel-period", type=click.FloatRange(min=0, min_open=True),
                     default=None, help="Sampling period L of the chi2 / "
                                        "intersection / js maps [default: 0.315 / "
                                        "0.34 / 0.25, docs/ADDITIVE_KERNELS.md]."),
        *_run_options(),
        click.option("--refit", is_flag=True,
                     help="Refit an l2-regularised model of the same loss on the "
                          "selected columns only and predict with it (with --C auto, "
                          "unless FGM's own weights score better on the held-out "
                          "rows)."),
        click.option("--refit-C", "refit_C", type=click.FloatRange(min=0, min_open=True),
                     default=None, help="C of the refit (default: --C; with --C auto "
                                        "chosen on the same held-out rows)."),
        click.option("--progress/--no-progress", default=None,
                     help="Per-iteration progress on stderr (default: when a terminal)."),
        click.option("--memory-limit", type=SizeType(), default=None,
                     help="Memory the run may hold (e.g. 8GB): the loop stops before "
                          "an outer iteration whose projected peak would exceed it, "
                          "keeping the last certified model; the stop reason says so."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@contextlib.contextmanager
def _scheduler_for_run(scheduler, connect_timeout=None, worker_timeout=None):
    """The Dask scheduler of ``--scheduler``, with the run's timeouts set."""
    from ultrafs.scoring.scheduling import WORKER_TIMEOUT_KEY

    if connect_timeout is None:
        connect_timeout = CONNECT_TIMEOUT_S
    timeouts = contextlib.nullcontext()
    if worker_timeout is not None:
        import dask

        timeouts = dask.config.set({WORKER_TIMEOUT_KEY: worker_timeout})
    with timeouts, _open_scheduler(scheduler, connect_timeout) as dask_scheduler:
        yield dask_scheduler


@contextlib.contextmanager
def _too_large_C(C):
    """Name ``--C`` when the solver's step bound overflows (C near 1e308)."""
    from ultrafs.errors import ParameterError

    try:
        yield
    except ParameterError as exc:
        if "lipschitz0" not in str(exc) and "Lipschitz" not in str(exc):
            raise
        shown = C if isinstance(C, str) else f"{C:g}"
        raise ParameterError(
            f"--C {shown} is too large for this data: the solver's curvature bound "
            "(C times the loss curvature and the squared column norms) overflows; "
            "use a smaller --C or --C scale") from None


def _run_select(store, B, C, loss, max_iter, tol, no_intercept, inner_tol,
                inner_kkt_tol,
                block_size, scheduler, workers, progress, command, poly=1,
                gamma=1.0, coef0=1.0, checkpoint=None, resume=False, refit=False,
                refit_C=None, validation_fraction=None, cv=None, split_seed=0,
                connect_timeout=None, worker_timeout=None, class_weight=None,
                memory_limit=None, groups_path=None, tree_path=None, kernel=None,
                inner_solver="auto", kernel_q=None, kernel_n=None, kernel_period=None):
    from ultrafs.api import select

    from ultrafs.scoring.progress import format_seconds, run_clock

    show = _progress_enabled(progress)
    clock = None

    def report(record):
        if clock is not None:
            clock.iteration_done(record["iteration"])
        if show:
            seconds = sum(record.get(f"{phase}_seconds", 0.0)
                          for phase in ("score", "materialize", "solve"))
            left = clock.remaining() if clock is not None else None
            click.echo(
                f"{clock.name(record['iteration'])}: "
                f"{record['n_features']:,} features ({record['n_nonzero']:,} with a "
                f"nonzero weight), objective {record['objective']:.6g}, "
                + (f"{record['pairs_evaluated']:,} of {record['candidates']:,} "
                   "pairs evaluated, " if "pairs_evaluated" in record else "")
                + f"{format_seconds(seconds)} (scoring "
                f"{format_seconds(record['score_seconds'])}, solving "
                f"{format_seconds(record['solve_seconds'])})"
                + ("" if left is None or left <= 0
                   else f"; run ETA {format_seconds(left)}"), err=True)

    structure = _structure(store, groups_path, tree_path, kernel, kernel_q, kernel_n,
                           kernel_period)
    with _too_large_C(C), run_clock(max_iter) as clock, \
            _scheduler_for_run(scheduler, connect_timeout,
                               worker_timeout) as dask_scheduler:
        return select(store, B=B, C=C, loss=loss, max_iter=max_iter, tol=tol,
                      fit_intercept=not no_intercept, inner_tol=inner_tol,
                      inner_kkt_tol=inner_kkt_tol or None,
                      block_size=block_size, scheduler=dask_scheduler,
                      num_workers=workers, callback=report, command=command,
                      poly=int(poly), gamma=gamma, coef0=coef0,
                      checkpoint=checkpoint, resume=resume, progress=show,
                      refit=refit, refit_C=refit_C,
                      validation_fraction=validation_fraction, cv=cv, seed=split_seed,
                      class_weight=class_weight, memory_limit=memory_limit,
                      inner_solver=inner_solver, **structure)


def _structure(store, groups_path, tree_path, kernel, kernel_q=None, kernel_n=None,
               kernel_period=None):
    """``select``'s groups / tree / kernel arguments from the options; a
    malformed file or one that does not fit the data is named in one line."""
    from ultrafs.errors import ParameterError

    kernel_params = {}
    if kernel_q is not None:
        if kernel != "hik":
            raise ParameterError("--q is the number of levels of --kernel hik")
        kernel_params["q"] = kernel_q
    for name, value in (("n", kernel_n), ("period", kernel_period)):
        if value is not None:
            if kernel not in ("chi2", "intersection", "js"):
                raise ParameterError(f"--kernel-{name} applies to --kernel chi2, "
                                     "intersection or js")
            kernel_params[name] = value
    structure = {"kernel": kernel, "kernel_params": kernel_params or None}
    if groups_path is not None:
        from ultrafs.features.group_files import read_groups_file
        from ultrafs.features.groups import group_map

        _, value = read_groups_file(groups_path)
        try:
            structure["groups"] = group_map(store, value)
        except ParameterError as exc:
            raise ParameterError(f"{groups_path}: {exc}") from None
    if tree_path is not None:
        from ultrafs.features.group_files import read_tree_file
        from ultrafs.features.tree import Tree

        try:
            structure["tree"] = Tree(read_tree_file(tree_path), store.n_features)
        except ParameterError as exc:
            raise ParameterError(f"{tree_path}: {exc}") from None
    return structure


def _l1_path_options():
    """Options of the ℓ1-LR path (``path``, ``select --method l1``)."""
    return [
        click.option("--screening", type=click.Choice(["slores", "strong", "none"]),
                     default="slores", show_default=True,
                     help="Rule that discards features before each solve: Slores "
                          "(safe), the strong rule (unsafe; KKT violators are "
                          "re-added) or none. Every model is checked on all "
                          "features by a KKT pass."),
        click.option("--basic", is_flag=True,
                     help="Screen with λ_max as the reference (the paper's basic "
                          "rule) instead of the previous λ's solution."),
        click.option("--n-lambdas", type=click.IntRange(min=1, max=100_000), default=86,
                     show_default=True, help="Values of λ on the path."),
        click.option("--lambda-min-ratio", type=click.FloatRange(0, 1, min_open=True),
                     default=0.1, show_default=True, help="Smallest λ / λ_max."),
        click.option("--lambda-max-ratio", type=click.FloatRange(0, 1, min_open=True),
                     default=0.95, show_default=True,
                     help="Largest λ / λ_max (the grid is linear between the two)."),
    ]


def _with_options(options):
    def decorate(func):
        for option in reversed(options):
            func = option(func)
        return func
    return decorate


#: FGM options that mean nothing to ``select --method l1``
_FGM_ONLY = ("B", "C", "validation_fraction", "cv", "class_weight", "max_iter", "tol",
             "no_intercept", "inner_tol", "inner_kkt_tol", "inner_solver", "poly",
             "gamma", "coef0", "groups_path", "tree_path", "kernel", "kernel_q",
             "kernel_n", "kernel_period", "refit", "refit_C", "memory_limit",
             "checkpoint", "resume", "loss")
_L1_ONLY = ("features", "screening", "basic", "n_lambdas", "lambda_min_ratio",
            "lambda_max_ratio")
_MSLR_ONLY = ("retrain_C", "no_retrain")
_GSRFS_ONLY = ("gsrfs_r", "gsrfs_p", "gsrfs_lam", "gsrfs_candidates", "gsrfs_stop",
               "gsrfs_eps", "gsrfs_scale")
_SKLR_ONLY = ("basis", "n_components", "sigma", "solver", "lam_ratio", "two_stage",
              "mfista_scaling", "seed")
#: FGM options ``select --method sklr`` keeps: --max-iter (the solver's cap),
#: --tol (its duality-gap certificate), --no-intercept, --validation-fraction
_NOT_SKLR = tuple(name for name in _FGM_ONLY
                  if name not in ("max_iter", "tol", "no_intercept", "validation_fraction"))
#: FGM options that mean nothing to ``select --method mslr`` (it keeps --B,
#: --C, --max-iter, --tol, --no-intercept (of the retraining), --poly,
#: --gamma, --coef0, --validation-fraction and the run options)
#: options ``select --method gsrfs`` refuses: FGM's but --max-iter, --tol,
#: --no-intercept and --validation-fraction; l1's but --features; mslr's and
#: sklr's
_NOT_GSRFS = (tuple(name for name in _FGM_ONLY
                    if name not in ("max_iter", "tol", "no_intercept",
                                    "validation_fraction"))
              + tuple(name for name in _L1_ONLY if name != "features")
              + _MSLR_ONLY + _SKLR_ONLY)
_NOT_MSLR = ("cv", "class_weight", "inner_tol", "inner_kkt_tol", "inner_solver",
             "groups_path", "tree_path", "kernel", "kernel_q", "kernel_n",
             "kernel_period", "refit", "refit_C", "memory_limit", "checkpoint",
             "resume", "loss")


class CandidatesType(click.ParamType):
    """``--candidates``: an integer >= 1 or ``auto``."""

    name = "integer|auto"

    def convert(self, value, param, ctx):
        if value == "auto" or isinstance(value, int):
            return value
        try:
            number = int(str(value))
        except ValueError:
            number = 0
        if not 1 <= number <= MAX_COUNT:
            self.fail(f"{value!r} is not an integer >= 1 or 'auto'", param, ctx)
        return number


class RetrainCType(click.ParamType):
    """``--retrain-C``: a finite number > 0 or ``auto``."""

    name = "number|auto"

    def convert(self, value, param, ctx):
        if value == "auto":
            return value
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not (math.isfinite(number) and number > 0):
            self.fail(f"{value!r} is not a number > 0 or 'auto'", param, ctx)
        return number


def _given(name):
    """Whether option ``name`` was set on the command line or by environment."""
    from click.core import ParameterSource

    source = click.get_current_context().get_parameter_source(name)
    return source not in (None, ParameterSource.DEFAULT)


def _option_text(name):
    if name.startswith("gsrfs_"):
        return "--" + name[len("gsrfs_"):]
    return "--" + {"B": "B", "C": "C", "groups_path": "groups", "tree_path": "tree",
                   "kernel_q": "q", "refit_C": "refit-C", "retrain_C": "retrain-C"}.get(name, name).replace("_", "-")


def _check_option_pairs(params, fgm=True):
    """Refuse an option that has no effect without another one (one line).

    ``--gamma`` and ``--coef0`` are the degree-2 kernel's (``--poly 2``);
    with FGM, ``--refit-C`` is the refit's C (``--refit``) and ``--cv``
    the folds of ``--C auto``.
    """
    if str(params["poly"]) != "2":
        for name in ("gamma", "coef0"):
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} is a parameter of the "
                                       "degree-2 kernel: it applies to --poly 2")
    if not fgm:
        return
    if _given("refit_C") and not params["refit"]:
        raise click.UsageError("--refit-C is the C of the refit: it needs --refit")
    if _given("cv") and params["C"] != "auto":
        raise click.UsageError("--cv K chooses C on K folds: it needs --C auto")


@main.command("select")
@click.option("--data", "data_path", required=True, type=click.Path(),
              help="Training data: a store (Zarr or Parquet, see `ultrafs ingest`) "
                   "or a LIBSVM file (plain, .gz, .bz2, .xz), ingested once into "
                   "the cache ($ULTRAFS_CACHE_DIR, else ~/.cache/ultrafs) and "
                   "reused.")
@LABEL_OPTION
@_fgm_options
@click.option("--test", "test_path", default=None, type=click.Path(),
              help="Labelled store or LIBSVM file: the model's accuracy on it is "
                   "printed and recorded (params.test).")
@click.option("--checkpoint", type=click.Path(file_okay=False), default=None,
              help="Directory where the state is saved after every outer iteration.")
@click.option("--resume", is_flag=True,
              help="Continue from --checkpoint (same data and parameters).")
@click.option("--out", default=None,
              help="Model file to write, or - for stdout. Default: on a terminal "
                   "NAME.model.json in the current folder (NAME: the data's file "
                   "name) and a short summary; otherwise the JSON on stdout.")
@click.option("--overwrite", is_flag=True,
              help="Replace an existing NAME.model.json (the default --out on a "
                   "terminal).")
@click.option("--method", type=click.Choice(["fgm", "l1", "mslr", "sklr", "gsrfs"]),
              default="fgm",
              show_default=True,
              help="fgm: the Feature Generating Machine; l1: ℓ1-logistic "
                   "regression, the model at the first λ of the screened path "
                   "with at least --features nonzero weights; mslr: minimax "
                   "sparse logistic regression (r = --B features per constraint, "
                   "T_m = --max-iter constraints at most, no bias), retrained by "
                   "ℓ2-LR on its selection; sklr: sparse kernel logistic "
                   "regression (seed 001) on random Fourier features or the exact "
                   "RBF kernel columns, λ = --lam-ratio λ_max; gsrfs: GSR-FS "
                   "(seed 002), the ℓ2,r loss on ±1 class codes or real targets "
                   "with ℓ2,p row sparsity, by IRLS; the model keeps the "
                   "--features best-ranked features.")
@click.option("--features", type=click.IntRange(min=1, max=MAX_COUNT), default=None,
              help="--method l1: number of nonzero weights wanted; --method gsrfs: "
                   "number of best-ranked features the model keeps [default: 50].")
@_with_options(_l1_path_options())
@click.option("--retrain-C", "retrain_C", type=RetrainCType(), default=None,
              help="--method mslr: C of the ℓ2-LR retraining on the selected "
                   "features (a number > 0, or 'auto': chosen on 20% of the rows "
                   "held out) [default: 5, the paper's].")
@click.option("--no-retrain", is_flag=True,
              help="--method mslr: predict with MSLR's own weights (no bias) "
                   "instead of the ℓ2-LR retraining.")
@click.option("--basis", type=click.Choice(["rff", "rbf"]), default=None,
              help="--method sklr: random Fourier features generated on the fly "
                   "from --seed (rff), or the exact RBF kernel columns on the "
                   "training rows (rbf, at most 20,000 rows) [default: rff].")
@click.option("--n-components", type=click.IntRange(min=1, max=2 ** 24), default=None,
              help="--method sklr --basis rff: number D of random features "
                   "[default: 1000].")
@click.option("--sigma", type=click.FloatRange(0, None, min_open=True), default=None,
              help="--method sklr: width σ of the kernel exp(-|x - z|²/σ²) "
                   "[default: the median pairwise distance of 1,000 seeded rows].")
@click.option("--solver", type=click.Choice(["fista", "mfista", "cgd", "sgd"]),
              default=None,
              help="--method sklr: the ℓ1 solver (FISTA, multi-scale FISTA, "
                   "coordinate gradient descent, cumulative-penalty SGD) "
                   "[default: cgd].")
@click.option("--lam-ratio", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="--method sklr: λ = ρ λ_max (the paper's grid: 0.5, 0.2, 0.1, "
                   "0.05) [default: 0.1].")
@click.option("--two-stage", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="--method sklr: re-solve on the support at this fraction of λ "
                   "(the paper's 0.1); not with sgd.")
@click.option("--mfista-scaling", type=click.Choice(["min", "hessian"]), default=None,
              help="--method sklr --solver mfista: the paper's scaling (7) (min, "
                   "default) or (8) (hessian).")
@click.option("--seed", type=click.IntRange(min=0, max=2 ** 63 - 1), default=None,
              help="--method sklr: seed of Ω and b (recorded in the model), of the "
                   "median heuristic and of SGD-C [default: 0].")
@click.option("--r", "gsrfs_r", type=click.FloatRange(0, 2, min_open=True), default=None,
              help="--method gsrfs: exponent r of the ℓ2,r loss (small: robust to "
                   "outliers; 2: least squares) [default: 1].")
@click.option("--p", "gsrfs_p", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="--method gsrfs: exponent p of the ℓ2,p penalty (small: sparser; "
                   "below 1 nonconvex) [default: 0.5].")
@click.option("--lam", "gsrfs_lam", type=click.FloatRange(0, None, min_open=True),
              default=None,
              help="--method gsrfs: λ, absolute (not divided by the number of "
                   "rows) [default: 1].")
@click.option("--candidates", "gsrfs_candidates", type=CandidatesType(), default=None,
              help="--method gsrfs: the two-stage mode for ultrahigh dimension: one "
                   "streamed scoring pass proposes this many candidates (an "
                   "integer, or 'auto': max(10 x --features, 1000)) and IRLS ranks "
                   "them, with KKT passes adding violators when p = 1 [default: IRLS "
                   "on every feature].")
@click.option("--stop", "gsrfs_stop", type=click.Choice(["stationarity", "objective"]),
              default=None,
              help="--method gsrfs: stop on the stationarity certificate (relative "
                   "gradient over the nonzero rows <= --tol, default 1e-3) or on the "
                   "paper's relative objective change (<= --tol, default 1e-4) "
                   "[default: stationarity].")
@click.option("--eps", "gsrfs_eps", type=click.FloatRange(0, None, min_open=True),
              default=None,
              help="--method gsrfs: the smoothing ε of the loss and the penalty "
                   "[default: 1e-10 x the mean squared target row (loss), "
                   "(1e-12 x the largest ridge row)² (penalty)].")
@click.option("--scale", "gsrfs_scale", type=click.Choice(["auto", "std", "none"]),
              default=None,
              help="--method gsrfs: std ranks on columns divided by their standard "
                   "deviation (the paper z-scores; the intercept does the centring, "
                   "so sparse data stay sparse); none: as stored; auto: std, none "
                   "with --candidates [default: auto].")
@_one_line_errors
def select_command(data_path, label, out, test_path, overwrite, method, **params):
    """Select features with FGM (or ℓ1-LR, MSLR) or fit sparse kernel LR; write the model as JSON."""
    from ultrafs.locks import folder_lock
    from ultrafs.outputs import check_output_dir, check_output_file
    from ultrafs.store import open_store

    gsrfs = {name: params.pop(name) for name in _GSRFS_ONLY}
    if method != "gsrfs":
        for name in _GSRFS_ONLY:
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} applies to --method gsrfs")
    else:
        for name in _NOT_GSRFS:
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} does not apply to "
                                       "--method gsrfs")
        return _select_gsrfs(data_path, label, out, test_path, overwrite, gsrfs, params)
    l1 = {name: params.pop(name) for name in _L1_ONLY}
    mslr = {name: params.pop(name) for name in _MSLR_ONLY}
    sklr = {name: params.pop(name) for name in _SKLR_ONLY}
    if method != "sklr":
        for name in _SKLR_ONLY:
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} applies to --method sklr")
    else:
        for name in _L1_ONLY + _MSLR_ONLY:
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} does not apply to "
                                       "--method sklr")
        return _select_sklr(data_path, label, out, test_path, overwrite, sklr, params)
    if method == "l1":
        for name in _MSLR_ONLY:
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} applies to --method mslr")
        return _select_l1(data_path, label, out, test_path, overwrite, l1, params)
    for name in _L1_ONLY:
        if _given(name):
            raise click.UsageError(f"{_option_text(name)} applies to --method l1")
    if method == "mslr":
        return _select_mslr(data_path, label, out, test_path, overwrite, mslr, params)
    for name in _MSLR_ONLY:
        if _given(name):
            raise click.UsageError(f"{_option_text(name)} applies to --method mslr")
    _check_option_pairs(params)
    started = time.perf_counter()
    out, summary = _model_output(out, data_path, overwrite)
    check_output_file(out, "--out", [("--data store", data_path),
                                     ("--test store", test_path),
                                     ("--checkpoint folder", params["checkpoint"])])
    lock = contextlib.nullcontext()
    if params["checkpoint"] is not None:
        check_output_dir(params["checkpoint"], "--checkpoint",
                         [("--data store", data_path)])
        lock = folder_lock(params["checkpoint"], "checkpoint folder")
    store = open_store(_data_path(data_path), label=label)
    test_store = None
    if test_path is not None:
        test_store = open_store(_data_path(test_path), label=label)
    fit_store, held_out = store, None
    if params["validation_fraction"] is not None and params["C"] != "auto":
        fit_store, held_out = _held_out_split(store, params.pop("validation_fraction"),
                                              params["split_seed"])
        params["validation_fraction"] = None
    with lock:
        model = _run_select(fit_store, command=" ".join(["ultrafs"] + sys.argv[1:]),
                            **params)
        scores = _held_out_scores(model, held_out, test_store, test_path)
        _emit_json(model.to_dict(), out)
    lines = _select_summary(model, store, scores, out, time.perf_counter() - started)
    if summary:
        width = max(len(name) for name, _ in lines) + 2
        click.echo("\n".join(f"{name:<{width}}{text}" for name, text in lines))
    else:   # the JSON went to stdout or a file: the scores, one line each
        for name, text in lines:
            if name.endswith(("accuracy", "RMSE")):
                click.echo(f"{name}: {text}", err=True)


def _model_output(out, data_path, overwrite):
    """Where ``select`` writes its model and whether it prints a summary:
    ``--out``; else on a terminal NAME.model.json (and the summary), else
    stdout (``-``)."""
    summary = out is None and _stdout_is_terminal()
    if out is None:
        out = _default_model_path(data_path, overwrite) if summary else "-"
    return out, summary or (_stdout_is_terminal() and out != "-")


def _select_inputs(data_path, label, out, test_path, overwrite, params):
    """What ``select --method l1|mslr`` open before fitting: the output (and
    whether a summary is printed), the stores, and the held-out split of
    ``--validation-fraction``."""
    from ultrafs.outputs import check_output_file
    from ultrafs.store import open_store

    out, summary = _model_output(out, data_path, overwrite)
    check_output_file(out, "--out", [("--data store", data_path),
                                     ("--test store", test_path)])
    store = open_store(_data_path(data_path), label=label)
    test_store = None
    if test_path is not None:
        test_store = open_store(_data_path(test_path), label=label)
    fit_store, held_out = store, None
    if params["validation_fraction"] is not None:
        fit_store, held_out = _held_out_split(store, params["validation_fraction"],
                                              params["split_seed"])
    return out, summary, store, test_store, fit_store, held_out


def _print_summary(lines, scores, out, summary, started):
    """The scores, time and model path after ``lines``: as a table on a
    terminal, else the accuracies alone on stderr."""
    for name, record in scores.items():
        where = record.get("data", "held-out rows")
        if "accuracy" in record:
            lines.append((f"{name.replace('_', '-')} accuracy",
                          f"{record['accuracy']:.4f} on {where}"))
        else:
            lines.append((f"{name.replace('_', '-')} RMSE",
                          f"{record['rmse']:.6g} (R² {record['r2']:.4f}) on {where}"))
    lines.append(("time", format_seconds(time.perf_counter() - started)))
    if out != "-":
        lines.append(("model", os.fspath(out)))
    if summary:
        width = max(len(name) for name, _ in lines) + 2
        click.echo("\n".join(f"{name:<{width}}{text}" for name, text in lines))
    else:
        for name, text in lines:
            if name.endswith(("accuracy", "RMSE")):
                click.echo(f"{name}: {text}", err=True)


def _select_l1(data_path, label, out, test_path, overwrite, l1, params):
    """``select --method l1``: the ℓ1-LR model with --features nonzero weights."""
    from ultrafs.api import select_l1

    for name in _FGM_ONLY:
        if _given(name):
            raise click.UsageError(f"{_option_text(name)} does not apply to --method l1")
    if l1["features"] is None:
        raise click.UsageError("--method l1 needs --features K")
    started = time.perf_counter()
    out, summary, store, test_store, fit_store, held_out = _select_inputs(
        data_path, label, out, test_path, overwrite, params)
    with _scheduler_for_run(params["scheduler"], params["connect_timeout"],
                            params["worker_timeout"]) as dask_scheduler:
        model = select_l1(
            fit_store, features=l1["features"], screening=l1["screening"],
            sequential=not l1["basic"], n_lambdas=l1["n_lambdas"],
            lambda_min_ratio=l1["lambda_min_ratio"],
            lambda_max_ratio=l1["lambda_max_ratio"], block_size=params["block_size"],
            scheduler=dask_scheduler, num_workers=params["workers"],
            command=" ".join(["ultrafs"] + sys.argv[1:]))
    scores = _held_out_scores(model, held_out, test_store, test_path)
    _emit_json(model.to_dict(), out)
    p = model.params
    lines = [("features selected", f"{len(model.features):,} with a nonzero weight "
              f"(--features {l1['features']}), among {store.n_features:,} columns of "
              f"{store.n_samples:,} rows"),
             ("λ", f"{p['lambda']:.6g} = {p['lambda_ratio']:.4g} λ_max "
              f"(scikit-learn C = {p['C']:.6g})"),
             ("screening", f"{p['screening']} ({'sequential' if p['sequential'] else 'basic'}); "
              f"{sum(r['kkt_violations_found'] for r in model.history)} KKT "
              "violators re-added along the path")]
    _print_summary(lines, scores, out, summary, started)


def _select_mslr(data_path, label, out, test_path, overwrite, mslr, params):
    """``select --method mslr``: minimax sparse LR, retrained by ℓ2-LR."""
    from ultrafs.api import select_mslr

    for name in _NOT_MSLR:
        if _given(name):
            raise click.UsageError(f"{_option_text(name)} does not apply to --method mslr")
    if params["C"] == "auto":
        raise click.UsageError("--method mslr takes --C as a number or 'scale' (the "
                               "retraining's C can be chosen: --retrain-C auto)")
    if mslr["no_retrain"] and mslr["retrain_C"] is not None:
        raise click.UsageError("--retrain-C and --no-retrain exclude each other")
    _check_option_pairs(params, fgm=False)
    started = time.perf_counter()
    out, summary, store, test_store, fit_store, held_out = _select_inputs(
        data_path, label, out, test_path, overwrite, params)
    show = _progress_enabled(params["progress"])

    def report(record):
        if show:
            click.echo(
                f"iteration {record['iteration']}: {record['n_features']:,} features in "
                f"{record['n_constraints']} constraints, P(v) {record['objective']:.6g} "
                f"(relative gap {record['rel_gap']:.2g}, q {record['q']:.3g}, "
                f"{record['sweeps']:,} sweeps), scoring "
                f"{format_seconds(record['score_seconds'])}, solving "
                f"{format_seconds(record['solve_seconds'])}", err=True)

    C = 10.0 if not _given("C") else params["C"]
    with _scheduler_for_run(params["scheduler"], params["connect_timeout"],
                            params["worker_timeout"]) as dask_scheduler:
        model = select_mslr(
            fit_store, B=params["B"], C=C, max_iter=params["max_iter"],
            tol=params["tol"], retrain=not mslr["no_retrain"],
            retrain_C=5.0 if mslr["retrain_C"] is None else mslr["retrain_C"],
            retrain_intercept=not params["no_intercept"], poly=int(params["poly"]),
            gamma=params["gamma"], coef0=params["coef0"],
            block_size=params["block_size"], scheduler=dask_scheduler,
            num_workers=params["workers"], callback=report, progress=show,
            seed=params["split_seed"], command=" ".join(["ultrafs"] + sys.argv[1:]))
    scores = _held_out_scores(model, held_out, test_store, test_path)
    _emit_json(model.to_dict(), out)
    p = model.params
    last = model.history[-1] if model.history else {}
    lines = [("features selected",
              f"{len(model.features):,} of {p['B'] * p['max_iter']:,} (--B {p['B']} x "
              f"--max-iter {p['max_iter']}) in {len(p['constraints'])} constraints, "
              f"{p['n_active']:,} in constraints of weight > 1e-6; among "
              f"{store.n_features:,} columns of {store.n_samples:,} rows"),
             ("C", f"{p['C']:g} ({p.get('C_rule', 'given')})")]
    if last:
        lines.append(("subproblem", f"P(v) {last['objective']:.6g}, relative duality "
                      f"gap {last['rel_gap']:.2g} "
                      f"({'certified' if last['certified'] else 'NOT certified'})"))
    lines.append(("stopped because", model.stop_reason))
    if model.refit is not None:
        chosen = p.get("retrain_validation")
        lines.append(("retrained", f"ℓ2-LR, C = {p['refit_C']:g}"
                      + (" (chosen on held-out rows)" if chosen else "")
                      + (", with an intercept" if p.get("fit_intercept") else
                         ", no intercept") + "; it predicts"))
    _print_summary(lines, scores, out, summary, started)


def _select_sklr(data_path, label, out, test_path, overwrite, sklr, params):
    """``select --method sklr``: sparse kernel logistic regression (seed 001)."""
    from ultrafs.api import select_sklr

    for name in _NOT_SKLR:
        if _given(name):
            raise click.UsageError(f"{_option_text(name)} does not apply to --method sklr")
    basis = sklr["basis"] or "rff"
    if basis == "rbf" and sklr["n_components"] is not None:
        raise click.UsageError("--n-components applies to --basis rff")
    solver = sklr["solver"] or "cgd"
    if sklr["mfista_scaling"] is not None and solver != "mfista":
        raise click.UsageError("--mfista-scaling applies to --solver mfista")
    if sklr["two_stage"] is not None and solver == "sgd":
        raise click.UsageError("--two-stage runs with --solver fista, mfista or cgd")
    started = time.perf_counter()
    out, summary, store, test_store, fit_store, held_out = _select_inputs(
        data_path, label, out, test_path, overwrite, params)
    model = select_sklr(
        fit_store, basis=basis,
        n_components=1000 if sklr["n_components"] is None else sklr["n_components"],
        sigma=sklr["sigma"], seed=sklr["seed"] or 0, solver=solver,
        lam_ratio=0.1 if sklr["lam_ratio"] is None else sklr["lam_ratio"],
        two_stage=sklr["two_stage"], fit_intercept=not params["no_intercept"],
        tol=params["tol"] if _given("tol") else None,
        max_iter=params["max_iter"] if _given("max_iter") else None,
        scaling=sklr["mfista_scaling"], command=" ".join(["ultrafs"] + sys.argv[1:]),
        progress=_progress_enabled(params["progress"]))
    scores = _held_out_scores(model, held_out, test_store, test_path)
    _emit_json(model.to_dict(), out)
    p = model.params
    what = (f"{p['n_basis']:,} random Fourier features (seed {p['seed']})"
            if basis == "rff" else f"{p['n_basis']:,} RBF kernel columns (training rows)")
    lines = [("basis", f"{what}, σ = {p['sigma']:.6g}, on {store.n_features:,} "
              f"columns of {store.n_samples:,} rows"),
             ("nonzero weights", f"{p['nnz']:,} ({p['nnz_pct']:.2f}% of the basis)"),
             ("λ", f"{p['lam']:.6g} = {p['lam_ratio']:.4g} λ_max"
              + (f"; stage 2 on the support at λ = {p['lam2']:.6g}"
                 if p.get("lam2") is not None else "")),
             ("solver", f"{solver}: {p['n_iter']:,} "
              f"{'epochs' if solver == 'sgd' else 'iterations'}, relative duality "
              f"gap {p['rel_gap']:.2g} "
              f"({'certified' if p['converged'] else 'NOT certified'} at {p['tol']:g})"),
             ("stopped because", model.stop_reason)]
    _print_summary(lines, scores, out, summary, started)


def _select_gsrfs(data_path, label, out, test_path, overwrite, gsrfs, params):
    """``select --method gsrfs``: GSR-FS (seed 002), IRLS ranking of the features."""
    from ultrafs.api import select_gsrfs

    started = time.perf_counter()
    out, summary, store, test_store, fit_store, held_out = _select_inputs(
        data_path, label, out, test_path, overwrite, params)
    features = params["features"] if params["features"] is not None else 50
    with _scheduler_for_run(params["scheduler"], params["connect_timeout"],
                            params["worker_timeout"]) as dask_scheduler:
        model = select_gsrfs(
            fit_store, features=features,
            r=1.0 if gsrfs["gsrfs_r"] is None else gsrfs["gsrfs_r"],
            p=0.5 if gsrfs["gsrfs_p"] is None else gsrfs["gsrfs_p"],
            lam=1.0 if gsrfs["gsrfs_lam"] is None else gsrfs["gsrfs_lam"],
            fit_intercept=not params["no_intercept"], eps=gsrfs["gsrfs_eps"],
            tol=params["tol"] if _given("tol") else None,
            stop=gsrfs["gsrfs_stop"] or "stationarity",
            max_iter=params["max_iter"] if _given("max_iter") else None,
            candidates=gsrfs["gsrfs_candidates"], scale=gsrfs["gsrfs_scale"] or "auto",
            block_size=params["block_size"],
            scheduler=dask_scheduler, num_workers=params["workers"],
            command=" ".join(["ultrafs"] + sys.argv[1:]))
    scores = _held_out_scores(model, held_out, test_store, test_path)
    _emit_json(model.to_dict(), out)
    p = model.params
    targets = {"binary": "two classes (±1 codes, 2 columns)",
               "multiclass": f"{p['n_outputs']} classes (±1 codes)",
               "continuous": "real targets"}[model.target]
    lines = [("data", f"{store.n_samples:,} rows x {store.n_features:,} features, "
              f"{targets}"),
             ("problem", f"ℓ2,{p['r']:g} loss + λ ℓ2,{p['p']:g}^{p['p']:g} rows, "
              f"λ = {p['lam']:g}, " + ("with" if p["fit_intercept"] else "no")
              + " intercept, " + ("columns scaled to unit standard deviation"
                                  if p["scale"] == "std" else "columns as stored"))]
    if p.get("candidates") is not None:
        rounds = p["rounds"]
        lines.append(("two-stage", f"{p['candidates']:,} candidates of "
                      f"{store.n_features:,} after {len(rounds)} round(s)"
                      + (f"; largest KKT ratio outside "
                         f"{rounds[-1]['max_kkt_outside']:.3g}"
                         if "max_kkt_outside" in rounds[-1] else "")))
    lines += [("IRLS", f"{p['solve']} solve, {p['n_iter']:,} iterations, relative "
               f"stationarity {p['stationarity']:.2g} "
               f"({'converged' if p['converged'] else 'NOT converged'})"),
              ("stopped because", model.stop_reason),
              ("selected", f"{len(model.features):,} features (of {p['n_ranked']:,} "
               f"with a nonzero row): " + ", ".join(
                   str(f) for f in model.feature_labels()[:10])
               + (", ..." if len(model.features) > 10 else ""))]
    _print_summary(lines, scores, out, summary, started)


@main.command("path")
@click.option("--data", "data_path", required=True, type=click.Path(),
              help="Training data: a store or a LIBSVM file (ingested once into "
                   "the cache, as for select).")
@LABEL_OPTION
@click.option("--method", type=click.Choice(["l1"]), default="l1", show_default=True,
              help="l1: ℓ1-logistic regression with an unpenalised intercept.")
@_with_options(_l1_path_options())
@click.option("--tol", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=1e-6, show_default=True,
              help="Relative KKT tolerance of every model on the path.")
@_with_options(_run_options())
@click.option("--out", default="-", show_default=True,
              help="Path file (JSON) to write, or - for stdout.")
@click.option("--progress/--no-progress", default=None,
              help="One line per λ on stderr (default: when a terminal).")
@_one_line_errors
def path_command(data_path, label, method, screening, basic, n_lambdas,
                 lambda_min_ratio, lambda_max_ratio, tol, block_size, scheduler,
                 workers, connect_timeout, worker_timeout, out, progress):
    """Solve the ℓ1-LR path with safe screening and write it as JSON.

    Per λ: λ, λ/λ_max, nonzeros, objective, features kept by screening,
    rejection ratio, KKT violators found and left (always 0), seconds of
    screening / solving / the KKT pass, and the model's features and weights.
    """
    from ultrafs.api import l1_path, path_to_dict
    from ultrafs.outputs import check_output_file
    from ultrafs.store import open_store

    check_output_file(out, "--out", [("--data store", data_path)])
    store = open_store(_data_path(data_path), label=label)
    show = _progress_enabled(progress)

    def report(record):
        if show:
            click.echo(f"λ/λ_max {record['ratio']:.3f}: {record['nnz']:,} nonzero, "
                       f"{record['kept']:,} kept of {store.n_features:,}, "
                       f"objective {record['objective']:.6g}, "
                       f"{record['kkt_violations_found']} violators re-added, "
                       f"{format_seconds(record['seconds_solving'] + record['seconds_kkt'])}",
                       err=True)

    with _scheduler_for_run(scheduler, connect_timeout, worker_timeout) as dask_scheduler:
        path = l1_path(store, screening=screening, sequential=not basic,
                       n_lambdas=n_lambdas, lambda_min_ratio=lambda_min_ratio,
                       lambda_max_ratio=lambda_max_ratio, tol=tol,
                       block_size=block_size, scheduler=dask_scheduler,
                       num_workers=workers, callback=report)
    _emit_json(path_to_dict(path, store, command=" ".join(["ultrafs"] + sys.argv[1:])),
               out)


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


def _held_out_split(store, fraction, seed):
    """The training rows of ``store`` and the held-out ones (stratified, seeded).

    The split is :func:`ultrafs.methods.validation.stratified_split`, the
    one ``--C auto`` chooses C on; real targets (GSR-FS) are split at
    random (seeded).
    """
    import numpy as np

    from ultrafs.api import _classification_targets
    from ultrafs.methods.validation import stratified_split
    from ultrafs.store.rows import RowSubsetStore

    if getattr(store, "target_type", None) == "continuous":
        # real targets (GSR-FS): nothing to stratify, a seeded random split
        n = int(store.n_samples)
        rows = np.random.default_rng(seed).permutation(n)
        k = min(max(1, int(round(fraction * n))), n - 1)
        train, held = np.sort(rows[k:]), np.sort(rows[:k])
        how = "random"
    else:
        y, _ = _classification_targets(store)
        train, held = stratified_split(y, fraction, seed)
        how = "stratified"
    click.echo(f"fitting on {len(train):,} of the {store.n_samples:,} rows; {len(held):,} "
               f"({fraction:g}, {how}, --split-seed {seed}) held out to score "
               "the model", err=True)
    return RowSubsetStore(store, train), {"rows": held, "fraction": float(fraction),
                                          "seed": int(seed), "n_train": len(train),
                                          "store": RowSubsetStore(store, held)}


def _scores_of(metrics):
    """What a held-out record keeps of an evaluation: accuracy and AUC, or
    RMSE and R² for a continuous target."""
    if "accuracy" in metrics:
        return {"accuracy": metrics["accuracy"], "auc": metrics.get("auc")}
    return {"rmse": metrics["rmse"], "r2": metrics["r2"]}


def _held_out_scores(model, held_out, test_store, test_path):
    """Score the model on the held-out rows and the --test store; record both."""
    scores = {}
    if held_out is not None:
        metrics = model.evaluate_store(held_out["store"])
        record = {"method": "holdout", "fraction": held_out["fraction"],
                  "seed": held_out["seed"], "n_train": held_out["n_train"],
                  "n_held_out": int(len(held_out["rows"])), **_scores_of(metrics)}
        model.params["held_out"] = record
        scores["held_out"] = record
    if test_store is not None:
        metrics = model.evaluate_store(test_store)
        record = {"data": os.fspath(test_path), "n_samples": metrics["n_samples"],
                  **_scores_of(metrics)}
        model.params["test"] = record
        scores["test"] = record
    return scores


def _plain_stop_reason(reason):
    """FGM's stop reason in plain words."""
    match = re.match(r"holds the budget of B x max_iter = (\d+)", reason)
    if match:
        return f"reached its budget of {int(match.group(1)):,} features (--B x --max-iter)"
    match = re.match(r"relative objective decrease (\S+) <= tol=(\S+)", reason)
    if match:
        return (f"converged: the last iteration improved the objective by "
                f"{float(match.group(1)):.2%}, under --tol {match.group(2)}")
    if reason.startswith("no candidate feature"):
        return "no other feature would improve the model"
    match = re.match(r"reached (\d+) outer iterations.*holding (\d+) of the (\d+)", reason)
    if match:
        return (f"stopped after {match.group(1)} iterations (3 x --max-iter) with "
                f"{match.group(2)} of its {match.group(3)} budgeted features")
    return reason


def _select_summary(model, store, scores, out, seconds):
    """What a person reads after ``select``: ``(name, text)`` pairs."""
    import numpy as np

    params = model.params
    n_features = len(model.features)
    budget = params.get("B", 0) * params.get("max_iter", 0)
    coef = np.asarray(model.coef)
    lines = []

    def add(name, text):
        lines.append((name, text))

    space = params.get("space")
    if space in ("groups", "tree") or model.feature_space.get("kind") in (
            "hik", "chi2", "intersection", "js"):
        unit = {"groups": "groups", "tree": "nodes"}.get(space, "kernels (features)")
        shown = ", ".join(str(u) for u in model.selected_groups[:10])
        more = len(model.selected_groups) - 10
        add(f"{unit} selected", f"{len(model.selected_groups):,} of {budget:,} "
            f"(--B {params.get('B')} x --max-iter {params.get('max_iter')}) among "
            f"{params.get('n_candidates', 0):,}: {shown}"
            + (f" and {more:,} more" if more > 0 else ""))
        add("columns", f"{n_features:,} with a nonzero weight, of "
            f"{store.n_features:,} columns of {store.n_samples:,} rows")
    else:
        add("features selected", f"{n_features:,} of {budget:,} "
            f"(--B {params.get('B')} x --max-iter {params.get('max_iter')}), among "
            f"{store.n_features:,} columns of {store.n_samples:,} rows")
    if coef.ndim == 2 and coef.shape[1] > 1:
        add("nonzero weights", f"{int(np.count_nonzero(coef)):,} of {coef.size:,} "
            f"({n_features:,} features x {coef.shape[1]} classes)")
    else:
        add("nonzero weights", f"{int(np.count_nonzero(coef)):,} of {coef.size:,}")
    if model.history:
        add("objective", f"{model.history[-1]['objective']:.6g} after "
            f"{len(model.history)} iteration{'s' * (len(model.history) != 1)}")
    add("stopped because", _plain_stop_reason(model.stop_reason or ""))
    add("C", f"{params.get('C', 0):g} ({params.get('C_rule', 'given')})")
    validation = params.get("validation")
    if validation:
        from ultrafs.methods.validation import chosen_point

        best = chosen_point(validation)
        if best is not None and "accuracy" in best:
            add("validation accuracy", f"{best['accuracy']:.4f} at the chosen C "
                f"({validation.get('method')}; the model is then fitted on all rows)")
    if model.refit is not None:
        add("predicts with", "the refit" if model.predictor == "refit" else
            "FGM's own weights" + (" (they scored better than the refit on the "
                                   "held-out rows)" if validation else ""))
    held = scores.get("held_out")
    if held:
        add("held-out accuracy", f"{held['accuracy']:.4f} on {held['n_held_out']:,} "
            f"rows ({held['fraction']:g} of the data, stratified); fitted on the "
            f"other {held['n_train']:,}")
    test = scores.get("test")
    if test:
        add("test accuracy", f"{test['accuracy']:.4f} on {test['n_samples']:,} rows "
            f"of {test['data']}")
    add("time", format_seconds(seconds))
    if out != "-":
        add("model", os.fspath(out))
    return lines


def _write_predictions(model, decision, out, output_format):
    """Write row numbers, predicted labels, decision values (and probabilities).

    Columns: ``row`` (0-based row number in the data), ``predicted`` (the
    predicted class value), then ``decision`` (and ``probability`` of the
    positive class, for losses that give one).  K-class models write one
    ``decision_<class>`` (and ``probability_<class>``) column per class,
    named by the class value.  TSV rows, or one JSON object of arrays.
    """
    import numpy as np

    columns = {"row": np.arange(len(decision), dtype=np.int64),
               "predicted": model.predict_from_decision(decision)}
    if model.n_outputs == 1:
        columns["decision"] = decision
        if model.probabilistic:
            columns["probability"] = model.proba_from_decision(decision)
    else:
        names = [f"{c:g}" for c in model.classes]
        for k, name in enumerate(names):
            columns[f"decision_{name}"] = decision[:, k]
        if model.probabilistic:
            proba = model.proba_from_decision(decision)
            for k, name in enumerate(names):
                columns[f"probability_{name}"] = proba[:, k]
    if output_format == "json":
        text = json.dumps({name: values.tolist() for name, values in columns.items()})
        text += "\n"
    else:
        lines = ["\t".join(columns)]
        lines += ["\t".join([str(values[0])] + [f"{v:.10g}" for v in values[1:]])
                  for values in zip(*columns.values())]
        text = "\n".join(lines) + "\n"
    if out in (None, "-"):
        click.echo(text, nl=False)
    else:
        from ultrafs.atomic import write_text_atomic

        write_text_atomic(text, out)


@main.command()
@click.option("--model", "model_path", required=True, type=click.Path())
@click.option("--data", "data_path", required=True, type=click.Path(),
              help="Store, or LIBSVM file (ingested once into the cache and "
                   "reused); labels not needed.")
@LABEL_OPTION
@click.option("--out", default="-", show_default=True,
              help="Output file, or - for stdout.")
@click.option("--format", "output_format", type=click.Choice(["tsv", "json"]),
              default="tsv", show_default=True,
              help="TSV rows (row, predicted, decision[, probability]; one "
                   "decision_CLASS and probability_CLASS per class for K classes) "
                   "or one JSON object of arrays.")
@_one_line_errors
@_check_output("out", "--out", {"--model file": "model_path", "--data store": "data_path"})
def predict(model_path, data_path, label, out, output_format):
    """Predict every row of a store with a model file."""
    from ultrafs.store import open_store

    from ultrafs.model import Model

    model = Model.load(model_path)
    store = open_store(_data_path(data_path, target="none"), label=label, labels=False)
    _write_predictions(model, model.decision_function_store(store), out,
                       output_format)


@main.command()
@click.option("--model", "model_path", required=True, type=click.Path())
@click.option("--data", "data_path", required=True, type=click.Path(),
              help="Labelled store, or LIBSVM file (ingested once into the "
                   "cache and reused).")
@LABEL_OPTION
@_one_line_errors
def evaluate(model_path, data_path, label):
    """Print accuracy, AUC and counts of a model on a labelled store (JSON)."""
    from ultrafs.store import open_store

    from ultrafs.model import Model

    model = Model.load(model_path)
    click.echo(json.dumps(model.evaluate_store(open_store(_data_path(data_path),
                                                          label=label))))


@main.command("report")
@click.argument("model_path", metavar="MODEL", type=click.Path())
@click.option("--test", "test_path", default=None, type=click.Path(),
              help="Labelled store or LIBSVM file: adds test accuracy vs number "
                   "of features.")
@click.option("--train", "train_path", default=None, type=click.Path(),
              help="Training store or LIBSVM file (with --test): adds, per prefix of k "
                   "iterations, the l2 refit of its features and scikit-learn's "
                   "l1-LR at the same number of features (the l1-LR baseline "
                   "loads this store in memory).")
@LABEL_OPTION
@click.option("--l1-max-nnz", type=click.IntRange(min=0), default=None,
              help="Refuse a --train store holding more values than this "
                   "(default: 200,000,000).")
@click.option("--top", type=click.IntRange(min=0, max=MAX_COUNT), default=30, show_default=True,
              help="Features in the top-features figure and table.")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write; the PNGs go next to it (STEM_*.png).")
@_one_line_errors
@_check_output("out", "--out", {"model file": "model_path", "--test store": "test_path",
                                "--train store": "train_path"})
def report_command(model_path, test_path, train_path, label, l1_max_nnz, top, out):
    """Write an HTML run report (and PNG figures) for a model file."""
    from ultrafs.store import open_store

    from ultrafs.model import Model
    from ultrafs.report import build_report

    if train_path is not None and test_path is None:
        raise click.UsageError("--train needs --test (the curves are measured on "
                               "the test store)")
    model = Model.load(model_path)
    test_store = (None if test_path is None
                  else open_store(_data_path(test_path), label=label))
    train_store = (None if train_path is None
                   else open_store(_data_path(train_path), label=label))
    result = build_report(model, out, test_store=test_store, train_store=train_store,
                          top=top, l1_max_nnz=l1_max_nnz)
    data = result["data"]
    summary = {"html": result["html"], "figures": result["figures"]}
    for key, curve in (("test", "accuracy"), ("test_refit", "accuracy_refit"),
                       ("test_l1", "accuracy_l1")):
        if data[curve]:
            summary[key] = data[curve][-1]
    if data["accuracy_notes"]:
        summary["notes"] = data["accuracy_notes"]
    click.echo(json.dumps(summary, indent=1))


@main.command()
@click.option("--dir", "directory", type=click.Path(file_okay=False),
              default="ultrafs-demo", show_default=True,
              help="Where the generated stores and the model go.")
@click.option("--n-samples", type=click.IntRange(min=10, max=MAX_COUNT), default=4096, show_default=True)
@click.option("--n-features", type=click.IntRange(min=10, max=MAX_COUNT), default=4096, show_default=True)
@click.option("--n-relevant", type=click.IntRange(min=1, max=MAX_COUNT), default=300, show_default=True)
@click.option("--seed", type=click.IntRange(min=0, max=2**63 - 1), default=0,
              show_default=True)
@_fgm_options
@_one_line_errors
def demo(directory, n_samples, n_features, n_relevant, seed, **params):
    """Generate the paper's §8.2 problem into Zarr stores and run select.

    Writes DIR/train.zarr and DIR/test.zarr (4096 x 4096, 300 relevant
    features, y = sign(Xw), 4096 test rows), runs FGM on the train store
    with the local threaded scheduler, prints the selected features, the
    objective per iteration and the held-out accuracy, and writes
    DIR/model.json.
    """
    from ultrafs.atomic import write_json_atomic
    from ultrafs.store import open_store
    from ultrafs.store.writers.zarr_writer import write_store
    from ultrafs.datasets.planted import make_planted_problem

    if params["progress"] is None:
        params["progress"] = True
    if n_relevant > n_features:
        raise click.BadParameter("--n-relevant exceeds --n-features")
    train_path = os.path.join(directory, "train.zarr")
    test_path = os.path.join(directory, "test.zarr")
    problem = make_planted_problem(n_samples, n_features, n_relevant,
                                   n_test=n_samples, seed=seed)
    os.makedirs(directory, exist_ok=True)
    click.echo(f"writing {train_path} and {test_path} "
               f"({n_samples} x {n_features}, {n_relevant} relevant features)",
               err=True)
    write_store(train_path, problem.X_train, problem.y_train, overwrite=True,
                command="ultrafs demo")
    write_store(test_path, problem.X_test, problem.y_test, overwrite=True,
                command="ultrafs demo")
    model = _run_select(open_store(train_path), command="ultrafs demo", **params)
    model_path = os.path.join(directory, "model.json")
    write_json_atomic(model.to_dict(), model_path)
    metrics = model.evaluate_store(open_store(test_path))
    found = len(set(model.features) & set(int(j) for j in problem.relevant))
    seconds = {phase: round(sum(h[f"{phase}_seconds"] for h in model.history), 3)
               for phase in ("score", "materialize", "solve")}
    # the headline figures first; the long list of ids last
    summary = {
        "true_features_recovered": found,
        "n_relevant": n_relevant,
        "n_selected": len(model.features),
        "test_accuracy": metrics["accuracy"],
        "test_auc": metrics["auc"],
        "seconds": seconds,
        "model": model_path,
        "objective_per_iteration": [h["objective"] for h in model.history],
        "selected_features": model.features,
    }
    if _stdout_is_terminal():
        click.echo("\n".join([
            f"recovered {found} of the {n_relevant} relevant features "
            f"({len(model.features)} selected, from {n_features:,} columns)",
            f"test accuracy {metrics['accuracy']:.4f}, AUC {metrics['auc']:.4f} "
            f"on {metrics['n_samples']:,} held-out rows",
            f"objective {model.history[-1]['objective']:.6g} after "
            f"{len(model.history)} iterations; stopped because "
            f"{_plain_stop_reason(model.stop_reason or '')}",
            f"time: scoring {format_seconds(seconds['score'])}, solving "
            f"{format_seconds(seconds['solve'])}",
            f"model: {model_path} (the selected feature ids are in it)"]))
    else:
        click.echo(json.dumps(summary))


if __name__ == "__main__":  # pragma: no cover
    main()
