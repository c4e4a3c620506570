"""Additive-kernel FGM (HIK, χ²) against linear FGM at equal numbers of original features.

Question (issue 12; paper §6.1, §8.6): on the nonnegative sets of
``../shared/data`` (mnist 3-vs-8 pixels, madelon, rcv1_small; gisette's
file is scaled to [-1, 1] and is skipped, see below), does selecting
original features as groups of generated columns of an additive kernel
(``kernel="hik"``: 100 unary levels per feature; ``kernel="chi2"``: 11
Vedaldi–Zisserman columns) give a higher test accuracy than linear FGM at
the same number k of original features; and is the peak resident memory of
a fresh process independent of the expansion factor (100x for HIK), i.e.
the candidates' generated columns are never written?

Protocol: k in {5, 10, 20, 50, 100} original features (k at most
features / 5), B = k / T (at least 1) and T = ``--T`` outer iterations
(default 5, so B = k / 5 and B·T = k).  Splits as in
``quality_vs_l1.py`` (its ``splits``): madelon's own train / test files,
seeded stratified 70/30 splits of the others (``--splits`` of them, first
one only by default: the quality figures are means over these).  Raw rows
(the kernels need values >= 0; a set with a negative value is skipped and
the reason recorded).  ``gisette_shift`` (not in the default sets) is
gisette_scale.t plus 1: the LIBSVM [-1, 1] scaling undone up to a factor
per column (raw zeros become zeros again), labelled as such.

Each fit is ``select(X, y, B=B, max_iter=T, kernel=..., refit=True)`` with
the default ``C="scale"``: "plain" is FGM's own weights (the model without
its refit, ``model.truncated(all batches)``), "refit" the l2 refit on the
selection at the same C (one fit gives both; the selection is the same).
The refit runs up to k = ``--refit-max-k`` (default 20): beyond, the
refit of thousands of HIK columns at HIK's C = 1000 of the code before
issue 38 (``C="scale"`` then read the largest generated value, 1/√q for
HIK, and gave ``DEFAULT_C_SCALE · q``; it now reads a group's squared norm
k(x, x), ``bench/notes/24-hik.md``) of 5,000 HIK columns on madelon was
still running after 8 minutes (FGM itself: 4 minutes).  Seconds per fit are the
selection's (to the end of FGM's last outer iteration); the refit's are
recorded apart.
A win / loss needs a gap of more than ``TIE_POINTS`` accuracy points.

Peak RSS (``--rss-set``): a fresh process (``python bench/additive_kernels.py
--child ...``, measured by GNU time through ``common.run_measured``) loads
the split and runs linear / HIK / χ² selection at each of ``--rss-ks``,
twice: with ``C="scale"`` and with the same C given as a number (which
skips the streamed pass of ``C="scale"``, ``row_max_squares``); a "load"
child (data only, no fit) gives the floor.  "Peak after 1st pass" is the
history's ``score_peak_rss_mb`` of the first outer iteration (everything
before any generated column is materialised).  Next to it the size the
expansion of all candidates would have if it were written (its exact
nonzero count, counted block by block with the package's own expansion
kernel), and the generated nonzeros of the selected groups (the
subproblem's columns, O(t·B·G·n) by design).

Usage::

    python bench/additive_kernels.py [--sets mnist3v8,madelon,rcv1_small,gisette]
        [--ks 5,10,20,50,100] [--T 5] [--splits 1] [--kernels linear,hik,chi2]
        [--rss-set madelon] [--rss-ks 10,20] [--name additive_kernels]
    python bench/additive_kernels.py --combine NAME1,NAME2   # joint tables

Results go to ``bench/out/NAME.json`` and markdown tables to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import scipy.sparse as sp

from common import OUT_DIR, peak_rss_mb, run_measured, write_result
from quality_vs_l1 import SETS as L1_SETS, _load, splits

TIE_POINTS = 0.1
KS = (5, 10, 20, 50, 100)
KERNELS = ("linear", "hik", "chi2")
DEFAULT_SETS = ("mnist3v8", "madelon", "rcv1_small", "gisette")
LABELS = {"linear": "linear", "hik": "HIK", "chi2": "χ²"}


def budget(k, T):
    """``(B, T)`` of ``k`` original features: B = k / T (at least 1), B·T = k."""
    B = max(k // T, 1)
    return B, k // B


def set_splits(name, n_splits):
    """``quality_vs_l1.splits`` plus ``gisette_shift`` (gisette_scale.t + 1)."""
    if name != "gisette_shift":
        yield from splits(name, n_splits)
        return
    from sklearn.model_selection import StratifiedShuffleSplit

    X, y = _load(L1_SETS["gisette"][0])
    # -1 is the scaled raw zero: X + 1 is sparse again (~0.7M of 5M entries)
    X = sp.csr_matrix(X.toarray() + 1.0)
    sss = StratifiedShuffleSplit(n_splits=n_splits, test_size=0.3, random_state=0)
    for tr, te in sss.split(np.zeros(len(y)), y):
        yield X[tr], y[tr], X[te], y[te]


def negative_reason(X, Xt):
    """None when both parts are >= 0, else a one-line reason to skip the set."""
    for part, M in (("train", X), ("test", Xt)):
        if M.nnz and float(M.data.min()) < 0:
            share = float(np.mean(M.data < 0))
            return (f"{part} rows have negative values (min {float(M.data.min()):g}, "
                    f"{100 * share:.1f}% of stored entries): the additive kernels "
                    f"need values >= 0")
    return None


def fit(kernel, X, y, Xt, yt, k, T, refit=True):
    """One ``select``: plain (and, with ``refit``, refit) accuracy, seconds.

    ``seconds`` is the selection's (from the call to the end of FGM's last
    outer iteration, read by a callback, so C="scale"'s pass is in it);
    ``refit_seconds`` what the refit added after it.
    """
    from ultrafs.api import select
    from ultrafs.store import InMemoryStore

    B, T = budget(k, T)
    marks = []
    started = time.perf_counter()
    model = select(X, y, B=B, max_iter=T, refit=refit,
                   kernel=None if kernel == "linear" else kernel,
                   callback=lambda record: marks.append(time.perf_counter()))
    total = time.perf_counter() - started
    seconds = marks[-1] - started if marks else total
    test = InMemoryStore(Xt, yt)
    plain = model.truncated(len(model.batches) - 1)      # FGM's own weights
    assert plain.predictor == "selection" and len(plain.features) == len(model.features)
    return {"accuracy": float(plain.evaluate_store(test)["accuracy"]),
            "refit_accuracy": (float(model.evaluate_store(test)["accuracy"])
                               if refit else None),
            "groups": len(model.selected_groups), "n_features": len(model.features),
            "selected_groups": [g if isinstance(g, int) else list(g)
                                for g in model.selected_groups],
            "passes": len(model.history), "seconds": seconds,
            "refit_seconds": total - seconds if refit else None, "B": B, "T": T,
            "C": model.params["C"], "refit_C": model.params.get("refit_C"),
            "stop_reason": model.stop_reason,
            "score_seconds": float(sum(r["score_seconds"] for r in model.history)),
            "solve_seconds": float(sum(r["solve_seconds"] for r in model.history)),
            "materialize_seconds": float(sum(r["materialize_seconds"]
                                             for r in model.history)),
            "inner_iterations": [r["inner_iterations"] for r in model.history],
            "inner_converged": [r["inner_converged"] for r in model.history]}


def warm(kernels):
    """Compile (or load) the numba kernels of every space before timing."""
    rng = np.random.default_rng(0)
    X = sp.random(60, 30, density=0.3, random_state=0, format="csr") * 10
    y = np.where(rng.random(60) < 0.5, -1.0, 1.0)
    y[:2] = (-1.0, 1.0)
    for kernel in kernels:
        fit(kernel, X, y, X, y, 4, 2)


def run(sets, ks, T, n_splits, kernels, refit_max_k):
    rows, skipped = [], {}
    warm(kernels)
    for name in sets:
        for split, (X, y, Xt, yt) in enumerate(set_splits(name, n_splits)):
            reason = negative_reason(X, Xt)
            if reason is not None:
                skipped[name] = reason
                print(json.dumps({"set": name, "skipped": reason}), flush=True)
                break
            for k in [k for k in ks if k <= X.shape[1] // 5]:
                for kernel in kernels:
                    out = fit(kernel, X, y, Xt, yt, k, T, refit=k <= refit_max_k)
                    rows.append({"set": name, "split": split, "k": k, "kernel": kernel,
                                 **out})
                    print(json.dumps({"set": name, "split": split, "k": k,
                                      "kernel": kernel, "B": out["B"], "T": out["T"],
                                      "acc": round(out["accuracy"], 4),
                                      "refit": out["refit_accuracy"],
                                      "groups": out["groups"], "cols": out["n_features"],
                                      "s": round(out["seconds"], 2),
                                      "refit_s": out["refit_seconds"]}), flush=True)
    return rows, skipped


def cells(rows):
    """Mean over splits per (set, k, kernel)."""
    groups = {}
    for row in rows:
        groups.setdefault((row["set"], row["k"], row["kernel"]), []).append(row)
    out = {}
    for key, group in groups.items():
        mean = lambda f: float(np.mean([f(r) for r in group]))  # noqa: E731
        out[key] = {"splits": len(group), "B": group[0]["B"], "T": group[0]["T"],
                    "plain": 100 * mean(lambda r: r["accuracy"]),
                    "refit": (100 * mean(lambda r: r["refit_accuracy"])
                              if all(r["refit_accuracy"] is not None for r in group)
                              else None),
                    "groups": mean(lambda r: r["groups"]),
                    "seconds": mean(lambda r: r["seconds"])}
    return out


def verdict(delta):
    return "win" if delta > TIE_POINTS else ("loss" if delta < -TIE_POINTS else "tie")


def markdown(cell_map, kernels):
    others = [k for k in kernels if k != "linear"]
    head = ["set", "k", "B×T"]
    for which in ("plain", "refit"):
        head += [f"linear {which} %"] + [f"{LABELS[k]} {which} % (Δ)" for k in others]
    head += ["groups " + "/".join(LABELS[k] for k in kernels),
             "s/fit " + "/".join(LABELS[k] for k in kernels)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    tally = {}
    keys = sorted({(s, k) for s, k, _ in cell_map})
    for name, k in keys:
        if (name, k, "linear") not in cell_map:
            continue
        lin = cell_map[(name, k, "linear")]
        row = [name, str(k), f"{lin['B']}×{lin['T']}"]
        for which in ("plain", "refit"):
            row.append("-" if lin[which] is None else f"{lin[which]:.2f}")
            for kernel in others:
                c = cell_map.get((name, k, kernel))
                if c is None or c[which] is None or lin[which] is None:
                    row.append("-")
                    continue
                delta = c[which] - lin[which]
                t = tally.setdefault((name, kernel, which),
                                     {"win": 0, "tie": 0, "loss": 0})
                t[verdict(delta)] += 1
                row.append(f"{c[which]:.2f} ({delta:+.2f})")
        row.append("/".join(f"{cell_map[(name, k, kn)]['groups']:.0f}"
                            if (name, k, kn) in cell_map else "-" for kn in kernels))
        row.append("/".join(f"{cell_map[(name, k, kn)]['seconds']:.2f}"
                            if (name, k, kn) in cell_map else "-" for kn in kernels))
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "| set | kernel | weights | wins | ties | losses (vs linear, same weights) |",
              "|---|---|---|---|---|---|"]
    totals = {}
    for (name, kernel, which), t in sorted(tally.items()):
        lines.append(f"| {name} | {LABELS[kernel]} | {which} | {t['win']} | {t['tie']} | "
                     f"{t['loss']} |")
        total = totals.setdefault((kernel, which), {"win": 0, "tie": 0, "loss": 0})
        for key in total:
            total[key] += t[key]
    for (kernel, which), t in sorted(totals.items()):
        lines.append(f"| all | {LABELS[kernel]} | {which} | {t['win']} | {t['tie']} | "
                     f"{t['loss']} |")
    return "\n".join(lines), {"/".join(key): t for key, t in tally.items()}


# ------------------------------------------------------------------ peak RSS
def child(spec, T):
    """In a fresh process: load the split, run one selection, print JSON.

    ``spec`` is ``SET:KERNEL:K`` (C="scale") or ``SET:KERNEL:K:C`` (C given).
    """
    name, kernel, k, *given = spec.split(":")
    C = float(given[0]) if given else "scale"
    started = time.perf_counter()
    X, y, Xt, yt = next(set_splits(name, 1))
    load_seconds = time.perf_counter() - started
    out = {"set": name, "kernel": kernel, "k": int(k), "load_seconds": load_seconds,
           "rss_after_load_mb": peak_rss_mb()}
    if kernel != "load":
        from ultrafs.api import select

        B, T = budget(int(k), T)
        started = time.perf_counter()
        model = select(X, y, B=B, max_iter=T, C=C,
                       kernel=None if kernel == "linear" else kernel)
        out.update(seconds=time.perf_counter() - started, B=B, T=T,
                   C_rule="scale" if C == "scale" else "given", C=model.params["C"],
                   groups=len(model.selected_groups), n_features=len(model.features),
                   first_pass_peak_rss_mb=model.history[0].get("score_peak_rss_mb"),
                   phase_peaks_mb=[[r.get("score_peak_rss_mb"),
                                    r.get("materialize_peak_rss_mb"),
                                    r.get("solve_peak_rss_mb")] for r in model.history],
                   selected=[g if isinstance(g, int) else list(g)
                             for g in model.selected_groups])
        out["selected_generated_nnz"] = selected_generated_nnz(X, kernel,
                                                               out["selected"])
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out))


def selected_generated_nnz(X, kernel, selected):
    """Nonzeros of the generated columns of the selected original features
    (what the subproblem holds)."""
    if kernel == "linear":
        return int(X.tocsc()[:, selected].nnz) if selected else 0
    from ultrafs.store import InMemoryStore

    store = InMemoryStore(X, np.where(np.arange(X.shape[0]) % 2, 1.0, -1.0))
    columns = store.columns_of(np.asarray(selected, dtype=np.int64))
    return expansion_nnz(store, kernel, columns)


def expansion_nnz(store, kernel, columns=None, chunk=256):
    """Exact nonzero count of the expansion of ``columns`` (all by default),
    computed ``chunk`` columns at a time with the package's kernel."""
    from ultrafs.features.additive import _values, column_max
    from ultrafs.kernels.additive_maps import EXPAND_BLOCK

    columns = np.arange(store.n_features) if columns is None else np.asarray(columns)
    total = 0
    for lo in range(0, len(columns), chunk):
        cols = store.read_columns(columns[lo:lo + chunk])
        if cols.nnz == 0:
            continue
        data = np.asarray(_values(cols), dtype=np.float64)
        _, _, values = EXPAND_BLOCK[kernel](cols.indptr, cols.indices, data,
                                            column_max(cols.indptr, data))
        total += int(np.count_nonzero(values))
    return total


