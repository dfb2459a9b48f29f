"""The pod viewer of one host: one column per step, the host's own steps, no stragglers."""

from __future__ import annotations

from tb_profile_plugin.tools import registry
from tb_profile_plugin.tools.analysis_views import has_host_events
from tb_profile_plugin.xspace.decode import decode_xspace
from tests import pod_runs
from tests.pod_runs import HOST_COMPUTE_US, SLOW_INPUT_US, STEP_US, HostPlan

# Five steps numbered 10..14; the third (global step 2, step 12) waits SLOW_INPUT_US for input.
SOLO = HostPlan("solo", 0, 5, 10, slow_steps=frozenset({2}))


def _solo_request() -> registry.ViewRequest:
    profile = decode_xspace(pod_runs.host_xspace(SOLO))
    return registry.ViewRequest("run", SOLO.name, {SOLO.name: profile}, {})


def test_one_host_is_offered_the_pod_viewer() -> None:
    facts = registry.RunFacts.of(_solo_request().profiles)
    assert len(facts.hosts) == 1 and not facts.has_gpu_planes and has_host_events(facts)
    assert "pod_viewer" in registry.views_for(facts)


def test_one_host_has_one_column_per_step_with_exact_times() -> None:
    doc = registry.VIEWS["pod_viewer"].build(_solo_request())
    assert doc["hosts"] == ["solo"] and doc["num_steps"] == 5 and doc["step_start"] == 0
    assert [s["step_num"] for s in doc["steps"]] == [10, 11, 12, 13, 14]
    assert [s["index"] for s in doc["steps"]] == [0, 1, 2, 3, 4]
    for step in doc["steps"]:
        (column,) = step["hosts"]
        slow = step["step_num"] == 12
        assert column["host"] == "solo" and column["step_num"] == step["step_num"]
        assert column["step_time_us"] == STEP_US + (SLOW_INPUT_US if slow else 0)
        breakdown = column["breakdown_us"]
        assert breakdown["host_compute"] == HOST_COMPUTE_US
        assert breakdown["input"] == (SLOW_INPUT_US if slow else 0)
        assert breakdown["all_others"] == STEP_US - HOST_COMPUTE_US
        assert sum(breakdown.values()) == column["step_time_us"]
        assert column["bottleneck"] == ("input" if slow else "host_compute")
        assert "cores" not in column
    assert doc["stragglers"] == []
    assert doc["straggler_steps_per_host"] == [{"host": "solo", "num_steps": 0}]
    assert doc["multi_host"]["chief"] == "solo"
    assert doc["multi_host"]["num_common_steps"] == 5
