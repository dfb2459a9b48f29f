"""ALL_HOSTS: the analyses of every host of a run combined into one, as one host's would be.

- Steps: the step intersection (analysis/hosts/step_alignment.py). Common step i's row is the row of
  the host that took longest in it (in synchronous training the slowest host sets the pace), so
  the step time is the per-step maximum over hosts, as the reference's `steptime_ms_*`, and the
  nine categories still sum to it. Its step number is the chief's.
- Op tables: summed per op name (IDLE rows too); kernel statistics summed per kernel, launch
  shape and op; 16/32-bit compute time summed.
- Environment: hostnames united (several files may name one machine), device cores summed.
- Framework: the one most hosts show (ties: the first host's); hosts that show none
  (UNKNOWN, e.g. a coordinator without the program's events) do not vote.

`alignment_diagnostics` words the intersection for users: which host is the chief, how each
host was matched, the steps each host lost, coordinators, hosts without steps, and an empty
intersection.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis, RunEnvironment
from tb_profile_plugin.analysis.hosts.step_alignment import Alignment, HostSteps, align_steps
from tb_profile_plugin.analysis.ops.host_hotspots import HostHotspot
from tb_profile_plugin.analysis.ops.jitted_functions import merge_jitted
from tb_profile_plugin.analysis.ops.kernel_stats import KernelDetails, KernelRow, KernelStats
from tb_profile_plugin.analysis.ops.op_metrics import IDLE, OpFacts, OpMetrics, OpTable
from tb_profile_plugin.analysis.ops.tf_functions import merge_graph_execution, merge_tf_functions
from tb_profile_plugin.analysis.pytorch.facts import PytorchFacts, combine_facts
from tb_profile_plugin.analysis.steps.step_db import NUM_TYPES, StepDb
from tb_profile_plugin.xspace.producers import Framework


@dataclass(frozen=True)
class MultiHost:
    """Every host's analysis, their step alignment, and the combined analysis."""

    analyses: dict[str, HostAnalysis]
    alignment: Alignment
    combined: HostAnalysis
    slowest_host: list[str]  # per combined step, the host whose row it is


def merge_op_tables(tables: list[OpTable]) -> OpTable:
    """Op tables of several hosts summed per op name (IDLE rows too; IDLE stays last)."""
    if len(tables) == 1:
        return tables[0]
    index: dict[str, int] = {}
    kinds: dict[str, tuple[str, str]] = {}
    for table in tables:
        for i, name in enumerate(table.name):
            index.setdefault(name, len(index))
            kinds.setdefault(name, (table.type[i], table.category[i]))
    names = sorted(index, key=lambda n: (n == IDLE, n))
    position = {n: i for i, n in enumerate(names)}
    columns = {
        c: np.zeros(len(names), np.int64)
        for c in ("occurrences", "total_ps", "self_ps", "eager_self_ps")
    }
    smallest = np.full(len(names), np.iinfo(np.int64).max, np.int64)
    for table in tables:
        at = np.array([position[n] for n in table.name], np.int64)
        for c, values in columns.items():
            np.add.at(values, at, getattr(table, c))
        np.minimum.at(smallest, at, table.min_ps)
    return OpTable(
        names, [kinds[n][0] for n in names], [kinds[n][1] for n in names],
        columns["occurrences"], columns["total_ps"], columns["self_ps"],
        columns["eager_self_ps"], smallest,
    )


def merge_op_facts(all_facts: list[dict[str, OpFacts]]) -> dict[str, OpFacts]:
    """Device op facts of several hosts: FLOPs and bytes summed, the first HLO text kept."""
    out: dict[str, OpFacts] = {}
    for facts in all_facts:
        for name, f in facts.items():
            old = out.get(name)
            out[name] = f if old is None else replace(
                old, flops=_sum_written(old.flops, f.flops),
                bytes_accessed=_sum_written(old.bytes_accessed, f.bytes_accessed))
    return out


def _sum_written(a: float, b: float) -> float:
    """a + b, where NaN means "not written": NaN only if neither host wrote it."""
    return float("nan") if math.isnan(a) and math.isnan(b) else float(np.nansum([a, b]))


