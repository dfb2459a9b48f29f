"""Nesting of events on each line: depth and parent, without a Python loop per event.

Each event is an open boundary at its start and a close boundary at its end. Sorted by time,
with closes before opens at the same instant (back-to-back events are siblings) and, among
opens at one instant, the longer first (it encloses the shorter), the running sum of +1/-1
is the depth:

    time  ──────────────────────────────────▶
    A [=================]          depth 0
      B [=====]  C [===]           depth 1 (parent A)
           D [=]                   depth 2 (parent B)

A zero-length event closes half a picosecond after it opens, so it nests inside whatever is
open at that instant. The parent of an event at depth d is the latest event opened at depth
d - 1 before it on the same line: one `searchsorted` over the opens keyed by (depth, position),
so deep nesting costs no more than shallow.

Events that overlap without nesting (the Python tracer's `$trace.py __init__` opens before a
`tf.profiler.experimental.Trace` and closes inside it) break that count. Such a line is
found exactly: in a properly nested line every close leaves the running count at the closing
event's own depth. Its events are then nested as a stack would nest them (events by start,
longer first; an event's parent is the latest earlier event that still encloses it), which
is the nearest earlier event, in that order, whose end is not before its end:
`stack_nesting`, a binary search over a sparse table of running maxima.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.request_budget import checkpoint


@dataclass(frozen=True)
class Nesting:
    depth: np.ndarray  # int32 per event
    parent: np.ndarray  # int64 per event: index of the enclosing event, -1 at top level


def start_order(start_ps: np.ndarray, end_ps: np.ndarray) -> np.ndarray | None:
    """The order by (start, end descending, position), or None when the events are in it
    already (a producer's line usually is: no sort, no copy)."""
    step = np.diff(start_ps)
    if not np.any(step < 0):
        tie = step == 0
        if not np.any(end_ps[1:][tie] > end_ps[:-1][tie]):
            return None
        return np.lexsort((-end_ps, start_ps))
    order = np.argsort(start_ps, kind="stable")  # timsort: nearly sorted starts
    s = start_ps[order]
    e = end_ps[order]
    tie = s[1:] == s[:-1]
    if np.any(e[1:][tie] > e[:-1][tie]):
        return np.lexsort((-end_ps, start_ps))
    return order


def compute_nesting(
    start_ps: np.ndarray, end_ps: np.ndarray, line_bounds: np.ndarray
) -> Nesting:
    """Depth and parent of every event; events of line k are [line_bounds[k], line_bounds[k+1])."""
    n = len(start_ps)
    depth = np.zeros(n, np.int32)
    parent = np.full(n, -1, np.int64)
    # Global order of open boundaries (line-major), and each open's depth.
    open_order_parts: list[np.ndarray] = []
    for k in range(len(line_bounds) - 1):
        lo, hi = int(line_bounds[k]), int(line_bounds[k + 1])
        if hi - lo == 0:
            continue
        s, e = start_ps[lo:hi], end_ps[lo:hi]
        order = start_order(s, e)  # start ascending, longer first (None: already so)
        by_start = np.arange(hi - lo) if order is None else order
        s_o, e_o = s[by_start], e[by_start]
        close_t = np.where(e_o == s_o, s_o * 2 + 1, e_o * 2)
        keys = np.concatenate([close_t * 2, s_o * 4 + 1])  # close (…0) before open (…1)
        count = hi - lo
        boundary = np.argsort(keys, kind="stable")
        delta = np.where(boundary < count, -1, 1)
        running = np.cumsum(delta)
        is_open = boundary >= count
        opened = by_start[boundary[is_open] - count]  # local event index, in boundary order
        local_depth = np.empty(count, np.int32)
        local_depth[opened] = running[is_open] - 1
        closed = by_start[boundary[~is_open]]
        if np.array_equal(running[~is_open], local_depth[closed]):
            depth[lo + opened] = local_depth[opened]
            open_order_parts.append(lo + opened)
        else:  # some events overlap without nesting: nest this line as a stack would
            line_parent, line_depth = stack_nesting(by_start, close_t)
            depth[lo:hi] = line_depth
            parent[lo:hi] = np.where(line_parent >= 0, line_parent + lo, -1)
    if not open_order_parts:
        return Nesting(depth, parent)
    open_order = np.concatenate(open_order_parts)  # global event ids in global boundary order
    open_depth = depth[open_order].astype(np.int64)
    # The parent of the open at position p and depth d is the last open before p at depth
    # d - 1: one search over the opens keyed by (depth, position), whatever the depth.
    count = len(open_order)
    key = open_depth * (count + 1) + np.arange(count)
    by_key = np.sort(key)
    child_pos = np.flatnonzero(open_depth > 0)
    wanted = (open_depth[child_pos] - 1) * (count + 1) + child_pos
    k = np.searchsorted(by_key, wanted) - 1
    valid = (k >= 0) & (by_key[np.maximum(k, 0)] // (count + 1) == open_depth[child_pos] - 1)
    candidate = open_order[by_key[np.maximum(k, 0)] % (count + 1)]
    child = open_order[child_pos]
    same_line = np.searchsorted(line_bounds, candidate, "right") == np.searchsorted(
        line_bounds, child, "right")
    ok = valid & same_line
    parent[child[ok]] = candidate[ok]
    return Nesting(depth, parent)


def stack_nesting(by_start: np.ndarray, close_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(parent, depth) per local event of one line, from the events' `by_start` order and
    their doubled close times in that order: the parent of the i-th is the nearest j < i
    whose close is not before its own (what a stack keeps on top once every event that ended
    before it is popped)."""
    n = len(close_t)
    # tables[k][p] = max(close_t[p : p + 2**k])
    tables = [close_t]
    while (1 << len(tables)) <= n:
        prev, half = tables[-1], 1 << (len(tables) - 1)
        tables.append(np.maximum(prev[:-half], prev[half:]))
    index = np.arange(n)
    run = np.zeros(n, np.int64)  # length of the run of closes before i that end before i's
    for k in range(len(tables) - 1, -1, -1):
        checkpoint()
        size = 1 << k
        first = index - run - size  # the block [first, first + size) just left of the run
        ok = first >= 0
        block_max = tables[k][np.maximum(first, 0)]
        grow = ok & (block_max < close_t)
        run[grow] += size
    previous = index - run - 1
    parent_sorted = np.where(previous >= 0, previous, -1)
    parent = np.full(n, -1, np.int64)
    has = parent_sorted >= 0
    parent[by_start[has]] = by_start[parent_sorted[has]]
    depth = ancestor_reduce(np.ones(n, np.int64), parent, np.add, 0).astype(np.int32)
    return parent, depth


def ancestor_reduce(values: np.ndarray, parent: np.ndarray, op: np.ufunc,
                    empty: object) -> np.ndarray:
    """Per node: `op` (an associative ufunc: add, minimum, logical_or ...) over the values of
    its strict ancestors by `parent` (-1: a root), `empty` for a root.

    Pointer jumping: after round r every node knows the reduction over its next 2**r
    ancestors, so the work is n·log(depth), not n·depth: a chain of a million events nested
    in one another costs 21 rounds, not a million."""
    n = len(parent)
    has = parent >= 0
    acc = np.full(n, empty, dtype=values.dtype)
    acc[has] = values[parent[has]]
    nxt = np.where(has, parent, -1)
    live = np.flatnonzero(has)
    while len(live):
        checkpoint()
        # acc[i] covers the ancestors (i, nxt[i]]; acc[far] those after far up to nxt[far]
        # (all of them once nxt[far] is -1). Right sides are read before either write.
        far = nxt[live]
        grown = op(acc[live], acc[far])
        reach = nxt[far]
        acc[live] = grown
        nxt[live] = reach
        live = live[reach >= 0]
    return acc


def nearest_marked(values: np.ndarray, marked: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per node: `values` of its nearest marked ancestor-or-self, -1 where none is marked
    (pointer jumping, n·log(depth) work)."""
    result = np.where(marked, values, -1).astype(np.int64)
    found = marked.astype(bool).copy()
    nxt = parent.astype(np.int64).copy()
    live = np.flatnonzero(~found & (nxt >= 0))
    while len(live):
        checkpoint()
        # Invariant: i and every node strictly between i and nxt[i] are unmarked.
        far = nxt[live]
        ready = found[far]
        reach = nxt[far]
        result[live[ready]] = result[far[ready]]
        found[live[ready]] = True
        rest = live[~ready]
        nxt[rest] = reach[~ready]
        live = rest[nxt[rest] >= 0]
    return result


#: Walks up to this many levels one at a time (cheapest on real, shallow nesting); deeper
#: chains finish by pointer jumping, so the work never grows with depth times events.
WALK_LEVELS = 64
#: From this level on, the walk stops early when more than half the events are still deeper
#: (real nesting never is; a chain of identical events always is).
_WALK_CHECK_LEVEL = 8


def under(mask: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per event: some strict ancestor (by `parent`) is in `mask`."""
    found = np.zeros(len(mask), bool)
    ancestor = parent.copy()
    live = np.flatnonzero(ancestor >= 0)
    for level in range(WALK_LEVELS):
        if not len(live):
            return found
        if level >= _WALK_CHECK_LEVEL and 2 * len(live) > len(mask):
            break  # most events are deeper still: a runaway chain, finished by jumping
        checkpoint()
        found[live] |= mask[ancestor[live]]
        ancestor[live] = parent[ancestor[live]]
        live = live[ancestor[live] >= 0]
    if len(live):  # deeper than WALK_LEVELS: the rest of each chain in n·log(depth)
        beyond = ancestor_reduce(mask.astype(bool), parent, np.logical_or, False)
        found[live] |= mask[ancestor[live]] | beyond[ancestor[live]]
    return found
