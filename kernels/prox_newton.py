"""Kernels of the proximal Newton solver of the FGM subproblem.

(See :mod:`ultrafs.solvers.prox_newton` for the method.)  The helpers
``eigen_block_step``, ``keep_eigen``, ``eigen_offsets``, ``model_kkt`` and
``model_block_norms`` are public for the K-output solvers.

``l21sq_model_bcd(H, g, coef, bias, block_ptr, fit_intercept, tol, max_sweeps, z, c, *ws)``
    block coordinate descent on the proximal Newton model of the
    l2,1-squared penalty::

        min_{z, c}  g' d + 1/2 d' H d + 1/2 (sum_h ||z_h||)^2,
        d = (z - coef, c - bias),

    where each block update minimises the model exactly over ``z_h`` and
    the unpenalised ``c`` together (``c`` is eliminated by its Schur
    complement).  With the other blocks fixed the penalty is
    ``1/2 ||z_h||^2 + lam ||z_h|| + const``, ``lam = sum_{g != h} ||z_g||``,
    so the block problem is ``min_u 1/2 u' (A + I) u + q' u + lam ||u||``
    with ``A`` the block's Schur complement (positive semi-definite): its
    solution is ``u = 0`` when ``||q|| <= lam`` and otherwise
    ``u = -(A + (1 + lam / ||u||) I)^{-1} q``, found from the eigenvalues
    of ``A`` by a monotone Newton iteration on a convex scalar equation (as
    in trust-region subproblems).  Block conditioning therefore costs
    nothing: a block whose columns differ in scale by 1e4 is solved exactly.

``l21sq_model_polish(H, g, coef, bias, block_ptr, fit_intercept, z, c)``
    a Newton step on the model restricted to its nonzero blocks, where it is
    smooth: what coordinate descent needs when columns of different blocks
    are collinear (one-hot groups split over FGM's batches).

``eigen_workspace(block_ptr)``, ``l21sq_model_residual(...)``
    the storage of the blocks' eigen-decompositions, and the model's
    relative KKT residual (the measure both model solvers stop on).

The Hessians ``H`` come from :mod:`ultrafs.kernels.hessian_gram`; the
model solvers of K outputs per sample from
:mod:`ultrafs.kernels.prox_newton_multi`.

Labels, losses and C enter only through ``weights``, ``H`` and ``g``.
Matrix-vector products are plain loops: a threaded BLAS call per block
update costs more than the product (and far more when another process
holds a core); LAPACK is called once per block and Newton step
(``eigh``) or per model Newton step (``solve``).
"""

import math

import numpy as np
from numba import njit

__all__ = ["eigen_workspace", "l21sq_model_bcd", "l21sq_model_polish",
           "l21sq_model_residual", "eigen_block_step", "keep_eigen", "eigen_offsets",
           "model_kkt", "model_block_norms", "STALL_SWEEPS"]

# Newton iterations on the scalar equation of one block (it converges
# monotonically and quadratically; 100 is never reached in practice).
_MAX_SECULAR_ITER = 100
#: sweeps over which the model's residual must fall at all (else: stalled)
STALL_SWEEPS = 50


@njit(cache=True, nogil=True)
def _block_schur(H, lo, hi, p, beta):
    """The block ``H[lo:hi, lo:hi]`` minus ``e e' / beta`` (``e = H[lo:hi, p]``)."""
    m = hi - lo
    A = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            A[i, j] = H[lo + i, lo + j]
    if beta > 0.0:
        for i in range(m):
            ei = H[lo + i, p] / beta
            for j in range(m):
                A[i, j] -= ei * H[lo + j, p]
    return A


