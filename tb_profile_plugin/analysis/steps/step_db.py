"""Step database: per step, where its time went, in the profiler's event types.

1. Classify grouped events (xprof_reference.md §3.3 "Step events"):
   - device (GPU planes, events with a group): memcpy H2D/D2H/D2D by name; collectives by
     kernel name (`nccl*`, `rccl*`), HLO op or HLO category (`all-reduce`, `all-gather`, ...:
     xspace/producers/ `is_collective`); other kernels are 16-bit compute when their
     `shape` says `half` (or, without a shape, the name says `half`/`fp16`), else 32-bit
     compute; XLA's transfer ops (TPU: `copy-start`, `send`, `recv` by HLO op) are device
     to device and the ops waiting for them (`copy-done`, `send-done`, `recv-done`) the
     device waiting for the device, both the "Device to device" category (breakdown.py);
     memcpys keep their direction (H2D is input, D2H output);
   - host: explicit markers (`train*`, `test*`, `TraceContext*` without `/`) and each group's
     root, unless it is an implicit root (`FunctionRun`, `SessionRun`, `RunGraph`,
     `ExecutorState::Process`), are step markers; `Eager*Execute`/`FunctionRun` are
     skipped; infeed or H2D memcpy -> H2D; H2H memcpy -> H2H; with a device, launches
     (`correlation_id`) and `ExecutorState::Process` -> kernel launch (HOST_PREPARE);
     `IteratorGetNext*` and PyTorch's DataLoader `__next__` -> input wait; `*Compile*` ops
     -> compilation; the rest -> host
     compute.
   With a device, only groups that also ran on the device keep their host events. Unlike the
   reference's current release, host events are merged for GPU profiles too: without them
   kernel launch and input wait could never show on a GPU profile (docs/analysis.md).
2. Step span: the longest host marker, unless the device marker is not inside it, then the
   device marker; CPU-only: the host marker. The device marker is the longest of the group's
   per-core spans (first to last event of the group on one device plane), as the reference
   takes the longest device step marker: a step is one core's, never a span from one core's
   run of the group to another's (TF <= 2.4 replicas may run a group far apart in time).
   Every event of the group inside the step counts, so the breakdown is the slowest core's
   (with what other cores did of the group meanwhile).
3. Non-overlap: where events of several types overlap, the highest `EventType` wins. Time of
   type t in a step = |union of types >= t| - |union of types > t|, clipped to the step; each
   union is one vectorised sweep over all steps at once. What no event covers is UNKNOWN.
   A zero-length event where nothing of its type or higher is open keeps its type until the
   next end of that type, as the reference's sweep does (analysis/steps/instant_spans.py).
   Where the optional compiled sweep is built (analysis/steps/_step_*.c), the counted
   events are counted into their groups, each group sorted by start on its own, and one pass
   per group gives every threshold's union, the instants' spans included; the counted events
   and the per-core spans are one pass over the columns each (10M events on 8 GPUs: about
   6 s -> 1 s for the host's and its cores' databases; then every GPU's own and the host's
   built together, analysis/steps/core_step_dbs.py, and step 1's per-event rules one pass,
   compiled_types.py: 1.3 -> 0.65 s with the types). The numpy version stays: the reference
   the tests compare it with, the fallback, and TB_PROFILE_PURE_STEPS=1 keeps it.
4. A step is kept only if it has device compute (with a device) or host compute (CPU only).
5. With more than `PARTIAL_STEP_MIN` steps, the first and the last are dropped: a capture
   starts and stops mid-step, so they are usually partial (the reference does the same).
PyTorch (`build_step_db(host_ranges=True)`, docs/pytorch.md "Steps"): each
`ProfilerStep#N` host range is a step, exactly that range (kernels running past its end count
in the next step or nowhere), every one of them (steps 4 and 5 do not apply: the profiler's
schedule opens and closes the capture on step boundaries, so no step is partial).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.column_sizes import whole_group_parts
from tb_profile_plugin.analysis.events.forest import PRODUCER_RULE, Forest
from tb_profile_plugin.analysis.events.op_names import OpCategory, parse_op
from tb_profile_plugin.analysis.events.sort_order import group_time_order
from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.analysis.steps.compiled_sweep import (  # noqa: F401 (named here too)
    PURE_STEPS_ENV,
    compiled_sweep,
    sweep,
)
from tb_profile_plugin.analysis.steps.compiled_types import compiled_types
from tb_profile_plugin.analysis.steps.instant_spans import instant_spans
from tb_profile_plugin.xspace.producers import (
    CORRELATION_ID_STAT,
    STEP_NAME_STAT,
    is_collective,
    is_transfer,
    is_transfer_wait,
)
from tb_profile_plugin.xspace.producers.pytorch import memcpy_direction
from tb_profile_plugin.xspace.producers.pytorch_roles import is_dataloader
from tb_profile_plugin.xspace.unique_rows import unique_ints


class EventType(enum.IntEnum):
    """Step-time event types, in priority order (a higher value wins an overlap)."""

    UNKNOWN_TIME = 0
    HOST_COMPUTE = 1
    HOST_COMPILE = 2
    HOST_TO_HOST = 3
    HOST_TO_DEVICE = 4
    HOST_PREPARE = 5
    DEVICE_COLLECTIVES = 6
    HOST_WAIT_INPUT = 7
    DEVICE_TO_DEVICE = 8
    DEVICE_TO_HOST = 9
    DEVICE_COMPUTE_32 = 10
    DEVICE_COMPUTE_16 = 11
    DEVICE_WAIT_DEVICE = 12
    DEVICE_WAIT_HOST = 13


NUM_TYPES = len(EventType)
#: Above this many steps, the first and last (usually cut by the capture window) are dropped.
PARTIAL_STEP_MIN = 5
IMPLICIT_ROOT_NAMES = frozenset({"FunctionRun", "SessionRun", "RunGraph",
                                 "ExecutorState::Process"})
_NOT_CLASSIFIED = -1
_MARKER = -2


@dataclass(frozen=True)
class StepDb:
    """Kept steps in time order; `type_ps[i, t]` is step i's time of EventType t."""

    step_num: np.ndarray  # int64
    group_id: np.ndarray  # int64
    begin_ps: np.ndarray  # int64
    duration_ps: np.ndarray  # int64
    type_ps: np.ndarray  # int64 [steps, NUM_TYPES]; UNKNOWN_TIME = the uncovered rest
    has_device: bool
    num_dropped: int  # groups with a span but no compute of the required kind
    num_partial_dropped: int  # first/last steps dropped as partial (0 or 2)

    def __len__(self) -> int:
        return len(self.step_num)


