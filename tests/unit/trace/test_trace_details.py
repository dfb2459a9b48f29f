"""Trace details, flows, search and derived GPU tracks on synthetic XSpaces."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.errors import BadRequest, NotFound
from tb_profile_plugin.trace.details import MAX_STATS_SHOWN, event_details, search
from tb_profile_plugin.trace.window import TraceSet, trace_set, visible_events
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import Uint, XSpaceBuilder

US = 1_000_000


def gpu_trace() -> TraceSet:
    b = XSpaceBuilder()
    gpu = b.gpu_plane(0)
    stream = gpu.line("Stream #12(Compute)", line_id=12)
    cpu = b.plane("/host:CPU")
    py = cpu.line("python", line_id=1)
    worker = cpu.line("tf_data_iterator_resource/3", line_id=3)
    py.event("train", 0, 100 * US, step_num=5, _r=1)
    py.event("cudaLaunchKernel", 10 * US, 1 * US, correlation_id=Uint(7))
    py.event("cudaLaunchKernel", 12 * US, 1 * US, correlation_id=Uint(8))
    py.event("cudaLaunchKernel", 14 * US, 1 * US, correlation_id=Uint(9))
    py.event("IteratorGetNext", 20 * US, 5 * US, display_name="Iterator get next (long)",
             _ct=3, _c=42)
    worker.event("Iterator::Root::Prefetch", 2 * US, 4 * US, _pt=3, _p=42, shape="[8,4]",
                 raw=b"\x00\x01")
    worker.event("PrefetchProduce", 7 * US, 1 * US, element_id=77)
    py.event("PrefetchConsume", 26 * US, 1 * US, element_id=77)
    stream.kernel("gemm_a", 30 * US, 5 * US, 7, tf_op="dense/MatMul:MatMul")
    stream.kernel("gemm_b", 36 * US, 5 * US, 8, tf_op="dense/MatMul:MatMul")
    stream.kernel("relu", 42 * US, 2 * US, 9, tf_op="Relu:Relu")
    return trace_set({"h": decode_xspace(b.serialize())})


def find(trace: TraceSet, name: str, thread: str | None = None) -> int:
    index = trace.hosts[0].index
    for i in range(len(index)):
        if index.names[int(index.name_id[i])] == name:
            track = index.tracks[int(index.track_of(np.array([i]))[0])]
            if thread is None or track.name == thread:
                return i
    raise AssertionError(name)


def test_gpu_tracks_derived_and_ordered() -> None:
    trace = gpu_trace()
    index = trace.hosts[0].index
    assert [p.name for p in index.processes] == ["/device:GPU:0", "/host:CPU"]
    gpu, host = index.processes
    assert [t.name for t in gpu.threads] == ["Steps", "Steps: device busy", "TensorFlow Ops",
                                             "Stream #12(Compute)"]
    assert [t.name for t in host.threads] == ["python", "tf_data_iterator_resource/3"]
    assert index.num_derived_events == 4
    ids = visible_events(index, 0, 10**12, 0).ids
    shown = {t.track: k for k, t in enumerate(gpu.threads)}  # the GPU's tracks, shown order
    rows = [row[2:] for row in sorted(
        (shown[int(t)], int(index.start_ps[i]), index.tracks[int(t)].name,
         index.names[int(index.name_id[i])],
         int(index.start_ps[i]) // US, int(index.end_ps[i]) // US)
        for i, t in zip(ids, index.track_of(ids), strict=True) if int(t) in shown)]
    # Stored after every line's events (their ids do not depend on the derived tracks).
    derived = [t for t in index.tracks if t.derived]
    assert [t.track for t in index.tracks[-len(derived):]] == [t.track for t in derived]
    assert int(index.track_bounds[derived[0].track]) == len(index) - index.num_derived_events
    # Steps: the overview's step (the host marker holds the device work); its device part
    # below it.
    assert rows[:4] == [
        ("Steps", "5", 0, 100),
        ("Steps: device busy", "5", 30, 44),
        ("TensorFlow Ops", "dense/MatMul:MatMul", 30, 41),
        ("TensorFlow Ops", "Relu:Relu", 42, 44),
    ]


def test_details_stats_long_name_and_flows() -> None:
    trace = gpu_trace()
    consumer = event_details(trace, find(trace, "IteratorGetNext"))
    ev = consumer["event"]
    assert ev["long_name"] == "Iterator get next (long)"
    assert ev["stats"] == {"_ct": 3, "_c": 42}
    assert ev["process"] == "/host:CPU" and ev["thread"] == "python"
    assert ev["start_us"] == 20.0 and ev["duration_us"] == 5.0 and ev["depth"] == 1
    assert [(f["kind"], f["direction"], f["name"]) for f in consumer["flows"]] == [
        ("tf.data", "in", "Iterator::Root::Prefetch")]
    producer = event_details(trace, find(trace, "Iterator::Root::Prefetch"))
    assert producer["event"]["stats"]["shape"] == "[8,4]"
    assert producer["event"]["stats"]["raw"] == "<2 bytes: 0001>"
    assert [(f["direction"], f["name"]) for f in producer["flows"]] == [("out", "IteratorGetNext")]

    consume = event_details(trace, find(trace, "PrefetchConsume"))
    assert [(f["kind"], f["direction"], f["name"], f["start_us"]) for f in consume["flows"]] == [
        ("tf.data", "in", "PrefetchProduce", 7.0)]
    produce = event_details(trace, find(trace, "PrefetchProduce"))
    assert [(f["direction"], f["name"]) for f in produce["flows"]] == [("out", "PrefetchConsume")]

    kernel = event_details(trace, find(trace, "gemm_b"))
    assert kernel["event"]["stats"]["tf_op"] == "dense/MatMul:MatMul"
    assert kernel["event"]["stats"]["correlation_id"] == 8
    [launch] = kernel["flows"]
    assert (launch["kind"], launch["direction"], launch["start_us"]) == ("launch", "in", 12.0)
    host_side = event_details(trace, launch["id"])
    assert [(f["direction"], f["name"]) for f in host_side["flows"]] == [("out", "gemm_b")]

    step = event_details(trace, find(trace, "5", "Steps"))
    assert step["event"]["stats"]["derived_from"] == "Stream #12(Compute)"
    assert step["event"]["stats"]["first_event"] == "gemm_a"
    assert step["flows"] == []
    with pytest.raises(NotFound):
        event_details(trace, trace.total_events)
    with pytest.raises(NotFound):
        event_details(trace, -1)


def test_search_whole_trace() -> None:
    trace = gpu_trace()
    first = search(trace, "CUDALAUNCH", None, None)
    assert first["total_matches"] == 3 and first["index"] == 0
    assert first["match"]["start_us"] == 10.0
    assert search(trace, "cudalaunch", 2, None)["match"]["start_us"] == 14.0
    assert search(trace, "cudalaunch", None, 11.0)["index"] == 1
    assert search(trace, "cudalaunch", None, 99.0)["index"] == 2  # none after: the last
    none = search(trace, "no such op", None, None)
    assert none == {"query": "no such op", "total_matches": 0, "index": None, "match": None}
    # both the stream's kernel and the derived op track hold a "Relu" name
    assert search(trace, "relu", None, None)["total_matches"] == 2
    with pytest.raises(BadRequest):
        search(trace, "cudalaunch", 3, None)
    with pytest.raises(BadRequest):
        search(trace, "", None, None)


def test_an_event_with_more_stats_than_a_panel_shows_lists_the_first_and_counts_the_rest(
) -> None:
    """A hostile file can hang 100,000 stats on one event: details list MAX_STATS_SHOWN, in
    the file's order, with their names and values, and count the rest."""
    b = XSpaceBuilder()
    line = b.plane("/host:CPU").line("python", line_id=1)
    total = MAX_STATS_SHOWN + 234
    event = line.event("busy", 0, 5 * US, ok=1)
    for i in range(1, total):  # `ok` is stat 0; then `s1` ... in order
        stat = event.stats.add()
        stat.metadata_id = line._plane.stat_metadata_id(f"s{i}")
        stat.int64_value = -i
    line.event("plain", 6 * US, 1 * US, answer=42)
    trace = trace_set({"h": decode_xspace(b.serialize())})
    busy = event_details(trace, find(trace, "busy"))["event"]
    assert len(busy["stats"]) == MAX_STATS_SHOWN
    assert busy["stats_not_shown"] == total - MAX_STATS_SHOWN
    assert busy["stats"]["ok"] == 1
    assert busy["stats"][f"s{MAX_STATS_SHOWN - 1}"] == -(MAX_STATS_SHOWN - 1)
    assert f"s{MAX_STATS_SHOWN}" not in busy["stats"]
    plain = event_details(trace, find(trace, "plain"))["event"]
    assert plain["stats"] == {"answer": 42} and plain["stats_not_shown"] == 0
