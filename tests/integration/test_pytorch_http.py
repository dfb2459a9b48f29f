"""PyTorch runs (Kineto `.pt.trace.json[.gz]`, docs/pytorch.md) through a real TensorBoard over
HTTP: the committed real captures (tests/data/pytorch_*: torch 2.13 CPU, gzip, two gloo ranks,
no steps), a GPU-layout trace from tests/kineto_builder.py (no GPU capture can be committed),
and files PyTorch did not write."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator

import pytest

from tests.fixtures import DATA_DIR
from tests.integration.conftest import Server, start_tensorboard, stop
from tests.kineto_builder import gpu_training_step_trace

RUNS = {  # run -> hosts
    "pytorch_cpu_train/run0": ["worker0"],
    "pytorch_cpu_gzip/run0": ["worker0"],
    "pytorch_cpu_nosteps/run0": ["worker0"],
    "pytorch_gloo_2ranks/run0": ["rank0", "rank1"],
    "synthetic_gpu": ["rank0", "rank1"],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("tb_pytorch")
    logdir = tmp / "logdir"
    for fixture in DATA_DIR.glob("pytorch_*"):
        shutil.copytree(fixture, logdir / fixture.name)
    for rank in (0, 1):
        gpu_training_step_trace("2.x", rank=rank, world_size=2).write(
            logdir / "synthetic_gpu" / f"rank{rank}.170000000000{rank}.pt.trace.json")
    good = (logdir / "synthetic_gpu" / "rank0.1700000000000.pt.trace.json").read_bytes()
    (logdir / "bad_json").mkdir()
    (logdir / "bad_json" / "w.1.pt.trace.json").write_bytes(b"<html>not a trace</html>")
    (logdir / "bad_gzip").mkdir()
    (logdir / "bad_gzip" / "w.1.pt.trace.json.gz").write_bytes(
        gzip.compress(good)[: len(good) // 20])
    running = start_tensorboard(logdir, tmp)
    yield running
    stop(running)


def test_runs_and_hosts_are_listed(server: Server) -> None:
    runs = server.get_json("runs")
    assert set(RUNS) | {"bad_json", "bad_gzip"} <= set(runs)
    for run, hosts in RUNS.items():
        offered = server.get_json("hosts", run=run, tag="overview_page")
        assert [h for h in offered if h != "ALL_HOSTS"] == hosts
        assert ("ALL_HOSTS" in offered) == (len(hosts) > 1)


@pytest.mark.parametrize("run", sorted(RUNS))
def test_every_view_answers(server: Server, run: str) -> None:
    tools = server.get_json("run_tools", run=run)
    assert {"overview_page", "trace_viewer", "memory_profile"} <= set(tools)
    answered = 0
    for tool in tools:
        for host in server.get_json("hosts", run=run, tag=tool):
            status, doc = server.fetch_json("data", run=run, tag=tool, host=host)
            assert status == 200, (tool, host, doc)
            answered += 1
    assert answered >= len(tools)


@pytest.mark.parametrize("run, host, steps", [
    ("pytorch_cpu_train/run0", "worker0", [2, 3, 4]),
    ("pytorch_cpu_gzip/run0", "worker0", [2, 3, 4]),
    ("pytorch_gloo_2ranks/run0", "rank1", [2, 3, 4]),
    ("pytorch_cpu_nosteps/run0", "worker0", []),
    ("synthetic_gpu", "rank0", [1, 2]),
])
def test_overview_shows_the_profiler_steps(server: Server, run: str, host: str,
                                           steps: list[int]) -> None:
    doc = server.get_json("data", run=run, tag="overview_page", host=host)
    assert [s["step_num"] for s in doc["steps"]] == steps


def test_profile_info_counts_the_events(server: Server) -> None:
    doc = server.get_json("data", run="synthetic_gpu", tag="profile_info", host="rank0")
    assert doc["total_events"] == 28 + 8 + 2 + 2 + 2


@pytest.mark.parametrize("run, words", [
    ("bad_json", "not valid JSON"), ("bad_gzip", "gzip stream is truncated")])
def test_files_pytorch_did_not_write_are_422_with_a_sentence(server: Server, run: str,
                                                              words: str) -> None:
    status, doc = server.fetch_json("data", run=run, tag="overview_page", host="w")
    assert status == 422, doc
    assert words in doc["error"] and "w.1.pt.trace.json" in doc["error"]
    assert server.get("/runs")[0] == 200
