"""Memory snapshots: one per allocator event, as columns, per allocator (memory id).

TensorFlow's BFC allocators record a TraceMe on a host thread for every allocation
(`MemoryAllocation`) and deallocation (`MemoryDeallocation`), with the allocator's state
right after it (xprof_reference.md §3.5 "Memory profile"):

    stat                 column               meaning
    allocator_name       memory_id            which allocator: the last written of allocator_name,
                                              device_ordinal, index_on_host
    bytes_reserved       stack_bytes          stack reserved
    bytes_allocated      heap_bytes           heap allocated
    bytes_available      free_bytes           free in the allocator
    fragmentation        fragmentation        0-1: (free - largest free chunk) / free
    peak_bytes_in_use    peak_in_use_bytes    the allocator's peak over its lifetime so far
    requested_bytes      requested_bytes      what the op asked for
    allocation_bytes     allocation_bytes     what the allocator handed out
    addr                 address              the chunk's address
    tf_op                op                   the op that allocated (none written: the
                                              XLA module whose execution encloses it)
    group_id             step_id              the step (from the event forest's groups)
    region_type          region_type          output, temp, persist, ...
    data_type            data_type            a TensorFlow DataType enum value
    shape                shape                "[64,26,26,8]"

Snapshots of an allocator are sorted by time (ties keep file order). Then, as the
reference does: a snapshot outside every step takes the step after the last valid one
before it; a deallocation, which records only sizes, takes the op, region, data type and
shape of the most recent allocation at its address when no deallocation came in between
(`inherited` marks those). Everything is numpy over the events: the only Python loops are
over lines, stats and allocators.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.profile_cache import per_profile, profile_forest
from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import TF_OP_STAT, running_module

ALLOCATION = "MemoryAllocation"
DEALLOCATION = "MemoryDeallocation"
HOST_PLANE_PREFIX = "/host:"

#: TensorFlow's DataType enum (types.proto) as DataTypeString names them; +100 is a ref type.
DATA_TYPE_NAMES = (
    "INVALID", "float", "double", "int32", "uint8", "int16", "int8", "string", "complex64",
    "int64", "bool", "qint8", "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16",
    "complex128", "half", "resource", "variant", "uint32", "uint64", "float8_e5m2",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2fnuz", "int4",
    "uint4", "int2", "uint2",
)


def data_type_name(code: int) -> str:
    """The name TensorFlow gives DataType `code` ("float", "int32_ref"); -1 (absent) is ""."""
    if code < 0:
        return ""
    base, ref = (code - 100, "_ref") if code > 100 else (code, "")
    if base < len(DATA_TYPE_NAMES):
        return DATA_TYPE_NAMES[base] + ref
    return f"DataType({code})"


@dataclass(frozen=True)
class AllocatorSnapshots:
    """The snapshots of one allocator, sorted by time: parallel arrays, texts as codes.

    `op`, `region_type` and `shape` index `texts` (-1: absent); `data_type` is the
    DataType enum value (-1: absent; see `data_type_name`). Times count from the profile's
    origin (`Profile.origin_ns`), like every `start_ps`.
    """

    memory_id: str
    time_ps: np.ndarray  # int64
    is_allocation: np.ndarray  # bool
    stack_bytes: np.ndarray  # int64
    heap_bytes: np.ndarray  # int64
    free_bytes: np.ndarray  # int64
    fragmentation: np.ndarray  # float64, NaN where the event did not say
    peak_in_use_bytes: np.ndarray  # int64
    requested_bytes: np.ndarray  # int64
    allocation_bytes: np.ndarray  # int64
    address: np.ndarray  # int64
    step_id: np.ndarray  # int64
    op: np.ndarray  # int64 code into texts
    region_type: np.ndarray  # int64 code into texts
    data_type: np.ndarray  # int64 DataType
    shape: np.ndarray  # int64 code into texts
    inherited: np.ndarray  # bool: a deallocation whose metadata came from its allocation
    file_order: np.ndarray  # int64: position in the file (planes, lines, events in order)
    texts: list[str]

    def __len__(self) -> int:
        return len(self.time_ps)

    @property
    def in_use_bytes(self) -> np.ndarray:
        """Stack plus heap: what the allocator holds for the program."""
        return self.stack_bytes + self.heap_bytes

    def text(self, code: int) -> str:
        return self.texts[code] if code >= 0 else ""


@dataclass(frozen=True)
class MemorySnapshots:
    """Every allocator's snapshots in one profile, by memory id (sorted by name)."""

    allocators: dict[str, AllocatorSnapshots]
    num_host_events: int  # events on host planes (to explain an empty result)

    @property
    def memory_ids(self) -> list[str]:
        return list(self.allocators)


