"""Nesting of events on a line, including events that overlap without nesting.

The Python tracer records `$trace.py:50 __init__`, which opens before the TraceMe that
`tf.profiler.experimental.Trace(...)` starts inside it and closes long before that TraceMe
ends. Nesting must then follow what a stack does (the reference builds its event tree that
way): the TraceMe is not a child of `__init__`, and what runs inside the TraceMe is its child.
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.nesting import compute_nesting


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


def test_random_lines_match_the_stack_definition() -> None:
    rng = np.random.default_rng(7)
    for _ in range(2000):
        n = int(rng.integers(1, 30))
        start = rng.integers(0, 40, n).astype(np.int64)
        end = start + rng.integers(0, 15, n)
        nesting = compute_nesting(start, end, np.array([0, n]))
        parent, depth = _stack_nesting(start, end)
        assert nesting.parent.tolist() == parent.tolist()
        assert nesting.depth.tolist() == depth.tolist()
