"""Capture Profile end to end: real TensorFlow training processes with profiler servers, a real
TensorBoard process (the capture_profile route) and the installed `tb-profile` console script.

Two training processes (tests/integration/tf_training.py) serve for the whole module; each
test captures a short window of them. Keras 3 `model.fit` with the TensorBoard callback runs
as its own process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.integration.conftest import (
    Server,
    free_port,
    start_tensorboard,
    stop,
)
from tests.integration.profiler_servers import (
    HELPER,
    TrainingServer,
    start_training_servers,
    stop_training_servers,
)

pytestmark = pytest.mark.tensorflow
ROOT = Path(__file__).resolve().parents[2]
DURATION_MS = 1500


@pytest.fixture(scope="module")
def trainers() -> Iterator[list[TrainingServer]]:
    servers = start_training_servers(2)
    yield servers
    stop_training_servers(servers)


@pytest.fixture(scope="module")
def idle_server() -> Iterator[TrainingServer]:
    servers = start_training_servers(1, mode="idle")
    yield servers[0]
    stop_training_servers(servers)


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("capture_tb")
    logdir = tmp / "logdir"
    logdir.mkdir()
    running = start_tensorboard(logdir, tmp, ["--reload_interval", "1"])
    yield running
    stop(running)


def xplane_event_names(path: Path) -> list[str]:
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    return [meta.name for plane in space.planes for meta in plane.event_metadata.values()]


def overview_steps(server: Server, run: str, host: str) -> list[dict]:
    steps: list[dict] = server.get_json("data", run=run, tag="overview_page", host=host)["steps"]
    return steps


def tensorboard_runs(server: Server) -> list[str]:
    """TensorBoard's own run list (from tfevents files), not the plugin's."""
    with urllib.request.urlopen(server.base_url + "/data/runs", timeout=30) as response:
        return json.loads(response.read())


def session_dir(logdir: Path, run: str) -> Path:
    *tb_run, session = run.split("/")
    return logdir.joinpath(*tb_run, "plugins", "profile", session)


# --- the route ---------------------------------------------------------------------------


def test_route_captures_a_training_process(board: Server, trainers: list[TrainingServer]) -> None:
    trainer = trainers[0]
    status, answer, seconds = board.post_json(
        "capture_profile",
        service_addr=f"grpc://{trainer.address}", duration=str(DURATION_MS),
        num_retry="1", host_tracer_level="2", device_tracer_level="1",
        python_tracer_level="0", delay="0",
    )
    assert status == 200, answer
    run = answer["run"]
    host = f"127.0.0.1_{trainer.port}"
    assert answer["hosts"] == [host]
    assert run in answer["result"] and seconds >= DURATION_MS / 1000
    assert run in board.get_json("runs")
    assert board.get_json("hosts", run=run, tag="overview_page") == [host]
    xplane = session_dir(board.logdir, run) / f"{host}.xplane.pb"
    assert "train" in xplane_event_names(xplane)  # the step markers of the training loop
    steps = overview_steps(board, run, host)
    assert len(steps) >= 10, steps  # ~1.5 s of ~10 ms steps
    assert all(step["step_time_ms"] > 0 for step in steps)
    # The tfevents marker makes TensorBoard itself list the logdir as a run.
    assert list(board.logdir.glob("events.out.tfevents.*"))
    deadline = time.monotonic() + 30
    while "." not in (tb_runs := tensorboard_runs(board)):
        assert time.monotonic() < deadline, tb_runs
        time.sleep(0.5)


def test_route_captures_two_servers_into_one_run(
    board: Server, trainers: list[TrainingServer],
) -> None:
    addresses = f"{trainers[0].address}, grpc://{trainers[1].address}"
    status, answer, _ = board.post_json("capture_profile", service_addr=addresses, duration="1000")
    assert status == 200, answer
    hosts = sorted(f"127.0.0.1_{t.port}" for t in trainers)
    assert sorted(answer["hosts"]) == hosts
    run = answer["run"]
    assert board.get_json("hosts", run=run, tag="overview_page") == ["ALL_HOSTS", *hosts]
    files = sorted(p.name for p in session_dir(board.logdir, run).iterdir())
    assert files == [f"{h}.xplane.pb" for h in hosts]
    for host in hosts:
        assert overview_steps(board, run, host)


def test_route_errors_are_clear_and_fast(board: Server) -> None:
    closed = free_port()
    status, answer, seconds = board.post_json(
        "capture_profile",
        service_addr=f"127.0.0.1:{closed}", duration="1000", num_retry="2",
    )
    assert status == 502 and seconds < 10, (status, answer, seconds)
    assert f"127.0.0.1:{closed} refused the connection" in answer["error"]
    assert f"server.start({closed})" in answer["error"]
    for bad in ("127.0.0.1", "localhost:99999", "http://localhost:6009", "a b:1", ""):
        status, answer, seconds = board.post_json("capture_profile", service_addr=bad)
        assert status == 400 and seconds < 5, (bad, status, answer)
        assert "host:port" in answer["error"] or "missing" in answer["error"], answer
    status, answer, _ = board.post_json(
        "capture_profile", service_addr="localhost:6009", duration="soon")
    assert status == 400 and "duration" in answer["error"]
    status, answer, _ = board.post_json(
        "capture_profile", service_addr="localhost:6009", host_tracer_level="7")
    assert status == 400 and "host_tracer_level" in answer["error"]
    # The server keeps serving, and a failed capture leaves no run behind.
    assert all("_" in run for run in board.get_json("runs"))
    assert board.process.poll() is None


def test_route_refuses_captures_sent_by_other_sites(board: Server) -> None:
    """A page on another site must not make TensorBoard connect anywhere; scripts (no
    browser headers) and this TensorBoard's own page may."""
    route = "/capture_profile?service_addr=127.0.0.1"  # malformed: 400 once let through
    host = board.base_url.split("://", 1)[1]
    refused = [
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # another port of localhost is the same site
        {"Origin": "http://attacker.example"},
        {"Origin": "null"},
    ]
    for headers in refused:
        status, _, body = board.get(route, headers=headers)
        assert status == 403, (headers, status)
        assert "another site" in json.loads(body)["error"]
    port = host.rsplit(":", 1)[1]
    rebinding = [  # a page on a name made to resolve to 127.0.0.1 is same-origin for browsers
        {"Host": f"rebind.evil.example:{port}", "Origin": f"http://rebind.evil.example:{port}"},
        {"Host": f"rebind.evil.example:{port}", "Sec-Fetch-Site": "same-origin"},
    ]
    for headers in rebinding:
        status, _, body = board.get(route, headers=headers)
        assert status == 403, (headers, status)
        assert "nor a localhost name" in json.loads(body)["error"]
    allowed = [{}, {"Sec-Fetch-Site": "same-origin", "Origin": f"http://{host}"},
               {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}]
    for headers in allowed:
        status, _, body = board.get(route, headers=headers)
        assert status == 400 and "host:port" in json.loads(body)["error"], (headers, body)
    assert board.process.poll() is None


