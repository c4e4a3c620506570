"""Row-scale pass: the two largest ``x_ij²`` of every row, one streamed pass.

One Dask task per column block (:mod:`ultrafs.scoring.runner`) returns the
block's two largest squared values per row (an (n, 2) array); the tree
merge (fan-in 2, in place: :func:`ultrafs.kernels.statistics.merge_row_top2`)
keeps the two largest of both.  The result is O(n), never O(m), and
exact: maxima do not depend on the block size, the scheduler or the order
the blocks arrive in.  It serves the data-scaled default of C
(:func:`ultrafs.methods.validation.default_C`) through the feature spaces'
:meth:`~ultrafs.features.base.FeatureSpace.row_max_squares`.
"""

from __future__ import annotations

import numpy as np

from ultrafs.kernels.statistics import merge_row_top2, row_top2_squares
from ultrafs.scoring.runner import BlockRunner

__all__ = ["row_top2"]


def _block_rows(block, store):
    start, stop = block
    cols = store.read_range(start, stop)
    out = np.zeros((store.n_samples, 2), dtype=np.float64)
    return row_top2_squares(cols.indices, cols.data, store.n_samples, out)


def _merge(parts):
    """Top-2 of the parts, merged into the first in place (each part is a
    fresh task result consumed by this merge only)."""
    parts = list(parts)
    out = parts[0]
    for part in parts[1:]:
        merge_row_top2(out, part)
    return out


def row_top2(store, *, block_size=None, scheduler=None, num_workers=None,
             split_every=8) -> np.ndarray:
    """The largest and second largest ``x_ij²`` of every row of ``store``.

    Parameters
    ----------
    store : ColumnStore
    block_size, scheduler, num_workers, split_every
        As for :func:`ultrafs.scoring.statistics.feature_statistics`.

    Returns
    -------
    top2 : float64 array, shape (n_samples, 2)
        Column 0 the largest square of the row (0 for a zero row), column 1
        the second largest (0 for rows with fewer than two nonzeros).
    """
    bounds = store.block_bounds(block_size)
    blocks = [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    if not blocks:
        return np.zeros((store.n_samples, 2), dtype=np.float64)
    # every task result is an (n, 2) array: a fan-in of 2 keeps few of them
    # alive at once (about 300 MB each at 19M rows); maxima are exact, so
    # the grouping does not change the result
    runner = BlockRunner(scheduler, num_workers, min(int(split_every), 2), block_size)
    return runner(blocks, _block_rows, _merge, {"store": store})
