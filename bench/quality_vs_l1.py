"""FGM against l1-logistic regression at the same number of nonzero features.

Question (issue 8): on every binary set of ``../shared/data``, raw and with
rows scaled to unit length, at k in {10, 20, 50, 100, 200, 300} (k at most
features / 5), is the recommended command (``C="auto"``, ``refit=True``) at
least as accurate on held-out rows as scikit-learn's l1-LR (liblinear, C
bisected to the same number of nonzeros) and as l1-LR refitted on its own
selection; and do the plain defaults stay within 1 point of l1-LR?

Splits: the sets' own train/test parts (imdb50k 25k/25k, imdb unigram,
a9a rows 1-32,561 / the rest, madelon, leu); five seeded stratified 70/30
splits of the others.  FGM runs with B = k / 10 and T = 10 (so B·T = k).
l1-LR is bisected on C (log scale) to FGM's nonzero count, or the largest
count below it.  "l1 refit" is an l2-LR (lbfgs) on l1's selected columns
with C chosen by 5-fold CV on the training rows (scikit-learn's
LogisticRegressionCV over the same 8 factors of C as ``C="auto"``).

A cell is the mean test accuracy over the splits; a win / loss needs a gap
of more than ``TIE_POINTS`` accuracy points, else it is a tie.  Each fit's
per-row correctness is kept (packed bits), so that ``--paired`` can tell
which gaps the test rows resolve (exact McNemar test on the rows only one
of the two models classifies right, pooled over the splits).  Each fit's
test AUC (of its decision values, which the intercept does not change) is
kept too: the last table counts the cells behind l1-LR in accuracy that
are not behind in AUC (FGM ranks the test rows as well; the threshold
loses).

Usage::

    python bench/quality_vs_l1.py [--sets a9a,mushrooms] [--scalings raw,unit]
        [--ks 10,20] [--splits 5] [--configs plain,recommended]
        [--name quality_vs_l1]
    python bench/quality_vs_l1.py --combine NAME1,NAME2   # joint table of runs
    python bench/quality_vs_l1.py --combine NAME1:plain,NAME2   # NAME1's plain rows only
    python bench/quality_vs_l1.py --paired NAME1,NAME2    # gaps beyond the noise
    python bench/quality_vs_l1.py --sk-refit ...          # + FGM's selection, l1's refit
    python bench/quality_vs_l1.py --l1-from NAME ...      # reuse NAME's l1-LR fits

``--configs`` also takes ``c=VALUE`` entries: plain FGM at
``C = VALUE / mean ||x||^2`` (the squared row norm, the rule tried first:
see ``ultrafs/methods/validation.py``),
``m=VALUE``: plain FGM at ``C = VALUE / mean_i max_j x_ij^2``, the default's
rule with VALUE in place of ``DEFAULT_C_SCALE`` (the sweep of the default's
constant), and ``refit``: the plain defaults plus the l2 refit at the same C
(``refit=True``: is a loss the weights or the selection?).  Any
configuration with the suffix ``:noint`` fits FGM without an intercept
(``fit_intercept=False``; l1-LR keeps its own), with ``:std`` on scaled
columns (``standardize=True``; l1-LR on the raw columns), with ``:poly2`` on
degree-2 features (``poly=2``; the peers stay linear, at FGM's count).
Results go to ``bench/out/NAME.json`` and a markdown table to stdout.
"""

from __future__ import annotations

import argparse
import bz2
import json
import time
import warnings

import numpy as np
import scipy.sparse as sp

from common import DATA_DIR, OUT_DIR, peak_rss_mb, write_result

TIE_POINTS = 0.1
KS = (10, 20, 50, 100, 200, 300)
# name: (train file, test file or None (then 70/30 splits), train rows or None)
SETS = {
    "imdb50k": ("imdb50k_uni_bigram", None, 25_000),
    "imdb_unigram": ("imdb_train_unigram_binary", "imdb_test_unigram_binary", None),
    "a9a": ("a9a", None, 32_561),
    "madelon": ("madelon_train", "madelon_test", None),
    "leu": ("leu", "leu.t", None),
    "w8a": ("w8a", None, None),
    "gisette": ("gisette_scale.t", None, None),
    "dexter": ("dexter_train", None, None),
    "dorothea": ("dorothea_train", None, None),
    "arcene": ("arcene_train", None, None),
    "rcv1_small": ("rcv1_small", None, None),
    "colon-cancer": ("colon-cancer", None, None),
    "mnist3v8": ("mnist5k_3vs8", None, None),
    "mushrooms": ("mushrooms", None, None),
}


