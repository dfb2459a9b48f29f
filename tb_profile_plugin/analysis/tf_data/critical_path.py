"""Per execution of a tf.data pipeline: iterator times, the critical path and the bottleneck.

Follows the reference's tf.data statistics (xprof_reference.md §3.5), vectorised over all
iterator events of a host at once instead of a recursion per root call:

* Every iterator event belongs to the execution (root call) its tf.data tree leads up to.
* Self time of an event = its duration minus its overlap in time with each tf.data child
  (the part of the call spent waiting for its input). A child on another thread (an
  asynchronous producer) overlaps only while the consumer waited for it.
* Blocking: the root call blocks; a child blocks when its parent blocks and overlaps it. An
  async producer that finished before the consumer asked does not overlap: it was off the
  critical path. The blocking iterators are the execution's *critical path*:

      Root      [================================]   blocking
      Prefetch   [==============================]    blocking, self = its own work
      BatchV2 (producer thread)  [====]              overlaps: blocking
      BatchV2 (earlier element) [==]                 before the call: not blocking

* Per (execution, iterator): the summed duration and self time, the number of calls, the
  earliest start and whether any of its calls blocked.
* The bottleneck of an execution = the blocking iterator with the largest self time (ties:
  the earlier start, then the lower iterator number).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.tf_data.pipelines import MAX_DEPTH, TfDataEvents

SLOW_CALL_PS = 50_000_000  # 50 µs: a root call slower than this is a slow call


@dataclass(frozen=True)
class ExecutionStats:
    """Per (execution, iterator) rows of one host, sorted by execution then iterator."""

    execution: np.ndarray  # int64: index of the root call in TfDataEvents
    iterator: np.ndarray  # int64: dense iterator number
    start_ps: np.ndarray  # int64: earliest start of the iterator's calls in this execution
    duration_ps: np.ndarray  # int64: summed duration
    self_ps: np.ndarray  # int64: summed self time
    num_calls: np.ndarray  # int64
    blocking: np.ndarray  # bool: on the critical path
    bottleneck: np.ndarray  # bool: the execution's bottleneck row
    num_too_deep: int  # events cut because their tree was deeper than MAX_DEPTH

    def rows_of(self, execution: int) -> np.ndarray:
        lo, hi = np.searchsorted(self.execution, [execution, execution + 1])
        return np.arange(lo, hi)


def _sum_by(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Exact int64 sums of `values` per `index` (bincount would go through float64)."""
    out = np.zeros(size, np.int64)
    np.add.at(out, index, values.astype(np.int64, copy=False))
    return out


def execution_stats(events: TfDataEvents) -> ExecutionStats:
    """Per-iterator figures of every execution of every pipeline of one host."""
    n = len(events)
    start, end, parent = events.start_ps, events.end_ps, events.parent
    roots = np.concatenate([p.executions for p in events.pipelines]) if events.pipelines \
        else np.zeros(0, np.int64)
    execution = np.full(n, -1, np.int64)
    execution[roots] = roots
    blocking = np.zeros(n, bool)
    blocking[roots] = True

    has_parent = parent >= 0
    safe_parent = np.where(has_parent, parent, 0)
    overlap = np.where(
        has_parent,
        np.maximum(0, np.minimum(end, end[safe_parent]) - np.maximum(start, start[safe_parent])),
        0)
    child_overlap = _sum_by(parent[has_parent], overlap[has_parent], n)
    self_ps = np.maximum(0, (end - start) - child_overlap)

    # Top-down, one tree level per pass: a child takes its parent's execution and blocks when
    # its parent blocks and the two overlap.
    for _ in range(MAX_DEPTH):
        pending = np.flatnonzero((execution < 0) & has_parent)
        pending = pending[execution[parent[pending]] >= 0]
        if len(pending) == 0:
            break
        execution[pending] = execution[parent[pending]]
        blocking[pending] = blocking[parent[pending]] & (overlap[pending] > 0)
    pending = np.flatnonzero((execution < 0) & has_parent)
    num_too_deep = int((execution[parent[pending]] >= 0).sum()) if len(pending) else 0

    member = np.flatnonzero(execution >= 0)
    num_iterators = max(len(events.iterator_ids), 1)
    key = execution[member] * num_iterators + events.iterator[member]
    keys, row = np.unique(key, return_inverse=True)
    row = row.ravel()
    m = len(keys)
    first_start = np.full(m, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first_start, row, start[member])
    duration = _sum_by(row, (end - start)[member], m)
    self_total = _sum_by(row, self_ps[member], m)
    calls = np.bincount(row, minlength=m).astype(np.int64)
    on_path = np.bincount(row, weights=blocking[member], minlength=m) > 0
    exec_of_row = keys // num_iterators
    iterator_of_row = keys % num_iterators

    bottleneck = np.zeros(m, bool)
    candidates = np.flatnonzero(on_path)
    if len(candidates):
        order = np.lexsort((iterator_of_row[candidates], first_start[candidates],
                            -self_total[candidates], exec_of_row[candidates]))
        ranked = candidates[order]
        first = np.ones(len(ranked), bool)
        first[1:] = exec_of_row[ranked[1:]] != exec_of_row[ranked[:-1]]
        bottleneck[ranked[first]] = True
    return ExecutionStats(exec_of_row, iterator_of_row, first_start, duration, self_total,
                          calls, on_path, bottleneck, num_too_deep)
