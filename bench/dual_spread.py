"""How spread FGM's dual weights are at the default C and at a smaller one.

Question (issue 8, the gisette cells of the plain defaults): does the
default C let the model fit the training rows so closely that the
worst-case analysis of later batches is led by a few rows?  For the first
seeded 70/30 split of a set (``quality_vs_l1.splits``), plain FGM with
B = k / 10 and T = 10 at the default ``C="scale"`` and at ``C / 10**1.5``
(what ``C="auto"`` picks in most gisette cells): training and test
accuracy, and the effective number of rows of the logistic dual weights
``a_i = 1 / (1 + exp(y_i f_i))`` of the final model, ``(sum a)^2 / sum a^2``
(all rows equal: n; one row: 1).

Usage::

    cd bench && python dual_spread.py [--set gisette] [--ks 20,50,100]
"""

from __future__ import annotations

import argparse

import numpy as np

import quality_vs_l1 as q


def main(argv=None):
    from ultrafs.api import select
    from ultrafs.features.linear import LinearFeatures
    from ultrafs.methods.validation import default_C
    from ultrafs.store import InMemoryStore

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", default="gisette", choices=sorted(q.SETS))
    parser.add_argument("--ks", default="20,50,100")
    args = parser.parse_args(argv)
    X, y, Xt, yt = next(q.splits(args.set, 5))
    train, test = InMemoryStore(X, y), InMemoryStore(Xt, yt)
    default = default_C(LinearFeatures(train))  # what C="scale" fits with
    for factor in (1.0, 10 ** -1.5):
        for k in (int(k) for k in args.ks.split(",")):
            B, T = q.budget(k)
            model = select(X, y, B=B, max_iter=T, C=default * factor)
            f = np.asarray(model.decision_function_store(train), dtype=np.float64).ravel()
            a = 1.0 / (1.0 + np.exp(y * f))
            spread = a.sum() ** 2 / (a ** 2).sum()
            print(f"C = {default * factor:.3g} k = {k}: training accuracy "
                  f"{np.mean(np.where(f > 0, 1, -1) == y):.3f}, test "
                  f"{model.evaluate_store(test)['accuracy']:.3f}, dual weights "
                  f"spread over {spread:.0f} of {len(y)} rows", flush=True)


if __name__ == "__main__":
    main()
