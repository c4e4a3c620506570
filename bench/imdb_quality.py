"""imdb50k (unigrams + bigrams): test accuracy versus number of features.

Question: with B = 30 and T = 10 (about 300 features), is FGM at least as
accurate on the official test half as scikit-learn's l1-LR (liblinear) at the
same number of nonzeros (84.2% with 284 nonzeros), for both losses?  Also
reports seconds per phase.

Usage: python bench/imdb_quality.py
"""

from __future__ import annotations

import time

import numpy as np

from common import imdb_stores, peak_rss_mb, write_result
from ultrafs.features.linear import LinearFeatures
from ultrafs.methods.fgm import fit_fgm
from ultrafs.kernels.sparse_ops import csc_matvec
from ultrafs.store import open_store


def fgm_run(train, test, loss, B=30, T=10, C=10.0):
    features = LinearFeatures(train)
    y = train.read_labels()
    fit_fgm(features, y, B=B, C=C, loss=loss, max_iter=1)   # warm the JIT
    started = time.perf_counter()
    result = fit_fgm(features, y, B=B, C=C, loss=loss, max_iter=T, tol=0.0)
    seconds = time.perf_counter() - started
    y_test = test.read_labels()
    rows = []
    for t, (coef, bias) in enumerate(result.path):
        keys = result.keys[:result.batch_ptr[t + 1]]
        # ids beyond the test store count as zero columns
        columns = np.where(keys < test.n_features, keys, test.n_features)
        block = test.read_columns(columns)
        decision = csc_matvec(block.indptr, block.indices, block.values(np.float64),
                              coef, test.n_samples) - bias
        rows.append({"iteration": t + 1, "n_features": int(np.count_nonzero(coef)),
                     "accuracy": float(np.mean(np.where(decision > 0, 1., -1.) == y_test)),
                     **{k: result.history[t][k] for k in
                        ("objective", "score_seconds", "materialize_seconds",
                         "solve_seconds", "inner_iterations")}})
    return rows, seconds


def l1_reference(train, test, Cs=(0.01, 0.02, 0.03, 0.05)):
    from sklearn.linear_model import LogisticRegression

    X = _csr(train)
    X_test = _csr(test, n_features=train.n_features)
    rows = []
    for c in Cs:
        started = time.perf_counter()
        clf = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=c)
        clf.fit(X, train.read_labels())
        rows.append({"C": c, "n_features": int(np.count_nonzero(clf.coef_)),
                     "accuracy": float(clf.score(X_test, test.read_labels())),
                     "seconds": time.perf_counter() - started})
    return rows


def _csr(store, n_features=None):
    import scipy.sparse as sp

    block = store.read_range(0, store.n_features)
    X = sp.csc_matrix((block.values(np.float64), block.indices, block.indptr),
                      shape=(store.n_samples, store.n_features))
    if n_features is not None and n_features != store.n_features:
        X = sp.hstack([X, sp.csc_matrix((store.n_samples, n_features - store.n_features))]) \
            if n_features > store.n_features else X[:, :n_features]
    return sp.csr_matrix(X)


def main():
    train_path, test_path, ingest_seconds = imdb_stores()
    train, test = open_store(train_path), open_store(test_path)
    results = {"ingest_seconds": ingest_seconds, "fgm": {}}
    for loss in ("logistic", "squared-hinge"):
        rows, seconds = fgm_run(train, test, loss)
        results["fgm"][loss] = {"rows": rows, "seconds": seconds}
        print(f"FGM {loss}: {seconds:.2f} s in-process (B=30, T=10, C=10)")
        print("| iteration | features | test accuracy | objective | score s | solve s |")
        print("|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['iteration']} | {r['n_features']} | {r['accuracy']:.4f} | "
                  f"{r['objective']:.1f} | {r['score_seconds']:.3f} | "
                  f"{r['solve_seconds']:.3f} |")
    results["l1"] = l1_reference(train, test)
    print("| l1-LR C | nonzeros | test accuracy | seconds |")
    print("|---:|---:|---:|---:|")
    for r in results["l1"]:
        print(f"| {r['C']} | {r['n_features']} | {r['accuracy']:.4f} | {r['seconds']:.1f} |")
    results["peak_rss_mb"] = peak_rss_mb()
    write_result("imdb_quality", results)


if __name__ == "__main__":
    main()
