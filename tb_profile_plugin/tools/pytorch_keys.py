"""The keys the overview and the input pipeline analyzer add for PyTorch profiles
(analysis/pytorch/facts.py), in milliseconds.

- `pytorch_breakdown`: per torch-tb-profiler category (kernel, memcpy, memset, communication,
  runtime, dataloader, cpu_exec, other), its label, avg/stddev/min/max ms per step and its
  percent of the step time; each step row gets `pytorch_breakdown_ms` (summing to its
  `step_time_ms`, as `breakdown_ms` does).
- `gpu_metrics`: per GPU, utilization, est. SM efficiency, est. achieved occupancy.
- `sync_points`: host calls that waited for the device inside the steps.
- input pipeline analyzer: `dataloader` (per step, the DataLoader's time and share).
- operators (tensorflow_stats): `pytorch_ops` and `ops_by_input_shape` (`operator_keys`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tb_profile_plugin.analysis.events.profile_cache import profile_nested
from tb_profile_plugin.analysis.pytorch.facts import PytorchFacts, merge_op_rows
from tb_profile_plugin.analysis.pytorch.op_shapes import (
    OpRow,
    ShapeRow,
    op_rows,
    ops_by_input_shape,
)
from tb_profile_plugin.analysis.pytorch.step_roles import ROLE_LABELS, ROLES
from tb_profile_plugin.analysis.steps.breakdown import Stats
from tb_profile_plugin.tools.view import ViewRequest
from tb_profile_plugin.xspace.producers.pytorch import is_kineto_profile

_PS_PER_MS = 1e9
_PS_PER_US = 1e6


def overview_keys(facts: PytorchFacts, steps_duration_ps: np.ndarray,
                  rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The PyTorch keys of the overview; adds `pytorch_breakdown_ms` to each step row."""
    role_ms = facts.role_ps.astype(np.float64) / _PS_PER_MS
    columns = [role_ms[:, k].tolist() for k in range(len(ROLES))]
    for i, row in enumerate(rows):
        row["pytorch_breakdown_ms"] = {name: columns[k][i] for k, name in enumerate(ROLES)}
    total = float(steps_duration_ps.sum())
    breakdown = {} if not len(steps_duration_ps) else {
        name: {"label": ROLE_LABELS[name], **Stats.of(role_ms[:, k]).to_json(),
               "percent": 100.0 * float(facts.role_ps[:, k].sum()) / total if total else 0.0}
        for k, name in enumerate(ROLES)
    }
    return {
        "pytorch_breakdown": breakdown,
        "gpu_metrics": [g.to_json() for g in facts.gpus],
        "sync_points": [{"kind": kind, "calls": calls, "time_ms": ps / _PS_PER_MS,
                         "names": list(names)} for kind, calls, ps, names in facts.sync],
    }


def dataloader_keys(facts: PytorchFacts, steps_duration_ps: np.ndarray) -> dict[str, Any]:
    """The input pipeline analyzer's DataLoader figures: per step, the time its `__next__`
    ranges cover and their share of the step."""
    duration = steps_duration_ps.astype(np.float64)
    loader = facts.dataloader_ps.astype(np.float64)
    percent = np.divide(100.0 * loader, duration, out=np.zeros_like(loader),
                        where=duration > 0)
    total = float(duration.sum())
    return {"dataloader": {
        "present": facts.has_dataloader,
        "per_step_ms": (loader / _PS_PER_MS).tolist(),
        "per_step_percent": percent.tolist(),
        "ms": Stats.of(loader / _PS_PER_MS).to_json(),
        "percent_total": 100.0 * float(loader.sum()) / total if total else 0.0,
    }}


def operator_keys(ops: tuple[OpRow, ...], shapes: list[ShapeRow] | None) -> dict[str, Any]:
    """The operators view's PyTorch keys: `pytorch_ops`, one row per operator (aten ops,
    autograd nodes, record_function ranges) with its calls, host self and total time and the
    device time of the kernels it launched (analysis/pytorch/op_shapes.py); and, for one host
    captured with `record_shapes=True`, `ops_by_input_shape`: per op and `Input Dims`, calls,
    total and self time."""
    total_device = sum(r.device_ps for r in ops)
    total_self = sum(r.self_ps for r in ops)
    out: dict[str, Any] = {"pytorch_ops": [{
        "op_name": r.op_name, "calls": r.calls,
        "host_self_time_us": r.self_ps / _PS_PER_US,
        "host_total_time_us": r.total_ps / _PS_PER_US,
        "host_self_time_fraction": r.self_ps / total_self if total_self else 0.0,
        "device_self_time_us": r.device_ps / _PS_PER_US,
        "device_self_time_fraction": r.device_ps / total_device if total_device else 0.0,
    } for r in ops]}
    if shapes is not None:
        out["ops_by_input_shape"] = [{
            "op_name": r.op_name, "input_dims": r.input_dims, "calls": r.calls,
            "total_time_us": r.total_ps / _PS_PER_US, "self_time_us": r.self_ps / _PS_PER_US,
        } for r in shapes]
    return out


