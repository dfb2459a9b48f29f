"""One event's details and flow partners, and search by name over a whole trace.

Details read the event's XEvent back from the columnar profile (its metadata stats, then its
own stats, by name). Flows link, within one host:

* `launch`: a host event and a device event with the same `correlation_id` (a kernel launch
  and the kernel or memcpy it started);
* `tf.data` / `producer_consumer`: an event with producer stats `_pt`/`_p` and the events
  with the same consumer stats `_ct`/`_c` (tf.data when either side is a tf.data event);
* `tf.data`: a `<Kind>Produce` event (e.g. `PrefetchProduce`, `ParallelMapProduce`) and the
  `<Kind>Consume` events of the same `element_id`.

The per-index structures these need (stat columns of the whole trace) are built on the first
details request and kept with the index; a search keeps its last few ordered match lists.
"""

from __future__ import annotations

import collections
import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_profile_plugin.errors import BadRequest, NotFound
from tb_profile_plugin.trace.index import TraceIndex
from tb_profile_plugin.trace.window import HostTrace, TraceSet
from tb_profile_plugin.xspace.hlo_modules import hlo_instructions
from tb_profile_plugin.xspace.model import StatColumns, StatMetadataTable
from tb_profile_plugin.xspace.producers import (
    CORRELATION_ID_STAT,
    HLO_MODULE_STAT,
    HLO_OP_STAT,
    PROGRAM_ID_STAT,
)
from tb_profile_plugin.xspace.schema import StatKind, is_device_plane

_PS_PER_US = 1e6
_TF_DATA_MARKS = ("Iterator::", "Prefetch", "ParallelMap", "ParallelInterleave", "MapAndBatch",
                  "ParallelBatch")
_SEARCH_CACHE_SIZE = 8
_MAX_BYTES_SHOWN = 64
#: Stats shown per event in its details (hostile files hang 100,000 on one); the rest counted.
MAX_STATS_SHOWN = 1000


@dataclass(frozen=True)
class _Links:
    """Stat columns of the whole index, by event id (-1 where an event lacks the stat)."""

    correlation: np.ndarray
    on_device: np.ndarray  # bool
    producer_type: np.ndarray
    producer_id: np.ndarray
    consumer_type: np.ndarray
    consumer_id: np.ndarray
    element_id: np.ndarray
    event_of_source: np.ndarray  # event id of (line, row): line_offsets[line] + row
    line_offsets: np.ndarray


def _build_links(index: TraceIndex) -> _Links:
    n = len(index)
    line_offsets = np.concatenate(
        [[0], np.cumsum([len(line.events) for _, line in index.lines])]).astype(np.int64)
    derived = np.zeros(n, bool)
    for t in index.tracks:
        if t.derived:
            derived[index.track_bounds[t.track] : index.track_bounds[t.track + 1]] = True
    real = np.flatnonzero(~derived)
    event_of_source = np.full(int(line_offsets[-1]), -1, np.int64)
    event_of_source[line_offsets[index.source_line[real]] + index.source_row[real]] = real
    columns = {}
    for stat in (CORRELATION_ID_STAT, "_pt", "_p", "_ct", "_c", "element_id"):
        by_source = np.full(int(line_offsets[-1]), -1, np.int64)
        for k, (p_index, line) in enumerate(index.lines):
            stat_id = index.profile.planes[p_index].stat_metadata.id_of(stat)
            if stat_id is not None:
                lo, hi = line_offsets[k], line_offsets[k + 1]
                by_source[lo:hi] = line.stats.int_column(stat_id, int(hi - lo))
        column = np.full(n, -1, np.int64)
        column[real] = by_source[line_offsets[index.source_line[real]] + index.source_row[real]]
        columns[stat] = column
    device_line = np.array([is_device_plane(index.profile.planes[p].name)
                            for p, _ in index.lines] + [False])
    return _Links(
        columns[CORRELATION_ID_STAT], device_line[index.source_line], columns["_pt"],
        columns["_p"], columns["_ct"], columns["_c"], columns["element_id"], event_of_source,
        line_offsets,
    )


def _links(index: TraceIndex) -> _Links:
    links: _Links = index.lazy("links", lambda: _build_links(index))
    return links


def _plain(value: object) -> object:
    if isinstance(value, bytes):
        shown = value[:_MAX_BYTES_SHOWN].hex()
        return f"<{len(value)} bytes: {shown}{'...' if len(value) > _MAX_BYTES_SHOWN else ''}>"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _stats_of(line_stats: StatColumns, row: int, num_rows: int, names: StatMetadataTable,
              out: dict[str, Any]) -> int:
    """Adds the stats of `row` to `out` (at most MAX_STATS_SHOWN in all); how many were left
    out. A hostile file can hang 100,000 stats on one event: reading each is Python work, and
    no panel shows that many, so the rest are counted, not read."""
    stats = line_stats.event_stats(row, num_rows)
    shown = np.flatnonzero(stats.kind != StatKind.NONE)
    room = max(MAX_STATS_SHOWN - len(out), 0)
    ids = stats.metadata_id[shown[:room]]
    at = np.minimum(np.searchsorted(names.ids, ids), max(len(names.ids) - 1, 0))
    known = (names.ids[at] == ids) if len(names.ids) else np.zeros(len(ids), bool)
    for i, stat_id, j, has_name in zip(shown[:room].tolist(), ids.tolist(), at.tolist(),
                                       known.tolist(), strict=True):
        name = names.names[j] if has_name else None
        out[name or str(stat_id)] = _plain(stats.python_value(i, names))
    return max(len(shown) - room, 0)


