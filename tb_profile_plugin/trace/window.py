"""Window queries: the events of one or more hosts that are visible in a time window.

`TraceSet` puts the indexes of the shown hosts on one time axis: times are ps from the earliest
event start over the hosts (hosts are aligned by absolute time), event ids and pids are offset
per host so they stay unique.

Visibility (docs/trace_viewer.md). With `pixel_ps = (b - a) / resolution`, an event that
overlaps the window (`start <= b` and `end >= a`) is returned when

* `end - start >= pixel_ps` (at least one pixel wide), or
* it is the first event, by start, of its (track, depth, pixel column), where the column is
  `floor((max(start, a) - a) / pixel_ps)`;

every other overlapping event is counted in `filtered_events`, and so is an event narrower
than a pixel nested deeper than `MAX_FILTERED_DEPTH` levels (a stack of sub-pixel events that
deep, such as identical zero-length events nested in one another, cannot be told apart at
that resolution: without this, a 40 MB file of them answered every one of its 10^7 events in
the default window; the committed captures nest at most 29 deep). Nothing is filtered at
resolution 0, when a pixel is at most 1 ps, or when the window holds at most
`UNFILTERED_MAX_EVENTS` events of a host (a zoomed-in window is always complete).

Density blocks. Where events are filtered, the events kept in a dense stretch are only a
sample of it, so a window also reports the stretches themselves (`DensityBlocks`): per
(track, depth), a run of overlapping events narrower than a pixel in which each next one
starts at most a pixel after the previous one ends, with at least two events, is a block
`[first start, last end]` with its event count (kept and filtered). A wide event ends a run:

    pixel:   |    |    |    |    |    |
    events:  ▏▏ ▏▏▏ ▏▏▏▏   ▏▏▏ ████████ ▏
    blocks:  [ 12 events ]  [3]          (a lone sub-pixel event is no block)

The cap. A window returns at most `MAX_WINDOW_EVENTS` events (over the hosts shown; each
host gets its share). A window that would return more (resolution 0 over a big trace, or a
resolution of more pixels than its events need) is answered at the highest resolution whose
answer fits (`Visible.shown_resolution`): narrower events are then summarised in density
blocks as at any resolution, and the document says so (docs/api.md). The build stops at its
stages' `checkpoint()`s when its request is over its time or its client has gone.

One pass of numpy over the candidates: "joins the previous" is a comparison with the
previous element, runs are a cumulative sum of their first elements, counts a difference of
run offsets, ends a `maximum.reduceat`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.column_sizes import whole_group_parts
from tb_profile_plugin.request_budget import checkpoint
from tb_profile_plugin.trace import index_cache
from tb_profile_plugin.trace.index import TraceIndex
from tb_profile_plugin.trace.index_cache import trace_index
from tb_profile_plugin.trace.lines_first import Shown, shown_index
from tb_profile_plugin.trace.lod import scan_ranges, segments_view
from tb_profile_plugin.trace.range_search import search_each, search_ranges
from tb_profile_plugin.trace.visible import (  # noqa: F401  (DensityBlocks: the answer's type)
    NO_BLOCKS,
    DensityBlocks,
    Visible,
    remember,
    remembered,
)
from tb_profile_plugin.xspace.model import Profile

#: A window holding at most this many events (per host) is returned whole at any resolution.
UNFILTERED_MAX_EVENTS = 10_000
#: The most events one window returns (all hosts together): ~40 bytes each in the index's
#: answer and ~100 in the JSON document, so ~0.1 GB per window at most, where resolution 0 over
#: a 10M-event trace took ~400 MB (issue 30). Past it the window is answered at a lower
#: resolution (module docstring, docs/api.md "trace_viewer").
MAX_WINDOW_EVENTS = 1_000_000
#: Hosts whose events span more than this (a week, in ps) on the absolute time axis are not
#: aligned: int64 ps would overflow at 106 days, float µs lose the ns at 104 days.
MAX_ALIGNED_SPAN_PS = 7 * 24 * 3600 * 10**12


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
    #: Whether the hosts share one time axis (False: their clocks are more than
    #: `MAX_ALIGNED_SPAN_PS` apart, and each host starts at 0; `clock_span_ps` says how far).
    aligned: bool = True
    clock_span_ps: int = 0
    #: Hosts whose derived tracks are still being made (trace/lines_first.py): their index
    #: is their lines' alone for now.
    derived_pending: tuple[str, ...] = ()
    #: Per host, why its derived tracks could not be made.
    derived_errors: tuple[tuple[str, str], ...] = ()

    @property
    def total_events(self) -> int:
        return sum(len(h.index) for h in self.hosts)

    def locate(self, event_id: int) -> tuple[HostTrace, int] | None:
        """(host, id within its index) of a shown event id, or None when there is none."""
        for h in self.hosts:
            if h.id_offset <= event_id < h.id_offset + len(h.index):
                return h, event_id - h.id_offset
        return None


def trace_set(profiles: Mapping[str, Profile], *, lines_first: bool = False) -> TraceSet:
    """The hosts on one time axis, aligned by absolute time; hosts whose clocks are more than
    `MAX_ALIGNED_SPAN_PS` apart (captures of different days in one run, or a host without an
    absolute start time beside one with it) each start at 0 instead (`aligned` False): shown
    times stay int64 picoseconds and keep their precision as float microseconds.
    `lines_first`: a big GPU capture shown alone may have its lines' index alone while its
    derived tracks are made (trace/lines_first.py), else every host's whole index."""
    # (One host alone: another host's ids would move when this one's derived tracks come.)
    alone = lines_first and len(profiles) == 1
    shown = {host: shown_index(p) if alone else Shown(trace_index(p))
             for host, p in profiles.items()}
    indexes = {host: s.index for host, s in shown.items()}
    zero_ps = {h: i.absolute_origin_ns * 1000 for h, i in indexes.items()}
    with_events = [h for h, i in indexes.items() if len(i)]
    earliest = min((zero_ps[h] + indexes[h].first_ps for h in with_events),
                   default=min(zero_ps.values(), default=0))
    latest = max((zero_ps[h] + indexes[h].last_ps for h in with_events), default=earliest)
    clock_span_ps = latest - earliest
    aligned = clock_span_ps <= MAX_ALIGNED_SPAN_PS
    hosts: list[HostTrace] = []
    id_offset = pid_offset = 0
    end_ps = 0
    for host, index in indexes.items():
        shift = zero_ps[host] - earliest if aligned else -index.first_ps
        pids = np.zeros(len(index.tracks), np.int64)  # per track, in storage order
        tids = np.zeros(len(index.tracks), np.int64)
        for p in index.processes:
            for t in p.threads:
                pids[t.track], tids[t.track] = pid_offset + p.pid, t.tid
        hosts.append(HostTrace(host, index, shift, id_offset, pid_offset, pids, tids))
        if len(index):
            end_ps = max(end_ps, index.last_ps + shift)
        id_offset += len(index)
        pid_offset += len(index.processes)
    return TraceSet(hosts, earliest // 1000, end_ps, len(indexes) > 1, aligned,
                    clock_span_ps,
                    tuple(h for h, s in shown.items() if s.derived_pending),
                    tuple((h, s.derived_error) for h, s in shown.items()
                          if s.derived_error is not None))


