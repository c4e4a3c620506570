"""Additive-kernel feature expansions generated on the fly (FGM §6.1, §8.6).

FGM selects the kernels of an additive kernel as groups: original column
j (a column ``x_j`` of a stored CSC block) stands for a group of G
generated columns ``phi_1(x_ij) .. phi_G(x_ij)`` that are never written
anywhere.  The worst-case analysis scores the group by

    s_j = sum_l (sum_i a_i phi_l(x_ij))**2                    (eq. 27)

with ``a = alpha * y`` (n,), or with K classes and per-class dual weights
A (n, K): ``s_j = sum_l sum_c (sum_i A_ic phi_l(x_ij))**2``.

Maps (every one has ``phi(0) = 0``: zeros stay zeros, so the generated
columns of column j have nonzeros only on the nonzero rows of x_j):

``hik``
    Histogram intersection (Wu 2012), ``q = HIK_LEVELS = 100`` levels,
    G = q.  Per original column a scale ``s_j > 0`` (the column's maximum
    on the training data).  Level ``v = hik_level(x, s_j)``:
    ``ceil((x / s_j) * q)`` clipped to ``[1, q]`` for ``x > 0`` (exactly:
    the smallest v with ``x <= fl(v s_j) / q``), 0 for ``x == 0``; unary
    code ``phi_l(x) = 1/sqrt(q)`` for ``l <= v``, 0 above.  Then ``phi(x)'phi(z) = min(v_x, v_z) / q`` exactly: the HIK of
    the quantised values.  The ceiling keeps every stored nonzero nonzero
    (``v >= 1`` for any ``x > 0``) and makes the quantised value
    ``v s_j / q`` the smallest level at or above x, so the quantised kernel
    over-estimates ``min(x, z)`` by less than ``s_j / q``.  This is the
    *unit* map, the kernel of ``x / s_j``; the raw-scale HIK (the feature
    space's default) is group j times ``sqrt(s_j)``, ``k(x, z) ~ min(x,
    z)``: the kernels that score or measure groups take that factor
    squared as ``gain`` (``score_block_topk_hik_scaled``,
    :func:`row_max_norms_hik`), and the space multiplies the expanded
    values.
``chi2``, ``intersection``, ``js``
    Vedaldi & Zisserman (CVPR 2010, TPAMI 2012) maps of the additive
    homogeneous kernels chi2 ``2xz/(x+z)``, intersection ``min(x, z)`` and
    Jensen-Shannon ``x/2 log2((x+z)/x) + z/2 log2((x+z)/z)``; order
    ``n = VZ_ORDER = 5``, G = 2n + 1 = 11 (uniform window: the spectrum is
    sampled, not smoothed)::

        Psi_0(x)    = sqrt(x L kappa(0))
        Psi_2k-1(x) = sqrt(2 x L kappa(kL)) cos(kL log x)     k = 1..n
        Psi_2k(x)   = sqrt(2 x L kappa(kL)) sin(kL log x)

    with the spectra ``kappa(lam)``: chi2 ``sech(pi lam)``, intersection
    ``2 / (pi (1 + 4 lam**2))``, JS ``2 / (log 4 cosh(pi lam) (1 + 4
    lam**2))``, and the sampling step ``L = VZ_STEPS[name]``.  These maps
    have no per-column scale (the kernels are homogeneous); the kernels
    take ``scale`` anyway, and ignore it, so every map has one signature.
    Generated column l (1-based) is ``Psi_{l-1}``.

Generated column l of input column j sits at position ``j * G + (l - 1)``
of an expansion.  Values must be non-negative (the caller refuses negative
data); a stored value that is not ``> 0`` (an explicit 0.0) maps to
``phi = 0``.

Kernels (one per map and operation, dispatched by name through the dicts
:data:`PHI`, :data:`EXPAND_BLOCK`, :data:`EXPAND_COLUMNS` here and
``SCORE_BLOCK_TOPK`` and ``SCORE_BLOCK_TOPK_MULTI`` of
:mod:`ultrafs.kernels.additive_topk`; no kernel branches on a map code):

* ``expand_block_<map>(indptr, indices, data, scale)``: the CSC of all G
  generated columns of every column of a block;
* ``expand_columns_<map>(indptr, indices, data, scale, source, level)``:
  a few generated columns only (prediction, the subproblem's cache);
* ``score_block_topk_<map>`` / ``score_block_topk_multi_<map>``
  (:mod:`ultrafs.kernels.additive_topk`): the fused
  worst-case analysis of a block with the bounded top-k heap of
  ``scoring.py`` (same ranking, exclusion and positive-score rules).

All computation is in float64 (accumulation in row order); expansions cast
to ``data``'s dtype at the end and store only values nonzero after that
cast.  Input blocks are canonical CSC: rows increasing within a column, no
duplicates; outputs then have sorted rows too.  Everything is serial and
deterministic (these kernels run inside Dask tasks).
"""

