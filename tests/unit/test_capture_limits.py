"""Capture's limits against a fake profiler server over real gRPC: who may ask (DNS rebinding),
how large a trace may be, and that a failed capture leaves nothing in the logdir."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin import capture, cli, fs
from tb_profile_plugin.plugin import ProfilePlugin
from tb_profile_plugin.xspace.pb import profiler_service_pb2
from tests.integration.conftest import free_port

MIB = 2**20


class FakeProfiler:
    """A ProfilerService whose Profile answers `xspace` (bytes) and counts its calls."""

    def __init__(self, xspace: bytes) -> None:
        self.xspace = xspace
        self.calls = 0
        handler = grpc.method_handlers_generic_handler("tensorflow.ProfilerService", {
            "Profile": grpc.unary_unary_rpc_method_handler(
                self._profile,
                request_deserializer=profiler_service_pb2.ProfileRequest.FromString,
                response_serializer=lambda m: m.SerializeToString()),
        })
        self.server = grpc.server(futures.ThreadPoolExecutor(2),
                                  options=[("grpc.max_send_message_length", -1)])
        self.server.add_generic_rpc_handlers((handler,))
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def _profile(self, request: Any, context: Any) -> Any:
        self.calls += 1
        return profiler_service_pb2.ProfileResponse(xspace=self.xspace)  # type: ignore[attr-defined]


@pytest.fixture
def profiler() -> Iterator[FakeProfiler]:
    from tests.xspace_builder import XSpaceBuilder

    b = XSpaceBuilder(hostnames=["trainer"])
    b.plane("/host:CPU").line("python", line_id=1).event("train", 0, 1000, step_num=1, _r=1)
    fake = FakeProfiler(b.serialize())
    yield fake
    fake.server.stop(None)


def _route(logdir: Path, headers: dict[str, str], listen_host: str | None = None,
           **params: str) -> tuple[int, dict[str, Any]]:
    flags = SimpleNamespace(host=listen_host, profile_capture="on")
    plugin = ProfilePlugin(base_plugin.TBContext(logdir=str(logdir), flags=flags))
    app = plugin.get_plugin_apps()["/capture_profile"]
    query = urllib.parse.urlencode({"duration": "100", "num_retry": "0", **params})
    response = Client(app).get("/?" + query, headers=headers)  # type: ignore[arg-type]
    return response.status_code, json.loads(response.get_data())


# --- DNS rebinding -------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [
    {"Host": "rebind.evil.example:6006", "Origin": "http://rebind.evil.example:6006",
     "Sec-Fetch-Site": "same-origin"},
    {"Host": "rebind.evil.example:6006"},  # a same-origin GET carries no Origin
    {"Host": "rebind.evil.example"},
    {"Host": "localhost.evil.example:6006"},
    {"Host": "127.0.0.1.evil.example"},
    {"Host": "evil.example:6006@localhost"},
    {"Host": "localhost:6006 evil"},
    {"Host": "[::1"},
], ids=lambda h: h["Host"])
def test_rebinding_hosts_are_refused_before_dialling(
    headers: dict[str, str], tmp_path: Path, profiler: FakeProfiler
) -> None:
    status, answer = _route(tmp_path, headers, service_addr=profiler.address)
    assert status == 403, answer
    assert "neither the address it listens on nor a localhost name" in answer["error"]
    assert profiler.calls == 0 and not any(tmp_path.iterdir())


@pytest.mark.parametrize("host", [
    "localhost:6006", "LOCALHOST", "localhost.:6006", "127.0.0.1:6006", "[::1]:6006",
    "tb.localhost:6006", "10.1.2.3:6006", socket.gethostname(), "tb.internal.example:6006",
    "proxy.example",
])
def test_this_tensorboards_own_names_may_capture(
    host: str, tmp_path: Path, profiler: FakeProfiler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(capture.ALLOWED_HOSTS_ENV, "other.example, proxy.example")
    status, answer = _route(tmp_path, {"Host": host}, listen_host="tb.internal.example",
                            service_addr=profiler.address)
    assert status == 200, answer
    assert profiler.calls == 1 and answer["hosts"] == [capture.host_file_stem(profiler.address)]


def test_the_listen_address_counts_only_when_tensorboard_listens_on_it(tmp_path: Path) -> None:
    assert not capture.request_host_allowed("tb.internal.example:6006", None)
    assert capture.request_host_allowed("tb.internal.example:6006", "tb.internal.example")
    assert not capture.request_host_allowed("rebind.evil.example", "tb.internal.example")
    assert capture.request_host_allowed("", None)  # no Host header: not a browser


def test_star_allows_every_host(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not capture.request_host_allowed("rebind.evil.example")
    monkeypatch.setenv(capture.ALLOWED_HOSTS_ENV, "*")
    assert capture.request_host_allowed("rebind.evil.example")


# --- size limit ----------------------------------------------------------------------------


def test_a_trace_over_the_limit_is_refused_naming_it(
    tmp_path: Path, profiler: FakeProfiler, monkeypatch: pytest.MonkeyPatch
) -> None:
    profiler.xspace = b"\0" * (3 * MIB)
    logdir = tmp_path / "logs"
    options = capture.CaptureOptions(duration_ms=100, num_retry=0, max_xspace_bytes=MIB)
    with pytest.raises(capture.CaptureFailed) as info:
        capture.capture(profiler.address, str(logdir), options, run="exp")
    message = str(info.value)
    assert "larger than the capture limit of 1.0 MiB (3.0 MiB)" in message
    assert capture.MAX_XSPACE_BYTES_ENV in message and "--max-bytes" in message
    assert not logdir.exists()
    # The environment variable sets it for the route and the CLI alike.
    monkeypatch.setenv(capture.MAX_XSPACE_BYTES_ENV, str(2 * MIB))
    logdir.mkdir()
    status, answer = _route(logdir, {"Host": "localhost:6006"}, service_addr=profiler.address)
    assert status == 502 and "capture limit of 2.0 MiB" in answer["error"], answer
    assert not any(logdir.iterdir())
    monkeypatch.setenv(capture.MAX_XSPACE_BYTES_ENV, "lots")
    with pytest.raises(capture.BadRequest, match=capture.MAX_XSPACE_BYTES_ENV):
        capture.capture(profiler.address, str(logdir), capture.CaptureOptions())
    monkeypatch.setenv(capture.MAX_XSPACE_BYTES_ENV, str(3 * MIB))  # exactly the answer: fits
    result = capture.capture(profiler.address, str(logdir), capture.CaptureOptions(num_retry=0))
    saved = Path(result.directory) / f"{result.hosts[0]}.xplane.pb"
    assert saved.stat().st_size == 3 * MIB


def test_cli_limit_option(tmp_path: Path, profiler: FakeProfiler,
                          capsys: pytest.CaptureFixture[str]) -> None:
    profiler.xspace = b"\0" * (2 * MIB)
    logdir = tmp_path / "logs"
    code = cli.main(["capture", profiler.address, "--logdir", str(logdir), "--num-retry", "0",
                     "--max-bytes", str(MIB)])
    assert code == 5 and "capture limit of 1.0 MiB (2.0 MiB)" in capsys.readouterr().err
    assert not logdir.exists()


_CLIENT = r"""
import resource, sys
from tb_profile_plugin import capture
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    capture.capture(sys.argv[1], sys.argv[2], capture.CaptureOptions(
        duration_ms=100, num_retry=0, max_xspace_bytes=2**20))
