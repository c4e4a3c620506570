"""Group scores of the worst-case analysis: ``s_G = ||c_G||²`` (FGM eq. 27).

A group's score is the sum over its member columns of their squared
correlations with the dual weights, ``s_G = Σ_{j ∈ G} Σ_c C[j, c]²`` with
``C[j, c] = Σ_i A_ic X_ij`` (one class column for binary problems).  The
kernels take the members' correlations already summed (``column_sums*`` of
:mod:`ultrafs.kernels.scoring`), so a group's score is summed in member
order whatever block its columns were read in: bit-identical for any block
size.

Tree-structured groups (Definition 1): the groups are the nodes of a
forest, a node's group being the features at the leaves of its subtree;
with the leaves numbered in depth-first order a subtree's leaves are one
range, and a node's score is a difference of prefix sums of the leaf
scores.  :func:`tree_topk` finds the k best nodes best-first: a max-heap of
frontier nodes, popped in rank order; a node is never better than its
parent (a subset's score is smaller or equal), so the first k nodes popped
that are not excluded are the k best of the whole forest, and every
subtree under a node that ranks below the running k-th best is never
evaluated (Remark 2).  Node keys are preorder numbers, so a parent's key
is smaller than its descendants': ties (a child scoring as much as its
parent) rank the parent first in both the pruned and the exhaustive order.
"""

import numpy as np
from numba import njit

from .scoring import is_excluded, ranks_before, topk_scores

__all__ = ["group_scores", "group_topk", "tree_node_scores", "tree_topk",
           "tree_topk_exhaustive"]


@njit(cache=True, nogil=True)
def group_scores(sums, group_ptr, member_pos, first_group, stop_group):
    """Scores of groups ``first_group .. stop_group - 1``.

    Parameters
    ----------
    sums : float64 array, shape (n_columns, K)
        Correlations of the columns read for these groups (K = 1 binary).
    group_ptr : int64 array, shape (p + 1,)
        Group g's members are augmented positions ``group_ptr[g] ..
        group_ptr[g + 1] - 1``.
    member_pos : int64 array, shape (group_ptr[stop] - group_ptr[first],)
        Row of ``sums`` of each member position of these groups.
    first_group, stop_group : int

    Returns
    -------
    scores : float64 array, shape (stop_group - first_group,)
    """
    n_classes = sums.shape[1]
    base = group_ptr[first_group]
    scores = np.zeros(stop_group - first_group, dtype=np.float64)
    for g in range(first_group, stop_group):
        s = 0.0
        for a in range(group_ptr[g], group_ptr[g + 1]):
            row = member_pos[a - base]
            for c in range(n_classes):
                v = sums[row, c]
                s += v * v
        scores[g - first_group] = s
    return scores


@njit(cache=True, nogil=True)
def group_topk(sums, group_ptr, member_pos, first_group, stop_group, excluded, k):
    """The ``k`` best groups of ``first_group .. stop_group - 1``.

    Parameters
    ----------
    sums, group_ptr, member_pos, first_group, stop_group
        As :func:`group_scores`.
    excluded : int64 array, sorted
        Group numbers never returned.
    k : int

    Returns
    -------
    groups : int64 array, shape (<= k,)
    scores : float64 array
        Ranked by score decreasing, then group number increasing; only
        positive scores.
    """
    return topk_scores(group_scores(sums, group_ptr, member_pos, first_group,
                                    stop_group), first_group, excluded, k)


@njit(cache=True, nogil=True, inline="always")
def _node_score(leaf_scores, lo, hi):
    s = 0.0
    for j in range(lo, hi):
        s += leaf_scores[j]
    return s


@njit(cache=True, nogil=True)
def tree_node_scores(leaf_scores, leaf_lo, leaf_hi):
    """Every node's score from its leaves' (exhaustive; for tests and
    ``prune=False``).

    Parameters
    ----------
    leaf_scores : float64 array, shape (n_leaves,)
        ``Σ_c C[j, c]²`` of each leaf feature, in depth-first leaf order.
    leaf_lo, leaf_hi : int64 arrays, shape (n_nodes,)
        Node v's leaves are ``leaf_lo[v] .. leaf_hi[v] - 1`` (preorder v).

    Returns
    -------
    scores : float64 array, shape (n_nodes,)
        Each summed over its leaves in order (no prefix-sum cancellation).
    """
    n = leaf_lo.shape[0]
    scores = np.zeros(n, dtype=np.float64)
    for v in range(n):
        scores[v] = _node_score(leaf_scores, leaf_lo[v], leaf_hi[v])
    return scores


