"""Group and tree feature spaces against the explicitly augmented matrix.

The contract's scoring tests rank single columns; a group space returns
the columns of the best *groups*, so :class:`GroupContract` replaces them
with a reference that scores every group of the dense augmented matrix
``[X_G1, X_G2, ...]`` (``s_G = Σ_{j∈G} (Σ_i a_i x_ij)²``) and expands the
k best groups to their keys.
"""

from types import SimpleNamespace

import json

import numpy as np
import pytest
import scipy.sparse as sp

from feature_space_contract import FeatureSpaceContract, make_data
from ultrafs.api import select
from ultrafs.errors import ParameterError
from ultrafs.features import (FEATURE_SPACES, GroupFeatures, TreeFeatures,
                              feature_space_from_spec, make_feature_space)
from ultrafs.features.groups import GroupMap
from ultrafs.features.tree import Tree
from ultrafs.kernels.group_scores import tree_node_scores
from ultrafs.methods.fgm import fit_fgm
from ultrafs.model import Model
from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.store import InMemoryStore
from ultrafs.store.writers.zarr_writer import write_store

ID_OFFSET = 1


def ranked_groups(E, units, weights, k, excluded_keys=()):
    """Keys (augmented columns) and scores of the k best groups, dense."""
    # one product per column (not one matrix product: BLAS may round two
    # copies of a column differently, and copies tie in trees)
    sums = np.array([E[:, j] @ weights for j in range(E.shape[1])])
    column_scores = sums ** 2 if sums.ndim == 1 else np.sum(sums ** 2, axis=1)
    n_units = int(units.max()) + 1 if len(units) else 0
    scores = np.bincount(units, column_scores, minlength=n_units)
    keys = np.arange(len(units))
    banned = set(units[np.isin(keys, np.asarray(excluded_keys, dtype=np.int64))].tolist())
    order = [u for u in np.lexsort((np.arange(n_units), -scores))
             if scores[u] > 0 and u not in banned][:k]
    out_keys = np.concatenate([keys[units == u] for u in order]) if order else \
        np.zeros(0, np.int64)
    out_scores = np.concatenate([np.full(np.sum(units == u), scores[u]) for u in order]) \
        if order else np.zeros(0)
    return out_keys, out_scores


class GroupContract(FeatureSpaceContract):
    """The contract, with group-level scoring references."""

    rtol = 1e-9

    def units(self, space, n_keys):
        return space.units_of(np.arange(n_keys))

    def test_sizes(self, case):
        assert case.space.n_samples == case.X.shape[0]
        assert case.space.n_keys == len(case.keys)
        units = case.space.units_of(case.keys)
        assert case.space.n_candidates >= len(np.unique(units))

    @pytest.mark.parametrize("k", [1, 3, 10_000])
    def test_find_candidates_matches_dense(self, case, k):
        units = case.space.units_of(case.keys)
        for excluded in ([], self._excluded(case)):
            cand, stats = self.run(case, case.weights, k, excluded)
            keys, scores = ranked_groups(case.E, units, case.weights, k, excluded)
            np.testing.assert_array_equal(cand.keys, keys)
            np.testing.assert_allclose(cand.scores, scores, rtol=self.rtol, atol=0)
            assert stats.n_candidates == case.space.n_candidates

    @pytest.mark.parametrize("k", [1, 3, 10_000])
    def test_find_candidates_multiclass(self, case, k):
        units = case.space.units_of(case.keys)
        excluded = self._excluded(case)
        cand, _ = self.run(case, case.weights2, k, excluded)
        keys, scores = ranked_groups(case.E, units, case.weights2, k, excluded)
        np.testing.assert_array_equal(cand.keys, keys)
        np.testing.assert_allclose(cand.scores, scores, rtol=self.rtol, atol=0)

    def test_spec_round_trip_through_the_registry(self, case):
        """A model's spec rebuilds a space that predicts (not one that searches)."""
        space = case.space
        spec = json.loads(json.dumps(space.spec()))
        clone = feature_space_from_spec(space.store, spec)
        assert type(clone) is type(space) and clone.spec() == space.spec()
        ids = space.feature_ids(case.keys)
        np.testing.assert_array_equal(
            clone.materialize_ids(ids).values(), space.materialize(case.keys).values())
        with pytest.raises(ParameterError, match="rebuilt from a model file"):
            worst_case_analysis(clone, case.weights, 3)

    @staticmethod
    def _excluded(case):
        """Keys of the best group and one key of the worst positive one."""
        units = case.space.units_of(case.keys)
        keys, _ = ranked_groups(case.E, units, case.weights, 10**6)
        if not len(keys):
            return []
        best = keys[units[keys] == units[keys[0]]]
        return np.unique(np.concatenate([best, keys[-1:]]))


