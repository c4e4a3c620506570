"""The ℓ2 refit: the same loss on a fixed set of columns, ``1/2 ||W||^2`` penalty.

With one block the ℓ2,1² penalty of FGM is ``1/2 ||W||^2``: the refit is the
FGM subproblem on one block, solved by the same APG (same KKT certificate),
warm-started from FGM's weights.  ``api.select(refit=True)`` refits the
whole selection (:func:`refit_block`); the report refits every prefix of a
model's batches on a training store (:func:`refit_prefix`).
"""

from __future__ import annotations

import warnings

import numpy as np

from ultrafs.errors import ParameterError, UltraFSWarning
from ultrafs.features import feature_space_from_spec
from ultrafs.features.scaling import original_scale
from ultrafs.store.base import ColumnBlock
from ultrafs.solvers.apg import DEFAULT_KKT_TOL, solve
from ultrafs.solvers.datafits import make_datafit

__all__ = ["REFIT_MAX_ITER", "check_refit_C", "refit_block", "refit_prefix",
           "training_targets"]

#: inner iterations allowed to the refit (one block: a ridge-type problem)
REFIT_MAX_ITER = 20000


def check_refit_C(C) -> float:
    """``C`` as a float; one-line :class:`ParameterError` unless finite and > 0."""
    try:
        value = float(C)
    except (TypeError, ValueError):
        value = float("nan")
    if not (np.isfinite(value) and value > 0):
        raise ParameterError(f"refit_C must be > 0, got {C!r}")
    return value


def refit_block(block, y, *, loss, C, n_classes=None, fit_intercept=True,
                coef0=None, bias0=0.0, tol=1e-3, kkt_tol=None,
                sample_weight=None) -> dict:
    """ℓ2-regularised fit of ``loss`` on the columns of ``block``.

    Minimises ``1/2 ||W||^2 + C sum_i s_i loss(y_i, X_i W - b)`` with the
    solver FGM uses, on one block (``s_i = 1`` without weights).  For the
    logistic loss this is scikit-learn's ``LogisticRegression(C=C)`` with
    ``sample_weight=s`` on the same columns, except that scikit-learn does
    not penalise the intercept either (its ``1/2 ||w||^2 + C sum_i s_i
    log(1 + exp(-y_i (x_i'w + c)))`` with ``c = -b``).

    Parameters
    ----------
    block : ColumnBlock
        The p columns (CSC), e.g. from ``FeatureSpace.materialize``.
    y : ndarray
        ±1 labels, or class indices ``0..K-1`` with ``n_classes = K``.
    loss : str
    C : float
        Weight of the loss (> 0).
    n_classes : int or None
    fit_intercept : bool
    coef0 : array of shape (p,) or (p, K), optional
        Warm start (default zeros).
    bias0 : float or array of shape (K,)
        Warm start of the bias ``b`` (the intercept is ``-b``).
    tol, kkt_tol : float
        ε_in of the solver and its relative KKT tolerance (None: the
        solver's default certificate).
    sample_weight : array-like of shape (n,), optional
        Per-sample weights (finite, ``>= 0``, not all zero).

    Returns
    -------
    dict
        ``coef`` (p,) or (p, K), ``intercept`` (float or (K,)), ``C`` and
        ``kkt`` (the certified relative KKT residual).
    """
    C = check_refit_C(C)
    p = int(block.n_columns)
    datafit = make_datafit(block.indptr, block.indices, block.values(np.float64), y, C,
                           loss=loss, n_classes=n_classes, sample_weight=sample_weight)
    K = datafit.n_outputs
    coef0 = (np.zeros(p * K) if coef0 is None
             else np.asarray(coef0, dtype=np.float64).ravel())
    solution = solve(datafit, np.array([0, p * K]), fit_intercept=fit_intercept,
                     coef0=coef0, bias0=bias0, tol=tol,
                     max_iter=REFIT_MAX_ITER,
                     kkt_tol=DEFAULT_KKT_TOL if kkt_tol is None else kkt_tol)
    coef = solution.coef if K == 1 else solution.coef.reshape(p, K)
    return {"coef": np.asarray(coef, dtype=np.float64), "intercept": -solution.bias,
            "C": C, "kkt": float(solution.kkt)}


def training_targets(model, store):
    """The store's labels as the refit takes them: (±1 labels or indices, K).

    Refused in one line when the store's classes are not the model's.
    """
    where = getattr(store, "path", None) or "training store"
    target = getattr(store, "target_type", "binary")
    expected = "binary" if model.n_outputs == 1 else "multiclass"
    if target != expected:
        raise ParameterError(f"{where}: {target} targets, but the model is {expected}")
    store_classes = [c if isinstance(c, str) else float(c) for c in store.classes]
    if store_classes != list(model.classes):
        raise ParameterError(f"{where}: classes {store_classes} differ from the "
                             f"model's {list(model.classes)}")
    if target == "binary":
        return store.read_labels(), None
    return store.read_class_indices(), len(store.classes)


