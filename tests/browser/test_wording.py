"""Wording that reads right (issue 18 items 7 and 10), in a real Chromium on real TensorBoards.

Each test opens the page where the wrong wording was seen and checks the page says what the
profile holds:
- TensorFlow stats on a capture whose events carry no op (the synthetic 2M-event trace) says
  so, with the event count, once, and never "No op ran";
- the overview of a CPU-only profile never heads its ops "Top device ops";
- a GPU profile without device compute shows no "0.0 % 16-bit / 0.0 % 32-bit";
- the memory profile of a real JAX GPU capture shows no "INVALID" data type and no column
  that no row fills, and a profile without allocator events says why once;
- the trace's event details never repeat a duration in the same unit ("4.364 (4.364 µs)");
- the input pipeline of a profile without steps shows no "— % ± — %";
- Compare has one header row above the step time and its categories;
- TensorFlow stats' pies start without IDLE, and their toggle puts it back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser import synthetic
from tests.browser.checks import PERCENT, assert_clean, assert_shown_number, document
from tests.browser.conftest import captures_tensorboard
from tests.browser.pages import (
    first_host,
    fixture_run,
    get_json,
    open_view,
    selection_hash,
    standalone,
)
from tests.browser.support import PageRecord
from tests.browser.trace_page import open_viewer, wait_hook
from tests.browser.trace_synthetic import BIG_RUN

pytestmark = pytest.mark.browser

REAL = ("jax_gpu_conv", "jax_cpu_plain")
NO_DATA_TYPES = {"", "INVALID"}


@pytest.fixture(scope="module")
def real_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real TensorBoard on the real JAX GPU capture and the JAX CPU capture."""
    with captures_tensorboard(tmp_path_factory, "wording", REAL) as base:
        yield base


def body_text(page: Page) -> str:
    text: str = page.locator("body").inner_text()
    return text