def _group_expand(X, space):
    groups = space.groups
    members = groups.members
    E = X[:, members]
    keys = np.arange(len(members), dtype=np.int64)
    labels = groups.labels[groups.group_of(keys)]
    ids = [[int(g), int(j) + ID_OFFSET] for g, j in zip(labels, members)]
    return E, keys, ids


class TestDisjointGroups(GroupContract):
    """Groups of 3 consecutive columns, labels 10, 20, ...; one column ungrouped."""

    data_kinds = ("valued", "signed")

    def make_space(self, X, y, *, dtype, tmp_path):
        m = X.shape[1]
        labels = 10 * (np.arange(m) // 3 + 1)
        labels[4] = -1
        return GroupFeatures(InMemoryStore(X, y, dtype=dtype, id_offset=ID_OFFSET), labels)

    def expand(self, X, space):
        return _group_expand(X, space)

    def absent_ids(self, space):
        m = space.store.n_features
        return [[10, m + ID_OFFSET], [20, m + 9]]


class TestOverlappingGroupsZarr(GroupContract):
    """Overlapping groups, an empty group (its only feature absent), binary Zarr data."""

    data_kinds = ("binary", "valued")

    def make_space(self, X, y, *, dtype, tmp_path):
        store = write_store(tmp_path / "g.zarr", X, y, dtype=dtype, id_offset=ID_OFFSET,
                            block_nnz=7, command="test")
        m = X.shape[1]
        mapping = {0: [1, 2, 3, 4], 1: [3, 4, 5, 6, 7], 2: list(range(1, m + 1)),
                   5: [m + 50], 7: [2, 9]}
        return GroupFeatures(store, mapping)

    def expand(self, X, space):
        return _group_expand(X, space)

    def absent_ids(self, space):
        return [[0, space.store.n_features + ID_OFFSET]]


def random_parent(m, n_inner, rng):
    """A random forest: inner nodes m.. under earlier inner nodes; columns
    under inner nodes or roots themselves."""
    parent = np.full(m + n_inner, -1, dtype=np.int64)
    for i in range(1, n_inner):
        parent[m + i] = m + rng.integers(0, i) if rng.random() < 0.85 else -1
    parent[:m] = m + rng.integers(0, n_inner, size=m)
    parent[:m][rng.random(m) < 0.15] = -1
    return parent


class TreeContract(GroupContract):
    prune = True
    data_kinds = ("valued", "binary")

    def make_space(self, X, y, *, dtype, tmp_path):
        parent = random_parent(X.shape[1], 7, np.random.default_rng(5))
        return TreeFeatures(InMemoryStore(X, y, dtype=dtype, id_offset=ID_OFFSET),
                            parent, prune=self.prune)

    def expand(self, X, space):
        tree = space.tree
        keys = np.arange(tree.offset[-1], dtype=np.int64)
        columns = tree.columns_of_keys(keys)
        nodes = tree.node_of[tree.node_of_keys(keys)]
        ids = [[int(v), int(j) + ID_OFFSET] for v, j in zip(nodes, columns)]
        return X[:, columns], keys, ids

    def absent_ids(self, space):
        return [[0, space.store.n_features + ID_OFFSET]]


class TestTreePruned(TreeContract):
    prune = True


class TestTreeExhaustive(TreeContract):
    prune = False


# ----------------------------------------------------------------- trees
@pytest.mark.parametrize("seed", range(12))
def test_tree_pruning_equals_exhaustive_and_dense(seed):
    """Random forests (deep, wide, with empty inner nodes and zero columns):
    the pruned best-first search returns the brute-force top k, and
    evaluates no more nodes than there are."""
    rng = np.random.default_rng(seed)
    n, m = 30, int(rng.integers(5, 60))
    X = rng.standard_normal((n, m)) * (rng.random((n, m)) < 0.4)
    X[:, rng.integers(0, m)] = 0.0
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    store = InMemoryStore(X, y)
    parent = random_parent(m, int(rng.integers(1, 40)), rng)
    pruned, full = TreeFeatures(store, parent), TreeFeatures(store, parent, prune=False)
    tree = pruned.tree
    a = rng.standard_normal(n)
    leaf = np.array([float(np.dot(a, X[:, c])) ** 2 for c in tree.leaf_columns])
    node_scores = tree_node_scores(leaf, tree.leaf_lo, tree.leaf_hi)
    for k in (1, 2, 5, 1000):
        c1, s1 = worst_case_analysis(pruned, a, k)
        c2, s2 = worst_case_analysis(full, a, k)
        np.testing.assert_array_equal(c1.keys, c2.keys)
        np.testing.assert_array_equal(c1.scores, c2.scores)
        order = [v for v in np.lexsort((np.arange(tree.n_nodes), -node_scores))
                 if node_scores[v] > 0][:k]
        assert list(np.unique(pruned.units_of(c1.keys))) == sorted(order)
        assert s1.details["nodes_evaluated"] <= s2.details["nodes_evaluated"] == tree.n_nodes


def test_tree_pruning_skips_subtrees():
    """A balanced binary tree over 1,024 columns with the signal in one leaf
    pair: the top-1 search evaluates a path, not the tree."""
    rng = np.random.default_rng(0)
    n, m = 50, 1024
    X = rng.standard_normal((n, m)) * 1e-3
    X[:, 7] = rng.standard_normal(n)
    parent = np.full(2 * m - 1, -1, dtype=np.int64)
    level, nxt = list(range(m)), m
    while len(level) > 1:
        up = []
        for i in range(0, len(level), 2):
            parent[level[i]] = parent[level[i + 1]] = nxt
            up.append(nxt)
            nxt += 1
        level = up
    space = TreeFeatures(InMemoryStore(X, np.sign(X[:, 7])), parent)
    _, stats = worst_case_analysis(space, X[:, 7].copy(), 3)
    assert stats.details["nodes_evaluated"] < 40
    assert stats.details["nodes"] == 2 * m - 1


@pytest.mark.parametrize("parent, m, message", [
    ([0, -1, -1], 1, "node 0's parent 0 is a feature"),
    ([2, 2, 3, 2], 1, "cycle"),
    ([5, -1], 1, "not a node"),
    ([-1], 3, "has 1 nodes; the data has 3 features"),
    ([[1, 2]], 1, "one integer parent per node"),
    (np.array([0.5, -1]), 1, "one integer parent per node"),
])
def test_bad_trees_are_refused(parent, m, message):
    with pytest.raises(ParameterError, match=message):
        Tree(parent, m)


# --------------------------------------------------------------- groups
def test_group_map_forms_agree():
    m = 6
    labels = np.array([3, 3, -1, 1, 1, 3])
    a = GroupMap.from_column_labels(labels, m)
    store = InMemoryStore(np.eye(6), np.array([1.0, -1, 1, -1, 1, -1]))
    b = GroupFeatures(store, {3: [0, 1, 5], 1: [3, 4]}).groups
    c = GroupFeatures(store, (np.array([5, 0, 1, 3, 4, 4]), np.array([3, 3, 3, 1, 1, 1]))).groups
    for other in (b, c):
        np.testing.assert_array_equal(a.labels, other.labels)
        np.testing.assert_array_equal(a.group_ptr, other.group_ptr)
        np.testing.assert_array_equal(a.members, other.members)
    np.testing.assert_array_equal(a.labels, [1, 3])
    np.testing.assert_array_equal(a.members, [3, 4, 0, 1, 5])


@pytest.mark.parametrize("groups, message", [
    (np.zeros(5, dtype=np.int64), "one group id per column"),
    (np.full(6, 0.5), "integer group ids"),
    (np.full(6, -1), "no group has a feature"),
    ({-2: [0]}, "group ids must be >= 0"),
    ({0: [1.5]}, "feature ids must be integers"),
    ((np.array([0, 1]), np.array([0])), "2 feature ids but 1 group ids"),
])
def test_bad_groups_are_refused(groups, message):
    store = InMemoryStore(np.eye(6), np.array([1.0, -1, 1, -1, 1, -1]))
    with pytest.raises(ParameterError, match=message):
        GroupFeatures(store, groups)


def _planted(n=240, p=30, size=4, informative=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p * size))
    w = np.zeros(p * size)
    w[:informative * size] = rng.standard_normal(informative * size)
    return X, np.where(X @ w > 0, 1.0, -1.0), np.repeat(np.arange(p), size)


