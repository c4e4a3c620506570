"""Scoring-pass throughput by storage backend, and I/O overlap under latency.

Question: how fast is a scoring pass (``worst_case_analysis``, linear
features, k = 30) from memory, Zarr, Parquet-long and a wide Parquet table,
and do passes overlap I/O with compute when every block read pays a
remote-storage latency?

Data
----
* ``bigram``: imdb50k train (rows 1–25,000 of imdb50k_uni_bigram; 25,000 ×
  2,482,603, 8.7M nonzeros, binary), the Zarr store built by
  ``common.imdb_stores()``; the Parquet-long store and the in-memory copy
  hold the same arrays.  A wide table cannot hold 2.48M columns sensibly,
  so the wide layout is measured on:
* ``unigram5k``: the 5,000 most frequent columns (by nonzeros, ties by
  column number, kept in column order) of imdb_train_unigram_binary
  (25,000 × 74,849), written as a wide Parquet table of uint8 columns plus
  a float64 label (pyarrow defaults), and as Zarr, Parquet-long and memory
  stores of the same matrix.

Part 1 (throughput): threaded scheduler, 1 and 2 workers, 32 even column
blocks on every backend, warm JIT and page cache; the median over
``--repeat`` passes, configurations interleaved round by round so that
load from other jobs spreads over all of them.  Every pass must return the
candidates of the in-memory pass (the quality figure).

Part 2 (overlap): the bigram Zarr store behind ``LatencyColumnStore``
(sleep ``L`` before every block read: one round trip per block), ``L`` in
{0, 5, 20} ms, 8/32/128 blocks, 1/2/8/16 threads.  Sleeping releases the
GIL, so threads beyond the cores keep reads in flight.  Compared with
``C_W`` (the same pass at ``L = 0``): the ideal ``max(C_W, L·B/W)``; the
*pool bound* ``max(C_W, (C_1 + L·B)/W)``, the best a pool of W threads can
do when each task reads its block and then scores it (a thread cannot
compute while it waits, so one thread per core gives no overlap with
compute: the ideal needs ``W >= (C_1 + L·B)/C_W`` threads); and the fully
serial ``C_1 + L·B``.  A smaller grid repeats this with
``ZarrLatencyStore`` (``L`` per zarr chunk request; a block read is two
dependent requests, ``indptr`` then ``indices``, so it waits ``2L``).

Part 3 (memory): peak RSS of a fresh process that opens each store and
runs three passes at 2 threads (``--rss-probe``).

Usage: python bench/io_throughput.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time

import numpy as np

from common import DATA_DIR, OUT_DIR, imdb_stores, peak_rss_mb, run_measured, write_result
from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.features.linear import LinearFeatures
from ultrafs.store import InMemoryStore, open_store
from ultrafs.store.latency import LatencyColumnStore, ZarrLatencyStore

K = 30
N_BLOCKS = 32
LATENCIES = (0.0, 0.005, 0.020)
BLOCK_COUNTS = (8, 32, 128)
WORKERS = (1, 2, 8, 16)
ZARR_LATENCIES = (0.005, 0.020)
ZARR_BLOCK_COUNTS = (32, 128)
ZARR_WORKERS = (2, 8, 16)
WIDE_COLUMNS = 5_000


# ------------------------------------------------------------------ stores
def in_memory_copy(store):
    """The store's matrix as an InMemoryStore (float32 values)."""
    block = store.read_range(0, store.n_features)
    return InMemoryStore.from_csc_arrays(
        block.indptr, block.indices, block.values(np.float32), store.n_samples,
        store.read_labels(), store.classes, id_offset=store.id_offset)


def bigram_stores():
    """memory / zarr / parquet_long stores of the imdb50k train matrix."""
    from ultrafs.store.writers.parquet_long_writer import write_parquet_long

    zarr_path, _, _ = imdb_stores()
    zarr = open_store(zarr_path)
    pql = OUT_DIR / "imdb" / "train.pql"
    seconds = None
    if not pql.exists():
        started = time.perf_counter()
        write_parquet_long(pql, zarr.to_csc(), zarr.read_targets(), dtype=np.float32,
                           id_offset=zarr.id_offset, command="bench io_throughput")
        seconds = time.perf_counter() - started
    stores = {"memory": in_memory_copy(zarr), "zarr": zarr, "parquet_long": open_store(pql)}
    return stores, {"write_parquet_long_seconds": seconds}


