"""capture.py without a profiler server: addresses, options, the request, the tfevents marker."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

from tb_profile_plugin import capture
from tb_profile_plugin.errors import BadRequest
from tb_profile_plugin.xspace.pb import profiler_service_pb2


@pytest.mark.parametrize(("text", "expected"), [
    ("localhost:6009", ["localhost:6009"]),
    ("grpc://10.0.0.2:6009, GRPC://host-a.example.com:1", ["10.0.0.2:6009",
                                                          "host-a.example.com:1"]),
    ("[::1]:6009", ["[::1]:6009"]),
    (" a:1 ,, b:2 ", ["a:1", "b:2"]),
])
def test_addresses_are_host_port(text: str, expected: list[str]) -> None:
    assert capture.parse_addresses(text) == expected


@pytest.mark.parametrize("text", [
    "", " , ", "localhost", "localhost:", ":6009", "localhost:0", "localhost:65536",
    "http://localhost:6009", "a b:1", "host/x:1", "-host:1", "a:1,a:1", "::1:6009",
])
def test_malformed_addresses_are_bad_requests(text: str) -> None:
    with pytest.raises(BadRequest):
        capture.parse_addresses(text)


def test_host_files_are_named_as_tensorflow_names_them() -> None:
    assert capture.host_file_stem("127.0.0.1:6009") == "127.0.0.1_6009"


def test_options_from_route_parameters_and_their_limits() -> None:
    options = capture.CaptureOptions.from_params({
        "duration": "1500", "num_retry": "0", "host_tracer_level": "3",
        "device_tracer_level": "0", "python_tracer_level": "1", "delay": "250",
    })
    assert options == capture.CaptureOptions(1500, 0, 3, 0, 1, 250)
    assert options.deadline_s == pytest.approx((250 + 1500 + 20_000) / 1000)
    assert capture.CaptureOptions.from_params({}) == capture.CaptureOptions()
    for params in ({"duration": "0"}, {"duration": "x"}, {"python_tracer_level": "2"},
                   {"delay": "-1"}, {"num_retry": "11"}):
        with pytest.raises(BadRequest):
            capture.CaptureOptions.from_params(params)


def test_the_request_carries_every_option() -> None:
    options = capture.CaptureOptions(duration_ms=900, host_tracer_level=1,
                                     device_tracer_level=0, python_tracer_level=1, delay_ms=0)
    request = capture._profile_request("h:1", options, "/logs/plugins/profile", "S")
    wire = profiler_service_pb2.ProfileRequest.FromString(request.SerializeToString())  # type: ignore[attr-defined]
    assert (wire.duration_ms, wire.max_events, wire.host_name) == (900, 1_000_000, "h:1")
    assert wire.emit_xspace and wire.session_id == "S" and "xplane.pb" in wire.tools
    opts = wire.opts
    assert opts.version == 1 and opts.include_dataset_ops
    assert (opts.host_tracer_level, opts.device_tracer_level, opts.python_tracer_level) == (1, 0, 1)
    assert opts.duration_ms == 900 and opts.start_timestamp_ns == 0


def test_tfevents_marker_is_a_valid_events_file_written_once(tmp_path: Path) -> None:
    capture._write_tfevents_marker(str(tmp_path))
    capture._write_tfevents_marker(str(tmp_path))
    (marker,) = tmp_path.glob("events.out.tfevents.*")
    raw = marker.read_bytes()  # one TFRecord: length, its CRC, the Event, its CRC
    (length,) = struct.unpack("<Q", raw[:8])
    assert struct.unpack("<I", raw[8:12])[0] == masked_crc32c(raw[:8])
    data = raw[12:12 + length]
    assert struct.unpack("<I", raw[12 + length:])[0] == masked_crc32c(data)
    assert event_pb2.Event.FromString(data).file_version == "brain.Event:2"


def test_refused_capture_leaves_no_session_behind(tmp_path: Path) -> None:
    from tests.integration.conftest import free_port

    port = free_port()
    with pytest.raises(capture.CaptureFailed, match="refused the connection"):
        capture.capture(f"127.0.0.1:{port}", str(tmp_path), capture.CaptureOptions(num_retry=1))
    assert not any(tmp_path.iterdir())  # no session, no plugins/profile


def test_a_silent_server_fails_at_the_deadline(tmp_path: Path) -> None:
    import socket
    import time

    with socket.socket() as listener:  # accepts connections, never speaks gRPC
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        options = capture.CaptureOptions(duration_ms=100, num_retry=0, deadline_margin_ms=700)
        started = time.monotonic()
        with pytest.raises(capture.CaptureTimedOut, match="did not answer within 1 s") as info:
            capture.capture(f"127.0.0.1:{port}", str(tmp_path), options)
        assert time.monotonic() - started < 5
    assert info.value.http_status == 504