import math

import numpy as np
from numba import njit


__all__ = [
    "HIK_LEVELS",
    "row_max_norms_hik",
    "VZ_ORDER",
    "VZ_STEPS",
    "MAPS",
    "N_GENERATED",
    "CHI2_COEF",
    "INTERSECTION_COEF",
    "JS_COEF",
    "CHI2_STEP",
    "INTERSECTION_STEP",
    "JS_STEP",
    "vz_fill",
    "vz_spectrum",
    "vz_coefficients",
    "hik_level",
    "phi_hik",
    "phi_chi2",
    "phi_intersection",
    "phi_js",
    "expand_block_hik",
    "expand_block_chi2",
    "expand_block_intersection",
    "expand_block_js",
    "expand_columns_hik",
    "expand_columns_chi2",
    "expand_columns_intersection",
    "expand_columns_js",
    "expand_columns_vz",
    "expand_block_vz",
    "row_max_norms_vz",
    "PHI",
    "EXPAND_BLOCK",
    "EXPAND_COLUMNS",
]

#: HIK quantisation levels q (the paper's 100 generated columns per feature)
HIK_LEVELS = 100
#: 1/sqrt(q): the value of every nonzero HIK generated entry
_HIK_VALUE = 1.0 / math.sqrt(HIK_LEVELS)

#: order n of the Vedaldi-Zisserman maps: G = 2n + 1 generated columns
VZ_ORDER = 5
#: sampling step L of each VZ map: the minimiser (rounded, on the safe
#: side of the optimum's kink) of the largest relative error of the
#: approximated kernel over x/z in [1e-3, 1e3] with n = 5; see
#: docs/ADDITIVE_KERNELS.md and tools/additive_map_error.py.  Baked into
#: the compiled kernels: changing a value changes this file, which
#: invalidates numba's cache of these kernels.
VZ_STEPS = {"chi2": 0.315, "intersection": 0.34, "js": 0.25}

#: the maps, in a fixed order
MAPS = ("hik", "chi2", "intersection", "js")
#: generated columns per original column
N_GENERATED = {"hik": HIK_LEVELS, "chi2": 2 * VZ_ORDER + 1,
               "intersection": 2 * VZ_ORDER + 1, "js": 2 * VZ_ORDER + 1}


def vz_spectrum(name, lam):
    """The spectrum ``kappa(lam)`` of a homogeneous kernel (float or array).

    ``k(x, z) = sqrt(xz) * integral kappa(lam) exp(-i lam log(x/z)) dlam``;
    chi2 ``sech(pi lam)``, intersection ``2/(pi (1 + 4 lam^2))``,
    JS ``2/(log 4 cosh(pi lam) (1 + 4 lam^2))`` (Vedaldi & Zisserman 2012,
    Table 1; vlfeat ``homkermap.c``).
    """
    lam = np.asarray(lam, dtype=np.float64)
    if name == "intersection":
        return 2.0 / (np.pi * (1.0 + 4.0 * lam * lam))
    if name not in ("chi2", "js"):
        raise ValueError(f"unknown homogeneous kernel {name!r}")
    # sech(pi lam) = 2 e^(-pi |lam|) / (1 + e^(-2 pi |lam|)): no overflow
    e = np.exp(-np.pi * np.abs(lam))
    sech = 2.0 * e / (1.0 + e * e)
    if name == "chi2":
        return sech
    return 2.0 * sech / (np.log(4.0) * (1.0 + 4.0 * lam * lam))


