"""Steps from jitted-function executions, and the jitted functions table: exact numbers.

Synthetic captures in the layouts XLA writes (docs/producers.md): JAX on GPU (kernels with
`hlo_module`/`hlo_op`/`name`, one `<module>:XLA GPU module` host event per call holding the
launches, no `run_id`), and XLA on TPU (the producer's XLA Modules line, XLA Ops with metadata
`hlo_category`); then the real JAX captures, whose figures are checked against what the files
themselves say (host call events, run ids).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.steps.step_db import EventType
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR, build_view
from tests.xspace_builder import Uint, XSpaceBuilder

US = 1_000_000  # ps
STEP = "jit_train_step"


def _jax_gpu_space(calls: int = 3, gpus: int = 1) -> bytes:
    """Per call k at t0 = 1000k µs: host call [t0, t0+50] on `python` with three launches
    per GPU on the tracer's thread line; on GPU 0 a H2D copy (no module) at [t0+60, t0+70];
    kernels of jit_train_step on GPU g: dot [t0+80, t0+180-20g], all-reduce
    [t0+180, t0+200], fusion [t0+200, t0+240]. Before the calls: jit_init once, [0, 30] on
    GPU 0 (launch at 0)."""
    b = XSpaceBuilder(hostnames=["gpu-host"])
    host = b.plane("/host:CPU")
    python = host.line("python", line_id=1)
    api = host.line("Host Threads/7", line_id=7)
    streams = [b.gpu_plane(g).line("Stream #2", line_id=2) for g in range(gpus)]
    python.event("jit_init:XLA GPU module", 0, 5 * US)
    api.event("hipModuleLaunchKernel", 1 * US, 1 * US, correlation_id=Uint(1))
    streams[0].kernel("loop_fusion", 0, 30 * US, 1, hlo_module="jit_init", hlo_op="fusion",
                      name="jit(init)/broadcast")
    for k in range(calls):
        t0 = (k + 1) * 1000 * US
        python.event("PjitFunction(train_step)", t0, 55 * US)
        python.event(f"{STEP}:XLA GPU module", t0, 50 * US)
        streams[0].memcpy("HtoD", t0 + 60 * US, 10 * US, 10_000 + k, num_bytes=4096)
        for g, stream in enumerate(streams):
            corr = 100 * (k + 1) + 10 * g
            for j in range(3):
                api.event("hipModuleLaunchKernel", t0 + (10 + 10 * j + g) * US, 1 * US,
                          correlation_id=Uint(corr + j))
            stream.kernel("Cijk_gemm", t0 + 80 * US, (100 - 20 * g) * US, corr,
                          hlo_module=STEP, hlo_op="gemm_fusion_dot.1",
                          name="jit(train_step)/dot_general")
            stream.kernel("ncclDevKernel_AllReduce", t0 + 180 * US, 20 * US, corr + 1,
                          hlo_module=STEP, hlo_op="all-reduce-start.1",
                          name="jit(train_step)/psum")
            stream.kernel("loop_add_fusion", t0 + 200 * US, 40 * US, corr + 2,
                          hlo_module=STEP, hlo_op="loop_add_fusion", name="jit(train_step)/add")
    return b.serialize()


def _tpu_space(calls: int = 4, cores: int = 2) -> bytes:
    """`cores` TPU cores; each runs jit_g once at [0, 40] and then jit_f `calls` times back to
    back, execution k at t0 = 100 + 300k µs (+5 µs per core), 300 µs long: an all-reduce
    [t0, t0+50] (hlo_category "all-reduce") and a fusion [t0+50, t0+250] whose
    device_duration_ps is 150 µs."""
    b = XSpaceBuilder(hostnames=["tpu-host"])
    for core in range(cores):
        tpu = b.plane(f"/device:TPU:{core}", plane_id=core + 1)
        tpu.plane_stat("device_type_string", "TPU v6 Lite")
        ops = tpu.line("XLA Ops", line_id=3)
        modules = tpu.line("XLA Modules", line_id=2)
        fusion = "%fusion.3 = f32[8]{0} fusion(%p0), kind=kLoop"
        reduce = "%all-reduce.1 = f32[8]{0} all-reduce(%p1)"
        tpu.metadata_stats(fusion, display_name="fusion.3", hlo_category="loop fusion",
                           tf_op="jit(f)/add", program_id="7")
        tpu.metadata_stats(reduce, display_name="all-reduce.1", hlo_category="all-reduce",
                           tf_op="jit(f)/psum", program_id="7")
        tpu.metadata_stats("%copy.1 = f32[8]{0} copy(%p)", display_name="copy.1",
                           hlo_category="data formatting", program_id="9")
        modules.event("jit_g(55)", 0, 40 * US, run_id=1)
        ops.event("%copy.1 = f32[8]{0} copy(%p)", 0, 40 * US, display_name="copy.1")
        for k in range(calls):
            t0 = (100 + 300 * k + 5 * core) * US
            modules.event("jit_f(1219)", t0, 300 * US, run_id=10 + k)
            ops.event(reduce, t0, 50 * US, display_name="all-reduce.1")
            ops.event(fusion, t0 + 50 * US, 200 * US, display_name="fusion.3",
                      device_duration_ps=150 * US)
    return b.serialize()


def _type_ps(steps, step: int) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {EventType(t).name: int(v) for t, v in enumerate(steps.type_ps[step]) if v}


def test_jax_gpu_steps_are_the_executions_of_the_repeated_function() -> None:
    analysis = analyze(decode_xspace(_jax_gpu_space(calls=3)))
    assert analysis.root_rule == "executions"
    assert analysis.step_module == STEP
    steps = analysis.steps
    starts = [(k + 1) * 1000 * US + 80 * US for k in range(3)]
    assert steps.begin_ps.tolist() == starts
    # One execution's start to the next's; the last to its end.
    assert steps.duration_ps.tolist() == [1000 * US, 1000 * US, 160 * US]
    for k in range(3):
        expected = {"DEVICE_COMPUTE_32": 140 * US, "DEVICE_COLLECTIVES": 20 * US}
        # The next call's copy (at +980 µs, before its first kernel) falls in this step.
        if k < 2:
            expected |= {"HOST_TO_DEVICE": 10 * US, "UNKNOWN_TIME": 830 * US}
        assert _type_ps(steps, k) == expected


def test_jax_gpu_jitted_functions_table() -> None:
    analysis = analyze(decode_xspace(_jax_gpu_space(calls=3)))
    rows = {row.module: row for row in analysis.jitted}
    assert list(rows) == [STEP, "jit_init"]  # most device time first
    step = rows[STEP]
    assert (step.calls, step.devices, step.executions) == (3, 1, 3)
    assert (step.mean_ps, step.min_ps, step.max_ps) == (160 * US, 160 * US, 160 * US)
    assert step.device_ps == 3 * 160 * US
    assert step.device_fraction == pytest.approx(480 / 510)
    assert (step.dispatches, step.dispatch_mean_ps) == (3, 55 * US)
    init = rows["jit_init"]
    assert (init.calls, init.executions, init.device_ps, init.dispatches) == (1, 1, 30 * US, 0)
    assert np.isnan(init.dispatch_mean_ps)


def test_each_gpu_has_its_own_step_columns() -> None:
    analysis = analyze(decode_xspace(_jax_gpu_space(calls=3, gpus=2)))
    assert analysis.root_rule == "executions"
    assert [name for name, _ in analysis.core_steps] == ["/device:GPU:0", "/device:GPU:1"]
    (_, gpu0), (_, gpu1) = analysis.core_steps
    for own in (gpu0, gpu1):
        assert own.begin_ps.tolist() == analysis.steps.begin_ps.tolist()
    assert gpu0.type_ps[:, EventType.DEVICE_COMPUTE_32].tolist() == [140 * US] * 3
    assert gpu1.type_ps[:, EventType.DEVICE_COMPUTE_32].tolist() == [120 * US] * 3
    # The step's own breakdown is the union over both GPUs.
    assert analysis.steps.type_ps[:, EventType.DEVICE_COMPUTE_32].tolist() == [140 * US] * 3
    rows = {row.module: row for row in analysis.jitted}
    assert (rows[STEP].calls, rows[STEP].devices, rows[STEP].executions) == (3, 2, 6)


def test_tpu_steps_come_from_the_producers_module_line_aligned_across_cores() -> None:
    analysis = analyze(decode_xspace(_tpu_space(calls=4, cores=2)))
    assert analysis.root_rule == "executions"
    assert analysis.step_module == "jit_f"
    steps = analysis.steps
    # Step k starts at the earlier core's k-th execution; the last ends at the later core's end.
    assert steps.begin_ps.tolist() == [(100 + 300 * k) * US for k in range(4)]
    assert steps.duration_ps.tolist() == [300 * US] * 3 + [305 * US]
    for k in range(3):
        # The cores' all-reduces cover [t0, t0+55], their fusions [t0+50, t0+255] (spans, not
        # device_duration_ps); compute wins the overlap.
        assert _type_ps(steps, k)["DEVICE_COLLECTIVES"] == 50 * US
        assert _type_ps(steps, k)["DEVICE_COMPUTE_32"] == 205 * US
    rows = {row.module: row for row in analysis.jitted}
    assert (rows["jit_f"].calls, rows["jit_f"].devices, rows["jit_f"].executions) == (4, 2, 8)
    assert (rows["jit_g"].calls, rows["jit_g"].executions) == (1, 2)
    assert rows["jit_f"].mean_ps == 300 * US


def test_no_module_repeats_no_execution_steps() -> None:
    analysis = analyze(decode_xspace(_jax_gpu_space(calls=1)))
    assert analysis.root_rule == "none"
    assert len(analysis.steps) == 0
    assert {row.module for row in analysis.jitted} == {STEP, "jit_init"}


def _path(name: str) -> Path:
    return next((DATA_DIR / name).glob("plugins/profile/*/*.xplane.pb"))


def _run_ids(path: Path, module: str) -> int:
    """Distinct run_id of the thunks of `module`, read from the file's own stats."""
    table = profile_forest(decode_xspace(path.read_bytes())).table
    canon = table.canonical
    rows = canon.module == canon.texts.index(module)
    return len(np.unique(table.int_stat("run_id", -(2**62))[rows]))


