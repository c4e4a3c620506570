"""Issue 35 (items 4 and 8): the estimator path, the CLI's fixed cost, the streamed pass.

Questions, each a ratio against a peer measured in the same invocation
(the machine is shared: rounds are interleaved, their order alternates,
medians of the per-round ratios are reported with the load average):

(s) start-up: how long a standalone ``ultrafs select`` takes before its
    first pass starts (wall and the process's CPU seconds until then, read
    from the ``ULTRAFS_FIRST_PASS_MARK`` file that ``scoring/runner.py``
    writes), next to ``python -c pass``, ``python -c "import numpy"`` and
    ``ultrafs --help``.  Goal: at most 1.5 s.
(a/b) ``ultrafs select --B 30 --max-iter 10`` on the Zarr store of imdb50k's
    train half, as a process, against (b) the peer the project uses:
    a process that loads the same LIBSVM text with scikit-learn and fits
    liblinear's l1-LR (C = 0.02, ~290 nonzeros; ``imdb_side_by_side.py``).
    The authors' C++ toolkit was never built in this project (see
    bench/notes/06-imdb-speed.md): (b) stands in for it.  Goal: a/b <= 0.3.
(e) in one process: ``FGMClassifier(B=30, max_iter=10).fit(X, y)`` with X the
    train half as a scipy CSR matrix, against liblinear's l1-LR fit
    (C = 0.02) on the same matrix, plus ``X.tocsc()`` against the
    conversion into the column store (``InMemoryStore(X, y)``), and how
    much of the fit is the subproblem solve (the model's history).
    Goals: fit <= 0.3 x liblinear; conversion about the time of tocsc.
(p) one thread: the scoring pass from the Zarr store (``worst_case_analysis``
    on ``LinearFeatures``, scheduler threads with 1 worker, B = 30) against
    scipy's ``X.T @ v`` on an in-memory CSC copy (scipy is single-threaded).
    Ratio = seconds of X.T @ v / seconds of the pass (throughput of the
    pass relative to scipy's).  Goal: >= 0.6.

Every child runs from a neutral folder with ``PYTHONPATH=CHECKOUT``, so
that ``--baseline`` (another checkout, e.g. /work/main) gives the before
figures of (a), (e) and (p) in the same rounds.

Usage::

    python bench/io_acceptance.py [--rounds 3] [--baseline /work/main]
        [--only s,ab,e,p]

Results: printed, and written to ``bench/out/io_acceptance.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import OUT_DIR, write_result
from imdb_side_by_side import SKLEARN_SCRIPT, WORK, run_measured, text_file

ROOT = Path(__file__).resolve().parents[1]

ESTIMATOR_SCRIPT = r"""
import json, sys, time, warnings
import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from ultrafs import FGMClassifier
from ultrafs.store import InMemoryStore

X = sp.load_npz(sys.argv[1]).tocsr()
y = np.load(sys.argv[2])
first = sys.argv[3]                     # "fgm" or "liblinear": which goes first

def clock(f):
    wall, cpu = time.perf_counter(), time.process_time()
    result = f()
    return result, time.perf_counter() - wall, time.process_time() - cpu