def unigram_stores():
    """memory / zarr / parquet_long / parquet_wide stores of unigram5k."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sklearn.datasets import load_svmlight_file

    from ultrafs.store.writers.parquet_long_writer import write_parquet_long
    from ultrafs.store.writers.zarr_writer import write_store

    work = OUT_DIR / "imdb_unigram5k"
    work.mkdir(parents=True, exist_ok=True)
    paths = {"zarr": work / "train.zarr", "parquet_long": work / "train.pql",
             "parquet_wide": work / "train_wide.parquet"}
    X, y = load_svmlight_file(str(DATA_DIR / "imdb_train_unigram_binary.svm.bz2"),
                              dtype=np.float32)
    X = X.tocsc()
    source_shape = [int(n) for n in X.shape]
    counts = np.diff(X.indptr)
    keep = np.sort(np.lexsort((np.arange(X.shape[1]), -counts))[:WIDE_COLUMNS])
    X = X[:, keep]
    X.sort_indices()
    info = {"source_shape": source_shape,
            "columns_kept": int(len(keep)), "nnz": int(X.nnz),
            "nnz_share_of_source": float(counts[keep].sum() / counts.sum())}
    if not paths["zarr"].exists():
        write_store(paths["zarr"], X, y, dtype=np.float32, command="bench io_throughput")
    if not paths["parquet_long"].exists():
        write_parquet_long(paths["parquet_long"], X, y, dtype=np.float32,
                           command="bench io_throughput")
    if not paths["parquet_wide"].exists():
        dense = X.toarray().astype(np.uint8)
        columns = {f"w{j}": pa.array(dense[:, pos]) for pos, j in enumerate(keep)}
        columns["label"] = pa.array(np.asarray(y, dtype=np.float64))
        pq.write_table(pa.table(columns), paths["parquet_wide"])
        del dense, columns
    info["file_mb"] = {name: round(disk_mb(path), 1) for name, path in paths.items()}
    stores = {"memory": InMemoryStore(X, y, dtype=np.float32)}
    stores.update({name: open_store(path) for name, path in paths.items()})
    return stores, info


def disk_mb(path):
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


# ---------------------------------------------------------------- timing
def one_pass(store, weights, n_blocks, workers):
    """One timed pass; ``n_blocks`` None uses the store's default partition."""
    block_size = None if n_blocks is None else -(-store.n_features // n_blocks)
    return worst_case_analysis(LinearFeatures(store), weights, K, block_size=block_size,
                               scheduler="threads", num_workers=workers)


def interleaved(configs, weights, repeat):
    """Median seconds per config; rounds run every config once, in turn.

    ``configs`` maps a name to ``(store, n_blocks, workers)``.  Returns
    ``{name: {"seconds": [...], "stats": last PassStats, "keys": keys}}``.
    """
    runs = {name: {"seconds": []} for name in configs}
    for name, (store, n_blocks, workers) in configs.items():      # warm
        cand, stats = one_pass(store, weights, n_blocks, workers)
        runs[name].update(keys=cand.keys, stats=stats)
    for _ in range(repeat):
        for name, (store, n_blocks, workers) in configs.items():
            _, stats = one_pass(store, weights, n_blocks, workers)
            runs[name]["seconds"].append(stats.seconds)
    for run in runs.values():
        run["median"] = statistics.median(run["seconds"])
    return runs


def weights_for(store):
    rng = np.random.default_rng(0)
    return rng.random(store.n_samples) * store.read_labels()


# ---------------------------------------------------------------- part 1
def throughput(datasets, repeat):
    """Pass medians per (data, backend, partition, workers)."""
    rows = []
    for data_name, stores in datasets.items():
        weights = weights_for(stores["memory"])
        configs = {(backend, partition, workers): (store, n_blocks, workers)
                   for backend, store in stores.items()
                   for partition, n_blocks in (("even32", N_BLOCKS), ("default", None))
                   for workers in (1, 2)}
        runs = interleaved(configs, weights, repeat)
        reference = runs[("memory", "even32", 1)]["keys"]
        for (backend, partition, workers), run in runs.items():
            stats = run["stats"]
            rows.append({"data": data_name, "backend": backend, "partition": partition,
                         "workers": workers, "n_blocks": stats.n_blocks, "nnz": stats.nnz,
                         "median_seconds": run["median"],
                         "median_nnz_per_s": stats.nnz / run["median"],
                         "seconds": run["seconds"],
                         "same_candidates_as_memory": bool(
                             np.array_equal(run["keys"], reference))})
    return rows


# ---------------------------------------------------------------- part 2
def overlap(make_store, latencies, block_counts, workers_list, repeat, weights,
            round_trips=1, compute=None):
    """Pass times under latency, with the overlap models.

    ``make_store(latency)`` returns the store to read; ``round_trips`` is
    the number of dependent requests per block read (so a block costs
    ``round_trips·L``).  ``compute`` maps ``(blocks, workers)`` to the
    pass seconds at zero latency (measured here when None).
    """
    grid = list(itertools.product(latencies, block_counts, workers_list))
    stores = {lat: make_store(lat) for lat in latencies}
    configs = {(lat, b, w): (stores[lat], b, w) for lat, b, w in grid}
    runs = interleaved(configs, weights, repeat)
    if compute is None:
        compute = {(b, w): runs[(0.0, b, w)]["median"]
                   for b in block_counts for w in workers_list}
    rows = []
    for (lat, b, w), run in runs.items():
        c_w, c_1 = compute[(b, w)], compute[(b, 1)]
        wait = round_trips * lat * run["stats"].n_blocks
        ideal = max(c_w, wait / w)
        no_overlap = c_w + wait / w
        measured = run["median"]
        serial = c_1 + wait
        rows.append({"latency_ms": lat * 1e3, "n_blocks": run["stats"].n_blocks,
                     "workers": w, "median_seconds": measured, "seconds": run["seconds"],
                     "compute_seconds": c_w, "latency_over_workers": wait / w,
                     "ideal_max": ideal, "pool_bound": max(c_w, (c_1 + wait) / w),
                     "no_overlap_with_compute": no_overlap, "fully_serial": serial,
                     "measured_over_ideal": measured / ideal,
                     "serial_over_measured": serial / measured})
    return rows, compute


# ---------------------------------------------------------------- part 3
def own_peak_rss_mb():
    """Peak RSS of this process's own address space (VmHWM), in MB.

    ``getrusage`` (and ``wait4``) report a child's ``ru_maxrss`` including
    the parent's resident size at fork, so a child started by a large
    parent looks large; ``VmHWM`` is reset at exec.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return peak_rss_mb()


def rss_probe(kind, path):
    """(Child process) open a store, run three passes, print peak RSS."""
    if kind != "imports":
        store = open_store(path)
        if kind == "memory":
            store = in_memory_copy(store)
        weights = weights_for(store)
        for _ in range(3):
            one_pass(store, weights, N_BLOCKS, 2)
    print(own_peak_rss_mb())


def rss_table(paths):
    rows = []
    for label, (kind, path) in paths.items():
        out = run_measured([sys.executable, __file__, "--rss-probe", kind, str(path)])
        rows.append({"store": label, "peak_rss_mb": float(out["stdout"].split()[-1])})
    return rows


# ---------------------------------------------------------------- output
def fmt(x, digits=3):
    return "–" if x is None else f"{x:.{digits}f}"


def markdown(results):
    """The tables quoted in bench/notes/05-backends-and-latency.md."""
    repeat = results["repeat"]
    lines = [f"### Scoring-pass throughput (threads, k = {K}, median of {repeat} passes)",
             "", "nnz/s (pass seconds); *32 blocks*: even column blocks; *default*: "
             "the store's own partition.", "",
             "| data | backend | nnz | 32 blocks, 1 thread | 32 blocks, 2 threads | "
             "default blocks | default, 1 thread | default, 2 threads | same candidates |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows = {(r["data"], r["backend"], r["partition"], r["workers"]): r
            for r in results["throughput"]}

    def cell(row):
        return (f"{row['median_nnz_per_s'] / 1e6:.0f}M "
                f"({row['median_seconds']:.3f} s)")

    for data, backend, partition, workers in rows:
        if (partition, workers) != ("even32", 1):
            continue
        mine = [rows[(data, backend, p, w)] for p in ("even32", "default") for w in (1, 2)]
        same = all(r["same_candidates_as_memory"] for r in mine)
        lines.append(f"| {data} | {backend} | {mine[0]['nnz'] / 1e6:.2f}M | "
                     f"{cell(mine[0])} | {cell(mine[1])} | {mine[2]['n_blocks']} | "
                     f"{cell(mine[2])} | {cell(mine[3])} | {'yes' if same else 'NO'} |")
    for key, title in (("overlap", "`LatencyColumnStore` over the bigram Zarr store, "
                        "L per block read"),
                       ("overlap_zarr", "`ZarrLatencyStore`, L per zarr chunk request; "
                        "a block read is 2 dependent requests, so L·B counts 2L per "
                        "block")):
        lines += ["", f"### Pass seconds under injected latency: {title} "
                  f"(median of {repeat})", "",
                  "| L ms | blocks B | threads W | measured s | C_W (L = 0) | L·B/W | "
                  "ideal max(C_W, L·B/W) | pool bound max(C_W, (C_1+L·B)/W) | "
                  "C_1 + L·B (serial) | measured / ideal | serial / measured |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for row in results[key]:
            if row["latency_ms"] == 0:
                continue
            lines.append(
                f"| {row['latency_ms']:g} | {row['n_blocks']} | {row['workers']} | "
                f"{fmt(row['median_seconds'])} | {fmt(row['compute_seconds'])} | "
                f"{fmt(row['latency_over_workers'])} | {fmt(row['ideal_max'])} | "
                f"{fmt(row['pool_bound'])} | {fmt(row['fully_serial'])} | "
                f"{fmt(row['measured_over_ideal'], 2)} | "
                f"{fmt(row['serial_over_measured'], 1)} |")
    lines += ["", "### Peak RSS of a fresh process running three passes "
              "(32 blocks, 2 threads)", "", "| process | peak RSS MB |", "|---|---|"]
    lines += [f"| {r['store']} | {r['peak_rss_mb']:.0f} |" for r in results["rss"]]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rss-probe", nargs=2, metavar=("KIND", "PATH"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_probe:
        rss_probe(*args.rss_probe)
        return
    started = time.perf_counter()
    bigram, setup = bigram_stores()
    unigram, unigram_info = unigram_stores()
    setup["seconds"] = time.perf_counter() - started
    results = {"repeat": args.repeat, "k": K, "setup": setup, "unigram5k": unigram_info,
               "loadavg_at_start": os.getloadavg(),
               "bigram": {"n_samples": bigram["zarr"].n_samples,
                          "n_features": bigram["zarr"].n_features,
                          "nnz": bigram["zarr"].nnz}}
    results["throughput"] = throughput({"bigram": bigram, "unigram5k": unigram},
                                       args.repeat)
    results["peak_rss_mb_after_throughput"] = peak_rss_mb()

    zarr = bigram["zarr"]
    weights = weights_for(zarr)
    results["overlap"], compute = overlap(
        lambda lat: LatencyColumnStore(zarr, lat), LATENCIES, BLOCK_COUNTS, WORKERS,
        args.repeat, weights)
    results["overlap_zarr"], _ = overlap(
        lambda lat: ZarrLatencyStore(zarr.path, get_latency=lat), ZARR_LATENCIES,
        ZARR_BLOCK_COUNTS, ZARR_WORKERS, args.repeat, weights, round_trips=2,
        compute=compute)
    results["peak_rss_mb_this_process"] = peak_rss_mb()
    results["rss"] = rss_table({
        "imports and JIT load only": ("imports", zarr.path),
        "bigram memory (copy read from Zarr)": ("memory", zarr.path),
        "bigram zarr": ("zarr", zarr.path),
        "bigram parquet_long": ("parquet_long", bigram["parquet_long"].path),
        "unigram5k parquet_wide": ("parquet_wide", unigram["parquet_wide"].path)})
    results["total_seconds"] = time.perf_counter() - started
    results["loadavg_at_end"] = os.getloadavg()
    write_result("io_throughput", results)
    print(markdown(results))
    print(f"\ntotal {results['total_seconds']:.0f} s; peak RSS of this process "
          f"{results['peak_rss_mb_this_process']:.0f} MB; load average "
          f"{results['loadavg_at_start'][0]:.1f} at start, "
          f"{results['loadavg_at_end'][0]:.1f} at end ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
