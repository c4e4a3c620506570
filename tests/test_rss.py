"""Per-phase memory figures: ultrafs.rss and FGM's history."""

import sys

import numpy as np
import pytest

from ultrafs.api import select
from ultrafs.rss import current_rss_mb, peak_rss_mb


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux figures")
def test_rss_figures_are_plausible():
    before = peak_rss_mb()
    block = np.ones(64 * 2**20 // 8)          # 64 MiB touched
    now = current_rss_mb()
    after = peak_rss_mb()
    assert after >= before
    assert now >= 64 and after >= now - 1
    del block


def test_history_records_the_peak_after_every_phase(rng):
    X = rng.random((120, 15))
    y = np.where(X[:, 0] + X[:, 1] > 1, 1, -1)
    model = select(X, y, B=2, max_iter=3)
    peaks = []
    for record in model.history:
        if peak_rss_mb() is None:
            assert "solve_peak_rss_mb" not in record
            continue
        phase = [record["score_peak_rss_mb"], record["materialize_peak_rss_mb"],
                 record["solve_peak_rss_mb"]]
        assert all(p > 0 for p in phase) and phase == sorted(phase)
        peaks.extend(phase)
    assert peaks == sorted(peaks)
