"""Real JAX captures on an NVIDIA H200 (CUPTI; scripts/capture_nvidia.py, tests/data/README.md)
against the files' own events and, where it is right, the reference (xprof 2.24.2, figures in
tests/data/reference/xprof_2.24.2_jax_nvidia.json).

JAX 0.11 replays a jitted step's kernels inside a CUDA graph: every kernel of
`jax_nvidia_train` carries `hlo_op` = `command_buffer_1` and no `name`, so its op and precision
come from the module's HloProto on the metadata plane (xspace/hlo_modules.py). The reference
reads neither: it names every kernel's op "XlaModule", lists no device op, counts the
host-to-device copies as device compute (it reads only the `MemcpyHToD` spelling, CUPTI writes
`MemcpyH2D`) and calls the bf16 program 100 % 32-bit. Those figures are checked here against
the events themselves instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_profile_plugin.trace.wire import varint as _varint
from tb_profile_plugin.xspace.pb import hlo_summary_pb2, xplane_pb2
from tests.fixtures import DATA_DIR, build_view

REFERENCE = json.loads((DATA_DIR / "reference" / "xprof_2.24.2_jax_nvidia.json").read_text())
PS_PER_MS = 1e9


def _capture(name: str) -> Path:
    return next((DATA_DIR / name).glob("plugins/profile/*/*.xplane.pb"))


def _space(name: str) -> xplane_pb2.XSpace:
    return xplane_pb2.XSpace.FromString(_capture(name).read_bytes())


def _plane(space: xplane_pb2.XSpace, name: str) -> xplane_pb2.XPlane:
    return next(p for p in space.planes if p.name == name)


def _device_events(space: xplane_pb2.XSpace, line_word: str) -> list[tuple[str, int, int]]:
    """(name, start ps, end ps) of the GPU's events on lines whose name holds `line_word`."""
    gpu = _plane(space, "/device:GPU:0")
    out = []
    for line in gpu.lines:
        if line_word not in line.name:
            continue
        base = line.timestamp_ns * 1000
        for e in line.events:
            name = gpu.event_metadata[e.metadata_id].name
            out.append((name, base + e.offset_ps, base + e.offset_ps + e.duration_ps))
    return out


def _host_events(space: xplane_pb2.XSpace, name: str) -> list[tuple[str, int, int]]:
    """(name, start ps, end ps) of the host's events named `name`."""
    cpu = _plane(space, "/host:CPU")
    return [(name, line.timestamp_ns * 1000 + e.offset_ps,
             line.timestamp_ns * 1000 + e.offset_ps + e.duration_ps)
            for line in cpu.lines for e in line.events
            if cpu.event_metadata[e.metadata_id].name == name]


def _train_steps(space: xplane_pb2.XSpace) -> list[tuple[int, int, int]]:
    """(step_num, start ps, end ps) of the StepTraceAnnotation("train") events."""
    cpu = _plane(space, "/host:CPU")
    names = {k: v.name for k, v in cpu.stat_metadata.items()}
    steps = []
    for line in cpu.lines:
        base = line.timestamp_ns * 1000
        for e in line.events:
            if cpu.event_metadata[e.metadata_id].name != "train":
                continue
            num = next(s.int64_value or s.uint64_value for s in e.stats
                       if names[s.metadata_id] == "step_num")
            steps.append((num, base + e.offset_ps, base + e.offset_ps + e.duration_ps))
    return sorted(steps)


def _covered_ps(events: list[tuple[str, int, int]], start: int, end: int) -> int:
    """Time within [start, end) covered by any of the events (a CUDA graph's kernels may run
    side by side, so their union, not their sum)."""
    covered, reach = 0, start
    for s, e in sorted((max(s, start), min(e, end)) for _, s, e in events if s < end and e > start):
        if e > reach:
            covered += e - max(s, reach)
            reach = e
    return covered


