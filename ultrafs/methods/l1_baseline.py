"""Baseline: scikit-learn's ℓ1-regularised logistic regression at given feature counts.

For each requested count m, ``C`` is bisected on a log scale so that the
number of nonzero coefficients equals m, or is the largest count found not
above m.  The model is ``LogisticRegression(solver="liblinear", ℓ1,
fit_intercept=True)``: ``||w||_1 + C sum_i log(1 + exp(-y_i (x_i w + b)))``,
where liblinear also penalises the intercept (``intercept_scaling=1``).

Unlike FGM this baseline is **not out-of-core**: :func:`read_csr` loads the
whole training store in memory as a scipy CSR matrix, and refuses stores
with more than ``max_nnz`` stored values (default :data:`L1_MAX_NNZ`).
Binary targets only.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ultrafs.errors import ParameterError

__all__ = ["L1_MAX_NNZ", "check_in_memory", "read_csr", "l1_logistic_at_counts"]

#: the largest training store (stored values) the baseline loads in memory:
#: about 2.4 GB as a float64 CSR matrix, plus liblinear's own copy
L1_MAX_NNZ = 200_000_000
#: liblinear fits allowed per requested count
MAX_FITS_PER_COUNT = 30
#: the bisection stops when hi / lo < 1 + C_RTOL
C_RTOL = 1e-4
#: the upward search stops at l1_min_c x C_SPAN
C_SPAN = 1e8


def check_in_memory(store, max_nnz=L1_MAX_NNZ) -> None:
    """One-line :class:`ParameterError` when ``store`` is too large to load."""
    nnz = int(store.nnz)
    if max_nnz is not None and nnz > int(max_nnz):
        where = getattr(store, "path", None) or "the training store"
        raise ParameterError(
            f"{where}: {nnz:,} stored values, above the limit of {int(max_nnz):,} "
            f"for the l1-LR baseline, which loads the training store in memory "
            f"(raise the limit, e.g. --l1-max-nnz, or drop the training store)")


def read_csr(store, *, max_nnz=L1_MAX_NNZ):
    """The whole store as a float64 scipy CSR matrix (n_samples, n_features).

    Read block by block (the store's own partition), then converted once.
    Refused in one line when the store holds more than ``max_nnz`` values
    (``None``: no limit).
    """
    import scipy.sparse as sp

    check_in_memory(store, max_nnz)
    bounds = np.asarray(store.default_block_bounds(), dtype=np.int64)
    indptr = [np.zeros(1, dtype=np.int64)]
    indices, data = [], []
    offset = 0
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        block = store.read_range(lo, hi)
        indptr.append(np.asarray(block.indptr[1:], dtype=np.int64) + offset)
        indices.append(np.asarray(block.indices, dtype=np.int32))
        data.append(block.values(np.float64))
        offset += block.nnz
    X = sp.csc_matrix((np.concatenate(data) if data else np.zeros(0),
                       np.concatenate(indices) if indices else np.zeros(0, np.int32),
                       np.concatenate(indptr)),
                      shape=(int(store.n_samples), int(store.n_features)))
    return X.tocsr()


def _l1_logistic(C, random_state, tol, max_iter):
    """``LogisticRegression`` with the ℓ1 penalty, spelled for this scikit-learn."""
    import sklearn
    from sklearn.linear_model import LogisticRegression

    major, minor = (int(part) for part in sklearn.__version__.split(".")[:2])
    # scikit-learn 1.8 deprecates penalty= in favour of l1_ratio=; before
    # 1.8, l1_ratio is ignored unless penalty="elasticnet"
    penalty = {"l1_ratio": 1.0} if (major, minor) >= (1, 8) else {"penalty": "l1"}
    return LogisticRegression(solver="liblinear", C=C, fit_intercept=True, tol=tol,
                              max_iter=max_iter, random_state=random_state, **penalty)


def l1_logistic_at_counts(X, y, counts, *, tol=1e-4, max_iter=1000, random_state=0,
                          max_fits=MAX_FITS_PER_COUNT, on_count=None) -> list[dict]:
    """ℓ1-LR fits whose number of nonzero weights matches each of ``counts``.

    Parameters
    ----------
    X : scipy.sparse matrix (n, m)
    y : array (n,)
        ±1 labels.
    counts : sequence of int
        Target numbers of nonzero weights (the intercept is not counted).
    tol, max_iter, random_state
        Passed to ``LogisticRegression``.
    max_fits : int
        Fits allowed per count (the fits are shared between counts).
    on_count : callable, optional
        ``on_count(result)`` after each count, with its dict below (a
        progress hook).

    Returns
    -------
    list of dict, one per count, in order
        ``target`` (the count), ``nnz`` (<= target: equal when the
        bisection found such a ``C``), ``C``, ``columns`` (int64, the
        nonzero columns), ``coef`` (their weights), ``intercept``,
        ``converged`` (no ConvergenceWarning) and ``n_fits`` (fits made
        for this count).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import l1_min_c

    y = np.asarray(y, dtype=np.float64)
    if set(np.unique(y).tolist()) - {-1.0, 1.0}:
        raise ParameterError("the l1-LR baseline needs ±1 labels (binary targets)")
    fits = {}   # C -> fit summary

    def fit(C):
        if C in fits:
            return fits[C]
        clf = _l1_logistic(C, random_state, tol, max_iter)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            clf.fit(X, y)
        coef = np.asarray(clf.coef_, dtype=np.float64).ravel()
        if list(clf.classes_) != [-1.0, 1.0]:   # a single class: nothing learnt
            coef = np.zeros_like(coef)
        columns = np.flatnonzero(coef)
        fits[C] = {"C": float(C), "nnz": int(columns.size),
                   "columns": columns.astype(np.int64), "coef": coef[columns],
                   "intercept": float(np.ravel(clf.intercept_)[0]),
                   "converged": not any(issubclass(w.category, ConvergenceWarning)
                                        for w in caught)}
        for w in caught:
            if not issubclass(w.category, ConvergenceWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return fits[C]

    c_min = float(l1_min_c(X, y, loss="log", fit_intercept=True))
    if not (np.isfinite(c_min) and c_min > 0):
        c_min = 1e-6
    results = []
    for target in counts:
        target = int(target)
        made = len(fits)
        fit(c_min)

        def bracket():
            below = [C for C, r in fits.items() if r["nnz"] <= target]
            lo = max(below) if below else c_min
            above = [C for C, r in fits.items() if C > lo and r["nnz"] > target]
            return lo, (min(above) if above else None)

        lo, hi = bracket()
        # search upwards (x10) until some C gives more than target weights
        while (hi is None and fits[lo]["nnz"] < target and lo < c_min * C_SPAN
               and len(fits) - made < max_fits):
            fit(lo * 10.0)
            lo, hi = bracket()
        # bisect on log C
        while (hi is not None and fits[lo]["nnz"] != target and hi / lo > 1 + C_RTOL
               and len(fits) - made < max_fits):
            fit(math.sqrt(lo * hi))
            lo, hi = bracket()
        eligible = [r for r in fits.values() if r["nnz"] <= target]
        if not eligible:   # below l1_min_c every weight (and the intercept) is 0
            eligible = [fit(c_min / 2.0)]
        best = max(eligible, key=lambda r: (r["nnz"], r["C"]))
        results.append({**best, "target": target, "n_fits": len(fits) - made})
        if on_count is not None:
            on_count(results[-1])
    return results
