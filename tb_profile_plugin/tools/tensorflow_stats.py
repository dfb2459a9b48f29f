"""tensorflow_stats view: every op on the device and on the host, with its time and share.

One row per op: device rows (kernels summed per TensorFlow op) first, then host rows, each
side sorted by self time (ties by name) and ranked from 1. Shares are of the side's total self
time; with `include_idle=true` (the default) each side's IDLE row is a row like the others and
counts in the shares, with `include_idle=false` it is left out of both. Nothing is cut: the
document says how many rows there are and the page pages through them. On GPU profiles each
device row has `gpu_tensor_core_utilization`: the share of the op's kernel time spent in
Tensor Core kernels. Device rows of XLA programs also carry their `hlo_op` and `module`, and
where the profile counts FLOPs and bytes (TPU), `flop_rate_gflops_per_s` and
`memory_bandwidth_gb_per_s` over the op's device time. For ALL_HOSTS the rows of every host
are summed per op. PyTorch profiles add `pytorch_ops` (per operator: calls, host self and
total time, device time of the kernels it launched) and `ops_by_input_shape`
(tools/pytorch_keys.py).
"""

from __future__ import annotations

from typing import Any

from tb_profile_plugin.analysis.hosts.multi_host import merge_op_facts, merge_op_tables
from tb_profile_plugin.analysis.ops.kernel_stats import KernelStats
from tb_profile_plugin.analysis.ops.op_metrics import OpFacts, OpTable
from tb_profile_plugin.analysis.pytorch.op_shapes import host_op_table
from tb_profile_plugin.errors import BadRequest
from tb_profile_plugin.tools.analysis_views import (
    fact_keys,
    has_host_events,
    op_analyses,
    profile_messages,
)
from tb_profile_plugin.tools.document import Diagnostics, document
from tb_profile_plugin.tools.pytorch_keys import operator_keys, pytorch_ops, pytorch_shapes
from tb_profile_plugin.tools.view import Table, View, ViewRequest

NAME = "tensorflow_stats"
VERSION = 1
_PS_PER_US = 1e6


def _include_idle(params: dict[str, str] | Any) -> bool:
    value = str(params.get("include_idle", "true")).lower()
    if value not in ("true", "false", "1", "0"):
        raise BadRequest(f"include_idle must be true or false, not {value!r}")
    return value in ("true", "1")


def side_rows(
    table: OpTable, side: str, include_idle: bool, tensor_core: dict[str, float] | None = None,
    facts: dict[str, OpFacts] | None = None,
) -> list[dict[str, Any]]:
    ops = table if include_idle else table.without_idle()
    total = float(sum(int(x) for x in ops.self_ps))
    order = sorted(range(len(ops)), key=lambda i: (-int(ops.self_ps[i]), ops.name[i]))
    rows, cumulative = [], 0.0
    for rank, i in enumerate(order, start=1):
        occurrences = int(ops.occurrences[i])
        share = float(ops.self_ps[i]) / total if total else 0.0
        cumulative += share
        row = {
            "rank": rank,
            "host_or_device": side,
            "op_type": ops.type[i],
            "op_name": ops.name[i],
            "occurrences": occurrences,
            "total_time_us": float(ops.total_ps[i]) / _PS_PER_US,
            "avg_time_us": float(ops.total_ps[i]) / _PS_PER_US / occurrences
            if occurrences
            else 0.0,
            "total_self_time_us": float(ops.self_ps[i]) / _PS_PER_US,
            "avg_self_time_us": float(ops.self_ps[i]) / _PS_PER_US / occurrences
            if occurrences
            else 0.0,
            "self_time_fraction": share,
            "cumulative_self_time_fraction": cumulative,
            "eager_fraction": float(ops.eager_self_ps[i]) / float(ops.self_ps[i])
            if int(ops.self_ps[i])
            else 0.0,
        }
        if tensor_core is not None:
            row["gpu_tensor_core_utilization"] = tensor_core.get(ops.name[i], 0.0)
        if facts:
            row.update(fact_keys(facts, ops.name[i], float(ops.total_ps[i]), occurrences))
        rows.append(row)
    return rows


