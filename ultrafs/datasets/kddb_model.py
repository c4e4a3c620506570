"""The generative model of kddb-like data: Zipf columns, planted model, rows, labels.

:class:`ZipfColumns` draws column ranks with Zipf probabilities and
estimates their expected row frequencies; :func:`plant_model` plants the
sparse linear and cross model; :func:`sample_row_sets` and
:func:`generate_chunk` draw the rows of a chunk (injecting the planted
pairs' co-occurrence); :func:`balanced_threshold` cuts the scores into
labels. The model and its reproducibility are described in
:mod:`ultrafs.datasets.kddb_like`, which streams these chunks into stores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ultrafs.kernels.sampling import guide_table, search_right, sort_grouped

__all__ = ["ZipfColumns", "PlantedModel", "plant_model", "sample_row_sets", "RowChunk",
           "generate_chunk", "balanced_threshold", "DEFAULT_MIN_COOCCURRENCE",
           "DEFAULT_NOISE"]

#: default target share of rows holding both members of a planted pair
DEFAULT_MIN_COOCCURRENCE = 0.01
#: default standard deviation of the Gaussian noise added to the scores
DEFAULT_NOISE = 0.1
#: most buckets of the guide table that draws ranks (16 MB)
GUIDE_BUCKETS = 1 << 22
#: rounds of redrawing duplicated ranks before drawing among absent ranks
REDRAW_ROUNDS = 8
#: extra steps of drawing among absent ranks (rounding may waste a step)
EXACT_RETRIES = 8
#: smallest expected row frequency of a planted linear feature
LINEAR_MIN_FREQUENCY = 0.005
#: expected row frequency window of the members of planted pairs
CROSS_MIN_FREQUENCY = 0.02
CROSS_MAX_FREQUENCY = 0.5
#: magnitudes of planted weights are uniform in this interval
WEIGHT_RANGE = (1.0, 2.0)
#: accepted share of rows below the threshold (balance of the classes)
BALANCE_WINDOW = (0.4, 0.6)
#: extra imbalance accepted to keep the threshold away from an atom covering the window
ATOM_SLACK = 0.05


# --------------------------------------------------------------------------
# columns
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class ZipfColumns:
    """The Zipf distribution of column ranks and the rank → column map.

    Attributes
    ----------
    cdf : ndarray of float64, shape (n_features,)
        Cumulative (unnormalised) weights ``Σ_{r' <= r} (r' + 1) ** -s``.
    column_of_rank : ndarray of int32, shape (n_features,)
        Column number of each rank.
    guide, step
        The guide table of ``cdf`` (:func:`ultrafs.kernels.sampling.guide_table`,
        at most :data:`GUIDE_BUCKETS` buckets, 4 bytes each), built from
        ``cdf`` when not given.
    """

    cdf: np.ndarray
    column_of_rank: np.ndarray
    guide: np.ndarray = None
    step: float = 0.0

    def __post_init__(self):
        if self.guide is None:
            guide, step = guide_table(self.cdf, min(GUIDE_BUCKETS, len(self.cdf)))
            object.__setattr__(self, "guide", guide)
            object.__setattr__(self, "step", float(step))

    @classmethod
    def build(cls, n_features: int, exponent: float, rng=None) -> "ZipfColumns":
        """Weights ``(r + 1) ** -exponent``; ranks permuted by ``rng`` (None: identity)."""
        weights = np.arange(1, n_features + 1, dtype=np.float64)
        np.power(weights, -float(exponent), out=weights)
        cdf = np.cumsum(weights, out=weights)
        column_of_rank = np.arange(n_features, dtype=np.int32)
        if rng is not None:
            # shuffling int32 in place draws what rng.permutation(n_features)
            # draws (the swaps do not depend on the item size): the same
            # permutation and the same generator state, without an int64 copy
            rng.shuffle(column_of_rank)
        return cls(cdf, column_of_rank)

    @property
    def n_features(self) -> int:
        """Number of columns."""
        return len(self.cdf)

    def probabilities(self) -> np.ndarray:
        """Probability of each rank, shape (n_features,).

        ``np.diff(cdf, prepend=0.0) / cdf[-1]``, element for element, in
        one array.
        """
        cdf = self.cdf
        p = np.empty_like(cdf)
        p[0] = cdf[0]
        np.subtract(cdf[1:], cdf[:-1], out=p[1:])
        p /= cdf[-1]
        return p

    def expected_frequency(self, nnz_per_row: float) -> np.ndarray:
        """Approximate share of rows holding each rank, shape (n_features,).

        Rosén's approximation of the inclusion probabilities of successive
        sampling, ``1 - exp(-τ p_r)`` with ``τ`` such that they sum to
        ``nnz_per_row`` (Newton's method; the Poisson spread of the row
        sizes is ignored).
        """
        p = self.probabilities()
        k = float(nnz_per_row)
        if k >= np.count_nonzero(p):
            return (p > 0).astype(np.float64)
        # one scratch array: the same operations as -expm1(-τ p).sum() and
        # (p exp(-τ p)).sum(), element for element (negation and the order
        # of a product's factors are exact), so the same bits
        t = np.empty_like(p)
        tau = k               # g(τ) = Σ (1 - exp(-τ p)) - k <= 0 here; g is concave
        for _ in range(100):  # increasing, so Newton's steps approach the root from below
            np.multiply(p, -tau, out=t)
            np.expm1(t, out=t)
            np.negative(t, out=t)
            value = t.sum() - k
            np.multiply(p, -tau, out=t)
            np.exp(t, out=t)
            t *= p
            step = value / t.sum()
            tau -= step
            if abs(step) <= 1e-10 * tau:
                break
        np.multiply(p, -tau, out=t)
        del p
        np.expm1(t, out=t)
        return np.negative(t, out=t)

    def draw_ranks(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` independent ranks, shape (n,), int64.

        ``searchsorted(cdf, u, side="right")`` of uniform ``u`` scaled to
        ``cdf[-1]``, answered through the guide table (about four times
        faster than sorting ``u`` and searching, the same integers).
        """
        u = rng.random(n)
        u *= self.cdf[-1]
        ranks = search_right(self.cdf, self.guide, self.step, u)
        np.minimum(ranks, self.n_features - 1, out=ranks)
        return ranks


