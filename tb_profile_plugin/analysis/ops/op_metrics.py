"""Op metrics: per op, how often it ran and how much time it took, on the host and the device.

Host (xprof_reference.md §3.3 "Host op metrics db"): events whose name parses to an op
(TensorFlow `name:Type`, JAX, tf.data `Iterator::...`, memcpy); user TraceMes and runtime
internals are ignored. Events that carry a `tf_op` stat naming an op (allocator events inside
the op) count as runs of that op, as the reference counts them (they take no time).
Self time = duration minus the durations of the op events directly nested in it on the same
line. Each line adds IDLE = (last op end - first op start) - the
sum of self times on that line.

XLA ops that ran on host threads (XLA's CPU thunks, `hlo_op`) are host ops too, category "XLA".
Calls of the GPU runtime (kernel launches, memsets, copies) that carry the launched op's stats
(JAX on ROCm) are not: they are host ops of their own name, category "Runtime"
(`_runtime_calls_with_op_stats`).

Device: every event on an accelerator's real lines (GPU streams, TPU "XLA Ops"; never a
producer-derived line) is a run of its canonical op (xspace/producers/: the TF op, the JAX
op path, else the HLO op) and its kernel; `device_tf_ops` sums them per op (occurrences = the
most any one kernel ran, times summed), as the overview's top ops do. Times are the device's
own (`device_duration_ps` on TPU). IDLE per device = its span (first start to last end over
all its streams) minus the union of its busy time; devices add up. TPU ops the device placed
(`device_offset_ps`) take their device spans, as the reference: `device_self_and_idle_ps`.

An op is eager when it runs under `EagerKernelExecute` and not under `ExecutorState::Process`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.column_sizes import (
    event_indices,
    narrowest_int,
    whole_group_parts,
)
from tb_profile_plugin.analysis.events.forest import Forest
from tb_profile_plugin.analysis.events.nesting import under
from tb_profile_plugin.analysis.events.op_names import Op, OpCategory, is_tf_op_name, parse_op
from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.analysis.ops.device_time import (
    LineIdle,
    device_self_and_idle_ps,
    line_parents,
    self_times_of,
)
from tb_profile_plugin.analysis.steps.step_db import EventType
from tb_profile_plugin.xspace.producers import (
    HLO_OP_STAT,
    TF_OP_STAT,
    CanonicalColumns,
    PlaneKind,
    is_accelerator_plane,
    plane_kind,
    runtime_call_kind,
)
from tb_profile_plugin.xspace.unique_rows import int64_rows, unique_rows

IDLE = "IDLE"
#: Category of the host rows of runtime calls (`_runtime_calls_with_op_stats`).
RUNTIME_CATEGORY = "Runtime"


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
    device_tf_ops: OpTable  # device ops summed per framework op (no IDLE)
    compute_16bit_ps: int
    compute_32bit_ps: int
    #: Per device op (device_tf_ops names): HLO ops, module, FLOPs and bytes where written.
    device_op_facts: dict[str, OpFacts] = field(default_factory=dict)

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


def _eager(table: EventTable, parent: np.ndarray) -> np.ndarray:
    """Per event: under EagerKernelExecute and not under ExecutorState::Process (same line)."""
    eager_root = table.event_mask(table.names_matching(lambda s: s == "EagerKernelExecute"))
    if not eager_root.any():  # graph-only programs: no walk up the nesting at all
        return eager_root
    executor = table.event_mask(table.names_matching(lambda s: s == "ExecutorState::Process"))
    return under(eager_root, parent) & ~under(executor, parent)


class _OpSums:
    """Per-op sums of runs (`add`, any number of times: integer sums, any order), and the table
    of the ops that ran (`table`)."""

    def __init__(self, num_keys: int) -> None:
        self.occurrences = np.zeros(num_keys, np.int64)
        self.total = np.zeros(num_keys, np.int64)
        self.own = np.zeros(num_keys, np.int64)
        self.eager_own = np.zeros(num_keys, np.int64)
        self.smallest = np.full(num_keys, np.iinfo(np.int64).max, np.int64)

    def add(self, key_of_event: np.ndarray, duration: np.ndarray, self_time: np.ndarray,
            eager: np.ndarray) -> None:
        """`column_sizes.CHUNK_EVENTS` events at a time: numpy widens narrow keys (int8/16)
        to a full intp index for each sum, a 64 MB copy per sum at 8M device events (the
        10M-event overview's peak); a part's is widened once and shared by the five."""
        chunk = column_sizes.CHUNK_EVENTS
        for lo in range(0, len(key_of_event), chunk):
            part = slice(lo, lo + chunk)
            key = key_of_event[part].astype(np.intp)
            own, is_eager = self_time[part], eager[part]
            self.occurrences += np.bincount(key, minlength=len(self.occurrences))
            np.add.at(self.total, key, duration[part])
            np.add.at(self.own, key, own)
            np.add.at(self.eager_own, key[is_eager], own[is_eager])  # (no column of zeros)
            np.minimum.at(self.smallest, key, duration[part])

    def table(self, keys: list[str], types: list[str], categories: list[str],
              idle_ps: int | None) -> OpTable:
        rows = np.flatnonzero(self.occurrences > 0)
        table = OpTable(
            [keys[i] for i in rows], [types[i] for i in rows], [categories[i] for i in rows],
            self.occurrences[rows], self.total[rows], self.own[rows], self.eager_own[rows],
            self.smallest[rows],
        )
        if idle_ps is None:
            return table
        one = np.array([idle_ps], np.int64)
        return OpTable(table.name + [IDLE], table.type + [IDLE], table.category + [IDLE],
                       np.append(table.occurrences, 0), np.append(table.total_ps, one),
                       np.append(table.self_ps, one), np.append(table.eager_self_ps, 0),
                       np.append(table.min_ps, 0))


def _aggregate(
    keys: list[str], key_of_event: np.ndarray, duration: np.ndarray, self_time: np.ndarray,
    eager: np.ndarray, types: list[str], categories: list[str], idle_ps: int | None,
) -> OpTable:
    sums = _OpSums(len(keys))
    sums.add(key_of_event, duration, self_time, eager)
    return sums.table(keys, types, categories, idle_ps)


def build_op_metrics(forest: Forest, event_types: np.ndarray) -> OpMetrics:
    """Op tables (`build_op_tables`) with the device compute precision of the grouped events."""
    compute16, compute32 = compute_precision_ps(forest.table, event_types)
    return dataclasses.replace(build_op_tables(forest.table, forest.nesting.parent),
                               compute_16bit_ps=compute16, compute_32bit_ps=compute32)


def compute_precision_ps(table: EventTable, event_types: np.ndarray) -> tuple[int, int]:
    """Device time (ps) of 16-bit and of 32-bit compute, by the step analysis' event types.
    Summed `column_sizes.CHUNK_EVENTS` events at a time (integer sums: exact in any order):
    the device events' indices, durations and types were ~200 MB beside the analysis at 10M
    events."""
    device = table.accelerator_planes
    compute16 = compute32 = 0
    chunk = column_sizes.CHUNK_EVENTS
    for lo in range(0, len(table), chunk):
        hi = min(lo + chunk, len(table))
        types = event_types[lo:hi]
        is16 = types == EventType.DEVICE_COMPUTE_16
        is32 = types == EventType.DEVICE_COMPUTE_32
        on_device = device[table.plane_index[lo:hi]]
        is16 &= on_device
        is32 &= on_device
        compute16 += int(table.durations_of(np.flatnonzero(is16) + lo).sum())
        compute32 += int(table.durations_of(np.flatnonzero(is32) + lo).sum())
    return compute16, compute32


def build_op_tables(table: EventTable, parent: np.ndarray) -> OpMetrics:
    """Host and device op tables of every event (`parent`: the events' nesting); no steps are
    needed, and the compute precision is left 0 (`build_op_metrics` fills it)."""
    on_device = table.on_device
    parsed = [parse_op(n) for n in table.names]
    is_op_name = np.array([op.is_op for op in parsed], bool)
    eager = _eager(table, parent)

    # Host ops: events named like ops, plus events carrying a `tf_op` stat that names an op
    # (allocations inside the op): the reference counts those as zero-time runs of the op.
    op_code, op_texts = table.str_stat_codes(TF_OP_STAT)
    host_by_name = ~on_device & is_op_name[table.name_id]
    launch = _runtime_calls_with_op_stats(table, op_code, host_by_name)
    if launch is not None:
        host_by_name |= launch
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
    index: dict[str, int] = {}
    types_by_key: list[str] = []
    categories_by_key: list[str] = []

    def key_of(op: Op) -> int:
        if op.name not in index:
            index[op.name] = len(index)
            types_by_key.append(op.type)
            categories_by_key.append(_CATEGORY_NAMES.get(op.category, ""))
        return index[op.name]

    name_to_key = np.full(len(parsed), -1, np.int32)
    named = np.bincount(table.name_id[host_by_name], minlength=len(parsed))
    for name_id in np.flatnonzero(named).tolist():  # distinct op names, in name order
        if parsed[name_id].is_op:
            name_to_key[name_id] = key_of(parsed[name_id])
        else:  # a runtime call carrying the op's stats: a runtime row of its own
            call = table.names[name_id]
            name_to_key[name_id] = key_of(Op(OpCategory.NONE, call,
                                             runtime_call_kind(call) or ""))
            categories_by_key[name_to_key[name_id]] = RUNTIME_CATEGORY
    code_to_key = np.full(len(op_texts), -1, np.int32)
    for c in np.unique(op_code[extra]).tolist():  # distinct tagged ops, after the names
        code_to_key[c] = key_of(tagged_ops[c])  # type: ignore[arg-type]

    def host_keys(lo: int, hi: int, mask: np.ndarray) -> np.ndarray:
        """An event named like an op takes its name's key, a tagged one its `tf_op` text's."""
        key = name_to_key[table.name_id[lo:hi][mask]]
        tagged = ~host_by_name[lo:hi][mask]
        if tagged.any():
            key[tagged] = code_to_key[op_code[lo:hi][mask][tagged]]
        return key

    host = _op_table_by_lines(table, is_host_op, host_keys, eager, list(index), types_by_key,
                              categories_by_key, with_idle=True)

    host = _with_xla_host_ops(table, host, ~on_device & ~is_host_op, eager)
    device, device_tf_ops, facts = _device_ops(table, on_device, eager)
    return OpMetrics(host, device, device_tf_ops, 0, 0, facts)


def _runtime_calls_with_op_stats(table: EventTable, op_code: np.ndarray,
                                 excluded: np.ndarray) -> np.ndarray | None:
    """Host calls of the GPU runtime that enqueue device work (`hipModuleLaunchKernel`,
    `cudaLaunchKernel`, `hipMemsetAsync`, ...: `producers.runtime_call_kind`) and carry the
    op's stats (`tf_op`, `hlo_op`), as JAX's ROCm tracer writes them; None when there are none.

    They are host time spent in the runtime, not runs of XLA ops: each is a host op of its
    own name, typed by what it enqueues ("Kernel launch", "Memset", "Memcpy"), category
    `RUNTIME_CATEGORY`, and the host table keeps its IDLE row. The reference counts the same
    calls (as the op of their `tf_op`, "XlaModule") and the same host IDLE (jax_gpu_conv: 198
    calls, 15,312.015 µs, IDLE 768,474.133 µs; jax_gpu_attention: 150, 3,697.277 µs and
    7,798.408 µs).
    """
    launch_names = table.names_matching(lambda n: runtime_call_kind(n) is not None)
    if not launch_names.any():
        return None
    is_launch = launch_names[table.name_id] & ~table.on_device & ~excluded
    if not is_launch.any():
        return None
    return is_launch & ((op_code >= 0) | (table.str_stat_codes(HLO_OP_STAT)[0] >= 0))


def _op_table_by_lines(table: EventTable, is_op: np.ndarray,
                       key_of: Callable[[int, int, np.ndarray], np.ndarray], eager: np.ndarray,
                       keys: list[str], types: list[str], categories: list[str], *,
                       with_idle: bool) -> OpTable:
    """The op table of the events `is_op` marks, self times among them, summed over parts of
    whole lines (about `column_sizes.CHUNK_EVENTS` events each): an op event's key, time and
    nesting are a part's temporaries, never columns of every op event (on the 2.4M-event
    capture 39 MB less at the analysis' peak). `key_of(lo, hi, mask)`: the keys of the part's
    op events (`mask` over table rows lo..hi). With `with_idle`, an IDLE row per
    `LineIdle`."""
    sums = _OpSums(len(keys))
    idle = LineIdle(len(table.lines))
    for lo, hi in whole_group_parts(table.line_index, column_sizes.CHUNK_EVENTS):
        mask = is_op[lo:hi]  # (compressed slices: no index array of the part's events)
        if not mask.any():
            continue
        line = table.line_index[lo:hi][mask]
        # Gathered copies of the part's starts and ends; the ends become the durations in
        # place once nested, so the times cost 24 bytes per op event at most beside `line`.
        start, duration = table.start_ps[lo:hi][mask], table.end_ps[lo:hi][mask]
        idle.add_spans(line, start, duration)
        parent = line_parents(line, start, duration, len(table.lines))
        np.subtract(duration, start, out=duration)
        del start
        self_time = self_times_of(parent, duration)
        del parent
        idle.add_self_times(line, self_time)
        sums.add(key_of(lo, hi, mask), duration, self_time, eager[lo:hi][mask])
    ran = bool(sums.occurrences.any())
    return sums.table(keys, types, categories, idle.idle_ps() if with_idle and ran else None)


def _device_ops(table: EventTable, on_device: np.ndarray,
                eager: np.ndarray) -> tuple[OpTable, OpTable, dict[str, OpFacts]]:
    """Device ops from the canonical columns: one row per (op, kernel), and per op.

    Times are the device's own (`device_duration_ps`); IDLE is each device's span minus the
    union of its busy time over all its streams, summed over devices.
    """
    device_events = event_indices(on_device)  # (int32: indices only index)
    if len(device_events) == 0:  # CPU only: no device rows, and no canonical columns built
        empty = np.zeros(0, np.int64)
        device = _aggregate([], empty, empty, empty, np.zeros(0, bool), [], [], None)
        return device, _per_tf_op(device, [], [], empty), {}
    canon = table.canonical
    unique_pairs, key_of_event = _op_kernel_keys(canon, device_events)
    first_event = _first_of_each(key_of_event, len(unique_pairs))
    labels: list[str] = []
    op_of_key: list[str] = []
    type_of_key: list[str] = []
    for k, (code, kernel_c) in enumerate(unique_pairs.tolist()):  # per distinct (op, kernel)
        kernel = canon.text(kernel_c)
        op = canon.text(code)
        op_type = canon.text(int(canon.op_type[device_events[first_event[k]]]))
        op_of_key.append(op or kernel)
        type_of_key.append(op_type or _device_kind(kernel))
        labels.append(f"{op}/{kernel}" if op and op != kernel else kernel)
    # The device's own times, or (none written: GPU) the events' durations, no column.
    duration = (table.durations_of(device_events) if canon.device_ps_written is None
                else canon.device_ps_written[device_events])
    dev_self, idle = device_self_and_idle_ps(table, device_events, duration)
    device = _aggregate(labels, key_of_event, duration, dev_self, eager[device_events],
                        type_of_key, type_of_key, idle if len(device_events) else None)
    del duration, dev_self  # summed into the rows: not held through the per-op passes
    per_op = _per_tf_op(device.without_idle(), op_of_key, type_of_key, key_of_event)
    facts = _op_facts(per_op.name, op_of_key, key_of_event, canon, device_events)
    return device, per_op, facts


def _op_kernel_keys(canon: CanonicalColumns, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct (op, kernel) code pairs of `events`, in `unique_rows`' order; each
    event's row among them). Paired `column_sizes.CHUNK_EVENTS` events at a time and the
    parts' pairs merged: the gathered codes, their int64 pairs and the ranks are a part's
    (an int64 pair table of every device event and its unique's temporaries were the
    10M-event overview's peak). The keys only index and are counted: the narrowest type
    (int8 for < 128 distinct pairs)."""
    pairs: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    chunk = column_sizes.CHUNK_EVENTS
    for lo in range(0, len(events), chunk):
        part = events[lo : lo + chunk]
        unique, inverse = unique_rows(int64_rows(canon.op_name[part], canon.kernel[part]))
        pairs.append(unique)
        rows.append(inverse.astype(narrowest_int(len(unique)), copy=False))
    if len(pairs) == 1:
        return pairs[0], rows[0]
    unique, where = unique_rows(np.concatenate(pairs))
    keys = np.empty(len(events), narrowest_int(len(unique)))
    at = 0
    for k, (part_pairs, part_rows) in enumerate(zip(pairs, rows, strict=True)):
        lo = k * chunk
        keys[lo : lo + len(part_rows)] = where[at : at + len(part_pairs)][part_rows]
        at += len(part_pairs)
    return unique, keys


def _first_of_each(key_of_event: np.ndarray, num_keys: int) -> np.ndarray:
    """Per key: the first event that has it (0 for a key none has), taken
    `column_sizes.CHUNK_EVENTS` events at a time: no int64 position of every device event
    (62 MB at the 10M-event overview's peak)."""
    first = np.full(num_keys, len(key_of_event), np.int64)
    chunk = column_sizes.CHUNK_EVENTS
    for lo in reversed(range(0, len(key_of_event), chunk)):  # the last first: earlier win
        part = key_of_event[lo : lo + chunk]
        first[part[::-1]] = np.arange(lo, lo + len(part), dtype=np.int64)[::-1]
    first[first == len(key_of_event)] = 0
    return first


@dataclass(frozen=True)
class OpFacts:
    """What the XLA side says of a device op: its HLO ops and module, FLOPs and bytes."""

    hlo_ops: str  # the distinct HLO ops, comma-separated (a few, then "...")
    module: str
    flops: float  # summed over runs (NaN: not written)
    bytes_accessed: float


_MAX_HLO_LISTED = 3


def _op_facts(op_names: list[str], op_of_key: list[str], key_of_event: np.ndarray,
              canon: CanonicalColumns, events: np.ndarray) -> dict[str, OpFacts]:
    """HLO ops, module and summed FLOPs/bytes per device op (loops over ops, not events)."""
    if not len(events):
        return {}
    position = {n: i for i, n in enumerate(op_names)}
    target_of_key = np.array([position[n] for n in op_of_key], np.int64)
    count = len(op_names)
    flops, has_flops = _summed_figure(canon.flops, target_of_key, key_of_event, events, count)
    nbytes, has_bytes = _summed_figure(canon.bytes_accessed, target_of_key, key_of_event,
                                       events, count)
    pairs = _op_hlo_modules(target_of_key, key_of_event, canon, events)
    hlo: dict[int, list[str]] = {}
    module: dict[int, str] = {}
    for t, h, m in pairs.tolist():  # distinct (op, HLO op, module) triples
        if h >= 0:
            hlo.setdefault(t, []).append(canon.text(h))
        if m >= 0:
            module.setdefault(t, canon.text(m))
    out = {}
    for i, name in enumerate(op_names):
        listed = sorted(set(hlo.get(i, [])))
        text = ", ".join(listed[:_MAX_HLO_LISTED]) + (", ..." if len(listed) > _MAX_HLO_LISTED
                                                      else "")
        out[name] = OpFacts(text, module.get(i, ""),
                            float(flops[i]) if has_flops[i] else float("nan"),
                            float(nbytes[i]) if has_bytes[i] else float("nan"))
    return out


def _summed_figure(figure: np.ndarray, target_of_key: np.ndarray, key_of_event: np.ndarray,
                   events: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Per op (`target_of_key[key_of_event]` of each of `events`): the sum of a canonical
    float figure (FLOPs, bytes) and how many runs wrote it. A figure no line writes (one
    shared NaN, every GPU profile) sums to nothing: no per-event gathers of it."""
    if figure.strides == (0,) and np.isnan(figure[:1]).all():
        return np.zeros(count), np.zeros(count)
    target = target_of_key[key_of_event]
    written = figure[events]
    return (np.bincount(target, weights=np.nan_to_num(written), minlength=count),
            np.bincount(target, weights=~np.isnan(written), minlength=count))


def _op_hlo_modules(target_of_key: np.ndarray, key_of_event: np.ndarray,
                    canon: CanonicalColumns, events: np.ndarray) -> np.ndarray:
    """The distinct (op, HLO op, module) rows of `events` (`unique_rows`' order), made
    `column_sizes.CHUNK_EVENTS` events at a time and merged: not a three-column int64 table
    of every device event (24 bytes each)."""
    parts: list[np.ndarray] = []
    chunk = column_sizes.CHUNK_EVENTS
    for lo in range(0, len(events), chunk):
        part = events[lo : lo + chunk]
        parts.append(unique_rows(int64_rows(target_of_key[key_of_event[lo : lo + chunk]],
                                            canon.hlo_op[part], canon.module[part]))[0])
    return parts[0] if len(parts) == 1 else unique_rows(np.concatenate(parts))[0]


def _with_xla_host_ops(table: EventTable, host: OpTable, candidates: np.ndarray,
                       eager: np.ndarray) -> OpTable:
    """Host ops plus the XLA ops that ran on host threads (XLA's CPU thunks carry `hlo_op`).

    They are named `<module>/<HLO op>` (HLO op names repeat across modules), typed by the HLO
    op's kind (`dot`, `loop_fusion`), category "XLA". IDLE is left as the TensorFlow ops gave it.
    """
    if not _host_lines_may_hold_hlo_ops(table):
        return host  # (and the canonical columns of every event are not built for nothing)
    canon = table.canonical
    is_xla = candidates & (canon.hlo_op >= 0)
    events = np.flatnonzero(is_xla)
    if len(events) == 0:
        return host
    uniq, first, inverse = unique_rows(int64_rows(canon.module[events], canon.hlo_op[events]),
                                       return_index=True)
    names = [f"{canon.text(m)}/{canon.text(h)}" if m >= 0 else canon.text(h)
             for m, h in uniq.tolist()]  # per distinct (module, HLO op)
    types = [canon.text(int(c)) for c in canon.op_type[events[first]].tolist()]
    inverse = inverse.ravel()

    def xla_keys(lo: int, hi: int, mask: np.ndarray) -> np.ndarray:
        """The part's XLA events are `events` between lo and hi, in order."""
        a, b = np.searchsorted(events, [lo, hi]).tolist()
        return inverse[a:b]

    xla = _op_table_by_lines(table, is_xla, xla_keys, eager, names, types,
                             ["XLA"] * len(names), with_idle=False)
    from_tf = host.without_idle()
    idle = host.idle_ps if host.name and host.name[-1] == IDLE else None
    rows = OpTable(from_tf.name + xla.name, from_tf.type + xla.type,
                   from_tf.category + xla.category,
                   np.concatenate([from_tf.occurrences, xla.occurrences]),
                   np.concatenate([from_tf.total_ps, xla.total_ps]),
                   np.concatenate([from_tf.self_ps, xla.self_ps]),
                   np.concatenate([from_tf.eager_self_ps, xla.eager_self_ps]),
                   np.concatenate([from_tf.min_ps, xla.min_ps]))
    if idle is None:
        return rows
    return OpTable(rows.name + [IDLE], rows.type + [IDLE], rows.category + [IDLE],
                   np.append(rows.occurrences, 0), np.append(rows.total_ps, idle),
                   np.append(rows.self_ps, idle), np.append(rows.eager_self_ps, 0),
                   np.append(rows.min_ps, 0))


def _host_lines_may_hold_hlo_ops(table: EventTable) -> bool:
    """Whether a line off the accelerators can give an event an HLO op: host planes only
    through an `hlo_op` stat (producers/columns.py `_host_line_columns`), other planes in more
    ways."""
    for plane, _ in table.lines:
        if is_accelerator_plane(plane.name):
            continue
        if (plane_kind(plane.name) != PlaneKind.HOST
                or plane.stat_metadata.id_of(HLO_OP_STAT) is not None):
            return True
    return False


def _device_kind(kernel_name: str) -> str:
    """A type for device events no TensorFlow op launched: copies and collectives by name."""
    op = parse_op(kernel_name)
    if op.category in (OpCategory.MEMCPY_H2D, OpCategory.MEMCPY_D2H, OpCategory.MEMCPY_D2D,
                       OpCategory.MEMCPY_H2H):
        return "Memcpy"
    lowered = kernel_name.lower()
    if lowered.startswith(("nccl", "rccl")):
        return "Collective"
    if lowered.startswith("__amd_rocclr_copy"):  # ROCm's runtime copy kernels
        return "Memcpy"
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
