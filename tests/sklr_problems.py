"""Problems and independent references for the seed-001 l1 solver tests.

Everything here is either data (seeded) or a plain numpy / scikit-learn
re-computation that does not go through the code under test, so that the
acceptance tests of ``tests/test_sklr_solvers.py`` compare the solvers
with something computed another way:

* :func:`rff_split`: the "T3 problem", a 1000 x 300 random-Fourier-feature
  basis (:class:`~ultrafs.features.rff.RandomFourierFeatures` over an
  :class:`~ultrafs.store.memory.InMemoryStore`, median-heuristic sigma) of
  a seeded ``make_classification`` data set, with a 500-row held-out split
  mapped through the same Ω;
* :func:`scaled_gaussian`: Gaussian features whose columns are rescaled by
  ``exp(U(-2, 2))`` (the digest's T7 data);
* :func:`np_objective`, :func:`np_gradient`, :func:`np_lam_max`: the
  model's quantities in numpy (decision ``Φ w - b``, logistic or squared
  hinge, sample weights);
* :func:`liblinear`: scikit-learn's liblinear l1 logistic regression /
  l1 squared-hinge SVM on the same problem (``C = 1 / lam``; for the
  squared hinge ``C = 1 / (2 lam)`` since our loss carries a 1/2).
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np
from scipy.special import expit, log_expit

from ultrafs.solvers.datafits import Datafit
from ultrafs.solvers.l1_problem import DenseOperator, L1Problem
from ultrafs.solvers.losses import get_loss

#: the T3 problem's sizes
N_TRAIN, N_TEST, N_INPUTS, D = 1000, 500, 10, 300
#: the lambda grid of the paper's medium-scale experiments (fractions of lam_max)
RATIOS = (0.5, 0.2, 0.1)


def make_problem(operator, y, lam=1.0, *, fit_intercept=False, C=1.0,
                 sample_weight=None, loss="logistic"):
    """An :class:`L1Problem` over ``operator`` (a dense array is wrapped)."""
    if isinstance(operator, np.ndarray):
        operator = DenseOperator(operator)
    datafit = Datafit(get_loss(loss, "binary"), operator, np.asarray(y, dtype=np.float64),
                      C, sample_weight)
    return L1Problem(datafit, lam, fit_intercept=fit_intercept)


@lru_cache(maxsize=None)
def rff_split(seed=0):
    """The T3 data: ``(space, Z_train, y_train, Z_test, y_test)``.

    ``space`` is the training :class:`RandomFourierFeatures` (its
    ``operator()`` is the streamed basis operator); ``Z_*`` are the dense
    bases (float64, read-only) of the training and held-out rows.
    """
    from sklearn.datasets import make_classification

    from ultrafs.features.rff import RandomFourierFeatures
    from ultrafs.store.memory import InMemoryStore

    X, labels = make_classification(
        n_samples=N_TRAIN + N_TEST, n_features=N_INPUTS, n_informative=6,
        n_redundant=2, class_sep=0.8, flip_y=0.03, random_state=seed)
    y = np.where(labels == 1, 1.0, -1.0)
    train = InMemoryStore(X[:N_TRAIN], y[:N_TRAIN])
    space = RandomFourierFeatures(train, n_components=D, seed=3)
    Z = space.operator().columns(np.arange(D))
    test = RandomFourierFeatures(InMemoryStore(X[N_TRAIN:], y[N_TRAIN:]), n_components=D,
                                 sigma=space.sigma, seed=3, n_inputs=space.n_inputs)
    Zt = test.operator().columns(np.arange(D))
    for a in (Z, Zt):
        a.setflags(write=False)
    return space, Z, y[:N_TRAIN].copy(), Zt, y[N_TRAIN:].copy()


def scaled_gaussian(n=400, m=60, seed=7):
    """Gaussian features, columns rescaled by ``exp(U(-2, 2))``; labels from a
    sparse logistic model on the unscaled features."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, m))
    beta = np.zeros(m)
    beta[rng.choice(m, 8, replace=False)] = rng.normal(0, 2, 8)
    y = np.where(rng.random(n) < expit(G @ beta), 1.0, -1.0)
    X = G * np.exp(rng.uniform(-2, 2, m))
    return X, y


