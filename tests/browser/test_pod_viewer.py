"""The pod viewer in Chromium on the real captures: on the two-host run the slider, the columns,
the card and the straggler table show the numbers of the server's JSON; on a one-host run its
own steps, one column per step; and switching tools never lands on a host the view lacks."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.browser.checks import assert_clean, check_csv_link
from tests.browser.pages import (
    expect_view,
    first_host,
    fixture_run,
    get_json,
    open_view,
)
from tests.browser.support import MULTI_HOST_FIXTURE, PageRecord

VIEW = "pod_viewer"


def _times(step: dict[str, Any]) -> str:
    return ",".join(f"{c['step_time_us']:.1f}" for c in step["hosts"])


def _expect_step(page: Page, step: dict[str, Any]) -> None:
    chart = page.get_by_test_id("pod-chart")
    expect(chart).to_have_attribute("data-step", str(step["step_num"]))
    expect(chart).to_have_attribute("data-step-times-us", _times(step))
    expect(page.get_by_test_id("pod-step")).to_have_text(str(step["step_num"]))
    slowest = max(step["hosts"], key=lambda c: c["step_time_us"])
    _expect_card(page, slowest)


def _expect_card(page: Page, column: dict[str, Any]) -> None:
    expect(page.get_by_test_id("pod-card-label")).to_have_text(column["host"])
    expect(page.get_by_test_id("pod-card-host-step")).to_have_text(str(column["step_num"]))
    expect(page.get_by_test_id("pod-card-step-time-us")).to_have_text(
        f"{column['step_time_us']:.1f}")
    for key, value in column["breakdown_us"].items():
        expect(page.get_by_test_id(f"pod-card-{key}-us")).to_have_text(f"{value:.1f}")


def _hover_column(page: Page, chart: Locator, fraction: float) -> None:
    box = chart.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * fraction, box["y"] + box["height"] * 0.6)


def test_slider_moves_the_columns_to_that_steps_numbers(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    run = fixture_run(tensorboard_url, MULTI_HOST_FIXTURE)
    assert get_json(tensorboard_url, "hosts", run=run, tag=VIEW)[0] == "ALL_HOSTS"
    doc = get_json(tensorboard_url, "data", run=run, tag=VIEW, host="ALL_HOSTS")
    steps = doc["steps"]
    assert len(steps) == doc["num_steps"] > 100 and len(doc["hosts"]) == 2
    open_view(page, tensorboard_url, VIEW, run, "ALL_HOSTS")
    expect(page.get_by_test_id("pod-viewer")).to_have_attribute("data-steps", str(len(steps)))
    _expect_step(page, steps[0])

    slider = page.get_by_test_id("pod-slider")
    slider.fill("57")
    _expect_step(page, steps[57])
    slider.focus()
    page.keyboard.press("ArrowRight")
    _expect_step(page, steps[58])
    page.keyboard.press("End")
    _expect_step(page, steps[-1])

    # Hovering a column shows that column's details in the card.
    chart = page.get_by_test_id("pod-chart")
    for fraction, column in ((0.3, steps[-1]["hosts"][0]), (0.8, steps[-1]["hosts"][1])):
        _hover_column(page, chart, fraction)
        _expect_card(page, column)

    # The straggler table: most lag first, as the server ranks it.
    first = page.get_by_test_id("straggler-row").first
    top = doc["stragglers"][0]
    expect(first).to_have_attribute("data-step", str(top["step_num"]))
    expect(first).to_have_attribute("data-host", top["host"])
    expect(first.get_by_test_id("straggler-row-lag_us")).to_have_text(f"{top['lag_us']:.1f}")
    expect(page.get_by_test_id("straggler-row-count")).to_contain_text(
        str(len(doc["stragglers"])))
    check_csv_link(page, page, "straggler-csv", "stragglers")
    assert_clean(record)


def test_one_host_run_shows_every_step_as_a_column(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    run = fixture_run(tensorboard_url, "tfdata_slow")
    assert VIEW in get_json(tensorboard_url, "run_tools", run=run)
    (host,) = get_json(tensorboard_url, "hosts", run=run, tag=VIEW)
    doc = get_json(tensorboard_url, "data", run=run, tag=VIEW, host=host)
    steps = doc["steps"]
    assert doc["hosts"] == [host] and len(steps) == doc["num_steps"] == 6
    assert all(len(step["hosts"]) == 1 for step in steps)
    open_view(page, tensorboard_url, VIEW, run, host)
    viewer = page.get_by_test_id("pod-viewer")
    expect(viewer).to_have_attribute("data-steps", "6")
    expect(viewer).to_have_attribute("data-hosts", host)
    every = page.get_by_test_id("pod-steps-chart")
    expect(every).to_have_attribute(
        "data-step-nums", ",".join(str(s["step_num"]) for s in steps))
    expect(every).to_have_attribute(
        "data-step-times-us", ",".join(_times(s) for s in steps))
    _expect_step(page, steps[0])
    # Hovering the last step's column picks that step.
    _hover_column(page, every, 0.95)
    _expect_step(page, steps[-1])
    expect(page.get_by_test_id("pod-one-host")).to_be_visible()
    expect(page.get_by_test_id("straggler-section")).to_have_count(0)
    assert_clean(record)


def test_memory_profile_to_pod_viewer_on_a_one_host_run(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    run = fixture_run(tensorboard_url, "keras_fit")
    host = first_host(tensorboard_url, run, "memory_profile")
    doc = get_json(tensorboard_url, "data", run=run, tag=VIEW, host=host)
    assert len(doc["steps"]) == doc["num_steps"] == 4
    open_view(page, tensorboard_url, "memory_profile", run, host)
    page.get_by_test_id("view-select").select_option(VIEW)
    expect_view(page, VIEW, run, host)  # fails on an error message
    expect(page.get_by_test_id("pod-viewer")).to_have_attribute("data-steps", "4")
    _expect_step(page, doc["steps"][0])
    expect(page.get_by_test_id("host-notice")).to_have_count(0)
    assert_clean(record)


def test_switching_tools_never_lands_on_a_host_the_view_lacks(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    """All hosts of the two-host run's pod viewer -> memory profile (one host at a time): its
    first host, and a notice naming its hosts; back to the pod viewer: that host's own."""
    run = fixture_run(tensorboard_url, MULTI_HOST_FIXTURE)
    memory_hosts = get_json(tensorboard_url, "hosts", run=run, tag="memory_profile")
    assert len(memory_hosts) == 2 and "ALL_HOSTS" not in memory_hosts
    open_view(page, tensorboard_url, VIEW, run, "ALL_HOSTS")
    page.get_by_test_id("view-select").select_option("memory_profile")
    expect_view(page, "memory_profile", run, memory_hosts[0])
    expect(page.get_by_test_id("host-select")).to_have_value(memory_hosts[0])
    notice = page.get_by_test_id("host-notice")
    expect(notice).to_contain_text("All hosts is not offered for Memory profile; showing")
    expect(page.get_by_test_id("host-notice-hosts")).to_have_text(", ".join(memory_hosts))

    page.get_by_test_id("view-select").select_option(VIEW)
    expect_view(page, VIEW, run, memory_hosts[0])
    doc = get_json(tensorboard_url, "data", run=run, tag=VIEW, host=memory_hosts[0])
    expect(page.get_by_test_id("pod-viewer")).to_have_attribute(
        "data-steps", str(doc["num_steps"]))
    assert doc["num_steps"] == len(doc["steps"]) > 100
    _expect_step(page, doc["steps"][0])
    expect(notice).to_have_count(0)
    assert_clean(record)
