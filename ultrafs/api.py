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


# ------------------------------------------------------------------- MSLR
def select_mslr(data, y=None, *, B=10, C=10.0, max_iter=10, tol=1e-3,
                subproblem_tol=1e-4, retrain=True, retrain_C=5.0,
                retrain_intercept=True, poly=1, gamma=1.0, coef0=1.0,
                block_size=None, scheduler=None, num_workers=None, callback=None,
                progress=False, seed=0, command=None):
    """Select features with minimax sparse logistic regression (seed 000).

    The cutting plane of :func:`ultrafs.methods.mslr.fit_mslr` (r = ``B``
    features per constraint, T_m = ``max_iter`` iterations at most), then
    the paper's ℓ2-LR retraining on the selected columns
    (:func:`ultrafs.methods.mslr.retrain`).

    Parameters
    ----------
    data : ColumnStore, path of a store, ndarray or scipy.sparse matrix
    y : array-like, optional
        Two classes when ``data`` is an array.
    C : float or "scale"
        The loss weight (the paper's 10); "scale": FGM's data-scaled
        default (:func:`ultrafs.methods.validation.default_C`, 10 on 0/1
        data).
    B, max_iter, tol, subproblem_tol, block_size, scheduler,
    num_workers, callback, progress, seed
        See :func:`ultrafs.methods.mslr.fit_mslr`.
    retrain : bool
        Fit ℓ2-LR on the selected columns and predict with it (the paper's
        protocol); False predicts with MSLR's own classifier ``v`` (no
        bias).
    retrain_C : float or "auto"
        C of the retraining (the paper's 5), or "auto": chosen on held-out
        rows (:func:`ultrafs.methods.mslr.retrain`).
    retrain_intercept : bool
        The retrained model has an unpenalised intercept (the paper leaves
        it unsaid; MSLR itself has none).
    poly, gamma, coef0
        Candidates: the columns (``poly=1``) or every degree-2 feature of
        ``(gamma x'z + coef0)^2`` generated on the fly (``poly=2``).
    command : str, optional
        Recorded in the model's ``params``.

    Returns
    -------
    model : Model
        ``params["method"] == "mslr"``; ``features`` is the union of the
        constraints in order of first selection (at most ``B * max_iter``),
        ``coef`` MSLR's classifier ``v = d ⊙ c(α)`` (intercept 0), ``refit``
        the retrained model, ``params["constraints"]`` the feature ids of
        every ``S_t`` and ``params["mu"]`` their weights.
    """
    from ultrafs.methods.mslr import check_retrain_C, fit_mslr, retrain as retrain_model

    from ultrafs.methods.validation import default_C

    store = as_store(data, y)
    labels = _mslr_labels(store)
    features = make_feature_space(store, poly=poly, gamma=gamma, coef0=coef0)
    C_rule = "given"
    if isinstance(C, str):
        if C != "scale":
            raise ParameterError(f"C must be a number > 0 or 'scale', got {C!r}")
        C_rule = "scale"
        C = default_C(features, block_size=block_size, scheduler=scheduler,
                      num_workers=num_workers)
    if retrain:
        retrain_C = check_retrain_C(retrain_C)      # before the selection's passes
    result = fit_mslr(features, labels, B=B, C=C, max_iter=max_iter, tol=tol,
                      subproblem_tol=subproblem_tol, block_size=block_size,
                      scheduler=scheduler, num_workers=num_workers, callback=callback,
                      progress=progress, seed=seed)
    ids = features.feature_ids(result.keys)
    params = {"method": "mslr", "poly": int(poly), "B": int(B), "C": float(C),
              "C_rule": C_rule,
              "max_iter": int(max_iter), "tol": float(tol),
              "subproblem_tol": float(subproblem_tol), "seed": int(seed),
              "loss": "logistic", "id_offset": int(store.id_offset),
              "constraints": [[ids[k] for k in members]
                              for members in result.constraints],
              "mu": [float(v) for v in result.mu],
              "n_active": int(np.count_nonzero(result.active())),
              "data_fingerprint": getattr(store, "fingerprint", None)}
    params.update({name: value for name, value in features.spec().items()
                   if name not in ("kind", "scales")})
    refitted = None
    if retrain and len(result.keys):
        refitted = retrain_model(result.block, labels, C=retrain_C,
                                 fit_intercept=retrain_intercept, seed=seed)
        # what refit_prefix (the report's curves) reads: the retraining's C
        # and intercept setting; MSLR itself has no intercept
        params.update(retrain_C=retrain_C,
                      refit_C=float(refitted["C"]),
                      fit_intercept=bool(retrain_intercept))
        if "validation" in refitted:
            params["retrain_validation"] = refitted.pop("validation")
    else:
        params["fit_intercept"] = False
    if command:
        params["command"] = command
    return Model(
        features=ids,
        coef=np.asarray(result.coef, dtype=np.float64),
        intercept=0.0,
        batches=[int(b) for b in result.batch_ptr],
        loss="logistic",
        classes=[float(c) for c in store.classes],
        target="binary",
        feature_space=features.spec(),
        params=params,
        history=result.history,
        stop_reason=result.stop_reason,
        refit=None if refitted is None else {
            "coef": np.asarray(refitted["coef"], dtype=np.float64),
            "intercept": float(refitted["intercept"]), "C": float(refitted["C"])},
        predictor="refit" if refitted is not None else "selection",
        feature_names=Model.names_from_store(ids, store, features.kind),
    )