def build_memory_snapshots(profile: Profile) -> MemorySnapshots:
    """Reads the allocator events of `profile`'s host planes into per-allocator snapshots."""
    has_memory = any(
        plane.name.startswith(HOST_PLANE_PREFIX)
        and {ALLOCATION, DEALLOCATION} & set(plane.event_metadata.names.tolist())
        for plane in profile.planes
    )
    num_host = sum(p.num_events for p in profile.planes if p.name.startswith(HOST_PLANE_PREFIX))
    if not has_memory:
        return MemorySnapshots({}, num_host)
    # The forest over every plane (steps are found on the host, grouped across threads), as
    # the host analysis uses it.
    forest = profile_forest(profile)
    table, group_id = forest.table, forest.group_id
    names = np.array([n in (ALLOCATION, DEALLOCATION) for n in table.names] + [False])
    host = np.array([p.name.startswith(HOST_PLANE_PREFIX) for p in profile.planes] + [False])
    events = np.flatnonzero(names[table.name_id] & host[table.plane_index])
    if len(events) == 0:
        return MemorySnapshots({}, num_host)
    columns = _read_columns(table, events)
    _ops_from_running_modules(forest.nesting.parent, table, events, columns)
    columns["step_id"] = group_id[events]
    allocator_codes, allocator_names = _memory_ids(table, events)
    allocators: dict[str, AllocatorSnapshots] = {}
    order = sorted(range(len(allocator_names)), key=lambda k: allocator_names[k])
    for k in order:
        picked = np.flatnonzero(allocator_codes == k)
        allocators[allocator_names[k]] = _allocator(allocator_names[k], columns, picked)
    return MemorySnapshots(allocators, num_host)


#: The allocators' snapshots of `profile`, computed once per decoded profile.
memory_snapshots = per_profile(build_memory_snapshots)

_INT_STATS = {
    "stack_bytes": "bytes_reserved",
    "heap_bytes": "bytes_allocated",
    "free_bytes": "bytes_available",
    "peak_in_use_bytes": "peak_bytes_in_use",
    "requested_bytes": "requested_bytes",
    "allocation_bytes": "allocation_bytes",
    "address": "addr",
    "data_type": "data_type",
}
_TEXT_STATS = {"op": TF_OP_STAT, "region_type": "region_type", "shape": "shape"}


def _read_columns(table: EventTable, events: np.ndarray) -> dict[str, np.ndarray | list[str]]:
    """Every stat the snapshots need, for `events` (indices into `table`)."""
    columns: dict[str, np.ndarray | list[str]] = {}
    for column, stat in _INT_STATS.items():
        values = table.int_stat(stat)[events]
        columns[column] = values if column in ("address", "data_type") else np.maximum(values, 0)
    columns["fragmentation"] = table.float_stat("fragmentation")[events]
    allocation_id = table.names.index(ALLOCATION) if ALLOCATION in table.names else -1
    columns["is_allocation"] = table.name_id[events] == allocation_id
    columns["time_ps"] = table.start_ps[events]
    columns["file_order"] = events
    texts: dict[str, int] = {}
    for column, stat in _TEXT_STATS.items():
        codes, names = table.str_stat_codes(stat)
        remap = np.array([texts.setdefault(n, len(texts)) for n in names] + [-1], np.int64)
        picked = codes[events]
        columns[column] = remap[np.where(picked < 0, len(names), picked)]
    columns["texts"] = list(texts)
    return columns


#: How far up the nesting an allocation looks for the module it runs in.
_MAX_MODULE_DEPTH = 32


def _ops_from_running_modules(parent: np.ndarray, table: EventTable, events: np.ndarray,
                              columns: dict) -> None:
    """Allocations that name no op (XLA's buffers: JAX writes no `tf_op`) take the module of
    the nearest enclosing execution (producers/ `running_module`): the buffers of
    `jit_train_step`, not an empty op. One step up the nesting per round, for those events."""
    op = columns["op"]
    texts: list[str] = columns["texts"]
    module_of_name = [running_module(n) for n in table.names]
    if not any(module_of_name):
        return
    distinct = sorted({m for m in module_of_name if m})
    code_of = {m: len(texts) + k for k, m in enumerate(distinct)}
    name_code = np.array([code_of[m] if m else -1 for m in module_of_name] + [-1], np.int64)
    todo = np.flatnonzero(op < 0)
    at = parent[events[todo]]
    for _ in range(_MAX_MODULE_DEPTH):
        inside = at >= 0
        todo, at = todo[inside], at[inside]
        if len(todo) == 0:
            break
        found = name_code[table.name_id[at]]
        hit = found >= 0
        op[todo[hit]] = found[hit]
        todo, at = todo[~hit], parent[at[~hit]]
    texts.extend(distinct)


#: The stats that name an event's allocator (its memory id).
_MEMORY_ID_STATS = ("allocator_name", "device_ordinal", "index_on_host")


