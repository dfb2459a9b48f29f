"""Tracks derived from a GPU plane's kernels: Steps, XLA Modules, framework ops and XLA Ops.

A raw GPU capture holds only stream lines (one per CUDA/HIP stream). Like the reference's
viewer, the trace shows above them, from the canonical columns (xspace/producers/) and never
from a producer's raw stats:

* **Steps**: one event per step of the overview's step table, spanning the step as the
  overview counts it (issue 29: the device-busy span of a JAX step was 4 ms where the
  overview's step was 38.9 ms): the host analysis' step database of this GPU plane
  (analysis/steps/profile_steps.py `core_steps`, else the host's `steps`), `begin_ps` to
  `begin_ps + duration_ps`, named by its `step_num`. The overview drops the first and last of
  more than five steps as partial; so does this track.
* **Steps: device busy**: per step, the first to the last device event of that step (the
  part of the step the device worked in). The step of a device event is its `group_id` stat
  when the file has one, else the group the event forest (analysis/events/forest.py: host step
  roots reach kernels through `correlation_id`) gives it; the event is named by the step
  number. A profile without step markers whose steps are the executions of its jitted step
  function (analysis/steps/execution_steps.py, the overview's rule "executions") has those
  steps: a device event belongs to the step whose span (one execution's start to the next's)
  holds its start, numbered as the overview numbers them.
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
  no bar spans a whole capture. A run is also broken where the device did none of the track's
  work for longer than the run's own work justifies (below, "Idle within an op bar").
* **XLA Ops**: the same over (execution, HLO op): two executions never merge.

Idle within an op bar (TensorFlow/Framework Ops and XLA Ops, not Steps or XLA Modules, whose
bars are meant to span a whole step or execution): a bar stands for its op's device work, so
it may bridge the idle stretch between two consecutive events of its op only when that stretch
is at most `_MAX_IDLE_PER_BUSY` (4) times the bar's busy time (the summed durations of its
events). The idle stretch is the time from the latest end of the track's events so far (any
op: an event still running is not idle) to the next event's start. A run is cut at every
stretch longer than that, then each piece is checked again against its own busy time, until
none is: the coarsest split in which no bar holds an idle stretch longer than 4x its work.
Why 4: one execution of an op may leave the device idle between its launches while the host
prepares the next one (a memset then the kernel, cuDNN's plan set up between two kernels); on
the committed captures such stretches reach 2.8x the op's device time (jax_gpu_conv's
`cudnn-conv.1`: a 17 us kernel, 902 us idle, a 301 us kernel), and they stay one bar. Separate
executions of one op in one step with unrelated idle between them show hundreds of times their
work (a TF 2.4 capture: 33.8 us of `MakeTensorFromProto` copies over 13.4 ms, issue 28), and
become one bar per burst of work. The reference (xprof's derived timeline) never breaks a run
for idle time; it avoids that case by deriving its op lines from kernels only (copies get no
op bar at all), which would drop the copies' op names from this track.

A track is derived only where the producer did not write a line of that name itself
(trace/index.py passes the names to `derive_tracks`).

Each derived event remembers the first device event it covers (`source`, a row of the plane's
`EventTable`), so the details pane can show that event's stats. Nothing here loops over events.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from tb_profile_plugin.analysis.events.profile_cache import (
    forget_made,
    profile_forest,
    recording_builds,
    within_build,
)
from tb_profile_plugin.analysis.events.sort_order import group_time_order
from tb_profile_plugin.analysis.events.table import EventTable, build_event_table
from tb_profile_plugin.analysis.steps.execution_steps import dominant_module, step_of, step_spans
from tb_profile_plugin.analysis.steps.profile_steps import profile_steps
from tb_profile_plugin.analysis.steps.xla_executions import plane_rows as plane_rows_of
from tb_profile_plugin.analysis.steps.xla_executions import profile_executions
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import GROUP_ID_STAT, CanonicalColumns
from tb_profile_plugin.xspace.unique_rows import int64_rows, unique_rows

STEPS = "Steps"
STEP_BUSY = "Steps: device busy"
TF_OPS = "TensorFlow Ops"
FRAMEWORK_OPS = "Framework Ops"
XLA_MODULES = "XLA Modules"
XLA_OPS = "XLA Ops"
#: Names of one track: a producer's line of either name stands for the derived framework ops.
_SAME_TRACK = {TF_OPS: FRAMEWORK_OPS, FRAMEWORK_OPS: TF_OPS}
#: An op bar bridges an idle stretch between its op's events of at most this many times its
#: busy time (module docstring, "Idle within an op bar").
_MAX_IDLE_PER_BUSY = 4
#: Rounds of idle cuts at most (each is one numpy pass; a cut shortens a run, which may expose
#: the next: real tracks settle in 1-3 rounds, and the bound keeps a crafted one linear).
_MAX_IDLE_ROUNDS = 32


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
    # The plane's rows of the profile table, whose analyses (forest, executions, canonical
    # columns) the tracks read: both tables list the plane's lines in the same order.
    plane_rows = plane_rows_of(profile_forest(profile).table, plane_index)
    by_time = np.argsort(table.start_ps, kind="stable")  # (= lexsort with positions)
    if STEPS not in skip:
        overview = _overview_steps(profile, plane_index, table, by_time)
        if overview is not None:
            tracks.append(overview)
        busy = _steps(profile, plane_rows, table)
        if busy is not None:
            tracks.append(busy)
    canon = _plane_canonical(profile, plane_rows)
    group = table.int_stat(GROUP_ID_STAT)
    execution = _plane_executions(profile, plane_rows)
    framework = TF_OPS if canon.framework_typed.any() else FRAMEWORK_OPS
    op_label, op_texts = _framework_labels(canon)
    for title, keys, label, texts, idle_cut in (
            (XLA_MODULES, (execution,), canon.module, canon.texts, False),
            (framework, (execution, group, op_label), op_label, op_texts, True),
            (XLA_OPS, (execution, canon.hlo_op), canon.hlo_op, canon.texts, True)):
        if title in skip:
            continue
        ops = _runs(table, by_time, title, keys, label, texts, idle_cut)
        if ops is not None:
            tracks.append(ops)
    return tracks


def prepare(profile: Profile, steps: bool = True) -> list[str]:
    """Builds the analyses every plane's `derive_tracks` reads (the host analysis' steps, with
    `steps`: some plane derives a Steps track; the event forest, the XLA executions, the
    canonical columns), so that what the caller holds meanwhile can be dropped before the
    tracks themselves are made (trace/index.py `build_index`'s `analyses_made`). Returns the
    names of the results this thread's builds made here (not those an earlier view or
    another thread made): the event table, its nesting, the forest, the executions and the
    steps, ~30 bytes per event at an 8-GPU capture of 10M events, which the caller drops once
    the tracks are made (`profile_cache.forget_made`); on an error, drops them before
    raising."""

    def build() -> None:
        if steps:
            profile_steps(profile).core_steps  # noqa: B018 - built and kept with the profile
        profile_executions(profile)
        profile_forest(profile).table.canonical  # noqa: B018

    with recording_builds() as made:
        try:
            # One build: the canonical columns the executions read are those the tracks
            # read, not released at the executions' end and made again in this thread (1.2 s
            # of 5 s at 10M events). Inside `trace_index` (one `per_profile` build) they are
            # kept anyway; this keeps them where `build_index` is called alone too (tests, a
            # damaged cache entry's rebuild). Another thread's build ending meanwhile may
            # still release them (they are then made again). The caller releases them once
            # the tracks are made (trace/index.py `build_index`).
            within_build(build)
        except BaseException:
            forget_made(profile, made)
            raise
    return made


def _plane_canonical(profile: Profile, rows: slice | np.ndarray) -> CanonicalColumns:
    """The plane's rows of the profile table's canonical columns: what the plane's own table
    would compute (each line's columns are its own; only the text codes are numbered
    profile-wide), read from the columns the executions and steps already built, not built
    again for every device plane."""
    full = profile_forest(profile).table
    canon = full.canonical
    count = len(full.plane_index[rows])
    columns: dict[str, Any] = {f.name: _rows_of(getattr(canon, f.name), rows, count)
                               for f in fields(canon)
                               if isinstance(getattr(canon, f.name), np.ndarray)}
    return replace(canon, **columns, made_device_ps=[], trace_durations=lambda: full.durations_of(
        np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows))


def _rows_of(column: np.ndarray, rows: slice | np.ndarray, count: int) -> np.ndarray:
    """`column[rows]`; a column no line wrote (one shared value, stride 0) stays one value."""
    if column.ndim == 1 and column.strides == (0,):
        return np.broadcast_to(column[:1], (count,)) if count else column[:0]
    return column[rows]


def _plane_executions(profile: Profile, rows: slice | np.ndarray) -> np.ndarray:
    """Per event of the plane's table: its XLA execution (analysis/steps/xla_executions.py), -1."""
    return profile_executions(profile).event_execution[rows]


