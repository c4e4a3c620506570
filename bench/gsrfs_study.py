"""GSR-FS (seed 002, Peng & Fan): selection quality, iterations and the two-stage mode.

Question: which of the paper's claims (digest ``sklr-gsrfs.md`` §B4)
reproduce with :mod:`ultrafs.methods.gsrfs`, how does GSR-FS compare with
multi-class FGM, scikit-learn's MultiTaskLasso and ℓ1 multinomial logistic
regression at equal numbers of features, and what does the two-stage mode
cost on a store of 10⁶ features?

Parts (``--parts``, all by default):

``synthetic``
    The paper's generator (§5.1) as the library draws it
    (:func:`ultrafs.datasets.gsrfs_synthetic.make_gsrfs_synthetic`, the
    digest's [R] conventions: N(0, 0.1) and N(0, 0.5) are variances, whole
    rows of Y₀ are flipped, X is z-scored over all rows as in the paper):
    n = 2000, d₁ = 100, d₂ = 700, c = 5, a ∈ {0, 0.01, 0.1}; a seeded
    1500 / 500 train / test split.
    GSR-FS on the training rows against the corrupted Y₁, for r ∈ {0.5, 1,
    2} × p ∈ {1, 0.5} at λ = 1 (fixed: 5-fold CV over the paper's λ grid
    would cost 30 fits per cell), and a λ sweep {0.01, 0.1, 1, 10, 100} at
    a = 0.1, p = 1.  Figures: top-200 recall of X₁ ∪ X₂, and the RMSE on the
    test rows of an OLS refit (with intercept) on the training rows'
    top 200 against Y₁, measured against the clean Y₀ and the corrupted Y₁.
``classify``
    Accuracy of ``SVC(kernel="linear")`` (the paper's LIBSVM, one-vs-one)
    on the top-k features, k ∈ {10, 20, 50, 100} (k ≤ features / 2), over 5
    seeded stratified 60/40 splits (columns constant on the training rows
    dropped, z-scored with training statistics).  C by 3-fold inner CV over
    {0.01, 0.1, 1, 10} (``GridSearchCV``), or C = 1 where a set says so.
    Selectors, all fitted on the training rows only:

    * GSR-FS (``fit_gsrfs(DenseGramOperator(X), encode_targets(y))``,
      defaults: stop on the stationarity certificate, extrapolation on) for
      (r, p) ∈ {(2, 1), (1, 1), (1, 0.5), (0.5, 0.5), (2, 0.5)} at λ = 1,
      top-k by ``result.top(k)``; on digits, mnist and planted also λ chosen
      per k by inner CV with SVC C = 1 on the inner top k, among the λ whose
      inner fits all rank at least k features: on digits 3-fold
      over the paper's grid {1e-3, …, 100}, on mnist and planted one
      stratified holdout third over {1, 10, 100} (cost);
    * multi-class FGM: ``ultrafs.select(X, y, B=ceil(k_max/5),
      max_iter=10)`` (logistic loss, C = "scale", intercept; K classes share
      one feature set), top-k by the norm of the weight rows;
    * ``MultiTaskLasso(fit_intercept=True)`` on the ±1 codes along a
      warm-started path of 60 α from α_max down to 1e-3 α_max, stopped once
      k_max rows are nonzero: for each k, the top-k rows (by norm) at the
      first α with at least k nonzero rows;
    * ℓ1 multinomial LR, ``LogisticRegression(l1_ratio=1, solver="saga",
      tol=1e-3, max_iter=1000)`` along a warm-started path of 40 C from
      ``l1_min_c`` up to 1000 of it, stopped once k_max rows are nonzero;
      top-k rows of ``coef_`` as for MultiTaskLasso;
    * random k features (seeded) and all features.
``timing``
    GSR-FS iterations and CPU seconds at λ = 1 on digits (1797 × 61) and on
    the synthetic set (2000 × 1000, a = 0.1): the default (stationarity
    ``gtol`` 1e-3, extrapolation), stationarity without extrapolation, and
    the paper's Algorithm 1 with its stop (``stop="objective", tol=1e-4,
    accelerate=False, min_iter=1``).
``twostage``
    A wide multi-class Zarr store written by this script's generator through
    ``ultrafs.store.writers.zarr_writer.StoreWriter`` (``make_wide``:
    10,000 samples × 1,000,000 columns with Zipf-like column frequencies,
    N(0, 1) values, 5 classes from 50 planted columns), then
    ``fit_gsrfs_two_stage`` in a child process per configuration (peak RSS
    by GNU time), and the same generator at 3,000 × 50,000 where IRLS on
    every feature (Woodbury) is the reference for the two-stage top 50
    (n_candidates 100, 500, 1000, and 5000 for p < 1 only: with p = 1 its
    KKT rounds re-run IRLS on 5,000+ candidates, about 6 minutes).

Timing: ``time.process_time`` (CPU seconds of this process) and wall
seconds around each call; the machine is shared (2 cores), so compare
ratios within the run.  BLAS, OpenMP and numba are limited to one thread
(``--threads``, default 1) before numpy is imported.

Usage::

    python bench/gsrfs_study.py [--quick] [--parts synthetic,classify,timing,twostage]
                                [--sets digits,planted,mnist,gisette,madelon]
                                [--name gsrfs_study] [--report JSON] [--threads 1]

Raw results: ``bench/out/NAME.json``; tables: ``bench/out/NAME.md``.
``--quick``: a small synthetic set, digits (1 split, k ∈ {10, 20}, C = 1,
three (r, p)), the timing on digits and stores of 2,000 × 100,000 and
800 × 5,000 (larger λ/λ_max): a smoke run of about 30 seconds.
``--splits N`` runs N splits per set; ``--regenerate`` rewrites the stores
(reused from ``bench/out/gsrfs_wide/`` otherwise).
"""

from __future__ import annotations

import os
import sys


def _threads_from_argv(argv, default=1):
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if arg.startswith("--threads="):
            return int(arg.split("=", 1)[1])
    return default


THREADS = _threads_from_argv(sys.argv)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, str(THREADS))

import argparse  # noqa: E402
import bz2  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, OUT_DIR, peak_rss_mb, run_measured, write_result  # noqa: E402