def density_blocks(
    ids: np.ndarray, segment: np.ndarray, start: np.ndarray, end: np.ndarray, pixel_ps: float,
    sub: np.ndarray | None = None,
) -> DensityBlocks:
    """The density blocks of overlapping events `ids` (in segment order, by start within a
    segment; `start`/`end` theirs, ps) at a pixel of `pixel_ps`. `sub`: the events narrower
    than a pixel, where the caller has them (`_scan` reads them again)."""
    if sub is None:
        sub = (end - start) < pixel_ps
    joins = _joins(segment, start, end, sub, pixel_ps)
    if not sub.any():
        return NO_BLOCKS
    # A run of joined events lies side by side (each joins the one before it), so runs are
    # taken as [first, stop) ranges of the events: no index or gathered end of every narrow
    # event (the whole trace's, on the first request).
    firsts = np.flatnonzero(sub & ~joins)
    joins[:-1] = joins[1:]  # (now: joined by the next event)
    joins[-1] = False
    stops = np.flatnonzero(sub & ~joins)
    stops += 1
    counts = stops - firsts
    keep = counts >= 2
    firsts, stops, counts = firsts[keep], stops[keep], counts[keep]
    return DensityBlocks(segment[firsts].astype(np.int64, copy=False), start[firsts],
                         _range_maxima(end, firsts, stops), counts,
                         ids[firsts].astype(np.int64, copy=False))


