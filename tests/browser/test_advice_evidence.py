"""Advice that agrees with the evidence (issue 18 item 5), in a real Chromium on real captures.

tfdata_parallel's pipeline ends in Prefetch over an autotuned ParallelMapV2 (the tf.data view
says "Prefetch last: yes"); it waits 12.5 % of each step for input, so the overview calls it
input-bound. The pages must not tell it to add a prefetch or to parallelise its map: those
pieces are withheld, each with the evidence that contradicts it, and every piece shown quotes
its evidence. tfdata_slow's pipeline ends in BatchV2: there the prefetch advice is shown, with
the last transformation it rests on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.checks import assert_clean, document
from tests.browser.conftest import captures_tensorboard
from tests.browser.pages import fixture_run, open_view
from tests.browser.support import PageRecord

pytestmark = pytest.mark.browser

OVERVIEW = "overview_page"
INPUT = "input_pipeline_analyzer"
TF_DATA = "tf_data_bottleneck_analysis"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with captures_tensorboard(tmp_path_factory, "advice", ("tfdata_parallel", "tfdata_slow")
                              ) as url:
        yield url


def _check_shown_advice(items: Locator, advice: list[dict[str, Any]]) -> None:
    """The page shows the document's advice in order, each with its evidence, and the
    evidence's first value is quoted in the prose."""
    expect(items).to_have_count(len(advice))
    for index, piece in enumerate(advice):
        item = items.nth(index)
        expect(item).to_have_attribute("data-key", piece["key"])
        expect(item.locator("p")).to_have_text(piece["text"].partition("\n")[0])
        evidence = item.get_by_test_id("advice-evidence")
        expect(evidence).to_have_count(len(piece["evidence"]))
        assert piece["evidence"], piece
        for k, e in enumerate(piece["evidence"]):
            expect(evidence.nth(k)).to_have_attribute("data-what", e["what"])
            expect(evidence.nth(k).get_by_test_id("advice-evidence-value")).to_have_text(
                e["value"])
        first = piece["evidence"][0]["value"]
        quoted = first.rsplit("::", 1)[-1] if "::" in first else first
        assert quoted in (item.locator("p").text_content() or ""), piece


def _check_withheld(root: Page, withheld: list[dict[str, str]]) -> None:
    details = root.get_by_test_id("advice-withheld")
    expect(details).to_have_count(1)
    items = details.get_by_test_id("advice-withheld-item")
    expect(items.first).to_be_hidden()  # collapsed until asked
    details.locator("summary").click()
    expect(items).to_have_count(len(withheld))
    for index, item in enumerate(withheld):
        expect(items.nth(index)).to_be_visible()
        expect(items.nth(index)).to_have_attribute("data-key", item["key"])
        expect(items.nth(index)).to_have_text(item["reason"])


def test_prefetched_pipeline_is_not_told_to_prefetch(
    page: Page, base: str, record: PageRecord
) -> None:
    run = fixture_run(base, "tfdata_parallel")
    host, overview = document(base, run, OVERVIEW)
    assert overview["bottleneck"]["input_bound"] == "moderately"  # 12.5 % waits for input
    open_view(page, base, OVERVIEW, run, host)
    items = page.get_by_test_id("recommendation")
    _check_shown_advice(items, overview["advice"])
    shown = " ".join(items.all_text_contents())
    assert ".prefetch(" not in shown and "num_parallel_calls" not in shown
    assert "ParallelMapV2" in shown  # the tf.data view's slowest stage, quoted
    withheld = {w["key"]: w["reason"] for w in overview["advice_withheld"]}
    assert withheld["tf_data_prefetch"] == (
        "every tf.data pipeline already ends in prefetch (Iterator::Root::Prefetch)")
    assert withheld["tf_data_parallel_map"] == (
        "the pipeline's maps already run in parallel "
        "(Iterator::Root::Prefetch::BatchV2::ParallelMapV2)")
    _check_withheld(page, overview["advice_withheld"])

    # the input pipeline analyzer: the same input advice, the same reasons
    _, pipeline = document(base, run, INPUT)
    open_view(page, base, INPUT, run, host)
    _check_shown_advice(page.get_by_test_id("input-advice-item"), pipeline["advice"])
    assert [a["key"] for a in pipeline["advice"]] == ["tf_data_bottleneck"]
    _check_withheld(page, pipeline["advice_withheld"])

    # the tf.data view says "Prefetch last: yes" and, agreeing, gives no prefetch advice
    _, tf_data = document(base, run, TF_DATA)
    open_view(page, base, TF_DATA, run, host)
    expect(page.get_by_test_id("tfdata-pipeline-row-ends_in_prefetch").first).to_have_text("yes")
    [row] = tf_data["bottlenecks"]
    _check_shown_advice(page.get_by_test_id("tfdata-suggestion"), row["advice"])
    suggestions = " ".join(page.get_by_test_id("tfdata-suggestion").all_text_contents())
    assert ".prefetch(" not in suggestions and "num_parallel_calls" not in suggestions
    assert [w["key"] for w in row["advice_withheld"]] == ["tf_data_autotune", "tf_data_prefetch"]
    _check_withheld(page, row["advice_withheld"])
    assert_clean(record)


def test_pipeline_without_prefetch_is_told_with_its_evidence(
    page: Page, base: str, record: PageRecord
) -> None:
    run = fixture_run(base, "tfdata_slow")
    host, overview = document(base, run, OVERVIEW)
    open_view(page, base, OVERVIEW, run, host)
    items = page.get_by_test_id("recommendation")
    _check_shown_advice(items, overview["advice"])
    prefetch = page.locator("[data-testid=recommendation][data-key=tf_data_prefetch]")
    expect(prefetch.locator("p")).to_contain_text(
        "the tf.data pipeline ends in Iterator::Root::BatchV2, not in a prefetch: add "
        ".prefetch(tf.data.AUTOTUNE)")
    expect(prefetch.locator("[data-what='last transformation of the pipeline']")).to_contain_text(
        "Iterator::Root::BatchV2")
    expect(prefetch.locator("[data-what='input share of step time']")).to_contain_text(
        f"{overview['input_percent']:.1f} %")
    _, tf_data = document(base, run, TF_DATA)
    open_view(page, base, TF_DATA, run, host)
    expect(page.get_by_test_id("tfdata-pipeline-row-ends_in_prefetch").first).to_have_text("no")
    _check_shown_advice(page.get_by_test_id("tfdata-suggestion"),
                        tf_data["bottlenecks"][0]["advice"])
    expect(page.locator("[data-testid=tfdata-suggestion][data-key=tf_data_prefetch]")
           ).to_contain_text("its last transformation is Iterator::Root::BatchV2")
    assert_clean(record)
