"""Paper §8.2: feature recovery and accuracy versus the number of features.

Question: on X ∈ R^{4096×4096} ~ N(0,1), w with 300 nonzeros ~ U(0,1),
y = sign(Xw), 4096 test rows, does FGM (C = 10, B ∈ {10, 30, 50}) recover
more of the 300 true features and predict better than scikit-learn's
l1-regularised LogisticRegression (liblinear) at the same number of selected
features, for every count ≥ 100?

Usage: python bench/synthetic_82.py [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from common import peak_rss_mb, write_result
from ultrafs.features.linear import LinearFeatures
from ultrafs.methods.fgm import fit_fgm
from ultrafs.store import InMemoryStore
from ultrafs.datasets.planted import make_planted_problem

TARGET_COUNTS = [50, 100, 150, 200, 250, 300, 400, 500, 600]


def fgm_curve(problem, B, C=10.0, max_features=620):
    """Test accuracy and recovery after every outer iteration of one FGM run."""
    store = InMemoryStore(problem.X_train, problem.y_train)
    max_iter = int(np.ceil(max_features / B))
    started = time.perf_counter()
    result = fit_fgm(LinearFeatures(store), store.read_labels(), B=B, C=C,
                     max_iter=max_iter, tol=0.0)
    seconds = time.perf_counter() - started
    relevant = set(problem.relevant.tolist())
    rows = []
    for t, (coef, bias) in enumerate(result.path):
        keys = result.keys[:result.batch_ptr[t + 1]]
        active = keys[coef != 0]
        decision = problem.X_test[:, keys].astype(np.float64) @ coef - bias
        accuracy = float(np.mean(np.where(decision > 0, 1.0, -1.0) == problem.y_test))
        rows.append({"n_features": int(len(active)),
                     "recovered": len(relevant & set(active.tolist())),
                     "accuracy": accuracy})
    return rows, seconds


def l1_curve(problem, n_grid=36):
    """liblinear l1-LR over a grid of C: (nonzeros, recovered, accuracy)."""
    from sklearn.linear_model import LogisticRegression

    relevant = set(problem.relevant.tolist())
    rows = []
    started = time.perf_counter()
    for c in np.geomspace(2e-3, 2.0, n_grid):
        clf = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=c, tol=1e-4,
                                 max_iter=1000)
        clf.fit(problem.X_train, problem.y_train)
        active = np.flatnonzero(clf.coef_.ravel())
        rows.append({"C": float(c), "n_features": int(len(active)),
                     "recovered": len(relevant & set(active.tolist())),
                     "accuracy": float(clf.score(problem.X_test, problem.y_test))})
    return rows, time.perf_counter() - started


def at_count(rows, target):
    """The row whose number of features is closest to ``target``."""
    return min(rows, key=lambda r: (abs(r["n_features"] - target), r["n_features"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    # warm the JIT on a small problem
    small = make_planted_problem(200, 100, 10, 50, seed=99)
    fgm_curve(small, 5, max_features=10)

    results = {"seeds": args.seeds, "runs": []}
    for seed in args.seeds:
        problem = make_planted_problem(4096, 4096, 300, 4096, seed=seed)
        run = {"seed": seed, "fgm": {}, "seconds": {}}
        for B in (10, 30, 50):
            rows, seconds = fgm_curve(problem, B)
            run["fgm"][B] = rows
            run["seconds"][f"fgm_B{B}"] = seconds
        rows, seconds = l1_curve(problem)
        run["l1"] = rows
        run["seconds"]["l1_grid"] = seconds
        results["runs"].append(run)

        print(f"seed {seed}")
        print("| target | method | features | recovered / 300 | test accuracy |")
        print("|---:|---|---:|---:|---:|")
        for target in TARGET_COUNTS:
            for name, rows in [(f"FGM B={B}", run["fgm"][B]) for B in (10, 30, 50)] \
                    + [("l1-LR liblinear", run["l1"])]:
                row = at_count(rows, target)
                print(f"| {target} | {name} | {row['n_features']} | "
                      f"{row['recovered']} | {row['accuracy']:.4f} |")
        print({k: round(v, 1) for k, v in run["seconds"].items()})
    results["peak_rss_mb"] = peak_rss_mb()
    print("peak RSS MB", round(results["peak_rss_mb"]))
    write_result("synthetic_82", results)


if __name__ == "__main__":
    main()
