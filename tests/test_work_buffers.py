"""Per-thread work buffers of block reads (``ultrafs/store/work_buffers.py``)."""

import threading

import numpy as np
import pytest

from ultrafs.store.work_buffers import WorkBuffers, thread_work


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64, np.float32, np.float64])
def test_take_gives_typed_views_that_grow_and_are_reused(dtype):
    work = WorkBuffers()
    a = work.take("x", dtype, 10)
    assert a.dtype == dtype and a.shape == (10,) and a.flags.writeable
    a[:] = 3
    b = work.take("x", dtype, 12)               # within the quarter of slack: same memory
    assert np.shares_memory(a, b) and b.shape == (12,)
    c = work.take("x", dtype, 1000)             # grows: new memory
    assert c.shape == (1000,) and not np.shares_memory(a, c)
    assert work.take("x", dtype, 0).shape == (0,)
    assert not np.shares_memory(work.take("y", dtype, 5), work.take("x", dtype, 5))
    assert work.nbytes >= 1000 * np.dtype(dtype).itemsize


def test_large_requests_are_not_kept(monkeypatch):
    from ultrafs.store import work_buffers

    monkeypatch.setattr(work_buffers, "RETAIN_BYTES", 1000)
    work = WorkBuffers()
    small = work.take("x", np.int64, 100)              # 800 bytes: kept
    big = work.take("x", np.int64, 200)                # 1600 bytes: fresh, not kept
    assert big.shape == (200,) and not np.shares_memory(small, big)
    assert np.shares_memory(work.take("x", np.int64, 100), small)
    assert work.nbytes <= 1000


def test_each_thread_has_its_own_buffers():
    seen = []

    def grab():
        seen.append(thread_work())

    threads = [threading.Thread(target=grab) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    grab()
    assert len({id(work) for work in seen}) == 4
    assert thread_work() is thread_work()


def test_chunk_reader_ignores_an_unfit_buffer(tmp_path):
    """A reader fills ``out`` only when its dtype and length fit (a foreign
    store may keep 64-bit rows); otherwise it returns a fresh array."""
    import scipy.sparse as sp

    from ultrafs.store import open_store
    from ultrafs.store.writers.zarr_writer import write_store

    X = sp.random(30, 50, density=0.2, format="csc", random_state=0, dtype=np.float32)
    y = np.arange(30) % 2
    path = tmp_path / "s.zarr"
    write_store(path, X, y)
    store = open_store(path)
    reader = store._meta().readers["indices"]
    whole = reader.read(0, X.nnz)
    np.testing.assert_array_equal(whole, X.indices)
    for out in (np.zeros(X.nnz, np.int64), np.zeros(X.nnz - 1, np.int32)):
        got = reader.read(0, X.nnz, out)
        assert not np.shares_memory(got, out)
        np.testing.assert_array_equal(got, X.indices)
    out = np.zeros(X.nnz + 7, np.int32)
    got = reader.read(0, X.nnz, out)
    assert np.shares_memory(got, out)
    np.testing.assert_array_equal(got, X.indices)