def _explicit_marker(name: str) -> bool:
    return name.startswith(("train", "test", "TraceContext")) and "/" not in name


def _not_real_compute(name: str) -> bool:
    return name.startswith(("EagerExecute", "EagerLocalExecute", "EagerKernelExecute",
                            "FunctionRun")) or _explicit_marker(name)


def _host_name_type(name: str, has_device: bool) -> int:
    """EventType of a host event by name alone (-1: decided per event, see classify)."""
    if _not_real_compute(name):
        return _MARKER if _explicit_marker(name) else _NOT_CLASSIFIED
    op = parse_op(name)
    if op.category == OpCategory.MEMCPY_H2D or op.type in ("InfeedEnqueue",
                                                           "InfeedEnqueueTuple"):
        return EventType.HOST_TO_DEVICE
    if op.category == OpCategory.MEMCPY_H2H:
        return EventType.HOST_TO_HOST
    if has_device and name.lower().startswith("executorstate::process"):
        return EventType.HOST_PREPARE
    if name.lower().startswith("iteratorgetnext") or is_dataloader(name):
        return EventType.HOST_WAIT_INPUT
    if op.category == OpCategory.TENSORFLOW and "Compile" in op.type:
        return EventType.HOST_COMPILE
    return EventType.HOST_COMPUTE


_KINETO_COPY_TYPES = {"HtoD": EventType.HOST_TO_DEVICE, "DtoH": EventType.DEVICE_TO_HOST,
                      "DtoD": EventType.DEVICE_TO_DEVICE, "PtoP": EventType.DEVICE_TO_DEVICE,
                      "HtoH": EventType.HOST_TO_HOST}


