"""Functional core shared by the CLI and the estimator."""

from __future__ import annotations

import numpy as np

from ultrafs.features import make_feature_space
from ultrafs.methods.fgm import fit_fgm
from ultrafs.solvers.apg import DEFAULT_KKT_TOL, solve
from ultrafs.solvers.datafits import make_datafit
from ultrafs.methods.checkpoint import Checkpoint, store_fingerprint
from ultrafs.errors import ParameterError
from ultrafs.model import Model
from ultrafs.store import as_store

__all__ = ["select"]


def select(data, y=None, *, B=50, C=10.0, loss="logistic", max_iter=10,
           tol=1e-3, fit_intercept=True, inner_tol=1e-3, inner_max_iter=1000,
           inner_kkt_tol=DEFAULT_KKT_TOL,
           block_size=None, scheduler=None, num_workers=None, callback=None,
           command=None, poly=1, gamma=1.0, coef0=1.0, checkpoint=None,
           resume=False, progress=False, refit=False, refit_C=None):
    """Select features with FGM and return the fitted :class:`Model`.

    Parameters
    ----------
    data : ColumnStore, path of a store, ndarray or scipy.sparse matrix
    y : array-like, optional
        Labels when ``data`` is an array: two classes (binary FGM) or
        K >= 3 classes (one feature set shared by all classes).
    B, C, loss, max_iter, tol, fit_intercept, inner_tol, inner_max_iter,
    inner_kkt_tol,
    block_size, scheduler, num_workers, callback
        See :func:`ultrafs.methods.fgm.fit_fgm`.
    command : str, optional
        Recorded in the model's ``params``.
    poly : {1, 2}
        1: the candidates are the columns; 2: all degree-2 polynomial
        features of the kernel (gamma x'z + coef0)^2, generated on the fly.
    gamma, coef0 : float
        Kernel parameters for ``poly=2`` (gamma > 0, coef0 >= 0).
    checkpoint : path, optional
        Directory where the loop state is committed after every outer
        iteration (see :mod:`ultrafs.methods.checkpoint`).
    resume : bool
        Continue from the checkpoint's state; refused (with the reason)
        when it was written for other data or parameters.
    progress : bool
        Show the progress of every scoring pass on stderr.
    refit : bool
        Also fit an ℓ2-regularised model of the same loss on the selected
        columns only (``1/2 ||W||^2 + refit_C sum_i loss_i``, the paper's
        de-biased model, solved to the same KKT certificate) and predict
        with it; the model keeps FGM's weights too.
    refit_C : float, optional
        ``C`` of the refit (default: ``C``).

    Returns
    -------
    model : Model
        Only the features with a nonzero weight (in some class): up to
        ``B * max_iter`` of them.  ``model.history`` keeps what each pass
        proposed (``n_features``) next to the nonzero count
        (``n_nonzero``).
    """
    store = as_store(data, y)
    features = make_feature_space(store, poly=poly, gamma=gamma, coef0=coef0)
    params = {"poly": int(poly), "B": int(B), "C": float(C), "loss": loss,
              "max_iter": int(max_iter), "tol": float(tol),
              "fit_intercept": bool(fit_intercept),
              "inner_tol": float(inner_tol), "inner_max_iter": int(inner_max_iter),
              "inner_kkt_tol": None if inner_kkt_tol is None else float(inner_kkt_tol),
              "id_offset": int(store.id_offset)}
    params.update({name: value for name, value in features.spec().items()
                   if name != "kind"})
    if resume and checkpoint is None:
        raise ParameterError("resume needs a checkpoint directory")
    saver = None
    if checkpoint is not None:
        saver = Checkpoint(checkpoint, store_fingerprint(store), params)
    y, n_classes = _classification_targets(store)
    result = fit_fgm(
        features, y, n_classes=n_classes, B=B, C=C, loss=loss, max_iter=max_iter,
        tol=tol, fit_intercept=fit_intercept, inner_tol=inner_tol,
        inner_max_iter=inner_max_iter, inner_kkt_tol=inner_kkt_tol,
        block_size=block_size,
        scheduler=scheduler, num_workers=num_workers, callback=callback,
        checkpoint=saver, resume=resume, progress=progress)
    if command:
        params["command"] = command
    # "selected" means a nonzero weight: the features the ℓ2,1² penalty set
    # to zero stay in the history (what each pass proposed), not in the model
    nonzero = result.nonzero()
    refitted = None
    if refit:
        refitted = _refit(features, result, nonzero, y, n_classes, loss,
                          float(C if refit_C is None else refit_C), fit_intercept,
                          inner_tol, inner_kkt_tol)
        params["refit_C"] = refitted["C"]
    return Model(
        features=features.feature_ids(result.keys[nonzero]),
        coef=np.asarray(result.coef_matrix()[nonzero], dtype=np.float64),
        intercept=-result.bias,
        batches=_nonzero_batches(result.batch_ptr, nonzero),
        loss=loss,
        classes=[float(c) for c in store.classes],
        target="binary" if n_classes is None else "multiclass",
        feature_space=features.spec(),
        params=params,
        history=result.history,
        stop_reason=result.stop_reason,
        refit=refitted,
        predictor="refit" if refitted is not None else "selection",
    )


def _classification_targets(store):
    """The store's labels as FGM takes them: (±1 labels, None) or (indices, K)."""
    target = getattr(store, "target_type", "binary")
    if target == "binary":
        return store.read_labels(), None
    if target == "multiclass":
        return store.read_class_indices(), len(store.classes)
    where = getattr(store, "path", None)
    raise ParameterError(
        f"{where or 'data'}: FGM selects features for classification, but the "
        f"targets are {target} (regression methods are not available yet)")


def _nonzero_batches(batch_ptr, nonzero):
    """Batch boundaries counting only the features with a nonzero weight."""
    counts = [int(np.count_nonzero(nonzero[lo:hi]))
              for lo, hi in zip(batch_ptr[:-1], batch_ptr[1:])]
    return [0] + np.cumsum(counts, dtype=np.int64).tolist()


#: inner iterations allowed to the refit (one block: a ridge-type problem)
REFIT_MAX_ITER = 20000


def _refit(features, result, nonzero, y, n_classes, loss, C, fit_intercept,
           inner_tol, inner_kkt_tol):
    """ℓ2-regularised refit of the same loss on the selected columns only.

    With one block the ℓ2,1² penalty is ``1/2 ||W||^2``: the refit is the
    FGM subproblem on one block, solved by the same APG from FGM's weights.
    """
    if not (np.isfinite(C) and C > 0):
        raise ParameterError(f"refit_C must be > 0, got {C!r}")
    keys = result.keys[nonzero]
    block = features.materialize(keys)
    datafit = make_datafit(block.indptr, block.indices, block.values(np.float64), y, C,
                           loss=loss, n_classes=n_classes)
    K = datafit.n_outputs
    coef0 = result.coef_matrix()[nonzero].ravel()
    solution = solve(datafit, np.array([0, len(keys) * K]), fit_intercept=fit_intercept,
                     coef0=coef0, bias0=result.bias, tol=inner_tol,
                     max_iter=REFIT_MAX_ITER,
                     kkt_tol=DEFAULT_KKT_TOL if inner_kkt_tol is None else inner_kkt_tol)
    coef = solution.coef if K == 1 else solution.coef.reshape(len(keys), K)
    return {"coef": np.asarray(coef, dtype=np.float64), "intercept": -solution.bias,
            "C": C, "kkt": float(solution.kkt)}

