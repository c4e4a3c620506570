"""K-fold cross-validation along the ℓ1-LR path, as glmnet's ``cv.glmnet``.

The λ grid is fixed from the whole data (the path's own λ, from its
λ_max), so that every fold is solved at the same λ.  The rows are dealt
into K folds stratified by class and seeded
(:func:`ultrafs.methods.validation.stratified_folds`: the same folds for
the same labels, K and seed).  For each fold, the path of the other K − 1
folds is solved at every λ of the grid by the path's own engine
(:func:`ultrafs.methods.l1_path.l1_path_points`: screened, warm-started,
certified on every column; a λ above the fold's own λ_max gives the
intercept-only model) and scored on the held-out fold:

* the **deviance** ``(2/m) Σ log(1 + exp(−y_i f_i))`` over its m rows
  (glmnet's binomial deviance, ``type.measure = "deviance"``, computed
  without glmnet's clipping of the probabilities to [1e-5, 1 − 1e-5]);
* the **accuracy** (the sign of the decision value against the ±1 label);
* the model's nonzero count.

The folds advance side by side, one λ at a time, so that each λ's line
of progress holds all K folds.  Per λ, over the folds (glmnet's
``cvm``, ``cvsd`` with ``grouped = TRUE``): the mean weighted by the fold
sizes, the standard deviation ``sqrt(Σ w_k (v_k − mean)² / Σ w_k)`` and
the standard error ``std / sqrt(K − 1)`` (glmnet's ``cvsd``).  The
choices (glmnet's):

* ``lambda_min``: the largest λ of smallest mean deviance;
* ``lambda_1se``: the largest λ whose mean deviance is at most the
  smallest one plus its standard error (the one-standard-error rule).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ultrafs.errors import ParameterError

__all__ = ["PathCV", "cross_validate_path", "fold_scores", "cv_summary",
           "one_se_choice", "on_terminal", "DEFAULT_CV_SEED"]

#: seed of the folds when none is given
DEFAULT_CV_SEED = 0


@dataclass
class PathCV:
    """Result of :func:`cross_validate_path`.

    Attributes
    ----------
    n_folds : int
    seed : int
    lambdas : float64 array, shape (n_lambdas,)
        The grid, decreasing (the whole data's path).
    fold_sizes : list of int
        Held-out rows of each fold.
    deviance, accuracy : float64 arrays, shape (n_folds, n_lambdas)
        Held-out deviance and accuracy of each fold at each λ.
    nnz : int64 array, shape (n_folds, n_lambdas)
        Nonzero weights of each fold's model.
    seconds : float
    """

    n_folds: int
    seed: int
    lambdas: np.ndarray
    fold_sizes: list
    deviance: np.ndarray
    accuracy: np.ndarray
    nnz: np.ndarray
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)

    def to_dict(self, lambda_max=None) -> dict:
        """The JSON form recorded in a path file under ``"cv"``.

        ``points`` (one per λ): ``lambda`` (and ``ratio`` λ/λ_max when
        ``lambda_max`` is given), ``deviance_mean``, ``deviance_std``,
        ``deviance_se``, ``accuracy_mean``, ``accuracy_std``,
        ``accuracy_se``, ``nnz_mean``, and the per-fold ``fold_deviance``,
        ``fold_accuracy``, ``fold_nnz``; then ``index_min``, ``lambda_min``,
        ``index_1se``, ``lambda_1se``.
        """
        summary = self.summary or cv_summary(self.deviance, self.accuracy, self.nnz,
                                             self.fold_sizes)
        points = []
        for j, lam in enumerate(self.lambdas):
            point = {"lambda": float(lam)}
            if lambda_max:
                point["ratio"] = float(lam) / float(lambda_max)
            for name in ("deviance_mean", "deviance_std", "deviance_se",
                         "accuracy_mean", "accuracy_std", "accuracy_se", "nnz_mean"):
                point[name] = float(summary[name][j])
            point["fold_deviance"] = [float(v) for v in self.deviance[:, j]]
            point["fold_accuracy"] = [float(v) for v in self.accuracy[:, j]]
            point["fold_nnz"] = [int(v) for v in self.nnz[:, j]]
            points.append(point)
        index_min, index_1se = one_se_choice(summary["deviance_mean"],
                                             summary["deviance_se"])
        return {"n_folds": int(self.n_folds), "seed": int(self.seed),
                "stratified": True, "measure": "deviance",
                "fold_sizes": [int(v) for v in self.fold_sizes],
                "seconds": float(self.seconds), "points": points,
                "index_min": index_min, "lambda_min": float(self.lambdas[index_min]),
                "index_1se": index_1se, "lambda_1se": float(self.lambdas[index_1se])}


def fold_scores(decision, y):
    """Held-out deviance and accuracy of decision values.

    Parameters
    ----------
    decision : float64 array, shape (m,)
    y : float64 array of ±1, shape (m,)

    Returns
    -------
    deviance : float
        ``(2/m) Σ log(1 + exp(−y_i decision_i))``.
    accuracy : float
        Share of rows with ``sign(decision) == y`` (decision 0: class −1).
    """
    margin = y * decision
    deviance = 2.0 * float(np.mean(np.logaddexp(0.0, -margin)))
    predicted = np.where(decision > 0, 1.0, -1.0)
    return deviance, float(np.mean(predicted == y))


def cv_summary(deviance, accuracy, nnz, fold_sizes) -> dict:
    """Per λ, over the folds: mean (weighted by fold size), std and standard error.

    Parameters
    ----------
    deviance, accuracy : float64 arrays, shape (n_folds, n_lambdas)
    nnz : int array, shape (n_folds, n_lambdas)
    fold_sizes : array-like of int, shape (n_folds,)

    Returns
    -------
    dict of float64 arrays of shape (n_lambdas,)
        ``deviance_mean``, ``deviance_std``, ``deviance_se``, the same for
        ``accuracy``, and ``nnz_mean`` (unweighted).
    """
    w = np.asarray(fold_sizes, dtype=np.float64)
    k = w.size
    out = {}
    for name, values in (("deviance", deviance), ("accuracy", accuracy)):
        values = np.asarray(values, dtype=np.float64)
        mean = (w @ values) / w.sum()
        std = np.sqrt((w @ (values - mean) ** 2) / w.sum())
        out[f"{name}_mean"] = mean
        out[f"{name}_std"] = std
        out[f"{name}_se"] = std / np.sqrt(k - 1) if k > 1 else np.zeros_like(std)
    out["nnz_mean"] = np.asarray(nnz, dtype=np.float64).mean(axis=0)
    return out


def one_se_choice(mean, se):
    """glmnet's ``lambda.min`` and ``lambda.1se`` as indices of a decreasing grid.

    Parameters
    ----------
    mean, se : float64 arrays, shape (n_lambdas,)
        Mean held-out deviance and its standard error, λ decreasing.

    Returns
    -------
    index_min : int
        The first (largest λ) index of the smallest mean.
    index_1se : int
        The first (largest λ) index whose mean is at most
        ``mean[index_min] + se[index_min]``.
    """
    mean, se = np.asarray(mean, dtype=np.float64), np.asarray(se, dtype=np.float64)
    index_min = int(np.flatnonzero(mean <= mean.min())[0])
    bound = mean[index_min] + se[index_min]
    index_1se = int(np.flatnonzero(mean <= bound)[0])
    return index_min, index_1se


class _HeldOut:
    """The held-out rows of one fold and the columns of them read so far."""

    def __init__(self, store, y):
        self.store, self.y = store, y
        self.position = {}
        self.parts = []          # (rows, values) per column read
        self.matrix = None

    def decision(self, columns, coef, intercept):
        """``X_held[:, columns] @ coef + intercept``, shape (m,)."""
        from scipy import sparse

        missing = [int(c) for c in columns if int(c) not in self.position]
        if missing:
            block = self.store.read_columns(np.asarray(missing, dtype=np.int64))
            values = block.values(np.float64)
            for j, column in enumerate(missing):
                lo, hi = block.indptr[j], block.indptr[j + 1]
                self.position[column] = len(self.parts)
                self.parts.append((np.asarray(block.indices[lo:hi], dtype=np.int64),
                                   np.asarray(values[lo:hi], dtype=np.float64)))
            self.matrix = None
        if self.matrix is None and self.parts:
            indptr = np.zeros(len(self.parts) + 1, dtype=np.int64)
            indptr[1:] = np.cumsum([rows.size for rows, _ in self.parts])
            self.matrix = sparse.csc_matrix(
                (np.concatenate([v for _, v in self.parts]),
                 np.concatenate([r for r, _ in self.parts]), indptr),
                shape=(self.store.n_samples, len(self.parts)))
        decision = np.full(self.store.n_samples, float(intercept))
        if len(columns):
            full = np.zeros(len(self.parts))
            full[[self.position[int(c)] for c in columns]] = coef
            decision += self.matrix @ full
        return decision


def cross_validate_path(store, y, lambdas, *, n_folds=5, seed=DEFAULT_CV_SEED,
                        screening="slores", sequential=True, tol=1e-6, max_iter=500,
                        block_size=None, scheduler=None, num_workers=None,
                        lambda_max=None, memory_budget=None) -> PathCV:
    """K-fold cross-validation of the ℓ1-LR path at the λ of ``lambdas``.

    Parameters
    ----------
    store : ColumnStore
    y : float64 array of ±1, shape (n_samples,)
    lambdas : float64 array, shape (n_lambdas,)
        The whole data's grid, decreasing.
    n_folds : int
        K >= 2; every class needs at least K rows.
    seed : int
        Seed of the stratified folds.
    screening, sequential, tol, max_iter, block_size, scheduler, num_workers
        As for :func:`ultrafs.methods.l1_path.fit_l1_path`, for every fold.
    lambda_max : float, optional
        The whole data's λ_max, for λ/λ_max in the progress lines.
    memory_budget : int, optional
        Bytes the folds' decoded copies may take together (default: one
        path's, :data:`~ultrafs.methods.l1_resident.DEFAULT_MEMORY_BUDGET`),
        shared equally: a fold whose copy exceeds its share runs out of core.

    Notes
    -----
    Progress: one :func:`ultrafs.progress.phase`, "cross-validating the
    path", one step per λ (all folds): a bar on a terminal, one line per λ
    otherwise (silent unless the run shows progress).

    Returns
    -------
    PathCV
    """
    from ultrafs.methods.l1_path import l1_path_points
    from ultrafs.methods.validation import stratified_folds
    from ultrafs.progress import phase
    from ultrafs.store.rows import rows_in_memory

    y = np.asarray(y, dtype=np.float64)
    grid = np.asarray(lambdas, dtype=np.float64).ravel()
    if grid.size == 0:
        raise ParameterError("the path has no λ to cross-validate")
    if np.any(np.diff(grid) > 0):
        raise ParameterError("the λ of a cross-validated path must be decreasing")
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) \
            or n_folds < 2:
        raise ParameterError(f"--cv must be an integer >= 2, got {n_folds!r}")
    smallest = min(int(np.sum(y > 0)), int(np.sum(y < 0)))
    if smallest < n_folds:
        raise ParameterError(f"--cv {n_folds} needs at least {n_folds} rows of each "
                             f"class; the smaller class has {smallest}")
    started = time.perf_counter()
    folds = stratified_folds(y, int(n_folds), seed)
    from ultrafs.methods.l1_resident import DEFAULT_MEMORY_BUDGET

    budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else int(memory_budget)
    run = dict(screening=screening, sequential=sequential, tol=tol, max_iter=max_iter,
               block_size=block_size, scheduler=scheduler, num_workers=num_workers,
               memory_budget=budget // int(n_folds))
    walkers, held = [], []
    for train, test in folds:
        walkers.append(l1_path_points(rows_in_memory(store, train), y[train], grid,
                                      **run))
        held.append(_HeldOut(rows_in_memory(store, test), y[test]))
    k, m = len(folds), grid.size
    deviance, accuracy = np.empty((k, m)), np.empty((k, m))
    nnz = np.zeros((k, m), dtype=np.int64)
    sizes = [len(test) for _, test in folds]
    with phase(f"cross-validating the path ({k} folds)", total=m, unit="λ") as shown:
        for j, lam in enumerate(grid):
            for f in range(k):
                record, columns, coef, intercept = next(walkers[f])
                decision = held[f].decision(columns, coef, intercept)
                deviance[f, j], accuracy[f, j] = fold_scores(decision, held[f].y)
                nnz[f, j] = record["nnz"]
            line = _progress_line(lam, lambda_max, deviance[:, j], accuracy[:, j],
                                  nnz[:, j], sizes)
            if not on_terminal(shown):
                shown.write(line)
            shown.update(1, status=line.split(": ", 1)[1])
    summary = cv_summary(deviance, accuracy, nnz, sizes)
    return PathCV(n_folds=k, seed=int(seed), lambdas=grid, fold_sizes=sizes,
                  deviance=deviance, accuracy=accuracy, nnz=nnz,
                  seconds=time.perf_counter() - started, summary=summary)


def on_terminal(shown) -> bool:
    """Whether a :class:`~ultrafs.progress.Phase` draws a bar (its stream is
    a terminal): per-step lines are written only when it does not."""
    try:
        return bool(shown.stream.isatty())
    except (AttributeError, ValueError):
        return False


def _progress_line(lam, lambda_max, deviance, accuracy, nnz, sizes) -> str:
    """One λ's line: the folds' mean held-out deviance, accuracy, nonzeros."""
    s = cv_summary(deviance[:, None], accuracy[:, None], nnz[:, None], sizes)
    where = f"λ/λ_max {lam / lambda_max:.3g}" if lambda_max else f"λ {lam:.4g}"
    return (f"{where}: held-out deviance {s['deviance_mean'][0]:.4f} "
            f"± {s['deviance_se'][0]:.4f}, accuracy {s['accuracy_mean'][0]:.4f}, "
            f"{s['nnz_mean'][0]:.1f} nonzero (mean of {len(sizes)} folds)")
