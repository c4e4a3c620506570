"""MSLR (seed 000) against FGM and ℓ1-LR at equal numbers of features (issue 14).

Question: at the same number k of selected features, all selections
retrained the same way (scikit-learn ``LogisticRegression(C=5)``, ℓ2,
intercept on, on the selected columns only), does minimax sparse logistic
regression (MSLR, Tan, Tsang & Wang, TNNLS 2013) predict better and recover
more of the true features than FGM and ℓ1-regularised LR, and at what
cost in time?  The paper claims (digest ``mslr-slores.md`` A8):

* toy study (Fig. 1): ℓ1-LR ≈ MSLR when the true weights are flat (τ = 0),
  ℓ1-LR worse when they have a long tail (large τ);
* synthetic 1 (Fig. 3): MSLR has the best accuracy and recovers the most
  true features once k exceeds the number of true features; MSLR fastest;
* Leukemia: 100% test accuracy with eight features; MSLR above ℓ1-LR on
  real data, and faster than ℓ1-LR on dense data.

Parts (``--parts``; each runs in a child process under GNU time, so its
peak RSS is its own, unless only one part is asked for):

* ``toy``: X ∈ R^{4096×8192} ~ N(0,1) (float64), rows 1–2048 train, 2049–
  4096 test; v has 300 nonzeros ~ U(0,1), w_j = v_j^τ with random signs,
  divided by max |w_j| (so in [−1, 1]); y = sign(Xw); τ ∈ {0, 0.5, 1, 2, 5};
  the same X, support, v and signs for every τ of a seed.  MSLR with
  r = 50 and T_m = k/50 (the paper's "fix C and r, and change T_m"; the
  cutting plane is sequential, so the union of the first t constraints of
  one T_m = 8 run *is* the T_m = t run), FGM likewise (B = 50, the model
  after t outer iterations), ℓ1-LR by ultrafs's screened path (one path,
  the first λ with ≥ k nonzeros) and, on ``--liblinear-seeds`` only, by
  liblinear with no intercept and C bisected to k nonzeros.
* ``synth``: the digest's T8 size of synthetic 1: 1,000 training rows ×
  10,000 Gaussian columns, 50 weights ~ N(0, 2) (y = sign(Xw) does not
  depend on the scale, so variance or std is immaterial), 2,000 test rows.
  MSLR r = k/10, T_m = 10 (the paper's default T_m); also r = 10 with
  T_m = k/10 (prefixes of one run); FGM B = k/10, T = 10; both ℓ1-LRs.
* ``leu``: LIBSVM leu / leu.t (38 / 34 × 7,129), k ∈ {2, 4, 8, 16, 32},
  r = max(1, k/8), T_m = k/r for MSLR and FGM; at k = 8 also every
  (r, T_m) ∈ {(8,1), (4,2), (2,4), (1,8)}.
* ``imdb``: imdb50k (unigrams + bigrams, 0/1): rows 1–25,000 the train
  Zarr store (MSLR, FGM and the ℓ1 path run on it out of core), rows
  25,001–50,000 the test store; k ∈ {50, 100, 200, 300}, r = B = k/10,
  T = 10; liblinear on the train rows as scipy CSR (int32 indices).

Methods: ``ultrafs.api.fit("mslr", C=10, tol=0, refit=False)`` (the
paper's C, β = 5/3, q0 = 0.01; tol = 0 turns off the violation stop so that
T_m iterations run unless a top-r set repeats; subproblem_tol 1e-4, the
default); ``ultrafs.api.select(C=10.0, tol=0.0)`` (FGM, logistic loss,
bias on, inner tol 1e-3, paper defaults; the toy part calls
``fit_fgm`` directly for its per-iteration path); ℓ1: ``fit_l1_path``
(unpenalised intercept, Slores sequential, KKT tol 1e-6) on the geometric
grid λ/λ_max = 0.95 … 0.002 (``L1_GRID`` points) and scikit-learn
``LogisticRegression(l1_ratio=1, solver="liblinear", fit_intercept=False,
tol=1e-4, max_iter=1000, random_state=0)`` (the paper's ℓ1-LR, no bias;
liblinear visits coordinates in a random order, hence the seed).  Retraining:
``LogisticRegression(C=5, fit_intercept=True, tol=1e-6, max_iter=10000)``
(lbfgs) for every method.  "Selection seconds": the call's wall for a
per-k run; for prefixes the sum of the first t iterations' phases; for the
ℓ1 path its statistics plus the phases of the λ up to the one used; for
liblinear the fit at the C found (the bisection's fits are counted apart).

Usage::

    python bench/mslr_study.py [--parts toy,synth,leu,imdb] [--seeds 0 1 2]
                               [--taus 0 0.5 1 2 5] [--liblinear-seeds 0]
                               [--quick] [--name mslr_study]

Raw results: ``bench/out/NAME.json``; the tables: ``bench/out/NAME.md``
(``--report bench/out/NAME.json`` rebuilds them).  ``--quick``: small shapes, one seed, no imdb, every part in this process
(a smoke run of about 15 s once the numba cache is warm).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from common import DATA_DIR, OUT_DIR, peak_rss_mb, run_measured, write_result

ALL_PARTS = ("toy", "synth", "leu", "imdb")
MSLR_C = 10.0
FGM_C = 10.0
RETRAIN_C = 5.0
TIE = 1e-3                     # |Δ accuracy| ≤ 0.1 point is a tie
L1_GRID = 200                  # geometric λ grid of the ultrafs ℓ1 path
L1_MIN_RATIO = 2e-3


# ------------------------------------------------------------------ problems
class Problem:
    """One train/test split: what every method needs.

    ``fit_data``: what the ultrafs methods get (a store); ``lib_X``: the
    training matrix for liblinear; ``train_cols(ids)`` / ``test_cols(ids)``:
    the selected columns (by feature id) for the retraining; ``lib_ids``:
    liblinear column → feature id; ``relevant``: the true support or None.
    """

    def __init__(self, name, store, y_train, y_test, lib_X, train_cols, test_cols,
                 lib_ids=None, relevant=None, info=None):
        self.name, self.store = name, store
        self.y_train, self.y_test = y_train, y_test
        self.lib_X = lib_X
        self.train_cols, self.test_cols = train_cols, test_cols
        self.lib_ids = lib_ids if lib_ids is not None else (lambda cols: np.asarray(cols))
        self.relevant = None if relevant is None else set(int(j) for j in relevant)
        self.info = info or {}


def array_problem(name, X_train, y_train, X_test, y_test, relevant=None, info=None):
    from ultrafs.store import InMemoryStore

    store = InMemoryStore(X_train, y_train)
    return Problem(name, store, y_train, y_test, X_train,
                   lambda ids: X_train[:, np.asarray(ids, dtype=np.int64)],
                   lambda ids: X_test[:, np.asarray(ids, dtype=np.int64)],
                   relevant=relevant, info=info)


def toy_data(seed, n=4096, m=8192, n_rel=300):
    """X, the support, v and the signs of the paper's toy study (one seed)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m))
    rel = np.sort(rng.choice(m, n_rel, replace=False))
    v = rng.uniform(0.0, 1.0, n_rel)
    signs = rng.choice([-1.0, 1.0], n_rel)
    return X, rel, v, signs