# --------------------------------------------------------------------------
# planted model
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class PlantedModel:
    """The planted sparse model, in rank space.

    Attributes
    ----------
    linear_ranks : ndarray of int64, shape (n_linear,)
    linear_weights : ndarray of float64, shape (n_linear,)
    cross_ranks : ndarray of int64, shape (n_cross, 2)
        ``[source, target]``: the source is the more frequent member; the
        target is injected into rows holding the source.
    cross_weights : ndarray of float64, shape (n_cross,)
    injection : ndarray of float64, shape (n_cross,)
        Probability of adding the target to a row holding the source but
        not the target.
    noise : float
        Standard deviation of the Gaussian noise added to the scores.
    """

    linear_ranks: np.ndarray
    linear_weights: np.ndarray
    cross_ranks: np.ndarray
    cross_weights: np.ndarray
    injection: np.ndarray
    noise: float

    @property
    def member_ranks(self) -> np.ndarray:
        """Sorted distinct ranks of the pair members."""
        return np.unique(self.cross_ranks)

    def columns(self, column_of_rank) -> tuple:
        """Column numbers of the planted linear features and pairs.

        Returns
        -------
        linear : ndarray, shape (n_linear,)
        cross : ndarray, shape (n_cross, 2)
            ``[source, target]`` as in :attr:`cross_ranks`.
        """
        return column_of_rank[self.linear_ranks], column_of_rank[self.cross_ranks]

    def to_attrs(self, columns, threshold: float, linear_counts, cross_counts) -> dict:
        """The ``planted`` store attribute (column numbers, JSON types).

        ``columns`` is :meth:`columns`' answer.  Pairs are written
        ``[j, k]`` with ``j < k``; ``cross_source`` names the member that
        triggers the injection of the other.
        """
        linear, cross = columns
        return {
            "linear": [int(j) for j in linear],
            "cross": [sorted(int(j) for j in pair) for pair in cross],
            "weights": {"linear": [float(w) for w in self.linear_weights],
                        "cross": [float(w) for w in self.cross_weights]},
            "cross_source": [int(pair[0]) for pair in cross],
            "cross_injection": [float(q) for q in self.injection],
            "threshold": float(threshold),
            "noise": float(self.noise),
            "linear_counts": [int(c) for c in linear_counts],
            "cross_counts": [int(c) for c in cross_counts],
            "linear_ranks": [int(r) for r in self.linear_ranks],
            "cross_ranks": [[int(r) for r in pair] for pair in self.cross_ranks],
        }


