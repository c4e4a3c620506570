"""Cross-validation along the ℓ1-LR path (issue 37 item 5): ``ultrafs path --cv K``.

The folds are stratified and seeded; every fold is solved at the whole
data's λ; the held-out deviance at each λ equals a hand computation that
refits each fold with the path's own code (:func:`fit_l1_path`) and
scores it with numpy; the chosen λ follow glmnet's ``lambda.min`` and
``lambda.1se``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.cli_tools import run
from tests.sparse_problems import sparse_binary_problem
from ultrafs.methods.l1_path import fit_l1_path, lambda_grid
from ultrafs.methods.path_cv import (cross_validate_path, cv_summary, fold_scores,
                                     one_se_choice)
from ultrafs.methods.slores import slores_statistics
from ultrafs.methods.validation import stratified_folds
from ultrafs.store.memory import InMemoryStore
from ultrafs.store.writers.zarr_writer import write_store


@pytest.fixture(scope="module")
def problem():
    X, y = sparse_binary_problem(3, 150, 200, 0.06)
    store = InMemoryStore(X.tocsc(), y)
    grid = lambda_grid(slores_statistics(store, y).lambda_max, 8, 0.1, 0.95)
    return X, y, store, grid


def test_folds_are_deterministic_and_stratified(problem):
    X, y, store, grid = problem
    a = cross_validate_path(store, y, grid, n_folds=4, seed=7)
    b = cross_validate_path(store, y, grid, n_folds=4, seed=7)
    assert np.array_equal(a.deviance, b.deviance)
    assert np.array_equal(a.accuracy, b.accuracy) and np.array_equal(a.nnz, b.nnz)
    other = cross_validate_path(store, y, grid, n_folds=4, seed=8)
    assert not np.array_equal(a.deviance, other.deviance)
    folds = stratified_folds(y, 4, 7)
    assert a.fold_sizes == [len(test) for _, test in folds]
    assert max(a.fold_sizes) - min(a.fold_sizes) <= 1
    share = np.mean(y > 0)
    for train, test in folds:
        assert np.intersect1d(train, test).size == 0 and train.size + test.size == y.size
        # each class dealt round the folds: at most one row from its share
        assert abs(np.sum(y[test] > 0) - share * test.size) <= 1.0


def test_cv_deviance_equals_refitting_each_fold_by_hand(problem):
    X, y, store, grid = problem
    cv = cross_validate_path(store, y, grid, n_folds=3, seed=1)
    dense = X.toarray()
    for f, (train, test) in enumerate(stratified_folds(y, 3, 1)):
        fold_store = InMemoryStore(X[train].tocsc(), y[train])
        path = fit_l1_path(fold_store, y[train], lambdas=grid)
        assert np.allclose(path.lambdas, grid, rtol=0, atol=0)
        for j, (columns, coef, intercept) in enumerate(
                zip(path.columns, path.coefs, path.intercepts)):
            decision = dense[test][:, columns] @ coef + intercept
            deviance = 2.0 * np.mean(np.log1p(np.exp(-y[test] * decision)))
            accuracy = np.mean(np.where(decision > 0, 1.0, -1.0) == y[test])
            assert cv.deviance[f, j] == pytest.approx(deviance, rel=1e-9, abs=1e-12)
            assert cv.accuracy[f, j] == accuracy
            assert cv.nnz[f, j] == len(columns)
    # the summary: glmnet's cvm / cvsd (fold-size weighted, se = std / sqrt(K - 1))
    w = np.array(cv.fold_sizes, dtype=float)
    mean = np.average(cv.deviance, axis=0, weights=w)
    std = np.sqrt(np.average((cv.deviance - mean) ** 2, axis=0, weights=w))
    s = cv_summary(cv.deviance, cv.accuracy, cv.nnz, cv.fold_sizes)
    assert np.allclose(s["deviance_mean"], mean) and np.allclose(s["deviance_std"], std)
    assert np.allclose(s["deviance_se"], std / np.sqrt(2))
    assert np.allclose(s["nnz_mean"], cv.nnz.mean(axis=0))


def test_fold_scores():
    decision = np.array([2.0, -1.0, 0.0, 0.5])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    deviance, accuracy = fold_scores(decision, y)
    assert deviance == pytest.approx(2 * np.mean(np.log1p(np.exp(-y * decision))))
    assert accuracy == 0.5


def test_one_standard_error_rule():
    # λ decreasing: the mean falls, rises, falls again to its minimum at 4
    mean = np.array([5.0, 3.0, 2.0, 2.05, 1.9, 1.95])
    se = np.array([0.1, 0.1, 0.1, 0.1, 0.15, 0.1])
    index_min, index_1se = one_se_choice(mean, se)
    assert index_min == 4
    assert index_1se == 2            # the largest λ with mean <= 1.9 + 0.15
    # ties: the largest λ of the smallest mean
    assert one_se_choice([3.0, 1.0, 1.0], [0.0, 0.0, 0.0]) == (1, 1)
    # a standard error of zero: the 1-SE choice is lambda_min
    assert one_se_choice([3.0, 2.0, 1.0], [0.0, 0.0, 0.0]) == (2, 2)


def test_too_few_rows_of_a_class_is_refused(problem):
    X, y, store, grid = problem
    from ultrafs.errors import ParameterError

    y2 = np.where(np.arange(y.size) < 2, 1.0, -1.0)
    with pytest.raises(ParameterError, match="at least 5 rows of each class"):
        cross_validate_path(InMemoryStore(X.tocsc(), y2), y2, grid, n_folds=5)


def test_path_cv_cli_records_and_prints_the_choice(tmp_path):
    X, y = sparse_binary_problem(4, 150, 120, 0.06)
    data = tmp_path / "train.zarr"
    write_store(data, X, y, command="test")
    out = tmp_path / "path.json"
    result = run("path", "--data", data, "--n-lambdas", 6, "--cv", 3, "--seed", 2,
                 "--progress", "--out", out)
    doc = json.loads(out.read_text())
    cv = doc["cv"]
    assert cv["n_folds"] == 3 and cv["seed"] == 2 and len(cv["points"]) == 6
    assert [p["lambda"] for p in cv["points"]] == [s["lambda"] for s in doc["path"]]
    mean = [p["deviance_mean"] for p in cv["points"]]
    se = [p["deviance_se"] for p in cv["points"]]
    assert (cv["index_min"], cv["index_1se"]) == one_se_choice(mean, se)
    assert cv["lambda_1se"] == doc["path"][cv["index_1se"]]["lambda"]
    # piped: one progress line per λ of the CV, then the chosen λ
    lines = result.output.splitlines()
    assert sum("held-out deviance" in ln and "(mean of 3 folds)" in ln
               and ln.startswith("λ/λ_max") for ln in lines) == 6
    assert any(ln.startswith("lambda_min = ") for ln in lines)
    assert any(ln.startswith("lambda_1se = ") for ln in lines)
    # the same CV as the API's on the same store and λ
    from ultrafs.store import open_store

    again = cross_validate_path(open_store(data), y, np.array(
        [s["lambda"] for s in doc["path"]]), n_folds=3, seed=2)
    assert np.allclose(again.summary["deviance_mean"], mean, rtol=1e-12)
