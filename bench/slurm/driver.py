"""The README's several-node recipe, run as a SLURM job: a driver that starts
its Dask workers as SLURM jobs through dask-jobqueue's ``SLURMCluster`` and
runs one FGM selection on them.

Usage (inside ``sbatch``; ``run_recipes.sh`` submits it)::

    python bench/slurm/driver.py STORE OUT.json --jobs 2 --cores 1 \\
        --memory 2GB --checkpoint CKPT --select B=10 max_iter=40 block_size=5000

It prints the worker job script dask-jobqueue writes, the SLURM job ids of
the workers, how many scoring tasks each worker ran (from the scheduler's
task stream), and writes the model with ``Model.save``.  On a node of 2
cores the driver and each 1-core worker job ask ``--oversubscribe`` (the
partition allows two jobs per core, see ``setup_single_node.sh``);
on a real cluster leave that out.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time


def _option(text):
    """``NAME=VALUE`` of ``--select``: VALUE as JSON when it parses, else text."""
    name, _, value = text.partition("=")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    parser.add_argument("out")
    parser.add_argument("--jobs", type=int, default=2, help="worker jobs")
    parser.add_argument("--cores", type=int, default=1, help="cores per worker job")
    parser.add_argument("--memory", default="2GB", help="memory per worker job")
    parser.add_argument("--walltime", default="00:15:00")
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--oversubscribe", action="store_true",
                        help="worker jobs ask --oversubscribe (a 2-core node)")
    parser.add_argument("--log-directory", default=None)
    parser.add_argument("--wait-for", type=int, default=None,
                        help="workers to wait for before the selection (default: "
                             "--jobs; 0: none, as docs/CLUSTERS.md's recipe did)")
    parser.add_argument("--begin", default=None,
                        help="worker jobs start no sooner than this (sbatch "
                             "--begin=now+BEGIN, e.g. 90): a queue that makes "
                             "them wait")
    parser.add_argument("--select", nargs="*", default=[], type=_option,
                        help="options of ultrafs.api.select, NAME=VALUE")
    args = parser.parse_args(argv)

    from dask_jobqueue import SLURMCluster
    from ultrafs.api import select
    from ultrafs.errors import UltraFSError

    extra = ["--requeue"] + (["--oversubscribe"] if args.oversubscribe else [])
    if args.begin:
        extra.append(f"--begin=now+{args.begin}")
    wait_for = args.jobs if args.wait_for is None else args.wait_for
    prologue = []
    if os.environ.get("PYTHONPATH"):
        # the workers import ultrafs from the same tree as the driver
        prologue.append(f"export PYTHONPATH={os.environ['PYTHONPATH']}")
    cluster = SLURMCluster(cores=args.cores, processes=1, memory=args.memory,
                           walltime=args.walltime, python=sys.executable,
                           job_extra_directives=extra, job_script_prologue=prologue,
                           log_directory=args.log_directory)
    print("worker job script:\n" + cluster.job_script(), flush=True)
    try:
        model = _select_on(cluster, args, wait_for, select)
    except UltraFSError as exc:
        print(f"ultrafs: {exc}", flush=True)
        return 1
    finally:
        cluster.close()    # cancels the worker jobs
    model.save(args.out)
    print(f"wrote {args.out}", flush=True)
    return 0


def _select_on(cluster, args, wait_for, select):
    """Scale the cluster to ``args.jobs`` worker jobs, wait for ``wait_for``
    workers, run the selection on them; print what ran where."""
    from distributed import Client, get_task_stream

    started = time.perf_counter()
    cluster.scale(jobs=args.jobs)
    with Client(cluster) as client:
        if wait_for:
            client.wait_for_workers(wait_for)
        waited = time.perf_counter() - started
        jobs = sorted(job.job_id for job in cluster.workers.values())
        print(f"worker jobs {jobs}; {len(client.scheduler_info()['workers'])} "
              f"connected after {waited:.1f} s", flush=True)
        print(subprocess.run(["squeue", "-o", "%i %j %T %C %m %N %r"], capture_output=True,
                             text=True).stdout, flush=True)
        options = dict(args.select)
        started = time.perf_counter()
        try:
            with get_task_stream(client) as stream:
                model = select(args.store, scheduler=client, checkpoint=args.checkpoint,
                               resume=args.checkpoint is not None, **options)
        finally:
            print(f"select: {time.perf_counter() - started:.1f} s", flush=True)
        tasks = collections.Counter(task["worker"] for task in stream.data)
        names = {address: info.get("name") for address, info in
                 client.scheduler_info()["workers"].items()}
        print(json.dumps({"tasks_per_worker": {str(names.get(w, w)): n
                                               for w, n in sorted(tasks.items())},
                          "n_features": len(model.features)}), flush=True)
    return model


if __name__ == "__main__":
    sys.exit(main())
