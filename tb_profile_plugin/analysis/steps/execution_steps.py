"""Steps from the executions of the jitted step function, for XLA programs without markers.

Most JAX programs mark no steps, yet their captures say exactly what ran: the same jitted
function, executed again and again. When the event forest finds no step (rule "none") and the
devices ran XLA programs (analysis/steps/xla_executions.py), the steps are the executions of the
**dominant** module: of the modules executed more than once on some device, the one with the
most device busy time (ties: the earlier first execution).

Only where its executions repeat **like a loop** (`loop_check`): a training loop calls its
step function once per iteration, so its calls come at a steady rhythm and it is the main
work between them. A micro-benchmark or a script that calls many jitted functions in turn
also repeats some of them, but its "steps" would be arbitrary stretches of other work
(24 calls of `jit_matmul` between eight other functions: 0.05-20.9 ms "steps", mostly
"All others"). Both conditions, on the aligned executions (below):

1. **Regular period.** The periods (start of one execution to the start of the next) vary
   less than they would without any rhythm: their coefficient of variation (sample standard
   deviation / mean) is at most `MAX_PERIOD_CV` = 1, the value of memoryless (Poisson)
   arrivals. With two executions (one period) there is nothing to compare: regular.
2. **The step function dominates.** Its executions hold at least `MIN_STEP_SHARE` = 50 % of
   the device busy time of all executions that start between its first start and its last
   end (other jitted functions called inside the loop, an eval step every few steps, are
   less than it; a benchmark's other functions are not).

Otherwise no steps are inferred (the overview leads with the jitted functions table) and
`not_a_loop` says which condition failed, with the figures, for the diagnostics. On the
committed captures: jax_cpu_plain (train_step, eval_step every 3rd call) CV 0.23, 81 %;
jax_nvidia_plain CV 0.82 (warm-up: the first period is the longest), 100 %; jax_gpu_conv
(8 GPUs) CV 0.63, 100 %; jax_gpu_attention CV 0.10, 100 %: all loops (the captures with
markers too: CV 0.01-0.13).

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
#: Loop test (module docstring): the periods' coefficient of variation at most this (1 is that
#: of memoryless arrivals, which have no rhythm at all).
MAX_PERIOD_CV = 1.0
#: Loop test: the step function's share of the device busy time of the executions that start
#: within its steps' span, at least this.
MIN_STEP_SHARE = 0.5


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


@dataclass(frozen=True)
class LoopCheck:
    """The loop test's figures for the dominant module (module docstring)."""

    module: str
    executions: int  # on the device that ran it most
    period_min_ps: int  # 0 with one execution
    period_max_ps: int
    period_cv: float  # 0 with fewer than three executions
    step_share: float  # 0-1

    @property
    def regular(self) -> bool:
        return self.period_cv <= MAX_PERIOD_CV

    @property
    def dominant(self) -> bool:
        return self.step_share >= MIN_STEP_SHARE

    @property
    def is_loop(self) -> bool:
        return self.regular and self.dominant


def loop_check(executions: Executions, module: int) -> LoopCheck:
    """The loop test of `module`'s executions (module docstring: period CV, busy share)."""
    begin, finish, count = step_spans(executions, module)
    periods = np.diff(begin).astype(np.float64)
    cv = 0.0
    if len(periods) > 1 and periods.mean() > 0:
        cv = float(np.std(periods, ddof=1) / periods.mean())
    inside = (executions.begin_ps >= begin[0]) & (executions.begin_ps < finish[-1])
    total = float(executions.busy_ps[inside].sum())
    own = float(executions.busy_ps[inside & (executions.module == module)].sum())
    return LoopCheck(
        executions.names[module], count,
        int(periods.min()) if len(periods) else 0, int(periods.max()) if len(periods) else 0,
        cv, own / total if total > 0 else 1.0)


def not_a_loop(executions: Executions) -> str:
    """Why the repeated jitted function's executions were not taken as steps ("" where they
    are, or where no function repeats): a sentence for the diagnostics."""
    module = dominant_module(executions)
    if module is None:
        return ""
    check = loop_check(executions, module)
    if check.is_loop:
        return ""
    reasons = []
    if not check.regular:
        reasons.append(
            f"its calls come at no steady period ({check.period_min_ps / 1e9:.3f}-"
            f"{check.period_max_ps / 1e9:.3f} ms apart, spread {check.period_cv:.1f}x their "
            f"mean; a loop's is at most {MAX_PERIOD_CV:g}x)")
    if not check.dominant:
        reasons.append(
            f"it holds only {100 * check.step_share:.0f} % of the device time of the jitted "
            f"calls around it (a loop's step function holds {100 * MIN_STEP_SHARE:g} % or more)")
    return (f"{check.module} ran {check.executions} times, but not like a training loop: "
            + " and ".join(reasons) + ", so its calls were not taken as steps; see the "
            "jitted functions table for the time per function.")


def execution_steps(forest: Forest, executions: Executions,
                    plane_index: int | None = None) -> ExecutionSteps | None:
    """The steps of a profile without markers, from its dominant module's executions, where
    they repeat like a loop (`loop_check`; else None, and `not_a_loop` says why); with
    `plane_index`, the same steps counting only that device plane's events (the pod
    viewer's per-device columns)."""
    module = dominant_module(executions)
    if module is None or not loop_check(executions, module).is_loop:
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
