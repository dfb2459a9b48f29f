"""The trace index of one profile: every event per track, ready for window queries.

Tracks: a process per plane (devices first by ordinal, then `/host:CPU`, then other planes with
lines), a thread per line. Lines are told apart only by `producers.kind_of`: the lines that are
neither host threads nor streams (the producer's Steps, XLA Modules, TensorFlow Ops, XLA Ops,
..., whatever their id form: TF <= 2.4's sign-extended int32 ids, TPU's small ids) are shown
once each, above the streams, in the order Steps, XLA Modules, then the ops lines. On a GPU
plane, `trace/derived.py` derives from the kernels each of those tracks *the producer did not
write*, track by track: a TF 2.4 plane with its own Steps and TensorFlow Ops lines gets no
second Steps or TensorFlow Ops track, but still a derived XLA Ops track where its kernels name
HLO ops. Then the streams by line id. Host threads are grouped by pool name (`python` first,
then `tf_Compute/...`, `tf_data_.../...` by name), then by id. Events are named as
`producers.trace_event_names` says (on TPU the op's display name, `broadcast.2`, not its
whole HLO text).

Storage: all events in one set of columns, ordered by (track, depth, start); an event's id is
its position there, so ids are stable for a file. Tracks are stored every line track first (in
the order shown), then every derived track: the line events' ids do not depend on the derived
tracks, which an index of the lines alone (`build_index(derived=False)`) shares with the whole
one. The order shown is each process's `threads` (`Thread.track` is the storage position).
Each (track, depth) is a *segment*: its starts are sorted, and the running maximum of ends
within the segment (`running_max_ends`, kept per block of 64 events, trace/max_ends.py; per
event, `max_end_ps`, only past 2^18 segments) finds the events of a segment that overlap a
window with two binary searches (events at one depth rarely overlap, so a long event starting
long before the window does not widen the search for the others). `source_line`/`source_row`
point back to the XEvent for details; derived events point to the first event they cover.

Times are ps from `Profile.origin_ns`; `absolute_origin_ns` is that zero in Unix ns (TF's
normalized captures count line timestamps from the `profile_start_time` plane stat).

`build_index(profile)` builds it; `trace_index(profile)` (trace/index_cache.py) builds it once
per decoded profile, or reads it from the disk cache, and keeps it while the profile is alive
(the store keeps decoded profiles).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tb_profile_plugin import column_threads, memory_release
from tb_profile_plugin.analysis.events.profile_cache import forget_made, release_scratch
from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.request_budget import checkpoint
from tb_profile_plugin.trace.depth import nesting_order, nesting_order_into
from tb_profile_plugin.trace.derived import (
    FRAMEWORK_OPS,
    STEP_BUSY,
    STEPS,
    TF_OPS,
    XLA_MODULES,
    XLA_OPS,
    derive_tracks,
)
from tb_profile_plugin.trace.derived import prepare as prepare_derived
from tb_profile_plugin.trace.lod import levels_of, summarise
from tb_profile_plugin.trace.max_ends import RunningMaxEnds
from tb_profile_plugin.xspace.model import EventMetadataTable, Line, Plane, Profile
from tb_profile_plugin.xspace.producers import (
    LineKind,
    PlaneKind,
    kind_of,
    plane_kind,
    trace_event_names,
)
from tb_profile_plugin.xspace.schema import (
    HOST_PLANE_NAME,
    TASK_ENVIRONMENT_PLANE_NAME,
    is_device_plane,
)

#: The deepest nesting of a track the trace viewer shows (levels below its root); a deeper
#: track (identical or zero-length events nested in one another, which no profiler writes
#: for real code) is a 422 naming the thread, before its per-level structures are built.
MAX_TRACK_DEPTH = 100_000

#: Unix ns below this are taken as relative to the capture's `profile_start_time` (~1 day).
_RELATIVE_TIMESTAMP_MAX_NS = 86_400 * 10**9
_DERIVED_ORDER = (STEPS, STEP_BUSY, XLA_MODULES, TF_OPS, FRAMEWORK_OPS, XLA_OPS)
_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class Thread:
    tid: int
    name: str
    sort_index: int
    max_depth: int
    num_events: int
    track: int  # index into TraceIndex.tracks
    derived: bool  # made by this index, not a line of the file


@dataclass(frozen=True)
class Process:
    pid: int
    name: str
    sort_index: int
    plane_index: int
    threads: list[Thread]


class IndexColumns:
    """The index's per-event columns and its level-of-detail block maxima: arrays, or (an
    index from the disk cache, trace/index_cache.py) read on first use by `read`, so that a
    window the cache already answered reads none of them. Kept apart from `TraceIndex`'s
    fields so that measuring the index counts what was read (`model.result_nbytes`)."""

    NAMES = ("start_ps", "end_ps", "name_id", "source_row", "block_max_ps",
             "derived_source_line")

    def __init__(self, arrays: dict[str, np.ndarray], length: int,
                 read: Any = None, unread_nbytes: int = 0) -> None:
        self.arrays = dict(arrays)
        self.length = length
        self.unread_nbytes = unread_nbytes  # of the columns `read` will read
        self._read = read  # name -> array, for the names not in `arrays`
        self._lock = threading.Lock()

    def get(self, name: str) -> np.ndarray:
        array = self.arrays.get(name)
        if array is None:
            with self._lock:
                array = self.arrays.get(name)
                if array is None:
                    array = self.arrays[name] = self._read(name)
                    self.unread_nbytes -= int(array.nbytes)
        return array

    @property
    def nbytes(self) -> int:
        """The columns' bytes, read or not."""
        return sum(int(a.nbytes) for a in self.arrays.values()) + self.unread_nbytes

    def unread(self) -> list[str]:
        """The columns not read yet (tests and the bench check what a window read)."""
        return [name for name in self.NAMES if name not in self.arrays]


