"""Kernels of the l1-regularised logistic regression solver (CSC columns).

Problem, labels ``y_i`` in ``{+1, -1}``, sample weights ``s_i >= 0`` (an
empty ``s`` means ``s_i = 1``), ``S = sum_i s_i``::

    min_{beta, c}  F(beta, c) = (1/S) sum_i s_i log(1 + exp(-y_i f_i))
                                + lam ||beta||_1,      f = X beta + c,

over a subset of the CSC columns of ``X`` (``columns``: positions into
``indptr``; the other columns are held at 0).  The intercept ``c`` is not
penalised.

``l1_logistic_solve(indptr, indices, data, columns, y, s, lam, coef0, intercept0, tol, max_iter, ws_start)``
    proximal Newton with coordinate-descent inner solves (newGLMNET, Yuan,
    Ho & Lin 2012) inside working sets (Massias et al. 2018, celer;
    Bertrand et al. 2022, skglm):

    1. each *round* recomputes ``f`` from the coefficients (so the
       certificate holds at the returned point, not at an accumulated
       ``f``), the gradient of the smooth part over every optimised column
       and the KKT residual (:func:`l1_logistic_kkt`); it stops when that
       residual is at most ``tol * lam`` (the certificate), after
       ``max_iter`` Newton steps, or when the last round could not move (a
       failed line search: the floating-point floor);
    2. the working set: the columns with a nonzero coefficient and the
       columns of largest ``|g_j|`` (the worst KKT violators first, then
       the closest to violating), ``max(ws_start, 2 * nnz(beta))`` columns
       and never fewer than the round before (so it grows geometrically
       while the support fills it), in column order;
    3. Newton steps on the working set until its own KKT residual (the
       intercept's included) is at most ``0.5 * tol * lam``: a Newton step
       on the working set costs a fraction of a round's pass over every
       column, so the working set is solved through (skglm stops at 0.3
       times the round's residual instead: 1.6 times as long on the IMDB
       unigram path).  A step solves the quadratic model
       ``g'd + g_c e + 1/2 (Xd + e)' W (Xd + e) + lam ||beta + d||_1`` by
       cyclic coordinate descent where each coordinate ``d_j`` is
       minimised *jointly with the intercept step* ``e`` (a 2 x 2 block:
       ``e`` is eliminated by its Schur complement, and ``sum_i W_i (Xd)_i``
       is kept up to date, so the block costs the column's entries only),
       with glmnet's active-set cycling (sweeps over the nonzero
       coordinates between whole sweeps), until a whole sweep meets no
       model KKT violation above ``_ETA`` times the working set's residual
       (or ``_MAX_SWEEPS`` sweeps); then a backtracking (Armijo) line
       search on the true objective, ``F(x + t d) - F(x) <= sigma t Delta``
       with ``Delta = g'd + g_c e + lam (||beta + d||_1 - ||beta||_1)``
       (newGLMNET's rule with ``gamma = 0``), the change of the loss summed
       per sample as ``log1p(theta_i expm1(delta_i))`` and the change of
       the penalty per coordinate: accurate however small the change (a
       difference of two sums of ``n`` losses is not, long before the
       certificate is reached).

    Everything is serial and in a fixed order: the same inputs give the
    same bytes.

``l1_logistic_gradient(indptr, indices, data, columns, r, out)``
    ``out[k] = sum_i X[i, columns[k]] r_i`` (the gradient of the smooth part
    is this product with ``r_i = -s_i y_i theta_i / S``).

``l1_logistic_kkt(coef, g, g_c, lam)``
    the KKT residual ``max(|g_c|, max_{beta_j != 0} |g_j + lam sign(beta_j)|,
    max_{beta_j = 0} max(0, |g_j| - lam))``.

``l1_logistic_dual_gap(indptr, indices, data, columns, y, s, lam, coef, f, theta)``
    the primal value, a dual value and the duality gap, from a dual point
    made feasible (:mod:`ultrafs.kernels.l1_logistic_gap`, with the dual).
"""

import math

import numpy as np
from numba import njit

