"""What each input-bound verdict measures (analysis/advice/verdict_basis.py), and the tf.data view's
per-step IteratorGetNext check counted over the overview's steps, on synthetic profiles.

Each profile is one python thread: per step a `train` marker, an `IteratorGetNext` call that
holds the pipeline's root call (`Iterator::Root`, with a Range under it), and a host op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tb_profile_plugin.analysis.advice.verdict_basis import (
    TfDataVerdict,
    overview_basis,
    tf_data_basis,
)
from tb_profile_plugin.analysis.steps.breakdown import Verdict
from tb_profile_plugin.analysis.steps.step_db import NUM_TYPES, StepDb
from tb_profile_plugin.analysis.tf_data.guide_checks import GetNextCalls, get_next_per_step
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import LineBuilder, XSpaceBuilder

US = 1_000_000  # ps
OVERVIEW_MEASURE = ("the share of step time spent waiting for input (host-side "
                    "IteratorGetNext, host-to-device copies, the device waiting for the host)")


def _call(line: LineBuilder, name: str, start_us: float, end_us: float, **stats: Any) -> None:
    line.event(name, int(start_us * US), int((end_us - start_us) * US), **stats)


def _get_next(line: LineBuilder, start_us: float, get_next_us: float, root_us: float,
              iteration: int) -> None:
    _call(line, "IteratorGetNextOp::DoCompute", start_us, start_us + get_next_us, id=99,
          iter_num=iteration)
    _call(line, "Iterator::Root", start_us + 2, start_us + 2 + root_us, id=11)
    _call(line, "Iterator::Root::Range", start_us + 3, start_us + 5, id=12, parent_id=11)


def _docs(b: XSpaceBuilder) -> tuple[dict[str, Any], dict[str, Any]]:
    profile = decode_xspace(b.serialize())
    request = registry.ViewRequest("run", "h", {"h": profile}, {})
    return (registry.VIEWS["overview_page"].build(request),
            registry.VIEWS["tf_data_bottleneck_analysis"].build(request))


def _three_steps_and_a_late_call() -> XSpaceBuilder:
    """Steps 10-12 of 900 µs (IteratorGetNext 100, 40, 100 µs; root calls 90, 30, 90 µs;
    600 µs of MatMul), then one more IteratorGetNext (60 µs) after the last step."""
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    for k in range(3):
        t = 1000 * k
        _call(py, "train", t, t + 900, step_num=10 + k, _r=1)
        _get_next(py, t + 10, 40 if k == 1 else 100, 30 if k == 1 else 90, k)
        _call(py, "MatMul", t + 200, t + 800)
    _get_next(py, 3500, 60, 56, 3)
    return b


def test_get_next_is_counted_over_the_overviews_steps() -> None:
    overview, doc = _docs(_three_steps_and_a_late_call())
    assert [s["step_num"] for s in overview["steps"]] == [10, 11, 12]
    (get_next,) = doc["get_next"]
    assert [(s["step_num"], s["latency_us"], s["num_calls"], s["fast"])
            for s in get_next["steps"]] == [(10, 100, 1, False), (11, 40, 1, True),
                                            (12, 100, 1, False)]
    assert (get_next["num_steps"], get_next["num_slow_steps"]) == (3, 2)
    assert (get_next["avg_latency_us"], get_next["max_latency_us"]) == (80, 100)
    assert (get_next["num_calls_outside_steps"], get_next["outside_steps_latency_us"]) == (1, 60)
    summary = doc["summary"]
    assert (summary["num_slow_get_next_steps"], summary["num_get_next_steps"],
            summary["num_get_next_calls_outside_steps"]) == (2, 3, 1)
    assert summary["message"].endswith(
        " IteratorGetNext took more than 50 µs in 2 of the 3 step(s) the overview shows; 1 "
        "call(s) fall outside those steps (before or after them, or in a partial first or last "
        "step) and are not counted.")


def test_both_verdicts_agree_and_each_says_what_it_measures() -> None:
    overview, doc = _docs(_three_steps_and_a_late_call())
    assert overview["bottleneck"]["input_bound"] == "moderately"  # 240 of 2700 µs: 8.9 %
    assert overview["verdict_basis"] == (
        f"Measured as {OVERVIEW_MEASURE}: 8.9 % over 3 steps; 5 % or more is input-bound, "
        "20 % or more highly. The tf.data bottleneck analysis measures the latency of each "
        "input pipeline call instead and agrees: the slowest call of Host:0 on h took 90.0 µs "
        "(over 50 µs is slow); its slowest stage is Root.")
    assert overview["verdict_other_view"] == {
        "view": "tf_data_bottleneck_analysis", "input_bound": True, "agrees": True}
    assert doc["verdict_basis"] == (
        "Measured as the latency of each input pipeline call: the slowest call of Host:0 on h "
        "took 90.0 µs (over 50 µs is slow); its slowest stage is Root. Input-bound by this "
        f"measure. The overview measures {OVERVIEW_MEASURE} instead: 8.9 % over 3 steps, so it "
        "calls the run input-bound (5 % or more is input-bound).")
    assert doc["verdict_other_view"] == {"view": "overview_page", "input_bound": True,
                                         "agrees": True}


def test_a_slow_pipeline_call_in_a_long_step_makes_the_verdicts_disagree() -> None:
    """Root calls of 90 µs (tf.data: input-bound) in 10 ms steps that wait 100 µs for input
    (the overview: 1.0 %, not input-bound): each page says what it measures and what the
    other one says."""
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    for k in range(2):
        t = 20_000 * k
        _call(py, "train", t, t + 10_000, step_num=k, _r=1)
        _get_next(py, t + 10, 100, 90, k)
        _call(py, "MatMul", t + 200, t + 9_990)
    overview, doc = _docs(b)
    assert overview["bottleneck"]["input_bound"] == "not"
    assert doc["summary"]["is_input_bound"] is True
    assert overview["verdict_basis"] == (
        f"Measured as {OVERVIEW_MEASURE}: 1.0 % over 2 steps; 5 % or more is input-bound, "
        "20 % or more highly. The tf.data bottleneck analysis measures the latency of each "
        "input pipeline call instead and calls the run input-bound: the slowest call of Host:0 "
        "on h took 90.0 µs (over 50 µs is slow); its slowest stage is Root.")
    assert overview["verdict_other_view"] == {
        "view": "tf_data_bottleneck_analysis", "input_bound": True, "agrees": False}
    assert doc["verdict_basis"] == (
        "Measured as the latency of each input pipeline call: the slowest call of Host:0 on h "
        "took 90.0 µs (over 50 µs is slow); its slowest stage is Root. Input-bound by this "
        f"measure. The overview measures {OVERVIEW_MEASURE} instead: 1.0 % over 2 steps, so it "
        "calls the run not input-bound (5 % or more is input-bound).")
    assert doc["verdict_other_view"] == {"view": "overview_page", "input_bound": False,
                                         "agrees": False}


def test_a_profile_without_steps_counts_no_slow_steps() -> None:
    """IteratorGetNext calls but no step marker: no "0 of N" or "N of N slow steps"; the
    summary says there are no steps to compare."""
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    for k in range(3):
        _get_next(py, 1000 * k, 100 + 20 * k, 90, k)
    overview, doc = _docs(b)
    assert overview["steps"] == [] and overview["bottleneck"]["input_bound"] == "unknown"
    (get_next,) = doc["get_next"]
    assert get_next["steps"] == [] and get_next["num_steps"] == 0
    assert get_next["num_slow_steps"] is None and get_next["avg_latency_us"] is None
    assert (get_next["num_calls_outside_steps"], get_next["outside_steps_latency_us"]) == (3, 360)
    summary = doc["summary"]
    assert (summary["num_slow_get_next_steps"], summary["num_get_next_steps"],
            summary["num_get_next_calls_outside_steps"]) == (None, 0, 3)
    assert summary["message"] == (
        "The program is input-bound: a call of input pipeline Host:0 on host h took 90.0 µs, "
        "slower than 50 µs. Its bottleneck is Root (Iterator::Root), with 88.0 µs of self time "
        "over its 1 call(s) in that execution (a background producer's calls count in full). "
        "The profile has no steps (see the overview's diagnostics), so there are no steps to "
        "compare IteratorGetNext time across; its 3 call(s) took 120.0 µs on average.")
    assert "slow step" not in summary["message"] and " of 3 " not in summary["message"]
    assert doc["verdict_basis"] == (
        "Measured as the latency of each input pipeline call: the slowest call of Host:0 on h "
        "took 90.0 µs (over 50 µs is slow); its slowest stage is Root. Input-bound by this "
        f"measure. The overview measures {OVERVIEW_MEASURE} instead, but found no steps.")
    assert doc["verdict_other_view"] == {"view": "overview_page", "input_bound": None,
                                         "agrees": None}
    assert overview["verdict_basis"] == (
        f"Measured as {OVERVIEW_MEASURE}, but no steps were found, so none was measured. The "
        "tf.data bottleneck analysis measures the latency of each input pipeline call instead "
        "and calls the run input-bound: the slowest call of Host:0 on h took 90.0 µs (over "
        "50 µs is slow); its slowest stage is Root.")
    assert overview["verdict_other_view"] == {
        "view": "tf_data_bottleneck_analysis", "input_bound": True, "agrees": None}


def test_no_tf_data_means_no_other_view() -> None:
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    _call(py, "train", 0, 100, step_num=1, _r=1)
    _call(py, "MatMul", 0, 100)
    overview = registry.VIEWS["overview_page"].build(
        registry.ViewRequest("run", "h", {"h": decode_xspace(b.serialize())}, {}))
    assert overview["verdict_basis"] == (
        f"Measured as {OVERVIEW_MEASURE}: 0.0 % over 1 step; 5 % or more is input-bound, 20 % "
        "or more highly.")
    assert overview["verdict_other_view"] is None


def test_all_hosts_overview_names_the_other_measure_without_a_verdict() -> None:
    verdict = Verdict("potentially", 0.0, 11.7, "...")
    text, other = overview_basis(verdict, 127, True, None)
    assert text == (
        f"Measured as {OVERVIEW_MEASURE}: 0.0 % over 127 steps; 5 % or more is input-bound, "
        "20 % or more highly. The tf.data bottleneck analysis measures the latency of each "
        "input pipeline call instead (over 50 µs is slow); see it for this run's pipelines.")
    assert other == {"view": "tf_data_bottleneck_analysis", "input_bound": None, "agrees": None}


def test_tf_data_view_without_a_host_pipeline_call_gives_no_verdict() -> None:
    text, other = tf_data_basis(None, Verdict("highly", 64.3, 0.0, "..."), 6)
    assert text == (
        "Measured as the latency of each input pipeline call, but no host pipeline call was "
        f"captured, so this view gives no verdict. The overview measures {OVERVIEW_MEASURE} "
        "instead: 64.3 % over 6 steps, so it calls the run input-bound (5 % or more is "
        "input-bound).")
    assert other == {"view": "overview_page", "input_bound": True, "agrees": None}
    fast = TfDataVerdict(False, "h", "Host:0", 30.0, "Map")
    assert tf_data_basis(fast, Verdict("not", 1.0, 0.0, "..."), 6)[1]["agrees"] is True


def test_steps_from_executions_take_the_calls_that_start_in_them() -> None:
    """Steps whose ids are no forest groups (jitted-function executions): by time."""
    steps = StepDb(
        step_num=np.array([0, 1], np.int64), group_id=np.array([7, 8], np.int64),
        begin_ps=np.array([100, 300], np.int64), duration_ps=np.array([200, 100], np.int64),
        type_ps=np.zeros((2, NUM_TYPES), np.int64), has_device=True, num_dropped=0,
        num_partial_dropped=0)
    calls = GetNextCalls(group_id=np.array([-1, 7, -1, -1, 8], np.int64),
                         start_ps=np.array([50, 100, 299, 350, 400], np.int64),
                         duration_ps=np.array([1, 2, 3, 4, 5], np.int64))
    by_time = get_next_per_step(calls, steps, by_group=False)
    assert by_time.latency_ps.tolist() == [5, 4] and by_time.num_calls.tolist() == [2, 1]
    assert (by_time.num_outside_calls, by_time.outside_latency_ps) == (2, 6)
    by_group = get_next_per_step(calls, steps, by_group=True)
    assert by_group.latency_ps.tolist() == [2, 5] and by_group.num_calls.tolist() == [1, 1]
    assert (by_group.num_outside_calls, by_group.outside_latency_ps) == (3, 8)
    none = get_next_per_step(calls, StepDb(*(np.zeros(0, np.int64),) * 4,
                                           np.zeros((0, NUM_TYPES), np.int64), False, 0, 0),
                             by_group=True)
    assert len(none.step_num) == 0 and (none.num_outside_calls, none.outside_latency_ps) == (5, 15)


def test_all_hosts_tf_data_says_whose_steps_it_counts() -> None:
    """ALL_HOSTS: the tf.data view counts each host's own steps; the overview shows the steps
    common to every host, and the tf.data view says so."""
    a = _three_steps_and_a_late_call()
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    for k in range(2):
        _call(py, "train", 1000 * k, 1000 * k + 900, step_num=10 + k, _r=1)
        _get_next(py, 1000 * k + 10, 100, 90, k)
        _call(py, "MatMul", 1000 * k + 200, 1000 * k + 800)
    profiles = {"a": decode_xspace(a.serialize()), "b": decode_xspace(b.serialize())}
    request = registry.ViewRequest("run", "ALL_HOSTS", profiles, {})
    overview = registry.VIEWS["overview_page"].build(request)
    doc = registry.VIEWS["tf_data_bottleneck_analysis"].build(request)
    assert [s["step_num"] for s in overview["steps"]] == [10, 11]
    assert [(g["host"], g["num_steps"]) for g in doc["get_next"]] == [("a", 3), ("b", 2)]
    assert ("IteratorGetNext per step counts each host's own steps (a: 3, b: 2); the overview "
            "of all hosts shows the 2 steps common to every host") in doc["diagnostics"]["info"]
    assert doc["summary"]["num_get_next_steps"] == 5
    assert "over 2 steps, so it calls the run" in doc["verdict_basis"]
    assert overview["verdict_other_view"] == {
        "view": "tf_data_bottleneck_analysis", "input_bound": None, "agrees": None}
    assert overview["verdict_basis"].endswith(
        "instead (over 50 µs is slow); see it for this run's pipelines.")