def test_tfstats_of_events_without_ops_says_so(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base, run = synthetic_tensorboard_url, BIG_RUN
    host, doc = document(base, run, "tensorflow_stats")
    assert doc["num_rows"] == 0 and doc["num_events"] > 1_000_000
    open_view(page, base, "tensorflow_stats", run, host)
    note = page.get_by_test_id("tfstats-no-ops")
    expect(note).to_contain_text("No op events")
    expect(note).to_contain_text(f"{doc['num_events']} events carry no TensorFlow or XLA op")
    text = body_text(page)
    assert "No op ran" not in text and "holds no op events" not in text
    assert text.count("carry no TensorFlow or XLA op") == 1
    # A CPU-only profile's overview never heads its (absent) ops "Top device ops".
    _, overview = document(base, run, "overview_page")
    assert overview["has_device"] is False and overview["top_host_ops"] == []
    page.goto(standalone(base, selection_hash(run, "overview_page", host)))
    section = page.get_by_test_id("top-ops-section")
    expect(section.locator("h3")).to_have_text("Top host ops")
    expect(page.get_by_test_id("top-ops")).to_have_attribute("data-kind", "host")
    assert_clean(record)


def test_no_precision_without_device_compute(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base, run = synthetic_tensorboard_url, synthetic.NO_KERNELS_RUN
    host, doc = document(base, run, "overview_page")
    precision = doc["device_compute_precision"]
    assert doc["has_device"] and precision["percent_16bit"] + precision["percent_32bit"] == 0
    open_view(page, base, "overview_page", run, host)
    expect(page.get_by_test_id("overview-precision-none")).to_be_visible()
    expect(page.get_by_test_id("overview-precision-16bit")).to_have_count(0)
    assert "16-bit" not in body_text(page)
    assert_clean(record)


def test_memory_profile_of_a_jax_gpu_capture_shows_no_invalid_or_empty_column(
    page: Page, real_url: str, record: PageRecord
) -> None:
    run = fixture_run(real_url, "jax_gpu_conv")
    host, doc = document(real_url, run, "memory_profile")
    rows = doc["breakdown"]
    assert rows and {row["data_type"] for row in rows} <= NO_DATA_TYPES
    assert "INVALID" in {row["data_type"] for row in rows}  # what the capture wrote
    open_view(page, real_url, "memory_profile", run, host)
    table = page.get_by_test_id("memory-breakdown")
    expect(page.get_by_test_id("memory-breakdown-row")).to_have_count(len(rows))
    assert "INVALID" not in body_text(page)
    # Region, data type and shape: no row fills them, so no column shows them.
    for key in ("region_type", "data_type", "shape"):
        assert not any(row[key] and row[key] != "INVALID" for row in rows)
        expect(page.get_by_test_id(f"memory-breakdown-row-{key}")).to_have_count(0)
    sizes = table.locator("[data-testid=memory-breakdown-row-allocation_bytes]")
    assert "0.00" not in [text.strip() for text in sizes.all_text_contents()]
    assert_clean(record)


def test_memory_profile_without_allocator_events_says_why_once(
    page: Page, real_url: str, record: PageRecord
) -> None:
    run = fixture_run(real_url, "jax_cpu_plain")
    host, doc = document(real_url, run, "memory_profile")
    warnings = doc["diagnostics"]["warnings"]
    assert doc["memory_ids"] == [] and warnings
    open_view(page, real_url, "memory_profile", run, host)
    expect(page.get_by_test_id("memory-empty")).to_contain_text(warnings[0])
    text = body_text(page)
    for warning in warnings:
        assert text.count(warning[:80]) == 1, f"shown {text.count(warning[:80])} times"
    assert_clean(record)


def test_event_duration_is_not_repeated_in_the_same_unit(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    run = fixture_run(tensorboard_url, "tfdata_slow")
    h = open_viewer(page, tensorboard_url, run, first_host(tensorboard_url, run, "trace_viewer"))
    box = page.get_by_test_id("trace-canvas").bounding_box()
    assert box is not None
    shown: list[str] = []
    # The widest events (ms long) and a narrow one (µs long): both kinds of duration.
    for target in sorted(h["targets"], key=lambda t: t["w"])[:1] + h["targets"][:1]:
        page.mouse.click(box["x"] + target["x"] + target["w"] / 2, box["y"] + target["y"] + 8)
        details = page.get_by_test_id("trace-details")
        expect(details).to_have_attribute("data-event-id", str(target["id"]))
        duration = page.get_by_test_id("trace-detail-duration-us").text_content() or ""
        shown.append(duration.strip())
        selected = target["id"]
        wait_hook(page, lambda hook, want=selected: hook["selected_id"] == want, "the selection")
    for text in shown:
        match = re.fullmatch(r"(\d+\.\d{3})(?: \((.+)\))?", text)
        assert match, f"duration shows {text!r}"
        if match.group(2) is not None:
            assert not match.group(2).endswith(" µs"), f"repeated in µs: {text!r}"
    assert_clean(record)


def test_no_steps_shows_no_percent_plus_minus(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base, run = synthetic_tensorboard_url, synthetic.NO_STEPS_RUN
    for view in ("input_pipeline_analyzer", "overview_page"):
        host, doc = document(base, run, view)
        assert doc["steps"] == []
        open_view(page, base, view, run, host)
        text = body_text(page)
        assert "±" not in text, f"{view}: {text[:400]!r}"
        assert not re.search(r"— ?(%|ms)", text), f"{view} shows a unit with no figure"
    assert_clean(record)


def test_compare_has_one_header_over_step_time_and_categories(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    run_a = fixture_run(tensorboard_url, "tfdata_slow")
    run_b = fixture_run(tensorboard_url, "tfdata_parallel")
    page.goto(standalone(tensorboard_url, selection_hash(run_a, "compare") + f"&run_b={run_b}"))
    panel = page.get_by_test_id("compare-categories-panel")
    expect(panel.get_by_test_id("compare-step-row")).to_have_count(1, timeout=60_000)
    expect(panel.locator("thead tr")).to_have_count(1)
    expect(panel.locator("table")).to_have_count(1)
    first = panel.locator("tbody tr").first
    expect(first).to_have_attribute("data-testid", "compare-step-row")
    compared = get_json(tensorboard_url, "compare", run_a=run_a, run_b=run_b)
    expect(panel.get_by_test_id("compare-category-row")).to_have_count(len(compared["categories"]))
    assert_clean(record)


def test_pies_start_without_idle_and_the_toggle_puts_it_back(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    """One IDLE switch, off by default: pies and table start without IDLE; checking it puts
    IDLE back in both (issue 29 item 8: the table included it, every Self % near 0)."""
    run = fixture_run(tensorboard_url, "tfdata_slow")
    host, doc = document(tensorboard_url, run, "tensorflow_stats")
    host_rows = [row for row in doc["rows"] if row["host_or_device"] == "Host"]
    idle = next(row for row in host_rows if row["op_name"] == "IDLE")
    total = sum(row["total_self_time_us"] for row in host_rows)
    assert idle["total_self_time_us"] / total > 0.25  # IDLE would dominate the pie
    open_view(page, tensorboard_url, "tensorflow_stats", run, host)
    toggle = page.get_by_test_id("idle-toggle")
    pies = page.get_by_test_id("tfstats-pies")
    pie = page.get_by_test_id("pie-host-op")
    idle_slice = pie.locator("[data-testid=pie-slice][data-name=IDLE]")
    idle_row = page.locator("[data-testid=tfstats-row][data-op-name=IDLE]")
    expect(toggle).to_be_visible()
    expect(toggle).not_to_be_checked()
    expect(pies).to_have_attribute("data-pie-idle", "false")
    expect(idle_slice).to_have_count(0)
    expect(idle_row).to_have_count(0)  # the table follows the same switch

    toggle.check()
    expect(pies).to_have_attribute("data-pie-idle", "true")
    expect(idle_slice).to_have_count(1)
    expect(idle_row).to_have_count(1)
    share = idle_slice.get_by_test_id("pie-slice-percent").text_content() or ""
    assert_shown_number(share.strip(), 100 * idle["total_self_time_us"] / total, PERCENT, "IDLE")
    toggle.uncheck()
    expect(idle_slice).to_have_count(0)
    expect(idle_row).to_have_count(0)
    assert_clean(record)
