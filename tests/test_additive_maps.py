"""Additive-kernel map kernels against dense NumPy references."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import quad

from ultrafs.kernels import additive_maps as am
from ultrafs.kernels.additive_maps import (EXPAND_BLOCK, EXPAND_COLUMNS, HIK_LEVELS,
                                           MAPS, N_GENERATED, PHI, VZ_ORDER, VZ_STEPS,
                                           hik_level, vz_coefficients, vz_spectrum)
from ultrafs.kernels.additive_topk import SCORE_BLOCK_TOPK, SCORE_BLOCK_TOPK_MULTI

VZ_MAPS = ("chi2", "intersection", "js")
NO_KEYS = np.zeros(0, dtype=np.int64)

# the largest relative error of Psi(x)'Psi(z) over the grid of test_vz_* as
# measured by tools/additive_map_error.py (398 values in [1e-3, 1]),
# rounded up; docs/ADDITIVE_KERNELS.md quotes the measurements
VZ_MAX_REL_ERROR = {"chi2": 0.026, "intersection": 0.30, "js": 0.012}
VZ_MAX_ABS_ERROR = {"chi2": 0.0055, "intersection": 0.17, "js": 0.002}


# ---------------------------------------------------------------- references

def ref_level(x, s, q=HIK_LEVELS):
    """The smallest v in 1..q with x <= fl(v s) / q (q above s), 0 for x <= 0."""
    if not x > 0:
        return 0
    bounds = (np.arange(1, q + 1) * s) / q
    return int(min(np.searchsorted(bounds, x, side="left") + 1, q))


def ref_phi(name, x, s):
    """The generated values of one value, from the formulas (float64, (G,))."""
    g = N_GENERATED[name]
    out = np.zeros(g)
    if not x > 0:
        return out
    if name == "hik":
        out[:ref_level(x, s)] = 1.0 / math.sqrt(HIK_LEVELS)
        return out
    step = VZ_STEPS[name]
    out[0] = math.sqrt(x * step * float(vz_spectrum(name, 0.0)))
    for k in range(1, VZ_ORDER + 1):
        amp = math.sqrt(2.0 * x * step * float(vz_spectrum(name, k * step)))
        out[2 * k - 1] = amp * math.cos(k * step * math.log(x))
        out[2 * k] = amp * math.sin(k * step * math.log(x))
    return out


def ref_expansion(name, dense, scale):
    """Dense (n, m * G) expansion, column j*G + l-1 = phi_l(x_j)."""
    n, m = dense.shape
    g = N_GENERATED[name]
    phi = np.zeros((n, m * g))
    for j in range(m):
        for i in range(n):
            phi[i, j * g:(j + 1) * g] = ref_phi(name, float(dense[i, j]), scale[j])
    return phi


def ref_scores(name, dense, scale, weights):
    """Group scores sum_l (sum_i a_i phi_l)^2 (summed over classes), exactly rounded."""
    phi = ref_expansion(name, dense, scale)
    g = N_GENERATED[name]
    w = weights.reshape(weights.shape[0], -1)
    sums = np.array([[math.fsum(phi[:, col] * w[:, c]) for c in range(w.shape[1])]
                     for col in range(phi.shape[1])])
    squares = (sums ** 2).reshape(dense.shape[1], g * w.shape[1])
    return np.array([math.fsum(row) for row in squares])


def ref_topk(scores, k, first_key=0, excluded=()):
    keys = first_key + np.arange(scores.shape[0])
    keep = (scores > 0) & ~np.isin(keys, np.asarray(excluded, dtype=np.int64))
    keys, scores = keys[keep], scores[keep]
    order = np.lexsort((keys, -scores))[:k]
    return keys[order], scores[order]


def csc_arrays(X):
    return (X.indptr.astype(np.int64), X.indices.astype(np.int32), X.data)


def to_dense(indptr, indices, data, n_rows):
    return sp.csc_matrix((data, indices, indptr),
                         shape=(n_rows, indptr.shape[0] - 1)).toarray()


# ------------------------------------------------------------------- problems

def make_block(rng, dtype=np.float64, n=40, m=18, density=0.25):
    """A CSC block with the corner cases of the brief.

    Column 2 and the last are empty, rows 0 and n-1 are zero, column 5
    holds one entry, column 7 an explicitly stored 0.0 among positive
    values, column 9 a duplicate of column 8 (ties), column 11 a value
    above its scale (HIK clip to q) and a tiny value (HIK level 1).
    Returns the CSC arrays, the dense matrix and per-column scales.
    """
    dense = rng.uniform(0.001, 1.0, size=(n, m)) * (rng.random((n, m)) < density)
    dense[:, 2] = 0.0
    dense[:, m - 1] = 0.0
    dense[0, :] = 0.0
    dense[n - 1, :] = 0.0
    dense[:, 5] = 0.0
    dense[7, 5] = 0.37
    dense[:, 7] = 0.0
    dense[[3, 10, 20], 7] = [0.5, 0.2, 0.9]
    dense[:, 9] = dense[:, 8]
    dense[[4, 6], 11] = [1e-9, 0.8]
    scale = np.array([dense[:, j].max() if dense[:, j].max() > 0 else 1.0
                      for j in range(m)])
    scale[11] = 0.5                      # 0.8 > scale: level q
    X = sp.csc_matrix(dense.astype(dtype))
    X.sort_indices()
    indptr, indices, data = csc_arrays(X)
    # insert an explicit 0.0 at (15, 7)
    col = slice(indptr[7], indptr[8])
    rows = list(indices[col])
    assert 15 not in rows
    pos = indptr[7] + int(np.searchsorted(indices[col], 15))
    indices = np.insert(indices, pos, 15).astype(np.int32)
    data = np.insert(data, pos, 0.0).astype(dtype)
    indptr = indptr.copy()
    indptr[8:] += 1
    return indptr, indices, data, dense.astype(dtype).astype(np.float64), scale


# ---------------------------------------------------------------------- maps

def test_dispatch_tables_cover_every_map():
    for table in (PHI, EXPAND_BLOCK, EXPAND_COLUMNS, SCORE_BLOCK_TOPK,
                  SCORE_BLOCK_TOPK_MULTI, N_GENERATED):
        assert tuple(table) == MAPS
    assert N_GENERATED["hik"] == HIK_LEVELS == 100
    assert all(N_GENERATED[name] == 2 * VZ_ORDER + 1 == 11 for name in VZ_MAPS)


def test_spectra_values_and_unit_mass():
    assert vz_spectrum("chi2", 0.0) == 1.0
    assert vz_spectrum("intersection", 0.0) == pytest.approx(2 / np.pi)
    assert vz_spectrum("js", 0.0) == pytest.approx(2 / np.log(4))
    assert vz_spectrum("chi2", 0.7) == pytest.approx(1 / np.cosh(0.7 * np.pi))
    # k(x, x) = x * integral(kappa) = x for the three kernels
    for name in VZ_MAPS:
        mass = quad(lambda t: float(vz_spectrum(name, t)), -np.inf, np.inf)[0]
        assert mass == pytest.approx(1.0, rel=1e-8)
    with pytest.raises(ValueError):
        vz_spectrum("rbf", 0.0)


@pytest.mark.parametrize("name", MAPS)
def test_phi_matches_formula(name):
    g = N_GENERATED[name]
    out = np.empty(g)
    for x in [0.0, -0.0, 1e-300, 1e-9, 1e-3, 0.0999, 0.1, 0.1001, 0.5, 1.0, 1.7, 40.0]:
        PHI[name](x, 1.0, out)
        np.testing.assert_allclose(out, ref_phi(name, x, 1.0), rtol=1e-12, atol=1e-15)
        if x == 0.0:
            assert not out.any()


def test_hik_level_rounding():
    q = HIK_LEVELS
    assert hik_level(0.0, 1.0) == 0
    assert hik_level(1e-300, 1.0) == 1           # any x > 0: level >= 1
    assert hik_level(1e-300, 1e300) == 1         # x / s underflows to 0
    assert hik_level(0.0051, 1.0) == 1
    assert hik_level(0.0151, 1.0) == 2
    assert hik_level(0.5, 1.0) == 50             # on a boundary: that level
    assert hik_level(0.07, 1.0) == 7             # 0.07 / 1 * 100 > 7 in floats
    assert [hik_level(v / 100, 1.0) for v in range(1, 101)] == list(range(1, 101))
    assert [hik_level(v * 0.3 / 100, 0.3) for v in range(1, 101)] == list(range(1, 101))
    for x in np.random.default_rng(3).uniform(0, 1.2, 2000):
        assert hik_level(x, 0.9) == ref_level(x, 0.9)
        assert hik_level(x, 0.9) == min(max(math.ceil(x / 0.9 * q), 1), q) or \
            abs(x / 0.9 * q - round(x / 0.9 * q)) < 1e-12
    assert hik_level(0.501, 1.0) == 51
    assert hik_level(2.0, 2.0) == q              # x = s: q
    assert hik_level(3.0, 2.0) == q              # above s: clipped
    assert hik_level(0.3, 0.0) == q              # no scale: top level
    assert hik_level(np.nan, 1.0) == 0


def test_hik_kernel_identity_and_quantisation(rng):
    q = HIK_LEVELS
    scale = 2.5
    xs = np.concatenate([[0.0, 1e-12, scale, 1.3 * scale],
                         rng.uniform(0, scale, 300)])
    n = xs.shape[0]
    indptr = np.array([0, n], dtype=np.int64)
    out_indptr, out_indices, out_data = am.expand_block_hik(
        indptr, np.arange(n, dtype=np.int32), xs, np.array([scale]))
    phi = to_dense(out_indptr, out_indices, out_data, n)
    levels = np.array([hik_level(x, scale) for x in xs])
    assert np.array_equal((phi != 0).sum(axis=1), levels)
    shared = (phi != 0).astype(np.int64) @ (phi != 0).astype(np.int64).T
    vmin = np.minimum.outer(levels, levels)
    assert np.array_equal(shared, vmin)          # exactly min(v_x, v_z) levels
    assert np.all(out_data == 1.0 / math.sqrt(q))
    np.testing.assert_allclose(phi @ phi.T, vmin / q, rtol=1e-14, atol=0)
    # the quantised kernel over-estimates min(x, z) on [0, s] by at most s/q
    inside = xs <= scale
    err = (vmin * scale / q - np.minimum.outer(xs, xs))[np.ix_(inside, inside)]
    assert err.min() >= -1e-15 and err.max() <= scale / q * (1 + 1e-12)


# ----------------------------------------------------------------- expansion

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", MAPS)
def test_expand_block_matches_dense(rng, name, dtype):
    indptr, indices, data, dense, scale = make_block(rng, dtype)
    n, m = dense.shape
    g = N_GENERATED[name]
    out_indptr, out_indices, out_data = EXPAND_BLOCK[name](indptr, indices, data, scale)
    assert out_indptr.dtype == np.int64 and out_indptr.shape == (m * g + 1,)
    assert out_indices.dtype == np.int32 and out_data.dtype == dtype
    assert out_indptr[0] == 0 and np.all(np.diff(out_indptr) >= 0)
    assert out_indptr[-1] == out_indices.shape[0] == out_data.shape[0]
    assert np.all(out_data != 0)                  # only nonzero values stored
    for c in range(m * g):                        # rows sorted, on x_j's support
        rows = out_indices[out_indptr[c]:out_indptr[c + 1]]
        assert np.all(np.diff(rows) > 0)
        assert np.all(dense[rows, c // g] > 0)
    expected = ref_expansion(name, dense, scale).astype(dtype)
    got = to_dense(out_indptr, out_indices, out_data, n)
    rtol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-7 if dtype ==
                               np.float32 else 1e-15)
    # empty columns and the explicit 0.0 generate nothing
    for j in (2, m - 1):
        assert out_indptr[(j + 1) * g] == out_indptr[j * g]
    assert 15 not in out_indices[out_indptr[7 * g]:out_indptr[8 * g]]
    if name == "hik":                             # column l: rows of level >= l
        for j in range(m):
            lv = np.array([ref_level(x, scale[j]) for x in dense[:, j]])
            for l in (1, 2, 50, HIK_LEVELS):
                c = j * g + l - 1
                rows = out_indices[out_indptr[c]:out_indptr[c + 1]]
                assert np.array_equal(rows, np.flatnonzero(lv >= l))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", MAPS)
def test_expand_columns_equals_block_columns(rng, name, dtype):
    indptr, indices, data, dense, scale = make_block(rng, dtype)
    m = dense.shape[1]
    g = N_GENERATED[name]
    full = EXPAND_BLOCK[name](indptr, indices, data, scale)
    source = np.array([8, 0, 7, 2, 11, 11, 5, 9, m - 1, 3], dtype=np.int64)
    level = np.array([1, g, 2, 1, g, 1, 3, 1, 2, g], dtype=np.int64)
    out_indptr, out_indices, out_data = EXPAND_COLUMNS[name](
        indptr, indices, data, scale, source, level)
    assert out_indptr.shape == (source.shape[0] + 1,) and out_data.dtype == dtype
    for o, (j, l) in enumerate(zip(source, level)):
        c = j * g + l - 1
        lo, hi = full[0][c], full[0][c + 1]
        assert np.array_equal(out_indices[out_indptr[o]:out_indptr[o + 1]],
                              full[1][lo:hi])
        assert np.array_equal(out_data[out_indptr[o]:out_indptr[o + 1]],
                              full[2][lo:hi])
    # int32 requests and an empty request
    again = EXPAND_COLUMNS[name](indptr, indices, data, scale, source.astype(np.int32),
                                 level.astype(np.int32))
    assert all(np.array_equal(a, b) for a, b in
               zip(again, (out_indptr, out_indices, out_data)))
    empty = EXPAND_COLUMNS[name](indptr, indices, data, scale, source[:0], level[:0])
    assert empty[0].tolist() == [0] and empty[1].size == empty[2].size == 0


@pytest.mark.parametrize("name", MAPS)
def test_expand_columns_rejects_bad_requests(rng, name):
    indptr, indices, data, dense, scale = make_block(rng)
    g = N_GENERATED[name]
    m = dense.shape[1]
    bad = [([0], [0]), ([0], [g + 1]), ([-1], [1]), ([m], [1]), ([0, 1], [1])]
    for source, level in bad:
        with pytest.raises(ValueError):
            EXPAND_COLUMNS[name](indptr, indices, data, scale,
                                 np.array(source, dtype=np.int64),
                                 np.array(level, dtype=np.int64))


# ------------------------------------------------------------------- scoring

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", MAPS)
def test_score_topk_matches_dense(rng, name, dtype):
    indptr, indices, data, dense, scale = make_block(rng, dtype)
    m = dense.shape[1]
    weights = rng.standard_normal(dense.shape[0])
    scores = ref_scores(name, dense, scale, weights)
    assert scores[8] == scores[9] > 0            # a tie, broken by key
    for k in (1, 3, m, m + 7):
        keys, got = SCORE_BLOCK_TOPK[name](indptr, indices, data, scale, weights, 0,
                                           NO_KEYS, k)
        exp_keys, exp_scores = ref_topk(scores, k)
        assert keys.dtype == np.int64 and got.dtype == np.float64
        assert np.array_equal(keys, exp_keys)
        np.testing.assert_allclose(got, exp_scores, rtol=1e-10)
    keys, got = SCORE_BLOCK_TOPK[name](indptr, indices, data, scale, weights, 0,
                                       NO_KEYS, m + 7)
    assert got[list(keys).index(8)] == got[list(keys).index(9)]
    assert list(keys).index(8) + 1 == list(keys).index(9)
    assert 2 not in keys and m - 1 not in keys    # empty columns: score 0
    # the group score is the sum of the linear scores of its generated columns
    # (expanded in float64: the scorer never rounds generated values to float32)
    out_indptr, out_indices, out_data = EXPAND_BLOCK[name](
        indptr, indices, data.astype(np.float64), scale)
    phi = to_dense(out_indptr, out_indices, out_data, dense.shape[0])
    linear = ((phi.T @ weights) ** 2).reshape(m, -1).sum(axis=1)
    np.testing.assert_allclose(got, linear[keys], rtol=1e-9)


@pytest.mark.parametrize("name", MAPS)
def test_score_topk_excluded_and_first_key(rng, name):
    indptr, indices, data, dense, scale = make_block(rng)
    m = dense.shape[1]
    weights = rng.standard_normal(dense.shape[0])
    scores = ref_scores(name, dense, scale, weights)
    first_key = 1000
    best = ref_topk(scores, 3, first_key)[0]
    excluded = np.array(sorted({5, 999, int(best[0]), int(best[2]), first_key + 8,
                                first_key + m + 4}), dtype=np.int64)
    for k in (2, 5, m + 3):
        keys, got = SCORE_BLOCK_TOPK[name](indptr, indices, data, scale, weights,
                                           first_key, excluded, k)
        exp_keys, exp_scores = ref_topk(scores, k, first_key, excluded)
        assert np.array_equal(keys, exp_keys)
        assert not np.isin(keys, excluded).any()
        np.testing.assert_allclose(got, exp_scores, rtol=1e-10)
    keys, got = SCORE_BLOCK_TOPK[name](indptr, indices, data, scale, weights, 0,
                                       NO_KEYS, 0)
    assert keys.size == got.size == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", MAPS)
def test_score_topk_multi_matches_dense(rng, name, dtype):
    indptr, indices, data, dense, scale = make_block(rng, dtype)
    m = dense.shape[1]
    weights = np.ascontiguousarray(rng.standard_normal((dense.shape[0], 3)))
    scores = ref_scores(name, dense, scale, weights)
    excluded = np.array([1, 4], dtype=np.int64)
    for k in (1, 4, m + 2):
        keys, got = SCORE_BLOCK_TOPK_MULTI[name](indptr, indices, data, scale, weights,
                                                 0, excluded, k)
        exp_keys, exp_scores = ref_topk(scores, k, 0, excluded)
        assert np.array_equal(keys, exp_keys)
        np.testing.assert_allclose(got, exp_scores, rtol=1e-10)
    # K = 1 equals the 1-D kernel bit for bit
    one = np.ascontiguousarray(weights[:, :1])
    multi = SCORE_BLOCK_TOPK_MULTI[name](indptr, indices, data, scale, one, 0,
                                         NO_KEYS, m)
    single = SCORE_BLOCK_TOPK[name](indptr, indices, data, scale,
                                    np.ascontiguousarray(weights[:, 0]), 0, NO_KEYS, m)
    assert np.array_equal(multi[0], single[0]) and np.array_equal(multi[1], single[1])


@pytest.mark.parametrize("name", MAPS)
def test_scores_do_not_depend_on_blocking(rng, name):
    indptr, indices, data, dense, scale = make_block(rng)
    m = dense.shape[1]
    weights = rng.standard_normal(dense.shape[0])
    whole = SCORE_BLOCK_TOPK[name](indptr, indices, data, scale, weights, 0, NO_KEYS,
                                   m)
    parts = {}
    for lo, hi in [(0, 5), (5, 12), (12, m)]:
        sub_indptr = indptr[lo:hi + 1] - indptr[lo]
        sub = slice(indptr[lo], indptr[hi])
        keys, got = SCORE_BLOCK_TOPK[name](sub_indptr, indices[sub], data[sub],
                                           scale[lo:hi], weights, lo, NO_KEYS, m)
        parts.update(zip(keys.tolist(), got.tolist()))
    assert dict(zip(whole[0].tolist(), whole[1].tolist())) == parts


# ---------------------------------------------------------- VZ approximation

def vz_grid(points=200):
    return np.unique(np.concatenate([np.geomspace(1e-3, 1.0, points),
                                     np.linspace(1e-3, 1.0, points)]))


def exact_kernel(name, x, z):
    if name == "chi2":
        return 2.0 * x * z / (x + z)
    if name == "intersection":
        return np.minimum(x, z)
    return x / 2.0 * np.log2((x + z) / x) + z / 2.0 * np.log2((x + z) / z)


@pytest.mark.parametrize("name", VZ_MAPS)
def test_vz_approximation_error(name):
    xs = vz_grid()
    n = xs.shape[0]
    out = EXPAND_BLOCK[name](np.array([0, n], dtype=np.int64),
                             np.arange(n, dtype=np.int32), xs, np.ones(1))
    phi = to_dense(*out, n)
    assert phi.shape == (n, 11)
    approx = phi @ phi.T
    X, Z = np.meshgrid(xs, xs, indexing="ij")
    exact = exact_kernel(name, X, Z)
    err = np.abs(approx - exact)
    assert (err / exact).max() <= VZ_MAX_REL_ERROR[name]
    assert err.max() <= VZ_MAX_ABS_ERROR[name]
    # homogeneity: Psi(cx)'Psi(cz) = c Psi(x)'Psi(z)
    c = 0.25
    phi_c = to_dense(*EXPAND_BLOCK[name](np.array([0, n], dtype=np.int64),
                                         np.arange(n, dtype=np.int32), c * xs,
                                         np.ones(1)), n)
    np.testing.assert_allclose(phi_c @ phi_c.T, c * approx, rtol=1e-9, atol=1e-15)


def test_vz_coefficients():
    for name in VZ_MAPS:
        coef = vz_coefficients(name)
        step = VZ_STEPS[name]
        assert coef.shape == (VZ_ORDER + 1,)
        assert coef[0] == pytest.approx(math.sqrt(step * vz_spectrum(name, 0.0)))
        for k in range(1, VZ_ORDER + 1):
            assert coef[k] == pytest.approx(
                math.sqrt(2 * step * vz_spectrum(name, k * step)))


@pytest.mark.parametrize("name", ["hik", "chi2", "intersection", "js"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_max_norms_equal_the_expanded_block(name, dtype):
    """The per-row largest squared norm of a value's group of generated
    columns, value by value, equals the one summed from the explicit
    expansion (a dense NumPy reference); empty rows and columns give 0."""
    from ultrafs.kernels.additive_maps import (EXPAND_BLOCK, N_GENERATED,
                                               row_max_norms_hik, row_max_norms_vz,
                                               vz_coefficients)

    rng = np.random.default_rng(5)
    dense = rng.random((30, 9)) * (rng.random((30, 9)) < 0.5) * 4
    dense[:, 3] = 0.0
    dense[7] = 0.0
    X = sp.csc_matrix(dense.astype(dtype))
    scale = np.asarray(dense.max(axis=0), dtype=np.float64)
    indptr, indices, values = EXPAND_BLOCK[name](X.indptr.astype(np.int64),
                                                 X.indices, X.data, scale)
    G = N_GENERATED[name]
    expanded = sp.csc_matrix((values.astype(np.float64), indices, indptr),
                             shape=(30, 9 * G)).toarray()
    norms = (expanded ** 2).reshape(30, 9, G).sum(axis=2)        # (rows, columns)
    expected = norms.max(axis=1)
    out = np.zeros(30)
    if name == "hik":
        row_max_norms_hik(X.indptr.astype(np.int64), X.indices, X.data, scale,
                          np.ones(9), out)
        # level / q: 1 where a row holds its column's largest value
        assert np.all(out[dense.argmax(axis=0)[scale > 0]] == 1.0)
        # raw scale (gain s_j): group j's columns times sqrt(s_j)
        raw = np.zeros(30)
        row_max_norms_hik(X.indptr.astype(np.int64), X.indices, X.data, scale,
                          scale, raw)
        np.testing.assert_allclose(raw, (norms * scale).max(axis=1),
                                   rtol=1e-5 if dtype == np.float32 else 1e-12)
        assert np.all(raw >= dense.max(axis=1) * (1 - 1e-6))    # levels round up
    else:
        row_max_norms_vz(X.indices, X.data, out, vz_coefficients(name))
        # about k(x, x) = x: the map approximates the kernel's diagonal (the
        # intersection spectrum's heavy tail, cut at n = 5, keeps 83% of it)
        np.testing.assert_allclose(out, dense.max(axis=1),
                                   rtol=0.2 if name == "intersection" else 0.01)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, expected, rtol=rtol)
    assert out[7] == 0.0


@pytest.mark.parametrize("kernel", ["hik", "chi2"])
def test_scale_C_of_a_kernel_matches_linear_on_unit_columns(kernel):
    """``C="scale"`` of an additive space reads the groups' squared norms:
    on data whose rows each hold a column's maximum 1 (so ``k(x, x) = 1``
    like ``x**2 = 1``), HIK and chi2 get linear's C, not q times it."""
    from ultrafs.features import make_feature_space
    from ultrafs.methods import validation as val
    from ultrafs.store import InMemoryStore

    rng = np.random.default_rng(3)
    dense = rng.random((40, 6)) * (rng.random((40, 6)) < 0.6)
    dense[np.arange(40), rng.integers(0, 6, 40)] = 1.0
    store = InMemoryStore(sp.csc_matrix(dense), np.where(rng.random(40) < 0.5, -1, 1))
    linear = val.default_C(make_feature_space(store))
    assert linear == val.DEFAULT_C_SCALE
    C = val.default_C(make_feature_space(store, kernel=kernel))
    assert C == pytest.approx(linear, rel=0.05 if kernel == "chi2" else 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scaled_hik_scores_match_the_dense_expansion(dtype):
    """``score_block_topk_hik_scaled`` ranks ``gain_j * s_j`` (the raw-scale
    map's groups, columns times sqrt(gain_j)) as a dense NumPy expansion
    does; ones give ``score_block_topk_hik``'s bits; empty columns score 0."""
    from ultrafs.kernels.additive_topk import (score_block_topk_hik,
                                               score_block_topk_hik_scaled,
                                               score_block_topk_multi_hik,
                                               score_block_topk_multi_hik_scaled)

    rng = np.random.default_rng(8)
    dense = rng.random((40, 7)) * (rng.random((40, 7)) < 0.6) * rng.random(7) * 3
    dense[:, 2] = 0.0
    X = sp.csc_matrix(dense.astype(dtype))
    indptr = X.indptr.astype(np.int64)
    scale = np.asarray(X.max(axis=0).toarray().ravel(), dtype=np.float64)
    gain = np.where(scale > 0, scale, 1.0)
    weights = rng.standard_normal(40)
    none = np.zeros(0, dtype=np.int64)
    _, _, values = EXPAND_BLOCK["hik"](indptr, X.indices, X.data, scale)
    E = sp.csc_matrix((values.astype(np.float64), *EXPAND_BLOCK["hik"](
        indptr, X.indices, X.data, scale)[1::-1]), shape=(40, 7 * HIK_LEVELS)).toarray()
    c = (weights @ E).reshape(7, HIK_LEVELS)
    expected = (c ** 2).sum(axis=1) * gain
    keys, got = score_block_topk_hik_scaled(indptr, X.indices, X.data, scale, gain,
                                            weights, 0, none, 7)
    order = np.argsort(-expected[expected > 0], kind="stable")
    np.testing.assert_array_equal(keys, np.flatnonzero(expected > 0)[order])
    rtol = 1e-6 if dtype == np.float32 else 1e-9     # E holds the cast values
    np.testing.assert_allclose(got, expected[keys], rtol=rtol)
    assert 2 not in keys
    k1, s1 = score_block_topk_hik_scaled(indptr, X.indices, X.data, scale, np.ones(7),
                                         weights, 0, none, 7)
    k0, s0 = score_block_topk_hik(indptr, X.indices, X.data, scale, weights, 0, none, 7)
    np.testing.assert_array_equal(k1, k0)
    np.testing.assert_array_equal(s1, s0)
    W = np.stack([weights, -2 * weights], axis=1)
    km, sm = score_block_topk_multi_hik_scaled(indptr, X.indices, X.data, scale, gain,
                                               W, 0, none, 7)
    np.testing.assert_allclose(sm, 5 * expected[km], rtol=rtol)
    k2, s2 = score_block_topk_multi_hik(indptr, X.indices, X.data, scale, W, 0, none, 7)
    k3, s3 = score_block_topk_multi_hik_scaled(indptr, X.indices, X.data, scale,
                                               np.ones(7), W, 0, none, 7)
    np.testing.assert_array_equal(s2, s3)
