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

Both are the numpy reference. Where the optional compiled pass is built (analysis/events/_nesting.c,
`depth_parent`), one stack walk over a line in start order gives the same depth and parent for
either kind of line, in O(n) with no temporaries (5 lines of 2.4M events: 0.68 s in numpy);
TB_PROFILE_PURE_NESTING=1 or `pure=True` keeps the numpy version.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_profile_plugin.analysis.events.column_sizes import narrowest_int
from tb_profile_plugin.request_budget import checkpoint

try:  # the optional compiled stack pass, built with the package where a C compiler is
    from tb_profile_plugin.analysis.events import _nesting  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - exercised where no compiler built it
    _nesting = None

#: Set to 1 to use the numpy version even where the compiled one is built.
PURE_NESTING_ENV = "TB_PROFILE_PURE_NESTING"


def compiled_pass(pure: bool | None = None) -> Any:
    """The compiled module (analysis/events/_nesting.c) where it is to be used, else None:
    `pure` True forces numpy, False the compiled pass where built; None picks it unless
    TB_PROFILE_PURE_NESTING=1."""
    if pure or _nesting is None or (pure is None and os.environ.get(PURE_NESTING_ENV) == "1"):
        return None
    return _nesting


@dataclass(frozen=True)
class Nesting:
    depth: np.ndarray  # int8/16/32 per event, the narrowest that holds the deepest
    #: per event, the enclosing event (-1 at top level): int32 (int64 from 2^31 events)
    parent: np.ndarray


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
    start_ps: np.ndarray, end_ps: np.ndarray, line_bounds: np.ndarray, *,
    pure: bool | None = None
) -> Nesting:
    """Depth and parent of every event; events of line k are [line_bounds[k], line_bounds[k+1]).

    `pure` forces (True) or forbids (False) the numpy version; None picks the compiled pass
    where it is built, unless TB_PROFILE_PURE_NESTING=1."""
    n = len(start_ps)
    compiled = compiled_pass(pure) is not None and n < 2**31
    # The compiled pass writes every event of every line (fresh pages, never zeroed first).
    whole = len(line_bounds) > 0 and int(line_bounds[0]) == 0 and int(line_bounds[-1]) == n
    depth = np.empty(n, np.int32) if compiled and whole else np.zeros(n, np.int32)
    # int32 parents (4 bytes per event less, kept for the analysis' life) below 2^31 events.
    parent_type = np.dtype(np.int32 if n < 2**31 - 1 else np.int64)
    parent: np.ndarray = (np.empty(n, parent_type) if compiled and whole
                          else np.full(n, -1, parent_type))
    for k in range(len(line_bounds) - 1):
        lo, hi = int(line_bounds[k]), int(line_bounds[k + 1])
        if hi > lo:
            checkpoint()
            if compiled:
                _stack_line(start_ps[lo:hi], end_ps[lo:hi], depth[lo:hi], parent[lo:hi], lo)
                continue
            _nest_line(start_ps[lo:hi], end_ps[lo:hi], depth[lo:hi], parent[lo:hi])
            parent[lo:hi][parent[lo:hi] >= 0] += lo
    # The narrowest type the depths fit (real lines nest a few dozen deep: one byte, not four;
    # the nesting is kept for the analysis' life).
    return Nesting(depth.astype(narrowest_int(int(depth.max(initial=0))), copy=False), parent)


def compiled_parent(parent: np.ndarray) -> np.ndarray:
    """`parent` as the compiled climbs read it: contiguous int32 or int64, no copy of either."""
    wide = parent.dtype.itemsize > 4 or parent.dtype.kind != "i"
    return np.ascontiguousarray(parent, np.int64 if wide else np.int32)


def _stack_line(s: np.ndarray, e: np.ndarray, depth: np.ndarray, parent: np.ndarray,
                offset: int) -> None:
    """`_nest_line` by the compiled stack pass, parents written as `offset` + line position:
    one walk in start order (a line usually is in it already: no sort, no copy)."""
    s = np.ascontiguousarray(s, np.int64)
    e = np.ascontiguousarray(e, np.int64)
    order = None if _nesting.in_start_order(s, e) else start_order(s, e)
    if order is None:
        _nesting.depth_parent(s, e, depth, parent, offset)
        return
    local_depth = np.empty(len(s), np.int32)
    local_parent = np.empty(len(s), np.int64)
    _nesting.depth_parent(np.ascontiguousarray(s[order]), np.ascontiguousarray(e[order]),
                          local_depth, local_parent)
    depth[order] = local_depth
    has = local_parent >= 0
    local_parent[has] = order[local_parent[has]] + offset
    parent[order] = local_parent


