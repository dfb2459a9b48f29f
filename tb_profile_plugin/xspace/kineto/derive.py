"""The decoded events while the decoder derives what XPlane spells as stats: each device
event's launching op, steps, allocator events, kernel details and fwdbwd flows
(docs/pytorch.md). numpy over columns; Python loops run over distinct names or over the
kernels' args dicts while they exist (never kept)."""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.xspace.kineto import fields as fl
from tb_profile_plugin.xspace.kineto.joins import (
    Enclosing,
    cumsum_by_group,
    join_sorted,
    running_max_by_group,
)
from tb_profile_plugin.xspace.producers import pytorch as pt
from tb_profile_plugin.xspace.producers.names import CORRELATION_ID_STAT


class DecodedEvents:
    """The events' columns and stat rows while the derived stats are added."""

    def __init__(self, f: fl.Fields, rows: fl.StatRows, stat_names: fl.Interner) -> None:
        self.f, self.rows, self.stat_names = f, rows, stat_names
        n = len(f)
        self.device = f.cats.among(f.cat, pt.DEVICE_CATEGORIES)
        self.annotation = f.cats.among(f.cat, pt.GPU_ANNOTATION_CATEGORIES)
        names = f.names.texts
        self.step_number = np.full(len(names) + 1, -1, np.int64)  # per name code
        for code, text in enumerate(names):  # distinct names, not events
            match = pt.STEP_PATTERN.match(text)
            if match:
                self.step_number[code] = int(match.group(1))
        # Operators (2021 writes ProfilerStep#N as an Operator too: a step, never an op).
        self.is_op = (~self.device & f.cats.among(f.cat, pt.OP_CATEGORIES)
                      & (self.step_number[f.name] < 0))
        self.kernel = f.cats.among(f.cat, pt.KERNEL_CATEGORIES)
        self.copy = f.cats.among(f.cat, pt.MEMCPY_CATEGORIES | pt.MEMSET_CATEGORIES)
        self.thread_keys = f.thread_keys
        self.host_line = f.host_line
        device_rows = np.flatnonzero(self.device)
        gpu = self.int_arg([pt.DEVICE_ARG])[device_rows]
        stream = self.int_arg([pt.STREAM_ARG])[device_rows]
        pids = f.pid_number[device_rows]
        tids = f.tid_number[device_rows]
        self.gpu = np.full(n, -1, np.int64)
        self.stream = np.full(n, -1, np.int64)
        self.gpu[device_rows] = np.where(gpu >= 0, gpu, pids)
        self.stream[device_rows] = np.where(stream >= 0, stream, tids)
        self.gpu[device_rows] = np.maximum(self.gpu[device_rows], 0)
        self.stream[device_rows] = np.maximum(self.stream[device_rows], 0)
        self.start_ps = np.zeros(n, np.int64)
        self.end_ps = np.zeros(n, np.int64)

    def drop_derivations(self) -> None:
        """Drops the columns only the derivations read (planes.build reads the others), so
        the planes are built with less held."""
        f = self.f
        f.ts_us = f.dur_us = np.zeros(0)
        f.cat = f.pid_number = f.tid_number = f.detail = np.zeros(0, np.int64)
        f.instant = np.zeros(0, bool)
        self.end_ps = np.zeros(0, np.int64)
        self.is_op = self.kernel = self.copy = np.zeros(0, bool)

    def drop_placement(self) -> None:
        """Drops what only placed the events on lines (planes.build, once it has)."""
        self.device = self.annotation = np.zeros(0, bool)
        self.gpu = self.stream = self.start_ps = np.zeros(0, np.int64)
        self.host_line = self.f.host_line = np.zeros(0, np.int64)

    def stat(self, name: str) -> int:
        return self.stat_names.code(name)

    def codes(self, names: list[str] | tuple[str, ...]) -> list[int]:
        return [self.stat_names.codes[k] for k in names if k in self.stat_names.codes]

    def int_arg(self, names: list[str] | tuple[str, ...]) -> np.ndarray:
        return fl.dense_int(self.rows, self.codes(names), len(self.f))

    def add_named(self, events: np.ndarray, stat: str, name_codes: np.ndarray) -> None:
        """A string stat per event: the text of an event name code."""
        if not len(events):
            return
        used, inverse = np.unique(name_codes, return_inverse=True)
        texts = self.f.names.texts
        self.rows.add_texts(events, self.stat(stat), inverse.ravel(),
                            [texts[k] for k in used.tolist()])

    def add_texts(self, events: np.ndarray, stat: str, texts: list[str]) -> None:
        """A string stat per event from a transient list of texts (one per event)."""
        if not len(events):
            return
        interner = fl.Interner()
        codes = interner.codes_of(texts)
        self.rows.add_texts(events, self.stat(stat), codes, interner.texts)

    def launching_ops(self) -> None:
        """Each kernel/memcpy/memset's launching op (the host op of its `External id`, or of
        its runtime call's, through `correlation`) as its op stat."""
        external = self.int_arg(pt.EXTERNAL_ID_ARGS)
        correlation = self.int_arg([CORRELATION_ID_STAT])
        targets = np.flatnonzero(self.device & ~self.annotation)
        wanted = external[targets]
        calls = np.flatnonzero(~self.device & (correlation >= 0) & (external >= 0))
        via_call = join_sorted(correlation[calls], external[calls], correlation[targets])
        wanted = np.where(wanted >= 0, wanted, via_call)
        ops = np.flatnonzero(self.is_op & (external >= 0))
        op_of = join_sorted(external[ops], ops, wanted)
        # An id of no op (a record_function range: `nccl:all_reduce`): the innermost op
        # holding the runtime call that launched it.
        rest = np.flatnonzero(op_of < 0)
        callers = np.flatnonzero(~self.device & (correlation >= 0))
        call = join_sorted(correlation[callers], callers, correlation[targets[rest]])
        found = call >= 0
        if found.any():
            spans = np.flatnonzero(self.is_op & ~self.f.instant)
            holder = Enclosing(self.host_line[spans], self.start_ps[spans], self.end_ps[spans],
                               spans)
            call = call[found]
            op_of[rest[found]] = holder.innermost(self.host_line[call], self.start_ps[call])
        has = op_of >= 0
        self.add_named(targets[has], pt.OP_STAT, self.f.name[op_of[has]])

    def steps(self) -> None:
        """`ProfilerStep#N` host annotations: `_r` = 1 and `step_num` = N (forest roots)."""
        number = self.step_number
        step_cat = self.f.cats.among(self.f.cat, pt.STEP_CATEGORIES)
        rows = np.flatnonzero(~self.device & ~self.f.instant & step_cat
                              & (number[self.f.name] >= 0))
        self.rows.add_ints(rows, self.stat(pt.STEP_MARKER_STAT), np.ones(len(rows), np.int64))
        self.rows.add_ints(rows, self.stat(pt.STEP_NUM_STAT), number[self.f.name[rows]])

    def memory(self) -> None:
        """`[memory]` instants as TensorFlow's allocator events (docs/pytorch.md)."""
        names = self.f.names
        memory_code = names.codes.get(pt.MEMORY_EVENT_NAME, -1)
        mem = np.flatnonzero(self.f.instant & ~self.device & (self.f.name == memory_code))
        if not len(mem):
            return
        absent = np.iinfo(np.int64).min
        size = fl.dense_int(self.rows, self.codes([pt.MEMORY_BYTES_ARG]), len(self.f),
                            fill=absent)[mem]
        size = np.where(size == absent, 0, size)
        allocated = self.int_arg([pt.TOTAL_ALLOCATED_ARG])[mem]
        reserved = self.int_arg([pt.TOTAL_RESERVED_ARG])[mem]
        dev_type = self.int_arg([pt.DEVICE_TYPE_ARG])[mem]
        dev_id = self.int_arg([pt.DEVICE_ID_ARG])[mem]
        address = self.int_arg([pt.ADDRESS_ARG])[mem]
        pairs, which = np.unique(np.stack([np.maximum(dev_type, 0), np.maximum(dev_id, -1)], 1),
                                 axis=0, return_inverse=True)
        which = which.ravel()
        labels = [_allocator(int(t), int(i)) for t, i in pairs.tolist()]
        order = np.lexsort((self.start_ps[mem], which))
        had_total = allocated >= 0
        if not had_total.all():  # before PyTorch 1.10: the running sum of sizes
            summed = np.empty(len(mem), np.int64)
            summed[order] = cumsum_by_group(which[order], size[order])
            allocated = np.where(had_total, allocated, np.maximum(summed, 0))
        peak = np.empty(len(mem), np.int64)
        peak[order] = running_max_by_group(which[order], allocated[order])
        alloc_code = names.code(pt.ALLOCATION_EVENT)
        free_code = names.code(pt.DEALLOCATION_EVENT)
        self.f.name[mem] = np.where(size > 0, alloc_code, free_code)
        self.rows.add_texts(mem, self.stat(pt.ALLOCATOR_NAME_STAT), which, labels)
        self.rows.add_ints(mem, self.stat(pt.BYTES_ALLOCATED_STAT), allocated)
        known = reserved >= 0
        self.rows.add_ints(mem[known], self.stat(pt.BYTES_AVAILABLE_STAT),
                           np.maximum(reserved[known] - allocated[known], 0))
        self.rows.add_ints(mem, self.stat(pt.PEAK_BYTES_STAT), peak)
        self.rows.add_ints(mem, self.stat(pt.REQUESTED_BYTES_STAT), np.abs(size))
        self.rows.add_ints(mem, self.stat(pt.ALLOCATION_BYTES_STAT), np.abs(size))
        has_address = address >= 0
        self.rows.add_ints(mem[has_address], self.stat(pt.ADDRESS_STAT), address[has_address])
        ops = np.flatnonzero(self.is_op & ~self.f.instant)
        holder = Enclosing(self.host_line[ops], self.start_ps[ops], self.end_ps[ops], ops)
        op_of = holder.innermost(self.host_line[mem], self.start_ps[mem])
        has = op_of >= 0
        self.add_named(mem[has], pt.OP_STAT, self.f.name[op_of[has]])

    def kernel_details(self) -> None:
        """Kernels' launch facts as `kernel_details`; copies' sizes as `memcpy_details`."""
        kernels = np.flatnonzero(self.kernel & (self.f.detail >= 0))
        self.rows.add_texts(kernels, self.stat(pt.DETAILS_STAT), self.f.detail[kernels],
                            self.f.details.texts)
        copies = np.flatnonzero(self.copy)
        size = self.int_arg([pt.COPY_BYTES_ARG])[copies]
        sized = size >= 0
        used, inverse = np.unique(size[sized], return_inverse=True)
        self.rows.add_texts(copies[sized], self.stat(pt.MEMCPY_DETAILS_STAT), inverse.ravel(),
                            [f"size:{s}" for s in used.tolist()])

    def flows(self, flow_ps: np.ndarray) -> None:
        """fwdbwd flows: producer stats on the span its start binds to, consumer stats on the
        finish's (the innermost span of that thread holding the flow's time)."""
        flows = self.f.flows
        if not len(flows.flow_id):
            return
        line = np.fromiter((self.thread_keys.get((p, t), -1)
                            for p, t in zip(flows.pid, flows.tid, strict=True)),
                           np.int64, len(flows.flow_id))
        spans = np.flatnonzero(~self.device & ~self.f.instant)
        holder = Enclosing(self.host_line[spans], self.start_ps[spans], self.end_ps[spans], spans)
        bound = np.where(line >= 0, holder.innermost(line, flow_ps), -1)
        for is_start, type_stat, id_stat in (
                (True, pt.PRODUCER_TYPE_STAT, pt.PRODUCER_ID_STAT),
                (False, pt.CONSUMER_TYPE_STAT, pt.CONSUMER_ID_STAT)):
            sel = (flows.is_start == is_start) & (bound >= 0)
            events = bound[sel]
            self.rows.add_ints(events, self.stat(type_stat),
                               np.full(len(events), pt.FWDBWD_FLOW_TYPE, np.int64))
            self.rows.add_ints(events, self.stat(id_stat), flows.flow_id[sel])


def _allocator(device_type: int, device_id: int) -> str:
    kind = pt.DEVICE_TYPES.get(device_type, f"device_type_{device_type}")
    return kind if device_id < 0 else f"{kind}:{device_id}"
