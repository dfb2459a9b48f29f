"""input_pipeline_analyzer view: is the program input-bound, and where the input time goes.

Device side: per step, input % = 100 * input / step time, summarised over steps. Host side
(xprof_reference.md §3.5 "Input pipeline analyzer"): the input ops are host ops that are
tf.data iterators, infeed enqueues or host-to-device memcpys, classified as

    enqueue              infeed enqueue or H2D memcpy
    demanded_file_read   a reader dataset (name ends in ::TFRecord, ::TextLine, ...)
    advanced_file_read   a reader behind prefetching (::Prefetch, ::ParallelMap, ...)
    preprocessing        any other tf.data iterator

and the host breakdown scales the tf.data categories so that they sum to the non-enqueue
input time: with ratio = min(1, average H2D time / average step time), non-enqueue time =
enqueue * (1 - ratio) / ratio, or the whole tf.data time when nothing is enqueued.

Advice (`advice`, `advice_withheld`): the overview's input advice, each piece checked against
the tf.data pipeline (analysis/advice/input_advice.py).

ALL_HOSTS: the steps are the overview's (common steps, each the slowest host's), the input ops
are summed over hosts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tb_profile_plugin.analysis.advice.input_advice import input_advice
from tb_profile_plugin.analysis.advice.verdict_basis import steps_verdict, tf_data_verdict
from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis
from tb_profile_plugin.analysis.steps.breakdown import Stats, category_ps
from tb_profile_plugin.analysis.steps.step_db import EventType
from tb_profile_plugin.tools.analysis_views import (
    has_host_events,
    multi_host_keys,
    requested_analysis,
    step_rows,
)
from tb_profile_plugin.tools.document import Diagnostics, document
from tb_profile_plugin.tools.overview_page import steps_table
from tb_profile_plugin.tools.view import Table, View, ViewRequest

NAME = "input_pipeline_analyzer"
VERSION = 1
_READERS = ("::TFRecord", "::TextLine", "::FixedLengthRecord", "::SSTable", "::RecordIO",
            "::ArrayRecord")
_ADVANCED = ("::MemoryReader", "::MemoryWriter", "::Interleave", "::Prefetch", "::ParallelMap")
CATEGORIES = ("enqueue", "demanded_file_read", "advanced_file_read", "preprocessing")


def input_category(name: str, op_type: str) -> str | None:
    """Input-op category of a host op, or None when it is not an input op."""
    if op_type.startswith("InfeedEnqueue") or op_type.lower().startswith("memcpyhtod"):
        return "enqueue"
    if op_type != "Dataset":
        return None
    if name.endswith(_READERS):
        return "advanced_file_read" if any(a in name for a in _ADVANCED) else "demanded_file_read"
    return "preprocessing"


def input_ops(analysis: HostAnalysis) -> list[dict[str, Any]]:
    host = analysis.ops.host.without_idle()
    picked = [(i, c) for i in range(len(host))
              if (c := input_category(host.name[i], host.type[i])) is not None]
    total_self = float(sum(int(host.self_ps[i]) for i, _ in picked))
    rows = []
    for i, category in sorted(picked, key=lambda p: (-int(host.self_ps[p[0]]), host.name[p[0]])):
        rows.append({
            "op_name": host.name[i], "count": int(host.occurrences[i]),
            "time_ms": float(host.total_ps[i]) / 1e9,
            "time_percent": 100.0 * float(host.total_ps[i]) / total_self if total_self else 0.0,
            "self_time_ms": float(host.self_ps[i]) / 1e9,
            "self_time_percent": 100.0 * float(host.self_ps[i]) / total_self
            if total_self else 0.0,
            "category": category,
        })
    return rows


def host_breakdown_us(analysis: HostAnalysis, ops: list[dict[str, Any]]) -> dict[str, float]:
    sums = {c: sum(r["self_time_ms"] for r in ops if r["category"] == c) * 1e3
            for c in CATEGORIES}
    steps = analysis.steps
    avg_step = float(steps.duration_ps.mean()) if len(steps) else 0.0
    avg_h2d = float(steps.type_ps[:, EventType.HOST_TO_DEVICE].mean()) if len(steps) else 0.0
    ratio = min(1.0, avg_h2d / avg_step) if avg_step > 0 else 0.0
    tf_data = sums["demanded_file_read"] + sums["advanced_file_read"] + sums["preprocessing"]
    non_enqueue = sums["enqueue"] * (1 - ratio) / ratio if ratio > 0 else tf_data
    scale = non_enqueue / tf_data if tf_data > 0 else 0.0
    out = {"enqueue": sums["enqueue"]}
    for c in ("demanded_file_read", "advanced_file_read", "preprocessing"):
        out[c] = sums[c] * scale
    out["unclassified"] = max(0.0, non_enqueue - tf_data * scale)
    return out


def build(request: ViewRequest) -> dict[str, Any]:
    diagnostics = Diagnostics()
    analysis, multi = requested_analysis(request, diagnostics)
    steps = analysis.steps
    v = steps_verdict(analysis)
    cats = category_ps(steps)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_step_input = np.where(steps.duration_ps > 0,
                                  100.0 * cats["input"] / steps.duration_ps, 0.0)
    ops = input_ops(analysis)
    tf_data = (tf_data_verdict(*next(iter(request.profiles.items())))
               if analysis.has_tf_data and len(request.profiles) == 1 else None)
    advice = input_advice(v.input_bound, v.input_percent, analysis.framework,
                          analysis.tf_data_names, tf_data)
    if not ops:
        diagnostics.info.append(
            "no input ops on the host: the profile holds no tf.data iterator, infeed or "
            "host-to-device copy events (the input comes from Python or was not traced)")
    return document(
        NAME, VERSION, request.run, request.host, diagnostics,
        steps=step_rows(steps, multi),
        step_time_ms=Stats.of(steps.duration_ps / 1e9).to_json(),
        input_percent=Stats.of(per_step_input).to_json(),
        input_percent_total=v.input_percent,
        bottleneck={"input_bound": v.input_bound, "statement": v.statement},
        host_breakdown_us=host_breakdown_us(analysis, ops),
        input_ops=ops,
        **advice.document_keys(),
        **multi_host_keys(multi),
    )


def input_ops_table(doc: dict[str, Any]) -> Table:
    header = ["op_name", "count", "time_ms", "time_percent", "self_time_ms",
              "self_time_percent", "category"]
    return header, [[r[k] for k in header] for r in doc["input_ops"]]


VIEW = View(NAME, VERSION, build, has_host_events, combines_hosts=True,
            tables={"input_ops": input_ops_table, "steps": steps_table})