CONFIGS = ((2.0, 1.0), (1.0, 1.0), (1.0, 0.5), (0.5, 0.5), (2.0, 0.5))
KS = (10, 20, 50, 100)
SVC_CS = (1e-2, 1e-1, 1.0, 10.0)
LAM_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
N_SPLITS = 5
SEED = 0
ALL_SETS = ("digits", "planted", "mnist", "gisette", "madelon")
#: sets whose SVC C is fixed at 1 (inner CV too slow), and sets with λ by inner CV
SVC_FIXED_C = {"madelon"}
LAM_CV = {"digits": (LAM_GRID, 3), "mnist": ((1.0, 10.0, 100.0), 1),
          "planted": ((1.0, 10.0, 100.0), 1)}
MTL_ALPHAS = 60
LR_CS = 40
SYN = {"n": 2000, "d1": 100, "d2": 700, "c": 5, "n_test": 500}
SYN_QUICK = {"n": 600, "d1": 20, "d2": 140, "c": 3, "n_test": 200}
SYN_AS = (0.0, 0.01, 0.1)
SYN_RS = (0.5, 1.0, 2.0)
SYN_PS = (1.0, 0.5)
SYN_SWEEP_LAMS = (1e-2, 1e-1, 1.0, 10.0, 100.0)
#: the wide store, its small twin (full IRLS), the configurations
WIDE = {"n": 10_000, "m": 1_000_000}
SMALL = {"n": 3_000, "m": 50_000}
WIDE_QUICK = {"n": 2_000, "m": 100_000}
SMALL_QUICK = {"n": 800, "m": 5_000}
TOP = 50
#: (r, p, λ/λ_max) of the two-stage runs
TS_CONFIGS = ((2.0, 1.0, 0.05), (2.0, 0.5, 0.02), (1.0, 1.0, 0.05), (1.0, 0.5, 0.02))
#: quick: fewer samples, so larger λ/λ_max for a comparably sparse model
TS_CONFIGS_QUICK = ((2.0, 1.0, 0.2), (2.0, 0.5, 0.05))
TS_CANDIDATES_WIDE = (100, 500, 2000)         # besides the default
TS_CANDIDATES_SMALL = (100, 500, 1000, 5000)


