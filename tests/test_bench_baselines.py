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


def _row(set_name, k, mine, l1, config=None):
    """A result row of one split: ultrafs' and ℓ1-LR's per-row correctness
    (the peers and refits as ℓ1-LR's)."""
    from quality_vs_l1 import packed

    mine, l1 = np.asarray(mine, dtype=bool), np.asarray(l1, dtype=bool)
    peer = {"status": "ok", "accuracy": float(l1.mean()), "correct": packed(l1),
            "refit_accuracy": float(l1.mean()), "refit_correct": packed(l1)}
    row = {"set": set_name, "scaling": "raw", "split": 0, "k": k, "n_test": len(mine),
           "fgm": {"accuracy": float(mine.mean()), "correct": packed(mine)},
           "l1": dict(peer), "abess": dict(peer), "mcp": dict(peer)}
    if config is not None:
        row["config"] = config
    return row


def test_criteria_names_resolved_losses_and_the_lead():
    from quality_baselines import criteria

    n = 40
    right = np.ones(n, dtype=bool)
    # set a: ultrafs wrong on 12 rows ℓ1-LR gets right (p = 2 / 4096): resolved
    worse = right.copy()
    worse[:12] = False
    # set b: ultrafs right on 2 rows more than ℓ1-LR: a lead of +5 points
    behind = right.copy()
    behind[:2] = False
    rows = [_row("a", 10, worse, right), _row("b", 10, right, behind)]
    plain = [_row("a", 10, worse, right, "plain"), _row("b", 10, right, behind, "plain")]
    lines = criteria(rows, plain)
    a = next(line for line in lines if line.startswith("| a |"))
    b = next(line for line in lines if line.startswith("| b |"))
    assert "-30.00" in a and "raw k=10 vs l1 (-30.00, p=0.00049)" in a
    assert "vs abess_refit" in a and a.endswith("| no |")
    assert "+5.00" in b and "| none | none | yes |" in b
    # without plain rows the plain column says so, and nothing is met
    assert all("not run" in line for line in criteria(rows)[2:])
