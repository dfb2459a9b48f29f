"""What the views say in PyTorch's terms about one host, computed once with its analysis.

`pytorch_facts(table, steps)` (a PyTorch profile's event table and its step database):

- per step, torch-tb-profiler's breakdown (`step_roles.ROLES`, rows summing to the step time),
  the same time in the overview's nine categories (`TYPE_OF_ROLE`: the host analysis uses it
  as the steps' breakdown, so the verdict, the pod viewer and the input pipeline analyzer
  read the same time on every thread), and the time the DataLoader's `__next__` ranges
  cover (the input pipeline's input share);
- per GPU plane, utilization, est. SM efficiency and achieved occupancy (`gpu_metrics`), over
  the steps, or over the capture where it has no step;
- the host's sync points inside the steps: runtime calls that wait for the device
  (`cudaStreamSynchronize`, `cudaDeviceSynchronize`, ...) and `.item()` reads;
- the kernels per step, their mean time, and the kernel time of matrix ops (aten::mm,
  convolutions, ...) and of kernels on Tensor Cores (the AMP advice);
- per step, communication, computation and their overlap (the pod viewer's per-rank view);
- the run as the file states it (xspace/producers/pytorch.py `pytorch_facts`).

Roles come from the event names (xspace/producers/pytorch_roles.py); one pass over the
distinct names, numpy over the events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.nesting import Nesting
from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.analysis.ops.kernel_stats import parse_kernel_details, uses_tensor_core
from tb_profile_plugin.analysis.pytorch.coverage import Coverage
from tb_profile_plugin.analysis.pytorch.gpu_metrics import GpuMetrics, gpu_metrics
from tb_profile_plugin.analysis.pytorch.op_shapes import OpRow, op_rows
from tb_profile_plugin.analysis.pytorch.step_roles import dataloader_ps, priority_times_ps
from tb_profile_plugin.analysis.steps.step_db import NUM_TYPES, StepDb
from tb_profile_plugin.analysis.steps.step_db import EventType as T
from tb_profile_plugin.xspace.producers import KERNEL_DETAILS_STAT, PlaneKind, plane_kind
from tb_profile_plugin.xspace.producers.pytorch import PyTorchFacts, memcpy_direction
from tb_profile_plugin.xspace.producers.pytorch import pytorch_facts as run_facts
from tb_profile_plugin.xspace.producers.pytorch_roles import (
    COMMUNICATION,
    CPU_EXEC,
    DATALOADER,
    KERNEL,
    MEMCPY,
    SM_COUNT_STATS,
    dataloader_workers,
    device_role,
    host_role,
    is_matrix_op,
    sync_kind,
)

#: The breakdown's roles, copies split by direction, as the step database's event types: each
#: role's time becomes the overview's category (kernel and memset: device compute; copies:
#: input, output, device to device; communication: device collectives; runtime: kernel
#: launch; DataLoader: input; CPU exec: host compute; other: all others).
TYPE_OF_ROLE = (T.DEVICE_COMPUTE_32, T.HOST_TO_DEVICE, T.DEVICE_TO_HOST, T.DEVICE_TO_DEVICE,
                T.DEVICE_COMPUTE_32, T.DEVICE_COLLECTIVES, T.HOST_PREPARE, T.HOST_WAIT_INPUT,
                T.HOST_COMPUTE, T.UNKNOWN_TIME)
_H2D, _D2H, _D2D = 1, 2, 3
_COPY_CODE = {"HtoD": _H2D, "H2D": _H2D, "DtoH": _D2H, "D2H": _D2H}


@dataclass(frozen=True)
class PytorchFacts:
    #: int64 [steps, len(ROLES)], ps: torch-tb-profiler's breakdown of each step.
    role_ps: np.ndarray
    #: int64 [steps, NUM_TYPES], ps: the same time in the step database's event types (the
    #: overview's nine categories; `TYPE_OF_ROLE`), which replaces the step database's own.
    type_ps: np.ndarray
    #: int64 [steps], ps: the DataLoader's time inside each step.
    dataloader_ps: np.ndarray
    has_dataloader: bool
    #: How the DataLoader loads, from its iterator's name: "workers" (num_workers > 0),
    #: "main" (num_workers=0), "both", or "" where unknown.
    dataloader_workers: str
    gpus: tuple[GpuMetrics, ...]
    #: (kind, calls, ps inside the steps, the names seen): "sync" and "item".
    sync: tuple[tuple[str, int, int, tuple[str, ...]], ...]
    kernels_in_steps: int
    kernel_ps_in_steps: int
    #: Kernel time (whole capture) of kernels launched by matrix ops, and of those on
    #: Tensor Cores.
    matrix_kernel_ps: int
    tensor_core_ps: int
    kernel_ps: int
    #: int64 [steps], ps: communication (collectives), computation (kernels; on a CPU-only
    #: host, CPU exec) and the time both ran at once (torch-tb-profiler's distributed view).
    communication_ps: np.ndarray
    computation_ps: np.ndarray
    overlap_ps: np.ndarray
    #: The run as the file states it: version, rank, world size, backend, NCCL version, GPUs.
    run: PyTorchFacts
    #: The operators view's rows (analysis/pytorch/op_shapes.py), whole capture.
    ops: tuple[OpRow, ...] = ()
    #: Per collective (host `nccl:*`/`gloo:*`/c10d ranges, NCCL kernels): (name, calls, ps),
    #: whole capture, by time.
    collectives: tuple[tuple[str, int, int], ...] = ()


#: How `Framework.PYTORCH` shows (xspace/producers/ `detect_framework`).
PYTORCH = "PyTorch"


def is_pytorch(framework: object) -> bool:
    """Whether a detected framework (`Framework`) is PyTorch."""
    return getattr(framework, "value", None) == PYTORCH


def pytorch_facts(table: EventTable, steps: StepDb, nesting: Nesting | None = None
                  ) -> PytorchFacts:
    on_device = table.on_device
    # Each name is read once, on the side its events are (loops over distinct names only).
    device_names = _names_on(table, on_device)
    host_names = _names_on(table, ~on_device)
    host_roles = _per_name(table, host_names, host_role, np.int8, -1)
    device_roles = _per_name(table, device_names, device_role, np.int8, -1)
    roles = np.where(on_device, device_roles[table.name_id], host_roles[table.name_id])
    begin = steps.begin_ps.astype(np.int64)
    end = begin + steps.duration_ps.astype(np.int64)
    # The roles with the copies split by direction (input, output, device to device).
    copies = on_device & (roles == MEMCPY)
    direction = _per_name(table, np.unique(table.name_id[copies]),
                          lambda n: _COPY_CODE.get(memcpy_direction(n), _D2D), np.int8, _D2D)
    ext = np.where(roles > MEMCPY, roles + 2, roles).astype(np.int8)
    ext[copies] = direction[table.name_id[copies]]
    ext_ps = priority_times_ps(table.start_ps, table.end_ps, ext, len(TYPE_OF_ROLE) - 1,
                               begin, end)
    role_ps = np.concatenate([ext_ps[:, :1], ext_ps[:, 1:4].sum(axis=1, keepdims=True),
                              ext_ps[:, 4:]], axis=1)
    type_ps = np.zeros((len(begin), NUM_TYPES), np.int64)
    for code, event_type in enumerate(TYPE_OF_ROLE):
        type_ps[:, event_type] += ext_ps[:, code]
    loader = dataloader_ps(table.start_ps, table.end_ps, roles, begin, end)
    loader_names = host_names[host_roles[host_names] == DATALOADER]
    has_loader = bool(len(loader_names))
    kinds = {dataloader_workers(table.names[i]) for i in loader_names.tolist()} - {""}
    workers = "both" if len(kinds) > 1 else next(iter(kinds), "")
    if len(begin):
        window_begin, window_end = begin, end
    elif len(table):
        window_begin = np.array([int(table.start_ps.min())])
        window_end = np.array([int(table.end_ps.max())])
    else:
        window_begin = window_end = np.zeros(0, np.int64)
    kernels = on_device & (roles == KERNEL) & (table.end_ps > table.start_ps)
    comm = roles == COMMUNICATION
    compute = kernels if bool(on_device.any()) else roles == CPU_EXEC
    comm_ps = Coverage(table.start_ps[comm], table.end_ps[comm]).within(begin, end)
    compute_ps = Coverage(table.start_ps[compute], table.end_ps[compute]).within(begin, end)
    either = comm | compute
    union_ps = Coverage(table.start_ps[either], table.end_ps[either]).within(begin, end)
    return PytorchFacts(
        role_ps=role_ps, type_ps=type_ps, dataloader_ps=loader, has_dataloader=has_loader,
        dataloader_workers=workers,
        gpus=_gpus(table, kernels, window_begin, window_end),
        sync=_sync_points(table, on_device, host_names, begin, end),
        kernels_in_steps=int(np.count_nonzero(
            Coverage(begin, end).within(table.start_ps[kernels], table.end_ps[kernels]) > 0)),
        kernel_ps_in_steps=int(np.sum(role_ps[:, KERNEL])) if len(begin) else 0,
        **_precision(table, kernels),
        communication_ps=comm_ps, computation_ps=compute_ps,
        overlap_ps=comm_ps + compute_ps - union_ps, run=run_facts(table.profile),
        ops=op_rows(table, nesting) if nesting is not None else (),
        collectives=_collectives(table, comm),
    )


def _collectives(table: EventTable, comm: np.ndarray) -> tuple[tuple[str, int, int], ...]:
    """Calls and time per collective name (one bincount over the communication events)."""
    rows = np.flatnonzero(comm)
    if not len(rows):
        return ()
    names = table.name_id[rows]
    calls = np.bincount(names, minlength=len(table.names))
    time = np.zeros(len(table.names), np.int64)
    np.add.at(time, names, table.end_ps[rows] - table.start_ps[rows])
    found = [(table.names[i], int(calls[i]), int(time[i])) for i in np.flatnonzero(calls)]
    return tuple(sorted(found, key=lambda c: (-c[2], c[0])))


def _gpus(table: EventTable, kernels: np.ndarray, begin: np.ndarray,
          end: np.ndarray) -> tuple[GpuMetrics, ...]:
    """Per GPU plane with kernels: its metrics (blocks and occupancy from `kernel_details`)."""
    details_code, details_text = table.str_stat_codes(KERNEL_DETAILS_STAT)
    parsed = [parse_kernel_details(t) for t in details_text]
    blocks_of = np.array([d.grid[0] * d.grid[1] * d.grid[2] for d in parsed] + [0], np.int64)
    occ_of = np.array([np.nan if d.occupancy_percent is None else d.occupancy_percent
                       for d in parsed] + [np.nan])
    out = []
    for k, plane in enumerate(table.profile.planes):
        if plane_kind(plane.name) != PlaneKind.GPU:
            continue
        rows = np.flatnonzero(kernels & (table.plane_index == k))
        if not len(rows):
            continue
        stats = plane.stat_values()
        sms = next((int(v) for s in SM_COUNT_STATS
                    if isinstance(v := stats.get(s), int | float) and v > 0), None)
        codes = details_code[rows]
        out.append(gpu_metrics(plane.name, table.start_ps[rows], table.end_ps[rows],
                               blocks_of[codes], occ_of[codes], sms, begin, end))
    return tuple(out)


def _names_on(table: EventTable, side: np.ndarray) -> np.ndarray:
    """The name rows of the events of one side (host or device), ascending."""
    return np.unique(table.name_id[side])


def _per_name(table: EventTable, names: np.ndarray, value: Callable[[str], int],
              dtype: type, fill: int) -> np.ndarray:
    """Per name row (and one more, for -1), `value(name)` for `names`, `fill` elsewhere."""
    out: np.ndarray = np.full(len(table.names) + 1, fill, dtype)
    out[names] = [value(table.names[i]) for i in names.tolist()]
    return out


_SYNC_KINDS = ("sync", "item")


def _sync_points(table: EventTable, on_device: np.ndarray, host_names: np.ndarray,
                 begin: np.ndarray, end: np.ndarray
                 ) -> tuple[tuple[str, int, int, tuple[str, ...]], ...]:
    kinds = _per_name(table, host_names,
                      lambda n: _SYNC_KINDS.index(k) if (k := sync_kind(n)) else -1, np.int8, -1)
    out = []
    for code, kind in enumerate(_SYNC_KINDS):
        named = kinds == code
        rows = np.flatnonzero(named[table.name_id] & ~on_device)
        inside = Coverage(begin, end).within(table.start_ps[rows], table.end_ps[rows])
        counted = rows[inside > 0]
        if len(counted):
            names = tuple(sorted({table.names[i] for i in np.unique(table.name_id[counted])}))
            out.append((kind, len(counted), int(inside.sum()), names))
    return tuple(out)


def _precision(table: EventTable, kernels: np.ndarray) -> dict[str, int]:
    rows = np.flatnonzero(kernels)
    if not len(rows):  # (no canonical columns built on a CPU-only profile)
        return {"matrix_kernel_ps": 0, "tensor_core_ps": 0, "kernel_ps": 0}
    duration = table.end_ps[rows] - table.start_ps[rows]
    canon = table.canonical
    matrix_text = np.array([is_matrix_op(t) for t in canon.texts] + [False])
    matrix = matrix_text[canon.op_name[rows]]
    tc_name = _per_name(table, np.unique(table.name_id[rows]), uses_tensor_core, bool, False)
    on_tc = tc_name[table.name_id[rows]]
    return {"matrix_kernel_ps": int(duration[matrix].sum()),
            "tensor_core_ps": int(duration[on_tc].sum()),
            "kernel_ps": int(duration.sum())}


def combine_facts(parts: list[PytorchFacts], rows: list[np.ndarray],
                  slowest: np.ndarray) -> PytorchFacts:
    """Several hosts' facts over their common steps: per step the slowest host's rows (as the
    step rows of ALL_HOSTS: analysis/hosts/multi_host.py), `rows[h]` host h's step rows of the
    common steps, `slowest[k]` the host of step k. GPUs listed host after host; sync points,
    kernel counts and times summed."""
    columns = np.arange(len(slowest))

    def pick(name: str) -> np.ndarray:
        stacked = np.stack([getattr(p, name)[r] for p, r in zip(parts, rows, strict=True)])
        return stacked[slowest, columns]

    sync: dict[str, tuple[int, int, set[str]]] = {}
    for part in parts:
        for kind, calls, ps, names in part.sync:
            old = sync.get(kind, (0, 0, set()))
            sync[kind] = (old[0] + calls, old[1] + ps, old[2] | set(names))
    return PytorchFacts(
        role_ps=pick("role_ps"), type_ps=pick("type_ps"), dataloader_ps=pick("dataloader_ps"),
        has_dataloader=any(p.has_dataloader for p in parts),
        dataloader_workers=("both" if len({p.dataloader_workers for p in parts} - {""}) > 1
                            else next(iter({p.dataloader_workers for p in parts} - {""}), "")),
        gpus=tuple(g for p in parts for g in p.gpus),
        sync=tuple((k, c, ps, tuple(sorted(n))) for k, (c, ps, n) in sync.items()),
        kernels_in_steps=max(p.kernels_in_steps for p in parts),
        kernel_ps_in_steps=max(p.kernel_ps_in_steps for p in parts),
        matrix_kernel_ps=sum(p.matrix_kernel_ps for p in parts),
        tensor_core_ps=sum(p.tensor_core_ps for p in parts),
        kernel_ps=sum(p.kernel_ps for p in parts),
        communication_ps=pick("communication_ps"), computation_ps=pick("computation_ps"),
        overlap_ps=pick("overlap_ps"), run=parts[0].run,
        ops=merge_op_rows([p.ops for p in parts]),
    )


def merge_op_rows(per_host: list[tuple[OpRow, ...]]) -> tuple[OpRow, ...]:
    """Operator rows of several hosts summed per op."""
    sums: dict[str, list[int]] = {}
    for rows in per_host:
        for r in rows:
            acc = sums.setdefault(r.op_name, [0, 0, 0, 0, r.min_ps])
            acc[0] += r.calls
            acc[1] += r.total_ps
            acc[2] += r.self_ps
            acc[3] += r.device_ps
            acc[4] = min(acc[4], r.min_ps)
    out = [OpRow(name, *acc) for name, acc in sums.items()]
    out.sort(key=lambda r: (-r.device_ps, -r.self_ps, r.op_name))
    return tuple(out)
