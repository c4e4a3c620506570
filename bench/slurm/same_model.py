"""Are two ultrafs model files the same model, bit for bit?

Usage::

    python bench/slurm/same_model.py REFERENCE.json OTHER.json

Prints one JSON line (which fields are identical, the number of features,
the largest coefficient difference when the ids agree) and exits 0 only when
the selected features, their batches, the coefficients and the intercept are
identical: the model files hold floats as ``repr``, so equal JSON values are
equal doubles.
"""

from __future__ import annotations

import json
import sys

FIELDS = ("features", "batches", "coef", "intercept")


def _flat(value):
    """The numbers of a coefficient list, nested (K classes) or not."""
    if isinstance(value, list):
        return [x for item in value for x in _flat(item)]
    return [value]


def compare(reference, other):
    """The comparison line of two parsed model files."""
    line = {f"{name}_identical": reference.get(name) == other.get(name) for name in FIELDS}
    line["n_features"] = [len(reference["features"]), len(other["features"])]
    if line["features_identical"]:
        pairs = zip(_flat(reference["coef"]), _flat(other["coef"]))
        line["max_abs_coef_diff"] = max((abs(a - b) for a, b in pairs), default=0.0)
    line["identical"] = all(line[f"{name}_identical"] for name in FIELDS)
    return line


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    with open(argv[0]) as a, open(argv[1]) as b:
        line = compare(json.load(a), json.load(b))
    print(json.dumps({"reference": argv[0], "other": argv[1], **line}))
    return 0 if line["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
