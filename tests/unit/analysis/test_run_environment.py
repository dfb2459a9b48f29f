"""Run environment: device names per vendor and device counts that leave CUSTOM planes out."""

from __future__ import annotations

import pytest

from tb_profile_plugin.analysis.hosts.device_names import device_type_name
from tb_profile_plugin.analysis.hosts.host_analysis import RunEnvironment, analyze
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import XSpaceBuilder, stats_plane

MEGASCALE = "/device:CUSTOM:Megascale Trace"


def _environment(b: XSpaceBuilder) -> RunEnvironment:
    b.plane("/host:CPU").line("python", line_id=1).event("train", 0, 10, _r=1)
    return analyze(decode_xspace(b.serialize())).environment


def test_amd_mi300_is_named_by_its_gfx_target() -> None:
    b = XSpaceBuilder(hostnames=["mi300"])
    stats_plane(b, "/device:GPU:0", 1, device_vendor="AMD", compute_cap_major=9,
                compute_cap_minor=4)
    assert _environment(b) == RunEnvironment(["mi300"], "AMD GPU - gfx942", 1)


@pytest.mark.parametrize(("stats", "expected"), [
    ({"device_vendor": "AMD", "compute_cap_major": 9, "compute_cap_minor": 5},
     "AMD GPU - gfx950"),
    ({"device_vendor": "AMD", "compute_cap_major": 9, "compute_cap_minor": 0,
      "gpu_device_name": "gfx90a"}, "AMD GPU - gfx90a"),  # the agent's own name wins
    ({"device_vendor": "AMD", "compute_cap_major": 9}, "AMD GPU (gfx 9.0)"),  # stepping unknown
    ({"device_vendor": "AMD"}, "AMD GPU"),
    ({"gpu_model": "NVIDIA A100-SXM4-40GB", "compute_cap_major": 8}, "NVIDIA A100-SXM4-40GB"),
    ({"compute_cap_major": 7, "compute_cap_minor": 0}, "NVIDIA GPU (compute capability 7.0)"),
    ({"device_vendor": "Nvidia", "compute_cap_major": 9, "compute_cap_minor": 0},
     "NVIDIA GPU (compute capability 9.0)"),
    ({}, "GPU"),
])
def test_gpu_names(stats: dict[str, object], expected: str) -> None:
    assert device_type_name("/device:GPU:3", stats) == expected


def test_tpu_and_other_planes() -> None:
    assert device_type_name("/device:TPU:0", {"device_type_string": "TPU v6 Lite"}) == (
        "TPU v6 Lite")
    assert device_type_name("/device:TPU:0", {}) == "TPU"
    assert device_type_name("/host:CPU", {}) == "CPU"
    assert device_type_name(MEGASCALE, {}) == ""


def test_eight_gpus_and_a_megascale_trace_are_eight_devices() -> None:
    b = XSpaceBuilder(hostnames=["node0"])
    for ordinal in range(8):
        stats_plane(b, f"/device:GPU:{ordinal}", ordinal + 1, device_vendor="AMD",
                    compute_cap_major=9, compute_cap_minor=5)
    stats_plane(b, MEGASCALE, 100)
    assert _environment(b) == RunEnvironment(["node0"], "AMD GPU - gfx950", 8)


def test_tpu_host_uses_the_device_type_string() -> None:
    b = XSpaceBuilder(hostnames=["tpu-vm"])
    for ordinal in range(4):
        stats_plane(b, f"/device:TPU:{ordinal}", ordinal + 1, device_type_string="TPU v6 Lite",
                    peak_teraflops_per_second=918.0)
    assert _environment(b) == RunEnvironment(["tpu-vm"], "TPU v6 Lite", 4)


def test_nvidia_model_and_cpu_only() -> None:
    b = XSpaceBuilder(hostnames=["gpu-host"])
    b.gpu_plane(0, model="NVIDIA A100-SXM4-40GB")
    assert _environment(b) == RunEnvironment(["gpu-host"], "NVIDIA A100-SXM4-40GB", 1)
    assert _environment(XSpaceBuilder(hostnames=["cpu"])) == RunEnvironment(["cpu"], "CPU", 0)


def test_a_custom_plane_alone_is_no_device_for_the_views() -> None:
    b = XSpaceBuilder()
    b.plane("/host:CPU").line("python").event("train", 0, 10, _r=1)
    stats_plane(b, MEGASCALE, 100)
    facts = registry.RunFacts.of({"h": decode_xspace(b.serialize())})
    assert (facts.has_device_planes, facts.has_gpu_planes) == (False, False)
    stats_plane(b, "/device:GPU:0", 1, device_vendor="AMD")
    facts = registry.RunFacts.of({"h": decode_xspace(b.serialize())})
    assert (facts.has_device_planes, facts.has_gpu_planes) == (True, True)
    assert "kernel_stats" in registry.views_for(facts)
