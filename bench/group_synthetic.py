"""Paper §8.6.1: synthetic group feature selection, FGM against group lasso.

Question (issue 12): on X ~ N(0, 1) (n rows, p groups of ``size`` columns),
``informative`` groups with N(0, 1) weights, y = sign(Xw) and 2,000 test
rows drawn the same way, is FGM (groups, logistic loss) more accurate and
faster than a group-lasso logistic regression at the same number of
selected groups, for every count up to 150 groups (the paper's Figure 15)?

Data.  Every group has its own random streams (``SeedSequence(seed,
spawn_key=(1, g))`` for its training rows, ``(2, g)`` for its test rows),
so X is generated, labelled and written one block of groups at a time and
never held whole; the test columns of any group are regenerated on demand
(the test rows of the selected and informative groups are all the
evaluation needs).  The informative groups and their weights come from the
stream ``(0,)``.  Labels: y = +1 where Xw >= 0, else -1.  Entries that
come out exactly 0.0 in float32 (the store format holds nonzeros only)
become the smallest normal float32, in training, test and labels alike.

FGM: the training rows are written to a Zarr store (``--store-dir``; the
write is timed apart), then ``fit_fgm`` on its group feature space with
B groups per iteration, C (``--C``, default 10, the paper's value), the
logistic loss, bias on, ε_c = 0 and a budget of max(counts) groups; the
model after every outer iteration is kept (``result.path``), so the model
at k groups is the one FGM had when it held k groups, and its time is the
wall time from the start of the fit to the end of that iteration (the
store is read from disk at every pass: out of core; ``--in-memory`` fits
on an in-memory store instead).  ``--inner-kkt-tol`` picks the inner stop
of one or more runs: the library's default KKT certificate (which, at up
to 2,000 coefficients, runs proximal Newton) or 0, the paper's eq. 40
stop alone (APG).  "FGM+refit" adds the ℓ2 refit of the same loss and C
on the selected columns (what ``select(..., refit=True)`` does), read back
from the store; its time adds the refit's.

Group lasso: skglm's ``GroupBCD`` (working sets, Anderson acceleration)
on ``LogisticGroup`` + ``WeightedGroupL2`` (unit weights: equal sizes),
intercept on, tol 1e-4 (skglm's default), X held in memory as float64;
the group Lipschitz constants are computed once and used as BCD's steps
(see :func:`_group_logistic_datafit`: skglm 0.5 recomputes them at every
fit and then steps with the single columns' constants).
For each count k, λ is bisected on a log scale below
λ_max = max_g ||X_g' r|| (r the gradient at the intercept-only model) to
the λ whose number of nonzero groups is k (or the nearest reached, ties
below).  Its time is that of one cold fit at the matched λ (the bisection's
total is recorded too).  "GL+refit" is the same ℓ2 refit as FGM's, on the
group lasso's groups.

Usage::

    python bench/group_synthetic.py --n 4096 --groups 4000 --inner-kkt-tol 0 \\
        --name group_synthetic_4000_apg
    python bench/group_synthetic.py --n 4096 --groups 4000 --no-baseline \\
        --name group_synthetic_4000_kkt
    python bench/group_synthetic.py --n 4096 --groups 40000 --no-baseline \\
        --inner-kkt-tol 0 --name group_synthetic_paper_apg  # the paper's 4,096 x 400,000

The group lasso holds X (n x 10·groups float64) in memory: 1.3 GB at
4,000 groups, 13 GB at the paper's 40,000, so it runs only at the smaller
sizes (``--no-baseline`` skips it).

Results go to ``bench/out/NAME.json``; a markdown table goes to stdout.
"""

from __future__ import annotations

import argparse
import math
import shutil
import time
import warnings
from pathlib import Path

import numpy as np

from common import peak_rss_mb, write_result
from ultrafs.solvers.apg import DEFAULT_KKT_TOL

