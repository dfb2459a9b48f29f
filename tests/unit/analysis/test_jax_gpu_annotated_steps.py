"""JAX on GPU with `jax.profiler.StepTraceAnnotation`: the host step reaches its kernels.

The layout of a real ROCm capture (tests/data/jax_gpu_attention): TraceMe events (the step
annotation `train` with `step_num` and `_r`, `PjitFunction(f)`, `<module>:XLA GPU module`) on
the `python` line; the tracer's API calls (`hipModuleLaunchKernel`, `correlation_id`) on a
separate `Host Threads/<tid>` line that no TraceMe shares; kernels with `hlo_module`,
`hlo_op`, `name`. Each step's kernels must land in that step (device breakdown exact).
"""

from __future__ import annotations

from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.steps.step_db import EventType
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import Uint, XSpaceBuilder

US = 1_000_000  # ps


def _annotated_space(steps: int = 3) -> bytes:
    """Step k at t0 = 1000k µs: train [0, 300]; PjitFunction [0, 55] and the module call
    [0, 50] inside; launches at 10, 20, 30 on the tracer line; on the GPU a H2D copy
    [60, 70], kernels dot [80, 180], all-reduce [180, 200], fusion [200, 240]."""
    b = XSpaceBuilder(hostnames=["gpu-host"])
    host = b.plane("/host:CPU")
    python = host.line("python3", line_id=1029134407802915441)
    api = host.line("Host Threads/7", line_id=7)
    stream = b.gpu_plane(0).line("Stream #2", line_id=2)
    for k in range(steps):
        t0 = k * 1000 * US
        corr = 10 * (k + 1)
        python.event("train", t0, 300 * US, step_num=k, _r=1)
        python.event("PjitFunction(train_step)", t0, 55 * US)
        python.event("jit_train_step:XLA GPU module", t0, 50 * US)
        for j in range(3):
            api.event("hipModuleLaunchKernel", t0 + (10 + 10 * j) * US, 1 * US,
                      correlation_id=Uint(corr + j))
        stream.memcpy("HtoD", t0 + 60 * US, 10 * US, corr + 5, num_bytes=4096)
        stream.kernel("Cijk_gemm", t0 + 80 * US, 100 * US, corr, hlo_module="jit_train_step",
                      hlo_op="gemm_fusion_dot.1", name="jit(train_step)/dot_general")
        stream.kernel("ncclDevKernel_AllReduce", t0 + 180 * US, 20 * US, corr + 1,
                      hlo_module="jit_train_step", hlo_op="all-reduce-start.1",
                      name="jit(train_step)/psum")
        stream.kernel("loop_add_fusion", t0 + 200 * US, 40 * US, corr + 2,
                      hlo_module="jit_train_step", hlo_op="loop_add_fusion",
                      name="jit(train_step)/add")
    return b.serialize()


def test_annotated_jax_gpu_steps_have_their_device_breakdown() -> None:
    analysis = analyze(decode_xspace(_annotated_space(steps=3)))
    assert analysis.root_rule == "marker"
    steps = analysis.steps
    assert steps.step_num.tolist() == [0, 1, 2]
    assert steps.begin_ps.tolist() == [0, 1000 * US, 2000 * US]
    assert steps.duration_ps.tolist() == [300 * US] * 3
    for k in range(3):
        row = steps.type_ps[k]
        assert row[EventType.DEVICE_COMPUTE_32] == 140 * US
        assert row[EventType.DEVICE_COLLECTIVES] == 20 * US
        # The launches reached the step; the copy has no launch on the tracer line here but
        # its correlation id reaches nothing: it is not in the step.
        assert row[EventType.HOST_PREPARE] == 3 * US
        assert int(row.sum()) == 300 * US


def test_launches_outside_every_step_stay_outside() -> None:
    b = XSpaceBuilder()
    host = b.plane("/host:CPU")
    python = host.line("python3", line_id=99)
    api = host.line("Host Threads/7", line_id=7)
    stream = b.gpu_plane(0).line("Stream #2", line_id=2)
    python.event("train", 0, 100 * US, step_num=0, _r=1)
    python.event("jit_f:XLA GPU module", 0, 50 * US)
    api.event("hipModuleLaunchKernel", 10 * US, 1 * US, correlation_id=Uint(1))
    api.event("hipModuleLaunchKernel", 500 * US, 1 * US, correlation_id=Uint(2))
    stream.kernel("k1", 20 * US, 30 * US, 1, hlo_module="jit_f")
    stream.kernel("k2", 510 * US, 70 * US, 2, hlo_module="jit_f")
    steps = analyze(decode_xspace(b.serialize())).steps
    assert steps.duration_ps.tolist() == [100 * US]
    assert steps.type_ps[0][EventType.DEVICE_COMPUTE_32] == 30 * US