def toy_labels(X, rel, v, signs, tau):
    w_rel = v ** tau * signs
    w_rel = w_rel / np.abs(w_rel).max()
    return np.where(X[:, rel] @ w_rel >= 0, 1.0, -1.0)


def synth_problem(seed, n_train=1000, n_test=2000, m=10000, n_rel=50):
    """Synthetic 1 (Fig. 3) scaled: w ~ N(0, 2) on n_rel columns, y = sign(Xw)."""
    rng = np.random.default_rng(1000 + seed)
    X = rng.standard_normal((n_train + n_test, m))
    rel = np.sort(rng.choice(m, n_rel, replace=False))
    w = np.sqrt(2.0) * rng.standard_normal(n_rel)
    y = np.where(X[:, rel] @ w >= 0, 1.0, -1.0)
    info = {"n_train": n_train, "n_test": n_test, "m": m, "n_relevant": n_rel,
            "positives_train": int((y[:n_train] > 0).sum())}
    return array_problem(f"synth seed {seed}", np.ascontiguousarray(X[:n_train]),
                         y[:n_train], np.ascontiguousarray(X[n_train:]), y[n_train:],
                         relevant=rel, info=info)


def leu_problem():
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(DATA_DIR / "leu.svm.bz2"), n_features=7129,
                              zero_based=False)
    Xt, yt = load_svmlight_file(str(DATA_DIR / "leu.t.svm.bz2"), n_features=7129,
                                zero_based=False)
    X, Xt = np.ascontiguousarray(X.toarray()), np.ascontiguousarray(Xt.toarray())
    y, yt = np.where(y > 0, 1.0, -1.0), np.where(yt > 0, 1.0, -1.0)
    return array_problem("leu", X, y, Xt, yt,
                         info={"n_train": 38, "n_test": 34, "m": 7129})


