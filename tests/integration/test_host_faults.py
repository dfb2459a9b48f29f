"""Faults in an ALL_HOSTS request: an unreadable host is left out with a diagnostic naming it
(the view answers for the others), and a local worker killed mid-request is replaced and its
hosts run again, so the document is whole.

The plugin's routes are called through werkzeug's test client on real captures (the two-host
run, copied under more host names so a request keeps the workers busy for a while).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin.analysis.hosts import executors, host_pool
from tb_profile_plugin.xspace import cache
from tests.fixtures import session_dir

TWO_HOSTS = session_dir("two_hosts")
SESSION = "2026_01_01_00_00_00"
VIEWS = ("overview_page", "pod_viewer", "tensorflow_stats", "input_pipeline_analyzer",
         "profile_info")
KILL_WAIT_S = 120
KILL_HOSTS = 48
BUSY_CPU_S = 0.1
DAMAGED, CLEAN, POD = (f"{name}/{SESSION}" for name in ("damaged", "clean", "pod"))


@pytest.fixture(autouse=True)
def _fresh_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_executors: None) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "cache"))


def _copies(logdir: Path, run: str, count: int) -> Path:
    """`count` hosts h00.. whose files are copies of the two-host capture's, alternately."""
    session = logdir / run / "plugins" / "profile" / SESSION
    session.mkdir(parents=True)
    files = sorted(TWO_HOSTS.glob("*.xplane.pb"))
    for k in range(count):
        shutil.copy(files[k % len(files)], session / f"h{k:02d}.xplane.pb")
    return session


def _cpu_s(pid: int) -> float:
    """CPU seconds a process has used (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _plugin(logdir: Path) -> Any:
    from tb_profile_plugin.plugin import ProfilePlugin

    flags = argparse.Namespace(profile_scheduler=None)
    return ProfilePlugin(base_plugin.TBContext(logdir=str(logdir), flags=flags))


def _get(plugin: Any, route: str, **params: str) -> tuple[int, Any]:
    response = Client(plugin.get_plugin_apps()[route]).get("/", query_string=params)
    return response.status_code, json.loads(response.get_data())


def _without_run(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in ("run", "diagnostics", "hosts_left_out")}


def test_unreadable_hosts_are_left_out_and_named(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    damaged = _copies(logdir, "damaged", 4)
    _copies(logdir, "clean", 4)
    for name in ("h01", "h03"):
        (logdir / "clean" / "plugins" / "profile" / SESSION / f"{name}.xplane.pb").unlink()
    truncated = damaged / "h01.xplane.pb"
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    (damaged / "h03.xplane.pb").unlink()
    os.mkfifo(damaged / "h03.xplane.pb")  # not a regular file: never opened
    plugin = _plugin(logdir)

    status, hosts = _get(plugin, "/hosts", run=DAMAGED, tag="pod_viewer")
    assert status == 200 and hosts == ["ALL_HOSTS", "h00", "h02"]
    for view in VIEWS:
        status, doc = _get(plugin, "/data", run=DAMAGED, tag=view, host="ALL_HOSTS")
        assert status == 200, (view, doc)
        assert doc["hosts_left_out"] == ["h01", "h03"]
        left_out = [e for e in doc["diagnostics"]["errors"] if "left out of ALL_HOSTS" in e]
        assert [e.split(":")[0] for e in left_out] == ["h01", "h03"], left_out
        assert "h01.xplane.pb" in left_out[0] and "h03.xplane.pb" in left_out[1]
        assert str(tmp_path) not in " ".join(left_out)
        status, clean = _get(plugin, "/data", run=CLEAN, tag=view, host="ALL_HOSTS")
        assert status == 200 and "hosts_left_out" not in clean
        assert _without_run(doc) == _without_run(clean), view
    # Hosts that can be read alone still answer; the broken ones say why (422).
    assert _get(plugin, "/data", run=DAMAGED, tag="overview_page", host="h00")[0] == 200
    assert _get(plugin, "/data", run=DAMAGED, tag="profile_info", host="h01")[0] == 422
    # A run none of whose hosts can be read is a 422, not an empty document.
    truncated.write_bytes(b"\x0a\xff\xff")
    for name in ("h00", "h02"):
        shutil.copy(truncated, damaged / f"{name}.xplane.pb")
    status, doc = _get(plugin, "/data", run=DAMAGED, tag="profile_info", host="ALL_HOSTS")
    assert status == 422 and "h00.xplane.pb" in doc["error"]


def test_a_local_worker_killed_mid_request_is_replaced_and_its_hosts_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(executors.WORKERS_ENV, "2")
    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")  # every host decoded: a longer request
    logdir = tmp_path / "logdir"
    _copies(logdir, "pod", KILL_HOSTS)
    plugin = _plugin(logdir)
    answers: list[tuple[int, Any]] = []
    request = threading.Thread(target=lambda: answers.append(
        _get(plugin, "/data", run=POD, tag="pod_viewer", host="ALL_HOSTS")))
    retried_before = host_pool.pool_retries
    request.start()
    deadline = time.monotonic() + KILL_WAIT_S
    pool = None
    while time.monotonic() < deadline and request.is_alive():
        pool = executors._local
        if pool is not None and len(pool._processes or {}) == 2:
            break
        time.sleep(0.01)
    assert pool is not None, "the request ended before a worker started"
    victim = next(iter(pool._processes))
    while _cpu_s(victim) < BUSY_CPU_S and request.is_alive():
        time.sleep(0.005)  # until the worker is inside its hosts
    assert request.is_alive(), "the request ended before the worker was killed"
    os.kill(victim, signal.SIGKILL)
    request.join(KILL_WAIT_S)
    assert not request.is_alive()
    status, killed_doc = answers[0]
    assert status == 200, killed_doc
    assert host_pool.pool_retries > retried_before  # hosts of the dead pool ran again
    replaced = executors._local
    assert replaced is not None and replaced is not pool
    assert victim not in (replaced._processes or {})

    host_pool.clear_cache()
    status, undisturbed = _get(_plugin(logdir), "/data", run=POD, tag="pod_viewer",
                               host="ALL_HOSTS")
    assert status == 200
    assert killed_doc == undisturbed
    assert len(killed_doc["hosts"]) == KILL_HOSTS
