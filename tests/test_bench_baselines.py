"""bench/mcnemar.py against a hand computation; every peer of
bench/baselines/ keeps at most k nonzero weights on a tiny problem."""

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
if not (BENCH / "mcnemar.py").is_file():     # an install test's copy of tests/
    pytest.skip("bench/ is not next to tests/", allow_module_level=True)
sys.path.insert(0, str(BENCH))

import mcnemar  # noqa: E402


def test_mcnemar_matches_the_binomial_tail_by_hand():
    # rows:        0  1  2  3  4  5  6  7  8  9
    mine = np.array([1, 0, 0, 0, 0, 0, 1, 1, 0, 1], dtype=bool)
    theirs = np.array([0, 1, 1, 1, 1, 1, 1, 1, 0, 1], dtype=bool)
    b, c, p = mcnemar.mcnemar(mine, theirs)
    assert (b, c) == (1, 5)
    # two-sided: 2 P(X <= 1), X ~ Binomial(6, 1/2) = 2 (1 + 6) / 64
    assert p == pytest.approx(14 / 64, rel=1e-12)
    # all six discordant rows on one side: 2 / 64
    assert mcnemar.exact_p(0, 6) == pytest.approx(2 / 64, rel=1e-12)
    assert mcnemar.exact_p(3, 3) == pytest.approx(1.0)
    assert mcnemar.exact_p(0, 0) == 1.0


def _problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 15))
    X[:, 4] *= 50.0                      # one column on another scale
    y = np.where(X[:, 0] - X[:, 1] + 0.02 * X[:, 4]
                 + 0.3 * rng.standard_normal(80) > 0, 1, -1)
    return X, y


def _check(module, k):
    import scipy.sparse as sp
    from baselines import predict

    X, y = _problem()
    for data in (X, sp.csr_matrix(X)):
        support, coef, intercept = module.fit(data, y, k)
        assert len(support) == len(coef) <= k
        assert np.all(coef != 0) and len(set(support.tolist())) == len(support)
        assert np.isfinite(intercept)
        accuracy = np.mean(predict(data, y, support, coef, intercept) == y)
        if k == 1:        # one of the two strong columns (0.66 on the training rows)
            assert set(support.tolist()) <= {0, 1} and accuracy >= 0.6
        else:             # the three informative ones, the rescaled one included
            assert set(support.tolist()) == {0, 1, 4} and accuracy >= 0.9


@pytest.mark.parametrize("k", [1, 3])
def test_mcp_keeps_at_most_k(k):
    pytest.importorskip("skglm", reason="skglm is in the bench extra only")
    from baselines import mcp_lr

    _check(mcp_lr, k)


@pytest.mark.parametrize("k", [1, 3])
def test_abess_keeps_at_most_k(k):
    pytest.importorskip("abess", reason="abess is in the bench extra only")
    from baselines import abess_lr

    _check(abess_lr, k)


def test_abess_sparse_path_keeps_at_most_k(monkeypatch):
    pytest.importorskip("abess", reason="abess is in the bench extra only")
    from baselines import abess_lr

    monkeypatch.setattr(abess_lr, "DENSE_BYTES", 0)     # abess' sparse-matrix path
    _check(abess_lr, 3)


def test_abess_leaves_out_constant_columns():
    pytest.importorskip("abess", reason="abess is in the bench extra only")
    import scipy.sparse as sp
    from baselines import abess_lr

    X, y = _problem()
    padded = np.hstack([np.ones((len(y), 1)), X, np.zeros((len(y), 2))])
    for data in (padded, sp.csr_matrix(padded)):
        support, coef, intercept = abess_lr.fit(data, y, 3)
        assert sorted(support.tolist()) == [1, 2, 5]      # columns 0, 1, 4 of X
