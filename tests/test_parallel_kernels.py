"""The solver's parallel kernels: dense references, and the same bytes for any threads.

Every ``*_parallel`` twin is run with 1 thread and with 2 (or as many as
numba allows here) and compared byte for byte with its serial kernel, which
is itself checked against a dense NumPy reference.  Sizes cover one row,
fewer rows than a chunk, a chunk exactly and a few chunks plus a remainder;
matrices have empty columns and rows without entries, float32 and float64
values, and duplicate row indices.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import threading

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from ultrafs.kernels import losses as lk
from ultrafs.kernels import multiclass_losses as mk
from ultrafs.kernels import hessian_gram as pn
from ultrafs.kernels import row_chunks
from ultrafs.kernels import sparse_ops as so
from ultrafs.kernels.row_chunks import CHUNK
from ultrafs.solvers.apg import solve
from ultrafs.solvers.datafits import make_datafit
from ultrafs.solvers.operators import CSCOperator

MAX_THREADS = numba.config.NUMBA_NUM_THREADS
NO_VALUES = np.empty(0)
THREADS = sorted({1, min(2, MAX_THREADS), MAX_THREADS})
SIZES = [1, 37, CHUNK, 3 * CHUNK + 5]


@contextlib.contextmanager
def num_threads(k):
    """Run with ``k`` numba threads in this thread, then restore the count."""
    old = numba.get_num_threads()
    numba.set_num_threads(k)
    try:
        yield
    finally:
        numba.set_num_threads(old)


def as_bytes(result):
    """A kernel's result (array, float or tuple of them) as bytes."""
    if isinstance(result, tuple):
        return b"|".join(as_bytes(r) for r in result)
    return np.ascontiguousarray(np.asarray(result, dtype=None)).tobytes()


def same_for_all_threads(serial, parallel_call):
    """Assert ``parallel_call()`` gives the bytes of ``serial`` under every thread count."""
    expected = as_bytes(serial)
    for k in THREADS:
        with num_threads(k):
            got = parallel_call()
        assert as_bytes(got) == expected, f"{k} threads"


