"""What C='auto' (with the refit) costs against one plain fit.

For each set (first split of ``quality_vs_l1.py``'s protocol: a set's own
train part, or the first seeded stratified 70/30 split) and budget k
(B = k/10, T = 10): the best of 2 plain fits (``C='scale'``) against the
best of 2 ``select(C='auto', refit=True)`` runs, in CPU seconds of this
process (all its threads; run it with BLAS, OpenMP and numba on one
thread) and in wall seconds, with the C and refit C chosen and the number
of (C, refit C) points the walk evaluated.  Sets of at most 10,000
training rows use 5 folds (fitted in up to ``os.cpu_count()`` threads at
once, so their wall time falls below their CPU time), the others one 20%
hold-out.  ``imdb50k_zarr`` is imdb50k's 25,000 training rows as a Zarr
store on disk (``common.imdb_stores``): 8.7 million entries, more than
``rows_in_memory`` copies, so the hold-out's fits stream the store's rows
(out of core).  Each row also counts the block passes (Dask runs of
``run_block_tasks``) of a plain fit and of a ``C='auto'`` run.

``--threads``: wall seconds of 5-fold ``select(C='auto', refit=True)``
with ``num_workers`` 1 and 2 (medians of three alternating runs), for
cases ``set:k`` or ``set:k:cv`` (``cv=5`` forced on larger sets): what
the fold threads gain or lose (``THREADED_FOLDS_MIN_*`` in ``api.py`` are
patched off so that every case runs threaded).

``--passes``: seconds of one scoring pass over imdb50k's training part
(the 80% of ``imdb50k_zarr``'s rows a hold-out trains on, a
``RowSubsetStore`` view), medians of 7: the rows dropped block by block
against the inner store read with zero weights on the held-out rows
(``RowSubsetStore.scattered``), and Q = 3 queries as three passes against
one shared pass (``worst_case_analyses``: one read, one fused loop).

``--peers``: what choosing C by held-out rows costs scikit-learn, as the
same ratio: ``LogisticRegressionCV`` (its default grid of 8 values of C,
10^-4 … 10^4) on the rows ``C='auto'`` validates on
(``validation.default_folds``: 5 stratified folds up to 10,000 training
rows, else one stratified 20% hold-out; seed 0), in CPU seconds,
against one ``LogisticRegression`` fit at the C it chose: l1-LR
(liblinear, each fit cold) and l2-LR (lbfgs, warm-started along the grid
as scikit-learn does); both with an intercept, the best of 2 runs each.

To compare two versions of ultrafs, run the script once under each (e.g.
``PYTHONPATH=/tmp/ultrafs_OLD python c_auto_cost.py --name c_auto_cost_old``)
and print both with ``python c_auto_cost.py --compare c_auto_cost_old,c_auto_cost``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

from common import OUT_DIR, write_result
import quality_vs_l1 as protocol

THREAD_CASES = ("dexter:50,rcv1_small:50,arcene:50,colon-cancer:20,mnist3v8:50,"
                "gisette:50,a9a:20:5,imdb_unigram:20:5")
CASES = ["imdb_unigram:50", "a9a:20", "w8a:50", "dexter:50", "colon-cancer:20",
         "gisette:50", "rcv1_small:50"]


#: timed runs of each fit (the best is kept)
REPEATS = 2


def _best_times(fn, repeats=REPEATS):
    """Best CPU and best wall seconds of ``repeats`` calls, and the last value."""
    best, wall, value = float("inf"), float("inf"), None
    for _ in range(repeats):
        started, clock = time.process_time(), time.perf_counter()
        value = fn()
        best = min(best, time.process_time() - started)
        wall = min(wall, time.perf_counter() - clock)
    return best, wall, value


def _data(name):
    """(X, y) of a case's training part: CSR rows, or an on-disk store and None."""
    if name == "imdb50k_zarr":
        from common import imdb_stores
        from ultrafs.store import open_store

        return open_store(imdb_stores()[0]), None
    X, y, _, _ = next(protocol.splits(name, 5))
    return X, y


class _PassCounter:
    """Counts the block passes (``run_block_tasks`` runs) while installed."""

    def __init__(self):
        import ultrafs.scoring.runner as runner

        self.runner, self.original, self.count = runner, runner.run_block_tasks, 0

    def __enter__(self):
        def counted(*args, **kwargs):
            self.count += 1
            return self.original(*args, **kwargs)
        self.runner.run_block_tasks = counted
        return self

    def __exit__(self, *exc):
        self.runner.run_block_tasks = self.original


def _parse_case(case):
    """``set:k`` or ``set:k:K`` (K folds): the set, k and ``select``'s fold option."""
    name, k, *cv = case.split(":")
    return name, int(k), {"cv": int(cv[0])} if cv else {}


