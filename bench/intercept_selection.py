"""What the unpenalised intercept does to FGM's selection on a small set.

Question (issue 8, the leu cells): on a set where FGM loses to l1-LR, is it
the selection or the weights?  For each scaling (raw, unit rows) and k,
FGM's plain defaults with and without the intercept; each selection refit
by the same scikit-learn l2-LR (``quality_vs_l1.l2_refit``: 5-fold CV of C,
with an intercept) and scored on the set's test part, next to l1-LR
bisected to the same count (``quality_vs_l1.l1_bisect``) and its refit.
Then, inside the training part only, 5-fold CV (``--repeats`` seeded
repeats) of FGM with and without the intercept, so that the choice can be
judged without the test rows.

With ``--peer``: is it FGM or the unpenalised intercept?  l1-LR with an
unpenalised intercept (skglm's ``SparseLogisticRegression``, alpha bisected
on a log scale to each k's nonzero count or the largest count below it)
with and without the intercept, test accuracy and the refit of each
selection, next to liblinear's l1-LR (whose intercept is penalised).

With ``--auto``: would ``C="auto"`` choose the intercept?  Per scaling and
k, ``select(C="auto", refit=True)`` with and without the intercept: the
best held-out (5-fold) accuracy of each curve, which a choice of the
intercept by the same folds would compare, and each model's test accuracy.

With ``--auc``: ranking or threshold?  Per scaling and k, test accuracy
and test AUC (the area under the ROC curve of the decision values, which
no intercept changes) of FGM's plain defaults and of the recommended
``C="auto"`` + refit, next to liblinear's l1-LR bisected to each model's
nonzero count (refitted at the C found, seeded as in the bisection).

Usage::

    cd bench && python intercept_selection.py [--set leu] [--ks 10,20,50,100,200,300]
        [--cv-ks 10,20,50] [--repeats 3] [--auto | --peer | --auc]
"""

from __future__ import annotations

import argparse

import numpy as np

import quality_vs_l1 as q


def held_out_table(X, y, Xt, yt, ks):
    """Print, per k, test accuracies of the selections with and without intercept."""
    from ultrafs.api import select
    from ultrafs.store import InMemoryStore

    for k in ks:
        B, T = q.budget(k)
        cells = [f"k={k}"]
        support = None
        for fit_intercept in (True, False):
            model = select(X, y, B=B, max_iter=T, fit_intercept=fit_intercept)
            support = np.array([int(f) for f in model.features])
            accuracy = model.evaluate_store(InMemoryStore(Xt, yt))["accuracy"]
            refit = q.l2_refit(X, y, Xt, yt, support)
            cells.append(f"intercept={fit_intercept}: plain {accuracy:.3f} "
                         f"({len(support)} features), refit {refit:.3f}")
        l1 = q.l1_bisect(X, y, Xt, yt, len(support), {})
        cells.append(f"l1-LR {l1['accuracy']:.3f} ({l1['nnz']}), "
                     f"its refit {l1['refit_accuracy']:.3f}")
        print(" | ".join(cells), flush=True)


def training_cv(X, y, ks, repeats):
    """Print, per k, 5-fold CV accuracy on the training rows with and without."""
    from sklearn.model_selection import StratifiedKFold

    from ultrafs.api import select
    from ultrafs.store import InMemoryStore

    for k in ks:
        B, T = q.budget(k)
        means = {}
        for fit_intercept in (True, False):
            scores = []
            for seed in range(repeats):
                folds = StratifiedKFold(5, shuffle=True, random_state=seed)
                for train, held in folds.split(X, y):
                    model = select(X[train], y[train], B=B, max_iter=T,
                                   fit_intercept=fit_intercept)
                    scores.append(model.evaluate_store(
                        InMemoryStore(X[held], y[held]))["accuracy"])
            means[fit_intercept] = float(np.mean(scores))
        print(f"k={k} training-part CV: with intercept {means[True]:.3f}, "
              f"without {means[False]:.3f}", flush=True)


def auto_table(X, y, Xt, yt, ks):
    """Per k: the C="auto" curves' best held-out accuracy and the test accuracy,
    with and without the intercept."""
    from ultrafs.api import select
    from ultrafs.store import InMemoryStore

    for k in ks:
        B, T = q.budget(k)
        cells = [f"k={k}"]
        for fit_intercept in (True, False):
            model = select(X, y, B=B, max_iter=T, C="auto", refit=True,
                           fit_intercept=fit_intercept)
            best = max(p["accuracy"] for p in model.params["validation"]["points"])
            accuracy = model.evaluate_store(InMemoryStore(Xt, yt))["accuracy"]
            cells.append(f"intercept={fit_intercept}: held-out {100 * best:.1f}% "
                         f"test {100 * accuracy:.1f}% ({len(model.features)} features)")
        print(" | ".join(cells), flush=True)


