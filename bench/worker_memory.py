"""Workers that never hold the data (issue 40, item 4).

Question: does an FGM selection over a store several times larger than a
worker's ``memory_limit`` complete on a ``dask.distributed.LocalCluster``
of process workers with that limit, how much memory does each worker
use, and how does the throughput change with 1, 2 and 4 worker processes
(``threads_per_worker=1``) against the threaded scheduler in the same run?

Usage::

    python bench/worker_memory.py [--store PATH] [--rows 16384]
        [--features 36864] [--memory-limit 512MiB] [--workers 1,2,4]
        [--B 10] [--max-iter 3] [--repeat 1] [--worker-malloc dask,ultrafs]
        [--result worker_memory]

The store is the paper's §8.2 planted problem (``X ~ N(0, 1)`` float32,
dense, ``y = sign(X w)`` with ``--relevant`` planted weights), written
once, column block after column block, by ``StoreWriter`` (never held in
memory whole: each block is generated twice from its own seed, once for
the labels' margin and once for writing).  Its size on disk (the files)
and decoded (``indices`` int32 + ``data`` float32 + ``indptr`` +
``labels``, what a worker would hold to have it all) are reported.

Each run is one ``ultrafs.api.select(store, B=, max_iter=, tol=0)``: a
statistics pass for ``C="scale"`` and one worst-case pass per iteration,
each pass one task per column block of about 4M nonzeros.  The threaded
run (``num_workers = 2``, the cores of the machine) runs first; then, for
each worker count, a fresh ``LocalCluster(n_workers, threads_per_worker=1,
processes=True, memory_limit=...)``:

* every worker first runs, inside itself (``client.run``), the two kinds
  of block task a ``select`` sends it (``C="scale"``'s column statistics,
  a worst-case pass) on a tiny store: their numba kernels are loaded from
  the on-disk cache, which the driver filled before.  Its resident memory
  at start and after that warm-up (its *baseline*) are reported;
* each worker's peak resident memory is the kernel's high-water mark
  ``VmHWM`` of ``/proc/self/status``, reset after the warm-up by writing
  ``5`` to ``/proc/self/clear_refs`` (exact, not sampled); the warm-up's
  own peak (``VmHWM`` before that reset: start and warm-up) is reported
  next to it (not ``ru_maxrss``: a spawned worker's counts the pages of
  the process it was forked from, here the driver, which runs the nannies);
* minor page faults of each worker during the measured runs
  (``ru_minflt``), and of the driver during the threaded run;
* restarts: the worker processes' ids before and after, the number of
  workers, and the nannies' ``worker-restart-memory`` events; pauses:
  ``Pausing worker`` lines of the worker logs; spilling: every worker's
  ``SpillBuffer`` (``spilled_total`` and its cumulative ``disk-write``
  metrics).  The task stream's ``disk-read`` / ``disk-write`` spans are
  recorded but are no evidence of spilling: a worker labels so any
  access to its data that takes over 5 ms, in memory or not;
* CPU seconds (``time.process_time``) of the driver and of every worker
  per run, and the task stream's compute and transfer seconds: where the
  cores went.

The driver's own peak (``VmHWM`` of this process, reset before each run)
is reported too: with a cluster the driver only solves the subproblems.
Every model is compared with the threaded run's: features, weights and
intercept bit for bit.  Throughput is the nonzeros the worst-case passes
streamed over their seconds (the model history's ``scan_nnz`` and
``score_seconds``), and the whole ``select``'s wall time; each is also
given as a ratio to the threaded run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import resource
import sys
import time
from pathlib import Path

import numpy as np

from common import OUT_DIR, write_result

#: columns generated (and appended) at a time when the store is written
BUILD_COLUMNS = 512

#: glibc malloc settings of the worker processes (``--worker-malloc``):
#: dask's default (``distributed.nanny.pre-spawn-environ``: a trim
#: threshold of 64 KiB, which also freezes glibc's mmap threshold at its
#: 128 KiB start), glibc's own defaults (a dynamic mmap threshold: what
#: the threaded run in this process has), or what the ultrafs command
#: line sets (``ultrafs/allocator.py``: mmap at 2 MiB, trim at 8 MiB)
WORKER_MALLOC = {"dask": {"MALLOC_TRIM_THRESHOLD_": "65536"},
                 "glibc": {},
                 "ultrafs": {"MALLOC_MMAP_THRESHOLD_": str(2 << 20),
                             "MALLOC_TRIM_THRESHOLD_": str(8 << 20)}}


# ---------------------------------------------------------------- memory
def proc_status() -> dict:
    """This process's resident memory now (``VmRSS``) and its high-water
    mark (``VmHWM``), in MiB, from ``/proc/self/status``."""
    text = Path("/proc/self/status").read_text()
    return {key: int(re.search(rf"^{key}:\s+(\d+) kB", text, re.MULTILINE).group(1)) / 1024
            for key in ("VmRSS", "VmHWM")}


def reset_peak() -> dict:
    """Reset this process's ``VmHWM`` to its current RSS (Linux >= 4.0:
    ``5`` written to ``/proc/self/clear_refs``); returns the status after."""
    Path("/proc/self/clear_refs").write_text("5")
    return proc_status()


def worker_report(dask_worker=None) -> dict:
    """What a worker reports after the measured run (``client.run`` gives
    the worker as ``dask_worker``)."""
    worker = dask_worker
    data = worker.data
    spilled = getattr(data, "spilled_total", None)
    metrics = getattr(data, "cumulative_metrics", {})
    return {**proc_status(), "pid": os.getpid(),
            "minflt": resource.getrusage(resource.RUSAGE_SELF).ru_minflt,
            "cpu_s": time.process_time(),
            "status": str(worker.status),
            "spilled_memory_bytes": None if spilled is None else int(spilled.memory),
            "spilled_disk_bytes": None if spilled is None else int(spilled.disk),
            "spill_metrics": {f"{label}:{unit}": value
                              for (label, unit), value in dict(metrics).items()},
            "keys_held": len(data)}


def warm_worker(tiny: str) -> dict:
    """Run, inside the worker, the two kinds of block task a ``select``
    sends to workers (the statistics of ``C="scale"`` and a worst-case
    pass) on a tiny store, synchronously: their numba kernels are loaded
    from the on-disk cache.  Returns the worker's memory before and after,
    then resets its peak."""
    from ultrafs.features.linear import LinearFeatures
    from ultrafs.methods.c_scale import column_moments
    from ultrafs.scoring.worst_case import worst_case_analysis
    from ultrafs.store import open_store

    start = proc_status()["VmRSS"]
    store = open_store(tiny)
    column_moments(store, scheduler="synchronous")
    worst_case_analysis(LinearFeatures(store), np.ones(store.n_samples), 3,
                        scheduler="synchronous")
    warm_peak = proc_status()["VmHWM"]
    return {"start_mb": start, "warm_peak_mb": warm_peak, **reset_peak(),
            "pid": os.getpid(),
            "minflt": resource.getrusage(resource.RUSAGE_SELF).ru_minflt,
            "cpu_s": time.process_time(),
            "malloc_env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}}


# ----------------------------------------------------------------- store
def _block_values(seed: int, block: int, n_columns: int, n_rows: int) -> np.ndarray:
    """Columns of block ``block``: an (n_columns, n_rows) float32 array,
    N(0, 1), from the block's own seed (the same values every time)."""
    rng = np.random.default_rng([seed, block])
    return rng.standard_normal((n_columns, n_rows), dtype=np.float32)