@njit(cache=True, nogil=True)
def _secular_solve(qhat, evals, lam):
    """Return ``uhat = -qhat x / (a x + 1)``, ``a = evals + 1``, with ``x`` the root.

    ``x = ||u|| / lam`` solves ``G(x) = lam`` for the convex, decreasing
    ``G(x) = ||qhat / (a x + 1)||`` (``G(0) = ||qhat|| > lam``); Newton's
    method started left of the root stays left of it and converges
    monotonically.
    """
    m = len(qhat)
    a = np.empty(m)
    amax = 1.0
    nq2 = 0.0
    for i in range(m):
        ev = evals[i] if evals[i] > 0.0 else 0.0
        a[i] = ev + 1.0
        if a[i] > amax:
            amax = a[i]
        nq2 += qhat[i] * qhat[i]
    nq = math.sqrt(nq2)
    # G(x) >= nq / (amax x + 1): a point left of the root
    x = (nq - lam) / (lam * amax)
    for _ in range(_MAX_SECULAR_ITER):
        G2 = 0.0
        dG = 0.0
        for i in range(m):
            r = 1.0 / (a[i] * x + 1.0)
            t = qhat[i] * qhat[i] * r * r
            G2 += t
            dG -= t * a[i] * r
        G = math.sqrt(G2)
        if G <= lam * (1.0 + 1e-15):
            break
        dG /= G
        step = (lam - G) / dG
        x += step
        if step <= 1e-15 * x:
            break
    out = np.empty(m)
    for i in range(m):
        out[i] = -qhat[i] * x / (a[i] * x + 1.0)
    return out


@njit(cache=True, nogil=True)
def keep_eigen(A, vals, vecs, offsets, h, lo):
    """Keep block ``h``'s eigen-decomposition of ``A`` (m x m, symmetric):
    its eigenvalues at ``vals[lo:lo + m]``, its eigenvectors (row-major) at
    ``vecs[offsets[h]:offsets[h + 1]]``."""
    ev, Q = np.linalg.eigh(A)
    for i in range(ev.shape[0]):   # loops, not slice copies (compile time)
        vals[lo + i] = ev[i]
    flat = Q.ravel()
    for i in range(flat.shape[0]):
        vecs[offsets[h] + i] = flat[i]


@njit(cache=True, nogil=True)
def eigen_block_step(vals, vecs, offsets, h, lo, hi, q, lam):
    """The minimiser ``u`` of ``q'u + u'Au/2 + |u|^2/2 + lam |u|`` for block
    ``h`` through the kept eigen-decomposition of ``A`` (:func:`keep_eigen`):
    a scaled solve for ``lam = 0``, the secular equation otherwise."""
    m = hi - lo
    Q = vecs[offsets[h]:offsets[h + 1]].reshape((m, m))
    qhat = np.zeros(m)
    for k in range(m):
        for i in range(m):
            qhat[i] += Q[k, i] * q[k]
    if lam == 0.0:
        uhat = np.empty(m)
        for i in range(m):
            ev = vals[lo + i] if vals[lo + i] > 0.0 else 0.0
            uhat[i] = -qhat[i] / (ev + 1.0)
    else:
        uhat = _secular_solve(qhat, vals[lo:hi], lam)
    u = np.zeros(m)
    for k in range(m):
        for i in range(m):
            u[k] += Q[k, i] * uhat[i]
    return u


@njit(cache=True, nogil=True)
def model_kkt(r, z, norms, block_ptr, p, use_bias):
    """Relative KKT residual of the model at ``z`` (gradient ``r`` of its smooth part).

    The same measure as the solvers' certificate: the largest distance
    from ``-r_h`` to the subdifferential of the penalty (and ``|r_b|``),
    over the largest block norm of ``r``.
    """
    total = 0.0
    for h in range(len(norms)):
        total += norms[h]
    dist = 0.0
    scale = 0.0
    for h in range(len(norms)):
        lo, hi = block_ptr[h], block_ptr[h + 1]
        rn = 0.0
        dn = 0.0
        for j in range(lo, hi):
            rn += r[j] * r[j]
            if norms[h] > 0.0:
                v = r[j] + total * z[j] / norms[h]
                dn += v * v
        rn = math.sqrt(rn)
        if rn > scale:
            scale = rn
        d = math.sqrt(dn) if norms[h] > 0.0 else max(0.0, rn - total)
        if d > dist:
            dist = d
    if use_bias and abs(r[p]) > dist:
        dist = abs(r[p])
    if scale == 0.0:
        return 0.0 if dist == 0.0 else math.inf
    return dist / scale


