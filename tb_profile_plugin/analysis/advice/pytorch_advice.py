"""Advice for PyTorch profiles, in PyTorch's words, from the figures of analysis/pytorch/.

| situation (evidence)                                          | advice                        |
|---------------------------------------------------------------|-------------------------------|
| no `ProfilerStep#N` in the capture                            | `prof.step()` every iteration |
|                                                               | under a `schedule`; no step   |
|                                                               | is invented                   |
| DataLoader >= `DATALOADER_PERCENT` of the step time           | num_workers=0: `num_workers`; |
|                                                               | workers already: more, with   |
|                                                               | `persistent_workers`,         |
|                                                               | `prefetch_factor`; GPU only:  |
|                                                               | `pin_memory`                  |
| GPU: matrix ops >= `MATRIX_PERCENT` of kernel time and under  | AMP (`torch.autocast`         |
| `TENSOR_CORE_PERCENT` of it on Tensor Cores                   | bf16/fp16), TF32              |
| GPU: runtime >= `RUNTIME_PERCENT` of the step, or many small  | `torch.compile`, CUDA graphs  |
| kernels (>= `MANY_KERNELS` per step, mean < `SMALL_KERNEL_US`)| (`mode="reduce-overhead"`)    |
| sync points (`cudaStreamSynchronize`, `.item()`) >=           | keep values on the GPU, read  |
| `SYNC_PERCENT` of the step time                               | them every N steps            |
| communication >= `COMMUNICATION_PERCENT` of the step time     | a straggler (pod viewer), DDP |
|                                                               | bucketing, fewer all-reduces  |
| GPU utilization < `LOW_UTILIZATION_PERCENT`                   | the GPU idles: the largest    |
|                                                               | host category                 |

A CPU-only capture gets no GPU advice (AMP for GPUs, CUDA graphs, utilization), and each
rule the profile does not call for is withheld with its figure.
"""

from __future__ import annotations

from tb_profile_plugin.analysis.evidence import AdviceSet, Evidence
from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis
from tb_profile_plugin.analysis.pytorch.facts import PytorchFacts
from tb_profile_plugin.analysis.pytorch.gpu_metrics import GpuMetrics
from tb_profile_plugin.analysis.pytorch.step_roles import ROLE_LABELS, ROLES

DATALOADER_PERCENT = 5.0
MATRIX_PERCENT = 10.0
TENSOR_CORE_PERCENT = 10.0
RUNTIME_PERCENT = 10.0
MANY_KERNELS = 1000
SMALL_KERNEL_US = 10.0
SYNC_PERCENT = 3.0
COMMUNICATION_PERCENT = 30.0
LOW_UTILIZATION_PERCENT = 50.0

STEP_CODE = (
    "with torch.profiler.profile(\n"
    "        schedule=torch.profiler.schedule(wait=1, warmup=1, active=3),\n"
    "        on_trace_ready=torch.profiler.tensorboard_trace_handler(logdir)) as prof:\n"
    "    for batch in loader:\n"
    "        train_step(batch)\n"
    "        prof.step()  # one ProfilerStep#N per iteration"
)
AMP_CODE = (
    "with torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n"
    "    loss = model(batch)\n"
    "# fp16 instead: torch.autocast(..., dtype=torch.float16) with torch.amp.GradScaler()\n"
    "torch.backends.cuda.matmul.allow_tf32 = True  # fp32 matmuls on Tensor Cores"
)
COMPILE_CODE = (
    "model = torch.compile(model)  # fuses small ops into fewer kernels\n"
    "# launch overhead: CUDA graphs\n"
    "model = torch.compile(model, mode='reduce-overhead')"
)
SYNC_CODE = (
    "# instead of loss.item() every step:\n"
    "running += loss.detach()\n"
    "if step % 100 == 0:\n"
    "    print(running.item() / 100); running.zero_()"
)


