"""FGM's default C rule: which statistic of the data should ``C="scale"`` divide by?

Question (issue 38, item 1): the rule of issue 8, ``C = 10 / mean_i max_j
x_ij²``, collapses when one column is unscaled (that column owns every
row's maximum).  Which rule keeps FGM's accuracy on the binary sets of
``../shared/data`` (raw and with unit-length rows), and does not collapse
on the unscaled-column example and on raw madelon with degree-2 features?

Rules (each ``C = 10 / s``, computed here in NumPy from the training rows,
and passed to FGM as a number):

* ``max``: ``s = mean_i max_j x_ij²`` (the rule of issue 8, the centre of
  ``C="auto"``'s grid);
* ``nz``: ``s = median_j (Σ_i x_ij² / nnz_j)``, the median over the nonzero
  columns of the mean square of a column's nonzero values (0/1 data: 1);
* ``q75``: ``nz`` with the 75th percentile in place of the median (the
  columns FGM selects are the larger ones);
* ``var``: ``s = median_j (Σ_i (x_ij − x̄_j)² / nnz_j)``, the same with the
  column's spread around its mean (0/1 data: 1 − density);

degree 2 (``poly=2``, ``γ``, ``r``): the largest degree-2 feature of a
typical row whose two largest values are ``t = s`` each, as the ``max``
rule's degree-2 form: ``s₂ = max(2γr·t, γ²t², 2γ²t²)``.  ``scale`` is the
library's own ``C="scale"`` (whatever rule the code under test has) and
``auto`` is ``C="auto"`` (the reference: held-out rows choose C on a grid
around the ``max`` rule's C); ``auto-nz`` is ``C="auto"`` with its grid
around the ``nz`` rule's C instead.

Protocol: the splits of ``bench/quality_vs_l1.py`` (its loaders): the
sets' own train/test parts, else its seeded stratified 70/30 splits, the
first ``--splits`` of them (default 1); FGM at the project's defaults (B = 50, T = 10) otherwise.
The unscaled-column example: ``X = rng.random((100, 8)); y = X[:, 0] > .5;
X[:, 7] *= F`` (F = 100 and 1e4), ``B=2, max_iter=3``, training accuracy,
seeds 0-4.

Usage::

    python bench/c_rule.py [--sets a9a,mushrooms] [--scalings raw,unit] [--splits 5]
        [--rules max,nz,var,scale,auto] [--no-auto-over ROWS_X_COLS]
        [--skip-toy] [--skip-madelon2] [--skip-sets] [--name c_rule]
    python bench/c_rule.py --report NAME1,NAME2 [--rules ...]   # the tables

Results go to ``bench/out/NAME.json`` and a markdown table to stdout.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp
from common import write_result
from quality_vs_l1 import SETS, splits, unit_rows

SCALE = 10.0
RULES = ("max", "nz", "var", "scale", "auto", "auto-nz")
#: sets left out by default: one fit takes minutes on the shared 2-core machine
SLOW_SETS = ("imdb50k",)


def rule_statistic(X, rule):
    """The ``s`` of a rule (see the module docstring) of CSR/CSC ``X``."""
    X = sp.csc_matrix(X, dtype=np.float64)
    n = X.shape[0]
    if rule == "max":
        if n == 0:
            return 0.0
        return float(np.mean(abs(X).max(axis=1).toarray().ravel() ** 2))
    nnz = np.diff(X.indptr)
    s2 = np.asarray(X.multiply(X).sum(axis=0)).ravel()
    live = nnz > 0
    if rule == "nz":
        per = s2[live] / nnz[live]
    elif rule == "q75":
        per = s2[live] / nnz[live]
        per = per[per > 0]
        return float(np.quantile(per, 0.75)) if len(per) else 0.0
    elif rule == "var":
        s1 = np.asarray(X.sum(axis=0)).ravel()
        per = (s2[live] - s1[live] ** 2 / n) / nnz[live]
    else:
        raise ValueError(rule)
    per = per[per > 0]
    return float(np.median(per)) if len(per) else 0.0


def rule_C(X, rule, poly=1, gamma=1.0, coef0=1.0):
    """``10 / s`` of ``rule`` (degree 2: of ``s₂``); 10 when ``s`` is 0."""
    t = rule_statistic(X, rule)
    if poly == 2:
        if rule == "max":   # the library's degree-2 form needs each row's top two
            t = row_poly_max(X, gamma, coef0)
        else:
            t = max(2 * gamma * coef0 * t, gamma ** 2 * t * t, 2 * gamma ** 2 * t * t)
    return SCALE / t if t > 0 else SCALE


def row_poly_max(X, gamma, coef0):
    """``mean_i max_f φ_f(x_i)²`` of the degree-2 map (the ``max`` rule)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    out = np.zeros(X.shape[0])
    for i in range(X.shape[0]):
        v = np.sort(X.data[X.indptr[i]:X.indptr[i + 1]] ** 2)[::-1]
        a = v[0] if len(v) else 0.0
        b = v[1] if len(v) > 1 else 0.0
        out[i] = max(2 * gamma * coef0 * a, gamma * gamma * a * a, 2 * gamma * gamma * a * b)
    return float(np.mean(out))


