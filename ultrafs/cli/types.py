"""The command line's value types (click ParamTypes) and their bounds.

Parsing an option imports no registry and no solver: see
:class:`RegistryChoice`.
"""

from __future__ import annotations

import sys

import click


#: largest count an integer option accepts (B, iterations, folds, block sizes...):
#: beyond it a value can only be a mistake, and numpy would fail on it
MAX_COUNT = 2**31 - 1
#: most threads or processes of a local scheduler (--workers)
MAX_WORKERS = 4096
#: longest timeout an option accepts (one day)
MAX_SECONDS = 86400.0
#: most features a store may declare (``ingest --n-features``): the store
#: format's bound on ``id_space`` (``store/metadata.py: MAX_ID_SPACE``)
MAX_ID_SPACE = 2**62
#: largest ``--memory-limit``: 1 PiB, beyond the memory of any one machine
#: (and within int64 and a float's exact integers, as the budget code needs)
MAX_MEMORY_BYTES = 2**50


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that refuses ``nan``, ``inf`` and ``-inf``.

    click's range check compares the value with its bounds, and every
    comparison with ``nan`` is false: ``--tol nan`` passed, as did ``inf``
    (``1e309``) where no upper bound is set.
    """

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if number != number or number in (float("inf"), float("-inf")):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


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


def loss_choice():
    from ultrafs.names import LOSS_NAMES

    return RegistryChoice(LOSS_NAMES, "ultrafs.solvers.losses", _loss_names)


def poly_choice():
    from ultrafs.names import POLY_DEGREES

    return RegistryChoice(POLY_DEGREES, "ultrafs.features.base", _poly_degrees)


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


class CGridType(click.ParamType):
    """``--C-grid``: comma-separated numbers > 0 (sorted, deduplicated)."""

    name = "C,C,..."

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        numbers = []
        for item in value.split(","):
            try:
                number = float(item)
            except ValueError:
                number = float("nan")
            if not (number > 0 and number != float("inf")):
                self.fail(f"{value!r} is not comma-separated numbers > 0", param, ctx)
            numbers.append(number)
        return sorted(set(numbers))


class SizeType(click.ParamType):
    """``--memory-limit``: bytes, or a number with a unit (``8GB``, ``7.5G``,
    ``800MB``, ``8GiB``; decimal units are powers of 1000, ``*iB`` of 1024),
    from 1 byte to :data:`MAX_MEMORY_BYTES`.

    Parsed by ``dask.utils.parse_bytes`` (dask is a dependency already; it
    reads the same spellings as dask's own ``memory_limit``), then range
    checked here: ``1e30GB`` used to pass and fail later in numpy.
    """

    name = "size"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        from dask.utils import parse_bytes

        text = value.strip()
        try:
            size = parse_bytes(text) if any(c.isdigit() for c in text) else -1
        except (ValueError, OverflowError):
            size = -1
        if not 1 <= size <= MAX_MEMORY_BYTES:
            self.fail(f"{value!r} is not a size such as 8GB, 800MB or 8GiB (from 1 byte "
                      "to 1 PiB)", param, ctx)
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