def merge_kernel_stats(all_stats: list[KernelStats]) -> KernelStats:
    """Kernel stats of several hosts: rows with the same kernel, details and op summed."""
    if len(all_stats) == 1:
        return all_stats[0]
    merged: dict[tuple[str, KernelDetails, str, str], KernelRow] = {}
    for stats in all_stats:
        for r in stats.rows:
            key = (r.kernel_name, r.details, r.op_name, r.hlo_op)
            old = merged.get(key)
            merged[key] = r if old is None else replace(
                old, occurrences=old.occurrences + r.occurrences,
                total_ps=old.total_ps + r.total_ps, min_ps=min(old.min_ps, r.min_ps),
                max_ps=max(old.max_ps, r.max_ps),
            )
    rows = sorted(merged.values(), key=lambda r: (-r.total_ps, r.kernel_name, r.op_name))
    return KernelStats(
        rows, sum(s.num_gpu_planes for s in all_stats), sum(s.num_gpu_events for s in all_stats)
    )


def _empty_steps(has_device: bool) -> StepDb:
    empty = np.zeros(0, np.int64)
    return StepDb(empty, empty, empty, empty, np.zeros((0, NUM_TYPES), np.int64),
                  has_device, 0, 0)


def _combined_steps(analyses: Mapping[str, HostAnalysis], alignment: Alignment
                    ) -> tuple[StepDb, list[str]]:
    has_device = any(a.has_device for a in analyses.values())
    if alignment.chief is None or alignment.num_steps == 0:
        return _empty_steps(has_device), []
    hosts = list(alignment.hosts)
    durations = np.stack([analyses[h].steps.duration_ps[alignment.indices[h]] for h in hosts])
    slowest = np.argmax(durations, axis=0)  # ties: the earlier host (the chief first)
    columns = np.arange(alignment.num_steps)
    type_ps = np.stack([analyses[h].steps.type_ps[alignment.indices[h]] for h in hosts])
    chief = analyses[alignment.chief].steps
    at = alignment.indices[alignment.chief]
    steps = StepDb(
        step_num=chief.step_num[at], group_id=chief.group_id[at], begin_ps=chief.begin_ps[at],
        duration_ps=durations[slowest, columns], type_ps=type_ps[slowest, columns],
        has_device=has_device,
        num_dropped=sum(a.steps.num_dropped for a in analyses.values()),
        num_partial_dropped=0,
    )
    return steps, [hosts[int(i)] for i in slowest]


def _environment(analyses: Mapping[str, HostAnalysis]) -> RunEnvironment:
    names = list(dict.fromkeys(n for a in analyses.values() for n in a.environment.hostnames))
    device_types = [a.environment.device_type for a in analyses.values()
                    if a.environment.device_type != "CPU"]
    return RunEnvironment(names, device_types[0] if device_types else "CPU",
                          sum(a.environment.device_core_count for a in analyses.values()))


def combined_framework(analyses: Mapping[str, HostAnalysis]) -> tuple[Framework, str]:
    """The run's framework and its evidence: the one most hosts show (ties: the first
    host's); UNKNOWN hosts do not vote."""
    votes = Counter(a.framework for a in analyses.values() if a.framework != Framework.UNKNOWN)
    if not votes:
        return Framework.UNKNOWN, ""
    framework = votes.most_common(1)[0][0]
    host, first = next((h, a) for h, a in analyses.items() if a.framework == framework)
    evidence = first.framework_evidence if len(analyses) == 1 else (
        f"{host}: {first.framework_evidence}")
    return framework, evidence


def combine(analyses: Mapping[str, HostAnalysis]) -> MultiHost:
    """The hosts' analyses combined (see the module docstring); `analyses` in host order."""
    alignment = align_steps({
        h: HostSteps(a.steps, a.time_base_ns, a.has_device) for h, a in analyses.items()})
    steps, slowest = _combined_steps(analyses, alignment)
    all_ = list(analyses.values())
    with_device = [a for a in all_ if a.has_device] or all_
    ops = OpMetrics(
        host=merge_op_tables([a.ops.host for a in all_]),
        device=merge_op_tables([a.ops.device for a in with_device]),
        device_tf_ops=merge_op_tables([a.ops.device_tf_ops for a in with_device]),
        compute_16bit_ps=sum(a.ops.compute_16bit_ps for a in all_),
        compute_32bit_ps=sum(a.ops.compute_32bit_ps for a in all_),
        device_op_facts=merge_op_facts([a.ops.device_op_facts for a in with_device]),
    )
    reference = analyses[alignment.chief] if alignment.chief else all_[0]
    framework, evidence = combined_framework(analyses)
    combined = HostAnalysis(
        steps=steps, ops=ops, environment=_environment(analyses),
        root_rule=reference.root_rule, num_groups=sum(a.num_groups for a in all_),
        has_device=steps.has_device, has_tf_data=any(a.has_tf_data for a in all_),
        # per host: "kernels per step" advice must not grow with the number of hosts
        num_device_kernels=max(a.num_device_kernels for a in all_),
        kernels=merge_kernel_stats([a.kernels for a in all_]),
        time_base_ns=reference.time_base_ns,
        framework=framework, framework_evidence=evidence,
        jitted=merge_jitted(a.jitted for a in all_), step_module=reference.step_module,
        not_a_loop=reference.not_a_loop,
        graph_execution=merge_graph_execution(a.graph_execution for a in all_),
        tf_functions=merge_tf_functions(a.tf_functions for a in all_),
        tf_data_names=tuple(sorted({n for a in all_ for n in a.tf_data_names})),
        host_hotspots=merge_hotspots([a.host_hotspots for a in all_]),
        pytorch=_combined_pytorch(analyses, alignment, slowest),
    )
    return MultiHost(dict(analyses), alignment, combined, slowest)


