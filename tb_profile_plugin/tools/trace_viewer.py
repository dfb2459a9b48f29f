"""trace_viewer view: the events of a time window, every visible one, in a columnar encoding.

`build` answers `data?tag=trace_viewer` (parameters `start_time_ms`, `end_time_ms`,
`resolution`); `event` and `search` answer the `trace_event` and `trace_search` routes. The
wire format is in docs/api.md ("trace_viewer"), the design in docs/trace_viewer.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tb_profile_plugin.errors import BadRequest
from tb_profile_plugin.request_budget import checkpoint
from tb_profile_plugin.tools.document import Diagnostics, document
from tb_profile_plugin.tools.view import (
    RunFacts,
    View,
    ViewRequest,
    float_param,
    int_param,
    )
from tb_profile_plugin.trace.details import event_details, search
from tb_profile_plugin.trace.host_budget import (
    TRACE_BYTES_PER_FILE_BYTE,
    bytes_text,
    hosts_that_fit,
)
from tb_profile_plugin.trace.window import (
    MAX_WINDOW_EVENTS,
    TraceSet,
    trace_set,
    visible_events,
)
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.store import MEMORY_CACHE_ENV, memory_cache_bytes

NAME = "trace_viewer"
VERSION = 1
DEFAULT_RESOLUTION = 1600
_PS_PER_MS = 1e9
_PS_PER_US = 1e6
_PS_PER_DAY = 86_400e12
#: The farthest a time parameter may be from the trace's start, in ps: int64 ps hold ±2^63 ps
#: (~106 days); half of it (~53 days), so that a bound minus a host's shift, or the width of
#: a window, stays an int64 too.
MAX_TIME_PS = float(2**62)
#: The most pixels a window may ask for (screens have thousands; the checks ask for a pixel of
#: 1 ps over 1 ms, 10^9; 0 asks for every event): keeps the pixel arithmetic within int64.
MAX_RESOLUTION = 10**12


def _processes(trace: TraceSet) -> list[dict[str, Any]]:
    out = []
    for h in trace.hosts:
        for p in h.index.processes:
            out.append({
                "pid": h.pid_offset + p.pid,
                "name": f"{h.host}: {p.name}" if trace.combined else p.name,
                "host": h.host,
                "sort_index": h.pid_offset + p.sort_index,
                "threads": [{"tid": t.tid, "name": t.name, "sort_index": t.sort_index,
                             "max_depth": t.max_depth, "num_events": t.num_events,
                             "derived": t.derived} for t in p.threads],
            })
    return out


def _used_names(name_id: np.ndarray, num_names: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(name_id, return_inverse=True)` for ids below `num_names`, without a sort:
    a mark per name and a running count (a 180k-event window: ~1 ms instead of ~8 ms)."""
    present = np.zeros(num_names, bool)
    present[name_id] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    return np.flatnonzero(present), rank[name_id]


def _string_ids(name_id: np.ndarray, names: list[str], strings: dict[str, int]) -> np.ndarray:
    """The document's string ids of `name_id` (ids into `names`): each name used gets the next
    id of `strings` the first time the document uses it, in the order of its id."""
    used, inverse = _used_names(name_id, len(names))
    remap = np.array([strings.setdefault(names[u], len(strings)) for u in used.tolist()],
                     np.int64)
    ids: np.ndarray = remap[inverse]
    return ids


def _column(parts: list[np.ndarray], dtype: type = np.int64) -> np.ndarray:
    """One column of the document: the hosts' parts joined, as a contiguous int64 or float64
    array. The document keeps numpy columns, not lists: json_text.py hands them to orjson,
    which writes the same numbers as for Python ints and floats (the same shortest round-trip
    text) without 10^5-10^6 Python objects first (a 180k-event window of 20M wider: `tolist`
    25 ms and the encoding of the lists 18 ms, against ~15 ms for the arrays)."""
    if not parts:
        return np.zeros(0, dtype)
    return np.ascontiguousarray(np.concatenate(parts), dtype)


def _shown(request: ViewRequest) -> tuple[Mapping[str, Profile], list[str]]:
    """The hosts the trace shows (ALL_HOSTS: those the memory bound holds,
    trace/host_budget.py) and the hosts left out."""
    if len(request.profiles) <= 1 or not request.paths:
        return request.profiles, []
    paths = {h: request.paths[h] for h in request.profiles if h in request.paths}
    shown, left_out = hosts_that_fit(paths)
    return {h: request.profiles[h] for h in shown}, left_out