from .l1_logistic_gap import (dual_projection, gap_values, l1_logistic_dual_gap,
                              l1_logistic_gradient, total_weight)
from .losses import softplus

__all__ = ["l1_logistic_solve", "l1_logistic_gradient", "l1_logistic_kkt",
           "l1_logistic_dual_gap", "STATUS_CONVERGED", "STATUS_MAX_ITER",
           "STATUS_STALLED"]

#: the KKT residual reached ``tol * lam``
STATUS_CONVERGED = 0
#: ``max_iter`` Newton steps were taken first
STATUS_MAX_ITER = 1
#: a round could not decrease the objective (line search failed, or the
#: model predicted no decrease) before the certificate held
STATUS_STALLED = 2

# Armijo constant and halvings of the line search (newGLMNET: 0.01, 0.5).
_SIGMA = 0.01
_MAX_HALVINGS = 40
# Coordinate-descent sweeps per Newton step, at most.
_MAX_SWEEPS = 200
# Forcing term of the inner solve: the model's residual relative to the
# working set's.
_ETA = 0.1
# |delta| up to which the loss change is log1p(theta expm1(delta)).
_SMALL_DELTA = 1.0


@njit(cache=True, nogil=True)
def _decision(indptr, indices, data, columns, coef, intercept, f):
    """``f = X[:, columns] coef + intercept``, columns in order."""
    for i in range(f.shape[0]):
        f[i] = intercept
    for k in range(columns.shape[0]):
        b = coef[k]
        if b != 0.0:
            j = columns[k]
            for p in range(indptr[j], indptr[j + 1]):
                f[indices[p]] += b * np.float64(data[p])


@njit(cache=True, nogil=True)
def _state(y, s, f, inv_total, theta, r, w):
    """Dual point, gradient weights and curvature weights at ``f``.

    Writes ``theta_i = 1 / (1 + exp(y_i f_i))``, ``r_i = -s_i y_i theta_i / S``
    (the derivative of the smooth part in ``f_i``) and ``w_i = s_i theta_i
    (1 - theta_i) / S`` (its second derivative; ``1 - theta_i`` computed as
    its own sigmoid, never by cancellation).

    Returns
    -------
    g_c : float
        ``sum_i r_i``, the derivative in the intercept.
    h_c : float
        ``sum_i w_i``.
    """
    weighted = s.shape[0] > 0
    g_c = 0.0
    h_c = 0.0
    for i in range(y.shape[0]):
        m = y[i] * f[i]
        if m >= 0.0:
            e = math.exp(-m)
            t = e / (1.0 + e)
            tc = 1.0 / (1.0 + e)
        else:
            e = math.exp(m)
            t = 1.0 / (1.0 + e)
            tc = e / (1.0 + e)
        si = s[i] * inv_total if weighted else inv_total
        theta[i] = t
        ri = -si * y[i] * t
        wi = si * t * tc
        r[i] = ri
        w[i] = wi
        g_c += ri
        h_c += wi
    return g_c, h_c


@njit(cache=True, nogil=True)
def _gradient_and_sums(indptr, indices, data, columns, r, s, out, sums):
    """:func:`l1_logistic_gradient` and, in the same pass, ``sums[k] = X_k' s``
    (``X_k' 1`` for an empty ``s``)."""
    weighted = s.shape[0] > 0
    for k in range(columns.shape[0]):
        j = columns[k]
        acc = 0.0
        tot = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            x = np.float64(data[p])
            i = indices[p]
            acc += x * r[i]
            tot += x * s[i] if weighted else x
        out[k] = acc
        sums[k] = tot


@njit(cache=True, nogil=True)
def _violation(b, gj, lam):
    """KKT violation of one coefficient ``b`` with gradient ``gj``."""
    if b > 0.0:
        return abs(gj + lam)
    if b < 0.0:
        return abs(gj - lam)
    v = abs(gj) - lam
    return v if v > 0.0 else 0.0


