"""Acceptance tests T1-T9 of GSR-FS (seed 002, digest Part B §B6).

``ultrafs.methods.gsrfs``: IRLS for ``‖XW − Y‖_{2,r}^r + λ‖W‖_{2,p}^p``
(plus an optional unpenalised bias), ranked by the row norms ``‖w_j‖``.

* T1 the first iterate is ridge regression (scikit-learn ``Ridge``);
* T2 r = 2, p = 1 is MTFS: scikit-learn ``MultiTaskLasso`` / ``Lasso``
  (objective, support, KKT), with and without a bias;
* T3 the primal and the Woodbury solves give the same iterates;
* T4 ``J_ε`` never increases (every r x p, bias or not, both solves);
* T5 planted features on the paper's synthetic generator (§B4);
* T6 stationarity for p < 1, recomputed here in NumPy;
* T7 the ranking contract (``result.top``);
* T8 digits end to end (top 16 features, linear SVM);
* T9 a binary problem coded with c = 2 columns ranks as with c = 1;
* the two-stage mode (candidates, KKT rounds), a store-streamed Gram
  operator on a Zarr store, and one-line parameter errors.

T10 (the out-of-core Gram products) is ``tests/test_weighted_gram.py``.

Thresholds are the digest's; the figures measured on the development
machine (numpy 2.x, OpenBLAS, one thread) are in the comments.  BLAS runs
on one thread here: on two shared cores OpenBLAS's spinning threads made
the 2000 x 1000 fits of T5 up to 12x slower.
"""

import warnings

import numpy as np
import pytest

from ultrafs.datasets.gsrfs_synthetic import make_gsrfs_synthetic
from ultrafs.errors import ParameterError, UltraFSWarning
from ultrafs.methods.gsrfs import (
    check_gsrfs_params, encode_targets, fit_gsrfs, fit_gsrfs_two_stage, rank_rows,
    smoothed_objective,
)
from ultrafs.solvers.gram_operators import DenseGramOperator

sklearn = pytest.importorskip("sklearn")
from sklearn.linear_model import Lasso, MultiTaskLasso, Ridge  # noqa: E402

ALL_R = (0.5, 1.0, 2.0)
ALL_P = (0.25, 0.5, 0.75, 1.0)


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        yield


# ------------------------------------------------------------------ helpers
def paper_data(n, d1, d2, c, a, seed):
    """The paper's generator (digest §B4 with its [R] conventions)."""
    return make_gsrfs_synthetic(n, d1, d2, c, a, seed)


def class_data(m, n, c, seed):
    """``m`` samples, ``n`` N(0, 1) features, c classes decided by features 0-3."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    B = np.zeros((n, c))
    B[:4] = rng.standard_normal((4, c))
    labels = np.argmax(X @ B + 0.5 * rng.standard_normal((m, c)), axis=1)
    return X, labels


def rel_err(a, b):
    """Largest absolute difference over the largest reference entry."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max(initial=0.0) / max(np.abs(b).max(initial=0.0), 1e-300))


def objective(X, Y, W, b, r, p, lam, eps=0.0, eps_penalty=0.0):
    """``J_ε`` of ``(W, b)`` computed from ``X`` (ε = 0: the paper's ``J``)."""
    return smoothed_objective(X @ W + b - Y, W, r, p, lam, eps, eps_penalty)


def gradient(X, Y, W, b, r, p, lam, eps, eps_penalty):
    """``∇_W J_ε = 2 (Xᵀ S1 E + λ S2 W)`` and ``∇_b J_ε = 2 S1ᵀ E``, in NumPy."""
    E = X @ W + b - Y
    s1 = (r / 2) * (np.sum(E * E, axis=1) + eps) ** ((r - 2) / 2)
    s2 = (p / 2) * (np.sum(W * W, axis=1) + eps_penalty) ** ((p - 2) / 2)
    return 2 * (X.T @ (s1[:, None] * E) + lam * s2[:, None] * W), 2 * s1 @ E


def iterates(op, Y, **kw):
    """``fit_gsrfs`` and the copies of every iterate ``(W, b)`` it passed the callback."""
    seen = []
    res = fit_gsrfs(op, Y, callback=lambda k, W, b: seen.append((W.copy(), b.copy())), **kw)
    assert len(seen) == res.n_iter == len(res.history)
    return res, seen