def rss(name, ks, T, kernels):
    """Peak RSS of fresh processes: data only, then each kernel at each k."""
    from ultrafs.store import InMemoryStore

    X, y, _, _ = next(set_splits(name, 1))
    store = InMemoryStore(X, y)
    sizes = {"stored_nnz": int(X.nnz), "columns": int(X.shape[1]), "rows": int(X.shape[0])}
    for kernel in kernels:
        if kernel != "linear":
            sizes[f"{kernel}_candidate_nnz"] = expansion_nnz(store, kernel)
    # a written expansion: int32 row index + float64 value per entry
    script = [sys.executable, __file__, "--T", str(T), "--child"]
    out = []

    def measure(spec):
        r = run_measured(script + [spec])
        record = json.loads(r["stdout"].strip().splitlines()[-1])
        record.update(process_seconds=r["seconds"], process_peak_rss_mb=r["peak_rss_mb"],
                      measured_by=r["peak_rss_measured_by"])
        out.append(record)
        print(json.dumps({x: record.get(x) for x in
                          ("kernel", "k", "C_rule", "C", "groups", "seconds",
                           "process_peak_rss_mb", "first_pass_peak_rss_mb",
                           "selected_generated_nnz")}), flush=True)
        return record

    measure(f"{name}:load:0")
    for k in ks:
        for kernel in kernels:
            scaled = measure(f"{name}:{kernel}:{k}")
            # the same C given as a number: without the pass of C="scale"
            measure(f"{name}:{kernel}:{k}:{scaled['C']!r}")
    return sizes, out


