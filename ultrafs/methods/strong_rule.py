"""The strong rule for ℓ1 logistic regression (Tibshirani et al., JRSS-B 2012).

An *unsafe* heuristic, kept as the baseline Slores is compared with (seed
004, Figs. 2–3): in Slores's scaling (digest B5) feature j is discarded at
λ when

* basic (reference λ_max): ``|x̄_j'θ_max| < n (2λ − λ_max)``, which
  discards nothing once λ <= λ_max / 2;
* sequential (reference: the solution at the previous λ0):
  ``|x̄_j'θ̂_{λ0}| < n (2λ − λ0)``.

With sample weights the correlations are ``x̄_j'(w ⊙ θ)`` (the statistics'
and the KKT check's, :mod:`ultrafs.methods.l1_weights`) and the test is
the same.

It may discard a feature whose weight is not zero: the path solver
(:mod:`ultrafs.methods.l1_path`) re-adds every KKT violator after the
solve and solves again, so the returned models are optimal all the same.
"""

from __future__ import annotations

import numpy as np

__all__ = ["strong_keep"]


def strong_keep(correlations, lam, reference_lam, n_samples, constant=None):
    """Columns the strong rule keeps at ``lam``.

    Parameters
    ----------
    correlations : float64 array, shape (p,)
        ``x̄_j'θ`` at the reference point (θ_max, or the previous solution's
        dual point).
    lam, reference_lam : float
        The new λ and the reference's (λ_max, or the previous λ).
    n_samples : int
    constant : bool array, shape (p,), optional
        Constant columns (zero weight at every λ, safely): dropped.

    Returns
    -------
    keep : bool array, shape (p,)
    """
    correlations = np.asarray(correlations, dtype=np.float64)
    keep = np.abs(correlations) >= n_samples * (2.0 * lam - reference_lam)
    if constant is not None:
        keep &= ~np.asarray(constant, dtype=bool)
    return keep
