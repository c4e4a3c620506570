"""The kernel bases of seed 001: random Fourier features and exact RBF columns.

Covers the digest's acceptance tests T1 (RFF approximates the Gaussian
kernel) and T12 (tiled products equal the in-memory ones, bit for bit for
any row chunk and with or without the tile cache), the RBF tiles against
scikit-learn, the feature-space contract of both spaces, the model spec of
a restricted RBF space, and hostile specs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import pdist
from sklearn.datasets import load_digits
from sklearn.metrics.pairwise import rbf_kernel

from feature_space_contract import FeatureSpaceContract
from ultrafs.solvers import basis_operator
from ultrafs.errors import ParameterError, UltraFSWarning
from ultrafs.features import (FEATURE_SPACES, RandomFourierFeatures, RBFKernelFeatures,
                              feature_space_from_spec)
from ultrafs.features.kernel_width import median_sigma
from ultrafs.features.rbf import MAX_TRAINING_ROWS
from ultrafs.kernels import basis_tiles as tiles
from ultrafs.kernels import row_chunks
from ultrafs.solvers.basis_operator import (BasisOperator, RBFBasis, RFFBasis,
                                            rff_group)
from ultrafs.store import InMemoryStore

ID_OFFSET = 1


# --------------------------------------------------------- references
def draw_group(seed, g, n_inputs, sigma):
    """Group ``g`` of Ω and b by the documented recipe (written out again)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, g]))
    omega = rng.standard_normal((n_inputs, 256)) * np.sqrt(2) / sigma
    return omega, rng.uniform(0, 2 * np.pi, 256)


def ordered_product(X, W):
    """``X @ W`` adding each row's nonzeros in increasing column order."""
    P = np.zeros((X.shape[0], W.shape[1]))
    for i in range(X.shape[0]):
        for j in np.flatnonzero(X[i]):
            P[i] += X[i, j] * W[j]
    return P