def vz_coefficients(name, order=VZ_ORDER, step=None):
    """The amplitudes of a VZ map: ``Psi = coef * sqrt(x) * (1, cos, sin, ...)``.

    Returns
    -------
    coef : float64 array, shape (order + 1,)
        ``coef[0] = sqrt(L kappa(0))``, ``coef[k] = sqrt(2 L kappa(kL))``.
    """
    step = VZ_STEPS[name] if step is None else float(step)
    lam = step * np.arange(order + 1, dtype=np.float64)
    coef = np.sqrt(2.0 * step * vz_spectrum(name, lam))
    coef[0] = math.sqrt(step * float(vz_spectrum(name, 0.0)))
    return coef


# compile-time constants of the kernels (float tuples are frozen into the
# compiled code, so the kernels stay cacheable)
CHI2_COEF = tuple(float(c) for c in vz_coefficients("chi2"))
INTERSECTION_COEF = tuple(float(c) for c in vz_coefficients("intersection"))
JS_COEF = tuple(float(c) for c in vz_coefficients("js"))
CHI2_STEP = VZ_STEPS["chi2"]
INTERSECTION_STEP = VZ_STEPS["intersection"]
JS_STEP = VZ_STEPS["js"]


# --------------------------------------------------------------------------
# scalar maps
# --------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def hik_level(x, scale, q=HIK_LEVELS):
    """The HIK level of a value: 0 for ``x <= 0``, else ``ceil(x/scale*q)`` in ``[1, q]``.

    Exactly: the smallest ``v`` in ``1 .. q`` with ``x <= fl(v * scale) / q``
    (the level boundaries as floats: ``0.07`` with scale 1 is level 7,
    although ``0.07 / 1 * 100`` rounds to ``7.000000000000001``), and q for
    any ``x >= scale``.

    Parameters
    ----------
    x : float
        A stored value (non-negative; anything not ``> 0`` gives 0).
    scale : float
        The column's scale ``s_j`` (its training maximum).  A value above
        it gets level q; with ``scale <= 0`` every ``x > 0`` gets level q.

    Returns
    -------
    level : int
    """
    if not x > 0.0:
        return 0
    if not scale > 0.0 or x >= scale:
        return q
    t = (x / scale) * q
    v = int(math.ceil(t)) if t < q else q
    if v < 1:
        v = 1                          # t may underflow to 0 for a tiny x
    # the rounding of t can move a value on (or next to) a level boundary
    # by one level: settle on the smallest v with x <= fl(v * scale) / q
    while v > 1 and x <= ((v - 1) * scale) / q:
        v -= 1
    while v < q and x > (v * scale) / q:
        v += 1
    return v


@njit(cache=True, nogil=True)
def phi_hik(x, scale, out):
    """Write the q HIK generated values of ``x`` into ``out`` (float64, (q,))."""
    q = out.shape[0]
    v = hik_level(x, scale, q)
    value = 1.0 / math.sqrt(q)
    for l in range(q):
        out[l] = value if l < v else 0.0


@njit(cache=True, nogil=True, inline="always")
def vz_fill(x, coef, step, out):
    """Write ``Psi_0(x) .. Psi_2n(x)`` into ``out`` (float64, (2n+1,)).

    The angles kL log x come from cos/sin of L log x by the angle-addition
    recurrence (one log, one cos, one sin and one sqrt per value).
    """
    if not x > 0.0:
        for l in range(out.shape[0]):
            out[l] = 0.0
        return
    r = math.sqrt(x)
    theta = step * math.log(x)
    c1 = math.cos(theta)
    s1 = math.sin(theta)
    out[0] = coef[0] * r
    ck = c1
    sk = s1
    for k in range(1, len(coef)):
        amp = coef[k] * r
        out[2 * k - 1] = amp * ck
        out[2 * k] = amp * sk
        ck, sk = ck * c1 - sk * s1, sk * c1 + ck * s1


@njit(cache=True, nogil=True)
def phi_chi2(x, scale, out):
    """Write the 11 chi2 map values of ``x`` into ``out`` (``scale`` unused)."""
    vz_fill(x, CHI2_COEF, CHI2_STEP, out)


