"""What the decoder derives from the events: the innermost span holding a time on a thread,
each device event's launching op, fwdbwd flows bound to their spans, steps, allocator events
and kernel details. numpy over columns: sorts and binary searches, a bounded number of
vectorised rounds where a pointer is climbed (never a loop per event)."""

from __future__ import annotations

import numpy as np

#: Rounds of pointer jumping / climbing (each halves what is left on real nestings).
_ROUNDS = 64


class Enclosing:
    """Spans (line, start, end) that answer "the innermost span of line L holding time t"."""

    def __init__(self, line: np.ndarray, start: np.ndarray, end: np.ndarray,
                 index: np.ndarray) -> None:
        order = np.lexsort((-end, start, line))
        self.line, self.start, self.end = line[order], start[order], end[order]
        self.index = index[order]  # the caller's event index of each span
        self.parent = _parents(self.line, self.end)

    def innermost(self, line: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Per query, the caller's index of the innermost span of `line` with start <= t <= end
        (of spans starting at t, the shortest); -1 where none."""
        out = np.full(len(t), -1, np.int64)
        if not len(self.start) or not len(t):
            return out
        times, rank = np.unique(np.concatenate([self.start, t]), return_inverse=True)
        width = np.int64(len(times) + 1)
        key = self.line * width + rank[: len(self.start)]
        query = line * width + rank[len(self.start):]
        pos = np.searchsorted(key, query, side="right") - 1
        pos = np.where((pos >= 0) & (self.line[np.maximum(pos, 0)] == line), pos, -1)
        for _ in range(_ROUNDS):
            open_ = pos >= 0
            outside = open_ & (self.end[np.maximum(pos, 0)] < t)
            if not outside.any():
                break
            pos[outside] = self.parent[pos[outside]]
        else:
            pos[(pos >= 0) & (self.end[np.maximum(pos, 0)] < t)] = -1
        found = pos >= 0
        out[found] = self.index[pos[found]]
        return out


def _parents(line: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Parent of each span sorted by (line, start, -end): the nearest earlier span of its line
    that ends no earlier (pointer jumping: spans skipped end before it, so never hold it)."""
    n = len(end)
    parent = np.arange(-1, n - 1, dtype=np.int64)
    if n:
        parent[1:][line[1:] != line[:-1]] = -1
    for _ in range(_ROUNDS):
        live = np.flatnonzero(parent >= 0)
        short = live[end[parent[live]] < end[live]]
        if not len(short):
            break
        parent[short] = parent[parent[short]]
    else:
        live = np.flatnonzero(parent >= 0)
        parent[live[end[parent[live]] < end[live]]] = -1
    return parent


def join_sorted(keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """values[k] where keys[k] == query (keys unique or the last wins), -1 where no key."""
    out = np.full(len(queries), -1, np.int64)
    if not len(keys) or not len(queries):
        return out
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    pos = np.searchsorted(keys, queries, side="right") - 1
    hit = (pos >= 0) & (keys[np.maximum(pos, 0)] == queries) & (queries >= 0)
    out[hit] = values[pos[hit]]
    return out


def running_max_by_group(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row (already sorted by group, then time): the max of its group's values so far
    (one accumulate per group: groups are allocators, a few)."""
    out = values.copy()
    first: list[int] = (np.flatnonzero(np.r_[True, group[1:] != group[:-1]]).tolist()
                        if len(group) else [])
    bounds = [*first, len(values)]
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        out[lo:hi] = np.maximum.accumulate(values[lo:hi])
    return out


def cumsum_by_group(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row (sorted by group): the sum of its group's values up to and including it."""
    total = np.cumsum(values)
    first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    before = np.concatenate([[0], total[first[1:] - 1]]) if len(first) else np.zeros(0, np.int64)
    size = np.diff(np.r_[first, len(values)])
    return total - np.repeat(before, size)
