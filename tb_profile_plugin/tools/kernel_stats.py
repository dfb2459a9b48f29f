"""kernel_stats view: GPU kernels per launching op, with launch shape, Tensor Core use and time.

Each row: the kernel, its launch shape, shared memory per block (LDS on AMD), whether it uses
matrix units (Tensor Cores, AMD Matrix Cores) and whether its op could, the launching op
(`op_name`: TF `name:Type` or the JAX op path), the HLO op it ran (`hlo_op`, "" outside XLA)
and its times (analysis/ops/kernel_stats.py has the rules).

Offered only for profiles with GPU planes. A GPU profile whose device planes hold no kernel
with `kernel_details` says why in its diagnostics (the GPU tracer did not record kernels).
"""

from __future__ import annotations

from typing import Any

from tb_profile_plugin.analysis.hosts.multi_host import merge_kernel_stats
from tb_profile_plugin.tools.analysis_views import kernel_analyses
from tb_profile_plugin.tools.document import Diagnostics, document
from tb_profile_plugin.tools.view import RunFacts, Table, View, ViewRequest

NAME = "kernel_stats"
VERSION = 1
_PS_PER_US = 1e6


def build(request: ViewRequest) -> dict[str, Any]:
    diagnostics = Diagnostics()
    stats = merge_kernel_stats(kernel_analyses(request))
    if len(request.profiles) > 1:
        diagnostics.info.append(f"rows are summed over {len(request.profiles)} hosts")
    if not stats.rows:
        diagnostics.warnings.append(
            f"the profile has {stats.num_gpu_planes} GPU plane(s) but no kernel with launch "
            "details: the GPU tracer (CUPTI on NVIDIA, the ROCm tracer on AMD) did not record "
            "kernels (device_tracer_level was 0, the tracer was unavailable or lacked "
            "permission, or nothing ran on the GPU while capturing)"
        )
    rows = []
    for rank, r in enumerate(stats.rows, start=1):
        d = r.details
        rows.append(
            {
                "rank": rank,
                "kernel_name": r.kernel_name,
                "registers_per_thread": d.registers_per_thread,
                "shared_memory_bytes": d.shared_memory_bytes,
                "static_shared_memory_bytes": d.static_shared_bytes,
                "dynamic_shared_memory_bytes": d.dynamic_shared_bytes,
                "block_dim": list(d.block),
                "grid_dim": list(d.grid),
                "occupancy_percent": d.occupancy_percent,
                "op_tensor_core_eligible": r.op_tensor_core_eligible,
                "uses_tensor_core": r.uses_tensor_core,
                "op_name": r.op_name,
                "hlo_op": r.hlo_op,
                "occurrences": r.occurrences,
                "total_duration_us": r.total_ps / _PS_PER_US,
                "avg_duration_us": r.total_ps / _PS_PER_US / r.occurrences,
                "min_duration_us": r.min_ps / _PS_PER_US,
                "max_duration_us": r.max_ps / _PS_PER_US,
            }
        )
    return document(
        NAME,
        VERSION,
        request.run,
        request.host,
        diagnostics,
        host_count=len(request.profiles),
        num_rows=len(rows),
        rows=rows,
    )


def rows_table(doc: dict[str, Any]) -> Table:
    header = [
        "rank",
        "kernel_name",
        "registers_per_thread",
        "shared_memory_bytes",
        "block_dim",
        "grid_dim",
        "occupancy_percent",
        "op_tensor_core_eligible",
        "uses_tensor_core",
        "op_name",
        "hlo_op",
        "occurrences",
        "total_duration_us",
        "avg_duration_us",
        "min_duration_us",
        "max_duration_us",
    ]
    out = []
    for row in doc["rows"]:
        out.append([",".join(map(str, row[k])) if k.endswith("_dim") else row[k] for k in header])
    return header, out


def _has_gpu(facts: RunFacts) -> bool:
    return facts.has_gpu_planes


VIEW = View(NAME, VERSION, build, _has_gpu, combines_hosts=True, tables={"rows": rows_table})