def measure(cases):
    import ultrafs
    from ultrafs.api import select

    rows = []
    for case in cases:
        name, k, folds = _parse_case(case)
        X, y = _data(name)
        B, T = protocol.budget(k)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            select(X, y, B=B, max_iter=T)                 # compile, warm caches
            # passes counted during the timed runs (the same count in each)
            with _PassCounter() as plain_passes:
                plain, plain_wall, _ = _best_times(lambda: select(X, y, B=B, max_iter=T),
                                                   REPEATS)
            with _PassCounter() as auto_passes:
                auto, auto_wall, model = _best_times(
                    lambda: select(X, y, B=B, max_iter=T, C="auto", refit=True, **folds),
                    REPEATS)
        curve = model.params["validation"]
        row = {"set": name, "k": k,
               "rows": int(X.n_samples if hasattr(X, "n_samples") else X.shape[0]),
               "plain_passes": plain_passes.count // REPEATS,
               "auto_passes": auto_passes.count // REPEATS,
               "plain_cpu_s": plain, "auto_refit_cpu_s": auto, "ratio": auto / plain,
               "plain_wall_s": plain_wall, "auto_refit_wall_s": auto_wall,
               "wall_ratio": auto_wall / plain_wall,
               "C": curve["C"], "refit_C": curve["refit_C"],
               "points": len(curve["points"]), "folds": curve["folds"],
               "n_features": len(model.features), "ultrafs": ultrafs.__file__}
        rows.append(row)
        print(f"{name} k={k}: plain {plain:.3f} s, C='auto' + refit {auto:.2f} s "
              f"(x{row['ratio']:.1f}; wall {plain_wall:.3f} s, {auto_wall:.2f} s, "
              f"x{row['wall_ratio']:.1f}); C {row['C']:.4g}, refit C {row['refit_C']:.4g}, "
              f"{row['points']} points, {row['n_features']} features; passes "
              f"{row['plain_passes']} and {row['auto_passes']}", flush=True)
    return rows


def _case(row):
    """A row's case: set, k and the number of folds (a hold-out's 1)."""
    return row["set"], row["k"], row.get("folds")


def _load(names):
    """Rows of one or more runs (``a+b+c``): per case, the medians of the times."""
    runs = [json.loads((OUT_DIR / f"{name}.json").read_text())["rows"]
            for name in names.split("+")]
    rows = []
    for row in runs[0]:
        same = [r for run in runs for r in run if _case(r) == _case(row)]
        merged = dict(row)
        for key in ("plain_cpu_s", "auto_refit_cpu_s", "ratio", "plain_wall_s",
                    "auto_refit_wall_s", "wall_ratio"):
            values = [r[key] for r in same if key in r]
            if values:
                merged[key] = float(np.median(values))
        merged["runs"] = len(same)
        rows.append(merged)
    return rows


def threads(cases):
    """Wall seconds of C='auto' + refit with 1 and 2 fold threads, per case."""
    import statistics

    import ultrafs.api as api
    from ultrafs.api import select

    api.THREADED_FOLDS_MIN_NNZ = 0          # every case threaded: measure both
    rows = []
    for case in cases:
        name, k, extra = _parse_case(case)
        X, y, _, _ = next(protocol.splits(name, 5))
        B, T = protocol.budget(k)
        times = {1: [], 2: []}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            select(X, y, B=B, max_iter=T, C="auto", refit=True, **extra)
            for workers in (1, 2, 1, 2, 1, 2):
                started = time.perf_counter()
                select(X, y, B=B, max_iter=T, C="auto", refit=True,
                       num_workers=workers, **extra)
                times[workers].append(time.perf_counter() - started)
        row = {"case": case, "nnz": int(X.nnz), "rows": int(X.shape[0]),
               "wall_1": statistics.median(times[1]), "wall_2": statistics.median(times[2])}
        rows.append(row)
        print(f"{case}: {row['nnz']:,} entries, {row['rows']:,} rows; wall "
              f"{row['wall_1']:.2f} s (1 thread) -> {row['wall_2']:.2f} s (2)", flush=True)
    return rows


def passes(repeats=7):
    """Median seconds of one pass over a hold-out's training rows, per variant."""
    import statistics

    import ultrafs.store.rows as rows_module
    from ultrafs.features.linear import LinearFeatures
    from ultrafs.methods.validation import stratified_split
    from ultrafs.scoring.worst_case import worst_case_analyses

    store, _ = _data("imdb50k_zarr")
    train, _ = stratified_split(store.read_labels(), 0.2, 0)
    view = LinearFeatures(rows_module.RowSubsetStore(store, train))
    rng = np.random.default_rng(0)
    queries = [(rng.standard_normal(len(train)), 5, None) for _ in range(3)]
    share = rows_module.SCATTER_MIN_SHARE

    def run(name, batches, min_share):
        rows_module.SCATTER_MIN_SHARE = min_share
        try:
            worst_case_analyses(view, batches[0])                 # compile, warm caches
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                for batch in batches:
                    worst_case_analyses(view, batch)
                times.append(time.perf_counter() - started)
        finally:
            rows_module.SCATTER_MIN_SHARE = share
        row = {"variant": name, "seconds": statistics.median(times)}
        print(f"{name}: {row['seconds']:.3f} s", flush=True)
        return row

    return [run("1 query, rows dropped", [queries[:1]], 2.0),
            run("1 query, inner store, zero weights", [queries[:1]], share),
            run("3 queries, 3 passes, rows dropped", [[q] for q in queries], 2.0),
            run("3 queries, 3 passes, zero weights", [[q] for q in queries], share),
            run("3 queries, 1 shared pass, zero weights", [queries], share)]


