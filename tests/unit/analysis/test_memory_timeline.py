"""The timeline reduction: at most 1000 points, the peak exact, every slice's extremes kept."""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.memory.timeline import (
    MAX_TIMELINE_POINTS,
    in_range,
    sample_timeline,
)


def test_short_ranges_are_kept_whole() -> None:
    values = np.arange(10, dtype=np.int64)
    sample = sample_timeline(values, np.arange(3, 8), peak_index=9)
    assert sample.indices.tolist() == [3, 4, 5, 6, 7] and not sample.sampled


def test_long_series_keeps_peak_and_slice_extremes() -> None:
    rng = np.random.default_rng(7)
    n = 25_000
    values = rng.integers(0, 1_000_000, n)
    values[12_345] = 5_000_000  # the peak
    values[20_000] = -1  # the deepest dip
    values[777] = 5_000_000  # an equal height earlier: the peak index given wins anyway
    chosen = np.arange(n)
    sample = sample_timeline(values, chosen, peak_index=12_345)
    kept = sample.indices
    assert sample.sampled and sample.num_in_range == n
    assert len(kept) <= MAX_TIMELINE_POINTS
    assert np.all(np.diff(kept) > 0)
    assert {0, n - 1, 12_345, 20_000} <= set(kept.tolist())
    # Every slice keeps its own largest and smallest value.
    slices = (MAX_TIMELINE_POINTS - 3) // 2
    slice_of = np.arange(n) * slices // n
    for k in (0, 1, slices // 2, slices - 1):
        members = np.flatnonzero(slice_of == k)
        in_slice = kept[(kept >= members[0]) & (kept <= members[-1])]
        assert values[in_slice].max() == values[members].max()
        assert values[in_slice].min() == values[members].min()


def test_range_selection_is_inclusive() -> None:
    times = np.array([10, 20, 20, 30, 40], np.int64)
    assert in_range(times, 20, 30).tolist() == [1, 2, 3]
    assert in_range(times, None, 15).tolist() == [0]
    assert in_range(times, 41, None).tolist() == []
