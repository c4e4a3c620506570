"""The contract every :class:`~ultrafs.features.base.FeatureSpace` passes.

A feature space's test class subclasses :class:`FeatureSpaceContract` and
implements :meth:`~FeatureSpaceContract.make_space` (the space over a
store of a small matrix) and :meth:`~FeatureSpaceContract.expand` (the
dense NumPy reference: every candidate as an explicit column, with its key
and feature id); pytest then runs every ``test_*`` method below on each
data kind of :attr:`~FeatureSpaceContract.data_kinds` in float32 and
float64::

    class TestMySpace(FeatureSpaceContract):
        def make_space(self, X, y, *, dtype, tmp_path):
            return MySpace(InMemoryStore(X, y, dtype=dtype, id_offset=1))

        def expand(self, X, space):
            ...   # (n, C) float64 columns, int64 keys (C,), list of ids

Scores are checked against ``||E' W||²`` of the explicit columns E
(ranked by score decreasing, key increasing, positive scores only), for
1-D weights and, where the space supports them, (n, K) weights.
"""

from __future__ import annotations

import json
import pickle
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.errors import ParameterError
from ultrafs.features import FEATURE_SPACES, FeatureSpace, feature_space_from_spec
from ultrafs.scoring.worst_case import worst_case_analyses, worst_case_analysis

#: data kinds a space may be checked on (see :func:`make_data`)
DATA_KINDS = ("valued", "signed", "binary")
DTYPES = (np.float32, np.float64)
BLOCK_SIZES = (1, 3, None)
SCHEDULERS = ("synchronous", "threads")


def make_data(kind, dtype, seed=0, n=23, m=11):
    """A small CSC test matrix and two-class labels.

    Every kind has empty columns (the first, one inside, the last) and
    zero rows.  ``valued``: positive values of several magnitudes;
    ``signed``: values of both signs; ``binary``: ones only.
    """
    rng = np.random.default_rng(seed)
    X = (rng.random((n, m)) < 0.35).astype(np.float64)
    if kind in ("valued", "signed"):
        X *= rng.uniform(0.1, 3.0, size=(n, m)) * 10.0 ** rng.integers(-1, 2, size=(n, m))
    if kind == "signed":
        X *= np.where(rng.random((n, m)) < 0.5, -1.0, 1.0)
    X[:, [0, 5, m - 1]] = 0.0
    X[[2, 9], :] = 0.0
    X = sp.csc_matrix(X.astype(dtype))
    X.eliminate_zeros()
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    return X, y


def ranked_reference(E, keys, weights, k, excluded=()):
    """Top-k of the explicit columns: scores ``||E' W||²``, positive only."""
    sums = E.T @ weights
    scores = sums ** 2 if sums.ndim == 1 else (sums ** 2).sum(axis=1)
    keep = (scores > 0) & ~np.isin(keys, np.asarray(excluded, dtype=np.int64))
    order = np.lexsort((keys[keep], -scores[keep]))[:k]
    return keys[keep][order], scores[keep][order]


def dense_columns(block, n_samples):
    """A materialised :class:`ColumnBlock` as a dense (n, p) float64 array."""
    p = len(block.indptr) - 1
    return sp.csc_matrix((block.values(np.float64).astype(np.float64),
                          block.indices, block.indptr),
                         shape=(n_samples, p)).toarray()