def test_real_jax_cpu_capture_without_markers() -> None:
    path = _path("jax_cpu_plain")
    doc = build_view("overview_page", path)
    assert doc["step_rule"] == "executions" and doc["step_module"] == STEP
    table = {row["module"]: row for row in doc["jitted_functions"]}
    # scripts/make_fixtures.py: 10 train_step calls, eval_step after every 3rd (3 calls).
    assert (table[STEP]["calls"], table["jit_eval_step"]["calls"]) == (10, 3)
    assert table[STEP]["calls"] == _run_ids(path, STEP)
    assert len(doc["steps"]) == 10
    assert any(STEP in message for message in doc["diagnostics"]["info"])


def test_real_jax_cpu_capture_with_markers_keeps_them() -> None:
    doc = build_view("overview_page", _path("jax_cpu_steps"))
    assert doc["step_rule"] == "marker" and doc["step_module"] == ""
    assert [row["calls"] for row in doc["jitted_functions"]] == [20]


@pytest.mark.parametrize(("name", "module", "devices"), [
    ("jax_gpu_attention", "jit_loss_fn", 1), ("jax_gpu_conv", "jit_forward_3d_conv", 8)])
def test_real_jax_gpu_jitted_functions_match_the_host_calls(
        name: str, module: str, devices: int) -> None:
    path = _path(name)
    table = profile_forest(decode_xspace(path.read_bytes())).table
    host_calls = sum(1 for i in table.name_id.tolist()
                     if table.names[i] == f"{module}:XLA GPU module")
    doc = build_view("overview_page", path)
    (row,) = doc["jitted_functions"]
    assert row["module"] == module and row["devices"] == devices
    assert row["executions"] == host_calls  # one host call per execution per device
    assert row["calls"] == host_calls // devices == 5
    assert doc["step_rule"] == "executions" and len(doc["steps"]) == 5
