"""The Kineto decoder on synthetic traces in PyTorch's real layouts (tests/kineto_builder.py,
copied event by event from real 2.x and 2021 traces): exact counts, joins, steps, memory
events, variants and errors (docs/pytorch.md)."""

from __future__ import annotations

import gzip
import json
import time

import numpy as np
import orjson
import pytest

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.memory.snapshots import build_memory_snapshots
from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.xspace.kineto import MAX_BYTES_ENV, decode_kineto
from tb_profile_plugin.xspace.model import Line, Plane, Profile
from tb_profile_plugin.xspace.producers import (
    Framework,
    LineKind,
    detect_framework,
    kind_of,
    pytorch_facts,
)
from tests.kineto_builder import BASE_TS, KinetoTrace, gpu_training_step_trace
from tests.unit.xspace.kineto.slices import small_slices


def _decode(trace: KinetoTrace | dict) -> Profile:
    doc = trace.to_dict() if isinstance(trace, KinetoTrace) else trace
    return decode_kineto(orjson.dumps(doc))


def _events(plane: Plane, line: Line) -> list[tuple[str, int, int, dict[str, object]]]:
    """(name, start µs, duration µs, stats by name) of every event of a line, in order."""
    rows = plane.event_metadata.rows_of(line.events.metadata_id)
    stats: list[dict[str, object]] = [{} for _ in range(len(line.events))]
    every = line.stats.sparse(len(line.events))
    for j in range(len(every)):
        name = plane.stat_metadata.name_of(int(every.metadata_id[j]))
        stats[int(every.row[j])][name or ""] = every.python_value(j)
    return [(plane.event_metadata.names[int(r)], int(s) // 10**6, int(d) // 10**6, st)
            for r, s, d, st in zip(rows.tolist(), line.events.start_ps.tolist(),
                                   line.events.duration_ps.tolist(), stats, strict=True)]


def test_gpu_layout_planes_lines_and_counts() -> None:
    profile = _decode(gpu_training_step_trace("2.x", rank=1, world_size=2))
    assert [p.name for p in profile.planes] == ["/host:CPU", "/device:GPU:0"]
    host, gpu = profile.planes
    assert [(line.name, line.display_id, len(line.events)) for line in host.lines] == [
        ("thread 4242 (python)", 4242, 28)]
    assert [(line.name, len(line.events), kind_of(gpu, line)) for line in gpu.lines] == [
        ("Stream #7", 8, LineKind.STREAM), ("Stream #20", 2, LineKind.STREAM),
        ("GPU user annotations (Stream #7)", 2, LineKind.DERIVED),
        ("GPU user annotations (Stream #20)", 2, LineKind.DERIVED)]
    assert profile.warnings == [] and profile.errors == []
    assert profile.decoder == "kineto"
    # baseTimeNanoseconds + the first event (ProfilerStep#1 at 1000 µs after BASE_TS)
    assert profile.origin_ns == 1_700_000_000_000_000_000 + (int(BASE_TS) + 1000) * 1000


def test_kernels_carry_correlation_launching_op_and_details() -> None:
    profile = _decode(gpu_training_step_trace("2.x"))
    host, gpu = profile.planes
    stream7 = _events(gpu, gpu.lines[0])
    assert [(n[:14], s, d) for n, s, d, _ in stream7[:4]] == [
        ("Memcpy HtoD (P", 100, 20), ("sm90_xmma_gemm", 150, 300), ("Memset (Device", 460, 5),
        ("void at::nativ", 470, 30)]
    assert stream7[1][3]["tf_op"] == "aten::mm"
    assert stream7[1][3]["kernel_details"] == (
        "regs:168 shm:98304 grid:4,4,1 block:128,1,1 occ_pct:6")
    assert stream7[0][3]["tf_op"] == "aten::copy_"
    assert stream7[0][3]["memcpy_details"] == "size:4096"
    assert stream7[2][3]["tf_op"] == "aten::zero_"
    assert "correlation" not in stream7[1][3]  # renamed, not kept twice
    # the all-reduce kernel's External id is the nccl:all_reduce range: its op is the
    # innermost cpu_op holding the launch (record_param_comms)
    nccl = _events(gpu, gpu.lines[1])
    assert [e[3]["tf_op"] for e in nccl] == ["record_param_comms"] * 2
    # every device event's correlation_id is on exactly one host runtime call
    launches = {st["correlation_id"]: name for name, _, _, st in _events(host, host.lines[0])
                if "correlation_id" in st}
    device = [st["correlation_id"] for line in gpu.lines[:2]
              for _, _, _, st in _events(gpu, line)]
    assert sorted(device) == sorted(launches) == list(range(1001, 1011))
    assert launches[1001] == "cudaMemcpyAsync" and launches[1002] == "cudaLaunchKernel"


def test_steps_are_the_host_profiler_steps_never_doubled() -> None:
    profile = _decode(gpu_training_step_trace("2.x"))
    host = profile.planes[0]
    marked = [(n, st["_r"], st["step_num"]) for n, _, _, st in _events(host, host.lines[0])
              if "_r" in st]
    assert marked == [("ProfilerStep#1", 1, 1), ("ProfilerStep#2", 1, 2)]
    forest = profile_forest(profile)
    assert forest.num_groups == 2 and forest.step_num.tolist() == [1, 2]
    names = forest.table.names
    roots = [names[int(forest.table.name_id[r])] for r in forest.root_event.tolist()]
    assert roots == ["ProfilerStep#1", "ProfilerStep#2"]
    # the kernels join their step through correlation_id
    on_gpu = forest.table.on_device & (forest.group_id >= 0)
    assert int(np.count_nonzero(on_gpu)) == 10


def test_a_capture_without_profiler_steps_has_no_steps() -> None:
    trace = KinetoTrace()
    for k in range(3):
        ext = trace.user_annotation("inference", 1000.0 * k, 500.0)
        del ext
        trace.cpu_op("aten::mm", 1000.0 * k + 10, 100.0)
    profile = _decode(trace)
    assert profile_forest(profile).num_groups == 0


def test_memory_instants_become_allocator_events() -> None:
    profile = _decode(gpu_training_step_trace("2.x"))
    host = profile.planes[0]
    memory = [(n, s, st) for n, s, _, st in _events(host, host.lines[0]) if n.startswith("Mem")]
    assert [(n, s) for n, s, _ in memory] == [
        ("MemoryAllocation", 105), ("MemoryDeallocation", 850),
        ("MemoryAllocation", 1105), ("MemoryDeallocation", 1850)]
    first, freed = memory[0][2], memory[1][2]
    assert {k: first[k] for k in ("allocator_name", "bytes_allocated", "bytes_available",
                                  "peak_bytes_in_use", "requested_bytes", "addr", "tf_op")} == {
        "allocator_name": "cuda:0", "bytes_allocated": 4096, "bytes_available": 2097152 - 4096,
        "peak_bytes_in_use": 4096, "requested_bytes": 4096, "addr": 0x7F0000001000,
        "tf_op": "aten::mm"}
    assert freed["bytes_allocated"] == 0 and freed["peak_bytes_in_use"] == 4096
    assert "tf_op" not in freed  # freed outside every op (between ops of the step)
    snapshots = build_memory_snapshots(profile)
    assert snapshots.memory_ids == ["cuda:0"]
    cuda = snapshots.allocators["cuda:0"]
    assert cuda.heap_bytes.tolist() == [4096, 0, 4096, 0]
    assert cuda.free_bytes.tolist() == [2093056, 2097152, 2093056, 2097152]
    assert cuda.step_id.tolist() == [0, 0, 1, 1]


def test_plane_stats_framework_and_facts() -> None:
    profile = _decode(gpu_training_step_trace("2.x", rank=1, world_size=2))
    gpu = profile.planes[1].stat_values()
    assert (gpu["gpu_device_name"], gpu["core_count"], gpu["memory_size"],
            gpu["compute_cap_major"], gpu["device_vendor"]) == (
        "NVIDIA H100 80GB HBM3", 132, 84929216512, 9, "Nvidia")
    assert detect_framework(profile).framework == Framework.PYTORCH
    facts = pytorch_facts(profile)
    assert (facts.rank, facts.world_size, facts.backend, facts.nccl_version, facts.devices) == (
        1, 2, "nccl", "2.21.5", ("NVIDIA H100 80GB HBM3",))


def test_2021_layout() -> None:
    """Operator/Runtime/Kernel categories, integer µs, string tids, `external id`, no
    totals on [memory] (the running sum stands in), ProfilerStep#N as an Operator."""
    profile = _decode(gpu_training_step_trace("2021"))
    host, gpu = profile.planes
    assert [(line.name, len(line.events)) for line in host.lines] == [
        ("thread 4242 (python)", 22)]  # "4242" on spans and 4242 on instants: one thread
    assert [(line.name, len(line.events)) for line in gpu.lines] == [("Stream #7", 8)]
    stream = _events(gpu, gpu.lines[0])
    assert [st["tf_op"] for _, _, _, st in stream[:4]] == [
        "aten::copy_", "aten::mm", "aten::zero_", "aten::add_"]
    events = _events(host, host.lines[0])
    memory = [st for n, _, _, st in events if n.startswith("Mem")]
    assert [m["bytes_allocated"] for m in memory] == [4096, 0, 4096, 0]
    assert memory[1].get("tf_op") is None  # a ProfilerStep (an Operator) is never an op
    assert profile_forest(profile).step_num.tolist() == [1, 2]


def test_times_integer_fractional_and_display_unit() -> None:
    doc = {"displayTimeUnit": "ns", "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
        {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 20.123,
         "dur": 0.0015},
    ]}
    line = _decode(doc).planes[0].lines[0]
    assert line.events.start_ps.tolist() == [0, 10_123_000]
    assert line.events.duration_ps.tolist() == [5_000_000, 2_000]  # rounded to the ns