@njit(cache=True, nogil=True)
def phi_intersection(x, scale, out):
    """Write the 11 intersection map values of ``x`` into ``out`` (``scale`` unused)."""
    vz_fill(x, INTERSECTION_COEF, INTERSECTION_STEP, out)


@njit(cache=True, nogil=True)
def phi_js(x, scale, out):
    """Write the 11 Jensen-Shannon map values of ``x`` into ``out`` (``scale`` unused)."""
    vz_fill(x, JS_COEF, JS_STEP, out)


# --------------------------------------------------------------------------
# expansion of a block
# --------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _hik_expand_block(indptr, indices, data, scale, q):
    n_columns = indptr.shape[0] - 1
    out_indptr = np.zeros(n_columns * q + 1, dtype=np.int64)
    hist = np.zeros(q + 1, dtype=np.int64)
    for j in range(n_columns):
        hist[:] = 0
        for p in range(indptr[j], indptr[j + 1]):
            hist[hik_level(np.float64(data[p]), scale[j], q)] += 1
        above = 0                      # entries of level >= l
        for l in range(q, 0, -1):
            above += hist[l]
            out_indptr[j * q + l] = above        # count of column j*q + l-1
    for c in range(n_columns * q):
        out_indptr[c + 1] += out_indptr[c]
    nnz = out_indptr[n_columns * q]
    out_indices = np.empty(nnz, dtype=indices.dtype)
    out_data = np.empty(nnz, dtype=data.dtype)
    value = np.empty(1, dtype=data.dtype)
    value[0] = 1.0 / math.sqrt(q)
    cursor = np.empty(q, dtype=np.int64)
    for j in range(n_columns):
        for l in range(q):
            cursor[l] = out_indptr[j * q + l]
        for p in range(indptr[j], indptr[j + 1]):
            v = hik_level(np.float64(data[p]), scale[j], q)
            row = indices[p]
            for l in range(v):
                pos = cursor[l]
                out_indices[pos] = row
                out_data[pos] = value[0]
                cursor[l] = pos + 1
    return out_indptr, out_indices, out_data


@njit(cache=True, nogil=True)
def _vz_expand_block(indptr, indices, data, coef, step):
    g = 2 * len(coef) - 1
    n_columns = indptr.shape[0] - 1
    out_indptr = np.zeros(n_columns * g + 1, dtype=np.int64)
    values = np.empty(g, dtype=np.float64)
    cast = np.empty(g, dtype=data.dtype)
    for j in range(n_columns):
        for p in range(indptr[j], indptr[j + 1]):
            vz_fill(np.float64(data[p]), coef, step, values)
            for l in range(g):
                cast[l] = values[l]
                if cast[l] != 0:
                    out_indptr[j * g + l + 1] += 1
    for c in range(n_columns * g):
        out_indptr[c + 1] += out_indptr[c]
    nnz = out_indptr[n_columns * g]
    out_indices = np.empty(nnz, dtype=indices.dtype)
    out_data = np.empty(nnz, dtype=data.dtype)
    cursor = np.empty(g, dtype=np.int64)
    for j in range(n_columns):
        for l in range(g):
            cursor[l] = out_indptr[j * g + l]
        for p in range(indptr[j], indptr[j + 1]):
            vz_fill(np.float64(data[p]), coef, step, values)
            row = indices[p]
            for l in range(g):
                cast[l] = values[l]
                if cast[l] != 0:
                    pos = cursor[l]
                    out_indices[pos] = row
                    out_data[pos] = cast[l]
                    cursor[l] = pos + 1
    return out_indptr, out_indices, out_data


