"""The compiled window scan (trace/_lod.c `scan_ranges`, trace/window.py `_compiled_scan`)
answers every window exactly as numpy's `_overlapping` and `_scan` do, on the committed
captures and on overlapping events made to test its edges (events ending before the window
among its candidates, runs broken by wide events and gaps, pixel columns); the running
maximum of ends per block (trace/max_ends.py) equals the per-event one it replaced, which
no window builds any more."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.trace import lod, window
from tb_profile_plugin.trace.index import IndexColumns, TraceIndex, build_index
from tb_profile_plugin.trace.lod import summarise
from tb_profile_plugin.trace.max_ends import BLOCK, RunningMaxEnds
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import xplane_files

_FIELDS = ("ids", "num_filtered", "start_ps", "end_ps", "name_id", "block_name_id", "segment")
_BLOCK_FIELDS = ("segment", "start_ps", "end_ps", "count", "first_id")

compiled = pytest.mark.skipif(lod._compiled() is None, reason="trace/_lod.c is not built")


def _answer(index: TraceIndex, a: int, b: int, resolution: int) -> dict[str, object]:
    got = window._visible_events(index, a, b, resolution, 0)
    answer = {f: np.asarray(getattr(got, f)).tolist() for f in _FIELDS}
    answer["blocks"] = [np.asarray(getattr(got.blocks, f)).tolist() for f in _BLOCK_FIELDS]
    return answer


def _windows(index: TraceIndex) -> list[tuple[int, int, int]]:
    a, b = int(index.start_ps.min()), int(index.end_ps.max())
    span = b - a
    return [(a, b, 1000), (a, b, 7), (a + span // 3, a + span // 2, 1600),
            (a + span // 5, a + span // 5 + span // 97, 300), (a - span, b + span, 50)]


def _same_as_numpy(index: TraceIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    for a, b, resolution in _windows(index):
        got = _answer(index, a, b, resolution)
        with monkeypatch.context() as patch:
            patch.setattr(window, "_compiled_scan", lambda *args: None)
            assert got == _answer(index, a, b, resolution), (a, b, resolution)


@compiled
@pytest.mark.parametrize("path", xplane_files(),
                         ids=lambda p: str(p.parent.parent.parent.parent.name))
def test_compiled_scan_equals_numpy_on_captures(path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    index = build_index(decode_xspace(path.read_bytes()))
    if len(index):
        _same_as_numpy(index, monkeypatch)


def _overlapping_index(seed: int) -> TraceIndex:
    """One track of three depths (segments) of randomly overlapping events, some long."""
    rng = np.random.default_rng(seed)
    sizes = [int(rng.integers(1, 3000)) for _ in range(3)]
    starts, ends = [], []
    for size in sizes:
        start = np.sort(rng.integers(0, 10**7, size)).astype(np.int64)
        duration = np.where(rng.random(size) < 0.05, rng.integers(0, 10**6, size),
                            rng.integers(0, 3000, size))
        starts.append(start)
        ends.append(start + duration)
    start_ps, end_ps = np.concatenate(starts), np.concatenate(ends)
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    disjoint, block_max = summarise(start_ps, end_ps, bounds)
    n = len(start_ps)
    columns = IndexColumns({"start_ps": start_ps, "end_ps": end_ps,
                            "name_id": np.zeros(n, np.int32),
                            "source_row": np.arange(n, dtype=np.int32),
                            "block_max_ps": block_max,
                            "derived_source_line": np.zeros(0, np.int32)}, n)
    return TraceIndex(
        profile=None, processes=[], tracks=[], track_bounds=np.array([0, n], np.int64),  # type: ignore[arg-type]
        names=["x"], columns=columns, segment_bounds=bounds,
        segment_track=np.zeros(3, np.int32), segment_depth=np.arange(3, dtype=np.int32),
        segment_disjoint=disjoint, track_source_line=np.zeros(1, np.int32), line_refs=[],
        absolute_origin_ns=0, num_derived_events=0)


@compiled
@pytest.mark.parametrize("seed", range(8))
def test_compiled_scan_equals_numpy_on_overlapping_events(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    index = _overlapping_index(seed)
    assert not index.segment_disjoint.all()
    _same_as_numpy(index, monkeypatch)


@compiled
def test_compiled_scan_in_groups_equals_one_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ranges read side by side in groups give the answer of one group."""
    index = _overlapping_index(99)
    a, b = int(index.start_ps.min()) + 10**6, int(index.end_ps.max())
    bounds = index.segment_bounds
    lo, hi = bounds[:-1].copy(), bounds[1:].copy()
    one = lod.scan_ranges(index.start_ps, index.end_ps, index.block_max_ps, lo, hi, a, b,
                          (b - a) / 900)
    monkeypatch.setattr(lod.column_threads, "MIN_WORK", 1)
    monkeypatch.setattr(lod.column_threads, "threads", lambda: 3)
    grouped = lod.scan_ranges(index.start_ps, index.end_ps, index.block_max_ps, lo, hi, a, b,
                          (b - a) / 900)
    assert one is not None and grouped is not None
    assert one.overlapping == grouped.overlapping
    for name in ("kept", "block_first", "block_count", "block_end_ps"):
        assert np.array_equal(getattr(one, name), getattr(grouped, name)), name


