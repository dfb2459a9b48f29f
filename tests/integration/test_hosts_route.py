"""The `hosts` route lists exactly the hosts `data` answers, for every view of every fixture run.

Through a real TensorBoard over HTTP, on every committed capture in tests/data (the TF fixtures
of tests/fixtures.py and the JAX CPU and GPU captures): each host the `hosts` route lists for a
view answers `data` with that view's document; every other host of the run (and ALL_HOSTS)
answers a 4xx whose message names the view and the hosts that have it. The pod viewer is
offered for one-host runs too, one column per step, with the overview's own steps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb_profile_plugin.tools import registry
from tests.fixtures import DATA_DIR, FIXTURES
from tests.integration.conftest import Server

ALL_HOSTS = "ALL_HOSTS"
#: Every committed scenario directory holding a capture: FIXTURES plus the JAX captures.
SCENARIOS = sorted(d.name for d in DATA_DIR.iterdir()
                   if d.is_dir() and any(d.glob("**/*.xplane.pb")))
JAX_SCENARIOS = ("jax_cpu_steps", "jax_cpu_plain", "jax_gpu_conv", "jax_gpu_attention")


def _run_of(server: Server, scenario: str) -> str:
    runs = [run for run in server.get_json("runs") if run.split("/")[0] == scenario]
    assert len(runs) == 1, (scenario, runs)
    return runs[0]


def _files(scenario: str) -> list[str]:
    """The run's host files, sorted, as the logdir lists them."""
    paths: list[Path] = sorted(DATA_DIR.glob(f"{scenario}/**/*.xplane.pb"))
    return sorted(p.name.removesuffix(".xplane.pb") for p in paths)


def test_every_committed_capture_is_walked() -> None:
    assert set(SCENARIOS) >= {*FIXTURES, *JAX_SCENARIOS}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_listed_host_answers_and_no_other(server: Server, scenario: str) -> None:
    run = _run_of(server, scenario)
    files = _files(scenario)
    candidates = [ALL_HOSTS, *files] if len(files) > 1 else files
    tools = server.get_json("run_tools", run=run)
    for view in registry.VIEWS:
        hosts = server.get_json("hosts", run=run, tag=view)
        assert (view in tools) == bool(hosts), (view, tools, hosts)
        assert [h for h in candidates if h in hosts] == hosts, (view, hosts)
        for host in candidates:
            status, doc = server.fetch_json("data", run=run, tag=view, host=host)
            if host in hosts:
                assert status == 200, (view, host, doc)
                assert (doc["tool"], doc["run"], doc["host"]) == (view, run, host)
                assert set(doc["diagnostics"]) == {"errors", "warnings", "info"}
            else:
                assert 400 <= status < 500, (view, host, status, doc)
                message = doc["error"]
                assert view in message and host in message, message
                if hosts:
                    assert f"the hosts that have it: {', '.join(hosts)}" in message, message
                else:
                    assert "has it" in message or "none" in message, message


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_one_host_pod_viewer_has_the_overviews_steps(server: Server, scenario: str) -> None:
    """Every single host (a one-host run, or one host of several) has a pod viewer: one
    column per step, the overview's steps with their times and breakdowns."""
    run = _run_of(server, scenario)
    for host in _files(scenario):
        assert host in server.get_json("hosts", run=run, tag="pod_viewer")
        pod = server.get_json("data", run=run, tag="pod_viewer", host=host)
        overview = server.get_json("data", run=run, tag="overview_page", host=host)
        steps = overview["steps"]
        assert pod["num_steps"] == len(pod["steps"]) == len(steps)
        assert pod["hosts"] == ([host] if steps else [])
        assert pod["stragglers"] == []
        for step, row in zip(pod["steps"], steps, strict=True):
            (column,) = step["hosts"]
            assert step["step_num"] == column["step_num"] == row["step_num"]
            assert column["host"] == host
            assert column["step_time_us"] == pytest.approx(row["step_time_ms"] * 1e3)
            for key, value in row["breakdown_ms"].items():
                assert column["breakdown_us"][key] == pytest.approx(value * 1e3, abs=1e-6), key
            assert column["bottleneck"] == max(column["breakdown_us"],
                                               key=column["breakdown_us"].__getitem__)


def test_tfdata_slow_pod_viewer_agrees_with_the_reference(server: Server) -> None:
    """The one-host pod viewer of tfdata_slow: the reference's six steps, average step time
    and average input time, to the nanosecond."""
    reference = json.loads((DATA_DIR / "reference" / "xprof_2.24.2.json").read_text())
    ref = reference["fixtures"]["tfdata_slow"]
    run = _run_of(server, "tfdata_slow")
    assert "pod_viewer" in server.get_json("run_tools", run=run)
    (host,) = server.get_json("hosts", run=run, tag="pod_viewer")
    pod = server.get_json("data", run=run, tag="pod_viewer", host=host)
    assert [s["step_num"] for s in pod["steps"]] == ref["step_numbers"] == [1, 2, 3, 4, 5, 6]
    times_ms = [s["hosts"][0]["step_time_us"] / 1e3 for s in pod["steps"]]
    assert sum(times_ms) / len(times_ms) == pytest.approx(ref["avg_step_ms"], rel=1e-9)
    inputs_ms = [s["hosts"][0]["breakdown_us"]["input"] / 1e3 for s in pod["steps"]]
    assert sum(inputs_ms) / len(inputs_ms) == pytest.approx(
        ref["avg_category_ms"]["input_ms"], rel=1e-9)
    assert [s["hosts"][0]["bottleneck"] for s in pod["steps"]] == ["input"] * 6


def test_a_view_a_host_lacks_names_the_hosts_that_have_it(server: Server) -> None:
    run = _run_of(server, "two_hosts")
    hosts = _files("two_hosts")
    assert server.get_json("hosts", run=run, tag="memory_profile") == hosts
    status, doc = server.fetch_json("data", run=run, tag="memory_profile", host=ALL_HOSTS)
    assert status == 400
    assert doc["error"] == (
        f"view memory_profile shows one host at a time, not ALL_HOSTS; the hosts that have it: "
        f"{', '.join(hosts)}")
    run = _run_of(server, "tfdata_slow")
    status, doc = server.fetch_json("data", run=run, tag="kernel_stats", host="vm")
    assert status == 404
    assert doc["error"].startswith(
        f"view kernel_stats has no data for run {run!r} host 'vm'; no host of this run has it; "
        "the run's views: overview_page, input_pipeline_analyzer, tensorflow_stats,")
    assert server.get_json("hosts", run=run, tag="kernel_stats") == []
    status, doc = server.fetch_json("hosts", run=run, tag="no_such_view")
    assert status == 404 and "unknown view 'no_such_view'" in doc["error"]