def _load(stem, n_features=None):
    """A LIBSVM file of ../shared/data as CSR, cached under bench/out/cache."""
    from sklearn.datasets import load_svmlight_file

    cache = OUT_DIR / "cache" / f"{stem}.npz"
    if cache.exists():
        z = np.load(cache, allow_pickle=False)
        X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        y = z["y"]
    else:
        with bz2.open(DATA_DIR / f"{stem}.svm.bz2") as fh:
            X, y = load_svmlight_file(fh, zero_based=False)
        X = X.tocsr()
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, data=X.data, indices=X.indices, indptr=X.indptr,
                 shape=np.array(X.shape), y=y)
    if n_features is not None and X.shape[1] < n_features:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    return X, y


def splits(name, n_splits):
    """Yield (X_train, y_train, X_test, y_test) for the set's protocol."""
    from sklearn.model_selection import StratifiedShuffleSplit

    train, test, n_train = SETS[name]
    if test is not None:
        Xa, ya = _load(train)
        Xb, yb = _load(test)
        m = max(Xa.shape[1], Xb.shape[1])
        Xa = sp.csr_matrix((Xa.data, Xa.indices, Xa.indptr), shape=(Xa.shape[0], m))
        Xb = sp.csr_matrix((Xb.data, Xb.indices, Xb.indptr), shape=(Xb.shape[0], m))
        yield Xa, ya, Xb, yb
        return
    X, y = _load(train)
    if n_train is not None:
        yield X[:n_train], y[:n_train], X[n_train:], y[n_train:]
        return
    sss = StratifiedShuffleSplit(n_splits=n_splits, test_size=0.3, random_state=0)
    for tr, te in sss.split(np.zeros(len(y)), y):
        yield X[tr], y[tr], X[te], y[te]


def unit_rows(X):
    from sklearn.preprocessing import normalize

    return normalize(X, norm="l2", axis=1, copy=True)


def l1_bisect(X, y, X_test, y_test, target, cache):
    """liblinear l1-LR with the largest nonzero count <= target (C bisected)."""
    if target in cache:
        return cache[target]
    best = None
    seconds = 0.0
    fits = 0

    def fit(exponent):
        nonlocal best, seconds, fits
        started = time.perf_counter()
        # liblinear shuffles its coordinates: seeded, so that the baseline
        # is the same in every run (unseeded before 23 November)
        clf = l1_model(X, y, 10 ** exponent)
        seconds += time.perf_counter() - started
        fits += 1
        nnz = int(np.count_nonzero(clf.coef_))
        if nnz <= target and (best is None or nnz > best["nnz"]):
            best = {"nnz": nnz, "C": 10 ** exponent, "clf": clf}
        return nnz

    # bracket from below (large C is slow on badly scaled data: liblinear
    # took 70 s at C = 0.01 on raw madelon), then bisect on log10 C
    lo, hi = -5.0, None
    for exponent in np.arange(-5.0, 4.01, 1.0):
        nnz = fit(exponent)
        if nnz >= target:
            hi = exponent
            break
        lo = exponent
    if hi is not None and best is not None and best["nnz"] != target:
        for _ in range(30):
            mid = 0.5 * (lo + hi)
            nnz = fit(mid)
            if nnz > target:
                hi = mid
            else:
                lo = mid
                if nnz == target:
                    break
            if hi - lo < 1e-3:
                break
    clf = best["clf"]
    correct = clf.predict(X_test) == y_test
    out = {"nnz": best["nnz"], "C": best["C"],
           "accuracy": float(np.mean(correct)), "correct": packed(correct),
           "auc": roc_auc(y_test == clf.classes_[1], clf.decision_function(X_test)),
           "seconds_per_fit": seconds / fits, "fits": fits,
           "support": np.flatnonzero(clf.coef_.ravel())}
    out["refit_accuracy"], refit_correct = l2_refit(X, y, X_test, y_test, out["support"],
                                                    with_correct=True)
    out["refit_correct"] = packed(refit_correct)
    cache[target] = out
    return out


