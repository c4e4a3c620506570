"""``ultrafs select``: any registered method on a store; writes the model as JSON.

The command is generated from the method registry: ``--method M`` picks
the method (FGM by default), and the options are the common ones (data,
test, output, the run's) plus M's parameters (:mod:`ultrafs.cli.method_options`);
``ultrafs select --method M --help`` lists only those.  The other methods'
options are hidden and refused with a line naming their method.
"""

from __future__ import annotations

import contextlib
import sys
import time

import click

from ultrafs.cli.data import held_out_scores, held_out_split, resolve_data_path
from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.method_options import (given_params, method_options, old_options,
                                        other_options)
from ultrafs.cli.options import LABEL_OPTION, STORAGE_OPTION, run_options
from ultrafs.cli.output import emit_json, model_output
from ultrafs.cli.run import run_method
from ultrafs.cli.summary import print_summary
from ultrafs.cli.terminal import load_engine, progress_enabled
from ultrafs.cli.types import FiniteFloatRange, SizeType

__all__ = ["select_command", "DEFAULT_METHOD"]

DEFAULT_METHOD = "fgm"

#: the run's options, by the execution feature of a method that uses them
RUN_FEATURES = {"passes": ("block_size", "scheduler", "workers", "connect_timeout",
                           "worker_timeout"),
                "progress": ("progress",), "checkpoint": ("checkpoint", "resume"),
                "memory_limit": ("memory_limit",)}


def _objects(decorators):
    """The click parameters of a list of ``click.option`` decorators."""
    def holder():
        pass
    for decorate in decorators:
        decorate(holder)
    return list(holder.__click_params__)


def _common_options(method_names):
    from ultrafs.methods.registry import methods

    summaries = " ".join(m.summary for m in methods())
    return _objects([
        click.option("--data", "data_path", required=True, type=click.Path(),
                     help="Training data: a store (Zarr or Parquet, see `ultrafs "
                          "ingest`) or a LIBSVM file (plain, .gz, .bz2, .xz), ingested "
                          "once into the cache ($ULTRAFS_CACHE_DIR, else "
                          "~/.cache/ultrafs) and reused."),
        LABEL_OPTION,
        STORAGE_OPTION,
        click.option("--method", type=click.Choice(method_names), default=DEFAULT_METHOD,
                     show_default=True,
                     help=summaries + " `ultrafs select --method M --help` lists M's "
                          "options."),
        click.option("--test", "test_path", default=None, type=click.Path(),
                     help="Labelled store or LIBSVM file: the model's accuracy on it "
                          "is printed and recorded (params.test)."),
        click.option("--out", default=None,
                     help="Model file to write, or - for stdout. Default: on a terminal "
                          "NAME.model.json in the current folder (NAME: the data's file "
                          "name) and a short summary; otherwise the JSON on stdout."),
        click.option("--overwrite", is_flag=True,
                     help="Replace an existing NAME.model.json (the default --out on a "
                          "terminal)."),
    ])


def _hold_out_option():
    return _objects([click.option(
        "--validation-fraction", type=FiniteFloatRange(0, 1, min_open=True,
                                                      max_open=True), default=None,
        help="Share of the rows held out (stratified, seeded by --seed where the "
             "method has one): the model is fitted on the other rows and its "
             "accuracy on the held-out ones is printed and recorded "
             "(params.held_out).")])[0]


def _run_options():
    """The run's options by name."""
    options = _objects(run_options() + [
        click.option("--progress/--no-progress", default=None,
                     help="Per-iteration progress on stderr (default: when a terminal)."),
        click.option("--checkpoint", type=click.Path(file_okay=False), default=None,
                     help="Directory where the state is saved after every outer "
                          "iteration."),
        click.option("--resume", is_flag=True, default=None,
                     help="Continue from --checkpoint (same data and parameters)."),
        click.option("--memory-limit", type=SizeType(), default=None,
                     help="Memory the run may hold (e.g. 8GB): the loop stops before an "
                          "outer iteration whose projected peak would exceed it, "
                          "keeping the last certified model; the stop reason says so."),
    ])
    return {option.name: option for option in options}


class SelectCommand(click.Command):
    """``select`` with the options of the method named by ``--method``."""

    def parse_args(self, ctx, args):
        ctx.meta["ultrafs.method"] = _sniff_method(args)
        return super().parse_args(ctx, args)

    @property
    def params(self):
        """The options of the default method (``get_params`` picks ``--method``'s)."""
        return self.method_params(DEFAULT_METHOD)

    @params.setter
    def params(self, value):            # click.Command.__init__ sets it
        pass

    def get_help_option(self, ctx):
        """``--help`` (click's caches it by appending to ``params``, which
        is computed here)."""
        names = self.get_help_option_names(ctx)
        if not names or not self.add_help_option:
            return None
        # one option per spelling: invoked alone (tests), select has only
        # --help; under the group, also -h
        options = self.__dict__.setdefault("_help_options", {})
        if tuple(names) not in options:
            from click.decorators import help_option

            options[tuple(names)] = _objects([help_option(*names)])[0]
        return options[tuple(names)]

    def get_params(self, ctx):
        params = self.method_params(ctx.meta.get("ultrafs.method") or DEFAULT_METHOD)
        help_option = self.get_help_option(ctx)
        return params + ([help_option] if help_option is not None else [])

    def method_params(self, name):
        """The options of ``select --method name``: the common ones, the
        method's, the run's it uses, then the hidden others (made once per
        method and registry content: click compares them by identity while
        it parses)."""
        from ultrafs.methods.registry import method_names, methods

        if name not in method_names():
            name = DEFAULT_METHOD
        key = (name, tuple(id(m) for m in methods()))
        cache = self.__dict__.setdefault("_method_params", {})
        if key not in cache:
            cache.clear()
            cache[key] = _method_params(name)
        return cache[key]


