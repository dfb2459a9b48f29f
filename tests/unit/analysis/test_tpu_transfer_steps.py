"""TPU transfers are their own step-time category, and the verdict says when they bound a step.

The layout copies what JAX on a TPU v6 Lite writes (../shared/reference/producers.md, "JAX /
XLA on TPU"): a `/device:TPU:0` plane with the "XLA Modules" (id 2) and "XLA Ops" (id 3)
lines, ops named by the full HLO text with the op in the metadata's `display_name`, metadata
stats `hlo_category`, `program_id`, `tf_op`, event stats `device_duration_ps`, and the async
`copy-start` also on "Async XLA Ops" (id 4, `_a` = 1). The step marker is the module line:
`jit_train_step` runs three times, back to back, each execution a step (analysis/steps/
execution_steps.py). Per execution, from its start (µs):

    fusion.1      [0, 30)     loop fusion, 30 µs of device compute
    copy-start.1  [30, 35)    starts an async copy between memories (host offload)
    copy-done.1   [35, 1000)  waits for it: 965 µs

So 97.0 % of each 1 ms step is device to device (copy-start 0.5 %, copy-done 96.5 %) and
3.0 % device compute. Before: copy-start and copy-done were device compute, the step 100 %
device compute and the verdict "Focus on the computation."
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.steps.breakdown import verdict
from tb_profile_plugin.analysis.steps.step_db import EventType
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import build_view
from tests.xspace_builder import XSpaceBuilder

US = 1_000_000  # ps
STEP_US = 1_000
FUSION = "%fusion.1 = bf16[1024,1024]{1,0} fusion(bf16[1024,1024]{1,0} %p0), kind=kLoop"
COPY_START = ("%copy-start.1 = (f32[4096,1024]{1,0:S(5)}, f32[4096,1024]{1,0}, u32[]) "
              "copy-start(f32[4096,1024]{1,0:S(5)} %p1)")
COPY_DONE = ("%copy-done.1 = f32[4096,1024]{1,0} copy-done((f32[4096,1024]{1,0:S(5)}, "
             "f32[4096,1024]{1,0}, u32[]) %copy-start.1)")


def _layout(executions: int = 3) -> bytes:
    b = XSpaceBuilder(hostnames=["tpu-vm"])
    tpu = b.plane("/device:TPU:0", plane_id=1)
    tpu.plane_stat("device_type_string", "TPU v6 Lite")
    tpu.plane_stat("peak_teraflops_per_second", 918.0)
    tpu.plane_stat("peak_hbm_bw_gigabytes_per_second", 1640.0)
    modules = tpu.line("XLA Modules", line_id=2)
    ops = tpu.line("XLA Ops", line_id=3)
    async_ops = tpu.line("Async XLA Ops", line_id=4)
    tpu.metadata_stats(FUSION, "fusion.1", hlo_category="loop fusion",
                       tf_op="jit(train_step)/add", program_id=42, flops=2.0e6,
                       bytes_accessed=4.0e6)
    tpu.metadata_stats(COPY_START, "copy-start.1", hlo_category="data formatting",
                       program_id=42)
    tpu.metadata_stats(COPY_DONE, "copy-done.1", hlo_category="data formatting",
                       program_id=42)
    for k in range(executions):
        t0 = k * STEP_US * US
        modules.event("jit_train_step(5544)", t0, STEP_US * US, run_id=100 + k)
        ops.event(FUSION, t0, 30 * US, display_name="fusion.1", device_duration_ps=30 * US)
        ops.event(COPY_START, t0 + 30 * US, 5 * US, display_name="copy-start.1",
                  device_duration_ps=5 * US)
        ops.event(COPY_DONE, t0 + 35 * US, 965 * US, display_name="copy-done.1",
                  device_duration_ps=965 * US)
        async_ops.event(COPY_START, t0 + 30 * US, 970 * US, display_name="copy-start.1", _a=1)
    return b.serialize()


def test_copies_and_their_waits_are_device_to_device() -> None:
    analysis = analyze(decode_xspace(_layout()))
    assert analysis.root_rule == "executions"
    assert analysis.step_module == "jit_train_step"
    steps = analysis.steps
    assert steps.duration_ps.tolist() == [STEP_US * US] * 3
    for row in steps.type_ps.tolist():
        got = {EventType(t).name: v for t, v in enumerate(row) if v}
        assert got == {"DEVICE_COMPUTE_32": 30 * US, "DEVICE_TO_DEVICE": 5 * US,
                       "DEVICE_WAIT_DEVICE": 965 * US}
    v = verdict(steps)
    assert v.input_bound == "not"
    assert v.bound_by == "transfers"
    assert v.transfer_percent == pytest.approx(97.0)
    assert "bounded by transfers: 97.0 %" in v.statement
    assert "against 3.0 % device compute" in v.statement
    assert "Focus on the computation" not in v.statement


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    path = tmp_path / "tpu-vm.xplane.pb"
    path.write_bytes(_layout())
    return path


def test_overview_category_and_verdict(capture: Path) -> None:
    doc = build_view("overview_page", capture)
    assert doc["run_environment"]["device_type"] == "TPU v6 Lite"
    for step in doc["steps"]:
        assert step["step_time_ms"] == 1.0
        assert step["breakdown_ms"]["device_to_device"] == pytest.approx(0.97, abs=1e-12)
        assert step["breakdown_ms"]["device_compute"] == pytest.approx(0.03, abs=1e-12)
        assert step["breakdown_ms"]["all_others"] == 0.0
    assert doc["categories"]["device_to_device"]["label"] == "Device to device"
    assert doc["categories"]["device_to_device"]["percent"] == pytest.approx(97.0)
    assert doc["categories"]["device_compute"]["percent"] == pytest.approx(3.0)
    assert doc["bottleneck"]["input_bound"] == "not"
    assert "bounded by transfers" in doc["bottleneck"]["statement"]
    assert "Focus on the computation" not in doc["bottleneck"]["statement"]


def test_input_pipeline_and_pod_viewer_agree(capture: Path) -> None:
    ipa = build_view("input_pipeline_analyzer", capture)
    assert "bounded by transfers" in ipa["bottleneck"]["statement"]
    for step in ipa["steps"]:
        assert step["breakdown_ms"]["device_to_device"] == pytest.approx(0.97, abs=1e-12)
    pod = build_view("pod_viewer", capture)
    for step in pod["steps"]:
        (host,) = step["hosts"]
        assert host["bottleneck"] == "device_to_device"
        assert host["breakdown_us"]["device_to_device"] == pytest.approx(970.0, abs=1e-9)
