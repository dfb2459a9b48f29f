"""Issue 30: what one window may cost. A window returns at most `MAX_WINDOW_EVENTS` events
(past it: a lower resolution, said in the document); the windows kept with an index are
bounded and counted in the profile's bytes; the build stops at its checkpoints; window times
out of any trace's range are a 400 with a sentence."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest

from tb_profile_plugin import request_budget
from tb_profile_plugin.errors import BadRequest, RequestTimedOut
from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
from tb_profile_plugin.tools import trace_viewer as trace_viewer_tool
from tb_profile_plugin.trace import visible as visible_module
from tb_profile_plugin.trace import window
from tb_profile_plugin.trace.index_cache import trace_index
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tests.browser.trace_synthetic import big_trace_profile

CAP = 3_000  # a small cap: the same code paths as the real one, on a small trace


@pytest.fixture(scope="module")
def _bytes() -> bytes:
    return big_trace_profile(threads=2, blocks=400)  # 20,000 events over ~48 ms


@pytest.fixture
def profile(_bytes: bytes) -> Profile:
    return decode_xspace(_bytes)


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setattr(window, "MAX_WINDOW_EVENTS", CAP)
    monkeypatch.setattr(trace_viewer_tool, "MAX_WINDOW_EVENTS", CAP)
    yield CAP


def _doc(profile: Profile, **params: str) -> dict:
    return json.loads(json_text(registry.VIEWS["trace_viewer"].build(
        registry.ViewRequest("r", "h", {"h": profile}, params))))


def test_the_real_cap_is_a_million() -> None:
    assert window.MAX_WINDOW_EVENTS == 1_000_000
    assert window.MAX_WINDOW_EVENTS >= window.UNFILTERED_MAX_EVENTS


def test_resolution_0_past_the_cap_is_answered_at_a_capped_resolution(profile: Profile) -> None:
    index = trace_index(profile)
    n = len(index)
    assert n == 20_000
    whole = window.visible_events(index, index.first_ps, index.last_ps, 0,
                                  unfiltered_max_events=100)
    assert len(whole.ids) == n and whole.shown_resolution is None  # no cap at 1M
    capped = window.visible_events(index, index.first_ps, index.last_ps, 0,
                                   unfiltered_max_events=100, max_events=CAP)
    assert 0 < len(capped.ids) <= CAP
    assert capped.shown_resolution is not None and capped.shown_resolution >= 1
    assert capped.num_truncated == 0
    assert len(capped.ids) + capped.num_filtered == n  # every event returned or counted
    assert len(capped.blocks) > 0  # the rest drawn as density blocks
    # The answer is the window at the shown resolution.
    same = window.visible_events(index, index.first_ps, index.last_ps,
                                 capped.shown_resolution, unfiltered_max_events=100)
    assert np.array_equal(same.ids, capped.ids)


def test_a_resolution_of_too_many_pixels_is_capped_too(profile: Profile) -> None:
    index = trace_index(profile)
    capped = window.visible_events(index, index.first_ps, index.last_ps, 10_000_000,
                                   unfiltered_max_events=100, max_events=CAP)
    assert len(capped.ids) <= CAP and capped.shown_resolution is not None
    assert capped.shown_resolution < 10_000_000


def test_the_document_says_the_window_was_capped(profile: Profile, small_cap: int) -> None:
    doc = _doc(profile, resolution="0")
    assert doc["returned_events"] <= small_cap == doc["max_events"]
    assert len(doc["events"]["id"]) == doc["returned_events"]
    assert doc["resolution"] == 0 and 1 <= doc["shown_resolution"]
    assert doc["returned_events"] + doc["filtered_events"] == doc["total_events"]
    assert doc["truncated_events"] == 0 and len(doc["density"]["count"]) > 0
    warning = " ".join(doc["diagnostics"]["warnings"])
    assert f"more events than the {small_cap:,} one window returns" in warning
    assert f"shown at a resolution of {doc['shown_resolution']:,} pixels" in warning
    zoomed = _doc(profile, start_time_ms="1", end_time_ms="1.5", resolution="0")  # fits
    assert zoomed["shown_resolution"] == 0 and zoomed["filtered_events"] == 0
    assert not zoomed["diagnostics"]["warnings"]


def test_a_window_within_the_cap_is_unchanged(profile: Profile) -> None:
    doc = _doc(profile)
    assert doc["shown_resolution"] == doc["resolution"] == 1600
    assert doc["max_events"] == 1_000_000 and doc["truncated_events"] == 0
    assert not doc["diagnostics"]["warnings"]


def test_kept_windows_are_counted_in_the_profile_and_bounded(
    profile: Profile, monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = trace_index(profile)  # kept in profile.derived
    derived = profile.derived
    grown: list[int] = []
    derived.on_grow = lambda: grown.append(derived.nbytes)
    before = derived.measure()
    one = window.visible_events(index, index.first_ps, index.last_ps, 0)
    assert one.nbytes > 0
    assert derived.nbytes >= before + one.nbytes  # counted as soon as kept
    assert grown and grown[-1] == derived.nbytes  # and the store told
    # A bound on what one index keeps: a few windows' worth here.
    monkeypatch.setattr(visible_module, "KEPT_WINDOWS_MAX_BYTES", 3 * one.nbytes)
    span = index.last_ps - index.first_ps
    for k in range(12):
        window.visible_events(index, index.first_ps + k, index.last_ps - k, 0)
        assert visible_module.kept_bytes(index) <= 3 * one.nbytes
        assert derived.nbytes <= before + 3 * one.nbytes + 100_000  # the dict's own bytes
    # A window bigger than one kept window may be is served, not kept.
    monkeypatch.setattr(visible_module, "KEPT_WINDOW_MAX_BYTES", one.nbytes // 4)
    key = (index.first_ps, index.first_ps + span // 2, 0, window.UNFILTERED_MAX_EVENTS)
    big = window.visible_events(index, *key)
    assert big.nbytes > one.nbytes // 4 and visible_module.remembered(index, key) is None
    derived.clear()  # what the store does when it evicts the profile: the windows go too
    assert derived.nbytes == 0 and not derived.results


def test_a_request_past_its_budget_stops_in_the_window_build(
    profile: Profile, monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = trace_index(profile)  # built outside the budget
    calls: list[int] = []

    def counting() -> None:
        calls.append(1)

    monkeypatch.setattr(window, "checkpoint", counting)
    window.visible_events(index, index.first_ps, index.last_ps, 0, unfiltered_max_events=100,
                          max_events=CAP)
    stages = len(calls)
    assert stages >= 5  # checkpoints between the build's stages, and per capped resolution
    monkeypatch.setattr(window, "checkpoint", request_budget.checkpoint)
    key = (index.first_ps + 1, index.last_ps, 1600, window.UNFILTERED_MAX_EVENTS)
    with request_budget.bounded(1e-9, what="the trace window"):
        with pytest.raises(RequestTimedOut, match="the trace window stopped after"):
            window.visible_events(index, *key)
    assert visible_module.remembered(index, key) is None  # nothing half-built kept
    assert len(window.visible_events(index, *key).ids) > 0  # asked again: answered


@pytest.mark.parametrize("params, sentence", [
    ({"end_time_ms": "1e300"}, "end_time_ms='1e300' is out of range"),
    ({"start_time_ms": "-1e299"}, "start_time_ms='-1e299' is out of range"),
    ({"end_time_ms": "1e299"}, "end_time_ms='1e299' is out of range"),
    ({"start_time_ms": "1e299", "end_time_ms": "1e300"}, "is out of range"),
    ({"end_time_ms": "nan"}, "end_time_ms='nan' is not a finite number"),
    ({"end_time_ms": "inf"}, "end_time_ms='inf' is not a finite number"),
    ({"start_time_ms": "-inf"}, "start_time_ms='-inf' is not a finite number"),
    ({"resolution": str(10**30)}, "is more than 1,000,000,000,000 pixels"),
])
def test_times_out_of_any_range_are_a_bad_request(
    profile: Profile, params: dict[str, str], sentence: str,
) -> None:
    with pytest.raises(BadRequest, match=sentence.replace("(", r"\(")):
        _doc(profile, **params)


def test_the_widest_window_in_range_is_answered(profile: Profile) -> None:
    edge = f"{2**62 / 1e9:.6f}"
    for resolution in ("1600", "0"):
        doc = _doc(profile, start_time_ms=f"-{edge}", end_time_ms=edge, resolution=resolution)
        assert doc["returned_events"] + doc["filtered_events"] == doc["total_events"]


def test_a_search_from_out_of_range_is_a_bad_request(profile: Profile) -> None:
    with pytest.raises(BadRequest, match="from_us='1e300' is out of range"):
        trace_viewer_tool.search_route(registry.ViewRequest(
            "r", "h", {"h": profile}, {"q": "Op", "from_us": "1e300"}))
