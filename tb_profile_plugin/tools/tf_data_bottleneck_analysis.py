"""tf_data_bottleneck_analysis view: slow input pipelines, their bottleneck and what to fix.

Keys (docs/api.md): summary (the verdict and the worst pipeline's bottleneck), bottlenecks
(host pipelines, slowest first), pipelines (latency statistics of every pipeline), graphs
(the iterator graph of each pipeline's slowest executions, rank 1 = slowest), get_next
(IteratorGetNext latency per step: the overview's steps of each host, the same count and
numbers; a host without steps has none to compare), verdict_basis and verdict_other_view
(what the verdict measures, and the overview's verdict: analysis/advice/verdict_basis.py).
Offered for runs with `Iterator::` events; combines hosts (ALL_HOSTS analyses every host).
Iterator ids are 64-bit and so are sent as strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tb_profile_plugin.analysis.advice.verdict_basis import TfDataVerdict, tf_data_basis
from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis
from tb_profile_plugin.analysis.hosts.multi_host import combine
from tb_profile_plugin.analysis.steps.breakdown import verdict
from tb_profile_plugin.analysis.steps.execution_steps import RULE as EXECUTION_RULE
from tb_profile_plugin.analysis.tf_data.bottlenecks import (
    HostTfData,
    analyze_tf_data,
    execution_rows,
)
from tb_profile_plugin.analysis.tf_data.critical_path import SLOW_CALL_PS
from tb_profile_plugin.analysis.tf_data.guide_checks import (
    FAST_GET_NEXT_PS,
    GetNextCalls,
    GetNextLatency,
    get_next_per_step,
)
from tb_profile_plugin.analysis.tf_data.pipelines import ITERATOR_PREFIX
from tb_profile_plugin.tools.analysis_views import host_analyses, per_host_parts
from tb_profile_plugin.tools.document import Diagnostics, document
from tb_profile_plugin.tools.view import RunFacts, Table, View, ViewRequest
from tb_profile_plugin.xspace.model import Profile

NAME = "tf_data_bottleneck_analysis"
VERSION = 1
MAX_GRAPHS_PER_PIPELINE = 50
_PS_PER_US = 1e6


def _us(ps: float) -> float:
    return float(ps) / _PS_PER_US


@dataclass(frozen=True)
class TfDataHost:
    """One host's part of the document, rows with an empty host and messages without one:
    computed on the executor's workers for several hosts (`host_part_file`), so the server does
    not decode them; the IteratorGetNext calls are counted per step of the host's analysis."""

    diagnostics: Diagnostics
    pipelines: list[dict[str, Any]]
    bottlenecks: list[dict[str, Any]]
    graphs: list[dict[str, Any]]
    get_next_calls: GetNextCalls


def host_part(profile: Profile) -> TfDataHost:
    analysis = analyze_tf_data(profile)
    diagnostics = Diagnostics()
    _host_diagnostics("", analysis, diagnostics, False)
    return TfDataHost(diagnostics, _pipeline_rows("", analysis), _bottleneck_rows("", analysis),
                      _graphs("", analysis), analysis.get_next)


def host_part_file(path: str) -> TfDataHost:
    """`host_part` of one host file, decoded through the disk cache (an executor task)."""
    from tb_profile_plugin.xspace.store import ProfileStore

    return host_part(ProfileStore(max_bytes=0).open(path))


def _named(rows: list[dict[str, Any]], host: str) -> list[dict[str, Any]]:
    return [{**row, "host": host} for row in rows]


