"""Steps from the executions of the jitted step function, for XLA programs without markers.

Most JAX programs mark no steps, yet their captures say exactly what ran: the same jitted
function, executed again and again. When the event forest finds no step (rule "none") and the
devices ran XLA programs (analysis/steps/xla_executions.py), the steps are the executions of the
**dominant** module: of the modules executed more than once on some device, the one with the
most device busy time (ties: the earlier first execution).

Alignment: the k-th execution on every device is step k (the same program run on every core
is one step). Step k runs from the earliest start of a k-th execution to the earliest start
of a (k+1)-th; the last step ends at the latest end of the last executions. Every execution
is whole, so no step is dropped as partial.

Breakdown: the device events that start inside a step, typed as usual (analysis/steps/step_db.py
`classify`: compute 16/32-bit, collectives by HLO op/category or NCCL/RCCL kernel, copies
device-to-device, host-to-device as input, device-to-host as output); what no device event
covers is all others. On a device host, host events are not counted (nothing links them to an
execution). A CPU-only profile (XLA's CPU thunks are the executions, by `run_id`) counts every
classified host event that starts inside the step, as a marked step would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.forest import Forest
from tb_profile_plugin.analysis.steps.step_db import StepDb, StepSpans, classify, step_db_from_spans
from tb_profile_plugin.analysis.steps.xla_executions import Executions

RULE = "executions"


@dataclass(frozen=True)
class ExecutionSteps:
    steps: StepDb
    module: str  # the dominant module, as the user named the function
    executions: int  # its executions on the device that ran it most


def dominant_module(executions: Executions) -> int | None:
    """The module code whose executions are the steps, or None when no module repeats."""
    if len(executions) == 0:
        return None
    num_modules = len(executions.names)
    pairs = executions.plane_index * num_modules + executions.module
    per_plane = np.bincount(pairs, minlength=int(pairs.max()) + 1)
    repeated = np.zeros(num_modules, bool)
    repeated[np.flatnonzero(per_plane > 1) % num_modules] = True
    if not repeated.any():
        return None
    busy = np.bincount(executions.module, weights=executions.busy_ps, minlength=num_modules)
    first = np.full(num_modules, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, executions.module, executions.begin_ps)
    candidates = np.flatnonzero(repeated)
    best = candidates[np.lexsort((first[candidates], -busy[candidates]))[0]]
    return int(best)


def step_spans(executions: Executions, module: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(begin, finish) per step in ps, and the most executions one device ran."""
    rows = np.flatnonzero(executions.module == module)  # sorted by (plane, begin)
    plane = executions.plane_index[rows]
    first_of_plane = np.searchsorted(plane, plane)
    rank = np.arange(len(rows)) - first_of_plane
    count = int(rank.max()) + 1
    begin = np.full(count, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(begin, rank, executions.begin_ps[rows])
    last_end = int(executions.end_ps[rows][rank == count - 1].max())
    finish = np.append(begin[1:], last_end)
    return begin, finish, count


def step_of(begin: np.ndarray, finish: np.ndarray, start_ps: np.ndarray) -> np.ndarray:
    """Per start time: the step whose span [begin, finish) holds it, -1 outside every step."""
    slot = np.searchsorted(begin, start_ps, side="right") - 1
    inside = (slot >= 0) & (start_ps < finish[np.maximum(slot, 0)])
    return np.where(inside, slot, -1).astype(np.int64)


def execution_steps(forest: Forest, executions: Executions,
                    plane_index: int | None = None) -> ExecutionSteps | None:
    """The steps of a profile without markers, from its dominant module's executions;
    with `plane_index`, the same steps counting only that device plane's events (the pod
    viewer's per-device columns)."""
    module = dominant_module(executions)
    if module is None:
        return None
    begin, finish, count = step_spans(executions, module)
    types, on_device, has_device = classify(forest, grouped_only=False)
    table = forest.table
    start = table.start_ps
    # On a device, its events; on a CPU-only profile, every classified host event.
    device = np.flatnonzero((on_device if has_device else True) & (types >= 0))
    if plane_index is not None:
        device = device[table.plane_index[device] == plane_index]
    groups = np.full(len(table), -1, np.int64)
    groups[device] = step_of(begin, finish, start[device])
    spans = StepSpans(begin, finish, np.ones(count, bool), np.arange(count, dtype=np.int64))
    steps = step_db_from_spans(spans, types, groups, start, table.end_ps, has_device,
                               drop_partial=False)
    return ExecutionSteps(steps, executions.names[module], count)
