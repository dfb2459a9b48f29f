"""tf.data bottleneck analysis on the real TF 2.21 captures (tests/data/README.md).

tfdata_slow runs `range(176).map(load).batch(16)` with a sequential 2 ms `map` and no
prefetch, fetching each batch inside the step; tfdata_parallel is the same pipeline with
`num_parallel_calls=AUTOTUNE` and `prefetch(AUTOTUNE)`. The reference's current release has
no tf.data tool to compare with, so the checks are the guide's expectations.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR, build_view, fixture_run
from tests.integration.conftest import Server

VIEW = "tf_data_bottleneck_analysis"


def _path(fixture: str) -> Path:
    return next((DATA_DIR / fixture).glob("**/*.xplane.pb"))


def _doc(fixture: str) -> dict[str, Any]:
    return build_view(VIEW, _path(fixture))


def test_sequential_map_is_the_bottleneck_of_tfdata_slow() -> None:
    doc = _doc("tfdata_slow")
    summary = doc["summary"]
    assert summary["is_input_bound"] is True
    assert summary["iterator_name"] == "Map"
    assert summary["iterator_long_name"] == "Iterator::Root::BatchV2::Map"
    assert summary["suggestion_type"] == "parallelizable"
    assert "num_parallel_calls=tf.data.AUTOTUNE" in summary["suggestion"]
    assert "prefetch(tf.data.AUTOTUNE)" in summary["suggestion"]  # it ends without prefetch
    (pipeline,) = doc["pipelines"]
    assert pipeline["kind"] == "host" and pipeline["ends_in_prefetch"] is False
    # 8 steps, one batch each: every root call waits for 16 sequential 2 ms maps.
    assert pipeline["num_calls"] == 8 and pipeline["num_slow_calls"] == 8
    assert pipeline["min_latency_us"] > 16 * 2000
    graphs = doc["graphs"]
    assert [g["rank"] for g in graphs] == list(range(1, 9))
    latencies = [g["latency_us"] for g in graphs]
    assert latencies == sorted(latencies, reverse=True)
    assert latencies[0] == pipeline["max_latency_us"]
    for graph in graphs:
        nodes = {n["name"]: n for n in graph["nodes"]}
        assert set(nodes) == {"Root", "BatchV2", "Map", "Range"}
        assert all(n["on_critical_path"] for n in nodes.values())  # one thread: all blocking
        assert nodes["Map"]["is_bottleneck"] and nodes["Map"]["num_calls"] == 16
        assert nodes["Map"]["self_time_us"] > 0.9 * graph["latency_us"]
        assert nodes["Map"]["id"] == graph["bottleneck_id"]
    # The guide's first check: IteratorGetNext is slow (> 50 µs) in every step, counted over
    # the overview's six steps (1-6); the two partial steps it drops hold the other 2 calls.
    (get_next,) = doc["get_next"]
    assert [s["step_num"] for s in get_next["steps"]] == list(range(1, 7))
    assert get_next["num_slow_steps"] == 6 and get_next["num_calls_outside_steps"] == 2
    assert [s["num_calls"] for s in get_next["steps"]] == [1] * 6


def test_parallel_prefetched_map_is_not_reported_as_the_sequential_map() -> None:
    doc = _doc("tfdata_parallel")
    slow = _doc("tfdata_slow")
    (pipeline,) = doc["pipelines"]
    assert pipeline["ends_in_prefetch"] is True
    for row in doc["bottlenecks"]:
        assert row["iterator_name"] != "Map"
        assert "does not end in prefetch" not in row["suggestion"]
    assert doc["summary"]["iterator_long_name"] != "Iterator::Root::BatchV2::Map"
    # What it waits for now is the parallel map (its function runs on tf.data's pool).
    assert doc["summary"]["iterator_name"] == "ParallelMapV2"
    assert "already runs in parallel" in doc["summary"]["suggestion"]
    # Batches are made on a background thread and linked to the Prefetch that consumes them.
    top = {n["name"]: n for n in doc["graphs"][0]["nodes"]}
    assert top["BatchV2"]["parent_id"] == top["Prefetch"]["id"]
    assert top["BatchV2"]["on_critical_path"]
    # Prefetching and parallelism make the input pipeline several times faster.
    assert pipeline["avg_latency_us"] * 5 < slow["pipelines"][0]["avg_latency_us"]


@pytest.mark.parametrize("fixture", ["custom_loop", "two_hosts"])
def test_runs_without_tf_data_do_not_offer_the_view(fixture: str) -> None:
    paths = sorted((DATA_DIR / fixture).glob("**/*.xplane.pb"))
    facts = registry.RunFacts.of({p.stem: decode_xspace(p.read_bytes()) for p in paths})
    assert VIEW not in registry.views_for(facts)


def test_view_over_http(server: Server) -> None:
    run = fixture_run("tfdata_slow")
    host = _path("tfdata_slow").name.removesuffix(".xplane.pb")
    assert VIEW in server.get_json("run_tools", run=run)
    doc = server.get_json("data", run=run, tag=VIEW, host=host)
    assert doc["tool"] == VIEW and doc["summary"]["iterator_name"] == "Map"
    status, headers, body = server.get("/data_csv?" + urllib.parse.urlencode(
        {"run": run, "tag": VIEW, "host": host, "table": "bottlenecks"}))
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    assert b"Iterator::Root::BatchV2::Map" in body
