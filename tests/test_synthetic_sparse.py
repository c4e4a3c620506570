"""kddb-like synthetic generator: shape, skew, planted model, reproducibility."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.linear_model import LogisticRegression

from ultrafs.errors import ParameterError, StoreExistsError
from ultrafs.store.writers.libsvm import MIN_MEMORY_BUDGET
from ultrafs.store import open_store
from ultrafs.datasets.kddb_like import make_kddb_like
from ultrafs.datasets.kddb_model import ZipfColumns, balanced_threshold, sample_row_sets

N_SAMPLES, N_FEATURES, N_TEST = 2000, 5000, 1000
TOOL = Path(__file__).resolve().parents[1] / "tools" / "make_kddb_like.py"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A training and a test store (2,000 and 1,000 rows, 5,000 columns)."""
    folder = tmp_path_factory.mktemp("kddb_like")
    summary = make_kddb_like(folder / "train.zarr", n_samples=N_SAMPLES,
                             n_features=N_FEATURES, seed=3,
                             test_output=folder / "test.zarr", n_test=N_TEST)
    return summary, open_store(folder / "train.zarr"), open_store(folder / "test.zarr")


def store_arrays(store):
    """(indptr, indices, labels) of a whole store."""
    block = store.read_range(0, store.n_features)
    return block.indptr, block.indices, store.read_targets()


def planted_design(store):
    """Explicit planted features of a store: linear columns, then pair products."""
    planted = store.attrs["planted"]
    X = store.to_csc()
    columns = [X[:, j].toarray().ravel() for j in planted["linear"]]
    columns += [X[:, j].toarray().ravel() * X[:, k].toarray().ravel()
                for j, k in planted["cross"]]
    weights = np.array(planted["weights"]["linear"] + planted["weights"]["cross"])
    return np.column_stack(columns), weights


# ------------------------------------------------------------------ shape
def test_shape_binary_and_metadata(generated):
    summary, train, test = generated
    assert (train.n_samples, train.n_features) == (N_SAMPLES, N_FEATURES)
    assert (test.n_samples, test.n_features) == (N_TEST, N_FEATURES)
    for store in (train, test):
        assert store.binary and store.id_offset == 0
        np.testing.assert_array_equal(store.classes, [-1.0, 1.0])
    assert train.nnz == summary["nnz"] and test.nnz == summary["test"]["nnz"]
    assert train.attrs["generator"]["split"] == "train"
    assert test.attrs["generator"]["split"] == "test"
    assert train.attrs["generator"]["seed"] == 3
    assert train.attrs["created_by"].startswith("python: ultrafs.datasets.kddb_like")


def test_rows_hold_about_nnz_per_row(generated):
    _, train, _ = generated
    row_nnz = np.bincount(store_arrays(train)[1], minlength=N_SAMPLES)
    assert row_nnz.min() >= 1
    assert 28 <= row_nnz.mean() <= 31          # Poisson(29) plus a few injected entries
    assert 3 <= row_nnz.std() <= 8


def test_labels_roughly_balanced(generated):
    summary, train, test = generated
    for store in (train, test):
        assert 0.35 <= np.mean(store.read_labels() > 0) <= 0.65
    assert summary["positive_fraction"] == np.mean(train.read_labels() > 0)


def test_column_frequencies_are_zipf_like(generated):
    _, train, _ = generated
    counts = np.diff(store_arrays(train)[0])
    assert counts.max() >= 0.8 * N_SAMPLES              # the head column is nearly everywhere
    assert counts.max() >= 100 * max(np.median(counts), 1)
    # shuffled ids: the 100 most frequent columns are spread over the id range
    head = np.argsort(-counts, kind="stable")[:100]
    assert 0.3 * N_FEATURES < head.mean() < 0.7 * N_FEATURES


def test_unshuffled_columns_follow_rank_order(tmp_path):
    make_kddb_like(tmp_path / "a.zarr", n_samples=1000, n_features=2000,
                   shuffle_columns=False, seed=1)
    counts = np.diff(open_store(tmp_path / "a.zarr").read_range(0, 2000).indptr)
    assert counts[0] > counts[10] > counts[100] > counts[1000:].mean()


# --------------------------------------------------------- planted model
def test_planted_attrs_are_consistent_with_the_store(generated):
    summary, train, _ = generated
    planted = train.attrs["planted"]
    assert planted == summary["planted"]
    assert len(planted["linear"]) == 20 and len(planted["cross"]) == 20
    ids = planted["linear"] + [j for pair in planted["cross"] for j in pair]
    assert len(set(ids)) == len(ids) and all(0 <= j < N_FEATURES for j in ids)
    assert all(j < k for j, k in planted["cross"])
    design, _ = planted_design(train)
    counts = design.sum(axis=0).astype(int).tolist()
    assert counts == planted["linear_counts"] + planted["cross_counts"]