def brief(host: HostTrace, local_id: int) -> dict[str, Any]:
    """The fields a window answer has for one event."""
    index = host.index
    track = int(index.track_of(np.array([local_id]))[0])
    start = int(index.start_ps[local_id])
    return {
        "id": host.id_offset + local_id,
        "name": index.names[int(index.name_id[local_id])],
        "pid": int(host.track_pid[track]),
        "tid": int(host.track_tid[track]),
        "start_us": (start + host.shift_ps) / _PS_PER_US,
        "duration_us": (int(index.end_ps[local_id]) - start) / _PS_PER_US,
        "depth": int(index.depth_of(np.array([local_id]))[0]),
    }


def _locate(trace: TraceSet, event_id: int) -> tuple[HostTrace, int]:
    found = trace.locate(event_id)
    if found is None:
        raise NotFound(f"no event {event_id}: ids run from 0 to {trace.total_events - 1}")
    return found


def event_details(trace: TraceSet, event_id: int) -> dict[str, Any]:
    host, local = _locate(trace, event_id)
    index = host.index
    event = brief(host, local)
    track = index.tracks[int(index.track_of(np.array([local]))[0])]
    process = next(p for p in index.processes if track in p.threads)
    p_index, line = index.lines[index.source_line_of(local)]
    plane = index.profile.planes[p_index]
    row = int(index.source_row[local])
    stats: dict[str, Any] = {}
    stats_not_shown = 0
    long_name = ""
    if track.derived:
        source = int(_links(index).event_of_source[
            _links(index).line_offsets[index.source_line_of(local)] + row])
        stats["derived_from"] = line.label
        stats["first_event"] = index.names[int(index.name_id[source])]
        stats["first_event_id"] = host.id_offset + source
    else:
        meta_row = int(plane.event_metadata.rows_of(line.events.metadata_id[row : row + 1])[0])
        if meta_row >= 0:
            full = plane.event_metadata.names[meta_row]
            display = plane.event_metadata.display_names[meta_row]
            if full != event["name"]:  # shown by its display name (TPU: the whole HLO text)
                long_name = full
            elif display and display != event["name"]:
                long_name = display
            stats_not_shown += _stats_of(plane.event_metadata.stats, meta_row,
                                         len(plane.event_metadata.ids), plane.stat_metadata,
                                         stats)
        stats_not_shown += _stats_of(line.stats, row, len(line.events), plane.stat_metadata,
                                    stats)
        if is_device_plane(plane.name):
            _add_xla_instruction(index, event["name"], stats)
        if not long_name and isinstance(stats.get("long_name"), str):
            long_name = str(stats["long_name"])
    process_name = f"{host.host}: {process.name}" if trace.combined else process.name
    event.update(long_name=long_name, process=process_name, thread=track.name, stats=stats,
                 stats_not_shown=stats_not_shown)
    return {"event": event, "flows": [] if track.derived else _flows(host, local)}


def _add_xla_instruction(index: TraceIndex, kernel: str, stats: dict[str, Any]) -> None:
    """A kernel's HLO instruction, its framework op and precision, from the module's HLO, for
    kernels whose stats do not say (inside a CUDA graph: `hlo_op` = `command_buffer_N`)."""
    module = stats.get(PROGRAM_ID_STAT, stats.get(HLO_MODULE_STAT))
    if module is None:
        return
    _, ins = hlo_instructions(index.profile).resolve(str(module), str(stats.get(HLO_OP_STAT, "")),
                                                      kernel)
    if ins is None:
        return
    stats["xla_instruction"] = ins.name
    if ins.op_name:
        stats["xla_op_name"] = ins.op_name
    if ins.float_bits:
        stats["xla_float_bits"] = ins.float_bits


def _is_tf_data(name: str) -> bool:
    return any(mark in name for mark in _TF_DATA_MARKS)