@njit(cache=True, nogil=True)
def expand_block_hik(indptr, indices, data, scale, q=HIK_LEVELS):
    """The HIK expansion of every column of a CSC block.

    Parameters
    ----------
    indptr : int64 array, shape (n_columns + 1,)
    indices : int32 array, shape (nnz,)
        Rows, increasing within each column.
    data : float32 or float64 array, shape (nnz,)
        Non-negative values.
    scale : float64 array, shape (n_columns,)
        Per-column scale ``s_j`` (the column's training maximum).

    Returns
    -------
    out_indptr : int64 array, shape (n_columns * q + 1,)
    out_indices : array of ``indices.dtype``, shape (out_nnz,)
    out_data : array of ``data.dtype``, shape (out_nnz,)
        CSC of ``n_columns * q`` columns; column ``j * q + (l - 1)`` holds
        the rows of column j whose level (:func:`hik_level`) is at least
        l, each with value ``1/sqrt(q)``, rows increasing.
        ``out_nnz`` is the sum of the levels.
    """
    return _hik_expand_block(indptr, indices, data, scale, q)


@njit(cache=True, nogil=True)
def expand_block_chi2(indptr, indices, data, scale):
    """The chi2 map of every column of a CSC block.

    Parameters
    ----------
    indptr : int64 array, shape (n_columns + 1,)
    indices : int32 array, shape (nnz,)
        Rows, increasing within each column.
    data : float32 or float64 array, shape (nnz,)
        Non-negative values.
    scale : float64 array, shape (n_columns,)
        Unused (homogeneous map); kept for one signature across maps.

    Returns
    -------
    out_indptr : int64 array, shape (n_columns * 11 + 1,)
    out_indices : array of ``indices.dtype``, shape (out_nnz,)
    out_data : array of ``data.dtype``, shape (out_nnz,)
        CSC of ``n_columns * 11`` columns; column ``j * 11 + (l - 1)``
        holds ``Psi_{l-1}(x_ij)`` (computed in float64, cast to
        ``data.dtype``) on the rows of column j where the cast value is
        nonzero, rows increasing.
    """
    return _vz_expand_block(indptr, indices, data, CHI2_COEF, CHI2_STEP)


@njit(cache=True, nogil=True)
def expand_block_intersection(indptr, indices, data, scale):
    """The intersection map of a CSC block; see :func:`expand_block_chi2`."""
    return _vz_expand_block(indptr, indices, data, INTERSECTION_COEF, INTERSECTION_STEP)


@njit(cache=True, nogil=True)
def expand_block_js(indptr, indices, data, scale):
    """The Jensen-Shannon map of a CSC block; see :func:`expand_block_chi2`."""
    return _vz_expand_block(indptr, indices, data, JS_COEF, JS_STEP)


# --------------------------------------------------------------------------
# expansion of selected generated columns
# --------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _check_requests(n_columns, g, source, level):
    if source.shape[0] != level.shape[0]:
        raise ValueError("source and level must have the same length")
    for o in range(source.shape[0]):
        if source[o] < 0 or source[o] >= n_columns:
            raise ValueError("source column out of range")
        if level[o] < 1 or level[o] > g:
            raise ValueError("generated column number l out of range 1..G")


@njit(cache=True, nogil=True)
def _hik_expand_columns(indptr, indices, data, scale, source, level, q):
    n_out = source.shape[0]
    _check_requests(indptr.shape[0] - 1, q, source, level)
    out_indptr = np.zeros(n_out + 1, dtype=np.int64)
    for o in range(n_out):
        j = source[o]
        count = 0
        for p in range(indptr[j], indptr[j + 1]):
            if hik_level(np.float64(data[p]), scale[j], q) >= level[o]:
                count += 1
        out_indptr[o + 1] = out_indptr[o] + count
    nnz = out_indptr[n_out]
    out_indices = np.empty(nnz, dtype=indices.dtype)
    out_data = np.empty(nnz, dtype=data.dtype)
    value = np.empty(1, dtype=data.dtype)
    value[0] = 1.0 / math.sqrt(q)
    for o in range(n_out):
        j = source[o]
        pos = out_indptr[o]
        for p in range(indptr[j], indptr[j + 1]):
            if hik_level(np.float64(data[p]), scale[j], q) >= level[o]:
                out_indices[pos] = indices[p]
                out_data[pos] = value[0]
                pos += 1
    return out_indptr, out_indices, out_data


