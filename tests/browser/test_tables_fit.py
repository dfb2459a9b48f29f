"""Tables that fit at 1280 px (issue 18 item 4), on real captures in a real Chromium.

A 1280 × 800 window on a real TensorBoard serving real captures (tests/data): the overview,
TensorFlow stats, input pipeline, memory profile and tf.data views of TF captures, the pod
viewer of the two-host capture, and kernel stats of the two real JAX GPU captures. In every
table no numeric or content-sized cell clips its text (scrollWidth <= clientWidth), no header
hides its unit, and every name cell shows its full name or its start and end around an
ellipsis, the full name in its title. Where the names are long, some are cut (so the cut is
exercised), and every table fits its box without scrolling sideways. The run
selector cuts in the middle too and says the full name; the trace viewer's thread labels
(readable names, issue 29) fit the gutter, cut in the middle if too long, the full name on
hover.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import assert_clean
from tests.browser.conftest import captures_tensorboard
from tests.browser.fit_checks import ELLIPSIS, check_fold, check_middle_cut, table_fit
from tests.browser.pages import first_host, fixture_run, open_view
from tests.browser.support import PageRecord
from tests.browser.trace_page import open_viewer, wait_hook

pytestmark = pytest.mark.browser

CAPTURES = ("keras_fit", "tfdata_slow", "two_hosts", "jax_gpu_conv", "jax_gpu_attention")
# (capture, view): every view with a table, on the captures whose names are long.
PAGES = (
    ("keras_fit", "overview_page"),
    ("keras_fit", "tensorflow_stats"),
    ("keras_fit", "input_pipeline_analyzer"),
    ("keras_fit", "memory_profile"),
    ("tfdata_slow", "tf_data_bottleneck_analysis"),
    ("two_hosts", "tensorflow_stats"),
    ("two_hosts", "pod_viewer"),
    ("jax_gpu_conv", "kernel_stats"),
    ("jax_gpu_attention", "kernel_stats"),
    ("jax_gpu_attention", "tensorflow_stats"),
)
# Views whose long names must be cut somewhere (else the cut is not exercised).
CUT_SOMEWHERE = {"tensorflow_stats", "kernel_stats", "overview_page"}
THREAD_LABEL_WIDTH_PX = 180  # draw.ts THREAD_LABEL_WIDTH_PX


@pytest.fixture(scope="module")
def captures_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with captures_tensorboard(tmp_path_factory, "fit", CAPTURES) as base:
        yield base


@pytest.mark.parametrize(("capture", "view"), PAGES)
def test_no_number_is_clipped_and_names_are_cut_in_the_middle(
    page: Page, captures_url: str, record: PageRecord, capture: str, view: str
) -> None:
    run = fixture_run(captures_url, capture)
    open_view(page, captures_url, view, run, first_host(captures_url, run, view))
    page.wait_for_timeout(300)  # the names' ResizeObserver fits them after layout
    tables = table_fit(page)
    assert tables, f"{view} of {capture} shows no table"
    checked = sum(table["fitted_cells"] for table in tables)
    assert checked > 0 and sum(table["numeric_cells"] for table in tables) > 0
    for table in tables:
        assert table["clipped"] == [], f"{table['testid']} clips {table['clipped']}"
        assert table["clipped_headers"] == [], f"{table['testid']}: {table['clipped_headers']}"
        # Every table fits a 1280 px window without scrolling sideways, kernel stats of XLA
        # captures too (three name columns and 13 figure columns).
        assert table["table_px"] <= table["box_px"], (
            f"{table['testid']} is {table['table_px']} px in a {table['box_px']} px box"
        )
        for name in table["names"]:
            check_middle_cut(name)
    names = [name for table in tables for name in table["names"]]
    if view in CUT_SOMEWHERE:
        assert any(name["cut"] for name in names), f"no name of {view} was long enough to cut"
    print(f"{capture} {view}: {checked} cells, {len(names)} names "
          f"({sum(n['cut'] for n in names)} cut), tables "
          + ", ".join(f"{t['testid']} {t['table_px']}/{t['box_px']} px" for t in tables))
    assert_clean(record)


def test_kernel_names_keep_their_end_and_the_full_name_is_on_hover(
    page: Page, captures_url: str, record: PageRecord
) -> None:
    run = fixture_run(captures_url, "jax_gpu_attention")
    view = "kernel_stats"
    open_view(page, captures_url, view, run, first_host(captures_url, run, view))
    cut = page.locator("[data-testid=kernel-row-kernel_name] .middle-text[data-cut='1']").first
    expect(cut).to_be_visible()
    full = cut.get_attribute("title") or ""
    cell = cut.locator("xpath=ancestor::td[1]")
    expect(cell).to_have_attribute("title", full)
    shown = cut.inner_text()
    if cut.get_attribute("data-fold") == "1":  # alike kernels: cut where they differ
        parts = cut.evaluate("s => [...s.children].filter(c => !c.classList.contains("
                             "'middle-cut')).map(c => c.textContent)")
        check_fold("kernel name", full, parts)
        assert len(shown) < len(full)
    else:
        assert shown and full.endswith(shown[len(shown) // 2 :]) and len(shown) < len(full)
    # Widening the window gives the names more room: the cut keeps more of them.
    page.set_viewport_size({"width": 1920, "height": 800})
    page.wait_for_timeout(300)
    assert len(cut.inner_text()) > len(shown) or cut.get_attribute("data-cut") is None
    assert_clean(record)


def test_run_selector_keeps_the_session_timestamp(
    page: Page, captures_url: str, record: PageRecord
) -> None:
    run = fixture_run(captures_url, "jax_gpu_attention")  # 46 characters: too long to show
    view = "overview_page"
    open_view(page, captures_url, view, run, first_host(captures_url, run, view))
    select = page.get_by_test_id("run-select")
    expect(select).to_have_value(run)
    expect(select).to_have_attribute("title", run)
    option = select.locator(f"option[value='{run}']")
    expect(option).to_have_attribute("title", run)
    text = option.text_content() or ""
    head, _, tail = text.partition(ELLIPSIS)
    assert ELLIPSIS in text and run.startswith(head) and run.endswith(tail), text
    assert tail.endswith(run.rsplit("/", 1)[1][-8:]), f"the session's end is cut: {text!r}"
    fits = select.evaluate(
        """(s) => { const c = document.createElement('canvas').getContext('2d');
        const st = getComputedStyle(s); c.font = `${st.fontSize} ${st.fontFamily}`;
        return c.measureText(s.selectedOptions[0].text).width <= s.clientWidth; }"""
    )
    assert fits, f"{text!r} is wider than the selector"
    assert_clean(record)


def test_trace_thread_labels_fit_and_the_full_name_is_on_hover(
    page: Page, captures_url: str, record: PageRecord
) -> None:
    """Issue 29: a thread's label is its readable name (no long numeric id, alike names
    numbered: tests/browser/test_one_clock.py), cut in the middle only if still too long;
    the full name, id included, is on hover."""
    run = fixture_run(captures_url, "keras_fit")
    h = open_viewer(page, captures_url, run, first_host(captures_url, run, "trace_viewer"))
    labels = wait_hook(page, lambda hook: bool(hook["thread_labels"]), "thread labels")[
        "thread_labels"
    ]
    renamed = [label for label in labels if label["shown"] != label["name"]]
    assert renamed, f"no thread has an id to drop: {[x['name'] for x in labels]}"
    for label in labels:
        shown, readable = label["shown"], label["label"]
        assert label["width"] <= THREAD_LABEL_WIDTH_PX, label
        if shown != readable:
            head, _, tail = shown.partition(ELLIPSIS)
            assert readable.startswith(head) and readable.endswith(tail) and tail, label
            assert abs(len(head) - len(tail)) <= 1, label
    # Hovering a label says the whole name.
    box = page.get_by_test_id("trace-canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 40, box["y"] + renamed[0]["y"])
    hover = wait_hook(page, lambda hook: hook["hover"] is not None, "the hover note")["hover"]
    assert hover["kind"] == "thread" and hover["text"].endswith(renamed[0]["name"]), hover
    expect(page.get_by_test_id("trace-hover")).to_contain_text(renamed[0]["name"])
    assert h["frames"] > 0
    assert_clean(record)
