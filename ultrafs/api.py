"""Functional core shared by the CLI and the estimator."""

from __future__ import annotations

import numpy as np

from ultrafs.features import make_feature_space
from ultrafs.methods.fgm import fit_fgm, sample_weight_digest
from ultrafs.solvers.apg import DEFAULT_KKT_TOL
from ultrafs.solvers.datafits import check_sample_weight, make_datafit
from ultrafs.methods.checkpoint import Checkpoint, store_fingerprint
from ultrafs.store.targets import require_labels
from ultrafs.errors import ParameterError
from ultrafs.model import Model
from ultrafs.solvers.gram_operators import ScaledGramOperator
from ultrafs.store import as_store

__all__ = ["select", "class_weight_values", "l1_path", "select_l1", "l1_model",
           "path_to_dict", "select_mslr", "select_sklr", "select_gsrfs", "gsrfs_targets",
           "fit_gsrfs_store"]


def select(data, y=None, *, B=50, C="scale", loss="logistic", max_iter=10,
           tol=1e-3, fit_intercept=True, inner_tol=1e-3, inner_max_iter=1000,
           inner_kkt_tol=DEFAULT_KKT_TOL,
           block_size=None, scheduler=None, num_workers=None, callback=None,
           command=None, poly=1, gamma=1.0, coef0=1.0, checkpoint=None,
           resume=False, progress=False, refit=False, refit_C=None,
           validation_fraction=None, cv=None, seed=0, sample_weight=None,
           class_weight=None, memory_limit=None, groups=None, tree=None,
           kernel=None, kernel_params=None, inner_solver="auto"):
    """Select features with FGM and return the fitted :class:`Model`.

    Parameters
    ----------
    data : ColumnStore, path of a store, ndarray or scipy.sparse matrix
    y : array-like, optional
        Labels when ``data`` is an array: two classes (binary FGM) or
        K >= 3 classes (one feature set shared by all classes).
    C : float, "scale" or "auto"
        Weight of the loss.  "scale" (the default):
        ``DEFAULT_C_SCALE / mean_i ||phi(x_i)||^2``, which behaves the same
        whatever the scale of the rows; "auto": chosen on held-out rows
        (see :mod:`ultrafs.methods.validation`); a number is used as is.
    B, loss, max_iter, tol, fit_intercept, inner_tol, inner_max_iter,
    inner_kkt_tol, inner_solver,
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
        with it; the model keeps FGM's weights too.  With ``C="auto"`` the
        held-out rows also score FGM's own weights, and those predict
        (``Model.predictor == "selection"``) where they score better.
    refit_C : float, optional
        ``C`` of the refit (default: ``C``; with ``C="auto"`` chosen on the
        same held-out rows, from the same grid).
    validation_fraction : float, optional
        Share of the rows held out (stratified) by ``C="auto"``; default
        0.2 unless ``cv`` is given.
    cv : int, optional
        ``C="auto"`` with this many stratified folds instead of one split.
        With the threads scheduler, folds whose rows are copied into memory
        and data of at least 2**20 entries or 10,000 rows, up to
        ``num_workers`` (default: the CPU count) folds are fitted at once;
        the choice is the same for every thread count.
    seed : int
        Seed of the split or folds of ``C="auto"``.
    sample_weight : array-like of shape (n_samples,), optional
        Per-sample weights ``s_i``: FGM, the refit and ``C="auto"`` minimise
        ``C sum_i s_i loss_i`` (+ penalty).  Finite, ``>= 0``, not all zero.
    class_weight : "balanced", dict or None
        Weights per class, multiplied into ``sample_weight``: "balanced" is
        ``n_samples / (n_classes * count(class))`` (as scikit-learn, counts
        over all rows); a dict maps class values (the store's ``classes``)
        to weights (classes it does not name keep weight 1).  With weights
        ``C="auto"`` scores the held-out rows by their weighted accuracy
        (then the weighted mean loss): with ``"balanced"`` that is about
        the balanced accuracy.  ``C="scale"`` uses the weighted mean.  The
        model's ``params`` record ``class_weight`` ("balanced" or "given"),
        ``class_weights`` (one per class) and ``sample_weight_digest`` (the
        SHA-256 of the weights used, which checkpoints compare).
    memory_limit : int, optional
        Bytes the run may hold: the loop stops before an outer iteration
        whose projected peak resident memory would exceed it (see
        :func:`ultrafs.methods.fgm.fit_fgm`); the stop reason says so.
    groups : optional
        Select groups of columns (paper §2.2–2.3): one group id per column
        (an int array; negative: in no group), a mapping ``{group id:
        [feature ids]}`` or a pair ``(feature_ids, group_ids)`` (a feature
        may be in several groups), or a
        :class:`~ultrafs.features.groups.GroupMap`.  ``B`` and the budget
        then count groups; model features are ``[group id, feature id]``.
    tree : int array, optional
        Tree-structured groups (Definition 1): the parent of every node,
        -1 for roots; nodes ``0..m-1`` are the columns (leaves), the others
        inner nodes (:mod:`ultrafs.features.tree`).  Features are
        ``[node id, feature id]``.
    kernel : {"hik", "chi2", "intersection", "js"}, optional
        Select the features of an additive kernel (paper §6.1): each
        feature's explicit map is a group generated on the fly
        (:mod:`ultrafs.features.additive`; values must be >= 0).  Model
        features are ``[feature id, l]`` (generated column l).
    kernel_params : dict, optional
        ``{"q": 100}`` (HIK levels), or ``{"n": 5, "period": L}`` (order and
        sampling step of the chi2 / intersection / JS maps).

    Returns
    -------
    model : Model
        Only the features with a nonzero weight (in some class): up to
        ``B * max_iter`` of them.  ``model.history`` keeps what each pass
        proposed (``n_features``) next to the nonzero count
        (``n_nonzero``).
    """
    store = as_store(data, y)
    features = make_feature_space(store, poly=poly, gamma=gamma, coef0=coef0,
                                  groups=groups, tree=tree, kernel=kernel,
                                  kernel_params=kernel_params)
    # the structure, converted once, for the spaces of row subsets (C="auto")
    space = {"poly": poly, "gamma": gamma, "coef0": coef0,
             "groups": getattr(features, "groups", None) if groups is not None else None,
             "tree": getattr(features, "tree", None),
             "kernel": kernel, "kernel_params": kernel_params}
    y, n_classes = _classification_targets(store)
    weights, weight_params = _sample_weights(store, y, n_classes, sample_weight,
                                             class_weight)
    fit_options = {"B": B, "loss": loss, "max_iter": max_iter, "tol": tol,
                   "fit_intercept": fit_intercept, "inner_tol": inner_tol,
                   "inner_max_iter": inner_max_iter, "inner_kkt_tol": inner_kkt_tol,
                   "block_size": block_size, "scheduler": scheduler,
                   "num_workers": num_workers, "sample_weight": weights,
                   "inner_solver": inner_solver}
    C_rule = C if isinstance(C, str) else "given"
    C, refit_C, validation = _resolve_C(
        C, refit_C, refit, store, features, y, n_classes,
        space, fit_options,
        validation_fraction, cv, seed)
    params = {"poly": int(poly), "B": int(B), "C": float(C), "C_rule": C_rule,
              "loss": loss,
              "max_iter": int(max_iter), "tol": float(tol),
              "fit_intercept": bool(fit_intercept),
              "inner_tol": float(inner_tol), "inner_max_iter": int(inner_max_iter),
              "inner_kkt_tol": None if inner_kkt_tol is None else float(inner_kkt_tol),
              "id_offset": int(store.id_offset), **weight_params}
    if inner_solver != "auto":        # recorded (and compared by checkpoints) when chosen
        params["inner_solver"] = inner_solver
    params.update({name: value for name, value in features.spec().items()
                   if name not in ("kind", "scales")})
    if features.kind != "linear" and features.poly_degree is None:
        params["space"] = features.kind
        params["n_candidates"] = int(features.n_candidates)
        digest = getattr(features, "structure_digest", None)
        if digest is not None:
            params["structure_digest"] = digest()
    if resume and checkpoint is None:
        raise ParameterError("resume needs a checkpoint directory")
    saver = None
    if checkpoint is not None:
        saver = Checkpoint(checkpoint, store_fingerprint(store), params)
    result = fit_fgm(
        features, y, n_classes=n_classes, B=B, C=C, loss=loss, max_iter=max_iter,
        tol=tol, fit_intercept=fit_intercept, inner_tol=inner_tol,
        inner_max_iter=inner_max_iter, inner_kkt_tol=inner_kkt_tol,
        block_size=block_size,
        scheduler=scheduler, num_workers=num_workers, callback=callback,
        checkpoint=saver, resume=resume, progress=progress, sample_weight=weights,
        memory_limit=memory_limit, inner_solver=inner_solver)
    if command:
        params["command"] = command
    # names the data the model was fitted on (see ultrafs/store/fingerprint.py)
    params["data_fingerprint"] = getattr(store, "fingerprint", None)
    # "selected" means a nonzero weight: the features the ℓ2,1² penalty set
    # to zero stay in the history (what each pass proposed), not in the model
    nonzero = result.nonzero()
    refitted = None
    if refit:
        refitted = _refit(features, result, nonzero, y, n_classes, loss,
                          float(C if refit_C is None else refit_C), fit_intercept,
                          inner_tol, inner_kkt_tol, weights)
        params["refit_C"] = refitted["C"]
    if validation is not None:
        params["validation"] = validation.to_dict()
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
        predictor=_predictor(refitted, validation),
        feature_names=Model.names_from_store(
            features.feature_ids(result.keys[nonzero]), store, features.kind),
    )


