"""torch-tb-profiler's step-time breakdown, per step, from the roles of the events.

Roles, in priority order (a higher role wins wherever two overlap, as torch-tb-profiler's
`OverallParser` takes each role's ranges out of the step before the next role):

| role          | events (xspace/producers/pytorch_roles.py)                                  |
|---------------|------------------------------------------------------------------------------|
| kernel        | device kernels that are no collective                                        |
| memcpy        | device copies                                                                |
| memset        | device memsets                                                               |
| communication | collective kernels (`nccl*`) and host collectives (`nccl:*`, `gloo:*`, c10d) |
| runtime       | CUDA runtime and driver calls (`cudaLaunchKernel`, `cudaMemcpyAsync`, ...)   |
| dataloader    | the DataLoader's `__next__` ranges (`enumerate(DataLoader)#...__next__`)     |
| cpu_exec      | every other host op or annotation (aten ops, record_function ranges)         |
| other         | the rest of the step: no event covers it                                     |

Each role's time in step s is |union of roles >= it, inside s| - |union of roles > it, inside
s|, so the eight always sum to the step time (`Coverage`: one sort per role, no loop per event).
Unlike torch-tb-profiler, collectives are communication whatever the NCCL version names them
(send/recv, all-to-all, custom all-reduce kernels), and device time is read from every trace
format PyTorch writes (its 2021 category names and today's).
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.pytorch.coverage import Coverage

ROLES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec",
         "other")
ROLE_LABELS = {
    "kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset",
    "communication": "Communication", "runtime": "Runtime", "dataloader": "DataLoader",
    "cpu_exec": "CPU Exec", "other": "Other",
}
#: Role codes per event: the index in ROLES; NO_ROLE for events no role counts (step markers,
#: instants, the trace's own span, GPU mirrors of host annotations).
NO_ROLE = -1
OTHER = ROLES.index("other")


def role_times_ps(starts: np.ndarray, ends: np.ndarray, roles: np.ndarray,
                  step_begin: np.ndarray, step_end: np.ndarray) -> np.ndarray:
    """int64 [steps, len(ROLES)]: each step's time per role (ps); rows sum to the step time.

    `starts`, `ends`, `roles`: per event; `step_begin`, `step_end`: per step."""
    return priority_times_ps(starts, ends, roles, OTHER, step_begin, step_end)


def priority_times_ps(starts: np.ndarray, ends: np.ndarray, codes: np.ndarray,
                      num_codes: int, step_begin: np.ndarray,
                      step_end: np.ndarray) -> np.ndarray:
    """int64 [steps, num_codes + 1]: per step, the time of each code 0 .. num_codes - 1 (a
    lower code wins an overlap), and in the last column the rest of the step."""
    step_begin = np.asarray(step_begin, np.int64)
    step_end = np.asarray(step_end, np.int64)
    out = np.zeros((len(step_begin), num_codes + 1), np.int64)
    covered_above = np.zeros(len(step_begin), np.int64)  # union of the codes before this one
    chosen = np.zeros(len(codes), bool)
    for code in range(num_codes):
        members = codes == code
        if not members.any():
            continue
        chosen |= members
        union = Coverage(starts[chosen], ends[chosen]).within(step_begin, step_end)
        out[:, code] = union - covered_above
        covered_above = union
    out[:, num_codes] = (step_end - step_begin) - covered_above
    return out


def dataloader_ps(starts: np.ndarray, ends: np.ndarray, roles: np.ndarray,
                  step_begin: np.ndarray, step_end: np.ndarray) -> np.ndarray:
    """Per step, the time the DataLoader's ranges cover inside it (whatever runs meanwhile:
    the input pipeline's measure, not the breakdown's priority share)."""
    members = roles == ROLES.index("dataloader")
    return Coverage(starts[members], ends[members]).within(step_begin, step_end)