#: the smallest normal float32, which replaces an entry drawn as exactly 0.0
TINY = np.float32(np.finfo(np.float32).tiny)
STREAM_MODEL, STREAM_TRAIN, STREAM_TEST = 0, 1, 2


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------
class GroupProblem:
    """The §8.6.1 generator: X ~ N(0, 1) in groups, y = sign(X w).

    Parameters
    ----------
    n, n_test : int
        Training and test rows.
    n_groups, size : int
        Groups and columns per group (column j is in group j // size).
    n_informative : int
        Groups with a nonzero weight; the weights are N(0, 1).
    seed : int
    """

    def __init__(self, n, n_groups, size=10, n_informative=100, n_test=2000, seed=0):
        if n_informative > n_groups:
            raise ValueError("more informative groups than groups")
        self.n, self.n_test = int(n), int(n_test)
        self.n_groups, self.size = int(n_groups), int(size)
        self.seed = int(seed)
        rng = self._rng(STREAM_MODEL)
        self.informative = np.sort(rng.choice(self.n_groups, size=n_informative,
                                              replace=False)).astype(np.int64)
        self.weights = rng.standard_normal((n_informative, self.size))
        self._labels = {}

    @property
    def n_features(self) -> int:
        return self.n_groups * self.size

    def _rng(self, *key):
        return np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=key))

    def columns(self, groups, split="train") -> np.ndarray:
        """float32 array (len(groups) * size, rows): the columns of ``groups``,
        each column contiguous (so ``.T`` is an (rows, columns) Fortran array)."""
        rows = self.n if split == "train" else self.n_test
        stream = STREAM_TRAIN if split == "train" else STREAM_TEST
        out = np.empty((len(groups) * self.size, rows), dtype=np.float32)
        for t, g in enumerate(groups):
            self._rng(stream, int(g)).standard_normal(
                out=out[t * self.size:(t + 1) * self.size], dtype=np.float32)
        out[out == 0] = TINY
        return out

    def labels(self, split="train") -> np.ndarray:
        """±1 labels: sign of X w over the informative groups (0 counts +)."""
        if split not in self._labels:
            cols = self.columns(self.informative, split)
            margin = self.weights.ravel() @ cols.astype(np.float64)
            self._labels[split] = np.where(margin >= 0, 1.0, -1.0)
        return self._labels[split]

    def group_ids(self) -> np.ndarray:
        """The group of every column."""
        return np.arange(self.n_features, dtype=np.int64) // self.size

    def describe(self) -> dict:
        return {"n": self.n, "n_test": self.n_test, "n_groups": self.n_groups,
                "size": self.size, "n_features": self.n_features,
                "n_informative": len(self.informative), "seed": self.seed,
                "values": self.n * self.n_features,
                "positive_fraction_train": float(np.mean(self.labels("train") > 0)),
                "positive_fraction_test": float(np.mean(self.labels("test") > 0))}


def write_train_store(problem, path, groups_per_block=100, command=None):
    """Write the training rows to a Zarr store, a block of groups at a time.

    Returns
    -------
    info : dict
        ``seconds``, ``bytes`` (on disk), ``nnz``, ``peak_rss_mb``.
    """
    from ultrafs.store.writers.zarr_writer import StoreWriter

    started = time.perf_counter()
    n, m = problem.n, problem.n_features
    y = problem.labels("train")
    cols_per_block = groups_per_block * problem.size
    rows = np.tile(np.arange(n, dtype=np.int32), cols_per_block)
    writer = StoreWriter(path, n_samples=n, n_features=m, nnz=n * m, dtype="float32",
                         binary=False, labels=y, overwrite=True, command=command,
                         attrs={"generator": dict(problem.describe(),
                                                  name="bench/group_synthetic.py")})
    with writer:
        for g0 in range(0, problem.n_groups, groups_per_block):
            groups = np.arange(g0, min(g0 + groups_per_block, problem.n_groups))
            block = problem.columns(groups, "train")
            n_cols = block.shape[0]
            indptr = np.arange(0, n_cols * n + 1, n, dtype=np.int64)
            writer.append(indptr, rows[:n_cols * n], block.ravel())
        writer.close()
    seconds = time.perf_counter() - started
    size = sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
    return {"seconds": seconds, "bytes": size, "nnz": n * m,
            "peak_rss_mb": peak_rss_mb()}


