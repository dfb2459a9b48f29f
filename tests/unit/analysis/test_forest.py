"""Nesting, grouping across threads, and step roots on small synthetic spaces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.forest import build_forest
from tb_profile_plugin.analysis.events.nesting import (
    PURE_NESTING_ENV,
    compiled_pass,
    compute_nesting,
)
from tb_profile_plugin.analysis.events.table import build_event_table
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR, xplane_files
from tests.xspace_builder import XSpaceBuilder


def _forest(builder: XSpaceBuilder):
    table = build_event_table(decode_xspace(builder.serialize()))
    return table, build_forest(table)


def _name(table, i: int) -> str:
    return table.names[table.name_id[i]]


def test_nesting_depth_parent_with_ties_and_zero_length() -> None:
    # A[0,10] B[0,4] (same start, shorter: child) C[4,6] (back-to-back with B: sibling)
    # D[4,4] zero-length at C's start: inside C; E[10,12] starts as A ends: top level.
    start = np.array([0, 0, 4, 4, 10], np.int64)
    end = np.array([10, 4, 6, 4, 12], np.int64)
    nesting = compute_nesting(start, end, np.array([0, 5]))
    assert nesting.depth.tolist() == [0, 1, 1, 2, 0]
    assert nesting.parent.tolist() == [-1, 0, 0, 2, -1]


def test_nesting_is_per_line() -> None:
    start = np.array([0, 1, 0], np.int64)
    end = np.array([10, 2, 5], np.int64)
    nesting = compute_nesting(start, end, np.array([0, 2, 3]))
    assert nesting.parent.tolist() == [-1, 0, -1]


def test_groups_follow_producer_consumer_not_regions() -> None:
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    py = cpu.line("python", line_id=1)
    worker = cpu.line("tf_Compute", line_id=2)
    for step in range(2):
        t = step * 1000
        py.event("train", t, 900, step_num=step + 7, _r=1)
        py.event("FunctionRun", t + 10, 800, _r=1, _pt=1, _p=step + 1)
        worker.event("ExecutorState::Process", t + 20, 300, _ct=1, _c=step + 1)
        worker.event("op:MatMul", t + 30, 100)
        worker.event("ThreadpoolListener::Record", t + 200, 1, _pt=15, _p=100 + step)
        worker.event("ThreadpoolListener::StartRegion", t + 400, 0, _ct=15, _c=100 + step)
        worker.event("region_work:AddV2", t + 410, 50)
        worker.event("ThreadpoolListener::StopRegion", t + 470, 0)
    worker.event("stray:Identity", 5000, 10)  # reached by no root
    table, forest = _forest(b)
    by_name = {}
    for i in range(len(table)):
        by_name.setdefault(_name(table, i), []).append(int(forest.group_id[i]))
    assert forest.root_rule == "marker"
    assert by_name["train"] == [0, 1]
    assert by_name["FunctionRun"] == [0, 1]  # a root inside an earlier root joins its group
    assert by_name["op:MatMul"] == [0, 1]
    # As in the reference: the region's StartRegion (a consumer of the Record) joins the step;
    # the work the pool runs after it nests in nothing and joins no step.
    assert by_name["ThreadpoolListener::StartRegion"] == [0, 1]
    assert by_name["region_work:AddV2"] == [-1, -1]
    assert by_name["stray:Identity"] == [-1]
    assert forest.step_num.tolist() == [7, 8]


def test_negative_flow_ids_link_like_any_other() -> None:
    """`_p`/`_c` are 64-bit ids and often negative as int64: a negative id still links."""
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    py = cpu.line("python", line_id=1)
    worker = cpu.line("tf_Compute", line_id=2)
    for step in range(2):
        t = step * 1000
        py.event("train", t, 900, step_num=step, _r=1)
        py.event("FunctionRun", t + 10, 800, _pt=1, _p=-(2**62) - step)
        worker.event("ExecutorState::Process", t + 20, 300, _ct=1, _c=-(2**62) - step)
        worker.event("op:MatMul", t + 30, 100)
    table, forest = _forest(b)
    groups = {_name(table, i): [] for i in range(len(table))}
    for i in range(len(table)):
        groups[_name(table, i)].append(int(forest.group_id[i]))
    assert groups["ExecutorState::Process"] == [0, 1]
    assert groups["op:MatMul"] == [0, 1]


def test_keras_steps_without_markers() -> None:
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    for step in range(3):
        t = step * 100
        py.event("Profiled batch", t, 90, step_num=step + 3)
        py.event("multi_step_on_iterator", t + 5, 80)
        py.event("EagerLocalExecute: __inference_multi_step_on_iterator_12", t + 6, 70)
        py.event("FunctionRun", t + 7, 60, _r=1)
    table, forest = _forest(b)
    assert forest.root_rule == "keras"
    assert [_name(table, i) for i in forest.root_event] == ["multi_step_on_iterator"] * 3
    assert forest.step_num.tolist() == [3, 4, 5]


def test_tf_loop_iterations_are_roots() -> None:
    b = XSpaceBuilder()
    worker = b.plane("/host:CPU").line("tf_Compute", line_id=1)
    for it in range(3):
        worker.event("ExecutorState::Process", it * 100, 50, id=9, iter_num=it)
        worker.event("body:MatMul", it * 100 + 10, 20)
    table, forest = _forest(b)
    assert forest.root_rule == "loop"
    matmul = [int(forest.group_id[i]) for i in range(len(table))
              if _name(table, i) == "body:MatMul"]
    assert matmul == [0, 1, 2]
    assert forest.step_num.tolist() == [0, 1, 2]


def test_kernels_join_the_group_of_their_launch() -> None:
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    stream = b.gpu_plane(0).line("Stream #1", line_id=1)
    py.event("train", 0, 100, step_num=1, _r=1)
    py.event("cudaLaunchKernel", 10, 5, correlation_id=42)
    stream.kernel("sgemm", 500, 50, correlation_id=42)  # runs after the step on the host
    table, forest = _forest(b)
    kernel = next(i for i in range(len(table)) if _name(table, i) == "sgemm")
    assert forest.group_id[kernel] == 0


@pytest.mark.skipif(compiled_pass(False) is None, reason="the compiled pass is not built")
@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(DATA_DIR)))
def test_compiled_and_numpy_forests_are_identical_on_real_captures(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups flowing down the nesting (`_top_down`): the compiled climb and numpy's level
    passes give the same forest on every committed capture."""
    profile = decode_xspace(path.read_bytes())
    forests = []
    for pure in ("1", "0"):
        monkeypatch.setenv(PURE_NESTING_ENV, pure)
        forests.append(build_forest(build_event_table(profile)))
    numpy_forest, compiled_forest = forests
    assert np.array_equal(numpy_forest.group_id, compiled_forest.group_id)
    assert np.array_equal(numpy_forest.root_event, compiled_forest.root_event)
    assert np.array_equal(numpy_forest.step_num, compiled_forest.step_num)


