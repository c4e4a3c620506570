"""Multi-class FGM: test accuracy versus number of features, against ℓ1 multinomial LR.

Question: with one feature set shared by all classes, is multi-class FGM
(multinomial logistic loss, ℓ2,1² over batch × class blocks) at least as
accurate as scikit-learn's ℓ1-regularised multinomial logistic regression
(saga) at the same number of features used by any class — as fitted, and
with both selections refitted (an almost unpenalised multinomial LR on the
selected columns only)?  Does the multi-class subproblem meet its KKT
conditions?

Data: scikit-learn's bundled digits (1,797 × 64, 10 classes, pixels / 16,
seeded 2/3 train, 1/3 test; no download) and a seeded synthetic 5-class
problem with 50 planted features among 2,000 (X ~ N(0,1), class =
argmax of X W + 0.5 N(0,1); 2,000 train, 4,000 test rows); each as raw rows
and with rows scaled to unit length.  FGM: C = 10 (the paper's), B = 4
(digits) or 5 (synthetic), T = 12 or 16, tol = 0; saga: 60 values of C
from 0.002 to 10 (warm-started); each FGM point is paired with the saga
model of the nearest feature count (fewer on ties); wins/ties/losses with
a 0.5-point tie band.

Usage: python bench/multiclass_quality.py [--quick] [--paper-stop]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from common import peak_rss_mb, write_result
from ultrafs.datasets.planted import make_planted_multiclass
from ultrafs.features.linear import LinearFeatures
from ultrafs.methods.fgm import fit_fgm
from ultrafs.solvers.apg import solve
from ultrafs.solvers.datafits import make_datafit
from ultrafs.solvers.penalties import L21Squared
from ultrafs.store import InMemoryStore


def _unit_rows(X):
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norms > 0, norms, 1.0)


def datasets(quick):
    for name, Xtr, ytr, Xte, yte, cfg in _raw_datasets(quick):
        yield name, Xtr, ytr, Xte, yte, cfg
        yield (f"{name} (unit rows)", _unit_rows(Xtr), ytr, _unit_rows(Xte), yte, cfg)


def _raw_datasets(quick):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    X = digits.data / 16.0
    Xtr, Xte, ytr, yte = train_test_split(X, digits.target, test_size=1 / 3,
                                          random_state=0, stratify=digits.target)
    yield "digits", Xtr, ytr, Xte, yte, {"B": 4, "T": 12}
    n_features = 500 if quick else 2000
    problem = make_planted_multiclass(2000, n_features, 50, 5, n_test=4000,
                                      noise=0.5, seed=0)
    yield ("synthetic-5class", problem.X_train.astype(np.float64),
           problem.y_train.astype(int), problem.X_test.astype(np.float64),
           problem.y_test.astype(int), {"B": 5, "T": 16, "relevant": problem.relevant})


def refit_accuracy(Xtr, ytr, Xte, yte, columns):
    """Test accuracy of a nearly unpenalised multinomial LR on ``columns``."""
    from sklearn.linear_model import LogisticRegression

    if len(columns) == 0:
        return float(np.mean(yte == np.bincount(ytr).argmax()))
    model = LogisticRegression(C=1e4, max_iter=5000, tol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(Xtr[:, columns], ytr)
    return float(model.score(Xte[:, columns], yte))


def fgm_path(Xtr, ytr, Xte, yte, B, T, C, loss="logistic", inner_kkt_tol=1e-4):
    classes = np.unique(ytr)
    index = np.searchsorted(classes, ytr)
    store = InMemoryStore(Xtr, index.astype(np.float64))
    features = LinearFeatures(store)
    K = len(classes)
    fit_fgm(features, index, n_classes=K, B=B, C=C, loss=loss, max_iter=1)  # JIT
    started = time.perf_counter()
    result = fit_fgm(features, index, n_classes=K, B=B, C=C, loss=loss,
                     max_iter=T, tol=0.0, inner_kkt_tol=inner_kkt_tol)
    seconds = time.perf_counter() - started
    rows = []
    for t, (coef, bias) in enumerate(result.path):
        keys = result.keys[:result.batch_ptr[t + 1]]
        W = coef.reshape(len(keys), K)
        used = np.any(W != 0, axis=1)
        decision = Xte[:, keys] @ W - bias
        rows.append({"iteration": t + 1, "n_features": int(used.sum()),
                     "accuracy": float(np.mean(classes[decision.argmax(1)] == yte)),
                     "refit_accuracy": refit_accuracy(Xtr, ytr, Xte, yte,
                                                      keys[used])})
    # KKT of the last subproblem (relative to the gradient norm): as FGM left
    # it (inexact inner solve, eps_in = 1e-3) and re-solved from there to a
    # 1e-13 relative decrease
    X = store.read_columns(result.keys)
    datafit = make_datafit(X.indptr, X.indices, X.values(np.float64), index, C,
                           loss=loss, n_classes=K)
    blocks = result.batch_ptr * K

    def kkt_of(coef, bias):
        d = np.empty(datafit.decision_size)
        datafit.value_derivative(datafit.decision(coef, bias), d)
        grad = datafit.gradient(d)
        scale = max(1.0, np.linalg.norm(grad))
        return max(float(np.max(L21Squared().subdiff_distance(coef, grad, blocks))),
                   float(np.max(np.abs(datafit.bias_gradient(d))))) / scale

    tight = solve(datafit, blocks, coef0=result.coef, bias0=result.bias, tol=1e-13,
                  max_iter=100000)
    kkt = {"inexact": kkt_of(result.coef, result.bias),
           "resolved": kkt_of(tight.coef, tight.bias),
           "resolved_iterations": tight.n_iter}
    return rows, seconds, result, kkt


def saga_path(Xtr, ytr, Xte, yte, Cs):
    """ℓ1 multinomial LR (saga) along increasing C, warm-started."""
    from sklearn.linear_model import LogisticRegression

    rows = []
    model = LogisticRegression(l1_ratio=1.0, solver="saga", max_iter=3000, tol=1e-4,
                               warm_start=True)
    for C in Cs:
        model.set_params(C=C)
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(Xtr, ytr)
        used = np.flatnonzero(np.any(model.coef_ != 0, axis=0))
        rows.append({"C": C, "n_features": int(len(used)),
                     "accuracy": float(model.score(Xte, yte)),
                     "refit_accuracy": refit_accuracy(Xtr, ytr, Xte, yte, used),
                     "seconds": time.perf_counter() - started})
    return rows


def compare(fgm_rows, saga_rows):
    """Pair every FGM point with the saga model of the nearest feature count.

    Ties in distance go to the model with fewer features; FGM points whose
    count repeats the previous one are skipped.
    """
    pairs = []
    counts = np.array([r["n_features"] for r in saga_rows])
    seen = set()
    for row in fgm_rows:
        if row["n_features"] == 0 or row["n_features"] in seen:
            continue
        seen.add(row["n_features"])
        order = np.lexsort((counts, np.abs(counts - row["n_features"])))
        nearest = saga_rows[int(order[0])]
        pairs.append({"fgm_features": row["n_features"],
                      "fgm_accuracy": row["accuracy"],
                      "fgm_refit": row["refit_accuracy"],
                      "l1_features": nearest["n_features"],
                      "l1_accuracy": nearest["accuracy"],
                      "l1_refit": nearest["refit_accuracy"]})
    return pairs


def tally(pairs, key_a, key_b, tie=0.005):
    wins = sum(p[key_a] > p[key_b] + tie for p in pairs)
    losses = sum(p[key_a] < p[key_b] - tie for p in pairs)
    return {"wins": wins, "ties": len(pairs) - wins - losses, "losses": losses}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--paper-stop", action="store_true",
                        help="inner solver stops on the relative decrease alone "
                             "(the rule before the KKT certificate)")
    args = parser.parse_args()
    results = {}
    for name, Xtr, ytr, Xte, yte, cfg in datasets(args.quick):
        fgm_rows, seconds, result, kkt = fgm_path(
            Xtr, ytr, Xte, yte, cfg["B"], cfg["T"], args.C,
            inner_kkt_tol=None if args.paper_stop else 1e-4)
        Cs = np.geomspace(0.002, 10.0, 15 if args.quick else 60)
        saga_rows = saga_path(Xtr, ytr, Xte, yte, Cs)
        pairs = compare(fgm_rows, saga_rows)
        entry = {"fgm": fgm_rows, "fgm_seconds": seconds, "kkt_relative": kkt,
                 "saga": saga_rows, "pairs": pairs,
                 "fitted": tally(pairs, "fgm_accuracy", "l1_accuracy"),
                 "refit": tally(pairs, "fgm_refit", "l1_refit")}
        if "relevant" in cfg:
            selected = set(result.keys.tolist())
            entry["planted_recovered"] = int(len(selected & set(cfg["relevant"].tolist())))
            entry["planted"] = int(len(cfg["relevant"]))
        results[name] = entry
        print(f"== {name}: FGM {seconds:.2f} s, KKT {kkt['inexact']:.1e} as left by "
              f"FGM, {kkt['resolved']:.1e} re-solved, "
              f"fitted W/T/L {entry['fitted']}, refit W/T/L {entry['refit']}")
        print(" FGM feats  acc    refit | l1 feats  acc    refit")
        for p in pairs:
            print(f" {p['fgm_features']:9d}  {p['fgm_accuracy']:.4f} {p['fgm_refit']:.4f}"
                  f" | {p['l1_features']:8d}  {p['l1_accuracy']:.4f} {p['l1_refit']:.4f}")
        if "planted_recovered" in entry:
            print(f" planted features recovered: {entry['planted_recovered']}"
                  f" of {entry['planted']}")
    results["peak_rss_mb"] = peak_rss_mb()
    print(f"peak RSS {results['peak_rss_mb']:.0f} MB")
    write_result("multiclass_quality", results)


if __name__ == "__main__":
    main()
