"""Nesting depth of the events of one track, and their order by (depth, start).

Same rule as `analysis/events/nesting.py` (closes before opens at one instant; among opens at one
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
nesting (the Python tracer's) are checked for exactly as `analysis/events/nesting.py` does (in a
properly nested track every close leaves the count at the closing event's own depth) and then
take the depth that module gives them, so the trace and the analysis agree on every event.

Both cases are the depth a stack gives (an event's parent is the nearest earlier one, in start
order, whose close is not before its own): the compiled `_nesting.depth_order` (analysis/
events/_nesting.c, built with the package when a C compiler is there) computes exactly that in one
O(n) pass and orders by depth with a counting sort: on the 20M-event capture's busiest thread
(18M events) 0.1 s instead of 5.4 s here. The numpy version below stays the reference (the
tests compare both on random tracks) and the fallback.
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.events.nesting import (  # noqa: F401  (PURE_NESTING_ENV: re-exported)
    PURE_NESTING_ENV,
    compiled_pass,
    stack_nesting,
    start_order,
)


def compiled_nesting_available() -> bool:
    return compiled_pass(False) is not None


def depth_order(start_ps: np.ndarray, end_ps: np.ndarray, *, pure: bool | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """(order, depth): the permutation sorting events by (depth, start, longer first), and the
    depth of each event in that order."""
    order, counts = nesting_order(start_ps, end_ps, pure=pure)
    return order, np.repeat(np.arange(len(counts), dtype=np.int32), counts)


def nesting_order(start_ps: np.ndarray, end_ps: np.ndarray, *, pure: bool | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(order, counts): the permutation sorting events by (depth, start, longer first), and
    how many events each depth holds (int64 per depth, from 0).

    `pure` forces (True) or forbids (False) the numpy version; None picks the compiled one when
    built, unless TB_PROFILE_PURE_NESTING=1."""
    n = len(start_ps)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    compiled = compiled_pass(pure) if n < 2**31 else None
    if compiled is not None:
        start_ps = np.ascontiguousarray(start_ps, np.int64)
        end_ps = np.ascontiguousarray(end_ps, np.int64)
    # a producer's line is usually in start order already: no sort, no copy
    ordered = compiled is not None and compiled.in_start_order(start_ps, end_ps)
    by_start = None if ordered else start_order(start_ps, end_ps)
    s = start_ps if by_start is None else start_ps[by_start]
    e = end_ps if by_start is None else end_ps[by_start]
    if compiled is not None:
        order = np.empty(n, np.int64)
        counts = np.array(compiled.depth_order(np.ascontiguousarray(s), np.ascontiguousarray(e),
                                               order), np.int64)
    else:
        order, counts = _numpy_nesting_order(s, e)
    return (order if by_start is None else by_start[order]), counts


def nesting_order_into(start_ps: np.ndarray, end_ps: np.ndarray, name_id: np.ndarray,
                       start_out: np.ndarray, end_out: np.ndarray, name_out: np.ndarray, *,
                       durations: bool = False, order_out: np.ndarray | None = None,
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """`nesting_order`, and the events' starts, ends and names (int32) written in that order
    into the given contiguous outputs, in the same compiled pass (no gather per column);
    None, with nothing written, where that pass does not apply (the numpy version chosen,
    events not in start order): then order and gather as usual.

    With `durations`, `end_ps` holds each event's duration (a decoded line's column: its ends
    are not made first, 8 bytes of fresh memory per event fewer). `order_out` (contiguous
    int32 or int64) receives the order, returned as is (the index's int32 source rows: no
    int64 order made and copied)."""
    n = len(start_ps)
    compiled = compiled_pass()
    outputs = (start_out, end_out, name_out) + (() if order_out is None else (order_out,))
    if (compiled is None or n >= 2**31 or not all(a.flags.c_contiguous for a in outputs)
            or (order_out is not None and order_out.dtype not in (np.int32, np.int64))):
        return None
    start_ps = np.ascontiguousarray(start_ps, np.int64)
    end_ps = np.ascontiguousarray(end_ps, np.int64)
    # by (start, end descending) is by (start, duration descending): durations check the same
    if not compiled.in_start_order(start_ps, end_ps):
        return None
    order = np.empty(n, np.int64) if order_out is None else order_out
    counts = compiled.depth_order(start_ps, end_ps, order, np.ascontiguousarray(name_id, np.int32),
                                  start_out, end_out, name_out, durations)
    return order, np.array(counts, np.int64)


def _numpy_nesting_order(s: np.ndarray, end_ps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`nesting_order` of events already in start order, in numpy (the reference)."""
    n = len(s)
    close_by_start = _closes(s, end_ps)
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
        close_by_start = _closes(s, end_ps)
        depth = stack_nesting(np.arange(n), close_by_start)[1].astype(np.int64)
        del close_by_start
    max_depth = int(depth.max())
    small = depth.astype(np.int16 if max_depth < 2**15 else np.int32)
    by_depth = np.argsort(small, kind="stable")  # radix sort for int16
    return by_depth, np.bincount(small, minlength=max_depth + 1).astype(np.int64)


def _closes(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Twice each close time; a zero-length event closes half a ps after it opens."""
    close = 2 * e
    zero = e == s
    close[zero] = 2 * s[zero] + 1
    return close