def _kernel_instructions(space: xplane_pb2.XSpace, module: str) -> dict[str, Any]:
    """Kernel name (instruction name, dots made underscores) -> instruction, from the module's
    HloProto on the metadata plane."""
    meta = _plane(space, "/host:metadata")
    data = next(v.stats[0].bytes_value for v in meta.event_metadata.values()
                if v.name.startswith(module + "("))
    proto = hlo_summary_pb2.HloProto.FromString(data).hlo_module
    return {i.name.replace(".", "_"): i for c in proto.computations
            if not c.is_fusion_computation for i in c.instructions}


# ------------------------------------------------------------------ jax_nvidia_train


def test_steps_are_the_step_annotations() -> None:
    steps = _train_steps(_space("jax_nvidia_train"))
    assert [s[0] for s in steps] == list(range(6))
    ours = build_view("overview_page", _capture("jax_nvidia_train"))["steps"]
    kept = steps[1:-1]  # the first and last are cut by the capture window
    assert [row["step_num"] for row in ours] == [s[0] for s in kept]
    for row, (_, start, end) in zip(ours, kept, strict=True):
        assert row["step_time_ms"] == pytest.approx((end - start) / PS_PER_MS, abs=1e-6)


def test_device_compute_and_input_per_step_are_the_kernels_and_copies_in_it() -> None:
    space = _space("jax_nvidia_train")
    kernels = _device_events(space, "Compute")  # kernels and a memset per step
    copies = _device_events(space, "MemcpyH2D")
    ours = build_view("overview_page", _capture("jax_nvidia_train"))["steps"]
    theirs = REFERENCE["jax_nvidia_train"]["overview_tables"]["1"]
    for row, ref, (_, start, end) in zip(ours, theirs, _train_steps(space)[1:-1], strict=True):
        compute = _covered_ps(kernels, start, end)
        h2d = _covered_ps(copies, start, end)
        assert compute > 0 and h2d > 0
        assert row["breakdown_ms"]["device_compute"] == pytest.approx(compute / PS_PER_MS,
                                                                      abs=1e-6)
        # Input: the copies to the GPU, and the host's calls that issue them (`MemcpyH2D` on
        # the PjRt worker threads), where no device work overlaps them.
        issued = _covered_ps(_host_events(space, "MemcpyH2D"), start, end)
        assert h2d / PS_PER_MS - 1e-6 <= row["breakdown_ms"]["input"] <= (
            (h2d + issued) / PS_PER_MS + 1e-6)
        assert sum(row["breakdown_ms"].values()) == pytest.approx(row["step_time_ms"], abs=1e-6)
        # The reference counts the copies as device compute (its steps are cut at other
        # boundaries, so not every copy of ours falls in its step).
        assert ref["deviceComputeTimeMs"] > (compute + 0.5 * h2d) / PS_PER_MS
        assert ref["deviceComputeTimeMs"] > 1.5 * row["breakdown_ms"]["device_compute"]


def test_kernels_inside_the_cuda_graph_take_their_op_from_the_hlo() -> None:
    space = _space("jax_nvidia_train")
    instructions = _kernel_instructions(space, "jit_train_step")
    rows = build_view("kernel_stats", _capture("jax_nvidia_train"))["rows"]
    assert not any("XlaModule" in r["op_name"] for r in rows)
    named = [r for r in rows if r["kernel_name"] in instructions]
    assert len(named) >= 40
    for r in named:
        # The fusion at the kernel's place in the schedule, which is the one it is named
        # after except where XLA compiled one kernel for identical fusions and named it after
        # the first (xspace/hlo_modules.py; tests/unit/xspace/test_hlo_fusions_in_graphs.py).
        ins = instructions[r["hlo_op"].replace(".", "_")]
        # An instruction of no framework op: its module's HLO op (issue 28).
        assert r["op_name"] == (ins.metadata.op_name or f"jit_train_step/{ins.name}")
    assert {(r["kernel_name"], r["hlo_op"]) for r in named
            if r["hlo_op"].replace(".", "_") != r["kernel_name"]} == {
        ("loop_transpose_fusion_1", "loop_transpose_fusion")}
    assert any(r["op_name"] == "jit(train_step)/jvp()/dot_general"
               and r["kernel_name"] == "gemm_fusion_dot_34" for r in rows)
    # cuBLAS's kernels have no instruction of their name: each takes the custom-call at its
    # place in the module's schedule (xspace/hlo_modules.py; tests/unit/xspace/
    # test_hlo_cublas_in_graphs.py), and its JAX op.
    library = [r for r in rows if r["kernel_name"].startswith("nvjet_")]
    assert len(library) == 6 and all(r["hlo_op"].startswith("custom-call.") for r in library)
    assert all(r["op_name"].startswith("jit(train_step)/") for r in library)
    assert all(r["uses_tensor_core"] for r in library)
    assert not any(r["hlo_op"] == "command_buffer_1" for r in rows)  # memsets are no kernels


