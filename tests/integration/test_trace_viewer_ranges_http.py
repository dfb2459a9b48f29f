"""Issue 30, item 8a: window times out of any trace's range are a 400 with a sentence over
HTTP, never a 500, and the server keeps serving."""

from __future__ import annotations

import pytest

from tests.fixtures import fixture_run
from tests.integration.conftest import Server


@pytest.mark.parametrize("route,params", [
    ("data", {"tag": "trace_viewer", "end_time_ms": "1e300"}),
    ("data", {"tag": "trace_viewer", "start_time_ms": "-1e299"}),
    ("data", {"tag": "trace_viewer", "start_time_ms": "-1e299", "end_time_ms": "1e299"}),
    ("data", {"tag": "trace_viewer", "end_time_ms": "nan"}),
    ("data", {"tag": "trace_viewer", "end_time_ms": "inf"}),
    ("data", {"tag": "trace_viewer", "start_time_ms": "-inf"}),
    ("data", {"tag": "trace_viewer", "resolution": "1" + "0" * 30}),
    ("trace_search", {"q": "train", "from_us": "1e300"}),
])
def test_out_of_range_parameters_are_a_400(server: Server, route: str,
                                           params: dict[str, str]) -> None:
    run = fixture_run("custom_loop")
    status, body = server.fetch_json(route, **{"run": run, "host": "vm", **params})
    assert status == 400 and ("out of range" in body["error"] or "finite" in body["error"]
                              or "pixels" in body["error"])
    assert server.fetch_json("runs")[0] == 200  # still serving


def test_resolution_0_states_its_cap(server: Server) -> None:
    run = fixture_run("custom_loop")
    status, doc = server.fetch_json("data", run=run, host="vm", tag="trace_viewer",
                                    resolution="0")
    assert status == 200 and doc["max_events"] == 1_000_000
    assert doc["shown_resolution"] == 0 and doc["truncated_events"] == 0  # a small trace: whole
    assert doc["returned_events"] == doc["total_events"]
