"""SKLR at a9a's size (issue 35, item 3): every SKLR solver against
scikit-learn's l1 solvers on the same explicit features.

Question: with random Fourier features (RFF, D = 1,000, σ by the median
heuristic, seed 0), the intercept on (the CLI's default) and λ = 0.05
λ_max, how long does each SKLR solver take on all 32,561 training rows of
a9a, how much memory, and what test accuracy (a9a.t) does it reach, next
to ``LogisticRegression(penalty="l1")`` with ``liblinear`` and ``saga`` on
the explicit matrix Φ?  The same on a synthetic set of 10^6 rows.

Every fit runs in its own child process under GNU time (its peak RSS is
its own); the parent interleaves the methods round by round
(``--rounds``), so a load change on the shared machine hits all of them.

* ours: ``fit_sklr`` (the library's path: the feature space, its
  operator and its memory budget) with ``fista``, ``mfista``, ``cgd``
  (tol 1e-6, the default caps) and ``sgd`` (SGD-C, 10 epochs, its default
  tol 1e-2), and ``cgd`` two-stage (ratio 0.1) when asked;
* peers: scikit-learn ``LogisticRegression(l1_ratio=1, C=1/λ,
  fit_intercept=True, tol=1e-6, max_iter=1000)`` on Φ materialised once
  (``op.columns``, not timed): ``saga`` leaves the intercept unpenalised,
  as ours; ``liblinear`` penalises it as a feature of value
  ``intercept_scaling`` (set to 100, so that its penalty is λ|c|/100).
  Objective mapping: ours is ``Σ_i log(1 + exp(-y_i (φ_i'w + c))) +
  λ ||w||_1``; scikit-learn's ``||w||_1 + C Σ_i log(...)`` is ours
  divided by λ when ``C = 1/λ``.  Every solution (ours and theirs) is
  scored by the same duality-gap certificate of our problem.
* ``--cli``: the command of the issue, ``ultrafs select --method sklr
  --basis rff --n-components 1000 --solver fista|cgd --lam-ratio 0.05
  --test a9a.t``, timed whole (ingest cache warm), with ``--progress``.

Usage::

    python bench/sklr_a9a.py [--part a9a,synthetic,cli] [--rounds 1]
                             [--synthetic-rows 1000000] [--synthetic-D 100]
                             [--methods fista,mfista,cgd,sgd,liblinear,saga]
                             [--name issue35_sklr]

Raw results: ``bench/out/NAME.json``.
"""

from __future__ import annotations

import argparse
import bz2
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, OUT_DIR, run_measured, write_result  # noqa: E402

RATIO = 0.05
D = 1000
SEED = 0
METHODS = ("fista", "mfista", "cgd", "sgd", "liblinear", "saga")
SKLEARN_TOL = 1e-6
SKLEARN_MAX_ITER = 1000
LIBLINEAR_INTERCEPT_SCALING = 100.0


# ------------------------------------------------------------------ data
def load_a9a():
    from sklearn.datasets import load_svmlight_file

    with bz2.open(DATA_DIR / "a9a.svm.bz2", "rb") as fh:
        X, y = load_svmlight_file(fh, n_features=123, zero_based=False)
    X = sp.csr_matrix(X, dtype=np.float64)
    y = np.where(y > 0, 1.0, -1.0)
    return X[:32561], y[:32561], X[32561:], y[32561:]


