"""Issue 35 item 7: the ℓ1 path's KKT check, before/after, against skglm.

Question: with the KKT check reading only the columns a bound cannot
certify, on the store's decoded copy in memory, is ``ultrafs path
--screening slores`` on imdb50k (25,000 × 2,482,617, the 86-point grid
λ/λ_max = 0.95 … 0.10, tol 1e-6) at most 0.07× skglm's fits on the same
grid (bench/notes/16-l1-path-slores.md, "Peers on the same grid"), and
what share of the path is the KKT check before and after?

Protocol: paired, interleaved rounds on the same machine; each round runs,
in an order rotated per round,

* ``before``: ``ultrafs path`` from a ``git archive`` of the base commit
  (``--base``, extracted to /tmp and put first on PYTHONPATH);
* ``after``: ``ultrafs path`` from this checkout;
* ``skglm``: a child process that loads the LIBSVM text (timed apart, as
  in §16), warms skglm on a 200-row slice, then fits
  ``SparseLogisticRegression(alpha=λ, tol=1e-6·λ, fit_intercept=True,
  warm_start=True)`` λ by λ on the grid of the ``after`` run (fits timed);

each under GNU time (wall, peak RSS), with the 1-minute load recorded.
Ratios are per round (ultrafs wall, start-up included, over skglm's fits),
then the median.  Identity: the after path's supports, coefficients,
objectives and KKT residuals against the before path's.

Usage::

    python bench/issue35_l1path.py [--rounds 3] [--base 3db43cf] [--name issue35_l1path]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from common import OUT_DIR, run_measured, write_result

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

PHASES = ("seconds_screening", "seconds_fetch", "seconds_solving", "seconds_kkt")


def base_tree(commit):
    """``git archive COMMIT ultrafs kernels`` under /tmp (made once)."""
    target = Path(f"/tmp/ultrafs_{commit}")
    if not (target / "ultrafs").exists():
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(f"git -C {REPO} archive {commit} ultrafs kernels | tar -x -C {target}",
                       shell=True, check=True)
    return target


def ultrafs_path(pythonpath, store, out):
    # the console script, not ``python -m``: -m puts the working directory
    # (this checkout) before PYTHONPATH on sys.path
    exe = shutil.which("ultrafs") or str(Path(sys.executable).parent / "ultrafs")
    env_cmd = ["env", f"PYTHONPATH={pythonpath}", exe, "path", "--data", str(store), "--screening", "slores",
               "--n-lambdas", "86", "--lambda-min-ratio", "0.1", "--tol", "1e-06",
               "--scheduler", "threads", "--out", str(out), "--no-progress"]
    load = os.getloadavg()[0]
    measured = run_measured(env_cmd)
    doc = json.loads(Path(out).read_text())
    steps = doc["path"]
    probe = subprocess.run(["env", f"PYTHONPATH={pythonpath}", sys.executable, "-c",
                            "import ultrafs; print(ultrafs.__file__)"], cwd="/tmp",
                           capture_output=True, text=True).stdout.strip()
    phases = {key: float(sum(step[key] for step in steps)) for key in PHASES}
    inside = doc["statistics_seconds"] + sum(phases.values())
    return {"wall": measured["seconds"], "peak_rss_mb": measured["peak_rss_mb"],
            "load": load, "statistics_seconds": doc["statistics_seconds"],
            **phases, "kkt_share": phases["seconds_kkt"] / inside,
            "kkt_share_of_wall": phases["seconds_kkt"] / measured["seconds"],
            "kkt_columns_read": int(sum(step.get("kkt_columns_read", 0) for step in steps)),
            "kkt_full_passes": int(sum(step.get("kkt_full_passes", 0) for step in steps)),
            "kept": int(sum(step["kept"] for step in steps)),
            "imported": probe,
            "command": " ".join(["ultrafs", *env_cmd[3:]]).replace(str(REPO) + "/", "")}


def skglm_child(args):
    """In the child: load, warm, fit the grid; print one JSON line."""
    import warnings

    import scipy.sparse as sp
    from skglm import SparseLogisticRegression
    from sklearn.datasets import load_svmlight_file

    grid = np.array(json.loads(Path(args.grid).read_text()))
    started = time.perf_counter()
    X, y = load_svmlight_file(args.text, n_features=args.n_features, zero_based=False)
    y = np.where(y > 0, 1.0, -1.0)
    X = sp.csc_matrix(X, dtype=np.float64)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    load_seconds = time.perf_counter() - started

    def path(X, y, lams):
        model = SparseLogisticRegression(alpha=lams[0], tol=1e-6 * lams[0],
                                         fit_intercept=True, warm_start=True,
                                         max_iter=200)
        out = []
        for lam in lams:
            model.set_params(alpha=lam, tol=1e-6 * lam)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X, y)
            coef = np.asarray(model.coef_, dtype=np.float64).ravel()
            c = float(np.ravel(model.intercept_)[0])
            f = X @ coef + c
            obj = float(np.logaddexp(0, -y * f).mean() + lam * np.abs(coef).sum())
            out.append((int(np.count_nonzero(coef)), obj))
        return out

    sub = sp.csc_matrix(X[:200])
    sub.indices = sub.indices.astype(np.int32)
    sub.indptr = sub.indptr.astype(np.int32)
    path(sub, y[:200], grid[len(grid) // 2:len(grid) // 2 + 1])
    started = time.perf_counter()
    fitted = path(X, y, grid)
    fits = time.perf_counter() - started
    print(json.dumps({"fits_seconds": fits, "load_seconds": load_seconds,
                      "nnz": [a for a, _ in fitted], "objective": [b for _, b in fitted]}))


def run_skglm(text, n_features, grid_file):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--skglm-child",
           "--text", str(text), "--n-features", str(n_features), "--grid", str(grid_file)]
    load = os.getloadavg()[0]
    measured = run_measured(cmd)
    doc = json.loads(measured["stdout"].strip().splitlines()[-1])
    return {"wall": measured["seconds"], "peak_rss_mb": measured["peak_rss_mb"],
            "load": load, **doc}


def identity(before, after):
    a = json.loads(Path(before).read_text())["path"]
    b = json.loads(Path(after).read_text())["path"]
    same = coef = obj = 0.0
    same = 0
    for x, z in zip(a, b):
        if x["features"] == z["features"]:
            same += 1
            if x["coef"]:
                coef = max(coef, float(np.max(np.abs(np.subtract(x["coef"], z["coef"])))))
        obj = max(obj, abs(x["objective"] - z["objective"]) / abs(x["objective"]))
    return {"lambdas": len(b), "same_supports": same, "max_abs_coef_diff": coef,
            "max_rel_objective_diff": obj,
            "max_kkt_before": max(x["kkt"] for x in a),
            "max_kkt_after": max(z["kkt"] for z in b),
            "violators_found_after": int(sum(z["kkt_violations_found"] for z in b)),
            "bit_identical_models": all(x["features"] == z["features"]
                                        and x["coef"] == z["coef"]
                                        and x["intercept"] == z["intercept"]
                                        for x, z in zip(a, b))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", default="3db43cf")
    parser.add_argument("--name", default="issue35_l1path")
    parser.add_argument("--skglm-child", action="store_true")
    parser.add_argument("--text")
    parser.add_argument("--n-features", type=int)
    parser.add_argument("--grid")
    args = parser.parse_args(argv)
    if args.skglm_child:
        return skglm_child(args)

    from slores_path import IMDB_FEATURES, imdb_text, ingest_once

    text = imdb_text()
    store = OUT_DIR / "imdb50k_train.zarr"
    ingest_once(text, store, IMDB_FEATURES)
    base = base_tree(args.base)
    outs = {"before": OUT_DIR / f"{args.name}_before.json",
            "after": OUT_DIR / f"{args.name}_after.json"}
    paths = {"before": str(base), "after": str(REPO)}
    # warm-up (numba caches of both trees; the grid for skglm), untimed
    for label in ("before", "after"):
        ultrafs_path(paths[label], store, outs[label])
    grid = [step["lambda"] for step in json.loads(outs["after"].read_text())["path"]]
    grid_file = OUT_DIR / f"{args.name}_grid.json"
    grid_file.write_text(json.dumps(grid))
    rounds = []
    order = ["before", "after", "skglm"]
    for r in range(args.rounds):
        row = {}
        for label in order[r % 3:] + order[:r % 3]:
            if label == "skglm":
                row[label] = run_skglm(text, IMDB_FEATURES, grid_file)
            else:
                row[label] = ultrafs_path(paths[label], store, outs[label])
            print(f"round {r} {label}: {row[label]['wall'] if label != 'skglm' else row[label]['fits_seconds']:.2f} s"
                  f" (load {row[label]['load']:.2f})", flush=True)
        row["after_over_skglm"] = row["after"]["wall"] / row["skglm"]["fits_seconds"]
        row["before_over_skglm"] = row["before"]["wall"] / row["skglm"]["fits_seconds"]
        row["after_over_before"] = row["after"]["wall"] / row["before"]["wall"]
        rounds.append(row)
    doc = {"rounds": rounds, "identity": identity(outs["before"], outs["after"]),
           "base": args.base, "uptime": subprocess.run(["uptime"], capture_output=True,
                                                        text=True).stdout.strip()}
    for key in ("after_over_skglm", "before_over_skglm", "after_over_before"):
        doc[f"median_{key}"] = float(np.median([row[key] for row in rounds]))
    after_models = json.loads(outs["after"].read_text())["path"]
    sk = rounds[-1]["skglm"]
    doc["skglm_vs_after"] = {
        "max_rel_objective_gap": max(abs(s - a["objective"]) / a["objective"]
                                     for s, a in zip(sk["objective"], after_models)),
        "same_nnz": int(sum(s == a["nnz"] for s, a in zip(sk["nnz"], after_models)))}
    path = write_result(args.name, doc)
    print(json.dumps({k: v for k, v in doc.items() if k != "rounds"}, indent=1))
    print(path)


if __name__ == "__main__":
    main()
