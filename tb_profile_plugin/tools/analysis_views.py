"""What the analysis views share: the requested host's analysis, or every host's combined.

One host: its analysis, memoised per decoded profile. Several (ALL_HOSTS): every host's
analysis from the per-file cache or the executor's workers (analysis/hosts/host_pool.py,
analysis/hosts/executors.py: the local process pool or a Dask cluster) when the request knows the
files, else in this process, combined by analysis/hosts/multi_host.py; the step
intersection is explained in the diagnostics.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from tb_profile_plugin.analysis.advice.recommendations import step_diagnostics
from tb_profile_plugin.analysis.events.forest import PRODUCER_RULE
from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis, analyze
from tb_profile_plugin.analysis.hosts.host_pool import analyze_files, per_file
from tb_profile_plugin.analysis.hosts.multi_host import MultiHost, alignment_diagnostics, combine
from tb_profile_plugin.analysis.ops.kernel_stats import KernelStats
from tb_profile_plugin.analysis.ops.op_analysis import (
    OpAnalysis,
    profile_kernel_stats,
    profile_ops,
)
from tb_profile_plugin.analysis.ops.op_metrics import OpFacts
from tb_profile_plugin.analysis.steps.breakdown import steps_json
from tb_profile_plugin.analysis.steps.execution_steps import RULE as EXECUTION_RULE
from tb_profile_plugin.analysis.steps.step_db import StepDb
from tb_profile_plugin.tools.document import Diagnostics
from tb_profile_plugin.tools.view import RunFacts, ViewRequest
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import is_async_start

T = TypeVar("T")


def profile_messages(request: ViewRequest, diagnostics: Diagnostics) -> None:
    """The errors and warnings the profiler itself recorded, per host when there are several."""
    several = len(request.profiles) > 1
    for host, facts in request.host_facts().items():
        prefix = f"{host}: " if several else ""
        for error in facts.errors:
            diagnostics.errors.append(f"{prefix}the profiler recorded an error: {error}")
        for warning in facts.warnings:
            diagnostics.warnings.append(f"{prefix}the profiler recorded a warning: {warning}")


def host_analyses(request: ViewRequest) -> dict[str, HostAnalysis]:
    """Every requested host's analysis, in host order (see the module docstring)."""
    if len(request.profiles) > 1 and set(request.paths) >= set(request.profiles):
        return analyze_files({h: request.paths[h] for h in request.profiles})
    return {host: analyze(profile) for host, profile in request.profiles.items()}


def per_host_parts(
    request: ViewRequest, kind: str, part_of_file: Callable[[str], T],
    part: Callable[[Profile], T],
) -> dict[str, T]:
    """Each requested host's `part(profile)`, in host order: for several hosts whose files are
    known, `part_of_file(path)` on the executor's workers, cached per file under `kind`
    (analysis/hosts/host_pool.py), so the server decodes none of them; else here."""
    if len(request.profiles) > 1 and set(request.paths) >= set(request.profiles):
        paths = {h: request.paths[h] for h in request.profiles}
        host_of = {p: h for h, p in paths.items()}
        return per_file(kind, paths, part_of_file,
                        lambda path: part(request.profiles[host_of[path]]))
    return {host: part(profile) for host, profile in request.profiles.items()}


def op_analyses(request: ViewRequest) -> list[OpAnalysis | HostAnalysis]:
    """What the op views (TensorFlow stats, kernel stats) need of every requested host: its
    op tables and kernels, without steps (analysis/ops/op_analysis.py); several hosts with files
    go through the executor's host analyses, which hold the same tables."""
    if len(request.profiles) > 1 and set(request.paths) >= set(request.profiles):
        return list(host_analyses(request).values())
    return [profile_ops(profile) for profile in request.profiles.values()]


def kernel_analyses(request: ViewRequest) -> list[KernelStats]:
    """The kernel statistics of every requested host (`op_analyses`' kernels, without the op
    tables where the hosts are analysed here)."""
    if len(request.profiles) > 1 and set(request.paths) >= set(request.profiles):
        return [a.kernels for a in host_analyses(request).values()]
    return [profile_kernel_stats(profile) for profile in request.profiles.values()]


def single_host(request: ViewRequest, diagnostics: Diagnostics) -> tuple[str, HostAnalysis]:
    """The analysis of the one requested host, with its XSpace and step diagnostics added."""
    host, profile = next(iter(request.profiles.items()))
    profile_messages(request, diagnostics)
    analysis = analyze(profile)
    warnings, info = step_diagnostics("", analysis)
    diagnostics.warnings.extend(warnings)
    diagnostics.info.extend(info + step_source_notes("", analysis))
    return host, analysis


