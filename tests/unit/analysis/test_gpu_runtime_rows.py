"""GPU runtime facts that are not program ops, on the layouts real producers write (issue 28):
ROCm's legacy `CopyDeviceToDevice`, HIP launch calls carrying the op's stats, composable-kernel
attention helpers, and kernels keyed by module and HLO op. Exact numbers."""

from __future__ import annotations

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.ops.kernel_stats import uses_tensor_core
from tb_profile_plugin.analysis.ops.op_metrics import IDLE, RUNTIME_CATEGORY, compute_precision_ps
from tb_profile_plugin.analysis.steps.step_db import EventType, classify
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.producers import is_kernel_launch, runtime_call_kind
from tests.xspace_builder import XSpaceBuilder, rocm_kernel_details, stats_plane

US = 1_000_000  # ps


def _amd_space() -> bytes:
    """One MI300X: two XLA kernels of `jit_f` and a legacy-tracer device-to-device copy on one
    stream; the host thread's HIP launch calls carry the kernels' stats (as JAX's ROCm tracer
    writes them), with 40 µs between them."""
    b = XSpaceBuilder()
    host = b.plane("/host:CPU").line("Host Threads/583", line_id=583)
    xla = {"tf_op": "XlaModule:", "hlo_op": "loop_add_fusion", "hlo_module": "jit_f"}
    host.event("hipModuleLaunchKernel", 0, 10 * US, correlation_id=1, **xla)
    host.event("hipExtModuleLaunchKernel", 50 * US, 20 * US, correlation_id=2,
               **{**xla, "hlo_op": "cudnn-conv.1"})
    host.event("hipMemsetAsync", 100 * US, 5 * US, correlation_id=3, **xla)
    gpu = stats_plane(b, "/device:GPU:0", 1, device_vendor="AMD", compute_cap_major=9,
                      compute_cap_minor=4)
    stream = gpu.line("Stream #1(Kernel)", line_id=1)
    stream.kernel("loop_add_fusion.kd", 20 * US, 100 * US, correlation_id=1,
                  details=rocm_kernel_details(), hlo_op="loop_add_fusion", hlo_module="jit_f",
                  name="jit(f)/add")
    stream.kernel("conv.kd", 130 * US, 300 * US, correlation_id=2,
                  details=rocm_kernel_details(), hlo_op="cudnn-conv.1", hlo_module="jit_f",
                  name="jit(f)/conv_general_dilated")
    stream.event("CopyDeviceToDevice", 500 * US, 889 * US, correlation_id=4)
    return b.serialize()


def test_rocm_legacy_device_to_device_copy_is_a_transfer_not_compute() -> None:
    ops = analyze(decode_xspace(_amd_space())).ops
    rows = dict(zip(ops.device_tf_ops.name, ops.device_tf_ops.type, strict=True))
    assert rows["CopyDeviceToDevice"] == "Memcpy"
    profile = decode_xspace(_amd_space())
    forest = profile_forest(profile)
    types, _, _ = classify(forest, grouped_only=False)
    table = forest.table
    copy = table.event_mask(table.names_matching(lambda n: n == "CopyDeviceToDevice"))
    assert types[copy].tolist() == [EventType.DEVICE_TO_DEVICE]
    # The two kernels (100 + 300 µs) are the only compute; the 889 µs copy has no precision.
    assert sum(compute_precision_ps(table, types)) == 400 * US


def test_launch_calls_are_runtime_rows_and_the_host_keeps_its_idle() -> None:
    host = analyze(decode_xspace(_amd_space())).ops.host
    rows = {n: i for i, n in enumerate(host.name)}
    assert set(rows) == {"hipModuleLaunchKernel", "hipExtModuleLaunchKernel", "hipMemsetAsync",
                         IDLE}
    assert not any(n.startswith("jit_f/") for n in host.name)
    assert host.type[rows["hipModuleLaunchKernel"]] == "Kernel launch"
    assert host.type[rows["hipMemsetAsync"]] == "Memset"
    assert host.category[rows["hipExtModuleLaunchKernel"]] == RUNTIME_CATEGORY
    assert int(host.self_ps[rows["hipExtModuleLaunchKernel"]]) == 20 * US
    # The line's span 105 µs less the calls' 35 µs.
    assert host.idle_ps == 70 * US


def test_runtime_call_names() -> None:
    for name in ("hipLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
                 "cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch"):
        assert is_kernel_launch(name) and runtime_call_kind(name) == "Kernel launch"
    assert runtime_call_kind("hipMemcpyDtoDAsync") == "Memcpy"
    assert runtime_call_kind("cudaMemsetAsync") == "Memset"
    for name in ("hipLaunchHostFunc", "cuLaunchHostFunc", "hipStreamWaitEvent",
                 "ExecutorState::Process"):
        assert runtime_call_kind(name) is None


def test_only_the_attention_gemm_kernels_of_composable_kernel_use_matrix_cores() -> None:
    def ck(kernel: str) -> str:
        return f"void ck_tile::kentry<ck_tile::gfx950_t, 2, ck_tile::{kernel}<ck_tile::Block>>"

    for kernel in ("FmhaFwdKernel", "FmhaBwdDQDKDVKernel", "FmhaFwdSplitKVKernel"):
        assert uses_tensor_core(ck(kernel)), kernel
    for kernel in ("FmhaBwdOGradDotOKernel", "FmhaBwdConvertQGradKernel",
                   "FmhaFwdSplitKVCombineKernel", "FmhaFwdAppendKVKernel"):
        assert not uses_tensor_core(ck(kernel)), kernel


def test_kernels_without_a_name_are_keyed_by_module_and_hlo_op() -> None:
    """jit_subtract's and jit_true_divide's `loop_convert_fusion` are two ops, not one."""
    b = XSpaceBuilder()
    stream = b.gpu_plane(0).line("Stream #7(Kernel)", line_id=7)
    stream.kernel("loop_convert_fusion", 0, 390 * US, correlation_id=1,
                  hlo_op="loop_convert_fusion", hlo_module="jit_subtract")
    stream.kernel("loop_convert_fusion", 400 * US, 413 * US, correlation_id=2,
                  hlo_op="loop_convert_fusion", hlo_module="jit_true_divide")
    ops = analyze(decode_xspace(b.serialize())).ops.device_tf_ops
    rows = dict(zip(ops.name, ops.self_ps.tolist(), strict=True))
    assert rows == {"jit_subtract/loop_convert_fusion": 390 * US,
                    "jit_true_divide/loop_convert_fusion": 413 * US}
    assert set(ops.type) == {"loop_convert_fusion"}
