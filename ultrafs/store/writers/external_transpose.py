"""External transpose of row-ordered entries into column order.

:class:`ExternalTranspose` buffers entries as int64 keys
``column << 32 | row`` (plus values); whenever the buffer exceeds its share
of the memory budget it is sorted (a radix sort on the column bits) and
spilled as a *run* to a temporary directory. Columns are then gathered
group by group, each group reading its slice of every run with plain
reads, so memory stays bounded whatever the number of entries. Used by
the LIBSVM ingest (:mod:`ultrafs.store.writers.libsvm`) and the kddb-like
generator (:mod:`ultrafs.datasets.kddb_like`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ultrafs.kernels.long_table import add_key_counts, sort_keys_by_column
from ultrafs.store.base import SPARSE_IDS_MIN_EMPTY

__all__ = ["pack_keys", "ExternalTranspose", "RUN_INDEX_STRIDE"]

def pack_keys(columns, rows) -> np.ndarray:
    """Sort keys ``column << 32 | row`` (both below 2**31) as int64."""
    keys = columns.astype(np.int64)
    keys <<= 32
    keys |= rows
    return keys


class ExternalTranspose:
    """Turn row-ordered entries into CSC order with bounded memory.

    Parameters
    ----------
    run_dir : Path
        Directory for spilled runs (created by the caller, removed by it).
    buffer_bytes : int
        Spill when the buffered entries take this many bytes.
    n_columns : int or None
        The width when the caller knows it (every column below it): the
        column counts are then one dense int32 array of that length from
        the start (4 bytes per column); None sizes them from the data.

    Notes
    -----
    Each entry is buffered as one int64 key ``column << 32 | row`` plus its
    value (or nothing while every value seen is 1).  Keys are unique
    (duplicate indices within a row are rejected by the parser), so
    sorting the keys orders a run by column, then row.  Entries arrive in
    row order, so a stable radix sort on the column bits alone sorts a run
    (:func:`~ultrafs.kernels.long_table.sort_keys_by_column`, three passes
    for 30M columns, about 8 times faster than ``numpy.sort``).  Spilled runs are appended to two flat files, ``keys.bin`` and
    ``values.bin``, and read back with plain reads, a block's slice at a
    time, located through a sparse index of every
    :data:`RUN_INDEX_STRIDE`-th key (no memory maps: pages read are never
    counted in the process's resident memory); the last run stays in
    memory.  Runs hold increasing row ranges, so concatenating the runs'
    slices of a column in run order yields that column's rows in
    increasing order.  Sorting needs about twice the buffered bytes.
    Entries per column are counted in an int32 array (a column holds at
    most one entry per row, and rows are below 2**31).
    """

    def __init__(self, run_dir: Path, buffer_bytes: int, n_columns=None):
        self.run_dir = Path(run_dir)
        self.buffer_bytes = int(buffer_bytes)
        self._n_columns = None if n_columns is None else int(n_columns)
        # entries per column: a dense count array (one kernel pass per run)
        # while the largest column is within twice the entries seen plus
        # SPARSE_IDS_MIN_EMPTY, else the non-empty columns and their
        # counts (memory in proportion to the columns used, never to the
        # largest id); see _count_columns
        self._dense_counts = np.zeros(self._n_columns or 0, dtype=np.int32)
        self._sparse_counts = None
        self._n_counted = 0
        self.n_spilled = 0
        # the buffer: keys (and values) copied into arrays that grow up to
        # the budget and are reused run after run, with spare arrays of
        # the same size for the radix sort (no list of parts, no copies)
        self._keys_buffer = self._spare_keys = None
        self._values_buffer = self._spare_values = None
        self._n_buffered = 0
        self._run_has_values = False
        self._value_dtype = None
        # spilled runs: (first key, stop key, first value or -1, index) in the files
        self._spilled = []
        self._n_keys_spilled = 0
        self._n_values_spilled = 0
        self._runs = []               # _MemoryRun / _SpilledRun once finished
        self._files = []

    # ---------------------------------------------------------------- API
    def add(self, columns, rows, values) -> None:
        """Buffer entries given in row order; ``values`` None means all ones."""
        if len(columns) == 0:
            return
        self.add_keys(pack_keys(columns, rows), values)

    def add_keys(self, keys, values) -> None:
        """Buffer packed keys (``column << 32 | row``) and their values.

        Parameters
        ----------
        keys : ndarray of int64
            Keys of rows after every row added before, in row order (any
            column order within a row).  Copied into the buffer.
        values : ndarray or None
            Values aligned with ``keys``; None means all ones.
        """
        n = len(keys)
        if n == 0:
            return
        start, stop = self._n_buffered, self._n_buffered + n
        if values is not None:
            self._value_dtype = values.dtype
        self._keys_buffer = self._grown(self._keys_buffer, stop, np.int64)
        self._keys_buffer[start:stop] = keys
        if values is not None and not self._run_has_values:
            self._run_has_values = True
            self._values_buffer = self._grown(self._values_buffer, stop, values.dtype)
            self._values_buffer[:start] = 1
        if self._run_has_values:
            self._values_buffer = self._grown(self._values_buffer, stop, self._value_dtype)
            self._values_buffer[start:stop] = 1 if values is None else values
        self._n_buffered = stop
        entry_bytes = 8 + (self._values_buffer.itemsize if self._run_has_values else 0)
        if stop * entry_bytes >= self.buffer_bytes:
            self._spill()

    def _grown(self, buffer, length, dtype, keep=True):
        """``buffer`` with room for ``length`` entries (the buffered ones kept).

        Grows geometrically up to the budget's number of keys (one add may
        go past it).
        """
        if buffer is not None and len(buffer) >= length and buffer.dtype == dtype:
            return buffer
        limit = self.buffer_bytes // 8 + 1
        old = 0 if buffer is None else len(buffer)
        grown = np.empty(max(length, min(2 * old, limit), 1 << 12), dtype=dtype)
        if buffer is not None and keep:
            kept = min(self._n_buffered, old)
            grown[:kept] = buffer[:kept]
        return grown

    def finish(self) -> None:
        """Open the spilled runs and sort the rest into an in-memory run."""
        keys_file = values_file = None
        if self._n_keys_spilled:
            keys_file = open(self._keys_file, "rb", buffering=0)
            self._files.append(keys_file)
        if self._n_values_spilled:
            values_file = open(self._values_file, "rb", buffering=0)
            self._files.append(values_file)
        runs = [_SpilledRun(keys_file, lo, hi, values_file, value_lo, self._value_dtype,
                            index)
                for lo, hi, value_lo, index in self._spilled]
        if self._n_buffered:
            runs.append(_MemoryRun(*self._sorted_buffer()))
        # the last run is a view of one buffer; the others go
        self._keys_buffer = self._spare_keys = None
        self._values_buffer = self._spare_values = None
        self._runs = runs

    def n_used_columns(self) -> int:
        """Number of non-empty columns (no arrays built)."""
        if self._sparse_counts is not None:
            return len(self._sparse_counts[0])
        return int(np.count_nonzero(self._dense_counts))

    def used_columns(self) -> tuple:
        """The non-empty columns (sorted, int64) and their entry counts (int64)."""
        if self._sparse_counts is not None:
            return self._sparse_counts
        columns = np.flatnonzero(self._dense_counts).astype(np.int64)
        return columns, self._dense_counts[columns].astype(np.int64)

    def release_counts(self) -> None:
        """Drop the column counts (once the offsets hold the same information)."""
        self._dense_counts = np.zeros(0, dtype=np.int32)
        self._sparse_counts = None

    def release_counts_as_index(self):
        """Turn dense counts into the compact number of each column, in place.

        For the sparse id layout: entry ``c`` becomes the position of
        column ``c`` among the non-empty columns (for an empty column, that
        of the last non-empty one before it), so that :meth:`iter_blocks`
        maps a column with one lookup instead of a search in the column
        ids.  The counts are released either way.

        Returns
        -------
        index : ndarray of int32 or None
            None when the counts are sparse (then the column ids are
            searched).
        """
        index = self._dense_counts
        self.release_counts()
        if index is None or not len(index):
            return None
        np.minimum(index, 1, out=index)
        np.cumsum(index, out=index)
        index -= 1
        return index

    def indptr(self, n_columns: int) -> np.ndarray:
        """Column offsets of the transposed matrix, shape (n_columns + 1,).

        The dense layout: every column ``0 .. n_columns - 1``, empty or not.
        """
        indptr = np.zeros(n_columns + 1, dtype=np.int64)
        if self._sparse_counts is None:
            dense = self._dense_counts[:n_columns]
            indptr[1:len(dense) + 1] = dense
        else:
            columns, column_counts = self._sparse_counts
            indptr[columns + 1] = column_counts
        np.cumsum(indptr, out=indptr)
        return indptr

    @staticmethod
    def compact_indptr(column_counts) -> np.ndarray:
        """Column offsets over the non-empty columns only (sparse id layout)."""
        indptr = np.zeros(len(column_counts) + 1, dtype=np.int64)
        np.cumsum(column_counts, out=indptr[1:])
        return indptr

    def iter_blocks(self, bounds, indptr, value_dtype, column_ids=None, column_index=None):
        """Yield the column blocks ``bounds[k]:bounds[k+1]`` in CSC order.

        Parameters
        ----------
        bounds : ndarray of int64
            Increasing column boundaries covering every column.
        indptr : ndarray of int64
            Offsets from :meth:`indptr`.
        value_dtype : numpy dtype
            dtype of the returned values.
        column_ids : ndarray of int64 or None
            Sparse layout: ``bounds`` and ``indptr`` number the non-empty
            columns, whose ids (the columns of the entries) these are.
        column_index : ndarray of int32 or None
            Sparse layout: :meth:`release_counts_as_index`, the position of
            each column among ``column_ids`` (else they are searched).

        Yields
        ------
        first, stop : int
            Column range of the block.
        rows : ndarray of int32, shape (nnz_block,)
        values : ndarray of value_dtype, shape (nnz_block,), or None
            None when every value of the block is 1.
        """
        cursors = [0] * len(self._runs)           # runs are read front to back
        n_columns = len(indptr) - 1
        for first, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            if column_ids is None:
                stop_key = stop
            else:
                stop_key = (int(column_ids[stop]) if stop < n_columns
                            else int(column_ids[-1]) + 1)
            base = indptr[first]
            column_start = indptr[first:stop] - base
            n_out = int(indptr[stop] - base)
            rows_out = np.empty(n_out, dtype=np.int32)
            values_out = None
            filled = np.zeros(stop - first, dtype=np.int64)
            for r, run in enumerate(self._runs):
                lo = cursors[r]
                hi = run.lower_bound(stop_key << 32, lo)
                cursors[r] = hi
                if lo == hi:
                    continue
                run_keys = run.keys(lo, hi)
                run_columns = run_keys >> 32
                if column_index is not None:
                    run_columns = column_index[run_columns]
                elif column_ids is not None:
                    run_columns = np.searchsorted(column_ids, run_columns)
                dest = _scatter_positions(run_columns, first, column_start, filled)
                del run_columns
                rows_out[dest] = run_keys.astype(np.int32)      # low 32 bits: the row
                if run.has_values:
                    if values_out is None:
                        values_out = np.ones(n_out, dtype=value_dtype)
                    values_out[dest] = run.values(lo, hi)
            if values_out is not None and np.all(values_out == 1):
                values_out = None
            yield first, stop, rows_out, values_out

    def close(self) -> None:
        """Drop the buffer and close the run files (so the files can go)."""
        self._runs = []
        self._keys_buffer = self._spare_keys = None
        self._values_buffer = self._spare_values = None
        self._n_buffered = 0
        for f in self._files:
            f.close()
        self._files = []

    # ----------------------------------------------------------- internals
    @property
    def _keys_file(self) -> Path:
        return self.run_dir / "keys.bin"

    @property
    def _values_file(self) -> Path:
        return self.run_dir / "values.bin"

    def _sorted_buffer(self):
        """Sort the buffered entries (radix sort into the spare arrays); empty the buffer."""
        n = self._n_buffered
        self._spare_keys = self._grown(self._spare_keys, len(self._keys_buffer), np.int64,
                                       keep=False)
        keys, spare_keys = self._keys_buffer[:n], self._spare_keys[:n]
        if self._run_has_values:
            self._spare_values = self._grown(self._spare_values, len(self._values_buffer),
                                             self._values_buffer.dtype, keep=False)
            values, spare_values = self._values_buffer[:n], self._spare_values[:n]
        else:
            values = spare_values = None
        keys, values = _sort_keys(keys, values, spare_keys, spare_values)
        self._n_buffered = 0
        self._run_has_values = False
        self._count_columns(keys)
        return keys, values

    def _count_columns(self, sorted_keys) -> None:
        """Add the entries of a sorted run to the column counts.

        With ``n_columns`` given: dense int32 counts of that width from the
        start (one kernel pass per run,
        :func:`~ultrafs.kernels.long_table.add_key_counts`).  Otherwise
        dense counts while the largest column is at most twice the entries
        seen plus :data:`~ultrafs.store.base.SPARSE_IDS_MIN_EMPTY` (so the
        array is bounded by the data, whatever the ids), and the non-empty
        columns with their counts (merged run by run with a stable sort:
        two sorted sequences, linear) while it is not; sparse counts turn
        dense again once enough entries are seen (kddb's first run holds
        13M entries for 30M columns, the whole file 560M).
        """
        self._n_counted += len(sorted_keys)
        needed = int(sorted_keys[-1] >> 32) + 1
        if self._n_columns is None:
            allowed = 2 * self._n_counted + SPARSE_IDS_MIN_EMPTY
            if self._sparse_counts is not None:
                columns, counts = self._sparse_counts
                top = max(needed, int(columns[-1]) + 1 if len(columns) else 0)
                if top <= allowed:
                    self._dense_counts = np.zeros(top, dtype=np.int32)
                    self._dense_counts[columns] = counts
                    self._sparse_counts = None
            elif needed > allowed:
                self._sparse_counts = self.used_columns()
                self._dense_counts = None
        if self._sparse_counts is None:
            if needed > len(self._dense_counts):
                size = needed if self._n_columns is not None else max(
                    needed, min(len(self._dense_counts) * 5 // 4,
                                2 * self._n_counted + SPARSE_IDS_MIN_EMPTY))
                grown = np.zeros(size, dtype=np.int32)
                grown[:len(self._dense_counts)] = self._dense_counts
                self._dense_counts = grown
            add_key_counts(sorted_keys, self._dense_counts)
            return
        step = 1 << 20
        parts_columns, parts_counts = [self._sparse_counts[0]], [self._sparse_counts[1]]
        for start in range(0, len(sorted_keys), step):
            columns = sorted_keys[start:start + step] >> 32
            heads = np.flatnonzero(np.concatenate(([True], columns[1:] != columns[:-1])))
            parts_columns.append(columns[heads])
            parts_counts.append(np.diff(np.append(heads, len(columns))))
        columns = np.concatenate(parts_columns)
        counts = np.concatenate(parts_counts)
        order = np.argsort(columns, kind="stable")      # merges the sorted parts
        columns, counts = columns[order], counts[order]
        heads = np.flatnonzero(np.concatenate(([True], columns[1:] != columns[:-1])))
        self._sparse_counts = (columns[heads].astype(np.int64),
                               np.add.reduceat(counts, heads).astype(np.int64))

    def _spill(self) -> None:
        keys, values = self._sorted_buffer()
        with open(self._keys_file, "ab") as f:
            keys.tofile(f)
        value_lo = -1
        if values is not None:
            with open(self._values_file, "ab") as f:
                values.tofile(f)
            value_lo = self._n_values_spilled
            self._n_values_spilled += len(values)
        self._spilled.append((self._n_keys_spilled, self._n_keys_spilled + len(keys),
                              value_lo, keys[::RUN_INDEX_STRIDE].copy()))
        self._n_keys_spilled += len(keys)
        self.n_spilled += 1


_NO_VALUES = np.zeros(0, dtype=np.float32)


def _sort_keys(keys, values, spare_keys, spare_values):
    """Sort keys added in row order (and their values), using the spare arrays.

    The radix sort on the column bits (:func:`~ultrafs.kernels.long_table.sort_keys_by_column`)
    sorts completely because rows arrive in order; should they not, a
    comparison sort takes over.  The inputs are overwritten; the result
    lies in them or in the spare arrays.
    """
    if values is None:
        values = spare_values = _NO_VALUES
    sorted_keys, sorted_values, ok = sort_keys_by_column(keys, values, spare_keys,
                                                         spare_values)
    if values is _NO_VALUES:
        values = None
    if ok:
        return sorted_keys, (None if values is None else sorted_values)
    if values is None:                        # not reached by ingest or kddb_like
        sorted_keys.sort()
        return sorted_keys, None
    order = np.argsort(sorted_keys)
    return sorted_keys[order], sorted_values[order]


#: every RUN_INDEX_STRIDE-th key of a spilled run is kept in memory
RUN_INDEX_STRIDE = 4096


def _read_array(f, dtype, start: int, count: int) -> np.ndarray:
    """``count`` items of ``dtype`` from item ``start`` of an unbuffered file."""
    out = np.empty(count, dtype=dtype)
    view = memoryview(out).cast("B")
    f.seek(start * out.itemsize)
    done = 0
    while done < len(view):
        got = f.readinto(view[done:])
        if not got:
            raise OSError(f"{f.name}: spilled run truncated")
        done += got
    return out


class _MemoryRun:
    """The last run of a transpose, kept in memory."""

    def __init__(self, keys, values):
        self._keys, self._values = keys, values
        self.has_values = values is not None

    def lower_bound(self, target: int, lo: int) -> int:
        """First position ``>= lo`` whose key is ``>= target``."""
        return lo + int(np.searchsorted(self._keys[lo:], target))

    def keys(self, lo, hi):
        return self._keys[lo:hi]

    def values(self, lo, hi):
        return self._values[lo:hi]


class _SpilledRun:
    """A run in the spill files, read a slice at a time."""

    def __init__(self, keys_file, key_lo, key_hi, values_file, value_lo, value_dtype, index):
        self._keys_file, self._key_lo, self._n = keys_file, key_lo, key_hi - key_lo
        self._values_file, self._value_lo = values_file, value_lo
        self._value_dtype = value_dtype
        self._index = index                    # keys[0::RUN_INDEX_STRIDE] of the run
        self.has_values = value_lo >= 0

    def lower_bound(self, target: int, lo: int) -> int:
        """First position ``>= lo`` whose key is ``>= target``.

        The index brackets the answer within one stride; only that stride
        is read.
        """
        j = int(np.searchsorted(self._index, target))
        # keys[(j - 1) * S] < target <= keys[j * S] (where those exist)
        low = 0 if j == 0 else (j - 1) * RUN_INDEX_STRIDE + 1
        high = min(j * RUN_INDEX_STRIDE, self._n)
        if lo >= high:
            return lo
        start = max(lo, low)
        piece = self.keys(start, high)
        return start + int(np.searchsorted(piece, target))

    def keys(self, lo, hi):
        return _read_array(self._keys_file, np.int64, self._key_lo + lo, hi - lo)

    def values(self, lo, hi):
        return _read_array(self._values_file, self._value_dtype, self._value_lo + lo, hi - lo)


def _scatter_positions(columns, first, column_start, filled) -> np.ndarray:
    """Output positions of one run's sorted entries within a column block.

    Parameters
    ----------
    columns : ndarray of int64, shape (m,)
        Sorted column numbers of the run's entries in the block.
    first : int
        First column of the block.
    column_start : ndarray of int64
        Offset of each block column in the output.
    filled : ndarray of int64
        Entries already placed per block column (updated in place).
    """
    local = columns - first
    is_head = np.empty(len(local), dtype=bool)
    is_head[0] = True
    np.not_equal(local[1:], local[:-1], out=is_head[1:])
    heads = np.flatnonzero(is_head)
    counts = np.empty(len(heads), dtype=np.int64)
    np.subtract(heads[1:], heads[:-1], out=counts[:-1])
    counts[-1] = len(local) - heads[-1]
    head_columns = local[heads]
    dest = np.repeat(column_start[head_columns] + filled[head_columns] - heads, counts)
    dest += np.arange(len(local), dtype=np.int64)
    filled[head_columns] += counts
    return dest
