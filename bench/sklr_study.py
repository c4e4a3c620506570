"""Sparse kernel logistic regression (seed 001): solver study and model size.

Question: on real data, with random Fourier features (RFF) of the Gaussian
kernel exp(-||x - z||² / σ²) (σ by the median heuristic) and the paper's
model (2) (logistic loss summed, l1 penalty, **no intercept**), at
λ ∈ {0.5, 0.2, 0.1, 0.05}·λ_max, which of the paper's findings (Qin et al.,
digest ``sklr-gsrfs.md`` §A4) reproduce?

* CGD is the fastest in time and needs fewer iterations than FISTA;
* multi-scale FISTA needs 1.6–4.9× fewer iterations than FISTA (Table 7);
* SGD-C is cheap but inexact (Table 5);
* the two-stage scheme (λ₂ = 0.1 λ₁) gains +0.1 to +4.2 accuracy points
  (Table 6);
* the linearised RBF kernel is about as accurate as the exact one
  (Tables 2–3).

Parts, per data set (each set runs in a child process under GNU time, so
its peak RSS is its own, unless one set only is asked for):

1. *Solver study* on identical RFF features (one
   :class:`~ultrafs.features.rff.RandomFourierFeatures` operator per set):
   ``fista`` (ours: μ may grow again, function-value restart), ``fista_paper``
   (the paper's Algorithm 1 with H = I: ``grow=False, restart=False``),
   ``mfista`` (scaling (7), "min"), on the ``--hessian-sets`` also
   ``mfista_paper`` (scaling (7) in the paper's Algorithm 1: the paper's
   Table 7 pair with ``fista_paper``) and ``mfista_hessian`` (scaling (8)),
   ``cgd`` and ``sgd`` (SGD-C, ``eta0="auto"``, 10 epochs, its duality gap
   after each; one certificate is timed apart to say what they cost), all
   through
   :func:`~ultrafs.solvers.l1_solvers.solve_l1` /
   :func:`~ultrafs.solvers.fista.fista`, stop at a relative duality gap of
   1e-6 or the paper's caps (FISTA 3000, CGD 5000 iterations).  Then
   scikit-learn ``LogisticRegression(l1_ratio=1, C=1/λ, fit_intercept=False,
   tol=1e-8, random_state=0)`` with ``liblinear`` and ``saga`` on the explicit
   RFF matrix (``op.columns``), scored by the same certificate.  Two-stage
   (ratio 0.1, the library's :func:`~ultrafs.solvers.two_stage.two_stage`
   started from the stage-1 solution already computed) for fista and cgd.
   One ``api.fit("sklr")`` call (cgd, 0.1 λ_max, no intercept) checks that the
   API gives the same model and the same test accuracy as the low-level
   run.
2. *Intercept*: cgd with ``fit_intercept=True`` (its own λ_max) on the
   ``--intercept-sets``.
3. *Model size against accuracy*: sparse kernel LR (cgd, and two-stage cgd)
   at the four ratios and at 0.02 λ_max (cgd only); exact-RBF sparse kernel
   LR (``api.fit("sklr", basis="rbf")``, cgd) on the ``--rbf-sets``; linear FGM
   (``ultrafs.api.select``, B = k/10, T = 10, defaults otherwise: logistic
   loss, C = "scale", intercept) at k ∈ {10, 20, 50, 100, 200} (k ≤ the
   number of inputs); scikit-learn ``SVC(kernel="rbf", gamma=1/σ², C=1)``
   with its support vectors as its size.

Timing: ``time.process_time`` (CPU seconds of this process; every solver
here is single-threaded) and ``time.perf_counter`` (wall) around each
call; the tables quote CPU seconds and ratios between methods of the same
run.  The numba kernels are compiled on a small problem before any timing.

Usage::

    python bench/sklr_study.py [--sets a9a,w8a,mnist,gisette] [--ratios 0.5 0.2 0.1 0.05]
                               [--rows a9a=3000 ...] [--D a9a=500 ...]
                               [--quick] [--name sklr_study] [--report JSON]

Raw results: ``bench/out/NAME.json``; tables: ``bench/out/NAME.md``.
``--quick``: a9a (1,000 rows, D = 200) and mnist (D = 200), ratios 0.5
and 0.1, all in this process: a smoke run well under 2 minutes.
"""

from __future__ import annotations

import argparse
import bz2
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, OUT_DIR, peak_rss_mb, run_measured, write_result  # noqa: E402

ALL_SETS = ("a9a", "w8a", "mnist", "gisette")
RATIOS = (0.5, 0.2, 0.1, 0.05)
EXTRA_RATIOS = (0.02,)             # model-size curve of cgd only (no two-stage)
TOL = 1e-6
CAPS = {"fista": 3000, "fista_paper": 3000, "mfista": 3000, "mfista_paper": 3000,
        "mfista_hessian": 3000, "cgd": 5000}
SGD_EPOCHS = 10
SAGA_MAX_ITER = 1000
LIBLINEAR_MAX_ITER = 1000
TWO_STAGE_RATIO = 0.1
FGM_KS = (10, 20, 50, 100, 200)
SEED = 0
#: per set: training rows (None: all the training rows), D
DEFAULTS = {"a9a": {"rows": 10000, "D": 1000}, "w8a": {"rows": 10000, "D": 1000},
            "mnist": {"rows": None, "D": 1000}, "gisette": {"rows": None, "D": 1000}}
