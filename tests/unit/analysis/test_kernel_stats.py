"""Kernel stats on a synthetic GPU profile: grouping, launch shape, Tensor Cores, timing."""

from __future__ import annotations

import pytest

from tb_profile_plugin.analysis.ops.kernel_stats import (
    op_tensor_core_eligible,
    parse_kernel_details,
    uses_tensor_core,
)
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import XSpaceBuilder, kernel_details


def _doc(builder: XSpaceBuilder) -> dict:
    profile = decode_xspace(builder.serialize())
    return registry.VIEWS["kernel_stats"].build(registry.ViewRequest("r", "h", {"h": profile}, {}))


def test_parse_details_and_patterns() -> None:
    d = parse_kernel_details(
        "regs:64 static_shared:1024 dynamic_shared:512 grid:8,4 block:256,1,1 occ_pct:37.5"
    )
    assert (d.registers_per_thread, d.static_shared_bytes, d.dynamic_shared_bytes) == (
        64,
        1024,
        512,
    )
    assert d.grid == (8, 4, 1) and d.block == (256, 1, 1) and d.occupancy_percent == 37.5
    assert uses_tensor_core("volta_h884gemm_64x64_ldg8_nn")
    assert not uses_tensor_core("volta_sgemm_128x64_nn")
    assert op_tensor_core_eligible("dense/MatMul:MatMul")
    assert op_tensor_core_eligible("conv/Conv2D:Conv2D")
    assert not op_tensor_core_eligible("relu/Relu:Relu")


def test_rows_grouped_per_kernel_and_op_sorted_by_total() -> None:
    b = XSpaceBuilder()
    s = b.gpu_plane(0).line("Stream #1", line_id=1)
    big = kernel_details(
        registers_per_thread=64,
        static_shared_bytes=1024,
        dynamic_shared_bytes=512,
        grid=(8, 4, 1),
        block=(256, 1, 1),
        occupancy_percent=37.5,
    )
    s.kernel("volta_h884gemm", 0, 10_000_000, 1, details=big, tf_op="dense/MatMul:MatMul")
    s.kernel("volta_h884gemm", 20_000_000, 30_000_000, 2, details=big, tf_op="dense/MatMul:MatMul")
    s.kernel("volta_h884gemm", 60_000_000, 5_000_000, 3, details=big, tf_op="d2/MatMul:MatMul")
    s.kernel("relu_kernel", 70_000_000, 1_000_000, 4, tf_op="relu/Relu:Relu")
    s.memcpy("HtoD", 80_000_000, 2_000_000, 5, num_bytes=8)  # no kernel_details: not a row
    doc = _doc(b)
    assert doc["num_rows"] == 3
    first = dict(doc["rows"][0])
    # Launch shapes exactly (approx refuses sequences inside a mapping), the rest approx.
    assert first.pop("block_dim") == [256, 1, 1]
    assert first.pop("grid_dim") == [8, 4, 1]
    assert first == pytest.approx(
        {
            "rank": 1,
            "kernel_name": "volta_h884gemm",
            "registers_per_thread": 64,
            "shared_memory_bytes": 1536,
            "static_shared_memory_bytes": 1024,
            "dynamic_shared_memory_bytes": 512,
            "occupancy_percent": 37.5,
            "op_tensor_core_eligible": True,
            "uses_tensor_core": True,
            "op_name": "dense/MatMul:MatMul",
            "hlo_op": "",
            "occurrences": 2,
            "total_duration_us": 40.0,
            "avg_duration_us": 20.0,
            "min_duration_us": 10.0,
            "max_duration_us": 30.0,
        }
    )
    assert [r["op_name"] for r in doc["rows"]] == [
        "dense/MatMul:MatMul",
        "d2/MatMul:MatMul",
        "relu/Relu:Relu",
    ]
    relu = doc["rows"][2]
    assert relu["uses_tensor_core"] is False and relu["op_tensor_core_eligible"] is False


def test_gpu_without_kernels_says_why() -> None:
    b = XSpaceBuilder()
    b.plane("/host:CPU").line("python").event("train", 0, 10, _r=1)
    b.gpu_plane(0).line("Stream #1")
    doc = _doc(b)
    assert doc["rows"] == [] and "CUPTI" in doc["diagnostics"]["warnings"][0]


def test_cpu_only_profile_offers_no_kernel_stats() -> None:
    b = XSpaceBuilder()
    b.plane("/host:CPU").line("python").event("train", 0, 10, _r=1)
    facts = registry.RunFacts.of({"h": decode_xspace(b.serialize())})
    assert "kernel_stats" not in registry.views_for(facts)


def test_tensorflow_stats_on_gpu_has_tensor_core_share_and_all_hosts_sum() -> None:
    from tests.unit.analysis.test_gpu_step_breakdown import gpu_profile

    profile = decode_xspace(gpu_profile())
    one = registry.VIEWS["tensorflow_stats"].build(
        registry.ViewRequest("r", "h", {"h": profile}, {"include_idle": "false"}))
    device = {r["op_name"]: r for r in one["rows"] if r["host_or_device"] == "Device"}
    assert device["dense/MatMul"]["total_self_time_us"] == pytest.approx(20.0)
    assert device["dense/MatMul"]["gpu_tensor_core_utilization"] == 1.0  # s884: Tensor Cores
    assert device["dense_1/MatMul"]["gpu_tensor_core_utilization"] == 0.0  # sgemm
    both = registry.VIEWS["tensorflow_stats"].build(registry.ViewRequest(
        "r", "ALL_HOSTS", {"a": profile, "b": decode_xspace(gpu_profile())}, {}))
    summed = {r["op_name"]: r for r in both["rows"] if r["host_or_device"] == "Device"}
    assert summed["dense/MatMul"]["total_self_time_us"] == pytest.approx(40.0)
    assert summed["dense/MatMul"]["occurrences"] == 2 * device["dense/MatMul"]["occurrences"]
    assert both["host_count"] == 2


def test_same_kernel_with_other_grid_is_another_row() -> None:
    b = XSpaceBuilder()
    s = b.gpu_plane(0).line("Stream #1", line_id=1)
    small = kernel_details(grid=(1, 1, 1), block=(128, 1, 1))
    large = kernel_details(grid=(64, 1, 1), block=(128, 1, 1))
    for i in range(3):
        s.kernel("volta_sgemm", i * 100, 10, i, details=small, tf_op="fc/MatMul:MatMul")
    s.kernel("volta_sgemm", 1000, 50, 9, details=large, tf_op="fc/MatMul:MatMul")
    rows = _doc(b)["rows"]
    assert [(r["grid_dim"], r["occurrences"], r["total_duration_us"]) for r in rows] == [
        ([64, 1, 1], 1, 50e-6), ([1, 1, 1], 3, 30e-6)]
    assert all(r["op_tensor_core_eligible"] and not r["uses_tensor_core"] for r in rows)
