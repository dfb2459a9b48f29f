"""Nesting of events on a line, including events that overlap without nesting.

The Python tracer records `$trace.py:50 __init__`, which opens before the TraceMe that
`tf.profiler.experimental.Trace(...)` starts inside it and closes long before that TraceMe
ends. Nesting must then follow what a stack does (the reference builds its event tree that
way): the TraceMe is not a child of `__init__`, and what runs inside the TraceMe is its child.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.nesting import (
    PURE_NESTING_ENV,
    WALK_LEVELS,
    ancestor_reduce,
    compute_nesting,
    nearest_marked,
    under,
)
from tb_profile_plugin.analysis.events.table import build_event_table
from tb_profile_plugin.tools import registry
from tb_profile_plugin.trace.depth import compiled_nesting_available
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR, xplane_files
from tests.xspace_builder import XSpaceBuilder


def _stack_nesting(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plain one-event-at-a-time definition: events by start, longer first; pop what has
    closed before this event closes; the top of the stack is the parent."""
    close = np.where(end == start, 2 * start + 1, 2 * end)
    parent = np.full(len(start), -1, np.int64)
    depth = np.zeros(len(start), np.int32)
    stack: list[int] = []
    for i in np.lexsort((-end, start)):
        while stack and close[stack[-1]] < close[i]:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
            depth[i] = depth[stack[-1]] + 1
        stack.append(int(i))
    return parent, depth


def test_trace_opened_inside_a_python_call_is_not_its_child() -> None:
    # 0: `$trace.py __init__` [0, 30); 1: `train` step marker [25, 1000);
    # 2: `$python_side_work` [40, 60); 3: `FunctionRun` [100, 900)
    start = np.array([0, 25, 40, 100], np.int64)
    end = np.array([30, 1000, 60, 900], np.int64)
    nesting = compute_nesting(start, end, np.array([0, 4]))
    assert nesting.parent.tolist() == [-1, -1, 1, 1]
    assert nesting.depth.tolist() == [0, 0, 1, 1]


def test_properly_nested_lines_are_unchanged_by_the_overlap_rule() -> None:
    # line 0 nests properly; line 1 has an overlap; each line is nested on its own
    start = np.array([0, 10, 10, 20, 0, 5, 7], np.int64)
    end = np.array([100, 50, 10, 30, 10, 20, 8], np.int64)
    nesting = compute_nesting(start, end, np.array([0, 4, 7]))
    assert nesting.parent.tolist() == [-1, 0, 1, 1, -1, -1, 5]
    assert nesting.depth.tolist() == [0, 1, 2, 2, 0, 0, 1]


@pytest.mark.parametrize("pure", [True, False] if compiled_nesting_available() else [True])
def test_random_lines_match_the_stack_definition(pure: bool) -> None:
    """Both passes (numpy, and the compiled stack walk where it is built), on lines in and out
    of start order, with and without overlaps, several lines at once."""
    rng = np.random.default_rng(7)
    for _ in range(2000):
        sizes = rng.integers(1, 30, int(rng.integers(1, 4)))
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        start = rng.integers(0, 40, int(bounds[-1])).astype(np.int64)
        end = start + rng.integers(0, 15, len(start))
        if rng.random() < 0.3:  # a line in start order already, as producers write them
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
                order = np.lexsort((-end[lo:hi], start[lo:hi]))
                start[lo:hi], end[lo:hi] = start[lo:hi][order], end[lo:hi][order]
        nesting = compute_nesting(start, end, bounds, pure=pure)
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            parent, depth = _stack_nesting(start[lo:hi], end[lo:hi])
            parent[parent >= 0] += lo
            assert nesting.parent[lo:hi].tolist() == parent.tolist()
            assert nesting.depth[lo:hi].tolist() == depth.tolist()


@pytest.mark.skipif(not compiled_nesting_available(), reason="the compiled pass is not built")
@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(DATA_DIR)))
def test_the_compiled_pass_equals_numpy_on_real_captures(path: Path) -> None:
    """Every line of every committed real capture (TensorFlow, JAX on CPU, AMD and NVIDIA
    GPUs): the compiled walk and the numpy reference give the same depth and parent."""
    table = build_event_table(decode_xspace(path.read_bytes()))
    numpy_nesting = compute_nesting(table.start_ps, table.end_ps, table.line_bounds, pure=True)
    compiled = compute_nesting(table.start_ps, table.end_ps, table.line_bounds, pure=False)
    assert len(table.start_ps) > 100
    assert np.array_equal(numpy_nesting.parent, compiled.parent)
    assert np.array_equal(numpy_nesting.depth, compiled.depth)


