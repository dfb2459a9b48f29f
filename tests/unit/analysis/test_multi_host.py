"""A synthetic 4-host run: step alignment, ALL_HOSTS figures, pod viewer columns and stragglers.

Hosts (tests/pod_runs.py) start at different step numbers, capture different windows, have
skewed or gRPC-relative clocks, and worker_2 waits 800 µs for input in global steps 6 and 9.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.hosts.step_alignment import HostSteps, align_steps
from tb_profile_plugin.analysis.steps.step_db import NUM_TYPES, StepDb
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests import pod_runs
from tests.pod_runs import FOUR_HOSTS, FOUR_HOSTS_CHIEF, FOUR_HOSTS_COMMON, HostPlan


def _request(plans: list[HostPlan], params: dict[str, str] | None = None,
             paths: dict[str, str] | None = None) -> registry.ViewRequest:
    profiles = {p.name: decode_xspace(pod_runs.host_xspace(p)) for p in plans}
    host = "ALL_HOSTS" if len(plans) > 1 else plans[0].name
    return registry.ViewRequest("run", host, profiles, params or {}, paths or {})


@pytest.fixture(scope="module")
def pod() -> dict:
    return registry.VIEWS["pod_viewer"].build(_request(FOUR_HOSTS))


def test_aligned_steps_are_exactly_the_common_ones(pod: dict) -> None:
    plans = {p.name: p for p in FOUR_HOSTS}
    assert pod["num_steps"] == len(FOUR_HOSTS_COMMON) == len(pod["steps"])
    assert pod["multi_host"]["chief"] == FOUR_HOSTS_CHIEF
    for step, g in zip(pod["steps"], FOUR_HOSTS_COMMON, strict=True):
        assert step["step_num"] == plans[FOUR_HOSTS_CHIEF].step_num(g)
        assert [c["host"] for c in step["hosts"]] == [p.name for p in FOUR_HOSTS]
        for column in step["hosts"]:
            assert column["step_num"] == plans[column["host"]].step_num(g)


def test_columns_hold_the_known_breakdown(pod: dict) -> None:
    slow_host, slow_globals, _ = pod_runs.FOUR_HOSTS_SLOW
    for step, g in zip(pod["steps"], FOUR_HOSTS_COMMON, strict=True):
        for column in step["hosts"]:
            slow = column["host"] == slow_host and g in slow_globals
            expected_input = pod_runs.SLOW_INPUT_US if slow else 0.0
            assert column["breakdown_us"]["input"] == pytest.approx(expected_input)
            assert column["breakdown_us"]["host_compute"] == pytest.approx(
                pod_runs.HOST_COMPUTE_US)
            assert column["step_time_us"] == pytest.approx(
                pod_runs.STEP_US + expected_input)
            assert sum(column["breakdown_us"].values()) == pytest.approx(column["step_time_us"])
            assert column["bottleneck"] == ("input" if slow else "host_compute")  # 800 > 600


def test_stragglers_name_the_slow_host_steps_and_category(pod: dict) -> None:
    slow_host, slow_globals, category = pod_runs.FOUR_HOSTS_SLOW
    chief = next(p for p in FOUR_HOSTS if p.name == FOUR_HOSTS_CHIEF)
    significant = [r for r in pod["stragglers"] if r["significant"]]
    assert sorted(r["step_num"] for r in significant) == [chief.step_num(g) for g in slow_globals]
    for row in significant:
        assert row["host"] == slow_host and row["category"] == category
        assert row["lag_us"] == pytest.approx(pod_runs.SLOW_INPUT_US)  # the median is 1000 µs
        assert row["category_lag_us"] == pytest.approx(pod_runs.SLOW_INPUT_US)
    assert all(r["lag_us"] == pytest.approx(0.0) for r in pod["stragglers"]
               if not r["significant"])
    assert {r["host"]: r["num_steps"] for r in pod["straggler_steps_per_host"]} == {
        "worker_0": 0, "worker_1": 0, "worker_2": 2, "worker_3": 0}


def test_all_hosts_overview_uses_the_slowest_host_per_step() -> None:
    doc = registry.VIEWS["overview_page"].build(_request(FOUR_HOSTS))
    n = len(FOUR_HOSTS_COMMON)
    slow = len(pod_runs.FOUR_HOSTS_SLOW[1])
    expected_avg_ms = (n * pod_runs.STEP_US + slow * pod_runs.SLOW_INPUT_US) / n / 1000
    assert len(doc["steps"]) == n
    assert doc["step_time_ms"]["avg"] == pytest.approx(expected_avg_ms)
    assert doc["step_time_ms"]["max"] == pytest.approx(
        (pod_runs.STEP_US + pod_runs.SLOW_INPUT_US) / 1000)
    assert [s["host"] for s in doc["steps"] if s["breakdown_ms"]["input"] > 0] == \
        ["worker_2"] * slow
    assert doc["run_environment"]["host_count"] == 4
    assert doc["run_environment"]["hostnames"] == [p.name for p in FOUR_HOSTS]
    # Every host's dropped steps are reported, with their numbers.
    dropped = [w for w in doc["diagnostics"]["warnings"] if "not common to every host" in w]
    assert len(dropped) == 4
    assert any(w.startswith("worker_0: 4 of its 18 steps (numbers 101–103, 118)") for w in dropped)
    ops = registry.VIEWS["tensorflow_stats"].build(_request(FOUR_HOSTS))
    matmul = [r for r in ops["rows"] if r["op_name"] == "dense_0/MatMul"]
    assert matmul[0]["occurrences"] == sum(p.last_global - p.first_global for p in FOUR_HOSTS)


def test_hosts_in_parallel_give_the_same_document(tmp_path: Path) -> None:
    from tb_profile_plugin.analysis.hosts import host_pool

    paths = pod_runs.write_run(tmp_path / "session", FOUR_HOSTS)
    host_pool.clear_cache()
    before = host_pool.pool_runs
    pooled = registry.VIEWS["pod_viewer"].build(_request(FOUR_HOSTS, paths=paths))
    assert host_pool.pool_runs == before + 4  # analysed in the worker processes
    in_process = registry.VIEWS["pod_viewer"].build(_request(FOUR_HOSTS))
    assert pooled == in_process
    registry.VIEWS["overview_page"].build(_request(FOUR_HOSTS, paths=paths))
    assert host_pool.pool_runs == before + 4  # the second view is served from the cache


def test_step_window_parameters() -> None:
    doc = registry.VIEWS["pod_viewer"].build(
        _request(FOUR_HOSTS, {"step_start": "3", "step_count": "2"}))
    assert doc["num_steps"] == len(FOUR_HOSTS_COMMON) and doc["step_start"] == 3
    assert [s["index"] for s in doc["steps"]] == [3, 4]
    assert any("step_start" in line for line in doc["diagnostics"]["info"])


def _steps(begins_us: list[int], step_nums: list[int] | None = None) -> StepDb:
    begin = np.array(begins_us, np.int64) * 1_000_000
    n = len(begin)
    nums = np.array(step_nums if step_nums is not None else range(n), np.int64)
    return StepDb(nums, np.arange(n), begin, np.full(n, 800_000_000), np.zeros((n, NUM_TYPES),
                  np.int64), True, 0, 0)


def test_empty_intersection_and_coordinators_are_reported() -> None:
    far = align_steps({
        "a": HostSteps(_steps([0, 1000, 2000]), 0, True),
        "b": HostSteps(_steps([0, 1000, 2000], [7, 8, 9]), 10**12, True),  # 1000 s later
        "coordinator": HostSteps(_steps([0]), 0, False),
    })
    assert far.coordinators == ("coordinator",)
    assert far.empty_intersect and far.num_steps == 0
    assert far.by_time["b"] is False
    shared = align_steps({
        "a": HostSteps(_steps([0, 1000, 2000], [5, 6, 7]), 0, True),
        "b": HostSteps(_steps([0, 1000, 2000], [6, 7, 8]), 10**12, True),
    })
    assert shared.by_time["b"] is False and shared.num_steps == 2  # matched by step number
    assert shared.indices["a"].tolist() == [1, 2] and shared.indices["b"].tolist() == [0, 1]


def test_hosts_far_apart_in_time_match_by_step_number_or_not_at_all() -> None:
    # One clock 1000 s ahead: no step overlaps in time. Same step numbers: matched by number
    # (steps 1-6 of both; 0 and 7 are partial), with a warning.
    plans = [HostPlan("early", 0, 8, 0), HostPlan("late", 100, 108, 0, clock_skew_us=10**9)]
    doc = registry.VIEWS["overview_page"].build(_request(plans))
    assert [s["step_num"] for s in doc["steps"]] == [1, 2, 3, 4, 5, 6]
    assert any("by step number" in w for w in doc["diagnostics"]["warnings"])
    # No shared step numbers either: nothing tells which steps are the same one.
    plans = [HostPlan("early", 0, 8, 0), HostPlan("late", 100, 108, 50, clock_skew_us=10**9)]
    doc = registry.VIEWS["overview_page"].build(_request(plans))
    assert doc["steps"] == [] and doc["multi_host"]["empty_intersect"] is True
    assert any("none in common" in w for w in doc["diagnostics"]["warnings"])