@pytest.mark.skipif(compiled_pass(False) is None, reason="the compiled pass is not built")
def test_compiled_lowering_matches_a_walk_and_refuses_cycles() -> None:
    rng = np.random.default_rng(5)
    compiled = compiled_pass(False)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        # parents anywhere (not only earlier): events of a table are not in nesting order
        perm = rng.permutation(n)
        tree = np.array([-1 if i == 0 or rng.random() < 0.2 else int(rng.integers(0, i))
                         for i in range(n)], np.int64)
        parent = np.full(n, -1, np.int64)
        parent[perm] = np.where(tree >= 0, perm[np.maximum(tree, 0)], -1)
        group = rng.integers(0, 20, n).astype(np.int64)
        expected = group.copy()
        for i in range(n):
            a = int(parent[i])
            while a >= 0:
                expected[i] = min(expected[i], group[a])
                a = int(parent[a])
        lowered = group.copy()
        changed = compiled.lower_to_ancestors(lowered, parent)
        assert lowered.tolist() == expected.tolist()
        assert changed == (expected != group).any()
        assert not compiled.lower_to_ancestors(lowered, parent)  # settled: nothing changes
    with pytest.raises(ValueError, match="cycle"):
        compiled.lower_to_ancestors(np.zeros(2, np.int64), np.array([1, 0], np.int64))
