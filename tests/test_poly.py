"""Degree-2 features: exact pruned worst-case analysis, materialisation, CLI."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from ultrafs.scoring.worst_case import worst_case_analysis
from ultrafs.api import select
from ultrafs.cli import main
from ultrafs.errors import ParameterError, UltraFSWarning
from ultrafs.features.poly import PolyFeatures
from ultrafs.kernels.pair_columns import pair_columns
from ultrafs.kernels.poly import column_stats, column_stats_multi, rows_of_columns
from ultrafs.store import InMemoryStore


def expand(X, gamma, coef0):
    """Explicit degree-2 map with the keys PolyFeatures uses."""
    X = np.asarray(X, dtype=np.float64)
    n, m = X.shape
    cols, keys, ids = [], [], []
    for j in range(m):
        cols.append(np.sqrt(2 * gamma * coef0) * X[:, j])
        keys.append(j * (m + 1))
        ids.append(j)
        cols.append(gamma * X[:, j] ** 2)
        keys.append(j * (m + 1) + j + 1)
        ids.append([j, j])
        for k in range(j + 1, m):
            cols.append(np.sqrt(2) * gamma * X[:, j] * X[:, k])
            keys.append(j * (m + 1) + k + 1)
            ids.append([j, k])
    return np.column_stack(cols), np.array(keys), ids


def brute_force(E, keys, weights, k, excluded):
    sums = E.T @ weights
    scores = sums ** 2 if sums.ndim == 1 else (sums ** 2).sum(axis=1)
    keep = (scores > 0) & ~np.isin(keys, excluded)
    order = np.lexsort((keys[keep], -scores[keep]))[:k]
    return keys[keep][order], scores[keep][order]


def make_data(rng, n=70, m=30, density=0.2, binary=False, dtype=np.float64,
              signed=False):
    X = sp.random(n, m, density=density, format="csc",
                  random_state=np.random.RandomState(rng.integers(2**31))).toarray()
    if binary:
        X = (X > 0).astype(float)
    if signed:
        X = X * np.where(rng.random(X.shape) < 0.5, -1.0, 1.0)
    X[:, 4] = 0          # empty column
    X[5, :] = 0          # zero row
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    return X.astype(dtype), y


@pytest.mark.parametrize("kind", ["valued", "binary", "signed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block_size", [1, 6, 30])
@pytest.mark.parametrize("n_seed, prune", [(2, True), (256, True), (256, False)])
def test_pass_equals_brute_force(rng, kind, dtype, block_size, n_seed, prune):
    X, y = make_data(rng, binary=kind == "binary", signed=kind == "signed",
                     dtype=dtype)
    weights = rng.random(len(y)) * y
    E, keys, _ = expand(X.astype(np.float64), 4.0, 0.5)
    excluded = np.sort(brute_force(E, keys, weights, 3, [])[0])
    expected_keys, expected_scores = brute_force(E, keys, weights, 12, excluded)
    features = PolyFeatures(InMemoryStore(X, y, block_size=block_size), gamma=4.0,
                            coef0=0.5, n_seed=n_seed, prune=prune)
    cand, stats = worst_case_analysis(features, weights, 12, excluded=excluded,
                                      scheduler="synchronous")
    np.testing.assert_array_equal(cand.keys, expected_keys)
    np.testing.assert_allclose(cand.scores, expected_scores, rtol=1e-9)
    assert stats.n_candidates == 30 + 30 + 30 * 29 // 2
    if not prune:
        assert stats.details["pairs_pruned"] == 0


@pytest.mark.parametrize("signed", [False, True])
def test_pruning_never_changes_the_result(rng, signed):
    """A strong threshold prunes pairs, yet the result equals the unpruned one."""
    # columns of very different frequency: the bound prunes rare ones
    n, m = 400, 60
    freq = np.geomspace(0.6, 0.01, m)
    X = (rng.random((n, m)) < freq).astype(float)
    if signed:
        X[:, ::3] *= -1.0
    y = np.where(X[:, 0] * X[:, 1] + 0.2 * rng.standard_normal(n) > 0.3, 1.0, -1.0)
    weights = rng.random(n) * y
    E, keys, _ = expand(X, 1.0, 1.0)
    expected = brute_force(E, keys, weights, 5, [])
    for n_seed in (3, 10, 64):
        features = PolyFeatures(InMemoryStore(X, y, block_size=7), n_seed=n_seed)
        cand, stats = worst_case_analysis(features, weights, 5, scheduler="threads")
        np.testing.assert_array_equal(cand.keys, expected[0])
        assert stats.details["live_columns"] < m
    assert stats.details["pairs_evaluated"] < m * (m - 1) // 2


def test_same_result_on_every_scheduler(rng, local_cluster_client):
    X, y = make_data(rng, n=120, m=40)
    weights = rng.random(len(y)) * y
    store = InMemoryStore(X, y, block_size=9)
    reference, _ = worst_case_analysis(PolyFeatures(store, gamma=2.0, prune=False),
                                       weights, 10, scheduler="synchronous")
    for scheduler in ("threads", "processes", local_cluster_client):
        for prune in (True, False):
            features = PolyFeatures(store, gamma=2.0, n_seed=5, prune=prune)
            cand, _ = worst_case_analysis(features, weights, 10, scheduler=scheduler)
            np.testing.assert_array_equal(cand.keys, reference.keys)
            np.testing.assert_array_equal(cand.scores, reference.scores)


def test_kernels_match_dense(rng):
    X, _ = make_data(rng)
    csc = sp.csc_matrix(X)
    row_ptr, row_cols, row_vals = rows_of_columns(
        csc.indptr.astype(np.int64), csc.indices, csc.data, X.shape[0])
    csr = sp.csr_matrix((row_vals, row_cols, row_ptr), shape=X.shape)
    np.testing.assert_array_equal(csr.toarray(), X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("binary", [False, True])
def test_pair_columns_match_dense(rng, dtype, binary):
    """Generated columns equal the dense products: linear, square, cross,
    empty columns, zero rows, sources outside the store, 0/1 data."""
    X, _ = make_data(rng)
    X = X.astype(dtype)
    if binary:
        X = (X != 0).astype(dtype)
    X[:, 3] = 0.0                        # an empty column
    X[5, :] = 0.0                        # a zero row
    csc = sp.csc_matrix(X)
    csc.eliminate_zeros()
    data = np.zeros(0, dtype) if binary else csc.data
    first = np.array([0, 1, 1, 3, 0, 2, -1, 4], dtype=np.int64)
    second = np.array([-1, 1, 2, 0, 3, 4, 1, -2], dtype=np.int64)
    scale = np.array([1.5, 2.0, 0.5, 1.0, 3.0, 0.25, 1.0, 1.0])
    indptr, indices, values = pair_columns(csc.indptr.astype(np.int64), csc.indices,
                                           data, first, second, scale)
    if binary:
        assert len(values) == 0
        values = np.repeat(scale, np.diff(indptr))
    got = sp.csc_matrix((values, indices, indptr), shape=(X.shape[0], len(first)))
    x = X.astype(np.float64)
    expected = np.column_stack([
        1.5 * x[:, 0], 2.0 * x[:, 1] * x[:, 1], 0.5 * (x[:, 1] * x[:, 2]),
        x[:, 3] * x[:, 0], 3.0 * (x[:, 0] * x[:, 3]), 0.25 * (x[:, 2] * x[:, 4]),
        np.zeros(len(x)), np.zeros(len(x))])
    np.testing.assert_array_equal(got.toarray(), expected)
    assert np.all(np.diff(indices[indptr[2]:indptr[3]]) > 0)


def test_compact_materialization_equals_the_plain_one(rng):
    """``materialize_compact`` keeps one value per column of 0/1 data; the
    columns are those of the plain materialisation."""
    X = (rng.random((200, 15)) < 0.3).astype(np.float64)
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    features = PolyFeatures(InMemoryStore(X, y, block_size=4), gamma=2.0)
    keys = features.codec.encode(np.array([0, 2, 1, 3]), np.array([-1, 2, 4, 9]))
    plain = features.materialize(keys)
    compact = features.materialize_compact(keys)
    assert compact.data is None and len(compact.column_values) == 4
    np.testing.assert_array_equal(compact.indptr, plain.indptr)
    np.testing.assert_array_equal(compact.indices, plain.indices)
    np.testing.assert_array_equal(compact.values(), plain.data)


def test_model_matches_sklearn_on_expanded_columns(rng):
    """Decision values equal those of scikit-learn's model on the explicit columns."""
    from sklearn.linear_model import LogisticRegression

    n, m = 300, 12
    X = rng.standard_normal((n, m))
    y = np.where(X[:, 0] * X[:, 1] - X[:, 2] + 0.1 * rng.standard_normal(n) > 0, 1.0, -1.0)
    model = select(X, y, B=3, max_iter=3, tol=0.0, poly=2, gamma=1.0, coef0=1.0,
                   inner_tol=1e-10, inner_max_iter=100000)
    assert [0, 1] in model.features
    E, _, ids = expand(X, 1.0, 1.0)
    columns = [ids.index(f) for f in model.features]
    decision = model.decision_function_store(InMemoryStore(X, y))
    np.testing.assert_allclose(decision, E[:, columns] @ model.coef + model.intercept,
                               rtol=1e-6, atol=1e-8)
    # with one group the FGM subproblem is L2 logistic regression with the same C
    single = select(X, y, B=6, max_iter=1, poly=2, C=10.0, inner_tol=1e-12,
                    inner_max_iter=100000)
    columns = [ids.index(f) for f in single.features]
    ref = LogisticRegression(C=10.0, tol=1e-12, max_iter=100000).fit(E[:, columns], y)
    np.testing.assert_allclose(single.coef, ref.coef_.ravel(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(single.intercept, ref.intercept_[0], rtol=1e-4,
                               atol=1e-6)


def test_estimator_poly(rng):
    from ultrafs import FGMClassifier

    X = rng.standard_normal((200, 8))
    y = np.where(X[:, 2] * X[:, 5] > 0, "a", "b")
    clf = FGMClassifier(B=2, max_iter=2, poly=2, gamma=1.0).fit(X, y)
    assert [2, 5] in clf.selected_features_
    assert clf.score(X, y) > 0.85


def test_bad_parameters(rng):
    X, y = make_data(rng)
    with pytest.raises(ParameterError, match="gamma"):
        select(X, y, poly=2, gamma=0.0)
    with pytest.raises(ParameterError, match="poly"):
        select(X, y, poly=3)


def test_cli_poly_and_missing_columns(tmp_path, rng):
    from sklearn.datasets import dump_svmlight_file

    X = rng.standard_normal((150, 10))
    y = np.where(X[:, 8] * X[:, 9] > 0, 1, -1)
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"), zero_based=False)
    dump_svmlight_file(X[:, :8], y, str(tmp_path / "test.svm"), zero_based=False)
    runner = CliRunner()
    for name in ("train", "test"):
        result = runner.invoke(main, ["ingest", str(tmp_path / f"{name}.svm"),
                                      str(tmp_path / f"{name}.zarr")])
        assert result.exit_code == 0, result.output
    model_path = tmp_path / "model.json"
    result = runner.invoke(main, ["select", "--data", str(tmp_path / "train.zarr"),
                                  "--poly", "2", "--B", "2", "--max-iter", "2",
                                  "--out", str(model_path)])
    assert result.exit_code == 0, result.output
    model = json.loads(model_path.read_text())
    assert [9, 10] in model["features"]           # 1-based ids of the pair
    assert model["feature_space"]["kind"] == "poly2"
    result = runner.invoke(main, ["evaluate", "--model", str(model_path), "--data",
                                  str(tmp_path / "test.zarr")])
    assert result.exit_code == 0
    assert "absent from the store" in result.stderr
    for args in (["--poly", "3"], ["--gamma", "0"], ["--gamma", "-1"]):
        result = runner.invoke(main, ["select", "--data", str(tmp_path / "train.zarr"),
                                      *args])
        assert result.exit_code == 2 and "Traceback" not in result.output


def test_missing_pair_column_warns(rng):
    X = rng.standard_normal((100, 6))
    y = np.where(X[:, 4] * X[:, 5] > 0, 1.0, -1.0)
    model = select(X, y, B=2, max_iter=1, poly=2)
    assert [4, 5] in model.features
    with pytest.warns(UltraFSWarning, match="absent"):
        decision = model.decision_function_store(InMemoryStore(X[:, :5], y))
    assert np.all(np.isfinite(decision))


def test_degree2_through_parquet_checkpoint_and_cluster(rng, tmp_path,
                                                        local_cluster_client):
    """Degree 2 gives one model on Zarr, Parquet long, a cluster, and after resume."""
    from ultrafs.store import open_store
    from ultrafs.store.writers.parquet_long_writer import write_parquet_long
    from ultrafs.store.writers.zarr_writer import write_store

    X = (rng.random((300, 40)) < 0.15).astype(float)
    y = np.where(X[:, 3] * X[:, 7] + X[:, 11] + 0.1 * rng.standard_normal(300) > 0.5,
                 1.0, -1.0)
    write_store(tmp_path / "train.zarr", X, y)
    write_parquet_long(tmp_path / "train.pq", X, y)
    args = dict(B=4, max_iter=4, tol=0.0, poly=2, gamma=2.0)
    reference = select(str(tmp_path / "train.zarr"), **args)
    assert any(isinstance(f, list) and f[0] != f[1] for f in reference.features)
    for data, scheduler in ((str(tmp_path / "train.pq"), "threads"),
                            (str(tmp_path / "train.zarr"), local_cluster_client)):
        model = select(data, scheduler=scheduler, **args)
        assert model.features == reference.features
        np.testing.assert_array_equal(model.coef, reference.coef)
    ckpt = tmp_path / "ckpt"
    select(str(tmp_path / "train.zarr"), checkpoint=ckpt, **dict(args, max_iter=2))
    resumed = select(str(tmp_path / "train.zarr"), checkpoint=ckpt, resume=True, **args)
    assert resumed.features == reference.features
    np.testing.assert_array_equal(resumed.coef, reference.coef)
    decision = reference.decision_function_store(open_store(tmp_path / "train.pq"))
    np.testing.assert_allclose(
        decision, reference.decision_function_store(open_store(tmp_path / "train.zarr")))


# ----------------------------------------------------------- K classes
@pytest.mark.parametrize("kind", ["valued", "binary", "signed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_seed, prune", [(2, True), (256, True), (256, False)])
def test_multiclass_pass_equals_brute_force(rng, kind, dtype, n_seed, prune):
    X, y = make_data(rng, binary=kind == "binary", signed=kind == "signed",
                     dtype=dtype)
    weights = rng.standard_normal((len(y), 3))
    E, keys, _ = expand(X.astype(np.float64), 4.0, 0.5)
    excluded = np.sort(brute_force(E, keys, weights, 3, [])[0])
    expected_keys, expected_scores = brute_force(E, keys, weights, 12, excluded)
    for block_size in (1, 7):
        features = PolyFeatures(InMemoryStore(X, y, block_size=block_size), gamma=4.0,
                                coef0=0.5, n_seed=n_seed, prune=prune)
        cand, stats = worst_case_analysis(features, weights, 12, excluded=excluded,
                                          scheduler="synchronous")
        np.testing.assert_array_equal(cand.keys, expected_keys)
        np.testing.assert_allclose(cand.scores, expected_scores, rtol=1e-9)
        if not prune:
            assert stats.details["pairs_pruned"] == 0


@pytest.mark.parametrize("signed", [False, True])
def test_multiclass_pruning_never_changes_the_result(rng, signed):
    """The ||A_i||-bound prunes columns and pairs, yet the result is exact."""
    n, m = 400, 60
    freq = np.geomspace(0.6, 0.01, m)
    X = (rng.random((n, m)) < freq).astype(float)
    if signed:
        X[:, ::3] *= -1.0
    label = (X[:, 0] * X[:, 1] > 0).astype(int) + (X[:, 2] > 0)
    weights = np.eye(3)[label] - 1.0 / 3 + 0.05 * rng.standard_normal((n, 3))
    y = np.where(label > 0, 1.0, -1.0)
    E, keys, _ = expand(X, 1.0, 1.0)
    expected = brute_force(E, keys, weights, 5, [])
    for n_seed in (3, 64):
        features = PolyFeatures(InMemoryStore(X, y, block_size=7), n_seed=n_seed)
        cand, stats = worst_case_analysis(features, weights, 5, scheduler="threads")
        np.testing.assert_array_equal(cand.keys, expected[0])
        np.testing.assert_allclose(cand.scores, expected[1], rtol=1e-9)
        assert stats.details["live_columns"] < m
    assert stats.details["pairs_evaluated"] + stats.details["pairs_pruned"] \
        < m * (m - 1) // 2


def test_multiclass_same_result_on_every_scheduler(rng):
    X, y = make_data(rng, n=120, m=40)
    weights = rng.standard_normal((len(y), 4))
    store = InMemoryStore(X, y, block_size=9)
    reference, _ = worst_case_analysis(PolyFeatures(store, gamma=2.0, prune=False),
                                       weights, 10, scheduler="synchronous")
    for scheduler, prune in (("threads", True), ("threads", False), ("processes", True)):
        features = PolyFeatures(store, gamma=2.0, n_seed=5, prune=prune)
        cand, _ = worst_case_analysis(features, weights, 10, scheduler=scheduler)
        np.testing.assert_array_equal(cand.keys, reference.keys)
        np.testing.assert_array_equal(cand.scores, reference.scores)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("binary", [False, True])
def test_column_stats_multi_matches_dense(rng, dtype, binary):
    X, _ = make_data(rng, signed=not binary, binary=binary, dtype=dtype)
    csc = sp.csc_matrix(X)
    indptr = csc.indptr.astype(np.int64)
    D = X.astype(np.float64)
    A = rng.standard_normal((X.shape[0], 3))
    A[7] = 0.0                                           # a row without weight
    norms = np.sqrt((A ** 2).sum(axis=1))
    data = np.zeros(0) if binary else csc.data
    lin, sq, total, zero, max_abs, min_value = column_stats_multi(
        indptr, csc.indices, data, A, norms, binary)
    np.testing.assert_allclose(lin, ((D.T @ A) ** 2).sum(axis=1), rtol=1e-12, atol=0)
    np.testing.assert_allclose(sq, (((D ** 2).T @ A) ** 2).sum(axis=1), rtol=1e-12,
                               atol=0)
    np.testing.assert_allclose(total, np.abs(D).T @ norms, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(zero, np.zeros(X.shape[1]))
    np.testing.assert_array_equal(max_abs, np.abs(D).max(axis=0))
    assert min_value == min(0.0, D.min())
    assert lin[4] == sq[4] == total[4] == max_abs[4] == 0.0      # empty column
    # one class: the 1-D kernel's squares
    one = column_stats(indptr, csc.indices, data, np.ascontiguousarray(A[:, 0]), binary)
    lin1, sq1, *_ = column_stats_multi(indptr, csc.indices, data,
                                       np.ascontiguousarray(A[:, :1]),
                                       np.abs(A[:, 0]), binary)
    np.testing.assert_array_equal(lin1, one[0] * one[0])
    np.testing.assert_array_equal(sq1, one[1] * one[1])