def liblinear():
    X32 = X.copy()
    X32.indices = X32.indices.astype(np.int32); X32.indptr = X32.indptr.astype(np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        model, wall, cpu = clock(lambda: LogisticRegression(
            penalty="l1", solver="liblinear", C=0.02).fit(X32, y))
    return {"seconds": wall, "cpu_seconds": cpu, "nonzeros": int((model.coef_ != 0).sum())}

def fgm():
    clf, wall, cpu = clock(lambda: FGMClassifier(B=30, max_iter=10).fit(X, y))
    history = clf.history_
    return {"seconds": wall, "cpu_seconds": cpu, "nonzeros": int(len(clf.selected_features_)),
            "solve_seconds": sum(h["solve_seconds"] for h in history),
            "score_seconds": sum(h["score_seconds"] for h in history),
            "solve_cpu_seconds": sum(h["solve_cpu_seconds"] for h in history)}

def conversion():
    # the first conversion of a process also imports numba and loads the
    # two conversion kernels: timed separately, on a small matrix of the
    # same dtypes
    rows = np.r_[np.flatnonzero(y > 0)[:25], np.flatnonzero(y < 0)[:25]]
    _, first, first_cpu = clock(lambda: InMemoryStore(X[rows], y[rows]))
    _, tocsc, tocsc_cpu = clock(lambda: X.tocsc())
    _, store, store_cpu = clock(lambda: InMemoryStore(X, y))
    return {"first_call_small_seconds": first, "first_call_small_cpu_seconds": first_cpu,
            "tocsc_seconds": tocsc, "store_seconds": store,
            "tocsc_cpu_seconds": tocsc_cpu, "store_cpu_seconds": store_cpu}

out = {"conversion": conversion()}
for name in ((first, "liblinear" if first == "fgm" else "fgm")):
    out[name] = fgm() if name == "fgm" else liblinear()
print(json.dumps(out))
"""

PASS_SCRIPT = r"""
import json, statistics, sys, time
import numpy as np
import scipy.sparse as sp
from ultrafs.allocator import map_large_allocations
map_large_allocations()                 # as the command line runs
from ultrafs.features.linear import LinearFeatures
from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.store import open_store

store = open_store(sys.argv[1])
repeat = int(sys.argv[2])
v = np.random.default_rng(0).random(store.n_samples) * store.read_labels()
whole = store.read_range(0, store.n_features)
X = sp.csc_matrix((whole.values(np.float32), whole.indices, whole.indptr),
                  shape=(store.n_samples, store.n_features))
del whole
space = LinearFeatures(store)

def scipy_pass():
    return X.T @ v

def zarr_pass():
    return worst_case_analysis(space, v, 30, scheduler="threads", num_workers=1)

def clock(f):
    wall, cpu = time.perf_counter(), time.process_time()
    f()
    return time.perf_counter() - wall, time.process_time() - cpu

for f in (scipy_pass, zarr_pass):       # warm: kernels, page cache
    f()
runs = {"scipy": [], "zarr": []}
for i in range(repeat):
    for name in (("scipy", "zarr") if i % 2 == 0 else ("zarr", "scipy")):
        runs[name].append(clock(scipy_pass if name == "scipy" else zarr_pass))
ratios = [s[0] / z[0] for s, z in zip(runs["scipy"], runs["zarr"])]
cpu_ratios = [s[1] / z[1] for s, z in zip(runs["scipy"], runs["zarr"])]
print(json.dumps({"nnz": int(store.nnz),
                  "scipy_seconds": statistics.median(r[0] for r in runs["scipy"]),
                  "zarr_seconds": statistics.median(r[0] for r in runs["zarr"]),
                  "scipy_cpu_seconds": statistics.median(r[1] for r in runs["scipy"]),
                  "zarr_cpu_seconds": statistics.median(r[1] for r in runs["zarr"]),
                  "ratio": statistics.median(ratios),
                  "cpu_ratio": statistics.median(cpu_ratios)}))
"""


def child_env(checkout):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(checkout)
    return env


def run_child(args, checkout, *, env_extra=None):
    """Run ``python ARGS`` from a neutral folder with ``checkout``'s ultrafs."""
    env = child_env(checkout)
    env.update(env_extra or {})
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env=env, cwd=WORK)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{args[:2]} failed ({proc.returncode}):\n{proc.stderr}")
    return proc, wall


def startup_once(checkout, store):
    """Wall and CPU seconds of a select until its first pass (one child)."""
    with tempfile.TemporaryDirectory() as folder:
        mark = Path(folder) / "mark"
        started = time.time()
        proc, wall = run_child(["-m", "ultrafs.cli", "select", "--data", str(store),
                                "--B", "30", "--max-iter", "1", "--no-progress",
                                "--out", str(Path(folder) / "m.json")], checkout,
                               env_extra={"ULTRAFS_FIRST_PASS_MARK": str(mark)})
        at, cpu = (float(x) for x in mark.read_text().split())
    return {"first_pass_seconds": at - started, "first_pass_cpu_seconds": cpu,
            "select_max_iter_1_seconds": wall}