def test_deep_chains_cost_no_more_than_their_size() -> None:
    """40,000 identical events (each nested in the previous): depth 0..n-1, parent i-1, and
    every view of such a profile analysed in well under a second (once quadratic in depth)."""
    n = 40_000
    start = np.zeros(n, np.int64)
    end = np.full(n, 1_000_000, np.int64)
    nesting = compute_nesting(start, end, np.array([0, n]))
    assert sorted(nesting.depth.tolist()) == list(range(n))
    order = np.argsort(nesting.depth)
    assert nesting.parent[order].tolist() == [-1, *order[:-1].tolist()]
    builder = XSpaceBuilder()
    line = builder.plane("/host:CPU").line("python", line_id=1)
    for _ in range(n):
        line.event("dense/MatMul:MatMul", 0, 1_000_000)
    profile = decode_xspace(builder.serialize())
    began = time.perf_counter()
    for view in ("overview_page", "tensorflow_stats", "trace_viewer", "input_pipeline_analyzer",
                 "tf_data_bottleneck_analysis"):
        registry.VIEWS[view].build(registry.ViewRequest("run", "h", {"h": profile}, {}))
    assert time.perf_counter() - began <= 1.0


@pytest.mark.parametrize("pure", [True, False] if compiled_nesting_available() else [True])
def test_ancestor_reduce_and_nearest_marked_match_a_walk(pure: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PURE_NESTING_ENV, "1" if pure else "0")
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 50))
        parent = np.array([-1 if i == 0 or rng.random() < 0.2 else int(rng.integers(0, i))
                           for i in range(n)], np.int64)
        values = rng.integers(0, 100, n).astype(np.int64)
        marked = rng.random(n) < 0.3
        lowest = ancestor_reduce(values, parent, np.minimum, 10**9)
        inside = under(marked, parent)
        nearest = nearest_marked(values, marked, parent)
        for i in range(n):
            chain = []
            a = int(parent[i])
            while a >= 0:
                chain.append(a)
                a = int(parent[a])
            assert lowest[i] == min((values[a] for a in chain), default=10**9)
            assert inside[i] == any(marked[a] for a in chain)
            own = [j for j in [i, *chain] if marked[j]]
            assert nearest[i] == (values[own[0]] if own else -1)



def test_under_deeper_than_the_walk_matches_a_walk() -> None:
    """Chains deeper than WALK_LEVELS finish by pointer jumping: same answer as a walk."""
    rng = np.random.default_rng(11)
    n = 3 * WALK_LEVELS + 7
    parent = np.arange(-1, n - 1, dtype=np.int64)  # one chain: i's parent is i - 1
    parent[n // 2] = -1  # two chains
    for _ in range(20):
        mask = rng.random(n) < 0.02
        inside = under(mask, parent)
        for i in range(n):
            chain = []
            a = int(parent[i])
            while a >= 0:
                chain.append(a)
                a = int(parent[a])
            assert inside[i] == any(mask[a] for a in chain)


@pytest.mark.skipif(not compiled_nesting_available(), reason="the compiled pass is not built")
def test_compiled_under_matches_numpy_on_deep_chains_and_refuses_cycles() -> None:
    """Chains deeper than the numpy walk's levels (finished by pointer jumping there), forests
    in any order; a cycle or an index out of range is a ValueError, not a hang."""
    rng = np.random.default_rng(11)
    for n in (1, 2, 100, 5000):
        chain = np.arange(-1, n - 1, dtype=np.int64)  # i's parent is i - 1
        perm = rng.permutation(n)  # the same chain, its events in a random order
        inverse = np.argsort(perm)
        shuffled = np.where(chain[perm] >= 0, inverse[np.maximum(chain[perm], 0)], -1)
        for parent in (chain, shuffled):
            mask = rng.random(n) < 0.01
            assert np.array_equal(under(mask, parent, pure=False), under(mask, parent, pure=True))
    with pytest.raises(ValueError, match="cycle"):
        under(np.ones(3, bool), np.array([1, 2, 0], np.int64), pure=False)
    with pytest.raises(ValueError, match="out of range"):
        under(np.ones(2, bool), np.array([-1, 7], np.int64), pure=False)
