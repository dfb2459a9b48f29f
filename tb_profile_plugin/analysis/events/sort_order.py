"""`lexsort((time, group))` as one stable sort of a single int64 key.

numpy's `lexsort` sorts by each key in turn (a merge sort per key, no use of runs), while a
stable `argsort` of int64 (timsort) runs in near-linear time over runs already in order, as the
events of a line are in time and their groups rise with it: 3-4x less CPU on 8M events of a
real layout (docs/benchmarks.md, "Device-heavy captures"). Both sorts are stable, so the
order is the same permutation; where the combined key would not fit in int64, `lexsort` is
used.
"""

from __future__ import annotations

import numpy as np

_LIMIT = 2**62


def group_time_order(group: np.ndarray, time: np.ndarray) -> np.ndarray:
    """The permutation `np.lexsort((time, group))`: by group, then time, ties in row order."""
    if len(group) == 0:
        return np.zeros(0, np.intp)
    g_low, g_high = int(group.min()), int(group.max())
    t_low, t_high = int(time.min()), int(time.max())
    span = t_high - t_low + 1
    if (g_high - g_low + 1) * span >= _LIMIT:
        return np.lexsort((time, group))
    key = group.astype(np.int64)  # (a copy: the caller's column is left alone)
    if g_low:
        key -= g_low
    key *= span
    key += time
    if t_low:
        key -= t_low
    return np.argsort(key, kind="stable")