@dataclass
class TraceIndex:
    profile: Profile
    processes: list[Process]
    tracks: list[Thread]  # in storage order (module docstring, "Storage")
    track_bounds: np.ndarray  # int64, len(tracks) + 1: events of track t
    names: list[str]
    #: start_ps, end_ps (int64), name_id (int32), source_row (int32, int64 from 2^31 events:
    #: the XEvent's row in its line), block_max_ps (level of detail, below) and
    #: derived_source_line (int32 per event of the derived tracks, in storage order): the
    #: properties of the same names.
    columns: IndexColumns
    segment_bounds: np.ndarray  # int64, len(segments) + 1
    segment_track: np.ndarray  # int32 per segment
    segment_depth: np.ndarray  # int32 per segment: the depth of all its events
    #: Level of detail (trace/lod.py): per segment whether its events are disjoint, per block
    #: of 64 events the largest of their durations and gaps before them (`block_max_ps`).
    segment_disjoint: np.ndarray  # bool per segment
    track_source_line: np.ndarray  # int32 per track: its line in `lines`, -1 when derived
    #: (plane index, line position in the plane) of every source line (`lines`).
    line_refs: list[tuple[int, int]]
    absolute_origin_ns: int
    num_derived_events: int
    #: Whether the first window asked of this index is to be kept in the disk cache
    #: (trace/index_cache.py `save_first_window`).
    first_window_pending: bool = False
    #: Whether the columns every window reads are to be read in the background after the
    #: next window (an index from the disk cache whose first window was kept there).
    prefetch_pending: bool = False
    _lazy: dict[str, Any] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)  # lazy() nests

    @property
    def start_ps(self) -> np.ndarray:  # int64
        return self.columns.get("start_ps")

    @property
    def end_ps(self) -> np.ndarray:  # int64
        return self.columns.get("end_ps")

    @property
    def name_id(self) -> np.ndarray:  # int32
        return self.columns.get("name_id")

    @property
    def source_row(self) -> np.ndarray:
        return self.columns.get("source_row")

    @property
    def block_max_ps(self) -> np.ndarray:  # int64 per block of lod.FANOUT events
        return self.columns.get("block_max_ps")

    @property
    def derived_source_line(self) -> np.ndarray:
        return self.columns.get("derived_source_line")

    @property
    def lines(self) -> list[tuple[int, Line]]:
        """(plane index, line) of every source line (resolved on use: the index holds no
        line, so measuring it never reads the profile's columns)."""
        planes = self.profile.planes
        return [(p, planes[p].lines[k]) for p, k in self.line_refs]

    def __len__(self) -> int:
        return self.columns.length

    @property
    def first_ps(self) -> int:
        """The earliest start (kept: every window request asks for it)."""
        return int(self.lazy("first_ps", lambda: int(self.start_ps.min()) if len(self) else 0))

    @property
    def last_ps(self) -> int:
        return int(self.lazy("last_ps", lambda: int(self.end_ps.max()) if len(self) else 0))

    @property
    def lod_levels(self) -> list[np.ndarray]:
        """The block maxima and the levels above them (trace/lod.py), built on first use."""
        levels: list[np.ndarray] = self.lazy("lod_levels", lambda: levels_of(self.block_max_ps))
        return levels

    @property
    def depth(self) -> np.ndarray:
        """int32 per event (built on first use: a segment's events share its depth)."""
        depth: np.ndarray = self.lazy("depth", lambda: np.repeat(
            self.segment_depth, np.diff(self.segment_bounds)))
        return depth

    def depth_of(self, event_ids: np.ndarray) -> np.ndarray:
        segment = np.searchsorted(self.segment_bounds, event_ids, "right") - 1
        return self.segment_depth[segment]

    @property
    def source_line(self) -> np.ndarray:
        """int32 per event: its source line in `lines` (built on first use)."""
        line: np.ndarray = self.lazy("source_line", self._source_lines)
        return line

    def _source_lines(self) -> np.ndarray:
        line = np.repeat(self.track_source_line, np.diff(self.track_bounds))
        line[line < 0] = self.derived_source_line
        return line

    def source_line_of(self, event_id: int) -> int:
        track = int(self.track_of(np.array([event_id]))[0])
        line = int(self.track_source_line[track])
        if line >= 0:
            return line
        derived_before = sum(int(self.track_bounds[t + 1] - self.track_bounds[t])
                             for t in range(track) if self.track_source_line[t] < 0)
        at = derived_before + event_id - int(self.track_bounds[track])
        return int(self.derived_source_line[at])

    @property
    def max_end_ps(self) -> np.ndarray:
        """int64 per event: the running maximum of ends within each segment (built on first
        use; in a disjoint segment it is the end itself)."""
        max_end: np.ndarray = self.lazy("max_end_ps", self._max_ends)
        return max_end

    def _max_ends(self) -> np.ndarray:
        max_end = np.array(self.end_ps)
        for s in np.flatnonzero(~self.segment_disjoint).tolist():
            seg = max_end[self.segment_bounds[s] : self.segment_bounds[s + 1]]
            np.maximum.accumulate(seg, out=seg)
        return max_end

    @property
    def running_max_ends(self) -> RunningMaxEnds:
        """The running maximum of ends of the overlapping segments' events, per block of 64
        (trace/max_ends.py: 1/64 of an int64 per event), built on first use."""
        built: RunningMaxEnds = self.lazy("running_max_ends", lambda: RunningMaxEnds(
            self.end_ps, self.segment_bounds, self.segment_disjoint))
        return built

    def track_of(self, event_ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.track_bounds, event_ids, "right") - 1

    def lazy(self, key: str, build: Any) -> Any:
        """A structure built on first use (details, flows, search) and kept with the index."""
        with self._lock:
            if key not in self._lazy:
                self._lazy[key] = build()
            return self._lazy[key]

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in self.columns.arrays.values())


