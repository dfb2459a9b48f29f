"""The views in PyTorch's terms on a hand-checked GPU trace (tests/kineto_builder.py
`gpu_training_step_trace`: two steps of 900 µs; its docstring has the layout), decoded by the
Kineto decoder, every figure computed by hand.

Per step (µs from the step's start), by torch-tb-profiler's priority:
    kernel        gemm [150,450] + add [470,500]                            = 330
    memcpy        HtoD [100,120]                                            =  20
    memset        [460,465]                                                 =   5
    communication ncclDevKernel [700,900] + record_param_comms [600,700]    = 300
    runtime       cudaMemcpyAsync [20,30] + launch [120,140] (others hidden) =  30
    cpu_exec      aten::copy_ [10,60] - [20,30] + aten::mm [140,150]        =  50
    other         900 - 735                                                 = 165
GPU: kernels 330 µs per 900 µs step (36.7 %); SM efficiency (16/132 * 300 + 128/132 * 30) /
900; occupancy (6 * 300 + 50 * 30) / 330 = 10 %.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.store import ProfileStore
from tests.kineto_builder import KinetoTrace, gpu_training_step_trace

ROLE_US = {"kernel": 330.0, "memcpy": 20.0, "memset": 5.0, "communication": 300.0,
           "runtime": 30.0, "dataloader": 0.0, "cpu_exec": 50.0, "other": 165.0}


def _views(path: Path) -> Any:
    profile = ProfileStore(max_bytes=0).open(str(path))

    def build(view: str, **params: str) -> dict[str, Any]:
        request = registry.ViewRequest("run", "worker0", {"worker0": profile}, params)
        return registry.VIEWS[view].build(request)
    return build


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("pt") / "run" / "worker0.1700000000000.pt.trace.json"
    return _views(gpu_training_step_trace().write(path))


def test_overview_pytorch_breakdown_sums_to_the_step(views: Any) -> None:
    doc = views("overview_page")
    assert doc["run_environment"]["framework"] == "PyTorch"
    assert [s["step_num"] for s in doc["steps"]] == [1, 2]  # the GPU mirror is no step
    for step in doc["steps"]:
        assert step["step_time_ms"] == pytest.approx(0.9)
        assert step["pytorch_breakdown_ms"] == pytest.approx(
            {k: v / 1000 for k, v in ROLE_US.items()}, abs=1e-12)
        # The same time in the nine categories (analysis/pytorch/facts.py TYPE_OF_ROLE):
        # kernels and the memset are device compute, the H2D copy input, the runtime kernel
        # launch, communication the collectives, CPU exec host compute.
        assert step["breakdown_ms"] == pytest.approx({
            "device_compute": 0.335, "device_to_device": 0.0, "device_collectives": 0.3,
            "host_compute": 0.05, "kernel_launch": 0.03, "input": 0.02, "output": 0.0,
            "compilation": 0.0, "all_others": 0.165}, abs=1e-12)
    assert doc["pytorch_breakdown"]["kernel"]["percent"] == pytest.approx(330 / 9)
    assert doc["pytorch_breakdown"]["communication"]["label"] == "Communication"


def test_gpu_metrics(views: Any) -> None:
    (gpu,) = views("overview_page")["gpu_metrics"]
    assert gpu["device"] == "/device:GPU:0" and gpu["num_sms"] == 132
    assert gpu["kernels"] == 4  # the all-reduce kernels are communication
    assert gpu["gpu_utilization_percent"] == pytest.approx(100 * 330 / 900)
    assert gpu["est_sm_efficiency_percent"] == pytest.approx(
        100 * (16 / 132 * 300 + 128 / 132 * 30) / 900)
    assert gpu["est_achieved_occupancy_percent"] == pytest.approx(10.0)


def test_advice_follows_the_capture(views: Any) -> None:
    doc = views("overview_page")
    given = {a["key"] for a in doc["advice"]}
    withheld = {w["key"]: w["reason"] for w in doc["advice_withheld"]}
    # The gemm runs on Tensor Cores (tf32 xmma): no AMP; 3.3 % runtime: no torch.compile.
    assert "amp" not in given and "90.9 % on Tensor Cores" in withheld["amp"]
    assert "torch_compile" not in given and "runtime 3.3 %" in withheld["torch_compile"]
    assert "no DataLoader" in withheld["dataloader"]
    assert not any("tf." in a["text"] or "jax" in a["text"] for a in doc["advice"])


def test_kernel_stats_from_kernel_details(views: Any) -> None:
    rows = {r["kernel_name"][:20]: r for r in views("kernel_stats")["rows"]}
    gemm = rows["sm90_xmma_gemm_f32f3"]
    assert (gemm["op_name"], gemm["grid_dim"], gemm["block_dim"]) == ("aten::mm", [4, 4, 1],
                                                                      [128, 1, 1])
    assert (gemm["registers_per_thread"], gemm["shared_memory_bytes"]) == (168, 98304)
    assert gemm["occupancy_percent"] == 6.0
    assert gemm["uses_tensor_core"] and gemm["op_tensor_core_eligible"]
    add = rows["void at::native::vec"]
    assert add["op_name"] == "aten::add_" and not add["op_tensor_core_eligible"]


def test_operators_host_and_device_time(views: Any) -> None:
    ops = {r["op_name"]: r for r in views("tensorflow_stats")["pytorch_ops"]}
    mm = ops["aten::mm"]
    assert mm["calls"] == 2
    assert mm["host_total_time_us"] == pytest.approx(200.0)
    assert mm["host_self_time_us"] == pytest.approx(160.0)  # minus its launch, 20 µs each
    assert mm["device_self_time_us"] == pytest.approx(600.0)
    assert ops["aten::add_"]["device_self_time_us"] == pytest.approx(60.0)
    assert "cudaLaunchKernel" not in ops and "ProfilerStep#1" not in ops
    shapes = {(r["op_name"], r["input_dims"]): r
              for r in views("tensorflow_stats")["ops_by_input_shape"]}
    assert shapes[("aten::mm", "[[32,64],[64,32]]")]["calls"] == 2


def test_memory_peak_and_its_operator(views: Any) -> None:
    doc = views("memory_profile")
    assert doc["memory_ids"] == ["cuda:0"]
    peak = doc["summary"]["peak"]
    assert peak["heap_bytes"] == 4096 and doc["summary"]["memory_capacity_bytes"] == 2097152
    assert doc["breakdown"][0]["op_name"] == "aten::mm"
    # The page's labels: heap is PyTorch's allocated, heap + free its reserved.
    assert doc["memory_source"] == "pytorch"
    assert peak["stack_bytes"] == 0 and peak["heap_bytes"] + peak["free_bytes"] == 2097152


def test_cpu_only_step_less_capture_gets_no_gpu_advice_and_no_step(tmp_path: Path) -> None:
    t = KinetoTrace()
    t.cpu_op("aten::mm", 10.0, 20.0)
    build = _views(t.write(tmp_path / "run" / "worker0.1700000000000.pt.trace.json"))
    doc = build("overview_page")
    assert doc["steps"] == [] and doc["pytorch_breakdown"] == {}
    assert [a["key"] for a in doc["advice"]] == ["mark_steps"]
    assert "no ProfilerStep#N" in doc["advice"][0]["text"]
    assert doc["gpu_metrics"] == []


def _rank_trace(rank: int, mm_end: float) -> KinetoTrace:
    """Three 900 µs steps: a matmul kernel [100, mm_end], then the all-reduce kernel
    [mm_end, 850] (a fast rank waits in it for the slow one); host collective [200, 300]."""
    t = KinetoTrace(rank=rank, world_size=2)
    for step in (1, 2, 3):
        t0 = 1000.0 * step
        t.profiler_step(step, t0, 900)
        mm = t.cpu_op("aten::mm", t0 + 10, 80)
        t.launch_kernel(mm, "ampere_sgemm_128x64_nn", launch_ts=t0 + 20, launch_dur=10,
                        kernel_ts=t0 + 100, kernel_dur=mm_end - 100)
        t.nccl_all_reduce(ts=t0 + 200, dur=100, kernel_ts=t0 + mm_end,
                          kernel_dur=850 - mm_end, nelems=1024)
    return t


def test_ranks_communication_overlap_and_the_straggler(tmp_path: Path) -> None:
    store = ProfileStore(max_bytes=0)
    profiles = {
        f"rank{r}": store.open(str(_rank_trace(r, end).write(
            tmp_path / "run" / f"rank{r}.1700000000000.pt.trace.json")))
        for r, end in ((0, 300.0), (1, 800.0))}
    request = registry.ViewRequest("run", "ALL_HOSTS", profiles, {})
    pod = registry.VIEWS["pod_viewer"].build(request)
    ranks = {r["host"]: r for r in pod["pytorch_ranks"]}
    assert (ranks["rank0"]["rank"], ranks["rank1"]["rank"]) == (0, 1)
    # Communication covers [200, 850] on rank 0, [200, 300] + [800, 850] on rank 1;
    # computation (kernels) [100, 300] and [100, 800]; both overlap [200, 300].
    assert ranks["rank0"]["communication_ms"] == pytest.approx(0.650)
    assert ranks["rank1"]["communication_ms"] == pytest.approx(0.150)
    assert ranks["rank0"]["computation_ms"] == pytest.approx(0.200)
    assert ranks["rank1"]["computation_ms"] == pytest.approx(0.700)
    assert ranks["rank0"]["overlap_ms"] == pytest.approx(0.100)
    assert ranks["rank1"]["overlap_ms"] == pytest.approx(0.100)
    # The collectives each rank ran (3 steps): the NCCL kernel, its host ranges.
    collectives = {c["name"].split("(")[0]: c for c in ranks["rank0"]["collectives"]}
    assert collectives["ncclDevKernel_AllReduce_Sum_f32_RING_LL"]["calls"] == 3
    assert collectives["ncclDevKernel_AllReduce_Sum_f32_RING_LL"]["time_ms"] == pytest.approx(
        3 * 0.550)
    assert collectives["nccl:all_reduce"]["calls"] == 3
    assert collectives["record_param_comms"]["time_ms"] == pytest.approx(3 * 0.100)
    # Equal step times (both wait in the same all-reduce): the straggler is the rank the
    # other waits for, by 0.5 ms a step.
    assert all(c["step_time_us"] == pytest.approx(900.0)
               for s in pod["steps"] for c in s["hosts"])
    straggler = pod["pytorch_straggler"]
    assert straggler["host"] == "rank1" and straggler["rank"] == 1
    assert straggler["wait_ms"] == pytest.approx(0.5) and straggler["significant"]
    column = pod["steps"][0]["hosts"][0]
    assert column["pytorch_breakdown_us"]["communication"] == pytest.approx(550.0)
    overview = registry.VIEWS["overview_page"].build(request)
    assert len(overview["steps"]) == 3
    for step in overview["steps"]:
        assert sum(step["pytorch_breakdown_ms"].values()) == pytest.approx(
            step["step_time_ms"])


def test_2021_layout_same_breakdown_without_the_collective(tmp_path: Path) -> None:
    """PyTorch 1.9's categories (Operator/Runtime/Kernel/Memcpy/Memset, string tids): the
    same device and runtime time (torch-tb-profiler 0.4.3 reads it; it reads today's as 0),
    and [600, 900] with no all-reduce is 'other'."""
    path = tmp_path / "run" / "worker0.1700000000000.pt.trace.json"
    doc = _views(gpu_training_step_trace("2021").write(path))("overview_page")
    assert [s["step_num"] for s in doc["steps"]] == [1, 2]
    expected = {**ROLE_US, "communication": 0.0, "other": 465.0}
    for step in doc["steps"]:
        assert step["pytorch_breakdown_ms"] == pytest.approx(
            {k: v / 1000 for k, v in expected.items()}, abs=1e-12)


def test_profile_info_states_the_run(tmp_path: Path) -> None:
    path = tmp_path / "run" / "rank1.1700000000000.pt.trace.json"
    trace = gpu_training_step_trace(rank=1, world_size=2)
    info = _views(trace.write(path))("profile_info")
    (host,) = info["hosts"]
    assert host["pytorch"]["rank"] == 1 and host["pytorch"]["world_size"] == 2
    assert host["pytorch"]["backend"] == "nccl"
    assert host["pytorch"]["devices"] == ["NVIDIA H100 80GB HBM3"]


def test_fp32_launch_bound_syncing_step_gets_pytorch_advice(tmp_path: Path) -> None:
    """Two 100 µs steps: aten::mm [0,60] launches (cudaLaunchKernel [5,25]) an fp32 sgemm
    [30,90]; aten::item [60,95] waits in cudaStreamSynchronize [62,92].
    kernel 60; runtime 20 + [90,92] = 22; CPU exec [0,5] + [25,30] + [92,95] = 13; other 5."""
    t = KinetoTrace()
    for step in (1, 2):
        t0 = 1000.0 * step
        t.profiler_step(step, t0, 100)
        mm = t.cpu_op("aten::mm", t0, 60, input_dims=[[512, 512], [512, 512]])
        t.launch_kernel(mm, "ampere_sgemm_128x64_nn", launch_ts=t0 + 5, launch_dur=20,
                        kernel_ts=t0 + 30, kernel_dur=60, grid=(264, 1, 1))
        item = t.cpu_op("aten::item", t0 + 60, 35)
        t._runtime("cudaStreamSynchronize", item, t._next_correlation(), t0 + 62, 30, None)
    path = tmp_path / "run" / "worker0.1700000000000.pt.trace.json"
    doc = _views(t.write(path))("overview_page")
    for step in doc["steps"]:
        assert step["pytorch_breakdown_ms"] == pytest.approx(
            {"kernel": 0.060, "memcpy": 0.0, "memset": 0.0, "communication": 0.0,
             "runtime": 0.022, "dataloader": 0.0, "cpu_exec": 0.013, "other": 0.005},
            abs=1e-12)
    advice = {a["key"]: a for a in doc["advice"]}
    assert set(advice) == {"sync_points", "amp", "torch_compile"}
    evidence = {e["what"]: e["value"] for e in advice["amp"]["evidence"]}
    assert evidence == {"matrix-op kernel share": "100.0 %", "Tensor Core kernel share": "0.0 %"}
    assert "torch.autocast" in advice["amp"]["text"]
    # Sync points: 2 cudaStreamSynchronize (30 µs) and 2 aten::item (35 µs) in 200 µs.
    assert "4 times" in advice["sync_points"]["text"]
    assert "65.0 %" in advice["sync_points"]["text"]
    assert "torch.compile" in advice["torch_compile"]["text"]
    assert doc["sync_points"] == [
        {"kind": "sync", "calls": 2, "time_ms": pytest.approx(0.060),
         "names": ["cudaStreamSynchronize"]},
        {"kind": "item", "calls": 2, "time_ms": pytest.approx(0.070), "names": ["aten::item"]}]
    (gpu,) = doc["gpu_metrics"]
    assert gpu["est_sm_efficiency_percent"] == pytest.approx(60.0)  # 264 blocks >= 132 SMs