def _predictor(refitted, validation):
    """Which weights predict: the refit's, unless there is none or the
    held-out rows of ``C="auto"`` scored FGM's own weights better."""
    if refitted is None or (validation is not None
                            and validation.predictor == "selection"):
        return "selection"
    return "refit"


def _classification_targets(store):
    """The store's labels as FGM takes them: (±1 labels, None) or (indices, K)."""
    target = getattr(store, "target_type", "binary")
    if target == "binary":
        return store.read_labels(), None
    if target == "multiclass":
        return store.read_class_indices(), len(store.classes)
    where = getattr(store, "path", None)
    require_labels(target, str(where or "data"))
    raise ParameterError(
        f"{where or 'data'}: FGM selects features for classification, but the "
        f"targets are {target} (regression methods are not available yet)")


def class_weight_values(class_weight, classes, class_index):
    """Per-class weights, aligned with ``classes``.

    Parameters
    ----------
    class_weight : "balanced" or dict
        "balanced": ``n / (K * count_k)`` (scikit-learn's rule); a dict maps
        class values to weights > 0 (finite); classes not named get 1.
    classes : sequence
        The class values (a store's ``classes``).
    class_index : int array, shape (n,)
        Index in ``classes`` of every sample.

    Returns
    -------
    ndarray of float64, shape (K,)
    """
    classes = list(classes)
    K = len(classes)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ParameterError(
                f"class_weight must be 'balanced', a dict or None, got {class_weight!r}")
        counts = np.bincount(class_index, minlength=K).astype(np.float64)
        if np.any(counts == 0):
            raise ParameterError("class_weight='balanced' needs a sample of every class")
        return len(class_index) / (K * counts)
    if not isinstance(class_weight, dict):
        raise ParameterError(
            f"class_weight must be 'balanced', a dict or None, got {class_weight!r}")
    values = np.ones(K)
    for key, weight in class_weight.items():
        k = _class_position(key, classes)
        try:
            weight = float(weight)
        except (TypeError, ValueError):
            weight = float("nan")
        if not (np.isfinite(weight) and weight >= 0):
            raise ParameterError(
                f"class_weight of class {key!r} must be a finite number >= 0, got "
                f"{class_weight[key]!r}")
        values[k] = weight
    return values