@njit(cache=True, nogil=True)
def l1_logistic_kkt(coef, g, g_c, lam):
    """KKT residual of the l1 problem with an unpenalised intercept.

    Parameters
    ----------
    coef : float64 array, shape (m,)
    g : float64 array, shape (m,)
        Gradient of the smooth part in ``coef``.
    g_c : float
        Its derivative in the intercept.
    lam : float

    Returns
    -------
    kkt : float
        ``max(|g_c|, max_{coef_j != 0} |g_j + lam sign(coef_j)|,
        max_{coef_j = 0} max(0, |g_j| - lam))``.
    """
    worst = abs(g_c)
    for k in range(coef.shape[0]):
        v = _violation(coef[k], g[k], lam)
        if v > worst:
            worst = v
    return worst


@njit(cache=True, nogil=True)
def _kth_largest(a, k):
    """The ``k``-th largest value of ``a`` (``1 <= k <= len(a)``; ``a`` is
    reordered): quickselect with a median-of-three pivot and three-way
    partitions (ties cost nothing)."""
    lo = 0
    hi = a.shape[0] - 1
    target = a.shape[0] - k      # position in increasing order
    while lo < hi:
        mid = lo + (hi - lo) // 2
        x, y, z = a[lo], a[mid], a[hi]
        if x > y:
            x, y = y, x
        if y > z:
            y = z
            if x > y:
                y = x
        pivot = y
        # three-way partition of a[lo:hi + 1]: < pivot, == pivot, > pivot
        lt = lo
        i = lo
        gt = hi
        while i <= gt:
            v = a[i]
            if v < pivot:
                a[i] = a[lt]
                a[lt] = v
                lt += 1
                i += 1
            elif v > pivot:
                a[i] = a[gt]
                a[gt] = v
                gt -= 1
            else:
                i += 1
        if target < lt:
            hi = lt - 1
        elif target > gt:
            lo = gt + 1
        else:
            return pivot
    return a[target]


@njit(cache=True, nogil=True)
def _working_set(coef, g, size, out):
    """Pick ``size`` positions: the support, then the largest ``|g|``.

    Writes them to ``out[:size]`` in increasing order (ties of ``|g|``
    broken by position) and returns ``size``.
    """
    m = coef.shape[0]
    if size >= m:
        for k in range(m):
            out[k] = k
        return m
    score = np.empty(m)
    for k in range(m):
        score[k] = np.inf if coef[k] != 0.0 else abs(g[k])
    threshold = _kth_largest(score.copy(), size)
    above = 0
    for k in range(m):
        if score[k] > threshold:
            above += 1
    ties = size - above
    count = 0
    for k in range(m):
        if score[k] > threshold:
            out[count] = k
            count += 1
        elif score[k] == threshold and ties > 0:
            out[count] = k
            count += 1
            ties -= 1
    return count


@njit(cache=True, nogil=True)
def _abs_change(b, delta):
    """``|b + delta| - |b|`` without cancellation when the sign stays."""
    new = b + delta
    if b > 0.0 and new >= 0.0:
        return delta
    if b < 0.0 and new <= 0.0:
        return -delta
    return abs(new) - abs(b)


@njit(cache=True, nogil=True)
def _loss_change(y, s, f, theta, xd, dc, step, inv_total):
    """``(1/S) sum_i s_i [l(f_i + step (xd_i + dc)) - l(f_i)]``, per sample.

    ``l(f) = softplus(-y f)``; with ``a = -y f`` and ``delta = -y step
    (xd + dc)`` the change is ``log1p(theta expm1(delta))`` (exact, and
    accurate for small ``delta``), the difference of the two softplus
    values for larger ``|delta|``.
    """
    weighted = s.shape[0] > 0
    total = 0.0
    for i in range(y.shape[0]):
        delta = -y[i] * step * (xd[i] + dc)
        if delta == 0.0:
            continue
        if abs(delta) <= _SMALL_DELTA:
            change = math.log1p(theta[i] * math.expm1(delta))
        else:
            a = -y[i] * f[i]
            change = softplus(a + delta) - softplus(a)
        if weighted:
            change *= s[i]
        total += change
    return total * inv_total


