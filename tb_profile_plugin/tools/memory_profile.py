"""memory_profile view: an allocator's memory over the profile, its peak, and what made it up.

Parameters (all optional): `memory_id` (an allocator, default the first of `memory_ids`),
`start_time_ms` / `end_time_ms` (the timeline's range, ms from the profile's start; the
summary and breakdown always cover the whole profile). The timeline has at most
MAX_TIMELINE_POINTS points (analysis/memory/timeline.py): a zoomed range with fewer
snapshots gets every one of them.

Offered for every run with host events: a profile whose allocators recorded nothing gets a
document whose diagnostics say so and how to record them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from tb_profile_plugin.analysis.memory.peak import MemoryPeak, breakdown, find_peak
from tb_profile_plugin.analysis.memory.snapshots import (
    AllocatorSnapshots,
    MemorySnapshots,
    data_type_name,
    memory_snapshots,
)
from tb_profile_plugin.analysis.memory.timeline import in_range, sample_timeline
from tb_profile_plugin.errors import BadRequest, NotFound
from tb_profile_plugin.tools.analysis_views import has_host_events
from tb_profile_plugin.tools.document import Diagnostics, document
from tb_profile_plugin.tools.view import Table, View, ViewRequest, float_param

NAME = "memory_profile"
VERSION = 1
PS_PER_MS = 1e9

NO_ALLOCATOR_EVENTS = (
    "no memory allocator events: the profile holds no MemoryAllocation or MemoryDeallocation "
    "event, so no allocator recorded its allocations. TensorFlow's BFC allocators (GPU memory; "
    "CPU memory where TensorFlow uses its BFC-based CPU allocator, e.g. 'mklcpu' with oneDNN, "
    "the default on x86 Linux) record one per allocation while a capture runs, when the host "
    "tracer level is 2 or more (the default: tf.profiler.experimental.ProfilerOptions("
    "host_tracer_level=2)). Capture while the model runs steps; a plain CPU allocator "
    "(TF_ENABLE_ONEDNN_OPTS=0) and frameworks without these allocators record none"
)


def build(request: ViewRequest) -> dict[str, Any]:
    diagnostics = Diagnostics()
    profile = next(iter(request.profiles.values()))
    snapshots = memory_snapshots(profile)
    memory_ids = snapshots.memory_ids
    if not memory_ids:
        diagnostics.warnings.append(NO_ALLOCATOR_EVENTS)
        return document(NAME, VERSION, request.run, request.host, diagnostics,
                        memory_ids=[], memory_id=None, summary=None, timeline=[], breakdown=[])
    memory_id = _memory_id(request.params, snapshots)
    allocator = snapshots.allocators[memory_id]
    peak = find_peak(allocator)
    start_ps, end_ps = _time_range(request.params)
    sample = sample_timeline(
        allocator.in_use_bytes, in_range(allocator.time_ps, start_ps, end_ps), peak.index
    )
    rows, unattributed = breakdown(allocator, peak)
    _explain(diagnostics, allocator, peak, sample.sampled, len(sample.indices),
             sample.num_in_range, unattributed)
    timeline = [_snapshot_json(allocator, int(i)) for i in sample.indices]
    peak_position = np.flatnonzero(sample.indices == peak.index)
    return document(
        NAME, VERSION, request.run, request.host, diagnostics,
        memory_ids=memory_ids,
        memory_id=memory_id,
        summary=_summary(allocator, peak),
        full_timespan_ms=[_ms(allocator.time_ps[0]), _ms(allocator.time_ps[-1])],
        timeline_range_ms=[
            _ms(start_ps) if start_ps is not None else _ms(allocator.time_ps[0]),
            _ms(end_ps) if end_ps is not None else _ms(allocator.time_ps[-1]),
        ],
        timeline_total_points=sample.num_in_range,
        timeline_sampled=sample.sampled,
        peak_timeline_index=int(peak_position[0]) if len(peak_position) else None,
        timeline=timeline,
        unattributed_bytes=unattributed,
        breakdown=[
            {"op_name": r.op_name, "allocation_bytes": r.allocation_bytes,
             "requested_bytes": r.requested_bytes, "occurrences": r.occurrences,
             "region_type": r.region_type, "data_type": r.data_type, "shape": r.shape,
             "kind": r.kind}
            for r in rows
        ],
    )


def _memory_id(params: Mapping[str, str], snapshots: MemorySnapshots) -> str:
    wanted = params.get("memory_id")
    if wanted is None or wanted == "":
        return snapshots.memory_ids[0]
    if wanted not in snapshots.allocators:
        raise NotFound(
            f"no allocator {wanted!r} in this profile; its memory ids are "
            f"{', '.join(repr(m) for m in snapshots.memory_ids)}"
        )
    return wanted


def _time_range(params: Mapping[str, str]) -> tuple[int | None, int | None]:
    """The timeline range in ps from `start_time_ms`/`end_time_ms` (either may be absent)."""
    start, end = (None if ms is None else round(ms * PS_PER_MS)
                  for ms in (float_param(params, "start_time_ms"),
                             float_param(params, "end_time_ms")))
    if start is not None and end is not None and start > end:
        raise BadRequest(f"start_time_ms ({params['start_time_ms']}) is after end_time_ms "
                         f"({params['end_time_ms']})")
    return start, end


def _ms(time_ps: int | np.integer) -> float:
    return int(time_ps) / PS_PER_MS


def _percent(fraction: float) -> float | None:
    return None if math.isnan(fraction) else fraction * 100.0


def _summary(allocator: AllocatorSnapshots, peak: MemoryPeak) -> dict[str, Any]:
    num_allocations = int(allocator.is_allocation.sum())
    return {
        "num_allocations": num_allocations,
        "num_deallocations": len(allocator) - num_allocations,
        "memory_capacity_bytes": peak.capacity_bytes,
        "peak_heap_usage_lifetime_bytes": peak.lifetime_peak_bytes,
        "peak": {
            "time_ms": _ms(peak.time_ps),
            "time_ps": peak.time_ps,
            "stack_bytes": peak.stack_bytes,
            "heap_bytes": peak.heap_bytes,
            "free_bytes": peak.free_bytes,
            "in_use_bytes": peak.in_use_bytes,
            "fragmentation_percent": _percent(peak.fragmentation),
            "step_id": peak.step_id,
        },
    }


def _snapshot_json(s: AllocatorSnapshots, i: int) -> dict[str, Any]:
    return {
        "index": i,
        "time_ms": _ms(s.time_ps[i]),
        "stack_bytes": int(s.stack_bytes[i]),
        "heap_bytes": int(s.heap_bytes[i]),
        "free_bytes": int(s.free_bytes[i]),
        "fragmentation_percent": _percent(float(s.fragmentation[i])),
        "event": "allocation" if s.is_allocation[i] else "deallocation",
        "requested_bytes": int(s.requested_bytes[i]),
        "allocation_bytes": int(s.allocation_bytes[i]),
        "address": int(s.address[i]),
        "tf_op": s.text(int(s.op[i])),
        "step_id": int(s.step_id[i]),
        "region_type": s.text(int(s.region_type[i])),
        "data_type": data_type_name(int(s.data_type[i])),
        "tensor_shape": s.text(int(s.shape[i])),
        "inherited": bool(s.inherited[i]),
    }


def _explain(diagnostics: Diagnostics, s: AllocatorSnapshots, peak: MemoryPeak,
             sampled: bool, drawn: int, in_range_count: int, unattributed: int) -> None:
    if sampled:
        diagnostics.info.append(
            f"the timeline draws {drawn} of the {in_range_count} snapshots in its range (the "
            "largest and smallest in use of each slice; the peak is exact): zoom in to see "
            "every snapshot"
        )
    orphans = int((~s.is_allocation & ~s.inherited).sum())
    if orphans:
        diagnostics.info.append(
            f"{orphans} deallocation(s) free memory whose allocation the profile did not "
            "record (allocated before the capture began): they name no op"
        )
    if peak.lifetime_peak_bytes > peak.in_use_bytes:
        diagnostics.info.append(
            f"the allocator's peak over its lifetime ({peak.lifetime_peak_bytes} bytes) is "
            f"above the peak within the profile ({peak.in_use_bytes} bytes): it was reached "
            "before the capture began"
        )
    if unattributed < 0:
        diagnostics.warnings.append(
            f"the allocations active at the peak add up to {-unattributed} bytes more than "
            "the heap the allocator reported: some deallocations were not recorded"
        )


def breakdown_table(doc: dict[str, Any]) -> Table:
    header = ["op_name", "allocation_bytes", "requested_bytes", "occurrences", "region_type",
              "data_type", "shape", "kind"]
    return header, [[row[k] for k in header] for row in doc["breakdown"]]


def timeline_table(doc: dict[str, Any]) -> Table:
    header = ["time_ms", "event", "stack_bytes", "heap_bytes", "free_bytes",
              "fragmentation_percent", "requested_bytes", "allocation_bytes", "tf_op",
              "step_id", "region_type", "data_type", "tensor_shape"]
    return header, [[row[k] for k in header] for row in doc["timeline"]]


VIEW = View(NAME, VERSION, build, has_host_events,
            tables={"breakdown": breakdown_table, "timeline": timeline_table})
