"""One story across views: every view with steps shows the same steps for the same run.

For every committed capture in tests/data (the TF fixtures of tests/fixtures.py and the JAX
CPU and GPU captures) and every host the `hosts` route offers for each view (the registry's
`hosts_offering`, the route's own rule), built in this process: the overview, the input
pipeline analyzer, the pod viewer, the tf.data view's per-step IteratorGetNext check (where
the run has tf.data), `tb-profile summary` (its JSON and its text) and `tb-profile diff`
(a run against itself) show the same step count and the same step numbers. Where a view
cannot (the tf.data view of ALL_HOSTS counts each host's own steps, the overview the steps
common to every host) its diagnostics say so. And the two input-bound verdicts each say what
they measure and agree or disagree exactly as their `verdict_other_view` says.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from tb_profile_plugin.analysis.advice.verdict_basis import overview_input_bound
from tb_profile_plugin.commands import diff, summary
from tb_profile_plugin.commands.output import Style
from tb_profile_plugin.commands.profiles import locate
from tb_profile_plugin.logdir import ALL_HOSTS
from tb_profile_plugin.tools import compare, registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.store import ProfileStore
from tests.fixtures import DATA_DIR, FIXTURES

JAX_SCENARIOS = ("jax_cpu_steps", "jax_cpu_plain", "jax_gpu_conv", "jax_gpu_attention")
#: Every committed scenario directory holding a capture: FIXTURES, the JAX captures and the
#: tf.data captures compared step by step with the reference.
SCENARIOS = sorted(d.name for d in DATA_DIR.iterdir()
                   if d.is_dir() and any(d.glob("**/*.xplane.pb")))
STEP_VIEWS = ("overview_page", "input_pipeline_analyzer", "pod_viewer")
TF_DATA = "tf_data_bottleneck_analysis"


def _files(scenario: str) -> dict[str, Path]:
    paths = sorted(DATA_DIR.glob(f"{scenario}/**/*.xplane.pb"))
    return {p.name.removesuffix(".xplane.pb"): p for p in paths}


@functools.cache
def _profiles(scenario: str) -> dict[str, Profile]:
    return {h: decode_xspace(p.read_bytes()) for h, p in _files(scenario).items()}


@functools.cache
def _doc(scenario: str, view: str, host: str) -> dict[str, Any]:
    """`view`'s document for `host` (or ALL_HOSTS), built in this process."""
    profiles = _profiles(scenario)
    shown = profiles if host == ALL_HOSTS else {host: profiles[host]}
    return registry.VIEWS[view].build(registry.ViewRequest("run", host, shown, {}))


def _offered(scenario: str, view: str) -> list[str]:
    files = _files(scenario)
    return registry.hosts_offering(registry.VIEWS[view], list(files), _profiles(scenario))


def _step_nums(doc: dict[str, Any]) -> list[int]:
    return [s["step_num"] for s in doc["steps"]]