def _mslr_labels(store):
    """±1 labels of a binary store; one line for anything else."""
    y, n_classes = _classification_targets(store)
    if n_classes is not None:
        raise ParameterError(
            f"minimax sparse logistic regression needs two classes; the data has "
            f"{n_classes}")
    return np.asarray(y, dtype=np.float64)


def select_sklr(data, y=None, *, basis="rff", n_components=1000, sigma=None, seed=0,
                solver="cgd", lam_ratio=0.1, lam=None, two_stage=None,
                fit_intercept=True, tol=None, max_iter=None, scaling=None,
                row_chunk=None, cache_bytes=None, command=None, progress=False):
    """Fit sparse kernel logistic regression (seed 001) and return its :class:`Model`.

    Parameters
    ----------
    data : ColumnStore, path of a store, ndarray or scipy.sparse matrix
    y : array-like, optional
        Two classes when ``data`` is an array.
    basis : {"rff", "rbf"}
        Random Fourier features generated on the fly from ``seed``
        (``n_components`` of them), or the exact RBF kernel columns on the
        training points (at most 20,000 rows).
    n_components : int
        ``D`` of the random features (ignored by ``rbf``).
    sigma : float, optional
        Width of ``exp(-||x - z||² / sigma²)``; None: the median pairwise
        distance of at most 1,000 seeded rows.
    seed : int
        Seeds Ω and b, the median heuristic's subsample and SGD-C.
    solver, lam_ratio, lam, two_stage, fit_intercept, tol, max_iter, scaling,
    row_chunk, cache_bytes
        See :func:`ultrafs.methods.sklr.fit_sklr`.
    command : str, optional
        Recorded in ``params``.
    progress : bool
        Progress lines on stderr (how the basis is held, the solver's
        objective and duality gap); see :func:`ultrafs.methods.sklr.fit_sklr`.

    Returns
    -------
    model : Model
        ``params["method"] == "sklr"``.  ``features`` are the basis
        functions with a nonzero weight (random-feature numbers for
        ``rff``; for ``rbf`` the support points, numbered in the order of
        ``params["support_rows"]``, the training rows they are), and
        ``feature_space`` rebuilds them on any store: the seed and σ for
        ``rff`` (Ω is never written), the support points themselves for
        ``rbf``.
    """
    from ultrafs.features import build_feature_space
    from ultrafs.methods.sklr import BASES, DEFAULT_TOL, check_solver_options, fit_sklr

    if basis not in BASES:
        raise ParameterError(f"basis must be one of {', '.join(BASES)}, got {basis!r}")
    check_solver_options(solver, lam_ratio, lam, two_stage, scaling)
    store = as_store(data, y)
    labels = _binary_labels(store)
    if basis == "rff":
        space = build_feature_space(store, "rff", n_components=n_components, sigma=sigma,
                                    seed=seed)
    else:
        space = build_feature_space(store, "rbf", sigma=sigma)
    result = fit_sklr(space, labels, solver=solver, lam_ratio=lam_ratio, lam=lam,
                      two_stage=two_stage, fit_intercept=fit_intercept, tol=tol,
                      max_iter=max_iter, scaling=scaling, seed=seed,
                      row_chunk=row_chunk, cache_bytes=cache_bytes, progress=progress)
    sol = result.solution
    cert = sol.certificate
    params = {"method": "sklr", "basis": basis, "solver": solver,
              "sigma": float(space.sigma), "seed": int(seed),
              "n_basis": int(space.n_candidates),
              "lam": result.lam, "lam_max": result.lam_max,
              "lam_ratio": result.lam / result.lam_max if result.lam_max > 0 else None,
              "two_stage": two_stage, "fit_intercept": bool(fit_intercept),
              "tol": float(DEFAULT_TOL[solver] if tol is None else tol),
              "converged": bool(sol.converged), "n_iter": int(sol.n_iter),
              "objective": float(cert.primal), "duality_gap": float(cert.gap),
              "rel_gap": float(cert.rel_gap), "kkt": float(cert.kkt),
              "nnz": int(len(result.keys)),
              "nnz_pct": 100.0 * len(result.keys) / max(space.n_candidates, 1),
              "seconds": float(result.seconds), "loss": "logistic", "C": 1.0,
              "id_offset": int(store.id_offset),
              "data_fingerprint": getattr(store, "fingerprint", None)}
    if basis == "rff":
        params["n_components"] = int(n_components)
        ids = space.feature_ids(result.keys)
        feature_space = space.spec()
    else:
        ids = list(range(len(result.keys)))
        feature_space = space.restricted(result.keys)
        params["support_rows"] = [int(k) for k in result.keys]
    if result.stage1 is not None:
        s1 = result.stage1
        params["stage1"] = {"lam": result.lam, "nnz": s1.nnz,
                            "n_iter": int(s1.n_iter), "rel_gap": float(s1.certificate.rel_gap),
                            "converged": bool(s1.converged)}
        params["lam2"] = result.lam * two_stage
    if sol.info.get("eta0") is not None:
        params["eta0"] = float(sol.info["eta0"])
    if command:
        params["command"] = command
    return Model(
        features=ids,
        coef=result.coef[result.keys],
        intercept=float(result.intercept),
        batches=[0, len(ids)],
        loss="logistic",
        classes=[float(c) for c in store.classes],
        target="binary",
        feature_space=feature_space,
        params=params,
        history=result.history,
        stop_reason=result.stop_reason,
    )


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