def test_graph_kernels_resolve_to_the_instructions_they_run_alone() -> None:
    """The same program with CUDA graphs off (`jax_nvidia_train_nograph`) launches each kernel
    alone, with its real `hlo_op`: the instruction we resolved a graph kernel to from its name
    is the one that kernel ran for there (XLA may reuse one kernel for two identical fusions,
    so a kernel can stand for more than one instruction)."""
    space = _space("jax_nvidia_train_nograph")
    gpu = _plane(space, "/device:GPU:0")
    names = {k: v.name for k, v in gpu.stat_metadata.items()}
    launched: dict[str, set[str]] = {}
    for line in gpu.lines:
        for e in line.events:
            hlo = [names.get(s.ref_value, s.str_value) for s in e.stats
                   if names[s.metadata_id] == "hlo_op"]
            launched.setdefault(gpu.event_metadata[e.metadata_id].name, set()).update(hlo)
    rows = build_view("kernel_stats", _capture("jax_nvidia_train"))["rows"]
    # cuBLAS kernels are not checked here: the two compilations number their custom-calls
    # differently (the graph's `custom-call.4` is the other's `custom-call.3`), so a name
    # says nothing; tests/unit/xspace/test_hlo_cublas_in_graphs.py checks them.
    resolved = [r for r in rows if r["hlo_op"] != "command_buffer_1"
                and not r["hlo_op"].startswith("custom-call.")]
    checked = [r for r in resolved if r["kernel_name"] in launched]
    assert len(checked) >= 35
    for r in checked:
        assert r["hlo_op"] in launched[r["kernel_name"]], r["kernel_name"]
    # Without graphs the same ops come out, now from each kernel's own `hlo_op`; except for
    # instructions of no framework op, which the graph names `jit_train_step/<HLO op>` and
    # the kernels run alone by their `name` stat (a scope, or an op path).
    alone = {(r["kernel_name"], r["hlo_op"]): r["op_name"]
             for r in build_view("kernel_stats", _capture("jax_nvidia_train_nograph"))["rows"]}
    same = [r for r in checked if (r["kernel_name"], r["hlo_op"]) in alone]
    assert len(same) == len(checked)
    differ = [r for r in same if alone[(r["kernel_name"], r["hlo_op"])] != r["op_name"]]
    assert all(r["op_name"] == f"jit_train_step/{r['hlo_op']}" for r in differ)
    assert len(same) == 42 and len(differ) == 5


def test_kernel_counts_and_times_equal_the_references() -> None:
    """The reference's op names are wrong here, its sums per kernel are right."""
    rows = build_view("kernel_stats", _capture("jax_nvidia_train"))["rows"]
    theirs: dict[str, list[float]] = {}
    for r in REFERENCE["jax_nvidia_train"]["kernel_stats"][0]:
        acc = theirs.setdefault(r["kernel_name"], [0.0, 0.0])
        acc[0] += r["occurrences"]
        acc[1] += r["total_duration_us"]
    ours: dict[str, list[float]] = {}
    for r in rows:
        acc = ours.setdefault(r["kernel_name"], [0.0, 0.0])
        acc[0] += r["occurrences"]
        acc[1] += r["total_duration_us"]
    assert set(ours) == set(theirs)
    for name, (count, total_us) in theirs.items():
        assert ours[name][0] == count
        assert ours[name][1] == pytest.approx(total_us, abs=2e-3)