def synthetic(n_rows, n_test=100_000, n_inputs=10, seed=0):
    """Dense inputs, labels from a nonlinear function of 3 of them.

    ``x ~ U[-1, 1]^10``; ``y = sign(sin(3 x0) + 2 x1 x2 + 0.3 ε)``,
    ``ε ~ N(0, 1)``: a kernel problem (no linear model separates it).
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n_rows + n_test, n_inputs))
    score = np.sin(3 * X[:, 0]) + 2 * X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(len(X))
    y = np.where(score > 0, 1.0, -1.0)
    X = sp.csr_matrix(X)
    return X[:n_rows], y[:n_rows], X[n_rows:], y[n_rows:]


def load(name, n_rows):
    return load_a9a() if name == "a9a" else synthetic(n_rows)


# ------------------------------------------------------------------ child
def child(name, method, n_rows, n_components, cache_bytes):
    """One fit; prints one JSON line."""
    from ultrafs.features.rff import RandomFourierFeatures
    from ultrafs.methods.sklr import fit_sklr
    from ultrafs.solvers.datafits import Datafit
    from ultrafs.solvers.l1_problem import L1Problem
    from ultrafs.solvers.losses import get_loss
    from ultrafs.store import as_store

    t0 = time.perf_counter()
    Xtr, ytr, Xte, yte = load(name, n_rows)
    space = RandomFourierFeatures(as_store(Xtr, ytr), n_components, None, SEED)
    sigma = float(space.sigma)
    test = RandomFourierFeatures(as_store(Xte, yte), n_components, sigma, SEED,
                                 n_inputs=space.n_inputs)
    Zte = test.operator(cache_bytes=0).columns(np.arange(n_components))
    load_s = time.perf_counter() - t0
    row = {"set": name, "method": method, "n_train": Xtr.shape[0], "n_test": Xte.shape[0],
           "D": n_components, "sigma": sigma, "load_seconds": load_s}
    if method in ("liblinear", "saga"):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        op = space.operator(cache_bytes=cache_bytes)
        datafit = Datafit(get_loss("logistic", "binary"), op, ytr, 1.0)
        base = L1Problem(datafit, 1.0, True)
        lam_max = base.lam_max()
        lam = RATIO * lam_max
        problem = base.with_lam(lam)
        t1 = time.perf_counter()
        Z = op.columns(np.arange(n_components))
        row["materialise_seconds"] = time.perf_counter() - t1
        extra = ({"intercept_scaling": LIBLINEAR_INTERCEPT_SCALING}
                 if method == "liblinear" else {})
        clf = LogisticRegression(l1_ratio=1.0, C=1.0 / lam, solver=method,
                                 fit_intercept=True, tol=SKLEARN_TOL,
                                 max_iter=SKLEARN_MAX_ITER, random_state=0, **extra)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cpu, wall = time.process_time(), time.perf_counter()
            clf.fit(Z, ytr)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        coef = np.ascontiguousarray(clf.coef_.ravel(), dtype=np.float64)
        intercept = float(clf.intercept_[0])
        cert = problem.certificate(coef, -intercept)
        row.update(fit_seconds=wall, fit_cpu=cpu, n_iter=int(np.max(clf.n_iter_)),
                   converged=not any(issubclass(w.category, ConvergenceWarning)
                                     for w in caught),
                   objective=cert.primal, rel_gap=cert.rel_gap, lam=lam, lam_max=lam_max)
    else:
        options = {}
        solver = method
        if method == "cgd2":
            solver, options["two_stage"] = "cgd", 0.1
        cpu, wall = time.process_time(), time.perf_counter()
        result = fit_sklr(space, ytr, solver=solver, lam_ratio=RATIO,
                          cache_bytes=cache_bytes, progress=True, **options)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        sol = result.solution
        coef, intercept = result.coef, result.intercept
        row.update(fit_seconds=wall, fit_cpu=cpu, n_iter=int(sol.n_iter),
                   converged=bool(sol.converged), objective=sol.certificate.primal,
                   rel_gap=sol.certificate.rel_gap, lam=result.lam,
                   lam_max=result.lam_max,
                   in_memory=bool(space.operator(cache_bytes=cache_bytes).cached))
    decision = Zte @ coef + intercept
    row["nnz"] = int(np.count_nonzero(coef))
    row["accuracy"] = float(np.mean(np.where(decision > 0, 1.0, -1.0) == yte))
    print("RESULT " + json.dumps(row), flush=True)


def products_child(reps=5):
    """Per-call time of the operator's products on a9a's Φ (one JSON line)."""
    import ultrafs
    from ultrafs.features.rff import RandomFourierFeatures
    from ultrafs.store import as_store

    Xtr, ytr, _, _ = load_a9a()
    space = RandomFourierFeatures(as_store(Xtr, ytr), D, None, SEED)
    op = space.operator()
    rng = np.random.default_rng(0)
    r, s = rng.standard_normal(op.n_rows), rng.random(op.n_rows)
    w = np.zeros(D)
    w[rng.choice(D, 67, replace=False)] = rng.standard_normal(67)   # a9a's support size
    cols = np.sort(rng.choice(D, 50, replace=False))
    t0 = time.perf_counter()
    op.rmatvec(r)                        # makes (or, before, caches) the basis
    row = {"library": str(Path(ultrafs.__file__).parent), "first_product": time.perf_counter() - t0}
    calls = {"matvec_67_nonzero": lambda: op.matvec(w), "rmatvec": lambda: op.rmatvec(r),
             "rmatvec_hess": lambda: op.rmatvec_hess(r, s),
             "columns_50": lambda: op.columns(cols)}
    for name, call in calls.items():
        call()
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
        row[name] = {"median": float(np.median(times)), "min": float(np.min(times))}
    print("RESULT " + json.dumps(row), flush=True)


def run_products(pythonpath, rounds):
    out = []
    for _ in range(rounds):
        cmd = [sys.executable, __file__, "--products-child"]
        proc = subprocess.run(["/usr/bin/time", "-f", "ultrafs-peak-kb %M", *cmd],
                              capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=pythonpath))
        line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
        row = json.loads(line[len("RESULT "):])
        row["load"] = os.getloadavg()
        out.append(row)
    return out


def run_child(name, method, args):
    cmd = [sys.executable, __file__, "--child", name, method,
           "--synthetic-rows", str(args.synthetic_rows),
           "--synthetic-D", str(args.synthetic_D), "--cache-bytes", str(args.cache_bytes)]
    measured = run_measured(cmd)
    line = next(l for l in measured["stdout"].splitlines() if l.startswith("RESULT "))
    row = json.loads(line[len("RESULT "):])
    row["process_seconds"] = measured["seconds"]
    row["peak_rss_mb"] = measured["peak_rss_mb"]
    row["progress_lines"] = [l for l in measured["stderr"].splitlines()
                             if l.startswith("sklr")][-3:]
    return row


# ------------------------------------------------------------------ CLI
def a9a_files():
    """a9a's training rows and a9a.t as LIBSVM files under bench/out (made once)."""
    OUT_DIR.mkdir(exist_ok=True)
    train, test = OUT_DIR / "a9a_train.svm", OUT_DIR / "a9a_test.svm"
    if not (train.exists() and test.exists()):
        with bz2.open(DATA_DIR / "a9a.svm.bz2", "rt") as fh:
            lines = fh.readlines()
        train.write_text("".join(lines[:32561]))
        test.write_text("".join(lines[32561:]))
    return train, test


