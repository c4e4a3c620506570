"""scikit-learn estimators of every registered method.

Each method of :mod:`ultrafs.methods.registry` gets one estimator class,
made by :func:`estimator_class` on the one base
:class:`~ultrafs.sklearn.base.MethodEstimator`: its ``__init__`` takes the
method's parameters (with their defaults; ``seed`` is ``random_state``)
and the run's (``block_size``, ``scheduler``, ``n_jobs``, ``verbose``).
The class is named by ``Method.estimator`` and importable from here
(``from ultrafs.sklearn import FGMClassifier``), also for a method
registered at run time, so estimators pickle by name.

A method's ``Params`` class may say more about its estimator:
``estimator_defaults`` (a dict: defaults of the estimator that differ
from the method's, e.g. the ℓ1 path's ``C=1.0``) and
``estimator_selects_columns`` (False: its features are not computed from
input columns, so the estimator is no selector of them).  A method whose
estimator needs more than the base (GSR-FS's ranking selector) names a
hand-written subclass of the base in ``Method.estimator_path``
(``"module:Name"``).
"""

from __future__ import annotations

__all__ = ["estimator_class", "estimator_classes", "FGMClassifier",
           "L1LogisticRegression", "MSLRClassifier", "SparseKernelLogisticRegression",
           "GSRFSSelector"]

_CLASSES = {}


def estimator_class(method):
    """The scikit-learn estimator class of ``method`` (a name or a Method).

    Returns
    -------
    type
        A subclass of :class:`~ultrafs.sklearn.base.MethodEstimator` (and
        of ``ClassifierMixin`` / ``RegressorMixin`` by
        ``Method.estimator_kind``), made once per method.
    """
    from ultrafs.methods.registry import get_method

    method = get_method(method)
    cls = _CLASSES.get(method.name)
    if cls is not None and cls.method is method:
        return cls
    cls = _hand_written(method) if method.estimator_path else _make_class(method)
    _CLASSES[method.name] = cls
    return cls


def estimator_classes() -> dict:
    """``{class name: class}`` of every registered method's estimator."""
    from ultrafs.methods.registry import methods

    return {m.estimator: estimator_class(m) for m in methods() if m.estimator}


def _hand_written(method):
    """The class ``Method.estimator_path`` names, bound to ``method``."""
    import importlib

    module, _, name = method.estimator_path.partition(":")
    cls = getattr(importlib.import_module(module), name)
    if cls.method is not method:    # the method was registered again
        cls = type(cls.__name__, (cls,), {"method": method, "__module__": cls.__module__})
    return cls


def _make_class(method):
    from sklearn.base import ClassifierMixin, RegressorMixin

    from ultrafs.methods.params import specs_of
    from ultrafs.sklearn.base import RUN_PARAMETERS, MethodEstimator, estimator_parameter

    defaults = {estimator_parameter(name): default
                for name, (default, _) in specs_of(method.params).items()}
    defaults.update(getattr(method.params, "estimator_defaults", {}))
    defaults.update(RUN_PARAMETERS)
    arguments = ", ".join(f"{name}=_defaults[{name!r}]" for name in defaults)
    body = "".join(f"\n    self.{name} = {name}" for name in defaults) or "\n    pass"
    namespace = {"_defaults": defaults}
    exec(f"def __init__(self, *, {arguments}):{body}", namespace)
    init = namespace["__init__"]
    mixins = {"classifier": (ClassifierMixin,), "regressor": (RegressorMixin,)}.get(
        method.estimator_kind, ())
    name = method.estimator or f"{method.name.title()}Estimator"

    def __sklearn_tags__(self):
        return self._method_tags(super(cls, self).__sklearn_tags__())

    namespace = {}
    if not method.weights:      # no sample_weight: scikit-learn's checks skip it
        def fit(self, X, y=None):
            return MethodEstimator.fit(self, X, y)

        fit.__doc__ = MethodEstimator.fit.__doc__.replace(
            "        sample_weight : array-like of shape (n_samples,), optional\n"
            "            Per-sample weights (methods that take them).\n", "")
        fit.__qualname__ = f"{name}.fit"
        namespace["fit"] = fit
    cls = type(name, (*mixins, MethodEstimator),
               {**namespace, "__init__": init, "method": method, "__module__": __name__,
                "__sklearn_tags__": __sklearn_tags__,
                "__doc__": _docstring(method, defaults),
                "selects_columns": getattr(method.params, "estimator_selects_columns",
                                           True)})
    cls.__qualname__ = name
    init.__qualname__ = f"{name}.__init__"
    __sklearn_tags__.__qualname__ = f"{name}.__sklearn_tags__"
    return cls


def _docstring(method, defaults) -> str:
    from ultrafs.methods.params import specs_of, value_text
    from ultrafs.sklearn.base import estimator_parameter

    lines = [f"{method.display_name}: {method.description} (scikit-learn estimator).",
             "", method.summary, "", "Parameters", "----------"]
    for name, (default, spec) in specs_of(method.params).items():
        name = estimator_parameter(name)
        lines += [f"{name} : default={value_text(defaults[name])}", f"    {spec.help}"]
    lines += ["block_size : int, default=None", "    Columns per task of a pass.",
              "scheduler : str or distributed.Client, default=None",
              "    Dask scheduler of the passes: \"threads\", \"processes\", "
              "\"synchronous\",",
              "    an address (\"tcp://HOST:PORT\") or a Client; None: the active "
              "Client, else threads.",
              "    A Client pickles as its address.",
              "n_jobs : int, default=None", "    Threads or processes of a local "
              "scheduler (None: the CPU count); results do not depend on it.",
              "verbose : int, default=0", "    > 0: progress on stderr.", "",
              "See :class:`~ultrafs.sklearn.base.MethodEstimator` for the fitted "
              "attributes."]
    if method.estimator_attributes is not None and method.estimator_attributes.__doc__:
        import inspect

        own = inspect.cleandoc(method.estimator_attributes.__doc__).replace(
            "Returns\n-------\ndict\n", "")      # the hook's own section header
        lines += ["", own]
    return "\n".join(lines)


def __getattr__(name):
    for method_cls_name, cls in estimator_classes().items():
        if method_cls_name == name:
            return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