def random_csc(rng, n, p, dtype=np.float64, density=0.05, duplicates=False):
    """CSC arrays with empty columns and empty rows (sorted rows per column)."""
    X = sp.random(n, p, density=density, format="csc", random_state=rng,
                  data_rvs=lambda k: rng.standard_normal(k))
    X = X.astype(dtype)
    lil = X.tolil()
    lil[:, 0] = 0.0          # an empty column
    if p > 3:
        lil[:, p // 2] = 0.0
    if n > 2:
        lil[n // 3, :] = 0.0  # a row without entries
    X = lil.tocsc()
    X.sort_indices()
    indptr = X.indptr.astype(np.int64)
    indices = X.indices.astype(np.int32)
    data = X.data.astype(dtype)
    if duplicates and len(indices):
        # repeat an entry of the last column: sorted, not strictly
        j = p - 1
        lo, hi = indptr[j], indptr[j + 1]
        if hi > lo:
            indices = np.insert(indices, hi, indices[hi - 1])
            data = np.insert(data, hi, dtype(0.5))
            indptr[j + 1:] += 1
    return indptr, indices, data


def dense(indptr, indices, data, n):
    """The dense float64 matrix (duplicates summed)."""
    p = len(indptr) - 1
    cols = np.repeat(np.arange(p), np.diff(indptr))
    out = np.zeros((n, p))
    np.add.at(out, (indices, cols), data.astype(np.float64))
    return out


def labels(rng, n):
    return np.where(rng.random(n) < 0.5, -1.0, 1.0)


def weights_cases(rng, n):
    s = rng.exponential(size=n)
    s[rng.random(n) < 0.2] = 0.0
    return {"none": np.empty(0), "weights": s}


# -- row chunks and the dispatch ----------------------------------------------
def test_chunk_counts():
    assert row_chunks.n_chunks(0) == 0
    assert row_chunks.n_chunks(1) == 1
    assert row_chunks.n_chunks(CHUNK) == 1
    assert row_chunks.n_chunks(CHUNK + 1) == 2
    parts = np.array([0.1, 0.2, 0.3])
    assert row_chunks.ordered_sum(parts) == (0.0 + 0.1 + 0.2) + 0.3


def test_one_thread_runs_the_serial_kernel():
    calls = []
    pair = row_chunks.parallel(lambda x: calls.append("serial") or x,
                               lambda x: calls.append("parallel") or x)
    with num_threads(1):
        assert pair("large" * CHUNK) == "large" * CHUNK
    assert calls == ["serial"]
    assert pair.serial is not None and pair.parallel is not None


@pytest.mark.skipif(MAX_THREADS < 2, reason="numba allows one thread here")
def test_several_threads_run_the_parallel_kernel():
    calls = []
    pair = row_chunks.parallel(lambda x: calls.append("serial"),
                               lambda x: calls.append("parallel"))
    with num_threads(2):
        pair(np.empty(row_chunks.MIN_PARALLEL_WORK))
        pair(np.empty(row_chunks.MIN_PARALLEL_WORK - 1))  # too small to share
    assert calls == ["parallel", "serial"]
    assert row_chunks.threading_layer() in ("omp", "tbb", "workqueue")


# -- binary losses ----------------------------------------------------------
def _softplus(z):
    return np.logaddexp(0.0, z)


def _binary_reference(name, y, f, s, extra):
    """Dense references of the summed binary quantities (and written arrays)."""
    w = np.ones_like(y) if len(s) == 0 else s
    logistic = name.startswith("logistic")
    if name.endswith("value_weighted"):
        terms = _softplus(-y * f) if logistic else 0.5 * np.maximum(0, 1 - y * f) ** 2
        return float(np.sum(w * terms)), None
    if name.endswith("value_derivative_weighted"):
        if logistic:
            return (float(np.sum(w * _softplus(-y * f))), -w * y * expit(-y * f))
        m = np.maximum(0.0, 1 - y * f)
        return float(np.sum(w * 0.5 * m ** 2)), -w * y * m
    if name.endswith("curvature_sum_weighted"):
        if logistic:
            sig = expit(-y * f)
            return float(np.sum(w * sig * (1 - sig))), None
        return float(np.sum(w * (1 - y * f > 0))), None
    # value change
    if logistic:
        terms = _softplus(-y * (f + extra)) - _softplus(-y * f)
    else:
        terms = 0.5 * (np.maximum(0, 1 - y * (f + extra)) ** 2
                       - np.maximum(0, 1 - y * f) ** 2)
    return float(np.sum(w * terms)), None


BINARY_SUMS = [
    "logistic_value_weighted", "logistic_value_derivative_weighted",
    "logistic_curvature_sum_weighted", "logistic_value_change_weighted",
    "squared_hinge_value_weighted", "squared_hinge_value_derivative_weighted",
    "squared_hinge_curvature_sum_weighted", "squared_hinge_value_change_weighted",
]


@pytest.mark.parametrize("name", BINARY_SUMS)
@pytest.mark.parametrize("n", [0, *SIZES])
def test_binary_sums(name, n, rng):
    y = labels(rng, n)
    f = rng.normal(scale=3.0, size=n)
    serial = getattr(lk, name)
    twin = getattr(lk, name + "_parallel")
    for case, s in weights_cases(rng, n).items():
        if name.endswith("value_derivative_weighted"):
            out = np.full(n, np.nan)
            value = serial(y, f, s, out)
            ref_value, ref_out = _binary_reference(name, y, f, s, None)
            np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-300)

            def run(y=y, f=f, s=s):
                o = np.full(n, np.nan)
                return twin(y, f, s, o), o
            same_for_all_threads((value, out), run)
        elif "curvature" in name:
            d = np.empty(n)
            getattr(lk, name.replace("curvature_sum", "value_derivative"))(y, f, s, d)
            value = serial(y, f, s, d)
            ref_value, _ = _binary_reference(name, y, f, s, None)
            same_for_all_threads(value, lambda y=y, f=f, s=s, d=d: twin(y, f, s, d))
        elif "change" in name:
            delta = rng.normal(scale=0.5, size=n)
            delta[::7] *= 10.0  # both branches of the logistic change
            value = serial(y, f, s, delta)
            ref_value, _ = _binary_reference(name, y, f, s, delta)
            same_for_all_threads(value,
                                 lambda y=y, f=f, s=s, d=delta: twin(y, f, s, d))
        else:
            value = serial(y, f, s)
            ref_value, _ = _binary_reference(name, y, f, s, None)
            same_for_all_threads(value, lambda y=y, f=f, s=s: twin(y, f, s))
        assert value == pytest.approx(ref_value, rel=1e-11, abs=1e-11), case
        assert isinstance(value, float)


@pytest.mark.parametrize("name", BINARY_SUMS)
def test_binary_sums_empty_weights_are_unit_weights(name, rng):
    n = 2 * CHUNK + 3
    y = labels(rng, n)
    f = rng.normal(size=n)
    extra = (np.empty(n) if "value_derivative" in name else rng.normal(size=n))
    args = [] if name.endswith("value_weighted") else [extra]
    for kernel in (getattr(lk, name), getattr(lk, name + "_parallel")):
        a = [x.copy() for x in args]
        b = [x.copy() for x in args]
        if "curvature" in name:  # d must be the derivative at f
            lk.logistic_value_derivative_weighted(y, f, np.empty(0), a[0])
            b[0] = a[0].copy()
        assert as_bytes(kernel(y, f, np.empty(0), *a)) == \
            as_bytes(kernel(y, f, np.ones(n), *b))
        assert as_bytes(a) == as_bytes(b)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
@pytest.mark.parametrize("n", [0, 1, CHUNK + 1])
def test_second_derivative(loss, n, rng):
    y = labels(rng, n)
    f = rng.normal(scale=3.0, size=n)
    serial = getattr(lk, f"{loss}_second_derivative")
    twin = getattr(lk, f"{loss}_second_derivative_parallel")
    out = serial(y, f, np.empty(n))
    ref = expit(f) * expit(-f) if loss == "logistic" else (1 - y * f > 0) * 1.0
    np.testing.assert_allclose(out, ref, rtol=1e-13)
    same_for_all_threads(out, lambda: twin(y, f, np.empty(n)))


# -- multi-class losses ---------------------------------------------------------
MULTICLASS_SUMS = [
    "multinomial_value_weighted", "multinomial_value_derivative_weighted",
    "multinomial_bias_curvature_weighted", "ovr_squared_hinge_value_weighted",
    "ovr_squared_hinge_value_derivative_weighted",
    "ovr_squared_hinge_bias_curvature_weighted",
]


def _multiclass_reference(name, y, F, w):
    n, K = F.shape
    onehot = np.zeros((n, K))
    onehot[np.arange(n), y] = 1.0
    if name.startswith("multinomial"):
        lse = np.logaddexp.reduce(F, axis=1)
        P = np.exp(F - lse[:, None])
        value = float(np.sum(w * (lse - F[np.arange(n), y])))
        d = w[:, None] * (P - onehot)
        curv = float(np.sum(w * np.max(2 * P * (1 - P), axis=1))) if n else 0.0
    else:
        Y = 2 * onehot - 1
        m = np.maximum(0.0, 1 - Y * F)
        value = float(np.sum(w[:, None] * 0.5 * m ** 2))
        d = -w[:, None] * Y * m
        counts = np.sum(w[:, None] * (m > 0), axis=0)
        curv = float(max(0.0, counts.max())) if n else 0.0
    return value, d.ravel(), curv


@pytest.mark.parametrize("name", MULTICLASS_SUMS)
@pytest.mark.parametrize("n", [0, 1, CHUNK - 1, 2 * CHUNK + 9])
def test_multiclass_sums(name, n, rng):
    K = 4
    y = rng.integers(0, K, size=n).astype(np.int64)
    f = rng.normal(scale=2.0, size=n * K)
    serial = getattr(mk, name)
    twin = getattr(mk, name + "_parallel")
    for case, s in weights_cases(rng, n).items():
        w = np.ones(n) if len(s) == 0 else s
        value, ref_d, curv = _multiclass_reference(name, y, f.reshape(n, K), w)
        if name.endswith("value_derivative_weighted"):
            out = np.full(n * K, np.nan)
            got = serial(y, f, s, out)
            np.testing.assert_allclose(out, ref_d, rtol=1e-12, atol=1e-15)

            def run(s=s):
                o = np.full(n * K, np.nan)
                return twin(y, f, s, o), o
            same_for_all_threads((got, out), run)
        elif "curvature" in name:
            d = np.empty(n * K)
            getattr(mk, name.replace("bias_curvature", "value_derivative"))(y, f, s, d)
            got = serial(y, f, s, d)
            value = curv
            same_for_all_threads(got, lambda s=s, d=d: twin(y, f, s, d))
        else:
            got = serial(y, f, s)
            same_for_all_threads(got, lambda s=s: twin(y, f, s))
        assert got == pytest.approx(value, rel=1e-11, abs=1e-11), case


# -- sparse products -----------------------------------------------------------
def _matrix_cases():
    for n in SIZES:
        for dtype in (np.float32, np.float64):
            yield n, dtype


MATRICES = list(_matrix_cases())


@pytest.fixture(params=MATRICES, ids=[f"n{n}-{np.dtype(d).name}" for n, d in MATRICES])
def matrix(request, rng):
    n, dtype = request.param
    p = 9
    indptr, indices, data = random_csc(rng, n, p, dtype, density=0.3,
                                       duplicates=True)
    return n, indptr, indices, data


def test_row_ranges_cover_the_rows():
    for n in (0, 1, 4095, 4096, 4097, 10 ** 6 + 3):
        b = so.row_ranges(n)
        assert b[0] == 0 and b[-1] == n
        assert np.all(np.diff(b) >= 0)
        assert len(b) - 1 <= 1024


def _range_cases(indptr, indices, n):
    """(starts, bounds) of the fine ranges, of coarser ones and of a single range."""
    bounds = so.row_ranges(n)
    starts, ok = so.csc_row_range_starts(indptr, indices, bounds)
    assert ok
    one = np.array([0, n], dtype=np.int64)
    return [(starts, bounds), so.coarser_ranges(starts, bounds, 3),
            so.coarser_ranges(starts, bounds, 16),
            so.csc_row_range_starts(indptr, indices, one)[0:1] + (one,)]


def test_range_starts(matrix):
    n, indptr, indices, data = matrix
    for starts, bounds in _range_cases(indptr, indices, n):
        assert bounds[0] == 0 and bounds[-1] == n
        assert starts.shape == (len(indptr) - 1, len(bounds))
        for j in range(len(indptr) - 1):
            for r in range(len(bounds) - 1):
                rows = indices[starts[j, r]:starts[j, r + 1]]
                assert np.all((rows >= bounds[r]) & (rows < bounds[r + 1]))
            assert starts[j, 0] == indptr[j] and starts[j, -1] == indptr[j + 1]


def test_unsorted_columns_are_detected(rng):
    indptr = np.array([0, 3, 3], dtype=np.int64)
    indices = np.array([2, 0, 1], dtype=np.int32)
    _, ok = so.csc_row_range_starts(indptr, indices, so.row_ranges(3))
    assert not ok


def test_matvec(matrix, rng):
    n, indptr, indices, data = matrix
    p = len(indptr) - 1
    X = dense(indptr, indices, data, n)
    w = rng.normal(size=p)
    w[3] = 0.0
    out = so.csc_matvec(indptr, indices, data, w, n)
    np.testing.assert_allclose(out, X @ w, rtol=1e-12, atol=1e-12)
    block_ptr = np.array([0, 2, 2, 5, p], dtype=np.int64)
    blocks = so.csc_block_matvec(indptr, indices, data, w, block_ptr, n)
    for h in range(4):
        lo, hi = block_ptr[h], block_ptr[h + 1]
        np.testing.assert_allclose(blocks[h], X[:, lo:hi] @ w[lo:hi], rtol=1e-12,
                                   atol=1e-12)
    one = np.array([0, p], dtype=np.int64)
    for starts, bounds in _range_cases(indptr, indices, n):
        for twin in (so.csc_block_matvec_into_ranges, so.csc_block_matvec_into_parallel):
            same_for_all_threads(blocks, lambda twin=twin, s=starts, b=bounds: twin(
                indptr, indices, data, NO_VALUES, w, block_ptr, s, b,
                np.full((4, n), np.nan)))
            same_for_all_threads(out, lambda twin=twin, s=starts, b=bounds: twin(
                indptr, indices, data, NO_VALUES, w, one, s, b,
                np.full((1, n), np.nan))[0])


def test_rmatvec(matrix, rng):
    """X'r by ranges of rows: close to the dense product for every choice of
    ranges, the same bytes from the serial and threaded twins (the bytes may
    differ between choices of ranges: the parts are added range by range)."""
    n, indptr, indices, data = matrix
    X = dense(indptr, indices, data, n)
    r = rng.normal(size=n)
    out = so.csc_rmatvec(indptr, indices, data, r)
    np.testing.assert_allclose(out, X.T @ r, rtol=1e-12, atol=1e-12)
    for starts, bounds in _range_cases(indptr, indices, n):
        serial = so.csc_rmatvec_ranges(indptr, indices, data, NO_VALUES, r, 1, starts, bounds)
        np.testing.assert_allclose(serial, X.T @ r, rtol=1e-12, atol=1e-12)
        same_for_all_threads(serial, lambda s=starts, b=bounds: so.csc_rmatvec_ranges_parallel(
            indptr, indices, data, NO_VALUES, r, 1, s, b))
    # one range: every column's entries summed in order, as the plain kernel
    starts, bounds = _range_cases(indptr, indices, n)[-1]
    assert as_bytes(so.csc_rmatvec_ranges(indptr, indices, data, NO_VALUES, r, 1, starts,
                                          bounds)) == as_bytes(out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [37, 3 * CHUNK + 5])
def test_one_value_per_column_products(n, dtype, rng):
    """Products from each column's one value: the bytes of those reading ``data``."""
    p = 9
    indptr, indices, _ = random_csc(rng, n, p, dtype, density=0.3, duplicates=True)
    values = rng.choice([2 * np.sqrt(2), 4.0, -4 * np.sqrt(2), 1.0, 0.1], size=p)
    data = np.repeat(values, np.diff(indptr)).astype(dtype)
    colval, constant = so.column_values(indptr, data)
    assert constant and colval.dtype == np.float64
    w = rng.normal(size=p)
    r = rng.normal(size=n)
    block_ptr = np.array([0, 3, p], dtype=np.int64)
    plain = so.csc_block_matvec_into(indptr, indices, data, w, block_ptr,
                                     np.empty((2, n)))
    for starts, bounds in _range_cases(indptr, indices, n)[:2]:
        for twin in (so.csc_block_matvec_into_ranges, so.csc_block_matvec_into_parallel):
            same_for_all_threads(plain, lambda twin=twin, s=starts, b=bounds: twin(
                indptr, indices, data[:0], colval, w, block_ptr, s, b,
                np.full((2, n), np.nan)))
    for starts, bounds in _range_cases(indptr, indices, n)[:2]:
        back = so.csc_rmatvec_ranges(indptr, indices, data, NO_VALUES, r, 1, starts, bounds)
        for twin in (so.csc_rmatvec_ranges, so.csc_rmatvec_ranges_parallel):
            same_for_all_threads(back, lambda twin=twin, s=starts, b=bounds: twin(
                indptr, indices, data[:0], colval, r, 1, s, b))


def test_column_values_compare_bits():
    indptr = np.array([0, 2], dtype=np.int64)
    for data, constant in (([2.0, 2.0], True), ([0.0, -0.0], False),
                           ([-0.0, -0.0], True), ([np.nan, np.nan], False),
                           ([1.0, 1.0 + 1e-16], True), ([1.0, 1.0 + 2e-16], False)):
        assert so.column_values(indptr, np.array(data))[1] == constant, data
    values, constant = so.column_values(np.array([0, 0, 1], np.int64), np.array([3.0]))
    assert constant and list(values) == [1.0, 3.0]


def test_multi_output_products(matrix, rng):
    n, indptr, indices, data = matrix
    p = len(indptr) - 1
    K = 3
    X = dense(indptr, indices, data, n)
    W = rng.normal(size=(p, K))
    W[4] = 0.0
    out = so.csc_matmat(indptr, indices, data, W.ravel(), K, n)
    np.testing.assert_allclose(out.reshape(n, K), X @ W, rtol=1e-12, atol=1e-12)
    block_ptr = np.array([0, 4, p], dtype=np.int64)
    blocks = so.csc_block_matmat_into(indptr, indices, data, W.ravel(), K, block_ptr,
                                      np.empty((2, n * K)))
    np.testing.assert_allclose(blocks.sum(axis=0), out, rtol=1e-12, atol=1e-12)
    for starts, bounds in _range_cases(indptr, indices, n)[::2]:
        for twin in (so.csc_block_matmat_into_ranges, so.csc_block_matmat_into_parallel):
            same_for_all_threads(blocks, lambda twin=twin, s=starts, b=bounds: twin(
                indptr, indices, data, W.ravel(), K, block_ptr, s, b,
                np.full((2, n * K), np.nan)))
    R = rng.normal(size=(n, K))
    back = so.csc_rmatmat(indptr, indices, data, R.ravel(), K)
    np.testing.assert_allclose(back.reshape(p, K), X.T @ R, rtol=1e-12, atol=1e-12)
    for starts, bounds in _range_cases(indptr, indices, n):
        serial = so.csc_rmatvec_ranges(indptr, indices, data, NO_VALUES, R.ravel(), K,
                                       starts, bounds)
        np.testing.assert_allclose(serial.reshape(p, K), X.T @ R, rtol=1e-12, atol=1e-12)
        same_for_all_threads(serial, lambda s=starts, b=bounds: so.csc_rmatvec_ranges_parallel(
            indptr, indices, data, NO_VALUES, R.ravel(), K, s, b))
    # one range: the plain kernel's sums
    starts, bounds = _range_cases(indptr, indices, n)[-1]
    assert as_bytes(so.csc_rmatvec_ranges(indptr, indices, data, NO_VALUES, R.ravel(), K,
                                          starts, bounds)) == as_bytes(back)


@pytest.mark.parametrize("n", [0, 1, 5000, 3 * CHUNK + 5])
def test_combine_block_products(n, rng):
    t = 3
    xv = rng.normal(size=(t, n))
    xg = rng.normal(size=(t, n))
    scale = np.array([0.5, 0.0, 2.0])
    out = so.combine_block_products(xv, xg, scale, 0.25, 0.7, np.empty(n))
    ref = (scale[:, None] * (xv - 0.25 * xg)).sum(axis=0) - 0.7
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    serial = np.full(n, -0.7)  # the order of the sums: blocks in turn
    for h in range(t):
        if scale[h] != 0.0:
            serial += scale[h] * xv[h] - (scale[h] * 0.25) * xg[h]
    assert serial.tobytes() == out.tobytes()
    same_for_all_threads(out, lambda: so.combine_block_products_parallel(
        xv, xg, scale, 0.25, 0.7, np.full(n, np.nan)))


def test_csc_to_csr_is_scipys(matrix):
    n, indptr, indices, data = matrix
    p = len(indptr) - 1
    ref = sp.csc_matrix((data, indices, indptr), shape=(n, p)).tocsr()
    for starts, bounds in _range_cases(indptr, indices, n):
        ip, ix, dx = so.csc_to_csr(indptr, indices, data, n, starts, bounds)
        np.testing.assert_array_equal(ip, ref.indptr)
        np.testing.assert_array_equal(ix, ref.indices)
        assert dx.dtype == data.dtype
        assert dx.tobytes() == ref.data.tobytes()
        same_for_all_threads((ip, ix, dx), lambda s=starts, b=bounds:
                             so.csc_to_csr_parallel(indptr, indices, data, n, s, b))


# -- the Gram of proximal Newton ---------------------------------------------------
def test_augmented_gram(matrix, rng):
    n, indptr, indices, data = matrix
    p = len(indptr) - 1
    X = dense(indptr, indices, data, n)
    w = rng.exponential(size=n)
    w[rng.random(n) < 0.3] = 0.0     # rows skipped
    bounds = so.row_ranges(n)
    starts, _ = so.csc_row_range_starts(indptr, indices, bounds)
    rows = so.csc_to_csr(indptr, indices, data, n, starts, bounds)
    out = pn.csr_augmented_gram(*rows, w, np.empty((p + 1, p + 1)))
    Xa = np.hstack([X, -np.ones((n, 1))])
    np.testing.assert_allclose(out, Xa.T @ (w[:, None] * Xa), rtol=1e-11,
                               atol=1e-9)
    work = pn.gram_row_work(rows[0], rows[1], p + 1)
    for parts in (1, 2, 3, p + 1, p + 5):
        gram_bounds = pn.gram_row_bounds(work, parts)
        assert gram_bounds[0] == 0 and gram_bounds[-1] == p + 1
        same_for_all_threads(out, lambda b=gram_bounds: pn.csr_augmented_gram_parallel(
            *rows, w, b, np.full((p + 1, p + 1), np.nan)))


def test_gram_from_csc_windows_equals_the_csr_gram(matrix, rng):
    """The Hessian taken a window of rows at a time from the CSC arrays has
    the CSR kernel's bytes, for every range layout, window, thread count and
    split of the Gram's rows; for values per entry and for the pattern; with
    the window buffers reused (and dirty) from call to call."""
    n, indptr, indices, data = matrix
    p = len(indptr) - 1
    w = rng.exponential(size=n)
    w[rng.random(n) < 0.3] = 0.0     # rows skipped
    bounds = so.row_ranges(n)
    starts, _ = so.csc_row_range_starts(indptr, indices, bounds)
    rows = so.csc_to_csr(indptr, indices, data, n, starts, bounds)
    expected = pn.csr_augmented_gram(*rows, w, np.empty((p + 1, p + 1)))
    scale = np.append(rng.choice([2.0, -0.5, 3.0], size=p), 1.0)
    expected_pattern = pn.csr_constant_gram(rows[0], rows[1], w, scale,
                                            np.empty((p + 1, p + 1)))
    work = pn.csc_gram_work(indptr, n)
    assert work.shape == (p + 1,) and np.all(work >= 1)
    for starts_, bounds_ in _range_cases(indptr, indices, n):
        for window in (1, 2, len(bounds_)):
            for vals, sc, want in ((data, np.zeros(0), expected),
                                   (data[:0], scale, expected_pattern)):
                # one set of window buffers, dirty, reused by every call below
                buffers = pn.window_buffers(vals, starts_, bounds_, window)
                for buffer in buffers:
                    buffer.view(np.uint8)[:] = 0xA5
                args = (indices, vals, w, sc, starts_, bounds_, window, buffers)
                got = pn.csc_augmented_gram(*args, np.full((p + 1, p + 1), np.nan))
                assert got.tobytes() == want.tobytes()
                for parts in (1, 3):
                    same_for_all_threads(want, lambda a=args, b=pn.gram_row_bounds(
                        work, parts): pn.csc_augmented_gram_parallel(
                            *a, b, np.full((p + 1, p + 1), np.nan)))


def test_gram_of_no_rows_and_no_columns():
    rows = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0))
    out = pn.csr_augmented_gram_parallel(*rows, np.zeros(0),
                                         np.array([0, 1], np.int64), np.empty((1, 1)))
    assert out[0, 0] == 0.0
    rows = (np.zeros(4, np.int64), np.zeros(0, np.int32), np.zeros(0))
    out = pn.csr_augmented_gram_parallel(*rows, np.ones(3), pn.gram_row_bounds(
        pn.gram_row_work(rows[0], rows[1], 1), 2), np.empty((1, 1)))
    assert out[0, 0] == 3.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [37, 3 * CHUNK + 5])
