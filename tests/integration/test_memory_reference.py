"""The memory profile of the real captures against the reference plugin's, and over HTTP.

The reference figures (tests/data/reference/xprof_2.24.2_memory.json) were produced by PyPI
xprof 2.24.2 in a scratch venv; the project never imports it. Exact: allocation and
deallocation counts, lifetime peak, the peak's time, stack, heap, free and capacity; and,
(times: the reference counts from the host line's timestamp, ours from the host's earliest
event, the trace viewer's zero, `time_zero_ps` later: analysis/hosts/clock.py)
for the small captures, every snapshot with the metadata deallocations inherit. Not
compared: the breakdown rows, which differ on purpose (docs/analysis.md: the reference
replays only the peak's step), though both sum to the same heap where the reference's rows
do; and the reference's counts where it sampled (it counts only its 1000 drawn snapshots).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures import DATA_DIR, build_view, fixture_run
from tests.integration.conftest import Server

REFERENCE = json.loads((DATA_DIR / "reference" / "xprof_2.24.2_memory.json").read_text())
FIXTURES = REFERENCE["fixtures"]
# tfdata_parallel: our event forest puts the last two snapshots (after the last step's
# marker ends) in that step; the reference leaves them ungrouped (then "previous + 1").
STEP_DIFFERENCES = {"tfdata_parallel": {36, 37}}


def _doc(fixture: str, **params: str) -> dict[str, Any]:
    return build_view("memory_profile", DATA_DIR / FIXTURES[fixture]["xplane"], **params)


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_summary_equals_reference(fixture: str) -> None:
    ref_fixture = FIXTURES[fixture]
    doc = _doc(fixture)
    assert doc["memory_ids"] == ref_fixture["memory_ids"]
    ref = ref_fixture["allocators"][doc["memory_id"]]
    summary, peak = doc["summary"], doc["summary"]["peak"]
    if ref["sampled_snapshots"] < 1000:  # the reference counted every snapshot
        assert summary["num_allocations"] == ref["num_allocations_shown"]
        assert summary["num_deallocations"] == ref["num_deallocations_shown"]
    else:
        assert summary["num_allocations"] + summary["num_deallocations"] > 1000
        assert len(doc["timeline"]) <= 1000 and doc["timeline_sampled"]
    assert summary["peak_heap_usage_lifetime_bytes"] == ref["peak_bytes_usage_lifetime"]
    assert summary["memory_capacity_bytes"] == ref["memory_capacity_bytes"]
    zero = doc["time_zero_ps"]
    assert peak["time_ps"] + zero == ref["peak_time_ps"]
    assert peak["time_ms"] == (ref["peak_time_ps"] - zero) / 1e9
    assert (peak["stack_bytes"], peak["heap_bytes"], peak["free_bytes"]) == (
        ref["peak_stack_bytes"], ref["peak_heap_bytes"], ref["peak_free_bytes"])
    if ref["peak_fragmentation"] is None:
        assert peak["fragmentation_percent"] is None
    else:
        assert peak["fragmentation_percent"] == pytest.approx(100 * ref["peak_fragmentation"])
    # The peak is a point of the drawn timeline, with the summary's figures.
    drawn = doc["timeline"][doc["peak_timeline_index"]]
    assert (drawn["heap_bytes"], drawn["time_ms"]) == (peak["heap_bytes"], peak["time_ms"])
    # Our rows always add up to the peak's stack + heap.
    total = sum(r["allocation_bytes"] * r["occurrences"] for r in doc["breakdown"])
    assert total == peak["stack_bytes"] + peak["heap_bytes"]


@pytest.mark.parametrize(
    "fixture", sorted(f for f, v in FIXTURES.items() if "snapshots" in v["allocators"]["mklcpu"])
)
def test_every_snapshot_equals_reference(fixture: str) -> None:
    ref = FIXTURES[fixture]["allocators"]["mklcpu"]["snapshots"]
    doc = _doc(fixture)
    timeline, zero = doc["timeline"], doc["time_zero_ps"]
    assert len(timeline) == len(ref)
    steps_differ = STEP_DIFFERENCES.get(fixture, set())
    for i, (point, expected) in enumerate(zip(timeline, ref, strict=True)):
        time_ps, event, stack, heap, free, op, step, region, dtype, shape = expected
        assert round(point["time_ms"] * 1e9) + zero == time_ps, i
        assert (point["event"], point["stack_bytes"], point["heap_bytes"],
                point["free_bytes"]) == (event, stack, heap, free), i
        assert (point["tf_op"], point["region_type"], point["tensor_shape"]) == (
            op, region, shape), i
        assert point["data_type"] == dtype, i
        if i not in steps_differ:
            assert point["step_id"] == step, i


def test_memory_profile_over_http(server: Server) -> None:
    run = fixture_run("tfdata_slow")
    assert "memory_profile" in server.get_json("run_tools", run=run)
    (host,) = server.get_json("hosts", run=run, tag="memory_profile")
    base = f"/data?run={run}&tag=memory_profile&host={host}"
    status, headers, body = server.get(base)
    assert status == 200, body
    doc = json.loads(body)
    ref = FIXTURES["tfdata_slow"]["allocators"]["mklcpu"]
    assert doc["summary"]["peak"]["time_ps"] + doc["time_zero_ps"] == ref["peak_time_ps"]
    assert doc["summary"]["peak"]["heap_bytes"] == ref["peak_heap_bytes"]
    # A zoomed range returns every snapshot in it, and nothing outside it.
    status, _, body = server.get(base + "&start_time_ms=300&end_time_ms=330")
    zoomed = json.loads(body)
    assert status == 200 and zoomed["timeline"]
    assert all(300 <= p["time_ms"] <= 330 for p in zoomed["timeline"])
    every = [p for p in doc["timeline"] if 300 <= p["time_ms"] <= 330]
    assert zoomed["timeline"] == every
    status, _, body = server.get(base + "&memory_id=GPU_0_bfc")
    assert status == 404 and "mklcpu" in json.loads(body)["error"]
    status, _, body = server.get(base + "&start_time_ms=later")
    assert status == 400
    status, headers, body = server.get(
        f"/data_csv?run={run}&tag=memory_profile&host={host}&table=breakdown")
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    assert body.decode().splitlines()[0].startswith('"op_name"')
