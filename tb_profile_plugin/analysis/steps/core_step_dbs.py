"""Every GPU's own step database in one pass over the events, and the host's (issue 31).

`profile_steps` gives each GPU plane of a several-GPU host its own step database:
`build_step_db` on the host's events with that plane's device events only (the other planes'
types -1). Built one by one, each database pays a pass over every event for its counted events
(two, count then fill), one for its device markers and a full-length copy and mask of the
types, and gathers and sorts every group's host events again: at 2M events on 8 GPUs, 8 x 4
passes over the events and the host's 300k events sorted 8 times (0.13 s of 0.25 s).

Where the compiled sweep is built (analysis/steps/_step_*.c), the same databases come from:
- the host markers, found once: the host's events are in every database alike;
- one table of (group, plane) spans (`core_spans` once over every plane): a GPU's database
  holds its own plane's device events only, so its device marker is its own cell (and the
  host's database, the longest of a group's cells: `CoreSteps.host_markers`);
- one `plane_unions` run: the events counted once into (group, host or GPU) cells, each
  group's host events gathered and sorted once, then merged with each GPU's own (already
  sorted by line) for that GPU's sweep.
The host's own database (`host_step_db`) is one `plane_unions` run of one database holding
every device plane: the counted events are found in the same two passes that sort them into
groups, 4 bytes per counted event instead of 16 (`_counted_events`' positions, then the
sweep's copy of them by group: 160 MB at 10M events).
Field for field the databases `build_step_db` gives (tests/unit/analysis/
test_plane_unions.py). None where this does not apply: numpy asked for
(TB_PROFILE_PURE_STEPS=1), a (group, plane) table large beside the events, or a host event
nested in a device event of one GPU's database among several (nesting is per line, so never
in a decoded profile): the caller then builds them one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.forest import Forest
from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.analysis.steps.compiled_sweep import compiled_sweep, sweep
from tb_profile_plugin.analysis.steps.step_db import (
    NUM_TYPES,
    StepDb,
    StepSpans,
    _device_markers,
    _longest_of_cells,
    _signed,
    host_markers,
    step_db_of_unions,
    step_spans,
)

#: The unions of a batch of databases take at most this many int64 cells per event (beyond a
#: floor): many groups (hundreds of thousands of steps) take the GPUs a few at a time.
_UNION_CELLS_PER_EVENT = 0.5
_UNION_CELLS_FLOOR = 1 << 20


def planes_with_device_events(table: EventTable) -> set[int]:
    """The accelerator planes that hold events, read from the lines (no pass over events)."""
    bounds = table.line_bounds
    filled = np.flatnonzero(np.diff(bounds) > 0)
    planes = np.unique(table.plane_index[bounds[filled]]).tolist()
    accelerator = table.accelerator_planes
    return {int(p) for p in planes if accelerator[p]}


@dataclass(frozen=True)
class CoreSteps:
    """`core_step_dbs`' databases, and the markers the host's own database reads (its host
    markers are theirs, its device markers the longest of every plane's cells)."""

    dbs: list[StepDb]
    host_markers: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # build_step_db's


@dataclass(frozen=True)
class _Columns:
    """The columns `plane_unions` reads, as it reads them."""

    types: np.ndarray  # int8
    groups: np.ndarray
    plane: np.ndarray
    device: np.ndarray  # bool
    parent: np.ndarray | None
    start: np.ndarray  # int64
    end: np.ndarray  # int64


def _columns(forest: Forest, types: np.ndarray, on_device: np.ndarray) -> _Columns:
    table = forest.table
    parent = forest.nesting.parent
    return _Columns(np.ascontiguousarray(types, np.int8), _signed(forest.group_id),
                    _signed(table.plane_index), np.ascontiguousarray(on_device, np.bool_),
                    None if parent is None else _signed(parent),
                    np.ascontiguousarray(table.start_ps, np.int64),
                    np.ascontiguousarray(table.end_ps, np.int64))


def core_step_dbs(forest: Forest, classified: tuple[np.ndarray, np.ndarray, bool],
                  planes: Sequence[int], host_ranges: bool = False,
                  pure: bool | None = None) -> CoreSteps | None:
    """Per plane of `planes` (GPU planes, in this order): `build_step_db(forest, (own, ...),
    host_ranges)` where `own` is the grouped types of `classified` with every other device
    plane's events -1; None where the compiled way does not apply (module docstring)."""
    types, on_device, has_device = classified
    g_count = forest.num_groups
    num_planes = len(forest.table.profile.planes)
    if not planes or not compiled_sweep(pure) or not len(types):
        return None
    cells = g_count * num_planes
    if cells == 0 or cells > len(types) // 4 + (1 << 20):
        return None
    col = _columns(forest, types, on_device)
    host_begin, host_end = host_markers(col.types, col.device, col.groups, col.start, col.end,
                                        g_count)
    first = np.full(cells, np.iinfo(np.int64).max, np.int64)
    last = np.full(cells, -1, np.int64)
    if not host_ranges:  # (PyTorch's steps are their host ranges: no device marker read)
        sweep().core_spans(col.types, col.groups, col.plane, col.device, col.start,
                               col.end, num_planes, first, last)
    by_plane = first.reshape(g_count, num_planes), last.reshape(g_count, num_planes)
    spans = [step_spans(host_begin, host_end, by_plane[0][:, p], by_plane[1][:, p],
                        forest.step_num, has_device, host_ranges) for p in planes]
    del by_plane
    dev_begin, dev_end = host_begin, host_end  # (host ranges: no device marker read)
    if not host_ranges:
        keys = np.flatnonzero(first != np.iinfo(np.int64).max)  # the cells with events
        dev_begin, dev_end = _longest_of_cells(keys, first[keys], last[keys], num_planes,
                                               g_count)
        del keys
    del first, last
    found = _together(col, num_planes, [[p] for p in planes], spans, has_device, host_ranges)
    if found is None:
        return None
    return CoreSteps(found, (host_begin, host_end, dev_begin, dev_end))


def host_step_db(forest: Forest, classified: tuple[np.ndarray, np.ndarray, bool],
                 host_ranges: bool = False,
                 markers: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
                 pure: bool | None = None) -> StepDb | None:
    """`build_step_db(forest, classified, host_ranges, markers)` (`classified`: the grouped
    types) as one `plane_unions` database of every device plane; None where the compiled way
    does not apply."""
    types, on_device, has_device = classified
    table = forest.table
    if not compiled_sweep(pure) or not len(types):
        return None
    col = _columns(forest, types, on_device)
    if markers is None:
        host_begin, host_end = host_markers(col.types, col.device, col.groups, col.start,
                                            col.end, forest.num_groups)
        markers = (host_begin, host_end, host_begin, host_end)
        if not host_ranges:
            markers = (host_begin, host_end, *_device_markers(
                col.types, col.device, col.groups, col.plane, col.start, col.end,
                forest.num_groups))
    spans = step_spans(*markers, forest.step_num, has_device, host_ranges)
    every_device_plane = np.flatnonzero(table.accelerator_planes[:-1]).tolist()
    found = _together(col, len(table.profile.planes), [every_device_plane], [spans],
                      has_device, host_ranges)
    return None if found is None else found[0]


def _together(col: _Columns, num_planes: int, dbs: list[list[int]], spans: list[StepSpans],
              has_device: bool, host_ranges: bool) -> list[StepDb] | None:
    """The step databases `dbs` (each the host's events and those of its planes) of
    `plane_unions` runs, a batch of databases at a time; None where a run refuses."""
    g_count = len(spans[0].begin_ps)
    per_batch = max(1, int(max(len(col.types) * _UNION_CELLS_PER_EVENT, _UNION_CELLS_FLOOR))
                    // ((NUM_TYPES + 1) * max(g_count, 1)))
    found: list[StepDb] = []
    for lo in range(0, len(dbs), per_batch):
        batch = list(range(lo, min(len(dbs), lo + per_batch)))
        slot = np.full(num_planes, -1, np.int64)
        for i, k in enumerate(batch):
            slot[dbs[k]] = i
        out = np.zeros((len(batch), NUM_TYPES + 1, g_count), np.int64)
        if not sweep().plane_unions(
                col.types, col.groups, col.plane, col.device, col.parent, col.start, col.end,
                slot, len(batch),
                np.concatenate([spans[k].begin_ps for k in batch], dtype=np.int64),
                np.concatenate([spans[k].finish_ps for k in batch], dtype=np.int64),
                np.concatenate([spans[k].valid for k in batch], dtype=np.bool_), out):
            return None
        found.extend(step_db_of_unions(spans[k], out[i], has_device,
                                       drop_partial=not host_ranges, keep_empty=host_ranges)
                     for i, k in enumerate(batch))
    return found
