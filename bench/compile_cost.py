"""What numba compiles on a first run, per command, from an empty kernel cache.

Issue 35 (item 2): "a first run in seconds". Every ultrafs kernel is
``njit(cache=True)``; a process that finds no cache entry compiles it. This
script runs each command of :data:`RUNS` in a fresh process whose kernel
cache (``NUMBA_CACHE_DIR`` and ``XDG_CACHE_HOME``, see ``kernels/_cache.py``)
points at a temporary folder, and records per run:

- ``wall_s``: the child's wall time (interpreter start included) and its
  peak RSS (GNU time);
- ``compile_s`` and ``compile_cpu_s``: the sum of the durations (wall, and
  CPU time of the compiling thread: a figure the machine's other load
  hardly changes) of numba's top-level ``numba:compile`` events (numba emits them only for a real compile, not a
  cache load; a kernel typed inside another's compile is nested in it and
  counted once, in its parent's total and as its own ``self_s``);
- ``functions`` / ``signatures``: distinct ultrafs kernels and compiled
  (kernel, signature) pairs (numba's own helpers, ``np.empty``, sorts,
  ``np.linalg.solve``..., which numba compiles as functions too, are
  counted apart and their time charged to the kernel that needed them);
- ``top``: the kernels with the largest ``kernel_s``: their compile time
  with the numba helpers they needed and without the ultrafs kernels they
  call (each compiled, and counted, on its own), with their signatures;
- ``duplicates``: kernels compiled for more than one signature in that
  run (two dtypes, index widths, layouts ``C``/``A``, ``readonly`` arrays).

Two modes:

``shared`` (the default): every run shares ONE empty cache, in the order of
:data:`RUNS` (``demo`` first), so each later run shows what it compiles on
top of what the earlier ones left: "each further method".

``alone``: each run on its own empty cache: what a user pays who runs only
that command first.

The child processes install the listener themselves (``--probe``), before
ultrafs is imported, and write their events as JSON; the parent only
launches and collects. The small stores the runs read are written once,
with a separate throwaway kernel cache, so that setting them up warms
nothing that is measured.

Usage::

    python bench/compile_cost.py                       # shared cache, all runs
    python bench/compile_cost.py --mode alone          # each run on its own cache
    python bench/compile_cost.py --mode both --runs demo,select
    python bench/compile_cost.py --demo-size small     # a 1000 x 2000 demo

Raw results go to ``bench/out/compile_cost_<mode>.json``; ``--markdown``
prints the tables of ``bench/notes/20-2-compile-cost.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

#: small data for every run but ``demo`` (rows, columns, relevant columns)
SMALL = (1000, 2000, 20)
#: tinier data for the methods whose run, not their compile, is slow at SMALL
#: (sklr, gsrfs, the additive kernels): same dtypes, so the same kernels
TINY = (300, 300, 10)
#: a short FGM run: few features, few iterations (what matters is what it
#: compiles, not what it selects)
SHORT = ["--B", "10", "--max-iter", "3"]


def _select(*extra, data="small"):
    return ["cli", "select", "--data", f"{{work}}/{data}.zarr", "--out",
            "{work}/model.json", "--overwrite", "--no-progress", *extra]


#: name -> the child's command ("cli" + arguments of ``ultrafs``, or "api")
RUNS = {
    "demo": ["cli", "demo", "--dir", "{work}/demo", "{demo_size}"],
    "select": _select(*SHORT),
    "C_auto": _select(*SHORT, "--C", "auto"),
    "poly2": _select(*SHORT, "--poly", "2"),
    "l1": _select("--method", "l1", "--features", "10"),
    "mslr": _select(*SHORT, "--method", "mslr"),
    "sklr": _select("--method", "sklr", "--n-components", "200", data="tiny"),
    "gsrfs": _select("--method", "gsrfs", "--features", "10", data="tiny"),
    "hik": _select(*SHORT, "--kernel", "hik", data="tiny_nonneg"),
    "chi2": _select(*SHORT, "--kernel", "chi2", data="tiny_nonneg"),
    "path": ["cli", "path", "--data", "{work}/small.zarr", "--out",
             "{work}/path.json", "--no-progress"],
    "api": ["api", "{work}"],
}


# --------------------------------------------------------------------------
# the child side: a compile listener, then the command


class _Recorder:
    """Collects ``numba:compile`` events with nesting, per thread."""

    def __init__(self):
        from numba.core import event

        self.records = []
        self._local = threading.local()
        self._lock = threading.Lock()
        recorder = self

        class Listener(event.Listener):
            def on_start(self, ev):
                recorder._start(ev)

            def on_end(self, ev):
                recorder._end(ev)

        event.register("numba:compile", Listener())

    def _stack(self):
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _start(self, ev):
        # [start wall, start thread CPU, children's totals (wall, CPU),
        #  nearest nested kernels' totals (wall, CPU)]
        self._stack().append([time.perf_counter(), time.thread_time(),
                              0.0, 0.0, 0.0, 0.0])

    def _end(self, ev):
        stack = self._stack()
        started, started_cpu, nested, nested_cpu, nested_k, nested_k_cpu = stack.pop()
        total = time.perf_counter() - started
        cpu = time.thread_time() - started_cpu
        data = ev.data or {}
        disp = data.get("dispatcher")
        func = getattr(disp, "py_func", None)
        module = getattr(func, "__module__", "?") or "?"
        name = f"{module}.{getattr(func, '__qualname__', '?')}"
        ours = module.split(".")[0] == "ultrafs"
        if stack:
            parent = stack[-1]
            parent[2] += total
            parent[3] += cpu
            # numba's own helpers (np.empty, sorts, ...) count for the
            # ultrafs kernel whose compile needed them
            parent[4] += total if ours else nested_k
            parent[5] += cpu if ours else nested_k_cpu
        options = getattr(disp, "targetoptions", {}) or {}
        args = data.get("args") or ()
        with self._lock:
            self.records.append({
                "function": name,
                "ultrafs": ours,
                "signature": "(" + ", ".join(str(a) for a in args) + ")",
                "parallel": bool(options.get("parallel")),
                "depth": len(stack),
                "total_s": total,
                "self_s": total - nested,
                # with the numba helpers it needed, without nested kernels
                "kernel_s": total - nested_k,
                # the same in CPU seconds of the compiling thread: what the
                # compile cost, whatever else the machine was running
                "total_cpu_s": cpu,
                "kernel_cpu_s": cpu - nested_k_cpu,
            })


def _api_run(work):
    """The Python API: FGMClassifier.fit on small dense data."""
    from ultrafs import FGMClassifier
    from ultrafs.datasets.planted import make_planted_problem

    n, p, k = SMALL
    problem = make_planted_problem(n, p, k, n_test=10, seed=1)
    clf = FGMClassifier(B=10, max_iter=3)
    clf.fit(problem.X_train, problem.y_train)
    clf.predict(problem.X_test)


def probe(out, command):
    started = time.perf_counter()
    recorder = _Recorder()
    status = 0
    try:
        if command[0] == "cli":
            from ultrafs.cli import main

            try:
                main.main(args=command[1:], prog_name="ultrafs",
                          standalone_mode=False)
            except SystemExit as exc:       # pragma: no cover - click's exits
                status = exc.code or 0
        else:
            _api_run(command[1])
    finally:
        Path(out).write_text(json.dumps({
            "status": status,
            "inner_wall_s": time.perf_counter() - started,
            "records": recorder.records,
        }))
    return status


# --------------------------------------------------------------------------
# the parent side


def _write_small_stores(work, env):
    code = f"""