# ----------------------------------------------------------------- T1 ridge
@pytest.mark.parametrize("shape", [(60, 25), (30, 70)], ids=["n<m", "n>m"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("solve", ["primal", "woodbury"])
def test_t1_first_iterate_is_ridge(shape, fit_intercept, solve):
    m, n = shape
    X, labels = class_data(m, n, 3, 11)
    Y, _ = encode_targets(labels, "multiclass")
    lam = 2.5
    ref = Ridge(alpha=lam, fit_intercept=fit_intercept, solver="svd").fit(X, Y)
    res, seen = iterates(DenseGramOperator(X), Y, r=1.0, p=0.5, lam=lam,
                         fit_intercept=fit_intercept, solve=solve, max_iter=1)
    W1, b1 = seen[0]
    # observed <= 2e-15 (digest: 1.3e-15)
    assert rel_err(W1, ref.coef_.T) <= 1e-12
    assert rel_err(res.coef, ref.coef_.T) <= 1e-12
    if fit_intercept:
        assert rel_err(b1, ref.intercept_) <= 1e-12
    else:
        np.testing.assert_array_equal(b1, 0.0)
    assert res.solve == solve and res.n_iter == 1 and not res.converged


# ------------------------------------------------------------------ T2 MTFS
@pytest.fixture(scope="module")
def mtfs_problem():
    """m = 200, n = 50, c = 3, five planted rows (the digest's T2 sizes)."""
    m, n, c = 200, 50, 3
    rng = np.random.default_rng(2)
    X = rng.standard_normal((m, n))
    W = np.zeros((n, c))
    W[:5] = rng.uniform(0.5, 1.5, (5, c)) * rng.choice([-1.0, 1.0], (5, c))
    Y = X @ W + 0.1 * rng.standard_normal((m, c))
    return X, Y


@pytest.mark.parametrize("c", [3, 1])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_t2_mtfs_matches_multitask_lasso(mtfs_problem, c, fit_intercept):
    X, Y = mtfs_problem
    m, lam = X.shape[0], 20.0
    Y = Y[:, :c] + (3.0 if fit_intercept else 0.0)      # an offset only a bias fits
    if c > 1:
        ref = MultiTaskLasso(alpha=lam / (2 * m), fit_intercept=fit_intercept, tol=1e-12,
                             max_iter=100000).fit(X, Y)
        W_ref = ref.coef_.T
    else:
        ref = Lasso(alpha=lam / (2 * m), fit_intercept=fit_intercept, tol=1e-12,
                    max_iter=100000).fit(X, Y[:, 0])
        W_ref = ref.coef_[:, None]
    b_ref = np.atleast_1d(ref.intercept_) if fit_intercept else np.zeros(c)
    res = fit_gsrfs(DenseGramOperator(X), Y, r=2.0, p=1.0, lam=lam,
                    fit_intercept=fit_intercept)
    assert res.converged, res.stop_reason
    # the unsmoothed objective J = ‖XW + b − Y‖_F² + λ Σ‖w_j‖ of both:
    # observed 8.7e-8 / 3.6e-7 (c = 3 / 1) without, 1.9e-7 / 1.8e-7 with a bias
    J_irls = objective(X, Y, res.coef, res.intercept, 2.0, 1.0, lam)
    J_ref = objective(X, Y, W_ref, b_ref, 2.0, 1.0, lam)
    assert abs(J_irls - J_ref) <= 1e-6 * J_ref
    assert res.objective_unsmoothed == pytest.approx(J_irls, rel=1e-12)
    # supports: IRLS rows above 1e-6·max = sklearn's nonzero rows (observed {0..4})
    support = np.flatnonzero(res.row_norms > 1e-6 * res.row_norms.max())
    ref_norms = np.linalg.norm(W_ref, axis=1)
    np.testing.assert_array_equal(support, np.flatnonzero(ref_norms > 0))
    np.testing.assert_array_equal(support, np.arange(5))
    np.testing.assert_array_equal(np.sort(res.top(5)), np.arange(5))
    # KKT at the reference: ‖2 X_jᵀ E‖ ≤ λ(1 + 1e-6) on the zero rows (observed
    # max ratio 0.57 / 0.41 / 0.55 / 0.36), 2 X_jᵀ E + λ w_j/‖w_j‖ = 0 on the
    # support (observed <= 1.3e-11 absolute)
    G = 2 * X.T @ (X @ W_ref + b_ref - Y)
    zero = ref_norms == 0
    assert np.linalg.norm(G[zero], axis=1).max() <= lam * (1 + 1e-6)
    on = G[~zero] + lam * W_ref[~zero] / ref_norms[~zero, None]
    assert np.abs(on).max() <= 1e-8 * lam
    if fit_intercept:
        assert np.abs((X @ W_ref + b_ref - Y).sum(axis=0)).max() <= 1e-8
    # IRLS's own certificate agrees: dead rows within the ball
    assert res.kkt_dead is not None and res.kkt_dead <= 1 + 1e-6
    assert rel_err(res.coef, W_ref) <= 1e-3


# --------------------------------------------------------- T3 primal = Woodbury
def _primal_woodbury(m, n, fit_intercept, r, p, lam, seed=1, max_iter=30):
    X, labels = class_data(m, n, 3, seed)
    Y, _ = encode_targets(labels, "multiclass")
    op = DenseGramOperator(X)
    runs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UltraFSWarning)
        for solve in ("primal", "woodbury"):
            # the paper's Algorithm 1 (no extrapolation), the same number of steps
            runs[solve] = iterates(op, Y, r=r, p=p, lam=lam, fit_intercept=fit_intercept,
                                   solve=solve, max_iter=max_iter, min_iter=max_iter,
                                   accelerate=False)
    errors = []
    for (Wp, bp), (Ww, bw) in zip(runs["primal"][1], runs["woodbury"][1]):
        err = rel_err(Wp, Ww)
        if fit_intercept:
            err = max(err, rel_err(bp, bw))
        errors.append(err)
    assert len(errors) == max_iter
    return max(errors), runs["primal"][0], runs["woodbury"][0]


SHAPES = pytest.mark.parametrize("shape", [(80, 30), (30, 80)], ids=["n<m", "n>m"])


@SHAPES
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("rp", [(1.0, 1.0), (2.0, 0.25)], ids=["r1p1", "r2p0.25"])
def test_t3_primal_equals_woodbury(shape, fit_intercept, rp):
    # λ = 10: observed <= 1.2e-11 over seeds 1-3 (at λ = 1, r = p = 1 and
    # n > m: 1e-10 to 2e-10, the primal's conditioning, see below)
    worst, primal, woodbury = _primal_woodbury(*shape, fit_intercept, *rp, lam=10.0)
    assert worst <= 1e-10
    assert (primal.solve, woodbury.solve) == ("primal", "woodbury")
    np.testing.assert_array_equal(primal.ranking, woodbury.ranking)


@SHAPES
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.xfail(strict=True, reason=(
    "T3 threshold 1e-10 not met for r = p = 0.5, lambda = 1: primal vs Woodbury iterates "
    "differ by 3e-9 / 2e-8 (n<m / n>m, no bias) and 1e-9 / 1e-8 (bias) over 30 steps. "
    "Against a 40-digit reference of single steps the Woodbury solve is exact to 3e-15 "
    "and the primal (normal equations, cond ~3e8 from the sample-weight spread 1e7 or "
    "the d spread) is off by 4e-10 to 8e-9: the primal form's rounding, not a bug"))
def test_t3_primal_equals_woodbury_r_below_one(shape, fit_intercept):
    worst, _, _ = _primal_woodbury(*shape, fit_intercept, 0.5, 0.5, lam=1.0)
    assert worst <= 1e-10


@SHAPES
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_t3_primal_and_woodbury_agree_to_conditioning_for_r_below_one(shape, fit_intercept):
    # the looser statement that holds: observed <= 2e-8, same ranking
    worst, primal, woodbury = _primal_woodbury(*shape, fit_intercept, 0.5, 0.5, lam=1.0)
    assert worst <= 1e-6
    np.testing.assert_array_equal(primal.top(10), woodbury.top(10))


# ------------------------------------------------------------ T4 monotone J_ε
@pytest.fixture(scope="module")
def small_paper_problems():
    # the paper's generator with a = 0.1 outliers: 100 features,
    # 200 samples (n < m) and 60 samples (n > m)
    return {"n<m": paper_data(200, 10, 70, 5, 0.1, 4),
            "n>m": paper_data(60, 10, 70, 5, 0.1, 5)}


@pytest.mark.filterwarnings("ignore::ultrafs.errors.UltraFSWarning")
@pytest.mark.parametrize("shape", ["n<m", "n>m"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("accelerate", [False, True])
def test_t4_objective_never_increases(small_paper_problems, shape, fit_intercept,
                                      accelerate):
    X, Y = small_paper_problems[shape]
    op = DenseGramOperator(X)
    worst_increase, worst_recomputed = -np.inf, 0.0
    for r in ALL_R:
        for p in ALL_P:
            for solve in ("primal", "woodbury"):
                res, seen = iterates(op, Y, r=r, p=p, lam=1.0, fit_intercept=fit_intercept,
                                     solve=solve, max_iter=40, min_iter=40,
                                     accelerate=accelerate)
                J = np.array([h["objective"] for h in res.history])
                increase = np.diff(J) / J[:-1]
                worst_increase = max(worst_increase, float(increase.max()))
                # the objective recorded is J_ε of the iterate, with the ε of the weights
                for (W, b), Jk in zip(seen, J):
                    again = objective(X, Y, W, b, r, p, 1.0, res.eps, res.eps_penalty)
                    worst_recomputed = max(worst_recomputed, abs(again - Jk) / Jk)
                assert res.objective == J[-1]
    # observed: the largest relative increase 4e-13 (rounding at a fixed point)
    assert worst_increase <= 1e-10, worst_increase
    # the recorded J_ε is that of the iterate: observed <= 2.6e-13 for the
    # paper's steps; the extrapolated residuals drift (3e-10 here, see below)
    assert worst_recomputed <= (1e-6 if accelerate else 1e-11), worst_recomputed


# fixed: an accepted extrapolation recomputes its residuals with one product
def test_t4_recorded_objective_is_that_of_the_extrapolated_iterate(small_paper_problems):
    X, Y = small_paper_problems["n<m"]
    res, seen = iterates(DenseGramOperator(X), Y, r=1.0, p=0.25, lam=1.0, fit_intercept=True,
                         solve="woodbury", max_iter=60, min_iter=60)
    worst = max(abs(objective(X, Y, W, b, 1.0, 0.25, 1.0, res.eps, res.eps_penalty)
                    - h["objective"]) / h["objective"]
                for (W, b), h in zip(seen, res.history))
    assert worst <= 1e-12, worst


# ------------------------------------------------------- T5 planted features
@pytest.fixture(scope="module")
def paper_clean():
    """n = 2000, d1 = 100, d2 = 700, c = 5, a = 0: the digest's T5 sizes."""
    X, Y = paper_data(2000, 100, 700, 5, 0.0, 0)
    return X, Y, DenseGramOperator(X)


def test_t5a_planted_rows_exactly(paper_clean):
    X, Y, op = paper_clean
    res = fit_gsrfs(op, Y, r=2.0, p=0.5, lam=100.0)
    assert res.converged, res.stop_reason           # observed 11 iterations
    # the top 200 = X1 ∪ X2 exactly, and exactly 200 rows above 1e-3·max
    np.testing.assert_array_equal(np.sort(res.top(200)), np.arange(200))
    assert int(np.sum(res.row_norms > 1e-3 * res.row_norms.max())) == 200


def test_t5a_planted_rows_p1(paper_clean):
    X, Y, op = paper_clean
    # the paper's stop (relative change of J < 1e-4): observed 8 iterations,
    # recall 1.00 (the certificate needs ~190 plain IRLS steps here)
    res = fit_gsrfs(op, Y, r=2.0, p=1.0, lam=100.0, stop="objective", tol=1e-4)
    assert res.converged
    assert np.mean(res.top(200) < 200) == 1.0


# fixed: the paper's objective stop runs the paper's Algorithm 1 (no
# extrapolation) unless asked; rows below the live threshold rank by KKT score
def test_t5c_heavy_lambda_keeps_the_relevant_blocks(paper_clean):
    X, Y, op = paper_clean
    res = fit_gsrfs(op, Y, r=2.0, p=1.0, lam=1e4, stop="objective", tol=1e-4)
    assert np.mean(res.top(200) < 300) >= 0.95


def test_t5c_heavy_lambda_keeps_the_relevant_blocks_algorithm_1(paper_clean):
    X, Y, op = paper_clean
    res = fit_gsrfs(op, Y, r=2.0, p=1.0, lam=1e4, stop="objective", tol=1e-4,
                    accelerate=False)
    top = res.top(200)
    assert len(top) == 200
    # observed 0.995 (18 iterations; the digest: 0.99); the redundant X3 allowed
    assert np.mean(top < 300) >= 0.95


@pytest.fixture(scope="module")
def paper_outliers():
    # a = 0.1 at half the digest's size (n = 1000, d1 = 50, d2 = 350: the same
    # samples per feature) to keep the 12 fits at ~6 s.  At n = 2000 the
    # figures are the same: recall 1.00 for r <= 1, 0.745 for r = 2.
    X, Y = paper_data(1000, 50, 350, 5, 0.1, 0)
    return X, Y, DenseGramOperator(X)


def test_t5b_small_r_is_robust_to_outliers(paper_outliers):
    X, Y, op = paper_outliers
    recall = {}
    for r in ALL_R:
        for p in ALL_P:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UltraFSWarning)
                # the paper's stop: 34-42 iterations for r = 0.5, 10-11 for r = 1, 5 for r = 2
                res = fit_gsrfs(op, Y, r=r, p=p, lam=1.0, stop="objective", tol=1e-4)
            assert res.converged
            recall[r, p] = float(np.mean(res.top(100) < 100))
    for p in ALL_P:
        # observed 1.00 for r in {0.5, 1} (digest 0.99), 0.72-0.73 for r = 2
        assert recall[0.5, p] >= 0.95 and recall[1.0, p] >= 0.95, recall
        assert recall[2.0, p] <= 0.85, recall
        assert min(recall[0.5, p], recall[1.0, p]) - recall[2.0, p] >= 0.15, recall


# ----------------------------------------------------------- T6 stationarity
@pytest.mark.filterwarnings("ignore::ultrafs.errors.UltraFSWarning")
@pytest.mark.parametrize("r", ALL_R)
@pytest.mark.parametrize("p", [0.25, 0.5, 0.75])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_t6_stationarity_for_p_below_one(small_paper_problems, r, p, fit_intercept):
    X, Y = small_paper_problems["n<m"]
    lam = 1.0
    res, seen = iterates(DenseGramOperator(X), Y, r=r, p=p, lam=lam,
                         fit_intercept=fit_intercept)
    assert res.converged, res.stop_reason
    # the gradient of J_ε, recomputed from X at the first and the last iterate
    G1, g1 = gradient(X, Y, *seen[0], r, p, lam, res.eps, res.eps_penalty)
    G, g = gradient(X, Y, res.coef, res.intercept, r, p, lam, res.eps, res.eps_penalty)
    live = res.row_norms > 1e-6 * res.row_norms.max()
    scale = np.sqrt(np.sum(G1 ** 2) + (np.sum(g1 ** 2) if fit_intercept else 0.0))
    residual = np.sqrt(np.sum(G[live] ** 2) + (np.sum(g ** 2) if fit_intercept else 0.0))
    # observed 2e-7 .. 8e-4 (r = 0.5 slowest: ~100 iterations)
    assert residual / scale <= 1e-3
    # the certificate reports the same (to the cancellation in the small
    # gradient: observed within 4e-6 relative)
    assert residual / scale == pytest.approx(res.stationarity, rel=1e-3)
    np.testing.assert_array_equal(seen[-1][0], res.coef)


# ------------------------------------------------------------ T7 ranking
@pytest.fixture(scope="module")
def ranking_problem():
    X, labels = class_data(150, 40, 4, 21)
    X[:, 6] *= 3.0
    return X, encode_targets(labels, "multiclass")[0]


def test_t7_ranking_contract(ranking_problem):
    X, Y = ranking_problem
    d = 10
    kw = dict(r=1.0, p=0.5, lam=1.0)
    res = fit_gsrfs(DenseGramOperator(X), Y, **kw)
    top = res.top(d)
    assert top.dtype == np.int64 and top.shape == (d,) and len(set(top.tolist())) == d
    np.testing.assert_array_equal(res.ranking, rank_rows(res.row_norms))
    assert np.all(np.diff(res.row_norms[res.ranking]) <= 0)
    # deterministic
    again = fit_gsrfs(DenseGramOperator(X), Y, **kw)
    np.testing.assert_array_equal(again.ranking, res.ranking)
    np.testing.assert_array_equal(again.coef, res.coef)
    # invariant to permuting the samples
    rows = np.random.default_rng(0).permutation(X.shape[0])
    moved = fit_gsrfs(DenseGramOperator(X[rows]), Y[rows], **kw)
    np.testing.assert_array_equal(moved.top(d), top)
    assert rel_err(moved.coef, res.coef) <= 1e-8
    # permuting the columns permutes the output indices
    cols = np.random.default_rng(1).permutation(X.shape[1])
    swapped = fit_gsrfs(DenseGramOperator(X[:, cols]), Y, **kw)
    np.testing.assert_array_equal(cols[swapped.top(d)], top)
    assert rel_err(swapped.coef, res.coef[cols]) <= 1e-8
    # fewer nonzero rows than asked: fewer indices
    assert len(res.top(10 ** 6)) == len(res.ranking) <= X.shape[1]


def _duplicates_fit(ranking_problem):
    X, Y = ranking_problem
    dup = np.hstack([X, X[:, :10]])                 # columns 40 .. 49 copy 0 .. 9
    res = fit_gsrfs(DenseGramOperator(dup), Y, r=2.0, p=1.0, lam=1.0)
    rank = {int(j): i for i, j in enumerate(res.ranking)}
    return res, rank


def test_t7_ties_are_broken_by_index(ranking_problem):
    # exact ties in the scores: the lower index first; zero rows unranked
    np.testing.assert_array_equal(rank_rows(np.array([1.0, 3.0, 1.0, 3.0, 0.0, 2.0])),
                                  [1, 3, 5, 0, 2])
    np.testing.assert_array_equal(rank_rows(np.zeros(4)), np.zeros(0, dtype=np.int64))
    np.testing.assert_array_equal(rank_rows([2.0, 1e-13, 1.0]), [0, 2])
    # duplicate columns: the same row norm to rounding (observed 1e-14 .. 2e-13)
    res, rank = _duplicates_fit(ranking_problem)
    for a in range(10):
        assert res.row_norms[a + 40] == pytest.approx(res.row_norms[a], rel=1e-10)
        assert abs(rank[a] - rank[a + 40]) <= 2


# fixed: rank_rows treats norms equal to 10 digits as ties (by index)
def test_t7_duplicate_columns_rank_the_original_first(ranking_problem):
    res, rank = _duplicates_fit(ranking_problem)
    assert all(rank[a] < rank[a + 40] for a in range(10))


# --------------------------------------------------------------- T8 digits
@pytest.fixture(scope="module")
def digits_splits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import StratifiedShuffleSplit

    X, y = load_digits(return_X_y=True)
    X = X[:, X.std(axis=0) > 0]
    assert X.shape == (1797, 61)
    splits = []
    for train, test in StratifiedShuffleSplit(n_splits=5, test_size=0.4,
                                              random_state=0).split(X, y):
        mean, std = X[train].mean(axis=0), X[train].std(axis=0)
        std[std == 0] = 1.0
        splits.append(((X[train] - mean) / std, y[train], (X[test] - mean) / std, y[test]))
    return splits


def _svm_accuracy(Xtr, ytr, Xte, yte, cols):
    from sklearn.svm import LinearSVC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # liblinear's ConvergenceWarning
        clf = LinearSVC(C=1.0, random_state=0).fit(Xtr[:, cols], ytr)
    return float(np.mean(clf.predict(Xte[:, cols]) == yte))


@pytest.fixture(scope="module")
def digits_random_accuracy(digits_splits):
    rng = np.random.default_rng(0)
    acc = [_svm_accuracy(*split, rng.choice(61, 16, replace=False))
           for split in digits_splits for _ in range(3)]
    return float(np.mean(acc))


@pytest.mark.filterwarnings("ignore::ultrafs.errors.UltraFSWarning")
@pytest.mark.parametrize("rp", [(2.0, 1.0), (1.0, 0.5), (0.5, 0.5)],
                         ids=["r2p1", "r1p0.5", "r0.5p0.5"])
def test_t8_digits_end_to_end(digits_splits, digits_random_accuracy, rp):
    accuracy = []
    for Xtr, ytr, Xte, yte in digits_splits:
        Y, classes = encode_targets(ytr, "multiclass")
        assert Y.shape == (len(ytr), 10) and classes.tolist() == list(range(10))
        res = fit_gsrfs(DenseGramOperator(Xtr), Y, r=rp[0], p=rp[1], lam=1.0)
        top = res.top(16)
        assert len(top) == 16
        accuracy.append(_svm_accuracy(Xtr, ytr, Xte, yte, top))
    # observed mean accuracy: random 16 features 0.784 (3 draws a split), all 61
    # 0.952; GSR-FS 0.907 (r2p1), 0.904 (r1p0.5), 0.838 (r0.5p0.5: 0.853 with
    # accelerate=False), threshold 0.834 (digest: 0.880-0.900 vs random 0.791)
    assert np.mean(accuracy) >= digits_random_accuracy + 0.05, (accuracy,
                                                                 digits_random_accuracy)


# ---------------------------------------------------------- T9 c = 2 vs c = 1
@pytest.mark.parametrize("rp", [(1.0, 1.0), (0.5, 0.5), (2.0, 2.0 / 3)],
                         ids=["r1p1", "r0.5p0.5", "r2p0.67"])
def test_t9_binary_two_columns_rank_as_one(rp):
    """With ``Y2 = [y, −y]``: ``J(W2) = 2^{r/2} Σ|e_i|^r + λ 2^{p/2} Σ|w_j|^p`` for
    ``W2 = [w, −w]``, so the c = 2 problem at λ is the c = 1 problem at
    ``λ 2^{(p − r)/2}`` (the same λ when r = p); the default ε's scale alike."""
    r, p = rp
    X, labels = class_data(120, 30, 2, 31)
    Y2, classes = encode_targets(labels, "binary")
    assert Y2.shape == (120, 2) and classes.tolist() == [0, 1]
    np.testing.assert_array_equal(Y2[:, 1], -Y2[:, 0])
    Y1, none = encode_targets(Y2[:, 0], "continuous")     # ±1, one column
    assert none is None and Y1.shape == (120, 1)
    op = DenseGramOperator(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UltraFSWarning)
        two = fit_gsrfs(op, Y2, r=r, p=p, lam=1.0)
        one = fit_gsrfs(op, Y1, r=r, p=p, lam=2.0 ** ((p - r) / 2))
    assert two.converged and one.converged
    np.testing.assert_array_equal(two.coef[:, 1], -two.coef[:, 0])
    live = np.flatnonzero(one.row_norms > 1e-6 * one.row_norms.max())
    np.testing.assert_array_equal(two.top(len(live)), one.top(len(live)))
    if r == p:
        # the same iterates: W2 = [w, −w] at every step
        assert rel_err(two.coef[:, 0], one.coef[:, 0]) <= 1e-10
        assert two.n_iter == one.n_iter
    else:
        assert rel_err(two.coef[live, 0], one.coef[live, 0]) <= 1e-3


def test_t9_binary_same_lambda_convex():
    # r = 2, p = 1 at the same λ: c = 2 is c = 1 at λ/√2 (λ-path), top 5 equal
    X, labels = class_data(120, 30, 2, 31)
    Y2, _ = encode_targets(labels, "binary")
    op = DenseGramOperator(X)
    two = fit_gsrfs(op, Y2, r=2.0, p=1.0, lam=1.0)
    one = fit_gsrfs(op, Y2[:, :1], r=2.0, p=1.0, lam=1.0)
    np.testing.assert_array_equal(two.top(5), one.top(5))


# ----------------------------------------------------------------- two-stage
@pytest.fixture(scope="module")
def two_stage_problem():
    from ultrafs.store import as_store

    X, Y = paper_data(200, 15, 90, 3, 0.0, 7)     # 135 features, 30 informative
    labels = np.argmax(Y, axis=1)
    return X, Y, as_store(X, labels)


def test_two_stage_p1_kkt_rounds_reach_the_full_solution(two_stage_problem):
    X, Y, store = two_stage_problem
    kw = dict(r=2.0, p=1.0, lam=60.0, gtol=1e-6, max_iter=2000)
    full = fit_gsrfs(DenseGramOperator(X), Y, **kw)
    assert full.converged
    support = int(np.sum(full.row_norms > 1e-6 * full.row_norms.max()))
    n_candidates = 4
    assert support > 2 * n_candidates
    two = fit_gsrfs_two_stage(store, Y, n_candidates=n_candidates, max_rounds=50, **kw)
    rounds = two.rounds
    assert len(rounds) >= 2
    assert [rd["round"] for rd in rounds] == list(range(1, len(rounds) + 1))
    assert rounds[0]["candidates"] == n_candidates
    assert all(rd["violators"] > 0 for rd in rounds[:-1])
    assert rounds[-1]["violators"] == 0                 # the certificate
    assert rounds[-1]["max_kkt_outside"] <= 1 + 1e-6
    assert [rd["candidates"] for rd in rounds] == sorted(rd["candidates"] for rd in rounds)
    assert rounds[-1]["candidates"] == len(two.candidates)
    assert set(full.top(support).tolist()) <= set(two.candidates.tolist())
    assert two.objective_unsmoothed == pytest.approx(full.objective_unsmoothed, rel=1e-6)
    np.testing.assert_array_equal(two.top(support), full.top(support))
    # coef and row_norms over the candidates (sorted); rows() maps features to rows
    assert two.coef.shape == (len(two.candidates), Y.shape[1])
    rows = two.rows(full.top(support))
    assert rel_err(two.coef[rows], full.coef[full.top(support)]) <= 1e-4
    np.testing.assert_array_equal(two.row_norms, np.linalg.norm(two.coef, axis=1))
    assert two.converged and "every feature left out" in two.stop_reason
    with pytest.raises(ParameterError):
        two.rows(np.setdiff1d(np.arange(X.shape[1]), two.candidates)[:1])


def test_two_stage_p_below_one_is_one_round(two_stage_problem):
    X, Y, store = two_stage_problem
    res = fit_gsrfs_two_stage(store, Y, n_candidates=20, r=1.0, p=0.5, lam=1.0)
    assert len(res.rounds) == 1 and res.rounds[0]["violators"] is None
    assert len(res.candidates) == 20 and set(res.ranking.tolist()) <= set(res.candidates)


@pytest.mark.parametrize("p", [1.0, 0.5])
def test_two_stage_invariant_to_block_size(two_stage_problem, p):
    X, Y, store = two_stage_problem
    runs = [fit_gsrfs_two_stage(store, Y, n_candidates=10, r=2.0, p=p, lam=60.0,
                                block_size=block_size, max_rounds=50)
            for block_size in (1, 7, None)]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.candidates, runs[0].candidates)
        np.testing.assert_array_equal(other.ranking, runs[0].ranking)
        assert [rd["candidates"] for rd in other.rounds] == \
            [rd["candidates"] for rd in runs[0].rounds]
        assert rel_err(other.coef, runs[0].coef) <= 1e-12


# --------------------------------------------- store-streamed operator (Zarr)
@pytest.mark.parametrize("shape", [(40, 10), (20, 30)], ids=["primal", "woodbury"])
def test_store_operator_on_zarr_gives_the_dense_fit(tmp_path, shape):
    from ultrafs.scoring.gram_passes import StoreGramOperator
    from ultrafs.store.writers.zarr_writer import write_store

    m, n = shape
    X, labels = class_data(m, n, 3, 41)
    X[:, 3] = 0.0                                           # an empty column
    X[np.abs(X) < 0.3] = 0.0                                # sparse storage
    Y, _ = encode_targets(labels, "multiclass")
    store = write_store(tmp_path / "x.zarr", X, labels.astype(np.float64),
                        dtype=np.float64, block_nnz=40)
    # six iterations: one-column blocks read from disk take ~0.13 s a pass
    kw = dict(r=1.0, p=0.5, lam=1.0, fit_intercept=True, max_iter=6)
    dense = fit_gsrfs(DenseGramOperator(X), Y, **kw)
    for block_size in (1, 13):
        op = StoreGramOperator(store, block_size=block_size, scheduler="synchronous")
        res = fit_gsrfs(op, Y, **kw)
        assert res.solve == dense.solve and res.n_iter == dense.n_iter
        np.testing.assert_array_equal(res.ranking, dense.ranking)
        assert rel_err(res.coef, dense.coef) <= 1e-9
        assert rel_err(res.intercept, dense.intercept) <= 1e-9
        assert res.n_passes == op.n_passes > 0


# ------------------------------------------------------------ hostile inputs
@pytest.mark.parametrize("bad", [
    dict(r=0.0), dict(r=-1.0), dict(r=2.5), dict(r=np.nan), dict(r=True), dict(r="1"),
    dict(p=0.0), dict(p=1.5), dict(p=np.inf), dict(p=False),
    dict(lam=0.0), dict(lam=-1.0), dict(lam=np.nan), dict(lam=np.inf), dict(lam=True),
    dict(eps=0.0), dict(eps=np.nan), dict(tol=-1.0), dict(gtol=np.nan),
    dict(max_iter=0), dict(max_iter=2.0), dict(min_iter=True),
    dict(solve="cholesky"), dict(stop="gap"),
])
def test_parameter_errors_are_one_line(bad):
    kw = dict(r=1.0, p=0.5, lam=1.0)
    kw.update(bad)
    with pytest.raises(ParameterError) as info:
        check_gsrfs_params(kw.pop("r"), kw.pop("p"), kw.pop("lam"), **kw)
    assert "\n" not in str(info.value) and str(info.value)


def test_fit_checks_parameters_before_any_pass():
    X, labels = class_data(20, 5, 2, 3)
    Y, _ = encode_targets(labels, "binary")
    op = DenseGramOperator(X)
    for bad in (dict(r=3.0), dict(p=0.0), dict(lam=-2.0), dict(lam=np.nan),
                dict(eps_penalty=-1.0)):
        kw = dict(r=1.0, p=0.5, lam=1.0)
        kw.update(bad)
        with pytest.raises(ParameterError):
            fit_gsrfs(op, Y, **kw)
    with pytest.raises(ParameterError, match="shape"):
        fit_gsrfs(op, Y[:-1])
    with pytest.raises(ParameterError, match="Gram"):
        fit_gsrfs(op, Y, max_gram_bytes=5 * 5 * 8 - 1)
    assert op.n_passes == 0
    fit_gsrfs(op, Y, max_gram_bytes=5 * 5 * 8, max_iter=1)       # just fits


def test_encode_targets():
    Y, classes = encode_targets(np.array(["b", "a", "c", "a"]))
    assert classes.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(Y, [[-1, 1, -1], [1, -1, -1], [-1, -1, 1], [1, -1, -1]])
    Y, _ = encode_targets([3, 5, 5], "binary")
    np.testing.assert_array_equal(Y, [[1, -1], [-1, 1], [-1, 1]])
    Y, none = encode_targets(np.arange(6.0).reshape(3, 2), "continuous")
    assert none is None and Y.shape == (3, 2) and Y.dtype == np.float64
    with pytest.raises(ParameterError, match="two classes"):
        encode_targets([1, 1, 1])
    with pytest.raises(ParameterError):
        encode_targets([0.0, np.nan, 1.0], "continuous")
    with pytest.raises(ParameterError):
        encode_targets([0.0, np.inf], "continuous")
    with pytest.raises(ParameterError):
        encode_targets(np.zeros((3, 2)), "multiclass")
    with pytest.raises(ParameterError):
        encode_targets([0, 1], "ordinal")


# fixed: encode_targets refuses non-finite class labels
@pytest.mark.parametrize("labels", [[0.0, np.nan, 1.0], [1.0, np.nan, 1.0, 2.0]])
@pytest.mark.parametrize("target", ["multiclass", "binary"])
def test_encode_targets_refuses_nan_labels(labels, target):
    with pytest.raises(ParameterError):
        encode_targets(np.array(labels), target)


def test_extreme_eps_and_r_are_refused_by_the_method(tmp_path):
    """An ε that drives the reweighted system out of float64 is one
    ParameterError naming ε and the range to choose from (it was numpy's
    LinAlgError); r below R_MIN is refused before any pass, and the CLI's
    --r range is the method's."""
    import pytest

    from ultrafs.api import fit
    from ultrafs.datasets.planted import make_planted_problem
    from ultrafs.errors import ParameterError
    from ultrafs.methods.gsrfs import R_MIN, check_gsrfs_params
    from ultrafs.methods.gsrfs_method import GSRFSParams
    from ultrafs.methods.params import specs_of
    from ultrafs.store.writers.zarr_writer import write_store

    p = make_planted_problem(n_samples=200, n_features=40, n_relevant=5, n_test=10, seed=3)
    store = write_store(tmp_path / "train.zarr", p.X_train, p.y_train).path
    with pytest.raises(ParameterError, match=r"not positive definite at eps 1e-300.*"
                                             r"choose an eps within"):
        fit("gsrfs", store, eps=1e-300)
    with pytest.raises(ParameterError, match="r must lie in"):
        check_gsrfs_params(R_MIN / 2, 0.5, 1.0)
    check_gsrfs_params(R_MIN, 0.5, 1.0)
    assert specs_of(GSRFSParams)["r"][1].low == R_MIN