def test_planted_pairs_cooccur_often_enough(generated):
    _, train, test = generated
    for store in (train, test):
        share = np.array(store.attrs["planted"]["cross_counts"]) / store.n_samples
        assert share.mean() >= 0.007                 # min_cooccurrence=0.01 is the target


def test_each_planted_pair_cooccurs_in_about_the_target_share(tmp_path):
    summary = make_kddb_like(tmp_path / "a.zarr", n_samples=20_000, n_features=20_000,
                             min_cooccurrence=0.01, seed=8)
    share = np.array(summary["cross_counts"]) / 20_000
    assert share.min() >= 0.007 and share.mean() <= 0.02


@pytest.mark.parametrize("split", ["train", "test"])
def test_planted_features_predict_the_labels(generated, split):
    _, train, test = generated
    store = train if split == "train" else test
    design, weights = planted_design(store)
    y = store.read_labels()
    threshold = store.attrs["planted"]["threshold"]
    exact = np.where(design @ weights > threshold, 1.0, -1.0)
    assert np.mean(exact == y) > 0.95                    # only the noise flips labels
    fitted = LogisticRegression(C=100.0, max_iter=5000).fit(design, y)
    assert fitted.score(design, y) > 0.9


def test_test_split_shares_model_and_threshold(generated):
    summary, train, test = generated
    a, b = train.attrs["planted"], test.attrs["planted"]
    for key in ("linear", "cross", "weights", "threshold", "noise", "cross_injection"):
        assert a[key] == b[key]
    assert summary["test"]["threshold"] == summary["threshold"]


# ------------------------------------------------------- reproducibility
def test_same_seed_gives_identical_stores(tmp_path):
    kwargs = dict(n_samples=500, n_features=3000, seed=11, chunk_rows=128)
    first = make_kddb_like(tmp_path / "a.zarr", **kwargs)
    second = make_kddb_like(tmp_path / "b.zarr", **kwargs)
    for x, y in zip(store_arrays(open_store(first["output"])),
                    store_arrays(open_store(second["output"]))):
        np.testing.assert_array_equal(x, y)
    assert first["planted"] == second["planted"]
    other = make_kddb_like(tmp_path / "c.zarr", **dict(kwargs, seed=12))
    assert other["planted"]["linear"] != first["planted"]["linear"]
    indptr, indices, _ = store_arrays(open_store(other["output"]))
    a_indptr, a_indices, _ = store_arrays(open_store(first["output"]))
    assert not (np.array_equal(indptr, a_indptr) and np.array_equal(indices, a_indices))


def test_tiny_memory_budget_spills_and_gives_the_same_store(tmp_path):
    kwargs = dict(n_samples=1500, n_features=4000, seed=5, chunk_rows=100,
                  test_output=None)
    small = make_kddb_like(tmp_path / "small.zarr", memory_budget=MIN_MEMORY_BUDGET, **kwargs)
    large = make_kddb_like(tmp_path / "large.zarr", memory_budget=2 ** 28, **kwargs)
    assert small["n_runs"] >= 5 and large["n_runs"] == 0
    for x, y in zip(store_arrays(open_store(small["output"])),
                    store_arrays(open_store(large["output"]))):
        np.testing.assert_array_equal(x, y)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["large.zarr", "small.zarr"]


# --------------------------------------------------------------- pieces
def test_sample_row_sets_gives_distinct_requested_counts(rng):
    zipf = ZipfColumns.build(200, 1.1, rng)
    counts = rng.integers(1, 60, size=300)
    keys = sample_row_sets(rng, counts, zipf)
    assert np.all(np.diff(keys) > 0)                        # sorted, distinct
    rows, ranks = np.divmod(keys, 200)
    np.testing.assert_array_equal(np.bincount(rows, minlength=300), counts)
    assert ranks.min() >= 0 and ranks.max() < 200


