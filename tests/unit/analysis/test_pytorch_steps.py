"""PyTorch's steps are its `ProfilerStep#N` host ranges, every one of them (docs/pytorch.md
"Steps"): traces made with tests/kineto_builder.py in the layouts of the public traces where
the rule was wrong (HTA's cpu_only, PyTorch 1.9's ResNet-50 samples, HTA's ns_resolution and
nccl traces), every figure computed by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.store import ProfileStore
from tests.kineto_builder import KinetoTrace

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _overview(trace: KinetoTrace, tmp_path: Path) -> dict[str, Any]:
    path = trace.write(tmp_path / "run" / "worker0.1700000000000.pt.trace.json")
    profile = ProfileStore(max_bytes=0).open(str(path))
    request = registry.ViewRequest("run", "worker0", {"worker0": profile}, {})
    return registry.VIEWS["overview_page"].build(request)


def _roles_us(step: dict[str, Any]) -> dict[str, float]:
    return {k: round(v * 1000, 6) for k, v in step["pytorch_breakdown_ms"].items() if v}


def test_one_step_of_a_cpu_only_rank_is_a_step(tmp_path: Path) -> None:
    """hta_cpu_only's layout: rank 34 of a gloo job, no GPU, one ProfilerStep#551 on the main
    thread; the all-reduces are `gloo:all_reduce` ranges on two gloo threads, no operator
    inside the step (so it has no host compute: it was dropped as empty)."""
    t = KinetoTrace(devices=0, rank=34, world_size=300, backend="gloo")
    t.cpu_op("aten::empty", -50.0, 2.0)  # before the step, as in the trace
    t.profiler_step(551, 0.0, 1000.0)
    t.user_annotation("gloo:all_reduce", 100.0, 300.0, tid=3553)
    t.user_annotation("gloo:all_reduce", 300.0, 400.0, tid=3554)
    doc = _overview(t, tmp_path)
    assert [s["step_num"] for s in doc["steps"]] == [551]
    step = doc["steps"][0]
    assert step["step_time_ms"] == pytest.approx(1.0)
    # Communication [100, 700] on either gloo thread; the rest of the step is no role's.
    assert _roles_us(step) == {"communication": 600.0, "other": 400.0}
    assert step["breakdown_ms"]["device_collectives"] == pytest.approx(0.6)


def _resnet_2021(t: KinetoTrace, first: int, last: int) -> None:
    """PyTorch 1.9's layout (torch-tb-profiler's ResNet-50 samples): per 1000 µs step, the
    DataLoader's `__next__` (an `Operator`) [0, 400], an op [400, 500] launching a kernel at
    [450, 460] that runs on the GPU [600, 1300]: past the step's host end, into the next."""
    for n in range(first, last + 1):
        s = 1000.0 * (n - first)
        t.profiler_step(n, s, 1000.0)
        t.cpu_op(LOADER, s, 400.0)
        op = t.cpu_op("aten::conv2d", s + 400.0, 100.0)
        t.launch_kernel(op, "volta_scudnn_128x64_relu_interior_nn_v1", launch_ts=s + 450.0,
                        launch_dur=10.0, kernel_ts=s + 600.0, kernel_dur=700.0)


def test_2021_layout_keeps_the_first_and_last_step_at_their_host_range(tmp_path: Path) -> None:
    """Steps 5..10 (six: more than the partial-step rule's five), each its host range of
    1000 µs although its kernel ends 300 µs after it (the GPU-side span [600, 1300] was
    taken instead, and steps 5 and 10 dropped as partial)."""
    t = KinetoTrace(variant="2021")
    _resnet_2021(t, 5, 10)
    doc = _overview(t, tmp_path)
    assert [s["step_num"] for s in doc["steps"]] == [5, 6, 7, 8, 9, 10]
    for step in doc["steps"]:
        assert step["step_time_ms"] == pytest.approx(1.0)
    # Step 5: kernel [600, 1000]; DataLoader [0, 400]; runtime [450, 460]; CPU exec the op
    # less the launch; other [500, 600]. Later steps also hold the previous step's kernel
    # [0, 300], which outranks the DataLoader there.
    first = {"kernel": 400.0, "runtime": 10.0, "dataloader": 400.0, "cpu_exec": 90.0,
             "other": 100.0}
    later = {**first, "kernel": 700.0, "dataloader": 100.0}
    assert [_roles_us(s) for s in doc["steps"]] == [first] + [later] * 5
    # In the nine categories the DataLoader's share is input.
    assert [s["breakdown_ms"]["input"] for s in doc["steps"]] == pytest.approx([0.4] + [0.1] * 5)