def skglm_bisect(X, y, target, fit_intercept):
    """skglm l1-LR with the largest nonzero count <= target (alpha bisected)."""
    import warnings

    from skglm import SparseLogisticRegression

    centred = y - (y.mean() if fit_intercept else 0.0)
    alpha_max = float(np.max(np.abs(X.T @ centred))) / (2 * len(y))
    lo, hi = np.log10(alpha_max) - 4, np.log10(alpha_max) + 0.1   # many, none
    best = None
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = SparseLogisticRegression(alpha=10 ** mid, fit_intercept=fit_intercept,
                                           max_iter=200, tol=1e-8).fit(X, y)
        nnz = int(np.count_nonzero(clf.coef_))
        if nnz > target:
            lo = mid
        else:
            hi = mid
            if best is None or nnz > best[0]:
                best = (nnz, clf)
            if nnz == target:
                break
    return best


def peer_table(X, y, Xt, yt, ks):
    """Per k: skglm l1-LR with and without its unpenalised intercept, and liblinear."""
    for k in ks:
        cells = [f"k={k}"]
        for fit_intercept in (True, False):
            nnz, clf = skglm_bisect(X, y, k, fit_intercept)
            support = np.flatnonzero(clf.coef_)
            cells.append(f"skglm intercept={fit_intercept}: {100 * clf.score(Xt, yt):.1f}% "
                         f"({nnz}), refit {100 * q.l2_refit(X, y, Xt, yt, support):.1f}%")
        l1 = q.l1_bisect(X, y, Xt, yt, k, {})
        cells.append(f"liblinear {100 * l1['accuracy']:.1f}% ({l1['nnz']}), "
                     f"refit {100 * l1['refit_accuracy']:.1f}%")
        print(" | ".join(cells), flush=True)


def auc_table(X, y, Xt, yt, ks):
    """Per k: test accuracy and AUC of FGM (plain, recommended) and of l1-LR."""
    from sklearn.metrics import roc_auc_score

    from ultrafs.api import select
    from ultrafs.store import InMemoryStore

    test = InMemoryStore(Xt, yt)
    for k in ks:
        B, T = q.budget(k)
        cells = [f"k={k}"]
        for name, options in (("plain", {}), ("recommended", {"C": "auto", "refit": True})):
            model = select(X, y, B=B, max_iter=T, **options)
            decision = np.asarray(model.decision_function_store(test)).ravel()
            accuracy = np.mean(model.predict_from_decision(decision) == yt)
            l1 = q.l1_bisect(X, y, Xt, yt, len(model.features), {})
            clf = q.l1_model(X, y, l1["C"])          # the bisection's model
            cells.append(f"{name} ({len(model.features)}): FGM {100 * accuracy:.1f}% "
                         f"AUC {roc_auc_score(yt, decision):.3f}, l1-LR ({l1['nnz']}) "
                         f"{100 * l1['accuracy']:.1f}% "
                         f"AUC {roc_auc_score(yt, clf.decision_function(Xt)):.3f}")
        print(" | ".join(cells), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", default="leu", choices=sorted(q.SETS))
    parser.add_argument("--ks", default="10,20,50,100,200,300")
    parser.add_argument("--cv-ks", default="10,20,50")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--auto", action="store_true",
                        help="Compare C='auto' + refit with and without the intercept.")
    parser.add_argument("--peer", action="store_true",
                        help="l1-LR (skglm) with and without an unpenalised intercept.")
    parser.add_argument("--auc", action="store_true",
                        help="Test accuracy and AUC of FGM and l1-LR: ranking or "
                             "threshold?")
    args = parser.parse_args(argv)
    X, y, Xt, yt = next(q.splits(args.set, 1))
    for scaling in ("raw", "unit"):
        A, At = (X, Xt) if scaling == "raw" else (q.unit_rows(X), q.unit_rows(Xt))
        print(f"== {args.set}, {scaling} rows: {A.shape[0]} training, "
              f"{At.shape[0]} test rows", flush=True)
        if args.peer:
            peer_table(A, y, At, yt, [int(k) for k in args.ks.split(",")])
            continue
        if args.auc:
            auc_table(A, y, At, yt, [int(k) for k in args.ks.split(",")])
            continue
        if args.auto:
            auto_table(A, y, At, yt, [int(k) for k in args.ks.split(",")])
            continue
        held_out_table(A, y, At, yt, [int(k) for k in args.ks.split(",")])
        training_cv(A, y, [int(k) for k in args.cv_ks.split(",")], args.repeats)


if __name__ == "__main__":
    main()