def _planted_weights(n_features: int, n_relevant: int, seed: int):
    rng = np.random.default_rng(seed)
    relevant = np.sort(rng.choice(n_features, size=n_relevant, replace=False))
    return relevant, rng.uniform(0.0, 1.0, size=n_relevant)


def build_store(path: Path, n_rows: int, n_features: int, n_relevant: int, seed: int):
    """Write the planted store at ``path`` column block by column block.

    Returns
    -------
    dict
        Seconds, nonzeros, the planted features.
    """
    from ultrafs.store.writers.zarr_writer import StoreWriter

    started = time.perf_counter()
    relevant, w = _planted_weights(n_features, n_relevant, seed)
    starts = range(0, n_features, BUILD_COLUMNS)
    margin, nnz = np.zeros(n_rows), 0
    for block, lo in enumerate(starts):               # pass 1: labels, nnz
        hi = min(lo + BUILD_COLUMNS, n_features)
        X = _block_values(seed, block, hi - lo, n_rows)
        nnz += int(np.count_nonzero(X))
        mine = (relevant >= lo) & (relevant < hi)
        margin += X[relevant[mine] - lo].T.astype(np.float64) @ w[mine]
    y = np.where(margin >= 0, 1.0, -1.0)
    with StoreWriter(path, n_samples=n_rows, n_features=n_features, nnz=nnz,
                     dtype="float32", binary=False, labels=y,
                     command="bench/worker_memory.py build_store",
                     attrs={"planted_relevant": relevant.tolist()}) as writer:
        for block, lo in enumerate(starts):           # pass 2: the columns
            hi = min(lo + BUILD_COLUMNS, n_features)
            X = _block_values(seed, block, hi - lo, n_rows)
            kept = X != 0                             # an exact 0.0 is not stored
            columns, rows = np.nonzero(kept)          # CSC order: column, then row
            indptr = np.zeros(hi - lo + 1, dtype=np.int64)
            np.cumsum(np.bincount(columns, minlength=hi - lo), out=indptr[1:])
            writer.append(indptr, rows.astype(np.int32), X[kept])
        writer.close()
    return {"build_seconds": time.perf_counter() - started, "nnz": nnz,
            "relevant": relevant.tolist()}