def absolute_origin_ns(profile: Profile) -> int:
    """Unix ns of the profile's time zero (`Profile.origin_ns` is relative to the capture's
    `profile_start_time` in TF's normalized files)."""
    if profile.origin_ns >= _RELATIVE_TIMESTAMP_MAX_NS:
        return profile.origin_ns
    env = profile.plane(TASK_ENVIRONMENT_PLANE_NAME) or profile.plane("Task Environment")
    if env is not None:
        start = env.stat_values().get("profile_start_time")
        if isinstance(start, int) and start > 0:
            return start + profile.origin_ns
    return profile.origin_ns


def _natural(text: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(text))


def _plane_key(plane: Plane) -> tuple[Any, ...]:
    if is_device_plane(plane.name):
        return (0, _natural(plane.name))
    if plane.name == HOST_PLANE_NAME:
        return (1, ())
    return (2, _natural(plane.name))


def _is_track_line(plane: Plane, line: Line) -> bool:
    """A line shown above the streams: not a thread or stream (`producers.kind_of`)."""
    return kind_of(plane, line) not in (LineKind.THREAD, LineKind.STREAM)


def _track_rank(name: str) -> int:
    """Position of a track above the streams: Steps, XLA Modules, the ops lines, the rest."""
    return _DERIVED_ORDER.index(name) if name in _DERIVED_ORDER else len(_DERIVED_ORDER)


