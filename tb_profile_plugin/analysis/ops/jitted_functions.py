"""The jitted functions table: per XLA module, how often it ran and for how long.

From the executions (analysis/steps/xla_executions.py), per module (as the user named the function,
`jit_train_step`):

* `calls`: its executions on the device that ran it most (a call of an SPMD program runs once
  on every device), `devices`: how many devices ran it, `executions`: all of them together;
* execution time (first start to last end on its device, ps): mean, min and max;
* `device_ps`: its busy time summed over devices, and its share of all XLA programs' busy time;
* host dispatch: where the host shows the call (`PjitFunction(f)` for `jit_f`, producers/
  `dispatched_module`), the number of dispatches and their mean time.

Rows are ordered by device time, most first. Several hosts (ALL_HOSTS) merge by module:
calls per device are the most any host saw, the rest sums and weighted means.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.forest import Forest
from tb_profile_plugin.analysis.steps.xla_executions import Executions
from tb_profile_plugin.xspace.producers import dispatched_module


@dataclass(frozen=True)
class JittedFunction:
    module: str
    calls: int
    devices: int
    executions: int
    mean_ps: float
    min_ps: int
    max_ps: int
    device_ps: int
    device_fraction: float  # of all XLA programs' busy time, 0-1
    dispatches: int  # host dispatch events seen (0: the host does not show them)
    dispatch_mean_ps: float  # NaN without dispatches


def jitted_functions(forest: Forest, executions: Executions) -> tuple[JittedFunction, ...]:
    """One row per module that ran, most device time first."""
    if len(executions) == 0:
        return ()
    count = len(executions.names)
    module = executions.module
    span = executions.end_ps - executions.begin_ps
    runs = np.bincount(module, minlength=count)
    busy = np.bincount(module, weights=executions.busy_ps, minlength=count)
    span_sum = np.bincount(module, weights=span, minlength=count)
    low = np.full(count, np.iinfo(np.int64).max, np.int64)
    high = np.zeros(count, np.int64)
    np.minimum.at(low, module, span)
    np.maximum.at(high, module, span)
    pairs = executions.plane_index * count + module
    per_plane = np.bincount(pairs)
    used = np.flatnonzero(per_plane)
    calls = np.zeros(count, np.int64)
    devices = np.zeros(count, np.int64)
    np.maximum.at(calls, used % count, per_plane[used])
    np.add.at(devices, used % count, 1)
    dispatch_count, dispatch_ps = _dispatches(forest, executions.names)
    total_busy = float(busy.sum())
    rows = [
        JittedFunction(
            module=executions.names[m], calls=int(calls[m]), devices=int(devices[m]),
            executions=int(runs[m]), mean_ps=float(span_sum[m] / runs[m]),
            min_ps=int(low[m]), max_ps=int(high[m]), device_ps=int(busy[m]),
            device_fraction=float(busy[m] / total_busy) if total_busy else 0.0,
            dispatches=int(dispatch_count[m]),
            dispatch_mean_ps=float(dispatch_ps[m] / dispatch_count[m])
            if dispatch_count[m] else math.nan)
        for m in np.flatnonzero(runs).tolist()
    ]
    return tuple(sorted(rows, key=lambda r: (-r.device_ps, r.module)))


def _dispatches(forest: Forest, modules: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per module: the host dispatch events of its calls, their count and summed time (ps).
    A dispatch event inside another of the same call (jaxlib nests them) is not counted.
    Read `column_sizes.CHUNK_EVENTS` events at a time, keeping only the dispatches: whole
    columns of every event here were the 10M-event overview's peak (~170 MB)."""
    table = forest.table
    index = {name: k for k, name in enumerate(modules)}
    of_name = np.array([index.get(dispatched_module(n) or "", -1) for n in table.names] + [-1],
                       np.int32)
    accelerator = table.accelerator_planes
    parent = forest.nesting.parent
    counts = np.zeros(len(modules), np.int64)
    times = np.zeros(len(modules))
    chunk = column_sizes.CHUNK_EVENTS
    for lo in range(0, len(table), chunk):
        module = of_name[table.name_id[lo : lo + chunk]]
        events = np.flatnonzero(module >= 0)
        if not len(events):
            continue
        module = module[events]
        events += lo
        above = parent[events]
        nested = (above >= 0) & (of_name[table.name_id[np.maximum(above, 0)]] == module)
        host = ~accelerator[table.plane_index[events]] & ~nested
        counts += np.bincount(module[host], minlength=len(modules))
        times += np.bincount(module[host], weights=table.durations_of(events[host]),
                             minlength=len(modules))
    return counts, times


def merge_jitted(per_host: Iterable[tuple[JittedFunction, ...]]) -> tuple[JittedFunction, ...]:
    """Several hosts' tables as one, by module."""
    merged: dict[str, JittedFunction] = {}
    for rows in per_host:
        for row in rows:
            seen = merged.get(row.module)
            merged[row.module] = row if seen is None else _merge(seen, row)
    total = sum(row.device_ps for row in merged.values())
    return tuple(sorted(
        (replace(row, device_fraction=row.device_ps / total if total else 0.0)
         for row in merged.values()),
        key=lambda r: (-r.device_ps, r.module)))


def _merge(a: JittedFunction, b: JittedFunction) -> JittedFunction:
    executions = a.executions + b.executions
    dispatches = a.dispatches + b.dispatches
    dispatch_ps = sum(r.dispatch_mean_ps * r.dispatches for r in (a, b) if r.dispatches)
    return replace(
        a, calls=max(a.calls, b.calls), devices=a.devices + b.devices, executions=executions,
        mean_ps=(a.mean_ps * a.executions + b.mean_ps * b.executions) / executions,
        min_ps=min(a.min_ps, b.min_ps), max_ps=max(a.max_ps, b.max_ps),
        device_ps=a.device_ps + b.device_ps, dispatches=dispatches,
        dispatch_mean_ps=dispatch_ps / dispatches if dispatches else math.nan)