def test_dropped_events_are_counted() -> None:
    doc = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "bad ts", "pid": 1, "tid": 1, "ts": "x", "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "neg", "pid": 1, "tid": 1, "ts": 2, "dur": -3},
        {"ph": "B", "name": "begin", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
         "tid": "PyTorch Profiler", "ts": 0, "dur": 9},
        {"ph": "i", "s": "g", "name": "Iteration Start: PyTorch Profiler", "pid": "Traces",
         "tid": "Trace PyTorch Profiler", "ts": 0},
        7,
    ]}
    profile = _decode(doc)
    assert profile.num_events == 1
    assert sorted(profile.warnings) == sorted([
        "1 entries of traceEvents that are not objects were dropped",
        "2 events without a numeric ts were dropped",
        "1 spans of negative duration were dropped",
        "1 events of phase 'B', which are not read were dropped",
    ])


def test_fwdbwd_flows_bind_producer_and_consumer() -> None:
    doc = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10,
         "dur": 5},
        {"ph": "X", "cat": "cpu_op", "name": "MmBackward0", "pid": 1, "tid": 2, "ts": 50,
         "dur": 9},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 51,
         "dur": 2},
        {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 10, "cat": "fwdbwd", "name": "fwdbwd"},
        {"ph": "f", "id": 7, "pid": 1, "tid": 2, "ts": 50, "cat": "fwdbwd", "name": "fwdbwd",
         "bp": "e"},
    ]}
    host = _decode(doc).planes[0]
    first, second = (_events(host, line) for line in host.lines)
    assert first[0][3] == {"_pt": 1, "_p": 7}
    assert second[0][0] == "MmBackward0" and second[0][3] == {"_ct": 1, "_c": 7}
    assert second[1][3] == {}


