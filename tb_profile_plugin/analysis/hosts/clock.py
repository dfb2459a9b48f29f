"""One clock for every view: the shown time zero of a host, and the step holding a time.

Events count ps from `Profile.origin_ns` (the earliest line timestamp, xspace/model.py). That
is no time a user sees: a TF 2.4 capture's allocator line starts 128.7 ms after the earliest
line, so a memory peak counted from it stood 128.7 ms later than the same allocation in the
trace. Every view that shows a time in ms counts it from **the host's earliest event**, the
trace viewer's zero for a single host (trace/window.py `trace_set`; its index's `first_ps`
is the same minimum over the same lines): `shown_ps = start_ps - time_zero_ps(profile)`.
(ALL_HOSTS in the trace counts from the earliest event over the hosts; each host's own
views count from its own.)

Steps are named as the overview names them: `step_num` of the overview's step table
(analysis/steps/profile_steps.py, the host analysis' `steps`), whose step
`[begin_ps, begin_ps + duration_ps)` holds the time, never a forest group id (group 170 of a
host whose steps are 429-598). `overview_step_at` gives it, -1 outside every step.
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.events.profile_cache import per_profile
from tb_profile_plugin.analysis.steps.profile_steps import profile_steps
from tb_profile_plugin.xspace.model import Profile


def _time_zero_ps(profile: Profile) -> int:
    """The earliest event start of `profile` (ps from `Profile.origin_ns`); 0 without events.
    One minimum per line, no loop over events."""
    firsts = [int(line.events.start_ps.min()) for plane in profile.planes
              for line in plane.lines if len(line.events)]
    return min(firsts, default=0)


#: The shown time zero of `profile`, in its `start_ps` units (computed once per profile).
time_zero_ps = per_profile(_time_zero_ps)


def overview_step_at(profile: Profile, time_ps: np.ndarray) -> np.ndarray:
    """Per time (ps from `Profile.origin_ns`): the overview's step number of the step whose
    span holds it, -1 where none does (between steps, or a step the overview dropped)."""
    steps = profile_steps(profile).steps
    return step_at(steps.begin_ps, steps.duration_ps, steps.step_num, time_ps)


def step_at(begin_ps: np.ndarray, duration_ps: np.ndarray, step_num: np.ndarray,
            time_ps: np.ndarray) -> np.ndarray:
    """Per time: `step_num` of the span `[begin, begin + duration)` holding it, -1 where none
    does. Spans in begin order and not overlapping (a step table's); one searchsorted."""
    time_ps = np.asarray(time_ps, np.int64)
    if len(begin_ps) == 0:
        return np.full(time_ps.shape, -1, np.int64)
    at = np.searchsorted(begin_ps, time_ps, "right") - 1
    safe = np.maximum(at, 0)
    inside = (at >= 0) & (time_ps < begin_ps[safe] + duration_ps[safe])
    return np.where(inside, step_num[safe], -1).astype(np.int64)