except capture.CaptureFailed as exc:
    print(str(exc).split(";")[0])
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_an_oversized_answer_is_refused_before_it_is_buffered(
    tmp_path: Path, profiler: FakeProfiler
) -> None:
    profiler.xspace = b"\0" * (96 * MIB)
    result = subprocess.run([sys.executable, "-c", _CLIENT, profiler.address, str(tmp_path)],
                            capture_output=True, text=True, timeout=120,
                            cwd=Path(__file__).parents[2])
    first, growth_mib = result.stdout.splitlines()
    assert "larger than the capture limit of 1.0 MiB (96.0 MiB)" in first, result.stderr
    assert int(growth_mib) < 24  # the 96 MiB answer never reached the client's memory
    assert not any(tmp_path.iterdir())


# --- nothing left behind ---------------------------------------------------------------------


def test_failed_captures_leave_no_directories(tmp_path: Path) -> None:
    closed = f"127.0.0.1:{free_port()}"
    options = capture.CaptureOptions(duration_ms=100, num_retry=0)
    with pytest.raises(capture.CaptureFailed):
        capture.capture(closed, str(tmp_path), options, run="team/exp1")
    assert not any(tmp_path.iterdir())
    missing = tmp_path / "new_logdir"
    with pytest.raises(capture.CaptureFailed):
        capture.capture(closed, str(missing), options)
    assert not missing.exists()
    existing = tmp_path / "kept" / "plugins" / "profile" / "2020_01_01_00_00_00"
    existing.mkdir(parents=True)
    with pytest.raises(capture.CaptureFailed):
        capture.capture(closed, str(tmp_path / "kept"), options)
    assert [p.name for p in existing.parent.iterdir()] == [existing.name]  # others' stays


def test_a_trace_that_cannot_be_written_leaves_nothing(
    tmp_path: Path, profiler: FakeProfiler, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = fs.write_bytes

    def disk_full(path: str, data: bytes) -> None:
        real_write(path, data[: len(data) // 2])  # a part made it to disk
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(capture.fs, "write_bytes", disk_full)
    with pytest.raises(capture.CaptureFailed, match="could not be saved.*No space left"):
        capture.capture(profiler.address, str(tmp_path), capture.CaptureOptions(num_retry=0),
                        run="exp")
    assert not any(tmp_path.iterdir())
