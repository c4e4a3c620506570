"""imdb50k side by side: ultrafs against scikit-learn's ℓ1 logistic regression.

Question (issue 11): how long does a standalone ``ultrafs select`` take
next to what a user would otherwise run, a script that loads the same
LIBSVM text with scikit-learn and fits liblinear's ℓ1-regularised logistic
regression, and how fast is a scoring pass from the Zarr store next to one
in memory?  Goals: (a) / (b) at most 0.3, (c) / (b) at most 0.6, Zarr
passes at least 80% of the in-memory throughput.

Commands, each a child process, run once per round in an order that
alternates between rounds (the machine may be shared: the ratios are taken
within one run, and medians over rounds are reported):

(a) ``ultrafs select --data STORE --B 30 --max-iter 10 --out ...`` on the
    Zarr store of the text (ingested once, before the rounds);
(b) ``python -c ...``: ``sklearn.datasets.load_svmlight_file(TEXT)``, then
    ``LogisticRegression(l1 penalty, solver="liblinear", C=0.02).fit``;
(c) ``ultrafs ingest TEXT fresh.zarr`` then ``ultrafs select --data fresh.zarr``
    (two processes, their wall times summed);
(p) a child that measures scoring passes (B = 30, 2 threads, random dual
    weights) from the Zarr store and from an in-memory copy of it,
    alternating, and what a Zarr block read costs: Blosc decode and
    CRC-32C alone, the CSC check, and the score kernel on the block.

Wall time is ``time.perf_counter`` around each child; peak RSS and CPU
time (user + system) come from GNU time.  The text is the first
``--rows`` rows of ``imdb50k_uni_bigram.svm.bz2`` (default 25,000: the
official train split, the store of section 6), decompressed once to
``bench/out/side_by_side/``; ``--rows 50000`` takes the whole file.

Usage::

    python bench/imdb_side_by_side.py [--rounds 5] [--rows 25000]
        [--pythonpath CHECKOUT]   # run another checkout's ultrafs (PYTHONPATH)
        [--baseline CHECKOUT]     # add (a0): the same select with that checkout
        [--pass-only]             # only (p); with --baseline also (p0), the
                                  # same child with that checkout's ultrafs

Results: printed, and written to ``bench/out/imdb_side_by_side.json``.
"""

from __future__ import annotations

import argparse
import bz2
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import DATA_DIR, GNU_TIME, OUT_DIR, write_result

WORK = OUT_DIR / "side_by_side"
SOURCE = DATA_DIR / "imdb50k_uni_bigram.svm.bz2"

SKLEARN_SCRIPT = """
import sys, warnings
import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression
X, y = load_svmlight_file(sys.argv[1])
# liblinear takes 32-bit sparse indices only
X.indices = X.indices.astype(np.int32)
X.indptr = X.indptr.astype(np.int32)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)   # penalty= is deprecated in 1.8+
    model = LogisticRegression(penalty="l1", solver="liblinear", C=0.02).fit(X, y)
print(int((model.coef_ != 0).sum()))
"""

