"""Through the plugin's routes: the trace viewer opening a big capture first has it decoded
events first (its stats walked after the first answer, xspace/stats_later.py), any other view
opening it first has it decoded whole; a view after the trace reads the stats walked later and
answers as on a whole decode."""

from __future__ import annotations

import argparse
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.trace import lines_first
from tb_profile_plugin.xspace import cache, stats_later, store
from tb_profile_plugin.xspace.file_fields import pure_path

pytestmark = pytest.mark.skipif(pure_path(None),
                                reason="the events-only walk is the compiled decoder's")

DATA = Path(__file__).resolve().parents[1] / "data"
GPU = next((DATA / "jax_nvidia_train_nograph").glob("**/*.xplane.pb"))
RUN = "gpu/2026_01_01_00_00_00"


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, list[str]]:
    """A logdir of one GPU capture (tmp_path/logdir), every file big enough; which decodes left
    the stats for later, and which threads walked them."""
    monkeypatch.setenv(lines_first.LINES_FIRST_MIN_EVENTS_ENV, "0")
    monkeypatch.setenv(store.STATS_LATER_MIN_BYTES_ENV, "0")
    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")
    session = tmp_path / "logdir" / RUN.split("/")[0] / "plugins" / "profile" / RUN.split("/")[1]
    session.mkdir(parents=True)
    shutil.copyfile(GPU, session / "h.xplane.pb")
    seen: dict[str, list[str]] = {"later": [], "walked": []}
    real_init, real_load = stats_later.StatsLater.__init__, stats_later.StatsLater.load

    def init(self: Any, *args: Any) -> None:
        seen["later"].append(threading.current_thread().name)
        real_init(self, *args)

    def load(self: Any) -> None:
        seen["walked"].append(threading.current_thread().name)
        real_load(self)

    monkeypatch.setattr(stats_later.StatsLater, "__init__", init)
    monkeypatch.setattr(stats_later.StatsLater, "load", load)
    return seen


def _get(plugin: Any, tag: str) -> dict[str, Any]:
    response = Client(plugin.get_plugin_apps()["/data"]).get(
        "/", query_string={"run": RUN, "tag": tag, "host": "h"})
    assert response.status_code == 200, response.get_data()[:300]
    doc: dict[str, Any] = json.loads(response.get_data())
    return doc


def _plugin(tmp_path: Path) -> Any:
    from tb_profile_plugin.plugin import ProfilePlugin

    flags = argparse.Namespace(profile_scheduler=None)
    return ProfilePlugin(base_plugin.TBContext(logdir=str(tmp_path / "logdir"), flags=flags))


def test_the_trace_first_reads_events_first_and_a_later_view_the_stats(
        recorded: dict[str, list[str]], tmp_path: Path) -> None:
    plugin = _plugin(tmp_path)
    first = _get(plugin, "trace_viewer")
    assert first["derived_pending"] and first["returned_events"] > 0
    assert len(recorded["later"]) == 1  # decoded events first
    assert set(recorded["walked"]) <= {"tb-profile-trace-derived"}  # (the first answer
    # read no stat: only the derived tracks' build may have, meanwhile)
    overview = _get(plugin, "overview_page")  # the stats walked, by the build or here
    assert recorded["walked"]
    want = _get(_plugin(tmp_path), "overview_page")  # another server: decoded whole
    assert len(recorded["later"]) == 1
    for doc in (overview, want):
        doc.pop("diagnostics", None)  # (timings, cache notes)
    assert json_text(overview) == json_text(want)


def test_another_view_first_decodes_whole(recorded: dict[str, list[str]],
                                          tmp_path: Path) -> None:
    plugin = _plugin(tmp_path)
    _get(plugin, "overview_page")
    doc = _get(plugin, "trace_viewer")  # the profile held already: served as it is
    assert doc["returned_events"] > 0
    assert recorded == {"later": [], "walked": []}