def rff_reference(X, n_inputs, D, sigma, seed, ordered=False):
    """Explicit ``Z`` (N x D) of dense rows ``X`` (inputs beyond n_inputs dropped)."""
    X = np.asarray(X, dtype=np.float64)[:, :n_inputs]
    X = np.hstack([X, np.zeros((X.shape[0], n_inputs - X.shape[1]))])
    parts = []
    for g in range(-(-D // 256)):
        omega, b = draw_group(seed, g, n_inputs, sigma)
        P = ordered_product(X, omega) if ordered else X @ omega
        parts.append(np.sqrt(2.0 / D) * np.cos(P + b))
    return np.hstack(parts)[:, :D]


def rbf_reference(X, points, sigma):
    """``exp(-||x - p||² / σ²)`` from explicit differences."""
    diff = X[:, None, :] - points[None, :, :]
    return np.exp(-np.sum(diff * diff, axis=2) / sigma ** 2)


def close(actual, expected, rtol=1e-12):
    """Entries equal to ``rtol`` relative to the largest entry."""
    expected = np.asarray(expected)
    scale = np.abs(expected).max() if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


# ----------------------------------------------------------------- T1
@pytest.fixture(scope="module")
def digits300():
    X, y = load_digits(return_X_y=True)
    rows = np.sort(np.random.default_rng(0).choice(len(X), 300, replace=False))
    return X[rows].astype(np.float64), np.where(y[rows] % 2 == 0, 1.0, -1.0)


def test_median_sigma_is_the_median_pairwise_distance(digits300):
    X, _ = digits300
    assert median_sigma(sp.csr_matrix(X)) == pytest.approx(np.median(pdist(X)),
                                                           rel=1e-12)
    store = InMemoryStore(X, np.arange(300) % 2)
    assert median_sigma(store) == median_sigma(sp.csr_matrix(X))
    sub = median_sigma(X, seed=4, max_points=50)
    assert sub == median_sigma(X, seed=4, max_points=50) != median_sigma(X, seed=5,
                                                                         max_points=50)


def test_median_sigma_fallback_and_refusal():
    X = np.zeros((6, 3))
    X[5, 1] = 2.0                       # 10 zero distances, 5 of 2.0: median 0
    assert median_sigma(X) == 2.0
    with pytest.raises(ParameterError, match="every row is the same") as info:
        median_sigma(np.ones((4, 3)))
    assert "\n" not in str(info.value)


def test_t1_rff_approximates_the_gaussian_kernel(digits300):
    """Digest T1: mean |z(x)'z(y) - k(x, y)| over 300 points, median-heuristic σ."""
    X, y = digits300
    store = InMemoryStore(X, y)
    errors = {}
    for D in (100, 1000, 10_000):
        space = RandomFourierFeatures(store, n_components=D, seed=0)
        Z = space.operator().take_rows(np.arange(len(X)))
        K = rbf_kernel(X, gamma=1.0 / space.sigma ** 2)
        errors[D] = float(np.mean(np.abs(Z @ Z.T - K)))
    print("T1 mean |ZZ' - K|:", errors)
    assert errors[1000] < 0.03
    assert errors[10_000] < 0.012
    assert errors[100] / errors[10_000] > 5


def test_omega_has_variance_two_over_sigma_squared():
    sigma = 3.7
    draws = [rff_group(11, g, 64, sigma) for g in range(8)]
    omega = np.concatenate([w.ravel() for w, _ in draws])
    b = np.concatenate([b for _, b in draws])
    assert np.var(omega) == pytest.approx(2.0 / sigma ** 2, rel=0.02)
    assert abs(np.mean(omega)) < 0.01 / sigma
    assert 0 <= b.min() and b.max() < 2 * np.pi
    assert np.mean(b) == pytest.approx(np.pi, rel=0.03)


def test_rff_groups_follow_the_recipe_and_truncate():
    for g in (0, 3):
        omega, b = rff_group(9, g, 5, 1.5)
        ref_omega, ref_b = draw_group(9, g, 5, 1.5)
        np.testing.assert_array_equal(omega, ref_omega)
        np.testing.assert_array_equal(b, ref_b)
    omega, b = rff_group(9, 1, 5, 1.5, width=10)
    assert omega.shape == (5, 10) and omega.flags.c_contiguous
    np.testing.assert_array_equal(omega, draw_group(9, 1, 5, 1.5)[0][:, :10])


def test_features_do_not_depend_on_d_beyond_the_scale(digits300):
    X, y = digits300
    store = InMemoryStore(X[:20], y[:20])
    small = RandomFourierFeatures(store, n_components=300, sigma=40.0, seed=2)
    large = RandomFourierFeatures(store, n_components=1000, sigma=40.0, seed=2)
    cols = np.arange(300)
    a = small.operator().columns(cols) / math.sqrt(2 / 300)
    b = large.operator().columns(cols) / math.sqrt(2 / 1000)
    close(a, b, rtol=1e-14)


# ---------------------------------------------------------------- T12
def make_rows(dtype, n=61, m=9, seed=0):
    """Sparse rows with an empty column (``m // 2``) and a zero row (``n // 2``),
    in ``dtype``."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, m)) < 0.5) * rng.uniform(-2, 3, size=(n, m))
    X[:, m // 2] = 0.0
    X[n // 2] = 0.0
    X = X.astype(dtype)
    return sp.csr_matrix(X), X.astype(np.float64)


def operator_problem(kind, dtype):
    """(space, dense Z) of a small problem of ``kind`` ('rff' or 'rbf')."""
    X, dense = make_rows(dtype)
    y = np.where(np.arange(X.shape[0]) % 3 == 0, 1.0, -1.0)
    store = InMemoryStore(X, y, dtype=dtype)
    if kind == "rff":
        space = RandomFourierFeatures(store, n_components=300, sigma=2.5, seed=7)
        return space, rff_reference(dense, 9, 300, 2.5, 7), y
    space = RBFKernelFeatures(store, sigma=2.5)
    return space, rbf_reference(dense, dense, 2.5), y


PRODUCT_CASES = [(kind, dtype) for kind in ("rff", "rbf")
                 for dtype in (np.float32, np.float64)]


def _products(op, w, r, s, y):
    f = op.matvec(w)
    return {"matvec": f, "rmatvec": op.rmatvec(r),
            "hess": op.rmatvec_hess(r, s),
            "objective": np.sum(np.logaddexp(0.0, -y * f)),
            "columns": op.columns([3, 0, 299 % op.n_coef, 3, 40]),
            "rows": op.take_rows([30, 0, 60, 30])}


@pytest.mark.parametrize("kind,dtype", PRODUCT_CASES,
                         ids=[f"{k}-{np.dtype(d).name}" for k, d in PRODUCT_CASES])
def test_t12_products_equal_the_dense_reference_bit_for_bit_across_tiles(kind, dtype):
    space, Z, y = operator_problem(kind, dtype)
    N, M = Z.shape
    rng = np.random.default_rng(1)
    w = rng.standard_normal(M) * (rng.random(M) < 0.3)     # sparse, as l1 solvers
    w[256:270] = 0.0                    # RFF: a group partly zero
    r, s = rng.standard_normal(N), rng.random(N)
    results = []
    for row_chunk in (1, 7, N):
        for cache_bytes in (0, 2 ** 30):
            op = space.operator(row_chunk=row_chunk, cache_bytes=cache_bytes)
            assert op.cached == bool(cache_bytes)
            assert (op.n_rows, op.n_coef, op.n_outputs, op.nnz) == (N, M, 1, N * M)
            results.append(_products(op, w, r, s, y))
    first = results[0]
    close(first["matvec"], Z @ w)
    close(first["rmatvec"], Z.T @ r)
    close(first["hess"][0], Z.T @ r)
    close(first["hess"][1], (Z * Z).T @ s)
    assert first["objective"] == pytest.approx(np.sum(np.logaddexp(0.0, -y * (Z @ w))),
                                               rel=1e-12)
    close(first["columns"], Z[:, [3, 0, 299 % M, 3, 40]])
    close(first["rows"], Z[[30, 0, 60, 30]])
    assert first["columns"].flags.f_contiguous and first["rows"].flags.c_contiguous
    for other in results[1:]:
        for name, value in first.items():
            np.testing.assert_array_equal(np.asarray(other[name]), np.asarray(value),
                                          err_msg=name)


@pytest.mark.parametrize("kind", ["rff", "rbf"])
def test_products_over_many_row_blocks_same_bytes_in_memory_or_made_again(kind,
                                                                          monkeypatch):
    """Φ' r and (Φ∘Φ)' s sum fixed blocks of PRODUCT_ROWS rows (BLAS each)
    and add the partials in row order: the basis held in memory and the basis
    made again tile by tile (any row_chunk) give the same bytes."""
    monkeypatch.setattr(basis_operator, "PRODUCT_ROWS", 13)
    space, Z, y = operator_problem(kind, np.float64)
    N, M = Z.shape
    assert N > 3 * 13
    rng = np.random.default_rng(4)
    w = rng.standard_normal(M) * (rng.random(M) < 0.2)
    r, s = rng.standard_normal(N), rng.random(N)
    held = space.operator(row_chunk=7, cache_bytes=2 ** 30)
    assert held.cached and held.basis_bytes == N * M * 8
    matrix = held.matrix()
    assert matrix.flags.f_contiguous and matrix.shape == (N, M)
    np.testing.assert_array_equal(matrix, held.columns(np.arange(M)))
    first = _products(held, w, r, s, y)
    close(first["rmatvec"], Z.T @ r)
    close(first["hess"][1], (Z * Z).T @ s)
    for row_chunk in (1, 5, 13, N):
        other = _products(space.operator(row_chunk=row_chunk, cache_bytes=0), w, r, s, y)
        for name, value in first.items():
            np.testing.assert_array_equal(np.asarray(other[name]), np.asarray(value),
                                          err_msg=name)
    streamed = space.operator(cache_bytes=0)
    with pytest.raises(ParameterError, match="memory budget"):
        streamed.matrix()


@pytest.mark.parametrize("kind", ["rff", "rbf"])
def test_threaded_products_give_the_same_bytes(kind, monkeypatch):
    """The parallel twins, forced on every call, change no bit."""
    space, Z, y = operator_problem(kind, np.float64)
    rng = np.random.default_rng(2)
    w, r, s = rng.standard_normal(Z.shape[1]), rng.standard_normal(Z.shape[0]), \
        rng.random(Z.shape[0])
    serial = {}
    for cache_bytes in (0, 2 ** 30):
        serial[cache_bytes] = _products(space.operator(row_chunk=7, cache_bytes=cache_bytes),
                                        w, r, s, y)
    monkeypatch.setattr(row_chunks, "MIN_PARALLEL_WORK", 0)
    monkeypatch.setattr(basis_operator, "MIN_TILE_PARALLEL", 0)
    for cache_bytes in (0, 2 ** 30):
        threaded = _products(space.operator(row_chunk=7, cache_bytes=cache_bytes),
                             w, r, s, y)
        for name, value in serial[cache_bytes].items():
            np.testing.assert_array_equal(np.asarray(threaded[name]), np.asarray(value))


def test_tile_kernels_against_numpy_and_their_twins():
    X, dense = make_rows(np.float64, n=40, m=6)
    rng = np.random.default_rng(3)
    A = np.ascontiguousarray(rng.standard_normal((6, 37)))
    b = rng.uniform(0, 6, 37)
    args = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)
    for serial, parallel in ((tiles.csr_dense_tile, tiles.csr_dense_tile_parallel),):
        one = serial(*args, 3, 29, A, np.empty((26, 37)))
        two = parallel(*args, 3, 29, A, np.empty((26, 37)))
        np.testing.assert_array_equal(one, two)
        np.testing.assert_array_equal(one, ordered_product(dense[3:29], A))
    P = ordered_product(dense, A)
    rff = tiles.rff_tile(*args, 0, 40, A, b, 0.25, np.empty((40, 37)))
    np.testing.assert_array_equal(rff, tiles.rff_map(P.copy(), b, 0.25))
    close(rff, 0.25 * np.cos(P + b), rtol=1e-15)
    np.testing.assert_array_equal(
        rff, tiles.rff_tile_parallel(*args, 0, 40, A, b, 0.25, np.empty((40, 37))))
    sq = tiles.csr_row_squares(args[0], X.data)
    np.testing.assert_allclose(sq, (dense ** 2).sum(axis=1), rtol=1e-15)
    sq_points = (A ** 2).sum(axis=0)
    rbf = tiles.rbf_tile(*args, 0, 40, A, sq, sq_points, 2.0, np.empty((40, 37)))
    np.testing.assert_array_equal(rbf, tiles.rbf_map(P.copy(), sq, sq_points, 2.0))
    np.testing.assert_array_equal(
        rbf, tiles.rbf_tile_parallel(*args, 0, 40, A, sq, sq_points, 2.0,
                                     np.empty((40, 37))))
    close(rbf, rbf_reference(dense, A.T, math.sqrt(2.0)), rtol=1e-13)
    T = rff
    w, r, s = rng.standard_normal(37), rng.standard_normal(40), rng.random(40)
    start = rng.standard_normal(40)
    for fn in (tiles.tile_matvec_acc, tiles.tile_matvec_acc_parallel):
        close(fn(T, w, start.copy()), start + T @ w, rtol=1e-14)
    start = rng.standard_normal(37)
    outs = [fn(T, r, start.copy()) for fn in (tiles.tile_rmatvec_acc,
                                              tiles.tile_rmatvec_acc_parallel)]
    np.testing.assert_array_equal(outs[0], outs[1])
    close(outs[0], start + T.T @ r, rtol=1e-14)
    pairs = [fn(T, r, s, start.copy(), np.zeros(37))
             for fn in (tiles.tile_rmatvec_hess_acc, tiles.tile_rmatvec_hess_acc_parallel)]
    np.testing.assert_array_equal(pairs[0][0], outs[0])
    np.testing.assert_array_equal(pairs[0][1], pairs[1][1])
    close(pairs[0][1], (T * T).T @ s, rtol=1e-14)
    # accumulating over row chunks gives the bytes of one call
    acc = start.copy()
    for lo, hi in ((0, 1), (1, 8), (8, 40)):
        tiles.tile_rmatvec_acc(np.ascontiguousarray(T[lo:hi]), r[lo:hi], acc)
    np.testing.assert_array_equal(acc, outs[0])


def test_operator_checks_its_arguments():
    X, _ = make_rows(np.float64, n=5, m=3)
    basis = RFFBasis(3, 10, 1.0, 0)
    op = BasisOperator(X.indptr, X.indices, X.data, basis)
    with pytest.raises(ParameterError, match=r"shape \(10,\)"):
        op.matvec(np.zeros(9))
    with pytest.raises(ParameterError, match="cols must lie"):
        op.columns([10])
    with pytest.raises(ParameterError, match="row_chunk"):
        BasisOperator(X.indptr, X.indices, X.data, basis, row_chunk=0)
    with pytest.raises(ParameterError, match="finite"):
        BasisOperator(X.indptr, X.indices, X.data * np.nan, basis)
    assert op.columns([]).shape == (5, 0) and op.take_rows([]).shape == (0, 10)


# ------------------------------------------------------------ RBF tiles
def test_rbf_tiles_match_scikit_learn(digits300):
    X, y = digits300
    store = InMemoryStore(X[:120], y[:120])
    space = RBFKernelFeatures(store)
    K = space.operator(row_chunk=50).take_rows(np.arange(120))
    np.testing.assert_allclose(K, rbf_kernel(X[:120], gamma=1 / space.sigma ** 2),
                               rtol=1e-12, atol=0)
    np.testing.assert_array_equal(np.diag(K), 1.0)       # x == p: exactly 1
    basis = RBFBasis(*(lambda P: (P.indptr, P.indices, P.data))(sp.csr_matrix(X[:30])),
                     space.sigma)
    rows = sp.csr_matrix(X[200:260])
    op = BasisOperator(rows.indptr, rows.indices, rows.data, basis, cache_bytes=0)
    np.testing.assert_allclose(op.columns(np.arange(30)),
                               rbf_kernel(X[200:260], X[:30], gamma=1 / space.sigma ** 2),
                               rtol=1e-12, atol=0)


# ------------------------------------------------------------- contract
class KernelContract(FeatureSpaceContract):
    """What both kernel bases change of the shared contract."""

    def test_no_candidate_scores_on_empty_data(self, case, tmp_path):
        """A kernel basis is not zero on zero rows (``z_k(0) = sqrt(2/D) cos b_k``,
        ``k(0, 0) = 1``): zero weights score nothing instead, and all-zero
        data leaves no width to infer."""
        cand, stats = self.run(case, np.zeros_like(case.weights), 5)
        assert len(cand) == 0 and stats.nnz == case.space.n_samples * case.space.n_candidates
        X = sp.csc_matrix(case.X.shape, dtype=case.dtype)
        space = self.make_space(X, case.y, dtype=case.dtype, tmp_path=tmp_path)
        with pytest.raises(ParameterError, match="every row is the same"):
            space.sigma

    def test_model_file_checks(self, case):
        spec = json.loads(json.dumps(case.space.spec()))
        cls = type(case.space)
        for name in cls.spec_params:
            assert cls.check_spec_value(name, spec[name]) == spec[name]
        cls.check_feature_ids(spec, case.ids)
        with pytest.raises(ValueError, match="must be a column"):
            cls.check_feature_ids(spec, [len(case.ids)])
        assert cls.id_key(3) == 3 and cls.source_ids(3) == []
        with pytest.raises(ValueError):
            cls.id_key([1, 2])


class TestRandomFourierFeatures(KernelContract):
    data_kinds = ("valued", "signed", "binary")
    D = 300

    def make_space(self, X, y, *, dtype, tmp_path):
        store = InMemoryStore(X, y, dtype=dtype, id_offset=ID_OFFSET)
        return RandomFourierFeatures(store, n_components=self.D, seed=3)

    def expand(self, X, space):
        E = rff_reference(X, X.shape[1], self.D, space.sigma, 3, ordered=True)
        return E, np.arange(self.D), list(range(self.D))

    def absent_ids(self, space):
        return [self.D, self.D + 9]


class TestRBFKernelFeatures(KernelContract):
    data_kinds = ("valued", "signed", "binary")

    def make_space(self, X, y, *, dtype, tmp_path):
        return RBFKernelFeatures(InMemoryStore(X, y, dtype=dtype, id_offset=ID_OFFSET))

    def expand(self, X, space):
        return rbf_reference(X, X, space.sigma), np.arange(len(X)), list(range(len(X)))

    def absent_ids(self, space):
        return [space.n_candidates, space.n_candidates + 4]


def test_both_spaces_are_registered():
    assert FEATURE_SPACES["rff"] is RandomFourierFeatures
    assert FEATURE_SPACES["rbf"] is RBFKernelFeatures


# ------------------------------------------------------ stores and ids
def test_rff_maps_test_stores_by_id():
    X, dense = make_rows(np.float64, n=20, m=6)
    train = InMemoryStore(X, np.arange(20) % 2)
    space = RandomFourierFeatures(train, n_components=40, sigma=2.0, seed=1)
    spec = json.loads(json.dumps(space.spec()))
    assert spec == {"kind": "rff", "n_components": 40, "sigma": 2.0, "seed": 1,
                    "n_inputs": 6}
    narrow = InMemoryStore(X[:, :4], np.arange(20) % 2)          # fewer columns
    block = feature_space_from_spec(narrow, spec).materialize_ids(list(range(40)))
    wide = np.hstack([dense[:, :4], np.zeros((20, 2))])
    close(sp.csc_matrix((block.data, block.indices, block.indptr)).toarray(),
          rff_reference(wide, 6, 40, 2.0, 1))
    broad = InMemoryStore(sp.hstack([X, sp.csr_matrix(np.ones((20, 2)))]),
                          np.arange(20) % 2)                    # more columns
    clone = feature_space_from_spec(broad, spec)
    with pytest.warns(UltraFSWarning, match="contribute nothing"):
        values = clone.operator().take_rows(np.arange(20))
    close(values, rff_reference(dense, 6, 40, 2.0, 1))


def test_rbf_restricted_spec_predicts_the_same_columns():
    X, dense = make_rows(np.float64, n=30, m=7)
    train = InMemoryStore(X, np.arange(30) % 2, id_offset=ID_OFFSET)
    space = RBFKernelFeatures(train)
    keep = [17, 3, 22]
    spec = json.loads(json.dumps(space.restricted(keep)))
    cls = FEATURE_SPACES[spec["kind"]]
    for name in cls.spec_params:
        cls.check_spec_value(name, spec[name])
    cls.check_feature_ids(spec, [0, 1, 2])
    assert spec["points"]["rows"] == keep and spec["sigma"] == space.sigma
    on_train = feature_space_from_spec(train, spec)
    assert on_train.n_candidates == 3
    full = space.materialize(np.array(keep))
    again = on_train.materialize_ids([0, 1, 2])
    np.testing.assert_array_equal(again.indptr, full.indptr)
    np.testing.assert_allclose(again.data, full.data, rtol=1e-15, atol=0)
    # new rows, with an input the points never have and one beyond n_inputs
    rng = np.random.default_rng(5)
    new = rng.uniform(-1, 2, size=(9, 9)) * (rng.random((9, 9)) < 0.6)
    test = InMemoryStore(new, np.arange(9) % 2, id_offset=ID_OFFSET)
    predicted = feature_space_from_spec(test, spec).materialize_ids([2, 0, 1])
    points = np.hstack([dense[[22, 17, 3]], np.zeros((3, 2))])
    close(sp.csc_matrix((predicted.data, predicted.indices, predicted.indptr),
                        shape=(9, 3)).toarray(),
          rbf_reference(new, points, space.sigma))
    twice = feature_space_from_spec(test, spec).restricted([2, 0])
    assert twice["points"]["rows"] == [22, 17]


# ------------------------------------------------------------- hostile
def _record(space):
    return json.loads(json.dumps(space.restricted([0, 2, 1])))["points"]


FORGED = {
    "not a dict": lambda r: [1, 2],
    "extra field": lambda r: {**r, "omega": [1.0]},
    "missing field": lambda r: {k: v for k, v in r.items() if k != "data"},
    "short indptr": lambda r: {**r, "indptr": r["indptr"][:-1]},
    "indptr from 1": lambda r: {**r, "indptr": [1] + r["indptr"][1:]},
    "decreasing indptr": lambda r: {**r, "indptr": [0, 3, 1, r["indptr"][-1]]},
    "index too large": lambda r: {**r, "indices": [r["n_inputs"]] + r["indices"][1:]},
    "negative index": lambda r: {**r, "indices": [-1] + r["indices"][1:]},
    "unsorted row": lambda r: {**r, "indices": r["indices"][1::-1] + r["indices"][2:]},
    "nan value": lambda r: {**r, "data": [float("nan")] + r["data"][1:]},
    "string value": lambda r: {**r, "data": ["1"] + r["data"][1:]},
    "float index": lambda r: {**r, "indices": [0.5] + r["indices"][1:]},
    "repeated row": lambda r: {**r, "rows": [0, 0, 1]},
    "no points": lambda r: {**r, "rows": [], "indptr": [0], "indices": [], "data": []},
    "zero inputs": lambda r: {**r, "n_inputs": 0},
    "bool inputs": lambda r: {**r, "n_inputs": True},
    "short data": lambda r: {**r, "data": r["data"][:-1]},
}


@pytest.mark.parametrize("forgery", sorted(FORGED))
def test_forged_points_records_are_refused_in_one_line(forgery):
    X, _ = make_rows(np.float64, n=8, m=5)
    store = InMemoryStore(X, np.arange(8) % 2)
    record = _record(RBFKernelFeatures(store, sigma=1.0))
    assert record["indptr"][1] >= 2            # the forgeries assume a full first row
    forged = FORGED[forgery](record)
    with pytest.raises(ValueError) as info:
        RBFKernelFeatures.check_spec_value("points", forged)
    assert "\n" not in str(info.value)
    with pytest.raises(ParameterError, match="rbf points") as info:
        RBFKernelFeatures(store, sigma=1.0, points=forged)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("params,match", [
    ({"sigma": -1.0}, "sigma must be a finite number > 0"),
    ({"sigma": float("nan")}, "sigma must be"),
    ({"sigma": True}, "sigma must be"),
    ({"n_components": 0}, "n_components must be an integer"),
    ({"n_components": 2.5}, "n_components must be an integer"),
    ({"seed": -3}, "seed must be an integer"),
    ({"n_inputs": 10 ** 7}, "too large for random Fourier features.*256 MiB"),
    ({"n_inputs": 0}, "n_inputs must be an integer"),
])
def test_hostile_rff_parameters_are_refused_in_one_line(params, match):
    X, _ = make_rows(np.float64, n=8, m=5)
    store = InMemoryStore(X, np.arange(8) % 2)
    with pytest.raises(ParameterError, match=match) as info:
        RandomFourierFeatures(store, **params)
    assert "\n" not in str(info.value)


def test_hostile_spec_values_are_refused():
    for name, value in (("sigma", -1.0), ("sigma", "2"), ("sigma", float("inf")),
                        ("n_inputs", 10 ** 9), ("n_inputs", 2.0), ("seed", -1),
                        ("n_components", 0), ("n_components", True)):
        with pytest.raises(ValueError) as info:
            RandomFourierFeatures.check_spec_value(name, value)
        assert "\n" not in str(info.value) and not str(info.value).startswith(name)
    with pytest.raises(ValueError, match="must be a finite number > 0"):
        RBFKernelFeatures.check_spec_value("sigma", 0.0)
    with pytest.raises(ValueError, match="must be a column in 0..9"):
        RandomFourierFeatures.check_feature_ids({"n_components": 10}, [3, 10])


def test_rbf_refuses_large_training_stores():
    n = MAX_TRAINING_ROWS + 1
    X = sp.csc_matrix((np.ones(n), (np.arange(n), np.zeros(n, dtype=int))), shape=(n, 1))
    store = InMemoryStore(X, np.arange(n) % 2)
    with pytest.raises(ParameterError, match="use --basis rff") as info:
        RBFKernelFeatures(store)
    assert "\n" not in str(info.value)
