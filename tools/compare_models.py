"""Compare two ultrafs model files: same features, same coefficients?

Usage::

    python tools/compare_models.py BEFORE.json AFTER.json [...pairs]

Prints, for each pair, whether the selected ids are identical (in order),
whether coefficients and intercepts are bit-identical, and otherwise the
largest coefficient difference relative to the largest coefficient.  Exits
1 when the ids of any pair differ.  Used to check that refactors leave
models unchanged (see bench/README.md).
"""

from __future__ import annotations

import json
import sys

import numpy as np


def compare(before, after):
    a, b = (json.load(open(path)) for path in (before, after))
    same_ids = a["features"] == b["features"]
    line = {"ids_identical": same_ids,
            "coef_bit_identical": a["coef"] == b["coef"],
            "intercept_bit_identical": a["intercept"] == b["intercept"],
            "n_features": len(b["features"])}
    if same_ids:
        ca, cb = np.asarray(a["coef"], float), np.asarray(b["coef"], float)
        scale = max(float(np.max(np.abs(ca))) if ca.size else 0.0, 1e-300)
        line["max_relative_coef_diff"] = float(np.max(np.abs(ca - cb))) / scale \
            if ca.size else 0.0
    return line


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    ok = True
    for before, after in zip(argv[::2], argv[1::2]):
        result = compare(before, after)
        ok &= result["ids_identical"]
        print(f"{after}: {json.dumps(result)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
