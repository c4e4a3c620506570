"""FGM's data-scaled C (``C="scale"``, :mod:`ultrafs.methods.c_scale`):
robust to unscaled columns, exact for any block size, row order and store,
equal to a NumPy reference, and the degree-2 rule from the base columns."""

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.api import select
from ultrafs.features import make_feature_space
from ultrafs.features.linear import LinearFeatures
from ultrafs.methods import validation as val
from ultrafs.methods.c_scale import (
    column_moments,
    degree_two_square,
    scale_C,
    typical_square,
)
from ultrafs.sklearn import FGMClassifier
from ultrafs.store import InMemoryStore


def reference_C(X, sample_weight=None, poly=1, gamma=1.0, coef0=1.0):
    """The rule in plain NumPy on a dense matrix."""
    X = np.asarray(X, dtype=np.float64)
    w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, float)
    nonzero = X != 0
    count = w @ nonzero
    squares = w @ (X ** 2)
    per = squares[count > 0] / count[count > 0]
    per = per[per > 0]
    if not len(per):
        return val.DEFAULT_C_SCALE
    s = np.median(per)
    if poly == 2:
        s = max(2 * gamma * coef0 * s, gamma ** 2 * s ** 2, 2 * gamma ** 2 * s ** 2)
    return val.round_significant(val.DEFAULT_C_SCALE / s)


def _sparse(rng, n=60, m=25, density=0.3):
    X = sp.random(n, m, density=density, random_state=rng.integers(1 << 31),
                  data_rvs=lambda k: rng.standard_normal(k) * 3).toarray()
    return X, np.where(rng.random(n) < 0.5, 1, -1)


def _C(X, y, block_size=None, **space):
    store = InMemoryStore(X, y)
    return scale_C(make_feature_space(store, **space), block_size=block_size)


@pytest.mark.parametrize("factor", [100.0, 1e4])
def test_one_unscaled_column_does_not_collapse_C(factor):
    # issue 38: the row-maximum rule gave C = 0.003 and training accuracy 0.55-0.62
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = rng.random((100, 8))
        y = X[:, 0] > .5
        plain = _C(X, y)
        X[:, 7] *= factor
        C = _C(X, y)
        assert plain / 1.5 < C < plain * 1.5
        estimator = FGMClassifier(B=2, max_iter=3).fit(X, y)
        assert estimator.model_.params["C"] == C
        assert estimator.score(X, y) >= 0.95
        assert np.all(estimator.selection_coef_ != 0)


def test_fewer_than_half_the_columns_cannot_move_it(rng):
    X = rng.random((50, 9)) + 0.5
    y = np.arange(50) % 2
    X[:, :4] *= 1e6
    # the median lies among the other columns' mean squares
    per = (X[:, 4:] ** 2).mean(axis=0)
    assert 10 / per.max() * 0.99 <= _C(X, y) <= 10 / per.min() * 1.01


@pytest.mark.parametrize("block_size", [1, 3, 7, None])
def test_the_rule_matches_numpy_for_any_block_size(rng, block_size):
    X, y = _sparse(rng)
    X[:, 4] = 0                      # an empty column is left out
    assert _C(X, y, block_size=block_size) == reference_C(X)
    weights = rng.integers(0, 4, size=len(y)).astype(float)
    store = InMemoryStore(X, y)
    got = scale_C(LinearFeatures(store), block_size=block_size, sample_weight=weights)
    assert got == reference_C(X, weights)
    # the moments themselves are identical for every block size
    whole = column_moments(store, sample_weight=weights)
    for a, b in zip(whole, column_moments(store, sample_weight=weights,
                                          block_size=block_size)):
        assert np.array_equal(a, b)


def test_the_rule_does_not_depend_on_the_row_order(rng):
    X, y = _sparse(rng, n=80)
    order = rng.permutation(len(y))
    assert _C(X, y) == _C(X[order], y[order])
    assert _C(X, y, poly=2) == _C(X[order], y[order], poly=2)


def test_integer_weights_give_the_C_of_repeated_rows(rng):
    X, y = _sparse(rng)
    counts = rng.integers(0, 3, size=len(y))
    rows = np.repeat(np.arange(len(y)), counts)
    weighted = scale_C(LinearFeatures(InMemoryStore(X, y)), sample_weight=counts)
    assert weighted == _C(X[rows], y[rows])


def test_scale_of_the_rows_and_binary_data(rng):
    X, y = _sparse(rng)
    C = _C(X, y)
    assert _C(10 * X, y) == pytest.approx(C / 100, rel=1e-2)
    # 0/1 data: the paper's C = 10 (as the row-maximum rule gave)
    binary = (rng.random((50, 6)) < 0.3).astype(float)
    assert _C(binary, np.arange(50) % 2) == 10.0
    assert _C(sp.csr_matrix(binary), np.arange(50) % 2) == 10.0
    # all-zero data: any C gives the constant model
    assert _C(np.zeros((4, 3)), [0, 1, 0, 1]) == val.DEFAULT_C_SCALE


@pytest.mark.parametrize("gamma, coef0", [(1.0, 1.0), (4.0, 0.5), (0.01, 1.0)])
def test_degree_two_rule_from_the_base_columns(rng, gamma, coef0):
    X, y = _sparse(rng)
    got = _C(X, y, poly=2, gamma=gamma, coef0=coef0)
    assert got == reference_C(X, poly=2, gamma=gamma, coef0=coef0)
    store = InMemoryStore(X, y)
    count, _, squares = column_moments(store)
    s = degree_two_square(typical_square(count, squares), gamma, coef0)
    assert got == val.round_significant(val.DEFAULT_C_SCALE / s)
    # one base column x100 does not collapse the degree-2 C either
    X[:, 3] *= 100
    assert got / 1.5 < _C(X, y, poly=2, gamma=gamma, coef0=coef0) < got * 1.5


def test_select_and_auto_use_the_rule(rng):
    X, y = _sparse(rng, n=120, m=12, density=0.6)
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    model = select(X, y, B=2, max_iter=2)
    assert model.params["C"] == reference_C(X) and model.params["C_rule"] == "scale"
    # C="auto" keeps the grid of issue 8 around the row-maximum rule's C
    auto = select(X, y, B=2, max_iter=2, C="auto", cv=2)
    old = val.default_C(LinearFeatures(InMemoryStore(X, y)))
    assert old != reference_C(X)
    assert set(val.c_grid(old)) <= set(auto.params["validation"]["grid"])
