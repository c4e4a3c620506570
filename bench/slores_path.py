"""ℓ1-LR paths with Slores safe screening (issue 13): rejection, time, peers.

Question (issue 13's acceptance): on the paper's 86-point grid
(λ/λ_max = 0.95, 0.94, …, 0.10) of

    min_{β, c} (1/n) Σ_i log(1 + exp(−y_i (x_i'β + c))) + λ ||β||_1

(unpenalised intercept), how much does Slores discard, basic (reference
λ_max, the paper's rule) and sequential, against the strong rule; does it
ever discard a feature of the solution (KKT violators found: must be 0);
how much faster is the path than the same solver without screening (the
paper: about ×10 above λ/λ_max = 0.5); how do scikit-learn's liblinear,
skglm and celer compare on the same grid; and what does the out-of-core
imdb50k path cost in time and memory?

Protocol, per set:

* ultrafs: ``fit_l1_path`` with screening none / Slores basic / Slores
  sequential / strong basic / strong sequential, same solver, ``tol=1e-6``
  (relative KKT residual of every model, certified on every column).
  Small sets from an ``InMemoryStore`` in this process (median of
  ``--repeats`` runs, numba warmed first); imdb50k from its Zarr store by
  the command line (``ultrafs path --scheduler threads``) in a child
  process under GNU time (wall and peak RSS).
* reference (the "KKT-verified" solution per λ): the synthetic sets,
  ``tests/l1_reference.py: reference_l1_logistic`` (L-BFGS-B + Newton
  polish, KKT asserted); the real sets, ultrafs's ``screening="none"`` path
  at ``tol=1e-9``, whose KKT residual is recomputed here with NumPy on every
  column (reported).
* peers, data in memory as scipy CSR (liblinear) / CSC (skglm, celer) with
  int32 indices, or dense arrays for the dense sets (load time reported
  apart, fits timed alone, numba/JIT warmed on a slice first):
  scikit-learn ``LogisticRegression(l1_ratio=1, solver="liblinear",
  C=1/(nλ), tol=1e-6, warm_start=True)`` (warm_start is documented as
  useless for liblinear; its intercept is penalised, so it solves another
  problem: its objective is evaluated on ours anyway); skglm
  ``SparseLogisticRegression(alpha=λ, tol=1e-6·λ, fit_intercept=True,
  warm_start=True)`` (its stop, the largest subdifferential distance and
  intercept gradient, is ultrafs's KKT residual times λ); celer fits no
  intercept (``fit_intercept=True`` raises NotImplementedError), so it is
  compared on the no-intercept problem with skglm ``fit_intercept=False``
  (same tol) against a skglm no-intercept reference at ``tol=1e-10·λ``
  whose KKT residual is checked here; celer runs ``celer_path`` one λ at a
  time warm-started by ``coef_init``, ``tol=1e-10`` (duality gap ≤
  tol·n·log 2).  A peer whose path passes ``--peer-cap`` seconds stops
  there (the λ done are reported).
* "gap": (objective − reference objective) / reference objective, both
  evaluated here by the same NumPy formula on the method's (β, c); "KKT":
  the method's largest relative KKT residual on the unpenalised-intercept
  problem (or the no-intercept one), over all columns.

Also: peak RSS of the imdb50k path against the store's size and p·8 bytes,
at p and at 2p (the same rows ingested with --n-features 2p: all-zero
columns added), and identical models for block sizes and schedulers on
rcv1_small (a Zarr store).

Usage::

    python bench/slores_path.py [--sets leu,rcv1_small,dorothea_train,dense_synth,zipf_synth,imdb50k]
                                [--skip-peers] [--repeats 3] [--name slores_path]

Raw results: ``bench/out/NAME.json``; the tables: ``bench/out/NAME.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from common import DATA_DIR, OUT_DIR, peak_rss_mb, run_measured, write_result

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

ALL_SETS = ("leu", "rcv1_small", "dorothea_train", "dense_synth", "zipf_synth", "imdb50k")
REAL = {"leu": 7129, "rcv1_small": 47236, "dorothea_train": 88119}
IMDB_FEATURES = 2_482_617
IMDB_ROWS = 25_000
TABLE_RATIOS = (0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
#: (label, screening, sequential)
MODES = (("none", "none", True), ("slores-basic", "slores", False),
         ("slores-seq", "slores", True), ("strong-basic", "strong", False),
         ("strong-seq", "strong", True))
TOL = 1e-6
REF_TOL = 1e-9
PHASES = ("seconds_screening", "seconds_fetch", "seconds_solving", "seconds_kkt")


# ------------------------------------------------------------------ data
def dense_synth(seed=0, n=500, p=2000):
    """Dense Gaussian, unbalanced labels (~30% positive), a planted model on
    10 features, plus a constant column, an all-zero column, a duplicate of
    the first feature to enter (j0), the negative of an informative column
    and a scaled copy of another (p columns in all)."""
    rng = np.random.default_rng(seed)
    base = p - 5
    X = rng.standard_normal((n, base))
    w = np.zeros(base)
    idx = rng.choice(base, 10, replace=False)
    w[idx] = 1.5 * rng.standard_normal(10)
    y = np.where(rng.random(n) < expit(X @ w - 2.5), 1.0, -1.0)
    n_pos = int((y > 0).sum())
    s = (n - n_pos) / n * X[y > 0].sum(0) - n_pos / n * X[y < 0].sum(0)
    j0 = int(np.argmax(np.abs(s)))
    X = np.hstack([X, np.full((n, 1), 3.7), np.zeros((n, 1)), X[:, [j0]],
                   -X[:, [idx[0]]], 2.0 * X[:, [idx[1]]]])
    return np.ascontiguousarray(X), y


def zipf_synth(seed=1, n=2000, p=50000, nnz_row=60):
    """Sparse text-like: Zipf column frequencies (exponent 1.1), log(1 +
    count) values, a planted model on 20 of the 500 most frequent words."""
    rng = np.random.default_rng(seed)
    freq = 1.0 / np.arange(1, p + 1) ** 1.1
    freq /= freq.sum()
    counts = rng.poisson(nnz_row, n) + 1
    rows, cols = [], []
    for i in range(n):
        c = np.unique(rng.choice(p, size=counts[i], p=freq))
        rows.append(np.full(c.size, i))
        cols.append(c)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    vals = np.log1p(1.0 + rng.poisson(1.0, rows.size))
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, p))
    w = np.zeros(p)
    w[rng.choice(500, 20, replace=False)] = 2.0 * rng.standard_normal(20)
    y = np.where(rng.random(n) < expit(X @ w - 0.5), 1.0, -1.0)
    return X, y


def _int32(X):
    X = X.copy()
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X


def imdb_text():
    """The first 25,000 rows of imdb50k as LIBSVM text (made once)."""
    path = OUT_DIR / "imdb50k_train.svm"
    if not path.exists():
        OUT_DIR.mkdir(exist_ok=True)
        tmp = path.with_suffix(".svm.tmp")
        subprocess.run(f"bzcat {DATA_DIR / 'imdb50k_uni_bigram.svm.bz2'} | head -n "
                       f"{IMDB_ROWS} > {tmp}", shell=True, check=True)
        tmp.rename(path)
    return path


def ingest_once(text, store, n_features):
    """``ultrafs ingest --n-features N TEXT STORE`` unless STORE exists."""
    if store.exists():
        return None
    cmd = [*_ultrafs(), "ingest", "--n-features", str(n_features), str(text), str(store)]
    out = run_measured(cmd)
    return {"command": " ".join(cmd[-5:]), "seconds": out["seconds"],
            "peak_rss_mb": out["peak_rss_mb"]}


def wait_quiet(threshold=1.5, longest=90.0):
    """Wait (at most ``longest`` s) for the 1-minute load to fall below
    ``threshold`` (other jobs share the 2 cores); return the load then."""
    started = time.perf_counter()
    while os.getloadavg()[0] >= threshold and time.perf_counter() - started < longest:
        time.sleep(5)
    return os.getloadavg()[0]


def _ultrafs():
    exe = shutil.which("ultrafs")
    return [exe] if exe else [sys.executable, "-m", "ultrafs.cli"]


def load_set(name):
    """X for the peers (+ its load seconds), y (±1), the ultrafs store."""
    from sklearn.datasets import load_svmlight_file

    from ultrafs.store import open_store
    from ultrafs.store.memory import InMemoryStore

    info = {"name": name}
    started = time.perf_counter()
    if name in REAL:
        X, y = load_svmlight_file(str(DATA_DIR / f"{name}.svm.bz2"),
                                  n_features=REAL[name], zero_based=False)
        info["source"] = f"shared/data/{name}.svm.bz2"
    elif name == "imdb50k":
        text = imdb_text()
        X, y = load_svmlight_file(str(text), n_features=IMDB_FEATURES, zero_based=False)
        info["source"] = "first 25,000 rows of shared/data/imdb50k_uni_bigram.svm.bz2"
    elif name == "dense_synth":
        X, y = dense_synth()
        info["source"] = "dense_synth(seed=0, n=500, p=2000)"
    elif name == "zipf_synth":
        X, y = zipf_synth()
        info["source"] = "zipf_synth(seed=1, n=2000, p=50000, ~60 words a row)"
    else:
        raise SystemExit(f"unknown set {name!r}; known: {', '.join(ALL_SETS)}")
    y = np.where(np.asarray(y) > 0, 1.0, -1.0)
    dense = name in ("leu", "dense_synth")
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        X.sum_duplicates()
    peers = {}
    if dense:
        D = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        peers["C"] = np.ascontiguousarray(D)
        peers["F"] = np.asfortranarray(D)
    else:
        peers["csr"] = _int32(X)
        peers["csc"] = _int32(X.tocsc())
    info["peer_load_seconds"] = time.perf_counter() - started
    info["peer_format"] = ("dense float64 (C order for liblinear, F for skglm/celer)" if dense
                           else "scipy CSR (liblinear) / CSC (skglm, celer), float64, int32 indices")
    n, p = X.shape
    info.update(n_samples=n, n_features=p, n_pos=int((y > 0).sum()),
                nnz=int(X.nnz) if sp.issparse(X) else int(np.count_nonzero(X)),
                n_constant=n_constant_columns(X))
    if name == "imdb50k":
        zarr = OUT_DIR / "imdb50k_train.zarr"
        info["ingest"] = ingest_once(imdb_text(), zarr, IMDB_FEATURES)
        store = open_store(zarr)
        info["store"] = str(zarr.relative_to(REPO))
        info["store_bytes"] = _du(zarr)
    else:
        store = InMemoryStore(X, y)
        info["store"] = "InMemoryStore (this process)"
    # the matrix the objectives and KKT residuals are evaluated on
    evalX = peers.get("C", X if sp.issparse(X) else None)
    return info, evalX, y, store, peers


def n_constant_columns(X):
    """Columns whose n values are all equal (all-zero ones included): every
    rule drops them (Theorem 4), so they inflate the rejection ratios."""
    if not sp.issparse(X):
        return int(np.count_nonzero(X.min(axis=0) == X.max(axis=0)))
    Xc = sp.csc_matrix(X)
    counts = np.diff(Xc.indptr)
    low = Xc.min(axis=0).toarray().ravel()
    high = Xc.max(axis=0).toarray().ravel()
    full = (counts == X.shape[0]) & (low == high)
    return int(np.count_nonzero((counts == 0) | full))


def _du(path):
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


# ------------------------------------------------------------------ evaluation
def objective(X, y, lam, beta, c):
    f = np.asarray(X @ beta).ravel() + c
    return float(np.mean(np.logaddexp(0.0, -y * f)) + lam * np.abs(beta).sum())


def kkt_residual(X, y, lam, beta, c, intercept=True):
    """Largest relative KKT residual of (β, c) over every column (and c)."""
    n = len(y)
    f = np.asarray(X @ beta).ravel() + c
    theta = expit(-y * f)
    g = -np.asarray(X.T @ (y * theta)).ravel() / n
    nz = beta != 0
    worst = 0.0
    if nz.any():
        worst = float(np.max(np.abs(g[nz] + lam * np.sign(beta[nz]))))
    if (~nz).any():
        worst = max(worst, float(np.max(np.abs(g[~nz]) - lam)))
    if intercept:
        worst = max(worst, abs(float(np.mean(y * theta))))
    return max(worst, 0.0) / lam


def full_beta(p, columns, coefs):
    beta = np.zeros(p)
    beta[np.asarray(columns, dtype=np.int64)] = coefs
    return beta


def sparse_model(beta, c):
    """(columns, weights, intercept) of a dense β: models are kept sparse."""
    beta = np.asarray(beta, dtype=np.float64).ravel()
    nz = np.flatnonzero(beta)
    return nz, beta[nz].copy(), float(c)


def _gaps(X, y, grid, models, ref_obj, intercept=True):
    """Per λ: objective, relative gap to the reference, KKT residual, nnz."""
    rows = []
    p = X.shape[1]
    for k, (cols, vals, c) in enumerate(models):
        beta = full_beta(p, cols, vals)
        obj = objective(X, y, grid[k], beta, c)
        rows.append({"objective": obj, "gap": (obj - ref_obj[k]) / abs(ref_obj[k]),
                     "kkt": kkt_residual(X, y, grid[k], beta, c, intercept),
                     "nnz": int(np.count_nonzero(beta))})
    return rows


# ------------------------------------------------------------------ ultrafs
def _summary(records, statistics_seconds, wall):
    ratios = np.array([r["ratio"] for r in records])
    per = np.array([sum(r[k] for k in PHASES) for r in records])
    out = {"wall": wall, "statistics": statistics_seconds,
           "path_seconds": statistics_seconds + float(per.sum()),
           "above_half_seconds": float(per[ratios > 0.5 + 1e-9].sum()),
           "solve_above_half": float(sum(r["seconds_solving"] for r, q in zip(records, ratios)
                                         if q > 0.5 + 1e-9)),
           "violators_found": int(sum(r["kkt_violations_found"] for r in records)),
           "violators_left": int(sum(r["kkt_violations_left"] for r in records)),
           "solves": int(sum(r["solves"] for r in records)),
           "max_kkt": float(max(r["kkt"] for r in records)),
           "converged": bool(all(r["converged"] for r in records))}
    for key in PHASES:
        out[key] = float(sum(r[key] for r in records))
    return out


def _slim(records):
    keep = ("lambda", "ratio", "C", "nnz", "objective", "intercept", "kkt", "converged",
            "kept", "rejection_ratio", "kkt_violations_found", "kkt_violations_left",
            "solves", *PHASES, "cached_columns", "solver_iterations")
    return [{k: r.get(k) for k in keep} for r in records]


def run_ultrafs_memory(store, y, screening, sequential, repeats, tol=TOL):
    from ultrafs.methods.l1_path import fit_l1_path

    runs = []
    for _ in range(repeats):
        load = os.getloadavg()[0]
        started = time.perf_counter()
        path = fit_l1_path(store, y, screening=screening, sequential=sequential, tol=tol)
        runs.append((time.perf_counter() - started, load, path))
    runs.sort(key=lambda item: item[0])
    wall, load, path = runs[len(runs) // 2]
    models = [(np.asarray(c, dtype=np.int64), np.asarray(b, dtype=np.float64), float(i))
              for c, b, i in zip(path.columns, path.coefs, path.intercepts)]
    result = {"summary": _summary(path.records, path.statistics_seconds, wall),
              "walls": [r[0] for r in runs], "load": load,
              "records": _slim(path.records), "lambda_max": path.lambda_max}
    return result, path.lambdas, models


def run_ultrafs_cli(store_path, screening, sequential, tol=TOL, tag=""):
    """``ultrafs path`` in a child under GNU time; records and models from its JSON."""
    from ultrafs.store import open_store

    out = OUT_DIR / f"slores_path_imdb_{tag or screening + ('-seq' if sequential else '-basic')}.json"
    cmd = [*_ultrafs(), "path", "--data", str(store_path), "--screening", screening,
           *([] if sequential else ["--basic"]), "--n-lambdas", "86",
           "--lambda-min-ratio", "0.1", "--tol", repr(tol), "--scheduler", "threads",
           "--out", str(out), "--no-progress"]
    load = wait_quiet()
    measured = run_measured(cmd)
    doc = json.loads(out.read_text())
    store = open_store(store_path)
    models = [(store.columns_of(np.asarray(step["features"], dtype=np.int64)),
               np.asarray(step["coef"], dtype=np.float64), float(step["intercept"]))
              for step in doc["path"]]
    records = doc["path"]
    result = {"summary": _summary(records, doc["statistics_seconds"], measured["seconds"]),
              "walls": [measured["seconds"]], "load": load,
              "peak_rss_mb": measured["peak_rss_mb"],
              "peak_rss_measured_by": measured["peak_rss_measured_by"],
              "command": " ".join(["ultrafs", *cmd[1:]]).replace(str(REPO) + "/", ""),
              "records": _slim(records), "lambda_max": doc["lambda_max"]}
    grid = np.array([step["lambda"] for step in records])
    return result, grid, models


def warm_numba():
    """Compile (or load) ultrafs's kernels before anything is timed."""
    from ultrafs.methods.l1_path import fit_l1_path
    from ultrafs.store.memory import InMemoryStore

    X, y = zipf_synth(seed=7, n=200, p=2000, nnz_row=20)
    for screening, sequential in (("slores", True), ("strong", True), ("none", True)):
        fit_l1_path(InMemoryStore(X, y), y, screening=screening, sequential=sequential,
                    n_lambdas=5)


