"""The trace index kept in the disk cache beside its profile's columns, so a reopen costs no
rebuild, and, for a big index, its first window, so a reopen reads none of its columns.

An index is a function of its profile (the file's bytes) and of the code that builds it, so its
entry is `<file key>-index<INDEX_FORMAT_VERSION>.tbpi` in the profile cache's directory and
format (xspace/cache/entry.py: one file, a MAC over the header and every array's word sums), its MAC
keyed by that name: an entry of another file or of another version of the index is a miss (a
damaged one is removed), built and written again. Bump `INDEX_FORMAT_VERSION` whenever what
`trace/index.py` builds changes (tracks, their order, derived tracks, columns).

A big entry (`lookup.LAZY_MIN_BYTES` or more) is opened by its header and its small arrays (track
and segment bounds): the per-event columns (`IndexColumns`) are read, and checked, when a
window first needs them; one found damaged then (or out of range) comes from the index built
again, which is written again. The first window asked of such an index is kept beside it
(`<file key>-window<version>.tbpw`: its key, the visible events with the columns the document
shows, the density blocks), so a reopen answers it without reading a column, and without
reading any of the profile's lines (xspace/cache/lazy.py); `prefetch` then reads the columns
every zoom needs in the background.

The profile must come from the store (`ProfileStore` sets `profile.derived.disk_key`); a profile
made otherwise (tests, the CLI's own decodes) has no key and its index is only built.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np

from tb_profile_plugin.analysis.events.profile_cache import forget, per_profile
from tb_profile_plugin.trace import index as index_module
from tb_profile_plugin.trace.index import IndexColumns, Process, Thread, TraceIndex, build_index
from tb_profile_plugin.trace.lod import FANOUT
from tb_profile_plugin.trace.visible import NO_BLOCKS, DensityBlocks, Visible, remember
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.cache import lookup
from tb_profile_plugin.xspace.model import Profile

logger = logging.getLogger(__name__)

INDEX_FORMAT_VERSION = 7
_SUFFIX = ".tbpi"
_WINDOW_SUFFIX = ".tbpw"
#: The index's arrays, in the entry's order, with the dtype each must have (`source_row`: int32
#: below 2^31 events, else int64).
_ARRAYS = {
    "track_bounds": np.int64, "start_ps": np.int64, "end_ps": np.int64, "name_id": np.int32,
    "source_row": np.int32, "segment_bounds": np.int64, "segment_track": np.int32,
    "segment_depth": np.int32, "segment_disjoint": np.bool_, "block_max_ps": np.int64,
    "track_source_line": np.int32, "derived_source_line": np.int32,
}
_EVENT_ARRAYS = ("start_ps", "end_ps", "name_id", "source_row")
#: The arrays of a first window's entry (`save_first_window`), all int64.
#: The events' segments are not kept: `_window_of` finds them from the ids (one search per
#: event, which checking a kept copy would take anyway).
_WINDOW_ARRAYS = ("ids", "start_ps", "end_ps", "name_id", "block_segment", "block_start_ps",
                  "block_end_ps", "block_count", "block_first_id", "block_name_id")


def _entry_key(file_key: str, kind: str = "index") -> str:
    """The entry's name and MAC key: the file's key, what it holds and the index format
    version."""
    return f"{file_key}-{kind}{INDEX_FORMAT_VERSION}"


def save(index: TraceIndex, *, later: bool = False) -> None:
    """Writes `index` beside its profile's cache entry (nothing when the profile has none);
    with `later`, on the cache's writer thread (`cache.save_entry_later`), after the request
    that built it is answered."""
    where = index.profile.derived.disk_key
    if where is None:
        return
    file_key, directory = where
    header = {
        "version": INDEX_FORMAT_VERSION,
        "processes": [[p.pid, p.name, p.sort_index, p.plane_index,
                       [[t.tid, t.name, t.sort_index, t.max_depth, t.num_events, t.track,
                         t.derived] for t in p.threads]] for p in index.processes],
        "names": index.names,
        "lines": [list(ref) for ref in index.line_refs],
        "absolute_origin_ns": index.absolute_origin_ns,
        "num_derived_events": index.num_derived_events,
        "first_ps": index.first_ps, "last_ps": index.last_ps,
    }
    arrays = [getattr(index, name) for name in _ARRAYS]
    if later:
        cache.save_entry_later(_entry_key(file_key), _SUFFIX, header, arrays, directory)
    else:
        cache.save_entry(_entry_key(file_key), _SUFFIX, header, arrays, directory)


def load(profile: Profile) -> TraceIndex | None:
    """The index of `profile` from the disk cache, or None on a miss. A big entry's per-event
    columns are read when first used (`cache.load_entry_lazily`); one found damaged then is
    taken from the index built again (and written again)."""
    where = profile.derived.disk_key
    if where is None:
        return None
    file_key, directory = where
    return cache.load_entry_lazily(
        _entry_key(file_key), _SUFFIX,
        lambda header, arrays: _index_of(profile, header, arrays), directory)


def _index_of(profile: Profile, header: dict[str, Any],
              arrays: cache.EntryArrays) -> TraceIndex:
    """The index the entry holds; raises ValueError unless it fits `profile` and itself (the
    per-event columns of a lazy entry: when they are read, `_checked_column`)."""
    if header.get("version") != INDEX_FORMAT_VERSION or len(arrays) != len(_ARRAYS):
        raise ValueError(f"index format version {header.get('version')!r}")
    position = {name: k for k, name in enumerate(_ARRAYS)}
    n = arrays.shape(position["start_ps"])[0] if arrays.shape(position["start_ps"]) else 0
    for name, dtype in _ARRAYS.items():
        if name == "source_row" and n >= 2**31:
            dtype = np.int64
        if arrays.dtype(position[name]) != dtype or len(arrays.shape(position[name])) != 1:
            raise ValueError(f"index column {name} is not {np.dtype(dtype)}")
    lengths = {name: arrays.shape(position[name])[0] for name in _ARRAYS}
    small = {name: arrays.get(position[name]) for name in _ARRAYS
             if name not in IndexColumns.NAMES}
    line_refs = [(int(p), int(k)) for p, k in header["lines"]]
    for p, k in line_refs:
        if not (0 <= p < len(profile.planes) and 0 <= k < len(profile.planes[p].lines)):
            raise ValueError("index lines out of range")
    processes = [Process(pid, name, sort_index, plane_index,
                         [Thread(*t) for t in threads])
                 for pid, name, sort_index, plane_index, threads in header["processes"]]
    tracks = sorted((t for p in processes for t in p.threads), key=lambda t: t.track)
    names = header["names"]
    track_bounds, segment_bounds = small["track_bounds"], small["segment_bounds"]
    track_source_line = small["track_source_line"]
    if (any(lengths[c] != n for c in _EVENT_ARRAYS)
            or len(track_bounds) != len(tracks) + 1 or track_bounds[0] != 0
            or track_bounds[-1] != n or np.any(np.diff(track_bounds) < 0)
            or len(segment_bounds) != len(small["segment_track"]) + 1
            or (len(segment_bounds) and (segment_bounds[0] != 0 or segment_bounds[-1] != n))
            or np.any(np.diff(segment_bounds) < 0)
            or len(small["segment_disjoint"]) != len(small["segment_track"])
            or len(small["segment_depth"]) != len(small["segment_track"])
            or len(track_source_line) != len(tracks)
            or lengths["derived_source_line"] != int(header["num_derived_events"])
            or [t.derived for t in tracks] != (track_source_line < 0).tolist()
            or int(np.diff(track_bounds)[track_source_line < 0].sum())
            != lengths["derived_source_line"]
            or lengths["block_max_ps"] != -(-n // FANOUT)
            or (len(small["segment_disjoint"])
                and int(small["segment_disjoint"].view(np.uint8).max()) > 1)
            or [t.track for t in tracks] != list(range(len(tracks)))
            or not all(isinstance(s, str) for s in names)
            or int(track_source_line.max(initial=-1)) >= len(line_refs)
            or int(small["segment_depth"].min(initial=0)) < 0
            or type(header["first_ps"]) is not int or type(header["last_ps"]) is not int):
        raise ValueError("index columns do not fit together")
    index = TraceIndex(
        profile=profile, processes=processes, tracks=tracks, names=names,
        columns=IndexColumns({}, n), line_refs=line_refs,
        absolute_origin_ns=int(header["absolute_origin_ns"]),
        num_derived_events=int(header["num_derived_events"]),
        track_bounds=track_bounds, segment_bounds=segment_bounds,
        segment_track=small["segment_track"], segment_depth=small["segment_depth"],
        segment_disjoint=small["segment_disjoint"], track_source_line=track_source_line,
    )
    index.columns = IndexColumns(
        {}, n, _ColumnReader(index, arrays, position),
        sum(arrays.nbytes(position[name]) for name in IndexColumns.NAMES))
    if not arrays.lazy:  # a small entry: every column read and checked now
        for name in IndexColumns.NAMES:
            index.columns.arrays[name] = _checked_column(index, name,
                                                         arrays.get(position[name]))
        index.columns.unread_nbytes = 0
    index._lazy["first_ps"] = int(header["first_ps"])
    index._lazy["last_ps"] = int(header["last_ps"])
    return index


def _checked_column(index: TraceIndex, name: str, array: np.ndarray) -> np.ndarray:
    """`array` as the index's column `name`; raises ValueError when its values cannot be."""
    if name == "name_id" and len(array) and (int(array.min()) < 0
                                             or int(array.max()) >= len(index.names)):
        raise ValueError("index names out of range")
    if name == "derived_source_line" and len(array) and (
            int(array.min()) < 0 or int(array.max()) >= len(index.line_refs)):
        raise ValueError("index lines out of range")
    return array


