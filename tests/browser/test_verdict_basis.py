"""The two input-bound verdicts in a real Chromium: each says what it measures, and links the
other view.

On the real tfdata_cache capture the verdicts disagree: 3.1 % of the step time waits for input
(the overview: not input-bound) while the slowest pipeline call took 79.3 µs (the tf.data view:
input-bound, over 50 µs). The test opens the overview, checks its verdict-basis text is the
document's, follows the link to the tf.data view (same run and host, a history entry), checks
that view's text, and follows its link back.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import assert_clean, document
from tests.browser.conftest import own_tensorboard
from tests.browser.pages import expect_view, fixture_run, open_view
from tests.browser.support import PageRecord
from tests.fixtures import DATA_DIR

pytestmark = pytest.mark.browser

OVERVIEW = "overview_page"
TF_DATA = "tf_data_bottleneck_analysis"
SCENARIO = "tfdata_cache"


@pytest.fixture(scope="module")
def cache_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A TensorBoard on a copy of the tfdata_cache capture."""
    def fill(logdir: Path) -> None:
        shutil.copytree(DATA_DIR / SCENARIO, logdir / SCENARIO)

    with own_tensorboard(tmp_path_factory, SCENARIO, fill) as base:
        yield base


def test_verdict_bases_render_and_link_each_other(
    page: Page, cache_url: str, record: PageRecord
) -> None:
    run = fixture_run(cache_url, SCENARIO)
    host, overview = document(cache_url, run, OVERVIEW)
    tf_host, tf_data = document(cache_url, run, TF_DATA)
    assert tf_host == host
    assert overview["verdict_other_view"] == {"view": TF_DATA, "input_bound": True,
                                              "agrees": False}
    assert tf_data["verdict_other_view"]["agrees"] is False

    open_view(page, cache_url, OVERVIEW, run, host)
    basis = page.get_by_test_id("overview-verdict-basis")
    expect(basis).to_have_attribute("data-agrees", "false")
    expect(page.get_by_test_id("overview-verdict-basis-text")).to_have_text(
        overview["verdict_basis"])
    assert "3.1 % over 18 steps" in overview["verdict_basis"]
    link = page.get_by_test_id("overview-verdict-basis-link")
    expect(link).to_have_attribute("data-view", TF_DATA)
    expect(link).to_have_text("See why the tf.data bottleneck analysis says otherwise")

    link.click()
    expect_view(page, TF_DATA, run, host)
    expect(page.get_by_test_id("tfdata-summary")).to_have_attribute("data-input-bound", "true")
    expect(page.get_by_test_id("tfdata-verdict-basis")).to_have_attribute("data-agrees", "false")
    expect(page.get_by_test_id("tfdata-verdict-basis-text")).to_have_text(
        tf_data["verdict_basis"])
    assert "its slowest stage is MemoryCache" in tf_data["verdict_basis"]
    assert f"view={TF_DATA}" in page.url

    back = page.get_by_test_id("tfdata-verdict-basis-link")
    expect(back).to_have_attribute("data-view", OVERVIEW)
    back.click()
    expect_view(page, OVERVIEW, run, host)
    expect(page.get_by_test_id("overview-verdict-basis-text")).to_have_text(
        overview["verdict_basis"])

    page.go_back()  # each switch was a history entry
    expect_view(page, TF_DATA, run, host)
    assert_clean(record)