def run_cli(solver, pythonpath, extra=()):
    train, test = a9a_files()
    out = OUT_DIR / f"sklr_cli_{solver}.json"
    cmd = [sys.executable, "-m", "ultrafs.cli", "select", "--data", str(train),
           "--test", str(test), "--method", "sklr", "--basis", "rff", "--n-components",
           str(D), "--solver", solver, "--lam-ratio", str(RATIO), "--out", str(out),
           "--overwrite", "--progress", *extra]
    env = dict(os.environ, PYTHONPATH=pythonpath)
    started = time.perf_counter()
    # run from the library's root: ``python -m`` puts the working directory
    # first on sys.path, ahead of PYTHONPATH
    proc = subprocess.run(["/usr/bin/time", "-f", "ultrafs-peak-kb %M", *cmd],
                          capture_output=True, text=True, env=env, cwd=pythonpath)
    wall = time.perf_counter() - started
    lines = proc.stderr.splitlines()
    peak = next((float(l.split()[1]) / 1024 for l in lines
                 if l.startswith("ultrafs-peak-kb ")), None)
    acc = next((l for l in (proc.stdout + proc.stderr).splitlines()
                if "test accuracy" in l), None)
    return {"solver": solver, "pythonpath": pythonpath, "extra": list(extra),
            "wall": wall, "peak_rss_mb": peak, "rc": proc.returncode,
            "accuracy_line": acc, "output": (proc.stdout + proc.stderr)[-3000:],
            "progress": [l for l in lines if l.startswith("sklr")]}