@njit(cache=True, nogil=True)
def _use_bias(H, p, fit_intercept):
    """Whether the intercept moves: fitted and with curvature."""
    beta = H[p, p]
    return fit_intercept and beta > 1e-300 and math.isfinite(beta)


@njit(cache=True, nogil=True)
def _model_gradient(H, g, coef, bias, z, c, use_bias):
    """``r = g + H d`` with ``d = (z - coef, c - bias)`` (``d_b = 0`` if fixed)."""
    p = len(coef)
    d = np.empty(p + 1)
    for j in range(p):
        d[j] = z[j] - coef[j]
    d[p] = c - bias if use_bias else 0.0
    r = g.copy()
    for k in range(p + 1):  # rows of the symmetric H: contiguous, no BLAS call
        if d[k] != 0.0:
            for i in range(p + 1):
                r[i] += H[k, i] * d[k]
    return r


@njit(cache=True, nogil=True)
def model_block_norms(z, block_ptr):
    t = len(block_ptr) - 1
    norms = np.empty(t)
    for h in range(t):
        acc = 0.0
        for j in range(block_ptr[h], block_ptr[h + 1]):
            acc += z[j] * z[j]
        norms[h] = math.sqrt(acc)
    return norms


@njit(cache=True, nogil=True)
def l21sq_model_residual(H, g, coef, bias, block_ptr, fit_intercept, z, c):
    """Relative KKT residual of the model at ``(z, c)`` (see :func:`l21sq_model_bcd`)."""
    p = len(coef)
    use_bias = _use_bias(H, p, fit_intercept)
    r = _model_gradient(H, g, coef, bias, z, c, use_bias)
    return model_kkt(r, z, model_block_norms(z, block_ptr), block_ptr, p, use_bias)


@njit(cache=True, nogil=True)
def eigen_workspace(block_ptr):
    """Storage for the blocks' eigen-decompositions, filled on demand.

    Returns ``(vectors, values, done)``: pass them to every
    :func:`l21sq_model_bcd` call on the same ``H`` (an ``H`` changes: new
    workspace).
    """
    t = len(block_ptr) - 1
    return (np.empty(eigen_offsets(block_ptr)[t]), np.empty(block_ptr[t]),
            np.zeros(t, dtype=np.bool_))


@njit(cache=True, nogil=True)
def eigen_offsets(block_ptr):
    """Where block ``h``'s eigenvectors start in the workspace's ``vectors``
    (``offsets[h]``; ``offsets[t]``: its size): blocks of ``m * m`` floats."""
    t = len(block_ptr) - 1
    offsets = np.zeros(t + 1, dtype=np.int64)
    for h in range(t):
        m = block_ptr[h + 1] - block_ptr[h]
        offsets[h + 1] = offsets[h] + m * m
    return offsets


