"""Which memory snapshots to draw: every one of a range, or a min/max reduction of it.

A chart needs at most ~1000 points. The reference keeps the largest of each of 1000
equal-count boxes (a max filter), which hides how far memory drops between peaks. Here the
range's snapshots are cut into equal-count slices and each slice keeps both its largest
and its smallest stack + heap (of equal ones the last largest and the first smallest), plus
the range's first and last snapshots and the allocator's peak when it lies in the range:

    in use │   ▲           ▲ peak (always kept)
           │  ╱ ╲   ▲     ╱╲
           │ ╱   ▼─╱ ╲───╱  ╲    kept per slice: its max ▲ and min ▼
           └──┴────┴────┴────┴── slices of equal snapshot count

So the drawn line reaches every slice's extremes, and the peak is the exact snapshot the
summary names. Zooming into a range of at most `max_points` snapshots gives all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_TIMELINE_POINTS = 1000


@dataclass(frozen=True)
class TimelineSample:
    """The snapshot indices to draw (sorted), and how many the range holds in all."""

    indices: np.ndarray  # int64
    num_in_range: int

    @property
    def sampled(self) -> bool:
        return len(self.indices) < self.num_in_range


def in_range(time_ps: np.ndarray, start_ps: int | None, end_ps: int | None) -> np.ndarray:
    """Indices of the snapshots with start_ps <= time <= end_ps (None: unbounded); sorted."""
    lo = 0 if start_ps is None else int(np.searchsorted(time_ps, start_ps, "left"))
    hi = len(time_ps) if end_ps is None else int(np.searchsorted(time_ps, end_ps, "right"))
    return np.arange(lo, max(lo, hi), dtype=np.int64)


def sample_timeline(
    in_use_bytes: np.ndarray, chosen: np.ndarray, peak_index: int,
    max_points: int = MAX_TIMELINE_POINTS,
) -> TimelineSample:
    """At most `max_points` of the `chosen` snapshots (sorted indices), extremes kept."""
    n = len(chosen)
    if n <= max_points:
        return TimelineSample(chosen, n)
    slices = max(1, (max_points - 3) // 2)
    position = np.arange(n)
    slice_of = position * slices // n
    values = in_use_bytes[chosen]
    # By slice, then value, then position: a slice's first row is its (first) minimum,
    # its last row its (last) maximum.
    order = np.lexsort((position, values, slice_of))
    ends = np.flatnonzero(np.diff(slice_of[order], append=slices))
    starts = np.concatenate(([0], ends[:-1] + 1))
    # Of equal minimums keep the first: the rows of a slice's minimum value are in position
    # order, so `starts` already points at the first one.
    keep = np.concatenate((order[starts], order[ends], [0, n - 1]))
    picked = chosen[np.unique(keep)]
    if chosen[0] <= peak_index <= chosen[-1]:
        picked = np.union1d(picked, [peak_index])
    return TimelineSample(picked.astype(np.int64), n)
