"""Nesting depth of the events of one track, and their order by (depth, start).

Same rule as `analysis/nesting.py` (closes before opens at one instant; among opens at one
instant the longer first; a zero-length event closes half a picosecond after it opens), but
depth only, in three vectorised steps instead of a sort over both boundaries:

    order   = events by (start ascending, end descending)
    close   = 2*end, or 2*start + 1 for a zero-length event (sorted)
    depth_i = i - #(close <= 2*start_i)

Every close counted for event i belongs to an event placed before i in `order` (a close at or
before i's open time starts no later than i, and one starting at the same instant that is
already closed would have to be zero-length, whose close comes after the open), so the
difference is the number of events still open when i opens.

That count is the nesting depth when the events nest properly. Events that overlap without
nesting (the Python tracer's) are checked for exactly as `analysis/nesting.py` does (in a
properly nested track every close leaves the count at the closing event's own depth) and then
take the depth that module gives them, so the trace and the analysis agree on every event.
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.nesting import stack_nesting, start_order


def depth_order(start_ps: np.ndarray, end_ps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, depth): the permutation sorting events by (depth, start, longer first), and the
    depth of each event in that order."""
    n = len(start_ps)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    by_start = start_order(start_ps, end_ps)
    s = start_ps if by_start is None else start_ps[by_start]
    close_by_start = _closes(s, end_ps if by_start is None else end_ps[by_start])
    # closes in time order; at one instant the inner (later-opened) event closes first: a
    # stable sort of the reversed closes (timsort: fast on the nearly sorted closes of a track)
    close_order = np.argsort(close_by_start[::-1], kind="stable")
    np.subtract(n - 1, close_order, out=close_order)
    close = close_by_start[close_order]
    del close_by_start  # five n-element arrays at most from here (made again if needed)
    twice_start = 2 * s
    depth = np.searchsorted(close, twice_start, "right")
    np.subtract(np.arange(n, dtype=np.int64), depth, out=depth)
    open_before_close = np.searchsorted(twice_start, close, "left")
    del twice_start
    open_before_close -= np.arange(1, n + 1)
    nested = np.array_equal(open_before_close, np.take(depth, close_order, out=close))
    del open_before_close, close_order, close
    if not nested:
        close_by_start = _closes(s, end_ps if by_start is None else end_ps[by_start])
        depth = stack_nesting(np.arange(n), close_by_start)[1].astype(np.int64)
        del close_by_start
    max_depth = int(depth.max())
    small = depth.astype(np.int16 if max_depth < 2**15 else np.int32)
    by_depth = np.argsort(small, kind="stable")  # radix sort for int16
    order = by_depth if by_start is None else by_start[by_depth]
    return order, small[by_depth].astype(np.int32)


def _closes(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Twice each close time; a zero-length event closes half a ps after it opens."""
    close = 2 * e
    zero = e == s
    close[zero] = 2 * s[zero] + 1
    return close