def _device_name_type(name: str) -> int:
    # PyTorch's `Memcpy HtoD (Pageable -> Device)` (CUPTI's XPlane names go through parse_op)
    kineto_copy = memcpy_direction(name) if name.startswith("Memcpy ") else ""
    if kineto_copy in _KINETO_COPY_TYPES:
        return _KINETO_COPY_TYPES[kineto_copy]
    op = parse_op(name)
    if op.category == OpCategory.MEMCPY_H2D:
        return EventType.HOST_TO_DEVICE
    if op.category == OpCategory.MEMCPY_D2H:
        return EventType.DEVICE_TO_HOST
    if op.category == OpCategory.MEMCPY_D2D:
        return EventType.DEVICE_TO_DEVICE
    if op.category == OpCategory.MEMCPY_H2H:
        return EventType.HOST_TO_HOST
    lowered = name.lower()
    return (EventType.DEVICE_COMPUTE_16 if ("half" in lowered or "fp16" in lowered)
            else EventType.DEVICE_COMPUTE_32)


def is_host_to_device(device_event_name: str) -> bool:
    """Whether a device event of this name is a host-to-device copy, input time of the step
    breakdown (the rule `classify` applies to device events by name)."""
    return _device_name_type(device_event_name) == EventType.HOST_TO_DEVICE


