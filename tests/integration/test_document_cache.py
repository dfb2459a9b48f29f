"""A repeated `data` request is answered from the finished document (document_cache.py): the
same bytes as the first answer, without building the view again; a host file that changed is
never answered from its old document.

The plugin's routes are called through werkzeug's test client on copies of real captures;
each view's `build` is wrapped to count how often it runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin import document_cache
from tb_profile_plugin.logdir import ALL_HOSTS
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace import cache
from tests.fixtures import session_dir

SESSION = "2026_01_01_00_00_00"
ONE, POD = (f"{name}/{SESSION}" for name in ("one", "pod"))
GZIP = {"Accept-Encoding": "gzip"}


@pytest.fixture(autouse=True)
def _fresh_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_executors: None) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(document_cache.DOCUMENT_CACHE_ENV, raising=False)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each view built a document."""
    counts: Counter[str] = Counter()
    for name, view in list(registry.VIEWS.items()):
        def counting(request: registry.ViewRequest, view: registry.View = view) -> Any:
            counts[view.name] += 1
            return view.build(request)
        monkeypatch.setitem(registry.VIEWS, name, dataclasses.replace(view, build=counting))
    return counts


def _run(logdir: Path, run: str, files: dict[str, Path]) -> Path:
    session = logdir / run.split("/")[0] / "plugins" / "profile" / SESSION
    session.mkdir(parents=True)
    for host, source in files.items():
        shutil.copy(source, session / f"{host}.xplane.pb")
    return session


def _logdir(tmp_path: Path) -> Path:
    logdir = tmp_path / "logdir"
    _run(logdir, ONE, {"h": next(session_dir("custom_loop").glob("*.xplane.pb"))})
    two = sorted(session_dir("two_hosts").glob("*.xplane.pb"))
    _run(logdir, POD, {"h0": two[0], "h1": two[1]})
    return logdir


def _plugin(logdir: Path) -> Any:
    from tb_profile_plugin.plugin import ProfilePlugin

    flags = argparse.Namespace(profile_scheduler=None)
    return ProfilePlugin(base_plugin.TBContext(logdir=str(logdir), flags=flags))


def _get(plugin: Any, route: str, headers: dict[str, str] | None = None,
         **params: str) -> tuple[int, dict[str, str], bytes]:
    response = Client(plugin.get_plugin_apps()[route]).get("/", query_string=params,
                                                            headers=headers or {})
    return response.status_code, dict(response.headers), response.get_data()


def _views(plugin: Any, run: str, host: str) -> list[str]:
    """The run's views for `host` whose documents are kept (all but the trace viewer)."""
    _, _, body = _get(plugin, "/run_tools", run=run)
    return [v for v in json.loads(body) if registry.VIEWS[v].keeps_documents
            and (host != ALL_HOSTS or registry.VIEWS[v].combines_hosts)]


@pytest.mark.parametrize(("run", "host"), [(ONE, "h"), (POD, ALL_HOSTS), (POD, "h1")])
def test_a_repeated_request_is_the_same_bytes_built_once(
        tmp_path: Path, builds: Counter[str], run: str, host: str) -> None:
    plugin = _plugin(_logdir(tmp_path))
    views = _views(plugin, run, host)
    assert {"overview_page", "tensorflow_stats", "profile_info"} <= set(views), views
    for view in views:
        first = _get(plugin, "/data", GZIP, run=run, tag=view, host=host)
        assert first[0] == 200, (view, first[2][:300])
        again = _get(plugin, "/data", GZIP, run=run, tag=view, host=host)
        assert again == first, view  # status, headers (gzip, Vary, nosniff) and bytes
        plain = _get(plugin, "/data", run=run, tag=view, host=host)
        body = gzip.decompress(first[2]) if first[1].get("Content-Encoding") else first[2]
        assert plain[0] == 200 and "Content-Encoding" not in plain[1]
        assert plain[2] == body, view
        assert json.loads(body)["tool"] == view
    assert builds == Counter({view: 1 for view in views})  # each view built once
    assert plugin._documents.hits == 2 * len(views)


def test_without_the_cache_every_request_builds_again(
        tmp_path: Path, builds: Counter[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same requests with the document cache bound at 0: the same bytes, built each time
    (what the count above would see without the cache)."""
    logdir = _logdir(tmp_path)
    kept = _plugin(logdir)
    monkeypatch.setenv(document_cache.DOCUMENT_CACHE_ENV, "0")
    uncached = _plugin(logdir)
    for _ in range(2):
        answer = _get(uncached, "/data", GZIP, run=ONE, tag="overview_page", host="h")
    assert builds["overview_page"] == 2 and uncached._documents.hits == 0
    assert _get(kept, "/data", GZIP, run=ONE, tag="overview_page", host="h") == answer


def test_parameters_and_hosts_are_kept_apart(tmp_path: Path, builds: Counter[str]) -> None:
    plugin = _plugin(_logdir(tmp_path))
    answers = {}
    for host in ("h0", "h1", ALL_HOSTS):
        for idle in ("", "false"):
            params = {"include_idle": idle} if idle else {}
            _, _, body = _get(plugin, "/data", run=POD, tag="tensorflow_stats", host=host,
                              **params)
            answers[host, idle] = body
            assert _get(plugin, "/data", run=POD, tag="tensorflow_stats", host=host,
                        **params)[2] == body
    assert len(set(answers.values())) == len(answers)
    assert builds["tensorflow_stats"] == len(answers)


def test_the_trace_viewer_is_not_kept(tmp_path: Path, builds: Counter[str]) -> None:
    plugin = _plugin(_logdir(tmp_path))
    for _ in range(2):
        assert _get(plugin, "/data", GZIP, run=ONE, tag="trace_viewer", host="h")[0] == 200
    assert builds["trace_viewer"] == 2 and len(plugin._documents) == 0


@pytest.mark.parametrize(("run", "host", "changed"), [(ONE, "h", "h"), (POD, ALL_HOSTS, "h1")])
def test_a_changed_file_is_not_answered_from_its_old_document(
        tmp_path: Path, builds: Counter[str], run: str, host: str, changed: str) -> None:
    logdir = _logdir(tmp_path)
    plugin = _plugin(logdir)
    _, _, old = _get(plugin, "/data", run=run, tag="overview_page", host=host)
    path = logdir / run.split("/")[0] / "plugins" / "profile" / SESSION / f"{changed}.xplane.pb"
    mtime_ns = path.stat().st_mtime_ns
    shutil.copy(next(session_dir("keras_fit/train").glob("*.xplane.pb")), path)
    os.utime(path, ns=(mtime_ns + 10**9, mtime_ns + 10**9))  # whatever the clock's resolution
    status, _, new = _get(plugin, "/data", run=run, tag="overview_page", host=host)
    assert status == 200 and new != old
    assert new == _get(_plugin(logdir), "/data", run=run, tag="overview_page", host=host)[2]
    assert builds["overview_page"] == 3  # old, new, and the fresh plugin's
    assert len(plugin._documents) == 1  # the old document was dropped, not left to age out
