"""Exact operation counts of the Newton steps of a select (imdb, B=30, T=10):
Hessian builds and model sweeps against a Hessian-free block coordinate
descent with the same sweeps (issue 35, item 6).

Usage: python bench/hessian_cost_model.py fresh|reuse
  (fresh: reuse_hessian=False, a Hessian at every step)
"""
import sys, numpy as np
import pathlib
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import imdb_stores
from ultrafs.api import select
from ultrafs.store import open_store
import ultrafs.solvers.prox_newton as pn
import ultrafs.methods.fgm as fgm
from ultrafs.solvers.datafits import Datafit
store = open_store(imdb_stores()[0])
mode = sys.argv[1]
steps = []   # (solve index, sweeps)
builds = []
cur = {"i": -1}
orig_bcd = pn.l21sq_model_bcd
def bcd(*a):
    r = orig_bcd(*a); steps.append((cur["i"], r[1])); return r
pn.l21sq_model_bcd = bcd
h0 = Datafit.hessian
def hh(self, f):
    builds.append(cur["i"]); return h0(self, f)
Datafit.hessian = hh
solves = []
s0 = fgm.solve
def solve(datafit, block_ptr, **k):
    cur["i"] += 1
    op = datafit.operator
    rows = np.bincount(op.indices, minlength=op.n_rows).astype(float)
    full = float(np.sum(rows * (rows + 1) / 2))
    diag = 0.0
    for lo, hi in zip(block_ptr[:-1], block_ptr[1:]):
        r = np.bincount(op.indices[op.indptr[lo]:op.indptr[hi]], minlength=op.n_rows).astype(float)
        diag += float(np.sum(r * (r + 1) / 2))
    solves.append(dict(n=op.n_rows, nnz=op.nnz, t=len(block_ptr) - 1, p=op.n_columns, full=full, diag=diag))
    return s0(datafit, block_ptr, **k)
fgm.solve = solve
if mode == "fresh":
    P0 = pn.ProxNewton.__init__
    def init(self, *a, **k):
        k["reuse_hessian"] = False; P0(self, *a, **k)
    pn.ProxNewton.__init__ = init
select(store, B=30, max_iter=10)
tot_build = sum(solves[i]["full"] for i in builds)
tot_sweeps = sum(s for _, s in steps)
hf = sum(s * (3 * solves[i]["nnz"] + solves[i]["t"] * solves[i]["n"]) + solves[i]["diag"] for i, s in steps)
sweep_h = sum(s * (solves[i]["p"] + 1) ** 2 for i, s in steps)
print(mode, "newton steps", len(steps), "builds", len(builds), "sweeps", tot_sweeps)
print("  Hessian builds: %.3g pair additions; model sweeps on H: %.3g; total %.3g" % (tot_build, sweep_h, tot_build + sweep_h))
print("  Hessian-free CD (same sweeps, 3 nnz + t n per sweep, + block-diagonal Grams): %.3g" % hf)
print("  last solve: p %d nnz %d full Gram %.3g pairs, block-diagonal %.3g" % (solves[-1]["p"], solves[-1]["nnz"], solves[-1]["full"], solves[-1]["diag"]))