def refit_prefix(model, store, n_batches=None, *, C=None, targets=None,
                 sample_weight=None, _stacklevel=2) -> dict:
    """Refit the features of a model's first ``n_batches`` batches on a store.

    The same refit as ``select(refit=True)``: the model's loss, intercept
    setting and inner tolerances (its ``params``), ``C`` = ``refit_C`` when
    the model has one, else its ``C``; warm-started from FGM's weights.
    With every batch, on the model's training store, it reproduces
    ``model.refit``.

    Parameters
    ----------
    model : ultrafs.model.Model
    store : ColumnStore
        Labelled training store holding the model's source columns (with
        the model's classes).
    n_batches : int, optional
        Number of leading batches (outer iterations); default all.
    C : float, optional
        Overrides the ``C`` above.
    targets : (y, n_classes), optional
        :func:`training_targets` of the store, when the caller reads them
        once for several prefixes.
    sample_weight : array-like of shape (n_samples,), optional
        The store's per-sample weights.  The model's recorded class weights
        (``params["class_weights"]``) are applied in any case; a model
        fitted with sample weights refits without them (with a warning)
        unless they are given again.

    Returns
    -------
    dict
        As :func:`refit_block`, plus ``n_batches`` and ``n_features``.

    Warns
    -----
    UltraFSWarning
        When some of the features are absent from the store (zero columns).
    """
    n_iter = max(len(model.batches) - 1, 0)
    k = n_iter if n_batches is None else int(n_batches)
    if not 0 <= k <= n_iter:
        raise ParameterError(f"n_batches must be in 0..{n_iter}, got {n_batches!r}")
    params = model.params
    if C is None:
        C = params.get("refit_C", params.get("C"))
        if C is None:
            raise ParameterError("the model's params record no C: give the refit's C")
    C = check_refit_C(C)
    y, n_classes = training_targets(model, store) if targets is None else targets
    stop = int(model.batches[k])
    ids = list(model.features[:stop])
    features = feature_space_from_spec(store, model.feature_space)
    absent = features.absent_ids(ids)
    if absent:
        warnings.warn(f"{len(absent)} model feature(s) absent from the training "
                      f"store (e.g. id {absent[0]}) count as zero columns",
                      UltraFSWarning, stacklevel=_stacklevel)
    block = features.materialize_ids(ids)
    coef0 = np.asarray(model.coef, dtype=np.float64)[:stop]
    factors = params.get("feature_scales")
    if factors is not None:     # standardize: refit on the scaled columns
        factors = np.asarray(factors, dtype=np.float64)[:stop]
        block = ColumnBlock(-1, block.indptr, block.indices, block.values()
                            / np.repeat(factors, np.diff(block.indptr)))
        coef0 = coef0 * (factors if coef0.ndim == 1 else factors[:, None])
    weights = _refit_weights(params, y, n_classes, sample_weight, _stacklevel + 1)
    kkt_tol = params.get("inner_kkt_tol")
    result = refit_block(
        block, y, loss=model.loss, C=C, n_classes=n_classes,
        fit_intercept=bool(params.get("fit_intercept", True)),
        coef0=coef0,
        bias0=-np.asarray(model.intercept, dtype=np.float64)
        if model.n_outputs > 1 else -float(model.intercept),
        tol=float(params.get("inner_tol", 1e-3)),
        kkt_tol=None if kkt_tol is None else float(kkt_tol),
        sample_weight=weights)
    if factors is not None:     # weights on the original scale, as the model's
        result["coef"] = original_scale(result["coef"], factors)
    result.update(n_batches=k, n_features=stop)
    return result


def _refit_weights(params, y, n_classes, sample_weight, stacklevel):
    """The refit's per-sample weights: the recorded class weights times ``sample_weight``."""
    from ultrafs.solvers.datafits import check_sample_weight

    weights = check_sample_weight(sample_weight, len(y))
    if weights is None and params.get("sample_weight"):
        warnings.warn("the model was fitted with sample weights, which the refit "
                      "does not know: give sample_weight to refit with them",
                      UltraFSWarning, stacklevel=stacklevel)
    per_class = params.get("class_weights")
    if per_class is None:
        return weights
    per_class = np.asarray(per_class, dtype=np.float64)
    K = 2 if n_classes is None else int(n_classes)
    if per_class.shape != (K,) or not np.all(np.isfinite(per_class)) \
            or np.any(per_class < 0):
        raise ParameterError(f"the model's params class_weights must be {K} finite "
                             "weights >= 0")
    class_index = (np.asarray(y > 0, dtype=np.int64) if n_classes is None
                   else np.asarray(y, dtype=np.int64))
    by_sample = per_class[class_index]
    return check_sample_weight(by_sample if weights is None else weights * by_sample,
                               len(y))
