"""Tracks derived from a GPU plane's kernels: Steps, TensorFlow Ops and XLA Ops.

A raw GPU capture holds only stream lines (one per CUDA stream). Like the reference's viewer,
the trace shows above them:

* **Steps**: one event per step, from the first to the last device event of that step. The
  step of a device event is its `group_id` stat when the file has one, else the group the
  event forest (analysis/forest.py: host step roots reach kernels through `correlation_id`)
  gives it; the event is named by the step number.
* **TensorFlow Ops**: consecutive kernels (in start order over all streams) launched by the
  same op (`tf_op` stat) become one event spanning them, named by the op.
* **XLA Ops**: the same over the `hlo_op` stat.

Each derived event remembers the first device event it covers (`source`, a row of the plane's
`EventTable`), so the details pane can show that event's stats. Nothing here loops over events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events import EventTable, build_event_table
from tb_profile_plugin.analysis.profile_cache import profile_forest
from tb_profile_plugin.xspace.model import Profile

STEPS = "Steps"
TF_OPS = "TensorFlow Ops"
XLA_OPS = "XLA Ops"


@dataclass(frozen=True)
class DerivedTrack:
    name: str
    start_ps: np.ndarray  # int64
    end_ps: np.ndarray  # int64
    text_id: np.ndarray  # int64: index into `texts` (the event names)
    texts: list[str]
    source: np.ndarray  # int64: row of the covered first event in `table`
    table: EventTable


def derive_tracks(profile: Profile, plane_index: int) -> list[DerivedTrack]:
    """Steps, TensorFlow Ops and XLA Ops of one device plane (those that have data)."""
    plane = profile.planes[plane_index]
    table = build_event_table(profile, lambda name: name == plane.name)
    if len(table) == 0:
        return []
    tracks = []
    steps = _steps(profile, plane_index, table)
    if steps is not None:
        tracks.append(steps)
    for title, stat in ((TF_OPS, "tf_op"), (XLA_OPS, "hlo_op")):
        ops = _op_runs(table, title, stat)
        if ops is not None:
            tracks.append(ops)
    return tracks


def _spans(table: EventTable, key: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, ...]:
    """For events `order` (sorted so equal consecutive keys form runs): run starts, ends, keys
    and first events."""
    k = key[order]
    new_run = np.ones(len(order), bool)
    new_run[1:] = k[1:] != k[:-1]
    cuts = np.flatnonzero(new_run)
    start = np.minimum.reduceat(table.start_ps[order], cuts)
    end = np.maximum.reduceat(table.end_ps[order], cuts)
    first = order[cuts]
    return start, end, k[cuts], first


def _steps(profile: Profile, plane_index: int, table: EventTable) -> DerivedTrack | None:
    group = table.int_stat("group_id")
    step_num: np.ndarray | None = None  # per forest group; None: name steps by group_id
    if not np.any(group >= 0):
        forest = profile_forest(profile)
        full = forest.table
        # Both tables list this plane's lines in the same order, so rows correspond.
        plane_rows = np.flatnonzero(full.plane_index == plane_index)
        group = forest.group_id[plane_rows]
        step_num = forest.step_num
    events = np.flatnonzero(group >= 0)
    if len(events) == 0:
        return None
    order = events[np.lexsort((table.start_ps[events], group[events]))]
    start, end, keys, first = _spans(table, group, order)
    labels = keys if step_num is None else step_num[keys]
    texts = [str(int(v)) for v in labels]
    return DerivedTrack(STEPS, start, end, np.arange(len(texts)), texts, first, table)


def _op_runs(table: EventTable, title: str, stat: str) -> DerivedTrack | None:
    codes, texts = table.str_stat_codes(stat)
    named = np.array([bool(t) for t in texts] + [False])  # an empty op name is no op
    events = np.flatnonzero(named[codes])
    if len(events) == 0:
        return None
    by_time = events[np.lexsort((events, table.start_ps[events]))]
    start, end, keys, first = _spans(table, codes, by_time)
    return DerivedTrack(title, start, end, keys, texts, first, table)
