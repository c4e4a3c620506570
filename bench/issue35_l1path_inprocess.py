"""In-process imdb50k path (issue 35 item 7): before vs after, out of core or not.

One arm per process: ``before`` (run with the base tree first on
PYTHONPATH), ``after-ooc`` (``memory_budget=0``: partial KKT checks by
``store.read_columns``, full ones streamed) or ``after-mem`` (the decoded
copy, default budget).  Prints one JSON line: wall of ``fit_l1_path``
(no CLI start-up), phases, columns the checks read, last objective.

Usage (from /tmp, so that PYTHONPATH decides which tree is imported)::

    PYTHONPATH=/tmp/ultrafs_3db43cf python bench/issue35_l1path_inprocess.py before
    PYTHONPATH=$REPO python bench/issue35_l1path_inprocess.py after-ooc
    PYTHONPATH=$REPO python bench/issue35_l1path_inprocess.py after-mem
"""
import json
import os
import sys
import time
arm = sys.argv[1]
import numpy as np
from ultrafs.store import open_store
from ultrafs.methods.l1_path import fit_l1_path
import ultrafs
from pathlib import Path
st = open_store(Path(__file__).resolve().parent / 'out' / 'imdb50k_train.zarr')
kw = {} if arm == "before" else {"memory_budget": 0 if arm == "after-ooc" else 1 << 30}
t = time.perf_counter()
path = fit_l1_path(st, scheduler="threads", **kw)
wall = time.perf_counter() - t
R = path.records
print(json.dumps({"arm": arm, "file": ultrafs.__file__, "wall": wall, "load": os.getloadavg()[0],
  "stats": path.statistics_seconds, "kkt": sum(r["seconds_kkt"] for r in R),
  "screen": sum(r["seconds_screening"] for r in R), "solve": sum(r["seconds_solving"] for r in R),
  "fetch": sum(r["seconds_fetch"] for r in R),
  "read": sum(r.get("kkt_columns_read", 0) for r in R), "full": sum(r.get("kkt_full_passes", 0) for r in R),
  "obj_last": R[-1]["objective"], "nnz": [r["nnz"] for r in R][-1]}))