def _class_position(key, classes):
    """Index of the class value ``key`` in ``classes`` (numbers compare as floats)."""
    for k, value in enumerate(classes):
        if key == value:
            return k
        try:
            if float(key) == float(value):
                return k
        except (TypeError, ValueError):
            pass
    shown = ", ".join(f"{c:g}" if isinstance(c, float) else str(c) for c in classes)
    raise ParameterError(f"class_weight names class {key!r}, not one of the classes "
                         f"({shown})")


def _sample_weights(store, y, n_classes, sample_weight, class_weight):
    """The per-sample weights of the fit (or None) and what the model records."""
    weights = check_sample_weight(sample_weight, len(y))
    params = {}
    if class_weight is not None:
        class_index = (np.asarray(y > 0, dtype=np.int64) if n_classes is None
                       else np.asarray(y, dtype=np.int64))
        per_class = class_weight_values(class_weight, store.classes, class_index)
        by_sample = per_class[class_index]
        weights = by_sample if weights is None else weights * by_sample
        weights = check_sample_weight(weights, len(y))
        params["class_weight"] = ("balanced" if isinstance(class_weight, str)
                                  else "given")
        params["class_weights"] = [float(w) for w in per_class]
    if weights is not None:
        params["sample_weight"] = sample_weight is not None
        params["sample_weight_digest"] = sample_weight_digest(weights)
    return weights, params


def _nonzero_batches(batch_ptr, nonzero):
    """Batch boundaries counting only the features with a nonzero weight."""
    counts = [int(np.count_nonzero(nonzero[lo:hi]))
              for lo, hi in zip(batch_ptr[:-1], batch_ptr[1:])]
    return [0] + np.cumsum(counts, dtype=np.int64).tolist()


def _refit(features, result, nonzero, y, n_classes, loss, C, fit_intercept,
           inner_tol, inner_kkt_tol, sample_weight=None):
    """ℓ2-regularised refit of the same loss on the selected columns only.

    With one block the ℓ2,1² penalty is ``1/2 ||W||^2``: the refit is the
    FGM subproblem on one block, solved by the same APG from FGM's weights
    (:func:`ultrafs.methods.refit.refit_block`).
    """
    from ultrafs.methods.refit import check_refit_C, refit_block

    C = check_refit_C(C)
    nonzero_coef = result.coef_matrix()[nonzero]
    block = features.materialize(result.keys[nonzero])
    return refit_block(block, y, loss=loss, C=C, n_classes=n_classes,
                       fit_intercept=fit_intercept, coef0=nonzero_coef,
                       bias0=result.bias, tol=inner_tol, kkt_tol=inner_kkt_tol,
                       sample_weight=sample_weight)



def _resolve_C(C, refit_C, refit, store, features, y, n_classes, space, fit_options,
               validation_fraction, cv, seed):
    """The C (and refit C) to fit with: given, data-scaled, or validated.

    Returns
    -------
    C : float
    refit_C : float or None
    validation : ValidationCurve or None
    """
    from ultrafs.methods import validation as val

    pass_options = {name: fit_options[name]
                    for name in ("block_size", "scheduler", "num_workers")}
    if (validation_fraction is not None or cv is not None) and not (
            isinstance(C, str) and C == "auto"):
        raise ParameterError("validation_fraction and cv choose C: they need C='auto'")
    if isinstance(C, str):
        if C not in ("scale", "auto"):
            raise ParameterError(f"C must be a number > 0, 'scale' or 'auto', got {C!r}")
        # weighted like the loss: integer weights give the C of repeated rows
        center = val.default_C(features, sample_weight=fit_options.get("sample_weight"),
                               **pass_options)
        if C == "scale":
            return center, refit_C, None
        folds, method, fraction = val.default_folds(
            y, validation_fraction=validation_fraction, cv=cv, seed=seed)
        grid = val.c_grid(center)
        refit_grid = None
        if refit:
            refit_grid = grid if refit_C is None else [float(refit_C)]
        scorer = _HeldOutScorer(store, y, n_classes, space, fit_options)
        n_jobs = _fold_threads(store, len(folds), fit_options)
        if n_jobs > 1:
            scorer.prepare(folds)           # the copies, made in this thread
        curve = val.choose_C(folds, grid, scorer, refit_grid=refit_grid,
                             method=method, fraction=fraction, seed=seed,
                             n_jobs=n_jobs)
        return curve.C, curve.refit_C if refit else refit_C, curve
    if isinstance(C, bool) or not isinstance(C, (int, float, np.integer, np.floating)):
        raise ParameterError(f"C must be a number > 0, 'scale' or 'auto', got {C!r}")
    return float(C), refit_C, None


