"""Diagnostics have one place on every page: after the figures and tables.

For every view of two committed captures (the two-host run over all hosts, whose overview
has several notes and a warning, and a one-host tf.data run), and for the Compare page, the
page holds one diagnostics panel, some figure or table comes before it, and nothing shown
comes after it.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.pages import (
    LOAD_TIMEOUT_MS,
    fixture_run,
    get_json,
    open_view,
    selection_hash,
    standalone,
)
from tests.browser.support import MULTI_HOST_FIXTURE, PageRecord

pytestmark = pytest.mark.browser

#: What a page shows before its diagnostics: charts, tables, graphs, cards.
FIGURES = "canvas, table, svg, [data-testid^=card], .card"

#: (figures before the panel, shown elements after it that are not inside it, panels).
_PLACEMENT = """root => {
    const panels = root.querySelectorAll('[data-testid=diagnostics]');
    if (panels.length !== 1) return [0, [], panels.length];
    const panel = panels[0];
    const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
    const before = [...root.querySelectorAll(FIGURES)].filter(
        e => shown(e) && (e.compareDocumentPosition(panel) & Node.DOCUMENT_POSITION_FOLLOWING));
    const after = [...root.querySelectorAll('*')].filter(
        e => !panel.contains(e) && shown(e)
             && (panel.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING))
        .map(e => e.dataset.testid || e.className || e.tagName);
    return [before.length, after, 1];
}"""


def assert_diagnostics_last(root: Locator, what: str) -> None:
    figures, after, panels = root.evaluate(_PLACEMENT.replace("FIGURES", repr(FIGURES)))
    assert panels == 1, f"{what}: {panels} diagnostics panels"
    assert figures > 0, f"{what}: no figure or table before the diagnostics"
    assert after == [], f"{what}: shown after the diagnostics: {after[:10]}"


@pytest.mark.parametrize("scenario", [MULTI_HOST_FIXTURE, "tfdata_slow"])
def test_diagnostics_come_after_the_figures_on_every_view(
    page: Page, tensorboard_url: str, record: PageRecord, scenario: str
) -> None:
    run = fixture_run(tensorboard_url, scenario)
    views = get_json(tensorboard_url, "run_tools", run=run)
    assert len(views) >= 4, views
    for view in views:
        host = get_json(tensorboard_url, "hosts", run=run, tag=view)[0]
        document = open_view(page, tensorboard_url, view, run, host)
        expect(document.get_by_test_id("diagnostics")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        assert_diagnostics_last(document, f"{scenario} {view} {host}")
    assert record.console_errors == [] and record.page_errors == []


def test_diagnostics_come_last_on_the_compare_page(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    run_a, run_b = (fixture_run(tensorboard_url, s) for s in ("tfdata_slow", MULTI_HOST_FIXTURE))
    page.goto(standalone(tensorboard_url, selection_hash(run_a, "compare") + f"&run_b={run_b}"))
    compare = page.get_by_test_id("compare-page")
    expect(compare.get_by_test_id("diagnostics")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    assert_diagnostics_last(compare, "compare")
    assert record.console_errors == [] and record.page_errors == []