class auto_centre:
    """For ``auto-nz``: ``C="auto"`` with its grid around ``C="scale"``'s
    column rule instead of the row-maximum rule (the library's
    ``validation.default_C`` replaced while the fit runs)."""

    def __init__(self, rule):
        self.rule = rule

    def __enter__(self):
        from ultrafs.methods import validation
        from ultrafs.methods.c_scale import scale_C

        self.saved = validation.default_C
        if self.rule == "auto-nz":
            validation.default_C = lambda features, sample_weight=None, **passes: \
                scale_C(features, sample_weight=sample_weight, **passes)

    def __exit__(self, *exc):
        from ultrafs.methods import validation

        validation.default_C = self.saved


def fit(X, y, X_test, y_test, rule, **kwargs):
    """One FGM fit at ``rule``'s C; test accuracy, C, features, seconds."""
    from ultrafs.api import select
    from ultrafs.store import InMemoryStore

    C = rule if rule in ("scale", "auto") else "auto" if rule == "auto-nz" else rule_C(
        X, rule, poly=kwargs.get("poly", 1))
    started = time.perf_counter()
    with auto_centre(rule):
        model = select(X, y, C=C, **kwargs)
    seconds = time.perf_counter() - started
    accuracy = (model.evaluate_store(InMemoryStore(X_test, y_test))["accuracy"]
                if X_test is not None else None)
    return {"rule": rule, "C": float(model.params["C"]), "accuracy": accuracy,
            "nnz": len(model.features), "seconds": seconds}


def toy(rules, factors=(100.0, 1e4), seeds=range(5)):
    """Training accuracy on the unscaled-column example."""
    from ultrafs.sklearn import FGMClassifier

    rows = []
    for factor in factors:
        for seed in seeds:
            rng = np.random.default_rng(seed)
            X = rng.random((100, 8))
            y = X[:, 0] > .5
            X[:, 7] *= factor
            for rule in rules:
                C = rule if rule in ("scale", "auto") else "auto" if rule == "auto-nz" \
                    else rule_C(X, rule)
                with auto_centre(rule):
                    est = FGMClassifier(B=2, max_iter=3, C=C).fit(X, y)
                rows.append({"factor": factor, "seed": seed, "rule": rule,
                             "C": float(est.model_.params["C"]),
                             "accuracy": float(est.score(X, y)),
                             "zero_weights": int(np.sum(est.selection_coef_.ravel() == 0))})
    return rows


def _cell(row):
    if row is None:
        return "–"
    splits = f" ({row['n']} splits)" if row.get("n", 1) > 1 else ""
    return f"{row['accuracy']:.3f}{splits} · C {row['C']:.3g} · {row['seconds']:.1f} s"