#: folds are fitted in threads at once only for data with at least this
#: many entries or rows: smaller fits spend most of their time in Python
#: and threads slow them (5-fold C="auto" + refit, 2 cores, wall seconds
#: one thread -> two, bench/c_auto_cost.py --threads: dexter 19k entries
#: 0.38 -> 0.61, rcv1_small 56k 0.57 -> 0.72, arcene 383k 0.53 -> 0.63;
#: gisette 3.5M 2.11 -> 1.62, a9a 32,561 rows 3.01 -> 1.99, imdb unigrams
#: 25,000 rows 7.19 -> 4.82)
THREADED_FOLDS_MIN_NNZ = 1 << 20
THREADED_FOLDS_MIN_ROWS = 10_000


def _fold_threads(store, n_folds, fit_options) -> int:
    """Threads that fit the folds of ``C="auto"`` at the same time.

    Folds run concurrently only when their rows are copied into memory
    (:func:`~ultrafs.store.rows.rows_in_memory`: the store holds at most
    ``MATERIALIZE_MAX_NNZ`` entries, so K fits at once hold little), the
    fits are large enough to gain (``THREADED_FOLDS_MIN_NNZ`` entries or
    ``THREADED_FOLDS_MIN_ROWS`` rows) and the scheduler is local threads;
    ``"synchronous"``, ``"processes"`` and a distributed client fit the
    folds one after the other.  The threads are ``num_workers`` (default:
    the CPU count), at most one per fold.  The choice is the same for every
    thread count: each fold's fits are deterministic and the curve is
    assembled in fold order.
    """
    import os

    from ultrafs.scoring.scheduling import resolve_scheduler
    from ultrafs.store.rows import MATERIALIZE_MAX_NNZ

    if n_folds < 2 or store.nnz > MATERIALIZE_MAX_NNZ:
        return 1
    if store.nnz < THREADED_FOLDS_MIN_NNZ and store.n_samples < THREADED_FOLDS_MIN_ROWS:
        return 1
    if resolve_scheduler(fit_options.get("scheduler")) != "threads":
        return 1
    workers = fit_options.get("num_workers") or os.cpu_count() or 1
    return max(1, min(int(workers), n_folds))


def _read_only(targets):
    """``targets`` (a fold's copy) made read-only, as a store's targets are.

    numba compiles a kernel once per array type, and a read-only array is a
    type of its own: the loss kernels, compiled for the stores' read-only
    targets by a plain fit, would compile again for a fold's writable copy
    (issue 35).
    """
    targets.flags.writeable = False
    return targets


class _HeldOutScorer:
    """Fits FGM (and refits) on training rows, scores them on held-out rows."""

    def __init__(self, store, y, n_classes, space, fit_options):
        self.store = store
        self.y = y
        self.n_classes = n_classes
        self.space = space
        self.options = dict(fit_options)
        self.weights = self.options.pop("sample_weight", None)
        self._fold_spaces = {}
        self._warm = {}
        self._fits = {}

    def _spaces(self, fold, train, validation):
        """The fold's training and held-out feature spaces, made once per fold
        (in memory when small: :func:`~ultrafs.store.rows.rows_in_memory`)."""
        from ultrafs.store.rows import rows_in_memory

        if fold not in self._fold_spaces:
            self._fold_spaces[fold] = (
                make_feature_space(rows_in_memory(self.store, train), **self.space),
                make_feature_space(rows_in_memory(self.store, validation), **self.space))
        return self._fold_spaces[fold]

    def prepare(self, folds):
        """Make every fold's spaces now (before threads fit the folds)."""
        for fold, (train, validation) in enumerate(folds):
            self._spaces(fold, train, validation)

    def prefit(self, folds, Cs):
        """Fit FGM at every C of ``Cs`` on every fold of ``folds`` (``(index,
        train_rows, validation_rows)`` each) in one lockstep
        (:func:`~ultrafs.methods.fgm_grid.fit_fgm_folds`): a fold's fits
        share their passes, and folds whose training parts are row subsets
        of one store too large to copy read it once per outer iteration for
        all their fits.  The calls for these Cs then use the fits.  Each
        fold's fits along the grid share a
        :class:`~ultrafs.methods.fgm.GridWarmStart`."""
        from ultrafs.methods.fgm import GridWarmStart
        from ultrafs.methods.fgm_grid import fit_fgm_folds

        specs = []
        for fold, train, validation in folds:
            part, _ = self._spaces(fold, train, validation)
            specs.append((part, _read_only(self.y[train]),
                          self._warm.setdefault(fold, GridWarmStart()),
                          None if self.weights is None else self.weights[train]))
        results = fit_fgm_folds(specs, Cs, n_classes=self.n_classes, **self.options)
        for (fold, _, _), fold_results in zip(folds, results):
            for C, result in zip(Cs, fold_results):
                self._fits[fold, float(C)] = result

    def __call__(self, fold, train, validation, C, refit_grid):
        """Score the fold's FGM fit at ``C``; yield its held-out record, then
        one per refit C.

        A generator: :func:`~ultrafs.methods.validation.choose_C` asks for
        the refit Cs one at a time and stops asking when its walk ends.
        The fit is :meth:`prefit`'s (made now, alone, when the walk did
        not prefit ``C``).
        """
        o = self.options
        w = self.weights
        w_train = None if w is None else w[train]
        w_held = None if w is None else w[validation]
        part, held_out = self._spaces(fold, train, validation)
        y_train = _read_only(self.y[train])
        if (fold, float(C)) not in self._fits:
            self.prefit([(fold, train, validation)], [C])
        result = self._fits.pop((fold, float(C)))
        nonzero = result.nonzero()
        if hasattr(held_out, "adopt"):       # quantise as the fitted space does
            held_out.adopt(part)
        block = held_out.materialize(result.keys[nonzero])
        y_held = _read_only(self.y[validation])
        n_features = int(np.count_nonzero(nonzero))
        # FGM's own weights (the only record without a refit; with one, they
        # compete with the refits for which model predicts)
        yield {"refit_C": None, "n_features": n_features,
               **_held_out_scores(block, result.coef_matrix()[nonzero],
                                  result.bias, y_held, self.n_classes, o["loss"],
                                  w_held)}
        if refit_grid is None:
            return
        from ultrafs.methods.refit import refit_block

        columns = part.materialize(result.keys[nonzero])
        # warm start along the increasing grid: each refit starts from the
        # previous one (the first from FGM's weights)
        coef, bias = result.coef_matrix()[nonzero], result.bias
        for refit_C in refit_grid:
            refitted = refit_block(columns, y_train, loss=o["loss"], C=float(refit_C),
                                   n_classes=self.n_classes,
                                   fit_intercept=o["fit_intercept"], coef0=coef,
                                   bias0=bias, tol=o["inner_tol"],
                                   kkt_tol=o["inner_kkt_tol"], sample_weight=w_train)
            coef, bias = refitted["coef"], -refitted["intercept"]
            yield {"refit_C": float(refit_C), "n_features": n_features,
                   **_held_out_scores(block, refitted["coef"], -refitted["intercept"],
                                      y_held, self.n_classes, o["loss"], w_held)}


