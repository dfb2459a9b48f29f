"""Dense trace regions keep their step boundaries, and hover notes go with a zoom or pan
(issue 29 item 5).

The synthetic capture (tests/browser/trace_steps_synthetic.py): 130 back-to-back 10 ms `train`
steps on one thread, 400 sub-pixel ops inside each. At a 0.5-1.3 s view the steps used to
draw as one unbroken bar and the ops as one hatched block across many steps; a hover note
stayed on screen after a zoom. Now:

- every step that starts inside the view after another ends there gets a 1 px boundary
  (background colour, read back from the canvas) at its start;
- the ops' density blocks (the server's, trace/window.py `split_at_parents`, and the page's
  own runs) never cross a step: each drawn block lies inside one step, and touching blocks
  get a boundary too;
- a zoom (ctrl+wheel, W) or a pan (shift+wheel) hides the hover note.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser import trace_steps_synthetic as synth
from tests.browser.checks import assert_clean
from tests.browser.conftest import own_tensorboard
from tests.browser.support import PageRecord
from tests.browser.test_trace_reading import canvas_colours, canvas_point, zoom_to
from tests.browser.trace_page import Hook, open_viewer, settled, wait_hook, window_json

pytestmark = pytest.mark.browser

GUTTER_PX = 200
STEP_US = synth.STEP_PS / 1e6


@pytest.fixture(scope="module")
def steps_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with own_tensorboard(tmp_path_factory, "dense_steps", synth.write_steps_trace) as base:
        yield base


def _view_half_to_end(page: Page, base: str) -> Hook:
    """The viewer on the capture, zoomed to about 0.5-1.3 s (about the right edge)."""
    open_viewer(page, base, synth.STEPS_RUN, synth.STEPS_HOST)
    zoom_to(page, 800_000.0, 0.999)
    return wait_hook(page, settled, "the 0.5-1.3 s view")


def _x_of(h: Hook, us: float) -> float:
    start, end = h["view_us"]
    return GUTTER_PX + (us - start) * h["track_width_px"] / (end - start)


def _steps(doc: dict[str, Any]) -> list[tuple[float, float]]:
    ev = doc["events"]
    names = doc["strings"] if "strings" in doc else None
    out = []
    for k, (s, d, depth) in enumerate(zip(ev["start_us"], ev["duration_us"], ev["depth"],
                                          strict=True)):
        if depth == 0:
            name = ev["name"][k] if names is None else names[ev["name"][k]]
            assert name == synth.STEP_NAME
            out.append((s, s + d))
    return sorted(out)


def test_step_boundaries_stay_visible_and_blocks_stay_inside_steps(
    page: Page, steps_url: str, record: PageRecord
) -> None:
    h = _view_half_to_end(page, steps_url)
    view_start, view_end = h["view_us"]
    assert 450_000 <= view_start <= 560_000 and view_end >= 1_290_000, h["view_us"]
    step_row, op_row = (next(k for k in h["drawn_row_keys"] if k.endswith(f":{d}"))
                        for d in (0, 1))
    doc = window_json(steps_url, h["loaded"]["url"])
    assert doc["filtered_events"] > 0, "the ops are folded into density blocks"
    steps = _steps(doc)
    # Steps starting inside the view right where the previous one ends: one boundary each.
    inner_starts = [s for s, _ in steps if view_start < s < view_end
                    and any(abs(e - s) < 1e-6 for _, e in steps)]
    assert len(inner_starts) >= 75
    drawn = sorted(b["x"] for b in h["boundaries"] if b["row"] == step_row)
    assert len(drawn) == len(inner_starts)
    for x, s in zip(drawn, inner_starts, strict=True):
        assert abs(x - _x_of(h, s)) <= 1.0, (x, s)
    # Read back from the canvas: a column of background inside the step row at a boundary,
    # and the step's colour on either side of it.
    target = next(t for t in h["targets"] if t["name"] == synth.STEP_NAME)
    row_y, row_h = target["y"], target["h"]
    x = round(drawn[len(drawn) // 2])
    at = canvas_colours(page, x, row_y + 2, 1, row_h - 4)
    assert at.most_common(1)[0][0] == 0xFFFFFF, at.most_common(3)
    beside = canvas_colours(page, x + 3, row_y + 2, 1, row_h - 4)
    assert beside.most_common(1)[0][0] != 0xFFFFFF
    # The ops' blocks: at least one per step in the view, each inside one step, touching
    # ones separated.
    op_blocks = [b for b in h["blocks"] if b["row"] == op_row]
    assert op_blocks and h["drawn_blocks"] >= len(inner_starts)
    for b in op_blocks:
        holders = [(s, e) for s, e in steps if s <= b["start_us"] and b["end_us"] <= e]
        assert len(holders) == 1, (b["start_us"], b["end_us"])
    server = doc["density"]
    for s, e in zip(server["start_us"], server["end_us"], strict=True):
        assert not any(s < step_start < e for step_start, _ in steps), (s, e)
    op_boundaries = [b for b in h["boundaries"] if b["row"] == op_row]
    assert len(op_boundaries) >= len(inner_starts) - 2
    assert_clean(record)


def _hover_block(page: Page, h: Hook) -> None:
    block = max(h["blocks"], key=lambda b: b["w"])
    page.mouse.move(*canvas_point(page, block["x"] + block["w"] / 2, block["y"] + block["h"] / 2))
    note = page.get_by_test_id("trace-hover")
    expect(note).to_be_visible()
    expect(note).to_have_attribute("data-kind", "block")


def test_hover_note_goes_on_zoom_and_pan(page: Page, steps_url: str, record: PageRecord) -> None:
    h = _view_half_to_end(page, steps_url)
    note = page.get_by_test_id("trace-hover")
    # A zoom with ctrl+wheel about the pointer.
    _hover_block(page, h)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -200)
    page.keyboard.up("Control")
    wait_hook(page, lambda v: v["view_us"] != h["view_us"], "the zoom")
    expect(note).to_have_count(0)
    assert page.evaluate("() => window.__tbTrace.hover") is None
    # A pan with shift+wheel.
    h = wait_hook(page, settled, "the zoomed view")
    _hover_block(page, h)
    page.keyboard.down("Shift")
    page.mouse.wheel(0, 120)
    page.keyboard.up("Shift")
    wait_hook(page, lambda v: v["view_us"] != h["view_us"], "the pan")
    expect(note).to_have_count(0)
    # A zoom with the keyboard (W).
    h = wait_hook(page, settled, "the panned view")
    _hover_block(page, h)
    page.keyboard.press("w")
    wait_hook(page, lambda v: v["view_us"] != h["view_us"], "the key zoom")
    expect(note).to_have_count(0)
    # Moving the pointer again says what is under it now.
    h = wait_hook(page, settled, "the key-zoomed view")
    _hover_block(page, h)
    assert_clean(record)