def report(names, rules):
    """The markdown tables of the runs ``names`` (bench/out/NAME.json)."""
    import json

    from common import OUT_DIR

    toy_rows, set_rows, m2_rows = [], [], []
    for name in names:
        data = json.loads((OUT_DIR / f"{name}.json").read_text())
        toy_rows += data.get("toy", [])
        set_rows += data.get("sets", [])
        m2_rows += data.get("madelon2", [])
    lines = []
    if toy_rows:
        lines += ["Unscaled-column example (training accuracy over seeds 0-4; C; "
                  "selected features with a zero weight):", "",
                  "| column × | rule | accuracy per seed | C per seed | zero weights |",
                  "|---|---|---|---|---|"]
        for factor in sorted({r["factor"] for r in toy_rows}):
            for rule in rules:
                rows = [r for r in toy_rows if r["factor"] == factor and r["rule"] == rule]
                if rows:
                    lines.append(
                        f"| {factor:g} | {rule} | "
                        + " ".join(f"{r['accuracy']:.2f}" for r in rows) + " | "
                        + " ".join(f"{r['C']:.3g}" for r in rows) + " | "
                        + str(sum(r["zero_weights"] for r in rows)) + " |")
        lines.append("")
    if m2_rows:
        lines += ["Raw madelon, `poly=2` (test accuracy · C · fit seconds):", "",
                  "| " + " | ".join(r["rule"] for r in m2_rows) + " |",
                  "|" + "---|" * len(m2_rows),
                  "| " + " | ".join(_cell(r) for r in m2_rows) + " |", ""]
    if set_rows:
        present = [rule for rule in rules if any(r["rule"] == rule for r in set_rows)]
        lines += ["Test accuracy (mean over the splits run) · chosen C (first split) · "
                  "fit seconds (mean):", "",
                  "| set | rows | " + " | ".join(present) + " |",
                  "|---|---|" + "---|" * len(present)]
        keys = []
        for r in set_rows:
            if (r["set"], r["scaling"]) not in keys:
                keys.append((r["set"], r["scaling"]))
        def by_rule_of(key):
            out = {}
            for rule in present:
                rows = [r for r in set_rows if (r["set"], r["scaling"]) == key
                        and r["rule"] == rule]
                if rows:
                    out[rule] = {"accuracy": float(np.mean([r["accuracy"] for r in rows])),
                                 "C": rows[0]["C"], "n": len(rows),
                                 "seconds": float(np.mean([r["seconds"] for r in rows]))}
            return out

        for key in keys:
            by_rule = by_rule_of(key)
            lines.append(f"| {key[0]} | {key[1]} | "
                         + " | ".join(_cell(by_rule.get(rule)) for rule in present) + " |")
        wins = {rule: 0 for rule in present}
        for key in keys:
            by_rule = by_rule_of(key)
            for rule in present:
                if rule in by_rule and "max" in by_rule and rule != "max":
                    delta = by_rule[rule]["accuracy"] - by_rule["max"]["accuracy"]
                    wins[rule] += delta
        lines += ["", "Sum over cells of the accuracy difference to `max`: "
                  + ", ".join(f"{rule} {100 * d:+.1f} points" for rule, d in wins.items()
                              if rule != "max"), ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default=",".join(s for s in SETS if s not in SLOW_SETS))
    parser.add_argument("--scalings", default="raw,unit")
    parser.add_argument("--rules", default=",".join(RULES))
    parser.add_argument("--no-auto-over", type=float, default=5e6,
                        help="skip C='auto' on training parts with more stored entries")
    parser.add_argument("--splits", type=int, default=1,
                        help="70/30 splits of the sets without their own test part")
    parser.add_argument("--skip-toy", action="store_true")
    parser.add_argument("--skip-madelon2", action="store_true")
    parser.add_argument("--skip-sets", action="store_true")
    parser.add_argument("--name", default="c_rule")
    parser.add_argument("--report", default=None,
                        help="NAME1,NAME2: print the tables of earlier runs and stop")
    args = parser.parse_args(argv)
    rules = args.rules.split(",")
    if args.report:
        print(report(args.report.split(","), rules))
        return
    result = {"toy": [], "sets": [], "madelon2": []}
    if not args.skip_toy:
        result["toy"] = toy(rules)
        for row in result["toy"]:
            print("toy", row, flush=True)
    if not args.skip_madelon2:
        X, y, X_test, y_test = next(splits("madelon", 1))
        for rule in rules:
            row = fit(X, y, X_test, y_test, rule, poly=2)
            result["madelon2"].append(row)
            print("madelon2", row, flush=True)
            write_result(args.name, result)
    if not args.skip_sets:
        for name in args.sets.split(","):
          for split, (X, y, X_test, y_test) in enumerate(splits(name, args.splits)):
            for scaling in args.scalings.split(","):
                Xs, Xt = (X, X_test) if scaling == "raw" else (unit_rows(X), unit_rows(X_test))
                for rule in rules:
                    if rule.startswith("auto") and Xs.nnz > args.no_auto_over:
                        continue
                    row = {"set": name, "scaling": scaling, "split": split,
                           **fit(Xs, y, Xt, y_test, rule)}
                    result["sets"].append(row)
                    print("set", row, flush=True)
                    write_result(args.name, result)
    write_result(args.name, result)


if __name__ == "__main__":
    main()
