"""The event table copies the lines' starts once and the lines then hold views of that copy
(read-only): the profile and the table keep one copy of the starts, a later table of the same
lines copies nothing, and every reader sees the values the file holds."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.table import build_event_table
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import EventColumns
from tests.fixtures import session_dir
from tests.xspace_builder import XSpaceBuilder


def _starts_by_line(profile: object) -> list[list[int]]:
    return [line.events.start_ps.tolist() for plane in profile.planes  # type: ignore[attr-defined]
            for line in plane.lines]


def test_lines_share_the_tables_starts_and_a_second_table_copies_nothing() -> None:
    path = next(session_dir("keras_fit/train").glob("*.xplane.pb"))
    profile = decode_xspace(path.read_bytes())
    before = _starts_by_line(profile)
    table = build_event_table(profile)
    assert not table.start_ps.flags.writeable
    for k, (_, line) in enumerate(table.lines):
        lo, hi = int(table.line_bounds[k]), int(table.line_bounds[k + 1])
        assert np.shares_memory(line.events.start_ps, table.start_ps)
        assert line.events.start_ps.tolist() == table.start_ps[lo:hi].tolist()
    assert _starts_by_line(profile) == before
    again = build_event_table(profile)
    assert np.shares_memory(again.start_ps, table.start_ps)
    assert again.start_ps.tolist() == table.start_ps.tolist()
    assert again.end_ps.tolist() == table.end_ps.tolist()
    with pytest.raises(ValueError):
        table.start_ps[0] = 0


def test_a_table_of_some_planes_then_of_all_copies_again_and_agrees() -> None:
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    cpu.line("one", line_id=1, timestamp_ns=5).event("a:MatMul", 10, 20)
    gpu = b.gpu_plane(0)
    stream = gpu.line("Stream #1(Compute)", line_id=1, timestamp_ns=7)
    stream.kernel("k", offset_ps=3, duration_ps=4, correlation_id=1)
    profile = decode_xspace(b.serialize())
    before = _starts_by_line(profile)
    host_only = build_event_table(profile, lambda name: name == "/host:CPU")
    whole = build_event_table(profile)
    assert not np.shares_memory(whole.start_ps, host_only.start_ps)
    assert len(before) == 2 and whole.start_ps.tolist() == before[0] + before[1]
    assert _starts_by_line(profile) == before
    assert host_only.start_ps.tolist() == before[0]


def test_a_line_shares_only_an_equal_length_read_only_column() -> None:
    events = EventColumns(np.zeros(2, np.int32), np.array([1, 2], np.int64),
                          np.zeros(2, np.int64), None)
    with pytest.raises(ValueError):
        events.share_starts(np.array([1, 2], np.int64))  # writable
    short = np.array([1], np.int64)
    short.flags.writeable = False
    with pytest.raises(ValueError):
        events.share_starts(short)