def startup_rounds(args, store):
    rows = {"python -c pass": ["-c", "pass"],
            "python -c 'import numpy'": ["-c", "import numpy"],
            "python -c 'import numpy, numba'": ["-c", "import numpy, numba"],
            "ultrafs --help": ["-m", "ultrafs.cli", "--help"]}
    results = {name: [] for name in rows}
    results["select"] = []
    for r in range(args.rounds):
        names = list(results) if r % 2 == 0 else list(reversed(results))
        for name in names:
            if name == "select":
                results[name].append(startup_once(ROOT, store))
            else:
                results[name].append({"seconds": run_child(rows[name], ROOT)[1]})
    summary = {name: statistics.median(x["seconds"] for x in runs)
               for name, runs in results.items() if name != "select"}
    for key in ("first_pass_seconds", "first_pass_cpu_seconds",
                "select_max_iter_1_seconds"):
        summary[f"select {key}"] = statistics.median(x[key] for x in results["select"])
    summary["select first_pass_range"] = [
        min(x["first_pass_seconds"] for x in results["select"]),
        max(x["first_pass_seconds"] for x in results["select"])]
    print("(s) start-up, medians:")
    for name, value in summary.items():
        print(f"    {name:40s} {value}")
    return summary


def select_rounds(args, store, text):
    """(a) select as a process, (b) scikit-learn load + liblinear, (a0) baseline."""
    select = ["-m", "ultrafs.cli", "select", "--B", "30", "--max-iter", "10",
              "--no-progress", "--overwrite", "--data", str(store)]

    def run_select(checkout, tag):
        cmd = ["env", f"PYTHONPATH={checkout}", "sh", "-c",
               f'cd "{WORK}" && exec "$0" "$@"', sys.executable, *select,
               "--out", str(WORK / f"io_model{tag}.json")]
        return run_measured(cmd)

    commands = {"a": lambda: run_select(ROOT, ""),
                "b": lambda: run_measured([sys.executable, "-c", SKLEARN_SCRIPT, str(text)])}
    if args.baseline:
        commands["a0"] = lambda: run_select(args.baseline, "0")
    for run in commands.values():        # warm-up round, not counted
        run()
    results = {name: [] for name in commands}
    for r in range(args.rounds):
        order = list(commands) if r % 2 == 0 else list(reversed(commands))
        for name in order:
            results[name].append(commands[name]())
        print(f"  (a/b) round {r + 1}: " + "  ".join(
            f"{n} {results[n][-1]['seconds']:.2f} s (cpu {results[n][-1]['cpu_seconds']:.2f})"
            for n in commands) + f"; load {os.getloadavg()[0]:.2f}", flush=True)
    summary = {n: {"seconds": statistics.median(x["seconds"] for x in v),
                   "cpu_seconds": statistics.median(x["cpu_seconds"] for x in v),
                   "peak_rss_mb": statistics.median(x["peak_rss_mb"] for x in v)}
               for n, v in results.items()}
    for n in [k for k in commands if k != "b"]:
        summary[f"{n}/b"] = statistics.median(
            a["seconds"] / b["seconds"] for a, b in zip(results[n], results["b"]))
        summary[f"{n}/b cpu"] = statistics.median(
            a["cpu_seconds"] / b["cpu_seconds"] for a, b in zip(results[n], results["b"]))
    print("(a/b) " + json.dumps(summary))
    return summary


def csr_files():
    """The train half as a scipy CSR matrix (.npz) and its labels, made once."""
    import numpy as np
    import scipy.sparse as sp

    matrix, labels = WORK / "imdb25000_csr.npz", WORK / "imdb25000_y.npy"
    if not (matrix.exists() and labels.exists()):
        from sklearn.datasets import load_svmlight_file

        X, y = load_svmlight_file(str(text_file(25_000)))
        sp.save_npz(matrix, X, compressed=False)
        np.save(labels, y)
    return matrix, labels


