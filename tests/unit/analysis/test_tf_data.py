"""tf.data bottleneck analysis on synthetic pipelines from the tf.data performance guide.

Times are in µs on the page (converted to ps). Each test lays out one pipeline's iterator
calls the way TensorFlow 2.21 records them (see tests/data/README.md, tfdata_slow and
tfdata_parallel) and checks the critical path, the bottleneck, self times and the advice
exactly.
"""

from __future__ import annotations

from typing import Any

from tb_profile_plugin.analysis.tf_data.bottlenecks import HostTfData, analyze_tf_data
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import LineBuilder, XSpaceBuilder

US = 1_000_000  # ps
ROOT, PREFETCH, BATCH, REPEAT, MAP, RANGE = 11, 12, 13, 14, -7659180043588178093, 16


def _call(line: LineBuilder, name: str, start_us: float, end_us: float, **stats: Any) -> None:
    line.event(name, int(start_us * US), int((end_us - start_us) * US), **stats)


def _analyze(builder: XSpaceBuilder) -> HostTfData:
    return analyze_tf_data(decode_xspace(builder.serialize()))


def _execution(host: HostTfData, rank: int = 1, pipeline: int = 0) -> dict[str, dict[str, Any]]:
    """The rank-th slowest execution's per-iterator figures, by short name (µs)."""
    execution = int(host.pipelines[pipeline].pipeline.executions[rank - 1])
    out = {}
    for row in host.stats.rows_of(execution).tolist():
        info = host.iterator_of_row(row)
        out[info.name] = {
            "self_us": host.stats.self_ps[row] / US,
            "total_us": host.stats.duration_ps[row] / US,
            "calls": int(host.stats.num_calls[row]),
            "critical": bool(host.stats.blocking[row]),
            "bottleneck": bool(host.stats.bottleneck[row]),
        }
    return out


def _critical_path(figures: dict[str, dict[str, Any]]) -> set[str]:
    return {name for name, f in figures.items() if f["critical"]}


def _bottleneck(figures: dict[str, dict[str, Any]]) -> list[str]:
    return [name for name, f in figures.items() if f["bottleneck"]]


def _self_us(figures: dict[str, dict[str, Any]]) -> dict[str, float]:
    return {name: f["self_us"] for name, f in figures.items()}


def _sequential_batch(line: LineBuilder, prefix: str, parent: int, t: float) -> None:
    """batch(2) over repeat over a slow map over range, starting at t µs: 560 µs long."""
    _call(line, f"{prefix}::BatchV2", t, t + 560, id=BATCH, parent_id=parent)
    for k in range(2):
        s = t + 5 + 280 * k
        _call(line, f"{prefix}::BatchV2::Repeat", s, s + 270, id=REPEAT, parent_id=BATCH)
        _call(line, f"{prefix}::BatchV2::Repeat::Map", s + 10, s + 260, id=MAP,
              parent_id=REPEAT)
        _call(line, f"{prefix}::BatchV2::Repeat::Map::Range", s + 15, s + 20, id=RANGE,
              parent_id=MAP)


def test_range_map_repeat_batch_without_prefetch() -> None:
    """Guide: range → map(slow) → repeat → batch, all on the calling thread."""
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    _call(py, "train", 0, 2000, step_num=0, _r=1)
    _call(py, "IteratorGetNextOp::DoCompute", 2, 1000, id=99, iter_num=0)
    _call(py, "Iterator::Root", 10, 600, id=ROOT)
    _sequential_batch(py, "Iterator::Root", ROOT, 20)
    host = _analyze(b)
    figures = _execution(host)
    assert _critical_path(figures) == {"Root", "BatchV2", "Repeat", "Map", "Range"}
    assert _bottleneck(figures) == ["Map"]
    assert _self_us(figures) == {"Root": 30, "BatchV2": 20, "Repeat": 40, "Map": 490,
                                 "Range": 10}
    assert figures["Map"]["calls"] == 2 and figures["Map"]["total_us"] == 500
    summary = host.pipelines[0]
    assert summary.pipeline.name == "Host:0" and summary.pipeline.kind == "host"
    assert summary.suggestion_type == "parallelizable"
    assert not summary.ends_in_prefetch
    assert "num_parallel_calls=tf.data.AUTOTUNE" in summary.suggestions[0]
    assert "prefetch(tf.data.AUTOTUNE)" in summary.suggestions[1]
    assert host.events.iterators[MAP].long_name == "Iterator::Root::BatchV2::Repeat::Map"
    assert host.events.iterators[MAP].parent_id == REPEAT
    assert not host.events.iterators[MAP].is_async
    # One IteratorGetNext call (the outermost event), in the step's forest group.
    assert host.get_next.duration_ps.tolist() == [998 * US]
    assert host.get_next.start_ps.tolist() == [2 * US] and host.get_next.group_id.tolist() == [0]


