"""Cold-cache digits fit (issue 35, item 5): the first and the second
``FGMClassifier(B=5, max_iter=2)`` fit of a fresh process, BLAS on one thread.

Run with an empty ``NUMBA_CACHE_DIR`` to time compilation (see
bench/notes/20-5-subproblem-solves.md for the loop that alternated
before/after).
"""
import time, warnings, json, sys
t0 = time.perf_counter()
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits
from ultrafs import FGMClassifier
import ultrafs.methods.fgm as fgm
X, y = load_digits(return_X_y=True)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
s0 = fgm.solve
solves = []
def solve(*a, **k):
    t = time.perf_counter(); r = s0(*a, **k); solves.append(time.perf_counter() - t); return r
fgm.solve = solve
with threadpool_limits(limits=1, user_api="blas"):
    t = time.perf_counter(); FGMClassifier(B=5, max_iter=2).fit(Xtr, ytr); first = time.perf_counter() - t
    s1 = list(solves); solves.clear()
    t = time.perf_counter(); FGMClassifier(B=5, max_iter=2).fit(Xtr, ytr); second = time.perf_counter() - t
print(json.dumps({"first_fit": first, "first_solves": s1, "second_fit": second, "second_solves": solves}))
