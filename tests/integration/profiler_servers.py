"""Real TensorFlow training processes with profiler servers, for the capture tests.

`start_training_servers(n)` starts n processes of `tests/integration/tf_training.py server PORT`
at once (TensorFlow's import is the slow part) and waits until each prints READY.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.integration.conftest import free_port

HELPER = Path(__file__).resolve().parent / "tf_training.py"
READY_TIMEOUT_S = 120.0


@dataclass
class TrainingServer:
    port: int
    process: subprocess.Popen[str]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


def start_training_servers(
    count: int, max_seconds: float = 300.0, mode: str = "server",
) -> list[TrainingServer]:
    """`mode` "server" trains; "idle" only serves (its captures come back empty)."""
    servers: list[TrainingServer] = []
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    try:
        for _ in range(count):
            port = free_port()
            process = subprocess.Popen(
                [sys.executable, str(HELPER), mode, str(port), "--max-seconds",
                 str(max_seconds)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
            )
            servers.append(TrainingServer(port, process))
        deadline = time.monotonic() + READY_TIMEOUT_S
        for server in servers:
            _wait_ready(server.process, deadline)
    except BaseException:
        stop_training_servers(servers)
        raise
    return servers


def stop_training_servers(servers: list[TrainingServer]) -> None:
    for server in servers:
        if server.process.poll() is None:
            server.process.terminate()
    for server in servers:
        try:
            server.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=15)


def _wait_ready(process: subprocess.Popen[str], deadline: float) -> None:
    assert process.stdout is not None
    while (remaining := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([process.stdout], [], [], remaining)
        if not readable:
            break
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"training process exited early (rc={process.poll()})")
        if line.strip() == "READY":
            return
    raise TimeoutError(f"training process {process.args!r} was not ready in time")
