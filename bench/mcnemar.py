"""Exact McNemar test of two classifiers on the same test rows.

``b`` rows only the first model classifies right, ``c`` rows only the
second; under "equally accurate" ``b ~ Binomial(b + c, 1/2)``, and the
two-sided exact p-value is scipy's binomial test on the discordant pairs.
"""

from __future__ import annotations

import numpy as np


def discordant(mine, theirs):
    """``(b, c)``: rows (bool arrays (n,)) only ``mine`` right, only ``theirs`` right."""
    mine = np.asarray(mine, dtype=bool)
    theirs = np.asarray(theirs, dtype=bool)
    return int(np.count_nonzero(mine & ~theirs)), int(np.count_nonzero(~mine & theirs))


def exact_p(b, c):
    """Two-sided exact McNemar p-value of ``b`` against ``c`` discordant rows
    (1.0 when there are none)."""
    from scipy.stats import binomtest

    return float(binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0


def mcnemar(mine, theirs):
    """``(b, c, p)`` of two per-row correctness arrays (n,) (pool the
    splits of a set by concatenating them first)."""
    b, c = discordant(mine, theirs)
    return b, c, exact_p(b, c)
