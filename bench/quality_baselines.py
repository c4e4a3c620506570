"""The recommended command against the strongest sparse baselines (issue 38).

Question: on every binary set of ``../shared/data``, raw and with rows
scaled to unit length, at k in {10, 20, 50, 100, 200, 300} (k at most the
number of columns), is ``--C auto --refit`` (the recommended command of
bench/README.md §11) at least as accurate on held-out rows as ℓ1-LR,
abess (best subset by splicing), skglm's MCP-penalised LR, and each of
them refitted on its own selection; and which of its losses do the test
rows resolve (exact McNemar test, test rows of all splits pooled)?

Splits and ultrafs' fit are those of ``quality_vs_l1.py`` (the sets' own
train/test parts, else five seeded stratified 70/30 splits; B = k / 10,
T = 10).  Every peer aims at ultrafs' nonzero count on that split (equal
numbers of features): ℓ1-LR by liblinear's C bisected (``l1_bisect``),
abess at that support size, MCP by its strength bisected (see
``baselines/``).  "refit" is the benchmark's ℓ1-LR refit (``l2_refit``:
an ℓ2-LR on the selected columns, C by 5-fold CV) for every peer.
L0Learn is not installable from PyPI here (``baselines.L0LEARN_UNAVAILABLE``).

A peer runs in a forked child process, capped at 10× ultrafs' fit time
on that split (and killed past it); a peer that exceeds the cap or runs
out of memory is reported as such in the table, never as an accuracy.

A cell is the mean test accuracy over the splits; a win / loss needs a gap
of more than ``TIE_POINTS`` points, else it is a tie.

Usage::

    cd bench && python quality_baselines.py --sets colon-cancer,leu [--scalings raw,unit]
        [--ks 10,20] [--splits 5] [--name quality_baselines]
    python quality_baselines.py --combine NAME1,NAME2   # the tables of earlier runs

Results go to ``bench/out/NAME.json`` (rewritten after every fit) and the
markdown tables to stdout.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
import traceback

import numpy as np
import scipy.sparse as sp

from baselines import L0LEARN_UNAVAILABLE, abess_lr, mcp_lr, predict
from common import OUT_DIR, peak_rss_mb, write_result
from mcnemar import discordant, exact_p
from quality_vs_l1 import (SETS, TIE_POINTS, fgm_fit, grid_arguments, l1_bisect, l2_refit,
                           packed, splits, unit_rows, unpacked, verdict)

PEERS = {"abess": abess_lr, "mcp": mcp_lr}
CAP_FACTOR = 10.0
BASELINES = ("l1", "l1_refit", "abess", "abess_refit", "mcp", "mcp_refit")


def _child(module, X, y, k, conn):
    try:
        started = time.perf_counter()
        support, coef, intercept = module.fit(X, y, k)
        conn.send(("ok", (support, coef, intercept, time.perf_counter() - started)))
    except MemoryError:
        conn.send(("memory", None))
    except Exception:        # noqa: BLE001 -- reported in the table, not hidden
        conn.send(("error", traceback.format_exc(limit=3)))
    finally:
        conn.close()


def run_capped(module, X, y, k, cap):
    """``module.fit(X, y, k)`` in a forked child, killed after ``cap`` s.

    Returns ``(status, result)``: ``("ok", (support, coef, intercept,
    seconds))``, ``("time cap", cap)``, ``("memory", None)`` (a MemoryError,
    or the child killed by the system) or ``("error", traceback)``.
    """
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(module, X, y, k, child))
    proc.start()
    child.close()
    if parent.poll(cap):
        try:
            status, result = parent.recv()
        except EOFError:
            status, result = "memory", None
        proc.join()
        return status, result
    proc.kill()
    proc.join()
    if proc.exitcode not in (None, -9):       # died by itself (e.g. OOM killer)
        return "memory", None
    return "time cap", cap


def peer_fit(module, X, y, X_test, y_test, target, cap):
    """One peer on one split: its accuracy, per-row correctness, refit."""
    status, result = run_capped(module, X, y, target, cap)
    if status != "ok":
        return {"status": status, "detail": result if status == "error" else None,
                "cap": cap}
    support, coef, intercept, seconds = result
    correct = predict(X_test, y, support, coef, intercept) == y_test
    refit_accuracy, refit_correct = l2_refit(X, y, X_test, y_test, support,
                                             with_correct=True)
    return {"status": "ok", "accuracy": float(np.mean(correct)), "correct": packed(correct),
            "nnz": int(len(support)), "seconds": seconds, "cap": cap,
            "refit_accuracy": float(refit_accuracy), "refit_correct": packed(refit_correct)}


def warm_up():
    """Compile ultrafs' and skglm's numba kernels in this process, so that
    the forked children and the timed fits do not pay for it."""
    from ultrafs.api import select

    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.standard_normal((60, 30)))
    y = np.where(rng.standard_normal(60) > 0, 1.0, -1.0)
    select(X, y, B=2, max_iter=2, C="auto", refit=True)
    for module in PEERS.values():
        module.fit(X, y, 3)


def run(sets, scalings, ks, n_splits, name, config="recommended", peers=tuple(PEERS)):
    rows = []
    for set_name in sets:
        for scaling in scalings:
            for split, (X, y, Xt, yt) in enumerate(splits(set_name, n_splits)):
                if scaling == "unit":
                    X, Xt = unit_rows(X), unit_rows(Xt)
                l1_cache = {}
                for k in [k for k in ks if k <= X.shape[1]]:
                    fgm = fgm_fit(config, X, y, Xt, yt, k)
                    target = fgm["nnz"]
                    l1 = l1_bisect(X, y, Xt, yt, target, l1_cache)
                    row = {"set": set_name, "scaling": scaling, "split": split, "k": k,
                           "config": config, "n_test": int(len(yt)), "fgm": fgm,
                           "l1": {key: value for key, value in l1.items()
                                  if key not in ("support", "clf")}}
                    row["l1"]["seconds"] = l1["seconds_per_fit"] * l1["fits"]
                    cap = CAP_FACTOR * fgm["seconds"]
                    for peer, module in PEERS.items():
                        row[peer] = (peer_fit(module, X, y, Xt, yt, target, cap)
                                     if peer in peers else
                                     {"status": "not run", "detail": None, "cap": cap})
                    rows.append(row)
                    line = {"set": set_name, "scaling": scaling, "split": split, "k": k,
                            "fgm": round(fgm["accuracy"], 4), "nnz": target,
                            "s": round(fgm["seconds"], 2),
                            "l1": round(l1["accuracy"], 4),
                            "l1_s": round(row["l1"]["seconds"], 2)}
                    for peer in PEERS:
                        fit = row[peer]
                        line[peer] = (round(fit["accuracy"], 4) if fit["status"] == "ok"
                                      else fit["status"])
                        if fit["status"] == "ok":
                            line[peer + "_nnz"] = fit["nnz"]
                            line[peer + "_s"] = round(fit["seconds"], 2)
                    print(json.dumps(line), flush=True)
                    write_result(name, {"rows": rows, "n_splits": n_splits,
                                        "peak_rss_mb": peak_rss_mb(),
                                        "tie_points": TIE_POINTS,
                                        "l0learn": L0LEARN_UNAVAILABLE})
    return rows


def _correct(row, which):
    """Per-row correctness (n_test,) of a baseline in a row, or None where
    the peer did not run (time cap, memory, error)."""
    peer, _, refit = which.partition("_")
    fit = row[peer]
    if fit.get("status", "ok") != "ok":
        return None
    return unpacked(fit["refit_correct" if refit else "correct"], row["n_test"])


def _accuracy(row, which):
    peer, _, refit = which.partition("_")
    return row[peer]["refit_accuracy" if refit else "accuracy"]


def paired_cell(group, which):
    """ultrafs against one baseline over a cell's splits: ``(delta, b, c, p,
    n)`` (mean accuracy gap in points; discordant rows, exact McNemar p and
    test rows, splits pooled), or None where the peer did not run on a split."""
    theirs = [_correct(r, which) for r in group]
    if any(x is None for x in theirs):
        return None
    mine = np.concatenate([unpacked(r["fgm"]["correct"], r["n_test"]) for r in group])
    b, c = discordant(mine, np.concatenate(theirs))
    delta = 100 * float(np.mean([r["fgm"]["accuracy"] - _accuracy(r, which)
                                 for r in group]))
    return delta, b, c, exact_p(b, c), len(mine)


def cell_groups(rows):
    groups = {}
    for row in rows:
        groups.setdefault((row["set"], row["scaling"], row["k"]), []).append(row)
    return groups


def _status(group, peer):
    bad = [r[peer]["status"] for r in group if r[peer]["status"] != "ok"]
    if not bad:
        return None
    caps = [r[peer]["cap"] for r in group if r[peer]["status"] == "time cap"]
    word = max(set(bad), key=bad.count)
    if word == "time cap":
        word = f"time cap ({np.mean(caps):.1f} s)"
    return f"{word} {len(bad)}/{len(group)}"


def expected_splits(set_name, n_splits):
    """Number of splits of a set: 1 for its own train/test parts, else ``n_splits``."""
    _, test, n_train = SETS[set_name]
    return 1 if test is not None or n_train is not None else n_splits


def complete_cells(rows, n_splits):
    """The rows of the cells that hold every split (a run stopped early leaves
    some cells short), and the names of the cells left out."""
    groups = cell_groups(rows)
    keep, left_out = [], []
    for (set_name, scaling, k), group in groups.items():
        if len(group) == expected_splits(set_name, n_splits):
            keep += group
        else:
            left_out.append(f"{set_name} {scaling} k={k} ({len(group)} of "
                            f"{expected_splits(set_name, n_splits)} splits)")
    return keep, left_out


def cell_table(rows):
    """Mean test accuracy per cell and seconds per model: markdown lines.

    The seconds are those of the model at k (ultrafs' whole fit, C by CV
    and the refit included; abess' one fit at support size k; ℓ1-LR's and
    MCP's whole bisection to k nonzeros), without the peers' refits.
    """
    lines = ["| set | rows | k | ultrafs % (nnz) | ℓ1-LR % | ℓ1 refit % | abess % | "
             "abess refit % | MCP % | MCP refit % | s ultrafs / ℓ1 / abess / MCP |",
             "|" + "---|" * 11]
    for (set_name, scaling, k), group in cell_groups(rows).items():
        mean = lambda f: 100 * float(np.mean([f(r) for r in group]))  # noqa: E731
        parts = [f"{mean(lambda r: r['fgm']['accuracy']):.2f} "
                 f"({np.mean([r['fgm']['nnz'] for r in group]):.0f})",
                 f"{mean(lambda r: r['l1']['accuracy']):.2f}",
                 f"{mean(lambda r: r['l1']['refit_accuracy']):.2f}"]
        seconds = [np.mean([r["fgm"]["seconds"] for r in group]),
                   np.mean([r["l1"]["seconds"] for r in group])]
        for peer in PEERS:
            status = _status(group, peer)
            if status:
                parts += [status, status]
                seconds.append(None)
            else:
                parts += [f"{mean(lambda r: r[peer]['accuracy']):.2f}",
                          f"{mean(lambda r: r[peer]['refit_accuracy']):.2f}"]
                seconds.append(np.mean([r[peer]["seconds"] for r in group]))
        s = " / ".join("—" if v is None else f"{v:.2f}" for v in seconds)
        lines.append(f"| {set_name} | {scaling} | {k} | {' | '.join(parts)} | {s} |")
    return lines


def judgement(rows, alpha=0.05):
    """Wins / ties / losses per set and baseline, the McNemar-resolved ones,
    and the list of resolved losses: markdown lines."""
    tally, resolved = {}, []
    for (set_name, scaling, k), group in cell_groups(rows).items():
        for which in BASELINES:
            t = tally.setdefault((set_name, which), {
                "cells": 0, "win": 0, "tie": 0, "loss": 0, "win_p": 0, "loss_p": 0,
                "not run": 0, "delta": []})
            paired = paired_cell(group, which)
            if paired is None:
                t["not run"] += 1
                continue
            delta, b, c, p, n = paired
            outcome = verdict(delta)
            t["cells"] += 1
            t[outcome] += 1
            t["delta"].append(delta)
            if outcome != "tie" and p < alpha:
                t[outcome + "_p"] += 1
                if outcome == "loss":
                    resolved.append((set_name, scaling, k, which, delta, b, c, p, n))
    lines = [f"| set | against | cells | wins (p < {alpha}) | ties | losses (p < {alpha}) | "
             "mean Δ points | cells not run |", "|" + "---|" * 8]
    totals = {}
    for (set_name, which), t in tally.items():
        mean = f"{np.mean(t['delta']):+.2f}" if t["delta"] else "—"
        lines.append(f"| {set_name} | {which} | {t['cells']} | {t['win']} ({t['win_p']}) | "
                     f"{t['tie']} | {t['loss']} ({t['loss_p']}) | {mean} | {t['not run']} |")
        total = totals.setdefault(which, {key: ([] if key == "delta" else 0) for key in t})
        for key, value in t.items():
            total[key] = total[key] + value
    for which in BASELINES:
        if which in totals:
            t = totals[which]
            mean = f"{np.mean(t['delta']):+.2f}" if t["delta"] else "—"
            lines.append(f"| **all** | {which} | {t['cells']} | {t['win']} ({t['win_p']}) | "
                         f"{t['tie']} | {t['loss']} ({t['loss_p']}) | {mean} | "
                         f"{t['not run']} |")
    lines += ["", f"Losses the test rows resolve (p < {alpha}; b rows only ultrafs right, "
              "c only the baseline; splits pooled):", "",
              "| set | rows | k | against | Δ points | b | c | p | test rows |",
              "|" + "---|" * 9]
    for set_name, scaling, k, which, delta, b, c, p, n in resolved:
        lines.append(f"| {set_name} | {scaling} | {k} | {which} | {delta:+.2f} | {b} | {c} | "
                     f"{p:.2g} | {n} |")
    if not resolved:
        lines.append("| (none) | | | | | | | | |")
    return lines


def plain_losses(plain_rows, alpha=0.05, points=1.0):
    """The plain defaults' losses to ℓ1-LR of more than ``points`` that the
    test rows resolve, per set: ``{set: ["raw k=20 (-1.50, p=0.03)", ...]}``
    and the sets' cell counts, from ``quality_vs_l1.py`` rows of config
    ``plain`` (splits pooled as in :func:`judgement`)."""
    groups, counts = {}, {}
    for row in plain_rows:
        if row.get("config") != "plain" or "l1" not in row:
            continue
        groups.setdefault((row["set"], row["scaling"], row["k"]), []).append(row)
    losses = {}
    for (set_name, scaling, k), group in groups.items():
        counts[set_name] = counts.get(set_name, 0) + 1
        mine = np.concatenate([unpacked(r["fgm"]["correct"], r["n_test"]) for r in group])
        theirs = np.concatenate([unpacked(r["l1"]["correct"], r["n_test"]) for r in group])
        b, c = discordant(mine, theirs)
        p = exact_p(b, c)
        delta = 100 * float(np.mean([r["fgm"]["accuracy"] - r["l1"]["accuracy"]
                                     for r in group]))
        if delta < -points and p < alpha:
            losses.setdefault(set_name, []).append(f"{scaling} k={k} ({delta:+.2f}, "
                                                   f"p={p:.2g})")
    return losses, counts


def criteria(rows, plain_rows=(), alpha=0.05):
    """Issue 38's acceptance per set: markdown lines.

    The recommended command's mean lead over ℓ1-LR (cells of all splits;
    the criterion is ≥ +0.5 point), its losses resolved by McNemar against
    each baseline (none allowed), and the plain defaults' resolved losses
    of more than 1 point against ℓ1-LR (none allowed; from ``plain_rows``,
    ``quality_vs_l1.py --configs plain`` rows).
    """
    plain, plain_cells = plain_losses(plain_rows, alpha)
    by_set = {}
    for (set_name, scaling, k), group in cell_groups(rows).items():
        entry = by_set.setdefault(set_name, {"cells": 0, "lead": [], "losses": []})
        entry["cells"] += 1
        entry["lead"].append(100 * float(np.mean([r["fgm"]["accuracy"] - r["l1"]["accuracy"]
                                                  for r in group])))
        for which in BASELINES:
            paired = paired_cell(group, which)
            if paired is None:
                continue
            delta, _, _, p, _ = paired
            if verdict(delta) == "loss" and p < alpha:
                entry["losses"].append(f"{scaling} k={k} vs {which} ({delta:+.2f}, "
                                       f"p={p:.2g})")
    lines = ["| set | cells | mean lead over ℓ1-LR (≥ +0.5) | McNemar-resolved "
             "losses (none) | plain: resolved losses > 1 point vs ℓ1-LR "
             "(none) | met |", "|" + "---|" * 6]
    for set_name, entry in by_set.items():
        lead = float(np.mean(entry["lead"]))
        plain_set = plain.get(set_name, [])
        plain_text = ("; ".join(plain_set) or "none") if set_name in plain_cells \
            else "not run"
        met = lead >= 0.5 and not entry["losses"] and not plain_set \
            and set_name in plain_cells
        lines.append(f"| {set_name} | {entry['cells']} | {lead:+.2f} | "
                     f"{'; '.join(entry['losses']) or 'none'} | {plain_text} | "
                     f"{'yes' if met else 'no'} |")
    return lines


def report(rows):
    return "\n".join(cell_table(rows) + [""] + judgement(rows)
                     + ["", L0LEARN_UNAVAILABLE + "."])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    grid_arguments(parser)
    parser.add_argument("--name", default="quality_baselines")
    parser.add_argument("--peers", default=",".join(PEERS),
                        help="Comma-separated peers to run besides l1-LR (empty: none; "
                             "the others are recorded as 'not run').")
    parser.add_argument("--config", default="recommended",
                        help="ultrafs' configuration (quality_vs_l1.py's names: "
                             "recommended, recommended:std, plain, ...).")
    parser.add_argument("--combine", default=None,
                        help="Comma-separated result names under bench/out: print "
                             "their joint tables instead of running (NAME:N: the "
                             "first N splits of a run stopped early).")
    parser.add_argument("--plain", default=None,
                        help="With --combine: comma-separated quality_vs_l1.py result "
                             "names with plain-default rows, for the criteria table.")
    args = parser.parse_args(argv)
    if args.combine:
        rows, left_out = [], []
        for name in args.combine.split(","):
            # NAME:N judges a run stopped early on its first N splits
            name, _, first = name.partition(":")
            result = json.loads((OUT_DIR / f"{name}.json").read_text())
            n_splits = int(first) if first else result.get("n_splits", args.splits)
            rows_of = [r for r in result["rows"] if r["split"] < n_splits]
            # a cell is complete with every split of its own run
            kept, short = complete_cells(rows_of, n_splits)
            rows += kept
            left_out += short
        print(report(rows))
        plain_rows = []
        for name in (args.plain or "").split(",") if args.plain else []:
            plain_rows += json.loads((OUT_DIR / f"{name}.json").read_text())["rows"]
        print("\n" + "\n".join(criteria(rows, plain_rows)))
        if left_out:
            print("\nCells left out (a run stopped before all their splits): "
                  + "; ".join(left_out))
        return
    warm_up()
    rows = run(args.sets.split(","), args.scalings.split(","),
               [int(k) for k in args.ks.split(",")], args.splits, args.name, args.config,
               tuple(p for p in args.peers.split(",") if p))
    print(report(rows))


if __name__ == "__main__":
    main()
