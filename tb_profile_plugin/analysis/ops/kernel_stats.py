"""GPU kernel statistics: per unique kernel launched by one op, its launch shape and timing.

Input (xprof_reference.md §3.5 "Kernel stats"; producers.md): events on GPU planes
(`producers.PlaneKind.GPU`) with a duration and a `kernel_details` stat. Its tokens, in the
forms the producers write (missing dimensions are 1, missing numbers 0):

| producer         | form                                                                   |
|------------------|------------------------------------------------------------------------|
| CUPTI (TF, JAX)  | `regs:38 static_shared:0 dynamic_shared:0 grid:… block:… occ_pct:50.0` |
| CUPTI, TF <= 2.4 | `regs:38 shm:0 grid:X,Y,Z block:X,Y,Z`                                 |
| ROCm tracer      | ` grid:X,Y,Z block:X,Y,Z private_mem:N group_mem:N occ_pct:N`          |

Shared memory per block is `static_shared + dynamic_shared` where the producer splits it; the
older `shm:` and ROCm's `group_mem:` (the LDS, AMD's shared memory) give one total that is not
split (`KernelDetails.unsplit_shared_bytes`), counted whole in `shared_memory_bytes`.

A figure the producer did not write is unknown (None; "—" on the page), never 0: registers
on ROCm (no `regs:`), the static/dynamic split where shared memory is one total, occupancy
on TF <= 2.4 (no `occ_pct:`) and on ROCm, whose tracer writes `occ_pct:0` on every kernel (a
kernel that ran had at least one wave resident: an occupancy of 0 is one never computed).

Rows group events by kernel name, details, launching op and HLO op, sorted by total time. The
launching op comes from the canonical columns (xspace/producers/): the TF op name or the JAX
op path (`jit(matmul)/dot_general`), never the raw `tf_op` stat, which JAX fills with the
constant `XlaModule:`. A TF op is shown `name:Type` (the producer wrote the type); other ops
by name alone (`CanonicalColumns.op_label`).

Matrix units (NVIDIA Tensor Cores, AMD Matrix Cores): a kernel uses them when its name contains
one of `TENSOR_CORE_PATTERNS` (NVIDIA's list, which predates Hopper) or matches one of
`MATRIX_CORE_PATTERNS`: the Hopper libraries' names (cuBLAS `nvjet_*`, `xmma` kernels on tensor
types, `wgmma`/`gmma`, CUTLASS `tensorop`; the reference misses these), an AMD
MFMA instruction tile `_MI<m>x<n>x<k>` (Tensile `Cijk_…_MI16x16x16…`), a composable-kernel
flash-attention GEMM kernel (`ck_tile::FmhaFwdKernel`, `ck_tile::FmhaBwdDQDKDVKernel`; not
its `FmhaBwdOGradDotO` reduction or `FmhaBwdConvertQGrad` conversion), or XLA's GEMM fusion
(`gemm_fusion_dot…`, which the reference flags too). An op is eligible when one of its kernels
uses them, or:
- TF: its type is a convolution / matmul kind (`ELIGIBLE_SUFFIXES`, `ELIGIBLE_PARTS`);
- JAX: its op path ends with `dot_general` or `conv_general_dilated` (wrappers such as
  `transpose(jvp(dot_general))` included);
- PyTorch: an aten GEMM, convolution or attention op (`aten::mm`, `aten::addmm`,
  `aten::cudnn_convolution`, ...: xspace/producers/pytorch_roles.py `is_matrix_op`);
- XLA: its HLO op's kind has a word from `ELIGIBLE_HLO_WORDS` (`dot.3`, `convolution.1`,
  `gemm_fusion_dot.1`, `cublas-gemm.2`, `cudnn-conv.4`: dots, convolutions and custom calls to
  GEMM libraries; a bare `custom-call.7` names no target and is not eligible).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.xspace.producers import (
    KERNEL_DETAILS_STAT,
    PlaneKind,
    hlo_kind,
    plane_kind,
)
from tb_profile_plugin.xspace.producers.pytorch_roles import is_matrix_op
from tb_profile_plugin.xspace.unique_rows import int64_rows, unique_rows

TENSOR_CORE_PATTERNS = (
    "16816", "c1688", "conv1x1", "conv2d_c1_k1", "dgrad_1x1_stride_2x2", "direct_group",
    "first_layer_wgrad_kernel", "h1688", "h884", "hmma", "i16832", "i8816", "s884", "s1688",
    "xmma_gemm", "xmma_implicit_gemm", "xmma_sparse_conv", "xmma_sparse_gemm",
    "xmma_warp_specialized_implicit_gemm",
)
MATRIX_CORE_PATTERNS = (
    # Hopper and later NVIDIA libraries: cuBLAS's `nvjet_*` GEMMs, `*_xmma_*` kernels on
    # tensor types (tf32, f16, bf16, int8, fp8: `sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32…`),
    # warp-group MMA (`wgmma`, `gmma`) and CUTLASS `tensorop` kernels.
    re.compile(r"^nvjet_"),
    re.compile(r"xmma.*(?:tf32|bf16|f16|fp16|i8|s8|e4m3|e5m2)", re.IGNORECASE),
    re.compile(r"gmma|tensorop", re.IGNORECASE),
    re.compile(r"_MI\d+x\d+x\d+"),  # AMD MFMA instruction tile (Tensile, hipBLASLt)
    # Composable-kernel attention: the kernels that run the attention's GEMMs (forward,
    # split-KV, paged-KV, batch prefill; backward dQ/dK/dV), never its helpers, which run no
    # matrix instruction (`FmhaBwdOGradDotOKernel`: a row reduction of dO*O;
    # `FmhaBwdConvertQGradKernel`: a type conversion; `FmhaFwdSplitKVCombineKernel`: a
    # reduction; `FmhaFwdAppendKVKernel`: a copy into the cache).
    re.compile(r"\bck(?:_tile)?::(?:FmhaFwd(?:SplitKV|PagedKV)?Kernel|FmhaBwdDQDKDVKernel"
               r"|FmhaBatchPrefill\w*Kernel)\b"),
    re.compile(r"^gemm_fusion_dot"),  # XLA's GEMM fusion (Triton): matrix units
)
ELIGIBLE_SUFFIXES = (
    "Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "Conv3D",
    "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropFilter",
    "DepthwiseConv2dNativeBackpropInput", "/MatMul", "FusedMatMul", "/CudnnRNN", "XlaDot",
    "XlaDotV2",
)
ELIGIBLE_PARTS = ("BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop")
ELIGIBLE_HLO_WORDS = frozenset(
    {"dot", "convolution", "conv", "gemm", "matmul", "cublas", "cublaslt", "hipblaslt"})
_JAX_ELIGIBLE = re.compile(r"(?:^|[/(])(?:dot_general|conv_general_dilated)\)*$")
_WORD = re.compile(r"[^a-z0-9]+")
_TOKEN = re.compile(r"(\w+):([\d.,]+)")


@dataclass(frozen=True)
class KernelDetails:
    """A kernel's launch facts; None where the producer did not write the figure."""

    registers_per_thread: int | None = None
    static_shared_bytes: int | None = None
    dynamic_shared_bytes: int | None = None
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    occupancy_percent: float | None = None
    #: Shared memory given as one total (TF <= 2.4 `shm:`, ROCm `group_mem:`), not split.
    unsplit_shared_bytes: int | None = None

    @property
    def shared_memory_bytes(self) -> int | None:
        """Shared memory per block (LDS on AMD), in bytes, whichever form gave it; None when
        no form did."""
        parts = [b for b in (self.static_shared_bytes, self.dynamic_shared_bytes,
                             self.unsplit_shared_bytes) if b is not None]
        return sum(parts) if parts else None


