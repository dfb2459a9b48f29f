"""torch-tb-profiler's step breakdown by priority (analysis/pytorch/step_roles.py), exact."""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.pytorch.coverage import Coverage, union_within
from tb_profile_plugin.analysis.pytorch.step_roles import (
    NO_ROLE,
    ROLES,
    dataloader_ps,
    role_times_ps,
)

R = {name: code for code, name in enumerate(ROLES)}


def test_coverage_merges_overlaps_and_clips_to_windows() -> None:
    cov = Coverage(np.array([0, 5, 20, 2, 40]), np.array([10, 12, 30, 3, 40]))
    assert cov.total == 12 + 10  # [0, 12) and [20, 30); the empty [40, 40) adds nothing
    got = cov.within(np.array([0, 6, 11, 25, 31]), np.array([100, 21, 13, 26, 39]))
    assert got.tolist() == [22, 6 + 1, 1, 1, 0]
    assert union_within(np.zeros(0), np.zeros(0), np.array([0]), np.array([5])).tolist() == [0]


def test_roles_by_priority_sum_to_the_step() -> None:
    # Step [0, 100): a kernel [10, 30) under a runtime call [5, 25), a memcpy [28, 40), an aten
    # op [0, 60) on the host, the DataLoader [60, 75), a step marker and an instant (no role).
    starts = np.array([10, 5, 28, 0, 60, 0, 50])
    ends = np.array([30, 25, 40, 60, 75, 100, 50])
    roles = np.array([R["kernel"], R["runtime"], R["memcpy"], R["cpu_exec"], R["dataloader"],
                      NO_ROLE, R["cpu_exec"]])
    got = role_times_ps(starts, ends, roles, np.array([0]), np.array([100]))[0]
    expected = {"kernel": 20, "memcpy": 10, "memset": 0, "communication": 0, "runtime": 5,
                "dataloader": 15, "cpu_exec": 25, "other": 25}
    assert dict(zip(ROLES, got.tolist(), strict=True)) == expected
    assert got.sum() == 100


def test_each_step_counts_only_its_own_time() -> None:
    # Two steps [0, 50) and [50, 120); a kernel [40, 70) straddles them, a collective [100, 130)
    # runs past the second step's end.
    starts = np.array([40, 100, 0, 55])
    ends = np.array([70, 130, 45, 65])
    roles = np.array([R["kernel"], R["communication"], R["cpu_exec"], R["dataloader"]])
    got = role_times_ps(starts, ends, roles, np.array([0, 50]), np.array([50, 120]))
    assert got[0].tolist() == [10, 0, 0, 0, 0, 0, 40, 0]
    assert got[1].tolist() == [20, 0, 0, 20, 0, 0, 0, 30]
    assert got.sum(axis=1).tolist() == [50, 70]
    # The input pipeline's DataLoader time is what its ranges cover, kernels or not.
    assert dataloader_ps(starts, ends, roles, np.array([0, 50]),
                         np.array([50, 120])).tolist() == [0, 10]
