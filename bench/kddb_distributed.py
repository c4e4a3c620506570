"""The kddb-like degree-2 run on a dask.distributed cluster (issue 11).

Question: does ``ultrafs select --poly 2 --gamma 4 --B 50 --max-iter 10
--tol 0`` on a ``dask.distributed`` cluster of 2 local worker processes
give the model of the same run on the local threads scheduler?

Usage::

    python bench/kddb_distributed.py TRAIN.zarr [--result NAME]

The local run (``--scheduler threads``) runs first as a child process;
then a ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``
is started and ``ultrafs select --scheduler tcp://...`` runs as a child
process against it (GNU time gives the driver's peak RSS; the workers'
own peaks are sampled from the cluster).  The two models are compared:
features, weights and bias bit for bit, stop reason, and the objective of
every iteration.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import run_measured, write_result

from kddb_scale import COMMAND


def _worker_peaks(client, stop, peaks):
    """Sample the workers' resident memory every 2 s until ``stop`` is set."""
    while not stop.is_set():
        try:
            info = client.scheduler_info(n_workers=-1)["workers"]
            for address, worker in info.items():
                rss = worker.get("metrics", {}).get("memory", 0) / 2**20
                peaks[address] = max(peaks.get(address, 0.0), rss)
        except Exception:  # noqa: BLE001 - sampling only
            pass
        stop.wait(2.0)


def compare(local, remote):
    """Which parts of two model files agree (bit for bit where numeric)."""
    same = {
        "features": local["features"] == remote["features"],
        "coef": local["coef"] == remote["coef"],
        "intercept": local["intercept"] == remote["intercept"],
        "stop_reason": local["stop_reason"] == remote["stop_reason"],
        "objectives": [h["objective"] for h in local["history"]]
        == [h["objective"] for h in remote["history"]],
    }
    same["identical"] = all(same.values())
    return same


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train")
    parser.add_argument("--result", default="kddb_distributed")
    parser.add_argument("--keep", default=None,
                        help="folder where both model files are kept")
    args = parser.parse_args()

    from dask.distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory() as work:
        local_path = Path(work) / "local.json"
        local_run = run_measured([sys.executable, "-m", "ultrafs.cli", "select",
                                  "--data", args.train, *COMMAND, "--out",
                                  str(local_path)])
        local = json.loads(local_path.read_text())
        if args.keep:
            Path(args.keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(local_path, Path(args.keep) / "local.json")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client, \
            tempfile.TemporaryDirectory() as work:
        stop, peaks = threading.Event(), {}
        sampler = threading.Thread(target=_worker_peaks, args=(client, stop, peaks),
                                   daemon=True)
        sampler.start()
        model_path = Path(work) / "distributed.json"
        started = time.perf_counter()
        run = run_measured([sys.executable, "-m", "ultrafs.cli", "select",
                            "--data", args.train, *COMMAND, "--scheduler",
                            cluster.scheduler_address, "--out", str(model_path)])
        seconds = time.perf_counter() - started
        stop.set()
        sampler.join()
        remote = json.loads(model_path.read_text())
        if args.keep:
            shutil.copy(model_path, Path(args.keep) / "distributed.json")
    row = {"train": args.train, "wall_s": round(seconds, 1),
           "driver_peak_rss_mb": round(run["peak_rss_mb"]),
           "worker_peak_rss_mb": sorted(round(v) for v in peaks.values()),
           "local_wall_s": round(local_run["seconds"], 1),
           "local_peak_rss_mb": round(local_run["peak_rss_mb"]),
           **compare(local, remote)}
    print(json.dumps(row), flush=True)
    write_result(args.result, {"command": ["ultrafs", "select", *COMMAND,
                                           "--scheduler", "tcp://..."],
                               "rows": [row]})


if __name__ == "__main__":
    main()
