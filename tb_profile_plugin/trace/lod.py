"""Level of detail: the visible events and density blocks of one big (track, depth) segment
in a wide window, found without reading every event the window holds.

A wide window over a 20M-event track holds millions of candidates, of which only a few
thousand are visible (docs/trace_viewer.md): one per pixel column, the events at least a pixel
wide, and the density blocks between. Reading every candidate costs several full-size
temporaries per query (650-950 ms at 20M events); this module answers the same question in
O(resolution + visible) work per segment, exactly.

It applies to *disjoint* segments, those where each event ends at or before the next one starts
(`end[i] <= start[i+1]`): every segment of properly nested events is (siblings at one depth do
not overlap). Their ends are then sorted too, so within the window's candidates [lo, hi) every
one overlaps the window and the latest end of a run is its last event's end. Other segments
(the Python tracer's overlapping events) are answered by the exact scan in `trace/window.py`.

What a disjoint segment needs, with `pixel = (b - a) / resolution`:

* **first of each pixel column.** The column `floor((max(start, a) - a) / pixel)` never
  decreases along the segment, so the first events of columns are where it steps up. The step
  into column c lies within a few ps of `a + c * pixel` (the float rounding of that formula is
  bounded, `_margin_ps`), so two binary searches per column find a tiny zone of positions that
  must hold it, and the exact formula, evaluated there and at each zone position's predecessor,
  picks the steps. Nothing is guessed: the zone is provably wide enough, and the decision is
  the exact rule's own arithmetic.
* **wide events and gaps.** An event at least a pixel wide is kept; a gap of more than a pixel
  before an event, or a wide event, ends a density block. Both have `max(duration, gap before)
  >= pixel`. The summary (built with the index) keeps that key's maximum per block of 64 events
  and, above it, per 64 blocks, and so on: a descent from the top visits only blocks that hold
  such an event. In a disjoint segment those events' durations and gaps are disjoint stretches of
  the window, so there are at most about `2 * resolution` of them.
* **density blocks** are then the stretches between those breaks: a run starts at the window's
  first event, after a wide event, or at a gap wider than a pixel, and ends before the next wide
  event or run start; its count is a difference of positions, its end the last event's end.

Memory: one int64 per 64 events (the leaf maxima, kept in the disk cache with the index), one
bool per segment; the upper levels (1/4096 of the events) are built on load.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_profile_plugin import column_threads

try:  # optional: built with the package when a C compiler is there (setup.py)
    from tb_profile_plugin.trace import _lod  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - the numpy fallback is the reference
    _lod = None

#: Set to "1" to use the numpy search even when the compiled one is built (tests compare).
PURE_LOD_ENV = "TB_PROFILE_PURE_LOD"


def _compiled() -> Any:
    """The compiled module (trace/_lod.c) where it is built and not turned off by
    `PURE_LOD_ENV`, else None (the numpy version)."""
    return _lod if _lod is not None and os.environ.get(PURE_LOD_ENV) != "1" else None

_FANOUT_BITS = 6
FANOUT = 1 << _FANOUT_BITS
#: Events handled per step while building the block maxima (bounds the temporaries).
_CHUNK_EVENTS = FANOUT << 14


def summarise(
    start_ps: np.ndarray, end_ps: np.ndarray, segment_bounds: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(disjoint, block_max_ps): per segment whether each event ends at or before the next
    starts; per block of `FANOUT` events (by position) the maximum of each event's duration and
    its gap after the previous event of its segment (0 for a segment's first event).
    Compiled (trace/_lod.c `summarise`, one read of the columns) where built."""
    n = len(start_ps)
    compiled = _compiled()
    if compiled is not None:
        block_max = np.empty(-(-n // FANOUT), np.int64)
        disjoint = np.empty(len(segment_bounds) - 1, bool)
        compiled.summarise(np.ascontiguousarray(start_ps, np.int64),
                           np.ascontiguousarray(end_ps, np.int64),
                           np.ascontiguousarray(segment_bounds, np.int64), block_max, disjoint)
        return disjoint, block_max
    num_segments = len(segment_bounds) - 1
    block_max = np.zeros(-(-n // FANOUT), np.int64)
    # Overlaps mark their segments chunk by chunk: no list of every overlapping event (the
    # index's nested and derived rows: 16M int64 at a 10M-event capture, three times over).
    disjoint = np.ones(num_segments, bool)
    for c0 in range(0, n, _CHUNK_EVENTS):
        c1 = min(n, c0 + _CHUNK_EVENTS)
        s, e = start_ps[c0:c1], end_ps[c0:c1]
        gap = np.empty(c1 - c0, np.int64)
        np.subtract(s[1:], e[:-1], out=gap[1:])
        gap[0] = s[0] - end_ps[c0 - 1] if c0 else 0
        firsts = segment_bounds[np.searchsorted(segment_bounds, c0):
                                np.searchsorted(segment_bounds, c1)] - c0
        gap[firsts] = 0
        bad = np.flatnonzero(gap < 0)
        if len(bad):
            bad += c0
            disjoint[np.searchsorted(segment_bounds, bad, "right") - 1] = False
        del bad
        key = np.subtract(e, s)
        np.maximum(key, gap, out=key)
        del gap
        pad = -len(key) % FANOUT
        if pad:
            key = np.concatenate([key, np.zeros(pad, np.int64)])
        block_max[c0 // FANOUT : c0 // FANOUT + len(key) // FANOUT] = (
            key.reshape(-1, FANOUT).max(axis=1))
    return disjoint, block_max


def levels_of(block_max: np.ndarray) -> list[np.ndarray]:
    """The maxima per block of 64 events, per 64 such blocks, ... up to at most 64 blocks."""
    levels = [block_max]
    while len(levels[-1]) > FANOUT:
        below = levels[-1]
        pad = -len(below) % FANOUT
        padded = np.concatenate([below, np.zeros(pad, np.int64)]) if pad else below
        levels.append(padded.reshape(-1, FANOUT).max(axis=1))
    return levels


@dataclass(frozen=True)
class SegmentView:
    """What one segment shows in a window: kept event ids and its density blocks (sorted)."""

    kept: np.ndarray  # int64 event ids, ascending
    block_first: np.ndarray  # int64 id of each block's first event
    block_end_ps: np.ndarray  # int64 latest end in each block
    block_count: np.ndarray  # int64 events per block, >= 2


def margin_ps(a_ps: int, b_ps: int, pixel_ps: float) -> float:
    """More than the float rounding of the rule's formulas can move a boundary, in ps (their
    operands are at most |a| + |b| + pixel)."""
    return 4.0 + (abs(a_ps) + abs(b_ps) + pixel_ps) * 2.0**-48


def _column(start_ps: np.ndarray, a_ps: int, pixel_ps: float) -> np.ndarray:
    """The rule's pixel column, with the window query's own arithmetic."""
    return np.floor((np.maximum(start_ps, a_ps) - a_ps) / pixel_ps).astype(np.int64)


def _unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending (a stable sort, timsort: the inputs here are a few
    sorted runs one after another, which it merges in linear time, 10x faster than the
    default quicksort on 180k positions; and a comparison with the neighbour: numpy's
    hash-based `unique` costs more at these sizes)."""
    values = np.sort(values, kind="stable")
    if len(values) < 2:
        return values
    keep = np.empty(len(values), bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _ranges(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Every integer of the inclusive ranges [first[k], last[k]] (last >= first - 1)."""
    sizes = last - first + 1
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(first - offsets, sizes)


def _breaks(
    start_ps: np.ndarray, end_ps: np.ndarray, levels: list[np.ndarray], lo: np.ndarray,
    hi: np.ndarray, pixel_ps: float, threshold: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(positions, range) of the events in the ranges [lo[k], hi[k]) at least a pixel wide or
    after a gap of more than a pixel from the previous event of their range (the rule's own
    comparisons), ascending, found by descending the block maxima from the top for every
    range at once (blocks whose maximum is below `threshold` hold none of them). The last
    step, the events of the blocks of 64 left, is the compiled `_lod.breaks_in_blocks` when
    built (in order, no temporaries per position: 20M wider's widest windows keep ~19k
    blocks, 1.2M positions, for ~33k breaks)."""
    top = len(levels)
    shift = _FANOUT_BITS * top
    first, last = lo >> shift, (hi - 1) >> shift
    nodes = _ranges(first, last)
    part = np.repeat(np.arange(len(lo), dtype=np.int64), last - first + 1)
    children = np.arange(FANOUT, dtype=np.int64)
    compiled = _compiled()
    for level in range(top - 1, -1, -1):
        keep = levels[level][nodes] >= threshold
        nodes, part = nodes[keep], part[keep]
        if level == 0 and compiled is not None:
            positions = np.empty(len(nodes) * FANOUT, np.int64)
            ranges = np.empty(len(nodes) * FANOUT, np.int64)
            count = compiled.breaks_in_blocks(
                np.ascontiguousarray(start_ps, np.int64), np.ascontiguousarray(end_ps, np.int64),
                nodes, part, lo, hi, float(pixel_ps), positions, ranges)
            return positions[:count], ranges[:count]
        nodes = (nodes[:, None] * FANOUT + children).ravel()
        part = np.repeat(part, FANOUT)
        shift = _FANOUT_BITS * level
        inside = (nodes >= lo[part] >> shift) & (nodes <= (hi[part] - 1) >> shift)
        nodes, part = nodes[inside], part[inside]
    s, e = start_ps[nodes], end_ps[nodes]
    wide = (e - s) >= pixel_ps
    later = nodes > lo[part]
    gap_break = np.zeros(len(nodes), bool)
    gap_break[later] = ~(s[later] <= end_ps[nodes[later] - 1] + pixel_ps)
    found = wide | gap_break
    return nodes[found], part[found]


@dataclass(frozen=True)
class SegmentsView:
    """What several segments show in a window (`segments_view`): as `SegmentView`, all
    ranges together (ascending), with the range each kept event and block belongs to."""

    kept: np.ndarray
    kept_range: np.ndarray  # int64 position in the ranges given
    block_first: np.ndarray
    block_end_ps: np.ndarray
    block_count: np.ndarray
    block_range: np.ndarray


def segment_view(
    start_ps: np.ndarray, end_ps: np.ndarray, levels: list[np.ndarray], lo: int, hi: int,
    a_ps: int, b_ps: int, pixel_ps: float,
) -> SegmentView:
    """The visible events and density blocks of a disjoint segment's candidates [lo, hi)
    (hi > lo: events whose end reaches a and whose start is at most b), exactly as
    `trace/window.py`'s scan would find them."""
    view = segments_view(start_ps, end_ps, levels, np.array([lo], np.int64),
                         np.array([hi], np.int64), a_ps, b_ps, pixel_ps)
    return SegmentView(view.kept, view.block_first, view.block_end_ps, view.block_count)


def segments_view(
    start_ps: np.ndarray, end_ps: np.ndarray, levels: list[np.ndarray], lo: np.ndarray,
    hi: np.ndarray, a_ps: int, b_ps: int, pixel_ps: float,
) -> SegmentsView:
    """`segment_view` of the candidates [lo[k], hi[k]) of several disjoint segments at once
    (ascending ranges of different segments, hi > lo): one pass of numpy over all of them
    (a wide window of the 20M-event "wider" capture has 113 such segments: a loop of numpy
    calls per segment cost about 1 ms each), but one binary search call per range."""
    lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
    num = len(lo)

    def range_of(positions: np.ndarray) -> np.ndarray:
        """`np.searchsorted(lo, positions, "right") - 1` for ascending `positions`: where
        each range starts among them (a search per range, not per position), repeated."""
        starts = np.searchsorted(positions, lo, "left")
        counts = np.diff(np.concatenate([[0], starts, [len(positions)]]))
        found: np.ndarray = np.repeat(np.arange(-1, num, dtype=np.int64), counts)
        return found

    margin = margin_ps(a_ps, b_ps, pixel_ps)
    breaks, breaks_range = _breaks(start_ps, end_ps, levels, lo, hi, pixel_ps, pixel_ps - margin)
    duration = end_ps[breaks] - start_ps[breaks]
    is_wide = duration >= pixel_ps
    wide, wide_range = breaks[is_wide], breaks_range[is_wide]
    # first event of each pixel column: where the column steps up; the step into column c is
    # in the zone of positions whose start lies within the margin of a + c * pixel
    last_column = np.maximum(_column(start_ps[hi - 1], a_ps, pixel_ps), 0)
    column = _ranges(np.ones(num, np.int64), last_column)
    column_range = np.repeat(np.arange(num, dtype=np.int64), last_column)
    x = a_ps + column.astype(np.float64) * pixel_ps
    offsets = np.concatenate([[0], np.cumsum(last_column)]).astype(np.int64)
    zone_first, zone_last = zones(start_ps, lo, hi, offsets, np.floor(x - margin).astype(np.int64),
                                  np.ceil(x + margin).astype(np.int64))
    positions = _ranges(zone_first, zone_last)
    owner = np.repeat(column_range, zone_last - zone_first + 1)
    steps = _unique(np.clip(positions, lo[owner] + 1, hi[owner] - 1))
    steps = steps[steps > lo[range_of(steps)]]
    if len(steps):
        steps = steps[_column(start_ps[steps], a_ps, pixel_ps)
                      != _column(start_ps[steps - 1], a_ps, pixel_ps)]
    kept = _unique(np.concatenate([lo, steps, wide]))
    # density blocks: runs of sub-pixel events between breaks
    after_wide = wide + 1
    after_wide = after_wide[after_wide < hi[wide_range]]
    after_wide = after_wide[(end_ps[after_wide] - start_ps[after_wide]) < pixel_ps]
    gap_starts = breaks[(breaks > lo[breaks_range]) & ~is_wide]
    narrow_first = lo[(end_ps[lo] - start_ps[lo]) < pixel_ps]
    run_first = _unique(np.concatenate([after_wide, gap_starts, narrow_first]))
    bounds = _unique(np.concatenate([wide, run_first, hi]))
    run_next = bounds[np.searchsorted(bounds, run_first, "right")]
    count = run_next - run_first
    block = count >= 2
    block_first = run_first[block]
    return SegmentsView(kept, range_of(kept), block_first, end_ps[run_next[block] - 1],
                        count[block], range_of(block_first))


def zones(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, offsets: np.ndarray,
          first_keys: np.ndarray, end_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per range r and each of its zones `offsets[r]:offsets[r + 1]` (first key <= end key),
    the first positions in [lo[r], hi[r]) whose values are at least the zone's first key and
    its end key, or hi[r] (`values` sorted within each range): `lo[r] +
    np.searchsorted(values[lo[r]:hi[r]], key, "left")` for both. The compiled
    `_lod.first_at_least` predicts each answer from the one before (a window's keys are
    ascending and about equally far apart), gallops from there and walks to the zone's end
    (numpy's searchsorted of a 20M-event window's 180k zones cost 25-35 ms, mostly in
    mispredicted branches and cache misses; 5-10 ms there); this numpy loop, one search call
    per range, is the fallback and the reference (`PURE_LOD_ENV`)."""
    first, end = np.empty(len(first_keys), np.int64), np.empty(len(first_keys), np.int64)
    compiled = _compiled()
    if compiled is not None:
        compiled.first_at_least(np.ascontiguousarray(values, np.int64), lo, hi, offsets,
                                np.ascontiguousarray(first_keys, np.int64), first,
                                np.ascontiguousarray(end_keys, np.int64), end)
        return first, end
    for r in np.flatnonzero(np.diff(offsets)).tolist():
        here = slice(int(offsets[r]), int(offsets[r + 1]))
        first[here] = lo[r] + np.searchsorted(values[lo[r] : hi[r]], first_keys[here], "left")
    owner = np.repeat(np.arange(len(lo), dtype=np.int64), np.diff(offsets))
    return first, _zone_ends(values, first, end_keys, hi[owner])


#: Steps `_zone_ends` walks forward before it searches instead.
_ZONE_STEPS = 4


def _zone_ends(values: np.ndarray, first: np.ndarray, end: np.ndarray,
               hi: np.ndarray) -> np.ndarray:
    """Per zone, the first position from `first` (below `hi`, or `hi`) whose value is at least
    `end`. Zones are a few ps wide: most hold no start, a few one or two, so a walk of a few
    steps finds their ends (a binary search of every zone cost as much again as finding their
    first positions); the rare longer ones are searched."""
    last = first.copy()
    active = np.flatnonzero(last < hi)
    for _ in range(_ZONE_STEPS):
        active = active[values[last[active]] < end[active]]
        if not len(active):
            return last
        last[active] += 1
        active = active[last[active] < hi[active]]
    for k in active.tolist():  # crowded zones (many events at one instant)
        last[k] += np.searchsorted(values[last[k] : hi[k]], end[k], "left")
    return last


@dataclass(frozen=True)
class Scanned:
    """`scan_ranges`' answer: what trace/window.py's scan keeps of the ranges' events."""

    overlapping: int  # events of the ranges that end at or after the window's start
    kept: np.ndarray  # int64 ids, ascending
    block_first: np.ndarray  # int64 id of each density block's first event
    block_count: np.ndarray  # int64 events per block (>= 2)
    block_end_ps: np.ndarray  # int64 latest end in each block


def scan_ranges(start_ps: np.ndarray, end_ps: np.ndarray, block_max_ps: np.ndarray,
                lo: np.ndarray, hi: np.ndarray, a_ps: int, b_ps: int,
                pixel_ps: float) -> Scanned | None:
    """The compiled `_lod.scan_ranges` over whole segments' candidates [lo[k], hi[k])
    (ascending, non-empty, one range per segment): the kept events and density blocks of
    trace/window.py's `_overlapping` and `_scan` read in one pass, with no column of the
    candidates (the first window over a 10M-event capture's 23M overlapping rows gathered
    ~400 MB there, and took 0.4-0.9 s; ~4 ns per candidate here, less where the block maxima
    `block_max_ps` say 64 events hold nothing to keep); None where it is not built
    or `PURE_LOD_ENV` turns it off (then numpy's scan, the reference). Ranges are
    independent: a few groups of them are read side by side (column_threads.py; the pass
    releases the GIL), their answers one after another. Each group's outputs are as long as
    its candidates, but only the part written is touched (fresh pages), and copied out."""
    compiled = _compiled()
    if compiled is None or start_ps.dtype != np.int64 or end_ps.dtype != np.int64:
        return None
    assert FANOUT == 64, "_lod.c scan_ranges reads block_max_ps in blocks of 64 events"
    lo, hi = np.ascontiguousarray(lo, np.int64), np.ascontiguousarray(hi, np.int64)
    start_ps, end_ps = np.ascontiguousarray(start_ps), np.ascontiguousarray(end_ps)
    block_max_ps = np.ascontiguousarray(block_max_ps, np.int64)
    threshold_ps = pixel_ps - margin_ps(a_ps, b_ps, pixel_ps)
    sizes = hi - lo
    total = int(sizes.sum())
    parts = max(1, min(column_threads.threads(), len(lo), total // column_threads.MIN_WORK))
    # Group g: the ranges whose candidates begin in [g, g + 1) * total / parts.
    cuts = np.searchsorted(np.cumsum(sizes) - sizes, np.arange(parts + 1) * (total / parts))
    cuts[-1] = len(lo)
    groups = [(int(g0), int(g1)) for g0, g1 in zip(cuts[:-1], cuts[1:], strict=True)
              if g1 > g0]

    def scan(group: tuple[int, int]) -> Scanned:
        g0, g1 = group
        size = int(sizes[g0:g1].sum())
        kept = np.empty(size, np.int64)
        blocks = np.empty((3, size // 2), np.int64)
        overlapping, num_kept, num_blocks = compiled.scan_ranges(
            start_ps, end_ps, lo[g0:g1], hi[g0:g1], int(a_ps), float(pixel_ps), kept,
            blocks[0], blocks[1], blocks[2], block_max_ps, float(threshold_ps))
        found = blocks[:, :num_blocks].copy()
        return Scanned(overlapping, kept[:num_kept].copy(), found[0], found[1], found[2])

    if not groups:
        return Scanned(0, *(np.zeros(0, np.int64) for _ in range(4)))
    answers = column_threads.map_lines(scan, groups, total)
    if len(answers) == 1:
        return answers[0]
    return Scanned(sum(a.overlapping for a in answers),
                   *(np.concatenate([getattr(a, name) for a in answers])
                     for name in ("kept", "block_first", "block_count", "block_end_ps")))
