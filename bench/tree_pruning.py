"""Tree-structured groups: how many nodes Remark 2's pruning evaluates per pass.

Question (issue 12; paper Definition 1, §4.3, Remark 2): on a balanced
hierarchy of about 10⁶ nodes over the columns of a sparse store, what
fraction of the nodes does the best-first search with pruning
(``TreeFeatures(store, parent, prune=True)``) evaluate per FGM pass, how do
the seconds of the node search compare with the seconds of streaming the
data (the column scores), and is the selection (keys, coefficients, bias,
objectives) bit-identical with pruning off (``prune=False``: every node
scored, bounded heap)?

Data (``--data synthetic``, the default): ``--columns`` m columns (default
2^19 = 524,288) of ``--rows`` n rows, ``--nnz-per-column`` nonzeros per
column at uniformly drawn rows, values 1 (0/1 data, like text); a planted
model on the leaves of ``--informative`` random subtrees of 2^``--subtree-depth``
leaves (weights N(0, 1) per leaf), y = +1 where Xw > median(Xw) (ties
broken by a seeded N(0, 10⁻⁶) jitter), else -1.  The tree: a balanced
``--arity``-ary hierarchy built bottom up over the columns in their order
(nodes 0..m-1 the leaves, inner nodes numbered level by level; the root
has parent -1): 2m - 1 = 1,048,575 nodes for m = 2^19, arity 2.
``--data imdb``: the same hierarchy over the columns of imdb50k's training
store (``common.imdb_stores``; 2.48M columns, about 5·10⁶ nodes), labels
the store's.

FGM: ``fit_fgm(TreeFeatures(store, tree, prune=...), y, B, C, max_iter=T,
tol=--tol)``, logistic loss, bias on; C = ``--C`` (default 10, the paper's
value; the data are 0/1, for which ``C="scale"`` also gives 10).  A
selected node's columns enter as augmented columns (§2.3): every node
scores at least as much as any of its descendants, so the root and the top
levels are the first pass's winners (Remark 2's order), and later passes go
deeper.  With a single root the first batch holds every column, its
subproblem is already the optimum over all candidates (a duplicate column
in a later batch never lowers (Σ_h ||w_h||)²), so later batches keep zero
weights and, with ε_c = 0, the loop runs its 3·T passes: the search is
still exercised at every pass, which is what is measured here.
``--levels L`` builds a forest instead (trees of arity^L leaves, no common
root), where the roots are the candidates that win.

Per pass: ``nodes_evaluated / nodes`` (the history's counters), the pass's
seconds (``score_seconds``) split into the node search (the call of
``tree_topk`` / ``tree_topk_exhaustive``, timed by wrapping the names that
:mod:`ultrafs.features.tree` calls: the wrapper adds a clock read and
nothing else) and the rest (streaming the store's columns, their scores,
the leaf gather: "streaming"), the materialise / solve seconds, and
"other": the pass's wall time (between FGM's callbacks) minus those three
phases, i.e. the loop's bookkeeping outside them (dual weights, the
``np.unique`` calls over all selected keys that build the excluded set in
``worst_case_analysis`` and ``TreeFeatures.find_candidates``, the nonzero
count).  Each
mode runs in a fresh process (``--child``) measured by GNU time
(``common.run_measured``): its peak RSS, and SHA-256 digests of the keys,
batch pointers, coefficients and bias (byte-for-byte comparison) next to
the node ids selected per pass.  The JIT is warmed on a toy tree in each
child before timing.

Usage::

    python bench/tree_pruning.py [--data synthetic] [--columns 524288]
        [--rows 2000] [--nnz-per-column 4] [--arity 2] [--levels L]
        [--B 10] [--T 5] [--tol 0] [--name tree_pruning]
    python bench/tree_pruning.py --levels 12 --name tree_pruning_forest
    python bench/tree_pruning.py --data imdb --levels 10 --name tree_pruning_imdb

Results go to ``bench/out/NAME.json`` and a markdown table to stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

import numpy as np
import scipy.sparse as sp

from common import peak_rss_mb, run_measured, write_result


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------
def balanced_parent(m, arity, levels=None):
    """Parent list of a balanced ``arity``-ary hierarchy over leaves 0..m-1.

    Inner nodes are numbered from m, level by level bottom up (a parent
    after its children); the root's parent is -1.  ``levels``: keep only
    that many inner levels above the leaves (a forest of balanced trees of
    ``arity**levels`` leaves each; None: up to a single root).
    """
    sizes = [m]
    while sizes[-1] > 1 and (levels is None or len(sizes) <= levels):
        sizes.append(-(-sizes[-1] // arity))
    parent = np.full(sum(sizes), -1, dtype=np.int64)
    start = 0
    for size, above in zip(sizes[:-1], sizes[1:]):
        nxt = start + size
        parent[start:nxt] = nxt + np.arange(size, dtype=np.int64) // arity
        start = nxt
    return parent


def synthetic(args):
    """The sparse 0/1 store's CSC matrix, labels and the planted leaves."""
    rng = np.random.default_rng(args.seed)
    m, n, per = args.columns, args.rows, args.nnz_per_column
    rows = np.empty(m * per, dtype=np.int32)
    for lo in range(0, m, 65536):        # distinct rows within each column
        hi = min(lo + 65536, m)
        keys = rng.random((hi - lo, n)).argpartition(per, axis=1)[:, :per] \
            if n <= 64 else _distinct_rows(rng, hi - lo, n, per)
        rows[lo * per:hi * per] = np.sort(keys, axis=1).ravel()
    indptr = np.arange(0, (m + 1) * per, per, dtype=np.int64)
    X = sp.csc_matrix((np.ones(m * per, dtype=np.float32), rows, indptr), shape=(n, m))
    width = 2 ** args.subtree_depth
    starts = rng.choice(m // width, size=args.informative, replace=False) * width
    planted = np.concatenate([np.arange(s, s + width) for s in np.sort(starts)])
    w = np.zeros(m)
    w[planted] = rng.standard_normal(len(planted))
    score = X @ w + 1e-6 * rng.standard_normal(n)
    y = np.where(score > np.median(score), 1.0, -1.0)
    return X, y, planted


def _distinct_rows(rng, count, n, per):
    """``count`` rows of ``per`` distinct values in 0..n-1 (redrawn on a clash)."""
    out = rng.integers(0, n, size=(count, per))
    while True:
        s = np.sort(out, axis=1)
        clash = np.any(s[:, 1:] == s[:, :-1], axis=1)
        if not clash.any():
            return out
        out[clash] = rng.integers(0, n, size=(int(clash.sum()), per))


def build(args):
    """``(store, y, parent, info)`` of the chosen data."""
    from ultrafs.store import InMemoryStore, open_store

    if args.data == "imdb":
        from common import imdb_stores

        train, _, _ = imdb_stores()
        store = open_store(train)
        y = store.read_labels()
        info = {"store": str(train)}
    else:
        X, y, planted = synthetic(args)
        store = InMemoryStore(X, y)
        if store.n_features != X.shape[1]:
            raise SystemExit("a synthetic column came out empty")
        info = {"planted_leaves": len(planted), "planted_first": planted[:8].tolist()}
    parent = balanced_parent(store.n_features, args.arity, args.levels)
    info.update(rows=int(store.n_samples), columns=int(store.n_features),
                nodes=int(len(parent)), roots=int(np.sum(parent < 0)),
                stored_nnz=int(store.nnz))
    return store, y, parent, info


# --------------------------------------------------------------------------
# one mode, in its own process
# --------------------------------------------------------------------------
def _timed(kernel, log):
    def wrapper(*a):
        started = time.perf_counter()
        out = kernel(*a)
        log.append(time.perf_counter() - started)
        return out
    return wrapper


def _digest(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def warm():
    """Compile (or load) the search and solver kernels on a toy tree."""
    from ultrafs.features.tree import TreeFeatures
    from ultrafs.methods.fgm import fit_fgm
    from ultrafs.store import InMemoryStore

    rng = np.random.default_rng(1)
    X = sp.random(40, 16, density=0.3, random_state=1, format="csc",
                  dtype=np.float32)
    X.data[:] = 1.0
    X = X + sp.eye(40, 16, format="csc", dtype=np.float32)
    y = np.where(rng.random(40) < 0.5, -1.0, 1.0)
    y[:2] = (-1.0, 1.0)
    store = InMemoryStore(X, y)
    for prune in (True, False):
        fit_fgm(TreeFeatures(store, balanced_parent(16, 2), prune=prune), y,
                B=2, C=10.0, max_iter=2, tol=0.0)


def child(args):
    """Build the data, run FGM with one pruning mode, print JSON."""
    import ultrafs.features.tree as tree_module
    from ultrafs.features.tree import Tree, TreeFeatures
    from ultrafs.methods.fgm import fit_fgm

    warm()
    started = time.perf_counter()
    store, y, parent, info = build(args)
    build_seconds = time.perf_counter() - started
    started = time.perf_counter()
    tree = Tree(parent, store.n_features)
    tree_seconds = time.perf_counter() - started
    rss_before_fit = peak_rss_mb()
    prune = args.child == "prune"
    search = []
    tree_module.tree_topk = _timed(tree_module.tree_topk, search)
    tree_module.tree_topk_exhaustive = _timed(tree_module.tree_topk_exhaustive, search)
    features = TreeFeatures(store, tree, prune=prune)
    marks = []
    started = time.perf_counter()
    result = fit_fgm(features, np.asarray(y), B=args.B, C=args.C, max_iter=args.T,
                     tol=args.tol, callback=lambda record: marks.append(time.perf_counter()))
    fit_seconds = time.perf_counter() - started
    passes = []
    walls = np.diff([started] + marks)
    for record, search_seconds, wall in zip(result.history, search, walls):
        phases = (record["score_seconds"] + record["materialize_seconds"]
                  + record["solve_seconds"])
        passes.append({
            "wall_seconds": float(wall), "other_seconds": float(wall - phases),
            "iteration": record["iteration"],
            "nodes_evaluated": record["nodes_evaluated"], "nodes": record["nodes"],
            "fraction": record["nodes_evaluated"] / record["nodes"],
            "score_seconds": record["score_seconds"],
            "search_seconds": search_seconds,
            "streaming_seconds": record["score_seconds"] - search_seconds,
            "materialize_seconds": record["materialize_seconds"],
            "solve_seconds": record["solve_seconds"],
            "scan_nnz": record["scan_nnz"], "augmented_columns": record["n_features"],
            "n_nonzero": record["n_nonzero"], "objective": record["objective"],
            "inner_iterations": record["inner_iterations"],
            "peak_rss_mb": record.get("solve_peak_rss_mb")})
    ptr = result.batch_ptr
    nodes = [sorted(set(features.unit_ids(np.unique(features.units_of(
        result.keys[a:b]))))) for a, b in zip(ptr[:-1], ptr[1:])]
    print(json.dumps({
        "mode": args.child, "info": info, "build_seconds": build_seconds,
        "tree_seconds": tree_seconds, "fit_seconds": fit_seconds,
        "rss_before_fit_mb": rss_before_fit, "peak_rss_mb": peak_rss_mb(),
        "passes": passes, "stop_reason": result.stop_reason,
        "nodes_per_pass": nodes, "n_keys": int(len(result.keys)),
        "digests": {"keys": _digest(result.keys), "batch_ptr": _digest(ptr),
                    "coef": _digest(result.coef),
                    "bias": _digest(np.asarray(result.bias, dtype=np.float64)),
                    "objectives": _digest(np.array([p["objective"] for p in passes]))}}))


# --------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------
def markdown(runs):
    prune, full = runs["prune"], runs["full"]
    lines = ["| pass | nodes evaluated (pruned) | fraction | nodes evaluated (off) | "
             "search s pruned / off | streaming s pruned / off | materialise s | "
             "solve s | other s | inner it. | new augmented columns | nonzero nodes |",
             "|" + "---|" * 12]
    previous = 0
    for p, f in zip(prune["passes"], full["passes"]):
        lines.append(
            f"| {p['iteration']} | {p['nodes_evaluated']:,} | {p['fraction']:.2e} | "
            f"{f['nodes_evaluated']:,} | {p['search_seconds']:.4f} / "
            f"{f['search_seconds']:.4f} | {p['streaming_seconds']:.3f} / "
            f"{f['streaming_seconds']:.3f} | {p['materialize_seconds']:.2f} | "
            f"{p['solve_seconds']:.2f} | {p['other_seconds']:.2f} | "
            f"{p['inner_iterations']} | "
            f"{p['augmented_columns'] - previous:,} | "
            f"{p['n_nonzero']} |")
        previous = p["augmented_columns"]
    same = {key: prune["digests"][key] == full["digests"][key] for key in prune["digests"]}
    same["nodes_per_pass"] = prune["nodes_per_pass"] == full["nodes_per_pass"]
    lines += ["", "| mode | fit s | peak RSS MiB (process) | RSS before fit MiB | "
              "passes | augmented columns |", "|---|---|---|---|---|---|"]
    for name, r in (("pruning on", prune), ("pruning off", full)):
        lines.append(f"| {name} | {r['fit_seconds']:.2f} | "
                     f"{r['process_peak_rss_mb']:.0f} | {r['rss_before_fit_mb']:.0f} | "
                     f"{len(r['passes'])} | {r['n_keys']:,} |")
    lines += ["", "identical with pruning off: " + ", ".join(
        f"{key} {'yes' if ok else 'NO'}" for key, ok in same.items())]
    return "\n".join(lines), same


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=("synthetic", "imdb"), default="synthetic")
    parser.add_argument("--columns", type=int, default=2 ** 19)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--nnz-per-column", type=int, default=4)
    parser.add_argument("--informative", type=int, default=8,
                        help="planted subtrees (synthetic)")
    parser.add_argument("--subtree-depth", type=int, default=6,
                        help="planted subtrees have 2^depth leaves")
    parser.add_argument("--arity", type=int, default=2)
    parser.add_argument("--levels", type=int, default=None,
                        help="inner levels kept above the leaves (a forest of "
                             "arity^levels-leaf trees); default: up to one root")
    parser.add_argument("--B", type=int, default=10)
    parser.add_argument("--T", type=int, default=5)
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--tol", type=float, default=0.0,
                        help="ε_c (0: run until B·T nodes hold a nonzero weight)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="tree_pruning")
    parser.add_argument("--child", choices=("prune", "full"), default=None,
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return
    started = time.perf_counter()
    forwarded = [a for a in (argv if argv is not None else sys.argv[1:])
                 if not a.startswith("--name")]
    # drop the value of --name NAME too
    if "--name" in (argv if argv is not None else sys.argv[1:]):
        given = argv if argv is not None else sys.argv[1:]
        i = given.index("--name")
        forwarded = given[:i] + given[i + 2:]
    runs = {}
    for mode in ("prune", "full"):
        r = run_measured([sys.executable, __file__, *forwarded, "--child", mode])
        record = json.loads(r["stdout"].strip().splitlines()[-1])
        record.update(process_seconds=r["seconds"], process_peak_rss_mb=r["peak_rss_mb"],
                      measured_by=r["peak_rss_measured_by"], stderr=r["stderr"][-2000:])
        runs[mode] = record
        print(json.dumps({"mode": mode, "fit_seconds": round(record["fit_seconds"], 2),
                          "peak_rss_mb": round(r["peak_rss_mb"], 1),
                          "evaluated": [p["nodes_evaluated"] for p in record["passes"]]}),
              flush=True)
    info = runs["prune"]["info"]
    print(f"\n{args.data}: {info['rows']:,} rows x {info['columns']:,} columns, "
          f"{info['stored_nnz']:,} nonzeros; {args.arity}-ary "
          f"{'tree' if info['roots'] == 1 else 'forest'} of {info['nodes']:,} nodes "
          f"({info['roots']:,} roots); B = {args.B}, T = {args.T}, C = {args.C:g}, "
          f"tol = {args.tol:g}\n")
    table, same = markdown(runs)
    print(table)
    print("\nnodes selected per pass (pruning on):", runs["prune"]["nodes_per_pass"])
    write_result(args.name, {"args": vars(args), "runs": runs, "identical": same,
                             "table": table, "seconds": time.perf_counter() - started,
                             "peak_rss_mb": peak_rss_mb()})


if __name__ == "__main__":
    main()