def _prefetched(b: XSpaceBuilder) -> LineBuilder:
    """Guide: the same pipeline with prefetch: batches are made on a background thread.
    Returns the producer thread's line."""
    cpu = b.plane("/host:CPU")
    py = cpu.line("python", line_id=1)
    producer = cpu.line("tf_data_iterator_resource/1", line_id=2)
    prefix = "Iterator::Root::Prefetch"
    # Execution 1: the buffer is empty, the consumer waits for batch 100 (blocking).
    _call(py, "Iterator::Root", 0, 600, id=ROOT)
    _call(py, prefix, 10, 590, id=PREFETCH, parent_id=ROOT)
    _call(py, "PrefetchConsume", 580, 585, element_id=100)
    _call(producer, "PrefetchProduce", 0, 570, element_id=100)
    _sequential_batch(producer, prefix, PREFETCH, 5)
    # Batch 101 is made right after and waits in the buffer for execution 2 (not blocking).
    _call(producer, "PrefetchProduce", 600, 1170, element_id=101)
    _sequential_batch(producer, prefix, PREFETCH, 605)
    _call(py, "Iterator::Root", 2000, 2030, id=ROOT)
    _call(py, prefix, 2005, 2025, id=PREFETCH, parent_id=ROOT)
    _call(py, "PrefetchConsume", 2010, 2012, element_id=101)
    return producer


def test_range_map_repeat_batch_with_prefetch() -> None:
    b = XSpaceBuilder()
    _prefetched(b)
    host = _analyze(b)
    assert host.events.linked.sum() == 2  # both batches found their consumer
    slowest = _execution(host, rank=1)
    assert _critical_path(slowest) == {"Root", "Prefetch", "BatchV2", "Repeat", "Map", "Range"}
    assert _bottleneck(slowest) == ["Map"]
    # Prefetch waited 580 µs, 555 of them overlapping the batch being made.
    assert _self_us(slowest) == {"Root": 20, "Prefetch": 25, "BatchV2": 20, "Repeat": 40,
                                 "Map": 490, "Range": 10}
    fast = _execution(host, rank=2)
    assert _critical_path(fast) == {"Root", "Prefetch"}
    assert _bottleneck(fast) == ["Prefetch"]
    assert _self_us(fast)["Prefetch"] == 20 and _self_us(fast)["Root"] == 10
    assert fast["Map"]["critical"] is False and fast["Map"]["self_us"] == 490
    summary = host.pipelines[0]
    assert summary.ends_in_prefetch
    assert (summary.min_latency_ps, summary.max_latency_ps) == (30 * US, 600 * US)
    assert summary.avg_latency_ps == 315 * US
    assert (summary.num_calls, summary.num_slow_calls) == (2, 1)
    assert summary.bottleneck is not None and summary.bottleneck.name == "Map"
    assert summary.suggestion_type == "parallelizable"
    assert len(summary.suggestions) == 1  # no prefetch advice: it ends in one
    assert host.events.iterators[PREFETCH].is_async


