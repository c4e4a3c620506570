"""Why HIK loses to linear FGM (issue 38 item 2): one fit per line, with its C,
the subproblem's iteration counts and certificates, and the count of
original features.

Protocol (the issue's): mnist 3-vs-8 (``../shared/data/mnist5k_3vs8``),
pixels / 255, a 60/40 stratified split (seed 0), ``select(X, y, B=B,
max_iter=T, kernel=..., C=...)``; test accuracy of FGM's own weights.

Usage::

    python bench/hik_study.py [--set mnist3v8] [--ks 10,20,50] [--B 2]
        [--kernels linear,hik,chi2] [--C scale] [--q 100] [--seeds 0] [--tol 0]
        [--set rcv1_small --divide 0 --test-size 0.3] [--name hik_study]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import scipy.sparse as sp

from common import write_result
from quality_vs_l1 import _load, SETS, splits


def split(name, seed=0, test_size=0.4, divide=None):
    """(X, y, Xt, yt): a stratified split of set ``name``; ``divide`` scales
    the values (mnist: 255).  madelon: its own train / test files."""
    from sklearn.model_selection import StratifiedShuffleSplit

    if SETS[name][1] is not None:
        return next(splits(name, 1))
    X, y = _load(SETS[name][0])
    X = sp.csr_matrix(X, dtype=np.float64)
    if divide:
        X = X / float(divide)
    sss = StratifiedShuffleSplit(n_splits=1, test_size=test_size, random_state=seed)
    tr, te = next(sss.split(np.zeros(len(y)), y))
    return X[tr], y[tr], X[te], y[te]


def fit(kernel, X, y, Xt, yt, B, T, C="scale", q=None, tol=None):
    from ultrafs.api import select
    from ultrafs.store import InMemoryStore

    options = {} if tol is None else {"tol": tol}
    if kernel != "linear":
        options["kernel"] = kernel
        if q is not None and kernel == "hik":
            options["kernel_params"] = {"q": q}
    started = time.perf_counter()
    model = select(X, y, B=B, max_iter=T, C=C, **options)
    seconds = time.perf_counter() - started
    test = InMemoryStore(Xt, yt)
    accuracy = float(model.evaluate_store(test)["accuracy"])
    train = float(model.evaluate_store(InMemoryStore(X, y))["accuracy"])
    return {"kernel": kernel, "B": B, "T": T, "C": float(model.params["C"]),
            "accuracy": accuracy, "train_accuracy": train, "seconds": seconds,
            "groups": len(model.selected_groups), "columns": len(model.features),
            "inner_iterations": [r["inner_iterations"] for r in model.history],
            "inner_converged": [r["inner_converged"] for r in model.history],
            "inner_kkt": [r["inner_kkt"] for r in model.history],
            "stop_reason": model.stop_reason}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="mnist3v8")
    parser.add_argument("--divide", type=float, default=255.0)
    parser.add_argument("--test-size", type=float, default=0.4)
    parser.add_argument("--ks", default="10,20,50")
    parser.add_argument("--B", type=int, default=2)
    parser.add_argument("--kernels", default="linear,hik,chi2",
                        help="hik:Q is HIK with Q levels")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--tol", type=float, default=None,
                        help="FGM's outer tol; 0: hold the whole budget k (equal "
                             "original features for every kernel)")
    parser.add_argument("--C", default="scale")
    parser.add_argument("--q", type=int, default=None)
    parser.add_argument("--name", default="hik_study")
    args = parser.parse_args(argv)
    C = args.C
    try:
        C = float(C)
    except ValueError:
        pass
    rows = []
    for seed in [int(v) for v in args.seeds.split(",")]:
        X, y, Xt, yt = split(args.set, seed=seed, test_size=args.test_size,
                             divide=args.divide or None)
        for k in [int(v) for v in args.ks.split(",")]:
            for name in args.kernels.split(","):
                kernel, _, q = name.partition(":")
                out = {"set": args.set, "seed": seed, "k": k, "label": name,
                       **fit(kernel, X, y, Xt, yt, args.B, k // args.B, C=C,
                             q=int(q) if q else args.q, tol=args.tol)}
                rows.append(out)
                print(json.dumps({key: (round(v, 4) if isinstance(v, float) else v)
                                  for key, v in out.items() if key not in ("inner_kkt", "path")}),
                      flush=True)
    write_result(args.name, {"args": vars(args), "rows": rows})


if __name__ == "__main__":
    sys.exit(main())
