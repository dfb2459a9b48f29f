"""Tracks derived from a GPU plane's kernels: Steps, TensorFlow Ops and XLA Ops.

A raw GPU capture holds only stream lines (one per CUDA stream). Like the reference's viewer,
the trace shows above them:

* **Steps**: one event per step, from the first to the last device event of that step. The
  step of a device event is its `group_id` stat when the file has one, else the group the
  event forest (analysis/forest.py: host step roots reach kernels through `correlation_id`)
  gives it; the event is named by the step number.
* **XLA Modules**: consecutive kernels of one XLA module execution (the canonical module,
  xspace/producers.py, and `run_id` where the kernels carry it), named by the module.
* **TensorFlow Ops** (or **Framework Ops** for JAX op paths): consecutive kernels (in start
  order over all streams) of the same canonical op become one event spanning them, named by
  the op. JAX's constant `tf_op = "XlaModule:"` is no op, so it never draws one bar.
* **XLA Ops**: the same over (module execution, HLO op), so two executions never merge.

A track is derived only where the producer did not write a line of that name itself
(trace/index.py).

Each derived event remembers the first device event it covers (`source`, a row of the plane's
`EventTable`), so the details pane can show that event's stats. Nothing here loops over events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events import EventTable, build_event_table
from tb_profile_plugin.analysis.profile_cache import profile_forest
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import CanonicalColumns

STEPS = "Steps"
TF_OPS = "TensorFlow Ops"
FRAMEWORK_OPS = "Framework Ops"
XLA_MODULES = "XLA Modules"
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
    """Steps, XLA Modules, TensorFlow/Framework Ops and XLA Ops of one device plane (those
    that have data)."""
    plane = profile.planes[plane_index]
    table = build_event_table(profile, lambda name: name == plane.name)
    if len(table) == 0:
        return []
    tracks = []
    steps = _steps(profile, plane_index, table)
    if steps is not None:
        tracks.append(steps)
    canon = table.canonical
    framework = TF_OPS if canon.framework_typed.any() else FRAMEWORK_OPS
    execution = _pair_key(canon.module, table.int_stat("run_id"))
    op_label, op_texts = _framework_labels(canon)
    for title, key, label, texts in (
            (XLA_MODULES, execution, canon.module, canon.texts),
            (framework, op_label, op_label, op_texts),
            (XLA_OPS, _pair_key(execution, canon.hlo_op), canon.hlo_op, canon.texts)):
        ops = _runs(table, title, key, label, texts)
        if ops is not None:
            tracks.append(ops)
    return tracks


def _framework_labels(canon: CanonicalColumns) -> tuple[np.ndarray, list[str]]:
    """Per event, a label code for its framework op: `name:Type` where the producer wrote the
    type (TensorFlow, as its own TensorFlow Ops line names them), else the op's name."""
    typed = np.where(canon.framework_typed, canon.op_type, -1)
    pairs = np.stack([canon.op_name, typed], axis=1)
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    texts = [f"{canon.text(n)}:{canon.text(t)}" if t >= 0 else canon.text(n)
             for n, t in uniq.tolist()]  # per distinct op, not per event
    label = inverse.ravel().astype(np.int64)
    return np.where(canon.op_name >= 0, label, -1), texts


def _pair_key(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """One int64 key per (first, second) pair; -1 where both are -1."""
    both = np.stack([first, second], axis=1)
    _, inverse = np.unique(both, axis=0, return_inverse=True)
    key = inverse.ravel().astype(np.int64)
    return np.where((first < 0) & (second < 0), -1, key)


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


def _runs(table: EventTable, title: str, key: np.ndarray, label: np.ndarray,
          texts: list[str]) -> DerivedTrack | None:
    """Consecutive events (in start order over the plane) with one `key` become one event,
    named by the `label` text of its first event; events whose label is -1 are left out."""
    events = np.flatnonzero((label >= 0) & (key >= 0))
    if len(events) == 0:
        return None
    by_time = events[np.lexsort((events, table.start_ps[events]))]
    start, end, _keys, first = _spans(table, key, by_time)
    return DerivedTrack(title, start, end, label[first], texts, first, table)