def test_ns_resolution_steps_are_host_ranges_not_gpu_spans(tmp_path: Path) -> None:
    """hta_ns_resolution's layout: fractional µs; the GPU runs far behind the host, so step
    101's kernels end long after its host range (35.116 µs here), 102's after its own."""
    t = KinetoTrace()
    t.profiler_step(101, 0.0, 35.116)
    op = t.cpu_op("aten::cudnn_convolution", 1.5, 30.25)
    t.launch_kernel(op, "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", launch_ts=2.125,
                    launch_dur=4.5, kernel_ts=30.5, kernel_dur=67.163)
    t.profiler_step(102, 35.116, 72.078)
    op = t.cpu_op("aten::add_", 36.0, 10.001)
    t.launch_kernel(op, "vectorized_elementwise_kernel", launch_ts=37.0, launch_dur=3.0,
                    kernel_ts=97.7, kernel_dur=90.0)
    doc = _overview(t, tmp_path)
    assert [s["step_num"] for s in doc["steps"]] == [101, 102]
    assert [s["step_time_ms"] for s in doc["steps"]] == pytest.approx([0.035116, 0.072078],
                                                                      abs=1e-12)
    # Step 101: kernel [30.5, 35.116]; runtime [2.125, 6.625]; CPU exec the op [1.5, 31.75]
    # less the launch and the kernel; other [0, 1.5]. Step 102 [35.116, 107.194]: kernel
    # 101's tail [35.116, 97.663] (hiding 102's op and launch) and its own from 97.7.
    assert _roles_us(doc["steps"][0]) == pytest.approx(
        {"kernel": 4.616, "runtime": 4.5, "cpu_exec": 24.5, "other": 1.5}, abs=1e-6)
    assert _roles_us(doc["steps"][1]) == pytest.approx(
        {"kernel": 62.547 + 9.494, "other": 0.037}, abs=1e-6)


@pytest.mark.parametrize("kernel", [
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals,"
    " vllm::Signal*, __nv_bfloat16*, int, int)",
    "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*,"
    " unsigned long, unsigned long, unsigned long)",
])
def test_collective_kernels_are_communication(tmp_path: Path, kernel: str) -> None:
    """hta_nccl's layout (NCCL 2.1x names `ncclKernel_*`; today's `ncclDevKernel_*`; send/recv
    of all-to-all; custom all-reduce kernels): per 1000 µs step, `record_param_comms`
    [100, 200] over `nccl:all_reduce`, its kernel [300, 700] on the NCCL stream, and a GEMM
    [600, 800] overlapping it (a kernel outranks communication)."""
    t = KinetoTrace(rank=0, world_size=2)
    for n in (4, 5):
        s = 1000.0 * (n - 4)
        t.profiler_step(n, s, 1000.0)
        t.nccl_all_reduce(ts=s + 100.0, dur=100.0, kernel_ts=s + 300.0, kernel_dur=400.0,
                          nelems=1 << 20, kernel_name=kernel)
        op = t.cpu_op("aten::mm", s + 250.0, 50.0)
        t.launch_kernel(op, "ampere_sgemm_128x64_nn", launch_ts=s + 260.0, launch_dur=10.0,
                        kernel_ts=s + 600.0, kernel_dur=200.0)
    doc = _overview(t, tmp_path)
    assert [s["step_num"] for s in doc["steps"]] == [4, 5]
    for step in doc["steps"]:
        # communication [100, 200] + [300, 600]; kernel [600, 800]; runtime [260, 270];
        # CPU exec the op [250, 300] less the launch; other [0, 100] + [200, 250] +
        # [800, 1000].
        assert _roles_us(step) == {"kernel": 200.0, "communication": 400.0, "runtime": 10.0,
                                   "cpu_exec": 40.0, "other": 350.0}
        assert step["breakdown_ms"]["device_collectives"] == pytest.approx(0.4)
