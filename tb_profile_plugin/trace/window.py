"""Window queries: the events of one or more hosts that are visible in a time window.

`TraceSet` puts the indexes of the shown hosts on one time axis: times are ps from the earliest
event start over the hosts (hosts are aligned by absolute time), event ids and pids are offset
per host so they stay unique.

Visibility (docs/trace_viewer.md). With `pixel_ps = (b - a) / resolution`, an event that
overlaps the window (`start <= b` and `end >= a`) is returned when

* `end - start >= pixel_ps` (at least one pixel wide), or
* it is the first event, by start, of its (track, depth, pixel column), where the column is
  `floor((max(start, a) - a) / pixel_ps)`;

every other overlapping event is counted in `filtered_events`. Nothing is filtered at
resolution 0, when a pixel is at most 1 ps, or when the window holds at most
`UNFILTERED_MAX_EVENTS` events of a host (a zoomed-in window is always complete).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.trace.index import TraceIndex, trace_index
from tb_profile_plugin.xspace.model import Profile

#: A window holding at most this many events (per host) is returned whole at any resolution.
UNFILTERED_MAX_EVENTS = 10_000
#: Answers kept per index (the full view and the last pans are asked for again and again).
_CACHED_WINDOWS = 16
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class HostTrace:
    host: str
    index: TraceIndex
    shift_ps: int  # index time + shift = shown time
    id_offset: int
    pid_offset: int
    track_pid: np.ndarray  # int64 per track (shown pid)
    track_tid: np.ndarray  # int64 per track


@dataclass(frozen=True)
class TraceSet:
    hosts: list[HostTrace]
    origin_ns: int  # Unix ns of shown time 0
    end_ps: int  # shown time of the last event end
    combined: bool  # several hosts: process names carry the host

    @property
    def total_events(self) -> int:
        return sum(len(h.index) for h in self.hosts)

    def locate(self, event_id: int) -> tuple[HostTrace, int] | None:
        """(host, id within its index) of a shown event id, or None when there is none."""
        for h in self.hosts:
            if h.id_offset <= event_id < h.id_offset + len(h.index):
                return h, event_id - h.id_offset
        return None


def trace_set(profiles: Mapping[str, Profile]) -> TraceSet:
    indexes = {host: trace_index(p) for host, p in profiles.items()}
    zero_ps = {h: i.absolute_origin_ns * 1000 for h, i in indexes.items()}
    with_events = [h for h, i in indexes.items() if len(i)]
    earliest = min((zero_ps[h] + indexes[h].first_ps for h in with_events),
                   default=min(zero_ps.values(), default=0))
    hosts: list[HostTrace] = []
    id_offset = pid_offset = 0
    end_ps = 0
    for host, index in indexes.items():
        shift = zero_ps[host] - earliest
        pids = [pid_offset + p.pid for p in index.processes for _ in p.threads]
        tids = [t.tid for p in index.processes for t in p.threads]
        hosts.append(HostTrace(host, index, shift, id_offset, pid_offset,
                               np.array(pids, np.int64), np.array(tids, np.int64)))
        if len(index):
            end_ps = max(end_ps, index.last_ps + shift)
        id_offset += len(index)
        pid_offset += len(index.processes)
    return TraceSet(hosts, earliest // 1000, end_ps, len(indexes) > 1)


@dataclass(frozen=True)
class Visible:
    ids: np.ndarray  # index event ids, sorted by (track, start, id)
    num_filtered: int


def visible_events(
    index: TraceIndex, a_ps: int, b_ps: int, resolution: int,
    unfiltered_max_events: int | None = None,
) -> Visible:
    """The events of `index` overlapping [a_ps, b_ps] (index time) visible at `resolution`.

    `unfiltered_max_events` defaults to the module's `UNFILTERED_MAX_EVENTS`."""
    if unfiltered_max_events is None:
        unfiltered_max_events = UNFILTERED_MAX_EVENTS
    key = (a_ps, b_ps, resolution, unfiltered_max_events)
    cache: collections.OrderedDict[tuple[int, ...], Visible] = index.lazy(
        "windows", collections.OrderedDict)
    with _cache_lock:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    visible = _visible_events(index, a_ps, b_ps, resolution, unfiltered_max_events)
    with _cache_lock:
        cache[key] = visible
        while len(cache) > _CACHED_WINDOWS:
            cache.popitem(last=False)
    return visible


#: Above this many (track, depth) segments a window counts per segment with one pass over
#: the events instead of two binary searches per segment (deep, crafted nesting).
_SEARCH_SEGMENTS_MAX = 2048


def _count_per_segment(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Per segment [bounds[k], bounds[k+1]): how many of its events `mask` holds."""
    running = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
    return running[bounds[1:]] - running[bounds[:-1]]


def _visible_events(
    index: TraceIndex, a_ps: int, b_ps: int, resolution: int, unfiltered_max_events: int,
) -> Visible:
    bounds = index.segment_bounds
    starts, max_end = index.start_ps, index.max_end_ps
    num_segments = len(bounds) - 1
    if num_segments <= _SEARCH_SEGMENTS_MAX:
        lo = np.empty(num_segments, np.int64)
        hi = np.empty(num_segments, np.int64)
        for s in range(num_segments):  # a loop per (track, depth), never per event
            first, last = int(bounds[s]), int(bounds[s + 1])
            lo[s] = first + np.searchsorted(max_end[first:last], a_ps, "left")
            hi[s] = first + np.searchsorted(starts[first:last], b_ps, "right")
    else:  # very many (track, depth) rows: count per segment in one pass over the events
        lo = bounds[:-1] + _count_per_segment(max_end < a_ps, bounds)
        hi = bounds[:-1] + _count_per_segment(starts <= b_ps, bounds)
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ids = np.arange(total, dtype=np.int64) + np.repeat(lo - offsets, counts)
    segment = np.repeat(np.arange(num_segments, dtype=np.int64), counts)
    overlapping = index.end_ps[ids] >= a_ps
    ids, segment = ids[overlapping], segment[overlapping]
    num_filtered = 0
    pixel_ps = (b_ps - a_ps) / resolution if resolution > 0 else 0.0
    if pixel_ps > 1.0 and len(ids) > unfiltered_max_events:
        start = index.start_ps[ids]
        column = np.floor((np.maximum(start, a_ps) - a_ps) / pixel_ps).astype(np.int64)
        keep = (index.end_ps[ids] - start) >= pixel_ps
        keep[0] = True
        keep[1:] |= (column[1:] != column[:-1]) | (segment[1:] != segment[:-1])
        num_filtered = int(len(ids) - np.count_nonzero(keep))
        ids, segment = ids[keep], segment[keep]
    track = index.segment_track[segment]
    order = np.lexsort((ids, index.start_ps[ids], track))
    return Visible(ids[order], num_filtered)
