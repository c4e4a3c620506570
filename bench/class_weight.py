"""class_weight='balanced' against no weights on an imbalanced set (w8a).

Question (issue 10, item 5): on w8a (49,749 rows, 300 binary features, 97%
negatives), does ``class_weight='balanced'`` raise the balanced accuracy
(the mean of the per-class recalls) of FGM's model on held-out rows, and
what does it cost in time?

Protocol: one seeded stratified 70/30 split (scikit-learn's
``StratifiedShuffleSplit(random_state=SEED)``); ``ultrafs.api.select`` on
the training rows with B = k / 10 and T = 10 (B·T = k features), the default
``C="scale"``, with and without ``class_weight="balanced"``; accuracy and
balanced accuracy of the model's predictions on the test rows; wall time of
the ``select`` call (numba kernels warmed first).

Usage::

    python bench/class_weight.py [--ks 20,50] [--seed 0] [--name class_weight]

Results go to ``bench/out/NAME.json`` and a markdown table to stdout.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from common import peak_rss_mb, write_result
from quality_vs_l1 import _load


def _split(y, seed):
    from sklearn.model_selection import StratifiedShuffleSplit

    sss = StratifiedShuffleSplit(n_splits=1, test_size=0.3, random_state=seed)
    return next(sss.split(np.zeros(len(y)), y))


def _scores(model, X, y):
    from sklearn.metrics import accuracy_score, balanced_accuracy_score

    from ultrafs.store import as_store

    decision = model.decision_function_store(as_store(X, y))
    predicted = np.asarray(model.predict_from_decision(decision), dtype=np.float64)
    return {"accuracy": float(accuracy_score(y, predicted)),
            "balanced_accuracy": float(balanced_accuracy_score(y, predicted)),
            "predicted_positive": float(np.mean(predicted == model.classes[1]))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="20,50")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="class_weight")
    args = parser.parse_args(argv)
    ks = [int(k) for k in args.ks.split(",")]

    from ultrafs.api import select

    X, y = _load("w8a")
    train, test = _split(y, args.seed)
    X_train, y_train, X_test, y_test = X[train], y[train], X[test], y[test]
    # warm the numba kernels (compilation is not what is measured)
    select(X_train[:2000], y_train[:2000], B=2, max_iter=1, class_weight="balanced")
    select(X_train[:2000], y_train[:2000], B=2, max_iter=1)

    rows = []
    for k in ks:
        for weighting in (None, "balanced"):
            started = time.perf_counter()
            model = select(X_train, y_train, B=k // 10, max_iter=10,
                           class_weight=weighting)
            seconds = time.perf_counter() - started
            row = {"k": k, "class_weight": weighting or "none",
                   "n_features": len(model.features), "C": model.params["C"],
                   "seconds": seconds, **_scores(model, X_test, y_test)}
            rows.append(row)
            print(row, flush=True)

    positives = float(np.mean(y == 1))
    write_result(args.name, {"set": "w8a", "n_samples": int(len(y)),
                             "positive_share": positives, "seed": args.seed,
                             "rows": rows, "peak_rss_mb": peak_rss_mb()})
    print(f"\nw8a: {len(y)} rows, {positives:.1%} positive; stratified 70/30 split, "
          f"seed {args.seed}\n")
    print("| B·T | class_weight | features | accuracy % | balanced accuracy % | "
          "predicted positive % | select s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['k']} | {r['class_weight']} | {r['n_features']} | "
              f"{100 * r['accuracy']:.2f} | {100 * r['balanced_accuracy']:.2f} | "
              f"{100 * r['predicted_positive']:.2f} | {r['seconds']:.2f} |")


if __name__ == "__main__":
    main()