PASS_SCRIPT = r"""
import json, statistics, sys, time
import numpy as np
from ultrafs.features.linear import LinearFeatures
from ultrafs.kernels.csc_check import check_csc_block
from ultrafs.kernels.scoring import score_block_topk_binary
from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.store import InMemoryStore, open_store

from ultrafs.allocator import map_large_allocations
map_large_allocations()          # as the command line runs: its glibc setting
repeat = int(sys.argv[2])
store = open_store(sys.argv[1])
weights = np.random.default_rng(0).random(store.n_samples) * store.read_labels()
whole = store.read_range(0, store.n_features)
memory = InMemoryStore.from_csc_arrays(whole.indptr, whole.indices,
                                       whole.values(np.float32), store.n_samples,
                                       store.read_labels(), store.classes,
                                       block_size=65536, id_offset=store.id_offset)
del whole
spaces = {"memory": LinearFeatures(memory), "zarr": LinearFeatures(store)}
rates = {name: [] for name in spaces}
for space in spaces.values():                      # warm (kernels, page cache)
    worst_case_analysis(space, weights, 30, scheduler="threads", num_workers=2)
for i in range(repeat):
    for name in (("memory", "zarr") if i % 2 == 0 else ("zarr", "memory")):
        _, stats = worst_case_analysis(spaces[name], weights, 30, scheduler="threads",
                                       num_workers=2)
        rates[name].append(stats.nnz_per_second)

# one thread, block by block: what a Zarr block read costs
meta = store._meta()
bounds = [int(b) for b in store.default_block_bounds()]
excluded = np.zeros(0, dtype=np.int64)
def best(f, n=7):
    times = []
    for _ in range(n):
        started = time.perf_counter(); f(); times.append(time.perf_counter() - started)
    return min(times)
parts = {"read_range_transient": 0.0, "decode_indptr": 0.0, "decode_indices": 0.0,
         "csc_check": 0.0, "kernel": 0.0}
direct = getattr(meta, "readers", None) is not None
for lo, hi in zip(bounds[:-1], bounds[1:]):
    block = store.read_range(lo, hi)
    # as a pass's task reads (into the thread's reused buffers)
    parts["read_range_transient"] += best(lambda: store.read_range_transient(lo, hi))
    if direct:
        first, last = int(meta.read("indptr", lo, lo + 1)[0]), int(meta.read("indptr", hi, hi + 1)[0])
        # into buffers allocated once, as the reused ones of a pass
        indptr_out, indices_out = np.empty_like(block.indptr), np.empty_like(block.indices)
        parts["decode_indptr"] += best(lambda: meta.read("indptr", lo, hi + 1, indptr_out))
        parts["decode_indices"] += best(lambda: meta.read("indices", first, last,
                                                          indices_out))
    work = np.empty(block.nnz + 1, dtype=np.uint8)
    parts["csc_check"] += best(lambda: check_csc_block(block.indptr, block.indices,
                                                       store.n_samples, work))
    parts["kernel"] += best(lambda: score_block_topk_binary(
        block.indptr, block.indices, weights, lo, excluded, 30, 1.0))
print(json.dumps({"nnz": int(store.nnz), "n_blocks_zarr": len(bounds) - 1,
                  "direct_reader": direct,
                  "memory_nnz_per_s": statistics.median(rates["memory"]),
                  "zarr_nnz_per_s": statistics.median(rates["zarr"]),
                  "memory_all": rates["memory"], "zarr_all": rates["zarr"],
                  "one_thread_seconds": parts}))
"""


def run_measured(cmd: list[str]) -> dict:
    """Run a command as a child: wall seconds, CPU seconds and peak RSS.

    As ``bench/common.py: run_measured``, plus the child's user + system
    CPU time (GNU time), which a busy machine disturbs less than the wall
    time.
    """
    measured = os.access(GNU_TIME, os.X_OK)
    if measured:
        cmd = [GNU_TIME, "-f", "ultrafs-measured %M %U %S", *cmd]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({proc.returncode}):\n{proc.stderr}")
    result = {"seconds": wall, "peak_rss_mb": float("nan"), "cpu_seconds": float("nan")}
    lines = proc.stderr.splitlines()
    if measured and lines and lines[-1].startswith("ultrafs-measured "):
        peak_kb, user, system = (float(x) for x in lines[-1].split()[1:])
        result.update(peak_rss_mb=peak_kb / 1024.0, cpu_seconds=user + system)
    return result