def _line_key(plane: Plane, line: Line, device: bool) -> tuple[Any, ...]:
    label = line.label
    if _is_track_line(plane, line):
        return (0, _track_rank(line.name), label, line.id)
    if device:
        return (1, 0, "", line.id)
    pool = label.split("/", 1)[0]
    return (1, 0 if pool == "python" else 1, _natural(pool), _natural(label), line.id)


@dataclass
class _Track:
    name: str
    start_ps: np.ndarray
    #: int64 ends, or (a line's events) their durations, the line's own column: a line's ends
    #: are made only where the compiled pass does not apply (`ends`).
    end_or_duration_ps: np.ndarray
    name_id: np.ndarray
    source_line: np.ndarray | int  # one line's position for a line's own events
    source_row: np.ndarray | None  # None: the events' own rows (a line's events)
    derived: bool

    @property
    def has_durations(self) -> bool:
        return self.source_row is None

    def ends(self) -> np.ndarray:
        if self.has_durations:
            ends: np.ndarray = self.start_ps + self.end_or_duration_ps
            return ends
        return self.end_or_duration_ps


class _Names:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def ids(self, texts: list[str]) -> np.ndarray:
        return np.array([self.index.setdefault(t, len(self.index)) for t in texts] + [-1],
                        np.int32)


def _name_lookup(table: EventMetadataTable, local: np.ndarray,
                 num_events: int) -> np.ndarray | None:
    """The name id (`local`: per row of `table`, then -1) of each metadata id, indexed by the
    id, its last slot -1 for the ids past the table's; None when the ids are not small
    non-negative numbers. One int32 gather per line then names its events, instead of
    `rows_of`'s clip and gather into int64 rows and a second gather (on an 18M-event line,
    0.3 GB less to fault in and three passes fewer)."""
    ids = table.ids
    if len(ids) == 0 or int(ids[0]) < 0 or int(ids[-1]) > max(num_events, 1 << 16):
        return None
    lookup = np.full(int(ids[-1]) + 2, -1, np.int32)
    lookup[ids[::-1]] = local[len(ids) - 1 :: -1]  # a repeated id: its first row, as rows_of
    return lookup


def _line_name_ids(metadata_id: np.ndarray, table: EventMetadataTable, local: np.ndarray,
                   lookup: np.ndarray | None) -> np.ndarray:
    """The name id of each event (-1: metadata the plane does not define)."""
    if lookup is None or len(metadata_id) == 0:
        result: np.ndarray = local[table.rows_of(metadata_id)]
        return result
    if int(metadata_id.min()) >= 0 and int(metadata_id.max()) < len(lookup):
        return lookup[metadata_id]
    return lookup[np.clip(metadata_id, -1, len(lookup) - 1)]  # -1: the last slot, -1


