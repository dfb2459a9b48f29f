"""The trace viewer's routes through a real TensorBoard process, on the real captures.

Counts are checked against protobuf's own parse of each file (not our decoder): every event of
the file is in the trace, and every 1 ms window at a fine resolution (a pixel of 1 ps) returns
exactly the events that overlap it, with nothing filtered. The same check on a >= 2M-event
capture runs in `scripts/bench.py --trace` (too slow for CI).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.fixtures import fixture_run, session_dir
from tests.integration.conftest import Server

# (run prefix, host): two_hosts is checked as ALL_HOSTS (both files, one axis)
CASES = [
    ("keras_fit/train", "vm"),
    ("custom_loop", "vm"),
    ("tfdata_slow", "vm"),
    ("tfdata_parallel", "vm"),
    ("two_hosts", "ALL_HOSTS"),
]
_PS_PER_MS = 10**9


def _absolute_events_ps(path: Path) -> tuple[list[int], list[int]]:
    """(start, end) in absolute ps of every event of the file, from protobuf's parse."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    starts: list[int] = []
    ends: list[int] = []
    zero_ns = 0
    for plane in space.planes:
        for stat in plane.stats:
            if plane.stat_metadata[stat.metadata_id].name == "profile_start_time":
                zero_ns = stat.uint64_value or stat.int64_value
    for plane in space.planes:
        for line in plane.lines:
            base = (zero_ns + line.timestamp_ns) * 1000
            for event in line.events:
                starts.append(base + event.offset_ps)
                ends.append(base + event.offset_ps + event.duration_ps)
    return starts, ends


@pytest.mark.parametrize("prefix,host", CASES, ids=[c[0] for c in CASES])
def test_every_event_and_every_1ms_window(server: Server, prefix: str, host: str) -> None:
    run = fixture_run(prefix)
    files = sorted(session_dir(prefix).glob("*.xplane.pb"))
    parts = [_absolute_events_ps(f) for f in files]
    origin = min(min(p[0]) for p in parts)  # Python ints: absolute ps overflow int64
    start = np.array([s - origin for p in parts for s in p[0]], np.int64)
    end = np.array([e - origin for p in parts for e in p[1]], np.int64)

    status, whole = server.fetch_json("data", run=run, tag="trace_viewer", host=host)
    assert status == 200, whole
    assert whole["total_events"] == len(start)
    assert whole["derived_events"] == 0
    assert whole["full_timespan_ms"] == [0.0, int(end.max()) / _PS_PER_MS]
    # every event overlaps the whole span: returned or filtered, never dropped
    assert whole["returned_events"] + whole["filtered_events"] == len(start)
    if len(start) <= 10_000:  # a window of at most 10,000 events is sent whole
        assert whole["filtered_events"] == 0
    else:
        assert whole["filtered_events"] > 0
    assert sum(t["num_events"] for p in whole["processes"] for t in p["threads"]) == len(start)
    if host == "ALL_HOSTS":
        assert len({p["pid"] for p in whole["processes"]}) == len(whole["processes"]) == len(files)
        assert all(p["name"].startswith(p["host"] + ": ") for p in whole["processes"])

    for k in range(int(end.max()) // _PS_PER_MS + 1):
        a, b = k * _PS_PER_MS, (k + 1) * _PS_PER_MS
        status, doc = server.fetch_json("data", run=run, tag="trace_viewer", host=host,
                           start_time_ms=k, end_time_ms=k + 1, resolution=_PS_PER_MS)
        assert status == 200
        expected = int(np.count_nonzero((start <= b) & (end >= a)))
        assert (doc["returned_events"], doc["filtered_events"]) == (expected, 0), k
        got_start = np.round(np.array(doc["events"]["start_us"]) * 10**6).astype(np.int64)
        got_end = got_start + np.round(np.array(doc["events"]["duration_us"]) * 10**6).astype(
            np.int64)
        assert np.all((got_start <= b) & (got_end >= a))
        assert len(doc["events"]["id"]) == expected


def test_details_flows_and_search(server: Server) -> None:
    run = fixture_run("tfdata_parallel")
    status, found = server.fetch_json("trace_search", run=run, host="vm", q="prefetchproduce",
                         index=1)
    assert status == 200 and found["total_matches"] == 8 and found["index"] == 1
    match = found["match"]
    status, details = server.fetch_json("trace_event", run=run, host="vm", event_id=match["id"])
    assert status == 200
    assert details["event"]["name"] == "PrefetchProduce"
    assert details["event"]["start_us"] == match["start_us"]
    assert "element_id" in details["event"]["stats"]
    assert [(f["kind"], f["direction"], f["name"]) for f in details["flows"]] == [
        ("tf.data", "out", "PrefetchConsume")]
    consumer = details["flows"][0]
    assert consumer["start_us"] >= match["start_us"]
    # the event is in a window around it, with the same id
    status, doc = server.fetch_json("data", run=run, tag="trace_viewer", host="vm",
                       start_time_ms=match["start_us"] / 1000,
                       end_time_ms=match["start_us"] / 1000 + 0.01)
    assert match["id"] in doc["events"]["id"]


@pytest.mark.parametrize("route,params,code", [
    ("data", {"tag": "trace_viewer", "start_time_ms": "abc"}, 400),
    ("data", {"tag": "trace_viewer", "resolution": "-3"}, 400),
    ("data", {"tag": "trace_viewer", "start_time_ms": "5", "end_time_ms": "1"}, 400),
    ("trace_event", {"event_id": "x"}, 400),
    ("trace_event", {}, 400),
    ("trace_event", {"event_id": "999999999"}, 404),
    ("trace_search", {}, 400),
    ("trace_search", {"q": "train", "index": "100000"}, 400),
    ("trace_search", {"q": "train", "host": "nohost"}, 404),
])
def test_bad_requests(server: Server, route: str, params: dict[str, str], code: int) -> None:
    run = fixture_run("custom_loop")
    status, body = server.fetch_json(route, **{"run": run, "host": "vm", **params})
    assert status == code and "error" in body
    assert server.fetch_json("runs")[0] == 200  # still serving
