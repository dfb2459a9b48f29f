"""The real two-host capture through a real TensorBoard: ALL_HOSTS and the pod viewer.

Reference figures (tests/data/reference/xprof_2.24.2_multihost.json) come from xprof 2.24.2's
ALL_HOSTS conversion of the same two files; the project never imports it.
"""

from __future__ import annotations

import json

import pytest

from tests.fixtures import DATA_DIR, fixture_run, session_dir
from tests.integration.conftest import Server

REFERENCE = json.loads((DATA_DIR / "reference" / "xprof_2.24.2_multihost.json").read_text())
RUN = fixture_run("two_hosts")
HOSTS = sorted(p.name.removesuffix(".xplane.pb")
               for p in session_dir("two_hosts").glob("*.xplane.pb"))
COMBINING_VIEWS = ["overview_page", "input_pipeline_analyzer", "tensorflow_stats", "pod_viewer"]


def _numbers(names: list[str]) -> list[int]:
    return [int(name.rsplit(" ", 1)[1]) for name in names]  # "train 440" -> 440


def _reference_step_numbers(host: str) -> list[int]:
    core = REFERENCE["core_of_file"][host]
    return _numbers(REFERENCE["step_names_by_core"][core])


def test_both_hosts_and_all_hosts_are_offered(server: Server) -> None:
    assert "pod_viewer" in server.get_json("run_tools", run=RUN)
    for view in COMBINING_VIEWS:
        assert server.get_json("hosts", run=RUN, tag=view) == ["ALL_HOSTS", *HOSTS], view


def test_all_hosts_overview_agrees_with_the_reference(server: Server) -> None:
    doc = server.get_json("data", run=RUN, tag="overview_page", host="ALL_HOSTS")
    assert len(doc["steps"]) == REFERENCE["num_steps"] == 127
    ref = REFERENCE["step_time_max_over_hosts_ms"]
    for key in ("avg", "stddev", "min", "max"):
        assert doc["step_time_ms"][key] == pytest.approx(ref[key], rel=1e-9), key
    assert f"{doc['step_time_ms']['avg']:.1f}" == REFERENCE["step_time_ms_printed"]["average"]
    chief = doc["multi_host"]["chief"]
    assert [s["step_num"] for s in doc["steps"]] == _reference_step_numbers(chief)
    for step in doc["steps"]:
        assert sum(step["breakdown_ms"].values()) == pytest.approx(step["step_time_ms"])
    assert {h["host"]: h["num_common_steps"] for h in doc["multi_host"]["hosts"]} == {
        h: 127 for h in HOSTS}
    assert doc["run_environment"]["host_count"] == 2
    assert doc["run_environment"]["hostnames"] == ["vm"]
    assert any("43 of its 170 steps" in w for w in doc["diagnostics"]["warnings"])


def test_all_hosts_input_pipeline_has_the_common_steps(server: Server) -> None:
    doc = server.get_json("data", run=RUN, tag="input_pipeline_analyzer", host="ALL_HOSTS")
    assert len(doc["steps"]) == REFERENCE["input_pipeline_num_step_rows"]
    assert doc["multi_host"]["num_common_steps"] == 127


def test_pod_viewer_has_every_common_step_for_both_hosts(server: Server) -> None:
    doc = server.get_json("data", run=RUN, tag="pod_viewer", host="ALL_HOSTS")
    assert doc["hosts"] == HOSTS
    assert doc["num_steps"] == len(doc["steps"]) == REFERENCE["num_steps"]
    for host in HOSTS:
        numbers = [next(c["step_num"] for c in s["hosts"] if c["host"] == host)
                   for s in doc["steps"]]
        assert numbers == _reference_step_numbers(host), host
    overview = server.get_json("data", run=RUN, tag="overview_page", host="ALL_HOSTS")
    for step, row in zip(doc["steps"], overview["steps"], strict=True):
        slowest = max(step["hosts"], key=lambda c: c["step_time_us"])
        assert slowest["step_time_us"] / 1000 == pytest.approx(row["step_time_ms"])
        assert sum(slowest["breakdown_us"].values()) == pytest.approx(slowest["step_time_us"])
    assert len(doc["stragglers"]) == 127
    assert doc["stragglers"][0]["lag_us"] >= doc["stragglers"][-1]["lag_us"]


def test_one_host_of_the_run_alone(server: Server) -> None:
    doc = server.get_json("data", run=RUN, tag="overview_page", host=HOSTS[0])
    assert "multi_host" not in doc and len(doc["steps"]) == 170