def build_index(profile: Profile, *, derived: bool = True,
                analyses_made: Callable[[], None] | None = None) -> TraceIndex:
    """The index of `profile`'s lines and (`derived`) the GPU planes' derived tracks;
    `analyses_made()` is called once the analyses the derived tracks read are made, before the
    tracks are (the index of the lines alone, trace/lines_first.py, is dropped there: the
    derived tracks and the whole index's columns are the build's peak, 1.46 GB at 10M
    events, and it is not held with them)."""
    names = _Names()
    lines: list[tuple[int, Line]] = []
    line_position: dict[int, int] = {}
    per_process: list[tuple[Plane, int, list[_Track]]] = []
    gpu_planes: list[tuple[int, list[Line]]] = []  # (position in per_process, shown lines)
    for p_index in sorted(range(len(profile.planes)), key=lambda i: _plane_key(profile.planes[i])):
        checkpoint()
        plane = profile.planes[p_index]
        if not plane.lines:
            continue
        device = is_device_plane(plane.name)
        table = plane.event_metadata
        local = names.ids(trace_event_names(plane))  # TPU: the ops' display names
        lookup = _name_lookup(table, local, sum(len(ln.events) for ln in plane.lines))
        unknown = "<unknown event metadata>"
        tracks: list[_Track] = []
        plane_lines = sorted(plane.lines, key=lambda ln: _line_key(plane, ln, device))
        for line in plane_lines:
            line_position[id(line)] = len(lines)
            lines.append((p_index, line))
            name_id = _line_name_ids(line.events.metadata_id, table, local, lookup)
            if len(name_id) and int(name_id.min()) < 0:
                name_id = np.where(name_id < 0, names.ids([unknown])[0], name_id)
            tracks.append(_Track(
                line.label, line.events.start_ps, line.events.duration_ps, name_id,
                line_position[id(line)], None, False,
            ))
        if derived and plane_kind(plane.name) == PlaneKind.GPU:
            gpu_planes.append((len(per_process), plane_lines))
        per_process.append((plane, p_index, tracks))
    made: list[str] = []
    try:
        if gpu_planes:
            made = prepare_derived(profile, steps=any(
                STEPS not in _written_tracks(per_process[k][0]) for k, _ in gpu_planes))
        if analyses_made is not None:
            analyses_made()
        # Then the GPU planes' derived tracks, their names numbered after every line's (a
        # line event's name id does not depend on the derived tracks either).
        for k, plane_lines in gpu_planes:
            checkpoint()
            plane, p_index, tracks = per_process[k]
            per_process[k] = (plane, p_index, _with_derived_tracks(
                profile, p_index, plane_lines, tracks, names, line_position))
    finally:
        # The derived tracks are made (or the build stopped): the analyses' canonical and
        # stat columns (~40 bytes per event) are not held while the index's columns are
        # assembled beside them, nor the analyses this build made (the event table, nesting,
        # forest, executions and steps: ~30 bytes per event more, held for as long as the
        # store keeps the profile otherwise).
        release_scratch(profile)
        forget_made(profile, made)  # (those an earlier view or another thread made stay)
        memory_release.release_now()  # (what they freed is in glibc's heaps: given back now)
    return _assemble(profile, per_process, list(names.index), lines)


def _written_tracks(plane: Plane) -> set[str]:
    """The names of the plane's own lines above the streams (Steps, TensorFlow Ops, ...)."""
    return {ln.name for ln in plane.lines if _is_track_line(plane, ln)}


def _with_derived_tracks(profile: Profile, p_index: int, plane_lines: list[Line],
                         tracks: list[_Track], names: _Names,
                         line_position: dict[int, int]) -> list[_Track]:
    """A GPU plane's line tracks and its derived tracks, in their shown order. The
    producer's own lines (TF <= 2.4: Steps, TensorFlow Ops, ...) are shown once: a track is
    derived only where no line of that name exists. (A function of its own: nothing of the
    derived tracks stays in the caller's frame once the index owns them.)"""
    plane = profile.planes[p_index]
    written = _written_tracks(plane)
    derived = []
    for d in derive_tracks(profile, p_index, written):
        pos = np.array([line_position[id(ln)] for _, ln in d.table.lines], np.int32)
        k = d.table.line_index[d.source]
        # Rows within their line, in the index's own type (int32 where they fit: 4 bytes per
        # derived row less while the tracks wait to be placed).
        row = d.source - d.table.line_bounds[k]
        derived.append(_Track(
            d.name, d.start_ps, d.end_ps, names.ids(d.texts)[d.text_id],
            pos[k], row.astype(np.int32 if len(d.table) < 2**31 else np.int64), True,
        ))
        del row
    # Derived and written tracks interleave in one order above the streams (a stable
    # sort: the lines keep their own order otherwise).
    ranks = [_track_rank(t.name) for t in derived] + [
        _track_rank(ln.name) if _is_track_line(plane, ln) else len(_DERIVED_ORDER) + 1
        for ln in plane_lines]
    both = derived + tracks
    return [both[i] for i in sorted(range(len(ranks)), key=ranks.__getitem__)]