def store_sizes(path: Path) -> dict:
    """On-disk bytes (every file) and decoded bytes (the arrays) of a store."""
    from ultrafs.store import open_store

    store = open_store(path)
    on_disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    value_bytes = np.dtype(store.dtype).itemsize
    nnz = int(store.nnz)
    decoded = (nnz * (4 + value_bytes) + (store.n_features + 1) * 8
               + store.n_samples * 8)
    return {"n_samples": store.n_samples, "n_features": store.n_features, "nnz": nnz,
            "dtype": str(np.dtype(store.dtype)), "on_disk_bytes": on_disk,
            "decoded_bytes": decoded}


def tiny_store(path: Path) -> Path:
    """A 300 x 500 planted store for the warm-ups (written once)."""
    from ultrafs.datasets.planted import make_planted_problem
    from ultrafs.store.writers.zarr_writer import write_store

    if not path.exists():
        problem = make_planted_problem(n_samples=300, n_features=500, n_relevant=10,
                                       n_test=10, seed=1)
        write_store(path, problem.X_train, problem.y_train)
    return path


# ------------------------------------------------------------------ runs
def run_select(store: str, scheduler, args) -> dict:
    """``args.repeat`` measured ``select`` runs; the first run's model, the
    median wall time and pass throughput, every run's figures."""
    from ultrafs.api import select

    reset_peak()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    cpu = time.process_time()
    walls, rates, each, models = [], [], [], []
    for _ in range(args.repeat):
        started = time.perf_counter()
        model = select(store, B=args.B, max_iter=args.max_iter, tol=0.0,
                       scheduler=scheduler,
                       num_workers=args.threads if scheduler == "threads" else None)
        walls.append(time.perf_counter() - started)
        history = model.history
        nnz = sum(int(record["scan_nnz"]) for record in history)
        seconds = sum(float(record["score_seconds"]) for record in history)
        rates.append(nnz / seconds / 1e6)
        each.append([round(float(r["score_seconds"]), 3) for r in history])
        models.append(model)
    return {"model": models[0], "repeats_identical":
            all(same_model(models[0], other)["identical"] for other in models[1:]),
            "wall_s": float(np.median(walls)), "wall_s_each": [round(w, 2) for w in walls],
            "passes": len(models[0].history), "pass_nnz": nnz,
            "pass_mnnz_per_s": float(np.median(rates)),
            "pass_mnnz_per_s_each": [round(r, 1) for r in rates],
            "pass_seconds_each": each,
            "driver_peak_mb": proc_status()["VmHWM"],
            "driver_cpu_s_per_run": (time.process_time() - cpu) / args.repeat,
            "driver_minflt_per_run": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                                      - faults) / args.repeat}