def imdb_problem():
    from common import imdb_stores
    from ultrafs.store import open_store

    started = time.perf_counter()
    train_path, test_path, ingest = imdb_stores()
    train, test = open_store(train_path), open_store(test_path)
    y_train = np.where(train.read_labels() > 0, 1.0, -1.0)
    y_test = np.where(test.read_labels() > 0, 1.0, -1.0)
    block = train.read_range(0, train.n_features)
    X = sp.csr_matrix(sp.csc_matrix((block.values(np.float64), block.indices,
                                     block.indptr),
                                    shape=(train.n_samples, train.n_features)))
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    load_seconds = time.perf_counter() - started

    def cols(store, ids):
        c = store.columns_of(np.asarray(ids, dtype=np.int64))
        c = np.where(c < store.n_features, c, store.n_features)
        blk = store.read_columns(c)
        return sp.csc_matrix((blk.values(np.float64), blk.indices, blk.indptr),
                             shape=(store.n_samples, len(c)))

    info = {"train_store": str(train_path), "test_store": str(test_path),
            "n_train": int(train.n_samples), "n_test": int(test.n_samples),
            "m": int(train.n_features), "nnz_train": int(X.nnz),
            "ingest_seconds": ingest, "load_seconds_incl_csr": load_seconds}
    return Problem("imdb50k", train, y_train, y_test, X,
                   lambda ids: cols(train, ids), lambda ids: cols(test, ids),
                   lib_ids=lambda c: train.feature_ids(np.asarray(c, dtype=np.int64)),
                   info=info)