def _framework_labels(canon: CanonicalColumns) -> tuple[np.ndarray, list[str]]:
    """Per event, a label code for its framework op: `name:Type` where the producer wrote the
    type (TensorFlow, as its own TensorFlow Ops line names them), else the op's name."""
    typed = np.where(canon.framework_typed, canon.op_type, -1)
    uniq, inverse = unique_rows(int64_rows(canon.op_name, typed))
    texts = [canon.op_label(n, t) for n, t in uniq.tolist()]  # per distinct op, not event
    label = inverse.astype(np.int64)
    return np.where(canon.op_name >= 0, label, -1), texts


def _spans(table: EventTable, key: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, ...]:
    """For events `order` (sorted so equal consecutive keys form runs): run starts, ends, keys
    and first events."""
    return _cut_spans(table, key, order, _key_changes(key[order]))


def _key_changes(k: np.ndarray) -> np.ndarray:
    """Per position of `k`: whether a new run of equal values starts there."""
    new_run = np.ones(len(k), bool)
    new_run[1:] = k[1:] != k[:-1]
    return new_run


def _cut_spans(table: EventTable, key: np.ndarray, order: np.ndarray,
               new_run: np.ndarray) -> tuple[np.ndarray, ...]:
    """Like `_spans`, with the runs of `order` starting where `new_run` is set. `order` is in
    start order within each run (both callers' orders are), so a run's start is its first
    event's: one gather, not a reduction over every event."""
    cuts = np.flatnonzero(new_run)
    first = order[cuts]
    start = table.start_ps[first]
    end = np.maximum.reduceat(table.end_ps[order], cuts)
    return start, end, key[first], first


