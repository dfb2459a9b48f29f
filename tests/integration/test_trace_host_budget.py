"""An ALL_HOSTS trace holds only the hosts the memory bound holds (trace/host_budget.py):
real captures (the two-host run copied under 48 host names), the plugin in process, the
server's store counting what it decodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin.analysis.hosts import executors
from tb_profile_plugin.plugin import ProfilePlugin
from tb_profile_plugin.trace.host_budget import TRACE_BYTES_PER_FILE_BYTE
from tb_profile_plugin.xspace import cache
from tests.fixtures import session_dir

HOSTS = 48
RUN = "pod/2026_01_01_00_00_00"


def _pod(logdir: Path) -> list[Path]:
    session = logdir / "pod" / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    files = sorted(session_dir("two_hosts").glob("*.xplane.pb"))
    paths = [session / f"h{k:02d}.xplane.pb" for k in range(HOSTS)]
    for k, path in enumerate(paths):
        path.write_bytes(files[k % 2].read_bytes())
    return paths


def _get(plugin: ProfilePlugin, route: str, **query: str) -> tuple[int, Any]:
    response = Client(plugin.get_plugin_apps()[route]).get("/", query_string=query)
    return response.status_code, json.loads(response.get_data())


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch: pytest.MonkeyPatch, fresh_executors: None) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")
    monkeypatch.setenv(executors.WORKERS_ENV, "2")


def test_all_hosts_trace_shows_the_hosts_the_bound_holds_and_names_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _pod(tmp_path / "logdir")
    bound = 10 * 2**20
    monkeypatch.setenv("TB_PROFILE_MEMORY_CACHE_BYTES", str(bound))
    costs = [p.stat().st_size * TRACE_BYTES_PER_FILE_BYTE for p in paths]
    fits = next(k for k in range(1, HOSTS + 1) if sum(costs[:k]) > bound)  # hosts shown
    assert 1 < fits < HOSTS
    plugin = ProfilePlugin(base_plugin.TBContext(logdir=str(tmp_path / "logdir")))
    status, doc = _get(plugin, "/data", run=RUN, tag="trace_viewer", host="ALL_HOSTS")
    assert status == 200, doc
    shown = sorted({p["host"] for p in doc["processes"]})
    assert shown == [f"h{k:02d}" for k in range(fits - 1)]
    assert doc["hosts_not_shown"] == [f"h{k:02d}" for k in range(fits - 1, HOSTS)]
    (warning,) = [w for w in doc["diagnostics"]["warnings"] if "hosts shown" in w]
    assert warning.startswith(f"{fits - 1} of {HOSTS} hosts shown")
    assert "(TB_PROFILE_MEMORY_CACHE_BYTES = 10.0 MiB;" in warning and "not shown: h" in warning
    assert plugin._store.decode_count == fits - 1  # the others were never decoded here
    # Details and search answer on the same hosts (the same event ids).
    first_id = doc["events"]["id"][0]
    status, details = _get(plugin, "/trace_event", run=RUN, host="ALL_HOSTS",
                           event_id=str(first_id))
    assert status == 200 and details["event"]["name"] in doc["strings"]
    status, found = _get(plugin, "/trace_search", run=RUN, host="ALL_HOSTS", q="train_step")
    assert status == 200 and found["total_matches"] > 0, found


def test_all_hosts_trace_shows_every_host_that_fits(tmp_path: Path) -> None:
    _pod(tmp_path / "logdir")  # 48 small hosts: far below the default 2 GiB
    plugin = ProfilePlugin(base_plugin.TBContext(logdir=str(tmp_path / "logdir")))
    status, doc = _get(plugin, "/data", run=RUN, tag="trace_viewer", host="ALL_HOSTS")
    assert status == 200
    assert len({p["host"] for p in doc["processes"]}) == HOSTS
    assert doc["hosts_not_shown"] == []
    assert not [w for w in doc["diagnostics"]["warnings"] if "hosts shown" in w]