def _nest_line(s: np.ndarray, e: np.ndarray, depth: np.ndarray, parent: np.ndarray) -> None:
    """Fills `depth` and `parent` (line-local indices) of one line's events.

    In start order (longer first at equal starts) the opens are already in boundary order and
    the closes nearly so: with close keys 4·end (a zero-length event: 4·start + 2) and open keys
    4·start + 1, all boundaries are two sorted runs that one stable sort merges in linear time.
    The depth of the i-th open is i minus the closes before it, and the line nests properly
    when the count just after each close (the opens before it minus the closes up to it, ties
    in start order) is the closing event's own depth. The parent of an open at depth d is then
    the last earlier open at depth d - 1: the opens ordered by (depth, position) (a radix sort
    of small depths) merged with each child's wanted (d - 1, own position). No binary search
    and no sort of the 2m boundaries: at 10M events those cost seconds in cache misses."""
    count = len(s)
    order = start_order(s, e)  # start ascending, longer first (None: already so)
    if order is not None:
        s, e = s[order], e[order]
    close_t = np.where(e == s, s * 2 + 1, e * 2)  # doubled close times, in start order
    del e
    open_key = s * 4 + 1
    del s
    by_close = np.argsort(close_t, kind="stable")  # ties keep start order, as boundaries do
    # All boundaries in time order: two sorted runs merged by one stable sort (linear); opens
    # are odd, closes even, so the k-th odd value is the k-th open and the k-th even one the
    # k-th close, and their positions count what came before them.
    merged = np.concatenate([close_t[by_close] * 2, open_key])
    del open_key
    merged.sort(kind="stable")
    is_open = (merged & 1).astype(bool)
    del merged
    ramp = np.arange(count, dtype=np.int64)
    # Depth of the i-th open: i minus the closes before it.
    local = np.flatnonzero(is_open)
    local -= ramp
    local_depth = ramp.astype(np.int32)
    local_depth -= local.astype(np.int32)
    del local
    # Count just after the r-th close: opens before it minus r + 1.
    after_close = np.flatnonzero(~is_open)
    del is_open
    after_close -= 2 * ramp + 1
    del ramp
    nested = np.array_equal(after_close, local_depth[by_close])
    del after_close, by_close
    if not nested:  # some events overlap without nesting: nest this line as a stack would
        by_start = np.arange(count) if order is None else order
        line_parent, line_depth = stack_nesting(by_start, close_t)
        depth[:] = line_depth
        parent[:] = line_parent
        return
    del close_t
    # Parent: the last open before i at depth d - 1, found by merging the opens ordered by
    # (depth, position) with the wanted (depth - 1, own position) of every child.
    deepest = int(local_depth.max()) if count else 0
    small = local_depth.astype(np.int8 if deepest < 2**7 else np.int16 if deepest < 2**15
                                else np.int32)
    by_depth = np.argsort(small, kind="stable")  # a radix sort for 8- and 16-bit depths
    del small
    depth_sorted = local_depth[by_depth].astype(np.int64)
    stride = 2 * (count + 1)
    child_at = np.flatnonzero(depth_sorted)  # depth-0 opens lead the order
    merged = np.concatenate([depth_sorted * stride + 2 * by_depth,  # even: opens
                             (depth_sorted[child_at] - 1) * stride + 2 * by_depth[child_at] + 1])
    del depth_sorted
    merged.sort(kind="stable")  # two sorted runs, no equal values
    # The k-th odd value is the k-th child; the opens before it end with its candidate.
    at = np.flatnonzero((merged & 1).astype(bool))
    del merged
    at -= np.arange(1, len(child_at) + 1)
    children = by_depth[child_at]
    del child_at
    candidate = by_depth[np.maximum(at, 0)]
    ok = (at >= 0) & (local_depth[candidate] == local_depth[children] - 1)
    local_parent = np.full(count, -1, np.int64)
    local_parent[children[ok]] = candidate[ok]
    if order is None:
        depth[:] = local_depth
        parent[:] = local_parent
        return
    depth[order] = local_depth
    has = local_parent >= 0
    local_parent[has] = order[local_parent[has]]
    parent[order] = local_parent


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


def under(mask: np.ndarray, parent: np.ndarray, *, pure: bool | None = None) -> np.ndarray:
    """Per event: some strict ancestor (by `parent`) is in `mask`.

    The compiled pass (analysis/events/_nesting.c `under`, where built) climbs each chain
    once, O(n); the numpy walk below is the reference (`pure`, TB_PROFILE_PURE_NESTING=1):
    level by level, which at 20M events and a dozen levels is 3 s of gathers."""
    found = np.zeros(len(mask), bool)
    if not mask.any():  # (most masks are a rare event name: nothing to walk)
        return found
    compiled = compiled_pass(pure)
    if compiled is not None:
        compiled.under(np.ascontiguousarray(mask, np.bool_).view(np.uint8),
                       compiled_parent(parent), found.view(np.uint8))
        return found
    # The events still walking and, aligned with them, the ancestor each reaches next: compact
    # arrays, so a level reads only its own events; an event that found one stops walking.
    live = np.flatnonzero(parent >= 0)
    above = parent[live]
    for level in range(WALK_LEVELS):
        if not len(live):
            return found
        if level >= _WALK_CHECK_LEVEL and 2 * len(live) > len(mask):
            break  # most events are deeper still: a runaway chain, finished by jumping
        checkpoint()
        hit = mask[above]
        found[live[hit]] = True
        above = parent[above]
        keep = (above >= 0) & ~hit
        live, above = live[keep], above[keep]
    if len(live):  # deeper than WALK_LEVELS: the rest of each chain in n·log(depth)
        beyond = ancestor_reduce(mask.astype(bool), parent, np.logical_or, False)
        found[live] |= mask[above] | beyond[above]
    return found
