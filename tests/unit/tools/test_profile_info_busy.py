"""profile_info's busy time per line is the union of its events (issue 29 item 6).

Summing durations counted nested events twice: a step and the ops inside it, a function and
its callees (660.6 ms busy in a 245.7 ms span on a 2.3M-event capture). Busy is the time
covered by at least one event, so it never exceeds the line's span. Checked on a literal
layout with an exact number, and on every committed capture against a plain Python merge of
the events read with protobuf (every committed capture has a line whose durations sum to
more than its span: its `python` thread, 1.5 to 9.8 times).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tb_profile_plugin.tools.profile_info import host_info
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.fixtures import DATA_DIR, build_view, xplane_files
from tests.xspace_builder import XSpaceBuilder

US = 1_000_000  # ps


def test_nested_and_overlapping_events_count_once() -> None:
    """    step      [0, 100)
             op a      [10, 40)     inside the step
               op a.1  [20, 30)     inside op a
             op b      [50, 120)    leaves the step
           late        [200, 210)   after a gap of 80
    Busy: [0, 120) and [200, 210) = 130 µs; the durations summed to 220 µs."""
    b = XSpaceBuilder(hostnames=["vm"])
    line = b.plane("/host:CPU").line("python", line_id=1)
    for name, start, length in (("step", 0, 100), ("a", 10, 30), ("a.1", 20, 10),
                                ("b", 50, 70), ("late", 200, 10)):
        line.event(name, offset_ps=start * US, duration_ps=length * US)
    [row] = [r for r in host_info(decode_xspace(b.serialize())).summary["lines"]
             if r["line"] == "python"]
    assert row["busy_ms"] == pytest.approx(0.130)
    assert row["end_ms"] - row["begin_ms"] == pytest.approx(0.210)


def _union_ps(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: p.relative_to(DATA_DIR).parts[0])
def test_busy_is_the_union_and_within_the_span(path: Path) -> None:
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    expected = {}
    for plane in space.planes:
        for line in plane.lines:
            expected[(plane.name, line.id)] = _union_ps(
                [(e.offset_ps, e.offset_ps + e.duration_ps) for e in line.events])
    doc = build_view("profile_info", path)
    [host] = doc["hosts"]
    for row in host["lines"]:
        assert row["busy_ms"] * 1e9 == pytest.approx(expected[(row["plane"], row["line_id"])],
                                                     abs=0.5), row["line"]
        assert row["busy_ms"] <= row["end_ms"] - row["begin_ms"] + 1e-9, row["line"]
    assert host["lines"]