class FeatureSpaceContract:
    """Base class of the shared feature-space tests (not collected itself)."""

    #: data kinds of :func:`make_data` this space is checked on
    data_kinds = ("valued",)
    #: whether find_candidates takes (n, K) weights with K >= 2
    supports_multiclass = True
    #: relative tolerance of scores against the dense reference
    rtol = 1e-9

    def make_space(self, X, y, *, dtype, tmp_path) -> FeatureSpace:
        """The space over a store of ``X`` (CSC) and labels ``y``."""
        raise NotImplementedError

    def expand(self, X, space):
        """Dense reference of every candidate of ``space``.

        Parameters
        ----------
        X : float64 array, shape (n, m)
        space : the space built by :meth:`make_space`

        Returns
        -------
        E : float64 array, shape (n, C)
            Explicit candidate columns, map factors included.
        keys : int64 array, shape (C,)
        ids : list, length C
            Feature ids of the candidates.
        """
        raise NotImplementedError

    def absent_ids(self, space) -> list:
        """Ids whose source columns are not in the store (for prediction)."""
        raise NotImplementedError

    # ------------------------------------------------------------ fixture
    @pytest.fixture(scope="class")
    @classmethod
    def cases(cls, tmp_path_factory):
        cache = {}

        def get(kind, dtype):
            if (kind, dtype) not in cache:
                X, y = make_data(kind, dtype)
                space = cls().make_space(X, y, dtype=dtype,
                                         tmp_path=tmp_path_factory.mktemp("space"))
                dense = X.toarray().astype(np.float64)
                E, keys, ids = cls().expand(dense, space)
                rng = np.random.default_rng(7)
                cache[kind, dtype] = SimpleNamespace(
                    X=X, y=y, dense=dense, dtype=np.dtype(dtype), kind=kind,
                    space=space, E=E, keys=np.asarray(keys, dtype=np.int64),
                    ids=ids, weights=rng.random(X.shape[0]) * y,
                    weights2=rng.standard_normal((X.shape[0], 3)))
            return cache[kind, dtype]
        return get

    @pytest.fixture(params=DTYPES, ids=[np.dtype(d).name for d in DTYPES])
    def dtype(self, request):
        return request.param

    @pytest.fixture
    def case(self, cases, dtype, data_kind):
        return cases(data_kind, dtype)

    def pytest_generate_tests(self, metafunc):
        """Parametrize ``data_kind`` by the subclass's :attr:`data_kinds`."""
        if "data_kind" in metafunc.fixturenames:
            metafunc.parametrize("data_kind", self.data_kinds)

    def run(self, case, weights, k, excluded=(), **kwargs):
        kwargs.setdefault("scheduler", "synchronous")
        return worst_case_analysis(case.space, weights, k, excluded=excluded, **kwargs)

    # ------------------------------------------------------------ identity
    def test_is_a_registered_feature_space(self, case):
        space = case.space
        assert isinstance(space, FeatureSpace)
        assert FEATURE_SPACES[space.kind] is type(space)

    def test_sizes(self, case):
        assert case.space.n_samples == case.X.shape[0]
        assert case.space.n_candidates == len(case.keys)
        assert len(np.unique(case.keys)) == len(case.keys)

    # ------------------------------------------------------- scoring pass
    @pytest.mark.parametrize("k", [1, 6, 10_000])
    def test_find_candidates_matches_dense(self, case, k):
        for excluded in ([], self._excluded(case)):
            cand, stats = self.run(case, case.weights, k, excluded)
            keys, scores = ranked_reference(case.E, case.keys, case.weights, k, excluded)
            np.testing.assert_array_equal(cand.keys, keys)
            np.testing.assert_allclose(cand.scores, scores, rtol=self.rtol, atol=0)
            assert stats.nnz >= case.X.nnz
            assert stats.n_candidates == len(case.keys)

    @pytest.mark.parametrize("k", [1, 6, 10_000])
    def test_find_candidates_multiclass(self, case, k):
        excluded = self._excluded(case)
        if not self.supports_multiclass:
            with pytest.raises(ParameterError, match="not supported"):
                self.run(case, case.weights2, k, excluded)
            return
        cand, _ = self.run(case, case.weights2, k, excluded)
        keys, scores = ranked_reference(case.E, case.keys, case.weights2, k, excluded)
        np.testing.assert_array_equal(cand.keys, keys)
        np.testing.assert_allclose(cand.scores, scores, rtol=self.rtol, atol=0)

    def test_one_class_matrix_equals_vector(self, case):
        """(n, 1) weights give the 1-D result, bit for bit."""
        one, _ = self.run(case, case.weights, 8)
        column, _ = self.run(case, case.weights[:, None], 8)
        np.testing.assert_array_equal(column.keys, one.keys)
        np.testing.assert_array_equal(column.scores, one.scores)

    def test_identical_for_any_blocking_and_scheduler(self, case):
        weight_sets = [case.weights] + ([case.weights2] if self.supports_multiclass else [])
        excluded = self._excluded(case)
        for weights in weight_sets:
            reference, _ = self.run(case, weights, 9, excluded, block_size=None)
            for block_size in BLOCK_SIZES:
                for scheduler in SCHEDULERS:
                    cand, _ = self.run(case, weights, 9, excluded,
                                       block_size=block_size, scheduler=scheduler,
                                       num_workers=3 if scheduler == "threads" else None)
                    np.testing.assert_array_equal(cand.keys, reference.keys)
                    np.testing.assert_array_equal(cand.scores, reference.scores)

    def test_many_queries_give_each_query_its_own_pass(self, case):
        """find_candidates_many (one pass where the space shares passes)
        answers every query as its own pass, bit for bit."""
        excluded = self._excluded(case)
        queries = [(case.weights, 6, excluded), (-2.0 * case.weights, 3, [])]
        if self.supports_multiclass:
            queries.append((case.weights2, 5, excluded))
        for block_size in (None, 3):
            shared = worst_case_analyses(case.space, queries, block_size=block_size,
                                         scheduler="threads", num_workers=2)
            for (weights, k, ex), (cand, stats) in zip(queries, shared, strict=True):
                alone, alone_stats = self.run(case, weights, k, ex,
                                              block_size=block_size)
                np.testing.assert_array_equal(cand.keys, alone.keys)
                np.testing.assert_array_equal(cand.scores, alone.scores)
                assert stats.nnz == alone_stats.nnz
                assert ("pass_queries" in stats.details) == case.space.shares_passes

    def test_no_candidate_scores_on_empty_data(self, case, tmp_path):
        X = sp.csc_matrix(case.X.shape, dtype=case.dtype)
        space = self.make_space(X, case.y, dtype=case.dtype, tmp_path=tmp_path)
        cand, stats = worst_case_analysis(space, case.weights, 5, scheduler="synchronous")
        assert len(cand) == 0 and stats.nnz == 0

    # ------------------------------------------------------- materialize
    def test_materialize_matches_dense(self, case):
        rng = np.random.default_rng(3)
        picks = rng.choice(len(case.keys), size=min(15, len(case.keys)), replace=False)
        picks = np.concatenate([picks, picks[:2]])           # repeats allowed
        for dtype in (np.float32, np.float64):
            block = case.space.materialize(case.keys[picks], dtype=dtype)
            self._check_block(block, case, picks, dtype)
        empty = case.space.materialize(np.zeros(0, np.int64))
        assert empty.n_columns == 0 and empty.nnz == 0

    def test_materialize_with_the_pass_payload(self, case):
        cand, _ = self.run(case, case.weights, 6)
        position = {int(key): i for i, key in enumerate(case.keys)}
        picks = np.array([position[int(key)] for key in cand.keys], dtype=np.int64)
        for dtype in (np.float32, np.float64):
            block = case.space.materialize(cand.keys, dtype=dtype, payload=cand.payload)
            self._check_block(block, case, picks, dtype)

    def test_materialize_ids_and_absent_ids(self, case):
        space = case.space
        picks = np.arange(0, len(case.keys), max(1, len(case.keys) // 12))
        ids = space.feature_ids(case.keys[picks])
        absent = self.absent_ids(space)
        assert space.absent_ids(ids) == []
        assert space.absent_ids(absent + ids) == absent
        block = space.materialize_ids(absent + ids, dtype=np.float64)
        dense = dense_columns(block, case.X.shape[0])
        assert block.indptr[len(absent)] == 0                # absent: empty columns
        np.testing.assert_allclose(dense[:, len(absent):], case.E[:, picks],
                                   rtol=1e-12, atol=0)

    # --------------------------------------------------------------- ids
    def test_feature_ids_round_trip(self, case):
        space = case.space
        ids = space.feature_ids(case.keys)
        assert ids == case.ids
        assert json.loads(json.dumps(ids)) == ids
        np.testing.assert_array_equal(space.keys_of(ids), case.keys)

    # -------------------------------------------------------------- spec
    def test_spec_round_trip_through_the_registry(self, case):
        space = case.space
        spec = json.loads(json.dumps(space.spec()))
        assert spec["kind"] == space.kind
        for clone in (feature_space_from_spec(space.store, spec),
                      FEATURE_SPACES[spec["kind"]].from_spec(space.store, spec)):
            assert type(clone) is type(space)
            assert clone.spec() == space.spec()
            assert clone.n_candidates == space.n_candidates
        np.testing.assert_array_equal(
            self.run(SimpleNamespace(space=clone), case.weights, 5)[0].keys,
            self.run(case, case.weights, 5)[0].keys)

    def test_pickles(self, case):
        clone = pickle.loads(pickle.dumps(case.space))
        assert clone.spec() == case.space.spec()
        np.testing.assert_array_equal(clone.keys_of(case.ids), case.keys)

    # ----------------------------------------------------------- helpers
    @staticmethod
    def _excluded(case):
        """A few keys to exclude: two of the best and one of the worst."""
        keys, _ = ranked_reference(case.E, case.keys, case.weights, len(case.keys))
        return np.sort(np.concatenate([keys[:2], keys[-1:]])) if len(keys) else []

    @staticmethod
    def _check_block(block, case, picks, dtype):
        assert block.first_column == -1
        assert block.indptr.dtype == np.int64 and block.indices.dtype == np.int32
        assert block.data is not None and block.data.dtype == dtype
        assert block.n_columns == len(picks)
        for j in range(block.n_columns):
            rows = block.indices[block.indptr[j]:block.indptr[j + 1]]
            assert np.all(np.diff(rows) > 0)
        dense = dense_columns(block, case.X.shape[0])
        expected = case.E[:, picks]
        if dtype == np.float32:
            np.testing.assert_allclose(dense, expected.astype(np.float32), rtol=1e-6,
                                       atol=0)
        else:
            np.testing.assert_allclose(dense, expected, rtol=1e-12, atol=0)
