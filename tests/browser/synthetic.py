"""Small synthetic profiles for what the real fixtures lack: a GPU, no steps, hostile names.

The real fixtures (tests/data) are CPU-only captures that all have steps. These are built
with the project's XSpace builder, in a few lines each:

- `gpu/<session>/gpu-host.xplane.pb`: three 100 µs steps on a host with one GPU, every
  step-time category present (the same timeline as tests/unit/analysis/
  test_gpu_step_breakdown.py), so the overview shows device precision and top device ops.
  Its one tf.data op has a long name holding HTML, to check that names stay text and are
  cut with an ellipsis.
- `no_steps/<session>/nostep.xplane.pb`: ops but no step marker of any kind, so the views
  show their no-steps state and the diagnostics explain how to mark steps.
"""

from __future__ import annotations

from pathlib import Path

from tests.xspace_builder import XSpaceBuilder

US = 1_000_000  # ps
SESSION = "2026_01_01_00_00_00"
GPU_RUN = f"gpu/{SESSION}"
GPU_HOST = "gpu-host"
NO_STEPS_RUN = f"no_steps/{SESSION}"
NO_STEPS_HOST = "nostep"
# An input op whose name is long and looks like HTML: it must be shown as text, cut short.
HOSTILE_OP = "Iterator::Root::<img src=x data-injected=1>::" + "::".join(
    f"ParallelMapV2_{k}" for k in range(12)
)


def gpu_profile(steps: int = 3) -> bytes:
    b = XSpaceBuilder(hostnames=[GPU_HOST])
    py = b.plane("/host:CPU").line("python", line_id=1)
    stream = b.gpu_plane(0).line("Stream #7(Compute)", line_id=7)
    for step in range(steps):
        t0 = step * 200 * US
        corr = step * 10
        py.event("train", t0, 100 * US, step_num=step + 1, _r=1)
        py.event("ExecutorState::Process", t0 + 10 * US, 10 * US)
        for k in range(6):
            py.event("cudaLaunchKernel", t0 + (20 + k) * US, 1 * US, correlation_id=corr + k + 1)
        py.event("dense/MatMul:MatMul", t0 + 26 * US, 4 * US)
        py.event("IteratorGetNext", t0 + 30 * US, 5 * US)
        py.event(HOSTILE_OP, t0 + 30 * US, 4 * US)
        py.event("Add:AddV2", t0 + 50 * US, 10 * US)
        stream.memcpy("HtoD", t0 + 40 * US, 5 * US, corr + 1, num_bytes=4096)
        stream.kernel(
            "volta_fp16_s884gemm", t0 + 45 * US, 10 * US, corr + 2, tf_op="dense/MatMul:MatMul"
        )
        stream.kernel(
            "volta_sgemm_128x64", t0 + 55 * US, 15 * US, corr + 3, tf_op="dense_1/MatMul:MatMul"
        )
        stream.memcpy("DtoH", t0 + 70 * US, 5 * US, corr + 4, num_bytes=1024)
        stream.kernel("ncclAllReduceRingLLKernel", t0 + 75 * US, 10 * US, corr + 5)
        stream.memcpy("DtoD", t0 + 85 * US, 5 * US, corr + 6, num_bytes=512)
    return b.serialize()


def no_steps_profile() -> bytes:
    b = XSpaceBuilder(hostnames=[NO_STEPS_HOST])
    py = b.plane("/host:CPU").line("python", line_id=1)
    for i in range(5):
        py.event("dense/MatMul:MatMul", i * 100 * US, 10 * US)
        py.event("Iterator::Root::Map", i * 100 * US + 20 * US, 10 * US)
    return b.serialize()


def write_logdir(logdir: Path) -> None:
    """Writes both profiles as runs `gpu/<session>` and `no_steps/<session>` of `logdir`."""
    for run, host, data in (
        (GPU_RUN, GPU_HOST, gpu_profile()),
        (NO_STEPS_RUN, NO_STEPS_HOST, no_steps_profile()),
    ):
        tb_run, session = run.split("/")
        session_dir = logdir / tb_run / "plugins" / "profile" / session
        session_dir.mkdir(parents=True, exist_ok=True)
        (session_dir / f"{host}.xplane.pb").write_bytes(data)
