"""Where the host spends a device program's steps: host events by self time within the steps.

When the device waits on the host (a JAX or TensorFlow program whose GPU is busy for a sliver of
each step while the host computes the rest), the useful question is which host work that is.
The step's host events, the step markers themselves left out, are ranked by their self time
(duration less that of the events nested in them on the same thread) summed over the kept
steps. With JAX's Python tracer on (`jax.profiler.trace`'s default) the host events include the
program's own Python functions, written `$<file>:<line> <function>`; they are shown as
`<function> (<file>:<line>)`.

Cost: two `bincount`s over the events (self times, then per name), computed only when the
advice needs them (analysis/advice/recommendations.py `host_bound`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.forest import Forest
from tb_profile_plugin.analysis.steps.step_db import StepDb
from tb_profile_plugin.xspace.producers import python_function_label

_PS_PER_MS = 1e9


@dataclass(frozen=True)
class HostHotspot:
    name: str  # as users read it: a Python function as `f (file.py:12)`
    self_ms_per_step: float


def host_hotspots(forest: Forest, steps: StepDb, limit: int = 3) -> tuple[HostHotspot, ...]:
    """The `limit` host events (by name) with the most self time in the kept steps."""
    if len(steps) == 0:
        return ()
    table = forest.table
    kept = np.zeros(forest.num_groups + 1, bool)
    kept[steps.group_id] = True
    group = forest.group_id
    chosen = ~table.on_device & kept[np.where(group >= 0, group, forest.num_groups)]
    chosen[forest.root_event] = False
    duration = table.end_ps - table.start_ps
    parent = forest.nesting.parent
    nested = parent >= 0
    children_ps = np.bincount(parent[nested], weights=duration[nested], minlength=len(table))
    self_ps = np.maximum(duration - children_ps, 0)
    per_name = np.bincount(table.name_id[chosen], weights=self_ps[chosen],
                           minlength=len(table.names))
    top = np.argsort(-per_name, kind="stable")[:limit]
    return tuple(HostHotspot(python_function_label(table.names[k]),
                             float(per_name[k]) / len(steps) / _PS_PER_MS)
                 for k in top.tolist() if per_name[k] > 0)