# ------------------------------------------------------------------ references
def reference(name, X, y, store, grid, info):
    """Per λ (β, c) of the KKT-verified reference, and how it was obtained."""
    from ultrafs.methods.l1_path import fit_l1_path

    p = info["n_features"]
    started = time.perf_counter()
    if name == "imdb50k":
        _, ref_grid, ultra = run_ultrafs_cli(store.path, "none", True, tol=REF_TOL,
                                             tag="reference")
    else:
        path = fit_l1_path(store, y, lambdas=grid, screening="none", tol=REF_TOL)
        ref_grid = path.lambdas
        ultra = [(np.asarray(c, dtype=np.int64), np.asarray(b), float(i)) for c, b, i in
                 zip(path.columns, path.coefs, path.intercepts)]
    assert np.allclose(ref_grid, grid, rtol=1e-14, atol=0)
    meta = {"ultrafs_none_seconds": time.perf_counter() - started}
    meta["ultrafs_none_max_kkt"] = max(kkt_residual(X, y, lam, full_beta(p, cols, b), c)
                                       for lam, (cols, b, c) in zip(grid, ultra))
    if name in ("dense_synth", "zipf_synth"):
        from l1_reference import reference_l1_logistic

        started = time.perf_counter()
        lbfgs = []
        for lam in grid:
            beta, c, _ = reference_l1_logistic(X, y, lam)
            lbfgs.append(sparse_model(beta, c))
        meta["method"] = "reference_l1_logistic (L-BFGS-B + Newton polish, KKT asserted)"
        meta["seconds"] = time.perf_counter() - started
        meta["max_kkt"] = max(kkt_residual(X, y, lam, full_beta(p, cols, b), c)
                              for lam, (cols, b, c) in zip(grid, lbfgs))
        obj_l = np.array([objective(X, y, lam, full_beta(p, cols, b), c)
                          for lam, (cols, b, c) in zip(grid, lbfgs)])
        obj_u = np.array([objective(X, y, lam, full_beta(p, cols, b), c)
                          for lam, (cols, b, c) in zip(grid, ultra)])
        meta["ultrafs_none_vs_lbfgs_max_rel"] = float(np.max(np.abs(obj_u - obj_l) / obj_l))
        return lbfgs, meta
    meta["method"] = (f"ultrafs screening='none' at tol={REF_TOL:g}, KKT residual "
                      "recomputed here on every column")
    meta["max_kkt"] = meta["ultrafs_none_max_kkt"]
    return ultra, meta