def run_cli_part(args, doc, rnd):
    """The issue's command, after (this tree) and, if asked, before (capped)."""
    root = str(Path(__file__).resolve().parent.parent)
    for solver in args.cli_solvers.split(","):
        runs = [(root, ())]
        if args.cli_before:
            runs.append((args.cli_before, ("--max-iter", "100")))
        for pythonpath, extra in runs:
            rec = run_cli(solver, pythonpath, extra)
            rec["round"] = rnd
            rec["load"] = os.getloadavg()
            doc["cli"].append(rec)
            print(f"cli {solver} {pythonpath} {' '.join(extra)}: {rec['wall']:.1f} s, "
                  f"peak {rec['peak_rss_mb']} MB, rc {rec['rc']}, {rec['accuracy_line']}",
                  flush=True)
            write_result(args.name, doc)


# ------------------------------------------------------------------ main
def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="a9a,synthetic")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--synthetic-methods", default=None)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--synthetic-rows", type=int, default=1_000_000)
    parser.add_argument("--synthetic-D", type=int, default=100)
    parser.add_argument("--cache-bytes", type=int, default=2 ** 30)
    parser.add_argument("--cli-solvers", default="fista,cgd")
    parser.add_argument("--cli-before", default=None,
                        help="PYTHONPATH of the library before (e.g. a git archive); "
                             "runs its CLI with --max-iter 100")
    parser.add_argument("--name", default="issue35_sklr")
    parser.add_argument("--child", nargs=2, default=None)
    parser.add_argument("--products-child", action="store_true")
    args = parser.parse_args()
    if args.products_child:
        products_child()
        return
    if args.child:
        name, method = args.child
        n = D if name == "a9a" else args.synthetic_D
        child(name, method, args.synthetic_rows, n, args.cache_bytes)
        return
    parts = args.part.split(",")
    doc = {"load_start": os.getloadavg(), "args": vars(args), "rows": [], "cli": []}
    path = None
    for rnd in range(args.rounds):
        for part in parts:                      # in the order given
            if part == "cli":
                run_cli_part(args, doc, rnd)
                continue
            if part == "products":          # after, then before (if given), per round
                root = str(Path(__file__).resolve().parent.parent)
                for where in [root] + ([args.cli_before] if args.cli_before else []):
                    for row in run_products(where, 1):
                        row["round"] = rnd
                        doc.setdefault("products", []).append(row)
                        print("products", json.dumps(row), flush=True)
                write_result(args.name, doc)
                continue
            methods = args.methods if part == "a9a" else (args.synthetic_methods
                                                          or args.methods)
            for method in methods.split(","):
                row = run_child(part, method, args)
                row["round"] = rnd
                row["load"] = os.getloadavg()
                doc["rows"].append(row)
                print(f"{part:9s} {method:9s} fit {row['fit_seconds']:7.1f} s  process "
                      f"{row['process_seconds']:6.1f} s  peak {row['peak_rss_mb']:6.0f} MB  "
                      f"iters {row['n_iter']:5d}  gap {row['rel_gap']:.1e}  nnz "
                      f"{row['nnz']:4d}  acc {row['accuracy']:.4f}  load "
                      f"{row['load'][0]:.1f}", flush=True)
                write_result(args.name, doc)
    doc["load_end"] = os.getloadavg()
    path = write_result(args.name, doc)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
