"""Where binary proximal Newton spends a select (imdb, B=30, T=10): Hessian,
model sweeps, gradients and certificates, line searches (issue 35, item 6).

Usage: python bench/newton_profile.py
"""
import sys, time
import pathlib
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import imdb_stores
from ultrafs.api import select
from ultrafs.store import open_store
import ultrafs.solvers.prox_newton as pn
import ultrafs.methods.fgm as fgm
from ultrafs.solvers.datafits import Datafit
train, _, _ = imdb_stores()
store = open_store(train)
stats = {"sweeps": [], "hess": 0.0, "nh": 0, "dir": 0.0, "ls": 0.0, "state": 0.0, "solve": 0.0, "polish": 0}
orig_bcd = pn.l21sq_model_bcd
def bcd(*a):
    r = orig_bcd(*a); stats["sweeps"].append(r[1]); return r
pn.l21sq_model_bcd = bcd
orig_pol = pn.l21sq_model_polish
def pol(*a):
    stats["polish"] += 1; return orig_pol(*a)
pn.l21sq_model_polish = pol
def timer(cls, name, key):
    f = getattr(cls, name)
    def w(*a, **k):
        t = time.perf_counter(); r = f(*a, **k); stats[key] += time.perf_counter() - t; return r
    setattr(cls, name, w)
timer(Datafit, "hessian", "hess"); timer(pn.ProxNewton, "_direction", "dir"); timer(pn.ProxNewton, "_line_search", "ls"); timer(pn.ProxNewton, "_state", "state")
s0 = fgm.solve
iters = []
def solve(*a, **k):
    t = time.perf_counter(); r = s0(*a, **k); stats["solve"] += time.perf_counter() - t; iters.append((r.n_iter, a[0].n_coef, a[0].nnz)); return r
fgm.solve = solve
select(store, B=30, max_iter=2)
for k in stats: stats[k] = [] if k == "sweeps" else 0
iters.clear()
t = time.perf_counter(); m = select(store, B=30, max_iter=10); tot = time.perf_counter() - t
print("select", tot, {k: (v if k != "sweeps" else (len(v), sum(v), v)) for k, v in stats.items()})
print(iters)
