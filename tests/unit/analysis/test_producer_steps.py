"""Steps of a file the producer grouped before writing (TF <= 2.4 on GPU), exact numbers.

tests/xspace_builder.py `tf24_grouped_gpu_space`: every event of step k carries `group_id` k,
the step's FunctionRun carries `step_name`, and the GPU plane holds the producer's own Steps
line. The producer's groups are the steps (forest rule "producer"), the step_name event is the
host marker, and each step's breakdown follows from the layout's timeline (see the builder).
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.events.forest import build_forest
from tb_profile_plugin.analysis.events.table import build_event_table
from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.steps.step_db import EventType
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import build_view
from tests.xspace_builder import XSpaceBuilder, tf24_grouped_gpu_space

US = 1_000_000


def test_producer_groups_are_the_steps() -> None:
    forest = build_forest(build_event_table(decode_xspace(tf24_grouped_gpu_space(steps=3))))
    assert forest.root_rule == "producer"
    assert forest.num_groups == 3
    assert forest.step_num.tolist() == [0, 1, 2]
    # The roots are the step_name events (the FunctionRuns), one per group.
    names = [forest.table.names[forest.table.name_id[r]] for r in forest.root_event]
    assert names == ["FunctionRun"] * 3


def test_producer_steps_have_exact_breakdowns() -> None:
    steps = analyze(decode_xspace(tf24_grouped_gpu_space(steps=2))).steps
    assert steps.step_num.tolist() == [0, 1]
    assert steps.begin_ps.tolist() == [0, 300 * US]
    assert steps.duration_ps.tolist() == [250 * US, 250 * US]
    expected = np.zeros(len(EventType), np.int64)
    expected[EventType.HOST_PREPARE] = 50 * US  # ExecutorState::Process, launch inside
    expected[EventType.HOST_TO_DEVICE] = 5 * US
    expected[EventType.DEVICE_COMPUTE_32] = 150 * US
    expected[EventType.UNKNOWN_TIME] = 45 * US
    assert steps.type_ps.tolist() == [expected.tolist()] * 2


def test_step_name_without_number_falls_back_to_the_group_id() -> None:
    b = XSpaceBuilder()
    python = b.plane("/host:CPU").line("python", line_id=1)
    for k in range(2):
        python.event("SessionRun", k * 100 * US, 50 * US, group_id=7 + k, step_name="train")
        python.event("dense/MatMul:MatMul", k * 100 * US + 10 * US, 20 * US, group_id=7 + k)
    forest = build_forest(build_event_table(decode_xspace(b.serialize())))
    assert forest.root_rule == "producer"
    assert forest.step_num.tolist() == [7, 8]


def test_overview_and_pod_viewer_get_the_producer_steps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bert.xplane.pb"
    path.write_bytes(tf24_grouped_gpu_space(steps=3))
    overview = build_view("overview_page", path)
    assert overview["step_rule"] == "producer"
    assert [s["step_num"] for s in overview["steps"]] == [0, 1, 2]
    assert [s["step_time_ms"] for s in overview["steps"]] == [0.25, 0.25, 0.25]
    pod = build_view("pod_viewer", path)
    assert pod["num_steps"] == 3
