"""The level of detail's zone search (trace/lod.py `zones`): the compiled search
(trace/_lod.c, when built) gives numpy's searchsorted answers, for ascending keys (a window's
columns), keys out of order, runs of equal values and ranges of one event; and many segments
at once (`segments_view`) answer as each segment alone, with either search."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.trace import lod


def _reference(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, offsets: np.ndarray,
               keys: np.ndarray) -> np.ndarray:
    out = np.empty(len(keys), np.int64)
    for r in range(len(lo)):
        for j in range(int(offsets[r]), int(offsets[r + 1])):
            out[j] = lo[r] + np.searchsorted(values[lo[r]:hi[r]], keys[j], "left")
    return out


def _ranges(rng: np.random.Generator, n_ranges: int) -> tuple[np.ndarray, ...]:
    sizes = rng.integers(1, 400, n_ranges)
    values = np.concatenate([np.sort(rng.integers(0, 1000, s) * rng.integers(1, 4))
                             for s in sizes]).astype(np.int64)  # repeats, one-event ranges
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    lo = bounds[:-1] + rng.integers(0, 2, n_ranges) * (sizes > 1)
    hi = bounds[1:].copy()
    counts = rng.integers(0, 60, n_ranges)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return values, lo.astype(np.int64), hi, offsets


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("order", ["ascending", "shuffled"])
def test_zones_match_searchsorted(seed: int, order: str,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    values, lo, hi, offsets = _ranges(rng, 30)
    first_keys = rng.integers(-5, 3100, int(offsets[-1])).astype(np.int64)
    for r in range(len(lo)):
        here = slice(int(offsets[r]), int(offsets[r + 1]))
        if order == "ascending":
            first_keys[here] = np.sort(first_keys[here])
    end_keys = first_keys + rng.integers(0, 30, len(first_keys))
    expected = (_reference(values, lo, hi, offsets, first_keys),
                _reference(values, lo, hi, offsets, end_keys))
    for pure in ("0", "1"):
        monkeypatch.setenv(lod.PURE_LOD_ENV, pure)
        got = lod.zones(values, lo, hi, offsets, first_keys, end_keys)
        assert got[0].tolist() == expected[0].tolist(), pure
        assert got[1].tolist() == expected[1].tolist(), pure


@pytest.mark.parametrize("pure", ["0", "1"])
def test_many_segments_at_once_answer_as_each_alone(pure: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lod.PURE_LOD_ENV, pure)
    rng = np.random.default_rng(5)
    starts, ends, bounds = [], [], [0]
    for _ in range(12):  # disjoint segments of different densities
        n = int(rng.integers(5_000, 40_000))
        start = np.cumsum(rng.integers(0, int(rng.integers(2, 200)), n)).astype(np.int64)
        start += np.arange(n)
        end = start + rng.integers(0, 3, n) * (rng.random(n) < 0.2)
        end[:-1] = np.minimum(end[:-1], start[1:])
        starts.append(start)
        ends.append(end)
        bounds.append(bounds[-1] + n)
    start_ps, end_ps = np.concatenate(starts), np.concatenate(ends)
    segment_bounds = np.array(bounds, np.int64)
    disjoint, block_max = lod.summarise(start_ps, end_ps, segment_bounds)
    assert disjoint.all()
    levels = lod.levels_of(block_max)
    for a, b, resolution in [(0, 2_000_000, 1600), (10_000, 60_000, 800), (3, 700_003, 333)]:
        pixel = (b - a) / resolution
        lo = np.array([s + np.searchsorted(end_ps[s:e], a, "left")
                       for s, e in zip(bounds[:-1], bounds[1:], strict=True)], np.int64)
        hi = np.array([s + np.searchsorted(start_ps[s:e], b, "right")
                       for s, e in zip(bounds[:-1], bounds[1:], strict=True)], np.int64)
        some = np.flatnonzero(hi > lo)
        together = lod.segments_view(start_ps, end_ps, levels, lo[some], hi[some], a, b, pixel)
        alone = [lod.segment_view(start_ps, end_ps, levels, int(lo[s]), int(hi[s]), a, b, pixel)
                 for s in some]
        assert together.kept.tolist() == np.concatenate([v.kept for v in alone]).tolist()
        assert together.kept_range.tolist() == np.concatenate(
            [np.full(len(v.kept), k) for k, v in enumerate(alone)]).tolist()
        for name in ("block_first", "block_end_ps", "block_count"):
            assert getattr(together, name).tolist() == np.concatenate(
                [getattr(v, name) for v in alone]).tolist(), name
        assert together.block_range.tolist() == np.concatenate(
            [np.full(len(v.block_count), k) for k, v in enumerate(alone)]).tolist()