@pytest.mark.parametrize("exponent", [1.5, 4.0])
def test_sample_row_sets_fills_rows_asking_for_nearly_every_column(rng, exponent):
    zipf = ZipfColumns.build(50, exponent, rng)
    counts = np.full(100, 49)
    keys = sample_row_sets(rng, counts, zipf)
    assert np.all(np.diff(keys) > 0)
    np.testing.assert_array_equal(np.bincount(keys // 50, minlength=100), counts)


def test_sample_row_sets_is_successive_sampling(rng):
    """Inclusion frequencies match a plain simulation of successive sampling."""
    zipf = ZipfColumns.build(6, 2.0, None)
    p = zipf.probabilities()
    counts = np.full(20_000, 3)
    keys = sample_row_sets(rng, counts, zipf)
    observed = np.bincount(keys % 6, minlength=6) / 20_000
    reference = np.zeros(6)
    for _ in range(20_000):
        reference[rng.choice(6, size=3, replace=False, p=p)] += 1 / 20_000
    np.testing.assert_allclose(observed, reference, atol=0.02)


def test_draw_ranks_follows_the_zipf_probabilities(rng):
    zipf = ZipfColumns.build(20, 1.1, None)
    draws = np.bincount(zipf.draw_ranks(rng, 200_000), minlength=20) / 200_000
    np.testing.assert_allclose(draws, zipf.probabilities(), atol=0.005)


def test_balanced_threshold_avoids_atoms(rng):
    scores = np.concatenate([np.ones(2000), rng.normal(0.0, 2.0, 8000)])
    threshold = balanced_threshold(scores, noise=0.1)
    assert 0.4 <= np.mean(scores < threshold) <= 0.6
    assert abs(threshold - 1.0) > 0.25                    # keeps away from the atom at 1


def test_balanced_threshold_when_an_atom_covers_the_window(rng):
    scores = np.concatenate([np.zeros(4500), rng.normal(0.0, 2.0, 5500)])
    threshold = balanced_threshold(scores, noise=0.1)
    assert abs(threshold) > 0.25                          # never cuts through the atom at 0
    assert abs(np.mean(scores < threshold) - 0.5) <= 0.3


def test_balanced_threshold_of_one_big_atom_takes_its_edge():
    scores = np.concatenate([np.zeros(900), np.ones(100)])
    threshold = balanced_threshold(scores, noise=0.1)
    assert 0.0 < threshold < 1.0


def test_small_feature_counts_fall_back_to_frequent_ranks(tmp_path):
    summary = make_kddb_like(tmp_path / "a.zarr", n_samples=400, n_features=30,
                             nnz_per_row=5, n_linear=4, n_cross=3, seed=2)
    planted = summary["planted"]
    ids = planted["linear"] + [j for pair in planted["cross"] for j in pair]
    assert len(set(ids)) == 10
    assert open_store(tmp_path / "a.zarr").n_features == 30


# ---------------------------------------------------------------- errors
def test_parameter_errors(tmp_path):
    with pytest.raises(ParameterError, match="exceeds n_features"):
        make_kddb_like(tmp_path / "a.zarr", n_samples=10, n_features=10, n_linear=5,
                       n_cross=3)
    with pytest.raises(ParameterError, match="n_test"):
        make_kddb_like(tmp_path / "a.zarr", n_samples=10, n_features=100,
                       test_output=tmp_path / "t.zarr")
    with pytest.raises(ParameterError, match="differ"):
        make_kddb_like(tmp_path / "a.zarr", n_samples=10, n_features=100,
                       test_output=tmp_path / "a.zarr", n_test=5)
    with pytest.raises(ParameterError, match="memory_budget"):
        make_kddb_like(tmp_path / "a.zarr", n_samples=10, n_features=100, memory_budget=10)
    with pytest.raises(ParameterError, match="seed"):
        make_kddb_like(tmp_path / "a.zarr", n_samples=10, n_features=100, seed=-1)
    (tmp_path / "x.zarr").mkdir()
    with pytest.raises(StoreExistsError):
        make_kddb_like(tmp_path / "x.zarr", n_samples=10, n_features=100)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.zarr"]


# ------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("make_kddb_like", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_writes_both_stores(tool, tmp_path):
    result = CliRunner().invoke(tool.main, [
        str(tmp_path / "a.zarr"), "--n-samples", "600", "--n-features", "3000",
        "--seed", "4", "--memory-budget", "1", "--test-out", str(tmp_path / "t.zarr"),
        "--n-test", "300"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["test"]["n_samples"] == 300
    store = open_store(tmp_path / "a.zarr")
    assert store.n_features == open_store(tmp_path / "t.zarr").n_features == 3000
    assert store.attrs["generator"]["seed"] == 4
    assert "make_kddb_like.py" in store.attrs["created_by"]


def test_cli_reports_errors(tool, tmp_path):
    runner = CliRunner()
    result = runner.invoke(tool.main, [str(tmp_path / "a.zarr"), "--n-samples", "10",
                                       "--n-features", "10"])
    assert result.exit_code == 1 and "exceeds n_features" in result.output
    result = runner.invoke(tool.main, [str(tmp_path / "a.zarr"), "--n-samples", "10",
                                       "--n-features", "100", "--n-test", "5"])
    assert result.exit_code == 2 and "--test-out" in result.output
