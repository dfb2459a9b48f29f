"""What each view needs from a capture, and whether this capture has it (profile_info).

Per host, `host_contents(profile)` counts what the views rest on: events, training steps (the
overview's: HostAnalysis, memoised per profile), op rows, GPU planes and kernels, allocator
events (`MemoryAllocation`/`MemoryDeallocation`) and tf.data iterator events (`Iterator::*`),
one vectorised pass per line over the event metadata ids. `view_needs(hosts, offered)` turns
the hosts' counts into one row per view: what it needs, in words, what this capture holds
(e.g. "18 steps (step markers)", "no allocator events"), whether that is there, and whether
the run offers the view at all (`run_tools`). A view can be offered and still have nothing
to show (the memory profile of a capture without allocator events explains its empty state).

Producer: the framework the profile shows (xspace/producers/framework.py `detect_framework`), what
showed it, and the version stats the profile records (`jax_version`, `jaxlib_version`, ...;
TensorFlow records none), and the capture window from the `Task Environment` plane.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import PlaneKind, detect_framework, plane_kind

ALLOCATOR_EVENTS = frozenset({"MemoryAllocation", "MemoryDeallocation"})
ITERATOR_PREFIX = "Iterator::"
_RULE_WORDS = {
    "producer": "grouped by the profiler", "marker": "step markers",
    "keras": "Keras step functions", "loop": "TensorFlow loop iterations",
    "legacy": "TensorFlow 1 sessions", "executions": "executions of a jitted function",
}


def _count_named(profile: Profile, wanted: Callable[[str], bool]) -> int:
    """Events whose name `wanted` accepts, over every plane (a loop over names, not events)."""
    total = 0
    for plane in profile.planes:
        names = plane.event_metadata.names.tolist()
        mask = np.array([wanted(n) for n in names] + [False], bool)
        if not mask[:-1].any():
            continue
        for line in plane.lines:
            rows = plane.event_metadata.rows_of(line.events.metadata_id)
            total += int(mask[rows].sum())  # row -1 reads the final False
    return total


def host_contents(profile: Profile) -> dict[str, Any]:
    """The counts the views rest on, for one host."""
    analysis = analyze(profile)
    ops = len(analysis.ops.host.without_idle()) + len(analysis.ops.device_tf_ops.without_idle())
    return {
        "events": profile.num_events,
        "steps": len(analysis.steps),
        "step_rule": analysis.root_rule,
        "op_rows": ops,
        "gpu_planes": sum(plane_kind(p.name) == PlaneKind.GPU for p in profile.planes),
        "gpu_kernels": sum(row.occurrences for row in analysis.kernels.rows),
        "allocator_events": _count_named(profile, ALLOCATOR_EVENTS.__contains__),
        "iterator_events": _count_named(profile, lambda n: n.startswith(ITERATOR_PREFIX)),
    }


def producer(profile: Profile) -> dict[str, Any]:
    """The framework that wrote the profile, what showed it, and its recorded versions."""
    guess = detect_framework(profile)
    versions: dict[str, str] = {}
    for plane in profile.planes:
        for name, value in plane.stat_values().items():
            if name.endswith("_version") and isinstance(value, str | int) and str(value):
                versions.setdefault(name, str(value))
    return {"framework": guess.framework.value, "evidence": guess.evidence,
            "versions": dict(sorted(versions.items()))}


def capture_window_ms(profile: Profile) -> float | None:
    """The capture's length from the `Task Environment` plane (profile_start/stop_time, ns)."""
    for plane in profile.planes:
        stats = plane.stat_values()
        start, stop = stats.get("profile_start_time"), stats.get("profile_stop_time")
        if isinstance(start, int) and isinstance(stop, int) and stop >= start > 0:
            return (stop - start) / 1e6
    return None


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else many or one + 's'}"


def _steps(c: Mapping[str, Any]) -> str:
    if not c["steps"]:
        return "no steps"
    return f"{_n(c['steps'], 'step')} ({_RULE_WORDS.get(c['step_rule'], c['step_rule'])})"


def _kernels(c: Mapping[str, Any]) -> str:
    if not c["gpu_planes"]:
        return "no GPU plane"
    return f"{_n(c['gpu_kernels'], 'GPU kernel')} on {_n(c['gpu_planes'], 'GPU plane')}"


#: view -> (what it needs, in words; the count that must be positive; what the capture holds)
NEEDS: dict[str, tuple[str, str, Callable[[Mapping[str, Any]], str]]] = {
    "overview_page": (
        "training steps (step markers, Keras step functions, or a jitted function executed "
        "more than once) for step time; ops for the rest", "steps", _steps),
    "input_pipeline_analyzer": (
        "training steps, to measure the input share of each step", "steps", _steps),
    "tensorflow_stats": (
        "op events (TensorFlow ops named name:Type, XLA ops, GPU kernels)", "op_rows",
        lambda c: _n(c["op_rows"], "op row") if c["op_rows"] else "no op events"),
    "trace_viewer": ("any events", "events",
                     lambda c: _n(c["events"], "event") if c["events"] else "no events"),
    "kernel_stats": ("GPU kernels (a GPU plane with kernel events, from CUPTI or ROCm)",
                     "gpu_kernels", _kernels),
    "memory_profile": (
        "allocator events (MemoryAllocation / MemoryDeallocation; host_tracer_level 2)",
        "allocator_events",
        lambda c: _n(c["allocator_events"], "allocator event") if c["allocator_events"]
        else "no allocator events"),
    "pod_viewer": ("training steps on each host", "steps", _steps),
    "tf_data_bottleneck_analysis": (
        "tf.data iterator events (Iterator::*; host_tracer_level 2)", "iterator_events",
        lambda c: _n(c["iterator_events"], "iterator event") if c["iterator_events"]
        else "no tf.data iterator events"),
}


def view_needs(hosts: Sequence[tuple[str, Mapping[str, Any]]],
               offered: Callable[[str], bool], order: Sequence[str]) -> list[dict[str, Any]]:
    """One row per view of `order` (run_tools' order): {view, needs, found, has_data,
    offered}; with several hosts `found` names each host's figure, and `has_data` is true
    when some host has it."""
    rows = []
    for view in (v for v in order if v in NEEDS):
        needs, key, found = NEEDS[view]
        has = [bool(c[key]) for _, c in hosts]
        text = (found(hosts[0][1]) if len(hosts) == 1 else
                "; ".join(f"{h}: {found(c)}" for h, c in hosts))
        rows.append({"view": view, "needs": needs, "found": text, "has_data": any(has),
                     "offered": offered(view)})
    return rows
