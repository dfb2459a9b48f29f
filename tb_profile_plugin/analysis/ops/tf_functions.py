"""The tf.functions table: per tf.function, how often it was called and for how long.

TensorFlow 2 writes one event per eager call of a tf.function on the calling thread
(producers/ `tf_function_call`: `EagerLocalExecute: __inference_train_step_191`); its time
is the call's, from the host's view (the function's ops run inside it; on a GPU the kernels
may finish later). Per function name:

* `calls`, call time (ps) mean, min, max and total, and its share of all calls' time;
* `concrete`: how many concrete functions (traces) were called. More than one means the
  function was traced again for new input shapes or Python values (retracing), each trace a
  graph build and a compilation.

Rows are ordered by total time, most first. Several hosts (ALL_HOSTS) merge by name.

`graph_execution`: whether the program's ops ran as a graph at all, in any TF version (the
tf.function call events above are TF 2's eager calls only): host events of the graph
executor (`ExecutorState::Process`, one per graph or function body run on the executor's
threads, `tf_Compute`), graph function runs (`FunctionRun`), TF 1 session runs
(`SessionRun`, `RunGraph`), and device ops in TensorFlow's `name:Type` form inside the steps
the producer grouped (TF <= 2.4 writes the op as its `level 0` stat and groups the ops of
each graph step). Each is one (what, count) pair of evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from tb_profile_plugin.analysis.events.forest import (
    EXECUTOR_PROCESS,
    FUNCTION_RUN,
    LEGACY_ROOT_NAMES,
    PRODUCER_RULE,
    Forest,
)
from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.xspace.producers import TF24_OP_STAT, tf_function_call


@dataclass(frozen=True)
class TfFunction:
    function: str
    calls: int
    concrete: int  # concrete functions (traces) called
    mean_ps: float
    min_ps: int
    max_ps: int
    total_ps: int
    fraction: float  # of all tf.function calls' time, 0-1


def tf_functions(table: EventTable) -> tuple[TfFunction, ...]:
    """One row per tf.function called on the host, most time first."""
    parsed = [tf_function_call(name) for name in table.names]
    functions = sorted({p[0] for p in parsed if p is not None})
    if not functions:
        return ()
    index = {name: k for k, name in enumerate(functions)}
    traces = sorted({p for p in parsed if p is not None})
    trace_index = {trace: k for k, trace in enumerate(traces)}
    of_name = np.array([index[p[0]] if p else -1 for p in parsed] + [-1], np.int64)
    trace_of_name = np.array([trace_index[p] if p else -1 for p in parsed] + [-1], np.int64)
    calls = np.flatnonzero((of_name >= 0)[table.name_id] & ~table.on_device)
    call_name = table.name_id[calls]  # (no column of every event beyond one mask)
    fn, duration = of_name[call_name], table.durations_of(calls)
    count = len(functions)
    num = np.bincount(fn, minlength=count)
    total = np.bincount(fn, weights=duration, minlength=count)
    low = np.full(count, np.iinfo(np.int64).max, np.int64)
    high = np.zeros(count, np.int64)
    np.minimum.at(low, fn, duration)
    np.maximum.at(high, fn, duration)
    called_traces = np.unique(trace_of_name[call_name])
    concrete = np.bincount([index[traces[t][0]] for t in called_traces.tolist()],
                           minlength=count)
    all_ps = float(total.sum())
    rows = [TfFunction(function=functions[k], calls=int(num[k]), concrete=int(concrete[k]),
                       mean_ps=float(total[k] / num[k]), min_ps=int(low[k]),
                       max_ps=int(high[k]), total_ps=int(total[k]),
                       fraction=float(total[k] / all_ps) if all_ps else 0.0)
            for k in np.flatnonzero(num).tolist()]
    return tuple(sorted(rows, key=lambda r: (-r.total_ps, r.function)))


def merge_tf_functions(per_host: Iterable[tuple[TfFunction, ...]]) -> tuple[TfFunction, ...]:
    """Several hosts' tables as one, by function name (`concrete`: the most any host
    called)."""
    merged: dict[str, TfFunction] = {}
    for rows in per_host:
        for row in rows:
            seen = merged.get(row.function)
            merged[row.function] = row if seen is None else replace(
                seen, calls=seen.calls + row.calls, concrete=max(seen.concrete, row.concrete),
                mean_ps=(seen.total_ps + row.total_ps) / (seen.calls + row.calls),
                min_ps=min(seen.min_ps, row.min_ps), max_ps=max(seen.max_ps, row.max_ps),
                total_ps=seen.total_ps + row.total_ps)
    all_ps = sum(row.total_ps for row in merged.values())
    return tuple(sorted(
        (replace(row, fraction=row.total_ps / all_ps if all_ps else 0.0)
         for row in merged.values()),
        key=lambda r: (-r.total_ps, r.function)))


_SESSION_RUNS = LEGACY_ROOT_NAMES - {"TraceContext"}


def graph_execution(forest: Forest) -> tuple[tuple[str, int], ...]:
    """Evidence that ops ran as a TensorFlow graph (module docstring): (what, count) pairs,
    only those seen; () when the profile shows no graph execution."""
    table = forest.table
    host = ~table.on_device
    out = []
    for what, names in (
            (f"graph executor runs ({EXECUTOR_PROCESS})", {EXECUTOR_PROCESS}),
            (f"graph function runs ({FUNCTION_RUN})", {FUNCTION_RUN}),
            ("TF 1 session runs (" + "/".join(sorted(_SESSION_RUNS)) + ")", _SESSION_RUNS)):
        matching = table.names_matching(lambda n, names=names: n in names)  # type: ignore[misc]
        count = int(np.count_nonzero(matching[table.name_id] & host)) if matching.any() else 0
        if count:
            out.append((what, count))
    if forest.root_rule == PRODUCER_RULE and table.on_device.any():
        grouped = (table.on_device & (forest.group_id >= 0)
                   & (table.str_stat_codes(TF24_OP_STAT)[0] >= 0))
        count = int(np.count_nonzero(grouped))
        if count:
            out.append((f"TensorFlow ops in the producer's graph steps (TF <= 2.4 "
                        f"'{TF24_OP_STAT}' ops under a group)", count))
    return tuple(out)


def merge_graph_execution(per_host: Iterable[tuple[tuple[str, int], ...]]
                          ) -> tuple[tuple[str, int], ...]:
    """Several hosts' graph-execution evidence, counts summed per kind."""
    merged: dict[str, int] = {}
    for pairs in per_host:
        for what, count in pairs:
            merged[what] = merged.get(what, 0) + count
    return tuple(merged.items())
