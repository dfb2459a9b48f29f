"""Memory snapshots, peak and breakdown on a hand-computed synthetic profile.

The profile and the hand-computed figures these tests check are laid out in
tests/memory_builder.py (allocator GPU_0_bfc over two steps, plus a `cpu` allocator).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from tb_profile_plugin.analysis.memory.peak import find_peak
from tb_profile_plugin.analysis.memory.snapshots import build_memory_snapshots, data_type_name
from tb_profile_plugin.errors import BadRequest, NotFound
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.memory_builder import CAPACITY, EVENTS, STACK, US, memory_profile_bytes
from tests.xspace_builder import XSpaceBuilder


def build_doc(data: bytes, **params: str) -> dict[str, Any]:
    profile = decode_xspace(data)
    request = registry.ViewRequest("run", "mem", {"mem": profile}, params)
    return registry.VIEWS["memory_profile"].build(request)


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return build_doc(memory_profile_bytes())


def test_snapshots_are_sorted_with_inherited_metadata_and_steps() -> None:
    snapshots = build_memory_snapshots(decode_xspace(memory_profile_bytes()))
    assert snapshots.memory_ids == ["GPU_0_bfc", "cpu"]
    s = snapshots.allocators["GPU_0_bfc"]
    assert (s.time_ps == np.array([e[0] for e in EVENTS]) * US).all()
    ops = [s.text(int(c)) for c in s.op]
    assert ops == ["dense/MatMul", "conv/Conv2D", "dense/MatMul", "", "relu/Relu", "relu/Relu",
                   "softmax", "relu/Relu", "conv/Conv2D", "softmax"]
    assert [data_type_name(int(c)) for c in s.data_type][7:] == ["float", "half", "float"]
    assert s.text(int(s.shape[8])) == "[8,8,32]" and s.text(int(s.region_type[8])) == "temp"
    assert s.data_type[3] == 0 and s.text(int(s.op[3])) == ""  # nothing to inherit from
    assert s.inherited.tolist() == [False, False, True, False, False, False, False, True, True,
                                    True]
    assert s.step_id.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1, 2]
    assert math.isnan(s.fragmentation[3]) and s.fragmentation[6] == pytest.approx(0.4)
    # The other allocator: outside every step, so step "last valid + 1" = 0.
    assert snapshots.allocators["cpu"].step_id.tolist() == [0]


def test_summary_and_peak(doc: dict[str, Any]) -> None:
    assert doc["memory_ids"] == ["GPU_0_bfc", "cpu"] and doc["memory_id"] == "GPU_0_bfc"
    summary = doc["summary"]
    assert summary["num_allocations"] == 5 and summary["num_deallocations"] == 5
    assert summary["memory_capacity_bytes"] == CAPACITY
    assert summary["peak_heap_usage_lifetime_bytes"] == 9000
    assert summary["peak"] == {
        "time_ms": 0.13, "time_ps": 130 * US, "stack_bytes": STACK, "heap_bytes": 8656,
        "free_bytes": 1244, "in_use_bytes": 8756, "fragmentation_percent": pytest.approx(40.0),
        "step_id": 1, "step": 2,  # group 1 is the `train` marker with step_num 2
    }
    assert any("lifetime (9000 bytes)" in text for text in doc["diagnostics"]["info"])
    assert any("1 deallocation(s)" in text for text in doc["diagnostics"]["info"])


def test_breakdown_at_the_peak(doc: dict[str, Any]) -> None:
    rows = [(r["op_name"], r["allocation_bytes"], r["requested_bytes"], r["occurrences"],
             r["region_type"], r["data_type"], r["shape"], r["kind"]) for r in doc["breakdown"]]
    assert rows == [
        ("conv/Conv2D", 4096, 4000, 1, "temp", "half", "[8,8,32]", "tensor"),
        ("softmax", 2048, 2000, 1, "temp", "float", "[512]", "tensor"),
        ("allocated before the profile", 1488, 1488, 1, "", "", "", "unattributed"),
        ("relu/Relu", 512, 512, 2, "output", "float", "[128]", "tensor"),
        ("stack", STACK, STACK, 1, "", "", "", "stack"),
    ]
    assert doc["unattributed_bytes"] == 1488
    total = sum(r["allocation_bytes"] * r["occurrences"] for r in doc["breakdown"])
    assert total == doc["summary"]["peak"]["in_use_bytes"]


def test_timeline_has_every_snapshot_with_details(doc: dict[str, Any]) -> None:
    timeline = doc["timeline"]
    assert len(timeline) == 10 and doc["timeline_total_points"] == 10
    assert doc["timeline_sampled"] is False and doc["peak_timeline_index"] == 6
    dealloc = timeline[8]
    assert dealloc == {
        "index": 8, "time_ms": 0.15, "stack_bytes": STACK, "heap_bytes": 4048,
        "free_bytes": 5852, "fragmentation_percent": pytest.approx(20.0),
        "event": "deallocation", "requested_bytes": 4000, "allocation_bytes": 4096,
        "address": 0x2000, "tf_op": "conv/Conv2D", "step_id": 1, "step": 2, "region_type": "temp",
        "data_type": "half", "tensor_shape": "[8,8,32]", "inherited": True,
    }
    assert timeline[3]["fragmentation_percent"] is None
    assert doc["full_timespan_ms"] == [0.01, 0.25]


def test_zoomed_range_and_other_allocator() -> None:
    data = memory_profile_bytes()
    zoomed = build_doc(data, start_time_ms="0.1", end_time_ms="0.14")
    assert [p["index"] for p in zoomed["timeline"]] == [4, 5, 6, 7]
    assert zoomed["timeline_range_ms"] == [0.1, 0.14] and zoomed["peak_timeline_index"] == 2
    assert zoomed["summary"]["peak"]["time_ps"] == 130 * US  # the summary is not zoomed
    before = build_doc(data, end_time_ms="0.05")
    assert before["peak_timeline_index"] is None and len(before["timeline"]) == 4
    cpu = build_doc(data, memory_id="cpu")
    assert cpu["memory_id"] == "cpu" and cpu["summary"]["peak"]["heap_bytes"] == 64
    assert [r["op_name"] for r in cpu["breakdown"]] == ["Const"]
    assert cpu["breakdown"][0]["data_type"] == "int32"


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"memory_id": "GPU_9_bfc"}, NotFound),
        ({"start_time_ms": "soon"}, BadRequest),
        ({"end_time_ms": "nan"}, BadRequest),
        ({"start_time_ms": "2", "end_time_ms": "1"}, BadRequest),
    ],
)
def test_bad_parameters(params: dict[str, str], error: type[Exception]) -> None:
    with pytest.raises(error):
        build_doc(memory_profile_bytes(), **params)


def test_profile_without_allocator_events_explains() -> None:
    doc = build_doc(memory_profile_bytes(with_memory=False))
    assert doc["memory_ids"] == [] and doc["timeline"] == [] and doc["summary"] is None
    (warning,) = doc["diagnostics"]["warnings"]
    assert "MemoryAllocation" in warning and "host_tracer_level=2" in warning
    facts = registry.RunFacts.of({"mem": decode_xspace(memory_profile_bytes(False))})
    assert "memory_profile" in registry.views_for(facts)


def test_peak_tie_goes_to_the_last_in_file_order() -> None:
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    first, second = cpu.line("a", line_id=1), cpu.line("b", line_id=2)
    common = {"allocator_name": "x", "bytes_reserved": 0, "bytes_available": 10,
              "requested_bytes": 8, "allocation_bytes": 8}
    # Equal heaps: at 5 µs on line b (later in the file), at 9 µs on line a.
    first.event("MemoryAllocation", 9 * US, addr=1, bytes_allocated=8, **common)
    second.event("MemoryAllocation", 5 * US, addr=2, bytes_allocated=8, **common)
    s = build_memory_snapshots(decode_xspace(b.serialize())).allocators["x"]
    assert s.time_ps[find_peak(s).index] == 5 * US
