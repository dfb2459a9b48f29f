"""All events of a profile as one flat table of columns, the input of every analysis.

Lines of all planes are concatenated, but only the lines that hold real events
(xspace/producers/ `LineKind.holds_events`: derived lines in any id form repeat what real lines
hold) and not CUSTOM planes. Each event keeps its plane and line index, its start
and end in ps (from `Profile.origin_ns`), and the row of its name in a profile-wide name
table. Stats are looked up by name and returned as dense per-event columns.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.column_sizes import narrowest_int
from tb_profile_plugin.xspace.hlo_modules import hlo_instructions
from tb_profile_plugin.xspace.model import Line, Plane, Profile
from tb_profile_plugin.xspace.producers import (
    CanonicalColumns,
    PlaneKind,
    TextIndex,
    canonical_columns,
    is_accelerator_plane,
    kind_of,
    plane_kind,
    str_codes,
)


@dataclass(frozen=True)
class SparseStat:
    """An integer stat of the events that carry it: `rows` (event indices, ascending) and their
    `values` (EventTable.stat_rows)."""

    rows: np.ndarray  # int64
    values: np.ndarray  # int64

    def where(self, keep: np.ndarray) -> SparseStat:
        return SparseStat(self.rows[keep], self.values[keep])

    def at(self, events: np.ndarray, fill: int) -> np.ndarray:
        """The value at each of `events`, `fill` where the event does not carry the stat."""
        if len(self.rows) == 0:
            return np.full(len(events), fill, np.int64)
        slot = np.minimum(np.searchsorted(self.rows, events), len(self.rows) - 1)
        return np.where(self.rows[slot] == events, self.values[slot], fill)

    def mask(self, num_events: int, keep: np.ndarray | None = None) -> np.ndarray:
        """Per event: carries the stat (and `keep` holds for its value)."""
        out = np.zeros(num_events, bool)
        out[self.rows if keep is None else self.rows[keep]] = True
        return out


@dataclass
class EventTable:
    """Flat columns over every event of the chosen lines; `line_bounds[k]` = start of line k."""

    profile: Profile
    lines: list[tuple[Plane, Line]]
    line_bounds: np.ndarray  # int64, len(lines) + 1
    plane_index: np.ndarray  # int8/16/32, the narrowest that holds every plane index
    line_index: np.ndarray  # int8/16/32 (index into self.lines), likewise
    start_ps: np.ndarray  # int64
    end_ps: np.ndarray  # int64
    name_id: np.ndarray  # int32 (index into self.names)
    names: list[str]  # profile-wide unique event names
    _stat_cache: dict[tuple[str, str, int], np.ndarray] = field(default_factory=dict)
    _canonical: CanonicalColumns | None = None
    #: Held while the canonical columns are built: one build, also when a pool thread builds
    #: them beside the forest (host_analysis.analyze).
    _canonical_lock: threading.Lock = field(default_factory=threading.Lock, repr=False,
                                            compare=False)

    def __len__(self) -> int:
        return len(self.start_ps)

    @property
    def duration_ps(self) -> np.ndarray:
        return self.end_ps - self.start_ps

    def durations_of(self, events: np.ndarray) -> np.ndarray:
        """`duration_ps[events]` without the column of every event (8 bytes each), gathered
        in chunks (no whole gathers of the starts and ends beside the result)."""
        if events.dtype == bool:
            events = np.flatnonzero(events)
        out = np.empty(len(events), np.int64)
        chunk = column_sizes.CHUNK_EVENTS
        for lo in range(0, len(events), chunk):
            part = events[lo : lo + chunk]
            np.subtract(self.end_ps[part], self.start_ps[part], out=out[lo : lo + len(part)])
        return out

    def names_matching(self, predicate: object) -> np.ndarray:
        """Boolean per name row: predicate(name) (a Python loop over names, not events)."""
        return np.fromiter((bool(predicate(n)) for n in self.names), bool, len(self.names))  # type: ignore[operator]

    def event_mask(self, name_mask: np.ndarray) -> np.ndarray:
        return name_mask[self.name_id]

    def int_stat(self, stat_name: str, fill: int = -1, *, keep: bool = True) -> np.ndarray:
        """Dense int64 column of an integer stat (refs give the referenced stat id); read-only
        and shared (a stat no line writes costs no memory). `keep=False`: a column made here
        is the caller's alone, not kept to the build's end (a pass that reads it once)."""
        key = ("int", stat_name, fill)
        out = self._stat_cache.get(key)
        if out is None:
            ids = [(k, plane.stat_metadata.id_of(stat_name))
                   for k, (plane, _) in enumerate(self.lines)]
            written = [(k, stat_id) for k, stat_id in ids if stat_id is not None]
            if not written:  # no line has the stat: one shared read-only value, no column
                out = np.broadcast_to(np.int64(fill), (len(self),))
            else:
                out = np.full(len(self), fill, np.int64)
                for k, stat_id in written:
                    lo, hi = self.line_bounds[k], self.line_bounds[k + 1]
                    out[lo:hi] = self.lines[k][1].stats.int_column(stat_id, hi - lo, fill)
                out.flags.writeable = False  # shared by every caller: never written
            if keep:
                self._stat_cache[key] = out
        return out

    def int_stat_at_least(self, stat_name: str, low: int) -> np.ndarray:
        """Per event: `int_stat(stat_name) >= low`, made line by line without the int64
        column (`low` > -1: an event without the stat is False). Not kept: a mask read once
        costs one byte per event, not the eight a kept column holds to the build's end."""
        out = np.zeros(len(self), bool)
        for k, (plane, line) in enumerate(self.lines):
            stat_id = plane.stat_metadata.id_of(stat_name)
            if stat_id is not None:
                lo, hi = int(self.line_bounds[k]), int(self.line_bounds[k + 1])
                np.greater_equal(line.stats.int_column(stat_id, hi - lo, -1), low,
                                 out=out[lo:hi])
        return out

    def int_stat_rows(self, stat_name: str, lo: int, hi: int, fill: int = -1) -> np.ndarray:
        """`int_stat(stat_name, fill)[lo:hi]`: the kept column's slice where it was made,
        else the rows' own values (not kept: the lines of one plane, not every event)."""
        kept = self._stat_cache.get(("int", stat_name, fill))
        if kept is not None:
            return kept[lo:hi]
        out = np.full(hi - lo, fill, np.int64)
        first = int(np.searchsorted(self.line_bounds, lo, "right")) - 1
        for k in range(max(first, 0), len(self.lines)):
            begin, end = int(self.line_bounds[k]), int(self.line_bounds[k + 1])
            if begin >= hi:
                break
            plane, line = self.lines[k]
            stat_id = plane.stat_metadata.id_of(stat_name)
            if stat_id is None or end <= lo:
                continue
            column = line.stats.int_column(stat_id, end - begin, fill)
            a, b = max(begin, lo), min(end, hi)
            out[a - lo : b - lo] = column[a - begin : b - begin]
        return out

    def stat_rows(self, stat_name: str) -> SparseStat:
        """The events that carry an integer stat and its value (the last one where an event
        has it twice, as `int_stat`), without a dense column: flow, step and marker stats sit
        on a few percent of the events, and a dense int64 column costs 8 bytes for each.
        Not kept: each caller holds it only while it needs it."""
        rows: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for k, (plane, line) in enumerate(self.lines):
            stat_id = plane.stat_metadata.id_of(stat_name)
            if stat_id is None:
                continue
            row, value = line.stats.last_values(stat_id, len(line.events))
            rows.append(row.astype(np.int64) + int(self.line_bounds[k]))
            values.append(value)
        if not rows:
            return SparseStat(np.zeros(0, np.int64), np.zeros(0, np.int64))
        return SparseStat(np.concatenate(rows), np.concatenate(values))

    def float_stat(self, stat_name: str) -> np.ndarray:
        """Dense float64 column of a numeric stat (NaN where absent)."""
        out = np.full(len(self), np.nan)
        for k, (plane, line) in enumerate(self.lines):
            stat_id = plane.stat_metadata.id_of(stat_name)
            if stat_id is None:
                continue
            lo, hi = self.line_bounds[k], self.line_bounds[k + 1]
            out[lo:hi] = line.stats.float_column(stat_id, int(hi - lo))
        return out

    def str_stat_codes(self, stat_name: str) -> tuple[np.ndarray, list[str]]:
        """A str/ref stat as categorical codes: (code per event (int32), -1 where absent; the
        texts). Read-only where no line has the stat (one shared -1, no column)."""
        codes: np.ndarray | None = None
        index = TextIndex()
        for k, (plane, line) in enumerate(self.lines):
            stat_id = plane.stat_metadata.id_of(stat_name)
            if stat_id is None:
                continue
            lo, hi = int(self.line_bounds[k]), int(self.line_bounds[k + 1])
            local, texts = str_codes(line.stats, stat_id, hi - lo, plane)
            if texts:
                if codes is None:
                    codes = np.full(len(self), -1, np.int32)
                # The shared codes, -1 at the end for a local -1 ("wrap": no buffered copy).
                np.take(index.codes(texts).astype(np.int32), local, out=codes[lo:hi],
                        mode="wrap")
        if codes is None:
            return np.broadcast_to(np.int32(-1), (len(self),)), index.texts
        return codes, index.texts

    @property
    def canonical(self) -> CanonicalColumns:
        """Op name, type, HLO op, module and device time of every event (xspace/producers/)."""
        canonical = self._canonical
        if canonical is None:
            with self._canonical_lock:
                canonical = self._canonical
                if canonical is None:
                    canonical = self._canonical = canonical_columns(
                        self.lines, hlo_instructions(self.profile))
        return canonical

    def release_scratch(self) -> None:
        """Drops the per-event columns kept only to spare recomputing them within one build
        (stat columns, canonical columns: up to ~130 bytes per event); a later caller builds
        them again (analysis/events/profile_cache.py calls this after each outermost build)."""
        self._stat_cache = {}
        self._canonical = None

    @property
    def on_device(self) -> np.ndarray:
        """Per event: on an accelerator plane (GPU, TPU, other device; not CUSTOM)."""
        return self.accelerator_planes[self.plane_index]

    @property
    def accelerator_planes(self) -> np.ndarray:
        """Per plane index (and False after the last): an accelerator plane. `on_device` of
        a part of the events is `accelerator_planes[plane_index[lo:hi]]`, a part's bytes."""
        return np.array([is_accelerator_plane(p.name) for p in self.profile.planes] + [False])