def same_model(reference, model) -> dict:
    """Which parts of two models agree, bit for bit."""
    same = {"features": list(model.features) == list(reference.features),
            "coef": np.array_equal(np.asarray(model.coef), np.asarray(reference.coef)),
            "intercept": np.array_equal(np.asarray(model.intercept),
                                        np.asarray(reference.intercept))}
    same["identical"] = all(same.values())
    return same


def _log_lines(logs, pattern: str) -> int:
    """How many lines of ``client.get_worker_logs()`` match ``pattern``."""
    regex = re.compile(pattern)
    return sum(1 for lines in logs.values() for _level, line in lines
               if regex.search(line))


def _cluster_settings(malloc: str, args) -> dict:
    """The dask settings of a cluster: the workers' malloc environment
    (``WORKER_MALLOC[malloc]`` in place of dask's trim threshold) and,
    when given, the scheduler's worker saturation."""
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    environ.update(WORKER_MALLOC[malloc])
    settings = {"distributed.nanny.pre-spawn-environ": environ}
    if args.worker_saturation is not None:
        settings["distributed.scheduler.worker-saturation"] = args.worker_saturation
    return settings


def _stream_totals(records, repeat: int):
    """Per run: tasks by key prefix, and count and seconds of every action
    (compute, transfer, disk-read, disk-write) in the task stream."""
    from dask.utils import key_split

    prefixes, actions = {}, {}
    for record in records:
        prefix = key_split(record["key"])
        prefixes[prefix] = prefixes.get(prefix, 0) + 1 / repeat
        for span in record.get("startstops", ()):
            totals = actions.setdefault(span["action"], {"count": 0.0, "seconds": 0.0})
            totals["count"] += 1 / repeat
            totals["seconds"] += (span["stop"] - span["start"]) / repeat
    return prefixes, actions


def _worker_rows(warm: dict, after: dict, limit_mb: dict, repeat: int) -> list:
    """One row per worker: memory at start, after the warm-up, its peak
    over the measured runs, page faults and CPU per run, spilling."""
    rows = []
    for address, report in sorted(after.items()):
        base = warm.get(address, {})
        rows.append({"memory_limit_mb": round(limit_mb[address], 1),
                     "start_mb": round(base.get("start_mb", float("nan")), 1),
                     "baseline_mb": round(base.get("VmRSS", float("nan")), 1),
                     "warm_peak_mb": round(base.get("warm_peak_mb", float("nan")), 1),
                     "pass_peak_mb": round(report["VmHWM"], 1),
                     "rss_after_mb": round(report["VmRSS"], 1),
                     "minflt_per_run": (report["minflt"] - base.get("minflt", 0)) / repeat,
                     "cpu_s_per_run": (report["cpu_s"] - base.get("cpu_s", 0)) / repeat,
                     "malloc_env": base.get("malloc_env"),
                     "same_process": base.get("pid") == report["pid"],
                     "status": report["status"],
                     "spilled_memory_bytes": report["spilled_memory_bytes"],
                     "spilled_disk_bytes": report["spilled_disk_bytes"],
                     "spill_metrics": report["spill_metrics"],
                     "keys_held": report["keys_held"]})
    return rows


def _spilled(workers) -> bool:
    """Whether any worker's SpillBuffer wrote to disk."""
    return any("disk-write:count" in w["spill_metrics"] for w in workers)


def _measured_in_time(store: str, client, args):
    """:func:`run_select` in a thread; its result, or None when it has not
    finished within ``args.run_timeout`` seconds (every worker paused:
    dask never resumes a worker whose unmanaged memory stays above the
    pause fraction, and the pass waits for ever)."""
    import threading

    outcome = {}

    def measure():
        try:
            outcome["run"] = run_select(store, client, args)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            outcome["error"] = exc

    thread = threading.Thread(target=measure, daemon=True)
    thread.start()
    thread.join(args.run_timeout)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("run")


