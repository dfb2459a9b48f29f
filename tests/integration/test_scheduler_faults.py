"""A Dask scheduler that is there but does not answer, or is not a Dask scheduler: every
ALL_HOSTS request is a 503 naming the address within TB_PROFILE_SCHEDULER_TIMEOUT_S (plus a
small margin), never a hang to the request's budget and never a 500; once the scheduler
answers again the next request succeeds.

(a) a socket server on 127.0.0.1 that accepts and never writes, (b) a real `dask scheduler`
stopped with SIGSTOP (before a request, and while one waits for its hosts) then resumed, (c)
an HTTP server on the port, a tls:// address without Dask TLS and an unsupported scheme. (a)
and (b) go through a real TensorBoard over HTTP; (c) through the plugin's WSGI apps.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import shutil
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin.analysis.hosts import executors, host_pool
from tb_profile_plugin.errors import EngineUnavailable
from tests.fixtures import session_dir
from tests.integration.conftest import start_tensorboard, stop
from tests.integration.test_dask_cluster import _dask_cluster, _need_dask

pytestmark = pytest.mark.dask

TWO_HOSTS = session_dir("two_hosts")
TIMEOUT_S = 2.0
#: What a 503 may take past the timeout: the executors' margin, a thread start, the route.
MARGIN_S = 2.0
ALL_HOSTS = {"run": TWO_HOSTS.name, "tag": "pod_viewer", "host": "ALL_HOSTS"}


@pytest.fixture(autouse=True)
def _short_timeout(monkeypatch: pytest.MonkeyPatch, fresh_executors: None,
                   tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv(executors.TIMEOUT_ENV, str(TIMEOUT_S))
    monkeypatch.setenv("TB_PROFILE_CACHE_DIR", str(tmp_path / "cache"))
    yield
    executors.configure(None)


def _logdir(tmp: Path) -> Path:
    logdir = tmp / "logdir"
    shutil.copytree(TWO_HOSTS, logdir / "plugins" / "profile" / TWO_HOSTS.name)
    return logdir


@contextlib.contextmanager
def _silent_server() -> Iterator[str]:
    """tcp://127.0.0.1:PORT of a server that accepts connections and never writes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for conn in held:
            conn.close()


def _timed_503(fetch: Any, address: str, start_hint: bool = True) -> tuple[float, str]:
    """(seconds, error) of a request that must be a 503 naming `address`, what to do (start a
    scheduler and workers, or unset the setting) and come within the timeout + margin."""
    started = time.monotonic()
    status, doc = fetch()
    took = time.monotonic() - started
    assert status == 503, doc
    error = doc["error"]
    assert address in error and executors.SCHEDULER_ENV in error
    assert "dask worker" in error or not start_hint
    assert took < TIMEOUT_S + MARGIN_S, (took, error)
    return took, error


def test_a_silent_scheduler_is_a_503_within_the_timeout(tmp_path: Path) -> None:
    with _silent_server() as address:
        server = start_tensorboard(_logdir(tmp_path), tmp_path,
                                   ["--profile_scheduler", address],
                                   {executors.TIMEOUT_ENV: str(TIMEOUT_S)})
        try:
            for _ in range(2):  # the abandoned call does not hold the next request
                _, error = _timed_503(lambda: server.fetch_json("data", **ALL_HOSTS), address)
                assert "did not answer within 2 s" in error
            _timed_503(lambda: server.fetch_json("run_tools", run=TWO_HOSTS.name), address)
            # One host needs no worker: it is still served.
            host = sorted(TWO_HOSTS.glob("*.xplane.pb"))[0].name.removesuffix(".xplane.pb")
            assert server.get_json("data", run=TWO_HOSTS.name, tag="overview_page", host=host)
        finally:
            stop(server)


