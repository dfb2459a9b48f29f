"""The plugin's routes through a real TensorBoard process over HTTP (design/api.md)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR, fixture_run, session_dir
from tests.integration.conftest import Server, start_tensorboard, stop

# The run prefix of each fixture: keras_fit's run is keras_fit/train/<session>.
RUN_PREFIXES = ("keras_fit/train", "custom_loop", "tfdata_slow", "tfdata_parallel", "two_hosts")


def _query(**params: str) -> str:
    return urllib.parse.urlencode(params)


def _host(prefix: str) -> str:
    """The host of a one-host fixture run."""
    return next(session_dir(prefix).glob("*.xplane.pb")).name.removesuffix(".xplane.pb")


def test_runs_lists_every_fixture_newest_first(server: Server) -> None:
    status, runs = server.fetch_json("runs")
    assert status == 200
    for prefix in RUN_PREFIXES:
        assert fixture_run(prefix) in runs
    # Runs without any host file are not offered; bad files still are (their views explain).
    assert not any(r.startswith("no_xplane") for r in runs)
    sessions = [r.rsplit("/", 1)[-1] for r in runs]
    assert sessions == sorted(sessions, reverse=True)


def test_hosts_of_two_host_run(server: Server) -> None:
    run = fixture_run("two_hosts")
    status, hosts = server.fetch_json("hosts", run=run, tag="profile_info")
    assert status == 200
    assert hosts[0] == "ALL_HOSTS"
    assert len(hosts) == 3
    files = sorted(p.name.removesuffix(".xplane.pb")
                   for p in session_dir("two_hosts").glob("*.xplane.pb"))
    assert hosts[1:] == files


@pytest.mark.parametrize("prefix", sorted(RUN_PREFIXES))
def test_profile_info_counts_every_event(server: Server, prefix: str) -> None:
    run = fixture_run(prefix)
    status, tools = server.fetch_json("run_tools", run=run)
    assert status == 200 and "profile_info" in tools
    expected = sum(
        decode_xspace(p.read_bytes()).num_events for p in session_dir(prefix).glob("*.xplane.pb")
    )
    host = "ALL_HOSTS" if prefix == "two_hosts" else _host(prefix)
    status, doc = server.fetch_json("data", run=run, tag="profile_info", host=host)
    assert status == 200
    assert doc["tool"] == "profile_info" and doc["run"] == run and doc["host"] == host
    assert set(doc["diagnostics"]) == {"errors", "warnings", "info"}
    assert doc["total_events"] == expected > 0


def test_responses_are_gzipped_when_accepted(server: Server) -> None:
    run = fixture_run("keras_fit/train")
    route = "/data?" + _query(run=run, tag="profile_info", host=_host("keras_fit/train"))
    status, headers, body = server.get(route, {"Accept-Encoding": "gzip"})
    assert status == 200
    assert headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(body))["tool"] == "profile_info"


def test_csv_table(server: Server) -> None:
    run = fixture_run("custom_loop")
    route = "/data_csv?" + _query(run=run, tag="profile_info", host=_host("custom_loop"),
                                  table="lines")
    status, headers, body = server.get(route)
    assert status == 200
    assert headers["Content-Type"].startswith("text/csv")
    assert "attachment" in headers["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(body.decode())))
    assert rows[0][:4] == ["host", "plane", "line_id", "line"]
    assert sum(int(r[5]) for r in rows[1:]) > 0
    assert body.decode().splitlines()[1].startswith('"')  # names are quoted


def test_static_frontend_is_served(server: Server) -> None:
    status, headers, body = server.get("/index.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert b"render" in body
    status, headers, body = server.get("/index.html")
    assert status == 200 and "default-src 'self'" in headers["Content-Security-Policy"]
    assert b"<script" in body and b"http" not in body.replace(b"http-equiv", b"")


BAD_REQUESTS = [
    # (query, status, words the message must contain)
    ({"run": "bad_empty/2020_01_01_00_00_00", "host": "h"}, 422, "empty"),
    ({"run": "bad_truncated/2020_01_01_00_00_00", "host": "h"}, 422, "truncated"),
    ({"run": "bad_random/2020_01_01_00_00_00", "host": "h"}, 422, "not"),
    ({"run": "no_xplane/2020_01_01_00_00_00", "host": "h"}, 404, "no <host>.xplane.pb"),
    ({"run": "custom_loop/x", "host": "../../etc/passwd"}, 400, "not a valid"),
    ({"run": "../../etc", "host": "h"}, 400, "not a valid"),
    ({"run": "/etc/passwd", "host": "h"}, 400, "not a valid"),
    ({"run": "%2e%2e/%2e%2e/etc", "host": "h"}, 400, "not a valid"),
    ({"run": "nope/2020", "host": "h"}, 404, "no run"),
]


@pytest.mark.parametrize("query, status, words", BAD_REQUESTS, ids=lambda v: str(v)[:40])
def test_bad_input_is_explained_and_server_stays_up(
    server: Server, query: dict[str, str], status: int, words: str
) -> None:
    params = dict(query, tag="profile_info")
    if params["run"].startswith("%2e"):
        route = f"/data?run={params['run']}&tag=profile_info&host=h"  # already encoded
    else:
        route = "/data?" + _query(**params)
    got, headers, body = server.get(route)
    assert got == status
    assert headers["Content-Type"].startswith("application/json")
    assert words in json.loads(body)["error"]
    assert server.get("/runs")[0] == 200


def test_host_with_slash_in_real_run(server: Server) -> None:
    run = fixture_run("custom_loop")
    status, doc = server.fetch_json("data", run=run, tag="profile_info", host="a/../b")
    assert status == 400 and "host" in doc["error"]


def test_unknown_view_and_missing_tag(server: Server) -> None:
    run = fixture_run("custom_loop")
    status, doc = server.fetch_json("data", run=run, tag="no_such_view")
    assert status == 404 and "unknown view" in doc["error"]
    status, doc = server.fetch_json("data", run=run)
    assert status == 400 and "tag" in doc["error"]


def test_space_without_events_explains_itself(server: Server) -> None:
    status, doc = server.fetch_json(
        "data", run="no_events/2020_01_01_00_00_00", tag="profile_info", host="quiet")
    assert status == 200
    assert doc["total_events"] == 0
    assert any("no events" in w for w in doc["diagnostics"]["warnings"])


def test_32_concurrent_requests_for_one_cold_profile(server: Server) -> None:
    run = fixture_run("tfdata_parallel")
    route = "/data?" + _query(run=run, tag="profile_info", host=_host("tfdata_parallel"))
    with ThreadPoolExecutor(32) as pool:
        results = list(pool.map(lambda _: server.get(route), range(32)))
    assert [status for status, _, _ in results] == [200] * 32
    assert len({body for _, _, body in results}) == 1


def test_analysis_views_over_http(server: Server) -> None:
    run = fixture_run("tfdata_slow")
    host = _host("tfdata_slow")
    status, tools = server.fetch_json("run_tools", run=run)
    assert status == 200
    assert tools == [
        "overview_page", "input_pipeline_analyzer", "tensorflow_stats", "trace_viewer",
        "memory_profile", "pod_viewer", "tf_data_bottleneck_analysis", "profile_info"]
    status, overview = server.fetch_json("data", run=run, tag="overview_page", host=host)
    assert status == 200 and overview["tool"] == "overview_page"
    assert len(overview["steps"]) == 6 and overview["bottleneck"]["input_bound"] == "highly"
    status, pipeline = server.fetch_json(
        "data", run=run, tag="input_pipeline_analyzer", host=host)
    assert status == 200 and pipeline["input_ops"][0]["op_name"] == "Iterator::Root::BatchV2::Map"
    status, headers, body = server.get(
        "/data_csv?" + _query(run=run, tag="overview_page", host=host, table="steps"))
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(body.decode())))
    assert rows[0][:2] == ["step_num", "step_time_ms"] and len(rows) == 7
    # the nine category columns of each row sum to its step time
    for row in rows[1:]:
        assert sum(float(x) for x in row[2:]) == pytest.approx(float(row[1]))


def test_analysis_views_of_unreadable_and_empty_profiles(server: Server) -> None:
    status, doc = server.fetch_json(
        "data", run="bad_truncated/2020_01_01_00_00_00", tag="overview_page", host="h")
    assert status == 422 and "truncated" in doc["error"]
    status, tools = server.fetch_json("run_tools", run="no_events/2020_01_01_00_00_00")
    assert tools == ["profile_info"]
    status, doc = server.fetch_json(
        "data", run="no_events/2020_01_01_00_00_00", tag="overview_page", host="quiet")
    assert status == 404 and "no data" in doc["error"]


def test_linked_runs_left_out_are_counted_and_followed_when_allowed(tmp_path: Path) -> None:
    """A logdir whose runs are symbolic links to directories elsewhere: the run list is empty,
    and the `links` route says how many links were left out and how to follow them; with
    TB_PROFILE_FOLLOW_LINKS=1 the same logdir lists the linked runs and counts none."""
    elsewhere, logdir = tmp_path / "elsewhere", tmp_path / "logdir"
    logdir.mkdir()
    for fixture in ("keras_fit", "custom_loop"):
        shutil.copytree(DATA_DIR / fixture, elsewhere / fixture)
        (logdir / fixture).symlink_to(elsewhere / fixture, target_is_directory=True)
    linked = start_tensorboard(logdir, tmp_path)
    try:
        assert linked.get_json("runs") == []
        assert linked.get_json("links") == {
            "links_left_out": 2, "follow_links_env": "TB_PROFILE_FOLLOW_LINKS",
            "message": "2 symbolic links lead outside the logdir and were left out: linked "
                       "runs are not followed by default. To read them, restart TensorBoard "
                       "with TB_PROFILE_FOLLOW_LINKS=1 in its environment (README, "
                       "\"Settings\")."}
    finally:
        stop(linked)
    followed = start_tensorboard(logdir, tmp_path, env={"TB_PROFILE_FOLLOW_LINKS": "1"})
    try:
        runs = followed.get_json("runs")
        assert sorted(r.split("/", 1)[0] for r in runs) == ["custom_loop", "keras_fit"]
        assert followed.get_json("links") == {
            "links_left_out": 0, "follow_links_env": "TB_PROFILE_FOLLOW_LINKS", "message": None}
    finally:
        stop(followed)