def test_flow_points_far_out_of_range_bind_to_no_event() -> None:
    doc = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10,
         "dur": 5},
        {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 1e300, "cat": "fwdbwd", "name": "fwdbwd"},
        {"ph": "f", "id": 7, "pid": 1, "tid": 1, "ts": -1e300, "cat": "fwdbwd",
         "name": "fwdbwd", "bp": "e"},
    ]}
    with np.errstate(invalid="raise"):  # no cast of an out-of-range float
        host = _decode(doc).planes[0]
    assert [event[3] for event in _events(host, host.lines[0])] == [{}]


def test_gzip_by_magic_and_errors() -> None:
    raw = orjson.dumps(gpu_training_step_trace("2.x").to_dict())
    assert _decode(gpu_training_step_trace("2.x")).num_events == decode_kineto(
        gzip.compress(raw)).num_events
    with pytest.raises(UnreadableProfile, match="gzip stream is truncated"):
        decode_kineto(gzip.compress(raw)[: len(raw) // 40])
    with pytest.raises(UnreadableProfile, match="not valid JSON"):
        decode_kineto(raw[: len(raw) // 2])
    with pytest.raises(UnreadableProfile, match="no 'traceEvents' list"):
        decode_kineto(b'{"schemaVersion": 1}')
    with pytest.raises(UnreadableProfile, match="not a trace object"):
        decode_kineto(b'"text"')
    with pytest.raises(UnreadableProfile, match="empty"):
        decode_kineto(b"")
    assert decode_kineto(b'[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, '
                         b'"dur": 1}]').num_events == 1


def test_size_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = orjson.dumps(gpu_training_step_trace("2.x").to_dict())
    monkeypatch.setenv(MAX_BYTES_ENV, str(len(raw) - 1))
    with pytest.raises(UnreadableProfile, match=MAX_BYTES_ENV):
        decode_kineto(raw)
    with pytest.raises(UnreadableProfile, match="inflates to more than"):
        decode_kineto(gzip.compress(raw))
    monkeypatch.setenv(MAX_BYTES_ENV, str(len(raw)))
    assert decode_kineto(gzip.compress(raw)).num_events > 0


def test_far_apart_times_are_refused() -> None:
    doc = {"traceEvents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1e300, "dur": 1}]}
    with pytest.raises(UnreadableProfile, match="days apart"):
        _decode(doc)


def test_many_identical_nested_spans_decode_in_linear_time() -> None:
    """200,000 spans of one name at one time on one thread (each nested in the one before),
    with a [memory] instant and a flow at that time: sorts only, no quadratic walk."""
    n = 200_000
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1,
               "ts": 5.0, "dur": 10.0}] * n
    events = [*events, {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                        "pid": 1, "tid": 1, "ts": 6.0, "args": {"Bytes": 8, "Device Type": 0,
                                                                "Device Id": -1}}]
    began = time.perf_counter()
    profile = _decode({"traceEvents": events})
    elapsed = time.perf_counter() - began
    assert profile.num_events == n + 1
    assert elapsed < 20, elapsed
    host = profile.planes[0]
    memory = [st for name, _, _, st in _events(host, host.lines[0])[-3:]
              if name == "MemoryAllocation"]
    assert memory and memory[0]["tf_op"] == "aten::empty"


def _columns(profile: Profile) -> list[tuple[str, str, list[int], list[int], list[str], bytes]]:
    out = []
    for plane in profile.planes:
        for line in plane.lines:
            names = plane.event_metadata.names
            rows = plane.event_metadata.rows_of(line.events.metadata_id)
            every = line.stats.sparse(len(line.events))
            out.append((plane.name, line.name, line.events.start_ps.tolist(),
                        line.events.duration_ps.tolist(), [names[int(r)] for r in rows],
                        orjson.dumps([every.python_value(j) for j in range(len(every))]
                                     if len(every) < 5000 else len(every))))
    return out


@pytest.mark.parametrize("variant", ["2.x", "2021"])
def test_events_parsed_in_slices_decode_the_same(monkeypatch: pytest.MonkeyPatch,
                                                  variant: str) -> None:
    """A text over split.SLICE_BYTES is parsed a slice of events at a time (split.py): the
    profile is the same as from one parse, whatever the slice size."""
    from tb_profile_plugin.xspace.kineto import split

    trace = gpu_training_step_trace(variant)
    trace.events.append({"ph": "X", "cat": "cpu_op", "name": 'a "quoted" \\ [name], {x}',
                         "pid": 4242, "tid": 4242, "ts": trace._ts(5000), "dur": 1,
                         "args": {"Input Dims": [[1, 2], []], "s": "\\\\\"],"}})
    raw = json.dumps(trace.to_dict(), indent=1).encode()
    whole = decode_kineto(raw)
    found = split.event_slices(raw, 1000)
    assert found is not None and len(found[2]) > 10
    for size, window in ((1, 1 << 22), (1000, 5), (7919, 64), (7919, 1)):
        small_slices(monkeypatch, size, window)  # escapes and strings across windows
        sliced = decode_kineto(raw)
        assert _columns(sliced) == _columns(whole), (size, window)
        assert sliced.warnings == whole.warnings
        assert [p.stat_values() for p in sliced.planes] == [p.stat_values() for p in whole.planes]


def test_a_text_that_is_not_one_object_is_parsed_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from tb_profile_plugin.xspace.kineto import split

    monkeypatch.setattr(split, "SLICE_BYTES", 10)
    events = b'[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]'
    assert decode_kineto(events).num_events == 1
    assert split.event_slices(b'{"traceEvents": [1, 2', 10) is None
    with pytest.raises(UnreadableProfile, match="not valid JSON"):
        decode_kineto(b'{"traceEvents": [{"ph": "X"}, {"ph": ]}')


def test_string_pids_and_tids_and_ids_from_them() -> None:
    """2021: `"pid": "4242"` and `"tid": "stream 7"`; a device event without `device` and
    `stream` args takes its GPU from the pid and its stream from the tid's number."""
    doc = {"traceEvents": [
        {"ph": "M", "name": "thread_name", "pid": "4242", "tid": "4243",
         "args": {"name": "worker"}},
        {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": "4242", "tid": "4243",
         "ts": 10, "dur": 5, "args": {"External id": 3}},
        {"ph": "X", "cat": "Kernel", "name": "gemm", "pid": "1", "tid": "stream 7",
         "ts": 12, "dur": 5, "args": {"external id": 3}},
        {"ph": "i", "name": "[memory]", "pid": 4242, "tid": 4243, "ts": 11,
         "args": {"Bytes": -1, "Device Type": 1, "Device Id": 1}},
    ]}
    profile = _decode(doc)
    assert [p.name for p in profile.planes] == ["/host:CPU", "/device:GPU:1"]
    host, gpu = profile.planes
    assert [(line.name, line.display_id, len(line.events)) for line in host.lines] == [
        ("worker", 4243, 2)]
    assert [(line.name, line.id) for line in gpu.lines] == [("Stream #7", 7)]
    assert _events(gpu, gpu.lines[0])[0][3]["tf_op"] == "aten::mm"
    freed = _events(host, host.lines[0])[1]
    assert freed[0] == "MemoryDeallocation" and freed[3]["requested_bytes"] == 1
    assert freed[3]["allocator_name"] == "cuda:1" and freed[3]["tf_op"] == "aten::mm"