class _ColumnReader:
    """Reads one column of a lazily loaded index (`IndexColumns`); a column that is damaged
    or does not fit comes from the index built again, which is written again."""

    __slots__ = ("_index", "_arrays", "_position", "_rebuilt")

    def __init__(self, index: TraceIndex, arrays: cache.EntryArrays,
                 position: dict[str, int]) -> None:
        self._index, self._arrays, self._position = index, arrays, position
        self._rebuilt: TraceIndex | None = None

    def __call__(self, name: str) -> np.ndarray:
        if self._rebuilt is None:
            try:
                return _checked_column(self._index, name,
                                       self._arrays.get(self._position[name]))
            except ValueError as exc:  # DamagedEntry, or values out of range
                logger.warning("trace index column %s rebuilt: %s", name, exc)
                self._rebuilt = build_index(self._index.profile)
                save(self._rebuilt, later=True)
        return self._rebuilt.columns.get(name)


def load_first_window(index: TraceIndex) -> None:
    """Puts the first window asked of this index in an earlier process (kept by
    `save_first_window`) in its window cache, so that a reopen answers it without reading the
    index's columns; without one, marks the index to keep its first window. Only for an index
    whose entry is read lazily (`lookup.LAZY_MIN_BYTES` or more): a smaller one is read whole
    in milliseconds."""
    where = index.profile.derived.disk_key
    if where is None:
        return
    file_key, directory = where
    if index.columns.nbytes < lookup.LAZY_MIN_BYTES:
        return  # an index read whole in milliseconds: no window kept
    found = cache.load_entry(_entry_key(file_key, "window"), _WINDOW_SUFFIX,
                             lambda header, arrays: _window_of(index, header, arrays),
                             directory)
    if found is None:
        index.first_window_pending = True
        return
    key, visible = found
    remember(index, key, visible)
    index.prefetch_pending = bool(index.columns.unread())


