"""GPU kernel statistics: per unique kernel launched by one op, its launch shape and timing.

Input (xprof_reference.md §3.5 "Kernel stats"): events on GPU planes with a duration and a
`kernel_details` stat (`regs:`, `static_shared:`, `dynamic_shared:`, `grid:x,y,z`,
`block:x,y,z`, `occ_pct:`; missing dimensions are 1). Rows group events by kernel name,
details and launching op (`tf_op`) and are sorted by total time.

Tensor Cores: a kernel uses them when its name contains one of `TENSOR_CORE_PATTERNS`; an op
is eligible when its type is a convolution / matmul kind (`ELIGIBLE_SUFFIXES`,
`ELIGIBLE_PARTS`) or one of its kernels uses Tensor Cores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events import EventTable
from tb_profile_plugin.xspace.schema import is_gpu_plane

TENSOR_CORE_PATTERNS = (
    "16816", "c1688", "conv1x1", "conv2d_c1_k1", "dgrad_1x1_stride_2x2", "direct_group",
    "first_layer_wgrad_kernel", "h1688", "h884", "hmma", "i16832", "i8816", "s884", "s1688",
    "xmma_gemm", "xmma_implicit_gemm", "xmma_sparse_conv", "xmma_sparse_gemm",
    "xmma_warp_specialized_implicit_gemm",
)
ELIGIBLE_SUFFIXES = (
    "Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "Conv3D",
    "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropFilter",
    "DepthwiseConv2dNativeBackpropInput", "/MatMul", "FusedMatMul", "/CudnnRNN", "XlaDot",
    "XlaDotV2",
)
ELIGIBLE_PARTS = ("BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop")
_TOKEN = re.compile(r"(\w+):([\d.,]+)")


@dataclass(frozen=True)
class KernelDetails:
    registers_per_thread: int = 0
    static_shared_bytes: int = 0
    dynamic_shared_bytes: int = 0
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    occupancy_percent: float = 0.0


def parse_kernel_details(text: str) -> KernelDetails:
    values = dict(_TOKEN.findall(text))

    def dims(key: str) -> tuple[int, int, int]:
        parts = [int(p) for p in values.get(key, "").split(",") if p.isdigit()]
        parts += [1] * (3 - len(parts))
        return parts[0], parts[1], parts[2]

    def integer(key: str) -> int:
        try:
            return int(float(values.get(key, "0")))
        except ValueError:
            return 0

    return KernelDetails(
        registers_per_thread=integer("regs"), static_shared_bytes=integer("static_shared"),
        dynamic_shared_bytes=integer("dynamic_shared"), grid=dims("grid"), block=dims("block"),
        occupancy_percent=float(values.get("occ_pct", "0") or 0),
    )


def uses_tensor_core(kernel_name: str) -> bool:
    return any(p in kernel_name for p in TENSOR_CORE_PATTERNS)


def op_tensor_core_eligible(tf_op: str) -> bool:
    name, _, op_type = tf_op.partition(":")
    full = f"{name}/{op_type}" if op_type else name
    return (full.endswith(ELIGIBLE_SUFFIXES) or op_type.endswith(ELIGIBLE_SUFFIXES)
            or any(p in tf_op for p in ELIGIBLE_PARTS))


@dataclass(frozen=True)
class KernelRow:
    kernel_name: str
    details: KernelDetails
    op_name: str  # the launching TensorFlow op (`name:Type`), "" if unknown
    uses_tensor_core: bool
    op_tensor_core_eligible: bool
    occurrences: int
    total_ps: int
    min_ps: int
    max_ps: int


@dataclass(frozen=True)
class KernelStats:
    rows: list[KernelRow]  # by total time, descending
    num_gpu_planes: int
    num_gpu_events: int  # events on GPU planes (kernels, memcpys, ...)


def build_kernel_stats(table: EventTable) -> KernelStats:
    gpu_plane = np.array([is_gpu_plane(p.name) for p in table.profile.planes] + [False])
    on_gpu = gpu_plane[table.plane_index]
    details_code, details_text = table.str_stat_codes("kernel_details")
    op_code, op_text = table.str_stat_codes("tf_op")
    kernels = np.flatnonzero(on_gpu & (details_code >= 0) & (table.duration_ps > 0))
    num_planes = int(np.count_nonzero(gpu_plane[:-1]))
    if len(kernels) == 0:
        return KernelStats([], num_planes, int(on_gpu.sum()))
    keys = np.stack([table.name_id[kernels], details_code[kernels], op_code[kernels]], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    duration = table.duration_ps[kernels]
    k = len(unique)
    counts = np.bincount(inverse, minlength=k)
    total = np.zeros(k, np.int64)
    smallest = np.full(k, np.iinfo(np.int64).max, np.int64)
    largest = np.zeros(k, np.int64)
    np.add.at(total, inverse, duration)
    np.minimum.at(smallest, inverse, duration)
    np.maximum.at(largest, inverse, duration)
    parsed = {i: parse_kernel_details(t) for i, t in enumerate(details_text)}
    rows = []
    for j, (name_id, d_code, o_code) in enumerate(unique.tolist()):  # one per unique kernel
        name = table.names[name_id]
        op = op_text[o_code] if o_code >= 0 else ""
        tc = uses_tensor_core(name)
        rows.append(KernelRow(name, parsed[d_code], op, tc, tc or op_tensor_core_eligible(op),
                              int(counts[j]), int(total[j]), int(smallest[j]), int(largest[j])))
    rows.sort(key=lambda r: (-r.total_ps, r.kernel_name, r.op_name))
    return KernelStats(rows, num_planes, int(on_gpu.sum()))