def memory_store(problem):
    """The training rows as an in-memory store (CSC float32), for ``--in-memory``."""
    import scipy.sparse as sp

    from ultrafs.store import InMemoryStore

    started = time.perf_counter()
    n, m = problem.n, problem.n_features
    data = problem.columns(np.arange(problem.n_groups), "train").ravel()
    X = sp.csc_matrix((data, np.tile(np.arange(n, dtype=np.int32), m),
                       np.arange(0, n * m + 1, n, dtype=np.int64)), shape=(n, m))
    del data
    store = InMemoryStore(X, problem.labels("train"))
    return store, {"seconds": time.perf_counter() - started, "bytes": None,
                   "nnz": n * m, "in_memory": True, "peak_rss_mb": peak_rss_mb()}


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------
def evaluate(problem, column_ids, coef, intercept):
    """Test accuracy of ``X_test[:, column_ids] @ coef + intercept``, with the
    test columns regenerated group by group."""
    column_ids = np.asarray(column_ids, dtype=np.int64)
    y_test = problem.labels("test")
    decision = np.full(problem.n_test, float(intercept))
    if len(column_ids):
        groups = np.unique(column_ids // problem.size)
        cols = problem.columns(groups, "test")
        position = {int(g): t for t, g in enumerate(groups)}
        rows = np.array([position[int(j) // problem.size] * problem.size
                         + int(j) % problem.size for j in column_ids])
        decision += np.asarray(coef, dtype=np.float64) @ cols[rows].astype(np.float64)
    return float(np.mean(np.where(decision > 0, 1.0, -1.0) == y_test))


def recovered(problem, groups) -> int:
    return len(set(int(g) for g in groups) & set(problem.informative.tolist()))


# --------------------------------------------------------------------------
# FGM
# --------------------------------------------------------------------------
def fgm_curve(problem, store, counts, B, C, workers=None, refit=True,
              inner_kkt_tol=DEFAULT_KKT_TOL):
    """One FGM run up to max(counts) groups; the model at each count.

    Returns
    -------
    rows : list of dict
        Per count: ``groups``, ``recovered``, ``accuracy``, ``seconds``
        (wall time from the start of the fit to the end of the iteration
        that reached the count), and with ``refit``: ``refit_accuracy``,
        ``refit_seconds`` (the refit alone).
    run : dict
        C, history, peak RSS, stop reason, total seconds.
    """
    from ultrafs.features import make_feature_space
    from ultrafs.methods.fgm import fit_fgm
    from ultrafs.methods.refit import refit_block
    from ultrafs.methods.validation import default_C

    started = time.perf_counter()
    features = make_feature_space(store, groups=problem.group_ids())
    if C == "scale":
        C = default_C(features, num_workers=workers)
    C = float(C)
    y = store.read_labels()
    stamps = []
    result = fit_fgm(features, y, B=B, C=C, loss="logistic",
                     max_iter=math.ceil(max(counts) / B), tol=0.0, fit_intercept=True,
                     num_workers=workers, inner_kkt_tol=inner_kkt_tol,
                     callback=lambda record: stamps.append(time.perf_counter() - started))
    total = time.perf_counter() - started
    fgm_peak = peak_rss_mb()
    held = [int(r["n_nonzero"]) for r in result.history]
    rows = []
    for k in counts:
        # the last iteration holding at most k groups (the nearest below)
        t = max((i for i, h in enumerate(held) if h <= k), default=None)
        if t is None:
            continue
        coef, bias = result.path[t]
        keys = result.keys[:result.batch_ptr[t + 1]]
        nonzero = coef != 0
        ids = np.array([fid for _, fid in features.feature_ids(keys[nonzero])], dtype=np.int64)
        groups = np.unique(ids // problem.size)
        row = {"target": k, "groups": int(len(groups)), "iteration": t + 1,
               "recovered": recovered(problem, groups),
               "accuracy": evaluate(problem, ids, coef[nonzero], -bias),
               "seconds": stamps[t]}
        if refit:
            refit_started = time.perf_counter()
            block = features.materialize(keys[nonzero])
            fitted = refit_block(block, y, loss="logistic", C=C, fit_intercept=True,
                                 coef0=coef[nonzero], bias0=bias, kkt_tol=inner_kkt_tol)
            row["refit_seconds"] = time.perf_counter() - refit_started
            row["refit_accuracy"] = evaluate(problem, ids, fitted["coef"],
                                             fitted["intercept"])
        rows.append(row)
    run = {"C": C, "B": B, "inner_kkt_tol": inner_kkt_tol, "total_seconds": total,
           "peak_rss_mb_fit": fgm_peak,
           "stop_reason": result.stop_reason,
           "history": [{key: r[key] for key in ("iteration", "n_nonzero", "objective",
                                                 "inner_iterations", "score_seconds",
                                                 "materialize_seconds", "solve_seconds",
                                                 "scan_nnz")}
                       for r in result.history]}
    return rows, run


# --------------------------------------------------------------------------
# group lasso (skglm)
# --------------------------------------------------------------------------
def _group_logistic_datafit(grp_ptr, grp_indices, lipschitz):
    """skglm's ``LogisticGroup`` with its per-group Lipschitz constants given.

    In skglm 0.5, ``GroupBCD`` takes its step sizes from
    ``datafit.get_lipschitz(X, y)``, which ``LogisticGroup`` does not
    define: it inherits ``Logistic.get_lipschitz``, the constants of the
    single columns ``||X_j||^2 / (4 n)`` (m of them, and a transient copy
    ``X ** 2``), and the solver uses the one of column g for group g; while
    ``LogisticGroup.initialize`` computes the group constants
    ``||X_g||_2^2 / (4 n)`` with one SVD per group at every solve (about
    5 ms per 4096 x 10 group here, 20 s of each fit at 4,000 groups) and
    leaves them unused.  (skglm fixed the same for ``QuadraticGroup`` in its
    PR 200.)  Here the group constants are computed once (from the 10 x 10
    Gram matrices) and are the ones the solver uses: the problem solved is
    unchanged, the steps are the ones BCD's convergence assumes.
    """
    from skglm.datafits import LogisticGroup

    class LogisticGroupGivenL(LogisticGroup):
        def __init__(self, grp_ptr, grp_indices, lipschitz):
            self.grp_ptr, self.grp_indices = grp_ptr, grp_indices
            self.lipschitz = lipschitz

        def params_to_dict(self):
            return dict(grp_ptr=self.grp_ptr, grp_indices=self.grp_indices,
                        lipschitz=self.lipschitz)

        def initialize(self, X, y):
            pass

        def get_lipschitz(self, X, y):
            return self.lipschitz

    return LogisticGroupGivenL(grp_ptr, grp_indices, lipschitz)


class GroupLasso:
    """skglm's group-lasso logistic regression on an in-memory X (n x m)."""

    def __init__(self, X, y, size, tol=1e-4):
        started = time.perf_counter()
        self.X, self.y, self.size, self.tol = X, y, size, tol
        n, m = X.shape
        self.grp_ptr = np.arange(0, m + 1, size, dtype=np.int32)
        self.grp_indices = np.arange(m, dtype=np.int32)
        self.n_groups = m // size
        lipschitz = np.empty(self.n_groups)
        step = max(1, 2 ** 22 // (n * size))
        for g0 in range(0, self.n_groups, step):
            g1 = min(g0 + step, self.n_groups)
            part = X[:, g0 * size:g1 * size].reshape(n, g1 - g0, size)
            gram = np.einsum("iga,igb->gab", part, part, optimize=True)
            lipschitz[g0:g1] = np.linalg.eigvalsh(gram)[:, -1] / (4 * n)
        self.datafit = _group_logistic_datafit(self.grp_ptr, self.grp_indices, lipschitz)
        # λ_max: the largest group norm of the gradient at the intercept-only model
        p = np.mean(y > 0)
        b0 = math.log(p / (1 - p))
        r = -y / (1 + np.exp(y * b0)) / n
        grad = (X.T @ r).reshape(self.n_groups, size)
        self.lambda_max = float(np.sqrt((grad ** 2).sum(axis=1)).max())
        self.setup_seconds = time.perf_counter() - started

    def fit(self, lam):
        """(coef (m,), intercept, seconds) of one cold fit at λ."""
        from skglm.penalties import WeightedGroupL2
        from skglm.solvers import GroupBCD

        penalty = WeightedGroupL2(alpha=lam, weights=np.ones(self.n_groups),
                                  grp_ptr=self.grp_ptr, grp_indices=self.grp_indices)
        solver = GroupBCD(fit_intercept=True, tol=self.tol)
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = solver.solve(self.X, self.y, self.datafit, penalty)[0]
        seconds = time.perf_counter() - started
        return w[:-1], float(w[-1]), seconds

    def groups_of(self, coef):
        return np.flatnonzero(np.any(coef.reshape(self.n_groups, self.size) != 0, axis=1))

    def at_count(self, k, max_fits=12):
        """Bisect log λ to k nonzero groups (the nearest reached, ties below).

        Every fit is kept (``self.fits``), so later counts start from the
        tightest bracket the earlier ones found.
        """
        fits = self.__dict__.setdefault("fits", [])
        new = []

        def fit(log_lam):
            coef, intercept, seconds = self.fit(math.exp(log_lam))
            groups = self.groups_of(coef)
            record = {"log_lambda": log_lam, "groups": len(groups), "coef": coef,
                      "intercept": intercept, "seconds": seconds, "selected": groups}
            fits.append(record)
            new.append(record)
            return len(groups)

        top = math.log(self.lambda_max)                  # 0 groups at λ_max
        while not any(f["groups"] >= k for f in fits) and len(new) < max_fits:
            fit(min([f["log_lambda"] for f in fits], default=top) - math.log(2.0))
        while not any(f["groups"] == k for f in fits) and len(new) < max_fits:
            lo = max((f["log_lambda"] for f in fits if f["groups"] > k), default=None)
            hi = min((f["log_lambda"] for f in fits if f["groups"] < k), default=top)
            if lo is None or hi - lo < 1e-4:
                break
            fit(0.5 * (lo + hi))
        best = min(fits, key=lambda f: (abs(f["groups"] - k), f["groups"] > k))
        return dict(best, **{"lambda": math.exp(best["log_lambda"])}), {
            "fits": len(new), "seconds": sum(f["seconds"] for f in new)}


def lasso_curve(problem, counts, tol=1e-4, refit_C=10.0):
    """Group lasso at each count: groups, recovered, accuracy, seconds of the fit."""
    from ultrafs.methods.refit import refit_block
    from ultrafs.store.base import ColumnBlock

    started = time.perf_counter()
    X = np.empty((problem.n, problem.n_features), order="F")     # float64, Fortran
    step = 100
    for g0 in range(0, problem.n_groups, step):
        groups = np.arange(g0, min(g0 + step, problem.n_groups))
        X[:, g0 * problem.size:(g0 + len(groups)) * problem.size] = \
            problem.columns(groups, "train").T
    y = problem.labels("train")
    load_seconds = time.perf_counter() - started
    gl = GroupLasso(X, y, problem.size, tol=tol)
    gl.fit(gl.lambda_max * 0.5)            # compile skglm's numba code before timing
    rows = []
    for k in counts:
        best, bisect = gl.at_count(k)
        ids = np.flatnonzero(best["coef"])
        row = {"target": k, "groups": int(best["groups"]), "lambda": best["lambda"],
               "lambda_over_max": best["lambda"] / gl.lambda_max,
               "recovered": recovered(problem, best["selected"]),
               "accuracy": evaluate(problem, ids, best["coef"][ids], best["intercept"]),
               "seconds": best["seconds"], "bisection_fits": bisect["fits"],
               "bisection_seconds": bisect["seconds"]}
        if refit_C is not None and len(ids):
            n = problem.n
            block = ColumnBlock(-1, np.arange(0, len(ids) * n + 1, n, dtype=np.int64),
                                np.tile(np.arange(n, dtype=np.int32), len(ids)),
                                np.ascontiguousarray(X[:, ids].T).ravel())
            fitted = refit_block(block, y, loss="logistic", C=refit_C, fit_intercept=True)
            row["refit_accuracy"] = evaluate(problem, ids, fitted["coef"],
                                             fitted["intercept"])
        rows.append(row)
        print(f"  group lasso k={k}: {row['groups']} groups, acc {row['accuracy']:.4f}, "
              f"{row['seconds']:.2f} s/fit ({bisect['fits']} fits)", flush=True)
    return rows, {"lambda_max": gl.lambda_max, "tol": tol, "load_seconds": load_seconds,
                  "setup_seconds": gl.setup_seconds,
                  "total_seconds": time.perf_counter() - started,
                  "peak_rss_mb": peak_rss_mb()}


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------
def markdown(fgm_runs, lasso_rows, n_informative):
    """One line per (count, method); ``fgm_runs`` maps a label to its rows.

    Seconds: FGM's are the wall time from the start of its single run to
    the iteration that reached the count (+ the refit for "+refit"); the
    group lasso's are one cold fit at the matched λ.  "GL s / s" is the
    group lasso's seconds over the line's.
    """
    lasso = {r["target"]: r for r in lasso_rows or []}
    lines = ["| target | method | groups | recovered / %d | test accuracy | seconds | "
             "GL s / s |" % n_informative, "|---:|---|---:|---:|---:|---:|---:|"]
    counts = sorted({r["target"] for rows in fgm_runs.values() for r in rows} | set(lasso))
    for k in counts:
        g = lasso.get(k)
        for label, rows in fgm_runs.items():
            r = next((r for r in rows if r["target"] == k), None)
            if r is None:
                continue
            variants = [(label, r["accuracy"], r["seconds"])]
            if "refit_accuracy" in r:
                variants.append((label + " +refit", r["refit_accuracy"],
                                 r["seconds"] + r["refit_seconds"]))
            for name, accuracy, seconds in variants:
                ratio = f"{g['seconds'] / seconds:.2f}" if g else "–"
                lines.append(f"| {k} | {name} | {r['groups']} | {r['recovered']} | "
                             f"{accuracy:.4f} | {seconds:.2f} | {ratio} |")
        if g is not None:
            lines.append(f"| {k} | group lasso (skglm) | {g['groups']} | {g['recovered']} | "
                         f"{g['accuracy']:.4f} | {g['seconds']:.2f} | 1 |")
            if "refit_accuracy" in g:
                lines.append(f"| {k} | group lasso +refit | {g['groups']} | "
                             f"{g['recovered']} | {g['refit_accuracy']:.4f} | – | – |")
    return "\n".join(lines)


def _kkt_tol(text):
    """``--inner-kkt-tol`` entry: "default", 0 (None: eq. 40 alone) or a number."""
    if text == "default":
        return DEFAULT_KKT_TOL
    value = float(text)
    return None if value == 0 else value


def _fgm_label(kkt_tol):
    return "FGM (eq. 40 stop, APG)" if kkt_tol is None else f"FGM (KKT {kkt_tol:g})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096, help="training rows")
    parser.add_argument("--n-test", type=int, default=2000)
    parser.add_argument("--groups", type=int, default=4000)
    parser.add_argument("--size", type=int, default=10, help="columns per group")
    parser.add_argument("--informative", type=int, default=100)
    parser.add_argument("--counts", default="10,20,50,100,150")
    parser.add_argument("--B", type=int, default=10, help="FGM groups per iteration")
    parser.add_argument("--C", default="10", help='FGM C: a number or "scale"')
    parser.add_argument("--inner-kkt-tol", default="default",
                        help="comma-separated FGM runs: 'default' (the library's KKT "
                             "certificate), a tolerance, or 0 (the paper's eq. 40 stop "
                             "alone, which runs APG)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None,
                        help="threads of FGM's passes (default: the CPU count)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="FGM only (the group lasso needs X in memory)")
    parser.add_argument("--no-refit", action="store_true",
                        help="skip the l2 refits (FGM's and the group lasso's)")
    parser.add_argument("--lasso-tol", type=float, default=1e-4)
    parser.add_argument("--in-memory", action="store_true",
                        help="FGM on an in-memory store instead of the Zarr store "
                             "(X whole in memory, as the group lasso has it)")
    parser.add_argument("--store-dir", default="/tmp/exp/group_synth")
    parser.add_argument("--keep-store", action="store_true",
                        help="keep the training store (deleted by default)")
    parser.add_argument("--name", default="group_synthetic")
    args = parser.parse_args(argv)
    counts = sorted(int(c) for c in args.counts.split(","))
    C = args.C if args.C == "scale" else float(args.C)
    kkt_tols = [_kkt_tol(t) for t in args.inner_kkt_tol.split(",")]

    from ultrafs.store import open_store

    store_dir = Path(args.store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    # warm the numba JIT (FGM's kernels) on a tiny problem
    warm = GroupProblem(200, 30, args.size, 3, n_test=50, seed=99)
    warm_path = store_dir / f"{args.name}-warm.zarr"
    write_train_store(warm, warm_path)
    for kkt_tol in kkt_tols:
        fgm_curve(warm, open_store(warm_path), [10], 5, 10.0, workers=args.workers,
                  refit=not args.no_refit, inner_kkt_tol=kkt_tol)
    shutil.rmtree(warm_path, ignore_errors=True)

    problem = GroupProblem(args.n, args.groups, args.size, args.informative,
                           n_test=args.n_test, seed=args.seed)
    results = {"args": vars(args), "problem": problem.describe()}
    path = store_dir / f"{args.name}-train.zarr"
    if args.in_memory:
        print(f"generating {problem.n} x {problem.n_features} ({problem.n_groups} groups) "
              "in memory", flush=True)
        memory, results["store"] = memory_store(problem)
        open_train = lambda: memory  # noqa: E731
    else:
        print(f"writing {problem.n} x {problem.n_features} ({problem.n_groups} groups) "
              f"to {path}", flush=True)
        results["store"] = write_train_store(problem, path, command=(
            f"bench/group_synthetic.py --n {args.n} --groups {args.groups} "
            f"--size {args.size} --informative {args.informative} --seed {args.seed}"))
        results["store"]["path"] = str(path)
        print(f"  store: {results['store']['bytes'] / 2**30:.2f} GiB in "
              f"{results['store']['seconds']:.1f} s", flush=True)
        open_train = lambda: open_store(path)  # noqa: E731
    results["fgm"] = {}
    fgm_runs = {}
    try:
        for kkt_tol in kkt_tols:
            label = _fgm_label(kkt_tol) + (" in memory" if args.in_memory else "")
            rss_before = peak_rss_mb()
            rows, run = fgm_curve(problem, open_train(), counts, args.B, C,
                                  workers=args.workers, refit=not args.no_refit,
                                  inner_kkt_tol=kkt_tol)
            run["peak_rss_mb_before_fit"] = rss_before
            results["fgm"][label] = {"rows": rows, "run": run}
            fgm_runs[label] = rows
            print(f"  {label}: {run['total_seconds']:.1f} s, C = {run['C']:g}, "
                  f"peak RSS {run['peak_rss_mb_fit']:.0f} MB", flush=True)
    finally:
        if not args.keep_store:
            shutil.rmtree(path, ignore_errors=True)
    open_train = memory = None
    lasso_rows = None
    if not args.no_baseline:
        refit_C = (None if args.no_refit
                   else next(iter(results["fgm"].values()))["run"]["C"])
        lasso_rows, lasso_run = lasso_curve(problem, counts, tol=args.lasso_tol,
                                            refit_C=refit_C)
        results["group_lasso"] = {"rows": lasso_rows, "run": lasso_run}
    table = markdown(fgm_runs, lasso_rows, len(problem.informative))
    results["table"] = table
    results["peak_rss_mb"] = peak_rss_mb()
    print(table)
    print("peak RSS MB", round(results["peak_rss_mb"]))
    write_result(args.name, results)
    return results


if __name__ == "__main__":
    main()