#: What every window reads of a lazily loaded index (`prefetch`).
_WINDOW_COLUMNS = ("start_ps", "end_ps", "name_id", "block_max_ps")


def prefetch(index: TraceIndex) -> None:
    """Reads, on a background thread at low priority and `PREFETCH_DELAY_S` later, what the
    windows after a first window answered from the disk cache read (the columns, the
    overlapping segments' running-max ends, the level-of-detail levels), so that the first
    zoom does not wait for them; a zoom that comes first waits for the column being read
    rather than reading it twice."""

    def run() -> None:
        cache.lower_priority()
        try:
            for name in _WINDOW_COLUMNS:
                index.columns.get(name)
            index.running_max_ends  # noqa: B018 - built and kept with the index
            index.lod_levels  # noqa: B018
        except Exception:  # noqa: BLE001 - a window reads them itself
            logger.exception("trace index prefetch failed")

    timer = threading.Timer(PREFETCH_DELAY_S, run)
    timer.name, timer.daemon = "tb-profile-trace-prefetch", True
    timer.start()


#: The prefetch starts this long after the first window was answered from the disk cache, so
#: that it does not slow that answer's document and transfer (at once, on 2 cores at load 2,
#: it did: 0.05-0.3 s instead of 0.03-0.15 s at 20M events; a document encoded by the standard
#: library, as the bench does, takes 0.4 s at 180k events) while the page draws it.
PREFETCH_DELAY_S = 1.0


