"""The steps of one profile, the host's and each GPU's, computed once and kept with it.

What the overview's step table, the trace's Steps track and the memory profile's step numbers
all read (so they name and span the same steps), without the op tables the host analysis
adds (analysis/hosts/host_analysis.py builds on this): a trace opened first pays for its
steps, not for the whole overview.

- `steps`: the step database (analysis/steps/step_db.py) of the host's steps: the groups the
  forest found (analysis/events/forest.py), else, where no profiler marks steps, the
  executions of the jitted step function where they repeat like a loop (execution_steps.py).
  Built on first read: the trace's Steps tracks of a several-GPU host read only `core_steps`
  (3 of a 10M-event 8-GPU host's 39 s first window; docs/benchmarks.md).
- `core_steps`: per GPU plane, its own step database (its device events only; a single GPU
  shares the host's).
- `every_type`: the event type of every event (int8, `classify(grouped_only=False)`), which
  the host analysis' precision split reads; one byte per event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from tb_profile_plugin.analysis.events.profile_cache import per_profile, profile_forest
from tb_profile_plugin.analysis.steps.core_step_dbs import (
    core_step_dbs,
    host_step_db,
    planes_with_device_events,
)
from tb_profile_plugin.analysis.steps.execution_steps import RULE as EXECUTION_RULE
from tb_profile_plugin.analysis.steps.execution_steps import execution_steps, not_a_loop
from tb_profile_plugin.analysis.steps.step_db import StepDb, build_step_db, classify
from tb_profile_plugin.analysis.steps.xla_executions import profile_executions
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers.pytorch import is_kineto_profile
from tb_profile_plugin.xspace.schema import is_gpu_plane


@dataclass(frozen=True)
class ProfileSteps:
    core_steps: tuple[tuple[str, StepDb], ...]  # (GPU plane name, its steps)
    root_rule: str  # the forest's rule, or execution_steps.RULE
    step_module: str  # the jitted step function, where the steps are its executions
    not_a_loop: str  # why repeated executions were not taken as steps ("" otherwise)
    every_type: np.ndarray  # int8 event type of every event (grouped or not)
    has_device: bool
    build_steps: Callable[[], StepDb] = field(repr=False, compare=False)  # memoised

    @property
    def steps(self) -> StepDb:
        """The host's step database (module docstring), built on first read."""
        return self.build_steps()


def _build_profile_steps(profile: Profile) -> ProfileSteps:
    forest = profile_forest(profile)
    table = forest.table
    every_type, on_device, has_device = classify(forest, grouped_only=False)
    types = np.where(forest.group_id >= 0, every_type, -1)  # classify's grouped_only rule
    # PyTorch: a step is its ProfilerStep#N host range, every one (docs/pytorch.md "Steps").
    host_ranges = is_kineto_profile(profile)

    # (host begin, host end, device begin, device end) per group, where core_step_dbs has them
    markers: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    @cache
    def grouped_steps() -> StepDb:  # (the grouped types again: one byte per event less kept)
        grouped = np.where(forest.group_id >= 0, every_type, -1)
        classified = (grouped, on_device, has_device)
        host_marks = markers[0] if markers else None
        found = host_step_db(forest, classified, host_ranges, host_marks)
        return found if found is not None else build_step_db(
            forest, classified, host_ranges=host_ranges, markers=host_marks)

    build_steps: Callable[[], StepDb] = grouped_steps
    executions = profile_executions(profile)
    root_rule, step_module, no_loop = forest.root_rule, "", ""
    if root_rule == "none":
        from_executions = execution_steps(forest, executions)
        if from_executions is not None:
            step_module = from_executions.module
            build_steps = _constant(from_executions.steps)
            root_rule = EXECUTION_RULE
        else:
            no_loop = not_a_loop(executions)
    core_steps = []
    gpus = [(index, plane.name) for index, plane in enumerate(profile.planes)
            if is_gpu_plane(plane.name)]
    if root_rule == EXECUTION_RULE:
        for index, name in gpus:
            own_steps = execution_steps(forest, executions, plane_index=index)
            if own_steps is not None:
                core_steps.append((name, own_steps.steps))
    else:
        # A GPU holding every device event shares the host's database (the same inputs); the
        # others' own databases are built together where the compiled sweep is
        # (core_step_dbs.py), else one by one.
        device_planes = planes_with_device_events(table)
        own_planes = [index for index, _ in gpus if device_planes - {index}]
        together = core_step_dbs(forest, (types, on_device, has_device), own_planes,
                                 host_ranges)
        built = {}
        if together is not None:
            built = dict(zip(own_planes, together.dbs, strict=True))
            markers.append(together.host_markers)
        for index, name in gpus:
            if index not in own_planes:
                core_steps.append((name, build_steps()))
            elif index in built:
                core_steps.append((name, built[index]))
            else:
                own = types.copy()
                own[on_device & (table.plane_index != index)] = -1  # other devices' events
                core_steps.append((name, build_step_db(forest, (own, on_device, has_device),
                                                       host_ranges=host_ranges)))
    return ProfileSteps(tuple(core_steps), root_rule, step_module, no_loop, every_type,
                        has_device, build_steps)


def _constant(steps: StepDb) -> Callable[[], StepDb]:
    return lambda: steps


#: The steps of `profile` (module docstring), built once per decoded profile.
profile_steps = per_profile(_build_profile_steps)
