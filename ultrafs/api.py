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

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.methods.execution import Execution
from ultrafs.methods.registry import get_method
from ultrafs.methods.targets import class_weight_values, read_targets
from ultrafs.store import as_store
from ultrafs.model import Model

__all__ = ["fit", "select", "execution_of", "class_weight_values", "l1_path",
           "select_l1", "path_to_dict", "select_mslr", "select_sklr",
           "select_gsrfs", "fit_gsrfs_store"]

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
    params = method.make_params(**options)
    store = as_store(data, y)
    targets = read_targets(store, method.targets, method, sample_weight=sample_weight,
                           class_weight=getattr(params, "class_weight", None))
    result = method.fit(store, targets, params, execution)
    return method.to_model(result, store, targets, params, execution)


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


def _classification_targets(store):
    from ultrafs.methods.targets import classification_targets

    return classification_targets(store)


# --------------------------------------------------------------- ℓ1 paths
def l1_path(data, y=None, **options):
    """The whole ℓ1-LR path of ``data`` (``ultrafs path``): see
    :func:`ultrafs.methods.l1_method.l1_path`."""
    from ultrafs.methods.l1_method import l1_path as whole_path

    return whole_path(data, y, **options)


def _binary_labels(store):
    """±1 labels of a binary store; one line for anything else."""
    y, n_classes = _classification_targets(store)
    if n_classes is not None:
        raise ParameterError(
            f"ℓ1 logistic regression needs two classes; the data has {n_classes}")
    return np.asarray(y, dtype=np.float64)


def select_l1(data, y=None, *, features=None, **options) -> Model:
    """``fit("l1", ...)`` (:mod:`ultrafs.methods.l1_method`); ``features`` is the
    old name of ``n_features_to_select``, taken until every face is on the registry."""
    if features is not None:
        options["n_features_to_select"] = features
    return fit("l1", data, y, **options)


def path_to_dict(path, store, *, command=None) -> dict:
    """The JSON form of an ℓ1-LR path: :func:`ultrafs.methods.l1_method.path_to_dict`."""
    from ultrafs.methods.l1_method import path_to_dict as to_dict

    return to_dict(path, store, command=command)


# ------------------------------------------------------------ MSLR, SKLR
def select_mslr(data, y=None, **options) -> Model:
    """``fit("mslr", ...)``, kept while faces still call it: minimax sparse
    LR (:mod:`ultrafs.methods.mslr_method`), its keywords renamed by issue
    36 (``retrain``, ``retrain_C``, ``retrain_intercept``,
    ``subproblem_tol``) translated."""
    from ultrafs.methods.mslr_method import OLD_KEYWORDS

    return fit("mslr", data, y, **{OLD_KEYWORDS.get(k, k): v for k, v in options.items()})


def select_sklr(data, y=None, **options) -> Model:
    """``fit("sklr", ...)``, kept while faces still call it: sparse kernel LR
    (:mod:`ultrafs.methods.sklr_method`), its keywords renamed by issue 36
    (``lam_ratio``, ``scaling``) translated."""
    from ultrafs.methods.sklr_method import OLD_KEYWORDS

    return fit("sklr", data, y, **{OLD_KEYWORDS.get(k, k): v for k, v in options.items()})


def fit_gsrfs_store(store, Y, *, features=50, **options):
    """:func:`ultrafs.methods.gsrfs_store.fit_gsrfs_store`; ``features`` is the old
    name of ``n_features_to_select``, taken until every face is on the registry."""
    from ultrafs.methods.gsrfs_store import fit_gsrfs_store as fit_store

    return fit_store(store, Y, n_features_to_select=features, **options)


def select_gsrfs(data, y=None, *, features=50, **options) -> Model:
    """``fit("gsrfs", ...)`` (:mod:`ultrafs.methods.gsrfs_method`); ``features`` is
    the old name of ``n_features_to_select`` and None means the default, taken
    until every face is on the registry."""
    options = {name: value for name, value in options.items() if value is not None}
    options.setdefault("n_features_to_select", features)
    return fit("gsrfs", data, y, **options)
