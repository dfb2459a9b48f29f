"""Multi-GPU steps the producer grouped (TF <= 2.4): a step is per core, never a span across
two cores' separate runs of it.

The layout copies a real 8-GPU BERT capture (TF 2.4, CUPTI) where two GPUs ran the same group
647 ms apart: `/device:GPU:N` planes with `Stream #N(...)` lines, the producer's Steps line
(id -559038737, sign-extended int32) with one event per step carrying `step_name` and
`group_id`, kernels with `group_id`, `correlation_id` and TF 2.4's `level 0` op stat, host
threads with the group's events. As the reference does (xprof_reference.md §3.3 "Step time",
"Step DB"), the step is the longest device marker (each core's own span of the group) unless a
host marker contains it, and the step's breakdown is what of the group falls inside it: the
slowest core's step with that core's breakdown.

Per group k, from t0 = 1400k ms (µs below):
  host   FunctionRun [0, 900] (step_name "k": the host marker, containing no core's step);
         ExecutorState::Process [100, 800]; cudaLaunchKernel [850, 860] and
         [647_000, 647_010] (the second replica's launch), all before the cores' steps
  GPU:4  kernels [1_000, 11_000] and [12_000, 20_865], MemcpyDtoD [11_000, 12_000]:
         its step 19.865 ms, 18.865 ms compute, 1 ms device to device
  GPU:6  kernels [648_000, 656_000] and [662_434, 669_310], MemcpyHtoD [656_000, 662_434]:
         its step 21.310 ms, 14.876 ms compute, 6.434 ms input
Before the fix, the step ran from GPU:4's first kernel to GPU:6's last, 668.310 ms, 99.4 % of
it "All others" (the gap between the two runs) and device compute the two GPUs' sum,
33.741 ms.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.steps.step_db import EventType
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import build_view
from tests.xspace_builder import TF24_STEPS_LINE_ID, XSpaceBuilder, tf24_derived_lines

US = 1_000_000  # ps
STEP_PERIOD_US = 1_400_000


def _layout(groups: int = 2) -> bytes:
    b = XSpaceBuilder(hostnames=["bert"])
    host = b.plane("/host:CPU")
    python = host.line("python", line_id=1)
    compute = host.line("tf_Compute", line_id=2)
    gpu4, gpu6 = b.gpu_plane(4, model="Tesla V100"), b.gpu_plane(6, model="Tesla V100")
    kernels4, copies4 = gpu4.line("Stream #14(Kernel)", 14), gpu4.line("Stream #17(MemcpyD2D)", 17)
    kernels6, copies6 = gpu6.line("Stream #14(Kernel)", 14), gpu6.line("Stream #15(MemcpyH2D)", 15)
    steps4, ops4, _ = tf24_derived_lines(gpu4)
    steps6, ops6, _ = tf24_derived_lines(gpu6)
    for k in range(groups):
        t0 = k * STEP_PERIOD_US

        def at(us: int, t0: int = t0) -> int:
            return (t0 + us) * US

        corr = 100 * k
        python.event("FunctionRun", at(0), 900 * US, group_id=k, step_name=str(k))
        compute.event("ExecutorState::Process", at(100), 700 * US, group_id=k)
        compute.event("cudaLaunchKernel", at(850), 10 * US, group_id=k, correlation_id=corr + 1)
        compute.event("cudaLaunchKernel", at(647_000), 10 * US, group_id=k,
                      correlation_id=corr + 11)
        matmul = {"level 0": "bert/encoder/MatMul:MatMul"}
        kernels4.kernel("volta_sgemm_128x64_nn", at(1_000), 10_000 * US, corr + 1, group_id=k,
                        **matmul)
        copies4.memcpy("DtoD", at(11_000), 1_000 * US, corr + 2, num_bytes=1 << 20, group_id=k)
        kernels4.kernel("volta_sgemm_128x64_nn", at(12_000), 8_865 * US, corr + 3, group_id=k,
                        **matmul)
        kernels6.kernel("volta_sgemm_128x64_nn", at(648_000), 8_000 * US, corr + 11,
                        group_id=k, **matmul)
        copies6.memcpy("HtoD", at(656_000), 6_434 * US, corr + 12, num_bytes=1 << 20,
                       group_id=k)
        kernels6.kernel("volta_sgemm_128x64_nn", at(662_434), 6_876 * US, corr + 13,
                        group_id=k, **matmul)
        # The producer's own Steps line: one event per step and core, the core's span.
        steps4.event(str(k), at(1_000), 19_865 * US, group_id=k, step_name=str(k))
        steps6.event(str(k), at(648_000), 21_310 * US, group_id=k, step_name=str(k))
        ops4.event("bert/encoder/MatMul:MatMul", at(1_000), 10_000 * US)
        ops6.event("bert/encoder/MatMul:MatMul", at(648_000), 8_000 * US)
    return b.serialize()


def test_layout_is_tf24s() -> None:
    profile = decode_xspace(_layout())
    gpu = next(p for p in profile.planes if p.name == "/device:GPU:6")
    assert any(line.id == TF24_STEPS_LINE_ID and line.name == "Steps" for line in gpu.lines)


def test_step_is_the_slowest_cores_own_step() -> None:
    analysis = analyze(decode_xspace(_layout()))
    assert analysis.root_rule == "producer"
    steps = analysis.steps
    assert steps.step_num.tolist() == [0, 1]
    # GPU:6's step (21.310 ms) is longer than GPU:4's (19.865 ms): it is the step.
    assert steps.begin_ps.tolist() == [648_000 * US, (STEP_PERIOD_US + 648_000) * US]
    assert steps.duration_ps.tolist() == [21_310 * US] * 2
    for row in steps.type_ps.tolist():
        got = {EventType(t).name: v for t, v in enumerate(row) if v}
        # GPU:6's own breakdown; nothing of GPU:4's run, 647 ms earlier, and no gap.
        assert got == {"DEVICE_COMPUTE_32": 14_876 * US, "HOST_TO_DEVICE": 6_434 * US}


def test_each_core_keeps_its_own_step() -> None:
    analysis = analyze(decode_xspace(_layout()))
    cores = dict(analysis.core_steps)
    assert list(cores) == ["/device:GPU:4", "/device:GPU:6"]
    gpu4, gpu6 = cores["/device:GPU:4"], cores["/device:GPU:6"]
    assert gpu4.duration_ps.tolist() == [19_865 * US] * 2
    assert gpu4.type_ps[:, EventType.DEVICE_COMPUTE_32].tolist() == [18_865 * US] * 2
    assert gpu4.type_ps[:, EventType.DEVICE_TO_DEVICE].tolist() == [1_000 * US] * 2
    assert gpu4.type_ps[:, EventType.UNKNOWN_TIME].tolist() == [0, 0]
    assert gpu6.duration_ps.tolist() == [21_310 * US] * 2
    assert gpu6.type_ps[:, EventType.DEVICE_COMPUTE_32].tolist() == [14_876 * US] * 2


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    path = tmp_path / "bert.xplane.pb"
    path.write_bytes(_layout())
    return path


def test_overview(capture: Path) -> None:
    doc = build_view("overview_page", capture)
    assert [s["step_time_ms"] for s in doc["steps"]] == [21.31, 21.31]
    for step in doc["steps"]:
        assert step["breakdown_ms"]["device_compute"] == pytest.approx(14.876, abs=1e-9)
        assert step["breakdown_ms"]["input"] == pytest.approx(6.434, abs=1e-9)
        assert step["breakdown_ms"]["all_others"] == 0.0
    assert doc["step_time_ms"]["avg"] == pytest.approx(21.31, abs=1e-9)
    assert doc["categories"]["device_compute"]["avg"] == pytest.approx(14.876, abs=1e-9)
    assert doc["categories"]["all_others"]["percent"] == 0.0
    assert doc["all_others_percent"] == 0.0


def test_input_pipeline_analyzer(capture: Path) -> None:
    doc = build_view("input_pipeline_analyzer", capture)
    text = str(doc)
    assert "668.31" not in text
    steps = doc["steps"]
    assert [s["step_time_ms"] for s in steps] == [21.31, 21.31]
    for step in steps:
        assert step["breakdown_ms"]["device_compute"] == pytest.approx(14.876, abs=1e-9)
        assert step["breakdown_ms"]["all_others"] == 0.0


def test_pod_viewer(capture: Path) -> None:
    doc = build_view("pod_viewer", capture)
    assert doc["num_steps"] == 2
    for step in doc["steps"]:
        (host,) = step["hosts"]
        assert host["step_time_us"] == pytest.approx(21_310.0, abs=1e-6)
        assert host["breakdown_us"]["device_compute"] == pytest.approx(14_876.0, abs=1e-6)
        assert host["breakdown_us"]["all_others"] == 0.0
        cores = {c["core"]: c for c in host["cores"]}
        assert cores["/device:GPU:4"]["step_time_us"] == pytest.approx(19_865.0, abs=1e-6)
        assert cores["/device:GPU:4"]["breakdown_us"]["device_compute"] == pytest.approx(
            18_865.0, abs=1e-6)
        assert cores["/device:GPU:4"]["breakdown_us"]["all_others"] == 0.0
        assert cores["/device:GPU:6"]["step_time_us"] == pytest.approx(21_310.0, abs=1e-6)
        assert cores["/device:GPU:6"]["breakdown_us"]["device_compute"] == pytest.approx(
            14_876.0, abs=1e-6)