def _flows(host: HostTrace, local: int) -> list[dict[str, Any]]:
    index = host.index
    links = _links(index)
    flows: list[dict[str, Any]] = []
    correlation = int(links.correlation[local])
    if correlation >= 0:
        on_device = bool(links.on_device[local])
        partners = np.flatnonzero((links.correlation == correlation)
                                  & (links.on_device != on_device))
        for p in partners.tolist():
            flows.append({"kind": "launch", "direction": "in" if on_device else "out",
                          **brief(host, p)})
    name = index.names[int(index.name_id[local])]
    sides = (
        ("out", links.producer_type, links.producer_id, links.consumer_type, links.consumer_id),
        ("in", links.consumer_type, links.consumer_id, links.producer_type, links.producer_id),
    )
    for direction, own_type, own_id, other_type, other_id in sides:
        if own_type[local] < 0 or own_id[local] < 0:
            continue
        partners = np.flatnonzero((other_type == own_type[local]) & (other_id == own_id[local]))
        for p in partners.tolist():
            other = brief(host, p)
            kind = "tf.data" if _is_tf_data(name) or _is_tf_data(other["name"]) \
                else "producer_consumer"
            flows.append({"kind": kind, "direction": direction, **other})
    element = int(links.element_id[local])
    for own, partner, direction in (("Produce", "Consume", "out"), ("Consume", "Produce", "in")):
        if element < 0 or not name.endswith(own):
            continue
        partner_name = name[: -len(own)] + partner
        named = np.array([n == partner_name for n in index.names] + [False])
        partners = np.flatnonzero((links.element_id == element) & named[index.name_id])
        for p in partners.tolist():
            flows.append({"kind": "tf.data", "direction": direction, **brief(host, p)})
    return flows


_search_lock = threading.Lock()


def _matches(index: TraceIndex, query: str) -> np.ndarray:
    """Ids of the events whose name contains `query` (case-insensitive), by (start, id)."""
    def build() -> collections.OrderedDict[str, np.ndarray]:
        return collections.OrderedDict()

    cache: collections.OrderedDict[str, np.ndarray] = index.lazy("search", build)
    key = query.casefold()
    with _search_lock:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    hit = np.array([key in name.casefold() for name in index.names] + [False])
    ids = np.flatnonzero(hit[index.name_id]) if len(index.names) else np.zeros(0, np.int64)
    ids = ids[np.lexsort((ids, index.start_ps[ids]))]
    with _search_lock:
        cache[key] = ids
        while len(cache) > _SEARCH_CACHE_SIZE:
            cache.popitem(last=False)
    return ids


def search(trace: TraceSet, query: str, match_index: int | None,
           from_us: float | None) -> dict[str, Any]:
    """Match `match_index` (or the first at or after `from_us`) of events named like `query`."""
    if not query:
        raise BadRequest("the q parameter (text to search for) is missing or empty")
    parts = [(h, _matches(h.index, query)) for h in trace.hosts]
    starts = np.concatenate([h.index.start_ps[m] + h.shift_ps for h, m in parts])
    ids = np.concatenate([m + h.id_offset for h, m in parts])
    host_of = np.concatenate([np.full(len(m), k, np.int64) for k, (_, m) in enumerate(parts)])
    if len(trace.hosts) > 1:
        order = np.lexsort((ids, starts))
        starts, ids, host_of = starts[order], ids[order], host_of[order]
    total = len(ids)
    chosen: int | None = None
    if total:
        if match_index is not None:
            if not 0 <= match_index < total:
                raise BadRequest(f"index={match_index} is outside 0..{total - 1} "
                                 f"({total} matches of {query!r})")
            chosen = match_index
        elif from_us is not None:
            at = int(np.searchsorted(starts, round(from_us * _PS_PER_US), "left"))
            chosen = min(at, total - 1)
        else:
            chosen = 0
    match = None
    if chosen is not None:
        host = trace.hosts[int(host_of[chosen])]
        local = int(ids[chosen]) - host.id_offset
        match = {**brief(host, local), "parent": _parent(host, local)}
    return {"query": query, "total_matches": total, "index": chosen, "match": match}


def _parent(host: HostTrace, local_id: int) -> dict[str, Any] | None:
    """The event one level up on the same track that encloses `local_id` (its name, start_us
    and duration_us), or None at depth 0. The search box zooms to show it around a match.

    Per segment of the track at the depth above (events sorted by start): the last event that
    starts at or before the match, if it also ends at or after the match's end."""
    index = host.index
    ids = np.array([local_id])
    track, depth = int(index.track_of(ids)[0]), int(index.depth_of(ids)[0])
    if depth == 0:
        return None
    start, end = int(index.start_ps[local_id]), int(index.end_ps[local_id])
    segments = np.flatnonzero((index.segment_track == track)
                              & (index.segment_depth == depth - 1))
    best = -1
    for segment in segments.tolist():
        lo, hi = int(index.segment_bounds[segment]), int(index.segment_bounds[segment + 1])
        at = lo + int(np.searchsorted(index.start_ps[lo:hi], start, "right")) - 1
        if at >= lo and int(index.end_ps[at]) >= end and (
                best < 0 or int(index.start_ps[at]) > int(index.start_ps[best])):
            best = at
    if best < 0:
        return None
    found = brief(host, best)
    return {"id": found["id"], "name": found["name"], "start_us": found["start_us"],
            "duration_us": found["duration_us"]}
