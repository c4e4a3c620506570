"""The FGM subproblem on two threads: speed-up and identical results.

Question: on the subproblem of a kddb-like degree-2 run (10^6 rows, the
500 selected columns of ``select --poly 2 --B 50 --max-iter 10``, binary
logistic), how much faster are the solver's kernels (the Hessian's Gram,
the loss sums, the products with X, the CSR copy) and a whole subproblem
solve with 2 numba threads than with 1, how busy are the cores, and are
the coefficients byte-identical?

The subproblem comes from a store and a model of that run (``--store``,
``--model``: the model's features materialised from the store, its batches
as the penalty's blocks, its C), or is generated (default, no store
needed): ``--rows`` rows, ``--columns`` columns of constant values
(2*sqrt(2), 4, 4*sqrt(2): the degree-2 map's values on binary data), Zipf
column frequencies with about 34 entries per row, labels from a planted
logistic model.  Every piece is timed with each thread count in turn
(interleaved, ``--repeats`` rounds: another process on the machine slows
both settings alike); the medians, their ratio and the CPU seconds per
wall second are reported.

Usage:
    python bench/parallel_solve.py [--rows 1000000 --columns 500]
    python bench/parallel_solve.py --store /work/kdd/train1m.zarr --model /work/kdd/m1.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numba
import numpy as np

from common import peak_rss_mb, write_result
from ultrafs.kernels import row_chunks
from ultrafs.solvers.apg import solve
from ultrafs.solvers.datafits import Datafit
from ultrafs.solvers.losses import get_loss
from ultrafs.solvers.operators import CSCOperator

GRAM = "gram (Hessian X~' D X~)"
GENERAL_GRAM = "gram, values read (no one-value-per-column shortcut)"
SOLVE = "whole solve (auto: proximal Newton)"
GENERAL_MATVEC = "X @ w, values read"
GENERAL_RMATVEC = "X.T @ r, values read"
_VALUES = np.array([2.0 * np.sqrt(2.0), 4.0, 4.0 * np.sqrt(2.0)])


def synthetic(rows, columns, seed=0, per_row=34.0):
    """A kddb-like degree-2 subproblem: CSC arrays, labels, C and blocks."""
    rng = np.random.default_rng(seed)
    # Zipf-like column frequencies scaled to about per_row entries per row
    # (the selected kddb columns hold from 0.1% to 97% of the rows)
    freq = 1.0 / np.arange(1, columns + 1) ** 0.9
    freq = np.minimum(0.97, freq * per_row / freq.sum())
    rng.shuffle(freq)
    indptr = np.zeros(columns + 1, dtype=np.int64)
    parts = []
    for j in range(columns):
        rows_j = np.unique(rng.integers(0, rows, size=int(freq[j] * rows) + 1))
        parts.append(rows_j.astype(np.int32))
        indptr[j + 1] = indptr[j] + len(rows_j)
    indices = np.concatenate(parts)
    data = np.repeat(rng.choice(_VALUES, size=columns), np.diff(indptr))
    truth = np.zeros(columns)
    planted = rng.choice(columns, size=40, replace=False)
    truth[planted] = rng.normal(scale=0.5, size=40)
    op = CSCOperator(indptr, indices, data, rows)
    margin = op.matvec(truth)
    margin -= np.median(margin)
    y = np.where(rng.random(rows) < 1.0 / (1.0 + np.exp(-margin)), 1.0, -1.0)
    block_ptr = np.arange(0, columns + 1, 50, dtype=np.int64)
    if block_ptr[-1] != columns:
        block_ptr = np.append(block_ptr, columns)
    return indptr, indices, data, y, 0.312, block_ptr, "synthetic"


def from_store(store_path, model_path):
    """The subproblem of a model's features on a store (as FGM's last solve)."""
    from ultrafs.features import feature_space_from_spec
    from ultrafs.store import open_store

    model = json.loads(open(model_path).read())
    store = open_store(store_path)
    space = feature_space_from_spec(store, model["feature_space"])
    ids = [tuple(f) if isinstance(f, list) else f for f in model["features"]]
    block = space.materialize_ids(ids)
    y = store.read_labels()
    return (block.indptr, block.indices, block.values(np.float64), y,
            float(model["params"]["C"]), np.asarray(model["batches"], dtype=np.int64),
            f"{store_path} + {model_path}")


def timed(fn):
    """Wall seconds, CPU seconds (all threads of the process) and the result."""
    cpu = time.process_time()
    wall = time.perf_counter()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def as_bytes(result):
    if isinstance(result, tuple):
        return b"|".join(as_bytes(r) for r in result)
    return np.ascontiguousarray(np.asarray(result)).tobytes()


def pieces(indptr, indices, data, y, C, block_ptr, kkt_tol, max_iter):
    """name -> a function of no argument (the piece timed), made once."""
    n = len(y)
    loss = get_loss("logistic", "binary")
    operator = CSCOperator(indptr, indices, data, n)
    datafit = Datafit(loss, operator, y, C)
    rng = np.random.default_rng(1)
    p = len(indptr) - 1
    coef = rng.normal(scale=0.05, size=p)
    f = operator.matvec(coef) - 0.1
    delta = 0.01 * f
    r = rng.normal(size=n)
    operator.augmented_gram(np.ones(n))  # the CSR copy: made once per operator
    second = loss.second_derivative(y, f)
    t = len(block_ptr) - 1
    blocks = np.empty((t, n))
    d = np.empty(n)

    full_rows = None
    if len(operator._csr()[2]) < operator.nnz:  # one value per column: compare
        from ultrafs.kernels import hessian_gram as pn
        from ultrafs.kernels import sparse_ops as so
        from ultrafs.kernels.row_chunks import dispatch

        starts, bounds = operator._row_ranges(fine=True)
        full_rows = so.csc_to_csr(indptr, indices, data, n, starts, bounds)
        work = pn.gram_row_work(full_rows[0], full_rows[1], p + 1)
        gram_out = np.empty((p + 1, p + 1))

        coarse = operator._row_ranges()
        one_block = np.array([0, p], dtype=np.int64)

        def general_matvec():
            args = (indptr, indices, data, np.empty(0), coef, one_block, *coarse,
                    np.empty((1, n)))
            return dispatch(lambda: so.csc_block_matvec_into_ranges(*args),
                            lambda: so.csc_block_matvec_into_parallel(*args))[0]

        def general_rmatvec():
            args = (indptr, indices, data, np.empty(0), r, 1, *coarse)
            return dispatch(lambda: so.csc_rmatvec_ranges(*args),
                            lambda: so.csc_rmatvec_ranges_parallel(*args))

        def general_gram():
            return dispatch(
                lambda: pn.csr_augmented_gram(*full_rows, second, gram_out),
                lambda: pn.csr_augmented_gram_parallel(
                    *full_rows, second, pn.gram_row_bounds(work, numba.get_num_threads()),
                    gram_out)).copy()

    def csr_copy():
        fresh = CSCOperator(indptr, indices, data, n)
        fresh._row_ranges()
        return fresh._csr()

    def whole_solve(max_iter=max_iter):
        result = solve(Datafit(loss, CSCOperator(indptr, indices, data, n), y, C),
                       block_ptr, tol=1e-3, kkt_tol=kkt_tol, max_iter=max_iter)
        return (result.coef, np.float64(result.bias), np.float64(result.objective),
                np.float64(result.n_iter))

    found = {
        GRAM: lambda: operator.augmented_gram(second),
        "csr copy of X": csr_copy,
        "loss: value + derivative": lambda: (loss.value_derivative(y, f, d), d),
        "loss: value change": lambda: loss.value_change(y, f, delta),
        "loss: second derivative": lambda: loss.second_derivative(y, f),
        "loss: value": lambda: loss.value(y, f),
        "loss: curvature sum": lambda: loss.curvature_sum(y, f, d),
        "X @ w": lambda: operator.matvec(coef),
        "X.T @ r": lambda: operator.rmatvec(r),
        "per-block X_h @ w_h (APG)": lambda: operator.block_matvec_into(
            coef, block_ptr, blocks).copy(),
        SOLVE: whole_solve,
    }
    if full_rows is not None:
        found = {GENERAL_GRAM: general_gram, **found,
                 GENERAL_MATVEC: general_matvec, GENERAL_RMATVEC: general_rmatvec}
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", help="a store of the run (with --model)")
    parser.add_argument("--model", help="a model file of a degree-2 run on --store")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--columns", type=int, default=500)
    parser.add_argument("--per-row", type=float, default=34.0,
                        help="mean entries per row of the generated subproblem")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--solve-repeats", type=int, default=None,
                        help="rounds of the whole solve (default: --repeats)")
    parser.add_argument("--kkt-tol", type=float, default=1e-4)
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--out", default="parallel_solve")
    args = parser.parse_args()

    started = time.perf_counter()
    if args.store:
        problem = from_store(args.store, args.model)
    else:
        problem = synthetic(args.rows, args.columns, per_row=args.per_row)
    indptr, indices, data, y, C, block_ptr, source = problem
    n, p = len(y), len(indptr) - 1
    row_nnz = np.bincount(indices, minlength=n)
    setup = time.perf_counter() - started
    print(f"subproblem: {source}: {n} rows x {p} columns, {indptr[-1]} entries "
          f"({row_nnz.mean():.1f} per row, at most {row_nnz.max()}), "
          f"{len(block_ptr) - 1} blocks, C = {C:g} (built in {setup:.1f} s)")
    print(f"numba {numba.__version__}, NUMBA_NUM_THREADS = "
          f"{numba.config.NUMBA_NUM_THREADS}")

    work = pieces(indptr, indices, data, y, C, block_ptr, args.kkt_tol, args.max_iter)
    default_threads = numba.get_num_threads()
    threads = [k for k in args.threads if k <= numba.config.NUMBA_NUM_THREADS]
    times = {name: {k: [] for k in threads} for name in work}
    cpus = {name: {k: [] for k in threads} for name in work}
    outputs = {name: {} for name in work}
    try:
        # warm the JIT (every kernel, serial and parallel)
        for k in threads:
            numba.set_num_threads(k)
            for name, fn in work.items():
                if name == SOLVE:
                    fn(max_iter=2)  # compiles the solver's own kernels
                else:
                    fn()
        print(f"threading layer: {row_chunks.threading_layer()}")
        for name, fn in work.items():
            rounds = args.repeats
            if name == SOLVE and args.solve_repeats is not None:
                rounds = args.solve_repeats
            for _ in range(rounds):
                for k in threads:  # interleaved: 1, 2, 1, 2, ...
                    numba.set_num_threads(k)
                    wall, cpu, result = timed(fn)
                    times[name][k].append(wall)
                    cpus[name][k].append(cpu)
                    digest = as_bytes(result)
                    if k in outputs[name]:
                        assert outputs[name][k] == digest, f"{name}: not repeatable"
                    outputs[name][k] = digest
    finally:
        numba.set_num_threads(default_threads)

    rows = []
    base = threads[0]
    print()
    width = max(len(name) for name in work) + 1
    header = f"{'piece':{width}s}" + "".join(f"{f'{k} thr (s)':>12s}" for k in threads)
    header += "".join(f"{f'x{k}':>8s}" for k in threads[1:])
    header += "".join(f"{f'cpu/wall {k}':>13s}" for k in threads) + "  identical"
    print(header)
    for name in work:
        medians = {k: statistics.median(times[name][k]) for k in threads}
        load = {k: sum(cpus[name][k]) / sum(times[name][k]) for k in threads}
        same = all(outputs[name][k] == outputs[name][base] for k in threads)
        line = f"{name:{width}s}" + "".join(f"{medians[k]:12.3f}" for k in threads)
        line += "".join(f"{medians[base] / medians[k]:8.2f}" for k in threads[1:])
        line += "".join(f"{load[k]:13.2f}" for k in threads) + f"  {same}"
        print(line)
        rows.append({"piece": name, "seconds": times[name], "cpu_seconds": cpus[name],
                     "median_seconds": medians,
                     "speedup": {k: medians[base] / medians[k] for k in threads},
                     "cpu_per_wall": load, "byte_identical": same})
    solve_name = SOLVE
    identical = all(r["byte_identical"] for r in rows)
    if GENERAL_GRAM in work:
        for short, general in ((GRAM, GENERAL_GRAM), ("X @ w", GENERAL_MATVEC),
                               ("X.T @ r", GENERAL_RMATVEC)):
            ratios = ", ".join(
                f"{statistics.median(times[short][k]) / statistics.median(times[general][k]):.2f}"
                f" ({k} thr)" for k in threads)
            print(f"one value per column: {short.split(' (')[0]} takes {ratios} of the "
                  "time of the kernel reading the values")
    print(f"\ncoefficients byte-identical across {threads} threads: "
          f"{all(outputs[solve_name][k] == outputs[solve_name][base] for k in threads)}"
          f"; every piece: {identical}")
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    path = write_result(args.out, {
        "source": source, "rows": n, "columns": p, "nnz": int(indptr[-1]),
        "threads": threads, "repeats": args.repeats,
        "threading_layer": row_chunks.threading_layer(),
        "pieces": rows, "byte_identical": identical, "peak_rss_mb": peak_rss_mb()})
    print(f"written {path}")
    if not identical:
        raise SystemExit("results differ between thread counts")


if __name__ == "__main__":
    main()