def test_constant_column_gram(n, dtype, rng):
    p = 9
    indptr, indices, _ = random_csc(rng, n, p, dtype, density=0.3, duplicates=True)
    values = rng.choice([2 * np.sqrt(2), 4.0, -4 * np.sqrt(2), 1.0], size=p)
    data = np.repeat(values, np.diff(indptr)).astype(dtype)
    found, constant = so.column_values(indptr, data)
    assert constant
    nonempty = np.diff(indptr) > 0
    np.testing.assert_array_equal(found[nonempty], values.astype(dtype)[nonempty])
    X = dense(indptr, indices, data, n)
    w = rng.exponential(size=n)
    w[rng.random(n) < 0.3] = 0.0
    bounds = so.row_ranges(n)
    starts, _ = so.csc_row_range_starts(indptr, indices, bounds)
    rows = so.csc_to_csr(indptr, indices, data[:0], n, starts, bounds)
    assert len(rows[2]) == 0
    scale = np.append(found, 1.0)
    out = pn.csr_constant_gram(rows[0], rows[1], w, scale, np.empty((p + 1, p + 1)))
    Xa = np.hstack([X, -np.ones((n, 1))])
    np.testing.assert_allclose(out, Xa.T @ (w[:, None] * Xa), rtol=1e-11, atol=1e-9)
    work = pn.gram_row_work(rows[0], rows[1], p + 1)
    for parts in (1, 2, 5):
        same_for_all_threads(out, lambda b=pn.gram_row_bounds(work, parts):
                             pn.csr_constant_gram_parallel(rows[0], rows[1], w, scale, b,
                                                           np.full((p + 1, p + 1),
                                                                   np.nan)))
    # the operator takes this path for such data (and copies no values)
    op = CSCOperator(indptr, indices, data, n)
    for k in THREADS:
        with num_threads(k):
            got = CSCOperator(indptr, indices, data, n).augmented_gram(w)
        assert got.tobytes() == op.augmented_gram(w).tobytes()
    if indptr[-1] >= row_chunks.MIN_PARALLEL_WORK:
        assert len(op._csr()[2]) == 0
        assert got.tobytes() == out.tobytes()
    j = int(np.argmax(np.diff(indptr)))
    data[indptr[j + 1] - 1] = 3.0  # two values in a column
    assert not so.column_values(indptr, data)[1]


