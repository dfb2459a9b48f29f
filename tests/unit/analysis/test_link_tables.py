"""Joins by correlation id and plane slices: the tabled paths give what the sorts gave.

The forest's launch -> kernel link ranks correlation ids with a table of their range, and
`xla_executions`' host calls table each id's call; both fall back to sorts where the ids are
sparse. Every path (table, sort, parts of a few events) must give the same result.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events import forest as forest_module
from tb_profile_plugin.analysis.events.forest import build_forest
from tb_profile_plugin.analysis.events.table import SparseStat, build_event_table
from tb_profile_plugin.analysis.steps import xla_executions as executions_module
from tb_profile_plugin.analysis.steps.step_db import union_per_group
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR, xplane_files
from tests.unit.analysis.test_execution_steps import _jax_gpu_space, _tpu_space
from tests.xspace_builder import Uint, XSpaceBuilder


@pytest.mark.parametrize("values", [
    ([5, 3, 5, 9], [3, 3, 11, 9, 4]),  # small counters, repeats, a target-only id
    ([-(2**62), 7, 2**62], [7, 2**62, 0]),  # wide: ranked by a sort
    ([], [4, 2, 4]),
    ([1, 1], []),
])
def test_single_key_ids_are_the_ranks_of_the_joined_column(
        values: tuple[list[int], list[int]], monkeypatch: pytest.MonkeyPatch) -> None:
    sources, targets = (np.array(v, np.int64) for v in values)
    expected = forest_module._key_ids(np.concatenate([sources, targets]),
                                      valid=np.ones(len(sources) + len(targets), bool))
    for chunk in (column_sizes.CHUNK_EVENTS, 4):  # (parts of one event each)
        monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", chunk)
        source_key, target_key = forest_module._single_key_ids(sources, targets)
        assert np.concatenate([source_key, target_key]).tolist() == expected.tolist()


def _launch_space(correlation_step: int) -> bytes:
    """Two steps on the host, launches on a tracer line (ids `correlation_step` apart), the
    kernels on two GPUs; one kernel has no launch, one launch no kernel."""
    b = XSpaceBuilder(hostnames=["host"])
    host = b.plane("/host:CPU")
    python = host.line("python", line_id=1)
    api = host.line("Host Threads/9", line_id=9)
    streams = [b.gpu_plane(g).line("Stream #1", line_id=1) for g in range(2)]
    for step in range(2):
        t0 = step * 1000
        python.event("train", t0, 500, step_num=step, _r=1)
        for j in range(4):
            corr = (1 + 4 * step + j) * correlation_step
            api.event("cudaLaunchKernel", t0 + 10 + 20 * j, 5, correlation_id=Uint(corr))
            streams[j % 2].kernel("k", t0 + 600 + 50 * j, 20, corr)
    streams[0].kernel("orphan", 5000, 10, 77 * correlation_step + 1)
    return b.serialize()


@pytest.mark.parametrize("correlation_step", [1, 2**40])
def test_forest_is_the_same_by_table_sort_and_parts(
        correlation_step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    table = build_event_table(decode_xspace(_launch_space(correlation_step)))
    reference = build_forest(table)
    assert reference.num_groups == 2
    monkeypatch.setattr(forest_module, "_DENSE_KEY_SLACK", -(2**62))  # always sorted
    monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", 4)
    for forest in (build_forest(table),):
        assert forest.group_id.tolist() == reference.group_id.tolist()
        assert forest.root_event.tolist() == reference.root_event.tolist()
    kernels = [i for i in range(len(table)) if table.names[table.name_id[i]] == "k"]
    assert sorted(set(reference.group_id[kernels].tolist())) == [0, 1]


def test_a_link_applied_again_with_no_better_source_changes_nothing() -> None:
    link = forest_module._link((np.array([1, 2]),), (np.array([2, 1, 2]),),
                               np.array([0, 1]), np.array([2, 3, 4]))
    none = forest_module._NONE
    group = np.array([5, 3, none, none, none], np.int64)
    assert link.apply(group)
    assert group.tolist() == [5, 3, 3, 5, 3]
    assert not link.apply(group)
    group[0] = 1  # a source fell: its targets follow
    assert link.apply(group)
    assert group.tolist() == [1, 3, 3, 1, 3]


def test_on_planes_is_the_plane_mask_of_the_rows() -> None:
    table = build_event_table(decode_xspace(_launch_space(1)))
    correlation = table.stat_rows("correlation_id")
    device = np.array([p.name.startswith("/device:") for p in table.profile.planes])
    for planes in (device, ~device, np.zeros_like(device), np.ones_like(device)):
        part = forest_module._on_planes(table, correlation, planes)
        keep = planes[table.plane_index[correlation.rows]]
        assert part.rows.tolist() == correlation.rows[keep].tolist()
        assert part.values.tolist() == correlation.values[keep].tolist()
    empty = SparseStat(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert len(forest_module._on_planes(table, empty, device).rows) == 0


@pytest.mark.parametrize("gpus", [1, 2])
def test_host_calls_are_the_same_by_table_sort_and_parts(
        gpus: int, monkeypatch: pytest.MonkeyPatch) -> None:
    table = build_event_table(decode_xspace(_jax_gpu_space(calls=3, gpus=gpus)))
    by_table = executions_module._host_calls(table)
    assert np.count_nonzero(by_table != executions_module.NO_RUN) == 1 + 3 * 3 * gpus
    monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", 4)
    assert executions_module._host_calls(table).tolist() == by_table.tolist()
    with monkeypatch.context() as numpy_parts:  # (the table's numpy parts, not one pass)
        numpy_parts.setenv("TB_PROFILE_PURE_STEPS", "1")
        assert executions_module._host_calls(table).tolist() == by_table.tolist()
    monkeypatch.setattr(executions_module, "_DENSE_IDS_SLACK", -(2**62))  # always sorted
    assert executions_module._host_calls(table).tolist() == by_table.tolist()


def test_plane_rows_are_the_rows_of_the_plane() -> None:
    table = build_event_table(decode_xspace(_jax_gpu_space(calls=2, gpus=2)))
    for plane_index in range(len(table.profile.planes)):
        rows = executions_module.plane_rows(table, plane_index)
        expected = np.flatnonzero(table.plane_index == plane_index)
        assert np.arange(len(table))[rows].tolist() == expected.tolist()


class _Lines:
    """The two columns `plane_rows` reads, for a layout the table never builds."""

    def __init__(self, bounds: list[int], plane_of_row: list[int]) -> None:
        self.line_bounds = np.array(bounds, np.int64)
        self.plane_index = np.array(plane_of_row, np.int8)

    def __len__(self) -> int:
        return len(self.plane_index)


def test_plane_rows_of_lines_apart_are_their_indices() -> None:
    lines = _Lines([0, 2, 2, 3, 5], [1, 1, 0, 1, 1])  # plane 1's lines around plane 0's
    assert executions_module.plane_rows(lines, 1).tolist() == [0, 1, 3, 4]  # type: ignore[arg-type, union-attr]
    assert executions_module.plane_rows(lines, 0) == slice(2, 3)  # type: ignore[arg-type]
    assert len(executions_module.plane_rows(lines, 2)) == 0  # type: ignore[arg-type, arg-type]


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(DATA_DIR)))
def test_busy_time_is_the_union_per_execution_on_real_captures(path: Path) -> None:
    """`_busy` (rows put in execution order plane by plane) = `union_per_group` (one sort).
    (Device planes only: a CPU-only profile's executions come from `_host_executions`.)"""
    table = build_event_table(decode_xspace(path.read_bytes()))
    if not table.on_device.any():
        pytest.skip("no device plane")
    executions = executions_module.xla_executions(table)
    event_execution = executions.event_execution
    member = event_execution >= 0
    expected = union_per_group(event_execution[member], table.start_ps[member],
                               table.end_ps[member], len(executions))
    assert executions.busy_ps.tolist() == expected.tolist()


def test_busy_time_of_gpu_and_tpu_executions() -> None:
    for space in (_jax_gpu_space(calls=3, gpus=2), _tpu_space(calls=3, cores=2)):
        table = build_event_table(decode_xspace(space))
        executions = executions_module.xla_executions(table)
        member = executions.event_execution >= 0
        assert member.any()
        expected = union_per_group(executions.event_execution[member], table.start_ps[member],
                                   table.end_ps[member], len(executions))
        assert executions.busy_ps.tolist() == expected.tolist()
