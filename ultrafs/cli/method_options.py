"""Click options generated from a method's parameters.

Each field of a method's :class:`~ultrafs.methods.params.Params` becomes one
option: its name with dashes (or ``Spec.option``), a click type from its
kind and domain, its help with the default.  The option's click default is
None, so only the values given on the command line reach the method's
Params, whose defaults are the one source.  Options of the other methods
are kept hidden, and refused with a line naming the methods they apply
to; replaced spellings (``Spec.old``) are refused with the new one.
"""

from __future__ import annotations

import click

from ultrafs.cli.types import (MAX_COUNT, CGridType, ClassWeightType, CType,
                               FiniteFloatRange, loss_choice, poly_choice)
from ultrafs.methods.params import specs_of, value_text

__all__ = ["method_options", "option_name", "other_options", "old_options",
           "given_params", "NumberOrWords"]


class NumberOrWords(click.ParamType):
    """A number in a range, or one of a few words (``C="scale"``)."""

    def __init__(self, spec):
        self.spec = spec
        self.name = ("integer" if spec.kind == "int" else "number") + "".join(
            f"|{w}" for w in spec.words)

    def convert(self, value, param, ctx):
        from ultrafs.errors import ParameterError
        from ultrafs.methods.params import check_value

        if isinstance(value, str) and value in self.spec.words:
            return value
        try:
            number = (int(value) if self.spec.kind == "int" else float(value))
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not {self.spec.describe()}", param, ctx)
        try:
            return check_value(param.name if param else "value", number, self.spec)
        except ParameterError:
            self.fail(f"{value!r} is not {self.spec.describe()}", param, ctx)


def option_name(name, spec) -> str:
    """The option of a parameter: ``--max-iter``, ``--B``; a flag's on
    spelling for booleans."""
    if spec.option:
        return spec.option.split("/")[0]
    return "--" + name.replace("_", "-")


def _click_type(spec):
    special = {"C": CType, "C_grid": CGridType, "loss": loss_choice, "poly": poly_choice,
               "class_weight": ClassWeightType,
               "file": lambda: click.Path(dir_okay=False)}
    if spec.cli_type in special:
        return special[spec.cli_type]()
    if spec.kind == "choice":
        return click.Choice(list(spec.words))
    if spec.kind == "text":
        return str
    if spec.words:
        return NumberOrWords(spec)
    if spec.kind == "int":
        return click.IntRange(min=spec.low, max=MAX_COUNT if spec.high is None
                              else spec.high, min_open=spec.low_open,
                              max_open=spec.high_open)
    return FiniteFloatRange(min=spec.low, max=spec.high, min_open=spec.low_open,
                            max_open=spec.high_open)


def _help(spec, default) -> str:
    if default is None or spec.kind == "bool" and default is False:
        return spec.help
    shown = value_text(default)
    if spec.kind == "bool":
        shown = spec.option.split("/")[0] if spec.option else "on"
    return f"{spec.help} [default: {shown}]"


def _option(name, spec, default, *, hidden=False):
    if spec.kind == "bool":
        flags = spec.option or f"--{name.replace('_', '-')}/--no-{name.replace('_', '-')}"
        return click.Option([flags, name], default=None, hidden=hidden,
                            help=_help(spec, default))
    return click.Option([option_name(name, spec), name], type=_click_type(spec),
                        default=None, hidden=hidden, help=_help(spec, default))


def method_options(method, exclude=()) -> list:
    """The options of ``method``'s parameters offered on the command line."""
    return [_option(name, spec, default)
            for name, (default, spec) in specs_of(method.params).items()
            if spec.cli and name not in exclude]


def other_options(method, all_methods, taken) -> list:
    """Hidden options of the other methods' parameters (``taken``: names
    already used), so that giving one is refused with a line naming the
    methods it applies to."""
    owners = {}
    specs = {}
    for other in all_methods:
        if other is method:
            continue
        for name, (default, spec) in specs_of(other.params).items():
            if spec.cli and name not in taken:
                owners.setdefault(name, []).append(other.name)
                specs.setdefault(name, (default, spec))
    options = []
    for name, (default, spec) in specs.items():
        option = _option(name, spec, default, hidden=True)
        option.applies_to = owners[name]
        options.append(option)
    return options


def old_options(methods_, taken_flags) -> list:
    """Hidden options for the replaced spellings: given, they are refused
    with the new name."""
    seen = {}
    for method in methods_:
        for name, (_, spec) in specs_of(method.params).items():
            for old in spec.old:
                if old.startswith("--") and old not in taken_flags:
                    seen.setdefault(old, (name, spec))
    options = []
    for old, (name, spec) in seen.items():
        is_flag = spec.kind == "bool" or old.startswith("--no-")
        on = option_name(name, spec)
        off = (spec.option.split("/")[1] if spec.option and "/" in spec.option
               else "--no-" + name.replace("_", "-"))
        new = off if spec.kind == "bool" and old.startswith("--no-") else on

        def refuse(ctx, param, value, old=old, new=new):
            if value not in (None, False):
                raise click.UsageError(f"{old} was renamed: use {new}")
            return value

        dest = "old_" + old.lstrip("-").replace("-", "_").lower()
        options.append(click.Option([old, dest], is_flag=is_flag, default=None,
                                    hidden=True, expose_value=False, callback=refuse))
    return options


def given_params(method, values: dict) -> dict:
    """The method's parameters given on the command line (None: not given)."""
    params = {}
    for name, (_, spec) in specs_of(method.params).items():
        value = values.get(name)
        if value is None or not spec.cli:
            continue
        if spec.cli_type == "poly":
            value = int(value)
        params[name] = value
    return params
