"""Numbers that cannot be (issue 29 item 7), on the documents where they live.

A TPU layout (as JAX on a TPU v6 Lite writes it; tests/browser/test_numbers_that_can_be.py
serves the same): the ops name their program by an int64 id (negative) and the "XLA Modules"
line names each execution `jit_train_step(<id as uint64>)`; the `copy-start` is timed 2 ps on
the device and accesses 16 MiB. Before: module "-5829104365772113" and 8.4e9 GB/s. AMD kernels
(jax_gpu_conv, ROCm tracer): registers and occupancy were 0 on every row.
"""

from __future__ import annotations

import pytest

from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.browser.test_numbers_that_can_be import PROGRAM_ID, US, _tpu_layout
from tests.fixtures import DATA_DIR, build_view


def _doc(view: str, **params: str) -> dict:
    request = registry.ViewRequest("r", "tpu-vm", {"tpu-vm": decode_xspace(_tpu_layout())},
                                   params)
    return registry.VIEWS[view].build(request)


def test_copy_start_has_no_rate_and_the_fusion_has_its_own() -> None:
    rows = {r["op_name"]: r for r in _doc("tensorflow_stats", include_idle="false")["rows"]}
    start = rows["copy-start.1"]
    assert start["memory_bandwidth_gb_per_s"] is None  # the issue, not the transfer
    fusion = rows["jit(train_step)/add"]
    # bytes and FLOPs of its 3 runs over its 3 × 30 µs (GB/s = bytes/ps × 1e3)
    assert fusion["memory_bandwidth_gb_per_s"] == pytest.approx(3 * 4.0e6 / (90 * US) * 1e3)
    assert fusion["flop_rate_gflops_per_s"] == pytest.approx(3 * 2.0e6 / (90 * US) * 1e3)
    # copy-done: 16 MiB per wait of 965 µs, a rate that can be
    assert rows["copy-done.1"]["memory_bandwidth_gb_per_s"] == pytest.approx(
        3 * 16 * 2**20 / (3 * 965 * US) * 1e3)
    overview = {r["name"]: r for r in _doc("overview_page")["top_device_ops"]}
    assert overview["copy-start.1"]["memory_bandwidth_gb_per_s"] is None


def test_ops_name_their_module_not_the_program_id() -> None:
    assert str(PROGRAM_ID) != "jit_train_step"
    device = [r for r in _doc("tensorflow_stats", include_idle="false")["rows"]
              if r["host_or_device"] == "Device"]
    assert {r["module"] for r in device} == {"jit_train_step"}
    assert {r["module"] for r in _doc("overview_page")["top_device_ops"]} == {"jit_train_step"}


@pytest.mark.parametrize("capture", ["jax_gpu_conv", "jax_gpu_attention"])
def test_amd_kernels_unknown_figures_are_null(capture: str) -> None:
    [path] = sorted((DATA_DIR / capture).glob("**/*.xplane.pb"))
    rows = build_view("kernel_stats", path)["rows"]
    assert rows
    for row in rows:
        assert row["registers_per_thread"] is None and row["occupancy_percent"] is None
        assert row["static_shared_memory_bytes"] is None
        assert row["dynamic_shared_memory_bytes"] is None
        assert isinstance(row["shared_memory_bytes"], int)  # group_mem: written, kept


def test_nvidia_kernels_keep_their_figures() -> None:
    [path] = sorted((DATA_DIR / "jax_nvidia_train").glob("**/*.xplane.pb"))
    rows = build_view("kernel_stats", path)["rows"]
    assert all(isinstance(r["registers_per_thread"], int) and r["occupancy_percent"] > 0
               for r in rows)


def test_tensorflow_stats_route_keeps_idle_by_default() -> None:
    """The page starts without IDLE (frontend registry.ts); the route, the CSV and the CLI
    keep their documented default (docs/api.md)."""
    [path] = sorted((DATA_DIR / "tfdata_slow").glob("**/*.xplane.pb"))
    doc = build_view("tensorflow_stats", path)
    assert doc["include_idle"] is True
    assert any(r["op_name"] == "IDLE" for r in doc["rows"])
    busy = build_view("tensorflow_stats", path, include_idle="false")
    assert not any(r["op_name"] == "IDLE" for r in busy["rows"])
    assert sum(r["self_time_fraction"] for r in busy["rows"]
               if r["host_or_device"] == "Host") == pytest.approx(1.0)