def _first_ranks_outside(n_features, excluded, k) -> np.ndarray:
    """The first ``k`` ranks of the order ``1, 2, ..., n_features - 1, 0`` not in ``excluded``.

    Only a prefix of ``k + len(excluded)`` ranks is built (at most
    ``len(excluded)`` of them are excluded), never the whole order.
    """
    length = min(n_features, int(k) + len(excluded))
    prefix = np.arange(1, length + 1, dtype=np.int64)
    if length == n_features:
        prefix[-1] = 0
    return prefix[~np.isin(prefix, excluded)][:k]


def _pick_ranks(rng, candidates, n, n_features, excluded=(), weights=None) -> np.ndarray:
    """``n`` distinct ranks from ``candidates``, topped up with frequent ranks.

    ``weights`` (aligned with ``candidates``) are selection weights; when
    there are too few candidates, all are taken and the first ranks of the
    order ``1, 2, ..., n_features - 1, 0`` that are neither candidates nor
    ``excluded`` complete the draw.
    """
    if len(candidates) >= n:
        p = None if weights is None else weights / weights.sum()
        return np.sort(rng.choice(candidates, size=n, replace=False, p=p))
    extra = _first_ranks_outside(n_features, np.union1d(candidates, excluded),
                                 n - len(candidates))
    return np.sort(np.concatenate([candidates, extra]))


def _injection_probability(f_source, f_target, target_share) -> np.ndarray:
    """Probability ``q`` making ``P(source and target) == target_share``."""
    natural = f_source * f_target
    room = np.maximum(f_source * (1.0 - f_target), 1e-300)
    return np.clip((target_share - natural) / room, 0.0, 1.0)


def plant_model(rng, frequency, *, n_linear, n_cross, min_cooccurrence=DEFAULT_MIN_COOCCURRENCE,
                noise=DEFAULT_NOISE) -> PlantedModel:
    """Choose the planted features and weights (see the module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
    frequency : ndarray of float64, shape (n_features,)
        Expected share of rows holding each rank (decreasing).
    n_linear, n_cross : int
        Planted single features and pairs; ``n_linear + 2 n_cross`` must
        not exceed ``n_features``.
    min_cooccurrence : float
        Target share of rows holding both members of each pair.
    noise : float
        Standard deviation of the score noise.

    Returns
    -------
    model : PlantedModel
    """
    n_features = len(frequency)
    # fallbacks: most frequent first, rank 0 (in nearly every row) only as a
    # last resort (_first_ranks_outside); no O(n_features) rank arrays
    linear_candidates = np.flatnonzero(frequency[1:] >= LINEAR_MIN_FREQUENCY) + 1
    linear = _pick_ranks(rng, linear_candidates, n_linear, n_features,
                         weights=1.0 / (linear_candidates + 1.0))
    in_window = frequency >= CROSS_MIN_FREQUENCY
    in_window &= frequency <= CROSS_MAX_FREQUENCY
    in_window[0] = False
    in_window[linear] = False
    members = _pick_ranks(rng, np.flatnonzero(in_window).astype(np.int64), 2 * n_cross,
                          n_features, excluded=linear)
    del in_window
    members = rng.permutation(members).reshape(n_cross, 2)
    cross = np.sort(members, axis=1)             # lower rank (more frequent) is the source
    injection = _injection_probability(frequency[cross[:, 0]], frequency[cross[:, 1]],
                                       float(min_cooccurrence))
    low, high = WEIGHT_RANGE
    signs = rng.choice(np.array([-1.0, 1.0]), size=n_linear + n_cross)
    magnitudes = rng.uniform(low, high, size=n_linear + n_cross)
    weights = signs * magnitudes
    return PlantedModel(linear, weights[:n_linear], cross, weights[n_linear:],
                        injection, float(noise))


