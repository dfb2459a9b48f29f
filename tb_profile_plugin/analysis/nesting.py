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
d - 1 before it on the same line: one `searchsorted` per depth level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Nesting:
    depth: np.ndarray  # int32 per event
    parent: np.ndarray  # int64 per event: index of the enclosing event, -1 at top level


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
        by_start = np.lexsort((-e, s))  # start ascending, longer first
        s_o, e_o = s[by_start], e[by_start]
        close_t = np.where(e_o == s_o, s_o * 2 + 1, e_o * 2)
        keys = np.concatenate([close_t * 2, s_o * 4 + 1])  # close (…0) before open (…1)
        count = hi - lo
        boundary = np.argsort(keys, kind="stable")
        delta = np.where(boundary < count, -1, 1)
        running = np.cumsum(delta)
        is_open = boundary >= count
        opened = by_start[boundary[is_open] - count]  # local event index, in boundary order
        depth[lo + opened] = running[is_open] - 1
        open_order_parts.append(lo + opened)
    if not open_order_parts:
        return Nesting(depth, parent)
    open_order = np.concatenate(open_order_parts)  # global event ids in global boundary order
    open_depth = depth[open_order]
    max_depth = int(open_depth.max()) if len(open_depth) else 0
    positions = np.arange(len(open_order))
    for d in range(1, max_depth + 1):
        current = positions[open_depth == d]
        previous = positions[open_depth == d - 1]
        if len(current) == 0 or len(previous) == 0:
            continue
        k = np.searchsorted(previous, current) - 1
        valid = k >= 0
        candidate = open_order[previous[np.maximum(k, 0)]]
        child = open_order[current]
        same_line = np.searchsorted(line_bounds, candidate, "right") == np.searchsorted(
            line_bounds, child, "right")
        ok = valid & same_line
        parent[child[ok]] = candidate[ok]
    return Nesting(depth, parent)


def under(mask: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per event: some strict ancestor (by `parent`) is in `mask`. One pass per nesting level."""
    found = np.zeros(len(mask), bool)
    ancestor = parent.copy()
    live = np.flatnonzero(ancestor >= 0)
    while len(live):
        found[live] |= mask[ancestor[live]]
        ancestor[live] = parent[ancestor[live]]
        live = live[ancestor[live] >= 0]
    return found