def cluster_run(store: str, tiny: str, n_workers: int, malloc: str, args) -> dict:
    """The measured ``select`` on a fresh LocalCluster of ``n_workers``
    whose processes start with the ``WORKER_MALLOC[malloc]`` environment."""
    import dask
    from distributed import Client, LocalCluster, get_task_stream

    started = time.perf_counter()
    with dask.config.set(_cluster_settings(malloc, args)), \
            LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                         memory_limit=args.memory_limit, dashboard_address=None,
                         silence_logs=logging.WARNING) as cluster, \
            Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(n_workers)
        limit_mb = {address: info["memory_limit"] / 2**20 for address, info in
                    client.scheduler_info(n_workers=-1)["workers"].items()}
        warm = client.run(warm_worker, tiny)
        startup = time.perf_counter() - started
        with get_task_stream(client=client) as stream:
            run = _measured_in_time(store, client, args)
        finished = run is not None
        run = run or {"model": None}
        prefixes, actions = _stream_totals(stream.data, args.repeat)
        after = client.run(worker_report)
        n_after = len(client.scheduler_info(n_workers=-1)["workers"])
        logs = client.get_worker_logs()
        nanny_logs = client.get_worker_logs(nanny=True)
        restart_events = client.get_events("worker-restart-memory")
    workers = _worker_rows(warm, after, limit_mb, args.repeat)
    run.update(
        finished=finished, cluster_startup_s=startup, task_actions_per_run=actions,
        tasks_per_run=prefixes,
        workers_cpu_s_per_run=sum(w["cpu_s_per_run"] for w in workers),
        workers=workers, workers_after=n_after,
        restarted=(n_after != n_workers or len(restart_events) > 0
                   or not all(w["same_process"] for w in workers)),
        restart_events=len(restart_events),
        pause_lines=_log_lines(logs, r"Pausing worker"),
        memory_warning_lines=_log_lines(logs, r"[Mm]emory use is high|exceeded"),
        nanny_restart_lines=_log_lines(nanny_logs, r"exceeded|[Rr]estart"),
        spilled=_spilled(workers))
    return run