def reference_nointercept(X_csc, y, grid, cap):
    """skglm with fit_intercept=False at tol 1e-10·λ (KKT checked by the caller)."""
    from skglm import SparseLogisticRegression

    model = SparseLogisticRegression(alpha=grid[0], tol=1e-10 * grid[0], fit_intercept=False,
                                     warm_start=True, max_iter=500)
    out, spent = [], 0.0
    for lam in grid:
        if spent > cap:
            break
        model.set_params(alpha=lam, tol=1e-10 * lam)
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X_csc, y)
        spent += time.perf_counter() - started
        out.append(sparse_model(model.coef_, 0.0))
    return out, spent


# ------------------------------------------------------------------ peers
def _timed_path(grid, fit_one, cap):
    """Fit λ by λ (warm state inside ``fit_one``); stop once past ``cap`` s."""
    models, times = [], []
    for lam in grid:
        if sum(times) > cap:
            break
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            beta, c = fit_one(lam)
        times.append(time.perf_counter() - started)
        models.append(sparse_model(beta, c))
    return models, times


def peer_liblinear(peers, y, grid, cap, tol=1e-6):
    from sklearn.linear_model import LogisticRegression

    X = peers.get("csr", peers.get("C"))
    n = len(y)
    model = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=1.0, tol=tol,
                               max_iter=1000, warm_start=True)

    def fit(lam):
        model.set_params(C=1.0 / (n * lam))
        model.fit(X, y)
        return model.coef_.ravel().astype(np.float64), float(model.intercept_[0])

    return _timed_path(grid, fit, cap)


