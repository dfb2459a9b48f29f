"""Density blocks of trace windows (trace/window.py): runs of sub-pixel events with counts."""

from __future__ import annotations

import json

import numpy as np

from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
from tb_profile_plugin.trace.index import build_index
from tb_profile_plugin.trace.window import density_blocks, visible_events
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tests.xspace_builder import XSpaceBuilder


def dense_profile() -> Profile:
    """python: 'wide' [0, 50_000); 30 'tiny' events of 100 ps every 1_000 ps from 100_000;
    then 'lone' at 500_000 (+100) and 'wide2' [600_000, 700_000). Times in ps."""
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    py.event("wide", 0, 50_000)
    for k in range(30):
        py.event(f"tiny{k % 3}", 100_000 + k * 1_000, 100)
    py.event("lone", 500_000, 100)
    py.event("wide2", 600_000, 100_000)
    return decode_xspace(b.serialize())


def test_a_run_of_sub_pixel_events_is_one_block_with_its_count() -> None:
    index = build_index(dense_profile())
    # pixel 700_000 / 70 = 10_000 ps: the 30 tiny events (gaps of 900 ps) are one run of 30;
    # 'lone' is alone (no block), the wide events are at least a pixel.
    got = visible_events(index, 0, 700_000, 70, unfiltered_max_events=0)
    blocks = got.blocks
    assert len(blocks) == 1
    assert int(blocks.count[0]) == 30
    assert int(blocks.start_ps[0]) == 100_000 and int(blocks.end_ps[0]) == 129_100
    assert index.names[int(index.name_id[int(blocks.first_id[0])])] == "tiny0"
    # 3 of the 30 are kept (first of their columns), 27 filtered: the block counts them all.
    assert got.num_filtered == 27


def test_no_blocks_when_nothing_is_filtered() -> None:
    index = build_index(dense_profile())
    assert len(visible_events(index, 0, 700_000, 70).blocks) == 0  # a small window: complete
    assert len(visible_events(index, 0, 700_000, 0, unfiltered_max_events=0).blocks) == 0


def test_a_gap_wider_than_a_pixel_or_a_wide_event_splits_runs() -> None:
    ids = np.arange(7, dtype=np.int64)
    segment = np.array([0, 0, 0, 0, 0, 1, 1], np.int64)
    start = np.array([0, 5, 30, 35, 40, 41, 42], np.int64)
    end = np.array([2, 7, 32, 60, 42, 43, 44], np.int64)
    # pixel 10: [0, 5] joined (gap 3); 30 starts 23 after 7: new run [30] alone, then 35 is
    # wide (25 >= 10) and ends it; [40] alone in segment 0; [41, 42] in segment 1.
    blocks = density_blocks(ids, segment, start, end, 10.0)
    assert blocks.count.tolist() == [2, 2]
    assert blocks.start_ps.tolist() == [0, 41] and blocks.end_ps.tolist() == [7, 44]
    assert blocks.segment.tolist() == [0, 1] and blocks.first_id.tolist() == [0, 5]


def test_document_carries_the_blocks_in_row_order(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tb_profile_plugin.trace import window

    monkeypatch.setattr(window, "UNFILTERED_MAX_EVENTS", 0)
    doc = json.loads(json_text(registry.VIEWS["trace_viewer"].build(registry.ViewRequest(
        "r", "h", {"h": dense_profile()},
        {"start_time_ms": "0", "end_time_ms": "0.0007", "resolution": "70"}))))
    density = doc["density"]
    assert density["count"] == [30]
    assert density["start_us"] == [0.1] and density["end_us"] == [0.1291]
    assert density["depth"] == [0]
    assert doc["strings"][density["name"][0]] == "tiny0"
    assert density["pid"] == doc["events"]["pid"][:1] and density["tid"] == doc["events"]["tid"][:1]
    assert doc["filtered_events"] == 27