import numpy as np
from ultrafs.datasets.planted import make_planted_problem
from ultrafs.store.writers.zarr_writer import write_store
pb = make_planted_problem({SMALL[0]}, {SMALL[1]}, {SMALL[2]}, n_test=10, seed=0)
write_store({str(work / 'small.zarr')!r}, pb.X_train, pb.y_train, overwrite=True)
pb = make_planted_problem({TINY[0]}, {TINY[1]}, {TINY[2]}, n_test=10, seed=0)
write_store({str(work / 'tiny.zarr')!r}, pb.X_train, pb.y_train, overwrite=True)
write_store({str(work / 'tiny_nonneg.zarr')!r}, np.abs(pb.X_train), pb.y_train,
            overwrite=True)
"""
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def _env(cache):
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = str(cache)
    env["XDG_CACHE_HOME"] = str(cache)
    env["ULTRAFS_CACHE_DIR"] = str(Path(cache) / "ultrafs-data")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _summarise(name, measured, probe_result, top):
    records = probe_result["records"]
    roots = [r for r in records if r["depth"] == 0]
    kernels = [r for r in records if r["ultrafs"]]
    functions = {}
    for r in kernels:
        functions.setdefault(r["function"], []).append(r)
    duplicates = {f: [r["signature"] for r in rs] for f, rs in functions.items()
                  if len(rs) > 1}
    parallel = [r for r in kernels if r["parallel"]]
    return {
        "run": name,
        "status": probe_result["status"],
        "wall_s": measured["seconds"],
        "peak_rss_mb": measured["peak_rss_mb"],
        "compile_s": sum(r["total_s"] for r in roots),
        "compile_cpu_s": sum(r["total_cpu_s"] for r in roots),
        "functions": len(functions),
        "signatures": len(kernels),
        "numba_helper_signatures": len(records) - len(kernels),
        "parallel_signatures": len(parallel),
        "parallel_compile_s": sum(r["kernel_s"] for r in parallel),
        "parallel_compile_cpu_s": sum(r["kernel_cpu_s"] for r in parallel),
        "top": sorted(kernels, key=lambda r: -r["kernel_cpu_s"])[:top],
        "duplicates": duplicates,
        "records": records,
        "stderr_tail": measured["stderr"][-2000:],
    }


def run_one(name, cache, work, demo_size, top):
    command = [part.format(work=work, demo_size=demo_size) for part in RUNS[name]]
    command = [c for part in command for c in (part.split() if part == demo_size
                                               else [part])]
    out = Path(work) / f"probe-{name}.json"
    from common import run_measured

    saved = dict(os.environ)
    os.environ.update(_env(cache))     # run_measured's child inherits it
    try:
        measured = run_measured([sys.executable, str(Path(__file__).resolve()),
                                 "--probe", str(out), "--", *command])
    except RuntimeError as exc:       # a failed run is recorded, not fatal
        print(f"{name} FAILED: {exc}", file=sys.stderr, flush=True)
        return {"run": name, "status": "failed", "error": str(exc)[-3000:]}
    finally:
        os.environ.clear()
        os.environ.update(saved)
    result = _summarise(name, measured, json.loads(out.read_text()), top)
    print(f"{name:8s} wall {result['wall_s']:7.1f} s  compile "
          f"{result['compile_s']:7.1f} s (CPU {result['compile_cpu_s']:6.1f} s)  "
          f"{result['functions']:4d} functions  "
          f"{result['signatures']:4d} signatures "
          f"({result['parallel_signatures']} parallel, "
          f"{result['parallel_compile_s']:.1f} s)", file=sys.stderr, flush=True)
    return result


def measure(mode, names, demo_size, top, keep):
    tmp = Path(tempfile.mkdtemp(prefix="ultrafs-compile-cost-"))
    try:
        work = tmp / "work"
        work.mkdir()
        _write_small_stores(work, _env(tmp / "setup-cache"))
        results = []
        if mode == "shared":
            cache = tmp / "cache-shared"
            for name in names:
                results.append(run_one(name, cache, work, demo_size, top))
            cross_run(results)
        else:
            for name in names:
                results.append(run_one(name, tmp / f"cache-{name}", work,
                                       demo_size, top))
        return results
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def cross_run(results):
    """Mark, in shared mode, the new signatures of kernels an earlier run compiled.

    Sets ``result["recompiled"]``: kernel -> [[signature, earlier
    signatures, kernel_s], ...].
    """
    seen = {}
    for result in results:
        result["recompiled"] = {}
        records = [r for r in result.get("records", ()) if r["ultrafs"]]
        for rec in records:
            earlier = seen.get(rec["function"])
            if earlier and rec["signature"] not in earlier:
                result["recompiled"].setdefault(rec["function"], []).append(
                    [rec["signature"], sorted(earlier), rec.get("kernel_cpu_s",
                                                                rec["kernel_s"])])
        for rec in records:
            seen.setdefault(rec["function"], set()).add(rec["signature"])


def markdown(mode, results, top=8):
    lines = [f"mode `{mode}`:", "",
             "| run | wall s | compile s | compile CPU s | kernels | signatures | "
             "parallel (CPU s) | peak RSS MiB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    failed = [r for r in results if r.get("status") == "failed"]
    results = [r for r in results if r.get("status") != "failed"]
    for r in failed:
        lines.append(f"| {r['run']} | failed | | | | | | |")
    for r in results:
        lines.append(f"| {r['run']} | {r['wall_s']:.1f} | {r['compile_s']:.1f} | "
                     f"{r.get('compile_cpu_s', float('nan')):.1f} | "
                     f"{r['functions']} | {r['signatures']} | "
                     f"{r['parallel_signatures']} "
                     f"({r.get('parallel_compile_cpu_s', float('nan')):.1f}) | "
                     f"{r['peak_rss_mb']:.0f} |")
    lines.append(f"| **total** | {sum(r['wall_s'] for r in results):.1f} | "
                 f"{sum(r['compile_s'] for r in results):.1f} | "
                 f"{sum(r.get('compile_cpu_s', float('nan')) for r in results):.1f} | "
                 f"{sum(r['functions'] for r in results)} | "
                 f"{sum(r['signatures'] for r in results)} | | |")
    lines.append("")
    by_file = {}
    for r in results:
        for rec in r.get("records", ()):
            if rec["ultrafs"]:
                module = rec["function"].rsplit(".", 1)[0].split(".")[0:3]
                key = ".".join(module).replace("ultrafs.kernels.", "kernels/") + ".py"
                cpu, n = by_file.get(key, (0.0, 0))
                by_file[key] = (cpu + rec.get("kernel_cpu_s", 0.0), n + 1)
    lines.append("compile CPU seconds by kernel file, all runs above together "
                 "(signatures):")
    lines.append("")
    lines.append("| file | CPU s | signatures |")
    lines.append("|---|---:|---:|")
    for key, (cpu, n) in sorted(by_file.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {key} | {cpu:.1f} | {n} |")
    lines.append("")
    for r in results:
        lines.append(f"top kernels of `{r['run']}` (compile CPU seconds, with the "
                     "numba helpers they needed, without nested kernels):")
        lines.append("")
        for rec in r["top"][:top]:
            short = rec["function"].replace("ultrafs.kernels.", "")
            par = " parallel" if rec["parallel"] else ""
            cpu = rec.get("kernel_cpu_s", float("nan"))
            lines.append(f"- {cpu:.2f} s (wall {rec['kernel_s']:.2f} s) "
                         f"`{short}{rec['signature']}`{par}")
        if r["duplicates"]:
            lines.append("")
            lines.append("  compiled for more than one signature: " + ", ".join(
                f"`{f.replace('ultrafs.kernels.', '')}` ×{len(s)}"
                for f, s in sorted(r["duplicates"].items())))
        if r.get("recompiled"):
            lines.append("")
            lines.append("  new signatures of kernels an earlier run compiled: " + "; ".join(
                f"`{f.replace('ultrafs.kernels.', '')}{new[0][0]}` ({new[0][2]:.2f} s)"
                for f, new in sorted(r["recompiled"].items())))
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--probe"]:
        out = argv[1]
        command = argv[3:] if argv[2:3] == ["--"] else argv[2:]
        sys.exit(probe(out, command))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["shared", "alone", "both"], default="shared")
    parser.add_argument("--runs", default=",".join(RUNS),
                        help="comma-separated subset of: " + ", ".join(RUNS))
    parser.add_argument("--demo-size", choices=["default", "small"], default="default",
                        help="default: ultrafs demo as shipped (4096 x 4096); "
                             "small: 1000 x 2000, 20 relevant, --max-iter 3")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary folder (caches and stores)")
    parser.add_argument("--tag", default="", help="suffix of the result file name")
    parser.add_argument("--from-json", default=None,
                        help="print the tables of a saved result file, run nothing")
    args = parser.parse_args(argv)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        if saved["mode"] == "shared":
            cross_run(saved["results"])
        print(markdown(saved["mode"], saved["results"]))
        print(f"\nload average before {saved['loadavg_before'][0]:.2f}, after "
              f"{saved['loadavg_after'][0]:.2f}; numba {saved['numba']}\n")
        return
    names = [n for n in args.runs.split(",") if n]
    unknown = set(names) - set(RUNS)
    if unknown:
        parser.error(f"unknown runs: {sorted(unknown)}")
    demo_size = ("--no-progress" if args.demo_size == "default" else
                 f"--n-samples {SMALL[0]} --n-features {SMALL[1]} "
                 f"--n-relevant {SMALL[2]} --max-iter 3 --no-progress")
    modes = ["shared", "alone"] if args.mode == "both" else [args.mode]
    from common import write_result
    import numba

    for mode in modes:
        load = os.getloadavg()
        results = measure(mode, names, demo_size, args.top, args.keep)
        path = write_result(f"compile_cost_{mode}{args.tag}", {
            "mode": mode, "demo_size": args.demo_size, "numba": numba.__version__,
            "loadavg_before": load, "loadavg_after": os.getloadavg(),
            "results": results})
        print(f"wrote {path}", file=sys.stderr)
        if args.markdown:
            print(markdown(mode, results))
            print(f"\nload average before {load[0]:.2f}, after "
                  f"{os.getloadavg()[0]:.2f}\n")


if __name__ == "__main__":
    main()
