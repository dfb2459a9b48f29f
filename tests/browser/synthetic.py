"""Small synthetic profiles for what the real fixtures lack: a GPU, no steps, hostile names.

The real fixtures (tests/data) are CPU-only captures that all have steps. These are built
with the project's XSpace builder, in a few lines each:

- `gpu/<session>/gpu-host.xplane.pb`: three 100 µs steps on a host with one GPU, every
  step-time category present (the same timeline as tests/unit/analysis/
  test_gpu_step_breakdown.py), so the overview shows device precision and top device ops.
  Its one tf.data op has a long name holding HTML, to check that names stay text and are
  cut with an ellipsis.
  A second stream runs `KERNELS` each step (launched from the host in between): Tensor Core
  kernels (`volta_h884gemm...`, `turing_fp16_s1688gemm...`) and plain ones (`volta_sgemm...`)
  under the same matmul op, one kernel launched with two grid sizes (two kernel-stats rows,
  durations that differ per step), a very long templated name holding `<` and `>`, and
  enough distinct kernels that the kernel pie groups a tail as "Other".
- `gpu_no_kernels/<session>/idle-gpu.xplane.pb`: steps on the host and a GPU plane with
  memory copies but no kernel, so kernel stats has no rows and says why.
- `no_steps/<session>/nostep.xplane.pb`: ops but no step marker of any kind, so the views
  show their no-steps state and the diagnostics explain how to mark steps.
- `tf24_gpu/<session>/tf24.xplane.pb`: two GPUs in the layout TensorFlow <= 2.4 writes (its
  own Steps, TensorFlow Ops and Name Scope lines with sign-extended ids), so the trace must
  show one Steps track per GPU, not the producer's and a derived one.
"""

from __future__ import annotations

from pathlib import Path

from tests.browser.synthetic_memory import write_memory_run
from tests.browser.trace_synthetic import write_big_trace
from tests.xspace_builder import XSpaceBuilder, kernel_details, tf24_gpu_space

US = 1_000_000  # ps
SESSION = "2026_01_01_00_00_00"
GPU_RUN = f"gpu/{SESSION}"
GPU_HOST = "gpu-host"
NO_KERNELS_RUN = f"gpu_no_kernels/{SESSION}"
NO_KERNELS_HOST = "idle-gpu"
NO_STEPS_RUN = f"no_steps/{SESSION}"
NO_STEPS_HOST = "nostep"
TF24_RUN = f"tf24_gpu/{SESSION}"
TF24_HOST = "tf24"
# An input op whose name is long and looks like HTML: it must be shown as text, cut short.
HOSTILE_OP = "Iterator::Root::<img src=x data-injected=1>::" + "::".join(
    f"ParallelMapV2_{k}" for k in range(12)
)

# A kernel name as long as Eigen's templated ones, with `<` and `>`: cut with an ellipsis.
LONG_KERNEL = (
    "void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<"
    "Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, "
    "Eigen::TensorCwiseBinaryOp<Eigen::internal::scalar_max_op<float const, float const, 0>, "
    "Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer> const, "
    "Eigen::TensorCwiseNullaryOp<Eigen::internal::scalar_constant_op<float const>, "
    "Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer> const> "
    "const> const> const, Eigen::GpuDevice>, long>(Eigen::TensorEvaluator<...>, long)"
)
TC_KERNEL = "volta_h884gemm_64x64_ldg8_nn"
# The second stream's kernels, launched in this order every step:
# (name, launching tf_op or "", duration in ns, kernel_details). Between 45 and 70 µs of a
# step, where the first stream runs compute too, so no other step-time category shrinks.
# fmt: off
KERNELS = (
    (TC_KERNEL, "dense_2/MatMul:MatMul", 3000, kernel_details(126, 16384, 0, (64, 1, 1))),
    (TC_KERNEL, "dense_2/MatMul:MatMul", 4000, kernel_details(126, 16384, 0, (128, 2, 1))),
    ("volta_sgemm_32x32_sliced1x4_tn", "dense_2/MatMul:MatMul", 2500,
     kernel_details(55, 8192, 0, (16, 8, 1), (256, 1, 1), 37.5)),
    ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", "conv/Conv2D:Conv2D", 3000,
     kernel_details(168, 0, 32768, (32, 4, 1), (256, 1, 1), 12.5)),
    ("void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(...)",
     "conv/Conv2D:Conv2D", 2000, kernel_details(40, 4608, 0, (8, 8, 4), (8, 8, 1), 75.0)),
    (LONG_KERNEL, "Relu:Relu", 1500, kernel_details(16, 0, 0, (160, 1, 1), (1024, 1, 1), 100.0)),
    ("void tensorflow::functor::BiasNHWCKernel<float>(int, float const*, float*)",
     "BiasAdd:BiasAdd", 1000, kernel_details(20)),
    ("softmax_warp_forward", "Softmax:Softmax", 1200, kernel_details(32, 0, 0, (4, 1, 1))),
    ("reduce_1Block_kernel", "Sum:Sum", 800, kernel_details(30, 128)),
    ("elementwise_kernel_add", "Add_1:AddV2", 900, kernel_details(24, 0, 0, (40, 1, 1))),
    ("scal_kernel", "sgd/Mul:Mul", 600, kernel_details(18)),
    ("convertTensor_kernel", "Cast:Cast", 500, kernel_details(22)),
    ("redzone_checker", "", 400, kernel_details(12)),
)
# fmt: on