QUICK = {"a9a": {"rows": 1000, "D": 200}, "mnist": {"rows": None, "D": 200}}
OURS = ("fista", "fista_paper", "mfista", "mfista_paper", "mfista_hessian", "cgd", "sgd")
#: run on the --hessian-sets only
SCALING_STUDY = ("mfista_paper", "mfista_hessian")
SKLEARN = ("liblinear", "saga")


# ------------------------------------------------------------------ data
def _load(fname, n_features):
    from sklearn.datasets import load_svmlight_file

    with bz2.open(DATA_DIR / fname, "rb") as fh:
        X, y = load_svmlight_file(fh, n_features=n_features, zero_based=False)
    return sp.csr_matrix(X, dtype=np.float64), np.where(y > 0, 1.0, -1.0)


def load_set(name, rows, seed=SEED):
    """Train / test rows of a set (CSR float64, ±1 labels) and how they were made."""
    from sklearn.model_selection import train_test_split

    if name == "a9a":
        X, y = _load("a9a.svm.bz2", 123)
        Xtr, ytr, Xte, yte = X[:32561], y[:32561], X[32561:], y[32561:]
        split = "a9a rows 1–32,561 (train) / a9a.t rows 32,562–48,842 (test)"
    else:
        fname, n = {"w8a": ("w8a.svm.bz2", 300), "mnist": ("mnist5k_3vs8.svm.bz2", 784),
                    "gisette": ("gisette_scale.t.svm.bz2", 5000)}[name]
        X, y = _load(fname, n)
        if name == "mnist":
            X = X / 255.0
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y,
                                              random_state=seed)
        split = f"seeded stratified 70/30 split (random_state={seed}) of {X.shape[0]:,} rows"
    n_train_all = Xtr.shape[0]
    if rows is not None and rows < Xtr.shape[0]:
        Xtr, _, ytr, _ = train_test_split(Xtr, ytr, train_size=rows, stratify=ytr,
                                          random_state=seed)
        split += f"; {rows:,} of the {n_train_all:,} training rows (stratified, seeded)"
    Xtr, Xte = sp.csr_matrix(Xtr), sp.csr_matrix(Xte)
    info = {"split": split, "n_train": Xtr.shape[0], "n_test": Xte.shape[0],
            "n_inputs": X.shape[1], "n_train_available": n_train_all,
            "pos_train": int(np.sum(ytr > 0)), "pos_test": int(np.sum(yte > 0)),
            "majority_test_accuracy": float(max(np.mean(yte > 0), np.mean(yte < 0)))}
    return Xtr, ytr, Xte, yte, info


# ------------------------------------------------------------------ timing
def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def accuracy(Zte, yte, coef, bias):
    """Test accuracy of decision ``Z w - b`` (positive > 0, as Model.evaluate_store)."""
    decision = Zte @ coef - bias
    return float(np.mean(np.where(decision > 0, 1.0, -1.0) == yte))


def iters_to(history, target):
    """First iteration whose objective is ``<= target`` (None: never)."""
    for rec in history:
        if rec.get("objective", np.inf) <= target:
            return int(rec["iter"])
    return None


# ------------------------------------------------------------------ problem
class RFFSet:
    """RFF features of one set: the training operator, the explicit matrices."""

    def __init__(self, Xtr, ytr, Xte, yte, D, seed=SEED):
        from ultrafs.features.rff import RandomFourierFeatures
        from ultrafs.store import as_store

        self.ytr, self.yte, self.D = ytr, yte, D
        self.space = RandomFourierFeatures(as_store(Xtr, ytr), D, None, seed)
        self.sigma = float(self.space.sigma)
        self.op = self.space.operator()
        test_space = RandomFourierFeatures(as_store(Xte, yte), D, self.sigma, seed,
                                           n_inputs=self.space.n_inputs)
        self.Zte = np.ascontiguousarray(test_space.operator().columns(np.arange(D)))
        self.Ztr = None

    def train_matrix(self):
        if self.Ztr is None:
            self.Ztr = np.ascontiguousarray(self.op.columns(np.arange(self.D)))
        return self.Ztr

    def problem(self, fit_intercept=False):
        from ultrafs.solvers.datafits import Datafit
        from ultrafs.solvers.l1_problem import L1Problem
        from ultrafs.solvers.losses import get_loss

        datafit = Datafit(get_loss("logistic", "binary"), self.op, self.ytr, 1.0)
        return L1Problem(datafit, 1.0, fit_intercept)


def run_ours(problem, method, tol=TOL):
    from ultrafs.solvers.fista import fista
    from ultrafs.solvers.l1_solvers import solve_l1

    if method == "fista_paper":
        return fista(problem, scaling="identity", grow=False, restart=False, tol=tol,
                     max_iter=CAPS[method])
    if method == "mfista_paper":
        return fista(problem, scaling="min", grow=False, restart=False, tol=tol,
                     max_iter=CAPS[method])
    if method == "mfista_hessian":
        return solve_l1(problem, "mfista", scaling="hessian", tol=tol,
                        max_iter=CAPS[method])
    if method == "sgd":
        # tol 0: all SGD_EPOCHS epochs run; the gap is recorded after each
        return solve_l1(problem, "sgd", tol=0.0, max_epochs=SGD_EPOCHS, seed=SEED)
    return solve_l1(problem, method, tol=tol, max_iter=CAPS[method])