# -- the operator and whole solves ---------------------------------------------------
def _operator_results(indptr, indices, data, n, w, r, weights, K=1):
    op = CSCOperator(indptr, indices, data, n, K)
    block_ptr = np.array([0, 2 * K, len(w)], dtype=np.int64)
    out = (op.matvec(w), op.rmatvec(r),
           op.block_matvec_into(w, block_ptr, np.empty((2, n * K))))
    if K == 1:
        out += (op.augmented_gram(weights),)
    return out


@pytest.mark.parametrize("K", [1, 3])
def test_operator_same_bytes(K, rng):
    n = 2 * CHUNK + 11
    indptr, indices, data = random_csc(rng, n, 12, np.float32, density=0.1)
    w = rng.normal(size=12 * K)
    r = rng.normal(size=n * K)
    weights = rng.exponential(size=n)
    with num_threads(1):
        expected = as_bytes(_operator_results(indptr, indices, data, n, w, r, weights,
                                              K))
    for k in THREADS:
        with num_threads(k):
            got = _operator_results(indptr, indices, data, n, w, r, weights, K)
        assert as_bytes(got) == expected


def test_operator_with_unsorted_columns(rng):
    n = 50
    indptr, indices, data = random_csc(rng, n, 6, density=0.4)
    X = dense(indptr, indices, data, n)
    for j in range(6):  # reverse every column's rows
        lo, hi = indptr[j], indptr[j + 1]
        indices[lo:hi] = indices[lo:hi][::-1].copy()
        data[lo:hi] = data[lo:hi][::-1].copy()
    w = rng.normal(size=6)
    r = rng.normal(size=n)
    weights = rng.exponential(size=n)
    for k in THREADS:
        with num_threads(k):
            op = CSCOperator(indptr, indices, data, n)
            np.testing.assert_allclose(op.matvec(w), X @ w, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(op.rmatvec(r), X.T @ r, rtol=1e-12, atol=1e-12)
            Xa = np.hstack([X, -np.ones((n, 1))])
            np.testing.assert_allclose(op.augmented_gram(weights),
                                       Xa.T @ (weights[:, None] * Xa), rtol=1e-11,
                                       atol=1e-11)
        assert op._row_ranges() is None


def _solve_bytes(indptr, indices, data, y, solver, loss, n_classes=None,
                 sample_weight=None):
    datafit = make_datafit(indptr, indices, data, y, 2.0, loss=loss,
                           n_classes=n_classes, sample_weight=sample_weight)
    p = len(indptr) - 1
    K = datafit.n_outputs
    block_ptr = np.array([0, 4, 8, p], dtype=np.int64) * K
    result = solve(datafit, block_ptr, solver=solver, max_iter=60)
    return as_bytes((result.coef, np.asarray(result.bias, dtype=np.float64),
                     np.asarray(result.history)))


@pytest.mark.parametrize("solver,loss,classes", [
    ("newton", "logistic", None), ("newton", "squared-hinge", None),
    ("apg", "logistic", None), ("apg", "logistic", 3), ("apg", "squared-hinge", 3)])
def test_whole_solve_same_bytes(solver, loss, classes, rng):
    n = 2 * CHUNK + 7
    p = 12
    indptr, indices, data = random_csc(rng, n, p, density=0.1)
    X = dense(indptr, indices, data, n)
    score = X[:, 1:5].sum(axis=1) + 0.3 * rng.standard_normal(n)
    if classes is None:
        y = np.where(score > np.median(score), 1.0, -1.0)
    else:
        y = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
    weights = rng.exponential(size=n)
    for sample_weight in (None, weights):
        with num_threads(1):
            expected = _solve_bytes(indptr, indices, data, y, solver, loss, classes,
                                    sample_weight)
        for k in THREADS[1:]:
            with num_threads(k):
                assert _solve_bytes(indptr, indices, data, y, solver, loss, classes,
                                    sample_weight) == expected


# -- threads and processes ----------------------------------------------------------
def test_parallel_kernels_from_concurrent_threads(rng):
    n = 3 * CHUNK + 1
    indptr, indices, data = random_csc(rng, n, 10, density=0.1)
    weights = rng.exponential(size=n)
    w = rng.normal(size=10)
    with num_threads(1):
        expected = as_bytes(_operator_results(indptr, indices, data, n, w,
                                              weights, weights))
    results = []

    def work():
        for _ in range(3):
            results.append(as_bytes(_operator_results(indptr, indices, data, n, w,
                                                      weights, weights)))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 9 and all(r == expected for r in results)


_CHILD_SCRIPT = textwrap.dedent("""
    import os, sys, threading
    import numpy as np
    from ultrafs.solvers.operators import CSCOperator
    n = 200000
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(n, 40000, replace=False)).astype(np.int32)
    op = CSCOperator(np.array([0, 40000], np.int64), rows, np.ones(40000), n)
    w = np.ones(n)
    expected = op.augmented_gram(w).tobytes()   # starts the threading layer
    mode = sys.argv[1]
    if mode == "fork":
        pid = os.fork()
        if pid == 0:
            child = CSCOperator(op.indptr, op.indices, op.data, n)
            ok = child.augmented_gram(w).tobytes() == expected
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    results = []
    def work():
        for _ in range(20):
            fresh = CSCOperator(op.indptr, op.indices, op.data, n)
            results.append(fresh.augmented_gram(w).tobytes() == expected)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sys.exit(0 if all(results) and len(results) == 80 else 4)
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
@pytest.mark.skipif(MAX_THREADS < 2, reason="numba allows one thread here")
def test_forked_child_runs_serial_kernels():
    """GNU OpenMP aborts a forked child that launches a parallel region."""
    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    proc = subprocess.run([sys.executable, "-c", _CHILD_SCRIPT, "fork"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(MAX_THREADS < 2, reason="numba allows one thread here")
def test_workqueue_layer_with_concurrent_threads():
    """The workqueue layer aborts on concurrent launches: they must not happen."""
    env = dict(os.environ, NUMBA_NUM_THREADS="2", NUMBA_THREADING_LAYER="workqueue")
    proc = subprocess.run([sys.executable, "-c", _CHILD_SCRIPT, "threads"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("binary", [False, True])
def test_pair_columns_parallel_same_bytes(rng, binary):
    """The degree-2 materialisation over threads makes the serial arrays:
    linear, square and cross terms, empty columns and absent sources."""
    from ultrafs.kernels.pair_columns import pair_columns, pair_columns_parallel

    n, p = 3000, 40
    indptr, indices, data = random_csc(rng, n, p)
    if binary:
        data = np.zeros(0)
    t = 300
    first = rng.integers(-1, p, t).astype(np.int64)
    second = rng.integers(-2, p, t).astype(np.int64)
    second[::5] = first[::5]                                  # squares
    scale = rng.choice([0.5, 1.0, 3.0], t)
    args = (indptr, indices, data, first, second, scale)
    same_for_all_threads(pair_columns(*args), lambda: pair_columns_parallel(*args))


@pytest.mark.parametrize("constant", [False, True])
def test_rmatvec_by_ranges_of_many_waves(rng, constant):
    """More ranges of rows than one wave of partial sums (the parts of every
    column still added in range order): the same bytes from the serial and
    threaded kernels under every thread count, close to the dense product;
    long, short and empty columns."""
    n = 40 * 4096 + 17
    dense_rows = np.arange(n, dtype=np.int32)
    columns = [dense_rows, np.sort(rng.choice(n, 50, replace=False)).astype(np.int32),
               dense_rows[::2], np.zeros(0, np.int32), dense_rows[: 3 * 4096]]
    indptr = np.r_[0, np.cumsum([len(c) for c in columns])].astype(np.int64)
    indices = np.concatenate(columns)
    values = rng.choice([1.0, -2.5, 3.0], size=len(columns))
    data = (np.repeat(values, np.diff(indptr)) if constant
            else rng.normal(size=len(indices)))
    colval = values.astype(np.float64) if constant else NO_VALUES
    r = rng.normal(size=n)
    bounds = so.row_ranges(n)
    starts, ok = so.csc_row_range_starts(indptr, indices, bounds)
    assert ok and len(bounds) - 1 > so._RMATVEC_WAVE
    kernel_data = data[:0] if constant else data
    serial = so.csc_rmatvec_ranges(indptr, indices, kernel_data, colval, r, 1, starts,
                                   bounds)
    X = dense(indptr, indices, data, n)
    np.testing.assert_allclose(serial, X.T @ r, rtol=1e-10, atol=1e-9)
    same_for_all_threads(serial, lambda: so.csc_rmatvec_ranges_parallel(
        indptr, indices, kernel_data, colval, r, 1, starts, bounds))
    K = 3
    R = rng.normal(size=(n, K))
    multi = so.csc_rmatvec_ranges(indptr, indices, data, NO_VALUES, R.ravel(), K, starts,
                                  bounds)
    np.testing.assert_allclose(multi.reshape(-1, K), X.T @ R, rtol=1e-10, atol=1e-9)
    same_for_all_threads(multi, lambda: so.csc_rmatvec_ranges_parallel(
        indptr, indices, data, NO_VALUES, R.ravel(), K, starts, bounds))