def estimator_rounds(args):
    matrix, labels = csr_files()
    checkouts = {"e": ROOT}
    if args.baseline:
        checkouts["e0"] = Path(args.baseline)
    results = {name: [] for name in checkouts}
    for r in range(args.rounds):
        order = list(checkouts) if r % 2 == 0 else list(reversed(checkouts))
        for name in order:
            first = "fgm" if r % 2 == 0 else "liblinear"
            proc, _ = run_child(["-c", ESTIMATOR_SCRIPT, str(matrix), str(labels), first],
                                checkouts[name])
            results[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(f"  (e) round {r + 1}: " + "  ".join(
            f"{n}: fit {results[n][-1]['fgm']['seconds']:.2f} s (solve "
            f"{results[n][-1]['fgm']['solve_seconds']:.2f}), liblinear "
            f"{results[n][-1]['liblinear']['seconds']:.2f} s, store "
            f"{results[n][-1]['conversion']['store_seconds']:.2f} s / tocsc "
            f"{results[n][-1]['conversion']['tocsc_seconds']:.2f} s" for n in checkouts)
              + f"; load {os.getloadavg()[0]:.2f}", flush=True)
    summary = {}
    for name, runs in results.items():
        med = lambda f: statistics.median(f(x) for x in runs)  # noqa: E731
        summary[name] = {
            "fit_seconds": med(lambda x: x["fgm"]["seconds"]),
            "fit_cpu_seconds": med(lambda x: x["fgm"]["cpu_seconds"]),
            "solve_seconds": med(lambda x: x["fgm"]["solve_seconds"]),
            "score_seconds": med(lambda x: x["fgm"]["score_seconds"]),
            "solve_share": med(lambda x: x["fgm"]["solve_seconds"] / x["fgm"]["seconds"]),
            "fgm_nonzeros": runs[0]["fgm"]["nonzeros"],
            "liblinear_seconds": med(lambda x: x["liblinear"]["seconds"]),
            "liblinear_nonzeros": runs[0]["liblinear"]["nonzeros"],
            "fit_over_liblinear": med(lambda x: x["fgm"]["seconds"]
                                      / x["liblinear"]["seconds"]),
            "fit_over_liblinear_cpu": med(lambda x: x["fgm"]["cpu_seconds"]
                                          / x["liblinear"]["cpu_seconds"]),
            "tocsc_seconds": med(lambda x: x["conversion"]["tocsc_seconds"]),
            "store_seconds": med(lambda x: x["conversion"]["store_seconds"]),
            "store_over_tocsc": med(lambda x: x["conversion"]["store_seconds"]
                                    / x["conversion"]["tocsc_seconds"]),
            "store_over_tocsc_cpu": med(lambda x: x["conversion"]["store_cpu_seconds"]
                                        / x["conversion"]["tocsc_cpu_seconds"]),
            "first_call_small_seconds": med(
                lambda x: x["conversion"].get("first_call_small_seconds", float("nan"))),
        }
    print("(e) " + json.dumps(summary))
    return summary


def pass_rounds(args, store):
    checkouts = {"p": ROOT}
    if args.baseline:
        checkouts["p0"] = Path(args.baseline)
    results = {name: [] for name in checkouts}
    for r in range(args.rounds):
        order = list(checkouts) if r % 2 == 0 else list(reversed(checkouts))
        for name in order:
            proc, _ = run_child(["-c", PASS_SCRIPT, str(store), str(args.pass_repeat)],
                                checkouts[name])
            results[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(f"  (p) round {r + 1}: " + "  ".join(
            f"{n}: scipy {results[n][-1]['scipy_seconds'] * 1e3:.1f} ms, pass "
            f"{results[n][-1]['zarr_seconds'] * 1e3:.1f} ms, ratio "
            f"{results[n][-1]['ratio']:.2f} (cpu {results[n][-1]['cpu_ratio']:.2f})"
            for n in checkouts) + f"; load {os.getloadavg()[0]:.2f}", flush=True)
    summary = {name: {key: statistics.median(x[key] for x in runs)
                      for key in runs[0] if key != "nnz"}
               for name, runs in results.items()}
    summary["nnz"] = results["p"][0]["nnz"]
    print("(p) " + json.dumps(summary))
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pass-repeat", type=int, default=9)
    parser.add_argument("--baseline", default=None,
                        help="another checkout: the before figures of (a), (e), (p)")
    parser.add_argument("--only", default="s,ab,e,p")
    parser.add_argument("--name", default="io_acceptance")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    text = text_file(25_000)
    store = WORK / "imdb25000.zarr"
    if not store.exists():
        subprocess.run([sys.executable, "-m", "ultrafs.cli", "ingest", str(text),
                        str(store)], check=True, env=child_env(ROOT), cwd=WORK)
    summary = {"rounds": args.rounds, "baseline": args.baseline,
               "load_average_start": os.getloadavg()}
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    if "s" in parts:
        summary["startup"] = startup_rounds(args, store)
    if "p" in parts:
        summary["pass"] = pass_rounds(args, store)
    if "e" in parts:
        summary["estimator"] = estimator_rounds(args)
    if "ab" in parts:
        summary["select"] = select_rounds(args, store, text)
    summary["load_average_end"] = os.getloadavg()
    print(f"load average at the end: {os.getloadavg()}")
    print(f"written to {write_result(args.name, summary)}")


if __name__ == "__main__":
    main()