def _assemble(
    profile: Profile, per_process: list[tuple[Plane, int, list[_Track]]], names: list[str],
    lines: list[tuple[int, Line]],
) -> TraceIndex:
    """The columns of every track, in storage order: each track's events gathered once, by
    (depth, start), straight into the index's columns (no per-track copies joined later)."""
    n = sum(len(t.start_ps) for _, _, tracks in per_process for t in tracks)
    num_derived = sum(len(t.start_ps) for _, _, tracks in per_process for t in tracks
                      if t.derived)
    start_ps = np.empty(n, np.int64)
    end_ps = np.empty(n, np.int64)
    name_id = np.empty(n, np.int32)
    source_row = np.empty(n, np.int32 if n < 2**31 else np.int64)
    derived_source_line = np.empty(num_derived, np.int32)
    track_source_line: list[int] = []
    processes: list[Process] = []
    track_sizes: list[int] = []
    segment_sizes: list[np.ndarray] = []
    segment_track: list[np.ndarray] = []
    # Where each track's events go (its slice of the columns, and of the derived lines' column
    # for a derived track); then the tracks are placed side by side (column_threads.py: the
    # compiled pass releases the GIL), each writing its own slices only.
    # Storage order (module docstring): every line track, then every derived track.
    stored = [(p, k) for derived in (False, True) for p, (_, _, tracks) in enumerate(per_process)
              for k, t in enumerate(tracks) if t.derived == derived]
    storage_of = {where: position for position, where in enumerate(stored)}
    placements: list[tuple[_Track, slice, slice | None]] = []
    at = at_derived = 0
    for p, k in stored:
        t = per_process[p][2][k]
        size = len(t.start_ps)
        derived_here = None
        if not isinstance(t.source_line, int):
            derived_here = slice(at_derived, at_derived + size)
            at_derived += size
        placements.append((t, slice(at, at + size), derived_here))
        at += size
    outputs = _Outputs(start_ps, end_ps, name_id, source_row, derived_source_line,
                       _Releaser())
    checkpoint()
    counts = column_threads.map_lines(
        lambda placement: _place_track(*placement, outputs), placements, n)
    memory_release.release_now()  # what the last tracks placed gave back
    size_of = [p[1].stop - p[1].start for p in placements]
    flat: list[Thread | None] = [None] * len(stored)
    for pid, (plane, p_index, tracks) in enumerate(per_process, start=1):
        threads = []
        # A line's tid is its place among the process's lines, a derived track's after them
        # (shown above them by `sort_index`): a line keeps its tid whether or not the index
        # has the derived tracks (trace/lines_first.py).
        tids = iter(range(1, len(tracks) + 1))
        line_tids = {k: next(tids) for k, t in enumerate(tracks) if not t.derived}
        tid_of = [line_tids[k] if k in line_tids else next(tids) for k in range(len(tracks))]
        for shown, t in enumerate(tracks):
            track, tid = storage_of[(pid - 1, shown)], tid_of[shown]
            depths, size = counts[track], size_of[track]
            if len(depths) > MAX_TRACK_DEPTH + 1:
                raise UnreadableProfile(
                    f"thread {t.name!r} of {plane.name!r} nests its events "
                    f"{len(depths) - 1:,} levels deep; the trace viewer shows at most "
                    f"{MAX_TRACK_DEPTH:,} (a profiler writes no such nesting for real code: "
                    "identical or zero-length events inside one another); the other views "
                    "read this host")
            thread = Thread(tid, t.name, shown, len(depths) - 1 if size else 0,
                            size, track, t.derived)
            threads.append(thread)
            flat[track] = thread
        processes.append(Process(pid, plane.name, pid - 1, p_index, threads))
    for track, (t, _, _) in enumerate(placements):
        track_source_line.append(t.source_line if isinstance(t.source_line, int) else -1)
        segment_sizes.append(counts[track])
        segment_track.append(np.full(len(counts[track]), track, np.int32))
        track_sizes.append(size_of[track])
    # Every track is placed: their own columns go before the summaries are made beside the
    # index (derived tracks' starts, ends, names and sources: ~40 bytes per derived row,
    # 480 MB at a 10M-event capture). The caller's lists are emptied: it reads none again.
    if placements:
        del t
    placements.clear()
    for _, _, tracks in per_process:
        tracks.clear()

    sizes = np.concatenate(segment_sizes) if segment_sizes else np.zeros(0, np.int64)
    segment_bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    disjoint, block_max_ps = summarise(start_ps, end_ps, segment_bounds)
    columns = IndexColumns({"start_ps": start_ps, "end_ps": end_ps, "name_id": name_id,
                            "source_row": source_row, "block_max_ps": block_max_ps,
                            "derived_source_line": derived_source_line}, n)
    line_number = {id(line): k for plane in profile.planes for k, line in enumerate(plane.lines)}
    return TraceIndex(
        profile=profile,
        processes=processes,
        tracks=[t for t in flat if t is not None],
        track_bounds=np.concatenate([[0], np.cumsum(np.array(track_sizes, np.int64))]),
        names=names,
        columns=columns,
        segment_bounds=segment_bounds,
        segment_track=(np.concatenate(segment_track) if segment_track
                       else np.zeros(0, np.int32)),
        segment_depth=(np.concatenate([np.arange(len(c), dtype=np.int32)
                                       for c in segment_sizes]) if segment_sizes
                       else np.zeros(0, np.int32)),
        segment_disjoint=disjoint,
        track_source_line=np.array(track_source_line, np.int32),
        line_refs=[(p_index, line_number[id(line)]) for p_index, line in lines],
        absolute_origin_ns=absolute_origin_ns(profile),
        num_derived_events=num_derived,
    )


