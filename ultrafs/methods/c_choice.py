"""FGM's choice of C: data-scaled (``C="scale"``) or chosen on held-out rows
(``C="auto"``, one stratified split or K folds), and the held-out scoring of
a fit and of its refits.

``C="scale"`` (:func:`ultrafs.methods.c_scale.scale_C`) is ``10 / s`` with
``s`` the median, over the columns, of the mean square of a column's
nonzero values (degree 2: the largest degree-2 value of a row whose two
largest squares are ``s``; one streamed pass, O(m)).  Why: C weighs the
loss against ``½(Σ_h ‖ω_h‖)²``, and a feature ×s needs its weight /s, so C
must follow ``1/s²`` of the features a model uses; a median over columns
is a typical feature's scale, which one unscaled column cannot move.  The
row-maximum rule of issue 8 (``10 / mean_i max_j x_ij²``) is owned by
the largest column: one column ×100 of ``rng.random((100, 8))`` made it
0.003 and FGM's training accuracy 0.55-0.62 (this rule: C ≈ 30, 0.97-1.00
over 5 seeds); on 0/1 data both rules give the paper's C = 10.
Measured on every set of ``../shared/data``: ``bench/notes/23-c-rule.md``.
``C="auto"`` keeps its grid around the row-maximum rule's C
(:func:`ultrafs.methods.validation.default_C`), as measured by
``bench/quality_vs_l1.py``.

:func:`resolve_C` is what FGM's method (:mod:`ultrafs.methods.fgm_method`)
calls; the walk over the grid is :func:`ultrafs.methods.validation.choose_C`,
which asks a :class:`HeldOutScorer` for the scores.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.features import make_feature_space
from ultrafs.methods.c_scale import scale_C
from ultrafs.solvers.datafits import make_datafit

__all__ = ["resolve_C", "fold_threads", "HeldOutScorer", "held_out_scores", "read_only",
           "search_journal", "KeptWarmStart",
           "THREADED_FOLDS_MIN_NNZ", "THREADED_FOLDS_MIN_ROWS"]


def resolve_C(C, refit_C, refit, store, features, y, n_classes, space, fit_options,
               validation_fraction, cv, seed, C_grid=None, checkpoint=None,
               resume=False):
    """The C (and refit C) to fit with: given, data-scaled, or validated.

    ``C="auto"`` walks :func:`~ultrafs.methods.validation.c_grid` of the
    data-scaled C, widened past an edge where the best point lies; with
    ``C_grid`` (numbers > 0) it walks that grid as given, never widened
    (an edge is recorded in the curve and reported).

    With ``checkpoint`` (a
    :class:`~ultrafs.methods.c_search_checkpoint.SearchCheckpoint` bound
    to the data and the run's parameters) the search commits every grid
    point it scores; with ``resume`` it continues from the committed
    points (one line on the ``ultrafs.resume`` logger) and chooses what
    the uninterrupted search chooses.

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
    if C_grid is not None and not (isinstance(C, str) and C == "auto"):
        raise ParameterError("C_grid is the grid of C='auto': it needs C='auto'")
    if isinstance(C, str):
        if C not in ("scale", "auto"):
            raise ParameterError(f"C must be a number > 0, 'scale' or 'auto', got {C!r}")
        # weighted like the loss: integer weights give the C of repeated rows
        weights = fit_options.get("sample_weight")
        if C == "scale":
            return scale_C(features, sample_weight=weights, **pass_options), refit_C, None
        # the grid of C="auto" keeps its centre of issue 8, the row-maximum
        # rule (its choices are what bench/quality_vs_l1.py measured)
        center = None if C_grid is not None else val.default_C(
            features, sample_weight=weights, **pass_options)
        folds, method, fraction = val.default_folds(
            y, validation_fraction=validation_fraction, cv=cv, seed=seed)
        grid = val.c_grid(center) if C_grid is None else val.given_grid(C_grid)
        refit_grid = None
        if refit:
            refit_grid = grid if refit_C is None else [float(refit_C)]
        scorer = HeldOutScorer(store, y, n_classes, space, fit_options)
        journal = None
        if checkpoint is not None:
            journal = search_journal(
                checkpoint, resume, scorer, features, n_classes,
                {"search_grid": grid, "search_given": C_grid is not None,
                 "search_refit_grid": refit_grid, "search_method": method,
                 "search_folds": len(folds), "search_fraction": fraction,
                 "seed": int(seed)})
        n_jobs = fold_threads(store, len(folds), fit_options)
        if n_jobs > 1:
            scorer.prepare(folds)           # the copies, made in this thread
        curve = val.choose_C(folds, grid, scorer, refit_grid=refit_grid,
                             method=method, fraction=fraction, seed=seed,
                             n_jobs=n_jobs, widen=C_grid is None, journal=journal)
        return curve.C, curve.refit_C if refit else refit_C, curve
    if isinstance(C, bool) or not isinstance(C, (int, float, np.integer, np.floating)):
        raise ParameterError(f"C must be a number > 0, 'scale' or 'auto', got {C!r}")
    return float(C), refit_C, None


def search_journal(checkpoint, resume, scorer, features, n_classes, search):
    """The :class:`~ultrafs.methods.c_search_checkpoint.SearchJournal` of a
    search: ``checkpoint``'s binding extended by the ``search``'s own
    parameters (grid, refit grid, folds, seed); with ``resume`` and a
    committed search, its points to replay (the journal says so on the
    ``ultrafs.resume`` logger once they are replayed) and its warm starts
    restored in ``scorer``.  The scorer then keeps every fit's solutions
    for the commits.
    """
    from ultrafs.methods.c_search_checkpoint import SearchCheckpoint, SearchJournal

    bound = SearchCheckpoint(checkpoint.directory, checkpoint.fingerprint,
                             {**checkpoint.params, **search})
    visits = []
    if resume and bound.exists():
        visits, solutions = bound.load(
            n_folds=search["search_folds"], n_keys=features.n_keys,
            n_outputs=1 if n_classes in (None, 2) else int(n_classes),
            refit=search["search_refit_grid"] is not None)
        scorer.restore(solutions)
    scorer.keep_solutions()
    return SearchJournal(bound, visits, scorer.solutions_of)


#: folds are fitted in threads at once only for data with at least this
#: many entries or rows: smaller fits spend most of their time in Python
#: and threads slow them (5-fold C="auto" + refit, 2 cores, wall seconds
#: one thread -> two, bench/c_auto_cost.py --threads: dexter 19k entries
#: 0.38 -> 0.61, rcv1_small 56k 0.57 -> 0.72, arcene 383k 0.53 -> 0.63;
#: gisette 3.5M 2.11 -> 1.62, a9a 32,561 rows 3.01 -> 1.99, imdb unigrams
#: 25,000 rows 7.19 -> 4.82)
THREADED_FOLDS_MIN_NNZ = 1 << 20
THREADED_FOLDS_MIN_ROWS = 10_000


def fold_threads(store, n_folds, fit_options) -> int:
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


def read_only(targets):
    """``targets`` (a fold's copy) made read-only, as a store's targets are.

    numba compiles a kernel once per array type, and a read-only array is a
    type of its own: the loss kernels, compiled for the stores' read-only
    targets by a plain fit, would compile again for a fold's writable copy
    (issue 35).
    """
    targets.flags.writeable = False
    return targets


class HeldOutScorer:
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
        self._kept = None       # (fold, C) -> the fit's subproblem solutions

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
            warm = self._warm.setdefault(fold, GridWarmStart())
            if self._kept is not None:
                warm = KeptWarmStart(warm, [self._kept.setdefault((fold, float(C)), {})
                                            for C in Cs])
            specs.append((part, read_only(self.y[train]), warm,
                          None if self.weights is None else self.weights[train]))
        results = fit_fgm_folds(specs, Cs, n_classes=self.n_classes, **self.options)
        for (fold, _, _), fold_results in zip(folds, results):
            for C, result in zip(Cs, fold_results):
                self._fits[fold, float(C)] = result

    def keep_solutions(self):
        """Keep every fit's subproblem solutions until :meth:`solutions_of`
        takes them (a search in a checkpoint commits them)."""
        if self._kept is None:
            self._kept = {}

    def solutions_of(self, C):
        """Every fold's subproblem solutions of its fit at ``C`` (in fold
        order; JSON-ready dicts), forgotten here once taken."""
        folds = sorted(fold for fold, fitted in self._kept if fitted == float(C))
        return [list(self._kept.pop((fold, float(C))).values()) for fold in folds]

    def restore(self, solutions):
        """Make ``solutions`` (:meth:`solutions_of`'s, one list per fold) the
        warm starts of each fold's next fit, as if it had just fitted them."""
        from ultrafs.methods.fgm import GridWarmStart

        for fold, entries in enumerate(solutions):
            warm = GridWarmStart()
            for entry in entries:
                bias = entry["bias"]
                warm.record(np.asarray(entry["keys"], dtype=np.int64), entry["n_outputs"],
                            np.asarray(entry["coef"], dtype=np.float64),
                            np.asarray(bias, dtype=np.float64) if isinstance(bias, list)
                            else float(bias), entry["iteration"])
            self._warm[fold] = warm

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
        y_train = read_only(self.y[train])
        if (fold, float(C)) not in self._fits:
            self.prefit([(fold, train, validation)], [C])
        result = self._fits.pop((fold, float(C)))
        nonzero = result.nonzero()
        if hasattr(held_out, "adopt"):       # quantise as the fitted space does
            held_out.adopt(part)
        block = held_out.materialize(result.keys[nonzero])
        y_held = read_only(self.y[validation])
        n_features = int(np.count_nonzero(nonzero))
        # FGM's own weights (the only record without a refit; with one, they
        # compete with the refits for which model predicts)
        yield {"refit_C": None, "n_features": n_features,
               **held_out_scores(block, result.coef_matrix()[nonzero],
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
                   **held_out_scores(block, refitted["coef"], -refitted["intercept"],
                                      y_held, self.n_classes, o["loss"], w_held)}


class KeptWarmStart:
    """A :class:`~ultrafs.methods.fgm.GridWarmStart` whose chained fits'
    solutions are also kept, as JSON-ready dicts, one dict per fit.

    Parameters
    ----------
    warm : GridWarmStart
    kept : list of dict
        One per fit of the next :meth:`chain`, in grid order; each receives
        ``{(keys bytes, n_outputs): entry}`` as its fit records solutions.
    """

    def __init__(self, warm, kept):
        self.warm = warm
        self.kept = kept

    def chain(self, n_fits):
        """:meth:`GridWarmStart.chain`'s links, each keeping its fit's solutions."""
        links = self.warm.chain(n_fits)
        return [_KeptLink(link, kept) for link, kept in zip(links, self.kept)] \
            + links[len(self.kept):]


class _KeptLink:
    """One fit's link: looks up as the link does, records into it and ``kept``."""

    def __init__(self, link, kept):
        self.link = link
        self.kept = kept

    def next_fit(self):
        self.link.next_fit()

    def lookup(self, keys, n_outputs, iteration):
        return self.link.lookup(keys, n_outputs, iteration)

    def record(self, keys, n_outputs, coef, bias, iteration):
        self.link.record(keys, n_outputs, coef, bias, iteration)
        keys = np.asarray(keys, dtype=np.int64)
        bias = (np.asarray(bias, dtype=np.float64).tolist() if np.ndim(bias)
                else float(bias))
        self.kept[keys.tobytes(), int(n_outputs)] = {
            "keys": keys.tolist(), "n_outputs": int(n_outputs),
            "iteration": int(iteration),
            "coef": np.asarray(coef, dtype=np.float64).ravel().tolist(), "bias": bias}


def held_out_scores(block, coef, bias, y, n_classes, loss, sample_weight=None):
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