def multi_host(request: ViewRequest, diagnostics: Diagnostics) -> MultiHost:
    """Every requested host's analysis and their combination, with diagnostics per host."""
    profile_messages(request, diagnostics)
    analyses = host_analyses(request)
    for host, analysis in analyses.items():
        warnings, info = step_diagnostics(host, analysis)
        diagnostics.warnings.extend(warnings)
        diagnostics.info.extend(info + step_source_notes(host, analysis))
    multi = combine(analyses)
    warnings, info = alignment_diagnostics(multi)
    diagnostics.warnings.extend(warnings)
    diagnostics.info.extend(info)
    return multi


def step_source_notes(host: str, analysis: HostAnalysis) -> list[str]:
    """Where the steps came from, when no profiler marked them (info diagnostics)."""
    prefix = f"{host}: " if host else ""
    if analysis.root_rule == EXECUTION_RULE and len(analysis.steps):
        count = len(analysis.steps)
        return [
            f"{prefix}no step markers were recorded; the {count} steps are the executions of "
            f"the jitted function {analysis.step_module} (of the XLA programs run more than "
            "once, the one with the most device time), each from the start of one execution to "
            "the start of the next, aligned across the host's devices."]
    if analysis.root_rule == PRODUCER_RULE and len(analysis.steps):
        return [f"{prefix}the profiler grouped the events into steps when it wrote the file "
                "(group_id); those steps are used as they are."]
    return []


def requested_analysis(
    request: ViewRequest, diagnostics: Diagnostics
) -> tuple[HostAnalysis, MultiHost | None]:
    """The one host's analysis, or for several hosts the combined one and the combination."""
    if len(request.profiles) == 1:
        return single_host(request, diagnostics)[1], None
    multi = multi_host(request, diagnostics)
    return multi.combined, multi


def hosts_json(multi: MultiHost) -> dict[str, Any]:
    """How each host took part in the step intersection (the `multi_host` key)."""
    a = multi.alignment
    rows = []
    for host, analysis in multi.analyses.items():
        role = ("chief" if host == a.chief else "aligned" if host in a.indices
                else "coordinator" if host in a.coordinators else "no_steps")
        rows.append({
            "host": host, "role": role, "num_steps": len(analysis.steps),
            "num_common_steps": len(a.indices.get(host, ())),
            "step_offset": a.offsets.get(host), "aligned_by_time": a.by_time.get(host),
        })
    return {"chief": a.chief, "num_common_steps": a.num_steps,
            "empty_intersect": a.empty_intersect, "hosts": rows}


def step_rows(steps: StepDb, multi: MultiHost | None) -> list[dict[str, Any]]:
    """The `steps` key; for several hosts each row names the host whose step it is (the
    slowest)."""
    rows = steps_json(steps)
    if multi is not None:
        for row, host in zip(rows, multi.slowest_host, strict=True):
            row["host"] = host
    return rows


def multi_host_keys(multi: MultiHost | None) -> dict[str, Any]:
    """`{"multi_host": ...}` for several hosts (see `hosts_json`), else nothing."""
    return {} if multi is None else {"multi_host": hosts_json(multi)}


def has_host_events(facts: RunFacts) -> bool:
    """Analyses need a host plane with events."""
    return facts.num_events > 0 and "/host:CPU" in facts.plane_names


_GIGA_PER_PS = 1e3  # x per ps = 1e12 x per s = 1e3 giga-x per s
#: Below this device time per occurrence (10 ns: a few clock cycles) an op is too short for
#: its time to measure a rate: bytes over a near-zero time gave 997,090,492 GB/s.
_MIN_RATE_TIME_PS = 10_000


def fact_keys(facts: dict[str, OpFacts], name: str, time_ps: float,
              occurrences: int = 1) -> dict[str, Any]:
    """What the XLA side says of a device op: its HLO ops and module, and where the profile
    has FLOP and byte counts, the achieved rates over `time_ps` (beyond the reference). A rate
    is None (shown "—") where it cannot be measured: the op's HLO ops are all async starts
    (`copy-start`: the issue, not the transfer), or its time per occurrence is under
    `_MIN_RATE_TIME_PS`."""
    found = facts.get(name)
    if found is None:
        return {}
    keys: dict[str, Any] = {"hlo_op": found.hlo_ops, "module": found.module}
    listed = [h for h in found.hlo_ops.split(", ") if h and h != "..."]
    measurable = (time_ps >= _MIN_RATE_TIME_PS * max(occurrences, 1)
                  and not (listed and all(is_async_start(h) for h in listed)))
    if time_ps > 0 and not math.isnan(found.flops):
        keys["flop_rate_gflops_per_s"] = (found.flops / time_ps * _GIGA_PER_PS if measurable
                                          else None)
    if time_ps > 0 and not math.isnan(found.bytes_accessed):
        keys["memory_bandwidth_gb_per_s"] = (found.bytes_accessed / time_ps * _GIGA_PER_PS
                                             if measurable else None)
    return keys
