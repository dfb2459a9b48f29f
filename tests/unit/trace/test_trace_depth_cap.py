"""A track nested deeper than the trace viewer shows (trace/index.py MAX_TRACK_DEPTH) is a
422 with a sentence naming its thread, before the per-level structures are built: identical
zero-length events nested in one another (the layout of a TensorFlow host thread,
tests/xspace_builder.py), at the cap and one level over it."""

from __future__ import annotations

import time

import pytest

from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.trace import index as trace_index
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import XSpaceBuilder


def _zero_length_stack(levels: int) -> bytes:
    builder = XSpaceBuilder(hostnames=["worker0"])
    line = builder.plane("/host:CPU").line("tf_Compute", line_id=7, timestamp_ns=1_000)
    line.event("train", offset_ps=0, duration_ps=10_000_000, step_num=1)
    for _ in range(levels):  # each inside the previous: same start, same (zero) end
        line.event("MatMul", offset_ps=5_000, duration_ps=0)
    return builder.serialize()


def test_a_stack_at_the_cap_is_indexed() -> None:
    index = trace_index.build_index(decode_xspace(_zero_length_stack(
        trace_index.MAX_TRACK_DEPTH)))
    assert int(index.segment_depth.max()) == trace_index.MAX_TRACK_DEPTH
    assert len(index) == trace_index.MAX_TRACK_DEPTH + 1


def test_a_stack_over_the_cap_is_a_422_naming_the_thread() -> None:
    profile = decode_xspace(_zero_length_stack(trace_index.MAX_TRACK_DEPTH + 1))
    started = time.monotonic()
    cap = trace_index.MAX_TRACK_DEPTH
    with pytest.raises(UnreadableProfile, match=rf"thread 'tf_Compute' of '/host:CPU' nests its "
                       rf"events {cap + 1:,} levels deep; the trace viewer shows at most {cap:,}"):
        trace_index.build_index(profile)
    assert time.monotonic() - started < 5.0


def test_the_whole_profile_window_filters_a_deep_zero_length_stack() -> None:
    """At the cap, `MAX_TRACK_DEPTH` + 1 events in one column of one thread: the default window
    (1600 px over the whole profile) returns the first `MAX_FILTERED_DEPTH` levels below the
    step and the step itself, and counts the rest in filtered_events; resolution 0 returns
    every one."""
    from tb_profile_plugin.trace import window

    index = trace_index.build_index(decode_xspace(_zero_length_stack(
        trace_index.MAX_TRACK_DEPTH)))
    a_ps, b_ps = index.first_ps, index.last_ps
    visible = window.visible_events(index, a_ps, b_ps, 1600)
    depths = index.depth_of(visible.ids)
    assert len(visible.ids) == window.MAX_FILTERED_DEPTH + 1, len(visible.ids)
    assert int(depths.max()) == window.MAX_FILTERED_DEPTH
    assert visible.num_filtered == len(index) - len(visible.ids)
    everything = window.visible_events(index, a_ps, b_ps, 0)
    assert len(everything.ids) == len(index) and everything.num_filtered == 0
