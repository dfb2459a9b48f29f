"""The overview and input pipeline views in a real Chromium, checked number by number.

For each fixture the test fetches the view's JSON from the same server's `data` route, opens
the view (standalone page, and inside TensorBoard's Profile tab iframe), reads every figure
through its `data-testid` and compares it with the document within the rounding the view
shows (ms: 3 decimals, percent: 1 decimal). It also drives the input-op table (sort, filter),
hovers the step chart (tooltip built from text nodes) and fetches the CSV links. Every page
must keep a clean console and talk to 127.0.0.1 only.

The synthetic profiles (tests/browser/synthetic.py) cover what the real CPU captures lack: a
device (precision, top device ops), a profile without steps, and an op name that looks like
HTML.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser import synthetic
from tests.browser.checks import (
    MISSING,
    MS,
    PERCENT,
    assert_clean,
    assert_figure,
    check_csv_link,
    document,
    row_names,
    shown_text,
)
from tests.browser.fit_checks import assert_cut_in_the_middle
from tests.browser.pages import (
    Root,
    expect_view,
    open_in_tensorboard,
    open_view,
    run_of,
    runs_of_server,
)
from tests.browser.support import PageRecord

pytestmark = pytest.mark.browser

OVERVIEW = "overview_page"
INPUT = "input_pipeline_analyzer"
CATEGORIES = (
    "device_compute",
    "device_to_device",
    "device_collectives",
    "host_compute",
    "kernel_launch",
    "input",
    "output",
    "compilation",
    "all_others",
)
HOST_KINDS = (
    "enqueue",
    "demanded_file_read",
    "advanced_file_read",
    "preprocessing",
    "unclassified",
)
# Fixtures checked figure by figure (tests/data/<name>); keras_fit's run is keras_fit/train/<s>.
CHECKED_FIXTURES = ("tfdata_slow", "custom_loop", "keras_fit")


# -- reading what the page shows ----------------------------------------------------------


def expect_op_order(root: Root, names: list[str]) -> None:
    """The input-op table shows exactly `names`, in this order (retried until it does)."""
    expect(root.get_by_test_id("input-op-row-op_name")).to_have_text(names)
    assert row_names(root, "input-op-row") == names


# -- the two views, against their documents -----------------------------------------------


def check_verdict(root: Root, testid: str, doc: dict[str, Any]) -> None:
    verdict = root.get_by_test_id(testid)
    expect(verdict).to_have_attribute("data-level", doc["bottleneck"]["input_bound"])
    assert shown_text(root, f"{testid}-statement") == doc["bottleneck"]["statement"].strip()


def check_step_chart(root: Root, doc: dict[str, Any]) -> None:
    steps = len(doc["steps"])
    if steps:
        chart = root.get_by_test_id("step-chart")
        expect(chart).to_have_attribute("data-steps", str(steps))
        expect(chart.locator("canvas").first).to_be_visible()
        expect(root.get_by_test_id("no-steps")).to_have_count(0)
    else:
        expect(root.get_by_test_id("step-chart")).to_have_count(0)
        expect(root.get_by_test_id("no-steps")).to_be_visible()


def check_overview(page: Page, root: Root, doc: dict[str, Any]) -> None:
    """Every figure of the overview equals the document (within the rounding shown)."""
    steps = doc["steps"]
    check_verdict(root, "overview-verdict", doc)
    assert shown_text(root, "overview-step-count") == str(len(steps))
    if steps:
        stats = doc["step_time_ms"]
        assert_figure(root, "overview-avg-step-ms", stats["avg"], MS)
        assert_figure(root, "overview-step-stddev-ms", stats["stddev"], MS)
        assert_figure(root, "overview-min-step-ms", stats["min"], MS)
        assert_figure(root, "overview-max-step-ms", stats["max"], MS)
        assert_figure(root, "overview-input-percent", doc["input_percent"], PERCENT)
        assert_figure(root, "overview-all-others-percent", doc["all_others_percent"], PERCENT)
    else:
        assert shown_text(root, "overview-avg-step-ms") == MISSING
        assert shown_text(root, "overview-input-percent") == MISSING
    check_step_chart(root, doc)

    for key in CATEGORIES:
        category = doc["categories"][key]
        assert_figure(root, f"category-avg-{key}", category["avg"], MS)
        assert_figure(root, f"category-stddev-{key}", category["stddev"], MS)
        assert_figure(root, f"category-percent-{key}", category["percent"], PERCENT)

    environment = doc["run_environment"]
    assert shown_text(root, "overview-host-count") == str(environment["host_count"])
    assert shown_text(root, "overview-device-type") == environment["device_type"]
    assert shown_text(root, "overview-device-cores") == str(environment["device_core_count"])
    assert shown_text(root, "overview-framework") == environment["framework"]
    precision = doc["device_compute_precision"]
    if doc["top_device_ops"]:
        assert_figure(root, "overview-precision-16bit", precision["percent_16bit"], PERCENT)
        assert_figure(root, "overview-precision-32bit", precision["percent_32bit"], PERCENT)

    # "Top device ops" only on a profile with a device (a CPU-only one lists host ops).
    no_host_ops = not doc["top_host_ops"]
    kind = "device" if doc["top_device_ops"] or (doc["has_device"] and no_host_ops) else "host"
    ops = doc[f"top_{kind}_ops"]
    expect(root.get_by_test_id("top-ops")).to_have_attribute("data-kind", kind)
    rows = root.get_by_test_id("top-op-row")
    expect(rows).to_have_count(len(ops))
    assert row_names(root, "top-op-row") == [op["name"] for op in ops]
    for index in (0, len(ops) - 1) if ops else ():
        row, op = rows.nth(index), ops[index]
        for testid, expected, decimals in (
            ("top-op-row-self_time_ms", op["self_time_ms"], MS),
            ("top-op-row-self_time_percent", 100 * op["self_time_fraction"], PERCENT),
            ("top-op-row-cumulative_percent", 100 * op["cumulative_time_fraction"], PERCENT),
        ):
            assert_figure(row, testid, expected, decimals)

    items = root.get_by_test_id("recommendation")
    expect(items).to_have_count(len(doc["recommendations"]))
    for index, text in enumerate(doc["recommendations"]):
        prose, _, code = text.partition("\n")
        item = items.nth(index)
        expect(item.locator("p")).to_have_text(prose)
        if code.strip():  # code after the first line break is preformatted text
            assert item.locator("pre").text_content() == code

    check_csv_link(page, root, "steps-csv", "steps")
    check_tf_functions(page, root, doc)


def check_tf_functions(page: Page, root: Root, doc: dict[str, Any]) -> None:
    """The tf.functions table lists the document's rows in its order, with their figures;
    absent where the program called none."""
    functions = doc["tf_functions"]
    if not functions:
        expect(root.get_by_test_id("tf-functions-section")).to_have_count(0)
        return
    rows = root.get_by_test_id("tf-function-row")
    expect(rows).to_have_count(len(functions))
    assert row_names(root, "tf-function-row", "function") == [f["function"] for f in functions]
    for index, function in enumerate(functions):
        row = rows.nth(index)
        assert shown_text(row, "tf-function-row-calls") == str(function["calls"])
        for testid, expected, decimals in (
            ("tf-function-row-mean_ms", function["mean_ms"], MS),
            ("tf-function-row-max_ms", function["max_ms"], MS),
            ("tf-function-row-fraction", 100 * function["fraction"], PERCENT),
        ):
            assert_figure(row, testid, expected, decimals)
    check_csv_link(page, root, "tf-functions-csv", "tf_functions")


def check_input_pipeline(page: Page, root: Root, doc: dict[str, Any]) -> None:
    """Every figure of the input pipeline view equals the document."""
    steps = doc["steps"]
    check_verdict(root, "input-verdict", doc)
    assert shown_text(root, "input-step-count") == str(len(steps))
    if steps:
        for stat in ("avg", "stddev", "min", "max"):
            assert_figure(root, f"input-percent-{stat}", doc["input_percent"][stat], PERCENT)
        assert_figure(root, "input-percent-total", doc["input_percent_total"], PERCENT)
        assert_figure(root, "input-avg-step-ms", doc["step_time_ms"]["avg"], MS)
    else:
        assert shown_text(root, "input-percent-avg") == MISSING
    check_step_chart(root, doc)

    breakdown_us = doc["host_breakdown_us"]
    for key in HOST_KINDS:
        assert_figure(root, f"host-breakdown-{key}", breakdown_us[key] / 1000, MS)
    assert_figure(root, "host-breakdown-total", sum(breakdown_us.values()) / 1000, MS)

    ops = doc["input_ops"]
    rows = root.get_by_test_id("input-op-row")
    expect(rows).to_have_count(len(ops))
    if ops:
        first = ops[0]
        expect(rows.first).to_have_attribute("data-op-name", first["op_name"])
        name_cell = rows.first.get_by_test_id("input-op-row-op_name")
        expect(name_cell).to_have_text(first["op_name"])
        expect(name_cell).to_have_attribute("title", first["op_name"])
        assert_figure(rows.first, "input-op-row-self_time_ms", first["self_time_ms"], MS)
        assert_figure(rows.first, "input-op-row-time_percent", first["time_percent"], PERCENT)
        assert shown_text(rows.first, "input-op-row-count") == str(first["count"])
    else:
        expect(root.get_by_test_id("input-ops-table-empty")).to_be_visible()
    assert row_names(root, "input-op-row") == [op["op_name"] for op in ops]

    check_csv_link(page, root, "input-ops-csv", "input_ops")


# -- fixtures of this module --------------------------------------------------------------


@pytest.fixture(scope="module")
def fixture_runs(tensorboard_url: str) -> dict[str, str]:
    """The run of each checked fixture, as the server names it."""
    runs = runs_of_server(tensorboard_url)
    return {name: run_of(runs, name) for name in CHECKED_FIXTURES}


# -- the tests ----------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", CHECKED_FIXTURES)
@pytest.mark.parametrize("view", [OVERVIEW, INPUT])
def test_standalone_view_shows_the_documents_numbers(
    page: Page,
    tensorboard_url: str,
    fixture_runs: dict[str, str],
    record: PageRecord,
    fixture: str,
    view: str,
) -> None:
    run = fixture_runs[fixture]
    host, doc = document(tensorboard_url, run, view)
    open_view(page, tensorboard_url, view, run, host)
    if view == OVERVIEW:
        check_overview(page, page, doc)
    else:
        check_input_pipeline(page, page, doc)
    assert_clean(record)


@pytest.mark.parametrize("fixture", CHECKED_FIXTURES)
def test_views_inside_tensorboard(
    page: Page,
    tensorboard_url: str,
    fixture_runs: dict[str, str],
    record: PageRecord,
    fixture: str,
) -> None:
    run = fixture_runs[fixture]
    host, overview = document(tensorboard_url, run, OVERVIEW)
    frame = open_in_tensorboard(page, tensorboard_url, OVERVIEW, run, host)
    check_overview(page, frame, overview)

    screenshot = os.environ.get("TB_PROFILE_SCREENSHOT")
    if screenshot and fixture == "tfdata_slow":
        # TB_PROFILE_SCREENSHOT=docs/screenshot.png refreshes the README's picture.
        Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=screenshot)

    frame.get_by_test_id("view-select").select_option(INPUT)
    host, pipeline = document(tensorboard_url, run, INPUT)
    expect_view(frame, INPUT, run, host)
    check_input_pipeline(page, frame, pipeline)
    assert_clean(record)


def test_input_op_table_sorts_and_filters(
    page: Page, tensorboard_url: str, fixture_runs: dict[str, str], record: PageRecord
) -> None:
    run = fixture_runs["tfdata_slow"]
    host, doc = document(tensorboard_url, run, INPUT)
    ops = doc["input_ops"]
    names = [op["op_name"] for op in ops]
    assert len(ops) >= 3, "tfdata_slow should have several input ops"
    open_view(page, tensorboard_url, INPUT, run, host)
    rows = page.get_by_test_id("input-op-row")
    expect(rows).to_have_count(len(ops))

    # Filter by op name (case-insensitive); the rest keep the server's order.
    box = page.get_by_test_id("input-ops-table-filter")
    box.fill("MAP")
    wanted = [name for name in names if "map" in name.lower()]
    assert 0 < len(wanted) < len(names)
    expect_op_order(page, wanted)
    expect(page.get_by_test_id("input-ops-table-shown")).to_have_text(
        f"{len(wanted)} of {len(names)}"
    )
    box.fill("no op is called this")
    expect(rows).to_have_count(0)
    expect(page.get_by_test_id("input-ops-table-empty")).to_be_visible()
    box.fill("")
    expect(rows).to_have_count(len(ops))

    # Text sorts A to Z on the first click, Z to A on the second.
    by_name = page.get_by_test_id("input-ops-table-sort-op_name")
    by_name.click()
    expect(page.locator("th", has=by_name)).to_have_attribute("aria-sort", "ascending")
    expect_op_order(page, sorted(names, key=str.lower))
    by_name.click()
    expect(page.locator("th", has=by_name)).to_have_attribute("aria-sort", "descending")
    expect_op_order(page, sorted(names, key=str.lower, reverse=True))

    # Numbers sort largest first, then smallest first; ties keep the server's order.
    by_self = page.get_by_test_id("input-ops-table-sort-self_time_ms")
    by_self.click()
    expect(page.locator("th", has=by_name)).to_have_attribute("aria-sort", "none")
    largest = sorted(ops, key=lambda op: -op["self_time_ms"])
    expect_op_order(page, [op["op_name"] for op in largest])
    by_self.click()
    smallest = sorted(ops, key=lambda op: op["self_time_ms"])
    expect_op_order(page, [op["op_name"] for op in smallest])
    shown = [float(t) for t in page.get_by_test_id("input-op-row-self_time_ms").all_text_contents()]
    assert shown == sorted(shown)

    # Sorting and filtering together.
    box.fill("batchv2")
    expect_op_order(page, [op["op_name"] for op in smallest if "batchv2" in op["op_name"].lower()])
    assert_clean(record)


def test_step_chart_tooltip_lists_every_category(
    page: Page, tensorboard_url: str, fixture_runs: dict[str, str], record: PageRecord
) -> None:
    run = fixture_runs["tfdata_slow"]
    host, doc = document(tensorboard_url, run, OVERVIEW)
    open_view(page, tensorboard_url, OVERVIEW, run, host)
    chart = page.get_by_test_id("step-chart")
    expect(chart.locator("canvas").first).to_be_visible()
    box = chart.bounding_box()
    assert box is not None
    tip = page.locator(".tbp-tip")
    # The grid starts below the legend; hover the middle of the plot, inside a column band.
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.6)
    expect(tip).to_be_visible(timeout=5_000)
    title = tip.locator(".tbp-tip-title").text_content() or ""
    match = re.fullmatch(r"Step (\d+): (\d+\.\d{3}) ms", title)
    assert match, title
    step = next(s for s in doc["steps"] if s["step_num"] == int(match.group(1)))
    assert abs(float(match.group(2)) - step["step_time_ms"]) <= 0.0005 + 1e-9
    rows = tip.locator("tr")
    expect(rows).to_have_count(len(CATEGORIES))
    labels = {doc["categories"][key]["label"]: key for key in CATEGORIES}
    shown = {}
    for index in range(len(CATEGORIES)):
        label, value = rows.nth(index).locator("td").all_text_contents()[1:]
        shown[labels[label]] = float(value.removesuffix(" ms"))
    assert set(shown) == set(CATEGORIES)
    for key, ms in shown.items():
        assert abs(ms - step["breakdown_ms"][key]) <= 0.0005 + 1e-9, (key, ms)
    assert_clean(record)


# -- synthetic profiles: a device, no steps, an op name that looks like HTML ----------------


def test_device_profile_shows_precision_and_device_ops(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base, run, host = synthetic_tensorboard_url, synthetic.GPU_RUN, synthetic.GPU_HOST
    _, overview = document(base, run, OVERVIEW)
    assert overview["top_device_ops"], "the synthetic GPU profile should have device ops"
    open_view(page, base, OVERVIEW, run, host)
    expect(page.get_by_test_id("card-precision")).to_be_visible()
    check_overview(page, page, overview)
    for key in CATEGORIES:  # every category but compilation has time in this profile
        if key != "compilation":
            assert float(shown_text(page, f"category-avg-{key}")) > 0, key

    page.get_by_test_id("view-select").select_option(INPUT)
    _, pipeline = document(base, run, INPUT)
    expect_view(page, INPUT, run, host)
    check_input_pipeline(page, page, pipeline)
    # The op name that looks like HTML stays text, cut with an ellipsis, whole in its title.
    row = page.get_by_test_id("input-op-row").filter(
        has=page.get_by_title(synthetic.HOSTILE_OP, exact=True)
    )
    expect(row).to_have_count(1)
    cell = row.get_by_test_id("input-op-row-op_name")
    expect(cell).to_have_text(synthetic.HOSTILE_OP)
    assert_cut_in_the_middle(cell, synthetic.HOSTILE_OP)
    expect(page.locator("img[data-injected]")).to_have_count(0)
    assert_clean(record)


def test_cpu_profile_has_no_precision_card_and_shows_host_ops(
    page: Page, tensorboard_url: str, fixture_runs: dict[str, str]
) -> None:
    run = fixture_runs["custom_loop"]
    host, doc = document(tensorboard_url, run, OVERVIEW)
    assert doc["top_device_ops"] == [] and doc["top_host_ops"]
    open_view(page, tensorboard_url, OVERVIEW, run, host)
    expect(page.get_by_test_id("card-precision")).to_have_count(0)
    expect(page.get_by_test_id("top-ops")).to_have_attribute("data-kind", "host")


@pytest.mark.parametrize("view", [OVERVIEW, INPUT])
def test_profile_without_steps_explains_itself(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord, view: str
) -> None:
    base, run, host = synthetic_tensorboard_url, synthetic.NO_STEPS_RUN, synthetic.NO_STEPS_HOST
    _, doc = document(base, run, view)
    assert doc["steps"] == []
    document_root = open_view(page, base, view, run, host)
    expect(page.get_by_test_id("no-steps")).to_be_visible()
    expect(page.get_by_test_id("step-chart")).to_have_count(0)
    # The diagnostics say why, in their one place on every page: after the figures (here the
    # no-steps notice, which points down to them).
    warnings = page.get_by_test_id("diag-warnings")
    expect(warnings).to_contain_text("no training step could be found")
    expect(page.get_by_test_id("no-steps")).to_contain_text("The diagnostics below say why")
    order = document_root.evaluate(
        """root => {
            const d = root.querySelector('[data-testid=diagnostics]');
            const n = root.querySelector('[data-testid=no-steps]');
            return Boolean(d.compareDocumentPosition(n) & Node.DOCUMENT_POSITION_PRECEDING);
        }"""
    )
    assert order, "the diagnostics should come after the no-steps notice"
    if view == OVERVIEW:
        check_overview(page, page, doc)
        code = page.get_by_test_id("recommendation").locator("pre")
        expect(code.first).to_contain_text("tf.profiler.experimental.Trace")
    else:
        check_input_pipeline(page, page, doc)
    expect(page.locator("[data-testid=view-document]")).to_have_count(1)
    assert_clean(record)
