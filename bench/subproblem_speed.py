"""Issue 35 (items 5 and 6): how long do FGM's subproblem solves take?

Two questions, each answered by paired, interleaved rounds in one run:

* imdb50k train half (25,000 rows, uni+bigrams), ``select(B=30,
  max_iter=10)``: the seconds spent in the subproblem solves
  (``solvers.apg.solve``), the Hessians built, the whole select, and the
  quality (final objective, selected features); ``--before ROOT`` (a
  checkout of the code before the change, default ``/work/main``) against
  this checkout, each round one subprocess per checkout, the order
  alternating.
* digits (1,797 x 64, K = 10, scikit-learn's copy; 75% train, stratified,
  seed 0): ``FGMClassifier(B=5, max_iter=2)`` against scikit-learn's
  ``LogisticRegression()`` (lbfgs, multinomial) on all 64 columns, in the
  same process, alternating, after one warm-up fit of each (numba compile
  times are reported apart: the first fit of a fresh process); test
  accuracy of both.  BLAS runs on one thread in both (scikit-learn's lbfgs
  is fastest so on this shared 2-core machine).  The same before/after pairing.

Usage: python bench/subproblem_speed.py [--rounds 3] [--before /work/main]
       [--skip-imdb] [--skip-digits]
Writes bench/out/subproblem_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _instrument():
    """Wrap ``solve`` (as FGM imports it) and ``Datafit.hessian``; return the log."""
    import ultrafs.methods.fgm as fgm
    from ultrafs.solvers.datafits import Datafit

    log = {"solve_s": 0.0, "solves": [], "hessians": 0, "hessian_s": 0.0}
    solve = fgm.solve

    def timed_solve(*args, **kwargs):
        started = time.perf_counter()
        result = solve(*args, **kwargs)
        seconds = time.perf_counter() - started
        log["solve_s"] += seconds
        log["solves"].append({"s": seconds, "n_iter": int(result.n_iter),
                              "kkt": float(result.kkt),
                              "objective": float(result.objective),
                              "converged": bool(result.converged)})
        return result

    fgm.solve = timed_solve
    for name in ("hessian", "hessian_update"):
        method = getattr(Datafit, name, None)
        if method is None:
            continue

        def timed(self, *args, _method=method, **kwargs):
            started = time.perf_counter()
            out = _method(self, *args, **kwargs)
            log["hessian_s"] += time.perf_counter() - started
            log["hessians"] += 1
            return out

        setattr(Datafit, name, timed)
    return log


def _limit_blas():
    from threadpoolctl import threadpool_limits
    return threadpool_limits(limits=1, user_api="blas")


def worker_imdb(repeat):
    sys.path.insert(0, str(HERE))
    from common import imdb_stores, peak_rss_mb
    from ultrafs.api import select
    from ultrafs.store import open_store

    train, _, _ = imdb_stores()
    store = open_store(train)
    log = _instrument()
    select(store, B=30, max_iter=2)  # warm: numba loads, first-touch
    runs = []
    for _ in range(repeat):
        log.update(solve_s=0.0, solves=[], hessians=0, hessian_s=0.0)
        started = time.perf_counter()
        model = select(store, B=30, max_iter=10)
        total = time.perf_counter() - started
        runs.append({"select_s": total, "solve_s": log["solve_s"],
                     "hessians": log["hessians"], "hessian_s": log["hessian_s"],
                     "solves": list(log["solves"]),
                     "features": [int(f) for f in model.features],
                     "peak_rss_mb": peak_rss_mb()})
    return runs


def _digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)


def worker_digits(repeat):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    from ultrafs import FGMClassifier

    warnings.simplefilter("ignore", ConvergenceWarning)
    Xtr, Xte, ytr, yte = _digits()
    log = _instrument()
    out = {"rounds": []}
    with _limit_blas():
        started = time.perf_counter()
        FGMClassifier(B=5, max_iter=2).fit(Xtr, ytr)
        out["fgm_first_fit_s"] = time.perf_counter() - started
        out["fgm_first_solve_s"] = log["solve_s"]
        LogisticRegression().fit(Xtr, ytr)
        for r in range(repeat):
            order = ("fgm", "sk") if r % 2 == 0 else ("sk", "fgm")
            row = {}
            for who in order:
                if who == "fgm":
                    log.update(solve_s=0.0, solves=[], hessians=0, hessian_s=0.0)
                    started = time.perf_counter()
                    est = FGMClassifier(B=5, max_iter=2).fit(Xtr, ytr)
                    row["fgm_s"] = time.perf_counter() - started
                    row["fgm_solve_s"] = log["solve_s"]
                    row["fgm_solves"] = list(log["solves"])
                    row["fgm_acc"] = float((est.predict(Xte) == yte).mean())
                    row["features"] = [int(i) for i in est.model_.features]
                else:
                    started = time.perf_counter()
                    sk = LogisticRegression().fit(Xtr, ytr)
                    row["sk_s"] = time.perf_counter() - started
                    row["sk_acc"] = float((sk.predict(Xte) == yte).mean())
            out["rounds"].append(row)
    return out


def _run_worker(root, kind, repeat):
    env = dict(os.environ, PYTHONPATH=str(root))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind,
           "--repeat", str(repeat)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True,
                          cwd=str(root))
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(values):
    return statistics.median(values) if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--before", default="/work/main")
    parser.add_argument("--worker", choices=("imdb", "digits"))
    parser.add_argument("--skip-imdb", action="store_true")
    parser.add_argument("--skip-digits", action="store_true")
    args = parser.parse_args()
    if args.worker:
        fn = worker_imdb if args.worker == "imdb" else worker_digits
        print(json.dumps(fn(args.repeat)))
        return
    sides = {"before": Path(args.before), "after": ROOT}
    results = {"load_start": os.getloadavg(), "before_root": str(sides["before"])}
    kinds = [k for k, skip in (("digits", args.skip_digits), ("imdb", args.skip_imdb))
             if not skip]
    for kind in kinds:
        rounds = []
        for r in range(args.rounds):
            order = ("before", "after") if r % 2 == 0 else ("after", "before")
            row = {}
            for side in order:
                row[side] = _run_worker(sides[side], kind, args.repeat)
            rounds.append(row)
            print(kind, "round", r, "done", file=sys.stderr)
        results[kind] = rounds
    results["load_end"] = os.getloadavg()
    out = HERE / "out" / "subproblem_speed.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    _summarise(results)


def _summarise(results):
    print("load (1/5/15 min) start", results["load_start"], "end", results["load_end"])
    if "digits" in results:
        for side in ("before", "after"):
            rows = [x for rnd in results["digits"] for x in rnd[side]["rounds"]]
            fgm = _median([x["fgm_s"] for x in rows])
            sk = _median([x["sk_s"] for x in rows])
            ratios = _median([x["fgm_s"] / x["sk_s"] for x in rows])
            first = _median([rnd[side]["fgm_first_fit_s"] for rnd in results["digits"]])
            print(f"digits {side}: fgm {fgm:.3f}s (solves "
                  f"{_median([x['fgm_solve_s'] for x in rows]):.3f}s), sklearn "
                  f"{sk:.3f}s, median paired ratio fgm/sklearn {ratios:.2f}; first fit "
                  f"{first:.2f}s; acc fgm {rows[0]['fgm_acc']:.4f} sklearn "
                  f"{rows[0]['sk_acc']:.4f}; features {rows[0]['features']}; "
                  f"solves {[(s['n_iter'], round(s['objective'], 6)) for s in rows[0]['fgm_solves']]}")
    if "imdb" in results:
        for side in ("before", "after"):
            runs = [x for rnd in results["imdb"] for x in rnd[side]]
            print(f"imdb {side}: select {_median([x['select_s'] for x in runs]):.2f}s, "
                  f"solves {_median([x['solve_s'] for x in runs]):.2f}s, hessians "
                  f"{runs[0]['hessians']} ({_median([x['hessian_s'] for x in runs]):.2f}s), "
                  f"newton iters {[s['n_iter'] for s in runs[0]['solves']]}, "
                  f"peak RSS {_median([x['peak_rss_mb'] for x in runs]):.0f} MB")
        pairs = [(rnd["before"], rnd["after"]) for rnd in results["imdb"]]
        ratio = _median([a[0]["solve_s"] / b[0]["solve_s"] for b, a in pairs])
        sel = _median([a[0]["select_s"] / b[0]["select_s"] for b, a in pairs])
        b0, a0 = pairs[0]
        same = b0[0]["features"] == a0[0]["features"]
        objs = [(sb["objective"], sa["objective"])
                for sb, sa in zip(b0[0]["solves"], a0[0]["solves"])]
        rel = max(abs(x - y) / abs(x) for x, y in objs) if objs else float("nan")
        print(f"imdb after/before: solves {ratio:.2f}, select {sel:.2f}; same features "
              f"{same}; largest relative objective difference per solve {rel:.2e}")


if __name__ == "__main__":
    main()