def build(request: ViewRequest) -> dict[str, Any]:
    diagnostics = Diagnostics()
    pipelines: list[dict[str, Any]] = []
    bottlenecks: list[dict[str, Any]] = []
    graphs: list[dict[str, Any]] = []
    get_next: list[dict[str, Any]] = []
    steps_of = host_analyses(request)  # each host's steps: the overview's
    several = len(request.profiles) > 1
    for host, part in per_host_parts(request, NAME, host_part_file, host_part).items():
        prefix = f"{host}: " if several else ""
        for kind, messages in part.diagnostics.to_json().items():
            getattr(diagnostics, kind).extend(prefix + m for m in messages)
        pipelines.extend(_named(part.pipelines, host))
        bottlenecks.extend(_named(part.bottlenecks, host))
        graphs.extend(_named(part.graphs, host))
        get_next.append(_get_next(host, _per_step(part.get_next_calls, steps_of[host])))
    bottlenecks.sort(key=lambda b: (-b["max_latency_us"], b["host"], b["input_pipeline"]))
    overview_steps = (combine(steps_of).combined if len(steps_of) > 1
                      else next(iter(steps_of.values()))).steps
    if len(steps_of) > 1:
        diagnostics.info.append(
            "IteratorGetNext per step counts each host's own steps ("
            + ", ".join(f"{g['host']}: {g['num_steps']}" for g in get_next)
            + f"); the overview of all hosts shows the {len(overview_steps)} steps common to "
            "every host")
    summary = _summary(bottlenecks, pipelines, get_next)
    worst = bottlenecks[0] if bottlenecks else None
    basis, other = tf_data_basis(
        None if worst is None else TfDataVerdict(
            summary["is_input_bound"], worst["host"], worst["input_pipeline"],
            worst["max_latency_us"], worst["iterator_name"]),
        verdict(overview_steps), len(overview_steps))
    return document(
        NAME, VERSION, request.run, request.host, diagnostics,
        summary=summary,
        bottlenecks=bottlenecks, pipelines=pipelines, graphs=graphs, get_next=get_next,
        slow_call_threshold_us=_us(SLOW_CALL_PS),
        verdict_basis=basis, verdict_other_view=other,
    )


def _per_step(calls: GetNextCalls, host: HostAnalysis) -> GetNextLatency:
    """IteratorGetNext time in each of the host's steps (the overview's): by forest group,
    or by time for steps from jitted-function executions."""
    return get_next_per_step(calls, host.steps, by_group=host.root_rule != EXECUTION_RULE)


def _host_diagnostics(host: str, analysis: HostTfData, diagnostics: Diagnostics,
                      several: bool) -> None:
    prefix = f"{host}: " if several else ""
    events = analysis.events
    if len(events) == 0:
        diagnostics.warnings.append(
            f"{prefix}no tf.data iterator events (named Iterator::...) were recorded: no "
            "tf.data pipeline produced elements while capturing, or the host tracer level "
            "was below 2 (tf.data records its iterators at host_tracer_level 2 and above)")
        return
    if not events.pipelines:
        diagnostics.warnings.append(
            f"{prefix}{len(events)} iterator events were recorded but no call of a pipeline's "
            "root (Iterator::Root or Iterator::Prefetch, two name parts): the capture holds "
            "only background producer work, so no pipeline latency can be measured")
    if events.num_unlinked_producers:
        diagnostics.info.append(
            f"{prefix}{events.num_unlinked_producers} producer call(s) on background threads "
            "match no consumer call in the capture (the element was consumed after the "
            "capture ended); they belong to no execution")
    if analysis.stats.num_too_deep:
        diagnostics.warnings.append(
            f"{prefix}{analysis.stats.num_too_deep} iterator call(s) are nested deeper than "
            "100 levels and were left out of their execution")
    for summary in analysis.pipelines:
        shown = min(len(summary.pipeline.executions), MAX_GRAPHS_PER_PIPELINE)
        if shown < len(summary.pipeline.executions):
            diagnostics.info.append(
                f"{prefix}{summary.pipeline.name}: graphs are sent for the {shown} slowest of "
                f"its {len(summary.pipeline.executions)} executions")
    if any(s.pipeline.kind == "device" for s in analysis.pipelines):
        diagnostics.info.append(
            f"{prefix}device pipelines (a distribution strategy's per-device prefetch) are "
            "listed with their latency but, as in the reference, not ranked as bottlenecks")


