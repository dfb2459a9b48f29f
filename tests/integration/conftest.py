"""A real TensorBoard process serving a logdir of real captures plus deliberately bad runs."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tb_profile_plugin.analysis.hosts import executors, host_pool
from tests.fixtures import DATA_DIR
from tests.xspace_builder import XSpaceBuilder

PREFIX = "/data/plugin/profile"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    base_url: str
    logdir: Path
    process: subprocess.Popen[bytes]
    log_path: Path

    def get(self, route: str, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
        request = urllib.request.Request(self.base_url + PREFIX + route, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def fetch_json(self, route: str, **params: object) -> tuple[int, Any]:
        """GETs `/route?params`; (status, decoded JSON body)."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, _, body = self.get(f"/{route}{query}")
        return status, json.loads(body)

    def get_json(self, route: str, **params: object) -> Any:
        """GETs `/route?params`, which must answer 200; its decoded JSON body."""
        status, doc = self.fetch_json(route, **params)
        assert status == 200, doc
        return doc

    def post_json(self, route: str, **params: str) -> tuple[int, Any, float]:
        """POSTs `params` as a form to `/route`; (status, decoded JSON body, seconds taken)."""
        data = urllib.parse.urlencode(params).encode()
        request = urllib.request.Request(f"{self.base_url}{PREFIX}/{route}", data=data)
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, body = exc.code, exc.read()
        return status, json.loads(body), time.monotonic() - started

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def bad_session(logdir: Path, run: str, files: dict[str, bytes]) -> None:
    session = logdir / run / "plugins" / "profile" / "2020_01_01_00_00_00"
    session.mkdir(parents=True)
    for name, data in files.items():
        (session / name).write_bytes(data)


def make_logdir(root: Path) -> Path:
    """The committed fixtures, plus one run per kind of bad input."""
    logdir = root / "logdir"
    shutil.copytree(DATA_DIR, logdir, ignore=shutil.ignore_patterns("README.md"))
    real = next(DATA_DIR.glob("custom_loop/**/*.xplane.pb")).read_bytes()
    no_events = XSpaceBuilder(hostnames=["quiet"])
    no_events.plane("/host:CPU").line("idle")
    bad_session(logdir, "bad_empty", {"h.xplane.pb": b""})
    bad_session(logdir, "bad_truncated", {"h.xplane.pb": real[: len(real) // 2]})
    bad_session(logdir, "bad_random", {"h.xplane.pb": os.urandom(4096)})
    bad_session(logdir, "no_events", {"quiet.xplane.pb": no_events.serialize()})
    bad_session(logdir, "no_xplane", {"notes.txt": b"nothing here"})
    return logdir


def start_tensorboard(
    logdir: Path,
    tmp: Path,
    extra_args: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> Server:
    port = free_port()
    log_path = tmp / f"tensorboard-{port}.log"
    full_env = {**os.environ, "TB_PROFILE_CACHE_DIR": str(tmp / "cache"), **(env or {})}
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tensorboard.main",
                "--logdir",
                str(logdir),
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
                *(extra_args or []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=full_env,
        )
    server = Server(f"http://127.0.0.1:{port}", logdir, process, log_path)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"tensorboard exited:\n{server.log()}")
        try:
            with urllib.request.urlopen(server.base_url + "/data/plugins_listing", timeout=5):
                return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    process.kill()
    raise RuntimeError(f"tensorboard did not answer within 90 s:\n{server.log()}")


def stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("tb")
    running = start_tensorboard(make_logdir(tmp), tmp)
    yield running
    stop(running)


@pytest.fixture
def fresh_executors(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fresh local process pool and an empty per-file result cache before and after the
    test, and no Dask scheduler from the environment."""
    monkeypatch.delenv(executors.SCHEDULER_ENV, raising=False)
    executors.shutdown()
    host_pool.clear_cache()
    yield
    executors.shutdown()
    host_pool.clear_cache()