def tensor_core_share(stats: list[KernelStats]) -> dict[str, float]:
    """Per TensorFlow op name: the fraction of its kernel time in Tensor Core kernels."""
    used: dict[str, int] = {}
    total: dict[str, int] = {}
    for s in stats:
        for r in s.rows:
            name = r.op_name.partition(":")[0]
            total[name] = total.get(name, 0) + r.total_ps
            if r.uses_tensor_core:
                used[name] = used.get(name, 0) + r.total_ps
    return {n: used.get(n, 0) / t for n, t in total.items() if t}


def build(request: ViewRequest) -> dict[str, Any]:
    diagnostics = Diagnostics()
    include_idle = _include_idle(request.params)
    profile_messages(request, diagnostics)
    analyses = op_analyses(request)  # op tables only: no steps are needed here
    has_device = any(a.has_device for a in analyses)
    device: list[dict[str, Any]] = []
    if has_device:
        kernels = [a.kernels for a in analyses]
        device = side_rows(
            merge_op_tables([a.ops.device_tf_ops_with_idle for a in analyses if a.has_device]),
            "Device",
            include_idle,
            tensor_core_share(kernels),
            merge_op_facts([a.ops.device_op_facts for a in analyses if a.has_device]),
        )
    ops = pytorch_ops(request, analyses)  # PyTorch: host and device time per operator
    host_rows = side_rows(
        merge_op_tables([a.ops.host for a in analyses]) if ops is None else host_op_table(ops),
        "Host", include_idle)
    if not has_device:
        diagnostics.info.append("no device planes: only host ops are listed (CPU-only profile)")
    if len(request.profiles) > 1:
        diagnostics.info.append(f"rows are summed over {len(request.profiles)} hosts")
    pytorch = {} if ops is None else operator_keys(ops, pytorch_shapes(request))
    return document(
        NAME,
        VERSION,
        request.run,
        request.host,
        diagnostics,
        include_idle=include_idle,
        host_count=len(request.profiles),
        # Lets the page tell "no event at all" from "events, none of them an op".
        num_events=sum(f.num_events for f in request.host_facts().values()),
        num_rows=len(device) + len(host_rows),
        num_device_rows=len(device),
        num_host_rows=len(host_rows),
        rows=device + host_rows,
        **pytorch,
    )


def rows_table(doc: dict[str, Any]) -> Table:
    header = ["rank", "host_or_device", "op_type", "op_name", "occurrences", "total_time_us",
              "avg_time_us", "total_self_time_us", "avg_self_time_us", "self_time_fraction",
              "cumulative_self_time_fraction", "eager_fraction"]
    for optional in ("gpu_tensor_core_utilization", "hlo_op", "module", "flop_rate_gflops_per_s",
                     "memory_bandwidth_gb_per_s"):
        if any(optional in row for row in doc["rows"]):
            header.append(optional)
    return header, [[row.get(k, "") for k in header] for row in doc["rows"]]


def pytorch_ops_table(doc: dict[str, Any]) -> Table:
    """PyTorch runs: `pytorch_ops` (a header only elsewhere)."""
    header = ["op_name", "calls", "host_self_time_us", "host_total_time_us",
              "host_self_time_fraction", "device_self_time_us", "device_self_time_fraction"]
    return header, [[row[k] for k in header] for row in doc.get("pytorch_ops", [])]


def ops_by_input_shape_table(doc: dict[str, Any]) -> Table:
    """PyTorch runs: `ops_by_input_shape` (a header only elsewhere)."""
    header = ["op_name", "input_dims", "calls", "total_time_us", "self_time_us"]
    return header, [[row[k] for k in header] for row in doc.get("ops_by_input_shape", [])]


VIEW = View(NAME, VERSION, build, has_host_events, combines_hosts=True,
            tables={"rows": rows_table, "pytorch_ops": pytorch_ops_table,
                    "ops_by_input_shape": ops_by_input_shape_table})