def _held_out_scores(block, coef, bias, y, n_classes, loss, sample_weight=None):
    """Accuracy and mean loss of ``X_block @ coef - bias`` on encoded targets.

    With sample weights both are weighted means (``sum_i s_i [correct_i] /
    sum_i s_i`` and ``sum_i s_i loss_i / sum_i s_i``); held-out rows whose
    weights are all zero score by the unweighted means.
    """
    datafit = make_datafit(block.indptr, block.indices, block.values(np.float64), y,
                           1.0, loss=loss, n_classes=n_classes)
    decision = datafit.decision(np.asarray(coef, dtype=np.float64).ravel(),
                                np.asarray(bias, dtype=np.float64)
                                if datafit.n_outputs > 1 else float(bias))
    mean_loss = datafit.value(decision) / len(y)
    if datafit.n_outputs == 1:
        correct = np.where(decision > 0, 1.0, -1.0) == y
    else:
        correct = np.argmax(decision.reshape(len(y), -1), axis=1) == y
    if sample_weight is not None and np.sum(sample_weight) > 0:
        total = float(np.sum(sample_weight))
        weighted = make_datafit(block.indptr, block.indices, block.values(np.float64),
                                y, 1.0, loss=loss, n_classes=n_classes,
                                sample_weight=sample_weight)
        return {"accuracy": float(np.dot(sample_weight, correct) / total),
                "loss": float(weighted.value(decision) / total)}
    return {"accuracy": float(np.mean(correct)), "loss": float(mean_loss)}


# --------------------------------------------------------------- ℓ1 paths
def l1_path(data, y=None, *, screening="slores", sequential=True, lambdas=None,
            n_lambdas=None, lambda_min_ratio=None, lambda_max_ratio=None,
            tol=None, max_iter=500, stop_at_nnz=None, block_size=None,
            scheduler=None, num_workers=None, callback=None):
    """The ℓ1-logistic regression path of ``data`` (seed 004).

    ``min (1/n) Σ log(1 + exp(−y_i (x_i'β + c))) + λ ||β||_1`` with an
    unpenalised intercept, on a decreasing grid of λ, screened by Slores
    (or the strong rule, or nothing) and certified on every column by a
    KKT pass: see :func:`ultrafs.methods.l1_path.fit_l1_path`, whose
    defaults apply to the arguments left None.

    Parameters
    ----------
    data : ColumnStore, path of a store, ndarray or scipy.sparse matrix
    y : array-like, optional
        Two classes when ``data`` is an array.

    Returns
    -------
    path : L1Path
    """
    from ultrafs.methods import l1_path as lp

    store = as_store(data, y)
    labels = _binary_labels(store)
    options = {"n_lambdas": n_lambdas, "lambda_min_ratio": lambda_min_ratio,
               "lambda_max_ratio": lambda_max_ratio, "tol": tol}
    options = {name: value for name, value in options.items() if value is not None}
    return lp.fit_l1_path(store, labels, screening=screening, sequential=sequential,
                          lambdas=lambdas, max_iter=max_iter, stop_at_nnz=stop_at_nnz,
                          block_size=block_size, scheduler=scheduler,
                          num_workers=num_workers, callback=callback, **options)


def _binary_labels(store):
    """±1 labels of a binary store; one line for anything else."""
    y, n_classes = _classification_targets(store)
    if n_classes is not None:
        raise ParameterError(
            f"ℓ1 logistic regression needs two classes; the data has {n_classes}")
    return np.asarray(y, dtype=np.float64)