def test_fgm_on_groups_identical_on_every_scheduler_and_block_size(tmp_path):
    X, y, labels = _planted()
    store = write_store(tmp_path / "d.zarr", sp.csc_matrix(X), y, block_nnz=500,
                        command="test")
    reference = fit_fgm(GroupFeatures(store, labels), y, B=2, C=1.0, max_iter=3)
    for scheduler in ("synchronous", "threads", "processes"):
        for block_size in (1, 5, 1000):
            result = fit_fgm(GroupFeatures(store, labels), y, B=2, C=1.0, max_iter=3,
                             block_size=block_size, scheduler=scheduler)
            np.testing.assert_array_equal(result.keys, reference.keys)
            np.testing.assert_array_equal(result.coef, reference.coef)
    space = GroupFeatures(store, labels)
    chosen = space.unit_ids(np.unique(space.units_of(reference.keys)))
    assert {0, 1, 2} <= set(chosen)
    assert reference.stop_reason.startswith("holds the budget of B x max_iter = 6")


def test_select_groups_model_round_trip_and_prediction(tmp_path):
    X, y, labels = _planted()
    model = select(X, y, groups=labels, B=2, max_iter=3, C=1.0)
    assert model.feature_space == {"kind": "groups"}
    assert model.params["space"] == "groups" and model.params["n_candidates"] == 30
    assert all(isinstance(f, list) and len(f) == 2 for f in model.features)
    assert len(model.selected_groups) == 6
    path = tmp_path / "m.json"
    model.save(path)
    loaded = Model.load(path)
    columns = [j for _, j in loaded.features]
    expected = X[:, columns] @ loaded.coef + loaded.intercept
    np.testing.assert_allclose(loaded.decision_function_store(InMemoryStore(X, y)),
                               expected, rtol=1e-12, atol=1e-12)


