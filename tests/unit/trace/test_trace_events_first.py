"""The trace viewer's first window of a big capture reads its events alone (ProfileStore.open
`stats_later`, xspace/stats_later.py): the stats are walked by the build of the derived tracks,
after the first answer; every window, and the details of an event, are the ones of a profile
decoded whole; a stat found malformed then leaves the lines shown and says why."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tb_profile_plugin import request_budget
from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
from tb_profile_plugin.tools.trace_viewer import event
from tb_profile_plugin.trace import index as index_module
from tb_profile_plugin.trace import lines_first
from tb_profile_plugin.trace.index_cache import trace_index
from tb_profile_plugin.xspace import cache, stats_later, store
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.file_fields import pure_path
from tb_profile_plugin.xspace.store import ProfileStore
from tests.unit.trace.test_trace_lines_first import _events, _until_whole, _window
from tests.unit.xspace.test_stats_later import _malformed_stat

pytestmark = pytest.mark.skipif(pure_path(None),
                                reason="the events-only walk is the compiled decoder's")

DATA = Path(__file__).resolve().parents[2] / "data"
CAPTURES = ["jax_gpu_conv", "jax_nvidia_train_nograph"]


@pytest.fixture
def events_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Every capture decoded events first when the trace asks, its lines shown first; the
    names of the threads that walked stats, in order."""
    monkeypatch.setenv(lines_first.LINES_FIRST_MIN_EVENTS_ENV, "0")
    monkeypatch.setenv(store.STATS_LATER_MIN_BYTES_ENV, "0")
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    readers: list[str] = []
    real_load = stats_later.StatsLater.load

    def load(self: stats_later.StatsLater) -> None:
        readers.append(threading.current_thread().name)
        real_load(self)

    monkeypatch.setattr(stats_later.StatsLater, "load", load)
    return readers


def _open_as_the_trace_does(path: Path) -> Any:
    """The profile as the plugin opens it for the trace viewer (its view `events_first`)."""
    view = registry.VIEWS["trace_viewer"]
    assert view.events_first
    return ProfileStore().open(str(path), stats_later=view.events_first)


@pytest.mark.parametrize("capture", CAPTURES)
def test_the_first_window_reads_no_stat_and_the_last_is_the_whole_decodes(
        events_first: list[str], capture: str) -> None:
    path = next((DATA / capture).glob("**/*.xplane.pb"))
    profile = _open_as_the_trace_does(path)
    assert stats_later.pending(profile) is not None
    first = _window(profile)
    assert first["derived_pending"] and first["returned_events"] > 0
    # No stat was read for it: the readers are the derived tracks' build, on its thread.
    assert set(events_first) <= {"tb-profile-trace-derived"}
    whole = _until_whole(profile)
    assert stats_later.pending(profile) is None and events_first
    cache.flush(30)
    at_once = decode_xspace(path.read_bytes())  # decoded whole, no store, no disk cache
    trace_index(at_once)
    assert json_text(whole) == json_text(_window(at_once))
    # An event's details (its stats) are the whole decode's.
    some = next(iter(_events(whole)))
    params = {"event_id": str(some)}
    assert event(registry.ViewRequest("r", "h", {"h": profile}, params)) == event(
        registry.ViewRequest("r", "h", {"h": at_once}, params))


def test_details_asked_before_the_stats_are_walked_wait_for_them(
        events_first: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A click on a line event of the first window reads its stats (the walk, started there
    or by the build) and shows what a whole decode shows."""
    path = next((DATA / "jax_nvidia_train_nograph").glob("**/*.xplane.pb"))
    release = threading.Event()
    real_prepare = index_module.prepare_derived

    def held(profile: Any, steps: bool = True) -> Any:  # the build's analyses wait: the click
        assert release.wait(30)                         # comes first
        return real_prepare(profile, steps)

    monkeypatch.setattr(index_module, "prepare_derived", held)
    profile = _open_as_the_trace_does(path)
    first = _window(profile)
    assert first["derived_pending"] and stats_later.pending(profile) is not None
    some = next(iter(_events(first)))
    params = {"event_id": str(some)}
    with request_budget.bounded(60):
        shown = event(registry.ViewRequest("r", "h", {"h": profile}, params))
    assert events_first == ["MainThread"]  # this request walked them
    release.set()
    whole = decode_xspace(path.read_bytes())
    trace_index(whole)  # (the same ids: the lines' index is the whole one's prefix)
    assert shown == event(registry.ViewRequest("r", "h", {"h": whole}, params))
    _until_whole(profile)


def test_a_stat_found_malformed_later_leaves_the_lines_and_says_why(
        events_first: list[str], tmp_path: Path) -> None:
    path = _malformed_stat(tmp_path / "h.xplane.pb")
    profile = _open_as_the_trace_does(path)
    doc = _until_whole(profile)
    assert doc["returned_events"] == 2 and doc["derived_events"] == 0
    assert any("could not be made" in text and "malformed" in text
               for text in doc["diagnostics"]["errors"])
