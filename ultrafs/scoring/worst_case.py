"""Worst-case analysis (FGM Algorithms 2 and 5): streamed scoring passes.

Feature spaces drive the block passes they need (:mod:`ultrafs.scoring.runner`)
through their ``find_candidates`` method: one pass for linear features,
several phases for degree-2 features.  The weights (n floats, or an n x K
matrix for K classes) enter the graph once.

Candidates are ranked by (score decreasing, key increasing), a total order,
so the result is the same for every block size, worker count, scheduler
and arrival order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.scoring.runner import BlockRunner
from ultrafs.scoring.topk import Candidates

__all__ = ["PassStats", "worst_case_analysis", "worst_case_analyses",
           "worst_case_analyses_across"]


@dataclass(frozen=True)
class PassStats:
    """What one worst-case analysis did.

    Attributes
    ----------
    n_blocks : int
        Tasks run (all phases).
    n_candidates : int
        Candidates the pass had to consider (m, or m(m+3)/2 for degree 2).
    nnz : int
        Nonzeros streamed.
    seconds : float
    details : dict
        Feature-space specific figures (pairs evaluated, pruned...).
    """

    n_blocks: int
    n_candidates: int
    nnz: int
    seconds: float
    details: dict = field(default_factory=dict)

    @property
    def nnz_per_second(self) -> float:
        """Streaming throughput of the pass."""
        return self.nnz / self.seconds if self.seconds > 0 else float("inf")


def worst_case_analysis(features, weights, k, *, excluded=None,
                        block_size=None, scheduler=None, num_workers=None,
                        split_every=8, progress_label=None):
    """Find the ``k`` candidates with the largest scores ``s_j = ||c_j||²``.

    Parameters
    ----------
    features : feature space
        E.g. :class:`~ultrafs.features.linear.LinearFeatures`.
    weights : float64 array, shape (n_samples,) or (n_samples, K)
        ``a = alpha * y`` from the last subproblem (two classes), or the
        per-class dual weights A (K classes); a candidate then scores
        ``s = Σ_c (Σ_i A_ic x_i)²`` (times its map factor²).  Converted to
        C-contiguous float64.
    k : int
        Number of candidates wanted (FGM's B), k >= 1.
    excluded : array-like of int64, optional
        Keys already selected; never returned.
    block_size : int, optional
        Candidate block size (columns); None uses the store's partition.
    scheduler : None, str or distributed.Client
        See :func:`ultrafs.scoring.scheduling.resolve_scheduler`.
    num_workers : int, optional
        Threads or processes for local schedulers.
    split_every : int
        Fan-in of the tree reductions.
    progress_label : str, optional
        Show per-phase progress (blocks, nnz/s, ETA) on stderr.

    Returns
    -------
    candidates : Candidates
        At most ``k``; fewer when fewer candidates have a positive score.
    stats : PassStats

    Raises
    ------
    ParameterError
        One line for weights of the wrong shape, k < 1, or 2-D weights
        given to a feature space that does not support them.
    """
    weights, k, excluded = _check_query(features, weights, k, excluded)
    runner = BlockRunner(scheduler, num_workers, split_every, block_size,
                         progress_label)
    return _one_pass(features, weights, k, excluded, runner)


def _one_pass(features, weights, k, excluded, runner):
    """The pass of one checked query."""
    started = time.perf_counter()
    result = features.find_candidates(weights, k, excluded, runner)
    seconds = time.perf_counter() - started
    return _outcome(features, result, runner.n_tasks, seconds)


def worst_case_analyses(features, queries, *, block_size=None, scheduler=None,
                        num_workers=None, split_every=8, progress_label=None):
    """:func:`worst_case_analysis` for several ``(weights, k, excluded)`` queries.

    A feature space that shares passes
    (:attr:`~ultrafs.features.base.FeatureSpace.shares_passes`, e.g. linear
    features) reads its data once for all queries; others run one pass per
    query.  Each query's candidates are those its own pass would give.  A
    shared pass's seconds and tasks are split evenly between the queries,
    whose stats say in ``details["pass_queries"]`` how many shared it.

    Returns
    -------
    list of (Candidates, PassStats), in the order of ``queries``.
    """
    return worst_case_analyses_across([(features, queries)], block_size=block_size,
                                      scheduler=scheduler, num_workers=num_workers,
                                      split_every=split_every,
                                      progress_label=progress_label)[0]


def worst_case_analyses_across(groups, *, block_size=None, scheduler=None,
                               num_workers=None, split_every=8, progress_label=None):
    """:func:`worst_case_analyses` for the queries of several feature spaces.

    ``groups`` is a list of ``(features, queries)``.  Spaces whose passes
    read the same data (linear features over row subsets of one large
    store: ``C="auto"``'s folds, :meth:`FeatureSpace.find_candidates_across`)
    share one pass; otherwise each space's queries share its own pass
    (:meth:`FeatureSpace.find_candidates_many`) or, when the space does not
    share passes, run one pass each.  Each query's candidates are those its
    own pass would give.

    Returns
    -------
    list (one per group) of lists of (Candidates, PassStats)
    """
    def runner():
        return BlockRunner(scheduler, num_workers, split_every, block_size,
                           progress_label)

    checked = [(features, [_check_query(features, *query) for query in queries])
               for features, queries in groups]
    if len(checked) > 1:
        across = type(checked[0][0]).find_candidates_across
        shared = _shared_pass(checked, across, runner())
        if shared is not None:
            return shared
    out = []
    for features, queries in checked:
        if not features.shares_passes or len(queries) <= 1:
            out.append([_one_pass(features, weights, k, excluded, runner())
                        for weights, k, excluded in queries])
        else:
            out += _shared_pass([(features, queries)], _within_space, runner())
    return out


def _within_space(groups, run):
    """:meth:`FeatureSpace.find_candidates_many` of the one group's space."""
    (features, queries), = groups
    return [features.find_candidates_many(queries, run)]


def _shared_pass(groups, find, runner):
    """The outcomes of one pass for the checked queries of ``groups`` by
    ``find(groups, runner)`` (a list of result lists, or None when the
    groups cannot share it: then None); the pass's seconds and tasks are
    split evenly between the queries, whose stats say in
    ``details["pass_queries"]`` how many shared it."""
    total = sum(len(queries) for _, queries in groups)
    started = time.perf_counter()
    results = find(groups, runner) if total else None
    if results is None:
        return None
    seconds = (time.perf_counter() - started) / total
    return [[_outcome(features, result, runner.n_tasks // total, seconds,
                      pass_queries=total)
             for result in group_results]
            for (features, _), group_results in zip(groups, results)]


def _check_query(features, weights, k, excluded):
    """Validated ``(weights, k, excluded)`` of one query (see
    :func:`worst_case_analysis`); k capped at the candidates left."""
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    n = features.n_samples
    if weights.ndim not in (1, 2) or weights.shape[0] != n \
            or (weights.ndim == 2 and weights.shape[1] < 1):
        raise ParameterError(f"weights must have shape ({n},) or ({n}, K), "
                             f"got {weights.shape}")
    if int(k) < 1:
        raise ParameterError(f"k must be >= 1, got {k!r}")
    excluded = np.unique(np.asarray(
        [] if excluded is None else excluded, dtype=np.int64))
    # never more winners than candidates: memory follows the data, not B
    # (a group space's keys are columns: count the candidates they belong to;
    # units_of is non-decreasing in the key, so the sorted keys' units are
    # sorted and counted by their changes, without another sort)
    units = getattr(features, "units_of", None)
    n_excluded = len(excluded)
    if units is not None and len(excluded):
        owners = units(excluded)
        n_excluded = 1 + int(np.count_nonzero(owners[1:] != owners[:-1]))
    k = max(1, min(int(k), int(features.n_candidates) - n_excluded))
    return weights, k, excluded


def _outcome(features, result, n_tasks, seconds, **details):
    """``(Candidates, PassStats)`` of one query's merged :class:`TopK`
    (``details`` added to its counters)."""
    counters = dict(result.counters, **details)
    nnz = int(counters.pop("nnz", 0))
    stats = PassStats(n_tasks, features.n_candidates, nnz, seconds, counters)
    return Candidates(result.keys, result.scores, result.payload), stats