def peer_skglm(peers, y, grid, cap, fit_intercept=True, rtol=1e-6):
    from skglm import SparseLogisticRegression

    X = peers.get("csc", peers.get("F"))
    model = SparseLogisticRegression(alpha=grid[0], tol=rtol * grid[0],
                                     fit_intercept=fit_intercept, warm_start=True,
                                     max_iter=200)

    def fit(lam):
        model.set_params(alpha=lam, tol=rtol * lam)
        model.fit(X, y)
        c = float(np.ravel(model.intercept_)[0]) if fit_intercept else 0.0
        return np.asarray(model.coef_, dtype=np.float64).ravel().copy(), c

    return _timed_path(grid, fit, cap)


def peer_celer(peers, y, grid, cap, tol=1e-10):
    from celer import celer_path

    X = peers.get("csc", peers.get("F"))
    n = len(y)
    state = {"coef": None}

    def fit(lam):
        _, coefs, _ = celer_path(X, y, "logreg", alphas=np.array([n * lam]),
                                 coef_init=state["coef"], tol=tol)
        state["coef"] = np.ascontiguousarray(coefs[:, 0])
        return state["coef"].astype(np.float64).copy(), 0.0

    return _timed_path(grid, fit, cap)


def warm_peers(peers, y, grid):
    """One small fit of each peer on a slice of the same kind (JIT, imports)."""
    rows = slice(0, min(len(y), 200))
    sub = {key: (X[rows] if key in ("csr", "csc") else
                 (np.ascontiguousarray(X[rows]) if key == "C" else np.asfortranarray(X[rows])))
           for key, X in peers.items()}
    sub = {key: (_int32(sp.csr_matrix(X)) if key == "csr" else
                 _int32(sp.csc_matrix(X)) if key == "csc" else X) for key, X in sub.items()}
    ys = y[rows]
    if len(np.unique(ys)) < 2:
        ys = np.where(np.arange(len(ys)) % 2 == 0, 1.0, -1.0)
    lam = np.array([grid[len(grid) // 2]])
    peer_liblinear(sub, ys, lam, 1e9)
    peer_skglm(sub, ys, lam, 1e9)
    peer_skglm(sub, ys, lam, 1e9, fit_intercept=False)
    peer_celer(sub, ys, lam, 1e9)


def run_peers(name, info, evalX, y, peers, grid, ref, cap, ultra_models):
    out = {}
    p = evalX.shape[1]
    ref_obj = np.array([objective(evalX, y, lam, full_beta(p, cols, b), c)
                        for lam, (cols, b, c) in zip(grid, ref)])
    warm_peers(peers, y, grid)
    for label, runner, note in (
            ("liblinear", lambda: peer_liblinear(peers, y, grid, cap),
             "intercept penalised (intercept_scaling=1); warm_start has no effect"),
            ("skglm", lambda: peer_skglm(peers, y, grid, cap),
             "ProxNewton, unpenalised intercept, warm-started")):
        load = wait_quiet()
        models, times = runner()
        rows = _gaps(evalX, y, grid[:len(models)], models, ref_obj)
        out[label] = {"seconds": float(sum(times)), "times": times, "n_lambdas": len(models),
                      "capped": len(models) < len(grid), "load": load, "note": note,
                      "per_lambda": rows, **_gap_summary(rows)}
        print(f"  {name} {label}: {sum(times):.1f} s, {len(models)} λ, "
              f"max gap {out[label]['max_gap']:.2e}", flush=True)
    # ultrafs's own models against the same reference
    for label, models in ultra_models.items():
        rows = _gaps(evalX, y, grid, models, ref_obj)
        out[f"ultrafs {label}"] = {"per_lambda": rows, **_gap_summary(rows)}
    # no-intercept problem: celer against skglm, reference skglm at 1e-10·λ
    Xc = peers.get("csc", peers.get("F"))
    started = time.perf_counter()
    ref0, ref0_seconds = reference_nointercept(Xc, y, grid, 4 * cap)
    ref0_obj = np.array([objective(evalX, y, lam, full_beta(p, cols, b), 0.0)
                         for lam, (cols, b, _) in zip(grid, ref0)])
    ref0_kkt = max(kkt_residual(evalX, y, lam, full_beta(p, cols, b), 0.0, intercept=False)
                   for lam, (cols, b, _) in zip(grid, ref0))
    out["no_intercept_reference"] = {"method": "skglm fit_intercept=False, tol=1e-10·λ",
                                     "seconds": ref0_seconds, "n_lambdas": len(ref0),
                                     "max_kkt": ref0_kkt,
                                     "wall": time.perf_counter() - started}
    g0 = grid[:len(ref0)]
    for label, runner in (("celer (no intercept)", lambda: peer_celer(peers, y, g0, cap)),
                          ("skglm (no intercept)",
                           lambda: peer_skglm(peers, y, g0, cap, fit_intercept=False))):
        load = wait_quiet()
        models, times = runner()
        rows = _gaps(evalX, y, g0[:len(models)], models, ref0_obj, intercept=False)
        out[label] = {"seconds": float(sum(times)), "times": times, "n_lambdas": len(models),
                      "capped": len(models) < len(grid), "load": load,
                      "per_lambda": rows, **_gap_summary(rows)}
        print(f"  {name} {label}: {sum(times):.1f} s, {len(models)} λ, "
              f"max gap {out[label]['max_gap']:.2e}", flush=True)
    return out


def _gap_summary(rows):
    gaps = np.array([r["gap"] for r in rows])
    kkts = np.array([r["kkt"] for r in rows])
    return {"max_gap": float(gaps.max()), "min_gap": float(gaps.min()),
            "max_kkt": float(kkts.max()), "median_kkt": float(np.median(kkts))}


# ------------------------------------------------------------------ extras
def identity_check():
    """rcv1_small from a Zarr store: block_size None / 1000 × synchronous /
    threads, Slores sequential and basic: the same models bit for bit?"""
    from ultrafs.methods.l1_path import fit_l1_path
    from ultrafs.store import open_store

    zarr = OUT_DIR / "rcv1_small.zarr"
    ingest_once(DATA_DIR / "rcv1_small.svm.bz2", zarr, REAL["rcv1_small"])
    store = open_store(zarr)
    out = {"store": str(zarr.relative_to(REPO)),
           "n_blocks": len(store.default_block_bounds()) - 1, "runs": []}
    for screening, sequential in (("slores", True), ("slores", False), ("strong", True)):
        base = None
        for block_size in (None, 1000):
            for scheduler in ("synchronous", "threads"):
                path = fit_l1_path(store, screening=screening, sequential=sequential,
                                   block_size=block_size, scheduler=scheduler)
                sig = {"nnz": [r["nnz"] for r in path.records],
                       "objective": [r["objective"] for r in path.records],
                       "intercepts": list(path.intercepts),
                       "columns": [c.tolist() for c in path.columns],
                       "coefs": [c.tobytes().hex() for c in path.coefs],
                       "kept": [r["kept"] for r in path.records],
                       "lambda_max": path.lambda_max}
                if base is None:
                    base = sig
                same = {key: sig[key] == base[key] for key in sig}
                out["runs"].append({"screening": screening, "sequential": sequential,
                                    "block_size": block_size, "scheduler": scheduler,
                                    "identical_to_first": same,
                                    "all_identical": all(same.values())})
    out["all_identical"] = all(run["all_identical"] for run in out["runs"])
    return out


def rss_check(text, repeats=3):
    """Peak RSS of ``ultrafs path`` (Slores sequential) on imdb50k at two
    numbers of columns, same rows, same nonzeros, same models.

    ``imdb50k_train.zarr`` (``--n-features 2482617``) keeps the 962,351
    ids of the space that no training row uses as empty columns (the dense
    id layout); ingesting the same text with ``--n-features 4965234`` makes
    the writers drop every empty column (``sparse_id_layout``: more empty
    ids than used ones and over 2**21 of them), leaving the 1,520,266 used
    ones.  The difference of the peaks over the difference of p is what the
    run holds per feature.  ``repeats`` runs per store and scheduler.
    """
    from ultrafs.store import open_store

    runs = []
    stores = [OUT_DIR / "imdb50k_train.zarr", OUT_DIR / "imdb50k_train_nonempty.zarr"]
    ingest_once(text, stores[0], IMDB_FEATURES)
    ingest_once(text, stores[1], 2 * IMDB_FEATURES)
    for rep in range(repeats):
        for zarr in stores:
            for scheduler in ("threads", "synchronous"):
                out = OUT_DIR / "slores_path_imdb_rss.json"
                cmd = [*_ultrafs(), "path", "--data", str(zarr), "--screening", "slores",
                       "--scheduler", scheduler, "--out", str(out), "--no-progress"]
                measured = run_measured(cmd)
                doc = json.loads(out.read_text())
                runs.append({"store": str(zarr.relative_to(REPO)),
                             "n_features": int(open_store(zarr).n_features),
                             "scheduler": scheduler, "repeat": rep,
                             "peak_rss_mb": measured["peak_rss_mb"],
                             "wall": measured["seconds"],
                             "last_objective": doc["path"][-1]["objective"],
                             "command": " ".join(["ultrafs", *cmd[1:]]).replace(
                                 str(REPO) + "/", "")})
    table = []
    for zarr in stores:
        for scheduler in ("threads", "synchronous"):
            mine = [r for r in runs if r["store"] == str(zarr.relative_to(REPO))
                    and r["scheduler"] == scheduler]
            p = mine[0]["n_features"]
            table.append({"store": mine[0]["store"], "n_features": p, "scheduler": scheduler,
                          "store_bytes": _du(zarr), "vector_mb": p * 8 / 2**20,
                          "peak_rss_mb": float(np.median([r["peak_rss_mb"] for r in mine])),
                          "peak_rss_range": [min(r["peak_rss_mb"] for r in mine),
                                             max(r["peak_rss_mb"] for r in mine)],
                          "wall": float(np.median([r["wall"] for r in mine])),
                          "same_objective": len({r["last_objective"] for r in runs}) == 1})
    slopes = {}
    for scheduler in ("threads", "synchronous"):
        big, small = [t for t in table if t["scheduler"] == scheduler]
        per = (big["peak_rss_mb"] - small["peak_rss_mb"]) * 2**20 / (
            big["n_features"] - small["n_features"])
        slopes[scheduler] = {"bytes_per_feature": per, "float64_vectors": per / 8,
                             "rest_mb": big["peak_rss_mb"] - per * big["n_features"] / 2**20}
    return {"runs": runs, "table": table, "slopes": slopes}


# ------------------------------------------------------------------ report
def _fmt_ratio(x):
    return "-" if x is None else ("1" if x == 1.0 else f"{x:.4f}")


def markdown(doc):
    lines = []
    sets = doc["sets"]
    lines.append("### Rejection ratio (discarded / zero weights of the certified model) "
                 "and KKT violators found over the 86 λ\n")
    head = "| set | rule | " + " | ".join(f"{r:g}" for r in TABLE_RATIOS) + " | violators found |"
    lines += [head, "|" + "---|" * (len(TABLE_RATIOS) + 3)]
    for name, s in sets.items():
        for label, _, _ in MODES[1:]:
            recs = s["ultrafs"][label]["records"]
            cells = []
            for r in TABLE_RATIOS:
                k = int(round((0.95 - r) / 0.01))
                cells.append(_fmt_ratio(recs[k]["rejection_ratio"]))
            found = s["ultrafs"][label]["summary"]["violators_found"]
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + f" | {found} |")
    lines.append("\nThe same among the non-constant columns only, ((discarded − c) / (zero "
                 "weights − c), c = constant columns, which every rule drops):\n")
    lines += ["| set | c / p | rule | " + " | ".join(f"{r:g}" for r in TABLE_RATIOS) + " |",
              "|" + "---|" * (len(TABLE_RATIOS) + 3)]
    for name, s in sets.items():
        c, p = s["info"].get("n_constant"), s["info"]["n_features"]
        if c is None:
            continue
        for label, _, _ in MODES[1:]:
            recs = s["ultrafs"][label]["records"]
            cells = []
            for r in TABLE_RATIOS:
                rec = recs[int(round((0.95 - r) / 0.01))]
                zero = p - rec["nnz"]
                cells.append(_fmt_ratio(max(rec["rejection_ratio"] * zero - c, 0.0)
                                        / (zero - c)))
            lines.append(f"| {name} | {c / p:.3f} | {label} | " + " | ".join(cells) + " |")
    lines.append("\n### Path seconds by phase (same solver, tol 1e-6)\n")
    lines.append("| set | screening | wall | statistics | screening | fetch | solve | KKT pass "
                 "| λ/λ_max > 0.5: s (×none) | whole path: s (×none) | solve only, > 0.5 / whole (×none) "
                 "| rule + solve, > 0.5 / ≤ 0.5 (×none solve) |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, s in sets.items():
        none = s["ultrafs"]["none"]["summary"]
        for label, _, _ in MODES:
            m = s["ultrafs"][label]["summary"]
            sp_half = none["above_half_seconds"] / m["above_half_seconds"]
            sp_whole = none["path_seconds"] / m["path_seconds"]
            sp_solve = none["seconds_solving"] / max(m["seconds_solving"], 1e-12)
            sp_solve_half = none["solve_above_half"] / max(m["solve_above_half"], 1e-12)
            # the paper's measure (Fig. 3): the rule plus the solver on what it
            # kept, against the solver alone (no statistics, fetch or KKT pass)
            paper = []
            for above in (True, False):
                def part(recs, keys):
                    return sum(r[k] for r in recs for k in keys
                               if (r["ratio"] > 0.5 + 1e-9) == above)
                base = part(s["ultrafs"]["none"]["records"], ("seconds_solving",))
                mine = part(s["ultrafs"][label]["records"],
                            ("seconds_screening", "seconds_solving"))
                paper.append(base / max(mine, 1e-12))
            lines.append(
                f"| {name} | {label} | {m['wall']:.2f} | {m['statistics']:.2f} | "
                f"{m['seconds_screening']:.2f} | {m['seconds_fetch']:.2f} | "
                f"{m['seconds_solving']:.2f} | {m['seconds_kkt']:.2f} | "
                f"{m['above_half_seconds']:.2f} (×{sp_half:.2f}) | "
                f"{m['path_seconds']:.2f} (×{sp_whole:.2f}) | ×{sp_solve_half:.1f} / ×{sp_solve:.1f} | "
                f"×{paper[0]:.1f} / ×{paper[1]:.1f} |")
    if any("peers" in s for s in sets.values()):
        lines.append("\n### Peers on the same grid (fits only; gap and KKT against the "
                     "reference, max over the λ done)\n")
        lines.append("| set | method | problem | path s | λ done | ÷ ultrafs slores-seq wall "
                     "| max rel. gap | max rel. KKT | load s |")
        lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|")
        for name, s in sets.items():
            if "peers" not in s:
                continue
            ours = s["ultrafs"]["slores-seq"]["summary"]["wall"]
            for label in ("slores-seq", "slores-basic", "strong-seq", "none"):
                g = s["peers"][f"ultrafs {label}"]
                lines.append(f"| {name} | ultrafs {label} | intercept | "
                             f"{s['ultrafs'][label]['summary']['wall']:.2f} | 86 | "
                             f"{s['ultrafs'][label]['summary']['wall'] / ours:.2f} | "
                             f"{g['max_gap']:.1e} | {g['max_kkt']:.1e} | - |")
            for label, problem in (("liblinear", "intercept penalised"),
                                   ("skglm", "intercept"),
                                   ("skglm (no intercept)", "no intercept"),
                                   ("celer (no intercept)", "no intercept")):
                g = s["peers"][label]
                lines.append(f"| {name} | {label} | {problem} | {g['seconds']:.2f} | "
                             f"{g['n_lambdas']}{' (capped)' if g['capped'] else ''} | "
                             f"{g['seconds'] / ours:.2f} | {g['max_gap']:.1e} | "
                             f"{g['max_kkt']:.1e} | {s['info']['peer_load_seconds']:.2f} |")
    lines.append("\n### References\n")
    lines.append("| set | reference | max rel. KKT | seconds | notes |")
    lines.append("|---|---|---:|---:|---|")
    for name, s in sets.items():
        r = s["reference"]
        note = (f"ultrafs none@1e-9 vs L-BFGS: max rel. objective diff "
                f"{r['ultrafs_none_vs_lbfgs_max_rel']:.1e}" if "ultrafs_none_vs_lbfgs_max_rel" in r
                else "")
        if "peers" in s:
            r0 = s["peers"]["no_intercept_reference"]
            note += (("; " if note else "") + f"no-intercept reference (skglm 1e-10·λ): max "
                     f"rel. KKT {r0['max_kkt']:.1e}, {r0['n_lambdas']} λ")
        lines.append(f"| {name} | {r['method']} | {r['max_kkt']:.1e} | "
                     f"{r.get('seconds', r['ultrafs_none_seconds']):.1f} | {note} |")
    if "rss" in doc:
        rss = doc["rss"]
        lines.append("\n### Peak RSS of `ultrafs path` on imdb50k (Slores sequential, GNU time, "
                     "median of the runs)\n")
        lines.append("| store | features p | scheduler | store on disk | p × 8 bytes | peak RSS "
                     "(range) | wall |")
        lines.append("|---|---:|---|---:|---:|---:|---:|")
        for t in rss["table"]:
            lines.append(f"| {t['store']} | {t['n_features']:,} | {t['scheduler']} | "
                         f"{t['store_bytes'] / 2**20:.1f} MiB | {t['vector_mb']:.1f} MiB | "
                         f"{t['peak_rss_mb']:.0f} MiB ({t['peak_rss_range'][0]:.0f}–"
                         f"{t['peak_rss_range'][1]:.0f}) | {t['wall']:.1f} s |")
        for scheduler, sl in rss["slopes"].items():
            lines.append(f"\n{scheduler}: {sl['bytes_per_feature']:.0f} bytes per column "
                         f"(= {sl['float64_vectors']:.1f} float64 vectors of length p); the "
                         f"rest, independent of p: {sl['rest_mb']:.0f} MiB.")
    if "identity" in doc:
        idn = doc["identity"]
        lines.append("\n### Identical models for block sizes and schedulers (rcv1_small, Zarr)\n")
        lines.append("| rule | block_size | scheduler | same nnz | same objective (bits) "
                     "| same columns / weights (bits) / intercepts |")
        lines.append("|---|---|---|---|---|---|")
        for run in idn["runs"]:
            same = run["identical_to_first"]
            rule = f"{run['screening']}-{'seq' if run['sequential'] else 'basic'}"
            lines.append(f"| {rule} | {run['block_size']} | {run['scheduler']} | "
                         f"{'yes' if same['nnz'] else 'NO'} | "
                         f"{'yes' if same['objective'] else 'NO'} | "
                         f"{'yes' if same['columns'] and same['coefs'] and same['intercepts'] else 'NO'} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(ALL_SETS))
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--skip-identity", action="store_true")
    parser.add_argument("--skip-rss", action="store_true")
    parser.add_argument("--repeats", type=int, default=3,
                        help="ultrafs runs per mode on the in-memory sets (median)")
    parser.add_argument("--peer-cap", type=float, default=900.0,
                        help="seconds after which a peer's path stops")
    parser.add_argument("--name", default="slores_path")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite NAME.md from NAME.json")
    args = parser.parse_args(argv)
    if args.report_only:
        doc = json.loads((OUT_DIR / f"{args.name}.json").read_text())
        for name, entry in doc["sets"].items():
            if "n_constant" not in entry["info"]:     # results written before it was
                entry["info"]["n_constant"] = n_constant_columns(load_set(name)[1])
                write_result(args.name, doc)
        (OUT_DIR / f"{args.name}.md").write_text(markdown(doc))
        print(markdown(doc))
        return
    sets = [s for s in args.sets.split(",") if s]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--short", "ultrafs", "kernels"], cwd=REPO,
                           capture_output=True, text=True).stdout.strip()
    import ultrafs

    doc = {"command": "python bench/slores_path.py " + " ".join(argv or sys.argv[1:]),
           "pythonpath": os.environ.get("PYTHONPATH"), "ultrafs_file": ultrafs.__file__,
           "commit": commit, "library_changes_uncommitted": dirty, "sets": {},
           "started": time.strftime("%Y-%m-%d %H:%M:%S"), "load_at_start": os.getloadavg()}
    started_all = time.perf_counter()
    warm_numba()
    for name in sets:
        print(f"{name}: loading", flush=True)
        info, evalX, y, store, peers = load_set(name)
        entry = {"info": info, "ultrafs": {}}
        grid = models_none = None
        ultra_models = {}
        if name == "imdb50k":
            # kernels of the binary Zarr passes compiled or loaded, untimed
            cmd = [*_ultrafs(), "path", "--data", str(store.path), "--n-lambdas", "3",
                   "--out", str(OUT_DIR / "slores_path_imdb_warmup.json"), "--no-progress"]
            subprocess.run(cmd, check=True, capture_output=True)
        for label, screening, sequential in MODES:
            if name == "imdb50k":
                res, g, models = run_ultrafs_cli(store.path, screening, sequential)
            else:
                res, g, models = run_ultrafs_memory(store, y, screening, sequential,
                                                    args.repeats)
            if grid is None:
                grid = g
            assert np.array_equal(g, grid)
            entry["ultrafs"][label] = res
            ultra_models[label] = models
            m = res["summary"]
            print(f"  {name} {label}: wall {m['wall']:.2f} s (stats {m['statistics']:.2f}, "
                  f"screen {m['seconds_screening']:.2f}, fetch {m['seconds_fetch']:.2f}, "
                  f"solve {m['seconds_solving']:.2f}, kkt {m['seconds_kkt']:.2f}), "
                  f"violators {m['violators_found']}", flush=True)
        print(f"  {name}: reference", flush=True)
        ref, meta = reference(name, evalX, y, store, grid, info)
        entry["reference"] = meta
        entry["grid"] = grid.tolist()
        if not args.skip_peers:
            entry["peers"] = run_peers(name, info, evalX, y, peers, grid, ref, args.peer_cap,
                                       ultra_models)
        else:
            p = info["n_features"]
            ref_obj = np.array([objective(evalX, y, lam, full_beta(p, cols, b), c)
                                for lam, (cols, b, c) in zip(grid, ref)])
            entry["ultrafs_gaps"] = {label: _gap_summary(_gaps(evalX, y, grid, ms, ref_obj))
                                     for label, ms in ultra_models.items()}
        doc["sets"][name] = entry
        del evalX, peers, store, ref, ultra_models
        write_result(args.name, doc)
    if "rcv1_small" in sets and not args.skip_identity:
        print("identity (rcv1_small)", flush=True)
        doc["identity"] = identity_check()
    if "imdb50k" in sets and not args.skip_rss:
        print("peak RSS (imdb50k at p and 2p)", flush=True)
        doc["rss"] = rss_check(imdb_text())
    doc["seconds"] = time.perf_counter() - started_all
    doc["peak_rss_mb_this_process"] = peak_rss_mb()
    path = write_result(args.name, doc)
    report = markdown(doc)
    (OUT_DIR / f"{args.name}.md").write_text(report)
    print(report)
    print(f"wrote {path} and {OUT_DIR / (args.name + '.md')}")


if __name__ == "__main__":
    main()
