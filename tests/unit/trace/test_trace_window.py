"""Trace index and window queries on synthetic XSpaces: exact windows, visibility, counts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tb_profile_plugin.errors import BadRequest
from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
from tb_profile_plugin.trace import window
from tb_profile_plugin.trace.depth import depth_order
from tb_profile_plugin.trace.index import build_index
from tb_profile_plugin.trace.index_cache import trace_index
from tb_profile_plugin.trace.window import trace_set, visible_events
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tests.xspace_builder import Uint, XSpaceBuilder


def small_profile() -> Profile:
    """python: outer [0, 1e6) > inner1 [1e5, 3e5), tiny1 [4e5, +100), tiny2 [400_200, +100);
    zero at 2e6. tf_Compute/5: long [5e5, 3.5e6). Times in ps."""
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    worker = cpu.line("tf_Compute/5", line_id=5)
    py = cpu.line("python", line_id=99)
    py.event("outer", 0, 1_000_000)
    py.event("inner1", 100_000, 200_000)
    py.event("tiny1", 400_000, 100)
    py.event("tiny2", 400_200, 100)
    py.event("zero", 2_000_000, 0)
    worker.event("long", 500_000, 3_000_000)
    return decode_xspace(b.serialize())


def names_of(index, ids) -> list[str]:  # type: ignore[no-untyped-def]
    return [index.names[int(index.name_id[i])] for i in ids]


def doc(profile: Profile, **params: str) -> dict:
    """The window's document as the client reads it (the JSON the server sends)."""
    return json.loads(json_text(registry.VIEWS["trace_viewer"].build(
        registry.ViewRequest("r", "h", {"h": profile}, params))))


def test_tracks_sorted_and_depths() -> None:
    index = build_index(small_profile())
    assert [p.name for p in index.processes] == ["/host:CPU"]
    threads = index.processes[0].threads
    assert [(t.tid, t.name, t.max_depth, t.num_events) for t in threads] == [
        (1, "python", 1, 5), (2, "tf_Compute/5", 0, 1)]
    by_name = {index.names[int(index.name_id[i])]: int(index.depth[i]) for i in range(len(index))}
    assert by_name == {"outer": 0, "inner1": 1, "tiny1": 1, "tiny2": 1, "zero": 0, "long": 0}
    # storage order: (track, depth, start)
    assert names_of(index, range(len(index))) == [
        "outer", "zero", "inner1", "tiny1", "tiny2", "long"]


def test_window_edges_and_resolution_zero() -> None:
    index = build_index(small_profile())
    got = visible_events(index, 300_000, 450_000, 0)
    # outer crosses both edges, inner1 ends exactly at the window start, long starts after it
    assert names_of(index, got.ids) == ["outer", "inner1", "tiny1", "tiny2"]
    assert got.num_filtered == 0
    got = visible_events(index, 2_000_000, 2_000_000, 0)
    assert names_of(index, got.ids) == ["zero", "long"]


def test_visibility_rule_exact() -> None:
    index = build_index(small_profile())
    # pixel = 150_000 / 10 = 15_000 ps: tiny1 and tiny2 share column 6 at depth 1
    got = visible_events(index, 300_000, 450_000, 10, unfiltered_max_events=0)
    assert names_of(index, got.ids) == ["outer", "inner1", "tiny1"]
    assert got.num_filtered == 1
    # the same window, small enough: nothing filtered by default
    assert visible_events(index, 300_000, 450_000, 10).num_filtered == 0
    # pixel 100 ps: tiny1 is one pixel wide, tiny2 too
    got = visible_events(index, 300_000, 450_000, 1500, unfiltered_max_events=0)
    assert got.num_filtered == 0 and len(got.ids) == 4


def test_document_counts_and_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = small_profile()
    monkeypatch.setattr(window, "UNFILTERED_MAX_EVENTS", 0)
    d = doc(profile, start_time_ms="0.0003", end_time_ms="0.00045", resolution="10")
    assert d["total_events"] == 6 and d["returned_events"] == 3 and d["filtered_events"] == 1
    assert d["full_timespan_ms"] == [0.0, 0.0035]
    assert d["window_ms"] == [0.0003, 0.00045]
    ev = d["events"]
    assert [d["strings"][k] for k in ev["name"]] == ["outer", "inner1", "tiny1"]
    assert ev["start_us"] == [0.0, 0.1, 0.4]
    assert ev["duration_us"] == [1.0, 0.2, 0.0001]
    assert ev["depth"] == [0, 1, 1]
    assert ev["pid"] == [1, 1, 1] and ev["tid"] == [1, 1, 1]
    assert len(set(ev["id"])) == 3
    assert d["processes"][0]["threads"][1]["name"] == "tf_Compute/5"
    whole = doc(profile, resolution="0")
    assert whole["returned_events"] == 6 and whole["filtered_events"] == 0


