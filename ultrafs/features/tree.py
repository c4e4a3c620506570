"""Tree-structured groups (paper Definition 1, §4.3, Remark 2).

The tree is a parent list over nodes ``0 .. P - 1``: nodes ``0 .. m - 1``
are the store's columns (leaves; a column is never a parent), nodes
``m .. P - 1`` are inner nodes; ``parent[v] = -1`` for a root (a forest is
allowed).  Node v's group is the set of columns at the leaves of its
subtree, so groups are nested along the tree and disjoint across it
(Definition 1).  Every node is a candidate; a selected node's columns enter
as virtual, augmented columns (§2.3), never written.

One pass streams the store's columns and keeps each column's score
``Σ_c C[j, c]²`` (m floats: the tree itself holds O(P) integers); the
nodes are then searched best-first with Remark 2's pruning
(:func:`ultrafs.kernels.group_scores.tree_topk`): a subtree whose root
ranks below the running B-th best is never evaluated.  The result equals
the exhaustive search's (``prune=False``) for any tree; the number of
nodes evaluated is reported per pass (``nodes_evaluated``).

Keys: nodes are numbered in preorder (a parent before its children, so a
parent's number is smaller); node v's columns are the augmented positions
``offset[v] .. offset[v + 1] - 1``.  Model files list ``[node id, feature
id]`` with the user's node numbering.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.features.base import FeatureSpace, register_feature_space
from ultrafs.features.groups import (GroupFeatures, column_correlations,
                                     expand_groups, sorted_unique)
from ultrafs.kernels.group_scores import tree_topk, tree_topk_exhaustive
from ultrafs.scoring.topk import TopK
from ultrafs.store.base import ColumnBlock

__all__ = ["Tree", "TreeFeatures"]


class Tree:
    """A forest over the store's columns, in the layout the search needs.

    Parameters
    ----------
    parent : int array, shape (P,)
        ``parent[v]`` (user numbering), -1 for roots; ``P >= m``.
    n_columns : int
        m: nodes ``0 .. m - 1`` are the columns.

    Raises
    ------
    ParameterError
        One line: too few nodes, a parent out of range, a column with
        children, a cycle.
    """

    def __init__(self, parent, n_columns, what="tree"):
        parent = np.asarray(parent)
        if parent.ndim != 1 or parent.dtype.kind not in "iu":
            if parent.ndim == 1 and parent.dtype.kind == "f" \
                    and np.all(np.isfinite(parent)) and np.all(parent == np.round(parent)):
                parent = parent.astype(np.int64)
            else:
                raise ParameterError(f"{what} must be one integer parent per node")
        parent = parent.astype(np.int64)
        m, P = int(n_columns), len(parent)
        if P < m:
            raise ParameterError(f"{what} has {P} nodes; the data has {m} "
                                 f"features, which must be nodes 0..{m - 1}")
        bad = (parent < -1) | (parent >= P)
        if np.any(bad):
            v = int(np.flatnonzero(bad)[0])
            raise ParameterError(f"{what}: node {v} has parent {int(parent[v])}, "
                                 f"not a node (0..{P - 1}) or -1")
        if np.any((parent >= 0) & (parent < m)):
            v = int(np.flatnonzero((parent >= 0) & (parent < m))[0])
            raise ParameterError(f"{what}: node {v}'s parent {int(parent[v])} is a "
                                 f"feature (nodes 0..{m - 1} are leaves)")
        self.n_nodes = P
        self.n_columns = m
        self.parent = parent
        # children lists (by user node number), then an iterative preorder
        order = np.argsort(parent, kind="stable")
        sorted_parent = parent[order]
        first_child = np.searchsorted(sorted_parent, np.arange(-1, P + 1), side="left")
        roots = order[:first_child[1]]
        preorder = np.empty(P, dtype=np.int64)
        leaf_lo = np.zeros(P, dtype=np.int64)
        leaf_hi = np.zeros(P, dtype=np.int64)
        number = np.full(P, -1, dtype=np.int64)
        leaf_columns = []
        count = 0
        stack = [(int(r), False) for r in roots[::-1]]
        while stack:
            v, done = stack.pop()
            if done:
                leaf_hi[number[v]] = len(leaf_columns)
                continue
            number[v] = count
            preorder[count] = v
            leaf_lo[count] = len(leaf_columns)
            count += 1
            if v < m:
                leaf_columns.append(v)
                leaf_hi[number[v]] = len(leaf_columns)
                continue
            stack.append((v, True))
            kids = order[first_child[v + 1]:first_child[v + 2]]
            stack.extend((int(c), False) for c in kids[::-1])
        if count != P:
            v = int(np.flatnonzero(number < 0)[0])
            raise ParameterError(f"{what}: node {v} is on a cycle (not under a root)")
        self.node_of = preorder                         # preorder number -> user id
        self.number = number                            # user id -> preorder number
        self.leaf_lo, self.leaf_hi = leaf_lo, leaf_hi   # by preorder number
        self.leaf_columns = np.asarray(leaf_columns, dtype=np.int64)
        # children by preorder number (a parent's children are numbered in
        # increasing user order: the stack pushed them reversed)
        p_of = np.where(parent[preorder] >= 0, number[np.maximum(parent[preorder], 0)], -1)
        by_parent = np.argsort(p_of, kind="stable")
        starts = np.searchsorted(p_of[by_parent], np.arange(-1, P + 1), side="left")
        self.roots = by_parent[starts[0]:starts[1]].astype(np.int64)
        self.child_ptr = (starts[1:] - starts[1]).astype(np.int64)
        self.children = by_parent[starts[1]:].astype(np.int64)
        sizes = leaf_hi - leaf_lo
        self.offset = np.zeros(P + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.offset[1:])

    def digest(self) -> str:
        """SHA-256 (hex) of the parent list (as given): recorded in model and
        checkpoint parameters."""
        from ultrafs.features.groups import arrays_digest

        return arrays_digest(self.parent)

    def node_of_keys(self, keys) -> np.ndarray:
        """Preorder number of the node of each augmented key."""
        return np.searchsorted(self.offset, np.asarray(keys, dtype=np.int64),
                               side="right") - 1

    def columns_of_keys(self, keys) -> np.ndarray:
        """Store column of each augmented key."""
        keys = np.asarray(keys, dtype=np.int64)
        v = self.node_of_keys(keys)
        return self.leaf_columns[self.leaf_lo[v] + keys - self.offset[v]]


def _column_scores(block, store, weights):
    """Task: ``(start, Σ_c C[j, c]²)`` of one column range."""
    start, stop = block
    cols = store.read_range_transient(start, stop)
    sums = column_correlations(cols, weights)
    return [(start, np.einsum("jc,jc->j", sums, sums)
             if sums.shape[1] > 1 else sums[:, 0] * sums[:, 0], cols.nnz)]


def _concatenate(parts):
    return sorted((item for part in parts for item in part), key=lambda t: t[0])


@register_feature_space
class TreeFeatures(GroupFeatures):
    """Candidates = the nodes of a tree over the store's columns.

    Parameters
    ----------
    store : ColumnStore
    tree : Tree, int array or None
        The parent list (see the module docstring); None builds the space
        of a model file (prediction only).
    prune : bool
        Remark 2's pruning (default); False scores every node (the same
        selection; for tests and benchmarks).  Not recorded in models.
    """

    kind = "tree"

    def __init__(self, store, tree=None, prune=True):
        FeatureSpace.__init__(self, store)
        self.groups = None
        self.prune = bool(prune)
        self.tree = None if tree is None else (
            tree if isinstance(tree, Tree) else Tree(tree, store.n_features))
        if self.tree is not None and self.tree.n_columns != store.n_features:
            raise ParameterError(f"the tree was built for {self.tree.n_columns} "
                                 f"features; the data has {store.n_features}")

    def structure_digest(self):
        return None if self.tree is None else self.tree.digest()

    def _require_tree(self):
        if self.tree is None:
            raise ParameterError("this tree feature space was rebuilt from a "
                                 "model file: it has no tree to search")
        return self.tree

    @property
    def n_candidates(self) -> int:
        """Number of nodes."""
        return self._require_tree().n_nodes

    @property
    def n_keys(self) -> int:
        return int(self._require_tree().offset[-1])

    def units_of(self, keys) -> np.ndarray:
        return self._require_tree().node_of_keys(keys)

    def unit_ids(self, units) -> list:
        return [int(v) for v in self._require_tree().node_of[np.asarray(units,
                                                                        dtype=np.int64)]]

    def feature_ids(self, keys) -> list:
        """``[node id, store feature id]`` of each augmented key."""
        tree = self._require_tree()
        keys = np.asarray(keys, dtype=np.int64)
        nodes = tree.node_of[tree.node_of_keys(keys)]
        ids = self.store.feature_ids(tree.columns_of_keys(keys))
        return [[int(v), int(j)] for v, j in zip(nodes, ids)]

    def keys_of(self, feature_ids) -> np.ndarray:
        tree = self._require_tree()
        pairs = np.asarray(feature_ids, dtype=np.int64).reshape(-1, 2)
        columns = self.store.columns_of(pairs[:, 1])
        keys = np.full(len(pairs), -1, dtype=np.int64)
        for t, (node, column) in enumerate(zip(pairs[:, 0], columns)):
            if not 0 <= node < tree.n_nodes:
                continue
            v = tree.number[node]
            leaves = tree.leaf_columns[tree.leaf_lo[v]:tree.leaf_hi[v]]
            hit = np.flatnonzero(leaves == column)
            if len(hit):
                keys[t] = tree.offset[v] + hit[0]
        return keys

    def find_candidates(self, weights, k, excluded, run):
        """The ``k`` best nodes by ``||c_G||²``, best-first with pruning.

        Counters: ``nnz``, ``nodes_evaluated`` and ``nodes`` (the tree's).
        """
        tree = self._require_tree()
        blocks = self.candidate_blocks(run.block_size)
        parts = run(blocks, _column_scores, _concatenate,
                    shared={"store": self.store, "weights": weights}) if blocks else []
        column_scores = np.zeros(self.store.n_features, dtype=np.float64)
        nnz = 0
        for start, scores, block_nnz in parts:
            column_scores[start:start + len(scores)] = scores
            nnz += int(block_nnz)
        leaf_scores = column_scores[tree.leaf_columns]
        excluded_nodes = sorted_unique(tree.node_of_keys(excluded))
        if self.prune:
            nodes, scores, evaluated = tree_topk(
                leaf_scores, tree.leaf_lo, tree.leaf_hi, tree.child_ptr,
                tree.children, tree.roots, excluded_nodes, int(k))
        else:
            nodes, scores, evaluated = tree_topk_exhaustive(
                leaf_scores, tree.leaf_lo, tree.leaf_hi, excluded_nodes, int(k))
        best = TopK(nodes, scores, {"nnz": nnz, "nodes_evaluated": int(evaluated),
                                    "nodes": tree.n_nodes})
        return expand_groups(best, tree.offset)

    def materialize(self, keys, dtype=np.float64, payload=None) -> ColumnBlock:
        cols = self.store.read_columns(self._require_tree().columns_of_keys(keys))
        return ColumnBlock(-1, cols.indptr, cols.indices, cols.values(dtype))
