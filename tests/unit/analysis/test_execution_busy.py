"""Each XLA execution's busy time is the union of its own events' intervals, on real CPU and
GPU captures (the CPU-only path once put them in the executions' order twice, so that a
module's busy time went to another one: jax_cpu_plain's jitted functions 81% / 19% of device
time instead of 93% / 7%)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.steps.step_db import union_per_group
from tb_profile_plugin.analysis.steps.xla_executions import profile_executions
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import xplane_files

CAPTURES = [p for p in xplane_files() if p.parts[-5].startswith(("jax_cpu", "jax_nvidia"))]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.parts[-5])
def test_busy_time_is_the_union_of_each_executions_own_events(path: Path) -> None:
    profile = decode_xspace(path.read_bytes())
    executions = profile_executions(profile)
    assert len(executions.busy_ps), "the capture runs XLA modules"
    table = profile_forest(profile).table
    rows = np.flatnonzero(np.asarray(executions.event_execution) >= 0)
    own = np.asarray(executions.event_execution)[rows].astype(np.int64)
    expected = union_per_group(own, table.start_ps[rows], table.end_ps[rows],
                               len(executions.busy_ps))
    np.testing.assert_array_equal(executions.busy_ps, expected)
    assert np.all(executions.busy_ps <= executions.end_ps - executions.begin_ps)