def _time_param(params: Mapping[str, str], key: str, ps_per_unit: float = _PS_PER_MS,
                unit: str = "ms") -> float | None:
    """A time from the trace's start (`float_param`, in ms or µs), at most `MAX_TIME_PS` from
    0 either way: shown times are int64 ps (trace/window.py), so a time past them is no time
    of any trace (a 400 with a sentence, not an overflow)."""
    value = float_param(params, key)
    if value is not None and abs(value) * ps_per_unit > MAX_TIME_PS:
        raise BadRequest(f"{key}={params[key]!r} is out of range: times are {unit} from the "
                         f"trace's start, within ±{MAX_TIME_PS / ps_per_unit:.0f} (about 53 "
                         "days)")
    return value


def _trace(request: ViewRequest) -> TraceSet:
    return trace_set(_shown(request)[0], lines_first=True)


def build(request: ViewRequest) -> dict[str, Any]:
    params = request.params
    profiles, not_shown = _shown(request)
    trace = trace_set(profiles, lines_first=True)
    span_ms = trace.end_ps / _PS_PER_MS
    start_ms = _time_param(params, "start_time_ms")
    end_ms = _time_param(params, "end_time_ms")
    start_ms = 0.0 if start_ms is None else start_ms
    end_ms = span_ms if end_ms is None else end_ms
    if end_ms < start_ms or (end_ms == start_ms and span_ms > 0):
        raise BadRequest(f"end_time_ms ({end_ms}) must be greater than start_time_ms "
                         f"({start_ms})")
    resolution = int_param(params, "resolution", DEFAULT_RESOLUTION)
    assert resolution is not None
    if resolution > MAX_RESOLUTION:
        raise BadRequest(f"resolution={resolution} is more than {MAX_RESOLUTION:,} pixels; "
                         "ask for the window's width in pixels, or 0 for every event (at most "
                         f"{MAX_WINDOW_EVENTS:,})")
    a_ps, b_ps = round(start_ms * _PS_PER_MS), round(end_ms * _PS_PER_MS)
    # Per host its share of the events one window returns (trace/window.py: the cap).
    max_events = max(1, MAX_WINDOW_EVENTS // max(1, len(trace.hosts)))
    shown_resolution = resolution
    truncated = 0

    strings: dict[str, int] = {}
    columns: dict[str, list[np.ndarray]] = {k: [] for k in (
        "id", "pid", "tid", "name", "start", "duration", "depth")}
    filtered = 0
    density: dict[str, list[np.ndarray]] = {k: [] for k in (
        "pid", "tid", "depth", "name", "start", "end", "count")}
    for h in trace.hosts:
        index = h.index
        checkpoint()
        # The cache's writer (a fresh index or profile being written, ~1 GB at 10M events)
        # waits while the window is found: its copies and sums share the 2 cores otherwise.
        with cache.quiet():
            visible = visible_events(index, a_ps - h.shift_ps, b_ps - h.shift_ps, resolution,
                                     max_events=max_events)
        if visible.shown_resolution is not None:
            shown_resolution = min(shown_resolution or visible.shown_resolution,
                                   visible.shown_resolution)
        truncated += visible.num_truncated
        ids = visible.ids
        filtered += visible.num_filtered
        track = index.segment_track[visible.segment]
        start = visible.start_ps
        columns["id"].append(ids + h.id_offset)
        columns["pid"].append(h.track_pid[track])
        columns["tid"].append(h.track_tid[track])
        columns["name"].append(_string_ids(visible.name_id, index.names, strings))
        columns["start"].append((start + h.shift_ps) / _PS_PER_US)
        columns["duration"].append((visible.end_ps - start) / _PS_PER_US)
        columns["depth"].append(index.segment_depth[visible.segment])
        blocks = visible.blocks
        if len(blocks):
            block_track = index.segment_track[blocks.segment]
            density["pid"].append(h.track_pid[block_track])
            density["tid"].append(h.track_tid[block_track])
            density["depth"].append(index.segment_depth[blocks.segment])
            density["name"].append(_string_ids(visible.block_name_id, index.names, strings))
            density["start"].append((blocks.start_ps + h.shift_ps) / _PS_PER_US)
            density["end"].append((blocks.end_ps + h.shift_ps) / _PS_PER_US)
            density["count"].append(blocks.count)

    events = {"id": _column(columns["id"]), "pid": _column(columns["pid"]),
              "tid": _column(columns["tid"]), "name": _column(columns["name"]),
              "start_us": _column(columns["start"], np.float64),
              "duration_us": _column(columns["duration"], np.float64),
              "depth": _column(columns["depth"])}
    blocks_doc = {"pid": _column(density["pid"]), "tid": _column(density["tid"]),
                  "depth": _column(density["depth"]), "name": _column(density["name"]),
                  "start_us": _column(density["start"], np.float64),
                  "end_us": _column(density["end"], np.float64),
                  "count": _column(density["count"])}
    diagnostics = Diagnostics()
    for h in trace.hosts:
        for error in dict.fromkeys(h.index.profile.errors):
            diagnostics.errors.append(f"{h.host}: the profiler recorded an error: {error}")
        if h.index.num_derived_events:
            diagnostics.info.append(
                f"{h.host}: {h.index.num_derived_events} events on derived device tracks "
                "(Steps, TensorFlow Ops, XLA Ops) made from the kernels")
    for host in trace.derived_pending:
        diagnostics.info.append(
            f"{host}: the GPUs' derived tracks (Steps, XLA Modules, framework and XLA ops) are "
            "being made from the kernels; they appear above the streams when ready (the "
            "streams and host threads are shown now)")
    for host, error in trace.derived_errors:
        diagnostics.errors.append(
            f"{host}: the GPUs' derived tracks (Steps, XLA Modules, framework and XLA ops) "
            f"could not be made: {error}; the streams and host threads are shown")
    if not_shown:
        diagnostics.warnings.append(
            f"{len(trace.hosts)} of {len(trace.hosts) + len(not_shown)} hosts shown: the "
            "trace of every host would not fit the server's memory bound "
            f"({MEMORY_CACHE_ENV} = {bytes_text(memory_cache_bytes())}; a host's trace "
            f"holds about {TRACE_BYTES_PER_FILE_BYTE} times its file); not shown: "
            f"{', '.join(not_shown)}. Open a host alone to see its trace, or raise the bound")
    if shown_resolution != resolution:
        diagnostics.warnings.append(
            f"this window holds more events than the {MAX_WINDOW_EVENTS:,} one window returns"
            + (" (over its hosts)" if trace.combined else "")
            + f": shown at a resolution of {shown_resolution:,} pixels"
            + ("" if resolution == 0 else f" instead of {resolution:,}")
            + ", with events narrower than a pixel summarised in density blocks; zoom in to see "
            "every event")
    if truncated:
        diagnostics.warnings.append(
            f"{truncated:,} events of this window are left out: more than "
            f"{MAX_WINDOW_EVENTS:,} events even at a resolution of 1 pixel; zoom in")
    if trace.combined and trace.aligned:
        diagnostics.info.append(
            f"{len(trace.hosts)} hosts on one time axis, aligned by absolute time")
    elif trace.combined:
        diagnostics.warnings.append(
            f"the hosts' clocks are {trace.clock_span_ps / _PS_PER_DAY:,.1f} days apart (captures "
            "made at different times, or a host without an absolute start time): too far for "
            "one time axis, so each host is shown from its own first event at 0 and times of "
            "different hosts are not comparable; open one host to see its own clock")
    return document(
        NAME, VERSION, request.run, request.host, diagnostics,
        origin_ns=trace.origin_ns,
        full_timespan_ms=[0.0, span_ms],
        window_ms=[a_ps / _PS_PER_MS, b_ps / _PS_PER_MS],
        resolution=resolution,
        shown_resolution=shown_resolution,
        max_events=MAX_WINDOW_EVENTS,
        truncated_events=truncated,
        total_events=trace.total_events,
        derived_events=sum(h.index.num_derived_events for h in trace.hosts),
        derived_pending=bool(trace.derived_pending),
        returned_events=len(events["id"]),
        filtered_events=filtered,
        processes=_processes(trace),
        strings=list(strings),
        events=events,
        density=blocks_doc,
        hosts_not_shown=not_shown,
    )


def event(request: ViewRequest) -> dict[str, Any]:
    """The `trace_event` route: one event's details and flows."""
    event_id = int_param(request.params, "event_id", None)
    if event_id is None:
        raise BadRequest("the event_id parameter is missing")
    return event_details(_trace(request), event_id)


def search_route(request: ViewRequest) -> dict[str, Any]:
    """The `trace_search` route: match K of a case-insensitive name search."""
    return search(
        _trace(request), request.params.get("q", ""),
        int_param(request.params, "index", None),
        _time_param(request.params, "from_us", _PS_PER_US, "µs"),
    )


def _has_events(facts: RunFacts) -> bool:
    return facts.num_events > 0


# Not kept finished: which hosts a window shows depends on the memory bound (host_budget.py),
# and each zoom asks for another window.
VIEW = View(NAME, VERSION, build, _has_events, combines_hosts=True,
            keeps_documents=False, events_first=True)