def test_overlapping_groups_keep_one_weight_per_group():
    """A feature in two selected groups is two virtual columns with two weights;
    prediction sums them (the explicit augmented matrix times the weights)."""
    X, y, _ = _planted(p=6, size=3)
    mapping = {0: [0, 1, 2, 3], 1: [2, 3, 4, 5], 2: [6, 7, 8]}
    model = select(X, y, groups=mapping, B=1, max_iter=3, C=1.0, tol=0)
    pairs = [tuple(f) for f in model.features]
    assert len(set(pairs)) == len(pairs)
    shared = [j for g, j in pairs if (1 - g if g < 2 else None, j) in pairs]
    assert shared                              # features 2 and 3 appear twice
    aug = X[:, [j for _, j in model.features]]
    np.testing.assert_allclose(model.decision_function_store(InMemoryStore(X, y)),
                               aug @ model.coef + model.intercept, rtol=1e-12)


def test_budget_counts_groups():
    X, y, labels = _planted()
    result = fit_fgm(GroupFeatures(InMemoryStore(X, y), labels), y, B=3, C=1.0,
                     max_iter=2, tol=0)
    assert result.history[-1]["n_nonzero"] == 6
    assert len(result.keys) == 24                # 6 groups of 4 columns


def test_select_tree_and_c_auto():
    X, y, labels = _planted(p=10)
    parent = np.concatenate([labels + X.shape[1], np.full(10, -1)])
    model = select(X, y, tree=parent, B=2, max_iter=2, C=1.0)
    assert model.feature_space == {"kind": "tree"}
    assert "nodes_evaluated" in model.history[0]
    auto = select(X, y, groups=labels, B=2, max_iter=2, C="auto", refit=True)
    assert auto.params["validation"]["C"] == auto.params["C"]
    assert auto.refit is not None


@pytest.mark.parametrize("kwargs, message", [
    ({"groups": np.zeros(120, np.int64), "poly": 2}, "do not combine with poly=2"),
    ({"groups": np.zeros(120, np.int64), "tree": np.full(120, -1)}, "groups and tree"),
])
def test_structures_that_do_not_combine(kwargs, message):
    X, y, _ = _planted()
    with pytest.raises(ParameterError, match=message):
        select(X, y, B=2, max_iter=1, **kwargs)


def test_registered_kinds():
    assert FEATURE_SPACES["groups"] is GroupFeatures
    assert FEATURE_SPACES["tree"] is TreeFeatures
    store = InMemoryStore(np.eye(4), np.array([1.0, -1, 1, -1]))
    assert type(make_feature_space(store, groups=[0, 0, 1, 1])) is GroupFeatures