def parse_kernel_details(text: str) -> KernelDetails:
    """One `kernel_details` text (any form of the module's table) as its launch facts."""
    values = dict(_TOKEN.findall(text))

    def dims(key: str) -> tuple[int, int, int]:
        parts = [int(p) for p in values.get(key, "").split(",") if p.isdigit()]
        parts += [1] * (3 - len(parts))
        return parts[0], parts[1], parts[2]

    def number(key: str) -> float | None:
        try:
            return float(values[key])
        except (KeyError, ValueError):
            return None

    def integer(*keys: str) -> int | None:
        found = [v for v in (number(k) for k in keys) if v is not None]
        return int(sum(found)) if found else None

    occupancy = number("occ_pct")
    return KernelDetails(
        registers_per_thread=integer("regs"), static_shared_bytes=integer("static_shared"),
        dynamic_shared_bytes=integer("dynamic_shared"), grid=dims("grid"), block=dims("block"),
        occupancy_percent=occupancy if occupancy is not None and occupancy > 0 else None,
        unsplit_shared_bytes=integer("shm", "group_mem"),
    )


def uses_tensor_core(kernel_name: str) -> bool:
    """Whether the kernel runs on matrix units (NVIDIA Tensor Cores, AMD Matrix Cores)."""
    return (any(p in kernel_name for p in TENSOR_CORE_PATTERNS)
            or any(p.search(kernel_name) for p in MATRIX_CORE_PATTERNS))


def op_tensor_core_eligible(op: str, hlo_op: str = "") -> bool:
    """Whether an op could use matrix units: `op` is `name:Type` (TF) or a JAX op path."""
    name, _, op_type = op.partition(":")
    full = f"{name}/{op_type}" if op_type else name
    if (full.endswith(ELIGIBLE_SUFFIXES) or op_type.endswith(ELIGIBLE_SUFFIXES)
            or any(p in op for p in ELIGIBLE_PARTS) or _JAX_ELIGIBLE.search(op)
            or is_matrix_op(op)):
        return True
    words = _WORD.split(hlo_kind(hlo_op).lower()) if hlo_op else []
    return any(w in ELIGIBLE_HLO_WORDS for w in words)


