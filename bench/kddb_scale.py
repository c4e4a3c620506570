"""kddb-like degree-2 selection against the number of rows (issue 11).

Question: how do wall time, CPU use per phase and peak RSS of the users'
command ``ultrafs select --data STORE --poly 2 --gamma 4 --B 50
--max-iter 10 --tol 0`` grow with the rows, on data of kddb's full width
(29,890,095 features, ~29 nonzeros per row, made by
``tools/make_kddb_like.py``)?  Goals of the issue: ×3 rows → at most ×3.3
time; RSS growth only from O(n) vectors; CPU use ≥ 180% on 2 cores in
scoring and in solving; every planted term recovered.

Usage::

    python bench/kddb_scale.py NAME=TRAIN.zarr[:TEST.zarr] ... [--result NAME]

Each store is run once as a child process (GNU time gives the peak RSS);
the model's history gives the seconds, CPU seconds and peak RSS of each
phase (``score``, ``solve``), the test store (if given) the accuracy, and
the store's ``planted`` attribute the terms recovered.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from common import run_measured, write_result

COMMAND = ["--poly", "2", "--gamma", "4", "--B", "50", "--max-iter", "10",
           "--tol", "0"]


def planted_recovery(model, store_path):
    from ultrafs.store import open_store

    planted = open_store(store_path).attrs.get("planted")
    if not planted:
        return {}
    chosen = {tuple(f) if isinstance(f, list) else f for f in model["features"]}
    linear = [j for j in planted["linear"] if j in chosen or (j, j) in chosen]
    cross = [tuple(p) for p in planted["cross"] if tuple(p) in chosen]
    return {"linear_recovered": f"{len(linear)}/{len(planted['linear'])}",
            "cross_recovered": f"{len(cross)}/{len(planted['cross'])}"}


def phase_figures(history):
    """Total wall and CPU seconds, CPU use and peak RSS of each phase."""
    out = {}
    for phase in ("score", "materialize", "solve"):
        wall = sum(h.get(f"{phase}_seconds", 0.0) for h in history)
        out[f"{phase}_s"] = round(wall, 1)
        cpu = [h.get(f"{phase}_cpu_seconds") for h in history]
        if all(c is not None for c in cpu) and wall > 0:
            out[f"{phase}_cpu_use"] = f"{100 * sum(cpu) / wall:.0f}%"
        peaks = [h.get(f"{phase}_peak_rss_mb") for h in history]
        if all(p is not None for p in peaks):
            out[f"{phase}_peak_mb"] = max(peaks)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="NAME=TRAIN.zarr[:TEST.zarr]")
    parser.add_argument("--result", default="kddb_scale")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for spec in args.runs:
            name, paths = spec.split("=", 1)
            train, _, test = paths.partition(":")
            model_path = Path(work) / f"{name}.json"
            run = run_measured([sys.executable, "-m", "ultrafs.cli", "select",
                                "--data", train, *COMMAND, "--out", str(model_path)])
            model = json.loads(model_path.read_text())
            row = {"name": name, "wall_s": round(run["seconds"], 1),
                   "peak_rss_mb": round(run["peak_rss_mb"]),
                   **phase_figures(model["history"]),
                   **planted_recovery(model, train), "stop": model["stop_reason"]}
            if test:
                evaluation = json.loads(run_measured(
                    [sys.executable, "-m", "ultrafs.cli", "evaluate", "--model",
                     str(model_path), "--data", test])["stdout"])
                row["test_accuracy"] = evaluation.get("accuracy")
            row["history"] = model["history"]
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "history"}),
                  flush=True)
    write_result(args.result, {"command": ["ultrafs", "select", *COMMAND],
                               "rows": rows})


if __name__ == "__main__":
    main()