def _memory_ids(table: EventTable, events: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Allocator of each event: of `allocator_name`, `device_ordinal` and `index_on_host`,
    the one the event writes last, as the reference reads them (xprof 2.24.2 walks an
    event's stats in order, each overwriting the memory id): events of two devices that
    share an allocator name and write their ordinal after it are two allocators, never one
    whose peak mixes both devices' buffers. Events that name none share the memory id ""."""
    name_codes, texts = table.str_stat_codes(_MEMORY_ID_STATS[0])
    names = list(texts)
    picked = np.full(len(events), -1, np.int64)
    written_at = np.full(len(events), -1, np.int64)  # the winning stat's position
    for stat in _MEMORY_ID_STATS:
        at = _stat_positions(table, events, stat)
        if stat == _MEMORY_ID_STATS[0]:
            codes = name_codes[events].astype(np.int64)
        else:
            values = table.int_stat(stat)[events]  # -1 where absent
            codes = np.full(len(events), -1, np.int64)
            for value in np.unique(values[at >= 0]).tolist():  # distinct ordinals, not events
                if str(value) not in names:
                    names.append(str(value))
                codes[(at >= 0) & (values == value)] = names.index(str(value))
        wins = (codes >= 0) & (at > written_at)
        picked[wins] = codes[wins]
        written_at[wins] = at[wins]
    if (picked < 0).any():
        names.append("")  # events that name no allocator share one unnamed memory id
        picked[picked < 0] = len(names) - 1
    used, picked = np.unique(picked, return_inverse=True)  # names no event kept dropped
    return picked.ravel(), [names[k] for k in used.tolist()]


def _stat_positions(table: EventTable, events: np.ndarray, stat_name: str) -> np.ndarray:
    """Per event of `events`: the position of its (last) `stat_name` among its line's stats,
    a key that orders one event's stats as the file lists them; -1 where it has none."""
    positions = np.full(len(table), -1, np.int64)
    for k, (plane, line) in enumerate(table.lines):  # per line, not per event
        stat_id = plane.stat_metadata.id_of(stat_name)
        if stat_id is None:
            continue
        lo, hi = int(table.line_bounds[k]), int(table.line_bounds[k + 1])
        positions[lo:hi] = line.stats.positions(stat_id, hi - lo)
    return positions[events]


def _allocator(memory_id: str, columns: dict, picked: np.ndarray) -> AllocatorSnapshots:
    """One allocator's snapshots: sorted by time, steps filled in, metadata inherited."""
    order = picked[np.argsort(columns["time_ps"][picked], kind="stable")]
    col = {name: value[order] for name, value in columns.items() if isinstance(value, np.ndarray)}
    step = col["step_id"]
    valid = step >= 0
    # A snapshot outside every step: the last valid step before it, plus one.
    last_valid = np.maximum.accumulate(np.where(valid, np.arange(len(step)), -1))
    previous = np.where(last_valid >= 0, step[np.maximum(last_valid, 0)], -1)
    col["step_id"] = np.where(valid, step, previous + 1)
    inherited = _inherit_from_allocations(col)
    return AllocatorSnapshots(
        memory_id=memory_id,
        time_ps=col["time_ps"],
        is_allocation=col["is_allocation"],
        stack_bytes=col["stack_bytes"],
        heap_bytes=col["heap_bytes"],
        free_bytes=col["free_bytes"],
        fragmentation=col["fragmentation"],
        peak_in_use_bytes=col["peak_in_use_bytes"],
        requested_bytes=col["requested_bytes"],
        allocation_bytes=col["allocation_bytes"],
        address=col["address"],
        step_id=col["step_id"],
        op=col["op"],
        region_type=col["region_type"],
        data_type=col["data_type"],
        shape=col["shape"],
        inherited=inherited,
        file_order=col["file_order"],
        texts=columns["texts"],
    )


def _inherit_from_allocations(col: dict[str, np.ndarray]) -> np.ndarray:
    """Gives each deallocation the metadata of the allocation it frees; returns who inherited.

    The allocation is the previous snapshot (in time) at the same address, when that one
    is an allocation: a second deallocation of a chunk inherits nothing, and of two
    allocations at one address without a deallocation between them the later one counts.
    """
    n = len(col["time_ps"])
    by_address = np.lexsort((np.arange(n), col["address"]))
    same = np.zeros(n, bool)
    same[1:] = col["address"][by_address[1:]] == col["address"][by_address[:-1]]
    prev = np.roll(by_address, 1)
    is_alloc = col["is_allocation"]
    takes = same & ~is_alloc[by_address] & is_alloc[prev]
    heirs = by_address[takes]
    sources = prev[takes]
    for name in ("op", "region_type", "data_type", "shape"):
        col[name][heirs] = col[name][sources]
    inherited = np.zeros(n, bool)
    inherited[heirs] = True
    return inherited