def _idle_cuts(table: EventTable, order: np.ndarray, new_run: np.ndarray) -> np.ndarray:
    """`new_run` (runs of `order`, the track's events in start order) with a run also cut
    where the idle stretch before an event is longer than `_MAX_IDLE_PER_BUSY` times the busy
    time of the run it would join, repeated until no piece has such a stretch (module
    docstring, "Idle within an op bar"). One pass per round of cuts, not per event."""
    start = table.start_ps[order]
    end = table.end_ps[order]
    busy_each = end - start
    # Idle before event i+1: from the latest end of the track's events so far to its start.
    idle = np.maximum(start[1:] - np.maximum.accumulate(end)[:-1], 0)
    new_run = new_run.copy()
    for _ in range(_MAX_IDLE_ROUNDS):  # cuts only shorten runs: each round adds some or ends
        cuts = np.flatnonzero(new_run)
        busy = np.add.reduceat(busy_each, cuts)
        run = np.cumsum(new_run) - 1
        cut = ~new_run[1:] & (idle > _MAX_IDLE_PER_BUSY * busy[run[:-1]])
        if not cut.any():
            break
        new_run[1:] |= cut
    return new_run


def _overview_steps(profile: Profile, plane_index: int, table: EventTable,
                    by_time: np.ndarray) -> DerivedTrack | None:
    """The overview's steps of this GPU plane (module docstring, "Steps"); None without."""
    analysis = profile_steps(profile)
    name = profile.planes[plane_index].name
    steps = dict(analysis.core_steps).get(name)
    if steps is None:  # (read only here: the host's database is built on first read)
        steps = analysis.steps
    if len(steps) == 0 or len(by_time) == 0:
        return None
    begin = steps.begin_ps.astype(np.int64)
    end = begin + steps.duration_ps.astype(np.int64)
    # Details: the plane's first event starting in the step (else the last before its end).
    starts = table.start_ps[by_time]
    at = np.searchsorted(starts, begin, "left")
    before_end = np.searchsorted(starts, end, "left") - 1
    pick = np.where(at < np.maximum(before_end + 1, 0), at, np.maximum(before_end, 0))
    source = by_time[np.minimum(pick, len(by_time) - 1)]
    texts = [str(int(v)) for v in steps.step_num.tolist()]
    return DerivedTrack(STEPS, begin, end, np.arange(len(texts)), texts, source, table)


