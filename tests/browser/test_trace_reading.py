"""The trace viewer tells the truth at a glance: dense regions, the ruler, keys, search.

- the synthetic 2M-event profile (tests/browser/trace_synthetic.py): fully zoomed out, each
  row is thousands of events narrower than a pixel; they are drawn as a hatched density block
  (pixel colours read back from the canvas vary inside it: never one solid bar), hovering it
  says how many events it holds (the count the `data` route's `density` reports), and
  clicking it zooms in instead of selecting one tiny event;
- the ruler's labels are distinct at 1 s, 1 ms and 1 µs spans far from the trace origin;
- the real capture `tfdata_slow`: W/A/S/D act right after the page loads (the timeline has
  the focus), and a search lands on the first match at or after the view's start and says
  "k of N".
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser import trace_synthetic
from tests.browser.checks import assert_clean
from tests.browser.pages import LOAD_TIMEOUT_MS, first_host, fixture_run, get_json
from tests.browser.support import PageRecord
from tests.browser.trace_page import (
    VIEW,
    Hook,
    hook,
    open_viewer,
    settled,
    wait_hook,
    window_json,
)

pytestmark = pytest.mark.browser


def canvas_point(page: Page, x: float, y: float) -> tuple[float, float]:
    box = page.get_by_test_id("trace-canvas").bounding_box()
    assert box is not None
    return box["x"] + x, box["y"] + y


def canvas_colours(page: Page, x: float, y: float, w: float, h: float) -> Counter[int]:
    """The colours (0xRRGGBB) of the canvas pixels in a CSS-px rectangle, counted."""
    pixels: list[int] = page.get_by_test_id("trace-canvas").evaluate(
        """(c, [x, y, w, h]) => {
            const r = window.devicePixelRatio || 1;
            const d = c.getContext('2d').getImageData(
                Math.round(x * r), Math.round(y * r), Math.round(w * r), Math.round(h * r)).data;
            const out = [];
            for (let i = 0; i < d.length; i += 4)
                out.push((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
            return out;
        }""",
        [x, y, w, h],
    )
    return Counter(pixels)


def big(page: Page, base: str) -> Hook:
    h = open_viewer(page, base, trace_synthetic.BIG_RUN, trace_synthetic.BIG_HOST)
    assert h["loaded"]["total_events"] == trace_synthetic.BIG_EVENTS
    return h


def test_a_dense_region_is_a_hatched_block_that_says_how_many_events(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base = synthetic_tensorboard_url
    h = big(page, base)
    doc = window_json(base, h["loaded"]["url"])
    assert doc["filtered_events"] > 0 and doc["density"]["count"], "the full view is dense"
    # The first thread's outermost row: 10,000 steps of 100 µs, 20 µs apart, far below a
    # pixel at full zoom-out: one block across the row, never one long step.
    first_row = h["drawn_row_keys"][0]
    assert first_row.endswith(":0")
    blocks = [b for b in h["blocks"] if b["row"] == first_row]
    assert len(blocks) == 1
    block = blocks[0]
    assert block["w"] >= h["track_width_px"] * 0.9
    pid, tid, depth = (int(v) for v in first_row.split(":"))
    server = [
        c for p, t, d, c in zip(
            doc["density"]["pid"], doc["density"]["tid"], doc["density"]["depth"],
            doc["density"]["count"], strict=True)
        if (p, t, d) == (pid, tid, depth)
    ]
    assert block["count"] == sum(server) == trace_synthetic.BLOCKS
    assert not any(t["y"] == block["y"] for t in h["targets"]), "no solid event in that row"
    # A texture, read back from the canvas: the right half of the block (its label is on the
    # left) has several colours, none of them most of it.
    colours = canvas_colours(
        page, block["x"] + block["w"] * 0.5, block["y"] + 2, block["w"] * 0.4, block["h"] - 4
    )
    top_share = colours.most_common(1)[0][1] / sum(colours.values())
    assert len(colours) >= 2 and top_share < 0.85, colours.most_common(4)
    # Hovering it says how many events it holds.
    x, y = block["x"] + block["w"] * 0.6, block["y"] + block["h"] / 2
    page.mouse.move(*canvas_point(page, x, y))
    note = page.get_by_test_id("trace-hover")
    expect(note).to_have_attribute("data-kind", "block")
    expect(note).to_have_attribute("data-count", str(trace_synthetic.BLOCKS))
    expect(note).to_contain_text(f"{trace_synthetic.BLOCKS:,} events")
    # Clicking it zooms in (4x about the click for a block this wide) and selects nothing.
    span = h["view_us"][1] - h["view_us"][0]
    page.mouse.click(*canvas_point(page, x, y))
    zoomed = wait_hook(page, lambda v: v["view_us"] != h["view_us"], "the zoom into the block")
    assert math.isclose(zoomed["view_us"][1] - zoomed["view_us"][0], span / 4, rel_tol=0.01)
    assert zoomed["selected_id"] is None
    expect(page.get_by_test_id("trace-details-empty")).to_be_visible()
    assert_clean(record)


def zoom_to(page: Page, span_us: float, x_fraction: float) -> Hook:
    """Ctrl+wheel about x_fraction of the track until the view spans about `span_us`."""
    h = wait_hook(page, settled, "a settled viewer")
    x, y = canvas_point(page, 200 + h["track_width_px"] * x_fraction, 120)
    page.mouse.move(x, y)
    for _ in range(30):
        h = hook(page)
        span = h["view_us"][1] - h["view_us"][0]
        if abs(math.log(span / span_us)) < 0.05:
            return h
        # The page zooms by exp(-deltaY * 0.002); at most a factor of e^2 per event.
        delta = max(min(math.log(span / span_us) / 0.002, 1000.0), -1000.0)
        frames = h["frames"]
        page.keyboard.down("Control")
        page.mouse.wheel(0, -delta)
        page.keyboard.up("Control")
        wait_hook(page, lambda v, f=frames: v["frames"] > f, "a redraw")
    raise AssertionError(f"could not zoom to {span_us} µs; view {hook(page)['view_us']}")


@pytest.mark.parametrize("span_us", [1e6, 1e3, 1.0], ids=["1s", "1ms", "1us"])
def test_ruler_labels_are_distinct_at_every_zoom(
    page: Page, synthetic_tensorboard_url: str, span_us: float, record: PageRecord
) -> None:
    big(page, synthetic_tensorboard_url)
    # Near the end of the 1.2 s trace, where four significant digits of an absolute time
    # would repeat at a 1 µs or 1 ms span.
    h = zoom_to(page, span_us, 0.95)
    labels = h["ruler_labels"]
    assert len(labels) >= 3, labels
    assert len(set(labels)) == len(labels), labels
    if span_us < 1e6:
        # Offsets from a labelled origin, in the unit that fits the span.
        assert all(label.startswith("+") for label in labels[1:]), labels
        units = ("µs", "ms") if span_us >= 1e3 else ("ns", "µs")
        assert all(label.split(" ")[-1] in units for label in labels[1:]), labels
        assert labels[0].endswith(" s") and not labels[0].startswith("+"), labels
    assert_clean(record)


@pytest.fixture
def tfdata_run(tensorboard_url: str) -> tuple[str, str]:
    run = fixture_run(tensorboard_url, "tfdata_slow")
    return run, first_host(tensorboard_url, run, VIEW)


def test_keys_work_right_after_the_page_loads(
    page: Page, tensorboard_url: str, tfdata_run: tuple[str, str], record: PageRecord
) -> None:
    run, host = tfdata_run
    h = open_viewer(page, tensorboard_url, run, host)
    assert page.get_by_test_id("trace-scroller").evaluate("e => document.activeElement === e")
    span = h["view_us"][1] - h["view_us"][0]
    page.keyboard.press("w")  # no click first
    zoomed = wait_hook(page, lambda v: v["view_us"][1] - v["view_us"][0] < span * 0.9, "W")
    page.keyboard.press("d")
    panned = wait_hook(page, lambda v: v["view_us"][0] > zoomed["view_us"][0], "D")
    page.keyboard.press("a")
    wait_hook(page, lambda v: v["view_us"][0] < panned["view_us"][0], "A")
    page.keyboard.press("s")
    wait_hook(page, lambda v: v["view_us"][1] - v["view_us"][0] > panned["view_us"][1]
              - panned["view_us"][0], "S")
    assert_clean(record)


def test_search_starts_at_the_view_and_says_k_of_n(
    page: Page, tensorboard_url: str, tfdata_run: tuple[str, str], record: PageRecord
) -> None:
    run, host = tfdata_run
    open_viewer(page, tensorboard_url, run, host)
    query = "IteratorGetNext"
    # Zoom in 4x about the middle of the trace: the view starts after the first matches.
    for _ in range(7):
        page.keyboard.press("w")
    h = wait_hook(page, settled, "the zoom")
    view_start = h["view_us"][0]
    expected: dict[str, Any] = get_json(
        tensorboard_url, "trace_search", run=run, host=host, q=query, from_us=str(view_start)
    )
    total, k = expected["total_matches"], expected["index"]
    assert 0 < k < total - 1, "the view should start between the first and the last match"
    assert expected["match"]["start_us"] >= view_start
    box = page.get_by_test_id("trace-search")
    box.fill(query)
    box.press("Enter")
    status = page.get_by_test_id("trace-search-status")
    expect(status).to_have_text(f"{k + 1} of {total}", timeout=LOAD_TIMEOUT_MS)
    expect(page.get_by_test_id("trace-details")).to_have_attribute(
        "data-event-id", str(expected["match"]["id"])
    )
    # Next and previous step from there.
    page.get_by_test_id("trace-search-next").click()
    expect(status).to_have_text(f"{k + 2} of {total}", timeout=LOAD_TIMEOUT_MS)
    page.get_by_test_id("trace-search-prev").click()
    expect(status).to_have_text(f"{k + 1} of {total}", timeout=LOAD_TIMEOUT_MS)
    assert_clean(record)