def test_a_bfloat16_program_is_not_told_to_use_bfloat16() -> None:
    overview = build_view("overview_page", _capture("jax_nvidia_train"))
    precision = overview["device_compute_precision"]
    assert precision["percent_16bit"] > 50.0
    assert "mixed_precision" not in {a["key"] for a in overview["advice"]}
    # The reference calls it 100 % 32-bit.
    assert REFERENCE["jax_nvidia_train"]["overview_p"]["0"][
        "device_compute_32bit_percent"] == "100.0%"


def test_the_host_bound_step_is_called_so_and_its_python_named() -> None:
    overview = build_view("overview_page", _capture("jax_nvidia_train"))
    assert overview["bottleneck"]["input_bound"] == "not" or overview["bottleneck"]
    advice = {a["key"]: a for a in overview["advice"]}
    assert "host_bound" in advice
    text = advice["host_bound"]["text"]
    assert "batch (capture_nvidia.py:101)" in text
    assert "device waits on the host" in overview["bottleneck"]["statement"]


def test_top_device_ops_are_jax_ops_and_copies() -> None:
    top = build_view("overview_page", _capture("jax_nvidia_train"))["top_device_ops"]
    names = [r["name"] for r in top]
    assert names[0] == "MemcpyH2D"
    assert "jit(train_step)/jvp()/dot_general" in names[:4]
    assert not any("XlaModule" in n for n in names)
    # The reference lists no device op at all on this capture.
    assert "0" not in REFERENCE["jax_nvidia_train"]["overview_tables"]


# ------------------------------------------------------------------ jax_nvidia_plain


def test_plain_capture_kernel_rows_equal_the_references() -> None:
    """Kernels outside a CUDA graph carry `name` and `hlo_op`: every reference row, op
    included, is ours (the tensor-core flag aside: see the next test)."""
    rows = build_view("kernel_stats", _capture("jax_nvidia_plain"))["rows"]

    def key(r: dict[str, Any], op: str, grid: str, block: str) -> tuple[str, str, str, str]:
        return r["kernel_name"], op, grid, block

    ours = {key(r, r["op_name"], ",".join(map(str, r["grid_dim"])),
                ",".join(map(str, r["block_dim"]))): r for r in rows}
    theirs = REFERENCE["jax_nvidia_plain"]["kernel_stats"][0]
    assert len(ours) == len(theirs) == 11
    for ref in theirs:
        # A kernel of no framework op: the reference leaves its op empty, we name its module's
        # HLO op (issue 28: `jit_conv_net/loop_broadcast_fusion`).
        op = ref["op_name"] or next(f"jit_conv_net/{r['hlo_op']}" for r in rows
                                    if r["kernel_name"] == ref["kernel_name"])
        mine = ours[key(ref, op, ref["grid_dim"], ref["block_dim"])]
        assert mine["occurrences"] == ref["occurrences"]
        assert mine["total_duration_us"] == pytest.approx(ref["total_duration_us"], abs=1e-3)
        assert mine["registers_per_thread"] == ref["registers_per_thread"]
        assert mine["occupancy_percent"] == pytest.approx(ref["occupancy_pct"])


def test_hopper_library_kernels_use_tensor_cores() -> None:
    """cuDNN's tf32 convolution `sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32…` runs on Tensor
    Cores; the reference's pre-Hopper name list says it does not."""
    rows = build_view("kernel_stats", _capture("jax_nvidia_plain"))["rows"]
    conv = [r for r in rows if r["kernel_name"].startswith("sm90_xmma_fprop_implicit_gemm")]
    assert len(conv) == 2 and all(r["uses_tensor_core"] for r in conv)
    ref = [r for r in REFERENCE["jax_nvidia_plain"]["kernel_stats"][0]
           if r["kernel_name"].startswith("sm90_xmma")]
    assert ref and not any(r["is_kernel_using_tensor_core"] for r in ref)