def _steps(profile: Profile, plane_rows: slice | np.ndarray,
           table: EventTable) -> DerivedTrack | None:
    group = table.int_stat(GROUP_ID_STAT)
    step_num: np.ndarray | None = None  # per forest group; None: name steps by group_id
    if not np.any(group >= 0):
        forest = profile_forest(profile)
        group = forest.group_id[plane_rows]
        step_num = forest.step_num
        if not np.any(group >= 0):
            group, step_num = _execution_step_of(profile, table), None
    events = np.flatnonzero(group >= 0)
    if len(events) == 0:
        return None
    order = events[group_time_order(group[events], table.start_ps[events])]
    start, end, keys, first = _spans(table, group, order)
    labels = keys if step_num is None else step_num[keys]
    texts = [str(int(v)) for v in labels]
    return DerivedTrack(STEP_BUSY, start, end, np.arange(len(texts)), texts, first, table)


def _execution_step_of(profile: Profile, table: EventTable) -> np.ndarray:
    """Per event: its step when the steps are the dominant jitted function's executions
    (their spans, aligned across devices), -1 outside them or without such steps."""
    executions = profile_executions(profile)
    module = dominant_module(executions)
    if module is None:
        return np.full(len(table), -1, np.int64)
    begin, finish, _ = step_spans(executions, module)
    return step_of(begin, finish, table.start_ps)


def _runs(table: EventTable, by_time: np.ndarray, title: str, keys: tuple[np.ndarray, ...],
          label: np.ndarray, texts: list[str], idle_cut: bool = False) -> DerivedTrack | None:
    """Consecutive events of `by_time` (the plane's events in start order) with one key (the
    tuple of `keys`' values) become one event, named by the `label` text of its first event;
    events whose label is -1, or whose key is the single column's -1, are left out (skipped,
    not a break). `idle_cut`: a run is also broken at idle stretches its work does not justify
    (`_idle_cuts`). A run starts where any column of the key changes: no dense code per tuple
    is made (a sort of the plane's events per track)."""
    kept = label[by_time] >= 0
    if len(keys) == 1:
        kept &= keys[0][by_time] >= 0
    events = by_time[kept]
    del kept
    if len(events) == 0:
        return None
    new_run = _key_changes(keys[0][events])
    for column in keys[1:]:
        new_run |= _key_changes(column[events])
    if idle_cut:
        new_run = _idle_cuts(table, events, new_run)
    start, end, _keys, first = _cut_spans(table, label, events, new_run)
    return DerivedTrack(title, start, end, label[first], texts, first, table)
