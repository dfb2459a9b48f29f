"""tests/kineto_builder.py writes PyTorch traces in the layouts real traces use: the links a
reader follows (External id, correlation, ac2g flows) are consistent, and each variant keeps
its own spelling (categories, id types, integer times)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.kineto_builder import BASE_TS, KinetoTrace, gpu_training_step_trace


def _x(events: list[dict], cat: str) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == cat]


def test_2x_launch_links_and_flows() -> None:
    events = gpu_training_step_trace("2.x", rank=0, world_size=2).to_dict()["traceEvents"]
    ops = {e["args"]["External id"]: e for e in _x(events, "cpu_op") + _x(events,
                                                                          "user_annotation")}
    runtime = {e["args"]["correlation"]: e for e in _x(events, "cuda_runtime")}
    device = _x(events, "kernel") + _x(events, "gpu_memcpy") + _x(events, "gpu_memset")
    assert len(device) == 2 * 5 and len(runtime) == 10
    for dev in device:
        call = runtime[dev["args"]["correlation"]]
        op = ops[dev["args"]["External id"]]
        assert call["args"]["External id"] == dev["args"]["External id"]
        assert op["ts"] <= call["ts"] and call["ts"] + call["dur"] <= op["ts"] + op["dur"]
        assert (dev["pid"], dev["tid"]) == (dev["args"]["device"], dev["args"]["stream"])
    starts = {e["id"]: e for e in events if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    finishes = {e["id"]: e for e in events if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    assert set(starts) == set(finishes) == set(runtime)
    for corr, f in finishes.items():
        assert f["bp"] == "e" and f["ts"] == next(
            d["ts"] for d in device if d["args"]["correlation"] == corr)


def test_2x_steps_collectives_memory() -> None:
    doc = gpu_training_step_trace("2.x", rank=1, world_size=4).to_dict()
    events = doc["traceEvents"]
    host = {e["name"]: e for e in _x(events, "user_annotation") if "Step" in e["name"]}
    gpu = {e["name"]: e for e in _x(events, "gpu_user_annotation") if "Step" in e["name"]}
    assert sorted(host) == sorted(gpu) == ["ProfilerStep#1", "ProfilerStep#2"]
    assert host["ProfilerStep#2"]["args"]["External id"] == gpu["ProfilerStep#2"]["args"][
        "External id"]
    assert host["ProfilerStep#2"]["ts"] == BASE_TS + 2000 and gpu["ProfilerStep#2"]["dur"] == 850
    nccl = [e for e in _x(events, "kernel") if e["name"].startswith("ncclDevKernel_AllReduce")]
    assert [k["args"]["Collective name"] for k in nccl] == ["allreduce", "allreduce"]
    assert nccl[0]["args"]["Group size"] == 4 and nccl[0]["tid"] == 20
    memory = [e for e in events if e.get("name") == "[memory]"]
    assert [m["args"]["Total Allocated"] for m in memory] == [4096, 0, 4096, 0]
    assert {m["args"]["Device Type"] for m in memory} == {1}
    assert doc["distributedInfo"]["rank"] == 1 and doc["distributedInfo"]["world_size"] == 4
    assert [p["id"] for p in doc["deviceProperties"]] == [0]


def test_2021_spelling() -> None:
    doc = gpu_training_step_trace("2021").to_dict()
    events = doc["traceEvents"]
    cats = {e.get("cat") for e in events}
    assert cats == {"Operator", "Runtime", "Kernel", "Memcpy", "Memset", "async", "Trace", None}
    assert "distributedInfo" not in doc
    spans = [e for e in events if e.get("ph") == "X"]
    assert all(isinstance(e["ts"], int) and isinstance(e["dur"], int) for e in spans)
    assert all(isinstance(e["tid"], str) for e in spans if e["cat"] != "Trace")
    kernels = _x(events, "Kernel")
    assert {k["tid"] for k in kernels} == {"stream 7"}
    assert all("external id" in k["args"] and "External id" not in k["args"] for k in kernels)
    flow_starts = [e for e in events if e.get("ph") == "s"]
    assert flow_starts and all(isinstance(e["tid"], int) and e["name"] == "launch"
                               for e in flow_starts)
    steps = [e for e in _x(events, "Operator") if e["name"].startswith("ProfilerStep#")]
    assert [s["dur"] for s in steps] == [900, 900]
    memory = [e for e in events if e.get("name") == "[memory]"]
    assert memory and all("cat" not in m and "Total Allocated" not in m["args"]
                          for m in memory)
    with pytest.raises(ValueError):
        KinetoTrace(variant="2021").cpu_op("aten::mm", 0.5, 1)


def test_driver_launch_has_no_external_id() -> None:
    t = KinetoTrace()
    op = t.cpu_op("triton_poi_fused_add_0", 0.0, 50.0)
    corr = t.launch_kernel(op, "triton_poi_fused_add_0", launch_ts=10.0, launch_dur=5.0,
                           kernel_ts=60.0, kernel_dur=2.5, api="cuLaunchKernelEx")
    events = t.to_dict()["traceEvents"]
    (call,) = _x(events, "cuda_driver")
    (kernel,) = _x(events, "kernel")
    assert call["args"] == {"cbid": 652, "correlation": corr}
    assert kernel["args"]["correlation"] == corr and "External id" not in kernel["args"]
    assert not _x(events, "cuda_runtime")
    with pytest.raises(ValueError):
        KinetoTrace(variant="2021").launch_kernel(1, "k", launch_ts=0, launch_dur=1,
                                                  kernel_ts=2, kernel_dur=1,
                                                  api="cuLaunchKernelEx")


@pytest.mark.parametrize("name", ["w.1.pt.trace.json", "w.1.pt.trace.json.gz"])
def test_write_round_trip(tmp_path: Path, name: str) -> None:
    trace = gpu_training_step_trace("2.x")
    path = trace.write(tmp_path / "run" / name)
    raw = path.read_bytes()
    data = gzip.decompress(raw) if name.endswith(".gz") else raw
    assert json.loads(data) == json.loads(json.dumps(trace.to_dict()))
