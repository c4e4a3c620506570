"""Shared helpers of the benchmarks: timing, peak memory, result files.

Every benchmark records time, peak memory and a quality figure, warms the
numba JIT before timing, and writes its raw results as JSON under
``bench/out/`` (ignored by git); the figures quoted in ``bench/notes/``
come from those files.
"""

from __future__ import annotations

import bz2
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"
DATA_DIR = BENCH_DIR.parent.parent / "shared" / "data"


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


GNU_TIME = "/usr/bin/time"


def run_measured(cmd: list[str]) -> dict:
    """Run a command in a child process; return wall seconds and its peak RSS.

    The peak comes from GNU time (``/usr/bin/time -f %M``), whose own child
    is forked from a small process: ``wait4`` on a child of this (large)
    benchmark process would also count the pages it shared with us at fork.
    Without GNU time the ``wait4`` figure is returned and flagged.
    """
    measured_by = "gnu-time"
    if os.access(GNU_TIME, os.X_OK):
        cmd = [GNU_TIME, "-f", "ultrafs-peak-kb %M", *cmd]
    else:
        measured_by = "wait4 (includes pages shared with the parent at fork)"
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = (stream.decode() for stream in proc.communicate())
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({proc.returncode}):\n{stderr}")
    peak_kb = None
    lines = stderr.splitlines()
    if measured_by == "gnu-time" and lines and lines[-1].startswith("ultrafs-peak-kb "):
        peak_kb = float(lines[-1].split()[1])
        stderr = "\n".join(lines[:-1])
    if peak_kb is None:
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"seconds": wall, "peak_rss_mb": peak_kb / 1024.0,
            "peak_rss_measured_by": measured_by, "stdout": stdout, "stderr": stderr}


def write_result(name: str, payload: dict) -> Path:
    """Write a benchmark's raw results to bench/out/NAME.json."""
    OUT_DIR.mkdir(exist_ok=True)
    payload = dict(payload)
    payload.setdefault("python", sys.version.split()[0])
    payload.setdefault("cpu_count", os.cpu_count())
    path = OUT_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1, default=_jsonable))
    return path


def _jsonable(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def split_libsvm(source: Path, first_rows: int, train_out: Path, test_out: Path):
    """Split a (.bz2) LIBSVM file: the first ``first_rows`` lines, then the rest."""
    opener = bz2.open if source.suffix == ".bz2" else open
    with opener(source, "rb") as fh, open(train_out, "wb") as train, \
            open(test_out, "wb") as test:
        for row, line in enumerate(fh):
            (train if row < first_rows else test).write(line)


def imdb_stores():
    """Train/test stores of imdb50k (rows 1–25,000 / 25,001–50,000), built once.

    Returns
    -------
    train_path, test_path : Path
        Zarr stores under bench/out/imdb/ (reused when present).
    ingest_seconds : dict
    """
    from ultrafs.store.writers.libsvm import ingest_libsvm

    work = OUT_DIR / "imdb"
    work.mkdir(parents=True, exist_ok=True)
    train, test = work / "train.zarr", work / "test.zarr"
    seconds = {}
    if not (train.exists() and test.exists()):
        source = DATA_DIR / "imdb50k_uni_bigram.svm.bz2"
        started = time.perf_counter()
        split_libsvm(source, 25_000, work / "train.svm", work / "test.svm")
        seconds["split"] = time.perf_counter() - started
        for name, path in (("train", train), ("test", test)):
            started = time.perf_counter()
            ingest_libsvm(work / f"{name}.svm", path, overwrite=True,
                          command=f"bench imdb_stores {name}")
            seconds[f"ingest_{name}"] = time.perf_counter() - started
            (work / f"{name}.svm").unlink()
    return train, test, seconds