def test_slow_tfrecord_source() -> None:
    """Guide: reading TFRecord files is the slowest step → read files in parallel."""
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    py = cpu.line("python", line_id=1)
    producer = cpu.line("tf_data_iterator_resource/1", line_id=2)
    prefix = "Iterator::Root::Prefetch"
    _call(py, "Iterator::Root", 0, 800, id=ROOT)
    _call(py, prefix, 5, 795, id=PREFETCH, parent_id=ROOT)
    _call(py, "PrefetchConsume", 790, 792, element_id=7)
    _call(producer, "PrefetchProduce", 0, 780, element_id=7)
    _call(producer, f"{prefix}::BatchV2", 2, 778, id=BATCH, parent_id=PREFETCH)
    for s in (10, 395):
        _call(producer, f"{prefix}::BatchV2::Map", s, s + 380, id=MAP, parent_id=BATCH)
        _call(producer, f"{prefix}::BatchV2::Map::TFRecord", s + 5, s + 365, id=RANGE,
              parent_id=MAP)
    host = _analyze(b)
    figures = _execution(host)
    assert _critical_path(figures) == {"Root", "Prefetch", "BatchV2", "Map", "TFRecord"}
    assert _bottleneck(figures) == ["TFRecord"]
    assert _self_us(figures) == {"Root": 10, "Prefetch": 17, "BatchV2": 16, "Map": 40,
                                 "TFRecord": 720}
    summary = host.pipelines[0]
    assert summary.suggestion_type == "source"
    assert "interleave" in summary.suggestions[0]
    assert "deterministic=False" in summary.suggestions[0]


def test_slow_parallel_map_working_on_another_thread() -> None:
    """A ParallelMap waits for its function, which runs on tf.data's private thread pool;
    its inputs were produced ahead of time, so Range is off the critical path."""
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    py = cpu.line("python", line_id=1)
    batcher = cpu.line("tf_data_iterator_resource/1", line_id=2)
    mapper = cpu.line("tf_data_iterator_resource/2", line_id=3)
    pool = cpu.line("tf_data_private_threadpool/4", line_id=4)
    prefix = "Iterator::Root::Prefetch"
    pmap = f"{prefix}::BatchV2::ParallelMapV2"
    _call(py, "Iterator::Root", 0, 1000, id=ROOT)
    _call(py, prefix, 5, 995, id=PREFETCH, parent_id=ROOT)
    _call(py, "PrefetchConsume", 990, 992, element_id=1)
    _call(batcher, "PrefetchProduce", 0, 985, element_id=1)
    _call(batcher, f"{prefix}::BatchV2", 2, 983, id=BATCH, parent_id=PREFETCH)
    _call(batcher, pmap, 10, 490, id=MAP, parent_id=BATCH)
    _call(batcher, "ParallelMapConsume", 485, 487, element_id=50)
    _call(batcher, pmap, 500, 975, id=MAP, parent_id=BATCH)
    _call(batcher, "ParallelMapConsume", 970, 972, element_id=51)
    for element, s in ((50, 0), (51, 492)):
        _call(mapper, "ParallelMapProduce", s, s + 7, element_id=element)
        _call(mapper, f"{pmap}::Range", s + 1, s + 6, id=RANGE, parent_id=MAP)
    _call(pool, "InstantiatedCapturedFunction::RunAsync", 12, 480)
    _call(pool, "InstantiatedCapturedFunction::RunAsync", 502, 968)
    host = _analyze(b)
    figures = _execution(host)
    assert _critical_path(figures) == {"Root", "Prefetch", "BatchV2", "ParallelMapV2"}
    assert _bottleneck(figures) == ["ParallelMapV2"]
    assert _self_us(figures) == {"Root": 10, "Prefetch": 12, "BatchV2": 26,
                                 "ParallelMapV2": 955, "Range": 10}
    assert figures["Range"]["calls"] == 2 and not figures["Range"]["critical"]
    summary = host.pipelines[0]
    assert summary.suggestion_type == "parallelizable"
    assert summary.bottleneck is not None and summary.bottleneck.is_async
    assert "already runs in parallel" in summary.suggestions[0]


