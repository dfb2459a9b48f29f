"""Kernel stats across producers: ROCm launch details, AMD matrix cores, JAX ops, old TF forms."""

from __future__ import annotations

import pytest

from tb_profile_plugin.analysis.ops.kernel_stats import (
    op_tensor_core_eligible,
    parse_kernel_details,
    uses_tensor_core,
)
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import (
    PlaneBuilder,
    Ref,
    XSpaceBuilder,
    kernel_details,
    rocm_kernel_details,
    stats_plane,
)

US = 1_000_000  # ps
MFMA = "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x16x1_SN_1LDSB1_AFC1_GRVW8"
FMHA = "ck_tile::kentry<256, 1, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync>>"


def _doc(builder: XSpaceBuilder) -> dict:
    profile = decode_xspace(builder.serialize())
    return registry.VIEWS["kernel_stats"].build(registry.ViewRequest("r", "h", {"h": profile}, {}))


def _amd_gpu(b: XSpaceBuilder, ordinal: int = 0) -> PlaneBuilder:
    return stats_plane(b, f"/device:GPU:{ordinal}", ordinal + 1, device_vendor="AMD",
                       compute_cap_major=9, compute_cap_minor=4)


def test_rocm_group_mem_is_the_shared_memory() -> None:
    d = parse_kernel_details(rocm_kernel_details(
        grid=(304, 2, 1), block=(256, 1, 1), private_bytes=16, group_bytes=65536,
        occupancy_percent=25))
    assert (d.grid, d.block, d.occupancy_percent) == ((304, 2, 1), (256, 1, 1), 25.0)
    assert (d.shared_memory_bytes, d.static_shared_bytes, d.dynamic_shared_bytes,
            d.registers_per_thread) == (65536, None, None, None)  # unknown, never 0


def test_nvidia_forms_keep_their_shared_memory() -> None:
    split = parse_kernel_details(kernel_details(
        registers_per_thread=38, static_shared_bytes=1024, dynamic_shared_bytes=512))
    assert (split.registers_per_thread, split.static_shared_bytes, split.dynamic_shared_bytes,
            split.shared_memory_bytes) == (38, 1024, 512, 1536)
    older = parse_kernel_details("regs:38 shm:2048 grid:160,1,1 block:1024,1,1")
    assert (older.registers_per_thread, older.shared_memory_bytes, older.grid, older.block,
            older.occupancy_percent) == (38, 2048, (160, 1, 1), (1024, 1, 1), None)
    assert (older.static_shared_bytes, older.dynamic_shared_bytes) == (None, None)


@pytest.mark.parametrize(("kernel", "expected"), [
    (MFMA, True),
    ("Cijk_Ailk_Bjlk_HHS_BH_MT128x128x32_MI32x32x8x1_SE_K1", True),
    (FMHA, True),
    ("gemm_fusion_dot_1", True),
    ("gemm_fusion_dot.3", True),
    ("volta_h884gemm_64x64_ldg8_nn", True),  # NVIDIA patterns unchanged
    ("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n", True),
    ("Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0", False),  # Tensile VALU kernel: no MFMA tile
    ("ck_tile::kentry<64, 1, ck_tile::Layernorm2dFwd<float>>", False),
    ("loop_convert_fusion", False),
    ("input_gemm_fusion_dot_helper", False),  # the fusion prefix only at the start
    ("volta_sgemm_128x64_nn", False),
])
def test_matrix_core_kernels(kernel: str, expected: bool) -> None:
    assert uses_tensor_core(kernel) is expected


@pytest.mark.parametrize(("op", "hlo_op", "expected"), [
    ("dense/MatMul:MatMul", "", True),
    ("conv/Conv2D:Conv2D", "", True),
    ("relu/Relu:Relu", "", False),
    ("jit(matmul)/dot_general", "", True),
    ("jit(train)/transpose(jvp(dot_general))", "", True),
    ("jit(f)/conv_general_dilated", "", True),
    ("jit(f)/add", "", False),
    ("jit(f)/my_dot_general", "", False),
    ("copy.1", "copy.1", False),
    ("", "dot.3", True),
    ("", "convolution.1", True),
    ("", "gemm_fusion_dot.1", True),
    ("", "cublas-gemm.2", True),
    ("", "cudnn-conv.4", True),
    ("", "custom-call.7", False),  # names no target
    ("", "loop_convert_fusion", False),  # "convert" is no convolution
])
def test_op_eligibility_tf_jax_and_hlo(op: str, hlo_op: str, expected: bool) -> None:
    assert op_tensor_core_eligible(op, hlo_op) is expected


