"""PyTorch's operators: per op, and per op and input shape (torch-tb-profiler's operator view
and its "group by input shape").

Per op (`op_rows`): every host event that is an operator (xspace/producers/pytorch_roles.py
`is_operator`: aten ops, autograd nodes, record_function ranges; not runtime calls, steps or
allocator instants): calls, host total and self time, and the device time of the kernels,
copies and memsets it launched (the decoder writes the launching op on each: the canonical
`op_name`), which is torch-tb-profiler's "device self duration".

Host events that carry PyTorch's `Input Dims` (written with `record_shapes=True`; the decoder
keeps it as compact JSON text, `[[32,64],[64,128]]`) are grouped by (op, input dims): calls,
total time and self time (its time minus its direct children's on the same thread: the
nesting of analysis/events/nesting.py). One `np.add.at` per column, no loop per event; the
rows are few (distinct op and shape pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.nesting import Nesting
from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.analysis.ops.op_metrics import OpTable
from tb_profile_plugin.xspace.producers.pytorch import INPUT_DIMS_ARG
from tb_profile_plugin.xspace.producers.pytorch_roles import is_operator
from tb_profile_plugin.xspace.unique_rows import unique_rows


@dataclass(frozen=True)
class OpRow:
    op_name: str
    calls: int
    total_ps: int
    self_ps: int
    device_ps: int  # the kernels, copies and memsets this op launched
    min_ps: int = 0  # the shortest call


@dataclass(frozen=True)
class ShapeRow:
    op_name: str
    input_dims: str
    calls: int
    total_ps: int
    self_ps: int


def self_times(table: EventTable, nesting: Nesting) -> np.ndarray:
    """Per event, its duration minus its direct children's (int64 ps)."""
    duration = table.end_ps - table.start_ps
    child_sum = np.zeros(len(table), np.int64)
    parent = nesting.parent.astype(np.int64)
    nested = parent >= 0
    np.add.at(child_sum, parent[nested], duration[nested])
    return np.maximum(duration - child_sum, 0)


def ops_by_input_shape(table: EventTable, nesting: Nesting) -> list[ShapeRow]:
    """Rows per (op, input dims) of the host events with `Input Dims`, by self time."""
    codes, texts = table.str_stat_codes(INPUT_DIMS_ARG)
    rows = np.flatnonzero((codes >= 0) & ~table.on_device)
    if not len(rows):
        return []
    keys = np.stack([table.name_id[rows].astype(np.int64), codes[rows].astype(np.int64)],
                    axis=1)
    unique, inverse = unique_rows(keys)
    k = len(unique)
    calls = np.bincount(inverse, minlength=k)
    total = np.zeros(k, np.int64)
    own = np.zeros(k, np.int64)
    np.add.at(total, inverse, table.end_ps[rows] - table.start_ps[rows])
    np.add.at(own, inverse, self_times(table, nesting)[rows])
    out = [ShapeRow(table.names[int(n)], texts[int(c)], int(calls[j]), int(total[j]),
                    int(own[j])) for j, (n, c) in enumerate(unique.tolist())]
    out.sort(key=lambda r: (-r.self_ps, r.op_name, r.input_dims))
    return out


def op_rows(table: EventTable, nesting: Nesting) -> tuple[OpRow, ...]:
    """Per operator name, by device time then host self time (see the module docstring)."""
    operator = table.names_matching(is_operator)
    rows = np.flatnonzero(~table.on_device & operator[table.name_id])
    if not len(rows):
        return ()
    names = table.name_id[rows]
    k = len(table.names)
    calls = np.bincount(names, minlength=k)
    total = np.zeros(k, np.int64)
    own = np.zeros(k, np.int64)
    np.add.at(total, names, (table.end_ps - table.start_ps)[rows])
    np.add.at(own, names, self_times(table, nesting)[rows])
    shortest = np.full(k, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(shortest, names, (table.end_ps - table.start_ps)[rows])
    device = np.zeros(k, np.int64)
    on_device = np.flatnonzero(table.on_device)
    if len(on_device):
        canon = table.canonical
        code = canon.op_name[on_device]
        launched = code >= 0
        by_code = np.zeros(len(canon.texts), np.int64)
        np.add.at(by_code, code[launched],
                  (table.end_ps - table.start_ps)[on_device[launched]])
        index = {name: i for i, name in enumerate(table.names)}
        for c in np.flatnonzero(by_code).tolist():  # distinct launching ops
            i = index.get(canon.texts[c])
            if i is not None:
                device[i] += int(by_code[c])
    out = [OpRow(table.names[i], int(calls[i]), int(total[i]), int(own[i]), int(device[i]),
                 int(shortest[i])) for i in np.flatnonzero(calls).tolist()]
    out.sort(key=lambda r: (-r.device_ps, -r.self_ps, r.op_name))
    return tuple(out)


#: The category the host op table gives PyTorch's operators.
PYTORCH_CATEGORY = "PyTorch"


def host_op_table(rows: tuple[OpRow, ...]) -> OpTable:
    """The operators as the host op table every view reads (OpTable: no IDLE row, no type):
    PyTorch's `aten::mm` is no TensorFlow `name:Type` and `gloo:all_reduce` no op `gloo` of
    type `all_reduce`, as TensorFlow's op parser would read them."""
    return OpTable(
        [r.op_name for r in rows], [""] * len(rows), [PYTORCH_CATEGORY] * len(rows),
        np.array([r.calls for r in rows], np.int64),
        np.array([r.total_ps for r in rows], np.int64),
        np.array([r.self_ps for r in rows], np.int64),
        np.zeros(len(rows), np.int64),
        np.array([r.min_ps for r in rows], np.int64))
