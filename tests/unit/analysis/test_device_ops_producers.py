"""Device ops on the layouts real producers write (shared/reference/producers.md), exact numbers.

TF <= 2.4 on GPU (sign-extended derived-line ids, `level 0`), JAX on GPU (`tf_op` = "XlaModule:",
the op in `name`), XLA on TPU (op facts in event metadata, `device_duration_ps`), XLA on CPU
(thunks with `hlo_op` on host threads).
"""

from __future__ import annotations

import math

from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.producers import (
    LineKind,
    line_kind,
    normalized_line_id,
    split_framework_op,
)
from tests.xspace_builder import Ref, XSpaceBuilder

TF24_STEPS, TF24_NAME_SCOPE, TF24_TF_OPS = -559038737, -559038735, -559038734


def _rows(table: object) -> dict[str, int]:
    return {name: i for i, name in enumerate(table.name)}  # type: ignore[attr-defined]


def test_line_kinds_of_every_id_form() -> None:
    assert normalized_line_id(TF24_STEPS) == 0xDEADBEEF
    assert line_kind("/device:GPU:0", TF24_STEPS, "Steps") == LineKind.STEPS
    assert line_kind("/device:GPU:0", TF24_TF_OPS, "TensorFlow Ops") == LineKind.DERIVED
    assert line_kind("/device:GPU:0", TF24_NAME_SCOPE, "TensorFlow Name Scope") == \
        LineKind.DERIVED
    assert line_kind("/device:GPU:0", 0xDEADBEEF + 5, "XLA Ops") == LineKind.DERIVED
    assert line_kind("/device:GPU:0", 7, "Stream #7(Kernel)") == LineKind.STREAM
    assert line_kind("/device:TPU:0", 3, "XLA Ops") == LineKind.XLA_OPS
    assert line_kind("/device:TPU:0", 2, "XLA Modules") == LineKind.XLA_MODULES
    assert line_kind("/device:TPU:0", 4, "Async XLA Ops") == LineKind.DERIVED
    assert line_kind("/device:TPU:0", 6, "XLA TraceMe") == LineKind.DERIVED
    assert line_kind("/host:CPU", 123456, "tf_Compute") == LineKind.THREAD
    # A host thread whose id happens to fall in the range is still a thread.
    assert line_kind("/host:CPU", 0xDEADBEEF, "python") == LineKind.THREAD


def test_framework_op_texts() -> None:
    assert split_framework_op("dense/MatMul:MatMul") == ("dense/MatMul", "MatMul")
    assert split_framework_op("XlaModule:") == ("", "")
    assert split_framework_op("jit(f)/dot_general") == ("jit(f)/dot_general", "")
    assert split_framework_op("dense/kernel") == ("dense/kernel", "")


def _tf24_gpu_space() -> bytes:
    """TF 2.4 on one GPU: two streams that never overlap, and the producer's derived lines."""
    b = XSpaceBuilder()
    host = b.plane("/host:CPU").line("tf_Compute", line_id=5)
    host.event("train", 0, 400_000, step_num=1, _r=1, group_id=0)
    gpu = b.gpu_plane(0)
    s1 = gpu.line("Stream #14(Kernel)", line_id=14)
    s1.kernel("volta_sgemm_128x64_nn", 10_000, 100_000, correlation_id=1, group_id=0,
              **{"level 0": "dense/MatMul:MatMul",
                 "annotation": "dense/MatMul:MatMul#shape=(32,64)#"})
    s1.kernel("volta_sgemm_128x64_nn", 200_000, 50_000, correlation_id=2, group_id=0,
              **{"level 0": "dense/MatMul:MatMul"})
    s2 = gpu.line("Stream #16(Kernel)", line_id=16)
    s2.kernel("Eigen_mul_kernel", 120_000, 30_000, correlation_id=3, group_id=0,
              **{"level 0": "dropout/Mul:Mul"})
    # The producer's own derived lines repeat the kernels' spans.
    gpu.line("Steps", line_id=TF24_STEPS).event("0", 10_000, 240_000, group_id=0,
                                                step_name="0")
    ops = gpu.line("TensorFlow Ops", line_id=TF24_TF_OPS)
    ops.event("dense/MatMul:MatMul", 10_000, 100_000)
    ops.event("dropout/Mul:Mul", 120_000, 30_000)
    ops.event("dense/MatMul:MatMul", 200_000, 50_000)
    gpu.line("TensorFlow Name Scope", line_id=TF24_NAME_SCOPE).event("dropout", 120_000, 30_000)
    return b.serialize()


