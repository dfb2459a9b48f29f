"""profile_info view: what a capture holds (hosts, planes, lines, event counts, time spans).

Not one of the eight analyses: it is the view that is always there, so a user can see what
was captured and why an analysis has nothing to show (no device planes, no events, tracer
errors recorded in the XSpace). Per host also the producer (framework, evidence, recorded
versions), the capture window, the time span and the counts the views rest on; for the run,
what each view needs and whether this capture has it (tools/profile_contents.py). A PyTorch
host adds `pytorch`: its version, rank, world size, backend, NCCL version and GPUs, as the
trace states them (null where it does not).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_profile_plugin.analysis.steps.step_db import union_per_group
from tb_profile_plugin.tools.analysis_views import per_host_parts
from tb_profile_plugin.tools.document import Diagnostics, document
from tb_profile_plugin.tools.profile_contents import (
    capture_window_ms,
    host_contents,
    producer,
    view_needs,
)
from tb_profile_plugin.tools.view import (
    RunFacts,
    Table,
    View,
    ViewRequest,
    )
from tb_profile_plugin.xspace.model import Line, Plane, Profile
from tb_profile_plugin.xspace.producers import kind_of
from tb_profile_plugin.xspace.producers.pytorch import is_kineto_profile, pytorch_facts
from tb_profile_plugin.xspace.schema import is_device_plane

NAME = "profile_info"
VERSION = 1
_PS_PER_MS = 1e9


def busy_ps(start_ps: np.ndarray, duration_ps: np.ndarray) -> int:
    """Time covered by at least one of a line's events (ps): the union of their intervals, so
    nested events (an op inside its step, a kernel beside another on one stream) count once
    and the busy time never exceeds the line's span (issue 29 item 6: summing durations gave
    660.6 ms busy in a 245.7 ms span)."""
    if len(start_ps) == 0:
        return 0
    group = np.zeros(len(start_ps), np.int64)
    return int(union_per_group(group, start_ps, start_ps + duration_ps, 1)[0])


def _line_row(plane: Plane, line: Line) -> dict[str, Any]:
    events = line.events
    if len(events):
        begin_ps = int(events.start_ps.min())
        end_ps = int((events.start_ps + events.duration_ps).max())
    else:
        begin_ps = end_ps = 0
    return {
        "plane": plane.name,
        "line_id": line.id,
        "line": line.label,
        "derived": kind_of(plane, line).producer_derived,
        "kind": kind_of(plane, line).value,
        "events": len(events),
        "stats": line.stats.count(len(events)),
        "begin_ms": begin_ps / _PS_PER_MS,
        "end_ms": end_ps / _PS_PER_MS,
        "busy_ms": busy_ps(events.start_ps, events.duration_ps) / _PS_PER_MS,
    }


def _stat_names_used(plane: Plane) -> list[str]:
    """Names of the stats events carry (not the interned values that share the table)."""
    ids = np.unique(np.concatenate([np.zeros(0, np.int64)] + [
        line.stats.stat_ids() for line in plane.lines
    ]))
    names = (plane.stat_metadata.name_of(int(i)) for i in ids)
    return sorted({name for name in names if name is not None})


@dataclass(frozen=True)
class HostInfo:
    """One host's part of the document, without its name: computed on the executor's workers
    for several hosts (`host_info_file`), so the server does not decode them."""

    summary: dict[str, Any]
    errors: list[str]
    warnings: list[str]
    info: list[str]


def host_info(profile: Profile) -> HostInfo:
    planes = [
        {
            "name": plane.name,
            "id": plane.id,
            "lines": len(plane.lines),
            "events": plane.num_events,
            "event_metadata": len(plane.event_metadata.ids),
            "stat_names": _stat_names_used(plane),
        }
        for plane in profile.planes
    ]
    errors = [f"the profiler recorded an error: {error}" for error in profile.errors]
    warnings = [f"the profiler recorded a warning: {warning}" for warning in profile.warnings]
    info = []
    if profile.num_events == 0:
        warnings.append(
            "the profile holds no events: nothing ran while it was captured, or the "
            "tracers were off; capture again while the program is training"
        )
    if not any(is_device_plane(p.name) for p in profile.planes):
        info.append(
            "no device planes: a CPU-only profile (no GPU trace was captured; on a GPU "
            "machine this means the CUPTI tracer did not run)"
        )
    lines = [_line_row(p, line) for p in profile.planes for line in p.lines]
    spans = [(r["begin_ms"], r["end_ms"]) for r in lines if r["events"]]
    summary = {
        "hostnames": profile.hostnames,
        "num_events": profile.num_events,
        "planes": planes,
        "lines": lines,
        "producer": producer(profile),
        "capture_window_ms": capture_window_ms(profile),
        "span_ms": [min(b for b, _ in spans), max(e for _, e in spans)] if spans else None,
        "contents": host_contents(profile),
    }
    if is_kineto_profile(profile):  # PyTorch: version, rank, world size, backend, GPUs
        run = pytorch_facts(profile)
        summary["pytorch"] = {
            "version": run.version or None, "rank": None if run.rank < 0 else run.rank,
            "world_size": None if run.world_size < 0 else run.world_size,
            "backend": run.backend or None, "nccl_version": run.nccl_version or None,
            "devices": list(run.devices),
        }
    return HostInfo(summary, errors, warnings, info)


def host_info_file(path: str) -> HostInfo:
    """`host_info` of one host file, decoded through the disk cache (an executor task)."""
    from tb_profile_plugin.xspace.store import ProfileStore

    return host_info(ProfileStore(max_bytes=0).open(path))


#: The views whose needs the document reports, in their order: the registry's, told by the
#: registry (`report_on`), so that this module never imports it.
_reported_views: Callable[[], Sequence[View]] = tuple


def report_on(views: Callable[[], Sequence[View]]) -> None:
    """Makes `build` report what each of `views()` (asked at each build) needs."""
    global _reported_views
    _reported_views = views


def build(request: ViewRequest) -> dict[str, Any]:
    diagnostics = Diagnostics()
    hosts = []
    for host, part in per_host_parts(request, NAME, host_info_file, host_info).items():
        diagnostics.errors.extend(f"{host}: {m}" for m in part.errors)
        diagnostics.warnings.extend(f"{host}: {m}" for m in part.warnings)
        diagnostics.info.extend(f"{host}: {m}" for m in part.info)
        hosts.append({"host": host, **part.summary})
    facts = request.run_facts()
    by_name = {view.name: view for view in _reported_views()}
    return document(
        NAME, VERSION, request.run, request.host, diagnostics,
        host_count=len(hosts),
        total_events=sum(h["num_events"] for h in hosts),
        hosts=hosts,
        views=view_needs([(h["host"], h["contents"]) for h in hosts],
                         lambda view: by_name[view].available(facts),
                         list(by_name)),
    )


def lines_table(doc: dict[str, Any]) -> Table:
    header = ["host", "plane", "line_id", "line", "derived", "events", "stats", "begin_ms",
              "end_ms", "busy_ms", "kind"]  # new columns go last: scripts read by position
    rows = [[h["host"], *(row[k] for k in header[1:])] for h in doc["hosts"] for row in h["lines"]]
    return header, rows


def _always(_: RunFacts) -> bool:
    return True


def views_table(doc: dict[str, Any]) -> Table:
    header = ["view", "needs", "found", "has_data", "offered"]
    return header, [[row[k] for k in header] for row in doc["views"]]


VIEW = View(NAME, VERSION, build, _always, combines_hosts=True,
            tables={"lines": lines_table, "views": views_table})