def roc_auc(positive, decision):
    """Test AUC of decision values (positive: bool array of the larger class)."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(np.asarray(positive, dtype=bool), np.ravel(decision)))


def l1_model(X, y, C):
    """liblinear's ℓ1-LR at ``C``, as :func:`l1_bisect` fits it (seeded: the
    same model), for results of runs that did not keep it."""
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LogisticRegression(solver="liblinear", l1_ratio=1.0, C=C, max_iter=1000,
                                  random_state=0).fit(X, y)


def complete_l1(l1, X, y, X_test, y_test, sk_refit):
    """Add to an ℓ1-LR result of an older run what it lacks: its test AUC
    and, for ``--sk-refit``, its selection's refit AUC; the model is rebuilt
    at its C (one :func:`l1_model` fit) only when the result kept no
    support or no AUC."""
    want_auc = "auc" not in l1
    want_refit = sk_refit and "refit_auc" not in l1
    clf = l1_model(X, y, l1["C"]) if want_auc or (want_refit and "support" not in l1) \
        else None
    if want_auc:
        l1["auc"] = roc_auc(y_test == clf.classes_[1], clf.decision_function(X_test))
    if want_refit:
        support = l1["support"] if "support" in l1 else np.flatnonzero(clf.coef_.ravel())
        l1["refit_auc"] = l2_refit(X, y, X_test, y_test, support, with_auc=True)[1]


def packed(correct):
    """Per-row correctness (bool array) as a hex string of its packed bits."""
    return np.packbits(np.asarray(correct, dtype=bool)).tobytes().hex()


def unpacked(hex_bits, n):
    """The bool array of :func:`packed`."""
    return np.unpackbits(np.frombuffer(bytes.fromhex(hex_bits), np.uint8))[:n].astype(bool)


def l2_refit_model(X, y, support):
    """l2-LR on the given columns, C by 5-fold CV (the refit of a selection);
    None for an empty selection."""
    from sklearn.linear_model import LogisticRegressionCV

    if len(support) == 0:
        return None
    Xs = X[:, support]
    # the same factors as ultrafs' C="auto" grid, around 100 / mean ||x_S||^2
    sq = float(np.asarray(Xs.multiply(Xs).sum()) / Xs.shape[0]) or 1.0
    Cs = [100.0 / sq * 10 ** e for e in (-1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LogisticRegressionCV(Cs=Cs, cv=5, max_iter=2000).fit(Xs, y)


def l2_refit(X, y, X_test, y_test, support, with_correct=False, with_auc=False):
    """Test accuracy of :func:`l2_refit_model`; with ``with_correct`` also the
    per-row correctness, with ``with_auc`` also the test AUC (0.5 for an
    empty selection, whose model predicts the majority class)."""
    clf = l2_refit_model(X, y, support)
    if clf is None:
        majority = np.unique(y, return_counts=True)
        correct = y_test == majority[0][np.argmax(majority[1])]
        auc = 0.5
    else:
        Xt = X_test[:, support]
        correct = clf.predict(Xt) == y_test
        auc = roc_auc(y_test == clf.classes_[1], clf.decision_function(Xt)) \
            if with_auc else None
    out = [float(np.mean(correct))]
    if with_correct:
        out.append(correct)
    if with_auc:
        out.append(auc)
    return tuple(out) if len(out) > 1 else out[0]


def budget(k):
    """``(B, T)`` of a budget of ``k`` features: B = k / 10 (at least 1), B·T = k."""
    B = max(k // 10, 1)
    return B, k // B


def fgm_fit(config, X, y, X_test, y_test, k):
    """One FGM fit of a configuration; test accuracy, nonzeros, seconds."""
    from ultrafs.api import select
    from ultrafs.store import InMemoryStore

    B, T = budget(k)
    kwargs = {}
    if config.endswith(":poly2"):
        config = config[:-len(":poly2")]
        kwargs["poly"] = 2
    if config.endswith(":std"):
        config = config[:-len(":std")]
        kwargs["standardize"] = True
    if config.endswith(":noint"):
        config = config[:-len(":noint")]
        kwargs["fit_intercept"] = False
    if config == "recommended":
        kwargs.update(C="auto", refit=True)
    elif config == "refit":
        kwargs.update(refit=True)
    elif config.startswith("c="):
        mean_sq = float(np.asarray(X.multiply(X).sum())) / X.shape[0]
        kwargs.update(C=float(config[2:]) / mean_sq)
    elif config.startswith("m="):
        mean_max = float(np.mean(abs(X).max(axis=1).toarray() ** 2))
        kwargs.update(C=float(config[2:]) / mean_max)
    elif config != "plain":
        raise ValueError(config)
    started = time.perf_counter()
    model = select(X, y, B=B, max_iter=T, **kwargs)
    seconds = time.perf_counter() - started
    # one prediction pass: the accuracy (as Model.evaluate_store counts it,
    # the mean of a bool array) and the per-row correctness
    decision = model.decision_function_store(InMemoryStore(X_test, y_test))
    correct = model.predict_from_decision(decision) == y_test
    auc = roc_auc(y_test == np.asarray(model.classes)[1], decision)
    return {"accuracy": float(np.mean(correct)), "auc": auc, "nnz": len(model.features),
            "correct": packed(correct), "support": [int(f) if np.isscalar(f) else [int(v) for v in f]
                                              for f in model.features],
            "seconds": seconds, "C": model.params["C"],
            "refit_C": model.params.get("refit_C"), "predictor": model.predictor}


def earlier_l1(names):
    """ℓ1-LR results of earlier runs, ``{(set, rows, split): {target nnz: l1}}``.

    liblinear is seeded and the bisection is a function of the target count,
    so a fit whose nonzero count an earlier run of the same split already
    matched reuses that run's ℓ1-LR result (accuracy, refit, per-row
    correctness, and its seconds per fit as measured then).
    """
    out = {}
    for name in names:
        for row in json.loads((OUT_DIR / f"{name}.json").read_text())["rows"]:
            if "l1" in row:
                key = (row["set"], row["scaling"], row["split"])
                out.setdefault(key, {})[row["fgm"]["nnz"]] = row["l1"]
    return out


def run(sets, scalings, ks, n_splits, configs, fgm_only=False, sk_refit=False,
        l1_from=None):
    rows = []
    reused = earlier_l1(l1_from or [])
    for name in sets:
        for scaling in scalings:
            for split, (X, y, Xt, yt) in enumerate(splits(name, n_splits)):
                if scaling == "unit":
                    X, Xt = unit_rows(X), unit_rows(Xt)
                usable = [k for k in ks if k <= X.shape[1] // 5]
                l1_cache = dict(reused.get((name, scaling, split), {}))
                for k in usable:
                    for config in configs:
                        fgm = fgm_fit(config, X, y, Xt, yt, k)
                        if sk_refit:      # FGM's selection, refitted as l1-LR's is
                            fgm["sk_refit_accuracy"], fgm["sk_refit_auc"] = l2_refit(
                                X, y, Xt, yt, np.array(fgm["support"], dtype=np.int64),
                                with_auc=True)
                        row = {"set": name, "scaling": scaling, "split": split, "k": k,
                               "config": config, "n_test": int(len(yt)), "fgm": fgm}
                        line = {**{x: row[x] for x in ("set", "scaling", "split", "k",
                                                        "config")},
                                "fgm": round(fgm["accuracy"], 4), "nnz": fgm["nnz"]}
                        if sk_refit:
                            line["fgm_sk_refit"] = round(fgm["sk_refit_accuracy"], 4)
                        if fgm_only:
                            line.update(C=fgm["C"], refit_C=fgm["refit_C"],
                                        s=round(fgm["seconds"], 2))
                        else:
                            l1 = l1_bisect(X, y, Xt, yt, fgm["nnz"], l1_cache)
                            complete_l1(l1, X, y, Xt, yt, sk_refit)
                            row["l1"] = {key: value for key, value in l1.items()
                                         if key != "support"}
                            line.update(l1=round(l1["accuracy"], 4), l1_nnz=l1["nnz"],
                                        l1_refit=round(l1["refit_accuracy"], 4),
                                        s=round(fgm["seconds"], 2),
                                        l1_s=round(l1["seconds_per_fit"], 3))
                        rows.append(row)
                        print(json.dumps(line), flush=True)
    return rows


def cells(rows):
    """Mean over splits per (set, scaling, k, config)."""
    groups = {}
    for row in rows:
        key = (row["set"], row["scaling"], row["k"], row["config"])
        groups.setdefault(key, []).append(row)
    out = []
    for key, group in groups.items():
        mean = lambda f: float(np.mean([f(r) for r in group]))  # noqa: E731
        out.append({"set": key[0], "scaling": key[1], "k": key[2], "config": key[3],
                    "splits": len(group),
                    "fgm": 100 * mean(lambda r: r["fgm"]["accuracy"]),
                    "nnz": mean(lambda r: r["fgm"]["nnz"]),
                    "l1": 100 * mean(lambda r: r["l1"]["accuracy"]),
                    "l1_nnz": mean(lambda r: r["l1"]["nnz"]),
                    "l1_refit": 100 * mean(lambda r: r["l1"]["refit_accuracy"]),
                    "seconds": mean(lambda r: r["fgm"]["seconds"]),
                    "l1_seconds": mean(lambda r: r["l1"]["seconds_per_fit"]),
                    "C": [r["fgm"]["C"] for r in group]})
        if all("auc" in r["fgm"] and "auc" in r["l1"] for r in group):
            out[-1]["fgm_auc"] = 100 * mean(lambda r: r["fgm"]["auc"])
            out[-1]["l1_auc"] = 100 * mean(lambda r: r["l1"]["auc"])
    return out


def auc_summary(cell_rows):
    """Accuracy or ranking?  Per set and configuration, FGM − ℓ1-LR in test
    accuracy and in test AUC (both in points, AUC × 100), and which cells
    behind in accuracy are not behind in AUC: lines of markdown."""
    lines = ["| set | config | cells | mean Δ accuracy | mean Δ AUC | cells behind in "
             "accuracy | of those, not behind in AUC | cells behind in AUC |",
             "|---|---|---|---|---|---|---|---|"]
    groups = {}
    for c in cell_rows:
        if "fgm_auc" in c:
            groups.setdefault((c["set"], c["config"]), []).append(c)
    for (name, config), group in groups.items():
        behind = [c for c in group if c["fgm"] - c["l1"] < -TIE_POINTS]
        ranked = [f"{c['scaling']} k={c['k']} ({c['fgm'] - c['l1']:+.2f}, AUC "
                  f"{c['fgm_auc'] - c['l1_auc']:+.2f})" for c in behind
                  if c["fgm_auc"] - c["l1_auc"] >= -TIE_POINTS]
        auc_behind = sum(c["fgm_auc"] - c["l1_auc"] < -TIE_POINTS for c in group)
        lines.append(
            f"| {name} | {config} | {len(group)} | "
            f"{np.mean([c['fgm'] - c['l1'] for c in group]):+.2f} | "
            f"{np.mean([c['fgm_auc'] - c['l1_auc'] for c in group]):+.2f} | "
            f"{len(behind)} | {len(ranked)} {'; '.join(ranked)} | {auc_behind} |")
    return "\n".join(lines)


def verdict(delta):
    return "win" if delta > TIE_POINTS else ("loss" if delta < -TIE_POINTS else "tie")


def markdown(cell_rows):
    lines = ["| set | rows | k | config | FGM % (nnz) | l1-LR % (nnz) | Δ | l1 refit % | Δ | "
             "s/fit FGM | s/fit l1 |", "|" + "---|" * 11]
    tally = {}
    for c in sorted(cell_rows, key=lambda c: (c["config"], c["set"], c["scaling"], c["k"])):
        d1, d2 = c["fgm"] - c["l1"], c["fgm"] - c["l1_refit"]
        for which, d in (("l1", d1), ("l1_refit", d2)):
            t = tally.setdefault((c["config"], which), {"win": 0, "tie": 0, "loss": 0})
            t[verdict(d)] += 1
        lines.append(
            f"| {c['set']} | {c['scaling']} | {c['k']} | {c['config']} | "
            f"{c['fgm']:.2f} ({c['nnz']:.0f}) | {c['l1']:.2f} ({c['l1_nnz']:.0f}) | "
            f"{d1:+.2f} | {c['l1_refit']:.2f} | {d2:+.2f} | {c['seconds']:.2f} | "
            f"{c['l1_seconds']:.3f} |")
    lines.append("")
    lines.append("| config | against | wins | ties | losses |")
    lines.append("|---|---|---|---|---|")
    for (config, which), t in sorted(tally.items()):
        lines.append(f"| {config} | {which} | {t['win']} | {t['tie']} | {t['loss']} |")
    return "\n".join(lines)


def diff(before_name, after_name):
    """Rows of two runs (e.g. ``--fgm-only`` under two versions) side by side:
    which FGM fits changed, and the mean change of accuracy per set."""
    def load(name):
        rows = json.loads((OUT_DIR / f"{name}.json").read_text())["rows"]
        return {(r["set"], r["scaling"], r["split"], r["k"], r["config"]): r["fgm"]
                for r in rows}

    def outcome(fit):
        return fit["accuracy"], fit["nnz"], fit["C"], fit["refit_C"]

    before, after = load(before_name), load(after_name)
    common = [key for key in before if key in after]
    changed = [key for key in common if outcome(before[key]) != outcome(after[key])]
    print(f"{len(common)} fits in both runs; {len(changed)} changed "
          "(accuracy, nonzeros, C or refit C)")
    print("| set | rows | split | k | config | accuracy % before → after | nnz | "
          "C, refit C before → after | s before → after |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in changed:
        b, a = before[key], after[key]
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | "
              f"{100 * b['accuracy']:.2f} → {100 * a['accuracy']:.2f} | "
              f"{b['nnz']} → {a['nnz']} | {b['C']:.3g}, {b['refit_C']} → "
              f"{a['C']:.3g}, {a['refit_C']} | {b['seconds']:.2f} → {a['seconds']:.2f} |")
    print()
    print("| set | fits | changed | mean accuracy change (points) | s/fit before → after |")
    print("|---|---|---|---|---|")
    for name in dict.fromkeys(key[0] for key in common):
        keys = [key for key in common if key[0] == name]
        delta = np.mean([after[k]["accuracy"] - before[k]["accuracy"] for k in keys])
        tb = np.mean([before[k]["seconds"] for k in keys])
        ta = np.mean([after[k]["seconds"] for k in keys])
        print(f"| {name} | {len(keys)} | {sum(k in changed for k in keys)} | "
              f"{100 * delta:+.2f} | {tb:.2f} → {ta:.2f} |")


def paired(rows, alpha=0.05):
    """Which gaps exceed the noise of the test rows: lines of markdown.

    Per cell (set, rows, k, config) and baseline (l1-LR, l1-LR refit), the
    test rows of all splits are pooled: ``b`` rows only FGM classifies
    right, ``c`` rows only the baseline does.  Under "equally accurate"
    ``b ~ Binomial(b + c, 1/2)``; the exact two-sided p-value (McNemar's
    exact test) below ``alpha`` marks a win (b > c) or a loss that the test
    rows resolve.  A gap of more than ``TIE_POINTS`` with a larger p-value
    is within the noise of that many test rows.
    """
    from mcnemar import discordant, exact_p

    groups = {}
    for row in rows:
        if "correct" not in row["fgm"] or "l1" not in row:
            continue
        key = (row["set"], row["scaling"], row["k"], row["config"])
        groups.setdefault(key, []).append(row)
    tally = {}
    resolved = []
    for key, group in groups.items():
        for which, field in (("l1", "correct"), ("l1_refit", "refit_correct")):
            b = c = rows_total = 0
            for row in group:
                n = row["n_test"]
                mine = unpacked(row["fgm"]["correct"], n)
                theirs = unpacked(row["l1"][field], n)
                row_b, row_c = discordant(mine, theirs)
                b, c, rows_total = b + row_b, c + row_c, rows_total + n
            delta = 100.0 * (b - c) / rows_total
            p = exact_p(b, c)
            t = tally.setdefault((key[0], key[3], which), {
                "cells": 0, "win": 0, "loss": 0, "win_resolved": 0, "loss_resolved": 0})
            t["cells"] += 1
            outcome = verdict(delta)
            if outcome != "tie":
                t[outcome] += 1
                if p < alpha:
                    t[outcome + "_resolved"] += 1
                    resolved.append((key, which, outcome, delta, b, c, p, rows_total))
    lines = [f"| set | config | against | cells | wins (p < {alpha}) | "
             f"losses (p < {alpha}) |", "|---|---|---|---|---|---|"]
    totals = {}
    for (name, config, which), t in tally.items():
        lines.append(f"| {name} | {config} | {which} | {t['cells']} | "
                     f"{t['win']} ({t['win_resolved']}) | {t['loss']} ({t['loss_resolved']}) |")
        total = totals.setdefault((config, which), dict.fromkeys(t, 0))
        for field, value in t.items():
            total[field] += value
    for (config, which), t in sorted(totals.items()):
        lines.append(f"| all | {config} | {which} | {t['cells']} | "
                     f"{t['win']} ({t['win_resolved']}) | {t['loss']} ({t['loss_resolved']}) |")
    lines += ["", "Gaps the test rows resolve (p < alpha): b rows only FGM right, "
              "c only the baseline", "",
              "| set | rows | k | config | against | Δ points | b | c | p | test rows |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for key, which, outcome, delta, b, c, p, total in sorted(
            resolved, key=lambda r: (r[2], r[0], r[1])):
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {which} | "
                     f"{delta:+.2f} | {b} | {c} | {p:.2g} | {total} |")
    return "\n".join(lines)


def criteria(cell_rows):
    """The issue's acceptance criteria, per dataset: lines of markdown."""
    lines = ["| set | recommended − l1 (mean, points) | cells recommended < l1 | "
             "cells recommended < l1 refit | cells plain < l1 − 1 | "
             "s/fit recommended / plain / l1 |", "|---|---|---|---|---|---|"]
    by_set = {}
    for c in cell_rows:
        by_set.setdefault(c["set"], {}).setdefault(c["config"], []).append(c)
    for name, configs in by_set.items():
        rec = configs.get("recommended", [])
        plain = configs.get("plain", [])
        mean = np.mean([c["fgm"] - c["l1"] for c in rec]) if rec else float("nan")
        below = [f"{c['scaling']} k={c['k']} ({c['fgm'] - c['l1']:+.2f})" for c in rec
                 if c["fgm"] - c["l1"] < -TIE_POINTS]
        below_refit = [f"{c['scaling']} k={c['k']} ({c['fgm'] - c['l1_refit']:+.2f})"
                       for c in rec if c["fgm"] - c["l1_refit"] < -TIE_POINTS]
        plain_bad = [f"{c['scaling']} k={c['k']} ({c['fgm'] - c['l1']:+.2f})" for c in plain
                     if c["fgm"] - c["l1"] < -1.0]
        seconds = "/".join(f"{np.mean([c[key] for c in group]):.2f}" if group else "-"
                           for group, key in ((rec, "seconds"), (plain, "seconds"),
                                              (rec or plain, "l1_seconds")))
        lines.append(f"| {name} | {mean:+.2f} | {len(below)}/{len(rec)} "
                     f"{'; '.join(below)} | {len(below_refit)}/{len(rec)} | "
                     f"{len(plain_bad)}/{len(plain)} {'; '.join(plain_bad)} | {seconds} |")
    return "\n".join(lines)