# --------------------------------------------------------------------------
# rows
# --------------------------------------------------------------------------
def _sorted_distinct(keys, m) -> np.ndarray:
    """Sorted distinct values of keys ``row * m + rank`` with rows ascending.

    ``keys`` is sorted in place, row by row
    (:func:`~ultrafs.kernels.sampling.sort_grouped`: the same order as
    ``numpy.sort``, several times faster for rows of a few dozen draws).
    """
    if not sort_grouped(keys, m):
        keys.sort()
    first = np.empty(len(keys), dtype=bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    return keys[first]


def _insert_new(keys, new) -> np.ndarray:
    """Insert the sorted keys ``new`` absent from the sorted ``keys``."""
    if not len(keys):
        return new
    where = np.searchsorted(keys, new)
    present = keys[np.minimum(where, len(keys) - 1)] == new
    return np.insert(keys, where[~present], new[~present])


def _redraw_round(rng, keys, missing, zipf):
    """Draw ``missing[i]`` more ranks for each row; keep the new ones."""
    m = zipf.n_features
    rows = np.repeat(np.arange(len(missing), dtype=np.int64), missing)
    return _insert_new(keys, _sorted_distinct(rows * m + zipf.draw_ranks(rng, len(rows)), m))


def _draw_absent(rng, keys, rows, zipf):
    """One rank per row among the ranks the row does not hold yet.

    Inverts the cumulative weight of the absent ranks, ``G(r) = cdf[r] -
    S(r)`` with ``S(r)`` the weight of the held ranks ``<= r``, by the
    fixed point ``r <- searchsorted(cdf, u + S(r))`` (non-decreasing, at
    most one step per held rank).

    Returns
    -------
    new_keys : ndarray of int64
        ``row * n_features + rank`` for the rows that got a rank (sorted);
        a row gets none when its absent ranks weigh nothing (weights
        underflowed) or rounding lands on a held rank (then it draws again).
    """
    m, cdf = zipf.n_features, zipf.cdf
    held_ranks = keys % m
    held_weight = cdf[held_ranks] - np.where(held_ranks > 0, cdf[held_ranks - 1], 0.0)
    prefix = np.concatenate([[0.0], np.cumsum(held_weight)])
    base = prefix[np.searchsorted(keys, rows * m)]
    absent = cdf[-1] - (prefix[np.searchsorted(keys, (rows + 1) * m)] - base)
    u = rng.random(len(rows)) * absent
    ranks = np.minimum(np.searchsorted(cdf, u, side="right"), m - 1)
    while True:
        below = prefix[np.searchsorted(keys, rows * m + ranks, side="right")] - base
        moved = np.minimum(np.searchsorted(cdf, u + below, side="right"), m - 1)
        if np.array_equal(moved, ranks):
            break
        ranks = moved
    new = rows * m + ranks
    where = np.minimum(np.searchsorted(keys, new), len(keys) - 1)
    valid = (absent > 0) & (keys[where] != new)
    return new[valid]


def sample_row_sets(rng, counts, zipf: ZipfColumns):
    """Weighted samples of distinct ranks, ``counts[i]`` for row ``i``.

    The first ``counts[i]`` distinct values of an i.i.d. stream of ranks
    (successive sampling without replacement): draw ``counts[i]`` ranks,
    drop duplicates, draw the missing number again (at most
    :data:`REDRAW_ROUNDS` rounds), then finish the rows still short with
    draws from the distribution restricted to their absent ranks (which
    is what redrawing converges to).

    Parameters
    ----------
    rng : numpy.random.Generator
    counts : ndarray of int64, shape (n_rows,)
        Requested features per row, in ``[1, n_features]``.
    zipf : ZipfColumns

    Returns
    -------
    keys : ndarray of int64, shape (nnz,)
        ``row * n_features + rank``, sorted (rows in order, ranks
        increasing within a row), distinct.  A row holds fewer than
        ``counts[i]`` ranks only when its remaining ranks have probability
        0 in floating point (extreme ``zipf_exponent``).
    """
    n_rows, m = len(counts), zipf.n_features
    keys = _redraw_round(rng, np.zeros(0, dtype=np.int64), counts, zipf)
    for _ in range(REDRAW_ROUNDS):
        missing = counts - np.bincount(keys // m, minlength=n_rows)
        if not missing.any():
            return keys
        keys = _redraw_round(rng, keys, missing, zipf)
    missing = counts - np.bincount(keys // m, minlength=n_rows)
    for _ in range(int(missing.max()) + EXACT_RETRIES):
        rows = np.flatnonzero(missing > 0)
        if not len(rows):
            break
        new = _draw_absent(rng, keys, rows, zipf)
        keys = _insert_new(keys, new)
        missing[new // m] -= 1
    return keys


def _membership(row_of, ranks, targets, n_rows) -> np.ndarray:
    """Boolean matrix (n_rows, len(targets)): row holds ``targets[t]``.

    ``targets`` must be sorted.
    """
    held = np.zeros((n_rows, len(targets)), dtype=bool)
    if len(targets):
        where = np.searchsorted(targets, ranks)
        hit = targets[np.minimum(where, len(targets) - 1)] == ranks
        held[row_of[hit], where[hit]] = True
    return held


def _inject_pairs(rng, model: PlantedModel, members, held):
    """Add pair targets to rows holding the source (updates ``held``).

    Returns
    -------
    rows, ranks : ndarray of int64
        The injected entries.
    """
    n_rows = held.shape[0]
    draws = rng.random((n_rows, len(model.cross_ranks)))
    source_col = np.searchsorted(members, model.cross_ranks[:, 0])
    target_col = np.searchsorted(members, model.cross_ranks[:, 1])
    rows, ranks = [], []
    for p in range(len(model.cross_ranks)):
        add = (held[:, source_col[p]] & ~held[:, target_col[p]]
               & (draws[:, p] < model.injection[p]))
        added = np.flatnonzero(add)
        held[added, target_col[p]] = True
        rows.append(added)
        ranks.append(np.full(len(added), model.cross_ranks[p, 1], dtype=np.int64))
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(rows).astype(np.int64), np.concatenate(ranks)


@dataclass
class RowChunk:
    """One generated chunk of rows.

    Attributes
    ----------
    rows : ndarray of int64, shape (nnz,)
        Row of each entry, local to the chunk, non-decreasing.
    ranks : ndarray of int64, shape (nnz,)
        Rank of each entry (map with ``ZipfColumns.column_of_rank``).
    scores : ndarray of float64, shape (n_rows,)
        Noiseless planted scores.
    noise : ndarray of float64, shape (n_rows,)
        Noise added to the scores before thresholding.
    linear_counts : ndarray of int64, shape (n_linear,)
        Rows of the chunk holding each planted linear feature.
    cross_counts : ndarray of int64, shape (n_cross,)
        Rows of the chunk holding both members of each planted pair.
    """

    rows: np.ndarray
    ranks: np.ndarray
    scores: np.ndarray
    noise: np.ndarray
    linear_counts: np.ndarray
    cross_counts: np.ndarray


def generate_chunk(rng, n_rows, zipf: ZipfColumns, model: PlantedModel,
                   nnz_per_row: float) -> RowChunk:
    """Draw ``n_rows`` rows, inject pair co-occurrences, score them.

    The draws happen in a fixed order (row sizes, ranks, redraws,
    injections, noise), so a chunk depends only on ``rng``'s state.
    """
    m = zipf.n_features
    counts = np.clip(rng.poisson(nnz_per_row, size=n_rows), 1, m).astype(np.int64)
    keys = sample_row_sets(rng, counts, zipf)
    row_of, ranks = np.divmod(keys, m)
    del keys
    members = model.member_ranks
    held = _membership(row_of, ranks, members, n_rows)
    added_rows, added_ranks = _inject_pairs(rng, model, members, held)
    if len(added_rows):
        order = np.argsort(np.concatenate([row_of, added_rows]), kind="stable")
        row_of = np.concatenate([row_of, added_rows])[order]
        ranks = np.concatenate([ranks, added_ranks])[order]
    linear_order = np.argsort(model.linear_ranks)
    linear_held = _membership(row_of, ranks, model.linear_ranks[linear_order], n_rows)
    linear_held = linear_held[:, np.argsort(linear_order)]      # back to model order
    source = held[:, np.searchsorted(members, model.cross_ranks[:, 0])]
    target = held[:, np.searchsorted(members, model.cross_ranks[:, 1])]
    both = source & target
    scores = linear_held @ model.linear_weights + both @ model.cross_weights
    noise = model.noise * rng.standard_normal(n_rows)
    return RowChunk(row_of, ranks, scores, noise,
                    linear_held.sum(axis=0, dtype=np.int64), both.sum(axis=0, dtype=np.int64))


# --------------------------------------------------------------------------
# labels
# --------------------------------------------------------------------------
def balanced_threshold(scores, noise, window=BALANCE_WINDOW) -> float:
    """A threshold that splits the scores in roughly balanced halves.

    Among the cuts leaving a share of rows below them inside ``window``
    (or, if an atom of equal scores covers the window, the cuts at most
    :data:`ATOM_SLACK` less balanced than the atom's edges), return the one
    with the fewest expected label flips
    ``Σ_i Φ(-|score_i - t| / noise)``, evaluated on a histogram of bin
    width ``noise / 4`` (``noise = 0`` is treated as ``1e-3``).

    Parameters
    ----------
    scores : ndarray of float64, shape (n,)
        Noiseless scores.
    noise : float
        Standard deviation of the score noise.
    window : (float, float)
        Accepted shares of rows below the threshold.

    Returns
    -------
    threshold : float
    """
    from scipy.special import ndtr

    scores = np.asarray(scores, dtype=np.float64)
    sigma = max(float(noise), 1e-3)
    lo, hi = float(scores.min()), float(scores.max())
    width = max(sigma / 4.0, (hi - lo) / 2 ** 22)
    n_bins = int((hi - lo) // width) + 2
    bins = np.minimum(((scores - lo) / width).astype(np.int64), n_bins - 1)
    counts = np.bincount(bins, minlength=n_bins).astype(np.float64)
    # cut k sits between bins k - 1 and k (k = 1..n_bins-1), at lo + k * width
    reach = int(math.ceil(4.0 * sigma / width))
    offsets = (np.arange(-reach, reach) + 0.5) * width        # bin centre minus cut
    kernel = ndtr(-np.abs(offsets) / sigma)
    flips = np.convolve(counts, kernel[::-1], mode="full")
    # flips at cut k: sum_b counts[b] * kernel[b - k + reach]
    cuts = np.arange(1, n_bins)
    expected = flips[cuts + reach - 1]
    share = np.cumsum(counts)[:-1] / len(scores)
    inside = (share >= window[0]) & (share <= window[1])
    if not inside.any():
        # an atom covers the window: accept a little more imbalance than the
        # atom's edges, so that the cut can keep away from the atom
        imbalance = np.abs(share - 0.5)
        inside = imbalance <= imbalance.min() + ATOM_SLACK
    best = np.flatnonzero(inside)[np.argmin(expected[inside])]
    return lo + float(cuts[best]) * width