def table(paths) -> str:
    """The Markdown table of the README from result files."""
    lines = [("| run | scheduler | limit | select wall s (median) | pass M nnz/s (median) "
              "| × threads | worker start / baseline / peak MiB | driver peak MiB "
              "| worker CPU s | restarts / pauses / spills | model |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for path in paths:
        result = json.loads(Path(path).read_text())
        name = Path(path).stem
        for row in result["rows"]:
            workers = row.get("workers", [])
            memory = "—"
            if workers:
                memory = (f"{max(w['start_mb'] for w in workers):.0f} / "
                          f"{max(w['baseline_mb'] for w in workers):.0f} / "
                          f"{max(w['pass_peak_mb'] for w in workers):.0f}")
            limit = result["memory_limit"] if workers else "—"
            if not row.get("finished", True):
                lines.append(f"| {name} | {row['scheduler']} | {limit} | did not finish "
                             f"| — | — | {memory} | — | — | {row['restart_events']} / "
                             f"{row['pause_lines']} / {'yes' if _spilled(workers) else 'no'} "
                             f"| — |")
                continue
            ratio = row.get("throughput_vs_threads")
            spilled = _spilled(workers)
            events = (f"{row['restart_events']} / {row['pause_lines']} / "
                      f"{'yes' if spilled else 'no'}" if workers else "—")
            cpu = (f"{row['workers_cpu_s_per_run']:.1f}" if workers
                   else f"{row['driver_cpu_s_per_run']:.1f} (driver)")
            scheduler = row["scheduler"]
            if row.get("malloc") not in (None, "dask"):
                scheduler += f" (malloc: {row['malloc']})"
            lines.append(
                f"| {name} | {scheduler} | {limit} | {row['wall_s']:.2f} "
                f"| {row['pass_mnnz_per_s']:.0f} | {'1' if ratio is None else f'{ratio:.2f}'} "
                f"| {memory} | {row['driver_peak_mb']:.0f} | {cpu} | {events} "
                f"| {'identical' if row['identical'] else 'DIFFERS'} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=None,
                        help="default: bench/out/worker_memory/planted_ROWSxFEATURES.zarr")
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--features", type=int, default=36864)
    parser.add_argument("--relevant", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-limit", default="512MiB")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of the threaded run (the machine's cores)")
    parser.add_argument("--B", type=int, default=10)
    parser.add_argument("--max-iter", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=1,
                        help="select runs per scheduler (medians reported)")
    parser.add_argument("--worker-malloc", default="dask",
                        help="comma-separated glibc malloc settings of the workers, "
                        f"each run in turn: {', '.join(WORKER_MALLOC)} (see WORKER_MALLOC)")
    parser.add_argument("--worker-saturation", type=float, default=None,
                        help="dask's distributed.scheduler.worker-saturation (default: "
                        "dask's, 1.1: about one block task queued per worker thread "
                        "beyond the running one; inf sends every block at once)")
    parser.add_argument("--run-timeout", type=float, default=300.0,
                        help="seconds the measured runs on one cluster may take; "
                        "past them the row is recorded as not finished")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--result", default="worker_memory")
    parser.add_argument("--table", nargs="+", default=None, metavar="RESULT_JSON",
                        help="print the Markdown table of these result files and stop")
    args = parser.parse_args()
    if args.table:
        print(table(args.table))
        return

    import dask

    store = Path(args.store or OUT_DIR / "worker_memory"
                 / f"planted_{args.rows}x{args.features}.zarr")
    store.parent.mkdir(parents=True, exist_ok=True)
    build = None
    if not store.exists():
        build = build_store(store, args.rows, args.features, args.relevant, args.seed)
        print(json.dumps({"built": str(store), "build_seconds":
                          round(build["build_seconds"], 1)}), flush=True)
    sizes = store_sizes(store)
    if (sizes["n_samples"], sizes["n_features"]) != (args.rows, args.features):
        parser.error(f"{store} holds {sizes['n_samples']} x {sizes['n_features']}, "
                     f"not --rows {args.rows} x --features {args.features}")
    limit = dask.utils.parse_bytes(args.memory_limit)
    sizes["on_disk_over_limit"] = sizes["on_disk_bytes"] / limit
    sizes["decoded_over_limit"] = sizes["decoded_bytes"] / limit
    print(json.dumps(sizes), flush=True)
    if args.build_only:
        return
    tiny = str(tiny_store(store.parent / "tiny.zarr"))
    from ultrafs.api import select

    # the kernel cache filled, the threaded run's kernels loaded
    select(tiny, B=3, max_iter=2, scheduler="threads")
    rows, load = [], []
    threaded = run_select(str(store), "threads", args)
    reference = threaded.pop("model")
    threaded.update(scheduler=f"threads x{args.threads}", **same_model(reference, reference))
    rows.append(threaded)
    load.append(os.getloadavg()[0])
    print(json.dumps({k: v for k, v in threaded.items()}, default=str), flush=True)
    mallocs = args.worker_malloc.split(",")
    if not set(mallocs) <= set(WORKER_MALLOC):
        parser.error(f"--worker-malloc: each of {', '.join(WORKER_MALLOC)}")
    for n_workers, malloc in ((int(n), m) for n in args.workers.split(",")
                              for m in mallocs):
        run = cluster_run(str(store), tiny, n_workers, malloc, args)
        model = run.pop("model")
        run.update(scheduler=f"LocalCluster {n_workers} x 1 thread", malloc=malloc)
        if run["finished"]:
            run.update(same_model(reference, model),
                       wall_vs_threads=run["wall_s"] / threaded["wall_s"],
                       throughput_vs_threads=(run["pass_mnnz_per_s"]
                                              / threaded["pass_mnnz_per_s"]))
        rows.append(run)
        load.append(os.getloadavg()[0])
        print(json.dumps(run, default=str), flush=True)
    path = write_result(args.result, {
        "command": " ".join(sys.argv), "store": str(store), "sizes": sizes,
        "build": build, "memory_limit": args.memory_limit, "B": args.B,
        "max_iter": args.max_iter, "worker_malloc": args.worker_malloc,
        "worker_saturation": args.worker_saturation, "features": list(reference.features),
        "planted_recovered": len(set(reference.features)
                                 & set(_planted_weights(sizes["n_features"], args.relevant,
                                                        args.seed)[0].tolist())),
        "load_average_1min_after_each_run": load, "rows": rows})
    print(f"written {path}", flush=True)


if __name__ == "__main__":
    main()
