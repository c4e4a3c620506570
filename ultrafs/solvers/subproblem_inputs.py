"""Checked inputs of the FGM subproblem: the arrays, the blocks, the warm start.

What :func:`ultrafs.solvers.apg.solve` and
:func:`ultrafs.solvers.apg.solve_subproblem` validate before a solver runs:
the CSC arrays, ``block_ptr``, the labels, ``C``, the penalty, and the
starting point (``coef0``, ``bias0``, ``lipschitz0``); and the exact
solution of a problem without columns.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.solvers.datafits import encode_classification_targets, make_datafit
from ultrafs.solvers.penalties import L21Squared, Penalty
from ultrafs.solvers.subproblem import Problem, SubproblemResult, as_bias

__all__ = ["as_csc", "as_block_ptr", "as_labels", "as_C", "as_penalty", "make_problem",
           "initial_coef", "initial_bias", "initial_lipschitz", "bias_only_result"]


def as_csc(indptr, indices, data, n):
    """Validate the CSC arrays of ``X`` with ``n`` rows; return them."""
    indptr = np.ascontiguousarray(indptr)
    indices = np.ascontiguousarray(indices)
    data = np.asarray(data)
    if data.dtype not in (np.float32, np.float64):
        data = data.astype(np.float64)
    data = np.ascontiguousarray(data)
    if indptr.ndim != 1 or len(indptr) < 1 or indptr[0] != 0:
        raise ParameterError("indptr must be a 1-d array starting at 0")
    nnz = int(indptr[-1])
    if len(indices) != nnz or len(data) != nnz:
        raise ParameterError(
            f"indices and data must hold indptr[-1] = {nnz} entries, "
            f"got {len(indices)} and {len(data)}"
        )
    if nnz and (indices.min() < 0 or indices.max() >= n):
        raise ParameterError(f"row indices must lie in [0, {n})")
    if not np.all(np.isfinite(data)):
        raise ParameterError("data must be finite")
    return indptr, indices, data


def as_block_ptr(block_ptr, p):
    """Validate ``block_ptr`` for ``p`` columns; return it as int64."""
    block_ptr = np.ascontiguousarray(block_ptr, dtype=np.int64)
    if (block_ptr.ndim != 1 or len(block_ptr) < 1 or block_ptr[0] != 0
            or block_ptr[-1] != p or np.any(np.diff(block_ptr) < 0)):
        raise ParameterError(
            f"block_ptr must be non-decreasing from 0 to p = {p}, got {block_ptr!r}"
        )
    return block_ptr


def as_labels(y):
    """Validate labels in {-1, +1}; return them as contiguous float64."""
    return encode_classification_targets(y)[0]


def as_C(C):
    """Validate ``C > 0``; return it as a float."""
    C = float(C)
    if not (np.isfinite(C) and C > 0):
        raise ParameterError(f"C must be finite and > 0, got {C!r}")
    return C


def as_penalty(penalty):
    penalty = L21Squared() if penalty is None else penalty
    if not isinstance(penalty, Penalty):
        raise ParameterError(f"penalty must be a Penalty, got {penalty!r}")
    return penalty


def make_problem(indptr, indices, data, block_ptr, y, C, loss, penalty, n_classes=None,
             sample_weight=None):
    """Validate every input of a subproblem; return a :class:`Problem`.

    ``block_ptr`` is in columns; with K >= 3 classes it is scaled to the
    K coefficients of every column.
    """
    y, K = encode_classification_targets(y, n_classes)
    indptr, indices, data = as_csc(indptr, indices, data, len(y))
    block_ptr = as_block_ptr(block_ptr, len(indptr) - 1) * K
    datafit = make_datafit(indptr, indices, data, y, as_C(C), loss=loss,
                           n_classes=n_classes, sample_weight=sample_weight)
    return Problem(datafit, as_penalty(penalty), block_ptr)


def initial_coef(coef0, p):
    """Return ``coef0`` padded with zeros to length ``p`` (warm start)."""
    coef = np.zeros(p, dtype=np.float64)
    if coef0 is not None:
        coef0 = np.asarray(coef0, dtype=np.float64).ravel()
        if len(coef0) > p:
            raise ParameterError(f"coef0 has {len(coef0)} entries, more than p = {p}")
        if not np.all(np.isfinite(coef0)):
            raise ParameterError("coef0 must be finite")
        coef[: len(coef0)] = coef0
    return coef


def initial_bias(bias0, fit_intercept, n_outputs=1):
    """Validate the warm start of ``b``; return it as a float or (K,) array."""
    if n_outputs == 1:
        bias0 = float(bias0)
        if not np.isfinite(bias0):
            raise ParameterError(f"bias0 must be finite, got {bias0!r}")
        if not fit_intercept and bias0 != 0.0:
            raise ParameterError("bias0 must be 0 when fit_intercept is False")
        return bias0
    try:
        bias = np.zeros(n_outputs) + np.asarray(bias0, dtype=np.float64)
    except (TypeError, ValueError):
        bias = None
    if bias is None or bias.shape != (n_outputs,) or not np.all(np.isfinite(bias)):
        raise ParameterError(f"bias0 must be {n_outputs} finite values")
    if not fit_intercept and np.any(bias != 0.0):
        raise ParameterError("bias0 must be 0 when fit_intercept is False")
    return bias


def initial_lipschitz(lipschitz0, pb):
    """Return ``lipschitz0``, or ``0.01 n C`` (paper §5.2) when it is None.

    With sample weights ``n`` is their sum.
    """
    if lipschitz0 is None:
        return 0.01 * pb.weight_total * pb.C
    lipschitz0 = float(lipschitz0)
    if not (np.isfinite(lipschitz0) and lipschitz0 > 0):
        raise ParameterError(f"lipschitz0 must be finite and > 0, got {lipschitz0!r}")
    return lipschitz0


def bias_only_result(pb, fit_intercept, lipschitz):
    """Exact solution when there is no column (``p == 0``)."""
    bias = pb.datafit.optimal_bias(fit_intercept)
    decision = pb.datafit.constant_decision(bias)
    return SubproblemResult(
        coef=np.zeros(0), bias=as_bias(bias), objective=pb.data_term(decision),
        n_iter=0, lipschitz=lipschitz, converged=True, decision=decision,
        history=[], kkt=0.0,
    )
