"""FGM fits for several values of C in lockstep, sharing their scoring passes.

``C="auto"`` fits FGM at a grid of C on the same rows.  Run one after the
other, each fit streams the data once per outer iteration.  Run in
lockstep, the fits' worst-case analyses of one outer iteration become one
pass (:func:`~ultrafs.scoring.worst_case.worst_case_analyses`): each block
is read once and scored under every fit's dual weights.  On data out of
core the passes are most of a fit's time, and W fits in lockstep read the
data as often as one fit does (bench/README.md §11 measures what it saves).

:func:`fit_fgm_folds` runs the grids of several folds in one lockstep:
the folds' training parts of a store too large to copy read its rows with
zero weights on the rows they do not keep, so their passes too become one
read of the store (:func:`~ultrafs.scoring.worst_case.worst_case_analyses_across`).

Each fit's result is the one :func:`~ultrafs.methods.fgm.fit_fgm` gives it
alone (a fit's steps depend only on the candidates of its own queries);
with a :class:`~ultrafs.methods.fgm.GridWarmStart` the fits are linked by
:meth:`~ultrafs.methods.fgm.GridWarmStart.chain` and advanced in grid
order, so each starts its subproblems where it would run after the
previous value's fit.
"""

from __future__ import annotations

import time

from ultrafs.errors import ParameterError
from ultrafs.methods.fgm import FGMRun
from ultrafs.rss import peak_rss_mb
from ultrafs.scoring.worst_case import worst_case_analyses_across

__all__ = ["fit_fgm_grid", "fit_fgm_folds"]


def fit_fgm_grid(features, y, Cs, *, warm_start=None, block_size=None, scheduler=None,
                 num_workers=None, **options):
    """Fit FGM at every C of ``Cs`` in lockstep; their results, in order.

    Parameters
    ----------
    features : feature space
    y : array, shape (n_samples,)
    Cs : sequence of float
        The values of C, in the order a grid walk would fit them.
    warm_start : GridWarmStart, optional
        The grid's warm starts (:meth:`GridWarmStart.chain` links the fits).
    block_size, scheduler, num_workers
        The shared passes' settings.
    **options
        :class:`~ultrafs.methods.fgm.FGMRun`'s parameters other than ``C``
        and ``warm_start`` (``B``, ``loss``, ``max_iter``, ``sample_weight``
        ...); no ``checkpoint`` or ``resume``.

    Returns
    -------
    results : list of FGMResult
        ``results[i]`` is what ``fit_fgm(features, y, C=Cs[i], ...)`` gives.
    """
    sample_weight = options.pop("sample_weight", None)
    return fit_fgm_folds([(features, y, warm_start, sample_weight)], Cs,
                         block_size=block_size, scheduler=scheduler,
                         num_workers=num_workers, **options)[0]


def fit_fgm_folds(folds, Cs, *, block_size=None, scheduler=None, num_workers=None,
                  **options):
    """:func:`fit_fgm_grid` for several folds at once, in one lockstep.

    Parameters
    ----------
    folds : list of (features, y, warm_start, sample_weight)
        Each fold's training space, targets, :class:`GridWarmStart` (or
        None) and sample weights (or None).
    Cs : sequence of float
        The values of C, the same for every fold.
    block_size, scheduler, num_workers
        The shared passes' settings.
    **options
        :class:`~ultrafs.methods.fgm.FGMRun`'s other parameters, the same
        for every fold; no ``checkpoint`` or ``resume``.

    Returns
    -------
    results : list (one per fold) of lists of FGMResult
        ``results[f][i]`` is what ``fit_fgm`` gives fold ``f`` at ``Cs[i]``:
        a fold's fits depend only on its own queries' candidates and its
        own warm starts.
    """
    if options.get("checkpoint") is not None or options.get("resume"):
        raise ParameterError("fits in lockstep take no checkpoint")
    runs = []
    for features, y, warm_start, sample_weight in folds:
        links = [None] * len(Cs) if warm_start is None else warm_start.chain(len(Cs))
        runs.append([FGMRun(features, y, C=C, warm_start=link,
                            sample_weight=sample_weight, **options)
                     for C, link in zip(Cs, links)])
    while True:
        asking = []
        for (features, *_), fold_runs in zip(folds, runs):
            mine = [(run, run.query()) for run in fold_runs]
            mine = [(run, query) for run, query in mine if query is not None]
            if mine:
                asking.append((features, mine))
        if not asking:
            return [[run.result for run in fold_runs] for fold_runs in runs]
        cpu_started = time.process_time()
        outcomes = worst_case_analyses_across(
            [(features, [(q.weights, q.k, q.excluded) for _, q in mine])
             for features, mine in asking],
            block_size=block_size, scheduler=scheduler, num_workers=num_workers)
        cpu = (time.process_time() - cpu_started) / sum(len(mine) for _, mine in asking)
        peak = peak_rss_mb()
        for (_, mine), fold_outcomes in zip(asking, outcomes):
            for (run, _), (candidates, stats) in zip(mine, fold_outcomes):
                run.advance(candidates, stats, cpu, peak)