def save_first_window(index: TraceIndex, key: tuple[int, ...], visible: Visible) -> None:
    """Keeps the window `key` (a_ps, b_ps, resolution, unfiltered maximum) and its answer
    beside the index's entry, written off the request's path."""
    where = index.profile.derived.disk_key
    if where is None:
        return
    file_key, directory = where
    blocks = visible.blocks
    header = {"version": INDEX_FORMAT_VERSION, "window": list(key),
              "num_filtered": visible.num_filtered, "num_events": len(index)}
    arrays = [np.asarray(a, np.int64) for a in (
        visible.ids, visible.start_ps, visible.end_ps, visible.name_id, blocks.segment,
        blocks.start_ps, blocks.end_ps, blocks.count, blocks.first_id, visible.block_name_id)]
    cache.save_entry_later(_entry_key(file_key, "window"), _WINDOW_SUFFIX, header, arrays,
                           directory)


def _window_of(index: TraceIndex, header: dict[str, Any],
               arrays: list[np.ndarray]) -> tuple[tuple[int, ...], Visible]:
    """(key, answer) of a first window's entry; raises ValueError unless it fits the index."""
    key = header.get("window")
    if (header.get("version") != INDEX_FORMAT_VERSION or len(arrays) != len(_WINDOW_ARRAYS)
            or header.get("num_events") != len(index) or not isinstance(key, list)
            or len(key) != 4 or not all(type(v) is int for v in key)
            or type(header.get("num_filtered")) is not int
            or any(a.dtype != np.int64 or a.ndim != 1 for a in arrays)):
        raise ValueError("not a first window of this index")
    columns = dict(zip(_WINDOW_ARRAYS, arrays, strict=True))
    events = [columns[c] for c in ("ids", "start_ps", "end_ps", "name_id")]
    blocks = [columns[c] for c in _WINDOW_ARRAYS[4:]]
    if (len({len(a) for a in events}) != 1 or len({len(a) for a in blocks}) != 1
            or not _within(columns["ids"], len(index))
            or not _within(columns["block_first_id"], len(index))
            or not _within(columns["name_id"], len(index.names))
            or not _within(columns["block_name_id"], len(index.names))
            or not _within(columns["block_segment"], len(index.segment_track))):
        raise ValueError("the first window does not fit the index")
    segment = np.searchsorted(index.segment_bounds, columns["ids"], "right") - 1
    visible = Visible(
        columns["ids"], int(header["num_filtered"]),
        DensityBlocks(columns["block_segment"], columns["block_start_ps"],
                      columns["block_end_ps"], columns["block_count"],
                      columns["block_first_id"]) if len(blocks[0]) else NO_BLOCKS,
        columns["start_ps"], columns["end_ps"], columns["name_id"], columns["block_name_id"],
        segment)
    return tuple(key), visible


def _within(values: np.ndarray, size: int) -> bool:
    return not len(values) or (int(values.min()) >= 0 and int(values.max()) < size)


def _load_or_build(profile: Profile) -> TraceIndex:
    """The index from the disk cache, else built and written there."""
    index = load(profile)
    if index is None:
        with cache.quiet():  # the profile's entry, queued by its decode, waits meanwhile
            index = index_module.build_index(  # (looked up at the call: tests count it)
                profile, analyses_made=lambda: forget(profile, lines_index))
        save(index, later=True)  # written after the first window is answered
    load_first_window(index)
    return index


#: The index of a profile, built once (concurrent callers wait for one build), kept in the disk
#: cache beside the profile's columns.
trace_index = per_profile(_load_or_build)


def _lines_alone(profile: Profile) -> TraceIndex:
    with cache.quiet():
        return index_module.build_index(profile, derived=False)


#: The index of a profile's lines alone (trace/lines_first.py), the whole index's prefix; kept
#: until the analyses the whole index's derived tracks read are made (`_load_or_build` drops it
#: then), never on disk.
lines_index = per_profile(_lines_alone)


def on_disk(profile: Profile) -> bool:
    """Whether the disk cache holds an entry for the profile's whole index (it may still be
    found damaged or stale when read)."""
    where = profile.derived.disk_key
    if where is None:
        return False
    file_key, directory = where
    return cache.entry_exists(_entry_key(file_key), _SUFFIX, directory)
