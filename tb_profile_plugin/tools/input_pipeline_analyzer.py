"""input_pipeline_analyzer view: is the program input-bound, and where the input time goes.

Device side: per step, input % = 100 * input / step time, summarised over steps. Input ops
(xprof_reference.md §3.5 "Input pipeline analyzer"): host ops that are tf.data iterators,
infeed enqueues or host-to-device memcpys, and, unlike the reference, the device's
host-to-device copies (JAX on GPU: `MemcpyH2D`), which the step breakdown counts as input
time, so this page and the overview read the same evidence; classified as

    enqueue              infeed enqueue or H2D memcpy
    demanded_file_read   a reader dataset (name ends in ::TFRecord, ::TextLine, ...)
    advanced_file_read   a reader behind prefetching (::Prefetch, ::ParallelMap, ...)
    preprocessing        any other tf.data iterator

and the host breakdown scales the tf.data categories so that they sum to the non-enqueue
input time: with ratio = min(1, average H2D time / average step time), non-enqueue time =
enqueue * (1 - ratio) / ratio, or the whole tf.data time when nothing is enqueued; it
sums the host's input ops only (the device's copies are no host-side time).

Advice (`advice`, `advice_withheld`): the overview's input advice, each piece checked against
the tf.data pipeline (analysis/advice/input_advice.py).

ALL_HOSTS: the steps are the overview's (common steps, each the slowest host's), the input ops
are summed over hosts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tb_profile_plugin.analysis.advice.input_advice import input_advice
from tb_profile_plugin.analysis.advice.pytorch_advice import dataloader_advice
from tb_profile_plugin.analysis.advice.verdict_basis import (
    bottleneck_json,
    steps_verdict,
    tf_data_verdict,
)
from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis
from tb_profile_plugin.analysis.steps.breakdown import Stats, category_ps
from tb_profile_plugin.analysis.steps.step_db import EventType, is_host_to_device
from tb_profile_plugin.tools.analysis_views import (
    has_host_events,
    multi_host_keys,
    requested_analysis,
    step_rows,
)
from tb_profile_plugin.tools.document import Diagnostics, document
from tb_profile_plugin.tools.overview_page import steps_table
from tb_profile_plugin.tools.pytorch_keys import dataloader_keys
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
    """The input ops, by self time: host ops (`input_category`, `side` "host") and the
    device's host-to-device copies (`side` "device", category enqueue: the device events the
    step breakdown counts as input, step_db.py `is_host_to_device`), each device row with its
    share of all device op time (`device_time_percent`, as the overview's top device ops).
    `time_percent` and `self_time_percent` are shares of all input ops' self time."""
    host = analysis.ops.host.without_idle()
    device = analysis.ops.device.without_idle()
    picked = [(host, i, c, "host") for i in range(len(host))
              if (c := input_category(host.name[i], host.type[i])) is not None]
    picked += [(device, i, "enqueue", "device") for i in range(len(device))
               if is_host_to_device(device.name[i].rsplit("/", 1)[-1])]
    total_self = float(sum(int(t.self_ps[i]) for t, i, _, _ in picked))
    device_total = float(np.sum(device.self_ps))
    rows = []
    for t, i, category, side in sorted(picked, key=lambda p: (-int(p[0].self_ps[p[1]]),
                                                               p[0].name[p[1]])):
        rows.append({
            "op_name": t.name[i], "count": int(t.occurrences[i]),
            "time_ms": float(t.total_ps[i]) / 1e9,
            "time_percent": 100.0 * float(t.total_ps[i]) / total_self if total_self else 0.0,
            "self_time_ms": float(t.self_ps[i]) / 1e9,
            "self_time_percent": 100.0 * float(t.self_ps[i]) / total_self
            if total_self else 0.0,
            "category": category, "side": side,
            "device_time_percent": 100.0 * float(t.self_ps[i]) / device_total
            if side == "device" and device_total else None,
        })
    return rows


def host_breakdown_us(analysis: HostAnalysis, ops: list[dict[str, Any]]) -> dict[str, float]:
    sums = {c: sum(r["self_time_ms"] for r in ops if r["category"] == c and r["side"] == "host")
            * 1e3 for c in CATEGORIES}
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
    pytorch = analysis.pytorch
    advice = (dataloader_advice(analysis) if pytorch is not None else
              input_advice(v.stated_level, v.input_percent, analysis.framework,
                           analysis.tf_data_names, tf_data))
    if pytorch is not None:
        diagnostics.info.append(
            "PyTorch: the input is the DataLoader's __next__ ranges in each step (input time "
            "of the step breakdown; `dataloader` per step)")
    elif not ops:
        diagnostics.info.append(
            "no input ops: the profile holds no tf.data iterator, infeed or host-to-device "
            "copy events, on the host or the device (the input comes from Python or was not "
            "traced)")
    return document(
        NAME, VERSION, request.run, request.host, diagnostics,
        steps=step_rows(steps, multi),
        step_time_ms=Stats.of(steps.duration_ps / 1e9).to_json(),
        input_percent=Stats.of(per_step_input).to_json(),
        input_percent_total=v.input_percent,
        bottleneck=bottleneck_json(v),
        host_breakdown_us=host_breakdown_us(analysis, ops),
        input_ops=ops,
        **advice.document_keys(),
        **multi_host_keys(multi),
        **({} if pytorch is None else dataloader_keys(pytorch, steps.duration_ps)),
    )


def input_ops_table(doc: dict[str, Any]) -> Table:
    header = ["op_name", "count", "time_ms", "time_percent", "self_time_ms",
              "self_time_percent", "category", "side", "device_time_percent"]
    return header, [[r[k] for k in header] for r in doc["input_ops"]]


VIEW = View(NAME, VERSION, build, has_host_events, combines_hosts=True,
            tables={"input_ops": input_ops_table, "steps": steps_table})