def gpu_profile(steps: int = 3) -> bytes:
    b = XSpaceBuilder(hostnames=[GPU_HOST])
    py = b.plane("/host:CPU").line("python", line_id=1)
    gpu = b.gpu_plane(0)
    stream = gpu.line("Stream #7(Compute)", line_id=7)
    stream2 = gpu.line("Stream #8(Compute)", line_id=8)
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
        at = t0 + 45 * US
        for k, (name, tf_op, duration_ns, details) in enumerate(KERNELS):
            launch = 1000 + 100 * step + k
            py.event("cudaLaunchKernel", t0 + 36 * US + k * US // 2, US // 4, correlation_id=launch)
            # The first kernel takes a little longer each step (min < avg < max).
            duration_ps = (duration_ns + (500 * step if k == 0 else 0)) * 1000
            extra = {"tf_op": tf_op} if tf_op else {}
            stream2.kernel(name, at, duration_ps, launch, details, **extra)
            at += duration_ps + US // 10
    return b.serialize()


def gpu_without_kernels_profile(steps: int = 3) -> bytes:
    """Host steps and a GPU plane holding memory copies only: no kernel to list."""
    b = XSpaceBuilder(hostnames=[NO_KERNELS_HOST])
    py = b.plane("/host:CPU").line("python", line_id=1)
    stream = b.gpu_plane(0).line("Stream #7(Compute)", line_id=7)
    for step in range(steps):
        t0 = step * 200 * US
        py.event("train", t0, 100 * US, step_num=step + 1, _r=1)
        py.event("dense/MatMul:MatMul", t0 + 10 * US, 20 * US)
        stream.memcpy("HtoD", t0 + 40 * US, 5 * US, step + 1, num_bytes=4096)
    return b.serialize()


def no_steps_profile() -> bytes:
    b = XSpaceBuilder(hostnames=[NO_STEPS_HOST])
    py = b.plane("/host:CPU").line("python", line_id=1)
    for i in range(5):
        py.event("dense/MatMul:MatMul", i * 100 * US, 10 * US)
        py.event("Iterator::Root::Map", i * 100 * US + 20 * US, 10 * US)
    return b.serialize()


def write_logdir(logdir: Path) -> None:
    """Writes the profiles as runs `gpu/`, `gpu_no_kernels/`, `no_steps/` and
    `tf24_gpu/<session>`."""
    for run, host, data in (
        (GPU_RUN, GPU_HOST, gpu_profile()),
        (NO_KERNELS_RUN, NO_KERNELS_HOST, gpu_without_kernels_profile()),
        (NO_STEPS_RUN, NO_STEPS_HOST, no_steps_profile()),
        (TF24_RUN, TF24_HOST, tf24_gpu_space(num_gpus=2, host=TF24_HOST)),
    ):
        tb_run, session = run.split("/")
        session_dir = logdir / tb_run / "plugins" / "profile" / session
        session_dir.mkdir(parents=True, exist_ok=True)
        (session_dir / f"{host}.xplane.pb").write_bytes(data)
    write_big_trace(logdir)  # big_trace/<session>: ~2M events for the trace viewer
    write_memory_run(logdir)  # memory/<session>: two allocators (synthetic_memory.py)