def text_file(rows: int) -> Path:
    """The first ``rows`` rows of imdb50k, decompressed once."""
    path = WORK / f"imdb{rows}.svm"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".svm.part")
        with bz2.open(SOURCE, "rb") as source, open(partial, "wb") as out:
            for row, line in enumerate(source):
                if row >= rows:
                    break
                out.write(line)
        partial.rename(path)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=25_000)
    parser.add_argument("--pass-repeat", type=int, default=7,
                        help="passes per store in each (p) child")
    parser.add_argument("--pythonpath", default=None,
                        help="checkout whose ultrafs the children import (PYTHONPATH)")
    parser.add_argument("--baseline", default=None,
                        help="another checkout: adds (a0), the same select with its "
                             "ultrafs, to the rounds (before/after in one run)")
    parser.add_argument("--pass-only", action="store_true",
                        help="run only (p), the scoring passes (and (p0) with "
                             "--baseline): the Zarr/memory figure without the selects")
    parser.add_argument("--name", default="imdb_side_by_side")
    args = parser.parse_args()

    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(
            [args.pythonpath] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    os.environ.update(env)                  # run_measured's children inherit it
    python = sys.executable
    ultrafs = [python, "-m", "ultrafs.cli"]
    text = text_file(args.rows)
    store = WORK / f"imdb{args.rows}.zarr"
    tag = "" if not args.pythonpath else f"-{Path(args.pythonpath).name}"
    store = store.with_name(store.stem + tag + ".zarr")
    fresh = WORK / f"fresh{tag}.zarr"
    model = WORK / f"model{tag}.json"
    if not store.exists():
        run_measured(ultrafs + ["ingest", str(text), str(store)])
    select = ["select", "--B", "30", "--max-iter", "10", "--out", str(model),
              "--overwrite"]

    def run_a():
        return run_measured(ultrafs + select + ["--data", str(store)])

    def run_b():
        return run_measured([python, "-c", SKLEARN_SCRIPT, str(text)])

    def run_c():
        shutil.rmtree(fresh, ignore_errors=True)
        first = run_measured(ultrafs + ["ingest", str(text), str(fresh)])
        second = run_measured(ultrafs + select + ["--data", str(fresh)])
        shutil.rmtree(fresh, ignore_errors=True)
        return {"seconds": first["seconds"] + second["seconds"],
                "ingest_seconds": first["seconds"], "select_seconds": second["seconds"],
                "cpu_seconds": first["cpu_seconds"] + second["cpu_seconds"],
                "peak_rss_mb": max(first["peak_rss_mb"], second["peak_rss_mb"])}

    def run_p(prefix=()):
        started = time.perf_counter()
        proc = subprocess.run([*prefix, python, "-c", PASS_SCRIPT, str(store),
                               str(args.pass_repeat)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        result["seconds"] = time.perf_counter() - started
        return result

    commands = {"a": run_a, "b": run_b, "c": run_c, "p": run_p}
    if args.pass_only:
        return pass_rounds(args, run_p, store)
    if args.baseline:
        def run_a0():
            return run_measured(["env", f"PYTHONPATH={args.baseline}"] + ultrafs + select
                                + ["--data", str(store)])

        commands = {"a0": run_a0, **commands}
    print(f"text {text} ({text.stat().st_size / 1e6:.1f} MB), store {store}", flush=True)
    print("warm-up round (not counted): numba caches, page cache", flush=True)
    for name, run in commands.items():
        run()
    results = {name: [] for name in commands}
    for r in range(args.rounds):
        order = list(commands) if r % 2 == 0 else list(reversed(commands))
        for name in order:
            results[name].append(commands[name]())
        line = "  ".join(f"{n} {results[n][-1]['seconds']:.2f} s" for n in commands)
        print(f"round {r + 1}/{args.rounds} ({''.join(order)}): {line}; load "
              f"{os.getloadavg()[0]:.2f}", flush=True)

    def med(name, key="seconds"):
        return statistics.median(x[key] for x in results[name])

    summary = {
        "rows": args.rows, "rounds": args.rounds, "pythonpath": args.pythonpath,
        "median_seconds": {n: med(n) for n in results if n != "p"},
        "range_seconds": {n: [min(x["seconds"] for x in results[n]),
                              max(x["seconds"] for x in results[n])]
                          for n in results if n != "p"},
        "median_peak_rss_mb": {n: med(n, "peak_rss_mb") for n in results if n != "p"},
        "median_cpu_seconds": {n: med(n, "cpu_seconds") for n in results if n != "p"},
        "c_ingest_seconds": med("c", "ingest_seconds"),
        "c_select_seconds": med("c", "select_seconds"),
        "ratio_a_over_b": statistics.median(
            a["seconds"] / b["seconds"] for a, b in zip(results["a"], results["b"])),
        "ratio_c_over_b": statistics.median(
            c["seconds"] / b["seconds"] for c, b in zip(results["c"], results["b"])),
        "pass_memory_nnz_per_s": med("p", "memory_nnz_per_s"),
        "pass_zarr_nnz_per_s": med("p", "zarr_nnz_per_s"),
        "pass_zarr_over_memory": statistics.median(
            p["zarr_nnz_per_s"] / p["memory_nnz_per_s"] for p in results["p"]),
        "one_thread_block_seconds": {
            key: statistics.median(p["one_thread_seconds"][key] for p in results["p"])
            for key in results["p"][0]["one_thread_seconds"]},
        "nnz": results["p"][0]["nnz"], "load_average_end": os.getloadavg(),
    }
    for p in results["p"]:
        p.pop("memory_all"), p.pop("zarr_all")
    summary["raw"] = {n: [{k: v for k, v in x.items() if k not in ("stdout", "stderr")}
                          for x in results[n]] for n in results}
    m, s = summary["median_seconds"], summary["median_peak_rss_mb"]
    cpu = summary["median_cpu_seconds"]
    print()
    if args.baseline:
        summary["baseline"] = args.baseline
        summary["ratio_a_over_a0"] = statistics.median(
            a["seconds"] / a0["seconds"] for a, a0 in zip(results["a"], results["a0"]))
        summary["cpu_ratio_a_over_a0"] = statistics.median(
            a["cpu_seconds"] / a0["cpu_seconds"] for a, a0 in zip(results["a"], results["a0"]))
        print(f"(a0) select with {args.baseline}  {m['a0']:6.2f} s  {s['a0']:5.0f} MB  "
              f"cpu {cpu['a0']:6.2f} s; a/a0 = {summary['ratio_a_over_a0']:.3f} "
              f"(cpu {summary['cpu_ratio_a_over_a0']:.3f})")
    print(f"(a) ultrafs select from Zarr        {m['a']:6.2f} s  {s['a']:5.0f} MB  "
          f"cpu {cpu['a']:6.2f} s")
    print(f"(b) sklearn load + liblinear l1-LR  {m['b']:6.2f} s  {s['b']:5.0f} MB  "
          f"cpu {cpu['b']:6.2f} s")
    print(f"(c) ultrafs ingest + select         {m['c']:6.2f} s  {s['c']:5.0f} MB  "
          f"cpu {cpu['c']:6.2f} s (ingest {summary['c_ingest_seconds']:.2f} s, select "
          f"{summary['c_select_seconds']:.2f} s)")
    print(f"a/b = {summary['ratio_a_over_b']:.3f} (goal <= 0.3)   "
          f"c/b = {summary['ratio_c_over_b']:.3f} (goal <= 0.6)   "
          "(medians of the per-round ratios)")
    nnz = summary["nnz"]
    print(f"pass, 2 threads: memory {summary['pass_memory_nnz_per_s'] / 1e6:.0f}M nnz/s, "
          f"Zarr {summary['pass_zarr_nnz_per_s'] / 1e6:.0f}M nnz/s: "
          f"{summary['pass_zarr_over_memory']:.2f} of memory (goal >= 0.8)")
    parts = summary["one_thread_block_seconds"]
    print("one thread, all blocks of the store: " + ", ".join(
        f"{k} {v * 1e3:.1f} ms ({nnz / v / 1e6:.0f}M nnz/s)" for k, v in parts.items() if v))
    path = write_result(args.name, summary)
    print(f"written to {path}")


def pass_rounds(args, run_p, store):
    """``--pass-only``: rounds of (p), and of (p0) with ``--baseline``.

    Each child measures its own Zarr/memory ratio (interleaved passes in
    one process); with a baseline the two children alternate in order
    round by round, so both see the same load.
    """
    commands = {"p": run_p}
    if args.baseline:
        commands = {"p0": lambda: run_p(["env", f"PYTHONPATH={args.baseline}"]), **commands}
    print(f"store {store}; warm-up round (not counted)", flush=True)
    for run in commands.values():
        run()
    results = {name: [] for name in commands}
    for r in range(args.rounds):
        order = list(commands) if r % 2 == 0 else list(reversed(commands))
        for name in order:
            results[name].append(commands[name]())
        line = "  ".join(f"{n} {results[n][-1]['zarr_nnz_per_s'] / 1e6:.0f}/"
                         f"{results[n][-1]['memory_nnz_per_s'] / 1e6:.0f}M nnz/s"
                         for n in commands)
        print(f"round {r + 1}/{args.rounds} ({''.join(order)}), Zarr/memory: {line}; "
              f"load {os.getloadavg()[0]:.2f}", flush=True)
    summary = {"rows": args.rows, "rounds": args.rounds,
               "pass_repeat": args.pass_repeat, "baseline": args.baseline,
               "load_average_end": os.getloadavg()}
    for name, runs in results.items():
        ratios = [p["zarr_nnz_per_s"] / p["memory_nnz_per_s"] for p in runs]
        summary[name] = {
            "memory_nnz_per_s": statistics.median(p["memory_nnz_per_s"] for p in runs),
            "zarr_nnz_per_s": statistics.median(p["zarr_nnz_per_s"] for p in runs),
            "zarr_over_memory": statistics.median(ratios),
            "zarr_over_memory_range": [min(ratios), max(ratios)],
            "one_thread_block_seconds": {
                key: statistics.median(p["one_thread_seconds"][key] for p in runs)
                for key in runs[0]["one_thread_seconds"]}}
        s = summary[name]
        print(f"({name}) memory {s['memory_nnz_per_s'] / 1e6:.0f}M, Zarr "
              f"{s['zarr_nnz_per_s'] / 1e6:.0f}M nnz/s: {s['zarr_over_memory']:.3f} of "
              f"memory (rounds {min(ratios):.3f}-{max(ratios):.3f}; goal >= 0.8); one "
              "thread: " + ", ".join(f"{k} {v * 1e3:.1f} ms"
                                     for k, v in s["one_thread_block_seconds"].items() if v))
    path = write_result(args.name, summary)
    print(f"written to {path}")


if __name__ == "__main__":
    main()
