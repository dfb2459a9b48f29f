"""PyTorch's figures of one host (analysis/pytorch/facts.py) on a profile in the layout the
Kineto decoder writes (docs/pytorch.md: `/host:CPU` thread lines, `ProfilerStep#N` with
`_r`/`step_num`, GPU stream lines, `tf_op` = the launching aten op, CUPTI-form
`kernel_details`), every figure computed by hand.

One step, `ProfilerStep#1` [0, 100] µs:

    host   DataLoader __next__ [0,15]  aten::addmm [20,40] > cudaLaunchKernel [25,30]
           cudaMemcpyAsync [32,36]     aten::item [60,70] > cudaStreamSynchronize [62,69]
    GPU    sgemm [30,50] (grid 5, occ 40 %)   Memcpy HtoD [50,54]
           ncclDevKernel_AllReduce [70,80]    elementwise [80,85] (grid 20, occ 80 %)
           stream 8: mul [72,76] (grid 10, occ 50 %), under the all-reduce

    kernel 20 + 4 + 5 = 29; memcpy 4; communication 10 - 4 = 6; runtime [25,30] + [62,69] = 12 (the
    memcpy call is under the sgemm); DataLoader 15; CPU exec [20,25] + [60,62] + [69,70] = 8;
    other 100 - 74 = 26. Communication 10, computation 29, overlap 4.
"""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.pytorch.facts import pytorch_facts
from tb_profile_plugin.analysis.pytorch.step_roles import ROLES
from tb_profile_plugin.analysis.steps.profile_steps import profile_steps
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import XSpaceBuilder, kernel_details

US = 1_000_000  # ps
LOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def kineto_like_profile() -> bytes:
    b = XSpaceBuilder(hostnames=["vm"])
    host = b.plane("/host:CPU")
    t = host.line("thread 1 (python)", line_id=1)
    t.event("ProfilerStep#1", 0, 100 * US, _r=1, step_num=1)
    t.event(LOADER, 0, 15 * US)
    t.event("aten::addmm", 20 * US, 20 * US)
    t.event("cudaLaunchKernel", 25 * US, 5 * US, correlation_id=1)
    t.event("cudaMemcpyAsync", 32 * US, 4 * US, correlation_id=2)
    t.event("aten::item", 60 * US, 10 * US)
    t.event("cudaStreamSynchronize", 62 * US, 7 * US, correlation_id=3)
    t.event("MemoryAllocation", 21 * US, 0)  # a [memory] instant: no time
    gpu = b.gpu_plane(0, core_count=10)
    s = gpu.line("Stream #7", line_id=7)
    s.kernel("ampere_sgemm_128x64_nn", 30 * US, 20 * US, 1, tf_op="aten::addmm",
             details=kernel_details(grid=(5, 1, 1), occupancy_percent=40.0))
    s.event("Memcpy HtoD (Pageable -> Device)", 50 * US, 4 * US, correlation_id=2)
    s.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 70 * US, 10 * US, 4,
             details=kernel_details(grid=(20, 1, 1), occupancy_percent=100.0))
    s.kernel("void at::native::vectorized_elementwise_kernel", 80 * US, 5 * US, 5,
             tf_op="aten::add_", details=kernel_details(grid=(20, 1, 1), occupancy_percent=80.0))
    s8 = gpu.line("Stream #8", line_id=8)
    s8.kernel("void at::native::mul_kernel", 72 * US, 4 * US, 6, tf_op="aten::mul",
              details=kernel_details(grid=(10, 1, 1), occupancy_percent=50.0))
    return b.serialize()


@pytest.fixture(scope="module")
def facts():  # type: ignore[no-untyped-def]
    profile = decode_xspace(kineto_like_profile())
    steps = profile_steps(profile).steps
    assert steps.step_num.tolist() == [1]
    return pytorch_facts(profile_forest(profile).table, steps)


def test_breakdown_by_priority_sums_to_the_step(facts) -> None:  # type: ignore[no-untyped-def]
    got = dict(zip(ROLES, (facts.role_ps[0] / US).tolist(), strict=True))
    assert got == {"kernel": 29, "memcpy": 4, "memset": 0, "communication": 6,
                   "runtime": 12, "dataloader": 15, "cpu_exec": 8, "other": 26}
    assert int(facts.role_ps[0].sum()) == 100 * US
    assert facts.dataloader_ps.tolist() == [15 * US]
    assert facts.has_dataloader


def test_gpu_metrics_weighted_by_kernel_time(facts) -> None:  # type: ignore[no-untyped-def]
    (gpu,) = facts.gpus
    assert gpu.device == "/device:GPU:0"
    assert gpu.num_sms == 10
    assert gpu.kernels == 3  # the NCCL kernel is communication, not a kernel here
    assert gpu.utilization_percent == pytest.approx(29.0)
    # sgemm: 5 blocks on 10 SMs for 20 µs; mul 10 blocks for 4 µs, elementwise 20 for 5 µs.
    assert gpu.sm_efficiency_percent == pytest.approx(0.5 * 20 + 1.0 * 4 + 1.0 * 5)
    assert gpu.achieved_occupancy_percent == pytest.approx((40 * 20 + 50 * 4 + 80 * 5) / 29)


def test_communication_overlap(facts) -> None:  # type: ignore[no-untyped-def]
    assert facts.communication_ps.tolist() == [10 * US]
    assert facts.computation_ps.tolist() == [29 * US]
    assert facts.overlap_ps.tolist() == [4 * US]


def test_sync_points_and_precision(facts) -> None:  # type: ignore[no-untyped-def]
    assert facts.sync == (("sync", 1, 7 * US, ("cudaStreamSynchronize",)),
                          ("item", 1, 10 * US, ("aten::item",)))
    assert facts.kernel_ps == 29 * US
    assert facts.matrix_kernel_ps == 20 * US  # aten::addmm's sgemm
    assert facts.tensor_core_ps == 0


def test_no_steps_means_no_rows() -> None:
    b = XSpaceBuilder(hostnames=["vm"])
    t = b.plane("/host:CPU").line("thread 1 (python)", line_id=1)
    t.event("aten::mm", 0, 10 * US)
    profile = decode_xspace(b.serialize())
    steps = profile_steps(profile).steps
    got = pytorch_facts(profile_forest(profile).table, steps)
    assert len(steps) == 0 and got.role_ps.shape == (0, len(ROLES))
    assert got.gpus == () and not got.has_dataloader
    assert np.array_equal(got.dataloader_ps, np.zeros(0))
