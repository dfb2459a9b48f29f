"""memory_profile view: an allocator's memory over the profile, its peak, and what made it up.

Parameters (all optional): `memory_id` (an allocator, default the first of `memory_ids`),
`start_time_ms` / `end_time_ms` (the timeline's range, ms on the host's shown clock; the
summary and breakdown always cover the whole profile). Times count from the host's earliest
event, as the trace viewer's do (analysis/hosts/clock.py `time_zero_ps`), and `step` is the
overview's step number of the step holding the snapshot's time (`overview_step_at`; null
outside every step); `step_id` stays the event's group, the reference's step id.
`time_zero_ps`: the shown zero in ps after `Profile.origin_ns` (the earliest line timestamp,
from which the reference's memory profile counts on TF 2.21's host planes). The timeline has at most
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

from tb_profile_plugin.analysis.hosts.clock import overview_step_at, time_zero_ps
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
from tb_profile_plugin.xspace.producers.pytorch import is_kineto_profile

NAME = "memory_profile"
VERSION = 2
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
    # PyTorch: heap is its allocated memory, heap + free its reserved (docs/pytorch.md).
    source = {"memory_source": "pytorch"} if is_kineto_profile(profile) else {}
    if not memory_ids:
        diagnostics.warnings.append(NO_ALLOCATOR_EVENTS)
        return document(NAME, VERSION, request.run, request.host, diagnostics,
                        memory_ids=[], memory_id=None, summary=None, timeline=[], breakdown=[],
                        **source)
    memory_id = _memory_id(request.params, snapshots)
    allocator = snapshots.allocators[memory_id]
    peak = find_peak(allocator)
    clock = _Clock(time_zero_ps(profile))
    start_ps, end_ps = _time_range(request.params, clock.zero_ps)
    sample = sample_timeline(
        allocator.in_use_bytes, in_range(allocator.time_ps, start_ps, end_ps), peak.index
    )
    rows, unattributed = breakdown(allocator, peak)
    _explain(diagnostics, allocator, peak, sample.sampled, len(sample.indices),
             sample.num_in_range, unattributed)
    shown = np.append(sample.indices, peak.index)
    steps = overview_step_at(profile, allocator.time_ps[shown])
    timeline = [_snapshot_json(allocator, int(i), clock, int(step))
                for i, step in zip(sample.indices.tolist(), steps[:-1].tolist(), strict=True)]
    peak_position = np.flatnonzero(sample.indices == peak.index)
    return document(
        NAME, VERSION, request.run, request.host, diagnostics,
        memory_ids=memory_ids,
        memory_id=memory_id,
        time_zero_ps=clock.zero_ps,
        summary=_summary(allocator, peak, clock, int(steps[-1])),
        full_timespan_ms=[clock.ms(allocator.time_ps[0]), clock.ms(allocator.time_ps[-1])],
        timeline_range_ms=[
            clock.ms(start_ps) if start_ps is not None else clock.ms(allocator.time_ps[0]),
            clock.ms(end_ps) if end_ps is not None else clock.ms(allocator.time_ps[-1]),
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
        **source,
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


class _Clock:
    """The host's shown clock (analysis/hosts/clock.py): ps from `Profile.origin_ns` to shown ms."""

    def __init__(self, zero_ps: int) -> None:
        self.zero_ps = zero_ps

    def ps(self, time_ps: int | np.integer) -> int:
        return int(time_ps) - self.zero_ps

    def ms(self, time_ps: int | np.integer) -> float:
        return self.ps(time_ps) / PS_PER_MS


def _time_range(params: Mapping[str, str], zero_ps: int = 0) -> tuple[int | None, int | None]:
    """The timeline range in ps from `Profile.origin_ns`, from `start_time_ms`/`end_time_ms`
    (shown ms, counted from `zero_ps`; either may be absent)."""
    start, end = (None if ms is None else round(ms * PS_PER_MS) + zero_ps
                  for ms in (float_param(params, "start_time_ms"),
                             float_param(params, "end_time_ms")))
    if start is not None and end is not None and start > end:
        raise BadRequest(f"start_time_ms ({params['start_time_ms']}) is after end_time_ms "
                         f"({params['end_time_ms']})")
    return start, end


def _percent(fraction: float) -> float | None:
    return None if math.isnan(fraction) else fraction * 100.0


def _step(step: int) -> int | None:
    return step if step >= 0 else None


def _summary(allocator: AllocatorSnapshots, peak: MemoryPeak, clock: _Clock,
             step: int) -> dict[str, Any]:
    num_allocations = int(allocator.is_allocation.sum())
    return {
        "num_allocations": num_allocations,
        "num_deallocations": len(allocator) - num_allocations,
        "memory_capacity_bytes": peak.capacity_bytes,
        "peak_heap_usage_lifetime_bytes": peak.lifetime_peak_bytes,
        "peak": {
            "time_ms": clock.ms(peak.time_ps),
            "time_ps": clock.ps(peak.time_ps),
            "stack_bytes": peak.stack_bytes,
            "heap_bytes": peak.heap_bytes,
            "free_bytes": peak.free_bytes,
            "in_use_bytes": peak.in_use_bytes,
            "fragmentation_percent": _percent(peak.fragmentation),
            "step_id": peak.step_id,
            "step": _step(step),
        },
    }


def _snapshot_json(s: AllocatorSnapshots, i: int, clock: _Clock, step: int) -> dict[str, Any]:
    return {
        "index": i,
        "time_ms": clock.ms(s.time_ps[i]),
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
        "step": _step(step),
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
              "step", "step_id", "region_type", "data_type", "tensor_shape"]
    return header, [[row[k] for k in header] for row in doc["timeline"]]


VIEW = View(NAME, VERSION, build, has_host_events,
            tables={"breakdown": breakdown_table, "timeline": timeline_table})