def imbalanced(n=300, m=40, positive=0.2, seed=11):
    """Dense non-negative features and exactly ``positive * n`` positive labels."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, m)) ** 2
    y = -np.ones(n)
    y[rng.choice(n, int(round(positive * n)), replace=False)] = 1.0
    X[y > 0, :5] += 0.3                     # some signal
    return X, y


# ---------------------------------------------------------------- numpy references
def np_decision(Phi, w, b=0.0):
    """``Φ w - b``."""
    return np.asarray(Phi, dtype=np.float64) @ w - b


def np_loss_terms(y, f, loss="logistic"):
    """Per-sample ``l(y_i, f_i)``."""
    m = y * f
    if loss == "logistic":
        return -log_expit(m)
    return 0.5 * np.maximum(0.0, 1.0 - m) ** 2


def np_objective(Phi, y, w, b, lam, *, C=1.0, sample_weight=None, loss="logistic"):
    """``F(w, b) = C Σ s_i l(y_i, (Φ w)_i - b) + lam ||w||_1``."""
    terms = np_loss_terms(y, np_decision(Phi, w, b), loss)
    if sample_weight is not None:
        terms = terms * sample_weight
    return C * float(np.sum(terms)) + lam * float(np.sum(np.abs(w)))


def np_derivative(y, f, loss="logistic"):
    """``dl/df`` per sample."""
    m = y * f
    if loss == "logistic":
        return -y * expit(-m)
    return -y * np.maximum(0.0, 1.0 - m)


def np_gradient(Phi, y, w, b, *, C=1.0, sample_weight=None, loss="logistic"):
    """``(∇_w f, ∂f/∂b)`` of the data term."""
    r = np_derivative(y, np_decision(Phi, w, b), loss)
    if sample_weight is not None:
        r = r * sample_weight
    return C * (np.asarray(Phi, dtype=np.float64).T @ r), -C * float(np.sum(r))


def np_lam_max(Phi, y, fit_intercept):
    """Logistic, ``C = 1``: ``½ ||Φ' y||_inf`` without intercept; Koh, Kim &
    Boyd's ``||Φ' b~||_inf`` with ``b~_i = N-/N`` (y = +1), ``-N+/N`` (y = -1),
    ``N+`` / ``N-`` the numbers of positive / negative labels, with one."""
    Phi = np.asarray(Phi, dtype=np.float64)
    if not fit_intercept:
        return 0.5 * float(np.max(np.abs(Phi.T @ y)))
    n = len(y)
    n_pos = float(np.sum(y > 0))
    n_neg = n - n_pos
    btilde = np.where(y > 0, n_neg / n, -n_pos / n)
    return float(np.max(np.abs(Phi.T @ btilde)))


def np_kkt(Phi, y, w, b, lam, **kw):
    """``(off, on)``: ``max |g_j| / lam`` off the support and ``max |g_j + lam
    sign w_j| / lam`` on it (0 for an empty set)."""
    g, _ = np_gradient(Phi, y, w, b, **kw)
    on = w != 0
    off_v = float(np.max(np.abs(g[~on]))) / lam if np.any(~on) else 0.0
    on_v = float(np.max(np.abs(g[on] + lam * np.sign(w[on])))) / lam if np.any(on) else 0.0
    return off_v, on_v


# ----------------------------------------------------------- scikit-learn references
def liblinear(Phi, y, lam, *, fit_intercept=False, intercept_scaling=1e4,
              sample_weight=None, loss="logistic", tol=1e-12, max_iter=2000,
              random_state=2):
    """scikit-learn's liblinear solution of the same problem: ``(w, b)`` with
    ``b = -intercept`` (our decision is ``Φ w - b``).

    liblinear's objective is ``||w||_1 + C Σ l_i``, ours divided by ``lam``
    (``C = 1 / lam``; for the squared hinge, ``max(0, 1 - m)^2`` without our
    ½: ``C = 1 / (2 lam)``).  With an intercept liblinear appends a constant
    column ``intercept_scaling`` and *penalises* its coefficient: the bias
    then costs ``lam |b| / intercept_scaling``, hence the large scaling.

    At ``tol = 1e-12`` liblinear's coordinate descent sometimes cycles
    without meeting its tolerance (measured: 10^5 iterations, 113 s, on
    the T3 problem at 0.1 lam_max with another shuffling seed), so
    ``max_iter`` is capped and the shuffle seeded; the tests certify the
    reference by its own duality gap instead.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    Phi = np.asarray(Phi, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if loss == "logistic":
            model = LogisticRegression(l1_ratio=1.0, C=1.0 / lam, solver="liblinear",
                                       fit_intercept=fit_intercept,
                                       intercept_scaling=intercept_scaling, tol=tol,
                                       max_iter=max_iter, random_state=random_state)
        else:
            model = LinearSVC(penalty="l1", loss="squared_hinge", dual=False,
                              C=0.5 / lam, fit_intercept=fit_intercept,
                              intercept_scaling=intercept_scaling, tol=tol,
                              max_iter=max_iter, random_state=random_state)
        model.fit(Phi, np.where(y > 0, 1, -1), sample_weight=sample_weight)
    w = model.coef_.ravel().astype(np.float64)
    b = -float(model.intercept_[0]) if fit_intercept else 0.0
    return w, b


# ------------------------------------------------------------------- FISTA replay
def soft_threshold(z, t):
    """``sign(z) max(|z| - t, 0)``."""
    return np.sign(z) * np.maximum(np.abs(z) - t, 0.0)


def logistic_change(y, f, delta):
    """``Σ_i l(y_i, f_i + delta_i) - l(y_i, f_i)`` without cancellation:
    ``log1p(σ(-m) expm1(-y delta))`` per sample (``m = y f``)."""
    return float(np.sum(np.log1p(expit(-y * f) * np.expm1(-y * delta))))


def replay_fista(Phi, y, lam, solution, *, scaling, fit_intercept, grow, restart,
                 eta=0.5, n_steps=200):
    """Re-run a logistic (multi-scale) FISTA run in numpy, step by step.

    Algorithm 1 of seed 001 (the digest's §A2.1) written again from the
    paper: the step ``mu_k`` of iteration ``k`` is taken from
    ``solution.history`` (so is the restart decision: a recorded rise of
    ``F`` beyond 1e-12 relative), everything else -- the extrapolated point,
    the gradient, the metric ``H_k`` (6), (7) with the relative floor, or
    (8), the proximal point and ``F`` -- is recomputed here.

    Returns
    -------
    dict of lists, one entry per replayed step:
        ``excess``: ``(change - model) / |f(x)|`` at the accepted step, with
        ``change = f(p) - f(x)`` (computed without cancellation) and ``model =
        g'(p - x) + ||p - x||²_H / (2 mu)``: inequality (9) is ``excess <= 0``
        (the solver allows 1e-15 for rounding);
        ``F_error``: relative difference of the replayed ``F(y_k)`` and the
        recorded one;
        ``ladder``: distance of ``log_{1/eta}(start / mu_k)`` from an integer
        (``start = mu_{k-1} / eta`` when ``grow``, else ``mu_{k-1}``);
        ``rejected``: ``(change - model) / |f(x)|`` at ``mu_k / eta``, for the
        steps where backtracking shrank ``mu`` (it must have failed there);
        and ``F0_error`` (float), ``steps`` (int).
    """
    Phi = np.asarray(Phi, dtype=np.float64)
    n, M = Phi.shape
    history = solution.history
    multi = scaling != "identity"
    n_pos = int(np.sum(y > 0))
    w = np.zeros(M)
    b = -np.log(n_pos / (n - n_pos)) if fit_intercept else 0.0
    y_w, y_b, x_w, x_b = w.copy(), b, w.copy(), b
    t = 1.0
    H_prev = None
    F_prev = history[0]["objective"]
    mu_prev = history[0]["mu"]
    out = {"excess": [], "F_error": [], "ladder": [], "rejected": [], "steps": 0,
           "F0_error": abs(np_objective(Phi, y, w, b, lam) - F_prev) / abs(F_prev)}
    for k in range(1, min(n_steps, len(history) - 1) + 1):
        record = history[k]
        if "mu" not in record:
            break
        mu = record["mu"]
        f_x = Phi @ x_w - x_b
        margin = y * f_x
        value = float(np.sum(-log_expit(margin)))
        dl = -y * expit(-margin)
        g = Phi.T @ dl
        g_b = -float(np.sum(dl))
        if multi:
            second = expit(margin) * expit(-margin)
            h = np.clip((Phi * Phi).T @ second, 1e-10, 1e10)
            if scaling == "hessian" or H_prev is None:
                H = h
            else:
                H = np.maximum(np.minimum(h, H_prev), 1e-3 * np.median(h))
            H_prev = H
            H_b = float(np.clip(np.sum(second), 1e-10, 1e10))
        else:
            H = np.ones(M)
            H_b = 1.0

        def trial(step_mu):
            step = step_mu / H
            p = soft_threshold(x_w - step * g, lam * step)
            p_b = x_b - step_mu / H_b * g_b if fit_intercept else x_b
            dw, db = p - x_w, p_b - x_b
            change = logistic_change(y, f_x, Phi @ dw - db)
            model = float(g @ dw) + g_b * db + (float(np.sum(H * dw * dw))
                                                + H_b * db * db) / (2.0 * step_mu)
            return p, p_b, change, model

        p, p_b, change, model = trial(mu)
        out["excess"].append((change - model) / abs(value))
        F_p = value + change + lam * float(np.sum(np.abs(p)))
        out["F_error"].append(abs(F_p - record["objective"]) / abs(F_p))
        start = mu_prev / eta if grow else mu_prev
        rungs = np.log(start / mu) / np.log(1.0 / eta)
        out["ladder"].append(abs(rungs - round(rungs)) if rungs > -0.5 else np.inf)
        if mu < start * (1 - 1e-12):
            _, _, change2, model2 = trial(mu / eta)
            out["rejected"].append((change2 - model2) / abs(value))
        if restart and record["objective"] > F_prev + 1e-12 * abs(F_prev):
            t = 1.0
            x_w, x_b = p.copy(), p_b
        else:
            t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / t_next
            x_w = p + beta * (p - y_w)
            x_b = p_b + beta * (p_b - y_b)
            t = t_next
        y_w, y_b = p, p_b
        F_prev = record["objective"]
        mu_prev = mu
        out["steps"] = k
    return out


# -------------------------------------------------------------- SGD-C in numpy
def replay_sgdc(rows, y, order, *, eta0, decay, lam, n_total, C=1.0, w=None,
                state=(0.0, 0.0, 0.0, 0.0), fit_intercept=False):
    """Algorithm 4 of seed 001 (the digest's §A2.3, steps from k = 1), logistic
    loss, in plain Python: returns ``(w, h, q, state)`` after the samples
    ``order`` (rows ``rows[r]`` belong to sample ``order[r]``)."""
    rows = np.asarray(rows, dtype=np.float64)
    M = rows.shape[1]
    w = np.zeros(M) if w is None else np.array(w, dtype=np.float64)
    h = np.zeros(M)
    q = np.zeros(M)
    k, u, b, h_b = (float(v) for v in state)
    for r, i in enumerate(order):
        k += 1.0
        eta = eta0 * decay ** (-(k - 1.0) / n_total)
        u += eta * lam / n_total
        f = float(rows[r] @ w) - b
        grad = -C * y[i] * expit(-y[i] * f)          # dl/df
        h = h / k + (k - 1.0) / k * grad * rows[r]
        w = w - eta * h
        if fit_intercept:
            h_b = h_b / k + (k - 1.0) / k * (-grad)
            b -= eta * h_b
        z = w.copy()
        pos, neg = z > 0, z < 0
        w[pos] = np.maximum(0.0, z[pos] - (u + q[pos]))
        w[neg] = np.minimum(0.0, z[neg] + (u - q[neg]))
        q += w - z
    return w, h, q, np.array([k, u, b, h_b])