@njit(cache=True, nogil=True)
def l21sq_model_bcd(H, g, coef, bias, block_ptr, fit_intercept, tol, max_sweeps, z, c,
                    vecs, vals, have):
    """Minimise the proximal Newton model by block coordinate descent.

    Parameters
    ----------
    H : ndarray of float64, shape (p + 1, p + 1)
        Hessian of the smooth part over ``(w, b)`` (index ``p``: ``b``).
    g : ndarray of float64, shape (p + 1,)
        Its gradient at ``(coef, bias)``.
    coef : ndarray of float64, shape (p,)
    bias : float
    block_ptr : ndarray of int64, shape (t + 1,)
    fit_intercept : bool
        Whether ``c`` moves (it stays at ``bias`` otherwise).
    tol : float
        Stop when the model's relative KKT residual is at most ``tol``, when
        a sweep leaves every coordinate unchanged, or when 50 sweeps reduce
        the residual by less than 0.1% (stalled in rounding).
    max_sweeps : int
    z : ndarray of float64, shape (p,)
        The starting point, overwritten with the point reached.
    c : float
        The intercept's starting point.
    vecs, vals, have
        :func:`eigen_workspace` of ``block_ptr`` for this ``H``.

    Returns
    -------
    c : float
    sweeps : int
    residual : float
        The model's relative KKT residual at the returned point.
    """
    p = len(coef)
    t = len(block_ptr) - 1
    use_bias = _use_bias(H, p, fit_intercept)
    beta = H[p, p] if use_bias else 0.0
    if not use_bias:
        c = bias
    r = _model_gradient(H, g, coef, bias, z, c, use_bias)
    norms = model_block_norms(z, block_ptr)
    offsets = eigen_offsets(block_ptr)
    residual = model_kkt(r, z, norms, block_ptr, p, use_bias)
    checkpoint = residual
    sweeps = 0
    while residual > tol and sweeps < max_sweeps:
        sweeps += 1
        moved = False
        total = 0.0
        for h in range(t):
            total += norms[h]
        for h in range(t):
            lo, hi = block_ptr[h], block_ptr[h + 1]
            m = hi - lo
            if m == 0:
                continue
            lam = total - norms[h]
            if lam < 0.0:
                lam = 0.0
            # q = linear term of the block problem in u = z_h (c eliminated)
            rb = r[p] / beta if use_bias else 0.0
            ez = 0.0
            if use_bias:
                for k in range(m):
                    ez += H[lo + k, p] * z[lo + k]
                ez /= beta
            q = np.empty(m)
            nq2 = 0.0
            for i in range(m):
                acc = r[lo + i]
                row = lo + i
                for k in range(m):
                    acc -= H[row, lo + k] * z[lo + k]
                if use_bias:
                    acc += H[row, p] * (ez - rb)
                q[i] = acc
                nq2 += acc * acc
            nq = math.sqrt(nq2)
            if nq <= lam:
                u = np.zeros(m)
            elif lam == 0.0 and not have[h]:
                A = _block_schur(H, lo, hi, p, beta)
                for i in range(m):
                    A[i, i] += 1.0
                u = -np.linalg.solve(A, q)
            else:
                if not have[h]:
                    A = _block_schur(H, lo, hi, p, beta)
                    keep_eigen(A, vals, vecs, offsets, h, lo)
                    have[h] = True
                u = eigen_block_step(vals, vecs, offsets, h, lo, hi, q, lam)
            for k in range(m):
                # a coordinate without curvature (an empty column) has a zero
                # row in H and in g: the block problem decouples it and its
                # minimiser is exactly 0, which the eigenvectors only round to
                if H[lo + k, lo + k] == 0.0:
                    u[k] = 0.0
            # the intercept's exact minimiser given the new block
            dc = 0.0
            if use_bias:
                acc = r[p]
                for k in range(m):
                    acc += H[lo + k, p] * (u[k] - z[lo + k])
                dc = -acc / beta
            nu = 0.0
            for k in range(m):
                du = u[k] - z[lo + k]
                if du != 0.0:
                    moved = True
                    row = lo + k
                    for i in range(p + 1):
                        r[i] += H[row, i] * du
                z[lo + k] = u[k]
                nu += u[k] * u[k]
            if dc != 0.0:
                for i in range(p + 1):
                    r[i] += H[p, i] * dc
                moved = moved or c + dc != c
                c += dc
            nu = math.sqrt(nu)
            total += nu - norms[h]
            norms[h] = nu
        if use_bias:
            # the intercept alone (it moves with every block; this also covers
            # p = 0 and blocks of no column)
            dc = -r[p] / beta
            if c + dc != c:
                moved = True
                for i in range(p + 1):
                    r[i] += H[p, i] * dc
                c += dc
        residual = model_kkt(r, z, norms, block_ptr, p, use_bias)
        if not moved:  # a fixed point in floating point: nothing left to gain
            break
        if sweeps % STALL_SWEEPS == 0:
            # stalled at the resolution of float64 (e.g. a column 1e4 times
            # larger than the others with a large C puts 1e16 next to 1 in
            # H): the point reached is still a descent direction.  Slow but
            # steady progress (collinear columns in different blocks, as
            # one-hot groups split by FGM) goes on.
            if residual > 0.999 * checkpoint:
                break
            checkpoint = residual
    return c, sweeps, residual