def select_l1(data, y=None, *, features=None, C=None, command=None, **path_options):
    """One ℓ1-LR model from the screened path: by feature count or by C.

    Exactly one of:

    * ``features=K``: the model at the first λ of the path (the grid of
      ``path_options``) with at least K nonzero weights; the path stops
      there, and is refused in one line when even its smallest λ holds
      fewer;
    * ``C``: scikit-learn's ``C`` (``λ = 1/(n C)``), reached by a short
      warm-started path: ``L1_C_PATH_POINTS`` values from 0.95 λ_max down
      to λ, geometrically spaced (λ >= λ_max: the all-zero model).

    Returns
    -------
    model : Model
        ``params["method"] == "l1"``, with λ, λ/λ_max, ``C = 1/(n λ)`` and
        the screening recorded; ``history`` holds the path's records up to
        that λ.
    """
    from ultrafs.methods.slores import slores_statistics

    if (features is None) == (C is None):
        raise ParameterError("give exactly one of features (a count) and C")
    store = as_store(data, y)
    if features is not None:
        if not (isinstance(features, (int, np.integer)) and features >= 1):
            raise ParameterError(
                f"features must be a positive integer, got {features!r}")
        path = l1_path(store, stop_at_nnz=int(features), **path_options)
        index = path.first_with(int(features))
        if index < 0:
            last = path.records[-1]
            raise ParameterError(
                f"the path reaches {last['nnz']} nonzero weights at its smallest λ "
                f"(λ/λ_max = {last['ratio']:.3g}), fewer than the {features} asked "
                "for; lower the smallest λ (lambda_min_ratio, --lambda-min-ratio)")
        return l1_model(path, index, store, command=command, requested=int(features))
    if isinstance(C, bool) or not isinstance(C, (int, float, np.integer, np.floating)) \
            or not np.isfinite(C) or C <= 0:
        raise ParameterError(f"C must be a finite number > 0, got {C!r}")
    labels = _binary_labels(store)
    run = {name: path_options[name] for name in ("block_size", "scheduler", "num_workers")
           if name in path_options}
    stats = slores_statistics(store, labels, **run)
    lam = 1.0 / (store.n_samples * float(C))
    top = stats.lambda_max * path_options.get("lambda_max_ratio", 0.95)
    grid = (np.geomspace(top, lam, L1_C_PATH_POINTS) if lam < top else np.array([lam]))
    options = {name: value for name, value in path_options.items()
               if name not in ("n_lambdas", "lambda_min_ratio", "lambda_max_ratio")}
    from ultrafs.methods.l1_path import fit_l1_path

    options.setdefault("screening", "slores")
    path = fit_l1_path(store, labels, lambdas=grid, statistics=stats, **options)
    return l1_model(path, len(path.records) - 1, store, command=command)


#: λ values of the warm-started path that reaches a given C
L1_C_PATH_POINTS = 10


def l1_model(path, index, store, *, command=None, requested=None):
    """:class:`Model` of the ``index``-th λ of an :class:`L1Path` on ``store``."""
    columns = path.columns[index]
    record = path.records[index]
    ids = store.feature_ids(columns)
    params = {"method": "l1", "lambda": record["lambda"],
              "lambda_ratio": record["ratio"], "lambda_max": path.lambda_max,
              "C": record["C"], "C_rule": "path", "loss": "logistic",
              "fit_intercept": True, "screening": path.screening,
              "sequential": path.sequential, "id_offset": int(store.id_offset),
              "data_fingerprint": getattr(store, "fingerprint", None)}
    if requested is not None:
        params["features_requested"] = requested
    if command:
        params["command"] = command
    return Model(
        features=[int(v) for v in ids],
        coef=np.asarray(path.coefs[index], dtype=np.float64),
        intercept=float(path.intercepts[index]),
        batches=[0, len(columns)],
        loss="logistic",
        classes=[float(c) for c in store.classes],
        target="binary",
        params=params,
        history=[dict(r) for r in path.records[:index + 1]],
        stop_reason=(f"first λ of the path with at least {requested} nonzero weights"
                     if requested is not None else f"λ/λ_max = {record['ratio']:.4g}"),
        feature_names=Model.names_from_store(list(ids), store, "linear"),
    )


def path_to_dict(path, store, *, command=None) -> dict:
    """The JSON form of an :class:`L1Path` (``ultrafs path --out``)."""
    steps = []
    for record, columns, coef, intercept in zip(path.records, path.columns,
                                                 path.coefs, path.intercepts):
        step = dict(record)
        step["intercept"] = intercept
        step["features"] = [int(v) for v in store.feature_ids(columns)]
        step["coef"] = [float(v) for v in coef]
        steps.append(step)
    out = {"method": "l1", "screening": path.screening,
           "sequential": path.sequential, "lambda_max": path.lambda_max,
           "n_samples": path.n_samples, "n_features": path.n_features,
           "statistics_seconds": path.statistics_seconds,
           "data_fingerprint": getattr(store, "fingerprint", None),
           "path": steps}
    if command:
        out["command"] = command
    return out


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