def _pipeline_rows(host: str, analysis: HostTfData) -> list[dict[str, Any]]:
    rows = []
    for s in analysis.pipelines:
        rows.append({
            "host": host, "input_pipeline": s.pipeline.name, "kind": s.pipeline.kind,
            "root_id": str(s.pipeline.root_id),
            "min_latency_us": _us(s.min_latency_ps), "avg_latency_us": _us(s.avg_latency_ps),
            "max_latency_us": _us(s.max_latency_ps), "num_calls": s.num_calls,
            "num_slow_calls": s.num_slow_calls, "ends_in_prefetch": s.ends_in_prefetch,
            "num_executions": len(s.pipeline.executions),
            "num_graphs": min(len(s.pipeline.executions), MAX_GRAPHS_PER_PIPELINE),
        })
    return rows


def _bottleneck_rows(host: str, analysis: HostTfData) -> list[dict[str, Any]]:
    rows = []
    for s in analysis.pipelines:
        if s.pipeline.kind != "host" or s.bottleneck is None:
            continue
        rows.append({
            "host": host, "input_pipeline": s.pipeline.name,
            "max_latency_us": _us(s.max_latency_ps),
            "iterator_id": str(s.bottleneck.id),
            "iterator_name": s.bottleneck.name, "iterator_long_name": s.bottleneck.long_name,
            "iterator_latency_us": _us(s.bottleneck_self_ps),
            "iterator_num_calls": s.bottleneck_calls,
            "suggestion": " ".join(s.suggestions), "suggestion_type": s.suggestion_type,
            "suggestions": s.suggestions, "ends_in_prefetch": s.ends_in_prefetch,
            **s.advice.document_keys(),
        })
    return rows


def _graphs(host: str, analysis: HostTfData) -> list[dict[str, Any]]:
    """The iterator graph of each pipeline's slowest executions (rank 1 = slowest)."""
    events, stats = analysis.events, analysis.stats
    out = []
    for s in analysis.pipelines:
        for rank, execution in enumerate(
                s.pipeline.executions[:MAX_GRAPHS_PER_PIPELINE].tolist(), start=1):
            nodes = []
            bottleneck_id = None
            for row in execution_rows(analysis, execution).tolist():
                info = analysis.iterator_of_row(row)
                if stats.bottleneck[row]:
                    bottleneck_id = str(info.id)
                nodes.append({
                    "id": str(info.id), "name": info.name, "long_name": info.long_name,
                    "parent_id": None if info.parent_id is None else str(info.parent_id),
                    "is_async": info.is_async,
                    "start_time_us": _us(stats.start_ps[row]),
                    "total_duration_us": _us(stats.duration_ps[row]),
                    "self_time_us": _us(stats.self_ps[row]),
                    "num_calls": int(stats.num_calls[row]),
                    "on_critical_path": bool(stats.blocking[row]),
                    "is_bottleneck": bool(stats.bottleneck[row]),
                })
            out.append({
                "host": host, "input_pipeline": s.pipeline.name, "rank": rank,
                "start_time_us": _us(events.start_ps[execution]),
                "latency_us": _us(events.duration_ps[execution]),
                "bottleneck_id": bottleneck_id, "nodes": nodes,
            })
    return out


def _get_next(host: str, g: GetNextLatency) -> dict[str, Any]:
    """One host's IteratorGetNext time per step; no slow-step count without steps."""
    latency = g.latency_ps
    return {
        "host": host, "num_steps": len(latency),
        "num_slow_steps": int((latency > FAST_GET_NEXT_PS).sum()) if len(latency) else None,
        "avg_latency_us": _us(float(latency.mean())) if len(latency) else None,
        "max_latency_us": _us(int(latency.max())) if len(latency) else None,
        "num_calls_outside_steps": g.num_outside_calls,
        "outside_steps_latency_us": _us(g.outside_latency_ps),
        "steps": [
            {"step_num": int(step), "latency_us": _us(int(ps)), "num_calls": int(calls),
             "fast": bool(ps <= FAST_GET_NEXT_PS)}
            for step, ps, calls in zip(g.step_num.tolist(), latency.tolist(),
                                       g.num_calls.tolist(), strict=True)
        ],
    }


