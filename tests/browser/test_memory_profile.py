"""The memory profile view in a real Chromium, checked against the JSON.

On the real capture `keras_fit`: the summary cards (counts, sizes in their unit, the peak's
time, stack, heap, free and fragmentation, which is NaN there and shows "—"), the timeline's
point count, hovering the chart (the tooltip and the details panel show the hovered
snapshot's details, equal to the document's), and the breakdown (rows in the document's
order, the op-name filter, sorting). On the synthetic two-allocator run
(tests/browser/synthetic_memory.py): the memory id selector, and a wheel zoom that fetches
every snapshot of the range (kept in the URL; "Whole profile" goes back). A run without
allocator events explains why. Every page keeps a clean console and talks to 127.0.0.1 only.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser import synthetic
from tests.browser.checks import (
    MISSING,
    MS,
    PERCENT,
    assert_clean,
    assert_figure,
    document,
    row_names,
    shown_text,
)
from tests.browser.pages import (
    LOAD_TIMEOUT_MS,
    Root,
    fixture_run,
    get_json,
    open_view,
)
from tests.browser.support import PageRecord
from tests.browser.synthetic_memory import MEMORY_HOST, MEMORY_RUN

pytestmark = pytest.mark.browser

VIEW = "memory_profile"
UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))
SIZE_DETAILS = {"stack": "stack_bytes", "heap": "heap_bytes", "free": "free_bytes",
                "requested": "requested_bytes", "allocation": "allocation_bytes"}
TEXT_DETAILS = {"event": "event", "op": "tf_op", "region": "region_type",
                "data_type": "data_type", "shape": "tensor_shape"}


def unit_of(num_bytes: int) -> tuple[str, int]:
    """The unit the view shows a size in: the largest whose value is at least 1."""
    return next(((name, size) for name, size in UNITS if abs(num_bytes) >= size), UNITS[-1])


def assert_size(text: str, num_bytes: int, what: str, unit: tuple[str, int] | None = None) -> None:
    """`text` is `num_bytes` in its unit with 2 decimals ("1.50 GiB" or just "1.50")."""
    name, size = unit or unit_of(num_bytes)
    match = re.fullmatch(rf"(-?\d+\.\d{{2}})(?: {name})?", text)
    assert match, f"{what} shows {text!r}, expected a size in {name}"
    assert abs(float(match.group(1)) - num_bytes / size) <= 0.005 + 1e-9, f"{what}: {text}"


def check_size_figure(root: Root, testid: str, num_bytes: int) -> None:
    figure = root.get_by_test_id(testid)
    expect(figure).to_have_attribute("data-bytes", str(num_bytes))
    name, _ = unit_of(num_bytes)
    expect(figure).to_have_attribute("data-unit", name)
    assert_size(shown_text(root, testid), num_bytes, testid)


def check_summary(root: Root, doc: dict[str, Any]) -> None:
    summary, peak = doc["summary"], doc["summary"]["peak"]
    assert shown_text(root, "memory-num-allocations") == str(summary["num_allocations"])
    assert shown_text(root, "memory-num-deallocations") == str(summary["num_deallocations"])
    check_size_figure(root, "memory-capacity", summary["memory_capacity_bytes"])
    check_size_figure(root, "memory-peak-lifetime", summary["peak_heap_usage_lifetime_bytes"])
    check_size_figure(root, "memory-peak-in-use", peak["in_use_bytes"])
    for key in ("stack", "heap", "free"):
        check_size_figure(root, f"memory-peak-{key}", peak[f"{key}_bytes"])
    assert_figure(root, "memory-peak-time", peak["time_ms"], MS)
    if peak["fragmentation_percent"] is None:
        assert shown_text(root, "memory-peak-fragmentation") == MISSING
    else:
        assert_figure(root, "memory-peak-fragmentation", peak["fragmentation_percent"], PERCENT)


def check_details(root: Root, snapshot: dict[str, Any]) -> None:
    """The details panel shows `snapshot` as the profiler guide lists it."""
    for key, field in SIZE_DETAILS.items():
        assert_size(shown_text(root, f"memory-detail-{key}"), snapshot[field], key)
    for key, field in TEXT_DETAILS.items():
        assert shown_text(root, f"memory-detail-{key}") == (snapshot[field] or MISSING), key
    # The overview's step number (analysis/hosts/clock.py), not the event's group id.
    assert shown_text(root, "memory-detail-step") == (
        MISSING if snapshot["step"] is None else str(snapshot["step"]))
    time_text = shown_text(root, "memory-detail-time")
    assert time_text == f"{snapshot['time_ms']:.3f} ms"
    fragmentation = shown_text(root, "memory-detail-fragmentation")
    if snapshot["fragmentation_percent"] is None:
        assert fragmentation == f"{MISSING} %"
    else:
        assert fragmentation == f"{snapshot['fragmentation_percent']:.1f} %"


def hover_until_details_change(page: Page, chart: Locator, start: int) -> int:
    """Moves the pointer across the chart until the panel shows another snapshot; its position."""
    box = chart.bounding_box()
    assert box, "the timeline has no box"
    details = page.get_by_test_id("memory-details")
    for fraction in (0.3, 0.45, 0.6, 0.75, 0.2, 0.85, 0.15):
        page.mouse.move(box["x"] + box["width"] * fraction, box["y"] + box["height"] * 0.5)
        page.wait_for_timeout(150)
        position = int(details.get_attribute("data-position") or "-1")
        if position != start:
            return position
    raise AssertionError("hovering the timeline never changed the details panel")


def test_memory_profile_on_a_real_capture(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    base = tensorboard_url
    run = fixture_run(base, "keras_fit")
    assert VIEW in get_json(base, "run_tools", run=run)
    host, doc = document(base, run, VIEW)
    open_view(page, base, VIEW, run, host)
    expect(page.get_by_test_id("memory-view")).to_have_attribute("data-memory-id", "mklcpu")
    check_summary(page, doc)

    chart = page.get_by_test_id("memory-timeline")
    expect(chart).to_have_attribute("data-points", str(len(doc["timeline"])))
    details = page.get_by_test_id("memory-details")
    peak_position = doc["peak_timeline_index"]
    expect(details).to_have_attribute("data-position", str(peak_position))
    check_details(page, doc["timeline"][peak_position])

    # Hovering: the tooltip and the panel show the hovered snapshot.
    position = hover_until_details_change(page, chart, peak_position)
    snapshot = doc["timeline"][position]
    check_details(page, snapshot)
    tooltip = page.locator(".tbp-tip-memory")
    expect(tooltip).to_be_visible()
    expect(tooltip.locator("tr[data-key=op]")).to_contain_text(snapshot["tf_op"] or MISSING)
    expect(tooltip.locator("tr[data-key=time]")).to_contain_text(f"{snapshot['time_ms']:.3f} ms")

    # The breakdown: the document's rows in its order; filter by op name; sort.
    rows = doc["breakdown"]
    assert row_names(page, "memory-breakdown-row") == [r["op_name"] for r in rows]
    first = page.get_by_test_id("memory-breakdown-row").first
    unit = unit_of(max(r["allocation_bytes"] for r in rows))
    assert_size(shown_text(first, "memory-breakdown-row-allocation_bytes"),
                rows[0]["allocation_bytes"], "allocation", unit)
    share = 100 * rows[0]["allocation_bytes"] * rows[0]["occurrences"] / (
        doc["summary"]["peak"]["in_use_bytes"])
    assert_figure(first, "memory-breakdown-row-share", share, PERCENT)
    page.get_by_test_id("memory-breakdown-filter").fill("RELU")
    matching = [r["op_name"] for r in rows if "relu" in r["op_name"].lower()]
    assert matching and len(matching) < len(rows)
    expect(page.get_by_test_id("memory-breakdown-row")).to_have_count(len(matching))
    assert row_names(page, "memory-breakdown-row") == matching
    page.get_by_test_id("memory-breakdown-filter").fill("")
    expect(page.get_by_test_id("memory-breakdown-row")).to_have_count(len(rows))
    page.get_by_test_id("memory-breakdown-sort-allocation_bytes").click()
    shown = row_names(page, "memory-breakdown-row")
    by_size = sorted(rows, key=lambda r: -r["allocation_bytes"])  # stable, like the table
    assert shown == [r["op_name"] for r in by_size]
    assert_clean(record)


def test_memory_ids_and_zoom_on_a_synthetic_profile(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base = synthetic_tensorboard_url
    _, doc = document(base, MEMORY_RUN, VIEW)
    assert doc["memory_ids"] == ["GPU_0_bfc", "cpu"]
    open_view(page, base, VIEW, MEMORY_RUN, MEMORY_HOST)
    check_summary(page, doc)
    names = [r["op_name"] for r in doc["breakdown"]]
    assert row_names(page, "memory-breakdown-row") == names
    kinds = page.get_by_test_id("memory-breakdown-row").evaluate_all(
        "rows => rows.map(row => row.dataset.kind)")
    assert {"stack", "unattributed"} <= set(kinds)

    # The other allocator, chosen in the selector (kept in the URL).
    page.get_by_test_id("memory-id-select").select_option("cpu")
    expect(page.get_by_test_id("memory-view")).to_have_attribute("data-memory-id", "cpu")
    _, cpu = document(base, MEMORY_RUN, VIEW, memory_id="cpu")
    check_summary(page, cpu)
    assert "memory_id=cpu" in page.url
    page.go_back()
    expect(page.get_by_test_id("memory-view")).to_have_attribute("data-memory-id", "GPU_0_bfc")

    # Wheel-zoom into the chart: the view asks for the range and shows all its snapshots.
    chart = page.get_by_test_id("memory-timeline")
    box = chart.bounding_box()
    assert box
    page.mouse.move(box["x"] + box["width"] * 0.45, box["y"] + box["height"] * 0.5)
    for _ in range(6):
        page.mouse.wheel(0, -300)
        page.wait_for_timeout(60)
    expect(page.get_by_test_id("memory-zoom-reset")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    assert "start_time_ms=" in page.url and "end_time_ms=" in page.url
    full = doc["full_timespan_ms"]
    # The URL changes first; the range shown follows once the zoomed document has loaded.
    page.wait_for_function(
        """([s, e]) => {
          const el = document.querySelector('[data-testid="memory-range"]');
          return el !== null && (Number(el.dataset.start) !== s || Number(el.dataset.end) !== e);
        }""",
        arg=full, timeout=LOAD_TIMEOUT_MS)
    range_element = page.get_by_test_id("memory-range")
    start = float(range_element.get_attribute("data-start") or "nan")
    end = float(range_element.get_attribute("data-end") or "nan")
    assert full[0] <= start < end <= full[1] and (start, end) != tuple(full)
    _, zoomed = document(base, MEMORY_RUN, VIEW, memory_id="GPU_0_bfc",
                         start_time_ms=repr(start), end_time_ms=repr(end))
    every = [p for p in doc["timeline"] if start <= p["time_ms"] <= end]
    assert zoomed["timeline"] == every
    expect(chart).to_have_attribute("data-points", str(len(every)))
    page.get_by_test_id("memory-zoom-reset").click()
    expect(page.get_by_test_id("memory-zoom-reset")).to_have_count(0)
    expect(chart).to_have_attribute("data-points", str(len(doc["timeline"])))
    assert_clean(record)


def test_memory_profile_without_allocator_events_explains(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base, run, host = synthetic_tensorboard_url, synthetic.NO_STEPS_RUN, synthetic.NO_STEPS_HOST
    assert VIEW in get_json(base, "run_tools", run=run)
    _, doc = document(base, run, VIEW)
    assert doc["memory_ids"] == [] and doc["diagnostics"]["warnings"]
    open_view(page, base, VIEW, run, host)
    empty = page.get_by_test_id("memory-empty")
    expect(empty).to_be_visible()
    for warning in doc["diagnostics"]["warnings"]:
        expect(empty).to_contain_text(warning)
    expect(page.get_by_test_id("memory-timeline")).to_have_count(0)
    assert_clean(record)
