"""Tracks derived from a GPU plane's kernels: Steps, XLA Modules, framework ops and XLA Ops.

A raw GPU capture holds only stream lines (one per CUDA/HIP stream). Like the reference's
viewer, the trace shows above them, from the canonical columns (xspace/producers/) and never
from a producer's raw stats:

* **Steps**: one event per step, from the first to the last device event of that step. The
  step of a device event is its `group_id` stat when the file has one, else the group the
  event forest (analysis/events/forest.py: host step roots reach kernels through `correlation_id`)
  gives it; the event is named by the step number. A profile without step markers whose steps
  are the executions of its jitted step function (analysis/steps/execution_steps.py, the overview's
  rule "executions") has those steps: a device event belongs to the step whose span (one
  execution's start to the next's) holds its start, numbered as the overview numbers them.
* **XLA Modules**: one event per execution of an XLA program, named by its canonical module.
  The executions are analysis/steps/xla_executions.py's (the same the jitted-functions table and
  the execution steps count): delimited by `run_id`, else by the host-side call that launched
  the kernels (`<module>:XLA GPU module`), else wherever the module changes, including to no
  module: an argument copy or another program between two calls of `jit_f` separates them,
  so back-to-back calls never draw one bar across the idle time between.
* **TensorFlow Ops** (kernels whose producer wrote `name:Type`, TF) or **Framework Ops** (JAX
  op paths): consecutive events in start order over the plane with the same canonical op, in
  the same execution and step, become one event spanning them, named by the op (`name:Type`
  for TF, as TF's own line names them). Events of no op are skipped, not a break. JAX's
  constant `tf_op = "XlaModule:"` is no op (the canonical op is the kernel's JAX op path), so
  no bar spans a whole capture.
* **XLA Ops**: the same over (execution, HLO op): two executions never merge.

A track is derived only where the producer did not write a line of that name itself
(trace/index.py passes the names to `derive_tracks`).

Each derived event remembers the first device event it covers (`source`, a row of the plane's
`EventTable`), so the details pane can show that event's stats. Nothing here loops over events.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.events.table import EventTable, build_event_table
from tb_profile_plugin.analysis.steps.execution_steps import dominant_module, step_of, step_spans
from tb_profile_plugin.analysis.steps.xla_executions import profile_executions
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import GROUP_ID_STAT, CanonicalColumns
from tb_profile_plugin.xspace.unique_rows import unique_rows

STEPS = "Steps"
TF_OPS = "TensorFlow Ops"
FRAMEWORK_OPS = "Framework Ops"
XLA_MODULES = "XLA Modules"
XLA_OPS = "XLA Ops"
#: Names of one track: a producer's line of either name stands for the derived framework ops.
_SAME_TRACK = {TF_OPS: FRAMEWORK_OPS, FRAMEWORK_OPS: TF_OPS}


@dataclass(frozen=True)
class DerivedTrack:
    name: str
    start_ps: np.ndarray  # int64
    end_ps: np.ndarray  # int64
    text_id: np.ndarray  # int64: index into `texts` (the event names)
    texts: list[str]
    source: np.ndarray  # int64: row of the covered first event in `table`
    table: EventTable


def derive_tracks(profile: Profile, plane_index: int,
                  written: Collection[str] = ()) -> list[DerivedTrack]:
    """Steps, XLA Modules, TensorFlow/Framework Ops and XLA Ops of one device plane (those that
    have data), except the tracks named in `written` (the producer's own lines)."""
    plane = profile.planes[plane_index]
    skip = set(written) | {_SAME_TRACK[n] for n in written if n in _SAME_TRACK}
    table = build_event_table(profile, lambda name: name == plane.name)
    if len(table) == 0:
        return []
    tracks = []
    if STEPS not in skip:
        steps = _steps(profile, plane_index, table)
        if steps is not None:
            tracks.append(steps)
    canon = table.canonical
    by_time = np.lexsort((np.arange(len(table)), table.start_ps))
    group = table.int_stat(GROUP_ID_STAT)
    execution = _plane_executions(profile, plane_index)
    framework = TF_OPS if canon.framework_typed.any() else FRAMEWORK_OPS
    op_label, op_texts = _framework_labels(canon)
    for title, key, label, texts in (
            (XLA_MODULES, execution, canon.module, canon.texts),
            (framework, _tuple_key(execution, group, op_label), op_label, op_texts),
            (XLA_OPS, _tuple_key(execution, canon.hlo_op), canon.hlo_op, canon.texts)):
        if title in skip:
            continue
        ops = _runs(table, by_time, title, key, label, texts)
        if ops is not None:
            tracks.append(ops)
    return tracks


def _plane_executions(profile: Profile, plane_index: int) -> np.ndarray:
    """Per event of the plane's table: its XLA execution (analysis/steps/xla_executions.py), -1."""
    executions = profile_executions(profile)
    full = profile_forest(profile).table
    # Both tables list this plane's lines in the same order, so rows correspond.
    return executions.event_execution[full.plane_index == plane_index]


def _framework_labels(canon: CanonicalColumns) -> tuple[np.ndarray, list[str]]:
    """Per event, a label code for its framework op: `name:Type` where the producer wrote the
    type (TensorFlow, as its own TensorFlow Ops line names them), else the op's name."""
    typed = np.where(canon.framework_typed, canon.op_type, -1)
    pairs = np.stack([canon.op_name, typed], axis=1)
    uniq, inverse = unique_rows(pairs)
    texts = [canon.op_label(n, t) for n, t in uniq.tolist()]  # per distinct op, not event
    label = inverse.astype(np.int64)
    return np.where(canon.op_name >= 0, label, -1), texts


def _tuple_key(*columns: np.ndarray) -> np.ndarray:
    """One dense int64 key per distinct tuple of `columns` (-1 is a value like any other)."""
    _, inverse = unique_rows(np.stack(columns, axis=1))
    return inverse.astype(np.int64)


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
    group = table.int_stat(GROUP_ID_STAT)
    step_num: np.ndarray | None = None  # per forest group; None: name steps by group_id
    if not np.any(group >= 0):
        forest = profile_forest(profile)
        full = forest.table
        # Both tables list this plane's lines in the same order, so rows correspond.
        plane_rows = np.flatnonzero(full.plane_index == plane_index)
        group = forest.group_id[plane_rows]
        step_num = forest.step_num
        if not np.any(group >= 0):
            group, step_num = _execution_step_of(profile, table), None
    events = np.flatnonzero(group >= 0)
    if len(events) == 0:
        return None
    order = events[np.lexsort((table.start_ps[events], group[events]))]
    start, end, keys, first = _spans(table, group, order)
    labels = keys if step_num is None else step_num[keys]
    texts = [str(int(v)) for v in labels]
    return DerivedTrack(STEPS, start, end, np.arange(len(texts)), texts, first, table)


def _execution_step_of(profile: Profile, table: EventTable) -> np.ndarray:
    """Per event: its step when the steps are the dominant jitted function's executions
    (their spans, aligned across devices), -1 outside them or without such steps."""
    executions = profile_executions(profile)
    module = dominant_module(executions)
    if module is None:
        return np.full(len(table), -1, np.int64)
    begin, finish, _ = step_spans(executions, module)
    return step_of(begin, finish, table.start_ps)


def _runs(table: EventTable, by_time: np.ndarray, title: str, key: np.ndarray,
          label: np.ndarray, texts: list[str]) -> DerivedTrack | None:
    """Consecutive events of `by_time` (the plane's events in start order) with one `key`
    become one event, named by the `label` text of its first event; events whose label or key
    is -1 are left out (skipped, not a break)."""
    events = by_time[(label[by_time] >= 0) & (key[by_time] >= 0)]
    if len(events) == 0:
        return None
    start, end, _keys, first = _spans(table, key, events)
    return DerivedTrack(title, start, end, label[first], texts, first, table)