# ------------------------------------------------------------------ retraining
def retrain_eval(problem, ids):
    """The common retraining: ℓ2-LR, C = 5, intercept on; test accuracy."""
    from sklearn.linear_model import LogisticRegression

    ids = np.asarray(ids, dtype=np.int64)
    started = time.perf_counter()
    if ids.size == 0:
        majority = 1.0 if (problem.y_train > 0).mean() >= 0.5 else -1.0
        return float(np.mean(problem.y_test == majority)), 0.0
    clf = LogisticRegression(C=RETRAIN_C, fit_intercept=True, tol=1e-6, max_iter=10000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(problem.train_cols(ids), problem.y_train)
    seconds = time.perf_counter() - started
    accuracy = float(clf.score(problem.test_cols(ids), problem.y_test))
    return accuracy, seconds


def row(problem, method, design, k, ids, seconds, **extra):
    ids = [int(j) for j in ids]
    accuracy, retrain_seconds = retrain_eval(problem, ids)
    out = {"problem": problem.name, "method": method, "design": design, "k": int(k),
           "n_features": len(ids), "accuracy": accuracy, "select_seconds": seconds,
           "retrain_seconds": retrain_seconds, "ids": ids}
    if problem.relevant is not None:
        out["recovered"] = len(problem.relevant & set(ids))
    out.update(extra)
    return out


# ------------------------------------------------------------------ methods
def _mslr_extra(model):
    hist = model.history
    return {"stop_reason": model.stop_reason,
            "iterations": len(hist),
            "all_certified": bool(all(h["certified"] for h in hist)),
            "max_rel_gap": float(max((h["rel_gap"] for h in hist), default=0.0)),
            "sweeps": int(sum(h["sweeps"] for h in hist)),
            "n_active_mu": model.params.get("n_active"),
            "solve_seconds": float(sum(h["solve_seconds"] for h in hist)),
            "score_seconds": float(sum(h["score_seconds"] for h in hist))}


def mslr_per_k(problem, ks, design):
    """One MSLR fit (``api.fit("mslr")``) per k with (r, T_m) = design(k)."""
    from ultrafs.api import fit

    rows = []
    for k in ks:
        r, T = design(k)
        started = time.perf_counter()
        model = fit("mslr", problem.store, B=r, C=MSLR_C, max_iter=T, tol=0.0,
                    refit=False)
        seconds = time.perf_counter() - started
        rows.append(row(problem, "mslr", f"r={r},T_m={T}", k, model.features, seconds,
                        r=r, T_m=T, **_mslr_extra(model)))
    return rows


def mslr_prefix(problem, ks, r, method="mslr"):
    """One MSLR fit with r fixed and T_m = max k / r; k = r·t read off
    the union of the first t constraints (= the run with T_m = t)."""
    from ultrafs.api import fit

    T = int(np.ceil(max(ks) / r))
    started = time.perf_counter()
    model = fit("mslr", problem.store, B=r, C=MSLR_C, max_iter=T, tol=0.0, refit=False)
    wall = time.perf_counter() - started
    hist = model.history
    rows = []
    for k in ks:
        t = min(int(np.ceil(k / r)), len(hist))
        ids = model.features[:model.batches[t]]
        seconds = float(sum(h["score_seconds"] + h["materialize_seconds"]
                            + h["solve_seconds"] for h in hist[:t]))
        rows.append(row(problem, method, f"r={r},T_m={t} (prefix)", k, ids, seconds,
                        r=r, T_m=t, run_wall=wall, run_T_m=T,
                        all_certified=bool(all(h["certified"] for h in hist[:t])),
                        max_rel_gap=float(max(h["rel_gap"] for h in hist[:t])),
                        sweeps=int(sum(h["sweeps"] for h in hist[:t])),
                        stop_reason=model.stop_reason))
    return rows


def fgm_per_k(problem, ks, design):
    from ultrafs.api import select

    rows = []
    for k in ks:
        B, T = design(k)
        started = time.perf_counter()
        model = select(problem.store, B=B, C=FGM_C, max_iter=T, tol=0.0)
        seconds = time.perf_counter() - started
        rows.append(row(problem, "fgm", f"B={B},T={T}", k, model.features, seconds,
                        B=B, T=T, stop_reason=model.stop_reason,
                        iterations=len(model.history)))
    return rows


def fgm_prefix(problem, ks, B):
    """fit_fgm with B fixed; for each k the model after the outer iteration
    whose nonzero count is nearest k (ties: the earlier)."""
    from ultrafs.features.linear import LinearFeatures
    from ultrafs.methods.fgm import fit_fgm

    T = int(np.ceil(max(ks) / B))
    features = LinearFeatures(problem.store)
    started = time.perf_counter()
    result = fit_fgm(features, problem.store.read_labels(), B=B, C=FGM_C,
                     max_iter=T, tol=0.0)
    wall = time.perf_counter() - started
    prefixes = []
    for t, (coef, _bias) in enumerate(result.path):
        keys = result.keys[:result.batch_ptr[t + 1]]
        ids = features.feature_ids(keys[np.asarray(coef) != 0])
        seconds = float(sum(h["score_seconds"] + h["materialize_seconds"]
                            + h["solve_seconds"] for h in result.history[:t + 1]))
        prefixes.append((t + 1, ids, seconds))
    rows = []
    for k in ks:
        t, ids, seconds = min(prefixes, key=lambda p: (abs(len(p[1]) - k), p[0]))
        rows.append(row(problem, "fgm", f"B={B},T={t} (prefix)", k, ids, seconds,
                        B=B, T=t, run_wall=wall, stop_reason=result.stop_reason))
    return rows


def l1_ultrafs(problem, ks):
    """One screened ℓ1 path to max k; the first λ with ≥ k nonzeros per k."""
    from ultrafs.methods.l1_method import binary_labels
    from ultrafs.methods.l1_path import fit_l1_path
    from ultrafs.methods.slores import slores_statistics
    from ultrafs.store import as_store

    store = as_store(problem.store)
    started = time.perf_counter()
    labels = binary_labels(store)
    stats = slores_statistics(store, labels)
    stat_seconds = time.perf_counter() - started
    grid = stats.lambda_max * np.geomspace(0.95, L1_MIN_RATIO, L1_GRID)
    path = fit_l1_path(store, labels, lambdas=grid, statistics=stats,
                       stop_at_nnz=int(max(ks)))
    wall = time.perf_counter() - started
    rows = []
    for k in ks:
        index = path.first_with(k)
        if index < 0:
            index = len(path.records) - 1
        seconds = stat_seconds + float(sum(
            r["seconds_screening"] + r["seconds_fetch"] + r["seconds_solving"]
            + r["seconds_kkt"] for r in path.records[:index + 1]))
        ids = store.feature_ids(path.columns[index])
        rec = path.records[index]
        rows.append(row(problem, "l1_ultrafs", "path, first λ with ≥ k", k, ids, seconds,
                        lam_ratio=float(rec["ratio"]), C=float(rec["C"]),
                        kkt=float(rec["kkt"]), run_wall=wall))
    return rows


def l1_liblinear(problem, ks, max_fits_per_k=12):
    """liblinear ℓ1-LR without intercept, C bisected (geometrically) until
    |nnz − k| ≤ max(0, round(0.02 k)); the nearest count is kept."""
    from sklearn.linear_model import LogisticRegression

    X, y = problem.lib_X, problem.y_train
    fits = {}

    def fit(C):
        if C not in fits:
            clf = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=C,
                                     fit_intercept=False, tol=1e-4, max_iter=1000,
                                     random_state=0)
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf.fit(X, y)
            seconds = time.perf_counter() - started
            cols = np.flatnonzero(clf.coef_.ravel())
            fits[C] = (len(cols), cols, seconds)
        return fits[C][0]

    # zero is optimal iff C·max|X'y|/2 ≤ 1 (gradient of the loss at w = 0)
    c_zero = 2.0 / float(np.abs(np.asarray(X.T @ y)).max())
    started = time.perf_counter()
    rows = []
    for k in ks:
        slack = max(0, int(round(0.02 * k)))
        lo = max([c for c, f in fits.items() if f[0] < k] + [c_zero])
        highs = [c for c, f in fits.items() if f[0] > k]
        hi = min(highs) if highs else None
        n_fit = 0
        while n_fit < max_fits_per_k:
            best = min(fits.items(), key=lambda it: (abs(it[1][0] - k), it[0])) \
                if fits else None
            if best is not None and abs(best[1][0] - k) <= slack:
                break
            C = lo * 2.0 if hi is None else float(np.sqrt(lo * hi))
            nnz = fit(C)
            n_fit += 1
            if nnz < k:
                lo = C
            elif nnz > k:
                hi = C
            else:
                break
        C, (nnz, cols, seconds) = min(fits.items(),
                                      key=lambda it: (abs(it[1][0] - k), it[0]))
        rows.append(row(problem, "l1_liblinear", "C bisected, no intercept", k,
                        problem.lib_ids(cols), seconds, C=float(C),
                        bisection_fits=n_fit))
    total = time.perf_counter() - started
    for r in rows:
        r["bisection_total_seconds"] = total
        r["fits_total"] = len(fits)
    return rows