def build_event_table(profile: Profile, plane_filter: object = None) -> EventTable:
    """The flat table of `profile`'s events on non-derived lines (of planes passing the filter)."""
    chosen: list[tuple[int, Plane, Line]] = []
    for p_index, plane in enumerate(profile.planes):
        if plane_filter is not None and not plane_filter(plane.name):  # type: ignore[operator]
            continue
        if plane_kind(plane.name) == PlaneKind.CUSTOM:
            continue  # e.g. a Megascale trace: shown in the trace, not a device of the analyses
        for line in plane.lines:
            if kind_of(plane, line).holds_events:
                chosen.append((p_index, plane, line))
    counts = np.array([len(line.events) for _, _, line in chosen], np.int64)
    bounds = np.zeros(len(chosen) + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])
    # Each line is written straight into the table's columns: no per-line parts joined later
    # (at 10M events each join is a second copy of a column).
    total = int(bounds[-1])
    name_id = np.empty(total, np.int32)  # (a profile has far fewer than 2^31 names)
    # The starts are copied once, then the lines hold views of the copy (`_share_starts`); a
    # later table of the same lines finds them side by side in it and copies nothing.
    shared = _shared_starts([line for _, _, line in chosen], total)
    start = shared if shared is not None else np.empty(total, np.int64)
    end = np.empty(total, np.int64)
    name_index: dict[str, int] = {}
    # Names of the metadata the events use, per plane in metadata order: a plane may define
    # far more (100k unused entries cost nothing here, not a name per entry per line). Each
    # line's metadata rows go into `name_id` first (-1: undefined), are marked per plane,
    # then replaced in place by the names' ids: no other per-event array.
    used_of: dict[int, np.ndarray] = {}
    for k, (p_index, plane, line) in enumerate(chosen):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        meta = plane.event_metadata
        metadata_id = line.events.metadata_id
        chunk = column_sizes.CHUNK_EVENTS  # (rows_of's int64 temporaries: a chunk's)
        for at in range(0, hi - lo, chunk):
            part = slice(lo + at, min(hi, lo + at + chunk))
            name_id[part] = meta.rows_of(metadata_id[at : at + chunk])
        used = used_of.setdefault(p_index, np.zeros(len(meta.ids) + 1, bool))
        used[name_id[lo:hi]] = True  # -1 marks the last slot
        if shared is None:
            start[lo:hi] = line.events.start_ps
        np.add(start[lo:hi], line.events.duration_ps, out=end[lo:hi])
    local_ids_of: dict[int, np.ndarray] = {}
    for p_index, used in used_of.items():
        meta = profile.planes[p_index].event_metadata
        rows = np.flatnonzero(used[:-1])
        local_ids = np.full(len(meta.ids) + 1, -1, np.int32)
        local_ids[rows] = [name_index.setdefault(meta.names[r], len(name_index))
                           for r in rows.tolist()]
        local_ids_of[p_index] = local_ids
    for k, (p_index, _, _) in enumerate(chosen):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        # -1 takes the last slot (-1); "wrap" writes in place without a buffered copy.
        np.take(local_ids_of[p_index], name_id[lo:hi], out=name_id[lo:hi], mode="wrap")
    if shared is None:
        _share_starts(chosen, bounds, start)
    names = list(name_index)
    unknown = "<unknown event metadata>"
    if np.any(name_id < 0):
        name_id[name_id < 0] = len(names)
        names.append(unknown)
    return EventTable(
        profile=profile,
        lines=[(plane, line) for _, plane, line in chosen],
        line_bounds=bounds,
        plane_index=np.repeat(
            np.array([p for p, _, _ in chosen], narrowest_int(len(profile.planes))), counts),
        line_index=np.repeat(np.arange(len(chosen), dtype=narrowest_int(len(chosen))), counts),
        start_ps=start,
        end_ps=end,
        name_id=name_id,
        names=names,
    )


def _share_starts(chosen: list[tuple[int, Plane, Line]], bounds: np.ndarray,
                  start: np.ndarray) -> None:
    """Makes `start` (the table's copy of the lines' starts) read-only and each line hold its
    part of it in place of its own column: one copy of the starts, not two."""
    start.flags.writeable = False
    for k, (_, _, line) in enumerate(chosen):
        if len(line.events):
            line.events.share_starts(start[int(bounds[k]) : int(bounds[k + 1])])


def _shared_starts(lines: list[Line], total: int) -> np.ndarray | None:
    """The lines' starts as one read-only column without a copy, where they already lie side
    by side in one (an earlier table's, `_share_starts`); else None."""
    columns = [line.events.start_ps for line in lines if len(line.events)]
    if not columns:
        return None
    first = columns[0]
    base = first.base
    if (not isinstance(base, np.ndarray) or base.dtype != np.int64 or base.ndim != 1
            or base.flags.writeable or not base.flags.c_contiguous):
        return None
    address = first.__array_interface__["data"][0]
    for column in columns:
        if (column.base is not base or not column.flags.c_contiguous
                or column.__array_interface__["data"][0] != address):
            return None
        address += column.nbytes
    begin = (first.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 8
    return base[begin : begin + total]