def gsrfs_targets(store):
    """GSR-FS's target matrix of a store: ±1 class codes, or its real targets.

    Returns
    -------
    Y : float64 array (n_samples, c)
    target : {"binary", "multiclass", "continuous"}
    """
    from ultrafs.methods.gsrfs import encode_targets

    target = getattr(store, "target_type", "binary")
    where = getattr(store, "path", None)
    require_labels(target, str(where or "data"))
    if target == "continuous":
        return encode_targets(store.read_targets(), "continuous")[0], target
    K = len(store.classes)
    Y = -np.ones((store.n_samples, K))
    Y[np.arange(store.n_samples), store.read_class_indices()] = 1.0
    return Y, target


def _irls_options(tol, stop, max_iter, min_iter) -> dict:
    """The stop options of :func:`~ultrafs.methods.gsrfs.fit_gsrfs` from the faces'."""
    from ultrafs.methods import gsrfs as g

    irls = {"stop": stop,
            "max_iter": g.DEFAULT_MAX_ITER if max_iter is None else max_iter,
            "min_iter": g.DEFAULT_MIN_ITER if min_iter is None else min_iter}
    if tol is not None:
        irls["gtol" if stop == "stationarity" else "tol"] = tol
    return irls


#: a column whose standard deviation is at most this times its root mean
#: square is constant (the two-pass sums leave rounding of that order)
CONSTANT_COLUMN_RTOL = 1e-10


def column_std_factors(store, *, block_size=None, scheduler=None, num_workers=None):
    """``1/std_j`` of every column of a store (0 for a constant column), one pass."""
    from ultrafs.scoring.statistics import feature_statistics

    stats = feature_statistics(store, ("sum_squares", "centred_sum_squares"),
                               block_size=block_size, scheduler=scheduler,
                               num_workers=num_workers)
    n = max(int(store.n_samples), 1)
    std = np.sqrt(np.asarray(stats["centred_sum_squares"], dtype=np.float64) / n)
    rms = np.sqrt(np.asarray(stats["sum_squares"], dtype=np.float64) / n)
    factors = np.zeros_like(std)
    # a constant column's centred sum is rounding, not spread: dividing by
    # it would blow the column up by ~1e8 and ruin the Gram's conditioning
    live = std > CONSTANT_COLUMN_RTOL * rms
    factors[live] = 1.0 / std[live]
    return factors


def fit_gsrfs_store(store, Y, *, r=1.0, p=0.5, lam=1.0, fit_intercept=True, eps=None,
                    tol=None, stop="stationarity", max_iter=None, min_iter=None,
                    solve="auto", candidates=None, features=50, accelerate=None,
                    scale="auto", block_size=None, scheduler=None, num_workers=None,
                    in_memory_bytes=None):
    """GSR-FS on a store: IRLS on every feature, or the two-stage mode.

    ``candidates``: None runs IRLS on every feature (in memory when the
    store fits in ``in_memory_bytes``, else streamed); ``"auto"`` or an
    integer runs the two-stage mode with that many candidates (``"auto"``:
    :func:`~ultrafs.methods.gsrfs.default_candidates` of ``features``).
    ``tol`` is the tolerance of the ``stop`` rule (None: its default).
    ``scale``: "std" divides every column by its standard deviation (the
    paper's z-scoring; the centring is the intercept's, so sparse data stay
    sparse; constant columns are never ranked), "none" takes the columns as
    they are, "auto" is "std" on every feature and "none" in the two-stage
    mode (whose screening pass scores the stored columns).  The result's
    ``coef`` is in the stored columns' units, its ``row_norms`` (the
    ranking) in the scaled ones; ``result.column_factors`` holds the factors.
    """
    from ultrafs.methods import gsrfs as g

    g.check_gsrfs_params(r, p, lam, eps=eps, solve=solve, stop=stop)
    if scale not in ("auto", "std", "none"):
        raise ParameterError(f"scale must be auto, std or none, got {scale!r}")
    if scale == "std" and candidates is not None:
        raise ParameterError("the two-stage mode (candidates) screens the stored columns "
                             "as they are: scale them before ingestion, and leave the "
                             "scaling at none or auto")
    irls = {"solve": solve, "accelerate": None if accelerate is None else bool(accelerate),
            **_irls_options(tol, stop, max_iter, min_iter)}
    memory = g.IN_MEMORY_BYTES if in_memory_bytes is None else int(in_memory_bytes)
    passes = {"block_size": block_size, "scheduler": scheduler, "num_workers": num_workers}
    if candidates is None:
        op = g.gram_operator(store, in_memory_bytes=memory, **passes)
        factors = None
        if scale != "none":
            factors = column_std_factors(store, **passes)
            op = ScaledGramOperator(op, factors)
        result = g.fit_gsrfs(op, Y, r=r, p=p, lam=lam, eps=eps,
                             fit_intercept=fit_intercept, **irls)
        if factors is not None:
            result.coef = result.coef * factors[:, None]
        result.column_factors = factors
        return result
    if candidates == "auto":
        candidates = g.default_candidates(features, store.n_features)
    return g.fit_gsrfs_two_stage(store, Y, n_candidates=candidates, r=r, p=p, lam=lam,
                                 eps=eps, fit_intercept=fit_intercept,
                                 in_memory_bytes=memory, **passes, **irls)


