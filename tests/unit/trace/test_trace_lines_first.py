"""The index of a profile's lines alone is the whole index's prefix (trace/index.py, "Storage"):
every line event has the same id, columns and name in both, and the derived tracks' events
come after them. What lets a first window be answered before the derived tracks are made
(trace/lines_first.py): a big GPU capture's first windows show its lines, then every track;
one small, or whose index is on disk, is whole at once; a build that fails leaves the lines
and says why."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_profile_plugin import continuations, request_budget
from tb_profile_plugin.analysis.events.profile_cache import built
from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
from tb_profile_plugin.tools.trace_viewer import event
from tb_profile_plugin.trace import index as index_module
from tb_profile_plugin.trace import lines_first
from tb_profile_plugin.trace.index import build_index
from tb_profile_plugin.trace.index_cache import lines_index, trace_index
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.store import ProfileStore

DATA = Path(__file__).resolve().parents[2] / "data"
GPU_CAPTURES = ["jax_gpu_conv", "jax_nvidia_train", "jax_nvidia_train_nograph"]


@pytest.mark.parametrize("capture", GPU_CAPTURES)
def test_the_lines_index_is_the_whole_index_prefix(capture: str) -> None:
    path = next((DATA / capture).glob("**/*.xplane.pb"))
    whole = build_index(decode_xspace(path.read_bytes()))
    lines = build_index(decode_xspace(path.read_bytes()), derived=False)
    n = len(lines)
    assert whole.num_derived_events > 0 and lines.num_derived_events == 0
    assert len(whole) == n + whole.num_derived_events
    for name in ("start_ps", "end_ps", "source_row"):
        assert np.array_equal(getattr(whole, name)[:n], getattr(lines, name))
    assert whole.names[: len(lines.names)] == lines.names
    assert np.array_equal(whole.name_id[:n], lines.name_id)
    assert np.array_equal(whole.track_bounds[: len(lines.tracks) + 1], lines.track_bounds)
    assert whole.line_refs == lines.line_refs
    # The same tracks of lines, at the same storage positions; the derived ones after them.
    assert [(t.name, t.track) for t in whole.tracks[: len(lines.tracks)]] == [
        (t.name, t.track) for t in lines.tracks]
    assert all(t.derived for t in whole.tracks[len(lines.tracks):])
    assert [p.name for p in whole.processes] == [p.name for p in lines.processes]
    for full, alone in zip(whole.processes, lines.processes, strict=True):
        assert [(t.name, t.tid, t.track) for t in full.threads if not t.derived] == [
            (t.name, t.tid, t.track) for t in alone.threads]


# The first windows of a big GPU capture (trace/lines_first.py): its lines first, then all.

CONV = next((DATA / "jax_gpu_conv").glob("**/*.xplane.pb"))


def _window(profile: Any, hosts: int = 1, **params: str) -> dict[str, Any]:
    """The trace window as the server builds it (a request under its budget)."""
    with request_budget.bounded(60):
        return registry.VIEWS["trace_viewer"].build(
            registry.ViewRequest("r", "h", {f"h{k}": profile for k in range(hosts)}, params))


def _until_whole(profile: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        doc = _window(profile)
        if not doc["derived_pending"]:
            return doc
        assert time.monotonic() < deadline, "the derived tracks were never made"
        time.sleep(0.02)


def _events(doc: dict[str, Any]) -> dict[int, tuple[Any, ...]]:
    ev, strings = doc["events"], doc["strings"]
    return {int(i): (int(p), int(t), strings[int(n)], float(s), float(d))
            for i, p, t, n, s, d in zip(ev["id"], ev["pid"], ev["tid"], ev["name"],
                                        ev["start_us"], ev["duration_us"], strict=True)}


def _threads(doc: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(p["name"], t["name"], t["derived"]) for p in doc["processes"]
            for t in p["threads"]]


@pytest.fixture
def lines_first_always(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(lines_first.LINES_FIRST_MIN_EVENTS_ENV, "0")
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))


def test_a_big_gpu_capture_shows_its_lines_first_then_every_track(
        lines_first_always: None, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real_prepare = index_module.prepare_derived
    real_derive = index_module.derive_tracks
    lines_when_derived = []

    def held(profile: Any, steps: bool = True) -> Any:  # the analyses (10M events: ~5 s)
        assert release.wait(30)
        return real_prepare(profile, steps)

    def derive(profile: Any, *args: Any) -> Any:  # the lines index is gone by then
        lines_when_derived.append(built(profile, lines_index))
        return real_derive(profile, *args)

    monkeypatch.setattr(index_module, "prepare_derived", held)
    monkeypatch.setattr(index_module, "derive_tracks", derive)
    profile = ProfileStore().open(str(CONV))
    first = _window(profile)
    again = _window(profile)  # still the lines: the page asks again meanwhile
    assert first["derived_pending"] and again["derived_pending"]
    assert first["derived_events"] == 0
    assert not any(derived for _, _, derived in _threads(first))
    assert any("being made" in text for text in first["diagnostics"]["info"])
    # Details of a line event come from the same index while the tracks are made.
    some_id = next(iter(_events(first)))
    shown = event(registry.ViewRequest("r", "h", {"h": profile}, {"event_id": str(some_id)}))
    assert shown["event"]["name"] == _events(first)[some_id][2]
    release.set()
    whole = _until_whole(profile)
    assert whole["derived_events"] > 0
    assert not any("being made" in text for text in whole["diagnostics"]["info"])
    assert {t for t in _threads(whole) if not t[2]} == set(_threads(first))
    assert any(derived for _, _, derived in _threads(whole))
    # A line event keeps its id: the lines' index is the whole one's prefix.
    events_whole, events_first = _events(whole), _events(first)
    common = events_first.keys() & events_whole.keys()
    assert len(common) > len(events_first) // 2  # (a window of 1600 px: most come again)
    assert all(events_whole[i] == events_first[i] for i in common)
    # The lines' index was dropped before the derived tracks were made (not held with them).
    assert lines_when_derived and all(lines is None for lines in lines_when_derived)
    # Its job done, the lines' index is dropped (its bytes too).
    assert built(profile, lines_index) is None
    assert all("_lines_alone" not in name for name in profile.derived.results)


def test_the_whole_index_is_the_one_built_at_once(lines_first_always: None) -> None:
    """The last answer of the lines-first way equals the window of an index built at once."""
    profile = ProfileStore().open(str(CONV))
    _window(profile)
    progressive = _until_whole(profile)
    cache.flush(30)
    at_once = decode_xspace(CONV.read_bytes())  # no store: no disk cache
    trace_index(at_once)  # the whole index, built at once
    direct = _window(at_once)
    assert not direct["derived_pending"]
    assert json_text(progressive) == json_text(direct)


def test_a_small_capture_or_one_on_disk_is_shown_whole_at_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    doc = _window(ProfileStore().open(str(CONV)))  # 10k events: under the default bound
    assert not doc["derived_pending"] and doc["derived_events"] > 0
    cache.flush(30)
    monkeypatch.setenv(lines_first.LINES_FIRST_MIN_EVENTS_ENV, "0")
    reopened = _window(ProfileStore().open(str(CONV)))  # its whole index is on disk
    assert not reopened["derived_pending"] and reopened["derived_events"] > 0


def test_derived_tracks_that_fail_leave_the_lines_and_say_why(
        lines_first_always: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(profile: Any, steps: bool = True) -> None:
        raise UnreadableProfile("a crafted step table")

    monkeypatch.setattr(index_module, "prepare_derived", failing)
    profile = ProfileStore().open(str(CONV))
    doc = _until_whole(profile)  # (the first answer may come after the build failed)
    assert doc["derived_events"] == 0 and doc["returned_events"] > 0
    assert any("could not be made: a crafted step table" in text
               for text in doc["diagnostics"]["errors"])
    assert _window(profile)["diagnostics"]["errors"] == doc["diagnostics"]["errors"]


@pytest.mark.parametrize("case", ["command line", "several hosts", "not kept", "continuing off"])
def test_whole_at_once_where_the_lines_first_would_not_do(
        lines_first_always: None, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """The command line (no request: nothing asks again), a run's several hosts (the ids of a
    host after it would move), a profile the store does not keep (what the build made would go
    with the request) get the whole index at once; with continuing off the build runs under a
    request's budget instead, and makes the derived tracks."""
    store = ProfileStore(max_bytes=0) if case == "not kept" else ProfileStore()
    profile = store.open(str(CONV))
    if case == "command line":
        doc = registry.VIEWS["trace_viewer"].build(
            registry.ViewRequest("r", "h", {"h": profile}, {}))
    elif case == "several hosts":
        doc = _window(profile, hosts=2)
    elif case == "not kept":
        doc = _window(profile)
    else:
        monkeypatch.setenv(continuations.CONTINUE_SECONDS_ENV, "0")
        _window(profile)
        doc = _until_whole(profile)
    assert not doc["derived_pending"] and doc["derived_events"] > 0
    assert not doc["diagnostics"]["errors"]
