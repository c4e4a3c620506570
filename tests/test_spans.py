"""kernels/spans.py: gather_spans against fancy indexing."""

import numpy as np
import pytest

from ultrafs.kernels.spans import gather_spans


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_gather_spans_matches_fancy_indexing(rng, dtype):
    src = (rng.random(200) * 1000).astype(dtype)
    starts = np.array([0, 5, 5, 50, 199, 120], dtype=np.int64)
    lengths = np.array([3, 0, 10, 40, 1, 80], dtype=np.int64)
    out_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    want = np.concatenate([src[s:s + n] for s, n in zip(starts, lengths)])
    out = np.zeros(int(lengths.sum()), dtype=dtype)
    got = gather_spans(src, starts, lengths, out, out_starts)
    assert got is out and out.tobytes() == want.tobytes()
    empty = gather_spans(src, starts[:0], lengths[:0], np.zeros(0, dtype), starts[:0])
    assert len(empty) == 0


def test_first_at_least_matches_searchsorted(rng):
    from ultrafs.kernels.spans import first_at_least

    values = np.sort(rng.integers(0, 20, 50)).astype(np.int32)
    for lo, hi in [(0, 50), (5, 30), (10, 10), (49, 50)]:
        for target in range(-1, 22):
            want = lo + int(np.searchsorted(values[lo:hi], target, side="left"))
            assert first_at_least(values, lo, hi, target) == want
