"""One verdict per page, in a real Chromium (issue 29).

The overview of a device-bound JAX capture (jax_gpu_attention: JAX on an AMD GPU, the device
computing nearly all the step) leads its banner with what bounds the step, "Bounded by device
compute (…)", and never calls the run input-bound, while its "Not advised, and why" list says it
is not input-bound. jax_nvidia_device_bound marks its steps: the reference's level stays
POTENTIALLY (`data-level`), but the profile shows no input pipeline, so the page states "not"
and no line of its banner says "potentially input-bound". The input pipeline page of
jax_nvidia_train (JAX on an H200) lists the device's MemcpyH2D copies, which the overview
counts as input time, with their count and their share of device time as the overview gives it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import (
    PERCENT,
    assert_clean,
    assert_figure,
    document,
    row_names,
    shown_text,
)
from tests.browser.conftest import own_tensorboard
from tests.browser.pages import fixture_run, open_view
from tests.browser.support import PageRecord
from tests.fixtures import DATA_DIR

pytestmark = pytest.mark.browser

FIXTURES = ("jax_gpu_attention", "jax_nvidia_device_bound", "jax_nvidia_train")
OVERVIEW = "overview_page"
INPUT = "input_pipeline_analyzer"
_CALLED_INPUT_BOUND = ("potentially input-bound", "moderately input-bound",
                       "highly input-bound")


def _copy(logdir: Path) -> None:
    for name in FIXTURES:
        shutil.copytree(DATA_DIR / name, logdir / name)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with own_tensorboard(tmp_path_factory, "one_verdict", _copy) as url:
        yield url


def _check_not_input_bound_banner(page: Page, doc: dict, level: str) -> None:
    """The banner names the bound, states "not" and never calls the run input-bound, and the
    withheld list says it is not input-bound."""
    b = doc["bottleneck"]
    verdict = page.get_by_test_id("overview-verdict")
    expect(verdict).to_have_attribute("data-level", level)
    expect(verdict).to_have_attribute("data-stated-level", "not")
    expect(verdict).to_have_attribute("data-bound", b["bound_by"])
    expect(page.get_by_test_id("overview-verdict-headline")).to_have_text(b["headline"])
    expect(page.get_by_test_id("overview-verdict-level")).to_have_count(0)
    banner = (verdict.text_content() or "").lower()
    assert not any(words in banner for words in _CALLED_INPUT_BOUND), banner
    assert "not input-bound" in banner

    details = page.get_by_test_id("advice-withheld")
    details.locator("summary").click()
    withheld = details.locator('[data-testid="advice-withheld-item"][data-key="input"]')
    expect(withheld).to_be_visible()
    assert "not input-bound" in (withheld.text_content() or "")


def test_device_bound_jax_overview_names_the_bound_and_one_verdict(
    page: Page, base: str, record: PageRecord
) -> None:
    run = fixture_run(base, "jax_gpu_attention")
    host, doc = document(base, run, OVERVIEW)
    share = doc["categories"]["device_compute"]["percent"]
    assert doc["bottleneck"]["headline"] == f"Bounded by device compute ({share:.1f} %)"

    open_view(page, base, OVERVIEW, run, host)
    assert shown_text(page, "overview-verdict-headline").startswith("Bounded by device compute")
    _check_not_input_bound_banner(page, doc, "not")
    assert_clean(record)


def test_marked_steps_without_an_input_pipeline_keep_the_level_but_not_the_words(
    page: Page, base: str, record: PageRecord
) -> None:
    run = fixture_run(base, "jax_nvidia_device_bound")
    host, doc = document(base, run, OVERVIEW)
    assert doc["bottleneck"]["input_bound"] == "potentially"  # the reference's rule

    open_view(page, base, OVERVIEW, run, host)
    _check_not_input_bound_banner(page, doc, "potentially")
    assert_clean(record)


def test_input_page_lists_the_device_copies_the_overview_counts_as_input(
    page: Page, base: str, record: PageRecord
) -> None:
    run = fixture_run(base, "jax_nvidia_train")
    _, overview = document(base, run, OVERVIEW)
    [copy] = [op for op in overview["top_device_ops"] if op["name"] == "MemcpyH2D"]
    host, doc = document(base, run, INPUT)

    open_view(page, base, INPUT, run, host)
    assert "MemcpyH2D" in row_names(page, "input-op-row")
    row = page.locator('[data-testid="input-op-row"][data-op-name="MemcpyH2D"]')
    expect(row).to_have_count(1)
    assert shown_text(row, "input-op-row-count") == str(copy["occurrences"]) == "12"
    assert shown_text(row, "input-op-row-side") == "device"
    assert_figure(row, "input-op-row-device_time_percent", 100 * copy["self_time_fraction"],
                  PERCENT)
    expect(page.get_by_test_id("input-ops-table-empty")).to_have_count(0)
    panel = (page.get_by_test_id("input-pipeline").text_content() or "")
    assert "holds no tf.data iterator, infeed or host-to-device copy" not in panel
    assert not any("no input ops" in m for m in doc["diagnostics"]["info"])
    assert_clean(record)
