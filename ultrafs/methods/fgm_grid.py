"""FGM fits for several values of C in lockstep, sharing their scoring passes.

``C="auto"`` fits FGM at a grid of C on the same rows.  Run one after the
other, each fit streams the data once per outer iteration.  Run in
lockstep, the fits' worst-case analyses of one outer iteration become one
pass (:func:`~ultrafs.scoring.worst_case.worst_case_analyses`): each block
is read once and scored under every fit's dual weights.  On data out of
core the passes are most of a fit's time, and W fits in lockstep read the
data as often as one fit does (bench/README.md §11 measures what it saves).

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
from ultrafs.scoring.worst_case import worst_case_analyses

__all__ = ["fit_fgm_grid"]


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
    if options.get("checkpoint") is not None or options.get("resume"):
        raise ParameterError("fits in lockstep take no checkpoint")
    links = [None] * len(Cs) if warm_start is None else warm_start.chain(len(Cs))
    runs = [FGMRun(features, y, C=C, warm_start=link, **options)
            for C, link in zip(Cs, links)]
    while True:
        asking = [(run, run.query()) for run in runs]
        asking = [(run, query) for run, query in asking if query is not None]
        if not asking:
            return [run.result for run in runs]
        cpu_started = time.process_time()
        outcomes = worst_case_analyses(
            features, [(q.weights, q.k, q.excluded) for _, q in asking],
            block_size=block_size, scheduler=scheduler, num_workers=num_workers)
        cpu = (time.process_time() - cpu_started) / len(asking)
        peak = peak_rss_mb()
        for (run, _), (candidates, stats) in zip(asking, outcomes):
            run.advance(candidates, stats, cpu, peak)