# ------------------------------------------------------------------ helpers
def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def git_info():
    root = Path(__file__).resolve().parent.parent
    def run(*cmd):
        try:
            return subprocess.run(cmd, cwd=root, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None
    import ultrafs
    return {"head": run("git", "rev-parse", "HEAD"),
            "dirty_library_files": run("git", "status", "--porcelain", "--", "ultrafs"),
            "ultrafs_file": ultrafs.__file__,
            "library_commit": os.environ.get("ULTRAFS_COMMIT")}


def zscore(Xtr, Xte):
    """Drop the columns constant on the training rows (exactly: ``ptp``, not a
    rounded std), z-score with the training statistics."""
    keep = np.ptp(Xtr, axis=0) > 0
    Xtr, Xte = Xtr[:, keep], Xte[:, keep]
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    return (Xtr - mu) / sd, (Xte - mu) / sd, np.flatnonzero(keep)


def row_order(coef_rows):
    """Rows by decreasing norm (ties by number), zero rows left out."""
    coef_rows = np.asarray(coef_rows, dtype=np.float64)
    norms = (np.sqrt(np.sum(coef_rows ** 2, axis=1)) if coef_rows.ndim == 2
             else np.abs(coef_rows))
    keep = np.flatnonzero(norms > 0)
    return keep[np.lexsort((keep, -norms[keep]))]


def gsrfs_fit(X, Y, r, p, lam, **kw):
    from ultrafs.methods.gsrfs import fit_gsrfs
    from ultrafs.solvers.gram_operators import DenseGramOperator

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fit_gsrfs(DenseGramOperator(X), Y, r=r, p=p, lam=lam, **kw)
    res.n_warnings = len(caught)
    return res


# ------------------------------------------------------------------ part A: synthetic
def paper_synthetic(n, d1, d2, c, a, seed=SEED):
    """X (z-scored over all rows), clean Y₀ and corrupted Y₁ of the paper's generator.

    :func:`ultrafs.datasets.gsrfs_synthetic.make_gsrfs_synthetic` draws X, W
    and the noise before the outlier rows, so ``a = 0`` and ``a > 0`` with the
    same seed share X and Y₀.
    """
    from ultrafs.datasets.gsrfs_synthetic import make_gsrfs_synthetic

    X, Y0 = make_gsrfs_synthetic(n=n, d1=d1, d2=d2, c=c, a=0.0, seed=seed)
    if a > 0:
        X1, Y1 = make_gsrfs_synthetic(n=n, d1=d1, d2=d2, c=c, a=a, seed=seed)
        assert np.array_equal(X, X1)
    else:
        Y1 = Y0
    return X, Y0, Y1


def ols_rmse(Xtr, Ytr, Xte, targets):
    """RMSE on the test rows of an OLS fit (with intercept) on the training rows."""
    A = np.hstack([Xtr, np.ones((len(Xtr), 1))])
    coef, *_ = np.linalg.lstsq(A, Ytr, rcond=None)
    pred = np.hstack([Xte, np.ones((len(Xte), 1))]) @ coef
    return {name: float(np.sqrt(np.mean((pred - T) ** 2))) for name, T in targets.items()}


def run_synthetic(quick):
    spec = SYN_QUICK if quick else SYN
    n, d1, d2, c, n_test = spec["n"], spec["d1"], spec["d2"], spec["c"], spec["n_test"]
    perm = np.random.default_rng([SEED, 2]).permutation(n)
    te, tr = perm[:n_test], perm[n_test:]
    k = 2 * d1
    informative = np.arange(2 * d1)
    out = {"spec": spec, "n_train": len(tr), "n_test": len(te), "top": k, "cells": [],
           "references": [], "sweep": []}
    a_values = (0.0, 0.1) if quick else SYN_AS
    r_values = (1.0, 2.0) if quick else SYN_RS
    p_values = (1.0,) if quick else SYN_PS
    for a in a_values:
        X, Y0, Y1 = paper_synthetic(n, d1, d2, c, a)
        Xtr, Xte = X[tr], X[te]
        out["flipped_rows_train"] = out.get("flipped_rows_train", {})
        out["flipped_rows_train"][str(a)] = int(np.sum(np.any(Y0[tr] != Y1[tr], axis=1)))
        targets = {"Y0": Y0[te], "Y1": Y1[te]}
        for name, cols in (("oracle (X1 ∪ X2)", informative), ("all features", np.arange(X.shape[1]))):
            out["references"].append({"a": a, "method": name,
                                      **ols_rmse(Xtr[:, cols], Y1[tr], Xte[:, cols], targets)})
        lam_list = [1.0]
        for p in p_values:
            for r in r_values:
                lams = SYN_SWEEP_LAMS if (not quick and a == 0.1 and p == 1.0) else lam_list
                for lam in lams:
                    res, cpu, wall = timed(lambda: gsrfs_fit(Xtr, Y1[tr], r, p, lam))
                    top = res.top(k)
                    rec = {"a": a, "r": r, "p": p, "lam": lam,
                           "recall": float(np.isin(top, informative).sum() / k),
                           "n_ranked": int(len(res.ranking)), "n_iter": res.n_iter,
                           "converged": bool(res.converged), "cpu_s": cpu, "wall_s": wall,
                           "stationarity": res.stationarity, "warnings": res.n_warnings,
                           **ols_rmse(Xtr[:, top], Y1[tr], Xte[:, top], targets)}
                    (out["cells"] if lam == 1.0 else out["sweep"]).append(rec)
                    if lam != 1.0:
                        out["sweep"][-1]["in_sweep"] = True
                    print(f"  synthetic a={a} r={r} p={p} lam={lam:g}: recall {rec['recall']:.3f} "
                          f"RMSE Y0 {rec['Y0']:.3f} Y1 {rec['Y1']:.3f} ({res.n_iter} it, {cpu:.1f} s)",
                          flush=True)
    return out


# ------------------------------------------------------------------ part B: classification
def _svmlight(fname, n_features):
    from sklearn.datasets import load_svmlight_file

    with bz2.open(DATA_DIR / fname, "rb") as fh:
        X, y = load_svmlight_file(fh, n_features=n_features, zero_based=False)
    return np.asarray(X.todense(), dtype=np.float64), y


def load_classification(name):
    """(X dense float64, y, description) of a set; nothing is downloaded."""
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return X.astype(np.float64), y.astype(np.int64), "sklearn load_digits, 10 classes"
    if name == "planted":
        from ultrafs.datasets.planted import make_planted_multiclass

        pr = make_planted_multiclass(n_samples=1000, n_features=500, n_relevant=50,
                                     n_classes=5, n_test=0, noise=1.0, seed=SEED)
        return (pr.X_train.astype(np.float64), pr.y_train.astype(np.int64),
                "make_planted_multiclass(1000 samples, 500 features, 50 planted, 5 classes, "
                "noise 1)",
                pr.relevant)
    if name == "mnist":
        X, y = _svmlight("mnist5k_3vs8.svm.bz2", 784)
        return X / 255.0, np.where(y > 0, 1, -1), "mnist5k_3vs8 (3 vs 8), c = 2"
    if name == "gisette":
        X, y = _svmlight("gisette_scale.t.svm.bz2", 5000)
        return X, np.where(y > 0, 1, -1), "gisette_scale.t (4 vs 9), c = 2"
    if name == "madelon":
        X1, y1 = _svmlight("madelon_train.svm.bz2", 500)
        return X1, np.where(y1 > 0, 1, -1), "madelon_train (2000 rows), c = 2"
    raise SystemExit(f"unknown set {name}")


def svc_accuracy(Xtr, ytr, Xte, yte, fixed_c, seed):
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.svm import SVC

    started = time.process_time()
    if fixed_c:
        model = SVC(kernel="linear", C=1.0).fit(Xtr, ytr)
        C = 1.0
    else:
        grid = GridSearchCV(SVC(kernel="linear"), {"C": list(SVC_CS)},
                            cv=StratifiedKFold(3, shuffle=True, random_state=seed))
        model = grid.fit(Xtr, ytr).best_estimator_
        C = float(grid.best_params_["C"])
    return float(model.score(Xte, yte)), C, time.process_time() - started


def fgm_ranking(Xtr, ytr, kmax):
    import ultrafs

    B = int(math.ceil(kmax / 5))
    model, cpu, wall = timed(lambda: ultrafs.select(Xtr, ytr, B=B, max_iter=10))
    coef = np.asarray(model.coef, dtype=np.float64)
    order = row_order(coef if coef.ndim == 2 else coef)
    feats = np.asarray(model.features, dtype=np.int64)[order]
    return feats, cpu, {"B": B, "n_nonzero": int(len(model.features)),
                        "stop_reason": model.stop_reason}


def walk_path(model, name, values, scale, X, targets, ks):
    """Fit a warm-started ``model`` along ``values`` of parameter ``name``
    until every k of ``ks`` has k nonzero rows; per k, the top-k rows and
    the value (over ``scale``) that first reached them.  Returns
    ``(found, fits, last_nonzero)``."""
    found, steps, nz = {}, 0, 0
    for value in values:
        model.set_params(**{name: value})
        model.fit(X, targets)
        steps += 1
        order = row_order(model.coef_.T)
        nz = len(order)
        for k in ks:
            if k not in found and nz >= k:
                found[k] = (order[:k], float(value / scale))
        if len(found) == len(ks):
            break
    return found, steps, nz


def mtl_rankings(Xtr, Y, ks):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import MultiTaskLasso

    Xc, Yc = Xtr - Xtr.mean(axis=0), Y - Y.mean(axis=0)
    amax = float(np.sqrt(((Xc.T @ Yc) ** 2).sum(axis=1)).max() / len(Xtr))
    alphas = amax * np.geomspace(1.0, 1e-3, MTL_ALPHAS)[1:]
    model = MultiTaskLasso(fit_intercept=True, warm_start=True, max_iter=5000, tol=1e-4)
    started = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        found, steps, nz = walk_path(model, "alpha", alphas, amax, Xtr, Y, ks)
    return found, time.process_time() - started, {"alphas_fitted": steps, "last_nonzero": nz}


def lr_rankings(Xtr, ytr, ks):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import l1_min_c

    c0 = float(l1_min_c(Xtr, ytr, loss="log"))
    Cs = c0 * np.geomspace(1.0, 1e3, LR_CS)[1:]
    model = LogisticRegression(l1_ratio=1.0, solver="saga", C=Cs[0], warm_start=True,
                               tol=1e-3, max_iter=1000, random_state=SEED)
    started = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        found, steps, nz = walk_path(model, "C", Cs, c0, Xtr, ytr, ks)
        n_warn = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    return found, time.process_time() - started, {"Cs_fitted": steps, "last_nonzero": nz,
                                                  "convergence_warnings": n_warn}


def gsrfs_lambda_cv(Xtr, ytr, Y, r, p, ks, seed, grid, n_folds):
    """λ per k by inner CV (SVC C = 1 on the fold's top k): ``n_folds``
    stratified folds, or one stratified holdout third when ``n_folds`` is 1."""
    from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit
    from sklearn.svm import SVC

    splitter = (StratifiedShuffleSplit(1, test_size=1 / 3, random_state=seed) if n_folds == 1
                else StratifiedKFold(n_folds, shuffle=True, random_state=seed))
    folds = list(splitter.split(Xtr, ytr))
    score = {(lam, k): [] for lam in grid for k in ks}
    ranked = {lam: [] for lam in grid}
    for lam in grid:
        for fit_rows, val_rows in folds:
            Xf, Xv, _ = zscore(Xtr[fit_rows], Xtr[val_rows])
            res = gsrfs_fit(Xf, Y[fit_rows], r, p, lam)
            ranked[lam].append(len(res.ranking))
            for k in ks:
                top = res.top(k)
                acc = SVC(kernel="linear", C=1.0).fit(Xf[:, top], ytr[fit_rows]).score(
                    Xv[:, top], ytr[val_rows])
                score[(lam, k)].append(acc)
    best = {}
    for k in ks:
        # eligible: every inner fit ranks at least k features (p < 1 with a
        # large λ can leave fewer); none eligible: the λ ranking the most
        eligible = [lam for lam in grid if min(ranked[lam]) >= k] or \
            [max(grid, key=lambda lam: (min(ranked[lam]), -lam))]
        # the largest mean accuracy, ties to the smaller λ
        best[k] = max(eligible, key=lambda lam: (np.mean(score[(lam, k)]), -lam))
    return best, {"accuracy": {f"{lam:g}@{k}": float(np.mean(v))
                               for (lam, k), v in score.items()},
                  "ranked": {f"{lam:g}": v for lam, v in ranked.items()}}


def run_classification(sets, quick, n_splits_arg=None):
    from ultrafs.methods.gsrfs import encode_targets

    import ultrafs

    # compile (or load) the numba kernels of FGM before any timing
    rng = np.random.default_rng(1)
    Xw = rng.standard_normal((60, 8))
    ultrafs.select(Xw, np.where(Xw[:, 0] > 0, 1, -1), B=2, max_iter=2)
    ultrafs.select(Xw, np.argmax(Xw[:, :3], axis=1), B=2, max_iter=2)
    results = {}
    for name in sets:
        loaded = load_classification(name)
        X, y, description = loaded[:3]
        relevant = loaded[3] if len(loaded) > 3 else None
        n_splits = 1 if quick else (n_splits_arg or N_SPLITS)
        fixed_c = quick or name in SVC_FIXED_C
        configs = CONFIGS[:2] + CONFIGS[3:4] if quick else CONFIGS
        lam_cv = LAM_CV.get(name)
        n_features_max = X.shape[1]
        ks = [k for k in KS if k <= (X.shape[1] // 2)]
        info = {"description": description, "n_samples": int(X.shape[0]),
                "n_features": int(X.shape[1]), "n_classes": int(len(np.unique(y))),
                "ks": ks, "svc_C": "fixed 1" if fixed_c else "3-fold inner CV over "
                + "/".join(f"{c:g}" for c in SVC_CS),
                "lambda_cv": None if not lam_cv else {"grid": list(lam_cv[0]),
                                                      "folds": lam_cv[1]}, "splits": []}
        print(f"[classify] {name}: {X.shape}, {info['n_classes']} classes, ks {ks}", flush=True)
        from sklearn.model_selection import train_test_split

        for split in range(n_splits):
            tr, te = train_test_split(np.arange(len(y)), test_size=0.4, stratify=y,
                                      random_state=split)
            Xtr, Xte, kept = zscore(X[tr], X[te])
            ytr, yte = y[tr], y[te]
            ks_split = [k for k in ks if k <= Xtr.shape[1] // 2] or ks
            kmax = max(ks_split)
            Y, _ = encode_targets(ytr)
            rec = {"split": split, "n_train": len(tr), "n_test": len(te),
                   "n_features_kept": int(Xtr.shape[1]), "methods": {}}
            n_features_max = min(n_features_max, Xtr.shape[1])

            def evaluate(method, feats_by_k, fit_cpu, extra=None):
                row = {"fit_cpu_s": fit_cpu, "k": {}, **(extra or {})}
                for k in ks_split:
                    feats = feats_by_k(k)
                    if feats is None or len(feats) == 0:
                        row["k"][k] = None
                        continue
                    acc, C, svc_cpu = svc_accuracy(Xtr[:, feats], ytr, Xte[:, feats], yte,
                                                   fixed_c, split)
                    cell = {"acc": acc, "C": C, "n_used": int(len(feats)), "svc_cpu_s": svc_cpu}
                    if relevant is not None:
                        cell["planted_recall"] = float(np.isin(kept[feats], relevant).sum() / k)
                    row["k"][k] = cell
                rec["methods"][method] = row

            for r, p in configs:
                res, cpu, wall = timed(lambda: gsrfs_fit(Xtr, Y, r, p, 1.0))
                evaluate(f"gsrfs r={r:g} p={p:g}", res.top, cpu,
                         {"n_iter": res.n_iter, "converged": bool(res.converged),
                          "n_ranked": int(len(res.ranking)), "warnings": res.n_warnings})
                if lam_cv:
                    (best, scores), cv_cpu, _ = timed(lambda: gsrfs_lambda_cv(
                        Xtr, ytr, Y, r, p, ks_split, split, *lam_cv))
                    fits = {1.0: res}
                    started = time.process_time()
                    for lam in sorted(set(best.values()) - {1.0}):
                        fits[lam] = gsrfs_fit(Xtr, Y, r, p, lam)
                    cv_cpu += time.process_time() - started
                    evaluate(f"gsrfs r={r:g} p={p:g} λ-CV", lambda k: fits[best[k]].top(k),
                             cv_cpu, {"lambda": {str(k): best[k] for k in ks_split},
                                      "cv_scores": scores})
            feats, cpu, extra = fgm_ranking(Xtr, ytr, kmax)
            evaluate("FGM (multi-class)", lambda k: feats[:k] if len(feats) >= k else feats,
                     cpu, extra)
            found, cpu, extra = mtl_rankings(Xtr, Y, ks_split)
            evaluate("MultiTaskLasso", lambda k: found[k][0] if k in found else None, cpu,
                     {**extra, "alpha_ratio": {str(k): v[1] for k, v in found.items()}})
            found_lr, cpu, extra = lr_rankings(Xtr, ytr, ks_split)
            evaluate("ℓ1 multinomial LR", lambda k: found_lr[k][0] if k in found_lr else None,
                     cpu, {**extra, "C_ratio": {str(k): v[1] for k, v in found_lr.items()}})
            rng = np.random.default_rng([SEED, split])
            perm = rng.permutation(Xtr.shape[1])
            evaluate("random k", lambda k: perm[:k], 0.0)
            acc, C, svc_cpu = svc_accuracy(Xtr, ytr, Xte, yte, fixed_c, split)
            rec["methods"]["all features"] = {"fit_cpu_s": 0.0, "all": {
                "acc": acc, "C": C, "n_used": int(Xtr.shape[1]), "svc_cpu_s": svc_cpu}}
            info["splits"].append(rec)
            line = "; ".join(f"{m} {row['k'][ks_split[-1]]['acc']:.3f}"
                             for m, row in rec["methods"].items()
                             if "k" in row and row["k"].get(ks_split[-1]))
            print(f"  split {split} (k={ks_split[-1]}): {line}; all {acc:.3f}", flush=True)
        info["n_features_min_kept"] = int(n_features_max)
        results[name] = info
    return results


# ------------------------------------------------------------------ part C: timing
def run_timing(quick):
    from ultrafs.methods.gsrfs import encode_targets
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X[:, X.std(axis=0) > 0].astype(np.float64)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    problems = [("digits", X, encode_targets(y)[0])]
    if not quick:
        Xs, _, Y1 = paper_synthetic(SYN["n"], SYN["d1"], SYN["d2"], SYN["c"], 0.1)
        problems.append(("synthetic a=0.1", Xs, Y1))
    modes = (("default (stationarity, extrapolation)", {}),
             ("stationarity, no extrapolation", {"accelerate": False}),
             ("paper (objective 1e-4, Alg. 1)", {"stop": "objective", "tol": 1e-4,
                                                 "accelerate": False, "min_iter": 1}))
    rows = []
    for pname, Xp, Yp in problems:
        for r, p in CONFIGS:
            reference = None
            for mode, kw in modes:
                res, cpu, wall = timed(lambda: gsrfs_fit(Xp, Yp, r, p, 1.0, **kw))
                top = res.top(TOP if Xp.shape[1] > 2 * TOP else 20)
                if reference is None:
                    reference = res
                overlap = float(np.isin(top, reference.top(len(top))).sum() / len(top))
                rows.append({"problem": pname, "r": r, "p": p, "mode": mode,
                             "n_iter": res.n_iter, "converged": bool(res.converged),
                             "stationarity": res.stationarity, "objective": res.objective,
                             "cpu_s": cpu, "wall_s": wall,
                             "s_per_iter": cpu / max(res.n_iter, 1),
                             "overlap_with_default": overlap, "top_size": len(top),
                             "extrapolated": int(sum(bool(h.get("extrapolated"))
                                                     for h in res.history))})
                print(f"  timing {pname} r={r} p={p} {mode}: {res.n_iter} it, {cpu:.2f} s, "
                      f"conv {res.converged}, overlap {overlap:.2f}", flush=True)
    return rows


# ------------------------------------------------------------------ part D: two-stage
def make_wide(path, n, m, *, n_planted=50, c=5, zipf_s=0.45, f_max=0.5, noise=0.5,
              planted_ranks=(10, 10_000), seed=SEED, block=1 << 16):
    """Write a wide multi-class store; returns its description.

    Column of frequency rank ``q`` (a seeded permutation maps ranks to
    columns) holds ``max(1, round(n f_max (q+1)^-zipf_s))`` draws of rows
    (duplicates merged), with N(0, 1) float32 values; ``n_planted`` columns
    of ranks drawn log-uniformly in ``planted_ranks`` carry the model: the
    class is ``argmax_k (X_P W)_k + noise·N(0, 1)`` with ``W`` N(0, 1)
    (``n_planted x c``).  Written through ``StoreWriter`` in blocks.
    """
    from ultrafs.store.writers.zarr_writer import StoreWriter

    rng = np.random.default_rng(seed)
    perm = rng.permutation(m)
    f = f_max * (np.arange(m) + 1.0) ** (-zipf_s)
    counts = np.empty(m, dtype=np.int64)
    counts[perm] = np.maximum(1, np.round(f * n)).astype(np.int64)
    lo, hi = planted_ranks
    ranks = set()
    while len(ranks) < n_planted:
        ranks.add(int(np.exp(rng.uniform(np.log(lo), np.log(min(hi, m - 1))))))
    planted = np.sort(perm[np.array(sorted(ranks))])
    W = rng.standard_normal((n_planted, c))
    indptr_parts, index_parts, value_parts, total = [np.zeros(1, np.int64)], [], [], 0
    for b0 in range(0, m, block):
        b1 = min(m, b0 + block)
        brng = np.random.default_rng([seed, 1, b0])
        cols = np.repeat(np.arange(b1 - b0, dtype=np.int64), counts[b0:b1])
        keys = np.unique(cols * n + brng.integers(0, n, size=len(cols)))
        cols, rows = keys // n, (keys % n).astype(np.int32)
        index_parts.append(rows)
        value_parts.append(brng.standard_normal(len(rows), dtype=np.float32))
        indptr_parts.append(total + np.cumsum(np.bincount(cols, minlength=b1 - b0)))
        total += len(rows)
    indptr = np.concatenate(indptr_parts)
    indices = np.concatenate(index_parts)
    data = np.concatenate(value_parts)
    del index_parts, value_parts
    XP = np.zeros((n, n_planted))
    for t, j in enumerate(planted):
        XP[indices[indptr[j]:indptr[j + 1]], t] = data[indptr[j]:indptr[j + 1]]
    y = np.argmax(XP @ W + noise * rng.standard_normal((n, c)), axis=1).astype(np.float64)
    nnz_col = np.diff(indptr)
    attrs = {"planted": planted.tolist(),
             "generator": {"n": n, "m": m, "n_planted": n_planted, "c": c, "zipf_s": zipf_s,
                           "f_max": f_max, "noise": noise, "planted_ranks": list(planted_ranks),
                           "seed": seed}}
    with StoreWriter(path, n_samples=n, n_features=m, nnz=int(total), dtype="float32",
                     binary=False, labels=y, target="multiclass", overwrite=True,
                     attrs=attrs, command="bench/gsrfs_study.py make_wide") as writer:
        for b0 in range(0, m, block):
            b1 = min(m, b0 + block)
            a, z = indptr[b0], indptr[b1]
            writer.append(indptr[b0:b1 + 1] - a, indices[a:z], data[a:z])
        writer.close()
    return {"nnz": int(total), "planted_nnz": nnz_col[planted].tolist(),
            "col_nnz_min": int(nnz_col.min()), "col_nnz_median": float(np.median(nnz_col)),
            "col_nnz_max": int(nnz_col.max()), "row_nnz_mean": total / n,
            "class_counts": np.bincount(y.astype(np.int64)).tolist()}


def dir_bytes(path):
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def _store_targets(store):
    Y = -np.ones((store.n_samples, len(store.classes)))
    Y[np.arange(store.n_samples), store.read_class_indices()] = 1.0
    return Y


def _lambda_max(store, Y, r):
    """2 max_j ‖X_jᵀ S1 Y‖ at W = 0 (every ‖y_i‖² = c), by one streamed pass; and the scores."""
    from ultrafs.methods.gsrfs import default_eps
    from ultrafs.scoring.gram_passes import StoreGramOperator

    eps = default_eps(Y)
    s1 = (r / 2.0) * (Y.shape[1] + eps) ** ((r - 2.0) / 2.0)
    G = StoreGramOperator(store).rmatmat(-s1 * Y)
    scores = np.sqrt(np.einsum("ij,ij->i", G, G))
    return 2.0 * float(scores.max()), scores


def child_generate(spec):
    (info, cpu, wall) = timed(lambda: make_wide(spec["path"], spec["n"], spec["m"]))
    info.update({"cpu_s": cpu, "wall_s": wall, "disk_bytes": dir_bytes(spec["path"])})
    return info


def child_fit(spec):
    """One fit on a store (two-stage or full IRLS), in its own process."""
    from ultrafs.methods.gsrfs import fit_gsrfs, fit_gsrfs_two_stage, gram_operator
    from ultrafs.store import open_store

    store = open_store(spec["path"])
    planted = np.asarray(store.attrs["planted"], dtype=np.int64)
    Y = _store_targets(store)
    r, p = spec["r"], spec["p"]
    (lam_max, scores), lm_cpu, lm_wall = timed(lambda: _lambda_max(store, Y, r))
    lam = spec["ratio"] * lam_max
    screen_top = np.lexsort((np.arange(len(scores)), -scores))
    if spec["mode"] == "two-stage":
        calls = []
        res, cpu, wall = timed(lambda: fit_gsrfs_two_stage(
            store, Y, n_candidates=spec["M"], r=r, p=p, lam=lam,
            callback=lambda k, W, b: calls.append(k)))
        kkt = [rnd for rnd in res.rounds if rnd.get("violators") is not None]
        extra = {"rounds": res.rounds, "n_rounds": len(res.rounds),
                 "certificate": ("–" if p != 1.0 else "not certified"
                                 if "NOT certified" in res.stop_reason else "KKT"),
                 "iterations_all_rounds": len(calls),
                 "scoring_passes": 1 + len(kkt),
                 "candidates": int(len(res.candidates)),
                 "candidate_recall": float(np.isin(planted, res.candidates).mean())}
    else:
        def full():
            op = gram_operator(store)
            return fit_gsrfs(op, Y, r=r, p=p, lam=lam), type(op).__name__
        (res, op_name), cpu, wall = timed(full)
        extra = {"operator": op_name}
    top = res.top(TOP)
    live = res.row_norms > 1e-6 * res.row_norms.max()
    out = {**spec, "lambda_max": lam_max, "lambda": lam, "lambda_max_cpu_s": lm_cpu,
           "lambda_max_wall_s": lm_wall, "cpu_s": cpu, "wall_s": wall, "n_iter": res.n_iter,
           "converged": bool(res.converged), "stop_reason": res.stop_reason,
           "hit_cap": "iteration limit" in res.stop_reason,
           "solve": res.solve, "n_products": res.n_passes,
           "objective_unsmoothed": res.objective_unsmoothed, "stationarity": res.stationarity,
           "kkt_dead": res.kkt_dead, "n_ranked": int(len(res.ranking)),
           "n_live": int(live.sum()), "top": top.tolist(),
           "recall_top": float(np.isin(top, planted).sum() / TOP),
           "screen_recall_top": float(np.isin(screen_top[:TOP], planted).sum() / TOP),
           "peak_rss_self_mb": peak_rss_mb(), **extra}
    return out


def _child(kind, spec):
    cmd = [sys.executable, str(Path(__file__).resolve()), f"--child-{kind}", json.dumps(spec),
           "--threads", str(THREADS)]
    measured = run_measured(cmd)
    out = json.loads(measured["stdout"].strip().splitlines()[-1])
    out["child_wall_s"] = measured["seconds"]
    out["peak_rss_mb"] = measured["peak_rss_mb"]
    out["peak_rss_measured_by"] = measured["peak_rss_measured_by"]
    return out


def run_twostage(quick, regenerate=False):
    from ultrafs.methods.gsrfs import default_candidates

    work = OUT_DIR / "gsrfs_wide"
    work.mkdir(parents=True, exist_ok=True)
    wide, small = (WIDE_QUICK, SMALL_QUICK) if quick else (WIDE, SMALL)
    out = {"stores": {}, "wide": [], "small": []}
    paths = {}
    for label, spec in (("wide", wide), ("small", small)):
        path = work / f"multiclass_n{spec['n']}_m{spec['m']}.zarr"
        paths[label] = path
        if regenerate or not path.exists():
            info = _child("generate", {"path": str(path), **spec})
            info["generated_now"] = True
        else:
            from ultrafs.store import open_store

            st = open_store(path)
            info = {"generated_now": False, "nnz": int(st.nnz), "disk_bytes": dir_bytes(path)}
        info.update(spec)
        out["stores"][label] = info
        print(f"[twostage] store {label}: {spec['n']:,} x {spec['m']:,}, nnz {info['nnz']:,}, "
              f"{info['disk_bytes'] / 2**20:.0f} MiB on disk", flush=True)
    M0 = default_candidates(TOP, wide["m"])
    configs = TS_CONFIGS_QUICK if quick else TS_CONFIGS
    for r, p, ratio in configs:
        spec = {"path": str(paths["wide"]), "mode": "two-stage", "r": r, "p": p,
                "ratio": ratio, "M": M0}
        res = _child("fit", spec)
        out["wide"].append(res)
        print(f"  wide two-stage r={r} p={p} λ={ratio}λmax M={M0}: {res['wall_s']:.1f} s wall, "
              f"{res['cpu_s']:.1f} s CPU, {res['n_iter']} it, passes {res['scoring_passes']}, "
              f"recall@50 {res['recall_top']:.2f}, peak {res['peak_rss_mb']:.0f} MiB", flush=True)
    if not quick:
        for r, p, ratio in TS_CONFIGS[:2]:
            for M in TS_CANDIDATES_WIDE:
                spec = {"path": str(paths["wide"]), "mode": "two-stage", "r": r, "p": p,
                        "ratio": ratio, "M": M}
                res = _child("fit", spec)
                out["wide"].append(res)
                print(f"  wide two-stage r={r} p={p} M={M}: {res['wall_s']:.1f} s, "
                      f"recall@50 {res['recall_top']:.2f}, peak {res['peak_rss_mb']:.0f} MiB",
                      flush=True)
    small_Ms = (100, 1000) if quick else TS_CANDIDATES_SMALL
    for r, p, ratio in (TS_CONFIGS_QUICK if quick else TS_CONFIGS[:2]):
        full = _child("fit", {"path": str(paths["small"]), "mode": "full", "r": r, "p": p,
                              "ratio": ratio})
        out["small"].append(full)
        print(f"  small full IRLS r={r} p={p}: {full['wall_s']:.1f} s wall, {full['n_iter']} it, "
              f"recall@50 {full['recall_top']:.2f}, peak {full['peak_rss_mb']:.0f} MiB",
              flush=True)
        for M in small_Ms:
            if M > 1000 and p == 1.0 and not quick:
                continue        # 3 KKT rounds of IRLS on 5,000+ candidates: ~6 min
            res = _child("fit", {"path": str(paths["small"]), "mode": "two-stage", "r": r,
                                 "p": p, "ratio": ratio, "M": M})
            res["agreement_top"] = float(np.isin(res["top"], full["top"]).sum() / TOP)
            res["objective_rel_to_full"] = (res["objective_unsmoothed"]
                                            / full["objective_unsmoothed"] - 1.0)
            out["small"].append(res)
            print(f"    two-stage M={M}: {res['wall_s']:.1f} s, agreement {res['agreement_top']:.2f}, "
                  f"recall {res['recall_top']:.2f}, ΔJ {res['objective_rel_to_full']:.2e}",
                  flush=True)
    return out


# ------------------------------------------------------------------ report
def _pct(values):
    values = [v for v in values if v is not None]
    if not values:
        return "–", None, None
    mean, std = 100 * float(np.mean(values)), 100 * float(np.std(values))
    return f"{mean:.2f} ± {std:.2f}", mean, std


def class_table(name, info):
    ks = info["ks"]
    splits = info["splits"]
    methods = list(splits[0]["methods"])
    lines = [f"**{name}** ({info['description']}; {info['n_samples']:,} samples, "
             f"{info['n_features']:,} features, {splits[0]['n_features_kept']:,} non-constant "
             f"on the first split's training rows; {len(splits)} split(s); SVC C: {info['svc_C']})",
             "", "| method | " + " | ".join(f"k = {k}" for k in ks) + " | fit CPU s |",
             "|---|" + "---:|" * (len(ks) + 1)]
    for m in methods:
        if m == "all features":
            cell, _, _ = _pct([s["methods"][m]["all"]["acc"] for s in splits])
            lines.append(f"| all features ({splits[0]['methods'][m]['all']['n_used']}) | "
                         + " | ".join([cell] * len(ks)) + " | – |")
            continue
        cells = []
        for k in ks:
            vals = [s["methods"][m]["k"].get(k) or s["methods"][m]["k"].get(str(k))
                    for s in splits]
            text, _, _ = _pct([v["acc"] if v else None for v in vals])
            used = [v["n_used"] for v in vals if v]
            if used and min(used) < k:
                text += f" ({min(used)} feat.)"
            if vals and vals[0] and "planted_recall" in vals[0]:
                text += f" [rec {np.mean([v['planted_recall'] for v in vals if v]):.2f}]"
            cells.append(text)
        cpu = np.mean([s["methods"][m]["fit_cpu_s"] for s in splits])
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {cpu:.2f} |")
    return "\n".join(lines)


def _cell_values(info, method, k):
    out = []
    for s in info["splits"]:
        v = s["methods"].get(method, {}).get("k", {})
        v = v.get(k) or v.get(str(k))
        out.append(v["acc"] if v else None)
    return out


def wtl(results):
    """Win / tie / loss of each GSR-FS row against each baseline over (set, k) cells.

    Tie: |mean paired difference| ≤ max(one test row, std of the paired
    per-split differences).
    """
    baselines = ("FGM (multi-class)", "MultiTaskLasso", "ℓ1 multinomial LR", "random k")
    table = {}
    for name, info in results.items():
        n_test = info["splits"][0]["n_test"]
        gsr = [m for m in info["splits"][0]["methods"] if m.startswith("gsrfs")]
        for g in gsr:
            for b in baselines:
                for k in info["ks"]:
                    a, c = _cell_values(info, g, k), _cell_values(info, b, k)
                    pairs = [(x, z) for x, z in zip(a, c) if x is not None and z is not None]
                    if not pairs:
                        continue
                    d = np.array([x - z for x, z in pairs])
                    band = max(1.0 / n_test, float(np.std(d)) if len(d) > 1 else 0.0)
                    key = (g, b)
                    w, t, l = table.get(key, (0, 0, 0))
                    if abs(d.mean()) <= band:
                        t += 1
                    elif d.mean() > 0:
                        w += 1
                    else:
                        l += 1
                    table[key] = (w, t, l)
    return table


def markdown(payload):
    parts = [f"# GSR-FS study ({payload.get('mode')})", "",
             f"code: {payload['git']}", f"threads: {payload['threads']}", ""]
    syn = payload.get("synthetic")
    if syn:
        parts += ["## Synthetic (paper §5.1)", "",
                  f"n_train {syn['n_train']}, n_test {syn['n_test']}, top {syn['top']}", "",
                  "| a | r | p | λ | recall top-200 | RMSE vs Y0 | RMSE vs Y1 | iterations | CPU s |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for c in syn["cells"] + syn["sweep"]:
            parts.append(f"| {c['a']:g} | {c['r']:g} | {c['p']:g} | {c['lam']:g} | "
                         f"{c['recall']:.3f} | {c['Y0']:.3f} | {c['Y1']:.3f} | "
                         f"{c['n_iter']}{'' if c['converged'] else ' (cap)'} | {c['cpu_s']:.2f} |")
        parts += ["", "| a | reference | RMSE vs Y0 | RMSE vs Y1 |", "|---:|---|---:|---:|"]
        for c in syn["references"]:
            parts.append(f"| {c['a']:g} | {c['method']} | {c['Y0']:.3f} | {c['Y1']:.3f} |")
        parts.append("")
    cls = payload.get("classify")
    if cls:
        parts += ["## Accuracy (%) of linear SVC on the top-k features", ""]
        for name, info in cls.items():
            parts += [class_table(name, info), ""]
        table = wtl(cls)
        if table:
            parts += ["### W/T/L of GSR-FS against each baseline over (set, k) cells", "",
                      "| GSR-FS | " + " | ".join(sorted({b for _, b in table})) + " |",
                      "|---|" + "---:|" * len({b for _, b in table})]
            for g in sorted({g for g, _ in table}):
                parts.append(f"| {g} | " + " | ".join(
                    "/".join(str(v) for v in table.get((g, b), ("–",)))
                    for b in sorted({b for _, b in table})) + " |")
            parts.append("")
    tim = payload.get("timing")
    if tim:
        parts += ["## Iterations and CPU time at λ = 1", "",
                  "| problem | r | p | mode | iterations | converged | CPU s | ms / it | top overlap with default |",
                  "|---|---:|---:|---|---:|---|---:|---:|---:|"]
        for t in tim:
            parts.append(f"| {t['problem']} | {t['r']:g} | {t['p']:g} | {t['mode']} | "
                         f"{t['n_iter']} | {t['converged']} | {t['cpu_s']:.3f} | "
                         f"{1000 * t['s_per_iter']:.2f} | {t['overlap_with_default']:.2f} |")
        parts.append("")
    ts = payload.get("twostage")
    if ts:
        parts += ["## Two-stage mode", ""]
        for label, info in ts["stores"].items():
            parts.append(f"* store {label}: {info['n']:,} × {info['m']:,}, nnz {info['nnz']:,}, "
                         f"{info['disk_bytes'] / 2**20:.1f} MiB on disk"
                         + (f", generated in {info['wall_s']:.1f} s wall, peak "
                            f"{info['peak_rss_mb']:.0f} MiB" if info.get("generated_now") else ""))
        parts += ["", "| store | mode | r | p | λ/λmax | M | candidates | rounds | scoring passes | "
                  "certificate | iterations (last round / all) | wall s | CPU s | live rows | "
                  "recall@50 | screen recall@50 | agreement@50 with full | ΔJ/J full | "
                  "peak RSS MiB |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for label in ("wide", "small"):
            for r in ts[label]:
                parts.append(
                    f"| {label} | {r['mode']} | {r['r']:g} | {r['p']:g} | {r['ratio']:g} | "
                    f"{r.get('M', '–')} | {r.get('candidates', '–')} | {r.get('n_rounds', '–')} | "
                    f"{r.get('scoring_passes', '–')} | {r.get('certificate', '–')} | {r['n_iter']}"
                    f"{' (cap)' if r.get('hit_cap') else ''}"
                    f"{' / ' + str(r['iterations_all_rounds']) if 'iterations_all_rounds' in r else ''}"
                    f" | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
                    f"{r['n_live']} | {r['recall_top']:.2f} | {r['screen_recall_top']:.2f} | "
                    + (f"{r['agreement_top']:.2f} | {r['objective_rel_to_full']:.1e}"
                       if "agreement_top" in r else "– | –")
                    + f" | {r['peak_rss_mb']:.0f} |")
        parts.append("")
    parts.append(f"total wall {payload.get('total_wall_s', 0):.0f} s")
    return "\n".join(parts)


# ------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--parts", default="synthetic,classify,timing,twostage")
    ap.add_argument("--sets", default=None)
    ap.add_argument("--name", default=None)
    ap.add_argument("--report", default=None, help="rebuild the tables from a JSON file")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--splits", type=int, default=None, help="splits per set (default 5)")
    ap.add_argument("--regenerate", action="store_true", help="rewrite the wide stores")
    ap.add_argument("--child-generate", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-fit", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_generate:
        print(json.dumps(child_generate(json.loads(args.child_generate)), default=str))
        return
    if args.child_fit:
        print(json.dumps(child_fit(json.loads(args.child_fit)), default=str))
        return
    if args.report:
        payload = json.loads(Path(args.report).read_text())
        print(markdown(payload))
        return
    name = args.name or ("gsrfs_study_quick" if args.quick else "gsrfs_study")
    parts = args.parts.split(",")
    sets = args.sets.split(",") if args.sets else (["digits"] if args.quick else list(ALL_SETS))
    started = time.perf_counter()
    payload = {"mode": "quick" if args.quick else "full", "command": " ".join(sys.argv),
               "git": git_info(), "threads": THREADS,
               "thread_env": {v: os.environ.get(v) for v in
                              ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")},
               "loadavg_start": os.getloadavg(), "parts": parts}
    import sklearn
    payload["versions"] = {"numpy": np.__version__, "sklearn": sklearn.__version__}
    if "synthetic" in parts:
        print("[synthetic]", flush=True)
        t = time.perf_counter()
        payload["synthetic"] = run_synthetic(args.quick)
        payload["synthetic"]["wall_s"] = time.perf_counter() - t
    if "classify" in parts:
        t = time.perf_counter()
        payload["classify"] = run_classification(sets, args.quick, args.splits)
        payload["classify_wall_s"] = time.perf_counter() - t
    if "timing" in parts:
        print("[timing]", flush=True)
        t = time.perf_counter()
        payload["timing"] = run_timing(args.quick)
        payload["timing_wall_s"] = time.perf_counter() - t
    if "twostage" in parts:
        t = time.perf_counter()
        payload["twostage"] = run_twostage(args.quick, args.regenerate)
        payload["twostage"]["wall_s"] = time.perf_counter() - t
    payload["total_wall_s"] = time.perf_counter() - started
    payload["loadavg_end"] = os.getloadavg()
    payload["peak_rss_mb_main"] = peak_rss_mb()
    path = write_result(name, payload)
    # JSON keys of k become strings: rebuild the tables from the file as written
    text = markdown(json.loads(path.read_text()))
    (OUT_DIR / f"{name}.md").write_text(text + "\n")
    print(text)
    print(f"\nwrote {path} and {OUT_DIR / (name + '.md')} in {payload['total_wall_s']:.0f} s")


if __name__ == "__main__":
    main()
