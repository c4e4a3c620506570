"""What C='auto' (with the refit) costs against one plain fit, on small sets.

For each set (first seeded 70/30 split of ``quality_vs_l1.py``'s protocol)
and budget k (B = k/10, T = 10): the best of 3 plain fits (``C='scale'``)
against one ``select(C='auto', refit=True)`` (5 folds: every set here has
at most 10,000 training rows), with the C and refit C chosen.
``python c_auto_cost.py``
"""

from __future__ import annotations

import time

from common import write_result
import quality_vs_l1 as protocol

CASES = [("dexter", 50), ("colon-cancer", 20), ("gisette", 50), ("rcv1_small", 50)]


def main():
    from ultrafs.api import select

    rows = []
    for name, k in CASES:
        X, y, _, _ = next(protocol.splits(name, 5))
        B, T = protocol.budget(k)
        select(X, y, B=B, max_iter=T)                     # compile, warm caches
        plain = []
        for _ in range(3):
            started = time.perf_counter()
            select(X, y, B=B, max_iter=T)
            plain.append(time.perf_counter() - started)
        started = time.perf_counter()
        model = select(X, y, B=B, max_iter=T, C="auto", refit=True)
        auto = time.perf_counter() - started
        row = {"set": name, "k": k, "plain_s": min(plain), "auto_refit_s": auto,
               "ratio": auto / min(plain), "C": model.params["C"],
               "refit_C": model.params.get("refit_C"), "n_features": len(model.features)}
        rows.append(row)
        print(f"{name} k={k}: plain {row['plain_s']:.3f} s, C='auto' + refit "
              f"{auto:.2f} s (x{row['ratio']:.0f}); C {row['C']:.4g}, refit C "
              f"{row['refit_C']:.4g}, {row['n_features']} features", flush=True)
    write_result("c_auto_cost", {"rows": rows})


if __name__ == "__main__":
    main()