def _combined_pytorch(analyses: Mapping[str, HostAnalysis], alignment: Alignment,
                      slowest: list[str]) -> PytorchFacts | None:
    """PyTorch hosts: their facts over the common steps, each step the slowest host's."""
    hosts = list(alignment.hosts) if alignment.chief is not None else []
    parts = [analyses[h].pytorch for h in hosts]
    if not hosts or any(p is None for p in parts):
        return None
    index = {h: i for i, h in enumerate(hosts)}
    return combine_facts([p for p in parts if p is not None],
                         [alignment.indices[h] for h in hosts],
                         np.array([index[h] for h in slowest], np.int64))


def merge_hotspots(per_host: list[tuple[HostHotspot, ...]], limit: int = 3
                   ) -> tuple[HostHotspot, ...]:
    """The hosts' hotspots by name, their per-step self times averaged over the hosts."""
    totals: dict[str, float] = {}
    for hotspots in per_host:
        for spot in hotspots:
            totals[spot.name] = totals.get(spot.name, 0.0) + spot.self_ms_per_step
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:limit]
    return tuple(HostHotspot(name, total / len(per_host)) for name, total in ranked)


def _number_ranges(numbers: np.ndarray, limit: int = 4) -> str:
    """'3–7, 12, 20–21' for sorted step numbers (at most `limit` ranges, then '…')."""
    if len(numbers) == 0:
        return ""
    breaks = np.flatnonzero(np.diff(numbers) != 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [len(numbers) - 1]])
    parts = [str(numbers[s]) if s == e else f"{numbers[s]}–{numbers[e]}"
             for s, e in zip(starts[:limit], ends[:limit], strict=True)]
    return ", ".join(parts) + (", …" if len(starts) > limit else "")


def alignment_diagnostics(multi: MultiHost) -> tuple[list[str], list[str]]:
    """(warnings, info) that explain the step intersection of a multi-host run."""
    warnings: list[str] = []
    info: list[str] = []
    a = multi.alignment
    if a.coordinators:
        info.append(
            f"{', '.join(a.coordinators)}: no device, so treated as coordinator(s) and left out "
            "of the step intersection (their ops are still counted)")
    for host in a.without_steps:
        warnings.append(f"{host}: no steps found, so it is left out of the step intersection")
    if a.chief is None:
        return warnings, info
    if a.empty_intersect:
        warnings.append(
            f"the hosts have steps but none in common: no step of every host overlaps in time "
            f"({', '.join(a.hosts)}); ALL_HOSTS shows no steps. Were the hosts captured "
            "together (one Capture Profile with every worker's address)?")
        return warnings, info
    if len(multi.analyses) == 1:
        return warnings, info
    chief_steps = multi.analyses[a.chief].steps.step_num[a.indices[a.chief]]
    info.append(
        f"{a.num_steps} step(s) are common to {len(a.hosts)} host(s); the chief (shortest step "
        f"span) is {a.chief}, whose step numbers {_number_ranges(chief_steps)} are shown; each "
        "ALL_HOSTS step is the slowest host's step")
    for host in a.hosts:
        steps = multi.analyses[host].steps
        if host != a.chief:
            own = steps.step_num[a.indices[host]]
            how = "by time" if a.by_time[host] else (
                "by step number (no step overlapped the chief's in time)")
            line = (f"{host}: steps {_number_ranges(own)} matched {how} to the chief's "
                    f"{_number_ranges(chief_steps)}")
            (info if a.by_time[host] else warnings).append(line)
        outside = np.setdiff1d(np.arange(len(steps)), a.indices[host])
        if len(outside):
            warnings.append(
                f"{host}: {len(outside)} of its {len(steps)} steps (numbers "
                f"{_number_ranges(steps.step_num[outside])}) are not common to every host and "
                "are left out of ALL_HOSTS")
    return warnings, info
