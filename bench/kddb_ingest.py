"""kddb at full width: generator and LIBSVM ingest time, throughput and peak memory.

Question: how long do the kddb-like generator (``tools/make_kddb_like.py``)
and ``ultrafs ingest`` of its LIBSVM text take at kddb's width (29,890,095
features, ~29 nonzeros per row) as the rows grow, at what text throughput
(MB/s = text bytes / ingest wall time), and with how much memory (peak RSS
of the child process, from GNU time, with its CPU seconds: user + system)?

For each row count N, in a fresh child process each:

1. ``gen`` (skipped with ``--skip-store-only``): the training store alone;
2. ``gen+text``: the store and its LIBSVM text (``--libsvm-out``);
3. ``ingest``: ``ultrafs ingest TEXT OUT.zarr`` (default settings: 256 MiB
   memory budget, float32, 1-based indices).

Quality figure: the ingested store holds the generator's data (same
labels, same nnz, and the same rows in ``--check-columns`` random
non-empty columns; feature id ``k`` of the ingested store is column
``k - 1`` of the generated one).  The load average before and after each
step is recorded: another job on the machine slows a step down (the
figures in ``bench/notes/14-kddb-scale.md`` say under which load they were
taken).
The numba kernels are warmed (a tiny generation and ingest) before
timing; their cache lives on disk, so children start warm.

Usage::

    python bench/kddb_ingest.py --rows 1000000 3000000 [--n-features 29890095]
        [--work DIR] [--keep] [--skip-store-only] [--name kddb_ingest]

Writes ``bench/out/NAME.json`` and prints a table.  The work folder
(default: a temporary folder next to ``bench/out``) needs about 0.4 GB of
text plus 0.3 GB of stores and spill files per million rows; files are
deleted after each size unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import GNU_TIME, OUT_DIR, run_measured, write_result

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "make_kddb_like.py"
KDDB_FEATURES = 29_890_095


def _load() -> list:
    return [round(x, 2) for x in os.getloadavg()]


def _measured(step: str, cmd: list) -> dict:
    """Run a child under GNU time: wall and CPU seconds, peak RSS, load average."""
    cmd = [str(c) for c in cmd]
    before = _load()
    if not os.access(GNU_TIME, os.X_OK):
        result = run_measured(cmd)
    else:
        started = time.perf_counter()
        proc = subprocess.run([GNU_TIME, "-f", "ultrafs-time %e %U %S %M", *cmd],
                              capture_output=True, text=True)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd} failed ({proc.returncode}):\n{proc.stderr}")
        lines = proc.stderr.splitlines()
        _, elapsed, user, system, peak_kb = lines[-1].split()
        result = {"seconds": wall, "cpu_seconds": float(user) + float(system),
                  "peak_rss_mb": float(peak_kb) / 1024.0, "peak_rss_measured_by": "gnu-time",
                  "stdout": proc.stdout, "stderr": "\n".join(lines[:-1])}
    result.update(step=step, load_before=before, load_after=_load(), command=" ".join(cmd))
    return result


def _generate(rows, n_features, work: Path, text: bool, seed: int) -> dict:
    store = work / f"gen_{rows}.zarr"
    cmd = [sys.executable, TOOL, store, "--n-samples", rows, "--n-features", n_features,
           "--seed", seed, "--overwrite"]
    if text:
        cmd += ["--libsvm-out", work / f"gen_{rows}.svm"]
    result = _measured("gen+text" if text else "gen", cmd)
    summary = json.loads(result.pop("stdout"))
    result.update(nnz=summary["nnz"], n_runs=summary["n_runs"],
                  text_bytes=summary.get("libsvm_bytes"))
    return result


def _same_data(generated: Path, ingested: Path, n_columns: int, seed: int) -> dict:
    from ultrafs.store import open_store

    gen, ing = open_store(generated), open_store(ingested)
    labels = bool(np.array_equal(gen.read_targets(), ing.read_targets()))
    nnz = gen.nnz == ing.nnz
    rng = np.random.default_rng(seed)
    ids = ing.feature_ids(rng.choice(ing.n_features, size=min(n_columns, ing.n_features),
                                     replace=False))
    ids = np.sort(ids)
    a = gen.read_columns(gen.columns_of(ids - 1))
    b = ing.read_columns(ing.columns_of(ids))
    columns = bool(np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices))
    return {"labels_equal": labels, "nnz_equal": bool(nnz), "columns_checked": len(ids),
            "columns_equal": columns, "same_data": labels and nnz and columns}


def _warm(work: Path) -> None:
    warm = work / "warm"
    warm.mkdir(exist_ok=True)
    run_measured([sys.executable, str(TOOL), str(warm / "w.zarr"), "--n-samples", "2000",
                  "--n-features", "5000", "--libsvm-out", str(warm / "w.svm"), "--overwrite"])
    run_measured([sys.executable, "-m", "ultrafs.cli", "ingest", str(warm / "w.svm"),
                  str(warm / "i.zarr"), "--overwrite"])
    shutil.rmtree(warm)


def _table(rows: list) -> str:
    header = (f"{'rows':>10} {'step':>9} {'seconds':>8} {'cpu s':>7} {'MB/s':>7} "
              f"{'peak MB':>8} {'text MB':>8} {'load':>11}  check")
    lines = [header, "-" * len(header)]
    for r in rows:
        speed = f"{r['text_mb_per_s']:.1f}" if r.get("text_mb_per_s") else ""
        text = f"{r['text_bytes'] / 1e6:.0f}" if r.get("text_bytes") else ""
        load = f"{r['load_before'][0]:.1f}/{r['load_after'][0]:.1f}"
        check = ""
        if "same_data" in r:
            check = "same data" if r["same_data"] else "DIFFERENT DATA"
        cpu = f"{r['cpu_seconds']:.1f}" if r.get("cpu_seconds") is not None else ""
        lines.append(f"{r['rows']:>10} {r['step']:>9} {r['seconds']:>8.1f} {cpu:>7} "
                     f"{speed:>7} {r['peak_rss_mb']:>8.0f} {text:>8} {load:>11}  {check}")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 3_000_000])
    parser.add_argument("--n-features", type=int, default=KDDB_FEATURES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=None,
                        help="folder for the stores and texts (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the files of every size")
    parser.add_argument("--skip-store-only", action="store_true",
                        help="do not time the generator without text")
    parser.add_argument("--check-columns", type=int, default=200)
    parser.add_argument("--name", default="kddb_ingest")
    args = parser.parse_args(argv)

    OUT_DIR.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="kddb_ingest-", dir=args.work or OUT_DIR))
    results = []
    try:
        _warm(work)
        for rows in args.rows:
            if not args.skip_store_only:
                step = _generate(rows, args.n_features, work, text=False, seed=args.seed)
                results.append(dict(step, rows=rows))
                shutil.rmtree(work / f"gen_{rows}.zarr")
            step = _generate(rows, args.n_features, work, text=True, seed=args.seed)
            results.append(dict(step, rows=rows))
            text = work / f"gen_{rows}.svm"
            size = text.stat().st_size
            out = work / f"ingest_{rows}.zarr"
            step = _measured("ingest", [sys.executable, "-m", "ultrafs.cli", "ingest", text,
                                        out, "--overwrite"])
            step.pop("stdout")
            step.update(rows=rows, text_bytes=size,
                        text_mb_per_s=size / 1e6 / step["seconds"])
            step.update(_same_data(work / f"gen_{rows}.zarr", out, args.check_columns,
                                   args.seed))
            results.append(step)
            print(_table(results[-3:] if not args.skip_store_only else results[-2:]),
                  flush=True)
            if not args.keep:
                for path in (text, work / f"gen_{rows}.zarr", out):
                    shutil.rmtree(path) if path.is_dir() else path.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    for r in results:
        r.pop("stderr", None)
    path = write_result(args.name, {"n_features": args.n_features, "seed": args.seed,
                                    "results": results})
    print()
    print(_table(results))
    print(f"\nwritten: {path}")


if __name__ == "__main__":
    main()
