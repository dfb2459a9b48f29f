"""Device ops' self times and the devices' IDLE time: what is left of each op once the ops
directly inside it are taken out, and what no op of a device covers (op_metrics.py builds the
op tables from them). Work is numpy over the device events, a few whole planes or lines at a
time."""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.column_sizes import whole_group_parts
from tb_profile_plugin.analysis.events.nesting import compute_nesting
from tb_profile_plugin.analysis.events.sort_order import group_time_order
from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.analysis.steps.step_db import union_sorted
from tb_profile_plugin.xspace.producers import NO_DEVICE_OFFSET


def direct_self_times(table: EventTable, events: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """`duration` of each of `events` minus that of the events nested directly in it on its
    line (`events` are line-major, as the table is; nested by their starts and ends)."""
    line = table.line_index[events]
    out = np.empty(len(events), np.int64)
    # Lines nest apart: a few whole lines at a time, their parents, starts and ends a part's.
    for lo, hi in whole_groups(line):
        part = events[lo:hi]
        parent = line_parents(line[lo:hi], table.start_ps[part], table.end_ps[part],
                               len(table.lines))
        out[lo:hi] = self_times_of(parent, duration[lo:hi])
    return out


def whole_groups(group: np.ndarray) -> list[tuple[int, int]]:
    """Parts of about `column_sizes.CHUNK_EVENTS` rows, each of whole groups
    (`whole_group_parts`), where `group` is sorted (event indices in order give sorted
    lines and planes); one part otherwise."""
    n = len(group)
    if n <= column_sizes.CHUNK_EVENTS or not bool(np.all(group[1:] >= group[:-1])):
        return [(0, n)] if n else []
    return whole_group_parts(group, column_sizes.CHUNK_EVENTS)


class LineIdle:
    """IDLE of lines taken part by part (each line whole in one part): per line, its span
    (first op start to last op end) minus the sum of its ops' self times."""

    def __init__(self, num_lines: int) -> None:
        self.first = np.full(num_lines, np.iinfo(np.int64).max, np.int64)
        self.last = np.full(num_lines, np.iinfo(np.int64).min, np.int64)
        self.self_sum = np.zeros(num_lines)
        self.present = np.zeros(num_lines, bool)

    def add_spans(self, line: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        np.minimum.at(self.first, line, start)
        np.maximum.at(self.last, line, end)
        self.present[line] = True

    def add_self_times(self, line: np.ndarray, self_time: np.ndarray) -> None:
        # (each line lies in one part: its sum is the one a single bincount gives)
        self.self_sum += np.bincount(line, weights=self_time, minlength=len(self.self_sum))

    def idle_ps(self) -> int:
        p = np.flatnonzero(self.present)
        return int(np.sum(np.maximum(self.last[p] - self.first[p]
                                     - self.self_sum[p].astype(np.int64), 0)))


def line_parents(line: np.ndarray, start: np.ndarray, end: np.ndarray,
                  num_lines: int) -> np.ndarray:
    """The nesting parent of each of events given line-major (`line`: each one's, sorted)."""
    counts = np.bincount(line, minlength=num_lines)
    bounds = np.zeros(num_lines + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])
    return compute_nesting(start, end, bounds).parent


def self_times_of(parent: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """Each event's duration minus those of its direct children (`parent`: nesting parents)."""
    # The children's durations summed into their parent's slot + 1 (slot 0 takes the events
    # with no parent): no compressed copies of the parents and durations.
    child_sum = np.zeros(len(duration) + 1, np.int64)
    np.add.at(child_sum, parent + 1, duration)
    self_time = child_sum[1:]
    np.subtract(duration, self_time, out=self_time)
    return np.maximum(self_time, 0, out=self_time)


def device_self_and_idle_ps(table: EventTable, events: np.ndarray,
                             duration: np.ndarray) -> tuple[np.ndarray, int]:
    """Self time of each of `events` (line-major) and the devices' IDLE.

    Events the device placed (TPU: `device_offset_ps` and `device_duration_ps`) ran over
    their device span, not their trace span: a `copy-done` whose trace lasts 10 us may run
    300 us on the device while the next op's trace starts 20 us later. As the reference
    (xprof 2.24.2, TPU op metrics): ops nest by their device spans (self time = device time
    minus that of the ops directly inside), and a device holding such ops is IDLE for its
    extent (first to last instant of any op's trace or device span) minus the sum of its ops'
    self times. Measured with the reference on synthetic planes: device spans [7, 307) and
    [27, 77) us, traces from 0 us: IDLE 7 us, self times 250 and 50 us. Other devices:
    `direct_self_times` and `device_idle_ps`."""
    placed = _placed(table, events)
    if placed is None:
        return (direct_self_times(table, events, duration),
                device_idle_ps(table, events, duration))
    offset = table.canonical.device_offset_ps[events]
    line = table.line_index[events].astype(np.int64)
    base_ps = np.array([(ln.timestamp_ns - table.profile.origin_ns) * 1000
                        for _, ln in table.lines], np.int64)  # per line, not per event
    trace_start = table.start_ps[events]
    begin = np.where(placed, base_ps[line] + offset, trace_start)
    end = begin + duration
    # Nesting needs each line's events by start (longest first): device spans may reorder.
    order = np.lexsort((-end, begin, line))
    sorted_parent = line_parents(line[order], begin[order], end[order],
                                 len(table.lines)).astype(np.int64)
    parent = np.full(len(events), -1, np.int64)
    has_parent = sorted_parent >= 0
    parent[order[has_parent]] = order[sorted_parent[has_parent]]
    self_time = self_times_of(parent, duration)
    plane = table.plane_index[events].astype(np.int64)
    n = len(table.profile.planes)
    placed_plane = np.zeros(n, bool)
    placed_plane[plane[placed]] = True
    on_placed = placed_plane[plane]
    idle = device_idle_ps(table, events[~on_placed], duration[~on_placed])
    placed_idle = LineIdle(n)  # (per plane: its span less its ops' self times)
    placed_idle.add_spans(plane[on_placed], np.minimum(trace_start, begin)[on_placed],
                          np.maximum(table.end_ps[events], end)[on_placed])
    placed_idle.add_self_times(plane[on_placed], self_time[on_placed])
    return self_time, idle + placed_idle.idle_ps()


def _placed(table: EventTable, events: np.ndarray) -> np.ndarray | None:
    """Per one of `events`: whether the device placed it (`device_offset_ps`); None where
    none is (not held through the nesting and the unions that follow)."""
    if not table.canonical.any_device_offset:
        return None
    placed = table.canonical.device_offset_ps[events] != NO_DEVICE_OFFSET
    return placed if placed.any() else None


def device_idle_ps(table: EventTable, events: np.ndarray, duration: np.ndarray) -> int:
    """Sum over devices of (span - union of busy time over all the device's streams).

    An event is busy for its device time from its start (`duration`: `device_duration_ps`
    where the device reports it), so ops and IDLE add up to the span."""
    if len(events) == 0:
        return 0
    n = len(table.profile.planes)
    busy = np.zeros(n, np.int64)
    first = np.full(n, np.iinfo(np.int64).max, np.int64)
    last = np.full(n, np.iinfo(np.int64).min, np.int64)
    count = np.zeros(n, np.int64)
    # Devices are independent: a few whole planes at a time (integer sums, exact in parts),
    # their sorted starts and ends a part's, not three int64 columns of every device event.
    for lo, hi in whole_groups(table.plane_index[events]):
        plane, start, end = by_plane_and_start(table, events[lo:hi], duration[lo:hi])
        busy += union_sorted(plane, start, end, n)
        np.minimum.at(first, plane, start)
        np.maximum.at(last, plane, end)
        count += np.bincount(plane, minlength=n)
    present = np.flatnonzero(count)
    return int(np.sum(np.maximum(last[present] - first[present] - busy[present], 0)))


def by_plane_and_start(table: EventTable, events: np.ndarray, duration: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(plane, start, end) of `events` (end: start + `duration`), ordered by plane, then
    start (`union_sorted`'s order). The plane codes keep the table's narrow dtype and each
    unsorted column is dropped once its sorted copy exists: three int64 columns live at
    most, not seven (the device IDLE was the overview's peak)."""
    start = table.start_ps[events]
    plane = table.plane_index[events]
    order = group_time_order(plane, start)
    plane = plane[order]
    start = start[order]
    end = duration[order]
    del order
    end += start
    return plane, start, end