def test_tf24_gpu_derived_lines_never_ops() -> None:
    ops = analyze(decode_xspace(_tf24_gpu_space())).ops
    per_op = _rows(ops.device_tf_ops)
    assert set(per_op) == {"dense/MatMul", "dropout/Mul"}
    assert ops.device_tf_ops.type[per_op["dense/MatMul"]] == "MatMul"
    assert ops.device_tf_ops.self_ps[per_op["dense/MatMul"]] == 150_000
    assert ops.device_tf_ops.occurrences[per_op["dense/MatMul"]] == 2
    assert ops.device_tf_ops.self_ps[per_op["dropout/Mul"]] == 30_000
    device = _rows(ops.device)
    assert "0" not in device and "dropout" not in device
    # Busy union over both streams: [10, 110) + [120, 150) + [200, 250) = 180 us of a 240 us span.
    assert int(ops.device.without_idle().self_ps.sum()) == 180_000
    assert ops.device.idle_ps == 60_000


def test_device_idle_is_span_minus_union_per_device() -> None:
    """Overlapping streams: IDLE counts each idle instant once, not once per stream."""
    b = XSpaceBuilder()
    for ordinal in (0, 1):
        gpu = b.gpu_plane(ordinal)
        gpu.line("Stream #1(Kernel)", line_id=1).kernel("k_a", 0, 100, correlation_id=1,
                                                        tf_op="a:MatMul")
        gpu.line("Stream #2(Kernel)", line_id=2).kernel("k_b", 50, 100, correlation_id=2,
                                                        tf_op="b:AddV2")
        gpu.line("Stream #3(Kernel)", line_id=3).kernel("k_c", 300, 100, correlation_id=3,
                                                        tf_op="c:Relu")
    ops = analyze(decode_xspace(b.serialize())).ops
    # Per GPU: span [0, 400) = 400, union [0, 150) + [300, 400) = 250 -> idle 150; two GPUs.
    assert ops.device.idle_ps == 300


def _jax_gpu_space() -> bytes:
    b = XSpaceBuilder()
    gpu = b.gpu_plane(0)
    s = gpu.line("Stream #1(Kernel)", line_id=1)
    common = {"tf_op": "XlaModule:", "hlo_module": "jit_matmul", "program_id": 7}
    gemm = "Cijk_Ailk_Bljk_SB_MT128x128x16_MI16x16x4x1"
    s.kernel(gemm, 0, 4_000, correlation_id=1, hlo_op="gemm_fusion_dot.1",
             **{"name": Ref("jit(matmul)/dot_general")}, **common)
    s.kernel("loop_convert_fusion", 5_000, 1_000, correlation_id=2,
             hlo_op="loop_convert_fusion",
             **{"name": Ref("jit(matmul)/convert_element_type")}, **common)
    s.kernel(gemm, 7_000, 4_000, correlation_id=3, hlo_op="gemm_fusion_dot.1",
             **{"name": Ref("jit(matmul)/dot_general")}, **common)
    s.kernel("copy_kernel", 12_000, 500, correlation_id=4, hlo_op="copy.1", **common)
    return b.serialize()


def test_jax_gpu_ops_are_the_jax_op_paths() -> None:
    analysis = analyze(decode_xspace(_jax_gpu_space()))
    per_op = _rows(analysis.ops.device_tf_ops)
    # A kernel of no framework op is its module's HLO op (issue 28: HLO op names repeat
    # across modules, so the HLO op alone merged different jitted functions' kernels).
    assert set(per_op) == {"jit(matmul)/dot_general", "jit(matmul)/convert_element_type",
                           "jit_matmul/copy.1"}
    dot = per_op["jit(matmul)/dot_general"]
    assert analysis.ops.device_tf_ops.self_ps[dot] == 8_000
    assert analysis.ops.device_tf_ops.occurrences[dot] == 2
    assert analysis.ops.device_tf_ops.type[dot] == "dot_general"  # the path's last component
    assert analysis.ops.device_tf_ops.type[per_op["jit_matmul/copy.1"]] == "copy"  # HLO kind
    facts = analysis.ops.device_op_facts["jit(matmul)/dot_general"]
    assert facts.hlo_ops == "gemm_fusion_dot.1" and facts.module == "jit_matmul"
    assert math.isnan(facts.flops)
    assert not any("XlaModule" in n for n in analysis.ops.device.name)
    # span [0, 12.5 us) - busy 9.5 us
    assert analysis.ops.device.idle_ps == 3_000