@njit(cache=True, nogil=True)
def l21sq_model_polish(H, g, coef, bias, block_ptr, fit_intercept, z, c):
    """One Newton step on the model restricted to its nonzero blocks.

    Where every block of ``z`` is nonzero or fixed at zero the model is
    smooth: with ``S = sum_h ||z_h||`` and ``n_h = z_h / ||z_h||`` its
    gradient is ``r_h + S n_h`` (and ``r_b``) and its Hessian ``H + n n' +
    S blockdiag((I - n_h n_h') / ||z_h||)``.  A Newton step there converges
    where coordinate descent crawls (collinear columns in different blocks,
    such as one-hot groups FGM split over its batches, with the intercept).
    The step is halved until the model's relative KKT residual falls; ``z``
    is overwritten only then.

    Returns
    -------
    c : float
    residual : float
        The residual at the returned point.
    """
    p = len(coef)
    t = len(block_ptr) - 1
    use_bias = _use_bias(H, p, fit_intercept)
    r = _model_gradient(H, g, coef, bias, z, c, use_bias)
    norms = model_block_norms(z, block_ptr)
    start = model_kkt(r, z, norms, block_ptr, p, use_bias)
    total = 0.0
    m = 0
    for h in range(t):
        total += norms[h]
        if norms[h] > 0.0:
            m += block_ptr[h + 1] - block_ptr[h]
    if m == 0:
        return c, start
    idx = np.empty(m, dtype=np.int64)
    blk = np.empty(m, dtype=np.int64)
    a = 0
    for h in range(t):
        if norms[h] > 0.0:
            for j in range(block_ptr[h], block_ptr[h + 1]):
                idx[a] = j
                blk[a] = h
                a += 1
    size = m + 1 if use_bias else m
    K = np.empty((size, size))
    rhs = np.empty(size)
    unit = np.empty(m)
    for a in range(m):
        unit[a] = z[idx[a]] / norms[blk[a]]
    biggest = 0.0
    for a in range(m):
        for b in range(m):
            v = H[idx[a], idx[b]] + unit[a] * unit[b]
            if blk[a] == blk[b]:
                v += total / norms[blk[a]] * ((1.0 if a == b else 0.0) - unit[a] * unit[b])
            K[a, b] = v
        if use_bias:
            K[a, m] = H[idx[a], p]
            K[m, a] = H[idx[a], p]
        rhs[a] = -(r[idx[a]] + total * unit[a])
        if K[a, a] > biggest:
            biggest = K[a, a]
    if use_bias:
        K[m, m] = H[p, p]
        rhs[m] = -r[p]
        if K[m, m] > biggest:
            biggest = K[m, m]
    # positive semi-definite: a relative ridge keeps it solvable
    for a in range(size):
        K[a, a] += 1e-13 * biggest
    step = np.linalg.solve(K, rhs)
    trial = z.copy()
    scale = 1.0
    for _ in range(20):
        for a in range(m):
            trial[idx[a]] = z[idx[a]] + scale * step[a]
        ct = c + scale * step[m] if use_bias else c
        residual = l21sq_model_residual(H, g, coef, bias, block_ptr, fit_intercept,
                                        trial, ct)
        if residual < start:
            for a in range(m):
                z[idx[a]] = trial[idx[a]]
            return ct, residual
        scale *= 0.5
    return c, start
