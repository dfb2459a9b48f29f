"""Progress of a request that reads several hosts: the `progress` route reports hosts done /
total while an ALL_HOSTS request runs, and `tb-profile summary` prints its progress when asked
(TB_PROFILE_PROGRESS=always) on a stream that is no terminal.

Real captures (the two-host run copied under 48 host names), the disk cache off so every host
is decoded, the local pool of two workers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin.analysis.hosts import executors
from tb_profile_plugin.xspace import cache
from tests.fixtures import session_dir

TWO_HOSTS = session_dir("two_hosts")
ROOT = Path(__file__).resolve().parents[2]
HOSTS = 48
SESSION = "2026_01_01_00_00_00"
RUN = f"pod/{SESSION}"
WAIT_S = 120


@pytest.fixture(autouse=True)
def _fresh_engine(monkeypatch: pytest.MonkeyPatch, fresh_executors: None) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")
    monkeypatch.setenv(executors.WORKERS_ENV, "2")


def _pod(root: Path) -> Path:
    session = root / "pod" / "plugins" / "profile" / SESSION
    session.mkdir(parents=True)
    files = sorted(TWO_HOSTS.glob("*.xplane.pb"))
    for k in range(HOSTS):
        shutil.copy(files[k % 2], session / f"h{k:02d}.xplane.pb")
    return session


def test_progress_route_counts_hosts_during_an_all_hosts_request(tmp_path: Path) -> None:
    from tb_profile_plugin.plugin import ProfilePlugin

    _pod(tmp_path / "logdir")
    flags = argparse.Namespace(profile_scheduler=None)
    apps = ProfilePlugin(base_plugin.TBContext(logdir=str(tmp_path / "logdir"),
                                               flags=flags)).get_plugin_apps()

    def progress() -> dict[str, Any]:
        response = Client(apps["/progress"]).get("/", query_string={"run": RUN})
        assert response.status_code == 200
        return dict(json.loads(response.get_data()))

    before = progress()
    assert (before["phase"], before["done"], before["total"]) == (None, 0, 0)
    answers: list[int] = []
    request = threading.Thread(target=lambda: answers.append(Client(apps["/data"]).get(
        "/", query_string={"run": RUN, "tag": "pod_viewer", "host": "ALL_HOSTS"}).status_code))
    request.start()
    seen: list[tuple[str, int, int]] = []
    deadline = time.monotonic() + WAIT_S
    while request.is_alive() and time.monotonic() < deadline:
        now = progress()
        if now["phase"] is not None and not now["finished"]:
            seen.append((now["phase"], now["done"], now["total"]))
        time.sleep(0.02)
    request.join()
    assert answers == [200]
    partial = [s for s in seen if 0 < s[1] < s[2]]
    assert partial, f"no partial progress seen: {seen[:5]}...{seen[-5:]}"
    assert {total for _, _, total in seen} == {HOSTS}
    assert {phase for phase, _, _ in seen} <= {"facts", "analysis"}
    for phase in {phase for phase, _, _ in seen}:  # hosts done only ever grow in a pass
        done = [d for p, d, _ in seen if p == phase]
        assert done == sorted(done)
    after = progress()
    assert after["finished"] and after["phase"] == "analysis"
    assert after["done"] == after["total"] == HOSTS and after["words"] == "analysing hosts"


def test_summary_prints_hosts_progress_when_asked(tmp_path: Path) -> None:
    session = _pod(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != executors.SCHEDULER_ENV}
    env.update(TB_PROFILE_CACHE_DIR="off", TB_PROFILE_HOST_WORKERS="2",
               TB_PROFILE_PROGRESS="always")
    done = subprocess.run([sys.executable, "-m", "tb_profile_plugin.cli", "summary",
                           str(session)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("tb-profile: [")]
    counts = [re.search(r"\] (\d+)/(\d+) analysing hosts ", line) for line in lines]
    analysed = [(int(m.group(1)), int(m.group(2))) for m in counts if m]
    assert analysed and analysed[-1] == (HOSTS, HOSTS), lines
    assert all(total == HOSTS for _, total in analysed)
    assert "\r" not in done.stderr  # no terminal: lines, not a bar redrawn in place
    # Not asked and no terminal: nothing.
    env["TB_PROFILE_PROGRESS"] = ""
    quiet = subprocess.run([sys.executable, "-m", "tb_profile_plugin.cli", "summary",
                            str(session)], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
    assert quiet.returncode == 0 and "tb-profile: [" not in quiet.stderr
    assert quiet.stdout == done.stdout