def _get_next_text(get_next: list[dict[str, Any]]) -> str:
    """The guide's per-step check in words: slow steps out of the overview's steps, or, on a
    profile without steps, that there is none to compare."""
    total_steps = sum(g["num_steps"] for g in get_next)
    outside = sum(g["num_calls_outside_steps"] for g in get_next)
    if total_steps:
        slow = sum(g["num_slow_steps"] for g in get_next if g["num_steps"])
        text = (f" IteratorGetNext took more than 50 µs in {slow} of the {total_steps} "
                "step(s) the overview shows")
        if outside:
            text += (f"; {outside} call(s) fall outside those steps (before or after them, "
                     "or in a partial first or last step) and are not counted")
        return text + "."
    if outside:
        outside_us = sum(g["outside_steps_latency_us"] for g in get_next)
        return (" The profile has no steps (see the overview's diagnostics), so there are no "
                f"steps to compare IteratorGetNext time across; its {outside} call(s) took "
                f"{outside_us / outside:.1f} µs on average.")
    return ""


def _summary(bottlenecks: list[dict[str, Any]], pipelines: list[dict[str, Any]],
             get_next: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict: input-bound when a host pipeline's slowest call takes more than 50 µs."""
    total_steps = sum(g["num_steps"] for g in get_next)
    get_next_text = _get_next_text(get_next)
    summary: dict[str, Any] = {
        "is_input_bound": False, "host": None, "input_pipeline": None, "max_latency_us": None,
        "iterator_name": None, "iterator_long_name": None, "suggestion": None,
        "suggestion_type": None,
        "num_slow_get_next_steps": sum(g["num_slow_steps"] for g in get_next
                                       if g["num_steps"]) if total_steps else None,
        "num_get_next_steps": total_steps,
        "num_get_next_calls_outside_steps": sum(g["num_calls_outside_steps"]
                                                for g in get_next),
    }
    if not bottlenecks:
        has_calls = any(p["num_calls"] for p in pipelines)
        summary["message"] = (
            "No host input pipeline call was captured; see the diagnostics." if not has_calls
            else "Only device pipelines were captured; see their latency below.")
        return summary
    worst = bottlenecks[0]
    summary.update({k: worst[k] for k in (
        "host", "input_pipeline", "max_latency_us", "iterator_name", "iterator_long_name",
        "suggestion", "suggestion_type")})
    if worst["max_latency_us"] > _us(SLOW_CALL_PS):
        summary["is_input_bound"] = True
        summary["message"] = (
            f"The program is input-bound: a call of input pipeline {worst['input_pipeline']} "
            f"on host {worst['host']} took {worst['max_latency_us']:.1f} µs, slower than "
            f"50 µs. Its bottleneck is {worst['iterator_name']} ({worst['iterator_long_name']})"
            f", with {worst['iterator_latency_us']:.1f} µs of self time over its "
            f"{worst['iterator_num_calls']} call(s) in that execution (a background producer's "
            "calls count in full)." + get_next_text)
    else:
        summary["message"] = (
            "No input pipeline call was slower than 50 µs: tf.data is not the bottleneck."
            + get_next_text)
    return summary


def pipelines_table(doc: dict[str, Any]) -> Table:
    header = ["host", "input_pipeline", "kind", "min_latency_us", "avg_latency_us",
              "max_latency_us", "num_calls", "num_slow_calls", "ends_in_prefetch"]
    return header, [[row[k] for k in header] for row in doc["pipelines"]]


def bottlenecks_table(doc: dict[str, Any]) -> Table:
    header = ["host", "input_pipeline", "max_latency_us", "iterator_name",
              "iterator_long_name", "iterator_latency_us", "suggestion_type", "suggestion"]
    return header, [[row[k] for k in header] for row in doc["bottlenecks"]]


def has_iterator_events(facts: RunFacts) -> bool:
    return any(name.startswith(ITERATOR_PREFIX) for name in facts.event_names)


VIEW = View(
    NAME, VERSION, build, has_iterator_events, combines_hosts=True,
    tables={"pipelines": pipelines_table, "bottlenecks": bottlenecks_table})