def pytorch_ops(request: ViewRequest, analyses: list[Any]) -> tuple[OpRow, ...] | None:
    """The operators of a PyTorch request: the one host's from its profile, several hosts'
    summed from their analyses; None when the hosts are not PyTorch's."""
    facts = [getattr(a, "pytorch", None) for a in analyses]
    if len(request.profiles) > 1:
        parts = [f.ops for f in facts if f is not None]
        return merge_op_rows(parts) if parts else None
    profile = next(iter(request.profiles.values()))
    if not is_kineto_profile(profile):
        return None
    nested = profile_nested(profile)
    return op_rows(nested.table, nested.nesting)


def pytorch_shapes(request: ViewRequest) -> list[ShapeRow] | None:
    """The one host's ops by input shape; None for several hosts (not decoded here)."""
    if len(request.profiles) != 1:
        return None
    nested = profile_nested(next(iter(request.profiles.values())))
    return ops_by_input_shape(nested.table, nested.nesting)


def pod_column_keys(facts: PytorchFacts, row: int) -> dict[str, Any]:
    """One host's PyTorch figures of one step row, for the pod viewer's column (µs)."""
    return {
        "pytorch_breakdown_us": {name: int(facts.role_ps[row, k]) / _PS_PER_US
                                 for k, name in enumerate(ROLES)},
        "communication_us": int(facts.communication_ps[row]) / _PS_PER_US,
        "computation_us": int(facts.computation_ps[row]) / _PS_PER_US,
        "overlap_us": int(facts.overlap_ps[row]) / _PS_PER_US,
    }


def rank_row(host: str, facts: PytorchFacts, rows: np.ndarray,
             step_ps: np.ndarray) -> dict[str, Any]:
    """The pod viewer's `pytorch_ranks` row of one host over the shown steps: its rank as the
    file states it, mean step time, and communication vs computation (ms per step)."""
    n = max(len(rows), 1)
    comm = float(facts.communication_ps[rows].sum())
    overlap = float(facts.overlap_ps[rows].sum())
    return {
        "host": host, "rank": facts.run.rank, "world_size": facts.run.world_size,
        "backend": facts.run.backend,
        "mean_step_time_ms": float(step_ps.sum()) / n / _PS_PER_MS,
        "communication_ms": comm / n / _PS_PER_MS,
        "computation_ms": float(facts.computation_ps[rows].sum()) / n / _PS_PER_MS,
        "overlap_ms": overlap / n / _PS_PER_MS,
        "communication_overlapped_percent": 100.0 * overlap / comm if comm else 0.0,
        "collectives": [{"name": name, "calls": calls, "time_ms": ps / _PS_PER_MS}
                        for name, calls, ps in facts.collectives],
    }


def comm_straggler(ranks: list[dict[str, Any]], lag_fraction: float) -> dict[str, Any] | None:
    """The rank the others wait for in their collectives: in synchronous training a slow rank
    does not show as a longer step (every rank's step waits in the same all-reduce) but as the
    others' communication time. The rank with the least communication per step is the
    straggler; `wait_ms` is how much longer the others spend in communication on average;
    `significant` when that is at least `lag_fraction` of the mean step time."""
    if len(ranks) < 2:
        return None
    fastest = min(ranks, key=lambda r: r["communication_ms"])
    others = [r for r in ranks if r is not fastest]
    wait = sum(r["communication_ms"] - fastest["communication_ms"] for r in others) / len(others)
    step = sum(r["mean_step_time_ms"] for r in ranks) / len(ranks)
    return {"host": fastest["host"], "rank": fastest["rank"], "wait_ms": wait,
            "wait_percent_of_step": 100.0 * wait / step if step else 0.0,
            "significant": bool(step and wait >= lag_fraction * step)}