def _method_params(name):
    """The options of ``select --method name`` (see ``SelectCommand``)."""
    from ultrafs.methods.registry import EXECUTION_ABSENT, get_method, method_names, methods

    method = get_method(name)
    common = _common_options(method_names())
    own = method_options(method)
    taken = {o.name for o in common + own}
    run = _run_options()
    shown_run = [run[n] for feature in method.execution
                 for n in RUN_FEATURES[feature]]
    hidden_run = []
    for feature, names in RUN_FEATURES.items():
        if feature in method.execution:
            continue
        for n in names:
            option = run[n]
            option.hidden = True
            option.applies_to = [m.name for m in methods() if feature in m.execution]
            option.absent = EXECUTION_ABSENT[feature]
            hidden_run.append(option)
    extra = [] if "validation_fraction" in taken else [_hold_out_option()]
    taken |= {o.name for o in shown_run + hidden_run + extra}
    others = other_options(method, methods(), taken)
    flags = {f for o in common + own + shown_run + hidden_run + extra + others
             for f in o.opts + o.secondary_opts}
    return (common + own + extra + shown_run + hidden_run + others
            + old_options(methods(), flags))


def _sniff_method(args):
    """The value of ``--method`` in ``args`` (None when absent)."""
    for i, arg in enumerate(args):
        if arg == "--method" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--method="):
            return arg.split("=", 1)[1]
    return None


@click.command("select", cls=SelectCommand,
               epilog="The options shown are those of --method (FGM by default); "
                      "`ultrafs select --method M --help` shows another method's.")
@one_line_errors
def select_command(data_path, label, storage_options, method, test_path, out, overwrite,
                   **values):
    """Select features with a registered method; write the model as JSON."""
    from ultrafs.locks import folder_lock
    from ultrafs.methods.registry import get_method
    from ultrafs.outputs import check_output_dir, check_output_file
    from ultrafs.store import open_store

    method = get_method(method)
    _refuse_other_methods_options()
    params = given_params(method, values)
    started = time.perf_counter()
    out, summary = model_output(out, data_path, overwrite)
    checkpoint = values.get("checkpoint")
    check_output_file(out, "--out", [("--data store", data_path),
                                     ("--test store", test_path),
                                     ("--checkpoint folder", checkpoint)])
    lock = contextlib.nullcontext()
    if checkpoint is not None:
        check_output_dir(checkpoint, "--checkpoint", [("--data store", data_path)])
        lock = folder_lock(checkpoint, "checkpoint folder")
    if values.get("resume") and checkpoint is None:
        raise click.UsageError("--resume continues from --checkpoint: it needs "
                               "--checkpoint")
    fraction = values.get("validation_fraction")
    if fraction is not None and params.get("C") != "auto":
        # a share of the rows held out to score the model (with --C auto,
        # FGM's validation_fraction chooses C instead)
        params.pop("validation_fraction", None)
    else:
        fraction = None
    _check_params(method, params)        # refuse bad parameters before any reading
    load_engine(progress_enabled(values.get("progress")))
    store = open_store(resolve_data_path(data_path, progress=values.get("progress")),
                       label=label, storage_options=storage_options)
    test_store = None
    if test_path is not None:
        test_store = open_store(resolve_data_path(test_path, progress=values.get("progress")),
                                label=label, storage_options=storage_options)
    fit_store, held_out = store, None
    if fraction is not None:
        fit_store, held_out = held_out_split(store, fraction, params.get("seed", 0))
    run = {name: values.get(name) for names in RUN_FEATURES.values() for name in names
           if values.get(name) is not None}
    with lock:
        model = run_method(method, fit_store, params,
                           command=" ".join(["ultrafs"] + sys.argv[1:]), **run)
        scores = held_out_scores(model, held_out, test_store, test_path)
        emit_json(model.to_dict(), out)
    lines = list(method.summary_lines(model, store)) if method.summary_lines else []
    print_summary(lines, scores, out, summary, started)


def _check_params(method, params):
    """The method's parameters, checked: a value out of its domain, or a
    conflict between them, is a usage error naming the options."""
    from ultrafs.cli.method_options import option_name
    from ultrafs.methods.params import SpelledParameterError, specs_of

    specs = specs_of(method.params)
    try:
        method.make_params(**params)
    except SpelledParameterError as exc:
        raise click.UsageError(exc.spelled(
            lambda name: option_name(name, specs[name][1]) if name in specs
            else name)) from None


def _refuse_other_methods_options():
    """Refuse, in one line, an option of another method that was given."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    for param in ctx.command.get_params(ctx):
        owners = getattr(param, "applies_to", None)
        if owners is None or param.name not in ctx.params:
            continue
        source = ctx.get_parameter_source(param.name)
        if source in (None, ParameterSource.DEFAULT) or ctx.params[param.name] is None:
            continue
        name = param.opts[0]
        if not owners:
            raise click.UsageError(f"{name} does not apply to --method "
                                   f"{ctx.params['method']}")
        method = ctx.params["method"]
        why = getattr(param, "absent", None)
        raise click.UsageError(f"{name} applies to --method {' or '.join(owners)}, not "
                               f"--method {method}" + (f" ({why.format(name=method)})"
                                                       if why else ""))