# ------------------------------------------------------ additive kernels
from ultrafs.features import HIKFeatures, Chi2Features, JSFeatures  # noqa: E402
from ultrafs.kernels.additive_maps import N_GENERATED, PHI  # noqa: E402


def explicit_map(X, kind, scales, normalize=False):
    """The dense expansion, value by value (``PHI``, itself checked against
    NumPy formulas in tests/test_additive_maps.py); HIK's raw scale
    (``normalize=False``) multiplies column j's values by ``sqrt(s_j)``."""
    n, m = X.shape
    G = N_GENERATED[kind]
    E = np.zeros((n, m * G))
    out = np.zeros(G)
    for j in range(m):
        for i in range(n):
            if X[i, j] != 0:
                PHI[kind](X[i, j], scales[j], out)
                E[i, j * G:(j + 1) * G] = out
        if kind == "hik" and not normalize and scales[j] > 0:
            E[:, j * G:(j + 1) * G] *= np.sqrt(scales[j])
    return E


class KernelContract(GroupContract):
    data_kinds = ("valued", "binary")
    space_class = HIKFeatures
    space_params = {}

    def make_space(self, X, y, *, dtype, tmp_path):
        X = abs(X)
        if self.store_kind == "zarr":
            store = write_store(tmp_path / "k.zarr", X, y, dtype=dtype,
                                id_offset=ID_OFFSET, block_nnz=7, command="test")
        else:
            store = InMemoryStore(X, y, dtype=dtype, id_offset=ID_OFFSET)
        return self.space_class(store, **self.space_params)

    def expand(self, X, space):
        X = np.abs(X)
        store_values = space.store.read_range(0, space.store.n_features)
        data = store_values.values(np.float64)
        dense = np.zeros_like(X)
        for j in range(X.shape[1]):
            rows = store_values.indices[store_values.indptr[j]:store_values.indptr[j + 1]]
            dense[rows, j] = data[store_values.indptr[j]:store_values.indptr[j + 1]]
        scales = dense.max(axis=0)
        E = explicit_map(dense, space.kind, scales, self.space_params.get("normalize", False))
        keys = np.arange(E.shape[1], dtype=np.int64)
        G = N_GENERATED[space.kind]
        ids = [[int(k // G) + ID_OFFSET, int(k % G) + 1] for k in keys]
        return E, keys, ids

    def absent_ids(self, space):
        return [[space.store.n_features + ID_OFFSET, 1]]

    def test_spec_round_trip_through_the_registry(self, case):
        """A spec (with the scales of what was materialised) rebuilds a space
        that scores and predicts the same."""
        space = case.space
        space.materialize(case.keys)
        spec = json.loads(json.dumps(space.spec()))
        clone = feature_space_from_spec(space.store, spec)
        assert type(clone) is type(space) and clone.spec() == space.spec()
        np.testing.assert_array_equal(
            clone.materialize_ids(space.feature_ids(case.keys)).values(),
            space.materialize(case.keys).values())
        np.testing.assert_array_equal(self.run(SimpleNamespace(space=clone),
                                               case.weights, 5)[0].keys,
                                      self.run(case, case.weights, 5)[0].keys)


class TestHIKMemory(KernelContract):
    store_kind = "memory"
    space_class = HIKFeatures


class TestHIKZarr(KernelContract):
    store_kind = "zarr"
    space_class = HIKFeatures


class TestHIKNormalizedMemory(KernelContract):
    """The map of model files written before issue 38: ``x / s_j``."""
    store_kind = "memory"
    space_class = HIKFeatures
    space_params = {"normalize": True}


class TestChi2Zarr(KernelContract):
    store_kind = "zarr"
    space_class = Chi2Features


class TestJSMemory(KernelContract):
    store_kind = "memory"
    space_class = JSFeatures


def test_kernel_refuses_negative_values():
    X = np.array([[1.0, -2.0], [0.5, 1.0], [0.0, 3.0]])
    with pytest.raises(ParameterError, match="needs values >= 0.*-2"):
        select(X, np.array([1, -1, 1]), kernel="hik", B=1, max_iter=1)


@pytest.mark.parametrize("kind", ["hik", "chi2", "intersection", "js"])
def test_kernel_model_predicts_the_explicit_expansion(kind, tmp_path):
    """Prediction on new rows = their explicit expansion (training scales)
    times the coefficients; the model file round-trips."""
    rng = np.random.default_rng(3)
    X = rng.random((120, 8)) * (rng.random((120, 8)) < 0.7) * 5
    y = np.where(np.sin(3 * X[:, 0]) + (X[:, 1] > 2) > 0.5, 1, -1)
    model = select(X[:80], y[:80], kernel=kind, B=2, max_iter=2, C=1.0)
    path = tmp_path / "m.json"
    model.save(path)
    loaded = Model.load(path)
    assert loaded.feature_space["kind"] == kind
    G = N_GENERATED[kind]
    scales = X[:80].max(axis=0)
    E = explicit_map(X[80:], kind, scales)
    cols = [j * G + level - 1 for j, level in loaded.features]
    expected = E[:, cols] @ loaded.coef + loaded.intercept
    np.testing.assert_allclose(
        loaded.decision_function_store(InMemoryStore(X[80:], y[80:])), expected,
        rtol=1e-10, atol=1e-12)
    assert set(loaded.selected_groups) <= set(range(8)) and len(loaded.selected_groups) == 4


def test_kernel_c_auto_quantises_held_out_rows_like_the_fit():
    rng = np.random.default_rng(4)
    X = rng.random((150, 6)) * 3
    y = np.where(X[:, 0] > 1.5, 1, -1)
    model = select(X, y, kernel="hik", B=1, max_iter=2, C="auto")
    assert model.params["validation"]["points"]
    assert model.selected_groups[0] == 0


# ------------------------------------------------------------ estimator
from ultrafs.sklearn import FGMClassifier  # noqa: E402


@pytest.mark.parametrize("structure", ["groups", "overlapping", "tree", "hik", "chi2"])
def test_estimator_faces(structure):
    """groups= / tree= / kernel= in FGMClassifier: the same model as select,
    transform gives the selected (virtual or generated) columns, and they
    times selected_coef_ plus the intercept are the decision values."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((160, 24))
    y = (X[:, :6].sum(axis=1) > 0).astype(int)
    kwargs = {"groups": {"groups": np.repeat(np.arange(6), 4)},
              "overlapping": {"groups": {0: [0, 1, 2, 3], 1: [2, 3, 4, 5, 6]}},
              "tree": {"tree": np.concatenate([np.repeat(np.arange(6), 4) + 24,
                                               np.full(6, -1)])},
              "hik": {"kernel": "hik"}, "chi2": {"kernel": "chi2"}}[structure]
    if "kernel" in kwargs:
        X = np.abs(X)
        score = X[:, :6].sum(axis=1)
        y = (score > np.median(score)).astype(int)
    est = FGMClassifier(B=1, max_iter=2, C=1.0, **kwargs).fit(X, y)
    model = select(X, np.where(y > 0, 1, -1), B=1, max_iter=2, C=1.0, **kwargs)
    assert est.selected_features_ == model.features
    assert est.selected_groups_ == model.selected_groups
    Xt = est.transform(X)
    np.testing.assert_allclose(Xt @ est.selected_coef_ + est.intercept_,
                               est.decision_function(X), rtol=1e-10, atol=1e-12)
    assert len(est.get_feature_names_out()) == Xt.shape[1]
    with pytest.raises(AttributeError, match="only available for linear features"):
        est.coef_
    assert not hasattr(est, "inverse_transform")
    assert est.score(X, y) > 0.6


def test_checkpoint_resume_with_groups_and_refusal_of_other_groups(tmp_path):
    from ultrafs.methods.checkpoint import CheckpointMismatchError

    X, y, labels = _planted()
    ck = tmp_path / "ck"
    select(X, y, groups=labels, B=2, max_iter=2, C=1.0, tol=0, checkpoint=ck)
    resumed = select(X, y, groups=labels, B=2, max_iter=4, C=1.0, tol=0,
                     checkpoint=ck, resume=True)
    straight = select(X, y, groups=labels, B=2, max_iter=4, C=1.0, tol=0)
    assert resumed.selected_groups == straight.selected_groups
    np.testing.assert_array_equal(resumed.coef, straight.coef)
    with pytest.raises(CheckpointMismatchError, match="structure_digest"):
        select(X, y, groups=labels[::-1].copy(), B=2, max_iter=4, C=1.0, tol=0,
               checkpoint=ck, resume=True)


def test_cli_groups_tree_kernel_and_report(tmp_path):
    """The faces end to end: --groups / --tree / --kernel on a LIBSVM file,
    the summary names the groups, evaluate and report read the models."""
    from click.testing import CliRunner
    from sklearn.datasets import dump_svmlight_file

    from ultrafs.cli import main

    X, y, labels = _planted(p=12)
    data = tmp_path / "d.svm"
    dump_svmlight_file(X, y, str(data), zero_based=False)
    (tmp_path / "g.txt").write_text("".join(f"{j + 1} {g}\n" for j, g in enumerate(labels)))
    (tmp_path / "t.txt").write_text("".join(f"{X.shape[1] + g}\n" for g in labels)
                                    + "-1\n" * 12)
    np.save(tmp_path / "g.npy", labels)
    runner = CliRunner()
    env = {"ULTRAFS_CACHE_DIR": str(tmp_path / "cache")}
    for name, extra in (("g", ["--groups", tmp_path / "g.txt"]),
                        ("n", ["--groups", tmp_path / "g.npy"]),
                        ("t", ["--tree", tmp_path / "t.txt"])):
        out = tmp_path / f"{name}.json"
        result = runner.invoke(main, [str(a) for a in ["select", "--data", data, "--B", 2,
                                                       "--max-iter", 2, "--C", 1.0,
                                                       "--out", out, *extra]], env=env)
        assert result.exit_code == 0, result.output
        model = Model.load(out)
        assert len(model.selected_groups) == 4
        result = runner.invoke(main, ["evaluate", "--model", str(out), "--data", str(data)],
                               env=env)
        assert result.exit_code == 0 and '"accuracy"' in result.output, result.output
    assert Model.load(tmp_path / "g.json").selected_groups == \
        Model.load(tmp_path / "n.json").selected_groups
    result = runner.invoke(main, ["report", str(tmp_path / "g.json"), "--out",
                                  str(tmp_path / "r.html")], env=env)
    assert result.exit_code == 0, result.output


def test_group_files_in_every_format(tmp_path):
    """Text, (N, 2) .npy, 1-D .npy and Parquet give the same groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ultrafs.features.group_files import read_groups_file, read_tree_file
    from ultrafs.features.groups import group_map

    store = InMemoryStore(np.eye(6), np.array([1.0, -1, 1, -1, 1, -1]))
    pairs = np.array([[0, 3], [1, 3], [5, 3], [3, 1], [4, 1], [4, 2]])
    (tmp_path / "g.txt").write_text("# feature group\n" + "".join(
        f"{f}, {g}  # c\n" for f, g in pairs) + "\n")
    np.save(tmp_path / "g2.npy", pairs)
    pq.write_table(pa.table({"feature": pairs[:, 0], "group": pairs[:, 1]}),
                   tmp_path / "g.parquet")
    maps = [group_map(store, read_groups_file(tmp_path / name)[1])
            for name in ("g.txt", "g2.npy", "g.parquet")]
    for other in maps[1:]:
        np.testing.assert_array_equal(other.labels, maps[0].labels)
        np.testing.assert_array_equal(other.members, maps[0].members)
    np.testing.assert_array_equal(maps[0].members, [3, 4, 4, 0, 1, 5])
    np.save(tmp_path / "g1.npy", np.array([3, 3, -1, 1, 1, 3]))
    kind, labels = read_groups_file(tmp_path / "g1.npy")
    assert kind == "labels"
    np.testing.assert_array_equal(group_map(store, labels).members, [3, 4, 0, 1, 5])
    (tmp_path / "t.txt").write_text("6\n6\n7\n7\n7\n-1\n-1\n-1\n")
    np.testing.assert_array_equal(read_tree_file(tmp_path / "t.txt"),
                                  [6, 6, 7, 7, 7, -1, -1, -1])
    pq.write_table(pa.table({"feature": [1.5], "group": [0]}), tmp_path / "bad.parquet")
    with pytest.raises(Exception, match="bad.parquet: the feature array must hold integers"):
        read_groups_file(tmp_path / "bad.parquet")


@pytest.mark.parametrize("kind, params", [("hik", {"q": 7}), ("hik", {"q": 1}),
                                          ("chi2", {"n": 2, "period": 0.5}),
                                          ("js", {"n": 0}), ("intersection", {"n": 8})])
def test_kernel_parameters(kind, params, tmp_path):
    """q, n and the period reach the scores, the model file and prediction:
    the decision values equal the explicit expansion with those parameters."""
    from ultrafs.kernels.additive_maps import VZ_STEPS, vz_coefficients

    rng = np.random.default_rng(9)
    X = rng.random((100, 6)) * (rng.random((100, 6)) < 0.8) * 3
    y = np.where(X[:, 0] + (X[:, 2] > 1.5) > 1.5, 1, -1)
    model = select(X[:70], y[:70], kernel=kind, kernel_params=params, B=2, max_iter=2,
                   C=1.0)
    path = tmp_path / "m.json"
    model.save(path)
    loaded = Model.load(path)
    for name, value in params.items():
        assert loaded.feature_space[name] == value
    Xt = X[70:]
    if kind == "hik":
        q = params["q"]
        G = q
        E = np.zeros((len(Xt), 6 * G))
        scales = X[:70].max(axis=0)
        out = np.zeros(q)
        for j in range(6):
            for i in range(len(Xt)):
                if Xt[i, j] != 0:
                    PHI["hik"](Xt[i, j], scales[j], out)
                    E[i, j * G:(j + 1) * G] = out * np.sqrt(scales[j])
    else:
        n = params.get("n", 5)
        L = params.get("period", VZ_STEPS[kind])
        coef = vz_coefficients(kind, n, L)
        G = 2 * n + 1
        E = np.zeros((len(Xt), 6 * G))
        for j in range(6):
            x = Xt[:, j]
            pos = x > 0
            r = np.sqrt(np.where(pos, x, 0))
            logx = np.log(np.where(pos, x, 1))
            E[:, j * G] = coef[0] * r
            for k in range(1, n + 1):
                E[:, j * G + 2 * k - 1] = coef[k] * r * np.cos(k * L * logx)
                E[:, j * G + 2 * k] = coef[k] * r * np.sin(k * L * logx)
    cols = [j * G + level - 1 for j, level in loaded.features]
    assert max(level for _, level in loaded.features) <= G
    np.testing.assert_allclose(loaded.decision_function_store(InMemoryStore(Xt, y[70:])),
                               E[:, cols] @ loaded.coef + loaded.intercept,
                               rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("kwargs, message", [
    ({"kernel": "hik", "kernel_params": {"q": 0}}, "q .HIK levels. must be an integer"),
    ({"kernel": "chi2", "kernel_params": {"n": -1}}, "order. must be an integer"),
    ({"kernel": "js", "kernel_params": {"period": 0.0}}, "period .* must be > 0"),
    ({"kernel": "hik", "kernel_params": {"n": 3}}, "takes no parameter 'n'"),
    ({"kernel_params": {"q": 3}}, "kernel parameters given without a kernel"),
])
def test_bad_kernel_parameters(kwargs, message):
    X = np.random.default_rng(0).random((20, 3))
    with pytest.raises(ParameterError, match=message):
        select(X, np.where(X[:, 0] > 0.5, 1, -1), B=1, max_iter=1, **kwargs)


def test_hik_file_without_normalize_is_the_normalised_map(tmp_path):
    """A HIK model file written before issue 38 (its feature_space has no
    ``normalize``) predicts with the map it was fitted in, ``x / s_j``
    (values 1/sqrt(q)); a new file records ``normalize`` and a fit with
    ``normalize=True`` is that map."""
    rng = np.random.default_rng(4)
    X = rng.random((90, 5)) * (rng.random((90, 5)) < 0.7) * 4
    y = np.where(X[:, 0] + (X[:, 3] > 2) > 1.5, 1, -1)
    scales = X[:60].max(axis=0)
    model = select(X[:60], y[:60], kernel="hik", kernel_params={"normalize": True},
                   B=2, max_iter=2, C=1.0)
    assert model.feature_space["normalize"] is True
    path = tmp_path / "m.json"
    model.save(path)
    record = json.loads(path.read_text())
    del record["feature_space"]["normalize"]
    old = tmp_path / "old.json"
    # an edited file is refused unless re-signed (ultrafs sign), as here
    from ultrafs.model_fingerprint import signed

    old.write_text(json.dumps(signed(record)))
    E = explicit_map(X[60:], "hik", scales, normalize=True)
    for file in (path, old):
        loaded = Model.load(file)
        cols = [j * 100 + level - 1 for j, level in loaded.features]
        np.testing.assert_allclose(
            loaded.decision_function_store(InMemoryStore(X[60:], y[60:])),
            E[:, cols] @ loaded.coef + loaded.intercept, rtol=1e-10, atol=1e-12)
    raw = select(X[:60], y[:60], kernel="hik", B=2, max_iter=2, C=1.0)
    assert raw.feature_space["normalize"] is False
