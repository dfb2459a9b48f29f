"""The views in PyTorch's terms on the committed real PyTorch captures (tests/data/pytorch_*,
torch 2.13 CPU; their figures in tests/data/README.md) through a real TensorBoard over HTTP:
torch-tb-profiler's step breakdown, the DataLoader per step, operators with input shapes, the
memory peak and its op, per-rank communication and the straggler, the run as the file states
it, and advice that never contradicts the capture."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures import DATA_DIR
from tests.integration.conftest import Server, start_tensorboard, stop

TRAIN, GZIP, GLOO, NOSTEPS = ("pytorch_cpu_train/run0", "pytorch_cpu_gzip/run0",
                              "pytorch_gloo_2ranks/run0", "pytorch_cpu_nosteps/run0")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("tb_pytorch_views")
    logdir = tmp / "logdir"
    for fixture in DATA_DIR.glob("pytorch_*"):
        shutil.copytree(fixture, logdir / fixture.name)
    running = start_tensorboard(logdir, tmp)
    yield running
    stop(running)


def _doc(server: Server, run: str, tag: str, host: str, **params: str) -> Any:
    return server.get_json("data", run=run, tag=tag, host=host, **params)


@pytest.mark.parametrize("run, host", [(TRAIN, "worker0"), (GZIP, "worker0"),
                                       (GLOO, "rank0"), (GLOO, "rank1"), (GLOO, "ALL_HOSTS")])
def test_pytorch_breakdown_sums_to_each_step(server: Server, run: str, host: str) -> None:
    doc = _doc(server, run, "overview_page", host)
    assert [s["step_num"] for s in doc["steps"]] == [2, 3, 4]
    for step in doc["steps"]:
        assert sum(step["pytorch_breakdown_ms"].values()) == pytest.approx(step["step_time_ms"])
        assert sum(step["breakdown_ms"].values()) == pytest.approx(step["step_time_ms"])
        # The nine categories are the same time: DataLoader is input, CPU exec host compute.
        assert step["breakdown_ms"]["input"] == pytest.approx(
            step["pytorch_breakdown_ms"]["dataloader"])
        assert step["breakdown_ms"]["host_compute"] == pytest.approx(
            step["pytorch_breakdown_ms"]["cpu_exec"])
    assert doc["gpu_metrics"] == []
    assert not any(w["key"] == "amp" for w in doc["advice"])


def test_train_is_dataloader_bound_with_workers(server: Server) -> None:
    doc = _doc(server, TRAIN, "overview_page", "worker0")
    assert [s["step_time_ms"] for s in doc["steps"]] == pytest.approx([42.42, 6.67, 63.34],
                                                                      abs=0.01)
    assert doc["bottleneck"]["headline"] == "Bounded by input (88.6 %)"
    # What the verdict measured, in PyTorch's terms (no TensorFlow op names on a PyTorch run).
    assert doc["verdict_basis"].startswith("Measured as the share of step time spent waiting "
                                           "for input (the DataLoader's __next__ in each step")
    assert "IteratorGetNext" not in doc["verdict_basis"]
    (advice,) = [a for a in doc["advice"] if a["key"] == "dataloader"]
    # num_workers=2 already (_MultiProcessingDataLoaderIter): more workers, not "use workers";
    # a CPU-only run is never told to pin memory.
    assert "already loads in worker processes" in advice["text"]
    assert "pin_memory" not in advice["text"]
    assert {w["key"] for w in doc["advice_withheld"]} >= {"gpu", "sync_points"}
    pipeline = _doc(server, TRAIN, "input_pipeline_analyzer", "worker0")
    assert pipeline["dataloader"]["per_step_ms"] == pytest.approx([37.60, 2.54, 59.46],
                                                                  abs=0.01)
    assert [a["key"] for a in pipeline["advice"]] == ["dataloader"]


def test_gzip_run_loads_in_the_main_process(server: Server) -> None:
    doc = _doc(server, GZIP, "overview_page", "worker0")
    (advice,) = [a for a in doc["advice"] if a["key"] == "dataloader"]
    assert "num_workers=4" in advice["text"] and "training process" in advice["text"]
    stats = _doc(server, GZIP, "tensorflow_stats", "worker0", include_idle="false")
    top = max(stats["pytorch_ops"], key=lambda r: r["host_self_time_us"])
    assert top["op_name"] == "aten::convolution_backward" and top["calls"] == 6
    assert all(r["device_self_time_us"] == 0 for r in stats["pytorch_ops"])  # CPU only
    assert any(r["op_name"] == "aten::max_pool2d_with_indices" and r["input_dims"]
               for r in stats["ops_by_input_shape"])


@pytest.mark.parametrize("run, peak, op", [(TRAIN, 372_784, "aten::mm"),
                                           (GZIP, 1_171_600, "aten::convolution_backward")])
def test_memory_peak_and_its_operator(server: Server, run: str, peak: int, op: str) -> None:
    doc = _doc(server, run, "memory_profile", "worker0")
    assert doc["memory_ids"] == ["cpu"]
    assert doc["summary"]["peak"]["heap_bytes"] == peak  # tests/data/README.md
    assert doc["breakdown"][0]["op_name"] == op


def test_gloo_ranks_and_the_straggler(server: Server) -> None:
    pod = _doc(server, GLOO, "pod_viewer", "ALL_HOSTS")
    ranks = {r["host"]: r for r in pod["pytorch_ranks"]}
    assert (ranks["rank0"]["rank"], ranks["rank1"]["rank"]) == (0, 1)
    assert {r["backend"] for r in ranks.values()} == {"gloo"}
    # Rank 1 sleeps 30 ms a step; rank 0 waits for it in gloo:all_reduce (~30 ms a step).
    assert ranks["rank0"]["communication_ms"] > 25 > 10 > ranks["rank1"]["communication_ms"]
    straggler = pod["pytorch_straggler"]
    assert straggler["host"] == "rank1" and straggler["significant"]
    assert straggler["wait_ms"] > 20
    rank0 = _doc(server, GLOO, "overview_page", "rank0")
    assert rank0["bottleneck"]["headline"].startswith("Bounded by collectives")
    assert "communication" in {a["key"] for a in rank0["advice"]}
    info = _doc(server, GLOO, "profile_info", "ALL_HOSTS")
    stated = {h["host"]: h["pytorch"] for h in info["hosts"]}
    assert stated["rank1"]["rank"] == 1 and stated["rank1"]["world_size"] == 2
    assert stated["rank0"]["backend"] == "gloo" and stated["rank0"]["devices"] == []


def test_no_profiler_step_no_step_invented(server: Server) -> None:
    doc = _doc(server, NOSTEPS, "overview_page", "worker0")
    assert doc["steps"] == [] and doc["pytorch_breakdown"] == {}
    assert [a["key"] for a in doc["advice"]] == ["mark_steps"]
    assert "no ProfilerStep#N" in doc["advice"][0]["text"]
    assert any("ProfilerStep" in w for w in doc["diagnostics"]["warnings"])
    stats = _doc(server, NOSTEPS, "tensorflow_stats", "worker0", include_idle="false")
    assert {"inference", "aten::addmm"} <= {r["op_name"] for r in stats["pytorch_ops"]}