@njit(cache=True, nogil=True)
def _cd_sweep(indptr, indices, data, columns, ws, order, n_order, coef, gws, hws,
              aws, g_c, h_c, w, lam, d, xd, e, wxd, active):
    """One sweep of :func:`_cd_model` over ``order[:n_order]`` (positions in
    the working set), each coordinate jointly with the intercept step ``e``.

    When ``active`` is non-empty, writes there the positions left nonzero.

    Returns
    -------
    worst : float
        Largest model KKT violation met (each measured before its update).
    e, wxd : float
        Updated intercept step and ``sum_i w_i (X d)_i``.
    n_active : int
    """
    use_c = h_c > 0.0
    record = active.shape[0] > 0
    n_active = 0
    worst = 0.0
    if use_c:
        gc_model = g_c + wxd + e * h_c
        worst = abs(gc_model)
        e -= gc_model / h_c
    for q in range(n_order):
        t = order[q]
        j = columns[ws[t]]
        h = hws[t]
        a = aws[t]
        acc = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            acc += np.float64(data[p]) * w[i] * xd[i]
        gj = gws[t] + acc + e * a
        b = coef[ws[t]] + d[t]
        v = _violation(b, gj, lam)
        if v > worst:
            worst = v
        if use_c:
            gc_model = g_c + wxd + e * h_c
            h_red = h - a * a / h_c
            g_red = gj - a * gc_model / h_c
        else:
            gc_model = 0.0
            h_red = h
            g_red = gj
        if h_red > 1e-12 * h and h_red > 0.0:
            z = b - g_red / h_red
            thr = lam / h_red
            if z > thr:
                new = z - thr
            elif z < -thr:
                new = z + thr
            else:
                new = 0.0
        elif abs(g_red) <= lam:
            # no curvature left once the intercept moves (an empty column,
            # or one constant on the weighted samples): the model is linear
            # in d_j, minimised at 0
            new = 0.0
        else:
            new = b
        delta = new - b
        if delta != 0.0:
            d[t] += delta
            for p in range(indptr[j], indptr[j + 1]):
                xd[indices[p]] += delta * np.float64(data[p])
            wxd += delta * a
        if use_c:
            e -= (gc_model + a * delta) / h_c
        if record and new != 0.0:
            active[n_active] = t
            n_active += 1
    return worst, e, wxd, n_active


@njit(cache=True, nogil=True)
def _cd_model(indptr, indices, data, columns, ws, nws, coef, gws, hws, aws,
              g_c, h_c, w, lam, cd_tol, d, xd, order, active):
    """Coordinate descent on the proximal Newton model of the working set.

    Minimises ``g'd + g_c e + 1/2 (Xd + e)' diag(w) (Xd + e) + lam ||coef +
    d||_1`` over ``d`` (the working set's coordinates) and ``e`` (the
    intercept step), from ``d = 0, e = 0``: each coordinate jointly with
    ``e``.  As glmnet: a sweep over the whole working set, then sweeps over
    its nonzero coordinates only until their violations are at most
    ``cd_tol``, then a whole sweep again, until a whole sweep meets no
    violation above ``cd_tol`` (or ``_MAX_SWEEPS`` sweeps of either kind).
    Writes ``d[:nws]`` and ``xd`` (``X d``, without ``e``); ``order`` and
    ``active`` are scratch of at least ``nws`` positions.

    Returns
    -------
    e : float
        The intercept step.
    sweeps : int
    """
    for i in range(xd.shape[0]):
        xd[i] = 0.0
    for t in range(nws):
        d[t] = 0.0
        order[t] = t
    no_record = active[:0]
    e = 0.0
    wxd = 0.0          # sum_i w_i (X d)_i
    sweeps = 0
    while sweeps < _MAX_SWEEPS:
        worst, e, wxd, n_active = _cd_sweep(indptr, indices, data, columns, ws, order,
                                            nws, coef, gws, hws, aws, g_c, h_c, w,
                                            lam, d, xd, e, wxd, active)
        sweeps += 1
        if worst <= cd_tol:
            break
        while sweeps < _MAX_SWEEPS:
            worst, e, wxd, _ = _cd_sweep(indptr, indices, data, columns, ws, active,
                                         n_active, coef, gws, hws, aws, g_c, h_c, w,
                                         lam, d, xd, e, wxd, no_record)
            sweeps += 1
            if worst <= cd_tol:
                break
    return e, sweeps