@njit(cache=True, nogil=True)
def _frontier_push(f_scores, f_keys, size, score, key):
    # max-heap on rank (the root ranks first)
    f_scores[size] = score
    f_keys[size] = key
    pos = size
    while pos > 0:
        parent = (pos - 1) // 2
        if ranks_before(f_scores[pos], f_keys[pos], f_scores[parent], f_keys[parent]):
            f_scores[pos], f_scores[parent] = f_scores[parent], f_scores[pos]
            f_keys[pos], f_keys[parent] = f_keys[parent], f_keys[pos]
            pos = parent
        else:
            break
    return size + 1


@njit(cache=True, nogil=True)
def _frontier_pop(f_scores, f_keys, size):
    size -= 1
    f_scores[0] = f_scores[size]
    f_keys[0] = f_keys[size]
    pos = 0
    while True:
        left = 2 * pos + 1
        if left >= size:
            break
        best = left
        right = left + 1
        if right < size and ranks_before(f_scores[right], f_keys[right],
                                          f_scores[best], f_keys[best]):
            best = right
        if ranks_before(f_scores[best], f_keys[best], f_scores[pos], f_keys[pos]):
            f_scores[pos], f_scores[best] = f_scores[best], f_scores[pos]
            f_keys[pos], f_keys[best] = f_keys[best], f_keys[pos]
            pos = best
        else:
            break
    return size


@njit(cache=True, nogil=True)
def tree_topk(leaf_scores, leaf_lo, leaf_hi, child_ptr, children, roots, excluded, k):
    """The ``k`` best nodes of a forest, best-first with subtree pruning.

    Parameters
    ----------
    leaf_scores, leaf_lo, leaf_hi
        As :func:`tree_node_scores`.
    child_ptr : int64 array, shape (n_nodes + 1,)
    children : int64 array
        Node v's children are ``children[child_ptr[v]:child_ptr[v + 1]]``.
    roots : int64 array
    excluded : int64 array, sorted
        Nodes never returned (their subtrees are still searched).
    k : int

    Returns
    -------
    nodes : int64 array, shape (<= k,)
    scores : float64 array
        Ranked by score decreasing then node increasing; positive only.
    evaluated : int
        Nodes whose score was computed.
    """
    n = leaf_lo.shape[0]
    f_scores = np.empty(n, dtype=np.float64)
    f_keys = np.empty(n, dtype=np.int64)
    size = 0
    evaluated = 0
    for r in roots:
        s = _node_score(leaf_scores, leaf_lo[r], leaf_hi[r])
        evaluated += 1
        if s > 0.0:
            size = _frontier_push(f_scores, f_keys, size, s, r)
    out_scores = np.empty(k, dtype=np.float64)
    out_keys = np.empty(k, dtype=np.int64)
    found = 0
    while size > 0 and found < k:
        s = f_scores[0]
        v = f_keys[0]
        size = _frontier_pop(f_scores, f_keys, size)
        if not is_excluded(excluded, v):
            out_scores[found] = s
            out_keys[found] = v
            found += 1
            if found == k:
                break
        for c in children[child_ptr[v]:child_ptr[v + 1]]:
            cs = _node_score(leaf_scores, leaf_lo[c], leaf_hi[c])
            evaluated += 1
            if cs > 0.0:
                size = _frontier_push(f_scores, f_keys, size, cs, c)
    return out_keys[:found].copy(), out_scores[:found].copy(), evaluated


@njit(cache=True, nogil=True)
def tree_topk_exhaustive(leaf_scores, leaf_lo, leaf_hi, excluded, k):
    """:func:`tree_topk` without pruning: every node scored, bounded heap."""
    scores = tree_node_scores(leaf_scores, leaf_lo, leaf_hi)
    keys, best = topk_scores(scores, 0, excluded, k)
    return keys, best, scores.shape[0]
