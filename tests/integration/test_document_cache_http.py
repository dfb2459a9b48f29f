"""Issue 30 against a real TensorBoard on 127.0.0.1: requests carrying large parameters do not
grow the server (item 2); a host file rewritten with the same size and its mtime restored is
served anew, also after a restart, and a host whose permissions are fixed is read again
without a restart (item 7)."""

from __future__ import annotations

import json
import os
import random
import urllib.parse
from pathlib import Path

import pytest

from tests.integration.conftest import Server, start_tensorboard, stop
from tests.pod_runs import SAME_SIZE_VERSIONS, host_xspace, one_host_logdir

OLD, NEW = (host_xspace(plan) for plan in SAME_SIZE_VERSIONS)
RUN = "run/s"




def _rss_bytes(server: Server) -> int:
    with open(f"/proc/{server.process.pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def _overview(server: Server, **extra: str) -> tuple[int, bytes]:
    query = urllib.parse.urlencode({"run": RUN, "tag": "overview_page", "host": "worker",
                                    **extra})
    status, _, body = server.get(f"/data?{query}")
    return status, body


def _steps(body: bytes) -> str:
    return json.dumps(json.loads(body).get("steps"), sort_keys=True)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
def test_large_parameters_do_not_grow_the_server(tmp_path: Path) -> None:
    logdir, _ = one_host_logdir(tmp_path)
    server = start_tensorboard(logdir, tmp_path)
    try:
        assert _overview(server)[0] == 200
        rng = random.Random(0)
        # Warm: allocator pools, and urllib's urlsplit cache (128 URLs of ~53 KB, ~14 MB;
        # werkzeug splits each request's URL): it is full before the measure starts.
        for _ in range(160):
            assert _overview(server, junk=rng.randbytes(26_500).hex())[0] == 200
        before = _rss_bytes(server)
        requests = 400
        for index in range(requests):
            status, _ = _overview(server, junk=rng.randbytes(26_500).hex(), n=str(index))
            assert status == 200
        grown = _rss_bytes(server) - before
        # Each request's key used to be kept uncounted (~1.2 MB each: 480 MB here).
        assert grown < 32 * 2**20, f"RSS grew {grown / 2**20:.1f} MB over {requests} requests"
    finally:
        stop(server)


def test_a_same_size_rewrite_is_served_now_and_after_a_restart(tmp_path: Path) -> None:
    logdir, path = one_host_logdir(tmp_path)
    server = start_tensorboard(logdir, tmp_path)
    try:
        status, old = _overview(server)
        assert status == 200 and _overview(server)[1] == old  # kept
        before = path.stat()
        path.write_bytes(NEW)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size,
                                                                  before.st_mtime_ns)
        status, new = _overview(server)
        assert status == 200 and _steps(new) != _steps(old)
    finally:
        stop(server)
    restarted = start_tensorboard(logdir, tmp_path)  # the same disk cache directory
    try:
        status, again = _overview(restarted)
        assert status == 200 and _steps(again) == _steps(new)
    finally:
        stop(restarted)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000 (the unit test "
                    "tests/unit/test_file_identity.py covers it)")
def test_a_host_is_readable_again_once_its_permissions_are_fixed(tmp_path: Path) -> None:
    logdir, path = one_host_logdir(tmp_path)
    os.chmod(path, 0)
    server = start_tensorboard(logdir, tmp_path)
    try:
        assert _overview(server)[0] != 200
        os.chmod(path, 0o644)
        assert _overview(server)[0] == 200
    finally:
        stop(server)