@njit(cache=True, nogil=True)
def _vz_expand_columns(indptr, indices, data, source, level, coef, step):
    g = 2 * len(coef) - 1
    n_out = source.shape[0]
    _check_requests(indptr.shape[0] - 1, g, source, level)
    out_indptr = np.zeros(n_out + 1, dtype=np.int64)
    values = np.empty(g, dtype=np.float64)
    cast = np.empty(1, dtype=data.dtype)
    for o in range(n_out):
        j = source[o]
        l = level[o] - 1
        count = 0
        for p in range(indptr[j], indptr[j + 1]):
            vz_fill(np.float64(data[p]), coef, step, values)
            cast[0] = values[l]
            if cast[0] != 0:
                count += 1
        out_indptr[o + 1] = out_indptr[o] + count
    nnz = out_indptr[n_out]
    out_indices = np.empty(nnz, dtype=indices.dtype)
    out_data = np.empty(nnz, dtype=data.dtype)
    for o in range(n_out):
        j = source[o]
        l = level[o] - 1
        pos = out_indptr[o]
        for p in range(indptr[j], indptr[j + 1]):
            vz_fill(np.float64(data[p]), coef, step, values)
            cast[0] = values[l]
            if cast[0] != 0:
                out_indices[pos] = indices[p]
                out_data[pos] = cast[0]
                pos += 1
    return out_indptr, out_indices, out_data


@njit(cache=True, nogil=True)
def expand_columns_hik(indptr, indices, data, scale, source, level, q=HIK_LEVELS):
    """Selected HIK generated columns of a block of source columns.

    Parameters
    ----------
    indptr, indices, data : CSC arrays of the source block
        (int64 (n_columns + 1,), int32 (nnz,), float32/float64 (nnz,)).
    scale : float64 array, shape (n_columns,)
        Per-column scale ``s_j``.
    source : int array, shape (n_out,)
        Source column (0 .. n_columns - 1, position in the block) of each
        output column; repeats allowed, any order.
    level : int array, shape (n_out,)
        Generated column number l (1 .. q) of each output column.

    Returns
    -------
    out_indptr : int64 array, shape (n_out + 1,)
    out_indices : array of ``indices.dtype``, shape (out_nnz,)
    out_data : array of ``data.dtype``, shape (out_nnz,)
        Output column o equals column ``source[o] * q + level[o] - 1`` of
        :func:`expand_block_hik` of the same block, bit for bit.

    Raises
    ------
    ValueError
        ``source`` and ``level`` of different lengths, or out of range.
    """
    return _hik_expand_columns(indptr, indices, data, scale, source, level, q)


@njit(cache=True, nogil=True)
def expand_columns_chi2(indptr, indices, data, scale, source, level):
    """Selected chi2 generated columns of a block of source columns.

    Parameters
    ----------
    indptr, indices, data : CSC arrays of the source block
    scale : float64 array, shape (n_columns,)
        Unused (homogeneous map).
    source : int array, shape (n_out,)
        Source column of each output column.
    level : int array, shape (n_out,)
        Generated column number l (1 .. 11): ``Psi_{l-1}``.

    Returns
    -------
    out_indptr, out_indices, out_data : CSC of n_out columns
        Output column o equals column ``source[o] * 11 + level[o] - 1`` of
        :func:`expand_block_chi2` of the same block, bit for bit.

    Raises
    ------
    ValueError
        ``source`` and ``level`` of different lengths, or out of range.
    """
    return _vz_expand_columns(indptr, indices, data, source, level, CHI2_COEF, CHI2_STEP)


@njit(cache=True, nogil=True)
def expand_columns_intersection(indptr, indices, data, scale, source, level):
    """Selected intersection generated columns; see :func:`expand_columns_chi2`."""
    return _vz_expand_columns(indptr, indices, data, source, level, INTERSECTION_COEF,
                              INTERSECTION_STEP)


@njit(cache=True, nogil=True)
def expand_columns_js(indptr, indices, data, scale, source, level):
    """Selected Jensen-Shannon generated columns; see :func:`expand_columns_chi2`."""
    return _vz_expand_columns(indptr, indices, data, source, level, JS_COEF, JS_STEP)