def peers(cases):
    """CPU seconds of scikit-learn's LogisticRegressionCV against one fit at
    the C it chose, l1 (liblinear) and l2 (lbfgs), per case."""
    from sklearn.linear_model import LogisticRegression, LogisticRegressionCV

    from ultrafs.methods.validation import default_folds

    rows = []
    for case in cases:
        name, k, _ = _parse_case(case)
        X, y = _data(name)
        if y is None:
            raise SystemExit(f"{name}: --peers takes sets in memory")
        folds, _, _ = default_folds(y)        # the rows C='auto' validates on
        row = {"set": name, "rows": int(X.shape[0]), "folds": len(folds)}
        for label, options in (("l1", {"penalty": "l1", "solver": "liblinear"}),
                               ("l2", {"solver": "lbfgs", "max_iter": 1000})):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cv_s, _, model = _best_times(lambda: LogisticRegressionCV(
                    Cs=8, cv=folds, random_state=0, **options).fit(X, y))
                C = float(model.C_[0])
                one_s, _, _ = _best_times(lambda: LogisticRegression(
                    C=C, random_state=0, **options).fit(X, y))
            row.update({f"{label}_C": C, f"{label}_cv_cpu_s": cv_s, f"{label}_fit_cpu_s": one_s,
                        f"{label}_ratio": cv_s / one_s})
        rows.append(row)
        print(f"{name}: {len(folds)} fold(s); l1-LR CV {row['l1_cv_cpu_s']:.3f} s against one "
              f"fit {row['l1_fit_cpu_s']:.4f} s (x{row['l1_ratio']:.1f}, C {row['l1_C']:.3g}); "
              f"l2-LR CV {row['l2_cv_cpu_s']:.3f} s against {row['l2_fit_cpu_s']:.4f} s "
              f"(x{row['l2_ratio']:.1f}, C {row['l2_C']:.3g})", flush=True)
    return rows


def compare(before_name, after_name):
    """The table of two versions; ``a+b+c`` names several runs of one version
    (medians of their times: the machine is shared and noisy)."""
    before = _load(before_name)
    after = {_case(r): r for r in _load(after_name)}
    print("| set, k | folds | plain (CPU s) | C='auto' + refit before → after (CPU s) "
          "| × plain before → after | wall × plain before → after "
          "| points before → after | C, refit C before → after |")
    print("|---|---|---|---|---|---|---|---|")
    for b in before:
        a = after.get(_case(b))
        if a is None:
            continue
        same = (b["C"], b["refit_C"]) == (a["C"], a["refit_C"])
        choice = (f"{b['C']:.3g}, {b['refit_C']:.3g} (same)" if same else
                  f"{b['C']:.3g}, {b['refit_C']:.3g} → {a['C']:.3g}, {a['refit_C']:.3g}")
        print(f"| {b['set']}, {b['k']} | {b['folds']} | {a['plain_cpu_s']:.3f} | "
              f"{b['auto_refit_cpu_s']:.2f} → {a['auto_refit_cpu_s']:.2f} | "
              f"{b['ratio']:.1f} → {a['ratio']:.1f} | "
              f"{b.get('wall_ratio', float('nan')):.1f} → "
              f"{a.get('wall_ratio', float('nan')):.1f} | {b['points']} → {a['points']} | "
              f"{choice} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES),
                        help="set:k pairs (or set:k:K for K folds), comma-separated")
    parser.add_argument("--name", default="c_auto_cost")
    parser.add_argument("--compare", help="BEFORE,AFTER: print the two runs' table")
    parser.add_argument("--threads", action="store_true",
                        help="Fold threads 1 vs 2 (cases set:k or set:k:cv).")
    parser.add_argument("--passes", action="store_true",
                        help="Seconds of one pass over a hold-out's training rows.")
    parser.add_argument("--peers", action="store_true",
                        help="scikit-learn's LogisticRegressionCV against one fit.")
    args = parser.parse_args()
    if args.peers:
        write_result(args.name + "_peers", {"rows": peers(args.cases.split(","))})
        return
    if args.passes:
        write_result(args.name + "_passes", {"rows": passes()})
        return
    if args.threads:
        cases = args.cases if args.cases != ",".join(CASES) else THREAD_CASES
        write_result(args.name + "_threads", {"rows": threads(cases.split(","))})
        return
    if args.compare:
        compare(*args.compare.split(","))
        return
    write_result(args.name, {"rows": measure(args.cases.split(","))})


if __name__ == "__main__":
    main()
