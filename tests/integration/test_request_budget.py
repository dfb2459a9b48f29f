"""A request stops computing when its client leaves or its time is up (request_budget.py),
through a real TensorBoard: the profile is a real capture with two million identical events
nested in one another on one thread (seconds of analysis), the client a raw socket."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tb_profile_plugin.analysis.events.nesting import PURE_NESTING_ENV
from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.hostile_corpus import _busy_lines, _mutate
from tests.integration.conftest import PREFIX, Server, bad_session, start_tensorboard, stop

DEEP_EVENTS = 2_000_000
RUN = "deep_nesting"
HALF_CLOSE_RUN = "deep_nesting_half_close"


def _deep_nesting(space: xplane_pb2.XSpace) -> None:
    line = _busy_lines(space)[0]
    template = xplane_pb2.XEvent(metadata_id=line.events[0].metadata_id, offset_ps=0,
                                 duration_ps=10**6)
    line.events.extend([template] * DEEP_EVENTS)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("budget") / "logdir"
    deep = _mutate("custom_loop", _deep_nesting).SerializeToString()
    bad_session(root, RUN, {"deep.xplane.pb": deep})
    bad_session(root, HALF_CLOSE_RUN, {"deep.xplane.pb": deep})  # never asked before its test
    good = _mutate("custom_loop", lambda space: None).SerializeToString()
    bad_session(root, "good", {"good.xplane.pb": good})
    return root


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _run_path(run: str) -> str:
    return f"{run}/2020_01_01_00_00_00"


def _request_line(run: str, tag: str) -> bytes:
    return (f"GET {PREFIX}/data?run={_run_path(run)}&tag={tag}&host=deep HTTP/1.1\r\n"
            "Host: 127.0.0.1\r\nConnection: close\r\n\r\n").encode()


@pytest.fixture(scope="module")
def server(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # The numpy nesting passes: with them this profile's analysis takes seconds, checkpoint
    # after checkpoint, which is what these tests need. The compiled walks
    # (analysis/events/_nesting.c) finish the whole overview in under a second, before a
    # client that leaves after one second could be noticed.
    running = start_tensorboard(logdir, tmp_path_factory.mktemp("tb_budget"),
                                env={PURE_NESTING_ENV: "1"})
    yield running
    stop(running)


def _wait_for_log(server: Server, text: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in server.log():
            return True
        time.sleep(0.05)
    return False


def test_an_abandoned_request_stops_computing(server: Server) -> None:
    host, port = server.base_url.removeprefix("http://").split(":")
    pid = server.process.pid
    before_s = _cpu_seconds(pid)
    with socket.create_connection((host, int(port))) as client:
        client.sendall(_request_line(RUN, "overview_page"))
        time.sleep(1.0)  # the server is decoding and analysing the two million events
        computing_s = _cpu_seconds(pid) - before_s
    assert computing_s > 0.3, f"the request was not computing ({computing_s:.2f} s of CPU)"
    closed_at = time.monotonic()
    assert _wait_for_log(server, "the client closed its connection", 5.0), server.log()[-3000:]
    stopped_after_s = time.monotonic() - closed_at
    # Once stopped, the server idles: no analysis keeps running for nobody.
    idle_from_s = _cpu_seconds(pid)
    time.sleep(2.0)
    idle_cpu_s = _cpu_seconds(pid) - idle_from_s
    assert idle_cpu_s < 0.5, f"{idle_cpu_s:.2f} s of CPU in the 2 s after the stop"
    assert stopped_after_s < 5.0
    assert "Traceback" not in server.log()
    # The server still answers, and the same view of the same run when asked again by a client
    # that waits (what was finished before the stop is kept).
    status, doc = server.fetch_json("data", run=_run_path("good"), tag="overview_page",
                                    host="good")
    assert status == 200 and doc["steps"], doc
    status, doc = server.fetch_json("data", run=_run_path(RUN), tag="overview_page", host="deep")
    assert status == 200, doc


def test_a_request_over_its_time_is_a_503_with_a_sentence(
        logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    running = start_tensorboard(logdir, tmp_path_factory.mktemp("tb_short"),
                                env={"TB_PROFILE_REQUEST_SECONDS": "0.2"})
    try:
        started = time.monotonic()
        status, doc = running.fetch_json("data", run=_run_path(RUN), tag="overview_page",
                                         host="deep")
        took_s = time.monotonic() - started
        assert status == 503, doc
        assert "TB_PROFILE_REQUEST_SECONDS" in doc["error"] and "0.2 s limit" in doc["error"]
        assert took_s < 5.0, f"answered after {took_s:.1f} s"
        # Other routes and small runs are still served within the budget.
        status, runs = running.fetch_json("runs")
        assert status == 200 and _run_path("good") in runs
        assert "Traceback" not in running.log()
    finally:
        stop(running)


def test_an_all_hosts_request_over_its_time_stops_waiting_for_the_workers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_executors: None) -> None:
    """160 real hosts (the two-host capture copied), no disk cache, two local workers: past
    its time the request stops waiting for the hosts (503) instead of answering when all are
    done, and the pool still serves the next request."""
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client

    from tb_profile_plugin.analysis.hosts import executors
    from tb_profile_plugin.plugin import ProfilePlugin
    from tb_profile_plugin.xspace import cache
    from tests.fixtures import session_dir

    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")
    monkeypatch.setenv(executors.WORKERS_ENV, "2")
    session = tmp_path / "logdir" / "pod" / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    files = sorted(session_dir("two_hosts").glob("*.xplane.pb"))
    for k in range(160):  # seconds of work for two workers, whatever the machine
        (session / f"h{k:03d}.xplane.pb").write_bytes(files[k % 2].read_bytes())
    apps = ProfilePlugin(base_plugin.TBContext(logdir=str(tmp_path / "logdir"))).get_plugin_apps()
    query = {"run": "pod/2026_01_01_00_00_00", "tag": "pod_viewer", "host": "ALL_HOSTS"}

    monkeypatch.setenv("TB_PROFILE_REQUEST_SECONDS", "0.5")
    started = time.monotonic()
    response = Client(apps["/data"]).get("/", query_string=query)
    stopped_after_s = time.monotonic() - started
    assert response.status_code == 503, response.get_data()[:300]
    assert b"over the 0.5 s limit (TB_PROFILE_REQUEST_SECONDS)" in response.get_data()
    assert stopped_after_s < 2.5, f"answered after {stopped_after_s:.1f} s"

    monkeypatch.delenv("TB_PROFILE_REQUEST_SECONDS")
    started = time.monotonic()
    response = Client(apps["/data"]).get("/", query_string=query)
    full_s = time.monotonic() - started
    assert response.status_code == 200, response.get_data()[:300]
    assert full_s > stopped_after_s, (full_s, stopped_after_s)  # it stopped before the end


def _final_status(reply: bytes) -> int:
    """The status of the final response in `reply`, after any interim (1xx) ones."""
    while True:
        head, _, reply = reply.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        if status >= 200:
            return status


def test_a_client_that_half_closes_still_gets_its_answer(server: Server) -> None:
    """A client that sends its request and then shuts its sending side (SHUT_WR) is still
    reading: it gets the document, not a 499, after seconds of analysis (the server saw its
    end of stream and asked with an interim 100 Continue, which it skips)."""
    host, port = server.base_url.removeprefix("http://").split(":")
    log_before = len(server.log())
    query = _request_line(HALF_CLOSE_RUN, "overview_page")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=120) as client:
        client.sendall(query)
        client.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := client.recv(1 << 16):
            chunks.append(chunk)
    took_s = time.monotonic() - started
    reply = b"".join(chunks)
    assert _final_status(reply) == 200, reply[:300]
    # Seconds of analysis (see `server`): the socket was looked at many times meanwhile.
    assert took_s > 0.5, f"answered in {took_s:.2f} s: the socket was never looked at"
    assert "the client closed its connection" not in server.log()[log_before:]


def test_an_all_hosts_request_that_stops_cancels_its_queued_hosts_and_keeps_the_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_executors: None) -> None:
    """160 real hosts, two local workers, a 0.5 s budget and no build going on past it
    (TB_PROFILE_CONTINUE_SECONDS=0): after the 503 the running hosts' answers are kept, the
    hosts not started never run (the pool falls idle: nothing more is kept seconds later), and
    the next ask computes only the others."""
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client

    from tb_profile_plugin.analysis.hosts import executors, host_pool
    from tb_profile_plugin.plugin import ProfilePlugin
    from tb_profile_plugin.xspace import cache
    from tests.fixtures import session_dir

    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")
    monkeypatch.setenv(executors.WORKERS_ENV, "2")
    monkeypatch.setenv("TB_PROFILE_CONTINUE_SECONDS", "0")
    session = tmp_path / "logdir" / "pod" / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    files = sorted(session_dir("two_hosts").glob("*.xplane.pb"))
    hosts = 160
    for k in range(hosts):
        (session / f"h{k:03d}.xplane.pb").write_bytes(files[k % 2].read_bytes())
    apps = ProfilePlugin(base_plugin.TBContext(logdir=str(tmp_path / "logdir"))).get_plugin_apps()
    query = {"run": "pod/2026_01_01_00_00_00", "tag": "pod_viewer", "host": "ALL_HOSTS"}

    # The hosts' facts first (the workers started and warm), so the budget goes to analyses.
    assert Client(apps["/hosts"]).get("/", query_string={
        "run": query["run"], "tag": "pod_viewer"}).status_code == 200

    def analysed() -> int:
        return sum(1 for key in list(host_pool._cache) if key[0] == "analysis")

    monkeypatch.setenv("TB_PROFILE_REQUEST_SECONDS", "0.5")
    response = Client(apps["/data"]).get("/", query_string=query)
    assert response.status_code == 503, response.get_data()[:300]
    time.sleep(3.0)  # the hosts running at the stop finish, and are kept
    kept = analysed()
    time.sleep(2.0)  # cancelled hosts never run: the pool is idle, nothing more is kept
    assert analysed() == kept
    assert 1 <= kept < hosts, kept
    monkeypatch.delenv("TB_PROFILE_REQUEST_SECONDS")
    runs_before = host_pool.pool_runs
    response = Client(apps["/data"]).get("/", query_string=query)
    assert response.status_code == 200, response.get_data()[:300]
    assert host_pool.pool_runs - runs_before == hosts - kept
