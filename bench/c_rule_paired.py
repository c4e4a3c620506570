"""Paired judgement of FGM's two C rules (bench note 23): the former row rule
(``max``: ``10 / mean_i max_j x_ij²``) against the column rule now behind
``C="scale"`` (``nz``), on the same splits, pooled test rows, exact McNemar.

    cd bench && python c_rule_paired.py --sets arcene,dexter --splits 5

Prints one line per set and scaling: mean test accuracy of each rule, the
discordant rows (b: only the column rule right, c: only the row rule right)
and the two-sided p-value.
"""

from __future__ import annotations

import argparse

import numpy as np
from c_rule import rule_C
from mcnemar import mcnemar
from quality_vs_l1 import splits, unit_rows


def correct(X, y, X_test, y_test, C):
    """FGM at the project's defaults with C given: which test rows it gets right."""
    from ultrafs.api import select
    from ultrafs.store import InMemoryStore

    model = select(X, y, C=C)
    store = InMemoryStore(X_test, y_test)
    predicted = model.decision_function_store(store) > 0
    return predicted == (model.class_index_of_store(store) == 1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="arcene")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--scalings", default="raw,unit")
    args = parser.parse_args(argv)
    for name in args.sets.split(","):
        for scaling in args.scalings.split(","):
            right = {"max": [], "nz": []}
            for X, y, X_test, y_test in splits(name, args.splits):
                if scaling == "unit":
                    X, X_test = unit_rows(X), unit_rows(X_test)
                for rule, rows in right.items():
                    rows.append(correct(X, y, X_test, y_test, rule_C(X, rule)))
            old, new = (np.concatenate(right[r]) for r in ("max", "nz"))
            b, c, p = mcnemar(new, old)
            print(f"{name} {scaling}: row rule {100 * old.mean():.2f}%, column rule "
                  f"{100 * new.mean():.2f}% over {old.size} pooled test rows; b = {b}, "
                  f"c = {c}, p = {p:.3g}", flush=True)


if __name__ == "__main__":
    main()
