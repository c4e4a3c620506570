"""imdb50k train store: how fast are the scoring pass and a whole select?

Question: (1) scoring-pass throughput in nonzeros per second on 2 cores,
in memory and from the Zarr store (target ≥ 150M nnz/s in memory, at least
half of that from Zarr); (2) end-to-end wall time and peak RSS of
``ultrafs select --B 30 --max-iter 10`` (goal ≤ 1.1 s of work, half the
2.2 s the authors' C++ toolkit needs; we report the process's wall time,
which also includes interpreter start-up and imports, and the in-process
time of the select itself).

Usage: python bench/imdb_speed.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from common import OUT_DIR, imdb_stores, peak_rss_mb, run_measured, write_result
from ultrafs.allocator import map_large_allocations

map_large_allocations()  # as the command line runs (its glibc setting), before any array
from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.api import select
from ultrafs.features.linear import LinearFeatures
from ultrafs.kernels.scoring import score_block_topk_binary
from ultrafs.store import InMemoryStore, open_store


def in_memory_copy(store):
    block = store.read_range(0, store.n_features)
    data = block.values(np.float32)
    return InMemoryStore.from_csc_arrays(block.indptr, block.indices, data,
                                         store.n_samples, store.read_labels(),
                                         store.classes, block_size=65536,
                                         id_offset=store.id_offset)


def pass_rate(features, weights, repeat, **kwargs):
    worst_case_analysis(features, weights, 30, **kwargs)  # warm
    rates, seconds = [], []
    for _ in range(repeat):
        _, stats = worst_case_analysis(features, weights, 30, **kwargs)
        rates.append(stats.nnz_per_second)
        seconds.append(stats.seconds)
    return {"median_nnz_per_s": statistics.median(rates),
            "median_seconds": statistics.median(seconds), "nnz": stats.nnz,
            "n_blocks": stats.n_blocks}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    train_path, _, _ = imdb_stores()
    store = open_store(train_path)
    rng = np.random.default_rng(0)
    weights = rng.random(store.n_samples) * store.read_labels()
    results = {"n_samples": store.n_samples, "n_features": store.n_features,
               "nnz": store.nnz}

    memory = in_memory_copy(store)
    block = memory.read_range(0, memory.n_features)
    excluded = np.zeros(0, dtype=np.int64)
    score_block_topk_binary(block.indptr, block.indices, weights, 0, excluded, 30, 1.0)
    started = time.perf_counter()
    score_block_topk_binary(block.indptr, block.indices, weights, 0, excluded, 30, 1.0)
    kernel_seconds = time.perf_counter() - started
    results["kernel_one_thread_nnz_per_s"] = block.nnz / kernel_seconds

    for name, st in (("memory", memory), ("zarr", store)):
        for workers in (1, 2):
            results[f"pass_{name}_{workers}threads"] = pass_rate(
                LinearFeatures(st), weights, args.repeat, scheduler="threads",
                num_workers=workers)

    select(store, B=30, max_iter=1, tol=0.0, num_workers=2)  # warm
    started = time.perf_counter()
    model = select(store, B=30, max_iter=10, tol=0.0, num_workers=2)
    results["select_in_process_seconds"] = time.perf_counter() - started
    results["select_phases"] = {
        phase: sum(h[f"{phase}_seconds"] for h in model.history)
        for phase in ("score", "materialize", "solve")}

    out = OUT_DIR / "imdb_speed_model.json"
    cli = run_measured([sys.executable, "-m", "ultrafs.cli", "select", "--data",
                        str(train_path), "--B", "30", "--max-iter", "10", "--tol",
                        "0", "--out", str(out)])
    results["select_cli"] = {"seconds": cli["seconds"],
                             "peak_rss_mb": cli["peak_rss_mb"]}
    started = time.perf_counter()
    run_measured([sys.executable, "-c", "import ultrafs.api, ultrafs.store.zarr_store"])
    results["import_seconds"] = time.perf_counter() - started
    results["peak_rss_mb_this_process"] = peak_rss_mb()
    for key, value in results.items():
        print(key, value)
    write_result("imdb_speed", results)


if __name__ == "__main__":
    main()
