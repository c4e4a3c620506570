"""The ℓ1 path's KKT check: read only the columns a bound cannot certify.

After each solve at λ the path must show ``|x̄_j'θ̂| <= nλ(1 + tol)`` for
every discarded column j (θ̂ the solution's dual point, ``x̄_j = y ⊙ x_j``).
A column whose correlation ``s_j = x̄_j'θ_r`` is known at an earlier dual
point θ_r satisfies, by Cauchy-Schwarz (``||x̄_j|| = ||x_j||``),

    |x̄_j'θ̂| <= |s_j| + ||x_j|| · ||θ̂ − θ_r||,

so it is certified without being read when the right-hand side is at most
``nλ(1 + tol)``.  Only the others are read (and the kept columns, from the
path's cache), and their ``s_j`` move to θ̂.

Reference points.  Each column remembers the point its ``s_j`` was computed
at (``ref_id``, int32); the points themselves (n floats each) are kept in
at most :data:`MAX_REFERENCES` slots, a slot freed when no column refers
to it any more.  A check that needs a slot when all are taken recomputes
every column instead (a *full* pass: all columns move to θ̂, one slot
left), and so does one whose uncertified columns are more than
:data:`FULL_PASS_SHARE` of all (a full pass reads them in order).  The
first reference is θ_max, whose correlations the statistics hold.

Reading.  With the store's decoded copy in memory
(:mod:`ultrafs.methods.l1_resident`) the columns are summed in place
(:func:`ultrafs.kernels.slores.gathered_column_sums`); out of core, a full
pass is :func:`ultrafs.scoring.statistics.feature_statistics` (one Dask task
per block, reused per-thread buffers) and a partial one reads the columns
by ``store.read_columns`` in groups of :data:`READ_GROUP` (the store reads
the chunks that hold them: cheaper than the blocks around them while few
columns are uncertified, which is when a partial pass runs).  Every sum is
the scoring kernels' sum of the column in row order: the same bits from any
source.

Sample weights (:mod:`ultrafs.methods.l1_weights`).  The weighted problem's
condition is ``|x̄_j'(w ⊙ θ̂)| <= nλ(1 + tol)``: the check works on the
scaled point ``w ⊙ θ̂`` (the sums' weights ``w ⊙ θ̂ ⊙ y``, the reference
points and their distances all scaled), the same bound by Cauchy-Schwarz.

Rounding.  ``reach_r = ||θ̂ − θ_r|| (1 + γ_n) + γ_n ||θ_r||`` covers the
rounding of the distance and of the stored ``s_j`` (γ_n = (n + 2)ε).

The correlations kept for the next λ's screening are therefore a mix
(the stale ones a rule keeps are read and tested again, :meth:`KKTCheck.refresh`):
*fresh* ones (computed at the final θ̂, with the next cut's products) and
*stale* ones, each within ``slack_j = ||x_j|| reach_r`` of its value at θ̂
(the ``reach`` of the last check, which was at θ̂); Slores gives the stale
ones the ball's bound plus their slack (:mod:`ultrafs.kernels.slores`), the
strong rule their upper bound ``|s_j| + slack_j``.  Memory: two p-vectors
(``s``, the cut's products), ``ref_id`` (p int32), a p-vector of int64 for
the uncertified columns, and at most :data:`MAX_REFERENCES` n-vectors.
"""

from __future__ import annotations

import numpy as np

from ultrafs.kernels.slores import (assign_reference, discarded_violators,
                                    gathered_column_sums,
                                    gathered_column_sums_binary,
                                    uncertified_columns)

__all__ = ["KKTCheck", "MAX_REFERENCES", "FULL_PASS_SHARE", "READ_GROUP"]

#: dual points kept as references (n floats each)
MAX_REFERENCES = 8
#: a check whose uncertified columns exceed this share of p reads them all
FULL_PASS_SHARE = 0.25
#: columns per ``store.read_columns`` call of a partial out-of-core check
READ_GROUP = 1 << 16

_EPS = np.finfo(np.float64).eps


def _norm(v) -> float:
    return float(np.sqrt(np.sum(v * v)))


