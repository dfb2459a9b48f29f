"""The PyTorch figures of the pod viewer, operators, memory profile and profile info pages, in a
real Chromium on the real Kineto captures: pytorch_gloo_2ranks (two gloo ranks, rank1 the
straggler), pytorch_cpu_train (one CPU process, record_shapes and profile_memory on). Every
figure shown is the server's document's, within the rounding the page shows; a TensorFlow
capture shows none of the PyTorch sections."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.checks import (
    MS,
    PERCENT,
    US,
    assert_clean,
    assert_figure,
    assert_shown_number,
    check_csv_link,
    document,
    row_names,
)
from tests.browser.conftest import captures_tensorboard
from tests.browser.fit_checks import check_middle_cut, table_fit
from tests.browser.pages import fixture_run, get_json, open_view
from tests.browser.support import PageRecord

pytestmark = pytest.mark.browser

POD = "pod_viewer"
STATS = "tensorflow_stats"
MEMORY = "memory_profile"
INFO = "profile_info"
GLOO = "pytorch_gloo_2ranks"
CPU = "pytorch_cpu_train"
TENSORFLOW = "custom_loop"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with captures_tensorboard(tmp_path_factory, "pytorch_pages", (GLOO, CPU, TENSORFLOW)) as url:
        yield url


def _cells(rows: Locator, column: str, row_testid: str) -> list[str]:
    return [t.strip() for t in rows.get_by_test_id(f"{row_testid}-{column}").all_text_contents()]


def _assert_column(root: Locator, row_testid: str, column: str, expected: list[float],
                   decimals: int) -> None:
    shown = _cells(root, column, row_testid)
    assert len(shown) == len(expected), f"{column}: {shown} vs {expected}"
    for text, value in zip(shown, expected, strict=True):
        assert_shown_number(text, value, decimals, f"{row_testid} {column}")


# --- pod viewer -------------------------------------------------------------------------------


def test_pod_viewer_shows_each_rank_and_the_straggler(page: Page, base: str,
                                                      record: PageRecord) -> None:
    run = fixture_run(base, GLOO)
    host, doc = document(base, run, POD)
    assert host == "ALL_HOSTS"
    ranks: list[dict[str, Any]] = doc["pytorch_ranks"]
    assert [r["host"] for r in ranks] == ["rank0", "rank1"]
    root = open_view(page, base, POD, run, host)
    section = root.get_by_test_id("pytorch-ranks-section")
    expect(section).to_be_visible()
    assert row_names(root, "pytorch-rank-row", "host") == ["rank0", "rank1"]
    assert _cells(root, "rank", "pytorch-rank-row") == ["0", "1"]
    assert _cells(root, "world_size", "pytorch-rank-row") == ["2", "2"]
    assert _cells(root, "backend", "pytorch-rank-row") == ["gloo", "gloo"]
    for key in ("mean_step_time_ms", "communication_ms", "computation_ms", "overlap_ms"):
        _assert_column(root, "pytorch-rank-row", key, [r[key] for r in ranks], MS)
    _assert_column(root, "pytorch-rank-row", "communication_overlapped_percent",
                   [r["communication_overlapped_percent"] for r in ranks], PERCENT)
    # rank0 spends most of its step waiting in all_reduce for rank1.
    assert ranks[0]["communication_ms"] > 5 * ranks[1]["communication_ms"]

    collectives = [(r["host"], c) for r in ranks for c in r["collectives"]]
    assert len(collectives) == 4
    assert row_names(root, "pytorch-collective-row", "name") == [c["name"] for _, c in collectives]
    assert row_names(root, "pytorch-collective-row", "host") == [h for h, _ in collectives]
    assert _cells(root, "calls", "pytorch-collective-row") == [
        str(c["calls"]) for _, c in collectives]
    _assert_column(root, "pytorch-collective-row", "time_ms",
                   [c["time_ms"] for _, c in collectives], MS)

    straggler = doc["pytorch_straggler"]
    assert straggler["host"] == "rank1" and straggler["significant"] is True
    note = root.get_by_test_id("pytorch-straggler")
    expect(note).to_have_attribute("data-host", "rank1")
    expect(note).to_have_attribute("data-rank", "1")
    expect(note).to_have_attribute("data-significant", "yes")
    expect(note).to_contain_text("rank 1 (rank1)")
    assert_figure(root, "pytorch-straggler-wait-ms", straggler["wait_ms"], MS)
    assert_figure(root, "pytorch-straggler-wait-percent", straggler["wait_percent_of_step"],
                  PERCENT)

    # Sortable like the other tables: by communication, largest first.
    root.get_by_test_id("pytorch-ranks-sort-communication_ms").click()
    by_comm = sorted(ranks, key=lambda r: -r["communication_ms"])
    assert row_names(root, "pytorch-rank-row", "host") == [r["host"] for r in by_comm]
    root.get_by_test_id("pytorch-ranks-sort-communication_ms").click()
    assert row_names(root, "pytorch-rank-row", "host") == [r["host"] for r in by_comm[::-1]]
    assert_clean(record)


def test_pod_viewer_one_process_run_has_no_straggler(page: Page, base: str,
                                                     record: PageRecord) -> None:
    run = fixture_run(base, CPU)
    host, doc = document(base, run, POD)
    (rank,) = doc["pytorch_ranks"]
    assert rank["rank"] == -1 and doc.get("pytorch_straggler") is None
    root = open_view(page, base, POD, run, host)
    assert row_names(root, "pytorch-rank-row", "host") == [rank["host"]]
    assert _cells(root, "rank", "pytorch-rank-row") == ["—"]  # the trace states no rank
    assert _cells(root, "backend", "pytorch-rank-row") == ["—"]
    _assert_column(root, "pytorch-rank-row", "mean_step_time_ms", [rank["mean_step_time_ms"]], MS)
    _assert_column(root, "pytorch-rank-row", "computation_ms", [rank["computation_ms"]], MS)
    expect(root.get_by_test_id("pytorch-straggler")).to_have_count(0)
    expect(root.get_by_test_id("pytorch-collectives-empty")).to_be_visible()
    assert_clean(record)


# --- operators ---------------------------------------------------------------------------------


def test_operators_show_pytorch_ops_and_input_shapes(page: Page, base: str,
                                                     record: PageRecord) -> None:
    run = fixture_run(base, CPU)
    host, doc = document(base, run, STATS, include_idle="false")
    ops: list[dict[str, Any]] = doc["pytorch_ops"]
    shapes: list[dict[str, Any]] = doc["ops_by_input_shape"]
    assert 0 < len(ops) <= 100 and len(shapes) > 100
    root = open_view(page, base, STATS, run, host)
    expect(root.get_by_test_id("tfstats-view")).to_be_visible()
    assert row_names(root, "pytorch-op-row") == [r["op_name"] for r in ops]
    assert _cells(root, "calls", "pytorch-op-row") == [str(r["calls"]) for r in ops]
    for key in ("host_self_time_us", "host_total_time_us", "device_self_time_us"):
        _assert_column(root, "pytorch-op-row", key, [r[key] for r in ops], US)
    _assert_column(root, "pytorch-op-row", "host_self_time_fraction",
                   [100 * r["host_self_time_fraction"] for r in ops], PERCENT)

    # By input shape: the first page (100 rows) of the document's rows, in its order.
    first = shapes[:100]
    assert row_names(root, "pytorch-shape-row") == [r["op_name"] for r in first]
    assert row_names(root, "pytorch-shape-row", "inputDims") == [r["input_dims"] for r in first]
    assert _cells(root, "calls", "pytorch-shape-row") == [str(r["calls"]) for r in first]
    _assert_column(root, "pytorch-shape-row", "self_time_us", [r["self_time_us"] for r in first],
                   US)
    _assert_column(root, "pytorch-shape-row", "total_time_us",
                   [r["total_time_us"] for r in first], US)
    count = root.get_by_test_id("pytorch-shapes-row-count")
    expect(count).to_have_attribute("data-total", str(len(shapes)))

    # Sorting by calls, most first (ties keep the document's order).
    root.get_by_test_id("pytorch-shapes-sort-calls").click()
    by_calls = sorted(shapes, key=lambda r: -r["calls"])[:100]
    assert row_names(root, "pytorch-shape-row", "inputDims") == [r["input_dims"] for r in by_calls]
    # The filter keeps one operator's shapes.
    root.get_by_test_id("pytorch-shapes-filter").fill("aten::mm")
    mm = [r for r in sorted(shapes, key=lambda r: -r["calls"]) if "aten::mm" in r["op_name"]]
    assert 0 < len(mm) < len(shapes)
    assert row_names(root, "pytorch-shape-row", "inputDims") == [r["input_dims"] for r in mm]

    # CSV: both tables, every row of the document.
    text = check_csv_link(page, root, "pytorch-ops-csv", "pytorch_ops")
    table = list(csv.reader(io.StringIO(text)))
    assert table[0][:2] == ["op_name", "calls"] and len(table) == 1 + len(ops)
    assert [row[0] for row in table[1:]] == [r["op_name"] for r in ops]
    text = check_csv_link(page, root, "pytorch-shapes-csv", "ops_by_input_shape")
    table = list(csv.reader(io.StringIO(text)))
    assert table[0] == ["op_name", "input_dims", "calls", "total_time_us", "self_time_us"]
    assert [row[1] for row in table[1:]] == [r["input_dims"] for r in shapes]
    assert_clean(record)


def test_operators_of_all_ranks_have_no_shape_table(page: Page, base: str,
                                                    record: PageRecord) -> None:
    run = fixture_run(base, GLOO)
    host, doc = document(base, run, STATS, include_idle="false")
    assert host == "ALL_HOSTS" and "ops_by_input_shape" not in doc
    root = open_view(page, base, STATS, run, host)
    assert row_names(root, "pytorch-op-row") == [r["op_name"] for r in doc["pytorch_ops"]]
    _assert_column(root, "pytorch-op-row", "host_self_time_us",
                   [r["host_self_time_us"] for r in doc["pytorch_ops"]], US)
    expect(root.get_by_test_id("pytorch-shapes-section")).to_have_count(0)
    expect(root.get_by_test_id("pytorch-shapes-none")).to_be_visible()
    assert_clean(record)


# --- memory profile ----------------------------------------------------------------------------


def _shown_bytes(root: Locator, testid: str) -> int:
    return int(root.get_by_test_id(testid).get_attribute("data-bytes") or "-1")


def test_memory_profile_speaks_pytorchs_terms(page: Page, base: str, record: PageRecord) -> None:
    run = fixture_run(base, CPU)
    host, doc = document(base, run, MEMORY)
    assert doc["memory_source"] == "pytorch" and doc["memory_ids"] == ["cpu"]
    peak = doc["summary"]["peak"]
    root = open_view(page, base, MEMORY, run, host)
    expect(root.get_by_test_id("memory-view")).to_have_attribute("data-source", "pytorch")
    assert _shown_bytes(root, "memory-peak-allocated") == peak["heap_bytes"] > 0
    assert _shown_bytes(root, "memory-peak-reserved") == peak["heap_bytes"] + peak["free_bytes"]
    assert _shown_bytes(root, "memory-peak-in-use") == peak["in_use_bytes"]
    for gone in ("memory-peak-stack", "memory-peak-heap", "memory-peak-free",
                 "memory-peak-fragmentation"):
        expect(root.get_by_test_id(gone)).to_have_count(0)
    timeline = root.get_by_test_id("memory-timeline")
    expect(timeline).to_have_attribute("data-series", "Allocated,Reserved")
    expect(timeline).to_have_attribute("data-points", str(len(doc["timeline"])))
    details = root.get_by_test_id("memory-details")
    expect(details).to_have_attribute("data-position", str(doc["peak_timeline_index"]))
    expect(details).to_contain_text("Allocated")
    expect(details).to_contain_text("Reserved")
    expect(details).not_to_contain_text("Heap allocated")
    shown = doc["timeline"][doc["peak_timeline_index"]]
    expect(root.get_by_test_id("memory-detail-op")).to_have_text(shown["tf_op"] or "—")
    assert_clean(record)


def test_tensorflow_memory_profile_keeps_heap_and_free(page: Page, base: str,
                                                       record: PageRecord) -> None:
    run = fixture_run(base, TENSORFLOW)
    host, doc = document(base, run, MEMORY)
    assert "memory_source" not in doc
    root = open_view(page, base, MEMORY, run, host)
    expect(root.get_by_test_id("memory-view")).not_to_have_attribute("data-source", "pytorch")
    assert doc["summary"] is not None  # its BFC allocator recorded events
    expect(root.get_by_test_id("memory-timeline")).to_have_attribute(
        "data-series", "Stack,Heap,Free,Fragmentation %")
    assert _shown_bytes(root, "memory-peak-heap") == doc["summary"]["peak"]["heap_bytes"]
    expect(root.get_by_test_id("memory-peak-allocated")).to_have_count(0)
    assert_clean(record)


# --- profile info ------------------------------------------------------------------------------


def test_profile_info_shows_each_ranks_pytorch_facts(page: Page, base: str,
                                                     record: PageRecord) -> None:
    run = fixture_run(base, GLOO)
    host, doc = document(base, run, INFO)
    facts = {h["host"]: h["pytorch"] for h in doc["hosts"]}
    assert sorted(facts) == ["rank0", "rank1"]
    root = open_view(page, base, INFO, run, host)
    for name, fact in facts.items():
        section = root.locator(f"[data-testid=profile-host][data-host={name}]")
        expect(section.get_by_test_id("profile-host-pytorch-rank")).to_have_text(
            str(fact["rank"]))
        expect(section.get_by_test_id("profile-host-pytorch-world-size")).to_have_text(
            str(fact["world_size"]))
        expect(section.get_by_test_id("profile-host-pytorch-backend")).to_have_text(
            fact["backend"])
        expect(section.get_by_test_id("profile-host-pytorch-version")).to_have_text(
            fact["version"] or "not stated in the trace")
    assert [f["backend"] for f in facts.values()] == ["gloo", "gloo"]
    assert_clean(record)


def test_profile_info_of_one_process_says_what_the_trace_lacks(page: Page, base: str,
                                                               record: PageRecord) -> None:
    run = fixture_run(base, CPU)
    host, doc = document(base, run, INFO)
    (info,) = doc["hosts"]
    assert info["pytorch"]["rank"] is None and info["pytorch"]["backend"] is None
    root = open_view(page, base, INFO, run, host)
    expect(root.get_by_test_id("profile-host-pytorch-rank")).to_have_text(
        "not stated in the trace (not distributed)")
    expect(root.get_by_test_id("profile-host-pytorch-backend")).to_have_text(
        "not stated in the trace")
    expect(root.get_by_test_id("profile-host-framework")).to_have_text("PyTorch")
    assert_clean(record)


def test_tensorflow_pages_have_no_pytorch_sections(page: Page, base: str,
                                                   record: PageRecord) -> None:
    run = fixture_run(base, TENSORFLOW)
    for view, testids in ((INFO, ("profile-host-pytorch-version",)),
                          (STATS, ("pytorch-ops-section", "pytorch-shapes-none"))):
        host = get_json(base, "hosts", run=run, tag=view)[0]
        root = open_view(page, base, view, run, host)
        for testid in testids:
            expect(root.get_by_test_id(testid)).to_have_count(0)
    host = get_json(base, "hosts", run=run, tag=POD)[0]
    root = open_view(page, base, POD, run, host)
    expect(root.get_by_test_id("pod-viewer")).to_be_visible()
    expect(root.get_by_test_id("pytorch-ranks-section")).to_have_count(0)
    assert_clean(record)


@pytest.mark.parametrize(("capture", "view", "tables"), [
    (GLOO, POD, ("pytorch-ranks", "pytorch-collectives")),
    (CPU, STATS, ("pytorch-ops", "pytorch-shapes")),
])
def test_pytorch_tables_fit_1280_px(page: Page, base: str, record: PageRecord, capture: str,
                                    view: str, tables: tuple[str, ...]) -> None:
    run = fixture_run(base, capture)
    open_view(page, base, view, run, get_json(base, "hosts", run=run, tag=view)[0])
    measured = {t["testid"]: t for t in table_fit(page)}
    for testid in tables:
        table = measured[testid]
        assert table["numeric_cells"] > 0
        assert table["clipped"] == [] and table["clipped_headers"] == [], table
        assert table["table_px"] <= table["box_px"], table
        for name in table["names"]:
            check_middle_cut(name)
    assert_clean(record)