def _tpu_space() -> bytes:
    b = XSpaceBuilder()
    tpu = b.plane("/device:TPU:0", plane_id=1)
    tpu.plane_stat("device_type_string", "TPU v6 Lite")
    modules = tpu.line("XLA Modules", line_id=2)
    modules.event("jit_f(1219)", 0, 1_000_000, run_id=1)
    xla = tpu.line("XLA Ops", line_id=3)
    fusion = "%fusion.3 = f32[8,128]{1,0} fusion(f32[8,128]{1,0} %p0), kind=kLoop"
    dot = "%dot.1 = f32[8,8]{1,0} dot(f32[8,128]{1,0} %a, f32[128,8]{1,0} %b)"
    tpu.metadata_stats(fusion, "fusion.3", hlo_category="loop fusion", tf_op="jit(f)/add",
                       program_id=42, flops=2048.0, bytes_accessed=8192.0)
    tpu.metadata_stats(dot, "dot.1", hlo_category="convolution", tf_op="jit(f)/dot_general",
                       program_id=42, flops=16384.0, bytes_accessed=4608.0)
    # The event spans include waits; the device's own time is `device_duration_ps`.
    xla.event(fusion, 0, 300_000, display_name="fusion.3", device_duration_ps=100_000)
    xla.event(dot, 400_000, 500_000, display_name="dot.1", device_duration_ps=450_000)
    xla.event(fusion, 950_000, 50_000, display_name="fusion.3", device_duration_ps=40_000)
    tpu.line("XLA TraceMe", line_id=6).event("ThunkExecute", 0, 1_000_000)
    tpu.line("Async XLA Ops", line_id=4).event("copy-start.1", 0, 900_000, _a=1)
    return b.serialize()


def test_tpu_ops_from_xla_ops_line_with_device_duration() -> None:
    analysis = analyze(decode_xspace(_tpu_space()))
    ops = analysis.ops.device_tf_ops
    per_op = _rows(ops)
    assert set(per_op) == {"jit(f)/add", "jit(f)/dot_general"}  # the module is no op
    assert ops.self_ps[per_op["jit(f)/dot_general"]] == 450_000
    assert ops.self_ps[per_op["jit(f)/add"]] == 140_000
    assert ops.type[per_op["jit(f)/add"]] == "loop fusion"
    assert ops.occurrences[per_op["jit(f)/add"]] == 2
    facts = analysis.ops.device_op_facts
    assert facts["jit(f)/add"].hlo_ops == "fusion.3"
    assert facts["jit(f)/add"].flops == 4096.0
    assert facts["jit(f)/add"].bytes_accessed == 16384.0
    # program 42's ops run inside the execution `jit_f(1219)`: its module is jit_f, never
    # the bare id (issue 29 item 7)
    assert facts["jit(f)/dot_general"].module == "jit_f"
    device_names = analysis.ops.device.name
    assert not any(n.startswith("%") for n in device_names)  # never the HLO text
    assert "jit_f(1219)" not in device_names and "ThunkExecute" not in device_names
    # Span [0, 990) us; busy for the device times [0,100)+[400,850)+[950,990) = 590 us.
    assert analysis.ops.device.idle_ps == 400_000


def test_xla_cpu_thunks_are_host_ops() -> None:
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    py = cpu.line("python", line_id=1)
    py.event("train", 0, 10_000, step_num=0, _r=1)
    thunks = cpu.line("tf_XLAEigen/123", line_id=2)
    thunks.event("dot.2", 1_000, 3_000, hlo_op="dot.2", hlo_module="jit_train_step",
                 program_id=3, run_id=1)
    thunks.event("fusion.1", 5_000, 2_000, hlo_op="fusion.1", hlo_module="jit_train_step",
                 program_id=3, run_id=1)
    thunks.event("dot.2", 8_000, 1_000, hlo_op="dot.2", hlo_module="jit_train_step",
                 program_id=3, run_id=2)
    host = analyze(decode_xspace(b.serialize())).ops.host
    rows = _rows(host)
    dot = rows["jit_train_step/dot.2"]
    assert host.self_ps[dot] == 4_000 and host.occurrences[dot] == 2
    assert host.category[dot] == "XLA" and host.type[dot] == "dot"
    assert host.self_ps[rows["jit_train_step/fusion.1"]] == 2_000
