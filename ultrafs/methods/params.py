"""A method's parameters, declared once: defaults, domains, help and old names.

Every method of :mod:`ultrafs.methods.registry` has one parameter dataclass
deriving from :class:`Params`.  Its fields, written with :func:`param`, are
the one source of

* the Python API's keywords (:func:`ultrafs.api.select`),
* the CLI options of ``ultrafs select --method M`` (``ultrafs.cli.options``
  turns each :class:`Spec` into a click option),
* the scikit-learn estimator's ``__init__`` parameters
  (:mod:`ultrafs.sklearn`), and
* what the model file records (:meth:`Params.to_dict`).

Each value is checked once, here, against its field's :class:`Spec` (a
number's range, a choice), so every face refuses the same values with the
same one-line :class:`~ultrafs.errors.ParameterError`.  A name the
vocabulary replaced (``Spec.old``) is refused with a hint naming the new
one.

This module imports nothing heavy: ``ultrafs select --help`` reads it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from ultrafs.errors import ParameterError

__all__ = ["Spec", "param", "Params", "specs_of", "check_value", "REQUIRED",
           "SpelledParameterError"]


class _Required:
    """The default of a parameter the caller must give (e.g. a count)."""

    def __repr__(self):
        return "REQUIRED"


#: default of a parameter without one
REQUIRED = _Required()


class SpelledParameterError(ParameterError):
    """A parameter out of its domain, or parameters that need or exclude each
    other, named as each face spells them: the message is a template whose
    ``{field}`` names are the Params fields (Python: ``refit_C``; the CLI:
    ``--refit-C``)."""

    def __init__(self, template: str):
        self.template = template
        super().__init__(self.spelled(str))

    def spelled(self, spell) -> str:
        """The message with each ``{field}`` written by ``spell(field)``."""
        return self.template.format_map(_Spelled(spell))


class _Spelled(dict):
    def __init__(self, spell):
        super().__init__()
        self.spell = spell

    def __missing__(self, key):
        return self.spell(key)


@dataclass(frozen=True)
class Spec:
    """How one parameter is written, checked and shown.

    Attributes
    ----------
    help : str
        One or two sentences for ``--help`` and the docstrings.
    kind : {"int", "float", "bool", "choice", "text", "any"}
        The type of a value; ``"bool"`` is a flag (``--name/--no-name``);
        ``"any"``: an object the method checks itself (arrays, mappings).
    low, high : float, optional
        Bounds of a number; ``low_open``/``high_open`` exclude them.
    words : tuple of str
        Words a number may also be (``C="scale"``), or the choices of a
        ``"choice"``.
    none : bool
        None is a value (the method chooses).
    option : str, optional
        The CLI option when it is not ``--`` + the name with dashes
        (``"--B"``).
    old : tuple of str
        Replaced names of this parameter, Python or CLI spelling
        (``("retrain_C", "--retrain-C")``), refused with a hint naming it.
    cli : bool
        Offered on the command line (False: Python only, e.g. arrays).
    cli_type : str, optional
        A CLI type other than the kind's (``ultrafs.cli.options``): "C",
        "loss", "poly", "file", "class_weight", "C_grid" (a number with
        ``words`` needs none: ``ultrafs.cli.method_options.NumberOrWords``).
    """

    help: str
    kind: str = "float"
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    words: tuple = ()
    none: bool = False
    option: str | None = None
    old: tuple = ()
    cli: bool = True
    cli_type: str | None = None

    def describe(self) -> str:
        """The domain in words: ``"a number > 0 or 'scale'"``."""
        if self.kind == "choice":
            return "one of " + ", ".join(repr(w) for w in self.words)
        if self.kind == "bool":
            return "True or False"
        if self.kind in ("text", "any"):
            return "a text" if self.kind == "text" else "a value"
        noun = "an integer" if self.kind == "int" else "a number"
        bounds = []
        if self.low is not None:
            bounds.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            bounds.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        text = noun + (" " + " and ".join(bounds) if bounds else "")
        if self.words:
            text += " or " + " or ".join(repr(w) for w in self.words)
        return text


def param(default, help, **spec):
    """A dataclass field of a :class:`Params` with its :class:`Spec`.

    Parameters
    ----------
    default : object
        The default value (:data:`REQUIRED` when the caller must give one).
    help : str
    **spec
        The other :class:`Spec` attributes.
    """
    return dataclasses.field(default=default, metadata={"spec": Spec(help=help, **spec)})


def specs_of(params_type) -> dict:
    """``{name: (default, Spec)}`` of a :class:`Params` class, in field order."""
    return {f.name: (f.default, f.metadata["spec"])
            for f in dataclasses.fields(params_type) if "spec" in f.metadata}


def check_value(name: str, value, spec: Spec):
    """``value`` if it is in the domain of ``spec``, converted (an int for
    ``"int"``, a float for ``"float"``); else a one-line ParameterError."""
    if value is None and spec.none:
        return None
    if spec.kind == "any":
        return value
    if isinstance(value, str) and value in spec.words and spec.kind != "text":
        return value
    shown = f"{spec.describe()}, got {value!r}".replace("{", "{{").replace("}", "}}")
    wrong = SpelledParameterError("{%s} must be %s" % (name, shown))
    if spec.kind == "bool":
        if isinstance(value, bool):
            return value
        if type(value).__name__ == "bool_":     # numpy's bool
            return bool(value)
        raise wrong
    if spec.kind == "choice":
        raise wrong
    if spec.kind == "text":
        if isinstance(value, str):
            return value
        raise wrong
    if isinstance(value, bool) or not _is_number(value):
        raise wrong
    if spec.kind == "int":
        if float(value) != int(value):
            raise wrong
        number = int(value)
    else:
        number = float(value)
        if not math.isfinite(number):
            raise wrong
    if spec.low is not None and (number < spec.low or (spec.low_open and number == spec.low)):
        raise wrong
    if spec.high is not None and (number > spec.high
                                  or (spec.high_open and number == spec.high)):
        raise wrong
    return number


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, str)


@dataclass
class Params:
    """Base of every method's parameter dataclass.

    Subclasses declare their fields with :func:`param` and may override
    :meth:`check` for rules that tie parameters together (one line each).
    Construction checks every value against its field's :class:`Spec`.
    """

    def __post_init__(self):
        for name, (_, spec) in specs_of(type(self)).items():
            value = getattr(self, name)
            if value is REQUIRED:
                raise ParameterError(f"{name} is required")
            object.__setattr__(self, name, check_value(name, value, spec))
        self.check()

    def check(self):
        """Rules between parameters; raise a one-line ParameterError."""

    @classmethod
    def from_options(cls, options: dict):
        """Parameters from keywords: unknown names are refused, replaced
        names with a hint naming the new one."""
        specs = specs_of(cls)
        for name in options:
            if name in specs:
                continue
            raise ParameterError(_unknown_name(cls, name, specs))
        return cls(**options)

    def is_default(self, name: str) -> bool:
        """Whether parameter ``name`` holds its default value."""
        return getattr(self, name) == specs_of(type(self))[name][0]

    @classmethod
    def estimator_options(cls, options: dict) -> dict:
        """The options a scikit-learn estimator passes (its attributes):
        a method may drop those that only apply with others, so that a
        search over one keeps the rest fixed."""
        return options

    def to_dict(self) -> dict:
        """The values, JSON-able, in field order."""
        return {name: getattr(self, name) for name in specs_of(type(self))}

    def replace(self, **changes):
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


def _unknown_name(cls, name: str, specs: dict) -> str:
    for new, (_, spec) in specs.items():
        for old in spec.old:
            if name == old or name == old.lstrip("-").replace("-", "_"):
                return f"{name} was renamed: use {new} (--{new.replace('_', '-')})"
    shown = ", ".join(specs)
    return f"{cls.__name__} has no parameter {name!r} (it has: {shown})"


def value_text(value: Any) -> str:
    """A default as ``--help`` shows it."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