@dataclass(frozen=True)
class KernelRow:
    kernel_name: str
    details: KernelDetails
    op_name: str  # the launching op: TF `name:Type` or the JAX op path; "" if unknown
    hlo_op: str  # the HLO op the kernel ran (`gemm_fusion_dot.1`); "" if none
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
    """Rows per (kernel, details, op, HLO op) over the kernels of every GPU plane.

    The kernels are keyed and summed `column_sizes.CHUNK_EVENTS` events at a time, and the
    parts' rows merged (`_merged_parts`): a key table of every kernel (5 int64 per kernel,
    312 MB at 7.8M kernels) and its unique's temporaries were the 10M-event overview's peak."""
    gpu_plane = np.array(
        [plane_kind(p.name) == PlaneKind.GPU for p in table.profile.planes] + [False])
    details_code, details_text = table.str_stat_codes(KERNEL_DETAILS_STAT)
    num_planes = int(np.count_nonzero(gpu_plane[:-1]))
    num_gpu_events = 0
    parts: list[_KernelPart] = []
    chunk = column_sizes.CHUNK_EVENTS
    for lo in range(0, len(table), chunk):
        hi = min(lo + chunk, len(table))
        on_gpu = gpu_plane[table.plane_index[lo:hi]]
        num_gpu_events += int(np.count_nonzero(on_gpu))
        on_gpu &= details_code[lo:hi] >= 0
        on_gpu &= table.end_ps[lo:hi] > table.start_ps[lo:hi]
        kernels = np.flatnonzero(on_gpu)
        if len(kernels):
            kernels += lo
            parts.append(_kernel_part(table, details_code, kernels))
    if not parts:
        return KernelStats([], num_planes, num_gpu_events)
    canon = table.canonical
    unique, counts, total, smallest, largest = _merged_parts(parts)
    parsed = {i: parse_kernel_details(t) for i, t in enumerate(details_text)}
    rows = []
    for j, (name_id, d_code, o_code, t_code, h_code) in enumerate(unique.tolist()):
        name = table.names[name_id]  # one iteration per unique kernel row
        hlo_op = canon.text(h_code)
        op = canon.op_label(o_code, t_code)
        tc = uses_tensor_core(name)
        rows.append(KernelRow(
            name, parsed[d_code], op, hlo_op, tc, tc or op_tensor_core_eligible(op, hlo_op),
            int(counts[j]), int(total[j]), int(smallest[j]), int(largest[j])))
    rows.sort(key=lambda r: (-r.total_ps, r.kernel_name, r.op_name, r.hlo_op))
    return KernelStats(rows, num_planes, num_gpu_events)


#: One part's kernel rows: (distinct key rows, and per row its count, total, min and max ps).
_KernelPart = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _kernel_part(table: EventTable, details_code: np.ndarray,
                 kernels: np.ndarray) -> _KernelPart:
    """The distinct (kernel, details, op, op type, HLO op) rows of `kernels` (event indices)
    and their count, total, shortest and longest duration."""
    canon = table.canonical
    keys = int64_rows(table.name_id[kernels], details_code[kernels], canon.op_name[kernels],
                      np.where(canon.framework_typed[kernels], canon.op_type[kernels], -1),
                      canon.hlo_op[kernels])
    unique, inverse = unique_rows(keys)
    del keys
    duration = table.durations_of(kernels)
    k = len(unique)
    counts = np.bincount(inverse, minlength=k).astype(np.int64, copy=False)
    total = np.zeros(k, np.int64)
    smallest = np.full(k, np.iinfo(np.int64).max, np.int64)
    largest = np.zeros(k, np.int64)
    np.add.at(total, inverse, duration)
    np.minimum.at(smallest, inverse, duration)
    np.maximum.at(largest, inverse, duration)
    return unique, counts, total, smallest, largest


def _merged_parts(parts: list[_KernelPart]) -> _KernelPart:
    """The parts' rows as one part: rows found in several parts once, in `unique_rows`'
    order, their integer counts and times summed, minimised, maximised (exact in any
    order: the rows and figures one pass over every kernel gives)."""
    if len(parts) == 1:
        return parts[0]
    unique, inverse = unique_rows(np.concatenate([part[0] for part in parts]))
    k = len(unique)
    counts = np.zeros(k, np.int64)
    total = np.zeros(k, np.int64)
    smallest = np.full(k, np.iinfo(np.int64).max, np.int64)
    largest = np.zeros(k, np.int64)
    np.add.at(counts, inverse, np.concatenate([part[1] for part in parts]))
    np.add.at(total, inverse, np.concatenate([part[2] for part in parts]))
    np.minimum.at(smallest, inverse, np.concatenate([part[3] for part in parts]))
    np.maximum.at(largest, inverse, np.concatenate([part[4] for part in parts]))
    return unique, counts, total, smallest, largest