def test_every_committed_capture_is_walked() -> None:
    assert set(SCENARIOS) >= {*FIXTURES, *JAX_SCENARIOS, "tfdata_cache"}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_views_with_steps_show_the_same_steps(scenario: str) -> None:
    hosts = _offered(scenario, "overview_page")
    assert hosts, scenario
    for view in STEP_VIEWS:
        assert _offered(scenario, view) == hosts, view
    for host in hosts:
        overview = _doc(scenario, "overview_page", host)
        nums = _step_nums(overview)
        assert _step_nums(_doc(scenario, "input_pipeline_analyzer", host)) == nums, host
        pod = _doc(scenario, "pod_viewer", host)
        assert pod["num_steps"] == len(pod["steps"]) == len(nums), host
        assert [s["step_num"] for s in pod["steps"]] == nums, host
        if host == ALL_HOSTS:  # every host's column holds that host's own step number
            for step, row in zip(pod["steps"], overview["steps"], strict=True):
                column = next(c for c in step["hosts"] if c["host"] == row["host"])
                assert column["step_time_us"] == pytest.approx(row["step_time_ms"] * 1e3)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_tf_data_counts_the_overviews_steps(scenario: str) -> None:
    hosts = _offered(scenario, TF_DATA)
    if not hosts:
        assert not any(TF_DATA in _offered(scenario, v) for v in registry.VIEWS)
        return
    for host in hosts:
        doc = _doc(scenario, TF_DATA, host)
        per_host = {g["host"]: g for g in doc["get_next"]}
        own_hosts = list(_files(scenario)) if host == ALL_HOSTS else [host]
        assert list(per_host) == own_hosts
        for own in own_hosts:
            nums = _step_nums(_doc(scenario, "overview_page", own))
            get_next = per_host[own]
            assert [s["step_num"] for s in get_next["steps"]] == nums, own
            assert get_next["num_steps"] == len(nums)
            slow = sum(not s["fast"] for s in get_next["steps"])
            assert get_next["num_slow_steps"] == (slow if nums else None)
        summary_ = doc["summary"]
        assert summary_["num_get_next_steps"] == sum(g["num_steps"] for g in doc["get_next"])
        if host == ALL_HOSTS:
            common = len(_doc(scenario, "overview_page", ALL_HOSTS)["steps"])
            assert any(f"the {common} steps common to every host" in text
                       for text in doc["diagnostics"]["info"])
        elif summary_["num_get_next_steps"]:
            assert (f"in {summary_['num_slow_get_next_steps']} of the "
                    f"{summary_['num_get_next_steps']} step(s) the overview shows"
                    in summary_["message"])


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_verdicts_say_what_they_measure_and_what_the_other_says(scenario: str) -> None:
    for host in _offered(scenario, TF_DATA):
        overview = _doc(scenario, "overview_page", host)
        doc = _doc(scenario, TF_DATA, host)
        ours = overview_input_bound(overview["bottleneck"]["input_bound"])
        theirs = doc["summary"]["is_input_bound"] if doc["bottlenecks"] else None
        assert doc["verdict_other_view"] == {
            "view": "overview_page", "input_bound": ours,
            "agrees": None if ours is None or theirs is None else ours == theirs}
        assert doc["verdict_basis"].startswith("Measured as the latency of each input pipeline")
        assert overview["verdict_basis"].startswith("Measured as the share of step time")
        other = overview["verdict_other_view"]
        assert other["view"] == TF_DATA
        if host != ALL_HOSTS:  # ALL_HOSTS: the overview names the measure, not the verdict
            assert other["input_bound"] == theirs
            assert other["agrees"] == doc["verdict_other_view"]["agrees"]
        if other["agrees"] is False:
            said = "calls the run input-bound" if theirs else "does not call the run input-bound"
            assert said in overview["verdict_basis"]
            level = "input-bound" if ours else "not input-bound"
            assert f"so it calls the run {level}" in doc["verdict_basis"]


def test_tfdata_cache_is_the_disagreeing_fixture() -> None:
    """tfdata_cache: 3.1 % of the step time waits for input (the overview: not input-bound,
    'potentially' for its all-others time) while the slowest pipeline call, 79.3 µs in
    MemoryCache, is over 50 µs (tf.data: input-bound). Both pages say so."""
    (host,) = _files("tfdata_cache")
    overview = _doc("tfdata_cache", "overview_page", host)
    doc = _doc("tfdata_cache", TF_DATA, host)
    assert overview["bottleneck"]["input_bound"] == "potentially"
    assert doc["summary"]["is_input_bound"] is True
    assert overview["verdict_other_view"] == {"view": TF_DATA, "input_bound": True,
                                              "agrees": False}
    assert "3.1 % over 18 steps" in overview["verdict_basis"]
    assert ("calls the run input-bound: the slowest call of Host:0 on vm took 79.3 µs"
            in overview["verdict_basis"])
    assert "its slowest stage is MemoryCache. Input-bound by this measure." in doc["verdict_basis"]
    assert "3.1 % over 18 steps, so it calls the run not input-bound" in doc["verdict_basis"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_cli_summary_and_diff_show_the_overviews_steps(scenario: str) -> None:
    files = {h: str(p) for h, p in _files(scenario).items()}
    run_dir = str(next(iter(_files(scenario).values())).parent)
    store = ProfileStore()
    for host in _offered(scenario, "overview_page"):
        nums = _step_nums(_doc(scenario, "overview_page", host))
        located = locate(run_dir, host)
        doc = summary.overview_document(located, host)
        assert _step_nums(doc) == nums, host
        text = summary.render(doc, located, Style(False))
        assert (f"Steps: {len(nums)}   " if nums else "Steps: 0 (") in text
        side = compare.Side(located.run, files, host)
        compared = compare.compare(side, side, store.open, lambda stage: None)
        for key in ("a", "b"):
            assert compared[key]["num_steps"] == len(nums)
            assert _step_nums(compared[key]) == nums
        assert f"; {len(nums)} steps)" in diff.render(compared, Style(False))