def classify(forest: Forest, grouped_only: bool = True,
             pure: bool | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """(event type per event (int8), -1 unclassified / -2 marker; device mask; has_device).
    `grouped_only`: events outside every group are unclassified (-1). `pure`: as
    `compiled_sweep` (the per-event rules in one compiled pass; the same types either way)."""
    table = forest.table
    on_device = table.on_device
    has_device = bool(on_device.any())
    # int8: 14 types and two negative codes; one byte per event instead of eight (the types
    # are held through the step database and the op tables: 70 MB less at 10M events).
    host_types = np.array([_host_name_type(n, has_device) for n in table.names], np.int8)
    device_types = np.array([_device_name_type(n) for n in table.names], np.int8)
    if compiled_sweep(pure):
        types = compiled_types(table, host_types, device_types, has_device)
    else:
        types = _numpy_types(table, on_device, host_types, device_types, has_device)
    # A group's root marks its step unless it is an implicit root (a function, session or
    # executor run the runtime marks as a root on its own): those carry no step name.
    # (Host events only: the device rules above never read or write them.)
    if forest.root_rule != PRODUCER_RULE:
        implicit = table.names_matching(lambda s: s in IMPLICIT_ROOT_NAMES)
        roots = forest.root_event
        types[roots[~implicit[table.name_id[roots]] & ~on_device[roots]]] = _MARKER
    # A producer that grouped before writing marks each step's host event with `step_name`
    # (the reference's implicit step markers); our own grouping writes no stats.
    step_names = table.str_stat_codes(STEP_NAME_STAT)[0]
    if step_names.strides != (0,):  # (one shared -1 where no line has the stat)
        types[~on_device & (step_names >= 0)] = _MARKER
    if grouped_only:
        types[forest.group_id < 0] = _NOT_CLASSIFIED
    return types, on_device, has_device


def _numpy_types(table: EventTable, on_device: np.ndarray, host_types: np.ndarray,
                 device_types: np.ndarray, has_device: bool) -> np.ndarray:
    """`classify`'s per-event rules before the markers, mask by mask (the reference)."""
    types = np.where(on_device, device_types[table.name_id], host_types[table.name_id])
    if has_device:
        launch = (~on_device) & table.int_stat_at_least(CORRELATION_ID_STAT, 0) & (types >= 0)
        types[launch & (types == EventType.HOST_COMPUTE)] = EventType.HOST_PREPARE
        shape_code, shapes = table.str_stat_codes("shape")
        is_half = np.array([("half" in text) for text in shapes] + [False])
        computes = on_device & ((types == EventType.DEVICE_COMPUTE_16)
                                | (types == EventType.DEVICE_COMPUTE_32)) & (shape_code >= 0)
        types[computes] = np.where(is_half[shape_code[computes]], EventType.DEVICE_COMPUTE_16,
                                   EventType.DEVICE_COMPUTE_32)
        # XLA's own word where the profile holds its modules: the kernel's instruction
        # computes in 16-bit (or narrower) floats (xspace/hlo_modules.py).
        low = on_device & (types == EventType.DEVICE_COMPUTE_32) & table.canonical.low_precision
        types[low] = EventType.DEVICE_COMPUTE_16
        # (The canonical columns are not needed, nor built, on CPU-only profiles.)
        # XLA's transfers run as ops of their own (TPU): device to device, and their waits
        # the device waiting for the device; a memcpy keeps its direction (H2D stays input).
        starts, waits = transfer_events(table)
        computing = on_device & ((types == EventType.DEVICE_COMPUTE_16)
                                 | (types == EventType.DEVICE_COMPUTE_32))
        types[computing & starts] = EventType.DEVICE_TO_DEVICE
        types[computing & waits] = EventType.DEVICE_WAIT_DEVICE
        collective = collective_events(table)
        types[on_device & collective & (types >= 0)] = EventType.DEVICE_COLLECTIVES
    return types


def collective_events(table: EventTable) -> np.ndarray:
    """Per event: a collective by its HLO op, HLO category or kernel name (producers/)."""
    canon = table.canonical
    by_text = np.array([is_collective(text) for text in canon.texts] + [False])
    by_name = table.names_matching(is_collective)[table.name_id]
    return by_name | by_text[canon.hlo_op] | by_text[canon.op_type]


def transfer_events(table: EventTable) -> tuple[np.ndarray, np.ndarray]:
    """Per event: (starts a transfer, waits for one) by its HLO op (producers/
    `is_transfer`, `is_transfer_wait`: copy-start/-done, send/recv and their dones)."""
    canon = table.canonical
    starts = np.array([is_transfer(text) for text in canon.texts] + [False])
    waits = np.array([is_transfer_wait(text) for text in canon.texts] + [False])
    return starts[canon.hlo_op], waits[canon.hlo_op]


def union_per_group(group: np.ndarray, start: np.ndarray, end: np.ndarray,
                     num_groups: int) -> np.ndarray:
    """Length of the union of intervals, per group (int64 ps)."""
    if len(group) == 0:
        return np.zeros(num_groups, np.int64)
    order = group_time_order(group, start)
    if compiled_sweep():  # (reads the rows through the order: no sorted copies)
        return _compiled_group_unions(group, start, end, order, num_groups)
    return union_sorted(group[order], start[order], end[order], num_groups)


def union_sorted(g: np.ndarray, s: np.ndarray, e: np.ndarray, num_groups: int) -> np.ndarray:
    """`union_per_group` of intervals already sorted by (group, start): any subsequence of a
    sorted sequence is sorted too, so callers sort once and select per threshold."""
    if len(g) and compiled_sweep():
        return _compiled_group_unions(g, s, e, None, num_groups)
    out = np.zeros(num_groups, np.int64)
    if len(g):
        _add_unions(out, g, s, e)
    return out


def _signed(codes: np.ndarray) -> np.ndarray:
    """`codes` as the compiled sweep reads them: contiguous signed integers of 1, 2, 4 or 8
    bytes (others widened to int64)."""
    if codes.dtype.kind != "i":
        codes = codes.astype(np.int64)
    return np.ascontiguousarray(codes)


def _compiled_group_unions(group: np.ndarray, start: np.ndarray, end: np.ndarray,
                           order: np.ndarray | None, num_groups: int) -> np.ndarray:
    """`_add_unions` by the compiled sweep (analysis/steps/_step_*.c), rows taken in
    `order` (None: as they are): one pass, no int64 offsets to keep within range."""
    out = np.zeros(num_groups, np.int64)
    sweep().group_unions(
        _signed(group), np.ascontiguousarray(start, np.int64),
        np.ascontiguousarray(end, np.int64),
        None if order is None else np.ascontiguousarray(order, np.int64), out)
    return out


def _add_unions(out: np.ndarray, g: np.ndarray, s: np.ndarray, e: np.ndarray) -> None:
    """Adds each group's union length (rows sorted by group, then start) into `out`."""
    first = np.ones(len(g), bool)
    first[1:] = g[1:] != g[:-1]
    # Running max of ends within each group: groups laid end to end (the k-th group of the
    # rows shifted by k spans), so they never interact. The shifts must stay within int64:
    # hundreds of thousands of steps over a long capture pass 2^63 (10M longer: 208,899
    # groups over 193 s wrapped from the 47,919th on), so rows of too many groups for their
    # span are taken in two halves of whole groups (each group alone fits: times < 2^58 ps).
    low = int(s.min())
    span = int(e.max()) - low + 1
    num_here = int(np.count_nonzero(first))
    if num_here > 1 and num_here * span >= 2**62:
        half = int(np.flatnonzero(first)[num_here // 2])
        _add_unions(out, g[:half], s[:half], e[:half])
        _add_unions(out, g[half:], s[half:], e[half:])
        return
    # In place where it can be (three columns live at most, not six).
    offset = np.cumsum(first, dtype=np.int64)
    offset -= 1
    offset *= span
    offset -= low
    running = e + offset
    np.maximum.accumulate(running, out=running)
    previous = np.empty_like(running)
    previous[1:] = running[:-1]
    del running
    previous -= offset  # (the first row of each group is replaced below)
    del offset
    previous[first] = np.iinfo(np.int64).min
    np.maximum(s, previous, out=previous)
    covered = np.subtract(e, previous, out=previous)
    np.maximum(covered, 0, out=covered)
    if int(covered.sum()) < 2**53:  # float64 sums of non-negative ints below 2**53 are exact
        out += np.bincount(g, weights=covered, minlength=len(out)).astype(np.int64)
    else:
        np.add.at(out, g, covered)


def build_step_db(
    forest: Forest, classified: tuple[np.ndarray, np.ndarray, bool] | None = None,
    host_ranges: bool = False,
    markers: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> StepDb:
    """The step database; `classified` is `classify(forest)` when the caller has it.

    `host_ranges` (PyTorch's `ProfilerStep#N`, docs/pytorch.md "Steps"): every group with a
    host marker is a step spanning exactly that marker (device time outside it is not the
    step's), whatever ran in it, and no step is dropped as partial. `markers`: (host begin,
    host end, device begin, device end) per group where the caller has them
    (analysis/steps/core_step_dbs.py)."""
    types, on_device, has_device = classified or classify(forest)
    table = forest.table
    groups = forest.group_id
    g_count = forest.num_groups
    start, end = table.start_ps, table.end_ps
    if markers is not None:
        host_begin, host_end, dev_begin, dev_end = markers
    else:
        host_begin, host_end = host_markers(types, on_device, groups, start, end, g_count)
        dev_begin = dev_end = host_begin  # (host ranges: no device marker read)
        if not host_ranges:
            dev_begin, dev_end = _device_markers(types, on_device, groups, table.plane_index,
                                                 start, end, g_count)
    spans = step_spans(host_begin, host_end, dev_begin, dev_end, forest.step_num, has_device,
                       host_ranges)
    return step_db_from_spans(spans, types, groups, start, end, has_device,
                              drop_partial=not host_ranges, parent=forest.nesting.parent,
                              keep_empty=host_ranges)


def host_markers(types: np.ndarray, on_device: np.ndarray, groups: np.ndarray,
                 start: np.ndarray, end: np.ndarray, g_count: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per group, the span (begin, end) of its longest host marker; -1 where it has none."""
    markers = np.flatnonzero((types == _MARKER) & ~on_device)
    marker_len = end[markers] - start[markers]
    order = np.lexsort((-marker_len, groups[markers]))
    markers = markers[order]
    first = np.ones(len(markers), bool)
    first[1:] = groups[markers][1:] != groups[markers][:-1]
    host_begin = np.full(g_count, -1, np.int64)
    host_end = np.full(g_count, -1, np.int64)
    host_begin[groups[markers[first]]] = start[markers[first]]
    host_end[groups[markers[first]]] = end[markers[first]]
    return host_begin, host_end


def step_spans(host_begin: np.ndarray, host_end: np.ndarray, dev_begin: np.ndarray,
               dev_end: np.ndarray, step_num: np.ndarray, has_device: bool,
               host_ranges: bool) -> StepSpans:
    """Each group's step span from its host and device markers (module docstring, step 2;
    `host_ranges`: `build_step_db`'s)."""
    if host_ranges:
        return StepSpans(host_begin, host_end, host_begin >= 0, step_num)
    if has_device:
        has_dev_span = dev_end >= 0
        host_contains = (host_begin >= 0) & (host_begin <= dev_begin) & (host_end >= dev_end)
        use_host = host_contains | ~has_dev_span
        begin = np.where(use_host, host_begin, dev_begin)
        finish = np.where(use_host, host_end, dev_end)
        valid = has_dev_span  # host events count only for groups that ran on the device
    else:
        begin, finish = host_begin, host_end
        valid = host_begin >= 0
    return StepSpans(begin, finish, valid, step_num)


def _device_markers(types: np.ndarray, on_device: np.ndarray, groups: np.ndarray,
                    plane: np.ndarray, start: np.ndarray, end: np.ndarray, g_count: int,
                    pure: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`_longest_core_spans` of the classified grouped device events: where the compiled
    sweep is built and a table of every (group, plane) cell is small beside the events, one
    pass folds each event into its cell (no index of the device events, no sort of their
    keys, no `ufunc.at`); else the numpy reference."""
    num_planes = int(plane.max()) + 1 if len(plane) else 1
    cells = g_count * num_planes
    if not compiled_sweep(pure) or cells == 0 or cells > len(types) // 4 + (1 << 20):
        return _longest_core_spans(np.flatnonzero(on_device & (groups >= 0) & (types >= 0)),
                                   groups, plane, start, end, g_count)
    first = np.full(cells, np.iinfo(np.int64).max, np.int64)
    last = np.full(cells, -1, np.int64)
    sweep().core_spans(np.ascontiguousarray(types, np.int8), _signed(groups),
                           _signed(plane), np.ascontiguousarray(on_device, np.bool_),
                           np.ascontiguousarray(start, np.int64),
                           np.ascontiguousarray(end, np.int64), num_planes, first, last)
    keys = np.flatnonzero(first != np.iinfo(np.int64).max)  # the cells that have events
    return _longest_of_cells(keys, first[keys], last[keys], num_planes, g_count)


def _longest_core_spans(device_events: np.ndarray, groups: np.ndarray, plane: np.ndarray,
                        start: np.ndarray, end: np.ndarray, g_count: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Per group, the device marker: the longest of its cores' own spans (first to last event
    of the group on one device plane; ties: the earlier), as the reference takes the longest
    device step marker. (begin, end) per group; end -1 where the group ran on no device.

    Never one span across cores: cores may run the same group far apart in time (TF <= 2.4
    replicas), and a span from one core's run to another's would be mostly a gap."""
    if len(device_events) == 0:
        return (np.full(g_count, np.iinfo(np.int64).max, np.int64),
                np.full(g_count, -1, np.int64))
    ev_group = groups[device_events].astype(np.int64)
    ev_plane = plane[device_events].astype(np.int64)
    num_planes = int(ev_plane.max()) + 1
    keys, key_of = unique_ints(ev_group * num_planes + ev_plane, return_inverse=True)
    begin = np.full(len(keys), np.iinfo(np.int64).max, np.int64)
    finish = np.full(len(keys), -1, np.int64)
    np.minimum.at(begin, key_of, start[device_events])
    np.maximum.at(finish, key_of, end[device_events])
    return _longest_of_cells(keys, begin, finish, num_planes, g_count)


def _longest_of_cells(keys: np.ndarray, begin: np.ndarray, finish: np.ndarray,
                      num_planes: int, g_count: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group, the longest span of its (group, plane) cells `keys` (ascending, each
    group * num_planes + plane; ties: the earlier begin, then the lower plane): (begin, end)
    per group, end -1 where the group has no cell."""
    dev_begin = np.full(g_count, np.iinfo(np.int64).max, np.int64)
    dev_end = np.full(g_count, -1, np.int64)
    if len(keys) == 0:
        return dev_begin, dev_end
    key_group = keys // num_planes  # keys are sorted, so by group too
    order = np.lexsort((begin, begin - finish, key_group))
    first = np.ones(len(order), bool)
    first[1:] = key_group[order][1:] != key_group[order][:-1]
    best = order[first]
    dev_begin[key_group[best]] = begin[best]
    dev_end[key_group[best]] = finish[best]
    return dev_begin, dev_end


def _instant_spans_in_parts(types: np.ndarray, groups: np.ndarray, start: np.ndarray,
                            end: np.ndarray) -> tuple[np.ndarray, ...]:
    """`instant_spans` a few whole groups at a time: a group's spans depend on its own events
    only, so its sorts and keys are the part's temporaries, not several columns of every
    counted event (3.8M at 10M events). The spans come in another order, which no figure
    depends on (they are sorted with the events by group and start next)."""
    chunk = column_sizes.CHUNK_EVENTS
    if len(groups) <= chunk or not np.any(end == start):
        return instant_spans(types, groups, start, end)
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    parts = []
    for lo, hi in whole_group_parts(sorted_groups, chunk):
        rows = order[lo:hi]
        parts.append(instant_spans(types[rows], sorted_groups[lo:hi], start[rows], end[rows]))
    return tuple(np.concatenate(column) for column in zip(*parts, strict=True))


def _counted_events(types: np.ndarray, groups: np.ndarray,
                    parent: np.ndarray | None, pure: bool | None = None) -> np.ndarray:
    """The classified events in a group, less those `_enclosed_by_own_kind` where the nesting
    is known; found a chunk of events at a time (no index or mask of every event), or by the
    compiled sweep in two passes over the columns (count, then fill)."""
    if compiled_sweep(pure) and len(types):
        columns = (np.ascontiguousarray(types, np.int8), _signed(groups),
                   None if parent is None else _signed(parent))
        found = np.empty(sweep().counted_events(*columns, None), np.int64)
        sweep().counted_events(*columns, found)
        return found
    parts = []
    chunk = column_sizes.CHUNK_EVENTS
    for lo in range(0, len(types), chunk):
        hi = min(len(types), lo + chunk)
        part = np.flatnonzero((types[lo:hi] >= 0) & (groups[lo:hi] >= 0))
        part += lo
        if parent is not None:
            part = part[~_enclosed_by_own_kind(part, types, groups, parent)]
        parts.append(part)
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _enclosed_by_own_kind(ev: np.ndarray, types: np.ndarray, groups: np.ndarray,
                          parent: np.ndarray) -> np.ndarray:
    """Per event of `ev`: its parent (which encloses it on its line) is in the same group with
    a type at least its own. Such an event changes no step figure: in every union of types
    >= t that holds it the parent is there too and covers it (clipped to the same step span);
    an instant inside it is covered; and its end or start is never the one that ends an
    instant's span before the parent's own start or end would give the same union
    (analysis/steps/instant_spans.py). Dropping them leaves the outermost events of each kind,
    a few percent of a real profile's events."""
    up = parent[ev]
    has = up >= 0
    np.maximum(up, 0, out=up)
    return has & (groups[up] == groups[ev]) & (types[up] >= types[ev])


@dataclass(frozen=True)
class StepSpans:
    """Per group: its step's span [begin_ps, finish_ps), whether it is a step, its number."""

    begin_ps: np.ndarray  # int64
    finish_ps: np.ndarray  # int64
    valid: np.ndarray  # bool
    step_num: np.ndarray  # int64


def step_db_from_spans(spans: StepSpans, types: np.ndarray, groups: np.ndarray,
                       start: np.ndarray, end: np.ndarray, has_device: bool,
                       drop_partial: bool = True, parent: np.ndarray | None = None,
                       keep_empty: bool = False, pure: bool | None = None) -> StepDb:
    """The step database of groups whose spans are known: steps 3-5 of the module docstring.

    Per event: `types` (classify's), `groups` (its group or -1), `start` and `end` (ps).
    `drop_partial`: whether the first and last of many steps are dropped as cut by the
    capture window (not for steps that are whole program executions). `parent`: the events'
    nesting, when known; it only saves work (`_enclosed_by_own_kind`), the result is the
    same. `keep_empty`: valid steps are kept even without compute (step 4 skipped). `pure`:
    as `compiled_sweep` (the same figures either way)."""
    ev = _counted_events(types, groups, parent, pure)
    if compiled_sweep(pure):
        union_at_least = _compiled_unions(ev, spans, types, groups, start, end)
    else:
        union_at_least = _numpy_unions(ev, spans, types, groups, start, end)
    del ev
    return step_db_of_unions(spans, union_at_least, has_device, drop_partial, keep_empty)


def step_db_of_unions(spans: StepSpans, union_at_least: np.ndarray, has_device: bool,
                      drop_partial: bool = True, keep_empty: bool = False) -> StepDb:
    """`step_db_from_spans` once the unions per type threshold and group are known."""
    begin, finish, valid, step_num = spans.begin_ps, spans.finish_ps, spans.valid, spans.step_num
    type_ps = (union_at_least[:-1] - union_at_least[1:]).T.copy()
    duration = np.where(valid, finish - begin, 0)
    type_ps[:, EventType.UNKNOWN_TIME] = duration - union_at_least[EventType.HOST_COMPUTE]

    if has_device:
        computes = type_ps[:, EventType.DEVICE_COMPUTE_16] + type_ps[:, EventType.DEVICE_COMPUTE_32]
    else:
        computes = type_ps[:, EventType.HOST_COMPUTE]
    kept = valid if keep_empty else valid & (computes > 0)
    order = np.flatnonzero(kept)
    order = order[np.argsort(begin[order], kind="stable")]
    partial = 0
    if drop_partial and len(order) > PARTIAL_STEP_MIN:
        order, partial = order[1:-1], 2
    return StepDb(
        step_num=step_num[order],
        group_id=order.astype(np.int64),
        begin_ps=begin[order],
        duration_ps=duration[order],
        type_ps=type_ps[order],
        has_device=has_device,
        num_dropped=int(np.count_nonzero(valid & ~kept)),
        num_partial_dropped=partial,
    )


def _compiled_unions(ev: np.ndarray, spans: StepSpans, types: np.ndarray, groups: np.ndarray,
                     start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """`_numpy_unions` by the compiled sweep: the counted events `ev` counted into their groups,
    each group sorted by start on its own (a few lines' runs), then one pass per group gives
    every threshold's union, the instants' spans included (no sort of all the events, no
    per-threshold selections, no added rows, no gathered copies of the columns)."""
    g_count = len(spans.begin_ps)
    union_at_least = np.zeros((NUM_TYPES + 1, g_count), np.int64)
    if len(ev) == 0 or g_count == 0:
        return union_at_least
    sweep().type_unions(
        np.ascontiguousarray(types, np.int8), _signed(groups),
        np.ascontiguousarray(start, np.int64), np.ascontiguousarray(end, np.int64),
        np.ascontiguousarray(ev, np.int64), np.ascontiguousarray(spans.begin_ps, np.int64),
        np.ascontiguousarray(spans.finish_ps, np.int64),
        np.ascontiguousarray(spans.valid, np.bool_), union_at_least)
    return union_at_least


def _numpy_unions(ev: np.ndarray, spans: StepSpans, types: np.ndarray, groups: np.ndarray,
                  start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per type threshold t (rows 0..NUM_TYPES, the last all 0) and group: the length of the
    union of the group's counted events `ev` of type >= t, instants' spans included, clipped
    to its step (0 for groups that are not steps)."""
    begin, finish, valid = spans.begin_ps, spans.finish_ps, spans.valid
    g_count = len(begin)
    ev_type, ev_group, ev_start, ev_end = types[ev], groups[ev], start[ev], end[ev]
    del ev
    # Zero-length events keep their type current until the next end, as the reference's sweep
    # does (analysis/steps/instant_spans.py).
    extra = _instant_spans_in_parts(ev_type, ev_group, ev_start, ev_end)
    if len(extra[0]):
        ev_type, ev_group, ev_start, ev_end = (np.concatenate([a, b]) for a, b in zip(
            (ev_type, ev_group, ev_start, ev_end), extra, strict=True))

    # Events of valid groups, clipped to their step.
    keep = valid[ev_group]
    ev_group, ev_type = ev_group[keep], ev_type[keep]
    ev_start = np.maximum(ev_start[keep], begin[ev_group])
    ev_end = np.minimum(ev_end[keep], finish[ev_group])
    # One sort by (group, start) of the events left after clipping; each type's threshold
    # selects from it, still sorted. A type no event has leaves the union above it unchanged.
    # The empty ones dropped first, column by column (each copy replaces its column), then
    # sorted: no index of the kept events beside gathered copies of their groups and starts.
    nonempty = ev_end > ev_start
    ev_group = ev_group[nonempty]
    ev_type = ev_type[nonempty]
    ev_start = ev_start[nonempty]
    ev_end = ev_end[nonempty]
    del nonempty
    order = group_time_order(ev_group, ev_start)
    ev_group = ev_group[order]
    ev_type = ev_type[order]
    ev_start = ev_start[order]
    ev_end = ev_end[order]
    del order
    present = np.zeros(NUM_TYPES, bool)
    present[unique_ints(ev_type)[0]] = True

    # Per type threshold, the union of the types at or above it, a few whole groups at a time
    # (groups are independent: each part's selections are its own temporaries, not copies of
    # every event's columns per threshold).
    union_at_least = np.zeros((NUM_TYPES + 1, g_count), np.int64)
    for lo, hi in whole_group_parts(ev_group, column_sizes.CHUNK_EVENTS):
        g, ty, s, e = ev_group[lo:hi], ev_type[lo:hi], ev_start[lo:hi], ev_end[lo:hi]
        for t in np.flatnonzero(present).tolist():
            sel = ty >= t
            union_at_least[t] += union_sorted(g[sel], s[sel], e[sel], g_count)
    for t in range(NUM_TYPES - 1, -1, -1):
        if not present[t]:
            union_at_least[t] = union_at_least[t + 1]
    return union_at_least