def solution_row(sol, cpu, wall, rff, lam_ratio, method):
    cert = sol.certificate
    nnz = int(np.count_nonzero(sol.coef))
    row = {"method": method, "ratio": lam_ratio, "cpu": cpu, "wall": wall,
           "n_iter": int(sol.n_iter), "converged": bool(sol.converged),
           "objective": float(cert.primal), "rel_gap": float(cert.rel_gap),
           "nnz": nnz, "nnz_pct": 100.0 * nnz / rff.D,
           "accuracy": accuracy(rff.Zte, rff.yte, sol.coef, sol.bias),
           "info": {k: v for k, v in sol.info.items()
                    if isinstance(v, (int, float, str)) and not isinstance(v, bool)}}
    if method == "sgd":
        row["gap_by_epoch"] = [float(h["rel_gap"]) for h in sol.history]
        row["nnz_by_epoch"] = [int(h.get("nnz", -1)) for h in sol.history]
        row["epochs_to_1pct"] = next((h["iter"] for h in sol.history
                                      if h["rel_gap"] <= 1e-2), None)
    return row


def run_sklearn(rff, problem, lam, solver):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    Z = rff.train_matrix()
    max_iter = SAGA_MAX_ITER if solver == "saga" else LIBLINEAR_MAX_ITER
    clf = LogisticRegression(l1_ratio=1.0, C=1.0 / lam, solver=solver,
                             fit_intercept=False, tol=1e-8, max_iter=max_iter,
                             random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        _, cpu, wall = timed(lambda: clf.fit(Z, rff.ytr))
    coef = np.ascontiguousarray(clf.coef_.ravel(), dtype=np.float64)
    cert = problem.certificate(coef, 0.0)
    nnz = int(np.count_nonzero(coef))
    return {"cpu": cpu, "wall": wall, "n_iter": int(np.max(clf.n_iter_)),
            "converged": not any(issubclass(w.category, ConvergenceWarning)
                                 for w in caught),
            "objective": float(cert.primal), "rel_gap": float(cert.rel_gap),
            "nnz": nnz, "nnz_pct": 100.0 * nnz / rff.D,
            "accuracy": accuracy(rff.Zte, rff.yte, coef, 0.0), "max_iter": max_iter}


def run_two_stage(problem, first, method, ratio=TWO_STAGE_RATIO):
    """The library's two-stage scheme, stage 1 being the solution already made."""
    from ultrafs.solvers.l1_solvers import l1_solver
    from ultrafs.solvers.two_stage import two_stage

    solve = l1_solver(method)

    def staged(prob, w0, b0, **options):
        if prob is problem:
            return first
        return solve(prob, w0, b0, **options)

    return two_stage(problem, staged, ratio=ratio, tol=TOL, max_iter=CAPS[method])


# ------------------------------------------------------------------ one set
def warm():
    """Compile every kernel on a small problem (not timed)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(200, 20, random_state=0)
    rff = RFFSet(sp.csr_matrix(X), np.where(y > 0, 1.0, -1.0), sp.csr_matrix(X[:50]),
                 np.where(y[:50] > 0, 1.0, -1.0), 64)
    for fit_b in (False, True):
        base = rff.problem(fit_b)
        p = base.with_lam(0.2 * base.lam_max())
        for method in OURS:
            sol = run_ours(p, method)
            if method in ("fista", "cgd") and not fit_b:
                run_two_stage(p, sol, method)


def study_set(name, args):
    import numba

    import ultrafs.api as api
    from ultrafs.store import as_store

    cfg = dict((QUICK if args.quick else DEFAULTS)[name])
    if name in args.rows:
        cfg["rows"] = args.rows[name]
    if name in args.D:
        cfg["D"] = args.D[name]
    (Xtr, ytr, Xte, yte, info), load_cpu, load_wall = timed(
        lambda: load_set(name, cfg["rows"]))
    info.update(D=cfg["D"], load_seconds=load_wall)
    rff, cpu, wall = timed(lambda: RFFSet(Xtr, ytr, Xte, yte, cfg["D"]))
    info.update(sigma=rff.sigma, features_seconds=wall, cached=bool(rff.op.cached))
    print(f"[{name}] {info['n_train']} train / {info['n_test']} test rows, "
          f"{info['n_inputs']} inputs, D = {cfg['D']}, sigma = {rff.sigma:.4g}", flush=True)
    base = rff.problem(False)
    lam_max = base.lam_max()
    info["lam_max"] = lam_max

    # operator against BLAS on the same matrix (the library's products sum in a
    # fixed order; numpy's do not)
    Z = rff.train_matrix()
    w = np.random.default_rng(0).standard_normal(rff.D) * 0.01
    r = np.random.default_rng(1).standard_normal(info["n_train"])
    s = np.full(info["n_train"], 0.25)
    products = {}
    for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
        numba.set_num_threads(threads)
        for label, fn in (("matvec", lambda: rff.op.matvec(w)),
                          ("rmatvec", lambda: rff.op.rmatvec(r)),
                          ("rmatvec_hess", lambda: rff.op.rmatvec_hess(r, s))):
            fn()
            _, cpu, wall = timed(lambda: [fn() for _ in range(10)])
            products[f"op_{label}_{threads}t"] = {"cpu": cpu / 10, "wall": wall / 10}
    numba.set_num_threads(args.threads)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        for label, fn in (("matvec", lambda: Z @ w), ("rmatvec", lambda: Z.T @ r)):
            fn()
            _, cpu, wall = timed(lambda: [fn() for _ in range(10)])
            products[f"numpy_{label}"] = {"cpu": cpu / 10, "wall": wall / 10}
    info["products"] = products

    rows = []
    for ratio in args.ratios:
        lam = ratio * lam_max
        problem = base.with_lam(lam)
        methods = [m for m in OURS if m not in SCALING_STUDY or name in args.hessian_sets]
        sols = {}
        for method in methods:
            sol, cpu, wall = timed(lambda: run_ours(problem, method))
            sols[method] = sol
            row = solution_row(sol, cpu, wall, rff, ratio, method)
            if method == "sgd":      # what its per-epoch certificates cost
                _, cert_cpu, _ = timed(lambda: problem.certificate(sol.coef, sol.bias))
                row["certificate_cpu"] = cert_cpu
            rows.append(dict(row, set=name, part="solver"))
            print(f"[{name}] {ratio:g} {method}: {row['n_iter']} it, gap "
                  f"{row['rel_gap']:.2g}, {cpu:.2f} s cpu, nnz {row['nnz']}, "
                  f"acc {row['accuracy']:.4f}", flush=True)
        for solver in SKLEARN:
            row = run_sklearn(rff, problem, lam, solver)
            rows.append(dict(row, set=name, part="solver", method=solver, ratio=ratio))
            print(f"[{name}] {ratio:g} {solver}: {row['n_iter']} it, gap "
                  f"{row['rel_gap']:.2g}, {row['cpu']:.2f} s cpu, nnz {row['nnz']}, "
                  f"acc {row['accuracy']:.4f}", flush=True)
        # reference optimum: the least objective among the certified solutions
        cell = [r for r in rows if r["set"] == name and r["ratio"] == ratio
                and r["part"] == "solver"]
        certified = [r["objective"] for r in cell if r["rel_gap"] <= TOL]
        f_star = min(certified) if certified else min(r["objective"] for r in cell)
        for r in cell:
            r["f_star"] = f_star
            r["rel_excess"] = (r["objective"] - f_star) / abs(f_star)
        for method, sol in sols.items():
            if method != "sgd":
                hit = iters_to(sol.history, f_star * (1 + TOL))
                next(r for r in cell if r["method"] == method)["iters_to_fstar"] = hit
        for method in ("fista", "cgd"):
            res, cpu, wall = timed(lambda: run_two_stage(problem, sols[method], method))
            stage2 = res.stage2
            coef = res.coef
            rows.append({"set": name, "part": "two_stage", "method": method,
                         "ratio": ratio, "cpu": cpu, "wall": wall,
                         "n_iter": None if stage2 is None else int(stage2.n_iter),
                         "rel_gap": None if stage2 is None else
                         float(stage2.certificate.rel_gap),
                         "converged": None if stage2 is None else bool(stage2.converged),
                         "nnz": int(np.count_nonzero(coef)),
                         "nnz_pct": 100.0 * np.count_nonzero(coef) / rff.D,
                         "active": int(len(res.active)),
                         "accuracy": accuracy(rff.Zte, yte, coef, res.bias),
                         "stage1_accuracy": accuracy(rff.Zte, yte, sols[method].coef,
                                                     sols[method].bias),
                         "norm_ratio": float(np.linalg.norm(coef) /
                                             max(np.linalg.norm(sols[method].coef), 1e-300))})
            print(f"[{name}] {ratio:g} two-stage {method}: acc "
                  f"{rows[-1]['stage1_accuracy']:.4f} -> {rows[-1]['accuracy']:.4f}, "
                  f"nnz {rows[-1]['nnz']}", flush=True)

    # API check: api.fit("sklr") must give the low-level cgd model
    check_ratio = 0.1 if 0.1 in args.ratios else args.ratios[0]
    model, cpu, wall = timed(lambda: api.fit(
        "sklr", Xtr, ytr, basis="rff", n_components=rff.D, seed=SEED, solver="cgd",
        lambda_ratio=check_ratio, fit_intercept=False))
    api_acc = model.evaluate_store(as_store(Xte, yte))["accuracy"]
    low = next(r for r in rows if r["part"] == "solver" and r["method"] == "cgd"
               and r["ratio"] == check_ratio)
    info["api_check"] = {"ratio": check_ratio, "api_accuracy": float(api_acc),
                         "low_level_accuracy": low["accuracy"],
                         "api_objective": float(model.params["objective"]),
                         "low_level_objective": low["objective"],
                         "api_nnz": int(model.params["nnz"]), "low_level_nnz": low["nnz"],
                         "api_sigma": float(model.params["sigma"]), "cpu": cpu}
    print(f"[{name}] api check: {info['api_check']}", flush=True)

    # intercept
    if name in args.intercept_sets:
        base_b = rff.problem(True)
        lam_max_b = base_b.lam_max()
        info["lam_max_intercept"] = lam_max_b
        for ratio in args.ratios:
            problem = base_b.with_lam(ratio * lam_max_b)
            sol, cpu, wall = timed(lambda: run_ours(problem, "cgd"))
            row = solution_row(sol, cpu, wall, rff, ratio, "cgd")
            row.update(set=name, part="intercept", intercept=-float(sol.bias),
                       lam_max=lam_max_b)
            rows.append(row)
            print(f"[{name}] {ratio:g} cgd + intercept: {row['n_iter']} it, nnz "
                  f"{row['nnz']}, acc {row['accuracy']:.4f}", flush=True)

    # model size against accuracy
    for ratio in args.extra_ratios:
        problem = base.with_lam(ratio * lam_max)
        sol, cpu, wall = timed(lambda: run_ours(problem, "cgd"))
        row = solution_row(sol, cpu, wall, rff, ratio, "cgd")
        rows.append(dict(row, set=name, part="size"))
        print(f"[{name}] {ratio:g} cgd (size): {row['n_iter']} it, nnz {row['nnz']}, "
              f"acc {row['accuracy']:.4f}", flush=True)
    if name in args.rbf_sets:
        test_store = as_store(Xte, yte)
        for ratio in args.ratios:
            model, cpu, wall = timed(lambda: api.fit(
                "sklr", Xtr, ytr, basis="rbf", sigma=rff.sigma, solver="cgd",
                lambda_ratio=ratio, fit_intercept=False))
            p = model.params
            rows.append({"set": name, "part": "rbf", "method": "cgd_rbf", "ratio": ratio,
                         "cpu": cpu, "wall": wall, "n_iter": p["n_iter"],
                         "converged": p["converged"], "rel_gap": p["rel_gap"],
                         "nnz": p["nnz"], "nnz_pct": p["nnz_pct"],
                         "accuracy": float(model.evaluate_store(test_store)["accuracy"])})
            print(f"[{name}] {ratio:g} exact RBF cgd: {p['n_iter']} it, nnz {p['nnz']}, "
                  f"acc {rows[-1]['accuracy']:.4f}, {cpu:.1f} s", flush=True)
    test_store = as_store(Xte, yte)
    for k in args.fgm_ks:
        if k > info["n_inputs"]:
            continue
        B = max(1, k // 10)
        model, cpu, wall = timed(lambda: api.select(Xtr, ytr, B=B, max_iter=10))
        rows.append({"set": name, "part": "fgm", "method": "fgm", "k": k, "B": B,
                     "cpu": cpu, "wall": wall, "nnz": len(model.features),
                     "accuracy": float(model.evaluate_store(test_store)["accuracy"])})
        print(f"[{name}] FGM k={k}: {len(model.features)} features, acc "
              f"{rows[-1]['accuracy']:.4f}", flush=True)
    from sklearn.svm import SVC

    svc = SVC(kernel="rbf", gamma=1.0 / rff.sigma ** 2, C=1.0)
    _, cpu, wall = timed(lambda: svc.fit(Xtr, ytr))
    rows.append({"set": name, "part": "svc", "method": "svc", "cpu": cpu, "wall": wall,
                 "nnz": int(np.sum(svc.n_support_)),
                 "accuracy": float(np.mean(svc.predict(Xte) == yte)), "C": 1.0})
    print(f"[{name}] SVC: {rows[-1]['nnz']} support vectors, acc "
          f"{rows[-1]['accuracy']:.4f}", flush=True)
    return rows, info


# ------------------------------------------------------------------ tables
def _f(v, pattern="{:.2f}", none="–"):
    return none if v is None else pattern.format(v)


def _cells(rows, part="solver"):
    out = {}
    for r in rows:
        if r["part"] == part:
            out[(r["set"], r["ratio"], r["method"])] = r
    return out


LABELS = {"fista": "FISTA (ours)", "fista_paper": "FISTA (paper's Alg. 1, H = I)",
          "mfista": "multi-scale FISTA (7)", "mfista_hessian": "multi-scale FISTA (8)",
          "mfista_paper": "multi-scale FISTA (7), paper's Alg. 1",
          "cgd": "CGD", "sgd": "SGD-C (10 epochs)", "liblinear": "sklearn liblinear",
          "saga": "sklearn saga"}


def solver_table(name, rows, ratios):
    cells = _cells(rows)
    methods = [m for m in (*OURS, *SKLEARN) if any((name, r, m) in cells for r in ratios)]
    head = "| method | " + " | ".join(f"{r:g} λmax" for r in ratios) + " |"
    lines = [head, "|---|" + "---:|" * len(ratios)]
    for m in methods:
        out = []
        for ratio in ratios:
            c = cells.get((name, ratio, m))
            if c is None:
                out.append("–")
                continue
            mark = "" if c["rel_gap"] <= TOL else f" (gap {c['rel_gap']:.1e})"
            out.append(f"{c['n_iter']}{mark} · {c['cpu']:.2f} s · {c['nnz_pct']:.1f}% · "
                       f"{100 * c['accuracy']:.2f}")
        lines.append(f"| {LABELS[m]} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def ratio_table(rows, ratios, sets, num, den, measure="n_iter", label=""):
    cells = _cells(rows)
    lines = ["| set | " + " | ".join(f"{r:g} λmax" for r in ratios) + " |",
             "|---|" + "---:|" * len(ratios)]
    for s in sets:
        if not any((s, ratio, num) in cells and (s, ratio, den) in cells for ratio in ratios):
            continue
        out = []
        for ratio in ratios:
            a, b = cells.get((s, ratio, num)), cells.get((s, ratio, den))
            if a is None or b is None or not b[measure]:
                out.append("–")
                continue
            star = "" if (a["rel_gap"] <= TOL and b["rel_gap"] <= TOL) else "*"
            out.append(f"{a[measure] / b[measure]:.2f}{star}")
        lines.append(f"| {s} | " + " | ".join(out) + " |")
    return "\n".join(lines) if len(lines) > 2 else None


def report(doc):
    rows = [r for s in doc["sets"].values() for r in s["rows"]]
    sets = list(doc["sets"])
    ratios = doc["ratios"]
    out = ["# Sparse kernel logistic regression (seed 001)\n"]
    out.append("| set | rows train / test | inputs | positives train / test | D | σ | "
               "λ_max | majority acc | peak RSS MiB | seconds |")
    out.append("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for s, res in doc["sets"].items():
        i = res["info"]
        out.append(f"| {s} | {i['n_train']:,} / {i['n_test']:,} | {i['n_inputs']:,} | "
                   f"{i['pos_train']} / {i['pos_test']} | {i['D']} | {i['sigma']:.4g} | "
                   f"{i['lam_max']:.4g} | {100 * i['majority_test_accuracy']:.2f} | "
                   f"{_f(res.get('peak_rss_mb'), '{:.0f}')} | {_f(res.get('seconds'), '{:.0f}')} |")
    out.append("\nSplits: " + "; ".join(f"{s}: {res['info']['split']}"
                                       for s, res in doc["sets"].items()))
    out.append("\n## Solver study: iterations (gap if not certified) · CPU s · nonzeros % · "
               "test accuracy %\n")
    for s in sets:
        out.append(f"### {s}\n")
        out.append(solver_table(s, rows, ratios))
        out.append("")
    out.append("## Iteration ratios (* = at least one side not certified at 1e-6)\n")
    for label, num, den in (("multi-scale FISTA (7) / FISTA (ours)", "mfista", "fista"),
                            ("multi-scale FISTA (7) / paper's FISTA", "mfista", "fista_paper"),
                            ("multi-scale FISTA (7), paper's Alg. 1 / paper's FISTA",
                             "mfista_paper", "fista_paper"),
                            ("multi-scale FISTA (8) / FISTA (ours)", "mfista_hessian", "fista"),
                            ("CGD / FISTA (ours)", "cgd", "fista"),
                            ("CGD / paper's FISTA", "cgd", "fista_paper"),
                            ("CGD / multi-scale FISTA (7)", "cgd", "mfista")):
        table = ratio_table(rows, ratios, sets, num, den)
        if table:
            out.extend((f"**{label}** (iterations)\n", table, ""))
    out.append("## Iterations to F ≤ F*(1 + 1e-6) (the paper's protocol: stop at the "
               "reference objective; FISTA's objective is recorded every iteration)\n")
    cells = _cells(rows)
    fmethods = ("fista", "fista_paper", "mfista", "mfista_paper", "mfista_hessian", "cgd")
    out.append("| set | ratio | " + " | ".join(LABELS[m] for m in fmethods) + " |")
    out.append("|---|---:|" + "---:|" * len(fmethods))
    for s in sets:
        for r in ratios:
            out.append(f"| {s} | {r:g} | " + " | ".join(
                _f(cells[(s, r, m)].get("iters_to_fstar"), "{}") if (s, r, m) in cells
                else "–" for m in fmethods) + " |")
    out.append("")
    out.append("## CPU-time ratios against CGD (* = a side not certified)\n")
    for num in ("fista", "fista_paper", "mfista", "sgd", "liblinear", "saga"):
        table = ratio_table(rows, ratios, sets, num, "cgd", "cpu")
        if table:
            out.extend((f"**{LABELS[num]} / CGD**\n", table, ""))
    out.append("## Objective excess over the best certified objective, (F − F*)/F*\n")
    cells = _cells(rows)
    out.append("| set | method | " + " | ".join(f"{r:g}" for r in ratios) + " |")
    out.append("|---|---|" + "---:|" * len(ratios))
    for s in sets:
        for m in ("fista_paper", "sgd", "liblinear", "saga"):
            if not any((s, r, m) in cells for r in ratios):
                continue
            out.append(f"| {s} | {LABELS[m]} | " + " | ".join(
                _f(cells.get((s, r, m), {}).get("rel_excess"), "{:.1e}") for r in ratios) + " |")
    out.append("\n## SGD-C: relative gap after epochs 1 / 2 / 5 / 10; first epoch ≤ 1e-2; "
               "η₀ chosen\n")
    out.append("| set | ratio | gaps | epoch ≤ 1% | η₀ | nnz (CGD's) | CPU s, of which "
               "certificates ≈ |")
    out.append("|---|---:|---|---:|---:|---|---|")
    for s in sets:
        for r in ratios:
            c = cells.get((s, r, "sgd"))
            if c is None:
                continue
            g = c["gap_by_epoch"]
            certs = c["n_iter"] * c["certificate_cpu"] if "certificate_cpu" in c else None
            pick = [g[i - 1] for i in (1, 2, 5, 10) if i <= len(g)]
            out.append(f"| {s} | {r:g} | " + " / ".join(f"{v:.1e}" for v in pick) +
                       f" | {_f(c['epochs_to_1pct'], '{}')} | {c['info'].get('eta0')} | "
                       f"{c['nnz']} ({cells[(s, r, 'cgd')]['nnz']}) | {c['cpu']:.2f}, "
                       f"{_f(certs)} |")
    out.append("\n## Two-stage (λ₂ = 0.1 λ₁): test accuracy % stage 1 → stage 2 (gain), "
               "nonzeros stage 1 → 2\n")
    two = [r for r in rows if r["part"] == "two_stage" and not r.get("extra")]
    out.append("| set | method | " + " | ".join(f"{r:g} λmax" for r in ratios) + " | mean gain |")
    out.append("|---|---|" + "---:|" * (len(ratios) + 1))
    for s in sets:
        for m in ("fista", "cgd"):
            cs = {r["ratio"]: r for r in two if r["set"] == s and r["method"] == m}
            if not cs:
                continue
            gains = [100 * (c["accuracy"] - c["stage1_accuracy"]) for c in cs.values()]
            stage1_nnz = {r: cells[(s, r, m)]["nnz"] for r in cs}
            out.append(f"| {s} | {m} | " + " | ".join(
                f"{100 * cs[r]['stage1_accuracy']:.2f} → {100 * cs[r]['accuracy']:.2f} "
                f"({100 * (cs[r]['accuracy'] - cs[r]['stage1_accuracy']):+.2f}); "
                f"{stage1_nnz[r]} → {cs[r]['nnz']}" if r in cs else "–" for r in ratios)
                + f" | {np.mean(gains):+.2f} |")
    icp = [r for r in rows if r["part"] == "intercept"]
    if icp:
        out.append("\n## Intercept (CGD): without → with; iterations, nonzeros, "
                   "test accuracy %\n")
        out.append("| set | λ_max without / with | " + " | ".join(f"{r:g} λmax" for r in ratios)
                   + " |")
        out.append("|---|---|" + "---:|" * len(ratios))
        for s in sets:
            cs = {r["ratio"]: r for r in icp if r["set"] == s}
            if not cs:
                continue
            i = doc["sets"][s]["info"]
            out.append(f"| {s} | {i['lam_max']:.4g} / {i.get('lam_max_intercept', 0):.4g} | "
                       + " | ".join(
                           f"{cells[(s, r, 'cgd')]['n_iter']} → {cs[r]['n_iter']}"
                           + ("" if cs[r]["rel_gap"] <= TOL else f" (gap {cs[r]['rel_gap']:.1e})")
                           + "; "
                           f"{cells[(s, r, 'cgd')]['nnz']} → {cs[r]['nnz']}; "
                           f"{100 * cells[(s, r, 'cgd')]['accuracy']:.2f} → "
                           f"{100 * cs[r]['accuracy']:.2f}" if r in cs else "–"
                           for r in ratios) + " |")
    out.append("\n## Model size against test accuracy\n")
    out.append("Size: nonzero basis functions (sparse kernel LR), selected inputs (FGM), "
               "support vectors (SVC). Cell: size → accuracy %, (CPU s).\n")
    for s in sets:
        srows = [r for r in rows if r["set"] == s]
        parts = []
        sk = sorted([r for r in srows if r["method"] == "cgd" and r["part"] in
                     ("solver", "size")], key=lambda r: -r["ratio"])
        parts.append(("RFF CGD (λ/λmax " + ", ".join(f"{r['ratio']:g}" for r in sk) + ")",
                      sk))
        ts = sorted([r for r in srows if r["part"] == "two_stage" and r["method"] == "cgd"],
                    key=lambda r: -r["ratio"])
        parts.append(("RFF CGD two-stage", ts))
        rb = sorted([r for r in srows if r["part"] == "rbf"], key=lambda r: -r["ratio"])
        if rb:
            parts.append(("exact RBF CGD (" + ", ".join(f"{r['ratio']:g}" for r in rb) + ")",
                          rb))
        fg = [r for r in srows if r["part"] == "fgm"]
        parts.append(("linear FGM (k = " + ", ".join(str(r["k"]) for r in fg) + ")", fg))
        parts.append(("SVC rbf, C = 1", [r for r in srows if r["part"] == "svc"]))
        out.append(f"**{s}**\n")
        out.append("| model | size → accuracy % (CPU s; gap where not certified) |")
        out.append("|---|---|")
        for label, rs in parts:
            out.append(f"| {label} | " + "; ".join(
                f"{r['nnz']} → {100 * r['accuracy']:.2f} ({r['cpu']:.2f}"
                + (f"; gap {r['rel_gap']:.1e})" if r.get("rel_gap") and r["rel_gap"] > TOL
                   else ")") for r in rs) + " |")
        out.append("")
    out.append("## Checks and products\n")
    out.append("| set | api.fit(sklr) vs low-level CGD (acc, objective, nnz) |")
    out.append("|---|---|")
    for s, res in doc["sets"].items():
        a = res["info"]["api_check"]
        out.append(f"| {s} | {100 * a['api_accuracy']:.2f} / {100 * a['low_level_accuracy']:.2f}, "
                   f"{a['api_objective']:.8g} / {a['low_level_objective']:.8g}, "
                   f"{a['api_nnz']} / {a['low_level_nnz']} |")
    out.append("\nProducts with Φ (cached tiles), wall ms per call: the operator with 1 and "
               "2 numba threads, numpy (BLAS, 1 thread) on the same matrix\n")
    out.append("| set | Φw 1t / 2t / numpy | Φ'r 1t / 2t / numpy | (Φ'r, (Φ∘Φ)'s) 1t / 2t |")
    out.append("|---|---|---|---|")
    for s, res in doc["sets"].items():
        p = res["info"]["products"]

        def ms(key):
            return _f(1e3 * p[key]["wall"], "{:.2f}") if key in p else "–"
        out.append(f"| {s} | {ms('op_matvec_1t')} / {ms('op_matvec_2t')} / "
                   f"{ms('numpy_matvec')} | {ms('op_rmatvec_1t')} / {ms('op_rmatvec_2t')} / "
                   f"{ms('numpy_rmatvec')} | {ms('op_rmatvec_hess_1t')} / "
                   f"{ms('op_rmatvec_hess_2t')} |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ main
def _per_set(values):
    out = {}
    for item in values or []:
        k, v = item.split("=")
        out[k] = int(v) if v.lower() != "all" else None
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=None, help="comma-separated subset of "
                        + ",".join(ALL_SETS))
    parser.add_argument("--ratios", type=float, nargs="+", default=None)
    parser.add_argument("--extra-ratios", type=float, nargs="*", default=None)
    parser.add_argument("--rows", nargs="*", default=[], help="SET=N (or SET=all)")
    parser.add_argument("--D", nargs="*", default=[], help="SET=D")
    parser.add_argument("--hessian-sets", default="mnist,gisette")
    parser.add_argument("--intercept-sets", default="a9a,w8a,mnist,gisette")
    parser.add_argument("--rbf-sets", default="mnist,gisette")
    parser.add_argument("--fgm-ks", type=int, nargs="*", default=list(FGM_KS))
    parser.add_argument("--threads", type=int, default=1,
                        help="numba threads of the solvers (default 1: the serial "
                             "kernels, as scikit-learn's solvers)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default=None)
    parser.add_argument("--report", default=None, metavar="JSON")
    args = parser.parse_args()
    if args.report:
        print(report(json.loads(Path(args.report).read_text())))
        return
    sets = args.sets.split(",") if args.sets else list(QUICK if args.quick else ALL_SETS)
    for s in sets:
        if s not in ALL_SETS:
            raise SystemExit(f"unknown set {s!r}; known: {', '.join(ALL_SETS)}")
    if args.ratios is None:
        args.ratios = [0.5, 0.1] if args.quick else list(RATIOS)
    if args.extra_ratios is None:
        args.extra_ratios = [] if args.quick else list(EXTRA_RATIOS)
    if args.quick:
        args.fgm_ks = [10, 20]
        args.rbf_sets = ""
    raw_rows, raw_D = list(args.rows), list(args.D)
    args.rows, args.D = _per_set(args.rows), _per_set(args.D)
    args.hessian_sets = args.hessian_sets.split(",") if args.hessian_sets else []
    args.intercept_sets = args.intercept_sets.split(",") if args.intercept_sets else []
    args.rbf_sets = args.rbf_sets.split(",") if args.rbf_sets else []
    name = args.name or ("sklr_study_quick" if args.quick else "sklr_study")
    import numba

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))

    doc = {"argv": sys.argv, "threads": args.threads, "ratios": args.ratios,
           "extra_ratios": args.extra_ratios,
           "sets": {}, "load_before": os.getloadavg()}
    started = time.perf_counter()
    if len(sets) > 1 and not args.quick:      # one child per set: its own peak RSS
        for s in sets:
            cmd = [sys.executable, __file__, "--sets", s, "--name", f"{name}_{s}",
                   "--ratios", *map(str, args.ratios),
                   "--extra-ratios", *map(str, args.extra_ratios),
                   "--rows", *raw_rows, "--D", *raw_D,
                   "--hessian-sets", ",".join(args.hessian_sets),
                   "--intercept-sets", ",".join(args.intercept_sets),
                   "--rbf-sets", ",".join(args.rbf_sets),
                   "--fgm-ks", *map(str, args.fgm_ks), "--threads", str(args.threads)]
            out = run_measured(cmd)
            sys.stderr.write(out["stderr"])
            child = json.loads((OUT_DIR / f"{name}_{s}.json").read_text())
            part = child["sets"][s]
            part["peak_rss_mb"] = out["peak_rss_mb"]
            part["peak_rss_measured_by"] = out["peak_rss_measured_by"]
            part["child_wall_seconds"] = out["seconds"]
            doc["sets"][s] = part
            print(f"{s}: {out['seconds']:.1f} s, peak RSS {out['peak_rss_mb']:.0f} MiB",
                  flush=True)
    else:
        _, _, warm_seconds = timed(warm)
        doc["warm_seconds"] = warm_seconds
        for s in sets:
            set_started = time.perf_counter()
            rows, info = study_set(s, args)
            doc["sets"][s] = {"rows": rows, "info": info,
                              "seconds": time.perf_counter() - set_started,
                              "peak_rss_mb": peak_rss_mb()}
    doc["seconds"] = time.perf_counter() - started
    doc["load_after"] = os.getloadavg()
    import sklearn
    import ultrafs

    doc["ultrafs"] = str(Path(ultrafs.__file__).parent)
    doc["sklearn"] = sklearn.__version__
    text = report(doc)
    print(text)
    write_result(name, doc)
    (OUT_DIR / f"{name}.md").write_text(text)
    print(f"total {doc['seconds']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