def test_jax_kernels_on_amd_take_their_op_from_the_canonical_columns() -> None:
    b = XSpaceBuilder()
    s = _amd_gpu(b).line("Stream #0", line_id=0)
    dot = rocm_kernel_details(grid=(304, 1, 1), block=(256, 1, 1), group_bytes=32768)
    jax = {"tf_op": "XlaModule:", "hlo_module": "jit_matmul"}
    s.kernel("gemm_fusion_dot_1", 0, 7 * US, 11, details=dot, hlo_op="gemm_fusion_dot.1",
             name=Ref("jit(matmul)/dot_general"), **jax)
    s.kernel("gemm_fusion_dot_1", 10 * US, 5 * US, 12, details=dot, hlo_op="gemm_fusion_dot.1",
             name=Ref("jit(matmul)/dot_general"), **jax)
    s.kernel("loop_add_fusion", 20 * US, 3 * US, 13, details=rocm_kernel_details(),
             hlo_op="loop_add_fusion", name="jit(matmul)/add", **jax)
    s.kernel("copy_1", 30 * US, 1 * US, 14, details=rocm_kernel_details(), hlo_op="copy.1",
             **jax)  # no `name`: the op is the module's HLO op
    s.kernel(MFMA, 40 * US, 2 * US, 15, details=rocm_kernel_details(group_bytes=65536),
             hlo_op="custom-call.7", name=Ref("jit(matmul)/bmm"), **jax)
    doc = _doc(b)
    got = [(r["kernel_name"], r["op_name"], r["hlo_op"], r["uses_tensor_core"],
            r["op_tensor_core_eligible"], r["occurrences"], r["total_duration_us"],
            r["shared_memory_bytes"]) for r in doc["rows"]]
    assert got == [
        ("gemm_fusion_dot_1", "jit(matmul)/dot_general", "gemm_fusion_dot.1", True, True, 2,
         12.0, 32768),
        ("loop_add_fusion", "jit(matmul)/add", "loop_add_fusion", False, False, 1, 3.0, 0),
        (MFMA, "jit(matmul)/bmm", "custom-call.7", True, True, 1, 2.0, 65536),
        ("copy_1", "jit_matmul/copy.1", "copy.1", False, False, 1, 1.0, 0),
    ]
    assert doc["rows"][0]["grid_dim"] == [304, 1, 1] and doc["rows"][0]["block_dim"] == [256, 1, 1]
    header, rows = registry.VIEWS["kernel_stats"].tables["rows"](doc)
    assert header.index("hlo_op") == header.index("op_name") + 1
    assert rows[0][header.index("hlo_op")] == "gemm_fusion_dot.1"
    assert rows[0][header.index("shared_memory_bytes")] == 32768


def test_tensorflow_ops_keep_name_and_type() -> None:
    b = XSpaceBuilder()
    s = b.gpu_plane(0).line("Stream #1", line_id=1)
    s.kernel("volta_h884gemm", 0, 4 * US, 1, tf_op="dense/MatMul:MatMul", hlo_op="dot.2")
    s.kernel("implicit_convolve_sgemm", 10 * US, 3 * US, 2,
             details="regs:38 shm:2048 grid:160,1,1 block:1024,1,1",
             **{"level 0": "conv/Conv2D:Conv2D"})  # TF <= 2.4: no tf_op
    rows = _doc(b)["rows"]
    assert [(r["op_name"], r["hlo_op"], r["uses_tensor_core"], r["op_tensor_core_eligible"],
             r["shared_memory_bytes"], r["registers_per_thread"]) for r in rows] == [
        ("dense/MatMul:MatMul", "dot.2", True, True, 0, 32),
        ("conv/Conv2D:Conv2D", "", False, True, 2048, 38),
    ]


def test_kernels_of_every_gpu_plane_and_none_of_a_custom_plane() -> None:
    b = XSpaceBuilder()
    for ordinal in range(2):
        _amd_gpu(b, ordinal).line("Stream #0", line_id=0).kernel(
            "gemm_fusion_dot_1", 0, (ordinal + 1) * US, 1, details=rocm_kernel_details(),
            hlo_op="gemm_fusion_dot.1", name=Ref("jit(f)/dot_general"))
    custom = b.plane("/device:CUSTOM:Megascale Trace", plane_id=100)
    custom.line("Megascale", line_id=0).kernel("gemm_fusion_dot_1", 0, 9 * US, 2,
                                              details=rocm_kernel_details())
    doc = _doc(b)
    assert [(r["occurrences"], r["total_duration_us"]) for r in doc["rows"]] == [(2, 3.0)]
