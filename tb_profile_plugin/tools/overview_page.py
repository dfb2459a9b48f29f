"""overview_page view: step time and its breakdown, verdict, top ops, environment, advice.

Keys (docs/api.md): steps, step_time_ms, categories (per category avg/stddev/min/max in ms and
share of step time), input_percent, all_others_percent, bottleneck, verdict_basis and
verdict_other_view (what the verdict measures, and the tf.data view's verdict:
analysis/advice/verdict_basis.py), device_compute_precision,
top_device_ops, top_host_ops, run_environment, step_rule, step_module (the jitted function
whose executions are the steps, rule "executions"), jitted_functions (per XLA module: calls,
execution times, device share, host dispatch), tf_functions (per tf.function: calls, call
times, concrete functions traced), recommendations (texts), advice (each with its evidence)
and advice_withheld (analysis/advice/recommendations.py).

ALL_HOSTS (analysis/hosts/multi_host.py): the steps common to every host, each the slowest host's
step (its name in the step's `host`), ops summed over hosts; `multi_host` says how each host
took part in the step intersection.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tb_profile_plugin.analysis.advice.recommendations import advice_for
from tb_profile_plugin.analysis.advice.verdict_basis import (
    TfDataVerdict,
    bottleneck_json,
    overview_basis,
    steps_verdict,
    tf_data_verdict,
)
from tb_profile_plugin.analysis.ops.jitted_functions import JittedFunction
from tb_profile_plugin.analysis.ops.op_metrics import OpFacts, OpTable
from tb_profile_plugin.analysis.ops.tf_functions import TfFunction
from tb_profile_plugin.analysis.steps.breakdown import (
    CATEGORY_LABELS,
    Stats,
    Verdict,
    category_ps,
    category_stats_ms,
)
from tb_profile_plugin.tools.analysis_views import (
    fact_keys,
    has_host_events,
    multi_host_keys,
    requested_analysis,
    step_rows,
)
from tb_profile_plugin.tools.document import Diagnostics, document
from tb_profile_plugin.tools.pytorch_keys import overview_keys
from tb_profile_plugin.tools.view import Table, View, ViewRequest

NAME = "overview_page"
VERSION = 1
TOP_OPS = 10


def top_ops(table: OpTable, limit: int = TOP_OPS,
            facts: dict[str, OpFacts] | None = None) -> list[dict[str, Any]]:
    """Ops by self time (ties by name), with their share of all op self time (no IDLE); device
    ops of XLA programs with their HLO ops, module and achieved rates (`fact_keys`)."""
    ops = table.without_idle()
    total = float(np.sum(ops.self_ps))
    if total <= 0:
        return []
    order = sorted(range(len(ops)), key=lambda i: (-int(ops.self_ps[i]), ops.name[i]))
    rows, cumulative = [], 0.0
    for i in order[:limit]:
        share = float(ops.self_ps[i]) / total
        cumulative += share
        rows.append({
            "name": ops.name[i], "type": ops.type[i], "category": ops.category[i],
            "occurrences": int(ops.occurrences[i]),
            "self_time_ms": float(ops.self_ps[i]) / 1e9,
            "self_time_fraction": share, "cumulative_time_fraction": cumulative,
            **(fact_keys(facts, ops.name[i], float(ops.total_ps[i]), int(ops.occurrences[i]))
               if facts else {}),
        })
    return rows


def jitted_rows(jitted: tuple[JittedFunction, ...]) -> list[dict[str, Any]]:
    """The jitted functions table (analysis/ops/jitted_functions.py), times in ms."""
    return [{
        "module": row.module, "calls": row.calls, "devices": row.devices,
        "executions": row.executions, "mean_ms": row.mean_ps / 1e9,
        "min_ms": row.min_ps / 1e9, "max_ms": row.max_ps / 1e9,
        "device_time_ms": row.device_ps / 1e9, "device_fraction": row.device_fraction,
        "dispatches": row.dispatches,
        "dispatch_mean_ms": None if math.isnan(row.dispatch_mean_ps)
        else row.dispatch_mean_ps / 1e9,
    } for row in jitted]


def tf_function_rows(functions: tuple[TfFunction, ...]) -> list[dict[str, Any]]:
    """The tf.functions table (analysis/ops/tf_functions.py), times in ms."""
    return [{
        "function": row.function, "calls": row.calls, "concrete": row.concrete,
        "mean_ms": row.mean_ps / 1e9, "min_ms": row.min_ps / 1e9, "max_ms": row.max_ps / 1e9,
        "total_ms": row.total_ps / 1e9, "fraction": row.fraction,
    } for row in functions]


def build(request: ViewRequest) -> dict[str, Any]:
    diagnostics = Diagnostics()
    analysis, multi = requested_analysis(request, diagnostics)
    steps = analysis.steps
    v = steps_verdict(analysis)
    total_ps = float(steps.duration_ps.sum())
    shares = {k: (100.0 * float(x.sum()) / total_ps if total_ps else 0.0)
              for k, x in category_ps(steps).items()}
    stats = category_stats_ms(steps)
    precision_total = analysis.ops.compute_16bit_ps + analysis.ops.compute_32bit_ps
    if not analysis.has_device:
        diagnostics.info.append(
            "no device planes: a CPU-only profile, so device compute, precision and top device "
            "ops are empty (on a GPU machine this means no CUPTI trace was captured)")
    env = analysis.environment
    tf_data = _tf_data_verdict(request, analysis.has_tf_data)
    advice = advice_for(analysis, tf_data)
    rows = step_rows(steps, multi)
    pytorch = ({} if analysis.pytorch is None
               else overview_keys(analysis.pytorch, steps.duration_ps, rows))
    return document(
        NAME, VERSION, request.run, request.host, diagnostics,
        steps=rows,
        step_time_ms=Stats.of(steps.duration_ps / 1e9).to_json(),
        categories={
            name: {"label": CATEGORY_LABELS[name], **stats[name].to_json(),
                   "percent": shares[name]}
            for name in stats
        },
        input_percent=v.input_percent,
        all_others_percent=v.all_others_percent,
        bottleneck=bottleneck_json(v),
        **_verdict_basis(v, len(steps), analysis.has_tf_data, tf_data,
                         analysis.pytorch is not None),
        device_compute_precision={
            "percent_16bit": 100.0 * analysis.ops.compute_16bit_ps / precision_total
            if precision_total else 0.0,
            "percent_32bit": 100.0 * analysis.ops.compute_32bit_ps / precision_total
            if precision_total else 0.0,
        },
        top_device_ops=top_ops(analysis.ops.device_tf_ops,
                               facts=analysis.ops.device_op_facts),
        top_host_ops=top_ops(analysis.ops.host) if not analysis.has_device else [],
        run_environment={
            "host_count": len(request.profiles), "hostnames": env.hostnames,
            "device_type": env.device_type, "device_core_count": env.device_core_count,
            "framework": analysis.framework.value,
            "framework_evidence": analysis.framework_evidence,
        },
        step_rule=analysis.root_rule,
        step_module=analysis.step_module,
        jitted_functions=jitted_rows(analysis.jitted),
        tf_functions=tf_function_rows(analysis.tf_functions),
        has_device=analysis.has_device,
        recommendations=advice.texts(),
        **advice.document_keys(),
        **multi_host_keys(multi),
        **pytorch,
    )


def _tf_data_verdict(request: ViewRequest, has_tf_data: bool) -> TfDataVerdict | None:
    """The tf.data view's verdict, for one host only (ALL_HOSTS would decode every host
    here)."""
    if has_tf_data and len(request.profiles) == 1:
        return tf_data_verdict(*next(iter(request.profiles.items())))
    return None


def _verdict_basis(v: Verdict, num_steps: int, has_tf_data: bool,
                   tf_data: TfDataVerdict | None, pytorch: bool) -> dict[str, Any]:
    """`verdict_basis` and `verdict_other_view` (analysis/advice/verdict_basis.py)."""
    basis, other = overview_basis(v, num_steps, has_tf_data, tf_data, pytorch)
    return {"verdict_basis": basis, "verdict_other_view": other}


def steps_table(doc: dict[str, Any]) -> Table:
    names = list(CATEGORY_LABELS)
    header = ["step_num", "step_time_ms", *[f"{n}_ms" for n in names]]
    rows = [[s["step_num"], s["step_time_ms"], *[s["breakdown_ms"][n] for n in names]]
            for s in doc["steps"]]
    return header, rows


JITTED_COLUMNS = ("module", "calls", "devices", "executions", "mean_ms", "min_ms", "max_ms",
                  "device_time_ms", "device_fraction", "dispatches", "dispatch_mean_ms")


def jitted_table(doc: dict[str, Any]) -> Table:
    rows = [[row[k] for k in JITTED_COLUMNS] for row in doc["jitted_functions"]]
    return list(JITTED_COLUMNS), rows


TF_FUNCTION_COLUMNS = ("function", "calls", "concrete", "mean_ms", "min_ms", "max_ms",
                       "total_ms", "fraction")


def tf_functions_table(doc: dict[str, Any]) -> Table:
    rows = [[row[k] for k in TF_FUNCTION_COLUMNS] for row in doc["tf_functions"]]
    return list(TF_FUNCTION_COLUMNS), rows


VIEW = View(NAME, VERSION, build, has_host_events, combines_hosts=True,
            tables={"steps": steps_table, "jitted_functions": jitted_table,
            "tf_functions": tf_functions_table})