@njit(cache=True, nogil=True)
def _solve_working_set(indptr, indices, data, columns, y, s, lam, coef, c, f,
                       theta, r, w, g_c, h_c, inv_total, ws, nws, tol_in,
                       max_iter, n_iter, gws, hws, aws, d, xd, order, active):
    """Proximal Newton steps on the working set ``ws[:nws]``.

    Updates ``coef``, ``f``, ``theta``, ``r``, ``w`` in place.

    Returns
    -------
    c : float
        The intercept.
    n_iter : int
        Newton steps taken so far (input count plus this call's).
    sweeps : int
        Coordinate-descent sweeps of this call.
    stalled : bool
        True when a step could not decrease the objective.
    """
    sweeps = 0
    while True:
        worst = abs(g_c)
        for t in range(nws):
            j = columns[ws[t]]
            gj = 0.0
            hj = 0.0
            aj = 0.0
            for p in range(indptr[j], indptr[j + 1]):
                i = indices[p]
                x = np.float64(data[p])
                gj += x * r[i]
                wx = w[i] * x
                aj += wx
                hj += wx * x
            gws[t] = gj
            hws[t] = hj
            aws[t] = aj
            v = _violation(coef[ws[t]], gj, lam)
            if v > worst:
                worst = v
        if worst <= tol_in:
            return c, n_iter, sweeps, False
        if n_iter >= max_iter:
            return c, n_iter, sweeps, False
        e, done = _cd_model(indptr, indices, data, columns, ws, nws, coef, gws,
                            hws, aws, g_c, h_c, w, lam, _ETA * worst, d, xd, order,
                            active)
        sweeps += done
        # predicted decrease (newGLMNET's Delta with gamma = 0)
        delta_lin = g_c * e
        l1_change = 0.0
        for t in range(nws):
            delta_lin += gws[t] * d[t]
            l1_change += _abs_change(coef[ws[t]], d[t])
        pred = delta_lin + lam * l1_change
        if not pred < 0.0:
            return c, n_iter, sweeps, True
        step = 1.0
        accepted = False
        for _ in range(_MAX_HALVINGS):
            l1_change = 0.0
            for t in range(nws):
                l1_change += _abs_change(coef[ws[t]], step * d[t])
            change = _loss_change(y, s, f, theta, xd, e, step, inv_total)
            if change + lam * l1_change <= _SIGMA * step * pred:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            return c, n_iter, sweeps, True
        moved = False
        for t in range(nws):
            k = ws[t]
            old = coef[k]
            coef[k] = old + step * d[t]
            if coef[k] != old:
                moved = True
        old_c = c
        c = c + step * e
        if c != old_c:
            moved = True
        n_iter += 1
        if not moved:
            return c, n_iter, sweeps, True
        for i in range(f.shape[0]):
            f[i] += step * (xd[i] + e)
        g_c, h_c = _state(y, s, f, inv_total, theta, r, w)