def _narrower_than(start: np.ndarray, end: np.ndarray, pixel_ps: float) -> np.ndarray:
    """Per event: `(end - start) < pixel_ps`, the widths taken `column_sizes.CHUNK_EVENTS`
    events at a time (not an int64 column of every event beside the starts and ends)."""
    out = np.empty(len(start), bool)
    chunk = column_sizes.CHUNK_EVENTS
    for lo in range(0, len(start), chunk):
        hi = min(lo + chunk, len(start))
        np.less(end[lo:hi] - start[lo:hi], pixel_ps, out=out[lo:hi])
    return out


def _joins(segment: np.ndarray, start: np.ndarray, end: np.ndarray, sub: np.ndarray,
           pixel_ps: float) -> np.ndarray:
    """Per event: narrow, after a narrow one of its segment, and starting within a pixel of
    its end. Taken `column_sizes.CHUNK_EVENTS` events at a time: the ends plus a pixel are
    float64, a column of the whole trace's events on the first request otherwise."""
    joins = np.zeros(len(sub), bool)
    chunk = column_sizes.CHUNK_EVENTS
    for lo in range(1, len(sub), chunk):
        hi = min(lo + chunk, len(sub))
        joins[lo:hi] = (sub[lo:hi] & sub[lo - 1 : hi - 1]
                        & (segment[lo:hi] == segment[lo - 1 : hi - 1])
                        & (start[lo:hi] <= end[lo - 1 : hi - 1] + pixel_ps))
    return joins