def rss_markdown(name, sizes, runs):
    lines = [f"{name}: {sizes['rows']:,} training rows × {sizes['columns']:,} columns, "
             f"{sizes['stored_nnz']:,} stored nonzeros; the expansion of all candidates "
             "would hold " + ", ".join(
                 f"{sizes[key]:,} nonzeros for {LABELS[key.split('_')[0]]} "
                 f"({sizes[key] / sizes['stored_nnz']:.1f}x, "
                 f"{sizes[key] * 12 / 2**20:,.0f} MiB as int32 + float64)"
                 for key in sizes if key.endswith("_candidate_nnz")) + ".", "",
             "| run | k | B×T | C | groups | s (fit) | peak RSS MiB (process) | "
             "peak after 1st pass MiB | selected generated nnz |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        if r["kernel"] == "load":
            lines.append(f"| data only (load + imports) | - | - | - | - | - | "
                         f"{r['process_peak_rss_mb']:.0f} | - | - |")
            continue
        lines.append(f"| {LABELS[r['kernel']]} | {r['k']} | {r['B']}×{r['T']} | "
                     f"{r['C']:.3g} ({r['C_rule']}) | {r['groups']} | {r['seconds']:.2f} | "
                     f"{r['process_peak_rss_mb']:.0f} | "
                     f"{r['first_pass_peak_rss_mb']:.0f} | "
                     f"{r['selected_generated_nnz']:,} |")
    return "\n".join(lines)


def combine(names, kernels):
    """Print the joint tables of earlier runs (``--combine``)."""
    rows, skipped = [], {}
    for name in names:
        payload = json.loads((OUT_DIR / f"{name}.json").read_text())
        rows += payload.get("rows", [])
        skipped.update(payload.get("skipped", {}))
        if "rss" in payload:
            print(payload["rss"]["table"])
            print()
    if rows:
        table, _ = markdown(cells(rows), kernels)
        print(table)
    for name, reason in skipped.items():
        print(f"\nskipped {name}: {reason}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(DEFAULT_SETS),
                        help="Comma-separated; also gisette_shift (gisette + 1). "
                             "Empty: no accuracy curve.")
    parser.add_argument("--ks", default=",".join(map(str, KS)))
    parser.add_argument("--T", type=int, default=5, help="outer iterations (B = k / T)")
    parser.add_argument("--splits", type=int, default=1)
    parser.add_argument("--refit-max-k", type=int, default=20,
                        help="refit=True only up to this k (the l2 refit of 5,000 "
                             "HIK columns ran over 8 minutes on madelon)")
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--rss-set", default="madelon",
                        help="Set of the peak-RSS processes ('' for none).")
    parser.add_argument("--rss-ks", default="10,20")
    parser.add_argument("--name", default="additive_kernels")
    parser.add_argument("--combine", default=None,
                        help="Comma-separated result names under bench/out: print "
                             "their joint tables instead of running.")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.T)
        return
    if args.combine:
        combine(args.combine.split(","), args.kernels.split(","))
        return
    started = time.perf_counter()
    kernels = args.kernels.split(",")
    payload = {"tie_points": TIE_POINTS, "T": args.T, "splits": args.splits}
    if args.sets:
        rows, skipped = run(args.sets.split(","), [int(k) for k in args.ks.split(",")],
                            args.T, args.splits, kernels, args.refit_max_k)
        cell_map = cells(rows)
        table, tally = markdown(cell_map, kernels)
        print(table)
        for name, reason in skipped.items():
            print(f"\nskipped {name}: {reason}")
        payload.update(rows=rows, skipped=skipped, table=table, tally=tally,
                       cells=[{"set": s, "k": k, "kernel": kn, **c}
                              for (s, k, kn), c in cell_map.items()])
    if args.rss_set:
        sizes, runs = rss(args.rss_set, [int(k) for k in args.rss_ks.split(",")],
                          args.T, kernels)
        rss_table = rss_markdown(args.rss_set, sizes, runs)
        print()
        print(rss_table)
        payload.update(rss={"set": args.rss_set, "sizes": sizes, "runs": runs,
                            "table": rss_table})
    payload.update(seconds=time.perf_counter() - started, peak_rss_mb=peak_rss_mb())
    path = write_result(args.name, payload)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
