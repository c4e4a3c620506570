"""The ℓ1 path's screening step at one λ: the keep-mask of the rule in use
(Slores, basic or sequential, the strong rule, or none) and the cut the
next sequential Slores region is built from.  Split from
:mod:`ultrafs.methods.l1_path`, which calls both once per λ."""

from __future__ import annotations

import numpy as np

from ultrafs.kernels.slores import stale_kept
from ultrafs.methods.l1_weights import weighted_cut
from ultrafs.methods.slores import (basic_region, centred_column, sequential_region,
                                    slores_keep)
from ultrafs.methods.strong_rule import strong_keep

__all__ = ["screen_keep", "next_cut"]


def screen_keep(screening, sequential, stats, lam, y, prev):
    """The keep-mask of the rule at ``lam`` (a fresh, writable array)."""
    p = stats.n_features
    if screening == "none":
        return np.ones(p, dtype=bool)
    if screening == "strong":
        if sequential and prev["s"] is not None:
            correlations = prev["s"]
            if prev.get("upper") is not None:   # stale columns: their upper bound
                correlations = prev["upper"]()
            keep = strong_keep(correlations, lam, prev["lam"], stats.n_samples,
                               stats.constant)
            if prev.get("upper") is not None:   # kept on a bound: read, test again
                again = stale_kept(keep, *prev["stale"][::2])
                prev["refresh"](again)
                keep[again] = strong_keep(prev["s"][again], lam, prev["lam"],
                                          stats.n_samples, stats.constant[again])
        else:
            keep = strong_keep(stats.s_max, lam, stats.lambda_max, stats.n_samples,
                               stats.constant)
        keep[stats.j0] = True
        return keep
    basic = basic_region(stats, lam)
    if sequential and prev["lam"] < stats.lambda_max and prev["s"] is not None:
        cut = prev["cut"] or {}
        region = sequential_region(stats, lam, decision=prev["decision"], y=y,
                                   coef_l1=prev["coef_l1"], s0=prev["s"],
                                   s0_largest=prev.get("s_largest"),
                                   stale=prev.get("stale"), **cut)
        # both rules are safe: the basic one is tested on the (usually far
        # smaller) keep set of the sequential one, and the intersection kept
        keep = slores_keep(stats, region, lam)
        if region.stale is not None and prev.get("refresh") is not None \
                and region.s0 is prev["s"] and region.stale[0] is prev["stale"][0] \
                and (prev["cut"] is None or region.cut is prev["cut"]["cut"]):
            # the stale columns the bound kept: read them at θ0 (fresh s_j and
            # B_j, in the region's own arrays) and test them again exactly
            again = stale_kept(keep, region.stale[0], region.stale[2])
            if again.size:
                prev["refresh"](again)
                keep[again] = slores_keep(stats, region, lam, columns=again)[again]
        return slores_keep(stats, basic, lam, candidates=keep)
    return slores_keep(stats, basic, lam)


def next_cut(cache, columns, positions, coef, n, sample_weight=None):
    """The weights of the next cut (the centred column of the largest weight)
    and its description, or (None, None) without a usable column."""
    active = np.flatnonzero(coef)
    if not active.size:
        return None, None
    best = active[np.argmax(np.abs(coef[active]))]
    rows, values = cache.dense_column(positions[best])
    sign = 1.0 if coef[best] > 0 else -1.0
    if sample_weight is not None:
        cut_weights, cut_norm2, norm = weighted_cut(values, rows, n, sign, sample_weight)
        if cut_norm2 <= 0:
            return None, None
        return cut_weights, {"cut_norm2": cut_norm2, "j0": int(columns[best]),
                             "j0_sign": sign, "cut_weights_norm": norm}
    cut_weights = centred_column(values, rows, n, sign)
    cut_norm2 = float(np.sum(cut_weights * cut_weights))
    if cut_norm2 <= 0:
        return None, None
    return cut_weights, {"cut_norm2": cut_norm2, "j0": int(columns[best]),
                         "j0_sign": sign}