def no_steps_text() -> str:
    """The capture has no ProfilerStep: what to do (prose, then code after the line break)."""
    return ("The capture has no ProfilerStep#N: call prof.step() once per training iteration "
            "so each iteration is a step (no step is invented over the capture):\n" + STEP_CODE)


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def pytorch_advice(analysis: HostAnalysis) -> AdviceSet:
    """The advice of a PyTorch profile (see the module's table)."""
    out = AdviceSet()
    facts = analysis.pytorch
    steps = analysis.steps
    total = float(steps.duration_ps.sum())
    if facts is None or total <= 0:
        out.give("mark_steps", no_steps_text(), Evidence("ProfilerStep#N in the capture", "0"))
        return out
    shares = {name: _pct(float(facts.role_ps[:, k].sum()), total)
              for k, name in enumerate(ROLES)}
    _dataloader(out, facts, shares["dataloader"], _pct(float(facts.dataloader_ps.sum()), total),
                analysis.has_device)
    _sync(out, facts.sync, total)
    _communication(out, shares["communication"])
    if not analysis.has_device:
        out.withhold("gpu", "a CPU-only capture: no GPU advice (AMP, torch.compile for "
                     "launch overhead, CUDA graphs, GPU utilization)")
        return out
    _amp(out, facts.kernel_ps, facts.matrix_kernel_ps, facts.tensor_core_ps)
    _launch_overhead(out, shares["runtime"], facts.kernels_in_steps / max(len(steps), 1),
                     facts.kernel_ps_in_steps / max(facts.kernels_in_steps, 1) / 1e6)
    _utilization(out, facts.gpus, shares)
    return out


def dataloader_advice(analysis: HostAnalysis) -> AdviceSet:
    """The input pipeline analyzer's advice for a PyTorch profile: the DataLoader's piece."""
    out = AdviceSet()
    facts = analysis.pytorch
    total = float(analysis.steps.duration_ps.sum())
    if facts is None or total <= 0:
        out.withhold("dataloader", "no ProfilerStep#N in the capture: no step time to share")
        return out
    share = _pct(float(facts.role_ps[:, ROLES.index("dataloader")].sum()), total)
    _dataloader(out, facts, share, _pct(float(facts.dataloader_ps.sum()), total),
                analysis.has_device)
    return out


def _dataloader(out: AdviceSet, facts: PytorchFacts, share: float, covered: float,
                gpu: bool) -> None:
    if not facts.has_dataloader:
        out.withhold("dataloader", "no DataLoader __next__ range in the steps")
        return
    if covered < DATALOADER_PERCENT:
        out.withhold("dataloader", f"the DataLoader takes {covered:.1f} % of the step time "
                     f"(under {DATALOADER_PERCENT:.0f} %)")
        return
    evidence = [Evidence("DataLoader share of step time", f"{covered:.1f} %")]
    if share < covered - 0.05:
        evidence.append(Evidence("of it with nothing else running", f"{share:.1f} %"))
    pin = ", pin_memory=True" if gpu else ""
    pin_words = (" and pin their memory so the copy to the GPU overlaps compute" if gpu
                 else "")
    if facts.dataloader_workers == "workers":
        evidence.append(Evidence("DataLoader iterator", "_MultiProcessingDataLoaderIter "
                                 "(num_workers > 0)"))
        text = (f"The step waits for the DataLoader {covered:.1f} % of its time although it "
                "already loads in worker processes: the workers do not keep up. Raise "
                "num_workers, keep them alive between epochs and let each prefetch more "
                f"batches{pin_words}; or make each sample cheaper (decoding, augmentation):\n"
                f"loader = DataLoader(dataset, batch_size=..., num_workers=8{pin},\n"
                "                    persistent_workers=True, prefetch_factor=4)")
    else:
        if facts.dataloader_workers == "main":
            evidence.append(Evidence("DataLoader iterator", "_SingleProcessDataLoaderIter "
                                     "(num_workers=0)"))
        text = (f"The DataLoader takes {covered:.1f} % of the step time, loading batches in "
                "the training process: load them in worker processes"
                f"{pin_words}:\n"
                f"loader = DataLoader(dataset, batch_size=..., num_workers=4{pin},\n"
                "                    persistent_workers=True)")
    out.give("dataloader", text, *evidence)


def _communication(out: AdviceSet, share: float) -> None:
    if share < COMMUNICATION_PERCENT:
        out.withhold("communication", f"collectives take {share:.1f} % of the step time "
                     f"(under {COMMUNICATION_PERCENT:.0f} %)")
        return
    out.give("communication",
             f"Collectives take {share:.1f} % of the step time with nothing else running. "
             "Where the other ranks spend much less in them, this rank waits for a slower one "
             "(the pod viewer's per-rank communication names it); else overlap them with the "
             "backward pass (DDP buckets: bucket_cap_mb, gradient_as_bucket_view=True) or "
             "communicate less often (gradient accumulation under model.no_sync()).",
             Evidence("communication share of step time", f"{share:.1f} %"))


