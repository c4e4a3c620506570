"""The functional face: fit any registered method on data, return a Model.

:func:`fit` is the one entry point behind every face (the CLI, the
scikit-learn estimators of :mod:`ultrafs.sklearn`): it resolves the method
(:mod:`ultrafs.methods.registry`), checks its parameters once (the method's
:class:`~ultrafs.methods.params.Params`), reads the targets
(:func:`~ultrafs.methods.targets.read_targets`), runs the method's ``fit``
under one :class:`~ultrafs.methods.execution.Execution` and turns the result
into a :class:`~ultrafs.model.Model`.  :func:`select` is FGM's spelling.
"""

from __future__ import annotations

from ultrafs.errors import ParameterError
from ultrafs.methods.execution import Execution
from ultrafs.progress import showing
from ultrafs.methods.registry import get_method
from ultrafs.methods.targets import class_weight_values, read_targets
from ultrafs.store import as_store
from ultrafs.model import Model, record_id_range
from ultrafs.scoring.scheduling import resolve_scheduler

__all__ = ["fit", "select", "execution_of", "class_weight_values", "l1_path",
           "path_to_dict"]

#: the keywords of an :class:`Execution` that the faces accept loose
EXECUTION_KEYWORDS = ("scheduler", "num_workers", "block_size", "progress", "callback",
                      "memory_limit", "checkpoint", "resume", "command")

#: which method feature each execution keyword needs
_NEEDS = {"checkpoint": "checkpoint", "resume": "checkpoint",
          "memory_limit": "memory_limit", "scheduler": "passes",
          "num_workers": "passes", "block_size": "passes"}


def execution_of(method, execution=None, **loose) -> Execution:
    """The run's :class:`Execution`: ``execution`` with the ``loose``
    keywords set; a keyword the method does not use (given, not None or
    False) is refused in one line."""
    execution = Execution() if execution is None else execution
    for name, value in loose.items():
        if name not in EXECUTION_KEYWORDS:
            raise ParameterError(f"unknown execution keyword {name!r}")
        need = _NEEDS.get(name)
        if need is not None and need not in method.execution and value not in (
                None, False):
            raise ParameterError(f"{name} does not apply to {method.display_name} "
                                 f"(--method {method.name})")
    return execution.replace(**loose) if loose else execution


def fit(method, data, y=None, *, sample_weight=None, execution=None, **options) -> Model:
    """Fit a registered method on data and return its :class:`Model`.

    Parameters
    ----------
    method : str or Method
        A name of :func:`ultrafs.methods.registry.method_names` ("fgm",
        "l1", "mslr", "sklr", "gsrfs", ...).
    data : ColumnStore, path of a store, ndarray or scipy.sparse matrix
    y : array-like of shape (n_samples,), optional
        Targets when ``data`` is a matrix.
    sample_weight : array-like of shape (n_samples,), optional
        Per-row weights (methods with ``Method.weights``).
    execution : Execution, optional
        Scheduler, workers, block size, progress, memory limit, checkpoint.
    **options
        The method's parameters (its ``Params`` fields), and the fields of
        an :class:`Execution` given loose (``scheduler=``, ``num_workers=``,
        ...).

    Returns
    -------
    Model
    """
    method = get_method(method)
    loose = {name: options.pop(name) for name in EXECUTION_KEYWORDS if name in options}
    execution = execution_of(method, execution, **loose)
    if "passes" in method.execution:
        # once per run: an address connects here, None finds the active Client
        execution = execution.replace(scheduler=resolve_scheduler(execution.scheduler))
    params = method.make_params(**options)
    store = as_store(data, y)
    targets = read_targets(store, method.targets, method, sample_weight=sample_weight,
                           class_weight=getattr(params, "class_weight", None))
    with showing(execution.progress):      # phases deep in the method draw or not
        result = method.fit(store, targets, params, execution)
    model = method.to_model(result, store, targets, params, execution)
    record_id_range(model, store)      # a model file's ids are checked against them
    return model


def select(data, y=None, *, sample_weight=None, execution=None, **options) -> Model:
    """Select features with FGM and return the fitted :class:`Model`.

    FGM's parameters are those of
    :class:`~ultrafs.methods.fgm_method.FGMParams` (``B``, ``C`` (a number,
    "scale" or "auto"), ``loss``, ``max_iter``, ``tol``, ``refit``, ``poly``,
    ``groups``, ``tree``, ``kernel``, ``class_weight``, ``seed``, ...); the
    run's are those of :class:`~ultrafs.methods.execution.Execution`.  See
    :func:`fit`.

    Returns
    -------
    model : Model
        Only the features with a nonzero weight (in some class): up to
        ``B * max_iter`` of them.  ``model.history`` keeps what each pass
        proposed (``n_features``) next to the nonzero count
        (``n_nonzero``).
    """
    return fit("fgm", data, y, sample_weight=sample_weight, execution=execution,
               **options)


def l1_path(data, y=None, **options):
    """The whole ℓ1-LR path of ``data`` (``ultrafs path``): see
    :func:`ultrafs.methods.l1_method.l1_path`."""
    from ultrafs.methods.l1_method import l1_path as whole_path

    return whole_path(data, y, **options)


def path_to_dict(path, store, *, command=None) -> dict:
    """The JSON form of an ℓ1-LR path: :func:`ultrafs.methods.l1_method.path_to_dict`."""
    from ultrafs.methods.l1_method import path_to_dict as to_dict

    return to_dict(path, store, command=command)