@pytest.mark.parametrize("seed", range(20))
def test_running_max_ends_equal_the_per_event_maximum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 5 * BLOCK, int(rng.integers(1, 9)))
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    end_ps = rng.integers(-50, 10**4, int(bounds[-1])).astype(np.int64)
    disjoint = rng.random(len(sizes)) < 0.3
    ends = RunningMaxEnds(end_ps, bounds, disjoint)
    overlapping = np.flatnonzero(~disjoint & (sizes > 0))
    running = {int(s): np.maximum.accumulate(end_ps[bounds[s] : bounds[s + 1]])
               for s in overlapping}
    for key in rng.integers(-100, 11_000, 6).tolist():
        expected = [bounds[s] + np.searchsorted(running[int(s)], key, "left")
                    for s in overlapping]
        assert ends.first_reaching(overlapping, key).tolist() == expected
    if len(overlapping):
        segments = rng.choice(overlapping, 40)
        positions = bounds[segments] + (rng.random(40) * sizes[segments]).astype(np.int64)
        expected = [running[int(s)][p - bounds[s]] for s, p in zip(segments, positions,
                                                                     strict=True)]
        assert ends.at(segments, positions).tolist() == expected


def test_a_window_keeps_no_running_maximum_per_event() -> None:
    """The first window of an index with overlapping segments keeps 1/64 of an int64 per
    event of them, not one each (184 MB at a 10M-event GPU capture)."""
    index = _overlapping_index(3)
    a, b = int(index.start_ps.min()), int(index.end_ps.max())
    window._visible_events(index, a + (b - a) // 2, b, 1000, 0)
    assert "running_max_ends" in index._lazy  # built by the window
    kept = index.running_max_ends
    assert 0 < kept.nbytes <= len(index) * 8 // BLOCK + 8 * 8


def test_a_placed_track_lets_go_of_its_own_columns() -> None:
    """The index's assembly drops each track's own arrays once its events are placed
    (trace/index.py `_place_track`): a 10M-event GPU capture's derived tracks (~28 bytes per
    row, 15M rows) are not held beside the whole index's columns (peak 2.1 -> 1.5 GB)."""
    from tb_profile_plugin.trace import index as index_module

    start = np.array([0, 5, 10], np.int64)
    track = index_module._Track("XLA Ops", start.copy(), start + 3, np.arange(3, dtype=np.int32),
                                np.array([0, 0, 1], np.int32), np.arange(3, dtype=np.int32),
                                True)
    outputs = index_module._Outputs(np.empty(3, np.int64), np.empty(3, np.int64),
                                    np.empty(3, np.int32), np.empty(3, np.int32),
                                    np.empty(3, np.int32), index_module._Releaser())
    counts = index_module._place_track(track, slice(0, 3), slice(0, 3), outputs)
    assert counts.tolist() == [3]
    assert outputs.start_ps.tolist() == [0, 5, 10] and outputs.end_ps.tolist() == [3, 8, 13]
    assert outputs.derived_source_line.tolist() == [0, 0, 1]
    for column in (track.start_ps, track.end_or_duration_ps, track.name_id, track.source_row,
                   track.source_line):
        assert isinstance(column, np.ndarray) and len(column) == 0

