"""A synthetic GPU profile with every step-time category, checked against hand-computed numbers.

Step 1 (µs; step 2 is the same 200 µs later), host marker `train` [0, 100]:

    host   ExecutorState::Process [10,20]  launches [20,26]  MatMul [26,30]  GetNext [30,35]
           Add [50,60] (host compute hidden under device compute: counts 0)
    device H2D [40,45]  fp16 kernel [45,55]  fp32 kernel [55,70]  D2H [70,75]
           nccl [75,85]  D2D [85,90]
    uncovered: [0,10] [35,40] [90,100] = 25 µs -> all others

    kernel launch 16 = [10,26]; input 10 = GetNext 5 + H2D 5; host compute 4; device compute
    25 (16-bit 10, 32-bit 15); output 5; collectives 10; device to device 5; total 100.
"""

from __future__ import annotations

import pytest

from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import XSpaceBuilder

US = 1_000_000  # ps


def gpu_profile() -> bytes:
    b = XSpaceBuilder(hostnames=["gpu-host"])
    host = b.plane("/host:CPU")
    py = host.line("python", line_id=1)
    gpu = b.gpu_plane(0)
    stream = gpu.line("Stream #7(Compute)", line_id=7)
    for step in range(2):
        t0 = step * 200 * US
        corr = step * 10
        py.event("train", t0, 100 * US, step_num=step + 1, _r=1)
        py.event("ExecutorState::Process", t0 + 10 * US, 10 * US)
        for k in range(6):
            py.event("cudaLaunchKernel", t0 + (20 + k) * US, 1 * US,
                     correlation_id=corr + k + 1)
        py.event("dense/MatMul:MatMul", t0 + 26 * US, 4 * US)
        py.event("IteratorGetNext", t0 + 30 * US, 5 * US)
        py.event("Add:AddV2", t0 + 50 * US, 10 * US)
        stream.memcpy("HtoD", t0 + 40 * US, 5 * US, corr + 1, num_bytes=4096)
        stream.kernel("volta_fp16_s884gemm", t0 + 45 * US, 10 * US, corr + 2,
                      tf_op="dense/MatMul:MatMul")
        stream.kernel("volta_sgemm_128x64", t0 + 55 * US, 15 * US, corr + 3,
                      tf_op="dense_1/MatMul:MatMul")
        stream.memcpy("DtoH", t0 + 70 * US, 5 * US, corr + 4, num_bytes=1024)
        stream.kernel("ncclAllReduceRingLLKernel", t0 + 75 * US, 10 * US, corr + 5)
        stream.memcpy("DtoD", t0 + 85 * US, 5 * US, corr + 6, num_bytes=512)
    return b.serialize()


@pytest.fixture(scope="module")
def overview() -> dict:
    profile = decode_xspace(gpu_profile())
    request = registry.ViewRequest("run", "gpu-host", {"gpu-host": profile}, {})
    return registry.VIEWS["overview_page"].build(request)


def test_every_category_exact(overview: dict) -> None:
    assert [s["step_num"] for s in overview["steps"]] == [1, 2]
    expected_ms = {
        "device_compute": 0.025, "device_to_device": 0.005, "device_collectives": 0.010,
        "host_compute": 0.004, "kernel_launch": 0.016, "input": 0.010, "output": 0.005,
        "compilation": 0.0, "all_others": 0.025,
    }
    for step in overview["steps"]:
        assert step["step_time_ms"] == pytest.approx(0.1, abs=1e-12)
        assert step["breakdown_ms"] == pytest.approx(expected_ms, abs=1e-12)
    assert overview["step_time_ms"] == pytest.approx(
        {"avg": 0.1, "stddev": 0.0, "min": 0.1, "max": 0.1}, abs=1e-12)


def test_precision_verdict_environment(overview: dict) -> None:
    assert overview["device_compute_precision"] == pytest.approx(
        {"percent_16bit": 40.0, "percent_32bit": 60.0})
    assert overview["input_percent"] == pytest.approx(10.0)
    assert overview["bottleneck"]["input_bound"] == "moderately"
    assert overview["run_environment"] == {
        "host_count": 1, "hostnames": ["gpu-host"], "device_type": "NVIDIA H100",
        "device_core_count": 1, "framework": "TensorFlow",
        "framework_evidence": "TensorFlow runtime events (ExecutorState::Process)"}


def test_top_device_ops_and_advice(overview: dict) -> None:
    top = {row["name"]: row for row in overview["top_device_ops"]}
    assert top["dense_1/MatMul"]["self_time_ms"] == pytest.approx(0.030)  # 2 x 15 µs
    assert top["dense/MatMul"]["self_time_ms"] == pytest.approx(0.020)
    assert overview["top_device_ops"][0]["name"] == "dense_1/MatMul"
    assert overview["top_host_ops"] == []
    advice = " ".join(overview["recommendations"])
    assert "TF_GPU_THREAD_MODE=gpu_private" in advice  # kernel launch 16 %
    # input 10 %, but no tf.data iterator recorded: no prefetch advice without evidence
    assert "no tf.data iterator events (Iterator::*) were recorded" in advice
    assert "prefetch" not in advice
    withheld = {w["key"]: w["reason"] for w in overview["advice_withheld"]}
    assert withheld["tf_data_prefetch"].startswith("no tf.data iterator events")
