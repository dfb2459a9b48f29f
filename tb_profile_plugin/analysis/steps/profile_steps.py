"""The steps of one profile, the host's and each GPU's, computed once and kept with it.

What the overview's step table, the trace's Steps track and the memory profile's step numbers
all read (so they name and span the same steps), without the op tables the host analysis
adds (analysis/hosts/host_analysis.py builds on this): a trace opened first pays for its
steps, not for the whole overview.

- `steps`: the step database (analysis/steps/step_db.py) of the host's steps: the groups the
  forest found (analysis/events/forest.py), else, where no profiler marks steps, the
  executions of the jitted step function where they repeat like a loop (execution_steps.py).
- `core_steps`: per GPU plane, its own step database (its device events only; a single GPU
  shares the host's).
- `every_type`: the event type of every event (int8, `classify(grouped_only=False)`), which
  the host analysis' precision split reads; one byte per event.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.profile_cache import per_profile, profile_forest
from tb_profile_plugin.analysis.steps.execution_steps import RULE as EXECUTION_RULE
from tb_profile_plugin.analysis.steps.execution_steps import execution_steps, not_a_loop
from tb_profile_plugin.analysis.steps.step_db import (
    StepDb,
    build_core_step_dbs,
    build_step_db,
    classify,
)
from tb_profile_plugin.analysis.steps.xla_executions import profile_executions
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers.pytorch import is_kineto_profile
from tb_profile_plugin.xspace.schema import is_gpu_plane
from tb_profile_plugin.xspace.unique_rows import unique_ints


@dataclass(frozen=True)
class ProfileSteps:
    steps: StepDb
    core_steps: tuple[tuple[str, StepDb], ...]  # (GPU plane name, its steps)
    root_rule: str  # the forest's rule, or execution_steps.RULE
    step_module: str  # the jitted step function, where the steps are its executions
    not_a_loop: str  # why repeated executions were not taken as steps ("" otherwise)
    every_type: np.ndarray  # int8 event type of every event (grouped or not)
    has_device: bool


def _build_profile_steps(profile: Profile) -> ProfileSteps:
    forest = profile_forest(profile)
    table = forest.table
    every_type, on_device, has_device = classify(forest, grouped_only=False)
    types = np.where(forest.group_id >= 0, every_type, -1)  # classify's grouped_only rule
    # PyTorch: a step is its ProfilerStep#N host range, every one (docs/pytorch.md "Steps").
    host_ranges = is_kineto_profile(profile)
    steps = build_step_db(forest, (types, on_device, has_device), host_ranges=host_ranges)
    executions = profile_executions(profile)
    root_rule, step_module, no_loop = forest.root_rule, "", ""
    if root_rule == "none":
        from_executions = execution_steps(forest, executions)
        if from_executions is not None:
            steps, step_module = from_executions.steps, from_executions.module
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
    elif gpus:
        device_planes = set(unique_ints(table.plane_index[on_device].astype(np.int64))[0].tolist())
        # A GPU with every device event (one GPU): its steps are the host's (the same inputs);
        # the others' own: the host's events and that GPU's, all in one pass (step_db.py).
        others = [index for index, _ in gpus if not device_planes <= {index}]
        own_dbs = dict(zip(others, build_core_step_dbs(
            forest, (types, on_device, has_device), others, host_ranges=host_ranges),
            strict=True))
        core_steps = [(name, own_dbs.get(index, steps)) for index, name in gpus]
    return ProfileSteps(steps, tuple(core_steps), root_rule, step_module, no_loop,
                        every_type, has_device)


#: The steps of `profile` (module docstring), built once per decoded profile.
profile_steps = per_profile(_build_profile_steps)
