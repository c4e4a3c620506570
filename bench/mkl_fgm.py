"""MKL-FGM: does SimpleMKL reach APG's objective, and at what cost?

Question (issue 12, item 3): on the columns FGM selects, the subproblem
solved in its dual by SimpleMKL (``solver="mkl"``, the paper's MKL-FGM
reference) must reach the objective of the primal solvers to 1e-4
relative.  How long does each take?

For each n: a planted problem (``ultrafs.datasets.planted``), FGM with the
squared hinge (B = 5, T = 10, C = 10) picks the active set; the last
subproblem (10 blocks of 5 columns) is then solved cold by APG, proximal
Newton and SimpleMKL, each certified (KKT 1e-6; SimpleMKL also on its
duality gap), median of ``--repeats`` runs after one warm-up::

    python bench/mkl_fgm.py [--ns 500,2000] [--repeats 5] [--name mkl_fgm]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from common import peak_rss_mb, write_result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", default="500,2000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--name", default="mkl_fgm")
    args = parser.parse_args(argv)

    from ultrafs.datasets.planted import make_planted_problem
    from ultrafs.features import LinearFeatures
    from ultrafs.methods.fgm import _datafit, fit_fgm
    from ultrafs.methods.column_cache import ColumnCache
    from ultrafs.solvers.apg import solve
    from ultrafs.solvers.losses import get_loss
    from ultrafs.store import InMemoryStore

    rows = []
    for n in (int(v) for v in args.ns.split(",")):
        problem = make_planted_problem(n_samples=n, n_features=2000, n_relevant=60,
                                       n_test=10, seed=1)
        store = InMemoryStore(problem.X_train, problem.y_train)
        y = np.asarray(problem.y_train, dtype=np.float64)
        space = LinearFeatures(store)
        result = fit_fgm(space, y, B=5, C=10.0, loss="squared-hinge", max_iter=10,
                         tol=0)
        cache = ColumnCache(n)
        for lo, hi in zip(result.batch_ptr[:-1], result.batch_ptr[1:]):
            cache.append_batch(space.materialize(result.keys[lo:hi]))
        datafit = _datafit(cache, y, 10.0, get_loss("squared-hinge", "binary"), 1)
        record = {"n": n, "columns": int(len(result.keys)),
                  "blocks": int(len(result.batch_ptr) - 1)}
        for solver in ("apg", "newton", "mkl"):
            times = []
            for _ in range(args.repeats + 1):
                started = time.perf_counter()
                solution = solve(datafit, cache.batch_ptr, solver=solver, tol=1e-6,
                                 kkt_tol=1e-6, max_iter=100_000)
                times.append(time.perf_counter() - started)
            record[solver] = {"seconds": float(np.median(times[1:])),
                              "objective": float(solution.objective),
                              "kkt": float(solution.kkt),
                              "iterations": int(solution.n_iter),
                              "converged": bool(solution.converged)}
        best = min(record[s]["objective"] for s in ("apg", "newton", "mkl"))
        for s in ("apg", "newton", "mkl"):
            record[s]["relative_gap_to_best"] = (record[s]["objective"] - best) / best
        rows.append(record)
        print(f"n = {n}: " + ", ".join(
            f"{s} {record[s]['seconds'] * 1e3:.1f} ms (objective {record[s]['objective']:.10g}, "
            f"KKT {record[s]['kkt']:.1e}, {record[s]['iterations']} it)"
            for s in ("apg", "newton", "mkl")), flush=True)
    print("\n| n | columns (blocks) | APG ms | Newton ms | SimpleMKL ms | MKL / APG | "
          "max relative objective difference |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        diff = max(abs(r[s]["relative_gap_to_best"]) for s in ("apg", "newton", "mkl"))
        print(f"| {r['n']} | {r['columns']} ({r['blocks']}) | {r['apg']['seconds'] * 1e3:.1f} "
              f"| {r['newton']['seconds'] * 1e3:.1f} | {r['mkl']['seconds'] * 1e3:.1f} | "
              f"{r['mkl']['seconds'] / r['apg']['seconds']:.1f} | {diff:.1e} |")
    write_result(args.name, {"args": vars(args), "rows": rows,
                             "peak_rss_mb": peak_rss_mb()})


if __name__ == "__main__":
    main()