def test_a_stopped_scheduler_is_a_503_and_a_resumed_one_serves(tmp_path: Path) -> None:
    _need_dask()
    (tmp_path / "dask").mkdir()
    with _dask_cluster(tmp_path / "dask") as (address, _, _):
        scheduler_pid = _listening_pid(address)
        server = start_tensorboard(_logdir(tmp_path), tmp_path,
                                   ["--profile_scheduler", address],
                                   {executors.TIMEOUT_ENV: str(TIMEOUT_S)})
        try:
            # run_tools reads the hosts' facts on the cluster: TensorBoard keeps its client.
            assert "pod_viewer" in server.get_json("run_tools", run=TWO_HOSTS.name)
            os.kill(scheduler_pid, signal.SIGSTOP)
            try:  # the analyses are not known yet: they need the (stopped) scheduler
                for _ in range(2):  # the abandoned call does not hold the next request
                    _timed_503(lambda: server.fetch_json("data", **ALL_HOSTS), address)
            finally:
                os.kill(scheduler_pid, signal.SIGCONT)
            doc = server.get_json("data", **{**ALL_HOSTS, "tag": "overview_page"})
            assert doc["multi_host"]["num_common_steps"] == 127
        finally:
            stop(server)


def test_a_scheduler_stopped_while_a_request_waits_is_noticed(tmp_path: Path) -> None:
    """The request already has its executor and waits for a host that takes long: the
    scheduler is asked every few seconds whether it still answers."""
    _need_dask()
    (tmp_path / "dask").mkdir()
    with _dask_cluster(tmp_path / "dask") as (address, _, _):
        scheduler_pid = _listening_pid(address)
        executors.configure(address)
        pool = executors.executor()
        future = pool.submit(time.sleep, 60)
        watch = executors.scheduler_watch(pool)
        os.kill(scheduler_pid, signal.SIGSTOP)
        started = time.monotonic()
        try:
            with pytest.raises(EngineUnavailable) as raised:
                host_pool._result(future, watch)
        finally:
            os.kill(scheduler_pid, signal.SIGCONT)
            future.cancel()
        took = time.monotonic() - started
        assert address in str(raised.value)
        assert took < executors.check_interval_s(TIMEOUT_S) + TIMEOUT_S + MARGIN_S, took
        # The client was dropped; the next executor connects afresh and works.
        assert executors.executor().submit(sum, [1, 2]).result(timeout=30) == 3


def _listening_pid(address: str) -> int:
    """The pid of the process listening on `address`'s port (the `dask scheduler`)."""
    port = int(address.rsplit(":", 1)[1])
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                    inodes.add(fields[9])
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd).removeprefix("socket:[").rstrip("]") in inodes:
                    return int(proc.name)
    raise AssertionError(f"no process listens on {address}")


@contextlib.contextmanager
def _http_server() -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _plugin_get(logdir: Path, address: str, route: str, **query: str) -> tuple[int, Any]:
    from tb_profile_plugin.plugin import ProfilePlugin

    flags = argparse.Namespace(profile_scheduler=address)
    plugin = ProfilePlugin(base_plugin.TBContext(logdir=str(logdir), flags=flags))
    response = Client(plugin.get_plugin_apps()[route]).get("/", query_string=query)
    return response.status_code, json.loads(response.get_data())


@pytest.mark.parametrize("kind", ["http", "tls", "ucx"])
def test_not_a_dask_scheduler_is_a_503_with_a_sentence(tmp_path: Path, kind: str) -> None:
    logdir = _logdir(tmp_path)
    with _http_server() as http_address:
        address = {"http": http_address,
                   "tls": http_address.replace("tcp://", "tls://"),
                   "ucx": http_address.replace("tcp://", "ucx://")}[kind]
        for route, query in (("/data", ALL_HOSTS), ("/run_tools", {"run": TWO_HOSTS.name})):
            host_pool.clear_cache()
            executors.shutdown()
            _, error = _timed_503(
                lambda r=route, q=query: _plugin_get(logdir, address, r, **q),  # type: ignore[misc]
                address, start_hint=kind == "http")
            assert "Traceback" not in error and "MemoryError" not in error
            if kind == "tls":
                assert "TLS is not configured" in error
            if kind == "ucx":
                assert "ucx://" in error and "tcp://" in error