def select_gsrfs(data, y=None, *, features=50, r=1.0, p=0.5, lam=1.0, fit_intercept=True,
                 eps=None, tol=None, stop="stationarity", max_iter=None, min_iter=None,
                 solve="auto", candidates=None, scale="auto", block_size=None,
                 scheduler=None, num_workers=None, in_memory_bytes=None, command=None):
    """Select features by GSR-FS (seed 002) and return its :class:`Model`.

    Parameters
    ----------
    data : ColumnStore, path of a store, ndarray or scipy.sparse matrix
    y : array-like, optional
        Class labels or real targets when ``data`` is an array.
    features : int
        How many of the best-ranked features the model keeps (fewer when
        fewer rows of ``W`` are nonzero).
    r, p, lam, fit_intercept, eps, tol, stop, max_iter, min_iter, solve,
    candidates, scale, block_size, scheduler, num_workers, in_memory_bytes
        See :func:`fit_gsrfs_store` and :func:`ultrafs.methods.gsrfs.fit_gsrfs`.
    command : str, optional
        Recorded in ``params``.

    Returns
    -------
    model : Model
        ``params["method"] == "gsrfs"``.  ``features`` are the best-ranked
        store ids, best first, with their rows of ``W``: for two classes
        the one decision column ``(w_+ − w_−)/2`` (the sign of the
        difference of the two ±1-code fits), for K classes the K columns
        (the predicted class has the largest fit), for a continuous target
        its one column (the prediction).  ``params["scores"]`` holds their
        ``‖w_j‖`` in the fit on every feature (or candidate); the weights
        are those of GSR-FS refit on the selected features alone (same r,
        p, λ; ``params["refit"]`` says how it converged), which predict.
    """
    if not (isinstance(features, (int, np.integer)) and not isinstance(features, bool)
            and features >= 1):
        raise ParameterError(f"features must be an integer >= 1, got {features!r}")
    if candidates is not None and candidates != "auto" and not (
            isinstance(candidates, (int, np.integer)) and candidates >= 1):
        raise ParameterError(f"candidates must be 'auto' or an integer >= 1, got {candidates!r}")
    store = as_store(data, y)
    Y, target = gsrfs_targets(store)
    result = fit_gsrfs_store(store, Y, r=r, p=p, lam=lam, fit_intercept=fit_intercept,
                             eps=eps, tol=tol, stop=stop, max_iter=max_iter,
                             min_iter=min_iter, solve=solve, candidates=candidates,
                             features=features, scale=scale, block_size=block_size,
                             scheduler=scheduler,
                             num_workers=num_workers, in_memory_bytes=in_memory_bytes)
    top = result.top(features)
    # the model predicts with GSR-FS refit on its selected columns (same r, p,
    # λ): the rows of the full fit leave out the other features' share of
    # every prediction (large on data that is not centred)
    from ultrafs.methods.gsrfs import fit_gsrfs, gram_operator

    order = np.argsort(top, kind="stable")
    op = gram_operator(store, top[order], block_size=block_size, scheduler=scheduler,
                       num_workers=num_workers)
    factors = result.column_factors
    if factors is not None:
        op = ScaledGramOperator(op, factors[top[order]])
    refit = fit_gsrfs(op, Y, r=r, p=p, lam=lam, eps=eps, fit_intercept=fit_intercept,
                      **_irls_options(tol, stop, max_iter, min_iter))
    W = np.empty_like(refit.coef)
    W[order] = refit.coef if factors is None else refit.coef * factors[top[order], None]
    b = refit.intercept
    if target == "binary":
        coef, intercept, classes = (W[:, 1] - W[:, 0]) / 2.0, float(b[1] - b[0]) / 2.0, \
            [float(c) for c in store.classes]
    elif target == "multiclass":
        coef, intercept, classes = W, np.asarray(b, dtype=np.float64), \
            [float(c) for c in store.classes]
    else:
        coef, intercept, classes = W[:, 0], float(b[0]), []
    ids = store.feature_ids(top)
    params = {"method": "gsrfs", "r": float(r), "p": float(p), "lam": float(lam),
              "fit_intercept": bool(fit_intercept),
              "scale": "std" if result.column_factors is not None else "none",
              "eps": result.eps,
              "eps_penalty": result.eps_penalty, "solve": result.solve, "stop": stop,
              "converged": bool(result.converged), "n_iter": int(result.n_iter),
              "objective": result.objective,
              "objective_unsmoothed": result.objective_unsmoothed,
              "stationarity": result.stationarity, "n_outputs": int(Y.shape[1]),
              "n_ranked": int(len(result.ranking)), "n_features_asked": int(features),
              "scores": [float(v) for v in result.row_norms[result.rows(top)]],
              "refit": {"n_iter": int(refit.n_iter), "converged": bool(refit.converged),
                        "stationarity": refit.stationarity,
                        "objective": refit.objective},
              "n_passes": int(result.n_passes), "seconds": float(result.seconds),
              "loss": f"l2,{float(r):g}", "C": 1.0,
              "id_offset": int(store.id_offset),
              "data_fingerprint": getattr(store, "fingerprint", None)}
    if result.kkt_dead is not None:
        params["kkt_dead"] = result.kkt_dead
    if tol is not None:
        params["tol"] = float(tol)
    if result.candidates is not None:
        params["candidates"] = int(len(result.candidates))
        params["rounds"] = [{k: v for k, v in rnd.items() if v is not None}
                            for rnd in result.rounds]
    if command:
        params["command"] = command
    history = [{k: v for k, v in h.items() if v is not None} for h in result.history]
    return Model(
        features=[int(i) for i in ids], coef=np.asarray(coef, dtype=np.float64),
        intercept=intercept, batches=[0, len(top)], loss="l2r", classes=classes,
        target=target, feature_space={"kind": "linear"}, params=params, history=history,
        stop_reason=result.stop_reason,
        feature_names=Model.names_from_store(ids, store, "linear"))
