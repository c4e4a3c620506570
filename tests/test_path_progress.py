"""Progress of the ℓ1 path, its count search and its cross-validation
(issue 37 items 1 and 5), through :mod:`ultrafs.progress`: silent unless a
run shows progress; when stderr is not a terminal, one line per phase (and,
for the cross-validation, one line per λ)."""

from __future__ import annotations

import numpy as np

from tests.sparse_problems import sparse_binary_problem
from ultrafs.api import fit
from ultrafs.methods.l1_path import fit_l1_path, lambda_grid
from ultrafs.methods.path_cv import cross_validate_path
from ultrafs.methods.slores import slores_statistics
from ultrafs.progress import showing
from ultrafs.store.memory import InMemoryStore


def _store():
    X, y = sparse_binary_problem(6, 140, 120, 0.06)
    return InMemoryStore(X.tocsc(), y), y


def test_path_phase_is_silent_unless_shown(capsys):
    store, y = _store()
    fit_l1_path(store, y, n_lambdas=5)
    assert capsys.readouterr().err == ""
    with showing(True):
        path = fit_l1_path(store, y, n_lambdas=5)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith("ℓ1 path: 5/5 λs in ")
    assert err[0].endswith(f"λ/λ_max 0.1: {path.records[-1]['nnz']} nonzero")


def test_count_search_phase_names_its_steps(capsys):
    store, y = _store()
    model = fit("l1", store, n_features_to_select=7, progress=True)
    err = capsys.readouterr().err.splitlines()
    line = next(ln for ln in err if ln.startswith("ℓ1 path to 7 nonzero: "))
    steps = int(line.split(": ")[1].split(" ")[0].split("/")[0])
    assert steps >= len(model.history)      # every point solved, the model's among them
    assert f"(best so far {len(model.features)})" in line


def test_cross_validation_writes_a_line_per_lambda(capsys):
    store, y = _store()
    grid = lambda_grid(slores_statistics(store, y).lambda_max, 6)
    with showing(True):
        cv = cross_validate_path(store, y, grid, n_folds=3, lambda_max=grid[0] / 0.95)
    err = capsys.readouterr().err.splitlines()
    per_lambda = [ln for ln in err if ln.startswith("λ/λ_max ")]
    assert len(per_lambda) == 6
    mean = cv.summary["deviance_mean"]
    for line, value in zip(per_lambda, mean):
        assert f"held-out deviance {value:.4f} ± " in line
        assert line.endswith("(mean of 3 folds)")
    assert err[-1].startswith("cross-validating the path (3 folds): 6/6 λs in ")
    assert np.all(np.isfinite(mean))
