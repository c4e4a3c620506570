"""What the warm start along the grid of C saves, and that it keeps the selections.

For a set (first split of ``quality_vs_l1.py``'s protocol, then the 80% part
of ``C="auto"``'s stratified hold-out, seed 0) and budget k: FGM at the
first ``--grid`` values of ``C="auto"``'s grid, once cold and once sharing
a :class:`ultrafs.methods.fgm.GridWarmStart`; the subproblems that started
warm, the Newton (or APG) iterations of all subproblems, their CPU seconds,
and whether every warm fit selected what the cold fit selected.

    cd bench && python grid_warm_start.py --cases imdb_unigram:50,gisette:50
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from common import write_result
import quality_vs_l1 as protocol


def run(name, k, n_grid):
    from ultrafs.features import LinearFeatures
    from ultrafs.methods import validation as val
    from ultrafs.methods.fgm import GridWarmStart, fit_fgm
    from ultrafs.store import InMemoryStore

    X, y, _, _ = next(protocol.splits(name, 5))
    y = np.where(y > 0, 1, -1)
    train, _ = val.stratified_split(y, val.DEFAULT_VALIDATION_FRACTION, 0)
    space = LinearFeatures(InMemoryStore(X[train], y[train]))
    B, T = protocol.budget(k)
    grid = val.c_grid(val.default_C(space))[:n_grid]
    warm = GridWarmStart()
    totals = {"cold": [0, 0.0], "warm": [0, 0.0]}
    same = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_fgm(space, y[train], B=B, max_iter=T, C=grid[0])     # compile
        for C in grid:
            fits = {}
            for mode in ("cold", "warm"):
                fits[mode] = fit_fgm(space, y[train], B=B, max_iter=T, C=C,
                                     warm_start=warm if mode == "warm" else None)
                totals[mode][0] += sum(r["inner_iterations"] for r in fits[mode].history)
                totals[mode][1] += sum(r["solve_cpu_seconds"] for r in fits[mode].history)
            same.append(bool(np.array_equal(fits["cold"].keys, fits["warm"].keys)))
    first = len(fits["warm"].history)
    row = {"set": name, "k": k, "grid": grid, "subproblems": warm.lookups,
           "warm_starts": warm.hits, "later_subproblems": warm.lookups - first,
           "iterations_cold": totals["cold"][0], "iterations_warm": totals["warm"][0],
           "solve_cpu_cold": totals["cold"][1], "solve_cpu_warm": totals["warm"][1],
           "same_selections": same}
    print(f"{name} k={k}, {n_grid} grid values: {row['warm_starts']} of "
          f"{row['subproblems']} subproblems started warm; iterations "
          f"{row['iterations_cold']} -> {row['iterations_warm']}, solve CPU "
          f"{row['solve_cpu_cold']:.2f} -> {row['solve_cpu_warm']:.2f} s; same "
          f"selections: {same}", flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="imdb_unigram:50,gisette:50")
    parser.add_argument("--grid", type=int, default=5)
    parser.add_argument("--name", default="grid_warm_start")
    args = parser.parse_args()
    rows = [run(case.split(":")[0], int(case.split(":")[1]), args.grid)
            for case in args.cases.split(",")]
    write_result(args.name, {"rows": rows})


if __name__ == "__main__":
    main()