def _sync(out: AdviceSet, sync: tuple[tuple[str, int, int, tuple[str, ...]], ...],
          total: float) -> None:
    ps = sum(s[2] for s in sync)
    share = _pct(ps, total)
    if share >= SYNC_PERCENT:
        names = ", ".join(n for s in sync for n in s[3])
        calls = sum(s[1] for s in sync)
        out.give("sync_points",
                 f"The host waits for the GPU {calls} times in the steps ({names}: "
                 f"{share:.1f} % of the step time): each .item(), float(tensor), print of a "
                 "tensor or torch.cuda.synchronize() stops the host until the GPU is done. "
                 "Keep values on the GPU and read them every N steps:\n" + SYNC_CODE,
                 Evidence("sync points in the steps", f"{calls} ({names})"),
                 Evidence("their share of step time", f"{share:.1f} %"))
    else:
        out.withhold("sync_points", f"sync points take {share:.1f} % of the step time "
                     f"(under {SYNC_PERCENT:.0f} %)")


def _amp(out: AdviceSet, kernel_ps: int, matrix_ps: int, tc_ps: int) -> None:
    matrix = _pct(matrix_ps, kernel_ps)
    tc = _pct(tc_ps, kernel_ps)
    if matrix >= MATRIX_PERCENT and tc < TENSOR_CORE_PERCENT:
        out.give("amp",
                 f"Matrix ops (matmuls, convolutions) take {matrix:.1f} % of the kernel time "
                 f"but only {tc:.1f} % runs on Tensor Cores: use automatic mixed precision "
                 "(or TF32 for fp32 matmuls):\n" + AMP_CODE,
                 Evidence("matrix-op kernel share", f"{matrix:.1f} %"),
                 Evidence("Tensor Core kernel share", f"{tc:.1f} %"))
    else:
        out.withhold("amp", f"matrix ops {matrix:.1f} % of kernel time, {tc:.1f} % on "
                     "Tensor Cores")


def _launch_overhead(out: AdviceSet, runtime: float, kernels_per_step: float,
                     mean_kernel_us: float) -> None:
    small = kernels_per_step >= MANY_KERNELS and mean_kernel_us < SMALL_KERNEL_US
    if runtime >= RUNTIME_PERCENT or small:
        out.give("torch_compile",
                 f"The CUDA runtime takes {runtime:.1f} % of the step time, over "
                 f"{kernels_per_step:.0f} kernels per step averaging {mean_kernel_us:.1f} µs: "
                 "launch overhead. torch.compile fuses small ops into fewer kernels, and CUDA "
                 "graphs replay a step's kernels with one launch:\n" + COMPILE_CODE,
                 Evidence("runtime share of step time", f"{runtime:.1f} %"),
                 Evidence("kernels per step", f"{kernels_per_step:.0f}"),
                 Evidence("mean kernel time", f"{mean_kernel_us:.1f} µs"))
    else:
        out.withhold("torch_compile", f"runtime {runtime:.1f} % of the step time, "
                     f"{kernels_per_step:.0f} kernels per step of {mean_kernel_us:.1f} µs")


def _utilization(out: AdviceSet, gpus: tuple[GpuMetrics, ...],
                 shares: dict[str, float]) -> None:
    low = [g for g in gpus if g.utilization_percent < LOW_UTILIZATION_PERCENT]
    if not low:
        return
    host = {k: v for k, v in shares.items() if k in ("runtime", "dataloader", "cpu_exec",
                                                     "other")}
    top = max(host, key=lambda k: host[k])
    worst = min(low, key=lambda g: g.utilization_percent)
    out.give("gpu_idle",
             f"{worst.device} runs kernels {worst.utilization_percent:.1f} % of the step time; "
             f"most of the rest is {ROLE_LABELS[top]} ({host[top]:.1f} %): start there.",
             Evidence("GPU utilization", f"{worst.utilization_percent:.1f} %"),
             Evidence(f"{ROLE_LABELS[top]} share of step time", f"{host[top]:.1f} %"))