class KKTCheck:
    """Correlations of every column with the latest dual point, kept up to a bound.

    Parameters
    ----------
    stats : SloresStatistics
        ``s_max`` (the correlations at θ_max) and ``column_norms``.
    y : float64 array of ±1, shape (n,)
    theta_max : float64 array, shape (n,)
        The dual point of ``stats.s_max``.
    store : ColumnStore
        Out-of-core source of the columns (used when ``resident`` is None).
    resident : InMemoryStore or None
        The decoded copy: columns are summed in place.
    run : dict
        ``block_size``, ``scheduler``, ``num_workers`` of a full streamed pass.
    sample_weight : float64 array, shape (n,), optional
        The weighted problem's weights: every dual point given (``theta_max``
        and each :meth:`check`'s) is scaled by them.

    Attributes
    ----------
    s : float64 array, shape (p,)
        ``x̄_j'θ_{ref_id[j]}``.
    cut : float64 array, shape (p,)
        The last check's cut products, valid for its fresh columns.
    columns_read, full_passes, checks : int
        Totals: columns summed from the data (kept ones excluded), full
        passes, checks.
    last_read : int64 array or None
        The discarded columns the last check read (None: a full pass, all);
        the others it certified by their bound.
    """

    def __init__(self, stats, y, theta_max, store, resident=None, run=None,
                 sample_weight=None):
        n = y.size
        self.sample_weight = sample_weight
        if sample_weight is not None:
            theta_max = theta_max * sample_weight
        self.y = y
        self.n = n
        self.gamma = (n + 2) * _EPS
        self.norms = stats.column_norms
        self.s = np.array(stats.s_max, dtype=np.float64)
        self.cut = np.zeros_like(self.s)
        self.ref_id = np.zeros(self.s.size, dtype=np.int32)
        self.counts = np.zeros(MAX_REFERENCES, dtype=np.int64)
        self.counts[0] = self.s.size
        self.points = [None] * MAX_REFERENCES
        self.points[0] = np.asarray(theta_max, dtype=np.float64)
        self.current = 0
        self.store = store
        self.run = dict(run or {})
        self.csc = None
        if resident is not None:
            block = resident.read_range(0, resident.n_features)
            self.csc = (block.indptr, block.indices, block.data)
        self._uncertain = np.empty(self.s.size, dtype=np.int64)
        self.reach = np.zeros(MAX_REFERENCES)
        self.largest = 0.0
        self.last_read = None
        self._weights = None
        self._cut_weights = None
        self.columns_refreshed = 0
        self.columns_read = self.full_passes = self.checks = 0

    # ------------------------------------------------------------ helpers
    def _reach(self, theta) -> np.ndarray:
        """``reach_r`` for every live slot (0 for free ones)."""
        reach = np.zeros(MAX_REFERENCES)
        for r, point in enumerate(self.points):
            if point is not None:
                reach[r] = (_norm(theta - point) * (1.0 + self.gamma)
                            + self.gamma * _norm(point))
        return reach

    def _sums(self, source, read_at, write_at, weights, out):
        indptr, indices, data = source
        if data is None:
            gathered_column_sums_binary(indptr, indices, read_at, write_at, weights, out)
        else:
            gathered_column_sums(indptr, indices, data, read_at, write_at, weights, out)

    def _read(self, columns, weights, cut_weights):
        """``s`` (and ``cut``) of ``columns`` (increasing) from the data."""
        if columns.size == 0:
            return
        if self.csc is not None:
            self._sums(self.csc, columns, columns, weights, self.s)
            if cut_weights is not None:
                self._sums(self.csc, columns, columns, cut_weights, self.cut)
            return
        for lo in range(0, columns.size, READ_GROUP):
            group = columns[lo:lo + READ_GROUP]
            block = self.store.read_columns(group)
            source = (block.indptr, block.indices, block.data)
            at = np.arange(group.size, dtype=np.int64)
            self._sums(source, at, group, weights, self.s)
            if cut_weights is not None:
                self._sums(source, at, group, cut_weights, self.cut)

    def _full(self, weights, cut_weights):
        """Every column's ``s`` (and ``cut``): one pass."""
        if self.csc is not None:
            every = np.arange(self.s.size, dtype=np.int64)
            self._read(every, weights, cut_weights)
            return
        from ultrafs.scoring.statistics import feature_statistics

        both = weights if cut_weights is None else np.column_stack([weights, cut_weights])
        sums = feature_statistics(self.store, ("weighted_sum",), weights=both,
                                  **self.run)["weighted_sum"]
        if cut_weights is None:
            self.s[:] = sums
        else:
            self.s[:] = sums[:, 0]
            self.cut[:] = sums[:, 1]

    # ------------------------------------------------------------- check
    def check(self, theta, keep, columns, positions, cache_arrays, threshold,
              cut_weights=None):
        """Certify the discarded columns at the dual point ``theta``.

        Parameters
        ----------
        theta : float64 array, shape (n,)
            The solution's dual point θ̂ (the weights of the sums are θ̂ ⊙ y).
        keep : bool array, shape (p,)
            The solver's columns; the others are checked.
        columns : int64 array
            ``flatnonzero(keep)``.
        positions : int64 array
            Their positions in the cache.
        cache_arrays : (indptr, indices, data)
            The cache's CSC arrays (the kept columns are summed from there).
        threshold : float
            ``nλ(1 + tol)``.
        cut_weights : float64 array, shape (n,), optional
            Weights of the next cut's products (computed for the fresh columns).

        Returns
        -------
        violators : int64 array
            Increasing discarded columns with ``|x̄_j'θ̂| > threshold``.
        largest : float
            An upper bound of ``max |x̄_j'θ̂|`` over the discarded columns:
            exact for those read, the bound for the certified ones.
        """
        self.checks += 1
        if self.sample_weight is not None:
            theta = theta * self.sample_weight
        weights = theta * self.y
        self._weights, self._cut_weights = weights, cut_weights
        slot = next((r for r in range(MAX_REFERENCES) if self.points[r] is None), None)
        full = slot is None
        if not full:
            reach = self._reach(theta)
            count, certified_top = uncertified_columns(
                keep, self.s, self.ref_id, self.norms, reach, threshold,
                self._uncertain)
            uncertain = self._uncertain[:count]
            full = count > FULL_PASS_SHARE * self.s.size
        if full:
            self._full(weights, cut_weights)
            self.full_passes += 1
            self.columns_read += int(self.s.size - columns.size)
            self.points = [None] * MAX_REFERENCES
            self.points[0] = np.array(theta, dtype=np.float64)
            self.ref_id[:] = 0
            self.counts[:] = 0
            self.counts[0] = self.s.size
            self.current = 0
            self.reach = np.zeros(MAX_REFERENCES)
            self.last_read = None
            violators, largest = discarded_violators(self.s, keep, threshold)
            self.largest = max(largest, float(np.abs(self.s[columns]).max())
                               if columns.size else 0.0)
            return violators, largest
        self.points[slot] = np.array(theta, dtype=np.float64)
        self.current = slot
        self._read(uncertain, weights, cut_weights)
        self.columns_read += int(uncertain.size)
        self.last_read = uncertain.copy()
        if columns.size:    # the kept columns, from the cache
            self._sums(cache_arrays, positions, columns, weights, self.s)
            if cut_weights is not None:
                self._sums(cache_arrays, positions, columns, cut_weights, self.cut)
        assign_reference(uncertain, self.ref_id, self.counts, slot)
        assign_reference(columns, self.ref_id, self.counts, slot)
        for r in range(MAX_REFERENCES):
            if self.points[r] is not None and self.counts[r] == 0:
                self.points[r] = None
        values = np.abs(self.s[uncertain])
        violators = uncertain[values > threshold]
        largest = max(certified_top, float(values.max()) if values.size else 0.0)
        reach[slot] = 0.0
        self.reach = reach
        self.largest = max(largest, float(np.abs(self.s[columns]).max())
                           if columns.size else 0.0)
        return violators, largest

    def screening_inputs(self):
        """For the next λ's rule: ``(s, stale, largest)`` at the last check's θ̂.

        ``stale`` is None when every column is fresh, else ``(ref_id, reach,
        current)``: column j is stale where ``ref_id[j] != current``, its
        ``s_j`` within ``||x_j|| reach[ref_id[j]]`` of ``x̄_j'θ̂``.
        ``largest`` bounds ``max_j |x̄_j'θ̂|``.  The arrays are this object's,
        valid until the next check.
        """
        if self.counts[self.current] == self.s.size:
            return self.s, None, self.largest
        return self.s, (self.ref_id, self.reach, self.current), self.largest

    def refresh(self, columns):
        """Read ``columns`` (increasing) at the last check's θ̂: their ``s`` and
        cut products become fresh.  The screening calls it for the stale
        columns its rule kept, then tests them again exactly."""
        if columns.size == 0 or self._weights is None:
            return
        self._read(columns, self._weights, self._cut_weights)
        assign_reference(columns, self.ref_id, self.counts, self.current)
        self.columns_refreshed += int(columns.size)
        self.columns_read += int(columns.size)

    def upper_correlations(self):
        """``|s_j| + slack_j`` for every column (fresh: ``|s_j|``), a new array."""
        upper = np.abs(self.s)
        if self.counts[self.current] != self.s.size:
            stale = self.ref_id != self.current
            upper[stale] += self.norms[stale] * self.reach[self.ref_id[stale]]
        return upper