@pytest.mark.parametrize("params", [
    {"start_time_ms": "x"}, {"start_time_ms": "nan"}, {"resolution": "-1"},
    {"resolution": "1.5"}, {"start_time_ms": "2", "end_time_ms": "1"},
])
def test_bad_parameters(params: dict[str, str]) -> None:
    with pytest.raises(BadRequest):
        doc(small_profile(), **params)


def random_profile(seed: int) -> Profile:
    """Three lines of random, mostly nested events (some improperly overlapping, some zero)."""
    rng = np.random.default_rng(seed)
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    for line_id in range(3):
        line = cpu.line(f"tf_Compute/{line_id}", line_id=line_id)
        t = 0
        for _ in range(60):
            t += int(rng.integers(0, 5_000))
            outer = int(rng.integers(0, 20_000))
            line.event(f"op{rng.integers(0, 7)}", t, outer)
            for _ in range(int(rng.integers(0, 4))):
                at = t + int(rng.integers(0, outer + 1))
                line.event(f"in{rng.integers(0, 5)}", at, int(rng.integers(0, 3_000)))
            t += outer // 2
    return decode_xspace(b.serialize())


def brute_force(index, a: int, b: int, resolution: int) -> tuple[set[int], int]:  # type: ignore[no-untyped-def]
    """The visibility rule written plainly, one event at a time."""
    overlapping = [i for i in range(len(index))
                   if index.start_ps[i] <= b and index.end_ps[i] >= a]
    if resolution == 0:
        return set(overlapping), 0
    pixel = (b - a) / resolution
    track = index.track_of(np.arange(len(index)))
    seen: set[tuple[int, int, int]] = set()
    kept = set()
    for i in sorted(overlapping, key=lambda i: (int(index.start_ps[i]), i)):
        column = int(np.floor((max(int(index.start_ps[i]), a) - a) / pixel))
        key = (int(track[i]), int(index.depth[i]), column)
        wide = index.end_ps[i] - index.start_ps[i] >= pixel
        if key not in seen or wide:
            kept.add(i)
        seen.add(key)
    return kept, len(overlapping) - len(kept)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_windows_match_brute_force(seed: int) -> None:
    index = build_index(random_profile(seed))
    rng = np.random.default_rng(seed + 100)
    last = index.last_ps
    for _ in range(25):
        a = int(rng.integers(-1000, last))
        b = a + int(rng.integers(0, last // 3))
        for resolution in (0, 7, 50, 400):
            got = visible_events(index, a, b, resolution, unfiltered_max_events=0)
            expected, filtered = brute_force(index, a, b, resolution)
            assert set(got.ids.tolist()) == expected, (a, b, resolution)
            assert got.num_filtered == filtered
            track = index.track_of(got.ids)
            key = list(zip(track.tolist(), index.start_ps[got.ids].tolist(), got.ids.tolist(),
                           strict=True))
            assert key == sorted(key)


@pytest.mark.parametrize("seed", [1, 2])
def test_many_segments_count_per_segment_like_the_binary_searches(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above `_SEARCH_SEGMENTS_MAX` (track, depth) rows the window counts per segment in one
    pass; both ways must select the same events (a profile with a few deep tracks)."""
    index = build_index(random_profile(seed))
    rng = np.random.default_rng(seed + 200)
    last = index.last_ps
    windows = [(int(a), int(a) + int(rng.integers(0, last // 3)))
               for a in rng.integers(-1000, last, 20)]
    by_search = [visible_events(index, a, b, 0, unfiltered_max_events=0).ids.tolist()
                 for a, b in windows]
    monkeypatch.setattr(window, "_SEARCH_SEGMENTS_MAX", 0)
    index = build_index(random_profile(seed))  # a fresh index: no cached windows
    by_count = [visible_events(index, a, b, 0, unfiltered_max_events=0).ids.tolist()
                for a, b in windows]
    assert by_count == by_search


def _nested_intervals(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """`n` properly nested intervals: each one inside a random earlier one, or at top level."""
    start = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    top_end = 0
    for i in range(n):
        parent = int(rng.integers(-1, i)) if i else -1
        if parent < 0:
            start[i] = top_end + int(rng.integers(0, 5))
            end[i] = start[i] + int(rng.integers(0, 400))
            top_end = int(end[i])
        else:
            lo, hi = int(start[parent]), int(end[parent])
            start[i] = int(rng.integers(lo, hi + 1))
            end[i] = int(rng.integers(start[i], hi + 1))
    return start, end


def test_depth_matches_analysis_nesting_on_nested_events() -> None:
    from tb_profile_plugin.analysis.events.nesting import compute_nesting

    rng = np.random.default_rng(5)
    start, end = _nested_intervals(rng, 500)
    order, depth = depth_order(start, end)
    expected = compute_nesting(start, end, np.array([0, 500])).depth
    assert np.array_equal(depth, expected[order])
    assert sorted(order.tolist()) == list(range(500))


def test_overlapping_events_take_the_analysis_depth() -> None:
    """Events that overlap without nesting (the Python tracer's) get the depth that
    analysis/events/nesting.py gives them, so the trace and the analysis agree on every event."""
    from tb_profile_plugin.analysis.events.nesting import compute_nesting

    rng = np.random.default_rng(5)
    start = rng.integers(0, 1000, 500).astype(np.int64)
    end = start + rng.integers(0, 200, 500)
    order, depth = depth_order(start, end)
    expected = compute_nesting(start, end, np.array([0, 500])).depth
    assert np.array_equal(depth, expected[order])
    assert sorted(order.tolist()) == list(range(500))


def test_all_hosts_aligned_by_absolute_time() -> None:
    def host(start_ns: int, name: str) -> Profile:
        b = XSpaceBuilder()
        b.plane("Task Environment").plane_stat("profile_start_time", Uint(start_ns))
        line = b.plane("/host:CPU").line("python", line_id=1, timestamp_ns=10)
        line.event(name, 1_000_000, 2_000_000)
        return decode_xspace(b.serialize())

    base = 1_763_800_000_000_000_000
    profiles = {"a": host(base + 5_000, "late"), "b": host(base, "early")}
    trace = trace_set(profiles)
    assert trace.origin_ns == base + 10 + 1_000
    d = registry.VIEWS["trace_viewer"].build(
        registry.ViewRequest("r", "ALL_HOSTS", profiles, {"resolution": "0"}))
    assert d["origin_ns"] == trace.origin_ns
    assert [p["name"] for p in d["processes"]] == ["a: /host:CPU", "b: /host:CPU"]
    assert [p["pid"] for p in d["processes"]] == [1, 2]
    ev = d["events"]
    named = {d["strings"][n]: (pid, s) for n, pid, s in zip(
        ev["name"], ev["pid"], ev["start_us"], strict=True)}
    assert named == {"late": (1, 5.0), "early": (2, 0.0)}
    assert sorted(ev["id"]) == [0, 1]
    assert d["full_timespan_ms"] == [0.0, 0.007]
    assert trace_index(profiles["a"]) is trace_index(profiles["a"])


@pytest.mark.parametrize("gap", ["relative_clock", "200_days"])
def test_all_hosts_with_clocks_far_apart_each_start_at_zero(gap: str) -> None:
    """Hosts whose clocks cannot share an int64-ps axis (a host without an absolute start time
    beside one with it; captures 200 days apart) used to fail with OverflowError (HTTP 500)."""
    def host(start_ns: int | None, name: str) -> Profile:
        b = XSpaceBuilder()
        if start_ns is not None:
            b.plane("Task Environment").plane_stat("profile_start_time", Uint(start_ns))
        line = b.plane("/host:CPU").line("python", line_id=1, timestamp_ns=10)
        line.event(name, 1_000_000, 2_000_000)
        line.event(name + "_2", 4_000_000, 1_000_000)
        return decode_xspace(b.serialize())

    base = 1_763_800_000_000_000_000
    other = None if gap == "relative_clock" else base + 200 * 86_400 * 10**9
    profiles = {"a": host(base, "a_first"), "b": host(other, "b_first")}
    trace = trace_set(profiles)
    assert not trace.aligned
    d = registry.VIEWS["trace_viewer"].build(
        registry.ViewRequest("r", "ALL_HOSTS", profiles, {"resolution": "0"}))
    ev = d["events"]
    starts = {d["strings"][n]: s for n, s in zip(ev["name"], ev["start_us"], strict=True)}
    assert starts == {"a_first": 0.0, "a_first_2": 3.0, "b_first": 0.0, "b_first_2": 3.0}
    assert d["full_timespan_ms"] == [0.0, 0.004]
    assert d["returned_events"] == d["total_events"] == 4
    assert any("clocks are" in w and "days apart" in w for w in d["diagnostics"]["warnings"])
    # Windows, details and search work on the same axis.
    window = registry.VIEWS["trace_viewer"].build(registry.ViewRequest(
        "r", "ALL_HOSTS", profiles, {"start_time_ms": "0.0025", "end_time_ms": "0.0035"}))
    assert window["returned_events"] == 2
    from tb_profile_plugin.tools import trace_viewer

    request = registry.ViewRequest("r", "ALL_HOSTS", profiles, {"event_id": "3"})
    assert trace_viewer.event(request)["event"]["start_us"] == 3.0
    found = trace_viewer.search_route(registry.ViewRequest("r", "ALL_HOSTS", profiles,
                                                           {"q": "b_first_2"}))
    assert found["total_matches"] == 1 and found["match"]["start_us"] == 3.0
