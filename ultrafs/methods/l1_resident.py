"""The ℓ1 path's decoded copy of a store, kept in memory under a budget.

The path reads its store many times: two statistics passes, the kept
columns, and, at every λ, the columns its KKT check cannot certify by a
bound (:mod:`ultrafs.methods.l1_kkt`).  When the decoded CSC arrays of the
store fit :data:`DEFAULT_MEMORY_BUDGET` (or the budget given), the path
decodes the store once, block by block, into one set of arrays and runs
everything on that copy: an
:class:`~ultrafs.store.memory.InMemoryStore` with the same columns, values
and labels, so every statistic and every model is the same bits as from
the store itself (the passes' sums do not depend on the blocks).
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_MEMORY_BUDGET", "decoded_bytes", "resident_store"]

#: bytes the decoded copy may take (offsets, rows, values): 1 GiB
DEFAULT_MEMORY_BUDGET = 1 << 30


def decoded_bytes(store) -> int:
    """Bytes of the decoded CSC copy: ``8 (p + 1) + nnz (4 + itemsize)``.

    Values are counted even for a binary store (the copy writes its ones,
    in the store's dtype).
    """
    itemsize = np.dtype(store.dtype).itemsize
    return 8 * (int(store.n_features) + 1) + int(store.nnz) * (4 + itemsize)


def resident_store(store, y, budget=DEFAULT_MEMORY_BUDGET):
    """The store in memory, or None when its decoded copy exceeds ``budget``.

    Parameters
    ----------
    store : ColumnStore
    y : float64 array of ±1, shape (n,)
        The labels the copy carries.
    budget : int or None
        Bytes the copy may take (:func:`decoded_bytes`); None or 0: never
        copy.  An :class:`~ultrafs.store.memory.InMemoryStore` is returned
        as it is, whatever the budget.

    Returns
    -------
    InMemoryStore or None
        Same column numbers, rows, values and labels as ``store``.
    """
    from ultrafs.store.memory import InMemoryStore

    if isinstance(store, InMemoryStore):
        return store
    if not budget or decoded_bytes(store) > int(budget):
        return None
    p, nnz = int(store.n_features), int(store.nnz)
    indptr = np.zeros(p + 1, dtype=np.int64)
    indices = np.empty(nnz, dtype=np.int32)
    data = np.empty(nnz, dtype=store.dtype)
    bounds = store.block_bounds(None)
    at = 0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo, hi = int(lo), int(hi)
        if hi <= lo:
            continue
        # the block lives in the reading thread's buffers until its next read
        block = store.read_range_transient(lo, hi)
        count = block.nnz
        indices[at:at + count] = block.indices
        if block.data is None:
            data[at:at + count] = 1
        else:
            data[at:at + count] = block.data
        indptr[lo + 1:hi + 1] = at + block.indptr[1:]
        at += count
    if at != nnz:
        raise ValueError(f"the store holds {at} entries, its metadata says {nnz}")
    return InMemoryStore.from_csc_arrays(indptr, indices, data, store.n_samples,
                                         np.asarray(y, dtype=np.float64),
                                         np.array([-1.0, 1.0]))