def test_empty_traces_are_retried_then_reported(board: Server, idle_server: TrainingServer) -> None:
    status, answer, seconds = board.post_json(
        "capture_profile",
        service_addr=idle_server.address, duration="300", num_retry="2",
    )
    assert status == 502, answer
    assert f"{idle_server.address} returned an empty trace" in answer["error"]
    assert "(3 attempts)" in answer["error"] and seconds >= 0.9


def test_capture_can_be_switched_off(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    server = start_tensorboard(logdir, tmp_path, ["--profile_capture", "off"])
    try:
        status, _, body = server.get("/capture_profile?service_addr=127.0.0.1:6009")
        assert status == 403
        assert "--profile_capture=off" in json.loads(body)["error"]
        assert not any(logdir.iterdir())
    finally:
        stop(server)


# --- the command line --------------------------------------------------------------------


def tb_profile(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed `tb-profile` console script, importing this checkout."""
    script = shutil.which("tb-profile") or str(Path(sys.executable).parent / "tb-profile")
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([script, *args], capture_output=True, text=True, env=env, timeout=120)


def test_cli_captures_steps_and_python_functions(
    tmp_path: Path, trainers: list[TrainingServer],
) -> None:
    trainer = trainers[1]
    logdir = tmp_path / "logdir"
    plain = tb_profile("capture", f"grpc://{trainer.address}", "--logdir", str(logdir),
                       "--duration-ms", "1000", "--run", "plain", "--json")
    assert plain.returncode == 0, plain.stderr
    answer = json.loads(plain.stdout)
    assert answer["run"].startswith("plain/")
    overview = tb_profile("view", str(logdir / "plain"), "overview_page", "--json")
    assert overview.returncode == 0, overview.stderr
    assert len(json.loads(overview.stdout)["steps"]) >= 5

    traced = tb_profile("capture", trainer.address, "--logdir", str(logdir), "--run", "python",
                        "--duration-ms", "800", "--python-tracer")
    assert traced.returncode == 0, traced.stderr
    assert "Captured 800 ms from 1 host" in traced.stdout
    (xplane,) = (logdir / "python").glob("plugins/profile/*/*.xplane.pb")
    names = xplane_event_names(xplane)
    python_events = [n for n in names if n.startswith("$")]
    assert python_events and any("python_side_work" in n for n in python_events)
    # The Python tracer's `$trace.py __init__` opens before each step's TraceMe and closes
    # inside it; the steps must still be found (the reference finds them too).
    traced_overview = tb_profile("view", str(logdir / "python"), "overview_page", "--json")
    assert traced_overview.returncode == 0, traced_overview.stderr
    assert len(json.loads(traced_overview.stdout)["steps"]) >= 5
    # Without the flag the same server records no Python function at all.
    assert not any(n.startswith("$") for n in xplane_event_names(
        next((logdir / "plain").glob("plugins/profile/*/*.xplane.pb"))))


def test_cli_failures_exit_nonzero_with_one_sentence(tmp_path: Path) -> None:
    closed = free_port()
    refused = tb_profile("capture", f"127.0.0.1:{closed}", "--logdir", str(tmp_path))
    assert refused.returncode == 5
    assert f"127.0.0.1:{closed} refused the connection" in refused.stderr
    malformed = tb_profile("capture", "localhost", "--logdir", str(tmp_path))
    assert malformed.returncode == 2 and "is not host:port" in malformed.stderr
    assert not list(tmp_path.rglob("*.xplane.pb"))


# --- Keras -------------------------------------------------------------------------------


def test_keras_callback_profile_is_listed_with_steps(board: Server) -> None:
    logdir = board.logdir / "keras"
    subprocess.run(
        [sys.executable, str(HELPER), "keras", str(logdir)], check=True, timeout=180,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES=""),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    runs = [r for r in board.get_json("runs") if r.startswith("keras/")]
    assert len(runs) == 1 and runs[0].startswith("keras/train/"), runs
    (host,) = board.get_json("hosts", run=runs[0], tag="overview_page")
    steps = overview_steps(board, runs[0], host)
    # profile_batch=(2, 6) traces batches 2..6: five executions of Keras's step function,
    # which the overview infers as the steps (Keras 3 records no step markers).
    assert len(steps) == 5, steps
    assert all(step["step_time_ms"] > 0 for step in steps)