@njit(cache=True, nogil=True)
def l1_logistic_solve(indptr, indices, data, columns, y, s, lam, coef0,
                      intercept0, tol, max_iter, ws_start):
    """Solve the l1-regularised logistic regression over ``columns``.

    Parameters
    ----------
    indptr : int64 array, shape (p + 1,)
    indices : int32 or int64 array, shape (nnz,)
        Row numbers in ``[0, n)``, no row twice in a column.
    data : float32 or float64 array, shape (nnz,)
        The CSC arrays of ``X`` (n x p).
    columns : int64 array, shape (m,)
        The columns optimised (positions into ``indptr``; a column may
        appear twice).
    y : float64 array, shape (n,)
        Labels, ``+1`` or ``-1``.
    s : float64 array, shape (n,) or (0,)
        Sample weights (``>= 0``, positive sum in each class); empty: 1.
    lam : float
        Penalty, ``> 0``.
    coef0 : float64 array, shape (m,)
        Warm start of the coefficients (not modified).
    intercept0 : float
        Warm start of the intercept.
    tol : float
        Stop when the KKT residual is at most ``tol * lam``.
    max_iter : int
        Most Newton steps (all working sets together).
    ws_start : int
        Smallest working set.

    Returns
    -------
    coef : float64 array, shape (m,)
    intercept : float
    decision : float64 array, shape (n,)
        ``X[:, columns] coef + intercept``, recomputed from the coefficients.
    theta : float64 array, shape (n,)
        ``1 / (1 + exp(y_i decision_i))``.
    kkt : float
        KKT residual at the returned point (:func:`l1_logistic_kkt`).
    primal, dual, gap : float
        The objective, and the dual value and duality gap of ``theta`` made
        feasible, as :func:`l1_logistic_dual_gap` computes them (here from
        the last gradient and the columns' sums ``X_k' s``, taken in the
        first round's pass: no extra pass over the columns).
    n_iter : int
        Newton steps.
    n_sweeps : int
        Coordinate-descent sweeps of the inner solves (over a whole working
        set or over its nonzero coordinates).
    n_rounds : int
        Working sets solved.
    status : int
        ``STATUS_CONVERGED``, ``STATUS_MAX_ITER`` or ``STATUS_STALLED``.
    """
    n = y.shape[0]
    m = columns.shape[0]
    inv_total = 1.0 / total_weight(y, s)
    coef = coef0.copy()
    c = intercept0
    f = np.empty(n)
    theta = np.empty(n)
    r = np.empty(n)
    w = np.empty(n)
    xd = np.empty(n)
    g = np.empty(m)
    ws = np.empty(m, dtype=np.int64)
    gws = np.empty(m)
    hws = np.empty(m)
    aws = np.empty(m)
    d = np.empty(m)
    order = np.empty(m, dtype=np.int64)
    active = np.empty(m, dtype=np.int64)
    target = tol * lam
    n_iter = np.int64(0)   # not a literal: _solve_working_set compiles once
    n_sweeps = 0
    n_rounds = 0
    ws_size = max(ws_start, 1)
    stalled = False
    colsum = np.empty(m)
    while True:
        _decision(indptr, indices, data, columns, coef, c, f)
        g_c, h_c = _state(y, s, f, inv_total, theta, r, w)
        if n_rounds == 0:
            _gradient_and_sums(indptr, indices, data, columns, r, s, g, colsum)
        else:
            l1_logistic_gradient(indptr, indices, data, columns, r, g)
        kkt = l1_logistic_kkt(coef, g, g_c, lam)
        if kkt <= target:
            status = STATUS_CONVERGED
            break
        if stalled:
            status = STATUS_STALLED
            break
        if n_iter >= max_iter:
            status = STATUS_MAX_ITER
            break
        support = 0
        for k in range(m):
            if coef[k] != 0.0:
                support += 1
        ws_size = min(m, max(ws_size, 2 * support))
        nws = _working_set(coef, g, ws_size, ws)
        tol_in = 0.5 * target
        c, n_iter, sweeps, stalled = _solve_working_set(
            indptr, indices, data, columns, y, s, lam, coef, c, f, theta, r, w,
            g_c, h_c, inv_total, ws, nws, tol_in, max_iter, n_iter, gws, hws,
            aws, d, xd, order, active)
        n_sweeps += sweeps
        n_rounds += 1
    # the gap: X_k' (s y theta') = -S g_k - shift X_k' s
    total = 1.0 / inv_total
    proj, shift, feasible = dual_projection(y, s, theta, inv_total)
    top = 0.0
    for k in range(m):
        v = abs(-total * g[k] - shift * colsum[k])
        if v > top:
            top = v
    primal, dual, gap = gap_values(y, s, lam, coef, f, proj, top, total, feasible)
    return (coef, c, f, theta, kkt, primal, dual, gap, n_iter, n_sweeps, n_rounds,
            status)