def test_device_pipeline_and_root_without_root_dataset() -> None:
    """Before TF added the Root dataset the root was `Iterator::Prefetch`; a distribution
    strategy's per-device pipeline holds `Iterator::Prefetch::Generator`."""
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    _call(py, "Iterator::Prefetch", 0, 100, id=1)
    _call(py, "Iterator::Prefetch::Generator", 10, 90, id=2, parent_id=1)
    _call(py, "Iterator::Prefetch", 200, 230, id=3)
    _call(py, "Iterator::Prefetch::Map", 205, 225, id=4, parent_id=3)
    host = _analyze(b)
    names = [(s.pipeline.name, s.pipeline.kind, s.pipeline.root_id) for s in host.pipelines]
    assert names == [("Host:0", "host", 3), ("Device:0", "device", 1)]
    assert all(s.ends_in_prefetch for s in host.pipelines)
    request = registry.ViewRequest("run", "h", {"h": decode_xspace(b.serialize())}, {})
    doc = registry.VIEWS["tf_data_bottleneck_analysis"].build(request)
    assert [r["input_pipeline"] for r in doc["bottlenecks"]] == ["Host:0"]
    assert [p["kind"] for p in doc["pipelines"]] == ["host", "device"]
    assert not doc["summary"]["is_input_bound"]  # the host pipeline took 30 µs ≤ 50 µs


def test_view_document_keys_and_string_ids() -> None:
    b = XSpaceBuilder()
    _prefetched(b)
    request = registry.ViewRequest("run", "h", {"h": decode_xspace(b.serialize())}, {})
    view = registry.VIEWS["tf_data_bottleneck_analysis"]
    doc = view.build(request)
    assert doc["summary"]["is_input_bound"] is True
    assert doc["summary"]["iterator_name"] == "Map"
    assert doc["summary"]["max_latency_us"] == 600
    assert doc["bottlenecks"][0]["iterator_latency_us"] == 490
    assert [(g["rank"], g["latency_us"]) for g in doc["graphs"]] == [(1, 600), (2, 30)]
    nodes = {n["name"]: n for n in doc["graphs"][0]["nodes"]}
    assert nodes["Map"]["id"] == str(MAP) and nodes["Map"]["is_bottleneck"]
    assert doc["graphs"][0]["bottleneck_id"] == str(MAP)
    assert nodes["BatchV2"]["parent_id"] == str(PREFETCH)
    assert nodes["Root"]["parent_id"] is None
    assert (nodes["Repeat"]["num_calls"], nodes["Repeat"]["total_duration_us"]) == (2, 540)
    assert nodes["BatchV2"]["start_time_us"] == 5
    header, rows = view.tables["pipelines"](doc)
    assert rows == [["h", "Host:0", "host", 30.0, 315.0, 600.0, 2, 1, True]]
    assert "iterator_name" in view.tables["bottlenecks"](doc)[0]


def test_no_iterator_events_is_explained() -> None:
    b = XSpaceBuilder()
    _call(b.plane("/host:CPU").line("python", line_id=1), "train", 0, 10, step_num=0, _r=1)
    request = registry.ViewRequest("run", "h", {"h": decode_xspace(b.serialize())}, {})
    doc = registry.VIEWS["tf_data_bottleneck_analysis"].build(request)
    assert doc["pipelines"] == [] and doc["graphs"] == []
    assert "no tf.data iterator events" in doc["diagnostics"]["warnings"][0]
    assert doc["summary"]["is_input_bound"] is False


def test_producer_without_captured_consumer_is_reported() -> None:
    """A batch made for an element the capture never saw consumed belongs to no execution."""
    b = XSpaceBuilder()
    line = _prefetched(b)
    _call(line, "PrefetchProduce", 1200, 1770, element_id=102)
    _sequential_batch(line, "Iterator::Root::Prefetch", PREFETCH, 1205)
    host = _analyze(b)
    assert host.events.num_unlinked_producers == 1
    assert [len(s.pipeline.executions) for s in host.pipelines] == [2]
    request = registry.ViewRequest("run", "h", {"h": decode_xspace(b.serialize())}, {})
    doc = registry.VIEWS["tf_data_bottleneck_analysis"].build(request)
    assert any("match no consumer" in text for text in doc["diagnostics"]["info"])
    # The unconsumed batch's calls are in no graph: Map still ran 2 times per execution.
    assert all(n["num_calls"] == 2 for g in doc["graphs"] for n in g["nodes"]
               if n["name"] == "Map")
