"""A sustained cycle holds its memory (issue 30, item 4): a real TensorBoard on 127.0.0.1 with
a 20 MB memory bound and no disk cache answers the trace viewer and the overview of three runs,
round after round (two committed captures and one made longer in time from a third, so every
round decodes and analyses again what the bound evicted). Its RSS (/proc/PID/status VmRSS)
stays within its idle RSS before the first request plus the bound plus the largest single
request's working set (its RSS rise, in the first, cold round) plus 150 MB, and does not trend
upward (the last rounds' highest no more than the first rounds' highest + a margin).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile_corpus import _mutate, base_bytes, played_again
from tests.integration.conftest import Server, bad_session, start_tensorboard, stop

pytestmark = pytest.mark.soak

ROUNDS = 150
WINDOW = 30  # rounds compared at the start and at the end
BOUND_BYTES = 20_000_000
SLACK_BYTES = 150 << 20
TREND_MARGIN_BYTES = 40 << 20
COPIES = 300  # custom_loop's threads played 300 times in a row: ~430k events
RUNS = {"small_a": "jax_nvidia_device_bound", "small_b": "tfdata_map_parallel"}
VIEWS = ("trace_viewer", "overview_page")


def _status_bytes(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field}")


def _rss_bytes(pid: int) -> int:
    return _status_bytes(pid, "VmRSS")


def _reset_peak(pid: int) -> bool:
    """Resets the process's peak RSS (VmHWM) to its RSS now; False where Linux cannot."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("soak") / "logdir"
    for run, capture in RUNS.items():
        bad_session(root, run, {"h.xplane.pb": base_bytes(capture)})
    bad_session(root, "longer", {"h.xplane.pb": _mutate("custom_loop", played_again(COPIES))
                                 .SerializeToString()})
    running = start_tensorboard(root, tmp_path_factory.mktemp("tb_soak"), env={
        "TB_PROFILE_MEMORY_CACHE_BYTES": str(BOUND_BYTES), "TB_PROFILE_CACHE_DIR": "off"})
    yield running
    stop(running)


def _round(server: Server) -> tuple[int, int]:
    """One round of the cycle; (RSS after it, the largest working set of one request in it:
    its peak RSS (VmHWM, reset before it) above its RSS before it)."""
    pid = server.process.pid
    largest = 0
    for run in ("longer", *RUNS):
        for view in VIEWS:
            peak_reset = _reset_peak(pid)
            before = _rss_bytes(pid)
            status, _, body = server.get(f"/data?run={run}/2020_01_01_00_00_00&tag={view}"
                                         "&host=h")
            assert status == 200, (run, view, body[:300])
            after = _status_bytes(pid, "VmHWM") if peak_reset else _rss_bytes(pid)
            largest = max(largest, after - before)
    return _rss_bytes(pid), largest


def test_memory_holds_over_150_rounds(server: Server) -> None:
    started = time.monotonic()
    idle = _rss_bytes(server.process.pid)
    first_rss, working_set = _round(server)  # the first round: every request cold
    rss = [first_rss]
    for _ in range(ROUNDS - 1):
        after, _ = _round(server)
        rss.append(after)
    took_s = time.monotonic() - started
    limit = idle + BOUND_BYTES + working_set + SLACK_BYTES
    print(f"\nsoak: {ROUNDS} rounds in {took_s:.0f} s; RSS MB idle {idle / 2**20:.0f}, "
          f"working set {working_set / 2**20:.0f}, limit {limit / 2**20:.0f}; "
          f"first {rss[0] / 2**20:.0f}, "
          f"max {max(rss) / 2**20:.0f}, last {rss[-1] / 2**20:.0f}; first {WINDOW} max "
          f"{max(rss[:WINDOW]) / 2**20:.0f}, last {WINDOW} max {max(rss[-WINDOW:]) / 2**20:.0f}")
    assert max(rss) <= limit, [round(r / 2**20) for r in rss]
    assert max(rss[-WINDOW:]) <= max(rss[:WINDOW]) + TREND_MARGIN_BYTES, \
        [round(r / 2**20) for r in rss]
    assert "Traceback" not in server.log()
