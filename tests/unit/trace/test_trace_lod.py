"""The level of detail (trace/lod.py) answers wide windows exactly as the scan of every
candidate does: same visible events, same filtered count, same density blocks, on random
dense tracks (nested, overlapping, zero-length events, clustered starts), at pixel sizes down
to just over 1 ps and at times far from zero where float rounding moves column boundaries. The
summary the index keeps (`summarise`: block maxima, disjoint segments) is the same compiled
(trace/_lod.c) as numpy's."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tb_profile_plugin.trace import lod, window
from tb_profile_plugin.trace.index import build_index
from tb_profile_plugin.trace.window import visible_events
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tests.xspace_builder import XSpaceBuilder


def dense_profile(seed: int) -> Profile:
    """Four lines: dense siblings with nested children, clustered starts, zero-length events,
    gaps of every size; the last line also overlaps without nesting."""
    rng = np.random.default_rng(seed)
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    for line_id in range(4):
        line = cpu.line(f"tf_Compute/{line_id}", line_id=line_id)
        t = 0
        for _ in range(1500):
            gap = int(rng.choice([0, 1, 2, 50, 3_000, 200_000]))
            t += gap
            length = int(rng.choice([0, 1, 3, 40, 900, 20_000, 500_000]))
            line.event(f"op{rng.integers(0, 5)}", t, length)
            if length > 4 and rng.random() < 0.3:
                at = t + int(rng.integers(0, length))
                line.event("child", at, int(rng.integers(0, t + length - at + 1)))
            if line_id == 3 and rng.random() < 0.05:
                line.event("overlap", t + 1, length + 7)
            t += length
    return decode_xspace(b.serialize())


def _answers(index, a: int, b: int, resolution: int, lod_on: bool, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(window, "_LOD_MIN_EVENTS", 0 if lod_on else 1 << 62)
    monkeypatch.setattr(window, "_LOD_EVENTS_PER_COLUMN", 0)
    got = window._visible_events(index, a, b, resolution, 0)
    blocks = got.blocks
    return (got.ids.tolist(), got.num_filtered, blocks.segment.tolist(),
            blocks.start_ps.tolist(), blocks.end_ps.tolist(), blocks.count.tolist(),
            blocks.first_id.tolist())


@pytest.mark.parametrize("pure", ["0", "1"])  # the compiled block scan, and numpy's
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_level_of_detail_equals_the_scan(seed: int, pure: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lod.PURE_LOD_ENV, pure)
    index = build_index(dense_profile(seed))
    assert index.segment_disjoint.any() and not index.segment_disjoint.all()
    rng = np.random.default_rng(seed + 10)
    last = index.last_ps
    windows = [(0, last), (-5, last + 5), (last // 3, last // 3 + 1)]
    windows += [(int(a), int(a) + int(rng.integers(2, last // 2)))
                for a in rng.integers(-1000, last, 20)]
    windows += [(int(a), int(a) + int(rng.integers(3, 40_000)))  # pixels of 1.5 ps
                for a in rng.integers(-1000, last, 10)]
    for a, b in windows:
        for resolution in {1, 7, 100, 1600, min(20_000, max(1, (b - a) // 2))}:
            scan = _answers(index, a, b, resolution, False, monkeypatch)
            assert _answers(index, a, b, resolution, True, monkeypatch) == scan, (a, b,
                                                                                  resolution)


def test_the_public_query_keeps_its_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through `visible_events` (its answer cache, the 10,000-event rule) both ways agree."""
    profile = dense_profile(5)
    last = build_index(profile).last_ps
    answers = []
    for lod_on in (False, True):
        monkeypatch.setattr(window, "_LOD_MIN_EVENTS", 0 if lod_on else 1 << 62)
        index = build_index(profile)
        got = [visible_events(index, a, b, 1600, m)
               for a, b, m in [(0, last, 10_000), (0, last, 100), (last // 4, last // 2, 100)]]
        answers.append([(v.ids.tolist(), v.num_filtered, v.blocks.count.tolist()) for v in got])
    assert answers[0] == answers[1]


def _one_segment(start: np.ndarray, end: np.ndarray) -> SimpleNamespace:
    disjoint, block_max = lod.summarise(start, end, np.array([0, len(start)], np.int64))
    return SimpleNamespace(start_ps=start, end_ps=end, disjoint=disjoint,
                           levels=lod.levels_of(block_max))


@pytest.mark.parametrize("origin", [0, 2**40 + 3, 2**55 + 12_345])
def test_column_boundaries_far_from_zero(origin: int) -> None:
    """Times near 2^55 ps: `a + c * pixel` is off by many ps in float, the zones cover it."""
    rng = np.random.default_rng(origin % 1000)
    n = 200_000
    start = origin + np.cumsum(rng.integers(0, 40, n)).astype(np.int64)
    start += np.arange(n)  # strictly increasing
    end = start + (rng.random(n) < 0.5)
    end[1:] = np.minimum(end[1:], start[1:])  # disjoint
    seg = _one_segment(start, end)
    assert seg.disjoint.all()
    for a_off, span, resolution in [(0, int(start[-1] - origin), 1600), (777, 100_003, 1000),
                                    (12, 9_000_001, 7919), (5, 400_000, 199_999)]:
        a = origin + a_off
        b = a + span
        lo = int(np.searchsorted(end, a, "left"))
        hi = int(np.searchsorted(start, b, "right"))
        pixel = (b - a) / resolution
        ids = np.arange(lo, hi, dtype=np.int64)
        kept, _, blocks = window._scan(seg, ids, np.zeros(len(ids), np.int64), a, pixel)
        view = lod.segment_view(start, end, seg.levels, lo, hi, a, b, pixel)
        assert view.kept.tolist() == kept.tolist()
        assert view.block_first.tolist() == blocks.first_id.tolist()
        assert view.block_count.tolist() == blocks.count.tolist()
        assert view.block_end_ps.tolist() == blocks.end_ps.tolist()


def test_summary_flags_and_block_maxima() -> None:
    start = np.array([0, 10, 20, 25, 100, 100, 300], np.int64)
    end = np.array([5, 20, 30, 26, 100, 250, 301], np.int64)
    bounds = np.array([0, 4, 7], np.int64)  # [0..3]: 20..30 overlaps 25..26; [4..6] disjoint
    disjoint, block_max = lod.summarise(start, end, bounds)
    assert disjoint.tolist() == [False, True]
    # durations 5 10 10 1 0 150 1; gaps - 5 0 -5 | - 0 50: max 150
    assert block_max.tolist() == [150]


compiled = pytest.mark.skipif(lod._compiled() is None, reason="trace/_lod.c is not built")


def _summary_case(rng: np.random.Generator, kind: int) -> tuple[np.ndarray, ...]:
    n = int(rng.integers(0, 300))
    cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(0, 5))))
    bounds = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    big = np.iinfo(np.int64)
    if kind == 0:  # disjoint, ascending
        start = np.cumsum(rng.integers(0, 5, n))
        end = start + rng.integers(0, 3, n)
    elif kind == 1:  # overlapping, negative durations
        start = rng.integers(-100, 100, n)
        end = start + rng.integers(-20, 50, n)
    else:  # differences that wrap around int64
        start = rng.integers(big.min // 2, big.max // 2, n, dtype=np.int64)
        end = rng.integers(big.min, big.max, n, dtype=np.int64)
    return start.astype(np.int64), end.astype(np.int64), bounds


@compiled
@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_summary_equals_numpys(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """trace/_lod.c `summarise`: the same block maxima (a last partial block's padding
    counting 0, a segment's first gap 0) and disjoint segments as numpy's, empty segments,
    empty columns and wrapping differences included."""
    rng = np.random.default_rng(seed)
    for trial in range(300):
        start, end, bounds = _summary_case(rng, trial % 3)
        got = lod.summarise(start, end, bounds)
        monkeypatch.setenv(lod.PURE_LOD_ENV, "1")
        with np.errstate(over="ignore"):
            want = lod.summarise(start, end, bounds)
        monkeypatch.delenv(lod.PURE_LOD_ENV)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and np.array_equal(g, w), (trial, bounds)


@compiled
def test_the_compiled_summary_refuses_arrays_that_do_not_fit() -> None:
    start = end = np.arange(10, dtype=np.int64)
    block_max, disjoint = np.empty(1, np.int64), np.empty(1, bool)
    with pytest.raises(ValueError, match="cover"):
        lod._lod.summarise(start, end, np.array([0, 9], np.int64), block_max, disjoint)
    with pytest.raises(ValueError, match="ascending"):
        lod._lod.summarise(start, end, np.array([0, 6, 3, 10], np.int64), block_max,
                           np.empty(3, bool))
    with pytest.raises(ValueError, match="fit"):
        lod._lod.summarise(start, end, np.array([0, 10], np.int64), np.empty(2, np.int64),
                           disjoint)