@dataclass(frozen=True)
class _Outputs:
    """The index's columns, which every track writes its own slices of."""

    start_ps: np.ndarray
    end_ps: np.ndarray
    name_id: np.ndarray
    source_row: np.ndarray
    derived_source_line: np.ndarray
    releaser: _Releaser


class _Releaser:
    """Gives the heap back to the system each time the placed tracks' own arrays freed
    `RELEASE_BYTES` more (`memory_release.release_now`): a derived track's columns (~28 bytes
    per row, 15M rows at a 10M-event capture) are below glibc's mmap threshold, so what they
    free stays in the heap, where the index's fresh columns (mmapped) do not reuse it; freed
    and given back as each track is placed, they make room for the columns being written."""

    RELEASE_BYTES = 64 << 20

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._freed = 0

    def freed(self, nbytes: int) -> None:
        with self._lock:
            self._freed += nbytes
            if self._freed < self.RELEASE_BYTES:
                return
            self._freed = 0
        memory_release.release_now()


_NO_EVENTS = np.zeros(0, np.int64)


def _release(t: _Track, out: _Outputs) -> None:
    """Drops the placed track's own arrays (the index's columns hold its events now); views
    of the profile's columns (a line's starts and durations) free nothing."""
    nbytes = sum(int(a.nbytes) for a in (t.start_ps, t.end_or_duration_ps, t.name_id,
                                          t.source_row, t.source_line)
                 if isinstance(a, np.ndarray) and a.base is None)
    t.start_ps = t.end_or_duration_ps = t.name_id = _NO_EVENTS
    if t.source_row is not None:
        t.source_row = _NO_EVENTS
    if not isinstance(t.source_line, int):
        t.source_line = _NO_EVENTS
    out.releaser.freed(nbytes)


def _place_track(t: _Track, here: slice, derived_here: slice | None,
                 out: _Outputs) -> np.ndarray:
    """Writes the track's events into `here` of the columns by (depth, start), and their
    source rows (and lines, for a derived track); returns the events per depth."""
    # a line's own events: the pass writes the order straight into the source rows
    rows_out = out.source_row[here] if t.source_row is None else None
    placed = nesting_order_into(t.start_ps, t.end_or_duration_ps, t.name_id,
                                out.start_ps[here], out.end_ps[here], out.name_id[here],
                                durations=t.has_durations, order_out=rows_out)
    if placed is not None:  # the columns were written in order by the same pass
        order, counts = placed
    else:
        ends = t.ends()
        order, counts = nesting_order(t.start_ps, ends)
        np.take(t.start_ps, order, out=out.start_ps[here], mode="clip")
        np.take(ends, order, out=out.end_ps[here], mode="clip")
        np.take(t.name_id, order, out=out.name_id[here], mode="clip")
        del ends
    if derived_here is not None:
        out.derived_source_line[derived_here] = t.source_line[order]  # type: ignore[index]
    if t.source_row is None:
        if order is not rows_out:  # else written by the pass
            out.source_row[here] = order
    else:
        out.source_row[here] = t.source_row[order]
    del order
    _release(t, out)
    return counts
