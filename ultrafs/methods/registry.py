"""The method registry: every selection method is one :class:`Method`.

A method of the seeds (FGM, the ℓ1-LR path, MSLR, sparse kernel LR,
GSR-FS) is defined once, in one module ``ultrafs/methods/<name>_method.py``
that calls :func:`register`.  The faces discover it here:

* ``ultrafs select --method NAME`` and its ``--help`` (options generated
  from the method's :class:`~ultrafs.methods.params.Params`),
* :func:`ultrafs.api.fit` / :func:`ultrafs.api.select`,
* the scikit-learn estimator :mod:`ultrafs.sklearn` builds for it,
* the model file (``params["method"]``), ``evaluate``, ``predict`` and the
  report (display name, objective, which figures apply).

Built-in methods are found by their module name (``*_method.py`` in this
package), imported on first use; any other module may call
:func:`register` (a plugin, a test).  Discovery imports only the method
modules, which import nothing heavy at import time (``--help`` stays
instant): their ``fit`` imports the engine when called.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ultrafs.errors import ParameterError

__all__ = ["Method", "ReportSpec", "HistoryPanel", "register", "unregister", "get_method",
           "methods", "method_names",
           "method_of_params", "TARGET_KINDS", "EXECUTION_ABSENT"]

TARGET_KINDS = ("binary", "multiclass", "continuous")

#: what an :class:`~ultrafs.methods.execution.Execution` field needs from a
#: method: "passes" (scheduler, workers, block size), "progress",
#: "checkpoint" (checkpoint, resume), "memory_limit"
EXECUTION_FEATURES = ("passes", "progress", "checkpoint", "memory_limit")

#: why a method without an execution feature refuses its options, said of
#: the method (``{name}``) in the refusal's line
EXECUTION_ABSENT = {
    "passes": "{name} runs in this process, with no streamed passes to schedule",
    "progress": "{name} shows no progress",
    "checkpoint": "{name} commits no loop state to resume from",
    "memory_limit": "{name} projects no memory peak to stop before",
}


@dataclass(frozen=True)
class HistoryPanel:
    """One panel of the report's history figure: a record field per step.

    Attributes
    ----------
    key : str
        The field of the model's history records (``"objective"``).
    label : str
        The panel's y-axis label.
    kind : {"line", "bar"}
        How the values are drawn.
    log : bool or None
        A log y-axis; None: when the positive values span more than 30x.
    """

    key: str
    label: str
    kind: str = "line"
    log: bool | None = None


@dataclass(frozen=True)
class ReportSpec:
    """How the report shows a method's run (its ``history`` records).

    Attributes
    ----------
    x : str
        The history field along the x-axis (``"iteration"``, ``"lambda"``).
    x_label : str
        Its axis label, singular (``"outer iteration"``, ``"λ"``).
    x_log : bool
        A log x-axis (a λ path).
    panels : tuple of HistoryPanel
        The history figure's panels, top to bottom; a panel whose field no
        record holds is left out.
    title : str
        The history figure's section heading.
    objective_title : str
        The objective panel's title (matplotlib mathtext allowed); empty:
        "<display name> objective per <x_label>".
    steps : str
        What the model's batches count ("outer iterations", "constraints"),
        shown beside the model and as the k of the test curves; empty for a
        model selected in one block (the test curves are then one row).
    marked : str
        A ``params`` key whose value is marked on the x-axis (the chosen λ);
        empty: none.
    """

    x: str = "iteration"
    x_label: str = "outer iteration"
    x_log: bool = False
    panels: tuple = (HistoryPanel("objective", "objective"),
                     HistoryPanel("n_features", "selected features", kind="bar"))
    title: str = "Objective and features per outer iteration"
    objective_title: str = ""
    steps: str = "outer iterations"
    marked: str = ""


@dataclass(frozen=True)
class Method:
    """One selection method, as every face sees it.

    Attributes
    ----------
    name : str
        ``--method`` value and ``params["method"]`` of its models.
    display_name : str
        How reports and messages name it ("FGM", "MSLR").
    description : str
        What it is, in a few words ("minimax sparse logistic regression").
    summary : str
        One sentence for ``select --help``.
    params : type
        Its :class:`~ultrafs.methods.params.Params` dataclass.
    fit : callable
        ``fit(store, targets, params, execution) -> result``: the method's
        own result object (e.g. an ``FGMResult``).
    to_model : callable
        ``to_model(result, store, targets, params, execution) -> Model``.
    targets : tuple of str
        The target kinds it fits (:data:`TARGET_KINDS`).
    weights : bool
        It takes sample and class weights.
    execution : tuple of str
        The :data:`EXECUTION_FEATURES` it uses (the CLI offers only those
        options).
    objective : str
        Its objective, as the report and the docs write it.
    estimator : str
        The class name of its scikit-learn estimator.
    estimator_kind : {"classifier", "regressor", "selector"}
        How the estimator presents itself to scikit-learn.
    estimator_path : str
        ``"module:Name"`` of a hand-written estimator class (a subclass of
        :class:`~ultrafs.sklearn.base.MethodEstimator`); empty: generated.
    summary_lines : callable, optional
        ``summary_lines(model, store) -> [(name, text), ...]``: the CLI's
        summary after a fit.
    progress_line : callable, optional
        ``progress_line(record) -> str``: one stderr line per iteration.
    estimator_attributes : callable, optional
        ``estimator_attributes(model, id_offset, n_features_in=None) ->
        dict``: fitted attributes of its estimator besides the common ones.
    probabilistic : bool or None
        Its models give class probabilities (None: as its ``loss``
        parameter's loss does).
    figures : tuple of str
        Which figures of the report apply: "objective" (the history figure
        of ``report``), "timing" (seconds per phase, drawn only where the
        records time phases), "features" (top features by |weight|),
        "accuracy" (the test curves against the number of features, for a
        model selected in steps; with a test store the report always has
        their table), "lambda_path" (test accuracy and nonzero weights along
        the λ path, solved again on the training store), "validation"
        (the choice of C),
        "ranking" (the ranking scores ``params["scores"]`` of the selected
        features, best first), "basis" (the nonzero weights among the
        ``params["n_basis"]`` basis functions).
    report : ReportSpec
        How the report draws its history (axis, panels, titles).
    order : int
        Place in listings (then by name).
    """

    name: str
    display_name: str
    description: str
    summary: str
    params: type
    fit: Callable
    to_model: Callable
    targets: tuple = ("binary",)
    weights: bool = False
    execution: tuple = ("passes", "progress")
    objective: str = ""
    estimator: str = ""
    estimator_kind: str = "classifier"
    estimator_path: str = ""
    summary_lines: Callable | None = None
    progress_line: Callable | None = None
    estimator_attributes: Callable | None = None
    probabilistic: bool | None = None
    figures: tuple = ("objective", "timing", "features", "accuracy")
    report: ReportSpec = ReportSpec()
    order: int = 100
    module: str = field(default="", compare=False)

    def __post_init__(self):
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise ParameterError(f"a method's name must be a lower-case identifier, "
                                 f"got {self.name!r}")
        bad = [k for k in self.targets if k not in TARGET_KINDS]
        if bad or not self.targets:
            raise ParameterError(f"method {self.name}: targets must be among "
                                 f"{TARGET_KINDS}, got {self.targets!r}")
        bad = [k for k in self.execution if k not in EXECUTION_FEATURES]
        if bad:
            raise ParameterError(f"method {self.name}: execution features must be "
                                 f"among {EXECUTION_FEATURES}, got {bad!r}")

    def make_params(self, **options):
        """This method's parameters from keywords (checked; old names hinted)."""
        return self.params.from_options(options)


_REGISTRY: dict[str, Method] = {}
_DISCOVERED = False


def register(method: Method) -> Method:
    """Add ``method`` (replacing one of the same name) and return it."""
    if not isinstance(method, Method):
        raise TypeError(f"register takes a Method, got {type(method).__name__}")
    _REGISTRY[method.name] = method
    return method


def unregister(name: str) -> Method | None:
    """Remove the method called ``name`` (a plugin or a test's); return it."""
    return _REGISTRY.pop(name, None)


def _discover():
    """Import the built-in ``*_method`` modules of this package (once)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    import importlib
    import pkgutil

    import ultrafs.methods as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.endswith("_method"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    _DISCOVERED = True


def methods() -> list[Method]:
    """Every registered method, in ``order`` then name."""
    _discover()
    return sorted(_REGISTRY.values(), key=lambda m: (m.order, m.name))


def method_names() -> list[str]:
    """The ``--method`` values."""
    return [m.name for m in methods()]


def get_method(name) -> Method:
    """The method called ``name``; one line naming the known ones otherwise."""
    if isinstance(name, Method):
        return name
    _discover()
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ParameterError(f"unknown method {name!r}; the methods are: "
                             + ", ".join(method_names())) from None


def method_of_params(params: dict) -> Method:
    """The method that made a model, from its ``params`` (FGM's models,
    written before methods were named, record none)."""
    return get_method(params.get("method", "fgm"))
