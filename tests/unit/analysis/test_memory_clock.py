"""One clock (analysis/hosts/clock.py): the memory profile's time of an allocation is the trace
viewer's time of the same event, and its step is the overview's step number for that time.

Issue 29 item 3: on a TF 2.4 capture the memory peak stood at 2774.936 ms and the trace showed
the same allocation at 2646.489 ms (the memory view counted from the earliest line timestamp,
the trace from the earliest event); the demo two_hosts host said "step 170" where its steps
are 429-598 (a forest group id, not the overview's step number).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.hosts.clock import overview_step_at, time_zero_ps
from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.memory.peak import find_peak
from tb_profile_plugin.analysis.memory.snapshots import memory_snapshots
from tb_profile_plugin.tools import registry
from tb_profile_plugin.trace.details import brief
from tb_profile_plugin.trace.window import trace_set
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tests.fixtures import DATA_DIR
from tests.xspace_builder import XSpaceBuilder

DEMO = Path(__file__).resolve().parents[3] / "tb_profile_plugin" / "demo"
US = 1_000_000  # ps
MS = 1_000 * US


def _memory_doc(profile: Profile, **params: str) -> dict[str, Any]:
    request = registry.ViewRequest("run", "h", {"h": profile}, params)
    return registry.VIEWS["memory_profile"].build(request)


def _trace_brief_of_peak(profile: Profile, memory_id: str) -> dict[str, Any]:
    """The trace viewer's window fields (trace/details.py `brief`) of the allocator event at
    the memory peak, found by its line and row, not by its time."""
    allocator = memory_snapshots(profile).allocators[memory_id]
    row = int(allocator.file_order[find_peak(allocator).index])
    table = profile_forest(profile).table
    k = int(table.line_index[row])
    line, row_in_line = table.lines[k][1], row - int(table.line_bounds[k])
    trace = trace_set({"h": profile})
    host = trace.hosts[0]
    index = host.index
    (line_pos,) = [p for p, (_, ln) in enumerate(index.lines) if ln is line]
    derived_track = index.track_source_line[index.track_of(np.arange(len(index)))] < 0
    (event_id,) = np.flatnonzero((index.source_line == line_pos)
                                 & (index.source_row == row_in_line) & ~derived_track)
    return brief(host, int(event_id))


def _tf24_layout() -> bytes:
    """TF 2.4's layout: absolute line timestamps, the allocator's line (`tf_Compute/0`)
    starting 128.7 ms after the python line, another line whose timestamp is 200 ms before
    the python line's (its first event 305 ms later), and steps numbered from 429."""
    t0 = 1_600_000_000_000_000_000  # ns
    b = XSpaceBuilder(hostnames=["tf24"])
    host = b.plane("/host:CPU")
    py = host.line("python", line_id=1, timestamp_ns=t0)
    for k in range(4):
        py.event("train", (100 + 10 * k) * MS, 10 * MS, step_num=429 + k, _r=1)
        py.event("MatMul", (101 + 10 * k) * MS, 5 * MS)
    alloc = host.line("tf_Compute/0", line_id=2, timestamp_ns=t0 + 128_700_000)
    heap = 0
    for k, at_us in enumerate((500, 2_500, 4_500, 7_000)):  # 0.5 .. 7 ms after 128.7 ms
        heap += 1024 * (k + 1)
        alloc.event("MemoryAllocation", at_us * US, 0, allocator_name="GPU_0_bfc",
                    bytes_reserved=0, bytes_allocated=heap, bytes_available=1 << 20,
                    peak_bytes_in_use=heap, requested_bytes=1024 * (k + 1),
                    allocation_bytes=1024 * (k + 1), addr=0x1000 * (k + 1), tf_op=f"op{k}")
    early = host.line("tf_Compute/1", line_id=3, timestamp_ns=t0 - 200_000_000)
    early.event("Conv2D", 305 * MS, 1 * MS)
    return b.serialize()


def test_tf24_layout_memory_time_is_the_trace_time() -> None:
    profile = decode_xspace(_tf24_layout())
    doc = _memory_doc(profile)
    peak = doc["summary"]["peak"]
    # The earliest event is the first `train` at t0 + 100 ms (the earliest line starts at
    # t0 - 200 ms, its event at t0 + 105 ms); the peak allocation is at t0 + 128.7 + 7 ms.
    assert peak["time_ps"] == 35_700 * US
    assert peak["time_ms"] == pytest.approx(35.7)
    assert brief_time_ps(_trace_brief_of_peak(profile, "GPU_0_bfc")) == peak["time_ps"]
    # The steps are shown at [0, 10), [10, 20), [20, 30), [30, 40) ms: 35.7 ms is step 432.
    assert peak["step"] == 432
    assert doc["time_zero_ps"] == 300 * MS  # t0 + 100 ms, from the earliest line (t0 - 200)


def brief_time_ps(fields: dict[str, Any]) -> int:
    return round(fields["start_us"] * US)


@pytest.mark.parametrize("path", [
    DATA_DIR / "keras_fit/train/plugins/profile/2026_11_22_07_10_51/vm.xplane.pb",
    DATA_DIR / "jax_nvidia_train/plugins/profile/2026_11_26_10_28_30/vm.xplane.pb",
    DEMO / "two_hosts/plugins/profile/2026_11_22_07_11_11/127.0.0.1_60401.xplane.pb",
    DEMO / "two_hosts/plugins/profile/2026_11_22_07_11_11/127.0.0.1_60402.xplane.pb",
])
def test_committed_capture_memory_peak_is_at_the_trace_time(path: Path) -> None:
    profile = decode_xspace(path.read_bytes())
    for memory_id in memory_snapshots(profile).memory_ids:
        doc = _memory_doc(profile, memory_id=memory_id)
        peak = doc["summary"]["peak"]
        fields = _trace_brief_of_peak(profile, memory_id)
        assert brief_time_ps(fields) == peak["time_ps"], memory_id
        assert fields["start_us"] == peak["time_ps"] / US
        assert peak["time_ms"] == peak["time_ps"] / MS
    # The shown zero is the trace's zero for this host: its earliest event.
    assert time_zero_ps(profile) == trace_set({"h": profile}).hosts[0].index.first_ps


def test_demo_two_hosts_memory_peak_step_is_the_overviews() -> None:
    path = DEMO / "two_hosts/plugins/profile/2026_11_22_07_11_11/127.0.0.1_60401.xplane.pb"
    profile = decode_xspace(path.read_bytes())
    doc = _memory_doc(profile)
    peak = doc["summary"]["peak"]
    steps = analyze(profile).steps  # the overview's step table
    overview_nums = steps.step_num.tolist()
    assert min(overview_nums) >= 429 and max(overview_nums) <= 598  # the numbers
    shown_begin = steps.begin_ps - time_zero_ps(profile)
    holding = np.flatnonzero((shown_begin <= peak["time_ps"])
                             & (peak["time_ps"] < shown_begin + steps.duration_ps))
    assert len(holding) == 1
    assert peak["step"] == int(steps.step_num[holding[0]])
    assert peak["step"] in overview_nums and peak["step"] != peak["step_id"]
    # Every drawn snapshot inside a step names that step; the others none.
    drawn = np.array([round(p["time_ms"] * MS) for p in doc["timeline"]]) + time_zero_ps(profile)
    expected = overview_step_at(profile, drawn)
    assert [p["step"] for p in doc["timeline"]] == [s if s >= 0 else None
                                                     for s in expected.tolist()]