def _range_maxima(values: np.ndarray, firsts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """`max(values[firsts[k]:stops[k]])` for every k (non-empty, ascending, disjoint ranges):
    one `reduceat` over the ranges' bounds, every other result."""
    if len(firsts) == 0:
        return np.zeros(0, values.dtype)
    bounds = np.empty(2 * len(firsts), np.int64)
    bounds[0::2] = firsts
    bounds[1::2] = stops
    if bounds[-1] == len(values):  # (the last range ends at the end: reduceat's own end)
        bounds = bounds[:-1]
    return np.maximum.reduceat(values, bounds)[0::2]


def split_at_parents(index: TraceIndex, blocks: DensityBlocks, ids: np.ndarray,
                     segment: np.ndarray, pixel_ps: float) -> DensityBlocks:
    """`blocks` cut at the drawn events of the depth above them (issue 29: a hatched block
    under back-to-back 10 ms steps spanned several steps). `ids`/`segment`: the window's
    visible events; those at least a pixel wide are drawn as bars, and their starts and ends
    (the *edges*) cut the blocks of the depth below on their track: a block of depth d >= 1
    becomes one block per stretch between consecutive edges of depth d-1 that holds some of
    its events, each from its first such event's start to the latest end among them, clipped
    to the block and to the next edge. Parents narrower than a pixel cut nothing (their
    edges could not be seen; at a full zoom-out every block would break at every one).
    A block's events are consecutive events of its segment (storage order = start order),
    so each piece is found by binary searches over the starts; no loop per block."""
    if len(blocks) == 0 or len(ids) == 0:
        return blocks
    seg = blocks.segment
    track, depth = index.segment_track, index.segment_depth
    parent = seg - 1
    safe_parent = np.maximum(parent, 0)
    has_parent = ((depth[seg] >= 1) & (parent >= 0) & (track[safe_parent] == track[seg])
                  & (depth[safe_parent] == depth[seg] - 1))
    if not has_parent.any():
        return blocks
    starts, ends = index.start_ps, index.end_ps
    wide = (ends[ids] - starts[ids]) >= pixel_ps
    if not wide.any():
        return blocks
    # The edges of the drawn parents, sorted by (segment, time).
    edge_seg = np.repeat(segment[wide].astype(np.int64), 2)
    edge_ps = np.stack([starts[ids[wide]], ends[ids[wide]]], axis=1).ravel()
    order = np.lexsort((edge_ps, edge_seg))
    edge_seg, edge_ps = edge_seg[order], edge_ps[order]
    e_lo = np.searchsorted(edge_seg, safe_parent, "left")
    e_hi = np.searchsorted(edge_seg, safe_parent, "right")
    last_member = blocks.first_id + blocks.count - 1
    # The last edge at or before the block's start and its last event's start (e_lo - 1:
    # before every edge).
    j0 = search_each(edge_ps, e_lo, e_hi, blocks.start_ps, "right") - 1
    j1 = search_each(edge_ps, e_lo, e_hi, starts[last_member], "right") - 1
    pieces = np.where(has_parent & (e_hi > e_lo), j1 - j0 + 1, 1)
    if (pieces == 1).all():
        return blocks
    block = np.repeat(np.arange(len(blocks)), pieces)
    k = np.arange(len(block)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    split = pieces[block] > 1
    edge = j0[block] + k
    lo_id = blocks.first_id[block]
    hi_id = lo_id + blocks.count[block]
    lowest, highest = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    top = max(len(edge_ps) - 1, 0)
    # Each piece: the block's events starting in [its edge, the next edge).
    piece_from = np.where(split & (k > 0), edge_ps[np.clip(edge, 0, top)], lowest)
    piece_to = np.where(split & (edge + 1 < e_hi[block]), edge_ps[np.clip(edge + 1, 0, top)],
                        highest)
    first = search_each(starts, lo_id, hi_id, piece_from, "left")
    stop = search_each(starts, lo_id, hi_id, piece_to, "left")
    count = stop - first
    keep = count >= 1
    block, first, stop, piece_to = block[keep], first[keep], stop[keep], piece_to[keep]
    count, split = count[keep], split[keep]
    last = stop - 1
    piece_seg = seg[block]
    disjoint = index.segment_disjoint[piece_seg]
    piece_end = ends[last].copy()
    if not disjoint.all():
        over = ~disjoint
        piece_end[over] = index.running_max_ends.at(piece_seg[over], last[over])
    # Clipped to the block, and never past the next edge.
    end = np.where(split, np.minimum(np.minimum(piece_end, blocks.end_ps[block]), piece_to),
                   blocks.end_ps[block])
    start = np.where(split, starts[first], blocks.start_ps[block])
    return DensityBlocks(piece_seg, start, end,
                         np.where(split, count, blocks.count[block]).astype(np.int64),
                         np.where(split, first, blocks.first_id[block]).astype(np.int64))


def visible_events(
    index: TraceIndex, a_ps: int, b_ps: int, resolution: int,
    unfiltered_max_events: int | None = None, max_events: int | None = None,
) -> Visible:
    """The events of `index` overlapping [a_ps, b_ps] (index time) visible at `resolution`,
    at most `max_events` of them (module docstring: the cap).

    `unfiltered_max_events` and `max_events` default to the module's `UNFILTERED_MAX_EVENTS`
    and `MAX_WINDOW_EVENTS`."""
    if unfiltered_max_events is None:
        unfiltered_max_events = UNFILTERED_MAX_EVENTS
    if max_events is None:
        max_events = MAX_WINDOW_EVENTS
    key: tuple[int, ...] = (a_ps, b_ps, resolution, unfiltered_max_events)
    if max_events != MAX_WINDOW_EVENTS:  # (the disk cache keeps windows of 4-part keys)
        key = (*key, max_events)
    visible = remembered(index, key)
    if visible is not None and len(visible.ids) > max_events:  # kept before the cap
        visible = None
    if visible is None:
        visible = _capped_visible_events(index, a_ps, b_ps, resolution, unfiltered_max_events,
                                         max_events)
        remember(index, key, visible)
        if index.first_window_pending and len(key) == 4:  # the first window: kept on disk
            index.first_window_pending = False
            index_cache.save_first_window(index, key, visible)
    if index.prefetch_pending:  # the first window came from the disk cache: read the rest
        index.prefetch_pending = False
        index_cache.prefetch(index)
    return visible


def _capped_visible_events(
    index: TraceIndex, a_ps: int, b_ps: int, resolution: int, unfiltered_max_events: int,
    max_events: int,
) -> Visible:
    """`_visible_events`, at the highest resolution (from the one asked) whose answer holds at
    most `max_events` events; the first `max_events` events (by track and start) where even
    a resolution of 1 holds more."""
    span = b_ps - a_ps
    unfiltered = resolution == 0 or span / resolution <= 1.0
    if unfiltered:
        lo, hi = _candidate_ranges(index, a_ps, b_ps)
        checkpoint()
        if int(np.maximum(hi - lo, 0).sum()) <= max_events:  # all of them fit
            return _visible_events(index, a_ps, b_ps, resolution, unfiltered_max_events)
        # As many pixels as events returned at most (~1 returned per pixel and row), and
        # pixels wider than 1 ps (else nothing is filtered).
        shown = min(max_events, span // 2)
    else:
        visible = _visible_events(index, a_ps, b_ps, resolution, unfiltered_max_events)
        if len(visible.ids) <= max_events:
            return visible
        shown = max(1, min(resolution - 1,
                           int(resolution * 0.9 * max_events / len(visible.ids))))
    while shown >= 1:
        checkpoint()
        visible = _visible_events(index, a_ps, b_ps, shown, unfiltered_max_events)
        if len(visible.ids) <= max_events:
            return dataclasses.replace(visible, shown_resolution=shown)
        if shown == 1:
            break
        shown = max(1, min(shown - 1, int(shown * 0.9 * max_events / len(visible.ids))))
    else:  # a window of at most 1 ps: nothing can be filtered
        visible = _visible_events(index, a_ps, b_ps, resolution, unfiltered_max_events)
        shown = resolution
    first = slice(max_events)
    return Visible(visible.ids[first], visible.num_filtered, visible.blocks,
                   visible.start_ps[first], visible.end_ps[first], visible.name_id[first],
                   visible.block_name_id, visible.segment[first], shown_resolution=shown,
                   num_truncated=len(visible.ids) - max_events)


#: In a filtered window, sub-pixel events nested deeper than this are filtered (module
#: docstring); events at least a pixel wide are shown at any depth.
MAX_FILTERED_DEPTH = 128

#: Above this many (track, depth) segments a window counts per segment with one pass over
#: the events instead of binary searches per segment (each of those costs ~25 vectorised
#: steps over the segments: past about n / 25 segments one pass is cheaper).
_SEARCH_SEGMENTS_MAX = 1 << 18


def _count_per_segment(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Per segment [bounds[k], bounds[k+1]): how many of its events `mask` holds."""
    running = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
    return running[bounds[1:]] - running[bounds[:-1]]


#: A disjoint segment holding more than this many candidates per pixel column (and at least
#: `_LOD_MIN_EVENTS`) is answered by the level of detail (trace/lod.py) instead of a scan.
_LOD_EVENTS_PER_COLUMN = 4
_LOD_MIN_EVENTS = 4096


def _candidate_ranges(index: TraceIndex, a_ps: int, b_ps: int) -> tuple[np.ndarray, np.ndarray]:
    """Per segment, [lo, hi): from the first event whose running-max end reaches a_ps to the
    last whose start is at most b_ps."""
    bounds = index.segment_bounds
    starts = index.start_ps
    num_segments = len(bounds) - 1
    if num_segments <= _SEARCH_SEGMENTS_MAX:
        first, last = bounds[:-1], bounds[1:]
        lo = np.empty(num_segments, np.int64)
        disjoint = index.segment_disjoint
        lo[disjoint] = search_ranges(index.end_ps, first[disjoint], last[disjoint], a_ps, "left")
        if not disjoint.all():  # running-max ends, kept for the overlapping segments only
            overlapping = np.flatnonzero(~disjoint)
            lo[overlapping] = index.running_max_ends.first_reaching(overlapping, a_ps)
        hi = search_ranges(starts, first, last, b_ps, "right")
    else:  # very many (track, depth) rows: count per segment in one pass over the events
        # (the only reader of the per-event running maximum, `max_end_ps`: 8 bytes per event,
        # built for indexes of more than `_SEARCH_SEGMENTS_MAX` segments alone)
        lo = bounds[:-1] + _count_per_segment(index.max_end_ps < a_ps, bounds)
        hi = bounds[:-1] + _count_per_segment(starts <= b_ps, bounds)
    return lo, hi


def _overlapping(
    index: TraceIndex, lo: np.ndarray, counts: np.ndarray, a_ps: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(ids, segment) of the candidates [lo, lo + counts) that end at or after a_ps, in
    segment order, by start within a segment. Both int32 where the index's rows fit (the
    first request's candidates are the whole trace's: 4 bytes each less per column through
    the scan, 186 MB at a 10M-event capture's 23M rows); the answer is int64 again
    (`_visible_events`)."""
    total = int(counts.sum())
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    dtype: type[np.signedinteger] = (np.int32 if max(len(index), len(counts)) < 2**31
                                     else np.int64)
    # In place, and each column compressed in its turn: three columns of every candidate
    # live at most (the whole trace's candidates on the first request).
    ids: np.ndarray = np.arange(total, dtype=dtype)
    ids += np.repeat((lo - offsets).astype(dtype), counts)
    overlapping = _ends_at_or_after(index.end_ps, ids, a_ps)
    ids = ids[overlapping]
    segment = np.repeat(np.arange(len(counts), dtype=dtype), counts)
    return ids, segment[overlapping]


def _ends_at_or_after(end_ps: np.ndarray, ids: np.ndarray, a_ps: int) -> np.ndarray:
    """Per id: `end_ps[id] >= a_ps`, the ends gathered `column_sizes.CHUNK_EVENTS` at a
    time (not an int64 column of every candidate)."""
    out = np.empty(len(ids), bool)
    chunk = column_sizes.CHUNK_EVENTS
    for lo in range(0, len(ids), chunk):
        np.greater_equal(end_ps[ids[lo : lo + chunk]], a_ps, out=out[lo : lo + chunk])
    return out


def _scan(
    index: TraceIndex, ids: np.ndarray, segment: np.ndarray, a_ps: int, pixel_ps: float,
) -> tuple[np.ndarray, np.ndarray, DensityBlocks]:
    """The visible (ids, segment) and density blocks of overlapping events, reading each.
    A few whole segments at a time (`whole_group_parts`: nothing joins or compares across
    segments, and the parts' answers follow one another in segment order): the starts, ends
    and pixel columns gathered are a part's, not three columns of the whole trace's events
    on the first request (560 MB at a 10M-event capture)."""
    n = len(ids)
    if n <= column_sizes.CHUNK_EVENTS or not bool(np.all(segment[1:] >= segment[:-1])):
        return _scan_part(index, ids, segment, a_ps, pixel_ps)
    kept_ids: list[np.ndarray] = []
    kept_segments: list[np.ndarray] = []
    blocks: list[DensityBlocks] = []
    for lo, hi in whole_group_parts(segment, column_sizes.CHUNK_EVENTS):
        part_ids, part_segment, part_blocks = _scan_part(index, ids[lo:hi], segment[lo:hi],
                                                         a_ps, pixel_ps)
        kept_ids.append(part_ids)
        kept_segments.append(part_segment)
        blocks.append(part_blocks)
    return np.concatenate(kept_ids), np.concatenate(kept_segments), _in_order(blocks)


def _in_order(parts: list[DensityBlocks]) -> DensityBlocks:
    """Blocks of parts that follow one another in (segment, start) order, as one."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return NO_BLOCKS
    if len(parts) == 1:
        return parts[0]
    return DensityBlocks(*(np.concatenate([getattr(p, f.name) for p in parts])
                           for f in dataclasses.fields(DensityBlocks)))


def _scan_part(
    index: TraceIndex, ids: np.ndarray, segment: np.ndarray, a_ps: int, pixel_ps: float,
) -> tuple[np.ndarray, np.ndarray, DensityBlocks]:
    """`_scan` of whole segments."""
    start = index.start_ps[ids]
    end = index.end_ps[ids]
    narrow = _narrower_than(start, end, pixel_ps)
    blocks = density_blocks(ids, segment, start, end, pixel_ps, narrow)
    del end
    # Each event's pixel column, made in the starts' own buffer and one float column: the
    # floored quotients are whole numbers, equal exactly where their int64 values are.
    np.maximum(start, a_ps, out=start)
    start -= a_ps
    column = np.true_divide(start, pixel_ps)
    del start
    np.floor(column, out=column)
    keep = np.logical_not(narrow, out=narrow)  # (at least a pixel wide)
    if len(keep):
        keep[0] = True
        keep[1:] |= (column[1:] != column[:-1]) | (segment[1:] != segment[:-1])
    return ids[keep], segment[keep], blocks


def _by_level_of_detail(
    index: TraceIndex, segments: np.ndarray, lo: np.ndarray, hi: np.ndarray, a_ps: int,
    b_ps: int, pixel_ps: float,
) -> tuple[np.ndarray, np.ndarray, DensityBlocks]:
    """`_scan`'s answer for disjoint segments, from the level of detail (trace/lod.py), all
    segments at once."""
    view = segments_view(index.start_ps, index.end_ps, index.lod_levels, lo[segments],
                         hi[segments], a_ps, b_ps, pixel_ps)
    block_segment = segments[view.block_range].astype(np.int64)
    return view.kept, segments[view.kept_range].astype(np.int64), DensityBlocks(
        block_segment, index.start_ps[view.block_first], view.block_end_ps, view.block_count,
        view.block_first)


def _joined(parts: list[DensityBlocks]) -> DensityBlocks:
    """Blocks of several parts in one order: by segment, then first event (= start)."""
    if sum(1 for p in parts if len(p)) < 2:
        return _in_order(parts)
    joined = _in_order(parts)
    order = np.lexsort((joined.first_id, joined.segment))
    return DensityBlocks(*(getattr(joined, f.name)[order]
                           for f in dataclasses.fields(DensityBlocks)))


def _visible_events(
    index: TraceIndex, a_ps: int, b_ps: int, resolution: int, unfiltered_max_events: int,
) -> Visible:
    checkpoint()
    lo, hi = _candidate_ranges(index, a_ps, b_ps)
    checkpoint()
    counts = np.maximum(hi - lo, 0)
    pixel_ps = (b_ps - a_ps) / resolution if resolution > 0 else 0.0
    if pixel_ps > 1.0:
        lod = index.segment_disjoint & (
            counts > max(_LOD_EVENTS_PER_COLUMN * resolution, _LOD_MIN_EVENTS))
    else:
        lod = np.zeros(len(counts), bool)
    # every candidate of a disjoint segment overlaps the window
    lod_total = int(counts[lod].sum())
    scanned = None
    scan_counts = np.where(lod, 0, counts)  # (the disjoint LOD segments are summarised)
    if pixel_ps > 1.0 and int(counts.sum()) > unfiltered_max_events:
        scanned = _compiled_scan(index, lo, scan_counts, a_ps, b_ps, pixel_ps)
    if scanned is None or scanned[0] + lod_total <= unfiltered_max_events:
        ids, segment = _overlapping(index, lo, scan_counts, a_ps)
        total = len(ids) + lod_total
    else:
        total = scanned[0] + lod_total
    num_filtered = 0
    blocks = NO_BLOCKS
    checkpoint()
    if pixel_ps > 1.0 and total > unfiltered_max_events:
        if scanned is not None:
            ids, segment, blocks = scanned[1:]
        else:
            ids, segment, blocks = _scan(index, ids, segment, a_ps, pixel_ps)
        checkpoint()
        if lod.any():
            more_ids, more_segment, more_blocks = _by_level_of_detail(
                index, np.flatnonzero(lod), lo, hi, a_ps, b_ps, pixel_ps)
            checkpoint()
            ids = np.concatenate([ids, more_ids])
            segment = np.concatenate([segment, more_segment])
            blocks = _joined([blocks, more_blocks])
        ids, segment = _shallow_or_wide(index, ids, segment, pixel_ps)
        blocks = split_at_parents(index, blocks, ids, segment, pixel_ps)
        checkpoint()
        num_filtered = total - len(ids)
    elif lod.any():  # few enough to return them all
        ids, segment = _overlapping(index, lo, counts, a_ps)
        checkpoint()
    # The answer's ids and segments are int64 whatever the scan's (`_overlapping`).
    ids, segment = ids.astype(np.int64, copy=False), segment.astype(np.int64, copy=False)
    by_segment = np.argsort(segment, kind="stable")  # the scanned and summarised parts
    ids, segment = ids[by_segment], segment[by_segment]
    start = index.start_ps[ids]
    order = by_track_and_start(start, index.segment_track[segment])
    ids = ids[order]
    return Visible(ids, num_filtered, blocks, start[order], index.end_ps[ids],
                   index.name_id[ids], index.name_id[blocks.first_id], segment[order])


def _compiled_scan(
    index: TraceIndex, lo: np.ndarray, counts: np.ndarray, a_ps: int, b_ps: int,
    pixel_ps: float,
) -> tuple[int, np.ndarray, np.ndarray, DensityBlocks] | None:
    """(overlapping events, then `_scan`'s answer) for the candidates [lo, lo + counts) of
    each segment, from the compiled pass (`lod.scan_ranges`: the candidates are read once,
    not gathered); None where it is not built (then `_overlapping` and `_scan`)."""
    segments = np.flatnonzero(counts > 0)
    first = lo[segments].astype(np.int64, copy=False)
    scanned = scan_ranges(index.start_ps, index.end_ps, index.block_max_ps, first,
                          first + counts[segments], a_ps, b_ps, pixel_ps)
    if scanned is None:
        return None
    kept_segment = segments[np.searchsorted(first, scanned.kept, "right") - 1]
    if len(scanned.block_first) == 0:
        return scanned.overlapping, scanned.kept, kept_segment, NO_BLOCKS
    block_segment = segments[np.searchsorted(first, scanned.block_first, "right") - 1]
    return scanned.overlapping, scanned.kept, kept_segment, DensityBlocks(
        block_segment, index.start_ps[scanned.block_first],
        scanned.block_end_ps, scanned.block_count, scanned.block_first)


def _shallow_or_wide(index: TraceIndex, ids: np.ndarray, segment: np.ndarray,
                     pixel_ps: float) -> tuple[np.ndarray, np.ndarray]:
    """The (ids, segment) without the events narrower than a pixel nested deeper than
    `MAX_FILTERED_DEPTH` (module docstring)."""
    deep = index.segment_depth[segment] > MAX_FILTERED_DEPTH
    if not deep.any():
        return ids, segment
    keep = ~deep | ((index.end_ps[ids] - index.start_ps[ids]) >= pixel_ps)
    return ids[keep], segment[keep]


def by_track_and_start(start: np.ndarray, track: np.ndarray) -> np.ndarray:
    """The order of events by (track, start, id), for events in (segment, id) order (`track`
    ascending, each (track, depth) segment's starts ascending): `np.lexsort((ids, start,
    track))`. One stable sort of the starts, each track's shifted past the one before, which
    timsort merges as the few sorted runs (depths) of each track they are: 180k events in
    4-9 ms instead of the lexsort's 10; the lexsort itself where the shifts could overflow."""
    if len(start) == 0:
        return np.zeros(0, np.int64)
    firsts = np.concatenate([[0], np.flatnonzero(track[1:] != track[:-1]) + 1])
    lowest = np.minimum.reduceat(start, firsts)
    widths = np.maximum.reduceat(start, firsts) - lowest + 1
    if int(widths.max()) >= 2**62 // len(widths) or int(np.abs(start).max()) >= 2**62:
        order: np.ndarray = np.lexsort((np.arange(len(start)), start, track))
        return order
    shift = np.concatenate([[0], np.cumsum(widths)[:-1]]) - lowest
    key = start + np.repeat(shift, np.diff(np.append(firsts, len(start))))
    order = np.argsort(key, kind="stable")
    return order
