"""l1-regularised logistic regression with an unpenalised intercept.

Problem, labels ``y_i`` in ``{+1, -1}``, ``n`` samples (with sample weights
``s_i``: ``1/n`` becomes ``s_i / sum(s)``)::

    min_{beta, c}  (1/n) sum_i log(1 + exp(-y_i (x_i' beta + c))) + lam ||beta||_1

over a subset of the CSC columns of ``X`` (the others held at 0): the
subproblem of an l1 path with screening (Slores) or of a working-set method.
:func:`solve_l1_logistic` validates the arrays once and calls
:func:`ultrafs.kernels.l1_logistic.l1_logistic_solve` (proximal Newton with
coordinate-descent inner solves in growing working sets, newGLMNET's line
search; its docstring describes the method).

Certificate: with ``g = -(1/n) X' (y theta)``, ``g_c = -(1/n) sum_i y_i
theta_i``, ``theta_i = 1 / (1 + exp(y_i f_i))``, the KKT residual is ::

    kkt = max(|g_c|, max_{beta_j != 0} |g_j + lam sign(beta_j)|,
              max_{beta_j = 0} max(0, |g_j| - lam))

over the optimised columns; the solve stops when ``kkt <= tol * lam``
(``converged``).  The duality gap of the dual point ``theta`` made feasible
(:func:`ultrafs.kernels.l1_logistic.l1_logistic_dual_gap`) is reported too.

This module knows nothing of stores: raw CSC arrays in, arrays out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels.csc_check import CSC_OK, check_csc_block
from ultrafs.kernels.l1_logistic import (STATUS_CONVERGED, l1_logistic_gradient,
                                         l1_logistic_solve)
from ultrafs.solvers.certificate import Certificate, SolverResult

__all__ = ["L1LogisticResult", "solve_l1_logistic", "l1_logistic_lam_max",
           "l1_path_refusal", "solve_l1_problem"]

#: smallest working set of the solver (grown to twice the support)
WS_START = 10


@dataclass(frozen=True)
class L1LogisticResult(SolverResult):
    """Solution of :func:`solve_l1_logistic` (a
    :class:`~ultrafs.solvers.certificate.SolverResult`).

    Attributes
    ----------
    coef : float64 array, shape (m,)
        Coefficients of the optimised columns, in the order of ``columns``.
    intercept : float
    objective : float
        ``(1/n) sum_i log(1 + exp(-y_i decision_i)) + lam ||coef||_1``.
    kkt : float
        KKT residual at the solution (absolute; the module docstring).
    converged : bool
        ``kkt <= tol * lam``.
    n_iter : int
        Proximal Newton steps (0 when the start already satisfies the
        certificate).
    n_cd_sweeps : int
        Coordinate-descent sweeps of the Newton steps' inner solves (over a
        whole working set, or over its nonzero coordinates).
    decision : float64 array, shape (n,)
        ``x_i' coef + intercept``.
    theta : float64 array, shape (n,)
        ``1 / (1 + exp(y_i decision_i))``: the predicted probability of the
        wrong label, the dual point.
    gap : float
        Primal minus dual value at ``theta`` made feasible (``>= 0`` up to
        rounding), NaN when it cannot be made feasible.
    kkt_tol : float
        The absolute KKT residual the solve stopped at, ``tol * lam``.
    """

    coef: np.ndarray
    intercept: float
    objective: float
    kkt: float
    converged: bool
    n_iter: int
    n_cd_sweeps: int
    decision: np.ndarray
    theta: np.ndarray
    gap: float
    kkt_tol: float = math.nan

    @property
    def certificate(self) -> Certificate:
        """``kkt`` against ``kkt_tol`` (kind ``kkt_residual``, absolute)."""
        return Certificate(kind="kkt_residual", value=float(self.kkt),
                           tol=float(self.kkt_tol), passed=bool(self.converged))

    @property
    def history(self) -> list:
        """No record per iteration is kept (the kernel runs them all)."""
        return []


def check_csc_arrays(indptr, indices, data, n_rows):
    """Validated ``(indptr int64, indices int32/int64, data float32/float64)``."""
    if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows < 0:
        raise ParameterError(f"n_rows must be a non-negative integer, got {n_rows!r}")
    indptr = np.ascontiguousarray(indptr)
    indices = np.ascontiguousarray(indices)
    data = np.ascontiguousarray(data)
    if indptr.ndim != 1 or indices.ndim != 1 or data.ndim != 1:
        raise ParameterError("indptr, indices and data must be one-dimensional")
    if len(indptr) < 1:
        raise ParameterError("indptr must hold at least one offset")
    if not (np.issubdtype(indptr.dtype, np.integer) and np.issubdtype(indices.dtype, np.integer)):
        raise ParameterError("indptr and indices must be integer arrays")
    indptr = indptr.astype(np.int64, copy=False)
    if indices.dtype not in (np.int32, np.int64):
        indices = indices.astype(np.int64)
    if data.dtype not in (np.float32, np.float64):
        if not np.issubdtype(data.dtype, np.number) or np.iscomplexobj(data):
            raise ParameterError(f"data must be real numbers, got dtype {data.dtype}")
        data = data.astype(np.float64)
    if len(indices) != len(data):
        raise ParameterError(f"indices and data differ in length ({len(indices)} != {len(data)})")
    code, column = check_csc_block(indptr, indices, n_rows)
    if code != CSC_OK:
        where = f" (column {column})" if column >= 0 else ""
        raise ParameterError(f"invalid CSC arrays{where}: offsets must start at 0 and never "
                             f"decrease, rows lie in [0, n_rows) and increase within a column")
    if not np.all(np.isfinite(data)):
        raise ParameterError("data holds NaN or infinite values")
    return indptr, indices, data


def _check_labels(y, n_rows, sample_weight):
    """Validated ``(y float64, s float64 or empty, S_plus, S_minus)``."""
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n_rows:
        raise ParameterError(f"y must have shape ({n_rows},), got {y.shape}")
    if not np.issubdtype(y.dtype, np.number) or not np.all((y == 1) | (y == -1)):
        raise ParameterError("y must hold labels +1 and -1 only")
    y = np.ascontiguousarray(y, dtype=np.float64)
    if sample_weight is None:
        s = np.empty(0)
        s_plus = float(np.count_nonzero(y > 0))
        s_minus = float(n_rows - s_plus)
    else:
        s = np.ascontiguousarray(sample_weight, dtype=np.float64)
        if s.shape != (n_rows,):
            raise ParameterError(f"sample_weight must have shape ({n_rows},), got {s.shape}")
        if not np.all(np.isfinite(s)) or np.any(s < 0):
            raise ParameterError("sample_weight must be finite and non-negative")
        s_plus = float(np.sum(s[y > 0]))
        s_minus = float(np.sum(s[y < 0]))
    if not (s_plus > 0 and s_minus > 0):
        raise ParameterError("y must hold both classes (+1 and -1) with positive weight")
    return y, s, s_plus, s_minus


def _check_columns(columns, n_columns):
    if columns is None:
        return np.arange(n_columns, dtype=np.int64)
    columns = np.asarray(columns)
    if columns.ndim != 1 or (len(columns) and not np.issubdtype(columns.dtype, np.integer)):
        raise ParameterError("columns must be a one-dimensional integer array")
    columns = np.ascontiguousarray(columns, dtype=np.int64)
    if len(columns) and (columns.min() < 0 or columns.max() >= n_columns):
        raise ParameterError(f"columns must lie in [0, {n_columns})")
    return columns


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a positive number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    return value


def l1_logistic_lam_max(indptr, indices, data, y, *, n_rows, columns=None,
                        sample_weight=None):
    """Smallest ``lam`` at which the solution is ``beta = 0``.

    ``lam_max = max_j |X_j' (s y theta_max)| / S`` with ``theta_max_i =
    S_minus / S`` for ``y_i = +1`` and ``S_plus / S`` for ``y_i = -1`` (the
    dual point of the best constant model, ``c = log(S_plus / S_minus)``).

    Parameters
    ----------
    indptr, indices, data, y, n_rows, columns, sample_weight
        As in :func:`solve_l1_logistic`.

    Returns
    -------
    lam_max : float
        0.0 when no column is optimised.
    """
    indptr, indices, data = check_csc_arrays(indptr, indices, data, n_rows)
    y, s, s_plus, s_minus = _check_labels(y, n_rows, sample_weight)
    columns = _check_columns(columns, len(indptr) - 1)
    total = s_plus + s_minus
    theta = np.where(y > 0, s_minus / total, s_plus / total)
    r = y * theta / total
    if len(s):
        r = r * s
    g = l1_logistic_gradient(indptr, indices, data, columns, r, np.empty(len(columns)))
    return float(np.max(np.abs(g))) if len(g) else 0.0


def solve_l1_logistic(indptr, indices, data, y, lam, *, n_rows, columns=None,
                      coef0=None, intercept0=None, tol=1e-7, max_iter=200,
                      sample_weight=None) -> L1LogisticResult:
    """Solve the l1-regularised logistic regression over CSC columns.

    Parameters
    ----------
    indptr : int array, shape (p + 1,)
        Column offsets of ``X`` (n_rows x p), converted to int64.
    indices : int32 or int64 array, shape (nnz,)
        Row numbers, increasing within each column (scipy's canonical CSC).
    data : float32 or float64 array, shape (nnz,)
        The values (other real dtypes are converted to float64).
    y : array, shape (n_rows,)
        Labels, ``+1`` or ``-1``, both present.
    lam : float
        Penalty, ``> 0``.
    n_rows : int
        Samples (rows without entries count).
    columns : int array, shape (m,), optional
        The columns optimised; the others stay at 0.  None: all ``p``.
    coef0 : array, shape (m,), optional
        Warm start (default 0).
    intercept0 : float, optional
        Warm start of the intercept (default ``log(S_plus / S_minus)``, the
        exact intercept of ``beta = 0``).
    tol : float
        Stop when the KKT residual is at most ``tol * lam``.
    max_iter : int
        Most proximal Newton steps (``converged=False`` when reached).
    sample_weight : array, shape (n_rows,), optional
        Non-negative weights; ``1/n`` becomes ``s_i / sum(s)``.

    Returns
    -------
    L1LogisticResult
    """
    indptr, indices, data = check_csc_arrays(indptr, indices, data, n_rows)
    y, s, s_plus, s_minus = _check_labels(y, n_rows, sample_weight)
    columns = _check_columns(columns, len(indptr) - 1)
    lam = _positive("lam", lam)
    tol = _positive("tol", tol)
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
        raise ParameterError(f"max_iter must be a non-negative integer, got {max_iter!r}")
    m = len(columns)
    if coef0 is None:
        coef0 = np.zeros(m)
    else:
        coef0 = np.asarray(coef0, dtype=np.float64)
        if coef0.shape != (m,):
            raise ParameterError(f"coef0 must have shape ({m},), got {coef0.shape}")
        if not np.all(np.isfinite(coef0)):
            raise ParameterError("coef0 holds NaN or infinite values")
        coef0 = np.ascontiguousarray(coef0)
    if intercept0 is None:
        intercept0 = math.log(s_plus / s_minus)
    else:
        try:
            intercept0 = float(intercept0)
        except (TypeError, ValueError):
            raise ParameterError(f"intercept0 must be a number, got {intercept0!r}") from None
        if not math.isfinite(intercept0):
            raise ParameterError("intercept0 must be finite")
    (coef, intercept, decision, theta, kkt, objective, _, gap, n_iter, n_sweeps, _,
     status) = l1_logistic_solve(indptr, indices, data, columns, y, s, lam, coef0, intercept0,
                                 tol, int(max_iter), WS_START)
    return L1LogisticResult(coef=coef, intercept=float(intercept), objective=float(objective),
                            kkt=float(kkt), converged=bool(status == STATUS_CONVERGED),
                            n_iter=int(n_iter), n_cd_sweeps=int(n_sweeps), decision=decision,
                            theta=theta, gap=float(gap), kkt_tol=tol * lam)


def l1_path_refusal(problem) -> str:
    """Why the l1 path's solver cannot take ``problem`` ("" when it can).

    It takes an :class:`~ultrafs.solvers.l1_problem.L1Problem` with the
    logistic loss, an intercept, and CSC columns of one output
    (``indptr``, ``indices``, ``data``): its numba kernel is specialised to
    the logistic loss (no other loss reaches it).
    """
    from ultrafs.solvers.l1_problem import L1Problem
    from ultrafs.solvers.losses import Logistic

    if not isinstance(problem, L1Problem):
        return f"the l1 path solves an L1Problem, not a {type(problem).__name__}"
    if not isinstance(problem.datafit.loss, Logistic):
        return (f"the l1 path's kernel is the logistic loss's only, not "
                f"{problem.datafit.loss.name!r}")
    if not problem.fit_intercept:
        return "the l1 path always fits the intercept"
    op = problem.operator
    if getattr(op, "indptr", None) is None or getattr(op, "indices", None) is None:
        return f"the l1 path reads CSC columns, not a {type(op).__name__}"
    return ""


def solve_l1_problem(problem, *, tol=1e-7, max_iter=200, start=None):
    """:func:`solve_l1_logistic` on an :class:`~ultrafs.solvers.l1_problem.L1Problem`.

    ``C sum_i s_i l_i + lam ||w||_1`` is ``C S`` times the kernel's
    ``(1/S) sum_i s_i l_i + lam / (C S) ||w||_1`` (``S = sum_i s_i``, or
    ``n``): the kernel runs at ``lam / (C S)``, its stop ``kkt <= tol lam /
    (C S)`` is ``kkt <= tol lam`` in the problem's scale, and the objective,
    the KKT residual and the gap are returned in the problem's scale.

    Parameters
    ----------
    problem : L1Problem
        Refused in one line unless :func:`l1_path_refusal` is empty.
    tol, max_iter
        As in :func:`solve_l1_logistic`.
    start : SolverResult, optional
        Warm start (its ``coef`` and ``intercept``).

    Returns
    -------
    L1LogisticResult
    """
    from dataclasses import replace

    reason = l1_path_refusal(problem)
    if reason:
        raise ParameterError(reason)
    d = problem.datafit
    op = d.operator
    scale = d.C * float(getattr(d, "weight_total", d.n))
    coef0 = intercept0 = None
    if start is not None:
        coef0, intercept0 = start.coef, float(start.intercept)
    res = solve_l1_logistic(op.indptr, op.indices, op.data, d.y, problem.lam / scale,
                            n_rows=d.n, coef0=coef0, intercept0=intercept0, tol=tol,
                            max_iter=max_iter, sample_weight=d.sample_weight)
    return replace(res, objective=res.objective * scale, kkt=res.kkt * scale,
                   gap=res.gap * scale, kkt_tol=tol * problem.lam)