def warm():
    """Compile / load every numba kernel before timing."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((120, 300))
    y = np.where(X[:, :5].sum(1) > 0, 1.0, -1.0)
    warm_on(array_problem("warm", X, y, X, y))


def warm_on(problem):
    """Short runs of every method on the part's first problem (not timed):
    kernels specialised for its store and sizes are compiled or loaded."""
    from ultrafs.api import fit, select

    fit("mslr", problem.store, B=2, max_iter=2, tol=0.0, refit=False)
    select(problem.store, B=2, C=FGM_C, max_iter=2, tol=0.0)
    fgm_prefix(problem, [2, 4], 2)
    l1_ultrafs(problem, [2])


# ------------------------------------------------------------------ parts
def run_toy(args):
    n, m, n_rel = (256, 512, 20) if args.quick else (4096, 8192, 300)
    ks = [5, 10, 20, 40] if args.quick else [50, 100, 200, 300, 400]
    r = 5 if args.quick else 50
    rows, info = [], {"n": n, "m": m, "n_relevant": n_rel, "r": r, "B": r, "ks": ks}
    for seed in args.seeds:
        X, rel, v, signs = toy_data(seed, n, m, n_rel)
        half = n // 2
        Xtr, Xte = np.ascontiguousarray(X[:half]), np.ascontiguousarray(X[half:])
        for tau in args.taus:
            y = toy_labels(X, rel, v, signs, tau)
            problem = array_problem(f"toy tau={tau:g}", Xtr, y[:half], Xte, y[half:],
                                    relevant=rel)
            if not rows:
                warm_on(problem)
            started = time.perf_counter()
            got = mslr_prefix(problem, ks, r) + fgm_prefix(problem, ks, r) \
                + l1_ultrafs(problem, ks)
            if seed in args.liblinear_seeds:
                got += l1_liblinear(problem, ks)
            for g in got:
                g.update(seed=seed, tau=tau)
            rows += got
            print(f"toy seed {seed} tau {tau:g}: {time.perf_counter() - started:.1f} s",
                  file=sys.stderr, flush=True)
        del X
    return rows, info


def run_synth(args):
    shape = dict(n_train=200, n_test=400, m=1000, n_rel=10) if args.quick else {}
    ks = [2, 5, 10, 20] if args.quick else [10, 20, 50, 100, 150, 200]
    rows = []
    for seed in args.seeds:
        problem = synth_problem(seed, **shape)
        if not rows:
            warm_on(problem)
        started = time.perf_counter()
        design = lambda k: (max(1, k // 10), k // max(1, k // 10))     # noqa: E731
        got = mslr_per_k(problem, ks, design) + fgm_per_k(problem, ks, design) \
            + l1_ultrafs(problem, ks) + l1_liblinear(problem, ks)
        if seed in args.prefix_seeds:
            got += mslr_prefix(problem, ks, max(1, ks[0]), method="mslr_prefix")
        for g in got:
            g.update(seed=seed)
        rows += got
        print(f"synth seed {seed}: {time.perf_counter() - started:.1f} s",
              file=sys.stderr, flush=True)
    return rows, {"ks": ks, **(shape or dict(n_train=1000, n_test=2000, m=10000,
                                             n_rel=50)), **problem.info}


def run_leu(args):
    problem = leu_problem()
    warm_on(problem)
    ks = [2, 4] if args.quick else [2, 4, 8, 16, 32]
    design = lambda k: (max(1, k // 8), k // max(1, k // 8))           # noqa: E731
    rows = mslr_per_k(problem, ks, design) + fgm_per_k(problem, ks, design) \
        + l1_ultrafs(problem, ks) + l1_liblinear(problem, ks)
    if not args.quick:       # the digest's (r, T_m) splits of eight features
        for r, T in ((8, 1), (4, 2), (2, 4), (1, 8)):
            for g in mslr_per_k(problem, [8], lambda k, r=r, T=T: (r, T)) \
                    + fgm_per_k(problem, [8], lambda k, r=r, T=T: (r, T)):
                g["method"] += "_split"
                rows.append(g)
    for g in rows:
        g["seed"] = 0
    return rows, {"ks": ks, **problem.info}


def run_imdb(args):
    problem = imdb_problem()
    warm_on(problem)          # binary columns read from Zarr: other kernels
    ks = [50, 100] if args.quick else [50, 100, 200, 300]
    design = lambda k: (k // 10, 10)                                   # noqa: E731
    rows = []
    for name, fn in (("mslr", lambda: mslr_per_k(problem, ks, design)),
                     ("fgm", lambda: fgm_per_k(problem, ks, design)),
                     ("l1_ultrafs", lambda: l1_ultrafs(problem, ks)),
                     ("l1_liblinear", lambda: l1_liblinear(problem, ks))):
        started = time.perf_counter()
        rows += fn()
        print(f"imdb {name}: {time.perf_counter() - started:.1f} s", file=sys.stderr,
              flush=True)
    for g in rows:
        g["seed"] = 0
    return rows, {"ks": ks, **problem.info}


RUNNERS = {"toy": run_toy, "synth": run_synth, "leu": run_leu, "imdb": run_imdb}


# ------------------------------------------------------------------ tables
def _mean(values):
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def _fmt(v, pattern="{:.4f}"):
    return "–" if v is None else pattern.format(v)


def cells(rows, key=("problem", "seed", "k")):
    out = {}
    for r in rows:
        out.setdefault(tuple(r[f] for f in key), {}).setdefault(r["method"], r)
    return out


def wins(rows, versus, measure="accuracy", tie=TIE):
    """(wins, ties, losses) of MSLR against ``versus`` over matching cells."""
    w = t = l = 0
    for cell in cells(rows).values():
        if "mslr" in cell and versus in cell:
            d = cell["mslr"][measure] - cell[versus][measure]
            if abs(d) <= tie:
                t += 1
            elif d > 0:
                w += 1
            else:
                l += 1
    return w, t, l


METHODS = (("mslr", "MSLR"), ("mslr_prefix", "MSLR prefix"), ("fgm", "FGM"),
           ("l1_ultrafs", "ℓ1 ultrafs"), ("l1_liblinear", "ℓ1 liblinear"))


def quality_table(rows, groups, measure="accuracy", pattern="{:.4f}", counts=True):
    """Rows: (group, k); columns: methods; mean over seeds of measure
    (and of the feature counts of the ℓ1 / FGM-prefix selections)."""
    present = [(m, label) for m, label in METHODS if any(r["method"] == m for r in rows)]
    head = "| " + " | ".join(["problem", "k"] + [label for _, label in present]) + " |"
    lines = [head, "|" + "---|" * 2 + "---:|" * len(present)]
    for group in groups:
        sub = [r for r in rows if r["problem"] == group]
        for k in sorted({r["k"] for r in sub}):
            cellv = []
            for m, _ in present:
                rr = [r for r in sub if r["k"] == k and r["method"] == m]
                if not rr:
                    cellv.append("–")
                    continue
                v = _fmt(_mean([r.get(measure) for r in rr]), pattern)
                nf = _mean([r["n_features"] for r in rr])
                if counts and abs(nf - k) > 1e-9:
                    v += f" ({nf:.4g})"
                if len(rr) < len({r['seed'] for r in sub}):
                    v += f" [{len(rr)} seed]"
                cellv.append(v)
            lines.append(f"| {group} | {k} | " + " | ".join(cellv) + " |")
    return "\n".join(lines)


def _median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def time_table(rows, groups):
    present = [(m, label) for m, label in METHODS if any(r["method"] == m for r in rows)]
    lines = ["| problem | k | " + " | ".join(f"{label} s" for _, label in present)
             + " | MSLR / FGM | MSLR / ℓ1 ultrafs | MSLR / ℓ1 liblinear | retrain s |",
             "|---|---|" + "---:|" * (len(present) + 4)]
    for group in groups:
        sub = [r for r in rows if r["problem"] == group]
        for k in sorted({r["k"] for r in sub}):
            t = {m: _median([r["select_seconds"] for r in sub
                           if r["k"] == k and r["method"] == m]) for m, _ in present}
            ratio = [(_fmt(t["mslr"] / t[o], "×{:.2f}")
                      if t.get("mslr") and t.get(o) else "–")
                     for o in ("fgm", "l1_ultrafs", "l1_liblinear")]
            ret = _median([r["retrain_seconds"] for r in sub if r["k"] == k])
            lines.append(f"| {group} | {k} | "
                         + " | ".join(_fmt(t[m], "{:.2f}") for m, _ in present)
                         + " | " + " | ".join(ratio) + f" | {ret:.2f} |")
    return "\n".join(lines)


def wins_table(rows_by_part):
    lines = ["| part | MSLR vs | accuracy W / T / L | true features W / T / L |",
             "|---|---|---|---|"]
    for part, rows in rows_by_part.items():
        for versus, label in (("fgm", "FGM"), ("l1_ultrafs", "ℓ1 ultrafs"),
                              ("l1_liblinear", "ℓ1 liblinear")):
            acc = wins(rows, versus)
            if sum(acc) == 0:
                continue
            rec = wins(rows, versus, "recovered", tie=0) \
                if any("recovered" in r for r in rows) else None
            lines.append(f"| {part} | {label} | {acc[0]} / {acc[1]} / {acc[2]} | "
                         + ("–" if rec is None else f"{rec[0]} / {rec[1]} / {rec[2]}")
                         + " |")
    return "\n".join(lines)


def report(doc):
    parts = doc["parts"]
    out = []
    for part, res in parts.items():
        rows = res["rows"]
        groups = list(dict.fromkeys(r["problem"] for r in rows))
        if part == "synth":
            rows = [dict(r, problem="synth") for r in rows]
            groups = ["synth"]
        main = [r for r in rows if not r["method"].endswith("_split")]
        out.append(f"## {part} (peak RSS {res.get('peak_rss_mb', 0):.0f} MiB, "
                   f"{res.get('seconds', 0):.0f} s)\n")
        out.append("Test accuracy (mean over seeds; feature count in brackets where "
                   "it is not k):\n")
        out.append(quality_table(main, groups))
        if any("recovered" in r for r in main):
            out.append("\nTrue features recovered:\n")
            out.append(quality_table(main, groups, "recovered", "{:.1f}", counts=False))
        out.append("\nSelection seconds (median over seeds; retraining: median over "
                   "all methods) and ratios of the medians:\n")
        out.append(time_table(main, groups))
        splits = [r for r in rows if r["method"].endswith("_split")]
        if splits:
            out.append("\nk = 8, every (r, T_m):\n")
            out.append("| method | design | features | test accuracy | seconds |")
            out.append("|---|---|---:|---:|---:|")
            for r in splits:
                out.append(f"| {r['method']} | {r['design']} | {r['n_features']} | "
                           f"{r['accuracy']:.4f} | {r['select_seconds']:.2f} |")
        flags = [r for r in rows if r["method"].startswith("mslr")
                 and not r.get("all_certified", True)]
        out.append(f"\nMSLR subproblems not certified: {len(flags)} rows; largest "
                   "relative gap: " + _fmt(max((r.get("max_rel_gap", 0) for r in rows
                                                if r["method"].startswith("mslr")),
                                               default=None), "{:.2g}"))
        out.append("")
    out.append("## MSLR wins / ties / losses per cell (tie: |Δ accuracy| ≤ 0.1 point; "
               "true features: equal count)\n")
    out.append(wins_table({p: [r for r in res["rows"]
                               if not r["method"].endswith("_split")]
                           for p, res in parts.items()}))
    if "toy" in parts:
        out.append("\n## toy: MSLR − ℓ1 (ultrafs) accuracy by τ (mean over seeds and k; "
                   "then k ≤ 300 / k > 300)\n")
        out.append("| τ | vs ℓ1 ultrafs | k ≤ 300 | k > 300 | vs FGM | vs ℓ1 liblinear |")
        out.append("|---:|---:|---:|---:|---:|---:|")
        rows = parts["toy"]["rows"]
        for tau in sorted({r["tau"] for r in rows}):
            def diff(versus, pred=lambda k: True):
                ds = [c["mslr"]["accuracy"] - c[versus]["accuracy"]
                      for (prob, seed, k), c in cells(
                          [r for r in rows if r["tau"] == tau]).items()
                      if versus in c and "mslr" in c and pred(k)]
                return _fmt(_mean(ds) * 100 if ds else None, "{:+.2f}")
            out.append(f"| {tau:g} | {diff('l1_ultrafs')} | "
                       f"{diff('l1_ultrafs', lambda k: k <= 300)} | "
                       f"{diff('l1_ultrafs', lambda k: k > 300)} | {diff('fgm')} | "
                       f"{diff('l1_liblinear')} |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ main
def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=None,
                        help="comma-separated subset of " + ",".join(ALL_PARTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=None)
    parser.add_argument("--taus", type=float, nargs="+", default=None)
    parser.add_argument("--liblinear-seeds", type=int, nargs="*", default=[0],
                        help="toy seeds on which liblinear is bisected (default: 0)")
    parser.add_argument("--prefix-seeds", type=int, nargs="*", default=[0],
                        help="synth seeds on which MSLR also runs with r fixed "
                             "(prefixes of one run; default: 0)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default=None)
    parser.add_argument("--report", default=None, metavar="JSON",
                        help="only rebuild the tables from a saved result")
    args = parser.parse_args()
    if args.report:
        print(report(json.loads(Path(args.report).read_text())))
        return
    parts = (args.parts.split(",") if args.parts
             else [p for p in ALL_PARTS if not (args.quick and p == "imdb")])
    for p in parts:
        if p not in ALL_PARTS:
            raise SystemExit(f"unknown part {p!r}; known: {', '.join(ALL_PARTS)}")
    if args.seeds is None:
        args.seeds = [0] if args.quick else [0, 1, 2]
    if args.taus is None:
        args.taus = [0.0, 2.0] if args.quick else [0.0, 0.5, 1.0, 2.0, 5.0]
    name = args.name or ("mslr_study_quick" if args.quick else "mslr_study")

    if len(parts) > 1 and not args.quick:      # one child per part: its own peak RSS
        started = time.perf_counter()
        doc = {"argv": sys.argv, "parts": {}, "load_before": os.getloadavg()}
        for p in parts:
            cmd = [sys.executable, __file__, "--parts", p, "--name", f"{name}_{p}",
                   "--seeds", *map(str, args.seeds), "--taus", *map(str, args.taus),
                   "--liblinear-seeds", *map(str, args.liblinear_seeds),
                   "--prefix-seeds", *map(str, args.prefix_seeds)]
            out = run_measured(cmd)
            sys.stderr.write(out["stderr"])
            child = json.loads((OUT_DIR / f"{name}_{p}.json").read_text())
            part = child["parts"][p]
            part["peak_rss_mb"] = out["peak_rss_mb"]
            part["peak_rss_measured_by"] = out["peak_rss_measured_by"]
            part["child_wall_seconds"] = out["seconds"]
            part["load_after"] = child.get("load_after")
            doc["parts"][p] = part
            print(f"{p}: {out['seconds']:.1f} s, peak RSS {out['peak_rss_mb']:.0f} MiB",
                  flush=True)
        doc["seconds"] = time.perf_counter() - started
        doc["load_after"] = os.getloadavg()
    else:                          # in this process (--quick, or one part)
        started_all = time.perf_counter()
        warm()
        warm_seconds = time.perf_counter() - started_all
        doc = {"argv": sys.argv, "parts": {}, "warm_seconds": warm_seconds}
        for p in parts:
            started = time.perf_counter()
            rows, info = RUNNERS[p](args)
            seconds = time.perf_counter() - started
            doc["parts"][p] = {"rows": rows, "info": info, "seconds": seconds,
                               "peak_rss_mb": peak_rss_mb(), "seeds": args.seeds,
                               "taus": args.taus if p == "toy" else None,
                               "liblinear_seeds": args.liblinear_seeds,
                               "prefix_seeds": args.prefix_seeds}
        doc["seconds"] = time.perf_counter() - started_all
        doc["load_after"] = os.getloadavg()
    import ultrafs

    doc["ultrafs"] = str(Path(ultrafs.__file__).parent)
    doc["pythonpath"] = os.environ.get("PYTHONPATH")
    text = report(doc)
    print(text)
    write_result(name, doc)
    (OUT_DIR / f"{name}.md").write_text(text)
    print(f"total {doc['seconds']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
