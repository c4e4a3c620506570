"""Small sparse binary problems the face tests share (ℓ1-LR, MSLR)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def sparse_binary_problem(seed=0, n=120, m=300, density=0.05, n_relevant=10):
    """CSR rows with values in [0.5, 1.5), ±1 labels of a planted linear model
    (n_relevant weights, 3 × standard normal) plus noise; rows 0 and 1 hold
    one label each."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, m, density=density, format="csr", random_state=seed,
                  data_rvs=lambda k: rng.random(k) + 0.5)
    w = np.zeros(m)
    w[rng.choice(m, n_relevant, replace=False)] = rng.standard_normal(n_relevant) * 3
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return X, y