@njit(cache=True, nogil=True)
def row_max_norms_hik(indptr, indices, data, scale, gain, out, q=HIK_LEVELS):
    """``out[i] = max(out[i], ||phi(x_ij)||**2)`` over a CSC block's columns j:
    the squared norm of a value's group of generated columns, ``v / q``
    (``v = hik_level(x_ij, scale[j])``; 1 at the column's scale).  O(nnz)
    time, no expansion.

    It is the kernel's diagonal ``k(x, x)``: what ``x**2`` is to a linear
    column, so that ``C="scale"`` (``DEFAULT_C_SCALE / mean_i max``) gives
    a group the C a linear column of the same size gets.  The largest
    single generated value (``1/q`` for HIK) would make C q times larger.

    Parameters
    ----------
    indptr : int64 array, shape (n_columns + 1,)
    indices : int32 array, shape (nnz,)
    data : float32 or float64 array, shape (nnz,)
    scale : float64 array, shape (n_columns,)
        Per-column scale ``s_j``.
    gain : float64 array, shape (n_columns,)
        The squared factor of each group: ones for the unit map, ``scale``
        for the raw-scale map (``k(x, x) = level s_j / q ~ x``).
    out : float64 array, shape (n_rows,), updated in place
    """
    for j in range(indptr.shape[0] - 1):
        for p in range(indptr[j], indptr[j + 1]):
            norm = hik_level(np.float64(data[p]), scale[j], q) / q * gain[j]
            i = indices[p]
            if norm > out[i]:
                out[i] = norm


@njit(cache=True, nogil=True)
def _vz_row_max_norms(indices, data, out, coef):
    total = coef[0] * coef[0]
    for k in range(1, len(coef)):
        total += coef[k] * coef[k]          # cos**2 + sin**2 = 1
    for p in range(indices.shape[0]):
        x = np.float64(data[p])
        if x > 0.0:
            norm = total * x
            i = indices[p]
            if norm > out[i]:
                out[i] = norm


# The Vedaldi-Zisserman maps of any order n and period L: the same kernels
# with the amplitudes ``coef = vz_coefficients(name, n, L)`` (float64,
# (n + 1,)) and the step L as arguments (the per-map kernels above freeze
# the defaults).  G = 2n + 1.


@njit(cache=True, nogil=True)
def expand_columns_vz(indptr, indices, data, source, level, coef, step):
    """:func:`expand_columns_chi2` for the map of amplitudes ``coef`` and step."""
    return _vz_expand_columns(indptr, indices, data, source, level, coef, step)


@njit(cache=True, nogil=True)
def expand_block_vz(indptr, indices, data, coef, step):
    """:func:`expand_block_chi2` for the map of amplitudes ``coef`` and step."""
    return _vz_expand_block(indptr, indices, data, coef, step)


@njit(cache=True, nogil=True)
def row_max_norms_vz(indices, data, out, coef):
    """``out[i] = max(out[i], ||Psi(x_ij)||**2)`` over a block's stored values
    of the map of amplitudes ``coef``: ``x (coef_0**2 + sum_k coef_k**2)``
    (``cos**2 + sin**2 = 1``), the approximated ``k(x, x)`` (``x`` for the
    exact chi2, intersection and JS kernels); 0 for ``x <= 0``.  As
    :func:`row_max_norms_hik`, O(nnz), no expansion.

    Parameters
    ----------
    indices : int32 array, shape (nnz,)
    data : float32 or float64 array, shape (nnz,)
    out : float64 array, shape (n_rows,), updated in place
    coef : float64 array, shape (n + 1,)
        :func:`vz_coefficients`.
    """
    _vz_row_max_norms(indices, data, out, coef)


#: ``phi_<map>(x, scale, out)`` by map name
PHI = {"hik": phi_hik, "chi2": phi_chi2, "intersection": phi_intersection,
       "js": phi_js}
#: ``expand_block_<map>(indptr, indices, data, scale)`` by map name
EXPAND_BLOCK = {"hik": expand_block_hik, "chi2": expand_block_chi2,
                "intersection": expand_block_intersection, "js": expand_block_js}
#: ``expand_columns_<map>(indptr, indices, data, scale, source, level)`` by map name
EXPAND_COLUMNS = {"hik": expand_columns_hik, "chi2": expand_columns_chi2,
                  "intersection": expand_columns_intersection,
                  "js": expand_columns_js}