def test_plain_capture_device_ops_equal_the_references() -> None:
    rows = build_view("tensorflow_stats", _capture("jax_nvidia_plain"))["rows"]
    ours = {r["op_name"]: r for r in rows if r["host_or_device"] == "Device"}
    theirs = [r for r in REFERENCE["jax_nvidia_plain"]["framework_op_stats"][0]
              if r["host_or_device"] == "Device" and r["operation"] != "IDLE"]
    assert len(theirs) == 9
    for ref in theirs:
        # An HLO op of no framework op is named by it alone there; here by its module and HLO
        # op (issue 28), so `copy.1` is two ops: jit_copy's and jit__lambda's.
        same = [r for n, r in ours.items()
                if n == ref["operation"] or n.endswith("/" + ref["operation"])]
        mine = same[0]
        assert sum(r["total_self_time_us"] for r in same) == pytest.approx(
            ref["total_self_time"], abs=1e-3)
        # An HLO op of no framework op: typed "Unknown" there, by its HLO kind here.
        hlo_kind = ref["operation"].rsplit(".", 1)[0] if "." in ref["operation"] else \
            ref["operation"]
        assert mine["op_type"] == (ref["type"] if ref["type"] != "Unknown" else hlo_kind)
        if ref["operation"] != "copy.1":
            assert len(same) == 1 and mine["occurrences"] == ref["occurrences"]
    # `copy.1` ran once in each of two jitted functions: one op each here, one op (its two
    # events merged into one run) there.
    assert ours["jit_copy/copy.1"]["occurrences"] == ours["jit__lambda/copy.1"]["occurrences"] == 1
    # The copies to and from the host are device ops here (time the GPU spent on them), not
    # idle time as there.
    assert {"MemcpyH2D", "MemcpyD2H"} <= set(ours)


def test_all_three_copy_directions_are_transfers_not_compute() -> None:
    space = _space("jax_nvidia_plain")
    names = {n for n, _, _ in _device_events(space, "Memcpy")}
    assert {"MemcpyH2D", "MemcpyD2H", "MemcpyD2D"} <= names
    rows = build_view("tensorflow_stats", _capture("jax_nvidia_plain"))["rows"]
    copies = {r["op_name"]: r for r in rows
              if r["op_name"].startswith("Memcpy") and r["host_or_device"] == "Device"}
    h2d = sum(e - s for n, s, e in _device_events(space, "") if n == "MemcpyH2D")
    assert copies["MemcpyH2D"]["total_self_time_us"] == pytest.approx(h2d / 1e6, abs=1e-3)
    assert np.isfinite(copies["MemcpyD2H"]["total_self_time_us"])


def test_a_float32_program_without_step_markers_is_told_to_use_bfloat16() -> None:
    """Steps are the jitted function's executions; the precision covers their kernels (all
    f32 by the module's HLO), so the bfloat16 advice is given, with its evidence."""
    overview = build_view("overview_page", _capture("jax_nvidia_plain"))
    assert overview["step_rule"] == "executions"
    assert overview["device_compute_precision"] == {"percent_16bit": 0.0,
                                                    "percent_32bit": 100.0}
    advice = {a["key"]: a for a in overview["advice"]}
    assert "bfloat16" in advice["mixed_precision"]["text"]


def test_trace_details_of_a_graph_kernel_name_its_instruction() -> None:
    """The trace's details of a kernel inside the CUDA graph add what its events lack: the HLO
    instruction, its JAX op and its float width, from the module's HLO."""
    from tb_profile_plugin.trace.details import event_details
    from tb_profile_plugin.trace.window import trace_set
    from tb_profile_plugin.xspace.decode import decode_xspace

    trace = trace_set({"vm": decode_xspace(_capture("jax_nvidia_train").read_bytes())})
    index = trace.hosts[0].index
    names = [index.names[int(k)] for k in index.name_id]
    kernel = names.index("gemm_fusion_dot_34")
    stats = event_details(trace, trace.hosts[0].id_offset + kernel)["event"]["stats"]
    assert stats["hlo_op"] == "command_buffer_1"
    assert stats["xla_instruction"] == "gemm_fusion_dot.34"
    assert stats["xla_op_name"] == "jit(train_step)/jvp()/dot_general"
    assert stats["xla_float_bits"] == 16
    copy = names.index("MemcpyH2D")
    assert "xla_instruction" not in event_details(trace, copy)["event"]["stats"]


