"""Density blocks never cross a drawn event of the depth above them (issue 29 item 5).

At a 0.5-1.3 s view of back-to-back 10 ms `train` steps whose dense children are all below a
pixel, one hatched block used to span several steps. trace/window.py `split_at_parents`
cuts every block at the events of its parent depth: each block lies inside one step, and the
blocks still count every folded event once.
"""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.trace.index import build_index
from tb_profile_plugin.trace.window import visible_events
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.browser.trace_steps_synthetic import (
    CHILDREN,
    MS,
    STEP_PS,
    US,
    steps_trace_profile,
)
from tests.xspace_builder import XSpaceBuilder


@pytest.fixture(scope="module")
def index():  # noqa: ANN201
    return build_index(decode_xspace(steps_trace_profile()))


# 1000 px: the depth-1 segment (32,000 events in view) goes through the level of detail;
# 10,000 px: through the scan (trace/window.py `_visible_events`).
@pytest.mark.parametrize("resolution", [1000, 10_000])
def test_blocks_stay_inside_their_parent_step(index, resolution: int) -> None:  # noqa: ANN001
    a, b = 500 * MS, 1300 * MS
    visible = visible_events(index, a, b, resolution)
    blocks = visible.blocks
    depth = index.segment_depth[blocks.segment]
    assert len(blocks) and (depth == 1).all()
    # The steps (depth 0) and their boundaries.
    steps = np.flatnonzero(index.depth == 0)
    step_start, step_end = index.start_ps[steps], index.end_ps[steps]
    assert (np.diff(step_start) == STEP_PS).all() and (step_start[1:] == step_end[:-1]).all()
    bounds = np.union1d(step_start, step_end)
    for s, e in zip(blocks.start_ps.tolist(), blocks.end_ps.tolist(), strict=True):
        inside = bounds[(bounds > s) & (bounds < e)]
        assert len(inside) == 0, (s, e, inside[:3])
        holder = np.flatnonzero((step_start <= s) & (e <= step_end))
        assert len(holder) == 1, (s, e)
    # One block per step in view (each step's children are one run), counting every child
    # of the view once.
    in_view = (step_end > a) & (step_start < b)  # steps with children in the view
    assert len(blocks) == int(in_view.sum())
    children = np.flatnonzero(index.depth == 1)
    overlapping = (index.end_ps[children] >= a) & (index.start_ps[children] <= b)
    assert int(blocks.count.sum()) == int(overlapping.sum())
    inner = blocks.count[1:-1]  # the first and last steps are cut by the view
    assert (inner == CHILDREN).all()
    # Each block's first event is its first member, inside the block.
    assert (index.start_ps[blocks.first_id] == blocks.start_ps).all()


def test_blocks_without_parent_boundaries_are_unchanged(index) -> None:  # noqa: ANN001
    """A view inside one step: its block is not cut (nothing of the depth above begins or
    ends inside it)."""
    a, b = 501 * MS, 509 * MS
    visible = visible_events(index, a, b, 100, unfiltered_max_events=0)
    assert len(visible.blocks) == 1
    assert visible.blocks.start_ps[0] >= 500 * MS and visible.blocks.end_ps[0] <= 510 * MS


def test_sub_pixel_parents_cut_nothing(index) -> None:  # noqa: ANN001
    """At a full zoom-out the 10 ms steps are under a pixel: the children's block is not cut
    at each of them (a hatched row, not thousands of slivers)."""
    visible = visible_events(index, 0, int(index.end_ps.max()), 100, unfiltered_max_events=0)
    children = visible.blocks.segment == 1
    assert int(children.sum()) == 1


def _random_nested_profile(seed: int) -> bytes:
    """Back-to-back (or nearly) parents of random lengths, each with a random number of short
    children at random places inside it, on two threads."""
    rng = np.random.default_rng(seed)
    b = XSpaceBuilder()
    host = b.plane("/host:CPU")
    for thread in range(2):
        line = host.line(f"worker_{thread}", line_id=thread + 1)
        t = 0
        for _ in range(60):
            length = int(rng.integers(20, 400)) * US
            line.event("step", t, length)
            n = int(rng.integers(0, 40))
            offsets = np.sort(rng.choice(length // US - 2, size=min(n, length // US - 2),
                                         replace=False))
            for off in offsets.tolist():
                line.event("op", t + off * US, US // 2)
            t += length + int(rng.integers(0, 3)) * US  # touching, or a small gap
    return b.serialize()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("resolution", [50, 400, 3000])
def test_random_blocks_never_cross_a_parent_boundary(seed: int, resolution: int) -> None:
    index = build_index(decode_xspace(_random_nested_profile(seed)))
    last = int(index.end_ps.max())
    for a, b in ((0, last), (last // 3, 2 * last // 3)):
        visible = visible_events(index, a, b, resolution, unfiltered_max_events=0)
        blocks = visible.blocks
        folded = 0
        for seg in np.unique(blocks.segment).tolist():
            mine = blocks.segment == seg
            track, depth = int(index.segment_track[seg]), int(index.segment_depth[seg])
            if depth == 0:  # sub-pixel steps themselves: nothing above them
                continue
            # The parents drawn as bars (a pixel wide or more): their edges are seen.
            pixel = (b - a) / resolution
            parents = np.flatnonzero((index.track_of(np.arange(len(index))) == track)
                                     & (index.depth == 0)
                                     & (index.end_ps - index.start_ps >= pixel))
            edges = np.union1d(index.start_ps[parents], index.end_ps[parents])
            for s, e in zip(blocks.start_ps[mine].tolist(), blocks.end_ps[mine].tolist(),
                            strict=True):
                assert not ((edges > s) & (edges < e)).any(), (seed, resolution, s, e)
            folded += int(blocks.count[mine].sum())
        # Every block counts its events once: no more than the sub-pixel children in view.
        children = np.flatnonzero(index.depth == 1)
        in_view = (index.end_ps[children] >= a) & (index.start_ps[children] <= b)
        assert folded <= int(in_view.sum())
