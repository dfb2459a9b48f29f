"""The Compare page in a real Chromium: every number it shows equals the `compare` route's JSON.

The test fetches `compare?run_a=&run_b=` from the same TensorBoard, opens the page (by link,
and from the sidebar's Compare button, picking run B in the page), and reads the conclusion,
both runs' figures and verdicts, the step-time and category table and the changed ops
through their `data-testid`, within the rounding shown (ms 3 decimals, % 1 decimal).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import MS, PERCENT, assert_clean, assert_figure, row_names, shown_text
from tests.browser.pages import (
    LOAD_TIMEOUT_MS,
    Root,
    get_json,
    run_of,
    runs_of_server,
    selection_hash,
    standalone,
)
from tests.browser.support import PageRecord

pytestmark = pytest.mark.browser

MINUS = "\u2212"


def signed(text: str) -> float:
    """A shown change ("−38.008", "+0.424", "0.000") as a number."""
    return float(text.replace(MINUS, "-").lstrip("+"))


def assert_signed(root: Root, testid: str, expected: float, decimals: int) -> None:
    text = shown_text(root, testid)
    assert abs(signed(text) - expected) <= 0.5 * 10**-decimals + 1e-9, (testid, text, expected)
    if round(expected, decimals) < 0:
        assert text.startswith(MINUS), (testid, text)


def compare_hash(run_a: str, run_b: str) -> str:
    return selection_hash(run_a, "compare") + "&" + urllib.parse.urlencode(
        {"run_b": run_b}, quote_via=urllib.parse.quote)


def check_compare_page(root: Root, doc: dict[str, Any]) -> None:
    conclusion = root.get_by_test_id("compare-conclusion")
    expect(conclusion).to_have_text(doc["conclusion"], timeout=LOAD_TIMEOUT_MS)
    for side in ("a", "b"):
        summary = doc[side]
        assert shown_text(root, f"compare-{side}-run") == summary["run"]
        assert shown_text(root, f"compare-{side}-steps") == str(summary["num_steps"])
        assert_figure(root, f"compare-{side}-avg-step-ms", summary["step_time_ms"]["avg"], MS)
        verdict = root.get_by_test_id(f"compare-{side}-verdict")
        expect(verdict).to_have_attribute("data-level", summary["bottleneck"]["input_bound"])
    chart = root.get_by_test_id("compare-chart")
    expect(chart.locator("canvas").first).to_be_visible()
    assert float(chart.get_attribute("data-a-ms") or "nan") == doc["a"]["step_time_ms"]["avg"]
    assert float(chart.get_attribute("data-b-ms") or "nan") == doc["b"]["step_time_ms"]["avg"]

    step = doc["step_time_ms"]
    assert_figure(root, "compare-step-row-a_ms", step["a"], MS)
    assert_figure(root, "compare-step-row-b_ms", step["b"], MS)
    assert_signed(root, "compare-step-row-delta_ms", step["delta"], MS)
    assert_signed(root, "compare-step-row-delta_percent", step["delta_percent"], PERCENT)

    rows = root.get_by_test_id("compare-category-row")
    expect(rows).to_have_count(len(doc["categories"]))
    assert row_names(root, "compare-category-row", "category") == [
        c["category"] for c in doc["categories"]]
    for index, category in enumerate(doc["categories"]):
        row = rows.nth(index)
        assert_figure(row, "compare-category-row-a_ms", category["a_ms"], MS)
        assert_figure(row, "compare-category-row-b_ms", category["b_ms"], MS)
        assert_signed(row, "compare-category-row-delta_ms", category["delta_ms"], MS)
        assert_figure(row, "compare-category-row-a_percent", category["a_percent"], PERCENT)
        assert_figure(row, "compare-category-row-b_percent", category["b_percent"], PERCENT)
        if category["delta_percent"] is None:
            assert shown_text(row, "compare-category-row-delta_percent") == "n/a"
        else:
            assert_signed(row, "compare-category-row-delta_percent", category["delta_percent"],
                          PERCENT)
    most = root.locator("[data-testid=compare-category-row][data-most-changed=true]")
    expect(most).to_have_attribute("data-category", doc["most_changed_category"])

    ops = root.get_by_test_id("compare-op-row")
    expect(ops).to_have_count(len(doc["ops"]))
    assert row_names(root, "compare-op-row") == [op["op_name"] for op in doc["ops"]]
    for index, op in enumerate(doc["ops"]):
        row = ops.nth(index)
        expect(row).to_have_attribute("data-change", op["change"])
        assert_figure(row, "compare-op-row-a_ms", op["a_ms"], MS)
        assert_figure(row, "compare-op-row-b_ms", op["b_ms"], MS)
        assert_signed(row, "compare-op-row-delta_ms", op["delta_ms"], MS)
        ratio = shown_text(row, "compare-op-row-ratio")
        if op["ratio"] is None:
            assert ratio == op["change"]
        else:
            assert abs(float(ratio.lstrip("\u00d7")) - op["ratio"]) <= 0.005 + 1e-9
    basis = root.get_by_test_id("compare-op-basis")
    expect(basis).to_have_attribute("data-basis", doc["op_basis"])
    if doc["op_basis"] == "per_step":
        expect(basis).to_contain_text(f"divided by its run's step count (A: "
                                      f"{doc['a']['num_steps']} steps, B: "
                                      f"{doc['b']['num_steps']} steps)")
        expect(root.get_by_test_id("compare-ops").get_by_role("columnheader").filter(
            has_text="A self ms/step")).to_have_count(1)
    warning = root.get_by_test_id("compare-step-count-warning")
    if doc["step_count_warning"] is None:
        expect(warning).to_have_count(0)
    else:
        expect(warning).to_have_text(doc["step_count_warning"])
    counts = shown_text(root, "compare-op-counts")
    assert counts.startswith(f"{doc['num_changed_ops']} ops in both runs, "
                             f"{doc['num_new_ops']} new in B, {doc['num_vanished_ops']} vanished")


def test_compare_page_shows_the_routes_numbers(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    runs = runs_of_server(tensorboard_url)
    run_a, run_b = run_of(runs, "tfdata_slow"), run_of(runs, "tfdata_parallel")
    doc = get_json(tensorboard_url, "compare", run_a=run_a, run_b=run_b)
    assert doc["most_changed_category"] == "input"
    page.goto(standalone(tensorboard_url, compare_hash(run_a, run_b)))
    check_compare_page(page, doc)
    assert_clean(record)


def test_compare_from_the_sidebar_and_back(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    runs = runs_of_server(tensorboard_url)
    run_a, run_b = run_of(runs, "keras_fit"), run_of(runs, "custom_loop")
    page.goto(standalone(tensorboard_url, selection_hash(run_a, "overview_page")))
    button = page.get_by_test_id("compare-button")
    expect(button).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    button.click()
    expect(page.get_by_test_id("compare-page")).to_be_visible()
    expect(page.get_by_test_id("compare-run-a")).to_have_value(run_a)
    page.get_by_test_id("compare-run-b").select_option(run_b)
    doc = get_json(tensorboard_url, "compare", run_a=run_a, run_b=run_b)
    check_compare_page(page, doc)
    hash_params = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).fragment)
    assert hash_params["view"] == ["compare"] and hash_params["run_b"] == [run_b]
    page.reload()  # the comparison is in the URL
    check_compare_page(page, doc)
    page.get_by_test_id("view-select").select_option("overview_page")
    expect(page.get_by_test_id("compare-page")).to_have_count(0)
    expect(page.locator("[data-testid=view-document][data-tool=overview_page]")).to_be_visible(
        timeout=LOAD_TIMEOUT_MS)
    assert_clean(record)


def test_compare_runs_of_different_step_counts_per_step_with_a_warning(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    """A 6-step run against a 127-step one: ops are shown per step and the page warns."""
    runs = runs_of_server(tensorboard_url)
    run_a, run_b = run_of(runs, "tfdata_slow"), run_of(runs, "two_hosts")
    doc = get_json(tensorboard_url, "compare", run_a=run_a, run_b=run_b)
    steps_a, steps_b = doc["a"]["num_steps"], doc["b"]["num_steps"]
    assert steps_b > 2 * steps_a > 0 and doc["op_basis"] == "per_step"
    for op in doc["ops"]:
        assert op["a_ms"] == pytest.approx(op["a_self_time_ms"] / steps_a)
        assert op["b_ms"] == pytest.approx(op["b_self_time_ms"] / steps_b)
    page.goto(standalone(tensorboard_url, compare_hash(run_a, run_b)))
    check_compare_page(page, doc)
    warning = page.get_by_test_id("compare-step-count-warning")
    expect(warning).to_contain_text(f"A has {steps_a} steps and B {steps_b}")
    expect(page.get_by_test_id("compare-ops-panel")).to_contain_text(
        "Ops whose self time per step changed most")
    assert_clean(record)