# ------------------------------------------------------------------ jax_nvidia_device_bound


def test_a_device_bound_step_is_mostly_device_compute_and_never_told_to_jit_the_step() -> None:
    """Six bf16 blocks per step on batches made on the GPU: the kernels' union is most of
    each step; the step is one jitted call, so no advice asks to jit it, and none says the
    device waits on the host."""
    space = _space("jax_nvidia_device_bound")
    kernels = _device_events(space, "Compute")
    overview = build_view("overview_page", _capture("jax_nvidia_device_bound"))
    for row, (_, start, end) in zip(overview["steps"], _train_steps(space)[1:-1], strict=True):
        compute = _covered_ps(kernels, start, end) / PS_PER_MS
        assert row["breakdown_ms"]["device_compute"] == pytest.approx(compute, abs=1e-6)
        assert compute > 0.6 * row["step_time_ms"]
    advice = {a["key"]: a for a in overview["advice"]}
    assert "host_bound" not in advice and "mixed_precision" not in advice
    assert "device waits on the host" not in overview["bottleneck"]["statement"]
    for item in advice.values():
        assert "jit the whole" not in item["text"]
    assert "jit_whole_step" in {w["key"] for w in overview["advice_withheld"]}
    assert overview["device_compute_precision"]["percent_16bit"] > 50.0


def test_gpu_memory_is_attributed_to_the_module_that_allocated_it() -> None:
    """JAX's GPU allocator writes no op on its allocations; they happen while PjRt builds the
    buffers of one execution (`CommonPjRtLoadedExecutable::Execute (jit_train_step)` encloses
    them), so the memory breakdown names that module, the step's 1.26 GB temp buffer first."""
    memory = build_view("memory_profile", _capture("jax_nvidia_device_bound"))
    assert memory["memory_id"] == "GPU_0_bfc"
    top = memory["breakdown"][0]
    assert (top["op_name"], top["allocation_bytes"]) == ("jit_train_step", 1_258_458_880)
    tensors = [row for row in memory["breakdown"] if row["kind"] == "tensor"]
    assert tensors and all(row["op_name"] == "jit_train_step" for row in tensors)
    assert memory["summary"]["peak_heap_usage_lifetime_bytes"] == 1_765_970_944


@pytest.mark.parametrize("damage", ["garbage", "truncated", "recursive"])
def test_broken_hlo_protos_leave_the_kernels_as_their_events_say(tmp_path: Path,
                                                                 damage: str) -> None:
    """A module whose HloProto does not parse is skipped: its graph kernels keep the op their
    events give (the command buffer), every view still answers."""
    space = _space("jax_nvidia_train")
    meta = _plane(space, "/host:metadata")
    for entry in meta.event_metadata.values():
        stat = entry.stats[0]
        if damage == "garbage":
            stat.bytes_value = b"\xff" * 64
        elif damage == "truncated":
            stat.bytes_value = stat.bytes_value[: len(stat.bytes_value) // 2]
        else:  # tuple shapes nested far deeper than any parser allows
            nested = b""
            for _ in range(2000):
                nested = b"\x22" + _varint(len(nested)) + nested  # ShapeProto.tuple_shapes
            instruction = b"\x1a" + _varint(len(nested)) + nested  # HloInstruction.shape
            computation = b"\x12" + _varint(len(instruction)) + instruction
            module = b"\x1a" + _varint(len(computation)) + computation
            stat.bytes_value = b"\x0a" + _varint(len(module)) + module
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(space.SerializeToString())
    rows = build_view("kernel_stats", path)["rows"]
    assert rows and all(r["hlo_op"] == "command_buffer_1" for r in rows
                        if not r["kernel_name"].startswith("Memset"))
    assert build_view("overview_page", path)["steps"]