def grid_arguments(parser):
    """The runs' grid, shared with quality_baselines.py: sets, row scalings,
    budgets k and splits."""
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--scalings", default="raw,unit")
    parser.add_argument("--ks", default=",".join(map(str, KS)))
    parser.add_argument("--splits", type=int, default=5)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    grid_arguments(parser)
    parser.add_argument("--configs", default="plain,recommended")
    parser.add_argument("--name", default="quality_vs_l1")
    parser.add_argument("--fgm-only", action="store_true",
                        help="Run FGM only (no l1-LR): to compare versions with --diff.")
    parser.add_argument("--diff", default=None,
                        help="BEFORE,AFTER result names: the FGM fits that changed.")
    parser.add_argument("--combine", default=None,
                        help="Comma-separated result names under bench/out: print "
                             "their joint table and criteria instead of running.")
    parser.add_argument("--sk-refit", action="store_true",
                        help="Also refit FGM's selection with l1-LR's refitter "
                             "(l2_refit): selection or refit?  Prints its cells, "
                             "accuracy and AUC, next to l1-LR's and its refit's.")
    parser.add_argument("--l1-from", default=None,
                        help="Comma-separated result names: reuse their l1-LR results "
                             "for fits of the same split and nonzero count.")
    parser.add_argument("--paired", default=None,
                        help="Comma-separated result names: which gaps the test rows "
                             "resolve (exact McNemar over the pooled splits).")
    args = parser.parse_args(argv)
    if args.diff:
        diff(*args.diff.split(","))
        return
    if args.combine or args.paired:
        rows = []
        for name in (args.combine or args.paired).split(","):
            # NAME:CONFIG takes one configuration's rows of a run
            name, _, config = name.partition(":")
            rows += [r for r in json.loads((OUT_DIR / f"{name}.json").read_text())["rows"]
                     if not config or r["config"] == config]
        if args.paired:
            print(paired(rows))
            return
        cell_rows = cells(rows)
        print(markdown(cell_rows))
        print()
        print(criteria(cell_rows))
        if any("fgm_auc" in c for c in cell_rows):
            print()
            print(auc_summary(cell_rows))
        return
    started = time.perf_counter()
    rows = run(args.sets.split(","), args.scalings.split(","),
               [int(k) for k in args.ks.split(",")], args.splits,
               args.configs.split(","), fgm_only=args.fgm_only,
               sk_refit=args.sk_refit,
               l1_from=args.l1_from.split(",") if args.l1_from else None)
    if args.sk_refit and not args.fgm_only:
        print("| set | rows | k | config | FGM % | FGM's selection, l1's refit % | "
              "l1-LR % | l1-LR refit % | AUC × 100: FGM | FGM's selection, l1's refit | "
              "l1-LR | l1-LR refit |")
        print("|" + "---|" * 12)
        for c in cells(rows):
            group = [r for r in rows if (r["set"], r["scaling"], r["k"], r["config"])
                     == (c["set"], c["scaling"], c["k"], c["config"])]
            mean = lambda f: 100 * np.mean([f(r) for r in group])  # noqa: E731
            print(f"| {c['set']} | {c['scaling']} | {c['k']} | {c['config']} | "
                  f"{c['fgm']:.2f} | {mean(lambda r: r['fgm']['sk_refit_accuracy']):.2f} | "
                  f"{c['l1']:.2f} | {c['l1_refit']:.2f} | {c['fgm_auc']:.2f} | "
                  f"{mean(lambda r: r['fgm']['sk_refit_auc']):.2f} | {c['l1_auc']:.2f} | "
                  f"{mean(lambda r: r['l1']['refit_auc']):.2f} |")
    if args.fgm_only:
        write_result(args.name, {"rows": rows, "fgm_only": True,
                                 "seconds": time.perf_counter() - started,
                                 "peak_rss_mb": peak_rss_mb()})
        return
    cell_rows = cells(rows)
    table = markdown(cell_rows)
    print(table)
    print()
    print(criteria(cell_rows))
    print()
    print(auc_summary(cell_rows))
    write_result(args.name, {"rows": rows, "cells": cell_rows, "table": table,
                             "seconds": time.perf_counter() - started,
                             "peak_rss_mb": peak_rss_mb(), "tie_points": TIE_POINTS})


if __name__ == "__main__":
    main()
