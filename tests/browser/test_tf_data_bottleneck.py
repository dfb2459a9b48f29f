"""The tf.data bottleneck view in a real Chromium, on the real tfdata fixtures.

The test fetches the view's JSON from the same server, opens the view and checks: the
verdict and the bottleneck's names; one graph node per iterator of the selected execution,
each showing the document's numbers; the red node is the bottleneck (and only it); changing
the rank redraws the graph with that execution's numbers; the tables and CSV links.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import (
    US,
    assert_clean,
    assert_shown_number,
    check_csv_link,
    document,
    shown_text,
)
from tests.browser.pages import (
    Root,
    fixture_run,
    open_in_tensorboard,
    open_view,
)
from tests.browser.support import PageRecord

pytestmark = pytest.mark.browser

VIEW = "tf_data_bottleneck_analysis"
BOTTLENECK_RED = "#d32f2f"


def _graph(doc: dict[str, Any], rank: int) -> dict[str, Any]:
    summary = doc["summary"]
    graphs = [g for g in doc["graphs"] if g["host"] == summary["host"]
              and g["input_pipeline"] == summary["input_pipeline"] and g["rank"] == rank]
    assert len(graphs) == 1
    return graphs[0]


def check_graph(root: Root, graph: dict[str, Any]) -> None:
    """The drawn graph is `graph`: one node per iterator, each with its numbers."""
    svg = root.get_by_test_id("tfdata-graph")
    expect(svg).to_have_attribute("data-rank", str(graph["rank"]))
    nodes = root.get_by_test_id("tfdata-node")
    expect(nodes).to_have_count(len(graph["nodes"]))
    assert_shown_number(shown_text(root, "tfdata-latency"), graph["latency_us"], US, "latency")
    drawn = {n.get_attribute("data-id"): n for n in nodes.all()}
    assert set(drawn) == {n["id"] for n in graph["nodes"]}
    for node in graph["nodes"]:
        element = drawn[node["id"]]
        assert element.get_attribute("data-name") == node["name"]
        for key, field in (("self", "self_time_us"), ("total", "total_duration_us"),
                           ("start", "start_time_us")):
            text = element.get_by_test_id(f"tfdata-node-{key}").text_content() or ""
            number = text.split()[1]
            assert_shown_number(number, node[field], US, f"{node['name']} {key}")
        calls = (element.get_by_test_id("tfdata-node-calls").text_content() or "").split()[0]
        assert int(calls) == node["num_calls"]
        box = element.get_by_test_id("tfdata-node-box")
        red = box.get_attribute("stroke") == BOTTLENECK_RED
        assert red == node["is_bottleneck"], f"{node['name']} red={red}"
        dashed = box.get_attribute("stroke-dasharray") is not None
        assert dashed == (not node["on_critical_path"] and not node["is_bottleneck"])
        if node["on_critical_path"]:
            assert float(box.get_attribute("stroke-width") or 0) >= 3
    # exactly one red node, and it is the document's bottleneck
    red_ids = [i for i, n in drawn.items()
               if n.get_by_test_id("tfdata-node-box").get_attribute("stroke") == BOTTLENECK_RED]
    assert red_ids == [n["id"] for n in graph["nodes"] if n["is_bottleneck"]]
    assert len(red_ids) == 1
    # one edge per node whose consumer is in the graph
    ids = {n["id"] for n in graph["nodes"]}
    edges = sum(1 for n in graph["nodes"] if n["parent_id"] in ids)
    expect(root.get_by_test_id("tfdata-edge")).to_have_count(edges)


@pytest.mark.parametrize("fixture", ["tfdata_slow", "tfdata_parallel"])
def test_graph_follows_the_rank(
    page: Page, tensorboard_url: str, record: PageRecord, fixture: str
) -> None:
    run = fixture_run(tensorboard_url, fixture)
    host, doc = document(tensorboard_url, run, VIEW)
    open_view(page, tensorboard_url, VIEW, run, host)
    summary = doc["summary"]
    expect(page.get_by_test_id("tfdata-summary")).to_have_attribute(
        "data-input-bound", str(summary["is_input_bound"]).lower())
    assert shown_text(page, "tfdata-bottleneck-name") == summary["iterator_name"]
    assert shown_text(page, "tfdata-bottleneck-long-name") == summary["iterator_long_name"]
    expect(page.get_by_test_id("tfdata-message")).to_have_text(summary["message"])
    expect(page.get_by_test_id("tfdata-pipeline-row")).to_have_count(len(doc["pipelines"]))
    expect(page.get_by_test_id("tfdata-suggestion")).to_have_count(
        len(doc["bottlenecks"][0]["suggestions"]))

    check_graph(page, _graph(doc, 1))
    ranks = [g["rank"] for g in doc["graphs"]]
    assert len(ranks) >= 3
    for rank in (ranks[-1], 2):
        page.get_by_test_id("tfdata-rank-select").select_option(str(rank))
        check_graph(page, _graph(doc, rank))
    text = check_csv_link(page, page, "csv-link", "bottlenecks")
    assert summary["iterator_long_name"] in text
    assert_clean(record)


def test_view_inside_tensorboard(page: Page, tensorboard_url: str, record: PageRecord) -> None:
    run = fixture_run(tensorboard_url, "tfdata_slow")
    host, doc = document(tensorboard_url, run, VIEW)
    frame = open_in_tensorboard(page, tensorboard_url, VIEW, run, host)
    check_graph(frame, _graph(doc, 1))
    assert_clean(record)
