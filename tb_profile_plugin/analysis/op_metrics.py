"""Op metrics: per op, how often it ran and how much time it took, on the host and the device.

Host (xprof_reference.md §3.3 "Host op metrics db"): events whose name parses to an op
(TensorFlow `name:Type`, JAX, tf.data `Iterator::...`, memcpy); user TraceMes and runtime
internals are ignored. Events that carry a `tf_op` stat naming an op (allocator events inside
the op) count as runs of that op, as the reference counts them (they take no time).
Self time = duration minus the durations of the op events directly nested in it on the same
line. Each line adds IDLE = (last op end - first op start) - the
sum of self times on that line.

Device: each kernel or memcpy on a GPU plane is an op named after the TensorFlow op that
launched it (`tf_op` stat; `name:Type`) and the kernel; the `tf_op_*` columns aggregate them
per TensorFlow op (occurrences = the most any one kernel ran, times summed), as the overview's
top ops do. Each device line adds its IDLE the same way.

An op is eager when it runs under `EagerKernelExecute` and not under `ExecutorState::Process`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events import EventTable
from tb_profile_plugin.analysis.forest import Forest
from tb_profile_plugin.analysis.nesting import compute_nesting, under
from tb_profile_plugin.analysis.op_names import Op, OpCategory, is_tf_op_name, parse_op
from tb_profile_plugin.analysis.step_db import EventType
from tb_profile_plugin.xspace.schema import is_device_plane

IDLE = "IDLE"


@dataclass(frozen=True)
class OpTable:
    """One row per op; the IDLE row (if any) is the last. Times in ps."""

    name: list[str]
    type: list[str]
    category: list[str]
    occurrences: np.ndarray  # int64
    total_ps: np.ndarray  # int64
    self_ps: np.ndarray  # int64
    eager_self_ps: np.ndarray  # int64
    min_ps: np.ndarray  # int64 (smallest single run)

    def __len__(self) -> int:
        return len(self.name)

    @property
    def idle_ps(self) -> int:
        return int(self.self_ps[-1]) if self.name and self.name[-1] == IDLE else 0

    def without_idle(self) -> OpTable:
        if not self.name or self.name[-1] != IDLE:
            return self
        cut = slice(0, len(self.name) - 1)
        return OpTable(self.name[cut], self.type[cut], self.category[cut],
                       self.occurrences[cut], self.total_ps[cut], self.self_ps[cut],
                       self.eager_self_ps[cut], self.min_ps[cut])


@dataclass(frozen=True)
class OpMetrics:
    host: OpTable
    device: OpTable
    device_tf_ops: OpTable  # device ops summed per TensorFlow op (no IDLE)
    compute_16bit_ps: int
    compute_32bit_ps: int

    @property
    def device_tf_ops_with_idle(self) -> OpTable:
        """device_tf_ops plus the device IDLE row."""
        idle = self.device.idle_ps
        t = self.device_tf_ops
        if not self.device.name or self.device.name[-1] != IDLE:
            return t
        one = np.array([idle], np.int64)
        zero = np.zeros(1, np.int64)
        return OpTable(t.name + [IDLE], t.type + [IDLE], t.category + [IDLE],
                       np.append(t.occurrences, zero), np.append(t.total_ps, one),
                       np.append(t.self_ps, one), np.append(t.eager_self_ps, zero),
                       np.append(t.min_ps, zero))


_CATEGORY_NAMES = {
    OpCategory.TENSORFLOW: "TensorFlow", OpCategory.JAX: "JAX", OpCategory.TF_DATA: "tf.data",
    OpCategory.MEMCPY_H2D: "Memcpy", OpCategory.MEMCPY_D2H: "Memcpy",
    OpCategory.MEMCPY_D2D: "Memcpy", OpCategory.MEMCPY_H2H: "Memcpy",
}


def _eager(table: EventTable, forest: Forest) -> np.ndarray:
    """Per event: under EagerKernelExecute and not under ExecutorState::Process (same line)."""
    eager_root = table.event_mask(table.names_matching(lambda s: s == "EagerKernelExecute"))
    executor = table.event_mask(table.names_matching(lambda s: s == "ExecutorState::Process"))
    parent = forest.nesting.parent
    return under(eager_root, parent) & ~under(executor, parent)


def _aggregate(
    keys: list[str], key_of_event: np.ndarray, duration: np.ndarray, self_time: np.ndarray,
    eager: np.ndarray, types: list[str], categories: list[str], idle_ps: int | None,
) -> OpTable:
    k = len(keys)
    occurrences = np.bincount(key_of_event, minlength=k).astype(np.int64)
    total = np.zeros(k, np.int64)
    own = np.zeros(k, np.int64)
    eager_own = np.zeros(k, np.int64)
    smallest = np.full(k, np.iinfo(np.int64).max, np.int64)
    np.add.at(total, key_of_event, duration)
    np.add.at(own, key_of_event, self_time)
    np.add.at(eager_own, key_of_event, np.where(eager, self_time, 0))
    np.minimum.at(smallest, key_of_event, duration)
    used = occurrences > 0
    rows = np.flatnonzero(used)
    table = OpTable(
        [keys[i] for i in rows], [types[i] for i in rows], [categories[i] for i in rows],
        occurrences[rows], total[rows], own[rows], eager_own[rows], smallest[rows],
    )
    if idle_ps is None:
        return table
    one = np.array([idle_ps], np.int64)
    return OpTable(table.name + [IDLE], table.type + [IDLE], table.category + [IDLE],
                   np.append(table.occurrences, 0), np.append(table.total_ps, one),
                   np.append(table.self_ps, one), np.append(table.eager_self_ps, 0),
                   np.append(table.min_ps, 0))


def _self_times(table: EventTable, events: np.ndarray) -> tuple[np.ndarray, int]:
    """Self time of each of `events` (minus direct children among them) and the IDLE per line."""
    start, end = table.start_ps[events], table.end_ps[events]
    line = table.line_index[events]
    counts = np.bincount(line, minlength=len(table.lines))
    bounds = np.zeros(len(table.lines) + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])
    nesting = compute_nesting(start, end, bounds)  # events are line-major already
    child_sum = np.zeros(len(events), np.int64)
    has_parent = nesting.parent >= 0
    np.add.at(child_sum, nesting.parent[has_parent], (end - start)[has_parent])
    self_time = np.maximum(end - start - child_sum, 0)
    idle = 0
    present = np.flatnonzero(counts)
    if len(present):
        first = np.full(len(table.lines), np.iinfo(np.int64).max, np.int64)
        last = np.full(len(table.lines), np.iinfo(np.int64).min, np.int64)
        np.minimum.at(first, line, start)
        np.maximum.at(last, line, end)
        per_line_self = np.bincount(line, weights=self_time, minlength=len(table.lines))
        idle = int(np.sum(np.maximum(last[present] - first[present]
                                     - per_line_self[present].astype(np.int64), 0)))
    return self_time, idle


def build_op_metrics(forest: Forest, event_types: np.ndarray) -> OpMetrics:
    table = forest.table
    device_plane = np.array([is_device_plane(p.name) for p in table.profile.planes] + [False])
    on_device = device_plane[table.plane_index]
    parsed = [parse_op(n) for n in table.names]
    is_op_name = np.array([op.is_op for op in parsed], bool)
    eager = _eager(table, forest)

    # Host ops: events named like ops, plus events carrying a `tf_op` stat that names an op
    # (allocations inside the op): the reference counts those as zero-time runs of the op.
    op_code, op_texts = table.str_stat_codes("tf_op")
    host_by_name = ~on_device & is_op_name[table.name_id]
    tagged = np.flatnonzero((op_code >= 0) & ~on_device & ~host_by_name)
    tagged_ops: list[Op | None] = []
    for text in op_texts:  # distinct tf_op texts, not events
        op = parse_op(text)
        if not op.is_op and is_tf_op_name(text):  # `tf_op` often holds the name alone
            op = Op(OpCategory.TENSORFLOW, text, "")
        tagged_ops.append(op if op.is_op else None)
    extra = tagged[[tagged_ops[c] is not None for c in op_code[tagged]]] if len(tagged) else tagged
    is_host_op = host_by_name.copy()
    is_host_op[extra] = True
    host_events = np.flatnonzero(is_host_op)  # line-major order
    self_time, idle = _self_times(table, host_events)
    index: dict[str, int] = {}
    types_by_key: list[str] = []
    categories_by_key: list[str] = []

    def key_of(op: Op) -> int:
        if op.name not in index:
            index[op.name] = len(index)
            types_by_key.append(op.type)
            categories_by_key.append(_CATEGORY_NAMES.get(op.category, ""))
        return index[op.name]

    name_to_key = np.full(len(parsed), -1, np.int64)
    named = np.bincount(table.name_id[host_events[host_by_name[host_events]]],
                        minlength=len(parsed))
    for name_id in np.flatnonzero(named).tolist():  # distinct op names, in name order
        name_to_key[name_id] = key_of(parsed[name_id])
    event_key = name_to_key[table.name_id[host_events]]
    if len(extra):
        positions = np.searchsorted(host_events, extra)
        code_key = {int(c): key_of(op) for c in np.unique(op_code[extra]).tolist()
                    if (op := tagged_ops[c]) is not None}
        event_key[positions] = [code_key[c] for c in op_code[extra].tolist()]
    host = _aggregate(list(index), event_key, table.duration_ps[host_events], self_time,
                      eager[host_events], types_by_key, categories_by_key,
                      int(idle) if len(host_events) else None)

    # Device ops: kernel name under its TensorFlow op.
    device_events = np.flatnonzero(on_device)
    pairs = np.stack([op_code[device_events], table.name_id[device_events]], axis=1)
    unique_pairs, inverse = np.unique(pairs, axis=0, return_inverse=True)
    dev_key_of_event = inverse.ravel().astype(np.int64)
    labels: list[str] = []
    tf_of_key: list[str] = []
    type_of_key: list[str] = []
    for code, name_id in unique_pairs.tolist():  # one per distinct (op, kernel), not per event
        kernel = table.names[name_id]
        tf_op = op_texts[code] if code >= 0 else ""
        parsed_tf = parse_op(tf_op) if tf_op else None
        if parsed_tf is not None and parsed_tf.is_op:
            tf_of_key.append(parsed_tf.name)
            type_of_key.append(parsed_tf.type)
        else:  # an unusual op name is still the op's name, never the kernel's
            name, _, op_type = tf_op.partition(":")
            tf_of_key.append(name or kernel)
            type_of_key.append(op_type or _device_kind(kernel))
        labels.append(f"{tf_op}/{kernel}" if tf_op else kernel)
    dev_self, dev_idle = _self_times(table, device_events)
    device = _aggregate(labels, dev_key_of_event, table.duration_ps[device_events],
                        dev_self, eager[device_events], type_of_key, type_of_key,
                        int(dev_idle) if len(device_events) else None)
    device_tf_ops = _per_tf_op(device.without_idle(), tf_of_key, type_of_key, dev_key_of_event)
    compute16 = int(table.duration_ps[device_events][
        event_types[device_events] == EventType.DEVICE_COMPUTE_16].sum())
    compute32 = int(table.duration_ps[device_events][
        event_types[device_events] == EventType.DEVICE_COMPUTE_32].sum())
    return OpMetrics(host, device, device_tf_ops, compute16, compute32)


def _device_kind(kernel_name: str) -> str:
    """A type for device events no TensorFlow op launched: copies and collectives by name."""
    op = parse_op(kernel_name)
    if op.category in (OpCategory.MEMCPY_H2D, OpCategory.MEMCPY_D2H, OpCategory.MEMCPY_D2D,
                       OpCategory.MEMCPY_H2H):
        return "Memcpy"
    if kernel_name.lower().startswith("nccl"):
        return "Collective"
    return ""


def _per_tf_op(device: OpTable, tf_of_key: list[str], type_of_key: list[str],
               key_of_event: np.ndarray) -> OpTable:
    """Device rows summed per TensorFlow op; occurrences = the most any one kernel ran.

    `device` has one row per key, in key order (every key ran at least once)."""
    names = sorted(set(tf_of_key))
    index = {n: i for i, n in enumerate(names)}
    per_key_occ = np.bincount(key_of_event, minlength=len(tf_of_key))
    target = np.array([index[n] for n in tf_of_key], np.int64)
    occurrences = np.zeros(len(names), np.int64)
    total = np.zeros(len(names), np.int64)
    np.maximum.at(occurrences, target, per_key_occ)
    np.add.at(total, target, device.self_ps)
    types = [""] * len(names)
    for k, t in enumerate(type_of_key):
        types[target[k]] = t
    return OpTable(names, types, types, occurrences, total, total.copy(),
                   np.zeros(len(names), np.int64), np.zeros(len(names), np.int64))
